//! No reuse: every buffer after the previous one, in order of addition, as
//! TFLite Micro's `LinearMemoryPlanner`. Fixed buffers keep their offsets
//! and the stack starts above the highest of them.

use super::{Algorithm, Placement, PlacementAlgorithm, SearchLimits};
use crate::plan::problem::Problem;

/// Buffers stacked in order of addition.
pub struct Linear;

impl PlacementAlgorithm for Linear {
    fn algorithm(&self) -> Algorithm {
        Algorithm::Linear
    }

    fn place(&self, problem: &Problem, _limits: &SearchLimits) -> Placement {
        let buffers = problem.buffers();
        let mut next = buffers
            .iter()
            .filter(|b| b.occupies())
            .filter_map(|b| b.fixed_offset.map(|o| o + b.size))
            .max()
            .unwrap_or(0);
        let offsets = buffers
            .iter()
            .map(|b| match b.fixed_offset {
                Some(o) => o,
                None => {
                    let o = next;
                    next += b.size;
                    o
                }
            })
            .collect();
        Placement::heuristic(offsets, self.algorithm())
    }
}
