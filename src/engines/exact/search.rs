//! The level-by-level search of the exact planner: L1, L2, each priority of L3 and the cost, each
//! probed at its LP bound and searched, fixed at its optimum before the next; then the cheapest
//! master solution packed into instances, and the groups that do not pack modelled instance by
//! instance in the next round. A limit that stops it returns the best plan its master solutions
//! pack into, with the proven lexicographic bound.

use std::time::{Duration, Instant};

use super::backend::MipBackend;
use super::bounds;
use super::master::{self, Extra, Facts, Goal, Group, Hint, Layout, Limit, Limits, MasterSolution, Solved, Warm};
use super::realize::{realize, realize_with, Realized, Unpacked};
use super::ExactPlanner;
use crate::engines::finish;
use crate::fleet::{objective, FinalFleet};
use crate::plan::{Action, CostUnit, Objective, SolverKind, Status, StopReason};
use crate::problem::Problem;
use crate::verify::verify;

/// Branch-and-bound nodes for a probe at a level's LP bound before the full search.
const PROBE_NODES: u64 = 100;

/// Branch-and-bound nodes for each stage of the relax-and-fix heuristic.
const HEURISTIC_NODES: u64 = 300;

/// Most relax-and-fix steps above a level's LP bound, each after the step before proved its
/// bound unreachable.
const LADDER_STEPS: u32 = 16;

/// Most variables the slot groups of a refinement round may add.
const MAX_SLOT_VARIABLES: u64 = 50_000;

/// Share of the solving time left that L1's search gets first. When it ends unproven without
/// beating the warm start, its bound within [`L1_STALL_GAP`], L1 is fixed there and the levels
/// after it get the rest (an L1 proof that stalls would otherwise take all the time and leave
/// the warm start's balance and instances); otherwise L1 gets the rest too.
const L1_TIME_SHARE: f64 = 0.5;

/// Most copies L1's proven bound may lie above the warm start's for a stalled L1 search to be
/// handed over: a larger gap is a search still finding copies to place, not a proof stalling.
const L1_STALL_GAP: f64 = 2.0;

/// The levels fixed before the one being solved.
#[derive(Clone, Copy)]
struct Earlier<'x> {
    fixed: &'x [(Goal, f64)],
    /// Set when L1 among them was fixed without a proof.
    handed_over: Option<&'x HandOver>,
}

/// A level (L1 or L2) fixed at the warm start's value without a proof, so the levels after it
/// are searched.
#[derive(Debug, Clone)]
struct HandOver {
    /// The levels proven before it, at their optima.
    proven: Vec<(Goal, f64)>,
    /// The level handed over.
    goal: Goal,
    /// Its proven bound (the solver's, in the master's units).
    bound: Option<f64>,
    /// Why its search stopped.
    stop: StopReason,
}

/// What solving one level gave ([`Search::solve_goal`]).
enum GoalSolve {
    /// The solver's answer.
    Solved(Solved),
    /// The level handed over after its search stalled: the value it is fixed at, why, and the
    /// solution the stalled search found, if any.
    Stalled { value: f64, hand_over: HandOver, solution: Option<MasterSolution> },
}

/// What solving the levels before the cost gave.
enum Levels {
    /// Every level fixed at its optimum; the last level's solution, and every level's solution
    /// (a plan the cost level must not end worse than).
    /// `handed_over`: L1 was fixed without a proof.
    Fixed {
        fixed: Vec<(Goal, f64)>,
        last: Option<MasterSolution>,
        seen: Vec<MasterSolution>,
        handed_over: Option<HandOver>,
    },
    /// The search ends with this outcome.
    Done(Outcome),
    /// A solver error with the pattern cut: the round starts again without it.
    Restart,
}

/// What the search produced.
pub(super) enum Outcome {
    /// A plan built from a master solution that packed.
    Plan { actions: Vec<Action>, proven: bool, stop: StopReason, bound: Option<Objective> },
    /// No usable plan; the greedy plan is returned.
    NoPlan { stop: StopReason, bound: Option<Objective> },
    /// The hard constraints cannot all be met (e.g. MinInstanceCount).
    Infeasible,
}

/// One lexicographic search and what travels through it: the planner's settings, the problem,
/// the backend, the warm start and the limits.
#[derive(Clone, Copy)]
pub(super) struct Search<'a> {
    /// The planner's settings (rounds, slot model, model size, cancellation).
    planner: &'a ExactPlanner,
    problem: &'a Problem,
    backend: &'a dyn MipBackend,
    /// The warm start (the greedy plan as a master hint) and its objective.
    hint: Option<&'a (Hint, Objective)>,
    /// The planner's limits: the deadline that packing the last master solution meets.
    full: Limits,
    /// The solver calls' limits: they end a little before `full`'s deadline (see
    /// [`Search::rounds`]).
    limits: Limits,
}

/// A level of the master problem as it is solved: the model, the levels fixed before it and the
/// solver calls' limits.
#[derive(Clone, Copy)]
struct LevelModel<'m, 'f> {
    facts: &'m Facts<'f>,
    layout: &'m Layout,
    fixed: &'m [(Goal, f64)],
    limits: Limits,
}

impl LevelModel<'_, '_> {
    /// [`master::solve`] of `goal` in this model.
    fn solve(&self, goal: Goal, limits: Limits, warm: Warm<'_>, extra: Extra<'_>) -> Solved {
        master::solve(self.facts, self.layout, goal, self.fixed, limits, warm, extra)
    }
}

