//! Device allocators: where a pool's memory comes from.
//!
//! A [`DeviceAllocator`] hands out and takes back raw device memory (host
//! RAM, CUDA memory, an NPU's SRAM through a C vtable). nnmem never reads
//! or writes device memory itself, except host-accessible memory that an
//! owned arena or a net buffer uses; so the core handles device memory as
//! [`DevicePtr`] addresses it does not dereference.

pub mod block;
pub mod cuda;
pub mod host;

pub use block::DeviceBlock;

use std::fmt;
use std::ptr::NonNull;

use crate::status::Result;

/// An address in some device's memory, as a [`DeviceAllocator`] returned
/// it (or an offset inside such a block). The pool core only compares,
/// offsets and hands back these addresses; it never dereferences them.
/// The pointer keeps its provenance, so host memory handed to Rust tests or
/// to the C layer stays usable under strict provenance.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct DevicePtr(NonNull<u8>);

// SAFETY: a DevicePtr is an address token: nothing in the core reads or
// writes through it, so moving or sharing it between threads cannot race.
// Whoever dereferences the pointer (the C caller, the C layer) takes on the
// usual obligations for the memory behind it.
unsafe impl Send for DevicePtr {}
// SAFETY: as for Send.
unsafe impl Sync for DevicePtr {}

impl DevicePtr {
    /// Wraps a non-NULL pointer an allocator returned; NULL gives `None`.
    #[inline]
    pub fn new(ptr: *mut u8) -> Option<Self> {
        NonNull::new(ptr).map(DevicePtr)
    }

    /// The pointer, with its provenance.
    #[inline]
    pub fn as_ptr(self) -> *mut u8 {
        self.0.as_ptr()
    }

    /// The numeric address (for lookups and ordering).
    #[inline]
    pub fn addr(self) -> usize {
        self.0.as_ptr() as usize
    }

    /// The address `offset` bytes further on, inside the same device block
    /// (the caller keeps it inside: a pool only offsets within a block it
    /// got from the device). Wrapping arithmetic, no dereference.
    #[inline]
    pub fn byte_add(self, offset: u64) -> Self {
        let p = self.0.as_ptr().wrapping_add(offset as usize);
        DevicePtr(NonNull::new(p).expect("an offset inside a device block is never NULL"))
    }

    /// `self - base` in bytes, when `self` lies at or after `base`.
    #[inline]
    pub fn offset_from(self, base: DevicePtr) -> Option<u64> {
        self.addr().checked_sub(base.addr()).map(|d| d as u64)
    }
}

impl fmt::Debug for DevicePtr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.addr())
    }
}

/// A device stream (CUDA `cudaStream_t`, or any queue handle of the
/// device), as an opaque value: 0 is the default stream. Blocks remember
/// the stream they were freed on (see `Pool::streams_synchronized`).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default, PartialOrd, Ord)]
pub struct Stream(pub usize);

impl Stream {
    /// The device's default stream.
    pub const DEFAULT: Stream = Stream(0);

    /// The stream as the C handle it stands for (`cudaStream_t` and the
    /// like; NULL for the default stream): a pointer with that address and
    /// no provenance, never dereferenced by nnmem.
    #[inline]
    pub fn as_handle(self) -> *mut std::ffi::c_void {
        std::ptr::null_mut::<u8>().wrapping_add(self.0).cast()
    }
}

/// Free and total bytes of a device, as its allocator reports them.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct MemInfo {
    /// Bytes the device can still hand out.
    pub free: u64,
    /// All the device's memory.
    pub total: u64,
}

/// Where a pool's (or an owned arena's, or a net's) memory comes from.
///
/// Implementations must be thread-safe: pools call them from any thread,
/// without holding a lock of their own across the call.
pub trait DeviceAllocator: Send + Sync {
    /// A short name for messages and reports ("host", "cuda:0", the C
    /// vtable's name).
    fn name(&self) -> &str;

    /// Allocates `size` bytes (`size > 0`) aligned to `alignment` (a power
    /// of two) for use on `stream`. Fails with `Status::OutOfMemory` when the
    /// device has no room, naming the size.
    fn alloc(&self, size: u64, alignment: u64, stream: Stream) -> Result<DevicePtr>;

    /// As [`DeviceAllocator::alloc`], except that an address not aligned as
    /// asked comes back as it is instead of being given back and refused:
    /// for a caller that keeps books of the blocks it holds and checks the
    /// address against them first, because a misaligned address may also
    /// be the start of a block it holds, which giving it back would free
    /// under its user. The caller then passes the address through
    /// [`aligned_or_given_back`]. An allocator that always aligns needs no
    /// other version than `alloc`.
    fn alloc_as_is(&self, size: u64, alignment: u64, stream: Stream) -> Result<DevicePtr> {
        self.alloc(size, alignment, stream)
    }

