//! The pattern (configuration) LP bound for one instance type, by column generation.
//!
//! Copies of several components go onto identical instances of one type (capacity in three
//! resources). A *pattern* is a multiset of copies that fits on one instance. The configuration
//! LP `min Σ_p λ_p` s.t. `Σ_p a_cp λ_p ≥ n_c`, `λ ≥ 0` is the Gilmore–Gomory relaxation; its
//! value is a lower bound on the number of instances (and within one of it on the classic
//! bin-packing families). microlp gives no dual values, so the dual is solved instead, with row
//! generation: `max Σ_c n_c π_c` s.t. `Σ_c a_c π_c ≤ 1` for every pattern `a`, `π ≥ 0`. Rows start
//! with the single-component patterns; pricing finds the pattern of largest `Σ a_c π_c` by a
//! depth-first bounded knapsack over the components (three resources at once). If it is ≤ 1,
//! `π` is dual feasible and `Σ n π` is the LP value. Every round, whatever the pricing finds,
//! `Σ n π / max_a Σ a π` is a valid bound (Farley's: `π` scaled down is dual feasible), so
//! stopping early (rounds or pricing budget) still gives a valid bound.

//!
//! The same columns drive [`dive`], the packing heuristic the exact planner uses when its
//! depth-first packing search runs out of budget: solve the LP, fix the columns the LP uses
//! (rounded down, or the largest one once), and repeat on what is left.

#![cfg_attr(not(test), allow(dead_code))]

use std::time::Instant;

use super::backend::{Microlp, Mip, MipBackend, MipOutcome, Sense, SolveRequest, Var};
use crate::problem::Resources;

/// One component on the type: copies wanted and the need of one copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Demand {
    pub copies: u64,
    pub need: Resources,
}

/// What column generation proved.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PatternBound {
    /// The best valid lower bound on the LP value found (the LP value itself when `converged`).
    pub lp_value: f64,
    /// Instances needed at least: `⌈lp_value⌉` (rounded inward).
    pub instances: u64,
    /// Pricing proved no pattern prices out: `lp_value` is the LP optimum.
    pub converged: bool,
    /// Patterns generated.
    pub patterns: usize,
}

/// Depth-first nodes one pricing call may use; beyond it the round's bound is not used.
const PRICING_NODES: u64 = 200_000;

/// The pattern LP bound for `demands` on instances of `capacity`, after at most `max_rounds`
/// rounds. `None` when a copy does not fit on an empty instance or the LP solve fails.
pub(crate) fn pattern_bound(demands: &[Demand], capacity: Resources, max_rounds: usize) -> Option<PatternBound> {
    let demands: Vec<Demand> = demands.iter().copied().filter(|d| d.copies > 0).collect();
    if demands.iter().any(|d| !d.need.fits_in(&capacity)) {
        return None;
    }
    if demands.is_empty() {
        return Some(PatternBound { lp_value: 0.0, instances: 0, converged: true, patterns: 0 });
    }
    let mut patterns: Vec<Vec<u64>> = demands
        .iter()
        .enumerate()
        .map(|(c, d)| {
            let mut pattern = vec![0; demands.len()];
            pattern[c] = d.copies.min(capacity.copies_of(&d.need));
            pattern
        })
        .collect();
    let mut best = 0.0f64;
    for _ in 0..max_rounds.max(1) {
        let prices = solve_dual(&demands, &patterns)?;
        let value: f64 = demands.iter().zip(&prices).map(|(d, p)| d.copies as f64 * p).sum();
        let Some((pattern, priced)) = price(&demands, &prices, capacity) else { break };
        if priced > 0.0 {
            best = best.max(value / priced.max(1.0));
        }
        if priced <= 1.0 + 1e-9 {
            return Some(finish(value, true, patterns.len()));
        }
        if patterns.contains(&pattern) {
            break; // Numerical stall: the LP already has this row.
        }
        patterns.push(pattern);
    }
    Some(finish(best, false, patterns.len()))
}

/// Column-generation rounds per LP solved inside [`dive`].
const DIVE_ROUNDS: usize = 2_000;

