//! What an arena's sections measure, the exact size it needs, and the
//! "requested X B, available Y B, missing Z B" message of a call that does
//! not fit (see `required` for why the size is exact).

use super::arena::{align_up, Arena, Side, TailRecord};
use super::memory::Memory;
use super::required::{min_end, TailStep};
use crate::status::{Error, Status};

/// The sizes of an arena's sections and the size it needs.
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

impl<M: Memory> Arena<M> {
    fn step(&self, t: &TailRecord) -> TailStep {
        let c = self.canary as u128;
        TailStep { span: t.size as u128 + c, align: t.align() as u128, lead: c }
    }

    /// Smallest end of the persistent side for the tail so far, with an
    /// optional extra step and, in single mode, the last floor raised to
    /// `raise` (a failed call's hypothetical).
    fn min_persistent_end(&self, extra: Option<TailStep>, raise: u128) -> u128 {
        if self.split {
            let floor = self.p.start as u128;
            let steps = extra.into_iter().chain(self.tails.iter().rev().map(|t| self.step(t))).map(|s| (s, floor));
            return min_end(floor, steps);
        }
        let last = (self.last_floor as u128).max(raise);
        let recorded = self.tails.iter().rev().map(|t| (self.step(t), t.floor as u128));
        match extra {
            Some(step) => min_end((self.temp_top as u128).max(raise), std::iter::once((step, last)).chain(recorded)),
            None => min_end(last, recorded),
        }
    }

    /// All sizes, including the exact size needed so far.
    pub fn sizes(&self) -> ArenaSizes {
        let capacity = match (self.dry_run, self.split) {
            (true, _) => 0,
            (false, false) => self.np.len as u64,
            (false, true) => (self.np.len + self.p.len) as u64,
        };
        let temp = (self.temp_top - self.temp_base) as u64;
        let tail = (self.p.end() - self.tail_bottom) as u64;
        let head = self.head_size as u64;
        let required_nonpersistent = (self.np_peak - self.np.start) as u64;
        let required_persistent = saturate(self.persistent_only_end() - self.p.start as u128);
        let required = if self.split {
            required_nonpersistent.saturating_add(required_persistent)
        } else {
            saturate(self.min_persistent_end(None, 0) - self.np.start as u128)
        };
        let a = self.alignment;
        let c = self.canary;
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

    /// The smallest end of the persistent side with the tail alone (floor
    /// at the persistent start).
    fn persistent_only_end(&self) -> u128 {
        let floor = self.p.start as u128;
        min_end(floor, self.tails.iter().rev().map(|t| (self.step(t), floor)))
    }

    #[cold]
    pub(super) fn tail_shortfall(&self, size: usize, align: usize) -> Error {
        let c = self.canary as i128;
        let t = self.tail_bottom as i128;
        let data = (t - c - size as i128).div_euclid(align as i128) * align as i128;
        let span = (t - (data - c)) as u128;
        let available = self.tail_bottom.saturating_sub(self.persistent_limit());
        let step = TailStep { span: size as u128 + c as u128, align: align as u128, lead: c as u128 };
        let end = self.min_persistent_end(Some(step), 0);
        let what = format!("a persistent allocation of {size} B");
        self.shortfall(&what, size, align, span, available, end, Side::Persistent)
    }

    #[cold]
    pub(super) fn temp_shortfall(&self, size: usize, align: usize) -> Error {
        let c = self.canary as u128;
        let data = (self.temp_top as u128 + c).next_multiple_of(align as u128);
        let top = data + size as u128 + c;
        let what = format!("a temp allocation of {size} B");
        self.shortfall(
            &what,
            size,
            align,
            top - self.temp_top as u128,
            self.nonpersistent_available(),
            self.nonpersistent_end(top),
            Side::NonPersistent,
        )
    }

    #[cold]
    pub(super) fn head_shortfall(&self, size: usize) -> Error {
        let top = self.head_start as u128 + size as u128 + self.canary as u128;
        let what = format!("a head of {size} B (it has {} B now)", self.head_size);
        let growth = (size - self.head_size) as u128;
        self.shortfall(
            &what,
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
    fn nonpersistent_end(&self, top: u128) -> u128 {
        if self.split {
            top
        } else {
            self.min_persistent_end(None, top)
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
        what: &str,
        size: usize,
        align: usize,
        span: u128,
        available: usize,
        end: u128,
        side: Side,
    ) -> Error {
        let span_of_side = if side == Side::Persistent { self.p } else { self.np };
        let missing = end.saturating_sub(span_of_side.end() as u128);
        let needed = end - span_of_side.start as u128;
        let (which, article) = match (self.split, side) {
            (false, _) => ("arena", "an"),
            (true, Side::Persistent) => ("persistent buffer", "a"),
            (true, Side::NonPersistent) => ("non-persistent buffer", "a"),
        };
        let detail = match (span != size as u128, self.canary > 0) {
            (false, _) => String::new(),
            (true, false) => format!(" ({span} B with alignment {align} padding)"),
            (true, true) => format!(" ({span} B with alignment {align} padding and guard bytes)"),
        };
        Error::new(
            Status::DoesNotFit,
            format!(
                "{which} too small for {what}: requested {size} B{detail}, available {available} B, missing {missing} B \
                 ({article} {which} of {needed} B would hold every call so far and this one)"
            ),
        )
    }
}

fn saturate(x: u128) -> u64 {
    u64::try_from(x).unwrap_or(u64::MAX)
}
