//! Scale-in: remove the copies a component has beyond its CopyCount.
//!
//! Balance (L2) comes first: a removal may only come from an AZ from which the remaining excess
//! can still be drained to the best balance reachable. Within that, fallback instances empty
//! first (L3): whole instances are emptied lowest priority first, then the rest is trimmed from
//! the least preferred, least loaded holders.

use std::cmp::Reverse;

use super::{instance_cost, Greedy};
use crate::index::{ComponentIndex, TypeIndex};
use crate::problem::Resources;

/// Smallest balance excess reachable by removing `remove` copies from `counts` (copies per AZ,
/// every AZ included): drain the fullest AZs first.
pub(super) fn drained_excess(counts: &[u64], remove: u64, max_imbalance: u32) -> u64 {
    let mut sorted: Vec<u64> = counts.to_vec();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    let Some(&top) = sorted.first() else { return 0 };
    let mut level = top;
    let mut group = 1usize; // AZs at `level` (the fullest)
    let mut left = remove;
    while group < sorted.len() && sorted[group] == level {
        group += 1;
    }
    loop {
        let next = sorted.get(group).copied().unwrap_or(0);
        let cost = (level - next).saturating_mul(group as u64);
        if left >= cost && group < sorted.len() {
            left -= cost;
            level = next;
            while group < sorted.len() && sorted[group] == level {
                group += 1;
            }
            continue;
        }
        // Lower the group evenly by what is left (the bottom is 0 when every AZ is in the group).
        let lower = (left / group as u64).min(level);
        level -= lower;
        let partial = if level > 0 { left - lower * group as u64 } else { 0 };
        let most = level;
        let rest_min = sorted.get(group..).and_then(|rest| rest.iter().min().copied());
        let group_min = if partial > 0 { level - 1 } else { level };
        let fewest = rest_min.map_or(group_min, |m| m.min(group_min));
        return (most - fewest).saturating_sub(u64::from(max_imbalance));
    }
}

