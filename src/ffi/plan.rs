//! C API of the static memory planner (`nnm_planner_*`, `nnm_plan_*`,
//! `nnm_algorithm_*`). Steps are TFLite Micro's: `first_use` and `last_use`
//! are inclusive; `first_use = last_use = NNM_UNUSED_STEP` means never used.

use std::ffi::c_char;

use super::error::{guard, guard_void, non_null, read_str, write_out};
use super::text::copy_text;
use super::cancel::{nnm_cancel_token, token_ref};
use super::handle::{free_handle, into_handle, value_mut, value_ref, Tagged};
use crate::plan::{validate, Algorithm, Buffer, Invalid, Lifetime, Planner};
use super::status::nnm_status;
use crate::status::Error;

/// `first_use` and `last_use` of a buffer that is never used (TFLite
/// Micro's convention). Equals `crate::plan::UNUSED_STEP`.
pub const NNM_UNUSED_STEP: i64 = -1;

/// The default work limit of a new planner (see
/// `nnm_planner_set_work_limit`).
pub const NNM_DEFAULT_WORK_LIMIT: u64 = 130_000_000;
const _: () = assert!(NNM_DEFAULT_WORK_LIMIT == crate::plan::DEFAULT_WORK_LIMIT);

/// A static memory planner: collects buffers, plans them once, answers
/// queries. Not thread-safe: calls on one planner must not overlap; distinct
/// planners may be used from different threads. `const` queries may run
/// concurrently with each other.
pub struct nnm_planner {
    tag: u64,
    planner: Planner,
}

const PLANNER_TAG: u64 = 0x6e6e_6d5f_706c_616e; // "nnm_plan"

impl Tagged for nnm_planner {
    const NAME: &'static str = "nnm_planner";
    fn tag_is_valid(&self) -> bool {
        self.tag == PLANNER_TAG
    }
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
}

/// A buffer with its offset, for `nnm_plan_validate`.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct nnm_plan_buffer {
    /// Bytes.
    pub size: u64,
    /// First step the buffer is live (inclusive), or NNM_UNUSED_STEP.
    pub first_use: i64,
    /// Last step the buffer is live (inclusive), or NNM_UNUSED_STEP.
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
    /// 1 when no two buffers live at the same step share a byte.
    pub valid: u8,
}

unsafe fn planner_mut<'a>(p: *mut nnm_planner) -> crate::Result<&'a mut Planner> {
    value_mut(p, "planner").map(|h| &mut h.planner)
}

pub(crate) unsafe fn planner_ref<'a>(p: *const nnm_planner) -> crate::Result<&'a Planner> {
    value_ref(p, "planner").map(|h| &h.planner)
}

/// Looks an algorithm up by name ("auto", "tflm", "linear",
/// "size-first-fit", "size-best-fit", "lifetime-first-fit", "live-step",
/// "conflict", "exact", "floor-first") and writes its `nnm_algorithm` value.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT for an unknown name (the message
/// lists the known ones).
#[no_mangle]
pub unsafe extern "C" fn nnm_algorithm_from_name(name: *const c_char, out_algorithm: *mut u32) -> nnm_status {
    guard(|| {
        non_null(out_algorithm, "out_algorithm")?;
        let algorithm = Algorithm::from_name(read_str(name, "name")?)?;
        write_out(out_algorithm, algorithm as u32);
        Ok(())
    })
}

/// The name of an `nnm_algorithm` value, or NULL for an unknown value.
/// Static; never freed.
#[no_mangle]
pub extern "C" fn nnm_algorithm_name(algorithm: u32) -> *const c_char {
    const NAMES: [&str; 10] = [
        "auto\0",
        "tflm\0",
        "linear\0",
        "size-first-fit\0",
        "size-best-fit\0",
        "lifetime-first-fit\0",
        "live-step\0",
        "conflict\0",
        "exact\0",
        "floor-first\0",
    ];
    match NAMES.get(algorithm as usize) {
        Some(n) => n.as_ptr().cast(),
        None => std::ptr::null(),
    }
}

/// Creates a planner: algorithm AUTO, alignment 1, no capacity, the default
/// work limit (see `nnm_planner_set_work_limit`), no time limit, no node
/// limit, no cancellation token. Free it with `nnm_planner_free`.
///
/// Errors: NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_new(out_planner: *mut *mut nnm_planner) -> nnm_status {
    guard(|| {
        non_null(out_planner, "out_planner")?;
        let handle = into_handle(nnm_planner { tag: PLANNER_TAG, planner: Planner::new() });
        write_out(out_planner, handle);
        Ok(())
    })
}

