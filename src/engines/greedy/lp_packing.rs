//! LP-guided openings: which instances to open for the missing copies, chosen by the
//! configuration LP of L1 instead of one instance ahead.
//!
//! When the instances left (MaxInstanceCount, launch limits) cannot hold every copy, L1 is
//! decided by which copies go on which type: a copy that fills a whole instance of one type may
//! take a third of another's, and a small copy fills the gap a big one leaves. The other passes
//! open one instance at a time, each the best for the copies missing then (most copies, most
//! preferred), so they spend the budget on instances that look good alone — many small copies
//! first — and end with big copies that each need an instance of their own. The configuration
//! LP sees the whole budget at once. Its columns are *patterns*, multisets of copies that fit one
//! instance of a pool type:
//!
//! ```text
//! max Σ_p |p| λ_p   s.t.   Σ_p λ_p ≤ B            (instances MaxInstanceCount still allows)
//!                          Σ_{p on t} λ_p ≤ L_t   (openings of type t left: idle instances, launches)
//!                          Σ_p a_cp λ_p ≤ m_c     (missing copies of component c)
//!                          λ ≥ 0
//! ```
//!
//! microlp gives no duals, so columns come from row generation on the dual
//! (`min B σ + Σ L_t ν_t + Σ m_c π_c`, `σ + ν_t + Σ_c a_cp π_c ≥ |p|`): the pattern of type `t`
//! most worth `Σ_c a_c (1 − π_c)` (the knapsack shared with the exact planner,
//! [`crate::engines::knapsack::price_several`]) is a violated row while it is worth more than
//! `σ + ν_t`. With the columns found, the primal LP gives `λ`; each pattern is opened `⌊λ_p⌋`
//! times, largest patterns first, each instance in the AZ of its type that still opens and
//! holds the fewest copies of the pattern's components (balance), then the main pass places what
//! is left. It runs as one rescue pass (after the fleet's free room is filled), so its plan
//! wins only when strictly better than the others.

use super::mixed::MixedPacking;
use super::Greedy;
use crate::engines::knapsack::{price_within, Demand};
use crate::index::{AzIndex, TypeIndex};
use crate::problem::Resources;

/// Rounds of the dive (LP, then its whole columns opened) at most.
const DIVE_ROUNDS: usize = 64;

/// Most row-generation rounds (each adds at least one pattern).
const LP_ROUNDS: usize = 200;

/// Depth-first pricing nodes one pass may use in all, over the dive's rounds (then the columns
/// found so far are the LP's: a heuristic needs good columns, not the LP optimum).
const PRICING_WORK: u64 = 200_000;

/// Depth-first nodes one pricing call may use.
const PRICING_NODES: u64 = 20_000;

/// A pattern is a violated dual row only when worth this much more than its row's right side.
const PRICE_TOLERANCE: f64 = 1e-7;

/// One column of the LP: a pattern of copies on one pool type.
#[derive(Debug, Clone, PartialEq)]
struct Column {
    type_index: usize,
    /// Copies per component (indexed like the problem's components).
    copies: Vec<u64>,
}

impl Column {
    fn size(&self) -> u64 {
        self.copies.iter().sum()
    }
}

