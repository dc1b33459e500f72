//! The large-neighbourhood phase: anytime improvement of a plan the search could not prove.
//!
//! A window is a set of instances the plan launches in one AZ (the least loaded of one type, of
//! the whole AZ, or of those holding a few components that share instance types). Everything
//! outside the window stays as it is; the window's copies (and copies the plan leaves unplaced,
//! for the components the window covers) form a one-AZ sub-problem with an empty fleet, the
//! launch limits the rest of the plan leaves, and the instance bounds the rest of the fleet
//! leaves. The exact planner solves it under a short slice of the time; a better sub-plan is put
//! back in place of the window and kept only if the whole plan passes [`verify`] and its full
//! objective is strictly better. Why windows stay in one AZ, and what that costs, is in
//! `docs/formulation.md` ("Large-neighbourhood phase").

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{actions_of, spread_balance, Draft, ExactPlanner, MAX_MASTER_VARIABLES};
use crate::engines::finish;
use crate::engines::limits::{Limits as EngineLimits, Stats};
use crate::fleet::{objective_of_actions, FinalFleet};
use crate::plan::{Action, Plan, SolverKind, Status};
use crate::problem::{LaunchLimit, Problem};
use crate::verify::verify;

/// Most copies a window frees in the first round: sub-problems this size are usually solved to
/// optimality in tens of milliseconds.
const FIRST_WINDOW_COPIES: u64 = 160;

/// After a round of windows without improvement, windows grow by this factor (until one
/// window can hold a whole AZ).
const WINDOW_GROWTH: u64 = 4;

/// Components per component window (taken from components that may use the same types).
const GROUP_SIZE: usize = 4;

/// Branch-and-bound nodes per solver call of a window's solve, when the planner sets none:
/// without a deadline the phase must still end.
const WINDOW_NODES: u64 = 20_000;

/// Least time a window's solve gets (when that much is left).
const MIN_SLICE: Duration = Duration::from_millis(100);

/// A window's solve gets at most this fraction of the time left.
const SLICE_DIVISOR: u32 = 8;

/// What the phase did, for [`Stats`].
#[derive(Debug, Default)]
pub(super) struct Progress {
    /// Windows whose sub-problem was solved.
    pub windows: u64,
    /// Windows whose re-solved plan was kept.
    pub improvements: u64,
}

/// Launched instances of one AZ to free, plus copies the plan leaves unplaced to try there.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Window {
    az: usize,
    /// Positions in the final fleet's instances (launched ones only).
    members: Vec<usize>,
    /// Unplaced copies per component to offer the sub-problem.
    extra: BTreeMap<usize, u32>,
}

/// Improves `incumbent` (a verified plan without removals or terminations) window by window
/// until the limits stop it or a whole round of windows brings nothing. Returns the best plan.
pub(super) fn improve(
    planner: &ExactPlanner,
    problem: &Problem,
    incumbent: Plan,
    limits: &EngineLimits,
    stats: &mut Stats,
) -> (Plan, Progress) {
    let mut progress = Progress::default();
    let removes = incumbent
        .actions
        .iter()
        .any(|action| matches!(action, Action::RemoveCopy { .. } | Action::TerminateInstance { .. }));
    if removes || !verify(problem, &incumbent).is_empty() {
        return (incumbent, progress);
    }
    let mut best = incumbent;
    let mut fleet = FinalFleet::apply(problem, &best.actions).0;
    let largest_az = largest_az_copies(problem, &fleet);
    let mut cap = FIRST_WINDOW_COPIES;
    let mut list = windows(problem, &fleet, cap);
    let (mut next, mut idle) = (0usize, 0usize);
    while limits.stop_now().is_none() {
        if idle >= list.len() {
            // A whole round brought nothing: larger windows, until they hold whole AZs.
            if cap >= largest_az {
                break;
            }
            cap = cap.saturating_mul(WINDOW_GROWTH);
            list = windows(problem, &fleet, cap);
            (next, idle) = (0, 0);
            continue;
        }
        let Some(window) = list.get(next % list.len()).cloned() else { break };
        next += 1;
        idle += 1;
        let Some(sub) = SubProblem::new(problem, &fleet, &window) else { continue };
        progress.windows += 1;
        let window_started = Instant::now();
        let (sub_plan, sub_stats) = window_planner(planner, limits).plan_with_stats(&sub.problem);
        if std::env::var_os("LNS_DEBUG").is_some() {
            eprintln!("took {:?} {sub_stats}", window_started.elapsed());
        }
        stats.solves += sub_stats.solves;
        if std::env::var_os("LNS_DEBUG").is_some() {
            eprintln!(
                "window left {:?} az {} members {} extra {:?}: {:?} {:?} {:?} vs {:?}",
                limits.time_left(),
                window.az,
                window.members.len(),
                window.extra,
                sub_plan.status,
                sub_plan.stop_reason,
                sub_plan.objective.key(),
                sub.baseline.key()
            );
        }
        if sub_plan.status == Status::Infeasible || !sub_plan.objective.better_than(&sub.baseline) {
            continue;
        }
        let Some(candidate) = put_back(problem, &fleet, &window, &sub, &sub_plan, &best) else { continue };
        progress.improvements += 1;
        fleet = FinalFleet::apply(problem, &candidate.actions).0;
        best = candidate;
        // The fleet changed: the windows are drawn again, the rotation goes on from here.
        list = windows(problem, &fleet, cap);
        idle = 0;
    }
    (best, progress)
}

