//! Validation messages: many broken rules reported at once, each naming its path and value;
//! no input makes `Problem::from_json` panic.
#![cfg(feature = "json")]

use fleetplan::{Problem, ScenarioBuilder};
use proptest::prelude::*;
use serde_json::Value;

/// One scenario breaking as many rules of docs/contract.md §1 as fit in one document.
const MANY_RULES_BROKEN: &str = r#"{
  "AvailabilityZones": ["us-east-1a", "us-east-1a", "us-east-1b"],
  "InstanceTypes": [
    {"InstanceType": "ml.custom.xlarge", "AcceleratorCount": 1.5, "VCpuCount": -4, "MemoryInMb": 16384},
    {"InstanceType": "ml.g6.12xlarge", "AcceleratorCount": 4, "VCpuCount": 48, "MemoryInMb": 196608, "HourlyPrice": -4.6}
  ],
  "Capacity": [
    {"InstanceType": "ml.g6.12xlarge", "AvailabilityZone": "eu-west-1a", "Available": 2},
    {"InstanceType": "ml.g6e.12xlarge", "AvailabilityZone": "us-east-1b", "Available": -1, "Reserved": 0.5},
    {"InstanceType": "ml.x9.huge", "AvailabilityZone": "us-east-1a"}
  ],
  "Endpoint": {
    "EndpointName": "broken",
    "VariantName": "AllTraffic",
    "InstancePools": [
      {"InstanceType": "ml.g6.12xlarge", "Priority": 1},
      {"InstanceType": "ml.g6e.12xlarge", "Priority": 0},
      {"InstanceType": "ml.g5.12xlarge", "Priority": 6},
      {"InstanceType": "ml.nope.xlarge", "Priority": 2},
      {"InstanceType": "ml.g6.12xlarge", "Priority": 3},
      {"InstanceType": "ml.g6.48xlarge", "Priority": 2.5}
    ],
    "ManagedInstanceScaling": {"Status": "ON", "MinInstanceCount": 5, "MaxInstanceCount": 2,
      "ScaleInPolicy": {"Strategy": "AGGRESSIVE", "MaximumStepSize": 0, "CooldownInMinutes": 2}}
  },
  "InferenceComponents": [
    {"InferenceComponentName": "llm",
     "Specification": {"ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 2, "MinMemoryRequiredInMb": 32768}},
     "RuntimeConfig": {"CopyCount": "four"}},
    {"InferenceComponentName": "llm",
     "Specification": {"ComputeResourceRequirements": {"MinMemoryRequiredInMb": 1024}},
     "Specifications": [{"InstanceType": "ml.g6.12xlarge", "ComputeResourceRequirements": {"MinMemoryRequiredInMb": 1024}}],
     "RuntimeConfig": {"CopyCount": 1}},
    {"InferenceComponentName": "embed", "RuntimeConfig": {"CopyCount": 2}},
    {"InferenceComponentName": "rerank",
     "Specifications": [
       {"InstanceType": "ml.p5.48xlarge", "ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 1, "MinMemoryRequiredInMb": 4096}},
       {"InstanceType": "ml.g6.12xlarge", "ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 1.5, "NumberOfCpuCoresRequired": 0.1, "MinMemoryRequiredInMb": 64},
        "SchedulingConfig": {"PlacementStrategy": "RANDOM", "AvailabilityZoneBalance": {"EnforcementMode": "STRICT", "MaxImbalance": 101}}}
     ],
     "RuntimeConfig": {"CopyCount": -3}},
    {"InferenceComponentName": "", "Specification": {"ComputeResourceRequirements": {"MinMemoryRequiredInMb": true}}, "RuntimeConfig": {}}
  ],
  "Fleet": {
    "Instances": [
      {"InstanceId": "i-1", "InstanceType": "ml.g6.12xlarge", "AvailabilityZone": "us-west-2a"},
      {"InstanceId": "i-2", "InstanceType": "ml.g6.12xlarge", "AvailabilityZone": "us-east-1b", "Reserved": "yes"},
      {"InstanceId": "i-2", "InstanceType": "ml.unknown.xlarge", "AvailabilityZone": "us-east-1b"},
      {"InstanceId": "i-3", "InstanceType": "ml.g6.12xlarge", "AvailabilityZone": "us-east-1b"}
    ],
    "Copies": [
      {"InferenceComponentName": "ghost", "InstanceId": "i-2"},
      {"InferenceComponentName": "embed", "InstanceId": "i-404", "CopyCount": 1},
      {"InferenceComponentName": "llm", "InstanceId": "i-3", "CopyCount": 3}
    ]
  }
}"#;

fn messages(text: &str) -> String {
    match Problem::from_json(text) {
        Ok(_) => panic!("the scenario should be rejected"),
        Err(error) => error.issues().iter().map(|issue| format!("{issue}\n")).collect(),
    }
}

#[test]
fn many_rules_at_once() {
    let text = messages(MANY_RULES_BROKEN);
    // The contract's own example, verbatim.
    assert!(
        text.contains("InferenceComponents[0].RuntimeConfig.CopyCount: expected an integer, found \"four\"\n"),
        "{text}"
    );
    // A type error deep inside one pool does not hide the list-level "too many pools" error.
    assert!(text.contains("Endpoint.InstancePools: 6 pools given, at most 5 are allowed\n"), "{text}");
    // A semantic issue kept earlier does not hide another one of the same component.
    // Messages about a component entry name it (paths stay JSON paths).
    assert!(
        text.contains(
            "InferenceComponents[1]: give either Specification or Specifications, not both (component \"llm\")\n"
        ),
        "{text}"
    );
    // Unrelated fleet errors do not hide a packing error on an instance that is otherwise fine.
    assert!(text.contains("Fleet.Instances[3]: instance i-3 (ml.g6.12xlarge) already breaks packing"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn fleet_that_already_breaks_packing() {
    let text = r#"{
      "AvailabilityZones": ["us-east-1a", "us-east-1b"],
      "Endpoint": {"InstancePools": [{"InstanceType": "ml.g6.12xlarge", "Priority": 1}]},
      "InferenceComponents": [{"InferenceComponentName": "llm",
        "Specification": {"ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 2,
          "NumberOfCpuCoresRequired": 4, "MinMemoryRequiredInMb": 16384}},
        "RuntimeConfig": {"CopyCount": 4}}],
      "Fleet": {
        "Instances": [{"InstanceId": "i-1", "InstanceType": "ml.g6.12xlarge", "AvailabilityZone": "us-east-1a"},
                      {"InstanceId": "i-2", "InstanceType": "ml.g6.12xlarge", "AvailabilityZone": "us-east-1b"}],
        "Copies": [{"InferenceComponentName": "llm", "InstanceId": "i-1", "CopyCount": 3},
                   {"InferenceComponentName": "llm", "InstanceId": "i-2", "CopyCount": 1}]
      }
    }"#;
    let text = messages(text);
    assert!(text.starts_with("Fleet.Instances[0]: instance i-1 (ml.g6.12xlarge) already breaks packing"), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn not_a_number_through_the_rust_api() {
    // JSON cannot carry NaN or infinity, the builder API can.
    let mut scenario =
        ScenarioBuilder::new(["a", "b"]).pool("ml.g6.12xlarge", 1).component("m", 2, 1, 1.0, 1024).build().unwrap();
    // Whole numbers are integers in the typed model; the fractional quantities can still be
    // NaN or infinite, and the out-of-range integers are named as in JSON.
    scenario.inference_components[0].runtime_config.copy_count = u32::MAX;
    if let Some(spec) = scenario.inference_components[0].specification.as_mut() {
        spec.compute_resource_requirements.min_memory_required_in_mb = f64::INFINITY;
        spec.compute_resource_requirements.number_of_cpu_cores_required = Some(f64::NAN);
    }
    scenario.endpoint.instance_pools[0].priority = 0;
    let error = Problem::new(&scenario).expect_err("NaN and infinity must be rejected");
    let text: Vec<String> = error.issues().iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        vec![
            "Endpoint.InstancePools[0].Priority: 0 is below the minimum 1",
            "InferenceComponents[0].RuntimeConfig.CopyCount: 4294967295 is above the maximum 100000 (component \"m\")",
            "InferenceComponents[0].Specification.ComputeResourceRequirements.NumberOfCpuCoresRequired: NaN is not a \
             number (component \"m\")",
            "InferenceComponents[0].Specification.ComputeResourceRequirements.MinMemoryRequiredInMb: inf is not a number \
             (component \"m\")",
        ]
    );
}

#[test]
fn malformed_and_non_object_documents() {
    for (text, start) in [
        ("", "malformed JSON"),
        ("{\"AvailabilityZones\": [", "malformed JSON"),
        ("[]", "expected an object"),
        ("42", "expected an object"),
        // Out of range: named by its path and echoed as written (issue 9).
        ("{\"AvailabilityZones\": [1e400]}", "AvailabilityZones[0]: number out of range: 1e400"),
    ] {
        let error = Problem::from_json(text).expect_err(text);
        assert!(error.to_string().starts_with(start), "{text:?}: {error}");
    }
}

#[test]
fn every_required_key_missing_is_named() {
    let text = messages(
        r#"{"InferenceComponents": [{"Specifications": [{}]}], "Fleet": {"Instances": [{}], "Copies": [{}]}}"#,
    );
    for path in [
        "AvailabilityZones: is required",
        "Endpoint: is required",
        "InferenceComponents[0].InferenceComponentName: is required",
        "InferenceComponents[0].Specifications[0].ComputeResourceRequirements: is required",
        "InferenceComponents[0].RuntimeConfig: is required",
        "Fleet.Instances[0].InstanceId: is required",
        "Fleet.Copies[0].InstanceId: is required",
    ] {
        assert!(text.contains(path), "missing {path:?} in\n{text}");
    }
}

// ---------------------------------------------------------------------------------------------
// Mutations of valid scenarios.

/// One step into a JSON document.
#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

/// What a mutation does to the value it picks.
#[derive(Clone, Debug)]
enum Mutation {
    Drop,
    Replace(Value),
}

fn replacement_values() -> Vec<Value> {
    serde_json::from_str(
        r#"["x", "four", -1, -0.5, 2.5, 0, 1e300, -1e300, 18446744073709551615, -9223372036854775808,
            null, true, [], {}, [1, "a"], {"k": 1}, "", "NaN"]"#,
    )
    .unwrap_or_default()
}

fn paths(value: &Value, prefix: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                prefix.push(Step::Key(key.clone()));
                out.push(prefix.clone());
                paths(child, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                prefix.push(Step::Index(index));
                out.push(prefix.clone());
                paths(child, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

/// The validator's spelling of a path: `A.B[0].C`.
fn path_text(steps: &[Step]) -> String {
    let mut text = String::new();
    for step in steps {
        match step {
            Step::Key(key) => {
                if !text.is_empty() {
                    text.push('.');
                }
                text.push_str(key);
            }
            Step::Index(index) => text.push_str(&format!("[{index}]")),
        }
    }
    text
}

fn apply(document: &mut Value, steps: &[Step], mutation: &Mutation) {
    let Some((last, parents)) = steps.split_last() else { return };
    let mut parent = document;
    for step in parents {
        let next = match (step, parent) {
            (Step::Key(key), Value::Object(map)) => map.get_mut(key),
            (Step::Index(index), Value::Array(items)) => items.get_mut(*index),
            _ => None,
        };
        match next {
            Some(value) => parent = value,
            None => return,
        }
    }
    match (last, parent, mutation) {
        (Step::Key(key), Value::Object(map), Mutation::Drop) => {
            map.remove(key);
        }
        (Step::Index(index), Value::Array(items), Mutation::Drop) if *index < items.len() => {
            items.remove(*index);
        }
        (Step::Key(key), Value::Object(map), Mutation::Replace(value)) => {
            map.insert(key.clone(), value.clone());
        }
        (Step::Index(index), Value::Array(items), Mutation::Replace(value)) => {
            if let Some(slot) = items.get_mut(*index) {
                *slot = value.clone();
            }
        }
        _ => {}
    }
}

fn scenarios() -> Vec<Value> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");
    // Scenario files only: `scenarios/models/` and `scenarios/simulations/` hold other documents.
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file() && path.extension().is_some_and(|extension| extension == "json"))
        .collect();
    files.sort();
    files.iter().map(|path| serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()).collect()
}

fn mutation_strategy() -> impl Strategy<Value = (usize, Mutation)> {
    let values = replacement_values();
    let count = values.len();
    (any::<usize>(), 0..=count).prop_map(move |(selector, choice)| {
        let mutation = match values.get(choice) {
            Some(value) => Mutation::Replace(value.clone()),
            None => Mutation::Drop,
        };
        (selector, mutation)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Dropping keys and replacing values by strings, negatives, huge numbers, nulls, arrays or
    /// objects never panics, and every issue names its path.
    #[test]
    fn mutated_scenarios_never_panic_and_name_paths(
        scenario in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(mutation_strategy(), 1..6),
    ) {
        let all = scenarios();
        let mut document = all[scenario.index(all.len())].clone();
        for (selector, mutation) in &mutations {
            let mut found = Vec::new();
            paths(&document, &mut Vec::new(), &mut found);
            if found.is_empty() {
                break;
            }
            let steps = &found[selector % found.len()];
            apply(&mut document, steps, mutation);
        }
        let text = serde_json::to_string(&document).unwrap();
        if let Err(error) = Problem::from_json(&text) {
            prop_assert!(!error.issues().is_empty());
            for issue in error.issues() {
                prop_assert!(!issue.path.is_empty(), "no path: {}", issue);
                prop_assert!(!issue.message.is_empty(), "no message at {}", issue.path);
            }
        }
    }

    /// A number replaced by a string is reported at exactly that path, naming the value.
    #[test]
    fn a_number_turned_string_is_named_by_its_path(
        scenario in any::<prop::sample::Index>(),
        selector in any::<prop::sample::Index>(),
    ) {
        let all = scenarios();
        let mut document = all[scenario.index(all.len())].clone();
        let mut found = Vec::new();
        paths(&document, &mut Vec::new(), &mut found);
        let numbers: Vec<Vec<Step>> = found
            .into_iter()
            .filter(|steps| {
                let mut value = &document;
                for step in steps.iter() {
                    value = match step {
                        Step::Key(key) => &value[key.as_str()],
                        Step::Index(index) => &value[*index],
                    };
                }
                value.is_number()
            })
            .collect();
        prop_assume!(!numbers.is_empty());
        let steps = &numbers[selector.index(numbers.len())];
        apply(&mut document, steps, &Mutation::Replace(Value::String("four".into())));
        let error = Problem::from_json(&serde_json::to_string(&document).unwrap());
        let Err(error) = error else {
            return Err(TestCaseError::fail(format!("{} = \"four\" was accepted", path_text(steps))));
        };
        let path = path_text(steps);
        prop_assert!(
            error.issues().iter().any(|issue| issue.path == path && issue.message.ends_with("found \"four\"")),
            "{path} not named in:\n{error}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Regressions found by fuzzing (fuzz/): each input once made validation panic or misreport.

/// Every issue carries a kind a program can match (issue #18): the broken scenario above, one
/// issue per kind checked by path.
#[test]
fn every_issue_has_a_matchable_kind() {
    use fleetplan::IssueKind;
    let error = Problem::from_json(MANY_RULES_BROKEN).unwrap_err();
    let kind_at = |path: &str| {
        error.issues().iter().find(|issue| issue.path == path).map(|issue| issue.kind()).unwrap_or_else(|| {
            panic!("no issue at {path}: {error}");
        })
    };
    assert_eq!(kind_at("InstanceTypes[0].AcceleratorCount"), IssueKind::NotAWholeNumber);
    assert_eq!(kind_at("InferenceComponents[0].RuntimeConfig.CopyCount"), IssueKind::TypeMismatch);
    assert_eq!(kind_at("InferenceComponents[4].RuntimeConfig.CopyCount"), IssueKind::MissingField);
    assert_eq!(kind_at("AvailabilityZones[1]"), IssueKind::Duplicate);
    assert_eq!(kind_at("InstanceTypes[0].VCpuCount"), IssueKind::OutOfRange);
    assert_eq!(kind_at("Endpoint.InstancePools"), IssueKind::TooLarge);
    assert_eq!(kind_at("Endpoint.InstancePools[3].InstanceType"), IssueKind::UnknownName);
    assert_eq!(kind_at("Endpoint.ManagedInstanceScaling.MinInstanceCount"), IssueKind::Inconsistent);
    assert_eq!(kind_at("Endpoint.ManagedInstanceScaling.Status"), IssueKind::InvalidValue);
    assert_eq!(kind_at("InferenceComponents[1]"), IssueKind::Conflict);
    assert_eq!(kind_at("InferenceComponents[4].InferenceComponentName"), IssueKind::Empty);
    assert_eq!(kind_at("Fleet.Instances[3]"), IssueKind::Inconsistent);
    // Document-level and key-level kinds.
    let malformed = Problem::from_json("{").unwrap_err();
    assert_eq!(malformed.issues()[0].kind(), IssueKind::Malformed);
    let twice = Problem::from_json(r#"{"AvailabilityZones": ["a"], "AvailabilityZones": ["a"]}"#).unwrap_err();
    assert!(twice.issues().iter().any(|issue| issue.kind() == IssueKind::DuplicateKey), "{twice}");
    let strict = fleetplan::ReadOptions::strict();
    let unknown = Problem::from_json_with(r#"{"AvailabilityZones": ["a"], "Tags": []}"#, &strict).unwrap_err();
    assert!(unknown.issues().iter().any(|issue| issue.kind() == IssueKind::UnknownKey), "{unknown}");
}
