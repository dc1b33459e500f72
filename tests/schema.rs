//! The JSON Schemas shipped in `docs/schema/` are the ones the types generate, and they know
//! every key the bundled scenarios and the planner's plans use.
//!
//! Regenerate the shipped files after changing a scenario or plan type:
//! `UPDATE_SCHEMA=1 cargo test --features schema --test schema` (or
//! `cargo run --features cli -- schema scenario > docs/schema/scenario.schema.json`, same for
//! `plan` and `plan-input`).
#![cfg(feature = "schema")]

use serde_json::Value;

fn shipped_path(document: &str) -> String {
    format!("{}/docs/schema/{document}.schema.json", env!("CARGO_MANIFEST_DIR"))
}

/// Compares the generated schema with the shipped file, or rewrites the file under
/// `UPDATE_SCHEMA=1`.
fn check_shipped(document: &str, generated: &str) {
    let path = shipped_path(document);
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, generated).unwrap_or_else(|error| panic!("{path}: {error}"));
        return;
    }
    let shipped = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        shipped == generated,
        "{path} is stale (it differs from what the types generate). Regenerate it with\n  \
         UPDATE_SCHEMA=1 cargo test --features schema --test schema\nor\n  \
         cargo run --features cli -- schema {document} > docs/schema/{document}.schema.json"
    );
}

#[test]
fn shipped_scenario_schema_is_current() {
    check_shipped("scenario", &fleetplan::schema::scenario_schema());
}

#[test]
fn shipped_plan_schema_is_current() {
    check_shipped("plan", &fleetplan::schema::plan_schema());
}

#[test]
fn shipped_plan_input_schema_is_current() {
    check_shipped("plan-input", &fleetplan::schema::plan_input_schema());
}

/// The schema object that `schema` stands for, following `$ref`s into `$defs` and
/// `anyOf`/`oneOf` branches (the first that is an object schema with properties or items).
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> Vec<&'a Value> {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference.trim_start_matches("#/$defs/");
        return root["$defs"].get(name).map(|target| resolve(root, target)).unwrap_or_default();
    }
    let mut all = vec![schema];
    for key in ["anyOf", "oneOf", "allOf"] {
        for branch in schema.get(key).and_then(Value::as_array).into_iter().flatten() {
            all.extend(resolve(root, branch));
        }
    }
    all
}

/// Every object key in `value` is a property the schema knows; returns the unknown paths.
fn unknown_keys(root: &Value, schema: &Value, value: &Value, path: &str, unknown: &mut Vec<String>) {
    let schemas = resolve(root, schema);
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                // A listed property, else a map's value schema (any pattern: the patterns here are
                // digit keys), else `additionalProperties` when it is a schema.
                let property = schemas.iter().find_map(|s| {
                    s.get("properties")
                        .and_then(|p| p.get(key))
                        .or_else(|| {
                            s.get("patternProperties").and_then(Value::as_object).and_then(|p| p.values().next())
                        })
                        .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))
                });
                match property {
                    Some(property) => unknown_keys(root, property, child, &format!("{path}.{key}"), unknown),
                    None => unknown.push(format!("{path}.{key}")),
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schemas.iter().find_map(|s| s.get("items")) {
                for (index, item) in items.iter().enumerate() {
                    unknown_keys(root, item_schema, item, &format!("{path}[{index}]"), unknown);
                }
            }
        }
        _ => {}
    }
}

#[test]
fn the_scenario_schema_knows_every_key_of_the_bundled_scenarios() {
    let schema: Value = serde_json::from_str(&fleetplan::schema::scenario_schema()).unwrap();
    let directory = format!("{}/scenarios", env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    for entry in std::fs::read_dir(&directory).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let scenario: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let mut unknown = Vec::new();
        unknown_keys(&schema, &schema, &scenario, "", &mut unknown);
        assert_eq!(unknown, Vec::<String>::new(), "{}", path.display());
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} scenarios in {directory}");
}

