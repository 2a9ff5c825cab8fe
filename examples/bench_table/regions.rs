//! The memory region part of BENCHMARKS.md: building the region table of
//! the synthetic 100,000-tensor model under 20 rules (`region_model.rs`),
//! split into the planner's time and the table's own; every Glow model
//! under `benches/data/glow` through the default configuration, beside
//! the figure Glow's own MemoryAllocator gives for it
//! (`benches/data/glow/GLOW_FIGURES.csv`); and the criterion medians of
//! `benches/region.rs`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use nnmem::plan::csv::Row;
use nnmem::plan::Lifetime;
use nnmem::region::{Model, RegionConfig, RegionTable, Tensor};

use super::region_model::{synthetic_model, twenty_rule_config};
use super::{fmt_ms, fmt_ns, Instance, Medians, Target};

/// The size and time: 100,000 tensors under 20 rules, table
/// building (planner excluded) under 50 ms.
const TENSORS: usize = 100_000;
const RULES: usize = 20;
const BUILD_TARGET: Duration = Duration::from_millis(50);
/// Builds of the synthetic table; the medians (and the fastest) are
/// reported.
const RUNS: usize = 7;
/// The criterion sizes of `benches/region.rs`, as its ids name them.
const CRITERION_SIZES: [&str; 3] = ["1k tensors", "10k tensors", "100k tensors"];
/// Where Glow's figures are, under the data folder (not a trace: the
/// instance loader skips it).
pub const GLOW_FIGURES: &str = "glow/GLOW_FIGURES.csv";
/// The default configuration's activation region.
const ACTIVATIONS: &str = "activations";

/// The synthetic table's builds.
pub struct Synthetic {
    tensors: usize,
    rules: usize,
    levels: Vec<String>,
    regions: usize,
    spills: usize,
    views: usize,
    functions: usize,
    /// Medians over the runs: whole build, planner, the rest (each run's
    /// difference, then the median).
    total: Duration,
    planning: Duration,
    table: Duration,
    /// The fastest run's table-only time: the least disturbed by other
    /// processes on a shared machine.
    table_best: Duration,
    /// Median CPU time of the building thread over a whole build (Linux),
    /// beside the wall time: far below it, the machine was shared.
    cpu: Option<Duration>,
    /// The 1-minute load average after the builds.
    load: String,
}

/// One Glow model through the default configuration.
pub struct GlowRow {
    model: String,
    buffers: usize,
    peak: u64,
    lower_bound: u64,
    size: u64,
    algorithm: String,
    proven: bool,
    /// Glow's MemoryAllocator figure, where its tests publish one.
    glow: Option<u64>,
}

/// The Glow models against Glow's figures and the lower bound.
struct GlowSummary<'a> {
    /// Models with a published figure.
    compared: usize,
    /// Those whose region is larger than Glow's figure (the target: none).
    larger: Vec<&'a GlowRow>,
    smaller: usize,
    /// Bytes below Glow's figures, summed over the models compared.
    saved: u64,
    /// Models whose peak reaches the lower bound.
    at_bound: usize,
}

impl<'a> GlowSummary<'a> {
    fn of(rows: &'a [GlowRow]) -> Self {
        let compared: Vec<(&GlowRow, u64)> = rows.iter().filter_map(|g| Some((g, g.glow?))).collect();
        GlowSummary {
            compared: compared.len(),
            larger: compared.iter().filter(|(g, b)| g.size > *b).map(|(g, _)| *g).collect(),
            smaller: compared.iter().filter(|(g, b)| g.size < *b).count(),
            saved: compared.iter().map(|(g, b)| b.saturating_sub(g.size)).sum(),
            at_bound: rows.iter().filter(|g| g.peak <= g.lower_bound).count(),
        }
    }

    fn equal(&self) -> usize {
        self.compared - self.larger.len() - self.smaller
    }
}

/// Everything the section shows.
pub struct Regions {
    synthetic: Result<Synthetic, String>,
    glow: Result<Vec<GlowRow>, String>,
    /// Models named in GLOW_FIGURES.csv with no CSV under `glow/`.
    unmatched_figures: Vec<String>,
}

