//! C API of the tensor arena (`nnm_arena_*`): the safe core in
//! `crate::arena` does the address arithmetic; this layer maps addresses to
//! the caller's pointers ([`memory`]) and turns C arguments into typed ones.
//!
//! The calls here exist in both builds, over the same code: making an
//! arena in the caller's memory (`nnm_arena_init`, its layout in [`state`])
//! and everything that uses an arena. The host adds arenas with their
//! records on the heap, over two buffers, over memory nnmem allocates, dry
//! runs, named categories, committing a heap planner's plan and the
//! reports ([`host`]). Handles: on the host every arena is a registered
//! heap handle ([`crate::ffi::handle`]); in the embedded build an arena
//! lives in the head of its state behind a tag ([`placed`]).

#[cfg(feature = "std")]
mod host;
mod memory;
#[cfg(not(feature = "std"))]
mod placed;
mod state;

use core::ffi::{c_int, c_void};

#[cfg(feature = "std")]
pub use self::host::*;
use self::memory::{Backing, CallerMemory, PointerMap};
pub use self::state::{PERSISTENT_RECORD_BYTES, STATE_ALIGNMENT, STATE_HEADER_BYTES, TEMP_RECORD_BYTES};
use super::bare::{misaligned, null_argument};
use crate::arena::{Arena, ArenaOptions, ArenaSizes, Buffers, CategoryStats, Scope};
use crate::status::{Error, Result, Status};

/// Flag of `nnm_arena_new*` and `nnm_arena_init`: keep per-category
/// statistics from the start (`nnm_arena_set_recording` switches it later).
pub const NNM_ARENA_RECORDING: u32 = 1;
/// Flag of `nnm_arena_new*` and `nnm_arena_init`: canaries around every
/// allocation and poison in released temp memory, checked by
/// `nnm_arena_check` and every reset.
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
    arena: Arena<'static, CallerMemory>,
    /// NUL-terminated copies of the category names, for
    /// `nnm_arena_category_name`.
    #[cfg(feature = "std")]
    names: Vec<std::ffi::CString>,
    /// Address-to-pointer maps of the two sides.
    nonpersistent: PointerMap,
    persistent: PointerMap,
    /// Memory nnmem allocated (`nnm_arena_new_owned*`); only held, so that
    /// it goes back to its allocator with the arena (after it: fields drop
    /// in order).
    #[cfg(feature = "std")]
    _owned: Option<crate::pool::device::DeviceBlock>,
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
    /// One copy: `nnm_arena_sizes` is `ArenaSizes` under the C API's field
    /// names (both `repr(C)`, the same `u64` fields in the same order,
    /// checked below), and a field-by-field conversion costs a
    /// microcontroller a few hundred bytes of flash.
    #[inline(always)]
    fn from(s: ArenaSizes) -> Self {
        // SAFETY: both types are `repr(C)` structs of the same size whose
        // fields are all `u64` (the field list below type-checks that) at
        // the same offsets (checked at compile time): every bit pattern of
        // one is a valid value of the other, field for field.
        unsafe { core::mem::transmute::<ArenaSizes, nnm_arena_sizes>(s) }
    }
}

/// Holds `nnm_arena_sizes` to `ArenaSizes`'s layout for the copy above:
/// each pair at the same offset, and every field a `u64`.
macro_rules! same_sizes_layout {
    ($($c:ident = $r:ident),* $(,)?) => {
        const _: () = assert!(core::mem::size_of::<nnm_arena_sizes>() == core::mem::size_of::<ArenaSizes>());
        $(const _: () = assert!(
            core::mem::offset_of!(nnm_arena_sizes, $c) == core::mem::offset_of!(ArenaSizes, $r)
        );)*
        const _: fn(ArenaSizes, nnm_arena_sizes) -> [[u64; 2]; 16] = |r, c| [$([r.$r, c.$c]),*];
    };
}
same_sizes_layout!(
    capacity_bytes = capacity,
    alignment_lost_bytes = alignment_lost,
    head_bytes = head,
    temp_bytes = temp,
    temp_peak_bytes = temp_peak,
    tail_bytes = tail,
    used_bytes = used,
    available_bytes = available,
    available_persistent_bytes = available_persistent,
    required_bytes = required,
    required_nonpersistent_bytes = required_nonpersistent,
    required_persistent_bytes = required_persistent,
    temp_count = temp_count,
    persistent_count = persistent_count,
    plan_count = plan_count,
    largest_alignment_bytes = largest_alignment
);

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

