//! C API of memory regions (`nnm_region_*`): a backend describes its
//! memories once (levels, and region descriptions with rules and
//! properties), hands in a model's tensors, and reads back every tensor's
//! region, offset and address. The safe core in `crate::region` does the
//! work; this layer checks C arguments and keeps the strings it hands out.
//!
//! - [`model`]: `nnm_region_model` and `nnm_region_tensor_desc` (tensors as
//!   C hands them in), `nnm_tensor_kind` and `nnm_lifetime_convention`.
//! - [`rule`]: `nnm_region_rule`, immutable predicates and their
//!   combinators.
//! - [`config`]: `nnm_region_config` and `nnm_region_desc` (levels,
//!   descriptions, attributes, the TOML reader, Glow's defaults).
//! - [`table`]: `nnm_region_table`, built from a config and a model, with
//!   its regions, placements, spills, report and picture.

pub mod config;
pub mod model;
pub mod rule;
pub mod table;
#[cfg(test)]
mod tests;

pub use config::{
    nnm_region_config, nnm_region_desc, NNM_REGION_FIXED_BASE, NNM_REGION_MIX_CONSTANTS, NNM_REGION_NO_REUSE,
    NNM_REGION_PER_TENSOR,
};
pub use model::{nnm_region_model, nnm_region_tensor_desc, LifetimeConvention};
pub use rule::nnm_region_rule;
pub use table::{nnm_region_info, nnm_region_spill, nnm_region_table, nnm_tensor_placement};
