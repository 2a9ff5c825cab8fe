//! C API of the static memory planner (`nnm_planner_*`, `nnm_plan_*`,
//! `nnm_algorithm_*`). Steps are TFLite Micro's: `first_use` and `last_use`
//! are inclusive; a `first_use` of NNM_UNUSED_STEP is live before the first
//! step; `first_use = last_use = NNM_UNUSED_STEP` means never used.

use std::ffi::c_char;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Weak};

use super::args::{c_name, handle_query, handle_update, opt_out_param, out_param, read_str, slice_in, slice_out};
use super::cancel::{nnm_cancel_token, token_ref};
use super::error::{guard, guard_void};
use super::handle::{free_handle, into_handle, value_mut, value_ref, HandleType};
use super::text::copy_text;
use crate::plan::{validate_with_fixed, Algorithm, Buffer, Invalid, Lifetime, Planner, Verdict};
use crate::status::{Error, Status};

/// Step -1, TFLite Micro's "not yet created": as `first_use` with a
/// `last_use` of 0 or more, a buffer live from before the first step (a
/// tensor read but never produced); as both `first_use` and `last_use`, a
/// buffer never used. Equals `crate::plan::UNUSED_STEP`. The C macro is
/// written in cbindgen.toml, parenthesised (cbindgen would print a bare -1).
pub const NNM_UNUSED_STEP: i64 = -1;

/// The default work limit of a new planner (see
/// `nnm_planner_set_work_limit`).
pub const NNM_DEFAULT_WORK_LIMIT: u64 = 300_000_000;
const _: () = assert!(NNM_DEFAULT_WORK_LIMIT == crate::plan::DEFAULT_WORK_LIMIT);

/// A static memory planner: collects buffers, plans them, answers queries;
/// buffers added after a plan drop it, and the next `nnm_planner_plan`
/// plans again. Not thread-safe: calls on one planner must not overlap; distinct
/// planners may be used from different threads. `const` queries may run
/// concurrently with each other. Every `nnm_planner_*` call (and
/// `nnm_arena_commit_plan`) checks that the planner is live: on a freed
/// planner it returns INVALID_ARGUMENT without reading it, unless a new
/// planner took over its address (that is the planner it then acts on).
pub struct nnm_planner {
    planner: Planner,
    /// The token's flag, held weakly: freeing the token detaches it. Lent
    /// to the core planner only while `nnm_planner_plan` runs.
    cancel: Option<Weak<AtomicBool>>,
    /// Sum of the sizes asked for, before the alignment rounding the core
    /// planner keeps (arena recording reports these).
    requested_bytes: u64,
}

// SAFETY: no other handle type is named "nnm_planner".
unsafe impl HandleType for nnm_planner {
    const NAME: &'static str = "nnm_planner";
}

/// Summary of the last plan.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct nnm_plan_result {
    /// Bytes the block needs: the highest `offset + size`.
    pub peak_bytes: u64,
    /// Largest total size live at one step; no plan can be smaller.
    pub lower_bound_bytes: u64,
    /// Number of buffers planned.
    pub buffer_count: u64,
    /// The best lower bound known: `lower_bound_bytes`, or higher where the
    /// exact search proved that no smaller peak exists.
    pub best_lower_bound_bytes: u64,
    /// Wall time spent planning, in nanoseconds.
    pub plan_time_ns: u64,
    /// Search nodes explored by EXACT (or AUTO's search stage); 0 when only
    /// heuristics ran.
    pub search_nodes: u64,
    /// The `nnm_algorithm` that produced the offsets (for AUTO, the winner).
    pub algorithm: u32,
    /// 1 when no smaller plan exists: the peak meets the lower bound, or the
    /// exact search proved it.
    pub proven_optimal: u8,
    /// 1 when the plan fits the capacity (always 1 without one).
    pub fits: u8,
    /// 1 when the time limit (`nnm_planner_set_time_limit`) stopped AUTO or
    /// EXACT before they were done, so the plan may differ on another
    /// machine; always 0 without a time limit.
    pub time_limit_cut: u8,
    /// Pairs of fixed buffers that share a byte at some step: accepted by
    /// TFLM, or with `nnm_planner_set_trust_fixed`. Each unordered pair of
    /// fixed buffers (both of non-zero size and used) live at a common step
    /// with a byte in common counts once.
    pub fixed_overlap_count: u64,
    /// When `fixed_overlap_count` > 0: the lower index (in order of
    /// addition) of the first such pair, met by a sweep over steps (the
    /// earliest step at which two fixed buffers overlap). 0 otherwise.
    pub fixed_overlap_first: u64,
    /// When `fixed_overlap_count` > 0: the higher index of that pair. 0
    /// otherwise.
    pub fixed_overlap_second: u64,
    /// When `fixed_overlap_count` > 0: the first step at which that pair
    /// overlaps. 0 otherwise.
    pub fixed_overlap_step: i64,
}

/// A buffer with its offset, for `nnm_plan_validate`.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct nnm_plan_buffer {
    /// Bytes.
    pub size: u64,
    /// First step the buffer is live (inclusive), or NNM_UNUSED_STEP (live
    /// before the first step, or never used).
    pub first_use: i64,
    /// Last step the buffer is live (inclusive), or NNM_UNUSED_STEP with a
    /// `first_use` of NNM_UNUSED_STEP (never used).
    pub last_use: i64,
    /// Its offset in the block.
    pub offset: u64,
}

