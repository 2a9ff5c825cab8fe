//! The memory pool part of BENCHMARKS.md: the pool targets, the
//! criterion medians of `benches/pool.rs` beside glibc `malloc` and
//! mimalloc, and the real traces replayed through every strategy by the
//! `nnmem pool-replay` command (built beside this example:
//! `target/release/nnmem`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{fmt_ns, Medians, Target};

/// The traces the issue names, under `benches/data`.
const TRACES: [&str; 5] = [
    "idealloc/somas_tensors/resnet50",
    "idealloc/iopddl/G_1",
    "idealloc/somas_tensors/pangu_2.6B",
    "idealloc/iopddl/S_1",
    "idealloc/iopddl/Y_1",
];
const ITERATIONS: u32 = 3;
/// `pool-replay`'s default alignment (CUDA's), stated in the tables.
const ALIGNMENT: u64 = 256;

// The issues' targets (pairs and the random stream: issue 26).
const PAIR_TARGET_NS: f64 = 15.0;
const REPLAY_PAIR_TARGET_NS: f64 = 5.0;
/// The random stream: ops/s of every strategy at least glibc malloc's...
const STREAM_VS_MALLOC_TARGET: f64 = 1.0;
/// ...and 2 threads at least this many times 1 thread's.
const STREAM_TWO_THREADS_TARGET: f64 = 1.8;
const TWO_THREADS_TARGET: f64 = 1.6;
const EIGHT_THREADS_TARGET: f64 = 1.0;
const CACHING_PEAK_TARGET: f64 = 1.25;
const REPLAY_PEAK_TARGET: f64 = 1.01;

/// The sizes and allocators of `benches/pool.rs`, as its ids name them.
const SIZES: [&str; 4] = ["64 B", "4 KiB", "1 MiB", "16 MiB"];
const CACHED: [(&str, f64); 3] =
    [("page-unit", PAIR_TARGET_NS), ("caching", PAIR_TARGET_NS), ("replay", REPLAY_PAIR_TARGET_NS)];
const THREADS: [u32; 3] = [1, 2, 8];
/// The random stream's allocators, as `benches/pool.rs` names them.
const STREAM_POOLS: [&str; 3] = ["page-unit", "caching", "replay"];
const STREAM_OTHERS: [(&str, &str); 3] =
    [("malloc", "glibc malloc"), ("mimalloc", "mimalloc"), ("jemalloc", "jemalloc")];

/// One strategy's replay of one trace (the fields of `pool-replay --json`).
pub struct Run {
    strategy: String,
    peak: u64,
    steady_peak: u64,
    device_allocs: Vec<u64>,
    device_frees: Vec<u64>,
    served_from_plan: u64,
    requests: u64,
    time_ms: f64,
    /// The mean time of an iteration after the first (replay plans at the
    /// end of the first).
    later_ms: f64,
}

/// A trace replayed through every strategy, or why it could not be.
pub struct TraceReplay {
    trace: String,
    buffers: u64,
    lower_bound: u64,
    runs: Result<Vec<Run>, String>,
}

impl TraceReplay {
    fn run(&self, strategy: &str) -> Option<&Run> {
        self.runs.as_ref().ok()?.iter().find(|r| r.strategy == strategy)
    }

    fn ratio(&self, bytes: u64) -> f64 {
        bytes as f64 / self.lower_bound.max(1) as f64
    }

    fn short_name(&self) -> &str {
        self.trace.rsplit('/').next().unwrap_or(&self.trace)
    }
}

/// The `nnmem` binary beside this example (`target/release/examples/..`).
fn nnmem_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|e| super::die(&format!("own path: {e}")));
    let dir = exe.parent().and_then(Path::parent).unwrap_or_else(|| super::die("own path has no parent"));
    dir.join(format!("nnmem{}", std::env::consts::EXE_SUFFIX))
}