impl From<CategoryStats> for nnm_arena_category_stats {
    fn from(s: CategoryStats) -> Self {
        nnm_arena_category_stats { requested_bytes: s.requested, used_bytes: s.used, count: s.count }
    }
}

// --- the shared paths of the exports ----------------------------------------------

/// The core's calls with what the C side adds: pointers for addresses.
impl nnm_arena {
    /// The arena `make` builds over what `backing` gives (its records on
    /// the heap, `Arena::new`, or in slots, `Arena::in_slots`).
    #[inline]
    fn over(
        backing: Backing,
        make: impl FnOnce(Buffers, CallerMemory) -> Result<Arena<'static, CallerMemory>>,
    ) -> Result<Self> {
        #[cfg(feature = "std")]
        let Backing { buffers, memory, nonpersistent, persistent, owned } = backing;
        #[cfg(not(feature = "std"))]
        let Backing { buffers, memory, nonpersistent, persistent } = backing;
        let arena = make(buffers, memory)?;
        Ok(nnm_arena {
            #[cfg(feature = "std")]
            names: arena.categories().iter().map(|(_, name, _)| host::nul_terminated(name)).collect(),
            arena,
            nonpersistent,
            persistent,
            #[cfg(feature = "std")]
            _owned: owned,
        })
    }

    #[inline(always)]
    fn allocate(&mut self, scope: Scope, size: usize, alignment: usize, category: u32) -> Result<*mut c_void> {
        let addr = self.arena.allocate(scope, size, alignment, category)?;
        Ok(match scope {
            Scope::Persistent => self.persistent.to_ptr(addr),
            Scope::Temp => self.nonpersistent.to_ptr(addr),
        })
    }

    fn reserve_head(&mut self, size: usize, category: u32) -> Result<*mut c_void> {
        Ok(self.nonpersistent.to_ptr(self.arena.reserve_head(size, category)?))
    }
}

/// The status of an export's `body`: on the host panics are caught and the
/// error's message becomes the last error; the embedded build's errors
/// recorded theirs when they were made.
#[inline(always)]
fn status_of(body: impl FnOnce() -> Result<()>) -> Status {
    #[cfg(feature = "std")]
    return crate::ffi::error::guard(body);
    #[cfg(not(feature = "std"))]
    return match body() {
        Ok(()) => Status::Ok,
        Err(e) => e.status(),
    };
}

/// The out-parameter `out` (named `what`), checked non-NULL and aligned
/// before any work, so that a failure leaves everything as it was.
#[inline(always)]
fn out_param<T>(out: *mut T, what: &'static str) -> Result<core::ptr::NonNull<T>> {
    let Some(out) = core::ptr::NonNull::new(out) else {
        return Err(null_argument(what));
    };
    if !out.as_ptr().is_aligned() {
        return Err(misaligned(out.as_ptr() as usize, core::mem::align_of::<T>(), what));
    }
    Ok(out)
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
    what: &'static str,
    body: impl FnOnce(H) -> Result<T>,
) -> Status {
    status_of(|| {
        let handle = open()?;
        let out = out_param(out, what)?;
        let value = body(handle)?;
        // SAFETY: checked non-NULL and aligned; the caller promises it is
        // valid for one write and used by nothing else.
        unsafe { out.as_ptr().write(value) };
        Ok(())
    })
}

/// The arena behind a handle, for reading: NULL, liveness (the registry on
/// the host, the tag in the embedded build) and type checked.
///
/// # Safety
/// `arena` must be NULL, a freed arena (refused unread), or a live arena
/// that no call changes while the reference is used.
#[inline]
unsafe fn arena_ref<'a>(arena: *const nnm_arena) -> Result<&'a nnm_arena> {
    #[cfg(feature = "std")]
    // SAFETY: the caller's promise is `value_ref`'s.
    return unsafe { crate::ffi::handle::value_ref(arena, "arena") };
    #[cfg(not(feature = "std"))]
    // SAFETY: the caller's promise is `placed::get`'s; no call changes a
    // live arena while this shared reference is used.
    return unsafe { placed::get(arena) }.map(|a| unsafe { &*a.as_ptr() });
}

/// The arena behind a handle, for changing it, after the checks of
/// [`arena_ref`].
///
/// # Safety
/// `arena` must be NULL, a freed arena (refused unread), or a live arena
/// that no other call uses while the reference is used.
#[inline]
unsafe fn arena_mut<'a>(arena: *mut nnm_arena) -> Result<&'a mut nnm_arena> {
    #[cfg(feature = "std")]
    // SAFETY: the caller's promise is `value_mut`'s.
    return unsafe { crate::ffi::handle::value_mut(arena, "arena") };
    #[cfg(not(feature = "std"))]
    // SAFETY: the caller's promise is `placed::get`'s; no other call uses a
    // live arena while this reference is used.
    return unsafe { placed::get(arena) }.map(|a| unsafe { &mut *a.as_ptr() });
}

