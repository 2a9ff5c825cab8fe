//! Workbuffer provisioning (issue 16):
//!
//! - `workbuffer-build/<step>`: the synthetic ResNet-like network of
//!   10,000 operators (`examples/bench_table/workbuffer_model.rs`):
//!   `describe` hands it to a `ModelBuilder` (the calls a runtime makes),
//!   `build` lays it out (blobs, lifetimes and the planner), `planner` runs
//!   the planner alone on the same buffers with the same settings, so that
//!   `describe + build - planner` is the build's own time.
//! - `workbuffer-pool/<call>`: acquire + release of a free block, one
//!   thread (no waiting), through the C ABI (`nnm_exec_pool_acquire` with
//!   a timeout of 0 and no token, `nnm_exec_pool_release`) and through the
//!   safe core's `BlockPool` alone.
//!
//! - `workbuffer-scale/<case>`: one operator with 100,000 outputs, or with
//!   100,000 mutable workbuffers given ids, added to a `ModelBuilder`: its
//!   checks (ids taken or repeated) take time linear in those counts.
//!
//! Run: `cargo bench --bench workbuffer` (about 30 s). `scripts/bench.sh`
//! copies the medians into BENCHMARKS.md (section "Workbuffers").

use std::hint::black_box;
use std::ptr;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, SamplingMode};
use nnmem::ffi::workbuffer::pool::{nnm_exec_block, nnm_exec_pool_acquire, nnm_exec_pool_release};
use nnmem::plan::{Lifetime, Planner};
use nnmem::pool::device::host;
use nnmem::workbuffer::{
    BlockPool, CompiledModel, LayoutOptions, ModelBuilder, OperatorSpec, OutputSpec, WorkbufferRequest,
};

// Shared with bench_table and tests/workbuffer_solver.rs, which use the
// parts this bench does not.
#[allow(dead_code)]
#[path = "../examples/bench_table/workbuffer_model.rs"]
mod workbuffer_model;
// Shared with bench_table, whose threads call its acquire and release.
#[allow(dead_code)]
#[path = "../examples/bench_table/c_pool.rs"]
mod c_pool;

use c_pool::CPool;
use workbuffer_model::{replay, resnet_like};

const OPERATORS: usize = 10_000;

fn bench_build(c: &mut Criterion) {
    let s = resnet_like(OPERATORS);
    let options = LayoutOptions::default();
    let mut group = c.benchmark_group("workbuffer-build");
    // Flat sampling, 10 samples: the planner takes a good part of a second
    // on this network.
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_secs(1));
    group.bench_function("describe", |b| {
        // The model is returned: criterion drops it untimed.
        b.iter_batched(|| s.calls.clone(), replay, BatchSize::LargeInput)
    });
    group.bench_function("build", |b| {
        b.iter(|| {
            let compiled = CompiledModel::build(black_box(&s.model), black_box(&options), host(), &mut |_, _| Ok(()))
                .expect("the network builds");
            compiled.block_size()
        })
    });
    group.bench_function("planner", |b| {
        b.iter(|| {
            let mut planner = Planner::new();
            planner.set_algorithm(options.algorithm);
            planner.set_alignment(options.alignment).expect("a power of two");
            planner.set_work_limit(Some(options.work_limit));
            for sp in &s.spans {
                let lifetime = Lifetime::half_open(sp.start, sp.last + 1).expect("start <= last");
                planner.add_buffer(sp.size, lifetime, None).expect("a valid buffer");
            }
            planner.plan().expect("the planner plans").peak
        })
    });
    group.finish();
}

fn bench_pool(c: &mut Criterion) {
    let mut group = c.benchmark_group("workbuffer-pool");
    let c_pool = CPool::new(2);
    let mut block = nnm_exec_block { base: ptr::null_mut(), size: 0, slot: 0, generation: 0 };
    group.bench_function("nnm_exec_pool_acquire+release", |b| {
        b.iter(|| {
            // SAFETY: a live pool; `block` is a local that acquire writes
            // and release reads back unchanged.
            unsafe {
                nnm_exec_pool_acquire(c_pool.raw(), 0, ptr::null(), &mut block);
                nnm_exec_pool_release(c_pool.raw(), black_box(&block))
            }
        })
    });
    // Every acquire found a free block (none waited or timed out) and
    // every block came back: the figure is the uncontended pair. (No
    // acquire at all: a filter skipped the benchmark.)
    let info = c_pool.info();
    assert_eq!((info.waits, info.timeouts, info.out_blocks, info.free_blocks), (0, 0, 0, 2));
    let pool = BlockPool::new(host(), 4096, 256, 2).expect("two host blocks");
    group.bench_function("BlockPool acquire+release (safe Rust, no FFI)", |b| {
        b.iter(|| {
            let lease = pool.acquire(Some(Duration::ZERO), None).expect("a free block");
            pool.release(black_box(&lease)).expect("the lease is out")
        })
    });
    group.finish();
    // Nothing waited: every pair found a free block.
    let info = pool.info();
    assert_eq!((info.waits, info.timeouts, info.out), (0, 0, 0));
}

/// One operator with 100,000 outputs, and one with 100,000 mutable
/// workbuffers given ids.
fn bench_scale(c: &mut Criterion) {
    const COUNT: u64 = 100_000;
    let outputs = OperatorSpec {
        name: "split".into(),
        inputs: Vec::new(),
        outputs: (0..COUNT).map(|id| OutputSpec::new(id, 64)).collect(),
        request: WorkbufferRequest::default(),
    };
    let workbuffers = OperatorSpec {
        name: "scratchy".into(),
        inputs: Vec::new(),
        outputs: Vec::new(),
        request: WorkbufferRequest {
            mutable: vec![64; COUNT as usize],
            mutable_ids: (0..COUNT).collect(),
            ..WorkbufferRequest::default()
        },
    };
    let mut group = c.benchmark_group("workbuffer-scale");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_secs(1));
    for (name, op) in [("100000 outputs", &outputs), ("100000 mutable workbuffer ids", &workbuffers)] {
        group.bench_function(name, |b| {
            b.iter_batched(
                || (ModelBuilder::new(), op.clone()),
                |(mut model, op)| {
                    model.add_operator(op).expect("the operator is added");
                    model
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench_build, bench_pool, bench_scale);
criterion_main!(benches);
