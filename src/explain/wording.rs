//! The wording of explanations: the grouped clauses of [`Unplaced::reasons`](crate::Unplaced::reasons)
//! (one per group of instances or launch options with the same verdict, AZs listed) and the
//! `Display` of [`UnplacedCause`], [`Explanation`] and [`Infeasibility`]. The analysis in the
//! parent module only builds verdicts and causes; every sentence a person reads is written here,
//! and the clauses both say are written once (in [`clause`]) so they cannot drift apart.

use std::collections::BTreeMap;
use std::fmt;

use super::{Explanation, Ineligibility, Infeasibility, InstanceVerdict, LaunchVerdict, Resource, UnplacedCause};
use crate::problem::Problem;
use crate::text::plural;

impl Resource {
    /// `amount` of this resource in words, e.g. `2 accelerators`, `8 vCPU`, `16384 MiB`.
    pub fn describe(self, amount: u64) -> String {
        match self {
            Resource::Accelerators => format!("{amount} accelerator{}", plural(amount)),
            Resource::MilliCpus => format!("{} vCPU", milli_to_text(amount)),
            Resource::MemoryMib => format!("{amount} MiB memory"),
        }
    }
}

impl fmt::Display for Explanation {
    /// `2 copies of llm: 0/5 instances have room, 0/6 launch options open; …`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} cop{} of {}",
            self.missing,
            if self.missing == 1 { "y" } else { "ies" },
            self.inference_component_name
        )?;
        if self.reasons.is_empty() {
            return write!(f, " missing");
        }
        write!(f, ": {}", self.reasons.join("; "))
    }
}

impl fmt::Display for UnplacedCause {
    /// One clause, e.g. `ml.p5.48xlarge has no capacity left in us-east-1b (Available 0, Reserved 0, 0 launched by the plan)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnplacedCause::CapacityExhausted { instance_type, availability_zone, available, reserved, launched } => f
                .write_str(&clause::no_capacity_left(
                    instance_type,
                    availability_zone,
                    *available,
                    *reserved,
                    *launched,
                )),
            UnplacedCause::CapacityBlocked { instance_type, availability_zone, event, time, until } => {
                f.write_str(&clause::blocked(instance_type, availability_zone, *event, *time, *until))
            }
            UnplacedCause::MaxInstanceCount { max, instances, blocked_launches } => {
                f.write_str(&clause::max_instances(*max, *instances, *blocked_launches))
            }
            UnplacedCause::TooLarge { instance_type, resource, need, has } => {
                f.write_str(&clause::too_large(instance_type, *resource, *need, *has))
            }
            UnplacedCause::NoEligibleType { pool_types, without_specification, too_small } => write!(
                f,
                "no pool type can take a copy ({pool_types} pool type{}: {without_specification} without \
                 specification, {too_small} too small)",
                plural(*pool_types)
            ),
            UnplacedCause::InstancesFull { instance_type, resource, need, most_free, instances } => {
                let where_ = format!("{instances} instance{}", plural(*instances));
                f.write_str(&clause::short(instance_type, *resource, *need, *most_free, &where_))
            }
            UnplacedCause::Imbalance { copies_per_az, max_imbalance, excess } => {
                f.write_str(&clause::imbalance(copies_per_az, None, *max_imbalance, *excess))
            }
            UnplacedCause::NotPlacedByPlanner { instances_with_room, open_launches } => write!(
                f,
                "not placed by this planner ({instances_with_room} instance{} with room, {open_launches} launch \
                 option{} open)",
                plural(*instances_with_room),
                plural(*open_launches)
            ),
        }
    }
}

impl fmt::Display for Infeasibility {
    /// `MinInstanceCount 5 cannot be reached: 1 existing instance + 2 launchable (Available + Reserved
    /// over pool types and AZs, 1 blocked by a capacity error not counted) = 3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MinInstanceCount {} cannot be reached: {} existing instance{} + {} launchable (Available + Reserved \
             over pool types and AZs",
            self.min_instances,
            self.existing,
            plural(self.existing),
            self.launchable
        )?;
        if self.blocked > 0 {
            write!(f, ", {} blocked by a capacity error not counted", self.blocked)?;
        }
        write!(f, ") = {}", self.existing.saturating_add(self.launchable))
    }
}

/// (type rank, verdict kind, short resource, need per copy).
type GroupKey = (usize, u8, Option<Resource>, u64);
/// (type name, AZ of each instance, most free or total room, instance count).
type GroupTally = (String, Vec<String>, u64, u64);

