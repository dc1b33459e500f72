//! Plans: the actions that take the fleet to its final state, and the objective they reach.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::Warning;
use crate::problem::{CapacityEventKind, Resources};
use crate::text::{counted, micros_text};

/// One step of a plan, in the contract's JSON form (`"Type": "LaunchInstance"`, …).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "Type")]
#[non_exhaustive]
pub enum Action {
    /// Launch a new instance.
    LaunchInstance {
        /// `new-1`, `new-2`, … in launch order.
        #[serde(rename = "InstanceId")]
        instance_id: String,
        /// Instance type.
        #[serde(rename = "InstanceType")]
        instance_type: String,
        /// Availability zone.
        #[serde(rename = "AvailabilityZone")]
        availability_zone: String,
        /// Launched into a capacity reservation (prepaid).
        #[serde(rename = "Reserved", default)]
        reserved: bool,
    },
    /// Start one copy of a component on an instance.
    PlaceCopy {
        /// Component.
        #[serde(rename = "InferenceComponentName")]
        component: String,
        /// Instance (existing or new).
        #[serde(rename = "InstanceId")]
        instance_id: String,
        /// Model build used on that instance type.
        #[serde(rename = "ModelName", default, skip_serializing_if = "Option::is_none")]
        model_name: Option<String>,
    },
    /// Stop one existing copy of a component (scale-in).
    RemoveCopy {
        /// Component.
        #[serde(rename = "InferenceComponentName")]
        component: String,
        /// Existing instance.
        #[serde(rename = "InstanceId")]
        instance_id: String,
    },
    /// Release an existing instance (it must be empty by then).
    TerminateInstance {
        /// Existing instance.
        #[serde(rename = "InstanceId")]
        instance_id: String,
    },
}

/// Which engine produced a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub enum SolverKind {
    /// The greedy fast path.
    #[serde(rename = "greedy")]
    Greedy,
    /// The exact integer-programming planner.
    #[serde(rename = "exact")]
    Exact,
    /// Another tool (a plan read with [`Plan::from_json`]; its name is in
    /// [`Omitted::solver_name`]).
    #[serde(rename = "other", other)]
    Other,
}

/// How good a plan is known to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[non_exhaustive]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Status {
    /// L1–L4 proven optimal.
    Optimal,
    /// Satisfies every hard constraint; optimality not proven.
    Feasible,
    /// No plan satisfies every hard constraint (e.g. MinInstanceCount cannot be reached);
    /// the plan shown is the closest the engine found and `verify` lists what it breaks.
    Infeasible,
}

pub use crate::engines::limits::StopReason;

/// What the L4 cost counts (contract §2 L4, §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum CostUnit {
    /// Dollars per hour: every non-reserved instance of the final fleet has a price.
    #[default]
    #[serde(rename = "USD/h")]
    UsdPerHour,
    /// Instances: some type in the final fleet has no `HourlyPrice`, so every non-reserved
    /// instance costs 1.
    #[serde(rename = "instances")]
    Instances,
}

impl CostUnit {
    /// How the unit reads after a number: `per hour` or `instances`.
    pub fn suffix(self) -> &'static str {
        match self {
            CostUnit::UsdPerHour => "per hour",
            CostUnit::Instances => "instances",
        }
    }
}

/// Millionths per unit of cost.
const MICROS_PER_UNIT: f64 = 1e6;

/// An amount (dollars, or instances) in millionths, rounded: the one conversion used for
/// prices and reported costs. Accepted prices are at most 1e9, so a price is at most 1e15
/// micros and fits an `i64`; sums are taken in `i128` (see [`Objective::cost_micros`]).
/// Non-finite or out-of-range amounts (only possible in a foreign plan) saturate.
pub fn to_micros(amount: f64) -> i128 {
    (amount * MICROS_PER_UNIT).round() as i128
}

/// Millionths back to an amount (for display and JSON).
pub fn from_micros(micros: i128) -> f64 {
    micros as f64 / MICROS_PER_UNIT
}

