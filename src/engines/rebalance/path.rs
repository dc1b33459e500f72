//! The path from the running fleet to a target fleet ([`super::target`]) in steps of contract §7.
//!
//! Every running instance is either kept (matched to a target instance, whose copies it should
//! end with) or doomed (released on the way); target instances without a running match are
//! pending launches. A copy only ever moves from where it is surplus to where it is missing, so
//! every move is one the target needs. Each step is built from *units*, applied in this order
//! and undone exactly when they break a rule:
//!
//! 1. **Evacuate** a doomed instance (draining ones first, then release order): each copy goes to
//!    an instance that misses it — alive, or a pending launch started on demand and filled at
//!    once from every source — and the instance is released when it is empty and the step has
//!    room. Draining instances are evacuated whatever number of launches and steps that takes;
//!    nothing else is released while one is alive.
//! 2. **Launch** pending instances while the step has launches left, each filled at once.
//! 3. **Shuffle** surplus copies of kept instances to instances that miss them.
//!
//! A unit is kept only when, measured against the step's start, no balanced component's
//! imbalance grew (checked move by move), the SPREAD offenders of every touched component did
//! not grow, `MinInstanceCount` holds after each release and `MaxInstanceCount` at the end of a
//! step that launches. Intermediate steps need not improve the fleet: the path is cut after the
//! step whose fleet is best by (draining left, L3, L4), fewest steps on a tie, and has no steps
//! when none is better than the start.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use super::target::Target;
use super::{FleetKey, FleetTally, Launch, RebalanceStep};
use crate::engines::limits::Limits;
use crate::engines::spread::{has_room_for_copy, spread_offenders_among};
use crate::engines::steps::{copy_resources, Move};
use crate::engines::LaunchIds;
use crate::fleet::{imbalance, instance_cost_micros};
use crate::index::{ComponentIndex, TypeIndex};
use crate::plan::{CostUnit, StopReason};
use crate::problem::{PlacementStrategy, Problem, Resources};

/// An instance on the path: running, launched, or a pending launch of the target.
#[derive(Debug, Clone)]
struct Node {
    id: String,
    type_index: usize,
    az_index: usize,
    reserved: bool,
    draining: bool,
    copies: BTreeMap<usize, u32>,
    used: Resources,
    /// Used at the step's start plus every copy that arrived in the step (make-before-break).
    peak: Resources,
    /// Copies per component that arrived in the step (they cannot leave in it).
    arrived: BTreeMap<usize, u32>,
    alive: bool,
    /// A target instance not launched yet.
    pending: bool,
    /// Copies per component in the target; `None`: released on the way.
    goal: Option<BTreeMap<usize, u32>>,
}

impl Node {
    fn copies_of(&self, component: usize) -> u32 {
        self.copies.get(&component).copied().unwrap_or(0)
    }

    fn surplus(&self, component: usize) -> u32 {
        let goal = self.goal.as_ref().map_or(0, |goal| goal.get(&component).copied().unwrap_or(0));
        self.copies_of(component).saturating_sub(goal)
    }

    fn deficit(&self, component: usize) -> u32 {
        let goal = self.goal.as_ref().map_or(0, |goal| goal.get(&component).copied().unwrap_or(0));
        goal.saturating_sub(self.copies_of(component))
    }

    fn doomed(&self) -> bool {
        self.goal.is_none()
    }

    /// Whether a copy of `component` may leave in this step: one held at the step's start.
    fn movable(&self, component: usize) -> bool {
        self.copies_of(component) > self.arrived.get(&component).copied().unwrap_or(0)
    }

    /// Surplus copies of `component` that may leave in this step.
    fn movable_surplus(&self, component: usize) -> u32 {
        let arrived = self.arrived.get(&component).copied().unwrap_or(0);
        self.surplus(component).min(self.copies_of(component).saturating_sub(arrived))
    }
}

/// One reversible change.
enum Change {
    Copy { component: usize, from: usize, to: usize },
    Launch { node: usize },
    Release { node: usize },
}

/// Where a unit started: undo back to here.
struct Mark {
    journal: usize,
    launches: usize,
    moves: usize,
    releases: usize,
}

