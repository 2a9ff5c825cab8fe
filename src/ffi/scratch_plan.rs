//! `nnm_scratch_planner_*`: the planner in the caller's scratch memory,
//! the embedded build's planner (and the host's, for callers that give it
//! no heap: the TFLite Micro class). The handle is the start of the
//! scratch, aligned to 4 bytes; every call re-reads the planner from the
//! words there (`plan::scratch`), which keep their own length.

use core::ffi::c_void;
use core::ptr::NonNull;

use super::bare::{non_null, run, words_in, write_out, Failure};
use crate::plan::scratch::{self, ScratchBuffer, ScratchError, ScratchPlanner};
use crate::plan::Algorithm;
use crate::status::Status;

/// A planner inside caller memory (opaque; its address is the scratch's
/// start, aligned up to 4 bytes).
pub struct nnm_scratch_planner {
    _words: [u32; 0],
}

/// Bytes of scratch each buffer takes (its record and working space).
pub const NNM_SCRATCH_PLANNER_BYTES_PER_BUFFER: usize = 24;

/// Bytes of scratch the planner takes besides its buffers (its header), not
/// counting up to 3 bytes lost to aligning an unaligned scratch to 4.
pub const NNM_SCRATCH_PLANNER_HEADER_BYTES: usize = 12;

// Literals above, for cbindgen, which cannot evaluate a path.
const _: () = assert!(
    NNM_SCRATCH_PLANNER_BYTES_PER_BUFFER == scratch::BYTES_PER_BUFFER
        && NNM_SCRATCH_PLANNER_HEADER_BYTES == scratch::HEADER_BYTES
);

/// One buffer of a scratch planner, as added (size rounded up to the
/// alignment), with its offset once planned.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct nnm_scratch_buffer {
    /// Bytes.
    pub size: u32,
    /// First step used, inclusive (-1: before the first step).
    pub first_use: i32,
    /// Last step used, inclusive (-1 with a first use of -1: never used).
    pub last_use: i32,
    /// 1 when the buffer has a fixed (offline) offset, else 0.
    pub fixed: u32,
    /// Its offset: the fixed one, or the planned one.
    pub offset: u32,
}

impl From<ScratchBuffer> for nnm_scratch_buffer {
    fn from(b: ScratchBuffer) -> Self {
        nnm_scratch_buffer {
            size: b.size,
            first_use: b.first_use,
            last_use: b.last_use,
            fixed: u32::from(b.fixed_offset.is_some()),
            offset: b.fixed_offset.unwrap_or(b.offset),
        }
    }
}

/// The scratch planner at `planner`.
///
/// # Safety
/// `planner` must be NULL or a handle from `nnm_scratch_planner_init` whose
/// scratch is still the caller's to lend (valid for reads and writes, used
/// by no other call meanwhile): at least the header words are then
/// readable, and the records the header counts follow them.
// Not inlined: every export calls it, and one copy is smaller on a board.
#[inline(never)]
unsafe fn planner_at<'a>(planner: *mut nnm_scratch_planner) -> Result<ScratchPlanner<'a>, Failure> {
    let words = non_null(planner, "planner")?.cast::<u32>();
    if !words.as_ptr().is_aligned() {
        return Err(Failure::Misaligned("planner", 4));
    }
    // SAFETY: a handle from init points to the header's words in the
    // caller's scratch (init refuses less), aligned (checked above).
    let header = unsafe { &mut *words.as_ptr().cast::<[u32; scratch::HEADER_WORDS]>() };
    let capacity = ScratchPlanner::recorded_capacity(header)?;
    // SAFETY: the header is one init wrote (its tag checked); init laid
    // `capacity` records right after it, inside the scratch the caller
    // still lends to the planner alone, apart from the header's words.
    let records = unsafe {
        let first = words.as_ptr().add(scratch::HEADER_WORDS).cast::<scratch::Record>();
        core::slice::from_raw_parts_mut(first, capacity)
    };
    Ok(ScratchPlanner::open(header, records)?)
}

/// The algorithm value `algorithm`, or why not.
fn algorithm_of(value: u32) -> Result<Algorithm, Failure> {
    Algorithm::ALL.get(value as usize).copied().ok_or(Failure::Scratch(ScratchError::UnknownAlgorithm { value }))
}

