//! The region table as an SVG picture: one lane per memory level, regions
//! as bands, tensors inside.
//!
//! Each lane runs along its level's addresses, from 0 to the level's size.
//! The table has no lifetimes, so tensors are not drawn against time:
//! inside its band each tensor is a box at its address and as wide as its
//! size, and tensors whose bytes overlap (reuse, views inside their origin)
//! are stacked in rows, so every box stays visible. Row heights shrink with
//! the row count so that a lane keeps a bounded height; names go inside the
//! boxes and bands wide enough for them, every box and band has a tooltip,
//! and the labels of narrow bands go in rows under the lane.

use std::fmt::Write as _;

use super::table::{RegionInstance, RegionTable, TensorPlacement};
use super::tensor::TensorKind;
use crate::plan::svg::{binary_ticks, escape};
use crate::plan::units::{binary, bytes};

const WIDTH: f64 = 1600.0;
/// Room for the lane labels on the left.
const LEFT: f64 = 170.0;
const RIGHT: f64 = 40.0;
/// The title and the legend.
const TOP: f64 = 80.0;
/// A band's header: the region's name, base and size.
const BAND_HEADER: f64 = 34.0;
/// The tensor rows of one lane take at most this height (row heights
/// shrink), and each row at most `MAX_ROW`.
const ROWS_HEIGHT: f64 = 360.0;
const MAX_ROW: f64 = 18.0;
const MIN_ROW: f64 = 2.0;
/// The address axis under a lane, one line of a narrow band's label, the
/// gap between lanes.
const AXIS: f64 = 22.0;
const LABEL_LINE: f64 = 15.0;
const LANE_GAP: f64 = 26.0;
/// Labels of narrow bands: at most this many rows of them per lane.
const MAX_LABEL_ROWS: usize = 4;
/// Width of one character at the label font sizes (an estimate for
/// sans-serif), to decide what fits.
const CHAR_12: f64 = 6.8;
const CHAR_10: f64 = 5.8;
const CHAR_11: f64 = 6.3;
const SPILL_COLOR: &str = "#c00";

