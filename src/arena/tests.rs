//! Tests of the arena core: section layout, temp scoping, head commits,
//! the exact size needed (dry run against real buffers, to the byte), guard
//! mode and recording.

use super::*;
use crate::plan::{Lifetime, Planner};
use crate::status::Status;

const OP: u32 = Category::OpData as u32;
const SCRATCH: u32 = Category::TempScratch as u32;

fn single(start: usize, len: usize, options: ArenaOptions) -> Arena<'static, VecMemory> {
    Arena::new(Buffers::Single(Span::new(start, len).unwrap()), options, VecMemory::new(start, len)).unwrap()
}

fn guarded() -> ArenaOptions {
    ArenaOptions { guard: true, ..ArenaOptions::default() }
}

#[test]
fn sections_grow_towards_each_other_from_an_aligned_start() {
    let mut a = single(1000, 1000, ArenaOptions::default());
    let s = a.sizes();
    assert_eq!(s.alignment_lost, 8, "1000 aligned up to 16 is 1008");
    assert_eq!(a.head_start(), 1008);
    let p1 = a.alloc_persistent(10, 0, OP).unwrap();
    assert_eq!(p1, 1984, "10 B below the end 2000, aligned down to 16");
    let p2 = a.alloc_persistent(3, 4, OP).unwrap();
    assert_eq!(p2, 1980);
    let t1 = a.alloc_temp(5, 0, SCRATCH).unwrap();
    assert_eq!(t1, 1008);
    let t2 = a.alloc_temp(8, 64, SCRATCH).unwrap();
    assert_eq!(t2, 1024);
    let s = a.sizes();
    assert_eq!((s.tail, s.temp, s.temp_peak, s.temp_count, s.persistent_count), (20, 24, 24, 2, 2));
    assert_eq!(s.used, 44);
    // Less than loss + temp + tail (52): with the end at 1050 the tail
    // lands at 1040 and 1036, just above the temp top 1032.
    assert_eq!(s.required, 50);
}

#[test]
fn temp_is_released_one_by_one_and_reset_together() {
    let mut a = single(0, 4096, ArenaOptions::default());
    let t1 = a.alloc_temp(100, 0, SCRATCH).unwrap();
    let t2 = a.alloc_temp(100, 0, SCRATCH).unwrap();
    let t3 = a.alloc_temp(100, 0, SCRATCH).unwrap();
    let e = a.reset_temp().unwrap_err();
    assert_eq!(e.status(), Status::WrongState);
    assert_eq!(e.message(), "cannot reset temp: 3 temp allocations are still held (release them first)");
    // Releasing the middle one reclaims nothing yet; the top one reclaims both.
    a.release_temp(t2).unwrap();
    assert_eq!(a.sizes().temp, 324);
    assert!(a.release_temp(t2).unwrap_err().message().contains("was already released"));
    a.release_temp(t3).unwrap();
    assert_eq!(a.sizes().temp, 100);
    let e = a.reset_temp().unwrap_err();
    assert_eq!(e.message(), "cannot reset temp: 1 temp allocation is still held (release it first)");
    assert_eq!(a.release_temp(12345).unwrap_err().status(), Status::InvalidArgument);
    a.release_temp(t1).unwrap();
    a.reset_temp().unwrap();
    let s = a.sizes();
    assert_eq!((s.temp, s.temp_peak, s.temp_count), (0, 324, 0));
}

fn planner_with(sizes_and_lifetimes: &[(u64, i64, i64)]) -> Planner {
    let mut p = Planner::new();
    for &(size, first, last) in sizes_and_lifetimes {
        p.add_buffer(size, Lifetime::inclusive(first, last).unwrap(), None).unwrap();
    }
    p.plan().unwrap();
    p
}

#[test]
fn the_head_is_the_largest_committed_plan() {
    let mut a = single(0, 10_000, ArenaOptions { recording: true, ..ArenaOptions::default() });
    let small = planner_with(&[(100, 0, 1), (200, 1, 2)]);
    let large = planner_with(&[(1000, 0, 0), (1000, 1, 1), (500, 0, 1)]);
    let head = a.commit(&large, 2500, Category::PlannedTensorData.id()).unwrap();
    assert_eq!(head, 0);
    assert_eq!(a.sizes().head, large.planned().unwrap().peak);
    a.commit(&small, 300, Category::PlannedTensorData.id()).unwrap();
    let s = a.sizes();
    assert_eq!((s.head, s.plan_count), (1500, 2));
    let st = a.category_stats(Category::PlannedTensorData.id()).unwrap();
    // Used is each plan's span (1500 and 300), requested its buffers' sum.
    assert_eq!(st, CategoryStats { requested: 2500 + 300, used: 1500 + 300, count: 5 });

    // Growing the head while temp is held is refused; not growing it is fine.
    let t = a.alloc_temp(10, 0, SCRATCH).unwrap();
    assert_eq!(t, 1504);
    a.commit(&small, 300, Category::PlannedTensorData.id()).unwrap();
    let e = a.reserve_head(2000, Category::Other.id()).unwrap_err();
    assert_eq!(e.status(), Status::WrongState);
    assert_eq!(
        e.message(),
        "cannot grow the head from 1500 B to 2000 B while 1 temp allocation is held; release it first"
    );
    assert_eq!(a.reset_head().unwrap_err().status(), Status::WrongState);
    a.release_temp(t).unwrap();
    a.reserve_head(2000, Category::Other.id()).unwrap();
    assert_eq!(a.alloc_temp(10, 0, SCRATCH).unwrap(), 2000);
}