/// The lexicographic objective of docs/contract.md §2 (L1 placed, L2 balance, L3 preference, L4 cost).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct Objective {
    /// L1: copies in the final fleet (maximised).
    pub placed_copies: u64,
    /// L2: Σ max(0, imbalance − MaxImbalance) over balanced components (minimised).
    pub balance_excess: u64,
    /// L3: instances of the final fleet per priority (1–6), zero entries omitted.
    pub instances_by_priority: BTreeMap<u8, u32>,
    /// L4: hourly cost in millionths (dollars, or instances when a price is missing: see
    /// [`cost_unit`](Self::cost_unit)). An exact integer sum: `i128` holds 1e15 micros (the
    /// largest accepted price) times more instances than any machine can hold, so no accepted
    /// input overflows it.
    #[serde(rename = "Cost", with = "micros")]
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub cost_micros: i128,
    /// What the cost counts: `USD/h`, or `instances` when a type in the final fleet has no price.
    #[serde(default)]
    pub cost_unit: CostUnit,
}

mod micros {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &i128, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(super::from_micros(*value))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i128, D::Error> {
        Ok(super::to_micros(f64::deserialize(deserializer)?))
    }
}

impl Objective {
    /// Instances of priority `p` (1–6).
    pub fn instances_of_priority(&self, priority: u8) -> u32 {
        self.instances_by_priority.get(&priority).copied().unwrap_or(0)
    }

    /// Instances of every priority: the size of the final fleet.
    pub fn total_instances(&self) -> u64 {
        self.instances_by_priority.values().map(|&count| u64::from(count)).sum()
    }

    /// The cost in dollars (or instance units, see [`cost_unit`](Self::cost_unit)).
    pub fn cost(&self) -> f64 {
        from_micros(self.cost_micros)
    }

    /// A key whose natural order is "better first": compare two objectives with `key() <`.
    pub fn key(&self) -> ObjectiveKey {
        ObjectiveKey {
            unplaced_negated: std::cmp::Reverse(self.placed_copies),
            balance_excess: self.balance_excess,
            fallback_counts: [6u8, 5, 4, 3, 2, 1].map(|p| self.instances_of_priority(p)),
            cost_micros: self.cost_micros,
        }
    }

    /// True when `self` is strictly better than `other` lexicographically.
    pub fn better_than(&self, other: &Objective) -> bool {
        self.key() < other.key()
    }
}

/// Reads as [`crate::render::objective_line`]: `placed 6 copies, balance excess 0, instances
/// p1=2 p2=1 (3 total), cost 20.98 per hour` (messages such as `verify`'s print it this way).
impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let by_priority: Vec<String> =
            self.instances_by_priority.iter().map(|(priority, count)| format!("p{priority}={count}")).collect();
        let total = self.total_instances();
        let instances = if by_priority.is_empty() {
            "instances none".to_string()
        } else {
            format!("instances {} ({total} total)", by_priority.join(" "))
        };
        write!(
            f,
            "placed {}, balance excess {}, {instances}, cost {} {}",
            counted(self.placed_copies, "copy", "copies"),
            self.balance_excess,
            micros_text(self.cost_micros),
            self.cost_unit.suffix()
        )
    }
}

/// Lexicographic comparison key for [`Objective`]; smaller is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectiveKey {
    /// L1 (more placed is better, hence reversed).
    pub unplaced_negated: std::cmp::Reverse<u64>,
    /// L2.
    pub balance_excess: u64,
    /// L3: (n6, n5, n4, n3, n2, n1).
    pub fallback_counts: [u32; 6],
    /// L4.
    pub cost_micros: i128,
}

/// Copies of a component that could not be placed, and why.
///
/// Equality ignores [`causes`](Self::causes): they are derived from the problem and not part of
/// the JSON, so a plan read back from its JSON equals the plan it was written from.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct Unplaced {
    /// Component.
    pub inference_component_name: String,
    /// How many copies are missing.
    pub copy_count: u64,
    /// Reasons a person can act on (a plan from another tool may leave them out).
    #[serde(default)]
    pub reasons: Vec<String>,
    /// The same reasons, structured (library only: not in the plan's JSON, so empty for a plan
    /// read with [`Plan::from_json`]). Whether the shortfall is proven is a property of the plan:
    /// see [`Plan::unplaced_is_proven`].
    #[serde(skip)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    pub causes: Vec<UnplacedCause>,
}