impl RegionTable {
    /// The picture, as a standalone SVG document; regions at a fixed base
    /// address are marked.
    pub fn svg(&self) -> String {
        let plot_w = WIDTH - LEFT - RIGHT;
        let mut body = String::new();
        let mut y = TOP;
        for (li, level) in self.levels.iter().enumerate() {
            let regions: Vec<usize> =
                (0..self.regions.len()).filter(|&r| self.regions[r].level == level.name).collect();
            // The lane spans from its lowest region (a level whose regions
            // sit at a fixed base far from 0, an SRAM bank at 0x20000000,
            // would be a hairline otherwise) to the level's size, and at
            // least to every band's end (a hand-made table may say less).
            let start = level.start;
            let end = regions.iter().map(|&r| end_of(&self.regions[r])).chain([level.size]).max().unwrap_or(0);
            let span = end.saturating_sub(start).max(1);
            let scale = plot_w / span as f64;
            let x = |address: u64| LEFT + address.saturating_sub(start) as f64 * scale;
            let rows: Vec<Vec<(usize, usize)>> =
                regions.iter().map(|&r| stack_rows(&self.regions[r], &self.placements)).collect();
            let row_count =
                rows.iter().map(|r| r.iter().map(|&(_, row)| row + 1).max().unwrap_or(0)).max().unwrap_or(0);
            let row_h = if row_count == 0 { MAX_ROW } else { (ROWS_HEIGHT / row_count as f64).clamp(MIN_ROW, MAX_ROW) };
            let band_h = BAND_HEADER + row_count.max(1) as f64 * row_h + 6.0;
            let (band_top, band_bottom) = (y, y + band_h);

            let _ = writeln!(body, r#"<g class="lane" id="level-{li}">"#);
            let _ = writeln!(
                body,
                r##"<rect x="{LEFT}" y="{band_top:.1}" width="{plot_w}" height="{band_h:.1}" fill="#f6f6f6" stroke="#999" stroke-width="0.5"/>"##
            );
            let _ = writeln!(
                body,
                r#"<text x="12" y="{:.1}" font-size="15" font-weight="bold">{}</text><text x="12" y="{:.1}" font-size="12">rank {}, {}</text><text x="12" y="{:.1}" font-size="12">{} region{}</text>{}"#,
                band_top + 18.0,
                escape(&level.name),
                band_top + 34.0,
                level.rank,
                // Its span, like the text report's: the bytes from its
                // lowest region (the "from" line), not from address 0.
                binary(level.size.saturating_sub(start)),
                band_top + 49.0,
                regions.len(),
                if regions.len() == 1 { "" } else { "s" },
                if start > 0 {
                    format!(r#"<text x="12" y="{:.1}" font-size="12">from {start:#x}</text>"#, band_top + 64.0)
                } else {
                    String::new()
                }
            );
            // Address axis: sizes from 0, or addresses in hex when the lane
            // starts elsewhere.
            let _ = writeln!(body, r##"<g class="axis" font-size="11" fill="#444" text-anchor="middle">"##);
            for a in binary_ticks(span).into_iter().map(|a| start + a) {
                let _ = writeln!(
                    body,
                    r##"<line x1="{0:.1}" y1="{band_bottom:.1}" x2="{0:.1}" y2="{1:.1}" stroke="#999"/><text x="{0:.1}" y="{2:.1}">{3}</text>"##,
                    x(a),
                    band_bottom + 4.0,
                    band_bottom + 15.0,
                    if start == 0 { binary(a) } else { format!("{a:#x}") }
                );
            }
            let _ = writeln!(body, "</g>");

            // Bands, then tensors over them, then the labels over both.
            let mut labels = String::new();
            let mut narrow: Vec<(f64, String)> = Vec::new();
            for (&r, rows) in regions.iter().zip(&rows) {
                let region = &self.regions[r];
                let (x0, x1) = (x(region.base_address), x(end_of(region)));
                let w = (x1 - x0).max(0.5);
                let fixed = region.fixed_base;
                let outline = if fixed {
                    r##"stroke="#000" stroke-width="2" stroke-dasharray="6 3""##
                } else {
                    r##"stroke="#555" stroke-width="1""##
                };
                let _ = writeln!(
                    body,
                    r##"<rect class="region" x="{x0:.2}" y="{band_top:.1}" width="{w:.2}" height="{band_h:.1}" fill="#e3eaf3" {outline}><title>{}</title></rect>"##,
                    escape(&region_tooltip(region, fixed))
                );
                let name = format!("{}{}", region.name, if fixed { " (fixed)" } else { "" });
                let figures = format!("{:#x}, {}", region.base_address, binary(region.size));
                let chars = name.chars().count().max(figures.chars().count()) as f64;
                if w >= chars * CHAR_12 + 8.0 {
                    let _ = writeln!(
                        labels,
                        r#"<text x="{:.1}" y="{:.1}" font-weight="bold">{}</text><text x="{:.1}" y="{:.1}">{}</text>"#,
                        x0 + 4.0,
                        band_top + 14.0,
                        escape(&name),
                        x0 + 4.0,
                        band_top + 28.0,
                        escape(&figures)
                    );
                } else {
                    narrow.push((x0, format!("{name}: {figures}")));
                }
                for &(id, row) in rows {
                    let p = &self.placements[id];
                    let (tx0, tx1) = (x(p.address), x(p.address.saturating_add(p.size)));
                    let tw = (tx1 - tx0).max(0.5);
                    let ty = band_top + BAND_HEADER + row as f64 * row_h;
                    let th = (row_h - if row_h >= 6.0 { 1.5 } else { 0.3 }).max(1.0);
                    let style = tensor_style(p, id);
                    let _ = writeln!(
                        body,
                        r#"<rect class="tensor" x="{tx0:.2}" y="{ty:.2}" width="{tw:.2}" height="{th:.2}" {style}><title>{}</title></rect>"#,
                        escape(&tensor_tooltip(p, &region.name))
                    );
                    let chars = p.name.chars().count() as f64;
                    if tw >= chars * CHAR_10 + 4.0 && th >= 11.0 {
                        let _ = writeln!(
                            labels,
                            r#"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle">{}</text>"#,
                            tx0 + tw / 2.0,
                            ty + th / 2.0 + 3.5,
                            escape(&p.name)
                        );
                    }
                }
            }
            let _ = writeln!(body, r##"<g class="labels" font-size="12" fill="#111">"##);
            body.push_str(&labels);
            let _ = writeln!(body, "</g>");
            y = band_bottom + AXIS;
            // Labels of narrow bands, left to right in rows, each led by a
            // tick at its band's start; what does not fit stays in the
            // tooltips.
            let placed = place_labels(&narrow, WIDTH - RIGHT);
            let shown = placed.iter().filter(|&&(row, _)| row < MAX_LABEL_ROWS).count();
            let used_rows =
                placed.iter().filter(|&&(row, _)| row < MAX_LABEL_ROWS).map(|&(row, _)| row + 1).max().unwrap_or(0);
            let _ = writeln!(body, r##"<g class="narrow-labels" font-size="11" fill="#333">"##);
            for ((x0, text), &(row, at)) in narrow.iter().zip(&placed).filter(|(_, &(row, _))| row < MAX_LABEL_ROWS) {
                let ly = y + row as f64 * LABEL_LINE + 10.0;
                // A leader from the band's start down to its label.
                let _ = writeln!(
                    body,
                    r##"<polyline points="{x0:.1},{band_bottom:.1} {x0:.1},{:.1} {at:.1},{:.1}" fill="none" stroke="#999" stroke-width="0.5"/><text x="{:.1}" y="{ly:.1}">{}</text>"##,
                    ly - 10.0,
                    ly - 10.0,
                    at + 2.0,
                    escape(text)
                );
            }
            y += used_rows as f64 * LABEL_LINE;
            if shown < narrow.len() {
                let _ = writeln!(
                    body,
                    r#"<text x="{LEFT}" y="{:.1}" font-style="italic">{} more narrow region{} (hover the bands)</text>"#,
                    y + 10.0,
                    narrow.len() - shown,
                    if narrow.len() - shown == 1 { "" } else { "s" }
                );
                y += LABEL_LINE;
            }
            let _ = writeln!(body, "</g>\n</g>");
            y += LANE_GAP;
        }
        let height = y.max(TOP + 40.0).ceil();
        let mut s = String::with_capacity(body.len() + 2000);
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="14">"#
        );
        let spilled = self.placements.iter().filter(|p| p.spilled).count();
        let title = format!(
            "{} tensor{} in {} region{}, {} level{}{}",
            self.placements.len(),
            if self.placements.len() == 1 { "" } else { "s" },
            self.regions.len(),
            if self.regions.len() == 1 { "" } else { "s" },
            self.levels.len(),
            if self.levels.len() == 1 { "" } else { "s" },
            if spilled > 0 { format!(", {spilled} spilled") } else { String::new() }
        );
        let _ = writeln!(s, "<title>{}</title>", escape(&title));
        let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
        let _ = writeln!(s, r#"<text x="12" y="24" font-size="16" font-weight="bold">{}</text>"#, escape(&title));
        legend(&mut s);
        s.push_str(&body);
        s.push_str("</svg>\n");
        s
    }
}

fn end_of(r: &RegionInstance) -> u64 {
    r.base_address.saturating_add(r.size)
}

/// The row of each of `region`'s tensors inside its band: tensors in
/// address order go to the first row whose boxes end at or before their
/// address (first fit), so overlapping byte ranges get separate rows.
fn stack_rows(region: &RegionInstance, placements: &[TensorPlacement]) -> Vec<(usize, usize)> {
    let mut ids: Vec<usize> = region.tensors.iter().copied().filter(|&id| id < placements.len()).collect();
    // Origins before their views at the same address: a view is never
    // larger than its origin, so larger first.
    ids.sort_by_key(|&id| (placements[id].address, std::cmp::Reverse(placements[id].size), id));
    let mut row_ends: Vec<u64> = Vec::new();
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let p = &placements[id];
        let row = match row_ends.iter().position(|&end| end <= p.address) {
            Some(row) => row,
            None => {
                row_ends.push(0);
                row_ends.len() - 1
            }
        };
        row_ends[row] = p.address.saturating_add(p.size);
        out.push((id, row));
    }
    out
}

/// Row and start of each label `(x, text)` so that none overlaps the one
/// before it in its row; a text that would run past `right` starts earlier
/// by as much.
fn place_labels(labels: &[(f64, String)], right: f64) -> Vec<(usize, f64)> {
    let mut order: Vec<usize> = (0..labels.len()).collect();
    order.sort_by(|&a, &b| labels[a].0.total_cmp(&labels[b].0).then(a.cmp(&b)));
    let mut row_ends: Vec<f64> = Vec::new();
    let mut placed = vec![(0, 0.0); labels.len()];
    for i in order {
        let (x0, text) = &labels[i];
        let w = text.chars().count() as f64 * CHAR_11 + 10.0;
        let x0 = x0.min(right - w);
        let row = row_ends.iter().position(|&end| end <= x0).unwrap_or(row_ends.len());
        if row == row_ends.len() {
            row_ends.push(0.0);
        }
        row_ends[row] = x0 + w;
        placed[i] = (row, x0);
    }
    placed
}

/// Fill by kind, views outlined and dashed, spilled tensors outlined in red.
fn tensor_style(p: &TensorPlacement, id: usize) -> String {
    let hue = kind_hue(p.kind);
    // Neighbours of one kind alternate in lightness so that adjacent boxes
    // stay apart.
    let light = 62 + (id % 3) * 8;
    let fill = if p.kind == TensorKind::View {
        "fill=\"white\" fill-opacity=\"0.6\"".to_string()
    } else {
        format!("fill=\"hsl({hue},55%,{light}%)\"")
    };
    let stroke = match (p.spilled, p.kind == TensorKind::View) {
        (true, _) => format!(r#"stroke="{SPILL_COLOR}" stroke-width="2""#),
        (false, true) => r##"stroke="#333" stroke-width="1" stroke-dasharray="3 2""##.to_string(),
        (false, false) => r##"stroke="#333" stroke-width="0.3""##.to_string(),
    };
    format!("{fill} {stroke}")
}

fn kind_hue(kind: TensorKind) -> u32 {
    match kind {
        TensorKind::Constant => 215,
        TensorKind::Mutable => 270,
        TensorKind::Input => 130,
        TensorKind::Output => 30,
        TensorKind::InputOutput => 80,
        TensorKind::Activation => 180,
        TensorKind::View => 0,
    }
}

fn region_tooltip(r: &RegionInstance, fixed: bool) -> String {
    format!(
        "region {} (level {}, description {}){}: base {:#x}, size {}, peak {}, lower bound {}, {}{}, {} tensor{}",
        r.name,
        r.level,
        r.description_id,
        if fixed { ", fixed base" } else { "" },
        r.base_address,
        bytes(r.size),
        bytes(r.peak),
        bytes(r.lower_bound),
        r.algorithm.name(),
        if r.proven_optimal { " (proven optimal)" } else { "" },
        r.tensors.len(),
        if r.tensors.len() == 1 { "" } else { "s" }
    )
}

fn tensor_tooltip(p: &TensorPlacement, region: &str) -> String {
    format!(
        "{} ({}, function {}): region {region}, offset {}, address {:#x}, size {}{}",
        p.name,
        p.kind.name(),
        p.function,
        p.offset,
        p.address,
        bytes(p.size),
        if p.spilled { ", spilled" } else { "" }
    )
}

/// What the fills and outlines mean.
fn legend(s: &mut String) {
    let y = 52.0;
    let _ = writeln!(s, r#"<g class="legend" font-size="12">"#);
    let mut at = 12.0;
    let mut item = |s: &mut String, swatch: String, text: &str| {
        let _ = writeln!(
            s,
            r#"<rect x="{at}" y="{:.0}" width="20" height="12" {swatch}/><text x="{:.0}" y="{y}">{text}</text>"#,
            y - 10.0,
            at + 25.0
        );
        at += 25.0 + text.chars().count() as f64 * CHAR_12 + 14.0;
    };
    for kind in [
        TensorKind::Constant,
        TensorKind::Mutable,
        TensorKind::Input,
        TensorKind::Output,
        TensorKind::InputOutput,
        TensorKind::Activation,
    ] {
        item(s, format!(r##"fill="hsl({},55%,70%)" stroke="#333" stroke-width="0.3""##, kind_hue(kind)), kind.name());
    }
    item(s, r##"fill="white" stroke="#333" stroke-dasharray="3 2""##.to_string(), "view");
    item(s, format!(r##"fill="hsl(180,55%,70%)" stroke="{SPILL_COLOR}" stroke-width="2""##), "spilled");
    item(
        s,
        r##"fill="#e3eaf3" stroke="#000" stroke-width="2" stroke-dasharray="6 3""##.to_string(),
        "fixed-base region",
    );
    let _ = writeln!(
        s,
        r##"<text x="{at:.0}" y="{y}" fill="#555">x: address in the level; overlapping bytes stack in rows</text>"##
    );
    let _ = writeln!(s, "</g>");
}

#[cfg(test)]
mod tests {
    use super::super::report::tests::sample;
    use super::*;

    #[test]
    fn one_lane_per_level_one_band_per_region_one_box_per_tensor() {
        let svg = sample().svg();
        assert!(svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches(r#"<g class="lane""#).count(), 2);
        assert_eq!(svg.matches(r#"<rect class="region""#).count(), 3);
        assert_eq!(svg.matches(r#"<rect class="tensor""#).count(), 5);
        // Lanes in the table's (rank) order, labelled with name, rank and span
        // (ddr's one region of 256 B sits at 0x10000).
        let sram = svg.find(">sram</text>").unwrap();
        let ddr = svg.find(">ddr</text>").unwrap();
        assert!(sram < ddr);
        assert!(svg.contains(">rank 0, 4 KiB</text>") && svg.contains(">rank 1, 256 B</text>"), "{svg}");
        // Names are escaped, tooltips give the figures.
        assert!(svg.contains("<title>x &quot;in&quot; (activation, function main): region activations, offset 0, address 0x400, size 2048 B (2.00 KiB)</title>"), "{svg}");
        assert!(svg.contains("region activations (level sram, description 7): base 0x400, size 3072 B"), "{svg}");
        assert!(svg.contains("5 tensors in 3 regions, 2 levels, 1 spilled"));
    }

    #[test]
    fn spilled_tensors_views_and_fixed_regions_are_marked() {
        let mut t = sample();
        let svg = t.svg();
        let boxes: Vec<&str> = svg.lines().filter(|l| l.starts_with(r#"<rect class="tensor""#)).collect();
        let spilled: Vec<&&str> = boxes.iter().filter(|l| l.contains(SPILL_COLOR)).collect();
        assert_eq!(spilled.len(), 1);
        assert!(spilled[0].contains("fc2.weight"));
        let views: Vec<&&str> = boxes.iter().filter(|l| l.contains("stroke-dasharray")).collect();
        assert!(views.len() == 1 && views[0].contains("x.view"), "{views:?}");
        assert!(!svg.contains("(fixed)") && !svg.contains("fixed base:"));
        // A region whose description fixes its base.
        t.regions[1].fixed_base = true;
        let svg = t.svg();
        assert!(svg.contains("region activations (level sram, description 7), fixed base: base 0x400"), "{svg}");
        assert_eq!(svg.matches("fixed base:").count(), 1);
        let fixed = svg.lines().find(|l| l.contains(r#"class="region""#) && l.contains("activations")).unwrap();
        assert!(fixed.contains(r#"stroke-dasharray="6 3""#), "{fixed}");
    }

    #[test]
    fn a_level_far_from_address_0_starts_at_its_lowest_region() {
        let t = sample();
        let svg = t.svg();
        // ddr's one region sits at 0x10000: the lane starts there, its
        // band spans the whole plot, the axis reads in hex.
        assert!(svg.contains(">1 region</text><text x=\"12\" y=\"") && svg.contains(">from 0x10000</text>"), "{svg}");
        let band = svg.lines().find(|l| l.contains(r#"class="region""#) && l.contains("ddr-weights")).unwrap();
        assert!(
            band.contains(&format!(r#"x="{LEFT:.2}""#))
                && band.contains(&format!(r#"width="{:.2}""#, WIDTH - LEFT - RIGHT)),
            "{band}"
        );
        assert!(svg.contains(">0x10000</text>") && svg.contains(">0x10100</text>"), "{svg}");
        // sram starts at 0: sizes in binary units.
        assert!(svg.contains(">2 regions</text>") && svg.contains(">4 KiB</text>"), "{svg}");
    }

    #[test]
    fn overlapping_tensors_stack_in_rows() {
        let t = sample();
        // activations: x "in" [0x400, 0xc00), y [0xc00, 0x1000), the view
        // [0x600, 0x800) inside x.
        let rows = stack_rows(&t.regions[1], &t.placements);
        assert_eq!(rows, vec![(2, 0), (4, 1), (3, 0)]);
    }

    #[test]
    fn narrow_band_labels_go_in_rows_under_the_lane() {
        let rows = |placed: Vec<(usize, f64)>| placed.iter().map(|&(row, _)| row).collect::<Vec<_>>();
        let placed = place_labels(&[(0.0, "a".into()), (1.0, "b".into()), (500.0, "c".into())], 1560.0);
        assert_eq!(placed, vec![(0, 0.0), (1, 1.0), (0, 500.0)]);
        // Labels near the right end start earlier, inside the picture.
        let placed = place_labels(&[(1550.0, "long label".into()), (1555.0, "x".into())], 1560.0);
        assert_eq!(rows(placed.clone()), vec![0, 1]);
        assert!((placed[0].1 - (1560.0 - 10.0 * CHAR_11 - 10.0)).abs() < 1e-9, "{placed:?}");
    }

    #[test]
    fn two_hundred_tensors_keep_a_bounded_picture() {
        let mut t = sample();
        let base = t.placements.len();
        for i in 0..200u64 {
            let mut p = t.placements[3].clone();
            p.name = format!("act{i}").into();
            p.size = 16 + i % 7 * 8;
            p.offset = (i * 37) % 3000;
            p.address = 1024 + p.offset;
            t.placements.push(p);
            t.regions[1].tensors.push(base + i as usize);
        }
        let svg = t.svg();
        assert_eq!(svg.matches(r#"<rect class="tensor""#).count(), 205);
        let height: f64 = svg.split("height=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
        assert!(height < 1200.0, "{height}");
    }
}
