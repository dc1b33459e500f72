//! The scenario as read from JSON, before validation: numbers as `f64` and closed sets as
//! strings, so that validation can name a bad value exactly as it was given
//! (`RuntimeConfig.CopyCount: 2.5 ...`, `PlacementStrategy: "PACK" is not SPREAD or BINPACK`).
//! [`crate::Problem::new`] validates a typed [`crate::Scenario`] by turning it into this form
//! first, so both paths share one validator and one set of messages; a valid raw scenario turns
//! into a typed one without loss ([`Scenario::to_typed`]).

use crate::model;

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

// Typed → raw: exact for every valid value (integers up to 2^53 are exact in an `f64`, and the
// largest valid time, `MAX_TIME_SECONDS` = 10^15, is below that).
impl From<&model::Scenario> for Scenario {
    fn from(typed: &model::Scenario) -> Scenario {
        Scenario {
            availability_zones: typed.availability_zones.clone(),
            instance_types: typed.instance_types.iter().map(InstanceTypeSpec::from).collect(),
            capacity: typed
                .capacity
                .iter()
                .map(|entry| CapacityEntry {
                    instance_type: entry.instance_type.clone(),
                    availability_zone: entry.availability_zone.clone(),
                    available: entry.available.map(f64::from),
                    reserved: f64::from(entry.reserved),
                })
                .collect(),
            endpoint: Endpoint::from(&typed.endpoint),
            inference_components: typed.inference_components.iter().map(InferenceComponent::from).collect(),
            fleet: Fleet::from(&typed.fleet),
            now: typed.now.map(|now| now as f64),
            capacity_error_ttl_seconds: typed.capacity_error_ttl_seconds.map(f64::from),
            capacity_events: typed
                .capacity_events
                .iter()
                .map(|event| CapacityEvent {
                    instance_type: event.instance_type.clone(),
                    availability_zone: event.availability_zone.clone(),
                    event: event.event.as_str().to_string(),
                    time: event.time as f64,
                })
                .collect(),
        }
    }
}

impl From<&model::InstanceTypeSpec> for InstanceTypeSpec {
    fn from(spec: &model::InstanceTypeSpec) -> InstanceTypeSpec {
        InstanceTypeSpec {
            instance_type: spec.instance_type.clone(),
            accelerator_count: f64::from(spec.accelerator_count),
            accelerator_memory_gib: spec.accelerator_memory_gib,
            v_cpu_count: spec.v_cpu_count,
            memory_in_mb: spec.memory_in_mb,
            hourly_price: spec.hourly_price,
        }
    }
}

impl From<&model::Endpoint> for Endpoint {
    fn from(endpoint: &model::Endpoint) -> Endpoint {
        Endpoint {
            endpoint_name: endpoint.endpoint_name.clone(),
            variant_name: endpoint.variant_name.clone(),
            model_name: endpoint.model_name.clone(),
            instance_type: endpoint.instance_type.clone(),
            instance_pools: endpoint
                .instance_pools
                .iter()
                .map(|pool| InstancePool {
                    instance_type: pool.instance_type.clone(),
                    priority: f64::from(pool.priority),
                    model_name_override: pool.model_name_override.clone(),
                })
                .collect(),
            desired_instance_count: endpoint.desired_instance_count.map(f64::from),
            managed_instance_scaling: endpoint.managed_instance_scaling.as_ref().map(|scaling| {
                ManagedInstanceScaling {
                    status: scaling.status.map(|status| status.as_str().to_string()),
                    min_instance_count: scaling.min_instance_count.map(f64::from),
                    max_instance_count: scaling.max_instance_count.map(f64::from),
                    scale_in_policy: scaling.scale_in_policy.as_ref().map(|policy| ScaleInPolicySpec {
                        strategy: policy.strategy.map(|strategy| strategy.as_str().to_string()),
                        cooldown_in_minutes: policy.cooldown_in_minutes.map(f64::from),
                        maximum_step_size: policy.maximum_step_size.map(f64::from),
                    }),
                }
            }),
        }
    }
}

impl From<&model::InferenceComponent> for InferenceComponent {
    fn from(component: &model::InferenceComponent) -> InferenceComponent {
        InferenceComponent {
            inference_component_name: component.inference_component_name.clone(),
            specification: component.specification.as_ref().map(ComponentSpecification::from),
            specifications: component
                .specifications
                .as_ref()
                .map(|list| list.iter().map(ComponentSpecification::from).collect()),
            runtime_config: RuntimeConfig { copy_count: f64::from(component.runtime_config.copy_count) },
        }
    }
}

