//! The CUDA allocator: device memory from the CUDA runtime, which is loaded
//! at run time (`dlopen`), so nnmem needs no CUDA to build, and a machine
//! without it only gets NOT_FOUND when it asks for `cuda`.
//!
//! With a stream other than the default one, memory comes from the
//! runtime's stream-ordered allocator (`cudaMallocAsync`/`cudaFreeAsync`,
//! CUDA 11.2 and later); an older runtime falls back to the synchronous
//! `cudaMalloc`/`cudaFree` for every stream. `cudaMalloc` aligns to 256 B;
//! larger alignments are served by over-allocating.
//!
//! This module and `host.rs` are the audited unsafe places of the safe core:
//! they call C functions and handle device addresses they never dereference.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::{Mutex, OnceLock};

use super::{DeviceAllocator, DevicePtr, MemInfo, Stream};
use crate::status::{Error, Result, Status};

/// The names the runtime is looked for under, in order.
const LIBRARIES: [&CStr; 3] = [c"libcudart.so", c"libcudart.so.12", c"libcudart.so.11.0"];

/// The alignment `cudaMalloc` guarantees.
const CUDA_ALIGNMENT: u64 = 256;

/// `cudaSuccess`.
const SUCCESS: c_int = 0;
/// `cudaErrorMemoryAllocation`: the device is out of memory.
const MEMORY_ALLOCATION: c_int = 2;

type GetDeviceCount = unsafe extern "C" fn(*mut c_int) -> c_int;
type SetDevice = unsafe extern "C" fn(c_int) -> c_int;
type Malloc = unsafe extern "C" fn(*mut *mut c_void, usize) -> c_int;
type Free = unsafe extern "C" fn(*mut c_void) -> c_int;
type MallocAsync = unsafe extern "C" fn(*mut *mut c_void, usize, *mut c_void) -> c_int;
type FreeAsync = unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int;
type MemGetInfo = unsafe extern "C" fn(*mut usize, *mut usize) -> c_int;
type GetErrorString = unsafe extern "C" fn(c_int) -> *const c_char;

/// The runtime's entry points nnmem uses.
struct Runtime {
    library: &'static str,
    get_device_count: GetDeviceCount,
    set_device: SetDevice,
    malloc: Malloc,
    free: Free,
    malloc_async: Option<(MallocAsync, FreeAsync)>,
    mem_get_info: MemGetInfo,
    get_error_string: GetErrorString,
}

/// The runtime, loaded once per process and never unloaded (device memory
/// may outlive every allocator), or why it could not be.
static RUNTIME: OnceLock<std::result::Result<Runtime, String>> = OnceLock::new();

/// The text `dlerror` holds for the last failed `dl*` call, if any.
fn dl_error() -> String {
    // SAFETY: dlerror takes no arguments and returns NULL or a
    // NUL-terminated string valid until the next dl* call on this thread,
    // copied at once.
    let text = unsafe { libc::dlerror() };
    if text.is_null() {
        return "unknown error".to_owned();
    }
    // SAFETY: non-NULL: a NUL-terminated string, as above.
    unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
}

/// The address of `name` in the library `handle`, or an error naming both.
fn symbol(handle: *mut c_void, library: &str, name: &CStr) -> std::result::Result<*mut c_void, String> {
    // SAFETY: `handle` is a live dlopen handle (never closed); `name` is
    // NUL-terminated.
    let p = unsafe { libc::dlsym(handle, name.as_ptr()) };
    if p.is_null() {
        return Err(format!("{library} has no {} ({})", name.to_string_lossy(), dl_error()));
    }
    Ok(p)
}

/// Casts a symbol's address to the function type `$t` it has in the CUDA
/// runtime API.
macro_rules! entry {
    ($handle:expr, $library:expr, $name:literal, $t:ty) => {{
        let p = symbol($handle, $library, $name)?;
        // SAFETY: the CUDA runtime exports `$name` with exactly the C
        // signature `$t` (cuda_runtime_api.h); a function address and a
        // data pointer have the same size on every platform dlopen exists on.
        unsafe { std::mem::transmute::<*mut c_void, $t>(p) }
    }};
}

