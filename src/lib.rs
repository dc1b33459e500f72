#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod catalogue;
pub mod control;
pub mod engines;
pub mod error;
pub mod execute;
pub mod explain;
pub mod fleet;
mod index;
#[cfg(feature = "json")]
pub mod json;
pub mod metrics;
pub mod model;
pub mod plan;
pub mod problem;
mod raw;
pub mod render;
pub mod report;
#[cfg(feature = "sagemaker")]
pub mod sagemaker;
#[cfg(feature = "schema")]
pub mod schema;
pub mod simulate;
pub mod sizing;
mod text;
pub mod verify;
mod violation;

pub use control::{observe, CapacityLedger, CapacityRecord, Execution, LaunchFailure, LaunchOutcome, Observed};
pub use engines::consolidate::{
    consolidate, verify_consolidation, ConsolidationPlan, ConsolidationStep, Consolidator, Move,
};
pub use engines::exact::ExactPlanner;
pub use engines::greedy::{plan_greedy, GreedyPlanner};
pub use engines::limits::{Limits, Phase, Stats};
pub use engines::rebalance::{rebalance, verify_rebalance, Launch, RebalancePlan, RebalanceStep, Rebalancer};
pub use error::{Issue, IssueKind, ValidationError, Warning, WarningKind};
pub use execute::{execute_consolidation, execute_plan, execute_rebalance, StepExecution, StepFailure, StepOutcome};
pub use explain::{Explanation, Infeasibility, UnplacedCause};
pub use fleet::{objective, FinalFleet, FinalInstance};
pub use index::{AzIndex, ComponentIndex, TypeIndex};
#[cfg(feature = "json")]
pub use json::ReadOptions;
pub use metrics::MetricsError;
pub use model::{
    AvailabilityZoneBalance, CapacityEntry, CapacityEvent, ComponentSpecification, ComputeResourceRequirements,
    Endpoint, EnforcementMode, Fleet, FleetCopy, FleetInstance, InferenceComponent, InstancePool, InstanceState,
    InstanceTypeSpec, ManagedInstanceScaling, RuntimeConfig, ScaleInPolicySpec, ScaleInStrategy, ScalingStatus,
    Scenario, ScenarioBuilder, SchedulingConfig,
};
pub use plan::{Action, CostUnit, Objective, Omitted, Plan, SolverKind, Status, StopReason, Unplaced};
pub use problem::{CapacityBlock, CapacityEventKind, Component, PlacementStrategy, Problem, Requirement, Resources};
pub use report::ReliabilityReport;
pub use simulate::{Script, Simulation, SimulationSummary, Simulator};
pub use verify::{verify, Violation, ViolationKind};
// Reached by the Python binding (python/), which goes through the crate root only.
pub use metrics::{
    metric_math_utilisation, scaling_policy, ConcurrencyMetric, PutScalingPolicyRequest, TargetTracking, TypeLoad,
};
pub use sizing::{size_pool, ModelDescription, Sizing};
