//! Size-segregated free lists with a bitmap of the non-empty ones (TLSF's
//! layout, searched for the best fit): finding the smallest free block that
//! fits is a few bit scans, never a tree walk.
//!
//! Sizes are counted in units of the strategy's `min_block`. Below
//! [`EXACT`] units every size has a bin of its own, so any block of the
//! first non-empty bin at or above a request is a best fit. From [`EXACT`]
//! units on, each power of two is cut into 64 bins (widths under 1.6 % of
//! the size); such a bin is scanned for its smallest block that fits.

use super::block::{Block, NIL};

/// Sizes (in units) below this have a bin each: 2 MiB with 512 B units,
/// which covers every small segment of the default options.
const EXACT: usize = 4096;
/// log2 of [`EXACT`].
const EXACT_LOG2: u32 = 12;
/// log2 of the number of bins each power of two from [`EXACT`] on is cut into.
const SPLIT_LOG2: u32 = 6;
/// Bins in all: the exact ones, then 64 per power of two up to 2^63 units.
pub(super) const BINS: usize = EXACT + ((64 - EXACT_LOG2 as usize) << SPLIT_LOG2);
/// Words of the bitmap of non-empty bins.
const WORDS: usize = BINS.div_ceil(64);
/// Words of the bitmap of non-zero bitmap words.
const SUMMARY: usize = WORDS.div_ceil(64);

/// The bin of a block of `units` units (`units >= 1`); below [`BINS`],
/// which fits in a `u16`.
#[inline]
pub(super) fn bin_of(units: u64) -> usize {
    if units < EXACT as u64 {
        units as usize
    } else {
        let e = 63 - units.leading_zeros();
        let sub = (units >> (e - SPLIT_LOG2)) as usize & ((1 << SPLIT_LOG2) - 1);
        EXACT + (((e - EXACT_LOG2) as usize) << SPLIT_LOG2) + sub
    }
}

/// The free blocks of one pool kind (small or large) usable on one stream
/// tag. The lists are linked through the blocks' `link_prev`/`link_next`.
pub(super) struct Bins {
    /// `log2(min_block)`: a size in bytes over this is a size in units.
    shift: u32,
    /// The first block of each bin (`NIL` when empty); allocated at the
    /// first insertion, so a tag that never holds a free block costs no
    /// heap memory.
    heads: Vec<u32>,
    words: [u64; WORDS],
    summary: [u64; SUMMARY],
}

impl Bins {
    pub(super) fn new(shift: u32) -> Bins {
        Bins { shift, heads: Vec::new(), words: [0; WORDS], summary: [0; SUMMARY] }
    }

    #[inline]
    fn bin(&self, size: u64) -> usize {
        bin_of(size >> self.shift)
    }

    /// Whether the bins hold no block.
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.summary.iter().all(|&w| w == 0)
    }

    /// Adds free block `i`.
    #[inline]
    pub(super) fn insert(&mut self, blocks: &mut [Block], i: u32) {
        if self.heads.is_empty() {
            self.heads = vec![NIL; BINS];
        }
        let bin = self.bin(blocks[i as usize].size);
        let head = self.heads[bin];
        blocks[i as usize].link_prev = NIL;
        blocks[i as usize].link_next = head;
        if head != NIL {
            blocks[head as usize].link_prev = i;
        }
        self.heads[bin] = i;
        self.words[bin / 64] |= 1 << (bin % 64);
        self.summary[bin / 4096] |= 1 << (bin / 64 % 64);
    }

    /// Takes free block `i` (which these bins hold) out.
    #[inline]
    pub(super) fn remove(&mut self, blocks: &mut [Block], i: u32) {
        let Block { link_prev: prev, link_next: next, size, .. } = blocks[i as usize];
        if next != NIL {
            blocks[next as usize].link_prev = prev;
        }
        if prev != NIL {
            blocks[prev as usize].link_next = next;
            return;
        }
        let bin = self.bin(size);
        self.heads[bin] = next;
        if next == NIL {
            self.words[bin / 64] &= !(1 << (bin % 64));
            if self.words[bin / 64] == 0 {
                self.summary[bin / 4096] &= !(1 << (bin / 64 % 64));
            }
        }
    }

    /// The first non-empty bin at or after `from`.
    #[inline]
    fn next_bin(&self, from: usize) -> Option<usize> {
        if from >= BINS {
            return None;
        }
        let w = from / 64;
        let bits = self.words[w] & (u64::MAX << (from % 64));
        if bits != 0 {
            return Some(w * 64 + bits.trailing_zeros() as usize);
        }
        let from_word = w + 1;
        for s in from_word / 64..SUMMARY {
            let mask = if s == from_word / 64 { u64::MAX << (from_word % 64) } else { u64::MAX };
            let m = self.summary[s] & mask;
            if m != 0 {
                let word = s * 64 + m.trailing_zeros() as usize;
                return Some(word * 64 + self.words[word].trailing_zeros() as usize);
            }
        }
        None
    }

    /// The smallest block of at least `size` bytes for which `fits` holds
    /// (among equal sizes, the most recently freed). `fits_all` says that
    /// `fits` holds for every block, so that an exact bin's first block is
    /// taken without looking further.
    #[inline]
    pub(super) fn best_fit(
        &self,
        blocks: &[Block],
        size: u64,
        fits_all: bool,
        fits: impl Fn(&Block) -> bool,
    ) -> Option<u32> {
        if self.is_empty() {
            return None;
        }
        let mut bin = self.bin(size);
        loop {
            bin = self.next_bin(bin)?;
            let exact = bin < EXACT;
            if exact && fits_all {
                return Some(self.heads[bin]);
            }
            let mut best = NIL;
            let mut i = self.heads[bin];
            while i != NIL {
                let b = &blocks[i as usize];
                if b.size >= size && (best == NIL || b.size < blocks[best as usize].size) && fits(b) {
                    best = i;
                    if exact || b.size == size {
                        break;
                    }
                }
                i = b.link_next;
            }
            if best != NIL {
                return Some(best);
            }
            bin += 1;
        }
    }

    /// The size of the largest block held (0 when none).
    pub(super) fn largest(&self, blocks: &[Block]) -> u64 {
        let Some(s) = (0..SUMMARY).rev().find(|&s| self.summary[s] != 0) else {
            return 0;
        };
        let word = s * 64 + 63 - self.summary[s].leading_zeros() as usize;
        let bin = word * 64 + 63 - self.words[word].leading_zeros() as usize;
        let mut largest = 0;
        let mut i = self.heads[bin];
        while i != NIL {
            largest = largest.max(blocks[i as usize].size);
            i = blocks[i as usize].link_next;
        }
        largest
    }

    /// Forgets every block (their records are dropped by the caller).
    pub(super) fn clear(&mut self) {
        self.heads.clear();
        self.words = [0; WORDS];
        self.summary = [0; SUMMARY];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_grow_with_the_size_and_are_exact_below_the_threshold() {
        let mut last = 0;
        for units in 1..(1u64 << 20) {
            let bin = bin_of(units);
            assert!(bin == last || bin == last + 1, "{units} units: bin {bin} after {last}");
            if units < EXACT as u64 {
                assert_eq!(bin, units as usize);
            }
            last = bin;
        }
        assert_eq!(bin_of(u64::MAX), BINS - 1);
        assert!(BINS <= usize::from(u16::MAX));
        assert_eq!(bin_of(EXACT as u64), EXACT);
        assert_eq!(bin_of(EXACT as u64 + 63), EXACT);
        assert_eq!(bin_of(EXACT as u64 + 64), EXACT + 1);
    }
}
