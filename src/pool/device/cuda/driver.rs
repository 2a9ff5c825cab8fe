//! The CUDA driver API (libcuda), for machines that have the driver without
//! the runtime: `cuMemAlloc` and, on streams, `cuMemAllocAsync` (CUDA 11.2+),
//! in the device's primary context (the one the runtime would use), retained
//! for as long as the allocator lives. Every call pushes that context on the
//! calling thread and pops it after, so a thread without a context works and
//! a thread with its own finds it current again.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

use super::dl::{entry, optional_entry, Library};
use super::{Backend, Failure, SUCCESS};
use crate::pool::device::Stream;

/// The names the driver is looked for under, in order (the first is the
/// driver package's soname; the second a development link).
pub(super) const NAMES: [&CStr; 2] = [c"libcuda.so.1", c"libcuda.so"];

/// `CUdeviceptr` on 64-bit targets (`unsigned long long`).
type DevPtr = u64;

pub(super) type Init = unsafe extern "C" fn(c_uint) -> c_int;
pub(super) type DeviceGetCount = unsafe extern "C" fn(*mut c_int) -> c_int;
pub(super) type DeviceGet = unsafe extern "C" fn(*mut c_int, c_int) -> c_int;
pub(super) type PrimaryCtxRetain = unsafe extern "C" fn(*mut *mut c_void, c_int) -> c_int;
pub(super) type PrimaryCtxRelease = unsafe extern "C" fn(c_int) -> c_int;
pub(super) type CtxPush = unsafe extern "C" fn(*mut c_void) -> c_int;
pub(super) type CtxPop = unsafe extern "C" fn(*mut *mut c_void) -> c_int;
pub(super) type MemAlloc = unsafe extern "C" fn(*mut DevPtr, usize) -> c_int;
pub(super) type MemFree = unsafe extern "C" fn(DevPtr) -> c_int;
pub(super) type MemAllocAsync = unsafe extern "C" fn(*mut DevPtr, usize, *mut c_void) -> c_int;
pub(super) type MemFreeAsync = unsafe extern "C" fn(DevPtr, *mut c_void) -> c_int;
pub(super) type MemGetInfo = unsafe extern "C" fn(*mut usize, *mut usize) -> c_int;
pub(super) type GetErrorString = unsafe extern "C" fn(c_int, *mut *const c_char) -> c_int;

/// The driver's entry points nnmem uses, and what `cuInit` returned.
pub(super) struct Driver {
    pub library: &'static str,
    /// `cuInit(0)`'s result (run once, at load).
    pub init: c_int,
    pub device_get_count: DeviceGetCount,
    pub device_get: DeviceGet,
    pub primary_ctx_retain: PrimaryCtxRetain,
    pub primary_ctx_release: PrimaryCtxRelease,
    pub ctx_push: CtxPush,
    pub ctx_pop: CtxPop,
    pub mem_alloc: MemAlloc,
    pub mem_free: MemFree,
    pub mem_alloc_async: Option<(MemAllocAsync, MemFreeAsync)>,
    pub mem_get_info: MemGetInfo,
    pub get_error_string: GetErrorString,
}

impl Driver {
    /// The entry points of a loaded driver, initialised (`cuInit`), or the
    /// first one missing.
    pub fn load(lib: Library) -> std::result::Result<Driver, String> {
        let init = entry!(lib, c"cuInit", Init);
        let primary_ctx_release = match optional_entry!(lib, c"cuDevicePrimaryCtxRelease_v2", PrimaryCtxRelease) {
            Some(f) => f,
            None => entry!(lib, c"cuDevicePrimaryCtxRelease", PrimaryCtxRelease),
        };
        let mem_alloc_async = match (
            optional_entry!(lib, c"cuMemAllocAsync", MemAllocAsync),
            optional_entry!(lib, c"cuMemFreeAsync", MemFreeAsync),
        ) {
            (Some(m), Some(f)) => Some((m, f)),
            _ => None,
        };
        let mut driver = Driver {
            library: lib.name,
            init: SUCCESS,
            device_get_count: entry!(lib, c"cuDeviceGetCount", DeviceGetCount),
            device_get: entry!(lib, c"cuDeviceGet", DeviceGet),
            primary_ctx_retain: entry!(lib, c"cuDevicePrimaryCtxRetain", PrimaryCtxRetain),
            primary_ctx_release,
            ctx_push: entry!(lib, c"cuCtxPushCurrent_v2", CtxPush),
            ctx_pop: entry!(lib, c"cuCtxPopCurrent_v2", CtxPop),
            mem_alloc: entry!(lib, c"cuMemAlloc_v2", MemAlloc),
            mem_free: entry!(lib, c"cuMemFree_v2", MemFree),
            mem_alloc_async,
            mem_get_info: entry!(lib, c"cuMemGetInfo_v2", MemGetInfo),
            get_error_string: entry!(lib, c"cuGetErrorString", GetErrorString),
        };
        // SAFETY: cuInit takes flags (0 is the only defined value) and may be
        // called any number of times.
        driver.init = unsafe { init(0) };
        Ok(driver)
    }

    /// The driver's text for `code`.
    pub fn error_text(&self, code: c_int) -> String {
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: `text` is a valid place for a static string's address.
        let known = unsafe { (self.get_error_string)(code, &mut text) } == SUCCESS;
        if !known || text.is_null() {
            return format!("CUDA driver error {code}");
        }
        // SAFETY: the driver returned a static NUL-terminated string.
        format!("{} (CUDA driver error {code})", unsafe { CStr::from_ptr(text) }.to_string_lossy())
    }