/// Replays every trace through every built-in strategy with
/// `nnmem pool-replay --device virtual --json`: the pools' bookkeeping,
/// device calls and bytes, without the system allocator's time, and
/// without needing the memory (Y_1's lower bound is 463 GiB).
pub fn replay_traces(data: &Path) -> Vec<TraceReplay> {
    let binary = nnmem_binary();
    TRACES
        .iter()
        .map(|&trace| {
            let path = data.join(format!("{trace}.csv"));
            eprintln!("bench_table: nnmem pool-replay {}", path.display());
            let runs = Command::new(&binary)
                .args(["pool-replay", "--device", "virtual", "--json", "--iterations"])
                .arg(ITERATIONS.to_string())
                .arg(&path)
                .output()
                .map_err(|e| format!("cannot run {}: {e} (build it: cargo build --release --bins)", binary.display()))
                .and_then(|out| {
                    if out.status.success() {
                        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
                    } else {
                        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
                    }
                });
            let parsed = runs.and_then(|text| parse(&text));
            match parsed {
                Ok((buffers, lower_bound, runs)) => {
                    TraceReplay { trace: trace.to_string(), buffers, lower_bound, runs: Ok(runs) }
                }
                Err(e) => TraceReplay { trace: trace.to_string(), buffers: 0, lower_bound: 0, runs: Err(e) },
            }
        })
        .collect()
}

/// `pool-replay --json`'s array: (buffers, lower bound, one run per strategy).
fn parse(text: &str) -> Result<(u64, u64, Vec<Run>), String> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("pool-replay --json: {e}"))?;
    let array = value.as_array().ok_or("pool-replay --json: not an array")?;
    let number = |o: &serde_json::Value, key: &str| {
        o[key].as_u64().ok_or_else(|| format!("pool-replay --json: `{key}` is not a number"))
    };
    let numbers = |o: &serde_json::Value, key: &str| -> Result<Vec<u64>, String> {
        let values = o[key].as_array().ok_or_else(|| format!("pool-replay --json: `{key}` is not an array"))?;
        Ok(values.iter().filter_map(serde_json::Value::as_u64).collect())
    };
    let mut runs = Vec::new();
    let (mut buffers, mut lower_bound) = (0, 0);
    for o in array {
        buffers = number(o, "buffers")?;
        lower_bound = number(o, "lower_bound_bytes")?;
        runs.push(Run {
            strategy: o["strategy"].as_str().unwrap_or("?").to_string(),
            peak: number(o, "peak_reserved_bytes")?,
            steady_peak: number(o, "steady_peak_reserved_bytes")?,
            device_allocs: numbers(o, "device_allocs")?,
            device_frees: numbers(o, "device_frees")?,
            served_from_plan: number(o, "served_from_plan")?,
            requests: number(o, "requests_per_iteration")?,
            time_ms: o["time_ms"].as_f64().unwrap_or(f64::NAN),
            later_ms: {
                let times: Vec<f64> =
                    o["iteration_ms"].as_array().into_iter().flatten().filter_map(|t| t.as_f64()).collect();
                times.iter().skip(1).sum::<f64>() / times.len().saturating_sub(1).max(1) as f64
            },
        });
    }
    Ok((buffers, lower_bound, runs))
}

fn list(values: &[u64]) -> String {
    values.iter().map(u64::to_string).collect::<Vec<_>>().join(" / ")
}