/// The path planner.
pub(super) struct PathPlanner<'p> {
    problem: &'p Problem,
    nodes: Vec<Node>,
    by_az: Vec<Vec<usize>>,
    /// Copies per `[component][az]` on alive nodes.
    per_az: Vec<Vec<u64>>,
    /// Alive nodes holding two or more copies, per `[component][az]`.
    heavy: Vec<Vec<u32>>,
    /// Nodes that hold a component now or in the target (copies only move between these).
    touching: Vec<Vec<usize>>,
    /// Launches so far per `[type][az]`.
    launched: Vec<Vec<u32>>,
    tally: FleetTally,
    launch_count: usize,
    /// Launch ids handed out so far, in order (`launch_count` of them are in use; an undone
    /// launch's id is reused by the next launch), none equal to a fleet id.
    issued_ids: Vec<String>,
    fresh_ids: LaunchIds,
    journal: Vec<Change>,
    steps: Vec<RebalanceStep>,
    step_size: usize,
    /// Each component's imbalance at the step's start.
    balance_base: Vec<u64>,
    /// SPREAD offenders per touched (component, AZ): at the step's start, and now.
    spread: BTreeMap<(usize, usize), (u64, u64)>,
    /// Pairs touched by the current unit.
    unit_touched: BTreeSet<(usize, usize)>,
    /// Instances copies left in the current unit.
    unit_sources: BTreeSet<usize>,
    /// The fleet key after each step (index 0: the start).
    keys: Vec<FleetKey>,
    /// Why planning stops (a limit hit in the middle of a step ends the step there: every unit
    /// kept so far keeps the step's rules).
    stopped: Option<StopReason>,
    /// When set, launches are filled only from this instance (the narrower retry of a unit that
    /// broke a rule: copies taken from instances that stay give them room, which can break SPREAD).
    fill_only_from: Option<usize>,
    limits: Limits,
}

impl<'p> PathPlanner<'p> {
    pub(super) fn new(problem: &'p Problem, target: &Target) -> Self {
        let zones = problem.azs().len();
        let components = problem.components().len();
        let mut goals: BTreeMap<usize, BTreeMap<usize, u32>> = BTreeMap::new();
        for instance in &target.instances {
            if let Some(existing) = instance.existing {
                goals.insert(existing, instance.copies.clone());
            }
        }
        let mut planner = PathPlanner {
            problem,
            nodes: Vec::new(),
            by_az: vec![Vec::new(); zones],
            per_az: vec![vec![0; zones]; components],
            heavy: vec![vec![0; zones]; components],
            touching: vec![Vec::new(); components],
            launched: vec![vec![0; zones]; problem.instance_types().len()],
            tally: FleetTally::default(),
            launch_count: 0,
            issued_ids: Vec::new(),
            fresh_ids: LaunchIds::new(problem),
            journal: Vec::new(),
            steps: Vec::new(),
            step_size: usize::try_from(problem.scaling().maximum_step_size.max(1)).unwrap_or(1),
            balance_base: Vec::new(),
            spread: BTreeMap::new(),
            unit_touched: BTreeSet::new(),
            unit_sources: BTreeSet::new(),
            keys: Vec::new(),
            fill_only_from: None,
            stopped: None,
            limits: Limits::new(),
        };
        for (index, existing) in problem.fleet().iter().enumerate() {
            let copies: BTreeMap<usize, u32> =
                existing.copies.iter().copied().filter(|&(_, count)| count > 0).collect();
            let used = problem.copies_footprint(existing.type_index, &copies);
            planner.nodes.push(Node {
                id: existing.id.clone(),
                type_index: existing.type_index,
                az_index: existing.az_index,
                reserved: existing.reserved,
                draining: existing.draining,
                copies,
                used,
                peak: used,
                arrived: BTreeMap::new(),
                alive: false,
                pending: false,
                goal: goals.remove(&index),
            });
            planner.add_alive(index);
        }
        for instance in target.instances.iter().filter(|instance| instance.existing.is_none()) {
            planner.nodes.push(Node {
                id: String::new(),
                type_index: instance.type_index,
                az_index: instance.az_index,
                reserved: false,
                draining: false,
                copies: BTreeMap::new(),
                used: Resources::ZERO,
                peak: Resources::ZERO,
                arrived: BTreeMap::new(),
                alive: false,
                pending: true,
                goal: Some(instance.copies.clone()),
            });
        }
        for (index, node) in planner.nodes.iter().enumerate() {
            if let Some(list) = planner.by_az.get_mut(node.az_index) {
                list.push(index);
            }
            let goal_components = node.goal.iter().flat_map(|goal| goal.keys());
            let components: BTreeSet<usize> = node.copies.keys().chain(goal_components).copied().collect();
            for component in components {
                if let Some(list) = planner.touching.get_mut(component) {
                    list.push(index);
                }
            }
        }
        planner.keys.push(planner.key());
        planner
    }

