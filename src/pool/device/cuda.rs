//! The CUDA allocator: device memory from the CUDA runtime (libcudart) or,
//! where only the driver is installed, the CUDA driver API (libcuda), each
//! loaded at run time (`dlopen`), so nnmem needs no CUDA to build, and a
//! machine without either only gets NOT_FOUND when it asks for `cuda`.
//!
//! The runtime is tried first (`runtime.rs`), then the driver (`driver.rs`)
//! (`NNMEM_CUDA_API=runtime` or `driver` keeps to one: how the GPU check
//! runs the driver path on a machine that has both); both give the same allocator: on a stream other than the default one,
//! memory comes from the stream-ordered allocator (`cudaMallocAsync` /
//! `cuMemAllocAsync`, CUDA 11.2 and later; older ones use the synchronous
//! call on every stream). Both align to 256 B; larger alignments are served
//! by over-allocating. Neither changes the calling thread's CUDA state: the
//! device (or context) is made current for each call and the thread's own
//! put back after.
//!
//! This module and `host.rs` are the audited unsafe places of the safe core:
//! they call C functions and handle device addresses they never dereference.

mod dl;
mod driver;
#[cfg(test)]
mod fake_driver;
mod runtime;

use std::collections::HashMap;
use std::ffi::{c_int, c_void, CStr};
use std::sync::{Mutex, OnceLock};

use self::driver::Driver;
use self::runtime::Runtime;
use super::{DeviceAllocator, DevicePtr, MemInfo, Stream};
use crate::status::{Error, Result, Status};

/// The alignment `cudaMalloc` and `cuMemAlloc` guarantee.
const CUDA_ALIGNMENT: u64 = 256;

/// `cudaSuccess`, `CUDA_SUCCESS`.
const SUCCESS: c_int = 0;
/// `cudaErrorMemoryAllocation`, `CUDA_ERROR_OUT_OF_MEMORY`: the device is
/// out of memory (the same number in both APIs).
const MEMORY_ALLOCATION: c_int = 2;

/// A failed CUDA call: its name and result code.
struct Failure {
    call: &'static str,
    code: c_int,
}

/// One CUDA device as the runtime or the driver drives it: raw memory, no
/// alignment beyond 256 B, no bookkeeping.
trait Backend: Send + Sync {
    /// The library file name ("libcudart.so", "libcuda.so.1").
    fn library(&self) -> &'static str;
    /// The name of the call `alloc` makes for `stream`, for messages.
    fn alloc_call(&self, stream: Stream) -> &'static str;
    /// Whether streams other than the default get stream-ordered memory.
    fn stream_ordered(&self) -> bool;
    fn alloc(&self, bytes: usize, stream: Stream) -> std::result::Result<*mut c_void, Failure>;
    fn free(&self, ptr: *mut c_void, stream: Stream);
    /// (free, total) bytes.
    fn mem_info(&self) -> Option<(usize, usize)>;
    fn error_text(&self, code: c_int) -> String;
}

/// The CUDA API loaded: the runtime, or else the driver.
enum Api {
    Runtime(Runtime),
    Driver(Driver),
}

/// The API, loaded once per process and never unloaded (device memory may
/// outlive every allocator), or why neither could be.
static API: OnceLock<std::result::Result<Api, String>> = OnceLock::new();

/// The environment variable that limits which API is loaded: unset, empty
/// or "auto" (the runtime, else the driver), "runtime", "driver". Read once.
const API_VARIABLE: &str = "NNMEM_CUDA_API";

fn names(list: &[&CStr]) -> String {
    list.iter().map(|l| l.to_string_lossy()).collect::<Vec<_>>().join(", ")
}

/// Why none of `list` was loaded: each name's dlerror text, or that the
/// list was left out by the variable.
fn not_loaded(list: &[&CStr], errors: Vec<String>) -> String {
    if list.is_empty() {
        return format!("not tried ({API_VARIABLE} leaves it out)");
    }
    format!("not found (tried {}: {})", names(list), errors.join("; "))
}

