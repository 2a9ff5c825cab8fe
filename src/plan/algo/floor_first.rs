//! Lowest floor first: the exact search's first dive, without the search.
//!
//! A buffer's *floor* is the lowest offset above every placed buffer it is
//! live with (lifted over the fixed buffers in its way). Repeatedly the
//! unplaced buffer with the lowest floor goes at its floor; ties go to the
//! buffer that constrains the most (the most bytes live in a section it
//! spans, then the longest lifetime, then the largest area: MiniMalloc's
//! TWA order, the search's first preorder). Placements come in
//! non-decreasing offset order, so the plan is a *canonical* one in the
//! search's sense: the kind MiniMalloc's search walks first, and on real
//! traces it often lands at the lower bound outright.
//!
//! No conflict lists: the placed tops live in a segment tree over the
//! compressed time axis (range "raise to", range max), and the heap holds
//! each buffer's floor as last seen. Floors only rise, so a popped entry
//! whose floor is still current is the true minimum; a stale one is pushed
//! back with its new floor. O((n + r) log n) for r re-pushes.

use std::cmp::Reverse;
use std::collections::binary_heap::{BinaryHeap, PeekMut};

use super::lift::lift_over;
use super::{Algorithm, Placement, PlacementAlgorithm, SearchLimits};
use crate::plan::problem::Problem;

/// Lowest floor first, ties by TWA rank.
pub struct FloorFirst;

/// Range "raise to at least" and range max over `n` leaves, no laziness
/// needed: a raise leaves its value as a tag on the nodes covering the
/// range, which a query passing through them takes into account. Both
/// walk bottom up; each node keeps its max and tag side by side, since a
/// query reads both on the same paths.
struct RaiseMaxTree {
    leaves: usize,
    /// Per node: the max of its leaves, and a value every one of them is
    /// at least.
    nodes: Vec<[u64; 2]>,
}

const MAX: usize = 0;
const TAG: usize = 1;

impl RaiseMaxTree {
    fn new(n: usize) -> Self {
        let leaves = n.max(1).next_power_of_two();
        RaiseMaxTree { leaves, nodes: vec![[0; 2]; 2 * leaves] }
    }

    /// Raises leaves `[a, b)` (`a < b`) to at least `value`: a tag on the
    /// nodes that cover the range, and the max on the paths to its two end
    /// leaves (the only other nodes with a leaf in the range).
    fn raise(&mut self, a: usize, b: usize, value: u64) {
        let (mut l, mut r) = (a + self.leaves, b + self.leaves);
        let (mut left_path, mut right_path) = (l >> 1, (r - 1) >> 1);
        while l < r {
            if l & 1 == 1 {
                let node = &mut self.nodes[l];
                node[MAX] = node[MAX].max(value);
                node[TAG] = node[TAG].max(value);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                let node = &mut self.nodes[r];
                node[MAX] = node[MAX].max(value);
                node[TAG] = node[TAG].max(value);
            }
            l >>= 1;
            r >>= 1;
        }
        while left_path > 0 {
            self.nodes[left_path][MAX] = self.nodes[left_path][MAX].max(value);
            self.nodes[right_path][MAX] = self.nodes[right_path][MAX].max(value);
            left_path >>= 1;
            right_path >>= 1;
        }
    }

    /// The largest leaf in `[a, b)` (`a < b`): the nodes that cover the
    /// range, plus the tags on the paths to its two end leaves (every
    /// ancestor of a leaf in the range raised that leaf).
    fn max(&self, a: usize, b: usize) -> u64 {
        let (mut l, mut r) = (a + self.leaves, b + self.leaves);
        let mut best = 0;
        let (mut left_path, mut right_path) = (l >> 1, (r - 1) >> 1);
        // Branch-free (the parities are coin flips to a predictor): both
        // candidates are read, the ones outside the cover count as 0.
        while l < r {
            let (left, right) = (self.nodes[l][MAX], self.nodes[r - 1][MAX]);
            best = best.max(if l & 1 == 1 { left } else { 0 }).max(if r & 1 == 1 { right } else { 0 });
            l = (l + 1) >> 1;
            r >>= 1;
        }
        while left_path > 0 {
            best = best.max(self.nodes[left_path][TAG]).max(self.nodes[right_path][TAG]);
            left_path >>= 1;
            right_path >>= 1;
        }
        best
    }
}