#[test]
fn a_plan_needing_more_alignment_than_the_arena_is_refused() {
    let mut a = single(0, 10_000, ArenaOptions::default());
    let mut p = Planner::new();
    p.set_alignment(64).unwrap();
    p.add_buffer(10, Lifetime::inclusive(0, 0).unwrap(), None).unwrap();
    assert_eq!(a.commit(&p, 10, 0).unwrap_err().status(), Status::WrongState, "not planned yet");
    p.plan().unwrap();
    let e = a.commit(&p, 10, 0).unwrap_err();
    assert!(e.message().contains("aligned to 64 B but the arena's start only to 16 B"), "{}", e.message());
    let mut b = single(0, 10_000, ArenaOptions { alignment: 64, ..ArenaOptions::default() });
    b.commit(&p, 10, 0).unwrap();
}

#[test]
fn a_committed_plan_records_what_was_asked_for_and_every_buffer() {
    let mut a = single(0, 10_000, ArenaOptions { recording: true, ..ArenaOptions::default() });
    let mut p = Planner::new();
    p.set_alignment(16).unwrap();
    for &(size, first, last) in &[(1000, 0, 1), (0, 1, 1), (3, 1, 2), (7, -1, -1)] {
        p.add_buffer(size, Lifetime::inclusive(first, last).unwrap(), None).unwrap();
    }
    p.plan().unwrap();
    a.commit(&p, 1010, Category::PlannedTensorData.id()).unwrap();
    let st = a.category_stats(Category::PlannedTensorData.id()).unwrap();
    // The zero-size and the never-used buffer are buffers of the plan too;
    // used is the plan's span, rounded to 16.
    assert_eq!(st, CategoryStats { requested: 1010, used: 1008 + 16, count: 4 });
}

#[test]
fn reserving_a_head_of_zero_bytes_tells_where_it_starts_and_changes_nothing() {
    let mut a = single(4, 1000, ArenaOptions { recording: true, ..ArenaOptions::default() });
    let t = a.alloc_temp(10, 0, SCRATCH).unwrap();
    let before = a.sizes();
    assert_eq!(a.reserve_head(0, Category::Other.id()).unwrap(), 16, "temp held: still answered");
    assert_eq!(a.sizes(), before);
    assert_eq!(a.category_stats(Category::Other.id()).unwrap(), CategoryStats::default());
    assert_eq!(a.reserve_head(0, 999).unwrap_err().status(), Status::InvalidArgument);
    a.release_temp(t).unwrap();
    assert_eq!(a.reserve_head(100, Category::Other.id()).unwrap(), 16);
    assert_eq!(a.reserve_head(0, Category::Other.id()).unwrap(), 16);
    assert_eq!((a.sizes().head, a.sizes().plan_count), (100, 1));
}

#[test]
fn a_call_that_does_not_fit_changes_nothing_and_says_what_is_missing() {
    let mut a = single(0, 256, ArenaOptions { recording: true, ..ArenaOptions::default() });
    assert_eq!(a.alloc_persistent(100, 0, OP).unwrap(), 144);
    assert_eq!(a.alloc_temp(50, 0, SCRATCH).unwrap(), 0);
    let before = a.sizes();
    let e = a.alloc_temp(100, 0, SCRATCH).unwrap_err();
    assert_eq!(e.status(), Status::DoesNotFit);
    // At 64 (aligned up from 50) it would end at 164, past the tail at 144;
    // the tail's 16-alignment makes the arena need 276 B, 20 B more.
    assert_eq!(
        e.message(),
        "arena too small for a temp allocation of 100 B: requested 100 B (114 B with alignment 16 padding), \
         available 94 B, missing 20 B (an arena of 276 B would hold every call so far and this one)"
    );
    let e = a.alloc_persistent(100, 0, OP).unwrap_err();
    assert_eq!(
        e.message(),
        "arena too small for a persistent allocation of 100 B: requested 100 B (112 B with alignment 16 padding), \
         available 94 B, missing 20 B (an arena of 276 B would hold every call so far and this one)"
    );
    assert_eq!(a.reserve_head(200, 0).unwrap_err().status(), Status::WrongState);
    assert_eq!(a.sizes(), before);
    assert_eq!(a.category_stats(SCRATCH).unwrap().count, 1);
    assert_eq!(a.category_stats(OP).unwrap().count, 1);
}

