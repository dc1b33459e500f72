//! Node-limited runs that deepen: a larger node limit never gives a worse plan; and the same
//! idea under a deadline (the time ladder, [`ExactPlanner::time_ladder`]).
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

use std::time::{Duration, Instant};

use super::{master, ExactPlanner};
use crate::engines::limits::{Limits, Stats};
use crate::plan::{Plan, Status, StopReason};
use crate::problem::Problem;

/// The time ladder's first stage ends this long after the start. One second: the limit a
/// control loop typically plans under, so a run with a longer limit first does exactly what a
/// 1 s run does and is never worse than it (up to the machine's timing).
const FIRST_STAGE: Duration = Duration::from_secs(1);

/// The second stage ends this long after the start: [`FIRST_STAGE`] times ten. A restarted
/// stage loses its search tree, and the balance and instance levels of large inputs need long
/// uninterrupted searches (stages of 1 s, 2 s, 4 s, 8 s lost two 10 s plans to single runs on
/// seed 24, docs/sweep.md); at the command line's default of 10 s the ladder is the 1 s run,
/// then one run to the end from its plan.
const SECOND_STAGE: Duration = Duration::from_secs(10);

/// How much longer each stage after [`SECOND_STAGE`] is than the one before (ending 20 s, 40 s,
/// 80 s, … after the start). A stage's large-neighbourhood phase runs in its second half, so
/// the stage the deadline cuts loses it: with a growth of ten (100 s) a 40 s limit spent its
/// last 30 s in the search alone, which seldom improves a seeded plan (docs/sweep.md, session
/// of 2026-12-07, fourth); doubling leaves every stage but the cut one its phase and polish.
const LATER_STAGE_GROWTH: u32 = 2;

/// A stage ending within this much after the caller's deadline ends at the deadline.
const SNAP: Duration = Duration::from_millis(100);

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
            stats.absorb(run_stats);
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

impl ExactPlanner {
    /// The staged run under a deadline when the time ladder is on (and no node limit is set):
    /// first the planner's single run under a deadline [`FIRST_STAGE`] after the start, exactly
    /// what a run with that limit does; then stages ending [`SECOND_STAGE`] (10 s), then 20 s,
    /// 40 s, … ([`LATER_STAGE_GROWTH`]) after the start, each seeded with the best plan so far
    /// (no quick attempt, no greedy warm start) and planning as if its whole stage were left. The
    /// caller's deadline reaches a stage as a cancellation check, so a stage cut short has
    /// followed the same schedule as the same stage of a longer run up to the cut. `None` runs
    /// the planner once: the ladder is off, a node limit is set, or the deadline is within the
    /// first stage.
    pub(super) fn plan_by_time_ladder(&self, problem: &Problem) -> Option<(Plan, Stats)> {
        let limits = self.effective_limits();
        let cut = limits.deadline_at()?;
        let started = Instant::now();
        let first_end = started.checked_add(FIRST_STAGE)?;
        if !self.time_ladder || limits.nodes().is_some() || cut <= first_end {
            return None;
        }
        let mut stats = Stats::default();
        let mut best: Option<Plan> = None;
        let mut stage_length = FIRST_STAGE;
        loop {
            let mut stage_end = started.checked_add(stage_length).unwrap_or(cut);
            if stage_end >= cut && stage_end.duration_since(cut) < SNAP {
                // The caller's deadline counts from its own start (a command's, say), a little
                // before this call's: a stage that would end just after it ends at it, so that
                // its last phases run instead of being cut.
                stage_end = cut;
            }
            let outer = limits.clone();
            let stage_limits =
                Limits::new().deadline(stage_end).cancel_when(move || outer.cancelled() || Instant::now() >= cut);
            let run = match &best {
                // The first stage is the single run a caller with this stage's limit gets.
                None => ExactPlanner { limits: stage_limits, time_ladder: false, ..self.clone() },
                // Later stages start from the best plan so far, which is at least greedy's.
                Some(plan) => ExactPlanner {
                    limits: stage_limits,
                    time_ladder: false,
                    quick_slice: Duration::ZERO,
                    seed_replaces_warm_start: true,
                    seed: Some(plan.actions.clone()),
                    ..self.clone()
                },
            };
            let (mut plan, run_stats) = run.plan_with_stats(problem);
            stats.absorb(run_stats);
            let cancelled = limits.cancelled();
            // The cut is the caller's deadline, not a cancellation.
            if plan.stop_reason == StopReason::Cancelled && !cancelled {
                plan.stop_reason = StopReason::TimeLimit;
            }
            // A proof ends the ladder, and so does a stage that stopped for no limit: a longer
            // stage would repeat it.
            let done = plan.status != Status::Feasible
                || plan.stop_reason == StopReason::Completed
                || cancelled
                || Instant::now() >= cut;
            best = match best {
                Some(previous) if previous.objective.better_than(&plan.objective) => Some(previous),
                _ => Some(plan),
            };
            if done {
                break;
            }
            stage_length = next_stage_length(stage_length);
        }
        if let Some(plan) = best.as_mut().filter(|plan| plan.stop_reason == StopReason::TimeLimit) {
            // An earlier stage's plan may be kept; the run itself ended by the caller's stop.
            if limits.cancelled() {
                plan.stop_reason = StopReason::Cancelled;
            }
        }
        best.map(|plan| (plan, stats))
    }
}

/// How long after the start the stage after one ending `stage_length` after it ends: the
/// second stage at [`SECOND_STAGE`], every later one [`LATER_STAGE_GROWTH`] times as late.
fn next_stage_length(stage_length: Duration) -> Duration {
    if stage_length < SECOND_STAGE {
        SECOND_STAGE
    } else {
        stage_length.saturating_mul(LATER_STAGE_GROWTH)
    }
}

/// 1, 2, 4, … up to the largest power of two not above `nodes` (at least 1).
fn node_ladder(nodes: u64) -> impl Iterator<Item = u64> {
    let top = if nodes <= 1 { 1 } else { 1u64 << (63 - nodes.leading_zeros()) };
    std::iter::successors(Some(1u64), move |&rung| rung.checked_mul(2).filter(|&next| next <= top))
}

#[cfg(test)]
mod tests {
    use super::{next_stage_length, node_ladder, FIRST_STAGE};
    use std::time::Duration;

    #[test]
    fn the_time_ladder_ends_stages_at_1_10_20_40_seconds() {
        let ends: Vec<u64> = std::iter::successors(Some(FIRST_STAGE), |&end| Some(next_stage_length(end)))
            .take(5)
            .map(|end| end.as_secs())
            .collect();
        assert_eq!(ends, vec![1, 10, 20, 40, 80]);
        // No overflow at the far end: a stage length saturates.
        assert_eq!(next_stage_length(Duration::MAX), Duration::MAX);
    }

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
