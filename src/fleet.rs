//! The final fleet a plan leads to, and the objective it reaches.
//!
//! Every engine emits [`Action`]s; this module is the one place that turns actions back into a
//! fleet ([`FinalFleet::apply`]) and a fleet into its objective ([`objective`]). `verify` and all
//! engines go through it, so there is a single definition of L1–L4.

use std::collections::BTreeMap;

use crate::index::{AzIndex, TypeIndex};
use crate::model::{Fleet, FleetCopy, FleetInstance};
use crate::plan::{Action, CostUnit, Objective};
use crate::problem::{Problem, Resources};
use crate::violation::{Violation, ViolationKind};

/// One instance of the final fleet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinalInstance {
    /// Instance id (existing id or `new-N`).
    pub id: String,
    /// Type index.
    pub type_index: usize,
    /// AZ index.
    pub az_index: usize,
    /// Runs in (or was launched into) a reservation: costs nothing.
    pub reserved: bool,
    /// Index into [`Problem::fleet`] for existing instances, `None` for launches.
    pub existing: Option<usize>,
    /// Every copy on it at the end: component index → count.
    pub copies: BTreeMap<usize, u32>,
    /// The subset of `copies` placed by the plan.
    pub new_copies: BTreeMap<usize, u32>,
}

impl FinalInstance {
    /// Resources the copies use (existing copies measured with their own type's requirement).
    pub fn used(&self, problem: &Problem) -> Resources {
        problem.copies_footprint(self.type_index, &self.copies)
    }

    /// Copies of one component.
    pub fn copies_of(&self, component: usize) -> u32 {
        self.copies.get(&component).copied().unwrap_or(0)
    }

    /// Copies of every component together.
    pub fn total_copies(&self) -> u64 {
        self.copies.values().map(|&n| u64::from(n)).sum()
    }
}

/// The fleet after a plan's actions.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FinalFleet {
    /// Kept existing instances (fleet order), then launches (launch order).
    pub instances: Vec<FinalInstance>,
    /// Launches per (type, AZ): (total, reserved-flagged).
    pub launches: BTreeMap<(TypeIndex, AzIndex), (u32, u32)>,
    /// Existing copies removed per component.
    pub removed: BTreeMap<usize, u32>,
}

impl FinalFleet {
    /// Applies actions to the problem's fleet. Structural problems (unknown ids, removing what
    /// does not exist, terminating a busy instance, …) are returned as violations; the fleet is
    /// built as far as the actions make sense.
    pub fn apply(problem: &Problem, actions: &[Action]) -> (FinalFleet, Vec<Violation>) {
        let mut replay = ActionReplay::new(problem);
        for action in actions {
            match action {
                Action::LaunchInstance { instance_id, instance_type, availability_zone, reserved } => {
                    replay.launch(instance_id, instance_type, availability_zone, *reserved)
                }
                Action::PlaceCopy { component, instance_id, model_name } => {
                    replay.place(component, instance_id, model_name.as_deref())
                }
                Action::RemoveCopy { component, instance_id } => replay.remove(component, instance_id),
                Action::TerminateInstance { instance_id } => replay.terminate(instance_id),
            }
        }
        replay.finish()
    }

    /// The fleet as the scenario's `Fleet` (the model type a next scenario takes): instances in
    /// this fleet's order under their ids here (`new-N` for launches), one copy entry per
    /// instance and component with copies, sorted by component; `reserved` kept, `Draining`
    /// carried over from the problem's fleet. To map launch ids to real ones, use the
    /// executors ([`execute_plan`](crate::execute_plan) and the like).
    ///
    /// ```
    /// use fleetplan::{consolidate, Problem, ScenarioBuilder};
    /// let scenario = ScenarioBuilder::new(["a"])
    ///     .pool("ml.g6.12xlarge", 1)
    ///     .component("chat", 2, 1, 1.0, 1024)
    ///     .strategy("chat", fleetplan::PlacementStrategy::Binpack)
    ///     .fleet_instance("i-1", "ml.g6.12xlarge", "a", false)
    ///     .fleet_instance("i-2", "ml.g6.12xlarge", "a", false)
    ///     .fleet_copies("chat", "i-1", 1)
    ///     .fleet_copies("chat", "i-2", 1)
    ///     .build().unwrap();
    /// let problem = Problem::new(&scenario).unwrap();
    /// let fleet = consolidate(&problem).final_fleet(&problem).to_fleet(&problem);
    /// assert_eq!(fleet.instances.len(), 1);
    /// assert_eq!(fleet.copies[0].copy_count, 2);
    /// ```
    pub fn to_fleet(&self, problem: &Problem) -> Fleet {
        self.to_fleet_with_ids(problem, &BTreeMap::new())
    }

