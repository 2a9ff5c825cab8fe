//! Greedy by size: largest first, each at the lowest offset that fits.
//!
//! Ties go to the buffer added later, the order TFLite Micro's greedy
//! planner uses, so without fixed buffers this is the `tflm` plan computed
//! in O(n log n · log m) instead of O(n^2).

use super::{
    first_fit_alone, place_in_order_counted, unfixed, Algorithm, Fit, Placement, PlacementAlgorithm, SearchLimits,
};
use crate::plan::problem::Problem;

/// Size descending, first fit.
pub struct SizeFirstFit;

/// Buffers to place by size descending, later-added first on ties.
pub(super) fn size_descending(problem: &Problem) -> Vec<usize> {
    // Size and index packed in one key, sorted up and read down: a sort of
    // plain integers, several times faster than one through a comparator.
    let buffers = problem.buffers();
    let mut keys: Vec<u128> =
        unfixed(problem).into_iter().map(|i| u128::from(buffers[i].size) << 64 | i as u128).collect();
    keys.sort_unstable();
    keys.into_iter().rev().map(|k| k as u64 as usize).collect()
}

/// Buffers by size descending, earlier start first on ties, then earlier
/// end: the order OpenVINO's `MemorySolver` leaves equal sizes in on its
/// own tests (its sort is not stable, so beyond them this is our reading).
/// On networks with many equal sizes it can beat the TFLM tie order by
/// tens of percent, and the other way round.
pub(super) fn size_descending_by_lifetime(problem: &Problem) -> Vec<usize> {
    let mut order = unfixed(problem);
    let buffers = problem.buffers();
    crate::sort::sort_unstable_by_key(&mut order, |&i| {
        let b = &buffers[i];
        (std::cmp::Reverse(b.size), b.lifetime.start, b.lifetime.end, i)
    });
    order
}

/// Size descending first fit with OpenVINO's tie order (see
/// [`size_descending_by_lifetime`]); `auto` runs it beside the TFLM order.
/// The offsets and the work units they took.
pub(super) fn place_openvino_ties(problem: &Problem) -> (Vec<u64>, u64) {
    place_in_order_counted(problem, &size_descending_by_lifetime(problem), Fit::First)
}

impl PlacementAlgorithm for SizeFirstFit {
    fn algorithm(&self) -> Algorithm {
        Algorithm::SizeFirstFit
    }

    fn place(&self, problem: &Problem, _limits: &SearchLimits) -> Placement {
        Placement::counted(place_in_order_counted(problem, &size_descending(problem), Fit::First), self.algorithm())
    }

    fn place_alone(&self, problem: &Problem, _limits: &SearchLimits) -> Placement {
        Placement::heuristic(first_fit_alone(problem, &size_descending(problem)), self.algorithm())
    }
}
