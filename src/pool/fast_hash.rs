//! A fast hasher for the pools' hot tables (live blocks by address, free
//! lists by size class). The keys are addresses and sizes the pool itself
//! produced, not attacker-chosen input, so SipHash's flood resistance buys
//! nothing and costs a large part of an allocation's budget.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

const K: u64 = 0x9e37_79b9_7f4a_7c15;

/// Multiply-and-fold hashing of whole words. Device addresses are often
/// multiples of 4 KiB or more: the fold puts the product's high half into
/// the low bits the table indexes by, so such keys still spread out.
#[derive(Copy, Clone, Default)]
pub struct FastHasher(u64);

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u64(&mut self, v: u64) {
        let full = u128::from(self.0 ^ v) * u128::from(K);
        self.0 = (full as u64) ^ ((full >> 64) as u64);
    }

    #[inline]
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }

    #[inline]
    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A `HashMap` with [`FastHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, BuildHasherDefault};

    #[test]
    fn page_aligned_addresses_spread_over_the_low_bits() {
        let build = BuildHasherDefault::<FastHasher>::default();
        let mut buckets = [0u32; 64];
        for i in 0..4096u64 {
            buckets[(build.hash_one(0x7f00_0000_0000u64 + i * 4096) & 63) as usize] += 1;
        }
        // 64 per bucket on average: none empty, none holding a quarter.
        assert!(buckets.iter().all(|&n| n > 0 && n < 1024), "{buckets:?}");
    }

    #[test]
    fn byte_writes_match_word_writes_for_whole_words() {
        let mut a = FastHasher::default();
        a.write(&42u64.to_le_bytes());
        let mut b = FastHasher::default();
        b.write_u64(42);
        assert_eq!(a.finish(), b.finish());
        assert_ne!(a.finish(), FastHasher::default().finish());
    }
}