#[test]
fn the_plan_schema_knows_every_key_of_a_plan() {
    let schema: Value = serde_json::from_str(&fleetplan::schema::plan_schema()).unwrap();
    let text =
        std::fs::read_to_string(format!("{}/scenarios/seed-az-balance.json", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let problem = fleetplan::Problem::from_json(&text).unwrap();
    let plan: Value = serde_json::from_str(&fleetplan::plan_greedy(&problem).to_json()).unwrap();
    assert!(plan["Actions"].as_array().is_some_and(|actions| !actions.is_empty()));
    let mut unknown = Vec::new();
    unknown_keys(&schema, &schema, &plan, "", &mut unknown);
    assert_eq!(unknown, Vec::<String>::new());
    // A key the schema does not know is found (the check itself works). `Objective` has no
    // `additionalProperties` (unknown keys in a plan are allowed by the schema, but not known).
    let mut tampered = plan.clone();
    tampered["Objective"]["Costt"] = Value::from(1);
    unknown.clear();
    unknown_keys(&schema, &schema, &tampered, "", &mut unknown);
    assert_eq!(unknown, [".Objective.Costt"]);
}

fn required(schema: &Value) -> Vec<&str> {
    schema["required"].as_array().map(|keys| keys.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

/// The plans of every bundled scenario (greedy and exact), as JSON.
fn bundled_plans() -> Vec<(String, Value)> {
    let directory = format!("{}/scenarios", env!("CARGO_MANIFEST_DIR"));
    let mut plans = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(&directory).unwrap().map(|entry| entry.unwrap().path()).collect();
    paths.sort();
    for path in paths.into_iter().filter(|path| path.extension().and_then(|e| e.to_str()) == Some("json")) {
        let problem = fleetplan::Problem::from_json(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let greedy = fleetplan::plan_greedy(&problem);
        let exact = fleetplan::ExactPlanner::new().time_limit(std::time::Duration::from_millis(200)).plan(&problem);
        for (solver, plan) in [("greedy", greedy), ("exact", exact)] {
            plans.push((format!("{} ({solver})", path.display()), serde_json::from_str(&plan.to_json()).unwrap()));
        }
    }
    plans
}

/// The output schema requires every key fleetplan writes, and the bundled plans have them all
/// and nothing it does not know.
#[test]
fn the_output_schema_matches_the_plans_fleetplan_writes() {
    let schema: Value = serde_json::from_str(&fleetplan::schema::plan_schema()).unwrap();
    let required = required(&schema);
    assert_eq!(required, ["Solver", "Status", "StopReason", "Actions", "Unplaced", "Objective", "Bound"]);
    let plans = bundled_plans();
    assert!(plans.len() >= 10, "{} plans", plans.len());
    for (name, plan) in plans {
        let keys: Vec<&str> = plan.as_object().unwrap().keys().map(String::as_str).collect();
        for key in &required {
            assert!(keys.contains(key), "{name}: {key} is required by the output schema but not written");
        }
        for key in keys.iter().filter(|key| !required.contains(key)) {
            assert_eq!(*key, "Warnings", "{name}: {key} is written but not required by the output schema");
        }
        let mut unknown = Vec::new();
        unknown_keys(&schema, &schema, &plan, "", &mut unknown);
        assert_eq!(unknown, Vec::<String>::new(), "{name}");
    }
}

/// The input schema and `Plan::from_json` (what `verify` reads) agree on what is required: for
/// every key of a bundled plan, the plan without it reads exactly when the input schema does not
/// require it; optional keys may be `null`, as the reader takes them as absent.
#[test]
fn the_input_schema_requires_what_verify_requires() {
    let schema: Value = serde_json::from_str(&fleetplan::schema::plan_input_schema()).unwrap();
    let output: Value = serde_json::from_str(&fleetplan::schema::plan_schema()).unwrap();
    assert_eq!(required(&schema), ["Actions"]);
    for (name, plan) in bundled_plans() {
        assert!(fleetplan::Plan::from_json(&plan.to_string()).is_ok(), "{name}");
        let mut unknown = Vec::new();
        unknown_keys(&schema, &schema, &plan, "", &mut unknown);
        assert_eq!(unknown, Vec::<String>::new(), "{name}");
        for key in plan.as_object().unwrap().keys() {
            let mut without = plan.clone();
            without.as_object_mut().unwrap().remove(key);
            let reads = fleetplan::Plan::from_json(&without.to_string()).is_ok();
            assert_eq!(reads, !required(&schema).contains(&key.as_str()), "{name}: without {key}");
            let property = &schema["properties"][key.as_str()];
            if key != "Actions" {
                let mut nulled = plan.clone();
                nulled[key.as_str()] = Value::Null;
                assert!(fleetplan::Plan::from_json(&nulled.to_string()).is_ok(), "{name}: {key} null");
                let branches = property["anyOf"].as_array().unwrap_or_else(|| panic!("{key}: {property}"));
                assert!(branches.iter().any(|branch| branch["type"] == "null"), "{key}: {property}");
            }
        }
    }
    // Any `Solver` string reads, and the input schema says so while the output schema does not.
    let minimal = r#"{"Solver": "my-tool", "Actions": []}"#;
    assert!(fleetplan::Plan::from_json(minimal).is_ok());
    assert_eq!(schema["properties"]["Solver"]["anyOf"][0], serde_json::json!({"type": "string"}));
    assert_ne!(output["properties"]["Solver"], schema["properties"]["Solver"]);
}
