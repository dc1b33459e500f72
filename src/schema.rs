//! JSON Schemas of the scenario and plan documents, generated from the Rust types.
//!
//! The schemas describe the JSON shapes that [`crate::Problem::from_json`] reads and that
//! [`crate::Plan`] is written as (and `verify` reads). They say which keys exist and what type
//! each has; the value rules (ranges, cross-references, the unknown-key rules) are in
//! `docs/contract.md`. Copies of both are shipped as `docs/schema/scenario.schema.json` and
//! `docs/schema/plan.schema.json`; the command line prints them with `fleetplan schema
//! scenario|plan`.
//!
//! ```
//! let schema = fleetplan::schema::scenario_schema();
//! assert!(schema.contains("\"AvailabilityZones\""));
//! ```

use crate::model::Scenario;
use crate::plan::Plan;

/// The JSON Schema of a scenario, as pretty JSON with a trailing newline.
pub fn scenario_schema() -> String {
    pretty(&schemars::schema_for!(Scenario))
}

/// The JSON Schema of a plan (the output of `fleetplan plan --json`, the input of `verify`), as
/// pretty JSON with a trailing newline.
pub fn plan_schema() -> String {
    pretty(&schemars::schema_for!(Plan))
}

fn pretty(schema: &schemars::Schema) -> String {
    // A schema is plain JSON data; serialising it cannot fail.
    let mut text = serde_json::to_string_pretty(schema).unwrap_or_default();
    text.push('\n');
    text
}