/// The first runtime of `runtimes` that loads with every entry point nnmem
/// needs, else the first driver of `drivers`; when neither, the text says
/// every name tried and why each failed (dlerror's text).
fn load_from(runtimes: &[&'static CStr], drivers: &[&'static CStr]) -> std::result::Result<Api, String> {
    let runtime_failure = match dl::open_first(runtimes) {
        Ok(lib) => match Runtime::load(lib) {
            Ok(rt) => return Ok(Api::Runtime(rt)),
            Err(e) => e,
        },
        Err(errors) => not_loaded(runtimes, errors),
    };
    let driver_failure = match dl::open_first(drivers) {
        Ok(lib) => match Driver::load(lib) {
            Ok(drv) => return Ok(Api::Driver(drv)),
            Err(e) => e,
        },
        Err(errors) => not_loaded(drivers, errors),
    };
    Err(format!("no CUDA: the runtime (libcudart) {runtime_failure}; the driver (libcuda) {driver_failure}"))
}

/// The runtime's and the driver's names as `NNMEM_CUDA_API`'s value
/// `value` limits them.
fn chosen(value: std::result::Result<String, std::env::VarError>) -> std::result::Result<ApiNames, String> {
    match value.as_deref() {
        Err(std::env::VarError::NotPresent) | Ok("" | "auto") => Ok((&runtime::NAMES, &driver::NAMES)),
        Ok("runtime") => Ok((&runtime::NAMES, &[])),
        Ok("driver") => Ok((&[], &driver::NAMES)),
        Ok(other) => Err(format!("{API_VARIABLE}={other:?} names no CUDA API (auto, runtime or driver)")),
        Err(e) => Err(format!("{API_VARIABLE}: {e}")),
    }
}

type ApiNames = (&'static [&'static CStr], &'static [&'static CStr]);

fn api() -> std::result::Result<&'static Api, &'static String> {
    API.get_or_init(|| {
        let (runtimes, drivers) = chosen(std::env::var(API_VARIABLE))?;
        load_from(runtimes, drivers)
    })
    .as_ref()
}

/// CUDA, loaded on first use: the runtime, or else the driver. Fails with
/// NOT_FOUND naming every library tried when neither loads (or one lacks an
/// entry point nnmem needs). Gives the name of the library loaded.
pub fn load_cuda() -> Result<&'static str> {
    match api() {
        Ok(Api::Runtime(r)) => Ok(r.library),
        Ok(Api::Driver(d)) => Ok(d.library),
        Err(e) => Err(Error::new(Status::NotFound, e.clone())),
    }
}

/// Device memory of one CUDA device. Thread-safe: every call makes its
/// device current on the calling thread for the call.
pub struct CudaAllocator {
    backend: Box<dyn Backend>,
    name: String,
    /// Over-aligned blocks (alignment above 256 B): the address handed out
    /// -> bytes before it in the block the device returned.
    shifted: Mutex<HashMap<usize, u64>>,
}

impl CudaAllocator {
    /// The allocator of CUDA device `device_id`, named "cuda:ID", through
    /// the runtime or else the driver. Fails with NOT_FOUND when neither
    /// can be loaded (naming the libraries tried), cannot count the devices
    /// (no driver, no GPU), or has no such device.
    pub fn new(device_id: u32) -> Result<CudaAllocator> {
        let name = format!("cuda:{device_id}");
        let api = api().map_err(|e| {
            Error::new(
                Status::NotFound,
                format!("{e}: install the CUDA runtime or driver, or register an allocator for {name}"),
            )
        })?;
        let backend: Box<dyn Backend> = match api {
            Api::Runtime(rt) => {
                let count = rt.device_count().map_err(|f| not_found(&name, rt.library, &f, rt.error_text(f.code)))?;
                let device = ordinal(&name, device_id, count, rt.library)?;
                Box::new(runtime::RuntimeDevice { runtime: rt, device })
            }
            Api::Driver(drv) => Box::new(open_driver(drv, &name, device_id)?),
        };
        Ok(CudaAllocator { backend, name, shifted: Mutex::default() })
    }