/// Frees a planner. NULL is a no-op; a double free is detected, reported
/// through `nnm_last_error()` and otherwise ignored.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_free(planner: *mut nnm_planner) {
    guard_void(|| free_handle(planner))
}

/// Selects the algorithm (an `nnm_algorithm` value) for the next plan.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT for an unknown value.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_set_algorithm(planner: *mut nnm_planner, algorithm: u32) -> nnm_status {
    guard(|| {
        let p = planner_mut(planner)?;
        p.set_algorithm(Algorithm::from_value(algorithm)?);
        Ok(())
    })
}

/// Selects the algorithm by name (see `nnm_algorithm_from_name`).
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT for an unknown name.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_set_algorithm_name(planner: *mut nnm_planner, name: *const c_char) -> nnm_status {
    guard(|| {
        let p = planner_mut(planner)?;
        p.set_algorithm(Algorithm::from_name(read_str(name, "name")?)?);
        Ok(())
    })
}

/// Sets the alignment of every size (rounded up) and offset: a power of two,
/// before any buffer is added.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (not a power of two),
/// WRONG_STATE (buffers already added).
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_set_alignment(planner: *mut nnm_planner, alignment: u64) -> nnm_status {
    guard(|| planner_mut(planner)?.set_alignment(alignment))
}

/// Sets the capacity the plan must fit; 0 means no capacity. When the best
/// plan is larger, `nnm_planner_plan` returns DOES_NOT_FIT.
///
/// Errors: NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_set_capacity(planner: *mut nnm_planner, capacity_bytes: u64) -> nnm_status {
    guard(|| {
        planner_mut(planner)?.set_capacity((capacity_bytes != 0).then_some(capacity_bytes));
        Ok(())
    })
}

/// Caps the wall time of AUTO and EXACT, in seconds: any positive finite
/// number (below a nanosecond counts as one; more than a 64-bit count of
/// seconds holds, as no limit). No time limit by default. At the limit the
/// best plan so far is kept and the result's `time_limit_cut` is 1: the one
/// setting that makes the plan depend on the machine's speed.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (zero, negative, NaN, infinite).
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_set_time_limit(planner: *mut nnm_planner, seconds: f64) -> nnm_status {
    guard(|| planner_mut(planner)?.set_time_limit_secs(seconds))
}

/// Caps the nodes a search explores (0: no cap, the default). Like the work
/// limit, a node limit gives the same plan on any machine.
///
/// Errors: NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_set_node_limit(planner: *mut nnm_planner, max_nodes: u64) -> nnm_status {
    guard(|| {
        planner_mut(planner)?.set_node_limit((max_nodes != 0).then_some(max_nodes));
        Ok(())
    })
}

/// Caps the work of AUTO and EXACT (0: no cap), in work units: 10 per
/// search node plus one per conflict entry, floor, buffer or section it
/// visits (a quarter per buffer scanned in parts under 2048 buffers), one
/// per conflict entry built for the search, and an estimate per buffer for
/// each heuristic AUTO runs first. Counted, not timed, so
/// the same input and settings give the same plan on any machine. The
/// default, `NNM_DEFAULT_WORK_LIMIT`, is about 1 s on a 2-core Xeon for
/// the largest shipped traces (tens of thousands of buffers); small models
/// finish far below it.
///
/// Errors: NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_set_work_limit(planner: *mut nnm_planner, max_units: u64) -> nnm_status {
    guard(|| {
        planner_mut(planner)?.set_work_limit((max_units != 0).then_some(max_units));
        Ok(())
    })
}

/// Lets `token` stop this planner's searches (NULL: none). The planner keeps
/// its own reference; `nnm_cancel_token_cancel` from any thread then stops
/// a running `nnm_planner_plan`, which returns its best plan so far.
///
/// Errors: NULL_ARGUMENT (planner), INVALID_ARGUMENT (not a token).
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_set_cancel_token(planner: *mut nnm_planner, token: *const nnm_cancel_token) -> nnm_status {
    guard(|| {
        let p = planner_mut(planner)?;
        let flag = if token.is_null() { None } else { Some(token_ref(token)?.flag.clone()) };
        p.set_cancel_flag(flag);
        Ok(())
    })
}