impl From<&model::ComponentSpecification> for ComponentSpecification {
    fn from(spec: &model::ComponentSpecification) -> ComponentSpecification {
        let requirements = &spec.compute_resource_requirements;
        ComponentSpecification {
            instance_type: spec.instance_type.clone(),
            model_name: spec.model_name.clone(),
            compute_resource_requirements: ComputeResourceRequirements {
                number_of_accelerator_devices_required: requirements
                    .number_of_accelerator_devices_required
                    .map(f64::from),
                number_of_cpu_cores_required: requirements.number_of_cpu_cores_required,
                min_memory_required_in_mb: requirements.min_memory_required_in_mb,
            },
            scheduling_config: spec.scheduling_config.as_ref().map(|config| SchedulingConfig {
                placement_strategy: config.placement_strategy.map(|strategy| strategy.as_str().to_string()),
                availability_zone_balance: config.availability_zone_balance.as_ref().map(|balance| {
                    AvailabilityZoneBalance {
                        enforcement_mode: balance.enforcement_mode.map(|mode| mode.as_str().to_string()),
                        max_imbalance: balance.max_imbalance.map(f64::from),
                    }
                }),
            }),
        }
    }
}

impl From<&model::Fleet> for Fleet {
    fn from(fleet: &model::Fleet) -> Fleet {
        Fleet {
            instances: fleet
                .instances
                .iter()
                .map(|instance| FleetInstance {
                    instance_id: instance.instance_id.clone(),
                    instance_type: instance.instance_type.clone(),
                    availability_zone: instance.availability_zone.clone(),
                    reserved: instance.reserved,
                    state: instance.state.map(|state| state.as_str().to_string()),
                })
                .collect(),
            copies: fleet
                .copies
                .iter()
                .map(|copy| FleetCopy {
                    inference_component_name: copy.inference_component_name.clone(),
                    instance_id: copy.instance_id.clone(),
                    copy_count: f64::from(copy.copy_count),
                })
                .collect(),
        }
    }
}

/// A validated whole number as the typed field's integer. Validation has checked its range, so
/// the saturating conversion never changes a value it is given.
#[cfg(feature = "json")]
fn whole<T: TryFrom<i64> + Default>(value: f64) -> T {
    T::try_from(value as i64).unwrap_or_default()
}

/// A validated closed-set spelling as its enum; validation has checked the spelling.
#[cfg(feature = "json")]
fn spelled<T: Copy>(text: &str, parse: fn(&str) -> Option<T>, fallback: T) -> T {
    parse(text).unwrap_or(fallback)
}

impl Scenario {
    /// The typed scenario. Only meaningful after validation has accepted `self` (every number
    /// in range and whole where it must be, every spelling known); then no value changes.
    #[cfg(feature = "json")]
    pub(crate) fn to_typed(&self) -> model::Scenario {
        model::Scenario {
            availability_zones: self.availability_zones.clone(),
            instance_types: self.instance_types.iter().map(InstanceTypeSpec::to_typed).collect(),
            capacity: self.capacity.iter().map(CapacityEntry::to_typed).collect(),
            endpoint: self.endpoint.to_typed(),
            inference_components: self.inference_components.iter().map(InferenceComponent::to_typed).collect(),
            fleet: self.fleet.to_typed(),
            now: self.now.map(whole),
            capacity_error_ttl_seconds: self.capacity_error_ttl_seconds.map(whole),
            capacity_events: self.capacity_events.iter().map(CapacityEvent::to_typed).collect(),
        }
    }
}

#[cfg(feature = "json")]
impl InstanceTypeSpec {
    fn to_typed(&self) -> model::InstanceTypeSpec {
        model::InstanceTypeSpec {
            instance_type: self.instance_type.clone(),
            accelerator_count: whole(self.accelerator_count),
            accelerator_memory_gib: self.accelerator_memory_gib,
            v_cpu_count: self.v_cpu_count,
            memory_in_mb: self.memory_in_mb,
            hourly_price: self.hourly_price,
        }
    }
}

#[cfg(feature = "json")]
impl CapacityEntry {
    fn to_typed(&self) -> model::CapacityEntry {
        model::CapacityEntry {
            instance_type: self.instance_type.clone(),
            availability_zone: self.availability_zone.clone(),
            available: self.available.map(whole),
            reserved: whole(self.reserved),
        }
    }
}

#[cfg(feature = "json")]
impl CapacityEvent {
    fn to_typed(&self) -> model::CapacityEvent {
        model::CapacityEvent {
            instance_type: self.instance_type.clone(),
            availability_zone: self.availability_zone.clone(),
            event: spelled(&self.event, model::CapacityEventKind::parse, model::CapacityEventKind::Launched),
            time: whole(self.time),
        }
    }
}

