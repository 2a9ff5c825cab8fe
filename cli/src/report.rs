//! The planning report printed by `nnmem plan`: a text summary for people
//! and a JSON summary for scripts (schema in README.md, "nnmem plan --json").

use std::fmt::Write;

use nnmem::plan::csv::Row;
use nnmem::plan::units::bytes;
use nnmem::plan::{PlanOutcome, Planner};

/// `peak / lower bound` with four decimals ("-" when the bound is zero).
pub fn ratio(peak: u64, lower_bound: u64) -> String {
    if lower_bound == 0 {
        return "-".into();
    }
    format!("{:.4}", peak as f64 / lower_bound as f64)
}

/// The algorithm asked for, and for `auto` the heuristic that won:
/// "auto (won by floor-first)".
pub fn algorithm(planner: &Planner, o: &PlanOutcome) -> String {
    if planner.algorithm() == o.algorithm {
        o.algorithm.name().to_string()
    } else {
        format!("{} (won by {})", planner.algorithm().name(), o.algorithm.name())
    }
}

/// What one `nnmem plan` run found: the outcome, or only the lower bound
/// when the capacity was below it and nothing was planned.
pub struct Summary<'a> {
    pub input: &'a str,
    /// The input's rows, to name buffers by id and line.
    pub rows: &'a [Row],
    pub planner: &'a Planner,
    pub outcome: Option<&'a PlanOutcome>,
}

impl Summary<'_> {
    fn lower_bound(&self) -> u64 {
        self.outcome.map_or_else(|| self.planner.lower_bound(), |o| o.lower_bound)
    }

    /// Bytes missing to fit the capacity: `peak - capacity`, or without a
    /// plan (capacity below the lower bound) at least `lower bound - capacity`.
    fn missing(&self) -> Option<u64> {
        let capacity = self.planner.capacity()?;
        let need = self.outcome.map_or_else(|| self.lower_bound(), |o| o.peak);
        Some(need.saturating_sub(capacity))
    }

    /// The text summary: buffers, lower bound, peak, ratio, algorithm, plan
    /// time, capacity verdict.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "input           {}", self.input);
        let _ = writeln!(s, "buffers         {}", self.planner.buffer_count());
        let _ = writeln!(s, "lower bound     {}", bytes(self.lower_bound()));
        if let Some(o) = self.outcome {
            let algorithm = algorithm(self.planner, o);
            let _ = writeln!(s, "peak            {}", bytes(o.peak));
            let _ = writeln!(s, "peak/lower      {}", ratio(o.peak, o.lower_bound));
            let _ = writeln!(s, "proven optimal  {}", if o.proven_optimal { "yes" } else { "no" });
            if o.nodes > 0 || o.best_bound > o.lower_bound {
                let _ = writeln!(s, "search          {} nodes, best lower bound {}", o.nodes, bytes(o.best_bound));
            }
            let _ = writeln!(s, "algorithm       {algorithm}");
            if let Some(f) = o.fixed_overlaps.first {
                let _ = writeln!(
                    s,
                    "fixed overlaps  {} pair(s) of fixed buffers share memory (trusted), first {} and {} at step {}",
                    o.fixed_overlaps.count,
                    self.rows[f.first].describe(),
                    self.rows[f.second].describe(),
                    f.step
                );
            }
            let _ = writeln!(s, "plan time       {:.3} ms", o.elapsed.as_secs_f64() * 1e3);
            if o.work > 0 || o.time_limit_cut {
                let cut = if o.time_limit_cut { ", cut by the time limit" } else { "" };
                let _ = writeln!(s, "work            {} units{cut}", o.work);
            }
        } else {
            let _ = writeln!(s, "peak            - (not planned: the capacity is below the lower bound)");
        }
        if let (Some(c), Some(missing)) = (self.planner.capacity(), self.missing()) {
            let verdict = match self.outcome {
                Some(o) if o.fits => "fits".to_string(),
                Some(_) => format!("does NOT fit, missing {}", bytes(missing)),
                None => format!("does NOT fit, missing at least {}", bytes(missing)),
            };
            let _ = writeln!(s, "capacity        {}: {verdict}", bytes(c));
        }
        s
    }

    /// The JSON summary, one object; keys and meanings are documented in
    /// README.md and stay stable (`"format": "nnmem-plan-summary/1"`).
    pub fn json(&self) -> String {
        let o = self.outcome;
        let lb = self.lower_bound();
        let num = |v: Option<u64>| v.map_or_else(|| "null".to_string(), |v| v.to_string());
        let ratio = match o {
            Some(o) if lb > 0 => format!("{:.6}", o.peak as f64 / lb as f64),
            _ => "null".into(),
        };
        let fields = [
            ("format", string("nnmem-plan-summary/1")),
            ("input", string(self.input)),
            ("buffers", self.planner.buffer_count().to_string()),
            ("alignment", self.planner.alignment().to_string()),
            ("lower_bound_bytes", lb.to_string()),
            ("peak_bytes", num(o.map(|o| o.peak))),
            ("peak_to_lower_bound", ratio),
            ("proven_optimal", o.is_some_and(|o| o.proven_optimal).to_string()),
            ("best_lower_bound_bytes", num(o.map(|o| o.best_bound))),
            ("algorithm", string(self.planner.algorithm().name())),
            ("winner", o.map_or_else(|| "null".to_string(), |o| string(o.algorithm.name()))),
            ("plan_time_ms", o.map_or_else(|| "null".to_string(), |o| format!("{:.3}", o.elapsed.as_secs_f64() * 1e3))),
            ("search_nodes", o.map_or(0, |o| o.nodes).to_string()),
            ("work_units", o.map_or(0, |o| o.work).to_string()),
            ("time_limit_cut", o.is_some_and(|o| o.time_limit_cut).to_string()),
            ("capacity_bytes", num(self.planner.capacity())),
            ("fits", o.is_some_and(|o| o.fits).to_string()),
            ("missing_bytes", num(self.missing())),
            ("fixed_overlap_count", o.map_or(0, |o| o.fixed_overlaps.count).to_string()),
            (
                "fixed_overlap_first",
                match o.and_then(|o| o.fixed_overlaps.first) {
                    Some(f) => format!(
                        "{{\"first\": {}, \"second\": {}, \"step\": {}}}",
                        string(&self.rows[f.first].id),
                        string(&self.rows[f.second].id),
                        f.step
                    ),
                    None => "null".into(),
                },
            ),
        ];
        let body: Vec<String> = fields.iter().map(|(k, v)| format!("  \"{k}\": {v}")).collect();
        format!("{{\n{}\n}}\n", body.join(",\n"))
    }
}

/// A JSON string literal.
fn string(text: &str) -> String {
    format!("\"{}\"", nnmem::json::escape(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(string("a\"b\\c\nd"), "\"a\\\"b\\\\c\\u000ad\"");
    }
}
