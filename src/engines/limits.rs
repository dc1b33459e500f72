//! The one engine shape: [`Limits`] every engine takes, [`Stats`] every engine reports.
//!
//! Every engine (greedy, exact, consolidate, rebalance) is configured the same way — a builder
//! with `.limits(...)` — and says why it stopped with the one public
//! [`StopReason`]. A stopped engine still returns a valid plan: the best it
//! had, or its fast fallback.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::plan::StopReason;

/// How a caller asks an engine to stop early.
#[derive(Clone)]
enum Cancel {
    /// Stop once the flag is set (e.g. by another thread).
    Flag(Arc<AtomicBool>),
    /// Stop once the check returns true.
    Check(Arc<dyn Fn() -> bool + Send + Sync>),
}

/// Limits an engine honours: a wall-clock deadline, a node/iteration limit and a cancellation
/// check the caller supplies. The default is no limit at all.
///
/// The deadline covers everything an engine does, its warm starts and verification included.
/// A limit stops the search, never the correctness checks of the plan returned: the engine
/// returns the best verified plan it has (at worst its greedy fallback) and the
/// [`StopReason`] says which limit stopped it.
///
/// ```
/// use std::sync::{atomic::AtomicBool, Arc};
/// use std::time::Duration;
/// use fleetplan::{ExactPlanner, Limits};
///
/// let cancelled = Arc::new(AtomicBool::new(false));
/// let limits = Limits::new().time_limit(Duration::from_millis(500)).node_limit(10_000).cancel_flag(cancelled.clone());
/// let planner = ExactPlanner::new().limits(limits);
/// # let _ = planner;
/// ```
#[derive(Clone, Default)]
pub struct Limits {
    deadline: Option<Instant>,
    node_limit: Option<u64>,
    cancel: Option<Cancel>,
}

impl fmt::Debug for Limits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Limits")
            .field("deadline", &self.deadline)
            .field("node_limit", &self.node_limit)
            .field("cancel", &self.cancel.as_ref().map(|_| "set"))
            .finish()
    }
}

impl Limits {
    /// No limits.
    pub fn new() -> Self {
        Limits::default()
    }

    /// Stops at this instant (the earlier of this and any deadline already set).
    pub fn deadline(mut self, at: Instant) -> Self {
        self.deadline = Some(self.deadline.map_or(at, |current| current.min(at)));
        self
    }

    /// Stops `limit` after now. This reads the clock once; it is the only clock use the library
    /// makes, and only when asked to.
    pub fn time_limit(self, limit: Duration) -> Self {
        match Instant::now().checked_add(limit) {
            Some(at) => self.deadline(at),
            // Further away than the clock can say: no deadline at all.
            None => self,
        }
    }

    /// Stops after this many search nodes (branch-and-bound nodes of one solver call for the
    /// exact planner, search states for consolidation, passes for greedy). Deterministic, unlike
    /// the deadline.
    pub fn node_limit(mut self, nodes: u64) -> Self {
        self.node_limit = Some(nodes);
        self
    }

    /// Stops once `flag` is set (checked between solver calls, passes and search nodes).
    pub fn cancel_flag(mut self, flag: Arc<AtomicBool>) -> Self {
        self.cancel = Some(Cancel::Flag(flag));
        self
    }

    /// Stops once `check` returns true (checked between solver calls, passes and search nodes).
    pub fn cancel_when(mut self, check: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        self.cancel = Some(Cancel::Check(Arc::new(check)));
        self
    }

    /// The same deadline and cancellation without the node limit (for work whose own steps are
    /// not search nodes, e.g. the exact planner's greedy warm start).
    pub(crate) fn without_node_limit(&self) -> Limits {
        Limits { deadline: self.deadline, node_limit: None, cancel: self.cancel.clone() }
    }

    /// The deadline, if any.
    pub fn deadline_at(&self) -> Option<Instant> {
        self.deadline
    }

    /// The node limit, if any.
    pub fn nodes(&self) -> Option<u64> {
        self.node_limit
    }

