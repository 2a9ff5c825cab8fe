//! Byte counts for people: binary units (KiB = 1024 B) next to or instead
//! of the exact count, shared by the SVG and the command line.

const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/// The largest unit not above `n` and `n` in it.
fn scaled(n: u64) -> (f64, &'static str) {
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    (value, UNITS[unit])
}

/// The exact count, with binary units where they help:
/// `512 B`, `5530099775 B (5.15 GiB)`.
pub fn bytes(n: u64) -> String {
    match scaled(n) {
        (_, "B") => format!("{n} B"),
        (value, unit) => format!("{n} B ({value:.2} {unit})"),
    }
}

/// Short binary units, at most two decimals and no trailing zeros:
/// `0 B`, `768 MiB`, `1.25 GiB` (axis ticks).
pub fn binary(n: u64) -> String {
    let (value, unit) = scaled(n);
    let text = format!("{value:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_and_binary() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1024), "1024 B (1.00 KiB)");
        assert_eq!(bytes(5530099775), "5530099775 B (5.15 GiB)");
        assert_eq!(bytes(u64::MAX), "18446744073709551615 B (16.00 EiB)");
        assert_eq!(binary(0), "0 B");
        assert_eq!(binary(100), "100 B");
        assert_eq!(binary(768 << 20), "768 MiB");
        assert_eq!(binary(5 << 28), "1.25 GiB");
        assert_eq!(binary(1536), "1.5 KiB");
    }
}
