//! Public executors (contract §6–§7): apply a [`Plan`], a [`ConsolidationPlan`] or a
//! [`RebalancePlan`] to the problem's fleet — fully, or as far as it really went — and get the
//! next [`Fleet`], what was executed, and the capacity events the launches imply, ready for a
//! [`CapacityLedger`](crate::CapacityLedger) and the next scenario.
//!
//! - [`execute_plan`]: a plan's actions, with an [`Execution`] (real ids, failed launches,
//!   placements, removals, terminations); the same replay as [`observe`].
//! - [`execute_consolidation`] and [`execute_rebalance`]: step plans, with a [`StepExecution`]
//!   (real ids, the failed launch, the failed move, failed releases). Steps run in order, each
//!   make-before-break: launches, then moves, then releases. Execution stops at the first
//!   failure (a launch or a move): the steps before it stand; of the failed step, the moves
//!   before the failure stand (each move is itself make-before-break: no copy is lost) and
//!   nothing is released except the step's own launches that hold no copy (the caller
//!   terminates them, [`StepOutcome::abandoned`]); no later step runs. A failed launch
//!   therefore leaves the fleet exactly as after the previous step.
//!
//! No clock is read: the capacity events carry the execution's time.
//!
//! ```
//! use fleetplan::execute::{execute_rebalance, StepExecution};
//! use fleetplan::{rebalance, CapacityLedger, LaunchFailure, Problem, ScenarioBuilder};
//!
//! // Two g5 (priority 2) while g6 (priority 1) has capacity again: rebalance back.
//! let mut scenario = ScenarioBuilder::new(["a"])
//!     .pool("ml.g6.12xlarge", 1)
//!     .pool("ml.g5.12xlarge", 2)
//!     .component("chat", 2, 4, 4.0, 16_384)
//!     .fleet_instance("i-1", "ml.g5.12xlarge", "a", false)
//!     .fleet_instance("i-2", "ml.g5.12xlarge", "a", false)
//!     .fleet_copies("chat", "i-1", 1)
//!     .fleet_copies("chat", "i-2", 1)
//!     .build().unwrap();
//! let problem = Problem::new(&scenario).unwrap();
//! let plan = rebalance(&problem);
//! assert!(!plan.steps.is_empty());
//! // The first launch fails: nothing changes, and the ledger learns why.
//! let first = plan.steps[0].launch[0].instance_id.clone();
//! let outcome = execute_rebalance(
//!     &problem,
//!     &plan,
//!     &StepExecution::new(600).launch_failed(&first, LaunchFailure::InsufficientCapacity),
//! )
//! .unwrap();
//! assert_eq!(outcome.steps_completed, 0);
//! assert_eq!(outcome.fleet.instances.len(), 2);
//! let mut ledger = CapacityLedger::new();
//! ledger.extend(outcome.capacity_events.iter().cloned());
//! assert_eq!(ledger.blocks(600).len(), 1);
//! scenario.fleet = outcome.fleet;
//! ```

use std::collections::{BTreeMap, BTreeSet};

use crate::control::{observe, CapacityRecord, LaunchFailure, LaunchOutcome};
pub use crate::control::{Execution, Observed};
use crate::engines::consolidate::{ConsolidationPlan, Move};
use crate::engines::rebalance::{Launch, RebalancePlan};
use crate::engines::steps::{launched_instance, running_instance};
use crate::error::{Issue, IssueKind, ValidationError};
use crate::fleet::{FinalFleet, FinalInstance};
use crate::index::{AzIndex, TypeIndex};
use crate::model::{Fleet, FleetInstance};
use crate::plan::Plan;
use crate::problem::{CapacityEventKind, Problem};

/// Executes `plan` on the problem's fleet as `execution` says it went: [`observe`] of the
/// plan's actions. Launches not named in the execution succeeded under their `new-N` ids; a
/// failed launch takes its placements with it.
pub fn execute_plan(problem: &Problem, plan: &Plan, execution: &Execution) -> Result<Observed, ValidationError> {
    observe(problem, &plan.actions, execution)
}

