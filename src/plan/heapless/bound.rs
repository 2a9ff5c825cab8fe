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
/// bytes. `by_start`, `by_end` and `fixed` need one entry per buffer each.
/// O(n log n) when no fixed buffers share memory, O(n log n + s·f) when
/// they do (s distinct start steps, f fixed buffers).
pub fn lower_bound<T: Tensors>(tensors: &T, by_start: &mut [u32], by_end: &mut [u32], fixed: &mut [u32]) -> T::Bytes {
    let f = fixed_by_offset(tensors, fixed);
    let fixed: &[u32] = fixed.get(..f).unwrap_or_default();
    let shared = overlapping_pairs(tensors, fixed, 1) > 0;
    // Summed one by one: every occupying buffer, or with shared fixed bytes
    // the unfixed ones (the fixed ones' union is added per step).
    let summed = |i: usize| occupies(tensors, i) && !(shared && tensors.fixed(i).is_some());
    let mut m = 0;
    let occupying = (0..tensors.count()).filter(|&i| occupies(tensors, i));
    for ((s, e), i) in by_start.iter_mut().zip(by_end.iter_mut()).zip(occupying) {
        (*s, *e) = (i as u32, i as u32);
        m += 1;
    }
    let by_start = by_start.get_mut(..m).unwrap_or_default();
    let by_end = by_end.get_mut(..m).unwrap_or_default();
    let start = |k: u32| tensors.start(ix(k));
    let end = |k: u32| tensors.end(ix(k));
    heap_sort(by_start, |a, b| start(a) < start(b) || (start(a) == start(b) && a < b));
    heap_sort(by_end, |a, b| end(a) < end(b) || (end(a) == end(b) && a < b));
    let (mut live, mut best) = (T::Bytes::ZERO, T::Bytes::ZERO);
    let (mut p, mut q) = (0, 0);
    while let Some(&first) = by_start.get(p) {
        let step = start(first);
        // Half-open lifetimes: what ends at `step` is gone before it.
        while let Some(&k) = by_end.get(q).filter(|&&k| end(k) <= step) {
            if summed(ix(k)) {
                live = live - tensors.size(ix(k));
            }
            q += 1;
        }
        while let Some(&k) = by_start.get(p).filter(|&&k| start(k) == step) {
            if summed(ix(k)) {
                live = live + tensors.size(ix(k));
            }
            p += 1;
        }
        let here = if shared { live + fixed_union_at(tensors, fixed, step) } else { live };
        if here > best {
            best = here;
        }
    }
    best
}

/// The bytes covered by the fixed buffers of `sorted` (by offset) live at
/// `step`.
fn fixed_union_at<T: Tensors>(tensors: &T, sorted: &[u32], step: T::Step) -> T::Bytes {
    let (mut total, mut covered_to) = (T::Bytes::ZERO, T::Bytes::ZERO);
    for &k in sorted {
        let k = ix(k);
        if tensors.start(k) > step || step >= tensors.end(k) {
            continue;
        }
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
