//! The SPREAD quality rule of docs/contract.md §2 as a pass shared by the planners.
//!
//! Within an AZ, no instance may hold two or more copies of a SPREAD component more than
//! another eligible instance of the final fleet that still has room for one more. The pass
//! moves *new* copies (targets of `PlaceCopy`) from such a heavy instance to the light one.
//! It never adds, removes or releases an instance and keeps every component's copies per AZ,
//! so L1–L4 are unchanged; it only rewrites `PlaceCopy` targets (and their `ModelName`).

use std::collections::{BTreeMap, BTreeSet};

use itertools::Itertools;
use smallvec::SmallVec;

use crate::index::{ComponentIndex, TypeIndex};
use crate::plan::Action;
use crate::problem::{PlacementStrategy, Problem, Resources};

/// One instance of the final fleet as the pass sees it.
pub(crate) struct Slot {
    /// Instance id, as the actions name it.
    pub(crate) id: String,
    pub(crate) type_index: usize,
    pub(crate) az: usize,
    /// Terminated by the plan.
    pub(crate) gone: bool,
    /// Copies per component at the end of the plan, sorted by component.
    pub(crate) copies: SmallVec<[(usize, u32); 4]>,
    /// Filled in by the pass from `copies`.
    used: Resources,
}

impl Slot {
    /// An instance of the final fleet (existing ones in fleet order, then launches in launch
    /// order, as `rebalance_spread` reads them from the actions).
    pub(crate) fn new(
        id: String,
        type_index: usize,
        az: usize,
        gone: bool,
        copies: SmallVec<[(usize, u32); 4]>,
    ) -> Self {
        Slot { id, type_index, az, gone, copies, used: Resources::ZERO }
    }

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

/// Number of instances breaking the SPREAD rule among the instances of one AZ, each given as
/// (copies of the component, room for one more copy): those holding at least two copies more
/// than the fewest any instance with room holds. The one count every engine's SPREAD guard uses.
pub(crate) fn spread_offenders_among<I>(instances: I) -> u64
where
    I: IntoIterator<Item = (u64, bool)>,
    I::IntoIter: Clone,
{
    let instances = instances.into_iter();
    let Some(fewest) = instances.clone().filter(|&(_, room)| room).map(|(count, _)| count).min() else { return 0 };
    instances.filter(|&(count, _)| count >= fewest.saturating_add(2)).count() as u64
}

/// Whether an instance of `type_index` that uses `used` has room for one more copy of
/// `component` (the SPREAD rule's "room"; false where the component cannot run).
pub(crate) fn has_room_for_copy(problem: &Problem, component: usize, type_index: usize, used: &Resources) -> bool {
    let Some(info) = problem.components().get(component) else { return false };
    let Some(requirement) = info.placement_requirement(problem, type_index) else { return false };
    let Some(type_info) = problem.instance_types().get(type_index) else { return false };
    used.plus(&requirement.resources).fits_in(&type_info.capacity)
}

/// What one copy of `component` uses on `type_index` (its own type's requirement).
fn need(problem: &Problem, component: ComponentIndex, type_index: TypeIndex) -> Option<Resources> {
    problem.components.get(component.index())?.requirements.get(type_index.index())?.as_ref().map(|r| r.resources)
}

/// Moves new copies of SPREAD components between instances of the same AZ until no instance
/// holds two or more copies more than an eligible instance with room for one more (as far as
/// new copies allow). Actions the pass cannot interpret are returned unchanged.
///
/// Planners use [`rebalance_spread_indexed`], which skips reading the plan back from strings;
/// this form is the reference it is tested against.
#[cfg(test)]
pub(crate) fn rebalance_spread(problem: &Problem, actions: Vec<Action>) -> Vec<Action> {
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
    // ((component, slot), action position) of every placement; grouped once at the end.
    let mut placed: Vec<((usize, usize), usize)> = Vec::new();
    let mut last_place: Option<(String, String, usize, usize)> = None;
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
                // Planners emit runs of identical placements: skip the lookups for a repeat.
                let (c, s) = match &last_place {
                    Some((name, id, c, s)) if name == component && id == instance_id => (*c, *s),
                    _ => {
                        let (Some(&c), Some(&s)) = (component_index.get(component.as_str()), by_id.get(instance_id))
                        else {
                            return actions;
                        };
                        last_place = Some((component.clone(), instance_id.clone(), c, s));
                        (c, s)
                    }
                };
                slots[s].change(c, 1);
                placed.push(((c, s), position));
            }
            Action::RemoveCopy { component, instance_id } => {
                let (Some(&c), Some(&s)) = (component_index.get(component.as_str()), by_id.get(instance_id)) else {
                    return actions;
                };
                slots[s].change(c, -1);
            }
            Action::TerminateInstance { instance_id } => {
                let Some(&s) = by_id.get(instance_id) else {
                    return actions;
                };
                slots[s].gone = true;
            }
        }
    }
    balance(problem, actions, slots, placed)
}

