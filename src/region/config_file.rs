//! The configuration file, in TOML.

use std::path::Path;

use super::config::RegionConfig;
use crate::status::Result;

impl RegionConfig {
    /// Reads a configuration from TOML text; errors give line and column.
    pub fn from_toml_str(text: &str) -> Result<RegionConfig> {
        let _ = text;
        unimplemented!("issue 15: the config engineer writes this")
    }

    /// Reads a configuration from a TOML file; errors name the file.
    pub fn from_toml_path(path: &Path) -> Result<RegionConfig> {
        let _ = path;
        unimplemented!("issue 15: the config engineer writes this")
    }
}
