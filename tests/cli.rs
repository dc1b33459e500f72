//! The `fleetplan` binary: exit codes, standard input, JSON output, verify round trips.
//! Needs the `cli` feature (`cargo test --features cli`), which builds the binary.
#![cfg(feature = "cli")]

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_fleetplan");

fn scenario(name: &str) -> String {
    format!("{}/scenarios/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Runs the binary with `args`, feeding `stdin` if given.
fn run(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the fleetplan binary runs");
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // The binary may exit before reading all of stdin (e.g. on bad arguments): not an error here.
        let _ = pipe.write_all(text.as_bytes());
    }
    child.wait_with_output().expect("fleetplan finishes")
}

fn code(output: &Output) -> i32 {
    output.status.code().expect("exited normally")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("UTF-8 stdout")
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("UTF-8 stderr")
}

use crate::common::TempFile;

/// No MinInstanceCount, so even a plan that places nothing is valid.
const SMALL: &str = r#"{
  "AvailabilityZones": ["us-east-1a", "us-east-1b"],
  "Endpoint": {"EndpointName": "chat", "InstancePools": [{"InstanceType": "ml.g6.12xlarge", "Priority": 1}]},
  "InferenceComponents": [{"InferenceComponentName": "chat",
    "Specification": {"ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 1, "MinMemoryRequiredInMb": 8192},
      "SchedulingConfig": {"AvailabilityZoneBalance": {"MaxImbalance": 1}}},
    "RuntimeConfig": {"CopyCount": 2}}]
}"#;

