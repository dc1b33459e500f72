//! Plan-level moves shared by the greedy and the exact planner: each takes a verified plan and
//! returns a strictly better one that verifies, or `None`. Balance (L2): chains, exchanges, swaps
//! and relaunches of `engines::balance` carried out on the plan ([`lower_plan_excess`]), and
//! insertion chains for unplaced copies first ([`place_plan_missing`]). Instances (L3): launches
//! retyped to a more preferred type ([`retype_to_preferred`], [`retype_pairs_to_preferred`]),
//! moved up into another AZ ([`relocate_to_preferred`]) or emptied and taken out
//! ([`empty_launches`]). docs/formulation.md describes each. Neither planner is imported here:
//! the exact planner imports greedy for its warm start, so what both use lives below them.

mod draft;

pub(crate) use draft::{actions_of, spread_balance, Draft};

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use crate::engines::balance::{self, launch_room, shift_copies, Budget, Holder};
use crate::engines::finish;
use crate::engines::limits::{Limits as EngineLimits, Stats};
use crate::fleet::{balance_excess, FinalFleet, FinalInstance};
use crate::index::{AzIndex, TypeIndex};
use crate::plan::{Action, Plan};
use crate::problem::Problem;
use crate::verify::verify;

/// `plan` with launches retyped to a more preferred pool type in the same AZ, where one instance
/// of that type holds the launch's copies and the type's launch limit there has room (least
/// preferred launches first, the most preferred type that fits): the same copies stay in the same
/// AZs on as many instances (L1, L2 and the instance count unchanged), and every retype moves one
/// instance to a better priority (L3 strictly better). A search stopped before or inside the L3
/// levels leaves launches of fallback types whose copies a preferred type would hold (the
/// instance counts of the balance level's solution, not of an optimised L3). Reservations are
/// handed out again per (type, AZ) in launch order. `None` unless the result verifies and is
/// strictly better.
pub(crate) fn retype_to_preferred(problem: &Problem, plan: &Plan) -> Option<Plan> {
    let (fleet, preferred) = fleet_and_preferred(problem, plan)?;
    let priority = |t: usize| priority_of(problem, t);
    let mut drafts: Vec<Draft> = fleet.instances.iter().map(draft_of).collect();
    let mut launches = launches_per_group(&drafts);
    let mut order: Vec<usize> = (0..drafts.len()).filter(|&i| drafts[i].existing.is_none()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(priority(drafts[i].type_index)), i));
    let mut retyped = false;
    for i in order {
        let Some(draft) = drafts.get_mut(i) else { continue };
        let (from, z) = (draft.type_index, draft.az_index);
        let target = preferred
            .iter()
            .copied()
            .take_while(|&t| priority(t) < priority(from))
            .find(|&t| launch_room(problem, &launches, t, z) && one_instance_holds(problem, t, &draft.copies));
        let Some(to) = target else { continue };
        draft.type_index = to;
        move_launch(&mut launches, (from, z), (to, z));
        retyped = true;
    }
    if !retyped {
        return None;
    }
    hand_out_reservations(problem, &mut drafts);
    rebuilt_if_better(problem, plan, &drafts)
}

/// `plan` with launches of fallback types moved to a more preferred type in any AZ: a launch
/// whose copies one instance of a more preferred pool type holds becomes such an instance in the
/// AZ where that type may still launch and the balance excess grows least, when it does not grow
/// at all (L1 unchanged, L2 no worse, L3 strictly better per launch). What a retype within the
/// launch's AZ ([`retype_to_preferred`]) cannot do when the preferred type's launch limit there is
/// reached while another AZ has room. Least preferred launches first; the most preferred type
/// that fits first. The SPREAD rule is restored in every AZ. `None` unless the result verifies
/// and is strictly better.
pub(crate) fn relocate_to_preferred(problem: &Problem, plan: &Plan, limits: &EngineLimits) -> Option<Plan> {
    if problem.azs().len() < 2 {
        return None;
    }
    let (fleet, preferred) = fleet_and_preferred(problem, plan)?;
    let priority = |t: usize| priority_of(problem, t);
    let mut drafts: Vec<Draft> = fleet.instances.iter().map(draft_of).collect();
    let mut counts = fleet.copies_per_az(problem);
    let mut launches = launches_per_group(&drafts);
    let mut order: Vec<usize> = (0..drafts.len()).filter(|&i| drafts[i].existing.is_none()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(priority(drafts[i].type_index)), i));
    let excess_of = |component: usize, per_az: &[u64]| {
        balance_excess(per_az, problem.components().get(component).and_then(|c| c.max_imbalance))
    };
    let mut moved = false;
    for a in order {
        if limits.stop_now().is_some() {
            break;
        }
        let Some(draft) = drafts.get(a) else { continue };
        let (from, from_az) = (draft.type_index, draft.az_index);
        let held = draft.copies.clone();
        let target = preferred.iter().copied().take_while(|&t| priority(t) < priority(from)).find_map(|t| {
            if !one_instance_holds(problem, t, &held) {
                return None;
            }
            (0..problem.azs().len())
                .filter(|&z| launch_room(problem, &launches, t, z))
                .filter_map(|z| {
                    // The excess the move adds (negative: removes) over the components it moves.
                    let delta: i64 = held
                        .iter()
                        .filter_map(|(&component, &count)| {
                            let per_az = counts.get(component)?;
                            let mut after = per_az.clone();
                            shift_copies(&mut after, from_az, z, count);
                            let signed = |excess: u64| i64::try_from(excess).unwrap_or(i64::MAX);
                            Some(signed(excess_of(component, &after)) - signed(excess_of(component, per_az)))
                        })
                        .sum();
                    (delta <= 0).then_some((delta, z))
                })
                .min()
                .map(|(_, z)| (t, z))
        });
        let Some((to, to_az)) = target else { continue };
        for (&component, &count) in &held {
            if let Some(per_az) = counts.get_mut(component) {
                shift_copies(per_az, from_az, to_az, count);
            }
        }
        move_launch(&mut launches, (from, from_az), (to, to_az));
        if let Some(draft) = drafts.get_mut(a) {
            draft.type_index = to;
            draft.az_index = to_az;
        }
        moved = true;
    }
    if !moved {
        return None;
    }
    hand_out_reservations(problem, &mut drafts);
    let azs: Vec<usize> = (0..problem.azs().len()).collect();
    spread_balance(problem, &mut drafts, &azs);
    rebuilt_if_better(problem, plan, &drafts)
}

