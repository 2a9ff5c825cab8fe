//! The memory behind a C arena: the caller's buffers (or a block nnmem
//! allocated) as the core's [`Memory`], and the maps from the core's
//! numeric addresses back to pointers. The arena's C layer reads and writes
//! through raw pointers only here.

use core::ffi::c_void;

use super::null_argument;
use crate::arena::{Buffers, Memory, Span};
#[cfg(feature = "std")]
use crate::ffi::device::zeroed_host_block;
#[cfg(feature = "std")]
use crate::pool::device::{DeviceBlock, SharedAllocator};
#[cfg(feature = "std")]
use crate::status::Error;
use crate::status::Result;

#[cfg(feature = "std")]
/// Alignment of the memory `nnm_arena_new_owned` allocates: a page, more
/// than any call is likely to ask for, so dry-run sizes carry over.
const OWNED_ALIGNMENT: usize = 4096;

/// `len` zeroed bytes from `allocator` (host-accessible) for an arena,
/// aligned to `alignment` and at least [`OWNED_ALIGNMENT`]; the block goes
/// back to the allocator when the arena (which is declared before it in
/// `nnm_arena`) has been dropped.
#[cfg(feature = "std")]
pub(super) fn owned_block(allocator: &SharedAllocator, len: usize, alignment: usize) -> Result<DeviceBlock> {
    if len == 0 {
        return Err(Error::invalid("len is 0"));
    }
    let alignment = alignment.max(OWNED_ALIGNMENT);
    if len > isize::MAX as usize - (alignment - 1) {
        return Err(Error::overflow(format!("len {len} B is too large")));
    }
    zeroed_host_block(allocator, len as u64, alignment as u64, &|| "the arena".to_owned())
}

/// Maps the core's numeric addresses (a pointer's address) on one side
/// back to pointers derived from the caller's pointer, so that they keep
/// its provenance. A dry run maps onto a NULL base: the pointers it returns
/// are distinct but must never be dereferenced.
#[derive(Copy, Clone)]
pub(super) struct PointerMap {
    base: *mut u8,
}

impl PointerMap {
    #[inline]
    pub(super) fn to_ptr(self, addr: usize) -> *mut c_void {
        self.base.wrapping_add(addr.wrapping_sub(self.base as usize)).cast()
    }
}

/// One caller buffer: its address, the pointer it was given as, its bytes.
#[derive(Copy, Clone)]
struct Region {
    start: usize,
    ptr: *mut u8,
    len: usize,
}

/// The most buffers an arena has: two (split) on the host, one in the
/// embedded build, whose arenas are single.
const REGIONS: usize = if cfg!(feature = "std") { 2 } else { 1 };

/// The caller's buffers as the core's [`Memory`]: guard bytes are read and
/// written through the pointers it was made with.
pub(super) struct CallerMemory {
    /// The buffers: none for a dry run, one, or two for a split arena.
    regions: [Region; REGIONS],
    count: usize,
}

impl CallerMemory {
    /// The pointer to `len` bytes at `addr`, or `None` unless they lie in
    /// one buffer. The core only asks for bytes inside the spans it was
    /// given, so `None` never happens; the accesses below then do nothing.
    fn pointer(&self, addr: usize, len: usize) -> Option<*mut u8> {
        let found = self
            .regions
            .iter()
            .take(self.count)
            .find(|r| addr >= r.start && addr - r.start <= r.len && len <= r.len - (addr - r.start));
        debug_assert!(found.is_some(), "arena address {addr:#x} (+{len} B) lies outside the arena's buffers");
        found.map(|r| r.ptr.wrapping_add(addr - r.start))
    }
}

impl Memory for CallerMemory {
    #[inline(always)]
    fn is_backed(&self) -> bool {
        // The embedded build has neither dry runs nor memory-less arenas.
        !cfg!(feature = "std") || self.count > 0
    }
    fn write(&mut self, addr: usize, bytes: &[u8]) {
        if let Some(dst) = self.pointer(addr, bytes.len()) {
            // SAFETY: `pointer` checked that the range lies in one buffer,
            // which the arena's creator promised valid for reads and writes
            // while the arena lives (`Backing::single`, `Backing::split`);
            // `bytes` is Rust memory, so the two do not overlap.
            unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len()) }
        }
    }
    fn fill(&mut self, addr: usize, len: usize, byte: u8) {
        if let Some(dst) = self.pointer(addr, len) {
            // SAFETY: as in `write`.
            unsafe { core::ptr::write_bytes(dst, byte, len) }
        }
    }
    fn read(&self, addr: usize, out: &mut [u8]) {
        if let Some(src) = self.pointer(addr, out.len()) {
            // SAFETY: as in `write`, for reads into Rust memory.
            unsafe { core::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) }
        }
    }
}