/// What actually happened while a consolidation or rebalance plan's steps were executed.
/// Everything succeeded unless told otherwise, and a launch not mapped to a real id keeps the
/// plan's `new-N` id. Steps and moves are numbered from 0, as in the plan's JSON arrays.
///
/// ```
/// use fleetplan::execute::StepExecution;
/// use fleetplan::LaunchFailure;
/// let execution = StepExecution::new(1_000)
///     .launched("new-1", "i-0abc")
///     .launch_failed("new-2", LaunchFailure::InsufficientCapacity)
///     .move_failed(1, 0)
///     .release_failed("i-9");
/// assert_eq!(execution.time(), 1_000);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepExecution {
    time: i64,
    launches: BTreeMap<String, LaunchOutcome>,
    /// (step, move) positions whose new copy did not start.
    failed_moves: BTreeSet<(usize, usize)>,
    failed_releases: BTreeSet<String>,
}

impl StepExecution {
    /// Everything succeeded, as known at `time` on the caller's clock (the time of the capacity
    /// events).
    pub fn new(time: i64) -> Self {
        StepExecution {
            time,
            launches: BTreeMap::new(),
            failed_moves: BTreeSet::new(),
            failed_releases: BTreeSet::new(),
        }
    }

    /// The time the execution is known at.
    pub fn time(&self) -> i64 {
        self.time
    }

    /// The plan's launch `plan_id` (e.g. `new-1`) came up as `instance_id`.
    pub fn launched(mut self, plan_id: &str, instance_id: &str) -> Self {
        self.launches.insert(plan_id.to_string(), LaunchOutcome::Launched { instance_id: instance_id.to_string() });
        self
    }

    /// The plan's launch `plan_id` failed: its step stops there (see the module docs).
    pub fn launch_failed(mut self, plan_id: &str, failure: LaunchFailure) -> Self {
        self.launches.insert(plan_id.to_string(), LaunchOutcome::Failed(failure));
        self
    }

    /// Move `move_index` of step `step` failed (its new copy did not start; the old one still
    /// runs): the step stops there.
    pub fn move_failed(mut self, step: usize, move_index: usize) -> Self {
        self.failed_moves.insert((step, move_index));
        self
    }

    /// The release of `instance_id` (as the plan names it) failed: it keeps running, empty.
    /// Execution goes on.
    pub fn release_failed(mut self, instance_id: &str) -> Self {
        self.failed_releases.insert(instance_id.to_string());
        self
    }
}

/// Where and why a step execution stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepFailure {
    /// A launch failed.
    Launch {
        /// The step (0-based).
        step: usize,
        /// The launch as the plan has it.
        launch: Launch,
        /// Why.
        failure: LaunchFailure,
    },
    /// A move's new copy did not start.
    Move {
        /// The step (0-based).
        step: usize,
        /// The move's position in the step (0-based).
        index: usize,
        /// The move as the plan has it.
        planned: Move,
    },
}

impl StepFailure {
    /// The step that failed (0-based).
    pub fn step(&self) -> usize {
        match self {
            StepFailure::Launch { step, .. } | StepFailure::Move { step, .. } => *step,
        }
    }
}

/// The result of executing a step plan.
#[derive(Debug, Clone, PartialEq)]
pub struct StepOutcome {
    /// The fleet that runs now (kept existing instances in fleet order, then kept launches in
    /// launch order, under their real ids), to put in the next scenario.
    pub fleet: Fleet,
    /// Steps that ran to the end (all of them unless [`failure`](Self::failure) is set).
    pub steps_completed: usize,
    /// Where execution stopped, if it did.
    pub failure: Option<StepFailure>,
    /// Moves executed (those of the failed step before its failure included).
    pub moves: usize,
    /// Instances launched that run now, in launch order, under their real ids.
    pub launched: Vec<FleetInstance>,
    /// Instances the completed steps released, in release order (failed releases left out).
    pub released: Vec<FleetInstance>,
    /// Instances the failed step launched and let go again because they hold no copy: the
    /// caller terminates them.
    pub abandoned: Vec<FleetInstance>,
    /// Plan launch id → real id of every successful launch.
    pub instance_ids: BTreeMap<String, String>,
    /// Per (type, AZ) the last launch outcome, at the execution's time, sorted by type then AZ
    /// in the problem's order: `Launched`, or the failure's event (none for
    /// [`LaunchFailure::Other`]). Feed them to a [`CapacityLedger`](crate::CapacityLedger).
    pub capacity_events: Vec<CapacityRecord>,
}

