//! Rebalancing (contract §7): back to preferred hardware when its capacity returns, and replacement
//! consolidation (launch one preferred or cheaper instance to free several), in make-before-break
//! steps.
//!
//! The planner is a deterministic greedy (see `docs/rebalance.md`) built like consolidation
//! ([`crate::engines::consolidate`]): it walks release candidates in objective order (draining
//! first, then highest priority number, most expensive, fewest copies). For each candidate it
//! simulates every *unit* it may commit — re-home the candidate's copies onto instances that stay
//! (a consolidation release), or launch one instance of a pool type and AZ with capacity left, move
//! the candidate's copies onto it (and onto instances that stay when they do not fit) and then
//! move whole further instances of that AZ onto it while they fit — and commits the unit whose
//! final fleet is best by (draining instances left, L3, L4), then fewest moves, provided it is
//! strictly better than before. Committed units are grouped into steps of at most
//! `MaximumStepSize` launches and releases. [`verify_rebalance`] re-checks any plan
//! independently; [`summarize`] and [`best_reachable`] report what the plan changes and how far
//! its final fleet is from the exact planner's optimum from an empty fleet.

mod check;
mod path;
mod summary;
mod target;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use check::verify_rebalance;
pub use summary::{
    best_reachable, change_text, reachable_problem, rebalance_table, summarize, BestReachable, RebalanceSummary,
    StepSummary,
};

use crate::engines::contract::{problem_engine, problem_output, Engine};
use crate::engines::limits::{Limits, Stats};
use crate::engines::spread::{has_room_for_copy, spread_offenders_among};
pub use crate::engines::steps::Launch;
use crate::engines::steps::{self, copy_resources, Move, Step, StepInstance};
use crate::engines::LaunchIds;
use crate::fleet::{cost_unit, imbalance, instance_cost_micros, objective, price_micros, FinalFleet, FinalInstance};
use crate::index::{AzIndex, ComponentIndex, TypeIndex};
use crate::plan::{CostUnit, Objective, StopReason};
use crate::problem::{PlacementStrategy, Problem, Resources};

/// One executable step: launches first, then moves (make-before-break), then releases.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct RebalanceStep {
    /// Instances launched at the start of the step.
    #[serde(default)]
    pub launch: Vec<Launch>,
    /// Moves of this step; they may target the step's launches.
    #[serde(default)]
    pub moves: Vec<Move>,
    /// Instances released at the end of the step (emptied by its moves).
    #[serde(default)]
    pub release: Vec<String>,
}

impl Step for RebalanceStep {
    fn launches(&self) -> &[Launch] {
        &self.launch
    }

    fn moves(&self) -> &[Move] {
        &self.moves
    }

    fn releases(&self) -> &[String] {
        &self.release
    }
}

/// A rebalancing plan (contract §7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct RebalancePlan {
    /// Steps, executed in order.
    pub steps: Vec<RebalanceStep>,
    /// Objective of the final fleet.
    pub objective: Objective,
    /// Why the planner stopped (`TimeLimit` when the time limit cut it short).
    #[serde(default = "steps::completed")]
    pub stop_reason: StopReason,
    /// Objective of the target fleet the target-directed path heads for (the exact planner's
    /// best fleet for the copies running now, draining instances replaced); `None` when no
    /// target was planned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_objective: Option<Objective>,
    /// Objective the plan reaches (the same as `objective`), given next to `target_objective`
    /// so that the distance to the target reads in one place; `None` when no target was
    /// planned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reached_objective: Option<Objective>,
}

impl RebalancePlan {
    /// Ids of every released instance, in release order.
    pub fn released(&self) -> impl Iterator<Item = &str> + '_ {
        steps::released(&self.steps)
    }

    /// Every launch, in launch order.
    pub fn launches(&self) -> impl Iterator<Item = &Launch> + '_ {
        self.steps.iter().flat_map(|step| step.launch.iter())
    }

    /// Total number of moves over all steps.
    pub fn move_count(&self) -> usize {
        steps::move_count(&self.steps)
    }

    /// The fleet after the first `steps` steps, replayed by instance id on the problem's fleet
    /// (kept existing instances in fleet order, then launches in launch order). Entries that do
    /// not make sense (unknown ids, copies that are not there) are skipped; use
    /// [`verify_rebalance`] to find them.
    pub fn fleet_after(&self, problem: &Problem, steps: usize) -> FinalFleet {
        steps::fleet_after(problem, &self.steps[..steps.min(self.steps.len())])
    }

    /// The fleet after every step (see [`Self::fleet_after`]).
    pub fn final_fleet(&self, problem: &Problem) -> FinalFleet {
        self.fleet_after(problem, self.steps.len())
    }

    /// The plan as pretty JSON (deterministic).
    #[cfg(feature = "json")]
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// Plans rebalancing of the problem's fleet with default settings (no time limit).
///
/// ```
/// use fleetplan::{rebalance, verify_rebalance, Problem, ScenarioBuilder};
/// // Two priority-2 instances hold one copy each; priority-1 capacity is available again.
/// let scenario = ScenarioBuilder::new(["a"])
///     .pool("ml.g6.12xlarge", 1)
///     .pool("ml.g5.12xlarge", 2)
///     .component("chat", 2, 1, 1.0, 1024)
///     .strategy("chat", fleetplan::PlacementStrategy::Binpack)
///     .fleet_instance("i-1", "ml.g5.12xlarge", "a", false)
///     .fleet_instance("i-2", "ml.g5.12xlarge", "a", false)
///     .fleet_copies("chat", "i-1", 1)
///     .fleet_copies("chat", "i-2", 1)
///     .instance_limits(1, None)
///     .build().unwrap();
/// let problem = Problem::new(&scenario).unwrap();
/// let plan = rebalance(&problem);
/// assert!(verify_rebalance(&problem, &plan).is_empty());
/// assert_eq!(plan.objective.instances_of_priority(2), 0);
/// assert_eq!(plan.objective.instances_of_priority(1), 1);
/// ```
pub fn rebalance(problem: &Problem) -> RebalancePlan {
    Rebalancer::new().plan(problem)
}