/// The planner for one window: the caller's backend and limits, a slice of the time left, a
/// node limit per solver call, the default master size cap and no phase of its own.
fn window_planner(planner: &ExactPlanner, limits: &EngineLimits) -> ExactPlanner {
    let nodes = limits.nodes().map_or(WINDOW_NODES, |nodes| nodes.min(WINDOW_NODES));
    let mut window_limits = limits.clone();
    if let Some(left) = limits.time_left() {
        let slice = (left / SLICE_DIVISOR).max(MIN_SLICE).min(left);
        if let Some(at) = Instant::now().checked_add(slice) {
            window_limits = window_limits.deadline(at);
        }
    }
    ExactPlanner {
        time_limit: None,
        node_limit: Some(nodes),
        limits: window_limits,
        max_rounds: planner.max_rounds,
        slot_model: false,
        backend: Arc::clone(&planner.backend),
        large_neighbourhood: false,
        max_master_variables: MAX_MASTER_VARIABLES,
    }
}

/// Every window of the fleet, in the order they are tried: per AZ (round robin), the least
/// loaded launched instances of the AZ, then of each type, then of each component group.
fn windows(problem: &Problem, fleet: &FinalFleet, cap: u64) -> Vec<Window> {
    let missing = missing_copies(problem, fleet, cap);
    let groups = component_groups(problem);
    let mut per_az: Vec<Vec<Window>> = Vec::new();
    for az in 0..problem.azs().len() {
        let mut launched: Vec<(u64, usize)> = fleet
            .instances
            .iter()
            .enumerate()
            .filter(|(_, instance)| instance.existing.is_none() && instance.az_index == az)
            .filter_map(|(position, instance)| {
                let capacity = problem.instance_types().get(instance.type_index)?.capacity;
                // Per mille of the most used resource: the emptiest instances first.
                let load = (instance.used(problem).dominant_share(&capacity) * 1000.0) as u64;
                Some((load, position))
            })
            .collect();
        launched.sort_unstable();
        let order: Vec<usize> = launched.into_iter().map(|(_, position)| position).collect();
        let capped = |keep: &dyn Fn(usize) -> bool| take_capped(fleet, order.iter().copied().filter(|&p| keep(p)), cap);
        let mut list = vec![Window { az, members: capped(&|_| true), extra: missing.clone() }];
        for t in 0..problem.instance_types().len() {
            let members = capped(&|p| fleet.instances.get(p).is_some_and(|instance| instance.type_index == t));
            list.push(Window { az, members, extra: BTreeMap::new() });
        }
        for group in &groups {
            let holds = |p: usize| {
                fleet.instances.get(p).is_some_and(|instance| group.iter().any(|c| instance.copies.contains_key(c)))
            };
            let extra = missing.iter().filter(|(c, _)| group.contains(c)).map(|(&c, &n)| (c, n)).collect();
            list.push(Window { az, members: capped(&holds), extra });
        }
        per_az.push(list);
    }
    let longest = per_az.iter().map(Vec::len).max().unwrap_or(0);
    let mut seen = BTreeSet::new();
    let mut all = Vec::new();
    for index in 0..longest {
        for window in per_az.iter().filter_map(|list| list.get(index)) {
            let useful = window.members.len() >= 2 || !window.extra.is_empty();
            if useful && seen.insert(window.clone()) {
                all.push(window.clone());
            }
        }
    }
    all
}

/// Positions in order until `cap` copies are taken (at least one instance).
fn take_capped(fleet: &FinalFleet, positions: impl Iterator<Item = usize>, cap: u64) -> Vec<usize> {
    let mut taken = Vec::new();
    let mut copies = 0u64;
    for position in positions {
        let count: u64 =
            fleet.instances.get(position).map_or(0, |instance| instance.copies.values().map(|&n| u64::from(n)).sum());
        if !taken.is_empty() && copies + count > cap {
            break;
        }
        copies += count;
        taken.push(position);
    }
    taken.sort_unstable();
    taken
}

