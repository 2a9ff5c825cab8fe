use std::collections::HashMap;
use std::sync::Arc;

use super::*;
use crate::plan::csv;
use crate::pool::device::host::HostAllocator;
use crate::pool::device::DeviceAllocator;
use crate::pool::strategy::no_pool::NoPool;
use crate::pool::testing::CountingAllocator;

/// A replay pool's strategy and device, checking every block it hands out:
/// aligned as asked, overlapping no block still out.
struct Harness {
    counting: Arc<CountingAllocator>,
    device: Device,
    replay: Replay,
    /// Blocks out: address, bytes.
    out: Vec<(DevicePtr, u64)>,
    /// Blocks out by the id an [`Op`] gave them.
    ids: HashMap<usize, DevicePtr>,
    served_from_plan: u64,
}

impl Harness {
    fn new(work_limit: u64) -> Self {
        let counting = CountingAllocator::new();
        let options = ReplayOptions { work_limit, ..ReplayOptions::default() };
        Harness {
            device: Device::new(counting.shared(), None),
            counting,
            replay: Replay::new(&options, Box::new(NoPool::new())),
            out: Vec::new(),
            ids: HashMap::new(),
            served_from_plan: 0,
        }
    }

    fn alloc_on(&mut self, size: u64, alignment: u64, stream: Stream) -> (DevicePtr, bool) {
        let served = self.replay.alloc(Request { size, alignment, stream }, &self.device).unwrap();
        assert_eq!(served.ptr.addr() % alignment as usize, 0, "{size} B at alignment {alignment}: {:?}", served.ptr);
        assert!(served.bytes >= size);
        let (a, b) = (served.ptr.addr(), served.ptr.addr() + size as usize);
        for &(p, n) in &self.out {
            assert!(
                b <= p.addr() || p.addr() + n as usize <= a,
                "{size} B at {:?} overlaps {n} B at {p:?}",
                served.ptr
            );
        }
        self.out.push((served.ptr, size));
        self.served_from_plan += served.from_plan as u64;
        (served.ptr, served.from_plan)
    }

    fn alloc(&mut self, size: u64, alignment: u64) -> (DevicePtr, bool) {
        self.alloc_on(size, alignment, Stream::DEFAULT)
    }

    fn free(&mut self, ptr: DevicePtr) {
        let freed = self.replay.free(ptr, &self.device).unwrap();
        let at = self.out.iter().position(|&(p, _)| p == ptr).expect("handed out");
        assert_eq!(freed.requested, self.out[at].1);
        self.out.swap_remove(at);
    }

    /// A harness whose replay recorded and planned [`iteration`].
    fn planned() -> Self {
        let mut h = Harness::new(1_000_000);
        run(&mut h, &iteration());
        h.end();
        h
    }

    fn end(&mut self) {
        self.replay.end_iteration(&self.device).unwrap();
    }

    fn device_allocs(&self) -> u64 {
        self.counting.allocs()
    }

    fn figures(&self) -> PlanFigures {
        self.replay.plan_figures().unwrap()
    }

    /// Returns everything; every device allocation came back.
    fn finish(mut self) {
        for (ptr, _) in std::mem::take(&mut self.out) {
            self.replay.free(ptr, &self.device).unwrap();
        }
        self.replay.release_all(&self.device);
        assert_eq!(self.counting.allocs(), self.counting.frees());
        assert_eq!(self.counting.live_blocks(), 0);
        assert_eq!(self.device.counters().reserved_bytes, 0);
    }
}

/// An op: alloc (size, alignment) as buffer `id`, or free buffer `id`.
#[derive(Copy, Clone, Debug)]
enum Op {
    Alloc(usize, u64, u64),
    Free(usize),
}

use Op::{Alloc, Free};

/// A small network's iteration: activations and workspaces of mixed sizes
/// and alignments, a run of three frees.
fn iteration() -> Vec<Op> {
    vec![
        Alloc(0, 1000, 256),
        Alloc(1, 4096, 512),
        Alloc(2, 300, 64),
        Free(0),
        Alloc(3, 2000, 256),
        Free(2),
        Alloc(4, 5000, 4096),
        Free(1),
        Free(3),
        Free(4),
        Alloc(5, 700, 256),
        Alloc(6, 10_000, 256),
        Free(5),
        Free(6),
    ]
}

/// Runs `ops`; returns how many allocs the plan served.
fn run(h: &mut Harness, ops: &[Op]) -> usize {
    let mut from_plan = 0;
    for &op in ops {
        match op {
            Alloc(id, size, alignment) => {
                let (p, planned) = h.alloc(size, alignment);
                assert!(h.ids.insert(id, p).is_none());
                from_plan += planned as usize;
            }
            Free(id) => {
                let p = h.ids.remove(&id).unwrap();
                h.free(p)
            }
        }
    }
    from_plan
}

