//! The unplaced buffers of a part, kept so that a search node asks its
//! questions about them in O(log n) each instead of a pass over all of
//! them: the lowest key above another (the next child), the keys below one
//! (the buffers behind the node), the lowest floor + size (the ceiling) and
//! the hash of the set, each over one component.
//!
//! A part's buffers are numbered by first section (see
//! [`super::instance::split`]), and an unplaced buffer is in a component
//! exactly when its first section is (no unplaced buffer crosses a
//! component's edges), so a component is a run of leaves.
//!
//! A min segment tree over (key, buffer) and floor + size, and a Fenwick
//! tree of XORs for the hash. A placed buffer's leaf is the maximum. An
//! update walks up only while the minimum changes: a lifted floor seldom
//! was its subtree's minimum, so most walks stop after a level or two,
//! which matters since a node lifts hundreds of floors on long traces.

use std::cell::Cell;

/// A key packed for comparison: offset, then rank, then buffer index.
pub type Packed = u128;

/// The leaf of a placed buffer.
const ABSENT: Node = Node { key: Packed::MAX, top: u64::MAX };

/// Packs `(offset, rank, index)` so that integer order is key order.
pub fn pack(offset: u64, rank: u32, index: u32) -> Packed {
    (offset as u128) << 64 | (rank as u128) << 32 | index as u128
}

/// The buffer index of a packed key.
pub fn index_of(key: Packed) -> u32 {
    key as u32
}