impl Greedy<'_> {
    /// Fills the fleet's free room (`packing`'s room fill), then opens the instances the
    /// configuration LP chooses for the copies still missing (module docs). Does nothing when
    /// no copy is missing, no opening is left or the LP fails.
    pub(super) fn pack_by_lp(&mut self, packing: MixedPacking) {
        self.fill_room_mixed(packing);
        let needs = super::fitting_needs(self.problem);
        // Columns of earlier rounds seed the next (capped at what is still missing).
        let mut pool: Vec<Column> = Vec::new();
        let mut nodes_left = PRICING_WORK;
        for _ in 0..DIVE_ROUNDS {
            if !self.open_lp_round(&needs, &mut pool, &mut nodes_left) {
                break;
            }
        }
    }

    /// One round of the dive: the LP over what is missing and the openings left, then each
    /// pattern opened `⌊λ_p⌋` times (or, when every `λ_p` is below 1, the largest once); false
    /// when nothing was opened (nothing missing, no opening left, the LP failed or is empty).
    fn open_lp_round(
        &mut self,
        needs: &[Vec<Option<Resources>>],
        pool: &mut Vec<Column>,
        nodes_left: &mut u64,
    ) -> bool {
        let problem = self.problem;
        let missing: Vec<u64> = (0..problem.components.len()).map(|c| self.missing_new_copies(c)).collect();
        let budget = self.budget();
        if missing.iter().all(|&m| m == 0) || budget == 0 {
            return false;
        }
        // Openings left per pool type, over its AZs (at most the budget).
        let openings: Vec<(usize, u64)> = problem
            .pool_types()
            .filter_map(|t| {
                let left = (0..problem.azs.len()).fold(0u64, |sum, z| sum.saturating_add(self.openings_left(t, z)));
                let left = left.min(budget);
                let holds_one =
                    needs.iter().zip(&missing).any(|(row, &m)| m > 0 && row.get(t).copied().flatten().is_some());
                (left > 0 && holds_one).then_some((t, left))
            })
            .collect();
        if openings.is_empty() {
            return false;
        }
        let budget = budget.min(openings.iter().fold(0u64, |sum, &(_, left)| sum.saturating_add(left)));
        let demands: Vec<Vec<Demand>> = openings
            .iter()
            .map(|&(t, _)| {
                needs
                    .iter()
                    .zip(&missing)
                    .map(|(row, &m)| match row.get(t).copied().flatten() {
                        Some(need) => Demand { copies: m, need },
                        None => Demand { copies: 0, need: Resources::ZERO },
                    })
                    .collect()
            })
            .collect();
        let seed: Vec<Column> = pool
            .iter()
            .map(|column| Column {
                type_index: column.type_index,
                copies: column.copies.iter().zip(&missing).map(|(&a, &m)| a.min(m)).collect(),
            })
            .filter(|column| column.size() > 0 && openings.iter().any(|&(t, _)| t == column.type_index))
            .collect();
        let Some(columns) = generate(problem, &openings, &demands, &missing, budget, &seed, nodes_left) else {
            return false;
        };
        let Some(lambda) = solve_primal(&openings, &columns, &missing, budget) else { return false };
        let mut chosen: Vec<(u64, &Column)> = columns
            .iter()
            .zip(&lambda)
            .map(|(column, &value)| ((value + 1e-6).floor().max(0.0) as u64, column))
            .filter(|&(count, _)| count > 0)
            .collect();
        if chosen.is_empty() {
            // Every λ below 1: the column the LP uses most, once (largest pattern on ties).
            let most =
                columns.iter().zip(&lambda).filter(|&(_, &value)| value > 1e-6).max_by(|a, b| {
                    a.1.total_cmp(b.1).then(a.0.size().cmp(&b.0.size())).then(b.0.copies.cmp(&a.0.copies))
                });
            let Some((column, _)) = most else { return false };
            chosen.push((1, column));
        }
        // Largest patterns first, then by type name and copies: independent of input order.
        chosen.sort_by(|a, b| {
            b.1.size()
                .cmp(&a.1.size())
                .then(self.type_rank[a.1.type_index].cmp(&self.type_rank[b.1.type_index]))
                .then(b.1.copies.cmp(&a.1.copies))
        });
        let before = self.placed_new_copies();
        for (count, column) in chosen {
            for _ in 0..count {
                if self.budget() == 0 {
                    break;
                }
                self.open_pattern(column, needs);
            }
        }
        *pool = columns;
        self.placed_new_copies() > before
    }

    /// Idle instances plus launches left of (type `t`, AZ `z`).
    fn openings_left(&self, t: usize, z: usize) -> u64 {
        let idle = self.idle.get(t).and_then(|row| row.get(z)).map_or(0, Vec::len) as u64;
        idle.saturating_add(self.launches_left(TypeIndex::new(t), AzIndex::new(z)))
    }

    /// Opens one instance of `column`'s type in the AZ that still opens one and holds the
    /// fewest copies of its components (then by AZ name), and places the pattern's copies still
    /// missing there.
    fn open_pattern(&mut self, column: &Column, needs: &[Vec<Option<crate::problem::Resources>>]) {
        let t = column.type_index;
        let held = |z: usize| -> u64 {
            column
                .copies
                .iter()
                .enumerate()
                .filter(|&(_, &a)| a > 0)
                .map(|(c, _)| self.az_copies.get(c).and_then(|row| row.get(z)).copied().unwrap_or(0))
                .sum()
        };
        let Some(z) = (0..self.problem.azs.len())
            .filter(|&z| self.openings_left(t, z) > 0)
            .min_by_key(|&z| (held(z), self.az_rank.get(z).copied().unwrap_or(z)))
        else {
            return;
        };
        let Some(index) = self.open(TypeIndex::new(t), AzIndex::new(z)) else { return };
        let Some(capacity) = self.problem.types.get(t).map(|info| info.capacity) else { return };
        for (c, &a) in column.copies.iter().enumerate() {
            let Some(need) = needs.get(c).and_then(|row| row.get(t)).copied().flatten() else { continue };
            let room = capacity.minus(&self.instances[index].used).unwrap_or(Resources::ZERO);
            let count = a.min(self.missing_new_copies(c)).min(room.copies_of(&need));
            self.place(c, index, super::place::as_count(count), &need);
        }
    }
}

