//! Placing buffers one after the other over the placed ones kept sorted by
//! offset: TFLite Micro's `GreedyMemoryPlanner` walk, first fit, and the
//! linear stack.

use super::{ix, Bytes, Tensors};

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

/// Places the buffers of `work[listed..]`, in that order, one after the
/// other; `work[..listed]` holds the buffers placed before, sorted by
/// offset (a new entry goes after those at its offset), and the list grows
/// into the order's slots as they are consumed (it never has more entries
/// than buffers taken from the order), so one array of one entry per
/// buffer holds both. Writes the offsets; fixed buffers keep theirs.
/// Returns the length of the list.
///
/// Each buffer walks the entries live with it from the lowest offset, and
/// takes the first candidate (0, then the running maximum of the ends
/// walked past) whose gap to the next entry holds it; entries that start
/// below the candidate (fixed buffers overlapping each other) never leave a
/// gap. O(n) per buffer, O(n^2) in all, as in TFLite Micro.
pub fn walk<T: Tensors>(
    tensors: &T,
    work: &mut [u32],
    mut listed: usize,
    offsets: &mut [T::Bytes],
    kind: Walk,
) -> usize {
    let mut next = listed;
    while let Some(&i) = work.get(next) {
        next += 1;
        let i = ix(i);
        let size = tensors.size(i);
        let enters = match kind {
            Walk::Tflm => !tensors.never_live(i),
            Walk::FirstFit => size > T::Bytes::ZERO && !tensors.never_live(i),
        };
        let placed = work.get(..listed).unwrap_or_default();
        let offset = match tensors.fixed(i) {
            Some(o) => o,
            None if !enters => T::Bytes::ZERO,
            None => first_gap(tensors, i, size, placed, offsets),
        };
        if let Some(slot) = offsets.get_mut(i) {
            *slot = offset;
        }
        if !enters {
            continue;
        }
        // One more entry: `listed < next`, so slot `listed` is the list's
        // end or an order entry already taken. After the entries at the
        // same offset: shift the higher ones up by one, from the top.
        let Some(window) = work.get_mut(..=listed) else { break };
        let mut at = window.len() - 1;
        while let Some(&below) = at.checked_sub(1).and_then(|k| window.get(k)) {
            if offsets.get(ix(below)).is_some_and(|&o| o <= offset) {
                break;
            }
            if let Some(slot) = window.get_mut(at) {
                *slot = below;
            }
            at -= 1;
        }
        if let Some(slot) = window.get_mut(at) {
            *slot = i as u32;
        }
        listed += 1;
    }
    listed
}

/// The offset the walk gives buffer `i` of `size` over `list`.
#[inline]
fn first_gap<T: Tensors>(tensors: &T, i: usize, size: T::Bytes, list: &[u32], offsets: &[T::Bytes]) -> T::Bytes {
    let (start, end) = (tensors.start(i), tensors.end(i));
    let mut candidate = T::Bytes::ZERO;
    for &j in list {
        let j = ix(j);
        // Entries in the list are live at some step.
        if tensors.start(j) >= end || start >= tensors.end(j) {
            continue;
        }
        let at = offsets.get(j).copied().unwrap_or(T::Bytes::ZERO);
        if at >= candidate && at - candidate >= size {
            break;
        }
        let top = at + tensors.size(j);
        if top > candidate {
            candidate = top;
        }
    }
    candidate
}

/// TFLite Micro's `LinearMemoryPlanner`: every unfixed buffer after the
/// previous one in order of addition, starting above the highest fixed
/// buffer that occupies memory; fixed buffers keep their offsets.
pub fn linear<T: Tensors>(tensors: &T, offsets: &mut [T::Bytes]) {
    let n = tensors.count().min(offsets.len());
    let mut next = T::Bytes::ZERO;
    for i in 0..n {
        if let Some(o) = tensors.fixed(i) {
            let size = tensors.size(i);
            if size > T::Bytes::ZERO && !tensors.never_live(i) && o + size > next {
                next = o + size;
            }
        }
    }
    for (i, offset) in offsets.iter_mut().enumerate().take(n) {
        *offset = match tensors.fixed(i) {
            Some(o) => o,
            None => {
                let o = next;
                next = next + tensors.size(i);
                o
            }
        };
    }
}

/// The bytes a plan needs: the highest `offset + size` over the buffers
/// that occupy memory, or with `count_empty_sizes` (TFLite Micro's arena
/// size) over every buffer live at some step, zero-size ones included.
pub fn peak<T: Tensors>(tensors: &T, offsets: &[T::Bytes], count_empty_sizes: bool) -> T::Bytes {
    let mut peak = T::Bytes::ZERO;
    for (i, &o) in offsets.iter().enumerate().take(tensors.count()) {
        let size = tensors.size(i);
        if tensors.never_live(i) || (size == T::Bytes::ZERO && !count_empty_sizes) {
            continue;
        }
        if o + size > peak {
            peak = o + size;
        }
    }
    peak
}
