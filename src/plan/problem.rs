//! What a planner is asked to solve: buffers with sizes, lifetimes and
//! optional fixed offsets, all sizes already rounded up to the alignment.

use crate::status::{Error, Result};

/// A half-open range of execution steps `[start, end)` during which a buffer
/// is live. `start == end` means the buffer is never used: it occupies no
/// memory at any step and conflicts with nothing (except TFLite Micro's
/// never-used marker `[-1, -1)` under `tflm`, which plans it as TFLite Micro
/// does: live at step -1; see [`Lifetime::tflm_never_used`]).
///
/// The C API speaks TFLite Micro's inclusive `first_use..=last_use`
/// ([`Lifetime::inclusive`]), where step -1 is "before the first step"; the
/// CSV format is half-open ([`Lifetime::half_open`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Lifetime {
    /// First step at which the buffer is live.
    pub start: i64,
    /// First step at which the buffer is no longer live.
    pub end: i64,
}

/// TFLite Micro's marker for "not yet created" and "never used": a first use
/// of -1 means live from before the first step; a buffer whose first and
/// last use are both `-1` is never used.
pub const UNUSED_STEP: i64 = -1;

impl Lifetime {
    /// A half-open lifetime `[lower, upper)`. Errors when `upper < lower`.
    pub fn half_open(lower: i64, upper: i64) -> Result<Self> {
        if upper < lower {
            return Err(Error::invalid(format!("lifetime upper bound {upper} is below its lower bound {lower}")));
        }
        Ok(Lifetime { start: lower, end: upper })
    }

    /// An inclusive lifetime `first_use..=last_use` (TFLite Micro's
    /// convention): a `first_use` of -1 with a `last_use` of 0 or more is
    /// live from step -1 (TFLite Micro's tensors that are read but never
    /// produced: live before the first step); `first_use == last_use == -1`
    /// means never used (the empty lifetime `[-1, -1)`). Errors when `last_use <
    /// first_use`, when a step is below -1, or when `last_use + 1` overflows.
    pub fn inclusive(first_use: i64, last_use: i64) -> Result<Self> {
        if first_use == UNUSED_STEP && last_use == UNUSED_STEP {
            return Ok(Lifetime { start: UNUSED_STEP, end: UNUSED_STEP });
        }
        if first_use < UNUSED_STEP || last_use < 0 {
            return Err(Error::invalid(format!(
                "negative step (first_use {first_use}, last_use {last_use}); only a first_use of -1 \
                 (live before the first step) and -1,-1 (never used) are allowed"
            )));
        }
        if last_use < first_use {
            return Err(Error::invalid(format!("last_use {last_use} is before first_use {first_use}")));
        }
        let end =
            last_use.checked_add(1).ok_or_else(|| Error::overflow(format!("last_use {last_use} + 1 overflows")))?;
        Ok(Lifetime { start: first_use, end })
    }

    /// The inclusive `(first_use, last_use)` of this lifetime, as
    /// [`Lifetime::inclusive`] takes them: `(-1, -1)` when it is empty.
    pub fn to_inclusive(&self) -> (i64, i64) {
        if self.is_empty() {
            (UNUSED_STEP, UNUSED_STEP)
        } else {
            (self.start, self.end - 1)
        }
    }

    /// How `tflm` sees this lifetime: TFLite Micro's never-used marker
    /// (`[-1, -1)`, inclusive (-1, -1)) as TFLite Micro plans such tensors,
    /// live at step -1 alone (so it meets every buffer live at step -1); any
    /// other lifetime unchanged (other empty ones, which TFLite Micro cannot
    /// state, occupy nothing).
    pub fn tflm_never_used(self) -> Lifetime {
        if self.start == UNUSED_STEP && self.end == UNUSED_STEP {
            Lifetime { start: UNUSED_STEP, end: 0 }
        } else {
            self
        }
    }

