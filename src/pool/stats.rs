//! A pool's statistics (PyTorch-style, integers in bytes, never float MB),
//! tagged snapshots of them (RAF's memory profiler), and their text and
//! JSON reports.

use std::fmt::Write as _;

use crate::json::escape;
use crate::report_format::ReportFormat;

/// Statistics of one pool, integers in bytes.
///
/// Reserved figures and device calls are exact. Requested, allocated and
/// active peaks are exact while one shard serves the pool; with several
/// shards each is the sum of the shards' own peaks, an upper bound of the
/// pool's true peak (the shards peak independently).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Bytes asked for by the blocks handed out now.
    pub requested_bytes: u64,
    /// Peak of `requested_bytes`.
    pub requested_peak: u64,
    /// Bytes the blocks handed out now occupy (after the strategy's rounding).
    pub allocated_bytes: u64,
    /// Peak of `allocated_bytes`.
    pub allocated_peak: u64,
    /// Bytes held from the device now (handed out, cached or planned).
    pub reserved_bytes: u64,
    /// Peak of `reserved_bytes`.
    pub reserved_peak: u64,
    /// Blocks handed out now.
    pub active_blocks: u64,
    /// Peak of `active_blocks`.
    pub active_peak: u64,
    /// Idle blocks held for reuse.
    pub cached_blocks: u64,
    /// Their bytes.
    pub cached_bytes: u64,
    /// The largest idle block, in bytes (0 when none).
    pub largest_free_block: u64,
    /// Successful allocations since the pool was made.
    pub allocs: u64,
    /// Frees since the pool was made.
    pub frees: u64,
    /// Device allocations.
    pub device_allocs: u64,
    /// Device frees.
    pub device_frees: u64,
    /// Allocations retried after an out-of-memory (idle memory released
    /// first).
    pub oom_retries: u64,
    /// Allocations finally refused by the pool's byte limit.
    pub limit_refusals: u64,
    /// Allocations a replay plan served.
    pub served_from_plan: u64,
    /// Iterations that departed from the recorded sequence.
    pub plan_departures: u64,
    /// The replay plan's block (0 without a plan).
    pub plan_bytes: u64,
    /// The lower bound of the recorded iteration (0 without a plan).
    pub plan_lower_bound: u64,
    /// The pool's byte limit on reserved bytes (0: none).
    pub limit: u64,
}

/// Stats taken at a moment the user tagged (`Pool::snapshot`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The user's tag.
    pub tag: String,
    /// The statistics at that moment.
    pub stats: Stats,
}