impl<'a> Search<'a> {
    /// A search under the planner's `limits`.
    pub(super) fn new(
        planner: &'a ExactPlanner,
        problem: &'a Problem,
        backend: &'a dyn MipBackend,
        hint: Option<&'a (Hint, Objective)>,
        limits: Limits,
    ) -> Self {
        Search { planner, problem, backend, hint, full: limits, limits }
    }

    /// The lexicographic search ([`Self::rounds`]), falling back to a loosely packed plan
    /// (see [`loose_plan`]) when a limit stops it before a master solution packs exactly.
    pub(super) fn run(&self) -> Outcome {
        let mut loose = None;
        let outcome = self.rounds(&mut loose);
        let Some(loose) = loose else { return outcome };
        match outcome {
            Outcome::NoPlan { stop, bound } => Outcome::Plan { actions: loose.actions, proven: false, stop, bound },
            Outcome::Plan { actions, proven: false, stop, bound } => {
                let (fleet, _) = FinalFleet::apply(self.problem, &actions);
                let actions =
                    if loose.objective.better_than(&objective(self.problem, &fleet)) { loose.actions } else { actions };
                Outcome::Plan { actions, proven: false, stop, bound }
            }
            proven_or_infeasible => proven_or_infeasible,
        }
    }

    /// Rounds of "solve the levels, pack, refine": each round models the groups that did not
    /// pack instance by instance.
    fn rounds(&self, loose: &mut Option<Loose>) -> Outcome {
        let (problem, planner) = (self.problem, self.planner);
        let mut facts = Facts::new(problem, self.backend);
        if master::master_size_estimate(&facts) > planner.max_master_variables {
            return Outcome::NoPlan { stop: StopReason::TooLarge, bound: None };
        }
        // The solves end a little before the deadline, so that packing the best master
        // solution into instances (`realize`) has time left when a level runs out of it.
        let search =
            Search { limits: Limits { deadline: self.full.deadline.map(solving_deadline), ..self.full }, ..*self };
        if !planner.slot_model {
            facts.add_pattern_prices(search.limits.deadline);
        }
        let mut layout = Layout { slot_groups: Default::default(), cuts: !planner.slot_model };
        if planner.slot_model {
            layout.slot_groups = facts.groups.keys().copied().collect();
        }
        let goals = goals(&facts);
        let mut best_bound: Option<Objective> = None;
        for _round in 0..planner.max_rounds {
            let failed = match search.round(&facts, &layout, &goals, &mut best_bound, loose) {
                Round::Refine(failed) => failed,
                Round::Done(outcome) => return outcome,
                Round::Restart => {
                    // The pattern cut's fractional coefficients can upset a solver numerically
                    // (a singular basis): start the round again without them.
                    facts.pattern_prices.clear();
                    continue;
                }
            };
            if self.full.deadline.is_some_and(|deadline| Instant::now() >= deadline) || planner.limits.cancelled() {
                return Outcome::NoPlan { stop: StopReason::TimeLimit, bound: best_bound };
            }
            // A slot group has one variable per (slot, component): refuse huge ones.
            let slot_variables: u64 = failed
                .iter()
                .map(|group| {
                    facts.groups.get(group).copied().unwrap_or(0).saturating_mul(problem.components().len() as u64 + 1)
                })
                .sum();
            if slot_variables > MAX_SLOT_VARIABLES {
                return Outcome::NoPlan { stop: StopReason::TooLarge, bound: best_bound };
            }
            layout.slot_groups.extend(failed);
        }
        Outcome::NoPlan { stop: StopReason::NodeLimit, bound: best_bound }
    }