#[test]
fn plan_prints_a_table_and_exits_0() {
    let output = run(&["plan", &scenario("seed-az-balance.json")], None);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.starts_with("Plan for endpoint agents (variant AllTraffic)\n"), "{text}");
    assert!(text.contains("\nLaunches ("), "{text}");
    // Validation warnings go to standard error as well.
    assert!(
        stderr(&output)
            .contains("warning: InferenceComponents[2].RuntimeConfig.CopyCount: single copy of agent-summarizer"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn plan_json_parses_and_is_deterministic() {
    for name in ["seed-az-balance.json", "seed-multi-gpu-llm.json", "fragmented-fleet.json"] {
        let first = run(&["plan", &scenario(name), "--json"], None);
        assert_eq!(code(&first), 0, "{name}: {}", stderr(&first));
        let value: Value = serde_json::from_slice(&first.stdout).expect("plan --json is JSON");
        assert_eq!(value["Solver"], "greedy", "{name}");
        for key in ["Status", "Actions", "Unplaced", "Objective"] {
            assert!(value.get(key).is_some(), "{name}: no {key} in {value}");
        }
        let second = run(&["plan", &scenario(name), "--json"], None);
        assert_eq!(first.stdout, second.stdout, "{name}: output differs between runs");
    }
}

#[test]
fn threads_sets_the_exact_planners_threads_and_rejects_zero() {
    // Proven optimal at once: one thread or two, the same plan.
    let args = |threads: &'static str| ["plan", "--solver", "exact", "--json", "--threads", threads];
    let path = scenario("seed-az-balance.json");
    let one = run(&[&args("1")[..], &[path.as_str()]].concat(), None);
    let two = run(&[&args("2")[..], &[path.as_str()]].concat(), None);
    assert_eq!((code(&one), code(&two)), (0, 0), "{}{}", stderr(&one), stderr(&two));
    assert_eq!(one.stdout, two.stdout);
    let zero = run(&[&args("0")[..], &[path.as_str()]].concat(), None);
    assert_eq!(code(&zero), 2);
    assert!(stderr(&zero).contains("--threads"), "{}", stderr(&zero));
}

#[test]
fn scenario_from_stdin() {
    let text = std::fs::read_to_string(scenario("seed-multi-gpu-llm.json")).unwrap();
    let from_stdin = run(&["plan", "-", "--json"], Some(&text));
    let from_file = run(&["plan", &scenario("seed-multi-gpu-llm.json"), "--json"], None);
    assert_eq!(code(&from_stdin), 0, "{}", stderr(&from_stdin));
    assert_eq!(from_stdin.stdout, from_file.stdout);
}

#[test]
fn invalid_scenario_exits_2_with_one_message_per_line() {
    let broken = r#"{"AvailabilityZones": ["a", "a"],
      "Endpoint": {"InstancePools": [{"InstanceType": "ml.g6.12xlarge", "Priority": 9}]},
      "InferenceComponents": [{"InferenceComponentName": "llm",
        "Specification": {"ComputeResourceRequirements": {"MinMemoryRequiredInMb": 1024}},
        "RuntimeConfig": {"CopyCount": "four"}}]}"#;
    let output = run(&["plan", "-"], Some(broken));
    assert_eq!(code(&output), 2);
    assert!(output.stdout.is_empty(), "nothing on stdout for bad input");
    let messages = stderr(&output);
    assert_eq!(
        messages.lines().collect::<Vec<_>>(),
        vec![
            "InferenceComponents[0].RuntimeConfig.CopyCount: expected an integer, found \"four\"",
            "AvailabilityZones[1]: \"a\" is listed twice",
            "Endpoint.InstancePools[0].Priority: 9 is above the maximum 5",
        ]
    );
}

#[test]
fn malformed_json_missing_file_and_bad_usage_exit_2() {
    let malformed = run(&["plan", "-"], Some("{\"AvailabilityZones\": ["));
    assert_eq!(code(&malformed), 2);
    assert!(stderr(&malformed).starts_with("malformed JSON"), "{}", stderr(&malformed));

    let missing = run(&["plan", "/nonexistent/fleetplan/scenario.json"], None);
    assert_eq!(code(&missing), 2);
    assert!(stderr(&missing).contains("cannot read"), "{}", stderr(&missing));

    assert_eq!(code(&run(&[], None)), 2, "no subcommand");
    assert_eq!(code(&run(&["plan", &scenario("seed-az-balance.json"), "--solver", "magic"], None)), 2);
}

#[test]
fn verify_accepts_what_plan_produces() {
    let small = TempFile::new("verify-ok-scenario.json", SMALL);
    let mut cases: Vec<(String, Vec<&str>)> = vec![(small.path().to_string(), vec![])];
    let mut bundled: Vec<String> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios"))
        .expect("scenarios/")
        .map(|entry| entry.expect("entry").path())
        // Scenario files only: `scenarios/models/` and `scenarios/simulations/` hold other documents.
        .filter(|path| path.is_file() && path.extension().is_some_and(|extension| extension == "json"))
        .map(|path| path.to_string_lossy().into_owned())
        .collect();
    bundled.sort();
    cases.extend(bundled.into_iter().map(|path| (path, vec![])));
    // The exact planner's plans verify too, whether or not the limit stopped it.
    cases.push((scenario("seed-az-balance.json"), vec!["--solver", "exact", "--time-limit-ms", "2000"]));
    for (path, extra) in cases {
        let mut args = vec!["plan", path.as_str(), "--json"];
        args.extend(extra);
        let plan = run(&args, None);
        assert_eq!(code(&plan), 0, "{path}: {}", stderr(&plan));
        let plan_file = TempFile::new("verify-ok-plan.json", &stdout(&plan));
        let output = run(&["verify", &path, plan_file.path()], None);
        assert_eq!(code(&output), 0, "{path}: {}", stdout(&output));
        assert_eq!(stdout(&output), "plan is valid: no violations\n");
        // The plan may also come from standard input.
        let output = run(&["verify", &path, "-"], Some(&stdout(&plan)));
        assert_eq!(code(&output), 0, "{path}: {}", stdout(&output));
    }
}

#[test]
fn verify_rejects_a_tampered_plan_with_exit_1() {
    let small = TempFile::new("tampered-scenario.json", SMALL);
    let plan = run(&["plan", small.path(), "--json"], None);
    let mut value: Value = serde_json::from_slice(&plan.stdout).expect("plan --json is JSON");
    value["Actions"].as_array_mut().expect("Actions is an array").push(serde_json::json!(
        {"Type": "PlaceCopy", "InferenceComponentName": "chat", "InstanceId": "i-does-not-exist"}
    ));
    value["Objective"]["PlacedCopies"] = serde_json::json!(99);
    let tampered = TempFile::new("tampered-plan.json", &value.to_string());
    let output = run(&["verify", small.path(), tampered.path()], None);
    assert_eq!(code(&output), 1, "{}", stdout(&output));
    let text = stdout(&output);
    assert!(text.contains("Reference") && text.contains("i-does-not-exist"), "{text}");
    assert!(text.contains("Accounting"), "{text}");

    let json = run(&["verify", small.path(), tampered.path(), "--json"], None);
    assert_eq!(code(&json), 1);
    let violations: Value = serde_json::from_slice(&json.stdout).expect("verify --json is JSON");
    assert!(violations.as_array().is_some_and(|list| list.len() >= 2), "{violations}");
}

#[test]
fn verify_loads_a_contract_plan_without_optional_keys() {
    // docs/contract.md §4 shape, without StopReason, Unplaced, Bound, Warnings, ModelName or Reserved.
    let plan = r#"{
      "Solver": "greedy", "Status": "Feasible",
      "Actions": [
        {"Type": "LaunchInstance", "InstanceId": "new-1", "InstanceType": "ml.g6.12xlarge", "AvailabilityZone": "us-east-1a"},
        {"Type": "LaunchInstance", "InstanceId": "new-2", "InstanceType": "ml.g6.12xlarge", "AvailabilityZone": "us-east-1b"},
        {"Type": "PlaceCopy", "InferenceComponentName": "chat", "InstanceId": "new-1"},
        {"Type": "PlaceCopy", "InferenceComponentName": "chat", "InstanceId": "new-2"}
      ],
      "Objective": {"PlacedCopies": 2, "BalanceExcess": 0, "InstancesByPriority": {"1": 2}, "Cost": 2.0}
    }"#;
    let small = TempFile::new("contract-scenario.json", SMALL);
    let output = run(&["verify", small.path(), "-"], Some(plan));
    assert_eq!(code(&output), 0, "{}{}", stdout(&output), stderr(&output));
}

