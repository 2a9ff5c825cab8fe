//! # nnmem
//!
//! Memory management for machine-learning runtimes, as a Rust library with a
//! C ABI. The core is a static memory planner: buffers with sizes and
//! lifetimes get offsets in one block so that buffers live at the same time
//! never overlap, with the smallest peak found. The tensor arena, memory
//! regions and workbuffer provisioning all plan through it.
//!
//! - [`plan`]: the planner (algorithms, lower bound, validator, picture,
//!   CSV format).
//! - [`arena`]: the tensor arena (head, temp and tail sections, exact size
//!   needed, recording, guard mode).
//! - [`net`]: list_head-compatible tracking of a legacy C net's params,
//!   layer outputs, inputs and caches (names, ownership, byte report).
//! - [`pool`]: memory pools over pluggable device allocators.
//! - [`region`]: Glow-style memory regions: rule-based region tables
//!   planned through the planner.
//! - [`workbuffer`]: workbuffer provisioning (OpenVINO GPU-plugin style):
//!   the network model, its shared blobs and planned mutable block, the
//!   pool of blocks for parallel infer requests, and pointer resolution.
//! - [`cancel`]: the cancellation token shared by the planner's search and
//!   the request pool's waiters.
//! - [`status`]: the status enum shared by every capability and the error
//!   type of the safe core.
//! - `svg`: what the SVG pictures of plans and region tables share (the
//!   document's head, escaping, axis ticks).
//! - `ffi`: the C ABI (`include/nnmem.h`), the only module that touches raw
//!   pointers from C (besides it, only the allocator seam,
//!   `pool::device`, handles raw memory: allocating it and writing the
//!   host-accessible blocks it handed out).
//!
//! The safe core never panics on bad input: every fallible call returns an
//! [`Error`] naming what was wrong, and changes nothing.

//!
//! Without the default `std` feature the crate is `no_std` and uses no
//! `alloc`: the embedded build for microcontrollers, which holds what needs
//! no heap (the scratch planner, [`plan::scratch`], the heap-free
//! algorithms it shares with the heap planner, [`plan::heapless`], and
//! their C calls). README.md, "The embedded build", says how to build it.

#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs)]

pub mod arena;
#[cfg(feature = "std")]
pub mod cancel;
pub mod ffi;
#[cfg(feature = "std")]
pub mod json;
pub mod message;
pub mod names;
#[cfg(feature = "std")]
pub mod net;
#[cfg(all(not(feature = "std"), target_os = "none"))]
mod panic_handler;
pub mod plan;
#[cfg(feature = "std")]
pub mod pool;
#[cfg(feature = "std")]
pub mod region;
#[cfg(feature = "std")]
pub mod report_format;
#[cfg(feature = "std")]
mod sort;
pub mod status;
#[cfg(feature = "std")]
mod svg;
#[cfg(feature = "std")]
pub mod workbuffer;

pub use status::Status;
pub use status::{Error, Result};

/// The crate version, from `Cargo.toml`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
