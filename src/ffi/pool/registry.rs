//! C API of the per-device pool registry (`nnm_device_*`): RAF's
//! `Memory::InitPool` / `GetPool` / `RemovePool` / `ResetPool` and
//! `Memory::Alloc`, by (device type, device id). Process-wide and
//! thread-safe: every call may come from any thread at any time.

use std::ffi::{c_char, c_void};

use super::options::core_options;
use super::{nnm_pool, nnm_pool_options, request};
use crate::ffi::args::{device_ptr, stream_of};
use crate::ffi::args::{out_param, read_str};
use crate::ffi::device::{nnm_device_allocator, shared_allocator};
use crate::ffi::error::guard;
use crate::pool::registry::{registry, DeviceKey, DeviceType};
use crate::status::{Result, Status};

/// The registry key of a C (type, id) pair.
fn key(device_type: u32, device_id: u32) -> Result<DeviceKey> {
    Ok(DeviceKey { kind: DeviceType::from_value(device_type)?, id: device_id })
}

/// Makes `allocator` the allocator of device (`device_type`, `device_id`)
/// for the pools made for it from now on (the current pool keeps its own).
/// HOST and CUDA have built-in allocators (CUDA: loaded at run time); a
/// CUSTOM device has none until one is registered.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (unknown device type, a freed
/// allocator).
///
/// # Safety
/// `allocator` must be NULL or an allocator handle (live or freed: checked).
#[no_mangle]
pub unsafe extern "C" fn nnm_device_register_allocator(
    device_type: u32,
    device_id: u32,
    allocator: *const nnm_device_allocator,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises `allocator` is NULL or a handle.
        let allocator = unsafe { shared_allocator(allocator, "allocator") }?;
        registry().register_allocator(key(device_type, device_id)?, allocator)
    })
}

/// Installs a new pool for the device with the strategy named `strategy`
/// (built-in, RAF's `page_unit_pool` and `no_pool` included, or registered)
/// and `options` (NULL: defaults): RAF's
/// `InitPool(device, name)`. The previous pool retires: it serves no new
/// allocations (`nnm_pool_alloc` on a handle to it returns WRONG_STATE; an
/// `nnm_device_alloc` running meanwhile is served by the old pool or the
/// new one), gives its idle memory back to the device, and still takes
/// back the blocks it handed out (`nnm_device_dealloc` finds them, and
/// `nnm_pool_dealloc` on a handle to it takes them too), each straight back
/// to the device; it goes when the last one comes back through
/// `nnm_device_dealloc` (when it came back through a handle, at the
/// device's next switch or `nnm_device_dealloc`;
/// it holds no device memory meanwhile). Unlike RAF's switch, nothing
/// leaks.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (device type, options), NOT_FOUND
/// (unknown strategy, or a device with no allocator: CUDA absent, CUSTOM
/// not registered). Nothing changes on error.
///
/// # Safety
/// `strategy` must be NULL or a NUL-terminated string; `options` NULL or
/// valid for reading one `nnm_pool_options`.
#[no_mangle]
pub unsafe extern "C" fn nnm_device_init_pool(
    device_type: u32,
    device_id: u32,
    strategy: *const c_char,
    options: *const nnm_pool_options,
) -> Status {
    guard(|| {
        // SAFETY: the caller's promises are those of the helpers.
        let (strategy, options) = unsafe { (read_str(strategy, "strategy")?, core_options(options)?) };
        registry().init_pool(key(device_type, device_id)?, strategy, &options).map(drop)
    })
}

/// Writes a new handle to the device's current pool (made with the default
/// strategy, `page-unit`, and default options when it has none): RAF's
/// `GetPool`. Free the handle with `nnm_pool_free`; the pool stays in the
/// registry.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (device type), NOT_FOUND (no
/// allocator for the device).
///
/// # Safety
/// `out_pool` must be NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_device_get_pool(device_type: u32, device_id: u32, out_pool: *mut *mut nnm_pool) -> Status {
    guard(|| {
        // SAFETY: the caller promises `out_pool` is NULL or writable.
        let out = unsafe { out_param(out_pool, "out_pool") }?;
        out.write(nnm_pool::new_handle(registry().get(key(device_type, device_id)?)?));
        Ok(())
    })
}

/// Removes the device's pool (RAF's `RemovePool`): it retires as with
/// `nnm_device_init_pool`; the next `nnm_device_get_pool` or
/// `nnm_device_alloc` makes a default one. Handles to it stay usable, to
/// give back its blocks and read its statistics (`nnm_pool_alloc` through
/// them returns WRONG_STATE).
///
/// Errors: INVALID_ARGUMENT (device type), NOT_FOUND (no pool).
#[no_mangle]
pub extern "C" fn nnm_device_remove_pool(device_type: u32, device_id: u32) -> Status {
    guard(|| registry().remove(key(device_type, device_id)?))
}

/// Replaces the device's pool by a fresh one with the same strategy and
/// options (RAF's `ResetPool`); the old one retires as with
/// `nnm_device_init_pool`.
///
/// Errors: INVALID_ARGUMENT (device type), NOT_FOUND (no pool).
#[no_mangle]
pub extern "C" fn nnm_device_reset_pool(device_type: u32, device_id: u32) -> Status {
    guard(|| registry().reset(key(device_type, device_id)?))
}

/// Allocates from the device's current pool (made as by
/// `nnm_device_get_pool` when it has none): RAF's `Memory::Alloc(device,
/// nbytes, alignment)`. A switch (`nnm_device_init_pool`, `_reset_pool`,
/// `_remove_pool`) on another thread during the call never fails it: the
/// block comes from the old pool or the new one, and `nnm_device_dealloc`
/// takes it back either way.
///
/// Arguments (size 0 included: a block of its own) and errors as
/// `nnm_pool_alloc`, and INVALID_ARGUMENT (device type), NOT_FOUND (no
/// allocator for the device). A switch never causes WRONG_STATE here (only
/// a registered C strategy returning it itself passes it on).
///
/// # Safety
/// `out_ptr` must be NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_device_alloc(
    device_type: u32,
    device_id: u32,
    size: usize,
    alignment: usize,
    stream: *mut c_void,
    out_ptr: *mut *mut c_void,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises `out_ptr` is NULL or writable.
        let out = unsafe { out_param(out_ptr, "out_ptr") }?;
        let (size, alignment) = request(size, alignment);
        out.write(registry().alloc(key(device_type, device_id)?, size, alignment, stream_of(stream))?.as_ptr().cast());
        Ok(())
    })
}

/// Gives back a block `nnm_device_alloc` handed out, to the pool that
/// handed it out: the current one, or a retired one (which goes once its
/// last block is back).
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (device type; a pointer no pool
/// of the device handed out, or one already given back: nothing changes).
#[no_mangle]
pub extern "C" fn nnm_device_dealloc(device_type: u32, device_id: u32, ptr: *mut c_void) -> Status {
    guard(|| registry().free(key(device_type, device_id)?, device_ptr(ptr, "ptr")?))
}
