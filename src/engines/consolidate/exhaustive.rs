//! Exhaustive search for tiny fleets: every order of single releases and every home for every
//! moved copy, within a node limit. Exact among plans that release one instance at a time and
//! only move copies off the instance being released (what the greedy plans too).

use std::collections::BTreeMap;

use super::{ConsolidationScore, Planner};
use crate::fleet::objective;
use crate::index::AzIndex;
use crate::plan::StopReason;

/// A release and the moves `(component, target)` that empty it.
pub(super) type Release = (usize, Vec<(usize, usize)>);

/// A fleet state: per instance, alive and its copies.
type StateKey = Vec<(bool, Vec<(usize, u32)>)>;

/// The outcome of a search.
pub(super) struct Found {
    /// The best sequence of releases.
    pub releases: Vec<Release>,
    /// True when the whole space was searched (the result is optimal in that space).
    pub complete: bool,
    /// The limit that stopped the search early, if any.
    pub stopped: Option<StopReason>,
    /// States visited.
    pub nodes: u64,
}

struct Search {
    node_limit: usize,
    nodes: usize,
    complete: bool,
    stopped: Option<StopReason>,
    /// Fewest moves with which each state was reached.
    seen: BTreeMap<StateKey, usize>,
    path: Vec<Release>,
    moves: usize,
    best: Option<(ConsolidationScore, Vec<Release>)>,
}

impl Planner<'_> {
    /// Searches release sequences from the current state (which is left unchanged).
    pub(super) fn exhaustive(&mut self, node_limit: usize) -> Found {
        let mut search = Search {
            node_limit,
            nodes: 0,
            complete: true,
            stopped: None,
            seen: BTreeMap::new(),
            path: Vec::new(),
            moves: 0,
            best: None,
        };
        self.explore(&mut search);
        Found {
            releases: search.best.map(|(_, releases)| releases).unwrap_or_default(),
            complete: search.complete,
            stopped: search.stopped,
            nodes: search.nodes as u64,
        }
    }

    fn state_key(&self) -> StateKey {
        self.nodes.iter().map(|node| (node.alive, node.copies.iter().map(|(&c, &n)| (c, n)).collect())).collect()
    }

    fn explore(&mut self, search: &mut Search) {
        if search.nodes >= search.node_limit {
            search.complete = false;
            search.stopped.get_or_insert(StopReason::NodeLimit);
            return;
        }
        if let Some(reason) = self.limits.stop_now() {
            search.complete = false;
            search.stopped.get_or_insert(reason);
            return;
        }
        search.nodes += 1;
        let key = self.state_key();
        if search.seen.get(&key).is_some_and(|&moves| moves <= search.moves) {
            return;
        }
        search.seen.insert(key, search.moves);
        let key = objective(self.problem, &self.final_fleet()).key();
        let score = (key.fallback_counts, key.cost_micros, search.moves);
        if search.best.as_ref().is_none_or(|(best, _)| score < *best) {
            search.best = Some((score, search.path.clone()));
        }
        let min_instances = usize::try_from(self.problem.scaling().min_instances).unwrap_or(usize::MAX);
        if self.alive <= min_instances {
            return;
        }
        for candidate in 0..self.nodes.len() {
            if !self.nodes[candidate].alive {
                continue;
            }
            let (balance_before, spread_before) = self.guards_before_release(candidate);
            let units: Vec<usize> = self.nodes[candidate]
                .copies
                .iter()
                .flat_map(|(&component, &count)| std::iter::repeat_n(component, count as usize))
                .collect();
            let saved_copies = std::mem::take(&mut self.nodes[candidate].copies);
            let saved_used = self.nodes[candidate].used;
            self.nodes[candidate].alive = false;
            self.nodes[candidate].used = crate::problem::Resources::ZERO;
            let mut moves = Vec::with_capacity(units.len());
            self.assign(candidate, &units, &mut moves, &balance_before, &spread_before, search);
            let node = &mut self.nodes[candidate];
            node.copies = saved_copies;
            node.used = saved_used;
            node.alive = true;
        }
    }

    /// Places `units[moves.len()..]` in every allowed way, then explores the state after the release.
    fn assign(
        &mut self,
        candidate: usize,
        units: &[usize],
        moves: &mut Vec<(usize, usize)>,
        balance_before: &[u64],
        spread_before: &[(usize, u64)],
        search: &mut Search,
    ) {
        if search.nodes >= search.node_limit {
            search.complete = false;
            search.stopped.get_or_insert(StopReason::NodeLimit);
            return;
        }
        let source_az = AzIndex::new(self.nodes[candidate].az_index);
        let Some(&component) = units.get(moves.len()) else {
            if spread_before.iter().any(|&(component, before)| self.spread_offenders_now(component) > before) {
                return;
            }
            self.alive -= 1;
            search.moves += moves.len();
            search.path.push((candidate, moves.clone()));
            self.explore(search);
            search.path.pop();
            search.moves -= moves.len();
            self.alive += 1;
            return;
        };
        // Copies of one component are interchangeable: targets in non-decreasing order.
        let first = match moves.last() {
            Some(&(previous, target)) if previous == component => target,
            _ => 0,
        };
        for target in first..self.nodes.len() {
            if !self.may_receive(candidate, component, target) {
                continue;
            }
            self.add_copy(target, component, source_az);
            moves.push((component, target));
            // Units are grouped by component: after its last copy, the component's AZ counts
            // are final for this release, and its imbalance must not have grown (checked here
            // rather than per copy, where it would depend on the order targets are tried in).
            let component_done = units.get(moves.len()) != Some(&component);
            if !component_done || self.balance_kept(component, balance_before) {
                self.assign(candidate, units, moves, balance_before, spread_before, search);
            }
            moves.pop();
            self.undo_copy(target, component, source_az);
        }
    }
}