/// Adds a buffer of `size` bytes live from step `first_use` to `last_use`
/// (inclusive; both NNM_UNUSED_STEP for a buffer never used). Zero sizes are
/// legal. Writes its index to `out_index` when not NULL.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (`last_use < first_use`, negative
/// step), OVERFLOW (sizes past 2^64), WRONG_STATE (already planned; reset
/// first).
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_add_buffer(
    planner: *mut nnm_planner,
    size: u64,
    first_use: i64,
    last_use: i64,
    out_index: *mut usize,
) -> nnm_status {
    guard(|| {
        let p = planner_mut(planner)?;
        let index = p.add_buffer(size, Lifetime::inclusive(first_use, last_use)?, None)?;
        if !out_index.is_null() {
            write_out(out_index, index);
        }
        Ok(())
    })
}

/// Adds a buffer with a fixed offset (an offline plan): it keeps `offset`
/// and the others are planned around it. `offset` must be a multiple of the
/// alignment.
///
/// Errors: as `nnm_planner_add_buffer`, plus INVALID_ARGUMENT for an
/// unaligned offset and OVERFLOW when `offset + size` overflows.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_add_fixed_buffer(
    planner: *mut nnm_planner,
    size: u64,
    first_use: i64,
    last_use: i64,
    offset: u64,
    out_index: *mut usize,
) -> nnm_status {
    guard(|| {
        let p = planner_mut(planner)?;
        let index = p.add_buffer(size, Lifetime::inclusive(first_use, last_use)?, Some(offset))?;
        if !out_index.is_null() {
            write_out(out_index, index);
        }
        Ok(())
    })
}

/// Plans the buffers added so far.
///
/// Errors: NULL_ARGUMENT; WRONG_STATE (already planned); INVALID_ARGUMENT
/// (two fixed buffers overlap); DOES_NOT_FIT when a capacity is set and the
/// best plan exceeds it: the message reads "requested X B, available Y B,
/// missing Z B" and `nnm_planner_required_bytes` gives X (offsets stay
/// readable).
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_plan(planner: *mut nnm_planner) -> nnm_status {
    guard(|| planner_mut(planner)?.plan().map(|_| ()))
}

/// Writes the offset of buffer `index`.
///
/// Errors: NULL_ARGUMENT, WRONG_STATE (not planned), INVALID_ARGUMENT (index
/// out of range).
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_get_offset(planner: *const nnm_planner, index: usize, out_offset: *mut u64) -> nnm_status {
    guard(|| {
        let p = planner_ref(planner)?;
        non_null(out_offset, "out_offset")?;
        write_out(out_offset, p.offset(index)?);
        Ok(())
    })
}

/// Writes every buffer's offset, in order of addition, into `out_offsets`
/// (`count` entries, which must equal the buffer count).
///
/// Errors: NULL_ARGUMENT, WRONG_STATE (not planned), INVALID_ARGUMENT
/// (count differs from the buffer count).
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_get_offsets(planner: *const nnm_planner, out_offsets: *mut u64, count: usize) -> nnm_status {
    guard(|| {
        let p = planner_ref(planner)?;
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
        non_null(out_offsets, "out_offsets")?;
        std::slice::from_raw_parts_mut(out_offsets, count).copy_from_slice(&outcome.offsets);
        Ok(())
    })
}

/// Writes the summary of the last plan (also after DOES_NOT_FIT).
///
/// Errors: NULL_ARGUMENT, WRONG_STATE (not planned).
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_get_result(planner: *const nnm_planner, out_result: *mut nnm_plan_result) -> nnm_status {
    guard(|| {
        let p = planner_ref(planner)?;
        non_null(out_result, "out_result")?;
        let o = p.planned()?;
        write_out(
            out_result,
            nnm_plan_result {
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
            },
        );
        Ok(())
    })
}

/// Writes the lower bound of the buffers added so far: the largest total
/// size live at one step. Available at any time. O(n log n).
///
/// Errors: NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_lower_bound(planner: *const nnm_planner, out_bytes: *mut u64) -> nnm_status {
    guard(|| {
        let p = planner_ref(planner)?;
        non_null(out_bytes, "out_bytes")?;
        write_out(out_bytes, p.lower_bound());
        Ok(())
    })
}

