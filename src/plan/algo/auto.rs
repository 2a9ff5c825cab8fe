//! The default: try the heuristics best-first, keep the smallest peak, stop
//! as soon as a plan reaches the lower bound (it is then optimal) or the
//! search limits say stop (after the first heuristic, so there is always a
//! plan).
//!
//! Never worse than `tflm`: `size-first-fit` makes the same plan as `tflm`
//! except when a zero-size buffer has a fixed offset (TFLM then treats it as
//! a wall), so only in that case is `tflm` itself also tried.

use super::{peak_of, Algorithm, Placement, PlacementAlgorithm, SearchLimits};
use crate::plan::problem::Problem;

/// Best of the heuristics.
pub struct Auto;

impl PlacementAlgorithm for Auto {
    fn algorithm(&self) -> Algorithm {
        Algorithm::Auto
    }

    fn place(&self, problem: &Problem, limits: &SearchLimits) -> Placement {
        let mut candidates: Vec<Algorithm> = Algorithm::HEURISTICS.to_vec();
        let zero_size_fixed = problem.buffers().iter().any(|b| b.fixed_offset.is_some() && b.size == 0);
        if zero_size_fixed {
            candidates.push(Algorithm::Tflm);
        }
        let mut best: Option<(u64, Placement)> = None;
        for algorithm in candidates {
            if best.is_some() && limits.should_stop() {
                break;
            }
            let placement = algorithm.implementation().place(problem, limits);
            let peak = peak_of(problem, &placement.offsets);
            if best.as_ref().is_none_or(|(p, _)| peak < *p) {
                best = Some((peak, placement));
            }
            if peak <= limits.lower_bound {
                break;
            }
        }
        best.expect("at least one heuristic ran").1
    }
}
