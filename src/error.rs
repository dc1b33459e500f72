//! Errors and warnings from reading and validating a scenario.

use std::fmt;

/// What kind of problem an [`Issue`] is, for programs that react to some of them (the message is
/// for people and may be reworded; the kind is stable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum IssueKind {
    /// The document is not JSON, or not the object it should be at its top level.
    Malformed,
    /// A required field is absent (or null).
    MissingField,
    /// A value has the wrong JSON type (a string where a number belongs, ...).
    TypeMismatch,
    /// A number that must be whole is not (`2.5`).
    NotAWholeNumber,
    /// A number is not finite, below its minimum or above its maximum.
    OutOfRange,
    /// A list or a sum is beyond its size limit (docs/contract.md §1.4).
    TooLarge,
    /// A key fleetplan does not read: in strict mode, or one that looks like a misspelt known key.
    UnknownKey,
    /// A key given twice in one JSON object.
    DuplicateKey,
    /// A name, id or entry listed twice where it must be unique.
    Duplicate,
    /// A name or list that must not be empty is.
    Empty,
    /// A name that refers to nothing: an instance type outside the catalogue or the pools, an
    /// AZ outside `AvailabilityZones`, an unknown component or instance id.
    UnknownName,
    /// A value outside a closed set (`PlacementStrategy: "PACK"`, an unknown event kind).
    InvalidValue,
    /// Two fields that exclude each other are both given, or neither of two alternatives is.
    Conflict,
    /// Values that are fine alone disagree (`MinInstanceCount` above `MaxInstanceCount`, an event
    /// after `Now`, a fleet that already breaks packing, specifications whose scheduling differs).
    Inconsistent,
}

/// One problem found in the input: where it is (a JSON-style path) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Issue {
    /// JSON-style path of the offending field, e.g. `InferenceComponents[0].RuntimeConfig.CopyCount`.
    pub path: String,
    /// What is wrong, naming the offending value.
    pub message: String,
    /// What kind of problem it is (see [`Issue::kind`]).
    kind: IssueKind,
}

/// How the messages of the issues about a whole document begin (see [`Issue::is_document_level`]):
/// written by `json::parse` and the readers' top-level object check.
const DOCUMENT_LEVEL_MESSAGES: [&str; 3] = ["malformed JSON", "expected an object", "number out of range"];

impl Issue {
    /// An issue of `kind` at `path`.
    pub fn new(kind: IssueKind, path: impl Into<String>, message: impl Into<String>) -> Issue {
        Issue { path: path.into(), message: message.into(), kind }
    }

    /// What kind of problem this is.
    pub fn kind(&self) -> IssueKind {
        self.kind
    }

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
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.issues.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
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
