//! C API of the tensor arena (`nnm_arena_*`): the safe core in
//! `crate::arena` does the address arithmetic; this layer maps addresses to
//! the caller's pointers and reads and writes guard bytes through them.

// Not yet converted onto the audited helpers of `args` and `handle`: the
// C layer's lints (src/ffi/mod.rs) are relaxed here until it is.
#![allow(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ffi::{c_char, c_int, c_void, CString};

use super::error::{guard, guard_ptr, guard_void, non_null, read_str, write_out};
use super::handle::{free_handle, into_handle, tagged_mut, value_mut, value_ref, HandleType};
use super::plan::{nnm_planner, planner_requested};
use super::text::{copy_text, emit_lines, nnm_write_fn};
use crate::arena::{check_alignment, report, Arena, ArenaOptions, ArenaSizes, Buffers, Memory, ReportFormat, Span};
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
    /// Memory nnmem allocated (`nnm_arena_new_owned`); only held, so that
    /// it is freed with the arena.
    _owned: Option<OwnedBlock>,
}

// SAFETY: no other handle type is named "nnm_arena".
unsafe impl HandleType for nnm_arena {
    const NAME: &'static str = "nnm_arena";
}

/// Alignment of the memory `nnm_arena_new_owned` allocates: a page, more
/// than any call is likely to ask for, so dry-run sizes carry over.
const OWNED_ALIGNMENT: usize = 4096;

/// Memory nnmem allocated for an arena; freed when dropped (after the
/// arena, which is declared before it in `nnm_arena`).
struct OwnedBlock {
    ptr: *mut u8,
    layout: Layout,
}