    fn priority(&self, type_index: usize) -> u8 {
        self.problem.instance_types().get(type_index).map_or(6, |info| info.priority)
    }

    /// Marks a node alive: copies, SPREAD counts and the fleet key.
    fn add_alive(&mut self, index: usize) {
        let node = &mut self.nodes[index];
        node.alive = true;
        let (type_index, az, reserved, draining) = (node.type_index, node.az_index, node.reserved, node.draining);
        for (&component, &count) in &node.copies {
            self.per_az[component][az] += u64::from(count);
            if count >= 2 {
                self.heavy[component][az] += 1;
            }
        }
        self.tally.add(self.problem, type_index, reserved, draining);
    }

    /// Marks an (empty) node dead.
    fn remove_alive(&mut self, index: usize) {
        let node = &mut self.nodes[index];
        node.alive = false;
        let (type_index, reserved, draining) = (node.type_index, node.reserved, node.draining);
        self.tally.remove(self.problem, type_index, reserved, draining);
    }

    /// Draining instances alive, `(n6, …, n1)`, cost — as the greedy planner counts them.
    pub(super) fn key(&self) -> FleetKey {
        self.tally.key()
    }

    fn requirement(&self, component: usize, node: usize) -> Resources {
        copy_resources(self.problem, ComponentIndex::new(component), TypeIndex::new(self.nodes[node].type_index))
    }

    fn capacity(&self, node: usize) -> Resources {
        self.problem.instance_types().get(self.nodes[node].type_index).map_or(Resources::ZERO, |info| info.capacity)
    }

    // ---- SPREAD bookkeeping ----

    fn is_spread(&self, component: usize) -> bool {
        self.problem.components()[component].strategy == PlacementStrategy::Spread
    }

    /// Instances in `az` breaking SPREAD for `component` (the checker's definition).
    fn offenders(&self, component: usize, az: usize) -> u64 {
        if self.heavy[component][az] == 0 {
            return 0;
        }
        let alive = self.by_az[az].iter().map(|&index| &self.nodes[index]).filter(|node| node.alive);
        spread_offenders_among(alive.map(|node| {
            let room = has_room_for_copy(self.problem, component, node.type_index, &node.used);
            (u64::from(node.copies_of(component)), room)
        }))
    }

    /// Records the SPREAD measure of `(component, az)` before the step first changes it.
    fn touch_pair(&mut self, component: usize, az: usize) {
        if !self.is_spread(component) {
            return;
        }
        if !self.spread.contains_key(&(component, az)) {
            let now = self.offenders(component, az);
            self.spread.insert((component, az), (now, now));
        }
        self.unit_touched.insert((component, az));
    }

    /// Before any change of room in `az`: every SPREAD component with a heavy instance there
    /// (others have no offender there, and become heavy only through a move, touched itself).
    fn touch_az(&mut self, az: usize) {
        for component in 0..self.problem.components().len() {
            if self.heavy[component][az] > 0 {
                self.touch_pair(component, az);
            }
        }
    }

    /// Whether the unit kept every touched component's SPREAD offenders at most their count at
    /// the step's start (summed over AZs, as the checker counts them).
    fn spread_kept(&mut self) -> bool {
        let touched: Vec<(usize, usize)> = self.unit_touched.iter().copied().collect();
        for &pair in &touched {
            let now = self.offenders(pair.0, pair.1);
            if let Some(entry) = self.spread.get_mut(&pair) {
                entry.1 = now;
            }
        }
        let components: BTreeSet<usize> = touched.iter().map(|&(component, _)| component).collect();
        components.into_iter().all(|component| {
            let (base, now) = self
                .spread
                .range((component, 0)..=(component, usize::MAX))
                .fold((0u64, 0u64), |(base, now), (_, &(b, n))| (base + b, now + n));
            now <= base
        })
    }

    // ---- Changes ----

    fn move_copy(&mut self, component: usize, from: usize, to: usize) {
        let (from_az, to_az) = (self.nodes[from].az_index, self.nodes[to].az_index);
        self.touch_pair(component, from_az);
        self.touch_pair(component, to_az);
        self.touch_az(from_az);
        self.touch_az(to_az);
        self.apply_copy(component, from, to);
        self.unit_sources.insert(from);
        self.journal.push(Change::Copy { component, from, to });
        let problem = self.problem;
        let step = self.steps.last_mut();
        if let Some(step) = step {
            step.moves.push(Move {
                inference_component_name: problem.components()[component].name.clone(),
                from: self.nodes[from].id.clone(),
                to: self.nodes[to].id.clone(),
            });
        }
    }