/// `rebalance_spread` for a planner that knows its plan by index already: `slots` are the
/// instances of the final fleet (existing ones in fleet order, then launches in launch order)
/// and `placed` holds `((component, slot), action position)` for every `PlaceCopy` in
/// `actions`. Same result as `rebalance_spread`, without reading the ids back from strings.
pub(crate) fn rebalance_spread_indexed(
    problem: &Problem,
    actions: Vec<Action>,
    slots: Vec<Slot>,
    placed: Vec<((usize, usize), usize)>,
) -> Vec<Action> {
    if !problem.components.iter().any(|c| c.strategy == PlacementStrategy::Spread) {
        return actions;
    }
    balance(problem, actions, slots, placed)
}

/// The pass proper, on indexed slots and placements.
fn balance(
    problem: &Problem,
    mut actions: Vec<Action>,
    mut slots: Vec<Slot>,
    mut placed: Vec<((usize, usize), usize)>,
) -> Vec<Action> {
    for slot in &mut slots {
        slot.used = slot.copies.iter().fold(Resources::ZERO, |used, &(c, n)| {
            used.plus(
                &need(problem, ComponentIndex::new(c), TypeIndex::new(slot.type_index))
                    .unwrap_or(Resources::ZERO)
                    .times(u64::from(n)),
            )
        });
    }
    // Stable: positions stay in action order within each (component, slot).
    placed.sort_by_key(|&(key, _)| key);
    let mut new_copies: BTreeMap<(usize, usize), Vec<usize>> = BTreeMap::new();
    for (key, group) in &placed.into_iter().chunk_by(|&(key, _)| key) {
        new_copies.insert(key, group.map(|(_, position)| position).collect());
    }
    let mut pass = Balancer::new(problem, slots, new_copies);
    pass.run(&mut actions);
    actions
}

/// Indexed state of the pass: every query is logarithmic, never a scan of an AZ's instances.
struct Balancer<'a> {
    problem: &'a Problem,
    slots: Vec<Slot>,
    /// (component, slot) -> positions of the `PlaceCopy` actions putting a copy there.
    new_copies: BTreeMap<(usize, usize), Vec<usize>>,
    /// Instances per `[az][type]` keyed by free accelerators (room queries start there).
    by_room: Vec<Vec<BTreeSet<(u64, usize)>>>,
    /// Holders of new copies of a SPREAD component per (component, AZ) at
    /// `component * azs + az`: (copies, slot).
    holders: Vec<BTreeSet<(u32, usize)>>,
    /// SPREAD components with a holder of two or more copies, per AZ (only these can move).
    /// Sorted vectors: the work-list loop walks them for every freed instance.
    heavy_in_az: Vec<Vec<usize>>,
    /// What one copy of a component needs on a type, where it may run there: `[type][component]`
    /// (the hot loops look this up for every pair they consider).
    need_on: Vec<Vec<Option<Resources>>>,
    /// Number of AZs (row length of the per-(component, AZ) tables).
    az_count: usize,
}

