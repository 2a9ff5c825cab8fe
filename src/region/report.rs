//! The region table as text or JSON (what `nnm_region_table_report` and
//! `nnmem regions` print).
//!
//! Both list the same things in the same order: the memory levels, the
//! regions (level by level, in layout order), every tensor (model order),
//! then the spills (one per tensor moved, in the order they first moved, with
//! the regions passed through). JSON integers are bytes; the keys keep a
//! fixed order so that outputs compare byte for byte. A level's size is the
//! same in both: the bytes from its start (its lowest region's base) to its
//! highest end address.

use std::fmt::Write as _;

use super::table::RegionTable;
use crate::json::escape;
use crate::report_format::ReportFormat;

impl RegionTable {
    /// The table as text or JSON (format in the lead's PREAMBLE).
    pub fn report(&self, format: ReportFormat) -> String {
        match format {
            ReportFormat::Text => text(self),
            ReportFormat::Json => json(self),
        }
    }

    /// The name of region `index`; `?` for an index no region has (the
    /// fields are public, so a hand-made table may be inconsistent, and a
    /// report must not panic on it).
    pub(crate) fn region_name(&self, index: usize) -> &str {
        self.regions.get(index).map_or("?", |r| r.name.as_str())
    }

    /// The name of tensor `id`, `?` when the table has no such tensor.
    pub(crate) fn tensor_name(&self, id: usize) -> &str {
        self.placements.get(id).map_or("?", |p| &*p.name)
    }
}

fn text(t: &RegionTable) -> String {
    let mut out = String::new();
    // A level whose regions start far from 0 (an SRAM bank at 0x20000000)
    // reads as its span, not as the bytes from address 0.
    let levels: Vec<String> = t
        .levels
        .iter()
        .map(|l| match l.start {
            0 => format!("{} (rank {}, {} B)", l.name, l.rank, l.size),
            start => format!("{} (rank {}, {} B from {start:#x})", l.name, l.rank, l.span()),
        })
        .collect();
    let _ = writeln!(
        out,
        "{} region{} in {} level{}: {}",
        t.regions.len(),
        plural(t.regions.len()),
        t.levels.len(),
        plural(t.levels.len()),
        levels.join(", ")
    );
    let mut rows = vec![row(&["level", "region", "base", "size", "peak", "lower bound", "tensors", "algorithm"])];
    for r in &t.regions {
        let optimal = if r.proven_optimal { " (optimal)" } else { "" };
        rows.push(vec![
            r.level.clone(),
            r.name.clone(),
            format!("{:#x}", r.base_address),
            format!("{} B", r.size),
            format!("{} B", r.peak),
            format!("{} B", r.lower_bound),
            r.tensors.len().to_string(),
            format!("{}{optimal}", r.algorithm.name()),
        ]);
    }
    table(&mut out, &rows, &[false, false, true, true, true, true, true, false]);
    attributes(&mut out, t);
    let _ = writeln!(out, "\n{} tensor{}:", t.placements.len(), plural(t.placements.len()));
    let mut rows = vec![row(&["tensor", "function", "kind", "region", "offset", "address", "size", ""])];
    for p in &t.placements {
        rows.push(vec![
            p.name.to_string(),
            p.function.to_string(),
            p.kind.name().to_string(),
            t.region_name(p.region).to_string(),
            p.offset.to_string(),
            format!("{:#x}", p.address),
            format!("{} B", p.size),
            if p.spilled { "spilled".to_string() } else { String::new() },
        ]);
    }
    table(&mut out, &rows, &[false, false, false, false, true, true, true, false]);
    if !t.spills.is_empty() {
        let _ = writeln!(out, "\n{} spill{}:", t.spills.len(), plural(t.spills.len()));
        for s in &t.spills {
            let path: Vec<&str> =
                std::iter::once(s.from).chain(s.via.iter().copied()).chain([s.to]).map(|r| t.region_name(r)).collect();
            let _ = writeln!(out, "{}: {}: {}", t.tensor_name(s.tensor), path.join(" -> "), s.reason);
        }
    }
    out
}

