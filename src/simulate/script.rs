//! The simulation script: a base scenario and a fake cloud over time (docs/simulate.md).
//!
//! A [`Script`] can be built in code or read from JSON ([`Script::from_json`], feature `json`).
//! Either way [`Script::validate`] checks it the way scenarios are checked: every problem is
//! reported with its JSON path and value, never a panic, and sizes are bounded so that a script
//! cannot ask for unbounded time or memory.

use std::collections::BTreeSet;

use crate::control::LaunchFailure;
use crate::error::{Issue, IssueKind, ValidationError};
use crate::model::Scenario;
use crate::problem::{Problem, MAX_COPIES_PER_COMPONENT, MAX_TOTAL_COPIES};

/// Most ticks a script may run.
pub const MAX_TICKS: u32 = 100_000;
/// Longest tick, in seconds (one day).
pub const MAX_TICK_SECONDS: u32 = 86_400;
/// Tick length when `TickSeconds` is not given.
pub const DEFAULT_TICK_SECONDS: u32 = 60;
/// Most entries over `CloudCapacity`, `ScaleEvents`, `LaunchFailures` and `AzOutages` together.
pub const MAX_SCRIPT_EVENTS: usize = 10_000;
/// Largest node limit (`ExactNodeLimit`, `ConsolidateNodeLimit`, `RebalanceNodeLimit`).
pub const MAX_NODE_LIMIT: u64 = 10_000_000;
/// The exact planner's per-tick node limit when `ExactNodeLimit` is not given.
pub const DEFAULT_EXACT_NODE_LIMIT: u64 = 10_000;
/// Longest launch: `LaunchTicks` ticks Pending before an instance is InService.
pub const MAX_LAUNCH_TICKS: u32 = 1_000;
/// Largest `Available` in a script. (`ScaleEvents[].CopyCount` has the scenario's own limits,
/// per component and in total.)
pub const MAX_SCRIPT_COUNT: u32 = 1_000_000;

/// Which planner plans every tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlannerChoice {
    /// The greedy planner (the default).
    Greedy,
    /// The exact planner, stopped by a per-tick node limit (never by the clock, so runs stay
    /// deterministic).
    Exact {
        /// Branch-and-bound nodes per solver call.
        node_limit: u64,
    },
}

/// From `tick` on, the fake cloud hands out `available` more instances of a (type, AZ)
/// (`None` = unlimited). Each successful launch takes one, each termination gives one back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloudCapacity {
    /// When the change happens.
    pub tick: u32,
    /// Instance type.
    pub instance_type: String,
    /// Availability zone.
    pub availability_zone: String,
    /// Instances the cloud will still launch; `None` = unlimited.
    pub available: Option<u32>,
}

/// At `tick` the desired copy count of a component changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleEvent {
    /// When.
    pub tick: u32,
    /// The component (the variant name for a single-model endpoint).
    pub component: String,
    /// The new `CopyCount` (for a single-model endpoint: the desired instance count).
    pub copy_count: u32,
}

/// From `from_tick` until before `until_tick`, every launch of a (type, AZ) fails with
/// `failure`, whatever capacity the cloud has: an InsufficientCapacity spell (the launch call
/// fails at once), or launches that never come up in time (`ProvisioningTimeout`: Pending for
/// the script's `LaunchTicks`, then failed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchFailureWindow {
    /// First tick of the window.
    pub from_tick: u32,
    /// First tick after the window.
    pub until_tick: u32,
    /// Instance type.
    pub instance_type: String,
    /// Availability zone.
    pub availability_zone: String,
    /// How the launches fail.
    pub failure: LaunchFailure,
}

/// From `from_tick` until before `until_tick` an AZ is down: at `from_tick` every instance in
/// it is lost with its copies, and every launch there fails with InsufficientCapacity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AzOutage {
    /// First tick of the outage.
    pub from_tick: u32,
    /// First tick after it.
    pub until_tick: u32,
    /// The AZ.
    pub availability_zone: String,
}

