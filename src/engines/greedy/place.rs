//! Placement of missing copies, component by component, hardest first.
//!
//! Per component: choose AZs (balance first, PERMISSIVE), fill free room of instances that are
//! in the final fleet anyway, then open instances (launch, or reuse an idle existing one) of the
//! most preferred type with capacity, choosing among equally preferred types by how well the
//! remaining copies fit (most copies covered, fewest instances, lowest cost).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use itertools::Itertools;

use super::mixed::{MixedOpening, MixedPacking};
use super::{fitting_need, instance_cost, Greedy, Mode};
use crate::fleet::balance_excess;
use crate::index::{AzIndex, TypeIndex};
use crate::problem::{PlacementStrategy, Problem, Resources};

/// What one copy of the component being placed needs, per type (`None` where it may not run).
type Needs = [Option<Resources>];

/// Smaller is better: copies covered when covering comes first (else 0), priority, copies
/// covered (more first), instances opened, cost, type name.
pub(super) type OpeningKey = (Reverse<u64>, u8, Reverse<u64>, u64, i64, usize);

/// Smaller is better: copies per instance of the next opening (when AZs are chosen by density and
/// the AZ has no free room left, else the best), balance excess, no free room left, next
/// opening's priority (when AZs are chosen by opening, else 0), copies already there, opening's
/// price (likewise), AZ name.
type AzKey = (Reverse<u64>, u64, bool, u8, u64, i64, usize);

/// What a copy beyond an AZ's free room costs: the best opening's first key (copies per
/// instance when openings go largest first), priority (L3), price (L4), and how many copies
/// openings of that type can still take there (its key holds only that far).
pub(super) type OpeningCost = (Reverse<u64>, u8, i64, u64);

/// No opening left in an AZ: ranks last on every count.
const NO_OPENING: OpeningCost = (Reverse(0), u8::MAX, i64::MAX, 0);

/// The instances to open next in one AZ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Opening {
    pub(super) key: OpeningKey,
    pub(super) type_index: usize,
    instances: u64,
    /// Copies of the component one instance holds.
    per_instance: u64,
    /// Instances of the type that may still be opened in the AZ (capacity, MaxInstanceCount).
    available: u64,
}

/// Components hardest first: the largest share of their most preferred type that can hold a
/// copy, then largest accelerators, memory and CPU, then name. Intrinsic, so input order does
/// not matter.
pub(super) fn component_order(problem: &Problem) -> Vec<usize> {
    let keys: Vec<(f64, Resources)> = problem
        .components
        .iter()
        .map(|component| {
            let reference = problem
                .pool_types()
                .filter_map(|t| {
                    let need = fitting_need(problem, component, t)?;
                    let info = problem.types.get(t)?;
                    Some((info.priority, info.name.as_str(), need, info.capacity))
                })
                .min_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
            reference.map_or((0.0, Resources::ZERO), |(_, _, need, capacity)| (need.dominant_share(&capacity), need))
        })
        .collect();
    let mut order: Vec<usize> = (0..problem.components.len()).collect();
    order.sort_by(|&a, &b| {
        let (share_a, need_a) = &keys[a];
        let (share_b, need_b) = &keys[b];
        share_b
            .total_cmp(share_a)
            .then(need_b.accelerators.cmp(&need_a.accelerators))
            .then(need_b.memory_mib.cmp(&need_a.memory_mib))
            .then(need_b.milli_cpus.cmp(&need_a.milli_cpus))
            .then(problem.components[a].name.cmp(&problem.components[b].name))
    });
    order
}

/// Rough work one greedy pass does: copies wanted, fleet and components.
fn pass_work(problem: &Problem) -> u64 {
    let copies: u64 = problem.components.iter().map(|c| u64::from(c.copy_count)).sum();
    copies + problem.fleet.len() as u64 + problem.components.len() as u64
}

/// Work allowed across all passes: small problems try many orders, a 100k-copy one only one.
const WORK_BUDGET: u64 = 40_000;

/// Components up to which every order is tried (4! = 24 passes).
const ALL_ORDERS_UP_TO: usize = 4;

/// Components up to which each component also gets an order where it goes first. Beyond, the
/// passes cost more than they found: on `fifty-models` (50 components) they took greedy from
/// 6 ms to 32 ms for the same plan.
const ROTATED_ORDERS_UP_TO: usize = 24;

