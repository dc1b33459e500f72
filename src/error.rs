//! Errors and warnings from reading and validating a scenario.

use std::fmt;

/// One problem found in the input: where it is (a JSON-style path) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Issue {
    /// JSON-style path of the offending field, e.g. `InferenceComponents[0].RuntimeConfig.CopyCount`.
    pub path: String,
    /// What is wrong, naming the offending value.
    pub message: String,
}

/// How the messages of the issues about a whole document begin (see [`Issue::is_document_level`]):
/// written by `json::parse` and the readers' top-level object check.
const DOCUMENT_LEVEL_MESSAGES: [&str; 3] = ["malformed JSON", "expected an object", "number out of range"];

impl Issue {
    /// Whether the issue is about the document as a whole rather than one of its fields:
    /// malformed JSON, a top level that is not an object, or a document that is one number out
    /// of range. These are the only issues without a path; the fuzz targets and their replay
    /// test assert it.
    #[doc(hidden)]
    pub fn is_document_level(&self) -> bool {
        self.path.is_empty() && DOCUMENT_LEVEL_MESSAGES.iter().any(|start| self.message.starts_with(start))
    }
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// The input could not be turned into a problem. Carries every problem found, not just the first.
///
/// The struct is opaque so that its contents can grow; read it through [`ValidationError::issues`]
/// or its `Display` (one issue per line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationError {
    issues: Vec<Issue>,
}

impl ValidationError {
    pub(crate) fn new(issues: Vec<Issue>) -> Self {
        ValidationError { issues }
    }

    /// Every problem found, in input order.
    pub fn issues(&self) -> &[Issue] {
        &self.issues
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, issue) in self.issues.iter().enumerate() {
            if index > 0 {
                writeln!(f)?;
            }
            write!(f, "{issue}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ValidationError {}

/// What a [`Warning`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum WarningKind {
    /// A component with AZ balance has a single copy: one AZ outage takes it down.
    SingleCopy,
    /// The copy count can never meet MaxImbalance over the endpoint's AZs.
    ImbalanceUnreachable,
    /// No pool type can launch in an AZ.
    NoCapacityInAz,
    /// A field was given but has no effect here.
    Ignored,
    /// Keys fleetplan does not read (e.g. `EndpointArn` from a real API payload); one warning
    /// lists every such path.
    UnknownKeys,
    /// Some pool or fleet types have an `HourlyPrice` and some do not: whenever an unpriced
    /// type is in the final fleet, cost counts instances instead of dollars (`CostUnit`).
    PartialPrices,
}

/// Something valid but worth a person's attention; planning goes on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct Warning {
    /// What kind of warning.
    pub kind: WarningKind,
    /// JSON-style path of the field concerned.
    pub path: String,
    /// Human-readable explanation.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "warning: {}", self.message)
        } else {
            write!(f, "warning: {}: {}", self.path, self.message)
        }
    }
}
