//! LP-guided openings: where the missing copies go, chosen by the configuration LP of L1
//! instead of one instance ahead.
//!
//! When the instances left (MaxInstanceCount, launch limits) cannot hold every copy, L1 is
//! decided by which copies go on which type: a copy that fills a whole instance of one type may
//! take a third of another's, and a small copy fills the gap a big one leaves. The other passes
//! open one instance at a time, each the best for the copies missing then (most copies, most
//! preferred), so they spend the budget on instances that look good alone — many small copies
//! first — and end with big copies that each need an instance of their own. The configuration
//! LP sees the whole budget at once. Its columns are *patterns*, multisets of copies that fit one
//! instance of a *kind*: the openings of a pool type (launches and idle instances, over its AZs),
//! or the same free room on instances of the fleet (grouped by type and room):
//!
//! ```text
//! max Σ_p |p| λ_p   s.t.   Σ_{p on openings} λ_p ≤ B   (instances MaxInstanceCount still allows)
//!                          Σ_{p on kind k} λ_p ≤ L_k   (openings of the type left; instances with the room)
//!                          Σ_p a_cp λ_p ≤ m_c          (missing copies of component c)
//!                          λ ≥ 0
//! ```
//!
//! microlp gives no duals, so columns come from row generation on the dual
//! (`min B σ + Σ L_k ν_k + Σ m_c π_c`, `[σ] + ν_k + Σ_c a_cp π_c ≥ |p|`, σ in the rows of
//! openings only): the pattern of kind `k` most worth `Σ_c a_c (1 − π_c)` (the knapsack shared
//! with the exact planner, [`crate::engines::knapsack::price_within`]) is a violated row while it
//! is worth more than its row's `[σ] + ν_k`. Pricing has a node budget per pass
//! ([`PRICING_WORK`]): the LP need not be solved to optimality for good columns, and the best
//! pattern a stopped search found is still a violated row (never a bound: nothing here proves
//! anything). The prices `π` have no upper bound: capped at 1 (as a single copy's row would
//! suggest), row generation stopped short of the LP optimum (`hard-24-006`: 181.0 against 182.2).
//!
//! With the columns found, the primal LP gives `λ`; each pattern is used `⌊λ_p⌋` times, room
//! first, then the largest patterns: a new instance of its type in the AZ that still opens one
//! and holds the fewest copies of the pattern's components (balance), or the instance of the
//! room group in such an AZ. Then the LP runs again on what is left (a dive: whole columns
//! used each round, the largest `λ` once when all are below 1, the openings' columns found so
//! far seeding the next round), and the main pass places the rest. Components, kinds and ties
//! go by name, so permuting the input does not change the LP or its rounding.
//!
//! **Lookahead.** The first LP's value, rounded down, is about what whole patterns can place.
//! When the dive ends a copy or two short of it (on inputs whose LP promises at most
//! [`LOOKAHEAD_MAX_COPIES`] new copies), the rounding lost them somewhere: a round's
//! whole parts left a remainder the next LP could not fill as well, or the single column of a
//! round whose `λ` are all below 1 was the wrong one. The dive then runs again from the start
//! with lookahead: in a round where the LP uses columns fractionally, its own choice and each of
//! the columns used most fractionally, once, are tried by *rollout* (a copy of the planner dives
//! on from there without lookahead), and the choice whose rollout places the most is taken; the
//! first rollout to reach the promise is taken whole. Until the lookahead dive deviates, its own
//! choice's rollout is the plain dive, so it is not run again. At most [`ROLLOUTS`] rollouts in
//! all (a rollout costs about a dive, 30–60 ms on a 50-component endpoint); the result replaces
//! the plain dive's only when it places more. On 150 hard endpoints this took greedy to the L1
//! optimum on `hard-27-016` (163 → 164, proven) and `hard-29-011` (174 → 175), greedy's time
//! from 25.5 s to 28.2 s in all (docs/sweep.md).
//!
//! The planner runs it apart, once its own plan is final and still leaves copies unplaced
//! ([`super::GreedyPlanner`]): this pass, the same final repairs and last phases, kept only
//! when strictly better.

use super::Greedy;
use crate::engines::knapsack::{price_within, Demand};
use crate::engines::limits::Limits;
use crate::index::{AzIndex, TypeIndex};
use crate::problem::Resources;