    /// The number of devices the driver sees (`cuInit` must have succeeded).
    pub fn device_count(&self) -> std::result::Result<c_int, Failure> {
        if self.init != SUCCESS {
            return Err(Failure { call: "cuInit", code: self.init });
        }
        let mut count: c_int = 0;
        // SAFETY: `count` is a valid place for the result.
        match unsafe { (self.device_get_count)(&mut count) } {
            SUCCESS => Ok(count),
            code => Err(Failure { call: "cuDeviceGetCount", code }),
        }
    }

    /// Device `ordinal` with its primary context retained (released when
    /// the returned value is dropped).
    pub fn open(&'static self, ordinal: c_int) -> std::result::Result<DriverDevice, Failure> {
        let mut device: c_int = 0;
        // SAFETY: `device` is a valid place for the result.
        let code = unsafe { (self.device_get)(&mut device, ordinal) };
        if code != SUCCESS {
            return Err(Failure { call: "cuDeviceGet", code });
        }
        let mut context: *mut c_void = std::ptr::null_mut();
        // SAFETY: `context` is a valid place for the result; `device` came
        // from cuDeviceGet.
        let code = unsafe { (self.primary_ctx_retain)(&mut context, device) };
        if code != SUCCESS {
            return Err(Failure { call: "cuDevicePrimaryCtxRetain", code });
        }
        Ok(DriverDevice { driver: self, device, context })
    }
}

/// One device through the driver: its primary context, retained.
pub(super) struct DriverDevice {
    driver: &'static Driver,
    device: c_int,
    context: *mut c_void,
}

// SAFETY: a CUcontext is a process-wide handle that any thread may push;
// nothing here is tied to the thread that retained it.
unsafe impl Send for DriverDevice {}
// SAFETY: as for Send; every use pushes and pops on the calling thread only.
unsafe impl Sync for DriverDevice {}

impl Drop for DriverDevice {
    fn drop(&mut self) {
        // SAFETY: this value retained the primary context once; this is the
        // matching release (the driver destroys the context at the last one).
        unsafe { (self.driver.primary_ctx_release)(self.device) };
    }
}

impl DriverDevice {
    /// Runs `f` with the primary context current on the calling thread,
    /// then restores the thread's own context.
    fn in_context<T>(&self, f: impl FnOnce() -> T) -> std::result::Result<T, Failure> {
        // SAFETY: `context` is retained for as long as `self` lives.
        let code = unsafe { (self.driver.ctx_push)(self.context) };
        if code != SUCCESS {
            return Err(Failure { call: "cuCtxPushCurrent", code });
        }
        let result = f();
        let mut popped: *mut c_void = std::ptr::null_mut();
        // SAFETY: pops the context pushed above; `popped` is a valid place.
        unsafe { (self.driver.ctx_pop)(&mut popped) };
        Ok(result)
    }
}

/// A driver device address as a pointer (nnmem never dereferences it).
fn as_ptr(p: DevPtr) -> *mut c_void {
    p as usize as *mut c_void
}

impl Backend for DriverDevice {
    fn library(&self) -> &'static str {
        self.driver.library
    }

    fn alloc_call(&self, stream: Stream) -> &'static str {
        if self.driver.mem_alloc_async.is_some() && stream != Stream::DEFAULT {
            "cuMemAllocAsync"
        } else {
            "cuMemAlloc"
        }
    }

    fn stream_ordered(&self) -> bool {
        self.driver.mem_alloc_async.is_some()
    }

    fn alloc(&self, bytes: usize, stream: Stream) -> std::result::Result<*mut c_void, Failure> {
        let drv = self.driver;
        let call = self.alloc_call(stream);
        let mut out: DevPtr = 0;
        let code = self.in_context(|| match (drv.mem_alloc_async, stream) {
            // SAFETY: `out` is a valid place for the result; the stream is
            // the caller's handle of this device (the trait's contract).
            (Some((alloc_async, _)), s) if s != Stream::DEFAULT => unsafe {
                alloc_async(&mut out, bytes, s.as_handle())
            },
            // SAFETY: `out` is a valid place for the result.
            _ => unsafe { (drv.mem_alloc)(&mut out, bytes) },
        })?;
        if code != SUCCESS {
            return Err(Failure { call, code });
        }
        Ok(as_ptr(out))
    }

    fn free(&self, ptr: *mut c_void, stream: Stream) {
        let drv = self.driver;
        let p = ptr as usize as DevPtr;
        // A failure cannot be reported through `free` (see the runtime's).
        let _ = self.in_context(|| match (drv.mem_alloc_async, stream) {
            // SAFETY: `p` came from cuMemAllocAsync on this stream (`alloc`
            // made the same choice for the same stream).
            (Some((_, free_async)), s) if s != Stream::DEFAULT => unsafe { free_async(p, s.as_handle()) },
            // SAFETY: `p` came from cuMemAlloc and is freed once.
            _ => unsafe { (drv.mem_free)(p) },
        });
    }

    fn mem_info(&self) -> Option<(usize, usize)> {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: both pointers are valid places for the results.
        let code = self.in_context(|| unsafe { (self.driver.mem_get_info)(&mut free, &mut total) }).ok()?;
        (code == SUCCESS).then_some((free, total))
    }

    fn error_text(&self, code: c_int) -> String {
        self.driver.error_text(code)
    }
}