/// Executes a consolidation plan on the problem's fleet as `execution` says it went (see the
/// module docs). Errors: a plan that does not fit the fleet (unknown instance or component, a
/// copy that is not there, releasing an instance that still holds copies) or an execution that
/// names what the plan does not have or never ran; every mistake is named.
///
/// ```
/// use fleetplan::execute::{execute_consolidation, StepExecution};
/// use fleetplan::{consolidate, Problem, ScenarioBuilder};
/// let scenario = ScenarioBuilder::new(["a"])
///     .pool("ml.g6.12xlarge", 1)
///     .component("chat", 2, 1, 1.0, 1024)
///     .strategy("chat", fleetplan::PlacementStrategy::Binpack)
///     .fleet_instance("i-1", "ml.g6.12xlarge", "a", false)
///     .fleet_instance("i-2", "ml.g6.12xlarge", "a", false)
///     .fleet_copies("chat", "i-1", 1)
///     .fleet_copies("chat", "i-2", 1)
///     .build().unwrap();
/// let problem = Problem::new(&scenario).unwrap();
/// let plan = consolidate(&problem);
/// let outcome = execute_consolidation(&problem, &plan, &StepExecution::new(0)).unwrap();
/// assert_eq!((outcome.fleet.instances.len(), outcome.released.len()), (1, 1));
/// // The move failed: both instances keep one copy each.
/// let outcome = execute_consolidation(&problem, &plan, &StepExecution::new(0).move_failed(0, 0)).unwrap();
/// assert_eq!((outcome.fleet.instances.len(), outcome.steps_completed), (2, 0));
/// ```
pub fn execute_consolidation(
    problem: &Problem,
    plan: &ConsolidationPlan,
    execution: &StepExecution,
) -> Result<StepOutcome, ValidationError> {
    let steps: Vec<StepView<'_>> =
        plan.steps.iter().map(|step| StepView { launch: &[], moves: &step.moves, release: &step.release }).collect();
    execute_steps(problem, &steps, execution)
}

/// Executes a rebalance plan on the problem's fleet as `execution` says it went (see the module
/// docs and [`execute_consolidation`]; a launch whose id is already in use is an error too).
pub fn execute_rebalance(
    problem: &Problem,
    plan: &RebalancePlan,
    execution: &StepExecution,
) -> Result<StepOutcome, ValidationError> {
    let steps: Vec<StepView<'_>> = plan
        .steps
        .iter()
        .map(|step| StepView { launch: &step.launch, moves: &step.moves, release: &step.release })
        .collect();
    execute_steps(problem, &steps, execution)
}

/// One step of either plan kind.
struct StepView<'a> {
    launch: &'a [Launch],
    moves: &'a [Move],
    release: &'a [String],
}

/// One instance while the steps run.
struct Slot {
    instance: FinalInstance,
    alive: bool,
    /// Launched by the step that failed.
    launched_by_failed_step: bool,
}

/// The state of a step execution.
struct StepRun<'a> {
    problem: &'a Problem,
    execution: &'a StepExecution,
    issues: Vec<Issue>,
    slots: Vec<Slot>,
    /// Plan ids → slot.
    by_plan_id: BTreeMap<String, usize>,
    /// Every id in use: the fleet's, real ids handed out, plan ids launched.
    ids_in_use: BTreeSet<String>,
    instance_ids: BTreeMap<String, String>,
    launch_counts: BTreeMap<(TypeIndex, AzIndex), (u32, u32)>,
    events: BTreeMap<(usize, usize), CapacityEventKind>,
    /// Plan ids launched, successfully or not (to check the execution names only those).
    attempted_launches: BTreeSet<String>,
    released: Vec<usize>,
    moves: usize,
}

