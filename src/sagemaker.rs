//! Conversions between the `aws-sdk-sagemaker` crate's values and fleetplan's scenarios and
//! plans (cargo feature `sagemaker`). No network calls: the SDK is used only for its types and
//! request builders.
//!
//! **In:** [`EndpointDescription`] holds what the SageMaker describe calls return
//! (`DescribeEndpointConfig` → [`ProductionVariant`], `DescribeEndpoint` →
//! [`ProductionVariantSummary`], `DescribeInferenceComponent` →
//! [`DescribeInferenceComponentOutput`], or the [`CreateInferenceComponentInput`] about to be
//! sent); [`CallerSupplied`] holds what those calls cannot tell: the endpoint's availability
//! zones, instance shapes outside the built-in catalogue, launch capacity, the running fleet
//! (which instance, in which AZ, runs which copies) and capacity feedback. [`problem`] turns both
//! into a validated [`Problem`]: the SDK values become the scenario document's keys and go
//! through the same reader and validator as JSON, so a bad SDK value gets exactly the message
//! (path and text) the equivalent JSON gets, e.g.
//! `Endpoint.InstancePools[1].Priority: 7 is above the maximum 5`.
//!
//! **Out:** [`requests_for_plan`] turns a plan into the request builders the caller sends next
//! (`UpdateInferenceComponentRuntimeConfig` per component whose copy count changes,
//! `UpdateEndpointWeightsAndCapacities` for a single-model endpoint), each with `send_with(&client)`.
//! SageMaker chooses instances itself, so the plan's per-instance actions have no request.
//!
//! **Back:** [`requests_for_scenario`] turns a scenario into the unsent `CreateEndpointConfig`,
//! `CreateEndpoint` and `CreateInferenceComponent` inputs that set its endpoint up
//! ([`ScenarioRequests`]), the [`CallerSupplied`] rest that no request holds, and the
//! [`Omission`]s: scenario values the requests do not carry as they are (e.g. a
//! `DesiredInstanceCount` beside inference components). Describing the endpoint those requests
//! create gives the scenario back through [`scenario_and_problem`], except where an omission says.
//!
//! The field-by-field mapping is in `docs/sagemaker.md`.
//!
//! ```
//! use aws_sdk_sagemaker::operation::describe_inference_component::DescribeInferenceComponentOutput;
//! use aws_sdk_sagemaker::types::{
//!     InferenceComponentComputeResourceRequirements, InferenceComponentRuntimeConfigSummary,
//!     InferenceComponentSpecificationSummary, InstancePool, ProductionVariant, ProductionVariantInstanceType,
//! };
//! use fleetplan::sagemaker::{problem, requests_for_plan, CallerSupplied, EndpointDescription};
//!
//! let variant = ProductionVariant::builder()
//!     .variant_name("AllTraffic")
//!     .instance_pools(
//!         InstancePool::builder().instance_type(ProductionVariantInstanceType::MlG612Xlarge).priority(1).build(),
//!     )
//!     .build();
//! let chat = DescribeInferenceComponentOutput::builder()
//!     .inference_component_name("chat")
//!     .specification(
//!         InferenceComponentSpecificationSummary::builder()
//!             .compute_resource_requirements(
//!                 InferenceComponentComputeResourceRequirements::builder()
//!                     .number_of_accelerator_devices_required(1.0)
//!                     .min_memory_required_in_mb(16_384)
//!                     .build(),
//!             )
//!             .build(),
//!     )
//!     .runtime_config(InferenceComponentRuntimeConfigSummary::builder().desired_copy_count(4).build())
//!     .build();
//! let description = EndpointDescription::new("agents", &variant).with_component(&chat);
//! let supplied = CallerSupplied::in_zones(["us-east-1a", "us-east-1b"]);
//! let problem = problem(&description, &supplied)?;
//! let plan = fleetplan::plan_greedy(&problem);
//! let requests = requests_for_plan(&problem, &plan)?;
//! assert_eq!(requests.copy_counts[0].planned, 4);
//! let request = requests.copy_counts[0].request.clone().build()?; // or .send_with(&client).await
//! assert_eq!(request.desired_runtime_config().and_then(|config| config.copy_count()), Some(4));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! From a scenario to the requests that create it, and back:
//!
//! ```
//! use fleetplan::sagemaker::{requests_for_scenario, scenario_and_problem, EndpointDescription};
//!
//! let scenario = fleetplan::scenario_from_json(
//!     r#"{"AvailabilityZones": ["us-east-1a", "us-east-1b"],
//!         "Endpoint": {"EndpointName": "agents", "VariantName": "AllTraffic",
//!           "InstancePools": [{"InstanceType": "ml.g6e.12xlarge", "Priority": 1},
//!                             {"InstanceType": "ml.g6.12xlarge", "Priority": 2}]},
//!         "InferenceComponents": [{"InferenceComponentName": "chat",
//!           "Specification": {"ComputeResourceRequirements":
//!             {"NumberOfAcceleratorDevicesRequired": 1, "MinMemoryRequiredInMb": 16384}},
//!           "RuntimeConfig": {"CopyCount": 4}}]}"#,
//! )?;
//! let requests = requests_for_scenario(&scenario)?;
//! assert!(requests.omissions.is_empty());
//! let variant = &requests.endpoint_config.production_variants()[0];
//! assert_eq!(variant.instance_pools()[1].priority(), Some(2));
//! let chat = &requests.inference_components[0]; // a CreateInferenceComponentInput
//! assert_eq!(chat.runtime_config().and_then(|config| config.copy_count()), Some(4));
//!
//! // The requests describe the endpoint as SageMaker will: the scenario comes back.
//! let description = EndpointDescription::new("agents", variant).with_component(chat);
//! let (described, _) = scenario_and_problem(&description, &requests.caller_supplied)?;
//! assert_eq!(described, scenario);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;

use aws_sdk_sagemaker::operation::create_inference_component::CreateInferenceComponentInput;
use aws_sdk_sagemaker::operation::describe_endpoint::DescribeEndpointOutput;
use aws_sdk_sagemaker::operation::describe_endpoint_config::DescribeEndpointConfigOutput;
use aws_sdk_sagemaker::operation::describe_inference_component::DescribeInferenceComponentOutput;
use aws_sdk_sagemaker::operation::update_endpoint_weights_and_capacities::builders::UpdateEndpointWeightsAndCapacitiesInputBuilder;
use aws_sdk_sagemaker::operation::update_endpoint_weights_and_capacities::UpdateEndpointWeightsAndCapacitiesInput;
use aws_sdk_sagemaker::operation::update_inference_component_runtime_config::builders::UpdateInferenceComponentRuntimeConfigInputBuilder;
use aws_sdk_sagemaker::operation::update_inference_component_runtime_config::UpdateInferenceComponentRuntimeConfigInput;
use aws_sdk_sagemaker::types::{
    DesiredWeightAndCapacity, InferenceComponentComputeResourceRequirements, InferenceComponentRuntimeConfig,
    InferenceComponentSchedulingConfig, ProductionVariant, ProductionVariantManagedInstanceScaling,
    ProductionVariantSummary,
};
use serde_json::{Map, Number, Value};