/// Packs `demands` into at most `bins` instances of `capacity` by column generation and diving:
/// the patterns used, one per instance, each within the demands. A heuristic: `None` (not found
/// within `bins`, a numerical failure, or the deadline) proves nothing.
pub(crate) fn dive(
    demands: &[Demand],
    capacity: Resources,
    bins: u64,
    deadline: Option<Instant>,
) -> Option<Vec<Vec<u64>>> {
    if demands.iter().any(|d| d.copies > 0 && !d.need.fits_in(&capacity)) {
        return None;
    }
    let mut residual: Vec<u64> = demands.iter().map(|d| d.copies).collect();
    let mut chosen: Vec<Vec<u64>> = Vec::new();
    let mut pool: Vec<Vec<u64>> = Vec::new();
    loop {
        if residual.iter().all(|&r| r == 0) {
            return Some(chosen);
        }
        let left = bins.checked_sub(chosen.len() as u64).filter(|&left| left > 0)?;
        if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            return None;
        }
        let current: Vec<Demand> =
            demands.iter().zip(&residual).map(|(d, &copies)| Demand { copies, need: d.need }).collect();
        // What is left may already pack greedily.
        if let Some(rest) = first_fit_decreasing(&current, capacity, left) {
            chosen.extend(rest);
            return Some(chosen);
        }
        let columns = generate_columns(&current, capacity, &mut pool, deadline)?;
        let usage = solve_primal(&current, &columns)?;
        let value: f64 = usage.iter().sum();
        if (value - 1e-6).ceil() > left as f64 {
            return None;
        }
        // Residual rounding: every column at ⌊λ⌋; when none reaches 1, the largest λ once.
        let mut order: Vec<usize> = (0..columns.len()).collect();
        order.sort_by(|&a, &b| usage[b].total_cmp(&usage[a]).then(a.cmp(&b)));
        let mut fixed = false;
        for &column in &order {
            let times = (usage[column] + 1e-9).floor() as u64;
            for _ in 0..times {
                fixed |= take(&columns[column], &mut residual, &mut chosen);
            }
        }
        if !fixed {
            let Some(&largest) = order.first() else { return None };
            if !take(&columns[largest], &mut residual, &mut chosen) {
                return None;
            }
        }
    }
}

/// Adds `pattern`, capped at what is left, to `chosen`; false when it would hold nothing.
fn take(pattern: &[u64], residual: &mut [u64], chosen: &mut Vec<Vec<u64>>) -> bool {
    let capped: Vec<u64> = pattern.iter().zip(residual.iter()).map(|(&a, &r)| a.min(r)).collect();
    if capped.iter().all(|&a| a == 0) {
        return false;
    }
    for (r, a) in residual.iter_mut().zip(&capped) {
        *r -= a;
    }
    chosen.push(capped);
    true
}

/// First fit, largest share of the capacity first: the patterns when at most `bins` are used.
fn first_fit_decreasing(demands: &[Demand], capacity: Resources, bins: u64) -> Option<Vec<Vec<u64>>> {
    let share = |need: &Resources| {
        let part = |have: u64, want: u64| if have == 0 { 0.0 } else { want as f64 / have as f64 };
        part(capacity.accelerators, need.accelerators)
            .max(part(capacity.milli_cpus, need.milli_cpus))
            .max(part(capacity.memory_mib, need.memory_mib))
    };
    let mut order: Vec<usize> = (0..demands.len()).filter(|&c| demands[c].copies > 0).collect();
    order.sort_by(|&a, &b| share(&demands[b].need).total_cmp(&share(&demands[a].need)).then(a.cmp(&b)));
    let mut rooms: Vec<Resources> = Vec::new();
    let mut patterns: Vec<Vec<u64>> = Vec::new();
    for &c in &order {
        let need = demands[c].need;
        for _ in 0..demands[c].copies {
            let slot = match rooms.iter().position(|room| need.fits_in(room)) {
                Some(slot) => slot,
                None => {
                    if rooms.len() as u64 >= bins {
                        return None;
                    }
                    rooms.push(capacity);
                    patterns.push(vec![0; demands.len()]);
                    rooms.len() - 1
                }
            };
            rooms[slot] = rooms[slot].minus(&need)?;
            patterns[slot][c] += 1;
        }
    }
    Some(patterns)
}

/// Column generation for `demands` to the LP optimum (or the round limit), starting from the
/// single-component patterns and the still useful patterns of `pool`; returns the patterns of
/// the last LP (capped at the demands) and keeps them in `pool`.
fn generate_columns(
    demands: &[Demand],
    capacity: Resources,
    pool: &mut Vec<Vec<u64>>,
    deadline: Option<Instant>,
) -> Option<Vec<Vec<u64>>> {
    let mut columns: Vec<Vec<u64>> = Vec::new();
    let add = |columns: &mut Vec<Vec<u64>>, pattern: Vec<u64>| {
        if pattern.iter().any(|&a| a > 0) && !columns.contains(&pattern) {
            columns.push(pattern);
        }
    };
    for (c, d) in demands.iter().enumerate() {
        let mut single = vec![0; demands.len()];
        single[c] = d.copies.min(capacity.copies_of(&d.need));
        add(&mut columns, single);
    }
    for pattern in pool.iter() {
        add(&mut columns, pattern.iter().zip(demands).map(|(&a, d)| a.min(d.copies)).collect());
    }
    for _ in 0..DIVE_ROUNDS {
        if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            return None;
        }
        let prices = solve_dual(demands, &columns)?;
        let Some((pattern, priced)) = price(demands, &prices, capacity) else { break };
        if priced <= 1.0 + 1e-9 || columns.contains(&pattern) {
            break;
        }
        add(&mut columns, pattern);
    }
    pool.clone_from(&columns);
    Some(columns)
}