    fn apply_copy(&mut self, component: usize, from: usize, to: usize) {
        let leaving = self.requirement(component, from);
        let arriving = self.requirement(component, to);
        let (from_az, to_az) = (self.nodes[from].az_index, self.nodes[to].az_index);
        let source = &mut self.nodes[from];
        if let Some(count) = source.copies.get_mut(&component) {
            if *count == 2 {
                self.heavy[component][from_az] -= 1;
            }
            *count -= 1;
            if *count == 0 {
                source.copies.remove(&component);
            }
        }
        source.used = source.used.minus(&leaving).unwrap_or(Resources::ZERO);
        let target = &mut self.nodes[to];
        let count = target.copies.entry(component).or_insert(0);
        *count += 1;
        if *count == 2 {
            self.heavy[component][to_az] += 1;
        }
        target.used = target.used.plus(&arriving);
        target.peak = target.peak.plus(&arriving);
        *target.arrived.entry(component).or_insert(0) += 1;
        self.per_az[component][from_az] -= 1;
        self.per_az[component][to_az] += 1;
    }

    fn undo_copy(&mut self, component: usize, from: usize, to: usize) {
        let leaving = self.requirement(component, from);
        let arriving = self.requirement(component, to);
        let (from_az, to_az) = (self.nodes[from].az_index, self.nodes[to].az_index);
        let target = &mut self.nodes[to];
        if let Some(count) = target.copies.get_mut(&component) {
            if *count == 2 {
                self.heavy[component][to_az] -= 1;
            }
            *count -= 1;
            if *count == 0 {
                target.copies.remove(&component);
            }
        }
        target.used = target.used.minus(&arriving).unwrap_or(Resources::ZERO);
        target.peak = target.peak.minus(&arriving).unwrap_or(Resources::ZERO);
        if let Some(arrived) = target.arrived.get_mut(&component) {
            *arrived -= 1;
            if *arrived == 0 {
                target.arrived.remove(&component);
            }
        }
        let source = &mut self.nodes[from];
        let count = source.copies.entry(component).or_insert(0);
        *count += 1;
        if *count == 2 {
            self.heavy[component][from_az] += 1;
        }
        source.used = source.used.plus(&leaving);
        self.per_az[component][to_az] -= 1;
        self.per_az[component][from_az] += 1;
    }

    /// Whether a pending node can be launched in this step: launches left, capacity left.
    fn can_launch(&self, node: usize) -> bool {
        let node = &self.nodes[node];
        let launches = self.steps.last().map_or(0, |step| step.launch.len());
        let done = self.launched[node.type_index][node.az_index];
        node.pending
            && launches < self.step_size
            && self
                .problem
                .launch_limit(TypeIndex::new(node.type_index), crate::index::AzIndex::new(node.az_index))
                .total()
                .is_none_or(|total| done < total)
    }

    /// Launches a pending node (reservation slots first) under the next `new-k` id.
    fn launch(&mut self, index: usize) {
        let az = self.nodes[index].az_index;
        self.touch_az(az);
        let type_index = self.nodes[index].type_index;
        let slots = self.problem.launch_limit(TypeIndex::new(type_index), crate::index::AzIndex::new(az)).reserved;
        let reserved = self.launched[type_index][az] < slots;
        self.launched[type_index][az] += 1;
        self.launch_count += 1;
        while self.issued_ids.len() < self.launch_count {
            let id = self.fresh_ids.next_id();
            self.issued_ids.push(id);
        }
        let id = self.issued_ids[self.launch_count - 1].clone();
        let node = &mut self.nodes[index];
        node.pending = false;
        node.reserved = reserved;
        node.id = id;
        node.peak = Resources::ZERO;
        self.add_alive(index);
        self.journal.push(Change::Launch { node: index });
        let problem = self.problem;
        let node = &self.nodes[index];
        let launch = Launch {
            instance_id: node.id.clone(),
            instance_type: problem.instance_types()[node.type_index].name.clone(),
            availability_zone: problem.azs()[node.az_index].clone(),
            reserved,
        };
        if let Some(step) = self.steps.last_mut() {
            step.launch.push(launch);
        }
    }