use crate::error::{Issue, IssueKind, ValidationError};
use crate::fleet::FinalFleet;
use crate::model::{CapacityEntry, CapacityEvent, Fleet, InstanceTypeSpec, Scenario};
use crate::{Plan, Problem, ReadOptions};

mod create;
pub use create::{requests_for_scenario, Omission, ScenarioRequests};

/// What the SageMaker API describes about one endpoint variant and the inference components on it.
#[derive(Debug, Clone)]
pub struct EndpointDescription<'a> {
    /// The endpoint's name (`DescribeEndpoint.EndpointName`): the scenario's `Endpoint.EndpointName`.
    pub endpoint_name: String,
    /// The variant from `DescribeEndpointConfig.ProductionVariants` (or the one sent with
    /// `CreateEndpointConfig`): instance type or pools, scaling, the model of a single-model endpoint.
    pub variant: &'a ProductionVariant,
    /// The variant's live state from `DescribeEndpoint.ProductionVariants`, optional: its desired
    /// instance count plans a single-model endpoint, and its per-pool instance counts are checked
    /// against [`CallerSupplied::fleet`] (see [`SageMakerError::FleetMismatch`]).
    pub variant_status: Option<&'a ProductionVariantSummary>,
    /// The inference components hosted on the variant, in scenario order. None for a
    /// single-model endpoint.
    pub inference_components: Vec<ComponentDescription<'a>>,
}

/// One inference component as the SDK holds it.
#[derive(Debug, Clone, Copy)]
pub enum ComponentDescription<'a> {
    /// A running component: `DescribeInferenceComponent`'s output. Its `DesiredCopyCount` is the
    /// scenario's `CopyCount`; its per-type `PlacementStatus` is checked against the fleet.
    Described(&'a DescribeInferenceComponentOutput),
    /// A component about to be created: the `CreateInferenceComponent` request.
    Requested(&'a CreateInferenceComponentInput),
}

impl<'a> From<&'a DescribeInferenceComponentOutput> for ComponentDescription<'a> {
    fn from(output: &'a DescribeInferenceComponentOutput) -> Self {
        ComponentDescription::Described(output)
    }
}

impl<'a> From<&'a CreateInferenceComponentInput> for ComponentDescription<'a> {
    fn from(input: &'a CreateInferenceComponentInput) -> Self {
        ComponentDescription::Requested(input)
    }
}

impl<'a> EndpointDescription<'a> {
    /// A variant of the named endpoint, without live state or components.
    pub fn new(endpoint_name: impl Into<String>, variant: &'a ProductionVariant) -> Self {
        EndpointDescription {
            endpoint_name: endpoint_name.into(),
            variant,
            variant_status: None,
            inference_components: Vec::new(),
        }
    }

    /// From the describe results: the variant named `variant_name` (or the only one, when
    /// `None`) of the endpoint config, with its live state from `DescribeEndpoint` when that
    /// lists it.
    pub fn from_describe(
        endpoint: &'a DescribeEndpointOutput,
        config: &'a DescribeEndpointConfigOutput,
        variant_name: Option<&str>,
    ) -> Result<Self, SageMakerError> {
        let variants = config.production_variants();
        let names = || variants.iter().map(|variant| variant.variant_name().unwrap_or("").to_string()).collect();
        let variant = match variant_name {
            Some(name) => variants.iter().find(|variant| variant.variant_name() == Some(name)),
            None if variants.len() == 1 => variants.first(),
            None => None,
        };
        let Some(variant) = variant else {
            return Err(SageMakerError::NoVariant { wanted: variant_name.map(str::to_string), found: names() });
        };
        let status = endpoint
            .production_variants()
            .iter()
            .find(|summary| summary.variant_name().is_some() && summary.variant_name() == variant.variant_name());
        Ok(EndpointDescription {
            endpoint_name: endpoint.endpoint_name().unwrap_or_default().to_string(),
            variant,
            variant_status: status,
            inference_components: Vec::new(),
        })
    }

    /// Adds the variant's live state (`DescribeEndpoint`).
    pub fn with_status(mut self, status: &'a ProductionVariantSummary) -> Self {
        self.variant_status = Some(status);
        self
    }

    /// Adds an inference component (`DescribeInferenceComponent` output or
    /// `CreateInferenceComponent` input).
    pub fn with_component(mut self, component: impl Into<ComponentDescription<'a>>) -> Self {
        self.inference_components.push(component.into());
        self
    }
}

/// What the describe calls cannot tell, supplied by the caller: where instances may run, what the
/// hardware is, how much of it can be launched, what runs where now, and what launches taught.
///
/// SageMaker does not expose an endpoint's instances: `DescribeEndpoint` gives instance counts
/// per pool type and `DescribeInferenceComponent` copy counts per type, but no instance ids, AZs,
/// reservations or which instance runs which copy. The caller keeps that record (e.g. from its
/// own launch history) and passes it as [`CallerSupplied::fleet`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallerSupplied {
    /// The endpoint's availability zones (the AZs of the model's VPC subnets: `DescribeSubnets`).
    /// The scenario's `AvailabilityZones`.
    pub availability_zones: Vec<String>,
    /// Instance shapes not in (or overriding) the built-in catalogue, with prices. `InstanceTypes`.
    pub instance_types: Vec<InstanceTypeSpec>,
    /// Launch limits per (type, AZ): capacity reservations and known on-demand limits. `Capacity`.
    pub capacity: Vec<CapacityEntry>,
    /// The running fleet: instances with type, AZ, reservation, state, and the copies on each. `Fleet`.
    pub fleet: Fleet,
    /// The caller's clock in seconds, required with capacity events. `Now`.
    pub now: Option<i64>,
    /// How long a capacity error blocks its (type, AZ). `CapacityErrorTtlSeconds`.
    pub capacity_error_ttl_seconds: Option<u32>,
    /// Launch outcomes the caller observed (`InsufficientCapacity`, …). `CapacityEvents`.
    pub capacity_events: Vec<CapacityEvent>,
}

impl CallerSupplied {
    /// Only the availability zones: an empty fleet, unlimited capacity, the built-in catalogue.
    pub fn in_zones<S: Into<String>>(zones: impl IntoIterator<Item = S>) -> Self {
        CallerSupplied { availability_zones: zones.into_iter().map(Into::into).collect(), ..Default::default() }
    }
}