impl Drop for OwnedBlock {
    fn drop(&mut self) {
        // SAFETY: allocated in `nnm_arena_new_owned` with this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

/// Maps the core's numeric addresses (a pointer's address) on one side
/// back to pointers derived from the caller's pointer, so that they keep
/// its provenance. A dry run maps onto a NULL base: the pointers it returns
/// are distinct but must never be dereferenced.
#[derive(Copy, Clone)]
struct PointerMap {
    base: *mut u8,
}

impl PointerMap {
    fn of(base: *mut u8) -> Self {
        PointerMap { base }
    }

    #[inline]
    fn to_ptr(self, addr: usize) -> *mut c_void {
        self.base.wrapping_add(addr.wrapping_sub(self.base as usize)).cast()
    }
}

/// The caller's buffers as the core's [`Memory`]: guard bytes are read and
/// written through the pointers it was made with.
struct CallerMemory {
    /// `(address, pointer, length)` of each buffer.
    regions: Vec<(usize, *mut u8, usize)>,
}

impl CallerMemory {
    fn pointer(&self, addr: usize, len: usize) -> *mut u8 {
        for &(start, ptr, size) in &self.regions {
            if addr >= start && addr - start <= size && len <= size - (addr - start) {
                return ptr.wrapping_add(addr - start);
            }
        }
        panic!("arena address {addr:#x} (+{len} B) lies outside the arena's buffers");
    }
}

impl Memory for CallerMemory {
    fn is_backed(&self) -> bool {
        !self.regions.is_empty()
    }
    fn write(&mut self, addr: usize, bytes: &[u8]) {
        // SAFETY: the range lies in a caller buffer valid for writes (checked
        // by `pointer`; validity is the caller's promise at creation).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.pointer(addr, bytes.len()), bytes.len()) }
    }
    fn fill(&mut self, addr: usize, len: usize, byte: u8) {
        // SAFETY: as in `write`.
        unsafe { std::ptr::write_bytes(self.pointer(addr, len), byte, len) }
    }
    fn read(&self, addr: usize, out: &mut [u8]) {
        // SAFETY: as in `write`, for reads.
        unsafe { std::ptr::copy_nonoverlapping(self.pointer(addr, out.len()), out.as_mut_ptr(), out.len()) }
    }
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

// --- creation ------------------------------------------------------------------

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

fn span_of(ptr: *mut c_void, len: usize, what: &str) -> Result<Span> {
    non_null(ptr, what)?;
    Span::new(ptr as usize, len)
}

fn make(
    buffers: Buffers,
    options: ArenaOptions,
    regions: Vec<(usize, *mut u8, usize)>,
    nonpersistent: PointerMap,
    persistent: PointerMap,
    owned: Option<OwnedBlock>,
) -> Result<*mut nnm_arena> {
    let arena = Arena::new(buffers, options, CallerMemory { regions })?;
    let names = arena.categories().iter().map(|(_, name, _)| c_name(name)).collect();
    Ok(into_handle(nnm_arena { arena, names, nonpersistent, persistent, _owned: owned }))
}

fn c_name(name: &str) -> CString {
    CString::new(name).expect("category names have no NUL (checked at registration)")
}

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
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_new(
    buffer: *mut c_void,
    len: usize,
    alignment: usize,
    flags: u32,
    out_arena: *mut *mut nnm_arena,
) -> Status {
    guard(|| {
        non_null(out_arena, "out_arena")?;
        let span = span_of(buffer, len, "buffer")?;
        let map = PointerMap::of(buffer.cast());
        let handle = make(
            Buffers::Single(span),
            options(alignment, flags)?,
            vec![(span.start, buffer.cast(), len)],
            map,
            map,
            None,
        )?;
        write_out(out_arena, handle);
        Ok(())
    })
}

/// Creates a two-buffer arena: the tail (persistent allocations) in
/// `persistent`, head and temp (non-persistent) in `nonpersistent`, for
/// example tail in DRAM and head in SRAM. The buffers must not overlap.
/// Other arguments as `nnm_arena_new`.
///
/// Errors: as `nnm_arena_new`, and INVALID_ARGUMENT when the buffers overlap.
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
    guard(|| {
        non_null(out_arena, "out_arena")?;
        let p = span_of(persistent, persistent_len, "persistent")?;
        let np = span_of(nonpersistent, nonpersistent_len, "nonpersistent")?;
        let (pm, npm) = (PointerMap::of(persistent.cast()), PointerMap::of(nonpersistent.cast()));
        let regions = vec![(p.start, persistent.cast(), p.len), (np.start, nonpersistent.cast(), np.len)];
        let buffers = Buffers::Split { persistent: p, nonpersistent: np };
        let handle = make(buffers, options(alignment, flags)?, regions, npm, pm, None)?;
        write_out(out_arena, handle);
        Ok(())
    })
}

/// Creates an arena over `len` bytes that nnmem allocates (zeroed, aligned
/// to at least 4096, so a dry run's `required_bytes` holds for it whenever
/// its `largest_alignment_bytes` is 4096 or less) and frees with the arena.
/// Other arguments as `nnm_arena_new`.
///
/// Errors: as `nnm_arena_new`, INVALID_ARGUMENT for `len` 0, OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_new_owned(
    len: usize,
    alignment: usize,
    flags: u32,
    out_arena: *mut *mut nnm_arena,
) -> Status {
    guard(|| {
        non_null(out_arena, "out_arena")?;
        let options = options(alignment, flags)?;
        if len == 0 {
            return Err(Error::invalid("len is 0"));
        }
        let layout = Layout::from_size_align(len, options.alignment.max(OWNED_ALIGNMENT))
            .map_err(|_| Error::overflow(format!("len {len} B is too large")))?;
        let ptr = alloc_zeroed(layout);
        if ptr.is_null() {
            return Err(Error::new(Status::OutOfMemory, format!("could not allocate {len} B for the arena")));
        }
        let block = OwnedBlock { ptr, layout }; // freed on every error below
        let span = Span::new(ptr as usize, len)?;
        let map = PointerMap::of(ptr);
        let handle = make(Buffers::Single(span), options, vec![(span.start, ptr, len)], map, map, Some(block))?;
        write_out(out_arena, handle);
        Ok(())
    })
}

/// Creates a dry-run arena: no memory. Every call is checked and accounted
/// as on an arena large enough; the addresses it returns are distinct but
/// must never be dereferenced. `required_bytes` of `nnm_arena_get_sizes`
/// then gives the exact size needed by a buffer aligned to the largest
/// alignment used (and `required_persistent_bytes` /
/// `required_nonpersistent_bytes` those of a split arena).
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (alignment, unknown flags).
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_new_dry_run(alignment: usize, flags: u32, out_arena: *mut *mut nnm_arena) -> Status {
    guard(|| {
        non_null(out_arena, "out_arena")?;
        let map = PointerMap::of(std::ptr::null_mut());
        let handle = make(Buffers::DryRun, options(alignment, flags)?, Vec::new(), map, map, None)?;
        write_out(out_arena, handle);
        Ok(())
    })
}

/// Frees an arena (and the memory of `nnm_arena_new_owned`; a caller's
/// buffers stay the caller's). NULL is a no-op; a double free is detected
/// and reported through `nnm_last_error()`.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_free(arena: *mut nnm_arena) {
    guard_void(|| free_handle(arena))
}