/// Verdict of `nnm_plan_validate`.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct nnm_validation {
    /// Highest `offset + size` over buffers that occupy memory.
    pub peak_bytes: u64,
    /// When invalid: the lower index of the first overlapping pair.
    pub first: usize,
    /// When invalid: the higher index of the first overlapping pair.
    pub second: usize,
    /// When invalid: the first step at which both are live.
    pub step: i64,
    /// 1 when no two buffers live at the same step share a byte (with
    /// NNM_VALIDATE_TRUST_FIXED: except pairs of fixed buffers).
    pub valid: u8,
    /// Pairs of buffers marked fixed (`nnm_plan_validate_ex`) that share a
    /// byte at some step, counted as in `nnm_plan_result`; always 0 from
    /// `nnm_plan_validate`, which knows no fixed buffers.
    pub fixed_overlap_count: u64,
    /// When `fixed_overlap_count` > 0: the lower index of the first such
    /// pair (earliest step). 0 otherwise.
    pub fixed_overlap_first: usize,
    /// When `fixed_overlap_count` > 0: the higher index of that pair. 0
    /// otherwise.
    pub fixed_overlap_second: usize,
    /// When `fixed_overlap_count` > 0: the first step at which that pair
    /// overlaps. 0 otherwise.
    pub fixed_overlap_step: i64,
}

/// `nnm_plan_validate_ex` flag: overlaps among fixed buffers are counted but
/// do not make the plan invalid (an offline plan may share memory on
/// purpose). An overlap involving a buffer not marked fixed still does.
pub const NNM_VALIDATE_TRUST_FIXED: u32 = 1;

/// The planner behind a handle, for changing it (NULL, registry and tag
/// checked).
///
/// # Safety
/// `p` must be NULL, a freed planner, or a live planner no other call uses.
#[inline]
unsafe fn planner_mut<'a>(p: *mut nnm_planner) -> crate::Result<&'a mut Planner> {
    // SAFETY: the caller's promise is `value_mut`'s.
    unsafe { value_mut(p, "planner") }.map(|h| &mut h.planner)
}

/// The handle itself, for changing its fields besides the planner.
///
/// # Safety
/// As [`planner_mut`].
#[inline]
unsafe fn handle_mut<'a>(p: *mut nnm_planner) -> crate::Result<&'a mut nnm_planner> {
    // SAFETY: the caller's promise is `value_mut`'s.
    unsafe { value_mut(p, "planner") }
}

/// The planner behind `p` and the bytes its buffers asked for (before the
/// alignment rounding), for recording a committed plan.
///
/// # Safety
/// `p` must be NULL, a freed planner, or a live planner no call changes
/// while the result is used.
pub(crate) unsafe fn planner_requested<'a>(p: *const nnm_planner) -> crate::Result<(&'a Planner, u64)> {
    // SAFETY: the caller's promise is `value_ref`'s.
    unsafe { value_ref(p, "planner") }.map(|h| (&h.planner, h.requested_bytes))
}

/// The planner behind a handle, for reading (NULL, registry and tag
/// checked).
///
/// # Safety
/// As [`planner_requested`].
#[inline]
pub(crate) unsafe fn planner_ref<'a>(p: *const nnm_planner) -> crate::Result<&'a Planner> {
    // SAFETY: the caller's promise is `value_ref`'s.
    unsafe { value_ref(p, "planner") }.map(|h| &h.planner)
}

/// Changes the planner behind a handle (a setter export's shape).
///
/// # Safety
/// As [`planner_mut`].
#[inline]
unsafe fn update(planner: *mut nnm_planner, update: impl FnOnce(&mut Planner) -> crate::Result<()>) -> Status {
    // SAFETY: the caller's promise is `handle_update`'s.
    unsafe { handle_update(planner, "planner", |h| update(&mut h.planner)) }
}

/// Changes a planner setting that cannot fail.
///
/// # Safety
/// As [`planner_mut`].
#[inline]
unsafe fn set(planner: *mut nnm_planner, change: impl FnOnce(&mut Planner)) -> Status {
    // SAFETY: the caller's promise is `update`'s.
    unsafe {
        update(planner, |p| {
            change(p);
            Ok(())
        })
    }
}

/// Writes one value read from the planner behind a handle to `out` (a
/// getter export's shape); `out` is named `out_what` in messages.
///
/// # Safety
/// As [`planner_ref`]; `out` must be NULL or valid for a write of `T`.
#[inline]
unsafe fn query<T>(
    planner: *const nnm_planner,
    out: *mut T,
    out_what: &str,
    query: impl FnOnce(&Planner) -> crate::Result<T>,
) -> Status {
    // SAFETY: the caller's promises are `handle_query`'s.
    unsafe { handle_query(planner, "planner", out, out_what, |h| query(&h.planner)) }
}

/// `None` for 0, the C API's "no limit".
fn nonzero(value: u64) -> Option<u64> {
    (value != 0).then_some(value)
}

/// Looks an algorithm up by name ("auto", "tflm", "linear",
/// "size-first-fit", "size-best-fit", "lifetime-first-fit", "live-step",
/// "conflict", "exact", "floor-first") and writes its `nnm_algorithm` value.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT for an unknown name (the message
/// lists the known ones).
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string. `out_algorithm` must be NULL
/// or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_algorithm_from_name(name: *const c_char, out_algorithm: *mut u32) -> Status {
    guard(|| {
        // SAFETY: the caller promises `out_algorithm` is NULL or valid for one write.
        let out_algorithm = unsafe { out_param(out_algorithm, "out_algorithm") }?;
        // SAFETY: `name` is NULL or a NUL-terminated string (the caller's contract).
        let algorithm = Algorithm::from_name(unsafe { read_str(name, "name") }?)?;
        out_algorithm.write(algorithm as u32);
        Ok(())
    })
}