/// Why SDK values could not be turned into a problem, or a plan into requests.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SageMakerError {
    /// The endpoint config has no variant of that name (or several, and none was named).
    #[error("{}", no_variant_text(wanted.as_deref(), found))]
    NoVariant {
        /// The variant asked for, if any.
        wanted: Option<String>,
        /// The variant names the config has.
        found: Vec<String>,
    },
    /// An inference component belongs to another endpoint or variant than the one described.
    #[error("inference component {index} is on {found}, not on the described endpoint variant {expected}")]
    ComponentElsewhere {
        /// Position in [`EndpointDescription::inference_components`].
        index: usize,
        /// What the component names instead (`endpoint/variant`).
        found: String,
        /// The described endpoint and variant (`endpoint/variant`).
        expected: String,
    },
    /// The scenario the values make is invalid: exactly the issues the equivalent scenario JSON
    /// gets, with scenario paths (`Endpoint.InstancePools[0].Priority`, …).
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    /// Live counts from `DescribeEndpoint` / `DescribeInferenceComponent` disagree with
    /// [`CallerSupplied::fleet`]: planning on a stale fleet would be wrong. One line per difference.
    #[error("the supplied fleet disagrees with SageMaker's live counts:\n{}", .0.join("\n"))]
    FleetMismatch(Vec<String>),
    /// The plan does not fit the problem (it fails `verify`); no request is made from it.
    #[error("the plan does not verify against the problem:\n{}", .0.join("\n"))]
    PlanDoesNotVerify(Vec<String>),
    /// A count (planned, or a scenario's) does not fit the API's 32-bit integer.
    #[error("{what}: {count} does not fit the API's 32-bit count")]
    CountTooLarge {
        /// What the count is of.
        what: String,
        /// The count.
        count: u64,
    },
    /// The SDK's builder refused a request.
    #[error("the SDK could not build the {request} request: {message}")]
    RequestNotBuilt {
        /// The operation (`CreateEndpointConfig`, …).
        request: String,
        /// The SDK's `BuildError`, as text.
        message: String,
    },
}

/// [`SageMakerError::NoVariant`]'s message: the name asked for, or that one must be named.
fn no_variant_text(wanted: Option<&str>, found: &[String]) -> String {
    match wanted {
        Some(name) => format!("the endpoint config has no production variant {name:?} (it has {found:?})"),
        None => format!("the endpoint config has {} production variants {found:?}: name one", found.len()),
    }
}

/// Converts SDK values plus what the caller supplies into a validated problem (see the module
/// documentation). Warnings (e.g. a single-copy component) are on [`Problem::warnings`].
pub fn problem(description: &EndpointDescription<'_>, supplied: &CallerSupplied) -> Result<Problem, SageMakerError> {
    scenario_and_problem(description, supplied).map(|(_, problem)| problem)
}

/// [`problem`], returning the scenario too (e.g. to save it as JSON with `serde_json`, replay it
/// with `fleetplan plan`, or hand it to the simulator).
pub fn scenario_and_problem(
    description: &EndpointDescription<'_>,
    supplied: &CallerSupplied,
) -> Result<(Scenario, Problem), SageMakerError> {
    check_components_belong(description)?;
    let mut issues = Vec::new();
    let document = scenario_document(description, supplied, &mut issues);
    // The caller's parts are fleetplan's own types: they join the scenario as they are (through
    // JSON, a NaN would become null, i.e. silently "absent").
    let complete = |scenario: &mut crate::raw::Scenario| {
        let typed = Scenario {
            instance_types: supplied.instance_types.clone(),
            capacity: supplied.capacity.clone(),
            fleet: supplied.fleet.clone(),
            now: supplied.now,
            capacity_error_ttl_seconds: supplied.capacity_error_ttl_seconds,
            capacity_events: supplied.capacity_events.clone(),
            ..Scenario::default()
        };
        let raw = crate::raw::Scenario::from(&typed);
        scenario.instance_types = raw.instance_types;
        scenario.capacity = raw.capacity;
        scenario.fleet = raw.fleet;
        scenario.now = raw.now;
        scenario.capacity_error_ttl_seconds = raw.capacity_error_ttl_seconds;
        scenario.capacity_events = raw.capacity_events;
    };
    let read = crate::json::scenario_and_problem_from_value(&document, &ReadOptions::default(), complete);
    let (scenario, problem) = match read {
        Ok(read) if issues.is_empty() => read,
        Ok(_) => return Err(SageMakerError::Invalid(ValidationError::new(issues))),
        Err(error) => {
            issues.extend(error.issues().iter().cloned());
            return Err(SageMakerError::Invalid(ValidationError::new(issues)));
        }
    };
    check_live_counts(description, supplied)?;
    Ok((scenario, problem))
}

/// The scenario document of the SDK-sourced parts, keyed as the contract's JSON. Numbers JSON
/// cannot hold (NaN, infinities) are left out and reported in `issues` under their path, worded
/// as the validator words them in a scenario built in code.
fn scenario_document(
    description: &EndpointDescription<'_>,
    supplied: &CallerSupplied,
    issues: &mut Vec<Issue>,
) -> Value {
    let mut document = Map::new();
    document.insert(
        "AvailabilityZones".into(),
        Value::Array(supplied.availability_zones.iter().cloned().map(Value::String).collect()),
    );
    document.insert("Endpoint".into(), Value::Object(endpoint_document(description)));
    let components = description
        .inference_components
        .iter()
        .enumerate()
        .map(|(index, component)| {
            Value::Object(component_document(*component, &format!("InferenceComponents[{index}]"), issues))
        })
        .collect();
    document.insert("InferenceComponents".into(), Value::Array(components));
    Value::Object(document)
}

fn endpoint_document(description: &EndpointDescription<'_>) -> Map<String, Value> {
    let variant = description.variant;
    let mut endpoint = Map::new();
    endpoint.insert("EndpointName".into(), Value::String(description.endpoint_name.clone()));
    put_string(&mut endpoint, "VariantName", variant.variant_name());
    put_string(&mut endpoint, "ModelName", variant.model_name());
    put_string(&mut endpoint, "InstanceType", variant.instance_type().map(|t| t.as_str()));
    if let Some(pools) = &variant.instance_pools {
        let pools = pools
            .iter()
            .map(|pool| {
                let mut entry = Map::new();
                put_string(&mut entry, "InstanceType", pool.instance_type().map(|t| t.as_str()));
                put_integer(&mut entry, "Priority", pool.priority());
                put_string(&mut entry, "ModelNameOverride", pool.model_name_override());
                Value::Object(entry)
            })
            .collect();
        endpoint.insert("InstancePools".into(), Value::Array(pools));
    }
    // Only a single-model endpoint is planned by instance count; with inference components the
    // variant's InitialInstanceCount is a start value the copy counts override.
    if description.inference_components.is_empty() {
        let live = description.variant_status.and_then(ProductionVariantSummary::desired_instance_count);
        put_integer(&mut endpoint, "DesiredInstanceCount", live.or(variant.initial_instance_count()));
    }
    if let Some(scaling) = variant.managed_instance_scaling() {
        endpoint.insert("ManagedInstanceScaling".into(), Value::Object(scaling_document(scaling)));
    }
    endpoint
}

fn scaling_document(scaling: &ProductionVariantManagedInstanceScaling) -> Map<String, Value> {
    let mut document = Map::new();
    put_string(&mut document, "Status", scaling.status().map(|status| status.as_str()));
    put_integer(&mut document, "MinInstanceCount", scaling.min_instance_count());
    put_integer(&mut document, "MaxInstanceCount", scaling.max_instance_count());
    if let Some(policy) = scaling.scale_in_policy() {
        let mut entry = Map::new();
        put_string(&mut entry, "Strategy", policy.strategy().map(|strategy| strategy.as_str()));
        put_integer(&mut entry, "CooldownInMinutes", policy.cooldown_in_minutes());
        put_integer(&mut entry, "MaximumStepSize", policy.maximum_step_size());
        document.insert("ScaleInPolicy".into(), Value::Object(entry));
    }
    document
}

