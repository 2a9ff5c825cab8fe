//! C API of the tensor arena (`nnm_arena_*`): the safe core in
//! `crate::arena` does the address arithmetic; this layer maps addresses to
//! the caller's pointers ([`memory`]) and turns C arguments into typed ones
//! through the audited helpers of `args` and `handle`.

mod memory;

use std::ffi::{c_char, c_int, c_void, CString};
use std::mem::MaybeUninit;

use self::memory::{owned_block, Backing, CallerMemory, PointerMap};
use super::args::{handle_query, handle_update, non_null, out_param, read_str, slice_out};
use super::device::{allocator_or_host, nnm_device_allocator};
use super::error::{guard, guard_ptr, guard_void};
use super::handle::{free_handle, into_handle, tagged_mut, value_mut, value_ref, HandleType};
use super::plan::{nnm_planner, planner_requested};
use super::text::{copy_text, emit_lines, nnm_write_fn};
use crate::arena::{check_alignment, report, Arena, ArenaOptions, ArenaSizes, CategoryStats, ReportFormat};
use crate::pool::device::{self, DeviceBlock, SharedAllocator};
use crate::status::{Error, Result, Status};

/// Flag of `nnm_arena_new*`: keep per-category statistics from the start
/// (`nnm_arena_set_recording` switches it later).
pub const NNM_ARENA_RECORDING: u32 = 1;
/// Flag of `nnm_arena_new*`: canaries around every allocation and poison in
/// released temp memory, checked by `nnm_arena_check` and every reset.
pub const NNM_ARENA_GUARD: u32 = 2;
/// The alignment used when 0 is passed.
pub const NNM_ARENA_DEFAULT_ALIGNMENT: usize = 16;
/// Bytes of each guard canary (guard mode puts one before and one after
/// every allocation, and one after the head).
pub const NNM_ARENA_GUARD_BYTES: usize = 16;
/// Longest category name, in bytes.
pub const NNM_ARENA_MAX_CATEGORY_NAME: usize = 64;

/// A tensor arena over caller memory, memory nnmem allocates, or no memory
/// (dry run). Not thread-safe: calls on one arena must not overlap;
/// functions taking `const nnm_arena *` may run concurrently with each
/// other. Every `nnm_arena_*` call but the three allocation calls checks
/// that the arena is live: on a freed arena it returns INVALID_ARGUMENT
/// (NULL for `nnm_arena_category_name`) without reading it, unless a new
/// arena took over its address (that is the arena it then acts on).
/// `nnm_arena_alloc_persistent`, `nnm_arena_alloc_temp` and
/// `nnm_arena_release_temp` are hot and only check a type tag: on a freed
/// arena they are undefined.
pub struct nnm_arena {
    arena: Arena<CallerMemory>,
    /// NUL-terminated copies of the category names, for
    /// `nnm_arena_category_name`.
    names: Vec<CString>,
    /// Address-to-pointer maps of the two sides.
    nonpersistent: PointerMap,
    persistent: PointerMap,
    /// Memory nnmem allocated (`nnm_arena_new_owned*`); only held, so that
    /// it goes back to its allocator with the arena (after it: fields drop
    /// in order).
    _owned: Option<DeviceBlock>,
}

/// Sizes of an arena's sections and the size it needs
/// (`nnm_arena_get_sizes`).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct nnm_arena_sizes {
    /// Bytes of the caller's buffer(s); 0 for a dry run.
    pub capacity_bytes: u64,
    /// Bytes lost aligning the start up to the arena's alignment.
    pub alignment_lost_bytes: u64,
    /// The head: the largest plan or reservation committed.
    pub head_bytes: u64,
    /// Temp bytes in use now.
    pub temp_bytes: u64,
    /// The most temp bytes ever in use at once.
    pub temp_peak_bytes: u64,
    /// The tail (persistent allocations), alignment padding included.
    pub tail_bytes: u64,
    /// head + temp + tail: TFLite Micro's "used bytes", which leaves out
    /// the temp peak and the alignment loss.
    pub used_bytes: u64,
    /// The largest temp allocation (default alignment) that fits now.
    pub available_bytes: u64,
    /// The largest persistent allocation (default alignment) that fits now.
    pub available_persistent_bytes: u64,
    /// The exact size that would have sufficed for every call so far: an
    /// arena of this size at the same start succeeds, one byte less fails.
    /// For a dry run: for a buffer aligned to the largest alignment used.
    /// Split arenas: the sum of the two below.
    pub required_bytes: u64,
    /// The non-persistent side alone (alignment loss, head, temp peak): the
    /// non-persistent buffer of a split arena.
    pub required_nonpersistent_bytes: u64,
    /// The persistent side alone: the persistent buffer of a split arena.
    pub required_persistent_bytes: u64,
    /// Temp allocations held.
    pub temp_count: u64,
    /// Persistent allocations made.
    pub persistent_count: u64,
    /// Plans and head reservations committed since the last head reset.
    pub plan_count: u64,
    /// The largest alignment any call used (at least the arena's). A dry
    /// run's sizes hold for buffers whose start is aligned to this (and for
    /// the same alignment and flags as the dry run's).
    pub largest_alignment_bytes: u64,
}

