//! Sorting through one instantiation per element type.
//!
//! Every `sort_by`/`sort_by_key` call with its own closure makes the
//! compiler emit a whole copy of the standard sort (driftsort or ipnsort,
//! several KiB each). The orderings that run once per plan or per region
//! table, not in a search's inner loop, go through these functions instead:
//! the comparator is a `dyn` call, so each element type has one copy. The
//! results are the standard library's exactly: the same algorithm asked the
//! same questions.

use std::cmp::Ordering;

/// `v.sort_by(compare)`: stable.
pub(crate) fn sort_by<T>(v: &mut [T], mut compare: impl FnMut(&T, &T) -> Ordering) {
    stable(v, &mut compare);
}

/// `v.sort_by_key(key)`: stable.
pub(crate) fn sort_by_key<T, K: Ord>(v: &mut [T], mut key: impl FnMut(&T) -> K) {
    stable(v, &mut |a, b| key(a).cmp(&key(b)));
}

/// `v.sort_unstable_by(compare)`.
pub(crate) fn sort_unstable_by<T>(v: &mut [T], mut compare: impl FnMut(&T, &T) -> Ordering) {
    unstable(v, &mut compare);
}

/// `v.sort_unstable_by_key(key)`.
pub(crate) fn sort_unstable_by_key<T, K: Ord>(v: &mut [T], mut key: impl FnMut(&T) -> K) {
    unstable(v, &mut |a, b| key(a).cmp(&key(b)));
}

/// The one stable sort of `T`s.
#[inline(never)]
fn stable<T>(v: &mut [T], compare: &mut dyn FnMut(&T, &T) -> Ordering) {
    v.sort_by(|a, b| compare(a, b));
}

/// The one unstable sort of `T`s.
#[inline(never)]
fn unstable<T>(v: &mut [T], compare: &mut dyn FnMut(&T, &T) -> Ordering) {
    v.sort_unstable_by(|a, b| compare(a, b));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_sort_keeps_equal_elements_in_order_like_the_standard_one() {
        let items: Vec<(u32, usize)> = (0..200).map(|i| ((i * 7919 % 13) as u32, i)).collect();
        let mut ours = items.clone();
        sort_by_key(&mut ours, |x| x.0);
        let mut standard = items;
        standard.sort_by_key(|x| x.0);
        assert_eq!(ours, standard);
        assert!(ours.windows(2).all(|w| w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 < w[1].1)));
    }

    #[test]
    fn unstable_sort_gives_the_standard_permutation() {
        // Equal keys carry different payloads: the same algorithm asked the
        // same questions leaves them in the same places.
        let items: Vec<(u32, usize)> = (0..500).map(|i| ((i * 104_729 % 17) as u32, i)).collect();
        let mut ours = items.clone();
        sort_unstable_by(&mut ours, |a, b| b.0.cmp(&a.0));
        let mut standard = items;
        standard.sort_unstable_by_key(|x| std::cmp::Reverse(x.0));
        assert_eq!(ours, standard);
    }
}
