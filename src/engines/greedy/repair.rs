//! Repair pass: copies the main pass left unplaced, placed by relocating a few of this plan's
//! own new copies.
//!
//! A copy stays unplaced when no instance in the fleet has room for it and nothing more can be
//! opened (capacity or MaxInstanceCount). Often the room exists, only fragmented: another
//! component's new copy on an instance blocks it and would fit somewhere else. For each missing
//! copy the pass looks for an instance X eligible for it and one or two new copies on X whose
//! removal makes room, each of which fits on another instance (room in the fleet first, an
//! opening if one is still allowed), then moves them and places the copy on X.
//!
//! What it never does: move an existing copy (contract §2: `plan` never moves them), relocate a
//! copy to an AZ where its component's balance excess grows (L2 of relocated components is
//! unchanged or better), or break packing, eligibility, capacity or MaxInstanceCount (every
//! check goes through the same room and opening rules as the main pass). The placed copy goes
//! to the AZ that is best for its component's balance among those where a repair exists; as in
//! the main pass (PERMISSIVE), a copy is placed even when every such AZ adds balance excess,
//! because L1 comes before L2.
//!
//! The insertion chains ([`Greedy::place_missing_by_chains`], run once on the best plan when
//! copies are still missing) are the exception: their displaced copies may go to any AZ, since
//! one more copy placed (L1) is worth any balance; the balance moves run after them.
//!
//! Work is bounded ([`REPAIR_WORK`], [`ELIMINATE_WORK`], [`INSERT_WORK`] instance checks per
//! pass), so large inputs stay linear.

use std::cmp::Reverse;

use smallvec::SmallVec;

use super::place::as_count;
use super::Greedy;
use crate::engines::balance::{self, Budget, Holder};
use crate::engines::limits::Limits;
use crate::fleet::balance_excess;
use crate::index::{AzIndex, TypeIndex};
use crate::problem::Resources;

/// Most instance checks one repair pass may do (a check: one room test for one instance).
const REPAIR_WORK: u64 = 20_000;

/// Most instance checks one balance pass ([`Greedy::rebalance_by_moves`]) may do.
const BALANCE_WORK: u64 = 20_000;

/// Most instance checks of [`Greedy::lower_excess_by_chains`] (once, on the kept plan).
const CHAIN_WORK: u64 = 1_000_000;

/// Most instance checks of [`Greedy::place_missing_by_chains`] (once, on the final plan).
const INSERT_WORK: u64 = 100_000;

/// Rounds of [`Greedy::refilled_after_emptying`].
const REFILL_ROUNDS: usize = 4;

/// Instance checks of the repair in each round of [`Greedy::refilled_after_emptying`].
const REFILL_REPAIR_WORK: u64 = 50_000;

/// Launches [`Greedy::empty_by_chains`] tries to empty.
const EMPTY_TRIES: usize = 64;

/// More preferred types [`Greedy::empty_by_chains`] may open in place of one emptied launch.
const EMPTY_OPENINGS: usize = 2;

/// Instance checks of the chains that empty one launch ([`Greedy::empty_by_chains`]).
const EMPTY_CHAIN_WORK: u64 = 10_000;

/// Instance checks of one [`Greedy::empty_by_chains`] run.
const EMPTY_WORK: u64 = 300_000;

/// Most instance checks one elimination pass may do. It runs on every plan (the repair pass only
/// when copies are missing), so it gets less: on a 10k-copy plan whose instances are all full
/// it would otherwise spend its whole budget finding nothing.
const ELIMINATE_WORK: u64 = 4_000;

/// New copies on one instance that may be relocated: (component, count).
pub(super) type NewCopies = SmallVec<[(usize, u32); 4]>;

/// Copies of one instance to move elsewhere (a component per copy).
type MoveSet = SmallVec<[usize; 2]>;

/// Most copies one repair moves off an instance (the larger sets of the final repair).
const MOST_MOVES: usize = 12;

/// Where a relocated copy goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// An instance already in the fleet.
    Instance(usize),
    /// A new opening of (type, AZ).
    Open(TypeIndex, AzIndex),
}

