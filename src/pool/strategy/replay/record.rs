//! The recorded iteration, and how it becomes a plan.

use super::{ReplayOptions, Slot, Step, UNPLANNED};
use crate::plan::{align_up, lower_bound, Buffer, Lifetime, Planner};
use crate::pool::device::{DevicePtr, Stream};
use crate::pool::fast_hash::FastMap;
use crate::pool::strategy::Request;
use crate::status::{Error, Result};

/// The smallest alignment of the planned block: what device libraries
/// (cuBLAS, cuDNN) expect of a buffer's start.
const MIN_BLOCK_ALIGNMENT: u64 = 256;

/// One recorded alloc.
#[derive(Copy, Clone, Debug)]
struct Alloc {
    request: Request,
    /// Its event index.
    at: usize,
    /// The event index of its free, when it came in the iteration.
    freed_at: Option<usize>,
}

/// The most requests one iteration records (more than ten times the
/// largest real trace shipped). A pool that never hears of an iteration's
/// end would otherwise record without bound: past this many requests the
/// recording is dropped, its memory freed, and the rest of the iteration
/// is only served by the fallback; the next iteration is recorded afresh.
pub(super) const MAX_RECORDED_REQUESTS: usize = 1 << 20;

/// The requests of the iteration being recorded.
#[derive(Default)]
pub(super) struct Recording {
    allocs: Vec<Alloc>,
    /// Each event: (is it an alloc, the alloc it concerns).
    events: Vec<(bool, usize)>,
    /// Recorded allocs not yet freed, by address.
    live: FastMap<DevicePtr, usize>,
    /// The iteration passed [`MAX_RECORDED_REQUESTS`]: nothing more is
    /// recorded, and nothing will be planned from it.
    overlong: bool,
}

/// A recorded iteration, planned.
pub(super) struct Planned {
    pub steps: Vec<Step>,
    pub slots: Vec<Slot>,
    pub by_offset: Vec<(u64, usize)>,
    pub end_at: usize,
    pub block_bytes: u64,
    pub block_alignment: u64,
    pub block_stream: Stream,
    pub lower_bound: u64,
    pub recorded_requests: u64,
}

impl Recording {
    /// Records an alloc the fallback served at `ptr`.
    pub fn alloc(&mut self, request: Request, ptr: DevicePtr) {
        if self.overlong {
            return;
        }
        if self.allocs.len() == MAX_RECORDED_REQUESTS {
            *self = Recording { overlong: true, ..Recording::default() };
            return;
        }
        let index = self.allocs.len();
        self.allocs.push(Alloc { request, at: self.events.len(), freed_at: None });
        self.events.push((true, index));
        self.live.insert(ptr, index);
    }

    /// Records the free of `ptr` (the fallback took it back). Pointers
    /// handed out before the recording began are not part of it.
    pub fn free(&mut self, ptr: DevicePtr) {
        if self.overlong {
            return;
        }
        if let Some(index) = self.live.remove(&ptr) {
            self.allocs[index].freed_at = Some(self.events.len());
            self.events.push((false, index));
        }
    }

    /// The records' capacity, for the tests of the cap.
    #[cfg(test)]
    pub fn capacity(&self) -> usize {
        self.allocs.capacity() + self.events.capacity() + self.live.capacity()
    }

    /// Allocs recorded.
    pub fn requests(&self) -> u64 {
        self.allocs.len() as u64
    }