#[test]
fn bad_arguments_are_rejected() {
    let mut a = single(0, 256, ArenaOptions::default());
    assert_eq!(a.alloc_temp(0, 0, SCRATCH).unwrap_err().message(), "size is 0");
    assert_eq!(a.alloc_persistent(usize::MAX, 0, OP).unwrap_err().status(), Status::Overflow);
    assert_eq!(a.alloc_temp(8, 3, SCRATCH).unwrap_err().message(), "alignment 3 is not a power of two");
    assert_eq!(a.alloc_temp(8, 0, 999).unwrap_err().status(), Status::InvalidArgument);
    let options = ArenaOptions { alignment: 12, ..ArenaOptions::default() };
    assert!(Arena::dry_run(options).is_err());
    assert_eq!(Span::new(usize::MAX - 3, 10).unwrap_err().status(), Status::Overflow);
    let e = Arena::new(Buffers::Single(Span::new(1, 4).unwrap()), ArenaOptions::default(), NoMemory).unwrap_err();
    assert_eq!(e.status(), Status::DoesNotFit);
    assert!(e.message().contains("missing 11 B"), "{}", e.message());
    let overlapping =
        Buffers::Split { persistent: Span::new(0, 100).unwrap(), nonpersistent: Span::new(50, 100).unwrap() };
    assert!(Arena::new(overlapping, ArenaOptions::default(), NoMemory).unwrap_err().message().contains("overlap"));
}

// --- exact size --------------------------------------------------------------

#[derive(Copy, Clone, Debug)]
enum Op {
    Persistent(usize, usize),
    Temp(usize, usize),
    Release(usize),
    ReleaseAllAndReset,
    Head(usize),
}

struct Lcg(u64);
impl Lcg {
    fn below(&mut self, n: u64) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n) as usize
    }
}

fn random_ops(rng: &mut Lcg) -> Vec<Op> {
    let n = 1 + rng.below(25);
    (0..n)
        .map(|_| {
            let align = if rng.below(3) == 0 { 0 } else { 1 << rng.below(7) };
            let limit = if rng.below(4) == 0 { 2000 } else { 100 };
            let size = 1 + rng.below(limit);
            match rng.below(10) {
                0..=2 => Op::Persistent(size, align),
                3..=5 => Op::Temp(size, align),
                6 | 7 => Op::Release(rng.below(8)),
                8 => Op::ReleaseAllAndReset,
                _ => Op::Head(size * 3),
            }
        })
        .collect()
}

fn run<M: Memory>(arena: &mut Arena<M>, ops: &[Op]) -> crate::Result<()> {
    let mut held: Vec<usize> = Vec::new();
    for op in ops {
        match *op {
            Op::Persistent(size, align) => {
                arena.alloc_persistent(size, align, OP)?;
            }
            Op::Temp(size, align) => held.push(arena.alloc_temp(size, align, SCRATCH)?),
            Op::Release(i) if !held.is_empty() => {
                let addr = held.remove(i % held.len());
                arena.release_temp(addr)?;
            }
            Op::Release(_) => {}
            Op::ReleaseAllAndReset => {
                for addr in held.drain(..).rev() {
                    arena.release_temp(addr)?;
                }
                arena.reset_temp()?;
            }
            Op::Head(size) if arena.temps_held() == 0 => {
                arena.reserve_head(size, 0)?;
            }
            Op::Head(_) => {}
        }
    }
    Ok(())
}

fn assert_missing_one_byte(result: crate::Result<()>, what: &str) {
    let e = result.expect_err(what);
    assert_eq!(e.status(), Status::DoesNotFit, "{what}: {e}");
    assert!(e.message().contains("missing 1 B"), "{what}: {}", e.message());
}

