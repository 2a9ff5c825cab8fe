//! C API of device allocators (`nnm_device_allocator_*`): the handle every
//! pool, owned arena and net draws its memory from.

#![allow(dead_code)] // TEMPORARY (pool base): the pool and seam exports use these.

use super::args::out_param;
use super::error::{guard, guard_void};
use super::handle::{free_handle, into_handle, value_ref, HandleType};
use crate::pool::device::{self, SharedAllocator};
use crate::status::Status;

/// A device allocator: host memory, the CUDA runtime, or a C vtable.
/// Thread-safe: a handle may be used from any thread and given to any
/// number of pools, arenas and nets at once; each of them keeps the
/// allocator alive as long as it needs it, so the handle may be freed
/// before them.
pub struct nnm_device_allocator {
    pub(crate) inner: SharedAllocator,
}

// SAFETY: no other handle type is named "nnm_device_allocator".
unsafe impl HandleType for nnm_device_allocator {
    const NAME: &'static str = "nnm_device_allocator";
}

/// The allocator behind a handle (NULL, liveness and type checked), shared.
///
/// # Safety
/// `allocator` must be NULL, a freed allocator handle, or a live one.
pub(crate) unsafe fn shared_allocator(
    allocator: *const nnm_device_allocator,
    what: &str,
) -> crate::Result<SharedAllocator> {
    // SAFETY: the caller's promise is `value_ref`'s; the handle is only read.
    Ok(unsafe { value_ref(allocator, what) }?.inner.clone())
}

/// The allocator behind an optional handle: NULL means the host allocator.
///
/// # Safety
/// As [`shared_allocator`].
pub(crate) unsafe fn allocator_or_host(
    allocator: *const nnm_device_allocator,
    what: &str,
) -> crate::Result<SharedAllocator> {
    if allocator.is_null() {
        Ok(device::host())
    } else {
        // SAFETY: as the caller promised.
        unsafe { shared_allocator(allocator, what) }
    }
}

/// Creates a handle to the host allocator (aligned system allocation, the
/// default of every pool, owned arena and net). Free it with
/// `nnm_device_allocator_free`.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `out_allocator` must be NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_device_allocator_host(out_allocator: *mut *mut nnm_device_allocator) -> Status {
    guard(|| {
        // SAFETY: the caller promises `out_allocator` is NULL or writable.
        let out = unsafe { out_param(out_allocator, "out_allocator") }?;
        out.write(into_handle(nnm_device_allocator { inner: device::host() }));
        Ok(())
    })
}

/// Frees a handle. Pools, arenas and nets made with it keep the allocator
/// until they are freed. NULL is a no-op; a double free is detected and
/// reported through `nnm_last_error()`.
///
/// # Safety
/// `allocator` may be any pointer value: only a live handle is freed.
/// No other thread may be using the handle.
#[no_mangle]
pub unsafe extern "C" fn nnm_device_allocator_free(allocator: *mut nnm_device_allocator) {
    // SAFETY: `free_handle` frees only what the registry holds as a live
    // allocator handle; the caller promises nobody else is using it.
    guard_void(|| unsafe { free_handle(allocator) })
}
