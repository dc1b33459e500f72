//! Scenario → the `Create*` requests that set its endpoint up: the inverse of
//! [`scenario_and_problem`](super::scenario_and_problem).

use aws_sdk_sagemaker::operation::create_endpoint::CreateEndpointInput;
use aws_sdk_sagemaker::operation::create_endpoint_config::CreateEndpointConfigInput;
use aws_sdk_sagemaker::operation::create_inference_component::CreateInferenceComponentInput;
use aws_sdk_sagemaker::types::{
    AvailabilityZoneBalanceEnforcementMode, InferenceComponentAvailabilityZoneBalance,
    InferenceComponentComputeResourceRequirements, InferenceComponentPlacementStrategy,
    InferenceComponentRuntimeConfig, InferenceComponentSchedulingConfig, InferenceComponentSpecification, InstancePool,
    ManagedInstanceScalingScaleInStrategy, ManagedInstanceScalingStatus, ProductionVariant,
    ProductionVariantInstanceType, ProductionVariantManagedInstanceScaling,
    ProductionVariantManagedInstanceScalingScaleInPolicy,
};

use super::{api_count, json_number, CallerSupplied, SageMakerError};
use crate::model::{ComponentSpecification, InferenceComponent, ManagedInstanceScaling, Scenario, SchedulingConfig};
use crate::Problem;

/// The requests that create a scenario's endpoint and components, built but not sent, and what
/// they cannot carry.
///
/// Send them in field order: the endpoint config, the endpoint (it names the config), then the
/// components (they name the endpoint). The `*Input` structs hold the request's fields; send one
/// with the client's fluent builder, e.g.
/// `client.create_endpoint_config().set_endpoint_config_name(input.endpoint_config_name).set_production_variants(input.production_variants).send()`.
/// Fields fleetplan does not plan with (execution role, containers, tags, …) are left unset for
/// the caller to add; the fields are public.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ScenarioRequests {
    /// `CreateEndpointConfig`: `EndpointConfigName` = the endpoint's name, one production variant
    /// with the instance pools in priority order, `InitialInstanceCount` and managed instance scaling.
    pub endpoint_config: CreateEndpointConfigInput,
    /// `CreateEndpoint`: `EndpointName`, and `EndpointConfigName` of [`Self::endpoint_config`].
    pub endpoint: CreateEndpointInput,
    /// `CreateInferenceComponent` per component, in scenario order: specification(s) with compute
    /// resource requirements and scheduling config (placement strategy, AZ balance), and
    /// `RuntimeConfig.CopyCount`. Empty for a single-model endpoint.
    pub inference_components: Vec<CreateInferenceComponentInput>,
    /// The scenario's parts no SageMaker request holds (AZs, instance shapes, capacity, the fleet,
    /// capacity feedback): with the describe results they give the scenario back through
    /// [`scenario_and_problem`](super::scenario_and_problem).
    pub caller_supplied: CallerSupplied,
    /// The scenario's values the requests do not carry as they are: each is read back from the
    /// describe results differently (or not at all). Empty when the scenario round-trips exactly.
    pub omissions: Vec<Omission>,
}

/// A scenario value the `Create*` requests do not carry as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Omission {
    /// The scenario path (`Endpoint.DesiredInstanceCount`, `InferenceComponents[0].Specification…`).
    pub path: String,
    /// What the requests carry instead.
    pub reason: String,
}

impl Omission {
    fn new(path: impl Into<String>, reason: impl Into<String>) -> Self {
        Omission { path: path.into(), reason: reason.into() }
    }
}

impl std::fmt::Display for Omission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.reason)
    }
}

