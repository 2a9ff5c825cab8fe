//! Pool tests through the public `Pool` and `Registry` API: RAF's pool
//! test semantics, limits and retries, bad input, threads, streams,
//! statistics and retirement.

use std::sync::{Arc, Mutex};

use super::testing::{fill, holds, CountingAllocator};
use super::*;
use crate::report_format::ReportFormat;
use crate::status::Status;

const S0: Stream = Stream::DEFAULT;

fn one_shard() -> PoolOptions {
    PoolOptions { shards: 1, ..PoolOptions::default() }
}

fn page_unit(alloc: &Arc<CountingAllocator>, options: &PoolOptions) -> Pool {
    Pool::new(alloc.shared(), StrategyKind::PageUnit, options).unwrap()
}

#[test]
fn page_unit_follows_rafs_pool_test() {
    let dev = CountingAllocator::new();
    let pool = page_unit(&dev, &PoolOptions::default());
    let mut blocks = Vec::new();
    let mut expected_bytes = 0;
    for &size in &[11u64, 19, 2019, 1_024_124] {
        for &alignment in &[128u64, 512, 1024, 4096] {
            let p = pool.alloc(size, alignment, S0).unwrap();
            assert_eq!(p.addr() % alignment as usize, 0, "{size} B at alignment {alignment}");
            expected_bytes += size.div_ceil(4096) * 4096;
            blocks.push(p);
        }
    }
    let st = pool.stats();
    assert_eq!(st.allocated_bytes, expected_bytes);
    assert_eq!(st.requested_bytes, 4 * (11 + 19 + 2019 + 1_024_124));
    assert_eq!(st.active_blocks, 16);
    assert_eq!(st.reserved_bytes, expected_bytes, "nothing cached yet: every block from the device");
    assert_eq!(dev.allocs(), 16);

    // A released 4096 B chunk comes back on the next 4096 B request.
    let p = pool.alloc(4096, 64, S0).unwrap();
    pool.free(p).unwrap();
    assert_eq!(pool.alloc(4096, 64, S0).unwrap(), p);
    assert_eq!(dev.allocs(), 17, "the second 4096 B request was served from the cache");
    pool.free(p).unwrap();

    for b in blocks {
        pool.free(b).unwrap();
    }
    let st = pool.stats();
    assert_eq!((st.allocated_bytes, st.requested_bytes, st.active_blocks), (0, 0, 0), "used bytes drop to 0");
    assert_eq!(st.cached_bytes, expected_bytes + 4096);
    assert_eq!(st.cached_blocks, 17);
    assert_eq!(st.largest_free_block, 1_024_124u64.div_ceil(4096) * 4096);
    assert_eq!(pool.release_cached(), expected_bytes + 4096);
    assert_eq!(dev.live_blocks(), 0);
    assert_eq!(pool.stats().reserved_bytes, 0);
}

#[test]
fn page_unit_reuses_only_the_same_rounded_size() {
    let dev = CountingAllocator::new();
    let pool = page_unit(&dev, &PoolOptions { page_size: 1024, ..one_shard() });
    let a = pool.alloc(1000, 16, S0).unwrap();
    pool.free(a).unwrap();
    // 1025 B is two 1 KiB pages: not the idle one-page chunk.
    let b = pool.alloc(1025, 16, S0).unwrap();
    assert_ne!(a, b);
    assert_eq!(pool.stats().allocated_bytes, 2048);
    // 1 B is one page again: the idle chunk.
    assert_eq!(pool.alloc(1, 16, S0).unwrap(), a);
    assert_eq!(dev.allocs(), 2);
}

#[test]
fn no_pool_calls_the_device_for_every_request() {
    let dev = CountingAllocator::new();
    let pool = Pool::new(dev.shared(), StrategyKind::NoPool, &PoolOptions::default()).unwrap();
    assert_eq!(pool.strategy_name(), "no-pool");
    for round in 1..=3u64 {
        let blocks: Vec<_> = (1..=10u64).map(|i| pool.alloc(i * 100, 64, S0).unwrap()).collect();
        assert_eq!(pool.stats().reserved_bytes, 5500);
        for b in blocks {
            pool.free(b).unwrap();
        }
        assert_eq!((dev.allocs(), dev.frees()), (10 * round, 10 * round));
    }
    let st = pool.stats();
    assert_eq!((st.device_allocs, st.device_frees, st.reserved_bytes, st.reserved_peak), (30, 30, 0, 5500));
    assert_eq!((st.cached_bytes, st.allocs, st.frees), (0, 30, 30));
    assert_eq!(pool.release_cached(), 0);
}

