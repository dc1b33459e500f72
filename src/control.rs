//! The control loop around the planner (contract §6): what a scheduler learned from earlier
//! launches, and the fleet after executing a plan.
//!
//! A scheduler that embeds fleetplan runs plan → execute → observe → plan again:
//!
//! 1. [`CapacityLedger`]: the caller [`record`](CapacityLedger::record)s what launches did
//!    (`InsufficientCapacity`, `ProvisioningTimeout`, `Launched`) and
//!    [`apply`](CapacityLedger::apply)s the ledger to the next scenario with its own clock; the
//!    planner then launches nothing into a (type, AZ) whose latest event is a live error.
//! 2. [`observe`]: from the validated problem, the plan's actions and an [`Execution`] (what
//!    actually happened: real instance ids, failed launches and placements), the [`Fleet`] that
//!    really runs now, with `new-N` ids mapped to the real ones, plus the capacity events the
//!    execution taught (for the ledger).
//!
//! Consolidation and rebalance plans are executed by [`crate::execute`]
//! ([`execute_consolidation`](crate::execute::execute_consolidation),
//! [`execute_rebalance`](crate::execute::execute_rebalance)), which return the same kind of
//! capacity events.
//!
//! No clock is read here: every time is the caller's, in seconds on any epoch.
//!
//! ```
//! use fleetplan::{observe, CapacityLedger, Execution, LaunchFailure};
//! use fleetplan::{plan_greedy, CapacityEventKind, Problem, ScenarioBuilder};
//!
//! let mut scenario = ScenarioBuilder::new(["us-east-1a", "us-east-1b"])
//!     .pool("ml.p5.48xlarge", 1)
//!     .pool("ml.g6.48xlarge", 2)
//!     .component("llm", 2, 8, 8.0, 65_536)
//!     .max_imbalance("llm", 0)
//!     .build().unwrap();
//! let mut ledger = CapacityLedger::new();
//! ledger.apply(&mut scenario, 1_000);
//! let problem = Problem::new(&scenario).unwrap();
//! let plan = plan_greedy(&problem);
//! // One p5 comes up as i-0a; the other launch fails for lack of capacity in its AZ.
//! let execution = Execution::new(1_000)
//!     .launched("new-1", "i-0a")
//!     .launch_failed("new-2", LaunchFailure::InsufficientCapacity);
//! let observed = observe(&problem, &plan.actions, &execution).unwrap();
//! ledger.extend(observed.capacity_events.iter().cloned());
//! assert_eq!(observed.fleet.instances[0].instance_id, "i-0a");
//!
//! // Ten seconds later: the next plan starts from the truth and falls back to g6 in that AZ.
//! scenario.fleet = observed.fleet;
//! ledger.apply(&mut scenario, 1_010);
//! let problem = Problem::new(&scenario).unwrap();
//! let next = plan_greedy(&problem);
//! assert_eq!(next.objective.placed_copies, 2);
//! assert_eq!(next.objective.instances_by_priority.get(&2), Some(&1));
//! assert_eq!(ledger.blocks(1_010)[0].2.event, CapacityEventKind::InsufficientCapacity);
//! ```

use std::collections::{BTreeMap, BTreeSet};

use crate::error::{Issue, IssueKind, ValidationError};
use crate::model::{CapacityEvent, Fleet, FleetCopy, FleetInstance, InstanceState, Scenario};
use crate::plan::Action;
use crate::problem::{CapacityBlock, CapacityEventKind, Problem, DEFAULT_CAPACITY_ERROR_TTL_SECONDS};

/// One capacity event with a typed kind and an integer time (what a [`CapacityLedger`] holds).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CapacityRecord {
    /// Instance type.
    pub instance_type: String,
    /// Availability zone.
    pub availability_zone: String,
    /// What happened.
    pub event: CapacityEventKind,
    /// When, in seconds on the caller's clock.
    pub time: i64,
}

