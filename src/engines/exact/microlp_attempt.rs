// One microlp solve (an [`Attempt`]), written once against microlp's API and included into a
// module per microlp version (see `backend.rs`): each such module names its version `microlp`
// and defines `configure`, the version's own options.
/// The program as microlp's, with one microlp variable per [`Var`] (in order).
fn build(mip: &Mip) -> Result<(microlp::Problem, Vec<microlp::Variable>), Attempt> {
    use microlp::{ComparisonOp, LinearExpr, OptimizationDirection};
    let mut lp = microlp::Problem::new(OptimizationDirection::Minimize);
    let mut handles = Vec::with_capacity(mip.variables.len());
    for variable in &mip.variables {
        let handle = if variable.integer {
            let Some(bounds) = integer_bounds(variable) else {
                return Err(Attempt::Done(MipOutcome::Error(format!(
                    "integer bounds [{}, {}] outside microlp's i32 range",
                    variable.lower, variable.upper
                ))));
            };
            lp.add_integer_var(variable.cost, bounds)
        } else {
            lp.add_var(variable.cost, (variable.lower, variable.upper))
        };
        handles.push(handle);
    }
    for row in &mip.rows {
        let expr: LinearExpr =
            row.terms.iter().filter_map(|&(var, k)| handles.get(var.0).map(|&h| (h, k))).collect();
        let op = match row.sense {
            Sense::AtMost => ComparisonOp::Le,
            Sense::AtLeast => ComparisonOp::Ge,
            Sense::Equal => ComparisonOp::Eq,
        };
        lp.add_constraint(expr, op, row.rhs);
    }
    Ok((lp, handles))
}

/// microlp's options for `request` (its variables `handles`).
fn options(request: &SolveRequest, handles: &[microlp::Variable]) -> microlp::SolveOptions {
    let mut options = microlp::SolveOptions::default();
    options.time_limit = request.time_limit;
    options.node_limit = request.node_limit;
    options.mip_gap = request.mip_gap;
    if let Some(magnitude) = request.integral_objective_bound.filter(|m| m.is_finite()) {
        // microlp's gap is relative: with 0.999 / max(1, bound) it stays below one unit for
        // every incumbent. (Its pruning tolerance is left alone: widening it the same way
        // changed the dives and lost fifty-models' n₁ optimum for 20 s.)
        options.mip_gap = options.mip_gap.max(0.999 / magnitude.max(1.0));
    }
    if !request.warm_start.is_empty() {
        options.warm_start = Some(
            request.warm_start.iter().filter_map(|&(var, value)| handles.get(var.0).map(|&h| (h, value))).collect(),
        );
    }
    options
}

/// What a microlp error means for the attempt: a numerical failure is retried.
fn failed(error: microlp::Error) -> Attempt {
    match error {
        microlp::Error::Infeasible => Attempt::Done(MipOutcome::Infeasible),
        microlp::Error::InternalError(message) => Attempt::Numerical(message),
        error => Attempt::Done(MipOutcome::Error(error.to_string())),
    }
}

