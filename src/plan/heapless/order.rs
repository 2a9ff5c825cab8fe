//! Orders of buffer indices, sorted in place.

use super::{ix, Tensors};

/// Sorts `items` by `less` (a strict total order, so the result is unique
/// and needs no stability) with a heap sort: in place, O(n log n) compares,
/// no allocation, and a few dozen instructions of code.
pub fn heap_sort(items: &mut [u32], less: impl Fn(u32, u32) -> bool) {
    let n = items.len();
    let mut start = n / 2;
    while start > 0 {
        start -= 1;
        sift_down(items, start, &less);
    }
    let mut end = n;
    while end > 1 {
        end -= 1;
        // Slices read with `get`: the sort has no panic path to link.
        let (Some(&top), Some(&last)) = (items.first(), items.get(end)) else { return };
        set(items, 0, last);
        set(items, end, top);
        sift_down(items.get_mut(..end).unwrap_or_default(), 0, &less);
    }
}

/// `items[at] = value` where `at` is in range (nothing otherwise).
#[inline(always)]
fn set(items: &mut [u32], at: usize, value: u32) {
    if let Some(slot) = items.get_mut(at) {
        *slot = value;
    }
}

/// Moves `items[root]` down the max-heap `items` to its place.
#[inline]
fn sift_down(items: &mut [u32], mut root: usize, less: &impl Fn(u32, u32) -> bool) {
    let Some(&moving) = items.get(root) else { return };
    loop {
        let mut child = 2 * root + 1;
        let Some(&mut mut larger) = items.get_mut(child) else { break };
        if let Some(&right) = items.get(child + 1) {
            if less(larger, right) {
                child += 1;
                larger = right;
            }
        }
        if !less(moving, larger) {
            break;
        }
        set(items, root, larger);
        root = child;
    }
    set(items, root, moving);
}

/// Writes TFLite Micro's placement order into `order` (one entry per
/// buffer): the fixed buffers in order of addition, then the others by size
/// descending, later-added first on equal sizes (TFLite Micro fills its
/// sort array from the tail and bubble-sorts it stably). Returns how many
/// are fixed: `order[fixed..]` is also `size-first-fit`'s order.
pub fn tflm_order<T: Tensors>(tensors: &T, order: &mut [u32]) -> usize {
    let n = tensors.count();
    let is_fixed = |i: &usize| tensors.fixed(*i).is_some();
    let fixed_first = (0..n).filter(is_fixed).chain((0..n).filter(|i| !is_fixed(i)));
    let mut placed = 0;
    for (slot, i) in order.iter_mut().zip(fixed_first) {
        *slot = i as u32;
        placed += 1;
    }
    let fixed = (0..n).filter(is_fixed).count();
    let online = order.get_mut(fixed..placed).unwrap_or_default();
    // "a goes before b": larger, or as large and added later.
    heap_sort(online, |a, b| {
        let (sa, sb) = (tensors.size(ix(a)), tensors.size(ix(b)));
        sa > sb || (sa == sb && a > b)
    });
    fixed
}
