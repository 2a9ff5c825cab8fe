//! Glow's five standard region descriptions, which reproduce its old three
//! regions when the user defines nothing: constant weights | mutable
//! weights (placeholders, by direction) | activations, in one level.

use super::config::RegionConfig;
use super::description::{RegionDescription, RegionProperties};
use super::rule::Rule;
use super::tensor::TensorKind;
use crate::plan::Algorithm;

/// Names of the default descriptions, in layout order.
pub const DEFAULT_REGION_NAMES: [&str; 5] =
    ["constant-weights", "mutable-weights", "mutable-input-weights", "mutable-output-weights", "activations"];

/// The five descriptions, ids 0 to 4:
/// - `constant-weights`: constants, no reuse, in order of addition;
/// - `mutable-weights`: mutable placeholders, no reuse;
/// - `mutable-input-weights`: input placeholders, no reuse;
/// - `mutable-output-weights`: output and input-output placeholders, no
///   reuse;
/// - `activations`: activations, reuse, whole-list planning (`auto`).
pub fn default_descriptions() -> Vec<RegionDescription> {
    let weights = RegionProperties { reuse: false, algorithm: Algorithm::Sequential, ..RegionProperties::default() };
    let kind = Rule::Kind;
    vec![
        RegionDescription::new(0, DEFAULT_REGION_NAMES[0], kind(TensorKind::Constant)).with_properties(weights.clone()),
        RegionDescription::new(1, DEFAULT_REGION_NAMES[1], kind(TensorKind::Mutable)).with_properties(weights.clone()),
        RegionDescription::new(2, DEFAULT_REGION_NAMES[2], kind(TensorKind::Input)).with_properties(weights.clone()),
        RegionDescription::new(3, DEFAULT_REGION_NAMES[3], kind(TensorKind::Output).or(kind(TensorKind::InputOutput)))
            .with_properties(weights),
        RegionDescription::new(4, DEFAULT_REGION_NAMES[4], kind(TensorKind::Activation)),
    ]
}

impl RegionConfig {
    /// A configuration of the five default descriptions in the default
    /// level.
    pub fn glow_defaults() -> RegionConfig {
        let mut config = RegionConfig::new();
        for d in default_descriptions() {
            config.append(d).expect("the defaults are valid and distinct");
        }
        config
    }
}
