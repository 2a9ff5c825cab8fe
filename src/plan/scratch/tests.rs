use super::*;

/// A header and `n` records, as a scratch holds them.
fn scratch(n: usize) -> ([u32; HEADER_WORDS], Vec<Record>) {
    ([0; HEADER_WORDS], vec![[0; WORDS_PER_BUFFER]; n])
}
use crate::plan::{Lifetime, Planner};
use crate::status::Status;

/// xorshift64: the same sequence on every machine.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// (size, first_use, last_use, fixed offset) in TFLite Micro's terms.
type Spec = (u32, i32, i32, Option<u32>);

fn random_specs(rng: &mut Rng, n: usize, fixed: bool) -> Vec<Spec> {
    (0..n)
        .map(|_| {
            let (first, last) = match rng.below(12) {
                0 => (-1, -1),
                1 => (-1, rng.below(10) as i32),
                _ => {
                    let f = rng.below(20) as i32;
                    (f, f + rng.below(6) as i32)
                }
            };
            let size = [0, 1, 16, 48, 100, 256, 1000][rng.below(7) as usize] as u32;
            let offset = (fixed && rng.below(4) == 0).then(|| rng.below(10) as u32 * 16);
            (size, first, last, offset)
        })
        .collect()
}

fn scratch_plan(algorithm: Algorithm, alignment: u32, specs: &[Spec]) -> (Vec<u32>, u32, u32, u64) {
    let (mut header, mut records) = scratch(specs.len());
    let mut p = ScratchPlanner::init(&mut header, &mut records, algorithm, 0, 0).unwrap();
    p.set_alignment(alignment).unwrap();
    for &(size, first, last, fixed) in specs {
        p.add(size, first, last, fixed).unwrap();
    }
    let peak = p.plan().unwrap();
    let offsets = (0..specs.len()).map(|i| p.offset(i).unwrap()).collect();
    (offsets, peak, p.lower_bound().unwrap(), p.fixed_overlap_count())
}

fn heap_plan(algorithm: Algorithm, alignment: u32, specs: &[Spec]) -> (Vec<u32>, u32, u32, u64) {
    let mut p = Planner::new();
    p.set_algorithm(algorithm);
    p.set_alignment(u64::from(alignment)).unwrap();
    p.set_trust_fixed(true);
    for &(size, first, last, fixed) in specs {
        let lifetime = Lifetime::inclusive(i64::from(first), i64::from(last)).unwrap();
        p.add_buffer(u64::from(size), lifetime, fixed.map(u64::from)).unwrap();
    }
    let bound = p.lower_bound() as u32;
    let outcome = p.plan().unwrap().clone();
    let offsets: Vec<u32> = outcome.offsets.iter().map(|&o| o as u32).collect();
    // The scratch planner's size covers every buffer, those that occupy
    // nothing under the heap planner's rules too.
    let sizes = p.problem().buffers().iter().map(|b| b.size as u32);
    let every = offsets.iter().zip(sizes).map(|(&o, s)| o + s).max().unwrap_or(0);
    (offsets, (outcome.peak as u32).max(every), bound, outcome.fixed_overlaps.count)
}

#[test]
fn plans_as_the_heap_planner_does_with_every_algorithm_it_runs() {
    // The same heap-free code on both sides for tflm and linear; for
    // size-first-fit the heap planner's gap tree against the walk.
    let mut rng = Rng(3);
    for round in 0..400 {
        let fixed = round % 2 == 0;
        let specs = random_specs(&mut rng, 1 + round % 50, fixed);
        let alignment = [1, 4, 16][round % 3];
        for algorithm in ALGORITHMS {
            let ours = scratch_plan(algorithm, alignment, &specs);
            let theirs = heap_plan(algorithm, alignment, &specs);
            assert_eq!(ours, theirs, "round {round}, {}: {specs:?}", algorithm.name());
        }
    }
}

