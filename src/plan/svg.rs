//! An SVG picture of a plan: steps across, addresses up, one rectangle per
//! buffer that occupies memory, with an address axis in binary units, a
//! step axis, a legend, buffer ids inside the rectangles they fit in, a
//! tooltip per buffer, and the peak and the lower bound marked.
//!
//! Coordinates are scaled to a fixed canvas so the file size grows with the
//! buffer count only; buffers narrower than a pixel still get a hairline so
//! nothing vanishes at 60k buffers.

use std::fmt::Write;

use super::problem::Buffer;
use super::units::{binary, bytes};
use crate::svg::{binary_ticks, decimal_ticks, escape, open_document};

const WIDTH: f64 = 1600.0;
const HEIGHT: f64 = 900.0;
/// Room for the address labels on the left, the peak and bound labels on
/// the right, the title and legend above, the step axis below.
const LEFT: f64 = 100.0;
const RIGHT: f64 = 190.0;
const TOP: f64 = 80.0;
const BOTTOM: f64 = 60.0;
const PEAK_COLOR: &str = "#c00";
const BOUND_COLOR: &str = "#06c";
/// Font size of the ids drawn inside rectangles, and the width of one of
/// their characters (an estimate for sans-serif; ids that might not fit are
/// left to the tooltip).
const ID_FONT: f64 = 10.0;
const ID_CHAR_WIDTH: f64 = 6.2;

