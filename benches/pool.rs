//! Memory pools through the C ABI (`nnm_pool_*`), as a C runtime calls
//! them, beside glibc `malloc`/`free` and mimalloc.
//!
//! - `pool/<allocator>/<size>`: one cached alloc+free pair, one thread, at
//!   64 B, 4 KiB, 1 MiB and 16 MiB. The pools run at their default
//!   alignment (256 B); `malloc` and mimalloc at theirs (16 B). Every pool
//!   is warmed first, so the pair never reaches the device: `page-unit` and
//!   `caching` hand back the block they cached, `replay` serves the pair
//!   from its plan. A replay iteration is `REPLAY_PAIRS` pairs followed by
//!   `nnm_pool_end_iteration` (its cost is in the timing, spread over the
//!   pairs); it is recorded and planned once, untimed.
//! - `pool-core/<strategy>/64 B`: the same pair on the safe core's `Pool`
//!   (no C ABI), for the difference.
//! - `pool/jemalloc/<size>`: jemalloc's `mallocx`/`dallocx`, from the
//!   system's `libjemalloc.so.2` (loaded at run time, so that building the
//!   tests needs no jemalloc; `scripts/bench.sh` installs it and gives
//!   glibc the static TLS room jemalloc needs when loaded late); left out
//!   when it cannot be loaded.
//! - `pool-floor/lock`: two calls that each only take and release an
//!   uncontended spin lock (one compare-and-swap, one store): what any
//!   thread-safe pool pays for a pair before doing anything.
//! - `pool-stream/<allocator>/<n>`: the random stream of `pool/stream.rs`
//!   on `n` threads (1, 2, 8) sharing one allocator: per thread, 64 live
//!   blocks of 16 B to 16 KiB, each step a free and an alloc. The time is
//!   of one step on every thread (the wall time of the slowest thread);
//!   ops per second = 2n / time. One pool per allocator and thread count
//!   for the whole measurement, as a runtime keeps its pool; `replay`,
//!   told of no iteration, records its first 2^20 requests and then serves
//!   from its fallback.
//! - `pool-threads/<strategy>/<n>`: `n` threads (1, 2, 8) share one pool,
//!   each running its own loop of 4 KiB alloc+free pairs, the same number
//!   per thread; the time is the wall time of the slowest, so pairs per
//!   second of the pool = n / (criterion's time per iteration).
//!
//! After each measurement the pool's statistics are checked: no device
//! call beyond the warm-up (and for `replay`, every timed pair served from
//! the plan), so a figure can only be a cached pair.
//!
//! Run: `cargo bench --bench pool` (about 90 s). `scripts/bench.sh` copies
//! the medians into BENCHMARKS.md, with the ratios.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::{c_int, c_void};
use std::hint::black_box;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};

#[path = "pool/stream.rs"]
mod stream;
use mimalloc::MiMalloc;
use nnmem::ffi::pool::options::nnm_pool_stats;
use nnmem::ffi::pool::{
    nnm_pool, nnm_pool_alloc, nnm_pool_dealloc, nnm_pool_end_iteration, nnm_pool_free, nnm_pool_get_stats, nnm_pool_new,
};
use nnmem::pool::{self as safe, StrategyKind};
use nnmem::Status;

/// The sizes of the single-thread pairs.
const SIZES: [(usize, &str); 4] = [(64, "64 B"), (4096, "4 KiB"), (1 << 20, "1 MiB"), (16 << 20, "16 MiB")];
/// Pairs in one replay iteration.
const REPLAY_PAIRS: u64 = 64;
/// The size of the multi-thread pairs.
const THREAD_SIZE: usize = 4096;
/// The alignment `nnm_pool_alloc` applies for 0, given to the safe core.
const CORE_ALIGNMENT: u64 = nnmem::ffi::pool::NNM_POOL_DEFAULT_ALIGNMENT as u64;

/// A pool handle freed on drop.
struct Pool(*mut nnm_pool);

// SAFETY: pools are thread-safe (every call but nnm_pool_free may come
// from any thread at once); the handle is freed only by its owner's drop,
// after every thread that used it has been joined.
unsafe impl Sync for Pool {}

impl Drop for Pool {
    fn drop(&mut self) {
        unsafe { nnm_pool_free(self.0) }
    }
}

/// What the timing loops need of a pool: the C ABI's handle, or the safe
/// core's `Pool` for the difference.
trait Pairs: Sync {
    fn make(strategy: StrategyKind) -> Self;
    /// One alloc+free pair at full speed; the statuses are checked after
    /// the run, through the statistics.
    fn pair(&self, size: usize);
    fn end_iteration(&self);
    /// (allocs, frees, device allocs, served from plan).
    fn counts(&self) -> [u64; 4];
}

