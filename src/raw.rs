//! The scenario as read from JSON, before validation: numbers as `f64` and closed sets as
//! strings, so that validation can name a bad value exactly as it was given
//! (`RuntimeConfig.CopyCount: 2.5 ...`, `PlacementStrategy: "PACK" is not SPREAD or BINPACK`).
//! [`crate::Problem::new`] validates a typed [`crate::Scenario`] by turning it into this form
//! first, so both paths share one validator and one set of messages; a valid raw scenario turns
//! into a typed one without loss ([`Scenario::to_typed`]).

#![allow(missing_docs)]

/// A whole planning scenario: the endpoint, its components, capacity and the running fleet.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Scenario {
    /// The endpoint's availability zones (its subnets): the balance domains.
    pub(crate) availability_zones: Vec<String>,
    /// Additions to or overrides of the built-in instance type catalogue.
    pub(crate) instance_types: Vec<InstanceTypeSpec>,
    /// Launch limits for new instances per (type, AZ).
    pub(crate) capacity: Vec<CapacityEntry>,
    /// The endpoint and its instance pools.
    pub(crate) endpoint: Endpoint,
    /// The inference components (models) hosted on the endpoint.
    pub(crate) inference_components: Vec<InferenceComponent>,
    /// What runs now.
    pub(crate) fleet: Fleet,
    /// The caller's clock, in seconds (any epoch), when this scenario is planned. Required when
    /// `CapacityEvents` is given; the library never reads a clock itself. Contract §6.
    pub(crate) now: Option<f64>,
    /// How long a capacity error blocks its (type, AZ), in seconds: 0–86400, default 180.
    pub(crate) capacity_error_ttl_seconds: Option<f64>,
    /// What the caller learned from earlier launches (contract §6): per (type, AZ) the latest
    /// event decides whether launches there are blocked for this plan.
    pub(crate) capacity_events: Vec<CapacityEvent>,
}

/// One observed launch outcome for a (type, AZ), on the caller's clock (contract §6).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CapacityEvent {
    /// Instance type.
    pub(crate) instance_type: String,
    /// Availability zone.
    pub(crate) availability_zone: String,
    /// `InsufficientCapacity`, `ProvisioningTimeout` or `Launched`.
    pub(crate) event: String,
    /// When it happened, in seconds on the same clock as `Now`.
    pub(crate) time: f64,
}

/// One instance type's shape.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct InstanceTypeSpec {
    /// Name, e.g. `ml.g6.48xlarge`.
    pub(crate) instance_type: String,
    /// Number of accelerator devices (GPUs, Inferentia chips).
    pub(crate) accelerator_count: f64,
    /// Memory per accelerator in GiB (informational).
    pub(crate) accelerator_memory_gib: f64,
    /// Virtual CPUs.
    pub(crate) v_cpu_count: f64,
    /// Host memory in MiB.
    pub(crate) memory_in_mb: f64,
    /// On-demand price per hour; optional.
    pub(crate) hourly_price: Option<f64>,
}

/// Launch limits for one (instance type, AZ).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CapacityEntry {
    /// Instance type.
    pub(crate) instance_type: String,
    /// Availability zone.
    pub(crate) availability_zone: String,
    /// Further on-demand instances obtainable now; `None` = unlimited.
    pub(crate) available: Option<f64>,
    /// Unused capacity-reservation slots.
    pub(crate) reserved: f64,
}

/// The endpoint (one production variant) with its instance pools and scaling settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Endpoint {
    /// Endpoint name.
    pub(crate) endpoint_name: String,
    /// Variant name; names the implicit component of a single-model endpoint.
    pub(crate) variant_name: String,
    /// Model of a single-model endpoint (pools may override it).
    pub(crate) model_name: Option<String>,
    /// A single instance type: shorthand for a one-entry pool of priority 1.
    pub(crate) instance_type: Option<String>,
    /// Up to five instance types by priority.
    pub(crate) instance_pools: Vec<InstancePool>,
    /// Instance count of a single-model or asynchronous endpoint (alias `InitialInstanceCount`).
    pub(crate) desired_instance_count: Option<f64>,
    /// Managed instance scaling.
    pub(crate) managed_instance_scaling: Option<ManagedInstanceScaling>,
}

