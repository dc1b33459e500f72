//! Domain types: what a user describes, shaped like the Amazon SageMaker AI API.
//!
//! These types mirror the scenario JSON of the contract (PascalCase keys), typed: whole numbers
//! are integers and closed sets are enums (their JSON spellings unchanged). What types cannot
//! express (ranges, names that must refer to something, uniqueness) is checked by
//! [`crate::Problem::new`], which validates a scenario into an indexed problem with the same
//! rules and messages as JSON input. Users who build scenarios in code can use
//! [`ScenarioBuilder`] instead of writing the structs out.

use serde::{Deserialize, Serialize};

use crate::error::{Issue, IssueKind, ValidationError};

/// Placement strategy within an AZ (`SchedulingConfig.PlacementStrategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum PlacementStrategy {
    /// `SPREAD`: spread copies over instances (the default).
    Spread,
    /// `BINPACK`: pack copies onto few instances.
    Binpack,
}

/// Scale-in strategy (`ScaleInPolicy.Strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum ScaleInStrategy {
    /// `IDLE_RELEASE`: release instances once idle (the default).
    IdleRelease,
    /// `CONSOLIDATION`: consolidate copies onto fewer instances, then release.
    Consolidation,
}

/// `ManagedInstanceScaling.Status` (informational).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ScalingStatus {
    /// `ENABLED`.
    Enabled,
    /// `DISABLED`.
    Disabled,
}

/// `AvailabilityZoneBalance.EnforcementMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum EnforcementMode {
    /// `PERMISSIVE`: the only mode defined.
    Permissive,
}

/// State of a running instance (`Fleet.Instances[].State`, contract §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub enum InstanceState {
    /// Serving (the default).
    InService,
    /// Cordoned: receives no new copy; `consolidate` and `rebalance` empty and release it first.
    Draining,
}

/// What happened when the caller tried to launch an instance (contract §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub enum CapacityEventKind {
    /// The cloud had no capacity for the type in the AZ.
    InsufficientCapacity,
    /// The launch did not come up in time.
    ProvisioningTimeout,
    /// A launch succeeded: capacity is back.
    Launched,
}

/// JSON spellings of a closed set, for the raw JSON layer (which keeps strings so that messages
/// can name a bad value) and for messages.
macro_rules! spelled {
    ($type:ty { $($variant:ident => $text:literal),+ $(,)? }) => {
        impl $type {
            /// Every value, in the order the contract lists them.
            pub const ALL: &'static [$type] = &[$(<$type>::$variant),+];

            /// The JSON spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(<$type>::$variant => $text),+
                }
            }

            /// Parses the JSON spelling (exact case).
            pub fn parse(text: &str) -> Option<$type> {
                Self::ALL.iter().copied().find(|value| value.as_str() == text)
            }
        }

        impl std::fmt::Display for $type {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

spelled!(PlacementStrategy { Spread => "SPREAD", Binpack => "BINPACK" });
spelled!(ScaleInStrategy { IdleRelease => "IDLE_RELEASE", Consolidation => "CONSOLIDATION" });
spelled!(ScalingStatus { Enabled => "ENABLED", Disabled => "DISABLED" });
spelled!(EnforcementMode { Permissive => "PERMISSIVE" });
spelled!(InstanceState { InService => "InService", Draining => "Draining" });
spelled!(CapacityEventKind {
    InsufficientCapacity => "InsufficientCapacity",
    ProvisioningTimeout => "ProvisioningTimeout",
    Launched => "Launched",
});

impl CapacityEventKind {
    /// Whether the event says the (type, AZ) had no capacity (it blocks launches while live).
    pub fn is_error(self) -> bool {
        !matches!(self, CapacityEventKind::Launched)
    }
}

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
    pub now: Option<i64>,
    /// How long a capacity error blocks its (type, AZ), in seconds: 0–86400, default 180.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_error_ttl_seconds: Option<u32>,
    /// What the caller learned from earlier launches (contract §6): per (type, AZ) the latest
    /// event decides whether launches there are blocked for this plan.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capacity_events: Vec<CapacityEvent>,
}

/// One observed launch outcome for a (type, AZ), on the caller's clock (contract §6).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CapacityEvent {
    /// Instance type.
    pub instance_type: String,
    /// Availability zone.
    pub availability_zone: String,
    /// `InsufficientCapacity`, `ProvisioningTimeout` or `Launched`.
    pub event: CapacityEventKind,
    /// When it happened, in seconds on the same clock as `Now`.
    pub time: i64,
}

