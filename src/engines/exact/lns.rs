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

use super::realize::{actions_of, spread_balance, Draft};
use super::{meets_bound, ExactPlanner, MAX_MASTER_VARIABLES};
use crate::engines::balance::{self, Budget, Holder};
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

/// `plan` with launches retyped to a more preferred pool type in the same AZ, where one instance
/// of that type holds the launch's copies and the type's launch limit there has room (least
/// preferred launches first, the most preferred type that fits): the same copies stay in the same
/// AZs on as many instances (L1, L2 and the instance count unchanged), and every retype moves one
/// instance to a better priority (L3 strictly better). A search stopped before or inside the L3
/// levels leaves launches of fallback types whose copies a preferred type would hold (the
/// instance counts of the balance level's solution, not of an optimised L3). Reservations are
/// handed out again per (type, AZ) in launch order. `None` unless the result verifies and is
/// strictly better.
pub(super) fn retype_to_preferred(problem: &Problem, plan: &Plan) -> Option<Plan> {
    let (fleet, preferred) = fleet_and_preferred(problem, plan)?;
    let priority = |t: usize| priority_of(problem, t);
    let mut drafts: Vec<Draft> = fleet.instances.iter().map(draft_of).collect();
    let mut launches = launches_per_group(&drafts);
    let mut order: Vec<usize> = (0..drafts.len()).filter(|&i| drafts[i].existing.is_none()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(priority(drafts[i].type_index)), i));
    let mut retyped = false;
    for i in order {
        let Some(draft) = drafts.get_mut(i) else { continue };
        let (from, z) = (draft.type_index, draft.az_index);
        let target = preferred
            .iter()
            .copied()
            .take_while(|&t| priority(t) < priority(from))
            .find(|&t| launch_room(problem, &launches, t, z) && one_instance_holds(problem, t, &draft.copies));
        let Some(to) = target else { continue };
        draft.type_index = to;
        move_launch(&mut launches, (from, z), (to, z));
        retyped = true;
    }
    if !retyped {
        return None;
    }
    hand_out_reservations(problem, &mut drafts);
    rebuilt_if_better(problem, plan, &drafts)
}

/// `plan` with launches of fallback types moved to a more preferred type in any AZ: a launch
/// whose copies one instance of a more preferred pool type holds becomes such an instance in the
/// AZ where that type may still launch and the balance excess grows least, when it does not grow
/// at all (L1 unchanged, L2 no worse, L3 strictly better per launch). What a retype within the
/// launch's AZ ([`retype_to_preferred`]) cannot do when the preferred type's launch limit there is
/// reached while another AZ has room. Least preferred launches first; the most preferred type
/// that fits first. The SPREAD rule is restored in every AZ. `None` unless the result verifies
/// and is strictly better.
pub(super) fn relocate_to_preferred(problem: &Problem, plan: &Plan, limits: &EngineLimits) -> Option<Plan> {
    if problem.azs().len() < 2 {
        return None;
    }
    let (fleet, preferred) = fleet_and_preferred(problem, plan)?;
    let priority = |t: usize| priority_of(problem, t);
    let mut drafts: Vec<Draft> = fleet.instances.iter().map(draft_of).collect();
    let mut counts = fleet.copies_per_az(problem);
    let mut launches = launches_per_group(&drafts);
    let mut order: Vec<usize> = (0..drafts.len()).filter(|&i| drafts[i].existing.is_none()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(priority(drafts[i].type_index)), i));
    let excess_of = |component: usize, per_az: &[u64]| {
        balance_excess(per_az, problem.components().get(component).and_then(|c| c.max_imbalance))
    };
    let mut moved = false;
    for a in order {
        if limits.stop_now().is_some() {
            break;
        }
        let Some(draft) = drafts.get(a) else { continue };
        let (from, from_az) = (draft.type_index, draft.az_index);
        let held = draft.copies.clone();
        let target = preferred.iter().copied().take_while(|&t| priority(t) < priority(from)).find_map(|t| {
            if !one_instance_holds(problem, t, &held) {
                return None;
            }
            (0..problem.azs().len())
                .filter(|&z| launch_room(problem, &launches, t, z))
                .filter_map(|z| {
                    // The excess the move adds (negative: removes) over the components it moves.
                    let delta: i64 = held
                        .iter()
                        .filter_map(|(&component, &count)| {
                            let per_az = counts.get(component)?;
                            let mut after = per_az.clone();
                            shift(&mut after, from_az, z, count);
                            let signed = |excess: u64| i64::try_from(excess).unwrap_or(i64::MAX);
                            Some(signed(excess_of(component, &after)) - signed(excess_of(component, per_az)))
                        })
                        .sum();
                    (delta <= 0).then_some((delta, z))
                })
                .min()
                .map(|(_, z)| (t, z))
        });
        let Some((to, to_az)) = target else { continue };
        for (&component, &count) in &held {
            if let Some(per_az) = counts.get_mut(component) {
                shift(per_az, from_az, to_az, count);
            }
        }
        move_launch(&mut launches, (from, from_az), (to, to_az));
        if let Some(draft) = drafts.get_mut(a) {
            draft.type_index = to;
            draft.az_index = to_az;
        }
        moved = true;
    }
    if !moved {
        return None;
    }
    hand_out_reservations(problem, &mut drafts);
    let azs: Vec<usize> = (0..problem.azs().len()).collect();
    spread_balance(problem, &mut drafts, &azs);
    rebuilt_if_better(problem, plan, &drafts)
}

