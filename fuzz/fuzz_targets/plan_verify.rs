//! Bytes → scenario; when valid and small: greedy plan → `verify` finds nothing, the plan is
//! deterministic, survives a JSON round trip, and renders.
#![no_main]

use fleetplan::{plan_greedy, plan_table, violations_table, verify, Plan, Problem, Status, ViolationKind};
use libfuzzer_sys::fuzz_target;

/// Keeps each run fast, so the fuzzer explores shapes rather than sizes.
fn small(problem: &Problem) -> bool {
    let copies: u64 = problem.components().iter().map(|component| u64::from(component.copy_count)).sum();
    copies <= 256
        && problem.components().len() <= 16
        && problem.instance_types().len() * problem.azs().len() <= 64
        && problem.fleet().len() <= 64
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(problem) = Problem::from_json(text) else { return };
    if !small(&problem) {
        return;
    }
    let plan = plan_greedy(&problem);
    let violations: Vec<_> = verify(&problem, &plan)
        .into_iter()
        // An Infeasible plan may break instance bounds (e.g. MinInstanceCount out of reach),
        // and says so; nothing else.
        .filter(|violation| !(plan.status == Status::Infeasible && violation.kind == ViolationKind::InstanceBounds))
        .collect();
    if !violations.is_empty() {
        panic!("greedy plan breaks the rules:\n{}\nplan: {}", violations_table(&violations), plan.to_json());
    }
    assert_eq!(plan, plan_greedy(&problem), "greedy is not deterministic");
    let reread: Plan = match serde_json::from_str(&plan.to_json()) {
        Ok(reread) => reread,
        Err(error) => panic!("plan JSON does not read back: {error}"),
    };
    assert_eq!(reread, plan, "plan JSON round trip changes the plan");
    let _ = plan_table(&problem, &plan);
});