/// One entry of the endpoint's instance pool list.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct InstancePool {
    /// Instance type.
    pub(crate) instance_type: String,
    /// 1 = most preferred … 5 = last fallback.
    pub(crate) priority: f64,
    /// The model build that runs on this type.
    pub(crate) model_name_override: Option<String>,
}

/// Managed instance scaling settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ManagedInstanceScaling {
    /// `ENABLED` or `DISABLED` (informational).
    pub(crate) status: Option<String>,
    /// Minimum instance count (default 0).
    pub(crate) min_instance_count: Option<f64>,
    /// Maximum instance count (default unlimited).
    pub(crate) max_instance_count: Option<f64>,
    /// Scale-in policy.
    pub(crate) scale_in_policy: Option<ScaleInPolicySpec>,
}

/// Scale-in policy.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ScaleInPolicySpec {
    /// `IDLE_RELEASE` (default) or `CONSOLIDATION`.
    pub(crate) strategy: Option<String>,
    /// Minutes between scale-in steps (5–1440, default 20).
    pub(crate) cooldown_in_minutes: Option<f64>,
    /// Instances released per step (1–100, default 1).
    pub(crate) maximum_step_size: Option<f64>,
}

/// An inference component: one model with a desired copy count.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct InferenceComponent {
    /// Unique name.
    pub(crate) inference_component_name: String,
    /// One specification that applies to every pool type.
    pub(crate) specification: Option<ComponentSpecification>,
    /// Per-type specifications (1–5); the component runs only on these types.
    pub(crate) specifications: Option<Vec<ComponentSpecification>>,
    /// Desired copies.
    pub(crate) runtime_config: RuntimeConfig,
}

/// Requirements and scheduling of a component (for one type, or for all).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ComponentSpecification {
    /// The type this specification is for (required inside `Specifications`).
    pub(crate) instance_type: Option<String>,
    /// Model build used on this type.
    pub(crate) model_name: Option<String>,
    /// Resources one copy needs.
    pub(crate) compute_resource_requirements: ComputeResourceRequirements,
    /// Placement strategy and AZ balance.
    pub(crate) scheduling_config: Option<SchedulingConfig>,
}

/// Resources one copy needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ComputeResourceRequirements {
    /// Whole accelerator devices (default 0).
    pub(crate) number_of_accelerator_devices_required: Option<f64>,
    /// CPU cores, ≥ 0.25 when given (default 0).
    pub(crate) number_of_cpu_cores_required: Option<f64>,
    /// Host memory in MiB, ≥ 128.
    pub(crate) min_memory_required_in_mb: f64,
}

/// Where copies go.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SchedulingConfig {
    /// `SPREAD` (default) or `BINPACK`.
    pub(crate) placement_strategy: Option<String>,
    /// Balance between AZs.
    pub(crate) availability_zone_balance: Option<AvailabilityZoneBalance>,
}

/// Balance between AZs.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct AvailabilityZoneBalance {
    /// Only `PERMISSIVE` is defined.
    pub(crate) enforcement_mode: Option<String>,
    /// Largest allowed difference between the AZ with most and the AZ with fewest copies.
    pub(crate) max_imbalance: Option<f64>,
}

/// Runtime configuration of a component.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RuntimeConfig {
    /// Desired number of copies.
    pub(crate) copy_count: f64,
}

/// The running fleet.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Fleet {
    /// Running instances.
    pub(crate) instances: Vec<FleetInstance>,
    /// Copies running on them.
    pub(crate) copies: Vec<FleetCopy>,
}

/// A running instance.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FleetInstance {
    /// Unique id.
    pub(crate) instance_id: String,
    /// Instance type (may be outside the pool: priority 6).
    pub(crate) instance_type: String,
    /// Availability zone.
    pub(crate) availability_zone: String,
    /// Runs in a capacity reservation (costs nothing).
    pub(crate) reserved: bool,
    /// `InService` (default) or `Draining` (cordoned: receives no new copy; `consolidate` and
    /// `rebalance` empty and release it first). docs/contract.md §6.
    pub(crate) state: Option<String>,
}

/// Copies of one component on one running instance.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FleetCopy {
    /// Component name.
    pub(crate) inference_component_name: String,
    /// Instance id.
    pub(crate) instance_id: String,
    /// Number of copies (default 1).
    pub(crate) copy_count: f64,
}

