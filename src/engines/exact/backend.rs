//! Solver backends for the exact planner.
//!
//! The planner writes each level of its integer program as a [`Mip`] (variables with bounds,
//! integrality and an objective coefficient; linear rows) and hands it to a [`MipBackend`]. Two
//! backends come with the crate:
//!
//! - [`Microlp`] (the default) calls [microlp](https://docs.rs/microlp) directly. It honours every
//!   part of a [`SolveRequest`] — time limit, node limit, relative gap, warm start — and reports
//!   the best proven bound when it stops early, which is what lets the planner return an honest
//!   `Bound` after a limit. A request with more than a second left is solved by microlp 0.7
//!   with its presolve (more optima at the CLI's default 10 s on large endpoints); the others,
//!   and every request without a clock (node limits only, the deterministic mode), by microlp
//!   0.6 (see `PRESOLVE_FROM`). Both are built from one source, `microlp_attempt.rs`, included
//!   once per version.
//! - [`GoodLp`] is generic over [`good_lp::Solver`], so any solver good_lp supports (its own
//!   microlp wrapper, CBC with the `cbc` feature, HiGHS, SCIP, …) can solve the same program.
//!   good_lp exposes a time limit, a warm start (as variables' initial values) and whether the
//!   answer is proven optimal, but no node limit and no best bound: with it, a level stopped by a
//!   limit has no proven bound, and node limits are not honoured (see [`Capabilities`]).
//!
//! A backend only solves; every answer is checked by the planner (levels are re-verified,
//! packed and the final plan passes `verify`), so a wrong backend can cost optimality but
//! never validity.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The [good_lp](https://docs.rs/good_lp) crate, re-exported so its solvers can be named
/// without adding the dependency (e.g. `good_lp::microlp`, or `good_lp::coin_cbc` with the
/// `cbc` feature).
pub use good_lp;

/// A variable of a [`Mip`]: its position in [`Mip::variables`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Var(usize);

impl Var {
    /// The variable's position, in creation order.
    pub fn index(self) -> usize {
        self.0
    }
}

/// One variable: bounds, integrality and objective coefficient.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MipVariable {
    /// Lower bound (may be `f64::NEG_INFINITY`).
    pub lower: f64,
    /// Upper bound (may be `f64::INFINITY`).
    pub upper: f64,
    /// Whether the variable must take an integer value.
    pub integer: bool,
    /// Coefficient in the objective, which is minimised.
    pub cost: f64,
}

/// The comparison of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sense {
    /// `Σ terms ≤ rhs`.
    AtMost,
    /// `Σ terms ≥ rhs`.
    AtLeast,
    /// `Σ terms = rhs`.
    Equal,
}

/// One linear row `Σ coefficient · variable (sense) rhs`.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Variables with their coefficients (a variable appears at most once per row as built by
    /// the planner, but backends must accept repeats and add them up).
    pub terms: Vec<(Var, f64)>,
    /// The comparison.
    pub sense: Sense,
    /// Right-hand side.
    pub rhs: f64,
}

/// A mixed-integer program: minimise `Σ cost · variable` subject to the rows and bounds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mip {
    variables: Vec<MipVariable>,
    rows: Vec<Row>,
}

impl Mip {
    /// An empty program.
    pub fn new() -> Mip {
        Mip::default()
    }

    /// Adds a continuous variable.
    pub fn add_var(&mut self, cost: f64, (lower, upper): (f64, f64)) -> Var {
        self.variables.push(MipVariable { lower, upper, integer: false, cost });
        Var(self.variables.len() - 1)
    }

    /// Adds an integer variable.
    pub fn add_integer_var(&mut self, cost: f64, (lower, upper): (i32, i32)) -> Var {
        self.variables.push(MipVariable { lower: f64::from(lower), upper: f64::from(upper), integer: true, cost });
        Var(self.variables.len() - 1)
    }

    /// Adds a row.
    pub fn add_row(&mut self, terms: Vec<(Var, f64)>, sense: Sense, rhs: f64) {
        self.rows.push(Row { terms, sense, rhs });
    }