    /// Whether streams other than the default get stream-ordered memory
    /// (`cudaMallocAsync` or `cuMemAllocAsync`: CUDA 11.2 and later).
    pub fn stream_ordered(&self) -> bool {
        self.backend.stream_ordered()
    }

    /// The CUDA library this allocator goes through.
    pub fn library(&self) -> &'static str {
        self.backend.library()
    }

    fn shifted(&self) -> std::sync::MutexGuard<'_, HashMap<usize, u64>> {
        // Inserts and removes are single calls: a poisoned map is consistent.
        self.shifted.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn failed(&self, size: u64, f: &Failure) -> Error {
        let status = if f.code == MEMORY_ALLOCATION { Status::OutOfMemory } else { Status::InvalidArgument };
        Error::new(status, format!("{}: {} of {size} B failed: {}", self.name, f.call, self.backend.error_text(f.code)))
    }

    /// Raw device memory of `size` bytes (256-aligned) for `stream`.
    fn raw_alloc(&self, size: u64, stream: Stream) -> Result<DevicePtr> {
        let oom = || Failure { call: self.backend.alloc_call(stream), code: MEMORY_ALLOCATION };
        let bytes = usize::try_from(size).map_err(|_| self.failed(size, &oom()))?;
        let out = self.backend.alloc(bytes, stream).map_err(|f| self.failed(size, &f))?;
        DevicePtr::new(out.cast()).ok_or_else(|| self.failed(size, &oom()))
    }
}

/// Device `device_id` through the driver.
fn open_driver(drv: &'static Driver, name: &str, device_id: u32) -> Result<driver::DriverDevice> {
    let count = drv.device_count().map_err(|f| not_found(name, drv.library, &f, drv.error_text(f.code)))?;
    let device = ordinal(name, device_id, count, drv.library)?;
    drv.open(device).map_err(|f| not_found(name, drv.library, &f, drv.error_text(f.code)))
}

fn not_found(name: &str, library: &str, f: &Failure, text: String) -> Error {
    Error::new(Status::NotFound, format!("{name}: {} failed ({library}): {text}", f.call))
}