impl From<ArenaSizes> for nnm_arena_sizes {
    fn from(s: ArenaSizes) -> Self {
        nnm_arena_sizes {
            capacity_bytes: s.capacity,
            alignment_lost_bytes: s.alignment_lost,
            head_bytes: s.head,
            temp_bytes: s.temp,
            temp_peak_bytes: s.temp_peak,
            tail_bytes: s.tail,
            used_bytes: s.used,
            available_bytes: s.available,
            available_persistent_bytes: s.available_persistent,
            required_bytes: s.required,
            required_nonpersistent_bytes: s.required_nonpersistent,
            required_persistent_bytes: s.required_persistent,
            temp_count: s.temp_count,
            persistent_count: s.persistent_count,
            plan_count: s.plan_count,
            largest_alignment_bytes: s.largest_alignment,
        }
    }
}

/// What recording counted for one category (`nnm_arena_get_category`).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct nnm_arena_category_stats {
    /// Bytes asked for: the sizes passed to the calls (for a committed plan,
    /// its buffers' sizes as added, before the planner's alignment
    /// rounding).
    pub requested_bytes: u64,
    /// Bytes taken, alignment padding and guard bytes included. For head
    /// commits: the plan's span (its peak), so requested minus used is
    /// what reuse saved (less the alignment rounding); head lines do not
    /// add up to the head, which is the largest plan.
    pub used_bytes: u64,
    /// Allocations (for a committed plan: all its buffers, zero-size and
    /// never-used ones included; for `nnm_arena_reserve_head`: one).
    pub count: u64,
}

// --- the shared paths of the exports ----------------------------------------------

// SAFETY: no other handle type is named "nnm_arena".
unsafe impl HandleType for nnm_arena {
    const NAME: &'static str = "nnm_arena";
}

/// The core's calls with what the C side adds: pointers for addresses, C
/// strings for category names.
impl nnm_arena {
    #[inline(always)]
    fn alloc_persistent(&mut self, size: usize, alignment: usize, category: u32) -> Result<*mut c_void> {
        Ok(self.persistent.to_ptr(self.arena.alloc_persistent(size, alignment, category)?))
    }

    #[inline(always)]
    fn alloc_temp(&mut self, size: usize, alignment: usize, category: u32) -> Result<*mut c_void> {
        Ok(self.nonpersistent.to_ptr(self.arena.alloc_temp(size, alignment, category)?))
    }

    fn reserve_head(&mut self, size: usize, category: u32) -> Result<*mut c_void> {
        Ok(self.nonpersistent.to_ptr(self.arena.reserve_head(size, category)?))
    }

    fn register_category(&mut self, name: &str) -> Result<u32> {
        let id = self.arena.register_category(name)?;
        self.names.push(nul_terminated(name));
        Ok(id)
    }
}

/// The arena behind a handle, for reading, after NULL, registry and tag
/// checks.
///
/// # Safety
/// `arena` must be NULL, a freed arena (refused unread), or a live arena
/// that no call changes while the reference is used.
#[inline]
unsafe fn arena_ref<'a>(arena: *const nnm_arena) -> Result<&'a nnm_arena> {
    // SAFETY: the caller's promise is `value_ref`'s.
    unsafe { value_ref(arena, "arena") }
}

/// The arena behind a handle, for changing it, after NULL, registry and
/// tag checks.
///
/// # Safety
/// `arena` must be NULL, a freed arena (refused unread), or a live arena
/// that no other call uses while the reference is used.
#[inline]
unsafe fn arena_mut<'a>(arena: *mut nnm_arena) -> Result<&'a mut nnm_arena> {
    // SAFETY: the caller's promise is `value_mut`'s.
    unsafe { value_mut(arena, "arena") }
}

