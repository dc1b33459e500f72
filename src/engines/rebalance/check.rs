//! The independent checker for rebalancing plans (contract §7): the consolidation checker extended
//! with launches.
//!
//! It replays a [`RebalancePlan`] step by step on the problem's fleet, by instance id, and checks
//! every rule of contract §7 for each step. It shares nothing with the planner except the rule
//! definitions (imbalance, SPREAD offenders, copy footprints) and the objective.

use std::collections::{BTreeMap, BTreeSet};

use super::RebalancePlan;
use crate::engines::consolidate::{copy_resources, spread_offenders, SpreadView};
use crate::fleet::{imbalance, objective, FinalFleet, FinalInstance};
use crate::problem::{PlacementStrategy, Problem, Resources};
use crate::verify::{Violation, ViolationKind};

struct Instance {
    id: String,
    type_index: usize,
    az_index: usize,
    reserved: bool,
    draining: bool,
    existing: Option<usize>,
    copies: BTreeMap<usize, u32>,
    alive: bool,
}

impl Instance {
    fn used(&self, problem: &Problem) -> Resources {
        problem.copies_footprint(self.type_index, &self.copies)
    }
}

struct Fleet<'p> {
    problem: &'p Problem,
    instances: Vec<Instance>,
    by_id: BTreeMap<String, usize>,
}

