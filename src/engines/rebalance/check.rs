//! The independent checker for rebalancing plans (contract §7): the consolidation checker extended
//! with launches.
//!
//! It replays a [`RebalancePlan`] step by step on the problem's fleet, by instance id, and checks
//! every rule of contract §7 for each step. It shares nothing with the planner except the rule
//! definitions (imbalance, SPREAD offenders, copy footprints) and the objective. The replay and
//! the rules it shares with consolidation are `engines::steps::check`; launches, the draining
//! order and the final improvement test are here.

use std::collections::{BTreeMap, BTreeSet};

use super::RebalancePlan;
use crate::engines::steps::check::{CheckedFleet, CheckedInstance, Findings, MoveWording};
use crate::engines::LaunchIds;
use crate::fleet::objective;
use crate::index::{AzIndex, TypeIndex};
use crate::problem::Problem;
use crate::violation::{Violation, ViolationKind};

/// Draining instances alive, `(n6, …, n1)`, cost: what a plan must make strictly smaller.
fn key(fleet: &CheckedFleet) -> (usize, [u32; 6], i128) {
    let draining = fleet.alive().filter(|instance| instance.draining).count();
    let objective = objective(fleet.problem, &fleet.final_fleet()).key();
    (draining, objective.fallback_counts, objective.cost_micros)
}

/// A [`key`] in words: `1 draining, instances p2=1 p1=3, cost 30.00` (priorities from the
/// least preferred, the order the key compares them in; the cost in the plan's unit).
fn key_text((draining, fallback_counts, cost_micros): (usize, [u32; 6], i128)) -> String {
    let by_priority: Vec<String> = fallback_counts
        .iter()
        .zip([6u8, 5, 4, 3, 2, 1])
        .filter(|(&count, _)| count > 0)
        .map(|(count, priority)| format!("p{priority}={count}"))
        .collect();
    let instances = if by_priority.is_empty() { "none".to_string() } else { by_priority.join(" ") };
    format!("{draining} draining, instances {instances}, cost {}", crate::text::micros_text(cost_micros))
}

/// Checks a rebalancing plan against contract §7; returns every violation (empty = valid).
///
/// Per step, against the fleet at the step's start plus the step's launches:
/// - launches: ids `new-1`, `new-2`, … in order across the plan and not in use; a known pool
///   type and AZ; per (type, AZ) over the whole plan at most `Reserved + Available` launches,
///   reservation slots used first (a launch is `Reserved` exactly while slots are left);
/// - at most `MaximumStepSize` launches and at most `MaximumStepSize` releases;
/// - moves: known component and alive instances, a source holding the copies it gives, never onto
///   its own instance, a draining instance, or an instance released in the same step; the target
///   type is a pool type the component may use; make-before-break: each target fits its copies
///   plus every incoming copy (target type's requirement);
/// - releases: known, alive, listed once, not launched in the same step, empty after the moves;
///   a step that releases an instance that is not draining leaves no draining instance behind;
/// - after the step: copy counts unchanged; `MinInstanceCount` kept when the step releases,
///   `MaxInstanceCount` kept when it launches; no component's imbalance over all AZs grew; no
///   SPREAD component has more instances breaking the SPREAD rule.
///
/// Finally: the reported objective is that of the final fleet, and a plan with steps makes
/// (draining instances left, L3, L4) strictly better than the fleet it started from.
pub fn verify_rebalance(problem: &Problem, plan: &RebalancePlan) -> Vec<Violation> {
    let mut findings = Findings::default();
    let mut fleet = CheckedFleet::new(problem, ViolationKind::Rebalance);
    let wording = MoveWording {
        unknown_instance: "",
        draining_target: (ViolationKind::Rebalance, "target is draining (it receives no new copy)"),
    };
    let step_size = problem.scaling().maximum_step_size.max(1) as usize;
    let max_instances = problem.scaling().max_instances.map(|max| max as usize);
    let totals_start = fleet.copy_totals();
    let key_start = key(&fleet);
    let mut launches = LaunchTally { so_far: BTreeMap::new(), expected_ids: LaunchIds::new(problem) };

    for (step_number, step) in plan.steps.iter().enumerate() {
        let label = format!("step {}", step_number + 1);
        if step.launch.is_empty() && step.moves.is_empty() && step.release.is_empty() {
            findings.push(ViolationKind::Rebalance, format!("{label}: empty step"));
        }
        if step.launch.len() > step_size {
            findings.push(
                ViolationKind::Rebalance,
                format!("{label}: launches {} instances, MaximumStepSize is {step_size}", step.launch.len()),
            );
        }
        if step.release.len() > step_size {
            findings.push(
                ViolationKind::Rebalance,
                format!("{label}: releases {} instances, MaximumStepSize is {step_size}", step.release.len()),
            );
        }
        let baseline = fleet.baseline();

        // Launches start first; moves are resolved against the fleet at the step's start plus them.
        let launched_now = launches.launch(&mut fleet, &label, &step.launch, &mut findings);
        let released_now: BTreeSet<&str> = step.release.iter().map(String::as_str).collect();
        let moves = fleet.check_moves(&label, &step.moves, &released_now, &wording, &mut findings);
        fleet.check_make_before_break(&label, &moves, &mut findings);
        fleet.finish_moves(&moves);

        let released = fleet.release(&label, &step.release, &launched_now, &mut findings);
        let releases_in_service: Vec<&str> = released
            .iter()
            .map(|&index| &fleet.instances[index])
            .filter(|instance| !instance.draining)
            .map(|instance| instance.id.as_str())
            .collect();
        let draining_left: Vec<&str> =
            fleet.alive().filter(|instance| instance.draining).map(|instance| instance.id.as_str()).collect();
        if !releases_in_service.is_empty() && !draining_left.is_empty() {
            findings.push(
                ViolationKind::Rebalance,
                format!(
                    "{label}: releases {} while draining instance(s) {} still run (draining instances are emptied first)",
                    releases_in_service.join(", "),
                    draining_left.join(", ")
                ),
            );
        }
        fleet.check_min_instances(&label, !step.release.is_empty(), &mut findings);
        if let Some(max) = max_instances {
            let alive = fleet.alive().count();
            if !step.launch.is_empty() && alive > max {
                findings.push(
                    ViolationKind::InstanceBounds,
                    format!("{label}: {alive} instances after the step, MaxInstanceCount is {max}"),
                );
            }
        }
        fleet.check_not_worse(&label, &baseline, Some(&totals_start), &mut findings);
    }

    let actual = objective(problem, &fleet.final_fleet());
    if actual != plan.objective {
        findings.push(
            ViolationKind::Accounting,
            format!("reported objective ({}) differs from what the steps reach ({actual})", plan.objective),
        );
    }
    let key_end = key(&fleet);
    if !plan.steps.is_empty() && key_end >= key_start {
        findings.push(
            ViolationKind::Accounting,
            format!(
                "the steps do not improve the fleet: it goes from {} to {}",
                key_text(key_start),
                key_text(key_end)
            ),
        );
    }
    findings.0
}

