//! The replay strategy: records one iteration's requests, plans them with
//! the planner, and serves the next iterations from one planned block.
//!
//! - *Recording*, from creation to the first [`Strategy::end_iteration`]:
//!   every request goes to the fallback (the pool passes a `caching`
//!   strategy) and is recorded: the order of allocs and frees, sizes,
//!   alignments, streams. At that `end_iteration` every recorded buffer that
//!   was also freed in the iteration becomes a planner buffer (lifetime: from
//!   its alloc event to its free event), the fallback returns its idle
//!   memory, and one device block of the plan's peak is allocated. Buffers
//!   still live at the end are not planned: when they recur, the fallback
//!   serves them. An iteration without a buffer to plan is recorded again.
//! - *Replaying*: the k-th request of an iteration, when it is the recorded
//!   k-th event (an alloc of the same size on the same stream, with an
//!   alignment its planned offset satisfies), is served at its planned
//!   offset: a table lookup and a few comparisons. Frees of planned buffers
//!   may come in any order within a recorded run of consecutive frees.
//!   Anything else *departs*: for the rest of the iteration every request goes
//!   to the fallback, so nothing new is placed in the planned block while a
//!   planned buffer may still be live there; frees of planned buffers are
//!   still taken back by address.
//! - An iteration ends at `end_iteration`, or by itself when every recorded
//!   event was replayed (the next request starts the next iteration), or,
//!   after a departure, when no planned buffer is live and a request matches
//!   the recorded first one. An iteration that starts while a planned buffer
//!   of the previous one is live starts departed.
//!
//! Planned buffers on different streams get disjoint parts of the block (one
//! plan per stream), so memory is reused only by the stream that used it
//! last, as the pool promises.

mod record;
#[cfg(test)]
mod tests;

use crate::plan::Algorithm;
use crate::pool::budget::Device;
use crate::pool::device::{DevicePtr, Stream};
use crate::pool::strategy::{CacheFigures, Freed, NotLive, PlanFigures, Request, Served, Strategy};
use crate::status::{Result, Status};

use record::Recording;

/// Options of the `replay` strategy's planning (a pool's
/// `PoolOptions::replay`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ReplayOptions {
    /// The planner's algorithm (default `Auto`).
    pub algorithm: Algorithm,
    /// The planner's work budget, in work units (default
    /// [`crate::plan::DEFAULT_WORK_LIMIT`]): counted, so the plan is the
    /// same on every machine.
    pub work_limit: u64,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions { algorithm: Algorithm::Auto, work_limit: crate::plan::DEFAULT_WORK_LIMIT }
    }
}

/// Marks an alloc event whose buffer was not planned (live at the end of the
/// recorded iteration).
const UNPLANNED: usize = usize::MAX;

/// One recorded event, as the replay compares requests with it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Step {
    /// Alloc (true) or free.
    alloc: bool,
    /// Alloc: the bytes asked for (0 for a free).
    size: u64,
    /// Alloc: the stream it was asked on.
    stream: Stream,
    /// The planned buffer, or [`UNPLANNED`] (allocs only).
    buffer: usize,
    /// The planned buffer's offset and bytes (copied from its [`Slot`] so
    /// that the fast paths read one entry).
    offset: u64,
    bytes: u64,
}

/// A planned buffer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Slot {
    /// Its offset in the block, aligned as recorded.
    offset: u64,
    /// The bytes it occupies there (size rounded and padded for alignment).
    bytes: u64,
    /// The bytes asked for.
    size: u64,
    /// The first event of the run of consecutive frees that holds its free.
    run_start: usize,
    /// Handed out in this iteration and not yet freed.
    live: bool,
}

