//! The C ABI: thin `extern "C"` wrappers over the safe core, and the only
//! module that touches raw pointers.
//!
//! Every export runs inside [`guard`], which catches panics, records the
//! error text for `nnm_last_error()`, and turns it into an `nnm_status`.
//! Arguments are checked (NULL, sizes, overflow, alignment) before any work,
//! and out-parameters are written only on success.

#![allow(non_camel_case_types)] // C names: nnm_planner, nnm_plan_result, ...

pub mod arena;
pub mod cancel;
pub mod error;
pub mod handle;
pub mod net;
pub mod plan;
pub mod status;
pub mod text;

pub use error::{nnm_last_error, nnm_status_str, nnm_version};