    /// Whether the lifetime covers no step.
    pub fn is_empty(&self) -> bool {
        self.start >= self.end
    }

    /// Number of steps covered.
    pub fn len(&self) -> u64 {
        (self.end as i128 - self.start as i128).max(0) as u64
    }

    /// Whether two lifetimes share at least one step.
    pub fn overlaps(&self, other: &Lifetime) -> bool {
        self.start < other.end && other.start < self.end && !self.is_empty() && !other.is_empty()
    }
}

/// One buffer to place. `size` is already a multiple of the problem's
/// alignment.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Buffer {
    /// Bytes (aligned).
    pub size: u64,
    /// When it is live.
    pub lifetime: Lifetime,
    /// An offline-planned offset the planner must keep, if any.
    pub fixed_offset: Option<u64>,
}

impl Buffer {
    /// Whether the buffer takes space at some step: a non-empty lifetime and
    /// a non-zero size. Buffers that do not occupy anything never conflict.
    pub fn occupies(&self) -> bool {
        self.size > 0 && !self.lifetime.is_empty()
    }

    /// Whether two buffers are live at the same step and both take space.
    pub fn conflicts_with(&self, other: &Buffer) -> bool {
        self.occupies() && other.occupies() && self.lifetime.overlaps(&other.lifetime)
    }
}

/// Checks that `alignment` is a usable alignment: a non-zero power of two.
pub fn check_alignment(alignment: u64) -> Result<()> {
    if alignment == 0 || !alignment.is_power_of_two() {
        return Err(Error::invalid(format!("alignment {alignment} is not a power of two")));
    }
    Ok(())
}

/// Rounds `size` up to a multiple of `alignment` (a power of two).
pub fn align_up(size: u64, alignment: u64) -> Result<u64> {
    debug_assert!(alignment.is_power_of_two());
    size.checked_add(alignment - 1)
        .map(|s| s & !(alignment - 1))
        .ok_or_else(|| Error::overflow(format!("size {size} rounded up to alignment {alignment} overflows 64 bits")))
}

/// A planning instance: the buffers (sizes aligned) and the alignment every
/// offset must respect.
///
/// Building one through [`Problem::push`] guarantees that no plan of it can
/// overflow 64-bit offsets: the sum of all sizes plus the highest fixed end
/// fits in a `u64`.
#[derive(Clone, Debug)]
pub struct Problem {
    buffers: Vec<Buffer>,
    alignment: u64,
    /// Sum of all sizes: an upper bound on any first-fit plan's growth.
    total_size: u64,
    /// Highest `offset + size` among fixed buffers.
    fixed_top: u64,
}

impl Problem {
    /// An empty problem. Errors when `alignment` is not a power of two.
    pub fn new(alignment: u64) -> Result<Self> {
        check_alignment(alignment)?;
        Ok(Problem { buffers: Vec::new(), alignment, total_size: 0, fixed_top: 0 })
    }

    /// Builds a problem from buffers given with unaligned sizes.
    pub fn from_buffers(alignment: u64, buffers: impl IntoIterator<Item = Buffer>) -> Result<Self> {
        let mut p = Problem::new(alignment)?;
        for b in buffers {
            p.push(b.size, b.lifetime, b.fixed_offset)?;
        }
        Ok(p)
    }