/// What one iteration was planned into.
struct Plan {
    steps: Vec<Step>,
    slots: Vec<Slot>,
    /// Slots sorted by offset, to find a live one by address.
    by_offset: Vec<(u64, usize)>,
    /// One past the last event of a planned buffer: from here on only
    /// unplanned allocs remain.
    end_at: usize,
    /// The block, while held (`release_cached` may give it back while no
    /// planned buffer is live; the next planned request takes it again).
    block: Option<DevicePtr>,
    block_bytes: u64,
    block_alignment: u64,
    block_stream: Stream,
    lower_bound: u64,
    recorded_requests: u64,
    /// The next event expected.
    cursor: usize,
    /// Planned buffers live now.
    live: usize,
    /// The iteration departed: requests go to the fallback.
    departed: bool,
}

/// How a request matched the recorded sequence.
enum Match {
    /// The planned alloc at this event.
    Planned(usize),
    /// The unplanned alloc at this event (the fallback serves it).
    Unplanned(usize),
}

impl Plan {
    /// The fast path of an alloc: the request is the next recorded event,
    /// a planned alloc. A lookup and comparisons; `None` sends the request
    /// to the slow path, which decides everything else.
    #[inline(always)]
    fn fast_alloc(&mut self, request: &Request) -> Option<Served> {
        let block = self.block.filter(|_| !self.departed)?;
        let step = self.steps.get(self.cursor)?;
        let matches = step.alloc
            && step.buffer != UNPLANNED
            && step.size == request.size
            && step.stream == request.stream
            && request.alignment <= self.block_alignment
            && step.offset & (request.alignment - 1) == 0;
        if !matches {
            return None;
        }
        let (offset, bytes) = (step.offset, step.bytes);
        self.slots.get_mut(step.buffer)?.live = true;
        self.live += 1;
        self.cursor += 1;
        Some(Served { ptr: block.byte_add(offset), bytes, from_plan: true })
    }

    /// The fast path of a free: `ptr` is the buffer of the next recorded
    /// event, a free.
    #[inline(always)]
    fn fast_free(&mut self, ptr: DevicePtr) -> Option<Freed> {
        let block = self.block.filter(|_| !self.departed)?;
        let step = self.steps.get(self.cursor)?;
        if step.alloc || ptr.offset_from(block) != Some(step.offset) {
            return None;
        }
        let (at, buffer) = (self.cursor, step.buffer);
        if !self.slots.get(buffer).is_some_and(|s| s.live) {
            return None;
        }
        let freed = self.take_back(buffer);
        self.advance_past_free(at);
        Some(freed)
    }

    /// Matches an alloc request from event `at` on. Unplanned allocs are
    /// optional (a buffer kept across iterations need not recur), so those
    /// the request does not match are passed over.
    #[inline]
    fn match_alloc(&self, mut at: usize, request: &Request) -> Option<Match> {
        loop {
            let step = self.steps.get(at)?;
            if !step.alloc {
                return None;
            }
            let same = step.size == request.size && step.stream == request.stream;
            if step.buffer == UNPLANNED {
                if same {
                    return Some(Match::Unplanned(at));
                }
                at += 1;
                continue;
            }
            // The block's alignment decides, not the address it happens to
            // have: the same requests match on every machine.
            let offset = self.slots[step.buffer].offset;
            let aligned = request.alignment <= self.block_alignment && offset & (request.alignment - 1) == 0;
            return (same && aligned).then_some(Match::Planned(at));
        }
    }

    /// The first event from `at` on that is not an unplanned alloc.
    #[inline]
    fn skip_unplanned(&self, mut at: usize) -> usize {
        while self.steps.get(at).is_some_and(|s| s.alloc && s.buffer == UNPLANNED) {
            at += 1;
        }
        at
    }

    /// The offset of `ptr` in the block, when it lies inside it.
    #[inline]
    fn offset_of(&self, ptr: DevicePtr) -> Option<u64> {
        let offset = ptr.offset_from(self.block?)?;
        (offset < self.block_bytes).then_some(offset)
    }

    /// The live planned buffer at `offset` (live planned buffers never
    /// overlap, so there is at most one).
    fn live_at(&self, offset: u64) -> Option<usize> {
        let first = self.by_offset.partition_point(|&(o, _)| o < offset);
        self.by_offset[first..].iter().take_while(|&&(o, _)| o == offset).map(|&(_, s)| s).find(|&s| self.slots[s].live)
    }

