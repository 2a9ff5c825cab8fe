//! TensorFlow Lite Micro's `GreedyMemoryPlanner`, reproduced step for step
//! so that the same buffers added in the same order get byte-identical
//! offsets:
//!
//! 1. Fixed ("offline planned") buffers first, in order of addition; then
//!    the others by size descending. TFLM fills its sort array from the tail
//!    and bubble-sorts it stably, so equal sizes go later-added first.
//! 2. Placed buffers are kept in a list sorted by offset (a new entry goes
//!    after entries at the same offset). A buffer walks that list, skipping
//!    entries that share no step with it, and takes the first candidate
//!    offset (0, then the running maximum of the ends walked past) whose gap
//!    to the next entry holds it. Zero-size entries count in the walk, as in
//!    TFLM.
//! 3. Fixed buffers may overlap each other (TFLM trusts an offline plan).
//!    They all enter the list; the walk above then passes overlapping
//!    entries, where the gap to an entry that starts below the candidate is
//!    negative (TFLM subtracts in signed int) and never fits, and the
//!    candidate only grows.
//!
//! Cost: O(n^2) time like the original; use `size-first-fit` for the same
//! plan (without fixed buffers) in O(n log n · log m).

use super::{Algorithm, Placement, PlacementAlgorithm, SearchLimits};
use crate::plan::heapless::{self, Slices, Walk};
use crate::plan::problem::Problem;

/// The TFLite Micro greedy planner.
pub struct Tflm;

/// The order TFLM places buffers in.
#[cfg(test)]
pub(super) fn tflm_order(problem: &Problem) -> Vec<usize> {
    let (mut offsets, mut work) = (vec![0u64; problem.len()], vec![0u32; problem.len()]);
    heapless::tflm_order(&mut Slices { tensors: problem, offsets: &mut offsets, work: &mut work });
    work.into_iter().map(heapless::ix).collect()
}

/// TFLM's plan of `problem` when its first `previous.len()` buffers were
/// planned before (with these offsets) and the others were added since:
/// when every new buffer comes after every old one in TFLM's order (all new
/// buffers planned online and smaller than every old online buffer), TFLM
/// would place the old ones exactly as before, so only the new ones are
/// walked, over the old entries re-sorted by offset: O(n log n + k · n) for
/// k new buffers instead of O(n^2). `None` when the order changed (plan
/// afresh).
pub(crate) fn replan(problem: &Problem, previous: &[u64]) -> Option<Placement> {
    let n = problem.len();
    let old = previous.len();
    if old > n {
        return None;
    }
    let mut offsets = Vec::with_capacity(n);
    offsets.extend_from_slice(previous);
    offsets.resize(n, 0);
    let mut order = vec![0u32; n];
    heapless::tflm_order(&mut Slices { tensors: problem, offsets: &mut offsets, work: &mut order });
    if order[..old].iter().any(|&i| heapless::ix(i) >= old) {
        return None;
    }
    // TFLM inserts an entry after those at its offset, so its list is the
    // placement order sorted stably by offset; the new buffers' order
    // follows it in the working words.
    let mut work: Vec<u32> =
        order[..old].iter().copied().filter(|&i| !problem.buffers()[heapless::ix(i)].lifetime.is_empty()).collect();
    crate::sort::sort_by_key(&mut work, |&i| offsets[heapless::ix(i)]);
    let listed = work.len();
    work.extend_from_slice(&order[old..]);
    let end = work.len();
    work.resize(n, 0);
    heapless::walk(&mut Slices { tensors: problem, offsets: &mut offsets, work: &mut work }, listed, end, Walk::Tflm);
    Some(Placement::heuristic(offsets, Algorithm::Tflm))
}

impl PlacementAlgorithm for Tflm {
    fn algorithm(&self) -> Algorithm {
        Algorithm::Tflm
    }

