//! The independent checker for consolidation plans (docs/contract.md §3).
//!
//! It replays a [`ConsolidationPlan`] step by step on the problem's fleet, by instance id, and
//! checks every rule of docs/contract.md §3 for each step. It shares nothing with the planner except the rule
//! definitions (imbalance, SPREAD offenders) and the objective.

use std::collections::{BTreeMap, BTreeSet};

use super::{copy_resources, spread_offenders, ConsolidationPlan, SpreadView};
use crate::fleet::{imbalance, objective, FinalFleet, FinalInstance};
use crate::problem::{PlacementStrategy, Problem, Resources};
use crate::verify::{Violation, ViolationKind};

struct Instance {
    id: String,
    type_index: usize,
    az_index: usize,
    reserved: bool,
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
}

impl Fleet<'_> {
    fn alive_count(&self) -> usize {
        self.instances.iter().filter(|instance| instance.alive).count()
    }

    fn copies_per_az(&self) -> Vec<Vec<u64>> {
        let mut counts = vec![vec![0u64; self.problem.azs().len()]; self.problem.components().len()];
        for instance in self.instances.iter().filter(|instance| instance.alive) {
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
            .instances
            .iter()
            .filter(|instance| instance.alive)
            .map(|instance| SpreadView {
                az_index: instance.az_index,
                type_index: instance.type_index,
                count: u64::from(instance.copies.get(&component).copied().unwrap_or(0)),
                used: instance.used(self.problem),
            })
            .collect();
        spread_offenders(self.problem, component, &views)
    }
}

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
    let mut violations: Vec<Violation> = Vec::new();
    let mut push = |kind: ViolationKind, message: String| violations.push(Violation { kind, message });
    let mut fleet = Fleet {
        problem,
        instances: problem
            .fleet()
            .iter()
            .map(|existing| Instance {
                id: existing.id.clone(),
                type_index: existing.type_index,
                az_index: existing.az_index,
                reserved: existing.reserved,
                copies: existing.copies.iter().copied().filter(|&(_, count)| count > 0).collect(),
                alive: true,
            })
            .collect(),
    };
    let by_id: BTreeMap<&str, usize> =
        problem.fleet().iter().enumerate().map(|(index, existing)| (existing.id.as_str(), index)).collect();
    let step_size = problem.scaling().maximum_step_size.max(1) as usize;
    let min_instances = problem.scaling().min_instances as usize;
    let totals_before: Vec<u64> = fleet.copies_per_az().iter().map(|row| row.iter().sum()).collect();

    for (step_number, step) in plan.steps.iter().enumerate() {
        let label = format!("step {}", step_number + 1);
        if step.moves.is_empty() && step.release.is_empty() {
            push(ViolationKind::Consolidation, format!("{label}: empty step"));
        }
        if step.release.len() > step_size {
            push(
                ViolationKind::Consolidation,
                format!("{label}: releases {} instances, MaximumStepSize is {step_size}", step.release.len()),
            );
        }
        let balance_before: Vec<u64> = fleet.copies_per_az().iter().map(|row| imbalance(row)).collect();
        let spread_components: Vec<usize> = (0..problem.components().len())
            .filter(|&component| problem.components()[component].strategy == PlacementStrategy::Spread)
            .collect();
        let spread_before: Vec<u64> =
            spread_components.iter().map(|&component| fleet.spread_offenders(component)).collect();
        let released_now: BTreeSet<&str> = step.release.iter().map(String::as_str).collect();

        // Moves, resolved against the fleet at the step's start.
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
            let (from, to) = (by_id.get(planned.from.as_str()).copied(), by_id.get(planned.to.as_str()).copied());
            let (Some(from), Some(to)) = (from, to) else {
                push(ViolationKind::Reference, format!("{what}: unknown instance (consolidation never launches)"));
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
            if problem.fleet().get(to).is_some_and(|existing| existing.draining) {
                push(ViolationKind::Draining, format!("{what}: target is Draining and receives no new copy"));
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

        // The step ends: sources stop their copies, targets keep the new ones.
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
        for id in &step.release {
            let Some(&index) = by_id.get(id.as_str()) else {
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
            if !fleet.instances[index].copies.is_empty() {
                push(ViolationKind::Consolidation, format!("{label}: {id} is released but still runs copies"));
            }
            fleet.instances[index].alive = false;
        }
        let alive = fleet.alive_count();
        if !step.release.is_empty() && alive < min_instances {
            push(
                ViolationKind::InstanceBounds,
                format!("{label}: {alive} instances left, MinInstanceCount is {min_instances}"),
            );
        }

        // Balance and SPREAD must not get worse.
        let per_az = fleet.copies_per_az();
        for (component, info) in problem.components().iter().enumerate() {
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

    // Copy counts never change (a move is one copy out, one in; a lost copy is a bug).
    let totals_after: Vec<u64> = fleet.copies_per_az().iter().map(|row| row.iter().sum()).collect();
    for (component, (before, after)) in totals_before.iter().zip(&totals_after).enumerate() {
        if before != after {
            push(
                ViolationKind::Consolidation,
                format!(
                    "{}: {before} copies before consolidation, {after} after",
                    problem.components()[component].name
                ),
            );
        }
    }

    let final_fleet = FinalFleet {
        instances: fleet
            .instances
            .iter()
            .enumerate()
            .filter(|(_, instance)| instance.alive)
            .map(|(index, instance)| FinalInstance {
                id: instance.id.clone(),
                type_index: instance.type_index,
                az_index: instance.az_index,
                reserved: instance.reserved,
                existing: Some(index),
                copies: instance.copies.clone(),
                new_copies: BTreeMap::new(),
            })
            .collect(),
        launches: BTreeMap::new(),
        removed: BTreeMap::new(),
    };
    let actual = objective(problem, &final_fleet);
    if actual != plan.objective {
        push(
            ViolationKind::Accounting,
            format!("reported objective {:?} but the steps reach {:?}", plan.objective, actual),
        );
    }
    violations
}