/// Packing attempts one run of [`retype_pairs_to_preferred`] may make (each places the copies of
/// two instances once).
const PAIR_WORK: u64 = 200_000;

/// `plan` with pairs of launches in one AZ repacked so that one of them can be of a more
/// preferred type: the copies of a fallback launch `a` and of another launch `b` in its AZ are
/// packed afresh, first fit decreasing in a few orders, into `a` retyped to a more preferred pool
/// type (within its launch limit) and `b` as it is. Copies only the fallback type holds (larger
/// accelerator memory, say) go to `b` when `b` holds them, which a one-launch retype
/// ([`retype_to_preferred`]) cannot do: its launch keeps every copy it had. Copies stay in their
/// AZ and instances stay as many (L1, L2 unchanged; L3 strictly better per pair). Least
/// preferred launches first. The SPREAD rule is restored within the AZs changed. Stops when
/// `limits` say so or after [`PAIR_WORK`] packings. `None` unless the result verifies and is
/// strictly better.
pub(super) fn retype_pairs_to_preferred(problem: &Problem, plan: &Plan, limits: &EngineLimits) -> Option<Plan> {
    let (fleet, preferred) = fleet_and_preferred(problem, plan)?;
    let priority = |t: usize| priority_of(problem, t);
    let best = preferred.first().map_or(u8::MAX, |&t| priority(t));
    let mut drafts: Vec<Draft> = fleet.instances.iter().map(draft_of).collect();
    let mut launches = launches_per_group(&drafts);
    let mut order: Vec<usize> =
        (0..drafts.len()).filter(|&i| drafts[i].existing.is_none() && priority(drafts[i].type_index) > best).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(priority(drafts[i].type_index)), i));
    let mut work: u64 = 0;
    let mut changed_azs: BTreeSet<usize> = BTreeSet::new();
    'launches: for a in order {
        let Some(&Draft { type_index: from, az_index: z, .. }) = drafts.get(a) else { continue };
        let targets: Vec<usize> = preferred
            .iter()
            .copied()
            .take_while(|&t| priority(t) < priority(from))
            .filter(|&t| launch_room(problem, &launches, t, z))
            .collect();
        for to in targets {
            for b in 0..drafts.len() {
                if work >= PAIR_WORK || limits.stop_now().is_some() {
                    break 'launches;
                }
                let partner = &drafts[b];
                if b == a || partner.existing.is_some() || partner.az_index != z {
                    continue;
                }
                work += 1;
                let Some((into_a, into_b)) =
                    repack_pair(problem, [to, partner.type_index], [&drafts[a].copies, &partner.copies])
                else {
                    continue;
                };
                move_launch(&mut launches, (from, z), (to, z));
                drafts[a].type_index = to;
                drafts[a].new_copies = into_a.clone();
                drafts[a].copies = into_a;
                drafts[b].new_copies = into_b.clone();
                drafts[b].copies = into_b;
                changed_azs.insert(z);
                continue 'launches;
            }
        }
    }
    if changed_azs.is_empty() {
        return None;
    }
    hand_out_reservations(problem, &mut drafts);
    spread_balance(problem, &mut drafts, &changed_azs.into_iter().collect::<Vec<_>>());
    rebuilt_if_better(problem, plan, &drafts)
}

