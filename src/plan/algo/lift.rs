//! Lifting a buffer over the fixed buffers in its way: shared by
//! `floor_first` and the `exact` search, below both so that neither imports
//! the other.

/// The lowest offset at or above `from`, aligned, where `size` bytes clear
/// every `(bottom, top)` obstacle (fixed buffers, sorted by bottom).
pub fn lift_over(obstacles: &[(u64, u64)], from: u64, size: u64, alignment: u64) -> u64 {
    let mut offset = from;
    for &(bottom, top) in obstacles {
        if offset.saturating_add(size) <= bottom {
            break;
        }
        offset = offset.max(top);
    }
    // Fixed offsets and sizes are aligned, so only `from` can be off.
    // The alignment is a power of two.
    offset.checked_next_multiple_of(alignment).unwrap_or(!(alignment - 1))
}

#[cfg(test)]
mod tests {
    use super::lift_over;

    #[test]
    fn lifts_over_obstacles_in_the_way_and_aligns() {
        assert_eq!(lift_over(&[(2, 5), (8, 10)], 0, 4, 1), 10, "[0,4) hits [2,5); [5,9) hits [8,10)");
        assert_eq!(lift_over(&[(2, 5), (8, 10)], 0, 2, 1), 0, "fits below the first");
        assert_eq!(lift_over(&[(2, 5), (8, 10)], 5, 3, 1), 5, "fits between them");
        assert_eq!(lift_over(&[], 3, 4, 4), 4);
        assert_eq!(lift_over(&[], u64::MAX - 1, 1, 8), u64::MAX - 7, "the highest aligned offset, not a wrap to 0");
    }
}
