//! The report formats shared by the arena's and the pools' reports (text
//! or JSON). It sits below both so that neither imports the other;
//! `arena::ReportFormat` re-exports it.

use crate::names::c_enum;

/// The report formats.
// repr(C): cbindgen gives a sized repr a `typedef uint32_t` that clashes
// with the enum tag in C++ (-Wc++-compat); no C signature takes this type.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ReportFormat {
    /// Lines of text (for the arena, like TFLite Micro's
    /// `RecordingMicroAllocator::PrintAllocations`).
    Text = 0,
    /// One JSON object (pretty-printed, one field per line).
    Json = 1,
}

c_enum! {
    ReportFormat, "report format",
    value_error(value) => format!("unknown report format {value} (0: text, 1: json)"),
    { Text = "text", Json = "json" }
}