/// The copies `held` of two launches packed afresh into one instance of each of `types`: first
/// fit decreasing by accelerators, by memory and by CPU, each trying the first instance first and
/// then the second first; the first packing that places every copy, as copies per component of
/// each instance.
fn repack_pair(
    problem: &Problem,
    types: [usize; 2],
    held: [&BTreeMap<usize, u32>; 2],
) -> Option<(BTreeMap<usize, u32>, BTreeMap<usize, u32>)> {
    let capacity = types.map(|t| problem.instance_types().get(t).map(|info| info.capacity));
    let [Some(first_room), Some(second_room)] = capacity else { return None };
    let rooms = [first_room, second_room];
    let mut copies: Vec<usize> = Vec::new();
    for map in held {
        for (&component, &count) in map {
            copies.extend(std::iter::repeat_n(component, usize::try_from(count).ok()?));
        }
    }
    let eligible = |component: usize, slot: usize| {
        problem.components().get(component).is_some_and(|c| c.placement_requirement(problem, types[slot]).is_some())
    };
    // A copy's size on the larger of its footprints over the two types, so that copies only one
    // type holds (or holds smaller) are weighed by what they need where they fit worst.
    let size = |component: usize| {
        let one = BTreeMap::from([(component, 1u32)]);
        let [x, y] = types.map(|t| problem.copies_footprint(t, &one));
        [x.accelerators.max(y.accelerators), x.memory_mib.max(y.memory_mib), x.milli_cpus.max(y.milli_cpus)]
    };
    // The order of (accelerators, memory, CPU) each pass sorts by, largest first.
    let keys: [[usize; 3]; 3] = [[0, 1, 2], [1, 0, 2], [2, 0, 1]];
    for key in keys {
        let mut ordered = copies.clone();
        // Copies one type cannot hold first (they have one place), then by size.
        ordered.sort_by_cached_key(|&c| {
            (
                std::cmp::Reverse(u8::from(!eligible(c, 0) || !eligible(c, 1))),
                std::cmp::Reverse(key.map(|i| size(c)[i])),
                c,
            )
        });
        for first in [0usize, 1] {
            let mut bins: [BTreeMap<usize, u32>; 2] = [BTreeMap::new(), BTreeMap::new()];
            let placed_all = ordered.iter().all(|&component| {
                [first, 1 - first].into_iter().any(|slot| {
                    if !eligible(component, slot) {
                        return false;
                    }
                    *bins[slot].entry(component).or_insert(0) += 1;
                    if problem.copies_footprint(types[slot], &bins[slot]).fits_in(&rooms[slot]) {
                        return true;
                    }
                    if let Some(count) = bins[slot].get_mut(&component) {
                        *count -= 1;
                    }
                    bins[slot].retain(|_, n| *n > 0);
                    false
                })
            });
            if placed_all {
                let [into_first, into_second] = bins;
                return Some((into_first, into_second));
            }
        }
    }
    None
}

/// `plan`'s final fleet (`None` when its actions do not apply cleanly) and the pool types, most
/// preferred first: where each polish that moves launches to preferred types starts.
fn fleet_and_preferred(problem: &Problem, plan: &Plan) -> Option<(FinalFleet, Vec<usize>)> {
    let (fleet, violations) = FinalFleet::apply(problem, &plan.actions);
    if !violations.is_empty() {
        return None;
    }
    let mut preferred: Vec<usize> = problem.pool_types().collect();
    preferred.sort_by_key(|&t| (priority_of(problem, t), t));
    Some((fleet, preferred))
}

/// The priority of type `t` (`u8::MAX` for a type outside the catalogue).
fn priority_of(problem: &Problem, t: usize) -> u8 {
    problem.instance_types().get(t).map_or(u8::MAX, |info| info.priority)
}

/// The plan `drafts` describe, finished like `plan` (solver, status, stop reason, bound);
/// `None` unless it verifies and is strictly better than `plan`.
fn rebuilt_if_better(problem: &Problem, plan: &Plan, drafts: &[Draft]) -> Option<Plan> {
    let actions = actions_of(problem, drafts);
    let better = finish(problem, plan.solver, plan.status, plan.stop_reason.clone(), actions, plan.bound.clone());
    (better.objective.better_than(&plan.objective) && verify(problem, &better).is_empty()).then_some(better)
}

/// Whether one instance of type `t` may hold all of `copies`: every one eligible on `t`, all of
/// them within its capacity.
fn one_instance_holds(problem: &Problem, t: usize, copies: &BTreeMap<usize, u32>) -> bool {
    let eligible = copies.keys().all(|&c| {
        problem.components().get(c).is_some_and(|component| component.placement_requirement(problem, t).is_some())
    });
    eligible
        && problem
            .instance_types()
            .get(t)
            .is_some_and(|info| problem.copies_footprint(t, copies).fits_in(&info.capacity))
}

/// One launch of (type, AZ) `from` counted as one of `to` in `launches`.
fn move_launch(launches: &mut BTreeMap<(usize, usize), u32>, from: (usize, usize), to: (usize, usize)) {
    if let Some(count) = launches.get_mut(&from) {
        *count = count.saturating_sub(1);
    }
    *launches.entry(to).or_insert(0) += 1;
}

