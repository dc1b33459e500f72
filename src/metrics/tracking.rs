//! Target tracking on the utilisation signal, and which instances a change in count touches.
//!
//! [`TargetTracking::decide`] computes the desired instance count the way target tracking does
//! (`ceil(current × utilisation / target)`), holds inside a dead band around the target and
//! during cooldowns, limits a scale-in to `MaximumStepSize` instances, and always clamps to
//! `[MinInstanceCount, MaxInstanceCount]`. The caller passes the time (`now`, any unit that
//! matches the cooldowns, e.g. seconds) and keeps a [`ScalingHistory`].
//!
//! [`instance_changes`] turns the delta into concrete instances: launches walk the pool by
//! priority (falling back when a type has no launch capacity left) and spread over AZs;
//! removals take the lowest priority first, then the most expensive, then from the AZ with the
//! most instances, so the fleet drifts back to the preferred hardware and stays balanced.

use std::cmp::Reverse;

use serde::Serialize;

use super::{non_negative, MetricsError};
use crate::engines::LaunchIds;
use crate::fleet::instance_cost_micros;
use crate::index::{AzIndex, TypeIndex};
use crate::plan::{Action, CostUnit};
use crate::problem::Problem;

/// Target-tracking settings.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct TargetTracking {
    /// Target utilisation, in (0, 1]. Default 0.7.
    pub target: f64,
    /// No scaling while `|utilisation − target| ≤ dead_band`. Default 0.05.
    pub dead_band: f64,
    /// After a scale-out, no further scale-out (and no scale-in) for this long. Default 300.
    pub scale_out_cooldown: f64,
    /// After a scale-in, no further scale-in for this long. Default 1200 (20 minutes).
    pub scale_in_cooldown: f64,
    /// `MinInstanceCount`.
    pub min_instances: u32,
    /// `MaxInstanceCount` (`None` = unlimited).
    pub max_instances: Option<u32>,
    /// Most instances removed by one scale-in (`None` = no limit).
    pub max_scale_in_step: Option<u32>,
}

impl Default for TargetTracking {
    fn default() -> Self {
        TargetTracking {
            target: 0.7,
            dead_band: 0.05,
            scale_out_cooldown: 300.0,
            scale_in_cooldown: 1200.0,
            min_instances: 0,
            max_instances: None,
            max_scale_in_step: None,
        }
    }
}

/// When the last scale-out and scale-in happened (same unit as `now`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ScalingHistory {
    /// Time of the last scale-out.
    pub last_scale_out: Option<f64>,
    /// Time of the last scale-in.
    pub last_scale_in: Option<f64>,
}

impl ScalingHistory {
    /// Records a decision that the caller carried out at `now`.
    pub fn record(&mut self, decision: &ScalingDecision, now: f64) {
        match decision.action {
            ScalingAction::ScaleOut => self.last_scale_out = Some(now),
            ScalingAction::ScaleIn => self.last_scale_in = Some(now),
            ScalingAction::Hold => {}
        }
    }
}

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum ScalingAction {
    /// Add instances.
    ScaleOut,
    /// Remove instances.
    ScaleIn,
    /// Keep the count.
    Hold,
}

/// Why the decision is what it is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "Kind", rename_all_fields = "PascalCase")]
pub enum DecisionReason {
    /// Utilisation above the target (beyond the dead band).
    AboveTarget,
    /// Utilisation below the target (beyond the dead band).
    BelowTarget,
    /// Utilisation within the dead band: no change wanted.
    WithinDeadBand,
    /// Below target, but rounding up keeps the count (the fleet is as small as the load allows).
    AtLoad,
    /// A scale-out was wanted but the scale-out cooldown runs until `until`.
    ScaleOutCooldown {
        /// End of the cooldown.
        until: f64,
    },
    /// A scale-in was wanted but a cooldown runs until `until`.
    ScaleInCooldown {
        /// End of the cooldown.
        until: f64,
    },
    /// No instances: utilisation says nothing; the count only follows the limits.
    NoInstances,
    /// The wanted count was raised to `MinInstanceCount`.
    ClampedToMin,
    /// The wanted count was lowered to `MaxInstanceCount`.
    ClampedToMax,
}

/// A target-tracking decision.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ScalingDecision {
    /// Instances now.
    pub current: u32,
    /// Desired instances, always within `[MinInstanceCount, MaxInstanceCount]`.
    pub desired: u32,
    /// Scale out, in, or hold.
    pub action: ScalingAction,
    /// Why.
    pub reason: DecisionReason,
}

