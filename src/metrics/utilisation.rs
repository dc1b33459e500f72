//! One utilisation signal for a fleet that mixes instance types.
//!
//! For each type `t`: `n_t` instances, observed concurrency `o_t` per instance (the average
//! over that type's instances, as CloudWatch reports it with the `InstanceType` dimension) and
//! the maximum concurrency `m_t` one instance sustains (from the user's load test). The ratio
//! `r_t = o_t / m_t` is that type's utilisation.
//!
//! - metric-math form (the seed): `Σ w_t r_t / Σ w_t`, weights `w_t` default 1, i.e. the plain
//!   mean of the per-type ratios.
//! - capacity-weighted form: `Σ n_t o_t / Σ n_t m_t`, observed load over fleet capacity. It is
//!   the metric-math form with `w_t = n_t m_t`.
//!
//! They agree when every type has the same ratio, or when every type holds the same share of
//! capacity; they differ when a type with little capacity runs hotter or colder than the rest.
//! Only the capacity-weighted form is proportional to the fleet's load, which is what the target
//! tracking formula `desired = current × utilisation / target` assumes (see
//! docs/observability.md). Types with no instances are skipped in both forms, as CloudWatch has
//! no datapoints for them.

use std::collections::BTreeSet;

use serde::Serialize;

use super::{non_negative, MetricsError};

/// Observed load of one instance type.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct TypeLoad {
    /// Instance type.
    pub instance_type: String,
    /// Instances of this type in the fleet.
    pub instances: u32,
    /// Observed concurrency per instance (average over this type's instances).
    pub observed_concurrency: f64,
    /// Maximum concurrency one instance sustains (measured by a load test), above 0.
    pub max_concurrency: f64,
    /// Weight in the metric-math form (`None` = 1).
    pub weight: Option<f64>,
}

impl TypeLoad {
    /// A type's load without an explicit weight.
    pub fn new(instance_type: &str, instances: u32, observed_concurrency: f64, max_concurrency: f64) -> TypeLoad {
        TypeLoad {
            instance_type: instance_type.to_string(),
            instances,
            observed_concurrency,
            max_concurrency,
            weight: None,
        }
    }

    /// The same load with a metric-math weight.
    pub fn with_weight(mut self, weight: f64) -> TypeLoad {
        self.weight = Some(weight);
        self
    }

    fn validate(&self) -> Result<(), MetricsError> {
        if self.instance_type.is_empty() {
            return Err(MetricsError::EmptyName { field: "InstanceType" });
        }
        non_negative(&self.instance_type, "ObservedConcurrency", self.observed_concurrency)?;
        let max = non_negative(&self.instance_type, "MaxConcurrency", self.max_concurrency)?;
        if max == 0.0 {
            return Err(MetricsError::ZeroMaximum { instance_type: self.instance_type.clone(), value: max });
        }
        if let Some(weight) = self.weight {
            non_negative(&self.instance_type, "Weight", weight)?;
        }
        Ok(())
    }
}

/// One type's share of the signal.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct TypeUtilisation {
    /// Instance type.
    pub instance_type: String,
    /// Instances.
    pub instances: u32,
    /// `observed / max` for one instance of this type (above 1 when overloaded).
    pub ratio: f64,
    /// `instances × observed`.
    pub observed_load: f64,
    /// `instances × max`.
    pub capacity: f64,
}

/// The fleet's utilisation in both forms, with the per-type parts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Utilisation {
    /// The seed's metric-math form: weighted mean of per-type ratios.
    pub metric_math: f64,
    /// Observed load over capacity, counting instances: use this for scaling.
    pub capacity_weighted: f64,
    /// The plain mean of per-type observed concurrency (the misleading number, for contrast).
    pub naive_average_concurrency: f64,
    /// Per type with at least one instance, in input order.
    pub per_type: Vec<TypeUtilisation>,
}

/// Validates every entry and returns those with instances.
fn active(loads: &[TypeLoad]) -> Result<Vec<&TypeLoad>, MetricsError> {
    let mut seen = BTreeSet::new();
    for load in loads {
        load.validate()?;
        if !seen.insert(load.instance_type.as_str()) {
            return Err(MetricsError::DuplicateType { instance_type: load.instance_type.clone() });
        }
    }
    let active: Vec<&TypeLoad> = loads.iter().filter(|load| load.instances > 0).collect();
    if active.is_empty() {
        return Err(MetricsError::NoInstances);
    }
    Ok(active)
}

/// The seed's metric-math form: `Σ w_t (o_t / m_t) / Σ w_t` over types with instances.
pub fn metric_math_utilisation(loads: &[TypeLoad]) -> Result<f64, MetricsError> {
    let active = active(loads)?;
    let total_weight: f64 = active.iter().map(|load| load.weight.unwrap_or(1.0)).sum();
    if total_weight <= 0.0 {
        return Err(MetricsError::ZeroWeights);
    }
    let weighted: f64 =
        active.iter().map(|load| load.weight.unwrap_or(1.0) * load.observed_concurrency / load.max_concurrency).sum();
    Ok(weighted / total_weight)
}

/// The capacity-weighted form: `Σ n_t o_t / Σ n_t m_t`.
pub fn capacity_weighted_utilisation(loads: &[TypeLoad]) -> Result<f64, MetricsError> {
    let active = active(loads)?;
    let load: f64 = active.iter().map(|l| f64::from(l.instances) * l.observed_concurrency).sum();
    let capacity: f64 = active.iter().map(|l| f64::from(l.instances) * l.max_concurrency).sum();
    Ok(load / capacity)
}

/// The plain mean of per-type observed concurrency (what a dashboard without the
/// `InstanceType` dimension would show per type; the seed's 12.5).
pub fn naive_average_concurrency(loads: &[TypeLoad]) -> Result<f64, MetricsError> {
    let active = active(loads)?;
    Ok(active.iter().map(|l| l.observed_concurrency).sum::<f64>() / active.len() as f64)
}

/// Both forms, the naive average and the per-type parts.
pub fn utilisation(loads: &[TypeLoad]) -> Result<Utilisation, MetricsError> {
    let per_type = active(loads)?
        .into_iter()
        .map(|load| TypeUtilisation {
            instance_type: load.instance_type.clone(),
            instances: load.instances,
            ratio: load.observed_concurrency / load.max_concurrency,
            observed_load: f64::from(load.instances) * load.observed_concurrency,
            capacity: f64::from(load.instances) * load.max_concurrency,
        })
        .collect();
    Ok(Utilisation {
        metric_math: metric_math_utilisation(loads)?,
        capacity_weighted: capacity_weighted_utilisation(loads)?,
        naive_average_concurrency: naive_average_concurrency(loads)?,
        per_type,
    })
}
