//! The SPREAD quality rule of spec §2 as a pass shared by the planners.
//!
//! Within an AZ, no instance may hold two or more copies of a SPREAD component more than
//! another eligible instance of the final fleet that still has room for one more. The pass
//! moves *new* copies (targets of `PlaceCopy`) from such a heavy instance to the light one.
//! It never adds, removes or releases an instance and keeps every component's copies per AZ,
//! so L1–L4 are unchanged; it only rewrites `PlaceCopy` targets (and their `ModelName`).

use std::collections::BTreeMap;

use smallvec::SmallVec;

use crate::plan::Action;
use crate::problem::{PlacementStrategy, Problem, Resources};

/// One instance of the final fleet as the pass sees it.
struct Slot {
    id: String,
    type_index: usize,
    az: usize,
    gone: bool,
    /// Copies per component, sorted by component.
    copies: SmallVec<[(usize, u32); 4]>,
    used: Resources,
}

impl Slot {
    fn copies_of(&self, component: usize) -> u32 {
        self.copies.iter().find(|(c, _)| *c == component).map_or(0, |&(_, n)| n)
    }

    fn change(&mut self, component: usize, delta: i64) {
        match self.copies.binary_search_by_key(&component, |&(c, _)| c) {
            Ok(pos) => {
                if let Some(entry) = self.copies.get_mut(pos) {
                    entry.1 = u32::try_from((i64::from(entry.1) + delta).max(0)).unwrap_or(u32::MAX);
                }
            }
            Err(pos) if delta > 0 => self.copies.insert(pos, (component, u32::try_from(delta).unwrap_or(u32::MAX))),
            Err(_) => {}
        }
    }
}

/// What one copy of `component` uses on `type_index` (its own type's requirement).
fn need(problem: &Problem, component: usize, type_index: usize) -> Option<Resources> {
    problem.components.get(component)?.requirements.get(type_index)?.as_ref().map(|r| r.resources)
}

/// Moves new copies of SPREAD components between instances of the same AZ until no instance
/// holds two or more copies more than an eligible instance with room for one more (as far as
/// new copies allow). Actions the pass cannot interpret are returned unchanged.
pub(crate) fn rebalance_spread(problem: &Problem, mut actions: Vec<Action>) -> Vec<Action> {
    if !problem.components.iter().any(|c| c.strategy == PlacementStrategy::Spread) {
        return actions;
    }
    let component_index: BTreeMap<&str, usize> =
        problem.components.iter().enumerate().map(|(i, c)| (c.name.as_str(), i)).collect();
    let mut slots: Vec<Slot> = problem
        .fleet
        .iter()
        .map(|existing| {
            let mut slot = Slot {
                id: existing.id.clone(),
                type_index: existing.type_index,
                az: existing.az_index,
                gone: false,
                copies: SmallVec::new(),
                used: Resources::ZERO,
            };
            for &(component, count) in &existing.copies {
                slot.change(component, i64::from(count));
            }
            slot
        })
        .collect();
    let mut by_id: BTreeMap<String, usize> = slots.iter().enumerate().map(|(i, s)| (s.id.clone(), i)).collect();
    // (component, slot) -> indices of PlaceCopy actions putting a copy there.
    let mut new_copies: BTreeMap<(usize, usize), Vec<usize>> = BTreeMap::new();
    for (position, action) in actions.iter().enumerate() {
        match action {
            Action::LaunchInstance { instance_id, instance_type, availability_zone, .. } => {
                let (Some(type_index), Some(az)) =
                    (problem.type_index(instance_type), problem.az_index(availability_zone))
                else {
                    return actions;
                };
                if by_id.contains_key(instance_id) {
                    return actions;
                }
                by_id.insert(instance_id.clone(), slots.len());
                slots.push(Slot {
                    id: instance_id.clone(),
                    type_index,
                    az,
                    gone: false,
                    copies: SmallVec::new(),
                    used: Resources::ZERO,
                });
            }
            Action::PlaceCopy { component, instance_id, .. } => {
                let (Some(&c), Some(&s)) = (component_index.get(component.as_str()), by_id.get(instance_id)) else {
                    return actions;
                };
                slots[s].change(c, 1);
                new_copies.entry((c, s)).or_default().push(position);
            }
            Action::RemoveCopy { component, instance_id } => {
                let (Some(&c), Some(&s)) = (component_index.get(component.as_str()), by_id.get(instance_id)) else {
                    return actions;
                };
                slots[s].change(c, -1);
            }
            Action::TerminateInstance { instance_id } => {
                let Some(&s) = by_id.get(instance_id) else { return actions };
                slots[s].gone = true;
            }
        }
    }
    for slot in &mut slots {
        slot.used = slot.copies.iter().fold(Resources::ZERO, |used, &(c, n)| {
            used.plus(&need(problem, c, slot.type_index).unwrap_or(Resources::ZERO).times(u64::from(n)))
        });
    }
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); problem.azs.len()];
    for (index, slot) in slots.iter().enumerate() {
        if !slot.gone {
            if let Some(list) = members.get_mut(slot.az) {
                list.push(index);
            }
        }
    }
    // Instances holding new copies, per component.
    let mut holders: Vec<Vec<usize>> = vec![Vec::new(); problem.components.len()];
    for &(c, s) in new_copies.keys() {
        holders[c].push(s);
    }

    // Each move lowers Σ count² of its component and leaves the others alone, so this ends.
    // A move frees room on the heavy instance, which can matter to other components: repeat
    // until a full pass moves nothing.
    loop {
        let mut moved = false;
        for (c, component) in problem.components.iter().enumerate() {
            if component.strategy != PlacementStrategy::Spread || holders[c].is_empty() {
                continue;
            }
            let mut azs: Vec<usize> =
                holders[c].iter().filter(|&&s| slots[s].copies_of(c) >= 2).map(|&s| slots[s].az).collect();
            azs.sort_unstable();
            azs.dedup();
            for z in azs {
                while let Some((heavy, light)) = find_pair(problem, &slots, &members[z], &new_copies, c) {
                    move_copy(problem, &mut actions, &mut slots, &mut new_copies, c, heavy, light);
                    if !holders[c].contains(&light) {
                        holders[c].push(light);
                    }
                    moved = true;
                }
            }
        }
        if !moved {
            return actions;
        }
    }
}

