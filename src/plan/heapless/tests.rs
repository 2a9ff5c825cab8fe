use super::*;
use crate::plan::problem::{Buffer, Lifetime, Problem};
use crate::plan::{Algorithm, Planner};

/// xorshift64*: the same sequence on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn random_problem(rng: &mut Rng, n: usize, with_fixed: bool) -> Problem {
    let buffers = (0..n).map(|_| {
        let start = rng.below(20) as i64 - 1;
        let len = rng.below(8) as i64;
        let size = [0, 1, 16, 48, 100, 256][rng.below(6) as usize] * (1 + rng.below(3));
        let fixed_offset = (with_fixed && rng.below(5) == 0).then(|| rng.below(8) * 32);
        Buffer { size, lifetime: Lifetime::half_open(start, start + len).unwrap(), fixed_offset }
    });
    Problem::from_buffers(1, buffers.collect::<Vec<_>>()).unwrap()
}

#[test]
fn heap_sort_sorts_by_a_total_order() {
    let mut rng = Rng(7);
    for n in [0, 1, 2, 3, 10, 257] {
        let keys: Vec<u64> = (0..n).map(|_| rng.below(10)).collect();
        let mut items: Vec<u32> = (0..n as u32).collect();
        heap_sort(&mut items, |a, b| (keys[a as usize], a) < (keys[b as usize], b));
        let mut expected: Vec<u32> = (0..n as u32).collect();
        expected.sort_by_key(|&i| (keys[i as usize], i));
        assert_eq!(items, expected);
    }
}

#[test]
fn first_fit_walk_is_size_first_fit_over_occupancy() {
    // The heap planner's size-first-fit searches the free gaps in a tree;
    // the walk gives the same lowest offset from the sorted list.
    let mut rng = Rng(11);
    for round in 0..300 {
        let problem = random_problem(&mut rng, 1 + round % 40, false);
        let n = problem.len();
        let (mut work, mut offsets) = (vec![0u32; n], vec![0u64; n]);
        let fixed = tflm_order(&problem, &mut work);
        assert_eq!(fixed, 0);
        walk(&problem, &mut work, 0, &mut offsets, Walk::FirstFit);
        let limits = crate::plan::SearchLimits::unlimited(0);
        let expected = Algorithm::SizeFirstFit.implementation().place(&problem, &limits).offsets;
        assert_eq!(offsets, expected, "round {round}");
    }
}

#[test]
fn lower_bound_counts_shared_fixed_bytes_once_like_the_heap_planner() {
    let mut rng = Rng(5);
    for round in 0..300 {
        let problem = random_problem(&mut rng, 1 + round % 30, true);
        let n = problem.len();
        let mut a = vec![0u32; n];
        let ours = lower_bound(&problem, &mut a);
        let mut planner = Planner::new();
        planner.set_algorithm(Algorithm::SizeFirstFit);
        for buffer in problem.buffers() {
            planner.add_buffer(buffer.size, buffer.lifetime, buffer.fixed_offset).unwrap();
        }
        assert_eq!(ours, planner.lower_bound(), "round {round}");
        let rects = crate::plan::fixed::fixed_rects(&problem);
        let expected = crate::plan::fixed::count_overlaps(&rects).count;
        assert_eq!(fixed_overlap_count(&problem, &mut a), expected, "round {round}");
    }
}

#[test]
fn linear_stacks_above_the_highest_fixed_buffer() {
    let problem = Problem::from_buffers(
        1,
        [(16, None), (8, Some(100)), (0, Some(500)), (4, None)].map(|(size, fixed_offset)| Buffer {
            size,
            lifetime: Lifetime::half_open(0, 2).unwrap(),
            fixed_offset,
        }),
    )
    .unwrap();
    let mut offsets = vec![0u64; 4];
    linear(&problem, &mut offsets);
    assert_eq!(offsets, vec![108, 100, 500, 124]);
    assert_eq!(peak(&problem, &offsets, false), 128);
    assert_eq!(peak(&problem, &offsets, true), 500);
}