/// One instance type's shape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct InstanceTypeSpec {
    /// Name, e.g. `ml.g6.48xlarge`.
    pub instance_type: String,
    /// Number of accelerator devices (GPUs, Inferentia chips).
    pub accelerator_count: u32,
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
    pub available: Option<u32>,
    /// Unused capacity-reservation slots.
    #[serde(default)]
    pub reserved: u32,
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
    pub desired_instance_count: Option<u32>,
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
    pub priority: u8,
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
    pub status: Option<ScalingStatus>,
    /// Minimum instance count (default 0).
    #[serde(default)]
    pub min_instance_count: Option<u32>,
    /// Maximum instance count (default unlimited).
    #[serde(default)]
    pub max_instance_count: Option<u32>,
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
    pub strategy: Option<ScaleInStrategy>,
    /// Minutes between scale-in steps (5–1440, default 20).
    #[serde(default)]
    pub cooldown_in_minutes: Option<u32>,
    /// Instances released per step (1–100, default 1).
    #[serde(default)]
    pub maximum_step_size: Option<u32>,
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
    pub number_of_accelerator_devices_required: Option<u32>,
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
    pub placement_strategy: Option<PlacementStrategy>,
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
    pub enforcement_mode: Option<EnforcementMode>,
    /// Largest allowed difference between the AZ with most and the AZ with fewest copies.
    #[serde(default)]
    pub max_imbalance: Option<u32>,
}

/// Runtime configuration of a component.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub struct RuntimeConfig {
    /// Desired number of copies.
    #[serde(default)]
    pub copy_count: u32,
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
    pub state: Option<InstanceState>,
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
    pub copy_count: u32,
}

impl FleetInstance {
    /// Whether the instance is draining (`State: Draining`).
    pub fn is_draining(&self) -> bool {
        self.state == Some(InstanceState::Draining)
    }
}

fn one() -> u32 {
    1
}

/// Builds a [`Scenario`] in code, for users who do not start from JSON. It can express
/// everything a scenario can: catalogue entries with prices, pools, capacity, scaling and the
/// scale-in policy, components with one specification or per-type specifications, the fleet
/// (draining instances included), `Now` and capacity events; [`Self::scenario_mut`] reaches any
/// field directly.
///
/// A call that names something not added before (a misspelt component or instance id) or that
/// cannot apply (a component without a specification) is never a silent no-op: the builder
/// keeps the issue and [`Self::build`] returns every one of them. What only a whole scenario can
/// tell (ranges, cross-references) is checked by [`crate::Problem::new`].
///
/// ```
/// use fleetplan::{ScenarioBuilder, Problem, plan_greedy};
/// let scenario = ScenarioBuilder::new(["us-east-1a", "us-east-1b"])
///     .pool("ml.g6.12xlarge", 1)
///     .component("chat", 4, 1, 4.0, 16_384)
///     .max_imbalance("chat", 1)
///     .build()
///     .unwrap();
/// let problem = Problem::new(&scenario).unwrap();
/// let plan = plan_greedy(&problem);
/// assert_eq!(plan.objective.placed_copies, 4);
///
/// // A misspelt component is an error, not a dropped constraint.
/// let error = ScenarioBuilder::new(["us-east-1a"]).component("chat", 1, 1, 0.0, 1024).max_imbalance("caht", 1).build();
/// assert_eq!(error.unwrap_err().issues()[0].kind(), fleetplan::IssueKind::UnknownName);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ScenarioBuilder {
    scenario: Scenario,
    issues: Vec<Issue>,
}

impl ScenarioBuilder {
    /// Starts a scenario over the given AZs.
    pub fn new<S: Into<String>>(azs: impl IntoIterator<Item = S>) -> Self {
        let mut scenario =
            Scenario { availability_zones: azs.into_iter().map(Into::into).collect(), ..Default::default() };
        scenario.endpoint.endpoint_name = "endpoint".into();
        scenario.endpoint.variant_name = "AllTraffic".into();
        ScenarioBuilder { scenario, issues: Vec::new() }
    }

    /// The scenario so far, for any field the builder has no method for.
    pub fn scenario_mut(&mut self) -> &mut Scenario {
        &mut self.scenario
    }

    fn refuse(&mut self, method: &str, message: String) {
        self.issues.push(Issue::new(IssueKind::UnknownName, format!("ScenarioBuilder::{method}"), message));
    }

    /// Sets the endpoint and variant names.
    pub fn names(mut self, endpoint_name: &str, variant_name: &str) -> Self {
        self.scenario.endpoint.endpoint_name = endpoint_name.into();
        self.scenario.endpoint.variant_name = variant_name.into();
        self
    }

    /// Adds or overrides an instance type in the catalogue (shape and `HourlyPrice`).
    pub fn instance_type(mut self, spec: InstanceTypeSpec) -> Self {
        self.scenario.instance_types.push(spec);
        self
    }

