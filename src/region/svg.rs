//! The region table as an SVG picture: one lane per memory level, its
//! regions as bands along the level's addresses, each tensor a box over its
//! bytes (across) and its live steps (down): the plan's picture turned a
//! quarter, with the regions side by side.
//!
//! The canvas is fixed, as the plan's is: 1600 pixels wide, each lane's
//! steps at most 320 pixels high (less with many levels), whatever the
//! model. Up to 2000 tensors in a lane, each is drawn, outlined, with its
//! tooltip and, where it fits, its name. Beyond that, the 2000 largest boxes
//! of at least 2 x 2 pixels are drawn so, and the others are merged into
//! 4 x 4 pixel cells (a cell is filled where some tensor is live over some
//! of its bytes), so that the element count stays bounded at 60,000 tensors.
//! Bands narrower than a pixel merge the same way beyond 2000 regions in a
//! lane. Labels of narrow bands go in rows under the lane.

use std::fmt::Write as _;

use super::table::{RegionInstance, RegionTable, TensorPlacement};
use super::tensor::TensorKind;
use crate::plan::units::{binary, bytes};
use crate::svg::{binary_ticks, decimal_ticks, escape, open_document};

const WIDTH: f64 = 1600.0;
/// Room for the lane labels on the left, the step ticks on the right.
const LEFT: f64 = 170.0;
const RIGHT: f64 = 80.0;
/// The title and the legend.
const TOP: f64 = 88.0;
/// A band's header: the region's name, base and size.
const BAND_HEADER: f64 = 34.0;
/// The steps of one lane: at most `STEPS_HEIGHT`, the lanes together about
/// `ALL_STEPS_HEIGHT`, each at least `MIN_STEPS_HEIGHT`.
const STEPS_HEIGHT: f64 = 320.0;
const ALL_STEPS_HEIGHT: f64 = 960.0;
const MIN_STEPS_HEIGHT: f64 = 120.0;
/// The address axis under a lane, one line of a narrow band's label, the
/// gap between lanes.
const AXIS: f64 = 22.0;
const LABEL_LINE: f64 = 15.0;
const LANE_GAP: f64 = 26.0;
/// Labels of narrow bands: at most this many rows of them per lane.
const MAX_LABEL_ROWS: usize = 4;
/// Up to this many tensors (regions) in a lane, each is drawn; beyond, see
/// the module's documentation.
const ONE_BY_ONE: usize = 2000;
/// Beyond `ONE_BY_ONE` tensors, a box this small either way is merged.
const MIN_BOX: f64 = 2.0;
/// The side of a merged cell.
const CELL: f64 = 4.0;
/// Width of one character at the label font sizes (an estimate for
/// sans-serif), to decide what fits.
const CHAR_12: f64 = 6.8;
const CHAR_10: f64 = 5.8;
const CHAR_11: f64 = 6.3;
const SPILL_COLOR: &str = "#c00";
/// The fill of a cell whose tensors are of several kinds.
const MIXED_FILL: &str = "hsl(0,0%,55%)";

/// Where a lane's pixels are: its addresses across, the run's steps down.
struct Frame {
    /// The lane's first address, and pixels per byte.
    start: u64,
    scale: f64,
    /// The run's first step, pixels per step, and the top of the steps.
    t0: i64,
    step_scale: f64,
    steps_top: f64,
    steps_h: f64,
}

impl Frame {
    fn x(&self, address: u64) -> f64 {
        LEFT + address.saturating_sub(self.start) as f64 * self.scale
    }

    fn y(&self, step: i64) -> f64 {
        self.steps_top + (step as f64 - self.t0 as f64) * self.step_scale
    }

    /// A tensor's box: x0, y0, width, height (at least a hairline).
    fn tensor_box(&self, p: &TensorPlacement) -> (f64, f64, f64, f64) {
        let (x0, x1) = (self.x(p.address), self.x(p.address.saturating_add(p.size)));
        let (y0, y1) = (self.y(p.lifetime.start), self.y(p.lifetime.end.max(p.lifetime.start)));
        (x0, y0, (x1 - x0).max(0.5), (y1 - y0).max(0.5))
    }
}