#[test]
fn tflite_micro_greedy_planner_figures() {
    // TFLite Micro's greedy_memory_planner_test.cc, "TestGreedyBasics":
    // offsets 0 and 0, 20 B (every figure: c-tests/board/planner_board.c).
    let (offsets, peak, ..) = scratch_plan(Algorithm::Tflm, 1, &[(10, 0, 1, None), (20, 2, 3, None)]);
    assert_eq!((offsets, peak), (vec![0, 0], 20));
    // "TestGreedyMedium": offsets 50, 70, 40, 0, 0 and 90 B.
    let specs = [(10, 0, 1, None), (20, 1, 2, None), (30, 2, 3, None), (40, 3, 4, None), (50, 0, 1, None)];
    let (offsets, peak, bound, _) = scratch_plan(Algorithm::Tflm, 1, &specs);
    assert_eq!(offsets, vec![50, 70, 40, 0, 0]);
    assert_eq!((peak, bound), (90, 80));
}

#[test]
fn a_full_scratch_names_the_bytes_missing_and_changes_nothing() {
    let (mut header, mut records) = scratch(2);
    let mut p = ScratchPlanner::init(&mut header, &mut records, Algorithm::Tflm, 12, 0).unwrap();
    assert_eq!(p.capacity(), 2);
    p.add(8, 0, 1, None).unwrap();
    p.add(8, 1, 2, None).unwrap();
    let e = p.add(8, 2, 3, None).unwrap_err();
    assert_eq!(e.status(), Status::DoesNotFit);
    let mut message = String::new();
    e.describe(&mut message);
    // 12 + 2 * 24 + 12 B lost = 72 B; three buffers need 12 + 72 = 84 B.
    assert_eq!(message, "scratch of 72 B holds 2 buffers; one more needs 84 B (12 B missing)");
    assert_eq!(p.len(), 2);
    assert_eq!(p.plan(), Ok(16));
}

#[test]
fn bad_input_is_refused_with_figures_and_changes_nothing() {
    let (mut header, mut records) = scratch(4);
    let mut p = ScratchPlanner::init(&mut header, &mut records, Algorithm::SizeFirstFit, 0, 0).unwrap();
    let refused = |e: ScratchError| {
        let mut m = String::new();
        e.describe(&mut m);
        (e.status(), m)
    };
    let (status, m) = refused(p.add(4, 3, 2, None).unwrap_err());
    assert_eq!(status, Status::InvalidArgument);
    assert!(m.starts_with("lifetime first_use 3, last_use 2 is not allowed"), "{m}");
    for (first, last) in [(-2, 0), (0, -1), (0, i32::MAX), (-1, -2)] {
        assert_eq!(
            p.add(4, first, last, None).unwrap_err(),
            ScratchError::BadLifetime { first_use: first, last_use: last }
        );
    }
    p.add(u32::MAX - 10, 0, 0, None).unwrap();
    p.add(11, 0, 0, None).unwrap();
    let (status, m) = refused(p.plan().unwrap_err());
    assert_eq!(status, Status::Overflow);
    assert_eq!(m, "buffer 1 of 11 B: the sizes of the buffers up to it plus the highest fixed end pass 2^32 - 1 B");
    assert!(!p.is_planned());
    assert_eq!(p.offset(0).unwrap_err(), ScratchError::Overflow { index: 1, size: 11 });
    assert_eq!(p.lower_bound().unwrap_err(), ScratchError::Overflow { index: 1, size: 11 });
    assert_eq!(refused(p.set_alignment(8).unwrap_err()).0, Status::WrongState);
    p.reset();
    assert_eq!(refused(p.set_alignment(3).unwrap_err()).1, "alignment 3 is not a power of two");
    p.set_alignment(8).unwrap();
    assert_eq!(p.add(8, 0, 0, Some(4)).unwrap_err(), ScratchError::BadOffset { offset: 4, alignment: 8 });
    assert_eq!(
        p.add(u32::MAX - 3, 0, 0, None).unwrap_err(),
        ScratchError::SizeOverflow { size: u32::MAX - 3, alignment: 8 }
    );
    p.add(8, 0, 0, Some(!7)).unwrap();
    assert_eq!(p.plan().unwrap_err(), ScratchError::Overflow { index: 0, size: 8 });
    p.reset();
    assert_eq!(p.offset(0).unwrap_err(), ScratchError::Index { index: 0, count: 0 });
    assert!(p.is_empty());
    // Size rounded up to the alignment.
    p.add(9, 0, 0, None).unwrap();
    assert_eq!(p.buffer(0).unwrap().size, 16);
}