#[test]
fn verify_with_a_malformed_plan_exits_2() {
    let small = TempFile::new("malformed-plan-scenario.json", SMALL);
    let output = run(&["verify", small.path(), "-"], Some("{\"Solver\": \"greedy\"}"));
    assert_eq!(code(&output), 2);
    assert!(stderr(&output).contains("not a valid plan"), "{}", stderr(&output));
    let both = run(&["verify", "-", "-"], Some(SMALL));
    assert_eq!(code(&both), 2);
}

#[test]
fn exact_solver_with_time_limit() {
    let output = run(
        &["plan", &scenario("seed-az-balance.json"), "--solver", "exact", "--time-limit-ms", "2000", "--json"],
        None,
    );
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let value: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert!(value["Objective"]["PlacedCopies"].is_u64(), "{value}");
}

#[test]
fn consolidate_and_report() {
    let path = scenario("fragmented-fleet.json");
    let table = run(&["consolidate", &path], None);
    assert_eq!(code(&table), 0, "{}", stderr(&table));
    assert!(stdout(&table).starts_with("Consolidation for endpoint"), "{}", stdout(&table));
    let json = run(&["consolidate", &path, "--json"], None);
    assert_eq!(code(&json), 0);
    let value: Value = serde_json::from_slice(&json.stdout).expect("consolidate --json is JSON");
    assert!(value["Steps"].is_array() && value["Objective"].is_object(), "{value}");

    let svg = TempFile::new("report.svg", "");
    let report = run(&["report", &scenario("seed-az-balance.json"), "--svg", svg.path()], None);
    assert_eq!(code(&report), 0, "{}", stderr(&report));
    assert!(!report.stdout.is_empty());
    let written = std::fs::read_to_string(svg.path()).expect("SVG written");
    assert!(written.trim_start().starts_with("<svg"), "{written}");
    let json = run(&["report", &scenario("seed-az-balance.json"), "--json"], None);
    assert_eq!(code(&json), 0);
    let _: Value = serde_json::from_slice(&json.stdout).expect("report --json is JSON");
}