#[test]
fn the_limit_refuses_with_the_figures_after_one_retry() {
    let dev = CountingAllocator::new();
    let pool = page_unit(&dev, &PoolOptions { limit: Some(16384), ..one_shard() });
    let a = pool.alloc(4096, 64, S0).unwrap();
    let b = pool.alloc(4000, 64, S0).unwrap();
    let c = pool.alloc(4096, 64, S0).unwrap();
    pool.free(c).unwrap();
    assert_eq!(pool.stats().cached_bytes, 4096);

    // 12288 B more: refused, the idle chunk goes back, refused again.
    let e = pool.alloc(12288, 64, S0).unwrap_err();
    assert_eq!(e.status(), Status::OutOfMemory);
    assert_eq!(e.message(), "requested 12288 B, in use 8192 B, cached 0 B, limit 16384 B");
    let st = pool.stats();
    assert_eq!((st.oom_retries, st.limit_refusals, st.limit), (1, 1, 16384));
    assert_eq!((st.reserved_bytes, st.cached_bytes, st.allocs, st.device_frees), (8192, 0, 3, 1));

    // 12288 B fits once the idle chunk is back: counted as a retry only.
    pool.free(a).unwrap();
    let d = pool.alloc(12288, 64, S0).unwrap();
    let st = pool.stats();
    assert_eq!((st.oom_retries, st.limit_refusals, st.reserved_bytes, st.reserved_peak), (2, 1, 16384, 16384));
    pool.free(d).unwrap();
    pool.free(b).unwrap();
    assert!(pool.report(ReportFormat::Text).contains("oom retries 2, limit refusals 1"));
}

#[test]
fn a_device_failure_releases_idle_memory_and_retries_once() {
    let dev = CountingAllocator::new();
    dev.set_capacity(12288);
    let pool = page_unit(&dev, &one_shard());
    let a = pool.alloc(4096, 64, S0).unwrap();
    let b = pool.alloc(4096, 64, S0).unwrap();
    pool.free(a).unwrap();
    // 8192 B does not fit next to the two 4 KiB chunks; it does once the
    // idle one is returned.
    let c = pool.alloc(8192, 64, S0).unwrap();
    assert_eq!((dev.failures(), dev.frees()), (1, 1));
    assert_eq!((pool.stats().oom_retries, pool.stats().limit_refusals), (1, 0));

    // A transient failure: the retry succeeds.
    dev.set_capacity(u64::MAX);
    dev.fail_next(1);
    let d = pool.alloc(100, 64, S0).unwrap_or_else(|e| panic!("{e}"));
    pool.free(d).unwrap();
    assert_eq!(pool.stats().oom_retries, 2);

    // Two failures in a row: refused, with the figures and the device's word.
    dev.fail_next(2);
    let e = pool.alloc(20000, 64, S0).unwrap_err();
    assert_eq!(e.status(), Status::OutOfMemory);
    assert_eq!(e.message(), "requested 20000 B, in use 12288 B, cached 0 B; counting: refused 20480 B");
    let st = pool.stats();
    assert_eq!((st.oom_retries, st.limit_refusals, st.active_blocks), (3, 0, 2));
    pool.free(b).unwrap();
    pool.free(c).unwrap();
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let dev = CountingAllocator::new();
    // The impossible size is refused by the test device, not by the host
    // (Miri cannot be asked for 2^64 B).
    dev.set_capacity(1 << 30);
    let pool = page_unit(&dev, &one_shard());
    let kept = pool.alloc(100, 8, S0).unwrap();
    let before = pool.stats();
    let cases: [(u64, u64, Status, &str); 5] = [
        (8, 0, Status::InvalidArgument, "alignment 0 B of a 8 B request is not a power of two"),
        (8, 3, Status::InvalidArgument, "alignment 3 B"),
        (u64::MAX, 4096, Status::Overflow, "18446744073709551615 B rounded up to alignment 4096 B"),
        (u64::MAX - 10, 1, Status::Overflow, "rounded up to 4096 B pages overflows"),
        (u64::MAX - 4095, 4096, Status::OutOfMemory, "requested 18446744073709547520 B"),
    ];
    for (size, alignment, status, words) in cases {
        let e = pool.alloc(size, alignment, S0).unwrap_err();
        assert_eq!(e.status(), status, "{size} B at {alignment}: {e}");
        assert!(e.message().contains(words), "{}", e.message());
    }
    let after = pool.stats();
    assert_eq!(after, Stats { oom_retries: 1, ..before }, "only the impossible size was retried");

    // A pointer the pool never handed out, and a double free.
    let stranger = device::host().alloc(64, 64, S0).unwrap();
    let e = pool.free(stranger).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(e.message().contains(&format!("{stranger:?}")), "{}", e.message());
    device::host().free(stranger, 64, S0);
    pool.free(kept).unwrap();
    let freed = pool.stats();
    let e = pool.free(kept).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(e.message().contains("freed already"), "{}", e.message());
    assert_eq!(pool.stats(), freed);
}

