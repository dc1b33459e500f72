//! The greedy planner: fast, always valid, as close to the optimum of docs/contract.md §2 as a greedy gets.
//!
//! Phases:
//! 1. **Scale-in** (`scale_in.rs`): components with more copies than desired lose the excess,
//!    taken so that AZ balance stays as good as it can be and fallback instances empty first.
//! 2. **Placement** (`place.rs`): components hardest first; copies go to AZs by balance, then
//!    into free room of instances that stay anyway, then onto newly opened instances (a launch or
//!    an idle existing instance) of the most preferred type with capacity, chosen by how well the
//!    remaining copies fit.
//! 3. **Repair** (`repair.rs`): a copy still missing is placed by relocating one or two of
//!    this plan's new copies off an instance to other room (never an existing copy, never to an
//!    AZ where the relocated component's balance gets worse), or by trading one new copy for two
//!    or more missing ones that fit the room it frees; then instances the plan opened whose
//!    copies all fit elsewhere are emptied and closed (fewer instances, same L1 and L2; while
//!    copies are missing, the pass places again, since closed instances leave room under
//!    MaxInstanceCount); last, new copies of components over their MaxImbalance move to
//!    emptier AZs, onto free room or in exchange for another component's new copy (same
//!    instances and copies, lower L2).
//! 4. **Release**: idle existing instances are released lowest priority first; MinInstanceCount
//!    is met with the best instances on offer (kept or launched).
//! 5. **Balance moves** (`engines::balance`, shared with the exact planner; on the kept plan):
//!    ejection chains of new copies between AZs that lower the balance excess further while
//!    every instance stays, then relaunches: a launch moved to another AZ with its copies where
//!    its type may still launch (same instances per type, same reservations used).
//! 6. **SPREAD pass** (`spread::rebalance_spread_indexed`): moves new copies within an AZ so
//!    the SPREAD rule holds; it never changes the set of instances.
//! 7. **Instance polishes** (`engines::polish::better_instances`, shared with the exact
//!    planner; on the final plan): launches of fallback types moved up to a preferred type
//!    (alone, in pairs repacked, or into another AZ where balance allows), then launches whose
//!    copies the rest of their AZ holds emptied and taken out; each kept only when the plan
//!    verifies and is strictly better (L1 and L2 never change).
//!
//! Small problems run phases 1–4 several times (component orders × modes, within a work
//! budget) and keep the best result by objective; large ones run them once. When the best
//! result still leaves copies unplaced that fit some pool type, **rescue passes** run
//! (`place::rescue_passes`): openings chosen by the copies one instance holds, counting the room
//! it keeps for other missing copies, and AZs by that before balance (when MaxInstanceCount or
//! capacity binds, L1 is won by copies per instance), AZs taking turns under a short
//! budget, and **mixed packing** (`mixed.rs`): each opened instance filled from every missing
//! copy at once, so copies of different shapes share it. Plans that place every copy pay
//! nothing for them; small ones also get one first-fit-decreasing mixed pass (fewer instances).
//! When copies still stay unplaced, the best plan and the next best distinct ones are
//! **repacked** (`repack.rs`): two instances' new copies and a missing copy packed together
//! again, a launch possibly retyped; a runner-up wins only when strictly better. Then, on the
//! best plan only, the repair runs once more with a larger budget, and apart from it launches are
//! **retyped for room** (`retype.rs`: a type holding their copies with room to spare, then
//! relocations and pair repacks); either result is kept only when strictly better. Last, launches
//! whose copies fit elsewhere are emptied by chains and the places that frees under
//! MaxInstanceCount go to openings for missing copies (**refill**, rounds while each places
//! more; kept when strictly better). Phases 5 and 6 run on the kept result only (they do not
//! change L1 or L3, and L4 never rises).
//!
//! When that plan still leaves copies unplaced, the **LP-guided openings** (`lp_packing.rs`)
//! plan once more, apart: the configuration LP of L1 over the instances left chooses which
//! patterns of copies to open, rounded by diving (it sees the whole instance budget, where the
//! passes above look one instance ahead), then the same final repairs and phases 5 and 6; that
//! plan is kept only when strictly better, so it never makes a plan worse.
//!
//! The planner runs on the problem in canonical order (`Problem::canonical`: AZs, types,
//! components and fleet instances by name), so no tie it breaks by position depends on the order
//! of the input: permuting components, pool entries, AZs, capacity or the fleet does not change
//! the plan.

mod lp_packing;
mod mixed;
mod place;
mod repack;
mod repair;
mod retype;
mod scale_in;

use smallvec::SmallVec;

use std::collections::BTreeMap;

use super::polish;
use super::spread::{self, Slot};
use std::time::Instant;

use crate::engines::contract::{problem_engine, Engine};
use crate::engines::limits::{Limits, Stats};
use crate::fleet::{objective, solo_cost_micros, FinalFleet, FinalInstance};
use crate::index::{AzIndex, TypeIndex};
use crate::plan::{Action, ObjectiveKey, Plan, SolverKind, Status, StopReason};
use crate::problem::{Component, Problem, Resources};

/// Final fleets of at most this many instances get the instance polishes
/// ([`polish::better_instances`]). Each polish replays the whole plan and the emptying tries up
/// to 256 launches, each against every instance: on the generated 10,000-copy endpoint (1,852
/// launches) they took greedy from about 60 to 125 ms, on 100,000 copies from 290 to 740 ms, and
/// found nothing there; the hard endpoints they improve have 20–300 instances.
const POLISH_MAX_INSTANCES: u64 = 1_000;

/// Plans with the greedy fast path and no limits: [`GreedyPlanner::new`]`().plan(problem)`.
/// Every hard constraint holds; `Status::Infeasible` only when MinInstanceCount cannot be
/// reached with the capacity given.
pub fn plan_greedy(problem: &Problem) -> Plan {
    GreedyPlanner::new().plan(problem)
}

/// The greedy fast path, configured like every engine: [`Limits`] in, a [`Plan`] with a
/// [`StopReason`] (and [`Stats`]) out.
///
/// Small problems are planned several times (component orders and `Mode`s, see
/// `place::candidate_passes`) and the best plan by objective is kept: one greedy pass can spend
/// capacity or the MaxInstanceCount budget on the wrong component, and the passes are cheap.
/// Large problems get one pass, so time stays linear. The limits stop the extra passes (the node
/// limit counts passes); the first pass always runs, since it is the plan.
///
/// Passes are compared on the final fleet each one reaches, before any actions are written:
/// the SPREAD pass only moves new copies between instances of that fleet within an AZ, so L1–L4
/// are the same before and after it, and only the winning pass needs it, its actions and the
/// full `finish` with `Unplaced`.
///
/// When copies stay unplaced and the pool has two priorities or more, the whole planner runs
/// once more with every pool priority at 1, and that plan (valued on the real problem) wins when
/// it is strictly better: preferring types can fill MaxInstanceCount with instances the missing
/// copies cannot use.
///
/// ```
/// use fleetplan::{GreedyPlanner, Limits, Problem, StopReason};
/// # let problem = Problem::from_json(include_str!("../../../scenarios/seed-az-balance.json")).unwrap();
/// let plan = GreedyPlanner::new().limits(Limits::new().node_limit(1)).plan(&problem);
/// assert!(fleetplan::verify(&problem, &plan).is_empty());
/// assert!(matches!(plan.stop_reason, StopReason::Completed | StopReason::NodeLimit));
/// ```
#[derive(Debug, Clone, Default)]
pub struct GreedyPlanner {
    limits: Limits,
    /// No flat-priority run when copies stay unplaced (the exact planner runs its own).
    priority_first_only: bool,
}

