//! The planner that lives in memory the caller hands it: no heap, no
//! allocation, nothing kept outside the caller's scratch, as TFLite Micro's
//! `GreedyMemoryPlanner` plans inside the scratch buffer its allocator
//! gives it. This is the embedded build's planner, and the same code runs
//! on the host (the TFLite Micro class uses it there too).
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
//! | tag, flags | capacity | count | record 0 | record 1 | ... | record capacity - 1 |
//!   header (3 words)                 a record: size, start, end, fixed, offset, work
//! ```
//!
//! so each buffer costs [`BYTES_PER_BUFFER`] (24) bytes (TFLite Micro's
//! planner: 40) and the planner [`HEADER_BYTES`] (12) more: a scratch of
//! 40 bytes holds one buffer at any address, as TFLite Micro's does. The
//! first word holds a tag beside the algorithm, the planned flag, the
//! alignment and the bytes the scratch had beyond its records (for
//! messages), so a scratch that is not a planner (never initialised, or
//! overwritten) is refused instead of read as one. A buffer's record keeps
//! all it needs together (one bounds check reads it), and its `work` word
//! is working space: the placement order, and the placed buffers sorted by
//! offset growing into the order's consumed words (see `heapless::walk`);
//! planning and the lower bound overwrite it, the offsets stay. Neither
//! the arena size nor the sum of the sizes is stored: recomputing them is
//! O(n).

mod error;
#[cfg(test)]
mod tests;

pub use error::ScratchError;

use super::heapless::{self, Tensors, Walk, Workspace};
use crate::plan::algorithm::Algorithm;

/// Words of the header.
pub const HEADER_WORDS: usize = 3;
/// Bytes of the header.
pub const HEADER_BYTES: usize = HEADER_WORDS * 4;
/// Words each buffer takes: its size, start, end, fixed offset, offset,
/// and one word of working space.
pub const WORDS_PER_BUFFER: usize = 6;
/// Bytes each buffer takes.
pub const BYTES_PER_BUFFER: usize = WORDS_PER_BUFFER * 4;

/// One buffer's words.
pub type Record = [u32; WORDS_PER_BUFFER];

/// A record's words.
const SIZE: usize = 0;
const START: usize = 1;
const END: usize = 2;
const FIXED: usize = 3;
const OFFSET: usize = 4;
const WORK: usize = 5;

/// Tags the high half of the first word of an initialised scratch ("nm").
const TAG: u32 = 0x6e6d_0000;
/// The first word's fields besides the tag (bits 0 to 14): the
/// algorithm, planned, the bytes lost, the alignment's pad, the alignment.
const TAG_MASK: u32 = 0xffff_0000;
const ALGORITHM_MASK: u32 = 0x3;
const PLANNED_BIT: u32 = 0x4;
/// Bytes the caller's scratch had beyond the header and the records (its
/// alignment and the part too small for a record: 0 to 26), for messages.
const LOST_SHIFT: u32 = 3;
const LOST_MASK: u32 = 0x1f << LOST_SHIFT;
/// Bytes skipped to align the scratch's start (0 to 3), for messages.
const PAD_SHIFT: u32 = 8;
const PAD_MASK: u32 = 0x3 << PAD_SHIFT;
const ALIGN_SHIFT: u32 = 10;
const ALIGN_MASK: u32 = 0x1f << ALIGN_SHIFT;
/// A fixed offset of this value means "not fixed".
const NOT_FIXED: u32 = u32::MAX;

/// Header words (the capacity is word 1).
const H_FLAGS: usize = 0;
const H_COUNT: usize = 2;

/// The algorithms this planner runs.
pub const ALGORITHMS: [Algorithm; 3] = [Algorithm::Tflm, Algorithm::Linear, Algorithm::SizeFirstFit];
const _: () = assert!(ALGORITHMS[0] as u32 == 1 && ALGORITHMS[1] as u32 == 2 && ALGORITHMS[2] as u32 == 3);
// The fields stay clear of each other and of the tag.
const _: () = assert!(
    (ALGORITHM_MASK & PLANNED_BIT) | (LOST_MASK & (PAD_MASK | ALIGN_MASK)) | (PAD_MASK & ALIGN_MASK) == 0
        && (ALGORITHM_MASK | PLANNED_BIT | LOST_MASK | PAD_MASK | ALIGN_MASK) & TAG_MASK == 0
);

/// The buffers a scratch of `bytes` bytes holds (after its header).
pub const fn capacity_for(bytes: usize) -> usize {
    bytes.saturating_sub(HEADER_BYTES) / BYTES_PER_BUFFER
}

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