    /// The variables, in creation order.
    pub fn variables(&self) -> &[MipVariable] {
        &self.variables
    }

    /// The rows, in creation order.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// The objective value of an assignment (one value per variable).
    pub fn objective_of(&self, values: &[f64]) -> f64 {
        self.variables.iter().zip(values).map(|(variable, value)| variable.cost * value).sum()
    }

    /// Checks an assignment against the program: one value per variable, bounds and
    /// integrality within `tolerance`, every row within `tolerance` (scaled by the row's size).
    /// Solvers do return integer variables at 0.5 with status "optimal" (CBC after a MIP start,
    /// for one), so the planner checks every answer before using it.
    pub fn check(&self, values: &[f64], tolerance: f64) -> Result<(), String> {
        if values.len() != self.variables.len() {
            return Err(format!("{} values for {} variables", values.len(), self.variables.len()));
        }
        for (index, (variable, &value)) in self.variables.iter().zip(values).enumerate() {
            if !value.is_finite() || value < variable.lower - tolerance || value > variable.upper + tolerance {
                return Err(format!("variable {index} = {value} outside [{}, {}]", variable.lower, variable.upper));
            }
            if variable.integer && (value - value.round()).abs() > tolerance {
                return Err(format!("integer variable {index} = {value}"));
            }
        }
        for (index, row) in self.rows.iter().enumerate() {
            let mut lhs = 0.0;
            let mut scale = row.rhs.abs().max(1.0);
            for &(var, coefficient) in &row.terms {
                let value = values.get(var.0).copied().unwrap_or(0.0);
                lhs += coefficient * value;
                scale = scale.max((coefficient * value).abs());
            }
            let slack = tolerance * scale;
            let holds = match row.sense {
                Sense::AtMost => lhs <= row.rhs + slack,
                Sense::AtLeast => lhs >= row.rhs - slack,
                Sense::Equal => (lhs - row.rhs).abs() <= slack,
            };
            if !holds {
                return Err(format!("row {index}: {lhs} {:?} {}", row.sense, row.rhs));
            }
        }
        Ok(())
    }
}

/// Longest microlp call between two looks at a [`SolveRequest::stop`] check: a cancellation
/// takes effect within this plus microlp's own deadline check (every 1,000 simplex pivots).
pub(crate) const SOLVE_SLICE: Duration = Duration::from_millis(10);

/// Tolerance of [`Mip::check`] on the planner's answers (integers are counts of copies and
/// instances, so anything further than this from an integer is a wrong answer, not noise).
pub(crate) const CHECK_TOLERANCE: f64 = 1e-6;

/// What the planner asks of one solve.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SolveRequest {
    /// Wall-clock budget for this solve.
    pub time_limit: Option<Duration>,
    /// Branch-and-bound nodes for this solve.
    pub node_limit: Option<u64>,
    /// Stop when `(incumbent − bound) / |incumbent|` is at most this (0 = prove optimality).
    pub mip_gap: f64,
    /// A known (possibly partial) assignment the solver may start from; it may be ignored, and
    /// an infeasible one must be.
    pub warm_start: Vec<(Var, f64)>,
    /// Set when the objective takes integer values at every node optimum and its absolute value
    /// never exceeds this: the backend may then stop as soon as the incumbent is within less
    /// than one unit of the best bound (that is a proof of optimality).
    pub integral_objective_bound: Option<f64>,
    /// The caller's request to stop (cancellation), to be checked every few milliseconds of
    /// work: a backend that sees it return true stops as at a time limit
    /// ([`Termination::TimeLimit`], with its incumbent and bound if any). `None`: nothing to
    /// check. A backend that cannot check it is still stopped between solver calls.
    pub stop: Option<StopCheck>,
}

/// A cheap check that says whether a solve should stop now (see [`SolveRequest::stop`]).
#[derive(Clone)]
pub struct StopCheck(Arc<dyn Fn() -> bool + Send + Sync>);