    /// Takes back planned buffer `slot`.
    #[inline]
    fn take_back(&mut self, slot: usize) -> Freed {
        let s = &mut self.slots[slot];
        s.live = false;
        self.live -= 1;
        Freed { requested: s.size, bytes: s.bytes }
    }

    /// Moves the cursor past the free at `at` and past the frees after it
    /// whose buffers were already freed (out of order within the run); at
    /// the end of the sequence the next iteration begins.
    #[inline]
    fn advance_past_free(&mut self, at: usize) {
        let mut c = at + 1;
        while self.steps.get(c).is_some_and(|s| !s.alloc && !self.slots[s.buffer].live) {
            c += 1;
        }
        self.cursor = if c == self.steps.len() && self.live == 0 { 0 } else { c };
    }

    /// Starts a new iteration at the recorded first event.
    fn restart(&mut self) {
        self.cursor = 0;
        self.departed = false;
    }
}

/// Records one iteration, plans it, replays it from one block.
pub struct Replay {
    options: ReplayOptions,
    fallback: Box<dyn Strategy>,
    recording: Recording,
    plan: Option<Plan>,
    departures: u64,
}

impl Replay {
    /// A replay strategy that records its first iteration through `fallback`
    /// (the pool passes a `caching` strategy) and falls back to it on a
    /// departure.
    pub fn new(options: &ReplayOptions, fallback: Box<dyn Strategy>) -> Replay {
        Replay { options: *options, fallback, recording: Recording::default(), plan: None, departures: 0 }
    }

    /// Plans the recorded iteration and takes the block. On an error
    /// (the device refuses the block) the recording starts again.
    fn plan_recording(&mut self, device: &Device) -> Result<()> {
        let recording = std::mem::take(&mut self.recording);
        let Some(planned) = recording.plan(&self.options)? else {
            // Nothing to plan (no buffer both allocated and freed): record
            // the next iteration instead.
            return Ok(());
        };
        // The recorded iteration's idle memory goes back before the block
        // comes, so the pool holds the plan's peak, not both.
        self.fallback.release_cached(device);
        let block = device.alloc(planned.block_bytes, planned.block_alignment, planned.block_stream)?;
        self.plan = Some(Plan {
            by_offset: planned.by_offset,
            end_at: planned.end_at,
            block: Some(block),
            block_bytes: planned.block_bytes,
            block_alignment: planned.block_alignment,
            block_stream: planned.block_stream,
            lower_bound: planned.lower_bound,
            recorded_requests: planned.recorded_requests,
            steps: planned.steps,
            slots: planned.slots,
            cursor: 0,
            live: 0,
            departed: false,
        });
        Ok(())
    }

    /// Serves the planned alloc at event `at` (taking the block again if
    /// `release_cached` gave it back).
    #[inline]
    fn serve_planned(&mut self, at: usize, request: Request, device: &Device) -> Result<Served> {
        let plan = self.plan.as_mut().expect("replaying");
        let block = match plan.block {
            Some(block) => block,
            None => match device.alloc(plan.block_bytes, plan.block_alignment, plan.block_stream) {
                Ok(block) => *plan.block.insert(block),
                // No room for the block: the fallback may still serve the
                // request alone. Any other refusal (a block the device
                // handed out twice, or misaligned) is the request's.
                Err(e) if e.status() == Status::OutOfMemory => return self.depart(request, device),
                Err(e) => return Err(e),
            },
        };
        let buffer = plan.steps[at].buffer;
        let slot = &mut plan.slots[buffer];
        slot.live = true;
        plan.live += 1;
        plan.cursor = at + 1;
        Ok(Served { ptr: block.byte_add(slot.offset), bytes: slot.bytes, from_plan: true })
    }