impl CapacityRecord {
    /// A record.
    pub fn new(instance_type: &str, availability_zone: &str, event: CapacityEventKind, time: i64) -> Self {
        CapacityRecord {
            instance_type: instance_type.to_string(),
            availability_zone: availability_zone.to_string(),
            event,
            time,
        }
    }

    /// The record as the scenario's `CapacityEvents` entry.
    pub fn to_event(&self) -> CapacityEvent {
        CapacityEvent {
            instance_type: self.instance_type.clone(),
            availability_zone: self.availability_zone.clone(),
            event: self.event,
            time: self.time,
        }
    }
}

/// What a scheduler learned about capacity, to hand to the next plans (contract §6).
///
/// Records are kept in the order they were recorded: for one (type, AZ) the latest by time
/// decides, and on a tie the one recorded later. [`apply`](Self::apply) writes `Now`,
/// `CapacityErrorTtlSeconds` and `CapacityEvents` into a scenario; [`prune`](Self::prune)
/// forgets what can no longer matter, so a long-running loop keeps the ledger small.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapacityLedger {
    records: Vec<CapacityRecord>,
    ttl_seconds: u32,
}

impl Default for CapacityLedger {
    fn default() -> Self {
        CapacityLedger { records: Vec::new(), ttl_seconds: DEFAULT_CAPACITY_ERROR_TTL_SECONDS }
    }
}

impl CapacityLedger {
    /// An empty ledger with the default TTL (180 s).
    pub fn new() -> Self {
        CapacityLedger::default()
    }

    /// Sets how long a capacity error blocks its (type, AZ); [`apply`](Self::apply) writes it
    /// as `CapacityErrorTtlSeconds` (validation rejects more than 86 400).
    pub fn with_ttl_seconds(mut self, ttl_seconds: u32) -> Self {
        self.ttl_seconds = ttl_seconds;
        self
    }

    /// The TTL in seconds.
    pub fn ttl_seconds(&self) -> u32 {
        self.ttl_seconds
    }

    /// Records one event.
    pub fn record(&mut self, instance_type: &str, availability_zone: &str, event: CapacityEventKind, time: i64) {
        self.records.push(CapacityRecord::new(instance_type, availability_zone, event, time));
    }

    /// Records several events in order (e.g. [`Observed::capacity_events`]).
    pub fn extend(&mut self, records: impl IntoIterator<Item = CapacityRecord>) {
        self.records.extend(records);
    }

    /// Every record, in recording order.
    pub fn records(&self) -> &[CapacityRecord] {
        &self.records
    }

    /// Per (type, AZ), the index of the record that decides at `now`: the latest with
    /// `time ≤ now`, a tie going to the one recorded later.
    fn decisive(&self, now: i64) -> BTreeMap<(&str, &str), usize> {
        let mut latest: BTreeMap<(&str, &str), usize> = BTreeMap::new();
        for (index, record) in self.records.iter().enumerate() {
            if record.time > now {
                continue;
            }
            let key = (record.instance_type.as_str(), record.availability_zone.as_str());
            if latest.get(&key).is_none_or(|&seen| record.time >= self.records[seen].time) {
                latest.insert(key, index);
            }
        }
        latest
    }

    fn live(&self, record: &CapacityRecord, now: i64) -> bool {
        now.saturating_sub(record.time) < i64::from(self.ttl_seconds)
    }

    /// The (type, AZ) pairs blocked at `now`, sorted by type then AZ: those whose deciding
    /// event is an error younger than the TTL. The planner computes the same from the
    /// scenario [`apply`](Self::apply) writes.
    pub fn blocks(&self, now: i64) -> Vec<(String, String, CapacityBlock)> {
        self.decisive(now)
            .into_iter()
            .filter_map(|((instance_type, az), index)| {
                let record = &self.records[index];
                (record.event.is_error() && self.live(record, now)).then(|| {
                    let block = CapacityBlock {
                        event: record.event,
                        time: record.time,
                        until: record.time.saturating_add(i64::from(self.ttl_seconds)),
                    };
                    (instance_type.to_string(), az.to_string(), block)
                })
            })
            .collect()
    }