/// Rebalancing planner with explicit settings.
///
/// ```
/// use std::time::Duration;
/// use fleetplan::{Limits, Problem, Rebalancer};
/// # let problem = Problem::from_json(include_str!("../../../scenarios/fragmented-fleet.json")).unwrap();
/// let limits = Limits::new().time_limit(Duration::from_millis(500));
/// let plan = Rebalancer::new().limits(limits).max_steps(2).plan(&problem);
/// assert!(plan.steps.len() <= 2);
/// ```
#[derive(Debug, Clone)]
pub struct Rebalancer {
    limits: Limits,
    max_steps: Option<usize>,
    extra_victim_tries: usize,
    steps_per_launch: usize,
    variants_up_to: usize,
    self_check: bool,
    target_directed: bool,
    target_up_to: usize,
    greedy_units: bool,
}

impl Default for Rebalancer {
    fn default() -> Self {
        Rebalancer {
            limits: Limits::new(),
            max_steps: None,
            extra_victim_tries: 64,
            steps_per_launch: 4,
            variants_up_to: 256,
            self_check: cfg!(debug_assertions),
            target_directed: true,
            target_up_to: 512,
            greedy_units: true,
        }
    }
}

impl Rebalancer {
    /// A planner without time or step limits; self-checking in debug builds. Bounded by
    /// construction: at most four greedy runs, each of passes over the release candidates that
    /// end when a pass commits nothing (every commit strictly improves the fleet's score).
    pub fn new() -> Self {
        Rebalancer::default()
    }

    /// A time limit per call (or a deadline), a node limit (release candidates tried, over all
    /// runs) and cancellation: when one is hit the planner returns the steps committed so far
    /// (each one valid) with the matching [`StopReason`]. Each field `limits` sets replaces the
    /// one set before ([`Limits::merged`]).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.set_limits(limits);
        self
    }

    /// Exactly `.limits(Limits::new().time_limit(limit))`: stops `limit` after the start of each
    /// [`plan`](Self::plan) call.
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.limits = self.limits.clone().time_limit(limit);
        self
    }

    /// Plans at most `steps` steps.
    pub fn max_steps(mut self, steps: usize) -> Self {
        self.max_steps = Some(steps);
        self
    }

    /// How many further instances of its AZ a launch tries to absorb after its first release
    /// candidate (default 64; only `MaximumStepSize − 1` of them can be released with it).
    pub fn extra_victim_tries(mut self, tries: usize) -> Self {
        self.extra_victim_tries = tries;
        self
    }

    /// Over how many consecutive steps the instances one launch frees may be released (default
    /// 4). With `MaximumStepSize` 1, freeing three instances with one launch takes three steps;
    /// the steps in between may be worse than the start, only the launch's last step must be
    /// better.
    pub fn steps_per_launch(mut self, steps: usize) -> Self {
        self.steps_per_launch = steps.max(1);
        self
    }

    /// Fleets of at most `instances` instances (default 256) get two more greedy runs, with
    /// launches that free instances within one step only; the best plan is kept.
    pub fn variants_up_to(mut self, instances: usize) -> Self {
        self.variants_up_to = instances;
        self
    }

    /// Whether to plan a target fleet first and a path of steps to it (default on; see
    /// `docs/rebalance.md`). Off, only the greedy unit search runs (as before the target-directed
    /// path existed; for comparisons).
    pub fn target_directed(mut self, enabled: bool) -> Self {
        self.target_directed = enabled;
        self
    }

    /// Fleets of at most `instances` instances (default 512) get the target-directed path;
    /// larger ones only the greedy unit search (the path is not yet fast enough on thousands of
    /// instances: 2,000 take seconds; under a deadline it returns its best steps so far, but
    /// reaches less than the greedy search in the same time).
    pub fn target_directed_up_to(mut self, instances: usize) -> Self {
        self.target_up_to = instances;
        self
    }

    /// Whether the greedy unit search runs as well (default on; the better plan is kept). Off,
    /// only the target-directed path plans (for comparisons and tests); with neither, the plan
    /// has no steps.
    pub fn greedy_units(mut self, enabled: bool) -> Self {
        self.greedy_units = enabled;
        self
    }

    /// Runs [`verify_rebalance`] on the finished plan and returns a plan without steps if it
    /// finds anything (default: on in debug builds, off in release builds).
    pub fn self_check(mut self, enabled: bool) -> Self {
        self.self_check = enabled;
        self
    }

    /// Plans rebalancing of the problem's fleet.
    pub fn plan(&self, problem: &Problem) -> RebalancePlan {
        self.plan_with_stats(problem).0
    }

    /// [`plan`](Self::plan), also returning what the planner did (the target and greedy runs
    /// as solves, release candidates tried as nodes, steps as rounds). Runs on the problem in
    /// canonical order, so the input's order does not steer it.
    pub fn plan_with_stats(&self, problem: &Problem) -> (RebalancePlan, Stats) {
        super::on_canonical(problem, |problem| self.plan_canonical(problem))
    }

    /// [`Self::plan_with_stats`] on a problem in canonical order.
    fn plan_canonical(&self, problem: &Problem) -> (RebalancePlan, Stats) {
        let started = Instant::now();
        let limits = self.limits.armed(None);
        let mut stats = Stats::default();
        let max_steps = self.max_steps.unwrap_or(usize::MAX);
        // Target-directed first (the target takes a share of the time left), then the greedy
        // unit search with the rest; the best plan by `rebalance_score` wins.
        let target = if self.target_directed && problem.fleet().len() <= self.target_up_to {
            target::plan_target(problem, &limits)
        } else {
            None
        };
        stats.phase("target", started);
        let mut best =
            target.as_ref().and_then(|target| self.target_path(problem, target, max_steps, &limits, &mut stats));
        let phase = Instant::now();
        self.greedy_runs(problem, max_steps, &limits, &mut stats, &mut best);
        stats.phase("search", phase);
        let target_objective = target.map(|target| target.objective);
        // Without a plan (no greedy run, no target): no steps.
        let Some((_, steps, stop_reason, fleet)) = best else {
            let stop_reason = limits.stop_now().unwrap_or(StopReason::Completed);
            return (no_steps_plan(problem, stop_reason, target_objective), stats);
        };
        stats.rounds = steps.len() as u64;
        let reached = objective(problem, &fleet);
        let plan = RebalancePlan {
            steps,
            reached_objective: target_objective.as_ref().map(|_| reached.clone()),
            objective: reached,
            stop_reason,
            target_objective,
        };
        if self.self_check {
            let checked = Instant::now();
            let faults = verify_rebalance(problem, &plan);
            stats.phase("verify", checked);
            if let Some(first) = faults.first() {
                // Never hand out a plan the checker rejects: no steps is always valid.
                let stop_reason = StopReason::InternalError(format!("the rebalance plan failed its check: {first}"));
                return (no_steps_plan(problem, stop_reason, plan.target_objective), stats);
            }
        }
        (plan, stats)
    }

    /// The path from the fleet to the target, as a candidate plan; `None` when the self-check
    /// rejects it.
    fn target_path(
        &self,
        problem: &Problem,
        target: &target::Target,
        max_steps: usize,
        limits: &Limits,
        stats: &mut Stats,
    ) -> Option<Candidate> {
        stats.solves += 1;
        let phase = Instant::now();
        let (steps, stop_reason) = path::PathPlanner::new(problem, target).run(max_steps, limits);
        let fleet = replay(problem, &steps);
        let score = fleet_score(problem, &fleet, &steps);
        // With the self-check on, a path the checker rejects gives way to the greedy plan
        // (instead of no steps at all); without it a broken path shows, as tests want.
        let objective = objective(problem, &fleet);
        let rejected = self.self_check
            && !verify_rebalance(
                problem,
                &RebalancePlan {
                    steps: steps.clone(),
                    objective,
                    stop_reason: stop_reason.clone(),
                    target_objective: None,
                    reached_objective: None,
                },
            )
            .is_empty();
        stats.phase("target path", phase);
        (!rejected).then_some((score, steps, stop_reason, fleet))
    }

    /// Several greedy runs, each replacing `best` when it scores better: the best unit for each
    /// candidate, or a release without a launch whenever one works (fewer launches, steps and
    /// moves when both reach the same fleet); small fleets also try launches that free
    /// instances within one step only (a unit spanning steps can be locally better and
    /// globally worse).
    fn greedy_runs(
        &self,
        problem: &Problem,
        max_steps: usize,
        limits: &Limits,
        stats: &mut Stats,
        best: &mut Option<Candidate>,
    ) {
        let mut variants = vec![(false, self.steps_per_launch), (true, self.steps_per_launch)];
        if !self.greedy_units {
            variants.clear();
        } else if problem.fleet().len() <= self.variants_up_to && self.steps_per_launch > 1 {
            variants.extend([(false, 1), (true, 1)]);
        }
        for (run, (release_first, steps_per_launch)) in variants.into_iter().enumerate() {
            if (run > 0 || best.is_some())
                && (limits.stop_now().is_some() || limits.nodes().is_some_and(|n| stats.nodes >= n))
            {
                break;
            }
            let mut planner = Planner::new(problem);
            planner.extra_victim_tries = self.extra_victim_tries;
            planner.steps_per_launch = steps_per_launch;
            planner.release_first = release_first;
            let (steps, stop_reason) = planner.run(max_steps, limits, &mut stats.nodes);
            stats.solves += 1;
            let (draining, counts, cost) = planner.key();
            let moves = steps.iter().map(|step| step.moves.len()).sum();
            let score = (draining, counts, cost, steps.len(), moves);
            if best.as_ref().is_none_or(|(best_score, ..)| score < *best_score) {
                *best = Some((score, steps, stop_reason, planner.final_fleet()));
            }
        }
    }
}

