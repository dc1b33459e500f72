//! The 25-component prefix of `fifty-models` is proven optimal under a node limit (deterministic,
//! unlike a time limit). Before the balance-integrality cut (`docs/formulation.md`) it was not
//! proven within 60 s: n₁ stayed at 27–29 reached against ≥ 26 proven.

use fleetplan::{verify, ExactPlanner, Problem, Status, StopReason};

/// `fifty-models` cut to its first `count` components (as `benches/exact.rs` builds prefixes).
fn first_components(count: usize) -> Problem {
    let path = format!("{}/scenarios/fifty-models.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut value: serde_json::Value = serde_json::from_str(&text).expect("fifty-models parses");
    if let Some(list) = value["InferenceComponents"].as_array_mut() {
        list.truncate(count);
    }
    Problem::from_json(&value.to_string()).expect("a prefix of fifty-models validates")
}

#[test]
fn twenty_five_component_prefix_is_proven_optimal_within_a_node_limit() {
    let problem = first_components(25);
    let plan = ExactPlanner::new().node_limit(2_000).plan(&problem);
    assert_eq!(plan.status, Status::Optimal, "{:?}, bound {:?}", plan.stop_reason, plan.bound);
    assert_eq!(plan.stop_reason, StopReason::Completed);
    assert!(verify(&problem, &plan).is_empty(), "{:?}", verify(&problem, &plan));
    assert_eq!(plan.objective.placed_copies, 93);
    assert_eq!(plan.objective.balance_excess, 6);
    let by_priority: Vec<(u8, u32)> = plan.objective.instances_by_priority.iter().map(|(&p, &n)| (p, n)).collect();
    assert_eq!(by_priority, vec![(1, 26), (2, 3), (3, 8), (4, 3)]);
}
