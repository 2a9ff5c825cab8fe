//! Preorders: how the search breaks ties between buffers with equal floors.
//!
//! Long-lived, big buffers and those in the fullest sections constrain the
//! most, so every order puts them early; they differ in which counts first
//! (total = the most bytes still to place in a section the buffer spans,
//! width = lifetime steps, area = size × width, sections = sections
//! spanned). Per-order search effort is heavy-tailed: an order that stalls
//! on one instance often flies on another, so the search runs a portfolio.
//! The four were picked by node counts on MiniMalloc's challenging set
//! (capacity 2^20, with the search's bounds as of this portfolio):
//!
//! - total, width, area (MiniMalloc's TWA) solves 8 of the 11 alone, and
//!   the 18,692-buffer PanGu trace in 21k nodes, so it goes first;
//! - total, area, width (TAW) is the only one quick on B, C and H's
//!   hard part aside from the next;
//! - total, sections, area is quickest on C, F and H;
//! - sections, total, area is quickest on D and J.
//!
//! `total` changes as buffers are placed, so, like MiniMalloc, the search
//! ranks a component's buffers afresh whenever it starts on one (see
//! [`super::search`]): after a split, what is left to place decides.

use super::instance::Part;

/// One criterion of a preorder; larger values go first.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Criterion {
    /// Lifetime length in steps.
    Width,
    /// Size × width.
    Area,
    /// The most bytes still to place in a section the buffer spans.
    Total,
    /// Sections spanned.
    Sections,
}

/// A preorder: criteria compared in turn, then the buffer's index.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Preorder(pub [Criterion; 3]);

use Criterion::*;

/// The preorders tried, in turn (see the module documentation).
pub(super) const PREORDERS: [Preorder; 4] = [
    Preorder([Total, Width, Area]),
    Preorder([Total, Area, Width]),
    Preorder([Total, Sections, Area]),
    Preorder([Sections, Total, Area]),
];

impl Criterion {
    fn value(self, part: &Part, i: usize, total: u64) -> u64 {
        match self {
            Width => part.width[i],
            Area => part.size[i].saturating_mul(part.width[i]),
            Total => total,
            Sections => (part.last[i] - part.first[i]) as u64,
        }
    }
}

impl Preorder {
    /// Sort key of buffer `i` of `part` (larger first), given `total`, the
    /// most bytes still to place in a section it spans.
    pub fn key(self, part: &Part, i: usize, total: u64) -> (u64, u64, u64) {
        let [a, b, c] = self.0;
        (a.value(part, i, total), b.value(part, i, total), c.value(part, i, total))
    }
}