    /// The iteration departs; the fallback serves `request`.
    fn depart(&mut self, request: Request, device: &Device) -> Result<Served> {
        let plan = self.plan.as_mut().expect("replaying");
        if !plan.departed {
            plan.departed = true;
            self.departures += 1;
        }
        self.fallback.alloc(request, device)
    }

    /// Everything but the fast path: recording, unplanned allocs,
    /// departures, a new iteration (kept out of line so that the fast path
    /// stays a few instructions). A refused request leaves the iteration
    /// where it was: no departure counted, the cursor unmoved.
    #[inline(never)]
    fn alloc_slow(&mut self, request: Request, device: &Device) -> Result<Served> {
        if let Some(plan) = &self.plan {
            let (cursor, departed, departures) = (plan.cursor, plan.departed, self.departures);
            let served = self.alloc_replaying(request, device);
            if served.is_err() {
                // Only these change before the request is served: a
                // planned buffer goes live only once it is.
                let plan = self.plan.as_mut().expect("replaying");
                (plan.cursor, plan.departed, self.departures) = (cursor, departed, departures);
            }
            return served;
        }
        let served = self.fallback.alloc(request, device)?;
        self.recording.alloc(request, served.ptr);
        Ok(served)
    }

    /// Everything but the fast path of a free.
    #[inline(never)]
    fn free_slow(&mut self, ptr: DevicePtr, device: &Device) -> std::result::Result<Freed, NotLive> {
        if self.plan.is_some() {
            return self.free_replaying(ptr, device);
        }
        let freed = self.fallback.free(ptr, device)?;
        self.recording.free(ptr);
        Ok(freed)
    }

    fn alloc_replaying(&mut self, request: Request, device: &Device) -> Result<Served> {
        let plan = self.plan.as_mut().expect("replaying");
        if !plan.departed {
            let found = plan.match_alloc(plan.cursor, &request).or_else(|| {
                // Past the last planned event: the iteration is over, and
                // this request may begin the next one.
                (plan.cursor >= plan.end_at).then(|| plan.match_alloc(0, &request)).flatten()
            });
            return match found {
                Some(Match::Planned(at)) => self.serve_planned(at, request, device),
                Some(Match::Unplanned(at)) => {
                    let served = self.fallback.alloc(request, device)?;
                    self.plan.as_mut().expect("replaying").cursor = at + 1;
                    Ok(served)
                }
                None => self.depart(request, device),
            };
        }
        // Departed: with no planned buffer live, a request that matches the
        // recorded start begins the next iteration.
        if plan.live == 0 {
            if let Some(m) = plan.match_alloc(0, &request) {
                plan.restart();
                return match m {
                    Match::Planned(at) => self.serve_planned(at, request, device),
                    Match::Unplanned(at) => {
                        let served = self.fallback.alloc(request, device)?;
                        self.plan.as_mut().expect("replaying").cursor = at + 1;
                        Ok(served)
                    }
                };
            }
        }
        self.fallback.alloc(request, device)
    }

    fn free_replaying(&mut self, ptr: DevicePtr, device: &Device) -> std::result::Result<Freed, NotLive> {
        let plan = self.plan.as_mut().expect("replaying");
        let Some(offset) = plan.offset_of(ptr) else {
            return self.fallback.free(ptr, device);
        };
        let at = plan.skip_unplanned(plan.cursor);
        let expected = plan.steps.get(at).filter(|s| !s.alloc).map(|s| s.buffer);
        if !plan.departed {
            if let Some(b) = expected.filter(|&b| plan.slots[b].live && plan.slots[b].offset == offset) {
                let freed = plan.take_back(b);
                plan.advance_past_free(at);
                return Ok(freed);
            }
        }
        let slot = plan.live_at(offset).ok_or(NotLive)?;
        if !plan.departed {
            // A live buffer's free is at or after the cursor: within the
            // current run of frees, the order may differ.
            if expected.is_some() && plan.slots[slot].run_start <= at {
                plan.cursor = at;
            } else {
                plan.departed = true;
                self.departures += 1;
            }
        }
        Ok(plan.take_back(slot))
    }
}

