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
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{meets_bound, ExactPlanner, MAX_MASTER_VARIABLES};
use crate::engines::polish::{actions_of, draft_of, lower_plan_excess, priority_of, spread_balance, Draft};

use crate::engines::finish;
use crate::engines::limits::{Limits as EngineLimits, Stats};
use crate::fleet::{balance_excess, objective_of_actions, FinalFleet, FinalInstance};
use crate::index::{AzIndex, TypeIndex};
use crate::plan::{Action, Plan, SolverKind, Status, StopReason};
use crate::problem::{LaunchLimit, Problem};
use crate::verify::verify;

/// Most copies a window frees in the first round: sub-problems this size are usually solved to
/// optimality in tens of milliseconds.
pub(super) const FIRST_WINDOW_COPIES: u64 = 160;

/// After a round of windows without improvement, windows grow by this factor (until one
/// window can hold a whole AZ).
const WINDOW_GROWTH: u64 = 4;

/// Components per component window (taken from components that may use the same types).
const GROUP_SIZE: usize = 4;

/// Branch-and-bound nodes per solver call of a window's solve, when the planner sets none:
/// without a deadline the phase must still end.
const WINDOW_NODES: u64 = 20_000;

/// Windows the phase tries when there is no deadline (only node limits): its time is then
/// bounded by this many node-limited window solves.
const WINDOWS_WITHOUT_DEADLINE: u64 = 16;

/// Time left at the start of the phase from which windows aimed at fallback launches join in
/// its first round (with less, from the second; docs/sweep.md, session of 2026-12-06, fourth).
const FALLBACK_WINDOWS_FIRST: Duration = Duration::from_secs(1);

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
    /// The limit that ended the phase (`None`: it ran out of windows, or never started).
    pub stopped: Option<StopReason>,
}

/// What a window frees.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Scope {
    /// Every copy on the members, all launched in this AZ; the unplaced copies of `extra` are
    /// offered there too.
    Az { az: usize, extra: BTreeMap<usize, u32> },
    /// Every copy of these components, in every AZ (the members are the launched instances
    /// holding them; their other copies stay); their unplaced copies are offered too.
    Components(Vec<usize>),
}

/// Launched instances to free, and what of them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Window {
    scope: Scope,
    /// Positions in the final fleet's instances (launched ones only).
    members: Vec<usize>,
}

/// How one run of [`improve`] works: alone, or as one of a team of runs on other threads that
/// improve the same plan (docs/formulation.md, "Two threads").
#[derive(Debug, Clone, Copy)]
pub(super) struct Crew<'a> {
    /// Most copies a window frees in the first round.
    pub first_window_copies: u64,
    /// The team's best plan: a run takes it over when it is better than the run's own (at its
    /// next window) and puts each plan it improves there when that plan is better still.
    pub best: Option<&'a Mutex<Plan>>,
}

impl Crew<'_> {
    /// A run on its own, with the usual first windows.
    pub(super) const ALONE: Crew<'static> = Crew { first_window_copies: FIRST_WINDOW_COPIES, best: None };

    /// The team's best plan when it is better than `own`.
    fn better_than(&self, own: &Plan) -> Option<Plan> {
        let shared = self.best?.lock().ok()?;
        shared.objective.better_than(&own.objective).then(|| shared.clone())
    }

    /// Offers `plan` (a verified improvement of this run's) to the team.
    fn offer(&self, plan: &Plan) {
        if let Some(mut shared) = self.best.and_then(|best| best.lock().ok()) {
            if plan.objective.better_than(&shared.objective) {
                *shared = plan.clone();
            }
        }
    }
}

