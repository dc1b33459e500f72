//! The JSON Schemas shipped in `docs/schema/` are the ones the types generate, and they know
//! every key the bundled scenarios and the planner's plans use.
//!
//! Regenerate the shipped files after changing a scenario or plan type:
//! `UPDATE_SCHEMA=1 cargo test --features schema --test schema` (or
//! `cargo run --features cli -- schema scenario > docs/schema/scenario.schema.json`, same for
//! `plan`).
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
