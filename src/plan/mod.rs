//! The static memory planner: buffers with sizes and lifetimes get offsets
//! in one block so that buffers live at the same step never overlap, with
//! the smallest peak this crate can find.
//!
//! ```
//! use nnmem::plan::{Algorithm, Lifetime, Planner};
//!
//! let mut planner = Planner::new();
//! planner.set_algorithm(Algorithm::Auto);
//! // TFLite Micro vocabulary: inclusive first and last use.
//! planner.add_buffer(4, Lifetime::inclusive(0, 2)?, None)?;
//! planner.add_buffer(4, Lifetime::inclusive(3, 8)?, None)?;
//! planner.add_buffer(4, Lifetime::inclusive(0, 8)?, None)?;
//! let plan = planner.plan()?;
//! assert_eq!(plan.peak, 8);
//! assert_eq!(plan.lower_bound, 8);
//! assert!(plan.proven_optimal);
//! # Ok::<(), nnmem::Error>(())
//! ```
//!
//! Costs: the lower bound and the validator are O(n log n) (with a counting
//! sort of their events where the steps are dense, as runtimes number
//! them); the heuristics are O(n log n · log m) where m is the number of
//! free gaps they pass (`size-first-fit` and `sequential`, chosen alone,
//! O(P log d) where P pairs of buffers live together are few); `tflm` is
//! O(n^2) like the original.

#[cfg(feature = "std")]
pub mod algo;
pub mod algorithm;
#[cfg(feature = "std")]
pub mod aligned;
#[cfg(feature = "std")]
pub mod bound;
#[cfg(feature = "std")]
pub mod csv;
#[cfg(feature = "std")]
mod events;
#[cfg(feature = "std")]
pub mod fixed;
pub mod heapless;
#[cfg(feature = "std")]
pub mod inplace;
#[cfg(feature = "std")]
mod interval_set;
#[cfg(feature = "std")]
pub(crate) mod max_tree;
#[cfg(feature = "std")]
mod occupancy;
#[cfg(feature = "std")]
pub mod picture;
#[cfg(feature = "std")]
mod planner;
#[cfg(feature = "std")]
pub mod problem;
pub mod scratch;
#[cfg(feature = "std")]
pub mod svg;
#[cfg(feature = "std")]
pub mod units;
#[cfg(feature = "std")]
pub mod validate;

#[cfg(feature = "std")]
pub use algo::{Placement, PlacementAlgorithm, SearchLimits};
pub use algorithm::Algorithm;
#[cfg(feature = "std")]
pub use bound::{lower_bound, LowerBound};
#[cfg(feature = "std")]
pub use fixed::FixedOverlaps;
#[cfg(feature = "std")]
pub use inplace::Inplace;
#[cfg(feature = "std")]
pub use planner::{PlanOutcome, Planner, DEFAULT_WORK_LIMIT};
#[cfg(feature = "std")]
pub use problem::{align_up, check_alignment, Buffer, Lifetime, Problem, UNUSED_STEP};
#[cfg(feature = "std")]
pub use validate::{validate, validate_with_fixed, Invalid, Overlap, Verdict};