/// A planner over a header and records the caller owns. Made by
/// [`ScratchPlanner::init`] (which writes the header) and re-opened from
/// the same memory by [`ScratchPlanner::open`], so a C caller keeps only
/// the scratch's address.
#[derive(Debug)]
pub struct ScratchPlanner<'a> {
    header: &'a mut [u32; HEADER_WORDS],
    records: &'a mut [Record],
}

/// The first `count` records as the heap-free algorithms see them.
struct View<'b>(&'b mut [Record]);

impl View<'_> {
    #[inline]
    fn word(&self, i: usize, w: usize) -> u32 {
        self.0.get(i).map_or(0, |r| r[w])
    }

    #[inline]
    fn set_word(&mut self, i: usize, w: usize, value: u32) {
        if let Some(r) = self.0.get_mut(i) {
            r[w] = value;
        }
    }

    /// Checks that the sizes of all buffers plus the highest fixed end fit
    /// in 32 bits: every sum the algorithms make stays below them. In
    /// 32-bit sums (no 64-bit arithmetic on a 32-bit core): the total
    /// passes 2^32 - 1 exactly when one of its parts or their sum does.
    #[inline]
    fn check_sums(&self) -> Result<(), ScratchError> {
        let (mut sum, mut fixed_top) = (0u32, 0u32);
        for (index, r) in self.0.iter().enumerate() {
            let size = r[SIZE];
            let top = if r[FIXED] != NOT_FIXED { r[FIXED].checked_add(size) } else { Some(0) };
            match (sum.checked_add(size), top) {
                (Some(s), Some(t)) if s.checked_add(fixed_top.max(t)).is_some() => {
                    sum = s;
                    fixed_top = fixed_top.max(t);
                }
                _ => return Err(ScratchError::Overflow { index, size }),
            }
        }
        Ok(())
    }
}

impl Tensors for View<'_> {
    type Bytes = u32;
    type Step = i32;

    #[inline]
    fn count(&self) -> usize {
        self.0.len()
    }

    #[inline]
    fn size(&self, i: usize) -> u32 {
        self.word(i, SIZE)
    }

    #[inline]
    fn start(&self, i: usize) -> i32 {
        self.word(i, START) as i32
    }

    #[inline]
    fn end(&self, i: usize) -> i32 {
        self.word(i, END) as i32
    }

    #[inline]
    fn fixed(&self, i: usize) -> Option<u32> {
        Some(self.word(i, FIXED)).filter(|&o| o != NOT_FIXED)
    }
}

impl Workspace for View<'_> {
    #[inline]
    fn offset(&self, i: usize) -> u32 {
        self.word(i, OFFSET)
    }

    #[inline]
    fn set_offset(&mut self, i: usize, offset: u32) {
        self.set_word(i, OFFSET, offset);
    }

    #[inline]
    fn slot(&self, k: usize) -> u32 {
        self.word(k, WORK)
    }

    #[inline]
    fn set_slot(&mut self, k: usize, value: u32) {
        self.set_word(k, WORK, value);
    }
}

impl<'a> ScratchPlanner<'a> {
    /// Makes a planner in `header` and `records` (which must follow it in
    /// the scratch for a C caller to re-open it), empty, planning with
    /// `algorithm`, alignment 1; `lost` is how many bytes the caller's
    /// scratch had beyond them, `pad` how many of those went to aligning
    /// its start (both named in messages). Errors: `NotInScratch` for an
    /// algorithm that needs the heap.
    pub fn init(
        header: &'a mut [u32; HEADER_WORDS],
        records: &'a mut [Record],
        algorithm: Algorithm,
        lost: usize,
        pad: usize,
    ) -> Result<Self, ScratchError> {
        // ALGORITHMS are the values 1 to 3 (checked at compile time,
        // beside them): a range check instead of a search.
        if !matches!(algorithm as u32, 1..=3) {
            return Err(ScratchError::NotInScratch { algorithm });
        }
        let records = records.get_mut(..records.len().min(u32::MAX as usize)).unwrap_or_default();
        let lost = (lost.min(26) as u32) << LOST_SHIFT | (pad.min(3) as u32) << PAD_SHIFT;
        *header = [TAG | algorithm as u32 | lost, records.len() as u32, 0];
        Ok(ScratchPlanner { header, records })
    }

    /// The capacity the header records, for re-opening: how many records
    /// follow it. Errors: `NotAPlanner` when the header is not one
    /// [`ScratchPlanner::init`] wrote.
    pub fn recorded_capacity(header: &[u32; HEADER_WORDS]) -> Result<usize, ScratchError> {
        let [flags, capacity, count] = *header;
        // ALGORITHMS are the values 1 to 3 (checked below, at compile time).
        let valid = flags & TAG_MASK == TAG && count <= capacity && matches!(flags & ALGORITHM_MASK, 1..=3);
        if valid {
            Ok(capacity as usize)
        } else {
            Err(ScratchError::NotAPlanner)
        }
    }

