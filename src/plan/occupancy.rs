//! Which offsets are taken at which steps, answering "lowest offset at or
//! above `c` where a block of `size` bytes is free during steps `[a, b)`"
//! without scanning every placed buffer.
//!
//! Data structure: a segment tree over the compressed time axis (the
//! distinct start and end steps). A placed buffer is stored at the O(log T)
//! *canonical* nodes that exactly cover its lifetime. Each node keeps two
//! merged [`IntervalSet`]s of offsets:
//! - `own`: buffers stored at this node. They all cover the node's whole
//!   span, so they are live at the same step and never overlap.
//! - `sub`: the union of `own` over the node's subtree.
//!
//! A buffer with lifetime L meets a query window Q in time exactly when one
//! of L's canonical nodes is an ancestor-or-self or a descendant of one of
//! Q's canonical nodes. So a query reads `sub` of Q's canonical nodes and
//! `own` of their strict ancestors (the nodes on the two boundary paths that
//! are not inside Q): O(log T) sets, each answering in O(log m). First fit
//! jumps from blocked offset to the end of the blocking interval, so it
//! touches only the intervals it passes.

use std::cell::Cell;

use super::interval_set::{IntervalSet, Offset};

/// Offsets taken over time; see the module documentation. The sets store
/// offsets as `T` (see [`Offset`]): `u32` only where the caller knows no
/// end it will insert or ask about passes `u32::MAX`.
pub struct Occupancy<T: Offset = u64> {
    /// Distinct time points, sorted; segment `i` is `[points[i], points[i+1])`.
    points: Vec<i64>,
    /// Number of leaves (a power of two).
    leaves: usize,
    /// Per node, where its `own` then its `sub` set is: 0 while empty,
    /// else 1 + its index in `pool`. Most nodes never hold anything: a
    /// zeroed table costs nothing until a node is written (the pages are
    /// the system's zero pages), where a table of sets was written whole
    /// and freed whole on every plan.
    slots: Vec<[usize; 2]>,
    /// The sets that hold something, in the order they were first written.
    pool: Vec<IntervalSet<T>>,
    /// Sets read or written so far: what a placement costs, which grows
    /// with how fragmented the free space is, not only with the buffers.
    visits: Cell<u64>,
}

/// Where a node's `own` and `sub` sets sit in its pair.
const OWN: usize = 0;
const SUB: usize = 1;

/// A time window in segment indices, with the nodes a query must read,
/// and first fit's working list. Reused from buffer to buffer
/// ([`Occupancy::set_window`]) so that placing one allocates nothing.
#[derive(Default)]
pub struct Window {
    nodes: Vec<(usize, bool)>, // (node, read `sub` rather than `own`)
    /// First fit's sets that hold something: (index in the pool, where its
    /// last lookup left off).
    live: Vec<(usize, usize)>,
}

impl<T: Offset> Occupancy<T> {
    /// An empty occupancy over the time points of the given lifetimes
    /// (`(start, end)` pairs; empty ones are ignored).
    pub fn new(lifetimes: impl Iterator<Item = (i64, i64)>) -> Self {
        let mut points: Vec<i64> = Vec::new();
        for (s, e) in lifetimes {
            if s < e {
                points.push(s);
                points.push(e);
            }
        }
        points.sort_unstable();
        points.dedup();
        let segments = points.len().saturating_sub(1).max(1);
        let leaves = segments.next_power_of_two();
        Occupancy { points, leaves, slots: vec![[0; 2]; 2 * leaves], pool: Vec::new(), visits: Cell::new(0) }
    }

    /// Interval sets read or written so far (each a lookup or an insert in
    /// a set of taken offsets).
    pub fn visits(&self) -> u64 {
        self.visits.get()
    }

    fn visit(&self, sets: usize) {
        self.visits.set(self.visits.get() + sets as u64);
    }

