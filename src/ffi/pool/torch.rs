//! PyTorch's pluggable CUDA allocator: the `alloc`/`free` pair that
//! `torch.cuda.memory.CUDAPluggableAllocator(path, alloc_name, free_name)`
//! loads from a shared library, served by the registry's pool of that CUDA
//! device, with the strategy named by `NNMEM_TORCH_STRATEGY` (read once).
//!
//! PyTorch calls the pair from any thread (tensors die where their last
//! reference goes), with the size as `ssize_t`, the device index and the
//! current `cudaStream_t`; the free gets the size, device and stream the
//! block was allocated with. The pair has no status: an allocation that
//! fails returns NULL with the reason in `nnm_last_error()` on the calling
//! thread, a free that fails changes nothing and leaves its reason there.

use std::env::VarError;
use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use super::NNM_POOL_DEFAULT_ALIGNMENT;
use crate::ffi::args::{device_ptr, stream_of};
use crate::ffi::error::{guard, guard_ptr, guard_void};
use crate::pool::registry::{registry, DeviceKey, DeviceType};
use crate::pool::strategy_factory;
use crate::status::{Error, Result, Status};

/// The environment variable that names the strategy.
const STRATEGY_VARIABLE: &str = "NNMEM_TORCH_STRATEGY";
/// The strategy when the variable is unset or empty: PyTorch's own default
/// allocator is a caching one.
const DEFAULT_STRATEGY: &str = "caching";

/// The strategy a value of `NNMEM_TORCH_STRATEGY` names, or why it names
/// none.
fn named(value: std::result::Result<String, VarError>) -> std::result::Result<String, String> {
    let name = match value {
        Err(VarError::NotPresent) => return Ok(DEFAULT_STRATEGY.to_owned()),
        Ok(name) if name.is_empty() => return Ok(DEFAULT_STRATEGY.to_owned()),
        Ok(name) => name,
        Err(VarError::NotUnicode(raw)) => {
            return Err(format!("{STRATEGY_VARIABLE}={raw:?} is not UTF-8, so it names no pool strategy"))
        }
    };
    match strategy_factory(&name) {
        Ok(_) => Ok(name),
        Err(e) => Err(format!("{STRATEGY_VARIABLE}={name:?}: {}", e.message())),
    }
}

/// The strategy named by the environment, read on the first call of the
/// process, or why it names none (every later call gets the same answer).
fn strategy() -> Result<&'static str> {
    static CHOSEN: OnceLock<std::result::Result<String, String>> = OnceLock::new();
    let chosen = CHOSEN.get_or_init(|| named(std::env::var(STRATEGY_VARIABLE)));
    chosen.as_deref().map_err(|e| refused(e))
}

fn refused(why: &str) -> Error {
    Error::new(
        Status::NotFound,
        format!(
            "{why}; nnmem refuses every allocation of the PyTorch pair until it is set right (read once per process)"
        ),
    )
}

/// The registry key of PyTorch's device index.
fn cuda_device(device: c_int) -> Result<DeviceKey> {
    let id = u32::try_from(device)
        .map_err(|_| Error::invalid(format!("CUDA device {device}: a device index is 0 or more")))?;
    Ok(DeviceKey::new(DeviceType::Cuda, id))
}

