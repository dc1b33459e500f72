//! What the literature benchmark runners (`examples/bpp_run.rs`, `examples/vbp_run.rs`) share:
//! their command line, one greedy and one exact run per instance, and the counts they compare.

use std::time::{Duration, Instant};

use fleetplan::verify;
use fleetplan::{ExactPlanner, GreedyPlanner, Objective, Plan, Problem, Status};

/// `[--ms N] [FILTER...]`: the exact planner's time limit (10 s unless given) and name filters.
pub fn arguments() -> (Duration, Vec<String>) {
    let mut time_limit = Duration::from_secs(10);
    let mut filters = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--ms" {
            let Some(ms) = args.next().and_then(|value| value.parse().ok()) else {
                eprintln!("--ms needs a number of milliseconds");
                std::process::exit(2);
            };
            time_limit = Duration::from_millis(ms);
        } else {
            filters.push(arg);
        }
    }
    (time_limit, filters)
}

/// Instances (bins) of a plan's final fleet.
pub fn instance_count(objective: &Objective) -> u32 {
    objective.instances_by_priority.values().sum()
}

/// The instance count the exact run proves at least: its own when optimal, else its bound's.
pub fn bound_count(plan: &Plan) -> Option<u32> {
    if plan.status == Status::Optimal {
        return Some(instance_count(&plan.objective));
    }
    plan.bound.as_ref().filter(|bound| !bound.instances_by_priority.is_empty()).map(instance_count)
}

/// One instance planned by greedy and by the exact planner, with wall times.
pub struct Runs {
    pub greedy: Plan,
    pub greedy_seconds: f64,
    pub exact: Plan,
    pub exact_seconds: f64,
    /// A plan fails `verify` or leaves an item out.
    pub invalid: bool,
}

/// Plans `problem` (with `items` items) both ways.
pub fn run(problem: &Problem, items: u64, exact: &ExactPlanner) -> Runs {
    let started = Instant::now();
    let greedy = GreedyPlanner::new().plan(problem);
    let greedy_seconds = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let exact = exact.plan(problem);
    let exact_seconds = started.elapsed().as_secs_f64();
    let invalid = !verify(problem, &greedy).is_empty()
        || !verify(problem, &exact).is_empty()
        || greedy.objective.placed_copies != items
        || exact.objective.placed_copies != items;
    Runs { greedy, greedy_seconds, exact, exact_seconds, invalid }
}

/// The problems a run shows, as flags for its line of the table.
pub fn flags(false_optimal: bool, below_optimum: bool, bound_above_optimum: bool, invalid: bool) -> Vec<&'static str> {
    [
        (false_optimal, "FALSE-OPTIMAL"),
        (below_optimum, "BELOW-OPTIMUM"),
        (bound_above_optimum, "BOUND-ABOVE-OPTIMUM"),
        (invalid, "INVALID-OR-UNPLACED"),
    ]
    .into_iter()
    .filter_map(|(shown, flag)| shown.then_some(flag))
    .collect()
}
