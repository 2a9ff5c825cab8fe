//! A device allocator made of C function pointers (`nnm_device_allocator_vtable`):
//! the adaptor that lets pools, arenas and nets draw memory from any device
//! a C program can drive (CUDA through its own code, an NPU SDK, a test
//! double that fails on demand).

use std::ffi::{c_char, c_int, c_void};

use super::super::args::read_str;
use crate::pool::device::{aligned_or_given_back, DeviceAllocator, DevicePtr, MemInfo, Stream};
use crate::status::{Error, Result, Status};

/// Flag of `nnm_device_allocator_vtable`: the CPU can read and write the
/// memory directly (host RAM, pinned or managed memory). Only such an
/// allocator can back owned arenas and net buffers.
pub const NNM_DEVICE_HOST_ACCESSIBLE: u32 = 1;

/// Every flag `nnm_device_allocator_vtable::flags` may hold.
const KNOWN_FLAGS: u32 = NNM_DEVICE_HOST_ACCESSIBLE;

/// Allocates `size` bytes (> 0) aligned to `alignment` (a power of two) for
/// use on `stream` (NULL: the device's default stream); returns NULL when
/// the device has no room. May be called from any thread, concurrently.
/// Memory it handed out and has not taken back must not be returned again:
/// a pool refuses such a block (the same pointer twice, or one inside a
/// block it holds) and never gives it back, as `nnm_pool_alloc` says. A
/// block not aligned as asked is given back (`free`) and refused, unless
/// it is also such a block.
pub type nnm_device_alloc_fn =
    Option<unsafe extern "C" fn(ctx: *mut c_void, size: usize, alignment: usize, stream: *mut c_void) -> *mut c_void>;

/// Returns memory the `alloc` function handed out, with the size and stream
/// it was allocated with; called once per pointer. May be called from any
/// thread, concurrently.
pub type nnm_device_free_fn =
    Option<unsafe extern "C" fn(ctx: *mut c_void, ptr: *mut c_void, size: usize, stream: *mut c_void)>;

/// Writes the device's free and total bytes and returns 0, or returns
/// non-zero (writing nothing) when the device cannot tell.
pub type nnm_device_mem_info_fn =
    Option<unsafe extern "C" fn(ctx: *mut c_void, free_bytes: *mut u64, total_bytes: *mut u64) -> c_int>;

/// Called once with the context when nothing uses the allocator any more
/// (its handle and every pool, arena and net made with it are gone, and all
/// their memory has been returned): the place to free `ctx`. Never called
/// while memory it handed out is in use: a pool freed with blocks still out
/// never returns them, so `release` is then never called.
pub type nnm_device_release_fn = Option<unsafe extern "C" fn(ctx: *mut c_void)>;

/// A device allocator written in C, for `nnm_device_allocator_new`, which
/// copies it (and the name): the struct may be reused or freed afterwards.
///
/// Thread safety: `alloc`, `free` and `mem_info` may be called from any
/// thread, concurrently (pools are thread-safe and call them without a
/// lock of their own), and `release` from whichever thread drops the last
/// use; the functions must allow that. They must not call the per-device
/// registry (`nnm_device_*` but `nnm_device_allocator_*`): it may call
/// them while holding its own lock (returning a retired pool's idle
/// memory), so such a call would deadlock. Fill in every field.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct nnm_device_allocator_vtable {
    /// A short name for messages and reports (UTF-8, NUL-terminated,
    /// required); copied.
    pub name: *const c_char,
    /// Passed as the first argument to every function; nnmem never reads it.
    pub ctx: *mut c_void,
    /// Required.
    pub alloc: nnm_device_alloc_fn,
    /// Required.
    pub free: nnm_device_free_fn,
    /// Optional (NULL: the device cannot tell its free and total memory).
    pub mem_info: nnm_device_mem_info_fn,
    /// Optional (NULL: nothing to do when the allocator is no longer used).
    pub release: nnm_device_release_fn,
    /// NNM_DEVICE_HOST_ACCESSIBLE or 0.
    pub flags: u32,
}

impl Default for nnm_device_allocator_vtable {
    /// Every field NULL or 0 (what a C `= {0}` gives).
    fn default() -> Self {
        nnm_device_allocator_vtable {
            name: std::ptr::null(),
            ctx: std::ptr::null_mut(),
            alloc: None,
            free: None,
            mem_info: None,
            release: None,
            flags: 0,
        }
    }
}

/// The `DeviceAllocator` over a C vtable.
pub(crate) struct VtableAllocator {
    name: String,
    ctx: *mut c_void,
    alloc: unsafe extern "C" fn(*mut c_void, usize, usize, *mut c_void) -> *mut c_void,
    free: unsafe extern "C" fn(*mut c_void, *mut c_void, usize, *mut c_void),
    mem_info: nnm_device_mem_info_fn,
    release: nnm_device_release_fn,
    host_accessible: bool,
}