#[test]
fn options_are_checked() {
    let host = device::host();
    for (options, words) in [
        (PoolOptions { page_size: 3000, ..PoolOptions::default() }, "page_size 3000 B is not a power of two"),
        (PoolOptions { shards: 65, ..PoolOptions::default() }, "65 shards"),
        (PoolOptions { limit: Some(0), ..PoolOptions::default() }, "limit 0 B"),
    ] {
        let e = Pool::new(host.clone(), StrategyKind::PageUnit, &options).err().unwrap();
        assert!(e.message().contains(words), "{}", e.message());
    }
    // The caching options are refused, never made consistent behind the
    // caller's back; for every strategy (one options struct).
    let caching = |c: CachingOptions| PoolOptions { caching: c, ..PoolOptions::default() };
    let d = CachingOptions::default();
    for (options, words) in [
        (caching(CachingOptions { min_block: 1000, ..d }), "min_block 1000 B is not a power of two"),
        (caching(CachingOptions { min_block: 0, ..d }), "min_block 0 B is not a power of two"),
        (caching(CachingOptions { small_segment: 0, ..d }), "small_segment 0 B: must be a non-zero multiple"),
        (caching(CachingOptions { small_segment: 3 << 19, min_block: 1 << 20, ..d }), "not a multiple of min_block"),
        (caching(CachingOptions { small_segment: 1 << 19, ..d }), "smaller than small_size (1048576 B)"),
        (caching(CachingOptions { large_round: 0, ..d }), "large_round 0 B"),
        (caching(CachingOptions { large_round: 700, ..d }), "large_round 700 B is not a multiple of min_block (512 B)"),
    ] {
        for &kind in StrategyKind::ALL {
            let e = Pool::new(host.clone(), kind, &options).err().unwrap();
            assert_eq!(e.status(), Status::InvalidArgument);
            assert!(e.message().contains(words), "{kind:?}: {}", e.message());
        }
    }
    let edges = CachingOptions { min_block: 1, small_size: 0, small_segment: 1, large_round: 1, max_split: 0 };
    assert!(Pool::new(host, StrategyKind::Caching, &caching(edges)).is_ok());
}

#[test]
fn a_request_of_0_bytes_gets_a_smallest_block_of_its_own() {
    for (&kind, smallest) in StrategyKind::ALL.iter().zip([1, 4096, 512, 512]) {
        let dev = CountingAllocator::new();
        let pool = Pool::new(dev.shared(), kind, &one_shard()).unwrap();
        let a = pool.alloc(0, 1, S0).unwrap();
        let b = pool.alloc(0, 64, S0).unwrap();
        let c = pool.alloc(1, 1, S0).unwrap();
        assert!(a != b && b != c && a != c && b.addr() % 64 == 0, "{kind:?}");
        let st = pool.stats();
        assert_eq!((st.requested_bytes, st.allocated_bytes, st.active_blocks), (1, 3 * smallest, 3), "{kind:?}");
        for p in [a, b, c] {
            pool.free(p).unwrap();
        }
        assert_eq!(pool.free(a).unwrap_err().status(), Status::InvalidArgument, "{kind:?}: freed already");
        let st = pool.stats();
        assert_eq!((st.requested_bytes, st.allocated_bytes, st.active_blocks, st.frees), (0, 0, 0, 3), "{kind:?}");
        drop(pool);
        assert_eq!(dev.live_blocks(), 0, "{kind:?}");
    }
}

#[test]
fn blocks_wait_for_their_stream_until_the_streams_are_synchronized() {
    let dev = CountingAllocator::new();
    let pool = page_unit(&dev, &one_shard());
    let (s1, s2) = (Stream(1), Stream(2));
    let a = pool.alloc(5000, 256, s1).unwrap();
    pool.free(a).unwrap();
    let b = pool.alloc(5000, 256, s2).unwrap();
    assert_ne!(a, b, "a block freed on stream 1 must not serve stream 2 before a synchronisation");
    assert_eq!(pool.alloc(5000, 256, s1).unwrap(), a, "stream 1 reuses its own block");
    pool.free(a).unwrap();
    pool.free(b).unwrap();
    pool.streams_synchronized();
    let got = [pool.alloc(5000, 256, s2).unwrap(), pool.alloc(5000, 256, s2).unwrap()];
    assert!(got.contains(&a) && got.contains(&b), "after the synchronisation stream 2 takes both");
    assert_eq!(dev.allocs(), 2);
    for p in got {
        pool.free(p).unwrap();
    }
    // The device frees go to the streams the device allocations were made
    // on (the counting allocator checks it).
    assert_eq!(pool.release_cached(), 16384);
    assert_eq!(dev.live_blocks(), 0);
}