/// The primal LP over `columns`: `min Σ λ`, `Σ_p a_cp λ_p ≥ n_c`, `λ ≥ 0`; the `λ`.
fn solve_primal(demands: &[Demand], columns: &[Vec<u64>]) -> Option<Vec<f64>> {
    let mut mip = Mip::new();
    let vars: Vec<Var> = columns.iter().map(|_| mip.add_var(1.0, (0.0, f64::INFINITY))).collect();
    for (c, d) in demands.iter().enumerate() {
        if d.copies == 0 {
            continue;
        }
        let terms: Vec<(Var, f64)> =
            columns.iter().zip(&vars).filter(|(p, _)| p[c] > 0).map(|(p, &v)| (v, p[c] as f64)).collect();
        mip.add_row(terms, Sense::AtLeast, d.copies as f64);
    }
    match Microlp.solve(&mip, &SolveRequest::default()) {
        MipOutcome::Solution(solution) => Some(solution.values.iter().map(|v| v.max(0.0)).collect()),
        _ => None,
    }
}

fn finish(lp_value: f64, converged: bool, patterns: usize) -> PatternBound {
    let rounded = (lp_value - 1e-6).ceil();
    PatternBound { lp_value, instances: if rounded > 0.0 { rounded as u64 } else { 0 }, converged, patterns }
}

/// The dual LP over the patterns so far: `max Σ n π`, `Σ a π ≤ 1` per pattern, `π ≥ 0`.
fn solve_dual(demands: &[Demand], patterns: &[Vec<u64>]) -> Option<Vec<f64>> {
    let mut mip = Mip::new();
    // A price above 1 is never needed (a single copy is a pattern).
    let vars: Vec<Var> = demands.iter().map(|d| mip.add_var(-(d.copies as f64), (0.0, 1.0))).collect();
    for pattern in patterns {
        let terms: Vec<(Var, f64)> =
            vars.iter().zip(pattern).filter(|(_, &a)| a > 0).map(|(&v, &a)| (v, a as f64)).collect();
        mip.add_row(terms, Sense::AtMost, 1.0);
    }
    match Microlp.solve(&mip, &SolveRequest::default()) {
        MipOutcome::Solution(solution) => Some(solution.values.iter().map(|v| v.max(0.0)).collect()),
        _ => None,
    }
}

