//! The embedded build's arena handles: the arena lives in the head of its
//! `nnm_arena_init` state, right after a tag word, as host handles sit
//! after theirs. The tag tells a live arena from a freed one (or from bytes
//! that were never one), so that calls on those are refused.

use core::mem::offset_of;

use super::state::STATE_HEADER_BYTES;
use super::{nnm_arena, null_argument};
use crate::status::{Error, Result, Status};

/// "nnm_aren" as a word: not a small integer, a pointer or zeroed memory.
const TAG: u64 = 0x6e65_7261_5f6d_6e6e;

/// The state's header.
#[repr(C)]
struct Placed {
    tag: u64,
    arena: nnm_arena,
}

const _: () = assert!(core::mem::size_of::<Placed>() <= STATE_HEADER_BYTES, "the arena fits the state's header");
const _: () = assert!(core::mem::align_of::<Placed>() <= super::state::STATE_ALIGNMENT);

/// Writes `arena` into the header at `head` and returns its handle.
///
/// # Safety
/// `head` must be aligned to the state's alignment and valid for writes of
/// `STATE_HEADER_BYTES` for as long as the arena is used.
#[inline]
pub(super) unsafe fn place(head: *mut u8, arena: nnm_arena) -> *mut nnm_arena {
    let placed = head.cast::<Placed>();
    // SAFETY: the caller's promise: aligned and writable for the header,
    // which holds a `Placed` (checked at compile time).
    unsafe {
        placed.write(Placed { tag: TAG, arena });
        core::ptr::addr_of_mut!((*placed).arena)
    }
}

/// The live arena behind `ptr`.
///
/// # Safety
/// `ptr` must be NULL or point 8 bytes into readable memory of at least a
/// `Placed` (a handle `place` returned, live or freed).
#[inline(always)]
pub(super) unsafe fn get(ptr: *const nnm_arena) -> Result<core::ptr::NonNull<nnm_arena>> {
    // SAFETY: the caller's promise is `find`'s.
    match unsafe { find(ptr) } {
        Some(arena) => Ok(arena),
        None => Err(refuse(ptr)),
    }
}

/// [`get`]'s check, out of line and answering in a register (every export
/// makes it, so its flash counts once per export).
///
/// # Safety
/// As [`get`].
#[inline(never)]
unsafe fn find(ptr: *const nnm_arena) -> Option<core::ptr::NonNull<nnm_arena>> {
    let placed = ptr.cast::<u8>().wrapping_sub(offset_of!(Placed, arena)).cast::<Placed>();
    // SAFETY: the caller promises the header is readable; NULL and an
    // unaligned pointer are refused before it is read.
    if ptr.is_null() || !placed.is_aligned() || unsafe { core::ptr::addr_of!((*placed).tag).read() } != TAG {
        return None;
    }
    // The tag says `place` wrote an arena here that is not freed; the
    // callers make a shared or an exclusive reference as the call needs.
    core::ptr::NonNull::new(ptr.cast_mut())
}

/// Why [`find`] refused `ptr`.
#[cold]
#[inline(never)]
fn refuse(ptr: *const nnm_arena) -> Error {
    if ptr.is_null() {
        null_argument("arena")
    } else {
        not_live(ptr as usize)
    }
}

/// Ends the arena behind `ptr` (NULL: nothing): its tag is cleared, so
/// later calls with it are refused, and its state is the caller's again.
///
/// # Safety
/// As [`get`].
pub(super) unsafe fn remove(ptr: *mut nnm_arena) -> Result<()> {
    if ptr.is_null() {
        return Ok(());
    }
    // SAFETY: the caller's promise is `get`'s.
    unsafe { get(ptr) }?;
    let placed = ptr.cast::<u8>().wrapping_sub(offset_of!(Placed, arena)).cast::<Placed>();
    // SAFETY: `get` found a live arena here; nothing needs dropping (an
    // embedded arena holds no heap memory), so clearing the tag ends it.
    unsafe { core::ptr::addr_of_mut!((*placed).tag).write(0) };
    Ok(())
}

#[cfg_attr(not(nnmem_stripped), cold, inline(never))]
#[cfg_attr(nnmem_stripped, inline(always))]
fn not_live(addr: usize) -> Error {
    Error::with(Status::InvalidArgument, |t| {
        t.put("arena (");
        t.hex(addr);
        t.put(") is not a live nnm_arena (freed, or not made by nnm_arena_init)");
    })
}