impl StopCheck {
    /// Wraps a check.
    pub fn new(check: impl Fn() -> bool + Send + Sync + 'static) -> StopCheck {
        StopCheck(Arc::new(check))
    }

    /// Whether the solve should stop now.
    pub fn should_stop(&self) -> bool {
        (self.0)()
    }
}

impl fmt::Debug for StopCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StopCheck")
    }
}

impl PartialEq for StopCheck {
    /// The same check (the same allocation), not the same answers.
    fn eq(&self, other: &StopCheck) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Why a solve stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Termination {
    /// The solution is proven optimal.
    Optimal,
    /// The relative gap of the request was reached.
    Gap,
    /// The time limit fired.
    TimeLimit,
    /// The node limit fired.
    NodeLimit,
}

/// A solution found by a backend.
#[derive(Debug, Clone, PartialEq)]
pub struct MipSolution {
    /// One value per variable of the [`Mip`].
    pub values: Vec<f64>,
    /// The objective value of `values`.
    pub objective: f64,
    /// Why the solve stopped: [`Termination::Optimal`] claims a proof.
    pub termination: Termination,
    /// The best proven lower bound on the objective, when the backend knows one.
    pub best_bound: Option<f64>,
    /// Branch-and-bound nodes the solve took (0 when the backend does not say).
    pub nodes: u64,
}

/// The result of one solve.
#[derive(Debug, Clone, PartialEq)]
pub enum MipOutcome {
    /// A solution (proven optimal or not, see [`MipSolution::termination`]).
    Solution(MipSolution),
    /// The program has no solution.
    Infeasible,
    /// A limit fired before any solution was found.
    Interrupted {
        /// Which limit.
        termination: Termination,
        /// The best proven lower bound so far, when known.
        best_bound: Option<f64>,
        /// Branch-and-bound nodes the solve took (0 when the backend does not say).
        nodes: u64,
    },
    /// The solver failed.
    Error(String),
}

/// What a backend honours; the planner adapts its strategy (e.g. node-limited probes are only
/// used when node limits are honoured).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Capabilities {
    /// [`SolveRequest::node_limit`] is honoured.
    pub node_limit: bool,
    /// A solve stopped early reports [`MipSolution::best_bound`].
    pub best_bound: bool,
}

/// A solver for the planner's integer programs.
pub trait MipBackend: fmt::Debug + Send + Sync {
    /// A short name for messages, e.g. `"microlp"`.
    fn name(&self) -> String;

    /// What this backend honours.
    fn capabilities(&self) -> Capabilities;

    /// Solves `mip` (minimisation) within the request's limits.
    fn solve(&self, mip: &Mip, request: &SolveRequest) -> MipOutcome;
}

/// Solves with more time left than this use microlp 0.7 with its presolve, the others (and every
/// solve without a clock: node limits only, the deterministic mode) microlp 0.6. The presolve
/// pays on large programs given seconds (more optima at the default 10 s), but costs up to a
/// second or two before the first node on them, which a budget of 1 s or less cannot spare; and
/// 0.6's node-limited search is the one the regression tests and node-limited runs rely on.
/// A run under the time ladder thus plans its first stage (1 s) as before and its later stages
/// with the presolve.
const PRESOLVE_FROM: Duration = Duration::from_secs(1);

/// The default backend: microlp called directly, with node limits, best bounds and warm starts.
#[derive(Debug, Clone, Copy, Default)]
pub struct Microlp;

impl MipBackend for Microlp {
    fn name(&self) -> String {
        "microlp".to_string()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { node_limit: true, best_bound: true }
    }

    fn solve(&self, mip: &Mip, request: &SolveRequest) -> MipOutcome {
        let attempt = if request.time_limit.is_some_and(|left| left > PRESOLVE_FROM) {
            microlp_presolve::solve_once
        } else {
            microlp_stable::solve_once
        };
        solve_with_retries(mip, request, |mip, request| guarded(|| attempt(mip, request)))
    }
}