#[test]
fn statistics_add_up_and_the_json_report_parses() {
    let dev = CountingAllocator::new();
    let pool = page_unit(&dev, &PoolOptions { limit: Some(1 << 30), ..one_shard() });
    let a = pool.alloc(100, 64, S0).unwrap();
    let b = pool.alloc(5000, 64, S0).unwrap();
    let c = pool.alloc(9000, 64, S0).unwrap();
    pool.free(b).unwrap();
    let st = pool.stats();
    assert_eq!(st.requested_bytes, 9100);
    assert_eq!(st.allocated_bytes, 4096 + 12288);
    assert_eq!(st.reserved_bytes, st.allocated_bytes + st.cached_bytes);
    assert_eq!((st.cached_blocks, st.cached_bytes, st.largest_free_block), (1, 8192, 8192));
    assert_eq!((st.active_blocks, st.active_peak, st.allocs, st.frees), (2, 3, 3, 1));
    assert_eq!((st.requested_peak, st.allocated_peak, st.reserved_peak), (14100, 24576, 24576));
    let v: serde_json::Value = serde_json::from_str(&pool.report(ReportFormat::Json)).unwrap();
    assert_eq!(v["strategy"], "page-unit");
    assert_eq!(v["device"], "counting");
    for (name, value) in st.fields() {
        assert_eq!(v[name].as_u64(), Some(value), "{name}");
    }

    pool.reset_peak();
    let st = pool.stats();
    assert_eq!((st.requested_peak, st.allocated_peak, st.active_peak), (9100, 16384, 2));
    assert_eq!(st.reserved_peak, st.reserved_bytes);
    pool.free(a).unwrap();
    pool.free(c).unwrap();
}

#[test]
fn the_trace_keeps_tagged_snapshots_when_asked() {
    let traced =
        Pool::new(device::host(), StrategyKind::PageUnit, &PoolOptions { trace: true, ..one_shard() }).unwrap();
    traced.snapshot("start");
    let p = traced.alloc(10, 8, S0).unwrap();
    traced.snapshot("one \"block\"");
    traced.free(p).unwrap();
    let trace = traced.trace();
    assert_eq!(trace.len(), 2);
    assert_eq!((trace[0].tag.as_str(), trace[0].stats.active_blocks), ("start", 0));
    assert_eq!((trace[1].tag.as_str(), trace[1].stats.allocated_bytes), ("one \"block\"", 4096));
    let v: serde_json::Value = serde_json::from_str(&traced.trace_report(ReportFormat::Json)).unwrap();
    assert_eq!(v["snapshots"][1]["tag"], "one \"block\"");
    assert_eq!(v["snapshots"][1]["active_blocks"], 1);

    let untraced = Pool::new(device::host(), StrategyKind::PageUnit, &one_shard()).unwrap();
    untraced.snapshot("ignored");
    assert!(untraced.trace().is_empty());
}

/// Statistics read while other threads allocate and free are one
/// moment's: reserved = allocated + cached in every read, on every
/// strategy that keeps no plan.
#[test]
fn statistics_read_under_load_agree_with_each_other() {
    const ROUNDS: u64 = if cfg!(miri) { 30 } else { 20_000 };
    const READS: u64 = if cfg!(miri) { 30 } else { 1000 };
    for strategy in [StrategyKind::PageUnit, StrategyKind::NoPool, StrategyKind::Caching] {
        let dev = CountingAllocator::new();
        let pool =
            Arc::new(Pool::new(dev.shared(), strategy, &PoolOptions { shards: 4, ..PoolOptions::default() }).unwrap());
        let workers: Vec<_> = (0..3u64)
            .map(|t| {
                let pool = pool.clone();
                std::thread::spawn(move || {
                    let mut state = 0x2545_f491u64.wrapping_mul(t + 1);
                    let mut mine = Vec::new();
                    for _ in 0..ROUNDS {
                        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        if mine.len() < 8 && (state >> 60) < 10 {
                            mine.push(pool.alloc(1 + (state >> 33) % 50_000, 64, S0).unwrap());
                        } else if let Some(p) = mine.pop() {
                            pool.free(p).unwrap();
                        }
                        if (state >> 58) == 0 {
                            pool.release_cached();
                        }
                    }
                    for p in mine {
                        pool.free(p).unwrap();
                    }
                })
            })
            .collect();
        // Reads until every worker is done (at least READS of them).
        let mut reads = 0;
        while reads < READS || !workers.iter().all(|w| w.is_finished()) {
            let st = pool.stats();
            assert_eq!(st.reserved_bytes, st.allocated_bytes + st.cached_bytes, "{strategy:?}: {st:?}");
            reads += 1;
        }
        for w in workers {
            w.join().unwrap();
        }
        let st = pool.stats();
        assert_eq!((st.allocated_bytes, st.reserved_bytes, st.cached_bytes), (0, st.cached_bytes, st.reserved_bytes));
    }
}