/// The dry run's size is exact: an arena of that size (at a start aligned
/// to the largest alignment used) runs every call, one byte less fails on
/// some call with "missing 1 B". Same for both sides of a split arena.
#[test]
fn the_dry_run_size_is_exact_to_the_byte() {
    let mut rng = Lcg(42);
    let base = 1 << 20;
    for round in 0..600 {
        let ops = random_ops(&mut rng);
        let guard = round % 3 == 0;
        let options = ArenaOptions { guard, ..ArenaOptions::default() };
        let mut dry = Arena::dry_run(options).unwrap();
        run(&mut dry, &ops).unwrap();
        let s = dry.sizes();
        let what = format!("round {round}, guard {guard}, ops {ops:?}, sizes {s:?}");

        let fits = |len: usize| {
            let mut a = single(base, len, options);
            run(&mut a, &ops).and_then(|_| a.check())
        };
        fits(s.required as usize).unwrap_or_else(|e| panic!("{what}: {e}"));
        if s.required > 0 {
            assert_missing_one_byte(fits(s.required as usize - 1), &what);
        }

        let split = |p_len: usize, np_len: usize| {
            let buffers = Buffers::Split {
                persistent: Span::new(base, p_len).unwrap(),
                nonpersistent: Span::new(base << 2, np_len).unwrap(),
            };
            let memory = VecMemory::new(base, (base << 2) + np_len - base);
            let mut a = Arena::new(buffers, options, memory)?;
            run(&mut a, &ops).and_then(|_| a.check())
        };
        let (p, np) = (s.required_persistent as usize, s.required_nonpersistent as usize);
        split(p, np).unwrap_or_else(|e| panic!("split {what}: {e}"));
        if p > 0 {
            assert_missing_one_byte(split(p - 1, np), &format!("persistent {what}"));
        }
        if np > 0 {
            assert_missing_one_byte(split(p, np - 1), &format!("non-persistent {what}"));
        }
    }
}

/// A real arena's own `required` holds for a buffer at the same start, even
/// an unaligned one.
#[test]
fn required_is_exact_for_an_unaligned_start() {
    let mut rng = Lcg(5);
    for round in 0..300 {
        let ops = random_ops(&mut rng);
        let start = 4096 + 1 + rng.below(63);
        let options = ArenaOptions { guard: round % 2 == 0, ..ArenaOptions::default() };
        let mut big = single(start, 1 << 16, options);
        run(&mut big, &ops).unwrap();
        let need = big.sizes().required as usize;
        let mut exact = single(start, need, options);
        run(&mut exact, &ops).unwrap_or_else(|e| panic!("round {round} {ops:?}: {e}"));
        assert_eq!(exact.sizes().required as usize, need);
        // One byte short fails: at creation when even the start's alignment
        // does not fit, otherwise on some call.
        let short =
            Arena::new(Buffers::Single(Span::new(start, need - 1).unwrap()), options, VecMemory::new(start, need - 1));
        let result = short.and_then(|mut a| run(&mut a, &ops));
        assert_missing_one_byte(result, &format!("round {round} {ops:?}"));
    }
}

#[test]
fn required_includes_the_temp_peak_that_used_bytes_leave_out() {
    let mut a = Arena::dry_run(ArenaOptions::default()).unwrap();
    a.alloc_persistent(64, 0, OP).unwrap();
    let t = a.alloc_temp(1000, 0, SCRATCH).unwrap();
    a.release_temp(t).unwrap();
    a.reset_temp().unwrap();
    let s = a.sizes();
    assert_eq!(s.used, 64, "TFLite Micro's figure: head + temp now + tail");
    // The temp top (1000) rounds up to the tail's 16-byte alignment.
    assert_eq!(s.required, 1072);
    assert_eq!(s.temp_peak, 1000);
    assert!(a.is_dry_run());
}

// --- guard mode ----------------------------------------------------------------

#[test]
fn guard_names_the_overrun_allocation_and_its_category() {
    let mut a = single(0, 4096, ArenaOptions { guard: true, recording: true, alignment: 16 });
    let op_data = a.register_category("conv op data").unwrap();
    let p1 = a.alloc_persistent(40, 0, OP).unwrap();
    let p2 = a.alloc_persistent(24, 0, op_data).unwrap();
    a.check().unwrap();
    // One byte past the end of the second persistent allocation.
    a.memory_mut().bytes[p2 + 24] = 0;
    let e = a.check().unwrap_err();
    assert_eq!(e.status(), Status::Corrupted);
    assert!(
        e.message().contains("persistent allocation #2 (category 'conv op data', 24 B at offset")
            && e.message().contains("was overrun: 1 of the 16 guard bytes after its end changed"),
        "{}",
        e.message()
    );
    a.memory_mut().bytes[p2 + 24] = guard_byte(0);
    a.check().unwrap();
    // Underrun of the first.
    a.memory_mut().bytes[p1 - 1] ^= 0xFF;
    let e = a.check().unwrap_err();
    assert!(e.message().contains("persistent allocation #1 (category 'Operator runtime data'"), "{}", e.message());
    assert!(e.message().contains("underrun"), "{}", e.message());
}