impl PartialEq for Unplaced {
    fn eq(&self, other: &Self) -> bool {
        self.inference_component_name == other.inference_component_name
            && self.copy_count == other.copy_count
            && self.reasons == other.reasons
    }
}

impl Eq for Unplaced {}

impl Unplaced {
    /// `2 copies of chat cannot be placed` when `proven` (the plan is [`Status::Optimal`], so
    /// L1 is proven), otherwise `2 copies of chat not placed by this planner`.
    pub fn summary(&self, proven: bool) -> String {
        format!(
            "{} cop{} of {} {}",
            self.copy_count,
            if self.copy_count == 1 { "y" } else { "ies" },
            self.inference_component_name,
            if proven { "cannot be placed" } else { "not placed by this planner" }
        )
    }
}

/// A plan: actions, what could not be placed, and how good it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct Plan {
    /// Which engine produced the plan.
    pub solver: SolverKind,
    /// Proven optimal, feasible, or infeasible.
    pub status: Status,
    /// Why the engine stopped.
    #[serde(default = "completed")]
    pub stop_reason: StopReason,
    /// Launches, then removals, then placements, then terminations (contract §4.1): executed one
    /// after another in this order they never overbook an instance.
    pub actions: Vec<Action>,
    /// Copies that could not be placed, per component.
    #[serde(default)]
    pub unplaced: Vec<Unplaced>,
    /// The objective the plan reaches (recomputed by `verify`).
    pub objective: Objective,
    /// Best proven lower bound (lexicographic) when the plan is not proven optimal.
    #[serde(default)]
    pub bound: Option<Objective>,
    /// Validation warnings carried along for the reader.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
    /// Which optional parts a plan read with [`Plan::from_json`] left out (nothing, for plans
    /// the library makes); `verify` checks only what is given.
    #[serde(skip)]
    pub omitted: Omitted,
}

/// The parts of a plan from another source that were not given (contract §5: only `Actions`
/// is required). `verify` derives these instead of checking them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Omitted {
    /// The `Solver` string when it is not `greedy` or `exact` (then `solver` is
    /// [`SolverKind::Other`]).
    pub solver_name: Option<String>,
    /// No `Status` (then [`Status::Feasible`] is assumed).
    pub status: bool,
    /// No `Objective` (then the objective is not checked; the field holds the default).
    pub objective: bool,
    /// An `Objective` without `CostUnit` (then the unit is not checked).
    pub cost_unit: bool,
    /// No `Unplaced` (then the missing copies are not compared).
    pub unplaced: bool,
}

fn completed() -> StopReason {
    StopReason::Completed
}

impl Plan {
    /// Whether the copies in [`Plan::unplaced`] are proven impossible to place: true when the
    /// plan is [`Status::Optimal`] (L1, the placed copies, is proven maximal); otherwise a better
    /// plan may place some of them. See [`Unplaced::summary`].
    pub fn unplaced_is_proven(&self) -> bool {
        self.status == Status::Optimal
    }

    /// One [`Unplaced::summary`] per entry of [`Plan::unplaced`], worded by
    /// [`Plan::unplaced_is_proven`].
    pub fn unplaced_summaries(&self) -> Vec<String> {
        let proven = self.unplaced_is_proven();
        self.unplaced.iter().map(|unplaced| unplaced.summary(proven)).collect()
    }

    /// Number of `LaunchInstance` actions.
    pub fn launches(&self) -> usize {
        self.actions.iter().filter(|a| matches!(a, Action::LaunchInstance { .. })).count()
    }
}

/// The position of an action's kind in a plan's `Actions` (contract §4.1): launches, removals,
/// placements, terminations.
pub(crate) fn action_rank(action: &Action) -> u8 {
    match action {
        Action::LaunchInstance { .. } => 0,
        Action::RemoveCopy { .. } => 1,
        Action::PlaceCopy { .. } => 2,
        Action::TerminateInstance { .. } => 3,
    }
}

