//! Issue 9 input rules (contract §1, §2 L4, §4, §5): no silent input loss, no overflow, plans
//! verified from any source. Every message is asserted exactly.
#![cfg(feature = "json")]

use fleetplan::{
    plan_greedy, verify, CostUnit, InstanceTypeSpec, Plan, Problem, ReadOptions, ScenarioBuilder, SolverKind,
    WarningKind,
};
use proptest::prelude::*;
use serde_json::{json, Value};

/// A valid scenario using most keys of the contract (every object kind appears).
fn base() -> Value {
    json!({
      "AvailabilityZones": ["us-east-1a", "us-east-1b"],
      "InstanceTypes": [
        {"InstanceType": "ml.g6.12xlarge", "AcceleratorCount": 4, "AcceleratorMemoryGiB": 24,
         "VCpuCount": 48, "MemoryInMb": 196608, "HourlyPrice": 4.6},
        {"InstanceType": "ml.g6e.12xlarge", "AcceleratorCount": 4, "AcceleratorMemoryGiB": 48,
         "VCpuCount": 48, "MemoryInMb": 393216, "HourlyPrice": 10.49}
      ],
      "Capacity": [
        {"InstanceType": "ml.g6e.12xlarge", "AvailabilityZone": "us-east-1b", "Available": 1, "Reserved": 1}
      ],
      "Endpoint": {
        "EndpointName": "agents",
        "VariantName": "AllTraffic",
        "InstancePools": [
          {"InstanceType": "ml.g6e.12xlarge", "Priority": 1, "ModelNameOverride": "llm-fp8"},
          {"InstanceType": "ml.g6.12xlarge", "Priority": 2}
        ],
        "ManagedInstanceScaling": {"Status": "ENABLED", "MinInstanceCount": 1, "MaxInstanceCount": 8,
          "ScaleInPolicy": {"Strategy": "CONSOLIDATION", "CooldownInMinutes": 20, "MaximumStepSize": 1}}
      },
      "InferenceComponents": [
        {"InferenceComponentName": "chat",
         "Specification": {"ModelName": "chat-v2",
           "ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 1,
             "NumberOfCpuCoresRequired": 2, "MinMemoryRequiredInMb": 8192},
           "SchedulingConfig": {"PlacementStrategy": "SPREAD",
             "AvailabilityZoneBalance": {"EnforcementMode": "PERMISSIVE", "MaxImbalance": 1}}},
         "RuntimeConfig": {"CopyCount": 4}},
        {"InferenceComponentName": "llm",
         "Specifications": [
           {"InstanceType": "ml.g6e.12xlarge", "ModelName": "llm-fp8",
            "ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 2, "MinMemoryRequiredInMb": 32768},
            "SchedulingConfig": {"PlacementStrategy": "BINPACK"}}
         ],
         "RuntimeConfig": {"CopyCount": 2}}
      ],
      "Fleet": {
        "Instances": [{"InstanceId": "i-01", "InstanceType": "ml.g6.12xlarge",
                       "AvailabilityZone": "us-east-1a", "Reserved": false, "State": "InService"}],
        "Copies": [{"InferenceComponentName": "chat", "InstanceId": "i-01", "CopyCount": 1}]
      }
    })
}

fn messages(text: &str) -> Vec<String> {
    match Problem::from_json(text) {
        Ok(_) => panic!("the scenario should be rejected"),
        Err(error) => error.issues().iter().map(ToString::to_string).collect(),
    }
}

/// The greedy plan's JSON without its warnings (the unknown-keys warning is expected to differ).
fn plan_json(problem: &Problem) -> String {
    let mut plan = plan_greedy(problem);
    plan.warnings.clear();
    plan.to_json()
}

fn base_plan_json() -> String {
    plan_json(&Problem::from_json(&base().to_string()).expect("the base scenario is valid"))
}

#[test]
fn the_base_scenario_is_valid_and_warns_about_nothing_unknown() {
    let problem = Problem::from_json(&base().to_string()).unwrap();
    assert!(problem.warnings().iter().all(|w| w.kind != WarningKind::UnknownKeys), "{:?}", problem.warnings());
}

#[test]
fn a_misspelt_key_is_an_error_naming_the_known_key() {
    let mut scenario = base();
    let balance =
        &mut scenario["InferenceComponents"][0]["Specification"]["SchedulingConfig"]["AvailabilityZoneBalance"];
    balance.as_object_mut().unwrap().remove("MaxImbalance");
    balance["MaxImbalence"] = json!(1);
    assert_eq!(
        messages(&scenario.to_string()),
        vec![
            "InferenceComponents[0].Specification.SchedulingConfig.AvailabilityZoneBalance.MaxImbalence: unknown key; \
             did you mean MaxImbalance?"
        ]
    );
}

#[test]
fn a_key_in_another_case_is_an_error_naming_the_known_key() {
    let mut scenario = base();
    let scaling = scenario["Endpoint"]["ManagedInstanceScaling"].as_object_mut().unwrap();
    scaling.remove("MaxInstanceCount");
    scaling.insert("maxInstanceCount".into(), json!(16));
    assert_eq!(
        messages(&scenario.to_string()),
        vec!["Endpoint.ManagedInstanceScaling.maxInstanceCount: unknown key; did you mean MaxInstanceCount?"]
    );
}