impl Fleet<'_> {
    fn alive(&self) -> impl Iterator<Item = &Instance> + '_ {
        self.instances.iter().filter(|instance| instance.alive)
    }

    fn copies_per_az(&self) -> Vec<Vec<u64>> {
        let mut counts = vec![vec![0u64; self.problem.azs().len()]; self.problem.components().len()];
        for instance in self.alive() {
            for (&component, &count) in &instance.copies {
                if let Some(slot) = counts.get_mut(component).and_then(|row| row.get_mut(instance.az_index)) {
                    *slot += u64::from(count);
                }
            }
        }
        counts
    }

    fn spread_offenders(&self, component: usize) -> u64 {
        let views: Vec<SpreadView> = self
            .alive()
            .map(|instance| SpreadView {
                az_index: instance.az_index,
                type_index: instance.type_index,
                count: u64::from(instance.copies.get(&component).copied().unwrap_or(0)),
                used: instance.used(self.problem),
            })
            .collect();
        spread_offenders(self.problem, component, &views)
    }

    fn final_fleet(&self) -> FinalFleet {
        let instances = self
            .alive()
            .map(|instance| FinalInstance {
                id: instance.id.clone(),
                type_index: instance.type_index,
                az_index: instance.az_index,
                reserved: instance.reserved,
                existing: instance.existing,
                copies: instance.copies.clone(),
                new_copies: BTreeMap::new(),
            })
            .collect();
        FinalFleet { instances, launches: BTreeMap::new(), removed: BTreeMap::new() }
    }

    /// Draining instances alive, `(n6, …, n1)`, cost: what a plan must make strictly smaller.
    fn key(&self) -> (usize, [u32; 6], i128) {
        let draining = self.alive().filter(|instance| instance.draining).count();
        let objective = objective(self.problem, &self.final_fleet()).key();
        (draining, objective.fallback_counts, objective.cost_micros)
    }
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
    let mut violations: Vec<Violation> = Vec::new();
    let mut push = |kind: ViolationKind, message: String| violations.push(Violation { kind, message });
    let instances: Vec<Instance> = problem
        .fleet()
        .iter()
        .enumerate()
        .map(|(index, existing)| Instance {
            id: existing.id.clone(),
            type_index: existing.type_index,
            az_index: existing.az_index,
            reserved: existing.reserved,
            draining: existing.draining,
            existing: Some(index),
            copies: existing.copies.iter().copied().filter(|&(_, count)| count > 0).collect(),
            alive: true,
        })
        .collect();
    let by_id = instances.iter().enumerate().map(|(index, instance)| (instance.id.clone(), index)).collect();
    let mut fleet = Fleet { problem, instances, by_id };
    let step_size = problem.scaling().maximum_step_size.max(1) as usize;
    let min_instances = problem.scaling().min_instances as usize;
    let max_instances = problem.scaling().max_instances.map(|max| max as usize);
    let totals = |fleet: &Fleet| -> Vec<u64> { fleet.copies_per_az().iter().map(|row| row.iter().sum()).collect() };
    let totals_start = totals(&fleet);
    let key_start = fleet.key();
    let spread_components: Vec<usize> = (0..problem.components().len())
        .filter(|&component| problem.components()[component].strategy == PlacementStrategy::Spread)
        .collect();
    let mut launches_so_far: BTreeMap<(usize, usize), (u32, u32)> = BTreeMap::new();
    let mut next_launch = 1usize;

    for (step_number, step) in plan.steps.iter().enumerate() {
        let label = format!("step {}", step_number + 1);
        if step.launch.is_empty() && step.moves.is_empty() && step.release.is_empty() {
            push(ViolationKind::Consolidation, format!("{label}: empty step"));
        }
        if step.launch.len() > step_size {
            push(
                ViolationKind::Consolidation,
                format!("{label}: launches {} instances, MaximumStepSize is {step_size}", step.launch.len()),
            );
        }
        if step.release.len() > step_size {
            push(
                ViolationKind::Consolidation,
                format!("{label}: releases {} instances, MaximumStepSize is {step_size}", step.release.len()),
            );
        }
        let balance_before: Vec<u64> = fleet.copies_per_az().iter().map(|row| imbalance(row)).collect();
        let spread_before: Vec<u64> =
            spread_components.iter().map(|&component| fleet.spread_offenders(component)).collect();

        // Launches start first.
        let mut launched_now: BTreeSet<usize> = BTreeSet::new();
        for launch in &step.launch {
            let id = &launch.instance_id;
            let what = format!("{label}: launch {id} ({} in {})", launch.instance_type, launch.availability_zone);
            let expected = format!("new-{next_launch}");
            next_launch += 1;
            if *id != expected {
                push(
                    ViolationKind::Reference,
                    format!("{what}: expected id {expected} (ids count up across the plan)"),
                );
            }
            if fleet.by_id.contains_key(id) {
                push(ViolationKind::Reference, format!("{what}: the id is already in use"));
                continue;
            }
            let (Some(type_index), Some(az_index)) =
                (problem.type_index(&launch.instance_type), problem.az_index(&launch.availability_zone))
            else {
                push(ViolationKind::Reference, format!("{what}: unknown instance type or AZ"));
                continue;
            };
            if !problem.instance_types()[type_index].in_pool {
                push(
                    ViolationKind::Eligibility,
                    format!("{what}: {} is not in Endpoint.InstancePools", launch.instance_type),
                );
            }
            let limit = problem.launch_limit(type_index, az_index);
            let so_far = launches_so_far.entry((type_index, az_index)).or_insert((0, 0));
            let slot_left = so_far.1 < limit.reserved;
            so_far.0 += 1;
            so_far.1 += u32::from(launch.reserved);
            if let Some(allowed) = limit.total() {
                if so_far.0 > allowed {
                    push(
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
                push(
                    ViolationKind::Capacity,
                    format!("{what}: marked Reserved, but all {} reservation slots are used", limit.reserved),
                );
            }
            if !launch.reserved && slot_left {
                push(
                    ViolationKind::Capacity,
                    format!("{what}: not marked Reserved although a reservation slot is unused (slots are used first)"),
                );
            }
            let index = fleet.instances.len();
            fleet.by_id.insert(id.clone(), index);
            fleet.instances.push(Instance {
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

        // Moves, resolved against the fleet at the step's start (plus its launches).
        let released_now: BTreeSet<&str> = step.release.iter().map(String::as_str).collect();
        let mut outgoing: BTreeMap<(usize, usize), u32> = BTreeMap::new();
        let mut incoming: BTreeMap<usize, BTreeMap<usize, u32>> = BTreeMap::new();
        for (move_number, planned) in step.moves.iter().enumerate() {
            let what = format!(
                "{label}, move {} ({} {} -> {})",
                move_number + 1,
                planned.inference_component_name,
                planned.from,
                planned.to
            );
            let Some(component) = problem.component_index(&planned.inference_component_name) else {
                push(ViolationKind::Reference, format!("{what}: unknown component"));
                continue;
            };
            let (from, to) = (fleet.by_id.get(&planned.from).copied(), fleet.by_id.get(&planned.to).copied());
            let (Some(from), Some(to)) = (from, to) else {
                push(ViolationKind::Reference, format!("{what}: unknown instance"));
                continue;
            };
            if !fleet.instances[from].alive || !fleet.instances[to].alive {
                push(ViolationKind::Reference, format!("{what}: instance already released"));
                continue;
            }
            if from == to {
                push(ViolationKind::Consolidation, format!("{what}: moves a copy onto its own instance"));
                continue;
            }
            if released_now.contains(planned.to.as_str()) {
                push(ViolationKind::Consolidation, format!("{what}: target is released in the same step"));
            }
            if fleet.instances[to].draining {
                push(ViolationKind::Consolidation, format!("{what}: target is draining (it receives no new copy)"));
            }
            let given = outgoing.entry((from, component)).or_insert(0);
            *given += 1;
            let held = fleet.instances[from].copies.get(&component).copied().unwrap_or(0);
            if *given > held {
                push(
                    ViolationKind::Consolidation,
                    format!("{what}: source holds only {held} copies at the step's start"),
                );
            }
            let target = &fleet.instances[to];
            if problem.components()[component].placement_requirement(problem, target.type_index).is_none() {
                push(
                    ViolationKind::Eligibility,
                    format!(
                        "{what}: {} may not run on {} (not in its specifications or not a pool type)",
                        planned.inference_component_name,
                        problem.instance_types()[target.type_index].name
                    ),
                );
            }
            *incoming.entry(to).or_default().entry(component).or_insert(0) += 1;
        }

        // Make-before-break: targets hold their copies and every incoming one at once.
        for (&target, arriving) in &incoming {
            let instance = &fleet.instances[target];
            let during = arriving.iter().fold(instance.used(problem), |used, (&component, &count)| {
                used.plus(&copy_resources(problem, component, instance.type_index).times(u64::from(count)))
            });
            let capacity = problem.instance_types()[instance.type_index].capacity;
            if !during.fits_in(&capacity) {
                push(
                    ViolationKind::Packing,
                    format!(
                        "{label}: {} needs {} accelerators, {} milli-cores, {} MiB while copies move in; it has {}, {}, {}",
                        instance.id,
                        during.accelerators,
                        during.milli_cpus,
                        during.memory_mib,
                        capacity.accelerators,
                        capacity.milli_cpus,
                        capacity.memory_mib
                    ),
                );
            }
        }

        // The moves finish: sources stop their copies, targets keep the new ones.
        for (&(from, component), &count) in &outgoing {
            let copies = &mut fleet.instances[from].copies;
            if let Some(held) = copies.get_mut(&component) {
                *held = held.saturating_sub(count);
                if *held == 0 {
                    copies.remove(&component);
                }
            }
        }
        for (&to, arriving) in &incoming {
            for (&component, &count) in arriving {
                *fleet.instances[to].copies.entry(component).or_insert(0) += count;
            }
        }

        // Releases.
        let mut released_ids: BTreeSet<&str> = BTreeSet::new();
        let mut releases_in_service: Vec<&str> = Vec::new();
        for id in &step.release {
            let Some(&index) = fleet.by_id.get(id) else {
                push(ViolationKind::Reference, format!("{label}: releases unknown instance {id:?}"));
                continue;
            };
            if !released_ids.insert(id.as_str()) {
                push(ViolationKind::Reference, format!("{label}: {id} is listed twice"));
                continue;
            }
            if !fleet.instances[index].alive {
                push(ViolationKind::Reference, format!("{label}: {id} was already released"));
                continue;
            }
            if launched_now.contains(&index) {
                push(ViolationKind::Consolidation, format!("{label}: {id} is released in the step that launches it"));
            }
            if !fleet.instances[index].copies.is_empty() {
                push(ViolationKind::Consolidation, format!("{label}: {id} is released but still runs copies"));
            }
            if !fleet.instances[index].draining {
                releases_in_service.push(id.as_str());
            }
            fleet.instances[index].alive = false;
        }
        let draining_left: Vec<&str> =
            fleet.alive().filter(|instance| instance.draining).map(|instance| instance.id.as_str()).collect();
        if !releases_in_service.is_empty() && !draining_left.is_empty() {
            push(
                ViolationKind::Consolidation,
                format!(
                    "{label}: releases {} while draining instance(s) {} still run (draining instances are emptied first)",
                    releases_in_service.join(", "),
                    draining_left.join(", ")
                ),
            );
        }
        let alive = fleet.alive().count();
        if !step.release.is_empty() && alive < min_instances {
            push(
                ViolationKind::InstanceBounds,
                format!("{label}: {alive} instances left, MinInstanceCount is {min_instances}"),
            );
        }
        if let Some(max) = max_instances {
            if !step.launch.is_empty() && alive > max {
                push(
                    ViolationKind::InstanceBounds,
                    format!("{label}: {alive} instances after the step, MaxInstanceCount is {max}"),
                );
            }
        }

        // Copy counts, balance and SPREAD.
        let per_az = fleet.copies_per_az();
        for (component, info) in problem.components().iter().enumerate() {
            let total: u64 = per_az[component].iter().sum();
            if total != totals_start[component] {
                push(
                    ViolationKind::Consolidation,
                    format!(
                        "{label}: {} has {total} copies, {} before rebalancing",
                        info.name, totals_start[component]
                    ),
                );
            }
            if info.max_imbalance.is_none() {
                continue;
            }
            let (before, after) = (balance_before[component], imbalance(&per_az[component]));
            if after > before {
                push(
                    ViolationKind::Consolidation,
                    format!("{label}: imbalance of {} grows from {before} to {after} copies", info.name),
                );
            }
        }
        for (&component, &before) in spread_components.iter().zip(&spread_before) {
            let after = fleet.spread_offenders(component);
            if after > before {
                push(
                    ViolationKind::Spread,
                    format!(
                        "{label}: instances breaking SPREAD for {} grow from {before} to {after}",
                        problem.components()[component].name
                    ),
                );
            }
        }
    }

    let actual = objective(problem, &fleet.final_fleet());
    if actual != plan.objective {
        push(
            ViolationKind::Accounting,
            format!("reported objective {:?} but the steps reach {:?}", plan.objective, actual),
        );
    }
    let key_end = fleet.key();
    if !plan.steps.is_empty() && key_end >= key_start {
        push(
            ViolationKind::Accounting,
            format!(
                "the steps do not improve the fleet: (draining, instances by priority 6..1, cost) goes from {key_start:?} to {key_end:?}"
            ),
        );
    }
    violations
}