impl Greedy<'_> {
    /// Places missing copies of the components in `order` by relocating up to two of this
    /// plan's new copies per placed copy. Returns the copies placed.
    pub(super) fn repair(&mut self, order: &[usize]) -> u64 {
        self.repair_with(order, REPAIR_WORK)
    }

    /// [`Self::repair`] within `work` instance checks.
    pub(super) fn repair_with(&mut self, order: &[usize], work: u64) -> u64 {
        if order.iter().all(|&c| self.missing_new_copies(c) == 0) {
            return 0;
        }
        let mut new_copies = self.new_copies_by_instance();
        let mut work = work;
        let mut placed = 0;
        for &c in order {
            while self.missing_new_copies(c) > 0 && work > 0 {
                let before: u64 = self.az_copies.iter().flatten().sum();
                if !self.repair_one(c, &mut new_copies, &mut work) {
                    break;
                }
                placed += self.az_copies.iter().flatten().sum::<u64>().saturating_sub(before);
            }
        }
        // Then trades for several components' missing copies: only after every single-component
        // repair, so a plan those reach is only ever improved (each trade places one copy more).
        for &c in order {
            while self.missing_new_copies(c) > 0 && work > 0 {
                let before: u64 = self.az_copies.iter().flatten().sum();
                let azs = self.azs_by_balance(c);
                if !self.trade(c, &azs, &mut new_copies, &mut work, true) {
                    break;
                }
                placed += self.az_copies.iter().flatten().sum::<u64>().saturating_sub(before);
            }
        }
        placed
    }

    /// Takes the instances the release phase released off the idle lists: a repair after it
    /// may open instances, and a released one must not come back.
    pub(super) fn forget_released_idle(&mut self) {
        let instances = &self.instances;
        for list in self.idle.iter_mut().flatten() {
            list.retain(|&i| !instances[i].released);
        }
    }

    /// This plan's new copies per instance (the copies a repair may move).
    pub(super) fn new_copies_by_instance(&self) -> Vec<NewCopies> {
        let mut new_copies: Vec<NewCopies> = vec![SmallVec::new(); self.instances.len()];
        for &(component, index, count) in &self.placements {
            if let Some(list) = new_copies.get_mut(index) {
                add_count(list, component, i64::from(count));
            }
        }
        new_copies
    }

    /// Lowers balance excess (L2) on the fleet the plan already has: a new copy of a component
    /// over its MaxImbalance moves from a fuller AZ to an emptier one, onto free room there or in
    /// exchange for a new copy of another component whose own balance excess does not grow by
    /// the opposite move. The instances and the copies placed stay as they are (L1, L3 and L4
    /// unchanged); every move lowers the total excess, so the pass ends. Placing components one
    /// after another leaves this behind when the room in the emptier AZs went to components
    /// placed earlier that did not need it there. Returns the moves made.
    pub(super) fn rebalance_by_moves(&mut self) -> u64 {
        let problem = self.problem;
        if problem.azs.len() < 2 {
            return 0;
        }
        let order: Vec<usize> =
            balance::balanced_by_name(problem).into_iter().filter(|&c| self.excess_of(c) > 0).collect();
        if order.is_empty() {
            return 0;
        }
        let mut new_copies = self.new_copies_by_instance();
        let by_rank: Vec<Vec<usize>> = (0..problem.azs.len()).map(|z| self.instances_by_rank(z)).collect();
        let mut work = BALANCE_WORK;
        let mut moves = 0;
        let mut moved = true;
        while moved && work > 0 {
            moved = false;
            for &c in &order {
                while work > 0 && self.balance_move(c, &by_rank, &mut new_copies, &mut work) {
                    moves += 1;
                    moved = true;
                }
            }
        }
        moves
    }

    /// Lowers balance excess on the final fleet by the shared ejection chains and relaunches
    /// ([`balance::lower_excess_and_relaunch`]): new copies move between AZs, launches move to
    /// other AZs with their copies (instances per type stay and reservations used never fall: L1
    /// and L3 unchanged, L4 never higher). Runs on the kept plan only, until `limits` say stop. Returns the copies and
    /// launches moved.
    pub(super) fn lower_excess_by_chains(&mut self, limits: &Limits) -> usize {
        let problem = self.problem;
        if problem.azs.len() < 2 {
            return 0;
        }
        let order = balance::balanced_by_name(problem);
        if order.iter().all(|&c| self.excess_of(c) == 0) {
            return 0;
        }
        let mut new_copies = self.new_copies_by_instance();
        let (positions, mut holders) = self.chain_holders(&new_copies);
        let mut counts = self.az_copies.clone();
        let missing: Vec<u64> = (0..problem.components.len()).map(|c| self.missing_new_copies(c)).collect();
        let lowered = balance::lower_excess_and_relaunch(
            problem,
            &mut holders,
            &mut counts,
            &order,
            &missing,
            Budget::checks(CHAIN_WORK).until(limits),
        );
        self.apply_chain_moves(&positions, &lowered.moves, &mut new_copies);
        for relaunch in &lowered.relaunches {
            if let Some(&index) = positions.get(relaunch.holder) {
                self.relaunch(index, relaunch.to);
            }
        }
        lowered.moves.len() + lowered.relaunches.len()
    }

    /// Places missing copies by the shared insertion chains ([`balance::place_missing`]): a
    /// missing copy lands on an instance of the fleet, ejecting one or two new copies that move
    /// on to other instances (any AZ), up to three deep. Every instance stays (L3 and L4
    /// unchanged), L1 rises by one per chain, balance may get worse. Stops when `limits` say so.
    /// Returns the copies placed.
    pub(super) fn place_missing_by_chains(&mut self, limits: &Limits) -> u64 {
        let problem = self.problem;
        let missing: Vec<u64> = (0..problem.components.len()).map(|c| self.missing_new_copies(c)).collect();
        if missing.iter().all(|&n| n == 0) {
            return 0;
        }
        let mut new_copies = self.new_copies_by_instance();
        let (positions, mut holders) = self.chain_holders(&new_copies);
        let mut counts = self.az_copies.clone();
        let moves = balance::place_missing(
            problem,
            &mut holders,
            &mut counts,
            &missing,
            Budget::checks(INSERT_WORK).until(limits),
        );
        let before = self.placed_new_copies();
        self.apply_chain_moves(&positions, &moves, &mut new_copies);
        self.placed_new_copies().saturating_sub(before)
    }

    /// The final fleet as the shared chains see it: (instance index per holder, holders), AZ by
    /// AZ in rank order.
    fn chain_holders(&self, new_copies: &[NewCopies]) -> (Vec<usize>, Vec<Holder>) {
        let positions: Vec<usize> = (0..self.problem.azs.len())
            .flat_map(|z| self.instances_by_rank(z))
            .filter(|&i| self.instances.get(i).is_some_and(|instance| instance.in_fleet && !instance.released))
            .collect();
        let holders: Vec<Holder> = positions
            .iter()
            .map(|&i| {
                let instance = &self.instances[i];
                let mut copies: SmallVec<[(usize, u32); 4]> = new_copies
                    .get(i)
                    .map(|list| list.iter().copied().filter(|&(_, n)| n > 0).collect())
                    .unwrap_or_default();
                copies.sort_unstable();
                Holder {
                    type_index: instance.type_index,
                    az: instance.az,
                    open: !instance.draining,
                    launch: instance.existing.is_none(),
                    used: instance.used,
                    new_copies: copies,
                }
            })
            .collect();
        (positions, holders)
    }

    /// Carries out the shared chains' `moves` on this plan (`positions`: instance per holder).
    fn apply_chain_moves(&mut self, positions: &[usize], moves: &[balance::Move], new_copies: &mut Vec<NewCopies>) {
        let at = |position: Option<usize>| position.and_then(|p| positions.get(p).copied());
        for step in moves {
            match (at(step.from), at(step.to)) {
                (Some(from), Some(to)) => {
                    self.relocate(step.component, from, Target::Instance(to), &mut None, new_copies);
                }
                (Some(from), None) => self.drop_new_copy(step.component, from, new_copies),
                (None, Some(to)) => self.add_new_copy(step.component, to, new_copies),
                (None, None) => {}
            }
        }
    }

    /// Leaves one new copy of `d` on instance `from` out of the plan (an exchange's drop).
    fn drop_new_copy(&mut self, d: usize, from: usize, new_copies: &mut [NewCopies]) {
        self.unplace_one(d, from);
        if let Some(list) = new_copies.get_mut(from) {
            add_count(list, d, -1);
        }
        self.readmit_accelerated(from);
    }

    /// Places one more new copy of `d` on instance `to` (an exchange's placement).
    fn add_new_copy(&mut self, d: usize, to: usize, new_copies: &mut [NewCopies]) {
        let Some(need) = self.need_on(d, to) else { return };
        self.place(d, to, 1, &need);
        if let Some(list) = new_copies.get_mut(to) {
            add_count(list, d, 1);
        }
    }

    /// Component `c`'s balance excess now.
    fn excess_of(&self, c: usize) -> u64 {
        let limit = self.problem.components.get(c).and_then(|component| component.max_imbalance);
        self.az_copies.get(c).map_or(0, |totals| balance_excess(totals, limit))
    }

    /// Component `e`'s balance excess after one of its copies moves from AZ `from` to AZ `to`.
    fn excess_after_move(&self, e: usize, from: usize, to: usize) -> u64 {
        let limit = self.problem.components.get(e).and_then(|component| component.max_imbalance);
        let mut totals = self.az_copies.get(e).cloned().unwrap_or_default();
        if let Some(cell) = totals.get_mut(from) {
            *cell = cell.saturating_sub(1);
        }
        if let Some(cell) = totals.get_mut(to) {
            *cell += 1;
        }
        balance_excess(&totals, limit)
    }

    /// One move of [`Self::rebalance_by_moves`] for component `c` (fullest AZ first, to the
    /// emptiest); false when none lowers its excess (or the work budget ran out).
    fn balance_move(
        &mut self,
        c: usize,
        by_rank: &[Vec<usize>],
        new_copies: &mut Vec<NewCopies>,
        work: &mut u64,
    ) -> bool {
        let before = self.excess_of(c);
        if before == 0 {
            return false;
        }
        let totals = self.az_copies.get(c).cloned().unwrap_or_default();
        let mut fullest: Vec<usize> = (0..totals.len()).collect();
        fullest.sort_by_key(|&z| (Reverse(totals[z]), self.az_rank[z]));
        let emptiest: Vec<usize> = fullest.iter().rev().copied().collect();
        for &from in &fullest {
            for &to in &emptiest {
                if from == to || self.excess_after_move(c, from, to) >= before {
                    continue;
                }
                for &x in by_rank.get(from).map_or(&[][..], Vec::as_slice) {
                    if !new_copies.get(x).is_some_and(|list| list.iter().any(|&(d, _)| d == c)) {
                        continue;
                    }
                    let Some(need_cx) = self.need_on(c, x) else { continue };
                    for &y in by_rank.get(to).map_or(&[][..], Vec::as_slice) {
                        if *work == 0 {
                            return false;
                        }
                        *work -= 1;
                        if let Some(partner) = self.move_partner(c, (x, need_cx), y, (from, to), new_copies) {
                            self.relocate(c, x, Target::Instance(y), &mut None, new_copies);
                            if let Some(d) = partner {
                                self.relocate(d, y, Target::Instance(x), &mut None, new_copies);
                            }
                            self.readmit_accelerated(y);
                            return true;
                        }
                    }
                }
            }
        }
        false
    }

    /// Whether a copy of `c` on instance `x` (AZ `from`) can go to instance `y` (AZ `to`):
    /// `Some(None)` onto free room, `Some(Some(d))` in exchange for a new copy of `d` on `y` that
    /// fits on `x` once `c` left it and whose component's balance excess does not grow.
    fn move_partner(
        &self,
        c: usize,
        (x, need_cx): (usize, Resources),
        y: usize,
        (from, to): (usize, usize),
        new_copies: &[NewCopies],
    ) -> Option<Option<usize>> {
        let problem = self.problem;
        let target = self.instances.get(y).filter(|instance| !instance.draining)?;
        let need_cy = self.need_on(c, y)?;
        let capacity_y = problem.types.get(target.type_index)?.capacity;
        if target.used.plus(&need_cy).fits_in(&capacity_y) {
            return Some(None);
        }
        let source = self.instances.get(x)?;
        let capacity_x = problem.types.get(source.type_index)?.capacity;
        let left_x = source.used.minus(&need_cx)?;
        new_copies
            .get(y)?
            .iter()
            .map(|&(d, _)| d)
            .filter(|&d| d != c)
            .find(|&d| {
                let (Some(need_dy), Some(need_dx)) = (self.need_on(d, y), self.need_on(d, x)) else { return false };
                target.used.minus(&need_dy).is_some_and(|left_y| left_y.plus(&need_cy).fits_in(&capacity_y))
                    && left_x.plus(&need_dx).fits_in(&capacity_x)
                    && self.excess_after_move(d, to, from) <= self.excess_of(d)
            })
            .map(Some)
    }

    /// AZs best for component `c`'s balance with one more copy first (then fewest copies, then name).
    fn azs_by_balance(&self, c: usize) -> Vec<usize> {
        let limit = self.problem.components.get(c).and_then(|component| component.max_imbalance);
        let mut azs: Vec<usize> = (0..self.problem.azs.len()).collect();
        let totals = self.az_copies.get(c).cloned().unwrap_or_default();
        azs.sort_by_key(|&z| {
            let mut after = totals.clone();
            if let Some(cell) = after.get_mut(z) {
                *cell += 1;
            }
            (balance_excess(&after, limit), totals.get(z).copied().unwrap_or(0), self.az_rank[z])
        });
        azs
    }

    /// The final fleet's instances in AZ `z` by rank (id order for existing instances, launch
    /// order for new ones), not by input position: the repair must not depend on the order the
    /// input lists the fleet in (permuting the input keeps the objective).
    fn instances_by_rank(&self, z: usize) -> Vec<usize> {
        let mut list: Vec<usize> = self.fleet_by_az.get(z).cloned().unwrap_or_default();
        list.sort_by_key(|&index| self.instances.get(index).map_or(usize::MAX, |instance| instance.rank));
        list
    }

    /// What one copy of component `c` needs on each type (`None` where it may not run).
    fn needs_of(&self, c: usize) -> Vec<Option<Resources>> {
        let problem = self.problem;
        (0..problem.types.len())
            .map(|t| problem.components.get(c)?.placement_requirement(problem, t).map(|r| r.resources))
            .collect()
    }

    /// The need of one copy of `c` on instance `index`, if `c` may run there.
    pub(super) fn need_on(&self, c: usize, index: usize) -> Option<Resources> {
        let instance = self.instances.get(index)?;
        let problem = self.problem;
        problem.components.get(c)?.placement_requirement(problem, instance.type_index).map(|r| r.resources)
    }

    /// Places one copy of `c` by relocating one or two new copies; false when no repair exists
    /// (or the work budget ran out).
    fn repair_one(&mut self, c: usize, new_copies: &mut Vec<NewCopies>, work: &mut u64) -> bool {
        if self.problem.components.get(c).is_none() {
            return false;
        }
        let azs = self.azs_by_balance(c);
        for &z in &azs {
            let candidates = self.instances_by_rank(z);
            for x in candidates {
                if *work == 0 {
                    return false;
                }
                *work -= 1;
                let Some(need_c) = self.need_on(c, x) else { continue };
                let Some(capacity) = self.problem.types.get(self.instances[x].type_index).map(|t| t.capacity) else {
                    continue;
                };
                let used = self.instances[x].used;
                if used.plus(&need_c).fits_in(&capacity) {
                    // Room the main pass did not see (e.g. freed by an earlier repair).
                    self.place(c, x, 1, &need_c);
                    add_count(&mut new_copies[x], c, 1);
                    self.readmit_accelerated(x);
                    return true;
                }
                let movable: NewCopies = new_copies
                    .get(x)
                    .map(|list| list.iter().copied().filter(|&(d, _)| d != c).collect())
                    .unwrap_or_default();
                if movable.is_empty() {
                    continue;
                }
                // Sets of one or two copies to move off X that make room for c.
                let mut sets: Vec<MoveSet> = Vec::new();
                for (i, &(d, n)) in movable.iter().enumerate() {
                    sets.push(SmallVec::from_slice(&[d]));
                    if n >= 2 {
                        sets.push(SmallVec::from_slice(&[d, d]));
                    }
                    for &(e, _) in movable.iter().skip(i + 1) {
                        sets.push(SmallVec::from_slice(&[d, e]));
                    }
                }
                if self.repair_many {
                    sets.extend(self.larger_move_sets(x, &movable, used.plus(&need_c), &capacity));
                }
                for set in sets {
                    let freed = set.iter().filter_map(|&d| self.need_on(d, x)).fold(Resources::ZERO, |a, b| a.plus(&b));
                    let Some(after) = used.minus(&freed) else { continue };
                    if !after.plus(&need_c).fits_in(&capacity) {
                        continue;
                    }
                    if let Some(targets) = self.relocation_targets(x, &set, Some(u8::MAX), work) {
                        let mut opened = None;
                        for (&d, target) in set.iter().zip(targets) {
                            self.relocate(d, x, target, &mut opened, new_copies);
                        }
                        // The checks above make this hold; re-checked so a failed opening can
                        // never overbook X (the relocated copies are valid wherever they are).
                        if !self.instances[x].used.plus(&need_c).fits_in(&capacity) {
                            return false;
                        }
                        self.place(c, x, 1, &need_c);
                        add_count(&mut new_copies[x], c, 1);
                        self.readmit_accelerated(x);
                        return true;
                    }
                }
            }
        }
        self.trade(c, &azs, new_copies, work, false)
    }

    /// Places two copies of `c` where one new copy of another component was (that copy is given
    /// up): one copy more placed, so L1 improves. Used when no relocation exists and room is
    /// short, where L1 (a count of copies) favours small copies. The given-up component's
    /// balance excess must not grow. With `others`, a copy of `c` and then any missing copies
    /// that fit the freed room (of `c` or other components, smallest first), at least two.
    fn trade(&mut self, c: usize, azs: &[usize], new_copies: &mut [NewCopies], work: &mut u64, others: bool) -> bool {
        let problem = self.problem;
        // Missing copies of every component that may get new ones (a trade places some of them).
        let missing: Vec<u64> = (0..problem.components.len()).map(|e| self.missing_new_copies(e)).collect();
        if missing.get(c).copied().unwrap_or(0) == 0 {
            return false;
        }
        for &z in azs {
            let candidates = self.instances_by_rank(z);
            for x in candidates {
                if *work == 0 {
                    return false;
                }
                *work -= 1;
                let Some(need_c) = self.need_on(c, x) else { continue };
                let Some(capacity) = problem.types.get(self.instances[x].type_index).map(|t| t.capacity) else {
                    continue;
                };
                let used = self.instances[x].used;
                let movable: NewCopies = new_copies
                    .get(x)
                    .map(|list| list.iter().copied().filter(|&(d, _)| d != c).collect())
                    .unwrap_or_default();
                for (d, _) in movable {
                    let Some(need_d) = self.need_on(d, x) else { continue };
                    let Some(room) = used.minus(&need_d).and_then(|after| capacity.minus(&after.plus(&need_c))) else {
                        continue;
                    };
                    let limit = problem.components.get(d).and_then(|x| x.max_imbalance);
                    let mut after = self.az_copies[d].clone();
                    let before = balance_excess(&after, limit);
                    after[z] = after[z].saturating_sub(1);
                    if balance_excess(&after, limit) > before {
                        continue;
                    }
                    let mut left = missing.clone();
                    left[c] -= 1;
                    left[d] = 0;
                    if !others {
                        // Exactly one more copy of `c`.
                        left.iter_mut().enumerate().for_each(|(e, n)| *n = if e == c { (*n).min(1) } else { 0 });
                    }
                    let extras = self.fill_freed_room(x, room, &left);
                    if extras.is_empty() {
                        continue;
                    }
                    self.unplace_one(d, x);
                    add_count(&mut new_copies[x], d, -1);
                    self.place(c, x, 1, &need_c);
                    add_count(&mut new_copies[x], c, 1);
                    for (e, count, need_e) in extras {
                        self.place(e, x, as_count(count), &need_e);
                        add_count(&mut new_copies[x], e, i64::from(as_count(count)));
                    }
                    self.readmit_accelerated(x);
                    return true;
                }
            }
        }
        false
    }

    /// Missing copies (`missing` per component) that fit `room` on instance `x`, smallest share
    /// of the instance first (L1 counts copies), then component name: (component, copies, need).
    pub(super) fn fill_freed_room(&self, x: usize, room: Resources, missing: &[u64]) -> Vec<(usize, u64, Resources)> {
        let problem = self.problem;
        let Some(instance) = self.instances.get(x).filter(|instance| !instance.draining) else { return Vec::new() };
        let Some(capacity) = problem.types.get(instance.type_index).map(|t| t.capacity) else { return Vec::new() };
        let mut candidates: Vec<(f64, &str, usize, Resources)> = missing
            .iter()
            .enumerate()
            .filter(|&(_, &n)| n > 0)
            .filter_map(|(e, _)| {
                let need = self.need_on(e, x)?;
                let name = problem.components.get(e)?.name.as_str();
                Some((need.dominant_share(&capacity), name, e, need))
            })
            .collect();
        candidates.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(b.1)));
        let mut room = room;
        let mut picks = Vec::new();
        for (_, _, e, need) in candidates {
            let count = room.copies_of(&need).min(missing[e]);
            if count == 0 {
                continue;
            }
            room = room.minus(&need.times(count)).unwrap_or(Resources::ZERO);
            picks.push((e, count, need));
        }
        picks
    }

    /// Sets of more than two of X's movable new copies whose removal leaves room for a load of
    /// `wanted` on X (X's load with the missing copy added): copies are taken while a resource
    /// is still short, the ones freeing most of what is short first, and, apart, the smallest
    /// first (those fit elsewhere most easily). At most [`MOST_MOVES`] copies each.
    fn larger_move_sets(&self, x: usize, movable: &NewCopies, wanted: Resources, capacity: &Resources) -> Vec<MoveSet> {
        let short = |freed: &Resources| match wanted.minus(freed) {
            Some(after) => !after.fits_in(capacity),
            None => false,
        };
        let mut units: Vec<(usize, Resources)> = Vec::new();
        for &(d, n) in movable {
            let Some(need) = self.need_on(d, x) else { continue };
            units.extend(std::iter::repeat_n((d, need), (n as usize).min(MOST_MOVES)));
        }
        let over = Resources {
            accelerators: wanted.accelerators.saturating_sub(capacity.accelerators),
            milli_cpus: wanted.milli_cpus.saturating_sub(capacity.milli_cpus),
            memory_mib: wanted.memory_mib.saturating_sub(capacity.memory_mib),
        };
        let share = |want: u64, have: u64| want as f64 / have.max(1) as f64;
        // What a copy frees of what is short, and its size, as shares of X's capacity.
        let freeing = |need: &Resources| {
            [
                (need.accelerators, over.accelerators, capacity.accelerators),
                (need.milli_cpus, over.milli_cpus, capacity.milli_cpus),
                (need.memory_mib, over.memory_mib, capacity.memory_mib),
            ]
            .iter()
            .filter(|(_, lacking, _)| *lacking > 0)
            .map(|&(freed, lacking, have)| share(freed.min(lacking), have))
            .sum::<f64>()
        };
        let size = |need: &Resources| {
            share(need.accelerators, capacity.accelerators)
                .max(share(need.milli_cpus, capacity.milli_cpus))
                .max(share(need.memory_mib, capacity.memory_mib))
        };
        // Ties by component name: the plan must not depend on the input's order.
        let rank = |c: usize| self.component_rank.get(c).copied().unwrap_or(c);
        let mut most_freeing = units.clone();
        most_freeing.sort_by(|a, b| freeing(&b.1).total_cmp(&freeing(&a.1)).then(rank(a.0).cmp(&rank(b.0))));
        let mut smallest = units;
        smallest.retain(|(_, need)| freeing(need) > 0.0);
        smallest.sort_by(|a, b| size(&a.1).total_cmp(&size(&b.1)).then(rank(a.0).cmp(&rank(b.0))));
        let mut sets: Vec<MoveSet> = Vec::new();
        for order in [most_freeing, smallest] {
            let mut set = MoveSet::new();
            let mut freed = Resources::ZERO;
            for (d, need) in order {
                if !short(&freed) || set.len() == MOST_MOVES {
                    break;
                }
                // A copy that frees nothing short only adds a move.
                if freeing(&need) == 0.0 {
                    continue;
                }
                set.push(d);
                freed = freed.plus(&need);
            }
            if set.len() > 2 && !short(&freed) && !sets.contains(&set) {
                sets.push(set);
            }
        }
        sets
    }

    /// Where each copy of `set` (new copies on instance `x`) can go, in order: an instance in the
    /// fleet with room (same AZ first, then AZs where the component's balance excess does not
    /// grow), else one opening in such an AZ shared by the set (only with `open_better_than`, and
    /// only of a type more preferred than that priority).
    fn relocation_targets(
        &self,
        x: usize,
        set: &[usize],
        open_better_than: Option<u8>,
        work: &mut u64,
    ) -> Option<SmallVec<[Target; 2]>> {
        let problem = self.problem;
        let home = self.instances.get(x)?.az;
        // Extra load already planned on instances by earlier copies of the set.
        let mut planned: Vec<(usize, Resources)> = Vec::new();
        // The one opening the set may use: (type, AZ, load planned on it).
        let mut opening: Option<(usize, usize, Resources)> = None;
        let mut targets: SmallVec<[Target; 2]> = SmallVec::new();
        // Per-AZ copy counts of each relocated component as the set's moves would leave them.
        let mut moved: Vec<(usize, usize)> = Vec::new();
        for &d in set {
            let limit = problem.components.get(d)?.max_imbalance;
            let mut totals = self.az_copies.get(d)?.clone();
            for &(moved_d, to) in &moved {
                if moved_d == d {
                    totals[home] = totals[home].saturating_sub(1);
                    totals[to] += 1;
                }
            }
            let before = balance_excess(&totals, limit);
            let mut azs: Vec<usize> = (0..problem.azs.len())
                .filter(|&z| {
                    if z == home {
                        return true;
                    }
                    let mut after = totals.clone();
                    after[home] = after[home].saturating_sub(1);
                    after[z] += 1;
                    balance_excess(&after, limit) <= before
                })
                .collect();
            azs.sort_by_key(|&z| (z != home, self.az_rank[z]));
            let mut found = None;
            'azs: for &z in &azs {
                for y in self.instances_by_rank(z) {
                    if y == x {
                        continue;
                    }
                    if *work == 0 {
                        return None;
                    }
                    *work -= 1;
                    let Some(need) = self.need_on(d, y) else { continue };
                    let Some(capacity) = problem.types.get(self.instances[y].type_index).map(|t| t.capacity) else {
                        continue;
                    };
                    let extra = planned.iter().filter(|(i, _)| *i == y).fold(Resources::ZERO, |a, (_, r)| a.plus(r));
                    if self.instances[y].used.plus(&extra).plus(&need).fits_in(&capacity) {
                        planned.push((y, need));
                        found = Some((Target::Instance(y), z));
                        break 'azs;
                    }
                }
            }
            if found.is_none() {
                if let Some((t, z, load)) = opening.as_mut() {
                    let need = self.needs_of(d).get(*t).copied().flatten();
                    let capacity = problem.types.get(*t).map(|info| info.capacity);
                    if let (Some(need), Some(capacity), true) = (need, capacity, azs.contains(z)) {
                        if load.plus(&need).fits_in(&capacity) {
                            *load = load.plus(&need);
                            found = Some((Target::Open(TypeIndex::new(*t), AzIndex::new(*z)), *z));
                        }
                    }
                } else if let Some(worst) = open_better_than {
                    let needs = self.needs_of(d);
                    for &z in &azs {
                        let Some(best) = self.best_opening(&needs, z, 1).filter(|o| o.key.1 < worst) else {
                            continue;
                        };
                        if let Some(Some(need)) = needs.get(best.type_index).copied() {
                            opening = Some((best.type_index, z, need));
                            found = Some((Target::Open(TypeIndex::new(best.type_index), AzIndex::new(z)), z));
                            break;
                        }
                    }
                }
            }
            let (target, z) = found?;
            moved.push((d, z));
            targets.push(target);
        }
        Some(targets)
    }

    /// Empties instances this plan opened (launched, or idle existing ones it reused) whose
    /// copies all fit into room elsewhere, and closes them: L1 is unchanged, no relocated
    /// component's balance gets worse, and one instance fewer improves L3 (and L4). Least
    /// preferred first, then fewest copies. Returns the instances closed.
    pub(super) fn eliminate(&mut self) -> u64 {
        let mut new_copies = self.new_copies_by_instance();
        let mut candidates: Vec<usize> = (0..self.instances.len())
            .filter(|&i| {
                let instance = &self.instances[i];
                let new_total: u64 = new_copies[i].iter().map(|&(_, n)| u64::from(n)).sum();
                // Only instances holding nothing but this plan's copies (no existing copy moves).
                instance.in_fleet && !instance.released && new_total == instance.total_copies()
            })
            .collect();
        candidates.sort_by_key(|&i| {
            let instance = &self.instances[i];
            (
                std::cmp::Reverse(self.priority(instance.type_index)),
                instance.total_copies(),
                std::cmp::Reverse(instance.rank),
            )
        });
        let mut work = ELIMINATE_WORK;
        let mut closed = 0;
        for e in candidates {
            if work == 0 {
                break;
            }
            let set: Vec<usize> = new_copies[e].iter().flat_map(|&(d, n)| std::iter::repeat_n(d, n as usize)).collect();
            // An opening is worth it only when it is more preferred than the instance it replaces.
            let worst = self.priority(self.instances[e].type_index);
            let Some(targets) = self.relocation_targets(e, &set, Some(worst), &mut work) else { continue };
            let mut opened = None;
            for (&d, target) in set.iter().zip(targets) {
                self.relocate(d, e, target, &mut opened, &mut new_copies);
            }
            if self.instances[e].copies.is_empty() {
                self.close(e);
                closed += 1;
            }
        }
        if closed > 0 {
            self.renumber_launches();
        }
        closed
    }

    /// Empties launches by the shared insertion chains kept within their AZ
    /// ([`balance::place_missing_within`]) and takes them out: every component keeps its copies
    /// per AZ (L1 and L2 unchanged) and the plan has one instance fewer of the launch's priority
    /// (L3 better), never below MinInstanceCount; failing that, the copies may also go to one
    /// new instance of a more preferred type in the AZ (as many instances, one of them better).
    /// Least preferred launches first, then fewest copies; at most [`EMPTY_TRIES`] launches and
    /// [`EMPTY_WORK`] instance checks, not past `limits`. Runs on the kept plan. Returns the
    /// launches taken out.
    pub(super) fn empty_by_chains(&mut self, limits: &Limits) -> u64 {
        let problem = self.problem;
        let min_size = u64::from(problem.scaling.min_instances);
        let mut candidates: Vec<usize> = self
            .launch_order
            .iter()
            .copied()
            .filter(|&i| self.instances.get(i).is_some_and(|instance| instance.in_fleet && !instance.draining))
            .collect();
        candidates.sort_by_key(|&i| {
            let instance = &self.instances[i];
            (Reverse(self.priority(instance.type_index)), instance.total_copies(), Reverse(instance.rank))
        });
        let mut preferred: Vec<usize> = problem.pool_types().collect();
        preferred.sort_by_key(|&t| (self.priority(t), self.type_rank[t]));
        self.forget_released_idle();
        let mut work = Budget::checks(EMPTY_WORK).until(limits);
        let mut emptied = 0;
        // The chains' view of the plan; `empty_holder` leaves it as it was when it fails, so it
        // is built again only after a launch was taken out.
        let mut new_copies = self.new_copies_by_instance();
        let (mut positions, mut holders) = self.chain_holders(&new_copies);
        for e in candidates.into_iter().take(EMPTY_TRIES) {
            if work.checks == 0 || work.stopped() {
                break;
            }
            let Some(at) = positions.iter().position(|&i| i == e) else { continue };
            let Some(holder) = holders.get(at) else { continue };
            let (az, from) = (holder.az, holder.type_index);
            let mut openings: Vec<Option<usize>> = Vec::new();
            if self.fleet_size > min_size {
                openings.push(None);
            }
            openings.extend(
                preferred
                    .iter()
                    .copied()
                    .take_while(|&t| self.priority(t) < self.priority(from))
                    .filter(|&t| self.launches_left(TypeIndex::new(t), AzIndex::new(az)) > 0)
                    .take(EMPTY_OPENINGS)
                    .map(Some),
            );
            let mut counts = self.az_copies.clone();
            let Some((moves, opened)) =
                balance::empty_holder(problem, &mut holders, &mut counts, at, &openings, &mut work, EMPTY_CHAIN_WORK)
            else {
                continue;
            };
            // Carried out: the launch's copies off and the launch closed, the new instance
            // opened (its holder is the last), then the chains' moves (the emptied copies' as
            // placements: they are off already).
            for (c, n) in new_copies.get(e).cloned().unwrap_or_default() {
                for _ in 0..n {
                    self.unplace_one(c, e);
                }
            }
            if let Some(list) = new_copies.get_mut(e) {
                list.clear();
            }
            self.close(e);
            if let Some(t) = opened {
                let Some(index) = self.open(TypeIndex::new(t), AzIndex::new(az)) else { return emptied };
                positions.push(index);
            }
            let moves: Vec<balance::Move> =
                moves.into_iter().map(|step| balance::Move { from: step.from.filter(|&p| p != at), ..step }).collect();
            self.apply_chain_moves(&positions, &moves, &mut new_copies);
            emptied += 1;
            new_copies = self.new_copies_by_instance();
            (positions, holders) = self.chain_holders(&new_copies);
        }
        if emptied > 0 {
            self.renumber_launches();
        }
        emptied
    }

    /// This plan with launches emptied by [`Self::empty_by_chains`] and the instances that
    /// frees (MaxInstanceCount, launch limits) opened again for missing copies, in rounds while
    /// each places more (the chains stop when `limits` say so); `None` when no round places a
    /// copy. Emptying alone only serves L3, so
    /// the kept plan gets it anyway; when copies are missing, a launch whose copies fit
    /// elsewhere holds a place in the fleet another opening can fill with missing copies.
    pub(super) fn refilled_after_emptying(&self, order: &[usize], limits: &Limits) -> Option<Self> {
        if self.missing_copies() == 0 || !self.emptying_frees_an_opening() {
            return None;
        }
        let mut best: Option<Self> = None;
        let mut current = self.clone();
        current.forget_released_idle();
        current.repair_many = true;
        for _ in 0..REFILL_ROUNDS {
            let before = current.placed_new_copies();
            if current.empty_by_chains(limits) == 0 {
                break;
            }
            current.place_all(order);
            current.repair_with(order, REFILL_REPAIR_WORK);
            current.place_missing_by_chains(limits);
            if current.placed_new_copies() <= before {
                break;
            }
            let mut kept = current.clone();
            kept.rebalance_by_moves();
            best = Some(kept);
            if current.missing_copies() == 0 {
                break;
            }
        }
        best
    }

    /// Whether taking a launch out makes room for another opening: MaxInstanceCount is reached,
    /// or some (type, AZ) the plan launched in has no launch left. Otherwise an opening for a
    /// missing copy is possible already, and emptying only serves L3.
    fn emptying_frees_an_opening(&self) -> bool {
        self.budget() == 0
            || self.launched.iter().enumerate().any(|(t, row)| {
                row.iter()
                    .enumerate()
                    .any(|(z, &count)| count > 0 && self.launches_left(TypeIndex::new(t), AzIndex::new(z)) == 0)
            })
    }

    /// Takes an instance the plan opened and then emptied out of the final fleet again.
    pub(super) fn close(&mut self, index: usize) {
        let Some(instance) = self.instances.get_mut(index) else { return };
        let (type_index, az, existing) = (instance.type_index, instance.az, instance.existing);
        instance.in_fleet = false;
        for lists in [&mut self.fleet_by_az, &mut self.accelerated_by_az] {
            if let Some(list) = lists.get_mut(az) {
                list.retain(|&i| i != index);
            }
        }
        self.fleet_size = self.fleet_size.saturating_sub(1);
        if existing.is_some() {
            // Idle again: the release phase releases it (or keeps it for MinInstanceCount).
            let instances = &self.instances;
            if let Some(list) = self.idle.get_mut(type_index).and_then(|row| row.get_mut(az)) {
                list.push(index);
                list.sort_by_key(|&i| std::cmp::Reverse((!instances[i].reserved, instances[i].rank)));
            }
            return;
        }
        // A launch that is no longer made.
        instance.released = true;
        self.launch_order.retain(|&i| i != index);
        if let Some(cell) = self.launched.get_mut(type_index).and_then(|row| row.get_mut(az)) {
            *cell = cell.saturating_sub(1);
        }
        self.hand_out_reservations(type_index, az);
    }

    /// The first `Reserved` launches of (type, AZ), in launch order, are the prepaid ones: after
    /// a launch left it (closed, or relaunched elsewhere) or came in.
    fn hand_out_reservations(&mut self, type_index: usize, az: usize) {
        let reserved = u64::from(self.problem.launch_limit(TypeIndex::new(type_index), AzIndex::new(az)).reserved);
        let mut seen = 0u64;
        for &i in &self.launch_order {
            let Some(launch) = self.instances.get_mut(i) else { continue };
            if launch.type_index == type_index && launch.az == az {
                launch.reserved = seen < reserved;
                seen += 1;
            }
        }
    }

    /// Moves launch `index` to AZ `to` with every copy on it (a relaunch of the balance pass,
    /// [`balance::lower_excess_and_relaunch`]); reservations are handed out again in both AZs.
    fn relaunch(&mut self, index: usize, to: usize) {
        let Some(instance) = self.instances.get(index) else { return };
        let (type_index, from) = (instance.type_index, instance.az);
        if instance.existing.is_some() || from == to || to >= self.problem.azs.len() {
            return;
        }
        for &(c, n) in &instance.copies {
            if let Some(row) = self.az_copies.get_mut(c) {
                balance::shift_copies(row, from, to, n);
            }
        }
        if let Some(row) = self.launched.get_mut(type_index) {
            row[from] = row[from].saturating_sub(1);
            row[to] += 1;
        }
        for lists in [&mut self.fleet_by_az, &mut self.accelerated_by_az] {
            if let Some(list) = lists.get_mut(from) {
                list.retain(|&i| i != index);
            }
            if let Some(list) = lists.get_mut(to) {
                list.push(index);
            }
        }
        if let Some(instance) = self.instances.get_mut(index) {
            instance.az = to;
        }
        self.hand_out_reservations(type_index, from);
        self.hand_out_reservations(type_index, to);
    }

    /// Gives the launches consecutive ids again (`new-1`, `new-2`, … skipping ids the fleet
    /// uses) after some were taken back.
    pub(super) fn renumber_launches(&mut self) {
        let mut number = 1u64;
        for position in 0..self.launch_order.len() {
            let id = loop {
                let candidate = format!("new-{number}");
                number += 1;
                if !self.existing_new_ids.contains(&candidate) {
                    break candidate;
                }
            };
            let index = self.launch_order[position];
            self.instances[index].id = id;
        }
        self.next_launch_number = number;
    }

    /// Moves one new copy of `d` from instance `from` to `target`.
    /// `opened` is the instance an earlier copy of the same set opened (all `Open` targets of a
    /// set are that one instance).
    fn relocate(
        &mut self,
        d: usize,
        from: usize,
        target: Target,
        opened: &mut Option<usize>,
        new_copies: &mut Vec<NewCopies>,
    ) {
        let to = match (target, *opened) {
            (Target::Instance(index), _) => index,
            (Target::Open(..), Some(index)) => index,
            (Target::Open(type_index, az), None) => match self.open(type_index, az) {
                Some(index) => {
                    *opened = Some(index);
                    index
                }
                None => return,
            },
        };
        if new_copies.len() < self.instances.len() {
            new_copies.resize(self.instances.len(), SmallVec::new());
        }
        let (Some(_), Some(need_to)) = (self.need_on(d, from), self.need_on(d, to)) else { return };
        self.unplace_one(d, from);
        add_count(&mut new_copies[from], d, -1);
        self.place(d, to, 1, &need_to);
        add_count(&mut new_copies[to], d, 1);
        self.readmit_accelerated(from);
    }

    /// Takes one new copy of `d` off instance `from` (the last placement record there loses it).
    pub(super) fn unplace_one(&mut self, d: usize, from: usize) {
        let Some(need) = self.need_on(d, from) else { return };
        let Some(source) = self.instances.get_mut(from) else { return };
        source.remove_one(d, &need);
        let from_az = source.az;
        if let Some(cell) = self.az_copies.get_mut(d).and_then(|row| row.get_mut(from_az)) {
            *cell = cell.saturating_sub(1);
        }
        if let Some(entry) = self.placements.iter_mut().rev().find(|(c, i, n)| *c == d && *i == from && *n > 0) {
            entry.2 -= 1;
        }
    }

    /// Puts an instance whose accelerators were freed back on its AZ's list of instances that
    /// may have a free accelerator (placement scans drop instances found full).
    pub(super) fn readmit_accelerated(&mut self, index: usize) {
        if self.free_accelerators(index) == 0 {
            return;
        }
        let az = self.instances[index].az;
        if let Some(list) = self.accelerated_by_az.get_mut(az) {
            if !list.contains(&index) {
                list.push(index);
            }
        }
    }
}