impl<'a> Balancer<'a> {
    fn new(problem: &'a Problem, slots: Vec<Slot>, new_copies: BTreeMap<(usize, usize), Vec<usize>>) -> Self {
        let mut by_room = vec![vec![BTreeSet::new(); problem.types.len()]; problem.azs.len()];
        for (index, slot) in slots.iter().enumerate() {
            // Existing instances come first, in fleet order; a draining one takes no new copy.
            if slot.gone || problem.fleet.get(index).is_some_and(|existing| existing.draining) {
                continue;
            }
            if let Some(set) =
                by_room.get_mut(slot.az).and_then(|row: &mut Vec<BTreeSet<(u64, usize)>>| row.get_mut(slot.type_index))
            {
                set.insert((free_accelerators(problem, slot), index));
            }
        }
        let az_count = problem.azs.len();
        let mut holders: Vec<BTreeSet<(u32, usize)>> = vec![BTreeSet::new(); problem.components.len() * az_count];
        for &(c, s) in new_copies.keys() {
            if problem.components[c].strategy != PlacementStrategy::Spread || slots[s].gone {
                continue;
            }
            if let Some(set) = holders.get_mut(c * az_count + slots[s].az) {
                set.insert((slots[s].copies_of(c), s));
            }
        }
        let mut heavy_in_az: Vec<Vec<usize>> = vec![Vec::new(); az_count];
        for (pair, set) in holders.iter().enumerate() {
            if set.last().is_some_and(|&(count, _)| count >= 2) {
                if let Some(heavy) = heavy_in_az.get_mut(pair % az_count) {
                    // Pairs run component-major, so each AZ's list comes out sorted.
                    heavy.push(pair / az_count);
                }
            }
        }
        let need_on = (0..problem.types.len())
            .map(|t| {
                problem
                    .components
                    .iter()
                    .map(|component| component.placement_requirement(problem, t).map(|r| r.resources))
                    .collect()
            })
            .collect();
        Balancer { problem, slots, new_copies, by_room, holders, heavy_in_az, need_on, az_count }
    }

    /// What one copy of `c` needs on type `t`, if it may run there.
    fn need_on(&self, t: TypeIndex, c: ComponentIndex) -> Option<&Resources> {
        self.need_on.get(t.index())?.get(c.index())?.as_ref()
    }

    /// The heaviest holder of new copies of `c` in `az`, if it holds two or more.
    fn heaviest(&self, c: usize, az: usize) -> Option<(u32, usize)> {
        self.holders.get(c * self.az_count + az).and_then(|set| set.last().copied()).filter(|&(count, _)| count >= 2)
    }

    /// The lightest eligible instance in `az` with room for one more copy of `c` among those
    /// holding at most `at_most` copies of it.
    fn lightest(&self, c: usize, az: usize, at_most: u32) -> Option<(u32, usize)> {
        let problem = self.problem;
        let mut best: Option<(u32, usize)> = None;
        for t in 0..problem.types.len() {
            let Some(need) = self.need_on(TypeIndex::new(t), ComponentIndex::new(c)) else {
                continue;
            };
            let Some(set) = self.by_room.get(az).and_then(|row| row.get(t)) else {
                continue;
            };
            let capacity = problem.types[t].capacity;
            for &(_, s) in set.range((need.accelerators, 0)..) {
                let slot = &self.slots[s];
                let count = slot.copies_of(c);
                if count > at_most || best.is_some_and(|b| (count, s) >= b) {
                    continue;
                }
                if slot.used.plus(need).fits_in(&capacity) {
                    best = Some((count, s));
                    if count == 0 {
                        break;
                    }
                }
            }
        }
        best
    }

    fn set_holder(&mut self, c: usize, s: usize, before: u32) {
        let az = self.slots[s].az;
        let has_new = self.new_copies.get(&(c, s)).is_some_and(|list| !list.is_empty());
        let Some(set) = self.holders.get_mut(c * self.az_count + az) else {
            return;
        };
        set.remove(&(before, s));
        if has_new {
            set.insert((self.slots[s].copies_of(c), s));
        }
        let heavy = set.last().is_some_and(|&(count, _)| count >= 2);
        if let Some(heavy_set) = self.heavy_in_az.get_mut(az) {
            match (heavy, heavy_set.binary_search(&c)) {
                (true, Err(position)) => heavy_set.insert(position, c),
                (false, Ok(position)) => {
                    heavy_set.remove(position);
                }
                _ => {}
            }
        }
    }

    fn reindex(&mut self, s: usize, free_before: u64) {
        let slot = &self.slots[s];
        if let Some(set) = self.by_room.get_mut(slot.az).and_then(|row| row.get_mut(slot.type_index)) {
            set.remove(&(free_before, s));
            set.insert((free_accelerators(self.problem, slot), s));
        }
    }

