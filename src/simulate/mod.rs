//! A deterministic control-loop simulator (docs/simulate.md): a scheduler embedding fleetplan,
//! run tick by tick against a scripted fake cloud, with every invariant checked after every
//! tick.
//!
//! Each tick: the script's changes for that tick happen (cloud capacity, copy counts, an AZ
//! outage losing its instances); the [`CapacityLedger`] is applied at the tick's time; the
//! planner (greedy, or exact with a per-tick node limit) plans; the plan is "executed" against
//! the fake cloud — a launch succeeds only if the cloud has capacity left and no failure window
//! or outage covers it — and [`execute_plan`] turns the outcome into the next fleet and capacity
//! events; every `ConsolidateEvery` ticks [`Consolidator`] and every `RebalanceEvery` ticks
//! [`Rebalancer`] run and their steps are applied through [`execute_consolidation`] and
//! [`execute_rebalance`] (a rebalance step whose launch fails is abandoned, its launches
//! released, and the failure recorded). Then the invariants are checked and the tick is
//! recorded. Launches can take `LaunchTicks` ticks (Pending, then InService or failed); at the
//! end a [`SimulationSummary`] says how long the fleet took to come back to the optimum after
//! capacity returned and how many copy-ticks were lost.
//!
//! No clock is read: time is `tick × TickSeconds`, and the planners are bounded by node limits,
//! so the same script gives the same [`Simulation`], byte for byte. A [`Limits`] deadline or
//! cancellation given to the [`Simulator`] is checked between ticks (only then is a clock read).

mod output;
#[cfg(feature = "json")]
mod read;
mod script;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

pub use script::{
    AzOutage, CloudCapacity, LaunchFailureWindow, PlannerChoice, ScaleEvent, Script, DEFAULT_EXACT_NODE_LIMIT,
    DEFAULT_TICK_SECONDS, MAX_LAUNCH_TICKS, MAX_NODE_LIMIT, MAX_SCRIPT_COUNT, MAX_SCRIPT_EVENTS, MAX_TICKS,
    MAX_TICK_SECONDS,
};

use crate::control::{CapacityLedger, Execution, LaunchFailure};
use crate::engines::consolidate::{verify_consolidation, Consolidator};
use crate::engines::contract::{Engine, EngineOutput, Sealed};
use crate::engines::exact::ExactPlanner;
use crate::engines::greedy::GreedyPlanner;
use crate::engines::limits::{Limits, Stats};
use crate::engines::rebalance::{verify_rebalance, Rebalancer};
use crate::error::ValidationError;
use crate::execute::{execute_consolidation, execute_plan, execute_rebalance, StepExecution, StepFailure};
use crate::fleet::{imbalance, objective, solo_cost_micros, FinalFleet, UNIT_COST_MICROS};
use crate::index::{AzIndex, TypeIndex};
use crate::model::{Fleet, Scenario};
use crate::plan::{Action, CostUnit, Objective, Plan, Status, StopReason};
use crate::problem::{Problem, DEFAULT_CAPACITY_ERROR_TTL_SECONDS};
use crate::text::counted;
use crate::violation::{Violation, ViolationKind};

/// Which invariant a [`InvariantFailure`] concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[non_exhaustive]
pub enum Check {
    /// The tick's plan passes [`verify`](crate::verify()).
    Plan,
    /// The consolidation passes [`verify_consolidation`].
    Consolidation,
    /// The rebalance passes [`verify_rebalance`].
    Rebalance,
    /// The fleet after the tick is a valid fleet of the scenario (packing holds on every
    /// instance, ids distinct, every copy on a known instance).
    Fleet,
    /// Nothing is launched into a (type, AZ) blocked by a live capacity error.
    CapacityBlock,
    /// A draining instance receives no copy.
    Draining,
    /// `|F| ≤ MaxInstanceCount` whenever anything was launched, and `|F| ≥ MinInstanceCount`
    /// unless the plan said Infeasible or a launch failed.
    InstanceBounds,
    /// No instance runs in an AZ during its outage.
    Outage,
    /// [`execute_plan`] (that is, [`observe`](crate::control::observe)) accepted the plan and its execution.
    Observe,
}

/// One broken invariant (the simulator reports, it never panics).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct InvariantFailure {
    /// The tick.
    pub tick: u32,
    /// Which check.
    pub check: Check,
    /// What was wrong.
    pub message: String,
}

/// The state after one tick.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct TickRecord {
    /// The tick (0-based).
    pub tick: u32,
    /// Its time, `tick × TickSeconds`.
    pub time: i64,
    /// Instances per priority tier (1–5; 6 = a fleet type outside the pool), zero entries
    /// omitted.
    pub instances_by_priority: BTreeMap<u8, u32>,
    /// Instances in all.
    pub instances: u32,
    /// Per component, copies in the AZ with most minus copies in the AZ with fewest (over all
    /// the endpoint's AZs).
    pub az_imbalance: BTreeMap<String, u64>,
    /// Hourly cost of the fleet, in millionths (see `cost_unit`); JSON `Cost` as a decimal.
    #[serde(rename = "Cost", serialize_with = "decimal")]
    pub cost_micros: i128,
    /// What the cost counts.
    pub cost_unit: CostUnit,
    /// Copies running.
    pub placed_copies: u64,
    /// Desired copies not running.
    pub unplaced_copies: u64,
    /// Desired copies (after the tick's scale events).
    pub desired_copies: u64,
    /// Copies serving: those on InService instances, and those a rebalance moved onto a Pending
    /// instance (their old instance serves them until the new one is InService).
    pub available_copies: u64,
    /// Instances launched and not yet InService.
    pub pending_instances: u32,
    /// Instances of priority 2 or worse (6 = outside the pool).
    pub fallback_instances: u32,
    /// What happened, in order.
    pub events: Vec<String>,
}

