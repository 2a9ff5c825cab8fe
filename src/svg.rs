//! What the SVG pictures share (the plan's, the region table's): the
//! document's head, escaping, and axis ticks at round figures. Each picture
//! draws on a fixed canvas, so that its size in pixels does not grow with
//! the model; only its element count does.

use std::fmt::Write;

/// Starts a standalone SVG document of `width` x `height` pixels (its
/// viewBox the same) with `title` as its tooltip and a white background.
pub(crate) fn open_document(s: &mut String, width: f64, height: f64, title: &str) {
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="14">"#
    );
    let _ = writeln!(s, "<title>{}</title>", escape(title));
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
}

/// Address ticks from 0 to `top`, a power-of-two apart so that they read as
/// round binary figures (256 MiB, 512 MiB, 768 MiB), about 4 to 8 of them.
pub(crate) fn binary_ticks(top: u64) -> Vec<u64> {
    let step = (top / 8).max(1).next_power_of_two();
    (0..=top / step).map(|k| k * step).collect()
}

/// Step ticks from `t0` to `t1` at 1, 2 or 5 times a power of ten, about 5
/// to 10 of them.
pub(crate) fn decimal_ticks(t0: i64, t1: i64) -> Vec<i64> {
    let span = (t1 as i128 - t0 as i128).max(1);
    let mut step: i128 = 1;
    while span / step > 10 {
        step = match step.to_string().as_bytes()[0] {
            b'1' => step * 2,
            b'2' => step / 2 * 5,
            _ => step * 2,
        };
    }
    let first = (t0 as i128).div_euclid(step) * step + if (t0 as i128).rem_euclid(step) == 0 { 0 } else { step };
    (0..).map(|k| first + k * step).take_while(|&t| t <= t1 as i128).map(|t| t as i64).collect()
}

/// `text` made safe for SVG text and attribute values.
pub(crate) fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks() {
        assert_eq!(binary_ticks(1000), vec![0, 128, 256, 384, 512, 640, 768, 896]);
        assert_eq!(binary_ticks(1), vec![0, 1]);
        assert_eq!(decimal_ticks(0, 21), (0..=10).map(|k| k * 2).collect::<Vec<_>>());
        assert_eq!(decimal_ticks(0, 30), vec![0, 5, 10, 15, 20, 25, 30]);
        assert_eq!(decimal_ticks(3, 9), vec![3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(decimal_ticks(-7, 140), vec![0, 20, 40, 60, 80, 100, 120, 140]);
        assert_eq!(decimal_ticks(0, 1_000_000), (0..=10).map(|k| k * 100_000).collect::<Vec<_>>());
        assert_eq!(decimal_ticks(i64::MIN, i64::MAX).len(), 9);
    }

    #[test]
    fn a_document_opens_with_its_size_title_and_background() {
        let mut s = String::new();
        open_document(&mut s, 1600.0, 900.0, "a <b> & \"c\"");
        assert!(s.starts_with(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="1600" height="900" viewBox="0 0 1600 900""#
        ));
        assert!(s.contains("<title>a &lt;b&gt; &amp; &quot;c&quot;</title>"), "{s}");
        assert!(s.contains(r#"<rect width="100%" height="100%" fill="white"/>"#));
    }
}