/// As [`arena_mut`] without the registry look-up, for the allocation calls:
/// they cost a few nanoseconds, and the look-up would add a large fraction
/// (BENCHMARKS.md, targets (k) and (l)).
///
/// # Safety
/// `arena` must be NULL or a live arena that no other call uses while the
/// reference is used (a freed one is undefined).
#[inline(always)]
unsafe fn arena_hot<'a>(arena: *mut nnm_arena) -> Result<&'a mut nnm_arena> {
    // SAFETY: the caller's promise is `tagged_mut`'s.
    unsafe { tagged_mut(arena, "arena") }
}

/// The path of every export that writes one result: `open` checks the
/// handle, then the required out-parameter `out` (named `what`) is checked,
/// `body` runs, and its result is written only on success.
///
/// # Safety
/// `out` must be NULL or valid for writing one `T`, and used by nothing
/// else during the call.
#[inline(always)]
unsafe fn write_result<H, T>(
    open: impl FnOnce() -> Result<H>,
    out: *mut T,
    what: &str,
    body: impl FnOnce(H) -> Result<T>,
) -> Status {
    guard(|| {
        let handle = open()?;
        // SAFETY: the caller promises `out` is NULL or valid for one write.
        let out = unsafe { out_param(out, what) }?;
        out.write(body(handle)?);
        Ok(())
    })
}

/// The path of the `nnm_arena_new*` exports: checks `out_arena`, makes the
/// arena over what `parts` gives, and writes its handle.
///
/// # Safety
/// As [`write_result`], for `out_arena`.
#[inline]
unsafe fn create(out_arena: *mut *mut nnm_arena, parts: impl FnOnce() -> Result<(Backing, ArenaOptions)>) -> Status {
    let make = || {
        let (backing, options) = parts()?;
        let Backing { buffers, memory, nonpersistent, persistent, owned } = backing;
        let arena = Arena::new(buffers, options, memory)?;
        let names = arena.categories().iter().map(|(_, name, _)| nul_terminated(name)).collect();
        Ok(into_handle(nnm_arena { arena, names, nonpersistent, persistent, _owned: owned }))
    };
    // SAFETY: the caller's promise about `out_arena` is `write_result`'s.
    unsafe { write_result(|| Ok(()), out_arena, "out_arena", |()| make()) }
}

/// A category name as the C string `nnm_arena_category_name` returns.
fn nul_terminated(name: &str) -> CString {
    CString::new(name).expect("category names have no NUL (checked at registration)")
}

fn options(alignment: usize, flags: u32) -> Result<ArenaOptions> {
    if flags & !(NNM_ARENA_RECORDING | NNM_ARENA_GUARD) != 0 {
        return Err(Error::invalid(format!(
            "unknown flags {:#x} (known: NNM_ARENA_RECORDING, NNM_ARENA_GUARD)",
            flags & !(NNM_ARENA_RECORDING | NNM_ARENA_GUARD)
        )));
    }
    let alignment = if alignment == 0 { NNM_ARENA_DEFAULT_ALIGNMENT } else { alignment };
    check_alignment(alignment)?;
    Ok(ArenaOptions { alignment, guard: flags & NNM_ARENA_GUARD != 0, recording: flags & NNM_ARENA_RECORDING != 0 })
}

/// The parts of an arena over memory nnmem allocates: the options first, as
/// the block's alignment comes from them.
fn owned(allocator: &SharedAllocator, len: usize, alignment: usize, flags: u32) -> Result<(Backing, ArenaOptions)> {
    let options = options(alignment, flags)?;
    Ok((Backing::owned(owned_block(allocator, len, options.alignment)?)?, options))
}

impl From<CategoryStats> for nnm_arena_category_stats {
    fn from(s: CategoryStats) -> Self {
        nnm_arena_category_stats { requested_bytes: s.requested, used_bytes: s.used, count: s.count }
    }
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

/// Frees an arena (and gives the memory of `nnm_arena_new_owned*` back to
/// its allocator; a caller's buffers stay the caller's). NULL is a no-op; a double free is detected
/// and reported through `nnm_last_error()`.
///
/// # Safety
/// `arena` may be any pointer value: only a live arena is freed, others are
/// reported. No other call may use the arena meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_free(arena: *mut nnm_arena) {
    // SAFETY: `free_handle` frees only what the registry holds as a live
    // arena; the caller promises no other call is using it.
    guard_void(|| unsafe { free_handle(arena) })
}