impl RegionTable {
    /// The picture, as a standalone SVG document (what it draws is in the
    /// module's documentation); regions at a fixed base address are marked.
    pub fn svg(&self) -> String {
        let plot_w = WIDTH - LEFT - RIGHT;
        let (t0, t1) = self.steps();
        let steps_h = (ALL_STEPS_HEIGHT / self.levels.len().max(1) as f64).clamp(MIN_STEPS_HEIGHT, STEPS_HEIGHT);
        let mut body = String::new();
        let mut merged = false;
        let mut y = TOP;
        for (li, level) in self.levels.iter().enumerate() {
            let regions: Vec<usize> =
                (0..self.regions.len()).filter(|&r| self.regions[r].level == level.name).collect();
            // The lane spans from its lowest region (a level whose regions
            // sit at a fixed base far from 0, an SRAM bank at 0x20000000,
            // would be a hairline otherwise) to the level's end, and at
            // least to every band's end (a hand-made table may say less).
            let start = level.start;
            let end = regions.iter().map(|&r| end_of(&self.regions[r])).chain([level.size]).max().unwrap_or(0);
            let span = end.saturating_sub(start).max(1);
            let (band_top, steps_top) = (y, y + BAND_HEADER);
            let band_bottom = steps_top + steps_h;
            let band_h = band_bottom - band_top;
            let f = Frame {
                start,
                scale: plot_w / span as f64,
                t0,
                step_scale: steps_h / (t1 as f64 - t0 as f64).max(1.0),
                steps_top,
                steps_h,
            };

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
                // Its span, like the reports': the bytes from its lowest
                // region (the "from" line), not from address 0.
                binary(level.span()),
                band_top + 49.0,
                regions.len(),
                plural(regions.len()),
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
                    f.x(a),
                    band_bottom + 4.0,
                    band_bottom + 15.0,
                    if start == 0 { binary(a) } else { format!("{a:#x}") }
                );
            }
            let _ = writeln!(body, "</g>");