/// As [`arena_mut`] without the host's registry look-up, for the
/// allocation calls: they cost a few nanoseconds, and the look-up would
/// add a large fraction (BENCHMARKS.md, targets (k) and (l)).
///
/// # Safety
/// `arena` must be NULL or a live arena that no other call uses while the
/// reference is used (a freed one is undefined).
#[inline(always)]
unsafe fn arena_hot<'a>(arena: *mut nnm_arena) -> Result<&'a mut nnm_arena> {
    #[cfg(feature = "std")]
    // SAFETY: the caller's promise is `tagged_mut`'s.
    return unsafe { crate::ffi::handle::tagged_mut(arena, "arena") };
    #[cfg(not(feature = "std"))]
    // SAFETY: as in `arena_mut`.
    return unsafe { placed::get(arena) }.map(|a| unsafe { &mut *a.as_ptr() });
}

/// The path of both allocation exports (`PERSISTENT`: which one). On the
/// host each export has its own copy, the scope a constant: the calls are
/// hot, and a copy shared through a run-time scope is slower for both
/// (BENCHMARKS.md, targets (k) and (l)). The embedded build keeps one
/// copy in flash ([`allocate_shared`]).
///
/// # Safety
/// As `nnm_arena_alloc_persistent`'s.
#[cfg(feature = "std")]
#[inline(always)]
unsafe fn allocate<const PERSISTENT: bool>(
    arena: *mut nnm_arena,
    size: usize,
    alignment: usize,
    category: u32,
    out_ptr: *mut *mut c_void,
) -> Status {
    let scope = if PERSISTENT { Scope::Persistent } else { Scope::Temp };
    // SAFETY: `arena` is NULL or a live arena used by no other call;
    // `out_ptr` is NULL or writable (the exports' contract).
    unsafe { write_result(|| arena_hot(arena), out_ptr, "out_ptr", |a| a.allocate(scope, size, alignment, category)) }
}

/// As on the host, through one shared copy.
///
/// # Safety
/// As `nnm_arena_alloc_persistent`'s.
#[cfg(not(feature = "std"))]
#[inline(always)]
unsafe fn allocate<const PERSISTENT: bool>(
    arena: *mut nnm_arena,
    size: usize,
    alignment: usize,
    category: u32,
    out_ptr: *mut *mut c_void,
) -> Status {
    let scope = if PERSISTENT { Scope::Persistent } else { Scope::Temp };
    // SAFETY: the caller's promise is `allocate_shared`'s.
    unsafe { allocate_shared(arena, scope, size, alignment, category, out_ptr) }
}

/// Both allocation exports' path in the embedded build, the scope an
/// argument: one copy in flash.
///
/// # Safety
/// As `nnm_arena_alloc_persistent`'s.
#[cfg(not(feature = "std"))]
#[inline(never)]
unsafe fn allocate_shared(
    arena: *mut nnm_arena,
    scope: Scope,
    size: usize,
    alignment: usize,
    category: u32,
    out_ptr: *mut *mut c_void,
) -> Status {
    // SAFETY: `arena` is NULL or a live arena used by no other call;
    // `out_ptr` is NULL or writable (the exports' contract).
    unsafe { write_result(|| arena_hot(arena), out_ptr, "out_ptr", |a| a.allocate(scope, size, alignment, category)) }
}

/// The options of `alignment` (0: the default) and `flags`.
fn options(alignment: usize, flags: u32) -> Result<ArenaOptions> {
    let unknown = flags & !(NNM_ARENA_RECORDING | NNM_ARENA_GUARD);
    if unknown != 0 {
        return Err(Error::with(Status::InvalidArgument, |t| {
            t.put("unknown flags ");
            t.hex(unknown as usize);
            t.put(" (known: NNM_ARENA_RECORDING, NNM_ARENA_GUARD)");
        }));
    }
    let alignment = if alignment == 0 { NNM_ARENA_DEFAULT_ALIGNMENT } else { alignment };
    let options =
        ArenaOptions { alignment, guard: flags & NNM_ARENA_GUARD != 0, recording: flags & NNM_ARENA_RECORDING != 0 };
    // Before any other argument is looked at: a part the build lacks is the
    // answer, not a state sized for it.
    options.check()?;
    Ok(options)
}

