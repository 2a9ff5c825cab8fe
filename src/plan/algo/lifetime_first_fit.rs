//! Longest lifetime first (larger first on ties), lowest offset that fits:
//! long-lived buffers settle at the bottom and short ones reuse the space
//! above them.

use super::{place_in_order_counted, unfixed, Algorithm, Fit, Placement, PlacementAlgorithm, SearchLimits};
use crate::plan::problem::Problem;

/// Lifetime descending, first fit.
pub struct LifetimeFirstFit;

impl PlacementAlgorithm for LifetimeFirstFit {
    fn algorithm(&self) -> Algorithm {
        Algorithm::LifetimeFirstFit
    }

    fn place(&self, problem: &Problem, _limits: &SearchLimits) -> Placement {
        Placement::counted(place_in_order_counted(problem, &lifetime_order(problem), Fit::First), self.algorithm())
    }
}

/// Buffers by lifetime descending, then size descending, then
/// earlier-added first.
pub(super) fn lifetime_order(problem: &Problem) -> Vec<usize> {
    let buffers = problem.buffers();
    let mut order = unfixed(problem);
    crate::sort::sort_unstable_by(&mut order, |&a, &b| {
        let (x, y) = (&buffers[a], &buffers[b]);
        y.lifetime.len().cmp(&x.lifetime.len()).then(y.size.cmp(&x.size)).then(a.cmp(&b))
    });
    order
}
