//! Fixed buffers that overlap each other. TFLite Micro trusts an offline
//! plan: two offline-planned tensors may share memory on purpose, even while
//! both are live. `tflm` accepts that as TFLM does; every other algorithm
//! and the validator accept it with the trust-fixed option.
//!
//! This module counts such overlaps and replaces the fixed buffers by an
//! equivalent set of pairwise-disjoint blocks (the union of their step ×
//! address rectangles), so algorithms, the lower bound and the validator
//! see a problem whose fixed buffers do not overlap: a planned buffer avoids
//! the blocks exactly when it avoids every fixed buffer, and the bytes live
//! at a step count overlapping fixed bytes once.
//!
//! Costs, for k fixed buffers: counting O(k log k); the blocks O(k · s)
//! where s is the number of distinct steps at which a fixed buffer starts or
//! ends (at most 2k), and only built when fixed buffers overlap.

use std::collections::{BTreeMap, BTreeSet};

use super::problem::{Buffer, Lifetime, Problem};
use super::validate::Overlap;

/// A fixed buffer that occupies memory: steps `[start, end)`, bytes
/// `[lo, hi)`, and its index among all buffers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Rect {
    pub index: usize,
    pub start: i64,
    pub end: i64,
    pub lo: u64,
    pub hi: u64,
}

impl Rect {
    /// The rectangle of buffer `index` at `offset`, or `None` when it occupies
    /// nothing. `offset + size` must not overflow (checked by callers).
    pub fn of(index: usize, b: &Buffer, offset: u64) -> Option<Rect> {
        b.occupies().then(|| Rect {
            index,
            start: b.lifetime.start,
            end: b.lifetime.end,
            lo: offset,
            hi: offset + b.size,
        })
    }
}

/// The fixed buffers of a problem that occupy memory, in index order.
pub(crate) fn fixed_rects(problem: &Problem) -> Vec<Rect> {
    let buffers = problem.buffers();
    (0..buffers.len()).filter_map(|i| buffers[i].fixed_offset.and_then(|o| Rect::of(i, &buffers[i], o))).collect()
}

/// How many pairs of fixed buffers share a byte at some step, and the first.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct FixedOverlaps {
    /// Unordered pairs of fixed buffers, both occupying memory, that are live
    /// at a common step and share at least one byte.
    pub count: u64,
    /// The first such pair met by a sweep over steps: the earliest step at
    /// which two fixed buffers overlap; at that step, the lowest-indexed
    /// buffer starting there that meets an earlier-started (or lower-indexed)
    /// one, paired with the lowest-indexed buffer it meets. `None` when
    /// `count` is 0.
    pub first: Option<Overlap>,
}

/// Counts of values at ranks, with prefix sums (a Fenwick tree).
struct Counts(Vec<i64>);

impl Counts {
    fn add(&mut self, rank: usize, delta: i64) {
        let mut i = rank + 1;
        while i < self.0.len() {
            self.0[i] += delta;
            i += i & i.wrapping_neg();
        }
    }

    /// Sum over ranks `< rank`.
    fn below(&self, rank: usize) -> i64 {
        let (mut i, mut sum) = (rank, 0);
        while i > 0 {
            sum += self.0[i];
            i -= i & i.wrapping_neg();
        }
        sum
    }
}

/// Counts the overlapping pairs among `rects`, which must be in index order.
/// A sweep over steps keeps the live rectangles' starts and ends counted by
/// address, so an arrival `[a, b)` meets `#(lo < b) - #(hi <= a)` live ones.
pub(crate) fn count_overlaps(rects: &[Rect]) -> FixedOverlaps {
    let mut coords: Vec<u64> = rects.iter().flat_map(|r| [r.lo, r.hi]).collect();
    coords.sort_unstable();
    coords.dedup();
    let rank = |v: u64| coords.binary_search(&v).expect("every address is a coordinate");
    let (mut los, mut his) = (Counts(vec![0; coords.len() + 1]), Counts(vec![0; coords.len() + 1]));
    // (step, is_start, k): ends before starts at a step (half-open lifetimes).
    let mut events: Vec<(i64, bool, usize)> = Vec::with_capacity(rects.len() * 2);
    for (k, r) in rects.iter().enumerate() {
        events.push((r.start, true, k));
        events.push((r.end, false, k));
    }
    events.sort_unstable();
    let mut live: BTreeSet<usize> = BTreeSet::new();
    let mut found = FixedOverlaps::default();
    for (step, is_start, k) in events {
        let r = rects[k];
        let (lo, hi) = (rank(r.lo), rank(r.hi));
        if !is_start {
            live.remove(&k);
            los.add(lo, -1);
            his.add(hi, -1);
            continue;
        }
        // Live ones ending at or below our start cannot start at or above our
        // end (their start is below their end), so they are among those
        // starting below our end: the difference counts exactly the ones met.
        let met = los.below(hi) - his.below(lo + 1);
        if met > 0 {
            found.count += met as u64;
            if found.first.is_none() {
                let j = live
                    .iter()
                    .copied()
                    .find(|&j| rects[j].lo < r.hi && r.lo < rects[j].hi)
                    .expect("a met rectangle is live");
                let (a, b) = (rects[j].index.min(r.index), rects[j].index.max(r.index));
                found.first = Some(Overlap { first: a, second: b, step });
            }
        }
        live.insert(k);
        los.add(lo, 1);
        his.add(hi, 1);
    }
    found
}