impl Pairs for Pool {
    fn make(strategy: StrategyKind) -> Pool {
        let mut p = ptr::null_mut();
        assert_eq!(unsafe { nnm_pool_new(ptr::null(), strategy as u32, ptr::null(), &mut p) }, Status::Ok);
        Pool(p)
    }

    #[inline(always)]
    fn pair(&self, size: usize) {
        let mut out: *mut c_void = ptr::null_mut();
        unsafe {
            black_box(nnm_pool_alloc(black_box(self.0), size, 0, ptr::null_mut(), &mut out));
            black_box(nnm_pool_dealloc(self.0, black_box(out)));
        }
    }

    fn end_iteration(&self) {
        assert_eq!(unsafe { nnm_pool_end_iteration(self.0) }, Status::Ok);
    }

    fn counts(&self) -> [u64; 4] {
        // SAFETY: all-zero integers are a valid value of the plain C struct.
        let mut s: nnm_pool_stats = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { nnm_pool_get_stats(self.0, &mut s) }, Status::Ok);
        [s.allocs, s.frees, s.device_allocs, s.served_from_plan]
    }
}

impl Pairs for safe::Pool {
    fn make(strategy: StrategyKind) -> safe::Pool {
        safe::Pool::new(safe::device::host(), strategy, &safe::PoolOptions::default()).expect("a pool")
    }

    #[inline(always)]
    fn pair(&self, size: usize) {
        if let Ok(p) = black_box(self).alloc(size as u64, CORE_ALIGNMENT, safe::Stream::DEFAULT) {
            let _ = black_box(self.free(black_box(p)));
        }
    }

    fn end_iteration(&self) {
        safe::Pool::end_iteration(self).expect("end_iteration");
    }

    fn counts(&self) -> [u64; 4] {
        let s = self.stats();
        [s.allocs, s.frees, s.device_allocs, s.served_from_plan]
    }
}

/// Times `iters` pairs of `size` through a warmed pool of `strategy`, and
/// checks that each succeeded and none reached the device.
fn time_pool<P: Pairs>(strategy: StrategyKind, size: usize, iters: u64) -> Duration {
    let pool = P::make(strategy);
    let replay = strategy == StrategyKind::Replay;
    // Warm-up (untimed): one block cached; for replay, one iteration
    // recorded and planned.
    for _ in 0..if replay { REPLAY_PAIRS } else { 1 } {
        pool.pair(size);
    }
    pool.end_iteration();
    let before = pool.counts();
    let started = Instant::now();
    if replay {
        let mut left = iters;
        while left > 0 {
            for _ in 0..REPLAY_PAIRS {
                pool.pair(size);
            }
            pool.end_iteration();
            left = left.saturating_sub(REPLAY_PAIRS);
        }
    } else {
        for _ in 0..iters {
            pool.pair(size);
        }
    }
    let elapsed = started.elapsed();
    let after = pool.counts();
    let done = if replay { iters.div_ceil(REPLAY_PAIRS) * REPLAY_PAIRS } else { iters };
    let name = strategy.name();
    let [allocs, frees, device_allocs, from_plan] = [0, 1, 2, 3].map(|i| after[i] - before[i]);
    assert_eq!((allocs, frees), (done, done), "{name}: every allocation and free succeeded");
    assert_eq!(device_allocs, 0, "{name}: no device call after the warm-up");
    if replay {
        assert_eq!(from_plan, done, "replay: every pair served from the plan");
    }
    // Replay runs whole iterations: the time of `iters` pairs.
    elapsed.mul_f64(iters as f64 / done as f64)
}

fn time_malloc(size: usize, iters: u64) -> Duration {
    let started = Instant::now();
    for _ in 0..iters {
        unsafe {
            let p = libc::malloc(black_box(size));
            libc::free(black_box(p));
        }
    }
    started.elapsed()
}

/// jemalloc's `mallocx` and `dallocx`, from the system library.
#[derive(Copy, Clone)]
struct Jemalloc {
    mallocx: unsafe extern "C" fn(usize, c_int) -> *mut c_void,
    dallocx: unsafe extern "C" fn(*mut c_void, c_int),
}

