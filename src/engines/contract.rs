//! The one engine contract: [`Engine`] — limits in, one run on its input — and [`EngineOutput`]
//! — what every result says: its objective, why the engine stopped, whether it is proven
//! optimal, what its independent checker finds, and its JSON.
//!
//! Each engine keeps its own builder for the settings only it has (a solver backend, a step
//! limit, …); the traits hold what every engine shares, so that code can run any engine the same
//! way. Both traits are sealed: the crate's engines are their only implementations, so a method
//! added later (with a default) breaks no one.

use crate::engines::limits::{Limits, Stats};
use crate::plan::{Objective, Plan, Status, StopReason};
use crate::violation::Violation;

/// What every engine does: take [`Limits`] and run on its input.
///
/// The greedy and exact planners, consolidation and rebalancing run on a validated
/// [`Problem`](crate::Problem) and cannot fail (`Error` is
/// [`Infallible`](std::convert::Infallible)): a stopped engine still returns a valid result with
/// the matching [`StopReason`]. The [`Simulator`](crate::simulate::Simulator) runs on a
/// [`Script`](crate::simulate::Script), which it validates first.
///
/// ```
/// use fleetplan::simulate::{Script, Simulator};
/// use fleetplan::{Consolidator, Engine, EngineOutput, GreedyPlanner, Limits, Problem, StopReason};
///
/// /// Runs any engine under a node limit and checks its result independently.
/// fn checked<E: Engine>(mut engine: E, input: &E::Input) -> Result<E::Output, E::Error> {
///     engine.set_limits(Limits::new().node_limit(1_000));
///     let output = engine.run(input)?;
///     assert!(output.verify(input).is_empty());
///     Ok(output)
/// }
///
/// let text = include_str!("../../scenarios/fragmented-fleet.json");
/// let problem = Problem::from_json(text).unwrap();
/// let Ok(plan) = checked(GreedyPlanner::new(), &problem);
/// let Ok(consolidation) = checked(Consolidator::new(), &problem);
/// assert!(plan.objective().is_some() && consolidation.objective().is_some());
/// assert!(matches!(consolidation.stop_reason(), StopReason::Completed | StopReason::NodeLimit));
///
/// // The simulator runs on a script, which may be invalid.
/// let script = Script::new(fleetplan::scenario_from_json(text).unwrap(), 2);
/// let simulation = checked(Simulator::new(), &script).unwrap();
/// assert_eq!(simulation.objective(), None);
/// ```
pub trait Engine: sealed::Sealed {
    /// What the engine runs on.
    type Input: ?Sized;
    /// What a run returns.
    type Output: EngineOutput<Input = Self::Input>;
    /// Why a run may return nothing.
    type Error;

    /// Sets limits as the engine's `.limits(..)` builder does: each field `limits` sets replaces
    /// the one set before ([`Limits::merged`]), the others are kept.
    fn set_limits(&mut self, limits: Limits);

    /// Runs once, with what the engine did. [`Stats`] stay beside the output, never in it, so
    /// that outputs are byte-for-byte deterministic.
    fn run_with_stats(&self, input: &Self::Input) -> Result<(Self::Output, Stats), Self::Error>;

    /// Runs once.
    fn run(&self, input: &Self::Input) -> Result<Self::Output, Self::Error> {
        self.run_with_stats(input).map(|(output, _)| output)
    }
}

/// What every engine's result says.
pub trait EngineOutput: sealed::Sealed {
    /// What the result was made from and is checked against.
    type Input: ?Sized;

    /// The objective of the fleet the result leads to; `None` where there is no single one
    /// (a simulation has one fleet per tick).
    fn objective(&self) -> Option<&Objective>;

    /// Why the engine stopped.
    fn stop_reason(&self) -> &StopReason;

    /// Whether the engine proved the objective optimal (only the exact planner ever does).
    fn proven_optimal(&self) -> bool {
        false
    }

    /// What the independent checker of this kind of result finds (empty: every rule holds):
    /// [`verify`](crate::verify()) for plans, [`verify_consolidation`](crate::verify_consolidation),
    /// [`verify_rebalance`](crate::verify_rebalance), and for a simulation the failures of the
    /// checks it ran after every tick.
    fn verify(&self, input: &Self::Input) -> Vec<Violation>;

    /// The result as pretty JSON, deterministic (the same text as its own `to_json`).
    #[cfg(feature = "json")]
    fn to_json(&self) -> String;
}

/// Implements the contract for a planner of a validated `Problem`, which cannot fail: its
/// `limits` field takes the limits (merged), its inherent `plan_with_stats` runs.
macro_rules! problem_engine {
    ($engine:ty => $output:ty) => {
        impl $crate::engines::contract::Sealed for $engine {}

        impl $crate::engines::contract::Engine for $engine {
            type Input = $crate::problem::Problem;
            type Output = $output;
            type Error = ::std::convert::Infallible;

            fn set_limits(&mut self, limits: $crate::engines::limits::Limits) {
                self.limits = self.limits.clone().merged(limits);
            }

            fn run_with_stats(
                &self,
                problem: &$crate::problem::Problem,
            ) -> Result<($output, $crate::engines::limits::Stats), ::std::convert::Infallible> {
                Ok(self.plan_with_stats(problem))
            }
        }
    };
}

/// Implements [`EngineOutput`] for a result of a `Problem` with `objective` and `stop_reason`
/// fields and an inherent `to_json`, checked by `$checker`; further methods (in braces) go into
/// the impl as they are.
macro_rules! problem_output {
    ($output:ty, $checker:path { $($more:tt)* }) => {
        impl $crate::engines::contract::Sealed for $output {}

        impl $crate::engines::contract::EngineOutput for $output {
            type Input = $crate::problem::Problem;

            fn objective(&self) -> Option<&$crate::plan::Objective> {
                Some(&self.objective)
            }

            fn stop_reason(&self) -> &$crate::plan::StopReason {
                &self.stop_reason
            }

            fn verify(&self, problem: &$crate::problem::Problem) -> Vec<$crate::violation::Violation> {
                $checker(problem, self)
            }

            #[cfg(feature = "json")]
            fn to_json(&self) -> String {
                <$output>::to_json(self)
            }

            $($more)*
        }
    };
}

pub(crate) use {problem_engine, problem_output};

problem_output!(Plan, crate::verify::verify {
    fn proven_optimal(&self) -> bool {
        self.status == Status::Optimal
    }
});

pub(crate) use sealed::Sealed;

mod sealed {
    /// Implemented by the crate's engines and their outputs only.
    // Unnameable on purpose: outside the crate no type can implement it.
    #[allow(unnameable_types)]
    pub trait Sealed {}
}