impl GreedyPlanner {
    /// A greedy planner without limits: bounded by construction (a fixed number of passes, at
    /// most a few dozen and one on large problems, each polynomial in the input), and
    /// deterministic.
    pub fn new() -> Self {
        GreedyPlanner::default()
    }

    /// The shared engine limits (a time limit per call or a deadline, passes as nodes,
    /// cancellation checked between passes). Each field `limits` sets replaces the one set
    /// before ([`Limits::merged`]). No default time limit: the passes are bounded already.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.set_limits(limits);
        self
    }

    /// Plans; see [`GreedyPlanner`].
    pub fn plan(&self, problem: &Problem) -> Plan {
        self.plan_with_stats(problem).0
    }

    /// [`plan`](Self::plan), with what the planner did (passes as `solves`).
    pub fn plan_with_stats(&self, problem: &Problem) -> (Plan, Stats) {
        super::in_canonical_order(problem, |problem| self.plan_canonical(problem))
    }

    /// [`Self::plan_with_stats`] on a problem in canonical order: the passes and the phases
    /// after them ([`Self::planned`]), then the instance polishes the exact planner ends with
    /// ([`polish::better_instances`]: launches moved up to preferred types, then emptied), except
    /// in a run for the exact planner's warm start ([`Self::priority_first_only`]).
    fn plan_canonical(&self, problem: &Problem) -> (Plan, Stats) {
        let limits = self.limits.armed(None);
        let (plan, mut stats) = self.planned(problem, &limits);
        // The exact planner's warm start (and greedy's own flat run) skips them: the exact
        // planner ends with the same polishes, and at 1 s the time they take is the search's.
        // So do final fleets beyond POLISH_MAX_INSTANCES.
        if self.priority_first_only
            || plan.objective.total_instances() > POLISH_MAX_INSTANCES
            || plan.status == Status::Infeasible
        {
            return (plan, stats);
        }
        let mut plan = plan;
        // Under a node limit (passes) the polishes are one pass more, skipped at the limit, as
        // the LP-guided openings are: a run of one pass is then what the exact planner's warm
        // start under a deadline that cuts it after its first pass is.
        let skipped = if limits.nodes().is_some_and(|limit| stats.solves >= limit) {
            Some(StopReason::NodeLimit)
        } else {
            limits.stop_now()
        };
        if skipped.is_none() {
            stats.solves += 1;
            plan = polish::better_instances(problem, plan, &limits, &mut stats);
        }
        // A polish the limits skipped or cut says so (what it kept is whole and verified).
        if let Some(reason) = skipped.or_else(|| limits.stop_now()) {
            if plan.stop_reason == StopReason::Completed {
                plan.stop_reason = reason;
            }
        }
        (plan, stats)
    }

    /// The plan of the passes and the phases after them, under the armed `limits`.
    fn planned(&self, problem: &Problem, limits: &Limits) -> (Plan, Stats) {
        let started = Instant::now();
        let limits = limits.clone();
        let mut stats = Stats::default();
        let mut stop = StopReason::Completed;
        let passes = place::candidate_passes(problem);
        let mut best: Option<(Greedy<'_>, Option<PassRank>)> = None;
        // The next best distinct plans, to repack them too (below).
        let mut runners_up: Vec<(PassRank, Greedy<'_>)> = Vec::new();
        Self::run_passes(&limits, problem, &passes, &mut best, &mut runners_up, &mut stats, &mut stop);
        if best.as_ref().is_some_and(|(planner, _)| planner.missing_copies() > 0) && stop == StopReason::Completed {
            // Copies left behind: the passes that trade balance and preference for copies per
            // instance run only now, so plans that place everything pay nothing for them.
            let rescue = place::rescue_passes(problem);
            Self::run_passes(&limits, problem, &rescue, &mut best, &mut runners_up, &mut stats, &mut stop);
        }
        if best.as_ref().is_some_and(|(planner, _)| planner.missing_copies() > 0) && stop == StopReason::Completed {
            Self::repack_best_plans(&limits, problem, &mut best, runners_up, &mut stats, &mut stop);
        }
        if best.as_ref().is_some_and(|(planner, _)| planner.missing_copies() > 0) && stop == StopReason::Completed {
            stats.solves += 1;
            Self::relocate_and_retype_best(&limits, problem, &mut best);
        }
        let planner = match best {
            Some((planner, _)) => planner,
            None => plan_pass(problem, &place::component_order(problem), Mode::DEFAULT, &limits),
        };
        stats.phase("passes", started);
        let (plan, missing) = Self::finished(&limits, problem, planner, stop, &mut stats);
        if !missing {
            return (plan, stats);
        }
        let phase = Instant::now();
        let plan = Self::lp_guided_if_better(&limits, problem, plan, &mut stats);
        stats.phase("LP-guided openings", phase);
        if self.priority_first_only {
            return (plan, stats);
        }
        let phase = Instant::now();
        let plan = Self::flat_if_better(&limits, problem, plan, &mut stats);
        stats.phase("flat priorities", phase);
        (plan, stats)
    }

    /// The kept plan's last phases (balance moves, emptied launches, the SPREAD pass) and the
    /// plan; also whether copies are still missing in a run the limits did not stop.
    fn finished(
        limits: &Limits,
        problem: &Problem,
        mut planner: Greedy<'_>,
        stop: StopReason,
        stats: &mut Stats,
    ) -> (Plan, bool) {
        let phase = Instant::now();
        planner.lower_excess_by_chains(limits);
        stats.phase("balance moves", phase);
        let phase = Instant::now();
        planner.empty_by_chains(limits);
        stats.phase("empty launches", phase);
        let status = if planner.min_reached { Status::Feasible } else { Status::Infeasible };
        let missing = planner.missing_copies() > 0 && stop == StopReason::Completed;
        #[cfg(debug_assertions)]
        let fleet_before_spread = planner.final_fleet();
        let (slots, placed) = (planner.spread_slots(), planner.placement_positions());
        let actions = planner.into_actions();
        // The ranking above relies on this: the planner's own fleet is the one its actions build.
        #[cfg(debug_assertions)]
        debug_assert_eq!(fleet_before_spread, FinalFleet::apply(problem, &actions).0);
        let phase = Instant::now();
        let actions = spread::rebalance_spread_indexed(problem, actions, slots, placed);
        stats.phase("SPREAD pass", phase);
        (super::finish(problem, SolverKind::Greedy, status, stop, actions, None), missing)
    }

    /// `plan`, or the plan of the LP-guided passes (`lp_packing.rs`) with the same final repairs
    /// and last phases when that one is strictly better and verifies. Run apart, after `plan`
    /// is complete, so they never make a plan worse: placed among the rescue passes, an LP plan
    /// one copy ahead before the final repairs won there, and then lost the balance those
    /// repairs gave the other plan at the same copies (`hard-25-025`: excess 14 → 38).
    fn lp_guided_if_better(limits: &Limits, problem: &Problem, mut plan: Plan, stats: &mut Stats) -> Plan {
        if let Some(reason) = limits.stop_now() {
            plan.stop_reason = reason;
            return plan;
        }
        // The node limit counts passes: this one is a pass more.
        if limits.nodes().is_some_and(|limit| stats.solves >= limit) {
            plan.stop_reason = StopReason::NodeLimit;
            return plan;
        }
        let mut stop = StopReason::Completed;
        let mut guided: Option<(Greedy<'_>, Option<PassRank>)> = None;
        let mut runners_up = Vec::new();
        Self::run_passes(limits, problem, &place::lp_passes(problem), &mut guided, &mut runners_up, stats, &mut stop);
        // The dive stops at the limits inside the pass, which `run_passes` does not see.
        if let Some(reason) = limits.stop_now() {
            stop = reason;
        }
        if guided.as_ref().is_some_and(|(planner, _)| planner.missing_copies() > 0) && stop == StopReason::Completed {
            stats.solves += 1;
            Self::relocate_and_retype_best(limits, problem, &mut guided);
        }
        let Some((planner, _)) = guided else { return plan };
        let (candidate, _) = Self::finished(limits, problem, planner, stop.clone(), stats);
        let mut kept = if replaces(problem, &plan, &candidate) { candidate } else { plan };
        // A run the limits cut says so, whichever plan it keeps.
        if stop != StopReason::Completed {
            kept.stop_reason = stop;
        }
        kept
    }

    /// `plan`, or the same planner's plan with every pool priority at 1 (priorities only rank
    /// plans, so it is feasible here too) when that one, valued on the real problem, is strictly
    /// better and verifies: preferring types can fill MaxInstanceCount with instances the
    /// missing copies cannot use, or cost more at the same levels. Only when the pool has two
    /// priorities or more, `plan` is feasible and `limits` leave time (the flat run is an extra).
    /// The greedy planner runs it when copies stay unplaced, the exact planner's warm start on
    /// every input (beside the priority run, [`Self::flat_run`]).
    pub(crate) fn flat_if_better(limits: &Limits, problem: &Problem, plan: Plan, stats: &mut Stats) -> Plan {
        if plan.status == Status::Infeasible || limits.stop_now().is_some() {
            return plan;
        }
        let flat = Self::flattened(problem).map(|flat| Self::flat_run(limits, &flat));
        Self::better_of_flat(problem, plan, flat, stats)
    }

    /// `problem` with every pool priority at 1, the input of [`Self::flat_run`]; `None` when the
    /// pool has fewer than two priorities (the flat run would be the priority run).
    pub(crate) fn flattened(problem: &Problem) -> Option<Problem> {
        let priorities: std::collections::BTreeSet<u8> =
            problem.types.iter().map(|info| info.priority).filter(|&priority| priority <= 5).collect();
        if priorities.len() < 2 {
            return None;
        }
        let mut flat = problem.clone();
        for info in &mut flat.types {
            if info.priority <= 5 {
                info.priority = 1;
            }
        }
        Some(flat)
    }

    /// The run of [`Self::flat_if_better`] on its own: this planner's plan of `flat` (from
    /// [`Self::flattened`]) under `limits`.
    pub(crate) fn flat_run(limits: &Limits, flat: &Problem) -> (Plan, Stats) {
        GreedyPlanner { limits: limits.clone(), priority_first_only: true }.plan_with_stats(flat)
    }

    /// `plan`, or the flat run's plan valued on the real problem when it is strictly better and
    /// verifies (and `plan` is feasible).
    pub(crate) fn better_of_flat(
        problem: &Problem,
        plan: Plan,
        flat: Option<(Plan, Stats)>,
        stats: &mut Stats,
    ) -> Plan {
        let Some((flat_plan, flat_stats)) = flat else { return plan };
        stats.solves += flat_stats.solves;
        if plan.status == Status::Infeasible {
            return plan;
        }
        // The flat run's stop reason: a limit that cut it is what the candidate must say.
        let candidate =
            super::finish(problem, SolverKind::Greedy, plan.status, flat_plan.stop_reason, flat_plan.actions, None);
        if replaces(problem, &plan, &candidate) {
            candidate
        } else {
            plan
        }
    }

    /// This planner without the flat-priority run (for the exact planner's warm start, which
    /// runs one of its own on every input).
    pub(crate) fn priority_first_only(mut self) -> Self {
        self.priority_first_only = true;
        self
    }
}

problem_engine!(GreedyPlanner => Plan);

impl GreedyPlanner {
    /// Runs `passes` in order, keeping in `best` the plan that reaches MinInstanceCount first,
    /// then has the best objective (an earlier pass wins ties). The first pass of a planner
    /// always runs (it is the plan); later ones stop at the limits (the node limit counts passes).
    fn run_passes<'a>(
        limits: &Limits,
        problem: &'a Problem,
        passes: &[(Vec<usize>, Mode)],
        best: &mut Option<(Greedy<'a>, Option<PassRank>)>,
        runners_up: &mut Vec<(PassRank, Greedy<'a>)>,
        stats: &mut Stats,
        stop: &mut StopReason,
    ) {
        for (order, mode) in passes {
            if best.is_some() {
                if let Some(reason) = limits.stop_now() {
                    *stop = reason;
                    return;
                }
                if limits.nodes().is_some_and(|limit| stats.solves >= limit) {
                    *stop = StopReason::NodeLimit;
                    return;
                }
            }
            stats.solves += 1;
            let planner = plan_pass(problem, order, *mode, limits);
            let Some((current, current_rank)) = best.as_mut() else {
                // Ranked only once another pass competes: a single pass is the plan as it is.
                *best = Some((planner, None));
                continue;
            };
            let current_rank = *current_rank.get_or_insert_with(|| pass_rank(problem, current));
            let rank = pass_rank(problem, &planner);
            if rank < current_rank {
                if let Some((previous, _)) = best.replace((planner, Some(rank))) {
                    keep_runner_up(runners_up, current_rank, previous);
                }
            } else {
                keep_runner_up(runners_up, rank, planner);
            }
        }
    }

    /// Places more copies in the best plan and the runners-up by repacking pairs of their
    /// instances (`repack.rs`); a repacked plan replaces the best one only when strictly better.
    /// The repack ends each plan as it is (it opens nothing, so releases and MinInstanceCount
    /// stay as they were); the balance pass then lowers the excess its moves may have added.
    fn repack_best_plans<'a>(
        limits: &Limits,
        problem: &'a Problem,
        best: &mut Option<(Greedy<'a>, Option<PassRank>)>,
        runners_up: Vec<(PassRank, Greedy<'a>)>,
        stats: &mut Stats,
        stop: &mut StopReason,
    ) {
        let Some((planner, rank)) = best.as_mut() else { return };
        stats.solves += 1;
        if planner.repack_pairs(repack::REPACK_WORK) > 0 {
            // One copy more at least: better than before whatever the levels below.
            planner.rebalance_by_moves();
            *rank = None;
        }
        for (_, mut planner) in runners_up {
            if let Some(reason) = limits.stop_now() {
                *stop = reason;
                return;
            }
            if limits.nodes().is_some_and(|limit| stats.solves >= limit) {
                *stop = StopReason::NodeLimit;
                return;
            }
            stats.solves += 1;
            if planner.repack_pairs(repack::REPACK_WORK) == 0 {
                continue;
            }
            planner.rebalance_by_moves();
            let Some((current, current_rank)) = best.as_mut() else { return };
            let current_rank = *current_rank.get_or_insert_with(|| pass_rank(problem, current));
            let rank = pass_rank(problem, &planner);
            if rank < current_rank {
                *best = Some((planner, Some(rank)));
            }
        }
    }
}

impl GreedyPlanner {
    /// Places more copies in the best plan, once it is final: by the repair pass's relocations
    /// with a larger budget than a pass gets ([`FINAL_REPAIR_WORK`]), and, apart, after
    /// retyping launches for room (`retype.rs`) followed by relocations and pair repacks; then
    /// insertion chains, and last the refill after emptying launches
    /// ([`Greedy::refilled_after_emptying`]). Each result replaces the best plan only when
    /// strictly better. The chains stop when `limits` say so.
    fn relocate_and_retype_best<'a>(
        limits: &Limits,
        problem: &'a Problem,
        best: &mut Option<(Greedy<'a>, Option<PassRank>)>,
    ) {
        let Some((planner, rank)) = best.as_mut() else { return };
        let mut current = *rank.get_or_insert_with(|| pass_rank(problem, planner));
        let order = place::component_order(problem);
        let mut candidates = Vec::new();
        let mut repaired = planner.clone();
        repaired.forget_released_idle();
        repaired.repair_many = true;
        if repaired.repair_with(&order, FINAL_REPAIR_WORK) > 0 {
            repaired.rebalance_by_moves();
            candidates.push(repaired);
        }
        // Rounds while each places more: the copies still missing change what room is worth.
        let mut base = planner.clone();
        base.forget_released_idle();
        base.repair_many = true;
        for _ in 0..RETYPE_ROUNDS {
            let mut retyped = base.clone();
            if retyped.retype_for_room() == 0 {
                break;
            }
            retyped.repair_with(&order, FINAL_REPAIR_WORK);
            retyped.repack_pairs(repack::REPACK_WORK);
            retyped.rebalance_by_moves();
            if retyped.placed_new_copies() <= base.placed_new_copies() {
                break;
            }
            base = retyped.clone();
            candidates.push(retyped);
        }
        for candidate in candidates {
            let rank = pass_rank(problem, &candidate);
            if rank < current {
                current = rank;
                *best = Some((candidate, Some(rank)));
            }
        }
        // Insertion chains last, on the best plan so far: they move copies across AZs, which the
        // relocations above never do at balance's cost, and L1 comes first.
        let Some((planner, _)) = best.as_ref() else { return };
        let mut inserted = planner.clone();
        if inserted.place_missing_by_chains(limits) > 0 {
            inserted.rebalance_by_moves();
            let rank = pass_rank(problem, &inserted);
            if rank < current {
                current = rank;
                *best = Some((inserted, Some(rank)));
            }
        }
        let Some((planner, _)) = best.as_ref() else { return };
        if let Some(refilled) = planner.refilled_after_emptying(&order, limits) {
            let rank = pass_rank(problem, &refilled);
            if rank < current {
                *best = Some((refilled, Some(rank)));
            }
        }
    }
}

/// Whether a second run's `candidate` replaces `plan`: it reaches MinInstanceCount whenever
/// `plan` does (as passes rank, [`pass_rank`]), its objective is strictly better, and it
/// verifies. The flat-priority run and the LP-guided openings both decide this way.
fn replaces(problem: &Problem, plan: &Plan, candidate: &Plan) -> bool {
    (candidate.status != Status::Infeasible || plan.status == Status::Infeasible)
        && candidate.objective.better_than(&plan.objective)
        && crate::verify::verify(problem, candidate).is_empty()
}

/// Rounds of retyping for room on the final best plan.
const RETYPE_ROUNDS: usize = 3;

/// Instance checks of the repair run on the final best plan (once per plan).
const FINAL_REPAIR_WORK: u64 = 200_000;

/// Keeps `planner` among the runners-up when its rank is new and among the best
/// [`REPACKED_PASSES`] − 1 (an earlier plan wins ties).
fn keep_runner_up<'a>(runners_up: &mut Vec<(PassRank, Greedy<'a>)>, rank: PassRank, planner: Greedy<'a>) {
    if runners_up.iter().any(|(kept, _)| *kept == rank) {
        return;
    }
    let position = runners_up.partition_point(|(kept, _)| *kept < rank);
    if position < REPACKED_PASSES - 1 {
        runners_up.insert(position, (rank, planner));
        runners_up.truncate(REPACKED_PASSES - 1);
    }
}

/// Plans (the best and the next best distinct ones) repacked when copies stay unplaced.
const REPACKED_PASSES: usize = 6;

/// How passes compare, smaller first: reaching MinInstanceCount, then the objective.
type PassRank = (bool, ObjectiveKey);

fn pass_rank(problem: &Problem, planner: &Greedy<'_>) -> PassRank {
    (!planner.min_reached, objective(problem, &planner.final_fleet()).key())
}

/// How one greedy pass trades the levels off when MaxInstanceCount is short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mode {
    /// Open the type covering the most copies first, priority second (L1 before L3 when the
    /// instance budget runs out).
    coverage_first: bool,
    /// Open the type holding the most copies per instance first (then as `coverage_first`):
    /// when MaxInstanceCount binds, big instances leave room for the components placed later.
    largest_first: bool,
    /// Launch nothing: then MaxInstanceCount does not bind and every idle existing instance may
    /// be kept (docs/contract.md §2.1, constraint 4).
    forbid_launches: bool,
    /// Place balanced components only as far as adds no balance excess, then place what is
    /// still missing in a second, permissive pass over all components.
    strict_balance: bool,
    /// Balanced components: among AZs equally good for balance and without free room, prefer
    /// the one whose next opening is most preferred, then cheapest (instead of the one with the
    /// fewest copies).
    az_by_opening: bool,
    /// Balanced components: an AZ without free room whose next opening holds more copies per
    /// instance wins over balance (L1 before L2 when MaxInstanceCount binds: the instances
    /// left must hold as many copies as they can). Used with `largest_first` by the rescue passes.
    dense_azs: bool,
    /// Balanced components: when the openings left (MaxInstanceCount) may not cover a round of
    /// copies, the AZs take turns a copy at a time instead of the first AZ placing its whole
    /// share (which can spend the budget before the other AZs get a copy). Rescue passes only.
    az_turns: bool,
    /// Scale-in trims excess copies from the holders with the most copies first instead of
    /// emptying whole instances: the instances keep room for big copies of other components
    /// (an emptied instance may not come back when the fleet is above MaxInstanceCount).
    /// Rescue passes only.
    trim_fullest: bool,
    /// Before the main pass, fill the fleet's free room and open instances packed with copies
    /// of several components at once (`mixed.rs`), this way.
    mixed: Option<mixed::MixedPacking>,
    /// Before the main pass, fill the fleet's free room and open instances as the
    /// configuration LP of L1 chooses (`lp_packing.rs`). Run apart, last (`lp_passes`).
    lp_openings: bool,
}

impl Mode {
    /// Priority first, launches allowed, permissive balance, AZs by fewest copies.
    const DEFAULT: Mode = Mode {
        coverage_first: false,
        largest_first: false,
        forbid_launches: false,
        strict_balance: false,
        az_by_opening: false,
        dense_azs: false,
        az_turns: false,
        trim_fullest: false,
        mixed: None,
        lp_openings: false,
    };
}

/// One greedy pass placing components in `order` (without the SPREAD pass). `limits` stop only
/// the LP-guided openings' dive (whose LP solves grow with the input); every other part of a
/// pass is bounded by its work budget.
fn plan_pass<'a>(problem: &'a Problem, order: &[usize], mode: Mode, limits: &Limits) -> Greedy<'a> {
    let mut planner = Greedy::new(problem);
    planner.coverage_first = mode.coverage_first;
    planner.largest_first = mode.largest_first;
    planner.az_by_opening = mode.az_by_opening;
    planner.dense_azs = mode.dense_azs;
    planner.az_turns = mode.az_turns;
    planner.trim_fullest = mode.trim_fullest;
    planner.scale_in();
    planner.index_fleet();
    planner.no_launches |= mode.forbid_launches;
    if mode.lp_openings {
        planner.pack_by_lp(limits);
    }
    if let Some(packing) = mode.mixed {
        planner.pack_mixed(packing);
    }
    if mode.strict_balance {
        planner.strict_balance = true;
        planner.place_all(order);
        planner.strict_balance = false;
    }
    planner.place_all(order);
    if planner.repair(order) > 0 {
        // A relocation may have opened an instance with room to spare.
        planner.place_all(order);
    }
    if planner.eliminate() > 0 && planner.missing_copies() > 0 {
        // Closed instances leave MaxInstanceCount room for openings that hold missing copies.
        planner.place_all(order);
    }
    planner.rebalance_by_moves();
    planner.min_reached = planner.release_and_meet_min();
    planner
}