    /// One round: every level solved and fixed, then the cheapest solution packed. A round
    /// that ends without a result updates `best_bound` and, the first time a solution packs
    /// only with spare instances, `loose`.
    fn round(
        &self,
        facts: &Facts<'_>,
        layout: &Layout,
        goals: &[Goal],
        best_bound: &mut Option<Objective>,
        loose: &mut Option<Loose>,
    ) -> Round {
        let problem = self.problem;
        let (fixed, last, seen, handed_over) = match self.solve_levels(facts, layout, goals, best_bound.as_ref()) {
            Levels::Fixed { fixed, last, seen, handed_over } => (fixed, last, seen, handed_over),
            Levels::Done(outcome) => return Round::Done(outcome),
            Levels::Restart => return Round::Restart,
        };
        let cost_units: &[CostUnit] = if facts.unpriced_possible {
            &[CostUnit::UsdPerHour, CostUnit::Instances]
        } else {
            &[CostUnit::UsdPerHour]
        };
        let model = LevelModel { facts, layout, fixed: &fixed, limits: self.limits };
        let CostLevel { cheapest, others, bound: cost_bound, stop: cost_stop } =
            solve_cost_level(&model, self.hint, last.as_ref(), cost_units);
        if matches!(cost_stop, Some(StopReason::SolverError(_))) && !facts.pattern_prices.is_empty() {
            return Round::Restart;
        }
        let Some((_, solution)) = cheapest else {
            let stop = cost_stop.unwrap_or(StopReason::SolverError("no cost regime is feasible".to_string()));
            let bound = reported_bound(facts, &fixed, None, handed_over.as_ref());
            return Round::Done(self.stopped(seen.into_iter().rev().collect(), stop, bound.or(best_bound.take())));
        };
        let bound =
            reported_bound(facts, &fixed, Some((Goal::Cost(CostUnit::UsdPerHour), cost_bound)), handed_over.as_ref());
        if let Some(stop) = cost_stop {
            // The other regimes' and every level's solutions too: a master value is not the
            // plan's cost (regimes count in different units), and a search stopped later must
            // not give a worse plan than one stopped before this level.
            let candidates = std::iter::once(solution).chain(others).chain(seen.into_iter().rev()).collect();
            return Round::Done(self.stopped(candidates, stop, bound.or(best_bound.take())));
        }
        *best_bound = bound.clone();
        // One packing: groups that pack only with spare instances give the loose plan and
        // are modelled instance by instance in the next round, like groups that do not pack.
        match realize_with(problem, &solution, self.full.deadline, LOOSE_SPARE) {
            Ok(Realized { actions, loosened }) if loosened.is_empty() => Round::Done(match handed_over {
                None => Outcome::Plan { actions, proven: true, stop: StopReason::Completed, bound: None },
                // Optimal under the value a level was handed: as good as the search found, no more.
                Some(handed) => Outcome::Plan { actions, proven: false, stop: handed.stop, bound },
            }),
            Ok(Realized { actions, loosened }) => {
                if loose.is_none() {
                    *loose = loose_plan(problem, actions);
                }
                Round::Refine(loosened)
            }
            Err(Unpacked { groups, partial }) => {
                // The partial plan places fewer copies than the master, but may place more
                // than anything else the search will have if the refined round runs out of time.
                if let Some(plan) = loose_plan(problem, partial) {
                    if loose.as_ref().is_none_or(|kept| plan.objective.better_than(&kept.objective)) {
                        *loose = Some(plan);
                    }
                }
                Round::Refine(groups)
            }
        }
    }

    /// The levels before the cost (L1, L2, L3 per priority), each probed at its LP bound and
    /// then searched, fixed one after the other at their optimum.
    fn solve_levels(
        &self,
        facts: &Facts<'_>,
        layout: &Layout,
        goals: &[Goal],
        best_bound: Option<&Objective>,
    ) -> Levels {
        let (problem, hint) = (self.problem, self.hint);
        // A node-limited probe is only cheap when the backend honours node limits.
        let probes = facts.backend.capabilities().node_limit;
        let mut fixed: Vec<(Goal, f64)> = Vec::new();
        let mut last: Option<MasterSolution> = None;
        // Every level's solution, in order: the candidates of a stopped search (the latest first).
        let mut seen: Vec<MasterSolution> = Vec::new();
        let mut handed_over: Option<HandOver> = None;
        for &goal in goals {
            // The warm start meets every fixed level and already reaches this level's
            // combinatorial floor: that is its optimum.
            let warm = warm_start(hint, &fixed, last.as_ref());
            let consistent = matches!(warm, Warm::Plan(_));
            if let Some(value) =
                hint.filter(|_| consistent).and_then(|(_, objective)| floor_met(problem, goal, objective, &fixed))
            {
                fixed.push((goal, value));
                // An earlier level's solution need not meet this level: the warm start does.
                if let Some(solution) = last.take() {
                    seen.push(solution);
                }
                continue;
            }
            let model = LevelModel { facts, layout, fixed: &fixed, limits: self.limits };
            let ceiling = known_value(problem, goal, warm, hint, last.as_ref());
            let at_least = match probe_level(&model, goal, warm, last.as_ref(), probes, ceiling) {
                Probe::Fixed(value, solution) => {
                    fixed.push((goal, value));
                    if let Some(solution) = solution {
                        seen.extend(last.replace(solution));
                    }
                    continue;
                }
                Probe::Search(bound) => bound,
            };
            let extra = Extra { at_least, ..Extra::default() };
            let solved = match self.solve_goal(&model, goal, warm, extra, &mut seen) {
                GoalSolve::Solved(solved) => solved,
                GoalSolve::Stalled { value, hand_over, solution } => {
                    if let Some(solution) = solution {
                        seen.extend(last.replace(solution));
                    }
                    fixed.push((goal, value));
                    // The first level handed over bounds what the search proves.
                    handed_over = handed_over.or(Some(hand_over));
                    continue;
                }
            };
            match solved {
                Solved::Solution { solution, proven: true, .. } => {
                    fixed.push((goal, solution.value.round()));
                    if let Some(previous) = last.replace(solution) {
                        seen.push(previous);
                    }
                }
                Solved::Error(_) if !facts.pattern_prices.is_empty() => return Levels::Restart,
                unproven => {
                    if let Some(previous) = last {
                        seen.push(previous);
                    }
                    let earlier = Earlier { fixed: &fixed, handed_over: handed_over.as_ref() };
                    return Levels::Done(self.level_stopped(facts, earlier, goal, unproven, seen, best_bound));
                }
            }
        }
        if let Some(previous) = last.clone() {
            seen.push(previous);
        }
        Levels::Fixed { fixed, last, seen, handed_over }
    }