/// Four single-copy components with AZ balance: four warnings of one kind.
const WARNED: &str = r#"{
  "AvailabilityZones": ["us-east-1a", "us-east-1b"],
  "Endpoint": {"EndpointName": "chat", "InstanceType": "ml.g6.12xlarge"},
  "InferenceComponents": [
    {"InferenceComponentName": "a", "RuntimeConfig": {"CopyCount": 1},
     "Specification": {"ComputeResourceRequirements": {"MinMemoryRequiredInMb": 1024},
       "SchedulingConfig": {"AvailabilityZoneBalance": {"MaxImbalance": 1}}}},
    {"InferenceComponentName": "b", "RuntimeConfig": {"CopyCount": 1},
     "Specification": {"ComputeResourceRequirements": {"MinMemoryRequiredInMb": 1024},
       "SchedulingConfig": {"AvailabilityZoneBalance": {"MaxImbalance": 1}}}},
    {"InferenceComponentName": "c\u001b[2J", "RuntimeConfig": {"CopyCount": 1},
     "Specification": {"ComputeResourceRequirements": {"MinMemoryRequiredInMb": 1024},
       "SchedulingConfig": {"AvailabilityZoneBalance": {"MaxImbalance": 1}}}},
    {"InferenceComponentName": "d", "RuntimeConfig": {"CopyCount": 1},
     "Specification": {"ComputeResourceRequirements": {"MinMemoryRequiredInMb": 1024},
       "SchedulingConfig": {"AvailabilityZoneBalance": {"MaxImbalance": 1}}}}
  ]
}"#;

#[test]
fn warnings_are_printed_once_grouped_on_stderr_and_quiet_drops_them() {
    let expected = "warning: 4 components with a single copy (one AZ outage takes each down): a, b, c\\u{1b}[2J, d\n";
    for args in [&["plan", "-"][..], &["plan", "-", "--json"], &["report", "-"], &["consolidate", "-"]] {
        let output = run(args, Some(WARNED));
        assert_eq!(code(&output), 0, "{args:?}: {}", stderr(&output));
        assert_eq!(stderr(&output), expected, "{args:?}");
        let out = stdout(&output);
        assert!(!out.contains('\u{1b}'), "{args:?}: a raw escape character on stdout:\n{out}");
        // The JSON plan carries its `Warnings` as data; tables do not repeat them.
        if !args.contains(&"--json") {
            assert!(!out.contains("single copy"), "{args:?}: warnings on stdout:\n{out}");
        }
    }
    // The plan JSON still lists every warning for machines.
    let json: Value = serde_json::from_str(&stdout(&run(&["plan", "-", "--json"], Some(WARNED)))).unwrap();
    assert_eq!(json["Warnings"].as_array().map(Vec::len), Some(4));
    for args in [&["plan", "-", "--quiet"][..], &["--quiet", "report", "-"], &["plan", "-", "-q", "--json"]] {
        let output = run(args, Some(WARNED));
        assert_eq!(code(&output), 0);
        assert_eq!(stderr(&output), "", "{args:?}");
        assert!(!stdout(&output).is_empty());
    }
}

#[test]
fn report_with_a_plan_shows_the_fleet_the_plan_leads_to() {
    let small = TempFile::new("report-plan-scenario.json", SMALL);
    let plan = run(&["plan", small.path(), "--json"], None);
    assert_eq!(code(&plan), 0, "{}", stderr(&plan));
    let actions = serde_json::from_str::<Value>(&stdout(&plan)).unwrap()["Actions"].as_array().map_or(0, Vec::len);

    let current = run(&["report", small.path(), "--json"], None);
    let current: Value = serde_json::from_str(&stdout(&current)).unwrap();
    assert_eq!(current["Components"][0]["Placed"], 0);
    assert_eq!(current["InstanceCount"], 0);

    let after = run(&["report", small.path(), "--plan", "-", "--json"], Some(&stdout(&plan)));
    assert_eq!(code(&after), 0, "{}", stderr(&after));
    let after: Value = serde_json::from_str(&stdout(&after)).unwrap();
    assert_eq!(after["Components"][0]["Placed"], 2);
    assert_eq!(after["Components"][0]["CopiesPerAz"], serde_json::json!([1, 1]));

    let table = run(&["report", small.path(), "--plan", "-"], Some(&stdout(&plan)));
    assert_eq!(code(&table), 0, "{}", stderr(&table));
    let text = stdout(&table);
    assert!(text.starts_with(&format!("Fleet after the plan <stdin> ({actions} actions)\n")), "{text}");
    insta::assert_snapshot!("report_after_plan_table", text);
}

