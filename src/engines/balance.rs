//! Lowering balance excess (L2 of docs/contract.md §2.2) on a final fleet whose instances are
//! fixed: new copies move between AZs, every instance stays, so L1, L3 and L4 do not change.
//! One pass shared by the planners (greedy on its own state, exact on its plan).
//!
//! A move is an **ejection chain**: a new copy of a component `c₀` over its MaxImbalance leaves
//! an instance in one of its fullest AZs for an instance `y₁` in an emptier AZ; when `y₁` has no
//! room, a new copy of another component `c₁` leaves `y₁` (making room) for an instance `y₂` in
//! any other AZ, and so on, until a copy lands on free room (the room `c₀` left behind counts,
//! which makes a two-way swap a chain of length two). A chain is taken when it lowers
//! (total excess, Σ over balanced components and AZs of copies²) lexicographically, and every
//! prefix of it would too: a displaced copy may only move where its own component's excess
//! does not grow more than the chain has already won. The second term, the sum of squares,
//! falls with a move from a fuller to an emptier AZ; it steers the pass (and lets it go on) when
//! one move of a component with several fullest AZs cannot lower its excess yet. Every chain
//! lowers the pair, so the pass ends; its work is bounded (`work`: instance checks).
//!
//! When no chain is left, a **swap** shares out anew the new copies of two instances in
//! different AZs (every split of the pair's copies per component when there are at most 512,
//! else trading all of them; a component moves only between types that both take it), the pair
//! and split that lower the pair of terms most (`Chains::any_swap`): it gives one large copy's room in a crowded AZ to several small copies
//! short there, which no chain can, since the large copy's move alone makes its own balance
//! worse. Chains run again after each swap.
//!
//! When not every copy could be placed, an **exchange** also counts: a new copy of one component
//! is left out (dropped) and an unplaced copy of another placed instead, so the copies placed
//! (L1) stay the same. Which copies are left out decides the balance: dropping a copy in a
//! component's fullest AZ, or placing one in its emptiest, lowers its excess. The copy placed
//! lands like any moved copy (onto room, or ejecting others, which move on by the same chains);
//! in an exchange driven by the copy placed, the one dropped is a copy it ejects. A chain holds
//! as many drops as placements from the unplaced copies, and never leaves an instance empty.
//!
//! When nothing of that is left, **relaunches** ([`lower_excess_and_relaunch`]): a launch of the
//! plan moves to another AZ with every copy on it, where its type may still launch, when that
//! lowers the same pair of terms; the chains then run again. The instance count per type stays
//! (L3), and the cost (L4) never rises: a move is taken only where the reservations handed out
//! again per (type, AZ) in launch order cover at least as many launches as before. A chain moves one copy at a
//! time and each step must pay for itself, so it cannot carry a whole instance's copies, of
//! several components, out of an AZ that holds too many of each (`hard-29-022`: greedy's excess
//! 85 → 33).

use std::cmp::Reverse;
use std::collections::BTreeMap;

use smallvec::SmallVec;

use crate::engines::limits::Limits;
use crate::fleet::balance_excess;
use crate::index::{AzIndex, TypeIndex};
use crate::problem::{Problem, Resources};

/// Most copies one chain displaces after the first (a chain moves at most this many + 1).
const MAX_DISPLACED: usize = 3;

/// Most instance checks the search for one insertion chain may do.
const INSERT_CHAIN_WORK: u64 = 20_000;

/// Most copies an insertion chain ejects from one instance at once.
const MAX_EJECTED: usize = 8;

/// Most instance checks the search for one chain may do.
const CHAIN_WORK: u64 = 4_000;

/// Most instance checks the search for one swap may do (a pair looked at is one, each count
/// of a component weighed for it one more).
const SWAP_WORK: u64 = 50_000;

/// Most splits of a pair's copies a swap tries one by one (beyond, only trading everything).
const SWAP_SPLITS: u64 = 512;

/// Splits tried per instance check charged to the pass.
const SPLITS_PER_CHECK: u64 = 16;

/// Instance checks between two looks at the limits of a [`Budget`] (a look reads the clock).
const CHECKS_PER_LOOK: u64 = 1_024;

/// What a pass may spend: instance checks, and the caller's limits, which end it early (the
/// deadline or cancellation, looked at every [`CHECKS_PER_LOOK`] checks). A pass that stops
/// early returns the chains it completed: each is whole, so the result is as valid as a
/// finished pass's.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget<'l> {
    /// Instance checks left.
    pub(crate) checks: u64,
    limits: Option<&'l Limits>,
}

impl<'l> Budget<'l> {
    /// At most `checks` instance checks, no other limit.
    pub(crate) fn checks(checks: u64) -> Self {
        Budget { checks, limits: None }
    }

    /// This budget, also ended by `limits`' deadline and cancellation.
    pub(crate) fn until(self, limits: &'l Limits) -> Self {
        Budget { limits: Some(limits), ..self }
    }

    /// Whether the limits say stop (the checks aside).
    pub(crate) fn stopped(&self) -> bool {
        self.limits.is_some_and(|limits| limits.stop_now().is_some())
    }

    /// At most `checks` of this budget's checks, under the same limits.
    fn slice(&self, checks: u64) -> Self {
        Budget { checks: self.checks.min(checks), ..*self }
    }
}

/// One instance of the final fleet as the pass sees it.
#[derive(Debug, Clone)]
pub(crate) struct Holder {
    /// Instance type.
    pub(crate) type_index: usize,
    /// AZ.
    pub(crate) az: usize,
    /// May receive new copies (not draining).
    pub(crate) open: bool,
    /// A launch of the plan: it may move to another AZ with its copies ([`lower_excess_and_relaunch`]).
    pub(crate) launch: bool,
    /// Resources its copies use now.
    pub(crate) used: Resources,
    /// New copies on it per component (the only copies that may move), sorted by component.
    pub(crate) new_copies: SmallVec<[(usize, u32); 4]>,
}

/// One new copy of `component` moved from holder `from` to holder `to`; `from` `None`: an
/// unplaced copy placed, `to` `None`: a placed copy dropped (left unplaced).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Move {
    pub(crate) component: usize,
    pub(crate) from: Option<usize>,
    pub(crate) to: Option<usize>,
}

/// The holder index of the unplaced copies in a chain's steps (no holder has it).
const UNPLACED: usize = usize::MAX;

/// One step of a chain as it is searched: [`Move`] with [`UNPLACED`] for `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Step {
    component: usize,
    from: usize,
    to: usize,
}

impl Step {
    fn to_move(self) -> Move {
        let holder = |index: usize| (index != UNPLACED).then_some(index);
        Move { component: self.component, from: holder(self.from), to: holder(self.to) }
    }
}

/// The components with AvailabilityZoneBalance sorted by name: the order the balance passes
/// try them in (names, not input positions, decide).
pub(crate) fn balanced_by_name(problem: &Problem) -> Vec<usize> {
    let mut order: Vec<usize> = (0..problem.components().len())
        .filter(|&c| problem.components().get(c).is_some_and(|component| component.max_imbalance.is_some()))
        .collect();
    order.sort_by(|&a, &b| problem.components()[a].name.cmp(&problem.components()[b].name));
    order
}

/// Lowers the total balance excess of `holders` by ejection chains (see the module text).
/// `counts[c][z]`: every copy of component `c` in AZ `z` in the final fleet (existing ones too);
/// `holders` and `counts` are updated. `order`: the balanced components in the order they are
/// tried ([`balanced_by_name`]). `missing[c]`: unplaced copies of `c` that may still be placed
/// (none for a component that scales in); all zero, or empty, makes no exchange. Returns the
/// moves made, in an order in which each lands on room (drops first; a chain closing on the
/// instance its first copy left is the exception: that copy leaves first). At most `work`'s
/// instance checks, and not past its limits; also returns the checks left.
fn lower_excess_within(
    problem: &Problem,
    holders: &mut [Holder],
    counts: &mut [Vec<u64>],
    order: &[usize],
    missing: &[u64],
    work: Budget<'_>,
) -> (Vec<Move>, u64) {
    if problem.azs().len() < 2 {
        return (Vec::new(), work.checks);
    }
    let Some(mut pass) = Chains::new(problem, holders, counts, missing, work) else { return (Vec::new(), work.checks) };
    let mut moves = Vec::new();
    // Moves first, until none is left; then one exchange (which changes which copies are
    // placed) and moves again, while exchanges are found.
    loop {
        // Shallow chains first: they are cheap, and a deeper search only runs when none is left.
        let mut depth = 0;
        while depth <= MAX_DISPLACED && pass.work > 0 {
            let mut moved = false;
            for &c in order {
                while pass.work > 0 && pass.standing(c) > (0, 0) {
                    match pass.chain_for(c, depth) {
                        Some(chain) => {
                            moves.extend(chain.into_iter().map(Step::to_move));
                            moved = true;
                        }
                        None => break,
                    }
                }
            }
            depth = if moved { 0 } else { depth + 1 };
        }
        match pass.any_exchange(order).or_else(|| pass.any_swap()) {
            Some(chain) => moves.extend(chain.into_iter().map(Step::to_move)),
            None => break,
        }
    }
    (moves, pass.work)
}

/// A launch of the plan (holder `holder`) moved to AZ `to` with every copy on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Relaunch {
    pub(crate) holder: usize,
    pub(crate) to: usize,
}

/// What [`lower_excess_and_relaunch`] did: the copies moved (as [`lower_excess_within`] returns them)
/// and the launches moved to another AZ. A caller carries out both: the moves between its
/// instances, then each relaunched instance's AZ, its reservations handed out again per
/// (type, AZ) in launch order.
#[derive(Debug, Default)]
pub(crate) struct Lowered {
    pub(crate) moves: Vec<Move>,
    pub(crate) relaunches: Vec<Relaunch>,
}

/// Most relaunches one pass makes (each lowers the pair of terms, so the pass ends anyway; this
/// bounds the chains run after them).
const MAX_RELAUNCHES: usize = 256;

