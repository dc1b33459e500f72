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

use serde::{Deserialize, Serialize};

/// How a caller asks an engine to stop early.
#[derive(Clone)]
enum Cancel {
    /// Stop once the flag is set (e.g. by another thread).
    Flag(Arc<AtomicBool>),
    /// Stop once the check returns true.
    Check(Arc<dyn Fn() -> bool + Send + Sync>),
}

/// Limits an engine honours: a time limit, a node limit and a cancellation check the caller
/// supplies, with one meaning on every engine.
///
/// - **Time limit** ([`time_limit`](Self::time_limit)): a budget counted from the start of each
///   `plan`/`plan_with_stats` call, so a planner (or a `Limits`) reused for many calls gives each
///   call the whole budget. It covers everything the call does, warm starts and verification
///   included. `Duration::MAX` means "no time limit" (and switches an engine's default off).
/// - **Deadline** ([`deadline`](Self::deadline)): the absolute alternative, an [`Instant`] that
///   does not move between calls (a scheduler that must answer by a fixed time, or the command
///   line, which counts from the start of the process). With both, the earlier one wins.
/// - **Node limit** ([`node_limit`](Self::node_limit)): deterministic, unlike the clock; its unit
///   is the engine's own unit of search (see there).
/// - **Cancellation** ([`cancel_flag`](Self::cancel_flag), [`cancel_when`](Self::cancel_when)):
///   checked between solver time slices (10 ms), greedy passes, search nodes and steps, also
///   without a deadline; the engine then returns its best verified plan with
///   [`StopReason::Cancelled`] (latency measured in `docs/benchmarks.md`).
///
/// **No engine runs unbounded.** When a `Limits` sets neither a time limit, a deadline nor a
/// node limit, an engine with a default bound applies it: the exact planner a 10 s time limit
/// ([`ExactPlanner::DEFAULT_TIME_LIMIT`](crate::ExactPlanner::DEFAULT_TIME_LIMIT)); the
/// consolidation search 20,000 search states
/// ([`Consolidator::DEFAULT_NODE_LIMIT`](crate::Consolidator::DEFAULT_NODE_LIMIT)). The greedy planner, consolidation's release walk and rebalancing are bounded by
/// construction (a fixed number of passes, each polynomial in the input). A limit stops the
/// search, never the correctness checks of the plan returned: the engine returns the best
/// verified plan it has (at worst its greedy fallback) and the [`StopReason`] says which limit
/// stopped it.
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
    time_limit: Option<Duration>,
    deadline: Option<Instant>,
    node_limit: Option<u64>,
    cancel: Option<Cancel>,
}

impl fmt::Debug for Limits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Limits")
            .field("time_limit", &self.time_limit)
            .field("deadline", &self.deadline)
            .field("node_limit", &self.node_limit)
            .field("cancel", &self.cancel.as_ref().map(|_| "set"))
            .finish()
    }
}

impl Limits {
    /// No limits set: each engine applies its documented default bound.
    pub fn new() -> Self {
        Limits::default()
    }