#[test]
fn a_misspelt_capacity_list_is_an_error() {
    let mut scenario = base();
    let capacity = scenario.as_object_mut().unwrap().remove("Capacity").unwrap();
    scenario["Capcity"] = capacity;
    assert_eq!(messages(&scenario.to_string()), vec!["Capcity: unknown key; did you mean Capacity?"]);
}

#[test]
fn a_key_given_twice_is_an_error_with_its_path() {
    let text = base().to_string().replace(r#""CopyCount":4"#, r#""CopyCount":4,"CopyCount":6"#);
    assert!(text.contains(r#""CopyCount":6"#), "the test must edit the document");
    assert_eq!(messages(&text), vec!["InferenceComponents[0].RuntimeConfig.CopyCount: key given twice"]);
    let text = base().to_string().replacen('{', r#"{"Endpoint": {},"#, 1);
    assert_eq!(messages(&text), vec!["Endpoint: key given twice"]);
}

#[test]
fn a_number_out_of_range_names_its_path_and_is_echoed() {
    let text = base().to_string().replace(r#""HourlyPrice":4.6"#, r#""HourlyPrice":1e400"#);
    assert_eq!(messages(&text), vec!["InstanceTypes[0].HourlyPrice: number out of range: 1e400"]);
}

#[test]
fn a_big_integer_is_echoed_as_written() {
    let text = base().to_string().replace(r#""CopyCount":2"#, r#""CopyCount":123456789012345678901"#);
    assert_eq!(
        messages(&text),
        vec![
            "InferenceComponents[1].RuntimeConfig.CopyCount: 123456789012345678901 is above the maximum 100000 \
             (component \"llm\")"
        ]
    );
    let text = base()
        .to_string()
        .replace(r#""InstanceId":"i-01","InstanceType""#, r#""InstanceId":98765432109876543210987,"InstanceType""#);
    assert_eq!(messages(&text)[0], "Fleet.Instances[0].InstanceId: expected a string, found 98765432109876543210987");
}

#[test]
fn a_long_name_is_shortened_in_messages() {
    let long = "x".repeat(500);
    let text = base().to_string().replace("\"ml.g6.12xlarge\",\"Priority\"", &format!("\"{long}\",\"Priority\""));
    let expected = format!(
        "Endpoint.InstancePools[1].InstanceType: \"{}\"... is not in the instance type catalogue",
        "x".repeat(57)
    );
    assert_eq!(messages(&text), vec![expected]);
}

#[test]
fn unknown_keys_give_one_warning_listing_every_path_and_change_nothing() {
    let mut scenario = base();
    scenario["EndpointArn"] = json!("arn:aws:sagemaker:us-east-1:1:endpoint/agents");
    scenario["Endpoint"]["CreationTime"] = json!(1_700_000_000);
    scenario["InferenceComponents"][1]["Tags"] = json!([{"Key": "team", "Value": "ml"}]);
    let problem = Problem::from_json(&scenario.to_string()).unwrap();
    let unknown: Vec<String> =
        problem.warnings().iter().filter(|w| w.kind == WarningKind::UnknownKeys).map(ToString::to_string).collect();
    assert_eq!(
        unknown,
        vec![
            "warning: 3 unknown keys ignored (fleetplan does not read them): Endpoint.CreationTime, EndpointArn, \
             InferenceComponents[1].Tags"
        ]
    );
    assert_eq!(plan_json(&problem), base_plan_json());
}

#[test]
fn strict_mode_makes_every_unknown_key_an_error() {
    let mut scenario = base();
    scenario["EndpointArn"] = json!("arn");
    scenario["Fleet"]["Instances"][0]["LaunchTime"] = json!("2026-01-01");
    let error = Problem::from_json_with(&scenario.to_string(), &ReadOptions::strict()).unwrap_err();
    let text: Vec<String> = error.issues().iter().map(ToString::to_string).collect();
    assert_eq!(text, vec!["EndpointArn: unknown key", "Fleet.Instances[0].LaunchTime: unknown key"]);
    assert!(Problem::from_json_with(&base().to_string(), &ReadOptions::strict()).is_ok());
}

#[test]
fn control_loop_keys_are_known() {
    let mut scenario = base();
    scenario["Now"] = json!(1000);
    scenario["CapacityErrorTtlSeconds"] = json!(180);
    scenario["CapacityEvents"] = json!([{"InstanceType": "ml.g6e.12xlarge", "AvailabilityZone": "us-east-1b",
        "Event": "InsufficientCapacity", "Time": 990}]);
    assert!(Problem::from_json_with(&scenario.to_string(), &ReadOptions::strict()).is_ok());
}

#[test]
fn desired_and_initial_instance_count_together_is_an_error() {
    let text = r#"{"AvailabilityZones": ["a"], "Endpoint": {"InstanceType": "ml.g5.xlarge",
        "DesiredInstanceCount": 2, "InitialInstanceCount": 3}}"#;
    assert_eq!(
        messages(text),
        vec!["Endpoint.InitialInstanceCount: give DesiredInstanceCount or its alias InitialInstanceCount, not both"]
    );
    let alias =
        r#"{"AvailabilityZones": ["a"], "Endpoint": {"InstanceType": "ml.g5.xlarge", "InitialInstanceCount": 3}}"#;
    assert_eq!(Problem::from_json(alias).unwrap().components()[0].copy_count, 3);
}

/// 9,300 instances at the highest accepted price: 9.3e18 micros overflowed an i64 before.
#[test]
fn cost_of_many_expensive_instances_does_not_overflow() {
    let text = json!({
      "AvailabilityZones": ["a"],
      "InstanceTypes": [{"InstanceType": "big", "AcceleratorCount": 1, "VCpuCount": 4, "MemoryInMb": 16384,
                         "HourlyPrice": 1e9}],
      "Endpoint": {"InstancePools": [{"InstanceType": "big", "Priority": 1}]},
      "InferenceComponents": [{"InferenceComponentName": "m",
        "Specification": {"ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 1,
          "MinMemoryRequiredInMb": 1024}},
        "RuntimeConfig": {"CopyCount": 9300}}]
    })
    .to_string();
    let problem = Problem::from_json(&text).unwrap();
    let plan = plan_greedy(&problem);
    assert_eq!(plan.objective.cost_micros, 9_300_000_000_000_000_000);
    assert_eq!(plan.objective.cost_unit, CostUnit::UsdPerHour);
    assert!(plan.to_json().contains("\"Cost\": 9300000000000.0,\n    \"CostUnit\": \"USD/h\""), "{}", plan.to_json());
    assert!(verify(&problem, &plan).is_empty());
}

#[test]
fn a_price_above_the_limit_is_rejected() {
    let text = base().to_string().replace(r#""HourlyPrice":4.6"#, r#""HourlyPrice":1e10"#);
    assert_eq!(messages(&text), vec!["InstanceTypes[0].HourlyPrice: 1e10 is above the maximum 1000000000"]);
}

#[test]
fn an_unpriced_type_makes_the_cost_count_instances_and_warns_once() {
    let mut scenario = base();
    scenario["InstanceTypes"][0].as_object_mut().unwrap().remove("HourlyPrice");
    let problem = Problem::from_json(&scenario.to_string()).unwrap();
    let partial: Vec<String> =
        problem.warnings().iter().filter(|w| w.kind == WarningKind::PartialPrices).map(ToString::to_string).collect();
    assert_eq!(
        partial,
        vec![
            "warning: InstanceTypes: no HourlyPrice for pool ml.g6.12xlarge: a final fleet with one of them costs \
             instances, not dollars (CostUnit \"instances\")"
        ]
    );
    // The fleet instance i-01 is an unpriced ml.g6.12xlarge and stays (MinInstanceCount 1).
    let plan = plan_greedy(&problem);
    assert_eq!(plan.objective.cost_unit, CostUnit::Instances);
    assert!(plan.to_json().contains("\"CostUnit\": \"instances\""), "{}", plan.to_json());
    let line = fleetplan::objective_line(&plan.objective);
    assert!(line.ends_with(" instances") && !line.contains("per hour"), "{line}");
}

#[test]
fn the_builder_is_validated_like_json() {
    let scenario = ScenarioBuilder::new(["a"])
        .instance_type(InstanceTypeSpec {
            instance_type: "ml.x".into(),
            accelerator_count: 1,
            accelerator_memory_gib: 0.0,
            v_cpu_count: 8.0,
            memory_in_mb: 32_768.0,
            hourly_price: Some(f64::NAN),
        })
        .pool("ml.x", 1)
        .component("nan-cpu", 1, 1, f64::NAN, 1024)
        .component("negative-cpu", 1, 1, -2.0, 1024)
        .build()
        .unwrap();
    let text: Vec<String> = Problem::new(&scenario).unwrap_err().issues().iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        vec![
            "InstanceTypes[0].HourlyPrice: NaN is not a number",
            "Endpoint.InstancePools[0].InstanceType: \"ml.x\" is not in the instance type catalogue",
            "InferenceComponents[0].Specification.ComputeResourceRequirements.NumberOfCpuCoresRequired: NaN is not a \
             number (component \"nan-cpu\")",
            "InferenceComponents[1].Specification.ComputeResourceRequirements.NumberOfCpuCoresRequired: -2 is below \
             the minimum 0.25 (component \"negative-cpu\")",
        ]
    );
}

#[test]
fn a_plan_with_only_actions_verifies_clean() {
    let problem = Problem::from_json(&base().to_string()).unwrap();
    let plan = plan_greedy(&problem);
    let actions = serde_json::to_value(&plan.actions).unwrap();
    let minimal = Plan::from_json(&json!({ "Actions": actions }).to_string()).unwrap();
    assert!(minimal.omitted.objective && minimal.omitted.unplaced && minimal.omitted.status);
    assert_eq!(verify(&problem, &minimal), vec![]);
}

#[test]
fn a_plan_from_another_tool_verifies_clean() {
    let problem = Problem::from_json(&base().to_string()).unwrap();
    let mut plan: Value = serde_json::from_str(&plan_greedy(&problem).to_json()).unwrap();
    plan["Solver"] = json!("cbc-homegrown");
    plan["Objective"].as_object_mut().unwrap().remove("CostUnit");
    plan["Unplaced"] = json!([{"InferenceComponentName": "llm", "CopyCount": 0}]);
    plan["ExtraField"] = json!(true);
    let parsed = Plan::from_json(&plan.to_string()).unwrap();
    assert_eq!(parsed.solver, SolverKind::Other);
    assert_eq!(parsed.omitted.solver_name.as_deref(), Some("cbc-homegrown"));
    assert_eq!(verify(&problem, &parsed), vec![]);
}

#[test]
fn a_plan_with_a_wrong_objective_is_flagged() {
    let problem = Problem::from_json(&base().to_string()).unwrap();
    let mut plan: Value = serde_json::from_str(&plan_greedy(&problem).to_json()).unwrap();
    let actual = plan["Objective"]["Cost"].as_f64().unwrap();
    plan["Objective"]["Cost"] = json!(actual + 1.0);
    let violations = verify(&problem, &Plan::from_json(&plan.to_string()).unwrap());
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(violations[0].message.starts_with("reported objective"), "{violations:?}");
}

#[test]
fn a_plan_without_actions_is_rejected_with_paths() {
    let error = Plan::from_json(r#"{"Solver": 3, "Actions": [{"Type": "Teleport"}]}"#).unwrap_err();
    let text: Vec<String> = error.issues().iter().map(ToString::to_string).collect();
    assert_eq!(text.len(), 2, "{text:?}");
    assert!(text[0].starts_with("Actions[0].Type: unknown action type \"Teleport\""), "{text:?}");
    assert_eq!(text[1], "Solver: expected a string, found 3");
    assert_eq!(Plan::from_json("{}").unwrap_err().to_string(), "Actions: is required");
}

/// Every object of a document with its path, and the keys it holds.
fn objects(value: &Value, path: &str, out: &mut Vec<(String, Vec<String>)>) {
    match value {
        Value::Object(map) => {
            out.push((path.to_string(), map.keys().cloned().collect()));
            for (key, child) in map {
                let child_path = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                objects(child, &child_path, out);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                objects(item, &format!("{path}[{index}]"), out);
            }
        }
        _ => {}
    }
}

/// The object at a path produced by [`objects`].
fn object_at<'v>(value: &'v mut Value, path: &str) -> &'v mut serde_json::Map<String, Value> {
    let mut current = value;
    for part in path.split('.').filter(|part| !part.is_empty()) {
        let (key, indices) = match part.find('[') {
            Some(at) => (&part[..at], &part[at..]),
            None => (part, ""),
        };
        current = &mut current[key];
        for index in indices.split(['[', ']']).filter(|s| !s.is_empty()) {
            current = &mut current[index.parse::<usize>().unwrap()];
        }
    }
    current.as_object_mut().unwrap()
}

/// Every key of the contract's scenario (§1, §6), to keep generated keys far from all of them.
const CONTRACT_KEYS: &[&str] = &[
    "AvailabilityZones",
    "InstanceTypes",
    "InstanceType",
    "AcceleratorCount",
    "AcceleratorMemoryGiB",
    "VCpuCount",
    "MemoryInMb",
    "HourlyPrice",
    "Capacity",
    "AvailabilityZone",
    "Available",
    "Reserved",
    "Endpoint",
    "EndpointName",
    "VariantName",
    "ModelName",
    "InstancePools",
    "Priority",
    "ModelNameOverride",
    "DesiredInstanceCount",
    "InitialInstanceCount",
    "ManagedInstanceScaling",
    "Status",
    "MinInstanceCount",
    "MaxInstanceCount",
    "ScaleInPolicy",
    "Strategy",
    "CooldownInMinutes",
    "MaximumStepSize",
    "InferenceComponents",
    "InferenceComponentName",
    "Specification",
    "Specifications",
    "ComputeResourceRequirements",
    "NumberOfAcceleratorDevicesRequired",
    "NumberOfCpuCoresRequired",
    "MinMemoryRequiredInMb",
    "SchedulingConfig",
    "PlacementStrategy",
    "AvailabilityZoneBalance",
    "EnforcementMode",
    "MaxImbalance",
    "RuntimeConfig",
    "CopyCount",
    "Fleet",
    "Instances",
    "InstanceId",
    "State",
    "Copies",
    "Now",
    "CapacityErrorTtlSeconds",
    "CapacityEvents",
    "Event",
    "Time",
];

fn far_from_every_known_key(key: &str) -> bool {
    CONTRACT_KEYS.iter().all(|known| !known.eq_ignore_ascii_case(key) && strsim::damerau_levenshtein(known, key) >= 3)
}

/// One edit of `key`: substitute, insert or delete a letter, swap two neighbours, or change a
/// letter's case.
fn one_edit(key: &str, kind: usize, position: usize, letter: char) -> String {
    let mut chars: Vec<char> = key.chars().collect();
    let at = position % chars.len();
    match kind % 5 {
        0 if chars[at] != letter => chars[at] = letter,
        0 => chars[at] = if letter == 'q' { 'z' } else { 'q' },
        1 => chars.insert(at, letter),
        2 if chars.len() > 1 => {
            chars.remove(at);
        }
        3 if at + 1 < chars.len() && chars[at] != chars[at + 1] => chars.swap(at, at + 1),
        _ => {
            let c = chars[at];
            chars[at] = if c.is_uppercase() { c.to_ascii_lowercase() } else { c.to_ascii_uppercase() };
        }
    }
    chars.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    /// An unknown key at least three edits from every known key never changes the plan.
    #[test]
    fn a_far_unknown_key_never_changes_the_plan(
        object in any::<prop::sample::Index>(),
        key in "[A-Za-z][A-Za-z0-9_]{0,14}",
        value in prop_oneof![Just(json!(null)), any::<i32>().prop_map(|n| json!(n)), "[a-z]{0,6}".prop_map(|s| json!(s)),
                             Just(json!({"Nested": [1, 2]}))],
    ) {
        prop_assume!(far_from_every_known_key(&key));
        let mut scenario = base();
        let mut all = Vec::new();
        objects(&scenario, "", &mut all);
        let (path, _) = &all[object.index(all.len())];
        object_at(&mut scenario, path).insert(key.clone(), value);
        let problem = Problem::from_json(&scenario.to_string()).expect("an unknown key is not an error");
        let unknown: Vec<_> = problem.warnings().iter().filter(|w| w.kind == WarningKind::UnknownKeys).collect();
        prop_assert_eq!(unknown.len(), 1);
        let key_path = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
        prop_assert!(unknown[0].message.ends_with(&format!(": {key_path}")), "{}", unknown[0].message);
        prop_assert_eq!(plan_json(&problem), base_plan_json());
    }

    /// Renaming a known key by one edit is always an error naming the original key.
    #[test]
    fn a_known_key_renamed_by_one_edit_is_an_error_naming_it(
        object in any::<prop::sample::Index>(),
        which in any::<prop::sample::Index>(),
        kind in 0usize..5,
        position in 0usize..64,
        letter in prop::char::range('a', 'z'),
    ) {
        let mut scenario = base();
        let mut all = Vec::new();
        objects(&scenario, "", &mut all);
        let (path, keys) = &all[object.index(all.len())];
        let original = keys[which.index(keys.len())].clone();
        let renamed = one_edit(&original, kind, position, letter);
        // Still one key of this object, and unambiguous: no other known key is as close.
        prop_assume!(renamed != original && !keys.contains(&renamed));
        prop_assume!(CONTRACT_KEYS.iter().filter(|known| **known != original).all(|known| {
            !known.eq_ignore_ascii_case(&renamed) && strsim::damerau_levenshtein(known, &renamed) > 1
        }));
        let map = object_at(&mut scenario, path);
        let value = map.remove(&original).unwrap();
        map.insert(renamed.clone(), value);
        let error = Problem::from_json(&scenario.to_string()).expect_err("a misspelt key is an error");
        let key_path = if path.is_empty() { renamed.clone() } else { format!("{path}.{renamed}") };
        let expected = format!("{key_path}: unknown key; did you mean {original}?");
        let text = error.to_string();
        prop_assert!(text.lines().any(|line| line == expected), "expected {expected:?} in:\n{text}");
    }
}

/// The command line: `--strict` on every subcommand that reads a scenario, `verify` of plans
/// from other tools.
#[cfg(feature = "cli")]
mod cli {
    use std::process::Command;

    use serde_json::json;

    const BIN: &str = env!("CARGO_BIN_EXE_fleetplan");

    use crate::common::TempFile;

    fn run(args: &[&str]) -> (i32, String, String) {
        let output = Command::new(BIN).args(args).output().expect("the fleetplan binary runs");
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        (output.status.code().expect("exited normally"), text(&output.stdout), text(&output.stderr))
    }

    #[test]
    fn strict_is_accepted_by_every_subcommand_that_reads_a_scenario() {
        let mut scenario = super::base();
        scenario["EndpointArn"] = json!("arn");
        let file = TempFile::new("strict.json", &scenario.to_string());
        for command in ["plan", "consolidate", "report"] {
            let (code, _, stderr) = run(&[command, "--strict", file.path()]);
            assert_eq!((code, stderr.as_str()), (2, "EndpointArn: unknown key\n"), "{command}");
            let (code, _, stderr) = run(&[command, file.path()]);
            assert_eq!(code, 0, "{command}: {stderr}");
        }
        let plan = TempFile::new("strict-plan.json", r#"{"Actions": []}"#);
        let (code, _, stderr) = run(&["verify", "--strict", file.path(), plan.path()]);
        assert_eq!((code, stderr.as_str()), (2, "EndpointArn: unknown key\n"));
    }

    #[test]
    fn verify_accepts_a_plan_from_another_tool() {
        let scenario = TempFile::new("verify.json", &super::base().to_string());
        let (code, plan_json, _) = run(&["plan", "--json", scenario.path()]);
        assert_eq!(code, 0);
        let mut plan: serde_json::Value = serde_json::from_str(&plan_json).unwrap();
        let foreign = json!({"Solver": "homegrown-milp", "Actions": plan["Actions"].take(),
                             "Unplaced": [{"InferenceComponentName": "llm", "CopyCount": 0}]});
        let plan = TempFile::new("verify-plan.json", &foreign.to_string());
        let (code, stdout, stderr) = run(&["verify", scenario.path(), plan.path()]);
        assert_eq!((code, stdout.as_str()), (0, "plan is valid: no violations\n"), "{stderr}");
    }
}

/// A scenario with `components` components of `copies` copies each and `fleet` one-copy fleet
/// instances of the first component, spread over `azs` zones.
fn sized(azs: usize, components: usize, copies: u64, fleet: usize) -> Value {
    let zones: Vec<String> = (0..azs).map(|z| format!("az-{z}")).collect();
    json!({
        "AvailabilityZones": zones,
        "Endpoint": {"EndpointName": "e", "VariantName": "v",
            "InstancePools": [{"InstanceType": "ml.g6.12xlarge", "Priority": 1}]},
        "InferenceComponents": (0..components).map(|c| json!({
            "InferenceComponentName": format!("m{c}"), "RuntimeConfig": {"CopyCount": copies},
            "Specification": {"ComputeResourceRequirements": {
                "NumberOfAcceleratorDevicesRequired": 1, "MinMemoryRequiredInMb": 1024}}})).collect::<Vec<_>>(),
        "Fleet": {
            "Instances": (0..fleet).map(|i| json!({"InstanceId": format!("i-{i}"),
                "InstanceType": "ml.g6.12xlarge", "AvailabilityZone": zones[i % azs]})).collect::<Vec<_>>(),
            "Copies": (0..fleet).map(|i| json!({"InferenceComponentName": "m0",
                "InstanceId": format!("i-{i}"), "CopyCount": 1})).collect::<Vec<_>>()
        }
    })
}

#[test]
fn inputs_at_the_size_limits_are_accepted_and_beyond_them_named() {
    use fleetplan::{MAX_AVAILABILITY_ZONES, MAX_COMPONENTS, MAX_FLEET_INSTANCES, MAX_TOTAL_COPIES};
    // At the limits: accepted (and planned; the plan itself is not the point here).
    let at_limits = sized(MAX_AVAILABILITY_ZONES, MAX_COMPONENTS, MAX_TOTAL_COPIES / MAX_COMPONENTS as u64, 3_000);
    assert!(Problem::from_json(&at_limits.to_string()).is_ok());
    let fleet_at_limit = sized(3, 1, 1, MAX_FLEET_INSTANCES);
    assert!(Problem::from_json(&fleet_at_limit.to_string()).is_ok());
    // One over each list limit: every oversized list is named, nothing else is reported.
    let over = sized(MAX_AVAILABILITY_ZONES + 1, MAX_COMPONENTS + 1, 1, MAX_FLEET_INSTANCES + 1);
    assert_eq!(
        messages(&over.to_string()),
        vec![
            "AvailabilityZones: 1001 entries; at most 1000 are accepted (size limits)",
            "InferenceComponents: 2001 entries; at most 2000 are accepted (size limits)",
            "Fleet.Instances: 100001 entries; at most 100000 are accepted (size limits)",
        ]
    );
    // Copies: per component and in total.
    assert_eq!(
        messages(&sized(3, 2, 60_000, 0).to_string()),
        vec!["InferenceComponents: the copy counts add up to 120000; at most 100000 are accepted (size limits)"]
    );
    let mut min = sized(3, 1, 1, 0);
    min["Endpoint"]["ManagedInstanceScaling"] = json!({"MinInstanceCount": 100_001, "Status": "ENABLED"});
    assert_eq!(
        messages(&min.to_string()),
        vec!["Endpoint.ManagedInstanceScaling.MinInstanceCount: 100001 is above the maximum 100000"]
    );
}

/// Issue #18 defect 5: a `Now` with a type error was read as 0, and every event `Time` after 0
/// got a false second error (`Time: 100 is after Now (0)`).
#[test]
fn an_invalid_now_adds_no_follow_on_error() {
    for (now, expected) in [
        (json!("150"), "Now: expected an integer, found \"150\""),
        (json!(150.5), "Now: expected an integer, found 150.5"),
        (json!(1e19), "Now: 1e19 is above the maximum 1000000000000000"),
    ] {
        let mut scenario = base();
        scenario["Now"] = now;
        scenario["CapacityEvents"] = json!([{"InstanceType": "ml.g6e.12xlarge", "AvailabilityZone": "us-east-1b",
            "Event": "InsufficientCapacity", "Time": 100}]);
        assert_eq!(messages(&scenario.to_string()), vec![expected.to_string()]);
    }
    // The same holds for the other optional numbers checked against another field.
    let mut scenario = base();
    scenario["Endpoint"]["ManagedInstanceScaling"]["MaxInstanceCount"] = json!("8");
    assert_eq!(
        messages(&scenario.to_string()),
        vec!["Endpoint.ManagedInstanceScaling.MaxInstanceCount: expected an integer, found \"8\""]
    );
}

/// Issue #18 defect 4: `CapacityEvents` had no size limit (a million events took seconds and
/// gigabytes). Every list has one; at the limit the input is accepted, beyond it named.
#[test]
fn capacity_events_and_capacity_have_size_limits() {
    use fleetplan::{MAX_CAPACITY_ENTRIES, MAX_CAPACITY_EVENTS};
    let event = json!({"InstanceType": "ml.g6e.12xlarge", "AvailabilityZone": "us-east-1b",
        "Event": "InsufficientCapacity", "Time": 100});
    let mut scenario = base();
    scenario["Now"] = json!(1000);
    scenario["CapacityEvents"] = Value::Array(vec![event.clone(); MAX_CAPACITY_EVENTS]);
    assert!(Problem::from_json(&scenario.to_string()).is_ok());
    scenario["CapacityEvents"] = Value::Array(vec![event; MAX_CAPACITY_EVENTS + 1]);
    let capacity = json!({"InstanceType": "ml.g6e.12xlarge", "AvailabilityZone": "us-east-1b", "Available": 1});
    scenario["Capacity"] = Value::Array(vec![capacity; MAX_CAPACITY_ENTRIES + 1]);
    let expected = vec![
        format!(
            "Capacity: {} entries; at most {MAX_CAPACITY_ENTRIES} are accepted (size limits)",
            MAX_CAPACITY_ENTRIES + 1
        ),
        format!(
            "CapacityEvents: {} entries; at most {MAX_CAPACITY_EVENTS} are accepted (size limits)",
            MAX_CAPACITY_EVENTS + 1
        ),
    ];
    let text = scenario.to_string();
    assert_eq!(messages(&text), expected);
    // A scenario built in code is held to the same limits.
    let scenario = fleetplan::scenario_from_json(&base().to_string()).unwrap();
    let mut oversized = scenario.clone();
    oversized.now = Some(1000);
    oversized.capacity_events = vec![
        fleetplan::CapacityEvent {
            instance_type: "ml.g6e.12xlarge".into(),
            availability_zone: "us-east-1b".into(),
            event: fleetplan::CapacityEventKind::Launched,
            time: 100,
        };
        MAX_CAPACITY_EVENTS + 1
    ];
    let error = Problem::new(&oversized).unwrap_err();
    let issues: Vec<String> = error.issues().iter().map(ToString::to_string).collect();
    assert_eq!(issues, expected[1..].to_vec());
}

/// `Scenario::to_json` round-trips: the bundled scenarios and random scenarios read back to the
/// same scenario and the same problem (issue #18).
#[test]
fn scenario_to_json_round_trips_for_the_bundled_scenarios() {
    let directory = format!("{}/scenarios", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<_> = std::fs::read_dir(&directory)
        .unwrap()
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|extension| extension == "json"))
        .collect();
    names.sort();
    assert!(names.len() >= 5, "{names:?}");
    for path in names {
        let text = std::fs::read_to_string(&path).unwrap();
        let scenario = fleetplan::scenario_from_json(&text).unwrap_or_else(|error| panic!("{path:?}: {error}"));
        let written = scenario.to_json();
        assert_eq!(fleetplan::scenario_from_json(&written).unwrap(), scenario, "{path:?}");
        let problem = Problem::from_json(&text).unwrap();
        let reread = Problem::from_json(&written).unwrap();
        assert_eq!(reread.components(), problem.components(), "{path:?}");
        assert_eq!(reread.instance_types(), problem.instance_types(), "{path:?}");
        assert_eq!(reread.fleet(), problem.fleet(), "{path:?}");
        assert_eq!(Problem::new(&scenario).unwrap(), reread, "{path:?}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

    #[test]
    fn scenario_to_json_round_trips(scenario in crate::common::scenario(crate::common::Config::MEDIUM)) {
        let written = scenario.to_json();
        match Problem::new(&scenario) {
            Ok(problem) => {
                proptest::prop_assert_eq!(&fleetplan::scenario_from_json(&written).unwrap(), &scenario);
                proptest::prop_assert_eq!(Problem::from_json(&written).unwrap(), problem);
            }
            Err(error) => {
                let reread = Problem::from_json(&written).unwrap_err();
                proptest::prop_assert_eq!(reread.to_string(), error.to_string());
            }
        }
    }
}

/// The builder expresses every part of a scenario and refuses what it cannot apply: a
/// misspelt name or a component without a specification is an error, never a dropped
/// constraint (issue #18).
#[test]
fn the_builder_refuses_what_it_cannot_apply() {
    use fleetplan::{CapacityEventKind, InstanceState, IssueKind, PlacementStrategy, ScaleInStrategy, ScenarioBuilder};
    let error = ScenarioBuilder::new(["a"])
        .pool("ml.g6.12xlarge", 1)
        .component("chat", 2, 1, 0.0, 1024)
        .max_imbalance("caht", 1)
        .strategy("chta", PlacementStrategy::Binpack)
        .component_per_type("llm", 1)
        .max_imbalance("llm", 0)
        .draining("i-9")
        .specification("chat", "ml.g6.12xlarge", 1, 0.0, 1024)
        .price("ml.g6.12xlarge", 4.6)
        .build()
        .unwrap_err();
    let issues: Vec<(IssueKind, String)> =
        error.issues().iter().map(|issue| (issue.kind(), issue.to_string())).collect();
    assert_eq!(
        issues,
        vec![
            (IssueKind::UnknownName, "ScenarioBuilder::max_imbalance: \"caht\" is not a component added before".into()),
            (IssueKind::UnknownName, "ScenarioBuilder::strategy: \"chta\" is not a component added before".into()),
            (
                IssueKind::Inconsistent,
                "ScenarioBuilder::max_imbalance: component \"llm\" has no specification yet to apply max_imbalance to"
                    .into()
            ),
            (IssueKind::UnknownName, "ScenarioBuilder::draining: \"i-9\" is not a fleet instance added before".into()),
            (
                IssueKind::Inconsistent,
                "ScenarioBuilder::specification: component \"chat\" has one Specification for every type; add it \
                 with component_per_type"
                    .into()
            ),
            (
                IssueKind::UnknownName,
                "ScenarioBuilder::price: \"ml.g6.12xlarge\" was not added with instance_type".into()
            ),
        ]
    );

    // Everything a scenario can say, through the builder, equals the same scenario in JSON.
    let built = ScenarioBuilder::new(["us-east-1a", "us-east-1b"])
        .names("agents", "AllTraffic")
        .instance_type(fleetplan::InstanceTypeSpec {
            instance_type: "ml.g6e.12xlarge".into(),
            accelerator_count: 4,
            accelerator_memory_gib: 48.0,
            v_cpu_count: 48.0,
            memory_in_mb: 393_216.0,
            hourly_price: None,
        })
        .price("ml.g6e.12xlarge", 10.49)
        .pool("ml.g6e.12xlarge", 1)
        .capacity("ml.g6e.12xlarge", "us-east-1b", Some(1), 1)
        .instance_limits(1, Some(8))
        .scale_in(ScaleInStrategy::Consolidation, 2, 30)
        .component_per_type("llm", 2)
        .specification("llm", "ml.g6e.12xlarge", 2, 0.0, 32_768)
        .strategy("llm", PlacementStrategy::Binpack)
        .max_imbalance("llm", 1)
        .fleet_instance("i-01", "ml.g6e.12xlarge", "us-east-1a", false)
        .fleet_instance("i-02", "ml.g6e.12xlarge", "us-east-1b", false)
        .draining("i-02")
        .fleet_copies("llm", "i-01", 1)
        .now(1_000)
        .capacity_error_ttl_seconds(120)
        .capacity_event("ml.g6e.12xlarge", "us-east-1a", CapacityEventKind::InsufficientCapacity, 990)
        .build()
        .unwrap();
    assert_eq!(built.fleet.instances[1].state, Some(InstanceState::Draining));
    let json = serde_json::json!({
        "AvailabilityZones": ["us-east-1a", "us-east-1b"],
        "InstanceTypes": [{"InstanceType": "ml.g6e.12xlarge", "AcceleratorCount": 4, "AcceleratorMemoryGiB": 48,
            "VCpuCount": 48, "MemoryInMb": 393216, "HourlyPrice": 10.49}],
        "Capacity": [{"InstanceType": "ml.g6e.12xlarge", "AvailabilityZone": "us-east-1b", "Available": 1, "Reserved": 1}],
        "Endpoint": {"EndpointName": "agents", "VariantName": "AllTraffic",
            "InstancePools": [{"InstanceType": "ml.g6e.12xlarge", "Priority": 1}],
            "ManagedInstanceScaling": {"MinInstanceCount": 1, "MaxInstanceCount": 8,
                "ScaleInPolicy": {"Strategy": "CONSOLIDATION", "MaximumStepSize": 2, "CooldownInMinutes": 30}}},
        "InferenceComponents": [{"InferenceComponentName": "llm",
            "Specifications": [{"InstanceType": "ml.g6e.12xlarge",
                "ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 2, "MinMemoryRequiredInMb": 32768},
                "SchedulingConfig": {"PlacementStrategy": "BINPACK",
                    "AvailabilityZoneBalance": {"EnforcementMode": "PERMISSIVE", "MaxImbalance": 1}}}],
            "RuntimeConfig": {"CopyCount": 2}}],
        "Fleet": {"Instances": [
                {"InstanceId": "i-01", "InstanceType": "ml.g6e.12xlarge", "AvailabilityZone": "us-east-1a"},
                {"InstanceId": "i-02", "InstanceType": "ml.g6e.12xlarge", "AvailabilityZone": "us-east-1b", "State": "Draining"}],
            "Copies": [{"InferenceComponentName": "llm", "InstanceId": "i-01", "CopyCount": 1}]},
        "Now": 1000,
        "CapacityErrorTtlSeconds": 120,
        "CapacityEvents": [{"InstanceType": "ml.g6e.12xlarge", "AvailabilityZone": "us-east-1a",
            "Event": "InsufficientCapacity", "Time": 990}]
    });
    assert_eq!(Problem::new(&built).unwrap(), Problem::from_json(&json.to_string()).unwrap());
}
