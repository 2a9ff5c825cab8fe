//! No reuse: every buffer after the previous one, in order of addition, as
//! TFLite Micro's `LinearMemoryPlanner`. Fixed buffers keep their offsets
//! and the stack starts above the highest of them.

use super::{Algorithm, Placement, PlacementAlgorithm, SearchLimits};
use crate::plan::heapless;
use crate::plan::problem::Problem;

/// Buffers stacked in order of addition.
pub struct Linear;

impl PlacementAlgorithm for Linear {
    fn algorithm(&self) -> Algorithm {
        Algorithm::Linear
    }

    fn place(&self, problem: &Problem, _limits: &SearchLimits) -> Placement {
        let (mut offsets, mut work) = (vec![0u64; problem.len()], Vec::new());
        heapless::linear(&mut heapless::Slices { tensors: problem, offsets: &mut offsets, work: &mut work });
        Placement::heuristic(offsets, self.algorithm())
    }
}