/// The passes to try: component orders × modes, best guess first, within the work budget.
/// The modes other than the default only matter under a MaxInstanceCount.
pub(super) fn candidate_passes(problem: &Problem) -> Vec<(Vec<usize>, Mode)> {
    let passes = (WORK_BUDGET / pass_work(problem).max(1)).max(1);
    let mut modes = vec![Mode::DEFAULT];
    if problem.components.iter().any(|c| c.max_imbalance.is_some()) {
        modes.push(Mode { strict_balance: true, ..Mode::DEFAULT });
        modes.push(Mode { az_by_opening: true, ..Mode::DEFAULT });
        modes.push(Mode { az_by_opening: true, strict_balance: true, ..Mode::DEFAULT });
    }
    if problem.scaling.max_instances.is_some() {
        let strict: Vec<bool> = modes.iter().filter(|m| !m.az_by_opening).map(|m| m.strict_balance).collect();
        for strict_balance in strict.iter().copied() {
            modes.push(Mode { coverage_first: true, strict_balance, ..Mode::DEFAULT });
            modes.push(Mode { largest_first: true, strict_balance, ..Mode::DEFAULT });
        }
        if !problem.fleet.is_empty() {
            for strict_balance in strict {
                modes.push(Mode { forbid_launches: true, strict_balance, ..Mode::DEFAULT });
            }
        }
    }
    // Only as many orders as the passes can use (each order runs with every mode).
    let orders = candidate_orders(problem, passes.div_ceil(modes.len().max(1) as u64));
    let mut out = Vec::new();
    for order in &orders {
        for &mode in &modes {
            if (out.len() as u64) < passes {
                out.push((order.clone(), mode));
            }
        }
    }
    if passes > 1 && pass_work(problem) <= MIXED_CANDIDATE_WORK {
        // First-fit decreasing over all components at once, once (its packing does not depend on
        // the order): fewer instances where one component at a time leaves room on each.
        let packing =
            MixedPacking { opening: MixedOpening::FewestInstances, capped: true, summed: false, scarcity: false };
        let ffd = Mode { mixed: Some(packing), ..Mode::DEFAULT };
        // Last, beyond the budget: the passes above run as before and a later pass wins only
        // when strictly better.
        out.push((orders.first().cloned().unwrap_or_default(), ffd));
    }
    out
}

/// Pass work up to which the first-fit-decreasing pass runs on every input (not only when copies
/// are left unplaced): its openings scan every component per type and AZ.
const MIXED_CANDIDATE_WORK: u64 = 2_000;

/// The passes run only when the best of [`candidate_passes`] leaves copies unplaced that could
/// fit somewhere: openings by copies per instance (`largest_first`) and, for balanced
/// components, AZs by the density of their next opening before balance (`dense_azs`). When the
/// instances left (MaxInstanceCount, capacity) cannot hold every copy, L1 is won by how many
/// copies each instance holds, at the expense of balance (L2) and preference (L3). Also the
/// default modes with AZ turns (`az_turns`), where a short budget is shared between the AZs, and
/// (when some component scales in) trimming the fullest holders (`trim_fullest`).
/// Hardest and easiest first, permissive and strict balance, within the work budget. Last, the
/// mixed packing passes (`mixed.rs`), including one led by each pool type.
pub(super) fn rescue_passes(problem: &Problem) -> Vec<(Vec<usize>, Mode)> {
    let passes = (WORK_BUDGET / pass_work(problem).max(1)).max(1);
    let dense = Mode { largest_first: true, dense_azs: true, az_turns: true, ..Mode::DEFAULT };
    let turns = Mode { az_turns: true, ..Mode::DEFAULT };
    let mut modes = vec![dense, Mode { strict_balance: true, ..dense }, turns, Mode { strict_balance: true, ..turns }];
    let existing = problem.existing_copies_per_component();
    if problem.components.iter().zip(&existing).any(|(c, &have)| u64::from(c.copy_count) < have) {
        modes.push(Mode { trim_fullest: true, ..Mode::DEFAULT });
        if problem.scaling.max_instances.is_some() {
            modes.push(Mode { trim_fullest: true, forbid_launches: true, ..Mode::DEFAULT });
        }
    }
    let mut out = Vec::new();
    let orders = candidate_orders(problem, passes.div_ceil(modes.len() as u64).min(2));
    for order in &orders {
        for &mode in &modes {
            if (out.len() as u64) < passes {
                out.push((order.clone(), mode));
            }
        }
    }
    // The mixed passes come last, with the first order only (their packing does not depend on
    // the order), so the passes above run as they would without them: a later pass wins only
    // when it is strictly better, so no plan gets worse.
    for (opening, capped, summed) in [
        (MixedOpening::CopiesFirst, false, false),
        (MixedOpening::CopiesFirst, true, false),
        (MixedOpening::CopiesFirst, false, true),
        (MixedOpening::PriorityFirst, false, false),
        (MixedOpening::PriorityFirst, true, false),
        (MixedOpening::PriorityFirst, false, true),
    ] {
        if (out.len() as u64) < passes {
            let packing = MixedPacking { opening, capped, summed, scarcity: false };
            let mode = Mode { mixed: Some(packing), ..Mode::DEFAULT };
            out.push((orders.first().cloned().unwrap_or_default(), mode));
        }
    }
    // Then one pass led by each pool type that holds some missing copy (by name, so input order
    // does not matter): the budget spent on the type that holds most over all of it.
    let mut led: Vec<usize> = problem
        .pool_types()
        .filter(|&t| problem.components.iter().any(|component| fitting_need(problem, component, t).is_some()))
        .collect();
    led.sort_by(|&a, &b| problem.types[a].name.cmp(&problem.types[b].name));
    // Each also with copies sized by the budget's scarce resource (`MixedPacking::scarcity`).
    let openings = std::iter::once(MixedOpening::CopiesFirst).chain(led.iter().map(|&t| MixedOpening::TypeLed(t)));
    let packings = openings
        .map(|opening| MixedPacking { opening, capped: false, summed: false, scarcity: true })
        .chain(led.iter().map(|&t| MixedPacking {
            opening: MixedOpening::TypeLed(t),
            capped: false,
            summed: false,
            scarcity: false,
        }));
    for packing in packings {
        if (out.len() as u64) < passes {
            out.push((orders.first().cloned().unwrap_or_default(), Mode { mixed: Some(packing), ..Mode::DEFAULT }));
        }
    }
    out
}