/// Groups of equal free room in the fleet the LP sees at most (the most room first); the main
/// pass fills the rest.
const ROOM_KINDS: usize = 32;

/// Rounds of the dive (LP, then its whole columns used) at most.
const DIVE_ROUNDS: usize = 64;

/// Choices of a lookahead round tried by rollout (the dive run on from each): the round's own
/// and the columns the LP uses most fractionally.
const ROLLOUT_CANDIDATES: usize = 3;

/// Rollouts one lookahead dive may run in all (the earliest rounds first): where the LP's
/// promise cannot be reached, the lookahead otherwise costs about three dives per round.
const ROLLOUTS: usize = 2;

/// The lookahead runs only when the dive ends at most this many copies short of the first LP's
/// promise: it is for the copy or two a rounding loses (every dive on 150 hard endpoints that
/// ended short was one copy short); a dive short by more lost them over many rounds, which two
/// rollouts do not recover (a 10,000-copy endpoint 12 short: 2.5 → 5.7 s for nothing).
const LOOKAHEAD_MAX_SHORTFALL: u64 = 2;

/// ... and only when the first LP promises at most this many new copies: a rollout costs about a
/// dive, seconds on inputs of thousands of copies.
const LOOKAHEAD_MAX_COPIES: u64 = 1_000;

/// The lookahead dive's aim and what it may still spend.
struct Lookahead {
    /// Copies placed (new copies, counted as [`Greedy::placed_new_copies`] does) that the first
    /// LP promised; a rollout that reaches it ends the dive.
    target: u64,
    /// Rollouts left ([`ROLLOUTS`]).
    rollouts_left: usize,
    /// Copies the plain dive placed, while the lookahead dive has made the same choices.
    plain_result: Option<u64>,
    /// Nothing is left to learn: a rollout reached the target and was taken whole, or the last
    /// rollout was spent (the rest of the dive would repeat the best rollout, or the plain dive).
    finished: bool,
}

/// Most row-generation rounds (each adds at least one pattern).
const LP_ROUNDS: usize = 200;

/// Depth-first pricing nodes one pass may use in all, over the dive's rounds (then the columns
/// found so far are the LP's: a heuristic needs good columns, not the LP optimum).
const PRICING_WORK: u64 = 200_000;

/// Depth-first nodes one pricing call may use.
const PRICING_NODES: u64 = 20_000;

/// A pattern is a violated dual row only when worth this much more than its row's right side.
const PRICE_TOLERANCE: f64 = 1e-7;

/// One column of the LP: a pattern of copies on one instance of a kind.
#[derive(Debug, Clone, PartialEq)]
struct Column {
    /// The [`Kind`] (of this round) it fills.
    kind: usize,
    /// The kind's pool type.
    type_index: usize,
    /// Copies per component, components by name (the pass's canonical order).
    copies: Vec<u64>,
}

impl Column {
    fn size(&self) -> u64 {
        self.copies.iter().sum()
    }
}

/// What one group of the LP's instances is: openings of a pool type (launches and idle
/// instances; they count in MaxInstanceCount) or the same free room on instances of the fleet.
#[derive(Debug, Clone)]
struct Kind {
    type_index: usize,
    /// An empty instance's capacity, or the room.
    capacity: Resources,
    /// Instances of the kind the LP may use.
    left: u64,
    /// Openings (else room).
    opening: bool,
    /// The fleet's instances with this room (none for openings).
    rooms: Vec<usize>,
}

impl Kind {
    fn opens(&self) -> bool {
        self.opening
    }
}