    /// Releases an empty doomed node when the step and the rules allow it.
    fn try_release(&mut self, index: usize) -> bool {
        let min_instances = usize::try_from(self.problem.scaling().min_instances).unwrap_or(usize::MAX);
        let releases = self.steps.last().map_or(usize::MAX, |step| step.release.len());
        let node = &self.nodes[index];
        if !node.alive
            || !node.doomed()
            || !node.copies.is_empty()
            || releases >= self.step_size
            || self.tally.alive <= min_instances
            || (!node.draining && self.tally.draining > 0)
        {
            return false;
        }
        self.touch_az(node.az_index);
        self.remove_alive(index);
        self.journal.push(Change::Release { node: index });
        let id = self.nodes[index].id.clone();
        if let Some(step) = self.steps.last_mut() {
            step.release.push(id);
        }
        true
    }

    fn mark(&mut self) -> Mark {
        self.unit_touched.clear();
        self.unit_sources.clear();
        let step = self.steps.last();
        Mark {
            journal: self.journal.len(),
            launches: step.map_or(0, |step| step.launch.len()),
            moves: step.map_or(0, |step| step.moves.len()),
            releases: step.map_or(0, |step| step.release.len()),
        }
    }

    fn rollback(&mut self, mark: &Mark) {
        while self.journal.len() > mark.journal {
            let Some(change) = self.journal.pop() else { break };
            match change {
                Change::Copy { component, from, to } => self.undo_copy(component, from, to),
                Change::Launch { node } => {
                    // Launched empty in this unit: every copy moved onto it is undone already.
                    self.remove_alive(node);
                    let entry = &mut self.nodes[node];
                    entry.pending = true;
                    entry.reserved = false;
                    entry.id.clear();
                    let (type_index, az) = (entry.type_index, entry.az_index);
                    self.launched[type_index][az] -= 1;
                    self.launch_count -= 1;
                }
                Change::Release { node } => self.add_alive(node),
            }
        }
        if let Some(step) = self.steps.last_mut() {
            step.launch.truncate(mark.launches);
            step.moves.truncate(mark.moves);
            step.release.truncate(mark.releases);
        }
        let touched: Vec<(usize, usize)> = self.unit_touched.iter().copied().collect();
        for pair in touched {
            let now = self.offenders(pair.0, pair.1);
            if let Some(entry) = self.spread.get_mut(&pair) {
                entry.1 = now;
            }
        }
        self.unit_touched.clear();
    }

    /// Whether the unit since the last mark keeps the step's rules (balance is kept move by move).
    fn unit_ok(&mut self) -> bool {
        let launches = self.steps.last().map_or(0, |step| step.launch.len());
        let over_max = launches > 0
            && self
                .problem
                .scaling()
                .max_instances
                .is_some_and(|max| self.tally.alive > usize::try_from(max).unwrap_or(usize::MAX));
        !over_max && self.spread_kept()
    }

    // ---- Choosing moves ----

    /// Whether one copy of `component` may go from `from` to `to` now: room with everything
    /// that arrived in the step (make-before-break), and (across AZs, for a balanced component)
    /// no imbalance above the step's start.
    fn may_move(&self, component: usize, from: usize, to: usize) -> bool {
        let target = &self.nodes[to];
        if target.draining || target.deficit(component) == 0 {
            return false;
        }
        let info = &self.problem.components()[component];
        let Some(requirement) = info.placement_requirement(self.problem, target.type_index) else { return false };
        if !target.peak.plus(&requirement.resources).fits_in(&self.capacity(to)) {
            return false;
        }
        let (from_az, to_az) = (self.nodes[from].az_index, target.az_index);
        if from_az == to_az || info.max_imbalance.is_none() {
            return true;
        }
        let row = &self.per_az[component];
        let shifted = |az: usize| -> u64 {
            let count = row[az];
            if az == from_az {
                count - 1
            } else if az == to_az {
                count + 1
            } else {
                count
            }
        };
        let (most, fewest) = (0..row.len())
            .map(shifted)
            .fold((0, u64::MAX), |(most, fewest), count| (most.max(count), fewest.min(count)));
        most.saturating_sub(fewest) <= self.balance_base[component]
    }

    /// Where one surplus copy of `component` on `from` goes: an alive instance missing it, or a
    /// pending launch that can start now; same AZ first, alive first.
    fn destination(&self, component: usize, from: usize) -> Option<usize> {
        let from_az = self.nodes[from].az_index;
        let mut best: Option<((bool, bool, usize), usize)> = None;
        for &to in &self.touching[component] {
            let node = &self.nodes[to];
            if to == from || !(node.alive || self.can_launch(to)) || !self.may_move(component, from, to) {
                continue;
            }
            let key = (node.az_index != from_az, node.pending, to);
            if best.as_ref().is_none_or(|(best_key, _)| key < *best_key) {
                best = Some((key, to));
            }
        }
        best.map(|(_, to)| to)
    }