/// [`lower_excess_within`], then, while it leaves excess, a relaunch (module text) and the chains again.
/// Same arguments; `holders` and `counts` are updated (a relaunched holder's `az` too).
pub(crate) fn lower_excess_and_relaunch(
    problem: &Problem,
    holders: &mut [Holder],
    counts: &mut [Vec<u64>],
    order: &[usize],
    missing: &[u64],
    work: Budget<'_>,
) -> Lowered {
    let mut missing = missing.to_vec();
    let mut lowered = Lowered::default();
    let (mut chains, _) = lower_excess_within(problem, holders, counts, order, &missing, work);
    // The relaunches and the chains after them have a budget of their own, as large as the first
    // chains': those often spend theirs in full (the last chains tried find nothing).
    let mut left = work.checks;
    loop {
        // Exchanges change which copies are unplaced: the next chains start from there.
        for step in &chains {
            let Some(left) = missing.get_mut(step.component) else { continue };
            match (step.from, step.to) {
                (None, Some(_)) => *left = left.saturating_sub(1),
                (Some(_), None) => *left += 1,
                _ => {}
            }
        }
        lowered.moves.append(&mut chains);
        // A search looks at every launch in every other AZ.
        let search = (holders.len() as u64).saturating_mul(problem.azs().len() as u64);
        if lowered.relaunches.len() >= MAX_RELAUNCHES || left < search || work.stopped() {
            break;
        }
        left -= search;
        let Some(relaunch) = best_relaunch(problem, holders, counts) else { break };
        if let Some(holder) = holders.get_mut(relaunch.holder) {
            for &(c, n) in &holder.new_copies {
                if let Some(row) = counts.get_mut(c) {
                    shift_copies(row, holder.az, relaunch.to, n);
                }
            }
            holder.az = relaunch.to;
        }
        lowered.relaunches.push(relaunch);
        (chains, left) =
            lower_excess_within(problem, holders, counts, order, &missing, Budget { checks: left, ..work });
    }
    lowered
}

/// The relaunch that lowers (total excess, copies to move to the best balance) most, if any:
/// launches in holder order, AZs in index order, the first among equals. A launch may go where
/// its type's launch limit has room and the reservations cover at least as many launches as before (its
/// AZ has more launches of the type than reservations, or the other AZ has a reservation left).
fn best_relaunch(problem: &Problem, holders: &[Holder], counts: &[Vec<u64>]) -> Option<Relaunch> {
    let az_count = problem.azs().len();
    let mut launches: BTreeMap<(usize, usize), u32> = BTreeMap::new();
    for holder in holders.iter().filter(|holder| holder.launch) {
        *launches.entry((holder.type_index, holder.az)).or_insert(0) += 1;
    }
    let launched = |t: usize, z: usize| launches.get(&(t, z)).copied().unwrap_or(0);
    let max_imbalance = |c: usize| problem.components().get(c).and_then(|component| component.max_imbalance);
    let mut best: Option<(Gain, Relaunch)> = None;
    for (index, holder) in holders.iter().enumerate() {
        if !holder.launch || !holder.open || holder.new_copies.is_empty() {
            continue;
        }
        if !holder.new_copies.iter().any(|&(c, _)| max_imbalance(c).is_some()) {
            continue;
        }
        let (t, from) = (holder.type_index, holder.az);
        for to in (0..az_count).filter(|&to| to != from) {
            let reserved = |z: usize| problem.launch_limit(TypeIndex::new(t), AzIndex::new(z)).reserved;
            let covered = launched(t, from) > reserved(from) || launched(t, to) < reserved(to);
            if !launch_room(problem, &launches, t, to) || !covered {
                continue;
            }
            let mut gain: Gain = (0, 0);
            for &(c, n) in &holder.new_copies {
                let Some(row) = counts.get(c) else { continue };
                let before = standing(max_imbalance(c), row);
                let mut after_row = row.clone();
                shift_copies(&mut after_row, from, to, n);
                let after = standing(max_imbalance(c), &after_row);
                gain = (gain.0 + after.0 - before.0, gain.1 + after.1 - before.1);
            }
            if gain < (0, 0) && best.as_ref().is_none_or(|(current, _)| gain < *current) {
                best = Some((gain, Relaunch { holder: index, to }));
            }
        }
    }
    best.map(|(_, relaunch)| relaunch)
}

/// (excess, copies still to move to reach its best balance) of a component with copies per AZ
/// `row` and MaxImbalance `limit`; (0, 0) without one.
fn standing(limit: Option<u32>, row: &[u64]) -> Gain {
    let Some(limit) = limit else { return (0, 0) };
    (balance_excess(row, Some(limit)) as i64, moves_to_balance(row, limit) as i64)
}

/// Whether (type `t`, AZ `z`) may launch once more beside `launches` (launches per (type, AZ)):
/// its launch limit has room.
pub(crate) fn launch_room(problem: &Problem, launches: &BTreeMap<(usize, usize), u32>, t: usize, z: usize) -> bool {
    let limit = problem.launch_limit(TypeIndex::new(t), AzIndex::new(z));
    limit.total().is_none_or(|total| launches.get(&(t, z)).copied().unwrap_or(0) < total)
}

/// `count` copies moved from AZ `from` to AZ `to` in one component's copies per AZ.
pub(crate) fn shift_copies(row: &mut [u64], from: usize, to: usize, count: u32) {
    if let Some(cell) = row.get_mut(from) {
        *cell = cell.saturating_sub(u64::from(count));
    }
    if let Some(cell) = row.get_mut(to) {
        *cell += u64::from(count);
    }
}

/// Places missing copies (`missing[c]` per component) on `holders` by insertion chains: an
/// unplaced copy lands on an instance of some AZ, onto room or ejecting one or two new copies
/// there, each of which moves on to another instance (its own AZ first, then any other, the AZ
/// best for its component's balance first), up to [`MAX_DISPLACED`] ejections deep, until a
/// copy lands on room. Every chain places one copy more and drops none, so L1 rises by one per
/// chain; balance may get worse (L1 comes first, docs/contract.md §2.2) and is left to
/// [`lower_excess_and_relaunch`] afterwards. Components in name order, shallow chains first; at most `work`'s
/// instance checks. `holders` and `counts` are updated; returns the moves made, in an order in
/// which each lands on room.
pub(crate) fn place_missing(
    problem: &Problem,
    holders: &mut [Holder],
    counts: &mut [Vec<u64>],
    missing: &[u64],
    work: Budget<'_>,
) -> Vec<Move> {
    place_missing_within(problem, holders, counts, missing, None, work)
}

/// [`place_missing`], every copy in AZ `within` when it is given: the copies land there and the
/// copies they eject move on within it, so every component keeps its copies in the other AZs
/// and balance (L2) only changes by the copies placed in `within`.
pub(crate) fn place_missing_within(
    problem: &Problem,
    holders: &mut [Holder],
    counts: &mut [Vec<u64>],
    missing: &[u64],
    within: Option<usize>,
    work: Budget<'_>,
) -> Vec<Move> {
    let mut order: Vec<usize> = (0..problem.components().len()).collect();
    order.sort_by(|&a, &b| problem.components()[a].name.cmp(&problem.components()[b].name));
    let Some(mut pass) = Chains::new(problem, holders, counts, missing, work) else { return Vec::new() };
    pass.inserting = true;
    pass.within = within;
    let az_count = pass.by_az.len();
    let mut moves = Vec::new();
    let mut depth = 0;
    'deepen: while depth <= MAX_DISPLACED && pass.work > 0 {
        for &c in &order {
            if pass.missing.get(c).copied().unwrap_or(0) == 0 {
                continue;
            }
            pass.budget = INSERT_CHAIN_WORK;
            // The AZ where one more copy is best for the component's balance first.
            let mut azs: Vec<usize> = (0..az_count).filter(|&z| within.is_none_or(|only| only == z)).collect();
            azs.sort_by_key(|&z| (pass.gain_of(c, az_count, z), pass.count(c, z), pass.az_rank.get(z).copied()));
            for b in azs {
                if pass.exhausted() {
                    break;
                }
                if pass.land(c, UNPLACED, b, (0, 0), depth).is_some() {
                    let mut chain = std::mem::take(&mut pass.chain);
                    chain.reverse();
                    moves.extend(chain.into_iter().map(Step::to_move));
                    depth = 0;
                    continue 'deepen;
                }
            }
        }
        depth += 1;
    }
    moves
}

/// Empties holder `e` by insertion chains kept within its AZ ([`place_missing_within`]): its new
/// copies land on the other holders there, tried into the rest alone (`None` in `openings`) and
/// with one more empty holder of a type (`Some(type)`, a launch the caller makes), in the order
/// given; an opening counts only when it receives a copy. Each try may do `chain_work` instance
/// checks and is charged them all from `work`. On success `holders` (the opened holder pushed
/// last) and `counts` hold the result, `e` closed and empty, and the moves come back (the
/// emptied copies' as moves from `e`) with the type opened; otherwise nothing changes.
pub(crate) fn empty_holder(
    problem: &Problem,
    holders: &mut Vec<Holder>,
    counts: &mut [Vec<u64>],
    e: usize,
    openings: &[Option<usize>],
    work: &mut Budget<'_>,
    chain_work: u64,
) -> Option<(Vec<Move>, Option<usize>)> {
    let holder = holders.get(e)?;
    let az = holder.az;
    let mut missing = vec![0u64; problem.components().len()];
    let mut emptied_counts = counts.to_vec();
    for &(c, n) in &holder.new_copies {
        if let (Some(left), Some(cell)) =
            (missing.get_mut(c), emptied_counts.get_mut(c).and_then(|row| row.get_mut(az)))
        {
            *left += u64::from(n);
            *cell = cell.saturating_sub(u64::from(n));
        }
    }
    let evicted: u64 = missing.iter().sum();
    let mut emptied = holders.clone();
    if let Some(holder) = emptied.get_mut(e) {
        holder.open = false;
        holder.new_copies.clear();
        holder.used = Resources::ZERO;
    }
    for &opening in openings {
        if work.checks == 0 || work.stopped() {
            break;
        }
        let mut trial = emptied.clone();
        let mut trial_counts = emptied_counts.clone();
        if let Some(t) = opening {
            trial.push(Holder {
                type_index: t,
                az,
                open: true,
                launch: true,
                used: Resources::ZERO,
                new_copies: SmallVec::new(),
            });
        }
        let budget = work.slice(chain_work);
        let found = place_missing_within(problem, &mut trial, &mut trial_counts, &missing, Some(az), budget);
        work.checks -= budget.checks;
        if found.iter().filter(|step| step.from.is_none()).count() as u64 != evicted {
            continue;
        }
        // An opening that received nothing is the plain case, which was tried on its own.
        if opening.is_some() && trial.last().is_some_and(|holder| holder.new_copies.is_empty()) {
            continue;
        }
        *holders = trial;
        counts.clone_from_slice(&trial_counts);
        let moves = found.into_iter().map(|step| Move { from: step.from.or(Some(e)), ..step }).collect();
        return Some((moves, opening));
    }
    None
}

