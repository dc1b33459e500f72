//! Why copies could not be placed, in terms a person can act on.
//!
//! For a component with missing copies, [`explain`] looks at every place a copy could have gone
//! in the final fleet, in the spirit of kube-scheduler's "0/N nodes are available", with counts
//! that add up:
//!
//! - every instance of the final fleet gets exactly one [`InstanceVerdict`]: not eligible, short
//!   of a resource (the first short one, in the order accelerators, CPU, memory), or has room;
//! - every (pool type, AZ) gets exactly one [`LaunchVerdict`]: no specification, a copy larger
//!   than the whole type, blocked by a live capacity error (contract §6), no launch capacity
//!   left, `MaxInstanceCount` reached, or still open.
//!
//! The reasons in [`Unplaced`] are these verdicts grouped into short clauses, e.g.
//! `ml.p5.48xlarge has no capacity in us-east-1b (Available 0)`,
//! `ml.p5.48xlarge in us-east-1b blocked by InsufficientCapacity at 1000 until 1180`,
//! `ml.g6.48xlarge needs 2 accelerators per copy, 0 free (3 instances in us-east-1a)`,
//! `MaxInstanceCount 16 reached (16 instances; blocks 4 launch options)`.
//! Open options ("has room", "could still launch") mean a better plan could place more copies
//! (or, for a fleet before planning, that planning will); they are reported, not hidden.
//!
//! The same verdicts, structured, are [`Unplaced::causes`] ([`UnplacedCause`], from [`causes`]):
//! one per exhausted or blocked (type, AZ), per type too small for a copy, per group of full
//! instances, plus `MaxInstanceCount`, "no eligible type", imbalance and "not placed by this
//! planner" (open options left). The wording in [`Unplaced::reasons`] is kept alongside; the
//! clauses both say (a full instance, a type too small, capacity used up or blocked,
//! `MaxInstanceCount`, imbalance) are worded by one set of functions. All wording lives in the
//! `wording` submodule; this module only decides verdicts and causes. Whether a shortfall is proven is [`crate::Plan::unplaced_is_proven`]. An
//! `Infeasible` status is explained by [`infeasibility`].

mod wording;

use serde::Serialize;

use crate::fleet::{balance_excess, FinalFleet};
use crate::index::{AzIndex, TypeIndex};
use crate::plan::Unplaced;
pub use crate::plan::{Resource, UnplacedCause};
use crate::problem::{CapacityEventKind, Component, Problem, Resources};

/// Why a component may not use an instance type at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Ineligibility {
    /// The type is not in `Endpoint.InstancePools` (a fleet-only instance, priority 6).
    NotInPool,
    /// The component has no specification for this pool type.
    NoSpecification,
}

/// What one instance of the final fleet offers a further copy of the component.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "Kind", rename_all_fields = "PascalCase")]
pub enum InstanceVerdict {
    /// New copies of the component may not run on this instance's type.
    NotEligible {
        /// Why.
        why: Ineligibility,
    },
    /// The first resource (accelerators, CPU, memory) too short for one more copy.
    Short {
        /// Which resource.
        resource: Resource,
        /// Needed per copy.
        need: u64,
        /// Free on this instance.
        free: u64,
    },
    /// One or more further copies would fit.
    Room {
        /// How many further copies fit.
        copies: u64,
    },
}

/// The verdict for one instance of the final fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct InstanceExplanation {
    /// Instance id.
    pub instance_id: String,
    /// Instance type.
    pub instance_type: String,
    /// Availability zone.
    pub availability_zone: String,
    /// What it offers a further copy.
    pub verdict: InstanceVerdict,
}

