//! Checks any plan, made by nnmem or elsewhere: no two buffers live at the
//! same step may share a byte. A sweep over time with the live buffers kept
//! ordered by offset, so each arrival is compared with its two neighbours
//! only: O(n log n) time, O(n) memory.

use std::collections::BTreeMap;
use std::fmt;

use super::events::{time_ordered, Event};
use super::fixed::{count_overlaps, union_blocks, FixedOverlaps, Rect};
use super::problem::{Buffer, Lifetime};

/// Two buffers that are live at the same step and share bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Overlap {
    /// The lower index of the pair.
    pub first: usize,
    /// The higher index of the pair.
    pub second: usize,
    /// The first step at which both are live.
    pub step: i64,
}

impl fmt::Display for Overlap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "buffers {} and {} overlap in memory at step {}", self.first, self.second, self.step)
    }
}

/// Why a plan is not valid.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Invalid {
    /// Two live buffers share bytes; the first such pair met by the sweep
    /// (earliest step, then lowest index).
    Overlap(Overlap),
    /// `offset + size` of this buffer overflows 64 bits.
    OffsetOverflow(usize),
    /// The number of offsets differs from the number of buffers.
    LengthMismatch {
        /// Number of buffers.
        buffers: usize,
        /// Number of offsets.
        offsets: usize,
    },
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Invalid::Overlap(o) => o.fmt(f),
            Invalid::OffsetOverflow(i) => write!(f, "buffer {i}: offset + size overflows 64 bits"),
            Invalid::LengthMismatch { buffers, offsets } => {
                write!(f, "{buffers} buffers but {offsets} offsets")
            }
        }
    }
}

/// Validates `offsets` for `buffers` and returns the plan's peak (highest
/// `offset + size` over buffers that occupy memory).
///
/// Buffers of size zero or with an empty lifetime occupy nothing and never
/// overlap, but their `offset + size` must still fit 64 bits. Fixed offsets
/// are not checked here (a plan made elsewhere may move them); the planner
/// checks its own.
pub fn validate(buffers: &[Buffer], offsets: &[u64]) -> Result<u64, Invalid> {
    let peak = peak_checked(buffers, offsets)?;
    // Live buffers keyed by (offset, index); they never overlap each other,
    // so an arrival only needs checking against its neighbours.
    let mut live = LiveByOffset::default();
    for Event { step: t, is_start, index: i } in time_ordered(buffers) {
        let key = (offsets[i], i);
        if !is_start {
            live.remove(key);
            continue;
        }
        let end = offsets[i] + buffers[i].size;
        let (below, above) = live.neighbours(key);
        if let Some((j, e)) = below {
            if e > offsets[i] {
                return Err(Invalid::Overlap(pair(i, j, t)));
            }
        }
        if let Some((j, o)) = above {
            if o < end {
                return Err(Invalid::Overlap(pair(i, j, t)));
            }
        }
        live.insert(key, end);
    }
    Ok(peak)
}

/// Live buffers up to which the sweep keeps them in a sorted list rather
/// than a B-tree: graphs hold a few dozen at a time, where a list's binary
/// search and short moves beat the tree's nodes.
const LIST_UP_TO: usize = 128;

/// A live buffer's index and one of its ends.
type IndexAnd = (usize, u64);

/// The live buffers by `(offset, index)`, each with its end: a sorted list
/// while few, a B-tree past [`LIST_UP_TO`].
enum LiveByOffset {
    List(Vec<((u64, usize), u64)>),
    Tree(BTreeMap<(u64, usize), u64>),
}

impl Default for LiveByOffset {
    fn default() -> Self {
        LiveByOffset::List(Vec::new())
    }
}

impl LiveByOffset {
    fn insert(&mut self, key: (u64, usize), end: u64) {
        match self {
            LiveByOffset::List(list) if list.len() < LIST_UP_TO => {
                let at = list.partition_point(|&(k, _)| k < key);
                list.insert(at, (key, end));
            }
            LiveByOffset::List(list) => {
                let mut tree: BTreeMap<_, _> = list.drain(..).collect();
                tree.insert(key, end);
                *self = LiveByOffset::Tree(tree);
            }
            LiveByOffset::Tree(tree) => {
                tree.insert(key, end);
            }
        }
    }

    fn remove(&mut self, key: (u64, usize)) {
        match self {
            LiveByOffset::List(list) => {
                if let Ok(at) = list.binary_search_by(|&(k, _)| k.cmp(&key)) {
                    list.remove(at);
                }
            }
            LiveByOffset::Tree(tree) => {
                tree.remove(&key);
            }
        }
    }

    /// The live buffer just below `key` (its index and end) and the one
    /// just above (its index and offset).
    fn neighbours(&self, key: (u64, usize)) -> (Option<IndexAnd>, Option<IndexAnd>) {
        match self {
            LiveByOffset::List(list) => {
                let at = list.partition_point(|&(k, _)| k < key);
                let below = at.checked_sub(1).map(|b| ((list[b].0).1, list[b].1));
                let above = list.get(at).map(|&((o, j), _)| (j, o));
                (below, above)
            }
            LiveByOffset::Tree(tree) => {
                let below = tree.range(..key).next_back().map(|(&(_, j), &e)| (j, e));
                let above = tree.range(key..).next().map(|(&(o, j), _)| (j, o));
                (below, above)
            }
        }
    }
}

