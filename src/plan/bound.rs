//! The lower bound on any plan's peak: the largest total size of buffers live
//! at one step. A sweep over start and end events (`events`), O(n log n)
//! time, O(n) memory.

use super::events::time_ordered;
use super::problem::Buffer;

/// The largest total size live at one step, and the first step where it is
/// reached (`None` when nothing occupies memory).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LowerBound {
    /// Bytes.
    pub bytes: u64,
    /// A step at which `bytes` are live.
    pub step: Option<i64>,
}

/// Computes the lower bound of `buffers`. Sizes must not sum past `u64::MAX`
/// (guaranteed by [`super::Problem`]).
pub fn lower_bound(buffers: &[Buffer]) -> LowerBound {
    let mut live = 0u64;
    let mut best = LowerBound { bytes: 0, step: None };
    for e in time_ordered(buffers) {
        let size = buffers[e.index].size;
        if e.is_start {
            live += size;
            if live > best.bytes {
                best = LowerBound { bytes: live, step: Some(e.step) };
            }
        } else {
            live -= size;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::problem::Lifetime;

    fn b(size: u64, s: i64, e: i64) -> Buffer {
        Buffer { size, lifetime: Lifetime::half_open(s, e).unwrap(), fixed_offset: None }
    }

    #[test]
    fn half_open_ends_do_not_count_together() {
        let lb = lower_bound(&[b(4, 0, 2), b(8, 2, 3), b(2, 1, 3)]);
        assert_eq!(lb, LowerBound { bytes: 10, step: Some(2) });
    }

    #[test]
    fn empty_and_zero_buffers_are_ignored() {
        assert_eq!(lower_bound(&[]).bytes, 0);
        assert_eq!(lower_bound(&[b(0, 0, 5), b(100, 3, 3)]), LowerBound { bytes: 0, step: None });
    }

    #[test]
    fn minimalloc_example_bound() {
        // ../shared/bench/minimalloc/examples/input.12.csv: optimum 12.
        let bs = [b(4, 0, 3), b(4, 3, 9), b(4, 0, 9), b(4, 9, 21), b(4, 0, 21)];
        assert_eq!(lower_bound(&bs).bytes, 12);
    }
}