    /// [`to_fleet`](Self::to_fleet) with instance ids mapped through `ids` (unmapped ids kept).
    pub(crate) fn to_fleet_with_ids(&self, problem: &Problem, ids: &BTreeMap<String, String>) -> Fleet {
        let mut out = Fleet::default();
        for instance in &self.instances {
            let id = ids.get(&instance.id).cloned().unwrap_or_else(|| instance.id.clone());
            let draining = instance
                .existing
                .and_then(|index| problem.fleet().get(index))
                .is_some_and(|existing| existing.draining);
            out.instances.push(FleetInstance {
                instance_id: id.clone(),
                instance_type: problem
                    .instance_types()
                    .get(instance.type_index)
                    .map(|info| info.name.clone())
                    .unwrap_or_default(),
                availability_zone: problem.azs().get(instance.az_index).cloned().unwrap_or_default(),
                reserved: instance.reserved,
                state: draining.then_some(crate::model::InstanceState::Draining),
            });
            for (&component, &count) in instance.copies.iter().filter(|(_, &count)| count > 0) {
                out.copies.push(FleetCopy {
                    inference_component_name: problem
                        .components()
                        .get(component)
                        .map(|component| component.name.clone())
                        .unwrap_or_default(),
                    instance_id: id.clone(),
                    copy_count: count,
                });
            }
        }
        out
    }

    /// Copies of each component per AZ: `[component][az]`.
    pub fn copies_per_az(&self, problem: &Problem) -> Vec<Vec<u64>> {
        let mut counts = vec![vec![0u64; problem.azs.len()]; problem.components.len()];
        for instance in &self.instances {
            for (&component, &count) in &instance.copies {
                counts[component][instance.az_index] += u64::from(count);
            }
        }
        counts
    }
}

/// The state of [`FinalFleet::apply`] while it replays actions in order, one method per kind.
struct ActionReplay<'p> {
    problem: &'p Problem,
    instances: Vec<FinalInstance>,
    by_id: BTreeMap<String, usize>,
    /// Name lookups in logarithmic time: plans carry one action per copy.
    component_by_name: BTreeMap<&'p str, usize>,
    terminated: Vec<bool>,
    launches: BTreeMap<(TypeIndex, AzIndex), (u32, u32)>,
    removed: BTreeMap<usize, u32>,
    violations: Vec<Violation>,
}