    /// Sets the `HourlyPrice` of a type added with [`Self::instance_type`].
    pub fn price(mut self, instance_type: &str, hourly_price: f64) -> Self {
        match self.scenario.instance_types.iter_mut().find(|spec| spec.instance_type == instance_type) {
            Some(spec) => spec.hourly_price = Some(hourly_price),
            None => self.refuse("price", format!("{instance_type:?} was not added with instance_type")),
        }
        self
    }

    /// Adds a pool entry.
    pub fn pool(self, instance_type: &str, priority: u8) -> Self {
        self.pool_entry(InstancePool { instance_type: instance_type.into(), priority, model_name_override: None })
    }

    /// Adds a pool entry with every field (e.g. a `ModelNameOverride`).
    pub fn pool_entry(mut self, pool: InstancePool) -> Self {
        self.scenario.endpoint.instance_pools.push(pool);
        self
    }

    /// A single-model endpoint: its model and instance count (components make it multi-model).
    pub fn single_model(mut self, model_name: &str, desired_instance_count: u32) -> Self {
        self.scenario.endpoint.model_name = Some(model_name.into());
        self.scenario.endpoint.desired_instance_count = Some(desired_instance_count);
        self
    }

    /// Sets the launch limit of a (type, AZ).
    pub fn capacity(mut self, instance_type: &str, az: &str, available: Option<u32>, reserved: u32) -> Self {
        self.scenario.capacity.push(CapacityEntry {
            instance_type: instance_type.into(),
            availability_zone: az.into(),
            available,
            reserved,
        });
        self
    }

    /// Sets Min/MaxInstanceCount.
    pub fn instance_limits(mut self, min: u32, max: Option<u32>) -> Self {
        let scaling = self.scenario.endpoint.managed_instance_scaling.get_or_insert_with(Default::default);
        scaling.min_instance_count = Some(min);
        scaling.max_instance_count = max;
        self
    }

    /// Sets the scale-in policy: strategy, `MaximumStepSize` and `CooldownInMinutes`.
    pub fn scale_in(mut self, strategy: ScaleInStrategy, maximum_step_size: u32, cooldown_in_minutes: u32) -> Self {
        let scaling = self.scenario.endpoint.managed_instance_scaling.get_or_insert_with(Default::default);
        scaling.scale_in_policy = Some(ScaleInPolicySpec {
            strategy: Some(strategy),
            cooldown_in_minutes: Some(cooldown_in_minutes),
            maximum_step_size: Some(maximum_step_size),
        });
        self
    }

    /// Adds a component with one specification for every pool type (SPREAD, no AZ balance).
    pub fn component(self, name: &str, copies: u32, accelerators: u32, cpu_cores: f64, memory_mib: u32) -> Self {
        let requirements = ComputeResourceRequirements {
            number_of_accelerator_devices_required: Some(accelerators),
            // 0 means "no CPU requirement"; anything else (NaN, negative) is validated exactly
            // as JSON input is, never dropped.
            number_of_cpu_cores_required: (cpu_cores != 0.0).then_some(cpu_cores),
            min_memory_required_in_mb: f64::from(memory_mib),
        };
        self.inference_component(InferenceComponent {
            inference_component_name: name.into(),
            specification: Some(ComponentSpecification {
                instance_type: None,
                model_name: None,
                compute_resource_requirements: requirements,
                scheduling_config: None,
            }),
            specifications: None,
            runtime_config: RuntimeConfig { copy_count: copies },
        })
    }

    /// Adds a component that runs only on the types given later with [`Self::specification`]
    /// (`Specifications`).
    pub fn component_per_type(self, name: &str, copies: u32) -> Self {
        self.inference_component(InferenceComponent {
            inference_component_name: name.into(),
            specification: None,
            specifications: Some(Vec::new()),
            runtime_config: RuntimeConfig { copy_count: copies },
        })
    }

    /// Adds a component with every field.
    pub fn inference_component(mut self, component: InferenceComponent) -> Self {
        self.scenario.inference_components.push(component);
        self
    }

    /// Adds a per-type specification to a component added with [`Self::component_per_type`]. Its
    /// scheduling is that of the component's other specifications (all must agree).
    pub fn specification(
        mut self,
        name: &str,
        instance_type: &str,
        accelerators: u32,
        cpu_cores: f64,
        memory_mib: u32,
    ) -> Self {
        let Some(component) = self.component_mut("specification", name) else { return self };
        let Some(list) = component.specifications.as_mut() else {
            let message =
                format!("component {name:?} has one Specification for every type; add it with component_per_type");
            self.issues.push(Issue::new(IssueKind::Inconsistent, "ScenarioBuilder::specification", message));
            return self;
        };
        let scheduling_config = list.first().and_then(|first| first.scheduling_config.clone());
        list.push(ComponentSpecification {
            instance_type: Some(instance_type.into()),
            model_name: None,
            compute_resource_requirements: ComputeResourceRequirements {
                number_of_accelerator_devices_required: Some(accelerators),
                number_of_cpu_cores_required: (cpu_cores != 0.0).then_some(cpu_cores),
                min_memory_required_in_mb: f64::from(memory_mib),
            },
            scheduling_config,
        });
        self
    }

