//! The pools on a real GPU: what `scripts/gpu-check.sh` printed on the last
//! GPU machine lent to the project, kept in `benches/gpu/gpu-check.txt`
//! (no GPU is at hand where `scripts/bench.sh` usually runs, so the figures
//! are transcribed from that record, never measured here). The record is
//! replaced by running the script on a GPU machine and saving its output.

use std::fmt::Write as _;
use std::path::Path;

use super::Target;

/// Where the record lives, from the repository root.
pub const RECORD: &str = "benches/gpu/gpu-check.txt";

/// What the record says.
pub struct GpuRun {
    /// The GPU as `nvidia-smi -L` named it.
    device: String,
    /// The script's run line: host and date.
    when: String,
    /// The nnmem build that ran (commit and build date).
    binary: String,
    /// The CUDA runtime line of the program.
    runtime: String,
    /// "N passed, M failed".
    verdict: String,
    /// Whether the verdict counts no failure.
    clean: bool,
    /// The timings' description and their Markdown table.
    timing_note: String,
    timing_table: Vec<String>,
}

fn after<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.lines().find_map(|l| l.strip_prefix(prefix)).map(str::trim)
}

/// Reads the record under `root`; `None` when there is none (or it is not
/// a GPU run: the script's "no GPU" line).
pub fn read(root: &Path) -> Option<GpuRun> {
    let text = std::fs::read_to_string(root.join(RECORD)).ok()?;
    if text.contains("gpu-check: no GPU") {
        return None;
    }
    let lines: Vec<&str> = text.lines().collect();
    let device = lines.iter().position(|l| l.trim() == "nvidia-smi -L:").and_then(|i| lines.get(i + 1)).map(|l| {
        let named = l.trim().split(" (UUID").next().unwrap_or("");
        // "GPU 0: NVIDIA H200" -> "NVIDIA H200"
        named.split_once(": ").map_or(named, |(_, name)| name).to_string()
    })?;
    let verdict = lines.iter().rev().find(|l| l.contains(" passed, ") && l.contains(" failed"))?.trim().to_string();
    let clean = verdict.contains(" 0 failed");
    let table: Vec<String> = lines.iter().filter(|l| l.starts_with('|')).map(|l| l.to_string()).collect();
    let note = lines.iter().find(|l| l.starts_with("Median ns per alloc+free pair")).map(|l| l.to_string())?;
    Some(GpuRun {
        device,
        when: after(&text, "== gpu-check on ")?.to_string(),
        binary: after(&text, "binary: nnmem ")?.to_string(),
        runtime: after(&text, "gpu-check: CUDA runtime ").unwrap_or("?").to_string(),
        verdict,
        clean,
        timing_note: note,
        timing_table: table,
    })
}

/// The cells of the timings row for `size` ("64 B", ...), by column.
fn row<'a>(run: &'a GpuRun, size: &str) -> Option<Vec<&'a str>> {
    run.timing_table.iter().find_map(|l| {
        let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
        (cells.first() == Some(&size)).then_some(cells)
    })
}

/// Target (w): the pools through the CUDA allocator.
pub fn target(run: Option<&GpuRun>) -> Target {
    let what = "(w) pools through the CUDA allocator (where a GPU is lent)".to_string();
    let Some(run) = run else {
        return Target {
            what,
            result: format!("no GPU run recorded ({RECORD}): every pool figure here is host memory"),
            status: "not measured",
        };
    };
    // Columns: size, page-unit, caching, replay, no-pool, cudaMalloc+cudaFree, cudaMallocAsync+cudaFreeAsync.
    let pair = row(run, "4 KiB").filter(|c| c.len() >= 7).map_or_else(String::new, |c| {
        format!(
            "; a cached 4 KiB pair: page-unit {} ns, caching {} ns, replay {} ns, beside cudaMalloc+cudaFree {} ns \
             and cudaMallocAsync+cudaFreeAsync {} ns",
            c[1], c[2], c[3], c[5], c[6]
        )
    });
    Target {
        what,
        result: format!("{}: {} checks on device memory ({}){pair}", run.device, run.verdict, run.when),
        status: if run.clean { "measured" } else { "FAILED" },
    }
}

/// The "Pools on a GPU" subsection.
pub fn render(run: Option<&GpuRun>) -> String {
    let mut o = String::new();
    let w = &mut o;
    let _ = writeln!(w, "\n### Pools on a GPU (`scripts/gpu-check.sh`)\n");
    let Some(run) = run else {
        let _ = writeln!(w, "No GPU run is recorded in `{RECORD}`.");
        return o;
    };
    let _ = writeln!(
        w,
        "Transcribed from `{RECORD}`, the output of `scripts/gpu-check.sh` on {} ({}; nnmem {}; CUDA runtime {}): \
         every strategy, the stream-ordered path, the registry and a workbuffer model on device memory, each block \
         checked through `cudaMemcpy`: {}. Replace the record by running the script on a GPU machine.\n",
        run.device, run.when, run.binary, run.runtime, run.verdict
    );
    let _ = writeln!(w, "{}\n", run.timing_note);
    for line in &run.timing_table {
        let _ = writeln!(w, "{line}");
    }
    o
}