/// Makes a planner inside `scratch` (`scratch_bytes` bytes at any address;
/// the start is aligned up to 4 bytes) that plans with `algorithm`:
/// NNM_ALGORITHM_TFLM, NNM_ALGORITHM_LINEAR or NNM_ALGORITHM_SIZE_FIRST_FIT.
/// It holds (scratch_bytes - alignment loss - NNM_SCRATCH_PLANNER_HEADER_BYTES)
/// / NNM_SCRATCH_PLANNER_BYTES_PER_BUFFER buffers (NNM_SCRATCH_PLANNER_BYTES
/// gives the bytes for a count). Alignment 1 until
/// nnm_scratch_planner_set_alignment.
///
/// The scratch then belongs to the planner until the caller is done with
/// it: nnmem keeps nothing else (no heap, no global state), so there is
/// nothing to free; reusing the scratch ends the planner (later calls with
/// its handle are refused when the header was overwritten, undefined when
/// only the buffer records were). *out_planner is written on success only.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT for an unknown algorithm or one
/// that needs the heap planner (nnm_planner); DOES_NOT_FIT when the scratch
/// cannot hold the header (the message gives the bytes missing); OVERFLOW
/// when the scratch runs past the end of the address space.
///
/// # Safety
/// `scratch` must be NULL or valid for reads and writes of `scratch_bytes`
/// bytes, used by nothing else while the planner is in use.
#[no_mangle]
pub unsafe extern "C" fn nnm_scratch_planner_init(
    scratch: *mut c_void,
    scratch_bytes: usize,
    algorithm: u32,
    out_planner: *mut *mut nnm_scratch_planner,
) -> Status {
    run(|| {
        let start = non_null(scratch, "scratch")?.cast::<u8>();
        let out = non_null(out_planner, "out_planner")?;
        let address = start.as_ptr() as usize;
        if address.checked_add(scratch_bytes).is_none() || scratch_bytes > isize::MAX as usize {
            return Err(Failure::Wraps("scratch", scratch_bytes));
        }
        let algorithm = algorithm_of(algorithm)?;
        let pad = (address.wrapping_neg() & 3).min(scratch_bytes);
        let usable = scratch_bytes - pad;
        if usable < scratch::HEADER_BYTES {
            let needed = scratch::HEADER_BYTES + (address.wrapping_neg() & 3);
            return Err(ScratchError::ScratchTooSmall { bytes: scratch_bytes, needed }.into());
        }
        let capacity = scratch::capacity_for(usable);
        let lost = scratch_bytes - scratch::HEADER_BYTES - capacity * scratch::BYTES_PER_BUFFER;
        // SAFETY: `pad + HEADER_BYTES + capacity * BYTES_PER_BUFFER <=
        // scratch_bytes`, all inside the caller's scratch (checked not to
        // wrap), which the caller lends to the planner alone; the start is
        // aligned to 4, as the records after the 3-word header are.
        let (first, header, records) = unsafe {
            let first = start.as_ptr().add(pad).cast::<u32>();
            let header = &mut *first.cast::<[u32; scratch::HEADER_WORDS]>();
            let records = first.add(scratch::HEADER_WORDS).cast::<scratch::Record>();
            (first, header, core::slice::from_raw_parts_mut(records, capacity))
        };
        ScratchPlanner::init(header, records, algorithm, lost, pad)?;
        // SAFETY: `out` is the caller's out-parameter, non-NULL.
        unsafe { write_out(out, first.cast::<nnm_scratch_planner>()) };
        Ok(())
    })
}

/// Sets the alignment (a power of two) of every size (rounded up) and fixed
/// offset. Only before buffers are added.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT for a value that is not a power
/// of two, or a handle whose scratch holds no planner; WRONG_STATE after
/// buffers were added.
///
/// # Safety
/// `planner` must be NULL or a handle from `nnm_scratch_planner_init` whose
/// scratch is still lent to it.
#[no_mangle]
pub unsafe extern "C" fn nnm_scratch_planner_set_alignment(
    planner: *mut nnm_scratch_planner,
    alignment: u32,
) -> Status {
    run(|| {
        // SAFETY: the caller's promise is `planner_at`'s.
        let mut p = unsafe { planner_at(planner) }?;
        Ok(p.set_alignment(alignment)?)
    })
}

