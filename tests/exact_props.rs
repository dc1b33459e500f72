//! Properties of the exact planner: never worse than greedy, monotone in capacity and instance
//! types, honest under limits, and the bundled scenarios' optima (snapshot-tested).

use std::time::Duration;

use crate::common;

use fleetplan::{plan_greedy, verify, ExactPlanner, InstancePool, InstanceTypeSpec, Plan, Problem, Scenario, Status};
use proptest::prelude::*;
use serde_json::json;

/// Scenarios proven optimal quickly; `fifty-models` is not proven in reasonable time by
/// microlp (see docs/benchmarks.md) and is tested for what is true instead.
/// Every bundled scenario; fifty-models takes about a second to prove on a quiet 2-core machine.
const PROVEN: [&str; 5] =
    ["seed-az-balance", "seed-fallback-single-model", "seed-multi-gpu-llm", "fragmented-fleet", "fifty-models"];

fn load(name: &str) -> Problem {
    let path = format!("{}/scenarios/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    Problem::from_json(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn bundled() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Checks every promise a returned plan makes.
fn assert_honest(problem: &Problem, plan: &Plan, greedy: &Plan, what: &str) {
    let violations = verify(problem, plan);
    if verify(problem, greedy).is_empty() {
        assert!(violations.is_empty(), "{what}: {violations:?}");
        assert!(
            plan.objective.key() <= greedy.objective.key(),
            "{what}: exact {:?} worse than greedy {:?}",
            plan.objective,
            greedy.objective
        );
    }
    if plan.status == Status::Optimal {
        assert!(plan.bound.is_none(), "{what}: an optimal plan needs no bound");
    }
    if let Some(bound) = &plan.bound {
        assert!(bound.key() <= plan.objective.key(), "{what}: bound {bound:?} above objective {:?}", plan.objective);
    }
}

#[test]
fn never_worse_than_greedy_on_bundled_scenarios() {
    let names = bundled();
    assert!(names.len() >= 5);
    for name in names {
        let problem = load(&name);
        let greedy = plan_greedy(&problem);
        let plan = ExactPlanner::new().time_limit(Duration::from_secs(3)).plan(&problem);
        assert_honest(&problem, &plan, &greedy, &name);
    }
}

#[test]
fn bundled_scenarios_solved_to_optimal() {
    for name in PROVEN {
        let problem = load(name);
        let plan = ExactPlanner::new().time_limit(Duration::from_secs(60)).plan(&problem);
        assert_eq!(plan.status, Status::Optimal, "{name}: {:?}", plan.stop_reason);
        assert!(verify(&problem, &plan).is_empty(), "{name}: {:?}", verify(&problem, &plan));
        insta::assert_json_snapshot!(format!("optimum-{name}"), plan.objective);
    }
}

#[test]
fn fifty_models_under_a_time_limit_is_honest() {
    let problem = load("fifty-models");
    let greedy = plan_greedy(&problem);
    let plan = ExactPlanner::new().time_limit(Duration::from_secs(2)).plan(&problem);
    assert_honest(&problem, &plan, &greedy, "fifty-models");
    if plan.status != Status::Optimal {
        assert!(plan.bound.is_some(), "an unproven plan carries its proven bound");
    }
}

#[test]
fn a_one_millisecond_run_never_claims_optimal() {
    let problem = load("fifty-models");
    // The warm start obeys the deadline after its first pass, so the promise under a 1 ms
    // deadline is "no worse than greedy's first pass" (a node limit of one pass).
    let greedy = fleetplan::GreedyPlanner::new().limits(fleetplan::Limits::new().node_limit(1)).plan(&problem);
    let plan = ExactPlanner::new().time_limit(Duration::from_millis(1)).plan(&problem);
    assert_ne!(plan.status, Status::Optimal);
    assert_ne!(plan.stop_reason, fleetplan::StopReason::Completed);
    assert_honest(&problem, &plan, &greedy, "fifty-models, 1 ms");
}

#[test]
fn a_node_limited_run_is_optimal_only_when_it_matches_the_unlimited_optimum() {
    for name in PROVEN {
        let problem = load(name);
        let full = ExactPlanner::new().plan(&problem);
        let limited = ExactPlanner::new().node_limit(1).plan(&problem);
        assert_honest(&problem, &limited, &plan_greedy(&problem), name);
        if limited.status == Status::Optimal {
            assert_eq!(limited.objective, full.objective, "{name}");
        }
    }
}

/// Small random scenarios (up to 3 AZs, 3 small types, 4 SPREAD components, no fleet) for the
/// monotonicity properties.
const MONOTONE: common::Config = common::Config {
    azs: (1, 3),
    pool_types: (1, 3),
    components: (1, 4),
    copies: (0, 4),
    total_copies: None,
    spread_percent: 100,
    per_type_percent: 0,
    fleet: (0, 0),
    empty_fleet_percent: 100,
    max_percent: 0,
    ..common::Config::TINY
};

/// The scenario with MaxInstanceCount 12 (a bounded search), and with one capacity entry lifted
/// by one (`more_capacity`) or one more instance type (`extra_type`).
fn variant(scenario: &Scenario, more_capacity: bool, extra_type: bool) -> Scenario {
    let mut out = scenario.clone();
    if let Some(scaling) = &mut out.endpoint.managed_instance_scaling {
        scaling.max_instance_count = Some(12);
    }
    if more_capacity {
        if let Some(entry) = out.capacity.first_mut() {
            entry.available = entry.available.map(|available| available + 1);
            entry.reserved += 1;
        }
    }
    if extra_type {
        out.instance_types.push(InstanceTypeSpec {
            instance_type: "ml.extra".into(),
            accelerator_count: 8,
            accelerator_memory_gib: 24.0,
            v_cpu_count: 8.0,
            memory_in_mb: 16_384.0,
            hourly_price: Some(9.0),
        });
        out.endpoint.instance_pools.push(InstancePool {
            instance_type: "ml.extra".into(),
            priority: 3,
            model_name_override: None,
        });
    }
    out
}

/// Solves with a node limit, not a time limit: the outcome must not depend on machine load.
fn solve(scenario: &Scenario) -> (Problem, Plan) {
    let problem = Problem::new(scenario).unwrap_or_else(|error| panic!("generated scenario invalid: {error}"));
    let plan = ExactPlanner::new().node_limit(50_000).plan(&problem);
    (problem, plan)
}

/// The exact planner is honest on `scenario`, and more capacity or one more type never makes
/// the proven optimum worse.
fn check_honest_and_monotone(scenario: &Scenario) -> Result<(), TestCaseError> {
    let (problem, base) = solve(&variant(scenario, false, false));
    // E.g. MinInstanceCount with no capacity; more capacity may make it feasible.
    prop_assume!(base.status != Status::Infeasible);
    assert_honest(&problem, &base, &plan_greedy(&problem), "base");
    // Monotonicity is a statement about optima: compare only proven ones (a node-limited run
    // that could not prove is still checked for honesty above).
    if base.status != Status::Optimal {
        return Ok(());
    }
    for (more_capacity, extra_type) in [(true, false), (false, true)] {
        let (more_problem, more) = solve(&variant(scenario, more_capacity, extra_type));
        assert_honest(&more_problem, &more, &plan_greedy(&more_problem), "more");
        if more.status != Status::Optimal {
            continue;
        }
        prop_assert!(
            more.objective.key() <= base.objective.key(),
            "capacity {} type {}: {:?} worse than {:?}",
            more_capacity,
            extra_type,
            more.objective,
            base.objective
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn exact_is_honest_and_monotone(scenario in common::scenario(MONOTONE)) {
        check_honest_and_monotone(&scenario)?;
    }
}

/// Found by the shared generator: adding a priority-3 type made the exact planner prove a
/// costlier plan optimal. microlp reported an LP optimum its own solution did not have (93.98
/// for a solution worth 1.5) and the planner fixed the priority-1 level at 94 instances; the
/// cost floor of that count then forced a costlier plan (14 $/h proven against 11 $/h in
/// `exact-extra-type-defect.json`, 18 $/h against 17 $/h with MinInstanceCount 1 and a
/// reserved-only slot in `exact-extra-type-reserved-defect.json`). The added type cannot help
/// here (every copy is placed and balanced as well as it can be without it), so both runs must
/// be proven at the same optimum.
#[test]
fn adding_a_type_keeps_the_optimum() {
    for (name, clear_capacity, cost) in [
        ("exact-extra-type-defect.json", false, 11.0),
        ("exact-extra-type-defect.json", true, 14.0),
        ("exact-extra-type-reserved-defect.json", false, 17.0),
    ] {
        let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut scenario = fleetplan::json::scenario_from_json(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        if clear_capacity {
            scenario.capacity.clear();
        }
        let (_, base) = solve(&variant(&scenario, false, false));
        let (_, more) = solve(&variant(&scenario, false, true));
        let what = format!("{name}, capacity cleared: {clear_capacity}");
        assert_eq!((base.status, more.status), (Status::Optimal, Status::Optimal), "{what}: {:?}", more.stop_reason);
        assert_eq!(base.objective.cost(), cost, "{what}: the optimum without the added type");
        assert_eq!(more.objective, base.objective, "{what}: the added type changed the optimum");
    }
}

/// The cases the old strategy's regression file held (`exact_props.proptest-regressions`), as
/// scenarios: many copies on one tiny type, and MinInstanceCount 1 with no capacity.
#[test]
fn exact_is_honest_and_monotone_on_former_failures() {
    for name in ["exact-monotone-1.json", "exact-monotone-2.json"] {
        let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let scenario = fleetplan::json::scenario_from_json(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        match check_honest_and_monotone(&scenario) {
            Ok(()) | Err(TestCaseError::Reject(_)) => {}
            Err(error) => panic!("{name}: {error}"),
        }
    }
}

#[test]
fn large_copy_counts_stay_within_limits_and_do_not_panic() {
    let scenario = json!({
        "AvailabilityZones": ["az-a", "az-b"],
        "InstanceTypes": [{"InstanceType": "ml.t0", "AcceleratorCount": 3, "VCpuCount": 8, "MemoryInMb": 8192, "HourlyPrice": 1}],
        "Endpoint": {"EndpointName": "e", "VariantName": "v", "InstancePools": [{"InstanceType": "ml.t0", "Priority": 1}]},
        "InferenceComponents": [
            {"InferenceComponentName": "a", "RuntimeConfig": {"CopyCount": 5000},
             "Specification": {"ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 2, "MinMemoryRequiredInMb": 1024}}},
            {"InferenceComponentName": "b", "RuntimeConfig": {"CopyCount": 5000},
             "Specification": {"ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 1, "MinMemoryRequiredInMb": 4096}}}
        ]
    });
    let problem = Problem::from_json(&scenario.to_string()).unwrap();
    let greedy = plan_greedy(&problem);
    let plan = ExactPlanner::new().time_limit(Duration::from_secs(2)).plan(&problem);
    assert_honest(&problem, &plan, &greedy, "large copy counts");
    assert_eq!(plan.objective.placed_copies, 10_000);
}