// --- creation in the caller's memory -------------------------------------------

/// Creates an arena over `buffer` (`len` bytes, any address) with its state
/// in `state` (`state_len` bytes, any address): no heap, in both builds.
/// The state holds the arena (`NNM_ARENA_STATE_HEADER_BYTES`), room for
/// `max_temps` temp allocations held at once (a temp allocation released
/// below one still held keeps its record until that one is released too;
/// twice that in guard mode, where released ones are watched too) and, in the rest, one record per
/// persistent allocation: `NNM_ARENA_STATE_BYTES(max_temps,
/// max_persistent)` bytes hold `max_persistent` of them.
/// `NNM_ARENA_TEMP_RECORD_BYTES` and `NNM_ARENA_PERSISTENT_RECORD_BYTES`
/// are the bytes of each record. Alignment and flags as `nnm_arena_new`; a
/// temp or persistent allocation whose records are all in use fails with
/// DOES_NOT_FIT naming them. On the host the handle itself is a small heap
/// allocation (the header's bytes stay unused); in the embedded build it
/// is the state's head. `nnm_arena_free` ends it; both buffers stay the
/// caller's.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (alignment, unknown flags,
/// `state` and `buffer` overlap, guard mode or recording asked of an
/// embedded build made without the feature that holds it), OVERFLOW (a
/// buffer wraps around the address space), DOES_NOT_FIT (`buffer` too
/// small to align its start; `state` too small for the arena and
/// `max_temps` temp records, twice that in guard mode, with the bytes
/// missing; `NNM_ARENA_STATE_BYTES(max_temps, 0)` is always enough). On failure nothing is made and the
/// state's bytes are unspecified.
///
/// # Safety
/// `buffer` and `state` must be NULL or valid for reads and writes of
/// their lengths until `nnm_arena_free`, must not overlap, and be used
/// meanwhile only through the arena. `out_arena` must be NULL or valid for
/// writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_init(
    state: *mut c_void,
    state_len: usize,
    max_temps: u32,
    buffer: *mut c_void,
    len: usize,
    alignment: usize,
    flags: u32,
    out_arena: *mut *mut nnm_arena,
) -> Status {
    let make = || {
        let options = options(alignment, flags)?;
        // SAFETY: the caller promises `buffer` is NULL or valid for `len`
        // bytes while the arena lives, used only through it.
        let backing = unsafe { Backing::single(buffer, len) }?;
        // The records must not share bytes with the arena's buffer, which
        // guard mode writes through its own pointers.
        let (state_start, buffer_start) = (state as usize, buffer as usize);
        if state_len > 0
            && state_start < buffer_start.wrapping_add(len)
            && buffer_start < state_start.wrapping_add(state_len)
        {
            return Err(Error::with(Status::InvalidArgument, |t| {
                t.put("state (");
                t.hex(state_start);
                t.put(", ");
                t.number(state_len);
                t.put(" B) and buffer (");
                t.hex(buffer_start);
                t.put(", ");
                t.number(len);
                t.put(" B) overlap");
            }));
        }
        // SAFETY: the caller promises `state` is NULL or valid for
        // `state_len` bytes while the arena lives, apart from `buffer` and
        // used only through the arena.
        let (head, slots) = unsafe { state::Layout::carve(state, state_len, max_temps, options.guard) }?.into_parts();
        let arena = nnm_arena::over(backing, |buffers, memory| Arena::in_slots(buffers, options, memory, slots))?;
        #[cfg(feature = "std")]
        let _ = head;
        #[cfg(feature = "std")]
        return Ok(crate::ffi::handle::into_handle(arena));
        #[cfg(not(feature = "std"))]
        // SAFETY: `head` is the state's first bytes, aligned and large
        // enough for a placed arena (`Layout::carve`), and valid as long as
        // the arena.
        return Ok(unsafe { placed::place(head, arena) });
    };
    // SAFETY: the caller promises `out_arena` is NULL or writable.
    unsafe { write_result(|| Ok(()), out_arena, "out_arena", |()| make()) }
}

/// Frees an arena (and gives the memory of `nnm_arena_new_owned*` back to
/// its allocator; a caller's buffers and an `nnm_arena_init` state stay the
/// caller's, free to reuse once this returns). NULL is a no-op; a double
/// free is detected and reported through `nnm_last_error()`.
///
/// # Safety
/// `arena` may be any pointer value: only a live arena is freed, others are
/// reported. No other call may use the arena meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_free(arena: *mut nnm_arena) {
    #[cfg(feature = "std")]
    // SAFETY: `free_handle` frees only what the registry holds as a live
    // arena; the caller promises no other call is using it.
    crate::ffi::error::guard_void(|| unsafe { crate::ffi::handle::free_handle(arena) });
    #[cfg(not(feature = "std"))]
    // SAFETY: the caller promises `arena` is NULL, freed, or a live arena
    // no other call uses.
    let _ = status_of(|| unsafe { placed::remove(arena) });
}

