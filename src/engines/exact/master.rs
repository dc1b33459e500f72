//! The master integer program (see `docs/formulation.md`).
//!
//! New instances of one (type, AZ) are interchangeable, so an *aggregated* group only has an
//! instance count `y[t,z]` and per-component copy counts `x[c,t,z]`, with the resources summed
//! over the group plus valid bin-packing cuts. That is a relaxation of the packing; the caller
//! packs each group exactly afterwards and turns a group that does not pack into a *slot*
//! group, which models each of its instances explicitly (exact). Existing instances are
//! always modelled one by one (they are distinct: fixed copies, own type and AZ).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use super::backend::{
    Mip, MipBackend, MipOutcome, MipSolution, Sense, SolveRequest, Termination, Var as Variable, CHECK_TOLERANCE,
};
use super::patterns::pattern_prices;
use crate::engines::knapsack::Demand;
use crate::index::{AzIndex, ComponentIndex, TypeIndex};
use crate::plan::CostUnit;
use crate::problem::{Component, ExistingInstance, InstanceTypeInfo, Problem, Resources};

/// A (type index, AZ index) group of new instances.
pub(crate) type Group = (TypeIndex, AzIndex);

/// Largest integer bound handed to the solver (microlp integers are `i32`).
const INTEGER_CAP: u64 = 1_000_000;

/// One level of the lexicographic objective, always expressed as "minimise".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Goal {
    /// L1: minimise minus the copies placed.
    Unplaced,
    /// L2: minimise the balance excess.
    Balance,
    /// L3: minimise the instances of one priority.
    Priority(u8),
    /// L4: minimise the cost in one unit. The cost rule is not linear (`fleet::cost_unit`: one
    /// unpriced instance makes every paid instance cost one unit); in each unit it is, so L4 is
    /// solved once per unit.
    Cost(CostUnit),
}

/// How the groups of new instances are modelled.
#[derive(Debug, Clone, Default)]
pub(crate) struct Layout {
    /// Groups modelled instance by instance (exact); the rest are aggregated.
    pub slot_groups: BTreeSet<Group>,
    /// Add the bin-packing cuts to aggregated groups.
    pub cuts: bool,
}

/// A solution of the master problem, rounded to integers.
#[derive(Debug, Clone, Default)]
pub(crate) struct MasterSolution {
    /// New instances per group.
    pub launches: BTreeMap<Group, u32>,
    /// Copies per component in aggregated groups.
    pub group_copies: BTreeMap<Group, Vec<(usize, u32)>>,
    /// Contents of the used instances of slot groups.
    pub slot_bins: BTreeMap<Group, Vec<Vec<(usize, u32)>>>,
    /// Whether each existing instance is kept.
    pub keep: Vec<bool>,
    /// New copies on existing instances: (component, instance) → count.
    pub add: BTreeMap<(usize, usize), u32>,
    /// Removed existing copies: (component, instance) → count.
    pub remove: BTreeMap<(usize, usize), u32>,
    /// Value of the goal that was optimised.
    pub value: f64,
    /// Values of every integer variable, in creation order: a warm start for the next level
    /// (a solution of level k satisfies level k+1's model, whose variables are the same).
    pub integers: Vec<f64>,
}

/// Why a solve stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Limit {
    /// Wall clock.
    Time,
    /// Branch-and-bound nodes.
    Nodes,
}

/// Outcome of one solve.
#[derive(Debug)]
pub(crate) enum Solved {
    /// A solution; `proven` when the solver proved it optimal.
    Solution { solution: MasterSolution, proven: bool, limit: Option<Limit>, best_bound: Option<f64> },
    /// The model has no solution.
    Infeasible,
    /// A limit fired before any solution.
    Interrupted { limit: Limit, best_bound: Option<f64> },
    /// The solver failed.
    Error(String),
}

/// A known plan (the greedy plan) as values of the master's variables, for warm starts.
#[derive(Debug, Clone, Default)]
pub(crate) struct Hint {
    /// New instances per group.
    pub launches: BTreeMap<Group, u32>,
    /// Contents of the non-empty new instances per group.
    pub bins: BTreeMap<Group, Vec<BTreeMap<usize, u32>>>,
    /// Whether each existing instance is kept.
    pub keep: Vec<bool>,
    /// New copies on existing instances.
    pub add: BTreeMap<(usize, usize), u32>,
    /// Removed existing copies.
    pub remove: BTreeMap<(usize, usize), u32>,
    /// Final copies per component and AZ.
    pub per_az: Vec<Vec<u64>>,
}

impl Hint {
    /// The hint for a plan's actions.
    pub fn from_actions(problem: &Problem, actions: &[crate::plan::Action]) -> Hint {
        let (fleet, _) = crate::fleet::FinalFleet::apply(problem, actions);
        let mut hint =
            Hint { keep: vec![false; problem.fleet().len()], per_az: fleet.copies_per_az(problem), ..Hint::default() };
        for instance in &fleet.instances {
            match instance.existing {
                Some(i) => {
                    if let Some(keep) = hint.keep.get_mut(i) {
                        *keep = true;
                    }
                    for (&c, &n) in &instance.new_copies {
                        hint.add.insert((c, i), n);
                    }
                }
                None => {
                    let group = (TypeIndex::new(instance.type_index), AzIndex::new(instance.az_index));
                    *hint.launches.entry(group).or_insert(0) += 1;
                    if !instance.copies.is_empty() {
                        hint.bins.entry(group).or_default().push(instance.copies.clone());
                    }
                }
            }
        }
        // Final instance of each kept existing instance, found once (not a scan per instance).
        let mut final_of_existing: Vec<Option<usize>> = vec![None; problem.fleet().len()];
        for (position, instance) in fleet.instances.iter().enumerate() {
            if let Some(slot) = instance.existing.and_then(|i| final_of_existing.get_mut(i)) {
                slot.get_or_insert(position);
            }
        }
        for (i, existing) in problem.fleet().iter().enumerate() {
            let left = final_of_existing.get(i).copied().flatten().and_then(|position| fleet.instances.get(position));
            for &(c, count) in &existing.copies {
                let stays = left.map_or(0, |instance| {
                    instance.copies_of(c).saturating_sub(instance.new_copies.get(&c).copied().unwrap_or(0))
                });
                if count > stays {
                    hint.remove.insert((c, i), count - stays);
                }
            }
        }
        hint
    }
}

/// Where a solve's warm start comes from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Warm<'a> {
    /// No warm start.
    None,
    /// The previous level's integer values (same model, so same variable order).
    Previous(&'a [f64]),
    /// A known plan.
    Plan(&'a Hint),
}

/// Variations of one solve used to shortcut the optimality proof of a level.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Extra<'a> {
    /// Solve the LP relaxation only.
    pub relax: bool,
    /// Require the goal to be at most this (a probe at a known lower bound).
    pub at_most: Option<f64>,
    /// Require the goal to be at least this (a proven lower bound, as a cut).
    pub at_least: Option<f64>,
    /// Relax-and-fix, stage 1: the copy counts of aggregated groups are continuous, and one
    /// integer per (component, AZ) holds its final copies there; these are created last, in
    /// component-major order over every AZ, so they are the tail of `MasterSolution::integers`
    /// (see [`counts_from_tail`]). A relaxation of the master problem.
    pub relax_copies: bool,
    /// Relax-and-fix, stage 2: every component's final copies per AZ fixed to these counts
    /// (a restriction: a solution is feasible for the master, infeasibility proves nothing).
    pub counts: Option<&'a BTreeMap<(ComponentIndex, AzIndex), u64>>,
}

/// The per-(component, AZ) counts of a stage-1 (`relax_copies`) solution: the last
/// `components × AZs` integers, component-major.
pub(crate) fn counts_from_tail(
    problem: &Problem,
    integers: &[f64],
) -> Option<BTreeMap<(ComponentIndex, AzIndex), u64>> {
    let zones = problem.azs().len();
    let cells = problem.components().len() * zones;
    let tail = integers.get(integers.len().checked_sub(cells)?..)?;
    Some(
        tail.iter()
            .enumerate()
            .filter(|(_, &value)| value > 0.5)
            .map(|(index, &value)| {
                ((ComponentIndex::new(index / zones), AzIndex::new(index % zones)), value.round() as u64)
            })
            .collect(),
    )
}

/// Most eligible components of a type for which the pattern-LP cut is computed (pricing is a
/// depth-first knapsack over them).
const PATTERN_COMPONENTS: usize = 150;

/// Column-generation rounds for the pattern-LP cut of one type.
const PATTERN_ROUNDS: usize = 300;

/// Explicit limits for one solve.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Limits {
    /// Wall-clock deadline.
    pub deadline: Option<Instant>,
    /// Branch-and-bound nodes per solve.
    pub node_limit: Option<u64>,
}