/// The name of an `nnm_algorithm` value, or NULL for an unknown value.
/// Static; never freed.
#[no_mangle]
pub extern "C" fn nnm_algorithm_name(algorithm: u32) -> *const c_char {
    c_name::<Algorithm>(algorithm)
}

/// Creates a planner: algorithm AUTO, alignment 1, no capacity, the default
/// work limit (see `nnm_planner_set_work_limit`), no time limit, no node
/// limit, no cancellation token, overlapping fixed buffers not trusted. Free
/// it with `nnm_planner_free`.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `out_planner` must be NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_new(out_planner: *mut *mut nnm_planner) -> Status {
    guard(|| {
        // SAFETY: the caller promises `out_planner` is NULL or valid for one write.
        let out_planner = unsafe { out_param(out_planner, "out_planner") }?;
        let handle = into_handle(nnm_planner { planner: Planner::new(), cancel: None, requested_bytes: 0 });
        out_planner.write(handle);
        Ok(())
    })
}

/// Frees a planner. NULL is a no-op; a double free is detected, reported
/// through `nnm_last_error()` and otherwise ignored.
///
/// # Safety
/// `planner` must be NULL or a pointer from `nnm_planner_new`; a freed or
/// foreign pointer is reported, not freed. No other call may use the planner
/// meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_free(planner: *mut nnm_planner) {
    // SAFETY: `free_handle` frees only what the registry holds as a live
    // planner; the caller promises no other call is using it.
    guard_void(|| unsafe { free_handle(planner) })
}

/// Selects the algorithm (an `nnm_algorithm` value) for the next plan.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT for an unknown value.
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no other call may use it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_set_algorithm(planner: *mut nnm_planner, algorithm: u32) -> Status {
    // SAFETY: the caller's promise (# Safety) is `update`'s.
    unsafe {
        update(planner, |p| {
            p.set_algorithm(Algorithm::from_value(algorithm)?);
            Ok(())
        })
    }
}

/// Selects the algorithm by name (see `nnm_algorithm_from_name`).
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT for an unknown name.
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no other call may use it meanwhile. `name`
/// must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_set_algorithm_name(planner: *mut nnm_planner, name: *const c_char) -> Status {
    guard(|| {
        // SAFETY: `planner` is a planner handle used by no other call, or NULL or freed (refused unread).
        let p = unsafe { planner_mut(planner) }?;
        // SAFETY: `name` is NULL or a NUL-terminated string (the caller's contract).
        p.set_algorithm(Algorithm::from_name(unsafe { read_str(name, "name") }?)?);
        Ok(())
    })
}

/// Sets the alignment of every size (rounded up) and offset: a power of two,
/// before any buffer is added.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (not a power of two),
/// WRONG_STATE (buffers already added).
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no other call may use it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_set_alignment(planner: *mut nnm_planner, alignment: u64) -> Status {
    // SAFETY: the caller's promise (# Safety) is `update`'s.
    unsafe { update(planner, |p| p.set_alignment(alignment)) }
}

/// Sets the capacity the plan must fit; 0 means no capacity. When the best
/// plan is larger, `nnm_planner_plan` returns DOES_NOT_FIT; a capacity below
/// the lower bound is refused by `nnm_planner_plan` at once, without planning.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no other call may use it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_set_capacity(planner: *mut nnm_planner, capacity_bytes: u64) -> Status {
    // SAFETY: the caller's promise (# Safety) is `set`'s.
    unsafe { set(planner, |p| p.set_capacity(nonzero(capacity_bytes))) }
}

/// Caps the wall time of AUTO and EXACT, in seconds: any positive finite
/// number (below a nanosecond counts as one; more than a 64-bit count of
/// seconds holds, as no limit). No time limit by default. At the limit the
/// best plan so far is kept and the result's `time_limit_cut` is 1: the one
/// setting that makes the plan depend on the machine's speed.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (zero, negative, NaN, infinite).
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no other call may use it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_set_time_limit(planner: *mut nnm_planner, seconds: f64) -> Status {
    // SAFETY: the caller's promise (# Safety) is `update`'s.
    unsafe { update(planner, |p| p.set_time_limit_secs(seconds)) }
}

/// Caps the nodes a search explores (0: no cap, the default). Like the work
/// limit, a node limit gives the same plan on any machine.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no other call may use it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_set_node_limit(planner: *mut nnm_planner, max_nodes: u64) -> Status {
    // SAFETY: the caller's promise (# Safety) is `set`'s.
    unsafe { set(planner, |p| p.set_node_limit(nonzero(max_nodes))) }
}