    /// Adds a buffer; `size` is rounded up to the alignment (zero sizes are
    /// legal and take no space). Returns its index. Errors, changing nothing,
    /// on a fixed offset that is not aligned, on sizes or offsets that
    /// could overflow 64 bits, and past `u32::MAX` buffers.
    pub fn push(&mut self, size: u64, lifetime: Lifetime, fixed_offset: Option<u64>) -> Result<usize> {
        // The heap-free algorithms index buffers with u32s.
        if self.buffers.len() >= u32::MAX as usize {
            return Err(Error::overflow(format!("a problem holds at most {} buffers", u32::MAX)));
        }
        let size = align_up(size, self.alignment)?;
        let total_size = self.total_size.checked_add(size).ok_or_else(|| {
            Error::overflow(format!(
                "total size of all buffers exceeds 2^64 - 1 bytes when adding a buffer of {size} B"
            ))
        })?;
        let mut fixed_top = self.fixed_top;
        if let Some(offset) = fixed_offset {
            if offset % self.alignment != 0 {
                return Err(Error::invalid(format!(
                    "fixed offset {offset} is not a multiple of the alignment {}",
                    self.alignment
                )));
            }
            let end = offset
                .checked_add(size)
                .ok_or_else(|| Error::overflow(format!("fixed offset {offset} + size {size} overflows 64 bits")))?;
            fixed_top = fixed_top.max(end);
        }
        fixed_top.checked_add(total_size).ok_or_else(|| {
            Error::overflow("highest fixed buffer end plus the total size of all buffers overflows 64 bits")
        })?;
        self.buffers.push(Buffer { size, lifetime, fixed_offset });
        self.total_size = total_size;
        self.fixed_top = fixed_top;
        Ok(self.buffers.len() - 1)
    }

    /// The buffers, in the order they were added.
    pub fn buffers(&self) -> &[Buffer] {
        &self.buffers
    }

    /// Number of buffers.
    pub fn len(&self) -> usize {
        self.buffers.len()
    }

    /// Whether there are no buffers.
    pub fn is_empty(&self) -> bool {
        self.buffers.is_empty()
    }

    /// The alignment of every size and offset.
    pub fn alignment(&self) -> u64 {
        self.alignment
    }

    /// Whether any buffer has a fixed offset.
    pub fn has_fixed(&self) -> bool {
        self.buffers.iter().any(|b| b.fixed_offset.is_some())
    }

    /// Sum of all (aligned) sizes.
    pub fn total_size(&self) -> u64 {
        self.total_size
    }

    /// The same problem with other buffers: the fixed buffers that occupy
    /// memory replaced by the disjoint blocks of their union (see
    /// `plan::fixed`). The overflow guarantee carries over although the
    /// blocks' sizes may sum past the fixed buffers' (a region split at
    /// several steps counts once per piece): every block ends at or below
    /// the old highest fixed end, the other buffers are unchanged, and what
    /// algorithms add up is what is live at one step, where the blocks are
    /// disjoint. So the old totals stay the bounds.
    pub(crate) fn rewritten(&self, buffers: Vec<Buffer>) -> Problem {
        debug_assert!(buffers
            .iter()
            .all(|b| b.fixed_offset.is_none_or(|o| !b.occupies() || o + b.size <= self.fixed_top)));
        Problem { buffers, alignment: self.alignment, total_size: self.total_size, fixed_top: self.fixed_top }
    }
}

/// The heap planner's buffers as the heap-free algorithms read them.
impl super::heapless::Tensors for Problem {
    type Bytes = u64;
    type Step = i64;

    #[inline]
    fn count(&self) -> usize {
        self.buffers.len()
    }

    #[inline]
    fn size(&self, i: usize) -> u64 {
        self.buffers[i].size
    }

    #[inline]
    fn start(&self, i: usize) -> i64 {
        self.buffers[i].lifetime.start
    }

    #[inline]
    fn end(&self, i: usize) -> i64 {
        self.buffers[i].lifetime.end
    }