/// The regions' attributes, one line per region that has some, after a
/// blank line: `fc-weights: bank = 0, dma = burst-64`. Nothing when no
/// region has any.
fn attributes(out: &mut String, t: &RegionTable) {
    let with: Vec<_> = t.regions.iter().filter(|r| !r.attributes.is_empty()).collect();
    if with.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nattributes:");
    for r in with {
        let pairs: Vec<String> = r.attributes.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        let _ = writeln!(out, "{}: {}", r.name, pairs.join(", "));
    }
}

pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

pub(crate) fn row(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|c| c.to_string()).collect()
}

/// Writes `rows` as columns two spaces apart, each as wide as its widest
/// cell; `right[i]`: column `i` (figures) is right-aligned. Trailing blanks
/// are cut. Also the workbuffer report's tables.
pub(crate) fn table(out: &mut String, rows: &[Vec<String>], right: &[bool]) {
    let mut widths = vec![0; right.len()];
    for r in rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for r in rows {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let pad = " ".repeat(widths[i] - cell.chars().count());
            if right[i] {
                line.push_str(&pad);
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&pad);
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

fn json(t: &RegionTable) -> String {
    let mut out = String::from("{\n");
    let items = |out: &mut String, key: &str, items: Vec<String>, last: bool| {
        let _ = write!(out, "  \"{key}\": [");
        for (i, item) in items.iter().enumerate() {
            let _ = write!(out, "{}\n    {item}", if i == 0 { "" } else { "," });
        }
        let _ = writeln!(out, "{}]{}", if items.is_empty() { "" } else { "\n  " }, if last { "" } else { "," });
    };
    let levels = t
        .levels
        .iter()
        .map(|l| {
            // Start and size as the text gives them, and where it ends.
            format!(
                "{{\"name\": \"{}\", \"rank\": {}, \"start_address\": {}, \"size_bytes\": {}, \"end_address\": {}}}",
                escape(&l.name),
                l.rank,
                l.start,
                l.span(),
                l.size
            )
        })
        .collect();
    items(&mut out, "levels", levels, false);
    let regions = t
        .regions
        .iter()
        .map(|r| {
            let tensors: Vec<String> =
                r.tensors.iter().map(|&id| format!("\"{}\"", escape(t.tensor_name(id)))).collect();
            let attributes: Vec<String> =
                r.attributes.iter().map(|(k, v)| format!("\"{}\": \"{}\"", escape(k), escape(v))).collect();
            format!(
                "{{\"name\": \"{}\", \"description_id\": {}, \"level\": \"{}\", \"base_address\": {}, \
                 \"fixed_base\": {}, \"size_bytes\": {}, \"peak_bytes\": {}, \"lower_bound_bytes\": {}, \"algorithm\": \"{}\", \
                 \"proven_optimal\": {}, \"tensors\": [{}], \"attributes\": {{{}}}}}",
                escape(&r.name),
                r.description_id,
                escape(&r.level),
                r.base_address,
                r.fixed_base,
                r.size,
                r.peak,
                r.lower_bound,
                r.algorithm.name(),
                r.proven_optimal,
                tensors.join(", "),
                attributes.join(", ")
            )
        })
        .collect();
    items(&mut out, "regions", regions, false);
    let tensors = t
        .placements
        .iter()
        .map(|p| {
            format!(
                "{{\"name\": \"{}\", \"function\": \"{}\", \"kind\": \"{}\", \"size_bytes\": {}, \"region\": \"{}\", \
                 \"offset\": {}, \"address\": {}, \"spilled\": {}}}",
                escape(&p.name),
                escape(&p.function),
                p.kind.name(),
                p.size,
                escape(t.region_name(p.region)),
                p.offset,
                p.address,
                p.spilled
            )
        })
        .collect();
    items(&mut out, "tensors", tensors, false);
    let spills = t
        .spills
        .iter()
        .map(|s| {
            let via: Vec<String> = s.via.iter().map(|&r| format!("\"{}\"", escape(t.region_name(r)))).collect();
            format!(
                "{{\"tensor\": \"{}\", \"from\": \"{}\", \"to\": \"{}\", \"via\": [{}], \"reason\": \"{}\"}}",
                escape(t.tensor_name(s.tensor)),
                escape(t.region_name(s.from)),
                escape(t.region_name(s.to)),
                via.join(", "),
                escape(&s.reason)
            )
        })
        .collect();
    items(&mut out, "spills", spills, true);
    out.push_str("}\n");
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::plan::Algorithm;
    use crate::region::{LevelLayout, RegionInstance, SpillRecord, TensorKind, TensorPlacement};

    fn region(name: &str, level: &str, rank: u32, base: u64, size: u64, tensors: Vec<usize>) -> RegionInstance {
        RegionInstance {
            name: name.into(),
            description: 0,
            description_id: 7,
            level: level.into(),
            level_rank: rank,
            base_address: base,
            fixed_base: false,
            size,
            peak: size,
            lower_bound: size / 2,
            algorithm: Algorithm::Sequential,
            proven_optimal: false,
            attributes: vec![],
            tensors,
        }
    }

    fn placement(name: &str, kind: TensorKind, size: u64, region: usize, offset: u64, base: u64) -> TensorPlacement {
        TensorPlacement {
            name: name.into(),
            function: "main".into(),
            kind,
            size,
            region,
            offset,
            address: base + offset,
            spilled: false,
            lifetime: crate::plan::Lifetime { start: 0, end: 4 },
        }
    }

    /// Two levels, three regions, a view, a spill, and a name that needs
    /// escaping in JSON.
    pub(crate) fn sample() -> RegionTable {
        let mut t = RegionTable {
            levels: vec![
                LevelLayout { name: "sram".into(), rank: 0, start: 0, size: 4096 },
                LevelLayout { name: "ddr".into(), rank: 1, start: 0x10000, size: 0x10000 + 256 },
            ],
            regions: vec![
                region("sram-weights", "sram", 0, 0, 1024, vec![0]),
                region("activations", "sram", 0, 1024, 3072, vec![2, 3, 4]),
                region("ddr-weights", "ddr", 1, 0x10000, 256, vec![1]),
            ],
            placements: vec![
                placement("fc1.weight", TensorKind::Constant, 1024, 0, 0, 0),
                placement("fc2.weight", TensorKind::Constant, 256, 2, 0, 0x10000),
                placement("x \"in\"", TensorKind::Activation, 2048, 1, 0, 1024),
                placement("y", TensorKind::Activation, 1024, 1, 2048, 1024),
                placement("x.view", TensorKind::View, 512, 1, 512, 1024),
            ],
            spills: vec![SpillRecord {
                tensor: 1,
                from: 0,
                to: 2,
                via: vec![],
                reason: "region 'sram-weights' needs 1280 B, capacity 1024 B".into(),
            }],
        };
        t.regions[1].algorithm = Algorithm::FloorFirst;
        t.regions[1].proven_optimal = true;
        t.placements[1].spilled = true;
        // The run is steps [0, 4): weights live over all of it.
        let steps = |start, end| crate::plan::Lifetime { start, end };
        (t.placements[2].lifetime, t.placements[3].lifetime, t.placements[4].lifetime) =
            (steps(0, 2), steps(1, 4), steps(1, 2));
        t
    }

    #[test]
    fn json_has_every_key_in_order() {
        let t = sample();
        let text = t.report(ReportFormat::Json);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        // serde_json sorts keys: read their order from the text, where each
        // region and tensor is one line.
        let keys = |line: &str| {
            line.split('"')
                .collect::<Vec<_>>()
                .windows(2)
                .filter(|w| w[1].starts_with(": "))
                .map(|w| w[0].to_string())
                .collect::<Vec<_>>()
        };
        let line = |prefix: &str| text.lines().find(|l| l.trim_start().starts_with(prefix)).unwrap().to_string();
        let top: Vec<&str> =
            text.lines().filter(|l| l.starts_with("  \"")).map(|l| l.split('"').nth(1).unwrap()).collect();
        assert_eq!(top, ["levels", "regions", "tensors", "spills"]);
        // ddr's one region of 256 B sits at 0x10000: the text's "256 B from
        // 0x10000", not its end address.
        assert_eq!(
            v["levels"][1],
            serde_json::json!({"name": "ddr", "rank": 1, "start_address": 65536, "size_bytes": 256,
                "end_address": 65792})
        );
        assert_eq!(
            keys(&line("{\"name\": \"ddr\", \"rank\"")),
            ["name", "rank", "start_address", "size_bytes", "end_address"]
        );
        assert_eq!(
            v["levels"][0],
            serde_json::json!({"name": "sram", "rank": 0, "start_address": 0, "size_bytes": 4096, "end_address": 4096})
        );
        let r = &v["regions"][1];
        assert_eq!(
            keys(&line("{\"name\": \"activations\"")),
            [
                "name",
                "description_id",
                "level",
                "base_address",
                "fixed_base",
                "size_bytes",
                "peak_bytes",
                "lower_bound_bytes",
                "algorithm",
                "proven_optimal",
                "tensors",
                "attributes"
            ]
        );
        assert_eq!(r["name"], "activations");
        assert_eq!((r["base_address"].as_u64(), r["size_bytes"].as_u64()), (Some(1024), Some(3072)));
        assert_eq!((r["peak_bytes"].as_u64(), r["lower_bound_bytes"].as_u64()), (Some(3072), Some(1536)));
        assert_eq!((r["algorithm"].as_str(), r["proven_optimal"].as_bool()), (Some("floor-first"), Some(true)));
        assert_eq!(r["tensors"], serde_json::json!(["x \"in\"", "y", "x.view"]));
        let p = &v["tensors"][1];
        assert_eq!(
            keys(&line("{\"name\": \"fc2.weight\"")),
            ["name", "function", "kind", "size_bytes", "region", "offset", "address", "spilled"]
        );
        assert_eq!(
            *p,
            serde_json::json!({"name": "fc2.weight", "function": "main", "kind": "constant", "size_bytes": 256,
                "region": "ddr-weights", "offset": 0, "address": 65536, "spilled": true})
        );
        assert_eq!(v["tensors"][4]["address"], 1536);
        assert_eq!(v["tensors"][4]["kind"], "view");
        assert_eq!(
            v["spills"][0],
            serde_json::json!({"tensor": "fc2.weight", "from": "sram-weights", "to": "ddr-weights", "via": [],
                "reason": "region 'sram-weights' needs 1280 B, capacity 1024 B"})
        );
        // The same table gives the same bytes.
        assert_eq!(text, sample().report(ReportFormat::Json));
    }

    #[test]
    fn json_of_an_empty_table_parses() {
        let t = RegionTable { levels: vec![], regions: vec![], placements: vec![], spills: vec![] };
        let text = t.report(ReportFormat::Json);
        assert_eq!(text, "{\n  \"levels\": [],\n  \"regions\": [],\n  \"tensors\": [],\n  \"spills\": []\n}\n");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(v["regions"].as_array().unwrap().is_empty());
    }

    #[test]
    fn text_lists_regions_tensors_and_spills_in_columns() {
        let text = sample().report(ReportFormat::Text);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "3 regions in 2 levels: sram (rank 0, 4096 B), ddr (rank 1, 256 B from 0x10000)");
        assert_eq!(lines[1], "level  region           base    size    peak  lower bound  tensors  algorithm");
        assert_eq!(lines[2], "sram   sram-weights      0x0  1024 B  1024 B        512 B        1  sequential");
        assert_eq!(
            lines[3],
            "sram   activations     0x400  3072 B  3072 B       1536 B        3  floor-first (optimal)"
        );
        assert_eq!(lines[4], "ddr    ddr-weights   0x10000   256 B   256 B        128 B        1  sequential");
        assert_eq!(lines[6], "5 tensors:");
        assert_eq!(lines[7], "tensor      function  kind        region        offset  address    size");
        assert_eq!(lines[9], "fc2.weight  main      constant    ddr-weights        0  0x10000   256 B  spilled");
        assert_eq!(lines[12], "x.view      main      view        activations      512    0x600   512 B");
        assert_eq!(lines[14], "1 spill:");
        assert_eq!(
            lines[15],
            "fc2.weight: sram-weights -> ddr-weights: region 'sram-weights' needs 1280 B, capacity 1024 B"
        );
        assert_eq!(lines.len(), 16);
    }

    #[test]
    fn an_inconsistent_table_is_reported_without_panicking() {
        let mut t = sample();
        t.placements[0].region = 9;
        t.spills[0].tensor = 42;
        let text = t.report(ReportFormat::Text);
        assert!(text.contains("?: sram-weights -> ddr-weights"), "{text}");
        let v: serde_json::Value = serde_json::from_str(&t.report(ReportFormat::Json)).unwrap();
        assert_eq!(v["tensors"][0]["region"], "?");
    }
}
