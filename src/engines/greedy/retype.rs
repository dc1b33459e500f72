//! Retyping for room: launches changed to a type that holds their copies with room to spare.
//!
//! When MaxInstanceCount binds, L1 is won by what each instance holds, and the passes choose
//! types one component at a time: a copy that fills a small instance (four accelerators of
//! four) may just as well run on a bigger type of the same AZ and leave room there (two
//! accelerators of six) for the small copies that now block a big missing copy somewhere else.
//! No single retype places a copy, so the passes and the pair repack never take it; several
//! together, followed by the relocations of the repair pass and the pair repack, can.
//!
//! The pass retypes every launch of the plan whose new copies all fit one instance of another
//! pool type its AZ may still launch, when the room left there is at least the room left now in
//! every resource and more in one (the type whose room holds most missing copies, then most
//! room, then priority and name). Then it places missing copies by filling free room, relocating
//! (repair) and repacking pairs. The caller keeps the result only when it is strictly better:
//! retyping alone places nothing and may give up preferred types (L3) and cost.
//! Work is bounded ([`RETYPE_WORK`] type checks; the later steps have their own budgets).

use super::Greedy;
use crate::index::{AzIndex, TypeIndex};
use crate::problem::Resources;

/// Type checks (one launch tried as one other type) one retype pass may do.
const RETYPE_WORK: u64 = 20_000;