/// `count` copies of one component moved from AZ `from` to AZ `to` in its copies per AZ.
fn shift(per_az: &mut [u64], from: usize, to: usize, count: u32) {
    if let Some(held) = per_az.get_mut(from) {
        *held = held.saturating_sub(u64::from(count));
    }
    if let Some(held) = per_az.get_mut(to) {
        *held += u64::from(count);
    }
}

/// Launches per (type, AZ) among `drafts`.
fn launches_per_group(drafts: &[Draft]) -> BTreeMap<(usize, usize), u32> {
    let mut launches: BTreeMap<(usize, usize), u32> = BTreeMap::new();
    for draft in drafts.iter().filter(|draft| draft.existing.is_none()) {
        *launches.entry((draft.type_index, draft.az_index)).or_insert(0) += 1;
    }
    launches
}

/// Whether (type `t`, AZ `z`) may launch once more beside `launches` (its launch limit).
fn launch_room(problem: &Problem, launches: &BTreeMap<(usize, usize), u32>, t: usize, z: usize) -> bool {
    let limit = problem.launch_limit(TypeIndex::new(t), AzIndex::new(z));
    limit.total().is_none_or(|total| launches.get(&(t, z)).copied().unwrap_or(0) < total)
}

/// Each (type, AZ)'s reservations to its first launches, as the planners hand them out.
fn hand_out_reservations(problem: &Problem, drafts: &mut [Draft]) {
    let mut handed: BTreeMap<(usize, usize), u32> = BTreeMap::new();
    for draft in drafts.iter_mut().filter(|draft| draft.existing.is_none()) {
        let key = (draft.type_index, draft.az_index);
        let index = handed.entry(key).or_insert(0);
        draft.reserved = *index < problem.launch_limit(TypeIndex::new(key.0), AzIndex::new(key.1)).reserved;
        *index += 1;
    }
}

/// The chains' `moves` carried out on `drafts` (a copy placed or dropped has one end among the
/// unplaced copies, `None`); `None` when a move names no draft.
fn move_copies(drafts: &mut [Draft], moves: &[balance::Move]) -> Option<()> {
    for step in moves {
        for (position, delta) in [(step.from, -1i64), (step.to, 1)] {
            let Some(position) = position else { continue };
            let draft = drafts.get_mut(position)?;
            for map in [&mut draft.copies, &mut draft.new_copies] {
                let entry = map.entry(step.component).or_insert(0);
                *entry = u32::try_from((i64::from(*entry) + delta).max(0)).unwrap_or(u32::MAX);
                map.retain(|_, n| *n > 0);
            }
        }
    }
    Some(())
}

/// A final-fleet instance as a draft of the plan being rebuilt.
fn draft_of(instance: &FinalInstance) -> Draft {
    Draft {
        type_index: instance.type_index,
        az_index: instance.az_index,
        existing: instance.existing,
        reserved: instance.reserved,
        copies: instance.copies.clone(),
        new_copies: instance.new_copies.clone(),
    }
}

/// Instance checks the insertion chains of one run of [`place_plan_missing`] may do.
const INSERT_WORK: u64 = 400_000;

/// Instance checks one run of [`lower_plan_excess`] may do.
const BALANCE_WORK: u64 = 1_000_000;

/// `plan` with its balance excess lowered by moving new copies between AZs and launches with
/// their copies to other AZs ([`balance::lower_excess_and_relaunch`]: the instances per type
/// stay and the reservations they use never fall, so L1 and L3 do not change and L4 never
/// rises), the SPREAD rule
/// restored within each AZ; `None` unless the result verifies and is strictly better.
pub(super) fn lower_plan_excess(problem: &Problem, plan: &Plan, limits: &EngineLimits) -> Option<Plan> {
    if plan.objective.balance_excess == 0 || problem.azs().len() < 2 {
        return None;
    }
    chained(problem, plan, false, limits)
}

/// `plan` with copies it leaves unplaced placed by insertion chains
/// ([`balance::place_missing`]: every instance stays, L1 rises, L3 and L4 do not change), then
/// its balance excess lowered as by [`lower_plan_excess`]; `None` unless the result verifies and
/// is strictly better.
pub(super) fn place_plan_missing(problem: &Problem, plan: &Plan, limits: &EngineLimits) -> Option<Plan> {
    chained(problem, plan, true, limits)
}