impl TickRecord {
    /// The largest AZ imbalance over the components (0 without components).
    pub fn max_az_imbalance(&self) -> u64 {
        self.az_imbalance.values().copied().max().unwrap_or(0)
    }

    /// Instances of one priority tier.
    pub fn instances_of_priority(&self, priority: u8) -> u32 {
        self.instances_by_priority.get(&priority).copied().unwrap_or(0)
    }
}

fn decimal<S: serde::Serializer>(micros: &i128, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(crate::plan::from_micros(*micros))
}

/// What a simulation did: one record per tick run, and every invariant that broke.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Simulation {
    /// The endpoint's name (for titles).
    pub endpoint_name: String,
    /// `greedy` or `exact`.
    pub planner: String,
    /// Seconds per tick.
    pub tick_seconds: u32,
    /// One record per tick run, in order.
    pub ticks: Vec<TickRecord>,
    /// Every broken invariant, in order (empty: all checks passed on every tick).
    pub failures: Vec<InvariantFailure>,
    /// `Completed` when every tick ran; otherwise the limit that stopped the run, or
    /// `InternalError` when the fleet became invalid and the run could not go on.
    pub stop_reason: StopReason,
    /// Over the ticks run: time to preferred, copy-ticks lost, cost-hours, moves.
    pub summary: SimulationSummary,
}

/// What a whole run measured (docs/simulate.md, "Convergence").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct SimulationSummary {
    /// The tick capacity last came back ([`Script::recovery_tick`]).
    pub recovery_tick: u32,
    /// Instances per priority tier of the optimum: the exact planner's plan for the final
    /// desired copy counts from an empty fleet, in the cloud as it is at the end. Empty (and
    /// `optimum_placed_copies` 0, `preferred_tick` `None`) when the simulator's deadline or
    /// cancellation stopped the run before that reference was found.
    pub optimum_by_priority: BTreeMap<u8, u32>,
    /// Copies the optimum places.
    pub optimum_placed_copies: u64,
    /// The first tick at or after `recovery_tick` whose fleet is within one instance of the
    /// optimum (summed over priority tiers, at most one instance beyond the optimum's count of
    /// the tier), has no Pending instance and serves as many copies as the optimum places (at
    /// most the desired ones); `None`: never.
    pub preferred_tick: Option<u32>,
    /// `preferred_tick − recovery_tick`.
    pub time_to_preferred: Option<u32>,
    /// Over the ticks, desired copies minus available copies.
    pub copy_ticks_lost: u64,
    /// Over the ticks, the cost per hour × the tick's hours, in millionths (JSON `CostHours`,
    /// a decimal in the ticks' cost unit).
    #[serde(rename = "CostHours", serialize_with = "decimal")]
    pub cost_hours_micros: i128,
    /// Copies moved by consolidations and rebalances.
    pub moves: u64,
    /// Instances launched (plans and rebalances), failed launches left out.
    pub launches: u64,
}

/// Runs [`Script`]s. Configured like the engines: [`Limits`] (a node limit caps the ticks run;
/// a deadline or cancellation is checked between ticks and during the search for the reference
/// optimum), a result with a [`StopReason`], and
/// [`Stats`] from [`run_with_stats`](Self::run_with_stats).
#[derive(Debug, Clone, Default)]
pub struct Simulator {
    limits: Limits,
}

impl Simulator {
    /// A simulator without limits.
    pub fn new() -> Self {
        Simulator::default()
    }

    /// Limits: the node limit is the number of ticks to run at most (`NodeLimit` when it cuts
    /// the script short); a time limit (per call) or deadline (`TimeLimit`) or cancellation
    /// (`Cancelled`) is checked
    /// before every tick and while the reference optimum of the summary is searched (stopped
    /// there, the summary has no optimum). Planners inside a tick are bounded by node limits
    /// only, so a tick's outcome never depends on the clock.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.set_limits(limits);
        self
    }

    /// Validates and runs the script.
    pub fn run(&self, script: &Script) -> Result<Simulation, ValidationError> {
        self.run_with_stats(script).map(|(simulation, _)| simulation)
    }

    /// [`run`](Self::run), with what the engines did: `solves` = planner, consolidation and
    /// rebalance calls, `nodes` = their search nodes, `rounds` = ticks run. No phase times:
    /// the simulator reads no clock.
    pub fn run_with_stats(&self, script: &Script) -> Result<(Simulation, Stats), ValidationError> {
        let problem = script.validate()?;
        let mut run = Run::new(script);
        let mut stop_reason = StopReason::Completed;
        // A time limit counts from this call.
        let limits = self.limits.armed(None);
        for tick in 0..script.ticks {
            if let Some(reason) = limits.stop_now() {
                stop_reason = reason;
                break;
            }
            if limits.nodes().is_some_and(|limit| u64::from(tick) >= limit) {
                stop_reason = StopReason::NodeLimit;
                break;
            }
            if let Err(reason) = run.tick(tick) {
                stop_reason = StopReason::InternalError(reason);
                break;
            }
        }
        run.stats.rounds = run.records.len() as u64;
        let (summary, reference_stopped) = run.summary(&problem, &limits);
        // The reference optimum is searched last: a stop during it is the run's stop too.
        if let (StopReason::Completed, Some(reason)) = (&stop_reason, reference_stopped) {
            stop_reason = reason;
        }
        let simulation = Simulation {
            endpoint_name: problem.endpoint_name().to_string(),
            planner: match script.planner {
                PlannerChoice::Greedy => "greedy".to_string(),
                PlannerChoice::Exact { .. } => "exact".to_string(),
            },
            tick_seconds: script.tick_seconds,
            ticks: run.records,
            failures: run.failures,
            stop_reason,
            summary,
        };
        Ok((simulation, run.stats))
    }
}

