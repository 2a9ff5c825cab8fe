//! `nnm_exec_pool_*`: the thread-safe pool of per-request mutable blocks
//! (`crate::workbuffer::BlockPool`). Acquire and release are the hot calls:
//! a type-tag check for the pool; taking or returning a free block
//! allocates nothing. Only a cancellation token (looked up in the
//! registry when given) and waiting for a block cost more.

use std::ffi::{c_char, c_void};
use std::time::Duration;

use super::compiled::{compiled_ref, nnm_exec_compiled};
use crate::ffi::args::{handle_query, non_null, out_param, slice_in};
use crate::ffi::cancel::{nnm_cancel_token, token_ref};
use crate::ffi::device::{allocator_or_host, nnm_device_allocator};
use crate::ffi::error::{guard, guard_void};
use crate::ffi::handle::{free_handle, into_handle, tagged_ref, value_ref, HandleType};
use crate::ffi::text::copy_text;
use crate::pool::DevicePtr;
use crate::status::{Error, Result, Status};
use crate::workbuffer::{BlockPool, Lease};

/// A leased mutable block: one infer request's memory. Pass it back to
/// `nnm_exec_resolve` and `nnm_exec_pool_release` unchanged.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct nnm_exec_block {
    /// The block's first byte.
    pub base: *mut c_void,
    /// Its size in bytes (the compiled model's `block_bytes`).
    pub size: u64,
    /// Which block of the pool it is.
    pub slot: u32,
    /// The lease's generation: a released lease is stale.
    pub generation: u32,
}

impl Default for nnm_exec_block {
    fn default() -> Self {
        nnm_exec_block { base: std::ptr::null_mut(), size: 0, slot: 0, generation: 0 }
    }
}

/// A pool's figures. Counts of blocks, and of calls since it was made.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct nnm_exec_pool_info {
    /// The blocks asked for at `nnm_exec_pool_new`.
    pub requested: usize,
    /// Blocks allocated now (free and out).
    pub blocks: usize,
    /// Blocks the pool keeps (after `nnm_exec_pool_shrink`).
    pub target: usize,
    /// Blocks free now.
    pub free_blocks: usize,
    /// Blocks leased now.
    pub out_blocks: usize,
    /// Threads waiting in `nnm_exec_pool_acquire` now.
    pub waiters: usize,
    /// Bytes of one block.
    pub block_bytes: u64,
    /// Successful acquires.
    pub acquires: u64,
    /// Acquires that had to wait.
    pub waits: u64,
    /// Acquires that timed out (NNM_BUSY).
    pub timeouts: u64,
    /// Acquires cancelled through their token (NNM_CANCELLED).
    pub cancellations: u64,
    /// 1 when the pool got fewer blocks than asked for: the device's free
    /// memory held fewer, or an allocation failed after at least one block
    /// (`nnm_exec_pool_partial_reason` says which, with the figures).
    pub partial: u8,
}

/// A pool of N mutable blocks serving parallel infer requests.
///
/// Thread-safe: `nnm_exec_pool_acquire`, `_release`, `_shrink`, `_get_info`
/// and `_partial_reason` may be called from any threads at once. Only
/// `nnm_exec_pool_free` must not overlap any other call on it. Every call
/// looks the handle up in the registry first, except the hot
/// `nnm_exec_pool_acquire` and `nnm_exec_pool_release`, which only check a
/// type tag (undefined on a freed handle).
pub struct nnm_exec_pool {
    pool: BlockPool,
}

// SAFETY: no other handle type is named "nnm_exec_pool".
unsafe impl HandleType for nnm_exec_pool {
    const NAME: &'static str = "nnm_exec_pool";
}

/// The core's lease for a C block (NULL base refused).
#[inline(always)]
pub(crate) fn lease_of(block: &nnm_exec_block) -> Result<Lease> {
    non_null(block.base, "block->base")?;
    let base = DevicePtr::new(block.base.cast()).expect("checked non-NULL");
    Ok(Lease { slot: block.slot, generation: block.generation, base, size: block.size })
}

/// Creates a pool of up to `requested` (1 to UINT32_MAX: a lease numbers
/// its block in the 32-bit `nnm_exec_block.slot`) mutable blocks for
/// `compiled`, each `block_bytes` (see `nnm_exec_compiled_info`), from
/// `allocator` (NULL: host). When the allocator reports its free memory,
/// the pool takes no more blocks than fit in it; when an allocation fails
/// after at least one block, the pool keeps the blocks it got (`partial`
/// in `nnm_exec_pool_get_info`, the reason from
/// `nnm_exec_pool_partial_reason`). The pool copies what it needs:
/// `compiled` may be freed first.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (`requested` 0 or above
/// UINT32_MAX, not a live handle); OUT_OF_MEMORY when not even one block fits ("one mutable block
/// needs X B; device 'name' has Y B free") or the first allocation fails.
///
/// # Safety
/// `compiled` must be NULL, freed, or a live handle not being freed;
/// `allocator` NULL or an allocator handle; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_pool_new(
    compiled: *const nnm_exec_compiled,
    allocator: *const nnm_device_allocator,
    requested: usize,
    out: *mut *mut nnm_exec_pool,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises every pointer is NULL or valid.
        let (c, allocator, out) =
            unsafe { (compiled_ref(compiled)?, allocator_or_host(allocator, "allocator")?, out_param(out, "out")?) };
        if requested == 0 {
            return Err(Error::invalid("requested is 0: a pool needs at least one block"));
        }
        let pool = BlockPool::for_model(c, allocator, requested)?;
        out.write(into_handle(nnm_exec_pool { pool }));
        Ok(())
    })
}

