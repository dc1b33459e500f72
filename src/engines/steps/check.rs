//! The per-step checks shared by consolidation and rebalancing (docs/contract.md §3 and §7).
//!
//! [`CheckedFleet`] is the strict replay of the two checkers: a fleet by instance id, and the
//! checks of moves, make-before-break, releases, `MinInstanceCount`, balance and SPREAD that
//! both contracts state alike. Each checker keeps what only its contract has (launches,
//! draining order, the final improvement test) and calls these in the order the contract
//! states the rules. A broken step rule is reported with the checker's own kind
//! ([`ViolationKind::Consolidation`] or [`ViolationKind::Rebalance`]).

use std::collections::{BTreeMap, BTreeSet};

use super::{copy_resources, spread_offenders, Move, SpreadView};
use crate::fleet::{imbalance, FinalFleet, FinalInstance};
use crate::index::{ComponentIndex, TypeIndex};
use crate::problem::{PlacementStrategy, Problem, Resources};
use crate::violation::{Violation, ViolationKind};

/// The violations found so far.
#[derive(Default)]
pub(crate) struct Findings(pub(crate) Vec<Violation>);

impl Findings {
    pub(crate) fn push(&mut self, kind: ViolationKind, message: String) {
        self.0.push(Violation { kind, message });
    }
}

/// One instance as the replay sees it.
pub(crate) struct CheckedInstance {
    pub(crate) id: String,
    pub(crate) type_index: usize,
    pub(crate) az_index: usize,
    pub(crate) reserved: bool,
    pub(crate) draining: bool,
    /// Index in the problem's fleet; `None` for a launch.
    pub(crate) existing: Option<usize>,
    pub(crate) copies: BTreeMap<usize, u32>,
    pub(crate) alive: bool,
}

impl CheckedInstance {
    fn used(&self, problem: &Problem) -> Resources {
        problem.copies_footprint(self.type_index, &self.copies)
    }
}

/// The fleet being replayed, by instance id.
pub(crate) struct CheckedFleet<'p> {
    pub(crate) problem: &'p Problem,
    pub(crate) instances: Vec<CheckedInstance>,
    pub(crate) by_id: BTreeMap<String, usize>,
    /// The kind a broken step rule is reported with: the checker's contract.
    step_rule: ViolationKind,
}

