//! Workbuffer provisioning, OpenVINO GPU-plugin style: operators' inputs,
//! outputs and scratch memory for parallel infer requests.
//!
//! - [`model`]: the network as the runtime describes it (operators in
//!   execution order, constants, aliases, concat parents, workbuffer
//!   requests), checked as it is built.
//! - [`layout`]: the constants and immutable-workbuffer blobs, and the
//!   mutable block planned through [`crate::plan`].
//! - [`report`], [`svg`]: a laid-out model as text or JSON, and its
//!   mutable block as a picture.

pub mod layout;
pub mod model;
pub mod report;
pub mod svg;

pub use model::{
    BufferId, BufferSpec, InputSpec, ModelBuilder, OpIndex, OperatorSpec, Origin, OutputSpec, WorkbufferRequest,
};
