//! The steps vocabulary shared by consolidation (docs/contract.md §3) and rebalancing (§7): a
//! plan made of make-before-break steps, each launching instances, then moving copies, then
//! releasing the instances it emptied. Consolidation is the case without launches.
//!
//! This module owns what both engines mean alike: [`Move`], [`Launch`], what a [`Step`] holds,
//! the lenient [`Replay`] behind the plans' final fleets, the resources one copy uses, SPREAD
//! offender counting, the table body both plans print, and the strict per-step checks
//! ([`check`]). Neither engine imports the other for these.

pub(crate) mod check;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::engines::spread::{has_room_for_copy, spread_offenders_among};
use crate::fleet::{FinalFleet, FinalInstance};
use crate::index::{AzIndex, ComponentIndex, TypeIndex};
use crate::plan::StopReason;
use crate::problem::{ExistingInstance, PlacementStrategy, Problem, Resources};
use crate::text::{escape_text, Align, Table};

/// One move: a copy of a component from one instance to another (make-before-break).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Move {
    /// Component.
    pub inference_component_name: String,
    /// Source instance.
    pub from: String,
    /// Target instance.
    pub to: String,
}

/// One launch of a rebalancing step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Launch {
    /// `new-1`, `new-2`, … counting up across the whole plan, skipping ids the fleet uses.
    pub instance_id: String,
    /// Instance type (a pool type).
    pub instance_type: String,
    /// Availability zone.
    pub availability_zone: String,
    /// Launched into a capacity reservation (prepaid, costs nothing).
    #[serde(default)]
    pub reserved: bool,
}

/// What every step of a step plan holds, in execution order: launches, moves, releases.
pub(crate) trait Step {
    /// Instances launched at the start of the step (none in consolidation).
    fn launches(&self) -> &[Launch];
    /// Copies moved, make-before-break.
    fn moves(&self) -> &[Move];
    /// Instances released at the end of the step.
    fn releases(&self) -> &[String];
}

/// Ids of every released instance, in release order.
pub(crate) fn released<S: Step>(steps: &[S]) -> impl Iterator<Item = &str> + '_ {
    steps.iter().flat_map(|step| step.releases().iter().map(String::as_str))
}

/// Total number of moves over `steps`.
pub(crate) fn move_count<S: Step>(steps: &[S]) -> usize {
    steps.iter().map(|step| step.moves().len()).sum()
}

/// The fleet after `steps`, replayed by instance id on the problem's fleet with [`Replay`].
pub(crate) fn fleet_after<S: Step>(problem: &Problem, steps: &[S]) -> FinalFleet {
    let mut replay = Replay::new(problem);
    for step in steps {
        step.launches().iter().for_each(|launch| replay.launch(launch));
        step.moves().iter().for_each(|planned| replay.apply_move(planned));
        step.releases().iter().for_each(|id| replay.release(id));
    }
    replay.finish()
}

/// The stop reason a step plan read without one carries (serde's default).
pub(crate) fn completed() -> StopReason {
    StopReason::Completed
}

/// Where each instance a plan names runs, for readable ids: the problem's fleet and the plan's
/// launches.
pub(crate) struct Places {
    by_id: BTreeMap<String, (String, String)>,
}

impl Places {
    /// The fleet's instances, then `launches` (a launch's id shadows a fleet id it repeats).
    pub(crate) fn new<'a>(problem: &Problem, launches: impl IntoIterator<Item = &'a Launch>) -> Places {
        let mut by_id: BTreeMap<String, (String, String)> = problem
            .fleet()
            .iter()
            .map(|instance| {
                let type_name = problem.instance_types()[instance.type_index].name.clone();
                (instance.id.clone(), (type_name, problem.azs()[instance.az_index].clone()))
            })
            .collect();
        for launch in launches {
            by_id.insert(launch.instance_id.clone(), (launch.instance_type.clone(), launch.availability_zone.clone()));
        }
        Places { by_id }
    }

    /// `id (type, AZ)`, or just the id if it is unknown.
    pub(crate) fn text(&self, id: &str) -> String {
        match self.by_id.get(id) {
            Some((type_name, az)) => format!("{id} ({type_name}, {az})"),
            None => id.to_string(),
        }
    }
}

