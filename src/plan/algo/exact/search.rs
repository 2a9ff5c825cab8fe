//! Depth-first branch and bound for one part and one target peak: "is there
//! a plan of this part whose peak is at most `target`?"
//!
//! The search only builds *canonical* plans: buffers are placed in
//! non-decreasing offset order (ties by the preorder rank), each at its
//! *floor*, the lowest offset above every placed buffer it is live with
//! (lifted over fixed buffers). Every plan can be turned into a canonical
//! one that is no higher (drop each buffer to the lowest offset it fits at
//! until none moves; then sort by offset), so searching canonical plans
//! only is complete. Pruning, each sound for canonical plans:
//!
//! - *height*: a placed buffer's top, and every unplaced buffer's floor plus
//!   its size, must be at most the target;
//! - *section bound*: in every section, the lowest offset still usable (the
//!   current offset, the tops placed there, and the lowest floor of the
//!   buffers still to come) plus the bytes still to place there must be at
//!   most the target;
//! - *no avoidable gap*: placing a buffer at or above some unplaced buffer's
//!   floor + size is never needed, since that buffer could drop below it;
//! - *effective floors*: a buffer whose key is behind the node's (floor
//!   below the current offset) must first be held up by a later, conflicting
//!   buffer at or above the current offset, so it sits at least that
//!   buffer's size above it; the height and section bounds use that (see
//!   [`Search::behind_fit`]). On MiniMalloc's instance E this cuts the
//!   nodes of its hard part twentyfold;
//! - *memo of failures*: a state (which buffers are placed, the floors of
//!   the others) whose subtree held no plan is recorded with the offset and
//!   rank it was reached at; reaching it again at an offset and rank no
//!   lower cannot succeed either. This catches the same stack of buffers
//!   built in two orders.
//!
//! When no unplaced buffer crosses a section boundary the scope splits into
//! components searched one after another; each starts at the offset of the
//! move that split it, with its buffers ranked afresh by what is left to
//! place (MiniMalloc's per-partition preorder).
//!
//! Per node the work is what the move touched: the placed buffer's
//! conflicts (floors raised), the [`Frontier`] updates for them, and the
//! sections those buffers witnessed for the section bound. The ceiling,
//! memo key, buffers behind the key and first child are O(log n) queries
//! on the frontier (a pass over every unplaced buffer before: 95 µs per
//! node on the 18,692 buffers of PanGu); the other children are listed
//! only if the first fails.
//!
//! Backtracking restores exact state from undo logs, so the search does no
//! allocation per node. Iterative, so deep parts (tens of thousands of
//! buffers) cannot overflow the caller's stack.

use std::collections::HashMap;

use super::frontier::{index_of, offset_of, pack, Frontier, Packed};
use super::instance::Part;
use super::order::Preorder;
use super::pending::Pending;

/// Offset of an unplaced buffer.
const UNPLACED: u64 = u64::MAX;

/// Work units a node costs besides what it counts as it goes (memo lookup,
/// the frame). With one unit per conflict entry, lifted floor, section
/// spanned, frontier tree node visited, scanned section resident or
/// witnessed section and ranked or listed buffer, and [`LOG_GROWTH_WORK`]
/// per fresh undo-log entry, a unit takes about the same CPU time on
/// MiniMalloc's challenging instances (a few hundred buffers, everything
/// in cache) as on the long traces (tens of thousands, frontier trees and
/// a growing log); `BENCHMARKS.md` has the figures per family.
const NODE_WORK: u64 = 10;

/// Work units per undo-log entry past the log's longest so far in this
/// search: fresh memory, so a page fault and a copy when the log grows
/// (an eighth of PanGu's search time, whose log reaches hundreds of MiB).
const LOG_GROWTH_WORK: u64 = 2;

/// Work units per floor a move raises: the lift, two state hashes, the
/// log entry and the refresh, each undone when the move is. Dense
/// instances (buffers live with hundreds of others, most still unplaced)
/// spend most of a node here: at one unit a floor, a unit cost far more
/// time there than on the traces.
const LIFT_WORK: u64 = 4;

/// Parts of at least this many buffers keep a [`Frontier`]; smaller ones
/// scan their unplaced buffers at each node, which costs less than
/// keeping the trees up to date (MiniMalloc's challenging instances, at
/// 154 to 454 buffers, search half as many nodes a second with the trees).
const FRONTIER_MIN: usize = 2048;

/// Unplaced buffers a small part's scan looks at per work unit: a key
/// compare and a range check in a tight loop over data in cache, a quarter
/// of what the other units cost. MiniMalloc's challenging B then spends
/// the default budget in 1.28 M nodes and 0.87 s (at a load average of 3
/// on the 2-core Xeon), about as long as PanGu's 21k nodes.
const SCANS_PER_UNIT: usize = 4;

/// [`Search::witness`] of a section with nothing left to place.
const NO_WITNESS: u32 = u32::MAX;

/// Marks a witness entry of [`Search::floor_log`] (the rest is a section).
const WITNESS: u32 = 1 << 31;

/// [`Frame::end`] of a node whose children are not listed yet.
const UNLISTED: usize = usize::MAX;

/// Failure states remembered per search; beyond this the memo stops growing
/// (about 40 MiB).
const MEMO_CAPACITY: usize = 1 << 20;

/// How a search ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A plan within the target: offsets per part-local buffer.
    Found(Vec<u64>),
    /// No plan within the target exists.
    Infeasible,
    /// The node budget ran out or the caller said stop.
    Stopped,
}

/// The canonical constraint a node carries: later buffers go at offsets
/// above `offset`, or at `offset` with a rank above `rank` (rank 0: none
/// placed yet, so real ranks start at 1).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    offset: u64,
    rank: u32,
}

/// A *component*: a range of sections `[lo, hi)` that no unplaced buffer
/// crosses into or out of, with `count` unplaced buffers inside. Components
/// are independent subproblems, searched one after another; `batch` is the
/// stack index of the first component root of the split that made it, where
/// a failure of any of them unwinds to.
///
/// `from` is the offset of the move that made the component: a canonical
/// plan places every buffer after that move at or above it, so the
/// component's search starts there rather than at 0 (its ranking is new,
/// so only the offset carries over).
#[derive(Copy, Clone, Debug)]
struct Component {
    lo: u32,
    hi: u32,
    count: u32,
    batch: usize,
    from: u64,
}

