//! The cost of crossing the C ABI: each `nnm_*` export checks its pointers,
//! checks the handle's tag and runs its body inside `catch_unwind`, then
//! maps the result to an `nnm_status`. The calls are made from Rust through
//! the same `extern "C"` functions a C program links against.
//!
//! The net API's hot calls are here too: get-by-name among 10,000 params,
//! cache push and pop; `cargo bench --bench ffi -- net` runs only those
//! (every id of theirs contains "net").
//!
//! Run: `cargo bench --bench ffi` (about 30 s). `scripts/bench.sh` copies
//! the medians (ns per call) into BENCHMARKS.md.

use std::hint::black_box;
use std::ptr;
use std::time::Duration;

use std::ffi::{c_char, CString};
use std::time::Instant;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use nnmem::ffi::net::{
    nnm_cache, nnm_cache_clear, nnm_cache_pop, nnm_cache_push, nnm_net, nnm_net_attach_cache, nnm_net_attach_param,
    nnm_net_free, nnm_net_new, nnm_net_param_get, nnm_tensor,
};
use nnmem::ffi::net::{nnm_stack_cache, nnm_stack_cache_pop, nnm_stack_cache_push, NNM_STACK_CACHE_INLINE};
use nnmem::ffi::nnm_status_str;
use nnmem::ffi::plan::{
    nnm_planner, nnm_planner_add_buffer, nnm_planner_buffer_count, nnm_planner_free, nnm_planner_lower_bound,
    nnm_planner_new, nnm_planner_reset,
};
use nnmem::plan::{Lifetime, Planner};
use nnmem::Status;

/// Buffers added to one planner before `nnm_planner_add_buffer` resets it,
/// so the planner stays small and its memory stays bounded.
const RESET_EVERY: u64 = 4096;

/// A planner handle freed on drop.
struct Handle(*mut nnm_planner);

impl Handle {
    fn new() -> Self {
        let mut p = ptr::null_mut();
        assert_eq!(unsafe { nnm_planner_new(&mut p) }, Status::Ok);
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
    group.bench_function("nnm_status_str", |b| b.iter(|| nnm_status_str(black_box(Status::WrongState as i32))));

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
        assert_eq!(unsafe { nnm_planner_add_buffer(five.0, size, first, last, ptr::null_mut()) }, Status::Ok);
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
                    assert_eq!(unsafe { nnm_planner_reset(growing.0) }, Status::Ok);
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

/// Params in the net of the get-by-name bench.
const NET_PARAMS: usize = 10_000;
/// Tensors pushed (then popped) per timed batch of the cache benches, so
/// the stack stays small and its memory bounded.
const CACHE_DEPTH: u64 = 64;

/// A net handle freed on drop.
struct Net(*mut nnm_net);

impl Drop for Net {
    fn drop(&mut self) {
        unsafe { nnm_net_free(self.0) }
    }
}

/// The net API's hot calls through the C ABI: get-by-name among 10,000
/// params (the target: at most 50 ns), cache push and pop (at most
/// 10 ns each).
fn bench_net(c: &mut Criterion) {
    let mut group = c.benchmark_group("ffi");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));