/// One component's copies on a pair of holders a swap shares out ([`Chains::best_split`]).
struct Shared {
    component: usize,
    /// Copies the pair holds.
    total: u32,
    /// Copies on the first holder now.
    had: u32,
    /// What one copy needs on the first holder's type and the second's (`None`: not allowed).
    need_x: Option<Resources>,
    need_y: Option<Resources>,
}

impl Shared {
    /// Whether its copies may go to either holder.
    fn movable(&self) -> bool {
        self.need_x.is_some() && self.need_y.is_some()
    }
}

/// How a swap shares out a pair of holders' copies: (component, copies on the first holder
/// after, copies there before).
type Split = Vec<(usize, u32, u32)>;

/// The copies that move when the first of two sides (`first`, `second`: holders or AZs) goes
/// from `had` copies to `now`: (from, to, how many).
fn shift_between(had: u32, now: u32, first: usize, second: usize) -> (usize, usize, u32) {
    if had > now {
        (first, second, had - now)
    } else {
        (second, first, now - had)
    }
}

/// A holder whose signature is not computed (yet, or since it changed).
const UNSIGNED: u32 = u32::MAX;

/// What makes two holders alike for the chains: type, load and new copies.
type Signature = (usize, Resources, SmallVec<[(usize, u32); 4]>);

/// Change of (total excess, copies still to move to reach the best balance) a chain makes;
/// lexicographic.
type Gain = (i64, i64);

/// The pass's state: the holders and counts it updates, and the chain being built.
struct Chains<'a> {
    problem: &'a Problem,
    holders: &'a mut [Holder],
    counts: &'a mut [Vec<u64>],
    /// `[type][component]`: what one new copy needs there, where it may be placed.
    need_on: Vec<Vec<Option<Resources>>>,
    capacity: Vec<Resources>,
    by_az: Vec<Vec<usize>>,
    /// Unplaced copies per component that may still be placed (updated as the chain grows).
    missing: Vec<u64>,
    /// Every component, by name: the copies an exchange may place, in the order tried.
    partners: Vec<usize>,
    /// Each component's place in `partners` and each AZ's in name order: the insertion chains'
    /// tie-breaks (names, not input positions, decide).
    component_rank: Vec<usize>,
    az_rank: Vec<usize>,
    /// The chain must lower the total excess itself (exchanges: the second term alone does not
    /// justify changing which copies are placed).
    strict: bool,
    /// Insertion chains ([`place_missing`]): a chain closes having placed one copy more, and a
    /// displaced copy may go to any instance, in its AZ or another, whatever the balance.
    inserting: bool,
    /// Insertion chains kept within one AZ ([`place_missing_within`]).
    within: Option<usize>,
    /// Instance checks left for the pass (zero once `limits` say stop).
    work: u64,
    /// The caller's limits, looked at every [`CHECKS_PER_LOOK`] checks.
    limits: Option<&'a Limits>,
    /// Instance checks left for the chain being searched (a search that finds nothing must not
    /// spend the whole pass's work).
    budget: u64,
    /// The steps of the chain being built (applied to `holders`/`counts` as it grows).
    chain: Vec<Step>,
    /// Each holder's signature (type, load, new copies), interned: alike holders share one.
    signature: Vec<u32>,
    signature_ids: BTreeMap<Signature, u32>,
    /// Per signature, the [`Self::distinct`] call that last kept one (calls are numbered from 1).
    seen_mark: Vec<u64>,
    generation: u64,
}

impl<'a> Chains<'a> {
    /// The pass over `holders` (`None` when there are none); see [`lower_excess_within`] for the rest.
    fn new(
        problem: &'a Problem,
        holders: &'a mut [Holder],
        counts: &'a mut [Vec<u64>],
        missing: &[u64],
        work: Budget<'a>,
    ) -> Option<Self> {
        if holders.is_empty() || work.stopped() {
            return None;
        }
        let need_on: Vec<Vec<Option<Resources>>> = (0..problem.instance_types().len())
            .map(|t| {
                problem
                    .components()
                    .iter()
                    .map(|component| component.placement_requirement(problem, t).map(|r| r.resources))
                    .collect()
            })
            .collect();
        let capacity: Vec<Resources> = problem.instance_types().iter().map(|info| info.capacity).collect();
        let mut by_az: Vec<Vec<usize>> = vec![Vec::new(); problem.azs().len()];
        for (index, holder) in holders.iter().enumerate() {
            if let Some(list) = by_az.get_mut(holder.az) {
                list.push(index);
            }
        }
        let mut missing: Vec<u64> = missing.to_vec();
        missing.resize(problem.components().len(), 0);
        let holders_len = holders.len();
        let mut partners: Vec<usize> = (0..problem.components().len()).collect();
        partners.sort_by(|&a, &b| problem.components()[a].name.cmp(&problem.components()[b].name));
        let mut component_rank = vec![0; partners.len()];
        for (rank, &c) in partners.iter().enumerate() {
            component_rank[c] = rank;
        }
        let mut azs: Vec<usize> = (0..problem.azs().len()).collect();
        azs.sort_by(|&a, &b| problem.azs()[a].cmp(&problem.azs()[b]));
        let mut az_rank = vec![0; azs.len()];
        for (rank, &z) in azs.iter().enumerate() {
            az_rank[z] = rank;
        }
        Some(Chains {
            problem,
            holders,
            counts,
            need_on,
            capacity,
            by_az,
            missing,
            partners,
            component_rank,
            az_rank,
            strict: false,
            inserting: false,
            within: None,
            work: work.checks,
            limits: work.limits,
            budget: 0,
            chain: Vec::new(),
            signature: vec![UNSIGNED; holders_len],
            signature_ids: BTreeMap::new(),
            seen_mark: Vec::new(),
            generation: 0,
        })
    }

    fn max_imbalance(&self, c: usize) -> Option<u32> {
        self.problem.components().get(c).and_then(|component| component.max_imbalance)
    }

    fn count(&self, c: usize, z: usize) -> u64 {
        self.counts.get(c).and_then(|row| row.get(z)).copied().unwrap_or(0)
    }

    /// (excess, copies still to move to reach its best balance) of component `c` now.
    fn standing(&self, c: usize) -> Gain {
        standing(self.max_imbalance(c), self.counts.get(c).map_or(&[][..], Vec::as_slice))
    }

    /// What moving one copy of `c` from AZ `a` to AZ `b` changes in [`Self::standing`].
    fn gain_of(&mut self, c: usize, a: usize, b: usize) -> Gain {
        self.gain_of_moving(c, a, b, 1)
    }

    /// What moving `times` copies of `c` from AZ `a` to AZ `b` changes in [`Self::standing`].
    fn gain_of_moving(&mut self, c: usize, a: usize, b: usize, times: u32) -> Gain {
        // No copies to move from a real AZ with fewer (a shift there would not undo).
        if self.max_imbalance(c).is_none() || (a < self.by_az.len() && self.count(c, a) < u64::from(times)) {
            return (0, 0);
        }
        let before = self.standing(c);
        for _ in 0..times {
            self.shift_count(c, a, b);
        }
        let after = self.standing(c);
        for _ in 0..times {
            self.shift_count(c, b, a);
        }
        (after.0 - before.0, after.1 - before.1)
    }

    fn shift_count(&mut self, c: usize, a: usize, b: usize) {
        let Some(row) = self.counts.get_mut(c) else { return };
        if let Some(cell) = row.get_mut(a) {
            *cell = cell.saturating_sub(1);
        }
        if let Some(cell) = row.get_mut(b) {
            *cell += 1;
        }
    }

    fn need(&self, c: usize, holder: usize) -> Option<Resources> {
        let type_index = self.holders.get(holder)?.type_index;
        self.need_on.get(type_index)?.get(c).copied().flatten()
    }

    fn new_count(&self, c: usize, holder: usize) -> u32 {
        self.holders.get(holder).and_then(|h| h.new_copies.iter().find(|&&(d, _)| d == c)).map_or(0, |&(_, n)| n)
    }

    /// The AZ of holder `index`; the unplaced copies have the AZ past the last (which no count
    /// row has, so a shift from or to it only removes or adds).
    fn az_of(&self, index: usize) -> Option<usize> {
        if index == UNPLACED {
            return Some(self.by_az.len());
        }
        self.holders.get(index).map(|h| h.az)
    }

    /// What a copy of `c` needs on holder `index` (nothing among the unplaced copies).
    fn need_at(&self, c: usize, index: usize) -> Option<Resources> {
        if index == UNPLACED {
            return Some(Resources::ZERO);
        }
        self.need(c, index)
    }

    /// Applies (`undo` false) or takes back one step to holders, counts and missing copies.
    fn apply(&mut self, step: Step, undo: bool) {
        let (from, to) = if undo { (step.to, step.from) } else { (step.from, step.to) };
        let (Some(need_from), Some(need_to)) = (self.need_at(step.component, from), self.need_at(step.component, to))
        else {
            return;
        };
        let (Some(az_from), Some(az_to)) = (self.az_of(from), self.az_of(to)) else {
            return;
        };
        if let Some(holder) = self.holders.get_mut(from) {
            holder.used = holder.used.minus(&need_from).unwrap_or(Resources::ZERO);
            change(&mut holder.new_copies, step.component, -1);
        }
        if let Some(holder) = self.holders.get_mut(to) {
            holder.used = holder.used.plus(&need_to);
            change(&mut holder.new_copies, step.component, 1);
        }
        for index in [from, to] {
            if let Some(slot) = self.signature.get_mut(index) {
                *slot = UNSIGNED;
            }
        }
        if let Some(left) = self.missing.get_mut(step.component) {
            if from == UNPLACED {
                *left = left.saturating_sub(1);
            } else if to == UNPLACED {
                *left += 1;
            }
        }
        self.shift_count(step.component, az_from, az_to);
    }

    /// Copies the chain placed from the unplaced ones less those it dropped: a closed chain
    /// has zero (the copies placed, L1, unchanged).
    fn placed_minus_dropped(&self) -> i64 {
        self.chain.iter().map(|step| i64::from(step.from == UNPLACED) - i64::from(step.to == UNPLACED)).sum()
    }

    /// Whether the chain may close now: as many copies placed as dropped, and no instance left
    /// empty by a drop.
    fn may_close(&self) -> bool {
        if self.inserting {
            return self.placed_minus_dropped() == 1;
        }
        self.placed_minus_dropped() == 0
            && self
                .chain
                .iter()
                .filter(|step| step.to == UNPLACED)
                .all(|step| self.holders.get(step.from).is_some_and(|holder| holder.used != Resources::ZERO))
    }

    fn push(&mut self, step: Step) {
        self.apply(step, false);
        self.chain.push(step);
    }