    /// The planner [`ScratchPlanner::init`] made in `header`, over
    /// `records` (as many as the header records). Errors: `NotAPlanner`.
    pub fn open(header: &'a mut [u32; HEADER_WORDS], records: &'a mut [Record]) -> Result<Self, ScratchError> {
        if Self::recorded_capacity(header)? != records.len() {
            return Err(ScratchError::NotAPlanner);
        }
        Ok(ScratchPlanner { header, records })
    }

    /// How many buffers the scratch holds.
    pub fn capacity(&self) -> usize {
        self.records.len()
    }

    /// Buffers added.
    pub fn len(&self) -> usize {
        (self.header[H_COUNT] as usize).min(self.records.len())
    }

    /// Whether no buffer was added.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The algorithm it plans with.
    pub fn algorithm(&self) -> Algorithm {
        // One of ALGORITHMS: init wrote it, open checked it.
        match self.header[H_FLAGS] & ALGORITHM_MASK {
            v if v == Algorithm::Linear as u32 => Algorithm::Linear,
            v if v == Algorithm::SizeFirstFit as u32 => Algorithm::SizeFirstFit,
            _ => Algorithm::Tflm,
        }
    }

    /// The alignment of sizes and fixed offsets.
    pub fn alignment(&self) -> u32 {
        1 << ((self.header[H_FLAGS] & ALIGN_MASK) >> ALIGN_SHIFT)
    }

    /// Whether the buffers added are planned.
    pub fn is_planned(&self) -> bool {
        self.header[H_FLAGS] & PLANNED_BIT != 0
    }

    fn set_planned(&mut self, planned: bool) {
        let flags = self.header[H_FLAGS] & !PLANNED_BIT;
        self.header[H_FLAGS] = if planned { flags | PLANNED_BIT } else { flags };
    }

    /// The records of the buffers added.
    fn view(&mut self) -> View<'_> {
        let count = self.len();
        View(self.records.get_mut(..count).unwrap_or_default())
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
        let flags = self.header[H_FLAGS] & !ALIGN_MASK;
        self.header[H_FLAGS] = flags | alignment.trailing_zeros() << ALIGN_SHIFT;
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
    /// checks that the sizes of all buffers plus the highest fixed end fit).
    #[inline]
    pub fn add(
        &mut self,
        size: u32,
        first_use: i32,
        last_use: i32,
        fixed_offset: Option<u32>,
    ) -> Result<usize, ScratchError> {
        let (count, capacity) = (self.len(), self.capacity());
        if count >= capacity {
            let flags = self.header[H_FLAGS];
            let lost = ((flags & LOST_MASK) >> LOST_SHIFT) as usize;
            let pad = ((flags & PAD_MASK) >> PAD_SHIFT) as usize;
            let bytes = HEADER_BYTES + capacity * BYTES_PER_BUFFER + lost;
            let needed = HEADER_BYTES + (capacity + 1) * BYTES_PER_BUFFER + pad;
            return Err(ScratchError::Full { capacity, bytes, needed });
        }
        // With a first use of -1 or more and a last use not before it, a
        // last use below 0 is -1 and -1, never used.
        if first_use < -1 || last_use < first_use || last_use == i32::MAX {
            return Err(ScratchError::BadLifetime { first_use, last_use });
        }
        let alignment = self.alignment();
        let Some(size) = size.checked_add(alignment - 1).map(|s| s & !(alignment - 1)) else {
            return Err(ScratchError::SizeOverflow { size, alignment });
        };
        let fixed = fixed_offset.unwrap_or(NOT_FIXED);
        if fixed_offset.is_some() && (fixed & (alignment - 1) != 0 || fixed == NOT_FIXED) {
            return Err(ScratchError::BadOffset { offset: fixed, alignment });
        }
        // Half-open steps: [first, last + 1), which for a never-used
        // buffer is step -1 alone, where tflm lives it as TFLite Micro
        // does; the others leave it empty.
        let never_used = last_use == -1;
        let end = if never_used && self.algorithm() != Algorithm::Tflm { -1 } else { last_use + 1 };
        if let Some(r) = self.records.get_mut(count) {
            *r = [size, first_use as u32, end as u32, fixed, 0, 0];
        }
        self.header[H_COUNT] = count as u32 + 1;
        self.set_planned(false);
        Ok(count)
    }

    /// Drops every buffer and the plan; keeps algorithm and alignment.
    pub fn reset(&mut self) {
        self.header[H_COUNT] = 0;
        self.set_planned(false);
    }

