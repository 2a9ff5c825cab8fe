//! The exact arena size a sequence of calls needs.
//!
//! The non-persistent side (head, then temp) grows up from the aligned
//! start and does not depend on where the buffer ends. The tail grows down
//! from the end, and each persistent allocation is aligned *down*, so where
//! it lands depends on the end address. Summing the bytes used therefore
//! overestimates or underestimates by the alignment slack; TFLite Micro's
//! "used bytes" also leaves out the temp peak.
//!
//! The exact answer: with `t_0` the end and `t_{k+1} = align_down(t_k -
//! span_k, align_k) - lead_k` the tail bottom after `k + 1` persistent
//! allocations, every call succeeds iff `t_k >= floor_k` for every `k`,
//! where `floor_k` is the highest the non-persistent side reached while `k`
//! persistent allocations existed. Because `align_down(x, a) >= y` iff
//! `x >= align_up(y, a)`, the smallest end follows backwards in one pass:
//! `need_n = floor_n`, `need_k = max(floor_k, align_up(need_{k+1} + lead_k,
//! align_k) + span_k)`, and the smallest end is `need_0`. One byte less and
//! some call fails: the bound is tight, not an estimate.
//!
//! Arithmetic is in [`Wide`], twice the address width, so that no
//! intermediate value can overflow (every figure is a sum of a few
//! address-sized ones).

/// Twice the address width: `u128` on 64-bit targets, `u64` on 32-bit ones
/// (where `u128` arithmetic would cost a microcontroller kilobytes of code).
#[cfg(target_pointer_width = "64")]
pub type Wide = u128;
/// Twice the address width: `u128` on 64-bit targets, `u64` on 32-bit ones
/// (where `u128` arithmetic would cost a microcontroller kilobytes of code).
#[cfg(not(target_pointer_width = "64"))]
pub type Wide = u64;

/// An integer the tail walk runs in: `usize` where no figure can pass the
/// address space (the calls that succeeded: see [`Arena::fitted_end`]),
/// [`Wide`] where one can (a call that did not fit, for its message).
///
/// [`Arena::fitted_end`]: super::Arena
pub trait Cursor:
    Copy
    + Ord
    + core::ops::Add<Output = Self>
    + core::ops::Sub<Output = Self>
    + core::ops::BitAnd<Output = Self>
    + core::ops::Not<Output = Self>
{
    /// 1.
    const ONE: Self;
    /// `x` in this type (never narrower than `usize`).
    fn of(x: usize) -> Self;
}

impl Cursor for usize {
    const ONE: usize = 1;
    #[inline(always)]
    fn of(x: usize) -> usize {
        x
    }
}

impl Cursor for Wide {
    const ONE: Wide = 1;
    #[inline(always)]
    fn of(x: usize) -> Wide {
        x as Wide
    }
}

/// One persistent allocation as the tail cursor sees it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TailStep<W = Wide> {
    /// Bytes between the allocation's start and the cursor before it: its
    /// size plus the guard canary after it.
    pub span: W,
    /// Its alignment (a power of two).
    pub align: W,
    /// Bytes below the allocation: the guard canary before it.
    pub lead: W,
}

/// `x` rounded up to `align`. `align - 1` first: `x + align` alone may
/// pass the type's top where the result does not (a `usize` walk next to
/// the end of the address space).
#[inline(always)]
fn align_up<W: Cursor>(x: W, align: W) -> W {
    (x + (align - W::ONE)) & !(align - W::ONE)
}

/// The smallest end address from which a step and every later one
/// succeed: `need` is that of the later steps, `floor` the floor that held
/// before this step.
#[inline]
pub fn step_back<W: Cursor>(need: W, step: TailStep<W>, floor: W) -> W {
    floor.max(align_up(need + step.lead, step.align) + step.span)
}

/// The smallest end address from which every step succeeds.
///
/// `last_floor` is the floor after the last step; `steps_rev` yields each
/// step with the floor that held *before* it, last step first.
#[cfg(test)]
pub fn min_end(last_floor: Wide, steps_rev: impl IntoIterator<Item = (TailStep, Wide)>) -> Wide {
    steps_rev.into_iter().fold(last_floor, |need, (step, floor)| step_back(need, step, floor))
}

/// Runs the tail forward from `end`: the bottom after each step, or `None`
/// once a step falls below its floor. Used by the tests to check
/// [`min_end`] against the definition.
#[cfg(test)]
pub fn replay(end: Wide, steps: &[(TailStep, Wide)], last_floor: Wide) -> bool {
    let mut t = end;
    for &(step, floor) in steps {
        if t < floor {
            return false;
        }
        let Some(start) = t.checked_sub(step.span) else { return false };
        let Some(bottom) = (start & !(step.align - 1)).checked_sub(step.lead) else { return false };
        t = bottom;
    }
    t >= last_floor
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (no dependency needed for tests).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, n: u64) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 33) % n
        }
    }

    #[test]
    fn min_end_is_the_smallest_end_that_replays() {
        let mut rng = Lcg(7);
        for _ in 0..2000 {
            let n = rng.next(6) as usize;
            let lead = if rng.next(2) == 0 { 0 } else { 16 };
            let steps: Vec<(TailStep, Wide)> = (0..n)
                .map(|_| {
                    let step = TailStep { span: (rng.next(100) + 1) as Wide + lead, align: 1 << rng.next(7), lead };
                    (step, rng.next(300) as Wide)
                })
                .collect();
            let last_floor = rng.next(300) as Wide;
            let end = min_end(last_floor, steps.iter().rev().copied());
            assert!(replay(end, &steps, last_floor), "{steps:?} {last_floor} {end}");
            assert!(end == 0 || !replay(end - 1, &steps, last_floor), "{steps:?} {last_floor} {end}");
        }
    }
}