/// Writes the bytes the last plan needs (its peak); after DOES_NOT_FIT this
/// is the capacity that would have sufficed for that plan.
///
/// Errors: NULL_ARGUMENT, WRONG_STATE (not planned).
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_required_bytes(planner: *const nnm_planner, out_bytes: *mut u64) -> nnm_status {
    guard(|| {
        let p = planner_ref(planner)?;
        non_null(out_bytes, "out_bytes")?;
        write_out(out_bytes, p.planned()?.peak);
        Ok(())
    })
}

/// Writes the number of buffers added.
///
/// Errors: NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_buffer_count(planner: *const nnm_planner, out_count: *mut usize) -> nnm_status {
    guard(|| {
        let p = planner_ref(planner)?;
        non_null(out_count, "out_count")?;
        write_out(out_count, p.buffer_count());
        Ok(())
    })
}

/// Drops every buffer and the plan; keeps algorithm, alignment, capacity and
/// the time, node and work limits.
///
/// Errors: NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_reset(planner: *mut nnm_planner) -> nnm_status {
    guard(|| {
        planner_mut(planner)?.reset();
        Ok(())
    })
}

/// Writes a TFLite-Micro-style text picture of the plan, NUL-terminated,
/// into `buf` (`len` bytes). With `buf` NULL and `len` 0 it only writes the
/// bytes needed (NUL included) to `out_written`; on success `out_written`
/// receives the bytes written (NUL included).
///
/// Errors: NULL_ARGUMENT, WRONG_STATE (not planned), BUFFER_TOO_SMALL (the
/// message gives the size needed; nothing is written).
#[no_mangle]
pub unsafe extern "C" fn nnm_planner_draw(
    planner: *const nnm_planner,
    buf: *mut c_char,
    len: usize,
    out_written: *mut usize,
) -> nnm_status {
    guard(|| {
        let text = planner_ref(planner)?.draw()?;
        copy_text(&text, buf, len, out_written, "picture")
    })
}

/// Checks any plan, made by nnmem or elsewhere: no two buffers live at the
/// same step may share a byte. Returns OK whether or not the plan is valid
/// and writes the verdict: `valid`, the peak, and for an invalid plan the
/// first overlapping pair (earliest step, then lowest index) and the step;
/// the message of `nnm_last_error()` also names them. O(n log n).
///
/// Errors: NULL_ARGUMENT (`buffers` NULL with `count` > 0, or `out` NULL),
/// INVALID_ARGUMENT (a buffer's lifetime is malformed), OVERFLOW
/// (`count` too large, or `offset + size` overflows).
#[no_mangle]
pub unsafe extern "C" fn nnm_plan_validate(
    buffers: *const nnm_plan_buffer,
    count: usize,
    out: *mut nnm_validation,
) -> nnm_status {
    guard(|| {
        non_null(out, "out")?;
        if count > isize::MAX as usize / std::mem::size_of::<nnm_plan_buffer>() {
            return Err(Error::overflow(format!("count {count} is too large")));
        }
        let items: &[nnm_plan_buffer] = if count == 0 {
            &[]
        } else {
            non_null(buffers, "buffers")?;
            std::slice::from_raw_parts(buffers, count)
        };
        let mut specs = Vec::with_capacity(count);
        let mut offsets = Vec::with_capacity(count);
        for (i, b) in items.iter().enumerate() {
            let lifetime = Lifetime::inclusive(b.first_use, b.last_use)
                .map_err(|e| Error::new(e.status(), format!("buffer {i}: {}", e.message())))?;
            specs.push(Buffer { size: b.size, lifetime, fixed_offset: None });
            offsets.push(b.offset);
        }
        let verdict = match validate(&specs, &offsets) {
            Ok(peak) => nnm_validation { peak_bytes: peak, valid: 1, ..Default::default() },
            Err(Invalid::Overlap(o)) => {
                super::error::set_last_error(&format!("invalid plan: {o}"));
                let peak = specs.iter().zip(&offsets).filter(|(b, _)| b.occupies()).map(|(b, &o)| o + b.size).max().unwrap_or(0);
                nnm_validation { peak_bytes: peak, first: o.first, second: o.second, step: o.step, valid: 0 }
            }
            Err(e @ Invalid::OffsetOverflow(_)) => return Err(Error::overflow(e.to_string())),
            Err(e) => return Err(Error::invalid(e.to_string())),
        };
        write_out(out, verdict);
        Ok(())
    })
}
