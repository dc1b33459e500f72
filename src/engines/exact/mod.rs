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
mod deepening;
mod lns;
mod master;
mod packing;
mod patterns;
mod portfolio;
mod realize;
mod search;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::engines::contract::{problem_engine, Engine};
use crate::engines::finish;
use crate::engines::limits::{Limits as EngineLimits, Stats};
use crate::engines::polish;
use crate::plan::{Action, Objective, Plan, SolverKind, Status, StopReason};
use crate::problem::Problem;
use crate::verify::verify;

use backend::{Microlp, MipBackend};
use master::{Hint, Limits};
use search::{Outcome, Search};

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

/// Most copies a window of the large-neighbourhood phase's second thread frees in its first
/// round (the first thread's: [`lns::FIRST_WINDOW_COPIES`]): smaller windows are solved faster,
/// and the two threads try different neighbourhoods of the same plan.
const HELPER_FIRST_WINDOW_COPIES: u64 = 40;

/// Inputs with at least this many copies leave part of the time limit to the
/// large-neighbourhood phase: the search seldom proves them within it.
const LNS_RESERVE_MIN_COPIES: u64 = 1_000;

/// The search's share (per cent) of the time left after the warm start on such inputs.
const SEARCH_SHARE_PERCENT: u32 = 60;

/// The search's share (per cent) of a later stage of the time ladder (the 10 s stage of the
/// command line's default) on smaller inputs; the rest goes to the large-neighbourhood phase.
/// The stage starts from the best plan of the stages before, which a search already had a go
/// at: with nearly all of the stage (the share before) the search seldom improved it, and the
/// phase, left a second, found what it could not (docs/sweep.md, session of 2026-12-07, third).
const LATER_STAGE_SEARCH_SHARE_PERCENT: u32 = 50;

/// Share of the time limit kept, after the search, for the polish of a plan it did not prove
/// (insertion and balance chains, the large-neighbourhood phase, retyping and emptying
/// launches): the polish runs before the deadline instead of after it, and the plan comes back
/// within the limit.
const POLISH_SHARE_PERCENT: u32 = 15;

/// The most time kept for the polish ([`POLISH_SHARE_PERCENT`]).
const POLISH_RESERVE_MAX: Duration = Duration::from_millis(500);

/// The exact planner's time limit when its [`Limits`](crate::Limits) set no time limit, deadline
/// or node limit (`ExactPlanner::new()`): 10 s, the command line's default too.
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(10);

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
    /// Whether a node-limited run without a deadline deepens (`deepening.rs`); off for its own
    /// runs and for the large-neighbourhood phase's windows.
    deepening: bool,
    /// A second backend run beside `backend` on a second thread (`portfolio.rs`); the better
    /// verified plan wins.
    beside: Option<Arc<dyn MipBackend>>,
    /// Whether a run under a deadline plans in stages of doubling length (`deepening.rs`).
    time_ladder: bool,
    /// Whether a verified seed replaces the greedy warm start (the time ladder's later stages,
    /// whose seed is already at least as good as greedy's plan).
    seed_replaces_warm_start: bool,
    /// Most threads a call runs on (`None`: two when the machine has two cores or more).
    threads: Option<usize>,
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
            deepening: true,
            beside: None,
            time_ladder: true,
            seed_replaces_warm_start: false,
            threads: None,
        }
    }
}

/// Plans with the exact planner and its defaults: [`ExactPlanner::new`]`().plan(problem)`, so at
/// most [`ExactPlanner::DEFAULT_TIME_LIMIT`] (10 s). The plan is never worse than the greedy
/// plan and is `Optimal` when the search proved it.
///
/// ```
/// use fleetplan::{plan_exact, plan_greedy, verify, Problem};
/// # let problem = Problem::from_json(include_str!("../../../scenarios/seed-az-balance.json")).unwrap();
/// let plan = plan_exact(&problem);
/// assert!(verify(&problem, &plan).is_empty());
/// assert!(!plan_greedy(&problem).objective.better_than(&plan.objective));
/// ```
pub fn plan_exact(problem: &Problem) -> Plan {
    ExactPlanner::new().plan(problem)
}