/// Packing attempts one run of [`retype_pairs_to_preferred`] may make (each places the copies of
/// two instances once).
const PAIR_WORK: u64 = 200_000;

/// `plan` with pairs of launches in one AZ repacked so that one of them can be of a more
/// preferred type: the copies of a fallback launch `a` and of another launch `b` in its AZ are
/// packed afresh, first fit decreasing in a few orders, into `a` retyped to a more preferred pool
/// type (within its launch limit) and `b` as it is. Copies only the fallback type holds (larger
/// accelerator memory, say) go to `b` when `b` holds them, which a one-launch retype
/// ([`retype_to_preferred`]) cannot do: its launch keeps every copy it had. Copies stay in their
/// AZ and instances stay as many (L1, L2 unchanged; L3 strictly better per pair). Least
/// preferred launches first. The SPREAD rule is restored within the AZs changed. Stops when
/// `limits` say so or after [`PAIR_WORK`] packings. `None` unless the result verifies and is
/// strictly better.
pub(crate) fn retype_pairs_to_preferred(problem: &Problem, plan: &Plan, limits: &EngineLimits) -> Option<Plan> {
    let (fleet, preferred) = fleet_and_preferred(problem, plan)?;
    let priority = |t: usize| priority_of(problem, t);
    let best = preferred.first().map_or(u8::MAX, |&t| priority(t));
    let mut drafts: Vec<Draft> = fleet.instances.iter().map(draft_of).collect();
    let mut launches = launches_per_group(&drafts);
    let mut order: Vec<usize> =
        (0..drafts.len()).filter(|&i| drafts[i].existing.is_none() && priority(drafts[i].type_index) > best).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(priority(drafts[i].type_index)), i));
    let mut work: u64 = 0;
    let mut changed_azs: BTreeSet<usize> = BTreeSet::new();
    'launches: for a in order {
        let Some(&Draft { type_index: from, az_index: z, .. }) = drafts.get(a) else { continue };
        let targets: Vec<usize> = preferred
            .iter()
            .copied()
            .take_while(|&t| priority(t) < priority(from))
            .filter(|&t| launch_room(problem, &launches, t, z))
            .collect();
        for to in targets {
            for b in 0..drafts.len() {
                if work >= PAIR_WORK || limits.stop_now().is_some() {
                    break 'launches;
                }
                let partner = &drafts[b];
                if b == a || partner.existing.is_some() || partner.az_index != z {
                    continue;
                }
                work += 1;
                let Some((into_a, into_b)) =
                    repack_pair(problem, [to, partner.type_index], [&drafts[a].copies, &partner.copies])
                else {
                    continue;
                };
                move_launch(&mut launches, (from, z), (to, z));
                drafts[a].type_index = to;
                drafts[a].new_copies = into_a.clone();
                drafts[a].copies = into_a;
                drafts[b].new_copies = into_b.clone();
                drafts[b].copies = into_b;
                changed_azs.insert(z);
                continue 'launches;
            }
        }
    }
    if changed_azs.is_empty() {
        return None;
    }
    hand_out_reservations(problem, &mut drafts);
    spread_balance(problem, &mut drafts, &changed_azs.into_iter().collect::<Vec<_>>());
    rebuilt_if_better(problem, plan, &drafts)
}

