//! The host's arena calls: arenas with their records on the heap, over
//! one or two caller buffers, over memory nnmem allocates, or over none (a
//! dry run); named categories; committing a heap planner's plan; reports.

use std::ffi::{c_char, c_void, CString};
use std::mem::MaybeUninit;

use super::memory::{owned_block, Backing};
use super::{arena_mut, arena_ref, nnm_arena, options, write_result};
use crate::arena::{report, Arena, ArenaOptions, ReportFormat};
use crate::ffi::args::{handle_query, non_null, read_str, slice_out};
use crate::ffi::device::{allocator_or_host, nnm_device_allocator};
use crate::ffi::error::{guard, guard_ptr};
use crate::ffi::handle::{into_handle, HandleType};
use crate::ffi::plan::{nnm_planner, planner_requested};
use crate::ffi::text::{copy_text, emit_lines, nnm_write_fn};
use crate::pool::device::{self, SharedAllocator};
use crate::status::{Error, Result, Status};

/// The path of the `nnm_arena_new*` exports: checks `out_arena`, makes the
/// arena over what `parts` gives, and writes its handle.
///
/// # Safety
/// As [`write_result`], for `out_arena`.
#[inline]
unsafe fn create(out_arena: *mut *mut nnm_arena, parts: impl FnOnce() -> Result<(Backing, ArenaOptions)>) -> Status {
    let make = || {
        let (backing, options) = parts()?;
        Ok(into_handle(nnm_arena::over(backing, |buffers, memory| Arena::new(buffers, options, memory))?))
    };
    // SAFETY: the caller's promise about `out_arena` is `write_result`'s.
    unsafe { write_result(|| Ok(()), out_arena, "out_arena", |()| make()) }
}

/// A category name as the C string `nnm_arena_category_name` returns.
pub(super) fn nul_terminated(name: &str) -> CString {
    CString::new(name).expect("category names have no NUL (checked at registration)")
}

/// The parts of an arena over memory nnmem allocates: the options first, as
/// the block's alignment comes from them.
fn owned(allocator: &SharedAllocator, len: usize, alignment: usize, flags: u32) -> Result<(Backing, ArenaOptions)> {
    let options = options(alignment, flags)?;
    Ok((Backing::owned(owned_block(allocator, len, options.alignment)?)?, options))
}

impl nnm_arena {
    fn register_category(&mut self, name: &str) -> Result<u32> {
        let id = self.arena.register_category(name)?;
        self.names.push(nul_terminated(name));
        Ok(id)
    }
}

// SAFETY: no other handle type is named "nnm_arena".
unsafe impl HandleType for nnm_arena {
    const NAME: &'static str = "nnm_arena";
}

// --- creation ------------------------------------------------------------------

/// Creates an arena over `buffer` (`len` bytes, any address): its start is
/// aligned up to `alignment` (0: 16; a power of two up to 2^62, or 2^30 on
/// 32-bit targets) and the bytes lost are reported in `nnm_arena_sizes`.
/// `flags`: NNM_ARENA_RECORDING, NNM_ARENA_GUARD. The buffer must stay
/// valid until `nnm_arena_free`.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (alignment not a power of two;
/// above 2^62: "alignment A is larger than the largest supported, 2^62 =
/// 4611686018427387904 B"; unknown flags), OVERFLOW (the buffer wraps
/// around the address space), DOES_NOT_FIT (too small to align its start).
///
/// # Safety
/// `buffer` must be NULL or valid for reads and writes of `len` bytes until
/// `nnm_arena_free`, and be used meanwhile only through the addresses the
/// arena hands out (guard mode writes into it). `out_arena` must be NULL or
/// valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_new(
    buffer: *mut c_void,
    len: usize,
    alignment: usize,
    flags: u32,
    out_arena: *mut *mut nnm_arena,
) -> Status {
    // SAFETY: the caller promises `buffer` is NULL or valid for `len` bytes
    // while the arena lives, and `out_arena` NULL or writable.
    unsafe { create(out_arena, || Ok((Backing::single(buffer, len)?, options(alignment, flags)?))) }
}

