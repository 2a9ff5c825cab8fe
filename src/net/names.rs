//! Entry names: validation, and the index that finds an entry by name in
//! O(1) while its list keeps insertion order.

use std::hash::Hasher;

use crate::status::{Error, Result, Status};

/// Longest name, in bytes, NUL excluded (C: `NNM_NAME_MAX`). Longer names
/// are refused, never truncated.
pub const NAME_MAX: usize = 127;

/// Checks a name: 1 to `NAME_MAX` bytes. `what` names the list for the
/// message ("param", "cache", ...).
pub fn validate_name(what: &str, name: &[u8]) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid(format!("{what} name is empty")));
    }
    if name.len() > NAME_MAX {
        return Err(Error::invalid(format!(
            "{what} name \"{}...\" is {} bytes long; names have at most {NAME_MAX} (never truncated)",
            String::from_utf8_lossy(&name[..32]),
            name.len()
        )));
    }
    Ok(())
}

/// A fast, non-cryptographic hash of short byte strings (FxHash's
/// multiply-rotate over 8-byte words, then an avalanche). Names come from
/// the program itself, not from an adversary, so hash flooding is not a
/// concern; SipHash would cost more than the rest of a lookup.
#[derive(Default, Clone, Copy)]
pub struct NameHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl NameHasher {
    #[inline]
    fn mix(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for NameHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.mix(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.mix(u64::from_le_bytes(last));
        }
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.mix(n as u64);
    }

    /// The multiply-rotate state has good high bits only, and hash tables
    /// index by the low bits: a final avalanche (MurmurHash3's fmix64)
    /// spreads every input bit over the whole word. Without it, names that
    /// differ in their fifth to eighth bytes ("layer123.W", "layer124.W")
    /// share their low bits and collide.
    #[inline]
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

/// Bytes of a name kept in its table slot, next to its hash (with an
/// 8-byte value, a slot is 32 bytes: two per cache line).
const HEAD: usize = 11;
/// A slot's `position` when it is empty.
const EMPTY: u32 = u32::MAX;

/// One slot of the open-addressing table. Names of up to `HEAD` bytes are
/// compared without leaving the slot, and the value is in it too.
#[derive(Copy, Clone, Debug)]
struct Slot<V> {
    hash: u64,
    value: Option<V>,
    position: u32,
    len: u8,
    head: [u8; HEAD],
}

impl<V> Slot<V> {
    const EMPTY: Slot<V> = Slot { hash: 0, value: None, position: EMPTY, len: 0, head: [0; HEAD] };
}

/// Names of one list, each with its position in insertion order and a
/// value `V` (the C layer keeps the entry's address there, so a lookup
/// needs no second table). A linear probing table at most half full, of
/// slots that hold the hash, the value and the first bytes of the name: a
/// lookup touches one slot (rarely two) and, for names longer than 11
/// bytes, the stored name.
#[derive(Debug)]
pub struct NameIndex<V: Copy = ()> {
    slots: Vec<Slot<V>>,
    /// Names by position.
    names: Vec<Box<[u8]>>,
}

impl<V: Copy> Default for NameIndex<V> {
    fn default() -> Self {
        NameIndex { slots: vec![Slot::EMPTY; 16], names: Vec::new() }
    }
}

#[inline]
fn hash(name: &[u8]) -> u64 {
    let mut h = NameHasher::default();
    h.write(name);
    h.write_usize(name.len());
    h.finish()
}

fn out_of_memory(what: &str, name: &[u8]) -> Error {
    Error::new(Status::OutOfMemory, format!("no memory to index {what} \"{}\"", String::from_utf8_lossy(name)))
}

impl<V: Copy> NameIndex<V> {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of names.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether there is no name.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The name at `position`.
    pub fn name(&self, position: usize) -> Option<&[u8]> {
        self.names.get(position).map(|n| &n[..])
    }

    /// Checks that `name` is valid and not yet taken, without adding it.
    pub fn check_new(&self, what: &str, name: &[u8]) -> Result<()> {
        validate_name(what, name)?;
        if self.position(name).is_some() {
            return Err(Error::new(
                Status::AlreadyExists,
                format!("{what} \"{}\" already exists", String::from_utf8_lossy(name)),
            ));
        }
        Ok(())
    }

    /// Adds `name` with `value` at the next position and returns the
    /// position. Memory is reserved first, so a failure (out of memory)
    /// leaves the index unchanged.
    pub fn insert(&mut self, what: &str, name: &[u8], value: V) -> Result<usize> {
        self.check_new(what, name)?;
        self.names.try_reserve(1).map_err(|_| out_of_memory(what, name))?;
        if (self.names.len() + 1) * 2 > self.slots.len() {
            let mut bigger = Vec::new();
            bigger.try_reserve_exact(self.slots.len() * 2).map_err(|_| out_of_memory(what, name))?;
            bigger.resize(self.slots.len() * 2, Slot::EMPTY);
            let old = std::mem::replace(&mut self.slots, bigger);
            for slot in old.into_iter().filter(|s| s.position != EMPTY) {
                self.place(slot);
            }
        }
        let position = self.names.len();
        let mut head = [0u8; HEAD];
        let n = name.len().min(HEAD);
        head[..n].copy_from_slice(&name[..n]);
        self.place(Slot {
            hash: hash(name),
            value: Some(value),
            position: position as u32,
            len: name.len() as u8,
            head,
        });
        self.names.push(name.into());
        Ok(position)
    }

