//! The planning report printed by `nnmem plan`.

use std::fmt::Write;

use nnmem::plan::{PlanOutcome, Planner};

/// `peak / lower bound` with four decimals ("-" when the bound is zero).
pub fn ratio(peak: u64, lower_bound: u64) -> String {
    if lower_bound == 0 {
        return "-".into();
    }
    format!("{:.4}", peak as f64 / lower_bound as f64)
}

/// The summary: buffers, lower bound, peak, ratio, algorithm, plan time.
pub fn summary(name: &str, planner: &Planner, o: &PlanOutcome) -> String {
    let mut s = String::new();
    let chosen = planner.algorithm();
    let algorithm = if chosen == o.algorithm {
        chosen.name().to_string()
    } else {
        format!("{} (won by {})", chosen.name(), o.algorithm.name())
    };
    let _ = writeln!(s, "input           {name}");
    let _ = writeln!(s, "buffers         {}", o.offsets.len());
    let _ = writeln!(s, "lower bound     {} B", o.lower_bound);
    let _ = writeln!(s, "peak            {} B", o.peak);
    let _ = writeln!(s, "peak/lower      {}", ratio(o.peak, o.lower_bound));
    let _ = writeln!(s, "proven optimal  {}", if o.proven_optimal { "yes" } else { "no" });
    if o.nodes > 0 || o.best_bound > o.lower_bound {
        let _ = writeln!(s, "search          {} nodes, best lower bound {} B", o.nodes, o.best_bound);
    }
    let _ = writeln!(s, "algorithm       {algorithm}");
    let _ = writeln!(s, "plan time       {:.3} ms", o.elapsed.as_secs_f64() * 1e3);
    if o.work > 0 || o.time_limit_cut {
        let cut = if o.time_limit_cut { ", cut by the time limit" } else { "" };
        let _ = writeln!(s, "work            {} units{cut}", o.work);
    }
    if let Some(c) = planner.capacity() {
        let verdict = if o.fits { "fits".to_string() } else { format!("does NOT fit, missing {} B", o.peak - c) };
        let _ = writeln!(s, "capacity        {c} B: {verdict}");
    }
    s
}
