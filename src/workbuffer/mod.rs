//! Workbuffer provisioning, OpenVINO GPU-plugin style: operators' inputs,
//! outputs and scratch memory for parallel infer requests.
//!
//! - [`model`]: the network as the runtime describes it (operators in
//!   execution order, constants, aliases, concat parents, workbuffer
//!   requests), checked as it is built.
//! - [`layout`]: the constants and immutable-workbuffer blobs, and the
//!   mutable block planned through [`crate::plan`].
//! - [`build`]: the compiled model: blobs allocated from a device,
//!   constants copied in, immutable workbuffers initialised once, and
//!   every operator's pointers resolved against a request's block.
//! - [`request_pool`]: the N mutable blocks parallel requests take turns
//!   on.
//! - [`report`], [`svg`]: a laid-out model as text or JSON, and its
//!   mutable block as a picture.

pub mod build;
pub mod layout;
pub mod model;
pub mod report;
pub mod request_pool;
pub mod svg;

#[cfg(test)]
mod tests;

pub use build::{BuildTimings, CompiledModel, InitFn, OpShape};
pub use layout::{lay_out, Area, Layout, LayoutOptions, Place, Planned, PlannedItem};
pub use model::{
    BufferId, BufferSpec, InputSpec, ModelBuilder, OpIndex, OperatorSpec, Origin, OutputSpec, WorkbufferKind,
    WorkbufferRef, WorkbufferRequest,
};
pub use request_pool::{BlockPool, Lease, PoolInfo};