/// One instance the planner knows: existing or launched.
#[derive(Debug, Clone)]
struct Instance {
    id: String,
    type_index: usize,
    az: usize,
    /// Index into the problem's fleet, `None` for launches.
    existing: Option<usize>,
    /// In a reservation: costs nothing.
    reserved: bool,
    /// `State: Draining` (contract §6): keeps its copies, receives no new one, never reused.
    draining: bool,
    /// Intrinsic tie-break: existing instances by id, then launches in launch order.
    rank: usize,
    used: Resources,
    /// Copies per component (existing and new), sorted by component.
    copies: SmallVec<[(usize, u32); 4]>,
    /// Certainly in the final fleet: holds copies, or was opened (launched or reused) by the plan.
    in_fleet: bool,
    /// Released by the plan.
    released: bool,
}

impl Instance {
    fn copies_of(&self, component: usize) -> u32 {
        self.copies.iter().find(|(c, _)| *c == component).map_or(0, |&(_, n)| n)
    }

    fn total_copies(&self) -> u64 {
        self.copies.iter().map(|&(_, n)| u64::from(n)).sum()
    }

    fn add(&mut self, component: usize, count: u32, need: &Resources) {
        self.used = self.used.plus(&need.times(u64::from(count)));
        match self.copies.binary_search_by_key(&component, |&(c, _)| c) {
            Ok(pos) => {
                if let Some(entry) = self.copies.get_mut(pos) {
                    entry.1 = entry.1.saturating_add(count);
                }
            }
            Err(pos) => self.copies.insert(pos, (component, count)),
        }
    }