/// The copies `held` of two launches packed afresh into one instance of each of `types`: first
/// fit decreasing by accelerators, by memory and by CPU, each trying the first instance first and
/// then the second first; the first packing that places every copy, as copies per component of
/// each instance.
fn repack_pair(
    problem: &Problem,
    types: [usize; 2],
    held: [&BTreeMap<usize, u32>; 2],
) -> Option<(BTreeMap<usize, u32>, BTreeMap<usize, u32>)> {
    let capacity = types.map(|t| problem.instance_types().get(t).map(|info| info.capacity));
    let [Some(first_room), Some(second_room)] = capacity else { return None };
    let rooms = [first_room, second_room];
    let mut copies: Vec<usize> = Vec::new();
    for map in held {
        for (&component, &count) in map {
            copies.extend(std::iter::repeat_n(component, usize::try_from(count).ok()?));
        }
    }
    let eligible = |component: usize, slot: usize| {
        problem.components().get(component).is_some_and(|c| c.placement_requirement(problem, types[slot]).is_some())
    };
    // A copy's size on the larger of its footprints over the two types, so that copies only one
    // type holds (or holds smaller) are weighed by what they need where they fit worst.
    let size = |component: usize| {
        let one = BTreeMap::from([(component, 1u32)]);
        let [x, y] = types.map(|t| problem.copies_footprint(t, &one));
        [x.accelerators.max(y.accelerators), x.memory_mib.max(y.memory_mib), x.milli_cpus.max(y.milli_cpus)]
    };
    // The order of (accelerators, memory, CPU) each pass sorts by, largest first.
    let keys: [[usize; 3]; 3] = [[0, 1, 2], [1, 0, 2], [2, 0, 1]];
    for key in keys {
        let mut ordered = copies.clone();
        // Copies one type cannot hold first (they have one place), then by size.
        ordered.sort_by_cached_key(|&c| {
            (
                std::cmp::Reverse(u8::from(!eligible(c, 0) || !eligible(c, 1))),
                std::cmp::Reverse(key.map(|i| size(c)[i])),
                c,
            )
        });
        for first in [0usize, 1] {
            let mut bins: [BTreeMap<usize, u32>; 2] = [BTreeMap::new(), BTreeMap::new()];
            let placed_all = ordered.iter().all(|&component| {
                [first, 1 - first].into_iter().any(|slot| {
                    if !eligible(component, slot) {
                        return false;
                    }
                    *bins[slot].entry(component).or_insert(0) += 1;
                    if problem.copies_footprint(types[slot], &bins[slot]).fits_in(&rooms[slot]) {
                        return true;
                    }
                    if let Some(count) = bins[slot].get_mut(&component) {
                        *count -= 1;
                    }
                    bins[slot].retain(|_, n| *n > 0);
                    false
                })
            });
            if placed_all {
                let [into_first, into_second] = bins;
                return Some((into_first, into_second));
            }
        }
    }
    None
}

/// `plan`'s final fleet (`None` when its actions do not apply cleanly) and the pool types, most
/// preferred first: where each polish that moves launches to preferred types starts.
fn fleet_and_preferred(problem: &Problem, plan: &Plan) -> Option<(FinalFleet, Vec<usize>)> {
    let (fleet, violations) = FinalFleet::apply(problem, &plan.actions);
    if !violations.is_empty() {
        return None;
    }
    let mut preferred: Vec<usize> = problem.pool_types().collect();
    preferred.sort_by_key(|&t| (priority_of(problem, t), t));
    Some((fleet, preferred))
}

/// The priority of type `t` (`u8::MAX` for a type outside the catalogue).
pub(crate) fn priority_of(problem: &Problem, t: usize) -> u8 {
    problem.instance_types().get(t).map_or(u8::MAX, |info| info.priority)
}

/// The plan `drafts` describe, finished like `plan` (solver, status, stop reason, bound);
/// `None` unless it verifies and is strictly better than `plan`.
fn rebuilt_if_better(problem: &Problem, plan: &Plan, drafts: &[Draft]) -> Option<Plan> {
    let actions = actions_of(problem, drafts);
    let better = finish(problem, plan.solver, plan.status, plan.stop_reason.clone(), actions, plan.bound.clone());
    (better.objective.better_than(&plan.objective) && verify(problem, &better).is_empty()).then_some(better)
}

/// Whether one instance of type `t` may hold all of `copies`: every one eligible on `t`, all of
/// them within its capacity.
fn one_instance_holds(problem: &Problem, t: usize, copies: &BTreeMap<usize, u32>) -> bool {
    let eligible = copies.keys().all(|&c| {
        problem.components().get(c).is_some_and(|component| component.placement_requirement(problem, t).is_some())
    });
    eligible
        && problem
            .instance_types()
            .get(t)
            .is_some_and(|info| problem.copies_footprint(t, copies).fits_in(&info.capacity))
}