/// Caps the work of AUTO and EXACT (0: no cap), in work units: 10 per
/// search node plus one per conflict entry, buffer or section it visits or
/// spans and per frontier tree node it visits (a quarter per buffer
/// scanned in parts under 2048 buffers), four per floor it raises, two per
/// fresh undo-log entry, one per conflict entry and per buffer when the
/// search's conflict lists are built, and for each heuristic AUTO (or
/// EXACT, for its first plan) runs first an estimate per buffer, or where
/// it counts more, ten per set of taken offsets its first fit reads or
/// writes (dense instances, whose free space is in many pieces). The limit
/// skips AUTO's other heuristics but never SIZE_FIRST_FIT (in TFLM's and
/// OpenVINO's tie orders) or, where it can differ from it, TFLM, so AUTO's
/// plan is never larger than theirs at any limit (see
/// `NNM_ALGORITHM_AUTO`). Counted, not timed, so the same input and
/// settings give the same plan on any machine. A unit costs about the same
/// time on small hard instances, on traces of tens of thousands of buffers
/// and on random ones whose buffers each live with hundreds of others, so
/// the default, `NNM_DEFAULT_WORK_LIMIT`, buys about as long a plan on any
/// of them, 1 to 2 s on a 2-core VM (`BENCHMARKS.md`, "What a work unit
/// costs"; on the densest, the heuristics run at any limit may count past
/// it); most models finish far below it.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no other call may use it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_set_work_limit(planner: *mut nnm_planner, max_units: u64) -> Status {
    // SAFETY: the caller's promise (# Safety) is `set`'s.
    unsafe { set(planner, |p| p.set_work_limit(nonzero(max_units))) }
}

/// Lets `token` stop this planner's searches (NULL: none);
/// `nnm_cancel_token_cancel` from any thread then stops a running
/// `nnm_planner_plan`, which returns its best plan so far. Freeing the token
/// detaches it from every planner it was set on: later plans run as with no
/// token (a plan already running keeps watching it until it returns).
///
/// Errors: NULL_ARGUMENT (planner), INVALID_ARGUMENT (not a live token).
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no other call may use it meanwhile. `token`
/// must be NULL or a token from `nnm_cancel_token_new` (a freed one is refused
/// without being read).
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_set_cancel_token(
    planner: *mut nnm_planner,
    token: *const nnm_cancel_token,
) -> Status {
    guard(|| {
        // SAFETY: `planner` is a planner handle used by no other call, or NULL or freed (refused unread).
        let h = unsafe { handle_mut(planner) }?;
        // SAFETY: `token` is NULL, a freed token (refused unread) or a live one.
        h.cancel = if token.is_null() { None } else { Some(Arc::downgrade(unsafe { token_ref(token) }?.token.flag())) };
        Ok(())
    })
}

/// Trusts fixed buffers that overlap each other (`trust` 1) or not (0, the
/// default). An offline plan may share memory between tensors on purpose,
/// even while both are live; TFLite Micro trusts it, and so does
/// NNM_ALGORITHM_TFLM always. With trust, every algorithm plans around all
/// fixed buffers (planned buffers never overlap any fixed or planned
/// buffer; the lower bound counts bytes that fixed buffers share once) and
/// the overlaps are only reported in `nnm_plan_result`. Without it,
/// `nnm_planner_plan` fails on them with any other algorithm. Kept by
/// `nnm_planner_reset`. Cost: overlapping fixed buffers are planned around
/// as the disjoint blocks of their union, O(k^2) blocks for k fixed buffers
/// at worst (crafted plans; real offline plans make about k), which the
/// lower bound (`nnm_planner_lower_bound` too) and the algorithms then see.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (`trust` not 0 or 1).
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no other call may use it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_set_trust_fixed(planner: *mut nnm_planner, trust: u8) -> Status {
    // SAFETY: the caller's promise (# Safety) is `update`'s.
    unsafe {
        update(planner, |p| {
            if trust > 1 {
                return Err(Error::invalid(format!("trust {trust} must be 0 (off) or 1 (on)")));
            }
            p.set_trust_fixed(trust == 1);
            Ok(())
        })
    }
}

/// Adds a buffer of `size` bytes live from step `first_use` to `last_use`
/// (inclusive, TFLite Micro's lifetimes). Zero sizes are legal. Writes its
/// index to `out_index` when not NULL.
///
/// A `first_use` of NNM_UNUSED_STEP (-1) with a `last_use` of 0 or more is
/// live from step -1, before the first step (TFLite Micro's tensors that
/// are read but never produced), under every algorithm. Both NNM_UNUSED_STEP
/// is a buffer never used: NNM_ALGORITHM_TFLM plans it as TFLite Micro's
/// `GreedyMemoryPlanner` does, live at step -1 (it meets every buffer whose
/// `first_use` is -1, never-used ones included, and gets its own bytes next
/// to them); every other algorithm lets it occupy nothing (no buffer avoids
/// it; LINEAR still stacks it, as it stacks everything).
///
/// After a plan, adding drops the plan: the planner collects again, and
/// the queries that need a plan return WRONG_STATE until `nnm_planner_plan`
/// plans all the buffers again.
///
/// Heap: the planner keeps each buffer in an array of 40-byte entries
/// (64-bit targets) that grows by doubling, so at most 80 bytes per buffer
/// added; a plan adds 8 bytes per buffer for its offsets, and under
/// NNM_ALGORITHM_TFLM 8 more kept for a re-plan after adding. While
/// `nnm_planner_plan` runs, NNM_ALGORITHM_TFLM allocates at most 280 bytes
/// per buffer more (so at most 80 n + 16 n + 280 n bytes for n buffers,
/// besides the fixed-size handle), plus, when fixed buffers overlap each
/// other, the blocks of their union (see `nnm_planner_set_trust_fixed`);
/// other algorithms use more (AUTO and EXACT: their search).
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (`last_use < first_use`, a step
/// below -1, or a `last_use` of -1 with a `first_use` other than -1),
/// OVERFLOW (`last_use` is INT64_MAX: steps are kept half-open, so
/// `last_use + 1` must fit; `size` rounded up to the alignment passes
/// 2^64 - 1; or the sizes of all buffers added, rounded up and summed
/// whether or not they are live at the same time, plus the highest
/// `offset + size` of a fixed buffer, pass 2^64 - 1: this bound keeps every
/// algorithm's arithmetic within 64 bits). A failing call keeps the plan.
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no other call may use it meanwhile.
/// `out_index` must be NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_add_buffer(
    planner: *mut nnm_planner,
    size: u64,
    first_use: i64,
    last_use: i64,
    out_index: *mut usize,
) -> Status {
    guard(|| {
        // SAFETY: `planner` is a planner handle used by no other call, or
        // NULL or freed (refused unread); `out_index` is NULL or writable.
        let (h, out_index) = unsafe { (handle_mut(planner)?, opt_out_param(out_index, "out_index")?) };
        let index = h.planner.add_buffer(size, Lifetime::inclusive(first_use, last_use)?, None)?;
        h.requested_bytes = h.requested_bytes.saturating_add(size);
        if let Some(out) = out_index {
            out.write(index);
        }
        Ok(())
    })
}