    /// Returns memory `alloc` handed out, with the same size and stream.
    /// Never called twice for one pointer.
    fn free(&self, ptr: DevicePtr, size: u64, stream: Stream);

    /// Free and total device memory, when the device can tell.
    fn mem_info(&self) -> Option<MemInfo> {
        None
    }

    /// Whether the host CPU can read and write this memory directly (host
    /// RAM, CUDA managed or pinned memory). Owned arenas and net buffers
    /// need it; device-only memory cannot back them.
    fn host_accessible(&self) -> bool;
}

/// The error for memory an allocator returned over memory it had already
/// handed out and not taken back: `returned` and `held` as (address,
/// bytes), `holder` the user holding the older block ("this pool"). That
/// memory is neither handed out nor given back: by the allocator's books
/// it is in use, and a free would pull it from under the older block.
#[cold]
pub(crate) fn handed_out_twice(
    allocator: &str,
    returned: (usize, u64),
    held: (usize, u64),
    holder: &str,
) -> crate::status::Error {
    let range = |(start, len): (usize, u64)| format!("[{start:#x}, {:#x}) ({len} B)", start as u128 + u128::from(len));
    crate::status::Error::invalid(format!(
        "device allocator \"{allocator}\" returned {}, overlapping {} that {holder} already holds from it: \
         not handed out and not given back (that memory is in use); the allocator must not hand out memory twice",
        range(returned),
        range(held)
    ))
}

/// `ptr`, which `allocator.alloc_as_is(size, alignment, stream)` returned
/// and which no holder's books name: itself when it is aligned to
/// `alignment`, otherwise given back (with that size and stream) and
/// refused with INVALID_ARGUMENT naming the allocator.
pub(crate) fn aligned_or_given_back(
    allocator: &dyn DeviceAllocator,
    ptr: DevicePtr,
    size: u64,
    alignment: u64,
    stream: Stream,
) -> Result<DevicePtr> {
    if aligned_to(ptr.addr(), alignment) {
        return Ok(ptr);
    }
    allocator.free(ptr, size, stream);
    Err(given_back_misaligned(allocator.name(), ptr, size, alignment))
}

/// Whether `addr` is a multiple of `alignment` (a power of two, checked by
/// every caller before the device was asked).
pub(crate) fn aligned_to(addr: usize, alignment: u64) -> bool {
    alignment != 0 && addr as u64 % alignment == 0
}

/// The error for a block `allocator` returned at `ptr` for `size` bytes,
/// not aligned to the `alignment` asked for, and given back.
#[cold]
pub(crate) fn given_back_misaligned(
    allocator: &str,
    ptr: DevicePtr,
    size: u64,
    alignment: u64,
) -> crate::status::Error {
    crate::status::Error::invalid(format!(
        "{allocator}: alloc returned {:p} for {size} B, not aligned to the {alignment} B asked for \
         (given back; the allocator must honour the alignment)",
        ptr.as_ptr()
    ))
}

/// The block of `held` (keyed by address; blocks apart from each other,
/// `size_of` giving each one's bytes) that overlaps `size` bytes at
/// `start`, as (address, bytes).
pub(crate) fn overlapping<V>(
    held: &std::collections::BTreeMap<usize, V>,
    start: usize,
    size: u64,
    size_of: impl Fn(&V) -> u64,
) -> Option<(usize, u64)> {
    let end = start.saturating_add(usize::try_from(size).unwrap_or(usize::MAX));
    // The last block starting before the end: any block that overlaps
    // either is that one or lies wholly before it, apart from it.
    let (&base, value) = held.range(..end).next_back()?;
    let bytes = size_of(value);
    (base.saturating_add(usize::try_from(bytes).unwrap_or(usize::MAX)) > start).then_some((base, bytes))
}

/// A shared device allocator: pools, arenas and nets hold one each.
pub type SharedAllocator = std::sync::Arc<dyn DeviceAllocator>;

/// The process-wide host allocator (aligned system allocation), the default
/// device of every pool, owned arena and net.
pub fn host() -> SharedAllocator {
    static HOST: std::sync::OnceLock<SharedAllocator> = std::sync::OnceLock::new();
    HOST.get_or_init(|| std::sync::Arc::new(host::HostAllocator)).clone()
}