    /// Where a copy of `component` missing on `to` comes from: a doomed instance before a kept
    /// one, same AZ first, draining first, then the one with fewest copies left (soonest empty).
    fn source(&self, component: usize, to: usize) -> Option<usize> {
        let to_az = self.nodes[to].az_index;
        // (kept, other AZ, not draining, copies left, index): smallest wins.
        type SourceKey = (bool, bool, bool, u64, usize);
        let mut best: Option<(SourceKey, usize)> = None;
        for &from in &self.touching[component] {
            let node = &self.nodes[from];
            if from == to
                || !node.alive
                || node.movable_surplus(component) == 0
                || self.fill_only_from.is_some_and(|only| only != from)
                || !self.may_move(component, from, to)
            {
                continue;
            }
            let left: u64 = node.copies.values().map(|&count| u64::from(count)).sum();
            let key = (!node.doomed(), node.az_index != to_az, !node.draining, left, from);
            if best.as_ref().is_none_or(|(best_key, _)| key < *best_key) {
                best = Some((key, from));
            }
        }
        best.map(|(_, from)| from)
    }

    /// Fills `to` with every copy it misses that can come now; returns the sources emptied.
    fn fill(&mut self, to: usize, emptied: &mut BTreeSet<usize>) -> usize {
        let mut moved = 0;
        let wanted: Vec<usize> = self.nodes[to].goal.iter().flat_map(|goal| goal.keys().copied()).collect();
        for component in wanted {
            while self.nodes[to].deficit(component) > 0 {
                let Some(from) = self.source(component, to) else { break };
                self.move_copy(component, from, to);
                moved += 1;
                if self.nodes[from].copies.is_empty() && self.nodes[from].doomed() {
                    emptied.insert(from);
                }
            }
        }
        moved
    }

    /// Moves the surplus copies of `from` where they are missing, largest first, launching
    /// (and filling) pending instances on demand; returns the number of moves and the doomed
    /// instances emptied.
    fn evacuate(&mut self, from: usize, emptied: &mut BTreeSet<usize>) -> usize {
        let mut moved = 0;
        let mut components: Vec<usize> = self.nodes[from].copies.keys().copied().collect();
        components.sort_by_key(|&component| (Reverse(self.requirement(component, from)), component));
        for component in components {
            while self.nodes[from].movable_surplus(component) > 0 {
                let Some(to) = self.destination(component, from) else { break };
                if self.nodes[to].pending {
                    self.launch(to);
                    moved += self.fill(to, emptied);
                } else {
                    self.move_copy(component, from, to);
                    moved += 1;
                }
            }
        }
        if self.nodes[from].copies.is_empty() && self.nodes[from].doomed() {
            emptied.insert(from);
        }
        moved
    }

    /// Lowers the SPREAD offenders of the pairs the unit made worse by moving one copy at a time
    /// within the AZ from an offender to the instance with the fewest copies and room (a kept
    /// or launched one): a launch with room makes every instance of its AZ with two more copies
    /// an offender, and the target may not want the copy there — it moves on later as surplus.
    fn repair_spread(&mut self) -> usize {
        let mut moved = 0;
        let pairs: Vec<(usize, usize)> = self
            .unit_touched
            .iter()
            .copied()
            .filter(|pair| self.spread.get(pair).is_some_and(|&(base, now)| now > base))
            .collect();
        for (component, az) in pairs {
            let mut tries = 0;
            while tries < 8 && self.spread.get(&(component, az)).is_some_and(|&(base, now)| now > base) {
                tries += 1;
                let Some((from, to)) = self.spread_repair_move(component, az) else { break };
                self.move_copy(component, from, to);
                moved += 1;
                let now = self.offenders(component, az);
                if let Some(entry) = self.spread.get_mut(&(component, az)) {
                    entry.1 = now;
                }
            }
        }
        moved
    }