/// What popping a frame must do to the pending components.
#[derive(Copy, Clone, Debug)]
enum Restore {
    Nothing,
    Truncate(usize),
    PushBack(Component),
}

/// One node on the depth-first stack.
struct Frame {
    /// The constraint of this node.
    key: Key,
    /// No buffer may start at or above this (the "no avoidable gap" rule).
    ceiling: u64,
    /// A buffer behind the key cannot be placed (see [`Search::behind_fit`]).
    dead: bool,
    /// This node's children still to try: `candidates[next..end]`, in key
    /// order, the list beginning at `start`. Listed only on the second
    /// visit (`end == UNLISTED` before): the first child is found by one
    /// scan, and most nodes of a long trace never need a second, so they
    /// neither store nor sort their candidates. `next` counts the visits
    /// until then, and `cursor` is the first child's key.
    start: usize,
    next: usize,
    end: usize,
    cursor: Key,
    /// Memo key: the state hash combined with the set searched here and
    /// the state where the ranks in force were computed.
    hash: u128,
    /// The memo context: the state hash of the component root whose
    /// ranking is in force.
    context: u128,
    /// Rank-log length before this node re-ranked (component roots only).
    rank_log: usize,
    /// At least the most bytes still to place in a section of the scope
    /// (exact when last computed; placing only lowers the truth).
    fullest: u64,
    /// Undo-log length and state hash before `placed` was placed.
    floor_log: usize,
    old_hash: u128,
    /// The buffer placed to reach this node (none at the root).
    placed: Option<u32>,
    /// The component this node searches.
    scope: Component,
    /// Whether this node roots a component (its constraint starts afresh).
    root: bool,
    restore: Restore,
    /// For tests: what [`Search::behind_fit`] claimed of this node.
    #[cfg(test)]
    claims: Claims,
}

/// For tests: what [`Search::behind_fit`] claimed of a node, to check
/// against the plans found through it (see [`Search::audit`]).
#[cfg(test)]
#[derive(Default)]
struct Claims {
    /// Buffers behind the key with their effective floors (those worked
    /// out before the rule gave up, if it did): each must end at or above.
    effective: Vec<(u32, u64)>,
    /// Buffers behind the key only by rank (floor at the key's offset).
    ties: Vec<u32>,
    /// The node was judged dead: no plan may pass through it.
    dead: bool,
}

/// For tests: the effective-floor rule's claims checked against the plans
/// an audited search found (see [`Search::audit`]).
#[cfg(test)]
#[derive(Debug, Default)]
pub struct Audit {
    /// Plans found (the search goes on after each).
    pub plans: u64,
    /// The first plan found.
    first: Option<Vec<u64>>,
    /// Nodes on the plans' paths that the rule judged (some buffer behind
    /// the key).
    pub judged: u64,
    /// Effective floors checked against a plan.
    pub checked: u64,
    /// Of those, the ones the plan met exactly (a buffer at its effective
    /// floor): the claims any stronger rule would get wrong.
    pub exact: u64,
    /// Paths left unchecked at a node: not canonical there (see
    /// [`Search::audit_path`]).
    pub detours: u64,
    /// Claims a plan refuted: a buffer below its effective floor, or a
    /// plan through a node judged dead.
    pub violations: Vec<String>,
}

/// A reusable search over one part. Failures recorded in the memo stay true
/// for any smaller target, so the same `Search` may be run again with a
/// target no higher than before ([`Search::run`] clears it otherwise).
pub struct Search<'p> {
    part: &'p Part,
    preorder: Preorder,
    /// Preorder rank of each buffer among its component, 1-based.
    rank: Vec<u32>,
    /// Old ranks, to restore on backtracking: (buffer, rank).
    rank_log: Vec<(u32, u32)>,
    /// Scratch space for ranking.
    ranking: Vec<((u64, u64, u64), u32)>,
    /// The children of the nodes on the stack, each node's in one run
    /// (see [`Frame::next`]).
    candidates: Vec<(Key, u32)>,
    /// Target of the memo's failures.
    memo_target: u64,
    memo: HashMap<u128, Key>,
    // Per-run state.
    offset: Vec<u64>,
    floor: Vec<u64>,
    /// Bytes still to place in each section.
    pending: Pending,
    /// Sections already checked by the current node (`seen[s] == stamp`).
    seen: Vec<u64>,
    stamp: u64,
    /// Unplaced buffers crossing the boundary before each section.
    crossing: Vec<u32>,
    unplaced: Vec<u32>,
    position: Vec<u32>,
    /// The unplaced buffers by key, floor + size and hash (see
    /// [`Frontier`]), so a node need not scan them.
    frontier: Option<Frontier>,
    /// Whether the part is small enough to scan (see [`FRONTIER_MIN`]);
    /// the work counted follows this (see [`SCANS_PER_UNIT`]), whichever
    /// way tests run it.
    scanned: bool,
    /// Per section, the first buffer whose first section is at or after it
    /// (buffers are numbered by first section): a component's buffers are
    /// `section_start[lo]..section_start[hi]`.
    section_start: Vec<u32>,
    /// [`scope_hash`] of each buffer.
    scope_hashes: Vec<u128>,
    /// Undo log of floors, `(buffer, old floor)`, and of witnesses,
    /// `(WITNESS | section, old witness_at << 32 | old witness)`.
    floor_log: Vec<(u32, u64)>,
    /// The longest [`Search::floor_log`] of the running search: entries
    /// past it are fresh memory (see [`LOG_GROWTH_WORK`]).
    log_high: usize,
    hash: u128,
    /// Components waiting to be searched, the next on top.
    waiting: Vec<Component>,
    /// Per section, an unplaced buffer live there whose floor shows the
    /// section bound holds ([`NO_WITNESS`] while nothing is left to place
    /// there). Kept true at every node on the stack (changes are undone
    /// with the floors), so a move need only recheck the sections whose
    /// witness it placed or lifted.
    witness: Vec<u32>,
    /// Per section, the witness's position in [`Part::residents`]: the
    /// next search for one starts after it, past the residents found
    /// wanting last time (floors only rise going deeper, and placed
    /// buffers stay placed), which on PanGu scans a tenth as many.
    witness_at: Vec<u32>,
    /// Per buffer, the sections it witnesses, and stale entries (sections
    /// since handed to another witness; skipped when read). Appended to on
    /// each hand-over and popped when that is undone.
    witnessed: Vec<Vec<u32>>,
    /// Nodes visited over all runs.
    pub nodes: u64,
    /// Work units spent over all runs (see [`crate::plan::SearchLimits`]):
    /// per node [`NODE_WORK`], plus the conflict entries its move visits,
    /// the buffers ranked or listed and the section residents and
    /// witnessed sections scanned.
    pub work: u64,
    /// The running search's target.
    target: u64,
    /// Scratch: the buffers behind the current node's key.
    behind: Vec<u32>,
    /// Effective floors of behind buffers, valid where the stamp matches.
    effective: Vec<(u64, u64)>,
    /// For tests: nodes with buffers behind the key, and those that
    /// [`Search::behind_fit`] cut off (or, audited, judged dead).
    #[cfg(test)]
    pub behind_nodes: u64,
    #[cfg(test)]
    pub behind_kills: u64,
    /// For tests: search without [`Search::behind_fit`].
    #[cfg(test)]
    pub skip_behind: bool,
    /// For tests: search without [`Search::behind_fit`] and without
    /// stopping at a plan (the verdict is the first plan found), work out
    /// what the rule claims at every node, and check the claims of the
    /// nodes each plan passes through against that plan (in `audited`). A
    /// refuted claim shows the rule unsound; a rule stronger than it may
    /// be refutes some as soon as a plan meets a claim exactly.
    #[cfg(test)]
    pub audit: bool,
    #[cfg(test)]
    pub audited: Audit,
    /// For tests: the claims of the node last surveyed.
    #[cfg(test)]
    claims: Claims,
}

