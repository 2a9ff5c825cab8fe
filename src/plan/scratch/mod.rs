//! The planner that lives in memory the caller hands it: no heap, no
//! allocation, nothing kept outside the caller's scratch words, as TFLite
//! Micro's `GreedyMemoryPlanner` plans inside the scratch buffer its
//! allocator gives it. This is the embedded build's planner, and the same
//! code runs on the host (the TFLite Micro class uses it there too).
//!
//! It runs the algorithms that need no heap, from [`crate::plan::heapless`]
//! (the code the heap planner runs for them): `tflm`, `linear` and
//! `size-first-fit`, with fixed (offline) offsets and TFLite Micro's
//! trusted overlaps, and the lower bound. Sizes and offsets are `u32`
//! (TFLite Micro's `int`s), steps `i32`, on every target, so the same calls
//! give the same plan everywhere.
//!
//! Layout of the scratch, in 32-bit words:
//!
//! ```text
//! | tag, flags | capacity | count | size | start | end | fixed | offset | work |
//!   header (3 words)                  each array `capacity` words long
//! ```
//!
//! so each buffer costs [`BYTES_PER_BUFFER`] (24) bytes (TFLite Micro's
//! planner: 40) and the planner [`HEADER_BYTES`] (12) more: a scratch of
//! 40 bytes holds one buffer at any address, as TFLite Micro's does. The
//! first word holds a tag beside the algorithm, the planned flag and the
//! alignment, so a scratch that is not a planner (never initialised, or
//! overwritten) is refused instead of read as one. `work` is working
//! space: the placement order, and the placed buffers sorted by offset
//! growing into the order's consumed slots (see `heapless::walk`);
//! planning and the lower bound overwrite it, the offsets stay. Neither
//! the arena size nor the sum of the sizes is stored: recomputing them is
//! O(n).

mod error;
#[cfg(test)]
mod tests;

pub use error::ScratchError;

use super::heapless::{self, Tensors, Walk};
use crate::plan::algorithm::Algorithm;

/// Words of the header.
pub const HEADER_WORDS: usize = 3;
/// Bytes of the header.
pub const HEADER_BYTES: usize = HEADER_WORDS * 4;
/// Words each buffer takes: its size, start, end, fixed offset and offset,
/// and one entry of working space.
pub const WORDS_PER_BUFFER: usize = 6;
/// Bytes each buffer takes.
pub const BYTES_PER_BUFFER: usize = WORDS_PER_BUFFER * 4;

/// Tags the high half of the first word of an initialised scratch ("nm").
const TAG: u32 = 0x6e6d_0000;
/// The first word's fields: the tag, the algorithm, planned, alignment.
const TAG_MASK: u32 = 0xffff_0000;
const ALGORITHM_MASK: u32 = 0xf;
const PLANNED_BIT: u32 = 0x10;
/// Words given past the last whole buffer (0 to 5), for messages.
const SLACK_SHIFT: u32 = 5;
const SLACK_MASK: u32 = 0x7 << SLACK_SHIFT;
const ALIGN_SHIFT: u32 = 8;
const ALIGN_MASK: u32 = 0x1f << ALIGN_SHIFT;
/// A fixed offset of this value means "not fixed".
const NOT_FIXED: u32 = u32::MAX;

/// Header words.
const H_FLAGS: usize = 0;
const H_CAPACITY: usize = 1;
const H_COUNT: usize = 2;

/// The algorithms this planner runs.
pub const ALGORITHMS: [Algorithm; 3] = [Algorithm::Tflm, Algorithm::Linear, Algorithm::SizeFirstFit];

/// One buffer as added, with its offset once planned.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ScratchBuffer {
    /// Bytes (rounded up to the alignment).
    pub size: u32,
    /// First step it is used (inclusive; -1: before the first step).
    pub first_use: i32,
    /// Last step it is used (inclusive; -1 with a first use of -1: never).
    pub last_use: i32,
    /// Its offline offset, if fixed.
    pub fixed_offset: Option<u32>,
    /// Its offset (the fixed one, or the planned one).
    pub offset: u32,
}

/// A planner over scratch words the caller owns. Made by
/// [`ScratchPlanner::init`] (which writes the header) and re-opened from
/// the same words by [`ScratchPlanner::open`], so a C caller keeps only
/// the pointer.
#[derive(Debug)]
pub struct ScratchPlanner<'a> {
    words: &'a mut [u32],
}

