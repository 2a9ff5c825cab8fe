//! Building a region table: `RegionTable::build` on the synthetic model of
//! `examples/bench_table/region_model.rs` (placeholders, weights, activations
//! with realistic lifetimes, tags, views, two functions sharing weights)
//! under its 20-description configuration over 3 memory levels, at 1,000,
//! 10,000 and 100,000 tensors. The time includes planning every region;
//! `bench_table` separates the planner's share with
//! `RegionTable::build_timed`.
//!
//! Run: `cargo bench --bench region` (about 30 s). `scripts/bench.sh` copies
//! the medians into BENCHMARKS.md (section "Memory regions").

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use nnmem::region::RegionTable;

#[path = "../examples/bench_table/region_model.rs"]
mod region_model;

/// (criterion id, tensors).
const SIZES: [(&str, usize); 3] = [("1k tensors", 1_000), ("10k tensors", 10_000), ("100k tensors", 100_000)];

fn bench_region(c: &mut Criterion) {
    let config = region_model::twenty_rule_config();
    let mut group = c.benchmark_group("region-build");
    for (name, tensors) in SIZES {
        let model = region_model::synthetic_model(tensors);
        group.throughput(Throughput::Elements(tensors as u64));
        // Flat sampling: the largest size takes a good part of a second a
        // build, and 10 samples of one build each is the least criterion
        // allows.
        group
            .sample_size(if tensors >= 100_000 { 10 } else { 20 })
            .sampling_mode(SamplingMode::Flat)
            .warm_up_time(Duration::from_millis(if tensors >= 100_000 { 1 } else { 300 }))
            .measurement_time(Duration::from_secs(1));
        group.bench_function(name, |b| {
            b.iter(|| {
                let table = RegionTable::build(black_box(&model), black_box(&config)).expect("the table builds");
                table.placements.len()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_region);
criterion_main!(benches);