/// Renders `buffers` at `offsets` with a title line. Buffers are named
/// `names[i]` (the CLI passes CSV ids) or, without names, by index.
pub fn render(buffers: &[Buffer], offsets: &[u64], names: Option<&[&str]>, lower_bound: u64, title: &str) -> String {
    assert_eq!(buffers.len(), offsets.len(), "one offset per buffer");
    if let Some(names) = names {
        assert_eq!(names.len(), buffers.len(), "one name per buffer");
    }
    let name = |i: usize| match names {
        Some(names) => escape(names[i]),
        None => i.to_string(),
    };
    let live: Vec<usize> = (0..buffers.len()).filter(|&i| buffers[i].occupies()).collect();
    let peak = live.iter().map(|&i| offsets[i].saturating_add(buffers[i].size)).max().unwrap_or(0);
    let t0 = live.iter().map(|&i| buffers[i].lifetime.start).min().unwrap_or(0);
    let t1 = live.iter().map(|&i| buffers[i].lifetime.end).max().unwrap_or(1);
    let span_t = (t1 as f64 - t0 as f64).max(1.0);
    // Headroom above the higher mark, so the peak and bound lines stay
    // apart from the plot's frame.
    let top = (peak.max(lower_bound) as f64 * 1.04).max(1.0);
    let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let x = |t: i64| LEFT + (t as f64 - t0 as f64) / span_t * plot_w;
    let y = |o: u64| HEIGHT - BOTTOM - o as f64 / top * plot_h;

    let mut s = String::with_capacity(4000 + live.len() * 160);
    open_document(&mut s, WIDTH, HEIGHT, title);
    let _ = writeln!(s, r#"<text x="{LEFT}" y="24" font-size="16" font-weight="bold">{}</text>"#, escape(title));
    legend(&mut s, live.iter().any(|&i| buffers[i].fixed_offset.is_some()));

    // Grid and axes under the buffers.
    let _ = writeln!(s, r##"<g class="axis" stroke="#ddd" stroke-width="1">"##);
    let address_ticks = binary_ticks(top as u64);
    for &a in &address_ticks {
        let _ = writeln!(s, r#"<line x1="{LEFT}" y1="{0:.1}" x2="{1}" y2="{0:.1}"/>"#, y(a), WIDTH - RIGHT);
    }
    let step_ticks = decimal_ticks(t0, t1);
    for &t in &step_ticks {
        let _ = writeln!(s, r#"<line x1="{0:.1}" y1="{TOP}" x2="{0:.1}" y2="{1}"/>"#, x(t), HEIGHT - BOTTOM);
    }
    let _ = writeln!(s, "</g>");
    let _ = writeln!(s, r#"<g class="axis" font-size="12">"#);
    for &a in &address_ticks {
        let _ = writeln!(s, r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#, LEFT - 6.0, y(a) + 4.0, binary(a));
    }
    for &t in &step_ticks {
        let _ = writeln!(s, r#"<text x="{:.1}" y="{}" text-anchor="middle">{t}</text>"#, x(t), HEIGHT - BOTTOM + 16.0);
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{}" text-anchor="middle" font-size="14">execution step (a buffer is live from lower to upper)</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 14.0
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(18 {:.1}) rotate(-90)" text-anchor="middle" font-size="14">address (offset in the block)</text>"#,
        TOP + plot_h / 2.0
    );
    let _ = writeln!(s, "</g>");

    // Outlines help at model scale and turn dense plans grey: drop them
    // beyond a few thousand buffers.
    let stroke = if live.len() <= 2000 { "#333" } else { "none" };
    let _ = writeln!(s, r#"<g stroke="{stroke}" stroke-width="0.3">"#);
    let mut labels = String::new();
    for &i in &live {
        let b = &buffers[i];
        let (x0, x1) = (x(b.lifetime.start), x(b.lifetime.end));
        let (y0, y1) = (y(offsets[i].saturating_add(b.size)), y(offsets[i]));
        let (w, h) = ((x1 - x0).max(0.3), (y1 - y0).max(0.3));
        let hue = (i as u64).wrapping_mul(137) % 360;
        let fixed = if b.fixed_offset.is_some() { r#" stroke="black" stroke-width="1.5""# } else { "" };
        let id = name(i);
        let _ = writeln!(
            s,
            r#"<rect class="buf" x="{x0:.2}" y="{y0:.2}" width="{w:.2}" height="{h:.2}" fill="hsl({hue},60%,72%)"{fixed}><title>{id}: size {}, steps [{}, {}), offset {}{}</title></rect>"#,
            bytes(b.size),
            b.lifetime.start,
            b.lifetime.end,
            bytes(offsets[i]),
            if b.fixed_offset.is_some() { " (fixed)" } else { "" }
        );
        // The id where it fits inside, with a little room on each side.
        let chars = id.chars().count() as f64;
        if w >= chars * ID_CHAR_WIDTH + 4.0 && h >= ID_FONT + 3.0 {
            let _ = writeln!(
                labels,
                r#"<text x="{:.1}" y="{:.1}">{id}</text>"#,
                x0 + w / 2.0,
                y0 + h / 2.0 + ID_FONT * 0.35
            );
        }
    }
    let _ = writeln!(s, "</g>");
    let _ = writeln!(s, r##"<g class="ids" font-size="{ID_FONT}" text-anchor="middle" fill="#111">"##);
    s.push_str(&labels);
    let _ = writeln!(s, "</g>");

    // The frame of the plot, over the buffers.
    let _ = writeln!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#444" stroke-width="1"/>"##
    );
    // The peak solid and the bound dashed, each labelled in the right
    // margin: the peak's label above its line, the bound's below, so both
    // stay readable when the two are equal.
    let mark = |s: &mut String, value: u64, color: &str, dash: &str, label: &str, above: bool| {
        let yy = y(value);
        let text_y = if above { yy - 5.0 } else { yy + 15.0 };
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{yy:.2}" x2="{:.2}" y2="{yy:.2}" stroke="{color}" stroke-width="2"{dash}/><text x="{:.2}" y="{:.2}" fill="{color}" font-size="13">{label} {}</text>"##,
            WIDTH - RIGHT + 8.0,
            WIDTH - RIGHT + 10.0,
            text_y,
            binary(value)
        );
    };
    mark(&mut s, peak, PEAK_COLOR, "", "peak", true);
    mark(&mut s, lower_bound, BOUND_COLOR, r#" stroke-dasharray="8 5""#, "lower bound", false);
    s.push_str("</svg>\n");
    s
}

/// The legend row under the title: what a rectangle, the two lines and a
/// thick outline mean.
fn legend(s: &mut String, any_fixed: bool) {
    let y = 52.0;
    let _ = writeln!(s, r#"<g class="legend" font-size="13">"#);
    let _ = writeln!(
        s,
        r##"<rect x="{LEFT}" y="{:.0}" width="22" height="12" fill="hsl(200,60%,72%)" stroke="#333" stroke-width="0.5"/><text x="{:.0}" y="{y}">buffer: live steps across, its bytes up (hover for id, size, steps, offset)</text>"##,
        y - 10.0,
        LEFT + 28.0
    );
    let mut at = LEFT + 560.0;
    let _ = writeln!(
        s,
        r##"<line x1="{at}" y1="{0}" x2="{1}" y2="{0}" stroke="{PEAK_COLOR}" stroke-width="2"/><text x="{2}" y="{y}">peak: bytes the plan needs</text>"##,
        y - 4.0,
        at + 26.0,
        at + 32.0
    );
    at += 230.0;
    let _ = writeln!(
        s,
        r##"<line x1="{at}" y1="{0}" x2="{1}" y2="{0}" stroke="{BOUND_COLOR}" stroke-width="2" stroke-dasharray="8 5"/><text x="{2}" y="{y}">lower bound: most bytes live at one step</text>"##,
        y - 4.0,
        at + 26.0,
        at + 32.0
    );
    if any_fixed {
        at += 330.0;
        let _ = writeln!(
            s,
            r##"<rect x="{at}" y="{:.0}" width="22" height="12" fill="hsl(200,60%,72%)" stroke="black" stroke-width="1.5"/><text x="{:.0}" y="{y}">fixed offset</text>"##,
            y - 10.0,
            at + 28.0
        );
    }
    let _ = writeln!(s, "</g>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::problem::Lifetime;

    fn b(size: u64, s: i64, e: i64) -> Buffer {
        Buffer { size, lifetime: Lifetime::half_open(s, e).unwrap(), fixed_offset: None }
    }

    #[test]
    fn one_rect_per_occupying_buffer_and_both_marks() {
        let svg = render(&[b(10, 0, 2), b(10, 1, 3), b(0, 0, 1)], &[0, 10, 0], None, 20, "a <test>");
        assert_eq!(svg.matches(r#"<rect class="buf""#).count(), 2);
        assert!(svg.contains(">peak 20 B</text>") && svg.contains(">lower bound 20 B</text>"), "{svg}");
        assert!(svg.contains("a &lt;test&gt;"));
        assert!(svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn axes_legend_ids_and_tooltips() {
        let mib = 1 << 20;
        let buffers = [b(600 * mib, 0, 50), b(400 * mib, 25, 100), b(mib, 60, 61)];
        let svg = render(&buffers, &[0, 600 * mib, 0], Some(&["big", "second", "t<1>"]), 1000 * mib, "t");
        // Address ticks in binary units, a power of two apart.
        for tick in [">0 B<", ">256 MiB<", ">768 MiB<", ">1 GiB<"] {
            assert!(svg.contains(tick), "{tick}: {svg}");
        }
        // Step ticks at round figures, and both axes named.
        for tick in [">0</text>", ">10</text>", ">100</text>", "execution step", "address (offset in the block)"] {
            assert!(svg.contains(tick), "{tick}: {svg}");
        }
        assert!(svg.contains(r#"<g class="legend""#) && svg.contains("lower bound: most bytes live at one step"));
        // Ids in the rectangles that are large enough, not in the tiny one.
        assert!(svg.contains(">big</text>") && svg.contains(">second</text>"), "{svg}");
        assert!(!svg.contains(">t&lt;1&gt;</text>"), "{svg}");
        assert!(svg.contains("<title>second: size 419430400 B (400.00 MiB), steps [25, 100), offset 629145600 B (600.00 MiB)</title>"), "{svg}");
        assert!(svg.contains("<title>t&lt;1&gt;: size 1048576 B"), "{svg}");
        // Peak and bound equal: two lines, solid and dashed, labels apart.
        let peak = svg.lines().find(|l| l.contains(">peak 1000 MiB<")).unwrap();
        let bound = svg.lines().find(|l| l.contains(">lower bound 1000 MiB<")).unwrap();
        assert!(!peak.contains("dasharray") && bound.contains("stroke-dasharray"));
        let label_y = |l: &str| l.split(" y=\"").nth(1).unwrap().split('"').next().unwrap().parse::<f64>().unwrap();
        assert!(label_y(bound) - label_y(peak) >= 15.0, "{peak}\n{bound}");
    }
}
