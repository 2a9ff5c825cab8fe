//! C API of device allocators (`nnm_device_allocator_*`): the handle every
//! pool, owned arena and net draws its memory from, made from the host
//! allocator, the CUDA runtime or a C vtable ([`vtable`]).

mod vtable;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::ffi::{c_char, c_void, CString};
use std::sync::{Arc, Mutex};

use super::args::{out_param, slice_in, stream_of};
use super::error::{guard, guard_ptr, guard_void};
use super::handle::{free_handle, into_handle, value_ref, HandleType};
use crate::pool::device::{self, DeviceBlock, SharedAllocator};
use crate::status::{Error, Status};

pub use self::vtable::{
    nnm_device_alloc_fn, nnm_device_allocator_vtable, nnm_device_free_fn, nnm_device_mem_info_fn,
    nnm_device_release_fn, NNM_DEVICE_HOST_ACCESSIBLE,
};

/// A device allocator: host memory, CUDA (runtime or driver), or a C vtable.
/// Thread-safe: a handle may be used from any thread and given to any
/// number of pools, arenas and nets at once; each of them keeps the
/// allocator alive as long as it needs it, so the handle may be freed
/// before them.
pub struct nnm_device_allocator {
    pub(crate) inner: SharedAllocator,
    /// The allocator's name, NUL-terminated, for `nnm_device_allocator_name`.
    name: CString,
    /// Memory handed out by `nnm_device_allocator_alloc`, by address
    /// (ordered, to find a block that overlaps a new one); what is still
    /// here when the handle is freed goes back to the allocator.
    direct: Mutex<BTreeMap<usize, DeviceBlock>>,
}

impl nnm_device_allocator {
    /// A handle over `inner`.
    pub(crate) fn new(inner: SharedAllocator) -> Self {
        let name = CString::new(inner.name().replace('\0', "\\0")).expect("NULs were replaced");
        nnm_device_allocator { inner, name, direct: Mutex::default() }
    }

    fn direct(&self) -> std::sync::MutexGuard<'_, BTreeMap<usize, DeviceBlock>> {
        // A panic while the map was locked left it consistent (inserts and
        // removes are single calls), so a poisoned lock is still usable.
        self.direct.lock().unwrap_or_else(|p| p.into_inner())
    }
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

/// Fails with INVALID_ARGUMENT naming the allocator unless the CPU can
/// read and write its memory: `user` (an arena, a net) needs that.
pub(crate) fn require_host_accessible(allocator: &SharedAllocator, user: &str) -> crate::Result<()> {
    if allocator.host_accessible() {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "device allocator \"{}\" is not host-accessible: {user} needs memory the CPU can read and write \
         (an allocator with NNM_DEVICE_HOST_ACCESSIBLE, or the host allocator)",
        allocator.name()
    )))
}

/// `size` zeroed bytes aligned to `alignment` from `allocator`, which must
/// be host-accessible; failures name `what` the memory is for. The memory
/// of owned arenas, net buffers and cache tensors comes from here.
pub(crate) fn zeroed_host_block(
    allocator: &SharedAllocator,
    size: u64,
    alignment: u64,
    what: &dyn Fn() -> String,
) -> crate::Result<DeviceBlock> {
    require_host_accessible(allocator, &what())?;
    let len = usize::try_from(size).map_err(|_| Error::overflow(format!("{size} B for {} exceed size_t", what())))?;
    let block = DeviceBlock::new(allocator.clone(), size, alignment)
        .map_err(|e| Error::new(e.status(), format!("{} (for {})", e.message(), what())))?;
    // SAFETY: the allocator is host-accessible and handed out `len` bytes
    // at this pointer, which nothing else knows yet.
    unsafe { std::ptr::write_bytes(block.ptr().as_ptr(), 0, len) };
    Ok(block)
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
        out.write(into_handle(nnm_device_allocator::new(device::host())));
        Ok(())
    })
}