    /// Solves one level. L1 with a warm start under a deadline (and L2, in a later stage of the
    /// time ladder) first gets a share of the time: when its search stalls there ([`stalled`]),
    /// `Stalled` hands the level over at the value and with the bound it reached, so the later
    /// levels are searched; when it is getting somewhere it gets the rest of the time, from its
    /// incumbent (kept in `seen` as a candidate should the rest find nothing better).
    fn solve_goal(
        &self,
        model: &LevelModel<'_, '_>,
        goal: Goal,
        warm: Warm<'_>,
        extra: Extra<'_>,
        seen: &mut Vec<MasterSolution>,
    ) -> GoalSolve {
        // The warm start's value of the level: the incumbent a stalled search hands over at.
        // L2 only in a later stage of the time ladder, whose warm start an earlier stage's
        // search and large-neighbourhood phase have improved already (in a first run the second
        // half of L2's search still improves it often: 1 s plans were worse on 6 of 90, better
        // on 1, docs/sweep.md), and only when the warm start meets the levels fixed before it
        // (else its balance is no incumbent of this level's model).
        let incumbent = self.hint.and_then(|(_, objective)| match goal {
            Goal::Unplaced => Some(-(objective.placed_copies as f64)),
            Goal::Balance if self.planner.seed_replaces_warm_start && matches!(warm, Warm::Plan(_)) => {
                Some(objective.balance_excess as f64)
            }
            _ => None,
        });
        let Some(incumbent) = incumbent else {
            return GoalSolve::Solved(model.solve(goal, self.limits, warm, extra));
        };
        let first_limits = match self.limits.deadline {
            Some(deadline) => Limits { deadline: Some(share_of_time_left(deadline)), ..self.limits },
            None => self.limits,
        };
        let solved = model.solve(goal, first_limits, warm, extra);
        let unproven = matches!(&solved, Solved::Solution { proven: false, .. } | Solved::Interrupted { .. });
        if stalled(goal, &solved, incumbent) {
            let (value, bound, limit, solution) = match solved {
                Solved::Solution { solution, limit, best_bound, .. } => {
                    (solution.value.round().min(incumbent), best_bound, limit, Some(solution))
                }
                Solved::Interrupted { limit, best_bound } => (incumbent, best_bound, Some(limit), None),
                _ => (incumbent, None, None, None),
            };
            let hand_over = HandOver { proven: model.fixed.to_vec(), goal, bound, stop: stop_of(limit) };
            return GoalSolve::Stalled { value, hand_over, solution };
        }
        if !unproven || first_limits.deadline == self.limits.deadline {
            return GoalSolve::Solved(solved);
        }
        GoalSolve::Solved(match solved {
            Solved::Solution { solution, .. } => {
                let integers = solution.integers.clone();
                seen.push(solution);
                model.solve(goal, self.limits, Warm::Previous(&integers), extra)
            }
            _ => model.solve(goal, self.limits, warm, extra),
        })
    }

    /// The search's outcome when solving `goal` did not prove its optimum (`solved`), `earlier`
    /// holding the levels before it and `seen` the earlier levels' solutions, in order.
    fn level_stopped(
        &self,
        facts: &Facts<'_>,
        earlier: Earlier<'_>,
        goal: Goal,
        solved: Solved,
        seen: Vec<MasterSolution>,
        best_bound: Option<&Objective>,
    ) -> Outcome {
        let Earlier { fixed, handed_over } = earlier;
        match solved {
            Solved::Solution { solution, limit, best_bound: level_bound, .. } => {
                let bound = reported_bound(facts, fixed, Some((goal, level_bound)), handed_over);
                // The earlier levels' solutions too (see `stopped`).
                let candidates = std::iter::once(solution).chain(seen.into_iter().rev()).collect();
                self.stopped(candidates, stop_of(limit), bound.or_else(|| best_bound.cloned()))
            }
            Solved::Interrupted { limit, best_bound: level_bound } => {
                let bound = reported_bound(facts, fixed, Some((goal, level_bound)), handed_over);
                self.stopped(
                    seen.into_iter().rev().collect(),
                    stop_of(Some(limit)),
                    bound.or_else(|| best_bound.cloned()),
                )
            }
            Solved::Infeasible if fixed.is_empty() => Outcome::Infeasible,
            Solved::Infeasible => Outcome::NoPlan {
                stop: StopReason::InternalError(format!(
                    "level {goal:?} became infeasible after fixing earlier levels"
                )),
                bound: best_bound.cloned(),
            },
            Solved::Error(message) => {
                Outcome::NoPlan { stop: StopReason::SolverError(message), bound: best_bound.cloned() }
            }
        }
    }

    /// A limit stopped the search: the best plan of the master solutions that pack (the
    /// interrupted level's incumbent and the earlier levels' solutions, whose plans a search
    /// stopped earlier would have returned; the first wins ties).
    fn stopped(&self, solutions: Vec<MasterSolution>, stop: StopReason, bound: Option<Objective>) -> Outcome {
        let problem = self.problem;
        // The deadline has usually passed: packing gets a short grace. After a cancellation it
        // gets that grace from now, whatever the deadline (the caller is waiting).
        let now = Instant::now();
        let deadline = if self.planner.limits.cancelled() {
            Some(now + DEADLINE_GRACE)
        } else {
            self.full.deadline.map(|deadline| deadline.max(now) + DEADLINE_GRACE)
        };
        let mut best: Option<(Vec<Action>, Objective)> = None;
        for solution in &solutions {
            let (actions, reached) = match realize(problem, solution, deadline) {
                Ok(actions) => {
                    let reached = objective(problem, &FinalFleet::apply(problem, &actions).0);
                    (actions, reached)
                }
                // Only a plan that verifies: nothing proved the partial packing.
                Err(Unpacked { partial, .. }) => match loose_plan(problem, partial) {
                    Some(Loose { actions, objective }) => (actions, objective),
                    None => continue,
                },
            };
            if best.as_ref().is_none_or(|(_, so_far)| reached.better_than(so_far)) {
                best = Some((actions, reached));
            }
        }
        match best {
            Some((actions, _)) => Outcome::Plan { actions, proven: false, stop, bound },
            None => Outcome::NoPlan { stop, bound },
        }
    }
}