/// Groups verdicts into clauses; every instance and every launch option is counted exactly once.
pub(super) fn reasons(problem: &Problem, explanation: &Explanation, fleet_size: usize) -> Vec<String> {
    let mut clauses = vec![format!(
        "{}/{} instances have room, {}/{} launch options open",
        explanation.instances_with_room(),
        explanation.instances.len(),
        explanation.open_launches(),
        explanation.launches.len()
    )];
    clauses.extend(instance_clauses(problem, explanation));
    clauses.extend(launch_clauses(problem, explanation, fleet_size));
    if explanation.balance_excess > 0 {
        clauses.push(clause::imbalance(
            &explanation.copies_per_az,
            Some(&problem.azs),
            explanation.max_imbalance.unwrap_or(0),
            explanation.balance_excess,
        ));
    }
    clauses
}

/// Instances grouped by (type, verdict kind, short resource and need), in type order.
fn instance_clauses(problem: &Problem, explanation: &Explanation) -> Vec<String> {
    let name = &explanation.inference_component_name;
    let mut clauses = Vec::new();
    let type_rank = |type_name: &str| problem.type_index(type_name).unwrap_or(usize::MAX);
    let mut instance_groups: BTreeMap<GroupKey, GroupTally> = BTreeMap::new();
    for instance in &explanation.instances {
        let (kind, resource, need, amount) = match &instance.verdict {
            InstanceVerdict::NotEligible { why: Ineligibility::NotInPool } => (0, None, 0, 0),
            InstanceVerdict::NotEligible { why: Ineligibility::NoSpecification } => (1, None, 0, 0),
            InstanceVerdict::Short { resource, need, free } => (2, Some(*resource), *need, *free),
            InstanceVerdict::Room { copies } => (3, None, 0, *copies),
        };
        let entry = instance_groups
            .entry((type_rank(&instance.instance_type), kind, resource, need))
            .or_insert_with(|| (instance.instance_type.clone(), Vec::new(), 0, 0));
        entry.1.push(instance.availability_zone.clone());
        // Short: the most free of the group; Room: copies that would fit in total.
        entry.2 = if kind == 2 { entry.2.max(amount) } else { entry.2.saturating_add(amount) };
        entry.3 += 1;
    }
    for ((_, kind, resource, need), (type_name, azs, amount, count)) in instance_groups {
        let where_ = format!("{count} instance{} in {}", plural(count), join_azs(problem, &azs));
        clauses.push(match (kind, resource) {
            (0, _) => format!("{type_name} is not in InstancePools ({where_})"),
            (1, _) => format!("{name} has no specification for {type_name} ({where_})"),
            (2, Some(resource)) => clause::short(&type_name, resource, need, amount, &where_),
            // A copy that needs nothing fits without limit (copies_of saturates at u64::MAX).
            _ if amount == u64::MAX => format!("{type_name} has room for any number of copies ({where_})"),
            _ => format!(
                "{type_name} has room for {amount} more cop{} ({where_})",
                if amount == 1 { "y" } else { "ies" }
            ),
        });
    }

    clauses
}

/// Launch options grouped by (type, verdict), AZs listed; `MaxInstanceCount` once for all types.
fn launch_clauses(problem: &Problem, explanation: &Explanation, fleet_size: usize) -> Vec<String> {
    let name = &explanation.inference_component_name;
    let mut clauses = Vec::new();
    let mut launch_groups: Vec<(String, LaunchVerdict, Vec<String>)> = Vec::new();
    let mut blocked_by_max = 0u64;
    let mut max_limit = None;
    for launch in &explanation.launches {
        if let LaunchVerdict::MaxInstanceCount { max } = launch.verdict {
            blocked_by_max += 1;
            max_limit = Some(max);
            continue;
        }
        match launch_groups.iter_mut().find(|(t, v, _)| *t == launch.instance_type && *v == launch.verdict) {
            Some(group) => group.2.push(launch.availability_zone.clone()),
            None => launch_groups.push((
                launch.instance_type.clone(),
                launch.verdict.clone(),
                vec![launch.availability_zone.clone()],
            )),
        }
    }
    for (type_name, verdict, azs) in launch_groups {
        let in_azs = join_azs(problem, &azs);
        clauses.push(match verdict {
            LaunchVerdict::NoSpecification => format!("{name} has no specification for new {type_name} in {in_azs}"),
            LaunchVerdict::TooLarge { resource, need, has } => {
                format!("{} in {in_azs}", clause::too_large(&type_name, resource, need, has))
            }
            LaunchVerdict::Blocked { event, time, until } => clause::blocked(&type_name, &in_azs, event, time, until),
            LaunchVerdict::NoCapacity { available, reserved, launched } => {
                if reserved == 0 && launched == 0 {
                    format!("{type_name} has no capacity in {in_azs} (Available {available})")
                } else {
                    clause::no_capacity_left(&type_name, &in_azs, available, reserved, launched)
                }
            }
            LaunchVerdict::Open { remaining } => format!(
                "{type_name} could still launch in {in_azs} ({})",
                remaining.map_or("unlimited".to_string(), |left| format!("{left} left"))
            ),
            LaunchVerdict::MaxInstanceCount { .. } => continue,
        });
    }
    if let Some(max) = max_limit {
        clauses.push(clause::max_instances(max, fleet_size as u64, blocked_by_max));
    }
    clauses
}