/// The chains of [`lower_plan_excess`] (and, with `insert`, of [`place_plan_missing`] first) on
/// `plan`'s final fleet, until `limits` say stop (the chains completed by then are kept).
fn chained(problem: &Problem, plan: &Plan, insert: bool, limits: &EngineLimits) -> Option<Plan> {
    let (fleet, violations) = FinalFleet::apply(problem, &plan.actions);
    if !violations.is_empty() {
        return None;
    }
    let mut drafts: Vec<Draft> = fleet.instances.iter().map(draft_of).collect();
    let mut holders = holders_of(problem, &fleet);
    let mut counts = fleet.copies_per_az(problem);
    let order = balance::balanced_by_name(problem);
    let mut missing = placeable_copies(problem, plan, &counts);
    let mut moves = Vec::new();
    if insert {
        if missing.iter().all(|&n| n == 0) {
            return None;
        }
        moves = balance::place_missing(
            problem,
            &mut holders,
            &mut counts,
            &missing,
            Budget::checks(INSERT_WORK).until(limits),
        );
        if moves.is_empty() {
            return None;
        }
        for step in moves.iter().filter(|step| step.from.is_none()) {
            if let Some(left) = missing.get_mut(step.component) {
                *left = left.saturating_sub(1);
            }
        }
    }
    let budget = Budget::checks(BALANCE_WORK).until(limits);
    let lowered = balance::lower_excess_and_relaunch(problem, &mut holders, &mut counts, &order, &missing, budget);
    moves.extend(lowered.moves);
    if moves.is_empty() && lowered.relaunches.is_empty() {
        return None;
    }
    move_copies(&mut drafts, &moves)?;
    if !lowered.relaunches.is_empty() {
        for relaunch in &lowered.relaunches {
            if let Some(draft) = drafts.get_mut(relaunch.holder) {
                draft.az_index = relaunch.to;
            }
        }
        hand_out_reservations(problem, &mut drafts);
    }
    let azs: Vec<usize> = (0..problem.azs().len()).collect();
    spread_balance(problem, &mut drafts, &azs);
    rebuilt_if_better(problem, plan, &drafts)
}

/// The final fleet's instances as the shared chains see them (`engines::balance`).
fn holders_of(problem: &Problem, fleet: &FinalFleet) -> Vec<Holder> {
    fleet
        .instances
        .iter()
        .map(|instance| Holder {
            type_index: instance.type_index,
            az: instance.az_index,
            open: !instance.existing.and_then(|i| problem.fleet().get(i)).is_some_and(|e| e.draining),
            launch: instance.existing.is_none(),
            used: instance.used(problem),
            new_copies: instance.new_copies.iter().map(|(&c, &n)| (c, n)).filter(|&(_, n)| n > 0).collect(),
        })
        .collect()
}

/// Launches [`empty_launches`] tries to empty per run.
const EMPTY_TRIES: usize = 256;

/// More preferred types [`empty_launches`] may open in place of one emptied launch.
const EMPTY_OPENINGS: usize = 2;

/// Instance checks of the chains that empty one launch.
const EMPTY_CHAIN_WORK: u64 = 20_000;

/// Instance checks of one run of [`empty_launches`].
const EMPTY_WORK: u64 = 1_000_000;

