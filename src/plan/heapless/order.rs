//! Orders of buffer indices, sorted in place in the working words.

use core::cmp::Reverse;

use super::{ix, Workspace};

/// Sorts working words `lo..hi` by `key` ascending (keys must differ, so
/// the result is unique) by binary insertion: in place, no allocation, a
/// few dozen bytes of code, O(n log n) keys read and one word moved per
/// inversion, so an order that is nearly right costs little. TFLite Micro
/// bubble-sorts its order: this makes the same moves with far fewer
/// comparisons.
pub fn insertion_sort<W: Workspace, K: Ord>(w: &mut W, lo: usize, hi: usize, key: impl Fn(&W, u32) -> K) {
    for k in lo + 1..hi {
        let item = w.slot(k);
        let item_key = key(w, item);
        // Where it goes: after every sorted word whose key is not above
        // its own, found by bisection (O(log n) keys read), then the words
        // above shifted up by one.
        let (mut left, mut right) = (lo, k);
        while left < right {
            let mid = left + (right - left) / 2;
            if key(w, w.slot(mid)) <= item_key {
                left = mid + 1;
            } else {
                right = mid;
            }
        }
        let mut at = k;
        while at > left {
            w.set_slot(at, w.slot(at - 1));
            at -= 1;
        }
        w.set_slot(left, item);
    }
}

/// Writes TFLite Micro's placement order into the working words (one per
/// buffer): the fixed buffers in order of addition, then the others by
/// size descending, later-added first on equal sizes (TFLite Micro fills
/// its sort array from the tail and bubble-sorts it stably). Returns how
/// many are fixed: the words from there on are also `size-first-fit`'s
/// order.
pub fn tflm_order<W: Workspace>(w: &mut W) -> usize {
    let n = w.count();
    let mut k = 0;
    for i in 0..n {
        if w.fixed(i).is_some() {
            w.set_slot(k, i as u32);
            k += 1;
        }
    }
    let fixed = k;
    // The others from the last added, as TFLite Micro fills its sort
    // array: equal sizes are then in place already.
    for i in (0..n).rev() {
        if w.fixed(i).is_none() {
            w.set_slot(k, i as u32);
            k += 1;
        }
    }
    // Larger first; as large: added later first.
    insertion_sort(w, fixed, n, |w, i| (Reverse(w.size(ix(i))), Reverse(i)));
    fixed
}