/// Adds a buffer with a fixed offset (an offline plan): it keeps `offset`
/// and the others are planned around it. `offset` must be a multiple of the
/// alignment.
///
/// Fixed buffers may overlap each other; see `nnm_planner_set_trust_fixed`.
///
/// Errors: as `nnm_planner_add_buffer` (whose OVERFLOW bound counts this
/// buffer's `offset + size` as a fixed end), plus INVALID_ARGUMENT for an
/// unaligned offset and OVERFLOW when `offset + size` (size rounded up)
/// passes 2^64 - 1.
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no other call may use it meanwhile.
/// `out_index` must be NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_add_fixed_buffer(
    planner: *mut nnm_planner,
    size: u64,
    first_use: i64,
    last_use: i64,
    offset: u64,
    out_index: *mut usize,
) -> Status {
    guard(|| {
        // SAFETY: `planner` is a planner handle used by no other call, or
        // NULL or freed (refused unread); `out_index` is NULL or writable.
        let (h, out_index) = unsafe { (handle_mut(planner)?, opt_out_param(out_index, "out_index")?) };
        let index = h.planner.add_buffer(size, Lifetime::inclusive(first_use, last_use)?, Some(offset))?;
        h.requested_bytes = h.requested_bytes.saturating_add(size);
        if let Some(out) = out_index {
            out.write(index);
        }
        Ok(())
    })
}

/// Lets buffer `child` reuse buffer `parent`'s memory in place: an optional
/// merge, as an element-wise operator may write its output over an input it
/// reads for the last time (ggml's in-place ops, ONNX Runtime's
/// `MayInplace`). `parent`'s `last_use` must equal `child`'s `first_use`,
/// and `child` must not be larger than `parent`.
///
/// The planner decides which candidates to take so that the bytes live at
/// one step (the lower bound) are as few as it can make them: a buffer
/// gives its memory to at most one child and takes at most one parent's
/// (the first free candidate in the order added; chains are one block,
/// never linked through a buffer live at one step alone);
/// every candidate of equal sizes is taken (it never raises what is live at
/// any step); one with a smaller child keeps the parent's size until the
/// child's last use, and is taken only where that does not raise the lower
/// bound. A child taken gets its parent's offset; for buffers of non-zero
/// size that is the only way two buffers live at one step share an offset,
/// so equal offsets say which candidates were taken
/// (`nnm_planner_inplace_taken` counts them). `nnm_planner_lower_bound` and
/// the result's lower bound are those of the buffers with the merges taken.
/// Adding a candidate drops the plan, as adding a buffer does; candidates
/// are kept until `nnm_planner_reset`. NNM_ALGORITHM_TFLM plans as
/// TensorFlow Lite Micro, which has no in-place reuse: `nnm_planner_plan`
/// refuses candidates with it (INVALID_ARGUMENT).
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT for an index out of range, a
/// buffer paired with itself, a buffer never used, a buffer with a fixed
/// offset (`nnm_planner_add_fixed_buffer`: its offset is the caller's, not
/// the planner's to share), a parent's last use that is not the child's
/// first use, or a child larger than its parent (the message gives the
/// indices, steps and sizes); nothing is recorded then.
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no other call may use it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_add_inplace(planner: *mut nnm_planner, parent: usize, child: usize) -> Status {
    guard(|| {
        // SAFETY: `planner` is a planner handle used by no other call, or NULL or freed (refused unread).
        let h = unsafe { handle_mut(planner) }?;
        h.planner.add_inplace(parent, child)
    })
}

/// Writes how many in-place candidates (`nnm_planner_add_inplace`) the last
/// plan took.
///
/// Errors: NULL_ARGUMENT, WRONG_STATE (not planned).
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no call may change it meanwhile.
/// `out_count` must be NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_inplace_taken(planner: *const nnm_planner, out_count: *mut usize) -> Status {
    // SAFETY: the caller's promises (# Safety) are `query`'s.
    unsafe { query(planner, out_count, "out_count", |p| Ok(p.planned()?.inplace_taken)) }
}