    fn place(&self, problem: &Problem, _limits: &SearchLimits) -> Placement {
        let n = problem.len();
        let (mut offsets, mut work) = (vec![0u64; n], vec![0u32; n]);
        let mut w = Slices { tensors: problem, offsets: &mut offsets, work: &mut work };
        heapless::tflm_order(&mut w);
        heapless::walk(&mut w, 0, n, Walk::Tflm);
        Placement::heuristic(offsets, self.algorithm())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::problem::{Lifetime, Problem};
    use crate::plan::{Algorithm, Planner};

    fn tflm(spec: &[(u64, i64, i64, Option<u64>)]) -> Vec<u64> {
        let mut p = Planner::new();
        p.set_algorithm(Algorithm::Tflm);
        for &(size, first, last, fixed) in spec {
            p.add_buffer(size, Lifetime::inclusive(first, last).unwrap(), fixed).unwrap();
        }
        p.plan().unwrap().offsets.clone()
    }

    #[test]
    fn tflm_micro_allocator_offline_planner_overlapping_allocation() {
        // TFLite Micro's micro_allocator_test.cc,
        // "OfflinePlannerOverlappingAllocation": four 48 B tensors, offline
        // offsets t0 = 0, t1 = 0 (both live at the first operator), t2 = 48,
        // t3 online; TFLM puts t3 at 0. Lifetimes as its allocation info
        // marks them (operator k at step k + 1; t1 is only read, so its first
        // use is -1: live before the first step).
        let offsets = tflm(&[(48, 0, 1, Some(0)), (48, -1, 1, Some(0)), (48, 1, 2, Some(48)), (48, 2, 2, None)]);
        assert_eq!(offsets, vec![0, 0, 48, 0]);
    }

    #[test]
    fn tflm_micro_allocator_offline_planner_offline_online() {
        // micro_allocator_test.cc, "OfflinePlannerOfflineOnline": t0 = 0,
        // t1 = 48 offline, t2 and t4 online, t3 = 0 offline; TFLM gives t2 96
        // and t4 48.
        let offsets = tflm(&[
            (48, 0, 1, Some(0)),
            (48, -1, 1, Some(48)),
            (48, 1, 2, None),
            (48, 2, 2, Some(0)),
            (48, 2, 2, None),
        ]);
        assert_eq!(offsets, vec![0, 48, 96, 0, 48]);
    }

    #[test]
    fn the_candidate_is_the_running_maximum_of_the_ends_walked_past() {
        // B lies inside A; walking past B must not pull the candidate back
        // down to B's end (80), which is inside A. The gap to C is measured
        // from 100 (120 - 100 = 20 fits 20 B); before A, 0 - 0 does not.
        let offsets = tflm(&[(100, 0, 9, Some(0)), (30, 0, 9, Some(50)), (10, 0, 9, Some(120)), (20, 5, 5, None)]);
        assert_eq!(offsets[3], 100);
        // Behind an entry that starts below the candidate the gap is
        // negative and never fits, even for a zero-size buffer.
        let offsets = tflm(&[(64, 0, 9, Some(0)), (64, 0, 9, Some(32)), (0, 3, 3, None), (8, 3, 3, None)]);
        assert_eq!(offsets[2..], [0, 96]);
    }

    #[test]
    fn replan_walks_only_buffers_that_come_last_in_tflm_order() {
        let problem = |extra: &[(u64, Option<u64>)]| {
            let base = [(50, None), (30, Some(0)), (20, None)];
            Problem::from_buffers(
                1,
                base.iter().chain(extra).map(|&(size, fixed_offset)| crate::plan::Buffer {
                    size,
                    lifetime: Lifetime::half_open(0, 3).unwrap(),
                    fixed_offset,
                }),
            )
            .unwrap()
        };
        let limits = SearchLimits::unlimited(0);
        let before = Tflm.place(&problem(&[]), &limits).offsets;
        assert_eq!(before, vec![30, 0, 80]);
        // Smaller than every online buffer: the old offsets stand.
        let smaller = problem(&[(10, None), (5, None)]);
        assert_eq!(replan(&smaller, &before).unwrap().offsets, Tflm.place(&smaller, &limits).offsets);
        // As large as one (later-added goes first), larger, or fixed: the
        // order changed, so no re-plan.
        for extra in [(20, None), (60, None), (10, Some(200))] {
            assert!(replan(&problem(&[extra]), &before).is_none(), "{extra:?}");
        }
    }

    #[test]
    fn overlapping_fixed_buffers_are_walked_as_tflm_walks_them() {
        // Same offset: a new entry goes after those at its offset, and the
        // walk passes both. The 16 B buffer fits the gap 32..48 that both
        // leave; the 24 B one goes to the top.
        let offsets =
            tflm(&[(32, 0, 4, Some(0)), (16, 2, 4, Some(0)), (16, 0, 4, Some(48)), (16, 3, 3, None), (24, 3, 3, None)]);
        assert_eq!(offsets[3..], [32, 64]);
        let problem = Problem::from_buffers(
            1,
            [(32, 0, Some(0)), (16, 2, Some(0)), (8, 0, None)].map(|(size, s, fixed_offset)| crate::plan::Buffer {
                size,
                lifetime: Lifetime::half_open(s, 5).unwrap(),
                fixed_offset,
            }),
        )
        .unwrap();
        assert_eq!(tflm_order(&problem), vec![0, 1, 2]);
    }
}