    fn remove_one(&mut self, component: usize, need: &Resources) {
        if let Ok(pos) = self.copies.binary_search_by_key(&component, |&(c, _)| c) {
            self.used = self.used.minus(need).unwrap_or(Resources::ZERO);
            if let Some(entry) = self.copies.get_mut(pos) {
                entry.1 = entry.1.saturating_sub(1);
                if entry.1 == 0 {
                    self.copies.remove(pos);
                }
            }
        }
    }
}

/// What one new copy of `component` needs on pool type `t`, when new copies may go there and one
/// fits an empty instance of it (`None`: greedy never places the component on `t`).
fn fitting_need(problem: &Problem, component: &Component, t: usize) -> Option<Resources> {
    let need = component.placement_requirement(problem, t)?.resources;
    (problem.types.get(t)?.capacity.copies_of(&need) > 0).then_some(need)
}

/// [`fitting_need`] per `[component][type]`.
fn fitting_needs(problem: &Problem) -> Vec<Vec<Option<Resources>>> {
    problem
        .components
        .iter()
        .map(|component| (0..problem.types.len()).map(|t| fitting_need(problem, component, t)).collect())
        .collect()
}

/// Ranking heuristic, not the fleet's L4 rule: one instance of `type_index` costed on its own
/// ([`solo_cost_micros`]), since greedy ranks candidates before the final fleet is known.
fn instance_cost(problem: &Problem, type_index: usize, reserved: bool) -> i64 {
    solo_cost_micros(problem, type_index, reserved)
}

