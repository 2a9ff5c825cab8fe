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
//!
//! Cost: O(n^2) time like the original; use `size-first-fit` for the same
//! plan (without fixed buffers) in O(n log n · log m).

use super::{Algorithm, Placement, PlacementAlgorithm, SearchLimits};
use crate::plan::problem::Problem;

/// The TFLite Micro greedy planner.
pub struct Tflm;

/// The order TFLM places buffers in.
pub(super) fn tflm_order(problem: &Problem) -> Vec<usize> {
    let buffers = problem.buffers();
    let mut fixed: Vec<usize> = (0..buffers.len()).filter(|&i| buffers[i].fixed_offset.is_some()).collect();
    // Reverse order of addition, then a stable sort by size descending.
    let mut online: Vec<usize> = (0..buffers.len()).rev().filter(|&i| buffers[i].fixed_offset.is_none()).collect();
    online.sort_by(|&a, &b| buffers[b].size.cmp(&buffers[a].size));
    fixed.extend(online);
    fixed
}

/// One placed buffer in the offset-sorted list.
#[derive(Copy, Clone)]
struct Entry {
    offset: u64,
    end: u64,
    first_step: i64,
    end_step: i64,
}

impl PlacementAlgorithm for Tflm {
    fn algorithm(&self) -> Algorithm {
        Algorithm::Tflm
    }

    fn place(&self, problem: &Problem, _limits: &SearchLimits) -> Placement {
        let buffers = problem.buffers();
        let mut offsets = vec![0u64; buffers.len()];
        let mut list: Vec<Entry> = Vec::with_capacity(buffers.len());
        for i in tflm_order(problem) {
            let b = &buffers[i];
            if b.lifetime.is_empty() {
                // Never used: TFLM never sees such a buffer (its allocator
                // skips it), and it meets nothing.
                offsets[i] = b.fixed_offset.unwrap_or(0);
                continue;
            }
            let (s, e) = (b.lifetime.start, b.lifetime.end);
            let offset = match b.fixed_offset {
                Some(o) => o,
                None => {
                    let mut candidate = 0u64;
                    for entry in list.iter().filter(|x| x.first_step < e && s < x.end_step) {
                        if entry.offset >= candidate && entry.offset - candidate >= b.size {
                            break;
                        }
                        candidate = candidate.max(entry.end);
                    }
                    candidate
                }
            };
            offsets[i] = offset;
            let at = list.partition_point(|x| x.offset <= offset);
            list.insert(at, Entry { offset, end: offset + b.size, first_step: s, end_step: e });
        }
        Placement::heuristic(offsets, self.algorithm())
    }
}