/// Runs `script` with a [`Simulator`] without limits.
///
/// ```
/// use fleetplan::simulate::{self, Script};
/// # let scenario = fleetplan::scenario_from_json(include_str!("../../scenarios/seed-az-balance.json")).unwrap();
/// let simulation = simulate::run(&Script::new(scenario, 2)).unwrap();
/// assert_eq!(simulation.ticks.len(), 2);
/// assert!(simulation.failures.is_empty());
/// ```
pub fn run(script: &Script) -> Result<Simulation, ValidationError> {
    Simulator::new().run(script)
}

impl Sealed for Simulator {}

impl Engine for Simulator {
    type Input = Script;
    type Output = Simulation;
    type Error = ValidationError;

    fn set_limits(&mut self, limits: Limits) {
        self.limits = self.limits.clone().merged(limits);
    }

    fn run_with_stats(&self, script: &Script) -> Result<(Simulation, Stats), ValidationError> {
        Simulator::run_with_stats(self, script)
    }
}

impl Sealed for Simulation {}

impl EngineOutput for Simulation {
    type Input = Script;

    /// `None`: a simulation has one fleet per tick (see [`Simulation::ticks`]).
    fn objective(&self) -> Option<&Objective> {
        None
    }

    fn stop_reason(&self) -> &StopReason {
        &self.stop_reason
    }

    /// The failures of the checks the run made after every tick, against that tick's fleet and
    /// problem (the script is not run again): [`ViolationKind::Simulation`] each.
    fn verify(&self, _script: &Script) -> Vec<Violation> {
        self.failures
            .iter()
            .map(|failure| Violation {
                kind: ViolationKind::Simulation,
                message: format!("tick {}, {:?} check: {}", failure.tick, failure.check, failure.message),
            })
            .collect()
    }

    #[cfg(feature = "json")]
    fn to_json(&self) -> String {
        Simulation::to_json(self)
    }
}

/// The fake cloud: capacity left per (type, AZ) (absent = unlimited), failure windows, outages.
struct Cloud<'s> {
    script: &'s Script,
    capacity: BTreeMap<(String, String), Option<u32>>,
}

impl Cloud<'_> {
    fn down(&self, tick: u32, az: &str) -> bool {
        self.script
            .az_outages
            .iter()
            .any(|outage| outage.availability_zone == az && (outage.from_tick..outage.until_tick).contains(&tick))
    }

    /// A launch: `Err` when it fails at once, `Ok(Some(failure))` when it is Pending and fails
    /// when it should be InService (a ProvisioningTimeout with `LaunchTicks` > 0), `Ok(None)`
    /// when it comes up. A launch takes one unit of capacity until it ends.
    fn launch(&mut self, tick: u32, instance_type: &str, az: &str) -> Result<Option<LaunchFailure>, LaunchFailure> {
        if self.down(tick, az) {
            return Err(LaunchFailure::InsufficientCapacity);
        }
        let window = self.script.launch_failures.iter().find(|window| {
            window.instance_type == instance_type
                && window.availability_zone == az
                && (window.from_tick..window.until_tick).contains(&tick)
        });
        let later = window.map(|window| window.failure);
        if let Some(failure) = later {
            if !(failure == LaunchFailure::ProvisioningTimeout && self.script.launch_ticks > 0) {
                return Err(failure);
            }
        }
        match self.capacity.get_mut(&(instance_type.to_string(), az.to_string())) {
            Some(Some(0)) => Err(LaunchFailure::InsufficientCapacity),
            Some(Some(left)) => {
                *left -= 1;
                Ok(later)
            }
            _ => Ok(later),
        }
    }

    /// A terminated instance goes back to the cloud.
    fn give_back(&mut self, instance_type: &str, az: &str) {
        if let Some(Some(left)) = self.capacity.get_mut(&(instance_type.to_string(), az.to_string())) {
            *left = left.saturating_add(1);
        }
    }
}

/// A launched instance that is not InService yet.
struct Pending {
    /// The tick it is InService (or fails).
    ready_tick: u32,
    /// How it fails then, if it does.
    failure: Option<LaunchFailure>,
}

/// Copies a rebalance moved onto Pending instances, served by their old (released) instances
/// until the new ones are InService: make-before-break in time.
struct Held {
    /// The tick the new instances are InService.
    until_tick: u32,
    copies: u64,
    /// Hourly cost of the released instances, in millionths.
    cost_micros: i128,
}

/// One simulation in progress.
struct Run<'s> {
    script: &'s Script,
    cloud: Cloud<'s>,
    scenario: Scenario,
    ledger: CapacityLedger,
    next_id: u64,
    /// Every instance id the run has seen (the starting fleet's and every one handed out): a
    /// new id is never one of them.
    ids_seen: BTreeSet<String>,
    records: Vec<TickRecord>,
    failures: Vec<InvariantFailure>,
    stats: Stats,
    /// Real id → launch not yet InService.
    pending: BTreeMap<String, Pending>,
    held: Vec<Held>,
    moves: u64,
    launches: u64,
}

/// What one tick's launches did, for events and the bounds check.
#[derive(Default)]
struct Launches {
    /// (type, AZ, outcome) → count; outcome `None` = launched.
    outcomes: BTreeMap<(String, String, Option<LaunchFailure>), u32>,
    launched: u32,
    failed: u32,
}

impl Launches {
    fn count(&mut self, instance_type: &str, az: &str, outcome: Option<LaunchFailure>) {
        *self.outcomes.entry((instance_type.to_string(), az.to_string(), outcome)).or_insert(0) += 1;
        if outcome.is_some() {
            self.failed += 1;
        } else {
            self.launched += 1;
        }
    }

    fn events(&self, what: &str) -> Vec<String> {
        self.outcomes
            .iter()
            .map(|((instance_type, az, outcome), count)| match outcome {
                None => format!("{what} launched {count} {instance_type} in {az}"),
                Some(failure) => format!("{what} {count} {instance_type} in {az} failed ({})", failure_text(*failure)),
            })
            .collect()
    }
}

