//! Placing buffers one after the other over the placed ones kept sorted by
//! offset: TFLite Micro's `GreedyMemoryPlanner` walk, first fit, and the
//! linear stack.

use super::{ix, Bytes, Workspace};

/// Which walk [`walk`] makes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Walk {
    /// TFLite Micro's, step for step: every buffer with a step enters the
    /// list, zero-size ones too (they count in later walks, as in TFLite
    /// Micro), and the candidate offset only grows past an entry that
    /// starts below it.
    Tflm,
    /// First fit (`size-first-fit`): the lowest offset free of every
    /// placed buffer live with it; buffers that occupy nothing (no size or
    /// no step) get offset 0 (or their fixed one) and never enter the list.
    FirstFit,
}

/// Places the buffers named by working words `listed..end`, in that
/// order, one after the other; words `..listed` hold the buffers placed
/// before, sorted by offset (a new entry goes after those at its offset).
/// The list grows into the order's words as they are consumed (it never
/// has more entries than buffers taken from the order), so one word per
/// buffer holds both. Sets the offsets; fixed buffers keep theirs. Returns
/// the length of the list.
///
/// Each buffer walks the entries live with it from the lowest offset, and
/// takes the first candidate (0, then the running maximum of the ends
/// walked past) whose gap to the next entry holds it; entries that start
/// below the candidate (fixed buffers overlapping each other) never leave a
/// gap. O(n) per buffer, O(n^2) in all, as in TFLite Micro.
#[inline]
pub fn walk<W: Workspace>(w: &mut W, placed_before: usize, end: usize, kind: Walk) -> usize {
    // Bounded by the count (as every caller's range is), so that the
    // optimiser knows the words read exist and drops their range checks.
    let end = end.min(w.count());
    let mut listed = placed_before;
    for next in placed_before..end {
        // The list never passes the word being taken (it grows by at most
        // one word per word taken); stated, for the same reason.
        listed = listed.min(next);
        let i = ix(w.slot(next));
        // First fit lists only the buffers that occupy memory.
        let enters = !w.never_live(i) && (kind == Walk::Tflm || w.size(i) > W::Bytes::ZERO);
        let offset = match w.fixed(i) {
            Some(o) => o,
            None if !enters => W::Bytes::ZERO,
            None => first_gap(w, i, listed),
        };
        w.set_offset(i, offset);
        if enters {
            enter(w, listed, i, offset);
            listed += 1;
        }
    }
    listed
}

/// Puts buffer `i`, at `offset`, into the list of the `listed` entries
/// sorted by offset, after those at its offset. Word `listed` is the
/// list's end or an order word already taken; the entries above the offset
/// move up by one, from the top.
#[inline]
fn enter<W: Workspace>(w: &mut W, listed: usize, i: usize, offset: W::Bytes) {
    let n = w.count();
    let mut at = listed;
    // `at < n` always holds, as do the bounds of the buffers named; stated,
    // they let the optimiser drop the range checks of the words read and
    // written.
    while at > 0 && at < n {
        let below = w.slot(at - 1);
        if ix(below) >= n || w.offset(ix(below)) <= offset {
            break;
        }
        w.set_slot(at, below);
        at -= 1;
    }
    w.set_slot(at, i as u32);
}

/// The offset the walk gives buffer `i` over the `listed` entries.
#[inline]
fn first_gap<W: Workspace>(w: &W, i: usize, listed: usize) -> W::Bytes {
    let (start, end, size) = (w.start(i), w.end(i), w.size(i));
    let mut candidate = W::Bytes::ZERO;
    let n = w.count();
    for k in 0..listed.min(n) {
        let j = ix(w.slot(k));
        // Entries in the list are live at some step (and name buffers: the
        // bounds, stated, let the optimiser drop the range checks).
        if j >= n || w.start(j) >= end || start >= w.end(j) {
            continue;
        }
        let at = w.offset(j);
        if at >= candidate && at - candidate >= size {
            break;
        }
        let top = at + w.size(j);
        if top > candidate {
            candidate = top;
        }
    }
    candidate
}

/// TFLite Micro's `LinearMemoryPlanner`: every unfixed buffer after the
/// previous one in order of addition, starting above the highest fixed
/// buffer that occupies memory; fixed buffers keep their offsets.
#[inline]
pub fn linear<W: Workspace>(w: &mut W) {
    let n = w.count();
    let mut next = W::Bytes::ZERO;
    for i in 0..n {
        if let Some(o) = w.fixed(i).filter(|_| w.occupies(i)) {
            if o + w.size(i) > next {
                next = o + w.size(i);
            }
        }
    }
    for i in 0..n {
        let offset = match w.fixed(i) {
            Some(o) => o,
            None => {
                let o = next;
                next = next + w.size(i);
                o
            }
        };
        w.set_offset(i, offset);
    }
}

/// The bytes a plan needs: the highest `offset + size` over every buffer,
/// those that occupy nothing included, so that every buffer's bytes lie
/// inside it (as TFLite Micro's planners promise: its tensors' pointers are
/// arena + offset, and `LinearMemoryPlanner`'s size is the end of its
/// stack).
pub fn peak<W: Workspace>(w: &W) -> W::Bytes {
    let mut peak = W::Bytes::ZERO;
    for i in 0..w.count() {
        let top = w.offset(i) + w.size(i);
        if top > peak {
            peak = top;
        }
    }
    peak
}
