//! Checks any plan, made by nnmem or elsewhere: no two buffers live at the
//! same step may share a byte. A sweep over time with the live buffers kept
//! ordered by offset, so each arrival is compared with its two neighbours
//! only: O(n log n) time, O(n) memory.

use std::collections::BTreeMap;
use std::fmt;

use super::problem::Buffer;

/// Two buffers that are live at the same step and share bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Overlap {
    /// The lower index of the pair.
    pub first: usize,
    /// The higher index of the pair.
    pub second: usize,
    /// The first step at which both are live.
    pub step: i64,
}

impl fmt::Display for Overlap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "buffers {} and {} overlap in memory at step {}", self.first, self.second, self.step)
    }
}

/// Why a plan is not valid.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Invalid {
    /// Two live buffers share bytes; the first such pair met by the sweep
    /// (earliest step, then lowest index).
    Overlap(Overlap),
    /// `offset + size` of this buffer overflows 64 bits.
    OffsetOverflow(usize),
    /// The number of offsets differs from the number of buffers.
    LengthMismatch {
        /// Number of buffers.
        buffers: usize,
        /// Number of offsets.
        offsets: usize,
    },
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Invalid::Overlap(o) => o.fmt(f),
            Invalid::OffsetOverflow(i) => write!(f, "buffer {i}: offset + size overflows 64 bits"),
            Invalid::LengthMismatch { buffers, offsets } => {
                write!(f, "{buffers} buffers but {offsets} offsets")
            }
        }
    }
}

/// Validates `offsets` for `buffers` and returns the plan's peak (highest
/// `offset + size` over buffers that occupy memory).
///
/// Buffers of size zero or with an empty lifetime occupy nothing and never
/// overlap. Fixed offsets are not checked here (a plan made elsewhere may
/// move them); the planner checks its own.
pub fn validate(buffers: &[Buffer], offsets: &[u64]) -> Result<u64, Invalid> {
    if buffers.len() != offsets.len() {
        return Err(Invalid::LengthMismatch { buffers: buffers.len(), offsets: offsets.len() });
    }
    let mut peak = 0u64;
    // (time, is_start, index): ends before starts at the same step.
    let mut events: Vec<(i64, bool, usize)> = Vec::with_capacity(buffers.len() * 2);
    for (i, b) in buffers.iter().enumerate() {
        if !b.occupies() {
            continue;
        }
        let end = offsets[i].checked_add(b.size).ok_or(Invalid::OffsetOverflow(i))?;
        peak = peak.max(end);
        events.push((b.lifetime.start, true, i));
        events.push((b.lifetime.end, false, i));
    }
    events.sort_unstable();
    // Live buffers keyed by (offset, index); they never overlap each other,
    // so an arrival only needs checking against its neighbours.
    let mut live: BTreeMap<(u64, usize), u64> = BTreeMap::new();
    for (t, is_start, i) in events {
        let key = (offsets[i], i);
        if !is_start {
            live.remove(&key);
            continue;
        }
        let end = offsets[i] + buffers[i].size;
        let below = live.range(..key).next_back().map(|(&(_, j), &e)| (j, e));
        if let Some((j, e)) = below {
            if e > offsets[i] {
                return Err(Invalid::Overlap(pair(i, j, t)));
            }
        }
        let above = live.range(key..).next().map(|(&(o, j), _)| (j, o));
        if let Some((j, o)) = above {
            if o < end {
                return Err(Invalid::Overlap(pair(i, j, t)));
            }
        }
        live.insert(key, end);
    }
    Ok(peak)
}

fn pair(a: usize, b: usize, step: i64) -> Overlap {
    Overlap { first: a.min(b), second: a.max(b), step }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::problem::Lifetime;

    fn b(size: u64, s: i64, e: i64) -> Buffer {
        Buffer { size, lifetime: Lifetime::half_open(s, e).unwrap(), fixed_offset: None }
    }

    #[test]
    fn accepts_a_valid_plan_and_reports_peak() {
        let bs = [b(4, 0, 3), b(4, 3, 9), b(4, 0, 9), b(4, 9, 21), b(4, 0, 21)];
        assert_eq!(validate(&bs, &[0, 0, 4, 0, 8]), Ok(12));
    }

    #[test]
    fn names_the_first_overlapping_pair() {
        let bs = [b(4, 0, 3), b(4, 5, 9), b(4, 2, 9), b(8, 6, 7)];
        // 0 and 2 overlap at step 2; 1, 2 and 3 later.
        assert_eq!(
            validate(&bs, &[0, 0, 2, 2]),
            Err(Invalid::Overlap(Overlap { first: 0, second: 2, step: 2 }))
        );
    }

    #[test]
    fn overlap_from_below_and_above_is_found() {
        let bs = [b(8, 0, 2), b(8, 1, 2)];
        assert!(matches!(validate(&bs, &[4, 0]), Err(Invalid::Overlap(_))));
        assert!(matches!(validate(&bs, &[0, 4]), Err(Invalid::Overlap(_))));
        assert_eq!(validate(&bs, &[0, 8]), Ok(16));
    }

    #[test]
    fn zero_size_and_unused_buffers_never_overlap() {
        let bs = [b(8, 0, 4), b(0, 0, 4), b(8, 2, 2)];
        assert_eq!(validate(&bs, &[0, 4, 0]), Ok(8));
    }

    #[test]
    fn touching_lifetimes_and_offsets_do_not_overlap() {
        let bs = [b(8, 0, 2), b(8, 2, 4), b(8, 0, 4)];
        assert_eq!(validate(&bs, &[0, 0, 8]), Ok(16));
    }

    #[test]
    fn length_mismatch_and_overflow() {
        let bs = [b(8, 0, 2)];
        assert!(matches!(validate(&bs, &[]), Err(Invalid::LengthMismatch { .. })));
        assert_eq!(validate(&bs, &[u64::MAX - 3]), Err(Invalid::OffsetOverflow(0)));
    }
}