// SAFETY: nnmem only passes `ctx` back to the vtable's functions, which the
// vtable's contract (stated in the header) allows to be called from any
// thread, concurrently; `release` runs once, when the last user is gone.
unsafe impl Send for VtableAllocator {}
// SAFETY: as for Send: every method only calls those functions.
unsafe impl Sync for VtableAllocator {}

impl VtableAllocator {
    /// The allocator `vtable` describes: the name is copied; NULL name,
    /// `alloc` or `free` and unknown flags are refused.
    ///
    /// # Safety
    /// `vtable.name` must be NULL or a NUL-terminated string; the functions
    /// must behave as `nnm_device_allocator_vtable` documents.
    pub(crate) unsafe fn new(vtable: &nnm_device_allocator_vtable) -> Result<VtableAllocator> {
        // SAFETY: the caller's promise about `name`.
        let name = unsafe { read_str(vtable.name, "vtable->name") }?;
        let (Some(alloc), Some(free)) = (vtable.alloc, vtable.free) else {
            let missing = if vtable.alloc.is_none() { "alloc" } else { "free" };
            return Err(Error::invalid(format!(
                "device allocator \"{name}\": vtable->{missing} is NULL (alloc and free are required)"
            )));
        };
        if vtable.flags & !KNOWN_FLAGS != 0 {
            return Err(Error::invalid(format!(
                "device allocator \"{name}\": unknown flags {:#x} (known: NNM_DEVICE_HOST_ACCESSIBLE = {:#x})",
                vtable.flags & !KNOWN_FLAGS,
                NNM_DEVICE_HOST_ACCESSIBLE
            )));
        }
        Ok(VtableAllocator {
            name: name.to_owned(),
            ctx: vtable.ctx,
            alloc,
            free,
            mem_info: vtable.mem_info,
            release: vtable.release,
            host_accessible: vtable.flags & NNM_DEVICE_HOST_ACCESSIBLE != 0,
        })
    }
}

impl DeviceAllocator for VtableAllocator {
    fn name(&self) -> &str {
        &self.name
    }

    fn alloc(&self, size: u64, alignment: u64, stream: Stream) -> Result<DevicePtr> {
        let ptr = self.alloc_as_is(size, alignment, stream)?;
        aligned_or_given_back(self, ptr, size, alignment, stream)
    }

    fn alloc_as_is(&self, size: u64, alignment: u64, stream: Stream) -> Result<DevicePtr> {
        let name = &self.name;
        if size == 0 || !alignment.is_power_of_two() {
            return Err(Error::invalid(format!(
                "{name}: size {size} B with alignment {alignment} B (size > 0 and a power-of-two alignment needed)"
            )));
        }
        let oom =
            || Error::new(Status::OutOfMemory, format!("{name}: cannot allocate {size} B (alignment {alignment} B)"));
        let (Ok(c_size), Ok(c_alignment)) = (usize::try_from(size), usize::try_from(alignment)) else {
            return Err(oom());
        };
        // SAFETY: the vtable's contract: `alloc` takes its context, a size
        // > 0 and a power-of-two alignment, from any thread.
        let raw = unsafe { (self.alloc)(self.ctx, c_size, c_alignment, stream.as_handle()) };
        DevicePtr::new(raw.cast()).ok_or_else(oom)
    }

    fn free(&self, ptr: DevicePtr, size: u64, stream: Stream) {
        // Every size came through `alloc`, which checked that it fits.
        let size = usize::try_from(size).expect("a size alloc accepted fits size_t");
        // SAFETY: the trait's contract: `ptr` came from `alloc` with this
        // size and stream and is returned once; the vtable's `free` may be
        // called from any thread.
        unsafe { (self.free)(self.ctx, ptr.as_ptr().cast(), size, stream.as_handle()) }
    }

    fn mem_info(&self) -> Option<MemInfo> {
        let mem_info = self.mem_info?;
        let (mut free, mut total) = (0u64, 0u64);
        // SAFETY: the vtable's contract: `mem_info` writes two u64s through
        // the pointers, which point to these locals, and may be called from
        // any thread.
        let rc = unsafe { mem_info(self.ctx, &mut free, &mut total) };
        (rc == 0).then_some(MemInfo { free, total })
    }

    fn host_accessible(&self) -> bool {
        self.host_accessible
    }
}

impl Drop for VtableAllocator {
    fn drop(&mut self) {
        if let Some(release) = self.release {
            // SAFETY: the last user of the allocator is gone (this is its
            // drop), so the context is released exactly once, as the
            // vtable's contract says.
            unsafe { release(self.ctx) }
        }
    }
}
