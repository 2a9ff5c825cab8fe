//! Bytes still to place per section, with the fullest section of a range in
//! O(log sections): the section bound asks "current offset + the fullest
//! section of the scope ≤ target?" at every node, and a pass over every
//! section was the search's hottest loop.
//!
//! A max segment tree without lazy updates: placing a buffer changes a run
//! of sections by the same amount, and rebuilding the run's ancestors level
//! by level costs O(run + log sections), no more than the run itself.

/// See the module documentation.
pub struct Pending {
    /// Leaves: the smallest power of two at least the section count.
    leaves: usize,
    /// `tree[leaves + s]`: section `s`; `tree[n]`: the larger child of `n`.
    tree: Vec<u64>,
}

impl Pending {
    /// Per section, `live` bytes still to place.
    pub fn new(live: &[u64]) -> Self {
        let leaves = live.len().next_power_of_two().max(1);
        let mut tree = vec![0u64; 2 * leaves];
        tree[leaves..leaves + live.len()].copy_from_slice(live);
        for n in (1..leaves).rev() {
            tree[n] = tree[2 * n].max(tree[2 * n + 1]);
        }
        Pending { leaves, tree }
    }

    /// Bytes still to place in section `s`.
    pub fn get(&self, s: usize) -> u64 {
        self.tree[self.leaves + s]
    }

    /// Sections `lo..hi` (non-empty) gain `size` bytes to place (a buffer
    /// unplaced) or, with `remove`, lose them (placed).
    pub fn change(&mut self, lo: usize, hi: usize, size: u64, remove: bool) {
        // Wrapping adds of the negation subtract (and vectorise).
        let delta = if remove { size.wrapping_neg() } else { size };
        for v in &mut self.tree[self.leaves + lo..self.leaves + hi] {
            *v = v.wrapping_add(delta);
        }
        let (mut l, mut r) = ((self.leaves + lo) / 2, (self.leaves + hi - 1) / 2);
        while l >= 1 {
            for n in l..=r {
                self.tree[n] = self.tree[2 * n].max(self.tree[2 * n + 1]);
            }
            l /= 2;
            r /= 2;
        }
    }

    /// The most bytes still to place in one of sections `lo..hi` (0 when
    /// the range is empty).
    pub fn fullest(&self, lo: usize, hi: usize) -> u64 {
        let (mut l, mut r) = (self.leaves + lo, self.leaves + hi);
        let mut most = 0;
        while l < r {
            if l & 1 == 1 {
                most = most.max(self.tree[l]);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                most = most.max(self.tree[r]);
            }
            l /= 2;
            r /= 2;
        }
        most
    }
}

#[cfg(test)]
mod tests {
    use super::Pending;
    use crate::plan::algo::tests::Rng;

    #[test]
    fn matches_a_plain_array() {
        let mut rng = Rng::new(77);
        for round in 0..200 {
            let n = 1 + rng.below(40) as usize;
            let mut plain: Vec<u64> = (0..n).map(|_| 50 + rng.below(100)).collect();
            let mut tree = Pending::new(&plain);
            for _ in 0..100 {
                let lo = rng.below(n as u64) as usize;
                let hi = lo + 1 + rng.below((n - lo) as u64) as usize;
                let d = rng.below(20);
                let remove = rng.below(2) == 0 && plain[lo..hi].iter().all(|&v| v >= d);
                plain[lo..hi].iter_mut().for_each(|v| if remove { *v -= d } else { *v += d });
                tree.change(lo, hi, d, remove);
                let qlo = rng.below(n as u64) as usize;
                let qhi = qlo + rng.below((n - qlo) as u64 + 1) as usize;
                assert_eq!(tree.fullest(qlo, qhi), plain[qlo..qhi].iter().copied().max().unwrap_or(0), "round {round}");
                assert!((0..n).all(|s| tree.get(s) == plain[s]));
            }
        }
    }
}