    /// Moves one new copy of `c` from `heavy` to `light`, keeping every index current.
    fn shift(&mut self, actions: &mut [Action], c: usize, heavy: usize, light: usize) {
        let (heavy_before, light_before) = (self.slots[heavy].copies_of(c), self.slots[light].copies_of(c));
        let (heavy_free, light_free) =
            (free_accelerators(self.problem, &self.slots[heavy]), free_accelerators(self.problem, &self.slots[light]));
        move_copy(self.problem, actions, &mut self.slots, &mut self.new_copies, c, heavy, light);
        self.reindex(heavy, heavy_free);
        self.reindex(light, light_free);
        self.set_holder(c, heavy, heavy_before);
        self.set_holder(c, light, light_before);
    }

    fn run(&mut self, actions: &mut [Action]) {
        // Each move lowers Σ count² of its component and leaves the others alone, so this ends.
        // A move frees room on the heavy instance, which can make another component's pair in
        // that AZ a violation: such (component, AZ) pairs go back on the work list.
        let az_count = self.az_count;
        let mut work: BTreeSet<(usize, usize)> = (0..self.holders.len())
            .map(|pair| (pair / az_count, pair % az_count))
            .filter(|&(c, z)| self.heaviest(c, z).is_some())
            .collect();
        // Membership of `work` by `component * azs + az`, for the hot check below.
        let mut queued = vec![false; self.holders.len()];
        for &(c, z) in &work {
            queued[c * az_count + z] = true;
        }
        let mut freed: BTreeMap<usize, Resources> = BTreeMap::new();
        while let Some((c, z)) = work.pop_first() {
            queued[c * az_count + z] = false;
            freed.clear();
            while let Some((most, heavy)) = self.heaviest(c, z) {
                let Some((_, light)) = self.lightest(c, z, most - 2) else {
                    break;
                };
                freed.entry(heavy).or_insert(self.slots[heavy].used);
                self.shift(actions, c, heavy, light);
            }
            for (&h, before) in &freed {
                let slot = &self.slots[h];
                let Some(info) = self.problem.types.get(slot.type_index) else {
                    continue;
                };
                // The arithmetic test first: it rejects almost every component cheaply.
                let room_now = info.capacity.minus(&slot.used).unwrap_or(Resources::ZERO);
                let room_before = info.capacity.minus(before).unwrap_or(Resources::ZERO);
                let needs = self.need_on.get(slot.type_index).map_or(&[][..], Vec::as_slice);
                for &other in self.heavy_in_az.get(z).into_iter().flatten() {
                    let Some(Some(need)) = needs.get(other) else {
                        continue;
                    };
                    let pair = other * az_count + z;
                    if need.fits_in(&room_now)
                        && !need.fits_in(&room_before)
                        && other != c
                        && !queued.get(pair).copied().unwrap_or(true)
                    {
                        queued[pair] = true;
                        work.insert((other, z));
                    }
                }
            }
        }
    }
}

fn free_accelerators(problem: &Problem, slot: &Slot) -> u64 {
    problem
        .types
        .get(slot.type_index)
        .map_or(0, |info| info.capacity.accelerators.saturating_sub(slot.used.accelerators))
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
    let Some(position) = new_copies.get_mut(&(c, heavy)).and_then(Vec::pop) else {
        return;
    };
    let heavy_type = slots[heavy].type_index;
    let light_type = slots[light].type_index;
    let heavy_need = need(problem, ComponentIndex::new(c), TypeIndex::new(heavy_type)).unwrap_or(Resources::ZERO);
    let light_need = need(problem, ComponentIndex::new(c), TypeIndex::new(light_type)).unwrap_or(Resources::ZERO);
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
        let scenario =
            ScenarioBuilder::new(["a"]).pool("ml.g6.12xlarge", 1).component("x", 4, 1, 1.0, 1024).build().unwrap();
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
            .strategy("x", crate::PlacementStrategy::Binpack)
            .build()
            .unwrap();
        let problem = Problem::new(&scenario).unwrap();
        let actions = vec![launch("new-1"), launch("new-2"), place("new-1"), place("new-1"), place("new-1")];
        assert_eq!(rebalance_spread(&problem, actions.clone()), actions);
    }

    #[test]
    fn offenders_hold_two_more_than_the_lightest_instance_with_room() {
        // The lightest instance (0 copies) is full, so the fewest with room is 1: only 3 offends.
        assert_eq!(spread_offenders_among([(0, false), (1, true), (2, true), (3, false)]), 1);
        assert_eq!(spread_offenders_among([(0, true), (2, false), (3, false), (1, true)]), 2);
        // No instance with room: nothing to spread onto.
        assert_eq!(spread_offenders_among([(0, false), (5, false)]), 0);
    }
}