            // Bands, the step grid over them, tensors over both, then the
            // labels over everything.
            let mut labels = String::new();
            let narrow = self.draw_bands(&mut body, &mut labels, &regions, &f, band_top, band_h);
            let _ = writeln!(body, r##"<g class="steps" font-size="11" fill="#444">"##);
            let _ = writeln!(body, r#"<text x="{:.1}" y="{:.1}">step</text>"#, WIDTH - RIGHT + 6.0, band_top + 14.0);
            for t in decimal_ticks(t0, t1) {
                let _ = writeln!(
                    body,
                    r##"<line x1="{LEFT}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#b8c4d2" stroke-width="0.5"/><text x="{2:.1}" y="{3:.1}">{t}</text>"##,
                    f.y(t),
                    WIDTH - RIGHT + 3.0,
                    WIDTH - RIGHT + 6.0,
                    f.y(t) + 4.0
                );
            }
            let _ = writeln!(body, "</g>");
            let tensors: Vec<usize> = regions
                .iter()
                .flat_map(|&r| self.regions[r].tensors.iter().copied())
                .filter(|&id| id < self.placements.len())
                .collect();
            merged |= self.draw_tensors(&mut body, &mut labels, &tensors, &f);
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
                    r#"<text x="{LEFT}" y="{:.1}" font-style="italic">{} more narrow region label{} (hover the bands)</text>"#,
                    y + 10.0,
                    narrow.len() - shown,
                    plural(narrow.len() - shown)
                );
                y += LABEL_LINE;
            }
            let _ = writeln!(body, "</g>\n</g>");
            y += LANE_GAP;
        }
        let height = y.max(TOP + 40.0).ceil();
        let spilled = self.placements.iter().filter(|p| p.spilled).count();
        let title = format!(
            "{} tensor{} in {} region{}, {} level{}{}",
            self.placements.len(),
            plural(self.placements.len()),
            self.regions.len(),
            plural(self.regions.len()),
            self.levels.len(),
            plural(self.levels.len()),
            if spilled > 0 { format!(", {spilled} spilled") } else { String::new() }
        );
        let mut s = String::with_capacity(body.len() + 3000);
        open_document(&mut s, WIDTH, height, &title);
        let _ = writeln!(s, r#"<text x="12" y="24" font-size="16" font-weight="bold">{}</text>"#, escape(&title));
        legend(&mut s, merged);
        s.push_str(&body);
        s.push_str("</svg>\n");
        s
    }

    /// The run's first step and its last end over every tensor live at
    /// some step (0 and 1 when none is).
    fn steps(&self) -> (i64, i64) {
        let live = self.placements.iter().map(|p| p.lifetime).filter(|l| !l.is_empty());
        let (t0, t1) = live.fold((i64::MAX, i64::MIN), |(a, b), l| (a.min(l.start), b.max(l.end)));
        if t0 < t1 {
            (t0, t1)
        } else {
            (0, 1)
        }
    }

    /// Draws the bands of `regions` (one lane) into `body`, the names of
    /// those wide enough into `labels`; returns the labels of the others,
    /// for the rows under the lane. Beyond `ONE_BY_ONE` regions, bands
    /// narrower than a pixel that touch merge into one.
    fn draw_bands(
        &self,
        body: &mut String,
        labels: &mut String,
        regions: &[usize],
        f: &Frame,
        band_top: f64,
        band_h: f64,
    ) -> Vec<(f64, String)> {
        let mut narrow: Vec<(f64, String)> = Vec::new();
        let merge = regions.len() > ONE_BY_ONE;
        let mut order: Vec<usize> = regions.to_vec();
        if merge {
            crate::sort::sort_by_key(&mut order, |&r| (self.regions[r].base_address, r));
        }
        // A run of merged bands: its first and last region, its pixels.
        let mut run: Option<(usize, usize, usize, f64, f64)> = None;
        let flush = |body: &mut String, narrow: &mut Vec<(f64, String)>, run: (usize, usize, usize, f64, f64)| {
            let (first, last, count, x0, x1) = run;
            let (a, b) = (self.regions[first].base_address, end_of(&self.regions[last]));
            let text = format!("{count} regions from {a:#x} to {b:#x}");
            let _ = writeln!(
                body,
                r##"<rect class="regions" x="{x0:.2}" y="{band_top:.1}" width="{:.2}" height="{band_h:.1}" fill="#e3eaf3" stroke="#555" stroke-width="0.5"><title>{}</title></rect>"##,
                (x1 - x0).max(0.5),
                escape(&format!(
                    "{text}, each narrower than a pixel: {} to {}",
                    self.regions[first].name, self.regions[last].name
                ))
            );
            narrow.push((x0, text));
        };
        for &r in &order {
            let region = &self.regions[r];
            let (x0, x1) = (f.x(region.base_address), f.x(end_of(region)));
            if merge && x1 - x0 < 1.0 {
                run = match run {
                    Some((first, _, count, rx0, rx1)) if x0 <= rx1 + 1.0 => {
                        Some((first, r, count + 1, rx0, rx1.max(x1)))
                    }
                    other => {
                        if let Some(done) = other {
                            flush(body, &mut narrow, done);
                        }
                        Some((r, r, 1, x0, x1))
                    }
                };
                continue;
            }
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
        }
        if let Some(done) = run {
            flush(body, &mut narrow, done);
        }
        narrow
    }

    /// Draws the tensors `ids` of one lane: boxes into `body`, names that
    /// fit into `labels`. Returns whether some were merged into cells.
    fn draw_tensors(&self, body: &mut String, labels: &mut String, ids: &[usize], f: &Frame) -> bool {
        let one_by_one = ids.len() <= ONE_BY_ONE;
        let boxes: Vec<(f64, f64, f64, f64)> = ids.iter().map(|&id| f.tensor_box(&self.placements[id])).collect();
        let mut drawn: Vec<usize> = (0..ids.len()).collect();
        if !one_by_one {
            drawn.retain(|&k| boxes[k].2 >= MIN_BOX && boxes[k].3 >= MIN_BOX);
            crate::sort::sort_by(&mut drawn, |&a, &b| {
                (boxes[b].2 * boxes[b].3).total_cmp(&(boxes[a].2 * boxes[a].3)).then(a.cmp(&b))
            });
            drawn.truncate(ONE_BY_ONE);
        }
        let mut is_drawn = vec![false; ids.len()];
        for &k in &drawn {
            is_drawn[k] = true;
        }
        // Views over their origins.
        crate::sort::sort_by_key(&mut drawn, |&k| (self.placements[ids[k]].kind == TensorKind::View, ids[k]));
        let _ = writeln!(body, r#"<g class="tensors">"#);
        for &k in &drawn {
            let (id, (tx, ty, tw, th)) = (ids[k], boxes[k]);
            let p = &self.placements[id];
            let _ = writeln!(
                body,
                r#"<rect class="tensor" x="{tx:.2}" y="{ty:.2}" width="{tw:.2}" height="{th:.2}" {}><title>{}</title></rect>"#,
                tensor_style(p, id, one_by_one),
                escape(&tensor_tooltip(p, self.region_name(p.region)))
            );
            let chars = p.name.chars().count() as f64;
            if tw >= chars * CHAR_10 + 4.0 && th >= 11.0 {
                let _ = writeln!(
                    labels,
                    r#"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle">{}</text>"#,
                    tx + tw / 2.0,
                    ty + th / 2.0 + 3.5,
                    escape(&p.name)
                );
            }
        }
        let rest: Vec<usize> = (0..ids.len()).filter(|&k| !is_drawn[k]).collect();
        if !rest.is_empty() {
            draw_cells(body, f, rest.iter().map(|&k| (boxes[k], self.placements[ids[k]].kind)));
        }
        let _ = writeln!(body, "</g>");
        !rest.is_empty()
    }
}

