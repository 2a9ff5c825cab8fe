//! The planning algorithms that need no heap: they read the buffers through
//! [`Tensors`] and work in index slices the caller hands them, so the same
//! code plans for the heap planner ([`crate::plan::Planner`], over its
//! [`crate::plan::Problem`]) and for the planner that lives in the caller's
//! scratch memory ([`crate::plan::scratch`], the embedded build's). Same
//! buffers, same slices, same offsets, on any target.
//!
//! - `order`: TFLite Micro's placement order (fixed buffers first, then by
//!   size descending, later-added first on ties), by a heap sort (no
//!   allocation, O(n log n), a total order so the result is unique).
//! - `place`: TFLite Micro's walk over the placed buffers sorted by offset
//!   (`tflm`, and first fit for `size-first-fit`), and `linear`.
//! - `bound`: the lower bound (the most bytes live at one step, bytes that
//!   fixed buffers share counted once) and the count of fixed buffers that
//!   share memory.
//!
//! Nothing here allocates, panics on well-formed input or calls out of the
//! crate; arithmetic stays within [`Bytes`] because every caller refuses
//! buffer sets whose sizes plus the highest fixed end pass its maximum.

mod bound;
mod order;
mod place;

pub use bound::{fixed_overlap_count, lower_bound};
pub use order::{heap_sort, tflm_order};
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

    /// Whether buffers `i` and `j` are live at a common step (neither
    /// empty).
    #[inline]
    fn live_together(&self, i: usize, j: usize) -> bool {
        self.start(i) < self.end(j) && self.start(j) < self.end(i) && !self.never_live(i) && !self.never_live(j)
    }
}

/// Index `i` of a slice of buffer indices (the slices hold `u32`s: 4 B per
/// buffer on every target).
#[inline]
pub(crate) fn ix(i: u32) -> usize {
    i as usize
}

#[cfg(test)]
mod tests;
