//! Pair repacking: a missing copy placed by repacking two instances' new copies together.
//!
//! The repair pass moves one or two copies off one instance; when the room a copy needs is
//! spread over two instances, or only a different mix of shapes leaves it (memory-heavy copies
//! beside accelerator-heavy ones), no single move makes it. This pass takes two instances of the
//! fleet, the new copies on both (existing copies stay), adds one missing copy, and packs them
//! all again into the two, first fit decreasing under a few size orders (largest share, summed
//! shares, each resource alone) and both bin orders. A launch of the plan may also change type
//! (any pool type the AZ may still launch): MaxInstanceCount counts instances, and another type
//! can hold the mix the budget needs. When a packing holds every copy, it is applied and the
//! room left on the two takes more missing copies, smallest first.
//!
//! Each repack places one copy more (L1 up), and L1 comes before every other level; copies may
//! change AZ between the two instances, so balance (L2) and preference (L3) may get worse. The
//! pass runs only when the best plan still leaves copies unplaced, on the finished best plan and
//! the next best distinct ones; a repacked runner-up replaces the best plan only when strictly
//! better. It opens nothing (a retyped launch replaces one), so it can run after the releases.
//! Work is bounded ([`REPACK_WORK`] item placements per plan).

use super::repair::NewCopies;
use super::{fitting_needs, name_ranks, Greedy};
use crate::index::{AzIndex, TypeIndex};
use crate::problem::Resources;

/// Item placements (one copy tried on one instance) one repack pass may do.
pub(super) const REPACK_WORK: u64 = 150_000;

/// One bin of a repack: the instance type it has (or gets) and the room existing copies leave.
#[derive(Debug, Clone, Copy)]
struct Bin {
    type_index: usize,
    room: Resources,
}

/// Sizes items are sorted by, largest first (each a key of one copy on one bin's type).
#[derive(Debug, Clone, Copy)]
enum SizeOrder {
    Dominant,
    Summed,
    Accelerators,
    Cpu,
    Memory,
}

const SIZE_ORDERS: [SizeOrder; 5] =
    [SizeOrder::Dominant, SizeOrder::Summed, SizeOrder::Accelerators, SizeOrder::Cpu, SizeOrder::Memory];

fn size_of(need: &Resources, capacity: &Resources, order: SizeOrder) -> f64 {
    let share = |want: u64, have: u64| want as f64 / have.max(1) as f64;
    let shares = [
        share(need.accelerators, capacity.accelerators),
        share(need.milli_cpus, capacity.milli_cpus),
        share(need.memory_mib, capacity.memory_mib),
    ];
    match order {
        SizeOrder::Dominant => shares.iter().copied().fold(0.0, f64::max),
        SizeOrder::Summed => shares.iter().sum(),
        SizeOrder::Accelerators => shares[0],
        SizeOrder::Cpu => shares[1],
        SizeOrder::Memory => shares[2],
    }
}

/// What a repack works with, computed once per pass.
struct RepackInput {
    /// Need of one copy per `[component][type]` (`None`: never on that type).
    needs: Vec<Vec<Option<Resources>>>,
    capacities: Vec<Resources>,
    component_rank: Vec<usize>,
    /// Item placements left (see [`REPACK_WORK`]).
    work: u64,
}

impl RepackInput {
    fn need(&self, c: usize, t: usize) -> Option<Resources> {
        self.needs.get(c).and_then(|row| row.get(t)).copied().flatten()
    }

    fn capacity(&self, t: usize) -> Resources {
        self.capacities.get(t).copied().unwrap_or(Resources::ZERO)
    }

    /// Positions of `items` by size under `order`, largest first or smallest first (then by
    /// component name): a copy is sized on the first bin's type where it may run there, else on
    /// the second's.
    fn by_size(&self, items: &[usize], bins: &[Bin; 2], order: SizeOrder, largest_first: bool) -> Vec<usize> {
        let mut sized: Vec<(f64, usize, usize)> = items
            .iter()
            .enumerate()
            .map(|(position, &c)| {
                let size = bins
                    .iter()
                    .find_map(|bin| self.need(c, bin.type_index).map(|need| (need, bin.type_index)))
                    .map_or(0.0, |(need, t)| size_of(&need, &self.capacity(t), order));
                let size = if largest_first { -size } else { size };
                (size, self.component_rank.get(c).copied().unwrap_or(c), position)
            })
            .collect();
        sized.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        sized.into_iter().map(|(_, _, position)| position).collect()
    }