/// Merges boxes into `CELL`-sized cells of the lane's steps: a cell is
/// filled where some box reaches into it, in its kind's colour (grey for
/// several kinds); each row's runs of one fill are one rectangle.
fn draw_cells(body: &mut String, f: &Frame, boxes: impl Iterator<Item = ((f64, f64, f64, f64), TensorKind)>) {
    let plot_w = WIDTH - LEFT - RIGHT;
    let (cols, rows) = ((plot_w / CELL).ceil() as usize, (f.steps_h / CELL).ceil().max(1.0) as usize);
    const MIXED: u8 = u8::MAX;
    let mut cells = vec![0u8; cols * rows];
    let span = |from: f64, size: f64, n: usize| {
        let first = ((from / CELL).floor().max(0.0) as usize).min(n - 1);
        let last = (((from + size) / CELL).ceil() as usize).clamp(first + 1, n);
        first..last
    };
    let kinds = TensorKind::ALL;
    for ((x, y, w, h), kind) in boxes {
        let code = kinds.iter().position(|&k| k == kind).map_or(MIXED, |i| i as u8 + 1);
        for r in span(y - f.steps_top, h, rows) {
            for cell in &mut cells[r * cols..(r + 1) * cols][span(x - LEFT, w, cols)] {
                *cell = if *cell == 0 || *cell == code { code } else { MIXED };
            }
        }
    }
    // Crisp edges: no seams between rows of cells when scaled down.
    let _ = writeln!(body, r#"<g class="merged" shape-rendering="crispEdges">"#);
    for r in 0..rows {
        let row = &cells[r * cols..(r + 1) * cols];
        let mut c = 0;
        while c < cols {
            let code = row[c];
            let n = row[c..].iter().take_while(|&&v| v == code).count();
            if code != 0 {
                let (x, y) = (LEFT + c as f64 * CELL, f.steps_top + r as f64 * CELL);
                let (w, h) = ((n as f64 * CELL).min(WIDTH - RIGHT - x), CELL.min(f.steps_top + f.steps_h - y));
                let fill = match kinds.get(usize::from(code) - 1) {
                    Some(&kind) if code != MIXED => merged_fill(kind),
                    _ => MIXED_FILL.to_string(),
                };
                // What the cells cover, read back from the pixels.
                let address = |px: f64| f.start.saturating_add((px / f.scale) as u64);
                let step = |px: f64| f.t0.saturating_add((px / f.step_scale) as i64);
                let _ = writeln!(
                    body,
                    r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{fill}"><title>tensors too small to draw one by one: addresses {:#x} to {:#x}, steps {} to {}</title></rect>"#,
                    address(x - LEFT),
                    address(x - LEFT + w),
                    step(y - f.steps_top),
                    step(y - f.steps_top + h)
                );
            }
            c += n;
        }
    }
    let _ = writeln!(body, "</g>");
}

/// A merged cell's fill: its kind's hue, darker and greyer than a box's.
fn merged_fill(kind: TensorKind) -> String {
    format!("hsl({},35%,50%)", kind_hue(kind))
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn end_of(r: &RegionInstance) -> u64 {
    r.base_address.saturating_add(r.size)
}

/// Row and start of each label `(x, text)` so that none overlaps the one
/// before it in its row; a text that would run past `right` starts earlier
/// by as much. Labels that fit in none of the first `MAX_LABEL_ROWS` rows
/// get row `MAX_LABEL_ROWS` (not drawn), so that many labels cost no more
/// than those rows.
fn place_labels(labels: &[(f64, String)], right: f64) -> Vec<(usize, f64)> {
    let mut order: Vec<usize> = (0..labels.len()).collect();
    crate::sort::sort_by(&mut order, |&a, &b| labels[a].0.total_cmp(&labels[b].0).then(a.cmp(&b)));
    let mut row_ends: Vec<f64> = Vec::new();
    let mut placed = vec![(MAX_LABEL_ROWS, 0.0); labels.len()];
    for i in order {
        let (x0, text) = &labels[i];
        let w = text.chars().count() as f64 * CHAR_11 + 10.0;
        let x0 = x0.min(right - w);
        let row = match row_ends.iter().position(|&end| end <= x0) {
            Some(row) => row,
            None if row_ends.len() < MAX_LABEL_ROWS => {
                row_ends.push(0.0);
                row_ends.len() - 1
            }
            None => continue,
        };
        row_ends[row] = x0 + w;
        placed[i] = (row, x0);
    }
    placed
}

/// Fill by kind, views outlined and dashed, spilled tensors outlined in
/// red; `outlined`: every other box gets a thin outline too (dropped with
/// many tensors, where outlines would turn the picture grey).
fn tensor_style(p: &TensorPlacement, id: usize, outlined: bool) -> String {
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
        (false, false) if outlined => r##"stroke="#333" stroke-width="0.3""##.to_string(),
        (false, false) => String::new(),
    };
    format!("{fill} {stroke}").trim_end().to_string()
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
fn legend(s: &mut String, merged: bool) {
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
    if merged {
        item(
            s,
            format!(r#"fill="{}""#, merged_fill(TensorKind::Activation)),
            "small tensors, merged (grey: of several kinds)",
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="12" y="{:.0}" fill="#555">x: address in the level; y: steps, down; a box: a tensor's bytes over the steps it is live</text>"##,
        y + 18.0
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

    /// The value of attribute `name` in an SVG element's line.
    fn attr(line: &str, name: &str) -> f64 {
        let key = format!(" {name}=\"");
        line.split(&key).nth(1).unwrap().split('"').next().unwrap().parse().unwrap()
    }

    #[test]
    fn a_tensor_is_a_box_over_its_bytes_and_its_steps() {
        let svg = sample().svg();
        // Two levels: 320 px of steps each; the run is steps [0, 4). sram
        // spans 4096 B over 1350 px; y (1024 B at 0xc00) lives [1, 4).
        let line = svg.lines().find(|l| l.starts_with(r#"<rect class="tensor""#) && l.contains("<title>y ")).unwrap();
        let steps_top = TOP + BAND_HEADER;
        let px = (WIDTH - LEFT - RIGHT) / 4096.0;
        for (name, want) in
            [("x", LEFT + 3072.0 * px), ("width", 1024.0 * px), ("y", steps_top + 80.0), ("height", 240.0)]
        {
            assert!((attr(line, name) - want).abs() < 0.01, "{name}: {line}");
        }
        // Steps on the right, 0 to 4; weights live over all of them.
        assert!(svg.contains(">step</text>") && svg.contains(">4</text>"), "{svg}");
        let w =
            svg.lines().find(|l| l.starts_with(r#"<rect class="tensor""#) && l.contains("<title>fc1.weight ")).unwrap();
        assert!((attr(w, "y") - steps_top).abs() < 0.01 && (attr(w, "height") - 320.0).abs() < 0.01, "{w}");
    }

    /// One level, one region, `n` activations of sizes 1 B to 64 KiB at
    /// addresses and lifetimes spread over 4 GiB and 10,000 steps (overlaps
    /// do not matter to the picture), every 7th one large.
    fn big_table(n: usize) -> RegionTable {
        let mut t = sample();
        t.levels.truncate(1);
        t.regions.truncate(1);
        let template = t.placements[2].clone();
        t.placements.clear();
        let mut x: u64 = 12345;
        for id in 0..n {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let size = if id % 7 == 0 { 1 << 26 } else { 1 + (x >> 33) % (1 << 16) };
            let address = (x >> 20) % (1 << 32);
            let start = ((x >> 40) % 10_000) as i64;
            let mut p = template.clone();
            p.name = format!("t{id}").into();
            (p.size, p.region, p.address, p.offset) = (size, 0, address, address);
            p.lifetime = crate::plan::Lifetime { start, end: start + 1 + (id % 500) as i64 };
            t.placements.push(p);
        }
        t.regions[0].tensors = (0..n).collect();
        t.levels[0].size = (1 << 32) + (1 << 26);
        t.regions[0].size = t.levels[0].size;
        t.spills.clear();
        t
    }

    /// The picture stays 1600 px wide and under 600 px high for one level,
    /// whatever the count; up to 2000 tensors each is a box; beyond, at most
    /// 2000 boxes and the rest in merged cells, the whole bounded.
    #[test]
    fn fifty_a_thousand_and_sixty_thousand_tensors_keep_a_bounded_picture() {
        let plot = ((WIDTH - LEFT - RIGHT) / CELL).ceil() * (STEPS_HEIGHT / CELL).ceil();
        for n in [50, 1000, 60_000] {
            let svg = big_table(n).svg();
            let head = svg.lines().next().unwrap();
            let height = attr(head, "height");
            assert!(attr(head, "width") == WIDTH && height < 600.0, "{n}: {head}");
            assert!(head.contains(&format!(r#"viewBox="0 0 {WIDTH} {height}""#)), "{head}");
            let boxes = svg.matches(r#"<rect class="tensor""#).count();
            let cells = svg.lines().filter(|l| l.contains("tensors too small to draw one by one")).count();
            if n <= ONE_BY_ONE {
                assert_eq!((boxes, cells), (n, 0), "{n}");
                assert!(!svg.contains("small tensors, merged"));
            } else {
                assert_eq!(boxes, ONE_BY_ONE, "{n}");
                assert!(cells > 0 && (cells as f64) <= plot / 2.0 + 1.0, "{n}: {cells} cells");
                assert!(svg.contains("small tensors, merged"));
            }
            assert!(svg.matches("<rect").count() < ONE_BY_ONE + plot as usize / 2 + 100, "{n}");
            assert!(svg.len() < 3 << 20, "{n}: {} B", svg.len());
        }
    }

    /// Beyond 2000 regions in a lane, bands narrower than a pixel merge;
    /// the narrow labels under the lane stay within their rows.
    #[test]
    fn many_narrow_regions_merge_into_runs() {
        let mut t = big_table(3000);
        let template = t.regions[0].clone();
        t.regions = (0..3000)
            .map(|i| {
                let mut r = template.clone();
                r.name = format!("per-tensor/t{i}");
                (r.base_address, r.size, r.tensors) = (i as u64 * 64, 64, vec![i]);
                r
            })
            .collect();
        for (i, p) in t.placements.iter_mut().enumerate() {
            (p.region, p.address, p.offset, p.size) = (i, i as u64 * 64, 0, 64);
        }
        // One large region after them, wide enough for its own label.
        let mut big = template.clone();
        (big.name, big.base_address, big.size, big.tensors) = ("big".into(), 3000 * 64, 1 << 20, vec![]);
        t.regions.push(big);
        t.levels[0].size = 3000 * 64 + (1 << 20);
        let svg = t.svg();
        let bands = svg.matches(r#"<rect class="region""#).count();
        let runs = svg.matches(r#"<rect class="regions""#).count();
        assert_eq!(bands, 1, "only the large one is drawn alone");
        assert!((1..=((WIDTH - LEFT - RIGHT) as usize)).contains(&runs), "{runs}");
        assert!(svg.contains("regions from 0x0 to 0x"), "{svg}");
        assert!(attr(svg.lines().next().unwrap(), "height") < 700.0);
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
    fn many_labels_cost_no_more_than_their_rows() {
        // 50,000 labels at one place: four rows, the rest not drawn.
        let labels: Vec<(f64, String)> = (0..50_000).map(|i| (100.0, format!("r{i}"))).collect();
        let placed = place_labels(&labels, 1560.0);
        assert_eq!(placed.iter().filter(|&&(row, _)| row < MAX_LABEL_ROWS).count(), MAX_LABEL_ROWS);
        assert!(placed.iter().all(|&(row, _)| row <= MAX_LABEL_ROWS));
    }
}