/// One launch of (type, AZ) `from` counted as one of `to` in `launches`.
fn move_launch(launches: &mut BTreeMap<(usize, usize), u32>, from: (usize, usize), to: (usize, usize)) {
    if let Some(count) = launches.get_mut(&from) {
        *count = count.saturating_sub(1);
    }
    *launches.entry(to).or_insert(0) += 1;
}

/// Launches per (type, AZ) among `drafts`.
fn launches_per_group(drafts: &[Draft]) -> BTreeMap<(usize, usize), u32> {
    let mut launches: BTreeMap<(usize, usize), u32> = BTreeMap::new();
    for draft in drafts.iter().filter(|draft| draft.existing.is_none()) {
        *launches.entry((draft.type_index, draft.az_index)).or_insert(0) += 1;
    }
    launches
}

/// Each (type, AZ)'s reservations to its first launches, as the planners hand them out.
fn hand_out_reservations(problem: &Problem, drafts: &mut [Draft]) {
    let mut handed: BTreeMap<(usize, usize), u32> = BTreeMap::new();
    for draft in drafts.iter_mut().filter(|draft| draft.existing.is_none()) {
        let key = (draft.type_index, draft.az_index);
        let index = handed.entry(key).or_insert(0);
        draft.reserved = *index < problem.launch_limit(TypeIndex::new(key.0), AzIndex::new(key.1)).reserved;
        *index += 1;
    }
}

/// The chains' `moves` carried out on `drafts` (a copy placed or dropped has one end among the
/// unplaced copies, `None`); `None` when a move names no draft.
fn move_copies(drafts: &mut [Draft], moves: &[balance::Move]) -> Option<()> {
    for step in moves {
        for (position, delta) in [(step.from, -1i64), (step.to, 1)] {
            let Some(position) = position else { continue };
            let draft = drafts.get_mut(position)?;
            for map in [&mut draft.copies, &mut draft.new_copies] {
                let entry = map.entry(step.component).or_insert(0);
                *entry = u32::try_from((i64::from(*entry) + delta).max(0)).unwrap_or(u32::MAX);
                map.retain(|_, n| *n > 0);
            }
        }
    }
    Some(())
}

/// A final-fleet instance as a draft of the plan being rebuilt.
pub(crate) fn draft_of(instance: &FinalInstance) -> Draft {
    Draft {
        type_index: instance.type_index,
        az_index: instance.az_index,
        existing: instance.existing,
        reserved: instance.reserved,
        copies: instance.copies.clone(),
        new_copies: instance.new_copies.clone(),
    }
}

/// Instance checks the insertion chains of one run of [`place_plan_missing`] may do.
const INSERT_WORK: u64 = 400_000;

/// Instance checks one run of [`lower_plan_excess`] may do.
const BALANCE_WORK: u64 = 1_000_000;

/// `plan` with its balance excess lowered by moving new copies between AZs and launches with
/// their copies to other AZs ([`balance::lower_excess_and_relaunch`]: the instances per type
/// stay and the reservations they use never fall, so L1 and L3 do not change and L4 never
/// rises), the SPREAD rule
/// restored within each AZ; `None` unless the result verifies and is strictly better.
pub(crate) fn lower_plan_excess(problem: &Problem, plan: &Plan, limits: &EngineLimits) -> Option<Plan> {
    if plan.objective.balance_excess == 0 || problem.azs().len() < 2 {
        return None;
    }
    chained(problem, plan, false, limits)
}

/// `plan` with copies it leaves unplaced placed by insertion chains
/// ([`balance::place_missing`]: every instance stays, L1 rises, L3 and L4 do not change), then
/// its balance excess lowered as by [`lower_plan_excess`]; `None` unless the result verifies and
/// is strictly better.
pub(crate) fn place_plan_missing(problem: &Problem, plan: &Plan, limits: &EngineLimits) -> Option<Plan> {
    chained(problem, plan, true, limits)
}