fn execute_steps(
    problem: &Problem,
    steps: &[StepView<'_>],
    execution: &StepExecution,
) -> Result<StepOutcome, ValidationError> {
    let mut run = StepRun::new(problem, execution);
    let mut failure = None;
    let mut steps_completed = 0;
    for (step_index, step) in steps.iter().enumerate() {
        failure = run.step(step_index, step);
        if failure.is_some() {
            break;
        }
        steps_completed += 1;
    }
    run.check_execution_matches(steps, failure.as_ref());
    run.finish(steps_completed, failure)
}

impl<'a> StepRun<'a> {
    fn new(problem: &'a Problem, execution: &'a StepExecution) -> StepRun<'a> {
        let slots: Vec<Slot> = problem
            .fleet()
            .iter()
            .enumerate()
            .map(|(index, existing)| Slot {
                instance: running_instance(index, existing),
                alive: true,
                launched_by_failed_step: false,
            })
            .collect();
        let by_plan_id: BTreeMap<String, usize> =
            slots.iter().enumerate().map(|(index, slot)| (slot.instance.id.clone(), index)).collect();
        StepRun {
            problem,
            execution,
            issues: Vec::new(),
            ids_in_use: by_plan_id.keys().cloned().collect(),
            by_plan_id,
            slots,
            instance_ids: BTreeMap::new(),
            launch_counts: BTreeMap::new(),
            events: BTreeMap::new(),
            attempted_launches: BTreeSet::new(),
            released: Vec::new(),
            moves: 0,
        }
    }

    fn issue(&mut self, path: String, message: String) {
        self.issues.push(Issue::new(IssueKind::Inconsistent, path, message));
    }

    /// Runs one step; returns the failure that stopped it, if any.
    fn step(&mut self, step_index: usize, step: &StepView<'_>) -> Option<StepFailure> {
        let mut failed_launch: Option<StepFailure> = None;
        for (index, launch) in step.launch.iter().enumerate() {
            let path = format!("Steps[{step_index}].Launch[{index}]");
            let outcome = self.execution.launches.get(&launch.instance_id);
            // After a failed launch the step's later launches count only when the execution
            // names them (launched in parallel); unnamed ones were never attempted.
            if failed_launch.is_some() && outcome.is_none() {
                continue;
            }
            if let Some(failure) = self.launch(path, launch, outcome.cloned()) {
                failed_launch.get_or_insert(StepFailure::Launch { step: step_index, launch: launch.clone(), failure });
            }
        }
        if let Some(failure) = failed_launch {
            self.abandon_step_launches();
            return Some(failure);
        }
        for (index, planned) in step.moves.iter().enumerate() {
            if self.execution.failed_moves.contains(&(step_index, index)) {
                self.abandon_step_launches();
                return Some(StepFailure::Move { step: step_index, index, planned: planned.clone() });
            }
            self.apply_move(format!("Steps[{step_index}].Moves[{index}]"), planned);
        }
        for (index, id) in step.release.iter().enumerate() {
            self.release(format!("Steps[{step_index}].Release[{index}]"), id);
        }
        for slot in &mut self.slots {
            slot.launched_by_failed_step = false;
        }
        None
    }

    /// One launch (unnamed in the execution: succeeded under its plan id); returns its failure.
    fn launch(&mut self, path: String, launch: &Launch, outcome: Option<LaunchOutcome>) -> Option<LaunchFailure> {
        let problem = self.problem;
        let (Some(type_index), Some(az_index)) =
            (problem.type_index(&launch.instance_type), problem.az_index(&launch.availability_zone))
        else {
            self.issue(path, format!("unknown type {:?} or AZ {:?}", launch.instance_type, launch.availability_zone));
            return None;
        };
        if self.by_plan_id.contains_key(&launch.instance_id) || self.attempted_launches.contains(&launch.instance_id) {
            self.issue(path, format!("launch id {:?} is already in use", launch.instance_id));
            return None;
        }
        self.attempted_launches.insert(launch.instance_id.clone());
        match outcome.unwrap_or_else(|| LaunchOutcome::Launched { instance_id: launch.instance_id.clone() }) {
            LaunchOutcome::Launched { instance_id: real_id } => {
                if !self.ids_in_use.insert(real_id.clone()) {
                    // Reported; the launch still counts, so its moves are not reported again.
                    self.issue(
                        format!("StepExecution.launched({:?})", launch.instance_id),
                        format!("{real_id:?} is already an instance id"),
                    );
                }
                self.events.insert((type_index, az_index), CapacityEventKind::Launched);
                let counts =
                    self.launch_counts.entry((TypeIndex::new(type_index), AzIndex::new(az_index))).or_default();
                counts.0 += 1;
                counts.1 += u32::from(launch.reserved);
                self.instance_ids.insert(launch.instance_id.clone(), real_id);
                self.by_plan_id.insert(launch.instance_id.clone(), self.slots.len());
                self.slots.push(Slot {
                    instance: launched_instance(launch, type_index, az_index),
                    alive: true,
                    launched_by_failed_step: true,
                });
                None
            }
            LaunchOutcome::Failed(failure) => {
                if let Some(event) = failure.capacity_event() {
                    self.events.insert((type_index, az_index), event);
                }
                Some(failure)
            }
        }
    }

    /// The failed step's launches that hold no copy are let go again.
    fn abandon_step_launches(&mut self) {
        for (index, slot) in self.slots.iter_mut().enumerate() {
            if slot.launched_by_failed_step && slot.alive && slot.instance.copies.is_empty() {
                slot.alive = false;
                self.released.push(index);
            }
        }
    }

    fn live_slot(&self, id: &str) -> Option<usize> {
        self.by_plan_id.get(id).copied().filter(|&index| self.slots.get(index).is_some_and(|slot| slot.alive))
    }

    fn apply_move(&mut self, path: String, planned: &Move) {
        let Some(component) = self.problem.component_index(&planned.inference_component_name) else {
            self.issue(path, format!("{:?} is not a component of the problem", planned.inference_component_name));
            return;
        };
        let (Some(from), Some(to)) = (self.live_slot(&planned.from), self.live_slot(&planned.to)) else {
            self.issue(path, format!("{:?} or {:?} is not a running instance at this point", planned.from, planned.to));
            return;
        };
        let source = &mut self.slots[from].instance;
        match source.copies.get_mut(&component) {
            Some(count) if *count > 0 => {
                *count -= 1;
                if *count == 0 {
                    source.copies.remove(&component);
                }
                if let Some(count) = source.new_copies.get_mut(&component) {
                    *count = count.saturating_sub(1);
                }
            }
            _ => {
                self.issue(
                    path,
                    format!("no copy of {} on {} to move", planned.inference_component_name, planned.from),
                );
                return;
            }
        }
        let target = &mut self.slots[to].instance;
        *target.copies.entry(component).or_insert(0) += 1;
        *target.new_copies.entry(component).or_insert(0) += 1;
        self.moves += 1;
    }

    fn release(&mut self, path: String, id: &str) {
        let Some(index) = self.live_slot(id) else {
            self.issue(path, format!("{id:?} is not a running instance at this point"));
            return;
        };
        if self.execution.failed_releases.contains(id) {
            return;
        }
        let copies = self.slots[index].instance.total_copies();
        if copies > 0 {
            // Releasing it would lose copies: the plan does not fit this fleet.
            let noun = if copies == 1 { "copy" } else { "copies" };
            self.issue(path, format!("{id} still holds {copies} {noun}"));
            return;
        }
        self.slots[index].alive = false;
        self.released.push(index);
    }

    /// The execution must describe this plan as far as it ran.
    fn check_execution_matches(&mut self, steps: &[StepView<'_>], failure: Option<&StepFailure>) {
        let execution = self.execution;
        let ran = failure.map_or(steps.len(), |failure| failure.step() + 1);
        let planned_launches: BTreeSet<&str> =
            steps.iter().flat_map(|step| step.launch.iter().map(|launch| launch.instance_id.as_str())).collect();
        for plan_id in execution.launches.keys() {
            if !planned_launches.contains(plan_id.as_str()) {
                self.issue(format!("StepExecution.launches[{plan_id:?}]"), "the plan does not launch this id".into());
            } else if !self.attempted_launches.contains(plan_id) {
                self.issue(
                    format!("StepExecution.launches[{plan_id:?}]"),
                    format!("never attempted: execution stopped in step {}", ran.saturating_sub(1)),
                );
            }
        }
        for &(step, index) in &execution.failed_moves {
            let attempted = match failure {
                None => true,
                Some(StepFailure::Launch { step: stopped, .. }) => step < *stopped,
                Some(StepFailure::Move { step: stopped, index: at, .. }) => (step, index) <= (*stopped, *at),
            };
            if steps.get(step).is_none_or(|view| index >= view.moves.len()) {
                self.issue(format!("StepExecution.failed_moves[{step}, {index}]"), "the plan has no such move".into());
            } else if !attempted {
                self.issue(
                    format!("StepExecution.failed_moves[{step}, {index}]"),
                    "never attempted: execution stopped before it".into(),
                );
            }
        }
        let released_by_plan: BTreeSet<&str> =
            steps.iter().take(ran).flat_map(|step| step.release.iter().map(String::as_str)).collect();
        for id in &execution.failed_releases {
            if !released_by_plan.contains(id.as_str()) {
                self.issue(
                    format!("StepExecution.failed_releases[{id:?}]"),
                    "the executed steps do not release this instance".into(),
                );
            }
        }
    }

    fn fleet_instance(&self, index: usize) -> FleetInstance {
        let slot = &self.slots[index];
        let single = FinalFleet { instances: vec![slot.instance.clone()], ..FinalFleet::default() };
        let mut fleet = single.to_fleet_with_ids(self.problem, &self.instance_ids);
        fleet.instances.pop().unwrap_or_default()
    }

    fn finish(self, steps_completed: usize, failure: Option<StepFailure>) -> Result<StepOutcome, ValidationError> {
        if !self.issues.is_empty() {
            return Err(ValidationError::new(self.issues));
        }
        let final_fleet = FinalFleet {
            instances: self.slots.iter().filter(|slot| slot.alive).map(|slot| slot.instance.clone()).collect(),
            launches: self.launch_counts.clone(),
            removed: BTreeMap::new(),
        };
        let fleet = final_fleet.to_fleet_with_ids(self.problem, &self.instance_ids);
        let failed_step = failure.as_ref().map(StepFailure::step);
        let launched = (0..self.slots.len())
            .filter(|&index| self.slots[index].alive && self.slots[index].instance.existing.is_none())
            .map(|index| self.fleet_instance(index))
            .collect();
        let (mut released, mut abandoned) = (Vec::new(), Vec::new());
        for &index in &self.released {
            let instance = self.fleet_instance(index);
            if failed_step.is_some() && self.slots[index].launched_by_failed_step {
                abandoned.push(instance);
            } else {
                released.push(instance);
            }
        }
        let types = self.problem.instance_types();
        let azs = self.problem.azs();
        let capacity_events = self
            .events
            .iter()
            .map(|(&(type_index, az_index), &event)| CapacityRecord {
                instance_type: types.get(type_index).map(|info| info.name.clone()).unwrap_or_default(),
                availability_zone: azs.get(az_index).cloned().unwrap_or_default(),
                event,
                time: self.execution.time,
            })
            .collect();
        Ok(StepOutcome {
            fleet,
            steps_completed,
            failure,
            moves: self.moves,
            launched,
            released,
            abandoned,
            instance_ids: self.instance_ids,
            capacity_events,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::consolidate::consolidate;
    use crate::model::ScenarioBuilder;

    /// Two g6 with one copy each in one AZ: consolidation moves one and releases its host.
    fn two_halves() -> (Problem, ConsolidationPlan) {
        let scenario = ScenarioBuilder::new(["a"])
            .pool("ml.g6.12xlarge", 1)
            .component("chat", 2, 1, 1.0, 1024)
            .strategy("chat", crate::model::PlacementStrategy::Binpack)
            .fleet_instance("i-1", "ml.g6.12xlarge", "a", false)
            .fleet_instance("i-2", "ml.g6.12xlarge", "a", false)
            .fleet_copies("chat", "i-1", 1)
            .fleet_copies("chat", "i-2", 1)
            .build()
            .expect("valid");
        let problem = Problem::new(&scenario).expect("valid");
        let plan = consolidate(&problem);
        assert_eq!((plan.steps.len(), plan.move_count()), (1, 1));
        (problem, plan)
    }

    #[test]
    fn a_consolidation_with_a_failed_release_keeps_the_emptied_instance() {
        let (problem, plan) = two_halves();
        let released = plan.steps[0].release[0].clone();
        let outcome =
            execute_consolidation(&problem, &plan, &StepExecution::new(5).release_failed(&released)).expect("valid");
        assert_eq!((outcome.steps_completed, outcome.moves, outcome.released.len()), (1, 1, 0));
        assert_eq!(outcome.fleet.instances.len(), 2);
        assert_eq!(outcome.fleet.copies.len(), 1, "both copies on one instance");
        assert!(outcome.capacity_events.is_empty(), "no launches, no capacity events");
    }

    #[test]
    fn a_failed_move_stops_before_the_release_and_names_the_move() {
        let (problem, plan) = two_halves();
        let outcome = execute_consolidation(&problem, &plan, &StepExecution::new(5).move_failed(0, 0)).expect("valid");
        assert_eq!(outcome.failure.as_ref().map(StepFailure::step), Some(0));
        assert_eq!(outcome.fleet, FinalFleet::apply(&problem, &[]).0.to_fleet(&problem));
        let error = execute_consolidation(&problem, &plan, &StepExecution::new(5).launched("new-1", "i-3"))
            .expect_err("no such");
        assert_eq!(error.to_string(), "StepExecution.launches[\"new-1\"]: the plan does not launch this id");
    }
}