    /// Stops `limit` after the start of each engine call (replacing a time limit set before).
    /// The clock is read when the call starts, not here. `Duration::MAX` means no time limit.
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = Some(limit);
        self
    }

    /// Stops at this instant, whenever the engine is called: an absolute deadline, the
    /// alternative to [`time_limit`](Self::time_limit) (the earlier of this and any deadline
    /// already set; with a time limit too, the earlier of the two). A planner reused after the
    /// deadline has passed returns its fallback at once with `TimeLimit`.
    pub fn deadline(mut self, at: Instant) -> Self {
        self.deadline = Some(self.deadline.map_or(at, |current| current.min(at)));
        self
    }

    /// Stops after this many units of search (replacing a node limit set before). The unit is
    /// each engine's own, and deterministic:
    /// - exact planner: branch-and-bound nodes of each solver call (the probes and the
    ///   relax-and-fix heuristic use fewer; the large-neighbourhood phase's windows at most
    ///   10,000);
    /// - greedy planner: greedy passes (the first always runs);
    /// - consolidation: states of the exhaustive search (default 20,000);
    /// - rebalancing: release candidates tried, over all its runs.
    pub fn node_limit(mut self, nodes: u64) -> Self {
        self.node_limit = Some(nodes);
        self
    }

    /// Stops once `flag` is set (e.g. by another thread).
    pub fn cancel_flag(mut self, flag: Arc<AtomicBool>) -> Self {
        self.cancel = Some(Cancel::Flag(flag));
        self
    }

    /// Stops once `check` returns true. It is called often (every few milliseconds of work), so
    /// it should be cheap.
    pub fn cancel_when(mut self, check: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        self.cancel = Some(Cancel::Check(Arc::new(check)));
        self
    }

    /// These limits with every field `other` sets taken from it (the deadline: the earlier of
    /// the two). What engines' `.limits(..)` builders do, so a limit set before is kept unless
    /// replaced.
    pub fn merged(self, other: Limits) -> Limits {
        let mut merged = Limits {
            time_limit: other.time_limit.or(self.time_limit),
            deadline: self.deadline,
            node_limit: other.node_limit.or(self.node_limit),
            cancel: other.cancel.or(self.cancel),
        };
        if let Some(at) = other.deadline {
            merged = merged.deadline(at);
        }
        merged
    }

    /// Arms the limits for one engine call that starts now: the time limit (or, when no time
    /// limit, deadline or node limit is set, `default_time_limit`) becomes a deadline. The result
    /// has no time limit left, so arming it again (a sub-phase) keeps the same deadline.
    pub(crate) fn armed(&self, default_time_limit: Option<Duration>) -> Limits {
        let unbounded = self.time_limit.is_none() && self.deadline.is_none() && self.node_limit.is_none();
        let limit = self.time_limit.or(default_time_limit.filter(|_| unbounded));
        let mut armed = Limits { time_limit: None, ..self.clone() };
        if let Some(at) = limit.and_then(|limit| Instant::now().checked_add(limit)) {
            armed = armed.deadline(at);
        }
        armed
    }

    /// The same deadline and cancellation without the node limit (for work whose own steps are
    /// not search nodes, e.g. the exact planner's greedy warm start).
    pub(crate) fn without_node_limit(&self) -> Limits {
        Limits { node_limit: None, ..self.clone() }
    }

    /// The time limit, if set.
    pub fn time_budget(&self) -> Option<Duration> {
        self.time_limit
    }

    /// The absolute deadline, if set (a time limit is not included: it becomes a deadline only
    /// when an engine call starts).
    pub fn deadline_at(&self) -> Option<Instant> {
        self.deadline
    }

    /// The node limit, if set.
    pub fn nodes(&self) -> Option<u64> {
        self.node_limit
    }

    /// Whether a cancellation check is set.
    pub(crate) fn can_cancel(&self) -> bool {
        self.cancel.is_some()
    }

    /// Whether the caller asked to stop.
    pub fn cancelled(&self) -> bool {
        match &self.cancel {
            Some(Cancel::Flag(flag)) => flag.load(Ordering::Relaxed),
            Some(Cancel::Check(check)) => check(),
            None => false,
        }
    }

    /// Whether the (armed) deadline has passed.
    pub(crate) fn expired(&self) -> bool {
        self.deadline.is_some_and(|deadline| Instant::now() >= deadline)
    }

    /// The reason to stop now, if any: [`StopReason::Cancelled`] before
    /// [`StopReason::TimeLimit`]. On armed limits (see [`Self::armed`]).
    pub(crate) fn stop_now(&self) -> Option<StopReason> {
        if self.cancelled() {
            Some(StopReason::Cancelled)
        } else if self.expired() {
            Some(StopReason::TimeLimit)
        } else {
            None
        }
    }

    /// Time left before the (armed) deadline (`None` = no deadline).
    pub(crate) fn time_left(&self) -> Option<Duration> {
        self.deadline.map(|deadline| deadline.saturating_duration_since(Instant::now()))
    }
}