/// Adds `delta` to the count of `component` in `list` (dropping it at zero).
fn add_count(list: &mut NewCopies, component: usize, delta: i64) {
    match list.iter().position(|&(c, _)| c == component) {
        Some(pos) => {
            let count = (i64::from(list[pos].1) + delta).max(0);
            if count == 0 {
                list.remove(pos);
            } else {
                list[pos].1 = u32::try_from(count).unwrap_or(u32::MAX);
            }
        }
        None if delta > 0 => list.push((component, u32::try_from(delta).unwrap_or(u32::MAX))),
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::{objective, FinalFleet};
    use crate::model::ScenarioBuilder;
    use crate::problem::Problem;

    /// One AZ of 4-accelerator instances, at most two: x (2 accelerators, 2 copies), y (1) and
    /// z (3, 1 copy).
    fn problem() -> Problem {
        let scenario = ScenarioBuilder::new(["a"])
            .pool("ml.g6.12xlarge", 1)
            .instance_limits(0, Some(2))
            .component("x", 2, 2, 1.0, 1024)
            .component("y", 1, 1, 1.0, 1024)
            .component("z", 1, 3, 1.0, 1024)
            .strategy("x", crate::PlacementStrategy::Binpack)
            .build()
            .unwrap();
        Problem::new(&scenario).unwrap()
    }

    /// A: x + y (1 accelerator free), B: x (2 free); z needs 3 free accelerators.
    fn stuck(problem: &Problem) -> (Greedy<'_>, [usize; 2]) {
        let mut planner = Greedy::new(problem);
        planner.index_fleet();
        let (x, y) = (0, 1);
        let first = planner.open(TypeIndex::new(0), AzIndex::new(0)).unwrap();
        let second = planner.open(TypeIndex::new(0), AzIndex::new(0)).unwrap();
        for (component, instance) in [(x, first), (y, first), (x, second)] {
            let need = planner.need_on(component, instance).unwrap();
            planner.place(component, instance, 1, &need);
        }
        (planner, [first, second])
    }

    #[test]
    fn repair_relocates_a_new_copy_to_make_room() {
        let problem = problem();
        let (mut planner, [first, second]) = stuck(&problem);
        assert_eq!(planner.budget(), 0, "MaxInstanceCount is reached: nothing more can open");
        assert_eq!(planner.repair(&[2, 0, 1]), 1);
        // x moved from the first instance to the second (now full); z took its place.
        assert_eq!(planner.instances[first].copies.as_slice(), &[(1, 1), (2, 1)]);
        assert_eq!(planner.instances[second].copies.as_slice(), &[(0, 2)]);
        let fleet = planner.final_fleet();
        let (applied, violations) = FinalFleet::apply(&problem, &planner.into_actions());
        assert!(violations.is_empty(), "{violations:?}");
        assert_eq!(fleet, applied);
        assert_eq!(objective(&problem, &applied).placed_copies, 4);
    }

    #[test]
    fn the_final_repair_moves_more_than_two_copies_for_one() {
        // Four 4-accelerator instances at most, each holding three 1-accelerator copies of s;
        // b needs a whole instance. Only moving all three copies off one instance, one onto
        // each of the others, makes room.
        let scenario = ScenarioBuilder::new(["a"])
            .pool("ml.g6.12xlarge", 1)
            .instance_limits(0, Some(4))
            .component("s", 12, 1, 1.0, 1024)
            .component("b", 1, 4, 1.0, 1024)
            .build()
            .unwrap();
        let problem = Problem::new(&scenario).unwrap();
        let mut planner = Greedy::new(&problem);
        planner.index_fleet();
        for _ in 0..4 {
            let instance = planner.open(TypeIndex::new(0), AzIndex::new(0)).unwrap();
            let need = planner.need_on(0, instance).unwrap();
            planner.place(0, instance, 3, &need);
        }
        let stuck = planner.clone();
        assert_eq!(planner.repair(&[1, 0]), 0, "one or two moves do not make room");
        let mut planner = stuck;
        planner.repair_many = true;
        assert_eq!(planner.repair(&[1, 0]), 1);
        let holding_b = planner.instances.iter().filter(|i| i.copies.as_slice() == [(1, 1)]).count();
        assert_eq!(holding_b, 1, "one instance emptied for b");
        let (applied, violations) = FinalFleet::apply(&problem, &planner.into_actions());
        assert!(violations.is_empty(), "{violations:?}");
        assert_eq!(objective(&problem, &applied).placed_copies, 13);
    }

    #[test]
    fn repair_never_moves_an_existing_copy() {
        // The same state, but the blocking x on the first instance is an existing copy.
        let scenario = ScenarioBuilder::new(["a"])
            .pool("ml.g6.12xlarge", 1)
            .instance_limits(0, Some(2))
            .fleet_instance("i-1", "ml.g6.12xlarge", "a", false)
            .fleet_instance("i-2", "ml.g6.12xlarge", "a", false)
            .fleet_copies("x", "i-1", 1)
            .fleet_copies("y", "i-1", 1)
            .fleet_copies("x", "i-2", 1)
            .component("x", 2, 2, 1.0, 1024)
            .component("y", 1, 1, 1.0, 1024)
            .component("z", 1, 3, 1.0, 1024)
            .build()
            .unwrap();
        let problem = Problem::new(&scenario).unwrap();
        let mut planner = Greedy::new(&problem);
        planner.index_fleet();
        assert_eq!(planner.repair(&[2, 0, 1]), 0);
        assert!(planner.placements.is_empty());
    }

    #[test]
    fn eliminate_closes_a_launch_whose_copies_fit_elsewhere_and_renumbers() {
        let problem = problem();
        let mut planner = Greedy::new(&problem);
        planner.index_fleet();
        // Two launches holding one y each: one instance holds both.
        let first = planner.open(TypeIndex::new(0), AzIndex::new(0)).unwrap();
        let second = planner.open(TypeIndex::new(0), AzIndex::new(0)).unwrap();
        for instance in [first, second] {
            let need = planner.need_on(1, instance).unwrap();
            planner.place(1, instance, 1, &need);
        }
        assert_eq!(planner.eliminate(), 1);
        assert_eq!(planner.fleet_size, 1);
        assert_eq!(planner.launch_order.len(), 1);
        let kept = planner.launch_order[0];
        assert_eq!(planner.instances[kept].id, "new-1");
        assert_eq!(planner.instances[kept].copies.as_slice(), &[(1, 2)]);
        let fleet = planner.final_fleet();
        let (applied, violations) = FinalFleet::apply(&problem, &planner.into_actions());
        assert!(violations.is_empty(), "{violations:?}");
        assert_eq!(fleet, applied);
        assert_eq!(objective(&problem, &applied).instances_of_priority(1), 1);
    }

    /// MaxInstanceCount 2 is spent on two launches holding one small copy each; the big copy
    /// that needs a whole instance gets one once the small copies share a launch.
    #[test]
    fn refill_after_emptying_opens_the_freed_place_for_a_missing_copy() {
        let scenario = ScenarioBuilder::new(["a"])
            .pool("ml.g6.12xlarge", 1)
            .instance_limits(0, Some(2))
            .component("small", 2, 1, 1.0, 1024)
            .component("big", 1, 4, 1.0, 1024)
            .build()
            .unwrap();
        let problem = Problem::new(&scenario).unwrap();
        let small = problem.components.iter().position(|c| c.name == "small").unwrap();
        let big = problem.components.iter().position(|c| c.name == "big").unwrap();
        let mut planner = Greedy::new(&problem);
        planner.index_fleet();
        for _ in 0..2 {
            let instance = planner.open(TypeIndex::new(0), AzIndex::new(0)).unwrap();
            let need = planner.need_on(small, instance).unwrap();
            planner.place(small, instance, 1, &need);
        }
        assert_eq!(planner.missing_copies(), 1);
        assert_eq!(planner.budget(), 0, "no opening left for the big copy");
        let refilled = planner.refilled_after_emptying(&[big, small], &Limits::new()).expect("one copy more");
        assert_eq!(refilled.missing_copies(), 0);
        assert_eq!(refilled.fleet_size, 2);
        let (applied, violations) = FinalFleet::apply(&problem, &refilled.into_actions());
        assert!(violations.is_empty(), "{violations:?}");
        assert_eq!(objective(&problem, &applied).placed_copies, 3);
    }

    #[test]
    fn add_count_drops_entries_at_zero() {
        let mut list: NewCopies = SmallVec::new();
        add_count(&mut list, 3, 2);
        add_count(&mut list, 3, -1);
        assert_eq!(list.as_slice(), &[(3, 1)]);
        add_count(&mut list, 3, -1);
        assert!(list.is_empty());
        add_count(&mut list, 4, -1);
        assert!(list.is_empty());
    }
}
