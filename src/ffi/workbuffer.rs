//! C API of workbuffer provisioning (`nnm_exec_*`, "execution memory": what
//! a runtime asks for per operator and per infer request): the model
//! builder ([`model`]), the compiled model with its blobs, layout, report
//! and pointer resolution ([`compiled`]), and the thread-safe pool of
//! per-request mutable blocks ([`pool`]). The safe core in
//! `crate::workbuffer` does the work; this layer checks C arguments and
//! turns device addresses into pointers.

pub mod model;
#[cfg(test)]
mod tests;

pub use self::model::{nnm_exec_operator_desc, nnm_exec_output, nnm_exec_tensor, NNM_EXEC_NO_ALIAS};
