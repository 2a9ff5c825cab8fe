//! A set of disjoint, merged half-open intervals of offsets `[start, end)`.
//!
//! Used by [`super::occupancy`] to keep, per time node, the union of the
//! offset ranges already taken. Merging keeps the sets small: the union of
//! many packed buffers collapses into a few intervals.

/// An offset as a set stores it: `u64`, or `u32` where every end fits
/// (half the memory, so a binary search and a shift touch half the cache
/// lines; first fit on dense instances waits on memory more than on
/// anything else).
pub trait Offset: Copy + Ord + Default + std::fmt::Debug {
    /// `v`, which the caller knows fits.
    fn narrow(v: u64) -> Self;
    /// Back to `u64`.
    fn widen(self) -> u64;
}

impl Offset for u64 {
    fn narrow(v: u64) -> Self {
        v
    }
    fn widen(self) -> u64 {
        self
    }
}

impl Offset for u32 {
    fn narrow(v: u64) -> Self {
        debug_assert!(v <= u64::from(u32::MAX), "{v} does not fit a u32 offset");
        v as u32
    }
    fn widen(self) -> u64 {
        u64::from(self)
    }
}

/// Disjoint intervals sorted by start; touching intervals are merged.
///
/// A sorted vector rather than an ordered map: a first-fit search reads a
/// set once per interval it passes, and binary search over contiguous
/// memory is several times faster than walking map nodes. Merging keeps
/// most sets short, so an insert's shift of the tail is short too; so short
/// that most hold one or two intervals, kept inline: a plan touches
/// thousands of sets, and a heap block for each cost more than the search.
#[derive(Clone, Debug)]
pub struct IntervalSet<T = u64> {
    storage: Storage<T>,
}

#[derive(Clone, Debug)]
enum Storage<T> {
    /// Up to [`INLINE`] intervals, the first `len`.
    Inline { len: u8, items: [(T, T); INLINE] },
    /// More, on the heap (never back inline: sets only grow).
    Heap(Vec<(T, T)>),
}

/// Intervals a set holds before it moves to the heap.
const INLINE: usize = 2;

impl<T: Offset> Default for IntervalSet<T> {
    fn default() -> Self {
        IntervalSet { storage: Storage::Inline { len: 0, items: [Default::default(); INLINE] } }
    }
}

/// Where `[start, end)` goes in `v`: it replaces `v[first..last]` by the
/// merged `(lo, hi)`; `None` when an interval covers it already.
fn merge_point<T: Offset>(v: &[(T, T)], start: T, end: T) -> Option<(usize, usize, T, T)> {
    let above = v.partition_point(|&(s, _)| s <= start);
    let (mut first, mut lo, mut hi) = (above, start, end);
    if above > 0 {
        let (ps, pe) = v[above - 1];
        if pe >= start {
            if pe >= end {
                return None;
            }
            first = above - 1;
            lo = ps;
            hi = hi.max(pe);
        }
    }
    let mut last = above;
    while last < v.len() && v[last].0 <= hi {
        hi = hi.max(v[last].1);
        last += 1;
    }
    Some((first, last, lo, hi))
}

/// Replaces `v[first..last]` by `merged`.
fn splice_into<T: Offset>(v: &mut Vec<(T, T)>, first: usize, last: usize, merged: (T, T)) {
    if first == last {
        v.insert(first, merged);
    } else {
        v[first] = merged;
        v.drain(first + 1..last);
    }
}

impl<T: Offset> IntervalSet<T> {
    /// The intervals, sorted by start.
    fn as_slice(&self) -> &[(T, T)] {
        match &self.storage {
            Storage::Inline { len, items } => &items[..usize::from(*len)],
            Storage::Heap(v) => v,
        }
    }

    /// Adds `[start, end)` (`start < end`), merging with whatever it touches.
    /// O(log m) to find its place, plus the shift of the intervals above.
    pub fn insert(&mut self, start: T, end: T) {
        debug_assert!(start < end);
        let Some((first, last, lo, hi)) = merge_point(self.as_slice(), start, end) else {
            return;
        };
        match &mut self.storage {
            Storage::Heap(v) => splice_into(v, first, last, (lo, hi)),
            Storage::Inline { len, items } => {
                let n = usize::from(*len);
                let kept = n - (last - first) + 1;
                if kept > INLINE {
                    let mut v = Vec::with_capacity(2 * INLINE + 2);
                    v.extend_from_slice(&items[..n]);
                    splice_into(&mut v, first, last, (lo, hi));
                    self.storage = Storage::Heap(v);
                    return;
                }
                // The intervals above the merged ones move to just after it.
                items.copy_within(last..n, first + 1);
                items[first] = (lo, hi);
                *len = kept as u8;
            }
        }
    }

    /// [`IntervalSet::blocking_end_from`] searching the whole set: the
    /// reference that one is checked against.
    #[cfg(test)]
    pub fn blocking_end(&self, start: T, end: T) -> Option<T> {
        let v = self.as_slice();
        let below = v.partition_point(|&(s, _)| s < end);
        match below.checked_sub(1).map(|k| v[k]) {
            Some((_, e)) if e > start => Some(e),
            _ => None,
        }
    }