    /// The window for lifetime `[start, end)`, or `None` for an empty one.
    /// Both steps must be among the points given to [`Occupancy::new`].
    #[cfg(test)]
    pub fn window(&self, start: i64, end: i64) -> Option<Window> {
        let mut window = Window::default();
        self.set_window(start, end, &mut window).then_some(window)
    }

    /// Makes `window` the window for lifetime `[start, end)`; false (and
    /// `window` unchanged) for an empty one. Both steps must be among the
    /// points given to [`Occupancy::new`].
    pub fn set_window(&self, start: i64, end: i64, window: &mut Window) -> bool {
        if start >= end {
            return false;
        }
        let a = self.points.binary_search(&start).expect("start step is a known point");
        let b = self.points.binary_search(&end).expect("end step is a known point");
        let nodes = &mut window.nodes;
        nodes.clear();
        self.canonical(a, b, |v| nodes.push((v, true)));
        self.partial_ancestors(a, b, |v| nodes.push((v, false)));
        true
    }

    fn canonical(&self, a: usize, b: usize, mut visit: impl FnMut(usize)) {
        let (mut l, mut r) = (a + self.leaves, b + self.leaves);
        while l < r {
            if l & 1 == 1 {
                visit(l);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                visit(r);
            }
            l >>= 1;
            r >>= 1;
        }
    }

    /// Ancestors of the canonical nodes of `[a, b)`: the nodes on the paths
    /// from leaves `a` and `b - 1` to the root that are not inside `[a, b)`.
    fn partial_ancestors(&self, a: usize, b: usize, mut visit: impl FnMut(usize)) {
        let mut va = (a + self.leaves) >> 1;
        let mut vb = (b - 1 + self.leaves) >> 1;
        let mut height = 1u32;
        while va >= 1 {
            for (k, v) in [va, vb].into_iter().enumerate() {
                if k == 1 && vb == va {
                    break;
                }
                let lo = (v << height) - self.leaves;
                let hi = lo + (1 << height);
                if !(lo >= a && hi <= b) {
                    visit(v);
                }
            }
            va >>= 1;
            vb >>= 1;
            height += 1;
        }
    }

    /// Lowest offset `>= from` where `size` bytes are free throughout the
    /// window.
    pub fn first_fit(&self, window: &mut Window, size: u64, from: u64) -> u64 {
        if size == 0 {
            return from;
        }
        // Most nodes on the boundary paths hold nothing: read each set's
        // emptiness once, not once per jump. Each set travels with where
        // its last lookup left off.
        let Window { nodes, live: sets } = window;
        sets.clear();
        sets.extend(nodes.iter().filter_map(|&node| self.slot(node)).map(|k| (k, 0)));
        self.visit(nodes.len());
        // The sets in turn, jumping past whatever one blocks, until every
        // set in a row finds the candidate free. A jump is safe whichever
        // set made it (every offset it skips is blocked by that set), so
        // the answer is the lowest offset whatever the order of asking.
        // Asking every set at every jump costs a lookup per set per jump:
        // on dense instances, where a buffer passes hundreds of others on
        // its way up, that made first fit quadratic in practice. The set
        // that blocked moves to the front, so that the few sets holding
        // most of the window's intervals (those of its largest canonical
        // nodes) are asked first: on random instances with a thousand
        // buffers live at a step that asks a quarter as many free sets
        // as taking them in a fixed turn.
        let mut c = from;
        let mut k = 0;
        while k < sets.len() {
            self.visit(1);
            let (set, cursor) = &mut sets[k];
            match self.pool[*set].blocking_end_from(cursor, T::narrow(c), T::narrow(c + size)) {
                Some(e) => {
                    c = e.widen();
                    sets[..=k].rotate_right(1);
                    k = 0;
                }
                None => {
                    k += 1;
                }
            }
        }
        c
    }

    /// The pool index of a node's `own` or `sub` set, `None` while empty.
    fn slot(&self, (v, use_sub): (usize, bool)) -> Option<usize> {
        self.slots[v][usize::from(use_sub)].checked_sub(1)
    }