/// Plans the buffers added so far. After buffers were added to a plan made
/// with NNM_ALGORITHM_TFLM, TFLM walks only the new ones when they come last
/// in its order (all planned online, each smaller than every buffer of the
/// earlier plan planned online), O(n log n + k n) for k new buffers; else,
/// and with every other algorithm, it plans all the buffers again. Either
/// way the offsets are those of planning all the buffers afresh.
///
/// Errors: NULL_ARGUMENT; WRONG_STATE (already planned and no buffer added
/// since); INVALID_ARGUMENT
/// (two fixed buffers share a byte at a step, unless the algorithm is
/// NNM_ALGORITHM_TFLM or `nnm_planner_set_trust_fixed` is on: the message
/// names the first pair, the step and the number of pairs); DOES_NOT_FIT
/// when a capacity is set and the best plan exceeds it: the message reads
/// "requested X B, available Y B, missing Z B" and
/// `nnm_planner_required_bytes` gives X (offsets stay readable). A capacity
/// below the lower bound is DOES_NOT_FIT at once, with no search and no
/// plan: the message reads "capacity Y B is below the lower bound L B: no
/// plan fits", the planner stays collecting (buffers may be added, the
/// capacity raised) and `nnm_planner_lower_bound` gives L.
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no other call may use it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_plan(planner: *mut nnm_planner) -> Status {
    guard(|| {
        // SAFETY: `planner` is a planner handle used by no other call, or NULL or freed (refused unread).
        let h = unsafe { handle_mut(planner) }?;
        // The token's flag is lent for this plan only, so that freeing the
        // token (which drops the only other reference) detaches it. Taken
        // back first in case a panic cut the last plan short.
        h.planner.set_cancel_flag(None);
        let flag = h.cancel.as_ref().and_then(Weak::upgrade);
        if flag.is_none() {
            h.cancel = None;
        }
        h.planner.set_cancel_flag(flag);
        let planned = h.planner.plan().map(|_| ());
        h.planner.set_cancel_flag(None);
        planned
    })
}

/// Writes the offset of buffer `index`.
///
/// Errors: NULL_ARGUMENT, WRONG_STATE (not planned), INVALID_ARGUMENT (index
/// out of range).
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no call may change it meanwhile.
/// `out_offset` must be NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_get_offset(
    planner: *const nnm_planner,
    index: usize,
    out_offset: *mut u64,
) -> Status {
    // SAFETY: the caller's promises (# Safety) are `query`'s.
    unsafe { query(planner, out_offset, "out_offset", |p| p.offset(index)) }
}

/// Writes every buffer's offset, in order of addition, into `out_offsets`
/// (`count` entries, which must equal the buffer count).
///
/// Errors: NULL_ARGUMENT, WRONG_STATE (not planned), INVALID_ARGUMENT
/// (count differs from the buffer count).
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no call may change it meanwhile.
/// `out_offsets` must be NULL or valid for writing `count` values.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_get_offsets(
    planner: *const nnm_planner,
    out_offsets: *mut u64,
    count: usize,
) -> Status {
    guard(|| {
        // SAFETY: `planner` is a planner handle not being changed, or NULL or freed (refused unread).
        let p = unsafe { planner_ref(planner) }?;
        let outcome = p.planned()?;
        if count != outcome.offsets.len() {
            return Err(Error::invalid(format!(
                "count {count} differs from the buffer count {}",
                outcome.offsets.len()
            )));
        }
        if count == 0 {
            return Ok(());
        }
        // SAFETY: the caller promises `out_offsets` is NULL or writable for
        // `count` values.
        unsafe { slice_out(out_offsets, count, "out_offsets") }?.copy_from_slice(&outcome.offsets);
        Ok(())
    })
}

/// Writes buffer `index` as planned: its size (rounded up to the
/// alignment), `first_use` and `last_use` as added (NNM_UNUSED_STEP twice
/// for a buffer never used) and its offset. With the buffer count, this is
/// what a caller needs to check or print the plan in its own terms (as
/// TFLite Micro's `DoAnyBuffersOverlap` and `PrintMemoryPlan` do) without
/// keeping its own copy of the buffers.
///
/// Errors: NULL_ARGUMENT, WRONG_STATE (not planned), INVALID_ARGUMENT (index
/// out of range).
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no call may change it meanwhile.
/// `out_buffer` must be NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_get_buffer(
    planner: *const nnm_planner,
    index: usize,
    out_buffer: *mut nnm_plan_buffer,
) -> Status {
    // SAFETY: the caller's promises (# Safety) are `query`'s.
    unsafe {
        query(planner, out_buffer, "out_buffer", |p| {
            let offset = p.offset(index)?;
            let b = p.problem().buffers()[index];
            let (first_use, last_use) = b.lifetime.to_inclusive();
            Ok(nnm_plan_buffer { size: b.size, first_use, last_use, offset })
        })
    }
}

