//! The registry under concurrency: threads allocate and free through
//! `Registry::alloc` / `Registry::free` while another thread switches the
//! device's pool (init, reset, remove, get) every 64 allocations. An
//! allocation racing a switch is served by the old pool or the new one, never
//! refused; every block handed out is taken back; the device gets every
//! byte back once the last pool is removed.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::testing::{fill, holds, CountingAllocator};
use super::*;

const S0: Stream = Stream::DEFAULT;
const THREADS: usize = 4;
/// Allocations per thread: enough that every run before the fix showed
/// refused allocations, and most showed lost blocks. scripts/tsan.sh runs
/// it all; scripts/miri.sh skips the test (too slow to interpret).
const OPS: usize = 1_000_000;
/// Blocks a thread holds at once: allocations and frees interleave, and
/// blocks out across a switch keep retired pools waiting.
const WINDOW: usize = 8;
/// One switch cycle (init, reset, remove, get) per this many allocations
/// of all the threads together.
const STRIDE: usize = 64;
const CYCLES: usize = THREADS * OPS / STRIDE;
/// Bytes at the start of each block filled with a pattern and checked
/// before the block goes back: two blocks handed out over each other
/// show; filling whole blocks would spend the run in memset, away from
/// the registry's windows.
const PATTERN: u64 = 64;
const STRATEGIES: [&str; 3] = ["page-unit", "caching", "no-pool"];

/// What went wrong on one thread: counts and the first message of each.
#[derive(Default)]
struct Refusals {
    allocs: usize,
    frees: usize,
    damaged: usize,
    first: Vec<String>,
}

impl Refusals {
    fn note(&mut self, what: &str, e: &crate::status::Error) {
        if self.first.len() < 4 {
            self.first.push(format!("{what}: {:?} {}", e.status(), e.message()));
        }
    }
}

/// The allocations a worker has yet to count in `done`: counted when it
/// ends, even by a panic, so that the switching thread never waits for
/// allocations that will not come.
struct Pace<'a> {
    done: &'a AtomicUsize,
    left: usize,
}

impl Pace<'_> {
    fn one(&mut self) {
        self.left -= 1;
        self.done.fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for Pace<'_> {
    fn drop(&mut self) {
        self.done.fetch_add(self.left, Ordering::Relaxed);
    }
}

fn worker(reg: &Registry, key: DeviceKey, t: usize, done: &AtomicUsize) -> Refusals {
    let mut pace = Pace { done, left: OPS };
    let mut out = Refusals::default();
    let mut held: [Option<(DevicePtr, u64, u8)>; WINDOW] = [None; WINDOW];
    let mut rng = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(t as u64 + 1);
    for n in 0..OPS {
        let k = n % WINDOW;
        if let Some((p, size, seed)) = held[k].take() {
            out.damaged += usize::from(!holds(p, size.min(PATTERN), seed));
            if let Err(e) = reg.free(key, p) {
                out.frees += 1;
                out.note("free", &e);
            }
        }
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        // 1 B to a little over two pages: page-unit blocks of 1 to 3 pages.
        let size = 1 + rng % 9000;
        let seed = (rng >> 40) as u8;
        match reg.alloc(key, size, 64, S0) {
            Ok(p) => {
                fill(p, size.min(PATTERN), seed);
                held[k] = Some((p, size, seed));
            }
            Err(e) => {
                out.allocs += 1;
                out.note("alloc", &e);
            }
        }
        pace.one();
    }
    for (p, size, seed) in held.into_iter().flatten() {
        out.damaged += usize::from(!holds(p, size.min(PATTERN), seed));
        if let Err(e) = reg.free(key, p) {
            out.frees += 1;
            out.note("free", &e);
        }
    }
    out
}

/// Makes `CYCLES` cycles of init (each strategy in turn, one shard: the
/// threads contend for its lock, which widens the windows a switch can
/// fall into), reset, remove, get, each once the workers made `STRIDE`
/// more allocations. Paced by their count, not by time: a switching
/// thread that never waits starves an allocating thread of the
/// registry's lock (std's Mutex is not fair), and a run took minutes. In
/// this order every verb's outcome is fixed: only this thread removes, so
/// reset and remove always find a pool.
fn switcher(reg: &Registry, key: DeviceKey, done: &AtomicUsize) {
    let options = PoolOptions { shards: 1, ..PoolOptions::default() };
    for cycle in 0..CYCLES {
        while done.load(Ordering::Relaxed) < cycle * STRIDE {
            std::thread::yield_now();
        }
        reg.init_pool(key, STRATEGIES[cycle % STRATEGIES.len()], &options).unwrap();
        reg.reset(key).unwrap();
        reg.remove(key).unwrap();
        reg.get(key).unwrap();
    }
}

#[test]
fn allocations_racing_switches_are_served_and_every_block_comes_back() {
    let key = DeviceKey::new(DeviceType::Custom, 1501);
    let reg = registry();
    let dev = CountingAllocator::new();
    reg.register_allocator(key, dev.shared()).unwrap();
    let done = AtomicUsize::new(0);
    let results = std::thread::scope(|s| {
        let done = &done;
        let workers: Vec<_> = (0..THREADS).map(|t| s.spawn(move || worker(reg, key, t, done))).collect();
        s.spawn(move || switcher(reg, key, done));
        workers.into_iter().map(|w| w.join().unwrap()).collect::<Vec<Refusals>>()
    });
    let total = |f: fn(&Refusals) -> usize| results.iter().map(f).sum::<usize>();
    let first: Vec<&String> = results.iter().flat_map(|r| &r.first).collect();
    assert_eq!(
        (total(|r| r.allocs), total(|r| r.frees), total(|r| r.damaged)),
        (0, 0, 0),
        "refused allocations, refused frees, damaged blocks of {} ({CYCLES} switch cycles); first: {first:#?}",
        THREADS * OPS
    );
    reg.remove(key).unwrap();
    assert_eq!(reg.retired_pools(key), 0, "every retired pool went with its last block");
    assert_eq!(
        (dev.live_blocks(), dev.live_bytes()),
        (0, 0),
        "device blocks never returned ({} device allocations, {} frees)",
        dev.allocs(),
        dev.frees()
    );
    assert_eq!(dev.allocs(), dev.frees());
}
