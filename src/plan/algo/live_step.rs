//! Glow's order: find the step where the most not-yet-placed bytes are
//! live, place the largest not-yet-placed buffer live there, repeat. The
//! most crowded moment of the program is packed first, with the most room.
//!
//! Two segment trees over the compressed time axis make each choice
//! O(log T): one with range-add / max for the live unplaced bytes per step,
//! one holding each buffer at its canonical nodes (sorted by size) to find
//! the largest unplaced buffer live at a step. O(n log T) in all.

use super::{place_in_order_counted, unfixed, Algorithm, Fit, Placement, PlacementAlgorithm, SearchLimits};
use crate::plan::max_tree::MaxTree;
use crate::plan::problem::Problem;

/// Largest live step first, first fit.
pub struct LiveStep;

/// The live-step placement order of the unfixed buffers.
pub(super) fn live_step_order(problem: &Problem) -> Vec<usize> {
    let buffers = problem.buffers();
    let candidates = unfixed(problem);
    let mut points: Vec<i64> = Vec::new();
    for &i in &candidates {
        if buffers[i].occupies() {
            points.push(buffers[i].lifetime.start);
            points.push(buffers[i].lifetime.end);
        }
    }
    points.sort_unstable();
    points.dedup();
    let segments = points.len().saturating_sub(1).max(1);
    let seg = |t: i64| points.binary_search(&t).expect("known point");

    let mut live = MaxTree::new(segments);
    let leaves = live.leaves();
    // Buffers at their canonical nodes; each node's list sorted by size
    // descending with a cursor past the already-placed ones.
    let mut lists: Vec<Vec<usize>> = vec![Vec::new(); 2 * leaves];
    let mut ranges = vec![(0usize, 0usize); buffers.len()];
    for &i in &candidates {
        let b = &buffers[i];
        if !b.occupies() {
            continue;
        }
        let (a, e) = (seg(b.lifetime.start), seg(b.lifetime.end));
        ranges[i] = (a, e);
        live.add(a, e, b.size as i128);
        let (mut l, mut r) = (a + leaves, e + leaves);
        while l < r {
            if l & 1 == 1 {
                lists[l].push(i);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                lists[r].push(i);
            }
            l >>= 1;
            r >>= 1;
        }
    }
    for list in &mut lists {
        crate::sort::sort_unstable_by(list, |&x, &y| buffers[y].size.cmp(&buffers[x].size).then(y.cmp(&x)));
    }
    let mut cursor = vec![0usize; 2 * leaves];
    let mut placed = vec![false; buffers.len()];
    let mut order = Vec::with_capacity(candidates.len());
    while live.max() > 0 {
        let step = live.argmax();
        // The largest unplaced buffer covering `step` sits in one of the
        // lists on the path from its leaf to the root.
        let mut best: Option<usize> = None;
        let mut v = step + leaves;
        while v >= 1 {
            while cursor[v] < lists[v].len() && placed[lists[v][cursor[v]]] {
                cursor[v] += 1;
            }
            if let Some(&i) = lists[v].get(cursor[v]) {
                let better = best.is_none_or(|j| (buffers[i].size, i) > (buffers[j].size, j));
                if better {
                    best = Some(i);
                }
            }
            v >>= 1;
        }
        let i = best.expect("a step with live bytes has a live buffer");
        placed[i] = true;
        order.push(i);
        let (a, e) = ranges[i];
        live.add(a, e, -(buffers[i].size as i128));
    }
    // Buffers that occupy nothing go last; their offset does not matter.
    order.extend(candidates.into_iter().filter(|&i| !placed[i]));
    order
}

impl PlacementAlgorithm for LiveStep {
    fn algorithm(&self) -> Algorithm {
        Algorithm::LiveStep
    }

    fn place(&self, problem: &Problem, _limits: &SearchLimits) -> Placement {
        Placement::counted(place_in_order_counted(problem, &live_step_order(problem), Fit::First), self.algorithm())
    }
}
