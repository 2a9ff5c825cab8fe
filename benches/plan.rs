//! Plan time per instance: what a user pays for one plan, i.e. `Planner`
//! construction, one `add_buffer` per row and `plan()`. The CSV is parsed
//! once, outside the timed loop.
//!
//! Run: `cargo bench --bench plan` (about 1.5 minutes on 2 cores, most of it
//! the three large idealloc traces). `scripts/bench.sh` copies the medians
//! into BENCHMARKS.md.
//!
//! Every instance is its own group (`plan-<instance>`) with the two
//! algorithms a user is most likely to pick: `auto` (the default) and
//! `size-first-fit` (the cheapest heuristic that `auto` starts with).

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use nnmem::plan::csv::{self, Row};
use nnmem::plan::{Algorithm, Lifetime, Planner};

/// How long one plan takes, roughly, which decides the sampling.
#[derive(Copy, Clone)]
enum Cost {
    /// Well under a millisecond (the Glow models).
    Small,
    /// Milliseconds to tens of milliseconds: 20 samples, flat sampling.
    Medium,
    /// Up to seconds (pangu, S_1, Y_1): 10 samples of one plan each.
    /// Criterion warns that it cannot finish in the target time; that is
    /// expected (10 plans is the minimum it allows).
    Large,
}

const INSTANCES: &[(&str, &str, Cost)] = &[
    ("resnet50", "idealloc/somas_tensors/resnet50.csv", Cost::Medium),
    ("G_1", "idealloc/iopddl/G_1.csv", Cost::Medium),
    ("challenging-A", "minimalloc/challenging/A.1048576.csv", Cost::Medium),
    ("challenging-E", "minimalloc/challenging/E.1048576.csv", Cost::Medium),
    ("challenging-K", "minimalloc/challenging/K.1048576.csv", Cost::Medium),
    ("glow-mobilenet_v2_1.00_224", "glow/mobilenet_v2_1.00_224.tflite.csv", Cost::Small),
    ("glow-resnet50_v1", "glow/resnet50_v1.onnx.csv", Cost::Small),
    ("glow-inception_v3", "glow/inception_v3.onnx.csv", Cost::Small),
    ("pangu_2.6B", "idealloc/somas_tensors/pangu_2.6B.csv", Cost::Large),
    ("S_1", "idealloc/iopddl/S_1.csv", Cost::Large),
    ("Y_1", "idealloc/iopddl/Y_1.csv", Cost::Large),
];

const ALGORITHMS: [Algorithm; 2] = [Algorithm::Auto, Algorithm::SizeFirstFit];

fn load(relative: &str) -> Option<Vec<Row>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/data").join(relative);
    let text = std::fs::read_to_string(&path).ok()?;
    Some(csv::parse(&text).unwrap_or_else(|e| panic!("{}: {}", path.display(), e.message())))
}

/// One plan, the way a user makes it. Returns the peak so nothing is
/// optimised away.
fn plan(rows: &[Row], algorithm: Algorithm) -> u64 {
    let mut planner = Planner::new();
    planner.set_algorithm(algorithm);
    for r in rows {
        let lifetime = Lifetime::half_open(r.lower, r.upper).expect("valid lifetime");
        planner.add_buffer(r.size, lifetime, r.offset).expect("valid buffer");
    }
    planner.plan().expect("plan").peak
}

fn bench_plan(c: &mut Criterion) {
    for &(name, relative, cost) in INSTANCES {
        let Some(rows) = load(relative) else {
            eprintln!("plan bench: benches/data/{relative} is missing; skipped");
            continue;
        };
        let mut group = c.benchmark_group(format!("plan-{name}"));
        group.throughput(Throughput::Elements(rows.len() as u64));
        match cost {
            Cost::Small => {
                group.sample_size(50).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1));
            }
            Cost::Medium => {
                group
                    .sample_size(20)
                    .sampling_mode(SamplingMode::Flat)
                    .warm_up_time(Duration::from_millis(300))
                    .measurement_time(Duration::from_secs(1));
            }
            Cost::Large => {
                // Flat sampling: 10 samples of one plan each (linear sampling
                // would need 55 plans). The warm-up is a single plan.
                group
                    .sample_size(10)
                    .sampling_mode(SamplingMode::Flat)
                    .warm_up_time(Duration::from_millis(1))
                    .measurement_time(Duration::from_millis(500));
            }
        }
        for algorithm in ALGORITHMS {
            group.bench_function(algorithm.name(), |b| b.iter(|| plan(black_box(&rows), algorithm)));
        }
        group.finish();
    }
}

criterion_group!(benches, bench_plan);
criterion_main!(benches);