/// The wording of the clauses that [`UnplacedCause`]'s `Display` (one cause, one place) and
/// the grouped [`Unplaced::reasons`] (AZs and instances listed) both say, written once so the
/// two cannot drift apart.
mod clause {
    use super::{plural, Resource};
    use crate::problem::CapacityEventKind;

    /// `ml.g6.48xlarge needs 2 accelerators per copy, 0 free (3 instances in us-east-1a)`.
    pub(super) fn short(instance_type: &str, resource: Resource, need: u64, most_free: u64, where_: &str) -> String {
        let free = if most_free == 0 { "0".to_string() } else { format!("at most {}", resource.describe(most_free)) };
        format!("{instance_type} needs {} per copy, {free} free ({where_})", resource.describe(need))
    }

    /// `one copy needs 16 accelerators, more than a whole ml.g6.12xlarge (4 accelerators)`.
    pub(super) fn too_large(instance_type: &str, resource: Resource, need: u64, has: u64) -> String {
        format!(
            "one copy needs {}, more than a whole {instance_type} ({})",
            resource.describe(need),
            resource.describe(has)
        )
    }

    /// `ml.p5.48xlarge in us-east-1b blocked by InsufficientCapacity at 1000 until 1180`.
    pub(super) fn blocked(instance_type: &str, azs: &str, event: CapacityEventKind, time: i64, until: i64) -> String {
        format!("{instance_type} in {azs} blocked by {event} at {time} until {until}")
    }

    /// `ml.p5.48xlarge has no capacity left in us-east-1c (Available 0, Reserved 1, 1 launched by the plan)`.
    pub(super) fn no_capacity_left(
        instance_type: &str,
        azs: &str,
        available: u32,
        reserved: u32,
        launched: u32,
    ) -> String {
        format!(
            "{instance_type} has no capacity left in {azs} (Available {available}, Reserved {reserved}, {launched} \
             launched by the plan)"
        )
    }

    /// `MaxInstanceCount 16 reached (16 instances; blocks 4 launch options)`.
    pub(super) fn max_instances(max: u32, instances: u64, blocked_launches: u64) -> String {
        format!(
            "MaxInstanceCount {max} reached ({instances} instance{}; blocks {blocked_launches} launch option{})",
            plural(instances),
            plural(blocked_launches)
        )
    }

    /// `placed copies 3/0 over us-east-1a/us-east-1b exceed MaxImbalance 1 by 2` (the AZs when given).
    pub(super) fn imbalance(copies_per_az: &[u64], azs: Option<&[String]>, max_imbalance: u32, excess: u64) -> String {
        let counts: Vec<String> = copies_per_az.iter().map(u64::to_string).collect();
        let over = azs.map(|azs| format!(" over {}", azs.join("/"))).unwrap_or_default();
        format!("placed copies {}{over} exceed MaxImbalance {max_imbalance} by {excess}", counts.join("/"))
    }
}

/// AZ names, each once, in `AvailabilityZones` order.
fn join_azs(problem: &Problem, azs: &[String]) -> String {
    let mut unique: Vec<&str> = Vec::new();
    for az in azs {
        if !unique.contains(&az.as_str()) {
            unique.push(az);
        }
    }
    unique.sort_by_key(|az| problem.az_index(az));
    unique.join(", ")
}

/// Milli-cores as cores: `8000` → `8`, `500` → `0.5`.
fn milli_to_text(milli: u64) -> String {
    if milli % 1000 == 0 {
        (milli / 1000).to_string()
    } else {
        let text = format!("{}.{:03}", milli / 1000, milli % 1000);
        text.trim_end_matches('0').to_string()
    }
}