    /// The move that lowers `component`'s SPREAD offenders in `az`: from the offender with the
    /// most copies (doomed first) to the alive instance with room and the fewest copies (not
    /// doomed, not draining), when it has room with everything that arrived in the step.
    fn spread_repair_move(&self, component: usize, az: usize) -> Option<(usize, usize)> {
        let problem = self.problem;
        let info = &problem.components()[component];
        let mut fewest: Option<(u32, usize)> = None;
        let mut fewest_count: Option<u32> = None;
        for &index in &self.by_az[az] {
            let node = &self.nodes[index];
            if !node.alive {
                continue;
            }
            if !has_room_for_copy(problem, component, node.type_index, &node.used) {
                continue;
            }
            let Some(requirement) = info.placement_requirement(problem, node.type_index) else { continue };
            let capacity = self.capacity(index);
            let count = node.copies_of(component);
            fewest_count = Some(fewest_count.map_or(count, |least| least.min(count)));
            let usable = !node.doomed() && !node.draining && node.peak.plus(&requirement.resources).fits_in(&capacity);
            if usable && fewest.is_none_or(|(least, _)| count < least) {
                fewest = Some((count, index));
            }
        }
        let (count, to) = fewest?;
        if Some(count) != fewest_count {
            return None;
        }
        let from = self.by_az[az]
            .iter()
            .copied()
            .filter(|&index| {
                let node = &self.nodes[index];
                node.alive && index != to && node.copies_of(component) >= count + 2 && node.movable(component)
            })
            .max_by_key(|&index| {
                (self.nodes[index].doomed(), self.nodes[index].copies_of(component), Reverse(index))
            })?;
        Some((from, to))
    }

    /// [`Self::evacuate`] `from`; while the unit breaks a rule, also evacuate the doomed
    /// instances it took copies from (a half-emptied instance keeps room, which makes the
    /// instances that received its copies break SPREAD, and it cannot be released), as long as
    /// the step has room to release them.
    fn evacuate_closure(&mut self, from: usize, emptied: &mut BTreeSet<usize>) -> usize {
        let mut moved = self.evacuate(from, emptied);
        let mut done: BTreeSet<usize> = BTreeSet::from([from]);
        loop {
            self.release_emptied(emptied);
            if moved == 0 || self.unit_ok() {
                return moved;
            }
            moved += self.repair_spread();
            if self.unit_ok() {
                return moved;
            }
            let releases = self.steps.last().map_or(0, |step| step.release.len());
            let room = self.step_size.saturating_sub(releases);
            let mut more: Vec<usize> = self
                .unit_sources
                .iter()
                .copied()
                .filter(|&index| {
                    let node = &self.nodes[index];
                    node.alive && node.doomed() && !node.copies.is_empty() && !done.contains(&index)
                })
                .collect();
            if more.is_empty() || room == 0 {
                return moved;
            }
            more.sort_by_key(|&index| (self.nodes[index].copies.values().sum::<u32>(), index));
            more.truncate(room);
            for index in more {
                done.insert(index);
                moved += self.evacuate(index, emptied);
            }
        }
    }

    /// Releases the emptied doomed instances the step has room for (draining ones first).
    fn release_emptied(&mut self, emptied: &BTreeSet<usize>) {
        let mut order: Vec<usize> = emptied.iter().copied().collect();
        order.sort_by_key(|&index| (!self.nodes[index].draining, index));
        for index in order {
            self.try_release(index);
        }
    }

