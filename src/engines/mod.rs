//! Planning engines: the greedy fast path, the exact integer program, consolidation and
//! rebalancing.
//!
//! Every engine implements the one contract, [`contract::Engine`].
//!
//! The placement planners return actions; `finish` turns them into a [`Plan`] with the objective and
//! `Unplaced` computed by the shared definitions, so no engine reports its own numbers.

pub(crate) mod balance;
pub mod consolidate;
pub mod contract;
pub mod exact;
pub mod greedy;
pub(crate) mod knapsack;
pub mod limits;
pub(crate) mod polish;
pub mod rebalance;
pub(crate) mod spread;
pub(crate) mod steps;

use std::borrow::Cow;
use std::collections::BTreeSet;

use crate::fleet::{objective, FinalFleet};
use crate::plan::{action_rank, Action, Objective, Plan, SolverKind, Status, StopReason};
use crate::problem::Problem;

/// Ids for launched instances: `new-1`, `new-2`, … counting up, skipping every id an instance of
/// the problem's fleet already carries (a fleet observed after an earlier plan keeps its `new-N`
/// ids), so a launch never takes the id of an instance in the fleet.
#[derive(Debug, Clone)]
pub(crate) struct LaunchIds {
    /// Fleet ids of the `new-N` form (the only ones a generated id can equal).
    taken: BTreeSet<String>,
    /// The number the next candidate id carries.
    next: u64,
}

impl LaunchIds {
    /// Ids for launches into `problem`'s fleet, starting at `new-1`.
    pub(crate) fn new(problem: &Problem) -> LaunchIds {
        let taken =
            problem.fleet().iter().map(|instance| instance.id.clone()).filter(|id| id.starts_with("new-")).collect();
        LaunchIds { taken, next: 1 }
    }

    /// The next id not used by the fleet.
    pub(crate) fn next_id(&mut self) -> String {
        loop {
            let candidate = format!("new-{}", self.next);
            self.next += 1;
            if !self.taken.contains(&candidate) {
                return candidate;
            }
        }
    }
}

/// Runs a planner on `problem` in canonical order ([`Problem::canonical`]: names, not input
/// positions, decide every tie, so permuting the input does not change the plan) and returns its
/// plan as a plan of `problem` itself: the actions name everything, and the plan is finished
/// again on `problem`, so `Unplaced` lists its components in the input's order.
pub(crate) fn in_canonical_order<S>(problem: &Problem, run: impl FnOnce(&Problem) -> (Plan, S)) -> (Plan, S) {
    match problem.canonical() {
        Cow::Borrowed(problem) => run(problem),
        Cow::Owned(canonical) => {
            let (plan, stats) = run(&canonical);
            let plan = finish(problem, plan.solver, plan.status, plan.stop_reason, plan.actions, plan.bound);
            (plan, stats)
        }
    }
}

/// Runs an engine whose result names instances, components, types and AZs (never positions) on
/// `problem` in canonical order ([`Problem::canonical`]), so that the order of the input does not
/// steer it: its result is a result for `problem` itself.
pub(crate) fn on_canonical<T>(problem: &Problem, run: impl FnOnce(&Problem) -> T) -> T {
    run(problem.canonical().as_ref())
}

/// Builds a plan from an engine's actions: canonical action order, objective and `Unplaced`
/// from the shared definitions, validation warnings attached.
pub(crate) fn finish(
    problem: &Problem,
    solver: SolverKind,
    status: Status,
    stop_reason: StopReason,
    mut actions: Vec<Action>,
    bound: Option<Objective>,
) -> Plan {
    // Stable: launches, removals, placements, terminations (contract §4.1); an engine's order
    // within a kind stays. Removals free room before any copy is placed, so executing the list in
    // order never overbooks an instance.
    actions.sort_by_key(action_rank);
    let (fleet, _) = FinalFleet::apply(problem, &actions);
    let objective = objective(problem, &fleet);
    let unplaced = crate::explain::unplaced(problem, &fleet);
    let mut bound = bound;
    if let Some(bound) = bound.as_mut().filter(|bound| bound.cost_micros == 0) {
        // A bound that never reached L4 says cost ≥ 0, true in either unit: state it in the plan's.
        bound.cost_unit = objective.cost_unit;
    }
    Plan {
        solver,
        status,
        stop_reason,
        actions,
        unplaced,
        objective,
        bound,
        warnings: problem.warnings.clone(),
        omitted: Default::default(),
    }
}
