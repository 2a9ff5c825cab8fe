//! The lower bound of a buffer set and the fixed buffers that share memory.

use super::{insertion_sort, ix, Bytes, Workspace};

/// Writes the fixed buffers that occupy memory (and, with `live_at`, are
/// live at that step) into the working words, sorted by offset (then
/// index); returns how many.
fn fixed_by_offset<W: Workspace>(w: &mut W, live_at: Option<W::Step>) -> usize {
    let mut f = 0;
    for i in 0..w.count() {
        let live = live_at.is_none_or(|s| w.start(i) <= s && s < w.end(i));
        if w.fixed(i).is_some() && w.occupies(i) && live {
            w.set_slot(f, i as u32);
            f += 1;
        }
    }
    insertion_sort(w, 0, f, |w, i| (w.fixed(ix(i)), i));
    f
}

/// Pairs among the `f` fixed buffers in the working words (by offset) that
/// are live at a common step and share a byte; stops counting at `limit`.
fn overlapping_pairs<W: Workspace>(w: &W, f: usize, limit: u64) -> u64 {
    let mut pairs = 0;
    for k in 0..f {
        let a = ix(w.slot(k));
        let top = w.fixed(a).unwrap_or(W::Bytes::ZERO) + w.size(a);
        for m in k + 1..f {
            let b = ix(w.slot(m));
            if w.fixed(b).unwrap_or(W::Bytes::ZERO) >= top {
                break;
            }
            if w.live_together(a, b) {
                pairs += 1;
                if pairs >= limit {
                    return pairs;
                }
            }
        }
    }
    pairs
}

/// The number of pairs of fixed buffers live at a common step with a byte
/// in common (TFLite Micro trusts such offline plans). Overwrites the
/// working words. O(f^2 + pairs met) for f fixed buffers (the sort is
/// insertion).
pub fn fixed_overlap_count<W: Workspace>(w: &mut W) -> u64 {
    let f = fixed_by_offset(w, None);
    overlapping_pairs(w, f, u64::MAX)
}

/// The lower bound: the most bytes live at one step, where bytes that
/// fixed buffers share count once (their union). No plan needs fewer
/// bytes. Overwrites the working words. The most is reached where a buffer
/// starts, so each start step sums every buffer: O(n^2) (one working word
/// per buffer leaves no room for a sorted sweep), plus O(f^2) per step to
/// sort the fixed ones when they share memory.
pub fn lower_bound<W: Workspace>(w: &mut W) -> W::Bytes {
    let f = fixed_by_offset(w, None);
    let shared = overlapping_pairs(w, f, 1) > 0;
    let n = w.count();
    let mut best = W::Bytes::ZERO;
    for candidate in 0..n {
        let step = w.start(candidate);
        // Each step once: at the first buffer that starts there.
        if !w.occupies(candidate) || (0..candidate).any(|j| w.occupies(j) && w.start(j) == step) {
            continue;
        }
        let mut here = W::Bytes::ZERO;
        for i in 0..n {
            if w.occupies(i) && w.start(i) <= step && step < w.end(i) && !(shared && w.fixed(i).is_some()) {
                here = here + w.size(i);
            }
        }
        if shared {
            let live_fixed = fixed_by_offset(w, Some(step));
            here = here + union_of(w, live_fixed);
        }
        if here > best {
            best = here;
        }
    }
    best
}

/// The bytes covered by the `f` fixed buffers in the working words (by
/// offset).
fn union_of<W: Workspace>(w: &W, f: usize) -> W::Bytes {
    let (mut total, mut covered_to) = (W::Bytes::ZERO, W::Bytes::ZERO);
    for k in 0..f {
        let b = ix(w.slot(k));
        let lo = w.fixed(b).unwrap_or(W::Bytes::ZERO);
        let hi = lo + w.size(b);
        if hi <= covered_to {
            continue;
        }
        total = total + (hi - if lo > covered_to { lo } else { covered_to });
        covered_to = hi;
    }
    total
}