/// Precomputed facts about the problem shared by every solve.
pub(crate) struct Facts<'a> {
    pub problem: &'a Problem,
    /// The solver every level is handed to.
    pub backend: &'a dyn MipBackend,
    /// Most new copies per component (0 for components with an excess).
    pub need: Vec<u64>,
    /// Existing copies above CopyCount per component (must be removed).
    pub excess: Vec<u64>,
    /// Groups that may launch, with their launch upper bound.
    pub groups: BTreeMap<Group, u64>,
    /// Instance types without a price that could appear in the final fleet.
    pub unpriced_possible: bool,
    /// Per pool type, a price per copy of each component (0 where not eligible) such that one
    /// instance of the type holds copies worth at most 1: the pattern-LP cut `Σ price·x ≤ y`
    /// of every aggregated group (`docs/formulation.md`, constraint 2). Empty until
    /// [`Facts::add_pattern_prices`].
    pub pattern_prices: BTreeMap<usize, Vec<f64>>,
}

impl<'a> Facts<'a> {
    pub fn new(problem: &'a Problem, backend: &'a dyn MipBackend) -> Facts<'a> {
        let existing = problem.existing_copies_per_component();
        let mut need = Vec::new();
        let mut excess = Vec::new();
        for (component, &have) in problem.components().iter().zip(&existing) {
            let want = u64::from(component.copy_count);
            need.push(want.saturating_sub(have));
            excess.push(have.saturating_sub(want));
        }
        let scaling = problem.scaling();
        let mut groups = BTreeMap::new();
        for t in problem.pool_types() {
            let Some(info) = problem.instance_types().get(t) else {
                continue;
            };
            let items: u64 = problem
                .components()
                .iter()
                .zip(&need)
                .filter(|(component, _)| eligible_need(problem, component, t, &info.capacity).is_some())
                .map(|(_, &n)| n)
                .sum();
            let mut upper = items.saturating_add(u64::from(scaling.min_instances));
            if let Some(max) = scaling.max_instances {
                upper = upper.min(u64::from(max));
            }
            for z in 0..problem.azs().len() {
                let mut bound = upper;
                let group = (TypeIndex::new(t), AzIndex::new(z));
                if let Some(total) = problem.launch_limit(group.0, group.1).total() {
                    bound = bound.min(u64::from(total));
                }
                let bound = bound.min(INTEGER_CAP);
                if bound > 0 {
                    groups.insert(group, bound);
                }
            }
        }
        let types = problem.instance_types();
        let unpriced_possible = groups
            .keys()
            .any(|&(t, _)| types.get(t.index()).is_some_and(|info| info.hourly_price.is_none()))
            || problem.fleet().iter().any(|i| types.get(i.type_index).is_some_and(|info| info.hourly_price.is_none()));
        Facts { problem, backend, need, excess, groups, unpriced_possible, pattern_prices: BTreeMap::new() }
    }

    /// Computes [`Facts::pattern_prices`] by column generation (`patterns.rs`) for every pool
    /// type with at most [`PATTERN_COMPONENTS`] eligible components. Deterministic without a deadline: bounded by
    /// rounds and pricing nodes, and by `deadline` when there is one.
    pub fn add_pattern_prices(&mut self, deadline: Option<Instant>) {
        let problem = self.problem;
        for t in problem.pool_types() {
            let Some(info) = problem.instance_types().get(t) else { continue };
            if !self.groups.keys().any(|&(group_type, _)| group_type.index() == t) {
                continue;
            }
            let demands: Vec<Demand> = problem
                .components()
                .iter()
                .zip(&self.need)
                .map(|(component, &copies)| match eligible_need(problem, component, t, &info.capacity) {
                    Some(need) if copies > 0 => Demand { copies, need },
                    _ => Demand { copies: 0, need: Resources::ZERO },
                })
                .collect();
            let eligible = demands.iter().filter(|d| d.copies > 0).count();
            if !(2..=PATTERN_COMPONENTS).contains(&eligible) {
                continue;
            }
            let Some(prices) = pattern_prices(&demands, info.capacity, PATTERN_ROUNDS, deadline) else { continue };
            // Only where the pattern LP sees more than the resource sums do (each resource's
            // `Σ n·req / cap`, which the packing rows already give): a cut with fractional
            // coefficients that adds nothing only costs the solver numerically.
            let lp_value: f64 = demands.iter().zip(&prices.per_copy).map(|(d, p)| d.copies as f64 * p).sum();
            let resource_sums = (0..3)
                .filter(|&r| resource(&info.capacity, r) > 0)
                .map(|r| {
                    let total: f64 = demands.iter().map(|d| d.copies as f64 * resource(&d.need, r) as f64).sum();
                    total / resource(&info.capacity, r) as f64
                })
                .fold(0.0f64, f64::max);
            if lp_value > resource_sums + 1e-6 {
                self.pattern_prices.insert(t, prices.per_copy);
            }
        }
    }

    /// Priorities that instances of the final fleet can have, worst first.
    pub fn priorities(&self) -> Vec<u8> {
        let types = self.problem.instance_types();
        let mut set = BTreeSet::new();
        for &(t, _) in self.groups.keys() {
            if let Some(info) = types.get(t.index()) {
                set.insert(info.priority);
            }
        }
        for instance in self.problem.fleet() {
            if let Some(info) = types.get(instance.type_index) {
                set.insert(info.priority);
            }
        }
        set.into_iter().rev().collect()
    }

    /// True when the cost of a fleet is determined by its instance count per priority: every
    /// type that can be in the fleet is priced, types of one priority share one price, and
    /// nothing runs in or launches into a reservation.
    pub fn cost_follows_from_priorities(&self) -> bool {
        let problem = self.problem;
        let types = problem.instance_types();
        if self.unpriced_possible || problem.fleet().iter().any(|instance| instance.reserved) {
            return false;
        }
        if self.groups.keys().any(|&(t, z)| problem.launch_limit(t, z).reserved > 0) {
            return false;
        }
        let used = self.groups.keys().map(|&(t, _)| t.index()).chain(problem.fleet().iter().map(|i| i.type_index));
        let mut price_of: BTreeMap<u8, i128> = BTreeMap::new();
        for t in used {
            let Some(info) = types.get(t) else {
                return false;
            };
            let Some(price) = info.hourly_price else {
                return false;
            };
            let micros = crate::plan::to_micros(price);
            if *price_of.entry(info.priority).or_insert(micros) != micros {
                return false;
            }
        }
        true
    }

    /// True when some component has a balance term that can be non-zero.
    pub fn has_balance(&self) -> bool {
        self.problem.azs().len() > 1 && self.problem.components().iter().any(|c| c.max_imbalance.is_some())
    }
}

/// Requirement of a new copy of `component` on pool type `t`, if it may run there and fits.
/// How many integer variables the master model of `facts` has, about: one copy count per
/// (launch group, eligible component), and per existing instance a keep flag, a removal per
/// component it holds and an addition per component it could take. Computed without building
/// the model, so a problem too large for the solver is refused in microseconds, not after
/// seconds of model building.
pub(crate) fn master_size_estimate(facts: &Facts<'_>) -> u64 {
    let problem = facts.problem;
    let types = problem.instance_types();
    let eligible_per_type: Vec<u64> = types
        .iter()
        .enumerate()
        .map(|(t, info)| {
            problem
                .components()
                .iter()
                .enumerate()
                .filter(|&(c, component)| {
                    facts.need.get(c).copied().unwrap_or(0) > 0
                        && eligible_need(problem, component, t, &info.capacity).is_some()
                })
                .count() as u64
        })
        .collect();
    let eligible = |t: usize| eligible_per_type.get(t).copied().unwrap_or(0);
    let launched: u64 = facts.groups.keys().map(|&(t, _)| 1 + eligible(t.index())).sum();
    let existing: u64 =
        problem.fleet().iter().map(|instance| 1 + instance.copies.len() as u64 + eligible(instance.type_index)).sum();
    launched.saturating_add(existing)
}

pub(crate) fn eligible_need(
    problem: &Problem,
    component: &crate::problem::Component,
    t: usize,
    capacity: &Resources,
) -> Option<Resources> {
    let requirement = component.placement_requirement(problem, t)?;
    (capacity.copies_of(&requirement.resources) >= 1).then_some(requirement.resources)
}

/// One resource of a [`Resources`] (0 accelerators, 1 milli-CPUs, 2 memory).
pub(crate) use crate::engines::knapsack::resource;

/// A linear expression with a constant.
#[derive(Default, Clone)]
struct Expr {
    terms: Vec<(Variable, f64)>,
    constant: f64,
}

impl Expr {
    fn add(&mut self, var: Variable, coefficient: f64) {
        self.terms.push((var, coefficient));
    }
}

struct Model {
    lp: Mip,
    /// Solve the LP relaxation (integers become continuous).
    relax: bool,
    /// Integer variables in creation order (the warm start is given for these).
    ints: Vec<Variable>,
}