/// A simulation script: the base scenario and what the fake cloud does, tick by tick.
///
/// ```
/// use fleetplan::simulate::{Script, Simulator};
/// use fleetplan::ScenarioBuilder;
///
/// let scenario = ScenarioBuilder::new(["a", "b"])
///     .pool("ml.g6.12xlarge", 1)
///     .pool("ml.g5.12xlarge", 2)
///     .component("chat", 2, 4, 4.0, 16_384)
///     .max_imbalance("chat", 0)
///     .build().unwrap();
/// let script = Script::new(scenario, 10).cloud_capacity(0, "ml.g6.12xlarge", "a", Some(0));
/// let simulation = Simulator::new().run(&script).unwrap();
/// assert!(simulation.failures.is_empty());
/// // a has no g6: one g5 there from tick 0, and the planner keeps AZ balance.
/// assert_eq!(simulation.ticks[1].instances_by_priority.get(&2), Some(&1));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// The endpoint, its components and the starting fleet (a scenario as `fleetplan plan`
    /// reads it, without `Now` and `CapacityEvents`: the simulator keeps the clock and the
    /// events). Its `CapacityErrorTtlSeconds` is the ledger's TTL.
    pub scenario: Scenario,
    /// Ticks to run (1 to [`MAX_TICKS`]).
    pub ticks: u32,
    /// Seconds per tick (1 to [`MAX_TICK_SECONDS`]); tick `t` happens at `t × tick_seconds`.
    pub tick_seconds: u32,
    /// The planner of every tick.
    pub planner: PlannerChoice,
    /// Consolidate after the plan of every n-th tick (ticks n−1, 2n−1, …); 0 = never.
    pub consolidate_every: u32,
    /// Rebalance after the plan (and consolidation) of every n-th tick; 0 = never.
    pub rebalance_every: u32,
    /// Node limit of every consolidation (search states; `None` = the consolidator's default).
    pub consolidate_node_limit: Option<u64>,
    /// Node limit of every rebalance (release candidates tried; `None` = no limit). Bounds the
    /// time a rebalance of a large fleet takes, deterministically.
    pub rebalance_node_limit: Option<u64>,
    /// Ticks a launched instance is Pending before it is InService (0 = at once, up to
    /// [`MAX_LAUNCH_TICKS`]). Copies on a Pending instance are not available; a
    /// `ProvisioningTimeout` launch is Pending this long and then fails.
    pub launch_ticks: u32,
    /// Changes of the fake cloud's capacity.
    pub cloud_capacity: Vec<CloudCapacity>,
    /// Changes of desired copy counts.
    pub scale_events: Vec<ScaleEvent>,
    /// Windows in which launches of a (type, AZ) fail.
    pub launch_failures: Vec<LaunchFailureWindow>,
    /// AZ outages.
    pub az_outages: Vec<AzOutage>,
}

impl Script {
    /// A script of `ticks` ticks of [`DEFAULT_TICK_SECONDS`] over `scenario`, greedy planner,
    /// an unlimited cloud, nothing happening, no consolidation or rebalancing.
    pub fn new(scenario: Scenario, ticks: u32) -> Script {
        Script {
            scenario,
            ticks,
            tick_seconds: DEFAULT_TICK_SECONDS,
            planner: PlannerChoice::Greedy,
            consolidate_every: 0,
            rebalance_every: 0,
            consolidate_node_limit: None,
            rebalance_node_limit: None,
            launch_ticks: 0,
            cloud_capacity: Vec::new(),
            scale_events: Vec::new(),
            launch_failures: Vec::new(),
            az_outages: Vec::new(),
        }
    }

    /// Sets the tick length.
    pub fn tick_seconds(mut self, seconds: u32) -> Script {
        self.tick_seconds = seconds;
        self
    }

    /// Sets the planner.
    pub fn planner(mut self, planner: PlannerChoice) -> Script {
        self.planner = planner;
        self
    }

    /// Consolidates every `ticks` ticks (0 = never).
    pub fn consolidate_every(mut self, ticks: u32) -> Script {
        self.consolidate_every = ticks;
        self
    }