/// The pass run apart when copies are still missing once the best plan is final: room and
/// openings as the configuration LP of L1 chooses (`lp_packing.rs`), then the main pass with
/// the first order. (Filling the fleet's room before the LP, one instance ahead, left 4 of 60
/// fresh endpoints one copy short; with the room in the LP, 1.)
pub(super) fn lp_passes(problem: &Problem) -> Vec<(Vec<usize>, Mode)> {
    vec![(component_order(problem), Mode { lp_openings: true, ..Mode::DEFAULT })]
}

/// Component orders to try, best guess first, without duplicates. Every order is derived from
/// [`component_order`] and intrinsic keys, so input order does not matter.
///
/// Hardest first packs big copies while room is free; easiest first places the most copies
/// when room is short (L1 counts copies, not size); balanced components first get AZs spread
/// before unbalanced ones fill single AZs; fewest copies first finishes small components.
fn candidate_orders(problem: &Problem, passes: u64) -> Vec<Vec<usize>> {
    let hardest = component_order(problem);
    let mut orders: Vec<Vec<usize>> = vec![hardest.clone()];
    if passes == 1 {
        return orders;
    }
    let push = |order: Vec<usize>, orders: &mut Vec<Vec<usize>>| {
        if orders.len() as u64 >= passes || orders.contains(&order) {
            return;
        }
        orders.push(order);
    };
    let easiest: Vec<usize> = hardest.iter().rev().copied().collect();
    push(easiest.clone(), &mut orders);
    // Position of each component in `hardest`, looked up while sorting.
    let mut positions = vec![usize::MAX; problem.components.len()];
    for (position, &c) in hardest.iter().enumerate() {
        if let Some(cell) = positions.get_mut(c) {
            *cell = position;
        }
    }
    let position = |c: usize| positions.get(c).copied().unwrap_or(usize::MAX);
    let balanced = |c: usize| problem.components.get(c).is_some_and(|x| x.max_imbalance.is_some());
    let copies = |c: usize| problem.components.get(c).map_or(0, |x| x.copy_count);
    for base in [&hardest, &easiest] {
        if orders.len() as u64 >= passes {
            return orders;
        }
        let mut order = base.clone();
        order.sort_by_key(|&c| !balanced(c));
        push(order, &mut orders);
        let mut order = base.clone();
        order.sort_by_key(|&c| balanced(c));
        push(order, &mut orders);
    }
    if orders.len() as u64 >= passes {
        return orders;
    }
    let mut order = hardest.clone();
    order.sort_by_key(|&c| (copies(c), position(c)));
    push(order, &mut orders);
    let mut order = hardest.clone();
    order.sort_by_key(|&c| (Reverse(copies(c)), position(c)));
    push(order, &mut orders);
    if hardest.len() <= ALL_ORDERS_UP_TO {
        for permutation in hardest.iter().copied().permutations(hardest.len()) {
            push(permutation, &mut orders);
        }
    } else if hardest.len() <= ROTATED_ORDERS_UP_TO {
        // Too many components for every order: each component gets a turn to go first (the
        // rest hardest first), so the one whose room the others take can claim it.
        for first in &hardest {
            let mut order = vec![*first];
            order.extend(hardest.iter().copied().filter(|c| c != first));
            push(order, &mut orders);
        }
    }
    orders
}

/// Free room of one fleet instance for the component being placed, with its fill keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FreeSlot {
    index: usize,
    /// Copies of the component that still fit.
    room: u64,
    /// Copies of the component it holds now.
    copies: u32,
    /// The instance's intrinsic tie-break.
    rank: usize,
}