/// Creates a two-buffer arena: the tail (persistent allocations) in
/// `persistent`, head and temp (non-persistent) in `nonpersistent`, for
/// example tail in DRAM and head in SRAM. The buffers must not overlap.
/// Other arguments as `nnm_arena_new`.
///
/// Errors: as `nnm_arena_new`, and INVALID_ARGUMENT when the buffers overlap.
///
/// # Safety
/// Each buffer must be NULL or valid for reads and writes of its length
/// until `nnm_arena_free`, and be used meanwhile only through the addresses
/// the arena hands out. `out_arena` must be NULL or valid for writing one
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_new_split(
    persistent: *mut c_void,
    persistent_len: usize,
    nonpersistent: *mut c_void,
    nonpersistent_len: usize,
    alignment: usize,
    flags: u32,
    out_arena: *mut *mut nnm_arena,
) -> Status {
    // SAFETY: the caller promises both buffers are NULL or valid for their
    // lengths while the arena lives, and `out_arena` NULL or writable.
    unsafe {
        create(out_arena, || {
            let backing = Backing::split(persistent, persistent_len, nonpersistent, nonpersistent_len)?;
            Ok((backing, options(alignment, flags)?))
        })
    }
}

/// Creates an arena over `len` bytes that nnmem allocates from the host
/// allocator (zeroed, aligned to at least 4096, so a dry run's
/// `required_bytes` holds for it whenever its `largest_alignment_bytes` is
/// 4096 or less) and frees with the arena. Other arguments as
/// `nnm_arena_new`.
///
/// Errors: as `nnm_arena_new`, INVALID_ARGUMENT for `len` 0, OUT_OF_MEMORY.
///
/// # Safety
/// `out_arena` must be NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_new_owned(
    len: usize,
    alignment: usize,
    flags: u32,
    out_arena: *mut *mut nnm_arena,
) -> Status {
    // SAFETY: the caller promises `out_arena` is NULL or writable.
    unsafe { create(out_arena, || owned(&device::host(), len, alignment, flags)) }
}

/// As `nnm_arena_new_owned`, with the memory from `allocator` (NULL: the
/// host allocator), which must be host-accessible (NNM_DEVICE_HOST_ACCESSIBLE):
/// one allocation of `len` bytes (or more alignment), zeroed by nnmem and
/// given back to the allocator by `nnm_arena_free`. The arena keeps the
/// allocator alive: its handle may be freed first.
///
/// Errors: as `nnm_arena_new_owned`; INVALID_ARGUMENT when `allocator` is
/// not a live handle or not host-accessible (naming it); OUT_OF_MEMORY
/// when the allocator fails (its message, and what the memory was for).
///
/// # Safety
/// `allocator` must be NULL, a freed handle, or a live one;
/// `out_arena` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_new_owned_on(
    allocator: *const nnm_device_allocator,
    len: usize,
    alignment: usize,
    flags: u32,
    out_arena: *mut *mut nnm_arena,
) -> Status {
    // SAFETY: the caller promises `out_arena` is NULL or writable, and
    // `allocator` NULL or a handle (a freed one is refused unread).
    unsafe { create(out_arena, || owned(&allocator_or_host(allocator, "allocator")?, len, alignment, flags)) }
}

/// Creates a dry-run arena: no memory. Every call is checked and accounted
/// as on an arena large enough; the addresses it returns are distinct but
/// must never be dereferenced. `required_bytes` of `nnm_arena_get_sizes`
/// then gives the exact size needed by a buffer aligned to the largest
/// alignment used (and `required_persistent_bytes` /
/// `required_nonpersistent_bytes` those of a split arena).
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (alignment, unknown flags).
///
/// # Safety
/// `out_arena` must be NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_new_dry_run(alignment: usize, flags: u32, out_arena: *mut *mut nnm_arena) -> Status {
    // SAFETY: the caller promises `out_arena` is NULL or writable.
    unsafe { create(out_arena, || Ok((Backing::dry_run(), options(alignment, flags)?))) }
}

// --- categories ------------------------------------------------------------------

/// Registers a named category for allocations (ids after the predefined
/// `nnm_arena_category` values) and writes its id.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (empty, longer than
/// NNM_ARENA_MAX_CATEGORY_NAME bytes, control characters, not UTF-8),
/// ALREADY_EXISTS.
///
/// # Safety
/// `arena` must be NULL or an arena from `nnm_arena_new*` (a freed one is
/// refused without being read), and no other call may use it meanwhile.
/// `name` must be NULL or a NUL-terminated string. `out_id` must be NULL or
/// valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_register_category(
    arena: *mut nnm_arena,
    name: *const c_char,
    out_id: *mut u32,
) -> Status {
    // SAFETY: `arena` is an arena used by no other call, or NULL or freed
    // (refused unread); `name` is NULL or a NUL-terminated string; `out_id`
    // is NULL or writable (the caller's contract).
    unsafe { write_result(|| arena_mut(arena), out_id, "out_id", |a| a.register_category(read_str(name, "name")?)) }
}