    /// Forgets records that can no longer block anything at `now` or later: those older than
    /// the TTL, and those a later record for the same (type, AZ) overrides. Records with a time
    /// after `now` are kept. (A dropped record cannot matter again as long as the clock does not
    /// go back: whatever overrode it is at least as young, and an expired record stays
    /// expired.)
    pub fn prune(&mut self, now: i64) {
        let decisive: BTreeSet<usize> = self.decisive(now).into_values().collect();
        let ttl = i64::from(self.ttl_seconds);
        let mut index = 0;
        self.records.retain(|record| {
            let keep = record.time > now || (decisive.contains(&index) && now.saturating_sub(record.time) < ttl);
            index += 1;
            keep
        });
    }

    /// Writes the ledger into `scenario` for a plan at `now` (the caller's clock): `Now`,
    /// `CapacityErrorTtlSeconds`, and as `CapacityEvents` the deciding record of every
    /// (type, AZ), sorted by type then AZ (the older ones change nothing). `CapacityEvents`
    /// already in the scenario are replaced. Records with a time after `now` are left out: on
    /// that clock they have not happened yet.
    pub fn apply(&self, scenario: &mut Scenario, now: i64) {
        scenario.now = Some(now);
        scenario.capacity_error_ttl_seconds = Some(self.ttl_seconds);
        scenario.capacity_events =
            self.decisive(now).into_values().map(|index| self.records[index].to_event()).collect();
    }
}

/// Why a launch failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum LaunchFailure {
    /// The cloud had no capacity (becomes an `InsufficientCapacity` event).
    InsufficientCapacity,
    /// The instance did not come up in time (becomes a `ProvisioningTimeout` event).
    ProvisioningTimeout,
    /// Anything else (quota, permissions, a bad image): no capacity event.
    Other,
}

impl LaunchFailure {
    /// The capacity event the failure becomes, if any.
    pub fn capacity_event(self) -> Option<CapacityEventKind> {
        match self {
            LaunchFailure::InsufficientCapacity => Some(CapacityEventKind::InsufficientCapacity),
            LaunchFailure::ProvisioningTimeout => Some(CapacityEventKind::ProvisioningTimeout),
            LaunchFailure::Other => None,
        }
    }
}

/// What happened to one `LaunchInstance`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LaunchOutcome {
    /// The instance runs, under this id.
    Launched {
        /// The real instance id.
        instance_id: String,
    },
    /// No instance came up.
    Failed(LaunchFailure),
}

/// What actually happened when a plan was executed. Everything succeeded unless told
/// otherwise, and a launch not mapped to a real id keeps the plan's `new-N` id.
///
/// ```
/// use fleetplan::{Execution, LaunchFailure};
/// let execution = Execution::new(1_000)
///     .launched("new-1", "i-0abc")
///     .launch_failed("new-2", LaunchFailure::InsufficientCapacity)
///     .placement_failed("llm", "new-1");
/// assert_eq!(execution.time(), 1_000);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execution {
    time: i64,
    launches: BTreeMap<String, LaunchOutcome>,
    /// (component, instance id as the plan names it) → failed `PlaceCopy` actions.
    failed_placements: BTreeMap<(String, String), u32>,
    /// (component, instance id) → failed `RemoveCopy` actions.
    failed_removals: BTreeMap<(String, String), u32>,
    failed_terminations: BTreeSet<String>,
}

