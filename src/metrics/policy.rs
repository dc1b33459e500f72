//! The seed's weighted-utilisation signal as an Application Auto Scaling target-tracking policy.
//!
//! [`scaling_policy`] writes the `PutScalingPolicy` request a user applies: one CloudWatch
//! metric query per instance type of the endpoint's pools (the concurrency metric with that
//! `InstanceType` dimension), and one metric-math expression that divides each by the type's
//! measured maximum and averages the ratios over the types that report datapoints — the
//! metric-math form of [`super::utilisation`] ([`super::metric_math_utilisation`]). Types without
//! instances have no datapoints; `FILL` drops them from both the sum and the count, as the
//! metrics module skips types with no instances.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{non_negative, MetricsError, TargetTracking};
use crate::problem::Problem;

/// Where the per-instance concurrency metric lives in CloudWatch: a metric the user publishes
/// with an `InstanceType` dimension (SageMaker's own metrics have none).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ConcurrencyMetric {
    /// CloudWatch namespace. Default `fleetplan`.
    pub namespace: String,
    /// Metric name. Default `ConcurrentRequestsPerInstance`.
    pub metric_name: String,
    /// Whether the metric also carries `EndpointName` and `VariantName` dimensions (default
    /// true), so one metric serves several endpoints.
    pub endpoint_dimensions: bool,
}

impl Default for ConcurrencyMetric {
    fn default() -> Self {
        ConcurrencyMetric {
            namespace: "fleetplan".to_string(),
            metric_name: "ConcurrentRequestsPerInstance".to_string(),
            endpoint_dimensions: true,
        }
    }
}

/// An Application Auto Scaling `PutScalingPolicy` request, in the API's JSON shape (what
/// `aws application-autoscaling put-scaling-policy --cli-input-json` and boto3's
/// `put_scaling_policy(**request)` take).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct PutScalingPolicyRequest {
    /// `<EndpointName>-weighted-utilisation`.
    pub policy_name: String,
    /// `sagemaker`.
    pub service_namespace: String,
    /// `endpoint/<EndpointName>/variant/<VariantName>`.
    pub resource_id: String,
    /// `sagemaker:variant:DesiredInstanceCount`.
    pub scalable_dimension: String,
    /// `TargetTrackingScaling`.
    pub policy_type: String,
    /// The target and the metric.
    pub target_tracking_scaling_policy_configuration: TargetTrackingConfiguration,
}

/// `TargetTrackingScalingPolicyConfiguration`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct TargetTrackingConfiguration {
    /// The utilisation to hold, in (0, 1].
    pub target_value: f64,
    /// The metric-math signal.
    pub customized_metric_specification: CustomizedMetricSpecification,
    /// Seconds after a scale-out before the next one.
    pub scale_out_cooldown: u32,
    /// Seconds after a scale-in before the next one.
    pub scale_in_cooldown: u32,
}

/// `CustomizedMetricSpecification` in its metric-math form.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct CustomizedMetricSpecification {
    /// One query per instance type, then the expression (the only one returning data).
    pub metrics: Vec<MetricQuery>,
}

/// `TargetTrackingMetricDataQuery`: a metric or an expression.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct MetricQuery {
    /// `m0`, `m1`, … in pool order; `utilisation` for the expression.
    pub id: String,
    /// The metric-math expression (on the last query only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expression: Option<String>,
    /// The metric and statistic (on the per-type queries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metric_stat: Option<MetricStat>,
    /// A readable name.
    pub label: String,
    /// Whether this query is the policy's signal.
    pub return_data: bool,
}

/// `TargetTrackingMetricStat`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct MetricStat {
    /// The metric.
    pub metric: Metric,
    /// `Average`: the per-instance mean over the type's instances.
    pub stat: String,
}

/// `TargetTrackingMetric`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Metric {
    /// CloudWatch namespace.
    pub namespace: String,
    /// Metric name.
    pub metric_name: String,
    /// Dimensions, `InstanceType` last.
    pub dimensions: Vec<Dimension>,
}