/// The pool targets.
pub fn targets(replays: &[TraceReplay], criterion: &Medians) -> Vec<Target> {
    let mut out = Vec::new();
    for (i, &(strategy, limit)) in CACHED.iter().enumerate() {
        out.push(pair_target(criterion, strategy, limit, i));
    }
    for strategy in ["page-unit", "caching"] {
        out.push(threads_target(criterion, strategy));
    }
    out.extend(stream_targets(criterion));
    let failed: Vec<String> =
        replays.iter().filter_map(|r| r.runs.as_ref().err().map(|e| format!("{}: {e}", r.short_name()))).collect();
    let measured = || replays.iter().filter(|r| r.runs.is_ok());
    let not_measured = |what: String| Target {
        what,
        result: if failed.is_empty() { "no trace replayed".into() } else { failed.join("; ") },
        status: "not measured",
    };

    // Zero device allocations after the first iteration.
    let what = "(s) pools: zero device allocations after the first of 3 iterations for `page-unit`, `caching` and \
                `replay` on resnet50, G_1, pangu, S_1 and Y_1"
        .to_string();
    if measured().count() == 0 {
        out.push(not_measured(what));
    } else {
        let mut offenders = Vec::new();
        let mut checked = 0;
        for r in measured() {
            for strategy in ["page-unit", "caching", "replay"] {
                match r.run(strategy) {
                    Some(run) => {
                        checked += 1;
                        if run.device_allocs.iter().skip(1).any(|&n| n > 0) {
                            offenders.push(format!(
                                "{} {strategy}: {} per iteration",
                                r.short_name(),
                                list(&run.device_allocs)
                            ));
                        }
                    }
                    None => offenders.push(format!("{} {strategy}: not run", r.short_name())),
                }
            }
        }
        let mut result = format!("{checked} replays checked");
        if !failed.is_empty() {
            let _ = write!(result, "; not replayed: {}", failed.join("; "));
        }
        let met = offenders.is_empty() && failed.is_empty();
        if !offenders.is_empty() {
            let _ = write!(result, "; device allocations after iteration 1: {}", offenders.join(", "));
        }
        out.push(Target { what, result, status: if met { "met" } else { "missed" } });
    }

    for (label, strategy, limit, steady) in
        [("(t)", "caching", CACHING_PEAK_TARGET, false), ("(u)", "replay", REPLAY_PEAK_TARGET, true)]
    {
        let what = if steady {
            format!("{label} pools: `{strategy}` peak reserved ≤ {limit}x the lower bound on each trace (from iteration 2 on, when it serves from its plan)")
        } else {
            format!(
                "{label} pools: `{strategy}` peak reserved ≤ {limit}x the lower bound on each trace (all 3 iterations)"
            )
        };
        if measured().count() == 0 {
            out.push(not_measured(what));
            continue;
        }
        let ratios: Vec<(&TraceReplay, f64)> = measured()
            .filter_map(|r| {
                let run = r.run(strategy)?;
                Some((r, r.ratio(if steady { run.steady_peak } else { run.peak })))
            })
            .collect();
        let cells: Vec<String> = ratios.iter().map(|(r, x)| format!("{} {x:.4}x", r.short_name())).collect();
        let over: Vec<String> = ratios
            .iter()
            .filter(|(_, x)| *x > limit)
            .map(|(r, x)| format!("{} +{:.4} over", r.short_name(), x - limit))
            .collect();
        let mut result = cells.join(", ");
        if !over.is_empty() {
            let _ = write!(result, "; {}", over.join(", "));
        }
        if !failed.is_empty() {
            let _ = write!(result, "; not replayed: {}", failed.join("; "));
        }
        let met = over.is_empty() && failed.is_empty() && ratios.len() == TRACES.len();
        out.push(Target { what, result, status: if met { "met" } else { "missed" } });
    }

    // page-unit and no-pool: stated, no limit.
    let what = "(v) pools: what `page-unit` and `no-pool` reach on the same traces (peak reserved / lower bound; \
                device calls per iteration)"
        .to_string();
    if measured().count() == 0 {
        out.push(not_measured(what));
    } else {
        let mut parts = Vec::new();
        for strategy in ["page-unit", "no-pool"] {
            let cells: Vec<String> = measured()
                .filter_map(|r| {
                    let run = r.run(strategy)?;
                    let calls: Vec<u64> = run.device_allocs.iter().zip(&run.device_frees).map(|(a, f)| a + f).collect();
                    Some(format!("{} {:.4}x, {} calls", r.short_name(), r.ratio(run.peak), list(&calls)))
                })
                .collect();
            parts.push(format!("`{strategy}`: {}", cells.join("; ")));
        }
        out.push(Target { what, result: parts.join(". "), status: "measured (no numeric limit)" });
    }
    out
}

