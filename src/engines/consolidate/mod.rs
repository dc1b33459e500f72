//! Consolidation (docs/contract.md §3): move copies between existing instances so instances can be released.
//!
//! The planner is a deterministic greedy (see `docs/consolidation.md`): it walks the release
//! candidates in objective order (draining instances first — contract §6 — then highest priority
//! number, then most expensive, then fewest copies), tries to re-home every copy of a candidate
//! onto the instances that stay (never a draining one), and commits the release only if every
//! copy found a home without breaking packing, eligibility, AZ balance or the SPREAD rule.
//! Committed releases are grouped into steps of at most `MaximumStepSize` releases. Small fleets
//! get extra greedy runs with one instance pinned (never released), tiny ones an exhaustive
//! search; [`Consolidator`] sets the limits. [`verify_consolidation`] re-checks any plan
//! independently.

mod check;
mod exhaustive;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use serde::{Deserialize, Serialize};

pub use crate::engines::steps::{spread_offender_total, Move};
pub use check::verify_consolidation;

use crate::engines::contract::{problem_engine, problem_output, Engine};
use crate::engines::limits::{Limits, Stats};
use crate::engines::steps::{self, copy_resources, spread_offenders, Launch, SpreadView, Step, StepInstance};
use crate::fleet::{fleet_cost_unit, imbalance, instance_cost_micros, objective, FinalFleet, FinalInstance};
use crate::index::{AzIndex, ComponentIndex, TypeIndex};
use crate::plan::{CostUnit, Objective, StopReason};
use crate::problem::{PlacementStrategy, Problem, Resources};

/// One executable step: moves, then the instances they empty are released.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ConsolidationStep {
    /// Moves of this step.
    pub moves: Vec<Move>,
    /// Instances released at the end of the step.
    pub release: Vec<String>,
}

impl Step for ConsolidationStep {
    fn launches(&self) -> &[Launch] {
        &[]
    }

    fn moves(&self) -> &[Move] {
        &self.moves
    }

    fn releases(&self) -> &[String] {
        &self.release
    }
}

/// A consolidation plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ConsolidationPlan {
    /// Steps, executed in order.
    pub steps: Vec<ConsolidationStep>,
    /// Objective of the final fleet.
    pub objective: Objective,
    /// Why the planner stopped (written to JSON only when a limit stopped it).
    #[serde(default = "steps::completed", skip_serializing_if = "is_completed")]
    pub stop_reason: StopReason,
}

fn is_completed(reason: &StopReason) -> bool {
    *reason == StopReason::Completed
}

impl ConsolidationPlan {
    /// Ids of every released instance, in release order.
    pub fn released(&self) -> impl Iterator<Item = &str> + '_ {
        steps::released(&self.steps)
    }

    /// Total number of moves over all steps.
    pub fn move_count(&self) -> usize {
        steps::move_count(&self.steps)
    }

    /// The fleet after every step, replayed by instance id on the problem's fleet. Moves and
    /// releases that name unknown instances or copies that are not there are skipped (use
    /// [`verify_consolidation`] to find them).
    pub fn final_fleet(&self, problem: &Problem) -> FinalFleet {
        steps::fleet_after(problem, &self.steps)
    }

    /// The plan as pretty JSON (deterministic).
    #[cfg(feature = "json")]
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// Plans consolidation of the problem's fleet with default settings.
///
/// ```
/// use fleetplan::{consolidate, verify_consolidation, Problem, ScenarioBuilder};
/// let scenario = ScenarioBuilder::new(["a"])
///     .pool("ml.g6.12xlarge", 1)
///     .component("chat", 2, 1, 1.0, 1024)
///     .strategy("chat", fleetplan::PlacementStrategy::Binpack)
///     .fleet_instance("i-1", "ml.g6.12xlarge", "a", false)
///     .fleet_instance("i-2", "ml.g6.12xlarge", "a", false)
///     .fleet_copies("chat", "i-1", 1)
///     .fleet_copies("chat", "i-2", 1)
///     .build().unwrap();
/// let problem = Problem::new(&scenario).unwrap();
/// let plan = consolidate(&problem);
/// assert_eq!(plan.released().count(), 1);
/// assert!(verify_consolidation(&problem, &plan).is_empty());
/// ```
pub fn consolidate(problem: &Problem) -> ConsolidationPlan {
    Consolidator::new().plan(problem)
}

