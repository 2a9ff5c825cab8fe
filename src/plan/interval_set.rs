//! A set of disjoint, merged half-open intervals of offsets `[start, end)`.
//!
//! Used by [`super::occupancy`] to keep, per time node, the union of the
//! offset ranges already taken. Merging keeps the sets small: the union of
//! many packed buffers collapses into a few intervals.

use std::collections::BTreeMap;

/// Disjoint intervals keyed by start; touching intervals are merged.
#[derive(Clone, Debug, Default)]
pub struct IntervalSet {
    by_start: BTreeMap<u64, u64>,
}

impl IntervalSet {
    /// Adds `[start, end)` (`start < end`), merging with whatever it touches.
    /// O(log m) amortised.
    pub fn insert(&mut self, start: u64, end: u64) {
        debug_assert!(start < end);
        let (mut lo, mut hi) = (start, end);
        if let Some((&ps, &pe)) = self.by_start.range(..=start).next_back() {
            if pe >= start {
                if pe >= end {
                    return; // already covered
                }
                lo = ps;
                hi = hi.max(pe);
            }
        }
        while let Some((&qs, &qe)) = self.by_start.range(lo..=hi).next() {
            hi = hi.max(qe);
            self.by_start.remove(&qs);
        }
        self.by_start.insert(lo, hi);
    }

    /// If some interval intersects `[start, end)`, the highest end among the
    /// intersecting ones; `None` when the range is free. Every offset below
    /// that end and at or above `start` is blocked for a block of
    /// `end - start` bytes, so a first-fit search may jump straight to it.
    pub fn blocking_end(&self, start: u64, end: u64) -> Option<u64> {
        match self.by_start.range(..end).next_back() {
            Some((_, &e)) if e > start => Some(e),
            _ => None,
        }
    }

    /// Whether no offset is taken.
    pub fn is_empty(&self) -> bool {
        self.by_start.is_empty()
    }

    /// The lowest interval start at or above `at`.
    pub fn next_start(&self, at: u64) -> Option<u64> {
        self.by_start.range(at..).next().map(|(&s, _)| s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intervals(s: &IntervalSet) -> Vec<(u64, u64)> {
        s.by_start.iter().map(|(&a, &b)| (a, b)).collect()
    }

    #[test]
    fn inserts_merge_touching_and_overlapping() {
        let mut s = IntervalSet::default();
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
        let mut s = IntervalSet::default();
        s.insert(10, 20);
        s.insert(30, 40);
        assert_eq!(s.blocking_end(0, 10), None);
        assert_eq!(s.blocking_end(0, 11), Some(20));
        assert_eq!(s.blocking_end(15, 35), Some(40));
        assert_eq!(s.blocking_end(20, 30), None);
        assert_eq!(s.next_start(20), Some(30));
        assert_eq!(s.next_start(31), None);
    }
}
