//! Glow's "preserve allocation order": buffers placed in the order they are
//! allocated (start step, then order of addition), each at the lowest
//! offset free of every placed buffer it is live with. Placing in start
//! order, those are exactly the buffers still live when it is allocated, so
//! this is what a first-fit allocator running the program would do.
//!
//! Never part of `auto`, it places its buffers as a chosen algorithm does
//! ([`first_fit_alone`]): each among the buffers it shares a step with,
//! where those are few, as in the graphs runtimes and Glow plan.

use super::{first_fit_alone, unfixed, Algorithm, Placement, PlacementAlgorithm, SearchLimits};
use crate::plan::problem::Problem;

/// Allocation order, first fit.
pub struct Sequential;

impl PlacementAlgorithm for Sequential {
    fn algorithm(&self) -> Algorithm {
        Algorithm::Sequential
    }

    fn place(&self, problem: &Problem, _limits: &SearchLimits) -> Placement {
        let buffers = problem.buffers();
        let mut order = unfixed(problem);
        crate::sort::sort_by_key(&mut order, |&i| (buffers[i].lifetime.start, i));
        Placement::heuristic(first_fit_alone(problem, &order), self.algorithm())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::problem::Lifetime;

    #[test]
    fn places_in_allocation_order_like_a_running_first_fit_allocator() {
        // a [0,2) 4 B, b [1,3) 8 B, c [2,4) 4 B: c is allocated after a was
        // freed and takes its place, below b.
        let mut p = Problem::new(1).unwrap();
        p.push(8, Lifetime::half_open(1, 3).unwrap(), None).unwrap();
        p.push(4, Lifetime::half_open(0, 2).unwrap(), None).unwrap();
        p.push(4, Lifetime::half_open(2, 4).unwrap(), None).unwrap();
        let placement = Sequential.place(&p, &SearchLimits::unlimited(12));
        assert_eq!(placement.offsets, vec![4, 0, 0]);
    }

    #[test]
    fn with_fixed_buffers_it_plans_around_those_that_begin_later() {
        // b [0,4) is placed first; the fixed buffer at 0 begins at step 2,
        // after b was allocated, yet b must stay clear of it.
        let mut p = Problem::new(1).unwrap();
        p.push(8, Lifetime::half_open(2, 3).unwrap(), Some(0)).unwrap();
        p.push(4, Lifetime::half_open(0, 4).unwrap(), None).unwrap();
        let placement = Sequential.place(&p, &SearchLimits::unlimited(12));
        assert_eq!(placement.offsets, vec![0, 8]);
    }
}