impl Model {
    fn int(&mut self, upper: u64) -> Variable {
        self.int_costing(upper, 0.0)
    }
    /// An integer variable with an objective coefficient.
    fn int_costing(&mut self, upper: u64, cost: f64) -> Variable {
        let upper = i32::try_from(upper.min(INTEGER_CAP)).unwrap_or(i32::MAX);
        let var = if self.relax {
            self.lp.add_var(cost, (0.0, f64::from(upper)))
        } else {
            self.lp.add_integer_var(cost, (0, upper))
        };
        self.ints.push(var);
        var
    }
    fn constrain(&mut self, terms: &[(Variable, f64)], op: Sense, rhs: f64) {
        self.lp.add_row(terms.to_vec(), op, rhs);
    }
}

/// One instance slot of a slot group: its "used" variable and copies per component.
type Slot = (Variable, Vec<(usize, Variable)>);

/// Variables of one built model.
struct Vars {
    launches: BTreeMap<Group, Variable>,
    group_copies: BTreeMap<Group, Vec<(usize, Variable)>>,
    slots: BTreeMap<Group, Vec<Slot>>,
    keep: Vec<Variable>,
    add: BTreeMap<(usize, usize), Variable>,
    remove: BTreeMap<(usize, usize), Variable>,
}

/// Conflict cuts for one aggregated group. Two copies *conflict* when they do not fit on one
/// instance together. For a set `S` of components whose copies pairwise conflict (each also
/// with itself), every instance holds at most one copy from `S`; the components `D` that
/// conflict with every member of `S` only use the other instances. Hence, per resource r:
/// `cap_r · Σ_S x + Σ_D need_r · x ≤ cap_r · y`. The sets are grown greedily from each seed.
/// Most components needing more than half an instance for which a launch group gets conflict
/// cuts.
const MAX_CONFLICT_CUT_COMPONENTS: usize = 200;

fn conflict_cuts(model: &mut Model, y: Variable, capacity: &Resources, copies: &[(usize, Variable, Resources)]) {
    let conflict = |a: &Resources, b: &Resources| !a.plus(b).fits_in(capacity);
    let lonely: Vec<usize> = (0..copies.len()).filter(|&i| conflict(&copies[i].2, &copies[i].2)).collect();
    // The clique search is cubic in the lonely components; the cuts only tighten the LP, so a
    // group with very many of them goes without.
    if lonely.len() > MAX_CONFLICT_CUT_COMPONENTS {
        return;
    }
    let mut seen: BTreeSet<Vec<usize>> = BTreeSet::new();
    for &seed in &lonely {
        let mut clique = vec![seed];
        for &other in &lonely {
            if other != seed && clique.iter().all(|&member| conflict(&copies[member].2, &copies[other].2)) {
                clique.push(other);
            }
        }
        clique.sort_unstable();
        if !seen.insert(clique.clone()) {
            continue;
        }
        let rest: Vec<usize> = (0..copies.len())
            .filter(|d| !clique.contains(d))
            .filter(|&d| clique.iter().all(|&member| conflict(&copies[member].2, &copies[d].2)))
            .collect();
        let mut plain = true;
        for r in 0..3 {
            let cap = resource(capacity, r);
            if cap == 0 || rest.iter().all(|&d| resource(&copies[d].2, r) == 0) {
                continue;
            }
            plain = false;
            let mut row: Vec<(Variable, f64)> = clique.iter().map(|&m| (copies[m].1, cap as f64)).collect();
            row.extend(rest.iter().map(|&d| (copies[d].1, resource(&copies[d].2, r) as f64)));
            row.push((y, -(cap as f64)));
            model.constrain(&row, Sense::AtMost, 0.0);
        }
        if plain && clique.len() > 1 {
            let mut row: Vec<(Variable, f64)> = clique.iter().map(|&m| (copies[m].1, 1.0)).collect();
            row.push((y, -1.0));
            model.constrain(&row, Sense::AtMost, 0.0);
        }
    }
}

/// The range `[low, high]` of `expr` over the bounds of its variables (infinite when a variable
/// it uses is unbounded).
fn value_range(mip: &Mip, expr: &Expr) -> (f64, f64) {
    let mut low = expr.constant;
    let mut high = expr.constant;
    for &(var, coefficient) in &expr.terms {
        let Some(variable) = mip.variables().get(var.index()) else {
            return (f64::NEG_INFINITY, f64::INFINITY);
        };
        let (a, b) = (coefficient * variable.lower, coefficient * variable.upper);
        let (a, b) = (if a.is_nan() { 0.0 } else { a }, if b.is_nan() { 0.0 } else { b });
        low += a.min(b);
        high += a.max(b);
    }
    (low, high)
}

/// The smallest balance excess of `total` copies over `zones` AZs with `MaxImbalance`
/// `limit`: the most even split differs by one unless `zones` divides `total`.
pub(crate) fn least_balance_excess(total: u64, zones: u64, limit: u64) -> u64 {
    u64::from(zones > 0 && total % zones != 0).saturating_sub(limit)
}

/// The least balance excess of `component` with `total` final copies over `zones` AZs (`None`
/// when its balance does not count: no MaxImbalance, or a single AZ).
pub(crate) fn least_excess_of(component: &Component, total: u64, zones: usize) -> Option<u64> {
    let limit = component.max_imbalance.filter(|_| zones > 1)?;
    Some(least_balance_excess(total, zones as u64, u64::from(limit)))
}

/// The fewest and most copies one AZ can hold when `total` integer copies are split over
/// `zones` AZs with max − min ≤ `spread`. If one AZ holds `h`, every other holds at least
/// `h − spread`, so `h + (zones − 1)(h − spread) ≤ total`; symmetrically for the fewest.
pub(crate) fn count_range(total: u64, zones: u64, spread: u64) -> (u64, u64) {
    if zones == 0 {
        return (0, total);
    }
    let slack = (zones - 1).saturating_mul(spread);
    let most = total.saturating_add(slack) / zones;
    let fewest = total.saturating_sub(slack).div_ceil(zones);
    (fewest, most.min(total))
}

/// Solves the master problem for `goal` with earlier levels fixed to `fixed`.
pub(crate) fn solve(
    facts: &Facts<'_>,
    layout: &Layout,
    goal: Goal,
    fixed: &[(Goal, f64)],
    limits: Limits,
    warm: Warm<'_>,
    extra: Extra<'_>,
) -> Solved {
    let mut master = MasterBuilder::new(facts, layout, goal, warm, extra);
    master.new_instances();
    master.existing_instances();
    master.copy_counts();
    master.instance_bounds();
    let levels = master.unplaced_and_balance(goal, fixed);
    master.relaxed_copies_per_az();
    if !master.fixed_copies_per_az() {
        return Solved::Infeasible;
    }
    let Some(target) = master.goal_rows(goal, fixed, levels) else {
        return Solved::Infeasible;
    };
    master.solve(goal, limits, warm, &target)
}

/// The L1 and L2 expressions, and the copies wanted in all.
struct PlacementLevels {
    unplaced: Expr,
    balance: Expr,
    wanted: u64,
}

/// The level being solved, as the solver sees it.
struct Target {
    expr: Expr,
    /// Added to the level's value for the solver: L1 is shown as "copies not placed".
    shift: f64,
    /// The copies wanted in all.
    wanted: u64,
}

/// What bounds the balance of each component once earlier levels are fixed (constraints 7–8).
struct BalanceBounds {
    /// Each component's final total, when the fixed L1 determines them all.
    known_totals: Option<Vec<u64>>,
    /// The least excess of each balanced component (its most even split), when totals are known.
    least_excess: Vec<Option<u64>>,
    /// Their sum.
    least_total: u64,
    /// The most total excess this solve allows (L2 fixed, or L2's own probe).
    excess_cap: Option<u64>,
}

/// The master problem of one solve, built one family of variables and constraints at a time
/// (docs/formulation.md, "Variables" and "Constraints"; the section names and constraint
/// numbers in the methods' docs are that page's). The creation order is fixed: warm starts
/// from the previous level and `counts_from_tail` rely on it.
struct MasterBuilder<'a> {
    facts: &'a Facts<'a>,
    problem: &'a Problem,
    layout: &'a Layout,
    extra: Extra<'a>,
    /// The priority an L3 solve minimises: its instance variables carry the objective.
    priority_goal: Option<u8>,
    /// The L4 regime being solved.
    cost_unit: Option<CostUnit>,
    /// The plan giving the warm start (`Warm::Plan`).
    plan_hint: Option<&'a Hint>,
    model: Model,
    /// The auxiliary variable equal to the level's value (as the solver sees it).
    objective: Variable,
    /// Warm-start values from `plan_hint`.
    hinted: Vec<(Variable, f64)>,
    /// Final copies per (component, AZ).
    per_az: Vec<Vec<Expr>>,
    /// New-copy variables per component.
    new_per_component: Vec<Vec<(Variable, f64)>>,
    /// Instances of the final fleet (new and kept).
    instances: Expr,
    /// The same, per priority (L3).
    by_priority: BTreeMap<u8, Expr>,
    /// L4 priced: the price of every instance that is not prepaid.
    priced: Expr,
    /// L4 units: the instances that are not prepaid.
    units: Expr,
    /// Instances of types without a price.
    unpriced: Expr,
    vars: Vars,
}

