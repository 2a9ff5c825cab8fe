//! Preorders: how the search breaks ties between buffers with equal floors.
//!
//! Long-lived, big buffers and those in the fullest sections constrain the
//! most, so every order puts them early; they differ in which counts first
//! (width = lifetime steps, area = size × width, total = the most bytes
//! still to place in a section the buffer spans): MiniMalloc's three
//! complementary orders, plus one counting sections rather than steps,
//! which solves instances none of the three do quickly.
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
    /// Bytes.
    Size,
    /// Buffers it shares a step with.
    Overlaps,
    /// Last section.
    End,
    /// First section.
    Start,
}

/// A preorder: criteria compared in turn, then the buffer's index.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Preorder(pub [Criterion; 3]);

use Criterion::*;

/// The preorders tried, in turn.
pub(super) const PREORDERS: [Preorder; 4] =
    [Preorder([Width, Area, Total]), Preorder([Total, Area, Width]), Preorder([Total, Width, Area]), Preorder([Total, Sections, Size])];

impl Criterion {
    fn value(self, part: &Part, i: usize, total: u64) -> u64 {
        match self {
            Width => part.width[i],
            Area => part.size[i].saturating_mul(part.width[i]),
            Total => total,
            Sections => (part.last[i] - part.first[i]) as u64,
            Size => part.size[i],
            Overlaps => part.conflicts(i).len() as u64,
            End => part.last[i] as u64,
            Start => part.first[i] as u64,
        }
    }

    /// For experiments: MiniMalloc's letters (W for width, C sections).
    pub fn from_letter(c: char) -> Option<Criterion> {
        Some(match c {
            'W' | 'L' => Width,
            'A' => Area,
            'T' => Total,
            'C' => Sections,
            'Z' => Size,
            'O' => Overlaps,
            'E' => End,
            'S' => Start,
            _ => return None,
        })
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