pub(super) fn as_count(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

impl Greedy<'_> {
    pub(super) fn place_all(&mut self, order: &[usize]) {
        for &component in order {
            self.place_component(component);
        }
    }

    fn place_component(&mut self, c: usize) {
        let problem = self.problem;
        let Some(component) = problem.components.get(c) else {
            return;
        };
        let missing = self.missing_new_copies(c);
        if missing == 0 {
            return;
        }
        let needs: Vec<Option<Resources>> = (0..problem.types.len())
            .map(|t| component.placement_requirement(problem, t).map(|r| r.resources))
            .collect();
        if needs.iter().all(Option::is_none) {
            return;
        }
        self.placing = Some(c);
        match component.max_imbalance {
            Some(limit) => self.place_balanced(c, &needs, missing, limit),
            None => self.place_unbalanced(c, &needs, missing),
        }
        self.placing = None;
    }

    /// Free room for copies of the component on fleet instances in `azs`: (instance, copies),
    /// in `fleet_by_az` order.
    fn free_slots(&mut self, c: usize, needs: &Needs, azs: impl Iterator<Item = usize>) -> Vec<FreeSlot> {
        let accelerated_only = needs.iter().flatten().all(|need| need.accelerators > 0);
        let mut slots = Vec::new();
        for z in azs {
            if accelerated_only {
                // Only instances with a free accelerator can have room; the others leave the list.
                let mut list = self.accelerated_by_az.get_mut(z).map(std::mem::take).unwrap_or_default();
                list.retain(|&index| self.free_accelerators(index) > 0);
                self.extend_free_slots(c, needs, &list, &mut slots);
                if let Some(cell) = self.accelerated_by_az.get_mut(z) {
                    *cell = list;
                }
            } else {
                let indices = self.fleet_by_az.get(z).map_or(&[][..], Vec::as_slice);
                self.extend_free_slots(c, needs, indices, &mut slots);
            }
        }
        slots
    }

    pub(super) fn free_accelerators(&self, index: usize) -> u64 {
        self.instances.get(index).map_or(0, |instance| {
            self.problem
                .types
                .get(instance.type_index)
                .map_or(0, |info| info.capacity.accelerators.saturating_sub(instance.used.accelerators))
        })
    }

    /// Appends the free room for copies of component `c` on `indices` (those with room).
    fn extend_free_slots(&self, c: usize, needs: &Needs, indices: &[usize], slots: &mut Vec<FreeSlot>) {
        // Room for every candidate up front: growing the vector step by step copied it often.
        slots.reserve(indices.len());
        for &index in indices {
            if let Some(room) = self.room_for(needs, index).filter(|&room| room > 0) {
                let instance = &self.instances[index];
                // Most scans run before the component has any copy in the AZ: then there is no
                // need to walk the instance's copy list (often spilled to the heap).
                let in_az = self.az_copies.get(c).and_then(|row| row.get(instance.az)).copied().unwrap_or(1);
                let copies = if in_az == 0 { 0 } else { instance.copies_of(c) };
                slots.push(FreeSlot { index, room, copies, rank: instance.rank });
            }
        }
    }

    /// Copies of the component that still fit on instance `index` (`None` where it may not run).
    fn room_for(&self, needs: &Needs, index: usize) -> Option<u64> {
        let instance = self.instances.get(index).filter(|instance| !instance.draining)?;
        let need = needs.get(instance.type_index)?.as_ref()?;
        let room = self.problem.types.get(instance.type_index)?.capacity.minus(&instance.used)?;
        // Most instances are full by now: the comparison is much cheaper than the divisions.
        Some(if need.fits_in(&room) { room.copies_of(need) } else { 0 })
    }

    /// Puts up to `wanted` copies into `slots`: SPREAD evens the component's count per instance,
    /// BINPACK fills the fullest instance first (best fit). Returns copies placed. `slots` is
    /// left holding the room that is still free (same order, exhausted instances dropped), so a
    /// caller can keep using it instead of scanning the AZ again: only this component's
    /// placements change room while it is being placed.
    fn fill(&mut self, c: usize, needs: &Needs, slots: &mut Vec<FreeSlot>, wanted: u64) -> u64 {
        if slots.is_empty() || wanted == 0 {
            return 0;
        }
        let strategy = self.problem.components[c].strategy;
        // Keys are unique (ranks are), so heap order is the sorted order.
        let spread_key = |slot: &FreeSlot| (slot.copies, slot.rank);
        if wanted == 1 {
            // One copy (the strict balance rounds place one per AZ): the best slot, no heap.
            let best = match strategy {
                PlacementStrategy::Spread => slots.iter().enumerate().min_by_key(|(_, slot)| spread_key(slot)),
                PlacementStrategy::Binpack => slots.iter().enumerate().min_by_key(|(_, slot)| (slot.room, slot.rank)),
            };
            let Some((slot, _)) = best else {
                return 0;
            };
            self.place_in_slot(c, needs, slots, slot, 1);
            if slots.get(slot).is_some_and(|entry| entry.room == 0) {
                slots.remove(slot);
            }
            return 1;
        }
        let mut adds = vec![0u64; slots.len()];
        let mut placed = 0u64;
        match strategy {
            PlacementStrategy::Spread => {
                let mut heap: BinaryHeap<Reverse<((u32, usize), usize)>> =
                    slots.iter().enumerate().map(|(slot, entry)| Reverse((spread_key(entry), slot))).collect();
                while placed < wanted {
                    let Some(Reverse(((count, rank), slot))) = heap.pop() else {
                        break;
                    };
                    adds[slot] += 1;
                    placed += 1;
                    if adds[slot] < slots[slot].room {
                        heap.push(Reverse(((count.saturating_add(1), rank), slot)));
                    }
                }
            }
            PlacementStrategy::Binpack => {
                let mut heap: BinaryHeap<Reverse<(u64, usize, usize)>> =
                    slots.iter().enumerate().map(|(slot, entry)| Reverse((entry.room, entry.rank, slot))).collect();
                while placed < wanted {
                    let Some(Reverse((room, _, slot))) = heap.pop() else {
                        break;
                    };
                    let take = room.min(wanted - placed);
                    adds[slot] = take;
                    placed += take;
                }
            }
        }
        for (slot, &count) in adds.iter().enumerate() {
            if count > 0 {
                self.place_in_slot(c, needs, slots, slot, count);
            }
        }
        slots.retain(|slot| slot.room > 0);
        placed
    }

    /// Places `count` copies of `c` on the instance of `slots[slot]` and updates its room.
    fn place_in_slot(&mut self, c: usize, needs: &Needs, slots: &mut [FreeSlot], slot: usize, count: u64) {
        let Some(index) = slots.get(slot).map(|entry| entry.index) else {
            return;
        };
        let type_index = self.instances[index].type_index;
        if let Some(Some(need)) = needs.get(type_index) {
            self.place(c, index, as_count(count), need);
        }
        let (room, copies) = (self.room_for(needs, index).unwrap_or(0), self.instances[index].copies_of(c));
        if let Some(entry) = slots.get_mut(slot) {
            entry.room = room;
            entry.copies = copies;
        }
    }

    /// The best instances to open in `az` for `remaining` copies, if any may be opened.
    pub(super) fn best_opening(&self, needs: &Needs, az: usize, remaining: u64) -> Option<Opening> {
        let budget = self.budget();
        if budget == 0 || remaining == 0 {
            return None;
        }
        let mut best: Option<Opening> = None;
        for t in self.problem.pool_types() {
            let Some(Some(need)) = needs.get(t) else {
                continue;
            };
            let Some(info) = self.problem.types.get(t) else {
                continue;
            };
            let per_instance = info.capacity.copies_of(need);
            if per_instance == 0 {
                continue;
            }
            let idle = self.idle.get(t).and_then(|row| row.get(az)).map_or(&[][..], Vec::as_slice);
            let idle_reserved = idle.iter().filter(|&&i| self.instances[i].reserved).count() as u64;
            let (type_index, az_index) = (TypeIndex::new(t), AzIndex::new(az));
            let available = self.openings_left(t, az);
            let instances = remaining.div_ceil(per_instance).min(available).min(budget);
            if instances == 0 {
                continue;
            }
            let free = idle_reserved.saturating_add(self.reserved_left(type_index, az_index));
            let paid = i64::try_from(instances.saturating_sub(free)).unwrap_or(i64::MAX);
            let cost = instance_cost(self.problem, t, false).saturating_mul(paid);
            let covered = remaining.min(instances.saturating_mul(per_instance));
            let first = if self.dense_azs {
                Reverse(self.copies_per_opening(t, need, per_instance, remaining))
            } else if self.largest_first {
                Reverse(per_instance)
            } else if self.coverage_first {
                Reverse(covered)
            } else {
                Reverse(0)
            };
            let key = (first, info.priority, Reverse(covered), instances, cost, self.type_rank[t]);
            if best.is_none_or(|current| key < current.key) {
                best = Some(Opening { key, type_index: t, instances, per_instance, available: available.min(budget) });
            }
        }
        best
    }

    /// Copies one more instance of type `t` can hold under the dense mode: the copies of the
    /// component being placed it takes (`per_instance`, at most `remaining`) plus the most copies
    /// of one other component still missing that fit the room left on it. Two types holding one
    /// big copy each are not equal when one of them keeps room for the small copies placed later.
    fn copies_per_opening(&self, t: usize, need: &Resources, per_instance: u64, remaining: u64) -> u64 {
        let problem = self.problem;
        let taken = per_instance.min(remaining);
        let Some(left) = problem.types.get(t).and_then(|info| info.capacity.minus(&need.times(taken))) else {
            return taken;
        };
        let others = problem
            .components
            .iter()
            .enumerate()
            .filter(|&(c, _)| Some(c) != self.placing)
            .filter_map(|(c, component)| {
                let missing = self.missing_new_copies(c);
                let need = component.placement_requirement(problem, t)?.resources;
                (missing > 0).then(|| left.copies_of(&need).min(missing))
            })
            .max()
            .unwrap_or(0);
        taken.saturating_add(others)
    }

    /// Places up to `wanted` copies in one AZ: free room first, then opened instances.
    /// `slots` is the AZ's free room for the component (from [`Self::free_slots`]); on return
    /// it holds the AZ's free room left, opened instances included.
    /// Openings are chosen for `sizing` copies (at least `wanted`; more when the AZ's share is
    /// placed a few copies at a time) but only as many are opened as `wanted` needs.
    fn place_in_az(
        &mut self,
        c: usize,
        needs: &Needs,
        az: usize,
        (wanted, sizing): (u64, u64),
        slots: &mut Vec<FreeSlot>,
    ) -> u64 {
        let mut placed = self.fill(c, needs, slots, wanted);
        while placed < wanted {
            let Some(opening) = self.best_opening(needs, az, sizing.max(wanted) - placed) else {
                break;
            };
            let mut opened = Vec::new();
            for _ in 0..opening.instances.min((wanted - placed).div_ceil(opening.per_instance.max(1))) {
                let Some(index) = self.open(TypeIndex::new(opening.type_index), AzIndex::new(az)) else {
                    break;
                };
                opened.push(index);
            }
            if opened.is_empty() {
                break;
            }
            let mut new_slots = Vec::with_capacity(opened.len());
            self.extend_free_slots(c, needs, &opened, &mut new_slots);
            let got = self.fill(c, needs, &mut new_slots, wanted - placed);
            // Opened instances join the AZ's fleet after every earlier one, as a scan would list them.
            slots.append(&mut new_slots);
            placed += got;
            if got == 0 {
                break;
            }
        }
        placed
    }

    /// How many of `copies` copies each AZ should take: least resulting balance excess first,
    /// then AZs that still have free room, then fewest copies, then AZ name.
    fn assign_azs(
        &self,
        c: usize,
        full: &[bool],
        free: &[u64],
        opening: &[OpeningCost],
        copies: u64,
        limit: u32,
    ) -> Vec<u64> {
        let az_count = full.len();
        let mut totals: Vec<u64> = self.az_copies[c].clone();
        let mut adds = vec![0u64; az_count];
        for _ in 0..copies {
            // The spread of `totals` with one more copy in z, from the current extremes in O(1)
            // per AZ (rescanning every AZ per candidate was O(AZs²) per copy: 1,000 AZs took 60 s).
            let extremes = Extremes::of(&totals);
            let mut best: Option<(AzKey, usize)> = None;
            for z in (0..az_count).filter(|&z| !full[z]) {
                let excess = extremes.spread_with_one_more(totals[z]).saturating_sub(u64::from(limit));

                let no_room = free[z] <= adds[z];
                let next = opening.get(z).copied().unwrap_or(NO_OPENING);
                let (priority, cost) = if no_room && self.az_by_opening { (next.1, next.2) } else { (0, 0) };
                let density = match (self.dense_azs, no_room) {
                    (true, true) => next.0,
                    _ => Reverse(u64::MAX),
                };
                let key = (density, excess, no_room, priority, totals[z], cost, self.az_rank[z]);
                if best.is_none_or(|(current, _)| key < current) {
                    best = Some((key, z));
                }
            }
            let Some((key, z)) = best else { break };
            if self.dense_azs && key.2 && adds[z] >= free[z].saturating_add(opening.get(z).map_or(0, |o| o.3)) {
                // The AZ's next opening is of another type, with another density: the round
                // ends and the caller asks again (a copy is always assigned first: the caller
                // loops while copies are assigned).
                if adds.iter().any(|&n| n > 0) {
                    break;
                }
            }
            if self.strict_balance && key.1 > balance_excess(&totals, Some(limit)) {
                // Strict: a copy that adds balance excess waits for the permissive pass, so
                // the room goes to other components first (L2 before this component's L1 share).
                break;
            }
            adds[z] += 1;
            totals[z] += 1;
        }
        adds
    }

    /// A component with AZ balance: AZs by balance, PERMISSIVE (an AZ that cannot take its
    /// share hands it to the others).
    fn place_balanced(&mut self, c: usize, needs: &Needs, missing: u64, limit: u32) {
        let az_count = self.problem.azs.len();
        let mut full = vec![false; az_count];
        let mut remaining = missing;
        let mut az_order: Vec<usize> = (0..az_count).collect();
        az_order.sort_by_key(|&z| self.az_rank[z]);
        // Each AZ's free room for the component, kept current by `place_in_az` (only this
        // component's placements change it), so the AZs are scanned once, not every round.
        let mut slots_by_az: Vec<Vec<FreeSlot>> =
            (0..az_count).map(|z| self.free_slots(c, needs, std::iter::once(z))).collect();
        while remaining > 0 {
            let free: Vec<u64> =
                slots_by_az.iter().map(|slots| slots.iter().fold(0u64, |sum, s| sum.saturating_add(s.room))).collect();
            // Strict: a copy per open AZ at a time, so an AZ found full stops the others from
            // running ahead of it by more than the balance allows.
            let batch = if self.strict_balance {
                remaining.min(full.iter().filter(|&&f| !f).count() as u64)
            } else {
                remaining
            };
            // What a copy beyond the free room costs per AZ: the best opening's priority (L3)
            // and price (L4); nothing to open ranks last.
            let opening: Vec<OpeningCost> = (0..az_count)
                .map(|z| {
                    self.best_opening(needs, z, 1)
                        .map_or(NO_OPENING, |o| (o.key.0, o.key.1, o.key.4, o.available.saturating_mul(o.per_instance)))
                })
                .collect();
            let adds = self.assign_azs(c, &full, &free, &opening, batch, limit);
            if adds.iter().all(|&n| n == 0) {
                break;
            }
            let mut newly_full = false;
            // AZ turns: when the openings left may not cover the round, the AZs take turns a copy at a
            // time: the first AZ in name order must not spend the MaxInstanceCount budget on its
            // whole share while the others get nothing (balance, and L3 when they open better
            // types). Otherwise each AZ places its share at once (cheaper).
            let scarce = self.az_turns && self.budget() < adds.iter().sum::<u64>();
            let step = if scarce { 1 } else { u64::MAX };
            let mut left = adds.clone();
            while left.iter().any(|&n| n > 0) {
                for &z in &az_order {
                    if left[z] == 0 {
                        continue;
                    }
                    let wanted = left[z].min(step);
                    let placed = self.place_in_az(c, needs, z, (wanted, left[z]), &mut slots_by_az[z]);
                    remaining -= placed;
                    left[z] -= wanted;
                    if placed < wanted {
                        full[z] = true;
                        newly_full = true;
                        slots_by_az[z].clear();
                        left[z] = 0;
                    }
                }
            }
            // A round cut short (dense AZs: an AZ's opening type ran out) continues.
            let cut_short = adds.iter().sum::<u64>() < batch;
            if !newly_full && !self.strict_balance && !cut_short {
                break;
            }
        }
    }

    /// A component without AZ balance: free room anywhere, then the AZ whose best opening
    /// covers the copies best (fewest copies of the component first on ties).
    fn place_unbalanced(&mut self, c: usize, needs: &Needs, missing: u64) {
        let az_count = self.problem.azs.len();
        let mut slots = self.free_slots(c, needs, 0..az_count);
        let mut placed = self.fill(c, needs, &mut slots, missing);
        let mut full = vec![false; az_count];
        while placed < missing {
            let remaining = missing - placed;
            let mut best: Option<((OpeningKey, u64, usize), usize)> = None;
            for z in (0..az_count).filter(|&z| !full[z]) {
                let Some(opening) = self.best_opening(needs, z, remaining) else {
                    continue;
                };
                let key = (opening.key, self.az_copies[c][z], self.az_rank[z]);
                if best.as_ref().is_none_or(|(current, _)| key < *current) {
                    best = Some((key, z));
                }
            }
            let Some((_, z)) = best else { break };
            // The free room everywhere is used up by now: only openings are left.
            let got = self.place_in_az(c, needs, z, (remaining, remaining), &mut Vec::new());
            placed += got;
            if got < remaining {
                full[z] = true;
            }
        }
    }
}