impl<'a> MasterBuilder<'a> {
    fn new(facts: &'a Facts<'a>, layout: &'a Layout, goal: Goal, warm: Warm<'a>, extra: Extra<'a>) -> Self {
        let problem = facts.problem;
        let components = problem.components().len();
        let zones = problem.azs().len();
        let mut model = Model { lp: Mip::new(), ints: Vec::new(), relax: extra.relax };
        // An L3 level puts its objective on the instance variables themselves (not only on the
        // auxiliary `objective` variable): microlp seeds its branching pseudocosts with the
        // objective coefficients, so it then branches on the instance counts of that priority
        // first, which is what closes the gap between the LP bound and the integer count.
        let priority_goal = match goal {
            Goal::Priority(priority) => Some(priority),
            _ => None,
        };
        let objective =
            model.lp.add_var(if priority_goal.is_some() { 0.0 } else { 1.0 }, (f64::NEG_INFINITY, f64::INFINITY));
        MasterBuilder {
            facts,
            problem,
            layout,
            extra,
            priority_goal,
            cost_unit: match goal {
                Goal::Cost(unit) => Some(unit),
                _ => None,
            },
            plan_hint: match warm {
                Warm::Plan(hint) => Some(hint),
                _ => None,
            },
            model,
            objective,
            hinted: Vec::new(),
            per_az: vec![vec![Expr::default(); zones]; components],
            new_per_component: vec![Vec::new(); components],
            instances: Expr::default(),
            by_priority: BTreeMap::new(),
            priced: Expr::default(),
            units: Expr::default(),
            unpriced: Expr::default(),
            vars: Vars {
                launches: BTreeMap::new(),
                group_copies: BTreeMap::new(),
                slots: BTreeMap::new(),
                keep: Vec::new(),
                add: BTreeMap::new(),
                remove: BTreeMap::new(),
            },
        }
    }

    /// Records `value` (when the warm plan gives one) as the warm start of `var`.
    fn hint(&mut self, var: Variable, value: Option<u64>) {
        if let Some(value) = value {
            self.hinted.push((var, value as f64));
        }
    }

    /// New instances, group by group: `y[t,z]` and `paid[t,z]` ("Variables"), then their
    /// copies as a slot group ("Refinement") or aggregated (constraint 2).
    fn new_instances(&mut self) {
        let (facts, problem) = (self.facts, self.problem);
        for (&(t, z), &upper) in &facts.groups {
            let Some(info) = problem.instance_types().get(t.index()) else { continue };
            let capacity = info.capacity;
            let upper =
                if self.cost_unit == Some(CostUnit::UsdPerHour) && info.hourly_price.is_none() { 0 } else { upper };
            let y = self.launches(t, z, info, upper);
            let eligible: Vec<(usize, Resources)> = problem
                .components()
                .iter()
                .enumerate()
                .filter(|&(c, _)| facts.need.get(c).copied().unwrap_or(0) > 0)
                .filter_map(|(c, component)| {
                    eligible_need(problem, component, t.index(), &capacity).map(|need| (c, need))
                })
                .collect();
            if self.layout.slot_groups.contains(&(t, z)) {
                self.slot_group((t, z), y, upper, &capacity, &eligible);
            } else {
                self.aggregated_group((t, z), y, upper, &capacity, &eligible);
            }
        }
    }

    /// `y[t,z]` (new instances of a group) and `paid[t,z] ≥ y − Reserved` ("Variables"), added
    /// to the instance counts, L3 and L4.
    fn launches(&mut self, t: TypeIndex, z: AzIndex, info: &InstanceTypeInfo, upper: u64) -> Variable {
        let y = self.model.int_costing(upper, if self.priority_goal == Some(info.priority) { 1.0 } else { 0.0 });
        self.hint(y, self.plan_hint.map(|h| u64::from(h.launches.get(&(t, z)).copied().unwrap_or(0))));
        self.vars.launches.insert((t, z), y);
        self.instances.add(y, 1.0);
        self.by_priority.entry(info.priority).or_default().add(y, 1.0);
        if info.hourly_price.is_none() {
            self.unpriced.add(y, 1.0);
        }
        // Paid launches: the first `reserved` launches are prepaid.
        let reserved = self.problem.launch_limit(t, z).reserved;
        let paid = if reserved > 0 {
            let paid = self.model.lp.add_var(0.0, (0.0, f64::INFINITY));
            self.model.constrain(&[(paid, 1.0), (y, -1.0)], Sense::AtLeast, -f64::from(reserved));
            paid
        } else {
            y
        };
        self.priced.add(paid, price_in_micros_precision(self.problem, t.index()));
        self.units.add(paid, 1.0);
        y
    }

    /// A slot group ("Refinement"): `u[t,z,b]` and `s[c,t,z,b]`, exact packing per slot, slots
    /// used in order.
    fn slot_group(
        &mut self,
        group: Group,
        y: Variable,
        upper: u64,
        capacity: &Resources,
        eligible: &[(usize, Resources)],
    ) {
        let facts = self.facts;
        let z = group.1;
        let items: u64 = eligible.iter().map(|&(c, _)| facts.need[c]).sum();
        let slots = upper.min(items);
        let mut list = Vec::new();
        let mut previous: Option<Variable> = None;
        let mut used_sum = vec![(y, -1.0)];
        let hint_bins = self.plan_hint.and_then(|h| h.bins.get(&group));
        for slot in 0..slots {
            let used = self.model.int(1);
            let bin = hint_bins.and_then(|bins| bins.get(slot as usize));
            self.hint(used, self.plan_hint.map(|_| u64::from(bin.is_some())));
            used_sum.push((used, 1.0));
            if let Some(previous) = previous {
                // Symmetry: slots are used in order.
                self.model.constrain(&[(previous, 1.0), (used, -1.0)], Sense::AtLeast, 0.0);
            }
            previous = Some(used);
            let mut contents = Vec::new();
            for &(c, need) in eligible {
                let copies = self.model.int(facts.need[c].min(capacity.copies_of(&need)));
                self.hint(copies, self.plan_hint.map(|_| u64::from(bin.and_then(|b| b.get(&c)).copied().unwrap_or(0))));
                contents.push((c, copies));
                self.per_az[c][z.index()].add(copies, 1.0);
                self.new_per_component[c].push((copies, 1.0));
            }
            for r in 0..3 {
                let mut row: Vec<(Variable, f64)> =
                    contents.iter().zip(eligible).map(|(&(_, v), (_, need))| (v, resource(need, r) as f64)).collect();
                row.push((used, -(resource(capacity, r) as f64)));
                self.model.constrain(&row, Sense::AtMost, 0.0);
            }
            list.push((used, contents));
        }
        self.model.constrain(&used_sum, Sense::AtMost, 0.0);
        self.vars.slots.insert(group, list);
    }

    /// An aggregated group (constraint 2): `x[c,t,z]`, packing per resource, and the valid
    /// cuts (size classes, conflict sets) when `Layout::cuts`.
    fn aggregated_group(
        &mut self,
        group: Group,
        y: Variable,
        upper: u64,
        capacity: &Resources,
        eligible: &[(usize, Resources)],
    ) {
        let (facts, extra) = (self.facts, self.extra);
        let z = group.1;
        let mut copies = Vec::new();
        for &(c, need) in eligible {
            let per_instance = capacity.copies_of(&need);
            // Stage 1 of relax-and-fix: this group's copy counts are continuous (the same
            // switch `Extra::relax` uses for the whole model; a backend needs per-variable
            // "continuous in this solve" for it).
            self.model.relax = extra.relax || extra.relax_copies;
            let x = self.model.int(facts.need[c].min(per_instance.saturating_mul(upper)));
            self.model.relax = extra.relax;
            self.hint(
                x,
                self.plan_hint.map(|h| {
                    h.bins
                        .get(&group)
                        .map_or(0, |bins| bins.iter().map(|b| u64::from(b.get(&c).copied().unwrap_or(0))).sum())
                }),
            );
            self.model.constrain(&[(x, 1.0), (y, -(per_instance.min(INTEGER_CAP) as f64))], Sense::AtMost, 0.0);
            self.per_az[c][z.index()].add(x, 1.0);
            self.new_per_component[c].push((x, 1.0));
            copies.push((c, x, need));
        }
        for r in 0..3 {
            let cap = resource(capacity, r);
            let mut row: Vec<(Variable, f64)> =
                copies.iter().map(|&(_, x, need)| (x, resource(&need, r) as f64)).collect();
            row.push((y, -(cap as f64)));
            self.model.constrain(&row, Sense::AtMost, 0.0);
            if self.layout.cuts && cap > 0 {
                size_class_cuts(&mut self.model, y, r, cap, &copies);
            }
        }
        if self.layout.cuts {
            conflict_cuts(&mut self.model, y, capacity, &copies);
            if let Some(prices) = facts.pattern_prices.get(&group.0.index()) {
                // Pattern-LP cut: every instance holds copies worth at most 1 (prices below 1e-9
                // dropped, which only weakens it).
                let mut row: Vec<(Variable, f64)> = copies
                    .iter()
                    .filter_map(|&(c, x, _)| prices.get(c).filter(|&&p| p > 1e-9).map(|&p| (x, p)))
                    .collect();
                if !row.is_empty() {
                    row.push((y, -1.0));
                    self.model.constrain(&row, Sense::AtMost, 0.0);
                }
            }
        }
        self.vars.group_copies.insert(group, copies.into_iter().map(|(c, x, _)| (c, x)).collect());
    }