/// The fields of one specification fleetplan reads; `Specification` and `SpecificationSummary`
/// have them under the same names.
struct SpecificationFields<'s> {
    instance_type: Option<&'s str>,
    model_name: Option<&'s str>,
    requirements: Option<&'s InferenceComponentComputeResourceRequirements>,
    scheduling: Option<&'s InferenceComponentSchedulingConfig>,
}

fn component_document(component: ComponentDescription<'_>, path: &str, issues: &mut Vec<Issue>) -> Map<String, Value> {
    // The describe output and the create input carry different specification types with the
    // same getters: one macro reads either.
    macro_rules! fields {
        ($spec:expr) => {
            SpecificationFields {
                instance_type: $spec.instance_type().map(|t| t.as_str()),
                model_name: $spec.model_name(),
                requirements: $spec.compute_resource_requirements(),
                scheduling: $spec.scheduling_config(),
            }
        };
    }
    let (name, single, several, copy_count): (_, Option<SpecificationFields>, Option<Vec<SpecificationFields>>, _) =
        match component {
            ComponentDescription::Described(output) => (
                output.inference_component_name(),
                output.specification().map(|spec| fields!(spec)),
                output.specifications.as_ref().map(|specs| specs.iter().map(|spec| fields!(spec)).collect()),
                output.runtime_config().map(|config| config.desired_copy_count()),
            ),
            ComponentDescription::Requested(input) => (
                input.inference_component_name(),
                input.specification().map(|spec| fields!(spec)),
                input.specifications.as_ref().map(|specs| specs.iter().map(|spec| fields!(spec)).collect()),
                input.runtime_config().map(InferenceComponentRuntimeConfig::copy_count),
            ),
        };
    let mut document = Map::new();
    put_string(&mut document, "InferenceComponentName", name);
    if let Some(spec) = single {
        let spec_path = format!("{path}.Specification");
        document.insert("Specification".into(), Value::Object(specification_document(&spec, &spec_path, issues)));
    }
    if let Some(specs) = several {
        let specs = specs
            .iter()
            .enumerate()
            .map(|(index, spec)| {
                Value::Object(specification_document(spec, &format!("{path}.Specifications[{index}]"), issues))
            })
            .collect();
        document.insert("Specifications".into(), Value::Array(specs));
    }
    if let Some(copy_count) = copy_count {
        let mut runtime = Map::new();
        put_integer(&mut runtime, "CopyCount", copy_count);
        document.insert("RuntimeConfig".into(), Value::Object(runtime));
    }
    document
}

fn specification_document(spec: &SpecificationFields<'_>, path: &str, issues: &mut Vec<Issue>) -> Map<String, Value> {
    let mut document = Map::new();
    put_string(&mut document, "InstanceType", spec.instance_type);
    put_string(&mut document, "ModelName", spec.model_name);
    if let Some(requirements) = spec.requirements {
        let requirements_path = format!("{path}.ComputeResourceRequirements");
        let mut entry = Map::new();
        for (key, value) in [
            ("NumberOfAcceleratorDevicesRequired", requirements.number_of_accelerator_devices_required()),
            ("NumberOfCpuCoresRequired", requirements.number_of_cpu_cores_required()),
        ] {
            if let Some(value) = value {
                match json_number(value) {
                    Some(number) => {
                        entry.insert(key.into(), Value::Number(number));
                    }
                    None => issues.push(Issue::new(
                        IssueKind::OutOfRange,
                        format!("{requirements_path}.{key}"),
                        // As the validator words a NaN in a scenario built in code.
                        format!("{value} is not a number"),
                    )),
                }
            }
        }
        put_integer(&mut entry, "MinMemoryRequiredInMb", requirements.min_memory_required_in_mb());
        document.insert("ComputeResourceRequirements".into(), Value::Object(entry));
    }
    if let Some(scheduling) = spec.scheduling {
        let mut entry = Map::new();
        put_string(&mut entry, "PlacementStrategy", scheduling.placement_strategy().map(|s| s.as_str()));
        if let Some(balance) = scheduling.availability_zone_balance() {
            let mut balance_entry = Map::new();
            put_string(&mut balance_entry, "EnforcementMode", balance.enforcement_mode().map(|mode| mode.as_str()));
            put_integer(&mut balance_entry, "MaxImbalance", balance.max_imbalance());
            entry.insert("AvailabilityZoneBalance".into(), Value::Object(balance_entry));
        }
        document.insert("SchedulingConfig".into(), Value::Object(entry));
    }
    document
}

fn put_string(map: &mut Map<String, Value>, key: &str, value: Option<&str>) {
    if let Some(value) = value {
        map.insert(key.into(), Value::String(value.to_string()));
    }
}

fn put_integer(map: &mut Map<String, Value>, key: &str, value: Option<i32>) {
    if let Some(value) = value {
        map.insert(key.into(), Value::Number(value.into()));
    }
}

/// The JSON number an `f32` is written as: its shortest decimal form (`0.1`, not
/// `0.10000000149011612`), and a whole value as an integer (`4`, not `4.0`), so messages quote
/// it as the equivalent JSON would. `None` for NaN and infinities, which JSON cannot hold.
fn json_number(value: f32) -> Option<Number> {
    if !value.is_finite() {
        return None;
    }
    let wide: f64 = value.to_string().parse().ok()?;
    // Whole values within f32's exact-integer range (2^24) print as integers.
    if wide.fract() == 0.0 && wide.abs() <= 16_777_216.0 {
        return Some(Number::from(wide as i64));
    }
    Number::from_f64(wide)
}

fn check_components_belong(description: &EndpointDescription<'_>) -> Result<(), SageMakerError> {
    let variant_name = description.variant.variant_name().unwrap_or_default();
    for (index, component) in description.inference_components.iter().enumerate() {
        let (endpoint, variant) = match component {
            ComponentDescription::Described(output) => (output.endpoint_name(), output.variant_name()),
            ComponentDescription::Requested(input) => (input.endpoint_name(), input.variant_name()),
        };
        let endpoint_differs = endpoint.is_some_and(|name| name != description.endpoint_name);
        let variant_differs = variant.is_some_and(|name| name != variant_name);
        if endpoint_differs || variant_differs {
            return Err(SageMakerError::ComponentElsewhere {
                index,
                found: format!(
                    "{}/{}",
                    endpoint.unwrap_or(&description.endpoint_name),
                    variant.unwrap_or(variant_name)
                ),
                expected: format!("{}/{variant_name}", description.endpoint_name),
            });
        }
    }
    Ok(())
}