    /// Rebalances every `ticks` ticks (0 = never).
    pub fn rebalance_every(mut self, ticks: u32) -> Script {
        self.rebalance_every = ticks;
        self
    }

    /// Sets the node limit of every consolidation.
    pub fn consolidate_node_limit(mut self, nodes: u64) -> Script {
        self.consolidate_node_limit = Some(nodes);
        self
    }

    /// Launches are Pending for `ticks` ticks before they are InService.
    pub fn launch_ticks(mut self, ticks: u32) -> Script {
        self.launch_ticks = ticks;
        self
    }

    /// Sets the node limit of every rebalance.
    pub fn rebalance_node_limit(mut self, nodes: u64) -> Script {
        self.rebalance_node_limit = Some(nodes);
        self
    }

    /// Adds a capacity change of the fake cloud.
    pub fn cloud_capacity(mut self, tick: u32, instance_type: &str, az: &str, available: Option<u32>) -> Script {
        self.cloud_capacity.push(CloudCapacity {
            tick,
            instance_type: instance_type.to_string(),
            availability_zone: az.to_string(),
            available,
        });
        self
    }

    /// Adds a copy-count change.
    pub fn scale(mut self, tick: u32, component: &str, copy_count: u32) -> Script {
        self.scale_events.push(ScaleEvent { tick, component: component.to_string(), copy_count });
        self
    }

    /// Adds a window of failing launches.
    pub fn launch_failure(
        mut self,
        from_tick: u32,
        until_tick: u32,
        instance_type: &str,
        az: &str,
        failure: LaunchFailure,
    ) -> Script {
        self.launch_failures.push(LaunchFailureWindow {
            from_tick,
            until_tick,
            instance_type: instance_type.to_string(),
            availability_zone: az.to_string(),
            failure,
        });
        self
    }

    /// Adds an AZ outage.
    pub fn az_outage(mut self, from_tick: u32, until_tick: u32, az: &str) -> Script {
        self.az_outages.push(AzOutage { from_tick, until_tick, availability_zone: az.to_string() });
        self
    }

    /// The tick capacity last comes back, from which time to preferred is counted: the latest
    /// end of an AZ outage or launch-failure window before `Ticks`, or `CloudCapacity` entry
    /// that lifts a (type, AZ) whose previous entry was 0 (to more than 0 or unlimited). 0 when
    /// the script lifts nothing.
    pub fn recovery_tick(&self) -> u32 {
        let windows = self
            .az_outages
            .iter()
            .map(|outage| outage.until_tick)
            .chain(self.launch_failures.iter().map(|window| window.until_tick))
            .filter(|&until| until < self.ticks);
        let mut last = windows.max().unwrap_or(0);
        let mut order: Vec<&CloudCapacity> = self.cloud_capacity.iter().collect();
        order.sort_by_key(|change| change.tick);
        let mut previous: std::collections::BTreeMap<(&str, &str), Option<u32>> = std::collections::BTreeMap::new();
        for change in order {
            let key = (change.instance_type.as_str(), change.availability_zone.as_str());
            if previous.get(&key) == Some(&Some(0)) && change.available != Some(0) {
                last = last.max(change.tick);
            }
            previous.insert(key, change.available);
        }
        last
    }

    /// Reads a script from JSON (docs/simulate.md). Every problem is reported with its JSON
    /// path: type errors, unknown or misspelt keys (always errors in a script; in the embedded
    /// scenario they follow `options`, as for `fleetplan plan`), keys given twice, values out of
    /// range, names the scenario does not know, and every problem of the embedded scenario
    /// under `Scenario.`. Returns the script and the scenario's validated problem (whose
    /// warnings a caller may show).
    #[cfg(feature = "json")]
    pub fn from_json(text: &str) -> Result<Script, ValidationError> {
        Script::from_json_with(text, &crate::json::ReadOptions::default()).map(|(script, _)| script)
    }

