//! The CUDA runtime (libcudart): device memory through `cudaMalloc` and,
//! on streams, `cudaMallocAsync` (CUDA 11.2+). CUDA's current device is per
//! thread; every call makes the allocator's device current for itself and
//! puts the thread's own device back after, so a caller (PyTorch freeing a
//! tensor of another device) never finds its current device changed.

use std::ffi::{c_char, c_int, c_void, CStr};

use super::dl::{entry, optional_entry, Library};
use super::{Backend, Failure, SUCCESS};
use crate::pool::device::Stream;

/// The names the runtime is looked for under, in order.
pub(super) const NAMES: [&CStr; 3] = [c"libcudart.so", c"libcudart.so.12", c"libcudart.so.11.0"];

type GetDeviceCount = unsafe extern "C" fn(*mut c_int) -> c_int;
type GetDevice = unsafe extern "C" fn(*mut c_int) -> c_int;
type SetDevice = unsafe extern "C" fn(c_int) -> c_int;
type Malloc = unsafe extern "C" fn(*mut *mut c_void, usize) -> c_int;
type Free = unsafe extern "C" fn(*mut c_void) -> c_int;
type MallocAsync = unsafe extern "C" fn(*mut *mut c_void, usize, *mut c_void) -> c_int;
type FreeAsync = unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int;
type MemGetInfo = unsafe extern "C" fn(*mut usize, *mut usize) -> c_int;
type GetErrorString = unsafe extern "C" fn(c_int) -> *const c_char;

/// The runtime's entry points nnmem uses.
pub(super) struct Runtime {
    pub library: &'static str,
    get_device_count: GetDeviceCount,
    get_device: GetDevice,
    set_device: SetDevice,
    malloc: Malloc,
    free: Free,
    malloc_async: Option<(MallocAsync, FreeAsync)>,
    mem_get_info: MemGetInfo,
    get_error_string: GetErrorString,
}

impl Runtime {
    /// The entry points of a loaded runtime, or the first one missing.
    pub fn load(lib: Library) -> std::result::Result<Runtime, String> {
        let malloc_async = match (
            optional_entry!(lib, c"cudaMallocAsync", MallocAsync),
            optional_entry!(lib, c"cudaFreeAsync", FreeAsync),
        ) {
            (Some(m), Some(f)) => Some((m, f)),
            _ => None,
        };
        Ok(Runtime {
            library: lib.name,
            get_device_count: entry!(lib, c"cudaGetDeviceCount", GetDeviceCount),
            get_device: entry!(lib, c"cudaGetDevice", GetDevice),
            set_device: entry!(lib, c"cudaSetDevice", SetDevice),
            malloc: entry!(lib, c"cudaMalloc", Malloc),
            free: entry!(lib, c"cudaFree", Free),
            malloc_async,
            mem_get_info: entry!(lib, c"cudaMemGetInfo", MemGetInfo),
            get_error_string: entry!(lib, c"cudaGetErrorString", GetErrorString),
        })
    }

    /// The runtime's text for `code`.
    pub fn error_text(&self, code: c_int) -> String {
        // SAFETY: cudaGetErrorString takes any code and returns a static
        // NUL-terminated string (or NULL on very old runtimes).
        let text = unsafe { (self.get_error_string)(code) };
        if text.is_null() {
            return format!("CUDA error {code}");
        }
        // SAFETY: non-NULL: a static NUL-terminated string.
        format!("{} (CUDA error {code})", unsafe { CStr::from_ptr(text) }.to_string_lossy())
    }

    /// The number of devices the runtime sees.
    pub fn device_count(&self) -> std::result::Result<c_int, Failure> {
        let mut count: c_int = 0;
        // SAFETY: `count` is a valid place for the result.
        match unsafe { (self.get_device_count)(&mut count) } {
            SUCCESS => Ok(count),
            code => Err(Failure { call: "cudaGetDeviceCount", code }),
        }
    }
}

/// One device through the runtime.
pub(super) struct RuntimeDevice {
    pub runtime: &'static Runtime,
    pub device: c_int,
}

impl RuntimeDevice {
    /// Runs `f` with this device current on the calling thread, then makes
    /// the thread's previous device current again.
    fn on_device<T>(&self, f: impl FnOnce() -> T) -> std::result::Result<T, Failure> {
        let rt = self.runtime;
        let mut previous: c_int = -1;
        // SAFETY: `previous` is a valid place for the result.
        let known = unsafe { (rt.get_device)(&mut previous) } == SUCCESS;
        let switch = !known || previous != self.device;
        if switch {
            // SAFETY: cudaSetDevice takes any int and reports bad ones.
            let code = unsafe { (rt.set_device)(self.device) };
            if code != SUCCESS {
                return Err(Failure { call: "cudaSetDevice", code });
            }
        }
        let result = f();
        if switch && known {
            // SAFETY: as above; `previous` was current a moment ago. A
            // failure leaves this device current, which is all it can do.
            unsafe { (rt.set_device)(previous) };
        }
        Ok(result)
    }
}

impl Backend for RuntimeDevice {
    fn library(&self) -> &'static str {
        self.runtime.library
    }

    fn alloc_call(&self, stream: Stream) -> &'static str {
        if self.runtime.malloc_async.is_some() && stream != Stream::DEFAULT {
            "cudaMallocAsync"
        } else {
            "cudaMalloc"
        }
    }

    fn stream_ordered(&self) -> bool {
        self.runtime.malloc_async.is_some()
    }

    fn alloc(&self, bytes: usize, stream: Stream) -> std::result::Result<*mut c_void, Failure> {
        let rt = self.runtime;
        let call = self.alloc_call(stream);
        let mut out: *mut c_void = std::ptr::null_mut();
        let code = self.on_device(|| match (rt.malloc_async, stream) {
            // SAFETY: `out` is a valid place for the result; the stream is
            // the caller's handle of this device (the trait's contract).
            (Some((malloc_async, _)), s) if s != Stream::DEFAULT => unsafe {
                malloc_async(&mut out, bytes, s.as_handle())
            },
            // SAFETY: `out` is a valid place for the result.
            _ => unsafe { (rt.malloc)(&mut out, bytes) },
        })?;
        if code != SUCCESS {
            return Err(Failure { call, code });
        }
        Ok(out)
    }

    fn free(&self, ptr: *mut c_void, stream: Stream) {
        let rt = self.runtime;
        // A failure (a context already torn down at process exit) cannot be
        // reported through `free`, and the memory is the runtime's to
        // reclaim then.
        let _ = self.on_device(|| match (rt.malloc_async, stream) {
            // SAFETY: `ptr` came from cudaMallocAsync on this stream (`alloc`
            // made the same choice for the same stream).
            (Some((_, free_async)), s) if s != Stream::DEFAULT => unsafe { free_async(ptr, s.as_handle()) },
            // SAFETY: `ptr` came from cudaMalloc and is freed once.
            _ => unsafe { (rt.free)(ptr) },
        });
    }

    fn mem_info(&self) -> Option<(usize, usize)> {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: both pointers are valid places for the results.
        let code = self.on_device(|| unsafe { (self.runtime.mem_get_info)(&mut free, &mut total) }).ok()?;
        (code == SUCCESS).then_some((free, total))
    }

    fn error_text(&self, code: c_int) -> String {
        self.runtime.error_text(code)
    }
}