/// The buffers as the heap-free algorithms read them: the five record
/// arrays, each `count` long.
struct Records<'a> {
    size: &'a [u32],
    start: &'a [u32],
    end: &'a [u32],
    fixed: &'a [u32],
}

impl<'a> Records<'a> {
    /// The first `count` records of the arrays.
    fn new(size: &'a [u32], start: &'a [u32], end: &'a [u32], fixed: &'a [u32], count: usize) -> Self {
        Records { size: cut(size, count), start: cut(start, count), end: cut(end, count), fixed: cut(fixed, count) }
    }

    /// Checks that the sizes of all buffers plus the highest fixed end fit
    /// in 32 bits: every sum the algorithms make is below it.
    fn check_sums(&self) -> Result<(), ScratchError> {
        let (mut sum, mut fixed_top) = (0u64, 0u64);
        for (index, (&size, &fixed)) in self.size.iter().zip(self.fixed).enumerate() {
            sum += u64::from(size);
            if fixed != NOT_FIXED {
                fixed_top = fixed_top.max(u64::from(fixed) + u64::from(size));
            }
            if sum + fixed_top > u64::from(u32::MAX) {
                return Err(ScratchError::Overflow { index, size });
            }
        }
        Ok(())
    }
}

impl Tensors for Records<'_> {
    type Bytes = u32;
    type Step = i32;

    #[inline]
    fn count(&self) -> usize {
        self.size.len()
    }

    #[inline]
    fn size(&self, i: usize) -> u32 {
        self.size.get(i).copied().unwrap_or(0)
    }

    #[inline]
    fn start(&self, i: usize) -> i32 {
        self.start.get(i).map_or(0, |&s| s as i32)
    }

    #[inline]
    fn end(&self, i: usize) -> i32 {
        self.end.get(i).map_or(0, |&e| e as i32)
    }

    #[inline]
    fn fixed(&self, i: usize) -> Option<u32> {
        self.fixed.get(i).copied().filter(|&o| o != NOT_FIXED)
    }
}

/// The capacity (buffers) of `words` scratch words.
pub const fn capacity_of(words: usize) -> usize {
    words.saturating_sub(HEADER_WORDS) / WORDS_PER_BUFFER
}

impl<'a> ScratchPlanner<'a> {
    /// Makes a planner in `words`, empty, planning with `algorithm`,
    /// alignment 1. Errors: `NotInScratch` for an algorithm that needs the
    /// heap, `ScratchTooSmall` when `words` cannot hold the header.
    pub fn init(words: &'a mut [u32], algorithm: Algorithm) -> Result<Self, ScratchError> {
        if !ALGORITHMS.contains(&algorithm) {
            return Err(ScratchError::NotInScratch { algorithm });
        }
        if words.len() < HEADER_WORDS {
            return Err(ScratchError::ScratchTooSmall { bytes: words.len() * 4, needed: HEADER_BYTES });
        }
        let capacity = capacity_of(words.len()).min(u32::MAX as usize);
        let used = HEADER_WORDS + capacity * WORDS_PER_BUFFER;
        let slack = (words.len() - used).min(WORDS_PER_BUFFER - 1) as u32;
        let header = [TAG | algorithm as u32 | slack << SLACK_SHIFT, capacity as u32, 0];
        let words = words.get_mut(..used).unwrap_or_default();
        for (word, value) in words.iter_mut().zip(header) {
            *word = value;
        }
        Ok(ScratchPlanner { words })
    }

    /// The number of words the planner whose header is `header` (its first
    /// [`HEADER_WORDS`] words) was made over. Errors: `NotAPlanner` when
    /// the header is not one [`ScratchPlanner::init`] wrote.
    pub fn recorded_words(header: &[u32]) -> Result<usize, ScratchError> {
        match header.get(..HEADER_WORDS) {
            Some(&[flags, capacity, _]) if flags & TAG_MASK == TAG => (capacity as usize)
                .checked_mul(WORDS_PER_BUFFER)
                .and_then(|w| w.checked_add(HEADER_WORDS))
                .ok_or(ScratchError::NotAPlanner),
            _ => Err(ScratchError::NotAPlanner),
        }
    }