/// The pattern of largest `Σ a_c π_c` (bounded knapsack in three resources), by depth-first
/// search with the bound "each remaining component alone at its most copies". `None` when the
/// node budget runs out (the maximum is then unknown).
fn price(demands: &[Demand], prices: &[f64], capacity: Resources) -> Option<(Vec<u64>, f64)> {
    let mut order: Vec<usize> = (0..demands.len()).filter(|&c| prices[c] > 1e-12).collect();
    order.sort_by(|&a, &b| prices[b].total_cmp(&prices[a]).then(a.cmp(&b)));
    struct Search<'a> {
        demands: &'a [Demand],
        prices: &'a [f64],
        order: Vec<usize>,
        current: Vec<u64>,
        best: (Vec<u64>, f64),
        nodes: u64,
    }
    impl Search<'_> {
        fn go(&mut self, depth: usize, room: Resources, value: f64) -> bool {
            self.nodes += 1;
            if self.nodes > PRICING_NODES {
                return false;
            }
            if value > self.best.1 {
                self.best = (self.current.clone(), value);
            }
            let Some(&c) = self.order.get(depth) else { return true };
            let bound: f64 = self.order[depth..]
                .iter()
                .map(|&d| self.prices[d] * self.demands[d].copies.min(room.copies_of(&self.demands[d].need)) as f64)
                .sum();
            if value + bound <= self.best.1 + 1e-12 {
                return true;
            }
            let most = self.demands[c].copies.min(room.copies_of(&self.demands[c].need));
            for count in (0..=most).rev() {
                let used = self.demands[c].need.times(count);
                let Some(left) = room.minus(&used) else { continue };
                self.current[c] = count;
                if !self.go(depth + 1, left, value + self.prices[c] * count as f64) {
                    return false;
                }
            }
            self.current[c] = 0;
            true
        }
    }
    let mut search = Search {
        demands,
        prices,
        order,
        current: vec![0; demands.len()],
        best: (vec![0; demands.len()], 0.0),
        nodes: 0,
    };
    search.go(0, capacity, 0.0).then_some(search.best)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capacity(size: u64) -> Resources {
        Resources { accelerators: 0, milli_cpus: 1_000_000, memory_mib: size }
    }

    fn demand(copies: u64, size: u64) -> Demand {
        Demand { copies, need: Resources { accelerators: 0, milli_cpus: 1, memory_mib: size } }
    }

    /// The fewest bins, by brute force (one dimension: memory).
    fn fewest_bins(items: &[u64], capacity: u64) -> u64 {
        fn go(index: usize, items: &[u64], bins: &mut Vec<u64>, capacity: u64, best: &mut u64) {
            if bins.len() as u64 >= *best {
                return;
            }
            let Some(&size) = items.get(index) else {
                *best = bins.len() as u64;
                return;
            };
            for b in 0..bins.len() {
                if bins[b] + size <= capacity {
                    bins[b] += size;
                    go(index + 1, items, bins, capacity, best);
                    bins[b] -= size;
                }
            }
            bins.push(size);
            go(index + 1, items, bins, capacity, best);
            bins.pop();
        }
        let mut best = items.len() as u64;
        go(0, items, &mut Vec::new(), capacity, &mut best);
        best
    }

    #[test]
    fn the_lp_bound_sees_what_sizes_alone_do_not() {
        // Three items of 6 on bins of 10: Σ/cap = 1.8, but no two share a bin: LP = 3.
        let bound = pattern_bound(&[demand(3, 6)], capacity(10), 50).unwrap();
        assert!(bound.converged);
        assert_eq!(bound.instances, 3);
        // 4, 4, 3, 3, 3, 3 on 10: patterns (4,3,3) and (4,3,3) → 2 bins, LP 2.
        let bound = pattern_bound(&[demand(2, 4), demand(4, 3)], capacity(10), 50).unwrap();
        assert!(bound.converged);
        assert_eq!(bound.instances, 2);
    }

    #[test]
    fn column_generation_terminates_below_the_integer_optimum() {
        // Every instance with sizes from {2..=9} (two to three distinct sizes, up to 4 copies each)
        // on bins of 10: converges, and ⌈LP⌉ never exceeds the brute-force optimum.
        let mut checked = 0;
        for a in 2..=9u64 {
            for b in (a + 1)..=9 {
                for (na, nb) in [(1, 3), (2, 2), (3, 4), (4, 1)] {
                    for extra in [None, Some((5u64, 2u64))] {
                        let mut demands = vec![demand(na, a), demand(nb, b)];
                        let mut items: Vec<u64> =
                            std::iter::repeat_n(a, na as usize).chain(std::iter::repeat_n(b, nb as usize)).collect();
                        if let Some((size, copies)) = extra {
                            demands.push(demand(copies, size));
                            items.extend(std::iter::repeat_n(size, copies as usize));
                        }
                        let bound = pattern_bound(&demands, capacity(10), 100).unwrap();
                        assert!(bound.converged, "{demands:?}");
                        let optimum = fewest_bins(&items, 10);
                        assert!(bound.instances <= optimum, "{items:?}: LP {} > optimum {optimum}", bound.lp_value);
                        assert!(bound.lp_value <= optimum as f64 + 1e-9);
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 28 * 4 * 2);
    }

    #[test]
    fn three_resources_at_once() {
        // Copy A: 1 accelerator, lots of memory; B: 3 accelerators, little memory. Instance: 4
        // accelerators, 100 memory. A+B fits (4 acc, 70+20 mem); A+A does not (memory).
        let cap = Resources { accelerators: 4, milli_cpus: 1000, memory_mib: 100 };
        let a = Demand { copies: 3, need: Resources { accelerators: 1, milli_cpus: 1, memory_mib: 70 } };
        let b = Demand { copies: 3, need: Resources { accelerators: 3, milli_cpus: 1, memory_mib: 20 } };
        let bound = pattern_bound(&[a, b], cap, 50).unwrap();
        assert!(bound.converged);
        assert_eq!(bound.instances, 3);
    }

    #[test]
    fn a_copy_that_does_not_fit_gives_no_bound() {
        assert_eq!(pattern_bound(&[demand(1, 11)], capacity(10), 10), None);
        assert_eq!(pattern_bound(&[], capacity(10), 10).map(|b| b.instances), Some(0));
    }
}
