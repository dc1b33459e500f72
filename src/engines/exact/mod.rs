//! The exact planner: the placement integer program, solved to proven optimality with microlp.
//!
//! The formulation and why it is exact are described in `docs/formulation.md`. In short:
//! 1. An aggregated master problem (new instances of one (type, AZ) counted, not enumerated;
//!    existing instances one by one) is solved level by level: L1, then L2 with L1 fixed, then
//!    each priority of L3, then L4. It is a relaxation of the packing of new instances.
//! 2. Each (type, AZ) group of the result is packed exactly. If every group packs, the plan
//!    reaches the relaxation's lexicographic optimum, which is a lower bound: it is optimal.
//! 3. A group that does not pack is re-modelled instance by instance (exact) and the levels are
//!    solved again.
//!
//! Limits are explicit ([`Limits`](crate::Limits)): a time limit per `plan` call (default
//! [`DEFAULT_TIME_LIMIT`]), a branch-and-bound node limit per solve and a cancellation check
//! looked at between solver time slices. A stopped search returns its best plan as
//! `Feasible` with the proven lexicographic bound, or the greedy plan when it has none.
//! 4. While time is left, a plan the search did not prove is improved window by window
//!    (`lns.rs`: free some launched instances, re-solve them exactly against the rest, keep the
//!    result only if the whole plan verifies and is strictly better).

pub mod backend;
mod bounds;
mod lns;
mod master;
mod packing;
mod patterns;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::engines::finish;
use crate::engines::limits::{Limits as EngineLimits, Stats};
use crate::fleet::{objective, FinalFleet};
use crate::plan::{Action, CostUnit, Objective, Plan, SolverKind, Status, StopReason};
use crate::problem::{PlacementStrategy, Problem, Resources};
use crate::verify::verify;

use backend::{Microlp, MipBackend};
use master::{CostMode, Extra, Facts, Goal, Group, Hint, Layout, Limit, Limits, MasterSolution, Solved, Warm};
use packing::{pack_group, Packing};

/// Branch-and-bound nodes for a probe at a level's LP bound before the full search.
const PROBE_NODES: u64 = 100;

/// Branch-and-bound nodes for each stage of the relax-and-fix heuristic.
const HEURISTIC_NODES: u64 = 300;

/// Most variables the slot groups of a refinement round may add.
const MAX_SLOT_VARIABLES: u64 = 50_000;

/// Largest master model (integer variables, estimated before building it) the planner hands to
/// the solver; a larger problem gets the greedy plan with `StopReason::TooLarge`. microlp's
/// simplex on models this size already takes seconds per solve.
const MAX_MASTER_VARIABLES: u64 = 20_000;

/// Greedy passes of the quick attempt's warm start ([`ExactPlanner::quick_proof`]).
const QUICK_WARM_PASSES: u64 = 24;

/// The quick attempt takes this fraction (1/n) of the time left, at most [`QUICK_SLICE`] (by
/// default): a fixed 100 ms under limits of 200 ms and more.
const QUICK_SHARE: f64 = 2.0;

/// Longest quick attempt (by default): most small and mid-sized endpoints are proven within it
/// (measured in `docs/sweep.md`), and a harder one loses no more than this.
const QUICK_SLICE: Duration = Duration::from_millis(100);

/// Inputs with at least this many copies leave part of the time limit to the
/// large-neighbourhood phase: the search seldom proves them within it.
const LNS_RESERVE_MIN_COPIES: u64 = 1_000;

/// The search's share (per cent) of the time left after the warm start on such inputs.
const SEARCH_SHARE_PERCENT: u32 = 60;

/// The exact planner's time limit when its [`Limits`](crate::Limits) set no time limit, deadline
/// or node limit (`ExactPlanner::new()`): 10 s, the command line's default too.
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(10);

/// Search nodes allowed when packing one group exactly.
const PACKING_BUDGET: u64 = 200_000;

/// Builder for the exact planner, with explicit limits and a pluggable solver backend.
///
/// ```
/// # use std::time::Duration;
/// # use fleetplan::ExactPlanner;
/// use fleetplan::backend::{good_lp, GoodLp};
/// // The same as `.limits(Limits::new().time_limit(..).node_limit(..))`:
/// let planner = ExactPlanner::new().time_limit(Duration::from_secs(2)).node_limit(100_000);
/// // Any good_lp solver can replace the default (microlp called directly):
/// let through_good_lp = ExactPlanner::new().backend(GoodLp::new(good_lp::microlp));
/// # let _ = (planner, through_good_lp);
/// ```
#[derive(Debug, Clone)]
pub struct ExactPlanner {
    limits: EngineLimits,
    max_rounds: usize,
    slot_model: bool,
    quick_slice: Duration,
    backend: Arc<dyn MipBackend>,
    large_neighbourhood: bool,
    max_master_variables: u64,
    /// A plan to start from instead of greedy's when it is at least as good (the
    /// large-neighbourhood phase seeds each window with the window as it is).
    seed: Option<Vec<Action>>,
}

impl Default for ExactPlanner {
    fn default() -> Self {
        ExactPlanner {
            limits: EngineLimits::new(),
            max_rounds: 16,
            slot_model: false,
            quick_slice: QUICK_SLICE,
            backend: Arc::new(Microlp),
            large_neighbourhood: true,
            max_master_variables: MAX_MASTER_VARIABLES,
            seed: None,
        }
    }
}

/// What solving the levels before the cost gave.
enum Levels {
    /// Every level fixed at its optimum; the last level's solution.
    Fixed { fixed: Vec<(Goal, f64)>, last: Option<MasterSolution> },
    /// The search ends with this outcome.
    Done(Outcome),
    /// A solver error with the pattern cut: the round starts again without it.
    Restart,
}

/// What the search produced.
enum Outcome {
    /// A plan built from a master solution that packed.
    Plan { actions: Vec<Action>, proven: bool, stop: StopReason, bound: Option<Objective> },
    /// No usable plan; the greedy plan is returned.
    NoPlan { stop: StopReason, bound: Option<Objective> },
    /// The hard constraints cannot all be met (e.g. MinInstanceCount).
    Infeasible,
}

impl ExactPlanner {
    /// The time limit when the [`Limits`](crate::Limits) set no time limit, deadline or node
    /// limit: 10 s, the command line's default too.
    pub const DEFAULT_TIME_LIMIT: Duration = DEFAULT_TIME_LIMIT;

    /// A planner with no limits set, so bounded by [`Self::DEFAULT_TIME_LIMIT`] (10 s per call).
    pub fn new() -> Self {
        Self::default()
    }