/// The shared body of the two add calls.
///
/// # Safety
/// As `nnm_scratch_planner_add_buffer`.
unsafe fn add(
    planner: *mut nnm_scratch_planner,
    size: u32,
    first_use: i32,
    last_use: i32,
    fixed_offset: Option<u32>,
    out_index: *mut usize,
) -> Status {
    run(|| {
        // SAFETY: the caller's promise is `planner_at`'s.
        let mut p = unsafe { planner_at(planner) }?;
        let index = p.add(size, first_use, last_use, fixed_offset)?;
        if let Some(out) = NonNull::new(out_index) {
            // SAFETY: a non-NULL out_index is the caller's out-parameter.
            unsafe { write_out(out, index) };
        }
        Ok(())
    })
}

/// Adds a buffer of `size` bytes (rounded up to the alignment) used from
/// step `first_use` to `last_use`, inclusive (TFLite Micro's steps: a first
/// use of -1 is live before the first step; -1 and -1: never used, which
/// NNM_ALGORITHM_TFLM plans at step -1 as TFLite Micro does and the others
/// let occupy nothing). Writes its index (the order of adding) to
/// *out_index unless that is NULL. Drops the plan.
///
/// Errors, changing nothing: NULL_ARGUMENT for planner; DOES_NOT_FIT when
/// the scratch holds no more buffers (the message gives the bytes a scratch
/// for one more needs and how many are missing); INVALID_ARGUMENT for a
/// lifetime TFLite Micro cannot state (last use below 0 or before the first
/// use, first use below -1, last use 2^31 - 1) or a handle whose scratch
/// holds no planner; OVERFLOW when the size rounded up to the alignment
/// passes 2^32 - 1 (planning checks the sizes' sum).
///
/// # Safety
/// `planner` must be NULL or a handle from `nnm_scratch_planner_init` whose
/// scratch is still lent to it; `out_index` NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn nnm_scratch_planner_add_buffer(
    planner: *mut nnm_scratch_planner,
    size: u32,
    first_use: i32,
    last_use: i32,
    out_index: *mut usize,
) -> Status {
    // SAFETY: the caller's promise is `add`'s.
    unsafe { add(planner, size, first_use, last_use, None, out_index) }
}

/// nnm_scratch_planner_add_buffer for an offline-planned buffer that keeps
/// `offset` (a multiple of the alignment, below 2^32 - 1). Fixed buffers may
/// share memory: TFLite Micro trusts such an offline plan, and every
/// algorithm here plans the others around them
/// (nnm_scratch_planner_fixed_overlap_count counts the pairs).
///
/// Errors: as nnm_scratch_planner_add_buffer, and INVALID_ARGUMENT for an
/// offset that is not a multiple of the alignment.
///
/// # Safety
/// As `nnm_scratch_planner_add_buffer`.
#[no_mangle]
pub unsafe extern "C" fn nnm_scratch_planner_add_fixed_buffer(
    planner: *mut nnm_scratch_planner,
    size: u32,
    first_use: i32,
    last_use: i32,
    offset: u32,
    out_index: *mut usize,
) -> Status {
    // SAFETY: the caller's promise is `add`'s.
    unsafe { add(planner, size, first_use, last_use, Some(offset), out_index) }
}