/// The largest and smallest value of a list, how often the smallest occurs, and the smallest
/// value above it: enough to know the spread after adding one to any entry.
struct Extremes {
    most: u64,
    fewest: u64,
    fewest_count: usize,
    next_fewest: Option<u64>,
}

impl Extremes {
    fn of(values: &[u64]) -> Extremes {
        let most = values.iter().copied().max().unwrap_or(0);
        let fewest = values.iter().copied().min().unwrap_or(0);
        let fewest_count = values.iter().filter(|&&value| value == fewest).count();
        let next_fewest = values.iter().copied().filter(|&value| value > fewest).min();
        Extremes { most, fewest, fewest_count, next_fewest }
    }

    /// `max − min` once the entry holding `value` has grown by one.
    fn spread_with_one_more(&self, value: u64) -> u64 {
        let grown = value + 1;
        let most = self.most.max(grown);
        let fewest = if value == self.fewest && self.fewest_count == 1 {
            self.next_fewest.map_or(grown, |next| next.min(grown))
        } else {
            self.fewest
        };
        most - fewest
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn extremes_give_the_spread_after_one_more_like_a_rescan() {
        // Every list of up to 4 values in 0..4 (256 + 64 + 16 + 4 lists), every entry grown.
        for length in 1..=4u32 {
            for code in 0..4u64.pow(length) {
                let values: Vec<u64> = (0..length).map(|i| (code / 4u64.pow(i)) % 4).collect();
                let extremes = super::Extremes::of(&values);
                for (index, &value) in values.iter().enumerate() {
                    let mut grown = values.clone();
                    grown[index] += 1;
                    let expected = crate::fleet::imbalance(&grown);
                    assert_eq!(extremes.spread_with_one_more(value), expected, "{values:?} + 1 at {index}");
                }
            }
        }
    }

    use super::*;
    use crate::model::ScenarioBuilder;

    #[test]
    fn dominant_share_takes_the_scarcest_resource() {
        let capacity = Resources { accelerators: 8, milli_cpus: 192_000, memory_mib: 1_000_000 };
        let need = Resources { accelerators: 2, milli_cpus: 96_000, memory_mib: 1000 };
        assert_eq!(need.dominant_share(&capacity), 0.5);
    }

    #[test]
    fn component_order_is_hardest_first_and_ignores_input_order() {
        let build = |names: [(&str, u32); 3]| {
            let mut builder = ScenarioBuilder::new(["a"]).pool("ml.g6.48xlarge", 1);
            for (name, accelerators) in names {
                builder = builder.component(name, 1, accelerators, 1.0, 1024);
            }
            Problem::new(&builder.build().unwrap()).unwrap()
        };
        let one = build([("small", 1), ("big", 4), ("mid", 2)]);
        let two = build([("mid", 2), ("small", 1), ("big", 4)]);
        let names =
            |p: &Problem| component_order(p).into_iter().map(|c| p.components[c].name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&one), ["big", "mid", "small"]);
        assert_eq!(names(&one), names(&two));
    }