    /// [`Script::from_json`] with scenario read options, also returning the base problem (for
    /// its warnings).
    #[cfg(feature = "json")]
    pub fn from_json_with(
        text: &str,
        options: &crate::json::ReadOptions,
    ) -> Result<(Script, Problem), ValidationError> {
        super::read::read_script(text, options)
    }

    /// Checks the script: the scenario is valid (its problems under `Scenario.`) and has no
    /// `Now` or `CapacityEvents`; counts and ticks are in range; every type, AZ and component
    /// named is the scenario's; windows are not empty. Returns the base scenario's problem.
    pub fn validate(&self) -> Result<Problem, ValidationError> {
        // `Now` and `CapacityEvents` are refused by `script_issues` on their own; the scenario
        // is checked without them, so neither asks for the other.
        let mut scenario = self.scenario.clone();
        scenario.now = None;
        scenario.capacity_events.clear();
        let problem = Problem::new(&scenario).map_err(|error| ValidationError::new(scenario_issues(&error)));
        let mut issues = match &problem {
            Ok(_) => Vec::new(),
            Err(error) => error.issues().to_vec(),
        };
        issues.extend(self.script_issues(problem.as_ref().ok()));
        match problem {
            Ok(problem) if issues.is_empty() => Ok(problem),
            _ => Err(ValidationError::new(issues)),
        }
    }

    /// The script's own problems; names are checked only against a valid scenario.
    pub(crate) fn script_issues(&self, problem: Option<&Problem>) -> Vec<Issue> {
        let mut issues = Vec::new();
        let mut issue = |kind: IssueKind, path: String, message: String| issues.push(Issue::new(kind, path, message));
        if self.scenario.now.is_some() {
            issue(IssueKind::Conflict, "Scenario.Now".into(), NOW_GIVEN.into());
        }
        if !self.scenario.capacity_events.is_empty() {
            issue(IssueKind::Conflict, "Scenario.CapacityEvents".into(), EVENTS_GIVEN.into());
        }
        if !(1..=MAX_TICKS).contains(&self.ticks) {
            issue(IssueKind::OutOfRange, "Ticks".into(), format!("{} is not between 1 and {MAX_TICKS}", self.ticks));
        }
        if !(1..=MAX_TICK_SECONDS).contains(&self.tick_seconds) {
            issue(
                IssueKind::OutOfRange,
                "TickSeconds".into(),
                format!("{} is not between 1 and {MAX_TICK_SECONDS}", self.tick_seconds),
            );
        }
        let limits = [
            (
                "ExactNodeLimit",
                if let PlannerChoice::Exact { node_limit } = self.planner { Some(node_limit) } else { None },
            ),
            ("ConsolidateNodeLimit", self.consolidate_node_limit),
            ("RebalanceNodeLimit", self.rebalance_node_limit),
        ];
        for (key, limit) in limits {
            if let Some(limit) = limit.filter(|limit| !(1..=MAX_NODE_LIMIT).contains(limit)) {
                issue(IssueKind::OutOfRange, key.into(), format!("{limit} is not between 1 and {MAX_NODE_LIMIT}"));
            }
        }
        for (key, every) in [("ConsolidateEvery", self.consolidate_every), ("RebalanceEvery", self.rebalance_every)] {
            if every > MAX_TICKS {
                issue(IssueKind::OutOfRange, key.into(), format!("{every} is more than {MAX_TICKS} (0 = never)"));
            }
        }
        if self.launch_ticks > MAX_LAUNCH_TICKS {
            issue(
                IssueKind::OutOfRange,
                "LaunchTicks".into(),
                format!("{} is more than {MAX_LAUNCH_TICKS}", self.launch_ticks),
            );
        }
        let events =
            self.cloud_capacity.len() + self.scale_events.len() + self.launch_failures.len() + self.az_outages.len();
        if events > MAX_SCRIPT_EVENTS {
            issue(
                IssueKind::TooLarge,
                String::new(),
                format!(
                    "{events} entries in CloudCapacity, ScaleEvents, LaunchFailures and AzOutages together; at most \
                     {MAX_SCRIPT_EVENTS}"
                ),
            );
        }
        self.timing_issues(&mut issue);
        for (index, change) in self.cloud_capacity.iter().enumerate() {
            if let Some(available) = change.available.filter(|&available| available > MAX_SCRIPT_COUNT) {
                issue(
                    IssueKind::OutOfRange,
                    format!("CloudCapacity[{index}].Available"),
                    format!("{available} is more than {MAX_SCRIPT_COUNT}"),
                );
            }
        }
        for (index, event) in self.scale_events.iter().enumerate() {
            // The scenario's own limit: a count above it would make the scenario invalid at
            // that tick (bad input, not a broken invariant).
            if event.copy_count > MAX_COPIES_PER_COMPONENT {
                issue(
                    IssueKind::OutOfRange,
                    format!("ScaleEvents[{index}].CopyCount"),
                    format!("{} is more than {MAX_COPIES_PER_COMPONENT} (the scenario's limit)", event.copy_count),
                );
            }
        }
        let mut outage_azs = BTreeSet::new();
        for (index, outage) in self.az_outages.iter().enumerate() {
            if !outage_azs.insert(outage.availability_zone.as_str()) {
                // One window per AZ keeps "instances lost at the start" unambiguous.
                issue(
                    IssueKind::Duplicate,
                    format!("AzOutages[{index}].AvailabilityZone"),
                    format!("{:?} has an earlier outage; give one outage per AZ", outage.availability_zone),
                );
            }
        }
        if let Some(problem) = problem {
            self.name_issues(problem, &mut issues);
            self.total_copies_issue(problem, &mut issues);
        }
        issues
    }