/// The unsent `CreateEndpointConfig`, `CreateEndpoint` and `CreateInferenceComponent` requests of
/// a scenario (see [`ScenarioRequests`]). The scenario is validated first: an invalid one gets
/// [`SageMakerError::Invalid`] with the messages [`Problem::new`] gives.
pub fn requests_for_scenario(scenario: &Scenario) -> Result<ScenarioRequests, SageMakerError> {
    let problem = Problem::new(scenario)?;
    let mut omissions = Vec::new();
    let endpoint_name = scenario.endpoint.endpoint_name.as_str();
    let variant_name = problem.variant_name();
    if scenario.endpoint.variant_name.is_empty() {
        omissions.push(Omission::new(
            "Endpoint.VariantName",
            format!("absent; the requests name the variant {variant_name:?}, as fleetplan does"),
        ));
    }
    let variant = production_variant(scenario, variant_name, &mut omissions)?;
    let endpoint_config = CreateEndpointConfigInput::builder()
        .endpoint_config_name(endpoint_name)
        .production_variants(variant)
        .build()
        .map_err(|error| not_built("CreateEndpointConfig", &error))?;
    let endpoint = CreateEndpointInput::builder()
        .endpoint_name(endpoint_name)
        .endpoint_config_name(endpoint_name)
        .build()
        .map_err(|error| not_built("CreateEndpoint", &error))?;
    let mut inference_components = Vec::with_capacity(scenario.inference_components.len());
    for (index, component) in scenario.inference_components.iter().enumerate() {
        let path = format!("InferenceComponents[{index}]");
        inference_components.push(inference_component(component, endpoint_name, variant_name, &path, &mut omissions)?);
    }
    let caller_supplied = CallerSupplied {
        availability_zones: scenario.availability_zones.clone(),
        instance_types: scenario.instance_types.clone(),
        capacity: scenario.capacity.clone(),
        fleet: scenario.fleet.clone(),
        now: scenario.now,
        capacity_error_ttl_seconds: scenario.capacity_error_ttl_seconds,
        capacity_events: scenario.capacity_events.clone(),
    };
    Ok(ScenarioRequests { endpoint_config, endpoint, inference_components, caller_supplied, omissions })
}

fn not_built(request: &str, error: &aws_sdk_sagemaker::error::BuildError) -> SageMakerError {
    SageMakerError::RequestNotBuilt { request: request.to_string(), message: error.to_string() }
}

fn production_variant(
    scenario: &Scenario,
    variant_name: &str,
    omissions: &mut Vec<Omission>,
) -> Result<ProductionVariant, SageMakerError> {
    let endpoint = &scenario.endpoint;
    let mut variant = ProductionVariant::builder()
        .variant_name(variant_name)
        .set_model_name(endpoint.model_name.clone())
        .set_instance_type(endpoint.instance_type.as_deref().map(ProductionVariantInstanceType::from));
    // SageMaker tries the pools by priority whatever their order; listing them so reads as the
    // fallback order. A stable sort keeps equal priorities (which validation refuses) in place.
    let mut pools: Vec<_> = endpoint.instance_pools.iter().collect();
    pools.sort_by_key(|pool| pool.priority);
    if pools.iter().zip(&endpoint.instance_pools).any(|(sorted, listed)| !std::ptr::eq(*sorted, listed)) {
        omissions.push(Omission::new("Endpoint.InstancePools", "sent in priority order, not in the scenario's order"));
    }
    for pool in pools {
        variant = variant.instance_pools(
            InstancePool::builder()
                .instance_type(ProductionVariantInstanceType::from(pool.instance_type.as_str()))
                .priority(i32::from(pool.priority))
                .set_model_name_override(pool.model_name_override.clone())
                .build(),
        );
    }
    let initial_instance_count = if scenario.inference_components.is_empty() {
        endpoint.desired_instance_count
    } else {
        // Copy counts drive an endpoint with components; its variant still starts with instances.
        let minimum = endpoint.managed_instance_scaling.as_ref().and_then(|scaling| scaling.min_instance_count);
        let count = endpoint.desired_instance_count.or(minimum).unwrap_or(1).max(1);
        if endpoint.desired_instance_count.is_some() {
            omissions.push(Omission::new(
                "Endpoint.DesiredInstanceCount",
                format!(
                    "sent as InitialInstanceCount {count}; with inference components the copy counts drive \
                     the endpoint and the count is not read back"
                ),
            ));
        }
        Some(count)
    };
    if let Some(count) = initial_instance_count {
        variant = variant.initial_instance_count(api_count(u64::from(count), "Endpoint.DesiredInstanceCount")?);
    }
    if let Some(scaling) = &endpoint.managed_instance_scaling {
        variant = variant.managed_instance_scaling(managed_instance_scaling(scaling)?);
    }
    Ok(variant.build())
}

