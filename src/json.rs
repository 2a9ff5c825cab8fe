//! The one piece of JSON writing nnmem needs without a dependency: string
//! escaping, shared by the arena's JSON report and the `nnmem` CLI's
//! `--json` summary.

use std::fmt::Write as _;

/// Escapes `s` for the inside of a JSON string literal: quotes,
/// backslashes and control characters (as `\uXXXX`); everything else is
/// kept as UTF-8.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}