fn guard_byte(i: usize) -> u8 {
    super::guard::CANARY[i]
}

#[test]
fn guard_catches_writes_after_release_and_runs_at_every_reset() {
    let mut a = single(0, 4096, guarded());
    let t1 = a.alloc_temp(32, 0, SCRATCH).unwrap();
    let t2 = a.alloc_temp(32, 0, SCRATCH).unwrap();
    a.release_temp(t1).unwrap();
    assert!(a.memory().bytes[t1..t1 + 32].iter().all(|&b| b == POISON));
    a.memory_mut().bytes[t1 + 5] = 7; // a write through a stale pointer
    let e = a.check().unwrap_err();
    assert_eq!(e.status(), Status::Corrupted);
    assert!(
        e.message().contains("temp allocation #1 (category 'Temp scratch data', 32 B at offset 16 of the arena)"),
        "{}",
        e.message()
    );
    assert!(e.message().contains("was written after it was released: 1 of its bytes changed"), "{}", e.message());
    // Releasing t2 reclaims both; the stale write is not forgotten.
    a.release_temp(t2).unwrap();
    let e = a.reset_temp().unwrap_err();
    assert!(e.message().contains("(found when its memory was reclaimed)"), "{}", e.message());
}

#[test]
fn every_reset_checks_and_a_failing_reset_changes_nothing() {
    let mut a = single(0, 4096, guarded());
    let head = a.reserve_head(100, Category::PlannedTensorData.id()).unwrap();
    let held = a.alloc_temp(16, 0, SCRATCH).unwrap();
    a.memory_mut().bytes[head + 100] = 0;
    let before = a.sizes();
    let e = a.reset_temp().unwrap_err();
    assert_eq!(e.status(), Status::Corrupted);
    assert!(
        e.message().contains("the head (100 B, last committed as category 'Planned tensor data') was overrun"),
        "{}",
        e.message()
    );
    assert_eq!(a.reset_head().unwrap_err().status(), Status::Corrupted);
    assert_eq!(a.sizes(), before);
    // Two damaged guards: the first is named, the rest counted.
    a.memory_mut().bytes[held - 1] = 0;
    assert!(a.check().unwrap_err().message().ends_with("(and 1 more damaged guard)"));
}

#[test]
fn guard_catches_an_overrun_of_a_temp_released_afterwards() {
    let mut a = single(0, 4096, guarded());
    let t = a.alloc_temp(64, 0, SCRATCH).unwrap();
    a.memory_mut().bytes[t + 64] = 0; // overrun, then released at once
    a.release_temp(t).unwrap();
    let e = a.reset_temp().unwrap_err();
    assert_eq!(e.status(), Status::Corrupted);
    assert!(
        e.message()
            .contains("temp allocation #1 (category 'Temp scratch data', 64 B at offset 16 of the arena) was overrun"),
        "{}",
        e.message()
    );
    assert!(e.message().contains("(found when it was released)"), "{}", e.message());
}

#[test]
fn guard_catches_a_write_after_the_top_temp_is_released_and_reclaimed() {
    let mut a = single(0, 4096, guarded());
    a.alloc_persistent(100, 0, OP).unwrap();
    let t = a.alloc_temp(64, 0, SCRATCH).unwrap();
    a.release_temp(t).unwrap(); // on top: reclaimed at once
    a.check().unwrap();
    a.memory_mut().bytes[t + 3] = 1; // a write through the stale pointer
    let e = a.check().unwrap_err();
    assert_eq!(
        e.message(),
        "guard check failed: released temp allocation #1 (category 'Temp scratch data', 64 B at offset 16 of the arena) \
         was written after it was released: 1 of the bytes of released temp memory at offsets 0 to 96 changed, \
         the first at offset 19"
    );
    // Handing the bytes out again ends the watch over them.
    a.memory_mut().bytes[t + 3] = POISON;
    let again = a.alloc_temp(64, 0, SCRATCH).unwrap();
    assert_eq!(again, t);
    a.memory_mut().bytes[again + 3] = 1;
    a.check().unwrap();
    // Growing the head over them ends the watch too.
    a.release_temp(again).unwrap();
    a.reserve_head(200, 0).unwrap();
    a.memory_mut().bytes[10] = 5;
    a.check().unwrap();
}