/// Rank of each item when sorted by name (an intrinsic tie-break independent of input order).
fn name_ranks<'a>(names: impl Iterator<Item = &'a str>) -> Vec<usize> {
    let names: Vec<&str> = names.collect();
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by(|&a, &b| names[a].cmp(names[b]).then(a.cmp(&b)));
    let mut ranks = vec![0; names.len()];
    for (rank, index) in order.into_iter().enumerate() {
        ranks[index] = rank;
    }
    ranks
}

/// The planner's working state.
#[derive(Clone)]
struct Greedy<'a> {
    problem: &'a Problem,
    instances: Vec<Instance>,
    /// Instances certainly in the final fleet, per AZ: their free room costs nothing.
    fleet_by_az: Vec<Vec<usize>>,
    /// The part of `fleet_by_az` that may still have a free accelerator (same order). Scans for
    /// components that need accelerators walk only this list and drop what they find full:
    /// placement only ever uses accelerators up.
    accelerated_by_az: Vec<Vec<usize>>,
    /// Idle existing instances of pool types per `[type][az]`, best last (popped first).
    idle: Vec<Vec<Vec<usize>>>,
    /// Launches per `[type][az]`.
    launched: Vec<Vec<u32>>,
    /// Instances certainly in the final fleet.
    fleet_size: u64,
    /// MaxInstanceCount (or unbounded).
    max_size: u64,
    /// The fleet that stays anyway already reaches MaxInstanceCount: the plan launches nothing.
    no_launches: bool,
    /// See [`Mode::coverage_first`].
    coverage_first: bool,
    /// See [`Mode::largest_first`].
    largest_first: bool,
    /// See [`Mode::strict_balance`] (true only during the strict pass).
    strict_balance: bool,
    /// See [`Mode::az_by_opening`].
    az_by_opening: bool,
    /// See [`Mode::dense_azs`].
    dense_azs: bool,
    /// See [`Mode::az_turns`].
    az_turns: bool,
    /// See [`Mode::trim_fullest`].
    trim_fullest: bool,
    /// The repair pass may also move more than two copies off an instance (`repair.rs`): on the
    /// final best plan only.
    repair_many: bool,
    /// The component being placed (its copies do not count as room for others).
    placing: Option<usize>,
    /// Copies per `[component][az]` right now.
    az_copies: Vec<Vec<u64>>,
    az_rank: Vec<usize>,
    type_rank: Vec<usize>,
    /// Components by name (ties among components broken by it, never by input order).
    component_rank: Vec<usize>,
    /// Instance indices of launches, in launch order.
    launch_order: Vec<usize>,
    next_launch_number: u64,
    /// Existing ids of the form `new-N` (launch ids skip them).
    existing_new_ids: std::collections::BTreeSet<String>,
    /// Placements: (component, instance, count).
    placements: Vec<(usize, usize, u32)>,
    /// Removals of existing copies: (component, instance).
    removals: Vec<(usize, usize)>,
    /// Components that lost copies (they get no new ones: that would be a move).
    had_removals: Vec<bool>,
    /// Released instances, in release order.
    releases: Vec<usize>,
    /// MinInstanceCount was reached (set by the pass once it is done).
    min_reached: bool,
}