    /// The planner [`ScratchPlanner::init`] made in `words` (the same
    /// words, or at least as many as it was given). Errors: `NotAPlanner`
    /// when the header is not one `init` wrote.
    pub fn open(words: &'a mut [u32]) -> Result<Self, ScratchError> {
        let total = Self::recorded_words(words)?;
        let valid = match words.get(..HEADER_WORDS) {
            Some(&[flags, capacity, count]) => {
                count <= capacity
                    && ALGORITHMS.iter().any(|&a| a as u32 == flags & ALGORITHM_MASK)
                    && (flags & ALIGN_MASK) >> ALIGN_SHIFT < 32
            }
            _ => false,
        };
        match words.get_mut(..total) {
            Some(words) if valid => Ok(ScratchPlanner { words }),
            _ => Err(ScratchError::NotAPlanner),
        }
    }

    /// The words a scratch needs to hold the header and `buffers`
    /// buffers; `None` on overflow.
    pub const fn words_for(buffers: usize) -> Option<usize> {
        match buffers.checked_mul(WORDS_PER_BUFFER) {
            Some(w) => w.checked_add(HEADER_WORDS),
            None => None,
        }
    }

    fn header(&self, at: usize) -> u32 {
        self.words.get(at).copied().unwrap_or(0)
    }

    fn set_header(&mut self, at: usize, value: u32) {
        if let Some(w) = self.words.get_mut(at) {
            *w = value;
        }
    }

    /// How many buffers the scratch holds.
    pub fn capacity(&self) -> usize {
        self.header(H_CAPACITY) as usize
    }

    /// Buffers added.
    pub fn len(&self) -> usize {
        self.header(H_COUNT) as usize
    }

    /// Whether no buffer was added.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The algorithm it plans with.
    pub fn algorithm(&self) -> Algorithm {
        let value = self.header(H_FLAGS) & ALGORITHM_MASK;
        ALGORITHMS.iter().copied().find(|&a| a as u32 == value).unwrap_or(Algorithm::Tflm)
    }

    /// The alignment of sizes and fixed offsets.
    pub fn alignment(&self) -> u32 {
        1 << ((self.header(H_FLAGS) & ALIGN_MASK) >> ALIGN_SHIFT)
    }

    /// Whether the buffers added are planned.
    pub fn is_planned(&self) -> bool {
        self.header(H_FLAGS) & PLANNED_BIT != 0
    }

    fn set_planned(&mut self, planned: bool) {
        let flags = self.header(H_FLAGS) & !PLANNED_BIT;
        self.set_header(H_FLAGS, if planned { flags | PLANNED_BIT } else { flags });
    }

    /// The six arrays, each `capacity` long. Inlined: returned, the six
    /// slices would be copied out with a call to `memcpy`.
    #[inline(always)]
    fn arrays(&mut self) -> [&mut [u32]; WORDS_PER_BUFFER] {
        let capacity = self.capacity();
        let body = self.words.get_mut(HEADER_WORDS..).unwrap_or_default();
        let mut arrays: [&mut [u32]; WORDS_PER_BUFFER] = Default::default();
        let mut rest = body;
        for array in arrays.iter_mut() {
            let Some((this, tail)) = rest.split_at_mut_checked(capacity) else { break };
            *array = this;
            rest = tail;
        }
        arrays
    }

    /// Sets the alignment (a power of two) of every size, rounded up, and
    /// of fixed offsets. Errors: `BadAlignment`; `AlignmentAfterAdd` once
    /// buffers were added.
    pub fn set_alignment(&mut self, alignment: u32) -> Result<(), ScratchError> {
        if !alignment.is_power_of_two() {
            return Err(ScratchError::BadAlignment { alignment });
        }
        if !self.is_empty() {
            return Err(ScratchError::AlignmentAfterAdd { count: self.len() });
        }
        let flags = self.header(H_FLAGS) & !ALIGN_MASK;
        self.set_header(H_FLAGS, flags | alignment.trailing_zeros() << ALIGN_SHIFT);
        Ok(())
    }