/// Copies each component lacks in the fleet, at most `cap` (components that lack none are
/// left out).
fn missing_copies(problem: &Problem, fleet: &FinalFleet, cap: u64) -> BTreeMap<usize, u32> {
    let mut placed = vec![0u64; problem.components().len()];
    for instance in &fleet.instances {
        for (&c, &n) in &instance.copies {
            if let Some(count) = placed.get_mut(c) {
                *count += u64::from(n);
            }
        }
    }
    let mut missing = BTreeMap::new();
    for (c, component) in problem.components().iter().enumerate() {
        let lacking = u64::from(component.copy_count).saturating_sub(placed.get(c).copied().unwrap_or(0));
        if lacking > 0 {
            missing.insert(c, u32::try_from(lacking.min(cap)).unwrap_or(u32::MAX));
        }
    }
    missing
}

/// Copies on launched instances in the AZ that has most.
fn largest_az_copies(problem: &Problem, fleet: &FinalFleet) -> u64 {
    let mut per_az = vec![0u64; problem.azs().len()];
    for instance in fleet.instances.iter().filter(|instance| instance.existing.is_none()) {
        if let Some(count) = per_az.get_mut(instance.az_index) {
            *count += instance.copies.values().map(|&n| u64::from(n)).sum::<u64>();
        }
    }
    per_az.into_iter().max().unwrap_or(0)
}

/// Components in groups of up to [`GROUP_SIZE`] that may use the same instance types (their
/// copies compete for the same instances), in component order within a type set.
fn component_groups(problem: &Problem) -> Vec<Vec<usize>> {
    let mut by_types: BTreeMap<Vec<bool>, Vec<usize>> = BTreeMap::new();
    for (c, component) in problem.components().iter().enumerate() {
        let eligible: Vec<bool> = component.requirements.iter().map(Option::is_some).collect();
        by_types.entry(eligible).or_default().push(c);
    }
    by_types.values().flat_map(|components| components.chunks(GROUP_SIZE).map(<[usize]>::to_vec)).collect()
}

/// A window as a problem of its own, and how to read its answer back.
struct SubProblem {
    problem: Problem,
    /// Full-problem index of each sub-problem component.
    components: Vec<usize>,
    /// The objective the window's instances reach in the sub-problem as they are.
    baseline: crate::plan::Objective,
}

impl SubProblem {
    /// The window's sub-problem: its AZ alone, its copies (plus the unplaced ones offered) to
    /// place on an empty fleet, launch limits and instance bounds less what the rest of the
    /// plan uses. `None` when there is nothing to place.
    fn new(problem: &Problem, fleet: &FinalFleet, window: &Window) -> Option<SubProblem> {
        let az = window.az;
        let members: BTreeSet<usize> = window.members.iter().copied().collect();
        let mut wanted: BTreeMap<usize, u32> = window.extra.clone();
        for instance in window.members.iter().filter_map(|&p| fleet.instances.get(p)) {
            for (&c, &n) in &instance.copies {
                *wanted.entry(c).or_insert(0) += n;
            }
        }
        wanted.retain(|_, n| *n > 0);
        if wanted.is_empty() {
            return None;
        }
        // Launches (total, reserved-flagged) the rest of the plan keeps in the window's AZ.
        let mut kept: BTreeMap<usize, (u32, u32)> = BTreeMap::new();
        for (position, instance) in fleet.instances.iter().enumerate() {
            if instance.existing.is_none() && instance.az_index == az && !members.contains(&position) {
                let entry = kept.entry(instance.type_index).or_insert((0, 0));
                entry.0 += 1;
                entry.1 += u32::from(instance.reserved);
            }
        }
        let mut sub = problem.clone();
        sub.azs = vec![problem.azs().get(az)?.clone()];
        sub.limits = (0..problem.instance_types().len())
            .map(|t| vec![left_over(problem.launch_limit(t, az), kept.get(&t).copied().unwrap_or((0, 0)))])
            .collect();
        sub.capacity_blocks = problem
            .capacity_blocks
            .iter()
            .filter(|((_, z), _)| *z == az)
            .map(|(&(t, _), &block)| ((t, 0), block))
            .collect();
        let components: Vec<usize> = wanted.keys().copied().collect();
        sub.components = components
            .iter()
            .filter_map(|&c| {
                let mut component = problem.components().get(c)?.clone();
                component.copy_count = wanted.get(&c).copied().unwrap_or(0);
                // One AZ: balance is the rest of the plan's business (the window keeps its
                // AZ's counts when it places every copy).
                component.max_imbalance = None;
                Some(component)
            })
            .collect();
        sub.component_by_name = sub.components.iter().enumerate().map(|(i, c)| (c.name.clone(), i)).collect();
        sub.fleet = Vec::new();
        sub.fleet_by_id = BTreeMap::new();
        sub.warnings = Vec::new();
        let outside = u32::try_from(fleet.instances.len() - members.len()).unwrap_or(u32::MAX);
        sub.scaling.min_instances = problem.scaling().min_instances.saturating_sub(outside);
        sub.scaling.max_instances = problem.scaling().max_instances.map(|max| max.saturating_sub(outside));
        let baseline = objective_of_actions(&sub, &baseline_actions(&sub, fleet, window, &components));
        Some(SubProblem { problem: sub, components, baseline })
    }