fn pair_target(criterion: &Medians, strategy: &str, limit: f64, index: usize) -> Target {
    let label = ["(q1)", "(q2)", "(q3)"][index];
    let what = format!(
        "{label} pools: cached alloc+free pair through the C ABI, one thread, `{strategy}` median ≤ {limit} ns at \
         64 B, 4 KiB, 1 MiB and 16 MiB (beside glibc malloc, mimalloc and jemalloc: see Memory pools)"
    );
    let medians: Vec<(&str, Option<f64>)> =
        SIZES.iter().map(|&size| (size, criterion.get(&format!("pool/{strategy}/{size}")).copied())).collect();
    if medians.iter().any(|(_, m)| m.is_none()) {
        return Target {
            what,
            result: "criterion results missing: run `scripts/bench.sh` (or `cargo bench --bench pool`)".into(),
            status: "not measured",
        };
    }
    let cells: Vec<String> = medians.iter().map(|(size, m)| format!("{size} {}", fmt_ns(m.unwrap_or(0.0)))).collect();
    let over: Vec<String> = medians
        .iter()
        .filter_map(|&(size, m)| {
            let ns = m?;
            (ns > limit).then(|| format!("{size} {:.1}x the limit", ns / limit))
        })
        .collect();
    let mut result = cells.join(", ");
    if !over.is_empty() {
        let _ = write!(result, "; over: {}", over.join(", "));
        if let Some(floor) = criterion.get("pool-floor/lock") {
            let _ = write!(
                result,
                "; the floor of any thread-safe pool's pair here (two calls, each taking and releasing an \
                 uncontended lock, nothing else): {}",
                fmt_ns(*floor)
            );
        }
    }
    Target { what, result, status: if over.is_empty() { "met" } else { "missed" } }
}

/// Ops per second (an alloc or a free) of the random stream on `threads`
/// threads, from the criterion median (ns for one step, a free and an
/// alloc, on every thread).
fn stream_rate(criterion: &Medians, allocator: &str, threads: u32) -> Option<f64> {
    let ns = criterion.get(&format!("pool-stream/{allocator}/{threads}"))?;
    Some(2.0 * f64::from(threads) / ns * 1e9)
}

/// The random stream's targets: every strategy at least glibc malloc's
/// ops/s with 1 and with 8 threads, and 2 threads at least 1.8x one.
fn stream_targets(criterion: &Medians) -> Vec<Target> {
    let missing = || "criterion results missing: run `scripts/bench.sh` (or `cargo bench --bench pool`)".to_string();
    let mut out = Vec::new();
    for (label, threads) in [("(r3)", 1u32), ("(r4)", 8)] {
        let what = format!(
            "{label} pools: the random stream (16 B to 16 KiB, 64 live blocks per thread, both ends of each block \
             checked) on {threads} thread{} sharing one pool: every strategy ≥ glibc malloc's ops per second",
            if threads == 1 { "" } else { "s" }
        );
        let Some(malloc) = stream_rate(criterion, "malloc", threads) else {
            out.push(Target { what, result: missing(), status: "not measured" });
            continue;
        };
        let rates: Option<Vec<(&str, f64)>> =
            STREAM_POOLS.iter().map(|&p| stream_rate(criterion, p, threads).map(|r| (p, r))).collect();
        let Some(rates) = rates else {
            out.push(Target { what, result: missing(), status: "not measured" });
            continue;
        };
        let cells: Vec<String> = rates.iter().map(|(p, r)| format!("{p} {} ({:.2}x)", rate(*r), r / malloc)).collect();
        let below: Vec<String> = rates
            .iter()
            .filter(|(_, r)| r / malloc < STREAM_VS_MALLOC_TARGET)
            .map(|(p, r)| format!("{p} {:.0}% below", (1.0 - r / malloc) * 100.0))
            .collect();
        let mut result = format!("glibc malloc {} ops/s; {}", rate(malloc), cells.join(", "));
        if !below.is_empty() {
            let _ = write!(result, "; {}", below.join(", "));
        }
        out.push(Target { what, result, status: if below.is_empty() { "met" } else { "missed" } });
    }
    let what = format!(
        "(r5) pools: the random stream, every strategy with 2 threads ≥ {STREAM_TWO_THREADS_TARGET}x its ops per \
         second with 1 thread (this machine has {} cores)",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)
    );
    let ratios: Option<Vec<(&str, f64)>> = STREAM_POOLS
        .iter()
        .map(|&p| Some((p, stream_rate(criterion, p, 2)? / stream_rate(criterion, p, 1)?)))
        .collect();
    match ratios {
        None => out.push(Target { what, result: missing(), status: "not measured" }),
        Some(ratios) => {
            let cells: Vec<String> = ratios.iter().map(|(p, x)| format!("{p} {x:.2}x")).collect();
            let below: Vec<String> = ratios
                .iter()
                .filter(|(_, x)| *x < STREAM_TWO_THREADS_TARGET)
                .map(|(p, x)| format!("{p} {:.2} below", STREAM_TWO_THREADS_TARGET - x))
                .collect();
            let mut result = cells.join(", ");
            if let (Some(one), Some(two)) = (stream_rate(criterion, "malloc", 1), stream_rate(criterion, "malloc", 2)) {
                let _ = write!(result, " (glibc malloc {:.2}x)", two / one);
            }
            if !below.is_empty() {
                let _ = write!(result, "; {}", below.join(", "));
            }
            out.push(Target { what, result, status: if below.is_empty() { "met" } else { "missed" } });
        }
    }
    out
}