    /// Plans the buffers allocated and freed in the iteration; `None` when
    /// there are none.
    pub fn plan(&self, options: &ReplayOptions) -> Result<Option<Planned>> {
        let planned: Vec<usize> = (0..self.allocs.len()).filter(|&i| self.allocs[i].freed_at.is_some()).collect();
        let Some(&first) = planned.first() else {
            return Ok(None);
        };
        // One planner alignment for all (the smallest asked); a buffer that
        // asked for more is padded so that its aligned start still fits.
        let alignment = planned.iter().map(|&i| self.allocs[i].request.alignment).min().expect("not empty");
        let largest = planned.iter().map(|&i| self.allocs[i].request.alignment).max().expect("not empty");
        // The planner's steps: each run of consecutive allocs is one step,
        // and a free ends its buffer's lifetime after the last run before
        // it. Two buffers then share a step exactly when both are live at
        // some point of the sequence, with far fewer steps than events
        // (which keeps the planner's search as fast as on the trace).
        let mut phase = Vec::with_capacity(self.events.len());
        let mut step = -1i64;
        for (e, &(is_alloc, _)) in self.events.iter().enumerate() {
            if is_alloc && (e == 0 || !self.events[e - 1].0) {
                step += 1;
            }
            phase.push(if is_alloc { step } else { step + 1 });
        }
        let mut slot_of = vec![UNPLANNED; self.allocs.len()];
        let mut slots = Vec::with_capacity(planned.len());
        let mut raw = Vec::with_capacity(planned.len());
        for (slot, &i) in planned.iter().enumerate() {
            slot_of[i] = slot;
            let a = self.allocs[i];
            // A request of 0 B gets a byte of its own, so that its address
            // is no other live buffer's.
            let padded = align_up(a.request.size.max(1), alignment)?
                .checked_add(a.request.alignment - alignment)
                .ok_or_else(|| Error::overflow(format!("recorded size {} B overflows when aligned", a.request.size)))?;
            let lifetime = Lifetime::half_open(phase[a.at], phase[a.freed_at.expect("planned")])?;
            raw.push(Buffer { size: a.request.size, lifetime, fixed_offset: None });
            slots.push(Slot { offset: 0, bytes: padded, size: a.request.size, run_start: 0, live: false });
        }
        let mut steps = Vec::with_capacity(self.events.len());
        let mut run_start = 0;
        for (e, &(is_alloc, i)) in self.events.iter().enumerate() {
            let a = &self.allocs[i];
            if is_alloc {
                steps.push(Step {
                    alloc: true,
                    size: a.request.size,
                    stream: a.request.stream,
                    buffer: slot_of[i],
                    offset: 0,
                    bytes: 0,
                });
            } else {
                if e == 0 || self.events[e - 1].0 {
                    run_start = e;
                }
                slots[slot_of[i]].run_start = run_start;
                steps.push(Step {
                    alloc: false,
                    size: 0,
                    stream: a.request.stream,
                    buffer: slot_of[i],
                    offset: 0,
                    bytes: 0,
                });
            }
        }
        // One plan per stream, stacked: memory is reused only by its stream.
        let mut streams: Vec<Stream> = Vec::new();
        for &i in &planned {
            if !streams.contains(&self.allocs[i].request.stream) {
                streams.push(self.allocs[i].request.stream);
            }
        }
        let mut base = 0u64;
        for &stream in &streams {
            let mut planner = Planner::new();
            planner.set_algorithm(options.algorithm);
            planner.set_work_limit(Some(options.work_limit));
            planner.set_alignment(alignment)?;
            let members: Vec<usize> =
                (0..slots.len()).filter(|&s| self.allocs[planned[s]].request.stream == stream).collect();
            for &s in &members {
                planner.add_buffer(slots[s].bytes, raw[s].lifetime, None)?;
            }
            let outcome = planner.plan()?;
            for (&s, &offset) in members.iter().zip(&outcome.offsets) {
                let start = base.checked_add(offset).ok_or_else(|| Error::overflow("planned offsets overflow"))?;
                slots[s].offset = align_up(start, self.allocs[planned[s]].request.alignment)?;
            }
            base = base.checked_add(outcome.peak).ok_or_else(|| Error::overflow("planned block overflows"))?;
        }
        for step in steps.iter_mut().filter(|s| s.buffer != UNPLANNED) {
            (step.offset, step.bytes) = (slots[step.buffer].offset, slots[step.buffer].bytes);
        }
        let mut by_offset: Vec<(u64, usize)> = slots.iter().enumerate().map(|(s, slot)| (slot.offset, s)).collect();
        by_offset.sort_unstable();
        let end_at = planned.iter().map(|&i| self.allocs[i].freed_at.expect("planned")).max().expect("not empty") + 1;
        Ok(Some(Planned {
            steps,
            slots,
            by_offset,
            end_at,
            block_bytes: base,
            block_alignment: largest.max(MIN_BLOCK_ALIGNMENT),
            block_stream: self.allocs[first].request.stream,
            lower_bound: lower_bound(&raw).bytes,
            recorded_requests: self.requests(),
        }))
    }
}
