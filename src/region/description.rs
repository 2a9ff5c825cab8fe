//! Region descriptions: which tensors a region takes (its rule) and how it
//! is planned and placed (its properties); memory levels.

use super::rule::Rule;
use crate::plan::Algorithm;

/// A named memory level with a rank: regions of one level share one
/// address space and are laid out without overlapping; lower ranks are
/// closer to the compute (SRAM rank 0 before DDR rank 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryLevel {
    /// Its name ("sram").
    pub name: String,
    /// Its rank: lower is faster; reports list levels by rank.
    pub rank: u32,
}

/// The level regions are in when none is named.
pub const DEFAULT_LEVEL: &str = "memory";

/// How a region's properties read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionProperties {
    /// The planner: any nnmem algorithm; [`Algorithm::Sequential`] is Glow's
    /// "preserve allocation order". Default `auto`.
    pub algorithm: Algorithm,
    /// Whether tensors whose lifetimes do not overlap may share bytes.
    /// Off: every tensor gets bytes of its own (Glow's weights). Default on.
    pub reuse: bool,
    /// One region instance per matching tensor (Glow's per-buffer regions,
    /// e.g. one per input) instead of one shared by all. Default off.
    pub per_tensor: bool,
    /// Alignment of every offset and size in the region, and of its base
    /// address (a power of two). Default 64, Glow's tensor alignment.
    pub alignment: u64,
    /// A fixed start address in its level; `None`: laid out after the
    /// level's other regions.
    pub base_address: Option<u64>,
    /// The most bytes the region may take, reserved bytes included; `None`:
    /// unlimited.
    pub capacity: Option<u64>,
    /// The memory level, by name. Default [`DEFAULT_LEVEL`].
    pub level: String,
    /// Bytes kept free at the front of the region, before its first tensor
    /// (rounded up to the region's plan alignment, so tensors stay aligned).
    pub reserved_front: u64,
    /// Bytes kept free at the back of the region, after its last tensor.
    pub reserved_back: u64,
    /// The region (description name) tensors move to, largest lifetime
    /// pressure first, when this one exceeds its capacity.
    pub spill_to: Option<String>,
    /// A region instance may hold constants together with per-run tensors
    /// (every other kind: their bytes change from run to run). Off, such an
    /// instance is an error when the table is built, whether its rule or a
    /// spill brought them together (Glow: a region does not mix symbols of
    /// different semantics). Default off.
    pub mix_constants: bool,
}

/// Glow's tensor alignment, the default of every region.
pub const DEFAULT_REGION_ALIGNMENT: u64 = 64;

impl Default for RegionProperties {
    fn default() -> Self {
        RegionProperties {
            algorithm: Algorithm::Auto,
            reuse: true,
            per_tensor: false,
            alignment: DEFAULT_REGION_ALIGNMENT,
            base_address: None,
            capacity: None,
            level: DEFAULT_LEVEL.to_string(),
            reserved_front: 0,
            reserved_back: 0,
            spill_to: None,
            mix_constants: false,
        }
    }
}

/// One region description (Glow's `MemoryRegionDescription`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionDescription {
    /// Its id, unique in the configuration.
    pub id: u32,
    /// Its name, unique in the configuration.
    pub name: String,
    /// Which tensors it takes.
    pub rule: Rule,
    /// How it is planned and placed.
    pub properties: RegionProperties,
    /// Free-form `key=value` attributes for the backend's own use, keys
    /// unique, in the order given.
    pub attributes: Vec<(String, String)>,
}

impl RegionDescription {
    /// A description with default properties and no attributes.
    pub fn new(id: u32, name: impl Into<String>, rule: Rule) -> Self {
        RegionDescription {
            id,
            name: name.into(),
            rule,
            properties: RegionProperties::default(),
            attributes: Vec::new(),
        }
    }

    /// Builder: sets the properties.
    pub fn with_properties(mut self, properties: RegionProperties) -> Self {
        self.properties = properties;
        self
    }

    /// Builder: adds (or replaces) an attribute.
    pub fn with_attribute(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.set_attribute(key, value);
        self
    }

    /// Adds (or replaces) an attribute.
    pub fn set_attribute(&mut self, key: impl Into<String>, value: impl Into<String>) {
        let (key, value) = (key.into(), value.into());
        match self.attributes.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.attributes.push((key, value)),
        }
    }

    /// The value of attribute `key`.
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}
