//! Realising a master solution: each (type, AZ) group's copies packed into its instances, the
//! SPREAD rule restored within each AZ, and the actions that lead from the current fleet there.
//! The large-neighbourhood phase puts its windows back into a plan the same way.

use std::collections::BTreeMap;
use std::time::Instant;

use super::master::{self, Group, MasterSolution};
use super::packing::{pack_group, Packing};
use super::patterns::first_fit_decreasing_with_rest;
use crate::engines::knapsack::Demand;
use crate::engines::polish::{actions_of, spread_balance, Draft};
use crate::index::{AzIndex, TypeIndex};
use crate::plan::Action;
use crate::problem::{PlacementStrategy, Problem, Resources};

/// Search nodes allowed when packing one group exactly.
const PACKING_BUDGET: u64 = 200_000;

/// Packs each group of a master solution and builds the actions; `Err` lists the groups that
/// did not pack into the instances the master problem gave them.
pub(super) fn realize(
    problem: &Problem,
    solution: &MasterSolution,
    deadline: Option<Instant>,
) -> Result<Vec<Action>, Unpacked> {
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
) -> Result<Realized, Unpacked> {
    let types = problem.instance_types();
    let mut loosened = Vec::new();
    let mut drafts = existing_drafts(problem, solution);
    let mut failed = Vec::new();
    // Copies of groups that do not pack, left over by first fit decreasing: (component, AZ).
    let mut left_over: Vec<(usize, usize)> = Vec::new();
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
                    // For the partial plan: as many copies as first fit decreasing packs.
                    let (bins, rest) = pack_partially(&items, launches, info.capacity);
                    left_over.extend(rest.into_iter().map(|c| (c, z.index())));
                    bins
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
            for &(c, n) in list {
                left_over.extend(std::iter::repeat_n((c, group.1.index()), n as usize));
            }
        }
    }
    if !failed.is_empty() {
        // Every group that does not pack into the master's count, spare or not.
        failed.extend(loosened);
        failed.sort_unstable();
        failed.dedup();
        place_left_over(problem, &mut drafts, left_over);
        restore_spread(problem, &mut drafts);
        return Err(Unpacked { groups: failed, partial: actions_of(problem, &drafts) });
    }
    restore_spread(problem, &mut drafts);
    Ok(Realized { actions: actions_of(problem, &drafts), loosened })
}

/// For [`place_left_over`]: a new, empty draft for a copy of `component` (index `c`) when the
/// instance bounds and launch limits allow one more launch, and the copy's need on its type.
fn open_for(
    problem: &Problem,
    drafts: &mut Vec<Draft>,
    used: &mut Vec<Resources>,
    component: &crate::problem::Component,
    meant: usize,
    per_az: &BTreeMap<(usize, usize), u32>,
    c: usize,
) -> Option<(usize, Resources)> {
    let within_max = problem.scaling().max_instances.is_none_or(|max| (drafts.len() as u64) < u64::from(max));
    if !within_max {
        return None;
    }
    let types = problem.instance_types();
    let launched = |t: usize, z: usize| {
        drafts.iter().filter(|draft| draft.existing.is_none() && draft.type_index == t && draft.az_index == z).count()
            as u64
    };
    let (t, z, need) = problem
        .pool_types()
        .flat_map(|t| (0..problem.azs().len()).map(move |z| (t, z)))
        .filter_map(|(t, z)| {
            let info = types.get(t)?;
            let need = master::eligible_need(problem, component, t, &info.capacity)?;
            let limit = problem.launch_limit(TypeIndex::new(t), AzIndex::new(z));
            limit.total().is_none_or(|total| launched(t, z) < u64::from(total)).then_some((t, z, need))
        })
        .min_by_key(|&(t, z, _)| {
            let priority = types.get(t).map_or(u8::MAX, |info| info.priority);
            (priority, z != meant, per_az.get(&(c, z)).copied().unwrap_or(0), t, z)
        })?;
    let reserved = launched(t, z) < u64::from(problem.launch_limit(TypeIndex::new(t), AzIndex::new(z)).reserved);
    drafts.push(Draft {
        type_index: t,
        az_index: z,
        existing: None,
        reserved,
        copies: BTreeMap::new(),
        new_copies: BTreeMap::new(),
    });
    used.push(Resources::ZERO);
    Some((drafts.len() - 1, need))
}

