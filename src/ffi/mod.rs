//! The C ABI: thin `extern "C"` wrappers over the safe core, and the only
//! module that touches raw pointers.
//!
//! Every export runs inside `guard`, which catches panics, records the
//! error text for `nnm_last_error()`, and turns it into an `nnm_status`.
//! Arguments are checked (NULL, sizes, overflow, alignment) before any work,
//! and out-parameters are written only on success.

#![allow(non_camel_case_types)]
// C names: nnm_planner, nnm_plan_result, ...
// Every unsafe operation sits in its own `unsafe` block with a `// SAFETY:`
// comment saying why it is sound, also inside `unsafe fn`s.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod arena;
#[cfg(feature = "std")]
pub(crate) mod args;
mod bare;
#[cfg(feature = "std")]
pub mod cancel;
#[cfg(feature = "std")]
pub mod device;
pub mod error;
#[cfg(feature = "std")]
pub mod handle;
#[cfg(feature = "std")]
pub mod net;
#[cfg(feature = "std")]
pub mod plan;
#[cfg(feature = "std")]
pub mod pool;
#[cfg(feature = "std")]
pub mod region;
pub mod scratch_plan;
#[cfg(feature = "std")]
pub mod text;
#[cfg(feature = "std")]
pub mod workbuffer;

pub use error::{nnm_last_error, nnm_status_str, nnm_version};