/// `plan` with launches emptied and taken out: each launch's copies go to other instances of its
/// AZ by insertion chains kept within that AZ ([`balance::place_missing_within`]), so every
/// component keeps its copies per AZ (L1 and L2 unchanged) and the plan has one instance fewer
/// of the launch's priority (L3 better); never below MinInstanceCount. Failing that, the copies
/// may also go to one new launch of a more preferred type in the AZ, where its launch limit has
/// room: as many instances, one of them better (L3 better). Least preferred launches first,
/// then those with fewest copies. Reservations are handed out again per (type, AZ) in
/// launch order. Stops when `limits` say so, keeping the launches emptied by then. `None`
/// unless the result verifies and is strictly better.
pub(super) fn empty_launches(problem: &Problem, plan: &Plan, limits: &EngineLimits) -> Option<Plan> {
    let (fleet, violations) = FinalFleet::apply(problem, &plan.actions);
    if !violations.is_empty() {
        return None;
    }
    let types = problem.instance_types();
    let priority = |t: usize| types.get(t).map_or(u8::MAX, |info| info.priority);
    let mut drafts: Vec<Draft> = fleet.instances.iter().map(draft_of).collect();
    let mut holders = holders_of(problem, &fleet);
    let mut counts = fleet.copies_per_az(problem);
    let mut order: Vec<usize> = (0..drafts.len()).filter(|&i| drafts[i].existing.is_none()).collect();
    order.sort_by_key(|&i| {
        let copies: u32 = drafts[i].new_copies.values().sum();
        (std::cmp::Reverse(priority(drafts[i].type_index)), copies, i)
    });
    let min_size = usize::try_from(problem.scaling().min_instances).unwrap_or(usize::MAX);
    let mut size = drafts.len();
    let mut launches = launches_per_group(&drafts);
    let mut preferred: Vec<usize> = problem.pool_types().collect();
    preferred.sort_by_key(|&t| (priority(t), t));
    let mut closed: Vec<usize> = Vec::new();
    let mut moves: Vec<balance::Move> = Vec::new();
    let mut work = Budget::checks(EMPTY_WORK).until(limits);
    for e in order.into_iter().take(EMPTY_TRIES) {
        if work.checks == 0 || work.stopped() {
            break;
        }
        let Some(holder) = holders.get(e) else { continue };
        let (az, from) = (holder.az, holder.type_index);
        // Into the rest of the AZ (one instance fewer, while above MinInstanceCount), else into
        // the rest and one launch of a more preferred type there (as many instances, one of
        // them better), the most preferred with a launch left first.
        let mut openings: Vec<Option<usize>> = Vec::new();
        if size > min_size {
            openings.push(None);
        }
        openings.extend(
            preferred
                .iter()
                .copied()
                .take_while(|&t| priority(t) < priority(from))
                .filter(|&t| launch_room(problem, &launches, t, az))
                .take(EMPTY_OPENINGS)
                .map(Some),
        );
        let Some((found, opened)) =
            balance::empty_holder(problem, &mut holders, &mut counts, e, &openings, &mut work, EMPTY_CHAIN_WORK)
        else {
            continue;
        };
        match opened {
            Some(t) => {
                drafts.push(Draft {
                    type_index: t,
                    az_index: az,
                    existing: None,
                    reserved: false,
                    copies: BTreeMap::new(),
                    new_copies: BTreeMap::new(),
                });
                *launches.entry((t, az)).or_insert(0) += 1;
            }
            None => size -= 1,
        }
        if let Some(count) = launches.get_mut(&(from, az)) {
            *count = count.saturating_sub(1);
        }
        moves.extend(found);
        closed.push(e);
    }
    if closed.is_empty() {
        return None;
    }
    move_copies(&mut drafts, &moves)?;
    closed.sort_unstable();
    for &e in closed.iter().rev() {
        drafts.remove(e);
    }
    hand_out_reservations(problem, &mut drafts);
    let azs: Vec<usize> = (0..problem.azs().len()).collect();
    spread_balance(problem, &mut drafts, &azs);
    rebuilt_if_better(problem, plan, &drafts)
}