/// Runs the region benchmarks.
pub fn measure(data: &Path, instances: &[&Instance]) -> Regions {
    eprintln!("bench_table: regions: {TENSORS} synthetic tensors under {RULES} rules, {RUNS} builds");
    let synthetic = measure_synthetic();
    let figures = read_glow_figures(&data.join(GLOW_FIGURES));
    let (glow, unmatched_figures) = match figures {
        Ok(figures) => {
            let unmatched = figures.keys().filter(|m| !instances.iter().any(|i| i.name == **m)).cloned().collect();
            (measure_glow(instances, &figures), unmatched)
        }
        Err(e) => (Err(e), Vec::new()),
    };
    Regions { synthetic, glow, unmatched_figures }
}

fn measure_synthetic() -> Result<Synthetic, String> {
    let model = synthetic_model(TENSORS);
    let config = twenty_rule_config();
    let mut runs: Vec<(Duration, Duration, Duration)> = Vec::new();
    let mut cpu: Vec<Duration> = Vec::new();
    let mut first: Option<RegionTable> = None;
    for run in 0..RUNS {
        let cpu_before = thread_cpu_time();
        let (table, t) = RegionTable::build_timed(&model, &config).map_err(|e| e.message().to_string())?;
        if let (Some(before), Some(after)) = (cpu_before, thread_cpu_time()) {
            cpu.push(after.saturating_sub(before));
        }
        let rest = t.total.saturating_sub(t.planning);
        eprintln!(
            "bench_table: regions: build {} ms (planner {} ms, table {} ms)",
            fmt_ms(t.total),
            fmt_ms(t.planning),
            fmt_ms(rest)
        );
        runs.push((t.total, t.planning, rest));
        match &first {
            // Same input, same table: a difference is a bug, not noise.
            Some(f) => assert!(*f == table, "run {run} built another table from the same input"),
            None => first = Some(table),
        }
    }
    let table = first.expect("at least one run");
    let median = |pick: fn(&(Duration, Duration, Duration)) -> Duration| {
        let mut v: Vec<Duration> = runs.iter().map(pick).collect();
        v.sort();
        v[v.len() / 2]
    };
    let tensors = model.tensors();
    let mut functions: Vec<&str> = tensors.iter().map(|t| &*t.function).collect();
    functions.sort_unstable();
    functions.dedup();
    Ok(Synthetic {
        tensors: tensors.len(),
        rules: config.descriptions().len(),
        levels: table.levels.iter().map(|l| format!("{} (rank {})", l.name, l.rank)).collect(),
        regions: table.regions.len(),
        spills: table.spills.len(),
        views: tensors.iter().filter(|t| t.view.is_some()).count(),
        functions: functions.len(),
        total: median(|r| r.0),
        planning: median(|r| r.1),
        table: median(|r| r.2),
        table_best: runs.iter().map(|r| r.2).min().unwrap_or_default(),
        cpu: (cpu.len() == RUNS).then(|| {
            cpu.sort();
            cpu[cpu.len() / 2]
        }),
        load: std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|l| l.split_whitespace().next().map(String::from))
            .unwrap_or_else(|| "?".into()),
    })
}

/// CPU time this thread has run, from Linux's `/proc/thread-self/schedstat`
/// (its first field, in ns); `None` elsewhere.
fn thread_cpu_time() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    Some(Duration::from_nanos(text.split_whitespace().next()?.parse().ok()?))
}

/// `model,glow_used_bytes[,...]` rows after a header line.
fn read_glow_figures(path: &Path) -> Result<BTreeMap<String, u64>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate().skip(1).filter(|(_, l)| !l.trim().is_empty()) {
        let mut fields = line.split(',').map(str::trim);
        let (Some(model), Some(bytes)) = (fields.next(), fields.next()) else {
            return Err(format!("{}:{}: expected model,glow_used_bytes", path.display(), i + 1));
        };
        let bytes = bytes.parse().map_err(|e| format!("{}:{}: '{bytes}': {e}", path.display(), i + 1))?;
        out.insert(model.to_string(), bytes);
    }
    Ok(out)
}

/// The model of a Glow trace: every row an activation of `main` named by
/// its id, live over `[lower, upper)`.
pub fn glow_model(rows: &[Row]) -> nnmem::Result<Model> {
    let mut model = Model::new();
    for r in rows {
        model.add(Tensor::activation(r.id.clone(), r.size, Lifetime::half_open(r.lower, r.upper)?))?;
    }
    Ok(model)
}

