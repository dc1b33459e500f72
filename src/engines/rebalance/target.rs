//! The fleet a target-directed rebalance heads for (docs/rebalance.md, "Target-directed path").
//!
//! The target is the exact planner's plan (the greedy planner's on large inputs without a
//! deadline) for the copies running now, with the capacity of every pool instance that may stay
//! added to its (type, AZ): the best fleet that can hold the same copies. Draining instances add
//! no capacity — the operator wants them gone, so the target replaces them. Each target
//! instance is then matched to a running instance of the same type and AZ where one is left, so
//! that only the difference is launched, moved and released.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use crate::engines::exact::ExactPlanner;
use crate::engines::greedy::GreedyPlanner;
use crate::engines::limits::Limits;
use crate::fleet::{objective, FinalFleet};
use crate::plan::Objective;
use crate::problem::Problem;

/// Largest input (copies running) given to the exact planner when there is no deadline; beyond
/// it the greedy planner decides the target, so an unlimited rebalance stays quick and
/// deterministic.
const EXACT_COPIES_WITHOUT_DEADLINE: u64 = 1_000;
/// Node limit of each exact solver call when there is no deadline (deterministic).
const EXACT_NODES_WITHOUT_DEADLINE: u64 = 512;
/// Share of the time left that the target may take (the path and the greedy search share the rest).
const TARGET_TIME_SHARE: f64 = 0.35;

/// One instance of the target fleet.
#[derive(Debug, Clone)]
pub(super) struct TargetInstance {
    pub(super) type_index: usize,
    pub(super) az_index: usize,
    /// Component → copies it holds in the target.
    pub(super) copies: BTreeMap<usize, u32>,
    /// The running instance (index into the problem's fleet) that becomes this one, if any;
    /// otherwise it is launched.
    pub(super) existing: Option<usize>,
}

/// The target fleet and its objective.
#[derive(Debug, Clone)]
pub(super) struct Target {
    pub(super) instances: Vec<TargetInstance>,
    pub(super) objective: Objective,
}

/// The problem whose plans are the fleets a rebalance can head for: no fleet, each component's
/// `CopyCount` the copies running now, and each (type, AZ)'s capacity raised by the pool
/// instances of that type running there that are not draining (a reserved one as a reservation
/// slot).
pub(super) fn target_problem(problem: &Problem) -> Problem {
    problem.running_copies_without_fleet(|instance| !instance.draining)
}

/// Plans the target within `limits` (a share of the time left), or `None` when no plan holds
/// every running copy.
pub(super) fn plan_target(problem: &Problem, limits: &Limits) -> Option<Target> {
    let empty = target_problem(problem);
    let running: u64 = problem.existing_copies_per_component().iter().sum();
    let plan = match limits.time_left() {
        Some(left) => {
            let share = limits.without_node_limit().deadline(Instant::now() + left.mul_f64(TARGET_TIME_SHARE));
            ExactPlanner::new().limits(share).plan(&empty)
        }
        None if running <= EXACT_COPIES_WITHOUT_DEADLINE => ExactPlanner::new()
            .limits(limits.without_node_limit())
            .node_limit(EXACT_NODES_WITHOUT_DEADLINE)
            .plan(&empty),
        None => GreedyPlanner::new().limits(limits.without_node_limit()).plan(&empty),
    };
    if plan.objective.placed_copies < running {
        return None;
    }
    let (fleet, violations) = FinalFleet::apply(&empty, &plan.actions);
    if !violations.is_empty() {
        return None;
    }
    let objective = objective(&empty, &fleet);
    let mut instances: Vec<TargetInstance> = fleet
        .instances
        .into_iter()
        .map(|instance| TargetInstance {
            type_index: instance.type_index,
            az_index: instance.az_index,
            copies: instance.copies.into_iter().filter(|&(_, count)| count > 0).collect(),
            existing: None,
        })
        .collect();
    match_running(problem, &mut instances);
    Some(Target { instances, objective })
}

/// Largest group (targets × running instances of one type and AZ) matched by comparing every
/// pair; larger groups are matched in order.
const PAIRWISE_UP_TO: usize = 40_000;

/// Matches target instances to running instances of the same type and AZ (not draining), most
/// shared copies first, reserved ones first, so that as few copies as possible move.
fn match_running(problem: &Problem, targets: &mut [TargetInstance]) {
    let mut groups: BTreeMap<(usize, usize), (Vec<usize>, Vec<usize>)> = BTreeMap::new();
    for (index, target) in targets.iter().enumerate() {
        groups.entry((target.type_index, target.az_index)).or_default().0.push(index);
    }
    for (index, instance) in problem.fleet().iter().enumerate() {
        if instance.draining {
            continue;
        }
        if let Some(group) = groups.get_mut(&(instance.type_index, instance.az_index)) {
            group.1.push(index);
        }
    }
    for (wanted, running) in groups.into_values() {
        if running.is_empty() {
            continue;
        }
        let shared = |target: usize, existing: usize| -> u64 {
            problem.fleet()[existing]
                .copies
                .iter()
                .map(|&(component, count)| {
                    u64::from(count.min(targets[target].copies.get(&component).copied().unwrap_or(0)))
                })
                .sum()
        };
        let mut pairs: Vec<(std::cmp::Reverse<u64>, bool, usize, usize)> = Vec::new();
        if wanted.len().saturating_mul(running.len()) <= PAIRWISE_UP_TO {
            for &target in &wanted {
                for &existing in &running {
                    let reserved = problem.fleet()[existing].reserved;
                    pairs.push((std::cmp::Reverse(shared(target, existing)), !reserved, target, existing));
                }
            }
        } else {
            let mut running = running.clone();
            running.sort_by_key(|&existing| (!problem.fleet()[existing].reserved, existing));
            for (&target, &existing) in wanted.iter().zip(&running) {
                pairs.push((std::cmp::Reverse(0), false, target, existing));
            }
        }
        pairs.sort();
        let mut target_taken: BTreeSet<usize> = BTreeSet::new();
        let mut running_taken: BTreeSet<usize> = BTreeSet::new();
        for (.., target, existing) in pairs {
            if target_taken.contains(&target) || running_taken.contains(&existing) {
                continue;
            }
            target_taken.insert(target);
            running_taken.insert(existing);
            targets[target].existing = Some(existing);
        }
    }
}