/// The body of one step in a plan's table: its launches, a table of its moves, its releases.
pub(crate) fn write_step<S: Step>(out: &mut String, places: &Places, step: &S) {
    for launch in step.launches() {
        let reserved = if launch.reserved { ", reserved" } else { "" };
        let launched =
            format!("{} ({}, {}{reserved})", launch.instance_id, launch.instance_type, launch.availability_zone);
        let _ = writeln!(out, "  launch {}", escape_text(&launched));
    }
    if !step.moves().is_empty() {
        let mut table = Table::new(&[("COMPONENT", Align::Left), ("FROM", Align::Left), ("TO", Align::Left)]);
        for planned in step.moves() {
            table.row(vec![
                planned.inference_component_name.clone(),
                places.text(&planned.from),
                places.text(&planned.to),
            ]);
        }
        out.push_str(&table.render("  "));
    }
    for id in step.releases() {
        let _ = writeln!(out, "  release {}", escape_text(&places.text(id)));
    }
}

/// One instance as [`spread_offenders`] sees it.
pub(crate) struct SpreadView {
    /// AZ index.
    pub az_index: usize,
    /// Type index.
    pub type_index: usize,
    /// Copies of the component in question.
    pub count: u64,
    /// Resources used by all copies on the instance.
    pub used: Resources,
}

/// Number of instances breaking the SPREAD rule for `component`: instances holding at least two
/// copies more than another eligible instance in the same AZ that has room for one more copy.
/// (Counts the same pairs as [`crate::verify::spread_violations`], one per heavy instance.)
pub(crate) fn spread_offenders(problem: &Problem, component: usize, instances: &[SpreadView]) -> u64 {
    (0..problem.azs().len())
        .map(|az_index| {
            spread_offenders_among(
                instances
                    .iter()
                    .filter(|view| view.az_index == az_index)
                    .map(|view| (view.count, has_room_for_copy(problem, component, view.type_index, &view.used))),
            )
        })
        .sum()
}

/// Total number of instances breaking the SPREAD rule in a fleet, over all SPREAD components:
/// the measure consolidation must not increase per component. Equals the number of entries
/// [`crate::verify::spread_violations`] reports for the same fleet.
pub fn spread_offender_total(problem: &Problem, fleet: &FinalFleet) -> u64 {
    (0..problem.components().len())
        .filter(|&component| problem.components()[component].strategy == PlacementStrategy::Spread)
        .map(|component| {
            let views: Vec<SpreadView> = fleet
                .instances
                .iter()
                .map(|instance| SpreadView {
                    az_index: instance.az_index,
                    type_index: instance.type_index,
                    count: u64::from(instance.copies_of(component)),
                    used: instance.used(problem),
                })
                .collect();
            spread_offenders(problem, component, &views)
        })
        .sum()
}

/// One instance as a step planner (consolidation, rebalance) tracks it from step to step.
#[derive(Debug, Clone)]
pub(crate) struct StepInstance {
    /// Instance id (empty for a launch until the plan names it).
    pub(crate) id: String,
    pub(crate) type_index: usize,
    pub(crate) az_index: usize,
    pub(crate) reserved: bool,
    /// `State: Draining` (contract §6): released first, never a move target.
    pub(crate) draining: bool,
    /// Copies per component now.
    pub(crate) copies: BTreeMap<usize, u32>,
    /// Resources the copies use.
    pub(crate) used: Resources,
    /// Not released (yet).
    pub(crate) alive: bool,
}

impl StepInstance {
    pub(crate) fn copies_of(&self, component: usize) -> u32 {
        self.copies.get(&component).copied().unwrap_or(0)
    }

    pub(crate) fn total_copies(&self) -> u64 {
        self.copies.values().map(|&count| u64::from(count)).sum()
    }
}

/// Resources one copy of `component` uses on `type_index` as the fleet measures it (zero when the
/// component has no requirement there).
pub(crate) fn copy_resources(problem: &Problem, component: ComponentIndex, type_index: TypeIndex) -> Resources {
    problem
        .components()
        .get(component.index())
        .and_then(|info| info.requirements.get(type_index.index()))
        .and_then(Option::as_ref)
        .map_or(Resources::ZERO, |requirement| requirement.resources)
}

