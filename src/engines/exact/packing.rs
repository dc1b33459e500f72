//! Exact packing of one (type, AZ) group of new instances, and the SPREAD repair.
//!
//! The master problem only knows how many copies of each component go to a (type, AZ) group
//! and how many instances the group launches. [`pack_group`] decides whether those copies
//! really fit into that many identical instances (a small multi-dimensional bin-packing
//! problem with few item kinds), by depth-first search with symmetry breaking.

use std::time::Instant;

use super::patterns::dive;
use crate::engines::knapsack::Demand;
use crate::problem::Resources;

/// Most copies packed by the search in one group (bounds the recursion depth).
const MAX_COPIES: usize = 2_000;

/// Most components in a group the column-generation dive takes on (its LP has one row each).
const MAX_DIVE_COMPONENTS: usize = 300;

/// Result of packing one group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Packing {
    /// Component indices per instance (one entry per copy), `bins` entries.
    Packed(Vec<Vec<usize>>),
    /// Proven impossible with that many instances.
    Impossible,
    /// The search budget ran out before an answer.
    Unknown,
}

/// Packs `items` (component, count, requirement) into `bins` instances of `capacity`.
/// `budget` bounds the number of search nodes; when it runs out, column generation with diving
/// ([`dive`]) gets a try until `deadline`.
pub(crate) fn pack_group(
    items: &[(usize, u32, Resources)],
    bins: usize,
    capacity: Resources,
    budget: u64,
    deadline: Option<Instant>,
) -> Packing {
    // Larger groups are left to the slot model (and its size guard): the search recurses once
    // per copy, and the dive's LP has a row per component.
    let total: u64 = items.iter().map(|&(_, count, _)| u64::from(count)).sum();
    if total > MAX_COPIES as u64 {
        return Packing::Unknown;
    }
    match search_packing(items, bins, capacity, budget) {
        Packing::Unknown => {}
        known => return known,
    }
    if items.len() > MAX_DIVE_COMPONENTS {
        return Packing::Unknown;
    }
    let demands: Vec<Demand> =
        items.iter().map(|&(_, count, need)| Demand { copies: u64::from(count), need }).collect();
    let Some(patterns) = dive(&demands, capacity, bins as u64, deadline) else { return Packing::Unknown };
    let mut packed = vec![Vec::new(); bins];
    for (slot, pattern) in packed.iter_mut().zip(&patterns) {
        for (&(component, _, _), &count) in items.iter().zip(pattern) {
            slot.extend(std::iter::repeat_n(component, count as usize));
        }
    }
    Packing::Packed(packed)
}

/// The depth-first packing search alone (at most [`MAX_COPIES`] copies, checked by the caller).
fn search_packing(items: &[(usize, u32, Resources)], bins: usize, capacity: Resources, budget: u64) -> Packing {
    let mut copies: Vec<(usize, Resources)> = Vec::new();
    for &(component, count, need) in items {
        for _ in 0..count {
            copies.push((component, need));
        }
    }
    if copies.is_empty() {
        return Packing::Packed(vec![Vec::new(); bins]);
    }
    if bins == 0 {
        return Packing::Impossible;
    }
    // Largest first (normalised by the capacity), identical copies adjacent. Every copy fits
    // an empty instance, so no share is infinite.
    let share = |need: &Resources| need.dominant_share(&capacity);
    copies.sort_by(|a, b| share(&b.1).total_cmp(&share(&a.1)).then(b.1.cmp(&a.1)).then(a.0.cmp(&b.0)));
    let mut search = Search {
        copies: &copies,
        capacity,
        loads: vec![Resources::ZERO; bins],
        assignment: vec![0; copies.len()],
        nodes: 0,
        budget,
    };
    match search.place(0) {
        Some(true) => {
            let mut packed = vec![Vec::new(); bins];
            for (copy, &bin) in copies.iter().zip(&search.assignment) {
                if let Some(slot) = packed.get_mut(bin) {
                    slot.push(copy.0);
                }
            }
            Packing::Packed(packed)
        }
        Some(false) => Packing::Impossible,
        None => Packing::Unknown,
    }
}

struct Search<'a> {
    copies: &'a [(usize, Resources)],
    capacity: Resources,
    loads: Vec<Resources>,
    assignment: Vec<usize>,
    nodes: u64,
    budget: u64,
}

impl Search<'_> {
    /// `Some(true)` packed, `Some(false)` impossible, `None` budget exhausted.
    fn place(&mut self, index: usize) -> Option<bool> {
        let Some(&(component, need)) = self.copies.get(index) else {
            return Some(true);
        };
        self.nodes += 1;
        if self.nodes > self.budget {
            return None;
        }
        // Identical copies go to non-decreasing bins (they are interchangeable).
        let first_bin = match index.checked_sub(1).and_then(|previous| self.copies.get(previous)) {
            Some(&(previous_component, previous_need)) if previous_component == component && previous_need == need => {
                self.assignment.get(index - 1).copied().unwrap_or(0)
            }
            _ => 0,
        };
        for bin in first_bin..self.loads.len() {
            let load = self.loads[bin];
            // Bins with identical loads are interchangeable: try only the first of them.
            if self.loads[first_bin..bin].contains(&load) {
                continue;
            }
            let after = load.plus(&need);
            if !after.fits_in(&self.capacity) {
                continue;
            }
            self.loads[bin] = after;
            self.assignment[index] = bin;
            match self.place(index + 1) {
                Some(true) => return Some(true),
                None => return None,
                Some(false) => {}
            }
            self.loads[bin] = load;
        }
        Some(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(accelerators: u64, memory_mib: u64) -> Resources {
        Resources { accelerators, milli_cpus: 0, memory_mib }
    }

    #[test]
    fn packs_and_refutes() {
        let capacity = res(8, 100);
        let items = [(0, 3, res(4, 10)), (1, 2, res(2, 10))];
        assert!(matches!(pack_group(&items, 2, capacity, 10_000, None), Packing::Packed(_)));
        // Aggregate fits (16 ≤ 16 accelerators) but two-dimensional packing does not.
        let items = [(0, 2, res(5, 10)), (1, 2, res(3, 60))];
        assert_eq!(pack_group(&items, 2, capacity, 10_000, None), Packing::Packed(vec![vec![0, 1], vec![0, 1]]));
        let items = [(0, 3, res(5, 10)), (1, 1, res(1, 10))];
        assert_eq!(pack_group(&items, 2, capacity, 10_000, None), Packing::Impossible);
    }
}
