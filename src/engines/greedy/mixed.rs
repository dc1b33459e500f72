//! Mixed packing: instances filled with copies of several components at once.
//!
//! The main pass places one component at a time, so an instance holds what one component
//! leaves of it. When MaxInstanceCount or capacity binds, L1 is won by copies per instance, and
//! that often needs copies of different shapes on one instance: memory-heavy copies that leave
//! accelerators free beside accelerator-heavy ones that leave memory free. This pass fills the
//! free room of the fleet, then opens one instance at a time, each time the (type, AZ) whose
//! packing holds the most copies (or, by priority first, the most preferred type), and packs it
//! from every missing copy at once. The main pass then places what is left as usual.
//!
//! One instance's packing: copies smallest first (by their largest share of the instance's
//! capacity), each component as many as fit; then the same with one copy of one of the
//! largest components put in first. The packing with the most copies wins, then the one using most of
//! the instance (a big copy placed now is one that would need room later), then the first
//! tried. First-fit decreasing ([`MixedOpening::FewestInstances`]) packs largest first, without
//! seeds. With `capped`, a balanced component's copies per AZ stop at its even share (plus its
//! MaxImbalance), so the balance the main pass would keep is not spent for density.
//!
//! Choosing one instance ahead can spend the MaxInstanceCount budget on the type that holds the
//! most copies now and fewer over the whole budget, so rescue passes also lead with each pool
//! type in turn ([`MixedOpening::TypeLed`]), and size copies by the resource the budget runs
//! short of ([`MixedPacking::scarcity`], which also tries one copy of each component in turn).

use std::cmp::Reverse;

use super::{fitting_needs, instance_cost, name_ranks, Greedy};
use crate::index::{AzIndex, TypeIndex};
use crate::problem::Resources;

/// Packing steps (one component tried on one instance) the seeded packings may take per pass;
/// beyond, only the smallest-first packing is tried, so large inputs stay linear in the openings.
const SEEDED_WORK: u64 = 2_000_000;

/// Packing steps the whole pass may take; beyond, the main pass places the rest (a rescue pass on
/// a large input must stay cheap).
const MIXED_WORK: u64 = 4_000_000;

/// The largest components tried as the first copy of a packing (a small one first changes little).
const SEEDS: usize = 8;

/// Copies per component of one instance's packing.
type Packing = Vec<(usize, u64)>;

/// How the pass chooses the instance type and AZ to open next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MixedOpening {
    /// Most copies per instance first, then priority (L1 first: MaxInstanceCount binds).
    CopiesFirst,
    /// Most preferred type first, then copies per instance (L3 first).
    PriorityFirst,
    /// Most preferred type first, copies packed largest first (first-fit decreasing): fewer
    /// instances when every copy fits (L3 and L4).
    FewestInstances,
    /// The given type (a `problem.types` index) wherever it can be opened and holds a copy,
    /// then as [`MixedOpening::CopiesFirst`]. One instance ahead, the type holding the most
    /// copies now can be the one that holds fewer over the whole MaxInstanceCount budget (it
    /// takes the small copies first); a pass led by each type tries every type's share of the
    /// budget as a whole.
    TypeLed(usize),
}

/// One mixed pass's choices (a [`super::Mode`] field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct MixedPacking {
    /// How the next instance is chosen.
    pub(super) opening: MixedOpening,
    /// A balanced component's copies per AZ stop at its even share (plus its MaxImbalance).
    pub(super) capped: bool,
    /// A copy's size is the sum of its shares of the instance's accelerators, CPU and memory
    /// (instead of the largest one): copies heavy in one resource only rank smaller.
    pub(super) summed: bool,
    /// A copy's size is the sum of its shares weighted by how scarce each resource is over the
    /// openings left: what the missing copies that fit the type need of it against what the
    /// rest of the MaxInstanceCount budget of that type offers (instead of the largest share).
    /// Copies heavy in the resource the budget runs out of go last, so each instance takes its
    /// part of that resource and fills the rest with what is plentiful.
    pub(super) scarcity: bool,
}

/// What the packing of one instance works with: needs per `[component][type]` (`None` where a
/// copy may not run or never fits), missing copies, and the order copies are tried in.
struct Demand {
    needs: Vec<Vec<Option<Resources>>>,
    missing: Vec<u64>,
    component_rank: Vec<usize>,
    /// Packing steps taken so far (see [`SEEDED_WORK`]).
    work: u64,
}