    fn pop(&mut self) {
        if let Some(step) = self.chain.pop() {
            self.apply(step, true);
        }
    }

    /// Whether holder `y` (after the chain so far) fits what it holds.
    fn fits(&self, y: usize) -> bool {
        self.holders.get(y).is_some_and(|h| self.capacity.get(h.type_index).is_some_and(|cap| h.used.fits_in(cap)))
    }

    /// Whether holder `y` (after the chain so far) fits what it holds plus one copy of `c`.
    fn fits_with(&self, c: usize, y: usize) -> bool {
        let (Some(holder), Some(need)) = (self.holders.get(y), self.need(c, y)) else { return false };
        self.capacity.get(holder.type_index).is_some_and(|cap| holder.used.plus(&need).fits_in(cap))
    }

    /// `candidates` less those alike (type, load and new copies) to one before them: alike
    /// instances are alike as sources and targets, so one of them is tried.
    fn distinct(&mut self, mut candidates: Vec<usize>) -> Vec<usize> {
        // Compared by interned signature, in place: this runs for every step of every chain
        // searched, over AZs of hundreds of instances, most of them alike. A holder is signed
        // when first a candidate (most never are: another AZ, another type), and a move only
        // marks the two holders it changed.
        for &index in &candidates {
            if self.signature.get(index) == Some(&UNSIGNED) {
                self.sign(index);
            }
        }
        self.generation += 1;
        let generation = self.generation;
        let (signature, seen_mark) = (&self.signature, &mut self.seen_mark);
        candidates.retain(|&index| {
            let Some(mark) = signature.get(index).and_then(|&id| seen_mark.get_mut(id as usize)) else {
                return false;
            };
            let first = *mark != generation;
            *mark = generation;
            first
        });
        candidates
    }

    /// Computes holder `index`'s signature, interning it (a new one gets its own mark).
    fn sign(&mut self, index: usize) {
        let Some(holder) = self.holders.get(index) else { return };
        let key = (holder.type_index, holder.used, holder.new_copies.clone());
        let next = u32::try_from(self.signature_ids.len()).unwrap_or(u32::MAX);
        let id = *self.signature_ids.entry(key).or_insert(next);
        if id == next {
            self.seen_mark.push(0);
        }
        if let Some(slot) = self.signature.get_mut(index) {
            *slot = id;
        }
    }

    /// Counts one instance check; false when the pass's work or the chain's budget is spent.
    fn tick(&mut self) -> bool {
        if self.exhausted() {
            return false;
        }
        self.work -= 1;
        self.budget -= 1;
        // Looked at now and then: the clock is read here, and a pass may do a million checks.
        if self.work % CHECKS_PER_LOOK == 0 && self.limits.is_some_and(|limits| limits.stop_now().is_some()) {
            self.work = 0;
            return false;
        }
        true
    }

    fn exhausted(&self) -> bool {
        self.work == 0 || self.budget == 0
    }

    /// A chain lowering `c`'s excess (or the pair), applied; `None` when none is found.
    fn chain_for(&mut self, c: usize, depth: usize) -> Option<Vec<Step>> {
        self.budget = CHAIN_WORK;
        let az_count = self.by_az.len();
        let mut fullest: Vec<usize> = (0..az_count).collect();
        fullest.sort_by_key(|&z| (Reverse(self.count(c, z)), z));
        let mut emptiest = fullest.clone();
        emptiest.reverse();
        for &a in &fullest {
            for &b in &emptiest {
                if a == b || self.count(c, a) < self.count(c, b) + 2 {
                    continue;
                }
                let gain = self.gain_of(c, a, b);
                if gain >= (0, 0) {
                    continue;
                }
                let holding: Vec<usize> =
                    self.by_az.get(a).into_iter().flatten().copied().filter(|&x| self.new_count(c, x) > 0).collect();
                let sources = self.distinct(holding);
                for x in sources {
                    if self.exhausted() {
                        return None;
                    }
                    if self.land(c, x, b, gain, depth).is_some() {
                        let mut chain = std::mem::take(&mut self.chain);
                        // The last copy displaced lands on room: executing the moves from the end
                        // of the chain keeps every instance within its capacity on the way.
                        chain.reverse();
                        return Some(chain);
                    }
                }
            }
        }
        None
    }