fn failure_text(failure: LaunchFailure) -> &'static str {
    match failure {
        LaunchFailure::InsufficientCapacity => "InsufficientCapacity",
        LaunchFailure::ProvisioningTimeout => "ProvisioningTimeout",
        LaunchFailure::Other => "other error",
    }
}

impl<'s> Run<'s> {
    fn new(script: &'s Script) -> Run<'s> {
        let ttl = problem_ttl(&script.scenario);
        Run {
            script,
            cloud: Cloud { script, capacity: BTreeMap::new() },
            scenario: script.scenario.clone(),
            ledger: CapacityLedger::new().with_ttl_seconds(ttl),
            next_id: 0,
            ids_seen: script.scenario.fleet.instances.iter().map(|instance| instance.instance_id.clone()).collect(),
            records: Vec::new(),
            failures: Vec::new(),
            stats: Stats::default(),
            pending: BTreeMap::new(),
            held: Vec::new(),
            moves: 0,
            launches: 0,
        }
    }

    fn fail(&mut self, tick: u32, check: Check, message: String) {
        self.failures.push(InvariantFailure { tick, check, message });
    }

    /// A fresh real instance id: `i-00001`, `i-00002`, …, skipping any id already seen.
    fn real_id(&mut self) -> String {
        loop {
            self.next_id += 1;
            let id = format!("i-{:05}", self.next_id);
            if self.ids_seen.insert(id.clone()) {
                return id;
            }
        }
    }

    /// The optimum: the exact planner's plan for the desired copy counts at the end, from an
    /// empty fleet, in the cloud as it is at the end (a (type, AZ) the script limits offers
    /// what is left plus what the fleet runs there; an AZ still down offers nothing). `None`
    /// when that scenario does not validate, or when the simulator's deadline or cancellation
    /// stops the search (a stopped run returns at once, not after the reference search).
    /// `Err` says why it was stopped.
    fn optimum(&self, base: &Problem, limits: &Limits) -> Result<Option<crate::plan::Objective>, StopReason> {
        if let Some(reason) = limits.stop_now() {
            return Err(reason);
        }
        let mut scenario = self.scenario.clone();
        scenario.now = None;
        scenario.capacity_events.clear();
        let mut offered: BTreeMap<(String, String), u32> = BTreeMap::new();
        for ((instance_type, az), left) in &self.cloud.capacity {
            if let Some(left) = left {
                let running = scenario
                    .fleet
                    .instances
                    .iter()
                    .filter(|instance| &instance.instance_type == instance_type && &instance.availability_zone == az)
                    .count();
                let running = u32::try_from(running).unwrap_or(u32::MAX);
                offered.insert((instance_type.clone(), az.clone()), left.saturating_add(running));
            }
        }
        let last = self.records.last().map_or(0, |record| record.tick);
        for az in base.azs().iter().filter(|az| self.cloud.down(last, az)) {
            for info in base.instance_types() {
                offered.insert((info.name.clone(), az.clone()), 0);
            }
        }
        scenario.fleet = Fleet::default();
        for ((instance_type, az), available) in offered {
            match scenario
                .capacity
                .iter_mut()
                .find(|entry| entry.instance_type == instance_type && entry.availability_zone == az)
            {
                Some(entry) => entry.available = Some(available),
                None => scenario.capacity.push(crate::model::CapacityEntry {
                    instance_type,
                    availability_zone: az,
                    available: Some(available),
                    reserved: 0,
                }),
            }
        }
        let Ok(problem) = Problem::new(&scenario) else { return Ok(None) };
        let node_limit = match self.script.planner {
            PlannerChoice::Exact { node_limit } => node_limit,
            PlannerChoice::Greedy => script::DEFAULT_EXACT_NODE_LIMIT,
        };
        // The deadline reaches the planner as a cancellation check, not as a deadline: a planner
        // with a deadline does not deepen its node limit, and the reference would then depend on
        // whether a deadline was set at all.
        let stop = limits.clone();
        let planner_limits = Limits::new().node_limit(node_limit).cancel_when(move || stop.stop_now().is_some());
        let plan = ExactPlanner::new().limits(planner_limits).plan(&problem);
        match plan.stop_reason {
            StopReason::Cancelled => Err(limits.stop_now().unwrap_or(StopReason::Cancelled)),
            _ => Ok(Some(plan.objective)),
        }
    }

    /// What the run measured (see [`SimulationSummary`]), and why the search for its reference
    /// optimum was stopped, if it was.
    fn summary(&self, base: &Problem, limits: &Limits) -> (SimulationSummary, Option<StopReason>) {
        let recovery_tick = self.script.recovery_tick();
        let (optimum, stopped) = match self.optimum(base, limits) {
            Ok(optimum) => (optimum, None),
            Err(reason) => (None, Some(reason)),
        };
        let optimum_by_priority =
            optimum.as_ref().map(|optimum| optimum.instances_by_priority.clone()).unwrap_or_default();
        let optimum_placed_copies = optimum.as_ref().map_or(0, |optimum| optimum.placed_copies);
        let preferred_tick = optimum.as_ref().and_then(|_| {
            self.records
                .iter()
                .filter(|record| record.tick >= recovery_tick)
                .find(|record| {
                    let beyond: u32 = record
                        .instances_by_priority
                        .iter()
                        .map(|(priority, &count)| {
                            count.saturating_sub(optimum_by_priority.get(priority).copied().unwrap_or(0))
                        })
                        .sum();
                    beyond <= 1
                        && record.pending_instances == 0
                        && record.available_copies >= optimum_placed_copies.min(record.desired_copies)
                })
                .map(|record| record.tick)
        });
        let tick_seconds = i128::from(self.script.tick_seconds);
        let summary = SimulationSummary {
            recovery_tick,
            optimum_by_priority,
            optimum_placed_copies,
            preferred_tick,
            time_to_preferred: preferred_tick.map(|tick| tick - recovery_tick),
            copy_ticks_lost: self
                .records
                .iter()
                .map(|record| record.desired_copies.saturating_sub(record.available_copies))
                .sum(),
            cost_hours_micros: self.records.iter().map(|record| record.cost_micros * tick_seconds).sum::<i128>() / 3600,
            moves: self.moves,
            launches: self.launches,
        };
        (summary, stopped)
    }

    /// A launch went out: Pending for `LaunchTicks` ticks (none: InService at once).
    fn start(&mut self, tick: u32, id: &str, failure: Option<LaunchFailure>) {
        self.launches += 1;
        if self.script.launch_ticks > 0 {
            let ready_tick = tick.saturating_add(self.script.launch_ticks);
            self.pending.insert(id.to_string(), Pending { ready_tick, failure });
        }
    }

    /// Pending instances still in the fleet (those lost or released are forgotten).
    fn pending_in_fleet(&mut self) -> u32 {
        let fleet: BTreeSet<&str> =
            self.scenario.fleet.instances.iter().map(|instance| instance.instance_id.as_str()).collect();
        self.pending.retain(|id, _| fleet.contains(id.as_str()));
        self.pending.len() as u32
    }

    /// Launches whose time has come are InService, or fail (a ProvisioningTimeout: the
    /// instance goes with its copies, its capacity back to the cloud, the error to the
    /// ledger). Returns what happened, for the timeline.
    fn launches_complete(&mut self, tick: u32, now: i64) -> Vec<String> {
        self.pending_in_fleet();
        let ready: Vec<(String, Option<LaunchFailure>)> = self
            .pending
            .iter()
            .filter(|(_, pending)| pending.ready_tick <= tick)
            .map(|(id, pending)| (id.clone(), pending.failure))
            .collect();
        // (type, AZ, failure) → (instances, copies lost)
        let mut outcomes: BTreeMap<(String, String, Option<LaunchFailure>), (u64, u64)> = BTreeMap::new();
        for (id, failure) in ready {
            self.pending.remove(&id);
            let Some(instance) = self.scenario.fleet.instances.iter().find(|instance| instance.instance_id == id)
            else {
                continue;
            };
            let key = (instance.instance_type.clone(), instance.availability_zone.clone(), failure);
            let mut lost = 0;
            if let Some(failure) = failure {
                lost = remove_instances(&mut self.scenario.fleet, &BTreeSet::from([id]));
                self.cloud.give_back(&key.0, &key.1);
                if let Some(event) = failure.capacity_event() {
                    self.ledger.record(&key.0, &key.1, event, now);
                }
            }
            let entry = outcomes.entry(key).or_insert((0, 0));
            entry.0 += 1;
            entry.1 += lost;
        }
        outcomes
            .into_iter()
            .map(|((instance_type, az, failure), (count, lost))| match failure {
                None => format!("launch: {count} {instance_type} in {az} in service"),
                Some(failure) => format!(
                    "launch: {count} {instance_type} in {az} failed after {} ({}), {} lost",
                    counted(u64::from(self.script.launch_ticks), "tick", "ticks"),
                    failure_text(failure),
                    counted(lost, "copy", "copies")
                ),
            })
            .collect()
    }

    /// The scenario at `now`, validated; a failure (and the end of the run) when the fleet the
    /// loop produced is not a valid fleet.
    fn problem(&mut self, tick: u32, now: i64) -> Result<Problem, String> {
        self.ledger.prune(now);
        self.ledger.apply(&mut self.scenario, now);
        Problem::new(&self.scenario).map_err(|error| {
            for issue in error.issues() {
                self.fail(tick, Check::Fleet, issue.to_string());
            }
            "the fleet is no longer a valid fleet of the scenario".to_string()
        })
    }

    fn tick(&mut self, tick: u32) -> Result<(), String> {
        let script = self.script;
        let now = i64::from(tick) * i64::from(script.tick_seconds);

        // 1. The world changes; launches due are InService or fail.
        let mut events = self.world_changes(tick);
        events.extend(self.launches_complete(tick, now));
        let draining_before = draining_copies(&self.scenario.fleet);

        // 2. Plan and execute.
        let problem = self.problem(tick, now)?;
        let (plan, launches) = self.plan_and_execute(tick, now, &problem, &mut events);
        let mut launches_failed = launches.failed;
        let mut launched_any = launches.launched > 0;

        // 3. Consolidate and rebalance on their schedule. The validated problem is reused while
        // nothing changed the scenario (a plan without actions launches nothing, so the ledger
        // is unchanged too): validation is a fifth of a quiet tick.
        let mut unchanged = plan.actions.is_empty().then_some(problem);
        let due = |every: u32| every > 0 && (tick + 1) % every == 0;
        if due(script.consolidate_every) {
            let problem = match unchanged.take() {
                Some(problem) => problem,
                None => self.problem(tick, now)?,
            };
            if !self.consolidate(tick, now, &problem, &mut events) {
                unchanged = Some(problem);
            }
        }
        // A rebalance waits until no launch is Pending: its own moves need their new instances
        // InService before the old ones go.
        if due(script.rebalance_every) && self.pending_in_fleet() == 0 {
            let problem = match unchanged.take() {
                Some(problem) => problem,
                None => self.problem(tick, now)?,
            };
            let (launched, failed, changed) = self.rebalance(tick, now, &problem, &mut events);
            launched_any |= launched;
            launches_failed += failed;
            if !changed {
                unchanged = Some(problem);
            }
        }

        // 4. Check and record.
        let after = match unchanged {
            Some(problem) => problem,
            None => self.problem(tick, now)?,
        };
        self.check_after(tick, &after, &draining_before, plan.status, launched_any, launches_failed);
        self.record(tick, now, &after, events);
        Ok(())
    }

    /// Step 1 of a tick, the world changes: capacity, launch failure windows, AZ outages (which take their
    /// instances and copies), scale events. Returns what happened, for the timeline.
    fn world_changes(&mut self, tick: u32) -> Vec<String> {
        let script = self.script;
        let mut events = Vec::new();
        for change in script.cloud_capacity.iter().filter(|change| change.tick == tick) {
            let key = (change.instance_type.clone(), change.availability_zone.clone());
            self.cloud.capacity.insert(key, change.available);
            events.push(match change.available {
                Some(available) => {
                    format!("cloud: {} in {}: {available} available", change.instance_type, change.availability_zone)
                }
                None => format!("cloud: {} in {}: unlimited", change.instance_type, change.availability_zone),
            });
        }
        for window in script.launch_failures.iter() {
            if window.from_tick == tick {
                events.push(format!(
                    "cloud: {} in {} fails launches ({})",
                    window.instance_type,
                    window.availability_zone,
                    failure_text(window.failure)
                ));
            } else if window.until_tick == tick {
                events.push(format!("cloud: {} in {} launches again", window.instance_type, window.availability_zone));
            }
        }
        for outage in script.az_outages.iter() {
            if outage.from_tick == tick {
                let lost: Vec<String> = self
                    .scenario
                    .fleet
                    .instances
                    .iter()
                    .filter(|instance| instance.availability_zone == outage.availability_zone)
                    .map(|instance| instance.instance_id.clone())
                    .collect();
                let copies_lost = remove_instances(&mut self.scenario.fleet, &lost.iter().cloned().collect());
                events.push(format!(
                    "outage: {} down, {} and {} lost",
                    outage.availability_zone,
                    counted(lost.len() as u64, "instance", "instances"),
                    counted(copies_lost, "copy", "copies")
                ));
            } else if outage.until_tick == tick {
                events.push(format!("outage: {} back", outage.availability_zone));
            }
        }
        for scale in script.scale_events.iter().filter(|scale| scale.tick == tick) {
            let count = scale.copy_count;
            let previous = if let Some(component) = self
                .scenario
                .inference_components
                .iter_mut()
                .find(|component| component.inference_component_name == scale.component)
            {
                std::mem::replace(&mut component.runtime_config.copy_count, count)
            } else {
                // A single-model endpoint: its implicit component is the variant.
                self.scenario.endpoint.desired_instance_count.replace(count).unwrap_or(0)
            };
            events.push(format!("scale: {} {previous} -> {count}", scale.component));
        }
        events
    }

    /// Step 2 of a tick, plan and execute: the plan is verified, launched through the simulated cloud and
    /// observed into the next fleet. Returns the plan and its launches.
    fn plan_and_execute(
        &mut self,
        tick: u32,
        now: i64,
        problem: &Problem,
        events: &mut Vec<String>,
    ) -> (Plan, Launches) {
        let script = self.script;
        let blocked: Vec<(String, String)> =
            self.ledger.blocks(now).into_iter().map(|(instance_type, az, _)| (instance_type, az)).collect();
        let (plan, stats) = match script.planner {
            PlannerChoice::Greedy => GreedyPlanner::new().plan_with_stats(problem),
            PlannerChoice::Exact { node_limit } => ExactPlanner::new().node_limit(node_limit).plan_with_stats(problem),
        };
        self.add_stats(&stats);
        // An Infeasible plan (MinInstanceCount out of reach) is the closest plan and says so: its
        // instance-bound violations are expected, anything else is not.
        let infeasible = plan.status == Status::Infeasible;
        for violation in crate::verify::verify(problem, &plan) {
            if !(infeasible && violation.kind == crate::violation::ViolationKind::InstanceBounds) {
                self.fail(tick, Check::Plan, violation.to_string());
            }
        }
        self.check_blocked(tick, &blocked, plan_launches(&plan), "plan");
        let mut launches = Launches::default();
        let mut execution = Execution::new(now);
        for action in &plan.actions {
            match action {
                Action::LaunchInstance { instance_id, instance_type, availability_zone, .. } => {
                    match self.cloud.launch(tick, instance_type, availability_zone) {
                        Ok(later) => {
                            let real = self.real_id();
                            self.start(tick, &real, later);
                            execution = execution.launched(instance_id, &real);
                            launches.count(instance_type, availability_zone, None);
                        }
                        Err(failure) => {
                            execution = execution.launch_failed(instance_id, failure);
                            launches.count(instance_type, availability_zone, Some(failure));
                        }
                    }
                }
                Action::TerminateInstance { instance_id } => {
                    if let Some(existing) = problem.existing_index(instance_id).and_then(|i| problem.fleet().get(i)) {
                        let (instance_type, az) =
                            type_and_az(problem, TypeIndex::new(existing.type_index), AzIndex::new(existing.az_index));
                        self.cloud.give_back(&instance_type, &az);
                    }
                }
                _ => {}
            }
        }
        let terminated =
            plan.actions.iter().filter(|action| matches!(action, Action::TerminateInstance { .. })).count();
        events.extend(launches.events("plan:"));
        if terminated > 0 {
            events.push(format!("plan: terminated {terminated}"));
        }
        match execute_plan(problem, &plan, &execution) {
            Ok(observed) => {
                self.ledger.extend(observed.capacity_events);
                self.scenario.fleet = observed.fleet;
            }
            Err(error) => {
                for issue in error.issues() {
                    self.fail(tick, Check::Observe, issue.to_string());
                }
            }
        }

        (plan, launches)
    }

    fn add_stats(&mut self, stats: &Stats) {
        self.stats.solves += stats.solves.max(1);
        self.stats.nodes += stats.nodes;
    }

    fn check_blocked<'a>(
        &mut self,
        tick: u32,
        blocked: &[(String, String)],
        launches: impl Iterator<Item = (&'a str, &'a str)>,
        what: &str,
    ) {
        for (instance_type, az) in launches {
            if blocked.iter().any(|(blocked_type, blocked_az)| blocked_type == instance_type && blocked_az == az) {
                self.fail(
                    tick,
                    Check::CapacityBlock,
                    format!("{what} launches {instance_type} in {az} while a capacity error blocks it"),
                );
            }
        }
    }