/// The chains of [`lower_plan_excess`] (and, with `insert`, of [`place_plan_missing`] first) on
/// `plan`'s final fleet, until `limits` say stop (the chains completed by then are kept).
fn chained(problem: &Problem, plan: &Plan, insert: bool, limits: &EngineLimits) -> Option<Plan> {
    let (fleet, violations) = FinalFleet::apply(problem, &plan.actions);
    if !violations.is_empty() {
        return None;
    }
    let mut drafts: Vec<Draft> = fleet.instances.iter().map(draft_of).collect();
    let mut holders = holders_of(problem, &fleet);
    let mut counts = fleet.copies_per_az(problem);
    let order = balance::balanced_by_name(problem);
    let mut missing = placeable_copies(problem, plan, &counts);
    let mut moves = Vec::new();
    if insert {
        if missing.iter().all(|&n| n == 0) {
            return None;
        }
        moves = balance::place_missing(
            problem,
            &mut holders,
            &mut counts,
            &missing,
            Budget::checks(INSERT_WORK).until(limits),
        );
        if moves.is_empty() {
            return None;
        }
        for step in moves.iter().filter(|step| step.from.is_none()) {
            if let Some(left) = missing.get_mut(step.component) {
                *left = left.saturating_sub(1);
            }
        }
    }
    let budget = Budget::checks(BALANCE_WORK).until(limits);
    let lowered = balance::lower_excess_and_relaunch(problem, &mut holders, &mut counts, &order, &missing, budget);
    moves.extend(lowered.moves);
    if moves.is_empty() && lowered.relaunches.is_empty() {
        return None;
    }
    move_copies(&mut drafts, &moves)?;
    if !lowered.relaunches.is_empty() {
        for relaunch in &lowered.relaunches {
            if let Some(draft) = drafts.get_mut(relaunch.holder) {
                draft.az_index = relaunch.to;
            }
        }
        hand_out_reservations(problem, &mut drafts);
    }
    let azs: Vec<usize> = (0..problem.azs().len()).collect();
    spread_balance(problem, &mut drafts, &azs);
    rebuilt_if_better(problem, plan, &drafts)
}

/// The final fleet's instances as the shared chains see them (`engines::balance`).
fn holders_of(problem: &Problem, fleet: &FinalFleet) -> Vec<Holder> {
    fleet
        .instances
        .iter()
        .map(|instance| Holder {
            type_index: instance.type_index,
            az: instance.az_index,
            open: !instance.existing.and_then(|i| problem.fleet().get(i)).is_some_and(|e| e.draining),
            launch: instance.existing.is_none(),
            used: instance.used(problem),
            new_copies: instance.new_copies.iter().map(|(&c, &n)| (c, n)).filter(|&(_, n)| n > 0).collect(),
        })
        .collect()
}

/// Launches [`empty_launches`] tries to empty per run.
const EMPTY_TRIES: usize = 256;

/// More preferred types [`empty_launches`] may open in place of one emptied launch.
const EMPTY_OPENINGS: usize = 2;

/// Instance checks of the chains that empty one launch.
const EMPTY_CHAIN_WORK: u64 = 20_000;

/// Instance checks of one run of [`empty_launches`].
const EMPTY_WORK: u64 = 1_000_000;

/// `plan` with launches emptied and taken out: each launch's copies go to other instances of its
/// AZ by insertion chains kept within that AZ ([`balance::place_missing_within`]), so every
/// component keeps its copies per AZ (L1 and L2 unchanged) and the plan has one instance fewer
/// of the launch's priority (L3 better); never below MinInstanceCount. Failing that, the copies
/// may also go to one new launch of a more preferred type in the AZ, where its launch limit has
/// room: as many instances, one of them better (L3 better). Least preferred launches first,
/// then those with fewest copies. Reservations are handed out again per (type, AZ) in
/// launch order. Stops when `limits` say so, keeping the launches emptied by then. `None`
/// unless the result verifies and is strictly better.
pub(crate) fn empty_launches(problem: &Problem, plan: &Plan, limits: &EngineLimits) -> Option<Plan> {
    let (fleet, violations) = FinalFleet::apply(problem, &plan.actions);
    if !violations.is_empty() {
        return None;
    }
    let types = problem.instance_types();
    let priority = |t: usize| types.get(t).map_or(u8::MAX, |info| info.priority);
    let mut drafts: Vec<Draft> = fleet.instances.iter().map(draft_of).collect();
    let mut holders = holders_of(problem, &fleet);
    let mut counts = fleet.copies_per_az(problem);
    let mut order: Vec<usize> = (0..drafts.len()).filter(|&i| drafts[i].existing.is_none()).collect();
    order.sort_by_key(|&i| {
        let copies: u32 = drafts[i].new_copies.values().sum();
        (std::cmp::Reverse(priority(drafts[i].type_index)), copies, i)
    });
    let min_size = usize::try_from(problem.scaling().min_instances).unwrap_or(usize::MAX);
    let mut size = drafts.len();
    let mut launches = launches_per_group(&drafts);
    let mut preferred: Vec<usize> = problem.pool_types().collect();
    preferred.sort_by_key(|&t| (priority(t), t));
    let mut closed: Vec<usize> = Vec::new();
    let mut moves: Vec<balance::Move> = Vec::new();
    let mut work = Budget::checks(EMPTY_WORK).until(limits);
    for e in order.into_iter().take(EMPTY_TRIES) {
        if work.checks == 0 || work.stopped() {
            break;
        }
        let Some(holder) = holders.get(e) else { continue };
        let (az, from) = (holder.az, holder.type_index);
        // Into the rest of the AZ (one instance fewer, while above MinInstanceCount), else into
        // the rest and one launch of a more preferred type there (as many instances, one of
        // them better), the most preferred with a launch left first.
        let mut openings: Vec<Option<usize>> = Vec::new();
        if size > min_size {
            openings.push(None);
        }
        openings.extend(
            preferred
                .iter()
                .copied()
                .take_while(|&t| priority(t) < priority(from))
                .filter(|&t| launch_room(problem, &launches, t, az))
                .take(EMPTY_OPENINGS)
                .map(Some),
        );
        let Some((found, opened)) =
            balance::empty_holder(problem, &mut holders, &mut counts, e, &openings, &mut work, EMPTY_CHAIN_WORK)
        else {
            continue;
        };
        match opened {
            Some(t) => {
                drafts.push(Draft {
                    type_index: t,
                    az_index: az,
                    existing: None,
                    reserved: false,
                    copies: BTreeMap::new(),
                    new_copies: BTreeMap::new(),
                });
                *launches.entry((t, az)).or_insert(0) += 1;
            }
            None => size -= 1,
        }
        if let Some(count) = launches.get_mut(&(from, az)) {
            *count = count.saturating_sub(1);
        }
        moves.extend(found);
        closed.push(e);
    }
    if closed.is_empty() {
        return None;
    }
    move_copies(&mut drafts, &moves)?;
    closed.sort_unstable();
    for &e in closed.iter().rev() {
        drafts.remove(e);
    }
    hand_out_reservations(problem, &mut drafts);
    let azs: Vec<usize> = (0..problem.azs().len()).collect();
    spread_balance(problem, &mut drafts, &azs);
    rebuilt_if_better(problem, plan, &drafts)
}

