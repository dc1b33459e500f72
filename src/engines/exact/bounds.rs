//! Packing lower bounds on the instance count, so a reported `Bound` always carries one.
//!
//! The solver's bound stops at the level a limit interrupted; the later levels were trivial (no
//! instance count at all when L1 or L2 was interrupted). These bounds are cheap (no solver) and
//! fill that in. They are lower bounds on `|F|`, the size of the final fleet, of any plan that
//! places a given number of copies:
//!
//! - every copy is an item whose size in resource r is the smallest share of an instance it can
//!   take: `min over the types it may run on of req_r / cap_r`. On every instance of any plan the
//!   real shares add up to at most 1, so these items pack into `|F|` unit bins;
//! - the trivial bound `⌈Σ size⌉` and the Martello–Toth L2 bound of that one-dimensional
//!   bin-packing instance, per resource, are lower bounds on `|F|`; so is MinInstanceCount.
//!
//! [`complete`] turns `|F| ≥ LB` into a lexicographic bound: the L3 key is (n₆, …, n₁) and the
//! most preferred priority p present comes last, so with the earlier coordinates `b_q` of the
//! bound, `n_p ≥ LB − Σ_{q>p} b_q` holds for every plan that meets those coordinates exactly (for
//! any other plan the bound is already strictly smaller). When every earlier coordinate is 0, the
//! plans that meet it use only priority-p instances, so the sizes may take the minimum over
//! priority-p types only (a stronger bound).
//!
//! [`cost_floor`] then lifts the cost (L4): a plan that meets every instance coordinate of the
//! bound exactly has that many instances per priority, and each beyond what reservations can
//! hold costs at least the cheapest price of its priority. (A plan with any other coordinate is
//! already strictly above the bound.)

use crate::fleet::paid_cost_micros;
use crate::index::{AzIndex, TypeIndex};
use crate::plan::{CostUnit, Objective};
use crate::problem::{Problem, Resources};

use super::master::least_excess_of;

/// An item size `numerator / denominator` (a share of one instance), `count` times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Item {
    numerator: u64,
    denominator: u64,
    count: u64,
}

impl Item {
    fn value(&self) -> f64 {
        self.numerator as f64 / self.denominator as f64
    }

    /// `self ≤ other` exactly.
    fn at_most(&self, other: &Item) -> bool {
        u128::from(self.numerator) * u128::from(other.denominator)
            <= u128::from(other.numerator) * u128::from(self.denominator)
    }

    /// More than half an instance, exactly.
    fn over_half(&self) -> bool {
        u128::from(self.numerator) * 2 > u128::from(self.denominator)
    }

    /// `self + alpha > 1` exactly: the item does not fit next to an item of size `alpha`.
    fn over_complement_of(&self, alpha: &Item) -> bool {
        u128::from(self.numerator) * u128::from(alpha.denominator)
            + u128::from(alpha.numerator) * u128::from(self.denominator)
            > u128::from(self.denominator) * u128::from(alpha.denominator)
    }
}

/// Rounds a sum of shares up to whole instances, erring low (never invalid): floating-point
/// sums of many shares may land a hair above an integer they equal exactly.
fn ceil_low(value: f64) -> u64 {
    let rounded = (value - 1e-7).ceil();
    if rounded > 0.0 {
        rounded as u64
    } else {
        0
    }
}

/// The trivial bound `⌈Σ size⌉`.
fn trivial_bound(items: &[Item]) -> u64 {
    ceil_low(items.iter().map(|item| item.value() * item.count as f64).sum())
}

/// Martello–Toth L2 for unit bins: the maximum over `α ∈ {0} ∪ {sizes ≤ ½}` of
/// `|J1| + |J2| + max(0, ⌈Σ_{J3} s − (|J2| − Σ_{J2} s)⌉)` with `J1 = {s > 1 − α}`,
/// `J2 = {½ < s ≤ 1 − α}`, `J3 = {α ≤ s ≤ ½}`. Items in J1 and J2 need a bin each (no two fit
/// together, and nothing of J3 fits next to J1); J3 fills what J2 leaves and then whole bins.
/// With α = 0 it is at least the trivial bound.
fn martello_toth_l2(items: &[Item]) -> u64 {
    // Equal sizes merged first: the bound is quadratic in distinct sizes, and thousands of
    // components often share a handful of sizes.
    let items = &merge_equal_sizes(items);
    let zero = Item { numerator: 0, denominator: 1, count: 0 };
    let mut alphas: Vec<Item> = items.iter().copied().filter(|item| !item.over_half()).collect();
    alphas.push(zero);
    let mut best = 0;
    for alpha in &alphas {
        let (mut j1, mut j2, mut j2_size, mut j3_size) = (0u64, 0u64, 0f64, 0f64);
        for item in items {
            if item.over_complement_of(alpha) {
                j1 = j1.saturating_add(item.count);
            } else if item.over_half() {
                j2 = j2.saturating_add(item.count);
                j2_size += item.value() * item.count as f64;
            } else if alpha.at_most(item) {
                j3_size += item.value() * item.count as f64;
            }
        }
        let spill = ceil_low(j3_size - (j2 as f64 - j2_size));
        best = best.max(j1.saturating_add(j2).saturating_add(spill));
    }
    best
}

