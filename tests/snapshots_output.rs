//! Snapshots of the readable tables (`fleetplan::render`).
//!
//! The bundled-scenario snapshots show whatever the greedy planner produces; they are re-accepted
//! (`cargo insta review`) whenever the planner changes its plans on purpose. The hand-made plans
//! below do not depend on any engine and pin the table layout itself.
#![cfg(feature = "json")]

use fleetplan::__internal::objective_of_actions;
use fleetplan::__internal::{validation_text, warnings_summary};
use fleetplan::{
    objective_line, plan_greedy, plan_table, verify, violations_table, Action, ConsolidationPlan, ConsolidationStep,
    Move, Plan, Problem, SolverKind, Status, StopReason, Unplaced, WarningKind,
};

fn bundled(name: &str) -> Problem {
    let path = format!("{}/scenarios/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"));
    Problem::from_json(&text).unwrap_or_else(|error| panic!("{path}: {error}"))
}

#[test]
fn greedy_plan_table_seed_az_balance() {
    let problem = bundled("seed-az-balance.json");
    insta::assert_snapshot!(plan_table(&problem, &plan_greedy(&problem)));
}

#[test]
fn greedy_plan_table_seed_multi_gpu_llm() {
    let problem = bundled("seed-multi-gpu-llm.json");
    insta::assert_snapshot!(plan_table(&problem, &plan_greedy(&problem)));
}

/// Two AZs, a preferred and a fallback pool, a fleet with an off-pool instance.
const SMALL: &str = r#"{
  "AvailabilityZones": ["us-east-1a", "us-east-1b"],
  "InstanceTypes": [
    {"InstanceType": "ml.g6.12xlarge", "AcceleratorCount": 4, "VCpuCount": 48, "MemoryInMb": 196608, "HourlyPrice": 4.6},
    {"InstanceType": "ml.g6.48xlarge", "AcceleratorCount": 8, "VCpuCount": 192, "MemoryInMb": 786432, "HourlyPrice": 13.35},
    {"InstanceType": "ml.g5.12xlarge", "AcceleratorCount": 4, "VCpuCount": 48, "MemoryInMb": 196608, "HourlyPrice": 5.672}
  ],
  "Capacity": [{"InstanceType": "ml.g6.12xlarge", "AvailabilityZone": "us-east-1b", "Available": 0, "Reserved": 1}],
  "Endpoint": {
    "EndpointName": "chat-prod", "VariantName": "AllTraffic",
    "InstancePools": [{"InstanceType": "ml.g6.12xlarge", "Priority": 1},
                      {"InstanceType": "ml.g6.48xlarge", "Priority": 2, "ModelNameOverride": "chat-int4"}]
  },
  "InferenceComponents": [
    {"InferenceComponentName": "chat",
     "Specification": {"ModelName": "chat-fp16",
       "ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 1, "NumberOfCpuCoresRequired": 4,
                                       "MinMemoryRequiredInMb": 16384},
       "SchedulingConfig": {"AvailabilityZoneBalance": {"MaxImbalance": 1}}},
     "RuntimeConfig": {"CopyCount": 5}},
    {"InferenceComponentName": "embed",
     "Specification": {"ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 1, "MinMemoryRequiredInMb": 4096},
       "SchedulingConfig": {"PlacementStrategy": "BINPACK", "AvailabilityZoneBalance": {"MaxImbalance": 0}}},
     "RuntimeConfig": {"CopyCount": 1}}
  ],
  "Fleet": {
    "Instances": [{"InstanceId": "i-1", "InstanceType": "ml.g6.12xlarge", "AvailabilityZone": "us-east-1a"},
                  {"InstanceId": "i-2", "InstanceType": "ml.g5.12xlarge", "AvailabilityZone": "us-east-1b"},
                  {"InstanceId": "i-3", "InstanceType": "ml.g6.48xlarge", "AvailabilityZone": "us-east-1b"}],
    "Copies": [{"InferenceComponentName": "chat", "InstanceId": "i-1"},
               {"InferenceComponentName": "embed", "InstanceId": "i-1"},
               {"InferenceComponentName": "embed", "InstanceId": "i-2"},
               {"InferenceComponentName": "chat", "InstanceId": "i-3"}]
  }
}"#;

