//! A pool of per-request blocks made and driven through the C ABI
//! (`nnm_exec_*`), as a C runtime drives it: `benches/workbuffer.rs` times
//! its acquire + release pair, `bench_table` runs threads over it.

use std::ptr;

use nnmem::ffi::workbuffer::compiled::{nnm_exec_compile, nnm_exec_compiled, nnm_exec_compiled_free};
use nnmem::ffi::workbuffer::model::{
    nnm_exec_model, nnm_exec_model_add_operator, nnm_exec_model_free, nnm_exec_model_new, nnm_exec_operator_desc,
    nnm_exec_output, NNM_EXEC_NO_ALIAS,
};
use nnmem::ffi::workbuffer::pool::{
    nnm_exec_block, nnm_exec_pool, nnm_exec_pool_acquire, nnm_exec_pool_free, nnm_exec_pool_get_info,
    nnm_exec_pool_info, nnm_exec_pool_new, nnm_exec_pool_release,
};
use nnmem::Status;

/// A pool of `blocks` blocks (4 KiB each) made through the C ABI, as a C
/// runtime makes it: a one-operator model compiled on the host.
pub struct CPool(*mut nnm_exec_pool);

// SAFETY: an nnm_exec_pool is thread-safe (acquire, release and
// get_info from any threads at once); the handle is freed only by the
// owner's drop, after every thread using it is done (scoped threads).
unsafe impl Sync for CPool {}

impl CPool {
    pub fn new(blocks: usize) -> CPool {
        let output = nnm_exec_output { id: 1, size: 4096, alias_of: NNM_EXEC_NO_ALIAS };
        let desc = nnm_exec_operator_desc {
            name: ptr::null(),
            inputs: ptr::null(),
            input_count: 0,
            outputs: &output,
            output_count: 1,
            immutable_sizes: ptr::null(),
            immutable_count: 0,
            mutable_sizes: ptr::null(),
            mutable_count: 0,
            immutable_ids: ptr::null(),
            mutable_ids: ptr::null(),
        };
        let mut model: *mut nnm_exec_model = ptr::null_mut();
        let mut compiled: *mut nnm_exec_compiled = ptr::null_mut();
        let mut pool: *mut nnm_exec_pool = ptr::null_mut();
        // SAFETY: every pointer handed over is a live local or a handle the
        // previous call wrote; the model and the compiled model are freed
        // once the pool (which owns its blocks) is made.
        unsafe {
            assert_eq!(nnm_exec_model_new(&mut model), Status::Ok);
            assert_eq!(nnm_exec_model_add_operator(model, &desc, ptr::null_mut()), Status::Ok);
            assert_eq!(
                nnm_exec_compile(model, ptr::null(), ptr::null(), None, ptr::null_mut(), &mut compiled),
                Status::Ok
            );
            assert_eq!(nnm_exec_pool_new(compiled, ptr::null(), blocks, &mut pool), Status::Ok);
            nnm_exec_compiled_free(compiled);
            nnm_exec_model_free(model);
        }
        CPool(pool)
    }

    /// The handle, for calls timed without a wrapper in between.
    pub fn raw(&self) -> *mut nnm_exec_pool {
        self.0
    }

    /// Waits for a free block without limit (`timeout_ns` -1, no token).
    pub fn acquire(&self) -> Result<nnm_exec_block, Status> {
        let mut block = nnm_exec_block { base: ptr::null_mut(), size: 0, slot: 0, generation: 0 };
        // SAFETY: a live pool and a local to write.
        match unsafe { nnm_exec_pool_acquire(self.0, -1, ptr::null(), &mut block) } {
            Status::Ok => Ok(block),
            s => Err(s),
        }
    }

    pub fn release(&self, block: &nnm_exec_block) -> Result<(), Status> {
        // SAFETY: a live pool and a block it leased, unchanged.
        match unsafe { nnm_exec_pool_release(self.0, block) } {
            Status::Ok => Ok(()),
            s => Err(s),
        }
    }

    pub fn info(&self) -> nnm_exec_pool_info {
        let mut info = nnm_exec_pool_info::default();
        // SAFETY: a live pool and a local to write.
        assert_eq!(unsafe { nnm_exec_pool_get_info(self.0, &mut info) }, Status::Ok);
        info
    }
}

impl Drop for CPool {
    fn drop(&mut self) {
        // SAFETY: the pool is live and no thread uses it any more.
        unsafe { nnm_exec_pool_free(self.0) }
    }
}