/// Plans the buffers added (unless planned since the last add) and writes
/// the bytes the plan needs (the highest offset + size over every buffer,
/// never-used and zero-size ones included, so that every buffer lies inside
/// it: under NNM_ALGORITHM_TFLM TFLite Micro's arena size, under LINEAR the
/// end of the stack) to *out_bytes unless that is NULL. NNM_ALGORITHM_TFLM gives TFLite
/// Micro's GreedyMemoryPlanner's offsets byte for byte; SIZE_FIRST_FIT the
/// heap planner's; LINEAR stacks the buffers. O(n^2) (LINEAR: O(n)); no
/// memory beyond the scratch.
///
/// Errors: NULL_ARGUMENT for planner; INVALID_ARGUMENT for a handle whose
/// scratch holds no planner; OVERFLOW, nothing planned, when the sizes of
/// all buffers plus the highest fixed end pass 2^32 - 1 bytes (the message
/// names the buffer where the sum does).
///
/// # Safety
/// `planner` must be NULL or a handle from `nnm_scratch_planner_init` whose
/// scratch is still lent to it; `out_bytes` NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn nnm_scratch_planner_plan(planner: *mut nnm_scratch_planner, out_bytes: *mut u32) -> Status {
    run(|| {
        // SAFETY: the caller's promise is `planner_at`'s.
        let mut p = unsafe { planner_at(planner) }?;
        let bytes = p.plan()?;
        if let Some(out) = NonNull::new(out_bytes) {
            // SAFETY: a non-NULL out_bytes is the caller's out-parameter.
            unsafe { write_out(out, bytes) };
        }
        Ok(())
    })
}

/// Takes `count` offsets (one per buffer, in the order added) planned
/// elsewhere as the plan: by the heap planner (nnm_planner) with an
/// algorithm the scratch planner does not run, for example. Fixed buffers
/// must keep their offsets. The offsets are not checked for overlaps
/// (nnm_plan_validate checks a plan). Writes the bytes the plan needs to
/// *out_bytes unless that is NULL. Queries then answer from this plan until
/// a buffer is added.
///
/// Errors, changing nothing: NULL_ARGUMENT; INVALID_ARGUMENT when `count`
/// is not the number of buffers (both given), when a fixed buffer moves
/// (its index and both offsets given), or for a handle whose scratch holds
/// no planner; OVERFLOW when an offset + size passes 2^32 - 1.
///
/// # Safety
/// `planner` must be NULL or a handle from `nnm_scratch_planner_init` whose
/// scratch is still lent to it; `offsets` NULL (with `count` 0) or valid for
/// reads of `count` values; `out_bytes` NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn nnm_scratch_planner_set_plan(
    planner: *mut nnm_scratch_planner,
    offsets: *const u32,
    count: usize,
    out_bytes: *mut u32,
) -> Status {
    run(|| {
        // SAFETY: the caller's promise: `count` readable offsets.
        let offsets = unsafe { words_in(offsets, count, "offsets") }?;
        // SAFETY: the caller's promise is `planner_at`'s.
        let mut p = unsafe { planner_at(planner) }?;
        let bytes = p.adopt(offsets)?;
        if let Some(out) = NonNull::new(out_bytes) {
            // SAFETY: a non-NULL out_bytes is the caller's out-parameter.
            unsafe { write_out(out, bytes) };
        }
        Ok(())
    })
}

/// The offset of buffer `index` (in the order added), planning first when
/// buffers were added since the last plan.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT for an index out of range (the
/// message gives the count) or a handle whose scratch holds no planner;
/// OVERFLOW as nnm_scratch_planner_plan.
///
/// # Safety
/// `planner` must be NULL or a handle from `nnm_scratch_planner_init` whose
/// scratch is still lent to it; `out_offset` NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn nnm_scratch_planner_get_offset(
    planner: *mut nnm_scratch_planner,
    index: usize,
    out_offset: *mut u32,
) -> Status {
    run(|| {
        let out = non_null(out_offset, "out_offset")?;
        // SAFETY: the caller's promise is `planner_at`'s.
        let mut p = unsafe { planner_at(planner) }?;
        let offset = p.offset(index)?;
        // SAFETY: out_offset is the caller's out-parameter, non-NULL.
        unsafe { write_out(out, offset) };
        Ok(())
    })
}

/// Buffer `index` as added (size rounded up), with its offset (the fixed
/// one, or the planned one), planning first when buffers were added since
/// the last plan.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT for an index out of range or a
/// handle whose scratch holds no planner; OVERFLOW as
/// nnm_scratch_planner_plan.
///
/// # Safety
/// `planner` must be NULL or a handle from `nnm_scratch_planner_init` whose
/// scratch is still lent to it; `out_buffer` NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn nnm_scratch_planner_get_buffer(
    planner: *mut nnm_scratch_planner,
    index: usize,
    out_buffer: *mut nnm_scratch_buffer,
) -> Status {
    run(|| {
        let out = non_null(out_buffer, "out_buffer")?;
        // SAFETY: the caller's promise is `planner_at`'s.
        let mut p = unsafe { planner_at(planner) }?;
        let buffer = p.buffer(index)?;
        // SAFETY: out_buffer is the caller's out-parameter, non-NULL.
        unsafe { write_out(out, buffer.into()) };
        Ok(())
    })
}