impl ScalingDecision {
    /// `desired − current`.
    pub fn delta(&self) -> i64 {
        i64::from(self.desired) - i64::from(self.current)
    }
}

impl TargetTracking {
    /// Settings from a problem's `ManagedInstanceScaling`: Min/Max, `MaximumStepSize` as the
    /// scale-in step and `CooldownInMinutes × 60` as the scale-in cooldown (seconds); target 0.7.
    pub fn for_problem(problem: &Problem) -> TargetTracking {
        let scaling = problem.scaling();
        TargetTracking {
            min_instances: scaling.min_instances,
            max_instances: scaling.max_instances,
            max_scale_in_step: Some(scaling.maximum_step_size),
            scale_in_cooldown: f64::from(scaling.cooldown_minutes) * 60.0,
            ..TargetTracking::default()
        }
    }

    /// Checks the settings.
    pub fn validate(&self) -> Result<(), MetricsError> {
        let setting = |field: &'static str, value: f64, ok: bool, expected: &'static str| {
            if ok {
                Ok(())
            } else {
                Err(MetricsError::Setting { field, value, expected })
            }
        };
        setting(
            "Target",
            self.target,
            self.target.is_finite() && self.target > 0.0 && self.target <= 1.0,
            "0 < target ≤ 1",
        )?;
        non_negative("TargetTracking", "DeadBand", self.dead_band)?;
        setting("DeadBand", self.dead_band, self.dead_band < self.target, "below the target")?;
        non_negative("TargetTracking", "ScaleOutCooldown", self.scale_out_cooldown)?;
        non_negative("TargetTracking", "ScaleInCooldown", self.scale_in_cooldown)?;
        if let Some(step) = self.max_scale_in_step {
            setting("MaxScaleInStep", f64::from(step), step > 0, "at least 1")?;
        }
        if let Some(max) = self.max_instances {
            if self.min_instances > max {
                return Err(MetricsError::MinAboveMax { min: self.min_instances, max });
            }
        }
        Ok(())
    }

    /// The desired instance count for `utilisation` (capacity-weighted, ≥ 0) of `current`
    /// instances at time `now`, given when the fleet last scaled.
    pub fn decide(
        &self,
        utilisation: f64,
        current: u32,
        now: f64,
        history: &ScalingHistory,
    ) -> Result<ScalingDecision, MetricsError> {
        self.validate()?;
        non_negative("TargetTracking", "Utilisation", utilisation)?;
        if !now.is_finite() {
            return Err(MetricsError::NotFinite { subject: "TargetTracking".into(), field: "Now", value: now });
        }
        let min = self.min_instances;
        let max = self.max_instances.unwrap_or(u32::MAX);
        let in_cooldown = |last: Option<f64>, cooldown: f64| last.map(|at| at + cooldown).filter(|&until| now < until);

        let (mut wanted, mut reason) = if current == 0 {
            (0, DecisionReason::NoInstances)
        } else if (utilisation - self.target).abs() <= self.dead_band {
            (current, DecisionReason::WithinDeadBand)
        } else {
            // f64 → u32 saturates; ceil keeps enough capacity when scaling in.
            let raw = (f64::from(current) * utilisation / self.target).ceil() as u32;
            if utilisation > self.target {
                (raw, DecisionReason::AboveTarget)
            } else if raw >= current {
                (current, DecisionReason::AtLoad)
            } else {
                let floor = current.saturating_sub(self.max_scale_in_step.unwrap_or(u32::MAX));
                (raw.max(floor), DecisionReason::BelowTarget)
            }
        };
        if wanted > current {
            if let Some(until) = in_cooldown(history.last_scale_out, self.scale_out_cooldown) {
                (wanted, reason) = (current, DecisionReason::ScaleOutCooldown { until });
            }
        } else if wanted < current {
            let blocked = [
                in_cooldown(history.last_scale_in, self.scale_in_cooldown),
                in_cooldown(history.last_scale_out, self.scale_out_cooldown),
            ]
            .into_iter()
            .flatten()
            .reduce(f64::max);
            if let Some(until) = blocked {
                (wanted, reason) = (current, DecisionReason::ScaleInCooldown { until });
            }
        }
        // The limits always win, also during a cooldown: the count never leaves [min, max].
        let desired = wanted.clamp(min, max);
        if desired > wanted {
            reason = DecisionReason::ClampedToMin;
        } else if desired < wanted {
            reason = DecisionReason::ClampedToMax;
        }
        let action = match desired.cmp(&current) {
            std::cmp::Ordering::Greater => ScalingAction::ScaleOut,
            std::cmp::Ordering::Less => ScalingAction::ScaleIn,
            std::cmp::Ordering::Equal => ScalingAction::Hold,
        };
        Ok(ScalingDecision { current, desired, action, reason })
    }
}