impl PlacementAlgorithm for FloorFirst {
    fn algorithm(&self) -> Algorithm {
        Algorithm::FloorFirst
    }

    fn place(&self, problem: &Problem, _limits: &SearchLimits) -> Placement {
        let offsets = place_within(problem, u64::MAX).expect("no limit on re-queueing");
        Placement::heuristic(offsets, self.algorithm())
    }
}

/// The floor-first plan, or `None` once more than `max_requeues` stale
/// queue entries had to be put back: the work beyond O(n log n), which
/// grows with the pairs of buffers live together (31.6 M on the 28,526
/// buffers of S_1), so `auto` caps it.
pub(super) fn place_within(problem: &Problem, max_requeues: u64) -> Option<Vec<u64>> {
    place_counted(problem, max_requeues, &mut 0)
}

/// [`place_within`], adding the stale entries put back to `requeues` (the
/// work `auto` charges it, see [`super::SearchLimits`]).
pub(super) fn place_counted(problem: &Problem, max_requeues: u64, requeues: &mut u64) -> Option<Vec<u64>> {
    {
        let buffers = problem.buffers();
        let mut offsets: Vec<u64> = buffers.iter().map(|b| b.fixed_offset.unwrap_or(0)).collect();
        let mut movable: Vec<usize> =
            (0..buffers.len()).filter(|&i| buffers[i].occupies() && buffers[i].fixed_offset.is_none()).collect();
        if movable.is_empty() {
            return Some(offsets);
        }

        // Compressed time: section s is [points[s], points[s + 1]).
        let mut points: Vec<i64> =
            movable.iter().flat_map(|&i| [buffers[i].lifetime.start, buffers[i].lifetime.end]).collect();
        points.sort_unstable();
        points.dedup();
        let sections = points.len() - 1;
        let span_of = |i: usize| {
            let section = |t: i64| points.partition_point(|&p| p < t);
            (section(buffers[i].lifetime.start), section(buffers[i].lifetime.end))
        };

        // TWA rank: the most bytes live in a section it spans, then width,
        // then area, larger first; the index last. From here on buffers
        // are numbered by rank.
        let mut live = RaiseMaxTree::new(sections);
        let mut per_section = vec![0u64; sections + 1];
        for &i in &movable {
            let (a, b) = span_of(i);
            per_section[a] = per_section[a].wrapping_add(buffers[i].size);
            per_section[b] = per_section[b].wrapping_sub(buffers[i].size);
        }
        let mut running = 0u64;
        for (s, delta) in per_section.iter().take(sections).enumerate() {
            running = running.wrapping_add(*delta);
            live.raise(s, s + 1, running);
        }
        movable.sort_by_cached_key(|&i| {
            let (a, b) = span_of(i);
            let width = buffers[i].lifetime.len();
            (Reverse((live.max(a, b), width, buffers[i].size as u128 * width as u128)), i)
        });
        let span: Vec<(usize, usize)> = movable.iter().map(|&i| span_of(i)).collect();
        let size: Vec<u64> = movable.iter().map(|&i| buffers[i].size).collect();

        // Fixed buffers live with each movable one, sorted by offset.
        let fixed: Vec<(i64, i64, (u64, u64))> = buffers
            .iter()
            .filter(|b| b.occupies())
            .filter_map(|b| b.fixed_offset.map(|o| (b.lifetime.start, b.lifetime.end, (o, o + b.size))))
            .collect();
        let obstacles: Vec<Vec<(u64, u64)>> = if fixed.is_empty() {
            Vec::new()
        } else {
            movable
                .iter()
                .map(|&i| {
                    let l = buffers[i].lifetime;
                    let mut list: Vec<(u64, u64)> =
                        fixed.iter().filter(|&&(s, e, _)| s < l.end && l.start < e).map(|&(_, _, o)| o).collect();
                    list.sort_unstable();
                    list
                })
                .collect()
        };
        let alignment = problem.alignment();
        // A buffer's floor, with its span and size for the caller.
        let floor_of = |r: usize, tops: &RaiseMaxTree| {
            let (a, b) = span[r];
            let highest = tops.max(a, b);
            let floor = match obstacles.get(r) {
                Some(list) => lift_over(list, highest, size[r], alignment),
                // Tops are aligned (aligned offsets plus aligned sizes).
                None => highest,
            };
            (floor, (a, b), size[r])
        };

        // Queue entries pack (floor, rank) into one integer, smallest first:
        // a u64 when every floor fits beside the rank (almost always: the
        // sum of all sizes bounds the floors), else a u128.
        let rank_bits = usize::BITS - movable.len().leading_zeros();
        let highest_floor = size
            .iter()
            .fold(0u64, |sum, &s| sum.saturating_add(s))
            .saturating_add(fixed.iter().map(|&(_, _, (_, top))| top).max().unwrap_or(0));
        let tops = RaiseMaxTree::new(sections);
        let placed = if rank_bits < 64 && highest_floor < 1u64 << (64 - rank_bits) {
            drain(
                tops,
                movable.len(),
                max_requeues,
                requeues,
                floor_of,
                |f, r| f << rank_bits | r as u64,
                |k| (k >> rank_bits, (k & ((1 << rank_bits) - 1)) as usize),
            )
        } else {
            drain(
                tops,
                movable.len(),
                max_requeues,
                requeues,
                floor_of,
                |f, r| (f as u128) << 64 | r as u128,
                |k| ((k >> 64) as u64, k as u64 as usize),
            )
        };
        for (r, offset) in placed?.into_iter().enumerate() {
            offsets[movable[r]] = offset;
        }
        Some(offsets)
    }
}