fn load() -> std::result::Result<Runtime, String> {
    let mut errors = Vec::new();
    for name in LIBRARIES {
        // SAFETY: `name` is NUL-terminated; loading the CUDA runtime runs
        // only its own initialisers.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            errors.push(dl_error());
            continue;
        }
        let library = name.to_str().expect("the names are ASCII");
        let optional = |n: &CStr| symbol(handle, library, n).ok();
        let malloc_async = match (optional(c"cudaMallocAsync"), optional(c"cudaFreeAsync")) {
            // SAFETY: as in `entry!`, for these two entry points.
            (Some(m), Some(f)) => Some(unsafe {
                (std::mem::transmute::<*mut c_void, MallocAsync>(m), std::mem::transmute::<*mut c_void, FreeAsync>(f))
            }),
            _ => None,
        };
        return Ok(Runtime {
            library,
            get_device_count: entry!(handle, library, c"cudaGetDeviceCount", GetDeviceCount),
            set_device: entry!(handle, library, c"cudaSetDevice", SetDevice),
            malloc: entry!(handle, library, c"cudaMalloc", Malloc),
            free: entry!(handle, library, c"cudaFree", Free),
            malloc_async,
            mem_get_info: entry!(handle, library, c"cudaMemGetInfo", MemGetInfo),
            get_error_string: entry!(handle, library, c"cudaGetErrorString", GetErrorString),
        });
    }
    let tried: Vec<_> = LIBRARIES.iter().map(|l| l.to_string_lossy()).collect();
    Err(format!("libcudart.so not found (tried {}: {})", tried.join(", "), errors.join("; ")))
}

/// The CUDA runtime, loaded on first use. Fails with NOT_FOUND naming the
/// libraries tried when none loads (or one lacks an entry point nnmem
/// needs). Gives the name of the library loaded.
pub fn load_runtime() -> Result<&'static str> {
    match RUNTIME.get_or_init(load) {
        Ok(r) => Ok(r.library),
        Err(e) => Err(Error::new(Status::NotFound, e.clone())),
    }
}

impl Runtime {
    /// The runtime's text for `code`.
    fn error_text(&self, code: c_int) -> String {
        // SAFETY: cudaGetErrorString takes any code and returns a static
        // NUL-terminated string (or NULL on very old runtimes).
        let text = unsafe { (self.get_error_string)(code) };
        if text.is_null() {
            return format!("CUDA error {code}");
        }
        // SAFETY: non-NULL: a static NUL-terminated string.
        format!("{} (CUDA error {code})", unsafe { CStr::from_ptr(text) }.to_string_lossy())
    }

    /// Makes `device` current on the calling thread (CUDA's current device
    /// is per thread, and pools call from any thread).
    fn set_device(&self, device: c_int) -> std::result::Result<(), c_int> {
        // SAFETY: cudaSetDevice takes any int and reports bad ones.
        match unsafe { (self.set_device)(device) } {
            SUCCESS => Ok(()),
            code => Err(code),
        }
    }
}

/// Device memory of one CUDA device. Thread-safe: every call first makes
/// its device current on the calling thread.
pub struct CudaAllocator {
    runtime: &'static Runtime,
    device: c_int,
    name: String,
    /// Over-aligned blocks (alignment above 256 B): the address handed out
    /// -> bytes before it in the block `cudaMalloc` returned.
    shifted: Mutex<HashMap<usize, u64>>,
}