#[test]
fn a_stale_write_into_reclaimed_memory_names_the_allocation_it_hit() {
    let mut a = single(0, 4096, guarded());
    let t1 = a.alloc_temp(32, 0, SCRATCH).unwrap();
    let t2 = a.alloc_temp(40, 64, OP).unwrap();
    let t3 = a.alloc_temp(8, 0, SCRATCH).unwrap();
    for t in [t3, t2, t1] {
        a.release_temp(t).unwrap();
    }
    a.check().unwrap();
    // Into t2's data: named with its category, size and offset.
    a.memory_mut().bytes[t2 + 39] = 0;
    let e = a.check().unwrap_err();
    assert_eq!(e.status(), Status::Corrupted);
    assert!(
        e.message().contains(&format!(
            "released temp allocation #2 (category 'Operator runtime data', 40 B at offset {t2} of the arena) was written after it was released: \
             1 of the bytes of released temp memory at offsets 0 to {} changed, the first at offset {}",
            t3 + 8 + 16,
            t2 + 39
        )),
        "{}",
        e.message()
    );
    // Into the padding before t2 (aligned to 64): still t2's, said so.
    a.memory_mut().bytes[t2 + 39] = POISON;
    a.memory_mut().bytes[t2 - 17] = 0;
    let e = a.check().unwrap_err();
    assert!(
        e.message().contains(&format!(
            "released temp allocation #2 (category 'Operator runtime data', 40 B at offset {t2} of the arena) was written after it was released (its guard bytes or padding)"
        )),
        "{}",
        e.message()
    );
    a.memory_mut().bytes[t2 - 17] = POISON;
    // t1's memory handed out again (partly t2's padding): t3 is still named.
    let again = a.alloc_temp(40, 0, SCRATCH).unwrap();
    assert_eq!(again, t1);
    a.memory_mut().bytes[t3] = 0;
    let e = a.check().unwrap_err();
    assert!(
        e.message().contains("released temp allocation #3 (category 'Temp scratch data', 8 B at offset"),
        "{}",
        e.message()
    );
    // A byte of t2's that no whole watched allocation holds any more.
    a.memory_mut().bytes[t3] = POISON;
    a.release_temp(again).unwrap();
    let big = a.alloc_temp(100, 0, SCRATCH).unwrap();
    a.memory_mut().bytes[big + 100 + 16 + 1] = 0;
    let e = a.check().unwrap_err();
    assert!(
        e.message().contains("released temp memory of the arena was written after it was released: 1 of the bytes"),
        "{}",
        e.message()
    );
}

#[test]
fn alignments_up_to_two_to_the_62_are_accepted_and_larger_ones_named() {
    check_alignment(DRY_RUN_BASE).unwrap();
    let e = check_alignment(DRY_RUN_BASE << 1).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert_eq!(
        e.message(),
        format!(
            "alignment {} is larger than the largest supported, 2^{} = {DRY_RUN_BASE} B",
            DRY_RUN_BASE << 1,
            usize::BITS - 2
        )
    );
}

// --- recording -------------------------------------------------------------------

#[test]
fn recording_counts_per_category_only_while_on() {
    let mut a = single(0, 4096, ArenaOptions::default());
    a.alloc_persistent(10, 0, OP).unwrap();
    assert_eq!(a.category_stats(OP).unwrap().count, 0);
    a.set_recording(true).unwrap();
    a.alloc_persistent(10, 0, OP).unwrap();
    a.alloc_persistent(20, 64, OP).unwrap();
    let st = a.category_stats(OP).unwrap();
    assert_eq!((st.requested, st.count), (30, 2));
    // 4080 -> 4064 (16 B), then 20 B aligned down to 64: 4064 -> 4032.
    assert_eq!(st.used, 16 + 32, "padding included");
}

#[test]
fn text_report_reads_like_tflite_micro() {
    let mut a = single(8, 4096, ArenaOptions { recording: true, ..ArenaOptions::default() });
    a.alloc_persistent(10, 0, Category::EvalTensorData.id()).unwrap();
    a.alloc_persistent(10, 0, Category::EvalTensorData.id()).unwrap();
    let t = a.alloc_temp(100, 0, SCRATCH).unwrap();
    a.release_temp(t).unwrap();
    let text = report(&a, ReportFormat::Text);
    // The end (4104) is not 16-aligned: the first 10 B cost 24 B. An arena of
    // 146 B at address 8 would do: the tail at 144 and 128, temp up to 116.
    let expected = "\
[nnmem arena] Arena mode single, capacity 4096 bytes
[nnmem arena] Arena allocation total 40 bytes
[nnmem arena] Arena allocation head 0 bytes
[nnmem arena] Arena allocation tail 40 bytes
[nnmem arena] Arena allocation temp 0 bytes (peak 100 bytes, 0 held)
[nnmem arena] Arena size needed 146 bytes (temp peak and alignment loss of 8 bytes included)
[nnmem arena] 'TfLiteEvalTensor data' used 40 bytes with alignment overhead (requested 20 bytes for 2 allocations)
[nnmem arena] 'Temp scratch data' used 100 bytes with alignment overhead (requested 100 bytes for 1 allocation)
";
    assert_eq!(text, expected);
    a.set_recording(false).unwrap();
    let off = single(0, 64, ArenaOptions::default());
    assert!(report(&off, ReportFormat::Text).ends_with("[nnmem arena] Recording is off: no per-category figures\n"));
}