    /// First fit decreasing of `items` (one component per copy) into `bins`, under each size
    /// order and both bin orders: the bin of each item, or `None` when no order fits them all.
    fn pack(&mut self, items: &[usize], bins: &[Bin; 2]) -> Option<Vec<usize>> {
        for order in SIZE_ORDERS {
            let sorted = self.by_size(items, bins, order, true);
            for first in [0, 1] {
                self.work = self.work.saturating_sub(items.len() as u64);
                let mut rooms = [bins[0].room, bins[1].room];
                let mut assignment = vec![0; items.len()];
                let fits_all = sorted.iter().all(|&position| {
                    let c = items[position];
                    [first, 1 - first].into_iter().any(|b| {
                        let Some(need) = self.need(c, bins[b].type_index) else { return false };
                        let Some(left) = rooms[b].minus(&need) else { return false };
                        rooms[b] = left;
                        assignment[position] = b;
                        true
                    })
                });
                if fits_all {
                    return Some(assignment);
                }
            }
        }
        None
    }
}

impl RepackInput {
    /// The copy's need on either bin's type, the smaller per resource (a lower bound of what it
    /// takes wherever it goes), `None` when it fits neither type.
    fn least_need(&self, c: usize, bins: &[Bin; 2]) -> Option<Resources> {
        match (self.need(c, bins[0].type_index), self.need(c, bins[1].type_index)) {
            (Some(a), Some(b)) => Some(Resources {
                accelerators: a.accelerators.min(b.accelerators),
                milli_cpus: a.milli_cpus.min(b.milli_cpus),
                memory_mib: a.memory_mib.min(b.memory_mib),
            }),
            (Some(only), None) | (None, Some(only)) => Some(only),
            (None, None) => None,
        }
    }

    /// Whether some `count` copies of `items` could fit `bins` by volume: per resource, the
    /// `count` smallest needs against both rooms together.
    fn may_hold(&mut self, items: &[usize], count: usize, bins: &[Bin; 2]) -> bool {
        self.work = self.work.saturating_sub(items.len() as u64);
        let least: Vec<Resources> = items.iter().filter_map(|&c| self.least_need(c, bins)).collect();
        if least.len() < count {
            return false;
        }
        let room = bins[0].room.plus(&bins[1].room);
        let smallest = |value: fn(&Resources) -> u64| {
            let mut values: Vec<u64> = least.iter().map(value).collect();
            values.sort_unstable();
            values.iter().take(count).sum::<u64>()
        };
        smallest(|r| r.accelerators) <= room.accelerators
            && smallest(|r| r.milli_cpus) <= room.milli_cpus
            && smallest(|r| r.memory_mib) <= room.memory_mib
    }

    /// The most copies of `items` that fit `bins`, smallest first under each size order and both
    /// bin orders, when more than `beat`: the copies taken and the bin of each.
    fn pack_most(&mut self, items: &[usize], beat: usize, bins: &[Bin; 2]) -> Option<(Vec<usize>, Vec<usize>)> {
        if !self.may_hold(items, beat + 1, bins) {
            return None;
        }
        let mut best: Option<(Vec<usize>, Vec<usize>)> = None;
        for order in [SizeOrder::Dominant, SizeOrder::Summed] {
            let sorted = self.by_size(items, bins, order, false);
            for first in [0, 1] {
                self.work = self.work.saturating_sub(items.len() as u64);
                let mut rooms = [bins[0].room, bins[1].room];
                let (mut taken, mut assignment) = (Vec::new(), Vec::new());
                for &position in &sorted {
                    let c = items[position];
                    for b in [first, 1 - first] {
                        let Some(need) = self.need(c, bins[b].type_index) else { continue };
                        let Some(left) = rooms[b].minus(&need) else { continue };
                        rooms[b] = left;
                        taken.push(c);
                        assignment.push(b);
                        break;
                    }
                }
                if taken.len() > best.as_ref().map_or(beat, |(most, _)| most.len()) {
                    best = Some((taken, assignment));
                }
            }
        }
        best
    }
}

/// A repack found: the two instances, the type each gets, the copies and the bin of each.
struct Repack {
    instances: [usize; 2],
    types: [usize; 2],
    items: Vec<usize>,
    assignment: Vec<usize>,
}

