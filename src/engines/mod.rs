//! Planning engines: the greedy fast path, the exact integer program, consolidation and
//! rebalancing.
//!
//! Every engine returns actions; `finish` turns them into a [`Plan`] with the objective and
//! `Unplaced` computed by the shared definitions, so no engine reports its own numbers.

pub mod consolidate;
pub mod exact;
pub mod greedy;
pub mod limits;
pub mod rebalance;
pub(crate) mod spread;
pub(crate) mod step_check;

use crate::fleet::{objective, FinalFleet};
use crate::plan::{Action, Objective, Plan, SolverKind, Status, StopReason};
use crate::problem::Problem;

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
    // Stable: launches, placements, removals, terminations; an engine's order within a kind stays.
    actions.sort_by_key(|action| match action {
        Action::LaunchInstance { .. } => 0,
        Action::PlaceCopy { .. } => 1,
        Action::RemoveCopy { .. } => 2,
        Action::TerminateInstance { .. } => 3,
    });
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