/// What an engine did: solver calls, search nodes, rounds, and wall time per phase.
///
/// Statistics are for people and benchmarks; they are kept out of [`Plan`](crate::Plan) so that
/// plans stay byte-for-byte deterministic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
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

    /// Adds what another run did to these counts, its phases after these.
    pub(crate) fn absorb(&mut self, other: Stats) {
        self.solves += other.solves;
        self.nodes += other.nodes;
        self.rounds += other.rounds;
        self.neighbourhoods += other.neighbourhoods;
        self.improvements += other.improvements;
        self.phases.extend(other.phases);
    }

    /// [`Self::absorb`], each of the other run's phases named after `label` (e.g. `"second
    /// backend"`: "second backend: search"), for a run on another thread.
    pub(crate) fn absorb_labelled(&mut self, label: &str, mut other: Stats) {
        for phase in &mut other.phases {
            phase.name.insert_str(0, &format!("{label}: "));
        }
        self.absorb(other);
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

/// Why an engine stopped: the one stop vocabulary of every engine (see [`crate::Limits`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[non_exhaustive]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum StopReason {
    /// The engine ran to completion (greedy, or an exact search that finished).
    Completed,
    /// The deadline was hit.
    TimeLimit,
    /// The node or iteration limit was hit.
    NodeLimit,
    /// The caller's cancellation check asked to stop.
    Cancelled,
    /// The problem is larger than the exact planner's search can take: the greedy plan is
    /// returned, as improved by the large-neighbourhood phase when time was left.
    TooLarge,
    /// The solver failed; the greedy plan is returned. Carries the solver's message.
    SolverError(String),
    /// An internal consistency check failed (a bug, never the input's fault): e.g. the exact
    /// plan did not verify, or the greedy plan beat a claimed optimum. The greedy plan is
    /// returned. Carries what failed.
    InternalError(String),
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::Completed => write!(f, "completed"),
            StopReason::TimeLimit => write!(f, "time limit reached"),
            StopReason::NodeLimit => write!(f, "node limit reached"),
            StopReason::Cancelled => write!(f, "cancelled"),
            StopReason::TooLarge => {
                write!(f, "too large for the exact search (greedy plan, improved where windows allowed)")
            }
            StopReason::SolverError(message) => write!(f, "solver error (greedy plan returned): {message}"),
            StopReason::InternalError(message) => write!(f, "internal check failed (greedy plan returned): {message}"),
        }
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
    fn a_huge_time_limit_is_no_deadline_and_switches_the_default_off() {
        let armed = Limits::new().time_limit(Duration::MAX).armed(Some(Duration::from_secs(10)));
        assert_eq!(armed.deadline_at(), None);
    }

    #[test]
    fn the_time_limit_counts_from_each_arming() {
        let limits = Limits::new().time_limit(Duration::from_millis(30));
        assert_eq!(limits.deadline_at(), None);
        let first = limits.armed(None);
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(first.stop_now(), Some(StopReason::TimeLimit));
        // The same limits armed again give the next call its whole budget.
        let second = limits.armed(None);
        assert!(second.deadline_at().is_some_and(|at| at > Instant::now()));
        assert_eq!(second.stop_now(), None);
        // Arming armed limits keeps their deadline.
        assert_eq!(second.armed(Some(Duration::from_secs(99))).deadline_at(), second.deadline_at());
    }

    #[test]
    fn the_default_applies_only_when_nothing_bounds_the_call() {
        let default = Some(Duration::from_secs(10));
        assert!(Limits::new().armed(default).deadline_at().is_some());
        assert!(Limits::new().cancel_when(|| false).armed(default).deadline_at().is_some());
        assert_eq!(Limits::new().node_limit(5).armed(default).deadline_at(), None);
        assert_eq!(Limits::new().armed(None).deadline_at(), None);
    }

    #[test]
    fn merging_keeps_what_the_other_limits_leave_unset() {
        let flag = Arc::new(AtomicBool::new(true));
        let merged = Limits::new()
            .time_limit(Duration::from_secs(5))
            .node_limit(7)
            .merged(Limits::new().cancel_flag(flag).node_limit(9));
        assert_eq!(merged.time_budget(), Some(Duration::from_secs(5)));
        assert_eq!(merged.nodes(), Some(9));
        assert!(merged.cancelled());
        let now = Instant::now();
        let later = now + Duration::from_secs(1);
        assert_eq!(Limits::new().deadline(now).merged(Limits::new().deadline(later)).deadline_at(), Some(now));
    }
}
