//! What a rebalancing plan changes (per step and in total), how far its final fleet is from the
//! best reachable one, and the readable table the command line prints.

use std::fmt::Write as _;
use std::time::Duration;

use super::RebalancePlan;
use crate::engines::exact::ExactPlanner;
use crate::engines::steps::{write_step, Places};
use crate::fleet::{objective, FinalFleet};
use crate::plan::{Objective, Status, StopReason};
use crate::problem::Problem;
use crate::text::{counted, escape_text, micros_text};

/// What one step changes.
#[derive(Debug, Clone, PartialEq)]
pub struct StepSummary {
    /// Instances launched.
    pub launched: usize,
    /// Copies moved.
    pub moves: usize,
    /// Instances released.
    pub released: usize,
    /// Objective of the fleet before the step.
    pub before: Objective,
    /// Objective of the fleet after the step.
    pub after: Objective,
}

/// What a plan changes, per step and in total.
#[derive(Debug, Clone, PartialEq)]
pub struct RebalanceSummary {
    /// Objective of the fleet as it runs now.
    pub start: Objective,
    /// One entry per step.
    pub steps: Vec<StepSummary>,
    /// Objective of the final fleet.
    pub end: Objective,
}

/// Replays a plan step by step (see [`RebalancePlan::fleet_after`]) and records the objective
/// before and after each step.
pub fn summarize(problem: &Problem, plan: &RebalancePlan) -> RebalanceSummary {
    let start = objective(problem, &FinalFleet::apply(problem, &[]).0);
    let mut before = start.clone();
    let mut steps = Vec::with_capacity(plan.steps.len());
    for (number, step) in plan.steps.iter().enumerate() {
        let after = objective(problem, &plan.fleet_after(problem, number + 1));
        steps.push(StepSummary {
            launched: step.launch.len(),
            moves: step.moves.len(),
            released: step.release.len(),
            before: before.clone(),
            after: after.clone(),
        });
        before = after;
    }
    RebalanceSummary { start, steps, end: before }
}

/// The best final fleet for the same copies, found by the exact planner from an empty fleet.
#[derive(Debug, Clone, PartialEq)]
pub struct BestReachable {
    /// Objective of the exact planner's plan.
    pub objective: Objective,
    /// Its best proven bound: equal to `objective` when `status` is `Optimal`, `None` when
    /// nothing was proven (e.g. the problem is too large for the exact planner).
    pub bound: Option<Objective>,
    /// Status of the exact plan.
    pub status: Status,
    /// Why the exact planner stopped.
    pub stop_reason: StopReason,
}

/// The problem whose optimum bounds every rebalanced fleet: the same scenario without a fleet,
/// each component's `CopyCount` set to the copies running now, and each (type, AZ)'s capacity
/// raised by the instances of that type running there (a reserved one as a reservation slot), so
/// that every final fleet `rebalance` can reach is a feasible plan of it.
pub fn reachable_problem(problem: &Problem) -> Problem {
    problem.running_copies_without_fleet(|_| true)
}

/// Runs the exact planner on [`reachable_problem`] within `time_limit`.
pub fn best_reachable(problem: &Problem, time_limit: Duration) -> BestReachable {
    let empty = reachable_problem(problem);
    let plan = ExactPlanner::new().time_limit(time_limit).plan(&empty);
    let bound = match plan.status {
        Status::Optimal => Some(plan.objective.clone()),
        _ => plan.bound.clone(),
    };
    BestReachable { objective: plan.objective, bound, status: plan.status, stop_reason: plan.stop_reason }
}

/// `p1 +2, p3 -1; cost -12.50 per hour` (or `instances`, see [`CostUnit`](crate::CostUnit)): how `after` differs from `before`.
pub fn change_text(before: &Objective, after: &Objective) -> String {
    let mut parts: Vec<String> = Vec::new();
    for priority in 1..=6u8 {
        let delta =
            i64::from(after.instances_of_priority(priority)) - i64::from(before.instances_of_priority(priority));
        if delta != 0 {
            parts.push(format!("p{priority} {delta:+}"));
        }
    }
    let instances = if parts.is_empty() { "instances unchanged".to_string() } else { parts.join(", ") };
    let cost = after.cost_micros - before.cost_micros;
    let sign = if cost > 0 { "+" } else { "" };
    format!("{instances}; cost {sign}{} {}", micros_text(cost), after.cost_unit.suffix())
}

/// A readable rebalancing plan: totals, each step (what it changes, launches, moves, releases),
/// and, when given, the distance to the best reachable fleet. Names are escaped as in every
/// table of [`crate::render`].
pub fn rebalance_table(problem: &Problem, plan: &RebalancePlan, best: Option<&BestReachable>) -> String {
    let summary = summarize(problem, plan);
    let mut out = String::new();
    let launched = plan.launches().count();
    let released = plan.released().count();
    let endpoint = if problem.endpoint_name().is_empty() { "(unnamed)" } else { problem.endpoint_name() };
    let _ = writeln!(
        out,
        "Rebalance for endpoint {}: {}, {} launched, {}, {} released",
        escape_text(endpoint),
        counted(plan.steps.len() as u64, "step", "steps"),
        launched,
        counted(plan.move_count() as u64, "move", "moves"),
        released
    );
    if plan.stop_reason != StopReason::Completed {
        let _ = writeln!(out, "Stop: {}", plan.stop_reason);
    }
    let _ = writeln!(out, "Before: {}", summary.start);
    let _ = writeln!(out, "After:  {}", summary.end);
    let _ = writeln!(out, "Change: {}", change_text(&summary.start, &summary.end));
    if let Some(target) = &plan.target_objective {
        // How far the plan stays from the fleet it headed for (nothing when it got there).
        let reached = plan.reached_objective.as_ref().unwrap_or(&summary.end);
        let _ = writeln!(out, "Target: {}", target);
        if target.key() == reached.key() {
            let _ = writeln!(out, "Target reached.");
        } else {
            let _ = writeln!(out, "Distance to the target: {}", change_text(target, reached));
        }
    }
    if plan.steps.is_empty() {
        out.push_str("\nNothing to rebalance.\n");
    }

    let places = Places::new(problem, plan.launches());
    for (number, (step, change)) in plan.steps.iter().zip(&summary.steps).enumerate() {
        let _ = writeln!(
            out,
            "\nStep {} ({} launched, {}, {} released): {}",
            number + 1,
            change.launched,
            counted(change.moves as u64, "move", "moves"),
            change.released,
            change_text(&change.before, &change.after)
        );
        write_step(&mut out, &places, step);
    }

    if let Some(best) = best {
        let _ = writeln!(
            out,
            "\nBest reachable (exact planner, same copies, empty fleet; {:?}, {}): {}",
            best.status, best.stop_reason, best.objective
        );
        match &best.bound {
            Some(bound) => {
                if bound != &best.objective {
                    let _ = writeln!(out, "Proven bound: {}", bound);
                }
                let _ = writeln!(out, "Distance to the bound: {}", change_text(bound, &summary.end));
            }
            None => {
                let _ = writeln!(
                    out,
                    "No proven bound; distance to the exact planner's plan: {}",
                    change_text(&best.objective, &summary.end)
                );
            }
        }
    }
    out
}