fn managed_instance_scaling(
    scaling: &ManagedInstanceScaling,
) -> Result<ProductionVariantManagedInstanceScaling, SageMakerError> {
    let path = "Endpoint.ManagedInstanceScaling";
    let count = |value: Option<u32>, key: &str| {
        value.map(|value| api_count(u64::from(value), &format!("{path}.{key}"))).transpose()
    };
    let scale_in_policy = match &scaling.scale_in_policy {
        Some(policy) => Some(
            ProductionVariantManagedInstanceScalingScaleInPolicy::builder()
                .set_strategy(
                    policy.strategy.map(|strategy| ManagedInstanceScalingScaleInStrategy::from(strategy.as_str())),
                )
                .set_cooldown_in_minutes(count(policy.cooldown_in_minutes, "ScaleInPolicy.CooldownInMinutes")?)
                .set_maximum_step_size(count(policy.maximum_step_size, "ScaleInPolicy.MaximumStepSize")?)
                .build(),
        ),
        None => None,
    };
    Ok(ProductionVariantManagedInstanceScaling::builder()
        .set_status(scaling.status.map(|status| ManagedInstanceScalingStatus::from(status.as_str())))
        .set_min_instance_count(count(scaling.min_instance_count, "MinInstanceCount")?)
        .set_max_instance_count(count(scaling.max_instance_count, "MaxInstanceCount")?)
        .set_scale_in_policy(scale_in_policy)
        .build())
}

fn inference_component(
    component: &InferenceComponent,
    endpoint_name: &str,
    variant_name: &str,
    path: &str,
    omissions: &mut Vec<Omission>,
) -> Result<CreateInferenceComponentInput, SageMakerError> {
    let copy_count =
        api_count(u64::from(component.runtime_config.copy_count), &format!("{path}.RuntimeConfig.CopyCount"))?;
    let mut input = CreateInferenceComponentInput::builder()
        .inference_component_name(component.inference_component_name.as_str())
        .endpoint_name(endpoint_name)
        .variant_name(variant_name)
        .runtime_config(InferenceComponentRuntimeConfig::builder().copy_count(copy_count).build());
    if let Some(spec) = &component.specification {
        input = input.specification(specification(spec, &format!("{path}.Specification"), omissions)?);
    }
    if let Some(specs) = &component.specifications {
        let mut built = Vec::with_capacity(specs.len());
        for (index, spec) in specs.iter().enumerate() {
            built.push(specification(spec, &format!("{path}.Specifications[{index}]"), omissions)?);
        }
        input = input.set_specifications(Some(built));
    }
    input.build().map_err(|error| not_built("CreateInferenceComponent", &error))
}

fn specification(
    spec: &ComponentSpecification,
    path: &str,
    omissions: &mut Vec<Omission>,
) -> Result<InferenceComponentSpecification, SageMakerError> {
    let requirements = &spec.compute_resource_requirements;
    let requirements_path = format!("{path}.ComputeResourceRequirements");
    let accelerators = requirements.number_of_accelerator_devices_required.map(|count| {
        api_f32(f64::from(count), &format!("{requirements_path}.NumberOfAcceleratorDevicesRequired"), omissions)
    });
    let cores = requirements
        .number_of_cpu_cores_required
        .map(|cores| api_f32(cores, &format!("{requirements_path}.NumberOfCpuCoresRequired"), omissions));
    let memory = api_megabytes(
        requirements.min_memory_required_in_mb,
        &format!("{requirements_path}.MinMemoryRequiredInMb"),
        omissions,
    )?;
    let compute = InferenceComponentComputeResourceRequirements::builder()
        .set_number_of_accelerator_devices_required(accelerators)
        .set_number_of_cpu_cores_required(cores)
        .min_memory_required_in_mb(memory)
        .build();
    let scheduling = match &spec.scheduling_config {
        Some(config) => Some(scheduling_config(config, &format!("{path}.SchedulingConfig"))?),
        None => None,
    };
    Ok(InferenceComponentSpecification::builder()
        .set_instance_type(spec.instance_type.as_deref().map(ProductionVariantInstanceType::from))
        .set_model_name(spec.model_name.clone())
        .compute_resource_requirements(compute)
        .set_scheduling_config(scheduling)
        .build())
}