/// A resource a copy needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Resource {
    /// Accelerator devices.
    Accelerators,
    /// CPU, in milli-cores.
    MilliCpus,
    /// Host memory, in MiB.
    MemoryMib,
}

impl Resource {
    pub(crate) const ALL: [Resource; 3] = [Resource::Accelerators, Resource::MilliCpus, Resource::MemoryMib];

    pub(crate) fn of(self, resources: &Resources) -> u64 {
        match self {
            Resource::Accelerators => resources.accelerators,
            Resource::MilliCpus => resources.milli_cpus,
            Resource::MemoryMib => resources.memory_mib,
        }
    }
}

/// One structured cause of missing copies, derived from an [`crate::explain::Explanation`] (what
/// [`Unplaced::causes`] carries next to the wording in [`Unplaced::reasons`]).
///
/// Launch causes are one per (pool type, AZ) in the order of [`crate::explain::Explanation::launches`]; a copy
/// too large for a type is one cause per type. [`UnplacedCause::NotPlacedByPlanner`] means a
/// better plan could place more: it appears exactly when an instance has room or a launch
/// option is open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "Kind", rename_all_fields = "PascalCase")]
#[non_exhaustive]
pub enum UnplacedCause {
    /// `Reserved + Available` launches of a (type, AZ) are used up.
    CapacityExhausted {
        /// Instance type.
        instance_type: String,
        /// Availability zone.
        availability_zone: String,
        /// `Available` of the capacity entry.
        available: u32,
        /// `Reserved` of the capacity entry.
        reserved: u32,
        /// Launches of this (type, AZ) in the plan.
        launched: u32,
    },
    /// A live capacity error (contract §6) blocks launches of a (type, AZ).
    CapacityBlocked {
        /// Instance type.
        instance_type: String,
        /// Availability zone.
        availability_zone: String,
        /// `InsufficientCapacity` or `ProvisioningTimeout`.
        event: CapacityEventKind,
        /// When it happened (caller's clock, seconds).
        time: i64,
        /// When it stops blocking.
        until: i64,
    },
    /// The final fleet is at `MaxInstanceCount`, which blocks every otherwise open launch.
    MaxInstanceCount {
        /// The limit.
        max: u32,
        /// Instances in the final fleet.
        instances: u64,
        /// Launch options (pool type, AZ) it blocks.
        blocked_launches: u64,
    },
    /// One copy needs more of a resource than a whole, empty instance of a pool type offers.
    TooLarge {
        /// Instance type.
        instance_type: String,
        /// The first resource (accelerators, CPU, memory) that does not fit.
        resource: Resource,
        /// Needed per copy.
        need: u64,
        /// Offered by a whole instance.
        has: u64,
    },
    /// No pool type can take a copy at all: each has no specification or is too small for one
    /// copy (the [`UnplacedCause::TooLarge`] causes carry the component's need per type).
    NoEligibleType {
        /// Pool types.
        pool_types: u64,
        /// Of those, types the component has no specification for.
        without_specification: u64,
        /// Of those, types too small for one copy.
        too_small: u64,
    },
    /// Instances of the final fleet of one type are short of a resource for one more copy.
    InstancesFull {
        /// Instance type.
        instance_type: String,
        /// The first short resource.
        resource: Resource,
        /// Needed per copy.
        need: u64,
        /// The most of it free on any of these instances.
        most_free: u64,
        /// How many instances.
        instances: u64,
    },
    /// The placed copies already exceed `MaxImbalance`, so balance limits placement.
    Imbalance {
        /// Copies per AZ, in `AvailabilityZones` order.
        copies_per_az: Vec<u64>,
        /// `MaxImbalance`.
        max_imbalance: u32,
        /// `max(0, imbalance − MaxImbalance)`.
        excess: u64,
    },
    /// Room or launch options were left open: this planner stopped before placing the copies
    /// (a time or node limit, or a heuristic); a better plan may place them.
    NotPlacedByPlanner {
        /// Instances of the final fleet with room for a copy.
        instances_with_room: u64,
        /// (pool type, AZ) pairs where a launch could still take a copy.
        open_launches: u64,
    },
}