// --- settings and categories -------------------------------------------------------

/// Switches per-category recording on (`enabled` non-zero) or off.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `arena` must be NULL or an arena from `nnm_arena_new*` (a freed one is
/// refused without being read), and no other call may use it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_set_recording(arena: *mut nnm_arena, enabled: c_int) -> Status {
    // SAFETY: `arena` is an arena used by no other call, or NULL or freed
    // (refused unread).
    guard(|| unsafe { arena_mut(arena) }.map(|a| a.arena.set_recording(enabled != 0)))
}

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

/// Writes what recording counted for category `id`.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (unknown id).
///
/// # Safety
/// `arena` must be NULL or an arena from `nnm_arena_new*` (a freed one is
/// refused without being read), and no call may change it meanwhile.
/// `out_stats` must be NULL or valid for writing one `nnm_arena_category_stats`.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_get_category(
    arena: *const nnm_arena,
    id: u32,
    out_stats: *mut nnm_arena_category_stats,
) -> Status {
    // SAFETY: `arena` is an arena no call changes, or NULL or freed (refused
    // unread); `out_stats` is NULL or writable (the caller's contract).
    unsafe { handle_query(arena, "arena", out_stats, "out_stats", |a| Ok(a.arena.category_stats(id)?.into())) }
}

// --- allocation ------------------------------------------------------------------

/// Allocates `size` bytes from the tail (persistent: never freed on its
/// own), aligned to `alignment` (0: the arena's; a power of two up to 2^62,
/// as for `nnm_arena_new`), counted under `category`, and writes the
/// address.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (size 0, alignment as for
/// `nnm_arena_new`, unknown category), OVERFLOW (size), DOES_NOT_FIT
/// ("requested X B, available Y B, missing Z B", Z being what the arena
/// lacks; nothing changes).
///
/// # Safety
/// `arena` must be NULL or a live arena from `nnm_arena_new*` (only its
/// type tag is checked: a freed arena is undefined), and no other call may
/// use it meanwhile. `out_ptr` must be NULL or valid for writing one
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_alloc_persistent(
    arena: *mut nnm_arena,
    size: usize,
    alignment: usize,
    category: u32,
    out_ptr: *mut *mut c_void,
) -> Status {
    // SAFETY: `arena` is NULL or a live arena used by no other call;
    // `out_ptr` is NULL or writable (the caller's contract).
    unsafe { write_result(|| arena_hot(arena), out_ptr, "out_ptr", |a| a.alloc_persistent(size, alignment, category)) }
}

/// Allocates `size` temp bytes above the head, aligned to `alignment` (0:
/// the arena's), counted under `category`, and writes the address. Release
/// it with `nnm_arena_release_temp`; `nnm_arena_reset_temp` ends the scope.
///
/// Errors: as `nnm_arena_alloc_persistent`.
///
/// # Safety
/// As `nnm_arena_alloc_persistent`.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_alloc_temp(
    arena: *mut nnm_arena,
    size: usize,
    alignment: usize,
    category: u32,
    out_ptr: *mut *mut c_void,
) -> Status {
    // SAFETY: as in `nnm_arena_alloc_persistent`.
    unsafe { write_result(|| arena_hot(arena), out_ptr, "out_ptr", |a| a.alloc_temp(size, alignment, category)) }
}

/// Releases a temp allocation. Its bytes are reused once every temp
/// allocation above it is released too. In guard mode its canaries are
/// checked (damage is reported by the next check or reset) and its bytes
/// poisoned: a write to them before they are handed out again is reported
/// by the next check or reset. A stale pointer whose bytes were reclaimed
/// and handed out again releases that new allocation.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (not a temp allocation of this
/// arena, or already released).
///
/// # Safety
/// `arena` must be NULL or a live arena from `nnm_arena_new*` (only its
/// type tag is checked: a freed arena is undefined), and no other call may
/// use it meanwhile. `ptr` is only compared, never read.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_release_temp(arena: *mut nnm_arena, ptr: *const c_void) -> Status {
    guard(|| {
        // SAFETY: `arena` is NULL or a live arena used by no other call.
        let a = unsafe { arena_hot(arena) }?;
        non_null(ptr, "ptr")?;
        a.arena.release_temp(ptr as usize)
    })
}