/// Launches over the whole plan: the next expected id and, per (type, AZ), launches and
/// reserved launches so far.
struct LaunchTally {
    so_far: BTreeMap<(usize, usize), (u32, u32)>,
    /// The ids launches must carry, in order.
    expected_ids: LaunchIds,
}

impl LaunchTally {
    /// Checks a step's launches (ids in order and unused, a known pool type and AZ, capacity,
    /// reservation slots used first) and adds them to `fleet`; returns their indices.
    fn launch(
        &mut self,
        fleet: &mut CheckedFleet,
        label: &str,
        launches: &[super::Launch],
        findings: &mut Findings,
    ) -> BTreeSet<usize> {
        let problem = fleet.problem;
        let mut launched_now: BTreeSet<usize> = BTreeSet::new();
        for launch in launches {
            let id = &launch.instance_id;
            let what = format!("{label}: launch {id} ({} in {})", launch.instance_type, launch.availability_zone);
            let expected = self.expected_ids.next_id();
            // An id already in the fleet (alive or released earlier) would make later moves and
            // releases ambiguous: the launch is rejected outright.
            if let Some(&index) = fleet.by_id.get(id) {
                let holder = if fleet.instances[index].existing.is_some() {
                    "an instance of the fleet"
                } else {
                    "an earlier launch"
                };
                findings.push(ViolationKind::Reference, format!("{what}: the id is already in use by {holder}"));
                continue;
            }
            if *id != expected {
                findings.push(
                    ViolationKind::Reference,
                    format!(
                        "{what}: expected id {expected} (ids count up across the plan, skipping ids the fleet uses)"
                    ),
                );
            }
            let (Some(type_index), Some(az_index)) =
                (problem.type_index(&launch.instance_type), problem.az_index(&launch.availability_zone))
            else {
                findings.push(ViolationKind::Reference, format!("{what}: unknown instance type or AZ"));
                continue;
            };
            if !problem.instance_types()[type_index].in_pool {
                findings.push(
                    ViolationKind::Eligibility,
                    format!("{what}: {} is not in Endpoint.InstancePools", launch.instance_type),
                );
            }
            let limit = problem.launch_limit(TypeIndex::new(type_index), AzIndex::new(az_index));
            let so_far = self.so_far.entry((type_index, az_index)).or_insert((0, 0));
            let slot_left = so_far.1 < limit.reserved;
            so_far.0 += 1;
            so_far.1 += u32::from(launch.reserved);
            if let Some(allowed) = limit.total() {
                if so_far.0 > allowed {
                    findings.push(
                        ViolationKind::Capacity,
                        format!(
                            "{what}: launch {} of this type in this AZ, but only {allowed} are obtainable (Reserved {} + Available {})",
                            so_far.0,
                            limit.reserved,
                            limit.available.unwrap_or(0)
                        ),
                    );
                }
            }
            if launch.reserved && !slot_left {
                findings.push(
                    ViolationKind::Capacity,
                    format!("{what}: marked Reserved, but all {} reservation slots are used", limit.reserved),
                );
            }
            if !launch.reserved && slot_left {
                findings.push(
                    ViolationKind::Capacity,
                    format!("{what}: not marked Reserved although a reservation slot is unused (slots are used first)"),
                );
            }
            let index = fleet.instances.len();
            fleet.by_id.insert(id.clone(), index);
            fleet.instances.push(CheckedInstance {
                id: id.clone(),
                type_index,
                az_index,
                reserved: launch.reserved,
                draining: false,
                existing: None,
                copies: BTreeMap::new(),
                alive: true,
            });
            launched_now.insert(index);
        }
        launched_now
    }
}