    /// The window's sets that hold something.
    fn sets<'a>(&'a self, window: &'a Window) -> impl Iterator<Item = &'a IntervalSet<T>> + 'a {
        window.nodes.iter().filter_map(|&node| self.slot(node)).map(|k| &self.pool[k])
    }

    /// Adds `[start, end)` to the set in `slots[v][which]`, making it first.
    fn insert_at(&mut self, v: usize, which: usize, start: T, end: T) {
        let slot = &mut self.slots[v][which];
        if *slot == 0 {
            self.pool.push(IntervalSet::default());
            *slot = self.pool.len();
        }
        self.pool[*slot - 1].insert(start, end);
    }

    /// The free gap that starts at a free offset `at`: the lowest taken
    /// offset above it in the window, or `None` when everything above is
    /// free.
    pub fn gap_top(&self, window: &Window, at: u64) -> Option<u64> {
        self.visit(window.nodes.len());
        self.sets(window).filter_map(|set| set.next_start(T::narrow(at))).min().map(T::widen)
    }

    /// The offset of the tightest free gap that holds `size` bytes (least
    /// slack, lowest on ties); the lowest offset above everything when no
    /// gap below holds it.
    pub fn best_fit(&self, window: &mut Window, size: u64) -> u64 {
        if size == 0 {
            return 0;
        }
        let mut best: Option<(u64, u64)> = None; // (slack, offset)
        let mut c = 0;
        loop {
            c = self.first_fit(window, size, c);
            match self.gap_top(window, c) {
                None => return best.map_or(c, |(_, o)| o),
                Some(top) => {
                    let slack = top - c - size;
                    if best.is_none_or(|(s, _)| slack < s) {
                        best = Some((slack, c));
                        if slack == 0 {
                            return c;
                        }
                    }
                    c = top;
                }
            }
        }
    }

    /// Marks `[offset, offset + size)` taken throughout the window.
    pub fn insert(&mut self, window: &Window, offset: u64, size: u64) {
        if size == 0 {
            return;
        }
        self.visit(window.nodes.len());
        let (start, end) = (T::narrow(offset), T::narrow(offset + size));
        for &(v, is_canonical) in &window.nodes {
            if is_canonical {
                self.insert_at(v, OWN, start, end);
            }
            self.insert_at(v, SUB, start, end);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_sees_buffers_that_meet_in_time() {
        let lifetimes = [(0, 4), (2, 6), (6, 9), (1, 3)];
        let mut occ = Occupancy::<u64>::new(lifetimes.iter().copied());
        let w0 = occ.window(0, 4).unwrap();
        occ.insert(&w0, 0, 10);
        let mut w1 = occ.window(2, 6).unwrap();
        assert_eq!(occ.first_fit(&mut w1, 5, 0), 10);
        occ.insert(&w1, 10, 5);
        let mut w2 = occ.window(6, 9).unwrap();
        assert_eq!(occ.first_fit(&mut w2, 100, 0), 0, "nothing is live from step 6");
        let mut w3 = occ.window(1, 3).unwrap();
        assert_eq!(occ.first_fit(&mut w3, 1, 0), 15);
        assert_eq!(occ.gap_top(&w3, 15), None);
        assert_eq!(occ.gap_top(&w3, 0), Some(0));
    }

    #[test]
    fn best_fit_prefers_the_tightest_gap() {
        let lifetimes = [(0, 10), (0, 10), (0, 10), (0, 10), (0, 10)];
        let mut occ = Occupancy::<u32>::new(lifetimes.iter().copied());
        let mut w = occ.window(0, 10).unwrap();
        occ.insert(&w, 0, 10); // gap [10, 30) of 20
        occ.insert(&w, 30, 10); // gap [40, 45) of 5
        occ.insert(&w, 45, 10);
        assert_eq!(occ.first_fit(&mut w, 5, 0), 10);
        assert_eq!(occ.best_fit(&mut w, 5), 40);
        assert_eq!(occ.best_fit(&mut w, 6), 10);
        assert_eq!(occ.best_fit(&mut w, 30), 55);
    }
}
