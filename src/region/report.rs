//! The region table as text or JSON (what `nnm_region_table_report` and
//! `nnmem regions` print).

use super::table::RegionTable;
use crate::report_format::ReportFormat;

impl RegionTable {
    /// The table as text or JSON (format in the lead's PREAMBLE).
    pub fn report(&self, format: ReportFormat) -> String {
        let _ = format;
        unimplemented!("issue 15: the cli engineer writes this")
    }
}