    /// Puts `slot` in the first free place from its home (there is one:
    /// the table is at most half full).
    fn place(&mut self, slot: Slot<V>) {
        let mask = self.slots.len() - 1;
        let mut i = slot.hash as usize & mask;
        while self.slots[i].position != EMPTY {
            i = (i + 1) & mask;
        }
        self.slots[i] = slot;
    }

    /// The position of `name`, if present. O(1).
    #[inline]
    pub fn position(&self, name: &[u8]) -> Option<usize> {
        self.slot(name).map(|s| s.position as usize)
    }

    /// The value of `name`, if present. O(1).
    #[inline]
    pub fn get(&self, name: &[u8]) -> Option<V> {
        self.slot(name).and_then(|s| s.value)
    }

    #[inline]
    fn slot(&self, name: &[u8]) -> Option<&Slot<V>> {
        if name.len() > NAME_MAX {
            return None;
        }
        let h = hash(name);
        let mask = self.slots.len() - 1;
        let mut i = h as usize & mask;
        loop {
            let slot = &self.slots[i];
            if slot.position == EMPTY {
                return None;
            }
            if slot.hash == h && usize::from(slot.len) == name.len() {
                let n = name.len().min(HEAD);
                if slot.head[..n] == name[..n]
                    && (name.len() <= HEAD || self.names[slot.position as usize][HEAD..] == name[HEAD..])
                {
                    return Some(slot);
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// The position of `name`, or NOT_FOUND naming it.
    pub fn find(&self, what: &str, name: &[u8]) -> Result<usize> {
        self.position(name).ok_or_else(|| not_found(what, name))
    }

    /// The table index of the slot holding `name`, if any.
    fn slot_index(&self, name: &[u8]) -> Option<usize> {
        let target = self.slot(name)?;
        let mask = self.slots.len() - 1;
        let mut i = target.hash as usize & mask;
        while self.slots[i].position != target.position {
            i = (i + 1) & mask;
        }
        Some(i)
    }

    /// Removes `name` and returns its value, if it was there. The last
    /// name takes the removed one's position (so positions stay `0..len`,
    /// and are insertion order only until a removal), and the slots after
    /// the freed one move back towards their homes (backward-shift
    /// deletion), so that lookups never stop early at a hole.
    pub fn remove(&mut self, name: &[u8]) -> Option<V> {
        let mut hole = self.slot_index(name)?;
        let removed = self.slots[hole];
        let mask = self.slots.len() - 1;
        let mut next = (hole + 1) & mask;
        while self.slots[next].position != EMPTY {
            let home = self.slots[next].hash as usize & mask;
            // The slot at `next` may fill the hole unless its home lies
            // cyclically within (hole, next]: then it would sit before its home.
            let stays = if hole <= next { hole < home && home <= next } else { hole < home || home <= next };
            if !stays {
                self.slots[hole] = self.slots[next];
                hole = next;
            }
            next = (next + 1) & mask;
        }
        self.slots[hole] = Slot::EMPTY;
        let position = removed.position as usize;
        let last = self.names.len() - 1;
        if position != last {
            let moved = self.slot_index(&self.names[last].clone()).expect("every stored name has a slot");
            self.slots[moved].position = position as u32;
        }
        self.names.swap_remove(position);
        removed.value
    }
}

/// The NOT_FOUND error of a lookup of `name` among `what`s.
pub fn not_found(what: &str, name: &[u8]) -> Error {
    if name.len() > NAME_MAX {
        return Error::new(
            Status::NotFound,
            format!("no {what} has a name of {} bytes (names have at most {NAME_MAX})", name.len()),
        );
    }
    Error::new(Status::NotFound, format!("no {what} is named \"{}\"", String::from_utf8_lossy(name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_not_truncated() {
        assert!(validate_name("param", b"fc1.W").is_ok());
        assert!(validate_name("param", &[b'a'; NAME_MAX]).is_ok());
        let e = validate_name("param", &[b'a'; NAME_MAX + 1]).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.message().contains("128 bytes long") && e.message().contains("never truncated"), "{}", e.message());
        assert!(validate_name("cache", b"").unwrap_err().message().contains("cache name is empty"));
    }

    #[test]
    fn index_keeps_positions_and_refuses_duplicates() {
        let mut ix = NameIndex::new();
        assert!(ix.is_empty());
        assert_eq!(ix.insert("param", b"w1", 'w').unwrap(), 0);
        assert_eq!(ix.insert("param", b"b1", 'b').unwrap(), 1);
        assert_eq!((ix.get(b"w1"), ix.get(b"b1"), ix.get(b"x")), (Some('w'), Some('b'), None));
        let dup = ix.insert("param", b"w1", 'x').unwrap_err();
        assert_eq!(dup.status(), Status::AlreadyExists);
        assert_eq!(dup.message(), "param \"w1\" already exists");
        assert_eq!(ix.len(), 2);
        assert_eq!(ix.position(b"b1"), Some(1));
        assert_eq!(ix.find("param", b"w1").unwrap(), 0);
        let missing = ix.find("param", b"w9").unwrap_err();
        assert_eq!((missing.status(), missing.message()), (Status::NotFound, "no param is named \"w9\""));
        let long = ix.find("param", &[b'x'; 300]).unwrap_err();
        assert!(long.message().contains("300 bytes"), "{}", long.message());
    }

    #[test]
    fn many_names_all_found() {
        let mut ix = NameIndex::new();
        for i in 0..10_000 {
            assert_eq!(ix.insert("param", format!("layer{i}.W").as_bytes(), i * 3).unwrap(), i);
        }
        for i in 0..10_000 {
            assert_eq!(ix.position(format!("layer{i}.W").as_bytes()), Some(i));
            assert_eq!(ix.get(format!("layer{i}.W").as_bytes()), Some(i * 3));
        }
        assert_eq!(ix.position(b"layer10000.W"), None);
        assert_eq!(ix.name(42), Some(&b"layer42.W"[..]));
    }

    #[test]
    fn long_names_compare_past_the_slot() {
        let mut ix: NameIndex = NameIndex::new();
        let a = "encoder.layer.11.attention.self.query.weight";
        let b = "encoder.layer.11.attention.self.query.bias";
        let c = "encoder.layer.11.attention.self.querx.weight"; // same length as a, differs late
        assert_eq!(ix.insert("param", a.as_bytes(), ()).unwrap(), 0);
        assert_eq!(ix.insert("param", b.as_bytes(), ()).unwrap(), 1);
        assert_eq!(ix.position(a.as_bytes()), Some(0));
        assert_eq!(ix.position(b.as_bytes()), Some(1));
        assert_eq!(ix.position(c.as_bytes()), None);
        assert_eq!(ix.position(&a.as_bytes()[..HEAD]), None, "a prefix is another name");
        let longest = [b'z'; NAME_MAX];
        assert_eq!(ix.insert("param", &longest, ()).unwrap(), 2);
        assert_eq!(ix.position(&longest), Some(2));
        assert_eq!(ix.position(&[b'z'; NAME_MAX + 1]), None);
    }

    #[test]
    fn removed_names_are_gone_and_the_rest_still_found() {
        let mut ix = NameIndex::new();
        let names: Vec<String> = (0..2_000).map(|i| format!("layer{i}.weight.of.a.long.name")).collect();
        for (i, n) in names.iter().enumerate() {
            ix.insert("param", n.as_bytes(), i).unwrap();
        }
        // Every third name goes, in an order unlike insertion's.
        for n in names.iter().step_by(3).rev() {
            assert!(ix.remove(n.as_bytes()).is_some());
            assert_eq!(ix.remove(n.as_bytes()), None, "removed once");
        }
        assert_eq!(ix.len(), 2_000 - 667);
        for (i, n) in names.iter().enumerate() {
            let got = ix.get(n.as_bytes());
            if i % 3 == 0 {
                assert_eq!(got, None, "{n}");
            } else {
                assert_eq!(got, Some(i), "{n}");
                let at = ix.position(n.as_bytes()).unwrap();
                assert!(at < ix.len());
                assert_eq!(ix.name(at), Some(n.as_bytes()));
            }
        }
        // A removed name may be added again.
        assert_eq!(ix.insert("param", names[0].as_bytes(), 7).unwrap(), ix.len() - 1);
        assert_eq!(ix.get(names[0].as_bytes()), Some(7));
        assert_eq!(ix.remove(b"never added"), None);
    }

    #[test]
    fn hasher_distinguishes_lengths_and_tails() {
        let h = hash;
        assert_ne!(h(b"a"), h(b"a\0"));
        // The low bits (a table's bucket) differ for names that differ only
        // in the high bytes of a word: 10,000 layer names spread over
        // nearly all 16,384 low-14-bit buckets.
        let buckets: std::collections::HashSet<u64> =
            (0..10_000).map(|i| h(format!("layer{i}.W").as_bytes()) & 0x3fff).collect();
        assert!(buckets.len() > 7_000, "{} distinct buckets", buckets.len());
        assert_ne!(h(b"abcdefgh1"), h(b"abcdefgh2"));
        assert_eq!(h(b"fc1.W"), h(b"fc1.W"));
    }
}