impl Stats {
    /// Every figure with its name, in declaration order (the JSON keys and
    /// the text report's words).
    pub fn fields(&self) -> [(&'static str, u64); 22] {
        [
            ("requested_bytes", self.requested_bytes),
            ("requested_peak", self.requested_peak),
            ("allocated_bytes", self.allocated_bytes),
            ("allocated_peak", self.allocated_peak),
            ("reserved_bytes", self.reserved_bytes),
            ("reserved_peak", self.reserved_peak),
            ("active_blocks", self.active_blocks),
            ("active_peak", self.active_peak),
            ("cached_blocks", self.cached_blocks),
            ("cached_bytes", self.cached_bytes),
            ("largest_free_block", self.largest_free_block),
            ("allocs", self.allocs),
            ("frees", self.frees),
            ("device_allocs", self.device_allocs),
            ("device_frees", self.device_frees),
            ("oom_retries", self.oom_retries),
            ("limit_refusals", self.limit_refusals),
            ("served_from_plan", self.served_from_plan),
            ("plan_departures", self.plan_departures),
            ("plan_bytes", self.plan_bytes),
            ("plan_lower_bound", self.plan_lower_bound),
            ("limit", self.limit),
        ]
    }
}

const PREFIX: &str = "[nnmem pool]";

/// The report of one pool's `stats` (strategy and device named) in `format`.
pub fn report(strategy: &str, device: &str, stats: &Stats, format: ReportFormat) -> String {
    match format {
        ReportFormat::Text => {
            let mut out = format!("{PREFIX} strategy {strategy}, device {device}\n");
            text_lines(&mut out, "", stats);
            out
        }
        ReportFormat::Json => {
            let mut out = String::from("{\n");
            let _ = writeln!(out, "  \"strategy\": \"{}\",", escape(strategy));
            let _ = writeln!(out, "  \"device\": \"{}\",", escape(device));
            json_fields(&mut out, "  ", stats);
            out.push_str("}\n");
            out
        }
    }
}

/// The report of a pool's trace of tagged snapshots in `format`.
pub fn trace_report(strategy: &str, device: &str, trace: &[Snapshot], format: ReportFormat) -> String {
    match format {
        ReportFormat::Text => {
            let mut out = format!("{PREFIX} strategy {strategy}, device {device}, {} snapshot(s)\n", trace.len());
            for s in trace {
                text_lines(&mut out, &format!("[{}] ", s.tag), &s.stats);
            }
            out
        }
        ReportFormat::Json => {
            let mut out = String::from("{\n");
            let _ = writeln!(out, "  \"strategy\": \"{}\",", escape(strategy));
            let _ = writeln!(out, "  \"device\": \"{}\",", escape(device));
            out.push_str("  \"snapshots\": [");
            for (i, s) in trace.iter().enumerate() {
                out.push_str(if i == 0 { "\n" } else { ",\n" });
                let _ = writeln!(out, "    {{\n      \"tag\": \"{}\",", escape(&s.tag));
                json_fields(&mut out, "      ", &s.stats);
                out.push_str("    }");
            }
            out.push_str(if trace.is_empty() { "]\n}\n" } else { "\n  ]\n}\n" });
            out
        }
    }
}

fn text_lines(out: &mut String, tag: &str, s: &Stats) {
    let limit = if s.limit == 0 { "none".to_string() } else { format!("{} B", s.limit) };
    let lines = [
        format!("requested {} B (peak {} B)", s.requested_bytes, s.requested_peak),
        format!("allocated {} B (peak {} B)", s.allocated_bytes, s.allocated_peak),
        format!("reserved {} B (peak {} B), limit {limit}", s.reserved_bytes, s.reserved_peak),
        format!("active {} blocks (peak {})", s.active_blocks, s.active_peak),
        format!(
            "cached {} blocks, {} B, largest free block {} B",
            s.cached_blocks, s.cached_bytes, s.largest_free_block
        ),
        format!(
            "allocs {}, frees {}, device allocs {}, device frees {}",
            s.allocs, s.frees, s.device_allocs, s.device_frees
        ),
        format!("oom retries {}, limit refusals {}", s.oom_retries, s.limit_refusals),
        format!(
            "replay: served from plan {}, departures {}, plan {} B, lower bound {} B",
            s.served_from_plan, s.plan_departures, s.plan_bytes, s.plan_lower_bound
        ),
    ];
    for line in lines {
        let _ = writeln!(out, "{PREFIX} {tag}{line}");
    }
}

fn json_fields(out: &mut String, indent: &str, s: &Stats) {
    let fields = s.fields();
    for (i, (name, value)) in fields.iter().enumerate() {
        let comma = if i + 1 < fields.len() { "," } else { "" };
        let _ = writeln!(out, "{indent}\"{name}\": {value}{comma}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Stats {
        Stats { requested_bytes: 11, allocated_bytes: 4096, reserved_bytes: 8192, limit: 65536, ..Stats::default() }
    }

    #[test]
    fn json_report_parses_with_every_field() {
        let v: serde_json::Value =
            serde_json::from_str(&report("page-unit", "host \"x\"", &sample(), ReportFormat::Json)).unwrap();
        assert_eq!(v["strategy"], "page-unit");
        assert_eq!(v["device"], "host \"x\"");
        for (name, value) in sample().fields() {
            assert_eq!(v[name].as_u64(), Some(value), "{name}");
        }
    }

    #[test]
    fn trace_report_lists_each_snapshot() {
        let trace = vec![
            Snapshot { tag: "first".into(), stats: sample() },
            Snapshot { tag: "second".into(), stats: Stats { frees: 3, ..sample() } },
        ];
        let v: serde_json::Value =
            serde_json::from_str(&trace_report("no-pool", "host", &trace, ReportFormat::Json)).unwrap();
        let snaps = v["snapshots"].as_array().unwrap();
        assert_eq!(snaps.len(), 2);
        assert_eq!(snaps[1]["tag"], "second");
        assert_eq!(snaps[1]["frees"], 3);
        let empty: serde_json::Value =
            serde_json::from_str(&trace_report("no-pool", "host", &[], ReportFormat::Json)).unwrap();
        assert_eq!(empty["snapshots"].as_array().unwrap().len(), 0);
        let text = trace_report("no-pool", "host", &trace, ReportFormat::Text);
        assert!(text.contains("[nnmem pool] [second] allocs 0, frees 3"), "{text}");
    }

    #[test]
    fn text_report_says_bytes_and_limit() {
        let text = report("page-unit", "host", &sample(), ReportFormat::Text);
        assert!(text.starts_with("[nnmem pool] strategy page-unit, device host\n"), "{text}");
        assert!(text.contains("reserved 8192 B (peak 0 B), limit 65536 B"), "{text}");
        let none = report("page-unit", "host", &Stats::default(), ReportFormat::Text);
        assert!(none.contains("limit none"), "{none}");
    }
}