/// How the two contracts word the move rules they state differently.
pub(crate) struct MoveWording {
    /// Appended to "unknown instance" (consolidation adds why no id can be new).
    pub(crate) unknown_instance: &'static str,
    /// The kind and clause of a move onto a draining instance.
    pub(crate) draining_target: (ViolationKind, &'static str),
}

/// A step's moves, resolved: copies leaving `(instance, component)` and arriving per instance.
#[derive(Default)]
pub(crate) struct ResolvedMoves {
    outgoing: BTreeMap<(usize, usize), u32>,
    incoming: BTreeMap<usize, BTreeMap<usize, u32>>,
}

/// What a step must not make worse, measured at its start.
pub(crate) struct Baseline {
    balance: Vec<u64>,
    spread: Vec<(usize, u64)>,
}

impl<'p> CheckedFleet<'p> {
    /// The problem's fleet, every instance alive, empty copy entries dropped; broken step rules
    /// are reported as `step_rule`.
    pub(crate) fn new(problem: &'p Problem, step_rule: ViolationKind) -> CheckedFleet<'p> {
        let instances: Vec<CheckedInstance> = problem
            .fleet()
            .iter()
            .enumerate()
            .map(|(index, existing)| CheckedInstance {
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
        CheckedFleet { problem, instances, by_id, step_rule }
    }

    pub(crate) fn alive(&self) -> impl Iterator<Item = &CheckedInstance> + '_ {
        self.instances.iter().filter(|instance| instance.alive)
    }

    /// `[component][az]` copies on alive instances.
    pub(crate) fn copies_per_az(&self) -> Vec<Vec<u64>> {
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

    /// Copies per component on alive instances.
    pub(crate) fn copy_totals(&self) -> Vec<u64> {
        self.copies_per_az().iter().map(|row| row.iter().sum()).collect()
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

    /// The alive instances as a final fleet, for the objective.
    pub(crate) fn final_fleet(&self) -> FinalFleet {
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

    /// Imbalance per component and SPREAD offenders per SPREAD component, now.
    pub(crate) fn baseline(&self) -> Baseline {
        let components = self.problem.components();
        Baseline {
            balance: self.copies_per_az().iter().map(|row| imbalance(row)).collect(),
            spread: (0..components.len())
                .filter(|&component| components[component].strategy == PlacementStrategy::Spread)
                .map(|component| (component, self.spread_offenders(component)))
                .collect(),
        }
    }

    /// Checks a step's moves against the fleet at the step's start: known component and alive
    /// instances, never onto its own instance, a draining instance or one `released_now`, a
    /// source holding the copies it gives, a target type the component may use.
    pub(crate) fn check_moves(
        &self,
        label: &str,
        moves: &[Move],
        released_now: &BTreeSet<&str>,
        wording: &MoveWording,
        findings: &mut Findings,
    ) -> ResolvedMoves {
        let problem = self.problem;
        let mut resolved = ResolvedMoves::default();
        for (move_number, planned) in moves.iter().enumerate() {
            let what = format!(
                "{label}, move {} ({} {} -> {})",
                move_number + 1,
                planned.inference_component_name,
                planned.from,
                planned.to
            );
            let Some(component) = problem.component_index(&planned.inference_component_name) else {
                findings.push(ViolationKind::Reference, format!("{what}: unknown component"));
                continue;
            };
            let (from, to) = (self.by_id.get(&planned.from).copied(), self.by_id.get(&planned.to).copied());
            let (Some(from), Some(to)) = (from, to) else {
                findings
                    .push(ViolationKind::Reference, format!("{what}: unknown instance{}", wording.unknown_instance));
                continue;
            };
            if !self.instances[from].alive || !self.instances[to].alive {
                findings.push(ViolationKind::Reference, format!("{what}: instance already released"));
                continue;
            }
            if from == to {
                findings.push(self.step_rule, format!("{what}: moves a copy onto its own instance"));
                continue;
            }
            if released_now.contains(planned.to.as_str()) {
                findings.push(self.step_rule, format!("{what}: target is released in the same step"));
            }
            if self.instances[to].draining {
                let (kind, clause) = wording.draining_target;
                findings.push(kind, format!("{what}: {clause}"));
            }
            let given = resolved.outgoing.entry((from, component)).or_insert(0);
            *given += 1;
            let held = self.instances[from].copies.get(&component).copied().unwrap_or(0);
            if *given > held {
                findings.push(self.step_rule, format!("{what}: source holds only {held} copies at the step's start"));
            }
            let target = &self.instances[to];
            if problem.components()[component].placement_requirement(problem, target.type_index).is_none() {
                findings.push(
                    ViolationKind::Eligibility,
                    format!(
                        "{what}: {} may not run on {} (not in its specifications or not a pool type)",
                        planned.inference_component_name,
                        problem.instance_types()[target.type_index].name
                    ),
                );
            }
            *resolved.incoming.entry(to).or_default().entry(component).or_insert(0) += 1;
        }
        resolved
    }

    /// Make-before-break: every target holds its copies and every incoming one at once.
    pub(crate) fn check_make_before_break(&self, label: &str, moves: &ResolvedMoves, findings: &mut Findings) {
        let problem = self.problem;
        for (&target, arriving) in &moves.incoming {
            let instance = &self.instances[target];
            let during = arriving.iter().fold(instance.used(problem), |used, (&component, &count)| {
                used.plus(
                    &copy_resources(problem, ComponentIndex::new(component), TypeIndex::new(instance.type_index))
                        .times(u64::from(count)),
                )
            });
            let capacity = problem.instance_types()[instance.type_index].capacity;
            if !during.fits_in(&capacity) {
                findings.push(
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
    }

    /// The moves finish: sources stop their copies, targets keep the new ones.
    pub(crate) fn finish_moves(&mut self, moves: &ResolvedMoves) {
        for (&(from, component), &count) in &moves.outgoing {
            let copies = &mut self.instances[from].copies;
            if let Some(held) = copies.get_mut(&component) {
                *held = held.saturating_sub(count);
                if *held == 0 {
                    copies.remove(&component);
                }
            }
        }
        for (&to, arriving) in &moves.incoming {
            for (&component, &count) in arriving {
                *self.instances[to].copies.entry(component).or_insert(0) += count;
            }
        }
    }

    /// Releases a step's instances: each known, listed once, alive, not launched in the same
    /// step (`launched_now`), and empty. Returns the indices it released, in the step's order.
    pub(crate) fn release(
        &mut self,
        label: &str,
        release: &[String],
        launched_now: &BTreeSet<usize>,
        findings: &mut Findings,
    ) -> Vec<usize> {
        let mut released_ids: BTreeSet<&str> = BTreeSet::new();
        let mut released = Vec::new();
        for id in release {
            let Some(&index) = self.by_id.get(id) else {
                findings.push(ViolationKind::Reference, format!("{label}: releases unknown instance {id:?}"));
                continue;
            };
            if !released_ids.insert(id.as_str()) {
                findings.push(ViolationKind::Reference, format!("{label}: {id} is listed twice"));
                continue;
            }
            if !self.instances[index].alive {
                findings.push(ViolationKind::Reference, format!("{label}: {id} was already released"));
                continue;
            }
            if launched_now.contains(&index) {
                findings.push(self.step_rule, format!("{label}: {id} is released in the step that launches it"));
            }
            if !self.instances[index].copies.is_empty() {
                findings.push(self.step_rule, format!("{label}: {id} is released but still runs copies"));
            }
            self.instances[index].alive = false;
            released.push(index);
        }
        released
    }

    /// A step that releases instances keeps at least `MinInstanceCount` alive.
    pub(crate) fn check_min_instances(&self, label: &str, releases: bool, findings: &mut Findings) {
        let min_instances = self.problem.scaling().min_instances as usize;
        let alive = self.alive().count();
        if releases && alive < min_instances {
            findings.push(
                ViolationKind::InstanceBounds,
                format!("{label}: {alive} instances left, MinInstanceCount is {min_instances}"),
            );
        }
    }

    /// After a step: no component's imbalance over all AZs grew and no SPREAD component has more
    /// instances breaking the SPREAD rule than at `before`. With `totals_before_rebalancing`,
    /// each component's copy count is checked against it first (rebalancing checks it per step).
    pub(crate) fn check_not_worse(
        &self,
        label: &str,
        before: &Baseline,
        totals_before_rebalancing: Option<&[u64]>,
        findings: &mut Findings,
    ) {
        let per_az = self.copies_per_az();
        for (component, info) in self.problem.components().iter().enumerate() {
            if let Some(totals) = totals_before_rebalancing {
                let total: u64 = per_az[component].iter().sum();
                if total != totals[component] {
                    findings.push(
                        self.step_rule,
                        format!("{label}: {} has {total} copies, {} before rebalancing", info.name, totals[component]),
                    );
                }
            }
            if info.max_imbalance.is_none() {
                continue;
            }
            let (balance_before, after) = (before.balance[component], imbalance(&per_az[component]));
            if after > balance_before {
                findings.push(
                    self.step_rule,
                    format!("{label}: imbalance of {} grows from {balance_before} to {after} copies", info.name),
                );
            }
        }
        for &(component, spread_before) in &before.spread {
            let after = self.spread_offenders(component);
            if after > spread_before {
                findings.push(
                    ViolationKind::Spread,
                    format!(
                        "{label}: instances breaking SPREAD for {} grow from {spread_before} to {after}",
                        self.problem.components()[component].name
                    ),
                );
            }
        }
    }
}
