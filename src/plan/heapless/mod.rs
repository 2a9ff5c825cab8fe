//! The planning algorithms that need no heap. They read the buffers through
//! [`Tensors`] and keep offsets and working space in a [`Workspace`] the
//! caller provides, so the same code plans for the heap planner
//! ([`crate::plan::Planner`], over its [`crate::plan::Problem`] and two
//! vectors: [`Slices`]) and for the planner that lives in the caller's
//! scratch memory ([`crate::plan::scratch`], the embedded build's, over
//! records in the scratch). Same buffers, same offsets, on any target.
//!
//! - `order`: TFLite Micro's placement order (fixed buffers first, then by
//!   size descending, later-added first on ties), by insertion (no
//!   allocation, O(n + inversions), a total order so the result is
//!   unique).
//! - `place`: TFLite Micro's walk over the placed buffers sorted by offset
//!   (`tflm`, and first fit for `size-first-fit`), `linear`, and the bytes
//!   a plan needs.
//! - `bound`: the lower bound (the most bytes live at one step, bytes that
//!   fixed buffers share counted once) and the count of fixed buffers that
//!   share memory.
//!
//! A workspace has one offset and one word of working space per buffer:
//! the walk keeps its order and its list of placed buffers in the same
//! words (see [`walk`]). Nothing here allocates, panics or calls out of the
//! crate; arithmetic stays within [`Bytes`] because every caller refuses
//! buffer sets whose sizes plus the highest fixed end pass its maximum.

mod bound;
mod order;
mod place;

pub use bound::{fixed_overlap_count, lower_bound};
pub use order::{insertion_sort, tflm_order};
pub use place::{linear, peak, walk, Walk};

/// An unsigned byte count (`u32` in the scratch planner, `u64` in the heap
/// planner).
pub trait Bytes: Copy + Ord + core::ops::Add<Output = Self> + core::ops::Sub<Output = Self> {
    /// Zero bytes.
    const ZERO: Self;
}

impl Bytes for u32 {
    const ZERO: u32 = 0;
}

impl Bytes for u64 {
    const ZERO: u64 = 0;
}

/// Read access to the buffers being planned. Lifetimes are half-open
/// `[start, end)`; an empty one occupies nothing (the `tflm` walk still
/// places it, at its fixed offset or 0, as TFLite Micro does).
pub trait Tensors {
    /// The byte type of sizes and offsets.
    type Bytes: Bytes;
    /// The step type of lifetimes.
    type Step: Copy + Ord;
    /// Number of buffers.
    fn count(&self) -> usize;
    /// Size of buffer `i`.
    fn size(&self, i: usize) -> Self::Bytes;
    /// First step buffer `i` is live.
    fn start(&self, i: usize) -> Self::Step;
    /// First step buffer `i` is no longer live.
    fn end(&self, i: usize) -> Self::Step;
    /// The offset buffer `i` must keep, if fixed.
    fn fixed(&self, i: usize) -> Option<Self::Bytes>;

    /// Whether buffer `i` is live at no step.
    #[inline]
    fn never_live(&self, i: usize) -> bool {
        self.start(i) >= self.end(i)
    }

    /// Whether buffer `i` takes bytes at some step.
    #[inline]
    fn occupies(&self, i: usize) -> bool {
        self.size(i) > Self::Bytes::ZERO && !self.never_live(i)
    }

    /// Whether buffers `i` and `j` are live at a common step (neither
    /// empty).
    #[inline]
    fn live_together(&self, i: usize, j: usize) -> bool {
        self.start(i) < self.end(j) && self.start(j) < self.end(i) && !self.never_live(i) && !self.never_live(j)
    }
}

/// The buffers with the planner's memory beside them: an offset per buffer
/// and one word of working space per buffer (`slot` 0 to count - 1).
/// Reads out of range give 0 and writes out of range do nothing (never
/// reached: the algorithms stay in range, and need no panic path). The
/// algorithms state the bounds their loops and the words they read keep
/// (below [`Tensors::count`]) where these are implied, so that the
/// optimiser drops those range checks: smaller and faster code on a board.
pub trait Workspace: Tensors {
    /// The offset of buffer `i` (0 before it is placed).
    fn offset(&self, i: usize) -> Self::Bytes;
    /// Sets the offset of buffer `i`.
    fn set_offset(&mut self, i: usize, offset: Self::Bytes);
    /// Working word `k`.
    fn slot(&self, k: usize) -> u32;
    /// Sets working word `k`.
    fn set_slot(&mut self, k: usize, value: u32);
}

/// A workspace over separate slices: the heap planner's problem, with
/// vectors for the offsets and the working words (one each per buffer).
pub struct Slices<'a, T: Tensors> {
    /// The buffers.
    pub tensors: &'a T,
    /// One offset per buffer.
    pub offsets: &'a mut [T::Bytes],
    /// One working word per buffer.
    pub work: &'a mut [u32],
}

impl<T: Tensors> Tensors for Slices<'_, T> {
    type Bytes = T::Bytes;
    type Step = T::Step;

    #[inline]
    fn count(&self) -> usize {
        self.tensors.count()
    }

    #[inline]
    fn size(&self, i: usize) -> T::Bytes {
        self.tensors.size(i)
    }

    #[inline]
    fn start(&self, i: usize) -> T::Step {
        self.tensors.start(i)
    }

    #[inline]
    fn end(&self, i: usize) -> T::Step {
        self.tensors.end(i)
    }

    #[inline]
    fn fixed(&self, i: usize) -> Option<T::Bytes> {
        self.tensors.fixed(i)
    }
}

impl<T: Tensors> Workspace for Slices<'_, T> {
    #[inline]
    fn offset(&self, i: usize) -> T::Bytes {
        self.offsets.get(i).copied().unwrap_or(T::Bytes::ZERO)
    }

    #[inline]
    fn set_offset(&mut self, i: usize, offset: T::Bytes) {
        if let Some(o) = self.offsets.get_mut(i) {
            *o = offset;
        }
    }

    #[inline]
    fn slot(&self, k: usize) -> u32 {
        self.work.get(k).copied().unwrap_or(0)
    }

    #[inline]
    fn set_slot(&mut self, k: usize, value: u32) {
        if let Some(w) = self.work.get_mut(k) {
            *w = value;
        }
    }
}

/// Index `i` of buffer index words (4 B per buffer on every target).
#[inline]
pub(crate) fn ix(i: u32) -> usize {
    i as usize
}

#[cfg(test)]
mod tests;