fn measure_glow(instances: &[&Instance], figures: &BTreeMap<String, u64>) -> Result<Vec<GlowRow>, String> {
    let config = RegionConfig::glow_defaults();
    let mut out = Vec::new();
    for i in instances {
        let fail = |e: nnmem::Error| format!("glow/{}: {}", i.name, e.message());
        let table = RegionTable::build(&glow_model(&i.rows).map_err(fail)?, &config).map_err(fail)?;
        let r = table
            .find_region(ACTIVATIONS)
            .map(|index| &table.regions[index])
            .ok_or_else(|| format!("glow/{}: the default configuration made no `{ACTIVATIONS}` region", i.name))?;
        out.push(GlowRow {
            model: i.name.clone(),
            buffers: i.rows.len(),
            peak: r.peak,
            lower_bound: r.lower_bound,
            size: r.size,
            algorithm: r.algorithm.name().to_string(),
            proven: r.proven_optimal,
            glow: figures.get(&i.name).copied(),
        });
    }
    Ok(out)
}

/// The region targets.
pub fn targets(r: &Regions) -> Vec<Target> {
    let mut out = Vec::new();
    let what = format!(
        "(x) regions: building the table of {TENSORS} tensors under {RULES} rules < {} ms, plus the planner's own time",
        BUILD_TARGET.as_millis()
    );
    out.push(match &r.synthetic {
        Err(e) => Target { what, result: format!("the build failed: {e}"), status: "not measured" },
        Ok(s) => Target {
            what,
            result: format!(
                "{} ms without the planner (median of {RUNS} builds, fastest {} ms), {:.0}% of the limit; \
                 the whole build {} ms, of which the planner {} ms{}",
                fmt_ms(s.table),
                fmt_ms(s.table_best),
                s.table.as_secs_f64() / BUILD_TARGET.as_secs_f64() * 100.0,
                fmt_ms(s.total),
                fmt_ms(s.planning),
                s.cpu.map_or_else(String::new, |c| format!(
                    " (CPU time of the whole build {} ms, load average {})",
                    fmt_ms(c),
                    s.load
                ))
            ),
            status: if s.table < BUILD_TARGET { "met" } else { "missed" },
        },
    });
    let what = "(y) regions: with the defaults, no Glow model's activation region larger than Glow's own planner \
                gives it (its MemoryAllocator tests); how many reach the lower bound"
        .to_string();
    out.push(match &r.glow {
        Err(e) => Target { what, result: e.clone(), status: "not measured" },
        Ok(rows) => {
            let sum = GlowSummary::of(rows);
            let mut result = format!(
                "{} of {} models compared: {} larger, {} smaller, {} equal; {} of {} reach the lower bound",
                sum.compared,
                rows.len(),
                sum.larger.len(),
                sum.smaller,
                sum.equal(),
                sum.at_bound,
                rows.len()
            );
            if !sum.larger.is_empty() {
                let larger: Vec<String> = sum
                    .larger
                    .iter()
                    .map(|g| format!("{} {} B > {} B", g.model, g.size, g.glow.unwrap_or(0)))
                    .collect();
                let _ = write!(result, "; larger: {}", larger.join(", "));
            }
            if !r.unmatched_figures.is_empty() {
                let _ = write!(result, "; figures without a model CSV: {}", r.unmatched_figures.join(", "));
            }
            let met = sum.larger.is_empty() && sum.compared > 0 && r.unmatched_figures.is_empty();
            Target { what, result, status: if met { "met" } else { "missed" } }
        }
    });
    out
}

