//! Entry names: validation, and the index that finds an entry by name in
//! O(1) while its list keeps insertion order.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

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
/// multiply-rotate over 8-byte words). Names come from the program itself,
/// not from an adversary, so hash flooding is not a concern; SipHash would
/// cost more than the rest of a lookup.
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

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Names of one list, each with its position in insertion order.
#[derive(Default, Debug)]
pub struct NameIndex {
    map: HashMap<Box<[u8]>, usize, BuildHasherDefault<NameHasher>>,
}

impl NameIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of names.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there is no name.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Checks that `name` is valid and not yet taken, without adding it.
    pub fn check_new(&self, what: &str, name: &[u8]) -> Result<()> {
        validate_name(what, name)?;
        if self.map.contains_key(name) {
            return Err(Error::new(
                Status::AlreadyExists,
                format!("{what} \"{}\" already exists", String::from_utf8_lossy(name)),
            ));
        }
        Ok(())
    }

    /// Adds `name` at the next position and returns it. Reserves first, so
    /// a failure (out of memory) leaves the index unchanged.
    pub fn insert(&mut self, what: &str, name: &[u8]) -> Result<usize> {
        self.check_new(what, name)?;
        self.map
            .try_reserve(1)
            .map_err(|_| Error::new(Status::OutOfMemory, format!("no memory to index {what} \"{}\"", String::from_utf8_lossy(name))))?;
        let position = self.map.len();
        self.map.insert(name.into(), position);
        Ok(position)
    }

    /// The position of `name`, if present.
    #[inline]
    pub fn get(&self, name: &[u8]) -> Option<usize> {
        self.map.get(name).copied()
    }

    /// The position of `name`, or NOT_FOUND naming it.
    pub fn find(&self, what: &str, name: &[u8]) -> Result<usize> {
        self.get(name).ok_or_else(|| not_found(what, name))
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
    use std::hash::Hash;

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
        assert_eq!(ix.insert("param", b"w1").unwrap(), 0);
        assert_eq!(ix.insert("param", b"b1").unwrap(), 1);
        let dup = ix.insert("param", b"w1").unwrap_err();
        assert_eq!(dup.status(), Status::AlreadyExists);
        assert_eq!(dup.message(), "param \"w1\" already exists");
        assert_eq!(ix.len(), 2);
        assert_eq!(ix.get(b"b1"), Some(1));
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
            assert_eq!(ix.insert("param", format!("layer{i}.W").as_bytes()).unwrap(), i);
        }
        for i in (0..10_000).step_by(7) {
            assert_eq!(ix.get(format!("layer{i}.W").as_bytes()), Some(i));
        }
        assert_eq!(ix.get(b"layer10000.W"), None);
    }

    #[test]
    fn hasher_distinguishes_lengths_and_tails() {
        let h = |b: &[u8]| {
            let mut s = NameHasher::default();
            b.hash(&mut s);
            s.finish()
        };
        assert_ne!(h(b"a"), h(b"a\0"));
        assert_ne!(h(b"abcdefgh1"), h(b"abcdefgh2"));
        assert_eq!(h(b"fc1.W"), h(b"fc1.W"));
    }
}
