//! Observability for mixed fleets: weighted utilisation, target tracking, per-type roll-ups.
//!
//! Everything here is pure arithmetic on numbers the caller brings (from CloudWatch or a load
//! test): no clock, no I/O. Time is a plain number the caller passes (e.g. seconds).
//!
//! - [`utilisation`]: one fleet signal from per-type observed and maximum concurrency, in the
//!   seed's metric-math form ([`Utilisation::metric_math`]) and the capacity-weighted form
//!   ([`Utilisation::capacity_weighted`]) that target tracking should use.
//! - [`TargetTracking::decide`]: the desired instance count, with a dead band, cooldowns and
//!   `[MinInstanceCount, MaxInstanceCount]`; [`instance_changes`] turns a delta into which
//!   instances to launch (priority fallback) or remove (lowest priority first).
//! - [`roll_up`]: per-instance samples aggregated by instance type and by AZ.
//!
//! ```
//! use fleetplan::metrics::{utilisation, TargetTracking, ScalingHistory, ScalingAction, TypeLoad};
//!
//! // The seed: a p5 at 18 of 20 concurrent requests, a g6 at 7 of 8.
//! let loads = [TypeLoad::new("ml.p5.48xlarge", 1, 18.0, 20.0), TypeLoad::new("ml.g6.48xlarge", 1, 7.0, 8.0)];
//! let signal = utilisation(&loads).unwrap();
//! assert!((signal.metric_math - 0.8875).abs() < 1e-12);
//! assert!((signal.naive_average_concurrency - 12.5).abs() < 1e-12);
//!
//! let policy = TargetTracking::default(); // target 0.7
//! let decision = policy.decide(signal.capacity_weighted, 2, 0.0, &ScalingHistory::default()).unwrap();
//! assert_eq!(decision.action, ScalingAction::ScaleOut);
//! assert_eq!(decision.desired, 3);
//! ```

mod policy;
mod rollup;
mod tracking;
mod utilisation;

pub use policy::{
    scaling_policy, ConcurrencyMetric, CustomizedMetricSpecification, Dimension, Metric, MetricQuery, MetricStat,
    PutScalingPolicyRequest, TargetTrackingConfiguration,
};
pub use rollup::{percentile_nearest_rank, roll_up, GroupRollUp, InstanceSample, RollUps, Summary};
pub use tracking::{
    instance_changes, ChangeLimit, DecisionReason, InstanceChanges, LaunchStep, RemovalStep, ScalingAction,
    ScalingDecision, ScalingHistory, TargetTracking,
};
pub use utilisation::{
    capacity_weighted_utilisation, metric_math_utilisation, naive_average_concurrency, utilisation, TypeLoad,
    TypeUtilisation, Utilisation,
};

/// A metric input or setting that cannot be used. Names the offending field and value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MetricsError {
    /// A number is NaN or infinite.
    #[error("{field} of {subject} is not a finite number ({value})")]
    NotFinite {
        /// What the number belongs to (an instance type, an instance id, a setting).
        subject: String,
        /// Which field.
        field: &'static str,
        /// The value.
        value: f64,
    },
    /// A number that must be ≥ 0 is negative.
    #[error("{field} of {subject} is negative ({value})")]
    Negative {
        /// What the number belongs to.
        subject: String,
        /// Which field.
        field: &'static str,
        /// The value.
        value: f64,
    },
    /// A measured maximum concurrency must be above 0 (it divides).
    #[error("MaxConcurrency of {instance_type} must be above 0, got {value}")]
    ZeroMaximum {
        /// The instance type.
        instance_type: String,
        /// The value.
        value: f64,
    },
    /// The same instance type appears twice.
    #[error("{instance_type} is listed twice")]
    DuplicateType {
        /// The instance type.
        instance_type: String,
    },
    /// An instance type or id is empty.
    #[error("an empty {field}")]
    EmptyName {
        /// Which field.
        field: &'static str,
    },
    /// An instance type of the endpoint's pools has no measured maximum concurrency.
    #[error("no MaxConcurrency for {instance_type}, an instance type of the endpoint's pools")]
    MissingMaximum {
        /// The instance type.
        instance_type: String,
    },
    /// A measured maximum names an instance type outside the endpoint's pools.
    #[error("{instance_type} is not an instance type of the endpoint's pools")]
    NotAPoolType {
        /// The instance type.
        instance_type: String,
    },
    /// No type with instances: there is no fleet to measure.
    #[error("no instance type with at least one instance: utilisation is undefined")]
    NoInstances,
    /// Every weight of the metric-math form is 0.
    #[error("every weight is 0: the weighted mean is undefined")]
    ZeroWeights,
    /// A target-tracking setting is out of range.
    #[error("{field} {value} is out of range ({expected})")]
    Setting {
        /// Which setting.
        field: &'static str,
        /// The value.
        value: f64,
        /// The allowed range.
        expected: &'static str,
    },
    /// `MinInstanceCount` above `MaxInstanceCount`.
    #[error("MinInstanceCount {min} is greater than MaxInstanceCount {max}")]
    MinAboveMax {
        /// Minimum.
        min: u32,
        /// Maximum.
        max: u32,
    },
}

/// Checks that `value` is finite and not negative.
pub(crate) fn non_negative(subject: &str, field: &'static str, value: f64) -> Result<f64, MetricsError> {
    if !value.is_finite() {
        Err(MetricsError::NotFinite { subject: subject.to_string(), field, value })
    } else if value < 0.0 {
        Err(MetricsError::Negative { subject: subject.to_string(), field, value })
    } else {
        Ok(value)
    }
}