// --- settings --------------------------------------------------------------------

/// Switches per-category recording on (`enabled` non-zero) or off.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (switching it on in an embedded
/// build without the `arena-recording` feature; nothing changes).
///
/// # Safety
/// `arena` must be NULL or an arena from `nnm_arena_new*` or `nnm_arena_init` (a freed one is
/// refused without being read), and no other call may use it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_set_recording(arena: *mut nnm_arena, enabled: c_int) -> Status {
    // SAFETY: `arena` is an arena used by no other call, or NULL or freed
    // (refused unread).
    status_of(|| unsafe { arena_mut(arena) }?.arena.set_recording(enabled != 0))
}

/// Writes what recording counted for category `id` (zeros in an embedded
/// build without recording).
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (unknown id).
///
/// # Safety
/// `arena` must be NULL or an arena from `nnm_arena_new*` or `nnm_arena_init` (a freed one is
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
    unsafe { write_result(|| arena_ref(arena), out_stats, "out_stats", |a| Ok(a.arena.category_stats(id)?.into())) }
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
/// `arena` must be NULL or a live arena from `nnm_arena_new*` or `nnm_arena_init` (only its
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
    unsafe { allocate::<true>(arena, size, alignment, category, out_ptr) }
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
    unsafe { allocate::<false>(arena, size, alignment, category, out_ptr) }
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
/// `arena` must be NULL or a live arena from `nnm_arena_new*` or `nnm_arena_init` (only its
/// type tag is checked: a freed arena is undefined), and no other call may
/// use it meanwhile. `ptr` is only compared, never read.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_release_temp(arena: *mut nnm_arena, ptr: *const c_void) -> Status {
    status_of(|| {
        // SAFETY: `arena` is NULL or a live arena used by no other call.
        let a = unsafe { arena_hot(arena) }?;
        if ptr.is_null() {
            return Err(null_argument("ptr"));
        }
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
/// `arena` must be NULL or an arena from `nnm_arena_new*` or `nnm_arena_init` (a freed one is
/// refused without being read), and no other call may use it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_reset_temp(arena: *mut nnm_arena) -> Status {
    // SAFETY: `arena` is an arena used by no other call, or NULL or freed
    // (refused unread).
    status_of(|| unsafe { arena_mut(arena) }?.arena.reset_temp())
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
/// `arena` must be NULL or an arena from `nnm_arena_new*` or `nnm_arena_init` (a freed one is
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

/// Empties the head: every committed plan is dropped (their addresses must
/// no longer be used). In guard mode it first checks every guard.
///
/// Errors: NULL_ARGUMENT, WRONG_STATE (temp allocations held), CORRUPTED.
///
/// # Safety
/// `arena` must be NULL or an arena from `nnm_arena_new*` or `nnm_arena_init` (a freed one is
/// refused without being read), and no other call may use it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_reset_head(arena: *mut nnm_arena) -> Status {
    // SAFETY: `arena` is an arena used by no other call, or NULL or freed
    // (refused unread).
    status_of(|| unsafe { arena_mut(arena) }?.arena.reset_head())
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
/// `arena` must be NULL or an arena from `nnm_arena_new*` or `nnm_arena_init` (a freed one is
/// refused without being read), and no call may change it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_check(arena: *const nnm_arena) -> Status {
    // SAFETY: `arena` is an arena no call changes, or NULL or freed (refused
    // unread).
    status_of(|| unsafe { arena_ref(arena) }?.arena.check())
}

/// Writes the sizes of the sections and the exact size needed.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `arena` must be NULL or an arena from `nnm_arena_new*` or `nnm_arena_init` (a freed one is
/// refused without being read), and no call may change it meanwhile.
/// `out_sizes` must be NULL or valid for writing one `nnm_arena_sizes`.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_get_sizes(arena: *const nnm_arena, out_sizes: *mut nnm_arena_sizes) -> Status {
    // SAFETY: `arena` is an arena no call changes, or NULL or freed (refused
    // unread); `out_sizes` is NULL or writable (the caller's contract).
    unsafe { write_result(|| arena_ref(arena), out_sizes, "out_sizes", |a| Ok(a.arena.sizes().into())) }
}