    fn priced(name: &str, accelerators: f64, price: f64) -> crate::model::InstanceTypeSpec {
        crate::model::InstanceTypeSpec {
            instance_type: name.into(),
            accelerator_count: accelerators as u32,
            accelerator_memory_gib: 24.0,
            v_cpu_count: 48.0 * accelerators / 4.0,
            memory_in_mb: 196_608.0 * accelerators / 4.0,
            hourly_price: Some(price),
        }
    }

    fn opening_type(priority_small: u8, priority_big: u8, remaining: u64) -> String {
        let scenario = ScenarioBuilder::new(["a"])
            .instance_type(priced("ml.g6.12xlarge", 4.0, 4.6))
            .instance_type(priced("ml.g6.48xlarge", 8.0, 13.35))
            .pool("ml.g6.48xlarge", priority_big)
            .pool("ml.g6.12xlarge", priority_small)
            .component("x", 8, 1, 1.0, 1024)
            .build()
            .unwrap();
        let problem = Problem::new(&scenario).unwrap();
        let planner = Greedy::new(&problem);
        let needs: Vec<Option<Resources>> = (0..problem.types.len())
            .map(|t| problem.components[0].placement_requirement(&problem, t).map(|r| r.resources))
            .collect();
        let opening = planner.best_opening(&needs, 0, remaining).unwrap();
        problem.types[opening.type_index].name.clone()
    }