    /// The scale events, applied in the simulator's order (by tick, then as listed), must keep
    /// the copy counts within the scenario's total (`MAX_TOTAL_COPIES`): the first tick that
    /// would exceed it is named at its last scale event.
    fn total_copies_issue(&self, problem: &Problem, issues: &mut Vec<Issue>) {
        if self.scale_events.iter().any(|event| event.copy_count > MAX_COPIES_PER_COMPONENT) {
            return; // already named, per event
        }
        let mut counts: Vec<u64> =
            problem.components().iter().map(|component| u64::from(component.copy_count)).collect();
        let mut order: Vec<usize> = (0..self.scale_events.len()).collect();
        order.sort_by_key(|&index| self.scale_events[index].tick);
        let mut position = 0;
        while let Some(&first) = order.get(position) {
            let tick = self.scale_events[first].tick;
            let mut last = first;
            while let Some(&index) = order.get(position).filter(|&&index| self.scale_events[index].tick == tick) {
                let event = &self.scale_events[index];
                if let Some(count) = problem.component_index(&event.component).and_then(|c| counts.get_mut(c)) {
                    *count = u64::from(event.copy_count);
                }
                last = index;
                position += 1;
            }
            let total: u64 = counts.iter().sum();
            if total > MAX_TOTAL_COPIES {
                issues.push(Issue::new(
                    IssueKind::TooLarge,
                    format!("ScaleEvents[{last}].CopyCount"),
                    format!(
                        "{} brings the copy counts to {total} at tick {tick}; at most {MAX_TOTAL_COPIES} (the \
                         scenario's limit)",
                        self.scale_events[last].copy_count
                    ),
                ));
                return;
            }
        }
    }