/// A candidate rebalance: its score, steps, why it stopped, and the fleet it reaches.
type Candidate = (RebalanceScore, Vec<RebalanceStep>, StopReason, FinalFleet);

/// The plan with no steps (always valid): the fleet as it is.
fn no_steps_plan(problem: &Problem, stop_reason: StopReason, target_objective: Option<Objective>) -> RebalancePlan {
    let objective = objective(problem, &FinalFleet::apply(problem, &[]).0);
    RebalancePlan {
        steps: Vec::new(),
        reached_objective: target_objective.as_ref().map(|_| objective.clone()),
        objective,
        stop_reason,
        target_objective,
    }
}

problem_engine!(Rebalancer => RebalancePlan);

problem_output!(RebalancePlan, verify_rebalance {});

/// The fleet after `steps` (replayed by id on the problem's fleet).
fn replay(problem: &Problem, steps: &[RebalanceStep]) -> FinalFleet {
    steps::fleet_after(problem, steps)
}

/// [`RebalanceScore`] of a fleet reached by `steps`.
fn fleet_score(problem: &Problem, fleet: &FinalFleet, steps: &[RebalanceStep]) -> RebalanceScore {
    let key = objective(problem, fleet).key();
    let draining = fleet
        .instances
        .iter()
        .filter(|instance| instance.existing.and_then(|index| problem.fleet().get(index)).is_some_and(|e| e.draining))
        .count();
    let moves = steps::move_count(steps);
    (draining, key.fallback_counts, key.cost_micros, steps.len(), moves)
}

/// [`rebalance_score`]: draining instances left, `(n6, …, n1)`, cost in millionths, steps,
/// moves; smaller is better.
pub type RebalanceScore = (usize, [u32; 6], i128, usize, usize);

/// What rebalancing minimises, in order (contract §7): draining instances left in the final fleet
/// (the operator wants them gone), L3 `(n6, …, n1)`, L4 cost, then the number of steps, then
/// the number of moves.
pub fn rebalance_score(problem: &Problem, plan: &RebalancePlan) -> RebalanceScore {
    let key = plan.objective.key();
    let fleet = plan.final_fleet(problem);
    let draining = fleet
        .instances
        .iter()
        .filter(|instance| instance.existing.and_then(|index| problem.fleet().get(index)).is_some_and(|e| e.draining))
        .count();
    (draining, key.fallback_counts, key.cost_micros, plan.steps.len(), plan.move_count())
}