/// Improves `incumbent` (a verified plan) window by window
/// until the limits stop it or a whole round of windows brings nothing. Returns the best plan
/// (of this run; a team's best is in its [`Crew::best`]).
pub(super) fn improve(
    planner: &ExactPlanner,
    problem: &Problem,
    incumbent: Plan,
    limits: &EngineLimits,
    stats: &mut Stats,
    crew: Crew<'_>,
) -> (Plan, Progress) {
    let mut progress = Progress::default();
    if !verify(problem, &incumbent).is_empty() {
        return (incumbent, progress);
    }
    let mut best = incumbent;
    let mut fleet = FinalFleet::apply(problem, &best.actions).0;
    let largest_az = largest_az_copies(problem, &fleet);
    let first_cap = crew.first_window_copies.max(1);
    let mut cap = first_cap;
    // Windows aimed at fallback launches join from the first round when the phase starts with
    // more than FALLBACK_WINDOWS_FIRST left (the time ladder's later stages), else from the
    // second: within a second they took the slices of windows that do better there.
    let fallback_from = match limits.time_left() {
        Some(left) if left > FALLBACK_WINDOWS_FIRST => first_cap,
        _ => first_cap.saturating_mul(WINDOW_GROWTH),
    };
    let mut list = windows(problem, &fleet, cap, fallback_from);
    let (mut next, mut idle) = (0usize, 0usize);
    loop {
        if let Some(stop) = limits.stop_now() {
            progress.stopped = Some(stop);
            break;
        }
        // Another run of the team did better: go on from its plan (windows drawn again, at
        // this run's window size).
        if let Some(shared) = crew.better_than(&best) {
            fleet = FinalFleet::apply(problem, &shared.actions).0;
            best = shared;
            if meets_bound(&best) {
                break;
            }
            list = windows(problem, &fleet, cap, fallback_from);
            idle = 0;
        }
        // Without a deadline nothing else bounds the phase's time: a fixed number of windows
        // keeps it bounded and deterministic (node-limited runs, e.g. the simulator's ticks).
        if limits.deadline_at().is_none() && progress.windows >= WINDOWS_WITHOUT_DEADLINE {
            break;
        }
        if idle >= list.len() {
            // A whole round brought nothing: larger windows, until they hold whole AZs.
            if cap >= largest_az {
                break;
            }
            cap = cap.saturating_mul(WINDOW_GROWTH);
            list = windows(problem, &fleet, cap, fallback_from);
            (next, idle) = (0, 0);
            continue;
        }
        let Some(window) = list.get(next % list.len()).cloned() else { break };
        next += 1;
        idle += 1;
        let sub = match &window.scope {
            Scope::Az { az, extra } => SubProblem::in_az(problem, &fleet, &window.members, *az, extra),
            Scope::Components(components) => SubProblem::spanning(problem, &fleet, &window.members, components),
        };
        let Some(sub) = sub else { continue };
        progress.windows += 1;
        let (sub_plan, sub_stats) = window_planner(planner, limits, &sub).plan_with_stats(&sub.problem);
        stats.solves += sub_stats.solves;
        stats.nodes += sub_stats.nodes;
        if sub_plan.status == Status::Infeasible || !sub_plan.objective.better_than(&sub.baseline) {
            continue;
        }
        let Some(candidate) = put_back(problem, &fleet, &window, &sub, &sub_plan, &best) else { continue };
        // A window may leave copies where moves between AZs now lower the balance excess.
        let candidate = lower_plan_excess(problem, &candidate, limits).unwrap_or(candidate);
        progress.improvements += 1;
        fleet = FinalFleet::apply(problem, &candidate.actions).0;
        crew.offer(&candidate);
        best = candidate;
        // At the proven bound nothing is left to find.
        if meets_bound(&best) {
            break;
        }
        // The fleet changed: the windows are drawn again, the rotation goes on from here.
        list = windows(problem, &fleet, cap, fallback_from);
        idle = 0;
    }
    (best, progress)
}

/// The planner for one window: the caller's backend and limits, a slice of the time left, a
/// node limit per solver call, the default master size cap, no phase or quick attempt of its
/// own, and the window as it is for a warm start.
fn window_planner(planner: &ExactPlanner, limits: &EngineLimits, sub: &SubProblem) -> ExactPlanner {
    let nodes = limits.nodes().map_or(WINDOW_NODES, |nodes| nodes.min(WINDOW_NODES));
    let mut window_limits = limits.clone();
    if let Some(left) = limits.time_left() {
        let slice = (left / SLICE_DIVISOR).max(MIN_SLICE).min(left);
        if let Some(at) = Instant::now().checked_add(slice) {
            window_limits = window_limits.deadline(at);
        }
    }
    ExactPlanner {
        limits: window_limits.node_limit(nodes),
        max_rounds: planner.max_rounds,
        slot_model: false,
        // The window starts from itself: a cheap greedy warm start would only cost its slice.
        quick_slice: Duration::ZERO,
        backend: Arc::clone(&planner.backend),
        large_neighbourhood: false,
        max_master_variables: MAX_MASTER_VARIABLES,
        seed: Some(sub.baseline_actions.clone()),
        deepening: false,
        beside: None,
        time_ladder: false,
        seed_replaces_warm_start: false,
        threads: planner.threads,
    }
}