/// Unplaced copies per component that an exchange may place (`counts`: the plan's copies per
/// component and AZ): none for a component the plan scales in (it removes copies).
fn placeable_copies(problem: &Problem, plan: &Plan, counts: &[Vec<u64>]) -> Vec<u64> {
    let scaled_in: BTreeSet<&str> = plan
        .actions
        .iter()
        .filter_map(|action| match action {
            Action::RemoveCopy { component, .. } => Some(component.as_str()),
            _ => None,
        })
        .collect();
    problem
        .components()
        .iter()
        .zip(counts)
        .map(|(component, row)| {
            if scaled_in.contains(component.name.as_str()) {
                return 0;
            }
            u64::from(component.copy_count).saturating_sub(row.iter().sum())
        })
        .collect()
}

/// The instance polishes in order, each kept when it returns a better plan: launches of
/// fallback types whose copies a preferred type holds move up ([`retype_to_preferred`]), pairs
/// of launches repacked so one moves up ([`retype_pairs_to_preferred`]), fallback launches moved
/// up into another AZ ([`relocate_to_preferred`]), then launches emptied by chains
/// ([`empty_launches`]); until `limits` say stop. L1 and L2 never change; each step that keeps a
/// plan makes L3 (or, emptying, the instance count) strictly better. Each step is timed in
/// `stats` under its name. Both planners end an unproven plan with it.
pub(crate) fn better_instances(problem: &Problem, plan: Plan, limits: &EngineLimits, stats: &mut Stats) -> Plan {
    type Polish = fn(&Problem, &Plan, &EngineLimits) -> Option<Plan>;
    let polishes: [(&str, Polish); 4] = [
        ("retype to preferred", |problem, plan, _| retype_to_preferred(problem, plan)),
        ("retype pairs to preferred", retype_pairs_to_preferred),
        ("relocate to preferred", relocate_to_preferred),
        ("empty launches", empty_launches),
    ];
    let mut plan = plan;
    for (name, polish) in polishes {
        let phase = Instant::now();
        if let Some(better) = polish(problem, &plan, limits) {
            plan = better;
        }
        stats.phase(name, phase);
    }
    plan
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::plan::{SolverKind, Status, StopReason};

    #[test]
    fn fallback_launches_move_to_a_preferred_type_that_holds_their_copies() {
        // Two launches of the fallback type, each holding one 1-accelerator copy; the preferred
        // type may launch once more in the AZ: one launch moves up, the other stays.
        let scenario = crate::ScenarioBuilder::new(["us-east-1a"])
            .pool("ml.g6.12xlarge", 1)
            .pool("ml.g5.12xlarge", 2)
            .capacity("ml.g6.12xlarge", "us-east-1a", Some(1), 0)
            .component("small", 2, 1, 1.0, 1024)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let problem = Problem::new(&scenario).unwrap_or_else(|e| panic!("{e}"));
        let mut actions = Vec::new();
        for id in ["new-1", "new-2"] {
            actions.push(Action::LaunchInstance {
                instance_id: id.into(),
                instance_type: "ml.g5.12xlarge".into(),
                availability_zone: "us-east-1a".into(),
                reserved: false,
            });
        }
        for id in ["new-1", "new-2"] {
            actions.push(Action::PlaceCopy { component: "small".into(), instance_id: id.into(), model_name: None });
        }
        let plan = finish(&problem, SolverKind::Exact, Status::Feasible, StopReason::TimeLimit, actions, None);
        assert!(verify(&problem, &plan).is_empty());
        assert_eq!(plan.objective.instances_of_priority(2), 2);
        let better = retype_to_preferred(&problem, &plan).unwrap_or_else(|| panic!("a launch can move up"));
        assert!(verify(&problem, &better).is_empty());
        assert_eq!(better.objective.placed_copies, 2);
        assert_eq!(better.objective.balance_excess, plan.objective.balance_excess);
        assert_eq!(better.objective.instances_of_priority(1), 1);
        assert_eq!(better.objective.instances_of_priority(2), 1);
        // Nothing more to move: the preferred type's launch limit is reached.
        assert!(retype_to_preferred(&problem, &better).is_none());
    }

    /// A plan launching `launches` (id, type) in `us-east-1a` and placing `copies` (component,
    /// id) there, checked by `verify`.
    fn plan_of(problem: &Problem, launches: &[(&str, &str)], copies: &[(&str, &str)]) -> Plan {
        let in_first_az: Vec<(&str, &str, &str)> = launches.iter().map(|&(id, t)| (id, t, "us-east-1a")).collect();
        plan_in(problem, &in_first_az, copies)
    }

    #[test]
    fn a_launch_whose_copies_the_rest_of_its_az_holds_is_emptied_by_chains() {
        // Two g6 (preferred, 4 accelerators): one holds three smalls (1 accelerator each), the
        // other a wide (2) and a small; one accelerator free on each. The fallback g5 holds a
        // wide, which fits on neither: it goes to the first g6 and pushes a small to the second,
        // a chain of two, and the g5 launch goes.
        let scenario = crate::ScenarioBuilder::new(["us-east-1a"])
            .pool("ml.g6.12xlarge", 1)
            .pool("ml.g5.12xlarge", 2)
            .component("small", 4, 1, 1.0, 1024)
            .component("wide", 2, 2, 1.0, 1024)
            .strategy("small", crate::PlacementStrategy::Binpack)
            .strategy("wide", crate::PlacementStrategy::Binpack)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let problem = Problem::new(&scenario).unwrap_or_else(|e| panic!("{e}"));
        let plan = plan_of(
            &problem,
            &[("new-1", "ml.g6.12xlarge"), ("new-2", "ml.g6.12xlarge"), ("new-3", "ml.g5.12xlarge")],
            &[
                ("small", "new-1"),
                ("small", "new-1"),
                ("small", "new-1"),
                ("wide", "new-2"),
                ("small", "new-2"),
                ("wide", "new-3"),
            ],
        );
        assert_eq!(plan.objective.instances_of_priority(2), 1);
        let better =
            empty_launches(&problem, &plan, &EngineLimits::new()).unwrap_or_else(|| panic!("the g5 launch can go"));
        assert!(verify(&problem, &better).is_empty());
        assert_eq!(better.objective.placed_copies, 6);
        assert_eq!(better.objective.balance_excess, plan.objective.balance_excess);
        assert_eq!(better.objective.instances_of_priority(2), 0);
        assert_eq!(better.objective.instances_of_priority(1), 2);
        assert!(empty_launches(&problem, &better, &EngineLimits::new()).is_none(), "nothing left to empty");
    }

    #[test]
    fn an_emptied_launch_may_hand_its_copies_to_a_more_preferred_launch() {
        // MinInstanceCount 2 keeps both instances; the fallback g5's copies (three smalls) fit on
        // the g6 (one accelerator free) and a new g6 only together: one small moves there by a
        // chain, the other two to the new launch.
        let scenario = crate::ScenarioBuilder::new(["us-east-1a"])
            .pool("ml.g6.12xlarge", 1)
            .pool("ml.g5.12xlarge", 2)
            .instance_limits(2, Some(2))
            .component("small", 6, 1, 1.0, 1024)
            .strategy("small", crate::PlacementStrategy::Binpack)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let problem = Problem::new(&scenario).unwrap_or_else(|e| panic!("{e}"));
        let mut copies = vec![("small", "new-1"); 3];
        copies.extend([("small", "new-2"); 3]);
        let plan = plan_of(&problem, &[("new-1", "ml.g6.12xlarge"), ("new-2", "ml.g5.12xlarge")], &copies);
        let better = empty_launches(&problem, &plan, &EngineLimits::new())
            .unwrap_or_else(|| panic!("the g5 launch can move up"));
        assert!(verify(&problem, &better).is_empty());
        assert_eq!(better.objective.placed_copies, 6);
        assert_eq!(better.objective.instances_of_priority(1), 2);
        assert_eq!(better.objective.instances_of_priority(2), 0);
    }

    /// A plan with `launches` (id, type, AZ) and `copies` (component, id), checked by `verify`.
    pub(crate) fn plan_in(problem: &Problem, launches: &[(&str, &str, &str)], copies: &[(&str, &str)]) -> Plan {
        let mut actions = Vec::new();
        for &(id, instance_type, az) in launches {
            actions.push(Action::LaunchInstance {
                instance_id: id.into(),
                instance_type: instance_type.into(),
                availability_zone: az.into(),
                reserved: false,
            });
        }
        for &(component, id) in copies {
            actions.push(Action::PlaceCopy { component: component.into(), instance_id: id.into(), model_name: None });
        }
        let plan = finish(problem, SolverKind::Exact, Status::Feasible, StopReason::TimeLimit, actions, None);
        assert!(verify(problem, &plan).is_empty());
        plan
    }

    #[test]
    fn two_fallback_launches_repack_so_one_moves_up() {
        // Two fallback g5.12xlarge: one holds a half (2 accelerators) and a small (1), the other
        // a half. The preferred g5.xlarge (1 accelerator) holds no half, so neither launch moves
        // up alone; repacked, the halves share one g5.12xlarge and the small has a g5.xlarge.
        let scenario = crate::ScenarioBuilder::new(["us-east-1a"])
            .pool("ml.g5.xlarge", 1)
            .pool("ml.g5.12xlarge", 2)
            .component("small", 1, 1, 1.0, 1024)
            .component("half", 2, 2, 1.0, 1024)
            .strategy("half", crate::PlacementStrategy::Binpack)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let problem = Problem::new(&scenario).unwrap_or_else(|e| panic!("{e}"));
        let launches = [("new-1", "ml.g5.12xlarge", "us-east-1a"), ("new-2", "ml.g5.12xlarge", "us-east-1a")];
        let plan = plan_in(&problem, &launches, &[("half", "new-1"), ("small", "new-1"), ("half", "new-2")]);
        assert!(retype_to_preferred(&problem, &plan).is_none(), "no launch moves up alone");
        let better = retype_pairs_to_preferred(&problem, &plan, &EngineLimits::new())
            .unwrap_or_else(|| panic!("the pair repacks"));
        assert!(verify(&problem, &better).is_empty());
        assert_eq!(better.objective.placed_copies, 3);
        assert_eq!(better.objective.balance_excess, 0);
        assert_eq!((better.objective.instances_of_priority(1), better.objective.instances_of_priority(2)), (1, 1));
        assert!(retype_pairs_to_preferred(&problem, &better, &EngineLimits::new()).is_none(), "nothing left");
    }

    #[test]
    fn a_fallback_launch_moves_up_in_another_az_only_when_balance_allows() {
        // The preferred g6 may not launch in us-east-1a, but may in us-east-1b. A fallback g5 in
        // 1a holding a copy of a component without MaxImbalance moves there as a g6; one holding
        // a copy of a component held at MaxImbalance 0 (one copy in each AZ) stays.
        let build = |balanced: bool| {
            let mut builder = crate::ScenarioBuilder::new(["us-east-1a", "us-east-1b"])
                .pool("ml.g6.12xlarge", 1)
                .pool("ml.g5.12xlarge", 2)
                .capacity("ml.g6.12xlarge", "us-east-1a", Some(0), 0)
                .component("model", 2, 1, 1.0, 1024)
                .instance_limits(1, None);
            if balanced {
                builder = builder.max_imbalance("model", 0);
            }
            let scenario = builder.build().unwrap_or_else(|e| panic!("{e}"));
            Problem::new(&scenario).unwrap_or_else(|e| panic!("{e}"))
        };
        let launches = [("new-1", "ml.g5.12xlarge", "us-east-1a"), ("new-2", "ml.g6.12xlarge", "us-east-1b")];
        let copies = [("model", "new-1"), ("model", "new-2")];
        let free = build(false);
        let plan = plan_in(&free, &launches, &copies);
        assert!(retype_to_preferred(&free, &plan).is_none(), "no room for a g6 in 1a");
        let better = relocate_to_preferred(&free, &plan, &EngineLimits::new())
            .unwrap_or_else(|| panic!("the g5 moves to 1b as a g6"));
        assert!(verify(&free, &better).is_empty());
        assert_eq!(better.objective.placed_copies, 2);
        assert_eq!((better.objective.instances_of_priority(1), better.objective.instances_of_priority(2)), (2, 0));
        let balanced = build(true);
        let plan = plan_in(&balanced, &launches, &copies);
        assert_eq!(plan.objective.balance_excess, 0);
        assert!(relocate_to_preferred(&balanced, &plan, &EngineLimits::new()).is_none(), "balance would suffer");
    }
}