impl Jemalloc {
    fn load() -> Option<Jemalloc> {
        static LOADED: std::sync::OnceLock<Option<Jemalloc>> = std::sync::OnceLock::new();
        *LOADED.get_or_init(|| unsafe {
            let handle = libc::dlopen(c"libjemalloc.so.2".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
            if handle.is_null() {
                // Its TLS is initial-exec: loaded late, it needs the static
                // TLS surplus that scripts/bench.sh asks glibc for.
                let why = std::ffi::CStr::from_ptr(libc::dlerror()).to_string_lossy();
                eprintln!(
                    "pool bench: jemalloc left out: {why} (apt-get install libjemalloc2; run with \
                     GLIBC_TUNABLES=glibc.rtld.optional_static_tls=65536, as scripts/bench.sh does)"
                );
                return None;
            }
            let m = libc::dlsym(handle, c"mallocx".as_ptr());
            let d = libc::dlsym(handle, c"dallocx".as_ptr());
            if m.is_null() || d.is_null() {
                return None;
            }
            // jemalloc's signatures (jemalloc/jemalloc.h).
            Some(Jemalloc {
                mallocx: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(usize, c_int) -> *mut c_void>(m),
                dallocx: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_void, c_int)>(d),
            })
        })
    }
}

fn time_jemalloc(j: Jemalloc, size: usize, iters: u64) -> Duration {
    let started = Instant::now();
    for _ in 0..iters {
        unsafe {
            let p = (j.mallocx)(black_box(size), 0);
            (j.dallocx)(black_box(p), 0);
        }
    }
    started.elapsed()
}

/// The floor: one uncontended lock taken and released per call.
static FLOOR_LOCK: AtomicBool = AtomicBool::new(false);

#[inline(never)]
extern "C" fn floor_call(out: *mut *mut c_void) -> c_int {
    while FLOOR_LOCK.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {}
    unsafe { out.write(black_box(ptr::null_mut())) };
    FLOOR_LOCK.store(false, Ordering::Release);
    0
}

fn time_floor(iters: u64) -> Duration {
    let mut out: *mut c_void = ptr::null_mut();
    let started = Instant::now();
    for _ in 0..iters {
        black_box(floor_call(black_box(&mut out)));
        black_box(floor_call(black_box(&mut out)));
    }
    started.elapsed()
}

/// The stream's allocators.
struct PoolAllocator(Pool);

impl stream::Allocator for PoolAllocator {
    #[inline]
    fn alloc(&self, size: usize) -> *mut u8 {
        let mut out: *mut c_void = ptr::null_mut();
        let status = unsafe { nnm_pool_alloc(self.0 .0, size, 0, ptr::null_mut(), &mut out) };
        if status == Status::Ok {
            out.cast()
        } else {
            ptr::null_mut()
        }
    }
    #[inline]
    fn free(&self, p: *mut u8, _size: usize) {
        assert_eq!(unsafe { nnm_pool_dealloc(self.0 .0, p.cast()) }, Status::Ok);
    }
}

struct Malloc;

impl stream::Allocator for Malloc {
    #[inline]
    fn alloc(&self, size: usize) -> *mut u8 {
        unsafe { libc::malloc(size).cast() }
    }
    #[inline]
    fn free(&self, p: *mut u8, _size: usize) {
        unsafe { libc::free(p.cast()) }
    }
}

struct Mi;

impl stream::Allocator for Mi {
    #[inline]
    fn alloc(&self, size: usize) -> *mut u8 {
        unsafe { MiMalloc.alloc(Layout::from_size_align_unchecked(size, 16)) }
    }
    #[inline]
    fn free(&self, p: *mut u8, size: usize) {
        unsafe { MiMalloc.dealloc(p, Layout::from_size_align_unchecked(size, 16)) }
    }
}

impl stream::Allocator for Jemalloc {
    #[inline]
    fn alloc(&self, size: usize) -> *mut u8 {
        unsafe { (self.mallocx)(size, 0).cast() }
    }
    #[inline]
    fn free(&self, p: *mut u8, _size: usize) {
        unsafe { (self.dallocx)(p.cast(), 0) }
    }
}

/// `threads` threads run `iters` steps of their streams on `a`; the wall
/// time from a common start (every thread's slots filled) to the last
/// thread's end.
fn time_stream(a: &dyn stream::Allocator, threads: usize, iters: u64) -> Duration {
    let start = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let start = &start;
                s.spawn(move || {
                    let mut st = stream::Stream::new(t);
                    st.fill(a);
                    start.wait();
                    for _ in 0..iters {
                        st.step(a);
                    }
                    let done = Instant::now();
                    st.drain(a);
                    done
                })
            })
            .collect();
        start.wait();
        let started = Instant::now();
        workers.into_iter().map(|w| w.join().expect("worker")).max().expect("a thread") - started
    })
}

