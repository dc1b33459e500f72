//! Domain types: what a user describes, shaped like the Amazon SageMaker AI API.
//!
//! These types mirror the scenario JSON of the contract (PascalCase keys). They are plain data
//! with no invariants; [`crate::Problem::new`] validates them into an indexed problem. Users
//! who build scenarios in code can use [`ScenarioBuilder`] instead of writing the structs out.

use serde::{Deserialize, Serialize};

/// A whole planning scenario: the endpoint, its components, capacity and the running fleet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct Scenario {
    /// The endpoint's availability zones (its subnets): the balance domains.
    pub availability_zones: Vec<String>,
    /// Additions to or overrides of the built-in instance type catalogue.
    #[serde(default)]
    pub instance_types: Vec<InstanceTypeSpec>,
    /// Launch limits for new instances per (type, AZ).
    #[serde(default)]
    pub capacity: Vec<CapacityEntry>,
    /// The endpoint and its instance pools.
    pub endpoint: Endpoint,
    /// The inference components (models) hosted on the endpoint.
    #[serde(default)]
    pub inference_components: Vec<InferenceComponent>,
    /// What runs now.
    #[serde(default)]
    pub fleet: Fleet,
    /// The caller's clock, in seconds (any epoch), when this scenario is planned. Required when
    /// `CapacityEvents` is given; the library never reads a clock itself. Contract §6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<f64>,
    /// How long a capacity error blocks its (type, AZ), in seconds: 0–86400, default 180.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_error_ttl_seconds: Option<f64>,
    /// What the caller learned from earlier launches (contract §6): per (type, AZ) the latest
    /// event decides whether launches there are blocked for this plan.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capacity_events: Vec<CapacityEvent>,
}

/// One observed launch outcome for a (type, AZ), on the caller's clock (contract §6).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CapacityEvent {
    /// Instance type.
    pub instance_type: String,
    /// Availability zone.
    pub availability_zone: String,
    /// `InsufficientCapacity`, `ProvisioningTimeout` or `Launched`.
    pub event: String,
    /// When it happened, in seconds on the same clock as `Now`.
    pub time: f64,
}

/// One instance type's shape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct InstanceTypeSpec {
    /// Name, e.g. `ml.g6.48xlarge`.
    pub instance_type: String,
    /// Number of accelerator devices (GPUs, Inferentia chips).
    pub accelerator_count: f64,
    /// Memory per accelerator in GiB (informational).
    // PascalCase would derive `AcceleratorMemoryGib`; the contract's key is `…GiB`.
    #[serde(default, rename = "AcceleratorMemoryGiB")]
    pub accelerator_memory_gib: f64,
    /// Virtual CPUs.
    pub v_cpu_count: f64,
    /// Host memory in MiB.
    pub memory_in_mb: f64,
    /// On-demand price per hour; optional.
    #[serde(default)]
    pub hourly_price: Option<f64>,
}

/// Launch limits for one (instance type, AZ).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct CapacityEntry {
    /// Instance type.
    pub instance_type: String,
    /// Availability zone.
    pub availability_zone: String,
    /// Further on-demand instances obtainable now; `None` = unlimited.
    #[serde(default)]
    pub available: Option<f64>,
    /// Unused capacity-reservation slots.
    #[serde(default)]
    pub reserved: f64,
}

/// The endpoint (one production variant) with its instance pools and scaling settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct Endpoint {
    /// Endpoint name.
    #[serde(default)]
    pub endpoint_name: String,
    /// Variant name; names the implicit component of a single-model endpoint.
    #[serde(default)]
    pub variant_name: String,
    /// Model of a single-model endpoint (pools may override it).
    #[serde(default)]
    pub model_name: Option<String>,
    /// A single instance type: shorthand for a one-entry pool of priority 1.
    #[serde(default)]
    pub instance_type: Option<String>,
    /// Up to five instance types by priority.
    #[serde(default)]
    pub instance_pools: Vec<InstancePool>,
    /// Instance count of a single-model or asynchronous endpoint (alias `InitialInstanceCount`).
    #[serde(default, alias = "InitialInstanceCount")]
    pub desired_instance_count: Option<f64>,
    /// Managed instance scaling.
    #[serde(default)]
    pub managed_instance_scaling: Option<ManagedInstanceScaling>,
}

/// One entry of the endpoint's instance pool list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct InstancePool {
    /// Instance type.
    pub instance_type: String,
    /// 1 = most preferred … 5 = last fallback.
    pub priority: f64,
    /// The model build that runs on this type.
    #[serde(default)]
    pub model_name_override: Option<String>,
}

/// Managed instance scaling settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct ManagedInstanceScaling {
    /// `ENABLED` or `DISABLED` (informational).
    #[serde(default)]
    pub status: Option<String>,
    /// Minimum instance count (default 0).
    #[serde(default)]
    pub min_instance_count: Option<f64>,
    /// Maximum instance count (default unlimited).
    #[serde(default)]
    pub max_instance_count: Option<f64>,
    /// Scale-in policy.
    #[serde(default)]
    pub scale_in_policy: Option<ScaleInPolicySpec>,
}