/// Creates a handle to CUDA device `device_id` (named "cuda:ID"). CUDA is
/// loaded at run time, once (never unloaded): the runtime first
/// (libcudart.so, libcudart.so.12, libcudart.so.11.0), and where none of
/// those loads, the driver API as a fallback (libcuda.so.1, libcuda.so).
/// The environment variable `NNMEM_CUDA_API`, read at that first load,
/// keeps to one: `runtime` or `driver` (unset, empty or `auto`: both, in
/// that order). Memory is device-only (not host-accessible: it cannot back
/// arenas or nets), aligned to 256 B (more by over-allocating). On the
/// default stream (NULL) it comes from `cudaMalloc`/`cudaFree` (driver:
/// `cuMemAlloc`/`cuMemFree`); on another stream from
/// `cudaMallocAsync`/`cudaFreeAsync` (driver: `cuMemAllocAsync`/
/// `cuMemFreeAsync`) when CUDA has them (11.2+), else from the synchronous
/// pair too. `mem_info` is `cudaMemGetInfo` (`cuMemGetInfo`). Each call
/// makes the device current on the calling thread for the call and puts the
/// thread's own current device back after (driver: it pushes the device's
/// primary context, retained while the allocator lives, and pops it), so
/// any thread may call, with or without a CUDA context of its own. Free the
/// handle with `nnm_device_allocator_free`.
///
/// Errors: NULL_ARGUMENT; NOT_FOUND when neither the runtime nor the driver
/// loads (the message names every library tried, with the loader's reason
/// for each, or the `NNMEM_CUDA_API` value that names neither), or CUDA
/// sees no GPU, or no device `device_id`.
///
/// # Safety
/// `out_allocator` must be NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_device_allocator_cuda(
    device_id: u32,
    out_allocator: *mut *mut nnm_device_allocator,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises `out_allocator` is NULL or writable.
        let out = unsafe { out_param(out_allocator, "out_allocator") }?;
        let cuda = device::cuda::CudaAllocator::new(device_id)?;
        out.write(into_handle(nnm_device_allocator::new(Arc::new(cuda))));
        Ok(())
    })
}

/// Frees a handle. Pools, arenas and nets made with it keep the allocator
/// until they are freed. Memory `nnm_device_allocator_alloc` handed out
/// through this handle and not yet deallocated goes back to the allocator
/// now. NULL is a no-op; a double free is detected and reported through
/// `nnm_last_error()`.
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

/// Creates a handle to a device allocator written in C: `vtable` is copied
/// (its name too), so it may be reused or freed after the call. The
/// vtable's `release` (if any) is called once nothing uses the allocator any
/// more: this handle and every pool, arena and net made with it are freed
/// and all their memory returned (never, then, when a pool was freed with
/// blocks still out: see `nnm_pool_free`). When this call fails, `release`
/// is not called: the context stays the caller's.
///
/// Errors: NULL_ARGUMENT (`vtable`, its `name`, `out_allocator`);
/// INVALID_ARGUMENT (`alloc` or `free` NULL, unknown flags, a name that is
/// not UTF-8).
///
/// # Safety
/// `vtable` must be NULL or point to an initialised vtable whose `name` is
/// NULL or a NUL-terminated string and whose functions behave as
/// `nnm_device_allocator_vtable` says, for as long as the allocator is used;
/// `out_allocator` must be NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_device_allocator_new(
    vtable: *const nnm_device_allocator_vtable,
    out_allocator: *mut *mut nnm_device_allocator,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises both pointers are NULL or valid.
        let (vtable, out) = unsafe { (&slice_in(vtable, 1, "vtable")?[0], out_param(out_allocator, "out_allocator")?) };
        // SAFETY: the caller's promises about the name and the functions.
        let allocator = unsafe { vtable::VtableAllocator::new(vtable) }?;
        out.write(into_handle(nnm_device_allocator::new(Arc::new(allocator))));
        Ok(())
    })
}

/// The allocator's name ("host", "cuda:0", a vtable's name): valid as long
/// as the handle; NULL (with the reason in `nnm_last_error()`) when
/// `allocator` is NULL or not a live handle.
///
/// # Safety
/// `allocator` must be NULL, a freed handle, or a live one.
#[no_mangle]
pub unsafe extern "C" fn nnm_device_allocator_name(allocator: *const nnm_device_allocator) -> *const c_char {
    guard_ptr(|| {
        // SAFETY: the caller's promise is `value_ref`'s.
        Ok(unsafe { value_ref(allocator, "allocator") }?.name.as_ptr().cast_mut())
    })
}