#[test]
fn json_report_is_valid_json_with_every_field() {
    let mut a = single(0, 4096, ArenaOptions { recording: true, ..ArenaOptions::default() });
    let id = a.register_category("my \"quoted\" \\ data").unwrap();
    a.alloc_persistent(10, 0, id).unwrap();
    let json: serde_json::Value = serde_json::from_str(&report(&a, ReportFormat::Json)).unwrap();
    assert_eq!(json["mode"], "single");
    assert_eq!(json["tail_bytes"], 16);
    assert_eq!(json["required_bytes"], a.sizes().required);
    let cats = json["categories"].as_array().unwrap();
    assert_eq!(cats.len(), Category::ALL.len() + 1);
    let mine = &cats[id as usize];
    assert_eq!(mine["name"], "my \"quoted\" \\ data");
    assert_eq!(
        (mine["requested_bytes"].as_u64(), mine["used_bytes"].as_u64(), mine["count"].as_u64()),
        (Some(10), Some(16), Some(1))
    );
}

/// A temp allocation placed in the padding of an earlier, reclaimed one:
/// both are watched once it is released too, and a stale write into its
/// bytes names it, the bytes' last owner, not the earlier one.
#[test]
fn a_stale_write_names_the_last_allocation_that_held_the_byte() {
    let mut a = single(0, 4096, guarded());
    // Aligned to 256: its canary and padding take the 256 B below it.
    let wide = a.alloc_temp(64, 256, OP).unwrap();
    assert_eq!(wide, 256);
    a.release_temp(wide).unwrap();
    // Placed in that padding, below `wide`'s data: `wide` stays watched.
    let small = a.alloc_temp(16, 0, SCRATCH).unwrap();
    assert!(small + 16 + CANARY_BYTES <= wide);
    a.release_temp(small).unwrap();
    a.check().unwrap();
    a.memory_mut().bytes[small + 3] = 0;
    let e = a.check().unwrap_err();
    assert!(
        e.message().contains(&format!(
            "released temp allocation #2 (category 'Temp scratch data', 16 B at offset {small} of the arena) was written after it was released: "
        )),
        "{}",
        e.message()
    );
}

#[test]
fn temp_numbers_stay_unique_across_resets_so_a_stale_write_names_one_allocation() {
    let mut a = single(0, 4096, guarded());
    let t1 = a.alloc_temp(256, 0, SCRATCH).unwrap();
    let t2 = a.alloc_temp(40, 0, OP).unwrap();
    a.release_temp(t2).unwrap();
    a.release_temp(t1).unwrap();
    a.reset_temp().unwrap();
    // Two small temps in the next scope, inside t1's old bytes: t2's
    // released memory stays watched, and the new ones are #3 and #4, not a
    // second #1 and #2.
    let t3 = a.alloc_temp(8, 0, SCRATCH).unwrap();
    let t4 = a.alloc_temp(8, 0, SCRATCH).unwrap();
    assert!(t4 + 8 < t2);
    a.release_temp(t3).unwrap();
    assert!(a.release_temp(t3).unwrap_err().message().contains("temp allocation #3 at"));
    a.memory_mut().bytes[t2] = 0;
    let e = a.check().unwrap_err();
    assert!(
        e.message().contains("released temp allocation #2 (category 'Operator runtime data', 40 B"),
        "{}",
        e.message()
    );
    a.memory_mut().bytes[t2] = POISON;
    a.release_temp(t4).unwrap();
}

/// Record slots for an arena over caller memory: `temps` temp records (and
/// as many watched ones), `tails` persistent ones.
fn slot_arrays(temps: usize, tails: usize) -> (Vec<TempRecord>, Vec<TempRecord>, Vec<TailRecord>) {
    (vec![TempRecord::default(); temps], vec![TempRecord::default(); temps], vec![TailRecord::default(); tails])
}