fn allocs(ops: &[Op]) -> usize {
    ops.iter().filter(|op| matches!(op, Alloc(..))).count()
}

#[test]
fn a_recorded_iteration_is_replayed_from_the_plan() {
    for explicit_ends in [true, false] {
        let mut h = Harness::new(1_000_000);
        let ops = iteration();
        assert_eq!(run(&mut h, &ops), 0, "recording: the fallback serves");
        let recorded = h.device_allocs();
        assert_eq!(recorded, 7);
        h.end();
        assert_eq!(h.device_allocs(), recorded + 1, "one planned block");
        for _ in 0..3 {
            assert_eq!(run(&mut h, &ops), allocs(&ops));
            if explicit_ends {
                h.end();
            }
        }
        assert_eq!(h.device_allocs(), recorded + 1, "no device allocation after the first iteration");
        let f = h.figures();
        assert!(f.planned);
        assert_eq!((f.recorded_requests, f.departures), (7, 0));
        // The largest live set: 4096 + 2000 + 5000 (buffers 1, 3, 4), each
        // padded for its alignment at most.
        assert_eq!(f.lower_bound_bytes, 4096 + 2000 + 5000);
        assert!(f.plan_bytes >= f.lower_bound_bytes && f.plan_bytes <= 4 * f.lower_bound_bytes, "{f:?}");
        assert_eq!(h.device.counters().reserved_bytes, f.plan_bytes);
        h.finish();
    }
}