fn hand_made_plan(problem: &Problem) -> Plan {
    let place = |id: &str, model: &str| Action::PlaceCopy {
        component: "chat".into(),
        instance_id: id.into(),
        model_name: Some(model.into()),
    };
    let actions = vec![
        Action::LaunchInstance {
            instance_id: "new-1".into(),
            instance_type: "ml.g6.12xlarge".into(),
            availability_zone: "us-east-1b".into(),
            reserved: true,
        },
        Action::RemoveCopy { component: "embed".into(), instance_id: "i-2".into() },
        place("new-1", "chat-fp16"),
        place("i-1", "chat-fp16"),
        Action::TerminateInstance { instance_id: "i-2".into() },
    ];
    let objective = objective_of_actions(problem, &actions);
    let mut bound = objective.clone();
    bound.cost_micros -= 4_600_000;
    Plan {
        solver: SolverKind::Exact,
        status: Status::Feasible,
        stop_reason: StopReason::TimeLimit,
        actions,
        unplaced: vec![Unplaced {
            inference_component_name: "chat".into(),
            copy_count: 1,
            reasons: vec!["example reason: ml.g6.12xlarge has no capacity in us-east-1b (Available 0)".into()],
            causes: Vec::new(),
        }],
        objective,
        bound: Some(bound),
        warnings: problem.warnings().to_vec(),
        omitted: Default::default(),
    }
}

#[test]
fn hand_made_plan_table() {
    let problem = Problem::from_json(SMALL).unwrap();
    let table = plan_table(&problem, &hand_made_plan(&problem));
    // Layout facts that must hold whatever the snapshot says.
    assert!(table.contains("Solver: exact   Status: Feasible   Stop: time limit reached"), "{table}");
    assert!(table.lines().all(|line| line == line.trim_end()), "trailing spaces:\n{table}");
    insta::assert_snapshot!(table);
}

#[test]
fn violations_table_of_a_tampered_plan() {
    let problem = Problem::from_json(SMALL).unwrap();
    let mut plan = hand_made_plan(&problem);
    plan.actions.push(Action::PlaceCopy { component: "chat".into(), instance_id: "i-404".into(), model_name: None });
    plan.actions.push(Action::PlaceCopy { component: "embed".into(), instance_id: "new-1".into(), model_name: None });
    plan.objective.placed_copies += 7;
    let violations = verify(&problem, &plan);
    assert!(violations.len() >= 3, "{violations:?}");
    insta::assert_snapshot!(violations_table(&violations));
}

#[test]
fn empty_violations_table() {
    assert_eq!(violations_table(&[]), "plan is valid: no violations\n");
}

#[test]
fn consolidation_table() {
    let problem = Problem::from_json(SMALL).unwrap();
    let objective = objective_of_actions(&problem, &[]);
    let plan = ConsolidationPlan {
        steps: vec![
            ConsolidationStep {
                moves: vec![Move { inference_component_name: "chat".into(), from: "i-3".into(), to: "i-1".into() }],
                release: vec!["i-3".into()],
            },
            ConsolidationStep { moves: Vec::new(), release: vec!["i-2".into()] },
        ],
        objective,
        stop_reason: StopReason::Completed,
    };
    insta::assert_snapshot!(fleetplan::consolidation_table(&problem, &plan));
}