/// An arena with its records in slots behaves as one with its records on
/// the heap while the slots last: same addresses, same sizes, same errors
/// (guard damage included), on random call sequences.
#[test]
fn records_in_slots_give_what_records_on_the_heap_give() {
    let mut rng = Lcg(11);
    let (start, len) = (1 << 16, 6000);
    for round in 0..400 {
        let ops = random_ops(&mut rng);
        let options = ArenaOptions { guard: round % 2 == 0, recording: round % 3 == 0, ..ArenaOptions::default() };
        let mut heap = single(start, len, options);
        let heap_result = run(&mut heap, &ops);
        let (mut temps, mut reclaimed, mut tails) = slot_arrays(ops.len(), ops.len());
        let slots = Slots { temps: &mut temps, reclaimed: &mut reclaimed, tails: &mut tails };
        let buffers = Buffers::Single(Span::new(start, len).unwrap());
        let mut slotted = Arena::in_slots(buffers, options, VecMemory::new(start, len), slots).unwrap();
        let slotted_result = run(&mut slotted, &ops);
        let what = format!("round {round} {ops:?}");
        assert_eq!(
            slotted_result.map_err(|e| e.message().to_string()),
            heap_result.map_err(|e| e.message().to_string()),
            "{what}"
        );
        assert_eq!(slotted.sizes(), heap.sizes(), "{what}");
        assert_eq!(slotted.memory().bytes, heap.memory().bytes, "{what}: the same guard bytes and poison");
        assert_eq!(
            slotted.check().map_err(|e| e.message().to_string()),
            heap.check().map_err(|e| e.message().to_string())
        );
    }
}

/// Full slots refuse the allocation with a message naming them, and change
/// nothing: the arena goes on as before.
#[test]
fn full_slots_refuse_an_allocation_and_change_nothing() {
    let (mut temps, mut reclaimed, mut tails) = slot_arrays(2, 1);
    let slots = Slots { temps: &mut temps, reclaimed: &mut reclaimed, tails: &mut tails };
    let options = ArenaOptions { guard: true, recording: true, ..ArenaOptions::default() };
    let mut a =
        Arena::in_slots(Buffers::Single(Span::new(0, 4096).unwrap()), options, VecMemory::new(0, 4096), slots).unwrap();
    a.alloc_persistent(8, 0, OP).unwrap();
    let before = (a.sizes(), a.memory().bytes.clone(), a.category_stats(OP).unwrap());
    let e = a.alloc_persistent(8, 0, OP).unwrap_err();
    assert_eq!(e.status(), Status::DoesNotFit);
    assert_eq!(
        e.message(),
        "the arena's state has room for 1 persistent record and every one is in use: give nnm_arena_init a larger state for one more persistent allocation"
    );
    assert_eq!((a.sizes(), a.memory().bytes.clone(), a.category_stats(OP).unwrap()), before);
    let t1 = a.alloc_temp(8, 0, SCRATCH).unwrap();
    let t2 = a.alloc_temp(8, 0, SCRATCH).unwrap();
    let before = (a.sizes(), a.memory().bytes.clone());
    let e = a.alloc_temp(8, 0, SCRATCH).unwrap_err();
    assert_eq!(
        e.message(),
        "the arena's state has room for 2 temp records and every one is in use: give nnm_arena_init a larger max_temps for one more temp allocation"
    );
    assert_eq!((a.sizes(), a.memory().bytes.clone()), before);
    // Released and reclaimed, the records are free again.
    a.release_temp(t2).unwrap();
    a.release_temp(t1).unwrap();
    a.reset_temp().unwrap();
    a.alloc_temp(8, 0, SCRATCH).unwrap();
    a.alloc_temp(8, 0, SCRATCH).unwrap();
    a.check().unwrap();
}

/// Guard mode's watched records may fill up: a stale write below the ones
/// kept is still found, only no longer named.
#[test]
fn full_watched_slots_still_find_a_stale_write() {
    let (mut temps, mut reclaimed, mut tails) = slot_arrays(2, 0);
    let slots = Slots { temps: &mut temps, reclaimed: &mut reclaimed[..1], tails: &mut tails };
    let options = ArenaOptions { guard: true, ..ArenaOptions::default() };
    let mut a =
        Arena::in_slots(Buffers::Single(Span::new(0, 4096).unwrap()), options, VecMemory::new(0, 4096), slots).unwrap();
    let t1 = a.alloc_temp(32, 0, SCRATCH).unwrap();
    let t2 = a.alloc_temp(32, 0, SCRATCH).unwrap();
    a.release_temp(t1).unwrap();
    a.release_temp(t2).unwrap();
    // t2 was reclaimed first and kept; t1's record found the slots full.
    a.memory_mut().write(t1, &[0]);
    let e = a.check().unwrap_err();
    assert_eq!(e.status(), Status::Corrupted);
    assert!(
        e.message()
            .starts_with("guard check failed: released temp memory of the arena was written after it was released"),
        "{}",
        e.message()
    );
    a.memory_mut().fill(t1, 1, POISON);
    a.memory_mut().write(t2, &[0]);
    let e = a.check().unwrap_err();
    assert!(e.message().contains("released temp allocation #2"), "{}", e.message());
}
