//! Bytes → scenario; when valid and small: `rebalance` (without its self-check) → the plan
//! passes `verify_rebalance`, copies and balance excess are kept, the plan is deterministic,
//! survives a JSON round trip, and renders.
#![no_main]

use fleetplan::rebalance_table;
use fleetplan::{violations_table, verify_rebalance, FinalFleet, Problem, RebalancePlan, Rebalancer};
use libfuzzer_sys::fuzz_target;

/// Keeps each run fast, so the fuzzer explores shapes rather than sizes.
fn small(problem: &Problem) -> bool {
    let copies: u64 = problem.existing_copies_per_component().iter().sum();
    copies <= 256
        && problem.components().len() <= 16
        && problem.instance_types().len() * problem.azs().len() <= 64
        // The rebalance target is planned by the exact planner (512 nodes a call, deepening):
        // on `fragmented-fleet` (26 instances) that took 33 s a plan in this instrumented build,
        // two plans per input, so the ten-second smoke run spent a minute on one seed.
        && problem.fleet().len() <= 24
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(problem) = Problem::from_json(text) else { return };
    if !small(&problem) {
        return;
    }
    // The raw plan: the self-check would hide a broken one behind an empty plan.
    let rebalancer = Rebalancer::new().self_check(false);
    let plan = rebalancer.plan(&problem);
    let violations = verify_rebalance(&problem, &plan);
    if !violations.is_empty() {
        panic!("rebalance plan breaks the rules:\n{}\nplan: {}", violations_table(&violations), plan.to_json());
    }
    let start = fleetplan::objective(&problem, &FinalFleet::apply(&problem, &[]).0);
    assert_eq!(plan.objective.placed_copies, start.placed_copies, "copies changed");
    assert!(plan.objective.balance_excess <= start.balance_excess, "balance excess grew");
    assert_eq!(plan, rebalancer.plan(&problem), "rebalance is not deterministic");
    let reread: RebalancePlan = match serde_json::from_str(&plan.to_json()) {
        Ok(reread) => reread,
        Err(error) => panic!("rebalance JSON does not read back: {error}"),
    };
    assert_eq!(reread, plan, "rebalance JSON round trip changes the plan");
    let _ = rebalance_table(&problem, &plan, None);
});
