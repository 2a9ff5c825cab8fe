//! Glow's "preserve allocation order": buffers placed in the order they are
//! allocated (start step, then order of addition), each at the lowest
//! offset free of every placed buffer it is live with. Placing in start
//! order, those are exactly the buffers still live when it is allocated, so
//! this is what a first-fit allocator running the program would do.
//!
//! That is also how it is computed: a sweep over the start steps keeping
//! the buffers live at the current step ordered by offset, as such an
//! allocator keeps its free list. A placement costs what is live, not a
//! walk through a segment tree over the whole run, so graphs with a few
//! dozen buffers live at once (ggml's, Glow's) plan in a few microseconds
//! per buffer. With fixed buffers, which may begin after a buffer that
//! meets them was placed, first fit through each buffer's neighbours (or
//! over the shared occupancy where those lists would be long) places them
//! instead: the same plan, since first fit in a given order has one answer.

use super::{neighbours, place_in_order_counted, unfixed, Algorithm, Fit, Placement, PlacementAlgorithm, SearchLimits};
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
        if order.len() == buffers.len() {
            return Placement::counted(sweep(problem, &order), self.algorithm());
        }
        match neighbours::first_fit(problem, &order) {
            Some(offsets) => Placement::heuristic(offsets, self.algorithm()),
            None => Placement::counted(place_in_order_counted(problem, &order, Fit::First), self.algorithm()),
        }
    }
}

/// A buffer live at the sweep's step: where it lies and the step it dies.
#[derive(Copy, Clone)]
struct Live {
    offset: u64,
    end: u64,
    dies: i64,
}

/// First fit in `order` (every buffer, none fixed, by start step) with the
/// live buffers in a list ordered by offset: each placement drops the
/// buffers dead by its start, takes the lowest gap that holds it and
/// enters the list there. The offsets and the list entries visited (the
/// work, in the units of [`place_in_order_counted`]'s visits).
fn sweep(problem: &Problem, order: &[usize]) -> (Vec<u64>, u64) {
    let buffers = problem.buffers();
    let mut offsets = vec![0u64; buffers.len()];
    let mut live: Vec<Live> = Vec::new();
    let mut visits = 0u64;
    for &i in order {
        let b = &buffers[i];
        if !b.occupies() {
            continue;
        }
        let (start, size) = (b.lifetime.start, b.size);
        // One pass: compact out the dead, and find the first gap below a
        // live buffer that holds `size` (live buffers never overlap each
        // other: they are all live at this step).
        let mut candidate = 0u64;
        let mut at: Option<usize> = None;
        let mut kept = 0;
        for k in 0..live.len() {
            let entry = live[k];
            if entry.dies <= start {
                continue;
            }
            if at.is_none() {
                if entry.offset >= candidate + size {
                    at = Some(kept);
                } else {
                    candidate = candidate.max(entry.end);
                }
            }
            live[kept] = entry;
            kept += 1;
        }
        visits += live.len() as u64 + 1;
        live.truncate(kept);
        let at = at.unwrap_or(kept);
        live.insert(at, Live { offset: candidate, end: candidate + size, dies: b.lifetime.end });
        offsets[i] = candidate;
    }
    (offsets, visits * super::VISIT_WORK)
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
    fn the_sweep_places_as_first_fit_over_the_shared_occupancy() {
        // Random instances (zero sizes, empty and one-step lifetimes, equal
        // starts, dense and sparse): the sweep's offsets are those of
        // first fit in the same order over the segment-tree occupancy.
        let mut rng = crate::plan::algo::tests::Rng::new(23);
        for round in 0..400 {
            let n = 1 + (round % 120);
            let problem = crate::plan::algo::tests::random_problem(&mut rng, n, 1 << (round % 4), false);
            let buffers = problem.buffers();
            let mut order = unfixed(&problem);
            crate::sort::sort_by_key(&mut order, |&i| (buffers[i].lifetime.start, i));
            let (swept, _) = sweep(&problem, &order);
            let (occupancy, _) = place_in_order_counted(&problem, &order, Fit::First);
            assert_eq!(swept, occupancy, "round {round}");
        }
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
