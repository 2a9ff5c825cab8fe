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

#[cfg(test)]
mod tests {
    use super::Auto;
    use crate::plan::algo::size_first_fit::place_openvino_ties;
    use crate::plan::algo::tests::{random_problem, Rng};
    use crate::plan::algo::{peak_of, Algorithm, PlacementAlgorithm, SearchLimits};
    use crate::plan::problem::{Lifetime, Problem};
    use crate::plan::{lower_bound, validate};

    /// Issue 25's four tensors: floor-first stacks them to 18 B, size
    /// descending first fit (OpenVINO's order) reaches the 14 B bound. With
    /// one unit of work `auto` could only afford floor-first.
    #[test]
    fn a_budget_of_one_unit_still_matches_size_first_fit() {
        let mut p = Problem::new(1).unwrap();
        for (size, first, last) in [(9, 2, 3), (5, 3, 4), (8, 4, 7), (5, 5, 9)] {
            p.push(size, Lifetime::inclusive(first, last).unwrap(), None).unwrap();
        }
        let lb = lower_bound(p.buffers()).bytes;
        assert_eq!(lb, 14);
        let floor_first = Algorithm::FloorFirst.implementation().place(&p, &SearchLimits::unlimited(lb));
        assert_eq!(peak_of(&p, &floor_first.offsets), 18, "the case needs floor-first to miss");
        for limit in [1, 2, 100, 1_000] {
            let limits = SearchLimits { work_limit: Some(limit), ..SearchLimits::unlimited(lb) };
            let plan = Auto.place(&p, &limits);
            assert_eq!(peak_of(&p, &plan.offsets), 14, "work limit {limit}");
        }
    }

    /// `auto` is never above `size-first-fit` (in TFLM's tie order or
    /// OpenVINO's) or `tflm`, whatever the work limit, with and without
    /// fixed buffers (zero-size ones included).
    #[test]
    fn auto_is_never_worse_than_size_first_fit_or_tflm_at_any_work_limit() {
        let mut rng = Rng::new(0x2514);
        for round in 0..150 {
            let n = 2 + round % 70;
            let mut p = random_problem(&mut rng, n, [1, 8, 64][round % 3], round % 3 == 0);
            if round % 6 == 3 {
                // A zero-size buffer at a fixed offset: there TFLM's plan can
                // differ from size-first-fit's.
                p.push(0, Lifetime::half_open(0, 1 + rng.below(10) as i64).unwrap(), Some(p.alignment())).unwrap();
            }
            let lb = lower_bound(p.buffers()).bytes;
            let unlimited = SearchLimits::unlimited(lb);
            let floor = [Algorithm::SizeFirstFit, Algorithm::Tflm]
                .map(|a| peak_of(&p, &a.implementation().place(&p, &unlimited).offsets))
                .into_iter()
                .chain([peak_of(&p, &place_openvino_ties(&p).0)])
                .min()
                .unwrap();
            for limit in [1, 7, 50, 400, 3_000, 20_000, 150_000] {
                let limits = SearchLimits { work_limit: Some(limit), ..SearchLimits::unlimited(lb) };
                let plan = Auto.place(&p, &limits);
                let peak = validate(p.buffers(), &plan.offsets).expect("a valid plan");
                assert!(peak <= floor, "round {round}, limit {limit}: auto {peak} > {floor}");
            }
        }
    }
}