    /// The best **swap** that lowers (total excess, copies still to move), applied: two open
    /// holders in different AZs share out their new copies anew — the best
    /// split of the pair's copies of each component between them (every split when there are
    /// at most [`SWAP_SPLITS`], else only trading all of them). A chain moves one copy at a time
    /// and each prefix must pay, so it cannot give one large copy's room in a crowded AZ to
    /// several small copies of components short there: the large copy's move alone makes its
    /// own balance worse. A swap moves both sides at once. A component moves only between types
    /// that both take it, each copy needing what its new type asks; each side must fit what it
    /// keeps (existing copies stay) plus what it receives. The steps come in no particular order
    /// of room (the callers apply them whole).
    fn any_swap(&mut self) -> Option<Vec<Step>> {
        self.budget = SWAP_WORK;
        let count = self.holders.len();
        // A swap lowers the pair of terms only by moving a copy of a component not at its best
        // balance from an AZ where it has more to one where it has fewer: one side of a useful
        // pair holds such a copy (a source), and the pair is only looked at when it can move.
        let wanting: Vec<bool> = (0..self.counts.len()).map(|c| self.standing(c) > (0, 0)).collect();
        let is_source: Vec<bool> = self
            .holders
            .iter()
            .map(|h| h.open && h.new_copies.iter().any(|&(c, _)| wanting.get(c).copied().unwrap_or(false)))
            .collect();
        let mut best: Option<(Gain, usize, usize, Split)> = None;
        'pairs: for x in (0..count).filter(|&x| is_source[x]) {
            for (y, &y_is_source) in is_source.iter().enumerate() {
                // A pair of two sources is looked at once.
                if y == x || (y_is_source && y < x) {
                    continue;
                }
                if !self.tick() {
                    break 'pairs;
                }
                if !self.may_gain(x, y, &wanting) && !self.may_gain(y, x, &wanting) {
                    continue;
                }
                let Some((gain, split)) = self.best_split(x, y) else { continue };
                if best.as_ref().is_none_or(|kept| gain < kept.0) {
                    best = Some((gain, x, y, split));
                }
            }
        }
        let (_, x, y, split) = best?;
        self.chain.clear();
        for (c, on_x, had_on_x) in split {
            let (from, to, times) = shift_between(had_on_x, on_x, x, y);
            for _ in 0..times {
                self.push(Step { component: c, from, to });
            }
        }
        Some(std::mem::take(&mut self.chain))
    }

    /// Whether holder `from` holds a new copy of a component not at its best balance (`wanting`)
    /// that has more copies in `from`'s AZ than in holder `to`'s (different AZs, both open).
    fn may_gain(&self, from: usize, to: usize, wanting: &[bool]) -> bool {
        let (Some(source), Some(target)) = (self.holders.get(from), self.holders.get(to)) else { return false };
        source.open
            && target.open
            && source.az != target.az
            && source.new_copies.iter().any(|&(c, _)| {
                wanting.get(c).copied().unwrap_or(false) && self.count(c, source.az) > self.count(c, target.az)
            })
    }

    /// The split of holders `x` and `y`'s new copies that lowers (total excess, copies still to
    /// move) most, with that change, as (component, copies on `x` after, copies on `x` before);
    /// `None` when no split lowers it (or the two may not share: closed, or in one AZ). A
    /// component moves only between types that both take it; its copies stay otherwise.
    fn best_split(&mut self, x: usize, y: usize) -> Option<(Gain, Split)> {
        let (hx, hy) = (self.holders.get(x)?, self.holders.get(y)?);
        if !hx.open || !hy.open || hx.az == hy.az {
            return None;
        }
        if hx.new_copies.is_empty() && hy.new_copies.is_empty() {
            return None;
        }
        let (az_x, az_y) = (hx.az, hy.az);
        let (capacity_x, capacity_y) = (*self.capacity.get(hx.type_index)?, *self.capacity.get(hy.type_index)?);
        let (needs_x, needs_y) = (self.need_on.get(hx.type_index)?, self.need_on.get(hy.type_index)?);
        let mut shared: SmallVec<[Shared; 8]> = SmallVec::new();
        for (list, on_x) in [(&hx.new_copies, true), (&hy.new_copies, false)] {
            for &(c, n) in list {
                let position = shared.iter().position(|entry| entry.component == c).unwrap_or_else(|| {
                    let (need_x, need_y) = (needs_x.get(c).copied().flatten(), needs_y.get(c).copied().flatten());
                    shared.push(Shared { component: c, total: 0, had: 0, need_x, need_y });
                    shared.len() - 1
                });
                if let Some(entry) = shared.get_mut(position) {
                    entry.total += n;
                    if on_x {
                        entry.had += n;
                    }
                }
            }
        }
        shared.sort_unstable_by_key(|entry| entry.component);
        let load = |holder: &Holder, on_x: bool| -> Option<Resources> {
            holder.new_copies.iter().try_fold(Resources::ZERO, |sum, &(c, n)| {
                let entry = shared.iter().find(|entry| entry.component == c)?;
                let need = if on_x { entry.need_x } else { entry.need_y }?;
                Some(sum.plus(&need.times(u64::from(n))))
            })
        };
        let kept_x = hx.used.minus(&load(hx, true)?)?;
        let kept_y = hy.used.minus(&load(hy, false)?)?;
        // What each possible count on x does to its component's standing (charged to the pass
        // and to the search: one check per count).
        let evaluations: u64 = shared.iter().map(|entry| u64::from(entry.total) + 1).sum();
        self.work = self.work.saturating_sub(evaluations);
        self.budget = self.budget.saturating_sub(evaluations);
        let change: Vec<Vec<Gain>> = shared
            .iter()
            .map(|entry| {
                (0..=entry.total)
                    .map(|on_x| {
                        let (from, to, times) = shift_between(entry.had, on_x, az_x, az_y);
                        self.gain_of_moving(entry.component, from, to, times)
                    })
                    .collect()
            })
            .collect();
        // Each component's counts on x: all of them when both types take it, else as it is.
        let lowest: SmallVec<[u32; 8]> =
            shared.iter().map(|entry| if entry.movable() { 0 } else { entry.had }).collect();
        let highest: SmallVec<[u32; 8]> =
            shared.iter().map(|entry| if entry.movable() { entry.total } else { entry.had }).collect();
        let splits = lowest
            .iter()
            .zip(&highest)
            .try_fold(1u64, |product, (&low, &high)| product.checked_mul(u64::from(high - low) + 1));
        let fits = |on_x: &[u32]| {
            let (mut load_x, mut load_y) = (kept_x, kept_y);
            for (entry, &k) in shared.iter().zip(on_x) {
                let (on_y, needs) = (entry.total - k, (entry.need_x, entry.need_y));
                match needs {
                    (Some(need_x), Some(need_y)) => {
                        load_x = load_x.plus(&need_x.times(u64::from(k)));
                        load_y = load_y.plus(&need_y.times(u64::from(on_y)));
                    }
                    (Some(need_x), None) if on_y == 0 => load_x = load_x.plus(&need_x.times(u64::from(k))),
                    (None, Some(need_y)) if k == 0 => load_y = load_y.plus(&need_y.times(u64::from(on_y))),
                    _ => return false,
                }
            }
            load_x.fits_in(&capacity_x) && load_y.fits_in(&capacity_y)
        };
        let gain_of = |on_x: &[u32]| {
            on_x.iter().zip(&change).fold((0i64, 0i64), |sum, (&k, row)| {
                let delta = row.get(k as usize).copied().unwrap_or((0, 0));
                (sum.0 + delta.0, sum.1 + delta.1)
            })
        };
        let mut best: Option<(Gain, SmallVec<[u32; 8]>)> = None;
        let mut consider = |on_x: &[u32]| {
            let gain = gain_of(on_x);
            if gain < (0, 0) && best.as_ref().is_none_or(|(kept, _)| gain < *kept) && fits(on_x) {
                best = Some((gain, on_x.iter().copied().collect()));
            }
        };
        match splits {
            Some(splits) if splits <= SWAP_SPLITS => {
                // Every split, as a mixed-radix counter over the components.
                let mut on_x = lowest.clone();
                loop {
                    consider(&on_x);
                    let Some(position) = on_x.iter().zip(&highest).position(|(&k, &high)| k < high) else {
                        break;
                    };
                    on_x[position] += 1;
                    for (earlier, &low) in on_x.iter_mut().zip(&lowest).take(position) {
                        *earlier = low;
                    }
                }
                // Charged to the pass: a pair with many splits is that much work.
                self.work = self.work.saturating_sub(splits / SPLITS_PER_CHECK);
            }
            // Too many splits: only trading everything that may move.
            _ => {
                let traded: SmallVec<[u32; 8]> = shared
                    .iter()
                    .map(|entry| if entry.movable() { entry.total - entry.had } else { entry.had })
                    .collect();
                consider(&traded);
            }
        }
        let (gain, on_x) = best?;
        Some((gain, shared.iter().zip(on_x).map(|(entry, k)| (entry.component, k, entry.had)).collect()))
    }

    /// The first exchange found for the components of `order` still over their MaxImbalance,
    /// shallow chains first; applied.
    fn any_exchange(&mut self, order: &[usize]) -> Option<Vec<Step>> {
        if self.missing.iter().all(|&left| left == 0) {
            return None;
        }
        self.strict = true;
        let mut found = None;
        'search: for depth in 0..=MAX_DISPLACED {
            for &c in order {
                if self.work == 0 {
                    break 'search;
                }
                if self.standing(c).0 > 0 {
                    found = self.exchange_for(c, depth);
                    if found.is_some() {
                        break 'search;
                    }
                }
            }
        }
        self.strict = false;
        found
    }

    /// An exchange lowering `c`'s excess (or the pair), applied; `None` when none is found.
    /// First a new copy of `c` in one of its fullest AZs is dropped and an unplaced copy of
    /// another component placed (any AZ, onto room or by ejections); then, when `c` has copies
    /// unplaced, one is placed in one of its emptiest AZs, dropping a copy it ejects there.
    fn exchange_for(&mut self, c: usize, depth: usize) -> Option<Vec<Step>> {
        if self.missing.iter().all(|&left| left == 0) {
            return None;
        }
        self.budget = CHAIN_WORK;
        let az_count = self.by_az.len();
        let mut fullest: Vec<usize> = (0..az_count).collect();
        fullest.sort_by_key(|&z| (Reverse(self.count(c, z)), z));
        let partners: Vec<usize> = self
            .partners
            .iter()
            .copied()
            .filter(|&d| d != c && self.missing.get(d).is_some_and(|&left| left > 0))
            .collect();
        for &a in &fullest {
            let dropped = self.gain_of(c, a, az_count);
            if dropped.0 >= 0 || partners.is_empty() || self.count(c, a) == 0 {
                continue;
            }
            let holding: Vec<usize> =
                self.by_az.get(a).into_iter().flatten().copied().filter(|&x| self.new_count(c, x) > 0).collect();
            for x in self.distinct(holding) {
                self.push(Step { component: c, from: x, to: UNPLACED });
                for &d in &partners {
                    let mut azs: Vec<usize> = (0..az_count).collect();
                    azs.sort_by_key(|&z| (self.count(d, z), z));
                    for b in azs {
                        if self.exhausted() {
                            self.pop();
                            return None;
                        }
                        let placed = self.gain_of(d, az_count, b);
                        let total = (dropped.0 + placed.0, dropped.1 + placed.1);
                        if total.0 < 0 && self.land(d, UNPLACED, b, total, depth).is_some() {
                            return Some(self.closed_chain());
                        }
                    }
                }
                self.pop();
            }
        }
        if self.missing.get(c).is_some_and(|&left| left > 0) {
            let mut emptiest = fullest;
            emptiest.reverse();
            for b in emptiest {
                if self.exhausted() {
                    return None;
                }
                let placed = self.gain_of(c, az_count, b);
                // Its drop is an ejection: one level deeper than a move's.
                if placed.0 < 0 && self.land(c, UNPLACED, b, placed, depth + 1).is_some() {
                    return Some(self.closed_chain());
                }
            }
        }
        None
    }

    /// The chain just closed, taken, in an order to execute it: drops first (they only free
    /// room), then the rest from its end (the last copy displaced lands on room).
    fn closed_chain(&mut self) -> Vec<Step> {
        let mut chain = std::mem::take(&mut self.chain);
        chain.reverse();
        chain.sort_by_key(|step| step.to != UNPLACED);
        chain
    }

    /// Moves a copy of `c` from holder `x` into AZ `b`, onto room or making room by ejecting
    /// one or two other new copies there, each of which moves on the same way (at most `depth`
    /// ejections deep). `gain`: the chain's gain including this move. The chain's gain when it
    /// closed (left applied, in `self.chain`); `None` with everything taken back.
    fn land(&mut self, c: usize, x: usize, b: usize, gain: Gain, depth: usize) -> Option<Gain> {
        let in_b = self.by_az.get(b)?;
        let mut eligible: Vec<usize> = Vec::with_capacity(in_b.len());
        eligible.extend(in_b.iter().copied().filter(|&y| {
            y != x
                && self.holders.get(y).is_some_and(|holder| holder.open)
                && self.need(c, y).is_some()
                && (self.inserting || !self.received(y))
        }));
        // An insertion chain may land several ejected copies on one instance's room; only
        // ejecting from an instance the chain already filled is left out, as in every chain.
        let targets = self.distinct(eligible);
        // Onto free room first.
        for &y in &targets {
            if !self.tick() {
                return None;
            }
            // y is not x, so the move only adds to y: it fits exactly when this does (checked
            // before applying it, since most targets have no room).
            if !self.fits_with(c, y) {
                continue;
            }
            self.push(Step { component: c, from: x, to: y });
            if self.fits(y) && self.may_close() {
                return Some(gain);
            }
            self.pop();
        }
        if depth == 0 {
            return None;
        }
        for &y in &targets {
            if self.received(y) {
                continue;
            }
            self.push(Step { component: c, from: x, to: y });
            for set in self.ejections(c, y) {
                if !self.tick() {
                    self.pop();
                    return None;
                }
                let mark = self.chain.len();
                let mut total = Some(gain);
                for &d in &set {
                    total = total.and_then(|so_far| self.eject(d, y, b, so_far, depth - 1));
                }
                if total.is_some() {
                    return total;
                }
                while self.chain.len() > mark {
                    self.pop();
                }
            }
            self.pop();
        }
        None
    }

    /// Whether the chain so far moved a copy onto holder `y`.
    fn received(&self, y: usize) -> bool {
        self.chain.iter().any(|step| step.to == y)
    }

    /// Sets of one or two new copies on holder `y` (overfull with a copy of `c` that just
    /// arrived) whose leaving makes it fit: single copies first, pairs only of copies that do
    /// not make room alone.
    fn ejections(&self, c: usize, y: usize) -> SmallVec<[SmallVec<[usize; 2]>; 8]> {
        let mut sets: SmallVec<[SmallVec<[usize; 2]>; 8]> = SmallVec::new();
        let Some(holder) = self.holders.get(y) else { return sets };
        let Some(capacity) = self.capacity.get(holder.type_index) else { return sets };
        let mut residents: SmallVec<[(usize, u32); 4]> =
            holder.new_copies.iter().copied().filter(|&(d, _)| d != c).collect();
        if self.inserting {
            residents.sort_by_key(|&(d, _)| self.component_rank.get(d).copied());
        }
        let fits_without = |set: &[usize]| {
            let freed = set.iter().filter_map(|&d| self.need(d, y)).fold(Resources::ZERO, |a, r| a.plus(&r));
            holder.used.minus(&freed).is_some_and(|left| left.fits_in(capacity))
        };
        let mut alone: SmallVec<[usize; 4]> = SmallVec::new();
        for &(d, _) in &residents {
            if fits_without(&[d]) {
                sets.push(SmallVec::from_slice(&[d]));
                alone.push(d);
            }
        }
        for (i, &(d, n)) in residents.iter().enumerate() {
            if alone.contains(&d) {
                continue;
            }
            if n >= 2 && fits_without(&[d, d]) {
                sets.push(SmallVec::from_slice(&[d, d]));
            }
            for &(e, _) in residents.iter().skip(i + 1) {
                if !alone.contains(&e) && fits_without(&[d, e]) {
                    sets.push(SmallVec::from_slice(&[d, e]));
                }
            }
        }
        if self.inserting && sets.is_empty() {
            // Insertion chains make room for a large copy by ejecting several small ones: the
            // fewest copies of one component, else of several, largest first.
            for &(d, n) in &residents {
                let mut set: SmallVec<[usize; 2]> = SmallVec::new();
                for _ in 0..n.min(MAX_EJECTED as u32) {
                    set.push(d);
                    if fits_without(&set) {
                        break;
                    }
                }
                if set.len() > 2 && fits_without(&set) {
                    sets.push(set);
                }
            }
            let mut units: SmallVec<[(u64, usize); 8]> = SmallVec::new();
            for &(d, n) in &residents {
                let size = self.need(d, y).map_or(0, |r| r.accelerators * 1_000_000 + r.milli_cpus);
                units.extend(std::iter::repeat_n((size, d), n.min(MAX_EJECTED as u32) as usize));
            }
            units.sort_by_key(|&(size, d)| (Reverse(size), self.component_rank.get(d).copied()));
            let mut set: SmallVec<[usize; 2]> = SmallVec::new();
            for (_, d) in units {
                if set.len() == MAX_EJECTED || fits_without(&set) {
                    break;
                }
                set.push(d);
            }
            if set.len() > 2 && fits_without(&set) && !sets.contains(&set) {
                sets.push(set);
            }
        }
        sets
    }

    /// Moves a new copy of `d` off holder `y` (AZ `b`) to another AZ, emptiest for `d` first,
    /// where the chain's gain stays below zero. The chain's gain when it closed.
    fn eject(&mut self, d: usize, y: usize, b: usize, gain: Gain, depth: usize) -> Option<Gain> {
        if self.inserting {
            return self.eject_anywhere(d, y, b, gain, depth);
        }
        // A chain that placed an unplaced copy may leave this one out instead.
        if self.placed_minus_dropped() > 0 {
            let step = self.gain_of(d, b, self.by_az.len());
            let total = (gain.0 + step.0, gain.1 + step.1);
            if total.0 < 0 {
                self.push(Step { component: d, from: y, to: UNPLACED });
                if self.may_close() {
                    return Some(total);
                }
                self.pop();
            }
        }
        let mut next: Vec<usize> = (0..self.by_az.len()).filter(|&z| z != b).collect();
        next.sort_by_key(|&z| (self.count(d, z), z));
        for z in next {
            let step = self.gain_of(d, b, z);
            let total = (gain.0 + step.0, gain.1 + step.1);
            // Every prefix of a chain improves: a displaced copy may only spend what the chain
            // has won so far.
            if total >= (0, 0) || (self.strict && total.0 >= 0) {
                continue;
            }
            if let Some(closed) = self.land(d, y, z, total, depth) {
                return Some(closed);
            }
        }
        None
    }

    /// [`Self::eject`] for insertion chains: the copy of `d` moves on to another instance of its
    /// own AZ `b` first (balance unchanged), then of the other AZs, best for `d`'s balance first.
    fn eject_anywhere(&mut self, d: usize, y: usize, b: usize, gain: Gain, depth: usize) -> Option<Gain> {
        let within = self.within;
        let mut next: Vec<(Gain, usize)> = (0..self.by_az.len())
            .filter(|&z| within.is_none_or(|only| only == z))
            .map(|z| (self.gain_of(d, b, z), z))
            .collect();
        next.sort_by_key(|&(step, z)| (z != b, step, self.az_rank.get(z).copied()));
        for (step, z) in next {
            if self.exhausted() {
                return None;
            }
            if let Some(closed) = self.land(d, y, z, (gain.0 + step.0, gain.1 + step.1), depth) {
                return Some(closed);
            }
        }
        None
    }
}

