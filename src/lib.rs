//! # fleetplan
//!
//! Plans where ML model replicas run: which instance types to launch in which availability
//! zones, and which copies of which inference components go on which instance. The input is
//! shaped like the Amazon SageMaker AI API (instance pools with priority fallback, inference
//! components with `SchedulingConfig`), the objective is the lexicographic one of the contract
//! (placed copies, then AZ balance, then fallback use, then cost).
//!
//! - [`Problem`] validates a [`Scenario`] (or JSON via [`Problem::from_json`]) into an indexed
//!   problem, reporting every input problem at once.
//! - [`plan_greedy`] is the fast path; [`ExactPlanner`] solves the integer program with
//!   explicit limits and says whether it proved optimality ([`Status`], [`StopReason`]).
//! - [`verify()`] independently checks any plan; every plan the library returns passes it.
//!
//! The library does no I/O: no files, no environment, no threads; the only clock use is an
//! explicit time limit you set on the exact planner.
//!
//! ```
//! use fleetplan::{Problem, plan_greedy, verify, ExactPlanner, Status};
//!
//! let json = r#"{
//!   "AvailabilityZones": ["us-east-1a", "us-east-1b"],
//!   "Endpoint": {"EndpointName": "chat", "VariantName": "AllTraffic",
//!                "InstancePools": [{"InstanceType": "ml.g6.12xlarge", "Priority": 1}]},
//!   "InferenceComponents": [{"InferenceComponentName": "llm",
//!     "Specification": {"ComputeResourceRequirements": {
//!        "NumberOfAcceleratorDevicesRequired": 2, "MinMemoryRequiredInMb": 16384},
//!        "SchedulingConfig": {"AvailabilityZoneBalance": {"MaxImbalance": 1}}},
//!     "RuntimeConfig": {"CopyCount": 4}}]
//! }"#;
//! let problem = Problem::from_json(json).unwrap();
//! let plan = plan_greedy(&problem);
//! assert!(verify(&problem, &plan).is_empty());
//! assert_eq!(plan.objective.placed_copies, 4);
//!
//! let exact = ExactPlanner::new().plan(&problem);
//! assert!(verify(&problem, &exact).is_empty());
//! assert!(!exact.objective.key().gt(&plan.objective.key()));
//! assert_eq!(exact.status, Status::Optimal);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod catalogue;
pub mod engines;
pub mod error;
pub mod explain;
pub mod fleet;
#[cfg(feature = "json")]
pub mod json;
pub mod metrics;
pub mod model;
pub mod plan;
pub mod problem;
pub mod render;
pub mod report;
pub mod verify;

pub use engines::consolidate::{
    consolidate, verify_consolidation, ConsolidationPlan, ConsolidationStep, Consolidator, Move,
};
pub use engines::exact::ExactPlanner;
pub use engines::greedy::plan_greedy;
pub use engines::rebalance::{rebalance, verify_rebalance, Launch, RebalancePlan, RebalanceStep, Rebalancer};
pub use error::{Issue, ValidationError, Warning, WarningKind};
pub use explain::Explanation;
pub use fleet::{objective, FinalFleet, FinalInstance};
pub use metrics::MetricsError;
pub use model::*;
pub use plan::{Action, Objective, Plan, SolverKind, Status, StopReason, Unplaced};
pub use problem::{Component, PlacementStrategy, Problem, Requirement, Resources};
pub use report::ReliabilityReport;
pub use verify::{verify, Violation, ViolationKind};