/// Every window of the fleet, in the order they are tried: per AZ (round robin), the least
/// loaded launched instances of the AZ, then of each type, then of each component group.
fn windows(problem: &Problem, fleet: &FinalFleet, cap: u64, fallback_from: u64) -> Vec<Window> {
    let missing = missing_copies(problem, fleet, cap);
    let groups = component_groups(problem);
    // Launched instances per AZ, the emptiest first (per mille of the most used resource).
    let mut by_az: Vec<Vec<(u64, usize)>> = vec![Vec::new(); problem.azs().len()];
    for (position, instance) in fleet.instances.iter().enumerate() {
        let Some(info) = problem.instance_types().get(instance.type_index) else { continue };
        if instance.existing.is_none() {
            let load = (instance.used(problem).dominant_share(&info.capacity) * 1000.0) as u64;
            if let Some(launched) = by_az.get_mut(instance.az_index) {
                launched.push((load, position));
            }
        }
    }
    let mut per_az: Vec<Vec<Window>> = Vec::new();
    for (az, mut launched) in by_az.into_iter().enumerate() {
        launched.sort_unstable();
        let order: Vec<usize> = launched.into_iter().map(|(_, position)| position).collect();
        per_az.push(az_windows(fleet, az, &order, &groups, &missing, cap));
    }
    // Windows across AZs move copies between AZs, each freeing every new copy of its
    // components. Existing instances holding one of them join as members with their own copies
    // fixed: the window then sees every copy of its components, so their balance stays exact.
    if !problem.components().is_empty() {
        let mut holders: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (position, instance) in fleet.instances.iter().enumerate() {
            for &c in instance.copies.keys() {
                holders.entry(c).or_default().push(position);
            }
        }
        // Aimed at balance first: a component with excess and those sharing its instances.
        let aimed: Vec<Window> =
            excess_groups(problem, fleet, cap).iter().map(|group| spanning_window(&holders, group)).collect();
        per_az.insert(0, aimed);
        // Then at fallback launches (L3), from windows of `fallback_from` copies: their
        // components may move to AZs where a more preferred type can still launch, others
        // making room for them.
        if cap >= fallback_from {
            let fallback: Vec<Window> =
                fallback_groups(problem, fleet, cap).iter().map(|group| spanning_window(&holders, group)).collect();
            per_az.insert(1, fallback);
        }
        let groups = spanning_groups(problem, cap);
        per_az.push(groups.iter().map(|group| spanning_window(&holders, group)).collect());
    }
    let longest = per_az.iter().map(Vec::len).max().unwrap_or(0);
    let mut seen = BTreeSet::new();
    let mut all = Vec::new();
    for index in 0..longest {
        for window in per_az.iter().filter_map(|list| list.get(index)) {
            let useful = match &window.scope {
                Scope::Az { extra, .. } => window.members.len() >= 2 || !extra.is_empty(),
                Scope::Components(_) => true,
            };
            if useful && seen.insert(window.clone()) {
                all.push(window.clone());
            }
        }
    }
    all
}

/// The one-AZ windows of `az` (`order`: its launched instances, emptiest first): the whole AZ,
/// each type present, each component group present there or lacking copies.
fn az_windows(
    fleet: &FinalFleet,
    az: usize,
    order: &[usize],
    groups: &[Vec<usize>],
    missing: &BTreeMap<usize, u32>,
    cap: u64,
) -> Vec<Window> {
    let here = || order.iter().filter_map(|&p| fleet.instances.get(p));
    let types: BTreeSet<usize> = here().map(|instance| instance.type_index).collect();
    let present: BTreeSet<usize> = here().flat_map(|instance| instance.copies.keys().copied()).collect();
    let capped = |keep: &dyn Fn(usize) -> bool| take_capped(fleet, order.iter().copied().filter(|&p| keep(p)), cap);
    let scope = |extra: BTreeMap<usize, u32>| Scope::Az { az, extra };
    let mut list = vec![Window { scope: scope(missing.clone()), members: capped(&|_| true) }];
    for &t in &types {
        let members = capped(&|p| fleet.instances.get(p).is_some_and(|instance| instance.type_index == t));
        list.push(Window { scope: scope(BTreeMap::new()), members });
    }
    for group in groups.iter().filter(|group| group.iter().any(|c| present.contains(c) || missing.contains_key(c))) {
        let holds = |p: usize| {
            fleet.instances.get(p).is_some_and(|instance| group.iter().any(|c| instance.copies.contains_key(c)))
        };
        let extra = missing.iter().filter(|(c, _)| group.contains(c)).map(|(&c, &n)| (c, n)).collect();
        list.push(Window { scope: scope(extra), members: capped(&holds) });
    }
    list
}

/// The window freeing every copy of `group` (and its unplaced ones), in every AZ.
fn spanning_window(holders: &BTreeMap<usize, Vec<usize>>, group: &[usize]) -> Window {
    let mut members: Vec<usize> = group.iter().filter_map(|c| holders.get(c)).flatten().copied().collect();
    members.sort_unstable();
    members.dedup();
    Window { scope: Scope::Components(group.to_vec()), members }
}

/// The components in runs of at most `cap` copies (at least one component a run), components
/// that may use the same types next to each other: the windows across AZs.
fn spanning_groups(problem: &Problem, cap: u64) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut copies = 0u64;
    for c in component_groups(problem).into_iter().flatten() {
        let count = problem.components().get(c).map_or(0, |component| u64::from(component.copy_count));
        match groups.last_mut() {
            Some(group) if copies + count <= cap => {
                group.push(c);
                copies += count;
            }
            _ => {
                groups.push(vec![c]);
                copies = count;
            }
        }
    }
    groups
}

/// Windows across AZs aimed at balance excess: per component with excess (largest first), the
/// component and those with most copies on the launched instances of the AZs where it has
/// fewest copies (what must make room there), up to `cap` copies a group.
fn excess_groups(problem: &Problem, fleet: &FinalFleet, cap: u64) -> Vec<Vec<usize>> {
    let components = problem.components();
    let per_az = fleet.copies_per_az(problem);
    let mut seeds: Vec<(u64, usize)> = (0..components.len())
        .filter_map(|c| {
            let excess = balance_excess(per_az.get(c)?, components.get(c)?.max_imbalance);
            (excess > 0).then_some((excess, c))
        })
        .collect();
    seeds.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| components[a.1].name.cmp(&components[b.1].name)));
    let mut groups = Vec::new();
    for &(_, c) in seeds.iter().take(GROUP_SIZE * 4) {
        let Some(counts) = per_az.get(c) else { continue };
        let fewest = counts.iter().copied().min().unwrap_or(0);
        let mut neighbours: BTreeMap<usize, u64> = BTreeMap::new();
        for instance in fleet.instances.iter().filter(|instance| instance.existing.is_none()) {
            if counts.get(instance.az_index).copied().unwrap_or(0) > fewest + 1 {
                continue;
            }
            for (&d, &n) in instance.copies.iter().filter(|(&d, _)| d != c) {
                *neighbours.entry(d).or_insert(0) += u64::from(n);
            }
        }
        groups.push(group_around(problem, c, neighbours, cap));
    }
    groups
}

