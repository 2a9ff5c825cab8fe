//! Blocks handed out, by address (shared by the caching and page-unit
//! strategies): an open-addressing table with linear
//! probing and Fibonacci hashing (an address is not chosen by an adversary,
//! so SipHash's flooding resistance would only cost time), at most half
//! full, with backward-shift deletion (no tombstones, so lookups of
//! addresses not in the table stay short).

/// An empty slot's key: addresses are never 0.
const EMPTY: usize = 0;

/// Address -> block index.
pub(crate) struct LiveTable {
    slots: Vec<(usize, u32)>,
    len: usize,
    /// `64 - log2(slots.len())`: the hash's top bits index the table.
    shift: u32,
}

impl LiveTable {
    pub(crate) fn new() -> LiveTable {
        LiveTable { slots: vec![(EMPTY, 0); 64], len: 0, shift: 64 - 6 }
    }

    #[inline]
    fn home(&self, addr: usize) -> usize {
        ((addr as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    /// Blocks in the table.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Adds `addr` (not in the table, not 0) -> `value`.
    #[inline]
    pub(crate) fn insert(&mut self, addr: usize, value: u32) {
        debug_assert_ne!(addr, EMPTY);
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        self.place(addr, value);
        self.len += 1;
    }

    #[inline]
    fn place(&mut self, addr: usize, value: u32) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(addr);
        while self.slots[i].0 != EMPTY {
            i = (i + 1) & mask;
        }
        self.slots[i] = (addr, value);
    }

    fn grow(&mut self) {
        let bigger = vec![(EMPTY, 0); self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, bigger);
        self.shift -= 1;
        for (addr, value) in old.into_iter().filter(|s| s.0 != EMPTY) {
            self.place(addr, value);
        }
    }

    /// The value of `addr`, if it is in the table.
    #[inline]
    pub(crate) fn get(&self, addr: usize) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(addr);
        loop {
            let (key, value) = self.slots[i];
            if key == addr {
                return Some(value);
            }
            if key == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Takes `addr` out and returns its value; `None` (and no change) when
    /// it is not in the table.
    #[inline]
    pub(crate) fn remove(&mut self, addr: usize) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(addr);
        loop {
            let (key, value) = self.slots[i];
            if key == addr {
                self.shift_back(i);
                self.len -= 1;
                return Some(value);
            }
            if key == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Fills the hole at `hole` with later entries of its probe run that
    /// may move there, so that every entry stays reachable from its home.
    #[inline]
    fn shift_back(&mut self, mut hole: usize) {
        let mask = self.slots.len() - 1;
        let mut j = (hole + 1) & mask;
        while self.slots[j].0 != EMPTY {
            let home = self.home(self.slots[j].0);
            // The entry at j may move back to the hole when the hole lies
            // on its probe path, between its home and j (cyclically).
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.slots[hole] = self.slots[j];
                hole = j;
            }
            j = (j + 1) & mask;
        }
        self.slots[hole] = (EMPTY, 0);
    }

    /// Forgets every entry.
    pub(crate) fn clear(&mut self) {
        self.slots.iter_mut().for_each(|s| *s = (EMPTY, 0));
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn agrees_with_a_hash_map_under_random_inserts_and_removes() {
        let mut table = LiveTable::new();
        let mut model = HashMap::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for step in 0..200_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Few distinct keys, multiples of 512 like block addresses, so
            // that probe runs form and collide.
            let addr = ((x % 3000) as usize + 1) * 512;
            if let std::collections::hash_map::Entry::Vacant(e) = model.entry(addr) {
                if x % 3 != 0 {
                    e.insert(step);
                    table.insert(addr, step);
                    continue;
                }
            }
            assert_eq!(table.remove(addr), model.remove(&addr), "step {step}, address {addr:#x}");
            assert_eq!(table.len(), model.len());
        }
        for (addr, value) in model {
            assert_eq!(table.remove(addr), Some(value));
        }
        assert_eq!(table.len(), 0);
    }
}