/// Writes the number of categories, predefined ones included (valid ids
/// are 0 to count - 1).
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `arena` must be NULL or an arena from `nnm_arena_new*` (a freed one is
/// refused without being read), and no call may change it meanwhile.
/// `out_count` must be NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_category_count(arena: *const nnm_arena, out_count: *mut u32) -> Status {
    // SAFETY: `arena` is an arena no call changes, or NULL or freed (refused
    // unread); `out_count` is NULL or writable (the caller's contract).
    unsafe { handle_query(arena, "arena", out_count, "out_count", |a| Ok(a.names.len() as u32)) }
}

/// The name of category `id`, or NULL (with a last error) for an unknown id
/// or a NULL arena. Valid until the arena is freed.
///
/// # Safety
/// `arena` must be NULL or an arena from `nnm_arena_new*` (a freed one is
/// refused without being read), and no call may change it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_category_name(arena: *const nnm_arena, id: u32) -> *const c_char {
    guard_ptr(|| {
        // SAFETY: `arena` is an arena no call changes, or NULL or freed
        // (refused unread).
        let a = unsafe { arena_ref(arena) }?;
        a.arena.categories().check(id)?;
        Ok(a.names[id as usize].as_ptr().cast_mut())
    })
}

// --- head ------------------------------------------------------------------------

/// Commits a planned `planner`'s plan to the head (the head becomes the
/// largest committed plan) and writes each buffer's address, in the order
/// the buffers were added, to `out_addresses` (`count` entries, at least
/// the planner's buffer count). `out_addresses` may be NULL with `count` 0:
/// the plan is committed and the addresses are the head's start (see
/// `nnm_arena_reserve_head`) plus `nnm_planner_get_offsets`.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (unknown category, the plan's
/// alignment exceeds the arena's), WRONG_STATE (planner not planned, or the
/// head must grow while temp allocations are held), BUFFER_TOO_SMALL
/// (`count`), DOES_NOT_FIT (nothing changes).
///
/// # Safety
/// `arena` must be NULL or an arena from `nnm_arena_new*` (a freed one is
/// refused without being read), and no other call may use it meanwhile.
/// `planner` must be NULL or a planner from `nnm_planner_new` (likewise),
/// and no call may change it meanwhile. `out_addresses` must be NULL or
/// valid for writing `count` pointers.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_commit_plan(
    arena: *mut nnm_arena,
    planner: *const nnm_planner,
    category: u32,
    out_addresses: *mut *mut c_void,
    count: usize,
) -> Status {
    guard(|| {
        // SAFETY: `arena` is an arena used by no other call, or NULL or
        // freed (refused unread).
        let a = unsafe { arena_mut(arena) }?;
        // SAFETY: `planner` is a planner no call changes, or NULL or freed
        // (refused unread).
        let (p, requested) = unsafe { planner_requested(planner) }?;
        let n = p.buffer_count();
        let out = if out_addresses.is_null() && count == 0 {
            None
        } else {
            non_null(out_addresses, "out_addresses")?;
            if count < n {
                return Err(Error::new(
                    Status::BufferTooSmall,
                    format!("the plan has {n} buffers, out_addresses holds {count}"),
                ));
            }
            // SAFETY: the caller promises `out_addresses` is valid for
            // writing `count` >= `n` pointers; MaybeUninit asks nothing of
            // what the C memory holds.
            Some(unsafe { slice_out(out_addresses.cast::<MaybeUninit<*mut c_void>>(), n, "out_addresses") }?)
        };
        let head = a.arena.commit(p, requested, category)?;
        for (slot, &offset) in out.into_iter().flatten().zip(&p.planned()?.offsets) {
            slot.write(a.nonpersistent.to_ptr(head + offset as usize));
        }
        Ok(())
    })
}

// --- reports ---------------------------------------------------------------------