/// Whether a new instance of one (pool type, AZ) could take a copy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "Kind", rename_all_fields = "PascalCase")]
pub enum LaunchVerdict {
    /// The component has no specification for this pool type.
    NoSpecification,
    /// One copy needs more than a whole, empty instance of this type offers.
    TooLarge {
        /// The first resource that does not fit.
        resource: Resource,
        /// Needed per copy.
        need: u64,
        /// Offered by a whole instance.
        has: u64,
    },
    /// A live capacity error (contract §6) blocks launches of this (type, AZ) in this plan.
    Blocked {
        /// `InsufficientCapacity` or `ProvisioningTimeout`.
        event: CapacityEventKind,
        /// When it happened (caller's clock, seconds).
        time: i64,
        /// When it stops blocking (`Time + CapacityErrorTtlSeconds`).
        until: i64,
    },
    /// `Reserved + Available` launches are used up.
    NoCapacity {
        /// `Available` of the capacity entry.
        available: u32,
        /// `Reserved` of the capacity entry.
        reserved: u32,
        /// Launches of this (type, AZ) in the plan.
        launched: u32,
    },
    /// The final fleet is already at `MaxInstanceCount`.
    MaxInstanceCount {
        /// The limit.
        max: u32,
    },
    /// A launch is still possible.
    Open {
        /// Launches left (`None` = unlimited).
        remaining: Option<u32>,
    },
}

/// The verdict for launching one more instance of a pool type in an AZ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct LaunchExplanation {
    /// Instance type.
    pub instance_type: String,
    /// Its pool priority.
    pub priority: u8,
    /// Availability zone.
    pub availability_zone: String,
    /// Whether a launch there could take a copy.
    pub verdict: LaunchVerdict,
}

/// Everything that stood in the way of one component's missing copies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Explanation {
    /// Component.
    pub inference_component_name: String,
    /// Desired copies (`CopyCount`).
    pub copy_count: u64,
    /// Copies in the final fleet.
    pub placed: u64,
    /// Copies missing (`CopyCount − placed`, at least 0).
    pub missing: u64,
    /// Copies per AZ, in `AvailabilityZones` order.
    pub copies_per_az: Vec<u64>,
    /// `MaxImbalance` when the component has AZ balance.
    pub max_imbalance: Option<u32>,
    /// `max(0, imbalance − MaxImbalance)` of the placed copies.
    pub balance_excess: u64,
    /// One verdict per instance of the final fleet, in fleet order.
    pub instances: Vec<InstanceExplanation>,
    /// One verdict per (pool type, AZ), by priority then pool order, then AZ order.
    pub launches: Vec<LaunchExplanation>,
    /// Grouped clauses (what [`Unplaced::reasons`] carries); empty when nothing is missing.
    pub reasons: Vec<String>,
}

impl Explanation {
    /// Instances of the final fleet that could take at least one more copy.
    pub fn instances_with_room(&self) -> usize {
        self.instances.iter().filter(|i| matches!(i.verdict, InstanceVerdict::Room { .. })).count()
    }

    /// (pool type, AZ) pairs where a launch could still take a copy.
    pub fn open_launches(&self) -> usize {
        self.launches.iter().filter(|l| matches!(l.verdict, LaunchVerdict::Open { .. })).count()
    }
}

/// `Unplaced` entries for a final fleet: per component with missing copies, how many and why.
pub fn unplaced(problem: &Problem, fleet: &FinalFleet) -> Vec<Unplaced> {
    let shared = Shared::new(problem, fleet);
    // Only components with missing copies are explained: this runs after every engine.
    (0..problem.components.len())
        .filter(|&index| shared.missing(problem, index) > 0)
        .filter_map(|index| explain_index(problem, fleet, &shared, index))
        .map(|explanation| Unplaced {
            causes: causes(&explanation, fleet.instances.len()),
            inference_component_name: explanation.inference_component_name,
            copy_count: explanation.missing,
            reasons: explanation.reasons,
        })
        .collect()
}

/// Explanations for every component, in component order.
pub fn explain_all(problem: &Problem, fleet: &FinalFleet) -> Vec<Explanation> {
    let shared = Shared::new(problem, fleet);
    (0..problem.components.len()).filter_map(|index| explain_index(problem, fleet, &shared, index)).collect()
}