    /// Consolidates; returns whether the fleet changed.
    fn consolidate(&mut self, tick: u32, now: i64, problem: &Problem, events: &mut Vec<String>) -> bool {
        let mut consolidator = Consolidator::new();
        if let Some(nodes) = self.script.consolidate_node_limit {
            consolidator = consolidator.limits(Limits::new().node_limit(nodes));
        }
        let (plan, stats) = consolidator.plan_with_stats(problem);
        self.add_stats(&stats);
        for violation in verify_consolidation(problem, &plan) {
            self.fail(tick, Check::Consolidation, violation.to_string());
        }
        if plan.steps.is_empty() {
            return false;
        }
        let outcome = match execute_consolidation(problem, &plan, &StepExecution::new(now)) {
            Ok(outcome) => outcome,
            Err(error) => {
                for issue in error.issues() {
                    self.fail(tick, Check::Consolidation, issue.to_string());
                }
                return false;
            }
        };
        for instance in &outcome.released {
            self.cloud.give_back(&instance.instance_type, &instance.availability_zone);
        }
        self.moves += outcome.moves as u64;
        events.push(format!(
            "consolidate: {}, {}, released {}",
            counted(plan.steps.len() as u64, "step", "steps"),
            counted(outcome.moves as u64, "move", "moves"),
            outcome.released.len()
        ));
        self.scenario.fleet = outcome.fleet;
        true
    }

