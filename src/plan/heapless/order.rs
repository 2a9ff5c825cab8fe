//! Orders of buffer indices, sorted in place in the working words.

use core::cmp::Reverse;

use super::{ix, Workspace};

/// Sorts working words `lo..hi` by `key` ascending (keys must differ, so
/// the result is unique) by insertion: in place, no allocation, a few
/// dozen bytes of code, one key read and one word moved per inversion, so
/// an order that is nearly right costs little. TFLite Micro bubble-sorts
/// its order: this makes the same moves, with one comparison per move and
/// one more per word.
#[inline]
pub fn insertion_sort<W: Workspace, K: Ord>(w: &mut W, lo: usize, hi: usize, key: impl Fn(&W, u32) -> K) {
    // Bounded by the count (as every caller's range is), for the same
    // reason as below.
    let n = w.count();
    for k in lo + 1..hi.min(n) {
        let item = w.slot(k);
        let item_key = key(w, item);
        // The words above it shift up by one until one is not above it.
        // `at < n` always holds; stated, it lets the optimiser drop the
        // range checks of the words read and written.
        let mut at = k;
        while at > lo && at < n {
            let below = w.slot(at - 1);
            if key(w, below) <= item_key {
                break;
            }
            w.set_slot(at, below);
            at -= 1;
        }
        w.set_slot(at, item);
    }
}

/// Writes TFLite Micro's placement order into the working words (one per
/// buffer): the fixed buffers in order of addition, then the others by
/// size descending, later-added first on equal sizes (TFLite Micro fills
/// its sort array from the tail and bubble-sorts it stably). Returns how
/// many are fixed: the words from there on are also `size-first-fit`'s
/// order.
#[inline]
pub fn tflm_order<W: Workspace>(w: &mut W) -> usize {
    let n = w.count();
    // One pass: the fixed ones from the first word up, the others from the
    // last word down, so that they end up from the last added, as TFLite
    // Micro fills its sort array: equal sizes are then in place already.
    let (mut fixed, mut others) = (0, 0);
    for i in 0..n {
        if w.fixed(i).is_some() {
            w.set_slot(fixed, i as u32);
            fixed += 1;
        } else {
            others += 1;
            w.set_slot(n - others, i as u32);
        }
    }
    // Larger first; as large: added later first.
    insertion_sort(w, fixed, n, |w, i| (Reverse(w.size(ix(i))), Reverse(i)));
    fixed
}