/// The explanation for one component by name; `None` if there is no such component.
///
/// ```
/// use fleetplan::{explain::explain, FinalFleet, Problem, ScenarioBuilder};
///
/// let scenario = ScenarioBuilder::new(["us-east-1a", "us-east-1b"])
///     .pool("ml.g6.12xlarge", 1)
///     .capacity("ml.g6.12xlarge", "us-east-1a", Some(0), 0)
///     .capacity("ml.g6.12xlarge", "us-east-1b", Some(0), 0)
///     .component("chat", 2, 1, 4.0, 16_384)
///     .build().unwrap();
/// let problem = Problem::new(&scenario).unwrap();
/// let (fleet, _) = FinalFleet::apply(&problem, &[]);
/// let why = explain(&problem, &fleet, "chat").unwrap();
/// assert_eq!(why.missing, 2);
/// assert_eq!(
///     why.to_string(),
///     "2 copies of chat: 0/0 instances have room, 0/2 launch options open; \
///      ml.g6.12xlarge has no capacity in us-east-1a, us-east-1b (Available 0)"
/// );
/// ```
pub fn explain(problem: &Problem, fleet: &FinalFleet, component: &str) -> Option<Explanation> {
    explain_index(problem, fleet, &Shared::new(problem, fleet), problem.component_index(component)?)
}

/// What every component's explanation needs from the fleet, computed once.
struct Shared {
    /// `[component][az]` copies.
    per_az: Vec<Vec<u64>>,
    /// Resources used on each instance of the fleet (fleet order).
    used: Vec<Resources>,
}

impl Shared {
    fn new(problem: &Problem, fleet: &FinalFleet) -> Shared {
        Shared {
            per_az: fleet.copies_per_az(problem),
            used: fleet.instances.iter().map(|instance| instance.used(problem)).collect(),
        }
    }

    fn missing(&self, problem: &Problem, component: usize) -> u64 {
        let placed: u64 = self.per_az.get(component).map_or(0, |counts| counts.iter().sum());
        problem.components.get(component).map_or(0, |c| u64::from(c.copy_count).saturating_sub(placed))
    }
}

fn explain_index(
    problem: &Problem,
    fleet: &FinalFleet,
    shared: &Shared,
    component_index: usize,
) -> Option<Explanation> {
    let component = problem.components.get(component_index)?;
    let copies_per_az = shared.per_az.get(component_index).cloned().unwrap_or_default();
    let placed: u64 = copies_per_az.iter().sum();
    let copy_count = u64::from(component.copy_count);
    let missing = copy_count.saturating_sub(placed);
    let instances = instance_verdicts(problem, fleet, shared, component);
    let launches = launch_verdicts(problem, fleet, component);

    let mut explanation = Explanation {
        inference_component_name: component.name.clone(),
        copy_count,
        placed,
        missing,
        balance_excess: balance_excess(&copies_per_az, component.max_imbalance),
        copies_per_az,
        max_imbalance: component.max_imbalance,
        instances,
        launches,
        reasons: Vec::new(),
    };
    if missing > 0 {
        explanation.reasons = wording::reasons(problem, &explanation, fleet.instances.len());
    }
    Some(explanation)
}

/// One verdict per instance of the final fleet: what it offers one more copy of `component`.
fn instance_verdicts(
    problem: &Problem,
    fleet: &FinalFleet,
    shared: &Shared,
    component: &Component,
) -> Vec<InstanceExplanation> {
    let az_name = |az: usize| problem.azs.get(az).cloned().unwrap_or_default();
    fleet
        .instances
        .iter()
        .zip(&shared.used)
        .filter_map(|(instance, used)| {
            let info = problem.types.get(instance.type_index)?;
            let verdict = match component.placement_requirement(problem, instance.type_index) {
                None => InstanceVerdict::NotEligible {
                    why: if info.in_pool { Ineligibility::NoSpecification } else { Ineligibility::NotInPool },
                },
                Some(requirement) => {
                    let free = saturating_minus(&info.capacity, used);
                    let need = &requirement.resources;
                    match Resource::ALL.into_iter().find(|r| r.of(need) > r.of(&free)) {
                        Some(resource) => {
                            InstanceVerdict::Short { resource, need: resource.of(need), free: resource.of(&free) }
                        }
                        None => InstanceVerdict::Room { copies: free.copies_of(need) },
                    }
                }
            };
            Some(InstanceExplanation {
                instance_id: instance.id.clone(),
                instance_type: info.name.clone(),
                availability_zone: az_name(instance.az_index),
                verdict,
            })
        })
        .collect()
}