/// `attempt`, a panic inside it caught: microlp panics where its own invariant checks fail
/// rather than answer wrongly. That is a failed attempt (retried, then a solver error the
/// planner falls back from), not a crash of the program that embeds the planner.
fn guarded(attempt: impl FnOnce() -> Attempt) -> Attempt {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(attempt))
        .unwrap_or_else(|payload| Attempt::Numerical(format!("microlp panicked: {}", panic_text(&*payload))))
}

/// The message of a caught panic, when it has one.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message")
}

/// One attempt at a solve: an answer, or a numerical failure worth another try.
#[derive(Debug, Clone, PartialEq)]
enum Attempt {
    /// The backend's answer (including errors no retry can fix, e.g. bounds it cannot hold).
    Done(MipOutcome),
    /// microlp failed inside (e.g. "Singular matrix" in an LU factorisation).
    Numerical(String),
}

/// Runs `attempt`; after a numerical failure runs it again on the same program written
/// differently: first without the warm start (microlp builds its first basis from it), then also
/// with the rows in reverse order (another pivot sequence and factorisation). Both are the same
/// program, so any answer is an answer to `mip` (and is checked against it by the planner);
/// the sequence is fixed, so results under a node limit stay deterministic. A time limit covers
/// all attempts together.
fn solve_with_retries(
    mip: &Mip,
    request: &SolveRequest,
    attempt: impl Fn(&Mip, &SolveRequest) -> Attempt,
) -> MipOutcome {
    let started = Instant::now();
    let mut failures: Vec<String> = Vec::new();
    let mut reversed: Option<Mip> = None;
    for round in 0..3 {
        let mut this = request.clone();
        if round > 0 {
            this.warm_start.clear();
            if let Some(limit) = request.time_limit {
                let left = limit.saturating_sub(started.elapsed());
                if left.is_zero() {
                    return MipOutcome::Interrupted { termination: Termination::TimeLimit, best_bound: None, nodes: 0 };
                }
                this.time_limit = Some(left);
            }
        }
        let program = if round == 2 {
            reversed.get_or_insert_with(|| {
                let mut copy = mip.clone();
                copy.rows.reverse();
                copy
            })
        } else {
            mip
        };
        match attempt(program, &this) {
            Attempt::Done(outcome) => return outcome,
            Attempt::Numerical(message) => failures.push(message),
        }
    }
    MipOutcome::Error(format!(
        "{} (also without the warm start, and with the rows reversed: {})",
        failures.first().map_or("numerical failure", String::as_str),
        failures.iter().skip(1).map(String::as_str).collect::<Vec<_>>().join("; ")
    ))
}

/// One microlp attempt with microlp 0.6: node-limited (deterministic) solves, whose search the
/// regression tests and the simulator's node-limited mode were measured with.
mod microlp_stable {
    use super::*;

    fn configure(_options: &mut microlp::SolveOptions) {}

    include!("microlp_attempt.rs");
}

/// One microlp attempt with microlp 0.7 and its presolve: solves with more than
/// [`PRESOLVE_FROM`] left.
mod microlp_presolve {
    use super::*;
    use microlp_next as microlp;

    fn configure(options: &mut microlp::SolveOptions) {
        options.presolve = true;
    }

    include!("microlp_attempt.rs");
}

/// Whether the objective a backend reported for `solution` is the objective of its values. microlp
/// can report an LP optimum that is not (seen on a small master LP: 93.98 for a solution worth
/// 1.5); the planner fixes levels at reported optima, so such an answer must never pass as one.
fn objective_agrees(mip: &Mip, solution: &MipSolution) -> bool {
    let worth = mip.objective_of(&solution.values);
    (solution.objective - worth).abs() <= OBJECTIVE_TOLERANCE * worth.abs().max(1.0)
}

/// Relative difference allowed between a reported objective and its recomputation (float sums
/// in another order).
const OBJECTIVE_TOLERANCE: f64 = 1e-6;