/// Writes the summary of the last plan (also after DOES_NOT_FIT).
///
/// Errors: NULL_ARGUMENT, WRONG_STATE (not planned).
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no call may change it meanwhile.
/// `out_result` must be NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_get_result(
    planner: *const nnm_planner,
    out_result: *mut nnm_plan_result,
) -> Status {
    // SAFETY: the caller's promises (# Safety) are `query`'s.
    unsafe {
        query(planner, out_result, "out_result", |p| {
            let o = p.planned()?;
            Ok(nnm_plan_result {
                peak_bytes: o.peak,
                lower_bound_bytes: o.lower_bound,
                buffer_count: o.offsets.len() as u64,
                best_lower_bound_bytes: o.best_bound,
                plan_time_ns: u64::try_from(o.elapsed.as_nanos()).unwrap_or(u64::MAX),
                search_nodes: o.nodes,
                algorithm: o.algorithm as u32,
                proven_optimal: o.proven_optimal as u8,
                fits: o.fits as u8,
                time_limit_cut: o.time_limit_cut as u8,
                fixed_overlap_count: o.fixed_overlaps.count,
                fixed_overlap_first: o.fixed_overlaps.first.map_or(0, |f| f.first as u64),
                fixed_overlap_second: o.fixed_overlaps.first.map_or(0, |f| f.second as u64),
                fixed_overlap_step: o.fixed_overlaps.first.map_or(0, |f| f.step),
            })
        })
    }
}

/// Writes the lower bound of the buffers added so far: the largest total
/// size live at one step, where bytes that fixed buffers share count once
/// (with NNM_ALGORITHM_TFLM selected, buffers never used count at step -1).
/// Available at any time. O(n log n), plus the union of the fixed buffers
/// when they overlap.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no call may change it meanwhile.
/// `out_bytes` must be NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_lower_bound(planner: *const nnm_planner, out_bytes: *mut u64) -> Status {
    // SAFETY: the caller's promises (# Safety) are `query`'s.
    unsafe { query(planner, out_bytes, "out_bytes", |p| Ok(p.lower_bound())) }
}

/// Writes the bytes the last plan needs (its peak); after DOES_NOT_FIT this
/// is the capacity that would have sufficed for that plan. With
/// NNM_ALGORITHM_TFLM it is TFLite Micro's arena size: the highest
/// `offset + size` over every buffer, zero-size ones included (a zero-size
/// fixed buffer may lie above the rest); otherwise over the buffers that
/// occupy memory.
///
/// Errors: NULL_ARGUMENT, WRONG_STATE (not planned).
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no call may change it meanwhile.
/// `out_bytes` must be NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_required_bytes(planner: *const nnm_planner, out_bytes: *mut u64) -> Status {
    // SAFETY: the caller's promises (# Safety) are `query`'s.
    unsafe { query(planner, out_bytes, "out_bytes", |p| Ok(p.planned()?.peak)) }
}

/// Writes the number of buffers added.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no call may change it meanwhile.
/// `out_count` must be NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_buffer_count(planner: *const nnm_planner, out_count: *mut usize) -> Status {
    // SAFETY: the caller's promises (# Safety) are `query`'s.
    unsafe { query(planner, out_count, "out_count", |p| Ok(p.buffer_count())) }
}

/// Drops every buffer and the plan; keeps algorithm, alignment, capacity,
/// trust-fixed and the time, node and work limits.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no other call may use it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_reset(planner: *mut nnm_planner) -> Status {
    guard(|| {
        // SAFETY: `planner` is a planner handle used by no other call, or NULL or freed (refused unread).
        let h = unsafe { handle_mut(planner) }?;
        h.planner.reset();
        h.requested_bytes = 0;
        Ok(())
    })
}

/// Writes a TFLite-Micro-style text picture of the plan, NUL-terminated,
/// into `buf` (`len` bytes). Buffers are named by index; those that occupy
/// no memory (size 0, or never used except under NNM_ALGORITHM_TFLM, which
/// draws them at step -1) are listed but not drawn, wherever their offset
/// lies, and the peak in its first line counts only what it draws. With `buf` NULL and `len` 0 it only writes the
/// bytes needed (NUL included) to `out_written`; on success `out_written`
/// receives the bytes written (NUL included).
///
/// Errors: NULL_ARGUMENT, WRONG_STATE (not planned), BUFFER_TOO_SMALL (the
/// message gives the size needed; nothing is written).
///
/// # Safety
/// `planner` must be NULL or a planner from `nnm_planner_new` (a freed one is
/// refused without being read), and no call may change it meanwhile. `buf` must
/// be NULL or valid for writing `len` bytes. `out_written` must be NULL or
/// valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_draw(
    planner: *const nnm_planner,
    buf: *mut c_char,
    len: usize,
    out_written: *mut usize,
) -> Status {
    guard(|| {
        // SAFETY: `planner` is a planner handle not being changed, or NULL or freed (refused unread).
        let text = unsafe { planner_ref(planner) }?.draw()?;
        // SAFETY: `buf` is NULL or writable for `len` bytes and `out_written` NULL or writable (the caller's contract).
        unsafe { copy_text(&text, buf, len, out_written, "picture") }
    })
}

/// Checks any plan, made by nnmem or elsewhere: no two buffers live at the
/// same step may share a byte. Returns OK whether or not the plan is valid
/// and writes the verdict: `valid`, the peak, and for an invalid plan the
/// first overlapping pair (earliest step, then lowest index) and the step;
/// the message of `nnm_last_error()` also names them. O(n log n).
/// Equivalent to `nnm_plan_validate_ex` with no fixed buffers and no flags.
///
/// Errors: NULL_ARGUMENT (`buffers` NULL with `count` > 0, or `out` NULL),
/// INVALID_ARGUMENT (a buffer's lifetime is malformed), OVERFLOW
/// (`count` too large, a `last_use` of INT64_MAX, or `offset + size`
/// overflows for any buffer, used or not).
///
/// # Safety
/// `buffers` must be NULL or point to `count` readable entries. `out` must be
/// NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_plan_validate(
    buffers: *const nnm_plan_buffer,
    count: usize,
    out: *mut nnm_validation,
) -> Status {
    // SAFETY: the caller's promises cover `nnm_plan_validate_ex`'s, which
    // reads no `is_fixed` when it is NULL.
    unsafe { nnm_plan_validate_ex(buffers, count, std::ptr::null(), 0, out) }
}