/// Windows across AZs aimed at fallback launches (L3): per component on launches of a
/// type less preferred than the pool's best (most copies on the least preferred first), the
/// component and those with most copies on the same launches or on more preferred launches in
/// their AZs (what must move or make room for them to go up), up to `cap` copies a group.
fn fallback_groups(problem: &Problem, fleet: &FinalFleet, cap: u64) -> Vec<Vec<usize>> {
    let components = problem.components();
    let best = problem.pool_types().map(|t| priority_of(problem, t)).min().unwrap_or(u8::MAX);
    let launched = || fleet.instances.iter().filter(|instance| instance.existing.is_none());
    // Per component: the least preferred priority of a fallback launch holding it, and its
    // copies on fallback launches.
    let mut on_fallback: BTreeMap<usize, (u8, u64)> = BTreeMap::new();
    for instance in launched() {
        let priority = priority_of(problem, instance.type_index);
        if priority <= best {
            continue;
        }
        for (&c, &n) in &instance.copies {
            let entry = on_fallback.entry(c).or_insert((0, 0));
            entry.0 = entry.0.max(priority);
            entry.1 += u64::from(n);
        }
    }
    let mut seeds: Vec<(u8, u64, usize)> = on_fallback.into_iter().map(|(c, (p, n))| (p, n, c)).collect();
    seeds.sort_by(|a, b| {
        b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then_with(|| components[a.2].name.cmp(&components[b.2].name))
    });
    let mut groups = Vec::new();
    for &(seed_priority, _, c) in seeds.iter().take(GROUP_SIZE * 4) {
        let holds_seed = |instance: &FinalInstance| {
            instance.copies.contains_key(&c) && priority_of(problem, instance.type_index) > best
        };
        let azs: BTreeSet<usize> = launched().filter(|i| holds_seed(i)).map(|i| i.az_index).collect();
        // Neighbours on the seed's fallback launches count twice those on better launches of
        // the same AZs.
        let mut neighbours: BTreeMap<usize, u64> = BTreeMap::new();
        for instance in launched().filter(|instance| azs.contains(&instance.az_index)) {
            let weight = if holds_seed(instance) {
                2
            } else if priority_of(problem, instance.type_index) < seed_priority {
                1
            } else {
                continue;
            };
            for (&d, &n) in instance.copies.iter().filter(|(&d, _)| d != c) {
                *neighbours.entry(d).or_insert(0) += weight * u64::from(n);
            }
        }
        groups.push(group_around(problem, c, neighbours, cap));
    }
    groups
}

/// `seed` and its `neighbours` (component → weight), heaviest first (ties by name), while the
/// group stays within `cap` copies; in component order.
fn group_around(problem: &Problem, seed: usize, neighbours: BTreeMap<usize, u64>, cap: u64) -> Vec<usize> {
    let components = problem.components();
    let copies_of = |c: usize| components.get(c).map_or(0, |component| u64::from(component.copy_count));
    let mut ranked: Vec<(u64, usize)> = neighbours.into_iter().map(|(d, n)| (n, d)).collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| components[a.1].name.cmp(&components[b.1].name)));
    let mut group = vec![seed];
    let mut copies = copies_of(seed);
    for (_, d) in ranked {
        if copies + copies_of(d) <= cap {
            group.push(d);
            copies += copies_of(d);
        }
    }
    group.sort_unstable();
    group
}