    /// Exactly `.limits(Limits::new().time_limit(limit))`: stops `limit` after the start of each
    /// [`plan`](Self::plan) call (the warm start and verification included); the result then says
    /// `TimeLimit`. `Duration::MAX` turns the default time limit off.
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.limits = self.limits.clone().time_limit(limit);
        self
    }

    /// Exactly `.limits(Limits::new().node_limit(nodes))`: stops a solver call after this many
    /// branch-and-bound nodes; the result then says `NodeLimit`. Deterministic, unlike the time
    /// limit; with a node limit and no time limit the default time limit does not apply.
    pub fn node_limit(mut self, nodes: u64) -> Self {
        self.limits = self.limits.clone().node_limit(nodes);
        self
    }

    /// The shared engine [`Limits`](crate::Limits): a time limit per call (or an absolute
    /// deadline), a node limit per solver call and a cancellation check (looked at between
    /// solver time slices of at most 10 ms). Each field `limits` sets replaces the one set before
    /// ([`Limits::merged`](crate::Limits::merged)); the others are kept.
    pub fn limits(mut self, limits: EngineLimits) -> Self {
        self.limits = self.limits.clone().merged(limits);
        self
    }

    /// Most rounds of "solve, pack, refine"; each round turns the groups that did not pack into
    /// exact instance-by-instance groups (default 16).
    pub fn max_rounds(mut self, rounds: usize) -> Self {
        self.max_rounds = rounds.max(1);
        self
    }

    /// Solves the integer programs with this backend instead of the default [`Microlp`]. A
    /// backend without node limits or best bounds (e.g. [`backend::GoodLp`]) ignores
    /// [`node_limit`](Self::node_limit) and cannot give a proven `Bound` for a level a time limit
    /// interrupted; its answers are checked like any other (packing, `verify`, never worse than
    /// greedy).
    pub fn backend(mut self, backend: impl MipBackend + 'static) -> Self {
        self.backend = Arc::new(backend);
        self
    }

    /// The name of the solver backend, e.g. `"microlp"`.
    pub fn backend_name(&self) -> String {
        self.backend.name()
    }

    /// Whether a plan the search could not prove is improved window by window while time is
    /// left (default on): the large-neighbourhood phase of `docs/formulation.md`. It runs only on
    /// plans without removals (scale-out or an empty start); the result stays `Feasible` unless
    /// it meets the proven bound. On inputs of 1,000 copies or more the search gets at most 60 %
    /// of the time left after the warm start, so that the phase has time to run.
    pub fn large_neighbourhood(mut self, on: bool) -> Self {
        self.large_neighbourhood = on;
        self
    }

    /// Largest master model (estimated integer variables) the search takes on; larger problems
    /// end with `TooLarge` (then the large-neighbourhood phase may still improve the plan). Only
    /// for tests: the default suits microlp.
    #[doc(hidden)]
    pub fn max_master_variables(mut self, variables: u64) -> Self {
        self.max_master_variables = variables;
        self
    }

    /// Uses the plain slot formulation for every group (one variable per instance slot and
    /// component, no aggregation, no cuts). Only for benchmarks: it shows what structure buys.
    #[doc(hidden)]
    pub fn plain_slot_model(mut self) -> Self {
        self.slot_model = true;
        self
    }

    /// The longest quick attempt under a deadline (a cheap warm start and a short search,
    /// taking half the time left at most this long; see `docs/formulation.md`);
    /// `Duration::ZERO` turns it off. For tests and benchmarks.
    #[doc(hidden)]
    pub fn quick_slice(mut self, slice: Duration) -> Self {
        self.quick_slice = slice;
        self
    }

    /// Plans; falls back to the greedy plan when the solver cannot do better. The result is
    /// never worse than the greedy plan and always passes [`verify`] when the greedy plan does.
    pub fn plan(&self, problem: &Problem) -> Plan {
        self.plan_with_stats(problem).0
    }

    /// [`plan`](Self::plan), with what the search did.
    pub fn plan_with_stats(&self, problem: &Problem) -> (Plan, Stats) {
        let limits = self.effective_limits();
        let mut stats = Stats::default();
        if let Some(plan) = self.quick_proof(problem, &limits, &mut stats) {
            return (plan, stats);
        }
        let phase = Instant::now();
        let greedy = self.seeded(problem, warm_plan(problem, &limits, None));
        stats.solves += 1;
        stats.phase("warm start (greedy)", phase);
        if let Some(stop) = limits.stop_now() {
            return (stopped_before_search(problem, greedy, stop), stats);
        }
        let phase = Instant::now();
        let greedy_valid = verify(problem, &greedy).is_empty();
        stats.phase("verify warm start", phase);
        // The packing bounds may already prove the warm start: then there is nothing to search.
        if greedy_valid && greedy.status != Status::Infeasible {
            let phase = Instant::now();
            let bound = bounds::complete(problem, None);
            stats.phase("packing bounds", phase);
            if bound.key() == greedy.objective.key() {
                let plan =
                    finish(problem, SolverKind::Exact, Status::Optimal, StopReason::Completed, greedy.actions, None);
                return (plan, stats);
            }
        }
        // The greedy plan seeds every level whose earlier optima it reaches.
        let hint = greedy_valid.then(|| (Hint::from_actions(problem, &greedy.actions), greedy.objective.clone()));
        let phase = Instant::now();
        let outcome =
            self.search_within(problem, &self.search_engine_limits(problem, &limits), hint.as_ref(), &mut stats);
        stats.phase("search", phase);
        // A cancelled search stops the way a deadline does; say which it was.
        let stop_named = |stop: StopReason| match stop {
            StopReason::TimeLimit if limits.cancelled() => StopReason::Cancelled,
            other => other,
        };
        let fallback = |stop: StopReason, bound: Option<Objective>| {
            // Always with an instance count (packing bounds fill in what the solver left open).
            let bound = Some(bounds::complete(problem, bound)).filter(|bound| bound.key() <= greedy.objective.key());
            let status = if bound.as_ref() == Some(&greedy.objective) && greedy_valid {
                Status::Optimal
            } else {
                Status::Feasible
            };
            let bound = if status == Status::Optimal { None } else { bound };
            finish(problem, SolverKind::Exact, status, stop_named(stop), greedy.actions.clone(), bound)
        };
        let phase = Instant::now();
        let plan = match outcome {
            Outcome::Infeasible => finish(
                problem,
                SolverKind::Exact,
                Status::Infeasible,
                StopReason::Completed,
                greedy.actions.clone(),
                None,
            ),
            Outcome::NoPlan { stop, bound } => fallback(stop, bound),
            Outcome::Plan { actions, proven, stop, bound } => {
                let bound = if proven { bound } else { Some(bounds::complete(problem, bound)) };
                let status = if proven { Status::Optimal } else { Status::Feasible };
                let mut plan = finish(
                    problem,
                    SolverKind::Exact,
                    status,
                    stop_named(stop.clone()),
                    actions,
                    if proven { None } else { bound.clone() },
                );
                // A plan that meets the bound is optimal, whatever stopped the search.
                if plan.bound.as_ref().is_some_and(|bound| bound.key() == plan.objective.key()) {
                    plan.status = Status::Optimal;
                    plan.bound = None;
                }
                // Never trusted unverified, even past the deadline.
                let violations = verify(problem, &plan);
                if let Some(first) = violations.first() {
                    fallback(StopReason::InternalError(format!("the exact plan failed verification: {first}")), None)
                } else if greedy_valid && greedy.objective.better_than(&plan.objective) {
                    if proven {
                        fallback(StopReason::InternalError("the greedy plan beat a claimed optimum".to_string()), None)
                    } else {
                        fallback(stop, bound)
                    }
                } else {
                    plan
                }
            }
        };
        stats.phase("verify result", phase);
        let plan = self.improve_unproven(problem, plan, &limits, &mut stats);
        (plan, stats)
    }

    /// A short first attempt, only under a deadline: a cheap warm start (greedy with a few
    /// passes) and the search for a slice of the time. Most small and mid-sized endpoints are
    /// proven this way in a fraction of the time the full greedy warm start alone takes; the
    /// others go on as if it had not happened (the full greedy plan is the floor of every
    /// unproven result, so the cheap warm start can never make a result worse than greedy's).
    /// Node-limited runs without a deadline skip it and stay deterministic.
    fn quick_proof(&self, problem: &Problem, limits: &EngineLimits, stats: &mut Stats) -> Option<Plan> {
        let deadline = limits.deadline_at()?;
        if self.slot_model || self.quick_slice.is_zero() || limits.stop_now().is_some() {
            return None;
        }
        let started = Instant::now();
        // A fixed length (half the time under 200 ms): the schedule does not stretch with the
        // limit, so what a short limit does is also done, at the same times, under a longer one.
        let slice = deadline.saturating_duration_since(started).div_f64(QUICK_SHARE).min(self.quick_slice);
        let quick = limits.clone().deadline(started + slice);
        let warm = self.seeded(problem, warm_plan(problem, &quick, Some(QUICK_WARM_PASSES)));
        stats.solves += 1;
        let plan = (warm.status != Status::Infeasible && verify(problem, &warm).is_empty())
            .then(|| self.quick_search(problem, &quick, warm, stats))
            .flatten();
        stats.phase("quick attempt", started);
        plan
    }

    /// The search of [`Self::quick_proof`] from a verified warm start: a proven plan or nothing.
    fn quick_search(&self, problem: &Problem, quick: &EngineLimits, warm: Plan, stats: &mut Stats) -> Option<Plan> {
        let proven = |actions: Vec<Action>| {
            let plan = finish(problem, SolverKind::Exact, Status::Optimal, StopReason::Completed, actions, None);
            (verify(problem, &plan).is_empty() && !warm.objective.better_than(&plan.objective)).then_some(plan)
        };
        if bounds::complete(problem, None).key() == warm.objective.key() {
            return proven(warm.actions.clone());
        }
        let hint = (Hint::from_actions(problem, &warm.actions), warm.objective.clone());
        match self.search_within(problem, quick, Some(&hint), stats) {
            Outcome::Plan { actions, proven: true, .. } => proven(actions),
            _ => None,
        }
    }

    /// [`Self::search`] through the instrumented backend under `limits` (its solver calls
    /// counted in `stats`).
    fn search_within(
        &self,
        problem: &Problem,
        limits: &EngineLimits,
        hint: Option<&(Hint, Objective)>,
        stats: &mut Stats,
    ) -> Outcome {
        let backend = Instrumented {
            inner: Arc::clone(&self.backend),
            limits,
            solves: AtomicU64::new(0),
            nodes: AtomicU64::new(0),
        };
        let search_limits = Limits { deadline: limits.deadline_at(), node_limit: limits.nodes() };
        let outcome = self.search(problem, &backend, search_limits, hint);
        stats.solves += backend.solves.load(Ordering::Relaxed);
        stats.nodes += backend.nodes.load(Ordering::Relaxed);
        outcome
    }

    /// The seed's plan when there is one, it verifies and greedy's is not better.
    fn seeded(&self, problem: &Problem, greedy: Plan) -> Plan {
        let Some(actions) = &self.seed else { return greedy };
        let plan = finish(problem, SolverKind::Greedy, Status::Feasible, StopReason::Completed, actions.clone(), None);
        if greedy.status != Status::Infeasible
            && !greedy.objective.better_than(&plan.objective)
            && verify(problem, &plan).is_empty()
        {
            plan
        } else {
            greedy
        }
    }

    /// The limits of the search: on large inputs, when the large-neighbourhood phase is on and
    /// there is a deadline, [`SEARCH_SHARE_PERCENT`] of the time left, the rest for the phase.
    fn search_engine_limits(&self, problem: &Problem, limits: &EngineLimits) -> EngineLimits {
        let copies: u64 = problem.components().iter().map(|component| u64::from(component.copy_count)).sum();
        match limits.time_left() {
            Some(left) if self.large_neighbourhood && copies >= LNS_RESERVE_MIN_COPIES => {
                let share = left * SEARCH_SHARE_PERCENT / 100;
                match Instant::now().checked_add(share) {
                    Some(at) => limits.clone().deadline(at),
                    None => limits.clone(),
                }
            }
            _ => limits.clone(),
        }
    }

    /// The large-neighbourhood phase ([`lns::improve`]) on a plan the search did not prove,
    /// while the limits leave time; a result that meets its bound is `Optimal`. One that does
    /// not, when a limit ended the phase, says that limit: the search's reason (`TooLarge`,
    /// `NodeLimit`, …) no longer says why the run stopped, and the deadline or the caller's
    /// cancellation did (a solver or internal error is kept).
    fn improve_unproven(&self, problem: &Problem, plan: Plan, limits: &EngineLimits, stats: &mut Stats) -> Plan {
        if !self.large_neighbourhood || plan.status != Status::Feasible || limits.stop_now().is_some() {
            return plan;
        }
        let phase = Instant::now();
        let (mut plan, progress) = lns::improve(self, problem, plan, limits, stats);
        stats.neighbourhoods += progress.windows;
        stats.improvements += progress.improvements;
        if plan.bound.as_ref().is_some_and(|bound| bound.key() == plan.objective.key()) {
            plan.status = Status::Optimal;
            plan.bound = None;
        } else if let Some(stop) = progress.stopped {
            // A solver or internal error stays reported: it is what the caller must see.
            if !matches!(plan.stop_reason, StopReason::SolverError(_) | StopReason::InternalError(_)) {
                plan.stop_reason = stop;
            }
        }
        stats.phase("large neighbourhood", phase);
        plan
    }

    /// This call's limits: the time limit (or the default) armed now.
    fn effective_limits(&self) -> EngineLimits {
        self.limits.armed(Some(DEFAULT_TIME_LIMIT))
    }

    /// The lexicographic search ([`Self::search_rounds`]), falling back to a loosely packed plan
    /// (see [`loose_plan`]) when a limit stops it before a master solution packs exactly.
    fn search(
        &self,
        problem: &Problem,
        backend: &dyn MipBackend,
        limits: Limits,
        hint: Option<&(Hint, Objective)>,
    ) -> Outcome {
        let mut loose = None;
        let outcome = self.search_rounds(problem, backend, limits, hint, &mut loose);
        let Some(loose) = loose else { return outcome };
        match outcome {
            Outcome::NoPlan { stop, bound } => Outcome::Plan { actions: loose.actions, proven: false, stop, bound },
            Outcome::Plan { actions, proven: false, stop, bound } => {
                let (fleet, _) = FinalFleet::apply(problem, &actions);
                let actions =
                    if loose.objective.better_than(&objective(problem, &fleet)) { loose.actions } else { actions };
                Outcome::Plan { actions, proven: false, stop, bound }
            }
            proven_or_infeasible => proven_or_infeasible,
        }
    }

    fn search_rounds(
        &self,
        problem: &Problem,
        backend: &dyn MipBackend,
        limits: Limits,
        hint: Option<&(Hint, Objective)>,
        loose: &mut Option<Loose>,
    ) -> Outcome {
        let mut facts = Facts::new(problem, backend);
        if master::master_size_estimate(&facts) > self.max_master_variables {
            return Outcome::NoPlan { stop: StopReason::TooLarge, bound: None };
        }
        // The solves end a little before the deadline, so that packing the best master
        // solution into instances (`realize`) has time left when a level runs out of it.
        let (full, limits) = (limits, Limits { deadline: limits.deadline.map(solving_deadline), ..limits });
        if !self.slot_model {
            facts.add_pattern_prices(limits.deadline);
        }
        let mut layout = Layout { slot_groups: Default::default(), cuts: !self.slot_model };
        if self.slot_model {
            layout.slot_groups = facts.groups.keys().copied().collect();
        }
        let mut goals = vec![Goal::Unplaced];
        if facts.has_balance() {
            goals.push(Goal::Balance);
        }
        goals.extend(facts.priorities().into_iter().map(Goal::Priority));
        let modes: &[CostMode] =
            if facts.unpriced_possible { &[CostMode::Priced, CostMode::Units] } else { &[CostMode::Priced] };

        let mut best_bound: Option<Objective> = None;
        'rounds: for _round in 0..self.max_rounds {
            let (fixed, last) =
                match self.solve_levels(problem, &facts, &layout, &goals, limits, full, hint, best_bound.as_ref()) {
                    Levels::Fixed { fixed, last } => (fixed, last),
                    Levels::Done(outcome) => return outcome,
                    Levels::Restart => {
                        // The pattern cut's fractional coefficients can upset a solver numerically
                        // (a singular basis): start the round again without them.
                        facts.pattern_prices.clear();
                        continue 'rounds;
                    }
                };
            let CostLevel { cheapest, bound: cost_bound, stop: cost_stop } =
                solve_cost_level(problem, &facts, &layout, &fixed, limits, hint, last.as_ref(), modes);
            if matches!(cost_stop, Some(StopReason::SolverError(_))) && !facts.pattern_prices.is_empty() {
                facts.pattern_prices.clear();
                continue 'rounds;
            }
            let Some((_, solution)) = cheapest else {
                let stop = cost_stop.unwrap_or(StopReason::SolverError("no cost regime is feasible".to_string()));
                let bound = lex_bound(&facts, &fixed, None);
                return self.stopped(
                    problem,
                    &facts,
                    full.deadline,
                    last.into_iter().collect(),
                    stop,
                    bound.or(best_bound),
                );
            };
            let bound = lex_bound(&facts, &fixed, Some((Goal::Cost(CostMode::Priced), cost_bound)));
            if let Some(stop) = cost_stop {
                // The level before's solution too: a search stopped later must not give a worse
                // plan than one stopped before this level.
                let candidates = std::iter::once(solution).chain(last).collect();
                return self.stopped(problem, &facts, full.deadline, candidates, stop, bound.or(best_bound));
            }
            best_bound = bound;
            // One packing: groups that pack only with spare instances give the loose plan and
            // are modelled instance by instance in the next round, like groups that do not pack.
            let failed = match realize_with(problem, &facts, &solution, full.deadline, LOOSE_SPARE) {
                Ok(Realized { actions, loosened }) if loosened.is_empty() => {
                    return Outcome::Plan { actions, proven: true, stop: StopReason::Completed, bound: None }
                }
                Ok(Realized { actions, loosened }) => {
                    if loose.is_none() {
                        *loose = loose_plan(problem, actions);
                    }
                    loosened
                }
                Err(failed) => failed,
            };
            if full.deadline.is_some_and(|deadline| Instant::now() >= deadline) || self.limits.cancelled() {
                return Outcome::NoPlan { stop: StopReason::TimeLimit, bound: best_bound };
            }
            // A slot group has one variable per (slot, component): refuse huge ones.
            let slot_variables: u64 = failed
                .iter()
                .map(|group| {
                    facts.groups.get(group).copied().unwrap_or(0).saturating_mul(problem.components().len() as u64 + 1)
                })
                .sum();
            if slot_variables > MAX_SLOT_VARIABLES {
                return Outcome::NoPlan { stop: StopReason::TooLarge, bound: best_bound };
            }
            layout.slot_groups.extend(failed);
        }
        Outcome::NoPlan { stop: StopReason::NodeLimit, bound: best_bound }
    }

    /// The levels before the cost (L1, L2, L3 per priority), each probed at its LP bound and
    /// then searched, fixed one after the other at their optimum.
    #[allow(clippy::too_many_arguments)]
    fn solve_levels(
        &self,
        problem: &Problem,
        facts: &Facts<'_>,
        layout: &Layout,
        goals: &[Goal],
        limits: Limits,
        full: Limits,
        hint: Option<&(Hint, Objective)>,
        best_bound: Option<&Objective>,
    ) -> Levels {
        // A node-limited probe is only cheap when the backend honours node limits.
        let probes = facts.backend.capabilities().node_limit;
        let mut fixed: Vec<(Goal, f64)> = Vec::new();
        let mut last: Option<MasterSolution> = None;
        for &goal in goals {
            // The warm start meets every fixed level and already reaches this level's
            // combinatorial floor: that is its optimum.
            let warm = warm_start(hint, &fixed, last.as_ref());
            let consistent = matches!(warm, Warm::Plan(_));
            if let Some(value) =
                hint.filter(|_| consistent).and_then(|(_, objective)| floor_met(problem, goal, objective, &fixed))
            {
                fixed.push((goal, value));
                // An earlier level's solution need not meet this level: the warm start does.
                last = None;
                continue;
            }
            let mut at_least = None;
            if goal != Goal::Unplaced {
                match probe_level(problem, facts, layout, goal, &fixed, limits, warm, last.as_ref(), probes) {
                    Probe::Fixed(value, solution) => {
                        fixed.push((goal, value));
                        if let Some(solution) = solution {
                            last = Some(solution);
                        }
                        continue;
                    }
                    Probe::Search(bound) => at_least = bound,
                }
            }
            let extra = Extra { at_least, ..Extra::default() };
            match master::solve(facts, layout, goal, &fixed, limits, warm, extra) {
                Solved::Solution { solution, proven: true, .. } => {
                    fixed.push((goal, solution.value.round()));
                    last = Some(solution);
                }
                Solved::Solution { solution, limit, best_bound: level_bound, .. } => {
                    let bound = lex_bound(facts, &fixed, Some((goal, level_bound)));
                    // The level before's solution too (see `stopped`).
                    return Levels::Done(self.stopped(
                        problem,
                        facts,
                        full.deadline,
                        std::iter::once(solution).chain(last).collect(),
                        stop_of(limit),
                        bound.or_else(|| best_bound.cloned()),
                    ));
                }
                Solved::Interrupted { limit, best_bound: level_bound } => {
                    let bound = lex_bound(facts, &fixed, Some((goal, level_bound)));
                    return Levels::Done(self.stopped(
                        problem,
                        facts,
                        full.deadline,
                        last.into_iter().collect(),
                        stop_of(Some(limit)),
                        bound.or_else(|| best_bound.cloned()),
                    ));
                }
                Solved::Infeasible if fixed.is_empty() => return Levels::Done(Outcome::Infeasible),
                Solved::Infeasible => {
                    return Levels::Done(Outcome::NoPlan {
                        stop: StopReason::InternalError(format!(
                            "level {goal:?} became infeasible after fixing earlier levels"
                        )),
                        bound: best_bound.cloned(),
                    })
                }
                Solved::Error(_) if !facts.pattern_prices.is_empty() => return Levels::Restart,
                Solved::Error(message) => {
                    return Levels::Done(Outcome::NoPlan {
                        stop: StopReason::SolverError(message),
                        bound: best_bound.cloned(),
                    })
                }
            }
        }
        Levels::Fixed { fixed, last }
    }

    /// A limit stopped the search: the best plan of the master solutions that pack (the
    /// interrupted level's incumbent and the level before's solution, whose plan a search
    /// stopped one level earlier would have returned; the first wins ties).
    fn stopped(
        &self,
        problem: &Problem,
        facts: &Facts<'_>,
        deadline: Option<Instant>,
        solutions: Vec<MasterSolution>,
        stop: StopReason,
        bound: Option<Objective>,
    ) -> Outcome {
        // The deadline has usually passed: packing gets a short grace. After a cancellation it
        // gets that grace from now, whatever the deadline (the caller is waiting).
        let now = Instant::now();
        let deadline = if self.limits.cancelled() {
            Some(now + DEADLINE_GRACE)
        } else {
            deadline.map(|deadline| deadline.max(now) + DEADLINE_GRACE)
        };
        let mut best: Option<(Vec<Action>, Objective)> = None;
        for solution in &solutions {
            let Ok(actions) = realize(problem, facts, solution, deadline) else { continue };
            let reached = objective(problem, &FinalFleet::apply(problem, &actions).0);
            if best.as_ref().is_none_or(|(_, so_far)| reached.better_than(so_far)) {
                best = Some((actions, reached));
            }
        }
        match best {
            Some((actions, _)) => Outcome::Plan { actions, proven: false, stop, bound },
            None => Outcome::NoPlan { stop, bound },
        }
    }
}