/// One verdict per (pool type, AZ), by priority then pool order, then AZ order: whether a new
/// instance there could take a copy of `component`.
fn launch_verdicts(problem: &Problem, fleet: &FinalFleet, component: &Component) -> Vec<LaunchExplanation> {
    let az_name = |az: usize| problem.azs.get(az).cloned().unwrap_or_default();
    let max_reached = problem.scaling.max_instances.filter(|&max| fleet.instances.len() >= max as usize);
    let mut pool: Vec<usize> = problem.pool_types().collect();
    pool.sort_by_key(|&t| (problem.types[t].priority, t));
    let mut launches = Vec::new();
    for &type_index in &pool {
        let info = &problem.types[type_index];
        for az in 0..problem.azs.len() {
            let group = (TypeIndex::new(type_index), AzIndex::new(az));
            let verdict = match component.placement_requirement(problem, type_index) {
                None => LaunchVerdict::NoSpecification,
                Some(requirement) => {
                    let need = &requirement.resources;
                    let launched = fleet.launches.get(&group).map_or(0, |&(total, _)| total);
                    let limit = problem.launch_limit(group.0, group.1);
                    let remaining = limit.total().map(|total| total.saturating_sub(launched));
                    if let Some(resource) = Resource::ALL.into_iter().find(|r| r.of(need) > r.of(&info.capacity)) {
                        LaunchVerdict::TooLarge { resource, need: resource.of(need), has: resource.of(&info.capacity) }
                    } else if let Some(block) = problem.capacity_block(group.0, group.1) {
                        LaunchVerdict::Blocked { event: block.event, time: block.time, until: block.until }
                    } else if remaining == Some(0) {
                        LaunchVerdict::NoCapacity {
                            available: limit.available.unwrap_or(0),
                            reserved: limit.reserved,
                            launched,
                        }
                    } else if let Some(max) = max_reached {
                        LaunchVerdict::MaxInstanceCount { max }
                    } else {
                        LaunchVerdict::Open { remaining }
                    }
                }
            };
            launches.push(LaunchExplanation {
                instance_type: info.name.clone(),
                priority: info.priority,
                availability_zone: az_name(az),
                verdict,
            });
        }
    }
    launches
}

/// The structured causes of an explanation with missing copies (empty when nothing is missing).
/// `fleet_size` is the number of instances of the final fleet.
pub fn causes(explanation: &Explanation, fleet_size: usize) -> Vec<UnplacedCause> {
    let mut causes = Vec::new();
    if explanation.missing == 0 {
        return causes;
    }
    causes.extend(instances_full(explanation));

    let mut pool_types: Vec<&str> = Vec::new();
    let mut without_specification: Vec<&str> = Vec::new();
    let mut too_small: Vec<&str> = Vec::new();
    let mut max_cause: Option<(u32, u64)> = None;
    for launch in &explanation.launches {
        if !pool_types.contains(&launch.instance_type.as_str()) {
            pool_types.push(&launch.instance_type);
        }
        match &launch.verdict {
            LaunchVerdict::NoSpecification => {
                if !without_specification.contains(&launch.instance_type.as_str()) {
                    without_specification.push(&launch.instance_type);
                }
            }
            LaunchVerdict::TooLarge { resource, need, has } => {
                // One cause per type: the verdict is the same in every AZ.
                if !too_small.contains(&launch.instance_type.as_str()) {
                    too_small.push(&launch.instance_type);
                    causes.push(UnplacedCause::TooLarge {
                        instance_type: launch.instance_type.clone(),
                        resource: *resource,
                        need: *need,
                        has: *has,
                    });
                }
            }
            LaunchVerdict::Blocked { event, time, until } => causes.push(UnplacedCause::CapacityBlocked {
                instance_type: launch.instance_type.clone(),
                availability_zone: launch.availability_zone.clone(),
                event: *event,
                time: *time,
                until: *until,
            }),
            LaunchVerdict::NoCapacity { available, reserved, launched } => {
                causes.push(UnplacedCause::CapacityExhausted {
                    instance_type: launch.instance_type.clone(),
                    availability_zone: launch.availability_zone.clone(),
                    available: *available,
                    reserved: *reserved,
                    launched: *launched,
                })
            }
            LaunchVerdict::MaxInstanceCount { max } => {
                let blocked = max_cause.map_or(0, |(_, blocked)| blocked);
                max_cause = Some((*max, blocked + 1));
            }
            LaunchVerdict::Open { .. } => {}
        }
    }
    if let Some((max, blocked_launches)) = max_cause {
        causes.push(UnplacedCause::MaxInstanceCount { max, instances: fleet_size as u64, blocked_launches });
    }
    if without_specification.len() + too_small.len() == pool_types.len() {
        causes.push(UnplacedCause::NoEligibleType {
            pool_types: pool_types.len() as u64,
            without_specification: without_specification.len() as u64,
            too_small: too_small.len() as u64,
        });
    }
    if explanation.balance_excess > 0 {
        causes.push(UnplacedCause::Imbalance {
            copies_per_az: explanation.copies_per_az.clone(),
            max_imbalance: explanation.max_imbalance.unwrap_or(0),
            excess: explanation.balance_excess,
        });
    }
    let (instances_with_room, open_launches) = (explanation.instances_with_room(), explanation.open_launches());
    if instances_with_room + open_launches > 0 {
        causes.push(UnplacedCause::NotPlacedByPlanner {
            instances_with_room: instances_with_room as u64,
            open_launches: open_launches as u64,
        });
    }
    causes
}

