//! Realising a master solution: each (type, AZ) group's copies packed into its instances, the
//! SPREAD rule restored within each AZ, and the actions that lead from the current fleet there.
//! The large-neighbourhood phase puts its windows back into a plan the same way.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use super::master::{self, Group, MasterSolution};
use super::packing::{pack_group, Packing};
use crate::engines::spread::has_room_for_copy;
use crate::plan::Action;
use crate::problem::{PlacementStrategy, Problem, Resources};

/// Search nodes allowed when packing one group exactly.
const PACKING_BUDGET: u64 = 200_000;

/// One instance of the plan being built.
pub(super) struct Draft {
    pub(super) type_index: usize,
    pub(super) az_index: usize,
    pub(super) existing: Option<usize>,
    pub(super) reserved: bool,
    /// All copies at the end.
    pub(super) copies: BTreeMap<usize, u32>,
    /// Copies placed by the plan.
    pub(super) new_copies: BTreeMap<usize, u32>,
}

impl Draft {
    fn used(&self, problem: &Problem) -> Resources {
        problem.copies_footprint(self.type_index, &self.copies)
    }
}

/// Packs each group of a master solution and builds the actions; `Err` lists the groups that
/// did not pack into the instances the master problem gave them.
pub(super) fn realize(
    problem: &Problem,
    solution: &MasterSolution,
    deadline: Option<Instant>,
) -> Result<Vec<Action>, Vec<Group>> {
    realize_with(problem, solution, deadline, 0).map(|realized| realized.actions)
}

/// The actions of a packed master solution, and the groups that took spare instances to pack
/// (then the plan is feasible, not the master's optimum).
pub(super) struct Realized {
    pub(super) actions: Vec<Action>,
    pub(super) loosened: Vec<Group>,
}

/// [`realize`], letting a group that does not pack into the master's instance count take up
/// to `spare` more instances (a feasible plan then, not the master's optimum).
pub(super) fn realize_with(
    problem: &Problem,
    solution: &MasterSolution,
    deadline: Option<Instant>,
    spare: u32,
) -> Result<Realized, Vec<Group>> {
    let types = problem.instance_types();
    let mut loosened = Vec::new();
    let mut drafts = existing_drafts(problem, solution);
    let mut failed = Vec::new();
    for (&(t, z), &launches) in &solution.launches {
        let Some(info) = types.get(t.index()) else { continue };
        let bins: Vec<Vec<(usize, u32)>> = if let Some(bins) = solution.slot_bins.get(&(t, z)) {
            bins.clone()
        } else {
            let items: Vec<(usize, u32, Resources)> = solution
                .group_copies
                .get(&(t, z))
                .map(|list| {
                    list.iter()
                        .filter_map(|&(c, n)| {
                            let component = problem.components().get(c)?;
                            master::eligible_need(problem, component, t.index(), &info.capacity)
                                .map(|need| (c, n, need))
                        })
                        .collect()
                })
                .unwrap_or_default();
            let packed = (0..=spare).find_map(|more| {
                match pack_group(&items, (launches + more) as usize, info.capacity, PACKING_BUDGET, deadline) {
                    Packing::Packed(bins) => Some((more, bins)),
                    Packing::Impossible | Packing::Unknown => None,
                }
            });
            if packed.as_ref().is_some_and(|&(more, _)| more > 0) {
                loosened.push((t, z));
            }
            match packed {
                Some((_, bins)) => bins
                    .into_iter()
                    .map(|bin| {
                        let mut counts: BTreeMap<usize, u32> = BTreeMap::new();
                        for c in bin {
                            *counts.entry(c).or_insert(0) += 1;
                        }
                        counts.into_iter().collect()
                    })
                    .collect(),
                None => {
                    failed.push((t, z));
                    continue;
                }
            }
        };
        let reserved = problem.launch_limit(t, z).reserved;
        for index in 0..(launches as usize).max(bins.len()) {
            let copies: BTreeMap<usize, u32> =
                bins.get(index).map(|bin| bin.iter().copied().collect()).unwrap_or_default();
            drafts.push(Draft {
                type_index: t.index(),
                az_index: z.index(),
                existing: None,
                reserved: (index as u64) < u64::from(reserved),
                new_copies: copies.clone(),
                copies,
            });
        }
    }
    // Groups the master problem left empty must not have copies.
    for (&group, list) in &solution.group_copies {
        if !solution.launches.contains_key(&group) && list.iter().any(|&(_, n)| n > 0) {
            failed.push(group);
        }
    }
    if !failed.is_empty() {
        // Every group that does not pack into the master's count, spare or not.
        failed.extend(loosened);
        failed.sort_unstable();
        failed.dedup();
        return Err(failed);
    }
    if drafts.len() <= SMALL_SPREAD_REPAIR {
        spread_repair(problem, &mut drafts);
    } else {
        let azs: Vec<usize> = (0..problem.azs().len()).collect();
        spread_balance(problem, &mut drafts, &azs);
    }
    Ok(Realized { actions: actions_of(problem, &drafts), loosened })
}