impl<'a> Greedy<'a> {
    fn new(problem: &'a Problem) -> Self {
        let az_count = problem.azs.len();
        let type_count = problem.types.len();
        let id_ranks = name_ranks(problem.fleet.iter().map(|instance| instance.id.as_str()));
        let instances: Vec<Instance> = problem
            .fleet
            .iter()
            .enumerate()
            .map(|(index, existing)| {
                let mut instance = Instance {
                    id: existing.id.clone(),
                    type_index: existing.type_index,
                    az: existing.az_index,
                    existing: Some(index),
                    reserved: existing.reserved,
                    draining: existing.draining,
                    rank: id_ranks.get(index).copied().unwrap_or(index),
                    used: Resources::ZERO,
                    copies: SmallVec::new(),
                    in_fleet: false,
                    released: false,
                };
                for &(component, count) in &existing.copies {
                    let need = problem
                        .components
                        .get(component)
                        .and_then(|c| c.requirements.get(existing.type_index))
                        .and_then(|r| r.as_ref())
                        .map_or(Resources::ZERO, |r| r.resources);
                    instance.add(component, count, &need);
                }
                instance
            })
            .collect();
        Greedy {
            problem,
            instances,
            fleet_by_az: vec![Vec::new(); az_count],
            accelerated_by_az: vec![Vec::new(); az_count],
            idle: vec![vec![Vec::new(); az_count]; type_count],
            launched: vec![vec![0; az_count]; type_count],
            fleet_size: 0,
            max_size: problem.scaling.max_instances.map_or(u64::MAX, u64::from),
            no_launches: false,
            coverage_first: false,
            largest_first: false,
            strict_balance: false,
            az_by_opening: false,
            dense_azs: false,
            az_turns: false,
            trim_fullest: false,
            repair_many: false,
            placing: None,
            az_copies: vec![vec![0; az_count]; problem.components.len()],
            az_rank: name_ranks(problem.azs.iter().map(String::as_str)),
            type_rank: name_ranks(problem.types.iter().map(|t| t.name.as_str())),
            component_rank: name_ranks(problem.components.iter().map(|c| c.name.as_str())),
            launch_order: Vec::new(),
            next_launch_number: 1,
            existing_new_ids: problem.fleet.iter().filter(|i| i.id.starts_with("new-")).map(|i| i.id.clone()).collect(),
            placements: Vec::new(),
            removals: Vec::new(),
            had_removals: vec![false; problem.components.len()],
            releases: Vec::new(),
            min_reached: true,
        }
    }

    fn priority(&self, type_index: usize) -> u8 {
        self.problem.types.get(type_index).map_or(6, |t| t.priority)
    }

    /// After scale-in: which instances stay anyway, which are idle, copies per AZ.
    fn index_fleet(&mut self) {
        for (index, instance) in self.instances.iter_mut().enumerate() {
            for &(component, count) in &instance.copies {
                if let Some(cell) = self.az_copies.get_mut(component).and_then(|row| row.get_mut(instance.az)) {
                    *cell += u64::from(count);
                }
            }
            if !instance.copies.is_empty() {
                instance.in_fleet = true;
                self.fleet_size += 1;
                // A draining instance stays for its copies but offers no room to new ones.
                if instance.draining {
                    continue;
                }
                for lists in [&mut self.fleet_by_az, &mut self.accelerated_by_az] {
                    if let Some(list) = lists.get_mut(instance.az) {
                        list.push(index);
                    }
                }
            } else if !instance.draining && self.problem.types.get(instance.type_index).is_some_and(|t| t.in_pool) {
                if let Some(list) = self.idle.get_mut(instance.type_index).and_then(|row| row.get_mut(instance.az)) {
                    list.push(index);
                }
            }
        }
        self.no_launches = self.fleet_size >= self.max_size;
        // Best last: reserved first, then by id.
        let instances = &self.instances;
        for list in self.idle.iter_mut().flatten() {
            list.sort_by_key(|&i| std::cmp::Reverse((!instances[i].reserved, instances[i].rank)));
        }
    }

    /// Copies of component `c` still missing that it may get: none when it scales in (it had
    /// removals and gets no new copies), else its copy count minus the copies it has now.
    fn missing_new_copies(&self, c: usize) -> u64 {
        if self.had_removals.get(c).copied().unwrap_or(true) {
            return 0;
        }
        let have: u64 = self.az_copies.get(c).map_or(0, |row| row.iter().sum());
        self.problem.components.get(c).map_or(0, |component| u64::from(component.copy_count).saturating_sub(have))
    }

    /// Copies still missing of components that may get new ones (no removals) and fit an
    /// instance of some pool type: what another pass might still place.
    fn missing_copies(&self) -> u64 {
        let problem = self.problem;
        problem
            .components
            .iter()
            .enumerate()
            .filter(|&(_, component)| problem.pool_types().any(|t| fitting_need(problem, component, t).is_some()))
            .map(|(c, _)| self.missing_new_copies(c))
            .sum()
    }

    /// Openings still allowed by MaxInstanceCount.
    fn budget(&self) -> u64 {
        if self.no_launches {
            // No launch can happen, so MaxInstanceCount does not bind: idle instances may be reused.
            u64::MAX
        } else {
            self.max_size.saturating_sub(self.fleet_size)
        }
    }

    /// Launches still allowed in (type, AZ) (`u64::MAX` when unlimited).
    fn launches_left(&self, type_index: TypeIndex, az: AzIndex) -> u64 {
        if self.no_launches {
            return 0;
        }
        let done = self.launched.get(type_index.index()).and_then(|row| row.get(az.index())).copied().unwrap_or(0);
        match self.problem.launch_limit(type_index, az).total() {
            Some(total) => u64::from(total.saturating_sub(done)),
            None => u64::MAX,
        }
    }

    /// Instances of (type `t`, AZ `z`) the plan may still open: idle ones plus launches left.
    fn openings_left(&self, t: usize, z: usize) -> u64 {
        let idle = self.idle.get(t).and_then(|row| row.get(z)).map_or(0, Vec::len) as u64;
        idle.saturating_add(self.launches_left(TypeIndex::new(t), AzIndex::new(z)))
    }

    /// Reservation slots still unused in (type, AZ).
    fn reserved_left(&self, type_index: TypeIndex, az: AzIndex) -> u64 {
        let done = self.launched.get(type_index.index()).and_then(|row| row.get(az.index())).copied().unwrap_or(0);
        u64::from(self.problem.launch_limit(type_index, az).reserved.saturating_sub(done))
            .min(self.launches_left(type_index, az))
    }