/// A block of the union of fixed rectangles: steps `[start, end)`, bytes
/// `[lo, hi)`. Blocks never share a byte at a step.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Block {
    pub start: i64,
    pub end: i64,
    pub lo: u64,
    pub hi: u64,
}

/// The union of `rects` as disjoint blocks: between two consecutive steps at
/// which a rectangle starts or ends the live set is constant, its address
/// union is a few disjoint ranges (touching ranges merged), and a range that
/// stays the same across such slabs stays one block. Sorted by start step,
/// then address.
pub(crate) fn union_blocks(rects: &[Rect]) -> Vec<Block> {
    let mut times: Vec<i64> = rects.iter().flat_map(|r| [r.start, r.end]).collect();
    times.sort_unstable();
    times.dedup();
    let mut by_start: Vec<usize> = (0..rects.len()).collect();
    crate::sort::sort_by_key(&mut by_start, |&k| rects[k].start);
    let mut by_end = by_start.clone();
    crate::sort::sort_by_key(&mut by_end, |&k| rects[k].end);
    let (mut next_start, mut next_end) = (0, 0);
    // Live rectangles by (lo, k) -> hi.
    let mut live: BTreeMap<(u64, usize), u64> = BTreeMap::new();
    // Open blocks: (lo, hi, since), sorted by lo.
    let mut open: Vec<(u64, u64, i64)> = Vec::new();
    let mut blocks = Vec::new();
    for &t in &times {
        while next_end < by_end.len() && rects[by_end[next_end]].end == t {
            let k = by_end[next_end];
            live.remove(&(rects[k].lo, k));
            next_end += 1;
        }
        while next_start < by_start.len() && rects[by_start[next_start]].start == t {
            let k = by_start[next_start];
            live.insert((rects[k].lo, k), rects[k].hi);
            next_start += 1;
        }
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for (&(lo, _), &hi) in &live {
            match ranges.last_mut() {
                Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
                _ => ranges.push((lo, hi)),
            }
        }
        // Both lists are sorted and disjoint: a range present in both goes
        // on; the others close (old) or open (new) at t.
        let mut still_open = Vec::with_capacity(ranges.len());
        let mut old = open.iter().peekable();
        for &(lo, hi) in &ranges {
            while let Some(&&(olo, ohi, since)) = old.peek() {
                if (olo, ohi) >= (lo, hi) {
                    break;
                }
                blocks.push(Block { start: since, end: t, lo: olo, hi: ohi });
                old.next();
            }
            match old.peek() {
                Some(&&(olo, ohi, since)) if (olo, ohi) == (lo, hi) => {
                    still_open.push((lo, hi, since));
                    old.next();
                }
                _ => still_open.push((lo, hi, t)),
            }
        }
        for &(olo, ohi, since) in old {
            blocks.push(Block { start: since, end: t, lo: olo, hi: ohi });
        }
        open = still_open;
    }
    debug_assert!(open.is_empty(), "every rectangle ends at a listed step");
    blocks.sort_unstable_by_key(|b| (b.start, b.lo));
    blocks
}

/// A problem whose fixed buffers overlap, rewritten with the fixed buffers
/// that occupy memory replaced by the blocks of their union.
pub(crate) struct Flat {
    /// Every buffer except the occupying fixed ones, in order of addition,
    /// then the blocks as fixed buffers.
    pub problem: Problem,
    /// The original index of each buffer of `problem`; `None` for a block.
    pub origin: Vec<Option<usize>>,
}

impl Flat {
    /// Rewrites `problem` (whose occupying fixed buffers are `rects`).
    pub fn new(problem: &Problem, rects: &[Rect]) -> Flat {
        let buffers = problem.buffers();
        let mut occupying_fixed = vec![false; buffers.len()];
        for r in rects {
            occupying_fixed[r.index] = true;
        }
        let mut kept = Vec::with_capacity(buffers.len());
        let mut origin = Vec::with_capacity(buffers.len());
        for (i, b) in buffers.iter().enumerate().filter(|&(i, _)| !occupying_fixed[i]) {
            kept.push(*b);
            origin.push(Some(i));
        }
        for block in union_blocks(rects) {
            let lifetime = Lifetime { start: block.start, end: block.end };
            kept.push(Buffer { size: block.hi - block.lo, lifetime, fixed_offset: Some(block.lo) });
            origin.push(None);
        }
        Flat { problem: problem.rewritten(kept), origin }
    }

