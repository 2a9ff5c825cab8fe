//! The cost of crossing the C ABI: each `nnm_*` export checks its pointers,
//! checks the handle's tag and runs its body inside `catch_unwind`, then
//! maps the result to an `nnm_status`. The calls are made from Rust through
//! the same `extern "C"` functions a C program links against.
//!
//! Run: `cargo bench --bench ffi` (about 20 s). `scripts/bench.sh` copies
//! the medians (ns per call) into BENCHMARKS.md.

use std::hint::black_box;
use std::ptr;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use nnmem::ffi::nnm_status_str;
use nnmem::ffi::plan::{
    nnm_planner, nnm_planner_add_buffer, nnm_planner_buffer_count, nnm_planner_free, nnm_planner_lower_bound,
    nnm_planner_new, nnm_planner_reset,
};
use nnmem::ffi::status::nnm_status;
use nnmem::plan::{Lifetime, Planner};

/// Buffers added to one planner before `nnm_planner_add_buffer` resets it,
/// so the planner stays small and its memory stays bounded.
const RESET_EVERY: u64 = 4096;

/// A planner handle freed on drop.
struct Handle(*mut nnm_planner);

impl Handle {
    fn new() -> Self {
        let mut p = ptr::null_mut();
        assert_eq!(unsafe { nnm_planner_new(&mut p) }, nnm_status::NNM_OK);
        Handle(p)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        unsafe { nnm_planner_free(self.0) }
    }
}

fn bench_ffi(c: &mut Criterion) {
    let mut group = c.benchmark_group("ffi");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));

    // A static string from a table: no guard, the floor of any export.
    group
        .bench_function("nnm_status_str", |b| b.iter(|| nnm_status_str(black_box(nnm_status::NNM_WRONG_STATE as i32))));

    // The trivial guarded call: NULL checks, tag check, catch_unwind, one
    // field read, one out-parameter write.
    let live = Handle::new();
    group.bench_function("nnm_planner_buffer_count", |b| {
        let mut count = 0usize;
        b.iter(|| {
            let status = unsafe { nnm_planner_buffer_count(black_box(live.0), &mut count) };
            black_box((status, count))
        })
    });

    // The same query without the C ABI, for the difference.
    let safe = Planner::new();
    group.bench_function("Planner::buffer_count (safe Rust, no FFI)", |b| b.iter(|| black_box(&safe).buffer_count()));

    // A call that does real work: the lower bound of 5 buffers (sort of 10
    // events, one sweep).
    let five = Handle::new();
    for (size, first, last) in [(4u64, 0i64, 2i64), (4, 3, 8), (4, 0, 8), (4, 9, 20), (4, 0, 20)] {
        assert_eq!(unsafe { nnm_planner_add_buffer(five.0, size, first, last, ptr::null_mut()) }, nnm_status::NNM_OK);
    }
    group.bench_function("nnm_planner_lower_bound (5 buffers)", |b| {
        let mut bytes = 0u64;
        b.iter(|| {
            let status = unsafe { nnm_planner_lower_bound(black_box(five.0), &mut bytes) };
            black_box((status, bytes))
        })
    });

    // Adding a buffer: lifetime check, alignment rounding, overflow check,
    // push. The planner is reset every RESET_EVERY additions, in the untimed
    // setup.
    let growing = Handle::new();
    let mut added = 0u64;
    group.bench_function("nnm_planner_add_buffer", |b| {
        b.iter_batched(
            || {
                added += 1;
                if added % RESET_EVERY == 0 {
                    assert_eq!(unsafe { nnm_planner_reset(growing.0) }, nnm_status::NNM_OK);
                }
                (growing.0, added as i64 % 64)
            },
            |(p, step)| {
                let mut index = 0usize;
                let status = unsafe { nnm_planner_add_buffer(p, 256, step, step + 3, &mut index) };
                (status, index)
            },
            BatchSize::SmallInput,
        )
    });

    // The same addition without the C ABI, for the difference. A raw
    // pointer, like the handle above, lets the setup reset what the routine
    // grows; the two never run at the same time.
    let mut safe_growing = Planner::new();
    let safe_ptr: *mut Planner = &mut safe_growing;
    let mut safe_added = 0u64;
    group.bench_function("Planner::add_buffer (safe Rust, no FFI)", |b| {
        b.iter_batched(
            || {
                safe_added += 1;
                if safe_added % RESET_EVERY == 0 {
                    unsafe { (*safe_ptr).reset() };
                }
                safe_added as i64 % 64
            },
            |step| {
                let lifetime = Lifetime::inclusive(step, step + 3).expect("valid lifetime");
                unsafe { (*safe_ptr).add_buffer(256, lifetime, None) }.map_err(|e| e.status())
            },
            BatchSize::SmallInput,
        )
    });

    group.finish();
    drop((live, five, growing));
}

criterion_group!(benches, bench_ffi);
criterion_main!(benches);