/// The dual LP of the module docs over the rows (patterns) found so far: variables σ, ν_t (one
/// per opening type) and π_c; re-solved from the previous basis as each row is added.
struct DualLp {
    sigma: microlp::Variable,
    nu: Vec<microlp::Variable>,
    pi: Vec<microlp::Variable>,
    solution: microlp::Solution,
}

impl DualLp {
    fn row(&self, position: usize, column: &Column) -> microlp::LinearExpr {
        let mut expr = microlp::LinearExpr::empty();
        expr.add(self.sigma, 1.0);
        expr.add(self.nu[position], 1.0);
        for (c, &a) in column.copies.iter().enumerate() {
            if a > 0 {
                expr.add(self.pi[c], a as f64);
            }
        }
        expr
    }

    fn add(self, position: usize, column: &Column) -> Option<DualLp> {
        let expr = self.row(position, column);
        match self.solution.add_constraint(expr, microlp::ComparisonOp::Ge, column.size() as f64) {
            Ok(microlp::SolveOutcome::Solution(solution)) => Some(DualLp { solution, ..self }),
            _ => None,
        }
    }
}

/// The patterns row generation finds (module docs): starting from each component alone on
/// each type, then per round the most valuable pattern of each type at the current prices while
/// one is a violated row. `None` when an LP solve fails.
fn generate(
    problem: &crate::problem::Problem,
    openings: &[(usize, u64)],
    demands: &[Vec<Demand>],
    missing: &[u64],
    budget: u64,
    seed: &[Column],
    nodes_left: &mut u64,
) -> Option<Vec<Column>> {
    let mut lp = microlp::Problem::new(microlp::OptimizationDirection::Minimize);
    let sigma = lp.add_var(budget as f64, (0.0, f64::INFINITY));
    let nu: Vec<microlp::Variable> =
        openings.iter().map(|&(_, left)| lp.add_var(left as f64, (0.0, f64::INFINITY))).collect();
    // A price above 1 is never needed: one copy alone is a pattern worth 1.
    let pi: Vec<microlp::Variable> = missing.iter().map(|&m| lp.add_var(m as f64, (0.0, 1.0))).collect();
    let mut columns: Vec<(usize, Column)> = Vec::new();
    for (position, &(t, _)) in openings.iter().enumerate() {
        let capacity = problem.types.get(t)?.capacity;
        for (c, demand) in demands[position].iter().enumerate() {
            let most = demand.copies.min(capacity.copies_of(&demand.need));
            if demand.copies == 0 || most == 0 {
                continue;
            }
            let mut copies = vec![0; missing.len()];
            copies[c] = most;
            columns.push((position, Column { type_index: t, copies }));
        }
    }
    for column in seed {
        let Some(position) = openings.iter().position(|&(t, _)| t == column.type_index) else { continue };
        if !columns.iter().any(|(p, existing)| *p == position && existing == column) {
            columns.push((position, column.clone()));
        }
    }
    if columns.is_empty() {
        return None;
    }
    for (position, column) in &columns {
        let mut expr = microlp::LinearExpr::empty();
        expr.add(sigma, 1.0);
        expr.add(nu[*position], 1.0);
        for (c, &a) in column.copies.iter().enumerate() {
            if a > 0 {
                expr.add(pi[c], a as f64);
            }
        }
        lp.add_constraint(expr, microlp::ComparisonOp::Ge, column.size() as f64);
    }
    let solution = match lp.solve() {
        Ok(microlp::SolveOutcome::Solution(solution)) => solution,
        _ => return None,
    };
    let mut dual = DualLp { sigma, nu, pi, solution };
    for _ in 0..LP_ROUNDS {
        let sigma_value = dual.solution.var_value(dual.sigma).max(0.0);
        let prices: Vec<f64> = dual.pi.iter().map(|&var| (1.0 - dual.solution.var_value(var)).max(0.0)).collect();
        let mut added = false;
        for (position, &(t, _)) in openings.iter().enumerate() {
            let capacity = problem.types.get(t)?.capacity;
            if *nodes_left == 0 {
                break;
            }
            let pricing = price_within(&demands[position], &prices, capacity, (*nodes_left).min(PRICING_NODES));
            *nodes_left = nodes_left.saturating_sub(pricing.nodes);
            let (pattern, worth) = pricing.best;
            let right_side = sigma_value + dual.solution.var_value(dual.nu[position]).max(0.0);
            if worth <= right_side + PRICE_TOLERANCE {
                continue;
            }
            let column = Column { type_index: t, copies: pattern };
            if columns.iter().any(|(p, existing)| *p == position && *existing == column) {
                continue; // Numerical stall: the LP has this row already.
            }
            dual = dual.add(position, &column)?;
            columns.push((position, column));
            added = true;
        }
        if !added {
            break;
        }
    }
    Some(columns.into_iter().map(|(_, column)| column).collect())
}

