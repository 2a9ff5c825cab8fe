//! First fit through each buffer's list of the buffers it shares a step
//! with (its neighbours), for problems where those lists are short: the
//! graphs runtimes plan, where a few dozen buffers are live at a time.
//!
//! One sweep over the time-ordered events writes the lists; a buffer then
//! looks only at its placed neighbours, sorted by offset, and takes the
//! first gap that holds it. The same plan as first fit over the shared
//! occupancy (first fit in a given order has one answer), in O(P log d)
//! for P pairs of neighbours and d neighbours a buffer, where the
//! occupancy reads O(log T) interval sets a buffer: several times faster
//! on such graphs. Dense problems, where the pairs grow as n times the
//! buffers live at a step, are left to the occupancy.

use crate::plan::events::time_ordered;
use crate::plan::problem::Problem;

/// Neighbour pairs per buffer, on average over all buffers, up to which
/// the lists are written; past it the occupancy is the better way.
const MAX_PAIRS_PER_BUFFER: usize = 64;

/// Every occupying buffer's neighbours, without writing each pair twice:
/// those live when it starts (a copy of the live list then), and those
/// that start while it lives, a run of the buffers in the order of their
/// starts.
struct Neighbours {
    /// The live lists, one after another.
    live_at_start: Vec<u32>,
    /// Buffers by start event.
    by_start: Vec<u32>,
    /// Per buffer, its live list in `live_at_start` and its run in
    /// `by_start`.
    spans: Vec<[usize; 4]>,
}

impl Neighbours {
    /// The lists, or `None` where there are more than
    /// [`MAX_PAIRS_PER_BUFFER`] pairs a buffer (or over `u32::MAX`
    /// buffers).
    fn of(problem: &Problem) -> Option<Self> {
        let buffers = problem.buffers();
        let n = buffers.len();
        if u32::try_from(n).is_err() {
            return None;
        }
        let events = time_ordered(buffers);
        // How many pairs, before writing any: each start meets every
        // buffer live at that moment.
        let (mut live, mut pairs) = (0usize, 0usize);
        for e in &events {
            if e.is_start {
                pairs += live;
                live += 1;
            } else {
                live -= 1;
            }
        }
        if pairs > MAX_PAIRS_PER_BUFFER.saturating_mul(n.max(1)) {
            return None;
        }
        // The live list keeps each buffer's place in it, so an end leaves
        // in O(1).
        let mut live_ids: Vec<u32> = Vec::new();
        let mut place = vec![0usize; n];
        let mut live_at_start = Vec::with_capacity(pairs);
        let mut by_start = Vec::with_capacity(events.len() / 2);
        let mut spans = vec![[0usize; 4]; n];
        for e in &events {
            let i = e.index;
            if e.is_start {
                spans[i][0] = live_at_start.len();
                live_at_start.extend_from_slice(&live_ids);
                spans[i][1] = live_at_start.len();
                spans[i][2] = by_start.len() + 1;
                by_start.push(i as u32);
                place[i] = live_ids.len();
                live_ids.push(i as u32);
            } else {
                // Ends come before starts at one step: what starts at its
                // end is no neighbour.
                spans[i][3] = by_start.len();
                let at = place[i];
                live_ids.swap_remove(at);
                if let Some(&moved) = live_ids.get(at) {
                    place[moved as usize] = at;
                }
            }
        }
        Some(Neighbours { live_at_start, by_start, spans })
    }

    fn of_buffer(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let [a, b, c, d] = self.spans[i];
        self.live_at_start[a..b].iter().chain(&self.by_start[c..d]).map(|&j| j as usize)
    }
}