    /// Adds a buffer of `size` bytes used from step `first_use` to
    /// `last_use` inclusive (TFLite Micro's steps: -1 first means live
    /// before the first step, -1 both means never used, which `tflm` plans
    /// at step -1 as TFLite Micro does and the others let occupy nothing),
    /// at `fixed_offset` if given. Returns its index; drops the plan.
    /// Errors, changing nothing: `Full` when the scratch holds no more
    /// (with the bytes missing), `BadLifetime`, `BadOffset`, `SizeOverflow`
    /// when the size rounded up to the alignment passes 2^32 - 1 (planning
    /// checks that the sizes of all buffers plus the highest fixed end
    /// would pass 2^32 - 1 bytes (every sum the algorithms make then fits).
    pub fn add(
        &mut self,
        size: u32,
        first_use: i32,
        last_use: i32,
        fixed_offset: Option<u32>,
    ) -> Result<usize, ScratchError> {
        let count = self.len();
        if count >= self.capacity() {
            let slack = ((self.header(H_FLAGS) & SLACK_MASK) >> SLACK_SHIFT) as usize;
            return Err(ScratchError::Full { capacity: self.capacity(), bytes: (self.words.len() + slack) * 4 });
        }
        let never_used = first_use == -1 && last_use == -1;
        if !never_used && (first_use < -1 || last_use < 0 || last_use < first_use || last_use == i32::MAX) {
            return Err(ScratchError::BadLifetime { first_use, last_use });
        }
        let alignment = self.alignment();
        let size = match size.checked_add(alignment - 1) {
            Some(s) => s & !(alignment - 1),
            None => return Err(ScratchError::SizeOverflow { size, alignment }),
        };
        if let Some(offset) = fixed_offset {
            if offset & (alignment - 1) != 0 || offset == NOT_FIXED {
                return Err(ScratchError::BadOffset { offset, alignment });
            }
        }
        // Half-open steps; tflm lives TFLite Micro's never-used buffers at
        // step -1.
        let (start, end) = match (never_used, self.algorithm()) {
            (true, Algorithm::Tflm) => (-1, 0),
            (true, _) => (-1, -1),
            (false, _) => (first_use, last_use + 1),
        };
        let [sizes, starts, ends, fixed, offsets, ..] = self.arrays();
        let record = [size, start as u32, end as u32, fixed_offset.unwrap_or(NOT_FIXED), 0];
        for (array, value) in [sizes, starts, ends, fixed, offsets].into_iter().zip(record) {
            if let Some(slot) = array.get_mut(count) {
                *slot = value;
            }
        }
        self.set_header(H_COUNT, count as u32 + 1);
        self.set_planned(false);
        Ok(count)
    }

    /// Drops every buffer and the plan; keeps algorithm and alignment.
    pub fn reset(&mut self) {
        self.set_header(H_COUNT, 0);
        self.set_planned(false);
    }

    /// Plans the buffers added (once: later calls only recompute the
    /// bytes, O(n), until a buffer is added) and returns the bytes the plan
    /// needs: the highest offset + size, zero-size buffers included under
    /// `tflm` (its arena size). O(n^2) for `tflm` and `size-first-fit`,
    /// like TFLite Micro, O(n) for `linear`. Errors: `Overflow` (nothing
    /// planned) when the sizes of all buffers plus the highest fixed end
    /// pass 2^32 - 1 bytes, naming the buffer where the sum does (every sum
    /// the algorithms make stays below it otherwise).
    pub fn plan(&mut self) -> Result<u32, ScratchError> {
        let count = self.len();
        let algorithm = self.algorithm();
        let planned = self.is_planned();
        let [size, start, end, fixed, offsets, work] = self.arrays();
        let records = Records::new(size, start, end, fixed, count);
        let offsets = cut_mut(offsets, count);
        if !planned {
            records.check_sums()?;
            match algorithm {
                Algorithm::Linear => heapless::linear(&records, offsets),
                _ => {
                    let work = cut_mut(work, count);
                    // size-first-fit's order is TFLite Micro's: fixed
                    // buffers first (their offsets stand), then by size
                    // descending.
                    heapless::tflm_order(&records, work);
                    let kind = if algorithm == Algorithm::Tflm { Walk::Tflm } else { Walk::FirstFit };
                    heapless::walk(&records, work, 0, offsets, kind);
                }
            }
        }
        let peak = heapless::peak(&records, offsets, algorithm == Algorithm::Tflm);
        self.set_planned(true);
        Ok(peak)
    }