/// The existing instances a master solution keeps, with the copies it removes and adds.
fn existing_drafts(problem: &Problem, solution: &MasterSolution) -> Vec<Draft> {
    let mut drafts: Vec<Draft> = Vec::new();
    for (i, instance) in problem.fleet().iter().enumerate() {
        if !solution.keep.get(i).copied().unwrap_or(true) {
            continue;
        }
        let mut copies: BTreeMap<usize, u32> = instance.copies.iter().copied().collect();
        for (&(c, at), &n) in &solution.remove {
            if at == i {
                if let Some(count) = copies.get_mut(&c) {
                    *count = count.saturating_sub(n);
                }
            }
        }
        let mut new_copies = BTreeMap::new();
        for (&(c, at), &n) in &solution.add {
            if at == i {
                *copies.entry(c).or_insert(0) += n;
                new_copies.insert(c, n);
            }
        }
        copies.retain(|_, count| *count > 0);
        drafts.push(Draft {
            type_index: instance.type_index,
            az_index: instance.az_index,
            existing: Some(i),
            reserved: instance.reserved,
            copies,
            new_copies,
        });
    }
    drafts
}

/// Moves new copies of SPREAD components within an AZ from an instance holding two or more
/// than another eligible instance with room, until no such pair is left. Instances, AZs and
/// counts do not change, so L1–L4 do not either; Σ count² falls with each move, so it ends.
fn spread_repair(problem: &Problem, drafts: &mut [Draft]) {
    let types = problem.instance_types();
    for _ in 0..100_000 {
        let mut moved = false;
        'components: for (c, component) in problem.components().iter().enumerate() {
            if component.strategy != PlacementStrategy::Spread {
                continue;
            }
            for heavy in 0..drafts.len() {
                let heavy_count = drafts[heavy].copies.get(&c).copied().unwrap_or(0);
                if heavy_count < 2 || drafts[heavy].new_copies.get(&c).copied().unwrap_or(0) == 0 {
                    continue;
                }
                let light = (0..drafts.len()).find(|&light| {
                    let draft = &drafts[light];
                    let draining = draft.existing.and_then(|i| problem.fleet().get(i)).is_some_and(|e| e.draining);
                    !draining
                        && draft.az_index == drafts[heavy].az_index
                        && draft.copies.get(&c).copied().unwrap_or(0) + 2 <= heavy_count
                        && component.placement_requirement(problem, draft.type_index).is_some_and(|requirement| {
                            types.get(draft.type_index).is_some_and(|info| {
                                draft.used(problem).plus(&requirement.resources).fits_in(&info.capacity)
                            })
                        })
                });
                if let Some(light) = light {
                    for (map_owner, delta) in [(heavy, false), (light, true)] {
                        let draft = &mut drafts[map_owner];
                        for map in [&mut draft.copies, &mut draft.new_copies] {
                            let entry = map.entry(c).or_insert(0);
                            if delta {
                                *entry += 1;
                            } else {
                                *entry = entry.saturating_sub(1);
                            }
                        }
                        draft.copies.retain(|_, n| *n > 0);
                        draft.new_copies.retain(|_, n| *n > 0);
                    }
                    moved = true;
                    break 'components;
                }
            }
        }
        if !moved {
            break;
        }
    }
}

/// Most drafts [`spread_repair`] handles; larger plans get [`spread_balance`]: the first repair
/// rescans every pair after each move (seconds on an AZ of a few hundred instances).
const SMALL_SPREAD_REPAIR: usize = 256;

/// Most passes of [`spread_balance`] over the components.
const SPREAD_PASSES: usize = 64;

/// The SPREAD repair for large plans: per AZ of `azs` and SPREAD component, moves a new copy
/// from the instance holding most (with a new copy) to the eligible instance with room holding
/// fewest, while they differ by two or more; again for every component until a pass moves
/// nothing (at most [`SPREAD_PASSES`]). Each move is linear in the AZ's instances, with the
/// resources they use kept up to date. Instances, AZs and counts do not change, so L1–L4 do
/// not either.
pub(super) fn spread_balance(problem: &Problem, drafts: &mut [Draft], azs: &[usize]) {
    let mut used: Vec<Resources> = drafts.iter().map(|draft| draft.used(problem)).collect();
    let zones: Vec<Vec<usize>> = azs
        .iter()
        .map(|&az| (0..drafts.len()).filter(|&d| drafts.get(d).is_some_and(|draft| draft.az_index == az)).collect())
        .collect();
    let spread: Vec<usize> = (0..problem.components().len())
        .filter(|&c| {
            problem.components().get(c).is_some_and(|component| component.strategy == PlacementStrategy::Spread)
        })
        .collect();
    for _ in 0..SPREAD_PASSES {
        let mut moved = false;
        for zone in &zones {
            for &c in &spread {
                while let Some((heavy, light)) = spread_pair(problem, drafts, &used, zone, c) {
                    for (owner, add) in [(heavy, false), (light, true)] {
                        let Some(draft) = drafts.get_mut(owner) else { continue };
                        for map in [&mut draft.copies, &mut draft.new_copies] {
                            let entry = map.entry(c).or_insert(0);
                            *entry = if add { *entry + 1 } else { entry.saturating_sub(1) };
                            map.retain(|_, n| *n > 0);
                        }
                        if let Some(slot) = used.get_mut(owner) {
                            *slot = draft.used(problem);
                        }
                    }
                    moved = true;
                }
            }
        }
        if !moved {
            break;
        }
    }
}