    /// Release order: draining first, then highest priority number, most expensive, fewest copies.
    fn doomed_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> =
            (0..self.nodes.len()).filter(|&index| self.nodes[index].alive && self.nodes[index].doomed()).collect();
        order.sort_by_key(|&index| {
            let node = &self.nodes[index];
            let copies: u32 = node.copies.values().sum();
            let price = instance_cost_micros(self.problem, node.type_index, node.reserved, CostUnit::UsdPerHour);
            (Reverse(node.draining), Reverse(self.priority(node.type_index)), Reverse(price), copies, index)
        });
        order
    }

    fn begin_step(&mut self) {
        for node in &mut self.nodes {
            node.peak = node.used;
            node.arrived.clear();
        }
        self.balance_base = self.per_az.iter().map(|row| imbalance(row)).collect();
        self.spread.clear();
        self.journal.clear();
        self.steps.push(RebalanceStep { launch: Vec::new(), moves: Vec::new(), release: Vec::new() });
    }

    /// One unit: `work` changes the state; it is kept when it did something and the rules hold.
    fn unit(&mut self, work: impl FnOnce(&mut Self, &mut BTreeSet<usize>) -> usize) -> bool {
        if self.stopped.is_some() {
            return false;
        }
        if let Some(reason) = self.limits.stop_now() {
            self.stopped = Some(reason);
            return false;
        }
        let mark = self.mark();
        let mut emptied = BTreeSet::new();
        let moved = work(self, &mut emptied);
        self.release_emptied(&emptied);
        if moved == 0 || !self.unit_ok() {
            self.rollback(&mark);
            return false;
        }
        true
    }

    /// Builds one step; false when it would be empty.
    fn step(&mut self) -> bool {
        self.begin_step();
        let step_size = self.step_size;
        let mut failures = 0usize;
        for from in self.doomed_order() {
            let releases = self.steps.last().map_or(0, |step| step.release.len());
            let node = &self.nodes[from];
            if !node.alive {
                continue;
            }
            if !node.draining && (self.tally.draining > 0 || releases >= step_size) {
                break;
            }
            if failures > 2 * step_size + 8 {
                break;
            }
            // Fill launches from every source first; if that breaks a rule, only from `from`.
            let kept = self.unit(|planner, emptied| planner.evacuate_closure(from, emptied)) || {
                self.fill_only_from = Some(from);
                let kept = self.unit(|planner, emptied| planner.evacuate_closure(from, emptied));
                self.fill_only_from = None;
                kept
            };
            if kept {
                failures = 0;
            } else {
                failures += 1;
            }
        }
        let pending: Vec<usize> = {
            let mut pending: Vec<usize> = (0..self.nodes.len()).filter(|&index| self.nodes[index].pending).collect();
            pending.sort_by_key(|&index| (self.priority(self.nodes[index].type_index), index));
            pending
        };
        for to in pending {
            if self.steps.last().is_none_or(|step| step.launch.len() >= step_size) {
                break;
            }
            if !self.can_launch(to) {
                continue;
            }
            self.unit(|planner, emptied| {
                planner.launch(to);
                planner.fill(to, emptied)
            });
        }
        let kept: Vec<usize> = (0..self.nodes.len())
            .filter(|&index| {
                let node = &self.nodes[index];
                node.alive && !node.doomed() && node.copies.keys().any(|&component| node.surplus(component) > 0)
            })
            .collect();
        for from in kept {
            self.unit(|planner, emptied| planner.evacuate_alive_only(from, emptied));
        }
        // Doomed instances emptied by fills of earlier units, released while the step has room.
        let emptied: Vec<usize> = (0..self.nodes.len())
            .filter(|&index| {
                let node = &self.nodes[index];
                node.alive && node.doomed() && node.copies.is_empty()
            })
            .collect();
        for index in emptied {
            self.unit(|planner, _| usize::from(planner.try_release(index)));
        }
        let empty = self
            .steps
            .last()
            .is_none_or(|step| step.launch.is_empty() && step.moves.is_empty() && step.release.is_empty());
        if empty {
            self.steps.pop();
            return false;
        }
        self.keys.push(self.key());
        true
    }

    /// Moves surplus copies of a kept instance to alive instances missing them.
    fn evacuate_alive_only(&mut self, from: usize, _emptied: &mut BTreeSet<usize>) -> usize {
        let mut moved = 0;
        let components: Vec<usize> = self.nodes[from].copies.keys().copied().collect();
        for component in components {
            while self.nodes[from].movable_surplus(component) > 0 {
                let Some(to) = self.destination(component, from).filter(|&to| !self.nodes[to].pending) else { break };
                self.move_copy(component, from, to);
                moved += 1;
            }
        }
        moved
    }

    /// Plans steps until one would be empty, `max_steps` are planned or a limit stops it; then
    /// cuts the path after its best step. Returns the steps and why it stopped.
    pub(super) fn run(mut self, max_steps: usize, limits: &Limits) -> (Vec<RebalanceStep>, StopReason) {
        self.limits = limits.clone();
        let mut stop = StopReason::Completed;
        // SPREAD repairs move copies off the target's way and back: a bound on the steps keeps
        // that from going round in circles (a direct path needs far fewer).
        let max_steps = max_steps.min(self.nodes.len().saturating_mul(2).saturating_add(16));
        while self.steps.len() < max_steps {
            if let Some(reason) = limits.stop_now() {
                stop = reason;
                break;
            }
            let stepped = self.step();
            if let Some(reason) = self.stopped.take() {
                stop = reason;
                break;
            }
            if !stepped {
                break;
            }
        }
        let best = (0..self.keys.len()).min_by_key(|&index| (self.keys[index], index)).unwrap_or(0);
        self.steps.truncate(best);
        (self.steps, stop)
    }
}