/// Most copies in a fleet the exhaustive search takes on.
pub const MAX_EXHAUSTIVE_COPIES: u64 = 32;

/// Consolidation planner with explicit settings.
///
/// ```
/// use fleetplan::{Consolidator, Problem};
/// # let problem = Problem::from_json(include_str!("../../../scenarios/fragmented-fleet.json")).unwrap();
/// let plan = Consolidator::new().max_steps(1).plan(&problem);
/// assert!(plan.steps.len() <= 1);
/// ```
#[derive(Debug, Clone)]
pub struct Consolidator {
    limits: Limits,
    max_steps: Option<usize>,
    exhaustive_instances: usize,
    pinning_instances: usize,
}

/// States the exhaustive search visits when the limits set no node limit.
pub const DEFAULT_NODE_LIMIT: u64 = 20_000;

impl Default for Consolidator {
    fn default() -> Self {
        Consolidator { limits: Limits::new(), max_steps: None, exhaustive_instances: 6, pinning_instances: 64 }
    }
}

impl Consolidator {
    /// States the exhaustive search visits when the limits set no node limit.
    pub const DEFAULT_NODE_LIMIT: u64 = DEFAULT_NODE_LIMIT;

    /// Most copies in a fleet the exhaustive search takes on.
    pub const MAX_EXHAUSTIVE_COPIES: u64 = MAX_EXHAUSTIVE_COPIES;

    /// A planner without a step limit. Fleets of up to 64 instances get one extra greedy run
    /// per pinned instance; fleets of up to 6 instances (and 32 copies) are also searched
    /// exhaustively (up to 20 000 search nodes). The best plan is returned.
    pub fn new() -> Self {
        Consolidator::default()
    }

    /// Searches fleets of at most `instances` instances exhaustively as well as greedily
    /// (0 = greedy only). The search is deterministic: it is bounded by [`Self::node_limit`],
    /// not by time.
    pub fn exhaustive_up_to(mut self, instances: usize) -> Self {
        self.exhaustive_instances = instances;
        self
    }

    /// Reruns the greedy once per pinned instance (never released) for fleets of at most
    /// `instances` instances and keeps the best plan (0 = a single greedy run).
    pub fn pinning_up_to(mut self, instances: usize) -> Self {
        self.pinning_instances = instances;
        self
    }

    /// Exactly `.limits(Limits::new().node_limit(nodes))`: most states the exhaustive search
    /// visits (default [`Self::DEFAULT_NODE_LIMIT`]).
    pub fn node_limit(mut self, nodes: u64) -> Self {
        self.limits = self.limits.clone().node_limit(nodes);
        self
    }

    /// The shared engine limits: a time limit per call (or a deadline) and a cancellation check
    /// stop the release walk, the pinned reruns and the exhaustive search (each keeps what it
    /// has, which is a valid plan); the node limit bounds the exhaustive search. Each field
    /// `limits` sets replaces the one set before ([`Limits::merged`]). No default time limit:
    /// the release walk and the reruns are bounded by the fleet's size, the search by
    /// [`Self::DEFAULT_NODE_LIMIT`].
    pub fn limits(mut self, limits: Limits) -> Self {
        self.set_limits(limits);
        self
    }

    fn search_nodes(&self) -> usize {
        usize::try_from(self.limits.nodes().unwrap_or(DEFAULT_NODE_LIMIT)).unwrap_or(usize::MAX)
    }

    /// Plans at most `steps` steps (the first steps of the unlimited plan are not guaranteed to be
    /// the same, since releases are grouped as they are found).
    pub fn max_steps(mut self, steps: usize) -> Self {
        self.max_steps = Some(steps);
        self
    }