    let mut raw = ptr::null_mut();
    assert_eq!(unsafe { nnm_net_new(32, &mut raw) }, Status::Ok);
    let net = Net(raw);
    // awnn-style names: "layer<i>.W", "layer<i>.b", one small tensor each.
    let names: Vec<CString> = (0..NET_PARAMS)
        .map(|i| CString::new(format!("layer{}.{}", i / 2, if i % 2 == 0 { "W" } else { "b" })).unwrap())
        .collect();
    let dims = [4u32, 4];
    for n in &names {
        let s = unsafe { nnm_net_attach_param(net.0, n.as_ptr(), 0, dims.as_ptr(), 2, ptr::null_mut()) };
        assert_eq!(s, Status::Ok);
    }
    // The queries: every name once, in a scattered order, as pointers into
    // one block of NUL-terminated copies (as a C program's names would be:
    // literals or one buffer), so the bench measures the lookup, not the
    // allocator's placement of 10,000 separate strings.
    let mut arena = Vec::new();
    let mut starts = Vec::new();
    for n in &names {
        starts.push(arena.len());
        arena.extend_from_slice(n.as_bytes_with_nul());
    }
    let queries: Vec<*const c_char> =
        (0..NET_PARAMS).map(|i| arena[starts[(i * 7919) % NET_PARAMS]..].as_ptr().cast()).collect();
    let mut next = 0usize;
    group.bench_function("nnm_net_param_get (10k params)", |b| {
        b.iter(|| {
            next = if next + 1 == NET_PARAMS { 0 } else { next + 1 };
            let p = unsafe { nnm_net_param_get(black_box(net.0), queries[next]) };
            debug_assert!(!p.is_null());
            black_box(p)
        })
    });
    assert!(queries.iter().all(|&q| !unsafe { nnm_net_param_get(net.0, q) }.is_null()));

    let mut cache: *mut nnm_cache = ptr::null_mut();
    let name = CString::new("fc1").unwrap();
    assert_eq!(unsafe { nnm_net_attach_cache(net.0, name.as_ptr(), &mut cache) }, Status::Ok);
    let param = unsafe { nnm_net_param_get(net.0, names[0].as_ptr()) };
    let tensor: nnm_tensor = unsafe { (*param).data };
    // Push: CACHE_DEPTH pushes timed, the pops that empty the stack not.
    group.bench_function("nnm_cache_push (net cache)", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut out = nnm_tensor::default();
            let mut left = iters;
            while left > 0 {
                let n = left.min(CACHE_DEPTH);
                let started = Instant::now();
                for _ in 0..n {
                    black_box(unsafe { nnm_cache_push(black_box(cache), &tensor) });
                }
                total += started.elapsed();
                for _ in 0..n {
                    unsafe { nnm_cache_pop(cache, &mut out) };
                }
                left -= n;
            }
            total
        })
    });
    // Pop: the pushes that fill the stack untimed, CACHE_DEPTH pops timed.
    group.bench_function("nnm_cache_pop (net cache)", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut out = nnm_tensor::default();
            let mut left = iters;
            while left > 0 {
                let n = left.min(CACHE_DEPTH);
                for _ in 0..n {
                    unsafe { nnm_cache_push(cache, &tensor) };
                }
                let started = Instant::now();
                for _ in 0..n {
                    black_box(unsafe { nnm_cache_pop(black_box(cache), &mut out) });
                }
                total += started.elapsed();
                left -= n;
            }
            black_box(out.data);
            total
        })
    });
    assert_eq!(unsafe { nnm_cache_clear(cache) }, Status::Ok);
    // A cache in caller storage, within its inline slots (no heap): each
    // iteration fills it and empties it again; the time is per call.
    let mut stack = nnm_stack_cache::default();
    let depth = NNM_STACK_CACHE_INLINE as u64;
    group.bench_function("nnm_stack_cache push and pop (net layer cache in caller storage)", |b| {
        b.iter_custom(|iters| {
            let mut out = nnm_tensor::default();
            let rounds = iters.div_ceil(2 * depth);
            let started = Instant::now();
            for _ in 0..rounds {
                for _ in 0..depth {
                    black_box(unsafe { nnm_stack_cache_push(black_box(&mut stack), &tensor) });
                }
                for _ in 0..depth {
                    black_box(unsafe { nnm_stack_cache_pop(black_box(&mut stack), &mut out) });
                }
            }
            black_box(out.data);
            started.elapsed().mul_f64(iters as f64 / (rounds * 2 * depth) as f64)
        })
    });
    assert_eq!(stack.count, 0);
    group.finish();
    drop(net);
}

criterion_group!(benches, bench_ffi, bench_net);
criterion_main!(benches);