/// What one round of the search gave.
enum Round {
    /// The search ends with this outcome.
    Done(Outcome),
    /// The groups to model instance by instance in the next round.
    Refine(Vec<Group>),
    /// A solver error with the pattern cut: the round starts again without it.
    Restart,
}

/// The levels in their order: L1, L2 when some component is balanced, each priority of L3.
fn goals(facts: &Facts<'_>) -> Vec<Goal> {
    let mut goals = vec![Goal::Unplaced];
    if facts.has_balance() {
        goals.push(Goal::Balance);
    }
    goals.extend(facts.priorities().into_iter().map(Goal::Priority));
    goals
}

/// The deadline of the search's solver calls: a tenth of the time left (at most a second)
/// before the planner's own, kept for packing the last master solution into instances.
fn solving_deadline(deadline: Instant) -> Instant {
    let reserve = deadline.saturating_duration_since(Instant::now()).div_f64(10.0).min(Duration::from_secs(1));
    deadline.checked_sub(reserve).unwrap_or(deadline)
}

/// How long packing after a stopped search may run past the deadline: enough to turn the last
/// master solution into instances.
const DEADLINE_GRACE: Duration = Duration::from_millis(20);

/// Instances of `priority` in a master solution: launches of that priority plus kept
/// existing instances of it (the L3 count the master problem minimises for that level).
fn instances_of_priority(problem: &Problem, solution: &MasterSolution, priority: u8) -> u64 {
    let types = problem.instance_types();
    let is_priority = |t: usize| types.get(t).is_some_and(|info| info.priority == priority);
    let launched: u64 = solution
        .launches
        .iter()
        .filter(|(&(t, _), _)| is_priority(t.index()))
        .map(|(_, &count)| u64::from(count))
        .sum();
    let kept = problem
        .fleet()
        .iter()
        .zip(&solution.keep)
        .filter(|(instance, &keep)| keep && is_priority(instance.type_index))
        .count() as u64;
    launched + kept
}

/// What the cost level (L4) found over its cost regimes.
struct CostLevel {
    /// The cheapest solution and its value.
    cheapest: Option<(f64, MasterSolution)>,
    /// The other regimes' solutions.
    others: Vec<MasterSolution>,
    /// The least of the regimes' proven bounds.
    bound: Option<f64>,
    /// Why a regime stopped short of a proof.
    stop: Option<StopReason>,
}

/// L4 in each cost unit (`cost_units`); the cheaper answer wins.
fn solve_cost_level(
    model: &LevelModel<'_, '_>,
    hint: Option<&(Hint, Objective)>,
    last: Option<&MasterSolution>,
    cost_units: &[CostUnit],
) -> CostLevel {
    let (facts, fixed) = (model.facts, model.fixed);
    let mut cheapest: Option<(f64, MasterSolution)> = None;
    let mut others: Vec<MasterSolution> = Vec::new();
    let mut cost_bound: Option<f64> = None;
    let mut cost_stop: Option<StopReason> = None;
    // When the cost follows from the instance counts per priority (one price per
    // priority, no reservations, every type priced), L3 fixes L4: skip the solve.
    let cost_units: &[CostUnit] = match (last, facts.cost_follows_from_priorities()) {
        (Some(solution), true) => {
            cheapest = Some((0.0, solution.clone()));
            &[]
        }
        _ => cost_units,
    };
    // The least cost of the fixed instance counts (`bounds::cost_floor`), as a cut: a
    // warm start that meets it is then proven at the root instead of searched.
    let floor = lex_bound(facts, fixed, None).and_then(|counts| bounds::cost_floor(facts.problem, &counts));
    for &cost_unit in cost_units {
        let at_least = match floor {
            Some((micros, floor_unit)) if floor_unit == cost_unit => Some(crate::plan::from_micros(micros)),
            _ => None,
        };
        let warm = warm_start(hint, fixed, last);
        match model.solve(Goal::Cost(cost_unit), model.limits, warm, Extra { at_least, ..Extra::default() }) {
            Solved::Solution { solution, proven, limit, best_bound: level_bound } => {
                if !proven {
                    cost_stop = Some(stop_of(limit));
                }
                let low = level_bound.unwrap_or(0.0);
                cost_bound = Some(cost_bound.map_or(low, |b: f64| b.min(low)));
                if cheapest.as_ref().is_none_or(|(value, _)| solution.value < *value) {
                    others.extend(cheapest.replace((solution.value, solution)).map(|(_, dearer)| dearer));
                } else {
                    others.push(solution);
                }
            }
            Solved::Infeasible => {}
            Solved::Interrupted { limit, best_bound: level_bound } => {
                cost_stop = Some(stop_of(Some(limit)));
                let low = level_bound.unwrap_or(0.0);
                cost_bound = Some(cost_bound.map_or(low, |b: f64| b.min(low)));
            }
            Solved::Error(message) => cost_stop = Some(StopReason::SolverError(message)),
        }
    }
    CostLevel { cheapest, others, bound: cost_bound, stop: cost_stop }
}