/// The items with equal sizes (exactly, as fractions) merged into one with the summed count, in
/// increasing size.
fn merge_equal_sizes(items: &[Item]) -> Vec<Item> {
    let mut sorted = items.to_vec();
    sorted.sort_by(|a, b| {
        (u128::from(a.numerator) * u128::from(b.denominator))
            .cmp(&(u128::from(b.numerator) * u128::from(a.denominator)))
    });
    let mut merged: Vec<Item> = Vec::with_capacity(sorted.len());
    for item in sorted {
        match merged.last_mut() {
            Some(last) if last.at_most(&item) && item.at_most(last) => {
                last.count = last.count.saturating_add(item.count)
            }
            _ => merged.push(item),
        }
    }
    merged
}

fn resource(r: &Resources, index: usize) -> u64 {
    match index {
        0 => r.accelerators,
        1 => r.milli_cpus,
        _ => r.memory_mib,
    }
}

/// The smallest share of resource `r` one copy takes over `shares` (need, capacity) pairs.
fn smallest_share(shares: &[(Resources, Resources)], r: usize) -> Option<(u64, u64)> {
    shares
        .iter()
        .filter_map(|(need, capacity)| {
            let (want, have) = (resource(need, r), resource(capacity, r));
            match (want, have) {
                (0, _) => Some((0, 1)),
                (_, 0) => None,
                _ => Some((want, have)),
            }
        })
        .min_by(|a, b| (u128::from(a.0) * u128::from(b.1)).cmp(&(u128::from(b.0) * u128::from(a.1))))
}

/// The most copies each component can end with in any plan (an upper bound, per component):
/// its `CopyCount`, or, when no pool type takes a copy of it (no requirement there, or one copy
/// needs more than a whole instance), the existing copies it keeps. New copies go on pool types
/// only, so such a component never gains one. A plan placing the sum of these places the most
/// copies any plan can: L1 is then at its optimum without a solve.
pub(crate) fn most_final_copies(problem: &Problem) -> Vec<u64> {
    let types = problem.instance_types();
    let mut existing = vec![0u64; problem.components().len()];
    for instance in problem.fleet() {
        for &(c, count) in &instance.copies {
            if let Some(held) = existing.get_mut(c) {
                *held += u64::from(count);
            }
        }
    }
    problem
        .components()
        .iter()
        .zip(existing)
        .map(|(component, held)| {
            let placeable = problem.pool_types().any(|t| {
                let (Some(info), Some(requirement)) = (types.get(t), component.placement_requirement(problem, t))
                else {
                    return false;
                };
                info.capacity.copies_of(&requirement.resources) >= 1
            });
            let most = u64::from(component.copy_count);
            if placeable {
                most
            } else {
                held.min(most)
            }
        })
        .collect()
}

