//! The most valuable pattern of copies on one instance: a bounded knapsack in three resources.
//!
//! Shared by the exact planner's column generation (`exact/patterns.rs`: the configuration LP
//! bound and its dive) and the greedy planner's LP-guided openings (`greedy/lp_packing.rs`): both
//! price patterns — multisets of copies that fit one instance — and need the one of largest
//! worth `Σ a_c π_c` for given prices `π`.

use crate::problem::Resources;

/// One component on the type: copies wanted and the need of one copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Demand {
    pub copies: u64,
    pub need: Resources,
}

/// Depth-first nodes one pricing call may use; beyond it the round's bound is not used.
const PRICING_NODES: u64 = 200_000;

/// Extra columns per column-generation round (earlier incumbents of the pricing search).
const EXTRA_COLUMNS: usize = 4;

/// Resource `index` of `r`: 0 accelerators, 1 milli-CPUs, 2 memory (MiB).
pub(crate) fn resource(r: &Resources, index: usize) -> u64 {
    match index {
        0 => r.accelerators,
        1 => r.milli_cpus,
        _ => r.memory_mib,
    }
}

/// A pattern and its worth `Σ a_c π_c`.
type Priced = (Vec<u64>, f64);

/// The pattern of largest `Σ a_c π_c` (bounded knapsack in three resources), by depth-first
/// search. A node is cut off by the smallest of three upper bounds on what the components not
/// yet decided can add: each alone at its most copies; per resource the fractional knapsack
/// (components by price per unit of that resource, the last one split) — each resource alone
/// is a relaxation of the three together; and the same fractional knapsack on the resources'
/// shares of the capacity added up (a surrogate relaxation). `None` when the node budget runs
/// out (the maximum is then unknown). Besides the best pattern and its worth, the earlier
/// incumbents of the search worth more than 1 (also columns that price out: several per round
/// save rounds).
pub(crate) fn price_several(
    demands: &[Demand],
    prices: &[f64],
    capacity: Resources,
) -> Option<(Priced, Vec<Vec<u64>>)> {
    let pricing = price_within(demands, prices, capacity, PRICING_NODES);
    pricing.complete.then_some((pricing.best, pricing.extra))
}

/// What [`price_within`] found.
pub(crate) struct Pricing {
    /// The most valuable pattern found and its worth (the maximum when `complete`).
    pub best: Priced,
    /// Earlier incumbents worth more than 1 (the last few).
    pub extra: Vec<Vec<u64>>,
    /// The search finished within its node limit: `best` is the maximum.
    pub complete: bool,
    /// Depth-first nodes used.
    pub nodes: u64,
}

/// [`price_several`] within `node_limit` depth-first nodes, with the best pattern found even
/// when the limit stops the search (a heuristic column; never a bound).
pub(crate) fn price_within(demands: &[Demand], prices: &[f64], capacity: Resources, node_limit: u64) -> Pricing {
    let candidates: Vec<usize> = (0..demands.len()).filter(|&c| prices[c] > 1e-12 && demands[c].copies > 0).collect();
    // Depth-first order: most price per share of the instance first (good patterns early).
    let share = |c: usize| demands[c].need.dominant_share(&capacity);
    // Keys computed once: a comparator recomputing float products is not a total order.
    let efficiency: Vec<f64> = (0..demands.len())
        .map(|c| match share(c) {
            share if share > 0.0 => prices[c] / share,
            _ => f64::INFINITY,
        })
        .collect();
    let mut order = candidates.clone();
    order.sort_by(|&a, &b| {
        efficiency[b].total_cmp(&efficiency[a]).then(prices[b].total_cmp(&prices[a])).then(a.cmp(&b))
    });
    let mut position = vec![usize::MAX; demands.len()];
    for (index, &c) in order.iter().enumerate() {
        position[c] = index;
    }
    // Per resource that someone needs: the components by price per unit, most first.
    let by_density: Vec<(usize, Vec<usize>)> = (0..3)
        .filter(|&r| candidates.iter().any(|&c| resource(&demands[c].need, r) > 0))
        .map(|r| {
            let mut list = candidates.clone();
            let density: Vec<f64> = (0..demands.len())
                .map(|c| match resource(&demands[c].need, r) {
                    0 => f64::INFINITY,
                    need => prices[c] / need as f64,
                })
                .collect();
            list.sort_by(|&a, &b| density[b].total_cmp(&density[a]).then(a.cmp(&b)));
            (r, list)
        })
        .collect();
    // With two or three resources in play, also the surrogate relaxation that adds them up, each
    // as a share of the capacity: `Σ_r need_r / capacity_r ≤ Σ_r room_r / capacity_r`. It sees that
    // a pattern cannot be large in every resource at once, which the per-resource bounds miss
    // (each may fill its resource with other components); on the vector-packing benchmarks it
    // halves the pricing nodes.
    let shares: Vec<usize> = by_density.iter().map(|&(r, _)| r).filter(|&r| resource(&capacity, r) > 0).collect();
    let surrogate = (shares.len() >= 2).then(|| {
        let weights: Vec<f64> = demands
            .iter()
            .map(|d| shares.iter().map(|&r| resource(&d.need, r) as f64 / resource(&capacity, r) as f64).sum())
            .collect();
        let density: Vec<f64> =
            (0..demands.len()).map(|c| if weights[c] > 0.0 { prices[c] / weights[c] } else { f64::INFINITY }).collect();
        let mut list = candidates.clone();
        list.sort_by(|&a, &b| density[b].total_cmp(&density[a]).then(a.cmp(&b)));
        Surrogate { shares: shares.clone(), weights, list }
    });
    let mut search = Search {
        demands,
        prices,
        capacity,
        order,
        position,
        by_density,
        surrogate,
        current: vec![0; demands.len()],
        best: (vec![0; demands.len()], 0.0),
        improving: Vec::new(),
        nodes: 0,
        node_limit,
    };
    let complete = search.go(0, capacity, 0.0);
    // The last few incumbents: the best of the earlier ones.
    let keep = search.improving.len().saturating_sub(EXTRA_COLUMNS);
    let extra = search.improving.split_off(keep);
    Pricing { best: search.best, extra, complete, nodes: search.nodes }
}

