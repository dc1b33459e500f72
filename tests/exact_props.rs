//! Properties of the exact planner: never worse than greedy, monotone in capacity and instance
//! types, honest under limits, and the bundled scenarios' optima (snapshot-tested).

use std::time::Duration;

use fleetplan::{plan_greedy, verify, ExactPlanner, Plan, Problem, Status};
use proptest::prelude::*;
use serde_json::{json, Value};

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

/// A small random scenario (up to 3 AZs, 3 types, 4 components), with knobs for the
/// monotonicity properties: `extra_capacity` lifts one capacity entry, `extra_type` adds a type.
fn scenario(seed: &Seed, extra_capacity: bool, extra_type: bool) -> Value {
    let azs: Vec<String> = ["az-a", "az-b", "az-c"][..seed.zones].iter().map(|s| s.to_string()).collect();
    let mut types: Vec<Value> = seed
        .types
        .iter()
        .enumerate()
        .map(|(t, &(acc, cpu, mem, price, _))| json!({"InstanceType": format!("ml.t{t}"), "AcceleratorCount": acc, "VCpuCount": cpu, "MemoryInMb": mem, "HourlyPrice": price}))
        .collect();
    let mut pools: Vec<Value> = seed
        .types
        .iter()
        .enumerate()
        .map(|(t, &(.., priority))| json!({"InstanceType": format!("ml.t{t}"), "Priority": priority}))
        .collect();
    if extra_type {
        types.push(json!({"InstanceType": "ml.extra", "AcceleratorCount": 8, "VCpuCount": 8, "MemoryInMb": 16384, "HourlyPrice": 9}));
        pools.push(json!({"InstanceType": "ml.extra", "Priority": 3}));
    }
    let mut capacity = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (index, &(available, reserved)) in seed.capacity.iter().enumerate() {
        let t = index % seed.types.len();
        let z = (index / seed.types.len()) % seed.zones;
        if !seen.insert((t, z)) {
            continue;
        }
        let (available, reserved) =
            if extra_capacity && index == 0 { (available.map(|a| a + 1), reserved + 1) } else { (available, reserved) };
        capacity.push(json!({"InstanceType": format!("ml.t{t}"), "AvailabilityZone": azs[z], "Available": available, "Reserved": reserved}));
    }
    let components: Vec<Value> = seed
        .components
        .iter()
        .enumerate()
        .map(|(c, &(copies, acc, mem, balance))| {
            let mut scheduling = json!({"PlacementStrategy": "SPREAD"});
            if let Some(limit) = balance {
                scheduling["AvailabilityZoneBalance"] = json!({"MaxImbalance": limit});
            }
            json!({"InferenceComponentName": format!("ic{c}"), "RuntimeConfig": {"CopyCount": copies},
                   "Specification": {"ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": acc, "NumberOfCpuCoresRequired": 1, "MinMemoryRequiredInMb": mem},
                                     "SchedulingConfig": scheduling}})
        })
        .collect();
    json!({
        "AvailabilityZones": azs,
        "InstanceTypes": types,
        "Capacity": capacity,
        "Endpoint": {"EndpointName": "e", "VariantName": "v", "InstancePools": pools,
                     "ManagedInstanceScaling": {"MinInstanceCount": seed.min, "MaxInstanceCount": 12}},
        "InferenceComponents": components,
    })
}

#[derive(Debug, Clone)]
struct Seed {
    zones: usize,
    types: Vec<(u32, u32, u32, u32, u32)>,
    capacity: Vec<(Option<u32>, u32)>,
    components: Vec<(u32, u32, u32, Option<u32>)>,
    min: u32,
}

fn seeds() -> impl Strategy<Value = Seed> {
    (
        1usize..=3,
        prop::collection::vec(
            (1u32..=4, 2u32..=8, prop::sample::select(vec![4096u32, 8192]), 1u32..=5, 1u32..=3),
            1..=3,
        ),
        prop::collection::vec((prop::option::weighted(0.7, 0u32..=2), 0u32..=1), 0..=3),
        prop::collection::vec(
            (0u32..=4, 0u32..=2, prop::sample::select(vec![1024u32, 2048, 3072]), prop::option::of(0u32..=1)),
            1..=4,
        ),
        0u32..=2,
    )
        .prop_map(|(zones, types, capacity, components, min)| Seed { zones, types, capacity, components, min })
}

/// Solves with a node limit, not a time limit: the outcome must not depend on machine load.
fn solve(value: &Value) -> (Problem, Plan) {
    let problem = Problem::from_json(&value.to_string()).unwrap();
    let plan = ExactPlanner::new().node_limit(50_000).plan(&problem);
    (problem, plan)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn exact_is_honest_and_monotone(seed in seeds()) {
        let (problem, base) = solve(&scenario(&seed, false, false));
        let greedy = plan_greedy(&problem);
        if base.status == Status::Infeasible {
            // E.g. MinInstanceCount with no capacity; more capacity may make it feasible.
            return Ok(());
        }
        assert_honest(&problem, &base, &greedy, "base");
        // Monotonicity is a statement about optima: compare only proven ones (a node-limited run
        // that could not prove is still checked for honesty above).
        if base.status != Status::Optimal {
            return Ok(());
        }
        for (extra_capacity, extra_type) in [(true, false), (false, true)] {
            let (more_problem, more) = solve(&scenario(&seed, extra_capacity, extra_type));
            assert_honest(&more_problem, &more, &plan_greedy(&more_problem), "more");
            if more.status != Status::Optimal {
                continue;
            }
            prop_assert!(more.objective.key() <= base.objective.key(),
                "capacity {} type {}: {:?} worse than {:?}", extra_capacity, extra_type, more.objective, base.objective);
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