/// Out of time (or cancelled) before the search could start: the greedy plan, valid by
/// construction, is the answer, with the packing bound (which may prove it).
fn stopped_before_search(problem: &Problem, greedy: Plan, stop: StopReason) -> Plan {
    if greedy.status == Status::Infeasible {
        return finish(problem, SolverKind::Exact, greedy.status, stop, greedy.actions, None);
    }
    let bound = Some(bounds::complete(problem, None)).filter(|bound| bound.key() <= greedy.objective.key());
    let proven = bound.as_ref() == Some(&greedy.objective) && verify(problem, &greedy).is_empty();
    let (status, bound) = if proven { (Status::Optimal, None) } else { (Status::Feasible, bound) };
    finish(problem, SolverKind::Exact, status, stop, greedy.actions, bound)
}

/// The deadline of the search's solver calls: a tenth of the time left (at most a second)
/// before the planner's own, kept for packing the last master solution into instances.
fn solving_deadline(deadline: Instant) -> Instant {
    let reserve = deadline.saturating_duration_since(Instant::now()).div_f64(10.0).min(Duration::from_secs(1));
    deadline.checked_sub(reserve).unwrap_or(deadline)
}

/// How long packing after a stopped search may run past the deadline: enough to turn the last
/// master solution into instances.
const DEADLINE_GRACE: Duration = Duration::from_millis(20);