    /// Existing instances, one by one (constraint 1): `keep_i`, `rem[c,i]`, `add[c,i]` and
    /// exact packing rows.
    fn existing_instances(&mut self) {
        let problem = self.problem;
        for (i, instance) in problem.fleet().iter().enumerate() {
            let Some(info) = problem.instance_types().get(instance.type_index) else {
                continue;
            };
            let keep = self.keep(i, instance, info);
            let mut rows: Vec<Vec<(Variable, f64)>> = vec![Vec::new(); 3];
            let used = self.existing_copies(i, instance, keep, &mut rows);
            self.new_copies_on_existing(i, instance, keep, &info.capacity, &mut rows);
            for (r, row) in rows.iter().enumerate() {
                if !row.is_empty() {
                    let room = resource(&info.capacity, r) as f64 - resource(&used, r) as f64;
                    self.model.constrain(row, Sense::AtMost, room);
                }
            }
        }
    }

    /// `keep_i`, added to the instance counts, L3 and L4.
    fn keep(&mut self, i: usize, instance: &ExistingInstance, info: &InstanceTypeInfo) -> Variable {
        let keep = self.model.int_costing(1, if self.priority_goal == Some(info.priority) { 1.0 } else { 0.0 });
        self.hint(keep, self.plan_hint.map(|h| u64::from(h.keep.get(i).copied().unwrap_or(true))));
        self.vars.keep.push(keep);
        self.instances.add(keep, 1.0);
        self.by_priority.entry(info.priority).or_default().add(keep, 1.0);
        if info.hourly_price.is_none() {
            self.unpriced.add(keep, 1.0);
            if self.cost_unit == Some(CostUnit::UsdPerHour) {
                self.model.constrain(&[(keep, 1.0)], Sense::AtMost, 0.0);
            }
        }
        if !instance.reserved {
            self.priced.add(keep, price_in_micros_precision(self.problem, instance.type_index));
            self.units.add(keep, 1.0);
        }
        keep
    }

    /// The copies an existing instance runs: `rem[c,i]` for components with an excess (the
    /// others force `keep_i = 1`); returns the resources they use.
    fn existing_copies(
        &mut self,
        i: usize,
        instance: &ExistingInstance,
        keep: Variable,
        rows: &mut [Vec<(Variable, f64)>],
    ) -> Resources {
        let (facts, components) = (self.facts, self.problem.components());
        let mut used = Resources::ZERO;
        for &(c, count) in &instance.copies {
            let Some(Some(requirement)) =
                components.get(c).map(|component| component.requirements.get(instance.type_index).cloned().flatten())
            else {
                continue;
            };
            used = used.plus(&requirement.resources.times(u64::from(count)));
            self.per_az[c][instance.az_index].constant += f64::from(count);
            if facts.excess.get(c).copied().unwrap_or(0) > 0 {
                let remove = self.model.int(u64::from(count));
                self.hint(remove, self.plan_hint.map(|h| u64::from(h.remove.get(&(c, i)).copied().unwrap_or(0))));
                self.vars.remove.insert((c, i), remove);
                self.per_az[c][instance.az_index].add(remove, -1.0);
                for (r, row) in rows.iter_mut().enumerate() {
                    row.push((remove, -(resource(&requirement.resources, r) as f64)));
                }
                // Existing copies that stay keep the instance.
                self.model.constrain(&[(remove, -1.0), (keep, -f64::from(count))], Sense::AtMost, -f64::from(count));
            } else {
                self.model.constrain(&[(keep, 1.0)], Sense::AtLeast, 1.0);
            }
        }
        used
    }

    /// `add[c,i]`: new copies on a kept existing instance, `add ≤ k·keep_i`.
    fn new_copies_on_existing(
        &mut self,
        i: usize,
        instance: &ExistingInstance,
        keep: Variable,
        capacity: &Resources,
        rows: &mut [Vec<(Variable, f64)>],
    ) {
        let (facts, problem) = (self.facts, self.problem);
        for (c, component) in problem.components().iter().enumerate() {
            let need = facts.need.get(c).copied().unwrap_or(0);
            // A draining instance (contract §6) gets no variable for new copies at all.
            if need == 0 || instance.draining {
                continue;
            }
            let Some(requirement) = eligible_need(problem, component, instance.type_index, capacity) else {
                continue;
            };
            let upper = need.min(capacity.copies_of(&requirement));
            let add = self.model.int(upper);
            self.hint(add, self.plan_hint.map(|h| u64::from(h.add.get(&(c, i)).copied().unwrap_or(0))));
            self.vars.add.insert((c, i), add);
            self.per_az[c][instance.az_index].add(add, 1.0);
            self.new_per_component[c].push((add, 1.0));
            for (r, row) in rows.iter_mut().enumerate() {
                row.push((add, resource(&requirement, r) as f64));
            }
            self.model.constrain(&[(add, 1.0), (keep, -(upper as f64))], Sense::AtMost, 0.0);
        }
    }

    /// Copy counts (constraint 6): new copies up to the need; an excess is removed exactly.
    fn copy_counts(&mut self) {
        let facts = self.facts;
        for (c, new_copies) in self.new_per_component.iter().enumerate() {
            if !new_copies.is_empty() {
                self.model.constrain(new_copies, Sense::AtMost, facts.need[c] as f64);
            }
            if facts.excess[c] > 0 {
                let removes: Vec<(Variable, f64)> =
                    self.vars.remove.iter().filter(|(&(rc, _), _)| rc == c).map(|(_, &v)| (v, 1.0)).collect();
                self.model.constrain(&removes, Sense::Equal, facts.excess[c] as f64);
            }
        }
    }

    /// Instance bounds (constraint 5): MinInstanceCount and MaxInstanceCount.
    fn instance_bounds(&mut self) {
        let scaling = self.problem.scaling();
        let fleet = self.problem.fleet();
        if scaling.min_instances > 0 {
            self.model.constrain(&self.instances.terms, Sense::AtLeast, f64::from(scaling.min_instances));
        }
        if let Some(max) = scaling.max_instances {
            let size = fleet.len() as f64;
            if fleet.len() as u64 <= u64::from(max) {
                self.model.constrain(&self.instances.terms, Sense::AtMost, f64::from(max));
            } else {
                // Above the maximum already: either launch nothing, or end at most at the maximum.
                let any_launch = self.model.int(1);
                self.hint(any_launch, self.plan_hint.map(|h| u64::from(!h.launches.is_empty())));
                for (&group, &y) in &self.vars.launches {
                    let upper = self.facts.groups.get(&group).copied().unwrap_or(0) as f64;
                    self.model.constrain(&[(y, 1.0), (any_launch, -upper)], Sense::AtMost, 0.0);
                }
                let mut row = self.instances.terms.clone();
                row.push((any_launch, size - f64::from(max)));
                self.model.constrain(&row, Sense::AtMost, size);
            }
        }
    }

    /// What bounds each component's balance in this solve (constraints 7–8).
    fn balance_bounds(&self, goal: Goal, fixed: &[(Goal, f64)]) -> BalanceBounds {
        let zones = self.problem.azs().len();
        // Once L1 is fixed, each component's final total may be known: when the copies placed
        // equal the sum of every component's most final copies, each component holds its
        // most. Then its balance excess has a constant lower bound (the most even split of n
        // copies over the AZs differs by 1 unless the AZ count divides n), which the LP
        // relaxation cannot see. "Every copy placed" is the common case; a component that
        // cannot be placed at all (no type fits it) is the next one.
        let placed = fixed.iter().find(|&&(level, _)| level == Goal::Unplaced).map(|&(_, value)| -value);
        let most: Vec<u64> = (0..self.problem.components().len()).map(|c| self.most_final_copies(c)).collect();
        let known_totals = placed.filter(|&placed| most.iter().sum::<u64>() as f64 <= placed + 0.5).map(|_| most);
        // The smallest possible excess of each balanced component (its most even split), and the
        // most total excess this solve allows (L2 fixed, or L2's own probe): together they bound
        // how uneven each single component may be (see `count_range`).
        let least_excess: Vec<Option<u64>> = self
            .problem
            .components()
            .iter()
            .enumerate()
            .map(|(c, component)| least_excess_of(component, known_totals.as_ref()?.get(c).copied()?, zones))
            .collect();
        let excess_cap = fixed
            .iter()
            .filter(|&&(level, _)| level == Goal::Balance)
            .map(|&(_, value)| value)
            .chain(self.extra.at_most.filter(|_| goal == Goal::Balance))
            .fold(None, |cap: Option<f64>, value| Some(cap.map_or(value, |cap| cap.min(value))))
            .map(|value| value.round().max(0.0) as u64);
        let least_total: u64 = least_excess.iter().flatten().sum();
        BalanceBounds { known_totals, least_excess, least_total, excess_cap }
    }

