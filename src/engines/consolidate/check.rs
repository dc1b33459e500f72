//! The independent checker for consolidation plans (docs/contract.md §3).
//!
//! It replays a [`ConsolidationPlan`] step by step on the problem's fleet, by instance id, and
//! checks every rule of docs/contract.md §3 for each step. It shares nothing with the planner
//! except the rule definitions (imbalance, SPREAD offenders) and the objective; the replay and
//! the rules §3 and §7 state alike are `engines::steps::check`, shared with the rebalancing checker.

use std::collections::BTreeSet;

use super::ConsolidationPlan;
use crate::engines::steps::check::{CheckedFleet, Findings, MoveWording};
use crate::fleet::objective;
use crate::problem::Problem;
use crate::violation::{Violation, ViolationKind};

/// Checks a consolidation plan against docs/contract.md §3; returns every violation (empty = valid).
///
/// Per step: moves name known components and instances alive at the step's start, a source holds
/// the copies it gives, a target is a pool type the component may use and is not released in
/// the same step, and (make-before-break) each target fits its copies plus every incoming copy
/// measured with the target type's requirement. At the step's end: at most `MaximumStepSize`
/// releases, each of an instance the step left empty; `MinInstanceCount` kept; for every
/// component with `AvailabilityZoneBalance` the imbalance over all AZs did not grow; for every
/// SPREAD component the number of instances breaking the SPREAD rule did not grow. Finally the
/// reported objective must be that of the final fleet.
pub fn verify_consolidation(problem: &Problem, plan: &ConsolidationPlan) -> Vec<Violation> {
    let mut findings = Findings::default();
    let mut fleet = CheckedFleet::new(problem, ViolationKind::Consolidation);
    let wording = MoveWording {
        unknown_instance: " (consolidation never launches)",
        draining_target: (ViolationKind::Draining, "target is Draining and receives no new copy"),
    };
    let step_size = problem.scaling().maximum_step_size.max(1) as usize;
    let totals_before = fleet.copy_totals();

    for (step_number, step) in plan.steps.iter().enumerate() {
        let label = format!("step {}", step_number + 1);
        if step.moves.is_empty() && step.release.is_empty() {
            findings.push(ViolationKind::Consolidation, format!("{label}: empty step"));
        }
        if step.release.len() > step_size {
            findings.push(
                ViolationKind::Consolidation,
                format!("{label}: releases {} instances, MaximumStepSize is {step_size}", step.release.len()),
            );
        }
        let baseline = fleet.baseline();
        let released_now: BTreeSet<&str> = step.release.iter().map(String::as_str).collect();
        let moves = fleet.check_moves(&label, &step.moves, &released_now, &wording, &mut findings);
        fleet.check_make_before_break(&label, &moves, &mut findings);
        fleet.finish_moves(&moves);
        fleet.release(&label, &step.release, &BTreeSet::new(), &mut findings);
        fleet.check_min_instances(&label, !step.release.is_empty(), &mut findings);
        fleet.check_not_worse(&label, &baseline, None, &mut findings);
    }

    // Copy counts never change (a move is one copy out, one in; a lost copy is a bug).
    for (component, (before, after)) in totals_before.iter().zip(&fleet.copy_totals()).enumerate() {
        if before != after {
            findings.push(
                ViolationKind::Consolidation,
                format!(
                    "{}: {before} copies before consolidation, {after} after",
                    problem.components()[component].name
                ),
            );
        }
    }

    let actual = objective(problem, &fleet.final_fleet());
    if actual != plan.objective {
        findings.push(
            ViolationKind::Accounting,
            format!("reported objective ({}) differs from what the steps reach ({actual})", plan.objective),
        );
    }
    findings.0
}