/// Instance `index` of the problem's fleet as it runs before any step, empty copy entries
/// dropped.
pub(crate) fn running_instance(index: usize, existing: &ExistingInstance) -> FinalInstance {
    FinalInstance {
        id: existing.id.clone(),
        type_index: existing.type_index,
        az_index: existing.az_index,
        reserved: existing.reserved,
        existing: Some(index),
        copies: existing.copies.iter().copied().filter(|&(_, count)| count > 0).collect(),
        new_copies: BTreeMap::new(),
    }
}

/// The instance `launch` starts, of the type and in the AZ it names, still empty.
pub(crate) fn launched_instance(launch: &Launch, type_index: usize, az_index: usize) -> FinalInstance {
    FinalInstance {
        id: launch.instance_id.clone(),
        type_index,
        az_index,
        reserved: launch.reserved,
        existing: None,
        copies: BTreeMap::new(),
        new_copies: BTreeMap::new(),
    }
}

/// The lenient replay behind `ConsolidationPlan::final_fleet` and `RebalancePlan::fleet_after`:
/// entries that do not make sense (unknown ids, copies that are not there) are skipped, since
/// the checkers ([`check`]) report them.
pub(crate) struct Replay<'p> {
    problem: &'p Problem,
    /// Existing instances in fleet order, then launches in launch order; `false` once released.
    instances: Vec<(FinalInstance, bool)>,
    by_id: BTreeMap<String, usize>,
    /// Per (type, AZ): launches and reserved launches.
    launches: BTreeMap<(TypeIndex, AzIndex), (u32, u32)>,
}

impl<'p> Replay<'p> {
    /// The problem's fleet, every instance alive, empty copy entries dropped.
    pub(crate) fn new(problem: &'p Problem) -> Replay<'p> {
        let instances: Vec<(FinalInstance, bool)> = problem
            .fleet()
            .iter()
            .enumerate()
            .map(|(index, existing)| (running_instance(index, existing), true))
            .collect();
        let by_id = instances.iter().enumerate().map(|(index, (instance, _))| (instance.id.clone(), index)).collect();
        Replay { problem, instances, by_id, launches: BTreeMap::new() }
    }

    /// Adds a launched instance (skipped when its type or AZ is unknown or its id is taken).
    pub(crate) fn launch(&mut self, launch: &Launch) {
        let problem = self.problem;
        let (Some(type_index), Some(az_index)) =
            (problem.type_index(&launch.instance_type), problem.az_index(&launch.availability_zone))
        else {
            return;
        };
        if self.by_id.contains_key(&launch.instance_id) {
            return;
        }
        let entry = self.launches.entry((TypeIndex::new(type_index), AzIndex::new(az_index))).or_insert((0, 0));
        entry.0 += 1;
        entry.1 += u32::from(launch.reserved);
        self.by_id.insert(launch.instance_id.clone(), self.instances.len());
        self.instances.push((launched_instance(launch, type_index, az_index), true));
    }

    /// Moves one copy (skipped when the component, an instance or the copy is not there).
    pub(crate) fn apply_move(&mut self, planned: &Move) {
        let component = self.problem.component_index(&planned.inference_component_name);
        let (from, to) = (self.by_id.get(&planned.from).copied(), self.by_id.get(&planned.to).copied());
        let (Some(component), Some(from), Some(to)) = (component, from, to) else { return };
        let Some((source, true)) = self.instances.get_mut(from) else { return };
        let Some(count) = source.copies.get_mut(&component) else { return };
        *count -= 1;
        if *count == 0 {
            source.copies.remove(&component);
        }
        if let Some((target, _)) = self.instances.get_mut(to) {
            *target.copies.entry(component).or_insert(0) += 1;
            *target.new_copies.entry(component).or_insert(0) += 1;
        }
    }

    /// Releases an instance (skipped when the id is unknown).
    pub(crate) fn release(&mut self, id: &str) {
        if let Some((_, alive)) = self.by_id.get(id).and_then(|&index| self.instances.get_mut(index)) {
            *alive = false;
        }
    }

    /// The instances still alive, with the launches per (type, AZ).
    pub(crate) fn finish(self) -> FinalFleet {
        let instances = self.instances.into_iter().filter(|(_, alive)| *alive).map(|(instance, _)| instance).collect();
        FinalFleet { instances, launches: self.launches, removed: BTreeMap::new() }
    }
}
