//! Plans: the actions that take the fleet to its final state, and the objective they reach.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::Warning;

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
pub enum SolverKind {
    /// The greedy fast path.
    #[serde(rename = "greedy")]
    Greedy,
    /// The exact integer-programming planner.
    #[serde(rename = "exact")]
    Exact,
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

/// Why an engine stopped: the one stop vocabulary of every engine (see [`crate::Limits`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[non_exhaustive]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum StopReason {
    /// The engine ran to completion (greedy, or an exact search that finished).
    Completed,
    /// The deadline was hit.
    TimeLimit,
    /// The node or iteration limit was hit.
    NodeLimit,
    /// The caller's cancellation check asked to stop.
    Cancelled,
    /// The problem is larger than the exact planner's size limits; the greedy plan is returned.
    TooLarge,
    /// The solver failed; the greedy plan is returned. Carries the solver's message.
    SolverError(String),
    /// An internal consistency check failed (a bug, never the input's fault): e.g. the exact
    /// plan did not verify, or the greedy plan beat a claimed optimum. The greedy plan is
    /// returned. Carries what failed.
    InternalError(String),
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::Completed => write!(f, "completed"),
            StopReason::TimeLimit => write!(f, "time limit reached"),
            StopReason::NodeLimit => write!(f, "node limit reached"),
            StopReason::Cancelled => write!(f, "cancelled"),
            StopReason::TooLarge => write!(f, "too large for the exact planner (greedy plan returned)"),
            StopReason::SolverError(message) => write!(f, "solver error (greedy plan returned): {message}"),
            StopReason::InternalError(message) => write!(f, "internal check failed (greedy plan returned): {message}"),
        }
    }
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
    /// L4: hourly cost in millionths (dollars, or instances when a price is missing).
    #[serde(rename = "Cost", with = "micros")]
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub cost_micros: i64,
}

mod micros {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &i64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(*value as f64 / 1e6)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
        let value = f64::deserialize(deserializer)?;
        Ok((value * 1e6).round() as i64)
    }
}

impl Objective {
    /// Instances of priority `p` (1–6).
    pub fn instances_of_priority(&self, priority: u8) -> u32 {
        self.instances_by_priority.get(&priority).copied().unwrap_or(0)
    }

    /// The cost in dollars (or instance units).
    pub fn cost(&self) -> f64 {
        self.cost_micros as f64 / 1e6
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
    pub cost_micros: i64,
}

/// Copies of a component that could not be placed, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct Unplaced {
    /// Component.
    pub inference_component_name: String,
    /// How many copies are missing.
    pub copy_count: u64,
    /// Reasons a person can act on.
    pub reasons: Vec<String>,
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
    /// Launches, then placements, then removals, then terminations.
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
}

fn completed() -> StopReason {
    StopReason::Completed
}

impl Plan {
    /// Number of `LaunchInstance` actions.
    pub fn launches(&self) -> usize {
        self.actions.iter().filter(|a| matches!(a, Action::LaunchInstance { .. })).count()
    }

    /// The plan as pretty JSON (deterministic).
    #[cfg(feature = "json")]
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}