/// Integer bounds as microlp's `i32` pair, or `None` when out of range or empty.
fn integer_bounds(variable: &MipVariable) -> Option<(i32, i32)> {
    let lower = if variable.lower == f64::NEG_INFINITY { i32::MIN } else { f64_to_i32(variable.lower.ceil())? };
    let upper = if variable.upper == f64::INFINITY { i32::MAX } else { f64_to_i32(variable.upper.floor())? };
    (lower <= upper).then_some((lower, upper))
}

fn f64_to_i32(value: f64) -> Option<i32> {
    (f64::from(i32::MIN)..=f64::from(i32::MAX)).contains(&value).then_some(value as i32)
}

/// Any [good_lp](https://docs.rs/good_lp) solver as a backend, e.g. `GoodLp::new(good_lp::microlp)`
/// or, with the `cbc` feature, `GoodLp::new(good_lp::coin_cbc)`.
///
/// good_lp hides node limits and intermediate bounds, so with this backend a level stopped by
/// the time limit has no proven bound and [`SolveRequest::node_limit`] is ignored; a level it
/// answers with status `Optimal` counts as proven, as the solver claims. The warm start is
/// passed as the variables' initial values (solvers without warm starts ignore it).
#[derive(Clone, Copy)]
pub struct GoodLp<S> {
    solver: S,
}

impl<S> GoodLp<S> {
    /// Wraps a good_lp solver (a function such as `good_lp::microlp`).
    pub fn new(solver: S) -> GoodLp<S> {
        GoodLp { solver }
    }
}

impl<S: good_lp::Solver> fmt::Debug for GoodLp<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GoodLp({})", S::name())
    }
}

impl<S> MipBackend for GoodLp<S>
where
    S: good_lp::Solver + Clone + Send + Sync,
    S::Model: good_lp::solvers::WithTimeLimit + good_lp::SolverModel<Error = good_lp::ResolutionError>,
{
    fn name(&self) -> String {
        format!("good_lp/{}", S::name())
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { node_limit: false, best_bound: false }
    }

    fn solve(&self, mip: &Mip, request: &SolveRequest) -> MipOutcome {
        let outcome = self.solve_once(mip, request);
        match &outcome {
            // CBC returns fractional "optimal" answers after some MIP starts: try without one.
            MipOutcome::Solution(solution)
                if !request.warm_start.is_empty() && mip.check(&solution.values, CHECK_TOLERANCE).is_err() =>
            {
                let cold = SolveRequest { warm_start: Vec::new(), ..request.clone() };
                self.solve_once(mip, &cold)
            }
            _ => outcome,
        }
    }
}

impl<S> GoodLp<S>
where
    S: good_lp::Solver + Clone + Send + Sync,
    S::Model: good_lp::solvers::WithTimeLimit + good_lp::SolverModel<Error = good_lp::ResolutionError>,
{
    fn solve_once(&self, mip: &Mip, request: &SolveRequest) -> MipOutcome {
        use good_lp::solvers::{ResolutionError, Solution, SolutionStatus, SolverModel, WithTimeLimit};
        use good_lp::{variable, Expression, ProblemVariables};
        let started = Instant::now();
        let mut initial = vec![None; mip.variables.len()];
        for &(var, value) in &request.warm_start {
            if let Some(slot) = initial.get_mut(var.0) {
                *slot = Some(value);
            }
        }
        let mut problem = ProblemVariables::new();
        let mut handles = Vec::with_capacity(mip.variables.len());
        let mut objective = Expression::with_capacity(mip.variables.len());
        for (variable_def, start) in mip.variables.iter().zip(&initial) {
            let mut definition = variable().min(variable_def.lower).max(variable_def.upper);
            if variable_def.integer {
                definition = definition.integer();
            }
            if let Some(value) = *start {
                definition = definition.initial(value);
            }
            let handle = problem.add(definition);
            if variable_def.cost != 0.0 {
                objective.add_mul(variable_def.cost, handle);
            }
            handles.push(handle);
        }
        let mut model = problem.minimise(objective).using(self.solver.clone());
        if let Some(limit) = request.time_limit {
            model = model.with_time_limit(limit.as_secs_f64());
        }
        for row in &mip.rows {
            let mut lhs = Expression::with_capacity(row.terms.len());
            for &(var, coefficient) in &row.terms {
                if let Some(&handle) = handles.get(var.0) {
                    lhs.add_mul(coefficient, handle);
                }
            }
            let constraint = match row.sense {
                Sense::AtMost => lhs.leq(row.rhs),
                Sense::AtLeast => lhs.geq(row.rhs),
                Sense::Equal => lhs.eq(row.rhs),
            };
            model.add_constraint(constraint);
        }
        match model.solve() {
            Ok(solution) => {
                let values: Vec<f64> = handles.iter().map(|&h| solution.value(h)).collect();
                let objective = mip.objective_of(&values);
                let termination = match solution.status() {
                    SolutionStatus::Optimal => Termination::Optimal,
                    SolutionStatus::GapLimit => Termination::Gap,
                    SolutionStatus::TimeLimit => Termination::TimeLimit,
                };
                let best_bound = (termination == Termination::Optimal).then_some(objective);
                MipOutcome::Solution(MipSolution { values, objective, termination, best_bound, nodes: 0 })
            }
            Err(ResolutionError::Infeasible) => MipOutcome::Infeasible,
            // good_lp reports "no solution before the time limit" as an error; tell it apart
            // from a failure by the clock.
            Err(_) if request.time_limit.is_some_and(|limit| started.elapsed() >= limit) => {
                MipOutcome::Interrupted { termination: Termination::TimeLimit, best_bound: None, nodes: 0 }
            }
            Err(error) => MipOutcome::Error(error.to_string()),
        }
    }
}