/// The primal LP of the module docs over `columns`: the `λ` per column.
fn solve_primal(openings: &[(usize, u64)], columns: &[Column], missing: &[u64], budget: u64) -> Option<Vec<f64>> {
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
    lp.add_constraint(sum(&|_| 1.0), microlp::ComparisonOp::Le, budget as f64);
    for &(t, left) in openings {
        lp.add_constraint(
            sum(&|column| if column.type_index == t { 1.0 } else { 0.0 }),
            microlp::ComparisonOp::Le,
            left as f64,
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
    use crate::engines::greedy::mixed::MixedOpening;
    use crate::fleet::{objective, FinalFleet};
    use crate::model::{InstanceTypeSpec, ScenarioBuilder};
    use crate::problem::Problem;

    const PACKING: MixedPacking =
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
        ahead.pack_mixed(PACKING);
        assert_eq!(ahead.placed_new_copies(), 5, "the one-ahead packing this pass exists for");
        let mut guided = planner(&problem);
        guided.pack_by_lp(PACKING);
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
        guided.pack_by_lp(PACKING);
        let opened = guided.fleet_size;
        let placed = guided.placed_new_copies();
        guided.pack_by_lp(PACKING);
        assert_eq!((guided.fleet_size, guided.placed_new_copies()), (opened, placed), "nothing left to do");
        assert!(guided.fleet_size <= 3);
        assert_eq!(guided.missing_copies(), 0);
    }
}