/// For [`spread_balance`]: the instance of `zone` holding most copies of `c` (one of them new)
/// and the eligible, not draining one with room holding fewest, when they differ by two or more.
fn spread_pair(
    problem: &Problem,
    drafts: &[Draft],
    used: &[Resources],
    zone: &[usize],
    c: usize,
) -> Option<(usize, usize)> {
    let count = |d: usize| drafts.get(d).map_or(0, |draft| draft.copies.get(&c).copied().unwrap_or(0));
    let heavy = zone
        .iter()
        .copied()
        .filter(|&d| drafts.get(d).is_some_and(|draft| draft.new_copies.contains_key(&c)))
        .max_by_key(|&d| (count(d), std::cmp::Reverse(d)))?;
    if count(heavy) < 2 {
        return None;
    }
    let light = zone
        .iter()
        .copied()
        .filter(|&d| count(d) + 2 <= count(heavy))
        .filter(|&d| {
            let (Some(draft), Some(used)) = (drafts.get(d), used.get(d)) else { return false };
            let draining = draft.existing.and_then(|i| problem.fleet().get(i)).is_some_and(|e| e.draining);
            !draining && has_room_for_copy(problem, c, draft.type_index, used)
        })
        .min_by_key(|&d| (count(d), d))?;
    Some((heavy, light))
}

/// Actions that lead from the current fleet to the drafted one.
pub(super) fn actions_of(problem: &Problem, drafts: &[Draft]) -> Vec<Action> {
    let types = problem.instance_types();
    let components = problem.components();
    let mut actions = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    let mut launched = 0usize;
    let taken: BTreeSet<&str> =
        problem.fleet().iter().map(|instance| instance.id.as_str()).filter(|id| id.starts_with("new-")).collect();
    for draft in drafts {
        match draft.existing.and_then(|i| problem.fleet().get(i)) {
            Some(instance) => ids.push(instance.id.clone()),
            None => {
                // An existing instance may carry a `new-N` id (a fleet observed after an earlier
                // plan kept its ids): skip such numbers, as the greedy planner does.
                let id = loop {
                    launched += 1;
                    let candidate = format!("new-{launched}");
                    if !taken.contains(candidate.as_str()) {
                        break candidate;
                    }
                };
                actions.push(Action::LaunchInstance {
                    instance_id: id.clone(),
                    instance_type: types.get(draft.type_index).map(|info| info.name.clone()).unwrap_or_default(),
                    availability_zone: problem.azs().get(draft.az_index).cloned().unwrap_or_default(),
                    reserved: draft.reserved,
                });
                ids.push(id);
            }
        }
    }
    for (draft, id) in drafts.iter().zip(&ids) {
        for (&c, &count) in &draft.new_copies {
            let Some(component) = components.get(c) else {
                continue;
            };
            let model_name =
                component.placement_requirement(problem, draft.type_index).and_then(|r| r.model_name.clone());
            for _ in 0..count {
                actions.push(Action::PlaceCopy {
                    component: component.name.clone(),
                    instance_id: id.clone(),
                    model_name: model_name.clone(),
                });
            }
        }
    }
    // The draft of each kept existing instance, found once (a scan per instance is quadratic).
    let mut draft_of_existing: Vec<Option<usize>> = vec![None; problem.fleet().len()];
    for (position, draft) in drafts.iter().enumerate() {
        if let Some(slot) = draft.existing.and_then(|i| draft_of_existing.get_mut(i)) {
            slot.get_or_insert(position);
        }
    }
    for (i, instance) in problem.fleet().iter().enumerate() {
        let draft = draft_of_existing.get(i).copied().flatten();
        let final_copies = draft.and_then(|position| drafts.get(position)).map(|draft| &draft.copies);
        for &(c, count) in &instance.copies {
            let left = final_copies.and_then(|copies| copies.get(&c)).copied().unwrap_or(0);
            let Some(component) = components.get(c) else {
                continue;
            };
            for _ in left..count {
                actions
                    .push(Action::RemoveCopy { component: component.name.clone(), instance_id: instance.id.clone() });
            }
        }
        if draft.is_none() {
            actions.push(Action::TerminateInstance { instance_id: instance.id.clone() });
        }
    }
    actions
}