impl Execution {
    /// Everything succeeded, as known at `time` on the caller's clock (the time the capacity
    /// events of [`observe`] carry).
    pub fn new(time: i64) -> Self {
        Execution {
            time,
            launches: BTreeMap::new(),
            failed_placements: BTreeMap::new(),
            failed_removals: BTreeMap::new(),
            failed_terminations: BTreeSet::new(),
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

    /// The plan's launch `plan_id` failed; its `PlaceCopy` actions fail with it.
    pub fn launch_failed(mut self, plan_id: &str, failure: LaunchFailure) -> Self {
        self.launches.insert(plan_id.to_string(), LaunchOutcome::Failed(failure));
        self
    }

    /// One `PlaceCopy` of `component` on `instance_id` (as the plan names it) failed; call
    /// once per failed copy.
    pub fn placement_failed(mut self, component: &str, instance_id: &str) -> Self {
        *self.failed_placements.entry((component.to_string(), instance_id.to_string())).or_insert(0) += 1;
        self
    }

    /// One `RemoveCopy` of `component` on `instance_id` failed (the copy still runs).
    pub fn removal_failed(mut self, component: &str, instance_id: &str) -> Self {
        *self.failed_removals.entry((component.to_string(), instance_id.to_string())).or_insert(0) += 1;
        self
    }

    /// The `TerminateInstance` of `instance_id` failed (it still runs, with what it holds).
    pub fn termination_failed(mut self, instance_id: &str) -> Self {
        self.failed_terminations.insert(instance_id.to_string());
        self
    }
}

/// The truth after executing a plan: the fleet to plan from next, and what capacity did.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// The fleet that runs now: kept instances in fleet order, then successful launches in
    /// launch order under their real ids; copies per instance in component order.
    pub fleet: Fleet,
    /// For the ledger: per (type, AZ) launched into, the last outcome in plan order
    /// (`Launched`, or the error a failure became), at [`Execution::time`]; sorted by type
    /// then AZ.
    pub capacity_events: Vec<CapacityRecord>,
    /// Plan launch id → real instance id, for the launches that came up.
    pub instance_ids: BTreeMap<String, String>,
    /// Plan launch ids that failed, in launch order.
    pub failed_launches: Vec<String>,
}

/// One instance while the actions are replayed.
struct Running {
    id: String,
    type_index: usize,
    az_index: usize,
    reserved: bool,
    draining: bool,
    /// Component index → copies.
    copies: BTreeMap<usize, u64>,
    gone: bool,
}

/// The fleet after executing `actions` (a plan for `problem`) as `execution` says it went.
///
/// Actions are replayed in order on the problem's fleet: a launch adds an instance under its
/// real id (or nothing, if it failed), a `PlaceCopy` adds a copy unless it failed or its target
/// did not come up, a `RemoveCopy` or `TerminateInstance` takes effect unless it failed.
/// Draining states and reservations carry over. Errors (a plan that does not fit the problem,
/// an execution naming launches or copies the plan does not have, a real id already in use) are
/// all reported, with the action or execution entry they concern.
pub fn observe(problem: &Problem, actions: &[Action], execution: &Execution) -> Result<Observed, ValidationError> {
    let mut replay = Observation::new(problem, execution);
    for (position, action) in actions.iter().enumerate() {
        let path = format!("Actions[{position}]");
        match action {
            Action::LaunchInstance { instance_id, instance_type, availability_zone, reserved } => {
                replay.launch(path, instance_id, instance_type, availability_zone, *reserved)
            }
            Action::PlaceCopy { component, instance_id, .. } => replay.place(path, component, instance_id),
            Action::RemoveCopy { component, instance_id } => replay.remove(path, component, instance_id),
            Action::TerminateInstance { instance_id } => replay.terminate(path, instance_id),
        }
    }
    replay.check_execution_matches();
    replay.finish()
}

/// The state of [`observe`] while it replays the plan's actions in order, one method per kind.
struct Observation<'a> {
    problem: &'a Problem,
    execution: &'a Execution,
    issues: Vec<Issue>,
    running: Vec<Running>,
    /// Instance ids as the plan names them → position in `running`.
    by_plan_id: BTreeMap<String, usize>,
    real_ids: BTreeSet<String>,
    failed_launches: Vec<String>,
    instance_ids: BTreeMap<String, String>,
    events: BTreeMap<(usize, usize), CapacityEventKind>,
    placements_left: BTreeMap<(String, String), u32>,
    removals_left: BTreeMap<(String, String), u32>,
    launched_ids: BTreeSet<String>,
    terminated_ids: BTreeSet<String>,
}