/// No buffer.
#[cfg(feature = "std")]
const NO_REGION: Region = Region { start: 0, ptr: core::ptr::null_mut(), len: 0 };

/// What an arena is made over: the core's view of the buffers, the memory
/// behind them, the pointer maps of its two sides, and the block nnmem
/// allocated, if any.
pub(super) struct Backing {
    pub(super) buffers: Buffers,
    pub(super) memory: CallerMemory,
    pub(super) nonpersistent: PointerMap,
    pub(super) persistent: PointerMap,
    #[cfg(feature = "std")]
    pub(super) owned: Option<DeviceBlock>,
}

/// `ptr` (`len` bytes, `what` in messages) as a span and a region.
fn region(ptr: *mut c_void, len: usize, what: &'static str) -> Result<(Span, Region)> {
    if ptr.is_null() {
        return Err(null_argument(what));
    }
    let span = Span::new(ptr as usize, len)?;
    Ok((span, Region { start: span.start, ptr: ptr.cast(), len }))
}

impl Backing {
    /// One caller buffer (`nnm_arena_new`); NULL fails naming `buffer`.
    ///
    /// # Safety
    /// `ptr` must be NULL or valid for reads and writes of `len` bytes for
    /// as long as the arena made over it lives, and not be accessed
    /// meanwhile except through the addresses the arena hands out.
    pub(super) unsafe fn single(ptr: *mut c_void, len: usize) -> Result<Self> {
        let (span, region) = region(ptr, len, "buffer")?;
        let map = PointerMap { base: ptr.cast() };
        Ok(Backing {
            buffers: Buffers::Single(span),
            memory: CallerMemory { regions: [region; REGIONS], count: 1 },
            nonpersistent: map,
            persistent: map,
            #[cfg(feature = "std")]
            owned: None,
        })
    }

    /// Two caller buffers (`nnm_arena_new_split`); the core refuses them
    /// when they overlap.
    ///
    /// # Safety
    /// As [`Backing::single`], for each buffer.
    #[cfg(feature = "std")]
    pub(super) unsafe fn split(
        persistent: *mut c_void,
        persistent_len: usize,
        nonpersistent: *mut c_void,
        nonpersistent_len: usize,
    ) -> Result<Self> {
        let (p, p_region) = region(persistent, persistent_len, "persistent")?;
        let (np, np_region) = region(nonpersistent, nonpersistent_len, "nonpersistent")?;
        Ok(Backing {
            buffers: Buffers::Split { persistent: p, nonpersistent: np },
            memory: CallerMemory { regions: [p_region, np_region], count: 2 },
            nonpersistent: PointerMap { base: nonpersistent.cast() },
            persistent: PointerMap { base: persistent.cast() },
            owned: None,
        })
    }

    /// A block nnmem allocated (`nnm_arena_new_owned`), held until the
    /// arena is dropped.
    #[cfg(feature = "std")]
    pub(super) fn owned(block: DeviceBlock) -> Result<Self> {
        // SAFETY: the block is host memory (`owned_block` checked), valid
        // for reads and writes of its size, and lives in the backing, hence
        // as long as the arena; nothing else has its pointer.
        let mut backing = unsafe { Self::single(block.ptr().as_ptr().cast(), block.size() as usize) }?;
        backing.owned = Some(block);
        Ok(backing)
    }

    /// No memory (`nnm_arena_new_dry_run`): addresses map onto NULL.
    #[cfg(feature = "std")]
    pub(super) fn dry_run() -> Self {
        let map = PointerMap { base: std::ptr::null_mut() };
        Backing {
            buffers: Buffers::DryRun,
            memory: CallerMemory { regions: [NO_REGION; 2], count: 0 },
            nonpersistent: map,
            persistent: map,
            owned: None,
        }
    }
}