fn pair(a: usize, b: usize, step: i64) -> Overlap {
    Overlap { first: a.min(b), second: a.max(b), step }
}

/// The peak, after checking the lengths and that no `offset + size`
/// overflows (for every buffer, occupying or not).
fn peak_checked(buffers: &[Buffer], offsets: &[u64]) -> Result<u64, Invalid> {
    if buffers.len() != offsets.len() {
        return Err(Invalid::LengthMismatch { buffers: buffers.len(), offsets: offsets.len() });
    }
    let mut peak = 0u64;
    for (i, (b, &o)) in buffers.iter().zip(offsets).enumerate() {
        let end = o.checked_add(b.size).ok_or(Invalid::OffsetOverflow(i))?;
        if b.occupies() {
            peak = peak.max(end);
        }
    }
    Ok(peak)
}

/// What [`validate_with_fixed`] found.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Highest `offset + size` over buffers that occupy memory.
    pub peak: u64,
    /// The first overlap that makes the plan invalid, if any.
    pub overlap: Option<Overlap>,
    /// Pairs of fixed buffers that share a byte at some step, and the first.
    pub fixed_overlaps: FixedOverlaps,
}

/// Validates a plan in which `is_fixed` marks the buffers of an offline plan.
/// Overlaps among fixed buffers are always counted; they make the plan
/// invalid unless `trust_fixed`. An overlap involving a planned buffer
/// always does. Without overlapping fixed buffers the verdict is
/// [`validate`]'s.
///
/// With trust, the planned buffers are checked against the disjoint blocks
/// of the fixed buffers' union (see `plan::fixed`); an overlap with a block
/// names the lowest-indexed fixed buffer it meets at that step.
pub fn validate_with_fixed(
    buffers: &[Buffer],
    offsets: &[u64],
    is_fixed: &[bool],
    trust_fixed: bool,
) -> Result<Verdict, Invalid> {
    let peak = peak_checked(buffers, offsets)?;
    if is_fixed.len() != buffers.len() {
        return Err(Invalid::LengthMismatch { buffers: buffers.len(), offsets: is_fixed.len() });
    }
    let rects: Vec<Rect> =
        (0..buffers.len()).filter(|&i| is_fixed[i]).filter_map(|i| Rect::of(i, &buffers[i], offsets[i])).collect();
    let fixed_overlaps = count_overlaps(&rects);
    if !trust_fixed || fixed_overlaps.count == 0 {
        let overlap = match validate(buffers, offsets) {
            Ok(_) => None,
            Err(Invalid::Overlap(o)) => Some(o),
            Err(e) => return Err(e),
        };
        return Ok(Verdict { peak, overlap, fixed_overlaps });
    }
    let mut flat: Vec<Buffer> = Vec::new();
    let mut flat_offsets = Vec::new();
    let mut origin = Vec::new();
    for (i, b) in buffers.iter().enumerate().filter(|&(i, b)| !is_fixed[i] && b.occupies()) {
        flat.push(*b);
        flat_offsets.push(offsets[i]);
        origin.push(Some(i));
    }
    for block in union_blocks(&rects) {
        flat.push(Buffer {
            size: block.hi - block.lo,
            lifetime: Lifetime { start: block.start, end: block.end },
            fixed_offset: None,
        });
        flat_offsets.push(block.lo);
        origin.push(None);
    }
    let overlap = match validate(&flat, &flat_offsets) {
        Ok(_) => None,
        Err(Invalid::Overlap(o)) => Some(match (origin[o.first], origin[o.second]) {
            (Some(a), Some(b)) => pair(a, b, o.step),
            (Some(p), None) | (None, Some(p)) => {
                let (lo, hi) = (offsets[p], offsets[p] + buffers[p].size);
                let met = rects
                    .iter()
                    .find(|r| r.start <= o.step && o.step < r.end && r.lo < hi && lo < r.hi)
                    .expect("a block is the union of the fixed buffers live with it");
                pair(p, met.index, o.step)
            }
            (None, None) => unreachable!("blocks are disjoint"),
        }),
        Err(e) => return Err(e),
    };
    Ok(Verdict { peak, overlap, fixed_overlaps })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::problem::Lifetime;

    fn b(size: u64, s: i64, e: i64) -> Buffer {
        Buffer { size, lifetime: Lifetime::half_open(s, e).unwrap(), fixed_offset: None }
    }

    #[test]
    fn accepts_a_valid_plan_and_reports_peak() {
        let bs = [b(4, 0, 3), b(4, 3, 9), b(4, 0, 9), b(4, 9, 21), b(4, 0, 21)];
        assert_eq!(validate(&bs, &[0, 0, 4, 0, 8]), Ok(12));
    }

    #[test]
    fn names_the_first_overlapping_pair() {
        let bs = [b(4, 0, 3), b(4, 5, 9), b(4, 2, 9), b(8, 6, 7)];
        // 0 and 2 overlap at step 2; 1, 2 and 3 later.
        assert_eq!(validate(&bs, &[0, 0, 2, 2]), Err(Invalid::Overlap(Overlap { first: 0, second: 2, step: 2 })));
    }

    #[test]
    fn overlap_from_below_and_above_is_found() {
        let bs = [b(8, 0, 2), b(8, 1, 2)];
        assert!(matches!(validate(&bs, &[4, 0]), Err(Invalid::Overlap(_))));
        assert!(matches!(validate(&bs, &[0, 4]), Err(Invalid::Overlap(_))));
        assert_eq!(validate(&bs, &[0, 8]), Ok(16));
    }

    #[test]
    fn zero_size_and_unused_buffers_never_overlap() {
        let bs = [b(8, 0, 4), b(0, 0, 4), b(8, 2, 2)];
        assert_eq!(validate(&bs, &[0, 4, 0]), Ok(8));
    }

    #[test]
    fn touching_lifetimes_and_offsets_do_not_overlap() {
        let bs = [b(8, 0, 2), b(8, 2, 4), b(8, 0, 4)];
        assert_eq!(validate(&bs, &[0, 0, 8]), Ok(16));
    }

    #[test]
    fn many_live_buffers_are_checked_as_a_few() {
        // Past the list's size the live buffers move to a B-tree: 300
        // buffers live together, stacked, then one that overlaps a
        // neighbour from below and one from above.
        let mut bs: Vec<Buffer> = (0..300).map(|_| b(8, 0, 10)).collect();
        let mut offsets: Vec<u64> = (0..300).map(|k| 8 * k).collect();
        assert_eq!(validate(&bs, &offsets), Ok(2400));
        bs.push(b(8, 5, 6));
        offsets.push(1204);
        assert_eq!(validate(&bs, &offsets), Err(Invalid::Overlap(Overlap { first: 150, second: 300, step: 5 })));
        offsets[300] = 1196;
        assert_eq!(validate(&bs, &offsets), Err(Invalid::Overlap(Overlap { first: 149, second: 300, step: 5 })));
        // Ends leave the tree too: the same space later is free.
        bs[300] = b(8, 10, 11);
        assert_eq!(validate(&bs, &offsets), Ok(2400));
    }

    #[test]
    fn length_mismatch_and_overflow() {
        let bs = [b(8, 0, 2)];
        assert!(matches!(validate(&bs, &[]), Err(Invalid::LengthMismatch { .. })));
        assert_eq!(validate(&bs, &[u64::MAX - 3]), Err(Invalid::OffsetOverflow(0)));
    }

    #[test]
    fn overflow_is_checked_for_buffers_that_occupy_nothing() {
        // Never used, and zero-sized: neither occupies memory, but an offset
        // whose end passes 2^64 is still no offset.
        let bs = [b(8, 0, 2), b(8, 3, 3), b(0, 0, 2)];
        assert_eq!(validate(&bs, &[0, u64::MAX - 3, 0]), Err(Invalid::OffsetOverflow(1)));
        assert_eq!(validate(&bs, &[0, 0, u64::MAX]), Ok(8));
    }

    #[test]
    fn trusted_fixed_overlaps_are_reported_but_planned_overlaps_fail() {
        // 0 and 1 fixed, sharing bytes 8..16 at steps 1..3; 2 planned above
        // them; 3 planned, clashing with fixed 1 only at step 3.
        let bs = [b(16, 0, 3), b(16, 1, 4), b(8, 0, 4), b(8, 3, 5)];
        let is_fixed = [true, true, false, false];
        let first = Overlap { first: 0, second: 1, step: 1 };
        let ok = validate_with_fixed(&bs, &[0, 8, 24, 32], &is_fixed, true).unwrap();
        assert_eq!(ok.overlap, None);
        assert_eq!(ok.peak, 40);
        assert_eq!(ok.fixed_overlaps, FixedOverlaps { count: 1, first: Some(first) });
        let untrusted = validate_with_fixed(&bs, &[0, 8, 24, 32], &is_fixed, false).unwrap();
        assert_eq!(untrusted.overlap, Some(first));
        assert_eq!(untrusted.fixed_overlaps.count, 1);
        let clash = validate_with_fixed(&bs, &[0, 8, 24, 16], &is_fixed, true).unwrap();
        assert_eq!(clash.overlap, Some(Overlap { first: 1, second: 3, step: 3 }));
        // Planned against planned is still found with trust.
        let planned = validate_with_fixed(&bs, &[0, 8, 24, 28], &is_fixed, true).unwrap();
        assert_eq!(planned.overlap, Some(Overlap { first: 2, second: 3, step: 3 }));
        // Without fixed overlaps the verdict is validate's.
        let none = validate_with_fixed(&bs, &[0, 16, 32, 32], &[false; 4], true).unwrap();
        assert_eq!(none.overlap, Some(Overlap { first: 2, second: 3, step: 3 }));
        assert_eq!(none.fixed_overlaps, FixedOverlaps::default());
    }
}