/// Scale-in policy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct ScaleInPolicySpec {
    /// `IDLE_RELEASE` (default) or `CONSOLIDATION`.
    #[serde(default)]
    pub strategy: Option<String>,
    /// Minutes between scale-in steps (5–1440, default 20).
    #[serde(default)]
    pub cooldown_in_minutes: Option<f64>,
    /// Instances released per step (1–100, default 1).
    #[serde(default)]
    pub maximum_step_size: Option<f64>,
}

/// An inference component: one model with a desired copy count.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct InferenceComponent {
    /// Unique name.
    pub inference_component_name: String,
    /// One specification that applies to every pool type.
    #[serde(default)]
    pub specification: Option<ComponentSpecification>,
    /// Per-type specifications (1–5); the component runs only on these types.
    #[serde(default)]
    pub specifications: Option<Vec<ComponentSpecification>>,
    /// Desired copies.
    #[serde(default)]
    pub runtime_config: RuntimeConfig,
}

/// Requirements and scheduling of a component (for one type, or for all).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct ComponentSpecification {
    /// The type this specification is for (required inside `Specifications`).
    #[serde(default)]
    pub instance_type: Option<String>,
    /// Model build used on this type.
    #[serde(default)]
    pub model_name: Option<String>,
    /// Resources one copy needs.
    pub compute_resource_requirements: ComputeResourceRequirements,
    /// Placement strategy and AZ balance.
    #[serde(default)]
    pub scheduling_config: Option<SchedulingConfig>,
}

/// Resources one copy needs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct ComputeResourceRequirements {
    /// Whole accelerator devices (default 0).
    #[serde(default)]
    pub number_of_accelerator_devices_required: Option<f64>,
    /// CPU cores, ≥ 0.25 when given (default 0).
    #[serde(default)]
    pub number_of_cpu_cores_required: Option<f64>,
    /// Host memory in MiB, ≥ 128.
    pub min_memory_required_in_mb: f64,
}

/// Where copies go.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct SchedulingConfig {
    /// `SPREAD` (default) or `BINPACK`.
    #[serde(default)]
    pub placement_strategy: Option<String>,
    /// Balance between AZs.
    #[serde(default)]
    pub availability_zone_balance: Option<AvailabilityZoneBalance>,
}

/// Balance between AZs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct AvailabilityZoneBalance {
    /// Only `PERMISSIVE` is defined.
    #[serde(default)]
    pub enforcement_mode: Option<String>,
    /// Largest allowed difference between the AZ with most and the AZ with fewest copies.
    #[serde(default)]
    pub max_imbalance: Option<f64>,
}

/// Runtime configuration of a component.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct RuntimeConfig {
    /// Desired number of copies.
    #[serde(default)]
    pub copy_count: f64,
}

/// The running fleet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct Fleet {
    /// Running instances.
    #[serde(default)]
    pub instances: Vec<FleetInstance>,
    /// Copies running on them.
    #[serde(default)]
    pub copies: Vec<FleetCopy>,
}

/// A running instance.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct FleetInstance {
    /// Unique id.
    pub instance_id: String,
    /// Instance type (may be outside the pool: priority 6).
    pub instance_type: String,
    /// Availability zone.
    pub availability_zone: String,
    /// Runs in a capacity reservation (costs nothing).
    #[serde(default)]
    pub reserved: bool,
    /// `InService` (default) or `Draining` (cordoned: receives no new copy; `consolidate` and
    /// `rebalance` empty and release it first). docs/contract.md §6.
    #[serde(default)]
    pub state: Option<String>,
}

/// Copies of one component on one running instance.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct FleetCopy {
    /// Component name.
    pub inference_component_name: String,
    /// Instance id.
    pub instance_id: String,
    /// Number of copies (default 1).
    #[serde(default = "one")]
    pub copy_count: f64,
}

fn one() -> f64 {
    1.0
}

/// Builds a [`Scenario`] in code, for users who do not start from JSON.
///
/// ```
/// use fleetplan::{ScenarioBuilder, Problem, plan_greedy};
/// let scenario = ScenarioBuilder::new(["us-east-1a", "us-east-1b"])
///     .pool("ml.g6.12xlarge", 1)
///     .component("chat", 4, 1, 4.0, 16_384)
///     .max_imbalance("chat", 1)
///     .build();
/// let problem = Problem::new(&scenario).unwrap();
/// let plan = plan_greedy(&problem);
/// assert_eq!(plan.objective.placed_copies, 4);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ScenarioBuilder {
    scenario: Scenario,
}