    /// The exhaustive search alone, for fleets of at most [`Self::exhaustive_up_to`] instances
    /// and [`Self::MAX_EXHAUSTIVE_COPIES`] copies (`None` for larger fleets). The flag is true when
    /// the search finished within the node limit: the plan is then optimal (L3, L4, then fewest
    /// moves) among plans that release one instance at a time and move only copies of the
    /// instance being released.
    pub fn plan_exhaustive(&self, problem: &Problem) -> Option<(ConsolidationPlan, bool)> {
        self.exhaustive_within(problem, &self.limits.armed(None)).map(|(plan, complete, _)| (plan, complete))
    }

    /// [`Self::plan_exhaustive`] under armed limits, with the states it visited.
    fn exhaustive_within(&self, problem: &Problem, limits: &Limits) -> Option<(ConsolidationPlan, bool, u64)> {
        // The search recurses once per moved copy: keep it to fleets with few copies too.
        let copies: u64 = problem.existing_copies_per_component().iter().sum();
        if problem.fleet().len() > self.exhaustive_instances || copies > MAX_EXHAUSTIVE_COPIES {
            return None;
        }
        let mut searcher = Planner::new(problem);
        searcher.limits = limits.clone();
        let found = searcher.exhaustive(self.search_nodes());
        let steps = searcher.group(&found.releases);
        let stop_reason = found.stopped.unwrap_or(StopReason::Completed);
        let mut searched = ConsolidationPlan { steps, objective: Objective::default(), stop_reason };
        searched.objective = objective(problem, &searched.final_fleet(problem));
        Some((searched, found.complete, found.nodes))
    }

    /// Plans consolidation of the problem's fleet.
    ///
    /// The greedy always runs. With no step limit and a fleet of at most
    /// [`Self::exhaustive_up_to`] instances, an exhaustive search over release sequences runs as
    /// well and its plan is returned when it is better by [`consolidation_score`].
    pub fn plan(&self, problem: &Problem) -> ConsolidationPlan {
        self.plan_with_stats(problem).0
    }

    /// [`plan`](Self::plan), with what the planner did (greedy runs as `solves`, steps as
    /// `rounds`). Runs on the problem in canonical order, so the input's order does not steer it.
    pub fn plan_with_stats(&self, problem: &Problem) -> (ConsolidationPlan, Stats) {
        super::on_canonical(problem, |problem| self.plan_canonical(problem))
    }

    /// [`Self::plan_with_stats`] on a problem in canonical order.
    fn plan_canonical(&self, problem: &Problem) -> (ConsolidationPlan, Stats) {
        let started = Instant::now();
        let limits = self.limits.armed(None);
        let mut stats = Stats::default();
        let max_steps = self.max_steps.unwrap_or(usize::MAX);
        let greedy_run = |pinned: Option<usize>| {
            let mut planner = Planner::new(problem);
            planner.pinned = pinned;
            planner.limits = limits.clone();
            let steps = planner.run(max_steps);
            let stop_reason = planner.stopped.clone().unwrap_or(StopReason::Completed);
            ConsolidationPlan { steps, objective: objective(problem, &planner.final_fleet()), stop_reason }
        };
        // Draining instances left in the final fleet come before the objective (contract §6).
        let score = |plan: &ConsolidationPlan| (draining_left(problem, plan), consolidation_score(plan));
        let mut greedy = greedy_run(None);
        stats.solves += 1;
        // Small fleets: also rerun with each instance pinned, which catches the greedy's typical
        // miss (releasing an instance that would have been the best home for others' copies).
        // A draining instance is never pinned: it is to be released.
        if problem.fleet().len() <= self.pinning_instances {
            for pinned in (0..problem.fleet().len()).filter(|&index| !problem.fleet()[index].draining) {
                if let Some(reason) = limits.stop_now() {
                    greedy.stop_reason = reason;
                    break;
                }
                let candidate = greedy_run(Some(pinned));
                stats.solves += 1;
                if score(&candidate) < score(&greedy) {
                    greedy = candidate;
                }
            }
        }
        stats.phase("greedy runs", started);
        // The exhaustive search orders releases by objective alone, not draining first.
        let any_draining = problem.fleet().iter().any(|instance| instance.draining);
        let best = if self.max_steps.is_some() || any_draining || greedy.stop_reason != StopReason::Completed {
            greedy
        } else {
            let phase = Instant::now();
            let searched = self.exhaustive_within(problem, &limits);
            stats.phase("exhaustive search", phase);
            stats.nodes += searched.as_ref().map_or(0, |(_, _, nodes)| *nodes);
            match searched {
                Some((searched, ..)) if consolidation_score(&searched) < consolidation_score(&greedy) => searched,
                Some((searched, ..)) => ConsolidationPlan { stop_reason: searched.stop_reason, ..greedy },
                None => greedy,
            }
        };
        stats.rounds = best.steps.len() as u64;
        (best, stats)
    }
}