    #[inline]
    fn fixed(&self, i: usize) -> Option<u64> {
        self.buffers[i].fixed_offset
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::Status;

    #[test]
    fn inclusive_and_half_open_lifetimes() {
        assert_eq!(Lifetime::inclusive(2, 4).unwrap(), Lifetime { start: 2, end: 5 });
        assert_eq!(Lifetime::inclusive(3, 3).unwrap().len(), 1);
        assert!(Lifetime::inclusive(-1, -1).unwrap().is_empty());
        assert_eq!(Lifetime::inclusive(-1, -1).unwrap().to_inclusive(), (-1, -1));
        // Read but never produced: live from step -1.
        assert_eq!(Lifetime::inclusive(-1, 2).unwrap(), Lifetime { start: -1, end: 3 });
        assert_eq!(Lifetime::inclusive(-1, 2).unwrap().to_inclusive(), (-1, 2));
        assert_eq!(Lifetime::inclusive(-1, 0).unwrap().len(), 2);
        assert_eq!(Lifetime::inclusive(4, 2).unwrap_err().status(), Status::InvalidArgument);
        assert_eq!(Lifetime::inclusive(-2, 2).unwrap_err().status(), Status::InvalidArgument);
        assert_eq!(Lifetime::inclusive(3, -1).unwrap_err().status(), Status::InvalidArgument);
        assert_eq!(Lifetime::inclusive(-1, -2).unwrap_err().status(), Status::InvalidArgument);
        assert_eq!(Lifetime::inclusive(0, i64::MAX).unwrap_err().status(), Status::Overflow);
        assert_eq!(Lifetime::half_open(3, 3).unwrap().len(), 0);
        assert!(Lifetime::half_open(3, 2).is_err());
    }

    #[test]
    fn tflm_sees_never_used_as_live_at_step_minus_one() {
        let never = Lifetime::inclusive(-1, -1).unwrap().tflm_never_used();
        assert_eq!(never, Lifetime { start: -1, end: 0 });
        assert!(never.overlaps(&Lifetime::inclusive(-1, 4).unwrap()));
        assert!(!never.overlaps(&Lifetime::inclusive(0, 4).unwrap()));
        let used = Lifetime::inclusive(2, 3).unwrap();
        assert_eq!(used.tflm_never_used(), used);
        let empty = Lifetime::half_open(7, 7).unwrap();
        assert_eq!(empty.tflm_never_used(), empty);
    }

    #[test]
    fn overlap_is_half_open_and_ignores_empty() {
        let a = Lifetime::half_open(0, 3).unwrap();
        let b = Lifetime::half_open(3, 5).unwrap();
        let c = Lifetime::half_open(2, 4).unwrap();
        let e = Lifetime::half_open(1, 1).unwrap();
        assert!(!a.overlaps(&b));
        assert!(a.overlaps(&c) && c.overlaps(&b));
        assert!(!a.overlaps(&e) && !e.overlaps(&a));
    }

    #[test]
    fn alignment_rules() {
        assert!(check_alignment(0).is_err());
        assert!(check_alignment(12).is_err());
        assert!(check_alignment(1).is_ok() && check_alignment(64).is_ok());
        assert_eq!(align_up(13, 16).unwrap(), 16);
        assert_eq!(align_up(0, 16).unwrap(), 0);
        assert_eq!(align_up(u64::MAX, 16).unwrap_err().status(), Status::Overflow);
    }

    #[test]
    fn push_rejects_unaligned_fixed_offsets_and_overflow() {
        let mut p = Problem::new(16).unwrap();
        let lt = Lifetime::half_open(0, 1).unwrap();
        assert_eq!(p.push(10, lt, Some(8)).unwrap_err().status(), Status::InvalidArgument);
        assert_eq!(p.push(10, lt, None).unwrap(), 0);
        assert_eq!(p.buffers()[0].size, 16);
        assert_eq!(p.push(u64::MAX - 8, lt, None).unwrap_err().status(), Status::Overflow);
        assert_eq!(p.len(), 1, "a failed push changes nothing");
        p.push(u64::MAX / 2, lt, None).unwrap();
        assert_eq!(p.push(u64::MAX / 2, lt, None).unwrap_err().status(), Status::Overflow);
        assert_eq!(p.len(), 2);
        assert_eq!(p.push(16, lt, Some(u64::MAX - 15)).unwrap_err().status(), Status::Overflow);
        assert_eq!(p.total_size(), 16 + align_up(u64::MAX / 2, 16).unwrap());
    }
}