/// Frees a pool and all its blocks, also those still leased (their
/// requests must be done with them). NULL is a no-op; a double free is
/// detected and reported through `nnm_last_error()`.
///
/// # Safety
/// `pool` may be any pointer value: only a live pool is freed. No thread
/// may be inside a call on it (an acquire waiting included).
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_pool_free(pool: *mut nnm_exec_pool) {
    // SAFETY: `free_handle` frees only what the registry holds as a live
    // pool; the caller promises no call is inside it.
    guard_void(|| unsafe { free_handle(pool) })
}

/// Writes the pool's figures. (Named `_get_info`: C cannot have a
/// function and the `nnm_exec_pool_info` type under one name.)
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (not a live handle).
///
/// # Safety
/// `pool` must be NULL, freed, or a live pool not being freed; `out` NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_pool_get_info(pool: *const nnm_exec_pool, out: *mut nnm_exec_pool_info) -> Status {
    let info = |h: &nnm_exec_pool| {
        let i = h.pool.info();
        Ok(nnm_exec_pool_info {
            requested: i.requested,
            blocks: i.blocks,
            target: i.target,
            free_blocks: i.free,
            out_blocks: i.out,
            waiters: i.waiters,
            block_bytes: i.block_size,
            acquires: i.acquires,
            waits: i.waits,
            timeouts: i.timeouts,
            cancellations: i.cancellations,
            partial: u8::from(i.partial.is_some()),
        })
    };
    // SAFETY: the caller's promises are `handle_query`'s.
    unsafe { handle_query(pool, "pool", out, "out", info) }
}

/// Copies why the pool got fewer blocks than requested ("" when it got
/// them all) into `buf`, by the text conventions (NULL `buf` and `len` 0:
/// size query).
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (not a live handle),
/// BUFFER_TOO_SMALL.
///
/// # Safety
/// `pool` as for `nnm_exec_pool_get_info`; `buf` NULL or writable for `len`
/// bytes; `out_len` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_pool_partial_reason(
    pool: *const nnm_exec_pool,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises `pool` is NULL or a live pool.
        let reason = unsafe { value_ref(pool, "pool") }?.pool.info().partial.unwrap_or_default();
        // SAFETY: the caller promises `buf` and `out_len` are valid.
        unsafe { copy_text(&reason, buf, len, out_len, "the partial reason") }
    })
}

/// Leases a free block for one infer request and writes it to `out`.
/// Waits while none is free: until a release (which wakes one waiter),
/// `timeout_ns` (< 0: no limit; 0: try once; > 0: nanoseconds), or the
/// cancellation of `cancel` (NULL: none; a token already cancelled fails
/// at once; a cancel wakes the wait even if the token is reset right
/// after). Hot: only the pool's type tag is checked.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (a freed token); BUSY (the
/// timeout passed, or no block free with `timeout_ns` 0); CANCELLED (the
/// token was cancelled); WRONG_STATE (the pool was shrunk to 0 blocks).
///
/// # Safety
/// `pool` must be NULL or a live pool (only its tag is checked: a freed
/// one is undefined); `cancel` NULL or a token handle, which must stay
/// live (not freed) until this call returns; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_pool_acquire(
    pool: *mut nnm_exec_pool,
    timeout_ns: i64,
    cancel: *const nnm_cancel_token,
    out: *mut nnm_exec_block,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises `pool` is NULL or live and `out` NULL
        // or writable; the token is looked up only when given.
        let (p, out, token) = unsafe {
            let token = if cancel.is_null() { None } else { Some(&token_ref(cancel)?.token) };
            (&tagged_ref(pool, "pool")?.pool, out_param(out, "out")?, token)
        };
        let timeout = match timeout_ns {
            t if t < 0 => None,
            t => Some(Duration::from_nanos(t as u64)),
        };
        let lease = p.acquire(timeout, token)?;
        out.write(nnm_exec_block {
            base: lease.base.as_ptr().cast(),
            size: lease.size,
            slot: lease.slot,
            generation: lease.generation,
        });
        Ok(())
    })
}

/// Gives a leased block back (its request's kernels are done with it) and
/// wakes one waiter. Hot: only the pool's type tag is checked.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (a stale or double release, a
/// block of another pool: nothing changes).
///
/// # Safety
/// `pool` as for `nnm_exec_pool_acquire`; `block` NULL or readable.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_pool_release(pool: *mut nnm_exec_pool, block: *const nnm_exec_block) -> Status {
    guard(|| {
        // SAFETY: the caller promises `pool` is NULL or live and `block`
        // NULL or readable.
        let (p, block) = unsafe { (&tagged_ref(pool, "pool")?.pool, &slice_in(block, 1, "block")?[0]) };
        p.release(&lease_of(block)?)
    })
}

/// Lowers the number of blocks the pool keeps to `blocks` (at most the
/// current target): free blocks beyond it are freed now, leased ones when
/// they come back. Shrinking to 0 wakes every waiter, who fail with
/// WRONG_STATE.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (not a live handle, `blocks`
/// above the current target).
///
/// # Safety
/// `pool` must be NULL, freed, or a live pool not being freed.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_pool_shrink(pool: *mut nnm_exec_pool, blocks: usize) -> Status {
    guard(|| {
        // SAFETY: the caller promises `pool` is NULL, freed or live.
        unsafe { value_ref(pool, "pool") }?.pool.shrink(blocks)
    })
}