/// A master solution some of whose groups do not pack into their instance counts.
pub(super) struct Unpacked {
    /// The groups that do not pack (or pack only with spare instances).
    pub(super) groups: Vec<Group>,
    /// A plan all the same, with no more instances than the master's (unverified): each group
    /// that does not pack holds what first fit decreasing puts into its instances, and the
    /// copies left over go to free room on the plan's other instances, smallest first (L1
    /// counts copies). It places fewer copies than the master solution, often only one or two:
    /// the search returns it when it is better than anything else it has (`search.rs`).
    pub(super) partial: Vec<Action>,
}

/// The SPREAD rule within each AZ, as cheaply as the plan's size allows.
fn restore_spread(problem: &Problem, drafts: &mut [Draft]) {
    if drafts.len() <= SMALL_SPREAD_REPAIR {
        spread_repair(problem, drafts);
    } else {
        let azs: Vec<usize> = (0..problem.azs().len()).collect();
        spread_balance(problem, drafts, &azs);
    }
}

/// Packs the copies of `items` (component, count, requirement) into at most `bins` instances
/// of `capacity` by first fit decreasing ([`first_fit_decreasing_with_rest`]): the instances'
/// copies per component, and the components of the copies that fit nowhere (one entry a copy).
fn pack_partially(
    items: &[(usize, u32, Resources)],
    bins: u32,
    capacity: Resources,
) -> (Vec<Vec<(usize, u32)>>, Vec<usize>) {
    let demands: Vec<Demand> =
        items.iter().map(|&(_, count, need)| Demand { copies: u64::from(count), need }).collect();
    let (patterns, rest) = first_fit_decreasing_with_rest(&demands, capacity, u64::from(bins));
    let packed = patterns
        .iter()
        .map(|pattern| {
            let mut bin: Vec<(usize, u32)> = items
                .iter()
                .zip(pattern)
                .filter(|&(_, &count)| count > 0)
                .map(|(&(c, _, _), &count)| (c, u32::try_from(count).unwrap_or(u32::MAX)))
                .collect();
            bin.sort_unstable();
            bin
        })
        .collect();
    let left = items.iter().zip(&rest).flat_map(|(&(c, _, _), &count)| std::iter::repeat_n(c, count as usize));
    (packed, left.collect())
}