impl Greedy<'_> {
    /// Packs missing copies of all components into the fleet's free room and into openings
    /// chosen by `opening`, until no copy fits anything that can be opened.
    pub(super) fn pack_mixed(&mut self, packing: MixedPacking) {
        let opening = packing.opening;
        let problem = self.problem;
        let needs = fitting_needs(problem);
        let missing = (0..problem.components.len()).map(|c| self.missing_new_copies(c)).collect();
        let component_rank = name_ranks(problem.components.iter().map(|c| c.name.as_str()));
        let mut demand = Demand { needs, missing, component_rank, work: 0 };
        if demand.missing.iter().all(|&m| m == 0) {
            return;
        }
        // Free room of instances that stay anyway: it costs nothing. AZs by name, not input order
        // (the room filled first takes the copies).
        let mut zones: Vec<usize> = (0..problem.azs.len()).collect();
        zones.sort_by_key(|&z| self.az_rank.get(z).copied().unwrap_or(z));
        for z in zones {
            let mut indices = self.fleet_by_az.get(z).cloned().unwrap_or_default();
            indices.sort_by_key(|&index| self.instances[index].rank);
            for index in indices {
                let instance = &self.instances[index];
                let Some(room) =
                    problem.types.get(instance.type_index).and_then(|info| info.capacity.minus(&instance.used))
                else {
                    continue;
                };
                let packing = self.best_packing(&mut demand, instance.type_index, z, room, packing);
                self.commit_packing(&mut demand, index, &packing);
            }
        }
        while demand.missing.iter().any(|&m| m > 0) && self.budget() > 0 && demand.work < MIXED_WORK {
            type Key = (bool, Reverse<u64>, u8, Reverse<u64>, i64, usize, usize);
            let mut best: Option<(Key, usize, usize, Packing)> = None;
            for t in problem.pool_types() {
                let Some(info) = problem.types.get(t) else {
                    continue;
                };
                for z in 0..problem.azs.len() {
                    let (type_index, az) = (TypeIndex::new(t), AzIndex::new(z));
                    let idle = self.idle.get(t).and_then(|row| row.get(z)).map_or(&[][..], Vec::as_slice);
                    if self.openings_left(t, z) == 0 {
                        continue;
                    }
                    let packing = self.best_packing(&mut demand, t, z, info.capacity, packing);
                    let copies: u64 = packing.iter().map(|&(_, n)| n).sum();
                    if copies == 0 {
                        continue;
                    }
                    let free =
                        idle.iter().any(|&i| self.instances[i].reserved) || self.reserved_left(type_index, az) > 0;
                    let cost = if free { 0 } else { instance_cost(problem, t, false) };
                    let (type_rank, az_rank) = (self.type_rank[t], self.az_rank[z]);
                    let key = match opening {
                        MixedOpening::CopiesFirst => {
                            (false, Reverse(copies), info.priority, Reverse(0), cost, type_rank, az_rank)
                        }
                        MixedOpening::TypeLed(led) => {
                            (t != led, Reverse(copies), info.priority, Reverse(0), cost, type_rank, az_rank)
                        }
                        MixedOpening::PriorityFirst | MixedOpening::FewestInstances => {
                            (false, Reverse(0), info.priority, Reverse(copies), cost, type_rank, az_rank)
                        }
                    };
                    if best.as_ref().is_none_or(|(current, ..)| key < *current) {
                        best = Some((key, t, z, packing));
                    }
                }
            }
            let Some((_, t, z, packing)) = best else {
                break;
            };
            let Some(index) = self.open(TypeIndex::new(t), AzIndex::new(z)) else {
                break;
            };
            self.commit_packing(&mut demand, index, &packing);
        }
    }

    fn commit_packing(&mut self, demand: &mut Demand, index: usize, packing: &Packing) {
        let type_index = self.instances[index].type_index;
        for &(c, count) in packing {
            let Some(Some(need)) = demand.needs.get(c).and_then(|row| row.get(type_index)).copied() else {
                continue;
            };
            self.place(c, index, super::place::as_count(count), &need);
            if let Some(cell) = demand.missing.get_mut(c) {
                *cell = cell.saturating_sub(count);
            }
        }
    }

    /// Copies of component `c` that AZ `z` may still take under `capped` (see the module docs).
    fn az_allowance(&self, demand: &Demand, c: usize, z: usize, capped: bool) -> u64 {
        let missing = demand.missing.get(c).copied().unwrap_or(0);
        let Some(limit) = self.problem.components.get(c).and_then(|component| component.max_imbalance) else {
            return missing;
        };
        if !capped {
            return missing;
        }
        let total = self.problem.components.get(c).map_or(0, |component| u64::from(component.copy_count));
        let azs = self.problem.azs.len().max(1) as u64;
        let share = total.div_ceil(azs).max(total / azs + u64::from(limit));
        let have = self.az_copies.get(c).and_then(|row| row.get(z)).copied().unwrap_or(0);
        missing.min(share.saturating_sub(have))
    }

    /// The best packing of room `room` on an instance of type `t` in AZ `z` (module docs).
    fn best_packing(
        &self,
        demand: &mut Demand,
        t: usize,
        z: usize,
        room: Resources,
        MixedPacking { opening, capped, summed, scarcity }: MixedPacking,
    ) -> Packing {
        let Some(capacity) = self.problem.types.get(t).map(|info| info.capacity) else {
            return Vec::new();
        };
        let weights = if scarcity { self.scarcity_weights(demand, t) } else { [1.0; 3] };
        // (size, rank, component, need, copies allowed), smallest first.
        let mut items: Vec<(f64, usize, usize, Resources, u64)> = demand
            .needs
            .iter()
            .enumerate()
            .filter_map(|(c, row)| {
                let need = (*row.get(t)?)?;
                let allowed = self.az_allowance(demand, c, z, capped);
                (allowed > 0 && need.fits_in(&room)).then(|| {
                    (
                        if summed || scarcity {
                            weighted_share(&need, &capacity, weights)
                        } else {
                            need.dominant_share(&capacity)
                        },
                        demand.component_rank.get(c).copied().unwrap_or(c),
                        c,
                        need,
                        allowed,
                    )
                })
            })
            .collect();
        items.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let decreasing = opening == MixedOpening::FewestInstances;
        if decreasing {
            items.reverse();
        }
        // `interleaved`: a copy of each component in turn, round after round, instead of each
        // component as many as fit: copies of similar size but different shapes (memory-heavy
        // beside accelerator-heavy) share the instance instead of one shape filling one resource.
        let fill = |seed: Option<usize>, interleaved: bool| -> (u64, f64, Packing) {
            let mut left = room;
            let mut packing: Packing = Vec::new();
            let (mut copies, mut size) = (0u64, 0.0);
            let mut take = |item: &(f64, usize, usize, Resources, u64), most: u64, left: &mut Resources| -> u64 {
                let already = packing.iter().find(|(c, _)| *c == item.2).map_or(0, |&(_, n)| n);
                let count = left.copies_of(&item.3).min(most).min(item.4.saturating_sub(already));
                if count == 0 {
                    return 0;
                }
                *left = left.minus(&item.3.times(count)).unwrap_or(Resources::ZERO);
                match packing.iter_mut().find(|(c, _)| *c == item.2) {
                    Some(entry) => entry.1 += count,
                    None => packing.push((item.2, count)),
                }
                copies += count;
                size += item.0 * count as f64;
                count
            };
            if let Some(item) = seed.and_then(|s| items.get(s)) {
                take(item, 1, &mut left);
            }
            let most = if interleaved { 1 } else { u64::MAX };
            while items.iter().map(|item| take(item, most, &mut left)).sum::<u64>() > 0 && interleaved {}
            (copies, size, packing)
        };
        let better = |candidate: &(u64, f64, Packing), best: &(u64, f64, Packing)| {
            candidate.0 > best.0 || (candidate.0 == best.0 && candidate.1 > best.1 + 1e-9)
        };
        let mut best = fill(None, false);
        if scarcity {
            let candidate = fill(None, true);
            demand.work = demand.work.saturating_add((items.len() as u64).saturating_mul(candidate.0 + 1));
            if better(&candidate, &best) {
                best = candidate;
            }
        }
        let first_seed = items.len().saturating_sub(SEEDS).max(1);
        let seeded_work = ((items.len() - first_seed.min(items.len())) as u64).saturating_mul(items.len() as u64);
        demand.work = demand.work.saturating_add(items.len() as u64);
        if !decreasing && demand.work.saturating_add(seeded_work) <= SEEDED_WORK {
            demand.work += seeded_work;
            for seed in first_seed..items.len() {
                let candidate = fill(Some(seed), false);
                if better(&candidate, &best) {
                    best = candidate;
                }
            }
        }
        best.2
    }
}