/// Instances short of a resource, grouped by (type, resource, need) in fleet order of first sight.
fn instances_full(explanation: &Explanation) -> Vec<UnplacedCause> {
    let mut full: Vec<UnplacedCause> = Vec::new();
    for instance in &explanation.instances {
        let InstanceVerdict::Short { resource, need, free } = instance.verdict else { continue };
        let existing = full.iter_mut().find(|cause| {
            matches!(cause, UnplacedCause::InstancesFull { instance_type, resource: r, need: n, .. }
                if *instance_type == instance.instance_type && *r == resource && *n == need)
        });
        match existing {
            Some(UnplacedCause::InstancesFull { most_free, instances, .. }) => {
                *most_free = (*most_free).max(free);
                *instances += 1;
            }
            _ => full.push(UnplacedCause::InstancesFull {
                instance_type: instance.instance_type.clone(),
                resource,
                need,
                most_free: free,
                instances: 1,
            }),
        }
    }
    full
}

/// Why `MinInstanceCount` cannot be reached: the existing fleet plus every launch the capacity
/// entries allow fall short of it (see [`infeasibility`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Infeasibility {
    /// `MinInstanceCount`.
    pub min_instances: u32,
    /// Instances of the existing fleet (draining ones included: they count until released).
    pub existing: u64,
    /// Σ `Available + Reserved` over pool (type, AZ) pairs not blocked by a capacity error.
    pub launchable: u64,
    /// Pool (type, AZ) pairs blocked by a live capacity error (their capacity is not counted).
    pub blocked: u64,
}

/// Why `MinInstanceCount` cannot be reached, or `None` when it can (some pool (type, AZ) has
/// unlimited capacity, or the existing fleet and the launchable capacity add up to it).
///
/// This is the reason for [`crate::Status::Infeasible`] plans; [`crate::render::plan_table`]
/// prints it for them.
pub fn infeasibility(problem: &Problem) -> Option<Infeasibility> {
    let mut launchable: u64 = 0;
    let mut blocked: u64 = 0;
    for type_index in problem.pool_types() {
        let type_index = TypeIndex::new(type_index);
        for az in (0..problem.azs.len()).map(AzIndex::new) {
            if problem.capacity_block(type_index, az).is_some() {
                blocked += 1;
                continue;
            }
            // Unlimited capacity anywhere: MinInstanceCount can always be reached.
            launchable = launchable.saturating_add(u64::from(problem.launch_limit(type_index, az).total()?));
        }
    }
    let existing = problem.fleet.len() as u64;
    let min_instances = problem.scaling.min_instances;
    (existing.saturating_add(launchable) < u64::from(min_instances)).then_some(Infeasibility {
        min_instances,
        existing,
        launchable,
        blocked,
    })
}

fn saturating_minus(have: &Resources, used: &Resources) -> Resources {
    Resources {
        accelerators: have.accelerators.saturating_sub(used.accelerators),
        milli_cpus: have.milli_cpus.saturating_sub(used.milli_cpus),
        memory_mib: have.memory_mib.saturating_sub(used.memory_mib),
    }
}