/// The number of buffers added (*out_count) and how many the scratch holds
/// (*out_capacity); either may be NULL.
///
/// Errors: NULL_ARGUMENT for planner; INVALID_ARGUMENT for a handle whose
/// scratch holds no planner.
///
/// # Safety
/// `planner` must be NULL or a handle from `nnm_scratch_planner_init` whose
/// scratch is still lent to it; each out-parameter NULL or valid for one
/// write.
#[no_mangle]
pub unsafe extern "C" fn nnm_scratch_planner_buffer_count(
    planner: *mut nnm_scratch_planner,
    out_count: *mut usize,
    out_capacity: *mut usize,
) -> Status {
    run(|| {
        // SAFETY: the caller's promise is `planner_at`'s.
        let p = unsafe { planner_at(planner) }?;
        if let Some(out) = NonNull::new(out_count) {
            // SAFETY: a non-NULL out_count is the caller's out-parameter.
            unsafe { write_out(out, p.len()) };
        }
        if let Some(out) = NonNull::new(out_capacity) {
            // SAFETY: a non-NULL out_capacity is the caller's out-parameter.
            unsafe { write_out(out, p.capacity()) };
        }
        Ok(())
    })
}

/// The lower bound of the buffers added: the most bytes live at one step,
/// where bytes fixed buffers share count once; no plan needs fewer.
/// O(n^2) (the scratch's one word of working space per buffer leaves no
/// room for a sorted sweep), plus a sort of the fixed buffers per step when
/// they share memory. Uses the
/// scratch's working space, not the plan.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT for a handle whose scratch holds
/// no planner; OVERFLOW as nnm_scratch_planner_plan.
///
/// # Safety
/// `planner` must be NULL or a handle from `nnm_scratch_planner_init` whose
/// scratch is still lent to it; `out_bytes` NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn nnm_scratch_planner_lower_bound(
    planner: *mut nnm_scratch_planner,
    out_bytes: *mut u32,
) -> Status {
    run(|| {
        let out = non_null(out_bytes, "out_bytes")?;
        // SAFETY: the caller's promise is `planner_at`'s.
        let mut p = unsafe { planner_at(planner) }?;
        let bound = p.lower_bound()?;
        // SAFETY: out_bytes is the caller's out-parameter, non-NULL.
        unsafe { write_out(out, bound) };
        Ok(())
    })
}

/// The pairs of fixed buffers live at a common step that share a byte
/// (an offline plan TFLite Micro trusts).
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT for a handle whose scratch holds
/// no planner.
///
/// # Safety
/// `planner` must be NULL or a handle from `nnm_scratch_planner_init` whose
/// scratch is still lent to it; `out_pairs` NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn nnm_scratch_planner_fixed_overlap_count(
    planner: *mut nnm_scratch_planner,
    out_pairs: *mut u64,
) -> Status {
    run(|| {
        let out = non_null(out_pairs, "out_pairs")?;
        // SAFETY: the caller's promise is `planner_at`'s.
        let mut p = unsafe { planner_at(planner) }?;
        let pairs = p.fixed_overlap_count();
        // SAFETY: out_pairs is the caller's out-parameter, non-NULL.
        unsafe { write_out(out, pairs) };
        Ok(())
    })
}

/// Drops every buffer and the plan; keeps the algorithm and alignment.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT for a handle whose scratch holds
/// no planner.
///
/// # Safety
/// `planner` must be NULL or a handle from `nnm_scratch_planner_init` whose
/// scratch is still lent to it.
#[no_mangle]
pub unsafe extern "C" fn nnm_scratch_planner_reset(planner: *mut nnm_scratch_planner) -> Status {
    run(|| {
        // SAFETY: the caller's promise is `planner_at`'s.
        let mut p = unsafe { planner_at(planner) }?;
        p.reset();
        Ok(())
    })
}