/// The sum of `need`'s shares of `capacity` over accelerators, CPU and memory, each times its
/// weight.
fn weighted_share(need: &Resources, capacity: &Resources, [accelerators, cpu, memory]: [f64; 3]) -> f64 {
    let share = |want: u64, have: u64| if want == 0 { 0.0 } else { want as f64 / have.max(1) as f64 };
    accelerators * share(need.accelerators, capacity.accelerators)
        + cpu * share(need.milli_cpus, capacity.milli_cpus)
        + memory * share(need.memory_mib, capacity.memory_mib)
}

impl Greedy<'_> {
    /// Per resource (accelerators, CPU, memory): the missing copies that fit type `t` need of it,
    /// in instances of `t`, over the instances the budget still allows (at least one). Above 1
    /// the budget cannot hold every copy in that resource.
    fn scarcity_weights(&self, demand: &Demand, t: usize) -> [f64; 3] {
        let Some(capacity) = self.problem.types.get(t).map(|info| info.capacity) else {
            return [1.0; 3];
        };
        let mut wanted = [0.0; 3];
        for (row, &missing) in demand.needs.iter().zip(&demand.missing) {
            let Some(Some(need)) = row.get(t) else {
                continue;
            };
            let copies = missing as f64;
            wanted[0] += copies * need.accelerators as f64 / capacity.accelerators.max(1) as f64;
            wanted[1] += copies * need.milli_cpus as f64 / capacity.milli_cpus.max(1) as f64;
            wanted[2] += copies * need.memory_mib as f64 / capacity.memory_mib.max(1) as f64;
        }
        let instances = self.budget().clamp(1, 1 << 40) as f64;
        wanted.map(|w| w / instances)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ScenarioBuilder;
    use crate::problem::Problem;

    /// Memory-heavy copies leave accelerators free, accelerator-heavy ones leave memory free:
    /// one instance packed from both holds three of one and one of the other, where one
    /// component at a time fills it with either shape alone.
    #[test]
    fn one_opened_instance_holds_copies_of_both_shapes() {
        let scenario = ScenarioBuilder::new(["a"])
            .pool("ml.inf2.48xlarge", 1)
            .instance_limits(0, Some(1))
            .component("memory-heavy", 6, 1, 1.0, 245_760)
            .component("accelerator-heavy", 2, 8, 1.0, 1024)
            .build()
            .unwrap();
        let problem = Problem::new(&scenario).unwrap();
        let mut planner = Greedy::new(&problem);
        planner.scale_in();
        planner.index_fleet();
        planner.pack_mixed(MixedPacking {
            opening: MixedOpening::CopiesFirst,
            capped: false,
            summed: false,
            scarcity: false,
        });
        let opened = &planner.instances[planner.launch_order[0]];
        let copies = |name: &str| {
            let c = problem.components.iter().position(|c| c.name == name).unwrap();
            opened.copies_of(c)
        };
        assert_eq!((copies("memory-heavy"), copies("accelerator-heavy")), (3, 1));
        assert_eq!(planner.launch_order.len(), 1, "MaxInstanceCount 1");
    }

    /// One p5en holds eight 256 GiB copies, one inf2 three: by copies the pass opens p5en, led
    /// by inf2 it opens inf2 while inf2 holds a copy.
    #[test]
    fn a_type_led_pass_opens_its_type_first() {
        let scenario = ScenarioBuilder::new(["a"])
            .pool("ml.inf2.48xlarge", 1)
            .pool("ml.p5en.48xlarge", 2)
            .instance_limits(0, Some(1))
            .component("memory-heavy", 8, 1, 1.0, 262_144)
            .build()
            .unwrap();
        let problem = Problem::new(&scenario).unwrap();
        let inf2 = problem.types.iter().position(|t| t.name == "ml.inf2.48xlarge").unwrap();
        let opened_type = |opening: MixedOpening, scarcity: bool| {
            let mut planner = Greedy::new(&problem);
            planner.scale_in();
            planner.index_fleet();
            planner.pack_mixed(MixedPacking { opening, capped: false, summed: false, scarcity });
            let opened = &planner.instances[planner.launch_order[0]];
            (problem.types[opened.type_index].name.clone(), opened.total_copies())
        };
        assert_eq!(opened_type(MixedOpening::CopiesFirst, false), ("ml.p5en.48xlarge".to_string(), 8));
        for scarcity in [false, true] {
            assert_eq!(opened_type(MixedOpening::TypeLed(inf2), scarcity), ("ml.inf2.48xlarge".to_string(), 3));
        }
    }
}
