//! Most conflicting bytes first: a buffer's weight is its size plus the
//! sizes of every buffer it shares a step with, so the buffers at the most
//! crowded moments are placed while the space is still open.
//!
//! Weights come from prefix sums over sorted starts and ends: O(n log n).

use super::{place_in_order_counted, unfixed, Algorithm, Fit, Placement, PlacementAlgorithm, SearchLimits};
use crate::plan::problem::Problem;

/// Conflict weight descending, first fit.
pub struct Conflict;

/// For each buffer, the total size of the occupying buffers that share a
/// step with it, itself included (0 for buffers that occupy nothing).
pub(super) fn conflict_weights(problem: &Problem) -> Vec<u128> {
    let buffers = problem.buffers();
    let mut starts: Vec<(i64, u64)> = Vec::new();
    let mut ends: Vec<(i64, u64)> = Vec::new();
    for b in buffers.iter().filter(|b| b.occupies()) {
        starts.push((b.lifetime.start, b.size));
        ends.push((b.lifetime.end, b.size));
    }
    starts.sort_unstable();
    ends.sort_unstable();
    let prefix = |v: &[(i64, u64)]| {
        let mut p = Vec::with_capacity(v.len() + 1);
        p.push(0u128);
        for &(_, s) in v {
            p.push(p.last().unwrap() + s as u128);
        }
        p
    };
    let (ps, pe) = (prefix(&starts), prefix(&ends));
    buffers
        .iter()
        .map(|b| {
            if !b.occupies() {
                return 0;
            }
            // Started before our end, minus ended at or before our start.
            let started = starts.partition_point(|&(t, _)| t < b.lifetime.end);
            let ended = ends.partition_point(|&(t, _)| t <= b.lifetime.start);
            ps[started] - pe[ended]
        })
        .collect()
}

impl PlacementAlgorithm for Conflict {
    fn algorithm(&self) -> Algorithm {
        Algorithm::Conflict
    }

    fn place(&self, problem: &Problem, _limits: &SearchLimits) -> Placement {
        Placement::counted(place_in_order_counted(problem, &conflict_order(problem), Fit::First), self.algorithm())
    }
}

/// Buffers by conflict weight descending, then size descending, then
/// earlier-added first.
pub(super) fn conflict_order(problem: &Problem) -> Vec<usize> {
    let buffers = problem.buffers();
    let weights = conflict_weights(problem);
    let mut order = unfixed(problem);
    crate::sort::sort_unstable_by(&mut order, |&a, &b| {
        weights[b].cmp(&weights[a]).then(buffers[b].size.cmp(&buffers[a].size)).then(a.cmp(&b))
    });
    order
}