pub(super) fn solve_once(mip: &Mip, request: &SolveRequest) -> Attempt {
    use microlp::TerminationReason;
    let (lp, handles) = match build(mip) {
        Ok(built) => built,
        Err(attempt) => return attempt,
    };
    let mut options = options(request, &handles);
    configure(&mut options);
    let integral = request.integral_objective_bound.is_some_and(f64::is_finite);
    // With an integral objective the search runs in node chunks: between chunks, an
    // incumbent within less than one unit of the best bound is optimal (microlp would keep
    // closing a fractional gap), and the relative gap is re-aimed at one unit of the current
    // incumbent. With a stop check it also runs in time slices of at most [`SOLVE_SLICE`],
    // the check looked at between them (microlp has no cancellation of its own). Chunks and
    // slices resume one search tree, so nothing is lost between them; without a stop check
    // there are no slices, so node-limited runs stay deterministic.
    let deadline = request.time_limit.and_then(|limit| Instant::now().checked_add(limit));
    let stop = request.stop.clone();
    let call_time = || -> Option<Duration> {
        let left = deadline.map(|deadline| deadline.saturating_duration_since(Instant::now()));
        match stop {
            Some(_) => Some(left.map_or(SOLVE_SLICE, |left| left.min(SOLVE_SLICE))),
            None => left,
        }
    };
    let mut nodes_left = request.node_limit;
    let mut chunk: u64 = 256;
    let budget = |nodes_left: &mut Option<u64>, chunk: &mut u64| -> Option<u64> {
        if !integral {
            return *nodes_left;
        }
        let this = nodes_left.map_or(*chunk, |left| left.min(*chunk));
        if let Some(left) = nodes_left.as_mut() {
            *left -= this;
        }
        *chunk = chunk.saturating_mul(2);
        Some(this)
    };
    // The current chunk's nodes, and the nodes solved when it was granted (a slice that
    // ends inside a chunk resumes with what is left of it).
    let mut granted = budget(&mut nodes_left, &mut chunk);
    let mut granted_from: u64 = 0;
    let mut gap = options.mip_gap;
    options.node_limit = granted;
    options.time_limit = call_time();
    let mut outcome = match lp.solve_with(options) {
        Ok(outcome) => outcome,
        Err(error) => return failed(error),
    };
    let closes = |value: f64, bound: Option<f64>| bound.is_some_and(|b| (b - 1e-6).ceil() >= value.round());
    let mut proven_by_integrality = false;
    loop {
        let reason = outcome.termination_reason();
        if reason == TerminationReason::ProvenOptimal {
            break;
        }
        let incumbent = outcome.solution().map(|solution| solution.objective());
        if integral && incumbent.is_some_and(|value| closes(value, outcome.stats().best_bound)) {
            proven_by_integrality = true;
            break;
        }
        let out_of_time = deadline.is_some_and(|deadline| Instant::now() >= deadline);
        if out_of_time || stop.as_ref().is_some_and(StopCheck::should_stop) {
            break;
        }
        let nodes = outcome.stats().nodes_solved;
        let mut resume = microlp::ResumeOptions::default();
        match reason {
            // A slice ended, not the solve's time: the same chunk goes on.
            TerminationReason::TimeLimit if stop.is_some() => {
                resume.node_limit = granted.map(|granted| granted.saturating_sub(nodes - granted_from));
            }
            TerminationReason::NodeLimit | TerminationReason::MipGap if integral => {
                if nodes_left == Some(0) && reason == TerminationReason::NodeLimit {
                    break;
                }
                granted = budget(&mut nodes_left, &mut chunk);
                granted_from = nodes;
                resume.node_limit = granted;
                gap = incumbent.map_or(request.mip_gap, |value| 0.999 / value.abs().max(1.0));
            }
            _ => break,
        }
        resume.mip_gap = Some(gap);
        resume.time_limit = call_time();
        outcome = match outcome.resume_with(resume) {
            Ok(outcome) => outcome,
            Err(error) => return failed(error),
        };
    }
    match outcome_of(outcome, &handles, proven_by_integrality) {
        MipOutcome::Solution(solution) if !objective_agrees(mip, &solution) => Attempt::Numerical(format!(
            "microlp reported the objective {} for a solution worth {}",
            solution.objective,
            mip.objective_of(&solution.values)
        )),
        outcome => Attempt::Done(outcome),
    }
}

/// What microlp's last answer means: a solution (a proof only when microlp or the
/// integrality check says so), or an interruption with its bound.
fn outcome_of(
    outcome: microlp::SolveOutcome,
    handles: &[microlp::Variable],
    proven_by_integrality: bool,
) -> MipOutcome {
    use microlp::{SolutionStatus, TerminationReason};
    let nodes = outcome.stats().nodes_solved;
    let termination_of = |reason: TerminationReason| match reason {
        TerminationReason::ProvenOptimal => Termination::Optimal,
        TerminationReason::MipGap => Termination::Gap,
        TerminationReason::NodeLimit => Termination::NodeLimit,
        // A time limit, or a reason added by a later microlp: never a proof.
        _ => Termination::TimeLimit,
    };
    match outcome.into_solution() {
        Err(interrupted) => MipOutcome::Interrupted {
            termination: termination_of(interrupted.termination_reason()),
            best_bound: interrupted.stats().best_bound,
            nodes,
        },
        Ok(solution) => {
            let optimal = solution.status() == SolutionStatus::Optimal || proven_by_integrality;
            MipOutcome::Solution(MipSolution {
                values: handles.iter().map(|&h| solution.var_value(h)).collect(),
                objective: solution.objective(),
                termination: if optimal {
                    Termination::Optimal
                } else {
                    match termination_of(solution.termination_reason()) {
                        // A solution not marked optimal is never reported as a proof.
                        Termination::Optimal => Termination::TimeLimit,
                        other => other,
                    }
                },
                best_bound: if optimal { Some(solution.objective()) } else { solution.stats().best_bound },
                nodes,
            })
        }
    }
}