    /// Launches a new instance (reservation slots first); returns its index.
    fn launch(&mut self, type_index: TypeIndex, az: AzIndex) -> usize {
        let reserved = self.reserved_left(type_index, az) > 0;
        let id = loop {
            let candidate = format!("new-{}", self.next_launch_number);
            self.next_launch_number += 1;
            // An existing instance could already carry the id; skip such numbers.
            if !self.existing_new_ids.contains(&candidate) {
                break candidate;
            }
        };
        let index = self.instances.len();
        self.instances.push(Instance {
            id,
            type_index: type_index.index(),
            az: az.index(),
            existing: None,
            reserved,
            draining: false,
            rank: self.problem.fleet.len() + self.launch_order.len(),
            used: Resources::ZERO,
            copies: SmallVec::new(),
            in_fleet: true,
            released: false,
        });
        if let Some(cell) = self.launched.get_mut(type_index.index()).and_then(|row| row.get_mut(az.index())) {
            *cell += 1;
        }
        self.launch_order.push(index);
        self.fleet_size += 1;
        for lists in [&mut self.fleet_by_az, &mut self.accelerated_by_az] {
            if let Some(list) = lists.get_mut(az.index()) {
                list.push(index);
            }
        }
        index
    }

    /// Takes an idle existing instance into the final fleet.
    fn reuse(&mut self, index: usize) {
        let Some(instance) = self.instances.get_mut(index) else {
            return;
        };
        if instance.in_fleet {
            return;
        }
        instance.in_fleet = true;
        let (type_index, az, draining) = (instance.type_index, instance.az, instance.draining);
        if let Some(list) = self.idle.get_mut(type_index).and_then(|row| row.get_mut(az)) {
            list.retain(|&i| i != index);
        }
        self.fleet_size += 1;
        if draining {
            // Kept only to meet MinInstanceCount: it takes no copies.
            return;
        }
        for lists in [&mut self.fleet_by_az, &mut self.accelerated_by_az] {
            if let Some(list) = lists.get_mut(az) {
                list.push(index);
            }
        }
    }

    /// Opens one more instance of (type, AZ), cheapest first: an idle reserved instance, a
    /// reservation slot, an idle paid instance, an on-demand launch. `None` when none is left.
    fn open(&mut self, type_index: TypeIndex, az: AzIndex) -> Option<usize> {
        let idle_best =
            self.idle.get(type_index.index()).and_then(|row| row.get(az.index())).and_then(|list| list.last()).copied();
        let idle_reserved = idle_best.filter(|&i| self.instances[i].reserved);
        if let Some(index) = idle_reserved {
            self.reuse(index);
            return Some(index);
        }
        if self.reserved_left(type_index, az) > 0 {
            return Some(self.launch(type_index, az));
        }
        if let Some(index) = idle_best {
            self.reuse(index);
            return Some(index);
        }
        if self.launches_left(type_index, az) > 0 {
            return Some(self.launch(type_index, az));
        }
        None
    }

    /// Places `count` copies of `component` on `instance`.
    fn place(&mut self, component: usize, instance: usize, count: u32, need: &Resources) {
        if count == 0 {
            return;
        }
        let Some(target) = self.instances.get_mut(instance) else {
            return;
        };
        target.add(component, count, need);
        if let Some(cell) = self.az_copies.get_mut(component).and_then(|row| row.get_mut(target.az)) {
            *cell += u64::from(count);
        }
        self.placements.push((component, instance, count));
    }

    /// Releases idle existing instances lowest priority first and meets MinInstanceCount with
    /// the best instances on offer. Returns false when MinInstanceCount cannot be reached.
    fn release_and_meet_min(&mut self) -> bool {
        let min_size = u64::from(self.problem.scaling.min_instances);
        // Key: draining last, priority, cost, kept before launched, type name, AZ load, AZ name / id.
        type Key = (bool, u8, i64, bool, usize, usize, usize);
        // Idle existing instances in key order, computed once: their keys do not change while
        // the fleet grows, so each round takes the first one still idle instead of rescanning
        // every instance (MinInstanceCount 20,000 took seconds that way).
        let mut idle_by_key: Vec<(Key, usize)> = self
            .instances
            .iter()
            .enumerate()
            .filter(|(_, instance)| instance.existing.is_some() && !instance.in_fleet)
            .map(|(index, instance)| {
                let t = instance.type_index;
                let key = (
                    instance.draining,
                    self.priority(t),
                    instance_cost(self.problem, t, instance.reserved),
                    false,
                    self.type_rank[t],
                    0,
                    instance.rank,
                );
                (key, index)
            })
            .collect();
        idle_by_key.sort_unstable();
        let mut next_idle = 0;
        while self.fleet_size < min_size {
            let mut best: Option<(Key, Option<usize>, usize, usize)> = None;
            while idle_by_key.get(next_idle).is_some_and(|&(_, index)| self.instances[index].in_fleet) {
                next_idle += 1;
            }
            if let Some(&(key, index)) = idle_by_key.get(next_idle) {
                let instance = &self.instances[index];
                best = Some((key, Some(index), instance.type_index, instance.az));
            }
            let mut consider = |key: Key, idle: Option<usize>, t: usize, z: usize| {
                if best.as_ref().is_none_or(|(current, ..)| key < *current) {
                    best = Some((key, idle, t, z));
                }
            };
            if self.budget() > 0 {
                for t in self.problem.pool_types() {
                    for z in 0..self.problem.azs.len() {
                        let (type_index, az) = (TypeIndex::new(t), AzIndex::new(z));
                        if self.launches_left(type_index, az) == 0 {
                            continue;
                        }
                        let reserved = self.reserved_left(type_index, az) > 0;
                        let load = self.fleet_by_az.get(z).map_or(0, Vec::len);
                        let key = (
                            false,
                            self.priority(t),
                            instance_cost(self.problem, t, reserved),
                            true,
                            self.type_rank[t],
                            load,
                            self.az_rank[z],
                        );
                        consider(key, None, t, z);
                    }
                }
            }
            match best {
                Some((_, Some(index), _, _)) => self.reuse(index),
                Some((_, None, t, z)) => {
                    self.launch(TypeIndex::new(t), AzIndex::new(z));
                }
                None => break,
            }
        }
        let mut idle: Vec<usize> = (0..self.instances.len())
            .filter(|&i| self.instances[i].existing.is_some() && !self.instances[i].in_fleet)
            .collect();
        // Draining first, lowest priority first, then paid before reserved, most expensive first, then id.
        idle.sort_by_key(|&i| {
            let instance = &self.instances[i];
            (
                !instance.draining,
                std::cmp::Reverse(self.priority(instance.type_index)),
                instance.reserved,
                std::cmp::Reverse(instance_cost(self.problem, instance.type_index, instance.reserved)),
                instance.rank,
            )
        });
        for index in idle {
            self.instances[index].released = true;
            self.releases.push(index);
        }
        self.fleet_size >= min_size
    }