/// Fixed buffers at their offsets, then the others in `order` (every
/// non-fixed buffer once), each at the lowest offset free of its placed
/// neighbours; buffers that occupy nothing get offset 0. `None` where the
/// neighbour lists would be long (see [`MAX_PAIRS_PER_BUFFER`]).
pub(super) fn first_fit(problem: &Problem, order: &[usize]) -> Option<Vec<u64>> {
    let neighbours = Neighbours::of(problem)?;
    let buffers = problem.buffers();
    let mut offsets = vec![0u64; buffers.len()];
    let mut placed = vec![false; buffers.len()];
    for (i, b) in buffers.iter().enumerate() {
        if let Some(offset) = b.fixed_offset {
            offsets[i] = offset;
            placed[i] = true;
        }
    }
    let mut below: Vec<(u64, u64)> = Vec::new();
    for &i in order {
        let b = &buffers[i];
        debug_assert!(b.fixed_offset.is_none());
        if !b.occupies() {
            continue;
        }
        below.clear();
        for j in neighbours.of_buffer(i) {
            if placed[j] {
                below.push((offsets[j], offsets[j] + buffers[j].size));
            }
        }
        offsets[i] = lowest_gap(&mut below, b.size);
        placed[i] = true;
    }
    Some(offsets)
}

/// The lowest offset where `size` bytes miss every `(offset, top)` of
/// `taken` (sorts it).
fn lowest_gap(taken: &mut [(u64, u64)], size: u64) -> u64 {
    taken.sort_unstable();
    // By offset: once one starts above the gap, so do the rest, and every
    // one met below ends at or under it.
    let mut candidate = 0u64;
    for &(offset, top) in taken.iter() {
        if offset >= candidate + size {
            break;
        }
        candidate = candidate.max(top);
    }
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::algo::tests::{random_problem, Rng};
    use crate::plan::algo::{place_in_order, unfixed, Fit};
    use crate::plan::problem::Lifetime;

    #[test]
    fn places_as_first_fit_over_the_shared_occupancy() {
        // Random instances with zero sizes, empty lifetimes and fixed
        // buffers (some low, to be planned around), in a random order.
        let mut rng = Rng::new(31);
        let mut listed = 0;
        for round in 0..600 {
            let n = 1 + (round % 150);
            let problem = random_problem(&mut rng, n, 1 << (round % 4), round % 3 == 0);
            let mut order = unfixed(&problem);
            for k in (1..order.len()).rev() {
                order.swap(k, rng.below(k as u64 + 1) as usize);
            }
            if let Some(offsets) = first_fit(&problem, &order) {
                assert_eq!(offsets, place_in_order(&problem, &order, Fit::First), "round {round}");
                listed += 1;
            }
        }
        assert!(listed > 500, "only {listed} of 600 instances were sparse enough");
    }

    #[test]
    fn the_lowest_gap_is_the_lowest_free_offset() {
        // Intervals that may overlap (a buffer's neighbours need not be
        // live at one step), from a few to many.
        let mut rng = Rng::new(41);
        for round in 0..2000 {
            let count = 1 + (round % 40) as usize;
            let taken: Vec<(u64, u64)> = (0..count)
                .map(|_| {
                    let offset = rng.below(400);
                    (offset, offset + 1 + rng.below(60))
                })
                .collect();
            let size = 1 + rng.below(80);
            let mut by_definition = 0;
            while taken.iter().any(|&(o, t)| o < by_definition + size && by_definition < t) {
                by_definition += 1;
            }
            assert_eq!(lowest_gap(&mut taken.clone(), size), by_definition, "round {round}: {taken:?}, {size}");
        }
    }

    #[test]
    fn dense_problems_are_left_to_the_occupancy() {
        // 200 buffers all live together: 19,900 pairs, over 64 a buffer.
        let mut p = Problem::new(1).unwrap();
        for _ in 0..200 {
            p.push(8, Lifetime::half_open(0, 10).unwrap(), None).unwrap();
        }
        assert_eq!(first_fit(&p, &unfixed(&p)), None);
        // A chain of 200 buffers, each live with the next: 199 pairs.
        let mut chain = Problem::new(1).unwrap();
        for k in 0..200 {
            chain.push(8, Lifetime::half_open(k, k + 2).unwrap(), None).unwrap();
        }
        let offsets = first_fit(&chain, &unfixed(&chain)).unwrap();
        assert_eq!(offsets[..4], [0, 8, 0, 8]);
    }
}