/// What probing a level at its LP bound found.
enum Probe {
    /// The level's optimum is this value, reached by the solution (`None`: by the previous
    /// level's solution, which stays the warm start).
    Fixed(f64, Option<MasterSolution>),
    /// The level needs its full search, with this proven lower bound (when there is one).
    Search(Option<f64>),
}

/// The value of L1 or an L3 level the warm start already reaches (`None` for other levels, or
/// without a warm start): no bound at or above it needs probing.
fn known_value(
    problem: &Problem,
    goal: Goal,
    warm: Warm<'_>,
    hint: Option<&(Hint, Objective)>,
    last: Option<&MasterSolution>,
) -> Option<f64> {
    if goal == Goal::Unplaced {
        return hint.filter(|_| matches!(warm, Warm::Plan(_))).map(|(_, objective)| -(objective.placed_copies as f64));
    }
    let Goal::Priority(priority) = goal else { return None };
    match warm {
        Warm::Plan(_) => hint.map(|(_, objective)| f64::from(objective.instances_of_priority(priority))),
        Warm::Previous(_) => last.map(|solution| instances_of_priority(problem, solution, priority) as f64),
        Warm::None => None,
    }
}

/// Probes a level at its LP bound: any plan reaching the bound is optimal, no proof needed.
/// The LP solve, then (when the backend honours node limits) a node-limited probe and
/// relax-and-fix at the bound; while a step proves its bound unreachable (the probe or stage 1
/// infeasible), relax-and-fix again at the bound plus one, up to [`LADDER_STEPS`] steps and
/// below `ceiling` (the value the warm start already reaches).
fn probe_level(
    model: &LevelModel<'_, '_>,
    goal: Goal,
    warm: Warm<'_>,
    last: Option<&MasterSolution>,
    probes: bool,
    ceiling: Option<f64>,
) -> Probe {
    let limits = model.limits;
    let relaxed = Extra { relax: true, ..Extra::default() };
    let Solved::Solution { solution, proven: true, .. } = model.solve(goal, limits, Warm::None, relaxed) else {
        return Probe::Search(None);
    };
    let lower = (solution.value - 1e-6).ceil();
    // The previous level's solution already reaches the bound: it is this level's optimum too.
    if let (Goal::Priority(priority), Some(previous)) = (goal, last) {
        if instances_of_priority(model.facts.problem, previous, priority) as f64 <= lower {
            return Probe::Fixed(lower, None);
        }
    }
    if !probes {
        // The LP bound still helps as a cut; the probe and relax-and-fix (both node-limited)
        // are skipped.
        return Probe::Search(Some(lower));
    }
    let probe = Extra { at_most: Some(lower), ..Extra::default() };
    let probe_limits = Limits { node_limit: Some(limits.node_limit.unwrap_or(u64::MAX).min(PROBE_NODES)), ..limits };
    let mut at_least = Some(lower);
    match model.solve(goal, probe_limits, warm, probe) {
        Solved::Solution { solution, .. } => return Probe::Fixed(lower, Some(solution)),
        Solved::Infeasible => at_least = Some(lower + 1.0),
        _ => match relax_and_fix(model, goal, warm, lower) {
            Heuristic::Found(solution) => return Probe::Fixed(lower, Some(solution)),
            Heuristic::Impossible => at_least = Some(lower + 1.0),
            Heuristic::Unknown => {}
        },
    }
    // Each step that moved the bound up by one: relax-and-fix at the new bound. Stage 1 is
    // cheap next to the full search, and on L3 levels whose LP bound is a few instances below
    // the optimum (instances that must each hold a large copy, per-AZ counts) this climbs to
    // the optimum and finds a plan there, which the full search from a loose bound did not.
    let mut steps = 0;
    while let Some(bound) = at_least.filter(|&bound| bound > lower && ceiling.is_none_or(|known| bound < known)) {
        if steps == LADDER_STEPS || model.limits.deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            break;
        }
        steps += 1;
        match relax_and_fix(model, goal, warm, bound) {
            Heuristic::Found(solution) => return Probe::Fixed(bound, Some(solution)),
            Heuristic::Impossible => at_least = Some(bound + 1.0),
            Heuristic::Unknown => break,
        }
    }
    Probe::Search(at_least)
}

/// The level's value when `objective` (the warm start's, which meets every `fixed` level)
/// reaches a floor no plan can beat, so no solve is needed: L1 with every copy placed that any
/// plan can place ([`bounds::most_final_copies`]: a copy no pool type fits stays unplaced); L2,
/// once L1 is there, at the sum of each balanced component's most even split of its most final
/// copies (each then holds exactly those; [`bounds::balance_floor`]); an L3 level at no instance of
/// its priority. On large inputs these are the most expensive solves (10,000 copies: 3.5 s for
/// L1's alone).
fn floor_met(problem: &Problem, goal: Goal, objective: &Objective, fixed: &[(Goal, f64)]) -> Option<f64> {
    // Each component's most final copies: a plan placing their sum places every copy that can
    // be placed, and then each component holds exactly its most.
    let most = bounds::most_final_copies(problem);
    let wanted: u64 = most.iter().sum();
    let all_placed = objective.placed_copies == wanted;
    match goal {
        Goal::Unplaced if all_placed && fixed.is_empty() => Some(-(wanted as f64)),
        Goal::Balance if all_placed && fixed == [(Goal::Unplaced, -(wanted as f64))] => {
            // No copy short: the floor the reported bounds carry at this L1.
            let floor = bounds::balance_floor(problem, &most, 0);
            (objective.balance_excess == floor).then_some(floor as f64)
        }
        Goal::Priority(priority) if objective.instances_of_priority(priority) == 0 => Some(0.0),
        _ => None,
    }
}

