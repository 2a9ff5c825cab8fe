//! OpenVINO's `MemorySolver`, written again for comparison: benches and
//! tests only, never part of the library.
//!
//! Source read (not copied): openvinotoolkit/openvino,
//! `src/core/include/openvino/runtime/memory_solver.hpp` (formerly
//! `inference-engine/src/.../memory_solver.cpp`), and its tests
//! `src/core/tests/memory_solver.cpp` (Apache-2.0). The issue calls the
//! method "largest first, each lifted above the conflicting ones already
//! placed".
//!
//! What it does, in our words:
//! - A box is a buffer: `size` bytes alive from step `start` to step
//!   `finish`, both inclusive; `finish == -1` means "to the last step any
//!   box mentions".
//! - Boxes are ordered by start, then finish; then by size, largest first
//!   (OpenVINO's size sort is `std::sort`, which for the few boxes of its
//!   tests keeps the start/finish order among equal sizes: we keep it
//!   always, so every run gives the same answer).
//! - Each box in turn starts at offset 0 and, while it overlaps (in bytes)
//!   a box already placed that shares a step with it, is lifted to that
//!   box's top. Lifting past `[x, top)` skips only offsets that overlap the
//!   same box, so the box ends at the lowest offset free of every
//!   conflicting box placed before it; that is how it is computed here
//!   (the conflicting boxes sorted by offset, swept once).
//! - The answer is the highest top. OpenVINO drops the steps at which no
//!   box starts before solving; that changes no overlap, so it is not
//!   needed here.

/// One buffer, as OpenVINO's solver sees it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct OvBox {
    /// First step alive.
    pub start: i64,
    /// Last step alive (inclusive); -1: to the last step of all boxes.
    pub finish: i64,
    /// Bytes.
    pub size: i64,
}

/// The solver over a set of boxes.
pub struct OvSolver {
    /// The boxes in input order, `finish == -1` resolved.
    boxes: Vec<OvBox>,
    /// Per input box: its offset, once solved.
    offsets: Vec<Option<i64>>,
}

impl OvSolver {
    /// Takes the boxes (input order is kept for [`OvSolver::offset`]).
    pub fn new(boxes: &[OvBox]) -> Self {
        let last = boxes.iter().map(|b| b.start.max(b.finish)).max().unwrap_or(0).max(0);
        let boxes: Vec<OvBox> =
            boxes.iter().map(|b| OvBox { finish: if b.finish == -1 { last } else { b.finish }, ..*b }).collect();
        let offsets = vec![None; boxes.len()];
        OvSolver { boxes, offsets }
    }

    /// Places every box; returns the memory needed (the highest top).
    pub fn solve(&mut self) -> i64 {
        let mut order: Vec<usize> = (0..self.boxes.len()).collect();
        order.sort_by_key(|&i| (self.boxes[i].start, self.boxes[i].finish));
        order.sort_by_key(|&i| std::cmp::Reverse(self.boxes[i].size));
        // Placed so far: (offset, top, start, finish).
        let mut placed: Vec<(i64, i64, i64, i64)> = Vec::with_capacity(order.len());
        let mut conflicts: Vec<(i64, i64)> = Vec::new();
        let mut required = 0;
        for i in order {
            let b = self.boxes[i];
            conflicts.clear();
            conflicts.extend(
                placed.iter().filter(|p| p.2 <= b.finish && b.start <= p.3).map(|&(offset, top, _, _)| (offset, top)),
            );
            conflicts.sort_unstable();
            let mut offset = 0;
            for &(o, top) in &conflicts {
                // Sorted by offset: nothing further up can overlap.
                if o >= offset + b.size {
                    break;
                }
                // OpenVINO's test of an overlap in bytes, zero sizes
                // included.
                if offset + b.size > o && top > offset {
                    offset = top;
                }
            }
            placed.push((offset, offset + b.size, b.start, b.finish));
            self.offsets[i] = Some(offset);
            required = required.max(offset + b.size);
        }
        required
    }

    /// The offset of input box `index`, once solved.
    pub fn offset(&self, index: usize) -> Option<i64> {
        self.offsets.get(index).copied().flatten()
    }

    /// The most bytes alive at one step: no placement can need less.
    pub fn max_depth(&self) -> i64 {
        self.sweep().0
    }

    /// The most boxes alive at one step.
    pub fn max_top_depth(&self) -> usize {
        self.sweep().1
    }

    /// (most bytes, most boxes) alive at one step: ends (at `finish + 1`)
    /// are counted before starts at the same step.
    fn sweep(&self) -> (i64, usize) {
        let mut events: Vec<(i64, i64, i64)> = Vec::with_capacity(2 * self.boxes.len());
        for b in &self.boxes {
            events.push((b.start, 1, b.size));
            events.push((b.finish + 1, -1, -b.size));
        }
        events.sort_unstable();
        let (mut bytes, mut count, mut most_bytes, mut most_count) = (0i64, 0i64, 0i64, 0i64);
        for (_, dc, db) in events {
            bytes += db;
            count += dc;
            most_bytes = most_bytes.max(bytes);
            most_count = most_count.max(count);
        }
        (most_bytes, most_count as usize)
    }
}
