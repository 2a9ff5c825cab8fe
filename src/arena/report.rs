//! The recording report, as TFLite-Micro-like text or as JSON.
//!
//! The text keeps `RecordingMicroAllocator`'s line shapes ("Arena allocation
//! total N bytes", "'<category>' used N bytes with alignment overhead
//! (requested N bytes for N allocations)") so that scripts reading TFLite
//! Micro logs read these too, and adds the lines TFLite Micro lacks: the
//! temp peak and the exact size needed.

use std::fmt::Write as _;

use super::arena::Arena;
use super::memory::Memory;
use crate::json::escape;

pub use crate::report_format::ReportFormat;

const PREFIX: &str = "[nnmem arena]";

/// The report of `arena` in `format`.
pub fn report<M: Memory>(arena: &Arena<'_, M>, format: ReportFormat) -> String {
    match format {
        ReportFormat::Text => text(arena),
        ReportFormat::Json => json(arena),
    }
}

fn mode<M: Memory>(arena: &Arena<'_, M>) -> &'static str {
    if arena.is_dry_run() {
        "dry-run"
    } else if arena.is_split() {
        "split"
    } else {
        "single"
    }
}

fn text<M: Memory>(arena: &Arena<'_, M>) -> String {
    let s = arena.sizes();
    let mut out = String::new();
    let capacity = if arena.is_dry_run() { "no memory".to_string() } else { format!("{} bytes", s.capacity) };
    let _ = writeln!(
        out,
        "{PREFIX} Arena mode {}, capacity {capacity}{}",
        mode(arena),
        if arena.is_guarded() { ", guard on" } else { "" }
    );
    let _ = writeln!(out, "{PREFIX} Arena allocation total {} bytes", s.used);
    let _ = writeln!(out, "{PREFIX} Arena allocation head {} bytes", s.head);
    let _ = writeln!(out, "{PREFIX} Arena allocation tail {} bytes", s.tail);
    let _ = writeln!(
        out,
        "{PREFIX} Arena allocation temp {} bytes (peak {} bytes, {} held)",
        s.temp, s.temp_peak, s.temp_count
    );
    let split = if arena.is_split() || arena.is_dry_run() {
        format!(
            "; split: persistent {} bytes, non-persistent {} bytes",
            s.required_persistent, s.required_nonpersistent
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "{PREFIX} Arena size needed {} bytes (temp peak and alignment loss of {} bytes included{split})",
        s.required, s.alignment_lost
    );
    if !arena.is_recording() && arena.categories().iter().all(|(_, _, st)| st.count == 0) {
        let _ = writeln!(out, "{PREFIX} Recording is off: no per-category figures");
        return out;
    }
    for (_, name, st) in arena.categories().iter().filter(|(_, _, st)| st.count > 0) {
        let _ = writeln!(
            out,
            "{PREFIX} '{name}' used {} bytes with alignment overhead (requested {} bytes for {} allocation{})",
            st.used,
            st.requested,
            st.count,
            if st.count == 1 { "" } else { "s" }
        );
    }
    out
}

fn json<M: Memory>(arena: &Arena<'_, M>) -> String {
    let s = arena.sizes();
    let mut out = String::from("{\n");
    let fields: [(&str, u64); 15] = [
        ("capacity_bytes", s.capacity),
        ("alignment_lost_bytes", s.alignment_lost),
        ("head_bytes", s.head),
        ("temp_bytes", s.temp),
        ("temp_peak_bytes", s.temp_peak),
        ("tail_bytes", s.tail),
        ("used_bytes", s.used),
        ("available_bytes", s.available),
        ("available_persistent_bytes", s.available_persistent),
        ("required_bytes", s.required),
        ("required_nonpersistent_bytes", s.required_nonpersistent),
        ("required_persistent_bytes", s.required_persistent),
        ("temp_count", s.temp_count),
        ("persistent_count", s.persistent_count),
        ("plan_count", s.plan_count),
    ];
    let _ = writeln!(out, "  \"mode\": \"{}\",", mode(arena));
    let _ = writeln!(out, "  \"guard\": {},", arena.is_guarded());
    let _ = writeln!(out, "  \"recording\": {},", arena.is_recording());
    for (name, value) in fields {
        let _ = writeln!(out, "  \"{name}\": {value},");
    }
    out.push_str("  \"categories\": [");
    let mut first = true;
    for (id, name, st) in arena.categories().iter() {
        out.push_str(if first { "\n" } else { ",\n" });
        first = false;
        let _ = write!(
            out,
            "    {{\"id\": {id}, \"name\": \"{}\", \"requested_bytes\": {}, \"used_bytes\": {}, \"count\": {}}}",
            escape(name),
            st.requested,
            st.used,
            st.count
        );
    }
    out.push_str("\n  ]\n}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_quotes_backslashes_and_controls() {
        assert_eq!(escape(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(escape("x\u{1}y"), "x\\u0001y");
        assert_eq!(escape("ünï"), "ünï");
    }
}