    /// Takes `offsets` (one per buffer, in the order added) as the plan,
    /// made elsewhere (by the heap planner, for an algorithm that needs
    /// it), and returns the bytes it needs. Fixed buffers must keep their
    /// offsets; the plan is not checked for overlaps (the heap planner
    /// validated it; `nnm_plan_validate` checks one from elsewhere).
    /// Errors, changing nothing: `PlanLength`, `FixedMoved`, `Overflow`.
    pub fn adopt(&mut self, offsets: &[u32]) -> Result<u32, ScratchError> {
        let count = self.len();
        if offsets.len() != count {
            return Err(ScratchError::PlanLength { given: offsets.len(), count });
        }
        for index in 0..count {
            let b = self.buffer_record(index);
            let given = offsets.get(index).copied().unwrap_or(0);
            if let Some(fixed) = b.fixed_offset.filter(|&f| f != given) {
                return Err(ScratchError::FixedMoved { index, fixed, given });
            }
            if given.checked_add(b.size).is_none() {
                return Err(ScratchError::Overflow { index, size: b.size });
            }
        }
        let tflm = self.algorithm() == Algorithm::Tflm;
        let [size, start, end, fixed, planned, _] = self.arrays();
        for (slot, &o) in planned.iter_mut().zip(offsets) {
            *slot = o;
        }
        let records = Records::new(size, start, end, fixed, count);
        let peak = heapless::peak(&records, offsets, tflm);
        self.set_planned(true);
        Ok(peak)
    }

    /// The offset of buffer `index`, planning first if needed. Errors:
    /// `Index` when there is no such buffer.
    pub fn offset(&mut self, index: usize) -> Result<u32, ScratchError> {
        let count = self.len();
        if index >= count {
            return Err(ScratchError::Index { index, count });
        }
        self.plan()?;
        let [_, _, _, _, offsets, _] = self.arrays();
        Ok(offsets.get(index).copied().unwrap_or(0))
    }

    /// Buffer `index` as added (size aligned), with its offset, planning
    /// first if needed.
    pub fn buffer(&mut self, index: usize) -> Result<ScratchBuffer, ScratchError> {
        let count = self.len();
        if index >= count {
            return Err(ScratchError::Index { index, count });
        }
        self.plan()?;
        Ok(self.buffer_record(index))
    }

    /// Buffer `index` as stored (zeros past the count), without planning.
    fn buffer_record(&mut self, index: usize) -> ScratchBuffer {
        let [size, start, end, fixed, offset, _] = self.arrays();
        let at = |a: &[u32]| a.get(index).copied().unwrap_or(0);
        let (start, end) = (at(start) as i32, at(end) as i32);
        // tflm keeps never-used buffers at step -1 alone, [-1, 0), which no
        // other inclusive lifetime gives.
        let (first_use, last_use) = if start >= end || (start, end) == (-1, 0) { (-1, -1) } else { (start, end - 1) };
        let fixed = at(fixed);
        ScratchBuffer {
            size: at(size),
            first_use,
            last_use,
            fixed_offset: (fixed != NOT_FIXED).then_some(fixed),
            offset: at(offset),
        }
    }

    /// The lower bound of the buffers added: the most bytes live at one
    /// step, bytes that fixed buffers share counted once; no plan needs
    /// fewer. Overwrites the working space (not the plan). O(s·n) for s
    /// distinct start steps (one working array: no sorted sweep), plus
    /// O(f log f) per step when fixed buffers share memory. Errors:
    /// `Overflow` as [`ScratchPlanner::plan`].
    pub fn lower_bound(&mut self) -> Result<u32, ScratchError> {
        let count = self.len();
        let [size, start, end, fixed, _, work] = self.arrays();
        let records = Records::new(size, start, end, fixed, count);
        records.check_sums()?;
        Ok(heapless::lower_bound(&records, work))
    }

    /// Pairs of fixed buffers live at a common step that share a byte
    /// (TFLite Micro trusts such offline plans; every algorithm here plans
    /// around them). Overwrites the working space (not the plan).
    pub fn fixed_overlap_count(&mut self) -> u64 {
        let count = self.len();
        let [size, start, end, fixed, _, work] = self.arrays();
        heapless::fixed_overlap_count(&Records::new(size, start, end, fixed, count), work)
    }
}

/// `array[..count]`, or all of it when shorter.
fn cut(array: &[u32], count: usize) -> &[u32] {
    array.get(..count).unwrap_or(array)
}

/// `array[..count]` (`count` is never above its length).
fn cut_mut(array: &mut [u32], count: usize) -> &mut [u32] {
    array.get_mut(..count).unwrap_or_default()
}
