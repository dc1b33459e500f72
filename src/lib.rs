#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]
// Every type a public signature mentions is exported (from the root or a public module):
// a type users get but cannot name is a hole in the API.
#![warn(unnameable_types)]

mod canonical;
mod catalogue;
mod control;
mod engines;
mod error;
mod execute;
mod explain;
mod fleet;
mod index;
#[cfg(feature = "json")]
mod json;
pub mod metrics;
mod model;
mod plan;
mod problem;
mod raw;
mod render;
mod report;
#[cfg(feature = "sagemaker")]
pub mod sagemaker;
#[cfg(feature = "schema")]
pub mod schema;
pub mod simulate;
pub mod sizing;
mod text;
mod verify;
mod violation;

pub use catalogue::builtin_instance_types;
pub use control::{observe, CapacityLedger, CapacityRecord, Execution, LaunchFailure, LaunchOutcome, Observed};
pub use engines::consolidate::{
    consolidate, verify_consolidation, ConsolidationPlan, ConsolidationStep, Consolidator, Move,
};
pub use engines::contract::{Engine, EngineOutput};
pub use engines::exact::backend;
pub use engines::exact::{plan_exact, ExactPlanner};
pub use engines::greedy::{plan_greedy, GreedyPlanner};
pub use engines::limits::{Limits, Phase, Stats};
pub use engines::rebalance::{
    best_reachable, rebalance, rebalance_table, verify_rebalance, BestReachable, Launch, RebalancePlan, RebalanceStep,
    Rebalancer,
};
pub use error::{Issue, IssueKind, ValidationError, Warning, WarningKind};
pub use execute::{execute_consolidation, execute_plan, execute_rebalance, StepExecution, StepFailure, StepOutcome};
pub use explain::{
    explain, explain_all, infeasibility, Explanation, Ineligibility, Infeasibility, InstanceExplanation,
    InstanceVerdict, LaunchExplanation, LaunchVerdict, Resource, UnplacedCause,
};
pub use fleet::{objective, FinalFleet, FinalInstance};
pub use index::{AzIndex, ComponentIndex, TypeIndex};
#[cfg(feature = "json")]
pub use json::{scenario_from_json, ReadOptions};
pub use model::{
    AvailabilityZoneBalance, CapacityEntry, CapacityEvent, CapacityEventKind, ComponentSpecification,
    ComputeResourceRequirements, Endpoint, EnforcementMode, Fleet, FleetCopy, FleetInstance, InferenceComponent,
    InstancePool, InstanceState, InstanceTypeSpec, ManagedInstanceScaling, PlacementStrategy, RuntimeConfig,
    ScaleInPolicySpec, ScaleInStrategy, ScalingStatus, Scenario, ScenarioBuilder, SchedulingConfig,
};
pub use plan::{Action, CostUnit, Objective, ObjectiveKey, Omitted, Plan, SolverKind, Status, StopReason, Unplaced};
pub use problem::{
    CapacityBlock, Component, ExistingInstance, InstanceTypeInfo, LaunchLimit, Problem, Requirement, Resources,
    ScalingLimits, DEFAULT_CAPACITY_ERROR_TTL_SECONDS, MAX_AVAILABILITY_ZONES, MAX_CAPACITY_ENTRIES,
    MAX_CAPACITY_ERROR_TTL_SECONDS, MAX_CAPACITY_EVENTS, MAX_COMPONENTS, MAX_COPIES_PER_COMPONENT,
    MAX_FLEET_COPY_ENTRIES, MAX_FLEET_INSTANCES, MAX_INSTANCES, MAX_INSTANCE_POOLS, MAX_INSTANCE_TYPES,
    MAX_PLANNED_INSTANCES, MAX_SPECIFICATIONS, MAX_TIME_SECONDS, MAX_TOTAL_COPIES,
};
pub use render::{consolidation_table, objective_line, plan_table, violations_table, warnings_text};
pub use report::{ComponentReliability, ReliabilityReport, ReliabilityWarning, TypeComposition};
pub use verify::verify;
pub use violation::{Violation, ViolationKind};

/// Items the crate's own tests, examples, benches, fuzz targets and command line use, which are
/// not part of the supported API: internal scores, checkers and text helpers. They may change
/// without notice.
#[doc(hidden)]
pub mod __internal {
    pub use crate::engines::consolidate::{consolidation_score, spread_offender_total, ConsolidationScore};
    pub use crate::engines::exact::{balance_floor_at, lower_balance_excess, packing_bound};
    pub use crate::engines::rebalance::{
        change_text, reachable_problem, rebalance_score, summarize, RebalanceScore, RebalanceSummary, StepSummary,
    };
    pub use crate::explain::{causes, unplaced};
    pub use crate::fleet::objective_of_actions;
    pub use crate::render::{escape_xml, validation_text, warnings_summary};
    pub use crate::text::escape_text;
    pub use crate::verify::{check_fleet, spread_violations};
}
