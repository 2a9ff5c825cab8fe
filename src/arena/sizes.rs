//! What an arena's sections measure, the exact size it needs, and the
//! "requested X B, available Y B, missing Z B" message of a call that does
//! not fit (see `required` for why the size is exact).

use super::arena::{align_up, Arena, Side, TailRecord};
use super::memory::Memory;
use super::required::{step_back, Cursor, TailStep, Wide};

/// `Wide` with a sign, for a cursor that may pass below address 0.
#[cfg(target_pointer_width = "64")]
type IWide = i128;
/// `Wide` with a sign, for a cursor that may pass below address 0.
#[cfg(not(target_pointer_width = "64"))]
type IWide = i64;
use crate::status::{Error, Status, MESSAGES_STRIPPED};

/// The sizes of an arena's sections and the size it needs.
// repr(C): the same layout as the C API's `nnm_arena_sizes`, so that
// converting is one copy (a microcontroller's flash pays for a shuffle).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ArenaSizes {
    /// Bytes of the caller's buffers (both, in split mode); 0 in a dry run.
    pub capacity: u64,
    /// Bytes lost aligning the start of the non-persistent side up.
    pub alignment_lost: u64,
    /// The head: the largest plan or reservation committed.
    pub head: u64,
    /// Temp bytes in use now (from the head's end to the temp top).
    pub temp: u64,
    /// The most temp bytes ever in use at once.
    pub temp_peak: u64,
    /// The tail: from its lowest allocation to the end, padding included.
    pub tail: u64,
    /// `head + temp + tail` (TFLite Micro's "used bytes"; it leaves out the
    /// temp peak and the alignment loss).
    pub used: u64,
    /// The largest temp allocation (default alignment) that fits now.
    pub available: u64,
    /// The largest persistent allocation (default alignment) that fits now.
    pub available_persistent: u64,
    /// The exact size that would have sufficed for every call so far: one
    /// buffer of this size at the same start succeeds, one byte less fails.
    /// In split mode, the sum of the two below.
    pub required: u64,
    /// The non-persistent side alone: alignment loss, head and temp peak.
    pub required_nonpersistent: u64,
    /// The persistent side alone: the tail with its alignment.
    pub required_persistent: u64,
    /// Temp allocations held (not released).
    pub temp_count: u64,
    /// Persistent allocations made.
    pub persistent_count: u64,
    /// Plans and reservations committed to the head since the last head reset.
    pub plan_count: u64,
    /// The largest alignment any call used (at least the arena's): a dry
    /// run's `required` holds for buffers aligned to this.
    pub largest_alignment: u64,
}