impl<'p> ActionReplay<'p> {
    fn new(problem: &'p Problem) -> ActionReplay<'p> {
        let instances: Vec<FinalInstance> = problem
            .fleet
            .iter()
            .enumerate()
            .map(|(index, existing)| FinalInstance {
                id: existing.id.clone(),
                type_index: existing.type_index,
                az_index: existing.az_index,
                reserved: existing.reserved,
                existing: Some(index),
                copies: existing.copies.iter().copied().collect(),
                new_copies: BTreeMap::new(),
            })
            .collect();
        ActionReplay {
            problem,
            by_id: instances.iter().enumerate().map(|(i, inst)| (inst.id.clone(), i)).collect(),
            component_by_name: problem.components.iter().enumerate().map(|(i, c)| (c.name.as_str(), i)).collect(),
            terminated: vec![false; instances.len()],
            instances,
            launches: BTreeMap::new(),
            removed: BTreeMap::new(),
            violations: Vec::new(),
        }
    }

    fn violation(&mut self, kind: ViolationKind, message: String) {
        self.violations.push(Violation { kind, message });
    }

    /// The component and instance an action names, or a `Reference` violation.
    fn resolve(&mut self, action: &str, component: &str, instance_id: &str) -> Option<(usize, usize)> {
        let Some(&component_index) = self.component_by_name.get(component) else {
            self.violation(ViolationKind::Reference, format!("{action}: unknown component {component:?}"));
            return None;
        };
        let Some(&instance) = self.by_id.get(instance_id) else {
            self.violation(ViolationKind::Reference, format!("{action} {component}: unknown instance {instance_id:?}"));
            return None;
        };
        Some((component_index, instance))
    }

    fn launch(&mut self, instance_id: &str, instance_type: &str, availability_zone: &str, reserved: bool) {
        let problem = self.problem;
        let type_index = problem.type_index(instance_type);
        let az_index = problem.az_index(availability_zone);
        if self.by_id.contains_key(instance_id) {
            self.violation(ViolationKind::Reference, format!("LaunchInstance {instance_id}: the id is already in use"));
            return;
        }
        let (Some(type_index), Some(az_index)) = (type_index, az_index) else {
            self.violation(
                ViolationKind::Reference,
                format!("LaunchInstance {instance_id}: unknown type {instance_type:?} or AZ {availability_zone:?}"),
            );
            return;
        };
        if !problem.types[type_index].in_pool {
            self.violation(
                ViolationKind::Eligibility,
                format!("LaunchInstance {instance_id}: {instance_type} is not in Endpoint.InstancePools"),
            );
        }
        let entry = self.launches.entry((TypeIndex::new(type_index), AzIndex::new(az_index))).or_insert((0, 0));
        entry.0 += 1;
        entry.1 += u32::from(reserved);
        self.by_id.insert(instance_id.to_string(), self.instances.len());
        self.terminated.push(false);
        self.instances.push(FinalInstance {
            id: instance_id.to_string(),
            type_index,
            az_index,
            reserved,
            existing: None,
            copies: BTreeMap::new(),
            new_copies: BTreeMap::new(),
        });
    }

    fn place(&mut self, component: &str, instance_id: &str, model_name: Option<&str>) {
        let problem = self.problem;
        let Some((component_index, instance)) = self.resolve("PlaceCopy", component, instance_id) else { return };
        if self.terminated[instance] {
            self.violation(
                ViolationKind::Reference,
                format!("PlaceCopy {component}: instance {instance_id} is terminated"),
            );
            return;
        }
        let type_index = self.instances[instance].type_index;
        match problem.components[component_index].placement_requirement(problem, type_index) {
            None => self.violation(
                ViolationKind::Eligibility,
                format!(
                    "PlaceCopy {component} on {instance_id}: {component} may not run on {}",
                    problem.types[type_index].name
                ),
            ),
            Some(requirement) => {
                if model_name.is_some()
                    && requirement.model_name.is_some()
                    && model_name != requirement.model_name.as_deref()
                    && model_name != requirement.other_model_name.as_deref()
                {
                    self.violation(
                        ViolationKind::Eligibility,
                        format!(
                            "PlaceCopy {component} on {instance_id}: model {:?} is not the build for {} ({:?})",
                            model_name.unwrap_or_default(),
                            problem.types[type_index].name,
                            requirement.model_name.as_deref().unwrap_or_default()
                        ),
                    );
                }
            }
        }
        let target = &mut self.instances[instance];
        *target.copies.entry(component_index).or_insert(0) += 1;
        *target.new_copies.entry(component_index).or_insert(0) += 1;
    }

    fn remove(&mut self, component: &str, instance_id: &str) {
        let Some((component_index, instance)) = self.resolve("RemoveCopy", component, instance_id) else { return };
        let target = &self.instances[instance];
        let existing_left =
            target.copies_of(component_index) - target.new_copies.get(&component_index).copied().unwrap_or(0);
        if target.existing.is_none() || existing_left == 0 {
            self.violation(
                ViolationKind::Removal,
                format!("RemoveCopy {component} on {instance_id}: no existing copy of {component} runs there"),
            );
            return;
        }
        let copies = &mut self.instances[instance].copies;
        if let Some(count) = copies.get_mut(&component_index) {
            *count -= 1;
            if *count == 0 {
                copies.remove(&component_index);
            }
        }
        *self.removed.entry(component_index).or_insert(0) += 1;
    }

    fn terminate(&mut self, instance_id: &str) {
        let Some(&instance) = self.by_id.get(instance_id) else {
            self.violation(ViolationKind::Reference, format!("TerminateInstance: unknown instance {instance_id:?}"));
            return;
        };
        if self.instances[instance].existing.is_none() {
            self.violation(
                ViolationKind::Reference,
                format!("TerminateInstance {instance_id}: only existing instances are terminated"),
            );
            return;
        }
        if self.terminated[instance] {
            self.violation(ViolationKind::Reference, format!("TerminateInstance {instance_id}: terminated twice"));
            return;
        }
        if !self.instances[instance].copies.is_empty() {
            self.violation(
                ViolationKind::Removal,
                format!("TerminateInstance {instance_id}: the instance still runs copies (remove them first)"),
            );
        }
        self.terminated[instance] = true;
    }

    fn finish(self) -> (FinalFleet, Vec<Violation>) {
        let instances = self
            .instances
            .into_iter()
            .zip(self.terminated)
            .filter(|(_, gone)| !gone)
            .map(|(instance, _)| instance)
            .collect();
        (FinalFleet { instances, launches: self.launches, removed: self.removed }, self.violations)
    }
}

/// Imbalance of one component: most minus fewest copies over all AZs (an empty AZ counts 0).
pub fn imbalance(copies_per_az: &[u64]) -> u64 {
    let most = copies_per_az.iter().copied().max().unwrap_or(0);
    let fewest = copies_per_az.iter().copied().min().unwrap_or(0);
    most - fewest
}

/// Balance excess of one component: `max(0, (max − min) − MaxImbalance)` over all AZs.
pub fn balance_excess(copies_per_az: &[u64], max_imbalance: Option<u32>) -> u64 {
    let Some(limit) = max_imbalance else { return 0 };
    imbalance(copies_per_az).saturating_sub(u64::from(limit))
}

/// Hourly price of one instance in millionths; `None` when the type has no price. Validation
/// caps prices at 1e9, so this is at most 1e15 and fits an `i64`.
pub fn price_micros(problem: &Problem, type_index: usize) -> Option<i64> {
    let price = problem.types.get(type_index)?.hourly_price?;
    Some(i64::try_from(crate::plan::to_micros(price)).unwrap_or(i64::MAX))
}

/// Cost of one non-reserved instance whose type has no price (one unit, in millionths).
pub const UNIT_COST_MICROS: i64 = 1_000_000;

/// The unit a fleet's L4 cost counts in: instances as soon as any instance of the fleet lacks
/// a price (a missing price cannot be added to prices), dollars per hour otherwise.
pub fn cost_unit(any_unpriced: bool) -> CostUnit {
    if any_unpriced {
        CostUnit::Instances
    } else {
        CostUnit::UsdPerHour
    }
}

/// [`cost_unit`] of a fleet made of instances of these types.
pub fn fleet_cost_unit(problem: &Problem, type_indices: impl IntoIterator<Item = usize>) -> CostUnit {
    cost_unit(type_indices.into_iter().any(|type_index| price_micros(problem, type_index).is_none()))
}

/// What one paid instance of `type_index` costs under `unit`, in millionths: one unit when the
/// fleet counts instances, else its price (`None` when it has none).
pub fn paid_cost_micros(problem: &Problem, type_index: usize, unit: CostUnit) -> Option<i64> {
    match unit {
        CostUnit::Instances => Some(UNIT_COST_MICROS),
        CostUnit::UsdPerHour => price_micros(problem, type_index),
    }
}

/// L4 cost of one instance under `unit`, in millionths: nothing when it is reserved, else
/// [`paid_cost_micros`] (an unpriced type cannot occur in a fleet costed in dollars).
pub fn instance_cost_micros(problem: &Problem, type_index: usize, reserved: bool, unit: CostUnit) -> i64 {
    if reserved {
        0
    } else {
        paid_cost_micros(problem, type_index, unit).unwrap_or(0)
    }
}

/// L4 cost of one instance costed as if it were the whole fleet, in millionths: its price, one
/// unit when it has none, nothing when reserved. A heuristic for ranking instances before the
/// fleet they end up in (and so its cost unit) is known.
pub fn solo_cost_micros(problem: &Problem, type_index: usize, reserved: bool) -> i64 {
    instance_cost_micros(problem, type_index, reserved, fleet_cost_unit(problem, [type_index]))
}

/// The objective (L1–L4) of a final fleet. The single definition used everywhere.
pub fn objective(problem: &Problem, fleet: &FinalFleet) -> Objective {
    let per_az = fleet.copies_per_az(problem);
    let placed_copies = per_az.iter().flatten().sum();
    let balance_excess = problem
        .components
        .iter()
        .zip(&per_az)
        .map(|(component, counts)| balance_excess(counts, component.max_imbalance))
        .sum();
    let mut instances_by_priority = BTreeMap::new();
    for instance in &fleet.instances {
        *instances_by_priority.entry(problem.types[instance.type_index].priority).or_insert(0) += 1;
    }
    let cost_unit = fleet_cost_unit(problem, fleet.instances.iter().map(|instance| instance.type_index));
    // Exact and wide: i128 cannot overflow on any fleet (see `Objective::cost_micros`).
    let cost_micros = fleet
        .instances
        .iter()
        .map(|instance| i128::from(instance_cost_micros(problem, instance.type_index, instance.reserved, cost_unit)))
        .sum();
    Objective { placed_copies, balance_excess, instances_by_priority, cost_micros, cost_unit }
}

/// The objective reached by a list of actions (ignoring structural violations).
pub fn objective_of_actions(problem: &Problem, actions: &[Action]) -> Objective {
    objective(problem, &FinalFleet::apply(problem, actions).0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InstanceTypeSpec, ScenarioBuilder};

    fn launch(id: &str, instance_type: &str, az: &str, reserved: bool) -> Action {
        Action::LaunchInstance {
            instance_id: id.into(),
            instance_type: instance_type.into(),
            availability_zone: az.into(),
            reserved,
        }
    }

    #[test]
    fn balance_counts_empty_azs_as_zero() {
        assert_eq!(balance_excess(&[3, 0, 3], Some(1)), 2);
        assert_eq!(balance_excess(&[2, 2], Some(0)), 0);
        assert_eq!(balance_excess(&[5, 0], None), 0);
    }

    #[test]
    fn reserved_instances_are_free_and_priorities_are_counted() {
        let priced = |name: &str, price| InstanceTypeSpec {
            instance_type: name.into(),
            accelerator_count: 4,
            accelerator_memory_gib: 24.0,
            v_cpu_count: 48.0,
            memory_in_mb: 196_608.0,
            hourly_price: Some(price),
        };
        let scenario = ScenarioBuilder::new(["a"])
            .instance_type(priced("ml.x", 10.0))
            .instance_type(priced("ml.y", 3.0))
            .pool("ml.x", 1)
            .pool("ml.y", 2)
            .build()
            .unwrap();
        let problem = Problem::new(&scenario).unwrap();
        let actions = [
            launch("new-1", "ml.x", "a", true),
            launch("new-2", "ml.x", "a", false),
            launch("new-3", "ml.y", "a", false),
        ];
        let objective = objective_of_actions(&problem, &actions);
        assert_eq!(objective.cost_micros, 13_000_000);
        assert_eq!(objective.instances_by_priority, BTreeMap::from([(1, 2), (2, 1)]));
    }

    #[test]
    fn a_missing_price_makes_every_paid_instance_cost_one() {
        let scenario = ScenarioBuilder::new(["a"]).pool("ml.g5.xlarge", 1).build().unwrap();
        let problem = Problem::new(&scenario).unwrap();
        let actions = [launch("new-1", "ml.g5.xlarge", "a", false), launch("new-2", "ml.g5.xlarge", "a", false)];
        assert_eq!(objective_of_actions(&problem, &actions).cost_micros, 2_000_000);
    }

    #[test]
    fn instance_costs_follow_the_fleets_cost_unit() {
        let scenario = ScenarioBuilder::new(["a"])
            .instance_type(InstanceTypeSpec {
                instance_type: "ml.x".into(),
                accelerator_count: 4,
                accelerator_memory_gib: 24.0,
                v_cpu_count: 48.0,
                memory_in_mb: 196_608.0,
                hourly_price: Some(2.5),
            })
            .pool("ml.x", 1)
            .pool("ml.g5.xlarge", 2)
            .build()
            .unwrap();
        let problem = Problem::new(&scenario).unwrap();
        let (priced, unpriced) = (problem.type_index("ml.x").unwrap(), problem.type_index("ml.g5.xlarge").unwrap());
        assert_eq!(fleet_cost_unit(&problem, [priced]), CostUnit::UsdPerHour);
        assert_eq!(fleet_cost_unit(&problem, [priced, unpriced]), CostUnit::Instances);
        assert_eq!(instance_cost_micros(&problem, priced, false, CostUnit::UsdPerHour), 2_500_000);
        assert_eq!(instance_cost_micros(&problem, priced, false, CostUnit::Instances), UNIT_COST_MICROS);
        assert_eq!(instance_cost_micros(&problem, priced, true, CostUnit::Instances), 0);
        // Costed on its own, each instance keeps its price or costs one unit without one.
        assert_eq!(solo_cost_micros(&problem, priced, false), 2_500_000);
        assert_eq!(solo_cost_micros(&problem, unpriced, false), UNIT_COST_MICROS);
    }
}