fn scheduling_config(
    config: &SchedulingConfig,
    path: &str,
) -> Result<InferenceComponentSchedulingConfig, SageMakerError> {
    let balance = match &config.availability_zone_balance {
        Some(balance) => Some(
            InferenceComponentAvailabilityZoneBalance::builder()
                .set_enforcement_mode(
                    balance.enforcement_mode.map(|mode| AvailabilityZoneBalanceEnforcementMode::from(mode.as_str())),
                )
                .set_max_imbalance(
                    balance
                        .max_imbalance
                        .map(|value| {
                            api_count(u64::from(value), &format!("{path}.AvailabilityZoneBalance.MaxImbalance"))
                        })
                        .transpose()?,
                )
                .build(),
        ),
        None => None,
    };
    Ok(InferenceComponentSchedulingConfig::builder()
        .set_placement_strategy(
            config.placement_strategy.map(|strategy| InferenceComponentPlacementStrategy::from(strategy.as_str())),
        )
        .set_availability_zone_balance(balance)
        .build())
}

/// The API's 32-bit float for `value`; an omission when the describe direction, which reads a
/// float as the decimal it prints as, would not give `value` back.
fn api_f32(value: f64, path: &str, omissions: &mut Vec<Omission>) -> f32 {
    let narrowed = value as f32;
    if json_number(narrowed).and_then(|number| number.as_f64()) != Some(value) {
        omissions.push(Omission::new(path, format!("{value} is sent as the API's 32-bit float {narrowed}")));
    }
    narrowed
}