// --- settings and categories -------------------------------------------------------

#[inline]
unsafe fn arena_mut<'a>(arena: *mut nnm_arena) -> Result<&'a mut nnm_arena> {
    value_mut(arena, "arena")
}

#[inline]
unsafe fn arena_ref<'a>(arena: *const nnm_arena) -> Result<&'a nnm_arena> {
    value_ref(arena, "arena")
}

/// As [`arena_mut`] without the registry look-up, for the allocation calls:
/// they cost a few nanoseconds, and the look-up would add a large fraction
/// (BENCHMARKS.md, targets (k) and (l)).
#[inline]
unsafe fn arena_hot<'a>(arena: *mut nnm_arena) -> Result<&'a mut nnm_arena> {
    tagged_mut(arena, "arena")
}

/// Switches per-category recording on (`enabled` non-zero) or off.
///
/// Errors: NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_set_recording(arena: *mut nnm_arena, enabled: c_int) -> Status {
    guard(|| {
        arena_mut(arena)?.arena.set_recording(enabled != 0);
        Ok(())
    })
}

/// Registers a named category for allocations (ids after the predefined
/// `nnm_arena_category` values) and writes its id.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (empty, longer than
/// NNM_ARENA_MAX_CATEGORY_NAME bytes, control characters, not UTF-8),
/// ALREADY_EXISTS.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_register_category(
    arena: *mut nnm_arena,
    name: *const c_char,
    out_id: *mut u32,
) -> Status {
    guard(|| {
        let a = arena_mut(arena)?;
        non_null(out_id, "out_id")?;
        let name = read_str(name, "name")?;
        let id = a.arena.register_category(name)?;
        a.names.push(c_name(name));
        write_out(out_id, id);
        Ok(())
    })
}

/// Writes the number of categories, predefined ones included (valid ids
/// are 0 to count - 1).
///
/// Errors: NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_category_count(arena: *const nnm_arena, out_count: *mut u32) -> Status {
    guard(|| {
        let a = arena_ref(arena)?;
        non_null(out_count, "out_count")?;
        write_out(out_count, a.names.len() as u32);
        Ok(())
    })
}

/// The name of category `id`, or NULL (with a last error) for an unknown id
/// or a NULL arena. Valid until the arena is freed.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_category_name(arena: *const nnm_arena, id: u32) -> *const c_char {
    guard_ptr(|| {
        let a = arena_ref(arena)?;
        a.arena.categories().check(id)?;
        Ok(a.names[id as usize].as_ptr().cast_mut())
    })
}