    fn component_mut(&mut self, method: &str, name: &str) -> Option<&mut InferenceComponent> {
        let found = self.scenario.inference_components.iter().position(|c| c.inference_component_name == name);
        match found {
            Some(index) => self.scenario.inference_components.get_mut(index),
            None => {
                self.refuse(method, format!("{name:?} is not a component added before"));
                None
            }
        }
    }

    /// Applies `change` to the scheduling config of every specification of a component (they
    /// must agree), refusing an unknown name or a component without specifications.
    fn scheduling(mut self, method: &str, name: &str, change: impl Fn(&mut SchedulingConfig)) -> Self {
        let Some(component) = self.component_mut(method, name) else { return self };
        let specs: Vec<&mut ComponentSpecification> =
            component.specification.iter_mut().chain(component.specifications.iter_mut().flatten()).collect();
        if specs.is_empty() {
            let message = format!("component {name:?} has no specification yet to apply {method} to");
            self.issues.push(Issue::new(IssueKind::Inconsistent, format!("ScenarioBuilder::{method}"), message));
            return self;
        }
        for spec in specs {
            change(spec.scheduling_config.get_or_insert_with(Default::default));
        }
        self
    }

    /// Sets a component's `MaxImbalance` (PERMISSIVE) on each of its specifications.
    pub fn max_imbalance(self, name: &str, max_imbalance: u32) -> Self {
        self.scheduling("max_imbalance", name, |config| {
            config.availability_zone_balance = Some(AvailabilityZoneBalance {
                enforcement_mode: Some(EnforcementMode::Permissive),
                max_imbalance: Some(max_imbalance),
            });
        })
    }

    /// Sets a component's placement strategy on each of its specifications.
    pub fn strategy(self, name: &str, strategy: PlacementStrategy) -> Self {
        self.scheduling("strategy", name, |config| config.placement_strategy = Some(strategy))
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
        match self.scenario.fleet.instances.iter_mut().find(|instance| instance.instance_id == id) {
            Some(instance) => instance.state = Some(InstanceState::Draining),
            None => self.refuse("draining", format!("{id:?} is not a fleet instance added before")),
        }
        self
    }

    /// Adds running copies of a component on an instance.
    pub fn fleet_copies(mut self, component: &str, instance_id: &str, copies: u32) -> Self {
        self.scenario.fleet.copies.push(FleetCopy {
            inference_component_name: component.into(),
            instance_id: instance_id.into(),
            copy_count: copies,
        });
        self
    }

    /// Sets the fleet as a whole (e.g. [`crate::Observed::fleet`] after executing a plan).
    pub fn fleet(mut self, fleet: Fleet) -> Self {
        self.scenario.fleet = fleet;
        self
    }

    /// Sets `Now`, the caller's clock in seconds (required with capacity events).
    pub fn now(mut self, now: i64) -> Self {
        self.scenario.now = Some(now);
        self
    }

    /// Sets `CapacityErrorTtlSeconds`.
    pub fn capacity_error_ttl_seconds(mut self, seconds: u32) -> Self {
        self.scenario.capacity_error_ttl_seconds = Some(seconds);
        self
    }

    /// Adds a capacity event (contract §6).
    pub fn capacity_event(mut self, instance_type: &str, az: &str, event: CapacityEventKind, time: i64) -> Self {
        self.scenario.capacity_events.push(CapacityEvent {
            instance_type: instance_type.into(),
            availability_zone: az.into(),
            event,
            time,
        });
        self
    }

    /// The scenario, or every call that could not be applied.
    pub fn build(self) -> Result<Scenario, ValidationError> {
        if self.issues.is_empty() {
            Ok(self.scenario)
        } else {
            Err(ValidationError::new(self.issues))
        }
    }
}

impl Scenario {
    /// The scenario as JSON (the contract's keys; fields left at `None` or empty are omitted
    /// where the reader defaults them). [`crate::Problem::from_json`] reads it back to the same
    /// problem as [`crate::Problem::new`] on `self`.
    #[cfg(feature = "json")]
    pub fn to_json(&self) -> String {
        // Plain data with string keys: serialising cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}