    #[test]
    fn best_opening_is_priority_first_then_fewest_instances_then_cost() {
        // Same priority: 8 copies fit one 8-accelerator instance (two of the 4-accelerator type).
        assert_eq!(opening_type(1, 1, 8), "ml.g6.48xlarge");
        // Same priority, 3 copies: one instance either way, the cheaper one wins.
        assert_eq!(opening_type(1, 1, 3), "ml.g6.12xlarge");
        // A more preferred type always wins, whatever the fit.
        assert_eq!(opening_type(1, 2, 8), "ml.g6.12xlarge");
        assert_eq!(opening_type(2, 1, 3), "ml.g6.48xlarge");
    }

    /// One big copy per instance on either type; the dense mode counts the room the bigger
    /// type keeps for the other component's missing copies (two per instance), the others do not.
    #[test]
    fn dense_openings_count_room_left_for_other_missing_copies() {
        let scenario = ScenarioBuilder::new(["a"])
            .instance_type(priced("ml.g6.12xlarge", 4.0, 4.6))
            .instance_type(priced("ml.g6.24xlarge", 6.0, 9.0))
            .pool("ml.g6.12xlarge", 1)
            .pool("ml.g6.24xlarge", 2)
            .component("big", 3, 4, 1.0, 1024)
            .component("small", 6, 1, 1.0, 1024)
            .build()
            .unwrap();
        let problem = Problem::new(&scenario).unwrap();
        let big = problem.components.iter().position(|c| c.name == "big").unwrap();
        let needs: Vec<Option<Resources>> = (0..problem.types.len())
            .map(|t| problem.components[big].placement_requirement(&problem, t).map(|r| r.resources))
            .collect();
        let mut planner = Greedy::new(&problem);
        planner.placing = Some(big);
        planner.largest_first = true;
        let opening = planner.best_opening(&needs, 0, 3).unwrap();
        assert_eq!(problem.types[opening.type_index].name, "ml.g6.12xlarge", "per instance ties: priority");
        planner.dense_azs = true;
        let opening = planner.best_opening(&needs, 0, 3).unwrap();
        assert_eq!(problem.types[opening.type_index].name, "ml.g6.24xlarge");
        assert_eq!(opening.key.0, Reverse(3), "one big copy and two small ones");
    }