/// Writes what recording counted for category `id`.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (unknown id).
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_get_category(
    arena: *const nnm_arena,
    id: u32,
    out_stats: *mut nnm_arena_category_stats,
) -> Status {
    guard(|| {
        let a = arena_ref(arena)?;
        non_null(out_stats, "out_stats")?;
        let s = a.arena.category_stats(id)?;
        write_out(
            out_stats,
            nnm_arena_category_stats { requested_bytes: s.requested, used_bytes: s.used, count: s.count },
        );
        Ok(())
    })
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
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_alloc_persistent(
    arena: *mut nnm_arena,
    size: usize,
    alignment: usize,
    category: u32,
    out_ptr: *mut *mut c_void,
) -> Status {
    guard(|| {
        let a = arena_hot(arena)?;
        non_null(out_ptr, "out_ptr")?;
        let addr = a.arena.alloc_persistent(size, alignment, category)?;
        write_out(out_ptr, a.persistent.to_ptr(addr));
        Ok(())
    })
}

/// Allocates `size` temp bytes above the head, aligned to `alignment` (0:
/// the arena's), counted under `category`, and writes the address. Release
/// it with `nnm_arena_release_temp`; `nnm_arena_reset_temp` ends the scope.
///
/// Errors: as `nnm_arena_alloc_persistent`.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_alloc_temp(
    arena: *mut nnm_arena,
    size: usize,
    alignment: usize,
    category: u32,
    out_ptr: *mut *mut c_void,
) -> Status {
    guard(|| {
        let a = arena_hot(arena)?;
        non_null(out_ptr, "out_ptr")?;
        let addr = a.arena.alloc_temp(size, alignment, category)?;
        write_out(out_ptr, a.nonpersistent.to_ptr(addr));
        Ok(())
    })
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
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_release_temp(arena: *mut nnm_arena, ptr: *const c_void) -> Status {
    guard(|| {
        let a = arena_hot(arena)?;
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
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_reset_temp(arena: *mut nnm_arena) -> Status {
    guard(|| arena_mut(arena)?.arena.reset_temp())
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
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_reserve_head(
    arena: *mut nnm_arena,
    size: usize,
    category: u32,
    out_head: *mut *mut c_void,
) -> Status {
    guard(|| {
        let a = arena_mut(arena)?;
        non_null(out_head, "out_head")?;
        let head = a.arena.reserve_head(size, category)?;
        write_out(out_head, a.nonpersistent.to_ptr(head));
        Ok(())
    })
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
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_commit_plan(
    arena: *mut nnm_arena,
    planner: *const nnm_planner,
    category: u32,
    out_addresses: *mut *mut c_void,
    count: usize,
) -> Status {
    guard(|| {
        let a = arena_mut(arena)?;
        let (p, requested) = planner_requested(planner)?;
        let n = p.buffer_count();
        if !(out_addresses.is_null() && count == 0) {
            non_null(out_addresses, "out_addresses")?;
            if count < n {
                return Err(Error::new(
                    Status::BufferTooSmall,
                    format!("the plan has {n} buffers, out_addresses holds {count}"),
                ));
            }
        }
        let head = a.arena.commit(p, requested, category)?;
        if !out_addresses.is_null() {
            let out = std::slice::from_raw_parts_mut(out_addresses, n);
            for (slot, &offset) in out.iter_mut().zip(&p.planned()?.offsets) {
                *slot = a.nonpersistent.to_ptr(head + offset as usize);
            }
        }
        Ok(())
    })
}

/// Empties the head: every committed plan is dropped (their addresses must
/// no longer be used). In guard mode it first checks every guard.
///
/// Errors: NULL_ARGUMENT, WRONG_STATE (temp allocations held), CORRUPTED.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_reset_head(arena: *mut nnm_arena) -> Status {
    guard(|| arena_mut(arena)?.arena.reset_head())
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
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_check(arena: *const nnm_arena) -> Status {
    guard(|| arena_ref(arena)?.arena.check())
}

/// Writes the sizes of the sections and the exact size needed.
///
/// Errors: NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_get_sizes(arena: *const nnm_arena, out_sizes: *mut nnm_arena_sizes) -> Status {
    guard(|| {
        let a = arena_ref(arena)?;
        non_null(out_sizes, "out_sizes")?;
        write_out(out_sizes, a.arena.sizes().into());
        Ok(())
    })
}

/// Writes the report (`format`: an `nnm_report_format`), NUL-terminated,
/// into `buf` (`len` bytes) and the bytes written (NUL included) to
/// `out_written`. With `buf` NULL and `len` 0 it writes only the size
/// needed.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (format), BUFFER_TOO_SMALL
/// (nothing is written; the message gives the size).
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_report(
    arena: *const nnm_arena,
    format: u32,
    buf: *mut c_char,
    len: usize,
    out_written: *mut usize,
) -> Status {
    guard(|| {
        let a = arena_ref(arena)?;
        let text = report(&a.arena, ReportFormat::from_value(format)?);
        copy_text(&text, buf, len, out_written, "report")
    })
}

/// Sends the report (`format`: an `nnm_report_format`) to `write`, one
/// line per call (see `nnm_write_fn`), with `user` passed through.
///
/// Errors: NULL_ARGUMENT (arena or write), INVALID_ARGUMENT (format).
#[no_mangle]
pub unsafe extern "C" fn nnm_arena_report_write(
    arena: *const nnm_arena,
    format: u32,
    write: nnm_write_fn,
    user: *mut c_void,
) -> Status {
    guard(|| {
        let a = arena_ref(arena)?;
        let format = ReportFormat::from_value(format)?;
        non_null(write.map_or(std::ptr::null(), |f| f as *const c_void), "write")?;
        emit_lines(&report(&a.arena, format), write, user)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_constants_equal_the_core_ones() {
        assert_eq!(NNM_ARENA_DEFAULT_ALIGNMENT, crate::arena::DEFAULT_ALIGNMENT);
        assert_eq!(NNM_ARENA_GUARD_BYTES, crate::arena::CANARY_BYTES);
        assert_eq!(NNM_ARENA_MAX_CATEGORY_NAME, crate::arena::MAX_CATEGORY_NAME);
    }
}