#[test]
fn threads_share_a_pool_and_free_each_others_blocks() {
    // Miri runs a few small rounds: the same paths, at its speed.
    const ROUNDS: u64 = if cfg!(miri) { 40 } else { 3000 };
    const MAX_SIZE: u64 = if cfg!(miri) { 600 } else { 20000 };
    for strategy in [StrategyKind::PageUnit, StrategyKind::NoPool] {
        let dev = CountingAllocator::new();
        let pool =
            Arc::new(Pool::new(dev.shared(), strategy, &PoolOptions { shards: 4, ..PoolOptions::default() }).unwrap());
        assert_eq!(pool.shard_count(), 4);
        // Blocks handed from each thread to the next, freed there.
        let handoff: Arc<Mutex<Vec<(DevicePtr, u64, u8)>>> = Arc::default();
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let (pool, handoff) = (pool.clone(), handoff.clone());
                std::thread::spawn(move || {
                    let mut state = 0x9e37_79b9u64.wrapping_mul(t + 1);
                    let mut mine = Vec::new();
                    for i in 0..ROUNDS {
                        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        let size = 1 + (state >> 33) % MAX_SIZE;
                        let seed = (state >> 20) as u8;
                        let p = pool.alloc(size, 64, S0).unwrap();
                        fill(p, size, seed);
                        mine.push((p, size, seed));
                        if i % 7 == 0 {
                            handoff.lock().unwrap().push(mine.pop().unwrap());
                        }
                        if mine.len() > 16 || i % 5 == 0 {
                            let k = (state >> 40) as usize % mine.len().max(1);
                            if k < mine.len() {
                                let (p, size, seed) = mine.swap_remove(k);
                                assert!(holds(p, size, seed), "block {p:?} of {size} B overwritten");
                                pool.free(p).unwrap();
                            }
                        }
                        if i % 11 == 0 {
                            let theirs = handoff.lock().unwrap().pop();
                            if let Some((p, size, seed)) = theirs {
                                assert!(holds(p, size, seed), "handed-off block {p:?} overwritten");
                                pool.free(p).unwrap();
                            }
                        }
                    }
                    for (p, size, seed) in mine {
                        assert!(holds(p, size, seed));
                        pool.free(p).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        for (p, size, seed) in handoff.lock().unwrap().drain(..) {
            assert!(holds(p, size, seed));
            pool.free(p).unwrap();
        }
        let st = pool.stats();
        assert_eq!((st.active_blocks, st.allocated_bytes, st.requested_bytes), (0, 0, 0), "{strategy:?}");
        assert_eq!((st.allocs, st.frees), (4 * ROUNDS, 4 * ROUNDS));
        assert_eq!(st.reserved_bytes, st.cached_bytes);
        assert_eq!(st.reserved_bytes, dev.live_bytes());
        pool.release_cached();
        assert_eq!(dev.live_blocks(), 0, "{strategy:?}");
    }
}

#[test]
fn user_strategies_are_registered_by_name() {
    let factory: StrategyFactory =
        Arc::new(|o: &PoolOptions| Box::new(strategy::page_unit::PageUnit::new(o.page_size)) as Box<dyn Strategy>);
    register_strategy("tests-user-pages", factory.clone()).unwrap();
    let e = register_strategy("tests-user-pages", factory.clone()).unwrap_err();
    assert_eq!(e.status(), Status::AlreadyExists);
    let e = register_strategy("page-unit", factory.clone()).unwrap_err();
    assert_eq!(e.status(), Status::AlreadyExists);
    let pool = Pool::by_name(device::host(), "tests-user-pages", &one_shard()).unwrap();
    let p = pool.alloc(1, 1, S0).unwrap();
    pool.free(p).unwrap();
    unregister_strategy("tests-user-pages").unwrap();
    // The pool keeps its strategy.
    assert_eq!(pool.alloc(1, 1, S0).unwrap(), p);
    pool.free(p).unwrap();
    assert_eq!(unregister_strategy("tests-user-pages").unwrap_err().status(), Status::NotFound);
    let e = Pool::by_name(device::host(), "tests-user-pages", &one_shard()).err().unwrap();
    assert_eq!(e.status(), Status::NotFound);
    assert!(e.message().contains("built in: no-pool, page-unit, caching, replay"), "{}", e.message());
    assert_eq!(Pool::by_name(device::host(), "no-pool", &one_shard()).unwrap().strategy_name(), "no-pool");
    // RAF's names are the built-ins' too: taken, reported as nnmem's, never
    // registered or unregistered.
    for (raf, ours) in [("page_unit_pool", "page-unit"), ("no_pool", "no-pool")] {
        assert_eq!(Pool::by_name(device::host(), raf, &one_shard()).unwrap().strategy_name(), ours);
        let e = register_strategy(raf, factory.clone()).unwrap_err();
        assert_eq!(e.status(), Status::AlreadyExists);
        assert!(e.message().contains(&format!("RAF's name of '{ours}'")), "{}", e.message());
        for name in [raf, ours] {
            let e = unregister_strategy(name).unwrap_err();
            assert_eq!(e.status(), Status::InvalidArgument, "{name}");
            assert!(e.message().contains("built-in"), "{}", e.message());
        }
    }
}

fn custom(id: u32) -> DeviceKey {
    DeviceKey::new(DeviceType::Custom, id)
}

#[test]
fn a_switched_pool_retires_and_returns_everything_when_its_last_block_comes_back() {
    let key = custom(1401);
    let reg = registry();
    let dev = CountingAllocator::new();
    reg.register_allocator(key, dev.shared()).unwrap();
    let a = reg.init_pool(key, "page-unit", &one_shard()).unwrap();
    let kept = reg.alloc(key, 100, 64, S0).unwrap();
    let idle = reg.alloc(key, 9000, 64, S0).unwrap();
    reg.free(key, idle).unwrap();
    assert_eq!(dev.live_bytes(), 4096 + 12288);

    let b = reg.init_pool(key, "no-pool", &PoolOptions::default()).unwrap();
    assert!(Arc::ptr_eq(&reg.get(key).unwrap(), &b));
    assert!(a.is_retired());
    assert_eq!(dev.live_bytes(), 4096, "the retired pool returned its idle memory at once");
    assert_eq!(a.alloc(1, 1, S0).unwrap_err().status(), Status::WrongState);
    assert_eq!(reg.retired_pools(key), 1);
    drop(a);

    let fresh = reg.alloc(key, 300, 64, S0).unwrap();
    reg.free(key, kept).unwrap();
    assert_eq!(reg.retired_pools(key), 0, "the retired pool is gone with its last block");
    assert_eq!(dev.live_bytes(), 300, "only the new pool's block is held");
    reg.free(key, fresh).unwrap();
    assert_eq!(dev.live_blocks(), 0);
    let e = reg.free(key, fresh).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(e.message().contains("custom:1401"), "{}", e.message());
    reg.remove(key).unwrap();
    assert_eq!(reg.remove(key).unwrap_err().status(), Status::NotFound);
}

#[test]
fn a_retired_pool_freed_through_its_own_handle_holds_no_memory() {
    let key = custom(1405);
    let reg = registry();
    let dev = CountingAllocator::new();
    reg.register_allocator(key, dev.shared()).unwrap();
    let a = reg.init_pool(key, "page-unit", &one_shard()).unwrap();
    let kept = a.alloc(5000, 64, S0).unwrap();
    reg.init_pool(key, "caching", &PoolOptions::default()).unwrap();
    assert_eq!(reg.retired_pools(key), 1);
    // Back through the pool itself, not through the registry: page-unit
    // would cache it, but a retired pool hands it straight to the device.
    a.free(kept).unwrap();
    assert_eq!(dev.live_blocks(), 0, "the retired pool kept nothing");
    drop(a);
    // The next switch sweeps the finished pool out of the registry.
    reg.init_pool(key, "no-pool", &PoolOptions::default()).unwrap();
    assert_eq!(reg.retired_pools(key), 0);
    reg.remove(key).unwrap();
    assert_eq!(dev.live_blocks(), 0);
}

#[test]
fn registry_verbs_get_reset_remove() {
    let key = custom(1402);
    let reg = registry();
    let e = reg.get(key).err().unwrap();
    assert_eq!(e.status(), Status::NotFound);
    assert!(e.message().contains("custom:1402: register an allocator"), "{}", e.message());

    let dev = CountingAllocator::new();
    reg.register_allocator(key, dev.shared()).unwrap();
    let first = reg.get(key).unwrap();
    assert_eq!(first.strategy_name(), "page-unit", "RAF's default");
    assert!(Arc::ptr_eq(&first, &reg.get(key).unwrap()));
    assert_eq!(reg.reset(custom(1403)).unwrap_err().status(), Status::NotFound);

    let options = PoolOptions { limit: Some(1 << 20), shards: 2, ..PoolOptions::default() };
    reg.init_pool(key, "no-pool", &options).unwrap();
    assert!(first.is_retired());
    assert_eq!(reg.retired_pools(key), 0, "nothing was out: dropped at once");
    let p = reg.alloc(key, 64, 64, S0).unwrap();
    reg.reset(key).unwrap();
    let second = reg.get(key).unwrap();
    assert_eq!(second.strategy_name(), "no-pool");
    assert_eq!(second.options(), &options);
    assert_eq!(reg.retired_pools(key), 1);
    reg.free(key, p).unwrap();
    assert_eq!(reg.retired_pools(key), 0);
    assert_eq!(reg.init_pool(key, "no-such", &options).err().unwrap().status(), Status::NotFound);
    reg.remove(key).unwrap();
    assert_eq!(dev.live_blocks(), 0);

    let host = DeviceKey::new(DeviceType::Host, 1404);
    let p = reg.alloc(host, 10, 16, S0).unwrap();
    assert_eq!(reg.get(host).unwrap().allocator().name(), "host");
    reg.free(host, p).unwrap();
    reg.remove(host).unwrap();
    assert_eq!(DeviceType::from_name("cuda").unwrap(), DeviceType::Cuda);
    assert_eq!(DeviceType::from_value(3).unwrap_err().message(), "unknown device type 3 (0: host, 1: cuda, 2: custom)");
}

#[test]
fn a_dropped_pool_returns_its_device_memory() {
    let dev = CountingAllocator::new();
    let pool = page_unit(&dev, &PoolOptions::default());
    let p = pool.alloc(10, 8, S0).unwrap();
    pool.free(p).unwrap();
    let q = pool.alloc(20000, 8, S0).unwrap();
    pool.free(q).unwrap();
    drop(pool);
    assert_eq!((dev.allocs(), dev.frees(), dev.live_blocks()), (2, 2, 0));

    // Emptied, a pool lets go of its allocator.
    let weak = Arc::downgrade(&dev);
    drop(dev);
    assert!(weak.upgrade().is_none());

    // With a block still out, only idle memory goes back: the block stays
    // valid for whoever holds it, and so does the allocator it came from
    // (a C allocator is never told it is unused).
    let dev = CountingAllocator::new();
    let pool = page_unit(&dev, &PoolOptions::default());
    let out = pool.alloc(10, 8, S0).unwrap();
    let idle = pool.alloc(5000, 8, S0).unwrap();
    pool.free(idle).unwrap();
    drop(pool);
    assert_eq!((dev.live_blocks(), dev.frees()), (1, 1));
    let weak = Arc::downgrade(&dev);
    drop(dev);
    let kept = weak.upgrade().expect("the allocator of a block still out is kept");
    fill(out, 10, 1);
    assert!(holds(out, 10, 1));
    assert_eq!(kept.live_blocks(), 1);
    device::host().free(out, 4096, S0);
}

#[test]
fn every_built_in_strategy_serves_through_the_pool() {
    for &kind in StrategyKind::ALL {
        let dev = CountingAllocator::new();
        let pool = Pool::new(dev.shared(), kind, &one_shard()).unwrap();
        assert_eq!(pool.strategy_name(), kind.name());
        assert_eq!(Pool::by_name(dev.shared(), kind.name(), &one_shard()).unwrap().strategy_name(), kind.name());
        for _ in 0..3 {
            let blocks: Vec<_> = [100u64, 5000, 30_000].iter().map(|&n| (pool.alloc(n, 256, S0).unwrap(), n)).collect();
            for &(p, n) in &blocks {
                assert_eq!(p.addr() % 256, 0);
                fill(p, n, n as u8);
            }
            for (p, n) in blocks {
                assert!(holds(p, n, n as u8), "{kind:?}");
                pool.free(p).unwrap();
            }
            pool.end_iteration().unwrap();
        }
        let st = pool.stats();
        assert_eq!((st.allocs, st.frees, st.active_blocks, st.allocated_bytes), (9, 9, 0, 0), "{kind:?}");
        assert_eq!(st.reserved_bytes, dev.live_bytes(), "{kind:?}");
        if kind == StrategyKind::Replay {
            assert!(st.served_from_plan > 0, "{st:?}");
        }
        drop(pool);
        assert_eq!(dev.live_blocks(), 0, "{kind:?}: a dropped pool returns everything");
    }
}

#[test]
fn pools_and_the_registry_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Pool>();
    send_sync::<Registry>();
    send_sync::<Arc<Pool>>();
}

#[test]
fn the_cuda_default_needs_the_runtime_and_the_device() {
    let reg = registry();
    let e = reg.get(DeviceKey::new(DeviceType::Cuda, 7)).err().unwrap();
    assert_eq!(e.status(), Status::NotFound);
    // No CUDA runtime here, or no 8th GPU: the loader's NotFound names the device.
    assert!(e.message().contains("cuda:7"), "{}", e.message());
}

/// `caching` or `page-unit` with the pool's hot block turned off: every
/// call reaches the strategy, as before the hot block existed.
struct EveryCall(Box<dyn Strategy>);

impl Strategy for EveryCall {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn alloc(&mut self, request: Request, device: &Device) -> crate::status::Result<Served> {
        self.0.alloc(request, device)
    }
    fn free(&mut self, ptr: DevicePtr, device: &Device) -> std::result::Result<strategy::Freed, strategy::NotLive> {
        self.0.free(ptr, device)
    }
    fn release_cached(&mut self, device: &Device) -> u64 {
        self.0.release_cached(device)
    }
    fn streams_synchronized(&mut self) {
        self.0.streams_synchronized()
    }
    fn cache_figures(&self) -> strategy::CacheFigures {
        self.0.cache_figures()
    }
    fn release_all(&mut self, device: &Device) {
        self.0.release_all(device)
    }
}

#[test]
fn the_hot_block_changes_no_figure_of_caching_or_page_unit() {
    for kind in [StrategyKind::Caching, StrategyKind::PageUnit] {
        let (dev_hot, dev_plain) = (CountingAllocator::new(), CountingAllocator::new());
        let options = one_shard();
        let hot = Pool::new(dev_hot.shared(), kind, &options).unwrap();
        let factory: StrategyFactory =
            Arc::new(move |o: &PoolOptions| Box::new(EveryCall(pool::builtin(kind, o))) as Box<dyn Strategy>);
        let plain = Pool::with_factory(dev_plain.shared(), factory, &options).unwrap();
        // Pairs repeated, sizes changing, other blocks out meanwhile, a
        // second stream, the figures read and idle memory released between.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut out: Vec<(DevicePtr, DevicePtr)> = Vec::new();
        for step in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let size = [64u64, 64, 64, 3000, 5000, 1 << 20, 3 << 20][(x % 7) as usize];
            let stream = Stream((x >> 8) as usize % 2);
            match (x >> 16) % 8 {
                0..=3 => {
                    // A pair of one size, the runtime's scratch pattern.
                    for _ in 0..3 {
                        let (a, b) = (hot.alloc(size, 256, stream).unwrap(), plain.alloc(size, 256, stream).unwrap());
                        hot.free(a).unwrap();
                        plain.free(b).unwrap();
                    }
                }
                4 | 5 => out.push((hot.alloc(size, 256, stream).unwrap(), plain.alloc(size, 256, stream).unwrap())),
                6 if !out.is_empty() => {
                    let (a, b) = out.swap_remove((x >> 24) as usize % out.len());
                    hot.free(a).unwrap();
                    plain.free(b).unwrap();
                }
                _ => match (x >> 24) % 3 {
                    0 => assert_eq!(hot.release_cached(), plain.release_cached(), "step {step}"),
                    1 => {
                        hot.streams_synchronized();
                        plain.streams_synchronized();
                    }
                    _ => {}
                },
            }
            assert_eq!(hot.stats(), plain.stats(), "{kind:?} step {step}");
            assert_eq!((dev_hot.allocs(), dev_hot.frees()), (dev_plain.allocs(), dev_plain.frees()), "step {step}");
        }
        for (a, b) in out {
            hot.free(a).unwrap();
            plain.free(b).unwrap();
        }
        assert_eq!(hot.stats(), plain.stats());
    }
}

#[test]
fn the_hot_block_is_freed_once_from_any_thread_and_given_back() {
    for kind in [StrategyKind::Caching, StrategyKind::PageUnit] {
        let dev = CountingAllocator::new();
        let pool =
            Arc::new(Pool::new(dev.shared(), kind, &PoolOptions { shards: 4, ..PoolOptions::default() }).unwrap());
        let p = pool.alloc(100, 256, S0).unwrap();
        pool.free(p).unwrap();
        let before = pool.stats();
        // Freed already, idle in the pool: a second free is refused and
        // changes nothing.
        let e = pool.free(p).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument, "{}", e.message());
        assert_eq!(pool.stats(), before);
        assert_eq!(before.cached_blocks, 1, "{kind:?}: the idle block counts as cached");
        // The identical request takes it back; another thread frees it
        // (its home shard is another), once.
        let q = pool.alloc(100, 256, S0).unwrap();
        assert_eq!(q, p);
        assert_eq!(dev.allocs(), 1);
        let other = pool.clone();
        std::thread::spawn(move || {
            other.free(q).unwrap();
            assert_eq!(other.free(q).unwrap_err().status(), Status::InvalidArgument);
        })
        .join()
        .unwrap();
        let st = pool.stats();
        assert_eq!((st.active_blocks, st.allocs, st.frees), (0, 2, 2));
        // Released: the device has it back, and the same request asks the
        // device again.
        assert!(pool.release_cached() > 0);
        assert_eq!(dev.live_blocks(), 0, "{kind:?}");
        let r = pool.alloc(100, 256, S0).unwrap();
        assert_eq!(dev.allocs(), 2);
        pool.free(r).unwrap();
        // Retired (or dropped) with the block idle: all of it goes back.
        pool.retire();
        assert_eq!(dev.live_blocks(), 0, "{kind:?}: retire returns the idle hot block");
        assert_eq!(pool.alloc(100, 256, S0).unwrap_err().status(), Status::WrongState, "a retired pool serves nothing");
    }
    let dev = CountingAllocator::new();
    let pool = Pool::new(dev.shared(), StrategyKind::Caching, &PoolOptions::default()).unwrap();
    let p = pool.alloc(4096, 256, S0).unwrap();
    pool.free(p).unwrap();
    drop(pool);
    assert_eq!(dev.live_blocks(), 0, "a dropped pool returns its idle hot block");
}