fn time_mimalloc(size: usize, iters: u64) -> Duration {
    let layout = Layout::from_size_align(size, 16).expect("valid layout");
    let started = Instant::now();
    for _ in 0..iters {
        unsafe {
            let p = MiMalloc.alloc(black_box(layout));
            MiMalloc.dealloc(black_box(p), layout);
        }
    }
    started.elapsed()
}

/// `threads` threads sharing one warmed pool, `iters` pairs each; the wall
/// time from a common start to the last thread's end.
fn time_threads(strategy: StrategyKind, threads: usize, iters: u64) -> Duration {
    let pool = <Pool as Pairs>::make(strategy);
    let start = Barrier::new(threads + 1);
    let elapsed = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    // Warm this thread's shard, untimed.
                    pool.pair(THREAD_SIZE);
                    start.wait();
                    for _ in 0..iters {
                        pool.pair(THREAD_SIZE);
                    }
                })
            })
            .collect();
        start.wait();
        let started = Instant::now();
        for w in workers {
            w.join().expect("worker");
        }
        started.elapsed()
    });
    let [allocs, frees, device_allocs, _] = pool.counts();
    let pairs = threads as u64 * (iters + 1);
    assert_eq!((allocs, frees), (pairs, pairs), "{}: every pair succeeded", strategy.name());
    assert!(device_allocs <= threads as u64, "{}: at most one device block per thread", strategy.name());
    elapsed
}

fn bench_pool(c: &mut Criterion) {
    let mut group = c.benchmark_group("pool");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    for (size, label) in SIZES {
        for strategy in [StrategyKind::PageUnit, StrategyKind::Caching, StrategyKind::Replay] {
            group.bench_function(format!("{}/{label}", strategy.name()), |b| {
                b.iter_custom(|iters| time_pool::<Pool>(strategy, size, iters))
            });
        }
        group.bench_function(format!("malloc/{label}"), |b| b.iter_custom(|iters| time_malloc(size, iters)));
        group.bench_function(format!("mimalloc/{label}"), |b| b.iter_custom(|iters| time_mimalloc(size, iters)));
        if let Some(j) = Jemalloc::load() {
            group.bench_function(format!("jemalloc/{label}"), |b| b.iter_custom(|iters| time_jemalloc(j, size, iters)));
        }
    }
    group.finish();

    let mut group = c.benchmark_group("pool-floor");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    group.bench_function("lock", |b| b.iter_custom(time_floor));
    group.finish();

    let mut group = c.benchmark_group("pool-stream");
    group.warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3)).sample_size(30);
    for threads in [1usize, 2, 8] {
        for strategy in [StrategyKind::PageUnit, StrategyKind::Caching, StrategyKind::Replay] {
            let pool = PoolAllocator(<Pool as Pairs>::make(strategy));
            group.bench_function(format!("{}/{threads}", strategy.name()), |b| {
                b.iter_custom(|iters| time_stream(&pool, threads, iters))
            });
            let [allocs, frees, ..] = pool.0.counts();
            assert_eq!(allocs, frees, "{}: every block of the stream came back", strategy.name());
        }
        group.bench_function(format!("malloc/{threads}"), |b| {
            b.iter_custom(|iters| time_stream(&Malloc, threads, iters))
        });
        group
            .bench_function(format!("mimalloc/{threads}"), |b| b.iter_custom(|iters| time_stream(&Mi, threads, iters)));
        if let Some(j) = Jemalloc::load() {
            group.bench_function(format!("jemalloc/{threads}"), |b| {
                b.iter_custom(|iters| time_stream(&j, threads, iters))
            });
        }
    }
    group.finish();

    // The safe core alone (no C ABI), at one size, for the difference.
    let mut group = c.benchmark_group("pool-core");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    for strategy in [StrategyKind::PageUnit, StrategyKind::Caching, StrategyKind::Replay] {
        group.bench_function(format!("{}/64 B", strategy.name()), |b| {
            b.iter_custom(|iters| time_pool::<safe::Pool>(strategy, 64, iters))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("pool-threads");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    for strategy in [StrategyKind::PageUnit, StrategyKind::Caching] {
        for threads in [1usize, 2, 8] {
            group.bench_function(format!("{}/{threads}", strategy.name()), |b| {
                b.iter_custom(|iters| time_threads(strategy, threads, iters))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_pool);
criterion_main!(benches);
