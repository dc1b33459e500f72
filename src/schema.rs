//! JSON Schemas of the scenario and plan documents, generated from the Rust types.
//!
//! The schemas describe the JSON shapes that [`crate::Problem::from_json`] reads and that
//! [`crate::Plan`] is written as and `verify` reads. They say which keys exist and what type
//! each has; the value rules (ranges, cross-references, the unknown-key rules) are in
//! `docs/contract.md`. Copies are shipped as `docs/schema/scenario.schema.json` and
//! `docs/schema/plan.schema.json` (the plan as fleetplan writes it: every key it always writes is
//! required) and `docs/schema/plan-input.schema.json` (the plan as `verify` reads it: only
//! `Actions` is required); the command line prints them with `fleetplan schema
//! scenario|plan|plan-input`.
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

/// The JSON Schema of a plan as fleetplan writes it (the output of `fleetplan plan --json`,
/// `fleetplan schema plan`), as pretty JSON with a trailing newline. Every key fleetplan always
/// writes is required; `Warnings` is written only when there are warnings. A plan from another
/// tool needs only `Actions`: see [`plan_input_schema`].
pub fn plan_schema() -> String {
    let mut schema = plan_value();
    schema["required"] = serde_json::json!(WRITTEN_KEYS);
    pretty_value(&schema)
}

/// The keys fleetplan writes in every plan, in the order it writes them.
const WRITTEN_KEYS: [&str; 7] = ["Solver", "Status", "StopReason", "Actions", "Unplaced", "Objective", "Bound"];

/// The JSON Schema of a plan as `verify` and `report --plan` read it (contract §5,
/// `fleetplan schema plan-input`): only `Actions` is required; `Solver` may be any string; the
/// other keys are optional and may be `null` (read as absent). Every plan [`plan_schema`]
/// accepts, this one accepts too.
pub fn plan_input_schema() -> String {
    let mut schema = plan_value();
    schema["title"] = "PlanInput".into();
    schema["description"] = "A plan as `verify` and `report --plan` read it (docs/contract.md §5): only `Actions` \
                             is required, other keys are checked when present and derived when absent or null."
        .into();
    schema["required"] = serde_json::json!(["Actions"]);
    if let Some(properties) = schema.get_mut("properties").and_then(serde_json::Value::as_object_mut) {
        for (key, property) in properties.iter_mut() {
            if key == "Actions" {
                continue;
            }
            let nullable = property
                .get("anyOf")
                .and_then(serde_json::Value::as_array)
                .is_some_and(|branches| branches.iter().any(|branch| branch["type"] == "null"));
            if nullable {
                // Already `null` or the value (`Bound`); what the writer defaults to is moot here.
                if let Some(object) = property.as_object_mut() {
                    object.remove("default");
                }
                continue;
            }
            let description = property.get("description").cloned();
            let mut branch = property.clone();
            if key == "Solver" {
                // `greedy`, `exact` or the name of another tool.
                branch = serde_json::json!({"type": "string"});
            }
            if let Some(object) = branch.as_object_mut() {
                object.remove("description");
                object.remove("default");
            }
            let mut optional = serde_json::json!({"anyOf": [branch, {"type": "null"}]});
            if let Some(description) = description {
                optional["description"] = description;
            }
            *property = optional;
        }
    }
    pretty_value(&schema)
}

/// The schema the plan type derives, as JSON.
fn plan_value() -> serde_json::Value {
    schemars::schema_for!(Plan).to_value()
}

/// An edited schema, printed as schemars prints its own (keywords in schemars' order).
fn pretty_value(schema: &serde_json::Value) -> String {
    match schemars::Schema::try_from(schema.clone()) {
        Ok(schema) => pretty(&schema),
        Err(_) => String::new(),
    }
}

fn pretty(schema: &schemars::Schema) -> String {
    // A schema is plain JSON data; serialising it cannot fail.
    let mut text = serde_json::to_string_pretty(schema).unwrap_or_default();
    text.push('\n');
    text
}