/// One instance to launch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct LaunchStep {
    /// The id the launch gets: `new-1`, `new-2`, … skipping ids the fleet already carries.
    pub instance_id: String,
    /// Instance type.
    pub instance_type: String,
    /// Its pool priority.
    pub priority: u8,
    /// Availability zone.
    pub availability_zone: String,
    /// Launched into a capacity reservation.
    pub reserved: bool,
}

/// One existing instance to remove.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct RemovalStep {
    /// Instance id.
    pub instance_id: String,
    /// Instance type.
    pub instance_type: String,
    /// Its priority (6 = not in the pool).
    pub priority: u8,
    /// Availability zone.
    pub availability_zone: String,
    /// Copies running on it that must move or stop first.
    pub copies: u32,
}

/// Why fewer instances were changed than asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ChangeLimit {
    /// The fleet would exceed `MaxInstanceCount`.
    MaxInstanceCount(u32),
    /// The fleet would drop below `MinInstanceCount`.
    MinInstanceCount(u32),
    /// No pool type has launch capacity left in any AZ.
    NoCapacity,
}

/// Which instances a change in instance count touches, in order.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct InstanceChanges {
    /// Launches in order (scale-out).
    pub launches: Vec<LaunchStep>,
    /// Removals in order (scale-in).
    pub removals: Vec<RemovalStep>,
    /// Instances asked for but not changed.
    pub shortfall: u64,
    /// What caused the shortfall.
    pub limited_by: Option<ChangeLimit>,
}

impl InstanceChanges {
    /// The launches as `LaunchInstance` actions with their ids ([`LaunchStep::instance_id`]: `new-1`,
    /// `new-2`, … skipping ids the fleet already carries) (removals need
    /// their copies moved first, which is consolidation's job, so they are not turned into
    /// actions here).
    pub fn launch_actions(&self) -> Vec<Action> {
        self.launches
            .iter()
            .map(|step| Action::LaunchInstance {
                instance_id: step.instance_id.clone(),
                instance_type: step.instance_type.clone(),
                availability_zone: step.availability_zone.clone(),
                reserved: step.reserved,
            })
            .collect()
    }
}