/// The "Memory regions" section.
pub fn render(r: &Regions, criterion: &Medians) -> String {
    let mut o = String::new();
    let w = &mut o;
    let _ = writeln!(w, "\n## Memory regions\n");
    let _ = writeln!(w, "### Building the table: {TENSORS} tensors under {RULES} rules\n");
    match &r.synthetic {
        Err(e) => {
            let _ = writeln!(w, "Not measured: the build failed: {e}\n");
        }
        Ok(s) => {
            let _ = writeln!(
                w,
                "A synthetic model from a fixed-seed generator (`examples/bench_table/region_model.rs`): {} tensors \
                 in {} functions (placeholders, weights tagged by op and layer, activations live until the next \
                 layer reads them, scratch buffers, attention intermediates, skip connections, {} views, weights \
                 shared by name across functions), under {} region descriptions in the levels {}: {} region \
                 instances, {} tensors spilled from SRAM to DDR. `RegionTable::build_timed` over {RUNS} builds \
                 (the tables are checked equal); *planner* is the time inside `Planner::plan` over every region, \
                 *table* the rest: matching rules, timelines, spill, layout and the placements. Wall times; \
                 the 1-minute load average was {} after the builds, and where the thread's CPU time is far below \
                 the wall time, other processes had the cores.\n",
                s.tensors,
                s.functions,
                s.views,
                s.rules,
                s.levels.join(", "),
                s.regions,
                s.spills,
                s.load
            );
            let _ = writeln!(w, "| | median | target |\n|---|---:|---|");
            let _ = writeln!(w, "| whole build | {} ms | |", fmt_ms(s.total));
            if let Some(c) = s.cpu {
                let _ = writeln!(w, "| whole build, CPU time of the thread | {} ms | |", fmt_ms(c));
            }
            let _ = writeln!(w, "| planner | {} ms | (not limited) |", fmt_ms(s.planning));
            let _ = writeln!(
                w,
                "| table (build minus planner) | {} ms (fastest run {} ms) | < {} ms: {} |\n",
                fmt_ms(s.table),
                fmt_ms(s.table_best),
                BUILD_TARGET.as_millis(),
                if s.table < BUILD_TARGET { "met" } else { "**MISSED**" }
            );
        }
    }
    let sizes: Vec<String> = CRITERION_SIZES
        .iter()
        .filter_map(|&n| Some(format!("{n} {}", fmt_ns(*criterion.get(&format!("region-build/{n}"))?))))
        .collect();
    if !sizes.is_empty() {
        let _ = writeln!(
            w,
            "Criterion (`benches/region.rs`, the same generator and configuration, planner included): {}.\n",
            sizes.join(", ")
        );
    }

    let _ = writeln!(w, "### Glow models through the default configuration\n");
    let rows = match &r.glow {
        Err(e) => {
            let _ = writeln!(w, "Not measured: {e}\n");
            return o;
        }
        Ok(rows) => rows,
    };
    let _ = writeln!(
        w,
        "Every trace under `benches/data/glow` as a model of activations (row id as name, `[lower, upper)` as \
         lifetime) through `RegionConfig::glow_defaults()`: the `{ACTIVATIONS}` region (alignment 64, `auto`). \
         *Glow* is the `usedSize` that Glow's own MemoryAllocator gives the same allocation sequence in its tests \
         (`tests/unittests/MemoryAllocatorTest.cpp`, `testMemAllocForModel*`; copied to \
         `benches/data/glow/GLOW_FIGURES.csv`); *vs Glow* is the region's size against it. *ratio* = peak / lower \
         bound.\n"
    );
    let _ = writeln!(
        w,
        "| model | buffers | region size (B) | peak (B) | lower bound (B) | ratio | reaches lower bound | Glow (B) | vs Glow | algorithm |\n\
         |---|---:|---:|---:|---:|---:|---|---:|---:|---|"
    );
    for g in rows {
        let ratio = if g.peak <= g.lower_bound {
            "1".to_string()
        } else {
            format!("{:.4}", g.peak as f64 / g.lower_bound.max(1) as f64)
        };
        let (glow, vs) = match g.glow {
            Some(b) if g.size > b => (b.to_string(), format!("**+{} B**", g.size - b)),
            Some(b) if g.size < b => {
                (b.to_string(), format!("−{} B ({:.2}%)", b - g.size, (b - g.size) as f64 / b as f64 * 100.0))
            }
            Some(b) => (b.to_string(), "equal".to_string()),
            None => ("—".to_string(), "—".to_string()),
        };
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} | {ratio} | {} | {glow} | {vs} | {}{} |",
            g.model,
            g.buffers,
            g.size,
            g.peak,
            g.lower_bound,
            if g.peak <= g.lower_bound { "yes" } else { "no" },
            g.algorithm,
            if g.proven && g.peak > g.lower_bound { " (proven optimal)" } else { "" }
        );
    }
    let sum = GlowSummary::of(rows);
    let _ = writeln!(
        w,
        "\n{} models, {} reach the lower bound. Against Glow's figure ({} models): larger on {} (target: none), \
         smaller on {}, equal on {}; {} B less in all.\n",
        rows.len(),
        sum.at_bound,
        sum.compared,
        sum.larger.len(),
        sum.smaller,
        sum.equal(),
        sum.saved
    );
    o
}