/// The planner's backend as the search sees it: counts solver calls and branch-and-bound nodes,
/// turns a cancellation request into an interrupted solve (so the search stops the way it does
/// at a deadline), and hands the cancellation check to the backend ([`SolveRequest::stop`]),
/// which with microlp runs the search in short time slices and stops between them.
///
/// Every call runs on the caller's thread: when `plan` returns, nothing of it keeps running.
///
/// [`SolveRequest::stop`]: backend::SolveRequest::stop
#[derive(Debug)]
struct Instrumented<'a> {
    inner: Arc<dyn MipBackend>,
    limits: &'a EngineLimits,
    solves: AtomicU64,
    nodes: AtomicU64,
}

impl MipBackend for Instrumented<'_> {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn capabilities(&self) -> backend::Capabilities {
        self.inner.capabilities()
    }

    fn solve(&self, mip: &backend::Mip, request: &backend::SolveRequest) -> backend::MipOutcome {
        if self.limits.cancelled() {
            return backend::MipOutcome::Interrupted {
                termination: backend::Termination::TimeLimit,
                best_bound: None,
                nodes: 0,
            };
        }
        self.solves.fetch_add(1, Ordering::Relaxed);
        let outcome = if self.limits.can_cancel() && request.stop.is_none() {
            let limits = self.limits.clone();
            let mut request = request.clone();
            request.stop = Some(backend::StopCheck::new(move || limits.cancelled()));
            self.inner.solve(mip, &request)
        } else {
            self.inner.solve(mip, request)
        };
        let nodes = match &outcome {
            backend::MipOutcome::Solution(solution) => solution.nodes,
            backend::MipOutcome::Interrupted { nodes, .. } => *nodes,
            _ => 0,
        };
        self.nodes.fetch_add(nodes, Ordering::Relaxed);
        outcome
    }
}