/// What a unit must make strictly smaller: draining instances alive, `(n6, …, n1)`, cost.
type FleetKey = (usize, [u32; 6], i128);

/// The counts behind a fleet's [`FleetKey`], kept up to date as instances come and go: alive
/// and draining instances, instances per priority, and the L4 cost (one unit per paid instance
/// as soon as any alive instance lacks a price).
#[derive(Debug, Clone, Default)]
struct FleetTally {
    alive: usize,
    draining: usize,
    /// Alive instances per priority (index 1–6).
    by_priority: [u32; 7],
    unpriced: usize,
    /// L4 cost of the alive instances in each unit, for whichever [`FleetTally::cost_unit`] is.
    cost_in_dollars: i128,
    cost_in_units: i128,
}

impl FleetTally {
    /// Counts one instance of `type_index` in.
    fn add(&mut self, problem: &Problem, type_index: usize, reserved: bool, draining: bool) {
        self.alive += 1;
        self.draining += usize::from(draining);
        self.by_priority[Self::priority_slot(problem, type_index)] += 1;
        self.unpriced += usize::from(price_micros(problem, type_index).is_none());
        let [dollars, units] = Self::costs(problem, type_index, reserved);
        self.cost_in_dollars += dollars;
        self.cost_in_units += units;
    }

    /// Counts one instance of `type_index` out (it was counted in).
    fn remove(&mut self, problem: &Problem, type_index: usize, reserved: bool, draining: bool) {
        self.alive -= 1;
        self.draining -= usize::from(draining);
        self.by_priority[Self::priority_slot(problem, type_index)] -= 1;
        self.unpriced -= usize::from(price_micros(problem, type_index).is_none());
        let [dollars, units] = Self::costs(problem, type_index, reserved);
        self.cost_in_dollars -= dollars;
        self.cost_in_units -= units;
    }

    /// One instance's cost in dollars and in units.
    fn costs(problem: &Problem, type_index: usize, reserved: bool) -> [i128; 2] {
        [CostUnit::UsdPerHour, CostUnit::Instances]
            .map(|unit| i128::from(instance_cost_micros(problem, type_index, reserved, unit)))
    }

    /// The fleet's L4 cost unit now.
    fn cost_unit(&self) -> CostUnit {
        cost_unit(self.unpriced > 0)
    }

    fn priority_slot(problem: &Problem, type_index: usize) -> usize {
        usize::from(problem.instance_types().get(type_index).map_or(6, |info| info.priority).clamp(1, 6))
    }

    /// Draining instances alive, `(n6, …, n1)`, cost.
    fn key(&self) -> FleetKey {
        let counts = [6usize, 5, 4, 3, 2, 1].map(|priority| self.by_priority[priority]);
        let cost = match self.cost_unit() {
            CostUnit::UsdPerHour => self.cost_in_dollars,
            CostUnit::Instances => self.cost_in_units,
        };
        (self.draining, counts, cost)
    }
}

/// One reversible change, so a simulated unit can be undone exactly.
enum Change {
    /// A copy of `component` moved from a node in `from_az` onto `target`.
    Copy { target: usize, component: usize, from_az: usize },
    /// A node was released (its copies taken off it).
    Kill { node: usize, copies: BTreeMap<usize, u32>, used: Resources },
    /// A node was launched (always the last node).
    Launch { type_index: usize, az_index: usize },
}

/// A unit under construction in [`Planner::simulate`]: SPREAD offenders before the unit per
/// touched (component, AZ), the moves, the instances released, the instances receiving copies.
struct UnitDraft {
    guard: BTreeMap<(ComponentIndex, AzIndex), u64>,
    moves: Vec<(usize, usize, usize)>,
    victims: Vec<usize>,
    targets: BTreeSet<usize>,
    max_victims: usize,
}

/// What one simulated unit does.
#[derive(Debug, Clone)]
struct Unit {
    /// The fleet key after the unit.
    key: FleetKey,
    /// Launched node, if any.
    launched: Option<usize>,
    /// Released nodes, primary candidate first.
    victims: Vec<usize>,
    /// Moves `(component, from node, to node)`.
    moves: Vec<(usize, usize, usize)>,
}

/// A launch option: (type, AZ).
type LaunchOption = Option<(TypeIndex, AzIndex)>;

struct Planner<'p> {
    problem: &'p Problem,
    nodes: Vec<StepInstance>,
    /// Node indices per AZ (dead ones included; filter on `alive`).
    by_az: Vec<Vec<usize>>,
    /// Copies per `[component][az]`.
    per_az: Vec<Vec<u64>>,
    /// Alive nodes holding two or more copies, per `[component][az]` (SPREAD shortcut: without
    /// one, nothing in that AZ can break the rule).
    heavy: Vec<Vec<u32>>,
    /// Launches so far per `[type][az]`.
    launched: Vec<Vec<u32>>,
    tally: FleetTally,
    /// Ids of the committed launches, never one the fleet uses.
    launch_ids: LaunchIds,
    journal: Vec<Change>,
    extra_victim_tries: usize,
    steps_per_launch: usize,
    /// Take a release without a launch whenever one works.
    release_first: bool,
}

impl<'p> Planner<'p> {
    fn new(problem: &'p Problem) -> Self {
        let zones = problem.azs().len();
        let components = problem.components().len();
        let mut planner = Planner {
            problem,
            nodes: Vec::new(),
            by_az: vec![Vec::new(); zones],
            per_az: vec![vec![0; zones]; components],
            heavy: vec![vec![0; zones]; components],
            launched: vec![vec![0; zones]; problem.instance_types().len()],
            tally: FleetTally::default(),
            launch_ids: LaunchIds::new(problem),
            journal: Vec::new(),
            extra_victim_tries: 64,
            steps_per_launch: 4,
            release_first: false,
        };
        for existing in problem.fleet() {
            let copies: BTreeMap<usize, u32> =
                existing.copies.iter().copied().filter(|&(_, count)| count > 0).collect();
            let used = problem.copies_footprint(existing.type_index, &copies);
            let index = planner.nodes.len();
            for (&component, &count) in &copies {
                if let Some(slot) = planner.per_az.get_mut(component).and_then(|row| row.get_mut(existing.az_index)) {
                    *slot += u64::from(count);
                }
                if count >= 2 {
                    if let Some(slot) = planner.heavy.get_mut(component).and_then(|row| row.get_mut(existing.az_index))
                    {
                        *slot += 1;
                    }
                }
            }
            planner.nodes.push(StepInstance {
                id: existing.id.clone(),
                type_index: existing.type_index,
                az_index: existing.az_index,
                reserved: existing.reserved,
                draining: existing.draining,
                copies,
                used,
                alive: false,
            });
            if let Some(list) = planner.by_az.get_mut(existing.az_index) {
                list.push(index);
            }
            planner.count_in(index);
        }
        planner
    }

