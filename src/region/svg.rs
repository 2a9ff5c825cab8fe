//! The region table as an SVG picture: one lane per memory level, regions
//! as bands, tensors inside.

use super::table::RegionTable;

impl RegionTable {
    /// The picture, as a standalone SVG document.
    pub fn svg(&self) -> String {
        unimplemented!("issue 15: the cli engineer writes this")
    }
}