#[test]
fn report_with_a_bad_plan_exits_2_or_warns() {
    let small = TempFile::new("report-bad-plan-scenario.json", SMALL);
    let malformed = run(&["report", small.path(), "--plan", "-"], Some("{\"Actions\": 3}"));
    assert_eq!(code(&malformed), 2);
    assert!(stderr(&malformed).starts_with("<stdin>: not a valid plan:\n"), "{}", stderr(&malformed));
    let both = run(&["report", "-", "--plan", "-"], Some(SMALL));
    assert_eq!(code(&both), 2);
    assert_eq!(stderr(&both), "SCENARIO and PLAN cannot both be read from standard input\n");
    // Actions that do not apply: the report is still printed, with one warning saying so.
    let stray = r#"{"Solver": "greedy", "Status": "Feasible", "Objective": {"PlacedCopies": 0, "BalanceExcess": 0,
        "InstancesByPriority": {}, "Cost": 0}, "Actions": [{"Type": "TerminateInstance", "InstanceId": "i-404"}]}"#;
    let output = run(&["report", small.path(), "--plan", "-"], Some(stray));
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(
        stderr(&output).starts_with("warning: <stdin>: 1 of the plan's actions do not apply to this fleet (first: "),
        "{}",
        stderr(&output)
    );
    assert_eq!(stderr(&output).lines().count(), 1);
}

#[test]
fn consolidate_prints_the_objective_before_and_after() {
    let output = run(&["consolidate", &scenario("fragmented-fleet.json")], None);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let text = stdout(&output);
    let head: Vec<&str> = text.lines().take(3).collect();
    // The hand-made consolidation snapshot (tests/snapshots_output.rs) pins the layout; here
    // only the lines, so a better consolidation engine does not break this test.
    assert!(head[1].starts_with("Objective before: placed 58 copies"), "{text}");
    assert!(head[2].starts_with("Objective after:  placed 58 copies"), "{text}");
}

#[test]
fn schema_prints_the_shipped_schemas() {
    for document in ["scenario", "plan", "plan-input"] {
        let output = run(&["schema", document], None);
        assert_eq!(code(&output), 0, "{}", stderr(&output));
        let path = format!("{}/docs/schema/{document}.schema.json", env!("CARGO_MANIFEST_DIR"));
        assert_eq!(stdout(&output), std::fs::read_to_string(&path).unwrap(), "{document}");
    }
    assert_eq!(code(&run(&["schema", "fleet"], None)), 2);
}

#[test]
fn scaling_policy_prints_the_request_and_rejects_a_missing_or_malformed_maximum() {
    let seed = scenario("seed-az-balance.json");
    let both = ["--max-concurrency", "ml.g6e.12xlarge=20", "--max-concurrency", "ml.g6.12xlarge=8"];
    let output = run(&[&["scaling-policy", seed.as_str(), "-q"][..], &both[..]].concat(), None);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let request: Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    let configuration = &request["TargetTrackingScalingPolicyConfiguration"];
    assert_eq!(configuration["TargetValue"], 0.7);
    let queries = configuration["CustomizedMetricSpecification"]["Metrics"].as_array().expect("Metrics");
    assert_eq!(
        queries.last().and_then(|query| query["Expression"].as_str()),
        Some("(FILL(m0, 0) / 20 + FILL(m1, 0) / 8) / (FILL(m0 * 0 + 1, 0) + FILL(m1 * 0 + 1, 0))")
    );

    let missing = run(&["scaling-policy", &seed, "-q", "--max-concurrency", "ml.g6e.12xlarge=20"], None);
    assert_eq!(code(&missing), 2);
    assert!(stderr(&missing).contains("no MaxConcurrency for ml.g6.12xlarge"), "{}", stderr(&missing));
    let malformed = run(&["scaling-policy", &seed, "-q", "--max-concurrency", "ml.g6e.12xlarge:20"], None);
    assert_eq!(code(&malformed), 2);
    assert!(stderr(&malformed).contains("expected TYPE=N"), "{}", stderr(&malformed));
}