/// The summed-shares relaxation of [`price_several`]'s knapsack.
struct Surrogate {
    /// The resources added up.
    shares: Vec<usize>,
    /// Per demand: `Σ_r need_r / capacity_r`.
    weights: Vec<f64>,
    /// Candidates by price per unit of weight, most first.
    list: Vec<usize>,
}
/// The depth-first search of [`price_several`]: its order, bounds and incumbents.
struct Search<'a> {
    demands: &'a [Demand],
    prices: &'a [f64],
    capacity: Resources,
    order: Vec<usize>,
    position: Vec<usize>,
    by_density: Vec<(usize, Vec<usize>)>,
    surrogate: Option<Surrogate>,
    current: Vec<u64>,
    best: (Vec<u64>, f64),
    /// Earlier incumbents worth more than 1.
    improving: Vec<Vec<u64>>,
    nodes: u64,
    /// Nodes the search may use (beyond, it gives up: the maximum is then unknown).
    node_limit: u64,
}
impl Search<'_> {
    /// An upper bound on what the components from `depth` on can add within `room`.
    fn bound(&self, depth: usize, room: &Resources) -> f64 {
        let most = |c: usize| self.demands[c].copies.min(room.copies_of(&self.demands[c].need));
        let mut best: f64 = self.order[depth..].iter().map(|&c| self.prices[c] * most(c) as f64).sum();
        for (r, list) in &self.by_density {
            let left = resource(room, *r) as f64;
            let total = self.fractional_fill(depth, list, left, &most, |c| resource(&self.demands[c].need, *r) as f64);
            best = best.min(total);
        }
        if let Some(surrogate) = &self.surrogate {
            let room_weight: f64 =
                surrogate.shares.iter().map(|&r| resource(room, r) as f64 / resource(&self.capacity, r) as f64).sum();
            // Margins for the rounded float weights: a bound below the true maximum could cut
            // the best pattern off, and a "converged" LP would then give an invalid bound.
            let left = room_weight * (1.0 + 1e-9) + 1e-12;
            let total = self.fractional_fill(depth, &surrogate.list, left, &most, |c| surrogate.weights[c]);
            best = best.min(total * (1.0 + 1e-9) + 1e-12);
        }
        best
    }

    /// The fractional knapsack over the components of `list` not yet decided at `depth` (in
    /// that order: most price per unit of weight first), `left` units of weight, at most
    /// `most(c)` copies of `c`, each weighing `weight(c)` (a weightless copy always fits).
    fn fractional_fill(
        &self,
        depth: usize,
        list: &[usize],
        mut left: f64,
        most: &dyn Fn(usize) -> u64,
        weight: impl Fn(usize) -> f64,
    ) -> f64 {
        let mut total = 0.0;
        for &c in list {
            if self.position[c] < depth {
                continue;
            }
            let copies = most(c) as f64;
            let weight = weight(c);
            if weight == 0.0 {
                total += self.prices[c] * copies;
            } else if left > 0.0 {
                let taken = copies.min(left / weight);
                total += self.prices[c] * taken;
                left -= taken * weight;
            }
        }
        total
    }

    fn go(&mut self, depth: usize, room: Resources, value: f64) -> bool {
        self.nodes += 1;
        if self.nodes > self.node_limit {
            return false;
        }
        if value > self.best.1 {
            if self.best.1 > 1.0 + 1e-9 {
                self.improving.push(self.best.0.clone());
            }
            self.best = (self.current.clone(), value);
        }
        let Some(&c) = self.order.get(depth) else { return true };
        if value + self.bound(depth, &room) <= self.best.1 + 1e-12 {
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