impl<'a> Observation<'a> {
    fn new(problem: &'a Problem, execution: &'a Execution) -> Observation<'a> {
        let running: Vec<Running> = problem
            .fleet()
            .iter()
            .map(|existing| Running {
                id: existing.id.clone(),
                type_index: existing.type_index,
                az_index: existing.az_index,
                reserved: existing.reserved,
                draining: existing.draining,
                copies: existing.copies.iter().map(|&(component, count)| (component, u64::from(count))).collect(),
                gone: false,
            })
            .collect();
        let by_plan_id: BTreeMap<String, usize> =
            running.iter().enumerate().map(|(index, instance)| (instance.id.clone(), index)).collect();
        Observation {
            problem,
            execution,
            issues: Vec::new(),
            real_ids: by_plan_id.keys().cloned().collect(),
            by_plan_id,
            running,
            failed_launches: Vec::new(),
            instance_ids: BTreeMap::new(),
            events: BTreeMap::new(),
            placements_left: execution.failed_placements.clone(),
            removals_left: execution.failed_removals.clone(),
            launched_ids: BTreeSet::new(),
            terminated_ids: BTreeSet::new(),
        }
    }

    fn issue(&mut self, kind: IssueKind, path: String, message: String) {
        self.issues.push(Issue::new(kind, path, message));
    }

    fn launch(
        &mut self,
        path: String,
        instance_id: &str,
        instance_type: &str,
        availability_zone: &str,
        reserved: bool,
    ) {
        let problem = self.problem;
        let (Some(type_index), Some(az_index)) =
            (problem.type_index(instance_type), problem.az_index(availability_zone))
        else {
            self.issue(
                IssueKind::UnknownName,
                path,
                format!("unknown type {instance_type:?} or AZ {availability_zone:?}"),
            );
            return;
        };
        if self.by_plan_id.contains_key(instance_id) || self.failed_launches.iter().any(|id| id == instance_id) {
            self.issue(IssueKind::Duplicate, path, format!("launch id {instance_id:?} is already in use"));
            return;
        }
        self.launched_ids.insert(instance_id.to_string());
        let outcome = self
            .execution
            .launches
            .get(instance_id)
            .cloned()
            .unwrap_or_else(|| LaunchOutcome::Launched { instance_id: instance_id.to_string() });
        match outcome {
            LaunchOutcome::Launched { instance_id: real_id } => {
                if !self.real_ids.insert(real_id.clone()) {
                    self.issue(
                        IssueKind::Duplicate,
                        format!("Execution.launched({instance_id:?})"),
                        format!("{real_id:?} is already an instance id"),
                    );
                    return;
                }
                self.events.insert((type_index, az_index), CapacityEventKind::Launched);
                self.by_plan_id.insert(instance_id.to_string(), self.running.len());
                self.instance_ids.insert(instance_id.to_string(), real_id.clone());
                self.running.push(Running {
                    id: real_id,
                    type_index,
                    az_index,
                    reserved,
                    draining: false,
                    copies: BTreeMap::new(),
                    gone: false,
                });
            }
            LaunchOutcome::Failed(failure) => {
                if let Some(event) = failure.capacity_event() {
                    self.events.insert((type_index, az_index), event);
                }
                self.failed_launches.push(instance_id.to_string());
            }
        }
    }

    fn place(&mut self, path: String, component: &str, instance_id: &str) {
        let Some(component_index) = self.problem.component_index(component) else {
            self.issue(IssueKind::UnknownName, path, format!("{component:?} is not a component of the problem"));
            return;
        };
        let reported_failed = match self.placements_left.get_mut(&(component.to_string(), instance_id.to_string())) {
            Some(left) if *left > 0 => {
                *left -= 1;
                true
            }
            _ => false,
        };
        // On a launch that failed the copy fails too, whether or not the caller says so.
        if reported_failed || self.failed_launches.iter().any(|id| id == instance_id) {
            return;
        }
        let Some(&target) = self.by_plan_id.get(instance_id) else {
            self.issue(
                IssueKind::UnknownName,
                path,
                format!("instance {instance_id:?} is neither in the fleet nor launched before"),
            );
            return;
        };
        *self.running[target].copies.entry(component_index).or_insert(0) += 1;
    }

    fn remove(&mut self, path: String, component: &str, instance_id: &str) {
        let (Some(component_index), Some(&target)) =
            (self.problem.component_index(component), self.by_plan_id.get(instance_id))
        else {
            self.issue(
                IssueKind::UnknownName,
                path,
                format!("unknown component {component:?} or instance {instance_id:?}"),
            );
            return;
        };
        if let Some(left) = self.removals_left.get_mut(&(component.to_string(), instance_id.to_string())) {
            if *left > 0 {
                *left -= 1;
                return;
            }
        }
        match self.running[target].copies.get_mut(&component_index) {
            Some(count) if *count > 0 => *count -= 1,
            _ => {
                self.issue(IssueKind::Inconsistent, path, format!("no copy of {component} on {instance_id} to remove"))
            }
        }
    }

    fn terminate(&mut self, path: String, instance_id: &str) {
        let Some(&target) = self.by_plan_id.get(instance_id) else {
            self.issue(IssueKind::UnknownName, path, format!("instance {instance_id:?} is not in the fleet"));
            return;
        };
        self.terminated_ids.insert(instance_id.to_string());
        if !self.execution.failed_terminations.contains(instance_id) {
            self.running[target].gone = true;
        }
    }

    /// The execution must describe this plan: anything it names that the plan lacks is a mistake.
    fn check_execution_matches(&mut self) {
        let execution = self.execution;
        for plan_id in execution.launches.keys() {
            if !self.launched_ids.contains(plan_id.as_str()) {
                self.issue(
                    IssueKind::Inconsistent,
                    format!("Execution.launches[{plan_id:?}]"),
                    "the plan does not launch this id".to_string(),
                );
            }
        }
        let placements_left = std::mem::take(&mut self.placements_left);
        for ((component, instance_id), left) in placements_left.iter().filter(|(_, &left)| left > 0) {
            self.issue(
                IssueKind::Inconsistent,
                format!("Execution.failed_placements[{component:?}, {instance_id:?}]"),
                format!("{left} more failed placement(s) than the plan's PlaceCopy actions"),
            );
        }
        let removals_left = std::mem::take(&mut self.removals_left);
        for ((component, instance_id), left) in removals_left.iter().filter(|(_, &left)| left > 0) {
            self.issue(
                IssueKind::Inconsistent,
                format!("Execution.failed_removals[{component:?}, {instance_id:?}]"),
                format!("{left} more failed removal(s) than the plan's RemoveCopy actions"),
            );
        }
        for instance_id in &execution.failed_terminations {
            if !self.terminated_ids.contains(instance_id.as_str()) {
                self.issue(
                    IssueKind::Inconsistent,
                    format!("Execution.failed_terminations[{instance_id:?}]"),
                    "the plan does not terminate this instance".to_string(),
                );
            }
        }
    }

    /// The observed fleet and capacity events, or every issue found.
    fn finish(self) -> Result<Observed, ValidationError> {
        if !self.issues.is_empty() {
            return Err(ValidationError::new(self.issues));
        }
        let problem = self.problem;
        let types = problem.instance_types();
        let azs = problem.azs();
        let components = problem.components();
        let mut fleet = Fleet::default();
        for instance in self.running.iter().filter(|instance| !instance.gone) {
            fleet.instances.push(FleetInstance {
                instance_id: instance.id.clone(),
                instance_type: types.get(instance.type_index).map(|info| info.name.clone()).unwrap_or_default(),
                availability_zone: azs.get(instance.az_index).cloned().unwrap_or_default(),
                reserved: instance.reserved,
                state: instance.draining.then_some(InstanceState::Draining),
            });
            for (&component, &count) in instance.copies.iter().filter(|(_, &count)| count > 0) {
                fleet.copies.push(FleetCopy {
                    inference_component_name: components.get(component).map(|c| c.name.clone()).unwrap_or_default(),
                    instance_id: instance.id.clone(),
                    // At most MAX_COPIES_PER_COMPONENT per instance: the conversion never saturates.
                    copy_count: u32::try_from(count).unwrap_or(u32::MAX),
                });
            }
        }
        let capacity_events = self
            .events
            .into_iter()
            .map(|((type_index, az_index), event)| CapacityRecord {
                instance_type: types.get(type_index).map(|info| info.name.clone()).unwrap_or_default(),
                availability_zone: azs.get(az_index).cloned().unwrap_or_default(),
                event,
                time: self.execution.time,
            })
            .collect();
        Ok(Observed { fleet, capacity_events, instance_ids: self.instance_ids, failed_launches: self.failed_launches })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_event_decides_and_a_tie_goes_to_the_later_record() {
        let mut ledger = CapacityLedger::new();
        ledger.record("t", "a", CapacityEventKind::InsufficientCapacity, 100);
        ledger.record("t", "a", CapacityEventKind::Launched, 100);
        ledger.record("t", "b", CapacityEventKind::Launched, 90);
        ledger.record("t", "b", CapacityEventKind::ProvisioningTimeout, 100);
        ledger.record("t", "b", CapacityEventKind::Launched, 95);
        let blocks = ledger.blocks(200);
        assert_eq!(blocks.len(), 1);
        assert_eq!(
            (blocks[0].0.as_str(), blocks[0].1.as_str(), blocks[0].2),
            ("t", "b", CapacityBlock { event: CapacityEventKind::ProvisioningTimeout, time: 100, until: 280 })
        );
        assert!(ledger.blocks(280).is_empty(), "Now − Time = TTL no longer blocks");
    }

    #[test]
    fn prune_keeps_only_what_can_still_block() {
        let mut ledger = CapacityLedger::new().with_ttl_seconds(60);
        ledger.record("t", "a", CapacityEventKind::InsufficientCapacity, 10); // expired at 100
        ledger.record("t", "b", CapacityEventKind::InsufficientCapacity, 50); // overridden
        ledger.record("t", "b", CapacityEventKind::InsufficientCapacity, 90); // live
        ledger.record("t", "c", CapacityEventKind::Launched, 300); // after now: kept
        let before = ledger.blocks(100);
        ledger.prune(100);
        assert_eq!(
            ledger.records(),
            &[
                CapacityRecord::new("t", "b", CapacityEventKind::InsufficientCapacity, 90),
                CapacityRecord::new("t", "c", CapacityEventKind::Launched, 300),
            ]
        );
        assert_eq!(ledger.blocks(100), before);
    }

    #[test]
    fn apply_writes_now_ttl_and_the_deciding_events() {
        let mut ledger = CapacityLedger::new().with_ttl_seconds(30);
        ledger.record("ml.g5.xlarge", "b", CapacityEventKind::Launched, 5);
        ledger.record("ml.g5.xlarge", "a", CapacityEventKind::InsufficientCapacity, 1);
        ledger.record("ml.g5.xlarge", "a", CapacityEventKind::InsufficientCapacity, 7);
        ledger.record("ml.g5.xlarge", "a", CapacityEventKind::Launched, 99);
        let mut scenario = Scenario::default();
        ledger.apply(&mut scenario, 10);
        assert_eq!((scenario.now, scenario.capacity_error_ttl_seconds), (Some(10), Some(30)));
        let events: Vec<(String, &str, i64)> = scenario
            .capacity_events
            .iter()
            .map(|event| (event.availability_zone.clone(), event.event.as_str(), event.time))
            .collect();
        assert_eq!(events, vec![("a".into(), "InsufficientCapacity", 7), ("b".into(), "Launched", 5)]);
    }
}