/// Unplaced copies per component that an exchange may place (`counts`: the plan's copies per
/// component and AZ): none for a component the plan scales in (it removes copies).
fn placeable_copies(problem: &Problem, plan: &Plan, counts: &[Vec<u64>]) -> Vec<u64> {
    let scaled_in: BTreeSet<&str> = plan
        .actions
        .iter()
        .filter_map(|action| match action {
            Action::RemoveCopy { component, .. } => Some(component.as_str()),
            _ => None,
        })
        .collect();
    problem
        .components()
        .iter()
        .zip(counts)
        .map(|(component, row)| {
            if scaled_in.contains(component.name.as_str()) {
                return 0;
            }
            u64::from(component.copy_count).saturating_sub(row.iter().sum())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_launches_move_to_a_preferred_type_that_holds_their_copies() {
        // Two launches of the fallback type, each holding one 1-accelerator copy; the preferred
        // type may launch once more in the AZ: one launch moves up, the other stays.
        let scenario = crate::ScenarioBuilder::new(["us-east-1a"])
            .pool("ml.g6.12xlarge", 1)
            .pool("ml.g5.12xlarge", 2)
            .capacity("ml.g6.12xlarge", "us-east-1a", Some(1), 0)
            .component("small", 2, 1, 1.0, 1024)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let problem = Problem::new(&scenario).unwrap_or_else(|e| panic!("{e}"));
        let mut actions = Vec::new();
        for id in ["new-1", "new-2"] {
            actions.push(Action::LaunchInstance {
                instance_id: id.into(),
                instance_type: "ml.g5.12xlarge".into(),
                availability_zone: "us-east-1a".into(),
                reserved: false,
            });
        }
        for id in ["new-1", "new-2"] {
            actions.push(Action::PlaceCopy { component: "small".into(), instance_id: id.into(), model_name: None });
        }
        let plan = finish(&problem, SolverKind::Exact, Status::Feasible, StopReason::TimeLimit, actions, None);
        assert!(verify(&problem, &plan).is_empty());
        assert_eq!(plan.objective.instances_of_priority(2), 2);
        let better = retype_to_preferred(&problem, &plan).unwrap_or_else(|| panic!("a launch can move up"));
        assert!(verify(&problem, &better).is_empty());
        assert_eq!(better.objective.placed_copies, 2);
        assert_eq!(better.objective.balance_excess, plan.objective.balance_excess);
        assert_eq!(better.objective.instances_of_priority(1), 1);
        assert_eq!(better.objective.instances_of_priority(2), 1);
        // Nothing more to move: the preferred type's launch limit is reached.
        assert!(retype_to_preferred(&problem, &better).is_none());
    }

    /// A plan launching `launches` (id, type) in `us-east-1a` and placing `copies` (component,
    /// id) there, checked by `verify`.
    fn plan_of(problem: &Problem, launches: &[(&str, &str)], copies: &[(&str, &str)]) -> Plan {
        let in_first_az: Vec<(&str, &str, &str)> = launches.iter().map(|&(id, t)| (id, t, "us-east-1a")).collect();
        plan_in(problem, &in_first_az, copies)
    }

    #[test]
    fn a_launch_whose_copies_the_rest_of_its_az_holds_is_emptied_by_chains() {
        // Two g6 (preferred, 4 accelerators): one holds three smalls (1 accelerator each), the
        // other a wide (2) and a small; one accelerator free on each. The fallback g5 holds a
        // wide, which fits on neither: it goes to the first g6 and pushes a small to the second,
        // a chain of two, and the g5 launch goes.
        let scenario = crate::ScenarioBuilder::new(["us-east-1a"])
            .pool("ml.g6.12xlarge", 1)
            .pool("ml.g5.12xlarge", 2)
            .component("small", 4, 1, 1.0, 1024)
            .component("wide", 2, 2, 1.0, 1024)
            .strategy("small", crate::PlacementStrategy::Binpack)
            .strategy("wide", crate::PlacementStrategy::Binpack)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let problem = Problem::new(&scenario).unwrap_or_else(|e| panic!("{e}"));
        let plan = plan_of(
            &problem,
            &[("new-1", "ml.g6.12xlarge"), ("new-2", "ml.g6.12xlarge"), ("new-3", "ml.g5.12xlarge")],
            &[
                ("small", "new-1"),
                ("small", "new-1"),
                ("small", "new-1"),
                ("wide", "new-2"),
                ("small", "new-2"),
                ("wide", "new-3"),
            ],
        );
        assert_eq!(plan.objective.instances_of_priority(2), 1);
        let better =
            empty_launches(&problem, &plan, &EngineLimits::new()).unwrap_or_else(|| panic!("the g5 launch can go"));
        assert!(verify(&problem, &better).is_empty());
        assert_eq!(better.objective.placed_copies, 6);
        assert_eq!(better.objective.balance_excess, plan.objective.balance_excess);
        assert_eq!(better.objective.instances_of_priority(2), 0);
        assert_eq!(better.objective.instances_of_priority(1), 2);
        assert!(empty_launches(&problem, &better, &EngineLimits::new()).is_none(), "nothing left to empty");
    }

    #[test]
    fn an_emptied_launch_may_hand_its_copies_to_a_more_preferred_launch() {
        // MinInstanceCount 2 keeps both instances; the fallback g5's copies (three smalls) fit on
        // the g6 (one accelerator free) and a new g6 only together: one small moves there by a
        // chain, the other two to the new launch.
        let scenario = crate::ScenarioBuilder::new(["us-east-1a"])
            .pool("ml.g6.12xlarge", 1)
            .pool("ml.g5.12xlarge", 2)
            .instance_limits(2, Some(2))
            .component("small", 6, 1, 1.0, 1024)
            .strategy("small", crate::PlacementStrategy::Binpack)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let problem = Problem::new(&scenario).unwrap_or_else(|e| panic!("{e}"));
        let mut copies = vec![("small", "new-1"); 3];
        copies.extend([("small", "new-2"); 3]);
        let plan = plan_of(&problem, &[("new-1", "ml.g6.12xlarge"), ("new-2", "ml.g5.12xlarge")], &copies);
        let better = empty_launches(&problem, &plan, &EngineLimits::new())
            .unwrap_or_else(|| panic!("the g5 launch can move up"));
        assert!(verify(&problem, &better).is_empty());
        assert_eq!(better.objective.placed_copies, 6);
        assert_eq!(better.objective.instances_of_priority(1), 2);
        assert_eq!(better.objective.instances_of_priority(2), 0);
    }

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
    /// A plan with `launches` (id, type, AZ) and `copies` (component, id), checked by `verify`.
    fn plan_in(problem: &Problem, launches: &[(&str, &str, &str)], copies: &[(&str, &str)]) -> Plan {
        let mut actions = Vec::new();
        for &(id, instance_type, az) in launches {
            actions.push(Action::LaunchInstance {
                instance_id: id.into(),
                instance_type: instance_type.into(),
                availability_zone: az.into(),
                reserved: false,
            });
        }
        for &(component, id) in copies {
            actions.push(Action::PlaceCopy { component: component.into(), instance_id: id.into(), model_name: None });
        }
        let plan = finish(problem, SolverKind::Exact, Status::Feasible, StopReason::TimeLimit, actions, None);
        assert!(verify(problem, &plan).is_empty());
        plan
    }

    #[test]
    fn two_fallback_launches_repack_so_one_moves_up() {
        // Two fallback g5.12xlarge: one holds a half (2 accelerators) and a small (1), the other
        // a half. The preferred g5.xlarge (1 accelerator) holds no half, so neither launch moves
        // up alone; repacked, the halves share one g5.12xlarge and the small has a g5.xlarge.
        let scenario = crate::ScenarioBuilder::new(["us-east-1a"])
            .pool("ml.g5.xlarge", 1)
            .pool("ml.g5.12xlarge", 2)
            .component("small", 1, 1, 1.0, 1024)
            .component("half", 2, 2, 1.0, 1024)
            .strategy("half", crate::PlacementStrategy::Binpack)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let problem = Problem::new(&scenario).unwrap_or_else(|e| panic!("{e}"));
        let launches = [("new-1", "ml.g5.12xlarge", "us-east-1a"), ("new-2", "ml.g5.12xlarge", "us-east-1a")];
        let plan = plan_in(&problem, &launches, &[("half", "new-1"), ("small", "new-1"), ("half", "new-2")]);
        assert!(retype_to_preferred(&problem, &plan).is_none(), "no launch moves up alone");
        let better = retype_pairs_to_preferred(&problem, &plan, &EngineLimits::new())
            .unwrap_or_else(|| panic!("the pair repacks"));
        assert!(verify(&problem, &better).is_empty());
        assert_eq!(better.objective.placed_copies, 3);
        assert_eq!(better.objective.balance_excess, 0);
        assert_eq!((better.objective.instances_of_priority(1), better.objective.instances_of_priority(2)), (1, 1));
        assert!(retype_pairs_to_preferred(&problem, &better, &EngineLimits::new()).is_none(), "nothing left");
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

    #[test]
    fn a_fallback_launch_moves_up_in_another_az_only_when_balance_allows() {
        // The preferred g6 may not launch in us-east-1a, but may in us-east-1b. A fallback g5 in
        // 1a holding a copy of a component without MaxImbalance moves there as a g6; one holding
        // a copy of a component held at MaxImbalance 0 (one copy in each AZ) stays.
        let build = |balanced: bool| {
            let mut builder = crate::ScenarioBuilder::new(["us-east-1a", "us-east-1b"])
                .pool("ml.g6.12xlarge", 1)
                .pool("ml.g5.12xlarge", 2)
                .capacity("ml.g6.12xlarge", "us-east-1a", Some(0), 0)
                .component("model", 2, 1, 1.0, 1024)
                .instance_limits(1, None);
            if balanced {
                builder = builder.max_imbalance("model", 0);
            }
            let scenario = builder.build().unwrap_or_else(|e| panic!("{e}"));
            Problem::new(&scenario).unwrap_or_else(|e| panic!("{e}"))
        };
        let launches = [("new-1", "ml.g5.12xlarge", "us-east-1a"), ("new-2", "ml.g6.12xlarge", "us-east-1b")];
        let copies = [("model", "new-1"), ("model", "new-2")];
        let free = build(false);
        let plan = plan_in(&free, &launches, &copies);
        assert!(retype_to_preferred(&free, &plan).is_none(), "no room for a g6 in 1a");
        let better = relocate_to_preferred(&free, &plan, &EngineLimits::new())
            .unwrap_or_else(|| panic!("the g5 moves to 1b as a g6"));
        assert!(verify(&free, &better).is_empty());
        assert_eq!(better.objective.placed_copies, 2);
        assert_eq!((better.objective.instances_of_priority(1), better.objective.instances_of_priority(2)), (2, 0));
        let balanced = build(true);
        let plan = plan_in(&balanced, &launches, &copies);
        assert_eq!(plan.objective.balance_excess, 0);
        assert!(relocate_to_preferred(&balanced, &plan, &EngineLimits::new()).is_none(), "balance would suffer");
    }
}