/// Compares the live counts SageMaker reports with the supplied fleet: instances per pool type
/// (`DescribeEndpoint`) and copies per component and type (`DescribeInferenceComponent`'s
/// `PlacementStatus`). Only counts SageMaker reports are compared.
fn check_live_counts(description: &EndpointDescription<'_>, supplied: &CallerSupplied) -> Result<(), SageMakerError> {
    let fleet = &supplied.fleet;
    let type_of: BTreeMap<&str, &str> = fleet
        .instances
        .iter()
        .map(|instance| (instance.instance_id.as_str(), instance.instance_type.as_str()))
        .collect();
    let mut mismatches = Vec::new();
    if let Some(status) = description.variant_status {
        let mut instances_per_type: BTreeMap<&str, i64> = BTreeMap::new();
        for instance in &fleet.instances {
            *instances_per_type.entry(instance.instance_type.as_str()).or_default() += 1;
        }
        for pool in status.instance_pools() {
            let (Some(instance_type), Some(reported)) = (pool.instance_type(), pool.current_instance_count()) else {
                continue;
            };
            let supplied_count = instances_per_type.get(instance_type.as_str()).copied().unwrap_or(0);
            if supplied_count != i64::from(reported) {
                mismatches.push(format!(
                    "{}: DescribeEndpoint reports {reported} instances, the fleet has {supplied_count}",
                    instance_type.as_str()
                ));
            }
        }
        if let Some(reported) = status.current_instance_count() {
            if i64::try_from(fleet.instances.len()).unwrap_or(i64::MAX) != i64::from(reported) {
                mismatches.push(format!(
                    "CurrentInstanceCount: DescribeEndpoint reports {reported} instances, the fleet has {}",
                    fleet.instances.len()
                ));
            }
        }
    }
    for component in &description.inference_components {
        let ComponentDescription::Described(output) = component else { continue };
        let Some(runtime) = output.runtime_config() else { continue };
        let name = output.inference_component_name().unwrap_or_default();
        let mut copies_per_type: BTreeMap<&str, f64> = BTreeMap::new();
        let mut copies = 0.0;
        for copy in fleet.copies.iter().filter(|copy| copy.inference_component_name == name) {
            // A copy on an unknown instance is left to validation, which names it.
            if let Some(instance_type) = type_of.get(copy.instance_id.as_str()) {
                *copies_per_type.entry(instance_type).or_default() += f64::from(copy.copy_count);
            }
            copies += f64::from(copy.copy_count);
        }
        for placed in runtime.placement_status() {
            let (Some(instance_type), Some(reported)) = (placed.instance_type(), placed.current_copy_count()) else {
                continue;
            };
            let supplied_count = copies_per_type.get(instance_type.as_str()).copied().unwrap_or(0.0);
            if supplied_count != f64::from(reported) {
                mismatches.push(format!(
                    "{name} on {}: DescribeInferenceComponent reports {reported} copies, the fleet has {supplied_count}",
                    instance_type.as_str()
                ));
            }
        }
        if let Some(reported) = runtime.current_copy_count() {
            if copies != f64::from(reported) {
                mismatches.push(format!(
                    "{name}: DescribeInferenceComponent reports CurrentCopyCount {reported}, the fleet has {copies}"
                ));
            }
        }
    }
    if mismatches.is_empty() {
        Ok(())
    } else {
        Err(SageMakerError::FleetMismatch(mismatches))
    }
}

/// The requests that carry out a plan, built but not sent (`.send_with(&client)` sends one).
///
/// SageMaker places copies and picks instances itself, so the plan's per-instance actions
/// (`LaunchInstance`, `PlaceCopy` on a given instance, `TerminateInstance`) have no request; what
/// the API accepts is the number of copies per component and, for a single-model endpoint, the
/// number of instances. There is no request for instances per pool type either: the platform
/// walks the pool priorities itself.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PlanRequests {
    /// One per inference component whose copy count in the plan's final fleet differs from the
    /// running fleet's, in component order.
    pub copy_counts: Vec<CopyCountRequest>,
    /// For a single-model endpoint whose instance count changes: `UpdateEndpointWeightsAndCapacities`
    /// with the variant's `DesiredInstanceCount` set to the final fleet's size.
    pub instance_count: Option<UpdateEndpointWeightsAndCapacitiesInputBuilder>,
}

/// `UpdateInferenceComponentRuntimeConfig` for one component.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CopyCountRequest {
    /// The component.
    pub inference_component_name: String,
    /// Copies running now (in the supplied fleet).
    pub current: u32,
    /// Copies in the plan's final fleet: the desired count, less what the plan could not place.
    pub planned: u32,
    /// The request, with `DesiredRuntimeConfig.CopyCount` = `planned`.
    pub request: UpdateInferenceComponentRuntimeConfigInputBuilder,
}

/// The requests that carry out `plan` (see [`PlanRequests`]). The plan must verify against the
/// problem: no request is made from a plan that breaks a constraint.
pub fn requests_for_plan(problem: &Problem, plan: &Plan) -> Result<PlanRequests, SageMakerError> {
    let violations = crate::verify(problem, plan);
    if !violations.is_empty() {
        return Err(SageMakerError::PlanDoesNotVerify(violations.iter().map(ToString::to_string).collect()));
    }
    let (final_fleet, _) = FinalFleet::apply(problem, &plan.actions);
    let mut current = vec![0u64; problem.components().len()];
    for instance in problem.fleet() {
        for &(component, count) in &instance.copies {
            if let Some(slot) = current.get_mut(component) {
                *slot += u64::from(count);
            }
        }
    }
    let mut planned = vec![0u64; problem.components().len()];
    for instance in &final_fleet.instances {
        for (&component, &count) in &instance.copies {
            if let Some(slot) = planned.get_mut(component) {
                *slot += u64::from(count);
            }
        }
    }
    let mut requests = PlanRequests { copy_counts: Vec::new(), instance_count: None };
    if problem.is_single_model() {
        let (now, after) = (problem.fleet().len() as u64, final_fleet.instances.len() as u64);
        if now != after {
            let count = api_count(after, "DesiredInstanceCount")?;
            let capacity =
                DesiredWeightAndCapacity::builder().variant_name(problem.variant_name()).desired_instance_count(count);
            requests.instance_count = Some(
                UpdateEndpointWeightsAndCapacitiesInput::builder()
                    .endpoint_name(problem.endpoint_name())
                    .desired_weights_and_capacities(capacity.build()),
            );
        }
        return Ok(requests);
    }
    for ((component, &now), &after) in problem.components().iter().zip(&current).zip(&planned) {
        if now == after {
            continue;
        }
        let count = api_count(after, &format!("{} CopyCount", component.name))?;
        let request = UpdateInferenceComponentRuntimeConfigInput::builder()
            .inference_component_name(component.name.clone())
            .desired_runtime_config(InferenceComponentRuntimeConfig::builder().copy_count(count).build());
        requests.copy_counts.push(CopyCountRequest {
            inference_component_name: component.name.clone(),
            current: u32::try_from(now).unwrap_or(u32::MAX),
            planned: u32::try_from(after).unwrap_or(u32::MAX),
            request,
        });
    }
    Ok(requests)
}

fn api_count(count: u64, what: &str) -> Result<i32, SageMakerError> {
    i32::try_from(count).map_err(|_| SageMakerError::CountTooLarge { what: what.to_string(), count })
}

#[cfg(test)]
mod tests {
    use aws_sdk_sagemaker::types::{
        AvailabilityZoneBalanceEnforcementMode, InferenceComponentAvailabilityZoneBalance,
        InferenceComponentPlacementStatus, InferenceComponentPlacementStrategy, InferenceComponentRuntimeConfigSummary,
        InferenceComponentSpecification, InferenceComponentSpecificationSummary, InstancePool, InstancePoolSummary,
        ManagedInstanceScalingScaleInStrategy, ManagedInstanceScalingStatus, ProductionVariantInstanceType,
        ProductionVariantManagedInstanceScalingScaleInPolicy,
    };

    use super::*;
    use crate::model::{FleetCopy, FleetInstance};

