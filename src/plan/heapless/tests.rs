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

/// A workspace of fresh vectors over `problem`.
fn workspace(problem: &Problem) -> (Vec<u64>, Vec<u32>) {
    (vec![0; problem.len()], vec![0; problem.len()])
}

#[test]
fn insertion_sort_sorts_a_range_by_a_total_order() {
    let mut rng = Rng(7);
    for n in [0, 1, 2, 3, 10, 257] {
        let problem = random_problem(&mut rng, n + 3, false);
        let sizes: Vec<u64> = problem.buffers().iter().map(|b| b.size).collect();
        let (mut offsets, mut work) = workspace(&problem);
        work.iter_mut().enumerate().for_each(|(k, w)| *w = k as u32);
        let mut w = Slices { tensors: &problem, offsets: &mut offsets, work: &mut work };
        insertion_sort(&mut w, 2, 2 + n, |w, i| (w.size(i as usize), i));
        let mut expected: Vec<u32> = (2..2 + n as u32).collect();
        expected.sort_by_key(|&i| (sizes[i as usize], i));
        assert_eq!(work[2..2 + n], expected);
        assert_eq!(work[..2], [0, 1]);
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
        let (mut offsets, mut work) = workspace(&problem);
        let mut w = Slices { tensors: &problem, offsets: &mut offsets, work: &mut work };
        assert_eq!(tflm_order(&mut w), 0);
        assert_eq!(
            walk(&mut w, 0, problem.len(), Walk::FirstFit),
            problem.buffers().iter().filter(|b| b.occupies()).count()
        );
        let _ = n;
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
        let (mut offsets, mut work) = workspace(&problem);
        let mut w = Slices { tensors: &problem, offsets: &mut offsets, work: &mut work };
        let ours = lower_bound(&mut w);
        let _ = n;
        let mut planner = Planner::new();
        planner.set_algorithm(Algorithm::SizeFirstFit);
        for buffer in problem.buffers() {
            planner.add_buffer(buffer.size, buffer.lifetime, buffer.fixed_offset).unwrap();
        }
        assert_eq!(ours, planner.lower_bound(), "round {round}");
        let rects = crate::plan::fixed::fixed_rects(&problem);
        let expected = crate::plan::fixed::count_overlaps(&rects).count;
        assert_eq!(fixed_overlap_count(&mut w), expected, "round {round}");
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
    let (mut offsets, mut work) = workspace(&problem);
    let mut w = Slices { tensors: &problem, offsets: &mut offsets, work: &mut work };
    linear(&mut w);
    assert_eq!(peak(&w), 500);
    assert_eq!(offsets, vec![108, 100, 500, 124]);
}