/// What the relax-and-fix heuristic learned about a level at its LP bound.
enum Heuristic {
    /// A master solution reaching the bound (so it is optimal for the level).
    Found(MasterSolution),
    /// Even with continuous copy counts the bound is out of reach: the level is ≥ bound + 1.
    Impossible,
    /// Nothing proven.
    Unknown,
}

/// Relax-and-fix at a level's LP bound `lower`: stage 1 solves the master with the copy
/// counts of aggregated groups continuous (instance counts and per-AZ copies stay integer),
/// which microlp does in few nodes; stage 2 fixes every component's copies per AZ to stage 1's
/// and solves the exact master. See `docs/formulation.md` ("Relax-and-fix").
fn relax_and_fix(model: &LevelModel<'_, '_>, goal: Goal, warm: Warm<'_>, lower: f64) -> Heuristic {
    let limits = model.limits;
    let budget = Limits { node_limit: Some(limits.node_limit.unwrap_or(u64::MAX).min(HEURISTIC_NODES)), ..limits };
    // At most and at least the bound: the first solution found ends the solve.
    let relaxed = Extra { at_most: Some(lower), at_least: Some(lower), relax_copies: true, ..Extra::default() };
    let counts = match model.solve(goal, budget, Warm::None, relaxed) {
        Solved::Solution { solution, .. } => master::counts_from_tail(model.facts.problem, &solution.integers),
        // Stage 1 is a relaxation of the master: no solution there, none in the master.
        Solved::Infeasible => return Heuristic::Impossible,
        _ => None,
    };
    let Some(counts) = counts else { return Heuristic::Unknown };
    let restricted = Extra { at_most: Some(lower), at_least: Some(lower), counts: Some(&counts), ..Extra::default() };
    match model.solve(goal, budget, warm, restricted) {
        Solved::Solution { solution, .. } => Heuristic::Found(solution),
        _ => Heuristic::Unknown,
    }
}

/// The warm start for the next solve: the greedy plan when it reaches every fixed level's
/// optimum (it is then feasible for the next level), else the previous level's solution.
fn warm_start<'a>(
    hint: Option<&'a (Hint, Objective)>,
    fixed: &[(Goal, f64)],
    last: Option<&'a MasterSolution>,
) -> Warm<'a> {
    if let Some((plan, objective)) = hint {
        let reaches = |&(goal, value): &(Goal, f64)| {
            let reached = match goal {
                Goal::Unplaced => -(objective.placed_copies as f64),
                Goal::Balance => objective.balance_excess as f64,
                Goal::Priority(priority) => f64::from(objective.instances_of_priority(priority)),
                Goal::Cost(_) => return false,
            };
            (reached - value).abs() < 0.5
        };
        if fixed.iter().all(reaches) {
            return Warm::Plan(plan);
        }
    }
    match last {
        Some(solution) => Warm::Previous(&solution.integers),
        None => Warm::None,
    }
}

fn stop_of(limit: Option<Limit>) -> StopReason {
    match limit {
        Some(Limit::Nodes) => StopReason::NodeLimit,
        _ => StopReason::TimeLimit,
    }
}

/// Whether a level's search (`solved`) stalled at the warm start's value `incumbent`: unproven
/// and not better than the warm start. For L1 its proven bound must also lie within
/// [`L1_STALL_GAP`] of it; L2's whatever its bound (the balance bound of the LP relaxation is
/// weak, docs/formulation.md, "Hand-over"); later levels are never handed over.
fn stalled(goal: Goal, solved: &Solved, incumbent: f64) -> bool {
    let (found, bound) = match solved {
        Solved::Solution { solution, proven: false, best_bound, .. } => (Some(solution.value), *best_bound),
        Solved::Interrupted { best_bound, .. } => (None, *best_bound),
        _ => return false,
    };
    let improved = found.is_some_and(|value| value < incumbent - 0.5);
    match goal {
        Goal::Unplaced => !improved && bound.is_some_and(|bound| incumbent - bound <= L1_STALL_GAP + 1e-6),
        Goal::Balance => !improved,
        _ => false,
    }
}

/// [`lex_bound`], or after a level was handed over unproven, the levels proven before it, its
/// own bound and nothing after it.
fn reported_bound(
    facts: &Facts<'_>,
    fixed: &[(Goal, f64)],
    stopped: Option<(Goal, Option<f64>)>,
    handed_over: Option<&HandOver>,
) -> Option<Objective> {
    match handed_over {
        Some(handed) => lex_bound(facts, &handed.proven, Some((handed.goal, handed.bound))),
        None => lex_bound(facts, fixed, stopped),
    }
}

/// The instant [`L1_TIME_SHARE`] of the time left before `deadline` from now.
fn share_of_time_left(deadline: Instant) -> Instant {
    let now = Instant::now();
    now + deadline.saturating_duration_since(now).mul_f64(L1_TIME_SHARE)
}