    /// Every tick of an event before `Ticks`; every window (launch failures, outages) ending
    /// after it starts and by `Ticks`.
    fn timing_issues(&self, issue: &mut impl FnMut(IssueKind, String, String)) {
        let ticks = self.ticks;
        let mut tick_in_range = |path: String, tick: u32| {
            if tick >= ticks {
                issue(IssueKind::Inconsistent, path, format!("{tick} is not before Ticks ({ticks})"));
            }
        };
        for (index, change) in self.cloud_capacity.iter().enumerate() {
            tick_in_range(format!("CloudCapacity[{index}].Tick"), change.tick);
        }
        for (index, event) in self.scale_events.iter().enumerate() {
            tick_in_range(format!("ScaleEvents[{index}].Tick"), event.tick);
        }
        for (index, window) in self.launch_failures.iter().enumerate() {
            tick_in_range(format!("LaunchFailures[{index}].FromTick"), window.from_tick);
        }
        for (index, outage) in self.az_outages.iter().enumerate() {
            tick_in_range(format!("AzOutages[{index}].FromTick"), outage.from_tick);
        }
        let windows = self
            .launch_failures
            .iter()
            .enumerate()
            .map(|(index, window)| (format!("LaunchFailures[{index}]"), window.from_tick, window.until_tick))
            .chain(
                self.az_outages
                    .iter()
                    .enumerate()
                    .map(|(index, outage)| (format!("AzOutages[{index}]"), outage.from_tick, outage.until_tick)),
            );
        for (path, from, until) in windows {
            if until <= from {
                issue(
                    IssueKind::Inconsistent,
                    format!("{path}.UntilTick"),
                    format!("{until} is not after FromTick ({from})"),
                );
            } else if until > ticks {
                issue(
                    IssueKind::Inconsistent,
                    format!("{path}.UntilTick"),
                    format!("{until} is after Ticks ({ticks})"),
                );
            }
        }
    }

    /// Types, AZs and components the script names exist in the (valid) scenario.
    fn name_issues(&self, problem: &Problem, issues: &mut Vec<Issue>) {
        let known_type = |name: &str| problem.type_index(name).is_some();
        let known_az = |name: &str| problem.az_index(name).is_some();
        let pairs = self
            .cloud_capacity
            .iter()
            .enumerate()
            .map(|(index, change)| {
                (format!("CloudCapacity[{index}]"), change.instance_type.as_str(), change.availability_zone.as_str())
            })
            .chain(self.launch_failures.iter().enumerate().map(|(index, window)| {
                (format!("LaunchFailures[{index}]"), window.instance_type.as_str(), window.availability_zone.as_str())
            }));
        for (path, instance_type, az) in pairs {
            if !known_type(instance_type) {
                issues.push(Issue::new(
                    IssueKind::UnknownName,
                    format!("{path}.InstanceType"),
                    format!("{instance_type:?} is not in the scenario's catalogue"),
                ));
            }
            if !known_az(az) {
                issues.push(Issue::new(
                    IssueKind::UnknownName,
                    format!("{path}.AvailabilityZone"),
                    format!("{az:?} is not one of the scenario's AvailabilityZones"),
                ));
            }
        }
        for (index, outage) in self.az_outages.iter().enumerate() {
            if !known_az(&outage.availability_zone) {
                issues.push(Issue::new(
                    IssueKind::UnknownName,
                    format!("AzOutages[{index}].AvailabilityZone"),
                    format!("{:?} is not one of the scenario's AvailabilityZones", outage.availability_zone),
                ));
            }
        }
        for (index, event) in self.scale_events.iter().enumerate() {
            if problem.component_index(&event.component).is_none() {
                issues.push(Issue::new(
                    IssueKind::UnknownName,
                    format!("ScaleEvents[{index}].InferenceComponentName"),
                    format!("{:?} is not a component of the scenario", event.component),
                ));
            }
        }
    }
}

/// Why a script's scenario may not give `Now`.
pub(crate) const NOW_GIVEN: &str = "the simulator keeps the clock (tick × TickSeconds); leave Now out";
/// Why a script's scenario may not give `CapacityEvents`.
pub(crate) const EVENTS_GIVEN: &str =
    "the simulator records capacity events itself; script capacity with CloudCapacity, LaunchFailures and AzOutages";

/// The scenario's validation issues, with paths under `Scenario`.
pub(crate) fn scenario_issues(error: &ValidationError) -> Vec<Issue> {
    error
        .issues()
        .iter()
        .map(|issue| {
            let path = if issue.path.is_empty() {
                "Scenario".to_string()
            } else if issue.path.starts_with('[') {
                format!("Scenario{}", issue.path)
            } else {
                format!("Scenario.{}", issue.path)
            };
            Issue::new(issue.kind(), path, issue.message.clone())
        })
        .collect()
}