/// Writes the report (`format`: an `nnm_report_format`), NUL-terminated,
/// into `buf` (`len` bytes) and the bytes written (NUL included) to
/// `out_written`. With `buf` NULL and `len` 0 it writes only the size
/// needed.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (format), BUFFER_TOO_SMALL
/// (nothing is written; the message gives the size).
///
/// # Safety
/// `arena` must be NULL or an arena from `nnm_arena_new*` (a freed one is
/// refused without being read), and no call may change it meanwhile. `buf`
/// must be NULL or valid for writing `len` bytes; `out_written` must be
/// NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_report(
    arena: *const nnm_arena,
    format: u32,
    buf: *mut c_char,
    len: usize,
    out_written: *mut usize,
) -> Status {
    guard(|| {
        // SAFETY: `arena` is an arena no call changes, or NULL or freed
        // (refused unread).
        let a = unsafe { arena_ref(arena) }?;
        let text = report(&a.arena, ReportFormat::from_value(format)?);
        // SAFETY: the caller promises `buf` is NULL or writable for `len`
        // bytes and `out_written` NULL or writable.
        unsafe { copy_text(&text, buf, len, out_written, "report") }
    })
}

/// Sends the report (`format`: an `nnm_report_format`) to `write`, one
/// line per call (see `nnm_write_fn`), with `user` passed through.
///
/// Errors: NULL_ARGUMENT (arena or write), INVALID_ARGUMENT (format).
///
/// # Safety
/// `arena` must be NULL or an arena from `nnm_arena_new*` (a freed one is
/// refused without being read), and no call may change it meanwhile.
/// `write` must be NULL or a function that may be called with `user`.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_report_write(
    arena: *const nnm_arena,
    format: u32,
    write: nnm_write_fn,
    user: *mut c_void,
) -> Status {
    guard(|| {
        // SAFETY: `arena` is an arena no call changes, or NULL or freed
        // (refused unread).
        let a = unsafe { arena_ref(arena) }?;
        let format = ReportFormat::from_value(format)?;
        // SAFETY: the caller promises `write` is NULL (refused) or may be
        // called with `user`.
        unsafe { emit_lines(&report(&a.arena, format), write, user) }
    })
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;
    use crate::ffi::nnm_last_error;
    use crate::ffi::plan::{
        nnm_planner_add_buffer, nnm_planner_free, nnm_planner_get_offsets, nnm_planner_new, nnm_planner_plan,
    };
    use std::ffi::CStr;
    use std::ptr::null_mut;

    fn last_error() -> String {
        // SAFETY: nnm_last_error returns a NUL-terminated thread-local string.
        unsafe { CStr::from_ptr(nnm_last_error()) }.to_str().unwrap().to_string()
    }

    fn sizes(a: *const nnm_arena) -> nnm_arena_sizes {
        let mut s = nnm_arena_sizes::default();
        // SAFETY: `a` is a live arena; `s` is writable.
        assert_eq!(unsafe { nnm_arena_get_sizes(a, &mut s) }, Status::Ok);
        s
    }

    #[test]
    fn a_guarded_arena_over_a_caller_buffer_hands_out_pointers_into_it_and_finds_overruns() {
        let mut buffer = vec![0u64; 64]; // 512 B, 8-aligned
        let (base, len) = (buffer.as_mut_ptr().cast::<c_void>(), buffer.len() * 8);
        let mut a = null_mut();
        // SAFETY: `buffer` outlives the arena and is used only through it.
        assert_eq!(unsafe { nnm_arena_new(base, len, 8, NNM_ARENA_GUARD, &mut a) }, Status::Ok);
        let (mut p, mut t) = (null_mut(), null_mut());
        // SAFETY: `a` is live and used by this thread only; `p` and `t` are writable.
        unsafe {
            assert_eq!(nnm_arena_alloc_persistent(a, 16, 0, 0, &mut p), Status::Ok);
            assert_eq!(nnm_arena_alloc_temp(a, 24, 0, 0, &mut t), Status::Ok);
        }
        for q in [p, t] {
            let offset = q as usize - base as usize;
            assert!(offset < len, "{q:p} lies outside the buffer");
        }
        // SAFETY: `t` is a live 24-byte temp allocation; the write stays in it.
        unsafe { t.cast::<u8>().write_bytes(0xab, 24) };
        // SAFETY: `a` is live.
        assert_eq!(unsafe { nnm_arena_check(a) }, Status::Ok);
        // One byte past the allocation: its trailing canary.
        // SAFETY: the byte lies in `buffer` (the canary after `t`).
        unsafe { t.cast::<u8>().add(24).write(0) };
        // SAFETY: `a` is live and used by this thread only.
        unsafe {
            assert_eq!(nnm_arena_check(a), Status::Corrupted);
            assert_eq!(nnm_arena_release_temp(a, t), Status::Ok);
            assert_eq!(nnm_arena_reset_temp(a), Status::Corrupted, "{}", last_error());
            nnm_arena_free(a);
        }
    }

    #[test]
    fn allocation_failures_leave_the_out_pointer_and_the_arena_alone() {
        let mut a = null_mut();
        // SAFETY: `a` is writable.
        assert_eq!(unsafe { nnm_arena_new_owned(64, 0, 0, &mut a) }, Status::Ok);
        let before = sizes(a);
        let untouched = std::ptr::NonNull::<u64>::dangling().as_ptr().cast::<c_void>();
        let mut p = untouched;
        // SAFETY: `a` is live and used by this thread only; `p` is writable.
        assert_eq!(unsafe { nnm_arena_alloc_persistent(a, 4096, 0, 0, &mut p) }, Status::DoesNotFit);
        assert_eq!((p, sizes(a)), (untouched, before));
        // SAFETY: as above; NULL out-pointers are refused before any work.
        assert_eq!(unsafe { nnm_arena_alloc_temp(a, 16, 0, 0, null_mut()) }, Status::NullArgument);
        assert_eq!(last_error(), "out_ptr is NULL");
        assert_eq!(sizes(a), before);
        // SAFETY: `a` is live; NULL is a no-op.
        unsafe {
            nnm_arena_free(a);
            nnm_arena_free(null_mut());
        }
    }

    #[test]
    fn commit_plan_checks_the_address_array_before_it_commits() {
        let (mut a, mut planner) = (null_mut(), null_mut());
        // SAFETY: every out-pointer is writable; the handles are used by this thread only.
        unsafe {
            assert_eq!(nnm_arena_new_dry_run(0, 0, &mut a), Status::Ok);
            assert_eq!(nnm_planner_new(&mut planner), Status::Ok);
            for (size, first, last) in [(32, 0, 1), (16, 1, 2), (48, 2, 3)] {
                assert_eq!(nnm_planner_add_buffer(planner, size, first, last, null_mut()), Status::Ok);
            }
            assert_eq!(nnm_planner_plan(planner), Status::Ok);
        }
        let mut out = [null_mut::<c_void>(); 4];
        // SAFETY: `out` holds 4 pointers; 2 are claimed.
        assert_eq!(unsafe { nnm_arena_commit_plan(a, planner, 0, out.as_mut_ptr(), 2) }, Status::BufferTooSmall);
        assert_eq!(last_error(), "the plan has 3 buffers, out_addresses holds 2");
        let words = [0u64; 5];
        let odd = words.as_ptr().cast::<u8>().wrapping_add(1).cast_mut().cast::<*mut c_void>();
        // SAFETY: refused (misaligned) before anything is written.
        assert_eq!(unsafe { nnm_arena_commit_plan(a, planner, 0, odd, 3) }, Status::InvalidArgument);
        assert_eq!(sizes(a).plan_count, 0, "nothing was committed");
        assert_eq!(out, [null_mut(); 4]);
        // SAFETY: `out` holds 4 pointers.
        assert_eq!(unsafe { nnm_arena_commit_plan(a, planner, 0, out.as_mut_ptr(), 4) }, Status::Ok);
        let mut head = null_mut();
        // SAFETY: `a` is live; `head` is writable.
        assert_eq!(unsafe { nnm_arena_reserve_head(a, 0, 0, &mut head) }, Status::Ok);
        let mut offsets = [0u64; 3];
        // SAFETY: `planner` is live; `offsets` holds 3 values.
        assert_eq!(unsafe { nnm_planner_get_offsets(planner, offsets.as_mut_ptr(), 3) }, Status::Ok);
        let addresses: Vec<usize> = offsets.iter().map(|&o| head as usize + o as usize).collect();
        assert_eq!(out[..3].iter().map(|&q| q as usize).collect::<Vec<_>>(), addresses);
        assert!(out[3].is_null(), "only the plan's buffers are written");
        // SAFETY: both handles are live.
        unsafe {
            nnm_arena_free(a);
            nnm_planner_free(planner);
        }
    }

    #[test]
    fn header_constants_equal_the_core_ones() {
        assert_eq!(NNM_ARENA_DEFAULT_ALIGNMENT, crate::arena::DEFAULT_ALIGNMENT);
        assert_eq!(NNM_ARENA_GUARD_BYTES, crate::arena::CANARY_BYTES);
        assert_eq!(NNM_ARENA_MAX_CATEGORY_NAME, crate::arena::MAX_CATEGORY_NAME);
    }
}
