//! An SVG picture of a plan: steps across, addresses up, one rectangle per
//! buffer, the peak and the lower bound marked.
//!
//! Coordinates are scaled to a fixed canvas so the file size grows with the
//! buffer count only; buffers narrower than a pixel still get a hairline so
//! nothing vanishes at 60k buffers.

use std::fmt::Write;

use super::problem::Buffer;

const WIDTH: f64 = 1600.0;
const HEIGHT: f64 = 900.0;
const MARGIN: f64 = 60.0;

/// Renders `buffers` at `offsets` with a title line.
pub fn render(buffers: &[Buffer], offsets: &[u64], names: Option<&[&str]>, lower_bound: u64, title: &str) -> String {
    assert_eq!(buffers.len(), offsets.len(), "one offset per buffer");
    let live: Vec<usize> = (0..buffers.len()).filter(|&i| buffers[i].occupies()).collect();
    let peak = live.iter().map(|&i| offsets[i] + buffers[i].size).max().unwrap_or(0);
    let t0 = live.iter().map(|&i| buffers[i].lifetime.start).min().unwrap_or(0);
    let t1 = live.iter().map(|&i| buffers[i].lifetime.end).max().unwrap_or(1);
    let span_t = ((t1 - t0) as f64).max(1.0);
    let top = (peak.max(lower_bound) as f64).max(1.0);
    let (plot_w, plot_h) = (WIDTH - 2.0 * MARGIN, HEIGHT - 2.0 * MARGIN);
    let x = |t: i64| MARGIN + (t - t0) as f64 / span_t * plot_w;
    let y = |o: u64| HEIGHT - MARGIN - o as f64 / top * plot_h;

    let mut s = String::with_capacity(200 + live.len() * 90);
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="14">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(s, r#"<text x="{MARGIN}" y="30">{}</text>"#, escape(title));
    // Outlines help at model scale and turn dense plans grey: drop them
    // beyond a few thousand buffers.
    let stroke = if live.len() <= 2000 { "#333" } else { "none" };
    let _ = writeln!(s, r#"<g stroke="{stroke}" stroke-width="0.2">"#);
    for &i in &live {
        let b = &buffers[i];
        let (x0, x1) = (x(b.lifetime.start), x(b.lifetime.end));
        let (y0, y1) = (y(offsets[i] + b.size), y(offsets[i]));
        let hue = (i as u64).wrapping_mul(137) % 360;
        let _ = writeln!(
            s,
            r#"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="hsl({hue},60%,70%)"><title>{i}: offset {} size {} steps [{}, {})</title></rect>"#,
            x0,
            y0,
            (x1 - x0).max(0.3),
            (y1 - y0).max(0.3),
            offsets[i],
            b.size,
            b.lifetime.start,
            b.lifetime.end
        );
    }
    let _ = writeln!(s, "</g>");
    // The peak's label sits above its line and the bound's below, so they
    // stay apart when the two are close.
    let mark = |s: &mut String, value: u64, color: &str, label: &str, above: bool| {
        let yy = y(value);
        let text_y = if above { yy - 4.0 } else { yy + 16.0 };
        let _ = writeln!(
            s,
            r##"<line x1="{MARGIN}" y1="{yy:.2}" x2="{:.2}" y2="{yy:.2}" stroke="{color}" stroke-width="1.5" stroke-dasharray="6 4"/><text x="{:.2}" y="{:.2}" fill="{color}" text-anchor="end">{label} {value} B</text>"##,
            WIDTH - MARGIN,
            WIDTH - MARGIN,
            text_y
        );
    };
    mark(&mut s, peak, "#c00", "peak", true);
    mark(&mut s, lower_bound, "#06c", "lower bound", false);
    let _ = writeln!(
        s,
        r#"<text x="{MARGIN}" y="{:.0}">step {t0}</text><text x="{:.0}" y="{:.0}" text-anchor="end">step {t1}</text>"#,
        HEIGHT - MARGIN + 20.0,
        WIDTH - MARGIN,
        HEIGHT - MARGIN + 20.0
    );
    s.push_str("</svg>\n");
    s
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::problem::Lifetime;

    #[test]
    fn one_rect_per_occupying_buffer_and_both_marks() {
        let b = |size, s, e| Buffer { size, lifetime: Lifetime::half_open(s, e).unwrap(), fixed_offset: None };
        let svg = render(&[b(10, 0, 2), b(10, 1, 3), b(0, 0, 1)], &[0, 10, 0], None, 20, "a <test>");
        assert_eq!(svg.matches("<rect x=").count(), 2);
        assert!(svg.contains("peak 20 B") && svg.contains("lower bound 20 B"));
        assert!(svg.contains("a &lt;test&gt;"));
        assert!(svg.trim_end().ends_with("</svg>"));
    }
}