impl Greedy<'_> {
    /// Places missing copies in the fleet's free room and on openings as the configuration LP
    /// chooses, by diving (module docs): rounds of LP, each using its whole columns, until
    /// nothing more is placed, [`DIVE_ROUNDS`] or `limits` (checked every round and every row
    /// generated: a cancelled run returns promptly with what the dive placed so far, the main
    /// pass placing the rest). When the dive ends a copy or two short of what its first LP
    /// promised, the lookahead dive (module docs) runs from the same start and replaces it if it
    /// places more. Does nothing when no copy is missing, no room or opening is left or the LP
    /// fails.
    pub(super) fn pack_by_lp(&mut self, limits: &Limits) {
        // The LP sees components by name (its rows, columns and pricing ties in that order), so
        // permuting the input does not change its solution.
        let mut canon: Vec<usize> = (0..self.problem.components.len()).collect();
        canon.sort_by_key(|&c| self.component_rank.get(c).copied().unwrap_or(c));
        let all_needs = super::fitting_needs(self.problem);
        let needs: Vec<Vec<Option<Resources>>> =
            canon.iter().map(|&c| all_needs.get(c).cloned().unwrap_or_default()).collect();
        let start = self.clone();
        let before = self.placed_new_copies();
        let Some(lp_value) = self.dive(&canon, &needs, limits, None) else { return };
        // The first LP's value is about what whole patterns can place (about: its pricing may
        // stop short of the LP optimum): a dive that ends a copy or two short of it rounded
        // badly somewhere, and the lookahead dive tries each round's alternatives.
        let promised = before.saturating_add((lp_value + 1e-6).floor() as u64);
        let short = promised.saturating_sub(self.placed_new_copies());
        let worth_it = (1..=LOOKAHEAD_MAX_SHORTFALL).contains(&short) && promised - before <= LOOKAHEAD_MAX_COPIES;
        if worth_it && limits.stop_now().is_none() {
            let mut lookahead = start;
            lookahead.dive(
                &canon,
                &needs,
                limits,
                Some(&mut Lookahead {
                    target: promised,
                    rollouts_left: ROLLOUTS,
                    plain_result: Some(self.placed_new_copies()),
                    finished: false,
                }),
            );
            if lookahead.placed_new_copies() > self.placed_new_copies() {
                *self = lookahead;
            }
        }
    }

    /// The dive from the planner's state: rounds of [`Self::open_lp_round`] until one places
    /// nothing, [`DIVE_ROUNDS`] or `limits`; with `lookahead`, the lookahead dive (module docs).
    /// The first round's LP value, `None` when it placed nothing.
    fn dive(
        &mut self,
        canon: &[usize],
        needs: &[Vec<Option<Resources>>],
        limits: &Limits,
        lookahead: Option<&mut Lookahead>,
    ) -> Option<f64> {
        // Columns of earlier rounds seed the next (capped at what is still missing).
        let mut pool: Vec<Column> = Vec::new();
        let mut nodes_left = PRICING_WORK;
        self.dive_on(canon, needs, &mut pool, &mut nodes_left, limits, lookahead)
    }

    /// [`Self::dive`] from a round's column `pool` and pricing budget `nodes_left` (a rollout
    /// goes on from the round it starts in).
    fn dive_on(
        &mut self,
        canon: &[usize],
        needs: &[Vec<Option<Resources>>],
        pool: &mut Vec<Column>,
        nodes_left: &mut u64,
        limits: &Limits,
        mut lookahead: Option<&mut Lookahead>,
    ) -> Option<f64> {
        let mut first = None;
        for _ in 0..DIVE_ROUNDS {
            if limits.stop_now().is_some() || lookahead.as_ref().is_some_and(|look| look.finished) {
                break;
            }
            let Some(value) = self.open_lp_round(canon, needs, pool, nodes_left, limits, lookahead.as_deref_mut())
            else {
                break;
            };
            first.get_or_insert(value);
        }
        first
    }

    /// One round of the dive: the LP over what is missing, the fleet's free room and the
    /// openings left, then each pattern used `⌊λ_p⌋` times (or, when every `λ_p` is below 1,
    /// the one used most, once). With `lookahead` (and rollouts left), that choice and each
    /// column the LP uses fractionally, once, are tried by rollout ([`Self::best_by_rollout`])
    /// and the best is used; a rollout that reaches the lookahead's target is taken whole. The
    /// round's LP value; `None` when nothing was placed (nothing missing, no room or opening left,
    /// the LP failed or is empty).
    fn open_lp_round(
        &mut self,
        canon: &[usize],
        needs: &[Vec<Option<Resources>>],
        pool: &mut Vec<Column>,
        nodes_left: &mut u64,
        limits: &Limits,
        lookahead: Option<&mut Lookahead>,
    ) -> Option<f64> {
        let missing: Vec<u64> = canon.iter().map(|&c| self.missing_new_copies(c)).collect();
        if missing.iter().all(|&m| m == 0) {
            return None;
        }
        let mut kinds = self.bin_kinds(needs, &missing);
        if kinds.is_empty() {
            return None;
        }
        let budget = kinds.iter().filter(|kind| kind.opens()).fold(0u64, |sum, kind| sum.saturating_add(kind.left));
        let budget = budget.min(self.budget()).min(missing.iter().sum());
        let demands: Vec<Vec<Demand>> = kinds
            .iter()
            .map(|kind| {
                needs
                    .iter()
                    .zip(&missing)
                    .map(|(row, &m)| match row.get(kind.type_index).copied().flatten() {
                        Some(need) => Demand { copies: m, need },
                        None => Demand { copies: 0, need: Resources::ZERO },
                    })
                    .collect()
            })
            .collect();
        // Patterns of openings found in earlier rounds, on this round's opening of their type.
        let seed: Vec<Column> = pool
            .iter()
            .filter_map(|column| {
                let kind = kinds.iter().position(|kind| kind.opens() && kind.type_index == column.type_index)?;
                let copies: Vec<u64> = column.copies.iter().zip(&missing).map(|(&a, &m)| a.min(m)).collect();
                (copies.iter().sum::<u64>() > 0).then_some(Column { kind, type_index: column.type_index, copies })
            })
            .collect();
        let columns = generate(&kinds, &demands, &missing, budget, &seed, nodes_left, limits)?;
        if limits.stop_now().is_some() {
            return None;
        }
        let lambda = solve_primal(&kinds, &columns, &missing, budget)?;
        // Each λ's whole part (up to the tolerance) and what is left of it.
        let parts: Vec<(f64, f64)> = lambda
            .iter()
            .map(|&value| {
                let whole = (value + 1e-6).floor();
                (whole.max(0.0), value - whole)
            })
            .collect();
        let mut chosen: Vec<(u64, &Column)> = columns
            .iter()
            .zip(&parts)
            .map(|(column, &(whole, _))| (whole as u64, column))
            .filter(|&(count, _)| count > 0)
            .collect();
        // Columns the LP uses fractionally, most used first (largest pattern on ties).
        let mut fractional: Vec<(&Column, f64)> = columns
            .iter()
            .zip(&parts)
            .filter(|&(_, &(_, rest))| rest > 1e-6)
            .map(|(column, &(_, rest))| (column, rest))
            .collect();
        fractional
            .sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.size().cmp(&a.0.size())).then(a.0.copies.cmp(&b.0.copies)));
        if chosen.is_empty() {
            // Every λ below 1: the column the LP uses most, once.
            let &(first, _) = fractional.first()?;
            chosen.push((1, first));
        }
        let value: f64 = columns.iter().zip(&lambda).map(|(column, &used)| column.size() as f64 * used).sum();
        let before = self.placed_new_copies();
        if let Some(lookahead) = lookahead.filter(|look| look.rollouts_left > 0 && !fractional.is_empty()) {
            let mut moves: Vec<Vec<(u64, &Column)>> = vec![chosen.clone()];
            moves.extend(fractional.iter().map(|&(column, _)| vec![(1, column)]).filter(|one| *one != chosen));
            if let Some((best, placed, trial)) =
                self.best_by_rollout(&moves, &kinds, canon, needs, &columns, *nodes_left, limits, lookahead)
            {
                // With no rollout left the dive would go on as the best rollout did (or as the
                // plain dive did), so it ends here.
                lookahead.finished = placed >= lookahead.target || lookahead.rollouts_left == 0;
                if let Some(trial) = trial.filter(|_| lookahead.finished) {
                    *self = trial;
                    return Some(value);
                }
                if lookahead.finished {
                    return None;
                }
                if best != 0 {
                    lookahead.plain_result = None;
                }
                chosen = moves.swap_remove(best);
            }
        }
        self.use_columns(&chosen, &mut kinds, canon, needs);
        *pool = columns.into_iter().filter(|column| kinds[column.kind].opens()).collect();
        (self.placed_new_copies() > before).then_some(value)
    }

    /// Uses each of `chosen`'s columns its count of times (as long as an opening's column finds
    /// the budget left): the fleet's room first (it costs no instance), then largest patterns
    /// first, then by type name and copies, independent of input order.
    fn use_columns(
        &mut self,
        chosen: &[(u64, &Column)],
        kinds: &mut [Kind],
        canon: &[usize],
        needs: &[Vec<Option<Resources>>],
    ) {
        let mut chosen = chosen.to_vec();
        chosen.sort_by(|a, b| {
            kinds[a.1.kind]
                .opens()
                .cmp(&kinds[b.1.kind].opens())
                .then(b.1.size().cmp(&a.1.size()))
                .then(self.type_rank[a.1.type_index].cmp(&self.type_rank[b.1.type_index]))
                .then(b.1.copies.cmp(&a.1.copies))
        });
        for (count, column) in chosen {
            for _ in 0..count {
                if kinds[column.kind].opens() && self.budget() == 0 {
                    break;
                }
                self.use_pattern(column, &mut kinds[column.kind], canon, needs);
            }
        }
    }

    /// Of the first [`ROLLOUT_CANDIDATES`] `moves` (each some columns, each used its count of
    /// times; the first is the round's own choice), the one after which the dive, run on without
    /// lookahead on a copy of the planner, ends with the most copies placed (the first among
    /// equals; the first to reach the target ends the search): its index and copies placed, and
    /// the copy of the planner unless the plain dive's result stood for it. `None` when `limits`
    /// stop it or no rollout is left.
    #[allow(clippy::too_many_arguments)]
    fn best_by_rollout(
        &self,
        moves: &[Vec<(u64, &Column)>],
        kinds: &[Kind],
        canon: &[usize],
        needs: &[Vec<Option<Resources>>],
        columns: &[Column],
        nodes_left: u64,
        limits: &Limits,
        lookahead: &mut Lookahead,
    ) -> Option<(usize, u64, Option<Self>)> {
        let mut best: Option<(usize, u64, Option<Self>)> = None;
        for (index, chosen) in moves.iter().enumerate().take(ROLLOUT_CANDIDATES) {
            let (placed, trial) = match lookahead.plain_result {
                // Until the lookahead dive deviates, its own choice leads where the plain dive went.
                Some(placed) if index == 0 => (placed, None),
                _ => {
                    if lookahead.rollouts_left == 0 {
                        break;
                    }
                    lookahead.rollouts_left -= 1;
                    let mut trial = self.clone();
                    let mut trial_kinds = kinds.to_vec();
                    trial.use_columns(chosen, &mut trial_kinds, canon, needs);
                    // The round's columns of openings seed the next, as in the dive itself.
                    let mut trial_pool: Vec<Column> =
                        columns.iter().filter(|column| kinds[column.kind].opens()).cloned().collect();
                    let mut trial_nodes = nodes_left;
                    trial.dive_on(canon, needs, &mut trial_pool, &mut trial_nodes, limits, None);
                    if limits.stop_now().is_some() {
                        return None;
                    }
                    (trial.placed_new_copies(), Some(trial))
                }
            };
            if best.as_ref().is_none_or(|&(_, most, _)| placed > most) {
                best = Some((index, placed, trial));
            }
            if placed >= lookahead.target {
                break;
            }
        }
        best
    }

    /// What the LP may fill this round: per pool type, its openings left over the AZs (idle
    /// instances and launches, at most the budget and the copies missing), and the free room
    /// of instances in the fleet grouped by type and room (at most [`ROOM_KINDS`] groups, most
    /// room first), each only when some missing copy fits. By type name, then room:
    /// independent of input order.
    fn bin_kinds(&self, needs: &[Vec<Option<Resources>>], missing: &[u64]) -> Vec<Kind> {
        let problem = self.problem;
        let fits = |t: usize, room: &Resources| {
            needs
                .iter()
                .zip(missing)
                .any(|(row, &m)| m > 0 && row.get(t).copied().flatten().is_some_and(|need| need.fits_in(room)))
        };
        let mut types: Vec<usize> = problem.pool_types().collect();
        types.sort_by_key(|&t| self.type_rank.get(t).copied().unwrap_or(t));
        // No more instances than copies missing are of use: keeps unlimited launches (and no
        // MaxInstanceCount) out of the LP's coefficients.
        let budget = self.budget().min(missing.iter().sum());
        let mut kinds: Vec<Kind> = Vec::new();
        for &t in &types {
            let Some(capacity) = problem.types.get(t).map(|info| info.capacity) else { continue };
            let left = (0..problem.azs.len()).fold(0u64, |sum, z| sum.saturating_add(self.openings_left(t, z)));
            let left = left.min(budget);
            if left > 0 && fits(t, &capacity) {
                kinds.push(Kind { type_index: t, capacity, left, opening: true, rooms: Vec::new() });
            }
        }
        let mut rooms: Vec<(usize, Resources, usize)> = Vec::new();
        for list in &self.fleet_by_az {
            for &index in list {
                let instance = &self.instances[index];
                let Some(room) =
                    problem.types.get(instance.type_index).and_then(|info| info.capacity.minus(&instance.used))
                else {
                    continue;
                };
                if !instance.draining && fits(instance.type_index, &room) {
                    rooms.push((instance.type_index, room, index));
                }
            }
        }
        let key = |r: &Resources| (r.accelerators, r.milli_cpus, r.memory_mib);
        rooms.sort_by(|a, b| {
            key(&b.1)
                .cmp(&key(&a.1))
                .then(self.type_rank[a.0].cmp(&self.type_rank[b.0]))
                .then(self.instances[a.2].rank.cmp(&self.instances[b.2].rank))
        });
        let mut room_kinds: Vec<Kind> = Vec::new();
        for (t, room, index) in rooms {
            let full = room_kinds.len() >= ROOM_KINDS;
            match room_kinds.iter_mut().find(|kind| kind.type_index == t && kind.capacity == room) {
                Some(kind) => {
                    kind.left += 1;
                    kind.rooms.push(index);
                }
                None if !full => {
                    room_kinds.push(Kind {
                        type_index: t,
                        capacity: room,
                        left: 1,
                        opening: false,
                        rooms: vec![index],
                    });
                }
                None => {}
            }
        }
        kinds.extend(room_kinds);
        kinds
    }

    /// Places `column`'s copies still missing on one instance of `kind`: for an opening, a new
    /// instance of its type in the AZ that still opens one and holds the fewest copies of the
    /// pattern's components (then by AZ name); for room, the instance of the group in such an
    /// AZ (then by rank), taken out of the group. `column` and `needs` are in the order `canon`.
    fn use_pattern(&mut self, column: &Column, kind: &mut Kind, canon: &[usize], needs: &[Vec<Option<Resources>>]) {
        let t = column.type_index;
        let held = |z: usize| -> u64 {
            column
                .copies
                .iter()
                .enumerate()
                .filter(|&(_, &a)| a > 0)
                .filter_map(|(i, _)| canon.get(i))
                .map(|&c| self.az_copies.get(c).and_then(|row| row.get(z)).copied().unwrap_or(0))
                .sum()
        };
        let index = if kind.opens() {
            let Some(z) = (0..self.problem.azs.len())
                .filter(|&z| self.openings_left(t, z) > 0)
                .min_by_key(|&z| (held(z), self.az_rank.get(z).copied().unwrap_or(z)))
            else {
                return;
            };
            let Some(index) = self.open(TypeIndex::new(t), AzIndex::new(z)) else { return };
            index
        } else {
            let Some(position) = (0..kind.rooms.len()).min_by_key(|&p| {
                let instance = &self.instances[kind.rooms[p]];
                (held(instance.az), instance.rank)
            }) else {
                return;
            };
            kind.rooms.remove(position)
        };
        let Some(capacity) = self.problem.types.get(t).map(|info| info.capacity) else { return };
        for (i, &a) in column.copies.iter().enumerate() {
            let Some(&c) = canon.get(i) else { continue };
            let Some(need) = needs.get(i).and_then(|row| row.get(t)).copied().flatten() else { continue };
            let room = capacity.minus(&self.instances[index].used).unwrap_or(Resources::ZERO);
            let count = a.min(self.missing_new_copies(c)).min(room.copies_of(&need));
            self.place(c, index, super::place::as_count(count), &need);
        }
    }
}