    const P5: ProductionVariantInstanceType = ProductionVariantInstanceType::MlP548Xlarge;
    const G6: ProductionVariantInstanceType = ProductionVariantInstanceType::MlG648Xlarge;

    fn requirements(accelerators: f32, cpus: f32, memory: i32) -> InferenceComponentComputeResourceRequirements {
        InferenceComponentComputeResourceRequirements::builder()
            .number_of_accelerator_devices_required(accelerators)
            .number_of_cpu_cores_required(cpus)
            .min_memory_required_in_mb(memory)
            .build()
    }

    fn spread(max_imbalance: i32) -> InferenceComponentSchedulingConfig {
        InferenceComponentSchedulingConfig::builder()
            .placement_strategy(InferenceComponentPlacementStrategy::Spread)
            .availability_zone_balance(
                InferenceComponentAvailabilityZoneBalance::builder()
                    .enforcement_mode(AvailabilityZoneBalanceEnforcementMode::Permissive)
                    .max_imbalance(max_imbalance)
                    .build(),
            )
            .build()
    }

    /// The contract's example endpoint as `DescribeEndpointConfig` returns it.
    fn variant() -> ProductionVariant {
        ProductionVariant::builder()
            .variant_name("AllTraffic")
            .initial_instance_count(1)
            .instance_pools(InstancePool::builder().instance_type(P5).priority(1).build())
            .instance_pools(
                InstancePool::builder().instance_type(G6).priority(2).model_name_override("llm-int4").build(),
            )
            .managed_instance_scaling(
                ProductionVariantManagedInstanceScaling::builder()
                    .status(ManagedInstanceScalingStatus::Enabled)
                    .min_instance_count(1)
                    .max_instance_count(16)
                    .scale_in_policy(
                        ProductionVariantManagedInstanceScalingScaleInPolicy::builder()
                            .strategy(ManagedInstanceScalingScaleInStrategy::Consolidation)
                            .cooldown_in_minutes(20)
                            .maximum_step_size(1)
                            .build(),
                    )
                    .build(),
            )
            .build()
    }

    /// `llm`, running, with one specification per pool type.
    fn llm() -> DescribeInferenceComponentOutput {
        let summary = |instance_type: ProductionVariantInstanceType, model: &str, accelerators: f32, memory: i32| {
            InferenceComponentSpecificationSummary::builder()
                .instance_type(instance_type)
                .model_name(model)
                .compute_resource_requirements(requirements(accelerators, 8.0, memory))
                .scheduling_config(spread(1))
                .build()
        };
        DescribeInferenceComponentOutput::builder()
            .inference_component_name("llm")
            .endpoint_name("agents")
            .variant_name("AllTraffic")
            .specifications(summary(P5, "llm-tp4", 4.0, 65_536))
            .specifications(summary(G6, "llm-int4", 2.0, 32_768))
            .runtime_config(
                InferenceComponentRuntimeConfigSummary::builder()
                    .desired_copy_count(4)
                    .current_copy_count(1)
                    .placement_status(
                        InferenceComponentPlacementStatus::builder().instance_type(P5).current_copy_count(1).build(),
                    )
                    .build(),
            )
            .build()
    }

    /// `embed`, about to be created, with one specification for every type.
    fn embed() -> CreateInferenceComponentInput {
        CreateInferenceComponentInput::builder()
            .inference_component_name("embed")
            .endpoint_name("agents")
            .specification(
                InferenceComponentSpecification::builder()
                    .model_name("embed-v2")
                    .compute_resource_requirements(requirements(1.0, 0.3, 2048))
                    .scheduling_config(
                        InferenceComponentSchedulingConfig::builder()
                            .placement_strategy(InferenceComponentPlacementStrategy::Binpack)
                            .build(),
                    )
                    .build(),
            )
            .runtime_config(InferenceComponentRuntimeConfig::builder().copy_count(2).build())
            .build()
            .expect("the builder has no required fields")
    }

    fn supplied() -> CallerSupplied {
        CallerSupplied {
            capacity: vec![CapacityEntry {
                instance_type: "ml.p5.48xlarge".into(),
                availability_zone: "us-east-1b".into(),
                available: Some(0),
                reserved: 0,
            }],
            fleet: Fleet {
                instances: vec![FleetInstance {
                    instance_id: "i-01".into(),
                    instance_type: "ml.p5.48xlarge".into(),
                    availability_zone: "us-east-1a".into(),
                    reserved: false,
                    state: None,
                }],
                copies: vec![FleetCopy {
                    inference_component_name: "llm".into(),
                    instance_id: "i-01".into(),
                    copy_count: 1,
                }],
            },
            ..CallerSupplied::in_zones(["us-east-1a", "us-east-1b"])
        }
    }