/// Hash of "buffer `i` is unplaced with floor `floor`" (or placed, with
/// `floor == UNPLACED`). Two independent 64-bit mixes make a 128-bit key,
/// so a false memo hit is astronomically unlikely (and could only cost
/// optimality, never validity: every plan returned is checked).
fn item_hash(i: u32, floor: u64) -> u128 {
    let a = mix(floor ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let b = mix(a ^ floor.rotate_left(29) ^ 0xD1B5_4A32_D192_ED03 ^ i as u64);
    ((a as u128) << 64) | b as u128
}

/// The memo key of a state searched under the ranking made at `context`
/// (a component root's state): ranks, and so the constraint keys the memo
/// compares, only mean the same under the same ranking.
fn memo_key(state: u128, context: u128) -> u128 {
    let lo = mix(context as u64 ^ 0x2545_F491_4F6C_DD1D);
    let hi = mix((context >> 64) as u64 ^ lo);
    state ^ (((hi as u128) << 64) | lo as u128)
}

/// The first position in `list`, starting at `start` and wrapping around,
/// whose buffer is `ok`, and how many were looked at.
fn scan_from(list: &[u32], start: usize, ok: impl Fn(u32) -> bool) -> (Option<usize>, u64) {
    let start = start.min(list.len());
    if let Some(k) = list[start..].iter().position(|&j| ok(j)) {
        return (Some(start + k), k as u64 + 1);
    }
    match list[..start].iter().position(|&j| ok(j)) {
        Some(k) => (Some(k), (list.len() - start + k) as u64 + 1),
        None => (None, list.len() as u64),
    }
}

/// splitmix64's finaliser.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Hash of "buffer `i` is in the set being searched".
fn scope_hash(i: u32) -> u128 {
    item_hash(i, 0x5C0_9E00_0000_0001) << 1
}

impl<'p> Search<'p> {
    /// A search over `part` breaking ties between equal floors by
    /// `preorder`.
    pub fn new(part: &'p Part, preorder: Preorder) -> Self {
        let n = part.len();
        debug_assert!(part.first.windows(2).all(|w| w[0] <= w[1]), "buffers are numbered by first section");
        let section_start = (0..=part.sections as u32).map(|s| part.first.partition_point(|&f| f < s) as u32).collect();
        Search {
            part,
            preorder,
            rank: vec![0; n],
            rank_log: Vec::new(),
            ranking: Vec::new(),
            candidates: Vec::new(),
            memo_target: u64::MAX,
            memo: HashMap::new(),
            offset: vec![UNPLACED; n],
            floor: vec![0; n],
            pending: Pending::new(&part.live),
            seen: vec![0; part.sections],
            stamp: 0,
            crossing: vec![0; part.sections],
            unplaced: Vec::with_capacity(n),
            position: vec![0; n],
            // Tests take the frontier at every size, checked against the scans.
            frontier: (n >= FRONTIER_MIN || cfg!(test)).then(|| Frontier::new(n)),
            scanned: n < FRONTIER_MIN,
            section_start,
            scope_hashes: (0..n as u32).map(scope_hash).collect(),
            floor_log: Vec::new(),
            log_high: 0,
            hash: 0,
            waiting: Vec::new(),
            witness: vec![NO_WITNESS; part.sections],
            witness_at: vec![0; part.sections],
            witnessed: vec![Vec::new(); n],
            nodes: 0,
            work: 0,
            target: 0,
            behind: Vec::new(),
            effective: vec![(0, 0); n],
            #[cfg(test)]
            behind_nodes: 0,
            #[cfg(test)]
            behind_kills: 0,
            #[cfg(test)]
            skip_behind: false,
            #[cfg(test)]
            audit: false,
            #[cfg(test)]
            audited: Audit::default(),
            #[cfg(test)]
            claims: Claims::default(),
        }
    }

    fn reset(&mut self) {
        let part = self.part;
        self.offset.fill(UNPLACED);
        self.pending = Pending::new(&part.live);
        self.crossing.fill(0);
        self.unplaced.clear();
        self.hash = 0;
        for i in 0..part.len() {
            self.floor[i] = part.lift(i, 0);
            self.position[i] = i as u32;
            self.unplaced.push(i as u32);
            self.hash ^= item_hash(i as u32, self.floor[i]);
            for b in part.first[i] + 1..part.last[i] {
                self.crossing[b as usize] += 1;
            }
        }
        let (floor, rank, hashes) = (&self.floor, &self.rank, &self.scope_hashes);
        if let Some(frontier) = &mut self.frontier {
            frontier.fill(part.len(), |i| (pack(floor[i], rank[i], i as u32), floor[i] + part.size[i], hashes[i]));
        }
        self.floor_log.clear();
        self.log_high = 0;
        self.rank_log.clear();
        self.candidates.clear();
        self.waiting.clear();
    }

    /// Adds to the work what the node counts do not see: the frontier's
    /// visited tree nodes (parts that scan instead count their scans; tests
    /// keep a frontier at every size, so there the visits are not counted,
    /// for the same work as a release build) and the undo log's growth.
    fn count_untracked(&mut self) {
        if let Some(frontier) = &self.frontier {
            let visited = frontier.take_visited();
            if !self.scanned {
                self.work += visited;
            }
        }
        let len = self.floor_log.len();
        if len > self.log_high {
            self.work += (len - self.log_high) as u64 * LOG_GROWTH_WORK;
            self.log_high = len;
        }
    }

    /// Tells the frontier buffer `i`'s key and floor + size changed.
    fn refresh(&mut self, i: usize) {
        if let Some(frontier) = &mut self.frontier {
            let floor = self.floor[i];
            frontier.set(i, pack(floor, self.rank[i], i as u32), floor + self.part.size[i]);
        }
    }

    /// The buffers of `scope`, as a range of indices.
    fn range(&self, scope: Component) -> (usize, usize) {
        (self.section_start[scope.lo as usize] as usize, self.section_start[scope.hi as usize] as usize)
    }

    /// Ranks the unplaced buffers of `scope` by the preorder, logging the
    /// old ranks. `total` counts the bytes still to place, so a component
    /// ranks by what is left of it.
    fn rank_scope(&mut self, scope: Component) {
        let part = self.part;
        let mut ranking = std::mem::take(&mut self.ranking);
        ranking.clear();
        for &i in &self.unplaced {
            let iu = i as usize;
            if self.in_scope(iu, scope) {
                let (a, b) = (part.first[iu] as usize, part.last[iu] as usize);
                let total = self.pending.fullest(a, b);
                ranking.push((self.preorder.key(part, iu, total), i));
            }
        }
        ranking.sort_unstable_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
        self.work += ranking.len() as u64;
        for (r, &(_, i)) in ranking.iter().enumerate() {
            self.rank_log.push((i, self.rank[i as usize]));
            self.rank[i as usize] = r as u32 + 1;
            self.refresh(i as usize);
        }
        self.ranking = ranking;
    }

    /// A component root's frame: ranks its buffers and starts afresh.
    #[allow(clippy::too_many_arguments)]
    fn root_frame(
        &mut self,
        scope: Component,
        placed: Option<u32>,
        floor_log: usize,
        old_hash: u128,
        fullest: u64,
        restore: Restore,
    ) -> Frame {
        let rank_log = self.rank_log.len();
        self.rank_scope(scope);
        let key = Key { offset: scope.from, rank: 0 };
        let (ceiling, state, alive) = self.survey(scope, key);
        Frame {
            key,
            ceiling,
            dead: !alive,
            start: 0,
            next: 0,
            end: UNLISTED,
            cursor: key,
            hash: memo_key(state, state),
            // This node's ranking holds below it.
            context: state,
            rank_log,
            fullest,
            floor_log,
            old_hash,
            placed,
            scope,
            root: true,
            restore,
            #[cfg(test)]
            claims: std::mem::take(&mut self.claims),
        }
    }

    /// Searches for a plan with peak at most `target`, visiting at most
    /// `budget` nodes, spending at most about `work_budget` work units
    /// (checked per node) and polling `stop` every 1024 nodes.
    pub fn run(&mut self, target: u64, budget: u64, work_budget: u64, stop: &mut dyn FnMut() -> bool) -> Verdict {
        let verdict = self.search(target, budget, self.work.saturating_add(work_budget), stop);
        self.count_untracked();
        #[cfg(test)]
        let verdict = if self.audit {
            // Subtrees that held plans are in the memo as failures.
            self.memo.clear();
            match (verdict, self.audited.first.take()) {
                (Verdict::Infeasible, Some(plan)) => Verdict::Found(plan),
                (verdict, _) => verdict,
            }
        } else {
            verdict
        };
        // The undo logs grow with the depth times the sections spanned
        // (hundreds of MiB on 18k-buffer traces); several searches take
        // turns, so only the running one holds them.
        self.floor_log = Vec::new();
        verdict
    }

    fn search(&mut self, target: u64, budget: u64, work_end: u64, stop: &mut dyn FnMut() -> bool) -> Verdict {
        if target > self.memo_target {
            self.memo.clear();
        }
        self.memo_target = target;
        self.target = target;
        self.reset();
        let part = self.part;
        if part.len() == 0 {
            return Verdict::Found(Vec::new());
        }
        let whole = Component { lo: 0, hi: part.sections as u32, count: part.len() as u32, batch: 0, from: 0 };
        // Later nodes check only what changed, so the root checks it all,
        // with fresh witnesses.
        self.witness.fill(NO_WITNESS);
        self.witness_at.fill(0);
        self.witnessed.iter_mut().for_each(Vec::clear);
        self.stamp += 1;
        if (0..part.len()).any(|i| self.floor[i].saturating_add(part.size[i]) > target)
            || part.live.iter().any(|&b| b > target)
            || !(0..part.sections).all(|s| self.section_fits(s, target))
        {
            return Verdict::Infeasible;
        }
        let fullest = part.live.iter().copied().max().unwrap_or(0);
        let mut stack = vec![self.root_frame(whole, None, 0, self.hash, fullest, Restore::Nothing)];
        let mut spent = 0u64;
        loop {
            let frame = stack.last_mut().expect("the root stays until the end");
            let next = if frame.end != UNLISTED {
                let next = (frame.next < frame.end).then(|| self.candidates[frame.next]);
                frame.next += 1;
                next
            } else if frame.next == 0 {
                frame.next = 1;
                let first = self.first_candidate(frame.key, frame.ceiling, frame.scope);
                if let Some((key, _)) = first {
                    frame.cursor = key;
                }
                first
            } else {
                frame.start = self.candidates.len();
                self.list_candidates(frame.cursor, frame.ceiling, frame.scope);
                frame.end = self.candidates.len();
                frame.next = frame.start + 1;
                (frame.start < frame.end).then(|| self.candidates[frame.start])
            };
            let Some((key, next)) = next else {
                // Every child failed: remember, then undo the move that led here.
                let frame = stack.pop().expect("non-empty");
                if self.memo.len() < MEMO_CAPACITY {
                    self.memo.entry(frame.hash).and_modify(|k| *k = (*k).min(frame.key)).or_insert(frame.key);
                }
                self.pop(&frame);
                if stack.is_empty() {
                    return Verdict::Infeasible;
                }
                if frame.root && frame.scope.batch < stack.len() {
                    // A component failed, so the split that made it fails
                    // whatever its siblings did: unwind to the split.
                    while stack.len() > frame.scope.batch {
                        let abandoned = stack.pop().expect("above the batch");
                        self.pop(&abandoned);
                    }
                    if stack.is_empty() {
                        return Verdict::Infeasible;
                    }
                }
                continue;
            };
            let scope = frame.scope;
            spent += 1;
            self.nodes += 1;
            self.count_untracked();
            if spent > budget || self.work >= work_end || (spent & 0x3FF == 0 && stop()) {
                return Verdict::Stopped;
            }
            let (floor_log, old_hash) = (self.floor_log.len(), self.hash);
            let parent_fullest = frame.fullest;
            let Some(fullest) = self.place(next, key.offset, target, scope, parent_fullest) else {
                self.unplace(next, floor_log, old_hash);
                continue;
            };
            let depth = stack.len();
            let child = if scope.count > 1 {
                match self.split(next, scope, depth, key.offset) {
                    // A piece of the scope: its fullest section is no fuller.
                    Some((first, restore)) => self.root_frame(first, Some(next), floor_log, old_hash, fullest, restore),
                    None => {
                        let scope = Component { count: scope.count - 1, ..scope };
                        let (ceiling, state, alive) = self.survey(scope, key);
                        let context = stack.last().expect("parent").context;
                        Frame {
                            key,
                            ceiling,
                            dead: !alive,
                            start: 0,
                            next: 0,
                            end: UNLISTED,
                            cursor: key,
                            hash: memo_key(state, context),
                            context,
                            rank_log: self.rank_log.len(),
                            fullest,
                            floor_log,
                            old_hash,
                            placed: Some(next),
                            scope,
                            root: false,
                            restore: Restore::Nothing,
                            #[cfg(test)]
                            claims: std::mem::take(&mut self.claims),
                        }
                    }
                }
            } else {
                // The component is done: on to the next one, if any.
                let Some(following) = self.waiting.pop() else {
                    #[cfg(test)]
                    if self.audit {
                        // Check the plan, then go on as if it failed.
                        self.audit_path(&stack);
                        self.audited.first.get_or_insert_with(|| self.offset.clone());
                        self.unplace(next, floor_log, old_hash);
                        continue;
                    }
                    return Verdict::Found(self.offset.clone());
                };
                // Another scope: its fullest section is not known yet.
                self.root_frame(following, Some(next), floor_log, old_hash, u64::MAX, Restore::PushBack(following))
            };
            if child.dead || self.memo.get(&child.hash).is_some_and(|failed| *failed <= child.key) {
                self.pop(&child);
                if let Restore::PushBack(c) = child.restore {
                    // A later component is known to fail: so does its split.
                    while stack.len() > c.batch {
                        let abandoned = stack.pop().expect("above the batch");
                        self.pop(&abandoned);
                    }
                    if stack.is_empty() {
                        return Verdict::Infeasible;
                    }
                }
                continue;
            }
            stack.push(child);
        }
    }

    /// Undoes what a frame did on the way in.
    fn pop(&mut self, frame: &Frame) {
        if frame.end != UNLISTED {
            self.candidates.truncate(frame.start);
        }
        while self.rank_log.len() > frame.rank_log {
            let (i, old) = self.rank_log.pop().expect("longer than mark");
            self.rank[i as usize] = old;
            if self.offset[i as usize] == UNPLACED {
                self.refresh(i as usize);
            }
        }
        match frame.restore {
            Restore::Nothing => {}
            Restore::Truncate(len) => self.waiting.truncate(len),
            Restore::PushBack(c) => self.waiting.push(c),
        }
        if let Some(i) = frame.placed {
            self.unplace(i, frame.floor_log, frame.old_hash);
        }
    }

    /// After placing `i` in `scope`: if no unplaced buffer now crosses some
    /// boundary inside `i`'s span, the scope falls apart. Returns the first
    /// piece (the others wait, with `batch` = the new frame's stack index)
    /// and how to undo that, or `None` when it stays in one piece.
    fn split(&mut self, i: u32, scope: Component, depth: usize, from: u64) -> Option<(Component, Restore)> {
        let part = self.part;
        let iu = i as usize;
        let lo = (part.first[iu] + 1).max(scope.lo + 1);
        let hi = part.last[iu].min(scope.hi);
        let mut cuts: Vec<u32> = (lo..hi).filter(|&b| self.crossing[b as usize] == 0).collect();
        if cuts.is_empty() {
            return None;
        }
        cuts.insert(0, scope.lo);
        cuts.push(scope.hi);
        let mut counts = vec![0u32; cuts.len() - 1];
        for &j in &self.unplaced {
            let ju = j as usize;
            if part.first[ju] >= scope.lo && part.last[ju] <= scope.hi {
                let piece = cuts.partition_point(|&c| c <= part.first[ju]) - 1;
                counts[piece] += 1;
            }
        }
        let mut pieces: Vec<Component> = cuts
            .windows(2)
            .zip(&counts)
            .filter(|(_, &count)| count > 0)
            .map(|(w, &count)| Component { lo: w[0], hi: w[1], count, batch: depth, from })
            .collect();
        if pieces.len() == 1 {
            // Only the scope's edge emptied: keep searching one piece, but
            // keep the constraint (not a new root).
            return None;
        }
        let restore = Restore::Truncate(self.waiting.len());
        let first = pieces.remove(0);
        // Searched in order: the next piece on top.
        self.waiting.extend(pieces.into_iter().rev());
        Some((first, restore))
    }

    fn key_of(&self, i: u32) -> Key {
        Key { offset: self.floor[i as usize], rank: self.rank[i as usize] }
    }

    fn in_scope(&self, i: usize, scope: Component) -> bool {
        self.part.first[i] >= scope.lo && self.part.last[i] <= scope.hi
    }

    /// For the unplaced buffers of `scope` at a node with constraint `key`:
    /// the lowest floor + size (nothing may be placed at or above it), the
    /// memo key of the state with this scope, and whether the buffers behind
    /// the key still fit ([`Search::behind_fit`]).
    fn survey(&mut self, scope: Component, key: Key) -> (u64, u128, bool) {
        let mut behind = std::mem::take(&mut self.behind);
        behind.clear();
        let (ceiling, hash) = match &self.frontier {
            Some(frontier) => {
                let (a, b) = self.range(scope);
                frontier.below(a, b, pack(key.offset, key.rank, 0), &mut behind);
                let found = (frontier.ceiling(a, b), self.hash ^ frontier.hash(a, b));
                #[cfg(test)]
                {
                    let mut scan = Vec::new();
                    assert_eq!(self.scan_survey(scope, key, &mut scan), found);
                    assert_eq!(scan, behind);
                }
                found
            }
            None => self.scan_survey(scope, key, &mut behind),
        };
        if self.scanned {
            self.work += (self.unplaced.len() / SCANS_PER_UNIT) as u64;
        }
        #[cfg(test)]
        let skip = self.skip_behind || self.audit;
        #[cfg(not(test))]
        let skip = false;
        let alive = behind.is_empty() || skip || self.behind_fit(&behind, key.offset);
        #[cfg(test)]
        {
            self.claims = Claims::default();
            if self.audit && !behind.is_empty() {
                self.claims.ties = behind.iter().copied().filter(|&j| self.floor[j as usize] == key.offset).collect();
                self.claims.dead = !self.behind_fit(&behind, key.offset);
            }
            self.behind_nodes += u64::from(!behind.is_empty());
            self.behind_kills += u64::from(!alive || self.claims.dead);
        }
        self.behind = behind;
        (ceiling, hash, alive)
    }

    /// A buffer *behind* the node's key (floor below the key's offset, or at
    /// it with a lower rank) cannot go at its floor: in any canonical plan
    /// through this node everything still to place lies at or above
    /// `offset`, so something placed later holds it up. That is an unplaced
    /// buffer it conflicts with, overlapping where it would go now (floor
    /// below its floor + size), so it ends at least that buffer's size above
    /// `offset`: its *effective floor*. With no such buffer it can never be
    /// placed. Checks the height and, in the sections behind buffers span,
    /// the section bound with effective floors.
    ///
    /// A buffer behind only by rank can still go at its floor below this
    /// node when a split at `offset` starts its component afresh (rank 0);
    /// but that plan's canonical path placed the buffer before the one of
    /// higher rank, not through this node, so cutting the node loses no
    /// plan. The tests check the claims against every plan found
    /// (`Search::audit`).
    fn behind_fit(&mut self, behind: &[u32], offset: u64) -> bool {
        let part = self.part;
        let target = self.target;
        self.stamp += 1;
        for &j in behind {
            let ju = j as usize;
            let reach = self.floor[ju] + part.size[ju];
            // Smallest first: the first that qualifies is the smallest.
            let Some(&k) = part
                .conflicts_by_size(ju)
                .iter()
                .find(|&&k| self.offset[k as usize] == UNPLACED && self.floor[k as usize] < reach)
            else {
                return false;
            };
            let lift = part.size[k as usize];
            let effective = part.lift(ju, offset.saturating_add(lift));
            #[cfg(test)]
            self.claims.effective.push((j, effective));
            if effective.saturating_add(part.size[ju]) > target {
                return false;
            }
            self.effective[ju] = (self.stamp, effective);
        }
        for &j in behind {
            let ju = j as usize;
            for s in part.first[ju] as usize..part.last[ju] as usize {
                if self.seen[s] == self.stamp {
                    continue;
                }
                self.seen[s] = self.stamp;
                let Some(room) = target.checked_sub(self.pending.get(s)) else { return false };
                let effective = |w: usize| match self.effective[w] {
                    (stamp, e) if stamp == self.stamp => e,
                    _ => self.floor[w],
                };
                let w = self.witness[s];
                if w != NO_WITNESS && self.offset[w as usize] == UNPLACED && effective(w as usize) <= room {
                    continue;
                }
                let after = if w == NO_WITNESS { 0 } else { self.witness_at[s] as usize + 1 };
                let (found, scanned) = scan_from(part.residents(s), after, |k| {
                    self.offset[k as usize] == UNPLACED && effective(k as usize) <= room
                });
                self.work += scanned;
                match found {
                    // Its floor is no higher than its effective floor, so
                    // it is a witness in the plain sense too.
                    Some(k) => self.hand_over(s, k),
                    None => return false,
                }
            }
        }
        true
    }

    /// For tests: checks the claims of the nodes on `stack` against the
    /// plan just found through them (see [`Search::audit`]).
    ///
    /// The rule's reasoning holds of every plan through a node along the
    /// plan's *canonical* path: the one that places, at each node, the
    /// buffer of least key among those at their floor in the plan. Other
    /// paths reach it too: a split at the offset of the key starts a
    /// component afresh (rank 0), so a buffer behind the key only by rank
    /// may still go at its floor, after a buffer of higher rank. The
    /// canonical path placed it first, so such a plan's path is not checked
    /// at that node (a *detour*). Everywhere else a plan refutes the rule.
    #[cfg(test)]
    fn audit_path(&mut self, stack: &[Frame]) {
        self.audited.plans += 1;
        for (depth, frame) in stack.iter().enumerate() {
            let (key, claims) = (frame.key, &frame.claims);
            if claims.ties.iter().any(|&j| self.offset[j as usize] == key.offset) {
                self.audited.detours += 1;
                continue;
            }
            self.audited.judged += u64::from(claims.dead || !claims.effective.is_empty());
            if claims.dead {
                self.audited
                    .violations
                    .push(format!("a plan passes through a node judged dead: depth {depth}, key {key:?}"));
            }
            for &(j, effective) in &claims.effective {
                let offset = self.offset[j as usize];
                self.audited.checked += 1;
                self.audited.exact += u64::from(offset == effective);
                if offset < effective {
                    self.audited.violations.push(format!(
                        "buffer {j} behind key {key:?} (depth {depth}) ends at {offset}, below its effective floor {effective}"
                    ));
                }
            }
        }
    }

    /// [`Search::survey`]'s ceiling and hash, and the buffers behind the
    /// key (in index order), by a scan of every unplaced buffer.
    fn scan_survey(&self, scope: Component, key: Key, behind: &mut Vec<u32>) -> (u64, u128) {
        let mut ceiling = u64::MAX;
        let mut hash = self.hash;
        for &i in &self.unplaced {
            let iu = i as usize;
            if self.in_scope(iu, scope) {
                ceiling = ceiling.min(self.floor[iu] + self.part.size[iu]);
                hash ^= self.scope_hashes[iu];
                if self.key_of(i) < key {
                    behind.push(i);
                }
            }
        }
        behind.sort_unstable();
        (ceiling, hash)
    }

    /// The unplaced buffer of `scope` with the smallest key above `after`
    /// whose floor is below `ceiling`.
    fn first_candidate(&mut self, after: Key, ceiling: u64, scope: Component) -> Option<(Key, u32)> {
        if self.scanned {
            self.work += (self.unplaced.len() / SCANS_PER_UNIT) as u64;
        }
        let Some(frontier) = &self.frontier else { return self.scan_first(after, ceiling, scope) };
        let (a, b) = self.range(scope);
        let first = frontier.least_above(a, b, pack(after.offset, after.rank, u32::MAX)).and_then(|k| {
            let i = index_of(k);
            (offset_of(k) < ceiling).then(|| (self.key_of(i), i))
        });
        #[cfg(test)]
        assert_eq!(first, self.scan_first(after, ceiling, scope));
        first
    }

    /// [`Search::first_candidate`] by a scan of every unplaced buffer.
    fn scan_first(&self, after: Key, ceiling: u64, scope: Component) -> Option<(Key, u32)> {
        let mut best: Option<(Key, u32)> = None;
        for &i in &self.unplaced {
            let k = self.key_of(i);
            if k > after && k.offset < ceiling && best.is_none_or(|(b, _)| k < b) && self.in_scope(i as usize, scope) {
                best = Some((k, i));
            }
        }
        best
    }

    /// Appends a node's children to `candidates`, in key order: the
    /// unplaced buffers of `scope` with a key above `after` and a floor
    /// below `ceiling`. A node's floors and ranks stay as they are while it
    /// is on the stack (children undo what they change), so the list stays
    /// right for the node's whole life.
    fn list_candidates(&mut self, after: Key, ceiling: u64, scope: Component) {
        let start = self.candidates.len();
        match &self.frontier {
            Some(frontier) => {
                let (a, b) = self.range(scope);
                let mut keys: Vec<Packed> = Vec::new();
                frontier.between(a, b, pack(after.offset, after.rank, u32::MAX), ceiling, &mut keys);
                keys.sort_unstable();
                let listed =
                    keys.into_iter().map(|k| (Key { offset: offset_of(k), rank: (k >> 32) as u32 }, index_of(k)));
                self.candidates.extend(listed);
            }
            None => self.scan_list(after, ceiling, scope),
        }
        self.work +=
            if self.scanned { self.unplaced.len() / SCANS_PER_UNIT } else { self.candidates.len() - start } as u64;
        #[cfg(test)]
        {
            let got = self.candidates.split_off(start);
            self.scan_list(after, ceiling, scope);
            assert_eq!(self.candidates[start..], got[..]);
        }
    }

    /// [`Search::list_candidates`] by a scan of every unplaced buffer.
    fn scan_list(&mut self, after: Key, ceiling: u64, scope: Component) {
        let start = self.candidates.len();
        for &i in &self.unplaced {
            let k = self.key_of(i);
            if k > after && k.offset < ceiling && self.in_scope(i as usize, scope) {
                self.candidates.push((k, i));
            }
        }
        self.candidates[start..].sort_unstable();
    }

    /// Places buffer `i` at `offset` and updates floors and section data.
    /// Returns false when a bound shows the target cannot be met; the caller
    /// then undoes with [`Search::unplace`] either way.
    fn place(&mut self, i: u32, offset: u64, target: u64, scope: Component, fullest: u64) -> Option<u64> {
        let part = self.part;
        let iu = i as usize;
        let size = part.size[iu];
        let top = offset + size;
        // The sections it spans are walked twice each way (crossing counts
        // and the pending bytes, placed and undone).
        let span = (part.last[iu] - part.first[iu]) as u64;
        self.work += NODE_WORK + part.conflicts(iu).len() as u64 + span;
        self.offset[iu] = offset;
        if let Some(frontier) = &mut self.frontier {
            frontier.remove(iu);
            frontier.toggle(iu, self.scope_hashes[iu]);
        }
        self.hash ^= item_hash(i, self.floor[iu]) ^ item_hash(i, UNPLACED);
        let p = self.position[iu] as usize;
        let last = *self.unplaced.last().expect("i is unplaced");
        self.unplaced.swap_remove(p);
        if last != i {
            self.position[last as usize] = p as u32;
        }
        for b in part.first[iu] + 1..part.last[iu] {
            self.crossing[b as usize] -= 1;
        }
        let mut ok = top <= target;
        let (first, last) = (part.first[iu] as usize, part.last[iu] as usize);
        self.pending.change(first, last, size, true);
        ok &= top.saturating_add(self.pending.fullest(first, last)) <= target;
        let floor_mark = self.floor_log.len();
        for &j in part.conflicts(iu) {
            let ju = j as usize;
            if self.offset[ju] != UNPLACED || self.floor[ju] >= top {
                continue;
            }
            let lifted = part.lift(ju, top);
            self.floor_log.push((j, self.floor[ju]));
            self.hash ^= item_hash(j, self.floor[ju]) ^ item_hash(j, lifted);
            self.floor[ju] = lifted;
            self.refresh(ju);
            self.work += LIFT_WORK;
            ok &= lifted.saturating_add(part.size[ju]) <= target;
        }
        if !ok {
            return None;
        }
        self.sections_fit(i, floor_mark, offset, target, scope, fullest)
    }

    /// The section bound over the scope's sections: everything still to
    /// place in a section goes above the current offset and above the
    /// lowest floor among them, and must fit under the target.
    ///
    /// Incremental: the parent node passed it, with a valid witness in
    /// every section, and a move only lowers the bytes still to place, so
    /// only the sections witnessed by `i` (just placed) or by a buffer
    /// whose floor it raised (logged from `floor_mark`) can fail; for the
    /// rest only the higher offset matters, which the fullest section of
    /// the scope decides. `fullest` bounds that from above (the parent's
    /// value); it is worked out afresh only when the bound alone would
    /// fail. Returns the new bound when the node passes.
    fn sections_fit(
        &mut self,
        i: u32,
        floor_mark: usize,
        offset: u64,
        target: u64,
        scope: Component,
        fullest: u64,
    ) -> Option<u64> {
        let (lo, hi) = (scope.lo as usize, scope.hi as usize);
        let mut fullest = fullest;
        if offset.checked_add(fullest).is_none_or(|h| h > target) {
            fullest = self.pending.fullest(lo, hi);
            if offset.checked_add(fullest).is_none_or(|h| h > target) {
                return None;
            }
        }
        self.stamp += 1;
        if !self.witnesses_fit(i, target) {
            return None;
        }
        // Witness hand-overs append to the log; the raised floors come first.
        let lifted = self.floor_log.len();
        for k in floor_mark..lifted {
            let j = self.floor_log[k].0;
            if j & WITNESS == 0 && !self.witnesses_fit(j, target) {
                return None;
            }
        }
        Some(fullest)
    }

    /// Whether the sections buffer `w` witnesses still fit (see
    /// [`Search::section_fits`]).
    fn witnesses_fit(&mut self, w: u32, target: u64) -> bool {
        let list = std::mem::take(&mut self.witnessed[w as usize]);
        self.work += list.len() as u64;
        // A recheck hands sections to other buffers only, never to `w`
        // (it no longer qualifies), so the list is not appended to meanwhile.
        let fit = list.iter().all(|&s| self.witness[s as usize] != w || self.section_fits(s as usize, target));
        debug_assert!(self.witnessed[w as usize].is_empty());
        self.witnessed[w as usize] = list;
        fit
    }

    /// Whether section `s`'s lowest unplaced floor plus its bytes still to
    /// place fit under the target (once per stamp). The lowest floor is not
    /// computed: one *witness* buffer with a floor low enough suffices, and
    /// the last one usually still is.
    fn section_fits(&mut self, s: usize, target: u64) -> bool {
        if self.seen[s] == self.stamp {
            return true;
        }
        self.seen[s] = self.stamp;
        let pending = self.pending.get(s);
        if pending == 0 {
            return true;
        }
        let Some(room) = target.checked_sub(pending) else { return false };
        let w = self.witness[s];
        if w != NO_WITNESS && self.offset[w as usize] == UNPLACED && self.floor[w as usize] <= room {
            return true;
        }
        let after = if w == NO_WITNESS { 0 } else { self.witness_at[s] as usize + 1 };
        let (found, scanned) = scan_from(self.part.residents(s), after, |j| {
            self.offset[j as usize] == UNPLACED && self.floor[j as usize] <= room
        });
        self.work += scanned;
        match found {
            Some(k) => {
                self.hand_over(s, k);
                true
            }
            None => false,
        }
    }

    /// Makes the resident at position `at` the witness of section `s`,
    /// logged for undoing.
    fn hand_over(&mut self, s: usize, at: usize) {
        let w = self.part.residents(s)[at];
        let old = std::mem::replace(&mut self.witness[s], w);
        let old_at = std::mem::replace(&mut self.witness_at[s], at as u32);
        self.floor_log.push((WITNESS | s as u32, (old_at as u64) << 32 | old as u64));
        self.witnessed[w as usize].push(s as u32);
    }

    /// Undoes [`Search::place`] of buffer `i`, given the floor log's length
    /// and the state hash before.
    fn unplace(&mut self, i: u32, floor_log: usize, old_hash: u128) {
        let part = self.part;
        let iu = i as usize;
        let size = part.size[iu];
        while self.floor_log.len() > floor_log {
            let (j, old) = self.floor_log.pop().expect("longer than mark");
            if j & WITNESS != 0 {
                let s = (j & !WITNESS) as usize;
                let w = std::mem::replace(&mut self.witness[s], old as u32);
                self.witness_at[s] = (old >> 32) as u32;
                let popped = self.witnessed[w as usize].pop();
                debug_assert_eq!(popped, Some(s as u32));
                continue;
            }
            self.floor[j as usize] = old;
            self.refresh(j as usize);
        }
        self.pending.change(part.first[iu] as usize, part.last[iu] as usize, size, false);
        for b in part.first[iu] + 1..part.last[iu] {
            self.crossing[b as usize] += 1;
        }
        self.offset[iu] = UNPLACED;
        self.refresh(iu);
        if let Some(frontier) = &mut self.frontier {
            frontier.toggle(iu, self.scope_hashes[iu]);
        }
        self.hash = old_hash;
        self.position[iu] = self.unplaced.len() as u32;
        self.unplaced.push(i);
    }
}