/// The API's whole MiB for `value`, rounded up (a minimum must still be met); an omission when
/// that changes it.
fn api_megabytes(value: f64, path: &str, omissions: &mut Vec<Omission>) -> Result<i32, SageMakerError> {
    let whole = value.ceil();
    if !(0.0..=f64::from(i32::MAX)).contains(&whole) {
        // Validation keeps the value finite and at least 128: only a huge one gets here.
        return Err(SageMakerError::CountTooLarge { what: path.to_string(), count: whole as u64 });
    }
    if whole != value {
        omissions.push(Omission::new(path, format!("{value} is sent rounded up to {whole}: the API takes whole MiB")));
    }
    Ok(whole as i32)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use aws_sdk_sagemaker::operation::describe_endpoint::DescribeEndpointOutput;
    use aws_sdk_sagemaker::operation::describe_endpoint_config::DescribeEndpointConfigOutput;
    use aws_sdk_sagemaker::operation::describe_inference_component::DescribeInferenceComponentOutput;
    use aws_sdk_sagemaker::types::{InferenceComponentRuntimeConfigSummary, InferenceComponentSpecificationSummary};
    use serde_json::Value;

    use super::*;
    use crate::sagemaker::{scenario_and_problem, EndpointDescription};

    /// What `DescribeEndpoint`, `DescribeEndpointConfig` and `DescribeInferenceComponent` return
    /// once the requests are carried out: the fields the requests set, under the describe shapes.
    fn described(
        requests: &ScenarioRequests,
    ) -> (DescribeEndpointOutput, DescribeEndpointConfigOutput, Vec<DescribeInferenceComponentOutput>) {
        let endpoint = DescribeEndpointOutput::builder()
            .set_endpoint_name(requests.endpoint.endpoint_name.clone())
            .set_endpoint_config_name(requests.endpoint.endpoint_config_name.clone())
            .build();
        let config = DescribeEndpointConfigOutput::builder()
            .set_endpoint_config_name(requests.endpoint_config.endpoint_config_name.clone())
            .set_production_variants(requests.endpoint_config.production_variants.clone())
            .build();
        let summary = |spec: &InferenceComponentSpecification| {
            InferenceComponentSpecificationSummary::builder()
                .set_instance_type(spec.instance_type.clone())
                .set_model_name(spec.model_name.clone())
                .set_compute_resource_requirements(spec.compute_resource_requirements.clone())
                .set_scheduling_config(spec.scheduling_config.clone())
                .build()
        };
        let components = requests
            .inference_components
            .iter()
            .map(|input| {
                DescribeInferenceComponentOutput::builder()
                    .set_inference_component_name(input.inference_component_name.clone())
                    .set_endpoint_name(input.endpoint_name.clone())
                    .set_variant_name(input.variant_name.clone())
                    .set_specification(input.specification.as_ref().map(summary))
                    .set_specifications(input.specifications.as_ref().map(|specs| specs.iter().map(summary).collect()))
                    .runtime_config(
                        InferenceComponentRuntimeConfigSummary::builder()
                            .set_desired_copy_count(
                                input.runtime_config().and_then(InferenceComponentRuntimeConfig::copy_count),
                            )
                            .build(),
                    )
                    .build()
            })
            .collect();
        (endpoint, config, components)
    }

    /// Scenario → requests → describe outputs → scenario, and the same through the requests
    /// themselves (`CreateInferenceComponent` inputs are descriptions too).
    fn round_trip(scenario: &Scenario) -> (ScenarioRequests, Scenario) {
        let requests = requests_for_scenario(scenario).expect("a valid scenario");
        let (endpoint, config, components) = described(&requests);
        let mut description = EndpointDescription::from_describe(&endpoint, &config, None).expect("one variant");
        for component in &components {
            description = description.with_component(component);
        }
        let (from_describe, _) = scenario_and_problem(&description, &requests.caller_supplied).expect("valid");

        let variant = &requests.endpoint_config.production_variants()[0];
        let mut description = EndpointDescription::new(requests.endpoint.endpoint_name().unwrap_or_default(), variant);
        for input in &requests.inference_components {
            description = description.with_component(input);
        }
        let (from_requests, _) = scenario_and_problem(&description, &requests.caller_supplied).expect("valid");
        assert_eq!(from_describe, from_requests);
        (requests, from_describe)
    }

    /// The scenario paths (`Endpoint.InstancePools[0].Priority`) at which two documents differ.
    fn differences(left: &Value, right: &Value, path: &str, found: &mut Vec<String>) {
        let child = |key: &str| if path.is_empty() { key.to_string() } else { format!("{path}.{key}") };
        match (left, right) {
            (Value::Object(left), Value::Object(right)) => {
                for key in left.keys().chain(right.keys()).collect::<BTreeSet<_>>() {
                    let (l, r) = (left.get(key).unwrap_or(&Value::Null), right.get(key).unwrap_or(&Value::Null));
                    differences(l, r, &child(key), found);
                }
            }
            (Value::Array(left), Value::Array(right)) => {
                for index in 0..left.len().max(right.len()) {
                    let (l, r) = (left.get(index).unwrap_or(&Value::Null), right.get(index).unwrap_or(&Value::Null));
                    differences(l, r, &format!("{path}[{index}]"), found);
                }
            }
            _ if left != right => found.push(path.to_string()),
            _ => {}
        }
    }

    fn covers(omission: &str, path: &str) -> bool {
        path.strip_prefix(omission).is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
    }

    /// The round trip gives the scenario back except exactly where an omission says it cannot.
    fn assert_round_trips(name: &str, scenario: &Scenario) -> ScenarioRequests {
        let (requests, back) = round_trip(scenario);
        let mut differing = Vec::new();
        let as_value = |scenario: &Scenario| serde_json::to_value(scenario).expect("serialisable");
        differences(&as_value(scenario), &as_value(&back), "", &mut differing);
        let omitted: Vec<&str> = requests.omissions.iter().map(|omission| omission.path.as_str()).collect();
        let unexplained: Vec<_> =
            differing.iter().filter(|path| !omitted.iter().any(|omission| covers(omission, path))).collect();
        assert!(
            unexplained.is_empty(),
            "{name}: {unexplained:?} differ after the round trip and no omission names them"
        );
        let idle: Vec<_> =
            omitted.iter().filter(|omission| !differing.iter().any(|path| covers(omission, path))).collect();
        assert!(idle.is_empty(), "{name}: the omissions {idle:?} name values that round-trip");
        if requests.omissions.is_empty() {
            assert_eq!(back, *scenario, "{name}");
        }
        requests
    }

    /// Every scenario of `scenarios/` and every simulation script's scenario, by file name.
    fn bundled_scenarios() -> Vec<(String, Scenario)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
        let files = |directory: std::path::PathBuf| {
            let mut paths: Vec<_> = std::fs::read_dir(directory)
                .expect("scenarios/")
                .map(|entry| entry.expect("a directory entry").path())
                .filter(|path| path.extension().is_some_and(|extension| extension == "json"))
                .collect();
            paths.sort();
            paths
        };
        let mut scenarios = Vec::new();
        for path in files(root.clone()) {
            let text = std::fs::read_to_string(&path).expect("readable");
            let scenario = crate::json::scenario_from_json(&text).expect("a scenario");
            scenarios.push((path.display().to_string(), scenario));
        }
        for path in files(root.join("simulations")) {
            let script: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("readable")).expect("JSON");
            let text = serde_json::to_string(&script["Scenario"]).expect("JSON");
            let scenario = crate::json::scenario_from_json(&text).expect("a scenario");
            scenarios.push((path.display().to_string(), scenario));
        }
        scenarios
    }

    #[test]
    fn every_bundled_scenario_round_trips_through_the_create_requests_and_describe_outputs() {
        let scenarios = bundled_scenarios();
        assert_eq!(scenarios.len(), 10, "{:?}", scenarios.iter().map(|(name, _)| name).collect::<Vec<_>>());
        let mut exact = 0;
        for (name, scenario) in &scenarios {
            let requests = assert_round_trips(name, scenario);
            if requests.omissions.is_empty() {
                exact += 1;
            } else {
                // The simulation scripts leave the variant unnamed; nothing else is lost.
                let paths: Vec<_> = requests.omissions.iter().map(|omission| omission.path.as_str()).collect();
                assert_eq!(paths, ["Endpoint.VariantName"], "{name}");
            }
        }
        assert_eq!(exact, 5, "the five scenario files round-trip exactly");
    }

    #[test]
    fn what_the_create_requests_cannot_carry_is_named_and_the_rest_round_trips() {
        let scenario = crate::json::scenario_from_json(
            r#"{"AvailabilityZones": ["us-east-1a", "us-east-1b"],
                "Endpoint": {"EndpointName": "agents",
                  "InstancePools": [{"InstanceType": "ml.g6.48xlarge", "Priority": 2},
                                    {"InstanceType": "ml.p5.48xlarge", "Priority": 1}],
                  "DesiredInstanceCount": 3},
                "InferenceComponents": [{"InferenceComponentName": "llm",
                  "Specification": {"ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 1,
                    "NumberOfCpuCoresRequired": 1.123456789, "MinMemoryRequiredInMb": 1024.5}},
                  "RuntimeConfig": {"CopyCount": 2}}]}"#,
        )
        .expect("a scenario");
        let requests = assert_round_trips("hand-made", &scenario);
        let omissions: Vec<_> = requests.omissions.iter().map(ToString::to_string).collect();
        assert_eq!(
            omissions,
            [
                r#"Endpoint.VariantName: absent; the requests name the variant "AllTraffic", as fleetplan does"#,
                "Endpoint.InstancePools: sent in priority order, not in the scenario's order",
                "Endpoint.DesiredInstanceCount: sent as InitialInstanceCount 3; with inference components the copy \
                 counts drive the endpoint and the count is not read back",
                "InferenceComponents[0].Specification.ComputeResourceRequirements.NumberOfCpuCoresRequired: \
                 1.123456789 is sent as the API's 32-bit float 1.1234568",
                "InferenceComponents[0].Specification.ComputeResourceRequirements.MinMemoryRequiredInMb: \
                 1024.5 is sent rounded up to 1025: the API takes whole MiB",
            ]
        );
    }

    #[test]
    fn a_scenario_becomes_create_requests_with_pools_scaling_and_scheduling() {
        let text = include_str!("../../scenarios/seed-az-balance.json");
        let scenario = crate::json::scenario_from_json(text).expect("a scenario");
        let requests = requests_for_scenario(&scenario).expect("valid");
        assert_eq!(requests.endpoint.endpoint_name(), Some("agents"));
        assert_eq!(requests.endpoint.endpoint_config_name(), requests.endpoint_config.endpoint_config_name());
        let variant = &requests.endpoint_config.production_variants()[0];
        assert_eq!(variant.variant_name(), Some("AllTraffic"));
        let pools: Vec<_> = variant
            .instance_pools()
            .iter()
            .map(|pool| (pool.instance_type().map(ProductionVariantInstanceType::as_str), pool.priority()))
            .collect();
        assert_eq!(pools, [(Some("ml.g6e.12xlarge"), Some(1)), (Some("ml.g6.12xlarge"), Some(2))]);
        // With components, the variant starts at its managed minimum.
        assert_eq!(variant.initial_instance_count(), Some(1));
        let scaling = variant.managed_instance_scaling().expect("managed scaling");
        assert_eq!(scaling.status(), Some(&ManagedInstanceScalingStatus::Enabled));
        assert_eq!((scaling.min_instance_count(), scaling.max_instance_count()), (Some(1), Some(10)));
        let policy = scaling.scale_in_policy().expect("a scale-in policy");
        assert_eq!(policy.strategy(), Some(&ManagedInstanceScalingScaleInStrategy::Consolidation));
        assert_eq!(policy.maximum_step_size(), Some(1));

        assert_eq!(requests.inference_components.len(), 3);
        let planner = &requests.inference_components[0];
        assert_eq!(planner.inference_component_name(), Some("agent-planner"));
        assert_eq!((planner.endpoint_name(), planner.variant_name()), (Some("agents"), Some("AllTraffic")));
        let copies = planner.runtime_config().and_then(InferenceComponentRuntimeConfig::copy_count);
        assert_eq!(
            copies,
            Some(i32::try_from(scenario.inference_components[0].runtime_config.copy_count).expect("small"))
        );
        let spec = &planner.specifications()[0];
        assert_eq!(spec.instance_type(), Some(&ProductionVariantInstanceType::MlG6E12Xlarge));
        assert_eq!(spec.model_name(), Some("agent-planner-g6e"));
        let compute = spec.compute_resource_requirements().expect("requirements");
        assert_eq!(compute.number_of_accelerator_devices_required(), Some(1.0));
        assert_eq!(compute.number_of_cpu_cores_required(), Some(4.0));
        assert_eq!(compute.min_memory_required_in_mb(), Some(16_384));
        let scheduling = spec.scheduling_config().expect("scheduling");
        assert_eq!(scheduling.placement_strategy(), Some(&InferenceComponentPlacementStrategy::Spread));
        let balance = scheduling.availability_zone_balance().expect("AZ balance");
        assert_eq!(balance.enforcement_mode(), Some(&AvailabilityZoneBalanceEnforcementMode::Permissive));
        assert_eq!(balance.max_imbalance(), Some(1));
        assert_eq!(requests.caller_supplied.availability_zones, scenario.availability_zones);
        assert_eq!(requests.caller_supplied.instance_types, scenario.instance_types);
    }

    #[test]
    fn a_single_model_scenario_becomes_a_variant_with_its_model_and_instance_count() {
        let text = include_str!("../../scenarios/seed-fallback-single-model.json");
        let requests =
            requests_for_scenario(&crate::json::scenario_from_json(text).expect("a scenario")).expect("valid");
        assert!(requests.inference_components.is_empty());
        let variant = &requests.endpoint_config.production_variants()[0];
        assert_eq!(variant.model_name(), Some("llm-tp8"));
        assert_eq!(variant.initial_instance_count(), Some(4));
        assert_eq!(variant.instance_pools()[1].model_name_override(), Some("llm-int4"));
    }

    #[test]
    fn an_invalid_scenario_makes_no_create_request() {
        let mut scenario =
            crate::json::scenario_from_json(include_str!("../../scenarios/seed-az-balance.json")).expect("a scenario");
        scenario.endpoint.instance_pools[0].priority = 7;
        match requests_for_scenario(&scenario) {
            Err(SageMakerError::Invalid(error)) => {
                assert!(
                    error.to_string().contains("Endpoint.InstancePools[0].Priority: 7 is above the maximum 5"),
                    "{error}"
                )
            }
            other => panic!("expected a validation error, got {other:?}"),
        }
    }
}