/// `device_id` as CUDA's ordinal, when the library sees that many devices.
fn ordinal(name: &str, device_id: u32, count: c_int, library: &str) -> Result<c_int> {
    c_int::try_from(device_id)
        .ok()
        .filter(|&d| d < count)
        .ok_or_else(|| Error::new(Status::NotFound, format!("{name}: no such device ({library} has {count})")))
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
        self.backend.free(raw.as_ptr().cast(), stream);
    }

    fn mem_info(&self) -> Option<MemInfo> {
        let (free, total) = self.backend.mem_info()?;
        Some(MemInfo { free: free as u64, total: total as u64 })
    }

    fn host_accessible(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// True on any machine: without a loadable runtime or driver, NOT_FOUND
    /// naming every library tried; with one, either NOT_FOUND for a missing
    /// device or a working round trip.
    #[test]
    fn cuda_is_found_or_reported_as_not_found() {
        match load_cuda() {
            Err(e) => {
                assert_eq!(e.status(), Status::NotFound);
                let e = CudaAllocator::new(0).err().expect("no CUDA, no allocator");
                assert_eq!(e.status(), Status::NotFound);
                let m = e.message();
                assert!(
                    m.starts_with(
                        "no CUDA: the runtime (libcudart) not found (tried libcudart.so, libcudart.so.12, libcudart.so.11.0: "
                    ),
                    "{m}"
                );
                assert!(m.contains("; the driver (libcuda) not found (tried libcuda.so.1, libcuda.so: "), "{m}");
                assert!(
                    m.ends_with(": install the CUDA runtime or driver, or register an allocator for cuda:0"),
                    "{m}"
                );
            }
            Ok(library) => {
                assert!(runtime::NAMES.iter().chain(driver::NAMES.iter()).any(|l| l.to_str() == Ok(library)));
                match CudaAllocator::new(0) {
                    Err(e) => {
                        assert_eq!(e.status(), Status::NotFound, "{}", e.message());
                        assert!(e.message().starts_with("cuda:0: "), "{}", e.message());
                    }
                    Ok(cuda) => round_trip(&cuda, "cuda:0"),
                }
            }
        }
        let e = CudaAllocator::new(u32::MAX).err().expect("no machine has 2^32 GPUs");
        assert_eq!(e.status(), Status::NotFound);
    }

    /// Names that load nowhere: the error names each one, with dlerror's
    /// text for each, runtime first.
    #[test]
    fn neither_library_is_reported_with_every_name_and_dlerror() {
        let Err(m) = load_from(&[c"libnnmem-no-cudart.so", c"libnnmem-no-cudart.so.9"], &[c"libnnmem-no-cuda.so.1"])
        else {
            panic!("made-up names loaded");
        };
        assert!(m.starts_with("no CUDA: the runtime (libcudart) not found (tried libnnmem-no-cudart.so, libnnmem-no-cudart.so.9: libnnmem-no-cudart.so: cannot open shared object file"), "{m}");
        assert!(m.contains("; libnnmem-no-cudart.so.9: cannot open shared object file"), "{m}");
        assert!(
            m.contains(
                "; the driver (libcuda) not found (tried libnnmem-no-cuda.so.1: libnnmem-no-cuda.so.1: cannot open"
            ),
            "{m}"
        );
    }

    #[test]
    fn the_variable_limits_the_apis_tried() {
        use std::env::VarError;
        assert_eq!(chosen(Err(VarError::NotPresent)).unwrap(), (&runtime::NAMES[..], &driver::NAMES[..]));
        assert_eq!(chosen(Ok("auto".into())).unwrap(), (&runtime::NAMES[..], &driver::NAMES[..]));
        assert_eq!(chosen(Ok(String::new())).unwrap(), (&runtime::NAMES[..], &driver::NAMES[..]));
        assert_eq!(chosen(Ok("runtime".into())).unwrap(), (&runtime::NAMES[..], &[][..]));
        assert_eq!(chosen(Ok("driver".into())).unwrap(), (&[][..], &driver::NAMES[..]));
        assert_eq!(
            chosen(Ok("gpu".into())).unwrap_err(),
            "NNMEM_CUDA_API=\"gpu\" names no CUDA API (auto, runtime or driver)"
        );
        let Err(m) = load_from(&[], &[c"libnnmem-no-cuda.so.1"]) else { panic!("a made-up name loaded") };
        assert!(m.starts_with("no CUDA: the runtime (libcudart) not tried (NNMEM_CUDA_API leaves it out); the driver (libcuda) not found (tried libnnmem-no-cuda.so.1: "), "{m}");
    }

    /// A library that loads but lacks the entry points: named with the
    /// symbol missing, and the next API tried.
    #[test]
    fn a_library_without_the_entry_points_is_named_with_the_missing_one() {
        let Err(m) = load_from(&[c"libc.so.6"], &[c"libm.so.6"]) else { panic!("libc is not CUDA") };
        assert!(m.starts_with("no CUDA: the runtime (libcudart) libc.so.6 has no cudaGetDeviceCount ("), "{m}");
        assert!(m.contains("; the driver (libcuda) libm.so.6 has no cuInit ("), "{m}");
    }

    pub(super) fn round_trip(cuda: &CudaAllocator, name: &str) {
        assert_eq!(cuda.name(), name);
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