/// Positions in order until `cap` copies are taken (at least one instance).
fn take_capped(fleet: &FinalFleet, positions: impl Iterator<Item = usize>, cap: u64) -> Vec<usize> {
    let mut taken = Vec::new();
    let mut copies = 0u64;
    for position in positions {
        let count = fleet.instances.get(position).map_or(0, |instance| instance.total_copies());
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
    let per_az = fleet.copies_per_az(problem);
    let mut missing = BTreeMap::new();
    for (c, component) in problem.components().iter().enumerate() {
        let placed: u64 = per_az.get(c).map_or(0, |counts| counts.iter().sum());
        let lacking = u64::from(component.copy_count).saturating_sub(placed);
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
            *count += instance.total_copies();
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
    /// Final-fleet position of each instance of the sub-problem's fleet.
    fleet_positions: Vec<usize>,
    /// The full problem's AZ of the sub-problem's only AZ (`None`: the same AZs).
    az: Option<usize>,
    /// The window as it is, as actions of the sub-problem.
    baseline_actions: Vec<Action>,
    /// The objective the window reaches in the sub-problem as it is.
    baseline: crate::plan::Objective,
}

impl SubProblem {
    /// A one-AZ window: the AZ alone, the members' copies (plus the unplaced ones offered) to
    /// place on an empty fleet, launch limits and instance bounds less what the rest of the
    /// plan uses. `None` when there is nothing to place.
    fn in_az(
        problem: &Problem,
        fleet: &FinalFleet,
        members: &[usize],
        az: usize,
        extra: &BTreeMap<usize, u32>,
    ) -> Option<SubProblem> {
        let mut wanted: BTreeMap<usize, u32> = extra.clone();
        for instance in members.iter().filter_map(|&p| fleet.instances.get(p)) {
            for (&c, &n) in &instance.copies {
                *wanted.entry(c).or_insert(0) += n;
            }
        }
        wanted.retain(|_, n| *n > 0);
        if wanted.is_empty() {
            return None;
        }
        let kept = kept_launches(fleet, members);
        let mut sub = base(problem, fleet, members, &wanted, &BTreeSet::new())?;
        sub.azs = vec![problem.azs().get(az)?.clone()];
        sub.limits = (0..problem.instance_types().len())
            .map(|t| {
                let group = (TypeIndex::new(t), AzIndex::new(az));
                vec![left_over(problem.launch_limit(group.0, group.1), kept.get(&group).copied().unwrap_or((0, 0)))]
            })
            .collect();
        sub.capacity_blocks = problem
            .capacity_blocks
            .iter()
            .filter(|((_, z), _)| z.index() == az)
            .map(|(&(t, _), &block)| ((t, AzIndex::new(0)), block))
            .collect();
        let components: Vec<usize> = wanted.keys().copied().collect();
        let placed: Vec<Placed> = members
            .iter()
            .filter_map(|&p| fleet.instances.get(p))
            .map(|instance| (instance.type_index, instance.reserved, instance.copies.clone()))
            .collect();
        let actions = baseline_actions(&sub, &components, &placed, &[]);
        let baseline = objective_of_actions(&sub, &actions);
        Some(SubProblem {
            problem: sub,
            components,
            fleet_positions: Vec::new(),
            az: Some(az),
            baseline_actions: actions,
            baseline,
        })
    }

    /// A window across AZs: every copy of `freed` comes off the members, which become the
    /// sub-problem's fleet with their other copies (fixed); launch limits less every launch of
    /// the plan, instance bounds less the rest of the fleet.
    fn spanning(problem: &Problem, fleet: &FinalFleet, members: &[usize], freed: &[usize]) -> Option<SubProblem> {
        let freed_set: BTreeSet<usize> = freed.iter().copied().collect();
        let mut wanted: BTreeMap<usize, u32> = BTreeMap::new();
        for &c in freed {
            wanted.insert(c, problem.components().get(c)?.copy_count);
        }
        for instance in members.iter().filter_map(|&p| fleet.instances.get(p)) {
            for (&c, &n) in instance.copies.iter().filter(|(c, _)| !freed_set.contains(c)) {
                *wanted.entry(c).or_insert(0) += n;
            }
        }
        // Launches the members stand for stay counted: the sub-problem knows them as a fleet.
        let kept = &fleet.launches;
        let mut sub = base(problem, fleet, members, &wanted, &freed_set)?;
        sub.limits = (0..problem.instance_types().len())
            .map(|t| {
                (0..problem.azs().len())
                    .map(|z| {
                        let group = (TypeIndex::new(t), AzIndex::new(z));
                        left_over(problem.launch_limit(group.0, group.1), kept.get(&group).copied().unwrap_or((0, 0)))
                    })
                    .collect()
            })
            .collect();
        let components: Vec<usize> = wanted.keys().copied().collect();
        let sub_index: BTreeMap<usize, usize> = components.iter().enumerate().map(|(i, &c)| (c, i)).collect();
        let mut placed = Vec::new();
        for (k, instance) in members.iter().filter_map(|&p| fleet.instances.get(p)).enumerate() {
            let id = format!("lns-{k}");
            // What the window frees: the plan's new copies of `freed`; everything else on the
            // member (its other copies, an existing instance's own copies) stays.
            let moved: BTreeMap<usize, u32> = instance
                .new_copies
                .iter()
                .filter(|(c, n)| freed_set.contains(c) && **n > 0)
                .map(|(&c, &n)| (c, n))
                .collect();
            let fixed: Vec<(usize, u32)> = instance
                .copies
                .iter()
                .map(|(&c, &n)| (c, n.saturating_sub(moved.get(&c).copied().unwrap_or(0))))
                .filter(|&(_, n)| n > 0)
                .filter_map(|(c, n)| Some((*sub_index.get(&c)?, n)))
                .collect();
            let draining =
                instance.existing.and_then(|e| problem.fleet().get(e)).is_some_and(|existing| existing.draining);
            sub.fleet.push(crate::problem::ExistingInstance {
                id: id.clone(),
                type_index: instance.type_index,
                az_index: instance.az_index,
                reserved: instance.reserved,
                copies: fixed,
                draining,
            });
            sub.fleet_by_id.insert(id, k);
            placed.push((instance.type_index, instance.reserved, moved));
        }
        let ids: Vec<String> = sub.fleet.iter().map(|instance| instance.id.clone()).collect();
        let actions = baseline_actions(&sub, &components, &placed, &ids);
        let baseline = objective_of_actions(&sub, &actions);
        Some(SubProblem {
            problem: sub,
            components,
            fleet_positions: members.to_vec(),
            az: None,
            baseline_actions: actions,
            baseline,
        })
    }

    /// A sub-problem component index as the full problem's.
    fn full_index(&self, sub_index: usize) -> Option<usize> {
        self.components.get(sub_index).copied()
    }
}

/// The full problem with `wanted` copies per component (full index) as its components, no
/// fleet, and instance bounds less the instances outside `members`. Components of `balanced`
/// keep their MaxImbalance; the others' balance is the rest of the plan's business.
fn base(
    problem: &Problem,
    fleet: &FinalFleet,
    members: &[usize],
    wanted: &BTreeMap<usize, u32>,
    balanced: &BTreeSet<usize>,
) -> Option<Problem> {
    let mut sub = problem.clone();
    sub.components = wanted
        .iter()
        .map(|(&c, &count)| {
            let mut component = problem.components().get(c)?.clone();
            component.copy_count = count;
            if !balanced.contains(&c) {
                component.max_imbalance = None;
            }
            Some(component)
        })
        .collect::<Option<Vec<_>>>()?;
    sub.component_by_name = sub.components.iter().enumerate().map(|(i, c)| (c.name.clone(), i)).collect();
    sub.fleet = Vec::new();
    sub.fleet_by_id = BTreeMap::new();
    sub.warnings = Vec::new();
    let outside = u32::try_from(fleet.instances.len().saturating_sub(members.len())).unwrap_or(u32::MAX);
    sub.scaling.min_instances = problem.scaling().min_instances.saturating_sub(outside);
    sub.scaling.max_instances = problem.scaling().max_instances.map(|max| max.saturating_sub(outside));
    Some(sub)
}

/// Launches (total, reserved-flagged) per (type, AZ) of the plan outside `members` (a plan
/// never terminates what it launches, so all of them are `FinalFleet::launches`).
fn kept_launches(fleet: &FinalFleet, members: &[usize]) -> BTreeMap<(TypeIndex, AzIndex), (u32, u32)> {
    let members: BTreeSet<usize> = members.iter().copied().collect();
    let mut kept: BTreeMap<(TypeIndex, AzIndex), (u32, u32)> = BTreeMap::new();
    for (position, instance) in fleet.instances.iter().enumerate() {
        if instance.existing.is_none() && !members.contains(&position) {
            let entry =
                kept.entry((TypeIndex::new(instance.type_index), AzIndex::new(instance.az_index))).or_insert((0, 0));
            entry.0 += 1;
            entry.1 += u32::from(instance.reserved);
        }
    }
    kept
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

/// A member of a window as it is: type, reservation flag, copies (full indices) to place.
type Placed = (usize, bool, BTreeMap<usize, u32>);

/// The window as it is, as actions of the sub-problem: a member is the fleet instance of `ids`
/// at its position, else it is launched (in the one AZ).
fn baseline_actions(sub: &Problem, components: &[usize], placed: &[Placed], ids: &[String]) -> Vec<Action> {
    let mut actions = Vec::new();
    let az = sub.azs().first().cloned().unwrap_or_default();
    for (k, (type_index, reserved, copies)) in placed.iter().enumerate() {
        let id = match ids.get(k) {
            Some(id) => id.clone(),
            None => {
                let id = format!("new-{}", k + 1);
                let type_name = sub.instance_types().get(*type_index).map(|info| info.name.clone());
                actions.push(Action::LaunchInstance {
                    instance_id: id.clone(),
                    instance_type: type_name.unwrap_or_default(),
                    availability_zone: az.clone(),
                    reserved: *reserved,
                });
                id
            }
        };
        for (sub_index, &c) in components.iter().enumerate() {
            let Some(component) = sub.components().get(sub_index) else { continue };
            let model_name = component.placement_requirement(sub, *type_index).and_then(|r| r.model_name.clone());
            for _ in 0..copies.get(&c).copied().unwrap_or(0) {
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
        .map(|(_, instance)| draft_of(instance))
        .collect();
    let (sub_fleet, _) = FinalFleet::apply(&sub.problem, &sub_plan.actions);
    for instance in sub_fleet.instances {
        let copies: BTreeMap<usize, u32> =
            instance.copies.iter().filter_map(|(&c, &n)| Some((sub.full_index(c)?, n))).collect();
        // A member stands for its instance of the full plan: a launch (every copy new) or an
        // existing instance, whose own copies are not new.
        let member = match instance.existing {
            Some(k) => Some(fleet.instances.get(*sub.fleet_positions.get(k)?)?),
            None => None,
        };
        let new_copies: BTreeMap<usize, u32> = match member.filter(|member| member.existing.is_some()) {
            Some(member) => copies
                .iter()
                .map(|(&c, &n)| {
                    let own = member.copies_of(c).saturating_sub(member.new_copies.get(&c).copied().unwrap_or(0));
                    (c, n.saturating_sub(own))
                })
                .filter(|&(_, n)| n > 0)
                .collect(),
            None => copies.clone(),
        };
        drafts.push(Draft {
            type_index: instance.type_index,
            az_index: sub.az.unwrap_or(instance.az_index),
            existing: member.and_then(|member| member.existing),
            reserved: member.map_or(instance.reserved, |member| member.reserved),
            new_copies,
            copies,
        });
    }
    if problem.fleet().is_empty() {
        // The SPREAD rule across the window's edge (the sub-plan keeps it within the window).
        let azs: Vec<usize> = match sub.az {
            Some(az) => vec![az],
            None => (0..problem.azs().len()).collect(),
        };
        spread_balance(problem, &mut drafts, &azs);
    }
    let actions = actions_of(problem, &drafts);
    let plan = finish(problem, SolverKind::Exact, best.status, best.stop_reason.clone(), actions, best.bound.clone());
    (plan.objective.better_than(&best.objective) && verify(problem, &plan).is_empty()).then_some(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::polish::tests::plan_in;

    #[test]
    fn windows_across_azs_take_existing_holders_with_their_own_copies_fixed() {
        // `kept` has a copy on the existing i-1 and new ones on launches: a window freeing it
        // has i-1 among its members (its balance is then seen whole), with the existing copy
        // fixed and only the plan's new copies freed.
        let scenario = crate::ScenarioBuilder::new(["us-east-1a", "us-east-1b"])
            .pool("ml.g6.12xlarge", 1)
            .component("kept", 3, 1, 1.0, 1024)
            .component("other", 2, 2, 1.0, 1024)
            .max_imbalance("kept", 0)
            .fleet_instance("i-1", "ml.g6.12xlarge", "us-east-1a", false)
            .fleet_copies("kept", "i-1", 1)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let problem = Problem::new(&scenario).unwrap_or_else(|e| panic!("{e}"));
        let plan = crate::plan_greedy(&problem);
        assert!(verify(&problem, &plan).is_empty());
        let fleet = FinalFleet::apply(&problem, &plan.actions).0;
        let existing = fleet.instances.iter().position(|instance| instance.existing.is_some());
        let Some(existing) = existing else { panic!("i-1 stays in the plan") };
        let spanning: Vec<Window> = windows(&problem, &fleet, FIRST_WINDOW_COPIES, FIRST_WINDOW_COPIES)
            .into_iter()
            .filter(|window| matches!(&window.scope, Scope::Components(components) if components.contains(&0)))
            .collect();
        assert!(!spanning.is_empty());
        for window in &spanning {
            assert!(window.members.contains(&existing), "{window:?}");
            let Scope::Components(freed) = &window.scope else { continue };
            let Some(sub) = SubProblem::spanning(&problem, &fleet, &window.members, freed) else {
                panic!("a window with copies to place")
            };
            let at = window.members.iter().position(|&p| p == existing).unwrap_or(usize::MAX);
            let Some(member) = sub.problem.fleet().get(at) else { panic!("i-1 in the sub-problem") };
            let kept = sub.components.iter().position(|&c| c == 0).unwrap_or(usize::MAX);
            assert_eq!(member.copies.iter().find(|&&(c, _)| c == kept).map(|&(_, n)| n), Some(1));
            // The window as it is, put back, is the plan itself (not strictly better).
            let baseline = finish(
                &sub.problem,
                SolverKind::Exact,
                Status::Feasible,
                StopReason::Completed,
                sub.baseline_actions.clone(),
                None,
            );
            assert!(verify(&sub.problem, &baseline).is_empty(), "{:?}", verify(&sub.problem, &baseline));
            assert_eq!(baseline.objective, sub.baseline);
        }
    }

    /// `kept` (4 copies, MaxImbalance 0 over two AZs), its existing copy and three new ones on
    /// the existing i-1 in 1a, nothing launched.
    fn every_copy_on_one_existing_instance() -> (Problem, Plan) {
        let scenario = crate::ScenarioBuilder::new(["us-east-1a", "us-east-1b"])
            .pool("ml.g6.12xlarge", 1)
            .component("kept", 4, 1, 1.0, 1024)
            .max_imbalance("kept", 0)
            .fleet_instance("i-1", "ml.g6.12xlarge", "us-east-1a", false)
            .fleet_copies("kept", "i-1", 1)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let problem = Problem::new(&scenario).unwrap_or_else(|e| panic!("{e}"));
        let plan = plan_in(&problem, &[], &[("kept", "i-1"), ("kept", "i-1"), ("kept", "i-1")]);
        (problem, plan)
    }

    #[test]
    fn a_window_across_azs_moves_new_copies_off_an_existing_instance() {
        // `kept` (MaxImbalance 0) has its existing copy and the plan's three new ones on the
        // existing i-1 in 1a: balance excess 4. Only a window across AZs that takes i-1 in, with
        // its own copy fixed, can send two new copies to a launch in 1b (the one-AZ windows hold
        // launched instances only, and there are none).
        let (problem, plan) = every_copy_on_one_existing_instance();
        assert_eq!(plan.objective.balance_excess, 4);
        let planner = ExactPlanner::new().node_limit(20_000);
        let limits = EngineLimits::new().node_limit(20_000);
        let (better, progress) = improve(&planner, &problem, plan, &limits, &mut Stats::default(), Crew::ALONE);
        assert!(progress.improvements >= 1, "{progress:?}");
        assert!(verify(&problem, &better).is_empty());
        assert_eq!(better.objective.placed_copies, 4);
        assert_eq!(better.objective.balance_excess, 0);
        // i-1 stays, keeps its own copy, and is never terminated.
        assert!(!better.actions.iter().any(|action| matches!(action, Action::TerminateInstance { .. })));
        let fleet = FinalFleet::apply(&problem, &better.actions).0;
        let existing = fleet.instances.iter().find(|instance| instance.existing.is_some());
        assert_eq!(existing.map(|instance| instance.copies_of(0)), Some(2));
    }

    #[test]
    fn a_run_of_a_team_shares_what_it_finds_and_goes_on_from_a_better_team_plan() {
        // Balance excess 4, 0 after a window across AZs.
        let (problem, plan) = every_copy_on_one_existing_instance();
        let planner = ExactPlanner::new().node_limit(20_000);
        let limits = EngineLimits::new().node_limit(20_000);
        // A run that improves the plan puts its plan in the team's best.
        let team_best = Mutex::new(plan.clone());
        let crew = Crew { first_window_copies: 40, best: Some(&team_best) };
        let (better, _) = improve(&planner, &problem, plan.clone(), &limits, &mut Stats::default(), crew);
        assert_eq!(better.objective.balance_excess, 0);
        let shared = team_best.into_inner().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(shared.objective, better.objective);
        assert_eq!(shared.actions, better.actions);
        // A run whose team already holds a better plan goes on from it before its first window
        // (whose sub-problems, from the team's plan, have nothing to improve).
        let team_best = Mutex::new(better.clone());
        let crew = Crew { first_window_copies: FIRST_WINDOW_COPIES, best: Some(&team_best) };
        let (taken, progress) = improve(&planner, &problem, plan, &limits, &mut Stats::default(), crew);
        assert_eq!(taken.objective, better.objective);
        assert_eq!(progress.improvements, 0, "{progress:?}");
        assert!(verify(&problem, &taken).is_empty());
    }

    #[test]
    fn launch_limits_left_over_subtract_the_kept_launches() {
        let limited = LaunchLimit { reserved: 2, available: Some(3) };
        assert_eq!(left_over(limited, (0, 0)), limited);
        // One reserved and one paid launch kept: one reservation slot and two more launches left.
        assert_eq!(left_over(limited, (2, 1)), LaunchLimit { reserved: 1, available: Some(2) });
        // Paid launches that used reservation capacity: what is left caps the reservation slots.
        assert_eq!(left_over(limited, (4, 0)), LaunchLimit { reserved: 1, available: Some(0) });
        assert_eq!(left_over(limited, (6, 2)), LaunchLimit { reserved: 0, available: Some(0) });
        let unlimited = LaunchLimit { reserved: 1, available: None };
        assert_eq!(left_over(unlimited, (5, 1)), LaunchLimit { reserved: 0, available: None });
    }
    #[test]
    fn windows_aimed_at_fallback_launches_take_what_makes_room_in_their_az() {
        // `up` sits on a fallback g5 in 1a; `room` on the preferred g6 in 1a (it would have to
        // make room for `up` to move up there); `far` on a g6 in 1b, not in the way.
        let scenario = crate::ScenarioBuilder::new(["us-east-1a", "us-east-1b"])
            .pool("ml.g6.12xlarge", 1)
            .pool("ml.g5.12xlarge", 2)
            .component("up", 1, 1, 1.0, 1024)
            .component("room", 1, 1, 1.0, 1024)
            .component("far", 1, 1, 1.0, 1024)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let problem = Problem::new(&scenario).unwrap_or_else(|e| panic!("{e}"));
        let launches = [
            ("new-1", "ml.g5.12xlarge", "us-east-1a"),
            ("new-2", "ml.g6.12xlarge", "us-east-1a"),
            ("new-3", "ml.g6.12xlarge", "us-east-1b"),
        ];
        let plan = plan_in(&problem, &launches, &[("up", "new-1"), ("room", "new-2"), ("far", "new-3")]);
        let fleet = FinalFleet::apply(&problem, &plan.actions).0;
        assert_eq!(fallback_groups(&problem, &fleet, FIRST_WINDOW_COPIES), vec![vec![0, 1]]);
        // A cap of one copy leaves the seed alone.
        assert_eq!(fallback_groups(&problem, &fleet, 1), vec![vec![0]]);
        // The window is among those the phase tries once the first round is over.
        let later = FIRST_WINDOW_COPIES * WINDOW_GROWTH;
        let first_round = windows(&problem, &fleet, FIRST_WINDOW_COPIES, later);
        assert!(!first_round.iter().any(|window| window.scope == Scope::Components(vec![0, 1])));
        let spanning: Vec<Window> = windows(&problem, &fleet, later, later)
            .into_iter()
            .filter(|window| window.scope == Scope::Components(vec![0, 1]))
            .collect();
        assert_eq!(spanning.len(), 1);
        assert_eq!(spanning[0].members.len(), 2);
    }
}