impl CudaAllocator {
    /// The allocator of CUDA device `device_id`, named "cuda:ID". Fails with
    /// NOT_FOUND when the runtime cannot be loaded (naming the libraries
    /// tried), cannot count the devices (no driver, no GPU), or has no such
    /// device.
    pub fn new(device_id: u32) -> Result<CudaAllocator> {
        let name = format!("cuda:{device_id}");
        let runtime = RUNTIME.get_or_init(load).as_ref().map_err(|e| {
            Error::new(Status::NotFound, format!("{e}: install the CUDA runtime or register an allocator for {name}"))
        })?;
        let mut count: c_int = 0;
        // SAFETY: `count` is a valid place for the result.
        let code = unsafe { (runtime.get_device_count)(&mut count) };
        if code != SUCCESS {
            return Err(Error::new(
                Status::NotFound,
                format!("{name}: cudaGetDeviceCount failed: {}", runtime.error_text(code)),
            ));
        }
        let device = c_int::try_from(device_id).ok().filter(|&d| d < count).ok_or_else(|| {
            Error::new(Status::NotFound, format!("{name}: no such device ({} has {count})", runtime.library))
        })?;
        Ok(CudaAllocator { runtime, device, name, shifted: Mutex::default() })
    }

    /// Whether streams other than the default get stream-ordered memory
    /// (`cudaMallocAsync`: CUDA 11.2 and later).
    pub fn stream_ordered(&self) -> bool {
        self.runtime.malloc_async.is_some()
    }

    fn shifted(&self) -> std::sync::MutexGuard<'_, HashMap<usize, u64>> {
        // Inserts and removes are single calls: a poisoned map is consistent.
        self.shifted.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn failed(&self, what: &str, size: u64, code: c_int) -> Error {
        let status = if code == MEMORY_ALLOCATION { Status::OutOfMemory } else { Status::InvalidArgument };
        Error::new(status, format!("{}: {what} of {size} B failed: {}", self.name, self.runtime.error_text(code)))
    }

    /// Raw device memory of `size` bytes (256-aligned) for `stream`.
    fn raw_alloc(&self, size: u64, stream: Stream) -> Result<DevicePtr> {
        let bytes = usize::try_from(size).map_err(|_| self.failed("cudaMalloc", size, MEMORY_ALLOCATION))?;
        self.runtime
            .set_device(self.device)
            .map_err(|code| self.failed("cudaSetDevice before cudaMalloc", size, code))?;
        let mut out: *mut c_void = std::ptr::null_mut();
        let code = match (self.runtime.malloc_async, stream) {
            // SAFETY: `out` is a valid place for the result; the stream is
            // the caller's handle of this device (the trait's contract).
            (Some((malloc_async, _)), s) if s != Stream::DEFAULT => unsafe {
                malloc_async(&mut out, bytes, s.as_handle())
            },
            // SAFETY: `out` is a valid place for the result.
            _ => unsafe { (self.runtime.malloc)(&mut out, bytes) },
        };
        if code != SUCCESS {
            return Err(self.failed("cudaMalloc", size, code));
        }
        DevicePtr::new(out.cast()).ok_or_else(|| self.failed("cudaMalloc", size, MEMORY_ALLOCATION))
    }

    fn raw_free(&self, ptr: DevicePtr, stream: Stream) {
        // A failure here (a context already torn down at process exit)
        // cannot be reported through `free`, and the memory is the
        // runtime's to reclaim then.
        if self.runtime.set_device(self.device).is_err() {
            return;
        }
        match (self.runtime.malloc_async, stream) {
            // SAFETY: `ptr` came from cudaMallocAsync on this stream
            // (`raw_alloc` made the same choice for the same stream).
            (Some((_, free_async)), s) if s != Stream::DEFAULT => unsafe {
                free_async(ptr.as_ptr().cast(), s.as_handle());
            },
            // SAFETY: `ptr` came from cudaMalloc and is freed once.
            _ => unsafe {
                (self.runtime.free)(ptr.as_ptr().cast());
            },
        }
    }
}

impl DeviceAllocator for CudaAllocator {
    fn name(&self) -> &str {
        &self.name
    }

