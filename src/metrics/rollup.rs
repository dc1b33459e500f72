//! Per-instance samples rolled up by instance type and by AZ, the way the `InstanceType`
//! dimension slices CloudWatch metrics.
//!
//! Percentiles use the nearest-rank definition: for `n` sorted values, the p-th percentile is
//! the value at 1-based rank `ceil(p / 100 × n)` (rank at least 1). It is always one of the
//! observed values, so it needs no interpolation and is exact for small groups.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::utilisation::TypeLoad;
use super::{non_negative, MetricsError};

/// One observation of one instance.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct InstanceSample {
    /// Instance id.
    pub instance_id: String,
    /// Instance type.
    pub instance_type: String,
    /// Availability zone.
    pub availability_zone: String,
    /// Model latency, milliseconds.
    pub latency_ms: f64,
    /// Requests per second.
    pub throughput: f64,
    /// Concurrent requests.
    pub concurrency: f64,
    /// Accelerator utilisation, percent (as CloudWatch reports it).
    pub accelerator_utilisation: f64,
}

/// Mean and nearest-rank percentiles of one metric.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Summary {
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (nearest rank).
    pub p50: f64,
    /// 90th percentile (nearest rank).
    pub p90: f64,
    /// 99th percentile (nearest rank).
    pub p99: f64,
}

impl Summary {
    /// Summary of a non-empty set of values; `None` when empty.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mean = sorted.iter().sum::<f64>() / sorted.len() as f64;
        Some(Summary {
            mean,
            p50: percentile_nearest_rank(&sorted, 50.0)?,
            p90: percentile_nearest_rank(&sorted, 90.0)?,
            p99: percentile_nearest_rank(&sorted, 99.0)?,
        })
    }
}

/// The nearest-rank percentile of ascending `sorted` values: the value at 1-based rank
/// `ceil(p / 100 × n)`, at least rank 1. `None` when empty or `p` is outside [0, 100].
///
/// ```
/// use fleetplan::metrics::percentile_nearest_rank;
/// let values = [15.0, 20.0, 35.0, 40.0, 50.0];
/// assert_eq!(percentile_nearest_rank(&values, 30.0), Some(20.0));
/// assert_eq!(percentile_nearest_rank(&values, 50.0), Some(35.0));
/// assert_eq!(percentile_nearest_rank(&values, 100.0), Some(50.0));
/// ```
pub fn percentile_nearest_rank(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=100.0).contains(&p) {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted.get(rank.min(sorted.len()) - 1).copied()
}

/// One group (an instance type or an AZ).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct GroupRollUp {
    /// The instance type or AZ.
    pub key: String,
    /// Samples in the group.
    pub samples: u64,
    /// Distinct instances in the group.
    pub instances: u64,
    /// Latency, milliseconds.
    pub latency_ms: Summary,
    /// Throughput, requests per second.
    pub throughput: Summary,
    /// Concurrency.
    pub concurrency: Summary,
    /// Accelerator utilisation, percent.
    pub accelerator_utilisation: Summary,
}

/// Roll-ups by instance type and by AZ, each sorted by key.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct RollUps {
    /// By instance type.
    pub by_instance_type: Vec<GroupRollUp>,
    /// By availability zone.
    pub by_availability_zone: Vec<GroupRollUp>,
}

impl RollUps {
    /// Utilisation inputs from the by-type roll-up: per type, the distinct instances and the
    /// mean concurrency, with the measured maximum from `max_concurrency` (type → maximum).
    /// Types without a maximum are left out.
    pub fn type_loads(&self, max_concurrency: &BTreeMap<String, f64>) -> Vec<TypeLoad> {
        self.by_instance_type
            .iter()
            .filter_map(|group| {
                let max = *max_concurrency.get(&group.key)?;
                let instances = u32::try_from(group.instances).unwrap_or(u32::MAX);
                Some(TypeLoad::new(&group.key, instances, group.concurrency.mean, max))
            })
            .collect()
    }
}

/// Aggregates samples by instance type and by AZ (count, mean, p50/p90/p99 per metric).
/// Every number must be finite and ≥ 0; ids, types and AZs must not be empty.
pub fn roll_up(samples: &[InstanceSample]) -> Result<RollUps, MetricsError> {
    for sample in samples {
        for (field, value) in [("InstanceId", &sample.instance_id), ("InstanceType", &sample.instance_type)]
            .into_iter()
            .chain([("AvailabilityZone", &sample.availability_zone)])
        {
            if value.is_empty() {
                return Err(MetricsError::EmptyName { field });
            }
        }
        non_negative(&sample.instance_id, "LatencyMs", sample.latency_ms)?;
        non_negative(&sample.instance_id, "Throughput", sample.throughput)?;
        non_negative(&sample.instance_id, "Concurrency", sample.concurrency)?;
        non_negative(&sample.instance_id, "AcceleratorUtilisation", sample.accelerator_utilisation)?;
    }
    Ok(RollUps {
        by_instance_type: group_by(samples, |sample| &sample.instance_type),
        by_availability_zone: group_by(samples, |sample| &sample.availability_zone),
    })
}

fn group_by(samples: &[InstanceSample], key: impl Fn(&InstanceSample) -> &String) -> Vec<GroupRollUp> {
    let mut groups: BTreeMap<&str, Vec<&InstanceSample>> = BTreeMap::new();
    for sample in samples {
        groups.entry(key(sample).as_str()).or_default().push(sample);
    }
    groups
        .into_iter()
        .filter_map(|(name, members)| {
            let metric =
                |get: fn(&InstanceSample) -> f64| Summary::of(&members.iter().map(|s| get(s)).collect::<Vec<_>>());
            Some(GroupRollUp {
                key: name.to_string(),
                samples: members.len() as u64,
                instances: members.iter().map(|s| s.instance_id.as_str()).collect::<BTreeSet<_>>().len() as u64,
                latency_ms: metric(|s| s.latency_ms)?,
                throughput: metric(|s| s.throughput)?,
                concurrency: metric(|s| s.concurrency)?,
                accelerator_utilisation: metric(|s| s.accelerator_utilisation)?,
            })
        })
        .collect()
}