problem_engine!(Consolidator => ConsolidationPlan);

problem_output!(ConsolidationPlan, verify_consolidation {});

/// Draining instances (contract §6) that a plan leaves in the fleet.
fn draining_left(problem: &Problem, plan: &ConsolidationPlan) -> usize {
    let released: BTreeSet<&str> = plan.released().collect();
    problem.fleet().iter().filter(|instance| instance.draining && !released.contains(instance.id.as_str())).count()
}

/// [`consolidation_score`]: `(n6, …, n1)`, cost in millionths, moves; smaller is better.
pub type ConsolidationScore = ([u32; 6], i128, usize);

/// What consolidation minimises, in order (docs/contract.md §3): L3 `(n6, …, n1)`, then L4 cost, then the
/// number of moves. (L1 never changes; L2 is a constraint that must not get worse, so a plan
/// that happens to improve it is not preferred for that.)
pub fn consolidation_score(plan: &ConsolidationPlan) -> ConsolidationScore {
    let key = plan.objective.key();
    (key.fallback_counts, key.cost_micros, plan.move_count())
}

struct Planner<'p> {
    problem: &'p Problem,
    nodes: Vec<StepInstance>,
    /// `[component][az]` copies over alive instances.
    per_az: Vec<Vec<u64>>,
    alive: usize,
    /// The fleet's L4 cost unit (instances when some fleet type has no price).
    cost_unit: CostUnit,
    /// An instance this run never releases (it stays as a home for others' copies).
    pinned: Option<usize>,
    /// The caller's deadline and cancellation.
    limits: Limits,
    /// Set when a limit stopped the run (what was planned so far stands).
    stopped: Option<StopReason>,
}

impl<'p> Planner<'p> {
    fn new(problem: &'p Problem) -> Self {
        let mut per_az = vec![vec![0u64; problem.azs().len()]; problem.components().len()];
        let nodes: Vec<StepInstance> = problem
            .fleet()
            .iter()
            .map(|existing| {
                let mut used = Resources::ZERO;
                for &(component, count) in &existing.copies {
                    used = used.plus(
                        &copy_resources(problem, ComponentIndex::new(component), TypeIndex::new(existing.type_index))
                            .times(u64::from(count)),
                    );
                    if let Some(slot) = per_az.get_mut(component).and_then(|row| row.get_mut(existing.az_index)) {
                        *slot += u64::from(count);
                    }
                }
                StepInstance {
                    id: existing.id.clone(),
                    type_index: existing.type_index,
                    az_index: existing.az_index,
                    reserved: existing.reserved,
                    draining: existing.draining,
                    copies: existing.copies.iter().copied().collect(),
                    used,
                    alive: true,
                }
            })
            .collect();
        let cost_unit = fleet_cost_unit(problem, nodes.iter().map(|node| node.type_index));
        let alive = nodes.len();
        Planner { problem, nodes, per_az, alive, cost_unit, pinned: None, limits: Limits::new(), stopped: None }
    }

    fn priority(&self, node: &StepInstance) -> u8 {
        self.problem.instance_types().get(node.type_index).map_or(6, |info| info.priority)
    }

    /// L4 cost of keeping the node (reserved instances are free).
    fn cost(&self, node: &StepInstance) -> i64 {
        instance_cost_micros(self.problem, node.type_index, node.reserved, self.cost_unit)
    }

