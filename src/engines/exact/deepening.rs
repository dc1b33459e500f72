//! Node-limited runs that deepen: a larger node limit never gives a worse plan.
//!
//! A node limit bounds each solver call, so two limits take different search paths and a
//! larger one can end worse. Without a deadline, a run under a node limit of `n` therefore runs
//! the planner under 1, 2, 4, … nodes up to the largest power of two not above `n`, each run
//! starting from the best plan of the one before (the planner's seed, which its result is never
//! worse than). The runs of a smaller limit are a prefix of a larger limit's, so the larger
//! limit's plan is never worse, by construction. The node budget of the last run is at most `n`
//! (the limit stays an upper bound per solver call), and the runs together spend at most about
//! twice the last one's nodes. Each run has its own warm start and large-neighbourhood phase
//! (up to 16 windows without a deadline), so those are repeated once per rung. Inputs whose master
//! is over the size cap (`TooLarge`, no search) run once, without this guarantee.

use super::{master, ExactPlanner};
use crate::engines::limits::Stats;
use crate::plan::{Plan, Status};
use crate::problem::Problem;

impl ExactPlanner {
    /// The deepening run when it applies (a node limit, no deadline, not a run of a deepening
    /// or a large-neighbourhood window); `None` runs the planner once.
    pub(super) fn plan_by_deepening(&self, problem: &Problem) -> Option<(Plan, Stats)> {
        let limits = self.effective_limits();
        let nodes = limits.nodes()?;
        if !self.deepening || limits.deadline_at().is_some() || nodes < 2 {
            return None;
        }
        // A master over the size cap is never searched (`TooLarge`): no run would depend on the
        // node limit but the large-neighbourhood phase, which each run would repeat.
        let facts = master::Facts::new(problem, self.backend.as_ref());
        if master::master_size_estimate(&facts) > self.max_master_variables {
            return None;
        }
        let mut stats = Stats::default();
        let mut best: Option<Plan> = None;
        for rung in node_ladder(nodes) {
            let run = ExactPlanner {
                limits: self.limits.clone().node_limit(rung),
                deepening: false,
                seed: best.as_ref().map(|plan| plan.actions.clone()).or_else(|| self.seed.clone()),
                ..self.clone()
            };
            let (plan, run_stats) = run.plan_with_stats(problem);
            add_stats(&mut stats, run_stats);
            // A proof (of optimality or infeasibility) is final; so is a stop by cancellation.
            let done = plan.status != Status::Feasible || limits.stop_now().is_some();
            // The later run wins ties: its stop reason and bound are the run's.
            best = match best {
                Some(previous) if previous.objective.better_than(&plan.objective) => Some(previous),
                _ => Some(plan),
            };
            if done {
                break;
            }
        }
        best.map(|plan| (plan, stats))
    }
}

/// 1, 2, 4, … up to the largest power of two not above `nodes` (at least 1).
fn node_ladder(nodes: u64) -> impl Iterator<Item = u64> {
    let top = if nodes <= 1 { 1 } else { 1u64 << (63 - nodes.leading_zeros()) };
    std::iter::successors(Some(1u64), move |&rung| rung.checked_mul(2).filter(|&next| next <= top))
}

/// `into` plus what `run` did.
fn add_stats(into: &mut Stats, run: Stats) {
    into.solves += run.solves;
    into.nodes += run.nodes;
    into.rounds += run.rounds;
    into.neighbourhoods += run.neighbourhoods;
    into.improvements += run.improvements;
    into.phases.extend(run.phases);
}

#[cfg(test)]
mod tests {
    use super::node_ladder;

    #[test]
    fn the_ladder_doubles_up_to_the_largest_power_of_two_within_the_limit() {
        assert_eq!(node_ladder(1).collect::<Vec<_>>(), vec![1]);
        assert_eq!(node_ladder(2).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(node_ladder(10).collect::<Vec<_>>(), vec![1, 2, 4, 8]);
        assert_eq!(node_ladder(16).collect::<Vec<_>>(), vec![1, 2, 4, 8, 16]);
        assert_eq!(node_ladder(u64::MAX).last(), Some(1u64 << 63));
        // The ladder of a smaller limit is a prefix of a larger one's: what makes the result
        // monotone.
        for (small, large) in [(3u64, 4u64), (10, 100), (100, 1_000), (1_000, 2_000)] {
            let shorter: Vec<u64> = node_ladder(small).collect();
            assert!(node_ladder(large).collect::<Vec<_>>().starts_with(&shorter));
        }
    }
}