impl<M: Memory> Arena<'_, M> {
    fn step<W: Cursor>(&self, t: &TailRecord) -> TailStep<W> {
        let c = W::of(self.canary());
        TailStep { span: W::of(t.size) + c, align: W::of(t.align()), lead: c }
    }

    /// The smallest end from which every tail step (an `extra` one last)
    /// succeeds, walking them backwards (see `required`). `alone`: against
    /// the persistent start only (split mode, or the persistent side by
    /// itself); otherwise against the floors the non-persistent side set,
    /// the last one raised to `raise`. Inlined, so that what a caller
    /// passes as constants folds away; the walk is shared. In [`Wide`]: the
    /// extra step and the raise are calls that did not fit, whose figures
    /// may pass the address space.
    #[inline]
    fn tail_end(&self, alone: bool, extra: Option<TailStep>, raise: Wide) -> Wide {
        let start = self.p.start as Wide;
        let last = (self.last_floor as Wide).max(raise);
        let mut need = match (alone, extra) {
            (true, _) => start,
            (false, Some(_)) => (self.temp_top as Wide).max(raise),
            (false, None) => last,
        };
        if let Some(step) = extra {
            need = step_back(need, step, if alone { start } else { last });
        }
        self.walk_back(need, alone)
    }

    /// [`Arena::tail_end`] of the calls so far alone, in `usize`: every one
    /// of them fitted, so no figure of the walk passes the buffer's end `E`.
    /// By induction from the last step, the need `n_k` before step `k` is
    /// at most the tail bottom `t_k` the real buffer had then (`t_0 = E`):
    /// - the last need is the last floor, a temp top that fitted below the
    ///   tail bottom, so `n_n <= t_n`;
    /// - `n_k = max(floor_k, align_up(n_{k+1} + lead, align) + span)`;
    ///   `floor_k <= t_k` (that temp top fitted too), and with
    ///   `n_{k+1} <= t_{k+1}`, `n_{k+1} + lead <= t_{k+1} + lead`, which is
    ///   `t_k - span` aligned down, so aligning up stays at or below it
    ///   and adding `span` gives at most `t_k`;
    /// - the floors of `alone` (the persistent start) are lower still.
    ///
    /// Every intermediate sum is at most some `t_k`, and `align_up` adds
    /// `align - 1` only to a value at most an aligned `t_k - span`.
    #[inline]
    fn fitted_end(&self, alone: bool) -> usize {
        self.walk_back(if alone { self.p.start } else { self.last_floor }, alone)
    }

    /// The walk over the persistent allocations, newest first, from
    /// `need`, the smallest end after them.
    #[inline(never)]
    fn walk_back<W: Cursor>(&self, mut need: W, alone: bool) -> W {
        let start = W::of(self.p.start);
        for t in self.tails.as_slice().iter().rev() {
            need = step_back(need, self.step(t), if alone { start } else { W::of(t.floor) });
        }
        need
    }

    /// All sizes, including the exact size needed so far.
    #[inline]
    pub fn sizes(&self) -> ArenaSizes {
        let capacity = match (self.is_dry_run(), self.is_split()) {
            (true, _) => 0,
            (false, false) => self.np.len as u64,
            (false, true) => (self.np.len + self.p.len) as u64,
        };
        let temp = (self.temp_top - self.temp_base) as u64;
        let tail = (self.p.end() - self.tail_bottom) as u64;
        let head = self.head_size as u64;
        let required_nonpersistent = (self.np_peak - self.np.start) as u64;
        let required_persistent = (self.fitted_end(true) - self.p.start) as u64;
        let required = if self.is_split() {
            required_nonpersistent.saturating_add(required_persistent)
        } else {
            (self.fitted_end(self.is_split()) - self.np.start) as u64
        };
        let a = self.alignment;
        let c = self.canary();
        let available = self
            .temp_top
            .checked_add(c)
            .and_then(|x| align_up(x, a))
            .map_or(0, |data| self.nonpersistent_limit().saturating_sub(c).saturating_sub(data));
        let available_persistent = self
            .persistent_limit()
            .checked_add(c)
            .and_then(|x| align_up(x, a))
            .map_or(0, |floor| self.tail_bottom.saturating_sub(c).saturating_sub(floor));
        ArenaSizes {
            capacity,
            alignment_lost: (self.head_start - self.np.start) as u64,
            head,
            temp,
            temp_peak: self.temp_peak as u64,
            tail,
            used: head + temp + tail,
            available: available as u64,
            available_persistent: available_persistent as u64,
            required,
            required_nonpersistent,
            required_persistent,
            temp_count: self.temps_held as u64,
            persistent_count: self.tails.len() as u64,
            plan_count: self.plans,
            largest_alignment: self.max_align as u64,
        }
    }

    #[cfg_attr(not(nnmem_stripped), cold, inline(never))]
    #[cfg_attr(nnmem_stripped, inline(always))]
    pub(super) fn tail_shortfall(&self, size: usize, align: usize) -> Error {
        if MESSAGES_STRIPPED {
            return Error::with(Status::DoesNotFit, |_| {});
        }
        let c = self.canary() as IWide;
        let t = self.tail_bottom as IWide;
        // Rounded down to the alignment, a power of two (below zero too:
        // masking a two's complement value rounds towards minus infinity).
        let data = (t - c - size as IWide) & !(align as IWide - 1);
        let span = (t - (data - c)) as Wide;
        let available = self.tail_bottom.saturating_sub(self.persistent_limit());
        let step = TailStep { span: size as Wide + c as Wide, align: align as Wide, lead: c as Wide };
        let end = self.tail_end(self.is_split(), Some(step), 0);
        self.shortfall(Request::Persistent, size, align, span, available, end, Side::Persistent)
    }

    #[cfg_attr(not(nnmem_stripped), cold, inline(never))]
    #[cfg_attr(nnmem_stripped, inline(always))]
    pub(super) fn temp_shortfall(&self, size: usize, align: usize) -> Error {
        if MESSAGES_STRIPPED {
            return Error::with(Status::DoesNotFit, |_| {});
        }
        let c = self.canary() as Wide;
        let data = (self.temp_top as Wide + c + align as Wide - 1) & !(align as Wide - 1);
        let top = data + size as Wide + c;
        self.shortfall(
            Request::Temp,
            size,
            align,
            top - self.temp_top as Wide,
            self.nonpersistent_available(),
            self.nonpersistent_end(top),
            Side::NonPersistent,
        )
    }

    #[cfg_attr(not(nnmem_stripped), cold, inline(never))]
    #[cfg_attr(nnmem_stripped, inline(always))]
    pub(super) fn head_shortfall(&self, size: usize) -> Error {
        if MESSAGES_STRIPPED {
            return Error::with(Status::DoesNotFit, |_| {});
        }
        let top = self.head_start as Wide + size as Wide + self.canary() as Wide;
        let growth = (size - self.head_size) as Wide;
        self.shortfall(
            Request::Head(self.head_size),
            size,
            self.alignment,
            growth,
            self.nonpersistent_available(),
            self.nonpersistent_end(top),
            Side::NonPersistent,
        )
    }

    fn nonpersistent_available(&self) -> usize {
        self.nonpersistent_limit().saturating_sub(self.temp_top)
    }

    /// The smallest end of the buffer holding the non-persistent side once
    /// its top reaches `top`.
    fn nonpersistent_end(&self, top: Wide) -> Wide {
        if self.is_split() {
            top
        } else {
            self.tail_end(false, None, top)
        }
    }

    /// The "requested X B, available Y B, missing Z B" error. `span` is what
    /// the call needs at the cursor (padding and guards included); `end` is
    /// the smallest end of `side` with which every call so far and this one
    /// succeed, so `missing` is what the buffer lacks: exactly 1 B for a
    /// buffer one byte short of the dry-run size.
    #[allow(clippy::too_many_arguments)]
    fn shortfall(
        &self,
        what: Request,
        size: usize,
        align: usize,
        span: Wide,
        available: usize,
        end: Wide,
        side: Side,
    ) -> Error {
        let span_of_side = if side == Side::Persistent { self.p } else { self.np };
        let missing = end.saturating_sub(span_of_side.end() as Wide);
        let needed = end - span_of_side.start as Wide;
        let (which, article) = match (self.is_split(), side) {
            (false, _) => ("arena", "an"),
            (true, Side::Persistent) => ("persistent buffer", "a"),
            (true, Side::NonPersistent) => ("non-persistent buffer", "a"),
        };
        let guarded = self.canary() > 0;
        Error::with(Status::DoesNotFit, |t| {
            t.put(which);
            t.put(" too small for ");
            match what {
                Request::Persistent => t.put("a persistent allocation of "),
                Request::Temp => t.put("a temp allocation of "),
                Request::Head(_) => t.put("a head of "),
            }
            t.number(size);
            t.put(" B");
            if let Request::Head(now) = what {
                t.put(" (it has ");
                t.number(now);
                t.put(" B now)");
            }
            t.put(": requested ");
            t.number(size);
            t.put(" B");
            if span != size as Wide {
                t.put(" (");
                t.number(figure(span));
                t.put(" B with alignment ");
                t.number(align);
                t.put(if guarded { " padding and guard bytes)" } else { " padding)" });
            }
            t.put(", available ");
            t.number(available);
            t.put(" B, missing ");
            t.number(figure(missing));
            t.put(" B (");
            t.put(article);
            t.put(" ");
            t.put(which);
            t.put(" of ");
            t.number(figure(needed));
            t.put(" B would hold every call so far and this one)");
        })
    }
}

/// What a call that does not fit asked for.
#[derive(Copy, Clone)]
enum Request {
    Persistent,
    Temp,
    /// A larger head; the head's size now.
    Head(usize),
}

/// A figure for a message (`usize::MAX` past it).
fn figure(x: Wide) -> usize {
    usize::try_from(x).unwrap_or(usize::MAX)
}