/// The bound the planner reports when it proves nothing: L1 at `Σ CopyCount` and the most
/// preferred priority's instance count at the packing bounds (trivial and Martello–Toth L2 per
/// resource, MinInstanceCount). A valid lexicographic lower bound on every plan's objective.
#[doc(hidden)]
pub fn packing_bound(problem: &Problem) -> Objective {
    bounds::complete(problem, None)
}

/// Instances of `priority` in a master solution: launches of that priority plus kept
/// existing instances of it (the L3 count the master problem minimises for that level).
fn instances_of_priority(problem: &Problem, solution: &MasterSolution, priority: u8) -> u64 {
    let types = problem.instance_types();
    let is_priority = |t: usize| types.get(t).is_some_and(|info| info.priority == priority);
    let launched: u64 = solution
        .launches
        .iter()
        .filter(|(&(t, _), _)| is_priority(t.index()))
        .map(|(_, &count)| u64::from(count))
        .sum();
    let kept = problem
        .fleet()
        .iter()
        .zip(&solution.keep)
        .filter(|(instance, &keep)| keep && is_priority(instance.type_index))
        .count() as u64;
    launched + kept
}

/// What the cost level (L4) found over its cost regimes.
struct CostLevel {
    /// The cheapest solution and its value.
    cheapest: Option<(f64, MasterSolution)>,
    /// The least of the regimes' proven bounds.
    bound: Option<f64>,
    /// Why a regime stopped short of a proof.
    stop: Option<StopReason>,
}

/// L4 in each cost regime (`modes`); the cheaper answer wins.
#[allow(clippy::too_many_arguments)]
fn solve_cost_level(
    problem: &Problem,
    facts: &Facts<'_>,
    layout: &Layout,
    fixed: &[(Goal, f64)],
    limits: Limits,
    hint: Option<&(Hint, Objective)>,
    last: Option<&MasterSolution>,
    modes: &[CostMode],
) -> CostLevel {
    let mut cheapest: Option<(f64, MasterSolution)> = None;
    let mut cost_bound: Option<f64> = None;
    let mut cost_stop: Option<StopReason> = None;
    // When the cost follows from the instance counts per priority (one price per
    // priority, no reservations, every type priced), L3 fixes L4: skip the solve.
    let modes: &[CostMode] = match (last, facts.cost_follows_from_priorities()) {
        (Some(solution), true) => {
            cheapest = Some((0.0, solution.clone()));
            &[]
        }
        _ => modes,
    };
    // The least cost of the fixed instance counts (`bounds::cost_floor`), as a cut: a
    // warm start that meets it is then proven at the root instead of searched.
    let floor = lex_bound(facts, fixed, None).and_then(|counts| bounds::cost_floor(problem, &counts));
    for &mode in modes {
        let at_least = match (mode, floor) {
            (CostMode::Priced, Some((micros, CostUnit::UsdPerHour)))
            | (CostMode::Units, Some((micros, CostUnit::Instances))) => Some(crate::plan::from_micros(micros)),
            _ => None,
        };
        match master::solve(
            facts,
            layout,
            Goal::Cost(mode),
            fixed,
            limits,
            warm_start(hint, fixed, last),
            Extra { at_least, ..Extra::default() },
        ) {
            Solved::Solution { solution, proven, limit, best_bound: level_bound } => {
                if !proven {
                    cost_stop = Some(stop_of(limit));
                }
                let low = level_bound.unwrap_or(0.0);
                cost_bound = Some(cost_bound.map_or(low, |b: f64| b.min(low)));
                if cheapest.as_ref().is_none_or(|(value, _)| solution.value < *value) {
                    cheapest = Some((solution.value, solution));
                }
            }
            Solved::Infeasible => {}
            Solved::Interrupted { limit, best_bound: level_bound } => {
                cost_stop = Some(stop_of(Some(limit)));
                let low = level_bound.unwrap_or(0.0);
                cost_bound = Some(cost_bound.map_or(low, |b: f64| b.min(low)));
            }
            Solved::Error(message) => cost_stop = Some(StopReason::SolverError(message)),
        }
    }
    CostLevel { cheapest, bound: cost_bound, stop: cost_stop }
}

/// What probing a level at its LP bound found.
enum Probe {
    /// The level's optimum is this value, reached by the solution (`None`: by the previous
    /// level's solution, which stays the warm start).
    Fixed(f64, Option<MasterSolution>),
    /// The level needs its full search, with this proven lower bound (when there is one).
    Search(Option<f64>),
}

/// Probes a level (not L1) at its LP bound: any plan reaching the bound is optimal, no proof
/// needed. The LP solve, then (when the backend honours node limits) a node-limited probe and
/// relax-and-fix at the bound, and once more at the bound plus one when the first attempt
/// proved the bound unreachable.
#[allow(clippy::too_many_arguments)]
fn probe_level(
    problem: &Problem,
    facts: &Facts<'_>,
    layout: &Layout,
    goal: Goal,
    fixed: &[(Goal, f64)],
    limits: Limits,
    warm: Warm<'_>,
    last: Option<&MasterSolution>,
    probes: bool,
) -> Probe {
    let relaxed = Extra { relax: true, ..Extra::default() };
    let Solved::Solution { solution, proven: true, .. } =
        master::solve(facts, layout, goal, fixed, limits, Warm::None, relaxed)
    else {
        return Probe::Search(None);
    };
    let lower = (solution.value - 1e-6).ceil();
    // The previous level's solution already reaches the bound: it is this level's optimum too.
    if let (Goal::Priority(priority), Some(previous)) = (goal, last) {
        if instances_of_priority(problem, previous, priority) as f64 <= lower {
            return Probe::Fixed(lower, None);
        }
    }
    if !probes {
        // The LP bound still helps as a cut; the probe and relax-and-fix (both node-limited)
        // are skipped.
        return Probe::Search(Some(lower));
    }
    let probe = Extra { at_most: Some(lower), ..Extra::default() };
    let probe_limits = Limits { node_limit: Some(limits.node_limit.unwrap_or(u64::MAX).min(PROBE_NODES)), ..limits };
    let mut at_least = Some(lower);
    match master::solve(facts, layout, goal, fixed, probe_limits, warm, probe) {
        Solved::Solution { solution, .. } => return Probe::Fixed(lower, Some(solution)),
        Solved::Infeasible => at_least = Some(lower + 1.0),
        _ => match relax_and_fix(facts, layout, goal, fixed, limits, warm, lower) {
            Heuristic::Found(solution) => return Probe::Fixed(lower, Some(solution)),
            Heuristic::Impossible => at_least = Some(lower + 1.0),
            Heuristic::Unknown => {}
        },
    }
    // The bound moved up by one: relax-and-fix once more at the new bound.
    if at_least == Some(lower + 1.0) {
        match relax_and_fix(facts, layout, goal, fixed, limits, warm, lower + 1.0) {
            Heuristic::Found(solution) => return Probe::Fixed(lower + 1.0, Some(solution)),
            Heuristic::Impossible => at_least = Some(lower + 2.0),
            Heuristic::Unknown => {}
        }
    }
    Probe::Search(at_least)
}