/// `TargetTrackingMetricDimension`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Dimension {
    /// Dimension name.
    pub name: String,
    /// Dimension value.
    pub value: String,
}

/// The target-tracking policy for the problem's endpoint: `max_concurrency` gives each pool
/// type's measured maximum concurrency per instance (every pool type, nothing else); `tracking`
/// gives the target and the cooldowns ([`TargetTracking::for_problem`] reads them from the
/// scenario).
///
/// The expression, for types `t` with maxima `m_t` and queries `m0, m1, …`:
/// `(FILL(m0, 0) / m_0 + …) / (FILL(m0 * 0 + 1, 0) + …)`: the mean of `o_t / m_t` over the types
/// that report a datapoint, which is [`super::metric_math_utilisation`] with weights 1.
pub fn scaling_policy(
    problem: &Problem,
    max_concurrency: &BTreeMap<String, f64>,
    tracking: &TargetTracking,
    metric: &ConcurrencyMetric,
) -> Result<PutScalingPolicyRequest, MetricsError> {
    tracking.validate()?;
    for (instance_type, &max) in max_concurrency {
        if !problem.instance_types().iter().any(|info| &info.name == instance_type) {
            return Err(MetricsError::NotAPoolType { instance_type: instance_type.clone() });
        }
        if non_negative(instance_type, "MaxConcurrency", max)? == 0.0 {
            return Err(MetricsError::ZeroMaximum { instance_type: instance_type.clone(), value: max });
        }
    }
    let mut queries = Vec::new();
    let mut ratios = Vec::new();
    let mut reporting = Vec::new();
    for (position, info) in problem.instance_types().iter().enumerate() {
        let max = *max_concurrency
            .get(&info.name)
            .ok_or_else(|| MetricsError::MissingMaximum { instance_type: info.name.clone() })?;
        let id = format!("m{position}");
        ratios.push(format!("FILL({id}, 0) / {max}"));
        reporting.push(format!("FILL({id} * 0 + 1, 0)"));
        let mut dimensions = Vec::new();
        if metric.endpoint_dimensions {
            dimensions.push(Dimension { name: "EndpointName".to_string(), value: problem.endpoint_name().to_string() });
            dimensions.push(Dimension { name: "VariantName".to_string(), value: problem.variant_name().to_string() });
        }
        dimensions.push(Dimension { name: "InstanceType".to_string(), value: info.name.clone() });
        queries.push(MetricQuery {
            id,
            expression: None,
            metric_stat: Some(MetricStat {
                metric: Metric {
                    namespace: metric.namespace.clone(),
                    metric_name: metric.metric_name.clone(),
                    dimensions,
                },
                stat: "Average".to_string(),
            }),
            label: format!("{} concurrency per instance (max {max})", info.name),
            return_data: false,
        });
    }
    queries.push(MetricQuery {
        id: "utilisation".to_string(),
        expression: Some(format!("({}) / ({})", ratios.join(" + "), reporting.join(" + "))),
        metric_stat: None,
        label: "Weighted utilisation: mean of concurrency / max over the reporting types".to_string(),
        return_data: true,
    });
    let endpoint = problem.endpoint_name();
    Ok(PutScalingPolicyRequest {
        policy_name: format!("{endpoint}-weighted-utilisation"),
        service_namespace: "sagemaker".to_string(),
        resource_id: format!("endpoint/{endpoint}/variant/{}", problem.variant_name()),
        scalable_dimension: "sagemaker:variant:DesiredInstanceCount".to_string(),
        policy_type: "TargetTrackingScaling".to_string(),
        target_tracking_scaling_policy_configuration: TargetTrackingConfiguration {
            target_value: tracking.target,
            customized_metric_specification: CustomizedMetricSpecification { metrics: queries },
            scale_out_cooldown: whole_seconds(tracking.scale_out_cooldown),
            scale_in_cooldown: whole_seconds(tracking.scale_in_cooldown),
        },
    })
}

/// Cooldowns are whole seconds in the API; `validate` has checked they are finite and ≥ 0.
fn whole_seconds(seconds: f64) -> u32 {
    seconds.ceil().min(f64::from(u32::MAX)) as u32
}