/// `nnm_plan_validate` for a plan with fixed (offline-planned) buffers:
/// `is_fixed` (NULL: none fixed; else `count` entries, each 0 or 1) marks
/// them. Overlaps among fixed buffers are counted in `fixed_overlap_count`
/// (with the first pair and step) and make the plan invalid unless `flags`
/// has NNM_VALIDATE_TRUST_FIXED; an overlap involving a buffer not marked
/// fixed always does. The first overlapping pair reported is the one
/// `nnm_plan_validate` reports, except with trust and overlapping fixed
/// buffers, where it is the first overlap (earliest step) involving a
/// buffer not fixed, paired with the lowest-indexed fixed buffer it meets
/// at that step if it meets one. O(n log n) plus, with trust and
/// overlapping fixed buffers, the union of the fixed ones: k fixed buffers
/// make at most O(k^2) disjoint blocks (crafted offline plans reach that;
/// real ones make about k).
///
/// Errors: as `nnm_plan_validate`, plus INVALID_ARGUMENT for an `is_fixed`
/// entry other than 0 or 1 and for unknown bits in `flags`.
///
/// # Safety
/// `buffers` must be NULL or point to `count` readable entries. `is_fixed` must
/// be NULL or point to `count` readable bytes. `out` must be NULL or valid for
/// writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_plan_validate_ex(
    buffers: *const nnm_plan_buffer,
    count: usize,
    is_fixed: *const u8,
    flags: u32,
    out: *mut nnm_validation,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises `out` is NULL or valid for one write.
        let out = unsafe { out_param(out, "out") }?;
        if flags & !NNM_VALIDATE_TRUST_FIXED != 0 {
            return Err(Error::invalid(format!(
                "unknown flags 0x{:x} (known: NNM_VALIDATE_TRUST_FIXED = 0x{NNM_VALIDATE_TRUST_FIXED:x})",
                flags & !NNM_VALIDATE_TRUST_FIXED
            )));
        }
        // SAFETY: `buffers` is NULL or points to `count` readable entries (the caller's contract).
        let (specs, offsets) = unsafe { read_plan(buffers, count) }?;
        let marks: &[u8] = if is_fixed.is_null() {
            &[]
        } else {
            // SAFETY: the caller promises `count` readable bytes at `is_fixed`.
            unsafe { slice_in(is_fixed, count, "is_fixed") }?
        };
        if let Some(i) = marks.iter().position(|&m| m > 1) {
            return Err(Error::invalid(format!("is_fixed[{i}] is {}; it must be 0 or 1", marks[i])));
        }
        let fixed: Vec<bool> =
            if marks.is_empty() { vec![false; count] } else { marks.iter().map(|&m| m == 1).collect() };
        let verdict = check_plan(&specs, &offsets, &fixed, flags & NNM_VALIDATE_TRUST_FIXED != 0)?;
        out.write(verdict);
        Ok(())
    })
}

/// Reads `count` plan entries into buffers and offsets.
///
/// # Safety
/// `buffers` must be NULL or point to `count` readable entries.
unsafe fn read_plan(buffers: *const nnm_plan_buffer, count: usize) -> crate::Result<(Vec<Buffer>, Vec<u64>)> {
    // SAFETY: the caller promises `count` readable entries at `buffers`.
    let items = unsafe { slice_in(buffers, count, "buffers") }?;
    let mut specs = Vec::with_capacity(count);
    let mut offsets = Vec::with_capacity(count);
    for (i, b) in items.iter().enumerate() {
        let lifetime = Lifetime::inclusive(b.first_use, b.last_use)
            .map_err(|e| Error::new(e.status(), format!("buffer {i}: {}", e.message())))?;
        specs.push(Buffer { size: b.size, lifetime, fixed_offset: None });
        offsets.push(b.offset);
    }
    Ok((specs, offsets))
}

/// Runs the validator and turns its verdict into `nnm_validation`; an
/// invalid plan also sets the last error (the call itself succeeds).
fn check_plan(
    specs: &[Buffer],
    offsets: &[u64],
    is_fixed: &[bool],
    trust_fixed: bool,
) -> crate::Result<nnm_validation> {
    let Verdict { peak, overlap, fixed_overlaps } = match validate_with_fixed(specs, offsets, is_fixed, trust_fixed) {
        Ok(v) => v,
        Err(e @ Invalid::OffsetOverflow(_)) => return Err(Error::overflow(e.to_string())),
        Err(e) => return Err(Error::invalid(e.to_string())),
    };
    let mut verdict = nnm_validation { peak_bytes: peak, valid: 1, ..Default::default() };
    if let Some(f) = fixed_overlaps.first {
        verdict.fixed_overlap_count = fixed_overlaps.count;
        verdict.fixed_overlap_first = f.first;
        verdict.fixed_overlap_second = f.second;
        verdict.fixed_overlap_step = f.step;
    }
    if let Some(o) = overlap {
        super::error::set_last_error(&format!("invalid plan: {o}"));
        verdict.valid = 0;
        verdict.first = o.first;
        verdict.second = o.second;
        verdict.step = o.step;
    }
    Ok(verdict)
}