problem_engine!(ExactPlanner => Plan);

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
    ///
    /// Without a deadline the run deepens: it plans under 1, 2, 4, … nodes up to the largest
    /// power of two not above `nodes`, each run starting from the best plan of the one before,
    /// so a larger node limit never gives a worse plan.
    pub fn node_limit(mut self, nodes: u64) -> Self {
        self.limits = self.limits.clone().node_limit(nodes);
        self
    }

    /// The shared engine [`Limits`](crate::Limits): a time limit per call (or an absolute
    /// deadline), a node limit per solver call and a cancellation check (looked at between
    /// solver time slices of at most 10 ms). Each field `limits` sets replaces the one set before
    /// ([`Limits::merged`](crate::Limits::merged)); the others are kept.
    pub fn limits(mut self, limits: EngineLimits) -> Self {
        self.set_limits(limits);
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

    /// Also runs the planner with `backend` on a second thread, under the same limits and
    /// cancellation check, and keeps the better verified plan (ties: a proof, then this
    /// planner's own backend). No backend dominates another on every input — CBC proves
    /// endpoints microlp cannot reach within a limit, and microlp finds better plans than CBC on
    /// others — so a portfolio takes the best of both for the price of a second core. With node
    /// limits and no deadline both runs are deterministic, and so is the result.
    ///
    /// The call returns when both runs have ended (no thread outlives it), so a cancellation
    /// takes as long as the slower backend needs to see it: microlp within about 10 ms, a
    /// good_lp backend such as CBC only between its solver calls (after the level it is
    /// solving ends or hits its time limit).
    ///
    /// ```
    /// # use std::time::Duration;
    /// use fleetplan::{backend::{good_lp, GoodLp}, plan_greedy, ExactPlanner, Problem};
    /// # let problem = Problem::from_json(include_str!("../../../scenarios/seed-az-balance.json")).unwrap();
    /// let planner = ExactPlanner::new().node_limit(1_000).beside(GoodLp::new(good_lp::microlp));
    /// let plan = planner.plan(&problem);
    /// assert!(!plan_greedy(&problem).objective.better_than(&plan.objective));
    /// ```
    pub fn beside(mut self, backend: impl MipBackend + 'static) -> Self {
        self.beside = Some(Arc::new(backend));
        self
    }

    /// The name of the solver backend, e.g. `"microlp"`, or of both in a portfolio
    /// (`"microlp + cbc"`, see [`beside`](Self::beside)).
    pub fn backend_name(&self) -> String {
        match &self.beside {
            Some(beside) => format!("{} + {}", self.backend.name(), beside.name()),
            None => self.backend.name(),
        }
    }

    /// Whether a plan the search could not prove is improved window by window while time is
    /// left (default on): the large-neighbourhood phase of `docs/formulation.md`; the result
    /// stays `Feasible` unless it meets the proven bound. On inputs of 1,000 copies or more the search gets at most 60 %
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

    /// Whether a node-limited run without a deadline deepens (default on; see
    /// [`node_limit`](Self::node_limit)). Only for measurements: off, a larger node limit can
    /// give a worse plan.
    #[doc(hidden)]
    pub fn deepening(mut self, on: bool) -> Self {
        self.deepening = on;
        self
    }

    /// Plans a run under a deadline over 1 s in stages (default on): first exactly the run a
    /// 1 s limit gets, then stages that end 10 s, 20 s, 40 s, … after the start, each starting from
    /// the best plan so far and scheduled as if it had its whole length; the deadline only cuts
    /// the last one short. A run with a later deadline therefore goes through the same stages,
    /// so up to the machine's timing it never returns a worse plan than a run with an earlier
    /// deadline of 1 s or more, which a single run, whose phases stretch with the limit, does
    /// not promise. Off, the whole limit is one run (a limit of 1 s or less always is).
    /// Node-limited runs without a deadline deepen instead ([`node_limit`](Self::node_limit)).
    pub fn time_ladder(mut self, on: bool) -> Self {
        self.time_ladder = on;
        self
    }

    /// Most threads a [`plan`](Self::plan) call runs on, at least 1 (default: two when the
    /// machine has two cores or more, else one). With two, the greedy warm start's run with
    /// flattened priorities goes beside its priority run, and under a deadline the
    /// large-neighbourhood phase improves the warm start beside the search (the better plan goes
    /// on) and after the search runs on both threads, sharing its best plan (docs/formulation.md,
    /// "Two threads"). One keeps all of a call on the
    /// caller's thread (a portfolio's second backend, [`beside`](Self::beside), still has its
    /// own; each backend's run is then one thread). Node-limited runs without a deadline are
    /// deterministic either way.
    ///
    /// ```
    /// # use std::time::Duration;
    /// use fleetplan::{plan_greedy, verify, ExactPlanner, Problem};
    /// # let problem = Problem::from_json(include_str!("../../../scenarios/seed-az-balance.json")).unwrap();
    /// let plan = ExactPlanner::new().threads(1).time_limit(Duration::from_millis(500)).plan(&problem);
    /// assert!(verify(&problem, &plan).is_empty());
    /// assert!(!plan_greedy(&problem).objective.better_than(&plan.objective));
    /// ```
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads.max(1));
        self
    }

    /// Whether this call may use a second thread ([`threads`](Self::threads)).
    fn parallel(&self) -> bool {
        match self.threads {
            Some(threads) => threads >= 2,
            None => std::thread::available_parallelism().is_ok_and(|cores| cores.get() >= 2),
        }
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

    /// [`plan`](Self::plan), with what the search did. Runs on the problem in canonical order
    /// (as the greedy planner does), so the order of the input does not steer the search.
    pub fn plan_with_stats(&self, problem: &Problem) -> (Plan, Stats) {
        super::in_canonical_order(problem, |problem| self.plan_canonical(problem))
    }

    /// [`Self::plan_with_stats`] on a problem in canonical order.
    fn plan_canonical(&self, problem: &Problem) -> (Plan, Stats) {
        if let Some(portfolio) = self.plan_by_portfolio(problem) {
            return portfolio;
        }
        if let Some(deepened) = self.plan_by_deepening(problem) {
            return deepened;
        }
        if let Some(staged) = self.plan_by_time_ladder(problem) {
            return staged;
        }
        let limits = self.effective_limits();
        let polish_reserve = limits
            .time_left()
            .map_or(Duration::ZERO, |left| (left * POLISH_SHARE_PERCENT / 100).min(POLISH_RESERVE_MAX));
        let mut stats = Stats::default();
        let quick = match self.quick_proof(problem, &limits, &mut stats) {
            Quick::Proven(plan) => return (plan, stats),
            Quick::Unproven(plan) => Some(plan),
            Quick::Nothing => None,
        };
        let phase = Instant::now();
        let greedy = match self.seed_plan(problem).filter(|_| self.seed_replaces_warm_start) {
            Some(seed) => seed,
            None => {
                stats.solves += 1;
                self.seeded(problem, warm_plan(problem, &limits, None, self.parallel()))
            }
        };
        stats.phase("warm start (greedy)", phase);
        // The best verified plan so far is the floor of the result and the search's warm start:
        // a longer run must not lose what its quick attempt found.
        let start = match quick {
            Some(plan) if greedy.status != Status::Infeasible && plan.objective.better_than(&greedy.objective) => plan,
            _ => greedy,
        };
        if let Some(stop) = limits.stop_now() {
            return (stopped_before_search(problem, start, stop), stats);
        }
        let phase = Instant::now();
        let start_valid = verify(problem, &start).is_empty();
        stats.phase("verify warm start", phase);
        // The packing bounds may already prove the warm start: then there is nothing to search.
        if start_valid && start.status != Status::Infeasible {
            let phase = Instant::now();
            let bound = bounds::complete(problem, None);
            stats.phase("packing bounds", phase);
            if bound.key() == start.objective.key() {
                let plan =
                    finish(problem, SolverKind::Exact, Status::Optimal, StopReason::Completed, start.actions, None);
                return (plan, stats);
            }
        }
        // The start plan seeds every level whose earlier optima it reaches.
        let hint = start_valid.then(|| (Hint::from_actions(problem, &start.actions), start.objective.clone()));
        let phase = Instant::now();
        let search_limits = self.search_engine_limits(problem, &ending_early(&limits, polish_reserve));
        let (outcome, beside) =
            self.search_beside_neighbourhood(problem, &search_limits, hint.as_ref(), &start, start_valid, &mut stats);
        stats.phase("search", phase);
        let phase = Instant::now();
        let plan = plan_of_outcome(problem, outcome, &start, start_valid, &limits);
        let plan = match beside {
            Some(found) => with_plan_found_beside(problem, plan, found),
            None => plan,
        };
        stats.phase("verify result", phase);
        let plan = self.improve_unproven(problem, plan, &limits, polish_reserve, &mut stats);
        (plan, stats)
    }

    /// A short first attempt, only under a deadline: a cheap warm start (greedy with a few
    /// passes) and the search for a slice of the time. Most small and mid-sized endpoints are
    /// proven this way in a fraction of the time the full greedy warm start alone takes; the
    /// others go on as if it had not happened (the full greedy plan is the floor of every
    /// unproven result, so the cheap warm start can never make a result worse than greedy's).
    /// Node-limited runs without a deadline skip it and stay deterministic.
    fn quick_proof(&self, problem: &Problem, limits: &EngineLimits, stats: &mut Stats) -> Quick {
        let Some(deadline) = limits.deadline_at() else { return Quick::Nothing };
        if self.slot_model || self.quick_slice.is_zero() || limits.stop_now().is_some() {
            return Quick::Nothing;
        }
        let started = Instant::now();
        // A fixed length (half the time under 200 ms): the schedule does not stretch with the
        // limit, so what a short limit does is also done, at the same times, under a longer one.
        let slice = deadline.saturating_duration_since(started).div_f64(QUICK_SHARE).min(self.quick_slice);
        let quick = limits.clone().deadline(started + slice);
        let warm = self.seeded(problem, warm_plan(problem, &quick, Some(QUICK_WARM_PASSES), self.parallel()));
        stats.solves += 1;
        let plan = if warm.status != Status::Infeasible && verify(problem, &warm).is_empty() {
            self.quick_search(problem, &quick, warm, stats)
        } else {
            Quick::Nothing
        };
        stats.phase("quick attempt", started);
        plan
    }

    /// The search of [`Self::quick_proof`] from a verified warm start: a proven plan, else the
    /// best verified plan it reached (the warm start's when the search found nothing better).
    fn quick_search(&self, problem: &Problem, quick: &EngineLimits, warm: Plan, stats: &mut Stats) -> Quick {
        let checked = |actions: Vec<Action>, status: Status| {
            let plan = finish(problem, SolverKind::Exact, status, StopReason::Completed, actions, None);
            (verify(problem, &plan).is_empty() && !warm.objective.better_than(&plan.objective)).then_some(plan)
        };
        if bounds::complete(problem, None).key() == warm.objective.key() {
            return checked(warm.actions.clone(), Status::Optimal).map_or(Quick::Nothing, Quick::Proven);
        }
        let hint = (Hint::from_actions(problem, &warm.actions), warm.objective.clone());
        let found = match self.search_within(problem, quick, Some(&hint), stats) {
            Outcome::Plan { actions, proven: true, .. } => {
                return checked(actions, Status::Optimal).map_or(Quick::Nothing, Quick::Proven)
            }
            Outcome::Plan { actions, proven: false, .. } => checked(actions, Status::Feasible),
            _ => None,
        };
        Quick::Unproven(found.unwrap_or(warm))
    }

    /// The search under `search_limits`, and beside it, on a second thread when this call may
    /// use one ([`threads`](Self::threads)), the large-neighbourhood phase improving `start`
    /// (a verified, unproven plan) until the search ends: the search alone leaves the second
    /// core idle, and on the larger endpoints the phase finds what the search does not, the
    /// search what the phase does not (docs/formulation.md, "Two threads"). Only under a
    /// deadline (the phase needs one to share its time) and with the phase on. Returns the
    /// search's outcome and the phase's plan, if it ran.
    fn search_beside_neighbourhood(
        &self,
        problem: &Problem,
        search_limits: &EngineLimits,
        hint: Option<&(Hint, Objective)>,
        start: &Plan,
        start_valid: bool,
        stats: &mut Stats,
    ) -> (Outcome, Option<Plan>) {
        let beside = self.parallel()
            && self.large_neighbourhood
            && start_valid
            && start.status == Status::Feasible
            && search_limits.deadline_at().is_some();
        if !beside {
            return (self.search_within(problem, search_limits, hint, stats), None);
        }
        let search_ended = Arc::new(AtomicBool::new(false));
        let phase_limits = {
            let (outer, ended) = (search_limits.clone(), Arc::clone(&search_ended));
            search_limits.clone().cancel_when(move || outer.cancelled() || ended.load(Ordering::Relaxed))
        };
        // One thread for the phase: its windows' warm starts stay on it.
        let phase_planner = ExactPlanner { threads: Some(1), ..self.clone() };
        let (outcome, phase_run) = std::thread::scope(|scope| {
            let handle = scope.spawn(|| {
                let mut phase_stats = Stats::default();
                let plan = phase_planner.improve_unproven(
                    problem,
                    start.clone(),
                    &phase_limits,
                    Duration::ZERO,
                    &mut phase_stats,
                );
                (plan, phase_stats)
            });
            let outcome = self.search_within(problem, search_limits, hint, stats);
            search_ended.store(true, Ordering::Relaxed);
            // A panic in the phase loses only its plan.
            (outcome, handle.join().ok())
        });
        let (plan, phase_stats) = phase_run.unzip();
        if let Some(phase_stats) = phase_stats {
            stats.absorb_labelled("beside the search", phase_stats);
        }
        (outcome, plan)
    }

    /// [`Search::run`] through the instrumented backend under `limits` (its solver calls
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
        let full = Limits { deadline: limits.deadline_at(), node_limit: limits.nodes() };
        let outcome = Search::new(self, problem, &backend, hint, full).run();
        stats.solves += backend.solves.load(Ordering::Relaxed);
        stats.nodes += backend.nodes.load(Ordering::Relaxed);
        outcome
    }

    /// The seed's plan when there is one, it verifies and greedy's is not better.
    fn seeded(&self, problem: &Problem, greedy: Plan) -> Plan {
        match self.seed_plan(problem) {
            Some(plan) if greedy.status != Status::Infeasible && !greedy.objective.better_than(&plan.objective) => plan,
            _ => greedy,
        }
    }

    /// The seed's plan when there is one and it verifies.
    fn seed_plan(&self, problem: &Problem) -> Option<Plan> {
        let actions = self.seed.as_ref()?;
        let plan = finish(problem, SolverKind::Greedy, Status::Feasible, StopReason::Completed, actions.clone(), None);
        verify(problem, &plan).is_empty().then_some(plan)
    }

    /// The limits of the search: when the large-neighbourhood phase is on and there is a
    /// deadline, on large inputs [`SEARCH_SHARE_PERCENT`] of the time left, in a later stage of
    /// the time ladder [`LATER_STAGE_SEARCH_SHARE_PERCENT`]; the rest is the phase's.
    fn search_engine_limits(&self, problem: &Problem, limits: &EngineLimits) -> EngineLimits {
        let copies: u64 = problem.components().iter().map(|component| u64::from(component.copy_count)).sum();
        let percent = if copies >= LNS_RESERVE_MIN_COPIES {
            Some(SEARCH_SHARE_PERCENT)
        } else {
            self.seed_replaces_warm_start.then_some(LATER_STAGE_SEARCH_SHARE_PERCENT)
        };
        match (limits.time_left(), percent) {
            (Some(left), Some(percent)) if self.large_neighbourhood => {
                let share = left * percent / 100;
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
    /// cancellation did (a solver or internal error is kept). Everything but the last polish
    /// ([`retyped`]) ends half of `reserve` before the deadline; that polish ends at it.
    fn improve_unproven(
        &self,
        problem: &Problem,
        plan: Plan,
        limits: &EngineLimits,
        reserve: Duration,
        stats: &mut Stats,
    ) -> Plan {
        if plan.status != Status::Feasible {
            return plan;
        }
        let (last_polish, limits) = (limits, &ending_early(limits, reserve / 2));
        // Balance moves at fixed instances first: cheap, and L2 is what a search stopped in
        // L1 never optimised.
        let phase = Instant::now();
        // Copies left unplaced first (L1): insertion chains, balance moves after them.
        let plan = match polish::place_plan_missing(problem, &plan, limits)
            .or_else(|| polish::lower_plan_excess(problem, &plan, limits))
        {
            Some(better) => mark_if_proven(better),
            None => plan,
        };
        stats.phase("balance moves", phase);
        if !self.large_neighbourhood || plan.status != Status::Feasible || limits.stop_now().is_some() {
            return retyped(problem, plan, last_polish, stats);
        }
        let phase = Instant::now();
        let (mut plan, progress) = self.neighbourhoods(problem, plan, limits, stats);
        stats.neighbourhoods += progress.windows;
        stats.improvements += progress.improvements;
        if meets_bound(&plan) {
            plan.status = Status::Optimal;
            plan.bound = None;
        } else if let Some(stop) = progress.stopped {
            // A solver or internal error stays reported: it is what the caller must see.
            if !matches!(plan.stop_reason, StopReason::SolverError(_) | StopReason::InternalError(_)) {
                plan.stop_reason = stop;
            }
        }
        stats.phase("large neighbourhood", phase);
        retyped(problem, plan, last_polish, stats)
    }

    /// The large-neighbourhood phase on `plan` (verified, unproven): on this thread alone, or,
    /// when this call may use a second thread and a deadline shares the time, on both, the
    /// second with smaller first windows ([`HELPER_FIRST_WINDOW_COPIES`]), each run going on
    /// from the other's plan when that is better (docs/formulation.md, "Two threads"). Returns
    /// the best plan of the two and what both did.
    fn neighbourhoods(
        &self,
        problem: &Problem,
        plan: Plan,
        limits: &EngineLimits,
        stats: &mut Stats,
    ) -> (Plan, lns::Progress) {
        if !self.parallel() || limits.deadline_at().is_none() {
            return lns::improve(self, problem, plan, limits, stats, lns::Crew::ALONE);
        }
        let best = Mutex::new(plan.clone());
        let own = lns::Crew { first_window_copies: lns::FIRST_WINDOW_COPIES, best: Some(&best) };
        let helper = lns::Crew { first_window_copies: HELPER_FIRST_WINDOW_COPIES, best: Some(&best) };
        // One thread per run: the windows' warm starts stay on it.
        let planner = ExactPlanner { threads: Some(1), ..self.clone() };
        let (mine, helper_run) = std::thread::scope(|scope| {
            let handle = scope.spawn(|| {
                let (mut helper_stats, started) = (Stats::default(), Instant::now());
                let (_, progress) = lns::improve(&planner, problem, plan.clone(), limits, &mut helper_stats, helper);
                helper_stats.phase("large neighbourhood", started);
                (progress, helper_stats)
            });
            let mine = lns::improve(&planner, problem, plan.clone(), limits, stats, own);
            // A panic in the helper loses only what it did not share.
            (mine, handle.join().ok())
        });
        let (mut found, mut progress) = mine;
        if let Some((helper_progress, helper_stats)) = helper_run {
            stats.absorb_labelled("second thread", helper_stats);
            progress.windows += helper_progress.windows;
            progress.improvements += helper_progress.improvements;
        }
        // The team's best was verified by the run that found it.
        if let Some(shared) = best.into_inner().ok().filter(|shared| shared.objective.better_than(&found.objective)) {
            found = shared;
        }
        (found, progress)
    }

    /// This call's limits: the time limit (or the default) armed now.
    fn effective_limits(&self) -> EngineLimits {
        self.limits.armed(Some(DEFAULT_TIME_LIMIT))
    }
}

/// `plan` with its balance excess lowered by moving new copies between AZs and launches with
/// their copies to other AZs where their type may still launch (L1 and L3 unchanged, L4 never
/// higher; the pass the exact planner runs on a plan it did not prove and after each kept
/// large-neighbourhood window); `None` unless the result verifies and is strictly better.
pub fn lower_balance_excess(problem: &Problem, plan: &Plan) -> Option<Plan> {
    polish::lower_plan_excess(problem, plan, &EngineLimits::new())
}

/// The search's plan, or `found` (the large-neighbourhood phase's, beside the search) when the
/// search proved nothing and `found` verifies and is strictly better: then with the search's
/// stop reason and bound (a lower bound holds for every plan), and `Optimal` if it meets it.
fn with_plan_found_beside(problem: &Problem, plan: Plan, found: Plan) -> Plan {
    if plan.status != Status::Feasible
        || !found.objective.better_than(&plan.objective)
        || !verify(problem, &found).is_empty()
    {
        return plan;
    }
    mark_if_proven(finish(problem, SolverKind::Exact, Status::Feasible, plan.stop_reason, found.actions, plan.bound))
}

/// `limits` with its deadline `reserve` earlier (unchanged without a deadline).
fn ending_early(limits: &EngineLimits, reserve: Duration) -> EngineLimits {
    match limits.deadline_at().and_then(|at| at.checked_sub(reserve)) {
        Some(at) => limits.clone().deadline(at),
        None => limits.clone(),
    }
}

/// The last polish of an unproven plan ([`polish::better_instances`]: launches moved up to
/// preferred types, then emptied), after the large-neighbourhood phase, so the phase starts from
/// the plan it always started from and this only ever improves its result.
fn retyped(problem: &Problem, plan: Plan, limits: &EngineLimits, stats: &mut Stats) -> Plan {
    if plan.status != Status::Feasible {
        return plan;
    }
    mark_if_proven(polish::better_instances(problem, plan, limits, stats))
}

/// Whether `plan`'s objective meets its reported bound: then nothing better exists and the plan
/// is proven (the one test every phase uses before it claims or stops at `Optimal`).
pub(super) fn meets_bound(plan: &Plan) -> bool {
    plan.bound.as_ref().is_some_and(|bound| bound.key() == plan.objective.key())
}

/// `plan` as `Optimal` when it meets its bound.
fn mark_if_proven(mut plan: Plan) -> Plan {
    if meets_bound(&plan) {
        plan.status = Status::Optimal;
        plan.bound = None;
    }
    plan
}

/// What the quick attempt gave.
enum Quick {
    /// A proven optimum: the answer.
    Proven(Plan),
    /// A verified plan without a proof, for the full run to start from and not fall below.
    Unproven(Plan),
    /// Nothing (no deadline, turned off, or no verified warm start).
    Nothing,
}

/// The plan a search outcome gives, checked: a found plan when it verifies and does not lose
/// to the start plan, else the start plan with the best bound known (`start_valid`: the start
/// plan passed [`verify`]).
fn plan_of_outcome(
    problem: &Problem,
    outcome: Outcome,
    start: &Plan,
    start_valid: bool,
    limits: &EngineLimits,
) -> Plan {
    // A cancelled search stops the way a deadline does; say which it was.
    let stop_named = |stop: StopReason| match stop {
        StopReason::TimeLimit if limits.cancelled() => StopReason::Cancelled,
        other => other,
    };
    let fallback = |stop: StopReason, bound: Option<Objective>| {
        // Always with an instance count (packing bounds fill in what the solver left open).
        let bound = Some(bounds::complete(problem, bound)).filter(|bound| bound.key() <= start.objective.key());
        let status =
            if bound.as_ref() == Some(&start.objective) && start_valid { Status::Optimal } else { Status::Feasible };
        let bound = if status == Status::Optimal { None } else { bound };
        finish(problem, SolverKind::Exact, status, stop_named(stop), start.actions.clone(), bound)
    };
    match outcome {
        Outcome::Infeasible => {
            finish(problem, SolverKind::Exact, Status::Infeasible, StopReason::Completed, start.actions.clone(), None)
        }
        Outcome::NoPlan { stop, bound } => fallback(stop, bound),
        Outcome::Plan { actions, proven, stop, bound } => {
            let bound = if proven { bound } else { Some(bounds::complete(problem, bound)) };
            let status = if proven { Status::Optimal } else { Status::Feasible };
            // A plan that meets the bound is optimal, whatever stopped the search.
            let plan = mark_if_proven(finish(
                problem,
                SolverKind::Exact,
                status,
                stop_named(stop.clone()),
                actions,
                if proven { None } else { bound.clone() },
            ));
            // Never trusted unverified, even past the deadline.
            let violations = verify(problem, &plan);
            if let Some(first) = violations.first() {
                fallback(StopReason::InternalError(format!("the exact plan failed verification: {first}")), None)
            } else if start_valid && start.objective.better_than(&plan.objective) {
                if proven {
                    fallback(StopReason::InternalError("the start plan beat a claimed optimum".to_string()), None)
                } else {
                    fallback(stop, bound)
                }
            } else {
                plan
            }
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

/// The bound the planner reports when it proves nothing: L1 at the most copies any plan can
/// place, L2 at the balance floor there, and the most preferred priority's instance count at
/// the packing bounds (trivial and Martello–Toth L2 per resource, MinInstanceCount). A valid
/// lexicographic lower bound on every plan's objective.
#[doc(hidden)]
pub fn packing_bound(problem: &Problem) -> Objective {
    bounds::complete(problem, None)
}

/// The least balance excess of any plan that places `placed` copies (existing ones included):
/// the L2 the planner's bounds carry at that L1 (see `bounds::balance_floor`). For tests.
#[doc(hidden)]
pub fn balance_floor_at(problem: &Problem, placed: u64) -> u64 {
    let most = bounds::most_final_copies(problem);
    let wanted: u64 = most.iter().sum();
    bounds::balance_floor(problem, &most, wanted.saturating_sub(placed))
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
/// run is an extra: on one thread (`parallel` false) it runs after the priority run and is
/// skipped once a limit is hit; otherwise it runs beside it, on a scoped thread, under the same
/// limits.
/// `passes` caps greedy's passes (each run's), for the quick attempt's cheap warm start.
fn warm_plan(problem: &Problem, limits: &EngineLimits, passes: Option<u64>, parallel: bool) -> Plan {
    let limits = match passes {
        Some(passes) => limits.without_node_limit().node_limit(passes),
        None => limits.without_node_limit(),
    };
    let priority_run = || crate::GreedyPlanner::new().priority_first_only().limits(limits.clone()).plan(problem);
    // No thread when there is no flat run (a pool of one priority).
    let Some(flat_problem) = parallel.then(|| crate::GreedyPlanner::flattened(problem)).flatten() else {
        return crate::GreedyPlanner::flat_if_better(&limits, problem, priority_run(), &mut Stats::default());
    };
    // Two cores: the flat run beside the priority run (each is deterministic on its own, so the
    // plan is the same as one after the other, up to what a deadline cuts), which takes about a
    // third of a 1 s limit's time off the warm start on large inputs (docs/formulation.md).
    let (greedy, flat) = std::thread::scope(|scope| {
        let flat = scope.spawn(|| crate::GreedyPlanner::flat_run(&limits, &flat_problem));
        let greedy = priority_run();
        // A panic in the flat run loses only its plan.
        (greedy, flat.join().ok())
    });
    crate::GreedyPlanner::better_of_flat(problem, greedy, flat, &mut Stats::default())
}

#[cfg(all(test, feature = "json"))]
mod tests {
    use super::*;

    fn problem() -> Problem {
        Problem::from_json(include_str!("../../../scenarios/seed-az-balance.json"))
            .unwrap_or_else(|error| panic!("{error}"))
    }

    /// The optimal plan, and a verified plan that places one copy fewer, stopped by the deadline
    /// with the optimum as its bound (what a search cut short may return).
    fn optimal_and_worse(problem: &Problem) -> (Plan, Plan) {
        let optimal = ExactPlanner::new().node_limit(10_000).threads(1).plan(problem);
        assert_eq!(optimal.status, Status::Optimal);
        let mut actions = optimal.actions.clone();
        let last_placement = actions.iter().rposition(|action| matches!(action, Action::PlaceCopy { .. }));
        actions.remove(last_placement.unwrap_or_else(|| panic!("the optimal plan places a copy")));
        let worse = finish(
            problem,
            SolverKind::Exact,
            Status::Feasible,
            StopReason::TimeLimit,
            actions,
            Some(optimal.objective.clone()),
        );
        assert_eq!(verify(problem, &worse), vec![]);
        assert!(optimal.objective.better_than(&worse.objective));
        (optimal, worse)
    }

    #[test]
    fn a_better_plan_found_beside_the_search_keeps_the_searchs_bound_and_is_optimal_when_it_meets_it() {
        let problem = problem();
        let (optimal, worse) = optimal_and_worse(&problem);
        let adopted = with_plan_found_beside(&problem, worse, optimal.clone());
        assert_eq!(adopted.actions, optimal.actions);
        assert_eq!(
            (adopted.status, adopted.stop_reason, adopted.bound),
            (Status::Optimal, StopReason::TimeLimit, None)
        );
    }

    #[test]
    fn a_plan_found_beside_the_search_that_is_no_better_or_does_not_verify_is_not_taken() {
        let problem = problem();
        let (optimal, worse) = optimal_and_worse(&problem);
        // Not better.
        let kept = with_plan_found_beside(&problem, optimal.clone(), worse.clone());
        assert_eq!(kept.actions, optimal.actions);
        // Better by its objective but not verified: every action twice (launch ids repeat).
        let mut doubled = optimal.clone();
        doubled.actions.extend(optimal.actions.clone());
        doubled.objective.placed_copies = u64::MAX;
        assert!(!verify(&problem, &doubled).is_empty());
        let kept = with_plan_found_beside(&problem, worse.clone(), doubled);
        assert_eq!((kept.actions, kept.status), (worse.actions, Status::Feasible));
    }
}
