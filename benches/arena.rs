//! The cost of arena allocations through the C ABI (`nnm_arena_*`), as a C
//! runtime calls them, with recording off and on, and the safe-Rust core
//! beside them for the difference.
//!
//! Persistent: 16-byte blocks from a fresh arena, `PERSISTENT_CHUNK` per
//! arena (a model's init); making and freeing the arena is not timed.
//! Measurements are long (5 s each) because single-digit-nanosecond
//! medians on a shared 2-core VM drift by a few ns between short runs.
//! Temp: `TEMP_SCOPE` blocks held at once (a kernel's scratch), then
//! released and reset outside the timed part.
//!
//! Run: `cargo bench --bench arena` (about 20 s). `scripts/bench.sh` copies
//! the medians (ns per call) into BENCHMARKS.md.

use std::ffi::c_void;
use std::hint::black_box;
use std::ptr;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use nnmem::arena::{Arena, ArenaOptions, Category};
use nnmem::ffi::arena::{
    nnm_arena, nnm_arena_alloc_persistent, nnm_arena_alloc_temp, nnm_arena_free, nnm_arena_new_owned,
    nnm_arena_release_temp, nnm_arena_reset_temp, NNM_ARENA_RECORDING,
};
use nnmem::Status;

/// Persistent allocations per arena: a model's init (op data, nodes,
/// tensor structs) makes a few hundred.
const PERSISTENT_CHUNK: u64 = 256;
/// Temp allocations held at once before they are released and reset.
const TEMP_SCOPE: u64 = 64;
/// Bytes per allocation (a multiple of the default alignment: no padding).
const SIZE: usize = 16;

#[derive(Copy, Clone)]
enum Kind {
    Persistent,
    Temp,
    /// A temp allocation and its release (LIFO), as a scoped scratch.
    TempPair,
}

fn new_arena(flags: u32, len: usize) -> *mut nnm_arena {
    let mut arena = ptr::null_mut();
    assert_eq!(unsafe { nnm_arena_new_owned(len, 0, flags, &mut arena) }, Status::Ok);
    arena
}

/// Times `iters` calls of `kind` through the C ABI.
fn time_ffi(iters: u64, kind: Kind, flags: u32) -> Duration {
    let category = match kind {
        Kind::Persistent => Category::OpData.id(),
        Kind::Temp | Kind::TempPair => Category::TempScratch.id(),
    };
    let chunk = if matches!(kind, Kind::Persistent) { PERSISTENT_CHUNK } else { TEMP_SCOPE };
    let mut held: Vec<*mut c_void> = Vec::with_capacity(TEMP_SCOPE as usize);
    let mut arena = new_arena(flags, (PERSISTENT_CHUNK.max(TEMP_SCOPE) as usize + 1) * SIZE);
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(chunk);
        let mut p: *mut c_void = ptr::null_mut();
        let start = Instant::now();
        for _ in 0..n {
            let status = unsafe {
                match kind {
                    Kind::Persistent => nnm_arena_alloc_persistent(black_box(arena), SIZE, 0, category, &mut p),
                    Kind::Temp => nnm_arena_alloc_temp(black_box(arena), SIZE, 0, category, &mut p),
                    Kind::TempPair => {
                        nnm_arena_alloc_temp(black_box(arena), SIZE, 0, category, &mut p);
                        nnm_arena_release_temp(arena, p)
                    }
                }
            };
            black_box((status, p));
            if matches!(kind, Kind::Temp) {
                held.push(p);
            }
        }
        total += start.elapsed();
        // Untimed: end the temp scope, or start a fresh arena for the tail.
        unsafe {
            match kind {
                Kind::Persistent => {
                    nnm_arena_free(arena);
                    arena = new_arena(flags, (PERSISTENT_CHUNK as usize + 1) * SIZE);
                }
                Kind::Temp | Kind::TempPair => {
                    for q in held.drain(..).rev() {
                        assert_eq!(nnm_arena_release_temp(arena, q), Status::Ok);
                    }
                    assert_eq!(nnm_arena_reset_temp(arena), Status::Ok);
                }
            }
        }
        left -= n;
    }
    unsafe { nnm_arena_free(arena) };
    total
}

/// Times `iters` calls of `kind` on the safe core (no C ABI).
fn time_safe(iters: u64, kind: Kind) -> Duration {
    let chunk = if matches!(kind, Kind::Persistent) { PERSISTENT_CHUNK } else { TEMP_SCOPE };
    let mut held = Vec::with_capacity(TEMP_SCOPE as usize);
    let mut arena = Arena::dry_run(ArenaOptions::default()).unwrap();
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(chunk);
        let start = Instant::now();
        for _ in 0..n {
            let r = match kind {
                Kind::Persistent => black_box(&mut arena).alloc_persistent(SIZE, 0, Category::OpData.id()),
                Kind::Temp | Kind::TempPair => black_box(&mut arena).alloc_temp(SIZE, 0, Category::TempScratch.id()),
            };
            if let Ok(addr) = black_box(r) {
                if !matches!(kind, Kind::Persistent) {
                    held.push(addr);
                }
            }
        }
        total += start.elapsed();
        if matches!(kind, Kind::Persistent) {
            arena = Arena::dry_run(ArenaOptions::default()).unwrap();
        } else {
            for addr in held.drain(..).rev() {
                arena.release_temp(addr).unwrap();
            }
            arena.reset_temp().unwrap();
        }
        left -= n;
    }
    total
}

fn bench_arena(c: &mut Criterion) {
    let mut group = c.benchmark_group("arena");
    group.warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5)).sample_size(200);
    for (name, kind) in [("alloc_persistent", Kind::Persistent), ("alloc_temp", Kind::Temp)] {
        group.bench_function(format!("nnm_arena_{name}"), |b| b.iter_custom(|iters| time_ffi(iters, kind, 0)));
        group.bench_function(format!("nnm_arena_{name} (recording)"), |b| {
            b.iter_custom(|iters| time_ffi(iters, kind, NNM_ARENA_RECORDING))
        });
        group.bench_function(format!("Arena::{name} (safe Rust, no FFI)"), |b| {
            b.iter_custom(|iters| time_safe(iters, kind))
        });
    }
    group.bench_function("nnm_arena_alloc_temp + nnm_arena_release_temp", |b| {
        b.iter_custom(|iters| time_ffi(iters, Kind::TempPair, 0))
    });
    group.finish();
}

criterion_group!(benches, bench_arena);
criterion_main!(benches);