/// The level's value when `objective` (the warm start's, which meets every `fixed` level)
/// reaches a floor no plan can beat, so no solve is needed: L1 with every copy placed; L2, once
/// every copy is placed, at the sum of each balanced component's most even split (each then
/// holds exactly its copy count; `master::least_balance_excess`); an L3 level at no instance of
/// its priority. On large inputs these are the most expensive solves (10,000 copies: 3.5 s for
/// L1's alone).
fn floor_met(problem: &Problem, goal: Goal, objective: &Objective, fixed: &[(Goal, f64)]) -> Option<f64> {
    let wanted: u64 = problem.components().iter().map(|component| u64::from(component.copy_count)).sum();
    let all_placed = objective.placed_copies == wanted;
    match goal {
        Goal::Unplaced if all_placed && fixed.is_empty() => Some(-(wanted as f64)),
        Goal::Balance if all_placed && fixed == [(Goal::Unplaced, -(wanted as f64))] => {
            let zones = problem.azs().len();
            let floor: u64 = problem
                .components()
                .iter()
                .filter_map(|component| master::least_excess_of(component, u64::from(component.copy_count), zones))
                .sum();
            (objective.balance_excess == floor).then_some(floor as f64)
        }
        Goal::Priority(priority) if objective.instances_of_priority(priority) == 0 => Some(0.0),
        _ => None,
    }
}

/// What the relax-and-fix heuristic learned about a level at its LP bound.
enum Heuristic {
    /// A master solution reaching the bound (so it is optimal for the level).
    Found(MasterSolution),
    /// Even with continuous copy counts the bound is out of reach: the level is ≥ bound + 1.
    Impossible,
    /// Nothing proven.
    Unknown,
}

/// Relax-and-fix at a level's LP bound `lower`: stage 1 solves the master with the copy
/// counts of aggregated groups continuous (instance counts and per-AZ copies stay integer),
/// which microlp does in few nodes; stage 2 fixes every component's copies per AZ to stage 1's
/// and solves the exact master. See `docs/formulation.md` ("Relax-and-fix").
fn relax_and_fix(
    facts: &Facts<'_>,
    layout: &Layout,
    goal: Goal,
    fixed: &[(Goal, f64)],
    limits: Limits,
    warm: Warm<'_>,
    lower: f64,
) -> Heuristic {
    let budget = Limits { node_limit: Some(limits.node_limit.unwrap_or(u64::MAX).min(HEURISTIC_NODES)), ..limits };
    // At most and at least the bound: the first solution found ends the solve.
    let relaxed = Extra { at_most: Some(lower), at_least: Some(lower), relax_copies: true, ..Extra::default() };
    let counts = match master::solve(facts, layout, goal, fixed, budget, Warm::None, relaxed) {
        Solved::Solution { solution, .. } => master::counts_from_tail(facts.problem, &solution.integers),
        // Stage 1 is a relaxation of the master: no solution there, none in the master.
        Solved::Infeasible => return Heuristic::Impossible,
        _ => None,
    };
    let Some(counts) = counts else { return Heuristic::Unknown };
    let restricted = Extra { at_most: Some(lower), at_least: Some(lower), counts: Some(&counts), ..Extra::default() };
    match master::solve(facts, layout, goal, fixed, budget, warm, restricted) {
        Solved::Solution { solution, .. } => Heuristic::Found(solution),
        _ => Heuristic::Unknown,
    }
}

/// The plan that seeds the search and that the result is never worse than: the greedy plan,
/// or greedy run with every pool type at priority 1 when that plan scores better on the real
/// objective. Priorities only rank plans, so the flat run's plan is feasible here too; it
/// helps where greedy's priority-first choices cost copies or money (e.g. a binding
/// MaxInstanceCount filled with small preferred instances).
///
/// The greedy plan obeys the deadline and cancellation the way [`crate::GreedyPlanner`] does (its
/// first pass always runs), but not the node limit, which counts solver nodes: so the exact plan
/// is never worse than the greedy planner's under the same limits, and never worse than
/// [`crate::plan_greedy`] unless a deadline or cancellation cut the warm start short. The flat
/// run is an extra and is skipped once a limit is hit. `passes` caps greedy's passes (each
/// run's), for the quick attempt's cheap warm start.
fn warm_plan(problem: &Problem, limits: &EngineLimits, passes: Option<u64>) -> Plan {
    let limits = match passes {
        Some(passes) => limits.without_node_limit().node_limit(passes),
        None => limits.without_node_limit(),
    };
    let greedy = crate::GreedyPlanner::new().limits(limits.clone()).plan(problem);
    let pool_priorities: std::collections::BTreeSet<u8> =
        problem.types.iter().map(|info| info.priority).filter(|&priority| priority <= 5).collect();
    if pool_priorities.len() < 2 || greedy.status == Status::Infeasible || limits.stop_now().is_some() {
        return greedy;
    }
    let mut flat = problem.clone();
    for info in &mut flat.types {
        if info.priority <= 5 {
            info.priority = 1;
        }
    }
    let flat_plan = crate::GreedyPlanner::new().limits(limits).plan(&flat);
    let candidate =
        finish(problem, SolverKind::Greedy, greedy.status, greedy.stop_reason.clone(), flat_plan.actions, None);
    if candidate.objective.better_than(&greedy.objective) && verify(problem, &candidate).is_empty() {
        candidate
    } else {
        greedy
    }
}

/// The warm start for the next solve: the greedy plan when it reaches every fixed level's
/// optimum (it is then feasible for the next level), else the previous level's solution.
fn warm_start<'a>(
    hint: Option<&'a (Hint, Objective)>,
    fixed: &[(Goal, f64)],
    last: Option<&'a MasterSolution>,
) -> Warm<'a> {
    if let Some((plan, objective)) = hint {
        let reaches = |&(goal, value): &(Goal, f64)| {
            let reached = match goal {
                Goal::Unplaced => -(objective.placed_copies as f64),
                Goal::Balance => objective.balance_excess as f64,
                Goal::Priority(priority) => f64::from(objective.instances_of_priority(priority)),
                Goal::Cost(_) => return false,
            };
            (reached - value).abs() < 0.5
        };
        if fixed.iter().all(reaches) {
            return Warm::Plan(plan);
        }
    }
    match last {
        Some(solution) => Warm::Previous(&solution.integers),
        None => Warm::None,
    }
}

fn stop_of(limit: Option<Limit>) -> StopReason {
    match limit {
        Some(Limit::Nodes) => StopReason::NodeLimit,
        _ => StopReason::TimeLimit,
    }
}