/// The offset of a packed key.
pub fn offset_of(key: Packed) -> u64 {
    (key >> 64) as u64
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Node {
    /// The least packed key below this node.
    key: Packed,
    /// The least floor + size below this node.
    top: u64,
}

/// See the module documentation.
pub struct Frontier {
    leaves: usize,
    nodes: Vec<Node>,
    /// Fenwick tree (1-based) of the XOR of the hashes of unplaced buffers.
    xor: Vec<u128>,
    /// Tree nodes visited by updates and queries since the last
    /// [`Frontier::take_visited`]: the search's work units for them (a
    /// query is O(log n) but its constant grows with the trace).
    visited: Cell<u64>,
}

impl Frontier {
    /// An empty frontier (every buffer placed) over `n` buffers.
    pub fn new(n: usize) -> Self {
        let leaves = n.max(1).next_power_of_two();
        Frontier { leaves, nodes: vec![ABSENT; 2 * leaves], xor: vec![0; n + 1], visited: Cell::new(0) }
    }

    /// The tree nodes visited since the last call.
    pub fn take_visited(&self) -> u64 {
        self.visited.replace(0)
    }

    fn visit(&self, count: u64) {
        self.visited.set(self.visited.get() + count);
    }

    /// Every buffer unplaced, with `entry(i) = (key, floor + size, hash)`.
    pub fn fill(&mut self, n: usize, entry: impl Fn(usize) -> (Packed, u64, u128)) {
        self.nodes.fill(ABSENT);
        self.xor.fill(0);
        for i in 0..n {
            let (key, top, hash) = entry(i);
            self.nodes[self.leaves + i] = Node { key, top };
            // Linear-time Fenwick build: each entry passes its sum up once.
            self.xor[i + 1] ^= hash;
            let up = (i + 1) + ((i + 1) & (i + 1).wrapping_neg());
            if up <= n {
                let v = self.xor[i + 1];
                self.xor[up] ^= v;
            }
        }
        for v in (1..self.leaves).rev() {
            self.nodes[v] = merge(self.nodes[2 * v], self.nodes[2 * v + 1]);
        }
    }

    /// Sets buffer `i`'s key and floor + size (it is unplaced).
    pub fn set(&mut self, i: usize, key: Packed, top: u64) {
        self.update(i, Node { key, top });
    }

    /// Marks buffer `i` placed.
    pub fn remove(&mut self, i: usize) {
        self.update(i, ABSENT);
    }

    fn update(&mut self, i: usize, leaf: Node) {
        let mut v = self.leaves + i;
        self.nodes[v] = leaf;
        v /= 2;
        while v >= 1 {
            self.visit(1);
            let merged = merge(self.nodes[2 * v], self.nodes[2 * v + 1]);
            if self.nodes[v] == merged {
                break;
            }
            self.nodes[v] = merged;
            v /= 2;
        }
    }

    /// Toggles `hash` in the set hash of buffer `i` (placing and unplacing
    /// both toggle).
    pub fn toggle(&mut self, i: usize, hash: u128) {
        let mut k = i + 1;
        while k < self.xor.len() {
            self.visit(1);
            self.xor[k] ^= hash;
            k += k & k.wrapping_neg();
        }
    }

    fn prefix_xor(&self, mut k: usize) -> u128 {
        let mut x = 0;
        while k > 0 {
            self.visit(1);
            x ^= self.xor[k];
            k &= k - 1;
        }
        x
    }

    /// XOR of the hashes of the unplaced buffers among `a..b`.
    pub fn hash(&self, a: usize, b: usize) -> u128 {
        self.prefix_xor(b) ^ self.prefix_xor(a)
    }

    /// The least floor + size among the unplaced buffers of `a..b`
    /// (`u64::MAX` when none).
    pub fn ceiling(&self, a: usize, b: usize) -> u64 {
        let (mut l, mut r) = (a + self.leaves, b + self.leaves);
        let mut least = u64::MAX;
        while l < r {
            self.visit(1);
            if l & 1 == 1 {
                least = least.min(self.nodes[l].top);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                least = least.min(self.nodes[r].top);
            }
            l /= 2;
            r /= 2;
        }
        least
    }

    /// Appends to `out` the unplaced buffers of `a..b` whose key is below
    /// `bound`, in index order.
    pub fn below(&self, a: usize, b: usize, bound: Packed, out: &mut Vec<u32>) {
        self.walk(1, 0, self.leaves, a, b, &mut |node, leaf| {
            if node.key >= bound {
                return false;
            }
            if leaf {
                out.push(index_of(node.key));
            }
            true
        });
    }

    /// The least key above `after` among the unplaced buffers of `a..b`.
    pub fn least_above(&self, a: usize, b: usize, after: Packed) -> Option<Packed> {
        let mut best = Packed::MAX;
        self.least_above_in(1, 0, self.leaves, a, b, after, &mut best);
        (best != Packed::MAX).then_some(best)
    }

    #[allow(clippy::too_many_arguments)]
    fn least_above_in(&self, v: usize, nl: usize, nr: usize, a: usize, b: usize, after: Packed, best: &mut Packed) {
        self.visit(1);
        let key = self.nodes[v].key;
        if nr <= a || b <= nl || key >= *best {
            return;
        }
        if key > after && a <= nl && nr <= b {
            // Every key here is at least this one, so it is the least above.
            *best = key;
            return;
        }
        if v >= self.leaves {
            return;
        }
        let mid = (nl + nr) / 2;
        self.least_above_in(2 * v, nl, mid, a, b, after, best);
        self.least_above_in(2 * v + 1, mid, nr, a, b, after, best);
    }

    /// Appends to `out` every unplaced buffer of `a..b` with a key above
    /// `after` and an offset below `ceiling`, in index order.
    pub fn between(&self, a: usize, b: usize, after: Packed, ceiling: u64, out: &mut Vec<Packed>) {
        self.walk(1, 0, self.leaves, a, b, &mut |node, leaf| {
            if offset_of(node.key) >= ceiling {
                return false;
            }
            if leaf && node.key > after {
                out.push(node.key);
            }
            true
        });
    }

    /// Visits the nodes over `a..b`, top down, descending where `visit`
    /// says so (it is told whether the node is a leaf).
    fn walk(&self, v: usize, nl: usize, nr: usize, a: usize, b: usize, visit: &mut dyn FnMut(Node, bool) -> bool) {
        self.visit(1);
        if nr <= a || b <= nl {
            return;
        }
        let leaf = v >= self.leaves;
        if !visit(self.nodes[v], leaf && a <= nl) || leaf {
            return;
        }
        let mid = (nl + nr) / 2;
        self.walk(2 * v, nl, mid, a, b, visit);
        self.walk(2 * v + 1, mid, nr, a, b, visit);
    }
}

fn merge(x: Node, y: Node) -> Node {
    Node { key: x.key.min(y.key), top: x.top.min(y.top) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every query against a plain scan, over random updates.
    #[test]
    fn answers_like_a_scan() {
        let mut seed = 0x1234_5678_9ABC_DEF0u64;
        let mut next = move |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        for n in [1usize, 2, 3, 7, 8, 13, 64, 100] {
            let mut f = Frontier::new(n);
            let mut keys: Vec<Option<(Packed, u64, u128)>> = (0..n)
                .map(|i| Some((pack(next(50), next(5) as u32, i as u32), next(80), next(1 << 40) as u128)))
                .collect();
            f.fill(n, |i| keys[i].unwrap());
            for _ in 0..400 {
                let i = next(n as u64) as usize;
                match (next(3), keys[i]) {
                    (0, Some((_, _, h))) => {
                        f.remove(i);
                        f.toggle(i, h);
                        keys[i] = None;
                    }
                    (_, None) => {
                        let entry = (pack(next(50), next(5) as u32, i as u32), next(80), next(1 << 40) as u128);
                        f.set(i, entry.0, entry.1);
                        f.toggle(i, entry.2);
                        keys[i] = Some(entry);
                    }
                    (_, Some((_, _, h))) => {
                        let (key, top) = (pack(next(50), next(5) as u32, i as u32), next(80));
                        f.set(i, key, top);
                        keys[i] = Some((key, top, h));
                    }
                }
                let a = next(n as u64 + 1) as usize;
                let b = a + next((n - a) as u64 + 1) as usize;
                let live: Vec<(Packed, u64, u128)> = keys[a..b].iter().flatten().copied().collect();
                let bound = pack(next(50), next(5) as u32, next(n as u64) as u32);
                let ceiling = next(60);
                assert_eq!(f.ceiling(a, b), live.iter().map(|e| e.1).min().unwrap_or(u64::MAX));
                assert_eq!(f.hash(a, b), live.iter().fold(0, |x, e| x ^ e.2));
                assert_eq!(f.least_above(a, b, bound), live.iter().map(|e| e.0).filter(|&k| k > bound).min());
                let mut below = Vec::new();
                f.below(a, b, bound, &mut below);
                let want: Vec<u32> = live.iter().filter(|e| e.0 < bound).map(|e| index_of(e.0)).collect();
                assert_eq!(below, want);
                let mut between = Vec::new();
                f.between(a, b, bound, ceiling, &mut between);
                let want: Vec<Packed> =
                    live.iter().map(|e| e.0).filter(|&k| k > bound && offset_of(k) < ceiling).collect();
                assert_eq!(between, want);
            }
        }
    }
}