impl ScenarioBuilder {
    /// Starts a scenario over the given AZs.
    pub fn new<S: Into<String>>(azs: impl IntoIterator<Item = S>) -> Self {
        let mut scenario =
            Scenario { availability_zones: azs.into_iter().map(Into::into).collect(), ..Default::default() };
        scenario.endpoint.endpoint_name = "endpoint".into();
        scenario.endpoint.variant_name = "AllTraffic".into();
        ScenarioBuilder { scenario }
    }

    /// Adds or overrides an instance type in the catalogue.
    pub fn instance_type(mut self, spec: InstanceTypeSpec) -> Self {
        self.scenario.instance_types.push(spec);
        self
    }

    /// Adds a pool entry.
    pub fn pool(mut self, instance_type: &str, priority: u8) -> Self {
        self.scenario.endpoint.instance_pools.push(InstancePool {
            instance_type: instance_type.into(),
            priority: f64::from(priority),
            model_name_override: None,
        });
        self
    }

    /// Sets the launch limit of a (type, AZ).
    pub fn capacity(mut self, instance_type: &str, az: &str, available: Option<u32>, reserved: u32) -> Self {
        self.scenario.capacity.push(CapacityEntry {
            instance_type: instance_type.into(),
            availability_zone: az.into(),
            available: available.map(f64::from),
            reserved: f64::from(reserved),
        });
        self
    }

    /// Sets Min/MaxInstanceCount.
    pub fn instance_limits(mut self, min: u32, max: Option<u32>) -> Self {
        let scaling = self.scenario.endpoint.managed_instance_scaling.get_or_insert_with(Default::default);
        scaling.min_instance_count = Some(f64::from(min));
        scaling.max_instance_count = max.map(f64::from);
        self
    }

    /// Adds a component with one specification for every pool type (SPREAD, no AZ balance).
    pub fn component(mut self, name: &str, copies: u32, accelerators: u32, cpu_cores: f64, memory_mib: u32) -> Self {
        self.scenario.inference_components.push(InferenceComponent {
            inference_component_name: name.into(),
            specification: Some(ComponentSpecification {
                instance_type: None,
                model_name: None,
                compute_resource_requirements: ComputeResourceRequirements {
                    number_of_accelerator_devices_required: Some(f64::from(accelerators)),
                    // 0 means "no CPU requirement"; anything else (NaN, negative) is validated
                    // exactly as JSON input is, never dropped.
                    number_of_cpu_cores_required: (cpu_cores != 0.0).then_some(cpu_cores),
                    min_memory_required_in_mb: f64::from(memory_mib),
                },
                scheduling_config: None,
            }),
            specifications: None,
            runtime_config: RuntimeConfig { copy_count: f64::from(copies) },
        });
        self
    }

    fn scheduling(&mut self, name: &str) -> Option<&mut SchedulingConfig> {
        let component = self.scenario.inference_components.iter_mut().find(|c| c.inference_component_name == name)?;
        let spec = component.specification.as_mut()?;
        Some(spec.scheduling_config.get_or_insert_with(Default::default))
    }

    /// Sets a component's `MaxImbalance` (PERMISSIVE). Unknown names are ignored.
    pub fn max_imbalance(mut self, name: &str, max_imbalance: u32) -> Self {
        if let Some(config) = self.scheduling(name) {
            config.availability_zone_balance = Some(AvailabilityZoneBalance {
                enforcement_mode: Some("PERMISSIVE".into()),
                max_imbalance: Some(f64::from(max_imbalance)),
            });
        }
        self
    }

    /// Sets a component's placement strategy (`SPREAD` or `BINPACK`). Unknown names are ignored.
    pub fn strategy(mut self, name: &str, strategy: &str) -> Self {
        if let Some(config) = self.scheduling(name) {
            config.placement_strategy = Some(strategy.into());
        }
        self
    }

    /// Adds a running instance.
    pub fn fleet_instance(mut self, id: &str, instance_type: &str, az: &str, reserved: bool) -> Self {
        self.scenario.fleet.instances.push(FleetInstance {
            instance_id: id.into(),
            instance_type: instance_type.into(),
            availability_zone: az.into(),
            reserved,
            state: None,
        });
        self
    }

    /// Marks a running instance as draining (docs/contract.md §6: cordoned, to be emptied and released).
    pub fn draining(mut self, id: &str) -> Self {
        if let Some(instance) = self.scenario.fleet.instances.iter_mut().find(|instance| instance.instance_id == id) {
            instance.state = Some("Draining".into());
        }
        self
    }

    /// Adds running copies of a component on an instance.
    pub fn fleet_copies(mut self, component: &str, instance_id: &str, copies: u32) -> Self {
        self.scenario.fleet.copies.push(FleetCopy {
            inference_component_name: component.into(),
            instance_id: instance_id.into(),
            copy_count: f64::from(copies),
        });
        self
    }

    /// The scenario.
    pub fn build(self) -> Scenario {
        self.scenario
    }
}