    /// The final fleet the plan leads to, from the planner's own state: the fleet
    /// `FinalFleet::apply` builds from [`Self::into_actions`] (kept existing instances in fleet
    /// order, then launches in launch order), without writing and parsing one action per copy.
    fn final_fleet(&self) -> FinalFleet {
        let mut new_copies: Vec<BTreeMap<usize, u32>> = vec![BTreeMap::new(); self.instances.len()];
        for &(component, index, count) in &self.placements {
            // A record the repair pass emptied (its copy was relocated) adds nothing.
            if count == 0 {
                continue;
            }
            if let Some(map) = new_copies.get_mut(index) {
                *map.entry(component).or_insert(0) += count;
            }
        }
        let mut launches: BTreeMap<(TypeIndex, AzIndex), (u32, u32)> = BTreeMap::new();
        for &index in &self.launch_order {
            let instance = &self.instances[index];
            let group = (TypeIndex::new(instance.type_index), AzIndex::new(instance.az));
            let entry = launches.entry(group).or_insert((0, 0));
            entry.0 += 1;
            entry.1 += u32::from(instance.reserved);
        }
        let mut removed: BTreeMap<usize, u32> = BTreeMap::new();
        for &(component, _) in &self.removals {
            *removed.entry(component).or_insert(0) += 1;
        }
        // Existing instances come first in `instances` (fleet order), launches after (launch order).
        let instances = self
            .instances
            .iter()
            .zip(new_copies)
            .filter(|(instance, _)| !instance.released)
            .map(|(instance, new_copies)| FinalInstance {
                id: instance.id.clone(),
                type_index: instance.type_index,
                az_index: instance.az,
                reserved: instance.reserved,
                existing: instance.existing,
                copies: instance.copies.iter().copied().collect(),
                new_copies,
            })
            .collect();
        FinalFleet { instances, launches, removed }
    }

    /// The final fleet's instances for the SPREAD pass, indexed like `instances` (existing
    /// ones in fleet order, then launches in launch order).
    fn spread_slots(&self) -> Vec<Slot> {
        self.instances
            .iter()
            .map(|instance| {
                Slot::new(
                    instance.id.clone(),
                    instance.type_index,
                    instance.az,
                    instance.released,
                    instance.copies.clone(),
                )
            })
            .collect()
    }

    /// `((component, instance), action position)` of every `PlaceCopy` that
    /// [`Self::into_actions`] writes (launches come first, then one placement per copy).
    fn placement_positions(&self) -> Vec<((usize, usize), usize)> {
        let mut position = self.launch_order.len();
        let mut placed = Vec::with_capacity(self.placements.iter().map(|&(_, _, n)| n as usize).sum());
        for &(component, index, count) in &self.placements {
            for _ in 0..count {
                placed.push(((component, index), position));
                position += 1;
            }
        }
        placed
    }

    /// The plan's actions (`finish` puts them in the contract's order: launches, removals,
    /// placements, terminations).
    fn into_actions(self) -> Vec<Action> {
        let problem = self.problem;
        let mut actions = Vec::with_capacity(
            self.launch_order.len()
                + self.placements.iter().map(|&(_, _, n)| n as usize).sum::<usize>()
                + self.removals.len()
                + self.releases.len(),
        );
        for &index in &self.launch_order {
            let instance = &self.instances[index];
            actions.push(Action::LaunchInstance {
                instance_id: instance.id.clone(),
                instance_type: problem.types[instance.type_index].name.clone(),
                availability_zone: problem.azs[instance.az].clone(),
                reserved: instance.reserved,
            });
        }
        for &(component, index, count) in &self.placements {
            let instance = &self.instances[index];
            let model_name = problem.components[component]
                .placement_requirement(problem, instance.type_index)
                .and_then(|requirement| requirement.model_name.clone());
            for _ in 0..count {
                actions.push(Action::PlaceCopy {
                    component: problem.components[component].name.clone(),
                    instance_id: instance.id.clone(),
                    model_name: model_name.clone(),
                });
            }
        }
        for &(component, index) in &self.removals {
            actions.push(Action::RemoveCopy {
                component: problem.components[component].name.clone(),
                instance_id: self.instances[index].id.clone(),
            });
        }
        for &index in &self.releases {
            actions.push(Action::TerminateInstance { instance_id: self.instances[index].id.clone() });
        }
        actions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan with stacked SPREAD copies (many small components after big ones), an existing
    /// fleet with copies to keep and to remove, and a released idle instance.
    fn stacked_problem() -> Problem {
        let mut builder = crate::model::ScenarioBuilder::new(["a", "b"])
            .pool("ml.g6.12xlarge", 1)
            .pool("ml.g6.48xlarge", 2)
            .fleet_instance("i-1", "ml.g6.48xlarge", "a", false)
            .fleet_instance("i-2", "ml.g6.12xlarge", "b", true)
            .fleet_instance("i-3", "ml.g6.12xlarge", "a", false)
            .fleet_copies("big-0", "i-1", 3)
            .fleet_copies("small-1", "i-2", 2)
            .fleet_copies("gone", "i-3", 1);
        for i in 0..4 {
            builder = builder.component(&format!("big-{i}"), 3 + i, 2, 4.0, 8192);
        }
        for i in 0..6 {
            let name = format!("small-{i}");
            builder = builder.component(&name, 5 + i, 1, 1.0, 4096);
            if i % 2 == 0 {
                builder = builder.max_imbalance(&name, 1);
            }
        }
        Problem::new(&builder.component("gone", 0, 1, 1.0, 4096).build().unwrap()).unwrap()
    }

    #[test]
    fn final_fleet_is_the_fleet_the_actions_build() {
        let problem = stacked_problem();
        let passes = [place::candidate_passes(&problem), place::lp_passes(&problem)].concat();
        for (order, mode) in passes {
            let planner = plan_pass(&problem, &order, mode, &Limits::new());
            let fleet = planner.final_fleet();
            let (applied, violations) = FinalFleet::apply(&problem, &planner.into_actions());
            assert!(violations.is_empty(), "{violations:?}");
            assert_eq!(fleet, applied, "{mode:?}");
        }
    }

    #[test]
    fn indexed_spread_pass_matches_the_one_reading_actions() {
        let problem = stacked_problem();
        let planner = plan_pass(&problem, &place::component_order(&problem), Mode::DEFAULT, &Limits::new());
        let (slots, placed) = (planner.spread_slots(), planner.placement_positions());
        let actions = planner.into_actions();
        let by_strings = spread::rebalance_spread(&problem, actions.clone());
        assert_ne!(by_strings, actions, "the case must need SPREAD moves");
        assert_eq!(spread::rebalance_spread_indexed(&problem, actions, slots, placed), by_strings);
    }

    #[test]
    fn name_ranks_sort_by_name_not_position() {
        let ranks = name_ranks(["b", "c", "a"].into_iter());
        assert_eq!(ranks, vec![1, 2, 0]);
    }

    #[test]
    fn instance_add_and_remove_keep_copies_sorted_and_used_exact() {
        let need = Resources { accelerators: 1, milli_cpus: 1000, memory_mib: 512 };
        let mut instance = Instance {
            id: "i".into(),
            type_index: 0,
            az: 0,
            existing: Some(0),
            reserved: false,
            draining: false,
            rank: 0,
            used: Resources::ZERO,
            copies: SmallVec::new(),
            in_fleet: false,
            released: false,
        };
        instance.add(3, 2, &need);
        instance.add(1, 1, &need);
        assert_eq!(instance.copies.as_slice(), &[(1, 1), (3, 2)]);
        assert_eq!(instance.used, need.times(3));
        instance.remove_one(1, &need);
        assert_eq!(instance.copies.as_slice(), &[(3, 2)]);
        assert_eq!(instance.total_copies(), 2);
        assert_eq!(instance.used, need.times(2));
    }
}