    #[test]
    fn assign_azs_prefers_balance_then_free_room() {
        let scenario = ScenarioBuilder::new(["a", "b", "c"])
            .pool("ml.g6.48xlarge", 1)
            .component("x", 3, 1, 1.0, 1024)
            .max_imbalance("x", 1)
            .build()
            .unwrap();
        let problem = Problem::new(&scenario).unwrap();
        let planner = Greedy::new(&problem);
        // Free room only in "a": with MaxImbalance 1 the three copies still go 1/1/1.
        assert_eq!(
            planner.assign_azs(0, &[false; 3], &[10, 0, 0], &[(Reverse(0), 1, 0, u64::MAX); 3], 3, 1),
            vec![1, 1, 1]
        );
        // Two copies with MaxImbalance 2 may both use the free room in "a".
        assert_eq!(
            planner.assign_azs(0, &[false; 3], &[10, 0, 0], &[(Reverse(0), 1, 0, u64::MAX); 3], 2, 2),
            vec![2, 0, 0]
        );
        // A full AZ gets nothing.
        assert_eq!(
            planner.assign_azs(0, &[true, false, false], &[0, 0, 0], &[(Reverse(0), 1, 0, u64::MAX); 3], 4, 0),
            vec![0, 2, 2]
        );
    }
}
