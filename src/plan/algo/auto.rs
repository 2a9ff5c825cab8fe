//! The default: the heuristics best-first, then, when none reached the
//! lower bound, the `exact` search from the best of them for the rest of the
//! work budget (the planner's work limit, [`crate::plan::DEFAULT_WORK_LIMIT`]
//! unless set; see [`SearchLimits`] for what a unit is). Everything is
//! counted, not timed, so the plan depends only on the input and the
//! options; an explicit time limit or cancellation can still cut it short.
//!
//! First the heuristic stage ([`super::portfolio::best_heuristic`]: the
//! heuristics best-first, stopping at or near the lower bound, never worse
//! than `tflm`). The search is skipped when that stage came within
//! [`super::portfolio::NEAR_BOUND_PPB`] of the bound, and when the best
//! heuristic plan fits the capacity.

use super::portfolio::{best_heuristic, close_enough};
use super::{exact, peak_of, Algorithm, Placement, PlacementAlgorithm, SearchLimits};
use crate::plan::problem::Problem;

/// Best of the heuristics, then the exact search.
pub struct Auto;

/// Whether a plan with this peak needs no further work.
fn good_enough(peak: u64, limits: &SearchLimits) -> bool {
    close_enough(peak, limits.lower_bound) || limits.capacity.is_some_and(|c| peak <= c)
}

impl PlacementAlgorithm for Auto {
    fn algorithm(&self) -> Algorithm {
        Algorithm::Auto
    }

    fn place(&self, problem: &Problem, limits: &SearchLimits) -> Placement {
        let best = best_heuristic(problem, limits);
        if good_enough(peak_of(problem, &best.offsets), limits) {
            return best;
        }
        if limits.should_stop() {
            let cut = best.time_limit_cut || !limits.cancelled();
            return Placement { time_limit_cut: cut, ..best };
        }
        exact::improve(problem, best, limits)
    }
}