impl Replay {
    /// The fast path of an alloc: served from the plan when the request is
    /// the next recorded event, a planned alloc; `None` (and no change)
    /// otherwise, and [`Strategy::alloc`] decides. The pool calls it
    /// first, without a dynamic call.
    #[inline(always)]
    pub(crate) fn planned_alloc(&mut self, request: &Request) -> Option<Served> {
        self.plan.as_mut().and_then(|p| p.fast_alloc(request))
    }

    /// The fast path of a free: `ptr` is the buffer of the next recorded
    /// event, a free; `None` (and no change) otherwise.
    #[inline(always)]
    pub(crate) fn planned_free(&mut self, ptr: DevicePtr) -> Option<Freed> {
        self.plan.as_mut().and_then(|p| p.fast_free(ptr))
    }
}

impl Strategy for Replay {
    fn name(&self) -> &str {
        "replay"
    }

    fn shardable(&self) -> bool {
        false
    }

    fn alloc(&mut self, request: Request, device: &Device) -> Result<Served> {
        if let Some(served) = self.planned_alloc(&request) {
            return Ok(served);
        }
        self.alloc_slow(request, device)
    }

    fn free(&mut self, ptr: DevicePtr, device: &Device) -> std::result::Result<Freed, NotLive> {
        if let Some(freed) = self.planned_free(ptr) {
            return Ok(freed);
        }
        self.free_slow(ptr, device)
    }

    /// The fallback's idle memory, and the planned block while no planned
    /// buffer is live (the next planned request takes a block again: one
    /// device call).
    fn release_cached(&mut self, device: &Device) -> u64 {
        let mut released = self.fallback.release_cached(device);
        if let Some(plan) = self.plan.as_mut().filter(|p| p.live == 0) {
            if let Some(block) = plan.block.take() {
                device.free(block, plan.block_bytes, plan.block_stream);
                released += plan.block_bytes;
            }
        }
        released
    }

    fn streams_synchronized(&mut self) {
        self.fallback.streams_synchronized()
    }

    /// Records and plans the first iteration; later, starts the next
    /// iteration at the recorded first event (departed when a planned buffer
    /// of this one is still live). Planning runs once, under the pool's
    /// lock, for at most `work_limit` work units of the planner.
    fn end_iteration(&mut self, device: &Device) -> Result<()> {
        let Some(plan) = self.plan.as_mut() else {
            return self.plan_recording(device);
        };
        if plan.live > 0 {
            plan.departed = true;
            self.departures += 1;
        } else {
            plan.restart();
        }
        self.fallback.end_iteration(device)
    }

    /// The fallback's idle blocks, plus the planned block as one idle block
    /// while no planned buffer is live in it (while one is, the block's free
    /// parts belong to the plan's coming buffers, not to the cache).
    fn cache_figures(&self) -> CacheFigures {
        let mut figures = self.fallback.cache_figures();
        if let Some(plan) = self.plan.as_ref().filter(|p| p.live == 0 && p.block.is_some()) {
            figures.cached_blocks += 1;
            figures.cached_bytes += plan.block_bytes;
            figures.largest_free_block = figures.largest_free_block.max(plan.block_bytes);
        }
        figures
    }

    fn plan_figures(&self) -> Option<PlanFigures> {
        Some(match &self.plan {
            Some(plan) => PlanFigures {
                planned: true,
                plan_bytes: plan.block_bytes,
                lower_bound_bytes: plan.lower_bound,
                recorded_requests: plan.recorded_requests,
                departures: self.departures,
            },
            None => PlanFigures { recorded_requests: self.recording.requests(), ..PlanFigures::default() },
        })
    }

    fn release_all(&mut self, device: &Device) {
        self.fallback.release_all(device);
        if let Some(plan) = self.plan.as_mut() {
            if let Some(block) = plan.block.take() {
                device.free(block, plan.block_bytes, plan.block_stream);
            }
        }
    }
}