/// `lower` and `upper` of a planner CSV as allocs and frees in step order
/// (half-open: a buffer whose `upper` is a step is freed before that step's
/// allocs).
fn trace_ops(path: &str, alignment: u64) -> (Vec<Op>, u64) {
    let text = std::fs::read_to_string(format!("{}/benches/data/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let rows = csv::parse(&text).unwrap();
    let lb = crate::plan::lower_bound(csv::to_problem(&rows, 1).unwrap().buffers()).bytes;
    // (step, allocs after frees, row)
    let mut events: Vec<(i64, bool, usize)> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        events.push((r.lower, true, i));
        events.push((r.upper, false, i));
    }
    events.sort_unstable();
    let ops = events
        .into_iter()
        .map(|(_, alloc, i)| if alloc { Alloc(i, rows[i].size, alignment) } else { Free(i) })
        .collect();
    (ops, lb)
}

#[test]
fn a_real_trace_is_replayed_within_one_percent_of_the_lower_bound() {
    let (ops, lb) = trace_ops("idealloc/somas_tensors/resnet50.csv", 256);
    let mut h = Harness::new(2_000_000);
    run(&mut h, &ops);
    let recorded = h.device_allocs();
    h.end();
    h.device.reset_peak();
    for _ in 0..3 {
        assert_eq!(run(&mut h, &ops), allocs(&ops));
        h.end();
    }
    assert_eq!(h.device_allocs(), recorded + 1);
    let f = h.figures();
    assert_eq!(f.lower_bound_bytes, lb);
    let reserved = h.device.counters().reserved_peak;
    assert_eq!(reserved, f.plan_bytes);
    assert!(reserved as f64 <= 1.01 * lb as f64, "reserved {reserved} B, lower bound {lb} B");
    h.finish();
}

/// Runs `ops` after a recorded `iteration()`; returns (allocs served from
/// the plan, departures).
fn replay_departing(ops: &[Op]) -> (usize, u64) {
    let mut h = Harness::planned();
    let from_plan = run(&mut h, ops);
    h.end();
    let departures = h.figures().departures;
    // The next iteration, as recorded, is served by the plan again.
    assert_eq!(run(&mut h, &iteration()), allocs(&iteration()));
    assert_eq!(h.figures().departures, departures);
    h.finish();
    (from_plan, departures)
}

#[test]
fn departures_fall_back_without_overlapping_a_live_planned_buffer() {
    // A different size in the middle: buffers 0 and 1 came from the plan.
    let mut ops = iteration();
    ops[2] = Alloc(2, 301, 64);
    assert_eq!(replay_departing(&ops), (2, 1));
    // An extra alloc at the end.
    let mut ops = iteration();
    ops.insert(12, Alloc(7, 64, 64));
    ops.push(Free(7));
    assert_eq!(replay_departing(&ops), (7, 1));
    // Frees reordered within a run: no departure.
    let mut ops = iteration();
    ops[7..10].reverse();
    assert_eq!(replay_departing(&ops), (7, 0));
    // A late free (buffer 0 outlives buffer 3's alloc, which the plan may
    // place over it): the fallback serves everything after.
    let mut ops = iteration();
    ops.swap(3, 4);
    assert_eq!(replay_departing(&ops), (3, 1));
    // An early free outside its run departs too.
    let mut ops = iteration();
    let early = ops.remove(8);
    ops.insert(5, early);
    assert_eq!(replay_departing(&ops), (4, 1));
    // A request whose alignment the planned offset does not give.
    let mut ops = iteration();
    ops[1] = Alloc(1, 4096, 8192);
    assert_eq!(replay_departing(&ops), (1, 1));
}

#[test]
fn an_iteration_starting_with_a_planned_buffer_live_is_departed() {
    let mut h = Harness::planned();
    let ops = iteration();
    let (kept, planned) = h.alloc(1000, 256);
    assert!(planned);
    h.end();
    assert_eq!(h.figures().departures, 1);
    // Buffer 0 is still out: the whole iteration goes to the fallback,
    // except once it is back and the sequence starts again.
    assert_eq!(run(&mut h, &ops[..3]), 0);
    h.free(kept);
    assert_eq!(run(&mut h, &ops[3..]), 0, "nothing from the plan mid-iteration");
    // The recorded first request, nothing planned live: the next iteration.
    assert_eq!(run(&mut h, &ops), allocs(&ops));
    assert_eq!(h.figures().departures, 1);
    h.finish();
}

#[test]
fn frees_of_anything_not_live_change_nothing() {
    let mut h = Harness::planned();
    let (a, _) = h.alloc(1000, 256);
    let (b, _) = h.alloc(4096, 512);
    // Inside the block but no live buffer there; a pointer never handed out.
    let other = HostAllocator.alloc(64, 64, Stream::DEFAULT).unwrap();
    for ptr in [a.byte_add(8), b.byte_add(4096 - 1), other] {
        assert_eq!(h.replay.free(ptr, &h.device), Err(NotLive));
    }
    HostAllocator.free(other, 64, Stream::DEFAULT);
    let (c, _) = h.alloc(300, 64);
    h.free(a);
    assert_eq!(h.replay.free(a, &h.device), Err(NotLive), "double free");
    // The iteration goes on from the plan.
    let (d, planned) = h.alloc(2000, 256);
    assert!(planned);
    h.free(c);
    let (e, planned) = h.alloc(5000, 4096);
    assert!(planned);
    for p in [b, d, e] {
        h.free(p);
    }
    assert_eq!(h.figures().departures, 0);
    h.finish();
}

#[test]
fn release_cached_gives_the_idle_block_back_and_the_plan_takes_it_again() {
    let mut h = Harness::planned();
    let ops = iteration();
    let bytes = h.figures().plan_bytes;
    let cached = h.replay.cache_figures();
    assert_eq!((cached.cached_blocks, cached.cached_bytes, cached.largest_free_block), (1, bytes, bytes));
    // While a planned buffer is live the block stays.
    let (p, _) = h.alloc(1000, 256);
    assert_eq!(h.replay.cache_figures(), CacheFigures::default());
    assert_eq!(h.replay.release_cached(&h.device), 0);
    h.free(p);
    h.end();
    assert_eq!(h.replay.release_cached(&h.device), bytes);
    assert_eq!(h.device.counters().reserved_bytes, 0);
    assert_eq!(h.replay.cache_figures(), CacheFigures::default());
    let allocs_before = h.device_allocs();
    assert_eq!(run(&mut h, &ops), allocs(&ops));
    assert_eq!(h.device_allocs(), allocs_before + 1);
    h.finish();
}

#[test]
fn streams_get_disjoint_parts_of_the_block() {
    let (s1, s2) = (Stream(1), Stream(2));
    let mut h = Harness::new(1_000_000);
    let record = |h: &mut Harness| {
        let (a, pa) = h.alloc_on(1024, 256, s1);
        h.free(a);
        let (b, pb) = h.alloc_on(1024, 256, s2);
        h.free(b);
        (a, b, pa && pb)
    };
    record(&mut h);
    h.end();
    // Alone the two would share one place; on two streams they do not.
    assert_eq!(h.figures().plan_bytes, 2048);
    assert_eq!(h.figures().lower_bound_bytes, 1024);
    let (a, b, planned) = record(&mut h);
    assert!(planned && a != b);
    // A request on another stream than recorded departs.
    let (c, planned) = h.alloc_on(1024, 256, s2);
    assert!(!planned);
    h.free(c);
    assert_eq!(h.figures().departures, 1);
    h.finish();
}

#[test]
fn buffers_live_at_the_end_of_the_recording_are_not_planned() {
    let mut h = Harness::new(1_000_000);
    // Weights allocated once and kept; an output handed to the next
    // iteration.
    let (weights, _) = h.alloc(1 << 20, 256);
    let ops = iteration();
    let (mut output, _) = h.alloc(512, 256);
    run(&mut h, &ops);
    h.end();
    let f = h.figures();
    assert_eq!((f.recorded_requests, f.lower_bound_bytes), (9, 4096 + 2000 + 5000));
    for _ in 0..3 {
        // The previous output goes back mid-way: the fallback takes it.
        let (next, planned) = h.alloc(512, 256);
        assert!(!planned);
        assert_eq!(run(&mut h, &ops[..4]), 3);
        h.free(output);
        output = next;
        assert_eq!(run(&mut h, &ops[4..]), 4);
    }
    assert_eq!(h.figures().departures, 0);
    h.free(weights);
    h.free(output);
    h.finish();
}

#[test]
fn an_iteration_with_nothing_to_plan_is_recorded_again() {
    let mut h = Harness::new(1_000_000);
    h.end();
    let (kept, _) = h.alloc(100, 256);
    h.end();
    assert!(!h.figures().planned);
    let ops = iteration();
    run(&mut h, &ops);
    h.end();
    assert_eq!(h.figures().recorded_requests, 7);
    assert_eq!(run(&mut h, &ops), allocs(&ops));
    h.free(kept);
    h.finish();
}

#[test]
fn a_refused_request_counts_no_departure_and_leaves_the_iteration_where_it_was() {
    let mut h = Harness::planned();
    let before = h.figures();
    // Not the recorded first request: it would depart, but NoPool's device
    // refuses it (overflow) first.
    let e = h.replay.alloc(Request { size: u64::MAX - 148, alignment: 64, stream: Stream::DEFAULT }, &h.device);
    assert!(e.is_err());
    assert_eq!(h.figures(), before, "no departure counted");
    let served = run(&mut h, &iteration());
    assert_eq!(served, 7, "the plan still serves the iteration from its start");
    assert_eq!(h.figures().departures, 0);
    h.finish();
}

#[test]
fn a_request_of_0_bytes_is_recorded_and_replayed_at_an_address_of_its_own() {
    let mut h = Harness::new(1_000_000);
    let ops = [Alloc(0, 0, 64), Alloc(1, 0, 64), Alloc(2, 100, 64), Free(0), Free(1), Free(2)];
    run(&mut h, &ops);
    h.end();
    for _ in 0..2 {
        assert_eq!(run(&mut h, &ops), 3, "every request from the plan");
    }
    assert_eq!(h.figures().departures, 0);
    h.finish();
}

/// The plan's block, asked for again after `release_cached`, answered
/// with memory the pool already holds: the request is refused there, as
/// every strategy refuses it, and the device is not asked again by the
/// fallback (only running out of room departs).
#[test]
fn a_block_the_device_handed_out_twice_refuses_the_request_without_departing() {
    let dev = crate::pool::testing::Misbehaving::new();
    let device = Device::new(dev.clone(), None);
    let mut replay = Replay::new(&ReplayOptions::default(), Box::new(NoPool::new()));
    let request = Request { size: 10_000, alignment: 256, stream: Stream::DEFAULT };
    let a = replay.alloc(request, &device).unwrap().ptr;
    replay.free(a, &device).unwrap();
    replay.end_iteration(&device).unwrap();
    assert!(replay.release_cached(&device) >= 10_000, "the plan's block went back");
    // A block of the pool's own; the device's next answer is that block.
    let held = device.alloc(4096, 256, Stream::DEFAULT).unwrap();
    dev.arm(Some(0));
    let e = replay.alloc(request, &device).unwrap_err();
    assert_eq!(e.status(), crate::status::Status::InvalidArgument, "{}", e.message());
    assert!(e.message().contains("not handed out and not given back"), "{}", e.message());
    assert_eq!(dev.bogus.load(std::sync::atomic::Ordering::SeqCst), 1, "asked once");
    assert_eq!(replay.plan_figures().unwrap().departures, 0);
    // Behaving again, the plan serves the request.
    dev.arm(None);
    let served = replay.alloc(request, &device).unwrap();
    assert!(served.from_plan);
    replay.free(served.ptr, &device).unwrap();
    replay.release_all(&device);
    device.free(held, 4096, Stream::DEFAULT);
    // The recorded request, the plan's block twice, the held block: all back.
    assert_eq!((dev.inner.allocs(), dev.inner.frees()), (4, 4));
}

#[test]
fn the_device_refusing_the_block_restarts_the_recording() {
    let counting = CountingAllocator::new();
    let device = Device::new(counting.shared(), Some(12_000));
    let mut replay = Replay::new(&ReplayOptions::default(), Box::new(NoPool::new()));
    let request = Request { size: 10_000, alignment: 256, stream: Stream::DEFAULT };
    let a = replay.alloc(request, &device).unwrap().ptr;
    replay.free(a, &device).unwrap();
    let kept = replay.alloc(request, &device).unwrap().ptr;
    let e = replay.end_iteration(&device).unwrap_err();
    assert_eq!(e.status(), crate::status::Status::OutOfMemory);
    assert!(!replay.plan_figures().unwrap().planned);
    assert_eq!(replay.plan_figures().unwrap().recorded_requests, 0);
    replay.free(kept, &device).unwrap();
    let a = replay.alloc(request, &device).unwrap().ptr;
    replay.free(a, &device).unwrap();
    replay.end_iteration(&device).unwrap();
    let served = replay.alloc(request, &device).unwrap();
    assert!(served.from_plan);
    replay.free(served.ptr, &device).unwrap();
    replay.release_all(&device);
    assert_eq!(counting.allocs(), counting.frees());
}

#[test]
fn a_replay_pool_counts_what_the_plan_served() {
    use crate::pool::{Pool, PoolOptions, StrategyKind};
    let counting = CountingAllocator::new();
    let mut options = PoolOptions::default();
    options.replay.work_limit = 1_000_000;
    let pool = Pool::new(counting.shared(), StrategyKind::Replay, &options).unwrap();
    assert_eq!(pool.strategy_name(), "replay");
    let run = |pool: &Pool| {
        let mut ptrs: HashMap<usize, DevicePtr> = HashMap::new();
        for op in iteration() {
            match op {
                Alloc(id, size, alignment) => {
                    ptrs.insert(id, pool.alloc(size, alignment, Stream::DEFAULT).unwrap());
                }
                Free(id) => pool.free(ptrs.remove(&id).unwrap()).unwrap(),
            }
        }
    };
    run(&pool);
    pool.end_iteration().unwrap();
    let after_planning = counting.allocs();
    let planned = pool.stats();
    // The caching fallback's idle segments went back for the block.
    assert_eq!(planned.reserved_bytes, planned.plan_bytes);
    for _ in 0..3 {
        run(&pool);
    }
    let st = pool.stats();
    assert_eq!(counting.allocs(), after_planning);
    assert_eq!((st.served_from_plan, st.plan_departures), (3 * 7, 0));
    assert_eq!(st.plan_lower_bound, 4096 + 2000 + 5000);
    assert_eq!((st.cached_blocks, st.cached_bytes), (1, st.plan_bytes));
    assert_eq!(pool.release_cached(), st.plan_bytes);
    assert_eq!(pool.stats().reserved_bytes, 0);
    drop(pool);
    assert_eq!(counting.allocs(), counting.frees());
}

#[test]
fn an_iteration_that_never_ends_stops_recording_at_the_cap() {
    let mut h = Harness::new(crate::plan::DEFAULT_WORK_LIMIT);
    // Pairs with no end_iteration: the recording grows to the cap, then
    // is dropped (its memory with it) and stays empty.
    for i in 0..record::MAX_RECORDED_REQUESTS + 10 {
        let (p, from_plan) = h.alloc(64 + (i % 7) as u64 * 64, 256);
        assert!(!from_plan);
        h.free(p);
        if i + 1 == record::MAX_RECORDED_REQUESTS {
            assert_eq!(h.replay.recording.requests(), record::MAX_RECORDED_REQUESTS as u64);
        }
    }
    assert_eq!(h.replay.recording.requests(), 0, "dropped past the cap");
    assert_eq!(h.replay.recording.capacity(), 0, "its memory is freed");
    // That iteration is not planned; the next one is recorded and planned.
    h.replay.end_iteration(&h.device).unwrap();
    assert!(h.replay.plan.is_none(), "an overlong iteration plans nothing");
    for _ in 0..3 {
        let (a, _) = h.alloc(1000, 256);
        let (b, _) = h.alloc(2000, 256);
        h.free(a);
        h.free(b);
    }
    h.replay.end_iteration(&h.device).unwrap();
    let figures = h.replay.plan_figures().unwrap();
    assert!(figures.planned);
    assert_eq!(figures.recorded_requests, 6);
    let (a, from_plan) = h.alloc(1000, 256);
    assert!(from_plan, "the next iteration replays the plan");
    h.free(a);
}