/// A lower bound on `|F|` for every plan that places `placed` copies (existing ones included),
/// with sizes taken over the types `allowed` admits.
pub(crate) fn fleet_size_bound(problem: &Problem, placed: u64, allowed: impl Fn(usize) -> bool) -> u64 {
    let types = problem.instance_types();
    let mut best = u64::from(problem.scaling().min_instances);
    for r in 0..3 {
        // Copies that stay in every plan (existing ones, minus the excess the plan removes),
        // and new copies that may be added, each with their smallest share.
        let mut forced: Vec<Item> = Vec::new();
        let mut optional: Vec<Item> = Vec::new();
        let mut forced_count = 0u64;
        for (c, component) in problem.components().iter().enumerate() {
            let mut existing = 0u64;
            let mut holders: Vec<(Resources, Resources)> = Vec::new();
            for instance in problem.fleet() {
                let Some(&(_, count)) = instance.copies.iter().find(|&&(held, _)| held == c) else { continue };
                existing += u64::from(count);
                if !allowed(instance.type_index) {
                    continue;
                }
                let Some(info) = types.get(instance.type_index) else { continue };
                // A copy without a requirement on its type takes nothing there.
                let need = component
                    .requirements
                    .get(instance.type_index)
                    .and_then(|r| r.as_ref())
                    .map_or(Resources::ZERO, |r| r.resources);
                holders.push((need, info.capacity));
            }
            let stay = existing.min(u64::from(component.copy_count));
            forced_count += stay;
            if stay > 0 {
                // Without an allowed holder the plans this bound is for cannot exist: any size is
                // valid, and 0 keeps the bound simple.
                let (numerator, denominator) = smallest_share(&holders, r).unwrap_or((0, 1));
                forced.push(Item { numerator, denominator, count: stay });
            }
            let new = u64::from(component.copy_count).saturating_sub(existing);
            if new > 0 {
                let eligible: Vec<(Resources, Resources)> = problem
                    .pool_types()
                    .filter(|&t| allowed(t))
                    .filter_map(|t| {
                        let info = types.get(t)?;
                        let need = component.placement_requirement(problem, t)?.resources;
                        (info.capacity.copies_of(&need) >= 1).then_some((need, info.capacity))
                    })
                    .collect();
                if let Some((numerator, denominator)) = smallest_share(&eligible, r) {
                    optional.push(Item { numerator, denominator, count: new });
                }
            }
        }
        // The plan places `placed − forced` new copies: the smallest ones bound it from below
        // (fewer or smaller items never need more bins).
        let mut wanted = placed.saturating_sub(forced_count);
        optional.sort_by(|a, b| {
            (u128::from(a.numerator) * u128::from(b.denominator))
                .cmp(&(u128::from(b.numerator) * u128::from(a.denominator)))
        });
        let mut items = forced;
        for item in optional {
            if wanted == 0 {
                break;
            }
            let take = item.count.min(wanted);
            wanted -= take;
            items.push(Item { count: take, ..item });
        }
        items.retain(|item| item.count > 0 && item.numerator > 0);
        best = best.max(trivial_bound(&items)).max(martello_toth_l2(&items));
    }
    best
}

/// The bound with an instance count: `bound` (the solver's, or `None` for only the trivial L1
/// bound `Σ CopyCount`) with the most preferred priority's count raised to the packing bound
/// where that is higher. Raising a coordinate resets the cost (L4) to 0, because the solver's
/// cost bound was proven for the lower count only.
pub(crate) fn complete(problem: &Problem, bound: Option<Objective>) -> Objective {
    let mut bound = bound.unwrap_or_else(|| Objective {
        placed_copies: problem.components().iter().map(|c| u64::from(c.copy_count)).sum(),
        ..Objective::default()
    });
    raise_to_balance_floor(problem, &mut bound);
    let types = problem.instance_types();
    let Some(preferred) = types.iter().filter(|info| info.in_pool).map(|info| info.priority).min() else {
        return bound;
    };
    // Fleet-only types are priority 6, never below a pool priority; checked anyway.
    if types.iter().any(|info| info.priority < preferred) {
        return bound;
    }
    let earlier: u64 =
        bound.instances_by_priority.iter().filter(|(&p, _)| p > preferred).map(|(_, &n)| u64::from(n)).sum();
    let general = fleet_size_bound(problem, bound.placed_copies, |_| true).saturating_sub(earlier);
    let count = if earlier == 0 {
        let only_preferred = |t: usize| types.get(t).is_some_and(|info| info.priority == preferred);
        general.max(fleet_size_bound(problem, bound.placed_copies, only_preferred))
    } else {
        general
    };
    let count = u32::try_from(count).unwrap_or(u32::MAX);
    if count > bound.instances_of_priority(preferred) {
        bound.instances_by_priority.insert(preferred, count);
        bound.cost_micros = 0;
    }
    if let Some((floor, unit)) = cost_floor(problem, &bound) {
        if floor > bound.cost_micros {
            bound.cost_micros = floor;
            bound.cost_unit = unit;
        }
    }
    bound
}

/// No plan places more copies than every component's most final copies ([`most_final_copies`]),
/// so L1 is capped there; and a plan that places `P` copies, `D` fewer than that sum, has a
/// balance excess of at least [`balance_floor`]`(D)`. `bound` says both: L2 is raised to that
/// floor at the bound's L1. The bound stays valid whether or not L1 is proven: a plan placing
/// fewer copies than the bound's L1 is beyond it at L1 already. Raising L2 drops what the bound
/// said after it (proven for the lower L2 only); the packing bound on instances holds for
/// every plan and is added after.
fn raise_to_balance_floor(problem: &Problem, bound: &mut Objective) {
    let most = most_final_copies(problem);
    let wanted: u64 = most.iter().sum();
    bound.placed_copies = bound.placed_copies.min(wanted);
    let floor = balance_floor(problem, &most, wanted - bound.placed_copies);
    if floor > bound.balance_excess {
        bound.balance_excess = floor;
        bound.instances_by_priority.clear();
        bound.cost_micros = 0;
    }
}