/// PyTorch's `alloc`: `size` bytes on CUDA device `device` for use on
/// `stream` (a `cudaStream_t`; NULL is the default stream), aligned to
/// 256 B (what `cudaMalloc` gives), from the registry's pool of that device
/// (as `nnm_device_alloc` with type CUDA). The device's first call makes
/// its pool with the strategy `NNMEM_TORCH_STRATEGY` names (`caching` when
/// unset or empty; `page-unit`, `no-pool`, `replay`, or a registered
/// strategy's name); a pool installed before (`nnm_device_init_pool`, with
/// options) is used as it is, whatever the variable holds (a name it
/// cannot read refuses only the pools the pair would make). Memory comes from the CUDA runtime, or the
/// driver where the runtime is absent (`nnm_device_allocator_cuda`).
///
/// `size` is `ptrdiff_t`, which is the same type as `ssize_t` on Linux
/// (`long` on 64-bit targets, `int` on 32-bit ones), and `stream` is
/// `void *` (a `cudaStream_t` is a pointer), so the function has exactly the
/// type PyTorch calls, `void *(ssize_t, int, cudaStream_t)`, while this
/// header needs only `<stddef.h>` and `<stdint.h>`: `<sys/types.h>` is POSIX,
/// not ISO C, and the header stays one that every C (C99 on) and C++ (C++11
/// on) compiler takes without a warning.
///
/// Returns the block, or NULL: for size 0 (nothing allocated, no error, as
/// PyTorch's own allocator does), and on failure, with the reason in
/// `nnm_last_error()` on the calling thread: a negative size or device
/// (INVALID_ARGUMENT's text), an unknown strategy name, no CUDA (every
/// library tried named), no such device (NOT_FOUND's text), the device or
/// the pool's limit out of memory (OUT_OF_MEMORY's text). PyTorch does not
/// check the pointer itself; `nnm_torch_init` reports the configuration
/// errors before the switch.
///
/// Thread-safe: any number of threads may allocate and free at once, on
/// any devices; a switch of the device's pool on another thread is safe as
/// with `nnm_device_alloc`. Never unwinds into the caller.
///
/// # Safety
/// `stream` must be NULL or a stream of device `device` that lives until
/// the block is freed (it is passed to CUDA, never dereferenced here).
#[no_mangle]
pub unsafe extern "C" fn nnm_torch_alloc(size: isize, device: c_int, stream: *mut c_void) -> *mut c_void {
    guard_ptr(|| {
        let bytes = u64::try_from(size)
            .map_err(|_| Error::invalid(format!("PyTorch asked for {size} B: a size is 0 or more")))?;
        let key = cuda_device(device)?;
        if bytes == 0 {
            return Ok(std::ptr::null_mut());
        }
        let alignment = NNM_POOL_DEFAULT_ALIGNMENT as u64;
        Ok(registry().alloc_or_make(key, &strategy, bytes, alignment, stream_of(stream))?.as_ptr().cast())
    })
}

/// PyTorch's `free`: gives back a block `nnm_torch_alloc` handed out for
/// `device` to the pool that handed it out (the device's current pool, or
/// a retired one). `size` and `stream` are what PyTorch passes back; nnmem
/// knows each block's own. NULL (what a 0-byte allocation returned) is a
/// no-op.
///
/// Never crashes on a pointer nnmem did not hand out for that device, or
/// one already freed: nothing changes, and `nnm_last_error()` says why
/// (INVALID_ARGUMENT's text), as it does for a negative device.
///
/// Thread-safe, as `nnm_torch_alloc`; any thread may free a block another
/// allocated. Never unwinds into the caller.
///
/// # Safety
/// `ptr` is only looked up, never dereferenced; any value is safe.
#[no_mangle]
pub unsafe extern "C" fn nnm_torch_free(ptr: *mut c_void, size: isize, device: c_int, stream: *mut c_void) {
    let _ = (size, stream);
    guard_void(|| {
        if ptr.is_null() {
            return Ok(());
        }
        registry().free(cuda_device(device)?, device_ptr(ptr, "ptr")?)
    })
}

/// Checks what the PyTorch pair needs on CUDA device `device` before
/// PyTorch is switched to it: reads `NNMEM_TORCH_STRATEGY` (once per
/// process, as the pair does), loads CUDA and makes the device's pool with
/// that strategy when it has none (an existing pool is kept). Calling it is
/// optional (the first `nnm_torch_alloc` does the same), but only here do
/// the errors come back as a status, which Python can raise on.
///
/// Errors: INVALID_ARGUMENT (a negative device), NOT_FOUND (an unknown
/// strategy name, or not UTF-8; no CUDA runtime or driver: the message
/// names every library tried; no such device).
///
/// Thread-safe.
#[no_mangle]
pub extern "C" fn nnm_torch_init(device: c_int) -> Status {
    guard(|| {
        let key = cuda_device(device)?;
        registry().get_or_make(key, &strategy).map(drop)
    })
}

/// Marks the end of an iteration on CUDA device `device`'s pool (as
/// `nnm_pool_end_iteration`): with `NNMEM_TORCH_STRATEGY=replay`, call it
/// once per training step (from Python with ctypes, after the step's last
/// tensor of the iteration is freed) so that the first iteration is
/// recorded and planned and the next ones served from the plan; other
/// strategies ignore it. Makes the device's pool when it has none, as
/// `nnm_torch_init`.
///
/// Errors: those of `nnm_torch_init`, and those of
/// `nnm_pool_end_iteration`: OUT_OF_MEMORY (the plan's block does not fit
/// the device or the pool's limit) and INVALID_ARGUMENT (the device
/// returned memory the pool holds), after which the pool goes on serving
/// without a plan; a C strategy's own status.
///
/// Thread-safe.
#[no_mangle]
pub extern "C" fn nnm_torch_end_iteration(device: c_int) -> Status {
    guard(|| {
        let key = cuda_device(device)?;
        registry().get_or_make(key, &strategy)?.end_iteration()
    })
}

#[cfg(test)]
mod tests;