    /// Offsets of the original buffers from offsets of the rewritten ones:
    /// fixed buffers keep theirs.
    pub fn to_original(&self, original: &Problem, offsets: &[u64]) -> Vec<u64> {
        let mut out: Vec<u64> = original.buffers().iter().map(|b| b.fixed_offset.unwrap_or(0)).collect();
        for (d, o) in self.origin.iter().enumerate() {
            if let Some(i) = *o {
                out[i] = offsets[d];
            }
        }
        out
    }

    /// Offsets of the rewritten buffers from offsets of the original ones:
    /// blocks at their addresses.
    pub fn to_flat(&self, offsets: &[u64]) -> Vec<u64> {
        let buffers = self.problem.buffers();
        self.origin
            .iter()
            .enumerate()
            .map(|(d, o)| o.map_or_else(|| buffers[d].fixed_offset.expect("a block is fixed"), |i| offsets[i]))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::algo::tests::Rng;

    fn rect(index: usize, start: i64, end: i64, lo: u64, hi: u64) -> Rect {
        Rect { index, start, end, lo, hi }
    }

    /// Every pair checked: the reference for the sweep.
    fn plain_count(rects: &[Rect]) -> u64 {
        let mut n = 0;
        for (a, r) in rects.iter().enumerate() {
            for s in &rects[a + 1..] {
                n += u64::from(r.start < s.end && s.start < r.end && r.lo < s.hi && s.lo < r.hi);
            }
        }
        n
    }

    fn random_rects(rng: &mut Rng, n: usize) -> Vec<Rect> {
        (0..n)
            .map(|i| {
                let start = rng.below(12) as i64;
                let lo = rng.below(10) * 8;
                rect(i, start, start + 1 + rng.below(5) as i64, lo, lo + 8 * (1 + rng.below(4)))
            })
            .collect()
    }

    #[test]
    fn counts_pairs_and_names_the_first() {
        // 0 and 1 share bytes 4..8 at step 2; 2 only touches 0's bytes; 3
        // shares 1's bytes but no step with it.
        let rects = [rect(0, 0, 3, 0, 8), rect(1, 2, 4, 4, 12), rect(2, 0, 3, 8, 16), rect(3, 4, 6, 4, 8)];
        let found = count_overlaps(&rects);
        assert_eq!(found.count, 2, "0-1 and 1-2");
        assert_eq!(found.first, Some(Overlap { first: 0, second: 1, step: 2 }));
        assert_eq!(count_overlaps(&[rect(0, 0, 2, 0, 8), rect(1, 2, 4, 0, 8)]), FixedOverlaps::default());
    }

    #[test]
    fn sweep_count_matches_every_pair_checked() {
        let mut rng = Rng::new(11);
        for round in 0..400 {
            let rects = random_rects(&mut rng, 1 + round % 25);
            let found = count_overlaps(&rects);
            assert_eq!(found.count, plain_count(&rects), "round {round}: {rects:?}");
            assert_eq!(found.first.is_some(), found.count > 0);
            if let Some(o) = found.first {
                let (r, s) = (rects[o.first], rects[o.second]);
                let live = |x: &Rect| x.start <= o.step && o.step < x.end;
                assert!(live(&r) && live(&s) && r.lo < s.hi && s.lo < r.hi, "round {round}: {o:?}");
                // No pair overlaps at an earlier step.
                for a in &rects {
                    for b in &rects {
                        let step = a.start.max(b.start);
                        let meet = a.index < b.index && step < a.end.min(b.end) && a.lo < b.hi && b.lo < a.hi;
                        assert!(!meet || step >= o.step, "round {round}: {a:?} {b:?} before {o:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn blocks_cover_exactly_the_union_and_never_overlap() {
        let mut rng = Rng::new(5);
        for round in 0..300 {
            let rects = random_rects(&mut rng, 1 + round % 20);
            let blocks = union_blocks(&rects);
            for t in -1..20 {
                for byte in (0..120).step_by(4) {
                    let covered = |lo: u64, hi: u64, s: i64, e: i64| s <= t && t < e && lo <= byte && byte < hi;
                    let in_rects = rects.iter().any(|r| covered(r.lo, r.hi, r.start, r.end));
                    let in_blocks = blocks.iter().filter(|b| covered(b.lo, b.hi, b.start, b.end)).count();
                    assert_eq!(
                        in_blocks,
                        usize::from(in_rects),
                        "round {round}, step {t}, byte {byte}: {rects:?} -> {blocks:?}"
                    );
                }
            }
        }
    }

    /// A random problem whose fixed buffers often overlap each other.
    fn overlapping_problem(rng: &mut Rng, n: usize) -> Problem {
        let mut p = Problem::new(8).unwrap();
        for _ in 0..n {
            let start = rng.below(10) as i64;
            let lifetime = Lifetime::half_open(start, start + rng.below(5) as i64).unwrap();
            let size = [0, 8, 16, 24, 40, 64][rng.below(6) as usize];
            let fixed = (rng.below(2) == 0).then(|| rng.below(8) * 8);
            p.push(size, lifetime, fixed).unwrap();
        }
        p
    }

    #[test]
    fn every_algorithm_plans_around_trusted_overlapping_fixed_buffers() {
        use crate::plan::{validate_with_fixed, Algorithm, Planner};
        let mut rng = Rng::new(3);
        let mut overlapping = 0;
        for round in 0..120 {
            let problem = overlapping_problem(&mut rng, 2 + round % 18);
            let is_fixed: Vec<bool> = problem.buffers().iter().map(|b| b.fixed_offset.is_some()).collect();
            for &algorithm in Algorithm::all() {
                let mut planner = Planner::new();
                planner.set_alignment(8).unwrap();
                planner.set_algorithm(algorithm);
                planner.set_trust_fixed(true);
                planner.set_node_limit(Some(2000));
                for b in problem.buffers() {
                    planner.add_buffer(b.size, b.lifetime, b.fixed_offset).unwrap();
                }
                let o = planner.plan().unwrap_or_else(|e| panic!("round {round}, {algorithm:?}: {e:?}")).clone();
                // tflm plans buffers never used live at step -1.
                let seen: Vec<Buffer> = problem
                    .buffers()
                    .iter()
                    .map(|b| match algorithm {
                        Algorithm::Tflm => Buffer { lifetime: b.lifetime.tflm_never_used(), ..*b },
                        _ => *b,
                    })
                    .collect();
                let verdict = validate_with_fixed(&seen, &o.offsets, &is_fixed, true).unwrap();
                assert_eq!(verdict.overlap, None, "round {round}, {algorithm:?}");
                // tflm's peak is TFLite Micro's: over every buffer, zero-size
                // and never-used ones included.
                let b = problem.buffers();
                let peak = match algorithm {
                    Algorithm::Tflm => (0..b.len())
                        .filter(|&i| !seen[i].lifetime.is_empty())
                        .map(|i| o.offsets[i] + b[i].size)
                        .fold(verdict.peak, u64::max),
                    _ => verdict.peak,
                };
                assert_eq!((peak, verdict.fixed_overlaps), (o.peak, o.fixed_overlaps));
                assert!(o.peak >= o.lower_bound && o.offsets.iter().all(|x| x % 8 == 0));
                overlapping += usize::from(algorithm == Algorithm::Auto && o.fixed_overlaps.count > 0);
            }
        }
        assert!(overlapping > 40, "only {overlapping} instances with overlapping fixed buffers");
    }

    #[test]
    fn tflm_places_around_the_blocks_as_around_the_overlapping_buffers() {
        // So `auto`, which runs the others on the blocks, keeps its promise
        // of never being worse than `tflm` with trusted overlaps too.
        use crate::plan::algo::SearchLimits;
        use crate::plan::Algorithm;
        let mut rng = Rng::new(9);
        for round in 0..400 {
            let problem = overlapping_problem(&mut rng, 2 + round % 18);
            let rects = fixed_rects(&problem);
            let flat = Flat::new(&problem, &rects);
            let limits = SearchLimits::unlimited(0);
            let tflm = Algorithm::Tflm.implementation();
            let direct = tflm.place(&problem, &limits).offsets;
            let around_blocks = flat.to_original(&problem, &tflm.place(&flat.problem, &limits).offsets);
            assert_eq!(direct, around_blocks, "round {round}: {:?}", problem.buffers());
        }
    }

    #[test]
    fn a_range_that_does_not_change_stays_one_block() {
        // 1 overlaps 0 at steps 2..4 only: 0's range is split there, and
        // the disjoint 2 stays one block throughout.
        let rects = [rect(0, 0, 10, 0, 16), rect(1, 2, 4, 8, 32), rect(2, 0, 10, 64, 80)];
        assert_eq!(
            union_blocks(&rects),
            vec![
                Block { start: 0, end: 2, lo: 0, hi: 16 },
                Block { start: 0, end: 10, lo: 64, hi: 80 },
                Block { start: 2, end: 4, lo: 0, hi: 32 },
                Block { start: 4, end: 10, lo: 0, hi: 16 },
            ]
        );
    }
}