impl Greedy<'_> {
    fn own_need(&self, component: ComponentIndex, type_index: TypeIndex) -> Resources {
        self.problem
            .components
            .get(component.index())
            .and_then(|c| c.requirements.get(type_index.index()))
            .and_then(|r| r.as_ref())
            .map_or(Resources::ZERO, |r| r.resources)
    }

    /// Whether removing `count` copies of `component` from `az` keeps the best balance reachable.
    fn removal_keeps_balance(
        &self,
        counts: &[u64],
        component: usize,
        az: usize,
        count: u64,
        excess: u64,
        target: u64,
    ) -> bool {
        let Some(limit) = self.problem.components[component].max_imbalance else {
            return true;
        };
        let mut after = counts.to_vec();
        match after.get_mut(az) {
            Some(cell) if *cell >= count => *cell -= count,
            _ => return false,
        }
        drained_excess(&after, excess.saturating_sub(count), limit) <= target
    }

    fn remove_copy(&mut self, component: usize, instance: usize) {
        let need = self.own_need(ComponentIndex::new(component), TypeIndex::new(self.instances[instance].type_index));
        self.instances[instance].remove_one(component, &need);
        self.removals.push((component, instance));
        self.had_removals[component] = true;
    }

    /// Release order key: draining, lowest priority, paid, most expensive, least loaded first.
    fn release_key(&self, index: usize) -> (bool, Reverse<u8>, bool, Reverse<i64>, u64, usize) {
        let instance = &self.instances[index];
        (
            !instance.draining,
            Reverse(self.priority(instance.type_index)),
            instance.reserved,
            Reverse(instance_cost(self.problem, instance.type_index, instance.reserved)),
            instance.total_copies(),
            instance.rank,
        )
    }

    pub(super) fn scale_in(&mut self) {
        let problem = self.problem;
        let existing = problem.existing_copies_per_component();
        let mut excess: Vec<u64> = problem
            .components
            .iter()
            .zip(&existing)
            .map(|(component, &have)| have.saturating_sub(u64::from(component.copy_count)))
            .collect();
        if excess.iter().all(|&e| e == 0) {
            return;
        }
        let az_count = problem.azs.len();
        let mut counts = vec![vec![0u64; az_count]; problem.components.len()];
        for instance in &self.instances {
            for &(component, n) in &instance.copies {
                counts[component][instance.az] += u64::from(n);
            }
        }
        let targets: Vec<u64> = problem
            .components
            .iter()
            .enumerate()
            .map(|(c, component)| {
                component.max_imbalance.map_or(0, |limit| drained_excess(&counts[c], excess[c], limit))
            })
            .collect();

        // Stage A: empty whole instances, least preferred first, where every copy on them is excess.
        // (Not when trimming the fullest holders: see `Mode::trim_fullest`.)
        let mut order: Vec<usize> =
            (0..self.instances.len()).filter(|&i| !self.trim_fullest && !self.instances[i].copies.is_empty()).collect();
        order.sort_by_key(|&i| self.release_key(i));
        for index in order {
            let az = self.instances[index].az;
            let copies = self.instances[index].copies.clone();
            let removable = copies.iter().all(|&(c, n)| {
                let n = u64::from(n);
                excess[c] >= n && self.removal_keeps_balance(&counts[c], c, az, n, excess[c], targets[c])
            });
            if !removable {
                continue;
            }
            for (c, n) in copies {
                for _ in 0..n {
                    self.remove_copy(c, index);
                }
                excess[c] -= u64::from(n);
                counts[c][az] -= u64::from(n);
            }
        }

        // Stage B: trim what is left, one copy at a time, from the best holder in an allowed AZ.
        let mut components: Vec<usize> = (0..problem.components.len()).filter(|&c| excess[c] > 0).collect();
        components.sort_by(|&a, &b| problem.components[a].name.cmp(&problem.components[b].name));
        for c in components {
            let mut holders: Vec<usize> =
                (0..self.instances.len()).filter(|&i| self.instances[i].copies_of(c) > 0).collect();
            if self.trim_fullest {
                holders.sort_by_key(|&i| (Reverse(self.instances[i].total_copies()), self.release_key(i)));
            } else {
                holders.sort_by_key(|&i| self.release_key(i));
            }
            while excess[c] > 0 {
                let allowed: Vec<bool> = (0..az_count)
                    .map(|z| self.removal_keeps_balance(&counts[c], c, z, 1, excess[c], targets[c]))
                    .collect();
                let Some(&index) =
                    holders.iter().find(|&&i| allowed[self.instances[i].az] && self.instances[i].copies_of(c) > 0)
                else {
                    break;
                };
                self.remove_copy(c, index);
                excess[c] -= 1;
                counts[c][self.instances[index].az] -= 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::drained_excess;

    /// Brute force: remove one copy at a time from a fullest AZ.
    fn slow(counts: &[u64], remove: u64, limit: u32) -> u64 {
        let mut v = counts.to_vec();
        for _ in 0..remove {
            if let Some(max) = v.iter_mut().max() {
                *max = max.saturating_sub(1);
            }
        }
        let most = v.iter().copied().max().unwrap_or(0);
        let fewest = v.iter().copied().min().unwrap_or(0);
        (most - fewest).saturating_sub(u64::from(limit))
    }

    #[test]
    fn drained_excess_matches_one_by_one_draining() {
        let cases: &[&[u64]] = &[&[5, 1, 0], &[3, 3, 3], &[7, 2], &[4], &[0, 0], &[9, 9, 1, 4], &[2, 6, 6, 1]];
        for counts in cases {
            let total: u64 = counts.iter().sum();
            for remove in 0..=total {
                for limit in 0..3 {
                    assert_eq!(
                        drained_excess(counts, remove, limit),
                        slow(counts, remove, limit),
                        "{counts:?} -{remove} k{limit}"
                    );
                }
            }
        }
    }

    #[test]
    fn drained_excess_of_balanced_counts_is_zero() {
        assert_eq!(drained_excess(&[2, 2], 2, 0), 0);
        assert_eq!(drained_excess(&[4, 0], 2, 1), 1);
    }
}