/// good_lp's CBC solver with the LP solver's log silenced as well (CBC's own log is off in
/// good_lp, but Clp's presolve still prints to standard output, which would corrupt the JSON of
/// the command line). Use as `GoodLp::new(quiet_cbc)`.
///
/// A failed assertion inside the CBC library (Debian's 2.10 is built with them on) aborts the
/// whole process, which no Rust code can catch; it has been seen once in CI. Where the process
/// must survive, run CBC in a child process (docs/formulation.md, "CBC can abort the process").
#[cfg(feature = "cbc")]
pub fn quiet_cbc(problem: good_lp::variable::UnsolvedProblem) -> good_lp::solvers::coin_cbc::CoinCbcProblem {
    let mut model = good_lp::coin_cbc(problem);
    model.set_parameter("slogLevel", "0");
    // CBC counts its time limit in CPU seconds by default: under load (or beside another
    // solver's thread) a limit then ends long after the caller's deadline.
    model.set_parameter("timeMode", "elapsed");
    model
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_inside_an_attempt_is_a_numerical_failure() {
        let attempt = guarded(|| panic!("an InternalError stays one"));
        assert_eq!(attempt, Attempt::Numerical("microlp panicked: an InternalError stays one".to_string()));
        let attempt = guarded(|| Attempt::Done(MipOutcome::Infeasible));
        assert_eq!(attempt, Attempt::Done(MipOutcome::Infeasible));
    }

    /// min x + y s.t. 2x + 3y ≥ 7, x, y ∈ {0..10} integer: optimum 3.
    fn small() -> Mip {
        let mut mip = Mip::new();
        let x = mip.add_integer_var(1.0, (0, 10));
        let y = mip.add_integer_var(1.0, (0, 10));
        mip.add_row(vec![(x, 2.0), (y, 3.0)], Sense::AtLeast, 7.0);
        mip
    }

    fn solved(outcome: MipOutcome) -> MipSolution {
        match outcome {
            MipOutcome::Solution(solution) => solution,
            other => panic!("expected a solution, got {other:?}"),
        }
    }

    #[test]
    fn microlp_and_good_lp_agree_on_a_small_program() {
        let mip = small();
        for backend in [&Microlp as &dyn MipBackend, &GoodLp::new(good_lp::microlp)] {
            let solution = solved(backend.solve(&mip, &SolveRequest::default()));
            assert_eq!(solution.termination, Termination::Optimal, "{}", backend.name());
            assert!((solution.objective - 3.0).abs() < 1e-9, "{}: {}", backend.name(), solution.objective);
            assert_eq!(solution.best_bound, Some(solution.objective));
            let lhs = 2.0 * solution.values[0] + 3.0 * solution.values[1];
            assert!(lhs >= 7.0 - 1e-9);
        }
    }

    #[test]
    fn infeasible_programs_are_reported_as_such() {
        let mut mip = small();
        let x = Var(0);
        mip.add_row(vec![(x, 1.0)], Sense::AtLeast, 11.0);
        for backend in [&Microlp as &dyn MipBackend, &GoodLp::new(good_lp::microlp)] {
            assert_eq!(backend.solve(&mip, &SolveRequest::default()), MipOutcome::Infeasible, "{}", backend.name());
        }
    }

    #[test]
    fn equality_rows_and_relaxations() {
        let mut mip = Mip::new();
        let x = mip.add_var(-1.0, (0.0, 10.0));
        let y = mip.add_var(0.0, (0.0, 10.0));
        mip.add_row(vec![(x, 2.0), (y, 1.0)], Sense::Equal, 5.0);
        for backend in [&Microlp as &dyn MipBackend, &GoodLp::new(good_lp::microlp)] {
            let solution = solved(backend.solve(&mip, &SolveRequest::default()));
            assert!((solution.values[0] - 2.5).abs() < 1e-9, "{}: {:?}", backend.name(), solution.values);
        }
    }

    #[test]
    fn microlp_rejects_integer_bounds_it_cannot_hold() {
        let mut mip = Mip::new();
        mip.variables.push(MipVariable { lower: 0.0, upper: 1e12, integer: true, cost: 1.0 });
        assert!(
            matches!(Microlp.solve(&mip, &SolveRequest::default()), MipOutcome::Error(message) if message.contains("i32"))
        );
    }

    #[test]
    fn a_numerical_failure_is_retried_without_warm_start_then_with_rows_reversed() {
        let mut mip = small();
        mip.add_row(vec![(Var(0), 1.0)], Sense::AtMost, 9.0);
        let request = SolveRequest { warm_start: vec![(Var(0), 1.0)], ..SolveRequest::default() };
        let calls = std::cell::RefCell::new(Vec::new());
        // Fails unless the rows are reversed (the last retry).
        let outcome = solve_with_retries(&mip, &request, |program, this| {
            calls.borrow_mut().push((program.rows.first().cloned(), this.warm_start.len()));
            if program.rows == mip.rows {
                Attempt::Numerical("Singular matrix".to_string())
            } else {
                Attempt::Done(Microlp.solve(program, this))
            }
        });
        let solution = solved(outcome);
        assert!((solution.objective - 3.0).abs() < 1e-9);
        let calls = calls.into_inner();
        assert_eq!(calls.len(), 3);
        assert_eq!(calls.iter().map(|(_, warm)| *warm).collect::<Vec<_>>(), vec![1, 0, 0]);
        assert_eq!(calls[2].0, mip.rows.last().cloned());
    }

    #[test]
    fn a_failure_every_retry_hits_is_reported_with_each_message() {
        let mip = small();
        let outcome =
            solve_with_retries(&mip, &SolveRequest::default(), |_, _| Attempt::Numerical("Singular matrix".into()));
        assert_eq!(
            outcome,
            MipOutcome::Error(
                "Singular matrix (also without the warm start, and with the rows reversed: Singular matrix; \
                 Singular matrix)"
                    .to_string()
            )
        );
    }

    #[test]
    fn capabilities_are_what_each_backend_honours() {
        assert!(Microlp.capabilities().node_limit && Microlp.capabilities().best_bound);
        let good_lp = GoodLp::new(good_lp::microlp);
        assert!(!good_lp.capabilities().node_limit && !good_lp.capabilities().best_bound);
        assert_eq!(good_lp.name(), "good_lp/Microlp");
        assert_eq!(format!("{good_lp:?}"), "GoodLp(Microlp)");
    }
}