/// Pairs per second of the pool with `threads` threads, from the criterion
/// median (ns for every thread to run one pair).
fn throughput(criterion: &Medians, strategy: &str, threads: u32) -> Option<f64> {
    let ns = criterion.get(&format!("pool-threads/{strategy}/{threads}"))?;
    Some(f64::from(threads) / ns * 1e9)
}

fn threads_target(criterion: &Medians, strategy: &str) -> Target {
    let label = if strategy == "page-unit" { "(r1)" } else { "(r2)" };
    let what = format!(
        "{label} pools: `{strategy}` with 2 threads ≥ {TWO_THREADS_TARGET}x one thread's pairs per second, 8 threads \
         ≥ 2 threads' (one shared pool, 4 KiB pairs)"
    );
    let [Some(one), Some(two), Some(eight)] = THREADS.map(|n| throughput(criterion, strategy, n)) else {
        return Target {
            what,
            result: "criterion results missing: run `scripts/bench.sh` (or `cargo bench --bench pool`)".into(),
            status: "not measured",
        };
    };
    let (two_vs_one, eight_vs_two) = (two / one, eight / two);
    let mut result = format!(
        "{} pairs/s with 1 thread, {} with 2 ({two_vs_one:.2}x), {} with 8 ({eight_vs_two:.2}x the 2-thread figure)",
        rate(one),
        rate(two),
        rate(eight)
    );
    let mut missed = Vec::new();
    if two_vs_one < TWO_THREADS_TARGET {
        missed.push(format!("2 threads {:.2} below {TWO_THREADS_TARGET}x", TWO_THREADS_TARGET - two_vs_one));
    }
    if eight_vs_two < EIGHT_THREADS_TARGET {
        missed.push(format!("8 threads {:.0}% below 2 threads", (1.0 - eight_vs_two) * 100.0));
    }
    if !missed.is_empty() {
        let _ = write!(result, "; {}", missed.join(", "));
    }
    Target { what, result, status: if missed.is_empty() { "met" } else { "missed" } }
}

/// Pairs per second, in millions.
fn rate(per_second: f64) -> String {
    format!("{:.1} M", per_second / 1e6)
}