    /// The scenario JSON the values above stand for, written by hand (contract §1).
    const EQUIVALENT_JSON: &str = r#"{
      "AvailabilityZones": ["us-east-1a", "us-east-1b"],
      "Capacity": [{"InstanceType": "ml.p5.48xlarge", "AvailabilityZone": "us-east-1b", "Available": 0}],
      "Endpoint": {
        "EndpointName": "agents", "VariantName": "AllTraffic",
        "InstancePools": [
          {"InstanceType": "ml.p5.48xlarge", "Priority": 1},
          {"InstanceType": "ml.g6.48xlarge", "Priority": 2, "ModelNameOverride": "llm-int4"}
        ],
        "ManagedInstanceScaling": {"Status": "ENABLED", "MinInstanceCount": 1, "MaxInstanceCount": 16,
          "ScaleInPolicy": {"Strategy": "CONSOLIDATION", "CooldownInMinutes": 20, "MaximumStepSize": 1}}
      },
      "InferenceComponents": [
        {"InferenceComponentName": "llm",
         "Specifications": [
           {"InstanceType": "ml.p5.48xlarge", "ModelName": "llm-tp4",
            "ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 4,
              "NumberOfCpuCoresRequired": 8, "MinMemoryRequiredInMb": 65536},
            "SchedulingConfig": {"PlacementStrategy": "SPREAD",
              "AvailabilityZoneBalance": {"EnforcementMode": "PERMISSIVE", "MaxImbalance": 1}}},
           {"InstanceType": "ml.g6.48xlarge", "ModelName": "llm-int4",
            "ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 2,
              "NumberOfCpuCoresRequired": 8, "MinMemoryRequiredInMb": 32768},
            "SchedulingConfig": {"PlacementStrategy": "SPREAD",
              "AvailabilityZoneBalance": {"EnforcementMode": "PERMISSIVE", "MaxImbalance": 1}}}
         ],
         "RuntimeConfig": {"CopyCount": 4}},
        {"InferenceComponentName": "embed",
         "Specification": {"ModelName": "embed-v2",
           "ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 1,
             "NumberOfCpuCoresRequired": 0.3, "MinMemoryRequiredInMb": 2048},
           "SchedulingConfig": {"PlacementStrategy": "BINPACK"}},
         "RuntimeConfig": {"CopyCount": 2}}
      ],
      "Fleet": {
        "Instances": [{"InstanceId": "i-01", "InstanceType": "ml.p5.48xlarge",
                       "AvailabilityZone": "us-east-1a", "Reserved": false}],
        "Copies": [{"InferenceComponentName": "llm", "InstanceId": "i-01", "CopyCount": 1}]
      }
    }"#;

    fn invalid(result: Result<Problem, SageMakerError>) -> String {
        match result {
            Err(SageMakerError::Invalid(error)) => error.to_string(),
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    fn json_error(text: &str) -> String {
        Problem::from_json(text).expect_err("the JSON is invalid").to_string()
    }

    #[test]
    fn sdk_values_convert_to_the_scenario_of_the_equivalent_json() {
        let (variant, llm, embed) = (variant(), llm(), embed());
        let description = EndpointDescription::new("agents", &variant).with_component(&llm).with_component(&embed);
        let (scenario, problem) = scenario_and_problem(&description, &supplied()).expect("valid");
        let expected = crate::json::scenario_from_json(EQUIVALENT_JSON).expect("valid JSON");
        // Every field fleetplan reads, compared as the plain model (f32 0.3 arrives as 0.3, not 0.30000001192092896).
        assert_eq!(scenario, expected);
        assert_eq!(problem, Problem::from_json(EQUIVALENT_JSON).expect("valid JSON"));
        let cpu = scenario.inference_components[1]
            .specification
            .as_ref()
            .map(|spec| (spec.compute_resource_requirements.number_of_cpu_cores_required, spec.model_name.as_deref()));
        assert_eq!(cpu, Some((Some(0.3), Some("embed-v2"))));
    }

    #[test]
    fn a_single_model_endpoint_is_planned_by_its_live_desired_instance_count() {
        let variant = ProductionVariant::builder()
            .variant_name("blue")
            .model_name("whisper")
            .instance_type(ProductionVariantInstanceType::MlG512Xlarge)
            .initial_instance_count(2)
            .build();
        let without_status = EndpointDescription::new("asr", &variant);
        let (scenario, _) = scenario_and_problem(&without_status, &CallerSupplied::in_zones(["a"])).expect("valid");
        assert_eq!(scenario.endpoint.desired_instance_count, Some(2));
        assert_eq!(scenario.endpoint.instance_type.as_deref(), Some("ml.g5.12xlarge"));
        assert_eq!(scenario.endpoint.model_name.as_deref(), Some("whisper"));
        let status = ProductionVariantSummary::builder().variant_name("blue").desired_instance_count(3).build();
        let (scenario, problem) =
            scenario_and_problem(&without_status.with_status(&status), &CallerSupplied::in_zones(["a"]))
                .expect("valid");
        assert_eq!(scenario.endpoint.desired_instance_count, Some(3));
        assert!(problem.is_single_model());
        assert_eq!(problem.components()[0].copy_count, 3);
    }

    #[test]
    fn bad_sdk_values_get_the_messages_of_the_equivalent_json() {
        // Priority out of range, an instance type the catalogue lacks, fractional accelerators,
        // a negative MaxImbalance, a missing MinMemoryRequiredInMb and an unknown strategy.
        let variant = ProductionVariant::builder()
            .variant_name("AllTraffic")
            .instance_pools(InstancePool::builder().instance_type(P5).priority(7).build())
            .instance_pools(
                InstancePool::builder()
                    .instance_type(ProductionVariantInstanceType::from("ml.x9.huge"))
                    .priority(2)
                    .build(),
            )
            .build();
        let component = DescribeInferenceComponentOutput::builder()
            .inference_component_name("llm")
            .specification(
                InferenceComponentSpecificationSummary::builder()
                    .compute_resource_requirements(
                        InferenceComponentComputeResourceRequirements::builder()
                            .number_of_accelerator_devices_required(1.5)
                            .build(),
                    )
                    .scheduling_config(
                        InferenceComponentSchedulingConfig::builder()
                            .placement_strategy(InferenceComponentPlacementStrategy::from("SCATTER"))
                            .availability_zone_balance(
                                InferenceComponentAvailabilityZoneBalance::builder().max_imbalance(-1).build(),
                            )
                            .build(),
                    )
                    .build(),
            )
            .runtime_config(InferenceComponentRuntimeConfigSummary::builder().desired_copy_count(2).build())
            .build();
        let description = EndpointDescription::new("agents", &variant).with_component(&component);
        let from_sdk = invalid(problem(&description, &CallerSupplied::in_zones(["us-east-1a"])));
        let from_json = json_error(
            r#"{"AvailabilityZones": ["us-east-1a"],
                "Endpoint": {"EndpointName": "agents", "VariantName": "AllTraffic",
                  "InstancePools": [{"InstanceType": "ml.p5.48xlarge", "Priority": 7},
                                    {"InstanceType": "ml.x9.huge", "Priority": 2}]},
                "InferenceComponents": [{"InferenceComponentName": "llm",
                  "Specification": {"ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 1.5},
                    "SchedulingConfig": {"PlacementStrategy": "SCATTER",
                      "AvailabilityZoneBalance": {"MaxImbalance": -1}}},
                  "RuntimeConfig": {"CopyCount": 2}}]}"#,
        );
        assert_eq!(from_sdk, from_json);
        assert!(from_sdk.contains("Endpoint.InstancePools[0].Priority: 7 is above the maximum 5"), "{from_sdk}");
        assert!(
            from_sdk.contains(
                "InferenceComponents[0].Specification.ComputeResourceRequirements.NumberOfAcceleratorDevicesRequired: \
                 expected an integer, found 1.5"
            ),
            "{from_sdk}"
        );
        assert!(
            from_sdk.contains(
                "InferenceComponents[0].Specification.ComputeResourceRequirements.MinMemoryRequiredInMb: is required"
            ),
            "{from_sdk}"
        );
    }

    #[test]
    fn a_missing_copy_count_gets_the_message_of_the_equivalent_json() {
        let variant = variant();
        let component = DescribeInferenceComponentOutput::builder()
            .inference_component_name("llm")
            .specification(
                InferenceComponentSpecificationSummary::builder()
                    .compute_resource_requirements(requirements(1.0, 1.0, 1024))
                    .build(),
            )
            .runtime_config(InferenceComponentRuntimeConfigSummary::builder().current_copy_count(0).build())
            .build();
        let description = EndpointDescription::new("agents", &variant).with_component(&component);
        let from_sdk = invalid(problem(&description, &CallerSupplied::in_zones(["us-east-1a"])));
        let from_json = json_error(
            r#"{"AvailabilityZones": ["us-east-1a"],
                "Endpoint": {"EndpointName": "agents", "VariantName": "AllTraffic",
                  "InstancePools": [{"InstanceType": "ml.p5.48xlarge", "Priority": 1},
                    {"InstanceType": "ml.g6.48xlarge", "Priority": 2, "ModelNameOverride": "llm-int4"}],
                  "ManagedInstanceScaling": {"Status": "ENABLED", "MinInstanceCount": 1, "MaxInstanceCount": 16,
                    "ScaleInPolicy": {"Strategy": "CONSOLIDATION", "CooldownInMinutes": 20, "MaximumStepSize": 1}}},
                "InferenceComponents": [{"InferenceComponentName": "llm",
                  "Specification": {"ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 1,
                    "NumberOfCpuCoresRequired": 1, "MinMemoryRequiredInMb": 1024}},
                  "RuntimeConfig": {}}]}"#,
        );
        assert_eq!(from_sdk, from_json);
        assert_eq!(from_sdk, "InferenceComponents[0].RuntimeConfig.CopyCount: is required");
    }

    #[test]
    fn a_nan_requirement_is_named_by_its_path() {
        let variant = variant();
        let component = DescribeInferenceComponentOutput::builder()
            .inference_component_name("llm")
            .specification(
                InferenceComponentSpecificationSummary::builder()
                    .compute_resource_requirements(requirements(1.0, f32::NAN, 1024))
                    .build(),
            )
            .runtime_config(InferenceComponentRuntimeConfigSummary::builder().desired_copy_count(1).build())
            .build();
        let description = EndpointDescription::new("agents", &variant).with_component(&component);
        assert_eq!(
            invalid(problem(&description, &CallerSupplied::in_zones(["us-east-1a"]))),
            "InferenceComponents[0].Specification.ComputeResourceRequirements.NumberOfCpuCoresRequired: NaN is not a number"
        );
    }

    #[test]
    fn live_counts_that_disagree_with_the_fleet_are_refused() {
        let (variant, llm) = (variant(), llm());
        let status = ProductionVariantSummary::builder()
            .variant_name("AllTraffic")
            .current_instance_count(1)
            .instance_pools(InstancePoolSummary::builder().instance_type(P5).current_instance_count(1).build())
            .instance_pools(InstancePoolSummary::builder().instance_type(G6).current_instance_count(0).build())
            .build();
        let description = EndpointDescription::new("agents", &variant).with_status(&status).with_component(&llm);
        assert!(problem(&description, &supplied()).is_ok());
        let mut stale = supplied();
        stale.fleet.copies.clear();
        stale.fleet.instances[0].instance_type = "ml.g6.48xlarge".into();
        let error = problem(&description, &stale).expect_err("stale fleet");
        assert_eq!(
            error.to_string(),
            "the supplied fleet disagrees with SageMaker's live counts:\n\
             ml.p5.48xlarge: DescribeEndpoint reports 1 instances, the fleet has 0\n\
             ml.g6.48xlarge: DescribeEndpoint reports 0 instances, the fleet has 1\n\
             llm on ml.p5.48xlarge: DescribeInferenceComponent reports 1 copies, the fleet has 0\n\
             llm: DescribeInferenceComponent reports CurrentCopyCount 1, the fleet has 0"
        );
    }

    #[test]
    fn describe_results_pick_the_named_variant() {
        let config = DescribeEndpointConfigOutput::builder()
            .production_variants(variant())
            .production_variants(ProductionVariant::builder().variant_name("Shadow").build())
            .build();
        let endpoint = DescribeEndpointOutput::builder()
            .endpoint_name("agents")
            .production_variants(
                ProductionVariantSummary::builder().variant_name("AllTraffic").desired_instance_count(2).build(),
            )
            .build();
        let description = EndpointDescription::from_describe(&endpoint, &config, Some("AllTraffic")).expect("found");
        assert_eq!(description.endpoint_name, "agents");
        assert_eq!(description.variant_status.and_then(|status| status.desired_instance_count()), Some(2));
        let error = EndpointDescription::from_describe(&endpoint, &config, None).expect_err("two variants");
        assert_eq!(
            error.to_string(),
            r#"the endpoint config has 2 production variants ["AllTraffic", "Shadow"]: name one"#
        );
        let error = EndpointDescription::from_describe(&endpoint, &config, Some("Blue")).expect_err("no such variant");
        assert_eq!(
            error.to_string(),
            r#"the endpoint config has no production variant "Blue" (it has ["AllTraffic", "Shadow"])"#
        );
    }

    #[test]
    fn a_component_of_another_endpoint_is_refused() {
        let variant = variant();
        let other =
            DescribeInferenceComponentOutput::builder().inference_component_name("x").endpoint_name("other").build();
        let description = EndpointDescription::new("agents", &variant).with_component(&other);
        assert_eq!(
            problem(&description, &supplied()).expect_err("elsewhere").to_string(),
            "inference component 0 is on other/AllTraffic, not on the described endpoint variant agents/AllTraffic"
        );
    }

    #[test]
    fn a_plan_becomes_copy_count_requests_for_changed_components() {
        let (variant, llm, embed) = (variant(), llm(), embed());
        let description = EndpointDescription::new("agents", &variant).with_component(&llm).with_component(&embed);
        let problem = problem(&description, &supplied()).expect("valid");
        let plan = crate::plan_greedy(&problem);
        assert!(plan.unplaced.is_empty(), "{:?}", plan.unplaced);
        let requests = requests_for_plan(&problem, &plan).expect("verifies");
        let summary: Vec<_> = requests
            .copy_counts
            .iter()
            .map(|request| (request.inference_component_name.as_str(), request.current, request.planned))
            .collect();
        assert_eq!(summary, vec![("llm", 1, 4), ("embed", 0, 2)]);
        let built = requests.copy_counts[0].request.clone().build().expect("complete request");
        assert_eq!(built.inference_component_name(), Some("llm"));
        assert_eq!(built.desired_runtime_config().and_then(InferenceComponentRuntimeConfig::copy_count), Some(4));
        assert_eq!(requests.instance_count, None);

        // Nothing to change: no request.
        let mut settled = scenario_and_problem(&description, &supplied()).expect("valid").0;
        settled.inference_components[0].runtime_config.copy_count = 1;
        settled.inference_components[1].runtime_config.copy_count = 0;
        let settled = Problem::new(&settled).expect("valid");
        let requests = requests_for_plan(&settled, &crate::plan_greedy(&settled)).expect("verifies");
        assert!(requests.copy_counts.is_empty());
    }

    #[test]
    fn a_single_model_plan_becomes_an_instance_count_request() {
        let variant = ProductionVariant::builder()
            .variant_name("blue")
            .instance_type(ProductionVariantInstanceType::MlG512Xlarge)
            .initial_instance_count(3)
            .build();
        let description = EndpointDescription::new("asr", &variant);
        let problem = problem(&description, &CallerSupplied::in_zones(["a", "b"])).expect("valid");
        let requests = requests_for_plan(&problem, &crate::plan_greedy(&problem)).expect("verifies");
        assert!(requests.copy_counts.is_empty());
        let request = requests.instance_count.expect("a request").build().expect("complete request");
        assert_eq!(request.endpoint_name(), Some("asr"));
        let capacities = request.desired_weights_and_capacities();
        assert_eq!(capacities.len(), 1);
        assert_eq!(capacities[0].variant_name(), Some("blue"));
        assert_eq!(capacities[0].desired_instance_count(), Some(3));
    }

    #[test]
    fn a_plan_that_does_not_verify_makes_no_request() {
        let (variant, llm) = (variant(), llm());
        let description = EndpointDescription::new("agents", &variant).with_component(&llm);
        let problem = problem(&description, &supplied()).expect("valid");
        let mut plan = crate::plan_greedy(&problem);
        plan.actions.push(crate::Action::TerminateInstance { instance_id: "i-99".into() });
        let error = requests_for_plan(&problem, &plan).expect_err("unknown instance");
        assert!(matches!(error, SageMakerError::PlanDoesNotVerify(_)), "{error}");
    }
}