    /// Whether the caller asked to stop.
    pub fn cancelled(&self) -> bool {
        match &self.cancel {
            Some(Cancel::Flag(flag)) => flag.load(Ordering::Relaxed),
            Some(Cancel::Check(check)) => check(),
            None => false,
        }
    }

    /// Whether the deadline has passed.
    pub fn expired(&self) -> bool {
        self.deadline.is_some_and(|deadline| Instant::now() >= deadline)
    }

    /// The reason to stop now, if any: [`StopReason::Cancelled`] before
    /// [`StopReason::TimeLimit`].
    pub fn stop_now(&self) -> Option<StopReason> {
        if self.cancelled() {
            Some(StopReason::Cancelled)
        } else if self.expired() {
            Some(StopReason::TimeLimit)
        } else {
            None
        }
    }

    /// Time left before the deadline (`None` = no deadline).
    pub fn time_left(&self) -> Option<Duration> {
        self.deadline.map(|deadline| deadline.saturating_duration_since(Instant::now()))
    }
}

/// What an engine did: solver calls, search nodes, rounds, and wall time per phase.
///
/// Statistics are for people and benchmarks; they are kept out of [`Plan`](crate::Plan) so that
/// plans stay byte-for-byte deterministic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Solver calls (exact planner) or greedy passes.
    pub solves: u64,
    /// Branch-and-bound nodes (exact) or search states (consolidation, rebalance).
    pub nodes: u64,
    /// Refinement rounds (exact) or steps planned (consolidation, rebalance).
    pub rounds: u64,
    /// Windows the exact planner's large-neighbourhood phase re-solved.
    pub neighbourhoods: u64,
    /// Of those, the windows whose re-solved plan was kept (each strictly better).
    pub improvements: u64,
    /// Wall time per phase, in the order the phases ran.
    pub phases: Vec<Phase>,
}

/// Wall time one phase of an engine took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Phase {
    /// The phase, e.g. `"warm start"`, `"L3 priority 1"`, `"verify"`.
    pub name: String,
    /// Wall time spent in it.
    pub elapsed: Duration,
}

impl Stats {
    /// Records that `name` took the time since `started`.
    pub(crate) fn phase(&mut self, name: impl Into<String>, started: Instant) {
        self.phases.push(Phase { name: name.into(), elapsed: started.elapsed() });
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "solves {}, nodes {}, rounds {}", self.solves, self.nodes, self.rounds)?;
        if self.neighbourhoods > 0 {
            writeln!(f, "neighbourhoods {}, improvements {}", self.neighbourhoods, self.improvements)?;
        }
        for phase in &self.phases {
            writeln!(f, "  {:<28} {:>10.3} ms", phase.name, phase.elapsed.as_secs_f64() * 1e3)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_limits_never_stop() {
        assert_eq!(Limits::new().stop_now(), None);
        assert_eq!(Limits::new().time_left(), None);
    }

    #[test]
    fn an_expired_deadline_stops_and_the_earlier_deadline_wins() {
        let now = Instant::now();
        let limits = Limits::new().deadline(now + Duration::from_secs(3600)).deadline(now);
        assert_eq!(limits.deadline_at(), Some(now));
        assert_eq!(limits.stop_now(), Some(StopReason::TimeLimit));
    }

    #[test]
    fn cancellation_wins_over_the_deadline() {
        let flag = Arc::new(AtomicBool::new(false));
        let limits = Limits::new().deadline(Instant::now()).cancel_flag(flag.clone());
        assert_eq!(limits.stop_now(), Some(StopReason::TimeLimit));
        flag.store(true, Ordering::Relaxed);
        assert_eq!(limits.stop_now(), Some(StopReason::Cancelled));
        assert_eq!(Limits::new().cancel_when(|| true).stop_now(), Some(StopReason::Cancelled));
    }

    #[test]
    fn a_huge_time_limit_is_no_deadline() {
        assert_eq!(Limits::new().time_limit(Duration::MAX).deadline_at(), None);
    }
}