    /// Release order: draining first (contract §6), then fallback (L3), then most expensive
    /// (L4), then fewest copies (moves).
    fn release_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> =
            (0..self.nodes.len()).filter(|&index| self.nodes[index].alive && self.pinned != Some(index)).collect();
        order.sort_by_key(|&index| {
            let node = &self.nodes[index];
            (!node.draining, Reverse(self.priority(node)), Reverse(self.cost(node)), node.total_copies(), index)
        });
        order
    }

    /// Repeated passes over the release candidates until a pass releases nothing.
    fn run(&mut self, max_steps: usize) -> Vec<ConsolidationStep> {
        let min_instances = usize::try_from(self.problem.scaling().min_instances).unwrap_or(usize::MAX);
        let step_size = usize::try_from(self.problem.scaling().maximum_step_size.max(1)).unwrap_or(1);
        let mut steps: Vec<ConsolidationStep> = Vec::new();
        // Instances receiving copies in the current step: they cannot be released in it.
        let mut step_targets: BTreeSet<usize> = BTreeSet::new();
        loop {
            let mut progress = false;
            for candidate in self.release_order() {
                if self.alive <= min_instances {
                    return steps;
                }
                if let Some(reason) = self.limits.stop_now() {
                    self.stopped = Some(reason);
                    return steps;
                }
                let joins_current = steps.last().is_some_and(|step| step.release.len() < step_size)
                    && !step_targets.contains(&candidate);
                if !joins_current && steps.len() >= max_steps {
                    continue;
                }
                let Some(moves) = self.try_release(candidate) else { continue };
                if !joins_current {
                    steps.push(ConsolidationStep { moves: Vec::new(), release: Vec::new() });
                    step_targets.clear();
                }
                let Some(step) = steps.last_mut() else { continue };
                let source = self.nodes[candidate].id.clone();
                for (component, target) in moves {
                    step_targets.insert(target);
                    step.moves.push(Move {
                        inference_component_name: self.problem.components()[component].name.clone(),
                        from: source.clone(),
                        to: self.nodes[target].id.clone(),
                    });
                }
                step.release.push(source);
                progress = true;
            }
            if !progress {
                return steps;
            }
        }
    }

    fn spread_offenders_now(&self, component: usize) -> u64 {
        let views: Vec<SpreadView> = self
            .nodes
            .iter()
            .filter(|node| node.alive)
            .map(|node| SpreadView {
                az_index: node.az_index,
                type_index: node.type_index,
                count: u64::from(node.copies_of(component)),
                used: node.used,
            })
            .collect();
        spread_offenders(self.problem, component, &views)
    }

    fn add_copy(&mut self, target: usize, component: usize, from_az: AzIndex) {
        let resources =
            copy_resources(self.problem, ComponentIndex::new(component), TypeIndex::new(self.nodes[target].type_index));
        let node = &mut self.nodes[target];
        *node.copies.entry(component).or_insert(0) += 1;
        node.used = node.used.plus(&resources);
        let to_az = node.az_index;
        if let Some(row) = self.per_az.get_mut(component) {
            if let Some(slot) = row.get_mut(from_az.index()) {
                *slot = slot.saturating_sub(1);
            }
            if let Some(slot) = row.get_mut(to_az) {
                *slot += 1;
            }
        }
    }

    fn undo_copy(&mut self, target: usize, component: usize, from_az: AzIndex) {
        let resources =
            copy_resources(self.problem, ComponentIndex::new(component), TypeIndex::new(self.nodes[target].type_index));
        let node = &mut self.nodes[target];
        if let Some(count) = node.copies.get_mut(&component) {
            *count -= 1;
            if *count == 0 {
                node.copies.remove(&component);
            }
        }
        node.used = node.used.minus(&resources).unwrap_or(Resources::ZERO);
        let to_az = node.az_index;
        if let Some(row) = self.per_az.get_mut(component) {
            if let Some(slot) = row.get_mut(to_az) {
                *slot = slot.saturating_sub(1);
            }
            if let Some(slot) = row.get_mut(from_az.index()) {
                *slot += 1;
            }
        }
    }

    /// What a release of `candidate` must not make worse: every component's imbalance, and the
    /// SPREAD offender count of each SPREAD component on it.
    fn guards_before_release(&self, candidate: usize) -> (Vec<u64>, Vec<(usize, u64)>) {
        let balance_before: Vec<u64> = self.per_az.iter().map(|row| imbalance(row)).collect();
        let spread_before: Vec<(usize, u64)> = self.nodes[candidate]
            .copies
            .keys()
            .filter(|&&component| self.problem.components()[component].strategy == PlacementStrategy::Spread)
            .map(|&component| (component, self.spread_offenders_now(component)))
            .collect();
        (balance_before, spread_before)
    }

    /// Tries to re-home every copy of `candidate` and release it. On success the state is
    /// committed and the moves `(component, target)` are returned; on failure nothing changes.
    fn try_release(&mut self, candidate: usize) -> Option<Vec<(usize, usize)>> {
        let source_az = AzIndex::new(self.nodes[candidate].az_index);
        let source_type = self.nodes[candidate].type_index;
        let (balance_before, spread_before) = self.guards_before_release(candidate);

        // Largest copies first: they are the hardest to fit.
        let mut units: Vec<usize> = Vec::new();
        for (&component, &count) in &self.nodes[candidate].copies {
            units.extend(std::iter::repeat_n(component, count as usize));
        }
        units.sort_by_key(|&component| {
            (
                Reverse(copy_resources(self.problem, ComponentIndex::new(component), TypeIndex::new(source_type))),
                component,
            )
        });

        let saved_copies = std::mem::take(&mut self.nodes[candidate].copies);
        let saved_used = self.nodes[candidate].used;
        self.nodes[candidate].alive = false;
        self.nodes[candidate].used = Resources::ZERO;
        let mut moves: Vec<(usize, usize)> = Vec::with_capacity(units.len());
        let mut failed = false;
        for component in units {
            match self.best_target(candidate, component, &balance_before) {
                Some(target) => {
                    self.add_copy(target, component, source_az);
                    moves.push((component, target));
                }
                None => {
                    failed = true;
                    break;
                }
            }
        }
        if !failed {
            failed = spread_before.iter().any(|&(component, before)| self.spread_offenders_now(component) > before);
        }
        if failed {
            for &(component, target) in moves.iter().rev() {
                self.undo_copy(target, component, source_az);
            }
            let node = &mut self.nodes[candidate];
            node.copies = saved_copies;
            node.used = saved_used;
            node.alive = true;
            return None;
        }
        self.alive -= 1;
        Some(moves)
    }

    /// The best instance to receive one copy of `component` leaving `candidate`, if any may.
    fn best_target(&self, candidate: usize, component: usize, balance_before: &[u64]) -> Option<usize> {
        let problem = self.problem;
        let info = problem.components().get(component)?;
        let source_az = self.nodes.get(candidate)?.az_index;
        let row = self.per_az.get(component)?;
        // Which AZs may receive a copy from `source_az` without the imbalance growing.
        let az_allowed: Vec<bool> = (0..problem.azs().len())
            .map(|az| {
                if az == source_az || info.max_imbalance.is_none() {
                    return true;
                }
                let mut after = row.clone();
                after[source_az] = after[source_az].saturating_sub(1);
                after[az] += 1;
                imbalance(&after) <= balance_before.get(component).copied().unwrap_or(0)
            })
            .collect();
        let spread = info.strategy == PlacementStrategy::Spread;
        self.nodes
            .iter()
            .enumerate()
            .filter(|&(index, node)| {
                node.alive && !node.draining && index != candidate && az_allowed.get(node.az_index) == Some(&true)
            })
            .filter_map(|(index, node)| {
                let requirement = info.placement_requirement(problem, node.type_index)?;
                let capacity = problem.instance_types().get(node.type_index)?.capacity;
                let after = node.used.plus(&requirement.resources);
                if !after.fits_in(&capacity) {
                    return None;
                }
                let cross_az = node.az_index != source_az;
                let key = (
                    // Stay in the AZ; when leaving it, go where the component is thinnest.
                    cross_az,
                    if cross_az { row.get(node.az_index).copied().unwrap_or(0) } else { 0 },
                    // SPREAD: the instance with the fewest copies of the component.
                    if spread { node.copies_of(component) } else { 0 },
                    // Instances that will be kept: preferred tiers first.
                    self.priority(node),
                    // Best fit: least room left afterwards.
                    leftover(&capacity, &after),
                    self.cost(node),
                    // Release candidates go in index order among equals; receiving on the last
                    // keeps the early candidates free to be released in the same step.
                    Reverse(index),
                );
                Some((key, index))
            })
            .min()
            .map(|(_, index)| index)
    }

    /// Whether `target` may receive one copy of `component` leaving `candidate` now: alive, not
    /// draining, eligible, and room for the copy with the target type's requirement. AZ balance
    /// is the caller's to check once all copies of the component have moved: a check per copy
    /// would depend on the order the copies are tried in.
    fn may_receive(&self, candidate: usize, component: usize, target: usize) -> bool {
        let problem = self.problem;
        let (Some(node), Some(info)) = (self.nodes.get(target), problem.components().get(component)) else {
            return false;
        };
        if !node.alive || node.draining || target == candidate {
            return false;
        }
        let Some(requirement) = info.placement_requirement(problem, node.type_index) else { return false };
        let Some(type_info) = problem.instance_types().get(node.type_index) else { return false };
        node.used.plus(&requirement.resources).fits_in(&type_info.capacity)
    }

    /// Whether `component`'s imbalance over the AZs is at most what it was before the release
    /// (`balance_before`), or the component has no `AvailabilityZoneBalance`.
    fn balance_kept(&self, component: usize, balance_before: &[u64]) -> bool {
        let balanced = self.problem.components().get(component).is_some_and(|info| info.max_imbalance.is_some());
        !balanced
            || self
                .per_az
                .get(component)
                .is_some_and(|row| imbalance(row) <= balance_before.get(component).copied().unwrap_or(0))
    }

    /// Groups a sequence of releases into steps: a release joins the current step when the step
    /// has room and the released instance received no copy in it.
    fn group(&self, releases: &[exhaustive::Release]) -> Vec<ConsolidationStep> {
        let step_size = usize::try_from(self.problem.scaling().maximum_step_size.max(1)).unwrap_or(1);
        let mut steps: Vec<ConsolidationStep> = Vec::new();
        let mut step_targets: BTreeSet<usize> = BTreeSet::new();
        for (candidate, moves) in releases {
            let joins_current =
                steps.last().is_some_and(|step| step.release.len() < step_size) && !step_targets.contains(candidate);
            if !joins_current {
                steps.push(ConsolidationStep { moves: Vec::new(), release: Vec::new() });
                step_targets.clear();
            }
            let Some(step) = steps.last_mut() else { continue };
            let (Some(source), names) = (self.nodes.get(*candidate), self.problem.components()) else { continue };
            for &(component, target) in moves {
                let (Some(info), Some(node)) = (names.get(component), self.nodes.get(target)) else { continue };
                step_targets.insert(target);
                step.moves.push(Move {
                    inference_component_name: info.name.clone(),
                    from: source.id.clone(),
                    to: node.id.clone(),
                });
            }
            step.release.push(source.id.clone());
        }
        steps
    }

    fn final_fleet(&self) -> FinalFleet {
        let instances = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, node)| node.alive)
            .map(|(index, node)| FinalInstance {
                id: node.id.clone(),
                type_index: node.type_index,
                az_index: node.az_index,
                reserved: node.reserved,
                existing: Some(index),
                copies: node.copies.clone(),
                new_copies: BTreeMap::new(),
            })
            .collect();
        FinalFleet { instances, launches: BTreeMap::new(), removed: BTreeMap::new() }
    }
}

/// Room left after a placement, as parts per million of each resource, summed.
fn leftover(capacity: &Resources, used: &Resources) -> u64 {
    let part = |have: u64, taken: u64| -> u64 {
        if have == 0 {
            0
        } else {
            let free = u128::from(have.saturating_sub(taken));
            u64::try_from(free * 1_000_000 / u128::from(have)).unwrap_or(u64::MAX)
        }
    };
    part(capacity.accelerators, used.accelerators)
        .saturating_add(part(capacity.milli_cpus, used.milli_cpus))
        .saturating_add(part(capacity.memory_mib, used.memory_mib))
}
