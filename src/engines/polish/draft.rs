//! An instance of a plan as the plan-level moves edit it (`Draft`), the actions that build a
//! list of drafts from the current fleet, and the SPREAD repair for large plans. Shared by the
//! polishes here and the exact planner's realization of master solutions (`exact/realize.rs`).

use std::collections::{BTreeMap, BTreeSet};

use crate::engines::spread::has_room_for_copy;

use crate::plan::Action;
use crate::problem::{PlacementStrategy, Problem, Resources};

/// One instance of the plan being built.
pub(crate) struct Draft {
    pub(crate) type_index: usize,
    pub(crate) az_index: usize,
    pub(crate) existing: Option<usize>,
    pub(crate) reserved: bool,
    /// All copies at the end.
    pub(crate) copies: BTreeMap<usize, u32>,
    /// Copies placed by the plan.
    pub(crate) new_copies: BTreeMap<usize, u32>,
}

impl Draft {
    /// Resources its copies use (existing copies measured with their own type's requirement).
    pub(crate) fn used(&self, problem: &Problem) -> Resources {
        problem.copies_footprint(self.type_index, &self.copies)
    }

    /// An existing instance that is draining: it keeps its copies and takes no new one.
    pub(crate) fn draining(&self, problem: &Problem) -> bool {
        self.existing.and_then(|i| problem.fleet().get(i)).is_some_and(|instance| instance.draining)
    }
}

/// Most passes of [`spread_balance`] over the components.
const SPREAD_PASSES: usize = 64;

/// The SPREAD repair for large plans: per AZ of `azs` and SPREAD component, moves a new copy
/// from the instance holding most (with a new copy) to the eligible instance with room holding
/// fewest, while they differ by two or more; again for every component until a pass moves
/// nothing (at most [`SPREAD_PASSES`]). Each move is linear in the AZ's instances, with the
/// resources they use kept up to date. Instances, AZs and counts do not change, so L1–L4 do
/// not either.
pub(crate) fn spread_balance(problem: &Problem, drafts: &mut [Draft], azs: &[usize]) {
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
            let draining = draft.draining(problem);
            !draining && has_room_for_copy(problem, c, draft.type_index, used)
        })
        .min_by_key(|&d| (count(d), d))?;
    Some((heavy, light))
}

/// Actions that lead from the current fleet to the drafted one.
pub(crate) fn actions_of(problem: &Problem, drafts: &[Draft]) -> Vec<Action> {
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