    /// Executes the rebalance plan step by step against the cloud; returns (launched anything,
    /// failed launches, changed the fleet or the ledger).
    fn rebalance(&mut self, tick: u32, now: i64, problem: &Problem, events: &mut Vec<String>) -> (bool, u32, bool) {
        let blocked: Vec<(String, String)> =
            self.ledger.blocks(now).into_iter().map(|(instance_type, az, _)| (instance_type, az)).collect();
        let mut rebalancer = Rebalancer::new();
        if let Some(nodes) = self.script.rebalance_node_limit {
            rebalancer = rebalancer.limits(Limits::new().node_limit(nodes));
        }
        let (plan, stats) = rebalancer.plan_with_stats(problem);
        self.add_stats(&stats);
        for violation in verify_rebalance(problem, &plan) {
            self.fail(tick, Check::Rebalance, violation.to_string());
        }
        let launches = plan.launches().map(|launch| (launch.instance_type.as_str(), launch.availability_zone.as_str()));
        self.check_blocked(tick, &blocked, launches, "rebalance");
        if plan.steps.is_empty() {
            return (false, 0, false);
        }
        // Launch step by step against the cloud until a launch fails: that step cannot be made
        // before it breaks, and no later step runs.
        let mut execution = StepExecution::new(now);
        'steps: for step in &plan.steps {
            for launch in &step.launch {
                match self.cloud.launch(tick, &launch.instance_type, &launch.availability_zone) {
                    Ok(later) => {
                        let real = self.real_id();
                        self.start(tick, &real, later);
                        execution = execution.launched(&launch.instance_id, &real);
                    }
                    Err(failure) => {
                        execution = execution.launch_failed(&launch.instance_id, failure);
                        break 'steps;
                    }
                }
            }
        }
        let outcome = match execute_rebalance(problem, &plan, &execution) {
            Ok(outcome) => outcome,
            Err(error) => {
                for issue in error.issues() {
                    self.fail(tick, Check::Rebalance, issue.to_string());
                }
                return (false, 0, false);
            }
        };
        self.ledger.extend(outcome.capacity_events.iter().cloned());
        for instance in outcome.released.iter().chain(&outcome.abandoned) {
            self.cloud.give_back(&instance.instance_type, &instance.availability_zone);
        }
        let done = outcome.steps_completed;
        self.moves += outcome.moves as u64;
        if done > 0 && self.script.launch_ticks > 0 && !outcome.launched.is_empty() {
            self.hold(tick, problem, &outcome);
        }
        if done > 0 {
            let launched = outcome.launched.len();
            events.push(format!(
                "rebalance: {done} of {}, launched {launched}, {}, released {}",
                counted(plan.steps.len() as u64, "step", "steps"),
                counted(outcome.moves as u64, "move", "moves"),
                outcome.released.len()
            ));
            self.scenario.fleet = outcome.fleet;
        }
        let abandoned = match &outcome.failure {
            Some(StepFailure::Launch { step, launch, failure }) => Some(format!(
                "rebalance: step {} abandoned ({} for {} in {})",
                step + 1,
                failure_text(*failure),
                launch.instance_type,
                launch.availability_zone
            )),
            _ => None,
        };
        let failed = u32::from(abandoned.is_some());
        let changed = done > 0 || abandoned.is_some();
        events.extend(abandoned);
        (!outcome.launched.is_empty(), failed, changed)
    }

    /// The copies a rebalance moved onto its (Pending) launches keep being served by the
    /// instances it released, which keep costing, until the launches are InService.
    fn hold(&mut self, tick: u32, problem: &Problem, outcome: &crate::execute::StepOutcome) {
        let launched: BTreeSet<&str> = outcome.launched.iter().map(|instance| instance.instance_id.as_str()).collect();
        let copies = outcome
            .fleet
            .copies
            .iter()
            .filter(|copy| launched.contains(copy.instance_id.as_str()))
            .map(|copy| u64::from(copy.copy_count))
            .sum();
        let cost_micros = outcome
            .released
            .iter()
            .filter(|instance| !instance.reserved)
            .map(|instance| {
                let type_index = problem.type_index(&instance.instance_type);
                i128::from(type_index.map_or(UNIT_COST_MICROS, |index| solo_cost_micros(problem, index, false)))
            })
            .sum();
        let until_tick = tick.saturating_add(self.script.launch_ticks);
        self.held.push(Held { until_tick, copies, cost_micros });
    }

    fn check_after(
        &mut self,
        tick: u32,
        after: &Problem,
        draining_before: &BTreeMap<(String, String), f64>,
        plan_status: Status,
        launched_any: bool,
        launches_failed: u32,
    ) {
        for ((id, component), count) in draining_copies(&self.scenario.fleet) {
            let before = draining_before.get(&(id.clone(), component.clone())).copied().unwrap_or(0.0);
            if count > before {
                self.fail(
                    tick,
                    Check::Draining,
                    format!("draining instance {id} went from {before} to {count} copies of {component}"),
                );
            }
        }
        let instances = after.fleet().len();
        let scaling = after.scaling();
        if let Some(max) = scaling.max_instances.filter(|&max| launched_any && instances > max as usize) {
            self.fail(
                tick,
                Check::InstanceBounds,
                format!("{instances} instances after launching, above MaxInstanceCount {max}"),
            );
        }
        let excused = plan_status == Status::Infeasible || launches_failed > 0;
        if instances < scaling.min_instances as usize && !excused {
            self.fail(
                tick,
                Check::InstanceBounds,
                format!("{instances} instances, below MinInstanceCount {}", scaling.min_instances),
            );
        }
        let down: Vec<&str> = self
            .script
            .az_outages
            .iter()
            .filter(|outage| (outage.from_tick..outage.until_tick).contains(&tick))
            .map(|outage| outage.availability_zone.as_str())
            .collect();
        for instance in &self.scenario.fleet.instances {
            if down.contains(&instance.availability_zone.as_str()) {
                let message = format!("{} runs in {}, which is down", instance.instance_id, instance.availability_zone);
                self.failures.push(InvariantFailure { tick, check: Check::Outage, message });
            }
        }
    }

    fn record(&mut self, tick: u32, now: i64, after: &Problem, events: Vec<String>) {
        let pending_instances = self.pending_in_fleet();
        self.held.retain(|held| held.until_tick > tick);
        let held_copies: u64 = self.held.iter().map(|held| held.copies).sum();
        let held_cost: i128 = self.held.iter().map(|held| held.cost_micros).sum();
        let serving: u64 = self
            .scenario
            .fleet
            .copies
            .iter()
            .filter(|copy| !self.pending.contains_key(&copy.instance_id))
            .map(|copy| u64::from(copy.copy_count))
            .sum();
        let (fleet, _) = FinalFleet::apply(after, &[]);
        let reached = objective(after, &fleet);
        let per_az = fleet.copies_per_az(after);
        let az_imbalance = after
            .components()
            .iter()
            .zip(&per_az)
            .map(|(component, copies)| (component.name.clone(), imbalance(copies)))
            .collect();
        let desired: u64 = after.components().iter().map(|component| u64::from(component.copy_count)).sum();
        let fallback_instances =
            reached.instances_by_priority.iter().filter(|(&priority, _)| priority > 1).map(|(_, &count)| count).sum();
        self.records.push(TickRecord {
            tick,
            time: now,
            instances: reached.instances_by_priority.values().sum(),
            instances_by_priority: reached.instances_by_priority,
            az_imbalance,
            cost_micros: reached.cost_micros + held_cost,
            cost_unit: reached.cost_unit,
            placed_copies: reached.placed_copies,
            unplaced_copies: desired.saturating_sub(reached.placed_copies),
            desired_copies: desired,
            available_copies: (serving + held_copies).min(desired),
            pending_instances,
            fallback_instances,
            events,
        });
    }
}

