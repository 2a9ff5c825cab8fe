//! A segment tree over leaves (the segments of a compressed time axis):
//! add a value over a range of leaves, ask the largest value over all of
//! them or over a range, and where the largest is. Lazy without push-down:
//! a node's max includes its own pending add. O(log n) per call.

/// Range add, range max and the position of the max over `n` leaves
/// (rounded up to a power of two; the extra leaves hold 0).
pub(crate) struct MaxTree {
    leaves: usize,
    max: Vec<i128>,
    add: Vec<i128>,
}

impl MaxTree {
    /// `n` leaves (at least one), all 0.
    pub(crate) fn new(n: usize) -> Self {
        let leaves = n.max(1).next_power_of_two();
        MaxTree { leaves, max: vec![0; 2 * leaves], add: vec![0; 2 * leaves] }
    }

    /// The number of leaves, a power of two; node `leaves + i` is leaf `i`.
    pub(crate) fn leaves(&self) -> usize {
        self.leaves
    }

    /// The largest value of any leaf.
    pub(crate) fn max(&self) -> i128 {
        self.max[1]
    }

    /// Adds `delta` (negative to remove) over leaves `[a, b)`.
    pub(crate) fn add(&mut self, a: usize, b: usize, delta: i128) {
        self.update(1, 0, self.leaves, a, b, delta);
    }

    fn update(&mut self, v: usize, lo: usize, hi: usize, a: usize, b: usize, delta: i128) {
        if b <= lo || hi <= a {
            return;
        }
        if a <= lo && hi <= b {
            self.max[v] += delta;
            self.add[v] += delta;
            return;
        }
        let mid = (lo + hi) / 2;
        self.update(2 * v, lo, mid, a, b, delta);
        self.update(2 * v + 1, mid, hi, a, b, delta);
        self.max[v] = self.max[2 * v].max(self.max[2 * v + 1]) + self.add[v];
    }

    /// The largest value over leaves `[a, b)` (`i128::MIN` when empty).
    pub(crate) fn query(&self, a: usize, b: usize) -> i128 {
        self.ask(1, 0, self.leaves, a, b)
    }

    fn ask(&self, v: usize, lo: usize, hi: usize, a: usize, b: usize) -> i128 {
        if b <= lo || hi <= a {
            return i128::MIN;
        }
        if a <= lo && hi <= b {
            return self.max[v];
        }
        let mid = (lo + hi) / 2;
        let below = self.ask(2 * v, lo, mid, a, b).max(self.ask(2 * v + 1, mid, hi, a, b));
        below.saturating_add(self.add[v])
    }

    /// The leaf holding the maximum (leftmost on ties).
    pub(crate) fn argmax(&self) -> usize {
        let mut v = 1;
        while v < self.leaves {
            v = if self.max[2 * v] >= self.max[2 * v + 1] { 2 * v } else { 2 * v + 1 };
        }
        v - self.leaves
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_and_asks_over_ranges() {
        let mut t = MaxTree::new(5);
        t.add(0, 3, 4);
        t.add(2, 5, 3);
        assert_eq!((t.max(), t.argmax(), t.query(0, 2), t.query(2, 3), t.query(3, 5)), (7, 2, 4, 7, 3));
        t.add(1, 3, -5);
        assert_eq!((t.max(), t.argmax(), t.query(0, 1), t.query(1, 3), t.query(1, 2)), (4, 0, 4, 2, -1));
        assert_eq!(t.query(2, 2), i128::MIN);
        assert_eq!((MaxTree::new(0).max(), MaxTree::new(5).leaves()), (0, 8));
    }
}