/// The least balance excess of any plan that leaves `short` of the components' `most` final
/// copies unplaced. Only a component with MaxImbalance 0 whose most copies the AZs do not divide
/// has an excess at every total near its most (1, [`least_excess_of`]); leaving out the
/// remainder of its most modulo the AZs takes it to 0. So the floor is those components' count
/// less the most of them whose remainders fit in `short`, smallest remainders first (each saves
/// one). Copies left out beyond that are taken to cost nothing, which only lowers the floor.
pub(crate) fn balance_floor(problem: &Problem, most: &[u64], short: u64) -> u64 {
    let zones = problem.azs().len() as u64;
    let mut remainders: Vec<u64> = problem
        .components()
        .iter()
        .zip(most)
        .filter(|&(component, &total)| least_excess_of(component, total, zones as usize).is_some_and(|e| e > 0))
        .map(|(_, &total)| total % zones)
        .collect();
    remainders.sort_unstable();
    let mut left = short;
    let mut saved = 0u64;
    for remainder in &remainders {
        if *remainder > left {
            break;
        }
        left -= remainder;
        saved += 1;
    }
    remainders.len() as u64 - saved
}

/// The least L4 cost of a fleet with exactly the bound's instance count per priority, and its
/// unit. `None` when some instance types have a price and others do not (the unit would depend
/// on the plan).
pub(crate) fn cost_floor(problem: &Problem, bound: &Objective) -> Option<(i128, CostUnit)> {
    let types = problem.instance_types();
    let priced = types.iter().filter(|info| info.hourly_price.is_some()).count();
    let unit = match priced {
        0 => CostUnit::Instances,
        all if all == types.len() => CostUnit::UsdPerHour,
        _ => return None,
    };
    let mut floor: i128 = 0;
    for (&priority, &count) in &bound.instances_by_priority {
        let of_priority = || (0..types.len()).filter(move |&t| types[t].priority == priority);
        // Instances of this priority that can run in a reservation: reserved fleet instances
        // and unused reservation slots.
        let reserved_fleet = problem
            .fleet()
            .iter()
            .filter(|instance| {
                instance.reserved && types.get(instance.type_index).is_some_and(|i| i.priority == priority)
            })
            .count() as u64;
        let reserved_slots: u64 = of_priority()
            .flat_map(|t| (0..problem.azs().len()).map(move |z| (t, z)))
            .map(|(t, z)| u64::from(problem.launch_limit(TypeIndex::new(t), AzIndex::new(z)).reserved))
            .sum();
        let paying = u64::from(count).saturating_sub(reserved_fleet.saturating_add(reserved_slots));
        if paying == 0 {
            continue;
        }
        let cheapest = of_priority().map(|t| paid_cost_micros(problem, t, unit)).min().flatten()?;
        floor = floor.saturating_add(i128::from(paying).saturating_mul(i128::from(cheapest)));
    }
    Some((floor, unit))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(sizes: &[(u64, u64, u64)]) -> Vec<Item> {
        sizes.iter().map(|&(numerator, denominator, count)| Item { numerator, denominator, count }).collect()
    }

    #[test]
    fn most_final_copies_leave_out_copies_no_pool_type_fits() {
        // `huge` needs 8 accelerators and the pool type has 4: it keeps its one existing copy
        // (on a fleet-only type) and gains none; `fits` can reach its copy count.
        let scenario = crate::ScenarioBuilder::new(["us-east-1a", "us-east-1b"])
            .pool("ml.g6.12xlarge", 1)
            .component("fits", 3, 1, 1.0, 1024)
            .component("huge", 4, 8, 1.0, 1024)
            .fleet_instance("i-1", "ml.p5.48xlarge", "us-east-1a", false)
            .fleet_copies("huge", "i-1", 1)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let problem = Problem::new(&scenario).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(most_final_copies(&problem), vec![3, 1]);
        // Greedy places exactly that much here: the most any plan can.
        let placed = crate::plan_greedy(&problem).objective.placed_copies;
        assert_eq!(placed, 4);
    }

    #[test]
    fn balance_floor_counts_uneven_components_less_those_the_shortfall_evens_out() {
        // Three AZs, MaxImbalance 0: `four` (4 = 2/1/1, remainder 1) and `five` (5, remainder 2)
        // can never be even at their most; `six` always can; `loose` has MaxImbalance 1.
        let scenario = crate::ScenarioBuilder::new(["a", "b", "c"])
            .pool("ml.g6.12xlarge", 1)
            .component("four", 4, 1, 1.0, 1024)
            .component("five", 5, 1, 1.0, 1024)
            .component("six", 6, 1, 1.0, 1024)
            .component("loose", 5, 1, 1.0, 1024)
            .max_imbalance("four", 0)
            .max_imbalance("five", 0)
            .max_imbalance("six", 0)
            .max_imbalance("loose", 1)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let problem = Problem::new(&scenario).unwrap_or_else(|e| panic!("{e}"));
        let most = most_final_copies(&problem);
        assert_eq!(balance_floor(&problem, &most, 0), 2);
        // One copy short evens out `four` (4 → 3), two more `five` as well.
        assert_eq!(balance_floor(&problem, &most, 1), 1);
        assert_eq!(balance_floor(&problem, &most, 2), 1);
        assert_eq!(balance_floor(&problem, &most, 3), 0);
        // The reported bound carries the floor at its L1.
        let bound = complete(&problem, None);
        assert_eq!((bound.placed_copies, bound.balance_excess), (20, 2));
    }

    #[test]
    fn trivial_bound_rounds_the_total_share_up() {
        assert_eq!(trivial_bound(&items(&[(1, 3, 3)])), 1);
        assert_eq!(trivial_bound(&items(&[(1, 3, 4)])), 2);
        assert_eq!(trivial_bound(&[]), 0);
    }

    #[test]
    fn martello_toth_l2_sees_items_that_cannot_share() {
        // Three items of 0.6: the trivial bound says 2, but no two fit together.
        assert_eq!(trivial_bound(&items(&[(3, 5, 3)])), 2);
        assert_eq!(martello_toth_l2(&items(&[(3, 5, 3)])), 3);
        // 0.6 ×2 and 0.4 ×2: each 0.4 fits exactly next to a 0.6, so 2 bins.
        assert_eq!(martello_toth_l2(&items(&[(3, 5, 2), (2, 5, 2)])), 2);
        // 0.6 ×2 and 0.45 ×2: no 0.45 fits next to a 0.6 (α = 0.45), so 2 + ⌈0.9⌉ = 3.
        assert_eq!(martello_toth_l2(&items(&[(3, 5, 2), (9, 20, 2)])), 3);
        // 0.7 ×2 and 0.4 ×2: a 0.4 does not fit next to a 0.7 (α = 0.4), so 2 + ⌈0.8⌉ = 3.
        assert_eq!(martello_toth_l2(&items(&[(7, 10, 2), (2, 5, 2)])), 3);
        // Exactly half twice fits in one bin: never counted as "more than half".
        assert_eq!(martello_toth_l2(&items(&[(1, 2, 2)])), 1);
    }

    /// Brute force: the fewest unit bins for `sizes` (numerators over a common denominator).
    fn fewest_bins(sizes: &[u64], denominator: u64) -> u64 {
        fn go(index: usize, sizes: &[u64], bins: &mut Vec<u64>, capacity: u64, best: &mut u64) {
            if bins.len() as u64 >= *best {
                return;
            }
            let Some(&size) = sizes.get(index) else {
                *best = bins.len() as u64;
                return;
            };
            for b in 0..bins.len() {
                if bins[b] + size <= capacity {
                    bins[b] += size;
                    go(index + 1, sizes, bins, capacity, best);
                    bins[b] -= size;
                }
            }
            bins.push(size);
            go(index + 1, sizes, bins, capacity, best);
            bins.pop();
        }
        let mut best = sizes.len() as u64;
        go(0, sizes, &mut Vec::new(), denominator, &mut best);
        best
    }

    #[test]
    fn martello_toth_l2_never_exceeds_the_optimum() {
        // Every multiset of up to 6 items with sizes k/10 (k = 1..=10).
        let mut checked = 0;
        let mut sizes = Vec::new();
        fn walk(start: u64, sizes: &mut Vec<u64>, checked: &mut u32) {
            if !sizes.is_empty() {
                let list = items(&sizes.iter().map(|&s| (s, 10, 1)).collect::<Vec<_>>());
                let optimum = fewest_bins(sizes, 10);
                let bound = martello_toth_l2(&list);
                assert!(bound <= optimum, "{sizes:?}: bound {bound} > optimum {optimum}");
                assert!(bound >= trivial_bound(&list));
                *checked += 1;
            }
            if sizes.len() == 6 {
                return;
            }
            for s in start..=10 {
                sizes.push(s);
                walk(s, sizes, checked);
                sizes.pop();
            }
        }
        walk(1, &mut sizes, &mut checked);
        assert_eq!(checked, 8007);
    }
}