    /// A sub-problem component index as the full problem's.
    fn full_index(&self, sub_index: usize) -> Option<usize> {
        self.components.get(sub_index).copied()
    }
}

/// The launch limit the rest of the plan leaves: `kept` = launches (total, reserved-flagged).
fn left_over(limit: LaunchLimit, kept: (u32, u32)) -> LaunchLimit {
    let reserved = limit.reserved.saturating_sub(kept.1);
    match limit.total() {
        None => LaunchLimit { reserved, available: None },
        Some(total) => {
            let left = total.saturating_sub(kept.0);
            let reserved = reserved.min(left);
            LaunchLimit { reserved, available: Some(left - reserved) }
        }
    }
}

/// The window's instances as they are, as actions of the sub-problem.
fn baseline_actions(sub: &Problem, fleet: &FinalFleet, window: &Window, components: &[usize]) -> Vec<Action> {
    let mut actions = Vec::new();
    let az = sub.azs().first().cloned().unwrap_or_default();
    for (k, instance) in window.members.iter().filter_map(|&p| fleet.instances.get(p)).enumerate() {
        let id = format!("new-{}", k + 1);
        let type_name = sub.instance_types().get(instance.type_index).map(|info| info.name.clone());
        actions.push(Action::LaunchInstance {
            instance_id: id.clone(),
            instance_type: type_name.unwrap_or_default(),
            availability_zone: az.clone(),
            reserved: instance.reserved,
        });
        for (sub_index, &c) in components.iter().enumerate() {
            let Some(component) = sub.components().get(sub_index) else { continue };
            let model_name =
                component.placement_requirement(sub, instance.type_index).and_then(|r| r.model_name.clone());
            for _ in 0..instance.copies_of(c) {
                actions.push(Action::PlaceCopy {
                    component: component.name.clone(),
                    instance_id: id.clone(),
                    model_name: model_name.clone(),
                });
            }
        }
    }
    actions
}

/// The plan with the window replaced by the sub-plan's instances, when it verifies on the full
/// problem and is strictly better than `best`.
fn put_back(
    problem: &Problem,
    fleet: &FinalFleet,
    window: &Window,
    sub: &SubProblem,
    sub_plan: &Plan,
    best: &Plan,
) -> Option<Plan> {
    let members: BTreeSet<usize> = window.members.iter().copied().collect();
    let mut drafts: Vec<Draft> = fleet
        .instances
        .iter()
        .enumerate()
        .filter(|(position, _)| !members.contains(position))
        .map(|(_, instance)| Draft {
            type_index: instance.type_index,
            az_index: instance.az_index,
            existing: instance.existing,
            reserved: instance.reserved,
            copies: instance.copies.clone(),
            new_copies: instance.new_copies.clone(),
        })
        .collect();
    let (sub_fleet, _) = FinalFleet::apply(&sub.problem, &sub_plan.actions);
    for instance in sub_fleet.instances {
        let copies: BTreeMap<usize, u32> =
            instance.copies.iter().filter_map(|(&c, &n)| Some((sub.full_index(c)?, n))).collect();
        drafts.push(Draft {
            type_index: instance.type_index,
            az_index: window.az,
            existing: None,
            reserved: instance.reserved,
            new_copies: copies.clone(),
            copies,
        });
    }
    if problem.fleet().is_empty() {
        // The SPREAD rule across the window's edge (the sub-plan keeps it within the window).
        spread_balance(problem, &mut drafts, &[window.az]);
    }
    let actions = actions_of(problem, &drafts);
    let plan = finish(problem, SolverKind::Exact, best.status, best.stop_reason.clone(), actions, best.bound.clone());
    (plan.objective.better_than(&best.objective) && verify(problem, &plan).is_empty()).then_some(plan)
}