/// The heaviest instance with a new copy of `c` and the lightest eligible instance with room,
/// when they differ by two or more.
fn find_pair(
    problem: &Problem,
    slots: &[Slot],
    members: &[usize],
    new_copies: &BTreeMap<(usize, usize), Vec<usize>>,
    c: usize,
) -> Option<(usize, usize)> {
    let component = problem.components.get(c)?;
    let mut heavy: Option<(u32, usize)> = None;
    let mut light: Option<(u32, usize)> = None;
    for &s in members {
        let slot = &slots[s];
        let count = slot.copies_of(c);
        if count >= 2
            && new_copies.get(&(c, s)).is_some_and(|list| !list.is_empty())
            && heavy.is_none_or(|(most, _)| count > most)
        {
            heavy = Some((count, s));
        }
        if light.is_some_and(|(fewest, _)| count >= fewest) {
            continue;
        }
        let Some(requirement) = component.placement_requirement(problem, slot.type_index) else { continue };
        let Some(info) = problem.types.get(slot.type_index) else { continue };
        if slot.used.plus(&requirement.resources).fits_in(&info.capacity) {
            light = Some((count, s));
        }
    }
    let ((most, heavy), (fewest, light)) = (heavy?, light?);
    (heavy != light && most >= fewest + 2).then_some((heavy, light))
}

fn move_copy(
    problem: &Problem,
    actions: &mut [Action],
    slots: &mut [Slot],
    new_copies: &mut BTreeMap<(usize, usize), Vec<usize>>,
    c: usize,
    heavy: usize,
    light: usize,
) {
    let Some(position) = new_copies.get_mut(&(c, heavy)).and_then(Vec::pop) else { return };
    let heavy_type = slots[heavy].type_index;
    let light_type = slots[light].type_index;
    let heavy_need = need(problem, c, heavy_type).unwrap_or(Resources::ZERO);
    let light_need = need(problem, c, light_type).unwrap_or(Resources::ZERO);
    slots[heavy].change(c, -1);
    slots[heavy].used = slots[heavy].used.minus(&heavy_need).unwrap_or(Resources::ZERO);
    slots[light].change(c, 1);
    slots[light].used = slots[light].used.plus(&light_need);
    let model_name =
        problem.components[c].placement_requirement(problem, light_type).and_then(|r| r.model_name.clone());
    if let Some(action) = actions.get_mut(position) {
        *action = Action::PlaceCopy {
            component: problem.components[c].name.clone(),
            instance_id: slots[light].id.clone(),
            model_name,
        };
    }
    new_copies.entry((c, light)).or_default().push(position);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::FinalFleet;
    use crate::model::ScenarioBuilder;
    use crate::verify::spread_violations;

    fn launch(id: &str) -> Action {
        Action::LaunchInstance {
            instance_id: id.into(),
            instance_type: "ml.g6.12xlarge".into(),
            availability_zone: "a".into(),
            reserved: false,
        }
    }

    fn place(id: &str) -> Action {
        Action::PlaceCopy { component: "x".into(), instance_id: id.into(), model_name: None }
    }

    #[test]
    fn moves_new_copies_from_heavy_to_light_instances() {
        let scenario = ScenarioBuilder::new(["a"]).pool("ml.g6.12xlarge", 1).component("x", 4, 1, 1.0, 1024).build();
        let problem = Problem::new(&scenario).unwrap();
        let actions =
            vec![launch("new-1"), launch("new-2"), place("new-1"), place("new-1"), place("new-1"), place("new-1")];
        let (before, _) = FinalFleet::apply(&problem, &actions);
        assert!(!spread_violations(&problem, &before).is_empty());
        let after_actions = rebalance_spread(&problem, actions);
        let (after, violations) = FinalFleet::apply(&problem, &after_actions);
        assert!(violations.is_empty());
        assert!(spread_violations(&problem, &after).is_empty(), "{:?}", spread_violations(&problem, &after));
        assert_eq!(after.instances.iter().map(|i| i.copies_of(0)).collect::<Vec<_>>(), vec![2, 2]);
    }

    #[test]
    fn leaves_binpack_and_full_instances_alone() {
        let scenario = ScenarioBuilder::new(["a"])
            .pool("ml.g6.12xlarge", 1)
            .component("x", 4, 1, 1.0, 1024)
            .strategy("x", "BINPACK")
            .build();
        let problem = Problem::new(&scenario).unwrap();
        let actions = vec![launch("new-1"), launch("new-2"), place("new-1"), place("new-1"), place("new-1")];
        assert_eq!(rebalance_spread(&problem, actions.clone()), actions);
    }
}