/// The proven lexicographic lower bound: the fixed levels, then the stopped level's solver
/// bound, then nothing (trivial bounds) for later levels.
fn lex_bound(facts: &Facts<'_>, fixed: &[(Goal, f64)], stopped: Option<(Goal, Option<f64>)>) -> Option<Objective> {
    let most_copies: u64 = facts.problem.components().iter().map(|c| u64::from(c.copy_count)).sum();
    let mut bound = Objective { placed_copies: most_copies, ..Objective::default() };
    let levels = fixed.iter().map(|&(goal, value)| (goal, Some(value))).chain(stopped);
    for (goal, value) in levels {
        let Some(value) = value else { break };
        match goal {
            Goal::Unplaced => bound.placed_copies = (-value + 1e-6).floor().max(0.0) as u64,
            Goal::Balance => bound.balance_excess = (value - 1e-6).ceil().max(0.0) as u64,
            Goal::Priority(priority) => {
                let count = (value - 1e-6).ceil().max(0.0) as u32;
                if count > 0 {
                    bound.instances_by_priority.insert(priority, count);
                }
            }
            Goal::Cost(mode) => {
                // One micro below the solver's value: the bound must not exceed the optimum.
                bound.cost_micros = (crate::plan::to_micros(value) - 1).max(0);
                bound.cost_unit = match mode {
                    CostMode::Priced => crate::plan::CostUnit::UsdPerHour,
                    CostMode::Units => crate::plan::CostUnit::Instances,
                };
            }
        }
    }
    Some(bound)
}

/// One instance of the plan being built.
struct Draft {
    type_index: usize,
    az_index: usize,
    existing: Option<usize>,
    reserved: bool,
    /// All copies at the end.
    copies: BTreeMap<usize, u32>,
    /// Copies placed by the plan.
    new_copies: BTreeMap<usize, u32>,
}

impl Draft {
    fn used(&self, problem: &Problem) -> Resources {
        problem.copies_footprint(self.type_index, &self.copies)
    }
}

/// Packs each group of a master solution and builds the actions; `Err` lists the groups that
/// did not pack into the instances the master problem gave them.
fn realize(
    problem: &Problem,
    facts: &Facts<'_>,
    solution: &MasterSolution,
    deadline: Option<Instant>,
) -> Result<Vec<Action>, Vec<Group>> {
    realize_with(problem, facts, solution, deadline, 0).map(|realized| realized.actions)
}

/// The actions of a packed master solution, and the groups that took spare instances to pack
/// (then the plan is feasible, not the master's optimum).
struct Realized {
    actions: Vec<Action>,
    loosened: Vec<Group>,
}

/// A plan from a master solution that does not pack exactly, with up to [`LOOSE_SPARE`] more
/// instances for each group that does not pack in the master's count (verified).
struct Loose {
    actions: Vec<Action>,
    objective: Objective,
}

/// Instances a loosely packed group may add to the master's count.
const LOOSE_SPARE: u32 = 2;

/// The master's aggregated groups are a relaxation of packing: a group may hold copies that no
/// packing fits into its instance count. The search then models the group instance by instance
/// (much larger), which may run out of time; this plan, packed with a spare instance or two and
/// verified, is what the planner returns then instead of the greedy plan, when it is better.
fn loose_plan(problem: &Problem, actions: Vec<Action>) -> Option<Loose> {
    let plan = finish(problem, SolverKind::Exact, Status::Feasible, StopReason::Completed, actions.clone(), None);
    verify(problem, &plan).is_empty().then_some(Loose { actions, objective: plan.objective })
}

/// [`realize`], letting a group that does not pack into the master's instance count take up
/// to `spare` more instances (a feasible plan then, not the master's optimum).
fn realize_with(
    problem: &Problem,
    facts: &Facts<'_>,
    solution: &MasterSolution,
    deadline: Option<Instant>,
    spare: u32,
) -> Result<Realized, Vec<Group>> {
    let types = problem.instance_types();
    let mut loosened = Vec::new();
    let mut drafts = existing_drafts(problem, solution);
    let mut failed = Vec::new();
    for (&(t, z), &launches) in &solution.launches {
        let Some(info) = types.get(t.index()) else { continue };
        let bins: Vec<Vec<(usize, u32)>> = if let Some(bins) = solution.slot_bins.get(&(t, z)) {
            bins.clone()
        } else {
            let items: Vec<(usize, u32, Resources)> = solution
                .group_copies
                .get(&(t, z))
                .map(|list| {
                    list.iter()
                        .filter_map(|&(c, n)| {
                            let component = problem.components().get(c)?;
                            master::eligible_need(problem, component, t.index(), &info.capacity)
                                .map(|need| (c, n, need))
                        })
                        .collect()
                })
                .unwrap_or_default();
            let packed = (0..=spare).find_map(|more| {
                match pack_group(&items, (launches + more) as usize, info.capacity, PACKING_BUDGET, deadline) {
                    Packing::Packed(bins) => Some((more, bins)),
                    Packing::Impossible | Packing::Unknown => None,
                }
            });
            if packed.as_ref().is_some_and(|&(more, _)| more > 0) {
                loosened.push((t, z));
            }
            match packed {
                Some((_, bins)) => bins
                    .into_iter()
                    .map(|bin| {
                        let mut counts: BTreeMap<usize, u32> = BTreeMap::new();
                        for c in bin {
                            *counts.entry(c).or_insert(0) += 1;
                        }
                        counts.into_iter().collect()
                    })
                    .collect(),
                None => {
                    failed.push((t, z));
                    continue;
                }
            }
        };
        let reserved = problem.launch_limit(t, z).reserved;
        for index in 0..(launches as usize).max(bins.len()) {
            let copies: BTreeMap<usize, u32> =
                bins.get(index).map(|bin| bin.iter().copied().collect()).unwrap_or_default();
            drafts.push(Draft {
                type_index: t.index(),
                az_index: z.index(),
                existing: None,
                reserved: (index as u64) < u64::from(reserved),
                new_copies: copies.clone(),
                copies,
            });
        }
    }
    // Groups the master problem left empty must not have copies.
    for (&group, list) in &solution.group_copies {
        if !solution.launches.contains_key(&group) && list.iter().any(|&(_, n)| n > 0) {
            failed.push(group);
        }
    }
    if !failed.is_empty() {
        // Every group that does not pack into the master's count, spare or not.
        failed.extend(loosened);
        failed.sort_unstable();
        failed.dedup();
        return Err(failed);
    }
    let _ = facts;
    if drafts.len() <= SMALL_SPREAD_REPAIR {
        spread_repair(problem, &mut drafts);
    } else {
        let azs: Vec<usize> = (0..problem.azs().len()).collect();
        spread_balance(problem, &mut drafts, &azs);
    }
    Ok(Realized { actions: actions_of(problem, &drafts), loosened })
}

/// The existing instances a master solution keeps, with the copies it removes and adds.
fn existing_drafts(problem: &Problem, solution: &MasterSolution) -> Vec<Draft> {
    let mut drafts: Vec<Draft> = Vec::new();
    for (i, instance) in problem.fleet().iter().enumerate() {
        if !solution.keep.get(i).copied().unwrap_or(true) {
            continue;
        }
        let mut copies: BTreeMap<usize, u32> = instance.copies.iter().copied().collect();
        for (&(c, at), &n) in &solution.remove {
            if at == i {
                if let Some(count) = copies.get_mut(&c) {
                    *count = count.saturating_sub(n);
                }
            }
        }
        let mut new_copies = BTreeMap::new();
        for (&(c, at), &n) in &solution.add {
            if at == i {
                *copies.entry(c).or_insert(0) += n;
                new_copies.insert(c, n);
            }
        }
        copies.retain(|_, count| *count > 0);
        drafts.push(Draft {
            type_index: instance.type_index,
            az_index: instance.az_index,
            existing: Some(i),
            reserved: instance.reserved,
            copies,
            new_copies,
        });
    }
    drafts
}