/// Puts the copies left over (component, the AZ the master meant) on free room of the drafts
/// that may take new copies (launches, and kept existing instances of pool types that are not
/// draining): smallest copy first, the meant AZ first, then the AZ holding fewest copies of the
/// component. A copy without room gets a new instance when MaxInstanceCount and the launch
/// limits leave one (most preferred type, then the meant AZ, then fewest copies of the
/// component); otherwise it stays unplaced.
fn place_left_over(problem: &Problem, drafts: &mut Vec<Draft>, mut left_over: Vec<(usize, usize)>) {
    let types = problem.instance_types();
    let azs = problem.azs().len();
    // Each component's smallest share of an instance it may run on, computed once for the sort.
    let shares: Vec<f64> = problem
        .components()
        .iter()
        .map(|component| {
            problem
                .pool_types()
                .filter_map(|t| {
                    let capacity = types.get(t)?.capacity;
                    Some(master::eligible_need(problem, component, t, &capacity)?.dominant_share(&capacity))
                })
                .min_by(f64::total_cmp)
                .unwrap_or(f64::INFINITY)
        })
        .collect();
    let share = |c: usize| shares.get(c).copied().unwrap_or(f64::INFINITY);
    left_over.sort_by(|a, b| share(a.0).total_cmp(&share(b.0)).then(a.cmp(b)));
    let mut per_az: BTreeMap<(usize, usize), u32> = BTreeMap::new();
    for draft in drafts.iter() {
        for (&c, &n) in &draft.copies {
            *per_az.entry((c, draft.az_index)).or_insert(0) += n;
        }
    }
    let mut used: Vec<Resources> = drafts.iter().map(|draft| draft.used(problem)).collect();
    for (c, meant) in left_over {
        let Some(component) = problem.components().get(c) else { continue };
        let target = drafts
            .iter()
            .enumerate()
            .filter(|(_, draft)| {
                types.get(draft.type_index).is_some_and(|info| info.in_pool) && !draft.draining(problem)
            })
            .filter_map(|(d, draft)| {
                let capacity = types.get(draft.type_index)?.capacity;
                let need = master::eligible_need(problem, component, draft.type_index, &capacity)?;
                used.get(d)?.plus(&need).fits_in(&capacity).then_some((d, need))
            })
            .min_by_key(|&(d, _)| {
                let az = drafts.get(d).map_or(azs, |draft| draft.az_index);
                (az != meant, per_az.get(&(c, az)).copied().unwrap_or(0), d)
            });
        let Some((d, need)) = target.or_else(|| open_for(problem, drafts, &mut used, component, meant, &per_az, c))
        else {
            continue;
        };
        let (Some(draft), Some(room)) = (drafts.get_mut(d), used.get_mut(d)) else { continue };
        *room = room.plus(&need);
        *draft.copies.entry(c).or_insert(0) += 1;
        *draft.new_copies.entry(c).or_insert(0) += 1;
        *per_az.entry((c, draft.az_index)).or_insert(0) += 1;
    }
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
                    let draining = draft.draining(problem);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::finish;
    use crate::plan::{SolverKind, Status, StopReason};
    use crate::verify::verify;

    fn accelerators(count: u64) -> Resources {
        Resources { accelerators: count, milli_cpus: 0, memory_mib: 0 }
    }

    #[test]
    fn partial_packing_packs_the_largest_first_and_returns_what_fits_nowhere() {
        let items = [(1, 3, accelerators(1)), (0, 1, accelerators(3))];
        let (bins, rest) = pack_partially(&items, 1, accelerators(4));
        assert_eq!(bins, vec![vec![(0, 1), (1, 1)]]);
        assert_eq!(rest, vec![1, 1]);
        let (bins, rest) = pack_partially(&items, 2, accelerators(4));
        assert_eq!(bins, vec![vec![(0, 1), (1, 1)], vec![(1, 2)]]);
        assert!(rest.is_empty());
    }

    /// Two AZs, one type with 4 accelerators; `big` needs 3, `small` 1.
    fn two_az_problem() -> Problem {
        let component = |name: &str, accelerators: u32, copies: u32| {
            format!(
                r#"{{"InferenceComponentName": "{name}", "RuntimeConfig": {{"CopyCount": {copies}}},
                "Specification": {{"ComputeResourceRequirements": {{"MinMemoryRequiredInMb": 1024,
                "NumberOfAcceleratorDevicesRequired": {accelerators}}}}}}}"#
            )
        };
        let json = format!(
            r#"{{"AvailabilityZones": ["az-a", "az-b"],
            "Endpoint": {{"InstanceType": "ml.g6.12xlarge"}},
            "InferenceComponents": [{}, {}]}}"#,
            component("big", 3, 1),
            component("small", 1, 3)
        );
        match Problem::from_json(&json) {
            Ok(problem) => problem,
            Err(error) => panic!("test problem: {error}"),
        }
    }

    #[test]
    fn a_group_that_does_not_pack_gives_a_partial_plan_that_verifies() {
        let problem = two_az_problem();
        let (big, small) = (problem.component_index("big"), problem.component_index("small"));
        let (Some(big), Some(small)) = (big, small) else { panic!("components") };
        let (in_a, in_b) = ((TypeIndex::new(0), AzIndex::new(0)), (TypeIndex::new(0), AzIndex::new(1)));
        // Not a master solution the relaxation allows (5 accelerators in one instance of 4):
        // the group in az-a cannot pack.
        let solution = MasterSolution {
            launches: [(in_a, 1), (in_b, 1)].into_iter().collect(),
            group_copies: [(in_a, vec![(big, 1), (small, 2)]), (in_b, vec![(small, 1)])].into_iter().collect(),
            ..MasterSolution::default()
        };
        let Err(Unpacked { groups, partial }) = realize(&problem, &solution, None) else {
            panic!("the az-a group must not pack")
        };
        assert_eq!(groups, vec![in_a]);
        let plan = finish(&problem, SolverKind::Exact, Status::Feasible, StopReason::Completed, partial, None);
        assert_eq!(verify(&problem, &plan), vec![]);
        // The small copy left over in az-a goes to the room of az-b's instance: every copy placed.
        assert_eq!(plan.objective.placed_copies, 4);
        assert_eq!(plan.objective.instances_by_priority.values().sum::<u32>(), 2);
    }
}