    fn alloc(&self, size: u64, alignment: u64, stream: Stream) -> Result<DevicePtr> {
        if size == 0 || !alignment.is_power_of_two() {
            return Err(Error::invalid(format!(
                "{}: size {size} B with alignment {alignment} B (size > 0 and a power-of-two alignment needed)",
                self.name
            )));
        }
        if alignment <= CUDA_ALIGNMENT {
            return self.raw_alloc(size, stream);
        }
        let padded = size.checked_add(alignment - CUDA_ALIGNMENT).ok_or_else(|| {
            Error::new(
                Status::OutOfMemory,
                format!("{}: cannot allocate {size} B (alignment {alignment} B)", self.name),
            )
        })?;
        let mut shifted = self.shifted();
        shifted.try_reserve(1).map_err(|_| Error::new(Status::OutOfMemory, "no memory to record an aligned block"))?;
        let raw = self.raw_alloc(padded, stream)?;
        let shift = (alignment - raw.addr() as u64 % alignment) % alignment;
        let ptr = raw.byte_add(shift);
        shifted.insert(ptr.addr(), shift);
        Ok(ptr)
    }

    fn free(&self, ptr: DevicePtr, _size: u64, stream: Stream) {
        let shift = self.shifted().remove(&ptr.addr());
        let raw = match shift {
            Some(shift) => DevicePtr::new(ptr.as_ptr().wrapping_sub(shift as usize)).expect("inside a device block"),
            None => ptr,
        };
        self.raw_free(raw, stream);
    }

    fn mem_info(&self) -> Option<MemInfo> {
        self.runtime.set_device(self.device).ok()?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: both pointers are valid places for the results.
        let code = unsafe { (self.runtime.mem_get_info)(&mut free, &mut total) };
        (code == SUCCESS).then_some(MemInfo { free: free as u64, total: total as u64 })
    }

    fn host_accessible(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// True on any machine: without a loadable runtime, NOT_FOUND naming
    /// every library tried; with one, either NOT_FOUND for a missing
    /// device or a working round trip.
    #[test]
    fn cuda_is_found_or_reported_as_not_found() {
        match load_runtime() {
            Err(e) => {
                assert_eq!(e.status(), Status::NotFound);
                let e = CudaAllocator::new(0).err().expect("no runtime, no allocator");
                assert_eq!(e.status(), Status::NotFound);
                let m = e.message();
                assert!(m.starts_with("libcudart.so not found (tried libcudart.so, libcudart.so.12, libcudart.so.11.0"));
                assert!(m.ends_with(": install the CUDA runtime or register an allocator for cuda:0"), "{m}");
            }
            Ok(library) => {
                assert!(LIBRARIES.iter().any(|l| l.to_str() == Ok(library)));
                match CudaAllocator::new(0) {
                    Err(e) => {
                        assert_eq!(e.status(), Status::NotFound, "{}", e.message());
                        assert!(e.message().starts_with("cuda:0: "), "{}", e.message());
                    }
                    Ok(cuda) => round_trip(&cuda),
                }
            }
        }
        let e = CudaAllocator::new(u32::MAX).err().expect("no machine has 2^32 GPUs");
        assert_eq!(e.status(), Status::NotFound);
    }

    fn round_trip(cuda: &CudaAllocator) {
        assert_eq!(cuda.name(), "cuda:0");
        assert!(!cuda.host_accessible());
        let info = cuda.mem_info().expect("a CUDA device tells its memory");
        assert!(info.free <= info.total && info.total > 0);
        for (size, alignment) in [(11u64, 128u64), (2019, 1024), (1_024_124, 4096), (1 << 20, 1 << 16)] {
            let p = cuda.alloc(size, alignment, Stream::DEFAULT).unwrap();
            assert_eq!(p.addr() as u64 % alignment, 0, "{size} B at {alignment}");
            cuda.free(p, size, Stream::DEFAULT);
        }
        assert!(cuda.shifted().is_empty(), "every over-aligned block was given back");
        let e = cuda.alloc(u64::MAX / 2, 256, Stream::DEFAULT).unwrap_err();
        assert_eq!(e.status(), Status::OutOfMemory, "{}", e.message());
        assert_eq!(cuda.alloc(0, 256, Stream::DEFAULT).unwrap_err().status(), Status::InvalidArgument);
    }
}
