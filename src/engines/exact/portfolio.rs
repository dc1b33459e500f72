//! A portfolio of backends: the same planner with a second backend on a second thread, the
//! better verified plan kept.
//!
//! No backend dominates: on the hard sweep set CBC proves endpoints microlp cannot reach within
//! the limit, while on one large endpoint CBC ends at balance excess 58 where microlp finds 3.
//! Running both under the same limits and keeping the better verified plan takes the best of
//! each for the price of a second core.

use std::thread;

use super::ExactPlanner;
use crate::engines::limits::Stats;
use crate::plan::{Plan, Status};
use crate::problem::Problem;
use crate::verify::verify;

impl ExactPlanner {
    /// The portfolio run when a second backend is set: the planner with its own backend on the
    /// caller's thread and with the second backend on a scoped thread, under the same limits (and
    /// cancellation check); `None` when no second backend is set.
    pub(super) fn plan_by_portfolio(&self, problem: &Problem) -> Option<(Plan, Stats)> {
        let beside = self.beside.clone()?;
        // One thread each: the portfolio is the call's second thread.
        let main = ExactPlanner { beside: None, threads: Some(1), ..self.clone() };
        let second = ExactPlanner { beside: None, backend: beside, threads: Some(1), ..self.clone() };
        let (main_run, second_run) = thread::scope(|scope| {
            let handle = scope.spawn(|| second.plan_with_stats(problem));
            let main_run = main.plan_with_stats(problem);
            // A panic in the second backend's run loses only its plan.
            (main_run, handle.join().ok())
        });
        Some(match second_run {
            Some(second_run) => better_of(problem, main_run, second_run),
            None => main_run,
        })
    }
}

/// The better of two runs' plans on the same problem (a plan failing `verify` never wins; ties go
/// to a proof, then to the first run), with both runs' counts in the stats.
fn better_of(problem: &Problem, first: (Plan, Stats), second: (Plan, Stats)) -> (Plan, Stats) {
    let ((first_plan, mut stats), (second_plan, second_stats)) = (first, second);
    stats.absorb_labelled("second backend", second_stats);
    let second_wins = verify(problem, &second_plan).is_empty()
        && (!verify(problem, &first_plan).is_empty()
            || second_plan.objective.better_than(&first_plan.objective)
            || (second_plan.objective.key() == first_plan.objective.key()
                && second_plan.status == Status::Optimal
                && first_plan.status != Status::Optimal));
    (if second_wins { second_plan } else { first_plan }, stats)
}