/// Writes the device's free and total bytes, as the device reports them.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a live handle); NOT_FOUND
/// when the device cannot tell (a vtable without `mem_info`, or whose
/// `mem_info` failed): nothing is written then.
///
/// # Safety
/// `allocator` must be NULL, a freed handle, or a live one; `out_free` and
/// `out_total` NULL or valid for writing one value each.
#[no_mangle]
pub unsafe extern "C" fn nnm_device_allocator_mem_info(
    allocator: *const nnm_device_allocator,
    out_free: *mut u64,
    out_total: *mut u64,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises the pointers are NULL or valid.
        let (a, free, total) = unsafe {
            (value_ref(allocator, "allocator")?, out_param(out_free, "out_free")?, out_param(out_total, "out_total")?)
        };
        let info = a.inner.mem_info().ok_or_else(|| {
            Error::new(
                Status::NotFound,
                format!("device allocator \"{}\" cannot tell its free and total memory", a.inner.name()),
            )
        })?;
        free.write(info.free);
        total.write(info.total);
        Ok(())
    })
}

/// Allocates `size` bytes (> 0) aligned to `alignment` (a power of two)
/// straight from the device, for use on `stream` (NULL: the default
/// stream), without a pool; give it back with
/// `nnm_device_allocator_dealloc` on the same handle (or free the handle).
/// Thread-safe.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (size 0, alignment not a power
/// of two, not a live handle; an allocator that returned memory
/// overlapping a block this handle has out, such as the same address or
/// one inside it: the message names both blocks, and the memory is
/// neither handed out nor given back, as that would free the block in
/// use, even when it is also misaligned; memory not aligned as asked is
/// otherwise given back and refused); OUT_OF_MEMORY naming the allocator and the size when the device
/// has no room.
///
/// # Safety
/// `allocator` must be NULL, a freed handle, or a live one not being freed
/// meanwhile; `out_ptr` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_device_allocator_alloc(
    allocator: *const nnm_device_allocator,
    size: usize,
    alignment: usize,
    stream: *mut c_void,
    out_ptr: *mut *mut c_void,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises the pointers are NULL or valid.
        let (a, out) = unsafe { (value_ref(allocator, "allocator")?, out_param(out_ptr, "out_ptr")?) };
        // The device call runs outside the lock, so that threads sharing
        // the handle allocate in parallel; a block that cannot be recorded
        // goes straight back.
        let block = DeviceBlock::on_stream_as_is(a.inner.clone(), size as u64, alignment as u64, stream_of(stream))?;
        let ptr = block.ptr().as_ptr();
        let mut direct = a.direct();
        // Overlap first: a block over one this handle has out is neither
        // handed out nor given back, even when it is misaligned too.
        if let Some(held) = device::overlapping(&direct, block.ptr().addr(), block.size(), DeviceBlock::size) {
            let returned = (block.ptr().addr(), block.size());
            let e = device::handed_out_twice(a.inner.name(), returned, held, "this handle");
            drop(direct);
            block.abandon();
            return Err(e);
        }
        let block = match block.aligned(alignment as u64) {
            Ok(block) => block,
            Err(e) => {
                drop(direct);
                return Err(e);
            }
        };
        direct.insert(block.ptr().addr(), block);
        out.write(ptr.cast());
        Ok(())
    })
}

/// Gives back memory `nnm_device_allocator_alloc` handed out through this
/// handle (with the size and stream it was allocated with). NULL is a
/// no-op. Thread-safe.
///
/// Errors: NULL_ARGUMENT (`allocator`); INVALID_ARGUMENT (not a live
/// handle; `ptr` not handed out by this handle, or already given back:
/// nothing is freed then).
///
/// # Safety
/// `allocator` must be NULL, a freed handle, or a live one not being freed
/// meanwhile. `ptr` is only looked up, never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn nnm_device_allocator_dealloc(
    allocator: *const nnm_device_allocator,
    ptr: *mut c_void,
) -> Status {
    guard(|| {
        // SAFETY: the caller's promise is `value_ref`'s.
        let a = unsafe { value_ref(allocator, "allocator") }?;
        if ptr.is_null() {
            return Ok(());
        }
        let block = a.direct().remove(&(ptr as usize));
        match block {
            // Dropped outside the lock: the device call may be slow.
            Some(block) => drop(block),
            None => {
                return Err(Error::invalid(format!(
                    "{ptr:p} is not memory that nnm_device_allocator_alloc handed out through this \"{}\" \
                     handle (already given back, or from elsewhere); nothing freed",
                    a.inner.name()
                )))
            }
        }
        Ok(())
    })
}
