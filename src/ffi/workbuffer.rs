//! C API of workbuffer provisioning (`nnm_exec_*`, "execution memory": what
//! a runtime asks for per operator and per infer request): the model
//! builder ([`model`]), the compiled model with its blobs, layout, report
//! and pointer resolution ([`compiled`]), and the thread-safe pool of
//! per-request mutable blocks ([`pool`]). The safe core in
//! `crate::workbuffer` does the work; this layer checks C arguments and
//! turns device addresses into pointers.

pub mod compiled;
pub mod model;
pub mod pool;
#[cfg(test)]
mod tests;

pub use self::compiled::{
    nnm_exec_area, nnm_exec_info, nnm_exec_init_fn, nnm_exec_op_shape, nnm_exec_options, nnm_exec_place,
};
pub use self::model::{nnm_exec_operator_desc, nnm_exec_output, nnm_exec_tensor, NNM_EXEC_NO_ALIAS};
pub use self::pool::{nnm_exec_block, nnm_exec_pool_info};