    /// The most copies component `c` can end with: its copy count, or the copies it keeps when
    /// the model has no variable that changes them (no type or AZ can take a new copy).
    fn most_final_copies(&self, c: usize) -> u64 {
        let per_zone = self.per_az.get(c).map(Vec::as_slice).unwrap_or_default();
        if per_zone.iter().all(|expr| expr.terms.is_empty()) {
            per_zone.iter().map(|expr| expr.constant.round().max(0.0) as u64).sum()
        } else {
            self.problem.components().get(c).map_or(0, |component| u64::from(component.copy_count))
        }
    }

    /// The L1 expression ("Objective") and the balance variables and rows of L2 (constraints
    /// 7–8).
    fn unplaced_and_balance(&mut self, goal: Goal, fixed: &[(Goal, f64)]) -> PlacementLevels {
        let problem = self.problem;
        let components = problem.components();
        let zones = problem.azs().len();
        let wanted: u64 = components.iter().map(|c| u64::from(c.copy_count)).sum();
        let bounds = self.balance_bounds(goal, fixed);
        let mut unplaced = Expr::default();
        let mut balance = Expr::default();
        for (c, component) in components.iter().enumerate() {
            for expr in &self.per_az[c] {
                unplaced.constant -= expr.constant;
                for &(v, coefficient) in &expr.terms {
                    unplaced.add(v, -coefficient);
                }
            }
            if let (Some(limit), true) = (component.max_imbalance, zones > 1) {
                let excess = self.component_balance(c, component, limit, &bounds);
                balance.add(excess, 1.0);
            }
        }
        PlacementLevels { unplaced, balance, wanted }
    }

    /// One component's `hi_c`, `lo_c` and `e_c` (constraint 7); returns `e_c`.
    fn component_balance(&mut self, c: usize, component: &Component, limit: u32, bounds: &BalanceBounds) -> Variable {
        // Integer extremes: the counts are integers, and branching on these gives the
        // ceil/floor of the average that the LP relaxation lacks.
        let most = u64::from(component.copy_count).max(self.facts.excess[c] + u64::from(component.copy_count));
        let high = self.model.int(most);
        let low = self.model.int(most);
        let excess = self.model.int(most);
        if let Some(counts) = self.plan_hint.and_then(|h| h.per_az.get(c)) {
            let most_az = counts.iter().copied().max().unwrap_or(0);
            let fewest_az = counts.iter().copied().min().unwrap_or(0);
            self.hint(high, Some(most_az));
            self.hint(low, Some(fewest_az));
            self.hint(excess, Some((most_az - fewest_az).saturating_sub(u64::from(limit))));
        }
        for expr in &self.per_az[c] {
            let mut row: Vec<(Variable, f64)> = expr.terms.iter().map(|&(v, k)| (v, -k)).collect();
            row.push((high, 1.0));
            self.model.constrain(&row, Sense::AtLeast, expr.constant);
            let mut row: Vec<(Variable, f64)> = expr.terms.clone();
            row.push((low, -1.0));
            self.model.constrain(&row, Sense::AtLeast, -expr.constant);
        }
        self.model.constrain(&[(excess, 1.0), (high, -1.0), (low, 1.0)], Sense::AtLeast, -f64::from(limit));
        if let Some(total) = bounds.known_totals.as_ref().and_then(|totals| totals.get(c).copied()) {
            self.placed_balance_cuts(c, total, limit, (high, low, excess), bounds);
        }
        excess
    }

    /// With the component's final total known (constraints 7 and 8): the constant `n_c` bounds
    /// `hi_c`, `lo_c`, `e_c` and, under an L2 cap, every per-AZ count.
    fn placed_balance_cuts(
        &mut self,
        c: usize,
        total: u64,
        limit: u32,
        (high, low, excess): (Variable, Variable, Variable),
        bounds: &BalanceBounds,
    ) {
        let zones = self.problem.azs().len();
        let mut row: Vec<(Variable, f64)> = Vec::new();
        let mut constant = 0.0;
        for expr in &self.per_az[c] {
            row.extend(expr.terms.iter().copied());
            constant += expr.constant;
        }
        if !row.is_empty() {
            self.model.constrain(&row, Sense::Equal, total as f64 - constant);
        }
        let floor = least_balance_excess(total, zones as u64, u64::from(limit));
        self.model.constrain(&[(excess, 1.0)], Sense::AtLeast, floor as f64);
        self.model.constrain(&[(high, 1.0)], Sense::AtLeast, total.div_ceil(zones as u64) as f64);
        self.model.constrain(&[(low, 1.0)], Sense::AtMost, (total / zones as u64) as f64);
        if let (Some(cap), Some(least)) = (bounds.excess_cap, bounds.least_excess.get(c).copied().flatten()) {
            // This component's excess is at most the cap minus the others' least excess,
            // so its spread is bounded, and integer counts with that spread and this
            // total lie in a range the LP relaxation does not see.
            let spread = u64::from(limit) + cap.saturating_sub(bounds.least_total.saturating_sub(least));
            let (fewest, most) = count_range(total, zones as u64, spread);
            self.model.constrain(&[(high, 1.0)], Sense::AtMost, most as f64);
            self.model.constrain(&[(low, 1.0)], Sense::AtLeast, fewest as f64);
            for expr in &self.per_az[c] {
                if expr.terms.is_empty() {
                    continue;
                }
                self.model.constrain(&expr.terms, Sense::AtMost, most as f64 - expr.constant);
                if fewest > 0 {
                    self.model.constrain(&expr.terms, Sense::AtLeast, fewest as f64 - expr.constant);
                }
            }
        }
    }

    /// Relax-and-fix, stage 1 ("Relax-and-fix at the LP bound"): integer final copies per
    /// (component, AZ), created last (see `counts_from_tail`).
    fn relaxed_copies_per_az(&mut self) {
        if !self.extra.relax_copies {
            return;
        }
        let components = self.problem.components();
        for (c, per_zone) in self.per_az.iter().enumerate() {
            let copy_count = components.get(c).map_or(0, |component| u64::from(component.copy_count));
            let most = copy_count + self.facts.excess.get(c).copied().unwrap_or(0);
            for expr in per_zone {
                let count = self.model.int(most);
                let mut row = expr.terms.clone();
                row.push((count, -1.0));
                self.model.constrain(&row, Sense::Equal, -expr.constant);
            }
        }
    }

    /// Relax-and-fix, stage 2: every component's final copies per AZ fixed to stage 1's;
    /// false when a count without variables already differs (the model is infeasible).
    fn fixed_copies_per_az(&mut self) -> bool {
        let Some(counts) = self.extra.counts else {
            return true;
        };
        for (c, per_zone) in self.per_az.iter().enumerate() {
            for (z, expr) in per_zone.iter().enumerate() {
                let count = counts.get(&(ComponentIndex::new(c), AzIndex::new(z))).copied().unwrap_or(0) as f64;
                if expr.terms.is_empty() {
                    if (count - expr.constant).abs() > 0.5 {
                        return false;
                    }
                    continue;
                }
                self.model.constrain(&expr.terms, Sense::Equal, count - expr.constant);
            }
        }
        true
    }