/// The proven lexicographic lower bound: the fixed levels, then the stopped level's solver
/// bound, then nothing (trivial bounds) for later levels.
fn lex_bound(facts: &Facts<'_>, fixed: &[(Goal, f64)], stopped: Option<(Goal, Option<f64>)>) -> Option<Objective> {
    let most_copies: u64 = facts.problem.components().iter().map(|c| u64::from(c.copy_count)).sum();
    let mut bound = Objective { placed_copies: most_copies, ..Objective::default() };
    let levels = fixed.iter().map(|&(goal, value)| (goal, Some(value))).chain(stopped);
    for (goal, value) in levels {
        let Some(value) = value else { break };
        match goal {
            Goal::Unplaced => bound.placed_copies = (-value + 1e-6).floor().max(0.0) as u64,
            Goal::Balance => bound.balance_excess = (value - 1e-6).ceil().max(0.0) as u64,
            Goal::Priority(priority) => {
                let count = (value - 1e-6).ceil().max(0.0) as u32;
                if count > 0 {
                    bound.instances_by_priority.insert(priority, count);
                }
            }
            Goal::Cost(cost_unit) => {
                // One micro below the solver's value: the bound must not exceed the optimum.
                bound.cost_micros = (crate::plan::to_micros(value) - 1).max(0);
                bound.cost_unit = cost_unit;
            }
        }
    }
    Some(bound)
}

/// A plan from a master solution that does not pack exactly, with up to [`LOOSE_SPARE`] more
/// instances for each group that does not pack in the master's count (verified).
struct Loose {
    actions: Vec<Action>,
    objective: Objective,
}

/// Instances a loosely packed group may add to the master's count.
const LOOSE_SPARE: u32 = 2;

/// The master's aggregated groups are a relaxation of packing: a group may hold copies that no
/// packing fits into its instance count. The search then models the group instance by instance
/// (much larger), which may run out of time; this plan, packed with a spare instance or two and
/// verified, is what the planner returns then instead of the greedy plan, when it is better.
fn loose_plan(problem: &Problem, actions: Vec<Action>) -> Option<Loose> {
    let plan = finish(problem, SolverKind::Exact, Status::Feasible, StopReason::Completed, actions.clone(), None);
    verify(problem, &plan).is_empty().then_some(Loose { actions, objective: plan.objective })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unproven(value: f64, bound: Option<f64>) -> Solved {
        let solution = MasterSolution { value, ..MasterSolution::default() };
        Solved::Solution { solution, proven: false, limit: Some(Limit::Nodes), best_bound: bound }
    }

    #[test]
    fn balance_is_handed_over_when_its_search_finds_nothing_better_than_the_warm_start() {
        // The warm start's balance excess is 70; the LP bound says little (it may be far off).
        let incumbent = 70.0;
        assert!(stalled(Goal::Balance, &unproven(70.0, Some(12.0)), incumbent));
        assert!(stalled(Goal::Balance, &unproven(70.0, None), incumbent));
        assert!(stalled(Goal::Balance, &Solved::Interrupted { limit: Limit::Time, best_bound: None }, incumbent));
        // Better than the warm start: the search is getting somewhere and keeps its time.
        assert!(!stalled(Goal::Balance, &unproven(69.0, Some(67.0)), incumbent));
        // Proven or infeasible: nothing to hand over.
        let solution = MasterSolution { value: 70.0, ..MasterSolution::default() };
        let proven = Solved::Solution { solution, proven: true, limit: None, best_bound: None };
        assert!(!stalled(Goal::Balance, &proven, incumbent));
        assert!(!stalled(Goal::Balance, &Solved::Infeasible, incumbent));
        // The instance levels are never handed over; L1 keeps its own rule (a bound close by).
        assert!(!stalled(Goal::Priority(1), &unproven(5.0, None), 5.0));
        assert!(!stalled(Goal::Unplaced, &unproven(-100.0, None), -100.0));
        assert!(stalled(Goal::Unplaced, &unproven(-100.0, Some(-101.0)), -100.0));
    }

    #[test]
    fn l1_is_handed_over_only_when_its_proof_stalls_at_the_warm_start() {
        // L1's value is minus the copies placed: the warm start places 100.
        let incumbent = -100.0;
        // The search found nothing better, its bound is one or two copies away: a stalled proof.
        assert!(stalled(Goal::Unplaced, &unproven(-100.0, Some(-101.0)), incumbent));
        assert!(stalled(Goal::Unplaced, &unproven(-100.0, Some(-102.0)), incumbent));
        assert!(stalled(
            Goal::Unplaced,
            &Solved::Interrupted { limit: Limit::Nodes, best_bound: Some(-101.0) },
            incumbent
        ));
        // Further from the bound, or without one: the search may still find copies to place.
        assert!(!stalled(Goal::Unplaced, &unproven(-100.0, Some(-103.0)), incumbent));
        assert!(!stalled(Goal::Unplaced, &unproven(-100.0, None), incumbent));
        // Better than the warm start: L1's search is getting somewhere.
        assert!(!stalled(Goal::Unplaced, &unproven(-101.0, Some(-102.0)), incumbent));
        // Proven, or no solution at all: nothing to hand over.
        let solution = MasterSolution { value: -100.0, ..MasterSolution::default() };
        assert!(!stalled(
            Goal::Unplaced,
            &Solved::Solution { solution, proven: true, limit: None, best_bound: None },
            incumbent
        ));
        assert!(!stalled(Goal::Unplaced, &Solved::Infeasible, incumbent));
    }
}