/// Names with a terminal escape sequence, a newline, a tab, a backslash and XML specials.
const CONTROL_NAMES: &str = r#"{
  "AvailabilityZones": ["us-east-1a", "us-east-1b"],
  "Endpoint": {"EndpointName": "ep\u001b]0;owned\u0007", "InstancePools": [{"InstanceType": "ml.g6.12xlarge", "Priority": 1}]},
  "InferenceComponents": [
    {"InferenceComponentName": "red\u001b[31m", "RuntimeConfig": {"CopyCount": 2},
     "Specification": {"ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 1, "MinMemoryRequiredInMb": 1024}}},
    {"InferenceComponentName": "two\nlines", "RuntimeConfig": {"CopyCount": 2},
     "Specification": {"ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 1, "MinMemoryRequiredInMb": 1024}}},
    {"InferenceComponentName": "tab\tback\\slash", "RuntimeConfig": {"CopyCount": 2},
     "Specification": {"ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 1, "MinMemoryRequiredInMb": 1024}}},
    {"InferenceComponentName": "<b>&\"q\"", "RuntimeConfig": {"CopyCount": 2},
     "Specification": {"ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 1, "MinMemoryRequiredInMb": 1024}}}
  ]
}"#;

#[test]
fn control_characters_are_escaped_in_the_plan_table() {
    let problem = Problem::from_json(CONTROL_NAMES).unwrap();
    let table = plan_table(&problem, &plan_greedy(&problem));
    let raw_controls: Vec<char> = table.chars().filter(|&ch| ch.is_control() && ch != '\n').collect();
    assert!(raw_controls.is_empty(), "raw control characters {raw_controls:?} in:\n{table}");
    assert!(table.starts_with("Plan for endpoint ep\\u{1b}]0;owned\\u{7} (variant AllTraffic)\n"), "{table}");
    // One line per component in the components table: a newline in a name cannot add a row.
    let components = table.split("copies per AZ\n").nth(1).unwrap_or("");
    let rows: Vec<&str> = components.lines().skip(1).take_while(|line| !line.is_empty()).collect();
    assert_eq!(
        rows.iter().map(|row| row.split("  ").nth(1).unwrap_or("")).collect::<Vec<_>>(),
        ["red\\u{1b}[31m", "two\\nlines", "tab\\tback\\\\slash", "<b>&\"q\""],
        "{table}"
    );
    insta::assert_snapshot!(table);
}

#[test]
fn validation_messages_are_escaped() {
    let text = CONTROL_NAMES.replace(r#""CopyCount": 2}"#, r#""CopyCount": -1}"#);
    let error = Problem::from_json(&text).unwrap_err();
    let rendered = validation_text(&error);
    assert!(!rendered.chars().any(|ch| ch.is_control() && ch != '\n'), "{rendered}");
    assert_eq!(rendered.lines().count(), error.issues().len(), "{rendered}");
}

/// Seven single-copy components, one copy count that cannot meet MaxImbalance 0 over three AZs,
/// and an ignored `DesiredInstanceCount`: three kinds of warnings, nine in all.
fn many_warnings() -> Problem {
    let component = |name: &str, copies: u32| {
        format!(
            r#"{{"InferenceComponentName": "{name}", "RuntimeConfig": {{"CopyCount": {copies}}},
               "Specification": {{"ComputeResourceRequirements": {{"MinMemoryRequiredInMb": 1024}},
                 "SchedulingConfig": {{"AvailabilityZoneBalance": {{"MaxImbalance": 0}}}}}}}}"#
        )
    };
    let mut components: Vec<String> = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta\u{1b}"]
        .iter()
        .map(|name| component(&name.replace('\u{1b}', "\\u001b"), 1))
        .collect();
    components.push(component("pair", 2));
    let json = format!(
        r#"{{"AvailabilityZones": ["a", "b", "c"],
            "Endpoint": {{"InstanceType": "ml.g6.12xlarge", "DesiredInstanceCount": 3}},
            "InferenceComponents": [{}]}}"#,
        components.join(",")
    );
    Problem::from_json(&json).unwrap()
}

#[test]
fn warnings_are_grouped_by_kind_with_names() {
    let problem = many_warnings();
    assert_eq!(problem.warnings().len(), 9);
    assert_eq!(
        warnings_summary(&problem, problem.warnings()),
        "warning: 7 components with a single copy (one AZ outage takes each down): alpha, beta, gamma, delta, epsilon \
         and 2 more\n\
         warning: InferenceComponents[7].RuntimeConfig.CopyCount: 2 copies over 3 AZs can never meet \
         MaxImbalance 0 (best is 1) (component \"pair\")\n\
         warning: Endpoint.DesiredInstanceCount: ignored: the endpoint hosts inference components, whose CopyCount \
         drives the plan\n"
    );
    // The names past the first five are escaped too.
    let last_two: Vec<_> =
        problem.warnings().iter().filter(|warning| warning.kind == WarningKind::SingleCopy).skip(5).cloned().collect();
    assert_eq!(
        warnings_summary(&problem, &last_two),
        "warning: 2 components with a single copy (one AZ outage takes each down): zeta, eta\\u{1b}\n"
    );
}

#[test]
fn consolidation_table_shows_the_objective_before_and_after() {
    let problem = Problem::from_json(SMALL).unwrap();
    let plan = fleetplan::consolidate(&problem);
    let table = fleetplan::consolidation_table(&problem, &plan);
    let lines: Vec<&str> = table.lines().collect();
    let before = objective_line(&objective_of_actions(&problem, &[]));
    assert_eq!(lines.get(1).copied(), Some(format!("Objective before: {before}").as_str()), "{table}");
    assert_eq!(
        lines.get(2).copied(),
        Some(format!("Objective after:  {}", objective_line(&plan.objective)).as_str()),
        "{table}"
    );
}