    fn priority(&self, type_index: usize) -> u8 {
        self.problem.instance_types().get(type_index).map_or(6, |info| info.priority)
    }

    /// Adds a node to the alive accounting (the fleet key).
    fn count_in(&mut self, index: usize) {
        let node = &mut self.nodes[index];
        node.alive = true;
        self.tally.add(self.problem, node.type_index, node.reserved, node.draining);
    }

    /// Removes a node from the alive accounting.
    fn count_out(&mut self, index: usize) {
        let node = &mut self.nodes[index];
        node.alive = false;
        self.tally.remove(self.problem, node.type_index, node.reserved, node.draining);
    }

    /// The fleet key now: draining instances, `(n6, …, n1)`, cost (L4 rules: one unit per paid
    /// instance as soon as any instance lacks a price).
    fn key(&self) -> FleetKey {
        self.tally.key()
    }

    /// L4 cost of keeping a node, for the release order.
    fn node_cost(&self, node: &StepInstance) -> i128 {
        i128::from(instance_cost_micros(self.problem, node.type_index, node.reserved, self.tally.cost_unit()))
    }

    /// Release order: draining first, then fallback (L3), most expensive (L4), fewest copies.
    fn release_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.nodes.len()).filter(|&index| self.nodes[index].alive).collect();
        order.sort_by_key(|&index| {
            let node = &self.nodes[index];
            let copies: u32 = node.copies.values().sum();
            (
                Reverse(node.draining),
                Reverse(self.priority(node.type_index)),
                Reverse(self.node_cost(node)),
                copies,
                index,
            )
        });
        order
    }

    /// Launch options for a candidate, best first: pool types by priority, then price, the
    /// candidate's AZ first; only where capacity is left, and (unless the candidate is draining)
    /// never a worse tier than the candidate's.
    fn launch_options(&self, candidate: usize) -> Vec<(TypeIndex, AzIndex)> {
        let problem = self.problem;
        let node = &self.nodes[candidate];
        let candidate_priority = self.priority(node.type_index);
        // (priority, other AZ, price, type, AZ): the order, which is also the option.
        let mut options: Vec<(u8, bool, i64, usize, usize)> = Vec::new();
        for type_index in problem.pool_types() {
            let priority = self.priority(type_index);
            if !node.draining && priority > candidate_priority {
                continue;
            }
            for az_index in 0..problem.azs().len() {
                if !self.capacity_left(TypeIndex::new(type_index), AzIndex::new(az_index)) {
                    continue;
                }
                let price = price_micros(problem, type_index).unwrap_or(i64::MAX);
                options.push((priority, az_index != node.az_index, price, type_index, az_index));
            }
        }
        options.sort();
        options
            .into_iter()
            .map(|(.., type_index, az_index)| (TypeIndex::new(type_index), AzIndex::new(az_index)))
            .collect()
    }

    fn capacity_left(&self, type_index: TypeIndex, az_index: AzIndex) -> bool {
        let done =
            self.launched.get(type_index.index()).and_then(|row| row.get(az_index.index())).copied().unwrap_or(0);
        self.problem.launch_limit(type_index, az_index).total().is_none_or(|total| done < total)
    }

    /// Launches a node (journaled). Reservation slots are used first.
    fn launch(&mut self, type_index: TypeIndex, az_index: AzIndex) -> usize {
        let slots = self.problem.launch_limit(type_index, az_index).reserved;
        let (type_index, az_index) = (type_index.index(), az_index.index());
        let reserved = self.launched[type_index][az_index] < slots;
        self.launched[type_index][az_index] += 1;
        let index = self.nodes.len();
        self.nodes.push(StepInstance {
            id: String::new(),
            type_index,
            az_index,
            reserved,
            draining: false,
            copies: BTreeMap::new(),
            used: Resources::ZERO,
            alive: false,
        });
        self.by_az[az_index].push(index);
        self.count_in(index);
        self.journal.push(Change::Launch { type_index, az_index });
        index
    }

    /// Releases a node, taking its copies off (journaled). Returns the copies, one entry per
    /// copy, largest first by the node's own requirement.
    fn kill(&mut self, index: usize) -> Vec<usize> {
        let node = &mut self.nodes[index];
        let copies = std::mem::take(&mut node.copies);
        let used = std::mem::replace(&mut node.used, Resources::ZERO);
        let (az_index, type_index) = (node.az_index, node.type_index);
        for (&component, &count) in &copies {
            if count >= 2 {
                self.heavy[component][az_index] -= 1;
            }
        }
        self.count_out(index);
        let mut units: Vec<usize> = Vec::new();
        for (&component, &count) in &copies {
            units.extend(std::iter::repeat_n(component, count as usize));
        }
        units.sort_by_key(|&component| {
            (
                Reverse(copy_resources(self.problem, ComponentIndex::new(component), TypeIndex::new(type_index))),
                component,
            )
        });
        self.journal.push(Change::Kill { node: index, copies, used });
        units
    }

    /// Puts one copy of `component` (leaving a node in `from_az`) onto `target` (journaled).
    fn add_copy(&mut self, target: usize, component: usize, from_az: AzIndex) {
        let from_az = from_az.index();
        let resources =
            copy_resources(self.problem, ComponentIndex::new(component), TypeIndex::new(self.nodes[target].type_index));
        let node = &mut self.nodes[target];
        let count = node.copies.entry(component).or_insert(0);
        *count += 1;
        let became_heavy = *count == 2;
        node.used = node.used.plus(&resources);
        let to_az = node.az_index;
        if became_heavy {
            self.heavy[component][to_az] += 1;
        }
        self.per_az[component][from_az] = self.per_az[component][from_az].saturating_sub(1);
        self.per_az[component][to_az] += 1;
        self.journal.push(Change::Copy { target, component, from_az });
    }

    /// Undoes the journal back to `mark`.
    fn rollback(&mut self, mark: usize) {
        while self.journal.len() > mark {
            let Some(change) = self.journal.pop() else { break };
            match change {
                Change::Copy { target, component, from_az } => {
                    let resources = copy_resources(
                        self.problem,
                        ComponentIndex::new(component),
                        TypeIndex::new(self.nodes[target].type_index),
                    );
                    let node = &mut self.nodes[target];
                    let to_az = node.az_index;
                    if let Some(count) = node.copies.get_mut(&component) {
                        if *count == 2 {
                            self.heavy[component][to_az] -= 1;
                        }
                        *count -= 1;
                        if *count == 0 {
                            node.copies.remove(&component);
                        }
                    }
                    node.used = node.used.minus(&resources).unwrap_or(Resources::ZERO);
                    self.per_az[component][to_az] = self.per_az[component][to_az].saturating_sub(1);
                    self.per_az[component][from_az] += 1;
                }
                Change::Kill { node, copies, used } => {
                    let az_index = self.nodes[node].az_index;
                    for (&component, &count) in &copies {
                        if count >= 2 {
                            self.heavy[component][az_index] += 1;
                        }
                    }
                    self.nodes[node].copies = copies;
                    self.nodes[node].used = used;
                    self.count_in(node);
                }
                Change::Launch { type_index, az_index } => {
                    let index = self.nodes.len() - 1;
                    self.count_out(index);
                    self.nodes.pop();
                    self.by_az[az_index].pop();
                    self.launched[type_index][az_index] -= 1;
                }
            }
        }
    }

    /// Number of alive instances in `az` breaking the SPREAD rule for `component`.
    fn spread_offenders_in(&self, component: ComponentIndex, az: AzIndex) -> u64 {
        let (component, az) = (component.index(), az.index());
        if self.heavy[component][az] == 0 {
            return 0;
        }
        let alive = self.by_az[az].iter().map(|&index| &self.nodes[index]).filter(|node| node.alive);
        spread_offenders_among(alive.map(|node| {
            let room = has_room_for_copy(self.problem, component, node.type_index, &node.used);
            (u64::from(node.copies_of(component)), room)
        }))
    }

    /// Records the SPREAD measure of (component, az) before the unit first changes it.
    fn touch(&self, guard: &mut BTreeMap<(ComponentIndex, AzIndex), u64>, component: ComponentIndex, az: AzIndex) {
        if self.problem.components()[component.index()].strategy == PlacementStrategy::Spread {
            guard.entry((component, az)).or_insert_with(|| self.spread_offenders_in(component, az));
        }
    }

    fn spread_kept(&self, guard: &BTreeMap<(ComponentIndex, AzIndex), u64>) -> bool {
        guard.iter().all(|(&(component, az), &before)| self.spread_offenders_in(component, az) <= before)
    }

    /// Whether `target` may receive one copy of `component` leaving a node in `from_az`: alive,
    /// not draining, eligible, room with the target type's requirement, and (across AZs) the
    /// component's imbalance no larger than at the unit's start.
    fn may_receive(&self, target: usize, component: usize, from_az: AzIndex, balance_before: &[u64]) -> bool {
        let problem = self.problem;
        let node = &self.nodes[target];
        if !node.alive || node.draining {
            return false;
        }
        let info = &problem.components()[component];
        let Some(requirement) = info.placement_requirement(problem, node.type_index) else { return false };
        let Some(type_info) = problem.instance_types().get(node.type_index) else { return false };
        if !node.used.plus(&requirement.resources).fits_in(&type_info.capacity) {
            return false;
        }
        node.az_index == from_az.index()
            || info.max_imbalance.is_none()
            || self.balance_allows(component, from_az, AzIndex::new(node.az_index), balance_before)
    }

    fn balance_allows(&self, component: usize, from_az: AzIndex, to_az: AzIndex, balance_before: &[u64]) -> bool {
        let mut after = self.per_az[component].clone();
        after[from_az.index()] = after[from_az.index()].saturating_sub(1);
        after[to_az.index()] += 1;
        imbalance(&after) <= balance_before[component]
    }

    /// The best instance that stays to receive one copy of `component` from a node in
    /// `from_az` (consolidation's preference: same AZ, thinnest AZ, fewest copies for SPREAD,
    /// best tier, best fit, cheapest, last).
    fn best_existing_target(&self, component: usize, from_az: AzIndex, balance_before: &[u64]) -> Option<usize> {
        let problem = self.problem;
        let info = &problem.components()[component];
        let spread = info.strategy == PlacementStrategy::Spread;
        let row = &self.per_az[component];
        let mut best: Option<(_, usize)> = None;
        for (az, (members, &copies_there)) in self.by_az.iter().zip(row).enumerate() {
            let cross_az = az != from_az.index();
            if cross_az
                && info.max_imbalance.is_some()
                && !self.balance_allows(component, from_az, AzIndex::new(az), balance_before)
            {
                continue;
            }
            for &index in members {
                let node = &self.nodes[index];
                if !node.alive || node.draining {
                    continue;
                }
                let Some(requirement) = info.placement_requirement(problem, node.type_index) else { continue };
                let Some(type_info) = problem.instance_types().get(node.type_index) else { continue };
                let after = node.used.plus(&requirement.resources);
                if !after.fits_in(&type_info.capacity) {
                    continue;
                }
                let key = (
                    cross_az,
                    if cross_az { copies_there } else { 0 },
                    if spread { node.copies_of(component) } else { 0 },
                    self.priority(node.type_index),
                    leftover(&type_info.capacity, &after),
                    self.node_cost(node),
                    Reverse(index),
                );
                if best.as_ref().is_none_or(|(best_key, _)| key < *best_key) {
                    best = Some((key, index));
                }
            }
        }
        best.map(|(_, index)| index)
    }

    /// Whether `candidate` may be released now: alive, not pinned, and not a non-draining
    /// instance while draining instances are still alive.
    fn may_release(&self, candidate: usize) -> bool {
        let node = &self.nodes[candidate];
        node.alive && (node.draining || self.tally.draining == 0)
    }

    /// Simulates one unit for `candidate` with `option`; on success returns what it does and,
    /// unless `commit`, undoes it. On failure nothing changes. A launch's releases are spread
    /// over steps: `first_room` in the first, `MaximumStepSize` in each further one.
    fn simulate(
        &mut self,
        candidate: usize,
        option: LaunchOption,
        forbidden: &BTreeSet<usize>,
        order_by_az: &[Vec<usize>],
        first_room: usize,
        commit: bool,
    ) -> Option<Unit> {
        let problem = self.problem;
        let step_size = usize::try_from(problem.scaling().maximum_step_size.max(1)).unwrap_or(1);
        let max_victims = first_room.saturating_add(step_size.saturating_mul(self.steps_per_launch.saturating_sub(1)));
        let alive_before = self.tally.alive;
        let min_instances = usize::try_from(problem.scaling().min_instances).unwrap_or(usize::MAX);
        let key_before = self.key();
        let mark = self.journal.len();
        let balance_before: Vec<u64> = self.per_az.iter().map(|row| imbalance(row)).collect();
        let mut guard: BTreeMap<(ComponentIndex, AzIndex), u64> = BTreeMap::new();
        let mut moves: Vec<(usize, usize, usize)> = Vec::new();
        let mut victims: Vec<usize> = vec![candidate];
        let mut targets: BTreeSet<usize> = BTreeSet::new();

        let launched = match option {
            Some((type_index, az_index)) => {
                // The empty newcomer can make heavy instances of its AZ break SPREAD.
                for component in 0..problem.components().len() {
                    if self.heavy[component][az_index.index()] > 0
                        && problem.components()[component].placement_requirement(problem, type_index.index()).is_some()
                    {
                        self.touch(&mut guard, ComponentIndex::new(component), az_index);
                    }
                }
                Some(self.launch(type_index, az_index))
            }
            None => None,
        };

        let from_az = AzIndex::new(self.nodes[candidate].az_index);
        let copies = self.kill(candidate);
        let mut failed = false;
        for component in copies {
            let target = match launched {
                Some(new) if self.may_receive(new, component, from_az, &balance_before) => Some(new),
                _ => self.best_existing_target(component, from_az, &balance_before),
            };
            let Some(target) = target else {
                failed = true;
                break;
            };
            self.touch(&mut guard, ComponentIndex::new(component), AzIndex::new(self.nodes[target].az_index));
            self.add_copy(target, component, from_az);
            targets.insert(target);
            moves.push((component, candidate, target));
        }
        if failed || !self.spread_kept(&guard) {
            self.rollback(mark);
            return None;
        }

        // Fill the launch with further whole instances of its AZ while they fit.
        if let Some(new) = launched {
            let mut draft = UnitDraft { guard, moves, victims, targets, max_victims };
            self.fill_launch(new, candidate, forbidden, order_by_az, &balance_before, &mut draft);
            (moves, victims) = (draft.moves, draft.victims);
        }

        let key = self.key();
        // The launch's first step ends with `first_room` releases at most: the fleet size then.
        let after_first_step = alive_before + 1 - victims.len().min(first_room);
        let over_max = launched.is_some()
            && problem
                .scaling()
                .max_instances
                .is_some_and(|max| after_first_step > usize::try_from(max).unwrap_or(usize::MAX));
        if key >= key_before || self.tally.alive < min_instances || over_max {
            self.rollback(mark);
            return None;
        }
        let unit = Unit { key, launched, victims, moves };
        if !commit {
            self.rollback(mark);
        } else {
            self.journal.clear();
        }
        Some(unit)
    }

    /// Fills the launch `new` with further whole instances of its AZ while they fit, up to
    /// `draft.max_victims` releases and never below `MinInstanceCount`; each victim's moves
    /// are undone when they do not fit or make SPREAD worse.
    fn fill_launch(
        &mut self,
        new: usize,
        candidate: usize,
        forbidden: &BTreeSet<usize>,
        order_by_az: &[Vec<usize>],
        balance_before: &[u64],
        draft: &mut UnitDraft,
    ) {
        let min_instances = usize::try_from(self.problem.scaling().min_instances).unwrap_or(usize::MAX);
        let az = self.nodes[new].az_index;
        let mut tries = 0usize;
        for &other in order_by_az.get(az).map_or(&[][..], Vec::as_slice) {
            if draft.victims.len() >= draft.max_victims
                || tries >= self.extra_victim_tries
                || self.tally.alive <= min_instances
            {
                break;
            }
            if other == candidate
                || !self.may_release(other)
                || forbidden.contains(&other)
                || draft.targets.contains(&other)
            {
                continue;
            }
            tries += 1;
            let victim_mark = self.journal.len();
            let victim_moves = draft.moves.len();
            // The releases may land in a later step than the ones before: SPREAD must not
            // get worse from one victim to the next, not only over the whole unit.
            let mut local: BTreeMap<(ComponentIndex, AzIndex), u64> = draft
                .guard
                .keys()
                .map(|&(component, az)| ((component, az), self.spread_offenders_in(component, az)))
                .collect();
            let copies = self.kill(other);
            let mut fits = true;
            for component in copies {
                if !self.may_receive(new, component, AzIndex::new(az), balance_before) {
                    fits = false;
                    break;
                }
                self.touch(&mut local, ComponentIndex::new(component), AzIndex::new(az));
                self.add_copy(new, component, AzIndex::new(az));
                draft.moves.push((component, other, new));
            }
            if fits && self.spread_kept(&local) {
                draft.victims.push(other);
                for (pair, before) in local {
                    draft.guard.entry(pair).or_insert(before);
                }
            } else {
                self.rollback(victim_mark);
                draft.moves.truncate(victim_moves);
            }
        }
    }

    /// Repeated passes over the release candidates until a pass commits nothing.
    fn run(&mut self, max_steps: usize, limits: &Limits, nodes: &mut u64) -> (Vec<RebalanceStep>, StopReason) {
        let problem = self.problem;
        let step_size = usize::try_from(problem.scaling().maximum_step_size.max(1)).unwrap_or(1);
        let mut steps: Vec<RebalanceStep> = Vec::new();
        // Instances receiving copies in the current step: they cannot be released in it.
        let mut step_targets: BTreeSet<usize> = BTreeSet::new();
        let no_one: BTreeSet<usize> = BTreeSet::new();
        loop {
            let mut progress = false;
            let order = self.release_order();
            // The same order per AZ: a launch absorbs further instances of its own AZ only.
            let mut order_by_az: Vec<Vec<usize>> = vec![Vec::new(); problem.azs().len()];
            for &index in &order {
                if let Some(list) = order_by_az.get_mut(self.nodes[index].az_index) {
                    list.push(index);
                }
            }
            for &candidate in &order {
                if let Some(reason) = limits.stop_now() {
                    return (steps, reason);
                }
                if limits.nodes().is_some_and(|limit| *nodes >= limit) {
                    return (steps, StopReason::NodeLimit);
                }
                *nodes += 1;
                if !self.may_release(candidate) {
                    continue;
                }
                let (step_launches, step_releases) =
                    steps.last().map_or((usize::MAX, usize::MAX), |step| (step.launch.len(), step.release.len()));
                let can_join = steps.last().is_some() && !step_targets.contains(&candidate);
                if steps.len() >= max_steps && !can_join {
                    continue;
                }
                // Within the current step, only instances that received nothing in it may go.
                let forbidden = if can_join { &step_targets } else { &no_one };
                // A unit joins the current step when it has room for its launch (if any) and for
                // at least its first release; a launch's further releases go into later steps.
                let joins_with =
                    |launches: usize| can_join && step_launches + launches <= step_size && step_releases < step_size;
                // With one step per launch a unit that does not fit the current step opens a new
                // one; otherwise its first releases fill the current step.
                let spanning = self.steps_per_launch > 1;
                let first_room = if spanning && joins_with(1) { step_size - step_releases } else { step_size };
                let mut options: Vec<LaunchOption> = vec![None];
                options.extend(self.launch_options(candidate).into_iter().map(Some));
                let mut best: Option<((FleetKey, usize, usize), LaunchOption, Unit)> = None;
                for (rank, option) in options.into_iter().enumerate() {
                    if self.release_first && option.is_some() && best.is_some() {
                        break;
                    }
                    let Some(unit) = self.simulate(candidate, option, forbidden, &order_by_az, first_room, false)
                    else {
                        continue;
                    };
                    let score = (unit.key, unit.moves.len(), rank);
                    if best.as_ref().is_none_or(|(best_score, _, _)| score < *best_score) {
                        best = Some((score, option, unit));
                    }
                }
                let Some((_, option, preview)) = best else { continue };
                let joins = joins_with(usize::from(preview.launched.is_some()))
                    && (spanning || step_releases + preview.victims.len() <= step_size);
                let room = if joins { step_size - step_releases } else { step_size };
                let further = preview.victims.len().saturating_sub(room).div_ceil(step_size);
                let new_steps = usize::from(!joins) + further;
                if steps.len().saturating_add(new_steps) > max_steps {
                    continue;
                }
                // The same simulation again, kept this time (the planner is deterministic).
                let Some(unit) = self.simulate(candidate, option, forbidden, &order_by_az, first_room, true) else {
                    continue;
                };
                if !joins {
                    steps.push(RebalanceStep { launch: Vec::new(), moves: Vec::new(), release: Vec::new() });
                    step_targets.clear();
                }
                self.record(&mut steps, &mut step_targets, &unit, step_size);
                progress = true;
            }
            if !progress {
                return (steps, StopReason::Completed);
            }
        }
    }

    /// Appends a committed unit to the last step (its launch, then its victims while the step
    /// has room, further victims in new steps of `step_size` releases) and names its launch.
    fn record(
        &mut self,
        steps: &mut Vec<RebalanceStep>,
        step_targets: &mut BTreeSet<usize>,
        unit: &Unit,
        step_size: usize,
    ) {
        let problem = self.problem;
        if let Some(new) = unit.launched {
            // A launch is like a target: it cannot be released in the step that starts it.
            step_targets.insert(new);
            let node = &mut self.nodes[new];
            node.id = self.launch_ids.next_id();
            let launch = Launch {
                instance_id: node.id.clone(),
                instance_type: problem.instance_types()[node.type_index].name.clone(),
                availability_zone: problem.azs()[node.az_index].clone(),
                reserved: node.reserved,
            };
            if let Some(step) = steps.last_mut() {
                step.launch.push(launch);
            }
        }
        for &victim in &unit.victims {
            if steps.last().is_none_or(|step| step.release.len() >= step_size) {
                steps.push(RebalanceStep { launch: Vec::new(), moves: Vec::new(), release: Vec::new() });
                step_targets.clear();
            }
            let Some(step) = steps.last_mut() else { return };
            for &(component, from, to) in unit.moves.iter().filter(|&&(_, from, _)| from == victim) {
                step_targets.insert(to);
                step.moves.push(Move {
                    inference_component_name: problem.components()[component].name.clone(),
                    from: self.nodes[from].id.clone(),
                    to: self.nodes[to].id.clone(),
                });
            }
            step.release.push(self.nodes[victim].id.clone());
        }
    }

    fn final_fleet(&self) -> FinalFleet {
        let existing = self.problem.fleet().len();
        let mut launches: BTreeMap<(TypeIndex, AzIndex), (u32, u32)> = BTreeMap::new();
        for node in self.nodes.iter().skip(existing) {
            let entry =
                launches.entry((TypeIndex::new(node.type_index), AzIndex::new(node.az_index))).or_insert((0, 0));
            entry.0 += 1;
            entry.1 += u32::from(node.reserved);
        }
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
                existing: (index < existing).then_some(index),
                copies: node.copies.clone(),
                new_copies: BTreeMap::new(),
            })
            .collect();
        FinalFleet { instances, launches, removed: BTreeMap::new() }
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