#[cfg(feature = "json")]
impl Endpoint {
    fn to_typed(&self) -> model::Endpoint {
        model::Endpoint {
            endpoint_name: self.endpoint_name.clone(),
            variant_name: self.variant_name.clone(),
            model_name: self.model_name.clone(),
            instance_type: self.instance_type.clone(),
            instance_pools: self
                .instance_pools
                .iter()
                .map(|pool| model::InstancePool {
                    instance_type: pool.instance_type.clone(),
                    priority: whole(pool.priority),
                    model_name_override: pool.model_name_override.clone(),
                })
                .collect(),
            desired_instance_count: self.desired_instance_count.map(whole),
            managed_instance_scaling: self.managed_instance_scaling.as_ref().map(ManagedInstanceScaling::to_typed),
        }
    }
}

#[cfg(feature = "json")]
impl ManagedInstanceScaling {
    fn to_typed(&self) -> model::ManagedInstanceScaling {
        use model::{ScaleInStrategy, ScalingStatus};
        model::ManagedInstanceScaling {
            status: self.status.as_deref().map(|text| spelled(text, ScalingStatus::parse, ScalingStatus::Enabled)),
            min_instance_count: self.min_instance_count.map(whole),
            max_instance_count: self.max_instance_count.map(whole),
            scale_in_policy: self.scale_in_policy.as_ref().map(|policy| model::ScaleInPolicySpec {
                strategy: policy
                    .strategy
                    .as_deref()
                    .map(|text| spelled(text, ScaleInStrategy::parse, ScaleInStrategy::IdleRelease)),
                cooldown_in_minutes: policy.cooldown_in_minutes.map(whole),
                maximum_step_size: policy.maximum_step_size.map(whole),
            }),
        }
    }
}

#[cfg(feature = "json")]
impl InferenceComponent {
    fn to_typed(&self) -> model::InferenceComponent {
        model::InferenceComponent {
            inference_component_name: self.inference_component_name.clone(),
            specification: self.specification.as_ref().map(ComponentSpecification::to_typed),
            specifications: self
                .specifications
                .as_ref()
                .map(|list| list.iter().map(ComponentSpecification::to_typed).collect()),
            runtime_config: model::RuntimeConfig { copy_count: whole(self.runtime_config.copy_count) },
        }
    }
}

#[cfg(feature = "json")]
impl Fleet {
    fn to_typed(&self) -> model::Fleet {
        model::Fleet {
            instances: self
                .instances
                .iter()
                .map(|instance| model::FleetInstance {
                    instance_id: instance.instance_id.clone(),
                    instance_type: instance.instance_type.clone(),
                    availability_zone: instance.availability_zone.clone(),
                    reserved: instance.reserved,
                    state: instance
                        .state
                        .as_deref()
                        .map(|text| spelled(text, model::InstanceState::parse, model::InstanceState::InService)),
                })
                .collect(),
            copies: self
                .copies
                .iter()
                .map(|copy| model::FleetCopy {
                    inference_component_name: copy.inference_component_name.clone(),
                    instance_id: copy.instance_id.clone(),
                    copy_count: whole(copy.copy_count),
                })
                .collect(),
        }
    }
}

impl ComponentSpecification {
    #[cfg(feature = "json")]
    fn to_typed(&self) -> model::ComponentSpecification {
        use model::{EnforcementMode, PlacementStrategy};
        let requirements = &self.compute_resource_requirements;
        model::ComponentSpecification {
            instance_type: self.instance_type.clone(),
            model_name: self.model_name.clone(),
            compute_resource_requirements: model::ComputeResourceRequirements {
                number_of_accelerator_devices_required: requirements.number_of_accelerator_devices_required.map(whole),
                number_of_cpu_cores_required: requirements.number_of_cpu_cores_required,
                min_memory_required_in_mb: requirements.min_memory_required_in_mb,
            },
            scheduling_config: self.scheduling_config.as_ref().map(|config| model::SchedulingConfig {
                placement_strategy: config
                    .placement_strategy
                    .as_deref()
                    .map(|text| spelled(text, PlacementStrategy::parse, PlacementStrategy::Spread)),
                availability_zone_balance: config.availability_zone_balance.as_ref().map(|balance| {
                    model::AvailabilityZoneBalance {
                        enforcement_mode: balance
                            .enforcement_mode
                            .as_deref()
                            .map(|text| spelled(text, EnforcementMode::parse, EnforcementMode::Permissive)),
                        max_imbalance: balance.max_imbalance.map(whole),
                    }
                }),
            }),
        }
    }
}