impl Greedy<'_> {
    /// Places missing copies by repacking pairs of instances (module docs), within `work` item
    /// placements. Returns the copies placed.
    pub(super) fn repack_pairs(&mut self, work: u64) -> u64 {
        let problem = self.problem;
        let needs = fitting_needs(problem);
        let mut input = RepackInput {
            needs,
            capacities: problem.types.iter().map(|info| info.capacity).collect(),
            component_rank: name_ranks(problem.components.iter().map(|c| c.name.as_str())),
            work,
        };
        let placed_before = self.placed_new_copies();
        let mut retyped = false;
        // Sweeps over every pair (same AZ first, then by AZ and rank), kept types first, then one
        // launch of the pair retyped; another sweep only when this one changed something.
        let mut changed = true;
        while changed && input.work > 0 {
            changed = false;
            let mut candidates: Vec<usize> =
                self.fleet_by_az.iter().flatten().copied().filter(|&i| !self.instances[i].draining).collect();
            candidates.sort_by_key(|&i| (self.az_rank[self.instances[i].az], self.instances[i].rank));
            let mut pairs: Vec<(bool, usize, usize)> = Vec::new();
            for (a, &x) in candidates.iter().enumerate() {
                for &y in &candidates[a + 1..] {
                    pairs.push((self.instances[x].az != self.instances[y].az, x, y));
                }
            }
            pairs.sort_by_key(|&(other_az, ..)| other_az);
            let mut wanted = self.wanted(&input);
            let mut new_copies = self.new_copies_by_instance();
            'sweep: for retype in [false, true] {
                for &(_, x, y) in &pairs {
                    if input.work == 0 || wanted.is_empty() {
                        break 'sweep;
                    }
                    // A launch retyped earlier in the sweep is closed (its replacement comes next sweep).
                    if [x, y].iter().any(|&i| self.instances[i].released || !self.instances[i].in_fleet) {
                        continue;
                    }
                    let Some(repack) = self.find_repack(&mut input, [x, y], retype, &wanted, &new_copies) else {
                        continue;
                    };
                    retyped |= self.apply_repack(&repack, &new_copies);
                    changed = true;
                    wanted = self.wanted(&input);
                    new_copies = self.new_copies_by_instance();
                }
            }
        }
        if retyped {
            self.renumber_launches();
        }
        self.placed_new_copies().saturating_sub(placed_before)
    }

    /// Components with missing copies that fit some type, by name.
    fn wanted(&self, input: &RepackInput) -> Vec<usize> {
        let mut wanted: Vec<usize> = (0..self.problem.components.len())
            .filter(|&c| self.missing_new_copies(c) > 0)
            .filter(|&c| input.needs.get(c).is_some_and(|row| row.iter().any(Option::is_some)))
            .collect();
        wanted.sort_by_key(|&c| input.component_rank.get(c).copied().unwrap_or(c));
        wanted
    }

    pub(super) fn placed_new_copies(&self) -> u64 {
        self.placements.iter().map(|&(_, _, n)| u64::from(n)).sum()
    }

    /// A repack of the instances `pair` that places more copies than they hold now: every copy
    /// they hold and one more missing copy of a component in `wanted`, else the most copies of
    /// theirs and the missing ones. With `retype`, one of them (a launch) changes to another
    /// type its AZ may still launch.
    fn find_repack(
        &self,
        input: &mut RepackInput,
        pair: [usize; 2],
        retype: bool,
        wanted: &[usize],
        new_copies: &[NewCopies],
    ) -> Option<Repack> {
        let problem = self.problem;
        let mut items: Vec<usize> = Vec::new();
        let mut bins = [Bin { type_index: 0, room: Resources::ZERO }; 2];
        for (b, &index) in pair.iter().enumerate() {
            let instance = &self.instances[index];
            let mut new_load = Resources::ZERO;
            for &(d, n) in new_copies.get(index).map_or(&[][..], |list| list.as_slice()) {
                let need = input.need(d, instance.type_index).unwrap_or(Resources::ZERO);
                new_load = new_load.plus(&need.times(u64::from(n)));
                items.extend(std::iter::repeat_n(d, n as usize));
            }
            let capacity = input.capacity(instance.type_index);
            let room = instance.used.minus(&new_load).and_then(|existing| capacity.minus(&existing))?;
            bins[b] = Bin { type_index: instance.type_index, room };
        }
        let mut options: Vec<[Bin; 2]> = Vec::new();
        if retype {
            for (b, &index) in pair.iter().enumerate() {
                let instance = &self.instances[index];
                if instance.existing.is_some() {
                    continue;
                }
                for t in problem.pool_types() {
                    let (type_index, az) = (TypeIndex::new(t), AzIndex::new(instance.az));
                    if t == instance.type_index || self.launches_left(type_index, az) == 0 {
                        continue;
                    }
                    let mut option = bins;
                    option[b] = Bin { type_index: t, room: input.capacity(t) };
                    options.push(option);
                }
            }
        } else {
            options.push(bins);
        }
        for option in options {
            let types = option.map(|bin| bin.type_index);
            // By volume (each copy's smaller need over the two types against both rooms), which
            // missing copy may join every copy the two hold.
            input.work = input.work.saturating_sub(items.len() as u64 + wanted.len() as u64);
            let room = option[0].room.plus(&option[1].room);
            let held =
                items.iter().try_fold(Resources::ZERO, |total, &c| Some(total.plus(&input.least_need(c, &option)?)));
            for &m in wanted {
                let joins = held
                    .and_then(|held| Some(held.plus(&input.least_need(m, &option)?)))
                    .is_some_and(|total| total.fits_in(&room));
                if !joins {
                    continue;
                }
                items.push(m);
                let assignment = input.pack(&items, &option);
                items.pop();
                if let Some(assignment) = assignment {
                    items.push(m);
                    return Some(Repack { instances: pair, types, items, assignment });
                }
            }
            // Every copy kept does not fit with one more: the most copies the two hold, of
            // theirs and the missing ones (small copies for a big one: L1 counts copies).
            let mut pool = items.clone();
            for &m in wanted {
                let most = option
                    .iter()
                    .filter_map(|bin| input.need(m, bin.type_index).map(|need| bin.room.copies_of(&need)))
                    .sum::<u64>();
                let count = self.missing_new_copies(m).min(most);
                pool.extend(std::iter::repeat_n(m, usize::try_from(count).unwrap_or(usize::MAX)));
            }
            if let Some((items, assignment)) = input.pack_most(&pool, items.len(), &option) {
                return Some(Repack { instances: pair, types, items, assignment });
            }
        }
        None
    }

    /// Applies `repack`: takes the two instances' new copies back, changes a launch's type where
    /// the repack says so, places the copies as packed, then fills the room left with missing
    /// copies. Returns whether a launch changed type.
    fn apply_repack(&mut self, repack: &Repack, new_copies: &[NewCopies]) -> bool {
        let mut retyped = false;
        let mut targets = repack.instances;
        for (b, &index) in repack.instances.iter().enumerate() {
            for &(d, n) in new_copies.get(index).map_or(&[][..], |list| list.as_slice()) {
                for _ in 0..n {
                    self.unplace_one(d, index);
                }
            }
            let instance = &self.instances[index];
            if instance.type_index != repack.types[b] {
                let az = instance.az;
                self.close(index);
                targets[b] = self.launch(TypeIndex::new(repack.types[b]), AzIndex::new(az));
                retyped = true;
            }
        }
        for (&c, &b) in repack.items.iter().zip(&repack.assignment) {
            let index = targets[b];
            if let Some(need) = self.need_on(c, index) {
                self.place(c, index, 1, &need);
            }
        }
        for index in targets {
            let Some(capacity) = self.problem.types.get(self.instances[index].type_index).map(|t| t.capacity) else {
                continue;
            };
            let Some(room) = capacity.minus(&self.instances[index].used) else { continue };
            let missing: Vec<u64> = (0..self.problem.components.len()).map(|c| self.missing_new_copies(c)).collect();
            for (e, count, need) in self.fill_freed_room(index, room, &missing) {
                self.place(e, index, super::place::as_count(count), &need);
            }
            self.readmit_accelerated(index);
        }
        retyped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::FinalFleet;
    use crate::model::ScenarioBuilder;
    use crate::problem::Problem;

    /// Two g6.12xlarge (4 accelerators, 192 GiB), MaxInstanceCount 2, memory in 40 GiB units:
    /// X holds small (1 accelerator, 1 unit) and tall (1, 2), Y small and wide (3, 1). A copy of
    /// (2, 2) fits neither, and no move of one or two copies from one to the other makes room;
    /// packed together, small + small + (2, 2) and tall + wide hold all five.
    fn stuck_pair() -> Problem {
        let unit = 40_960;
        let scenario = ScenarioBuilder::new(["a"])
            .pool("ml.g6.12xlarge", 1)
            .instance_limits(0, Some(2))
            .component("small", 2, 1, 1.0, unit)
            .component("tall", 1, 1, 1.0, 2 * unit)
            .component("wide", 1, 3, 1.0, unit)
            .component("square", 1, 2, 1.0, 2 * unit)
            .build()
            .unwrap();
        Problem::new(&scenario).unwrap()
    }

    fn stuck_planner(problem: &Problem) -> Greedy<'_> {
        let c = |name: &str| problem.components.iter().position(|c| c.name == name).unwrap();
        let mut planner = Greedy::new(problem);
        planner.scale_in();
        planner.index_fleet();
        let t = TypeIndex::new(problem.types.iter().position(|t| t.name == "ml.g6.12xlarge").unwrap());
        let (x, y) = (planner.open(t, AzIndex::new(0)).unwrap(), planner.open(t, AzIndex::new(0)).unwrap());
        for (name, index) in [("small", x), ("tall", x), ("small", y), ("wide", y)] {
            let need = planner.need_on(c(name), index).unwrap();
            planner.place(c(name), index, 1, &need);
        }
        planner
    }

    #[test]
    fn repacking_a_pair_places_the_copy_no_relocation_does() {
        let problem = stuck_pair();
        let order = super::super::place::component_order(&problem);
        let mut planner = stuck_planner(&problem);
        assert_eq!(planner.missing_copies(), 1);
        assert_eq!(planner.repair(&order), 0, "the repair pass must not find this one");
        assert_eq!(planner.repack_pairs(REPACK_WORK), 1);
        assert_eq!(planner.missing_copies(), 0);
        let (_, violations) = FinalFleet::apply(&problem, &planner.into_actions());
        assert!(violations.is_empty(), "{violations:?}");
    }

    #[test]
    fn repacking_stops_at_its_work_budget() {
        let problem = stuck_pair();
        let mut planner = stuck_planner(&problem);
        assert_eq!(planner.repack_pairs(0), 0);
        assert_eq!(planner.missing_copies(), 1);
    }

    /// The whole planner places every copy here (the repack pass among its passes), and its
    /// plan verifies.
    #[test]
    fn the_greedy_planner_places_every_copy_of_the_stuck_pair() {
        let problem = stuck_pair();
        let plan = crate::GreedyPlanner::new().plan(&problem);
        assert!(crate::verify(&problem, &plan).is_empty());
        assert_eq!(plan.objective.placed_copies, 5);
    }

    /// The best plan of the ordinary and rescue passes, before any repack (as the planner
    /// reaches it).
    fn best_before_repack(problem: &Problem) -> crate::plan::ObjectiveKey {
        use super::super::{pass_rank, place, GreedyPlanner};
        let limits = crate::engines::limits::Limits::default().armed(None);
        let (mut stats, mut stop) = (crate::engines::limits::Stats::default(), crate::plan::StopReason::Completed);
        let (mut best, mut runners_up) = (None, Vec::new());
        let passes = place::candidate_passes(problem);
        GreedyPlanner::run_passes(&limits, problem, &passes, &mut best, &mut runners_up, &mut stats, &mut stop);
        if best.as_ref().unwrap().0.missing_copies() > 0 {
            let rescue = place::rescue_passes(problem);
            GreedyPlanner::run_passes(&limits, problem, &rescue, &mut best, &mut runners_up, &mut stats, &mut stop);
        }
        let (planner, _) = best.unwrap();
        pass_rank(problem, &planner).1
    }

    /// Small endpoints with a short MaxInstanceCount and copies of mixed shapes (deterministic):
    /// the planner's plan verifies and is never worse than the passes' best without the
    /// repack; on some of them it is strictly better.
    #[test]
    fn repacked_plans_verify_and_never_lose_to_the_passes_before() {
        let mut state = 0x2545_f491_u64;
        let mut next = |below: u64| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % below
        };
        let mut better = 0;
        for case in 0..300 {
            let azs: &[&str] = if next(2) == 0 { &["a"] } else { &["a", "b"] };
            let mut builder = ScenarioBuilder::new(azs.iter().copied())
                .pool("ml.g6.12xlarge", 1)
                .instance_limits(0, Some(2 + next(4) as u32));
            if next(2) == 0 {
                builder = builder.pool("ml.g6e.12xlarge", 2);
            }
            for c in 0..4 + next(5) {
                let name = format!("c{c}");
                let memory = 16_384 * (1 + next(10) as u32);
                builder = builder.component(&name, 1 + next(6) as u32, 1 + next(3) as u32, 1.0, memory);
                if azs.len() > 1 && next(3) == 0 {
                    builder = builder.max_imbalance(&name, 1);
                }
            }
            let problem = Problem::new(&builder.build().unwrap()).unwrap();
            let plan = crate::GreedyPlanner::new().plan(&problem);
            assert!(crate::verify(&problem, &plan).is_empty(), "case {case}");
            let before = best_before_repack(&problem);
            assert!(plan.objective.key() <= before, "case {case}: {:?} after {before:?}", plan.objective.key());
            better += usize::from(plan.objective.key() < before);
        }
        assert!(better > 0, "no case where the repack places more");
    }
}