/// The patterns row generation finds (module docs): starting from each component alone on
/// each kind, then per round the most valuable pattern of each kind at the current prices while
/// one is a violated row (σ only in the rows of openings). `None` when an LP solve fails.
fn generate(
    kinds: &[Kind],
    demands: &[Vec<Demand>],
    missing: &[u64],
    budget: u64,
    seed: &[Column],
    nodes_left: &mut u64,
    limits: &Limits,
) -> Option<Vec<Column>> {
    let mut lp = microlp::Problem::new(microlp::OptimizationDirection::Minimize);
    let sigma = lp.add_var(budget as f64, (0.0, f64::INFINITY));
    let nu: Vec<microlp::Variable> =
        kinds.iter().map(|kind| lp.add_var(kind.left as f64, (0.0, f64::INFINITY))).collect();
    // No upper bound on π: over the rows found so far a price above 1 can be the restricted
    // dual's optimum, and capping it would let row generation stop short of the LP optimum.
    let pi: Vec<microlp::Variable> = missing.iter().map(|&m| lp.add_var(m as f64, (0.0, f64::INFINITY))).collect();
    let mut columns: Vec<Column> = Vec::new();
    for (k, kind) in kinds.iter().enumerate() {
        for (c, demand) in demands[k].iter().enumerate() {
            let most = demand.copies.min(kind.capacity.copies_of(&demand.need));
            if demand.copies == 0 || most == 0 {
                continue;
            }
            let mut copies = vec![0; missing.len()];
            copies[c] = most;
            columns.push(Column { kind: k, type_index: kind.type_index, copies });
        }
    }
    for column in seed {
        if !columns.contains(column) {
            columns.push(column.clone());
        }
    }
    if columns.is_empty() {
        return None;
    }
    let dual_row = |column: &Column| {
        let mut expr = microlp::LinearExpr::empty();
        if kinds[column.kind].opens() {
            expr.add(sigma, 1.0);
        }
        expr.add(nu[column.kind], 1.0);
        for (c, &a) in column.copies.iter().enumerate() {
            if a > 0 {
                expr.add(pi[c], a as f64);
            }
        }
        expr
    };
    for column in &columns {
        lp.add_constraint(dual_row(column), microlp::ComparisonOp::Ge, column.size() as f64);
    }
    let mut solution = match lp.solve() {
        Ok(microlp::SolveOutcome::Solution(solution)) => solution,
        _ => return None,
    };
    for _ in 0..LP_ROUNDS {
        if limits.stop_now().is_some() {
            break;
        }
        let sigma_value = solution.var_value(sigma).max(0.0);
        let prices: Vec<f64> = pi.iter().map(|&var| (1.0 - solution.var_value(var)).max(0.0)).collect();
        let mut added = false;
        for (k, kind) in kinds.iter().enumerate() {
            if *nodes_left == 0 || limits.stop_now().is_some() {
                break;
            }
            let pricing = price_within(&demands[k], &prices, kind.capacity, (*nodes_left).min(PRICING_NODES));
            *nodes_left = nodes_left.saturating_sub(pricing.nodes);
            let (pattern, worth) = pricing.best;
            let right_side = if kind.opens() { sigma_value } else { 0.0 } + solution.var_value(nu[k]).max(0.0);
            if worth <= right_side + PRICE_TOLERANCE {
                continue;
            }
            let column = Column { kind: k, type_index: kind.type_index, copies: pattern };
            if columns.contains(&column) {
                continue; // Numerical stall: the LP has this row already.
            }
            solution = match solution.add_constraint(dual_row(&column), microlp::ComparisonOp::Ge, column.size() as f64)
            {
                Ok(microlp::SolveOutcome::Solution(solution)) => solution,
                _ => return None,
            };
            columns.push(column);
            added = true;
        }
        if !added {
            break;
        }
    }
    Some(columns)
}