/// Adds `delta` to `component`'s entry of a sorted count list (dropping it at zero).
fn change(list: &mut SmallVec<[(usize, u32); 4]>, component: usize, delta: i64) {
    match list.binary_search_by_key(&component, |&(c, _)| c) {
        Ok(pos) => {
            let count = list.get(pos).map_or(0, |&(_, n)| i64::from(n)) + delta;
            if count <= 0 {
                list.remove(pos);
            } else if let Some(entry) = list.get_mut(pos) {
                entry.1 = u32::try_from(count).unwrap_or(u32::MAX);
            }
        }
        Err(pos) if delta > 0 => list.insert(pos, (component, u32::try_from(delta).unwrap_or(u32::MAX))),
        Err(_) => {}
    }
}

/// Fewest copies of a component that must move between AZs (its total fixed) before its
/// balance excess is as low as the total allows: with `n` copies over the AZs, the most even
/// split has spread `s = max(limit, [AZs ∤ n])`, and the copies to move are the fewest over the
/// target levels `[L, L + s]` that hold `n`. Zero when the excess is already the least possible.
pub(crate) fn moves_to_balance(counts: &[u64], limit: u32) -> u64 {
    let zones = counts.len() as u64;
    if zones < 2 {
        return 0;
    }
    let total: u64 = counts.iter().sum();
    let spread = u64::from(limit).max(u64::from(total % zones != 0));
    // Levels L with zones·L ≤ total ≤ zones·(L + spread).
    let lowest = total.saturating_sub(zones * spread).div_ceil(zones);
    let highest = total / zones;
    (lowest..=highest)
        .map(|level| {
            let over: u64 = counts.iter().map(|&n| n.saturating_sub(level + spread)).sum();
            let under: u64 = counts.iter().map(|&n| level.saturating_sub(n)).sum();
            over.max(under)
        })
        .min()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ScenarioBuilder;

    /// Two AZs, three 4-accelerator types; every copy takes 2 accelerators. `bal` (MaxImbalance 0)
    /// runs on g6 and g5, `b` only on g5, `c` on g5 and g6e.
    fn three_types() -> Problem {
        let mut builder = ScenarioBuilder::new(["a", "b"])
            .pool("ml.g6.12xlarge", 1)
            .pool("ml.g5.12xlarge", 1)
            .pool("ml.g6e.12xlarge", 1)
            .component_per_type("bal", 2)
            .specification("bal", "ml.g6.12xlarge", 2, 1.0, 1024)
            .specification("bal", "ml.g5.12xlarge", 2, 1.0, 1024)
            .component_per_type("b", 2)
            .specification("b", "ml.g5.12xlarge", 2, 1.0, 1024)
            .component_per_type("c", 2)
            .specification("c", "ml.g5.12xlarge", 2, 1.0, 1024)
            .specification("c", "ml.g6e.12xlarge", 2, 1.0, 1024);
        builder = builder.max_imbalance("bal", 0);
        Problem::new(&builder.build().unwrap()).unwrap()
    }

    fn holder(problem: &Problem, type_name: &str, az: usize, copies: &[(usize, u32)]) -> Holder {
        let type_index = problem.type_index(type_name).unwrap();
        let map = copies.iter().copied().collect();
        Holder {
            type_index,
            az,
            open: true,
            launch: true,
            used: problem.copies_footprint(type_index, &map),
            new_copies: copies.iter().copied().collect(),
        }
    }

    fn counts_of(problem: &Problem, holders: &[Holder]) -> Vec<Vec<u64>> {
        let mut counts = vec![vec![0u64; problem.azs().len()]; problem.components().len()];
        for h in holders {
            for &(c, n) in &h.new_copies {
                counts[c][h.az] += u64::from(n);
            }
        }
        counts
    }

    #[test]
    fn a_swap_gives_a_large_copys_room_to_several_small_ones() {
        // One 4-accelerator type. `small` (1 accelerator, 8 copies) sits 4 + 4 in AZ a, `large`
        // (4 accelerators, 2 copies) one per instance in AZ b; MaxImbalance 0 for both, every
        // instance full. No chain helps: a small copy moving to b must eject a large one, which
        // fits nowhere in a. Swapping one instance of each side balances both.
        let scenario = ScenarioBuilder::new(["a", "b"])
            .pool("ml.g6.12xlarge", 1)
            .component("small", 8, 1, 1.0, 1024)
            .component("large", 2, 4, 1.0, 1024)
            .max_imbalance("small", 0)
            .max_imbalance("large", 0)
            .build()
            .unwrap();
        let problem = Problem::new(&scenario).unwrap();
        let (small, large) = (0, 1);
        let mut holders = vec![
            holder(&problem, "ml.g6.12xlarge", 0, &[(small, 4)]),
            holder(&problem, "ml.g6.12xlarge", 0, &[(small, 4)]),
            holder(&problem, "ml.g6.12xlarge", 1, &[(large, 1)]),
            holder(&problem, "ml.g6.12xlarge", 1, &[(large, 1)]),
        ];
        let mut counts = counts_of(&problem, &holders);
        assert_eq!((balance_excess(&counts[small], Some(0)), balance_excess(&counts[large], Some(0))), (8, 2));
        let moves =
            lower_excess_within(&problem, &mut holders, &mut counts, &[large, small], &[], Budget::checks(10_000)).0;
        assert_eq!(counts[small], vec![4, 4], "{moves:?}");
        assert_eq!(counts[large], vec![1, 1], "{moves:?}");
        assert_eq!(counts, counts_of(&problem, &holders), "counts follow the holders");
        assert_eq!(moves.len(), 5, "four small copies one way, one large copy the other: {moves:?}");
        for h in &holders {
            assert!(h.used.fits_in(&problem.instance_types()[h.type_index].capacity));
        }
        // A draining instance takes no new copy: with both of b's instances draining, no swap.
        let mut closed = vec![
            holder(&problem, "ml.g6.12xlarge", 0, &[(small, 4)]),
            holder(&problem, "ml.g6.12xlarge", 0, &[(small, 4)]),
            Holder { open: false, ..holder(&problem, "ml.g6.12xlarge", 1, &[(large, 1)]) },
            Holder { open: false, ..holder(&problem, "ml.g6.12xlarge", 1, &[(large, 1)]) },
        ];
        let mut counts = counts_of(&problem, &closed);
        assert!(lower_excess_within(&problem, &mut closed, &mut counts, &[large, small], &[], Budget::checks(10_000))
            .0
            .is_empty());
    }

    #[test]
    fn a_swap_splits_a_pair_of_instances_copies_at_the_best_counts() {
        // `s` runs 4 copies on one instance in AZ a, `t` 4 on one in AZ b (MaxImbalance 0, 1
        // accelerator each, both instances full): trading everything leaves both at excess 4;
        // two of each per instance balances both.
        let scenario = ScenarioBuilder::new(["a", "b"])
            .pool("ml.g6.12xlarge", 1)
            .component("s", 4, 1, 1.0, 1024)
            .component("t", 4, 1, 1.0, 1024)
            .max_imbalance("s", 0)
            .max_imbalance("t", 0)
            .build()
            .unwrap();
        let problem = Problem::new(&scenario).unwrap();
        let (s, t) = (0, 1);
        let mut holders =
            vec![holder(&problem, "ml.g6.12xlarge", 0, &[(s, 4)]), holder(&problem, "ml.g6.12xlarge", 1, &[(t, 4)])];
        let mut counts = counts_of(&problem, &holders);
        let mut pass = Chains::new(&problem, &mut holders, &mut counts, &[], Budget::checks(10_000)).unwrap();
        let (gain, split) = pass.best_split(0, 1).unwrap();
        assert_eq!(gain.0, -8, "excess 4 + 4 → 0");
        assert_eq!(split, vec![(s, 2, 4), (t, 2, 0)]);
        // Two instances in one AZ never share out their copies.
        assert!(pass.best_split(0, 0).is_none());
    }

    #[test]
    fn a_swap_between_types_moves_only_what_both_take() {
        // AZ a: a g6 instance with `s` × 4; AZ b: a g5 instance with `t` × 4 (4 accelerators
        // each, every copy 1). `s` runs on both types, `t` on g5 only: `t` stays, and `s` has no
        // room on the full g5, so no split helps; with `t` on both types, two of each balance.
        let build = |t_types: &[&str]| {
            let mut builder = ScenarioBuilder::new(["a", "b"])
                .pool("ml.g6.12xlarge", 1)
                .pool("ml.g5.12xlarge", 1)
                .component_per_type("s", 4)
                .specification("s", "ml.g6.12xlarge", 1, 1.0, 1024)
                .specification("s", "ml.g5.12xlarge", 1, 1.0, 1024)
                .component_per_type("t", 4);
            for &type_name in t_types {
                builder = builder.specification("t", type_name, 1, 1.0, 1024);
            }
            Problem::new(&builder.max_imbalance("s", 0).max_imbalance("t", 0).build().unwrap()).unwrap()
        };
        let (s, t) = (0, 1);
        for (t_types, expected) in [
            (&["ml.g5.12xlarge"][..], None),
            (&["ml.g5.12xlarge", "ml.g6.12xlarge"][..], Some(vec![(s, 2, 4), (t, 2, 0)])),
        ] {
            let problem = build(t_types);
            let mut holders = vec![
                holder(&problem, "ml.g6.12xlarge", 0, &[(s, 4)]),
                holder(&problem, "ml.g5.12xlarge", 1, &[(t, 4)]),
            ];
            let mut counts = counts_of(&problem, &holders);
            let mut pass = Chains::new(&problem, &mut holders, &mut counts, &[], Budget::checks(10_000)).unwrap();
            assert_eq!(pass.best_split(0, 1).map(|(_, split)| split), expected, "t on {t_types:?}");
        }
    }

    #[test]
    fn a_three_move_chain_balances_where_no_move_or_swap_does() {
        let problem = three_types();
        let (bal, b, c) = (0, 1, 2);
        // AZ a: X (g6) holds bal, bal; Z (g5) holds c, c. AZ b: Y (g5) holds b, b; W (g6e) is empty.
        // bal can only go to Y; b leaving Y can only go to Z (g5); c leaving Z can go to W.
        let mut holders = vec![
            holder(&problem, "ml.g6.12xlarge", 0, &[(bal, 2)]),
            holder(&problem, "ml.g5.12xlarge", 0, &[(c, 2)]),
            holder(&problem, "ml.g5.12xlarge", 1, &[(b, 2)]),
            holder(&problem, "ml.g6e.12xlarge", 1, &[]),
        ];
        let mut counts = counts_of(&problem, &holders);
        assert_eq!(balance_excess(&counts[bal], Some(0)), 2);
        let moves = lower_excess_within(&problem, &mut holders, &mut counts, &[bal], &[], Budget::checks(10_000)).0;
        assert_eq!(balance_excess(&counts[bal], Some(0)), 0, "{moves:?}");
        assert_eq!(counts, counts_of(&problem, &holders), "counts follow the holders");
        assert_eq!(
            moves,
            vec![
                Move { component: c, from: Some(1), to: Some(3) },
                Move { component: b, from: Some(2), to: Some(1) },
                Move { component: bal, from: Some(0), to: Some(2) },
            ]
        );
        for h in &holders {
            assert!(h.used.fits_in(&problem.instance_types()[h.type_index].capacity));
        }
        // Without the chain's depth (no ejections) nothing moves.
        let mut shallow = vec![
            holder(&problem, "ml.g6.12xlarge", 0, &[(bal, 2)]),
            holder(&problem, "ml.g5.12xlarge", 0, &[(c, 2)]),
            holder(&problem, "ml.g5.12xlarge", 1, &[(b, 2)]),
        ];
        let mut counts = counts_of(&problem, &shallow);
        assert!(lower_excess_within(&problem, &mut shallow, &mut counts, &[bal], &[], Budget::checks(10_000))
            .0
            .is_empty());
    }

    #[test]
    fn a_pass_whose_limits_say_stop_moves_nothing() {
        let problem = three_types();
        let bal = 0;
        let fleet = || {
            vec![
                holder(&problem, "ml.g6.12xlarge", 0, &[(bal, 2)]),
                holder(&problem, "ml.g5.12xlarge", 0, &[(2, 2)]),
                holder(&problem, "ml.g5.12xlarge", 1, &[(1, 2)]),
                holder(&problem, "ml.g6e.12xlarge", 1, &[]),
            ]
        };
        let cancelled = Limits::new().cancel_when(|| true);
        let past = Limits::new().deadline(std::time::Instant::now());
        for limits in [&cancelled, &past] {
            let mut holders = fleet();
            let mut counts = counts_of(&problem, &holders);
            let budget = Budget::checks(10_000).until(limits);
            assert!(budget.stopped());
            assert!(lower_excess_within(&problem, &mut holders, &mut counts, &[bal], &[], budget).0.is_empty());
            assert!(place_missing(&problem, &mut holders, &mut counts, &[0, 1, 0], budget).is_empty());
            let mut work = budget;
            assert!(empty_holder(&problem, &mut holders, &mut counts, 3, &[None], &mut work, 1_000).is_none());
            assert_eq!(counts, counts_of(&problem, &fleet()), "nothing changed");
        }
        // The same pass under limits that leave time moves the chain.
        let open = Limits::new();
        let mut holders = fleet();
        let mut counts = counts_of(&problem, &holders);
        let budget = Budget::checks(10_000).until(&open);
        assert!(!lower_excess_within(&problem, &mut holders, &mut counts, &[bal], &[], budget).0.is_empty());
    }
    #[test]
    fn an_insertion_chain_places_a_missing_copy_across_azs_whatever_the_balance() {
        let mut problem = three_types();
        let (bal, b, c) = (0, 1, 2);
        problem.components[b].copy_count = 3;
        // AZ a: X (g5) holds c, c. AZ b: W (g6e) holds c. A missing b (g5 only) can only go on X,
        // ejecting a c, which goes to W in the other AZ (c has no balance rule; bal is untouched).
        let mut holders = vec![
            holder(&problem, "ml.g5.12xlarge", 0, &[(c, 2)]),
            holder(&problem, "ml.g6e.12xlarge", 1, &[(c, 1)]),
            holder(&problem, "ml.g5.12xlarge", 1, &[(b, 2)]),
        ];
        let mut counts = counts_of(&problem, &holders);
        let missing = [0, 1, 0];
        let moves = place_missing(&problem, &mut holders, &mut counts, &missing, Budget::checks(10_000));
        assert_eq!(
            moves,
            vec![Move { component: c, from: Some(0), to: Some(1) }, Move { component: b, from: None, to: Some(0) },]
        );
        assert_eq!(counts, counts_of(&problem, &holders), "counts follow the holders");
        assert_eq!(counts[b].iter().sum::<u64>(), 3);
        assert_eq!(counts[bal], vec![0, 0]);
        for h in &holders {
            assert!(h.used.fits_in(&problem.instance_types()[h.type_index].capacity));
        }
        // Without anywhere for the ejected c (W gone), nothing is placed and nothing moves.
        let mut holders =
            vec![holder(&problem, "ml.g5.12xlarge", 0, &[(c, 2)]), holder(&problem, "ml.g5.12xlarge", 1, &[(b, 2)])];
        let mut counts = counts_of(&problem, &holders);
        let before = counts.clone();
        assert!(place_missing(&problem, &mut holders, &mut counts, &missing, Budget::checks(10_000)).is_empty());
        assert_eq!(counts, before);
    }

    #[test]
    fn an_insertion_chain_ejects_several_small_copies_for_one_large() {
        // One AZ, one 4-accelerator g5 holding four 1-accelerator copies of s and an empty g6e; a
        // missing copy of l needs the whole g5. All four s copies move to the g6e.
        let scenario = ScenarioBuilder::new(["a"])
            .pool("ml.g5.12xlarge", 1)
            .pool("ml.g6e.12xlarge", 1)
            .component_per_type("s", 4)
            .specification("s", "ml.g5.12xlarge", 1, 1.0, 1024)
            .specification("s", "ml.g6e.12xlarge", 1, 1.0, 1024)
            .component_per_type("l", 1)
            .specification("l", "ml.g5.12xlarge", 4, 1.0, 1024)
            .build()
            .unwrap();
        let problem = Problem::new(&scenario).unwrap();
        let (s, l) = (0, 1);
        let mut holders =
            vec![holder(&problem, "ml.g5.12xlarge", 0, &[(s, 4)]), holder(&problem, "ml.g6e.12xlarge", 0, &[])];
        let mut counts = counts_of(&problem, &holders);
        let moves = place_missing(&problem, &mut holders, &mut counts, &[0, 1], Budget::checks(10_000));
        assert_eq!(moves.len(), 5, "{moves:?}");
        assert_eq!(holders[0].new_copies.as_slice(), &[(l, 1)]);
        assert_eq!(holders[1].new_copies.as_slice(), &[(s, 4)]);
        assert_eq!(counts, counts_of(&problem, &holders));
    }

    #[test]
    fn a_displaced_copy_never_costs_more_balance_than_the_chain_wins() {
        let mut problem = three_types();
        let (bal, c) = (0, 2);
        problem.components[c].max_imbalance = Some(0);
        problem.components[c].copy_count = 4;
        // bal (2, 0): excess 2. c (2, 2): balanced. bal's only way into AZ b ejects a c, which
        // can only go to AZ a: bal balanced, c at (3, 1), excess 2 — no gain, so no move.
        let mut holders = vec![
            holder(&problem, "ml.g5.12xlarge", 0, &[(bal, 2)]),
            holder(&problem, "ml.g5.12xlarge", 0, &[(c, 2)]),
            holder(&problem, "ml.g5.12xlarge", 1, &[(c, 2)]),
        ];
        let mut counts = counts_of(&problem, &holders);
        let before = counts.clone();
        let moves = lower_excess_within(&problem, &mut holders, &mut counts, &[bal, c], &[], Budget::checks(10_000)).0;
        assert!(moves.is_empty(), "{moves:?}");
        assert_eq!(counts, before);
        // With one c fewer in a, c moving there costs nothing (three copies over two AZs have
        // excess 1 at best): the swap is made.
        let mut holders = vec![
            holder(&problem, "ml.g5.12xlarge", 0, &[(bal, 2)]),
            holder(&problem, "ml.g5.12xlarge", 0, &[(c, 1)]),
            holder(&problem, "ml.g5.12xlarge", 1, &[(c, 2)]),
        ];
        let mut counts = counts_of(&problem, &holders);
        lower_excess_within(&problem, &mut holders, &mut counts, &[bal, c], &[], Budget::checks(10_000));
        assert_eq!((balance_excess(&counts[bal], Some(0)), balance_excess(&counts[c], Some(0))), (0, 1));
    }

    #[test]
    fn nothing_moves_when_no_move_can_lower_the_excess() {
        let problem = three_types();
        // One copy in a, none in b: excess 1 with MaxImbalance 0, and no split of 1 does better.
        let mut holders =
            vec![holder(&problem, "ml.g5.12xlarge", 0, &[(0, 1)]), holder(&problem, "ml.g5.12xlarge", 1, &[])];
        let mut counts = counts_of(&problem, &holders);
        assert!(lower_excess_within(&problem, &mut holders, &mut counts, &[0], &[], Budget::checks(10_000))
            .0
            .is_empty());
    }

    #[test]
    fn an_exchange_places_the_copy_that_balances_in_place_of_one_that_does_not_matter() {
        let problem = three_types();
        let (bal, b) = (0, 1);
        // bal (MaxImbalance 0) has one copy, in AZ a, and one unplaced; AZ b's only instance fits
        // it but is full of b's copies (no MaxImbalance). No move lowers bal's excess (1 either
        // way); leaving one b out for bal's second copy does, the copies placed unchanged.
        let start =
            [holder(&problem, "ml.g6.12xlarge", 0, &[(bal, 1)]), holder(&problem, "ml.g5.12xlarge", 1, &[(b, 2)])];
        let (moves, counts) = only_with_exchanges(&problem, &start, &[bal], &[1, 0, 0]);
        assert_eq!(
            moves,
            vec![Move { component: b, from: Some(1), to: None }, Move { component: bal, from: None, to: Some(1) }]
        );
        assert_eq!(counts[bal], vec![1, 1]);
        assert_eq!(counts.iter().flatten().sum::<u64>(), 3, "as many copies placed as before");
    }

    /// The moves and counts of a pass from `start` with `missing` copies unplaced, checking
    /// that a pass without exchanges moves nothing and that every instance stays within
    /// capacity.
    fn only_with_exchanges(
        problem: &Problem,
        start: &[Holder],
        order: &[usize],
        missing: &[u64],
    ) -> (Vec<Move>, Vec<Vec<u64>>) {
        let mut holders = start.to_vec();
        let mut counts = counts_of(problem, &holders);
        assert!(lower_excess_within(problem, &mut holders, &mut counts, order, &[], Budget::checks(10_000))
            .0
            .is_empty());
        let mut holders = start.to_vec();
        let mut counts = counts_of(problem, &holders);
        let moves = lower_excess_within(problem, &mut holders, &mut counts, order, missing, Budget::checks(10_000)).0;
        assert_eq!(counts, counts_of(problem, &holders), "counts follow the holders");
        for h in &holders {
            assert!(h.used.fits_in(&problem.instance_types()[h.type_index].capacity));
        }
        (moves, counts)
    }

    #[test]
    fn an_exchange_leaves_out_a_copy_in_the_fullest_az_for_another_components_copy() {
        let problem = three_types();
        let (bal, c) = (0, 2);
        // bal has both copies in AZ a and no instance in AZ b it may run on (g6e is c's only);
        // c has a copy unplaced. Leaving one bal copy out for a c copy on the g6e lowers bal's
        // excess from 2 to 1.
        let start =
            [holder(&problem, "ml.g6.12xlarge", 0, &[(bal, 2)]), holder(&problem, "ml.g6e.12xlarge", 1, &[(c, 1)])];
        let (moves, counts) = only_with_exchanges(&problem, &start, &[bal], &[0, 0, 1]);
        assert_eq!(
            moves,
            vec![Move { component: bal, from: Some(0), to: None }, Move { component: c, from: None, to: Some(1) }]
        );
        assert_eq!((counts[bal].clone(), counts[c].clone()), (vec![1, 0], vec![0, 2]));
    }

    #[test]
    fn an_exchange_never_empties_an_instance() {
        let problem = three_types();
        let (bal, c) = (0, 2);
        // As above with bal's copies on two instances of one each: leaving either out empties
        // its instance (an instance launched for nothing), so nothing changes.
        let mut holders = vec![
            holder(&problem, "ml.g6.12xlarge", 0, &[(bal, 1)]),
            holder(&problem, "ml.g6.12xlarge", 0, &[(bal, 1)]),
            holder(&problem, "ml.g6e.12xlarge", 1, &[(c, 1)]),
        ];
        let mut counts = counts_of(&problem, &holders);
        assert!(lower_excess_within(&problem, &mut holders, &mut counts, &[bal], &[0, 0, 1], Budget::checks(10_000))
            .0
            .is_empty());
    }

    /// Fewest single-copy moves to the least excess, by breadth-first search.
    fn moves_by_search(counts: &[u64], limit: u32) -> u64 {
        let least = {
            let total: u64 = counts.iter().sum();
            let zones = counts.len() as u64;
            u64::from(total % zones != 0).saturating_sub(u64::from(limit))
        };
        let mut frontier = vec![counts.to_vec()];
        let mut seen = vec![counts.to_vec()];
        for steps in 0.. {
            if frontier.iter().any(|state| balance_excess(state, Some(limit)) == least) {
                return steps;
            }
            let mut next = Vec::new();
            for state in &frontier {
                for a in 0..state.len() {
                    for b in 0..state.len() {
                        if a != b && state[a] > 0 {
                            let mut moved = state.clone();
                            moved[a] -= 1;
                            moved[b] += 1;
                            if !seen.contains(&moved) {
                                seen.push(moved.clone());
                                next.push(moved);
                            }
                        }
                    }
                }
            }
            frontier = next;
        }
        unreachable!()
    }

    #[test]
    fn moves_to_balance_is_the_fewest_moves_to_the_least_excess() {
        for zones in 2..=4usize {
            for limit in 0..=2u32 {
                let mut counts = vec![0u64; zones];
                // Every vector of counts 0..=5 per AZ.
                loop {
                    assert_eq!(
                        moves_to_balance(&counts, limit),
                        moves_by_search(&counts, limit),
                        "counts {counts:?}, MaxImbalance {limit}"
                    );
                    let Some(position) = counts.iter().position(|&n| n < 5) else { break };
                    counts[position] += 1;
                    for earlier in counts.iter_mut().take(position) {
                        *earlier = 0;
                    }
                }
            }
        }
        assert_eq!(moves_to_balance(&[5, 1], 0), 2);
        assert_eq!(moves_to_balance(&[4, 0, 0], 1), 2);
        assert_eq!(moves_to_balance(&[3, 3, 2, 2], 0), 0);
    }

    /// Two AZs, one type, two components with MaxImbalance 0 that fit together on an instance.
    fn two_balanced() -> ScenarioBuilder {
        ScenarioBuilder::new(["a", "b"])
            .pool("ml.g5.12xlarge", 1)
            .component_per_type("x", 2)
            .specification("x", "ml.g5.12xlarge", 2, 1.0, 1024)
            .component_per_type("y", 2)
            .specification("y", "ml.g5.12xlarge", 2, 1.0, 1024)
            .max_imbalance("x", 0)
            .max_imbalance("y", 0)
    }

    /// Both launches in AZ a, each holding one copy of `x` and one of `y`: excess 2 each.
    fn both_in_one_az(problem: &Problem) -> (Vec<Holder>, Vec<Vec<u64>>, [usize; 2]) {
        let (x, y) = (problem.component_index("x").unwrap(), problem.component_index("y").unwrap());
        let holders = vec![
            holder(problem, "ml.g5.12xlarge", 0, &[(x, 1), (y, 1)]),
            holder(problem, "ml.g5.12xlarge", 0, &[(x, 1), (y, 1)]),
        ];
        let counts = counts_of(problem, &holders);
        (holders, counts, [x, y])
    }

    #[test]
    fn a_launch_moves_to_another_az_with_its_copies_where_no_chain_can_go() {
        let problem = Problem::new(&two_balanced().build().unwrap()).unwrap();
        let (mut holders, mut counts, order) = both_in_one_az(&problem);
        // No instance in AZ b: a copy has nowhere to go.
        let chains = lower_excess_within(
            &problem,
            &mut holders.clone(),
            &mut counts.clone(),
            &order,
            &[],
            Budget::checks(10_000),
        )
        .0;
        assert!(chains.is_empty());
        let lowered =
            lower_excess_and_relaunch(&problem, &mut holders, &mut counts, &order, &[], Budget::checks(10_000));
        assert_eq!(lowered.relaunches, vec![Relaunch { holder: 0, to: 1 }]);
        assert!(lowered.moves.is_empty());
        assert_eq!((holders[0].az, holders[1].az), (1, 0));
        for c in order {
            assert_eq!(counts[c], vec![1, 1]);
        }
    }

    #[test]
    fn a_relaunch_keeps_launch_limits_reservations_and_existing_instances() {
        let relaunches = |builder: ScenarioBuilder, launch: bool| {
            let problem = Problem::new(&builder.build().unwrap()).unwrap();
            let (mut holders, mut counts, order) = both_in_one_az(&problem);
            for holder in &mut holders {
                holder.launch = launch;
            }
            lower_excess_and_relaunch(&problem, &mut holders, &mut counts, &order, &[], Budget::checks(10_000))
                .relaunches
        };
        // The type cannot launch in AZ b.
        assert!(relaunches(two_balanced().capacity("ml.g5.12xlarge", "b", Some(0), 0), true).is_empty());
        // Both launches use reservations of AZ a, and AZ b has none: a move would pay for one.
        let reserved_in_a = || two_balanced().capacity("ml.g5.12xlarge", "a", None, 2);
        assert!(relaunches(reserved_in_a(), true).is_empty());
        // With a reservation in AZ b too, the move costs nothing.
        assert_eq!(relaunches(reserved_in_a().capacity("ml.g5.12xlarge", "b", None, 1), true).len(), 1);
        // Instances of the fleet stay where they are.
        assert!(relaunches(two_balanced(), false).is_empty());
    }
}