/// The instances to launch (`delta > 0`) or remove (`delta < 0`) from the problem's current
/// fleet.
///
/// Launches: each launch walks the pool by priority (then pool order) and takes the first type
/// with launch capacity left (`Reserved + Available` of `Problem::launch_limit`, reservations
/// first) in some AZ; among those AZs it picks the one with the fewest instances (then AZ
/// order). Removals: lowest priority first, then the highest hourly cost (a reserved instance
/// costs 0), then from the AZ with the most instances, then fewest copies, then fleet order.
/// `MaxInstanceCount` and `MinInstanceCount` are respected; what cannot be done is reported as
/// `shortfall`.
///
/// ```
/// use fleetplan::metrics::instance_changes;
/// use fleetplan::{Problem, ScenarioBuilder};
///
/// let scenario = ScenarioBuilder::new(["us-east-1a", "us-east-1b"])
///     .pool("ml.p5.48xlarge", 1)
///     .pool("ml.g6.48xlarge", 2)
///     .capacity("ml.p5.48xlarge", "us-east-1a", Some(1), 0)
///     .capacity("ml.p5.48xlarge", "us-east-1b", Some(0), 0)
///     .component("llm", 1, 4, 8.0, 65_536)
///     .build().unwrap();
/// let problem = Problem::new(&scenario).unwrap();
/// let changes = instance_changes(&problem, 3);
/// let order: Vec<_> = changes.launches.iter().map(|l| (l.instance_type.as_str(), l.availability_zone.as_str())).collect();
/// assert_eq!(order, [
///     ("ml.p5.48xlarge", "us-east-1a"),
///     ("ml.g6.48xlarge", "us-east-1b"),
///     ("ml.g6.48xlarge", "us-east-1a"),
/// ]);
/// ```
pub fn instance_changes(problem: &Problem, delta: i64) -> InstanceChanges {
    let zones = problem.azs().len();
    let mut per_az = vec![0u64; zones];
    for instance in problem.fleet() {
        if let Some(count) = per_az.get_mut(instance.az_index) {
            *count += 1;
        }
    }
    let fleet_size = problem.fleet().len() as u64;
    let scaling = problem.scaling();
    let mut changes = InstanceChanges::default();
    let mut launch_ids = LaunchIds::new(problem);
    let types = problem.instance_types();
    let az_name = |az: usize| problem.azs().get(az).cloned().unwrap_or_default();

    if delta > 0 {
        let mut pool: Vec<usize> = problem.pool_types().collect();
        pool.sort_by_key(|&t| (types.get(t).map_or(u8::MAX, |info| info.priority), t));
        let mut launched = vec![vec![0u32; zones]; types.len()];
        let wanted = delta.unsigned_abs();
        for step in 0..wanted {
            if let Some(max) = scaling.max_instances {
                if fleet_size + step >= u64::from(max) {
                    changes.shortfall = wanted - step;
                    changes.limited_by = Some(ChangeLimit::MaxInstanceCount(max));
                    break;
                }
            }
            let choice = pool.iter().find_map(|&t| {
                let open = (0..zones).filter(|&z| {
                    let used = launched.get(t).and_then(|row| row.get(z)).copied().unwrap_or(0);
                    problem.launch_limit(TypeIndex::new(t), AzIndex::new(z)).total().is_none_or(|total| used < total)
                });
                open.min_by_key(|&z| (per_az.get(z).copied().unwrap_or(0), z)).map(|z| (t, z))
            });
            let Some((t, z)) = choice else {
                changes.shortfall = wanted - step;
                changes.limited_by = Some(ChangeLimit::NoCapacity);
                break;
            };
            let Some(used) = launched.get_mut(t).and_then(|row| row.get_mut(z)) else { break };
            let reserved = *used < problem.launch_limit(TypeIndex::new(t), AzIndex::new(z)).reserved;
            *used += 1;
            if let Some(count) = per_az.get_mut(z) {
                *count += 1;
            }
            changes.launches.push(LaunchStep {
                instance_id: launch_ids.next_id(),
                instance_type: types.get(t).map(|info| info.name.clone()).unwrap_or_default(),
                priority: types.get(t).map_or(0, |info| info.priority),
                availability_zone: az_name(z),
                reserved,
            });
        }
    } else if delta < 0 {
        let wanted = delta.unsigned_abs();
        let mut left: Vec<usize> = (0..problem.fleet().len()).collect();
        for step in 0..wanted {
            if fleet_size - step <= u64::from(scaling.min_instances) {
                changes.shortfall = wanted - step;
                changes.limited_by = Some(ChangeLimit::MinInstanceCount(scaling.min_instances));
                break;
            }
            let key = |&index: &usize| {
                let instance = problem.fleet().get(index)?;
                let priority = types.get(instance.type_index).map_or(0, |info| info.priority);
                let cost = instance_cost_micros(problem, instance.type_index, instance.reserved, CostUnit::UsdPerHour);
                let copies: u32 = instance.copies.iter().map(|&(_, count)| count).sum();
                let crowd = per_az.get(instance.az_index).copied().unwrap_or(0);
                Some((Reverse(priority), Reverse(cost), Reverse(crowd), copies, index))
            };
            let Some((_, position)) =
                left.iter().enumerate().filter_map(|(position, index)| key(index).map(|k| (k, position))).min()
            else {
                break;
            };
            let index = left.remove(position);
            let Some(instance) = problem.fleet().get(index) else { break };
            if let Some(count) = per_az.get_mut(instance.az_index) {
                *count -= 1;
            }
            changes.removals.push(RemovalStep {
                instance_id: instance.id.clone(),
                instance_type: types.get(instance.type_index).map(|info| info.name.clone()).unwrap_or_default(),
                priority: types.get(instance.type_index).map_or(0, |info| info.priority),
                availability_zone: az_name(instance.az_index),
                copies: instance.copies.iter().map(|&(_, count)| count).sum(),
            });
        }
    }
    changes
}
