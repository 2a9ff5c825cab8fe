//! Memory regions, Glow-style: a backend describes its memories once as
//! region descriptions (a rule saying which tensors, properties saying how
//! they are planned and where the region sits), and every tensor of a model
//! lands in exactly one region, with an offset and an address.
//!
//! - [`tensor`]: tensors as a model hands them in (kind, size, lifetime,
//!   dtype, function, tags, views).
//! - [`model`]: a model's tensors, checked as they are added; weights
//!   shared by name across functions.
//! - [`rule`]: predicates over tensor fields with AND, OR and NOT.
//! - [`description`]: region descriptions, their properties, memory levels.
//! - [`config`]: the ordered first-match list of descriptions and the
//!   levels; [`defaults`]: Glow's five standard descriptions.
//! - [`table`]: the region table, planned through [`crate::plan`].

mod assign;
mod build;
pub mod config;
mod config_file;
pub mod defaults;
pub mod description;
mod instance;
mod layout;
pub mod model;
pub(crate) mod report;
pub mod rule;
mod spill;
mod svg;
pub mod table;
pub mod tensor;
mod timeline;

pub use config::RegionConfig;
pub use description::{MemoryLevel, RegionDescription, RegionProperties, DEFAULT_LEVEL, DEFAULT_REGION_ALIGNMENT};
pub use model::{Model, TensorId};
pub use rule::Rule;
pub use table::{BuildTimings, LevelLayout, RegionInstance, RegionTable, SpillRecord, TensorPlacement};
pub use tensor::{parse_tags, Tensor, TensorKind, ViewOf, DEFAULT_FUNCTION};
