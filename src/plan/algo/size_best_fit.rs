//! Size descending, each buffer in the free gap it leaves the least slack
//! in: keeps large gaps whole for later buffers.

use super::size_first_fit::size_descending;
use super::{place_in_order_counted, Algorithm, Fit, Placement, PlacementAlgorithm, SearchLimits};
use crate::plan::problem::Problem;

/// Size descending, best fit.
pub struct SizeBestFit;

impl PlacementAlgorithm for SizeBestFit {
    fn algorithm(&self) -> Algorithm {
        Algorithm::SizeBestFit
    }

    fn place(&self, problem: &Problem, _limits: &SearchLimits) -> Placement {
        Placement::counted(place_in_order_counted(problem, &size_descending(problem), Fit::Best), self.algorithm())
    }
}