    /// If some interval intersects `[start, end)`, the highest end among the
    /// intersecting ones; `None` when the range is free. Every offset below
    /// that end and at or above `start` is blocked for a block of
    /// `end - start` bytes, so a first-fit search may jump straight to it.
    ///
    /// For a search that only moves up: `cursor` (0 at first) is where the
    /// last call left off, and every call must ask for an `end` no lower
    /// than the one before. Gallops
    /// from there instead of searching the whole set, so a first fit that
    /// passes many intervals pays about one step for each.
    pub fn blocking_end_from(&self, cursor: &mut usize, start: T, end: T) -> Option<T> {
        let v = self.as_slice();
        // Every interval below `lo` starts below `end`.
        let mut lo = (*cursor).min(v.len());
        let mut hi = lo;
        let mut step = 1;
        while hi < v.len() && v[hi].0 < end {
            lo = hi + 1;
            hi += step;
            step *= 2;
        }
        let below = lo + v[lo..hi.min(v.len())].partition_point(|&(s, _)| s < end);
        *cursor = below;
        match below.checked_sub(1).map(|k| v[k]) {
            Some((_, e)) if e > start => Some(e),
            _ => None,
        }
    }

    /// The lowest interval start at or above `at`.
    pub fn next_start(&self, at: T) -> Option<T> {
        let v = self.as_slice();
        let k = v.partition_point(|&(s, _)| s < at);
        v.get(k).map(|&(s, _)| s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intervals<T: Offset>(s: &IntervalSet<T>) -> Vec<(u64, u64)> {
        s.as_slice().iter().map(|&(a, b)| (a.widen(), b.widen())).collect()
    }

    #[test]
    fn inserts_merge_touching_and_overlapping() {
        let mut s = IntervalSet::<u64>::default();
        s.insert(10, 20);
        s.insert(30, 40);
        s.insert(20, 25);
        assert_eq!(intervals(&s), vec![(10, 25), (30, 40)]);
        s.insert(5, 35);
        assert_eq!(intervals(&s), vec![(5, 40)]);
        s.insert(6, 7);
        assert_eq!(intervals(&s), vec![(5, 40)]);
        s.insert(50, 60);
        s.insert(0, 100);
        assert_eq!(intervals(&s), vec![(0, 100)]);
    }

    #[test]
    fn inline_and_heap_sets_hold_the_union_of_what_was_inserted() {
        // Random inserts over a small range, against the union kept as a
        // bitmap: through the inline sets and past them onto the heap.
        let mut seed = 7u64;
        for _ in 0..300 {
            let mut s = IntervalSet::<u32>::default();
            let mut taken = [false; 64];
            for _ in 0..(seed % 9) + 1 {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let start = (seed >> 33) % 60;
                let end = start + 1 + (seed >> 20) % 4;
                s.insert(start as u32, end as u32);
                taken[start as usize..end as usize].iter_mut().for_each(|t| *t = true);
            }
            let mut expected = Vec::new();
            let mut k = 0;
            while k < taken.len() {
                if taken[k] {
                    let start = k;
                    while k < taken.len() && taken[k] {
                        k += 1;
                    }
                    expected.push((start as u64, k as u64));
                }
                k += 1;
            }
            assert_eq!(intervals(&s), expected);
        }
    }

    #[test]
    fn blocking_end_and_next_start() {
        let mut s = IntervalSet::<u64>::default();
        s.insert(10, 20);
        s.insert(30, 40);
        assert_eq!(s.blocking_end(0, 10), None);
        assert_eq!(s.blocking_end(0, 11), Some(20));
        assert_eq!(s.blocking_end(15, 35), Some(40));
        assert_eq!(s.blocking_end(20, 30), None);
        assert_eq!(s.next_start(20), Some(30));
        assert_eq!(s.next_start(31), None);
    }

    #[test]
    fn blocking_end_from_agrees_with_blocking_end() {
        let mut s = IntervalSet::<u64>::default();
        let mut narrow = IntervalSet::<u32>::default();
        for k in 0..200u64 {
            s.insert(k * 10 + k % 7, k * 10 + 5 + k % 3);
            narrow.insert((k * 10 + k % 7) as u32, (k * 10 + 5 + k % 3) as u32);
        }
        assert_eq!(intervals(&s), intervals(&narrow));
        for size in [1, 3, 9, 40] {
            let (mut cursor, mut narrow_cursor) = (0, 0);
            for c in 0..2100 {
                let expected = s.blocking_end(c, c + size);
                assert_eq!(s.blocking_end_from(&mut cursor, c, c + size), expected, "{c} {size}");
                let got = narrow.blocking_end_from(&mut narrow_cursor, c as u32, (c + size) as u32);
                assert_eq!(got.map(u64::from), expected, "u32: {c} {size}");
            }
        }
    }
}