/// The "Memory pools" section.
pub fn render(replays: &[TraceReplay], criterion: &Medians) -> String {
    let mut o = String::new();
    let w = &mut o;
    let _ = writeln!(w, "\n## Memory pools\n");
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(String::from))
        .unwrap_or_else(|| "?".into());
    let _ = writeln!(
        w,
        "Pools through the C ABI (`benches/pool.rs`, criterion medians) beside glibc `malloc`/`free`, mimalloc \
         (the `mimalloc` crate, a benchmark-only dependency) and jemalloc (the system's libjemalloc.so.2, loaded \
         by the benchmark), and the real traces replayed through every strategy \
         by `nnmem pool-replay`. The 1-minute load average was {load} when this section was written: on a shared \
         machine the nanosecond figures and the thread ratios move with the load. These figures are host memory; \
         the CUDA allocator's are under Pools on a GPU below.\n"
    );

    let _ = writeln!(w, "### Cached alloc+free pair, one thread\n");
    let _ = writeln!(
        w,
        "Median ns per pair; in brackets the ratio to glibc `malloc`/`free` and to mimalloc at the same size \
         (below 1: faster). The pools are warmed, so no pair reaches the device; their requests use the default \
         alignment (256 B), `malloc`, mimalloc and jemalloc (`mallocx`/`dallocx` of the system's \
         libjemalloc.so.2) theirs (16 B). A `replay` iteration is 64 pairs and `nnm_pool_end_iteration`, whose \
         cost is spread over the pairs. A repeated pair of one size takes the shard's hot block back: one lock \
         and a comparison per call.\n"
    );
    let _ = writeln!(
        w,
        "| size | page-unit | caching | replay | glibc malloc | mimalloc | jemalloc |\n|---|---:|---:|---:|---:|---:|---:|"
    );
    for size in SIZES {
        let get = |name: &str| criterion.get(&format!("pool/{name}/{size}")).copied();
        let (malloc, mimalloc) = (get("malloc"), get("mimalloc"));
        let _ = write!(w, "| {size} |");
        for (strategy, _) in CACHED {
            match get(strategy) {
                Some(ns) => {
                    let vs = |base: Option<f64>| base.map_or_else(|| "—".into(), |b| format!("{:.2}x", ns / b));
                    let _ = write!(w, " {} ({} / {}) |", fmt_ns(ns), vs(malloc), vs(mimalloc));
                }
                None => {
                    let _ = write!(w, " — |");
                }
            }
        }
        for base in [malloc, mimalloc, get("jemalloc")] {
            let _ = write!(w, " {} |", base.map_or_else(|| "—".into(), fmt_ns));
        }
        let _ = writeln!(w);
    }

    let core: Vec<String> = CACHED
        .iter()
        .filter_map(|(strategy, _)| {
            let ns = criterion.get(&format!("pool-core/{strategy}/64 B"))?;
            Some(format!("`{strategy}` {}", fmt_ns(*ns)))
        })
        .collect();
    if !core.is_empty() {
        let _ = writeln!(w, "\nThe same 64 B pair on the safe core's `Pool` (Rust, no C ABI): {}.", core.join(", "));
    }
    if let Some(floor) = criterion.get("pool-floor/lock") {
        let _ = writeln!(
            w,
            "\nThe floor of a thread-safe pool's pair on this machine: two calls that each take and release an \
             uncontended spin lock (one compare-and-swap, one store) and do nothing else, {}. Every pool call \
             takes its shard's lock once; `replay` serves its plan under it too, so its pair cannot go below this.",
            fmt_ns(*floor)
        );
    }

    let _ = writeln!(w, "\n### The random stream\n");
    let _ = writeln!(
        w,
        "`benches/pool/stream.rs`: each thread keeps 64 live blocks; each step frees the block of a random slot \
         and allocates one of a random size, 16 B to 16 KiB (spread evenly over the octaves), into it; the first \
         and last 64 B of every block are written when it is handed out and checked when it is freed. \
         Millions of ops (an alloc or a free) per second of the whole allocator, threads sharing one pool; in \
         brackets the ratio to glibc malloc with as many threads. One pool per strategy and thread count for the \
         whole measurement; `replay` is told of no iteration, so it records its first 2^20 requests, then serves \
         from its `caching` fallback. The pools ask for 256 B alignment, the others 16 B.\n"
    );
    let _ = write!(w, "| threads |");
    for p in STREAM_POOLS {
        let _ = write!(w, " {p} |");
    }
    for (_, name) in STREAM_OTHERS {
        let _ = write!(w, " {name} |");
    }
    let _ = writeln!(w, "\n|---:|{}", "---:|".repeat(STREAM_POOLS.len() + STREAM_OTHERS.len()));
    for threads in THREADS {
        let malloc = stream_rate(criterion, "malloc", threads);
        let _ = write!(w, "| {threads} |");
        for p in STREAM_POOLS {
            match (stream_rate(criterion, p, threads), malloc) {
                (Some(r), Some(m)) => {
                    let _ = write!(w, " {} ({:.2}x) |", rate(r), r / m);
                }
                (Some(r), None) => {
                    let _ = write!(w, " {} |", rate(r));
                }
                _ => {
                    let _ = write!(w, " — |");
                }
            }
        }
        for (id, _) in STREAM_OTHERS {
            let _ = write!(w, " {} |", stream_rate(criterion, id, threads).map_or_else(|| "—".into(), rate));
        }
        let _ = writeln!(w);
    }
    let _ = writeln!(
        w,
        "\nWhat decides these figures. Every pool call takes its shard's lock once (see the floor above). \
         `caching` keeps PyTorch's placement: a request that its size's last freed blocks cannot serve whole \
         takes the best fit among free blocks merged with their free neighbours, so on this stream, where \
         almost every request is a new size, nearly every alloc merges the blocks freed since the last one and \
         searches the bins. Leaving small freed blocks unmerged until the device would be asked made this \
         stream faster than glibc malloc in development, but a request then no longer takes the best fit \
         (three placement tests of the strategy fail), so it is not shipped. `page-unit` rounds every request \
         to whole 4 KiB pages and finds each freed block in its address table before it goes back on its \
         size's list; glibc serves most of these sizes from per-thread caches without a lock. `replay` serves \
         one recorded sequence, so its pool has one shard and one lock for every thread: it does not scale \
         with threads, and with 8 threads on 2 cores most of its time is spent waiting for that lock (its \
         fallback is the same `caching`); the recording itself stops at 2^20 requests when no iteration ends."
    );
    let _ = writeln!(w, "\n### Threads sharing one pool\n");
    let _ = writeln!(
        w,
        "Each thread runs its own loop of 4 KiB alloc+free pairs on the same pool, the same number per thread; \
         pairs per second of the whole pool (millions), from the wall time of the slowest thread. This machine has \
         {} cores. While other processes load it, more threads also win a larger share of the cores from them, \
         so these ratios mean what the target asks only on an idle machine.\n",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)
    );
    let _ = writeln!(
        w,
        "| strategy | 1 thread | 2 threads | 8 threads | 2 vs 1 | 8 vs 2 |\n|---|---:|---:|---:|---:|---:|"
    );
    for strategy in ["page-unit", "caching"] {
        let t = THREADS.map(|n| throughput(criterion, strategy, n));
        let cell = |v: Option<f64>| v.map_or_else(|| "—".into(), rate);
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => format!("{:.2}x", a / b),
            _ => "—".into(),
        };
        let _ = writeln!(
            w,
            "| {strategy} | {} | {} | {} | {} | {} |",
            cell(t[0]),
            cell(t[1]),
            cell(t[2]),
            ratio(t[1], t[0]),
            ratio(t[2], t[1])
        );
    }

    let _ = writeln!(w, "\n### Real traces replayed through every strategy\n");
    let _ = writeln!(
        w,
        "`nnmem pool-replay --device virtual --iterations {ITERATIONS} FILE` (alignment {ALIGNMENT} B): each buffer \
         allocated at its first step and freed at its end, the sequence run {ITERATIONS} times through one pool per \
         strategy with `end_iteration` after each. The virtual device hands out addresses without memory and counts \
         the calls and bytes itself (the pools' own statistics must agree, or the command fails), so traces larger \
         than this machine's memory replay and the time is the pools' own work. *peak*: the most bytes held from \
         the device at once over all iterations; *from it. 2*: the same from the second iteration on. Device calls \
         and requests served from the plan are per iteration. *time*: all iterations (for `replay` it includes \
         planning the first), and the mean of the later ones.\n"
    );
    let _ = writeln!(
        w,
        "| trace | buffers | lower bound (B) | strategy | peak (B) | peak / bound | from it. 2 / bound | device allocs | device frees | served from plan | time (ms) | later iteration (ms) |\n\
         |---|---:|---:|---|---:|---:|---:|---|---|---:|---:|---:|"
    );
    for r in replays {
        match &r.runs {
            Err(e) => {
                let _ = writeln!(w, "| {} | — | — | — | not replayed: {e} | | | | | | | |", r.trace);
            }
            Ok(runs) => {
                for run in runs {
                    let _ = writeln!(
                        w,
                        "| {} | {} | {} | {} | {} | {:.4} | {:.4} | {} | {} | {} of {} | {:.1} | {:.2} |",
                        r.short_name(),
                        r.buffers,
                        r.lower_bound,
                        run.strategy,
                        run.peak,
                        r.ratio(run.peak),
                        r.ratio(run.steady_peak),
                        list(&run.device_allocs),
                        list(&run.device_frees),
                        run.served_from_plan,
                        run.requests * u64::from(ITERATIONS),
                        run.time_ms,
                        run.later_ms
                    );
                }
            }
        }
    }
    let _ = writeln!(w);
    o
}