/// The primal LP of the module docs over `columns`: the `λ` per column.
fn solve_primal(kinds: &[Kind], columns: &[Column], missing: &[u64], budget: u64) -> Option<Vec<f64>> {
    let mut lp = microlp::Problem::new(microlp::OptimizationDirection::Maximize);
    let vars: Vec<microlp::Variable> =
        columns.iter().map(|column| lp.add_var(column.size() as f64, (0.0, f64::INFINITY))).collect();
    let sum = |filter: &dyn Fn(&Column) -> f64| {
        let mut expr = microlp::LinearExpr::empty();
        for (column, &var) in columns.iter().zip(&vars) {
            let coefficient = filter(column);
            if coefficient > 0.0 {
                expr.add(var, coefficient);
            }
        }
        expr
    };
    lp.add_constraint(
        sum(&|column| if kinds[column.kind].opens() { 1.0 } else { 0.0 }),
        microlp::ComparisonOp::Le,
        budget as f64,
    );
    for (k, kind) in kinds.iter().enumerate() {
        lp.add_constraint(
            sum(&|column| if column.kind == k { 1.0 } else { 0.0 }),
            microlp::ComparisonOp::Le,
            kind.left as f64,
        );
    }
    for (c, &m) in missing.iter().enumerate() {
        if columns.iter().any(|column| column.copies[c] > 0) {
            lp.add_constraint(sum(&|column| column.copies[c] as f64), microlp::ComparisonOp::Le, m as f64);
        }
    }
    match lp.solve() {
        Ok(microlp::SolveOutcome::Solution(solution)) => {
            Some(vars.iter().map(|&var| solution.var_value(var).max(0.0)).collect())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::greedy::mixed::{MixedOpening, MixedPacking};
    use crate::fleet::{objective, FinalFleet};
    use crate::model::{InstanceTypeSpec, ScenarioBuilder};
    use crate::problem::Problem;

    const ROOM_PACKING: MixedPacking =
        MixedPacking { opening: MixedOpening::CopiesFirst, capped: false, summed: false, scarcity: false };

    /// One AZ, at most three 6-accelerator instances: `big` (4 accelerators) ×3, `small` (2) ×3.
    fn problem() -> Problem {
        let six = InstanceTypeSpec {
            instance_type: "ml.inf2.24xlarge".into(),
            accelerator_count: 6,
            accelerator_memory_gib: 32.0,
            v_cpu_count: 96.0,
            memory_in_mb: 393_216.0,
            hourly_price: Some(6.49),
        };
        let scenario = ScenarioBuilder::new(["a"])
            .instance_type(six)
            .pool("ml.inf2.24xlarge", 1)
            .instance_limits(0, Some(3))
            .component("big", 3, 4, 1.0, 1024)
            .component("small", 3, 2, 1.0, 1024)
            .build()
            .unwrap();
        Problem::new(&scenario).unwrap()
    }

    fn planner(problem: &Problem) -> Greedy<'_> {
        let mut planner = Greedy::new(problem);
        planner.scale_in();
        planner.index_fleet();
        planner
    }

    /// One instance ahead, the instance holding the most copies is three `small`; each `big`
    /// then needs an instance of its own and only two are left: 5 copies. The LP pairs one
    /// `big` with one `small` on each of the three: all 6.
    #[test]
    fn lp_openings_pair_big_and_small_copies_where_one_instance_ahead_does_not() {
        let problem = problem();
        let mut ahead = planner(&problem);
        ahead.pack_mixed(ROOM_PACKING);
        assert_eq!(ahead.placed_new_copies(), 5, "the one-ahead packing this pass exists for");
        let mut guided = planner(&problem);
        guided.pack_by_lp(&Limits::new());
        assert_eq!(guided.placed_new_copies(), 6);
        assert_eq!(guided.fleet_size, 3);
        for instance in guided.instances.iter().filter(|instance| instance.in_fleet) {
            assert_eq!(instance.copies.as_slice(), &[(0, 1), (1, 1)], "one big and one small on each");
        }
        let (applied, violations) = FinalFleet::apply(&problem, &guided.into_actions());
        assert!(violations.is_empty(), "{violations:?}");
        assert_eq!(objective(&problem, &applied).placed_copies, 6);
    }

    /// The LP never opens past MaxInstanceCount or places more copies than are missing, and
    /// with nothing missing it opens nothing.
    #[test]
    fn lp_openings_stay_within_the_budget_and_the_missing_copies() {
        let problem = problem();
        let mut guided = planner(&problem);
        guided.pack_by_lp(&Limits::new());
        let opened = guided.fleet_size;
        let placed = guided.placed_new_copies();
        guided.pack_by_lp(&Limits::new());
        assert_eq!((guided.fleet_size, guided.placed_new_copies()), (opened, placed), "nothing left to do");
        assert!(guided.fleet_size <= 3);
        assert_eq!(guided.missing_copies(), 0);
    }
}
