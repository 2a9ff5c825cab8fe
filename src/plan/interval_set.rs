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
/// most sets short, so an insert's shift of the tail is short too.
#[derive(Clone, Debug, Default)]
pub struct IntervalSet<T = u64> {
    by_start: Vec<(T, T)>,
}

impl<T: Offset> IntervalSet<T> {
    /// Adds `[start, end)` (`start < end`), merging with whatever it touches.
    /// O(log m) to find its place, plus the shift of the intervals above.
    pub fn insert(&mut self, start: T, end: T) {
        debug_assert!(start < end);
        let v = &mut self.by_start;
        let above = v.partition_point(|&(s, _)| s <= start);
        let (mut first, mut lo, mut hi) = (above, start, end);
        if above > 0 {
            let (ps, pe) = v[above - 1];
            if pe >= start {
                if pe >= end {
                    return; // already covered
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
        if first == last {
            v.insert(first, (lo, hi));
        } else {
            v[first] = (lo, hi);
            v.drain(first + 1..last);
        }
    }

    /// [`IntervalSet::blocking_end_from`] searching the whole set: the
    /// reference that one is checked against.
    #[cfg(test)]
    pub fn blocking_end(&self, start: T, end: T) -> Option<T> {
        let below = self.by_start.partition_point(|&(s, _)| s < end);
        match below.checked_sub(1).map(|k| self.by_start[k]) {
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
        let v = &self.by_start;
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

    /// Whether no offset is taken.
    pub fn is_empty(&self) -> bool {
        self.by_start.is_empty()
    }

    /// The lowest interval start at or above `at`.
    pub fn next_start(&self, at: T) -> Option<T> {
        let k = self.by_start.partition_point(|&(s, _)| s < at);
        self.by_start.get(k).map(|&(s, _)| s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intervals<T: Offset>(s: &IntervalSet<T>) -> Vec<(u64, u64)> {
        s.by_start.iter().map(|&(a, b)| (a.widen(), b.widen())).collect()
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