#[test]
fn heap_algorithms_are_refused_and_a_foreign_scratch_is_not_a_planner() {
    let (mut header, mut records) = scratch(10);
    for algorithm in [Algorithm::Auto, Algorithm::Exact, Algorithm::LiveStep] {
        let e = ScratchPlanner::init(&mut header, &mut records, algorithm, 0, 0).unwrap_err();
        let mut m = String::new();
        e.describe(&mut m);
        assert!(m.starts_with(&format!("algorithm {} needs the heap planner", algorithm.name())), "{m}");
    }
    assert_eq!(ScratchPlanner::open(&mut header, &mut records).unwrap_err(), ScratchError::NotAPlanner);
    assert_eq!(ScratchPlanner::init(&mut header, &mut records[..0], Algorithm::Tflm, 0, 0).unwrap().capacity(), 0);
    ScratchPlanner::init(&mut header, &mut records, Algorithm::Linear, 0, 0).unwrap().add(4, 0, 0, None).unwrap();
    let mut p = ScratchPlanner::open(&mut header, &mut records).unwrap();
    assert_eq!((p.len(), p.algorithm(), p.capacity()), (1, Algorithm::Linear, 10));
    assert_eq!(p.plan(), Ok(4));
    // A header whose count passes its capacity is not one init wrote.
    header[2] = 11;
    assert_eq!(ScratchPlanner::open(&mut header, &mut records).unwrap_err(), ScratchError::NotAPlanner);
    // Other records than the header counts, or another tag.
    header[2] = 1;
    assert!(ScratchPlanner::open(&mut header, &mut records).is_ok());
    assert_eq!(ScratchPlanner::open(&mut header, &mut records[..9]).unwrap_err(), ScratchError::NotAPlanner);
    header[0] ^= 1 << 20;
    assert_eq!(ScratchPlanner::recorded_capacity(&header).unwrap_err(), ScratchError::NotAPlanner);
}

#[test]
fn buffers_read_back_as_added() {
    let specs = [(16, -1, -1, None), (16, -1, 3, Some(32)), (0, 2, 2, None)];
    for algorithm in ALGORITHMS {
        let (mut header, mut records) = scratch(3);
        let mut p = ScratchPlanner::init(&mut header, &mut records, algorithm, 0, 0).unwrap();
        for &(size, first, last, fixed) in &specs {
            p.add(size, first, last, fixed).unwrap();
        }
        for (i, &(size, first_use, last_use, fixed_offset)) in specs.iter().enumerate() {
            let b = p.buffer(i).unwrap();
            assert_eq!((b.size, b.first_use, b.last_use, b.fixed_offset), (size, first_use, last_use, fixed_offset));
        }
    }
}

#[test]
fn a_plan_made_elsewhere_is_adopted_when_fixed_buffers_keep_their_offsets() {
    let (mut header, mut records) = scratch(3);
    let mut p = ScratchPlanner::init(&mut header, &mut records, Algorithm::SizeFirstFit, 0, 0).unwrap();
    p.add(16, 0, 1, None).unwrap();
    p.add(16, 1, 2, Some(32)).unwrap();
    p.add(8, 2, 3, None).unwrap();
    assert_eq!(p.adopt(&[0, 32]).unwrap_err(), ScratchError::PlanLength { given: 2, count: 3 });
    assert_eq!(p.adopt(&[0, 16, 0]).unwrap_err(), ScratchError::FixedMoved { index: 1, fixed: 32, given: 16 });
    assert_eq!(p.adopt(&[u32::MAX - 4, 32, 0]).unwrap_err(), ScratchError::Overflow { index: 0, size: 16 });
    assert!(!p.is_planned());
    assert_eq!(p.adopt(&[0, 32, 100]).unwrap(), 108);
    assert_eq!((p.offset(2).unwrap(), p.plan()), (100, Ok(108)));
    // Adding drops the adopted plan: the next query plans afresh.
    p.reset();
    assert!(!p.is_planned());
}