/// The placement loop over buffers `0..n` (by rank): the queue keys are
/// `pack(floor, rank)`, ordered as (floor, rank). Returns each buffer's
/// offset, or `None` past `max_requeues` stale entries (counted in
/// `requeues`).
fn drain<K: Ord + Copy>(
    mut tops: RaiseMaxTree,
    n: usize,
    max_requeues: u64,
    requeues: &mut u64,
    floor_of: impl Fn(usize, &RaiseMaxTree) -> (u64, (usize, usize), u64),
    pack: impl Fn(u64, usize) -> K,
    unpack: impl Fn(K) -> (u64, usize),
) -> Option<Vec<u64>> {
    let mut offsets = vec![0u64; n];
    let mut heap: BinaryHeap<Reverse<K>> = (0..n).map(|r| Reverse(pack(floor_of(r, &tops).0, r))).collect();
    let mut stale = 0u64;
    while let Some(mut top) = heap.peek_mut() {
        let (floor, r) = unpack(top.0);
        let (current, (a, b), size) = floor_of(r, &tops);
        if current > floor {
            // Stale: back in with its floor now, in place.
            *top = Reverse(pack(current, r));
            stale += 1;
            *requeues += 1;
            if stale > max_requeues {
                return None;
            }
            continue;
        }
        PeekMut::pop(top);
        offsets[r] = floor;
        tops.raise(a, b, floor.saturating_add(size));
    }
    Some(offsets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::algo::tests::{random_problem, Rng};
    use crate::plan::problem::Lifetime;

    /// The rule as written, in O(n^2) per step: the reference the fast
    /// version must match offset for offset.
    fn plain_floor_first(problem: &Problem) -> Vec<u64> {
        let buffers = problem.buffers();
        let mut offsets: Vec<u64> = buffers.iter().map(|b| b.fixed_offset.unwrap_or(0)).collect();
        let occupying = |i: usize| buffers[i].occupies();
        let movable: Vec<usize> =
            (0..buffers.len()).filter(|&i| occupying(i) && buffers[i].fixed_offset.is_none()).collect();
        // Bytes live at each step a buffer spans, at the fullest one.
        let total = |i: usize| {
            let l = buffers[i].lifetime;
            (l.start..l.end)
                .map(|t| {
                    movable
                        .iter()
                        .filter(|&&j| buffers[j].lifetime.start <= t && t < buffers[j].lifetime.end)
                        .map(|&j| buffers[j].size)
                        .sum::<u64>()
                })
                .max()
                .unwrap_or(0)
        };
        let key = |i: usize| {
            let w = buffers[i].lifetime.len();
            (Reverse((total(i), w, buffers[i].size as u128 * w as u128)), i)
        };
        let mut ranked = movable.clone();
        crate::sort::sort_by_key(&mut ranked, |&i| key(i));
        let mut placed: Vec<usize> =
            (0..buffers.len()).filter(|&i| occupying(i) && buffers[i].fixed_offset.is_some()).collect();
        let mut unplaced = ranked;
        while !unplaced.is_empty() {
            let floor = |i: usize| {
                let mut f = placed
                    .iter()
                    .filter(|&&j| buffers[j].fixed_offset.is_none() && buffers[j].conflicts_with(&buffers[i]))
                    .map(|&j| offsets[j] + buffers[j].size)
                    .max()
                    .unwrap_or(0);
                // Lift over fixed buffers until clear.
                loop {
                    let blocker = placed.iter().find(|&&j| {
                        buffers[j].fixed_offset.is_some()
                            && buffers[j].conflicts_with(&buffers[i])
                            && offsets[j] < f + buffers[i].size
                            && f < offsets[j] + buffers[j].size
                    });
                    match blocker {
                        Some(&j) => f = (offsets[j] + buffers[j].size).next_multiple_of(problem.alignment()),
                        None => return f,
                    }
                }
            };
            let (at, _) = unplaced.iter().enumerate().min_by_key(|&(pos, &i)| (floor(i), pos)).expect("non-empty");
            let i = unplaced.remove(at);
            offsets[i] = floor(i);
            placed.push(i);
        }
        offsets
    }

    #[test]
    fn the_cap_counts_stale_entries_put_back() {
        // Both start at floor 0; placing the first makes the other's entry
        // stale once.
        let mut problem = Problem::new(1).unwrap();
        problem.push(10, Lifetime::half_open(0, 2).unwrap(), None).unwrap();
        problem.push(5, Lifetime::half_open(1, 3).unwrap(), None).unwrap();
        assert_eq!(place_within(&problem, 0), None);
        assert_eq!(place_within(&problem, 1), Some(vec![0, 10]));
    }

    #[test]
    fn floors_too_large_to_pack_beside_the_rank_use_wide_keys() {
        // 3 x 2^61 bytes: floors need 63 bits, ranks 2, so keys are u128.
        let mut problem = Problem::new(1).unwrap();
        for (start, end) in [(0, 4), (1, 3), (2, 5)] {
            problem.push(1 << 61, Lifetime::half_open(start, end).unwrap(), None).unwrap();
        }
        let offsets = FloorFirst.place(&problem, &SearchLimits::unlimited(0)).offsets;
        assert_eq!(offsets, plain_floor_first(&problem));
        // Widest first: [0, 4), then [2, 5), then [1, 3) on top.
        assert_eq!(offsets, vec![0, 1 << 62, 1 << 61]);
    }

    #[test]
    fn matches_the_rule_as_written() {
        let mut rng = Rng::new(77);
        for round in 0..300 {
            let n = 1 + rng.below(30) as usize;
            let alignment = [1, 1, 8, 64][rng.below(4) as usize];
            let problem = random_problem(&mut rng, n, alignment, round % 3 == 0);
            let fast = FloorFirst.place(&problem, &SearchLimits::unlimited(0)).offsets;
            let capped = place_within(&problem, 2);
            assert!(capped.is_none() || capped.as_ref() == Some(&fast), "a cap only ever gives up");
            assert_eq!(fast, plain_floor_first(&problem), "round {round}: {:?}", problem.buffers());
        }
    }

    #[test]
    fn raise_max_tree_matches_a_plain_array() {
        let n = 37;
        let mut tree = RaiseMaxTree::new(n);
        let mut plain = vec![0u64; n];
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        for _ in 0..2000 {
            let a = next(n as u64) as usize;
            let b = a + 1 + next((n - a) as u64) as usize;
            if next(2) == 0 {
                let v = next(1000);
                tree.raise(a, b, v);
                plain[a..b].iter_mut().for_each(|x| *x = (*x).max(v));
            } else {
                assert_eq!(tree.max(a, b), plain[a..b].iter().copied().max().unwrap());
            }
        }
    }
}