    /// The levels' rows ("Objective: sequential lexicographic solves"): L4 units needs an
    /// unpriced instance, earlier levels fixed at their optimum, the probe's bounds on this
    /// level, and the row tying `objective` to it. `None` when a fixed level cannot hold.
    fn goal_rows(&mut self, goal: Goal, fixed: &[(Goal, f64)], levels: PlacementLevels) -> Option<Target> {
        if self.cost_unit == Some(CostUnit::Instances) {
            self.model.constrain(&self.unpriced.terms, Sense::AtLeast, 1.0);
        }
        let key = |goal: Goal| format!("{goal:?}");
        let mut goal_exprs: BTreeMap<String, Expr> = BTreeMap::new();
        goal_exprs.insert(key(Goal::Unplaced), levels.unplaced);
        goal_exprs.insert(key(Goal::Balance), levels.balance);
        for (priority, expr) in std::mem::take(&mut self.by_priority) {
            goal_exprs.insert(key(Goal::Priority(priority)), expr);
        }
        goal_exprs.insert(key(Goal::Cost(CostUnit::UsdPerHour)), std::mem::take(&mut self.priced));
        goal_exprs.insert(key(Goal::Cost(CostUnit::Instances)), std::mem::take(&mut self.units));

        // Earlier levels fixed at their optimum. L1–L3 are integer combinations (unit
        // coefficients) of integer variables plus an integer constant, so the right-hand side is
        // the exact integer: a half-unit slack would let the LP relaxation use half an instance of
        // a fixed priority and weaken every later level's bound.
        for &(level, value) in fixed {
            if let Some(expr) = goal_exprs.get(&key(level)) {
                self.model.constrain(&expr.terms, Sense::AtMost, value.round() - expr.constant);
            } else if value < -0.5 {
                return None;
            }
        }
        let target = goal_exprs.get(&key(goal)).cloned().unwrap_or_default();
        if let Some(cap) = self.extra.at_most {
            self.model.constrain(&target.terms, Sense::AtMost, cap.round() - target.constant);
        }
        if let Some(floor) = self.extra.at_least {
            // Integral levels take the floor as an integer; the priced cost is in dollars and
            // goes a hair below its bound (the model's float sums of prices must not end up
            // under it).
            let floor = if goal == Goal::Cost(CostUnit::UsdPerHour) { floor - cost_hair(floor) } else { floor.round() };
            self.model.constrain(&target.terms, Sense::AtLeast, floor - target.constant);
        }
        // The solver sees L1 as "copies not placed" (its value plus the copies wanted), which is
        // never negative: the relative gap below is aimed at one unit of |incumbent|, and for a
        // non-negative level later incumbents are never larger, so the aim stays valid.
        let shift = if goal == Goal::Unplaced { levels.wanted as f64 } else { 0.0 };
        let mut row = target.terms.clone();
        row.push((self.objective, -1.0));
        self.model.constrain(&row, Sense::Equal, -target.constant - shift);
        Some(Target { expr: target, shift, wanted: levels.wanted })
    }

    /// Solves the built model: limits, warm start and the integer-gap stop ("Integer gap"),
    /// then reads the plan from the answer.
    fn solve(mut self, goal: Goal, limits: Limits, warm: Warm<'_>, target: &Target) -> Solved {
        let mut request = SolveRequest::default();
        if let Some(deadline) = limits.deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Solved::Interrupted { limit: Limit::Time, best_bound: None };
            }
            request.time_limit = Some(left);
        }
        request.node_limit = limits.node_limit;
        match warm {
            Warm::Previous(values) if values.len() == self.model.ints.len() => {
                request.warm_start = self.model.ints.iter().copied().zip(values.iter().copied()).collect();
            }
            Warm::Plan(_) if !self.hinted.is_empty() => request.warm_start = std::mem::take(&mut self.hinted),
            _ => {}
        }
        // L1–L3 take integer values, so an incumbent within less than one unit of the best bound
        // is optimal. Solvers only know relative gaps, so the backend is told that the level is
        // integral and the largest |value| any solution can have: from the bounds of the level's
        // terms and, with a warm start of value W, the row `level ≤ W` (valid: the start is
        // feasible, so the optimum is at most W). Without this, microlp keeps closing a fractional
        // gap it cannot close (one MaxInstanceCount case: L1 proven in 8 s instead of 80 ms; the
        // whole plan 177 s instead of 0.1 s). The proof is checked below all the same.
        // L4 in units is integral too: a count of instances, with `paid = max(0, y − reserved)`
        // integral at every node optimum.
        let integral = !matches!(goal, Goal::Cost(CostUnit::UsdPerHour)) && !self.extra.relax;
        let capped = if integral { self.integral_bound(goal, target, &mut request) } else { None };
        // The priced cost is not integral, but with a cost floor (whole millionths, exact) a
        // solution at the floor is optimal: let the solver stop within the floor's hair, and
        // check the proof in millionths, as the plan's objective counts the cost.
        let cost_floor = match (goal, self.extra.at_least) {
            (Goal::Cost(CostUnit::UsdPerHour), Some(floor)) if !self.extra.relax => Some(floor),
            _ => None,
        };
        if let Some(floor) = cost_floor {
            request.mip_gap = request.mip_gap.max(2.0 * cost_hair(floor) / floor.abs().max(1.0));
        }
        let proof = Proof { integral, cost_floor };
        match self.run_backend(limits, &mut request, capped, target.shift, proof) {
            Ok(outcome) => self.read_outcome(outcome, proof, target.shift),
            Err(best_bound) => Solved::Interrupted { limit: Limit::Time, best_bound },
        }
    }

    /// Sets `request.integral_objective_bound` for an integral level; returns the model with
    /// the row `level ≤ W` when a warm start of value W gives one.
    fn integral_bound(&self, goal: Goal, target: &Target, request: &mut SolveRequest) -> Option<Mip> {
        let (expr, shift) = (&target.expr, target.shift);
        let start_value = (!request.warm_start.is_empty())
            .then(|| {
                let values: BTreeMap<usize, f64> =
                    request.warm_start.iter().map(|&(v, value)| (v.index(), value)).collect();
                expr.terms
                    .iter()
                    .map(|&(v, coefficient)| values.get(&v.index()).map(|value| coefficient * value))
                    .sum::<Option<f64>>()
                    .map(|sum| sum + expr.constant)
            })
            .flatten();
        let mut capped: Option<Mip> = None;
        let (mut low, high) = value_range(&self.model.lp, expr);
        if goal == Goal::Unplaced {
            // Minus the final copies, which never exceed the copies wanted (docs/contract.md §2.1, constraint 5); the
            // terms' own bounds are much looser.
            low = low.max(-(target.wanted as f64));
        }
        let (mut low, mut high) = (low + shift, high + shift);
        if let Some(start) = start_value.filter(|&start| self.extra.at_most.is_none_or(|most| most > start)) {
            let mut with_cap = self.model.lp.clone();
            with_cap.add_row(expr.terms.clone(), Sense::AtMost, start.round() - expr.constant);
            capped = Some(with_cap);
            high = high.min(start.round() + shift);
        }
        if let Some(most) = self.extra.at_most {
            high = high.min(most.round() + shift);
        }
        // Every integral level counts something (copies not placed, balance excess, instances).
        low = low.max(0.0);
        let magnitude = low.abs().max(high.abs());
        if magnitude.is_finite() {
            request.integral_objective_bound = Some(magnitude);
        }
        capped
    }

    /// Runs the backend (on `capped` when given, falling back to the plain model if the cap
    /// proves wrong), and once more without the gap stop if that stop proved nothing; `Err`
    /// with the best bound (the level's value) when the deadline passed before that.
    fn run_backend(
        &self,
        limits: Limits,
        request: &mut SolveRequest,
        mut capped: Option<Mip>,
        shift: f64,
        proof: Proof,
    ) -> Result<MipOutcome, Option<f64>> {
        let backend = self.facts.backend;
        let first = match &capped {
            Some(with_cap) => match backend.solve(with_cap, request) {
                // The start was not feasible after all (the cap is then wrong): solve without it.
                MipOutcome::Infeasible => {
                    capped = None;
                    request.integral_objective_bound = None;
                    backend.solve(&self.model.lp, request)
                }
                other => other,
            },
            None => backend.solve(&self.model.lp, request),
        };
        let outcome = match first {
            MipOutcome::Solution(ref solution)
                if (request.integral_objective_bound.is_some() || proof.cost_floor.is_some())
                    && solution.termination == Termination::Gap
                    && !proof.proves(solution.objective - shift, solution.best_bound.map(|b| b - shift)) =>
            {
                // The gap stop proved nothing (it should not happen): search to the end, plainly.
                request.integral_objective_bound = None;
                request.mip_gap = 0.0;
                if let Some(deadline) = limits.deadline {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(solution.best_bound.map(|b| b - shift));
                    }
                    request.time_limit = Some(left);
                }
                backend.solve(capped.as_ref().unwrap_or(&self.model.lp), request)
            }
            other => other,
        };
        Ok(outcome)
    }

    /// The plan of the backend's answer (checked against the program), with whether it is
    /// proven optimal.
    fn read_outcome(&self, outcome: MipOutcome, proof: Proof, shift: f64) -> Solved {
        let backend = self.facts.backend;
        // Back from the solver's view of L1 to the level's value.
        let outcome = match outcome {
            MipOutcome::Solution(mut solution) => {
                solution.objective -= shift;
                solution.best_bound = solution.best_bound.map(|bound| bound - shift);
                MipOutcome::Solution(solution)
            }
            MipOutcome::Interrupted { termination, best_bound, nodes } => {
                MipOutcome::Interrupted { termination, best_bound: best_bound.map(|bound| bound - shift), nodes }
            }
            other => other,
        };
        let solution = match outcome {
            MipOutcome::Solution(solution) => {
                // Never trust a solver's answer unchecked: a wrong one costs optimality, not validity.
                if let Err(why) = self.model.lp.check(&solution.values, CHECK_TOLERANCE) {
                    return Solved::Error(format!(
                        "{} returned an answer that breaks its program: {why}",
                        backend.name()
                    ));
                }
                solution
            }
            MipOutcome::Infeasible => return Solved::Infeasible,
            MipOutcome::Error(error) => return Solved::Error(format!("{}: {error}", backend.name())),
            MipOutcome::Interrupted { termination, best_bound, .. } => {
                return Solved::Interrupted { limit: limit_of(termination).unwrap_or(Limit::Time), best_bound }
            }
        };
        let proven =
            solution.termination == Termination::Optimal || proof.proves(solution.objective, solution.best_bound);
        let best_bound =
            if solution.termination == Termination::Optimal { Some(solution.objective) } else { solution.best_bound };
        let limit = if proven { None } else { limit_of(solution.termination) };
        Solved::Solution { solution: self.vars.read(&self.model.ints, &solution), proven, limit, best_bound }
    }
}