    /// Plans the buffers added (once: later calls only recompute the
    /// bytes, O(n), until a buffer is added) and returns the bytes the plan
    /// needs: the highest offset + size over every buffer, never-used and
    /// zero-size ones included, so that every buffer lies inside it (under
    /// `tflm`, TFLite Micro's arena size; under `linear`, the end of the
    /// stack, `LinearMemoryPlanner`'s). O(n^2) for `tflm` and `size-first-fit`,
    /// like TFLite Micro, O(n) for `linear`. Errors: `Overflow` (nothing
    /// planned) when the sizes of all buffers plus the highest fixed end
    /// pass 2^32 - 1 bytes, naming the buffer where the sum does (every sum
    /// the algorithms make stays below it otherwise).
    pub fn plan(&mut self) -> Result<u32, ScratchError> {
        let algorithm = self.algorithm();
        let planned = self.is_planned();
        let mut view = self.view();
        if !planned {
            view.check_sums()?;
            match algorithm {
                Algorithm::Linear => heapless::linear(&mut view),
                _ => {
                    // size-first-fit's order is TFLite Micro's: fixed
                    // buffers first (their offsets stand), then by size
                    // descending.
                    heapless::tflm_order(&mut view);
                    let kind = if algorithm == Algorithm::Tflm { Walk::Tflm } else { Walk::FirstFit };
                    let n = view.count();
                    heapless::walk(&mut view, 0, n, kind);
                }
            }
        }
        let peak = heapless::peak(&view);
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
        let mut view = self.view();
        for (index, &given) in offsets.iter().enumerate() {
            if let Some(fixed) = view.fixed(index).filter(|&f| f != given) {
                return Err(ScratchError::FixedMoved { index, fixed, given });
            }
            if given.checked_add(view.size(index)).is_none() {
                return Err(ScratchError::Overflow { index, size: view.size(index) });
            }
        }
        for (index, &given) in offsets.iter().enumerate() {
            view.set_offset(index, given);
        }
        let peak = heapless::peak(&view);
        self.set_planned(true);
        Ok(peak)
    }

    /// The offset of buffer `index`, planning first if needed. Errors:
    /// `Index` when there is no such buffer, `Overflow` as
    /// [`ScratchPlanner::plan`].
    #[inline]
    pub fn offset(&mut self, index: usize) -> Result<u32, ScratchError> {
        let count = self.len();
        if index >= count {
            return Err(ScratchError::Index { index, count });
        }
        // Planning set every offset, the fixed ones' included. (plan()
        // when planned recomputes the bytes: O(n), not needed here.)
        if !self.is_planned() {
            self.plan()?;
        }
        Ok(self.records.get(index).map_or(0, |r| r[OFFSET]))
    }

    /// Buffer `index` as added (size aligned), with its offset, planning
    /// first if needed. Errors: as [`ScratchPlanner::offset`].
    #[inline]
    pub fn buffer(&mut self, index: usize) -> Result<ScratchBuffer, ScratchError> {
        let count = self.len();
        if index >= count {
            return Err(ScratchError::Index { index, count });
        }
        if !self.is_planned() {
            self.plan()?;
        }
        let [size, start, end, fixed, offset, _] = self.records.get(index).copied().unwrap_or_default();
        let (start, end) = (start as i32, end as i32);
        // tflm keeps never-used buffers at step -1 alone, [-1, 0), which no
        // other inclusive lifetime gives.
        let (first_use, last_use) = if start >= end || (start, end) == (-1, 0) { (-1, -1) } else { (start, end - 1) };
        Ok(ScratchBuffer {
            size,
            first_use,
            last_use,
            fixed_offset: (fixed != NOT_FIXED).then_some(fixed),
            offset: if fixed != NOT_FIXED { fixed } else { offset },
        })
    }

    /// The lower bound of the buffers added: the most bytes live at one
    /// step, bytes that fixed buffers share counted once; no plan needs
    /// fewer. Overwrites the working words (not the plan). O(n^2), plus
    /// O(f^2) per step when fixed buffers share memory. Errors: `Overflow`
    /// as [`ScratchPlanner::plan`].
    pub fn lower_bound(&mut self) -> Result<u32, ScratchError> {
        let mut view = self.view();
        view.check_sums()?;
        Ok(heapless::lower_bound(&mut view))
    }

    /// Pairs of fixed buffers live at a common step that share a byte
    /// (TFLite Micro trusts such offline plans; every algorithm here plans
    /// around them). Overwrites the working words (not the plan).
    pub fn fixed_overlap_count(&mut self) -> u64 {
        heapless::fixed_overlap_count(&mut self.view())
    }
}