/// Ends the temp scope. In guard mode it first checks every guard.
///
/// Errors: NULL_ARGUMENT, WRONG_STATE (temp allocations still held; the
/// message says how many), CORRUPTED (a damaged guard; the message names
/// the allocation and its category). Nothing changes on error; after
/// CORRUPTED the arena's contents are suspect and every later reset fails
/// the same way, so fix the overrun and start over with a new arena.
///
/// # Safety
/// `arena` must be NULL or an arena from `nnm_arena_new*` (a freed one is
/// refused without being read), and no other call may use it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_reset_temp(arena: *mut nnm_arena) -> Status {
    // SAFETY: `arena` is an arena used by no other call, or NULL or freed
    // (refused unread).
    unsafe { handle_update(arena, "arena", |a| a.arena.reset_temp()) }
}

// --- head ------------------------------------------------------------------------

/// Makes the head at least `size` bytes (for a caller's own plan) and
/// writes its start. Growing it while temp allocations are held is an
/// error. Counted under `category` as one allocation of `size` bytes (and
/// in `plan_count`). Size 0 only asks where the head starts: it writes the
/// start (also while temp allocations are held) and changes and records
/// nothing.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (unknown category), OVERFLOW
/// (size), WRONG_STATE (temp held), DOES_NOT_FIT (nothing changes).
///
/// # Safety
/// `arena` must be NULL or an arena from `nnm_arena_new*` (a freed one is
/// refused without being read), and no other call may use it meanwhile.
/// `out_head` must be NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_reserve_head(
    arena: *mut nnm_arena,
    size: usize,
    category: u32,
    out_head: *mut *mut c_void,
) -> Status {
    // SAFETY: `arena` is an arena used by no other call, or NULL or freed
    // (refused unread); `out_head` is NULL or writable (the caller's
    // contract).
    unsafe { write_result(|| arena_mut(arena), out_head, "out_head", |a| a.reserve_head(size, category)) }
}

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

/// Empties the head: every committed plan is dropped (their addresses must
/// no longer be used). In guard mode it first checks every guard.
///
/// Errors: NULL_ARGUMENT, WRONG_STATE (temp allocations held), CORRUPTED.
///
/// # Safety
/// `arena` must be NULL or an arena from `nnm_arena_new*` (a freed one is
/// refused without being read), and no other call may use it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_reset_head(arena: *mut nnm_arena) -> Status {
    // SAFETY: `arena` is an arena used by no other call, or NULL or freed
    // (refused unread).
    unsafe { handle_update(arena, "arena", |a| a.arena.reset_head()) }
}

// --- queries ---------------------------------------------------------------------

/// Guard mode: checks every canary and the poison of released temp memory.
/// Returns OK without guard mode or for a dry run.
///
/// Errors: NULL_ARGUMENT, CORRUPTED (the message names the first damaged
/// allocation, its category and offset, and counts the others; a write
/// into released temp memory names the released allocation it hit, as
/// "released temp allocation #3 (category 'Temp scratch data', 64 B at
/// offset 128 of the arena) was written after it was released: ...", or
/// only the offsets where that memory was partly handed out again). Temp
/// allocations are numbered from 1 in the order they were made, over the
/// arena's life (a reset does not restart the count), so a number names one
/// allocation.
///
/// # Safety
/// `arena` must be NULL or an arena from `nnm_arena_new*` (a freed one is
/// refused without being read), and no call may change it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_check(arena: *const nnm_arena) -> Status {
    // SAFETY: `arena` is an arena no call changes, or NULL or freed (refused
    // unread).
    guard(|| unsafe { arena_ref(arena) }?.arena.check())
}

/// Writes the sizes of the sections and the exact size needed.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `arena` must be NULL or an arena from `nnm_arena_new*` (a freed one is
/// refused without being read), and no call may change it meanwhile.
/// `out_sizes` must be NULL or valid for writing one `nnm_arena_sizes`.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_get_sizes(arena: *const nnm_arena, out_sizes: *mut nnm_arena_sizes) -> Status {
    // SAFETY: `arena` is an arena no call changes, or NULL or freed (refused
    // unread); `out_sizes` is NULL or writable (the caller's contract).
    unsafe { handle_query(arena, "arena", out_sizes, "out_sizes", |a| Ok(a.arena.sizes().into())) }
}

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