/// A type's hourly price as the plan's objective counts it (whole millionths, `fleet::price_micros`),
/// so the master's cost and the reported cost agree to the micro and a master solution at the
/// cost floor is a plan at the floor.
fn price_in_micros_precision(problem: &Problem, type_index: usize) -> f64 {
    crate::fleet::price_micros(problem, type_index).map_or(0.0, |micros| crate::plan::from_micros(i128::from(micros)))
}

/// How the planner proves a solution optimal besides the solver's own word.
#[derive(Debug, Clone, Copy)]
struct Proof {
    /// The level takes integer values: the best bound rounded up reaching the incumbent proves it.
    integral: bool,
    /// The priced cost's floor, in dollars of whole millionths: a solution there is optimal.
    cost_floor: Option<f64>,
}

impl Proof {
    fn proves(self, value: f64, bound: Option<f64>) -> bool {
        (self.integral && closes(value, bound))
            || self.cost_floor.is_some_and(|floor| crate::plan::to_micros(value) <= crate::plan::to_micros(floor))
    }
}

/// How far below a priced cost floor its cut goes: the model's float sums of prices must not
/// end up under it.
fn cost_hair(floor: f64) -> f64 {
    floor.abs() * 1e-9 + 1e-6
}

/// The proof for an integer-valued level: the best bound rounded up reaches the incumbent.
fn closes(value: f64, bound: Option<f64>) -> bool {
    bound.is_some_and(|b| (b - 1e-6).ceil() >= value.round())
}

/// The limit a solver's termination stands for (`None`: it proved optimality).
fn limit_of(termination: Termination) -> Option<Limit> {
    match termination {
        Termination::NodeLimit => Some(Limit::Nodes),
        Termination::Optimal => None,
        _ => Some(Limit::Time),
    }
}

/// Size-class cuts of one aggregated group and resource `r` (constraint 2): at most k copies
/// whose need exceeds cap/(k+1) share one instance.
fn size_class_cuts(model: &mut Model, y: Variable, r: usize, cap: u64, copies: &[(usize, Variable, Resources)]) {
    let per: Vec<(Variable, u64)> = copies
        .iter()
        .filter(|(_, _, need)| resource(need, r) > 0)
        .map(|&(_, x, need)| (x, cap / resource(&need, r)))
        .collect();
    let thresholds: BTreeSet<u64> = per.iter().map(|&(_, k)| k).filter(|&k| k <= 32).collect();
    for k in thresholds {
        let mut row: Vec<(Variable, f64)> = per.iter().filter(|&&(_, kc)| kc <= k).map(|&(x, _)| (x, 1.0)).collect();
        if row.len() < 2 {
            continue;
        }
        row.push((y, -(k as f64)));
        model.constrain(&row, Sense::AtMost, 0.0);
    }
}

impl Vars {
    /// The master solution these variables take in `solution`, rounded to integers.
    fn read(&self, ints: &[Variable], solution: &MipSolution) -> MasterSolution {
        let raw = |v: Variable| solution.values.get(v.index()).copied().unwrap_or(0.0);
        let value = |v: Variable| -> u32 { raw(v).round().max(0.0) as u32 };
        let mut result = MasterSolution {
            value: solution.objective,
            integers: ints.iter().map(|&v| raw(v).round()).collect(),
            ..MasterSolution::default()
        };
        for (&group, &y) in &self.launches {
            let count = value(y);
            if count > 0 {
                result.launches.insert(group, count);
            }
        }
        for (&group, copies) in &self.group_copies {
            let list: Vec<(usize, u32)> = copies.iter().map(|&(c, x)| (c, value(x))).filter(|&(_, n)| n > 0).collect();
            if !list.is_empty() {
                result.group_copies.insert(group, list);
            }
        }
        for (&group, slots) in &self.slots {
            let bins: Vec<Vec<(usize, u32)>> = slots
                .iter()
                .filter(|(used, _)| value(*used) > 0)
                .map(|(_, contents)| contents.iter().map(|&(c, x)| (c, value(x))).filter(|&(_, n)| n > 0).collect())
                .collect();
            if !bins.is_empty() {
                result.slot_bins.insert(group, bins);
            }
        }
        result.keep = self.keep.iter().map(|&k| value(k) > 0).collect();
        for (&key, &v) in &self.add {
            let n = value(v);
            if n > 0 {
                result.add.insert(key, n);
            }
        }
        for (&key, &v) in &self.remove {
            let n = value(v);
            if n > 0 {
                result.remove.insert(key, n);
            }
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every split of `total` copies over `zones` AZs, as count vectors.
    fn splits(total: u64, zones: u64) -> Vec<Vec<u64>> {
        if zones == 1 {
            return vec![vec![total]];
        }
        (0..=total)
            .flat_map(|first| {
                splits(total - first, zones - 1).into_iter().map(move |mut rest| {
                    rest.push(first);
                    rest
                })
            })
            .collect()
    }

    #[test]
    fn count_range_is_exactly_the_counts_of_splits_within_the_spread() {
        for zones in 1..=4u64 {
            for total in 0..=9u64 {
                for spread in 0..=4u64 {
                    let within: Vec<Vec<u64>> = splits(total, zones)
                        .into_iter()
                        .filter(|split| split.iter().max().unwrap_or(&0) - split.iter().min().unwrap_or(&0) <= spread)
                        .collect();
                    let fewest = within.iter().flatten().min().copied();
                    let most = within.iter().flatten().max().copied();
                    let (low, high) = count_range(total, zones, spread);
                    if within.is_empty() {
                        // No split is that even: the range is empty, so the model is infeasible.
                        assert!(low > high, "{total} over {zones}, spread {spread}");
                        continue;
                    }
                    // Valid: no split within the spread leaves the range, and tight.
                    assert_eq!((fewest, most), (Some(low), Some(high)), "{total} over {zones}, spread {spread}");
                }
            }
        }
    }

    /// L2's relaxation with L1 fixed: 3 copies of `odd` (MaxImbalance 0) over 2 AZs, and `huge`,
    /// which no type fits. Placing 3 copies means every component holds its most, so `odd` has
    /// 3 copies and an excess of at least 1, which the LP sees only through the known total.
    #[test]
    fn a_component_that_never_fits_leaves_the_other_totals_known() {
        let scenario = crate::ScenarioBuilder::new(["us-east-1a", "us-east-1b"])
            .pool("ml.g6.12xlarge", 1)
            .component("odd", 3, 1, 1.0, 1024)
            .max_imbalance("odd", 0)
            .component("huge", 1, 8, 1.0, 1024)
            .build()
            .unwrap();
        let problem = Problem::new(&scenario).expect("valid scenario");
        let backend = crate::engines::exact::backend::Microlp;
        let facts = Facts::new(&problem, &backend);
        let layout = Layout { slot_groups: BTreeSet::new(), cuts: true };
        let relaxed = Extra { relax: true, ..Extra::default() };
        let lp_value = |fixed: &[(Goal, f64)]| match solve(
            &facts,
            &layout,
            Goal::Balance,
            fixed,
            Limits::default(),
            Warm::None,
            relaxed,
        ) {
            Solved::Solution { solution, .. } => solution.value,
            other => panic!("the relaxation solves: {other:?}"),
        };
        assert!((lp_value(&[(Goal::Unplaced, -3.0)]) - 1.0).abs() < 1e-6);
        // With 2 placed, `odd`'s total is not known (2 is even): no such bound.
        assert!(lp_value(&[(Goal::Unplaced, -2.0)]).abs() < 1e-6);
    }

    #[test]
    fn least_excess_is_the_most_even_split() {
        for zones in 1..=4u64 {
            for total in 0..=9u64 {
                for limit in 0..=2u64 {
                    let least = splits(total, zones)
                        .iter()
                        .map(|split| {
                            let spread = split.iter().max().unwrap_or(&0) - split.iter().min().unwrap_or(&0);
                            spread.saturating_sub(limit)
                        })
                        .min();
                    assert_eq!(least, Some(least_balance_excess(total, zones, limit)));
                }
            }
        }
    }
}