/// Moves new copies of SPREAD components within an AZ from an instance holding two or more
/// than another eligible instance with room, until no such pair is left. Instances, AZs and
/// counts do not change, so L1–L4 do not either; Σ count² falls with each move, so it ends.
fn spread_repair(problem: &Problem, drafts: &mut [Draft]) {
    let types = problem.instance_types();
    for _ in 0..100_000 {
        let mut moved = false;
        'components: for (c, component) in problem.components().iter().enumerate() {
            if component.strategy != PlacementStrategy::Spread {
                continue;
            }
            for heavy in 0..drafts.len() {
                let heavy_count = drafts[heavy].copies.get(&c).copied().unwrap_or(0);
                if heavy_count < 2 || drafts[heavy].new_copies.get(&c).copied().unwrap_or(0) == 0 {
                    continue;
                }
                let light = (0..drafts.len()).find(|&light| {
                    let draft = &drafts[light];
                    let draining = draft.existing.and_then(|i| problem.fleet().get(i)).is_some_and(|e| e.draining);
                    !draining
                        && draft.az_index == drafts[heavy].az_index
                        && draft.copies.get(&c).copied().unwrap_or(0) + 2 <= heavy_count
                        && component.placement_requirement(problem, draft.type_index).is_some_and(|requirement| {
                            types.get(draft.type_index).is_some_and(|info| {
                                draft.used(problem).plus(&requirement.resources).fits_in(&info.capacity)
                            })
                        })
                });
                if let Some(light) = light {
                    for (map_owner, delta) in [(heavy, false), (light, true)] {
                        let draft = &mut drafts[map_owner];
                        for map in [&mut draft.copies, &mut draft.new_copies] {
                            let entry = map.entry(c).or_insert(0);
                            if delta {
                                *entry += 1;
                            } else {
                                *entry = entry.saturating_sub(1);
                            }
                        }
                        draft.copies.retain(|_, n| *n > 0);
                        draft.new_copies.retain(|_, n| *n > 0);
                    }
                    moved = true;
                    break 'components;
                }
            }
        }
        if !moved {
            break;
        }
    }
}

/// Most drafts [`spread_repair`] handles; larger plans get [`spread_balance`]: the first repair
/// rescans every pair after each move (seconds on an AZ of a few hundred instances).
const SMALL_SPREAD_REPAIR: usize = 256;

/// Most passes of [`spread_balance`] over the components.
const SPREAD_PASSES: usize = 64;

/// The SPREAD repair for large plans: per AZ of `azs` and SPREAD component, moves a new copy
/// from the instance holding most (with a new copy) to the eligible instance with room holding
/// fewest, while they differ by two or more; again for every component until a pass moves
/// nothing (at most [`SPREAD_PASSES`]). Each move is linear in the AZ's instances, with the
/// resources they use kept up to date. Instances, AZs and counts do not change, so L1–L4 do
/// not either.
fn spread_balance(problem: &Problem, drafts: &mut [Draft], azs: &[usize]) {
    let mut used: Vec<Resources> = drafts.iter().map(|draft| draft.used(problem)).collect();
    let zones: Vec<Vec<usize>> = azs
        .iter()
        .map(|&az| (0..drafts.len()).filter(|&d| drafts.get(d).is_some_and(|draft| draft.az_index == az)).collect())
        .collect();
    let spread: Vec<usize> = (0..problem.components().len())
        .filter(|&c| {
            problem.components().get(c).is_some_and(|component| component.strategy == PlacementStrategy::Spread)
        })
        .collect();
    for _ in 0..SPREAD_PASSES {
        let mut moved = false;
        for zone in &zones {
            for &c in &spread {
                while let Some((heavy, light)) = spread_pair(problem, drafts, &used, zone, c) {
                    for (owner, add) in [(heavy, false), (light, true)] {
                        let Some(draft) = drafts.get_mut(owner) else { continue };
                        for map in [&mut draft.copies, &mut draft.new_copies] {
                            let entry = map.entry(c).or_insert(0);
                            *entry = if add { *entry + 1 } else { entry.saturating_sub(1) };
                            map.retain(|_, n| *n > 0);
                        }
                        if let Some(slot) = used.get_mut(owner) {
                            *slot = draft.used(problem);
                        }
                    }
                    moved = true;
                }
            }
        }
        if !moved {
            break;
        }
    }
}

/// For [`spread_balance`]: the instance of `zone` holding most copies of `c` (one of them new)
/// and the eligible, not draining one with room holding fewest, when they differ by two or more.
fn spread_pair(
    problem: &Problem,
    drafts: &[Draft],
    used: &[Resources],
    zone: &[usize],
    c: usize,
) -> Option<(usize, usize)> {
    let count = |d: usize| drafts.get(d).map_or(0, |draft| draft.copies.get(&c).copied().unwrap_or(0));
    let heavy = zone
        .iter()
        .copied()
        .filter(|&d| drafts.get(d).is_some_and(|draft| draft.new_copies.contains_key(&c)))
        .max_by_key(|&d| (count(d), std::cmp::Reverse(d)))?;
    if count(heavy) < 2 {
        return None;
    }
    let component = problem.components().get(c)?;
    let light = zone
        .iter()
        .copied()
        .filter(|&d| count(d) + 2 <= count(heavy))
        .filter(|&d| {
            let (Some(draft), Some(used)) = (drafts.get(d), used.get(d)) else { return false };
            let draining = draft.existing.and_then(|i| problem.fleet().get(i)).is_some_and(|e| e.draining);
            let room = component.placement_requirement(problem, draft.type_index).is_some_and(|requirement| {
                problem
                    .instance_types()
                    .get(draft.type_index)
                    .is_some_and(|info| used.plus(&requirement.resources).fits_in(&info.capacity))
            });
            !draining && room
        })
        .min_by_key(|&d| (count(d), d))?;
    Some((heavy, light))
}

/// Actions that lead from the current fleet to the drafted one.
fn actions_of(problem: &Problem, drafts: &[Draft]) -> Vec<Action> {
    let types = problem.instance_types();
    let components = problem.components();
    let mut actions = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    let mut launched = 0usize;
    let taken: BTreeSet<&str> =
        problem.fleet().iter().map(|instance| instance.id.as_str()).filter(|id| id.starts_with("new-")).collect();
    for draft in drafts {
        match draft.existing.and_then(|i| problem.fleet().get(i)) {
            Some(instance) => ids.push(instance.id.clone()),
            None => {
                // An existing instance may carry a `new-N` id (a fleet observed after an earlier
                // plan kept its ids): skip such numbers, as the greedy planner does.
                let id = loop {
                    launched += 1;
                    let candidate = format!("new-{launched}");
                    if !taken.contains(candidate.as_str()) {
                        break candidate;
                    }
                };
                actions.push(Action::LaunchInstance {
                    instance_id: id.clone(),
                    instance_type: types.get(draft.type_index).map(|info| info.name.clone()).unwrap_or_default(),
                    availability_zone: problem.azs().get(draft.az_index).cloned().unwrap_or_default(),
                    reserved: draft.reserved,
                });
                ids.push(id);
            }
        }
    }
    for (draft, id) in drafts.iter().zip(&ids) {
        for (&c, &count) in &draft.new_copies {
            let Some(component) = components.get(c) else {
                continue;
            };
            let model_name =
                component.placement_requirement(problem, draft.type_index).and_then(|r| r.model_name.clone());
            for _ in 0..count {
                actions.push(Action::PlaceCopy {
                    component: component.name.clone(),
                    instance_id: id.clone(),
                    model_name: model_name.clone(),
                });
            }
        }
    }
    // The draft of each kept existing instance, found once (a scan per instance is quadratic).
    let mut draft_of_existing: Vec<Option<usize>> = vec![None; problem.fleet().len()];
    for (position, draft) in drafts.iter().enumerate() {
        if let Some(slot) = draft.existing.and_then(|i| draft_of_existing.get_mut(i)) {
            slot.get_or_insert(position);
        }
    }
    for (i, instance) in problem.fleet().iter().enumerate() {
        let draft = draft_of_existing.get(i).copied().flatten();
        let final_copies = draft.and_then(|position| drafts.get(position)).map(|draft| &draft.copies);
        for &(c, count) in &instance.copies {
            let left = final_copies.and_then(|copies| copies.get(&c)).copied().unwrap_or(0);
            let Some(component) = components.get(c) else {
                continue;
            };
            for _ in left..count {
                actions
                    .push(Action::RemoveCopy { component: component.name.clone(), instance_id: instance.id.clone() });
            }
        }
        if draft.is_none() {
            actions.push(Action::TerminateInstance { instance_id: instance.id.clone() });
        }
    }
    actions
}