impl Greedy<'_> {
    /// Retypes launches for room (module docs). Returns the launches retyped.
    pub(super) fn retype_for_room(&mut self) -> u64 {
        let problem = self.problem;
        let mut missing: Vec<u64> = (0..problem.components.len()).map(|c| self.missing_new_copies(c)).collect();
        let new_copies = self.new_copies_by_instance();
        let mut work = RETYPE_WORK;
        let mut retyped = 0;
        for index in self.launch_order.clone() {
            let instance = &self.instances[index];
            if instance.draining || !instance.in_fleet {
                continue;
            }
            let (current_type, az) = (instance.type_index, instance.az);
            let Some(capacity) = problem.types.get(current_type).map(|t| t.capacity) else { continue };
            let Some(room_now) = capacity.minus(&instance.used) else { continue };
            let copies = new_copies.get(index).cloned().unwrap_or_default();
            let holds_now = self.copies_fitting(current_type, room_now, &missing);
            // (missing copies the room holds, other AZ, room summed over shares, priority, type
            // name, AZ name) and the (type, AZ).
            type Key = (std::cmp::Reverse<u64>, bool, std::cmp::Reverse<u64>, u8, usize, usize);
            let mut best: Option<(Key, usize, usize)> = None;
            for t in problem.pool_types() {
                let Some(info) = problem.types.get(t) else { continue };
                let load = copies.iter().try_fold(Resources::ZERO, |load, &(c, n)| {
                    let need = problem.components.get(c)?.placement_requirement(problem, t)?.resources;
                    Some(load.plus(&need.times(u64::from(n))))
                });
                let Some(room) = load.and_then(|load| info.capacity.minus(&load)) else { continue };
                let more_room = room.accelerators >= room_now.accelerators
                    && room.milli_cpus >= room_now.milli_cpus
                    && room.memory_mib >= room_now.memory_mib
                    && room != room_now;
                let holds = self.copies_fitting(t, room, &missing);
                // Directly more missing copies, or as many and more room (for relocations).
                if holds < holds_now || (holds == holds_now && !more_room) {
                    continue;
                }
                for z in 0..problem.azs.len() {
                    if work == 0 {
                        break;
                    }
                    work -= 1;
                    if (t, z) == (current_type, az) || self.launches_left(TypeIndex::new(t), AzIndex::new(z)) == 0 {
                        continue;
                    }
                    let summed = room.accelerators * 1_000_000 / info.capacity.accelerators.max(1)
                        + room.milli_cpus * 1_000_000 / info.capacity.milli_cpus.max(1)
                        + room.memory_mib * 1_000_000 / info.capacity.memory_mib.max(1);
                    let key = (
                        std::cmp::Reverse(holds),
                        z != az,
                        std::cmp::Reverse(summed),
                        info.priority,
                        self.type_rank[t],
                        self.az_rank[z],
                    );
                    if best.as_ref().is_none_or(|(current, ..)| key < *current) {
                        best = Some((key, t, z));
                    }
                }
            }
            let Some((_, t, z)) = best else { continue };
            for &(c, n) in &copies {
                for _ in 0..n {
                    self.unplace_one(c, index);
                }
            }
            self.close(index);
            let target = self.launch(TypeIndex::new(t), AzIndex::new(z));
            for &(c, n) in &copies {
                if let Some(need) = self.need_on(c, target) {
                    self.place(c, target, n, &need);
                }
            }
            let room = problem
                .types
                .get(t)
                .and_then(|info| info.capacity.minus(&self.instances[target].used))
                .unwrap_or(Resources::ZERO);
            for (e, count, need) in self.fill_freed_room(target, room, &missing) {
                self.place(e, target, super::place::as_count(count), &need);
                if let Some(left) = missing.get_mut(e) {
                    *left = left.saturating_sub(count);
                }
            }
            self.readmit_accelerated(target);
            retyped += 1;
        }
        if retyped > 0 {
            self.renumber_launches();
        }
        retyped
    }

    /// Missing copies (`missing` per component) one `room` of type `t` holds, smallest first.
    fn copies_fitting(&self, t: usize, room: Resources, missing: &[u64]) -> u64 {
        let problem = self.problem;
        let Some(capacity) = problem.types.get(t).map(|info| info.capacity) else { return 0 };
        let mut needs: Vec<(u64, Resources, u64)> = missing
            .iter()
            .enumerate()
            .filter(|&(_, &n)| n > 0)
            .filter_map(|(c, &n)| {
                let need = problem.components.get(c)?.placement_requirement(problem, t)?.resources;
                Some(((need.dominant_share(&capacity) * 1e6) as u64, need, n))
            })
            .collect();
        needs.sort_by_key(|&(share, ..)| share);
        let mut room = room;
        let mut held = 0;
        for (_, need, n) in needs {
            let count = room.copies_of(&need).min(n);
            room = room.minus(&need.times(count)).unwrap_or(Resources::ZERO);
            held += count;
        }
        held
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::FinalFleet;
    use crate::model::{InstanceTypeSpec, ScenarioBuilder};
    use crate::problem::Problem;

    fn sized(name: &str, accelerators: u32) -> InstanceTypeSpec {
        InstanceTypeSpec {
            instance_type: name.into(),
            accelerator_count: accelerators,
            accelerator_memory_gib: 24.0,
            v_cpu_count: 48.0,
            memory_in_mb: 196_608.0,
            hourly_price: Some(f64::from(accelerators)),
        }
    }

    /// MaxInstanceCount 2; two launches of the preferred 4-accelerator type, each filled by one
    /// 4-accelerator copy; two 2-accelerator copies missing. The 6-accelerator type holds each
    /// big copy with room for one small one.
    fn full_small_launches() -> Problem {
        let scenario = ScenarioBuilder::new(["a"])
            .instance_type(sized("ml.small", 4))
            .instance_type(sized("ml.wide", 6))
            .pool("ml.small", 1)
            .pool("ml.wide", 2)
            .instance_limits(0, Some(2))
            .component("big", 2, 4, 1.0, 8192)
            .component("half", 2, 2, 1.0, 8192)
            .build()
            .unwrap();
        Problem::new(&scenario).unwrap()
    }

    #[test]
    fn retyping_full_launches_leaves_room_for_the_missing_copies() {
        let problem = full_small_launches();
        let big = problem.components.iter().position(|c| c.name == "big").unwrap();
        let small = TypeIndex::new(problem.types.iter().position(|t| t.name == "ml.small").unwrap());
        let mut planner = Greedy::new(&problem);
        planner.scale_in();
        planner.index_fleet();
        for _ in 0..2 {
            let index = planner.open(small, AzIndex::new(0)).unwrap();
            let need = planner.need_on(big, index).unwrap();
            planner.place(big, index, 1, &need);
        }
        assert_eq!(planner.missing_copies(), 2);
        assert_eq!(planner.retype_for_room(), 2);
        assert_eq!(planner.missing_copies(), 0);
        assert_eq!(planner.fleet_size, 2);
        let (fleet, violations) = FinalFleet::apply(&problem, &planner.into_actions());
        assert!(violations.is_empty(), "{violations:?}");
        assert!(fleet.instances.iter().all(|instance| problem.types[instance.type_index].name == "ml.wide"));
    }
}
