//! The lower bound of a buffer set and the fixed buffers that share memory,
//! in index slices the caller provides.

use super::{heap_sort, ix, Bytes, Tensors};

/// Whether buffer `i` takes bytes at some step.
#[inline]
fn occupies<T: Tensors>(tensors: &T, i: usize) -> bool {
    tensors.size(i) > T::Bytes::ZERO && !tensors.never_live(i)
}

/// Writes the fixed buffers that occupy memory into `into`, sorted by
/// offset (then index); returns how many.
fn fixed_by_offset<T: Tensors>(tensors: &T, into: &mut [u32]) -> usize {
    let fixed = (0..tensors.count()).filter(|&i| tensors.fixed(i).is_some() && occupies(tensors, i));
    let mut f = 0;
    for (slot, i) in into.iter_mut().zip(fixed) {
        *slot = i as u32;
        f += 1;
    }
    let at = |k: u32| tensors.fixed(ix(k)).unwrap_or(T::Bytes::ZERO);
    heap_sort(into.get_mut(..f).unwrap_or_default(), |a, b| at(a) < at(b) || (at(a) == at(b) && a < b));
    f
}

/// Pairs of fixed buffers in `sorted` (by offset) that are live at a
/// common step and share a byte; stops counting at `limit`.
fn overlapping_pairs<T: Tensors>(tensors: &T, sorted: &[u32], limit: u64) -> u64 {
    let mut pairs = 0;
    let mut rest = sorted;
    while let Some((&a, later)) = rest.split_first() {
        let a = ix(a);
        let top = tensors.fixed(a).unwrap_or(T::Bytes::ZERO) + tensors.size(a);
        for &b in later {
            let b = ix(b);
            if tensors.fixed(b).unwrap_or(T::Bytes::ZERO) >= top {
                break;
            }
            if tensors.live_together(a, b) {
                pairs += 1;
                if pairs >= limit {
                    return pairs;
                }
            }
        }
        rest = later;
    }
    pairs
}

/// The number of pairs of fixed buffers live at a common step with a byte
/// in common (TFLite Micro trusts such offline plans). `work` needs one
/// entry per buffer. O(f log f + pairs met), f fixed buffers.
pub fn fixed_overlap_count<T: Tensors>(tensors: &T, work: &mut [u32]) -> u64 {
    let f = fixed_by_offset(tensors, work);
    overlapping_pairs(tensors, work.get(..f).unwrap_or_default(), u64::MAX)
}

/// The lower bound: the most bytes live at one step, where bytes that
/// fixed buffers share count once (their union). No plan needs fewer
/// bytes. `work` needs one entry per buffer. The most is reached where a
/// buffer starts, so each start step is summed over all buffers: O(s·n)
/// for s distinct start steps (one working array leaves no room for a
/// sorted sweep), plus O(f log f) per step for the union when fixed
/// buffers share memory.
pub fn lower_bound<T: Tensors>(tensors: &T, work: &mut [u32]) -> T::Bytes {
    let f = fixed_by_offset(tensors, work);
    let shared = overlapping_pairs(tensors, work.get(..f).unwrap_or_default(), 1) > 0;
    let n = tensors.count();
    let mut best = T::Bytes::ZERO;
    for candidate in (0..n).filter(|&i| occupies(tensors, i)) {
        let step = tensors.start(candidate);
        // Each step once: at the first buffer that starts there.
        if (0..candidate).any(|j| occupies(tensors, j) && tensors.start(j) == step) {
            continue;
        }
        let live = |i: &usize| occupies(tensors, *i) && tensors.start(*i) <= step && step < tensors.end(*i);
        let mut here = T::Bytes::ZERO;
        let mut live_fixed = 0;
        for i in (0..n).filter(live) {
            if !shared || tensors.fixed(i).is_none() {
                here = here + tensors.size(i);
            } else if let Some(slot) = work.get_mut(live_fixed) {
                *slot = i as u32;
                live_fixed += 1;
            }
        }
        if shared {
            let sorted = work.get_mut(..live_fixed).unwrap_or_default();
            let at = |k: u32| tensors.fixed(ix(k)).unwrap_or(T::Bytes::ZERO);
            heap_sort(sorted, |a, b| at(a) < at(b) || (at(a) == at(b) && a < b));
            here = here + union_of(tensors, sorted);
        }
        if here > best {
            best = here;
        }
    }
    best
}

/// The bytes covered by the fixed buffers of `sorted` (by offset).
fn union_of<T: Tensors>(tensors: &T, sorted: &[u32]) -> T::Bytes {
    let (mut total, mut covered_to) = (T::Bytes::ZERO, T::Bytes::ZERO);
    for &k in sorted {
        let k = ix(k);
        let lo = tensors.fixed(k).unwrap_or(T::Bytes::ZERO);
        let hi = lo + tensors.size(k);
        if hi <= covered_to {
            continue;
        }
        total = total + (hi - if lo > covered_to { lo } else { covered_to });
        covered_to = hi;
    }
    total
}
