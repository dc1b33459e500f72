//! From SageMaker SDK values to a plan and back to SDK requests, without a network call.
//!
//! A control plane holds what `DescribeEndpointConfig`, `DescribeEndpoint` and
//! `DescribeInferenceComponent` returned (built here with the SDK's builders, as a test would)
//! and its own record of the fleet, which no describe call returns. fleetplan plans; the plan
//! becomes the `UpdateInferenceComponentRuntimeConfig` requests to send next. The scenario also
//! becomes the `Create*` requests that would set the endpoint up afresh.
//!
//! ```sh
//! cargo run --features examples,sagemaker --example sagemaker
//! ```

use aws_sdk_sagemaker::operation::describe_endpoint::DescribeEndpointOutput;
use aws_sdk_sagemaker::operation::describe_endpoint_config::DescribeEndpointConfigOutput;
use aws_sdk_sagemaker::operation::describe_inference_component::DescribeInferenceComponentOutput;
use aws_sdk_sagemaker::types::{
    AvailabilityZoneBalanceEnforcementMode, InferenceComponentAvailabilityZoneBalance,
    InferenceComponentComputeResourceRequirements, InferenceComponentPlacementStatus,
    InferenceComponentPlacementStrategy, InferenceComponentRuntimeConfigSummary, InferenceComponentSchedulingConfig,
    InferenceComponentSpecificationSummary, InstancePool, InstancePoolSummary, ManagedInstanceScalingScaleInStrategy,
    ManagedInstanceScalingStatus, ProductionVariant, ProductionVariantInstanceType,
    ProductionVariantManagedInstanceScaling, ProductionVariantManagedInstanceScalingScaleInPolicy,
    ProductionVariantSummary,
};
use fleetplan::sagemaker::{
    requests_for_plan, requests_for_scenario, scenario_and_problem, CallerSupplied, EndpointDescription,
};
use fleetplan::{CapacityEntry, Fleet, FleetCopy, FleetInstance};

const P5: ProductionVariantInstanceType = ProductionVariantInstanceType::MlP548Xlarge;
const G6: ProductionVariantInstanceType = ProductionVariantInstanceType::MlG648Xlarge;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // DescribeEndpointConfig: one variant, two instance pools, managed scaling with consolidation.
    let config = DescribeEndpointConfigOutput::builder()
        .production_variants(
            ProductionVariant::builder()
                .variant_name("AllTraffic")
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
                                .build(),
                        )
                        .build(),
                )
                .build(),
        )
        .build();
    // DescribeEndpoint: one p5 instance runs now.
    let endpoint = DescribeEndpointOutput::builder()
        .endpoint_name("agents")
        .production_variants(
            ProductionVariantSummary::builder()
                .variant_name("AllTraffic")
                .current_instance_count(1)
                .instance_pools(InstancePoolSummary::builder().instance_type(P5).current_instance_count(1).build())
                .build(),
        )
        .build();
    // DescribeInferenceComponent: `llm` wants 4 copies AZ-balanced, one runs on the p5.
    let specification = |instance_type: ProductionVariantInstanceType, model: &str, accelerators: f32, memory: i32| {
        InferenceComponentSpecificationSummary::builder()
            .instance_type(instance_type)
            .model_name(model)
            .compute_resource_requirements(
                InferenceComponentComputeResourceRequirements::builder()
                    .number_of_accelerator_devices_required(accelerators)
                    .number_of_cpu_cores_required(8.0)
                    .min_memory_required_in_mb(memory)
                    .build(),
            )
            .scheduling_config(
                InferenceComponentSchedulingConfig::builder()
                    .placement_strategy(InferenceComponentPlacementStrategy::Spread)
                    .availability_zone_balance(
                        InferenceComponentAvailabilityZoneBalance::builder()
                            .enforcement_mode(AvailabilityZoneBalanceEnforcementMode::Permissive)
                            .max_imbalance(1)
                            .build(),
                    )
                    .build(),
            )
            .build()
    };
    let llm = DescribeInferenceComponentOutput::builder()
        .inference_component_name("llm")
        .endpoint_name("agents")
        .variant_name("AllTraffic")
        .specifications(specification(P5, "llm-tp4", 4.0, 65_536))
        .specifications(specification(G6, "llm-int4", 2.0, 32_768))
        .runtime_config(
            InferenceComponentRuntimeConfigSummary::builder()
                .desired_copy_count(4)
                .current_copy_count(1)
                .placement_status(
                    InferenceComponentPlacementStatus::builder().instance_type(P5).current_copy_count(1).build(),
                )
                .build(),
        )
        .build();

    // What no describe call tells: the AZs, capacity, and which instance runs which copy.
    let supplied = CallerSupplied {
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
    };

    let description = EndpointDescription::from_describe(&endpoint, &config, Some("AllTraffic"))?.with_component(&llm);
    let (scenario, problem) = scenario_and_problem(&description, &supplied)?;
    let plan = fleetplan::plan_greedy(&problem);
    println!("{}", fleetplan::plan_table(&problem, &plan));
    for update in requests_for_plan(&problem, &plan)?.copy_counts {
        // In a control plane: `update.request.send_with(&client).await?`.
        let request = update.request.build()?;
        println!(
            "UpdateInferenceComponentRuntimeConfig {}: CopyCount {} -> {}  ({request:?})",
            update.inference_component_name, update.current, update.planned
        );
    }

    // The other direction: the requests that would create this endpoint afresh (e.g. in a second
    // region), unsent. Describing what they create gives the scenario back.
    let requests = requests_for_scenario(&scenario)?;
    for variant in requests.endpoint_config.production_variants() {
        let pools: Vec<_> =
            variant.instance_pools().iter().filter_map(|pool| pool.instance_type()).map(|t| t.as_str()).collect();
        println!(
            "CreateEndpointConfig {}: pools {pools:?} by priority, InitialInstanceCount {:?}",
            requests.endpoint_config.endpoint_config_name().unwrap_or_default(),
            variant.initial_instance_count()
        );
    }
    for component in &requests.inference_components {
        println!(
            "CreateInferenceComponent {}: {} specifications, CopyCount {:?}",
            component.inference_component_name().unwrap_or_default(),
            component.specifications().len(),
            component.runtime_config().and_then(|config| config.copy_count())
        );
    }
    for omission in &requests.omissions {
        println!("not carried as it is: {omission}");
    }
    Ok(())
}