/// Removes instances and their copies from a fleet; returns the copies lost.
fn remove_instances(fleet: &mut Fleet, ids: &BTreeSet<String>) -> u64 {
    fleet.instances.retain(|instance| !ids.contains(&instance.instance_id));
    let before: u64 = fleet.copies.iter().map(|copy| u64::from(copy.copy_count)).sum();
    fleet.copies.retain(|copy| !ids.contains(&copy.instance_id));
    before - fleet.copies.iter().map(|copy| u64::from(copy.copy_count)).sum::<u64>()
}

/// The ledger TTL the scenario asks for (validated to 0–86400 already).
fn problem_ttl(scenario: &Scenario) -> u32 {
    scenario.capacity_error_ttl_seconds.filter(|&ttl| ttl <= 86_400).unwrap_or(DEFAULT_CAPACITY_ERROR_TTL_SECONDS)
}

fn type_and_az(problem: &Problem, type_index: TypeIndex, az_index: AzIndex) -> (String, String) {
    (
        problem.instance_types().get(type_index.index()).map(|info| info.name.clone()).unwrap_or_default(),
        problem.azs().get(az_index.index()).cloned().unwrap_or_default(),
    )
}

fn plan_launches(plan: &Plan) -> impl Iterator<Item = (&str, &str)> {
    plan.actions.iter().filter_map(|action| match action {
        Action::LaunchInstance { instance_type, availability_zone, .. } => {
            Some((instance_type.as_str(), availability_zone.as_str()))
        }
        _ => None,
    })
}

/// (draining instance id, component) → copies.
fn draining_copies(fleet: &Fleet) -> BTreeMap<(String, String), f64> {
    let draining: Vec<&str> = fleet
        .instances
        .iter()
        .filter(|instance| instance.is_draining())
        .map(|instance| instance.instance_id.as_str())
        .collect();
    let mut copies = BTreeMap::new();
    for copy in fleet.copies.iter().filter(|copy| draining.contains(&copy.instance_id.as_str())) {
        *copies.entry((copy.instance_id.clone(), copy.inference_component_name.clone())).or_insert(0.0) +=
            f64::from(copy.copy_count);
    }
    copies
}
