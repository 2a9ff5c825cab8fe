//! Tracking of a legacy C net's memory (awnn-style): four lists hung off a
//! net, each entry named, with its tensors.
//!
//! - **params**: learnable parameters, data and diff;
//! - **outputs**: each layer's output, data and diff, sized for the net's
//!   maximum batch;
//! - **inputs**: each layer's input, a *view* of the output before it (a
//!   shallow copy that owns nothing) or a *placeholder* for the net input;
//! - **caches**: per layer, a stack of tensors that forward pushes and
//!   backward pops ([`CacheStack`]).
//!
//! Outside a net, a cache can also live in the caller's own storage (a
//! legacy layer's cache kept by value on the stack): [`SpillStack`].
//!
//! This module is the safe part: names and their O(1) index (the lists keep
//! insertion order), shapes and byte sizes, the ownership rule, the cache
//! stacks and the byte report. The C-visible entries, which embed the
//! kernel-style `struct list_head` nodes C code walks, and the linking of
//! those nodes live in `ffi::net`, the only place touching raw pointers.
//!
//! Ownership rule: nnmem frees a buffer only if it allocated it (an owned
//! tensor) or adopted it (a caller buffer handed over with its deallocator),
//! exactly once, when the net is freed (or, for cache buffers, when the
//! cache is cleared). Views, placeholders and borrowed caller memory are
//! never freed.

pub mod cache;
pub mod linked;
pub mod names;
pub mod stack;
pub mod tensor;

pub use cache::{CacheStack, Capacity};
pub use names::{NameIndex, NAME_MAX};
pub use stack::SpillStack;
pub use tensor::{Dtype, MemKind, Ownership, Shape, MAX_DIMS};

use crate::status::{Error, Result};

/// The four lists of a net.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Learnable parameters.
    Param = 0,
    /// Layer outputs.
    Output = 1,
    /// Layer inputs.
    Input = 2,
    /// Layer caches.
    Cache = 3,
}

impl Kind {
    /// The word used in messages.
    pub const fn what(self) -> &'static str {
        match self {
            Kind::Param => "param",
            Kind::Output => "output",
            Kind::Input => "input",
            Kind::Cache => "cache",
        }
    }
}

/// Tensors and bytes of one entry, or of one list.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Bytes {
    /// Entries counted.
    pub entries: u64,
    /// Tensors (a param, output or input has two: data and diff).
    pub tensors: u64,
    /// Bytes of buffers nnmem allocated or adopted and will free.
    pub owned: u64,
    /// Bytes of tensors that only refer to memory: views, borrowed caller
    /// memory, placeholders (at the size the caller will bind).
    pub referenced: u64,
}

impl Bytes {
    /// Counts one tensor of `bytes` with `ownership`.
    pub fn add_tensor(&mut self, bytes: u64, ownership: Ownership) {
        self.tensors += 1;
        match ownership {
            Ownership::Owned => self.owned = self.owned.saturating_add(bytes),
            Ownership::View | Ownership::Borrowed => self.referenced = self.referenced.saturating_add(bytes),
        }
    }

    /// Adds another count to this one.
    pub fn add(&mut self, other: Bytes) {
        self.entries += other.entries;
        self.tensors += other.tensors;
        self.owned = self.owned.saturating_add(other.owned);
        self.referenced = self.referenced.saturating_add(other.referenced);
    }
}

/// What a net holds, per list, at its maximum batch size.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// The net's maximum batch size: outputs and input placeholders are
    /// sized for it.
    pub max_batch: u32,
    /// Params.
    pub params: Bytes,
    /// Outputs.
    pub outputs: Bytes,
    /// Inputs.
    pub inputs: Bytes,
    /// Caches: the tensors on their stacks now; owned bytes include spare
    /// buffers kept for reuse.
    pub caches: Bytes,
}

impl Report {
    /// Bytes nnmem allocated for the net, all lists together.
    pub fn total_owned(&self) -> u64 {
        [self.params, self.outputs, self.inputs, self.caches].iter().fold(0u64, |t, b| t.saturating_add(b.owned))
    }

    /// Bytes referred to without being owned, all lists together.
    pub fn total_referenced(&self) -> u64 {
        [self.params, self.outputs, self.inputs, self.caches].iter().fold(0u64, |t, b| t.saturating_add(b.referenced))
    }
}

/// The safe state of a net: its batch size, the names of each list (each
/// with a value `V`: the C layer keeps the entry's address there) and the
/// bytes of the entries whose size never changes (params, outputs, inputs).
#[derive(Debug)]
pub struct Net<V: Copy = ()> {
    max_batch: u32,
    names: [NameIndex<V>; 4],
    fixed: [Bytes; 3],
}

impl<V: Copy> Net<V> {
    /// A net whose batch-sized tensors have `max_batch` rows; 0 leaves the
    /// batch size to the first tensor attached with its batch dimension
    /// ([`Net::take_batch`]).
    pub fn new(max_batch: u32) -> Net<V> {
        Net { max_batch, names: Default::default(), fixed: [Bytes::default(); 3] }
    }

    /// The maximum batch size; 0 while it is not decided yet.
    pub fn max_batch(&self) -> u32 {
        self.max_batch
    }

    /// Checks the batch dimension `batch` of a tensor attached with its
    /// whole shape: it decides a batch size not decided yet (returned as
    /// `Some`, for the caller to commit with [`Net::set_batch`] once the
    /// attach succeeds), and must equal one already decided.
    pub fn take_batch(&self, batch: u32) -> Result<Option<u32>> {
        match self.max_batch {
            0 if batch == 0 => Err(Error::invalid("batch dimension 0: a net's batch size is at least 1")),
            0 => Ok(Some(batch)),
            n if n == batch => Ok(None),
            n => Err(Error::invalid(format!(
                "batch dimension {batch} differs from the net's batch size {n}, which the first batched tensor decided"
            ))),
        }
    }

    /// Commits the batch size that [`Net::take_batch`] decided.
    pub fn set_batch(&mut self, batch: u32) {
        debug_assert!(self.max_batch == 0 || self.max_batch == batch);
        self.max_batch = batch;
    }

    /// Checks that `name` is valid and free in `kind`'s list, without
    /// adding it (so that allocation can fail before anything changes).
    pub fn check_new(&self, kind: Kind, name: &[u8]) -> Result<()> {
        self.names[kind as usize].check_new(kind.what(), name)
    }

    /// Adds an entry named `name` with `value` to `kind`'s list, with the
    /// bytes of its tensors (ignored for caches, whose bytes change);
    /// returns its position in insertion order.
    pub fn add(&mut self, kind: Kind, name: &[u8], bytes: Bytes, value: V) -> Result<usize> {
        let position = self.names[kind as usize].insert(kind.what(), name, value)?;
        if kind != Kind::Cache {
            let mut entry = bytes;
            entry.entries = 1;
            self.fixed[kind as usize].add(entry);
        }
        Ok(position)
    }

    /// The value of the entry named `name`, if any. O(1).
    #[inline]
    pub fn get(&self, kind: Kind, name: &[u8]) -> Option<V> {
        self.names[kind as usize].get(name)
    }

    /// The position of the entry named `name`, or NOT_FOUND naming it.
    pub fn find(&self, kind: Kind, name: &[u8]) -> Result<usize> {
        self.names[kind as usize].find(kind.what(), name)
    }

    /// Removes the entry named `name` from `kind`'s list, with the bytes
    /// it was added with, and returns its value (None when there is none:
    /// nothing changes then).
    pub fn remove(&mut self, kind: Kind, name: &[u8], bytes: Bytes) -> Option<V> {
        let value = self.names[kind as usize].remove(name)?;
        if kind != Kind::Cache {
            let fixed = &mut self.fixed[kind as usize];
            fixed.entries -= 1;
            fixed.tensors -= bytes.tensors;
            fixed.owned = fixed.owned.saturating_sub(bytes.owned);
            fixed.referenced = fixed.referenced.saturating_sub(bytes.referenced);
        }
        Some(value)
    }

    /// Entries in `kind`'s list.
    pub fn count(&self, kind: Kind) -> usize {
        self.names[kind as usize].len()
    }

    /// `[max_batch, sample...]`; WRONG_STATE while the batch size is not
    /// decided.
    pub fn batch_shape(&self, dtype: Dtype, sample: &[u32]) -> Result<Shape> {
        if self.max_batch == 0 {
            return Err(undecided());
        }
        Shape::batched(dtype, self.max_batch, sample)
    }

    /// Checks a batch size against the maximum.
    pub fn check_batch(&self, batch: u32) -> Result<()> {
        if self.max_batch == 0 {
            return Err(undecided());
        }
        if batch == 0 || batch > self.max_batch {
            return Err(Error::invalid(format!(
                "batch {batch} is outside 1..={}, the net's maximum batch",
                self.max_batch
            )));
        }
        Ok(())
    }

    /// The report, with the caches' current bytes (one item per cache).
    pub fn report(&self, caches: impl IntoIterator<Item = Bytes>) -> Report {
        let mut cache_total = Bytes::default();
        for c in caches {
            cache_total.add(Bytes { entries: 1, ..c });
        }
        Report {
            max_batch: self.max_batch,
            params: self.fixed[Kind::Param as usize],
            outputs: self.fixed[Kind::Output as usize],
            inputs: self.fixed[Kind::Input as usize],
            caches: cache_total,
        }
    }
}

#[cold]
fn undecided() -> Error {
    Error::wrong_state(
        "the net's batch size is not decided yet (made with max_batch 0): attach an output or input with its whole \
         shape, batch first, to decide it",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::Status;

    fn two(bytes: u64, ownership: Ownership) -> Bytes {
        let mut b = Bytes::default();
        b.add_tensor(bytes, ownership);
        b.add_tensor(bytes, ownership);
        b
    }

    #[test]
    fn a_batch_size_of_0_is_decided_by_the_first_batched_tensor() {
        let mut n: Net = Net::new(0);
        assert_eq!(n.max_batch(), 0);
        assert_eq!(n.batch_shape(Dtype::F32, &[3]).unwrap_err().status(), Status::WrongState);
        assert!(n.check_batch(1).unwrap_err().message().contains("not decided yet"));
        assert_eq!(n.take_batch(0).unwrap_err().status(), Status::InvalidArgument);
        assert_eq!(n.take_batch(5).unwrap(), Some(5));
        assert_eq!(n.max_batch(), 0, "take_batch decides, set_batch commits");
        n.set_batch(5);
        assert_eq!(n.take_batch(5).unwrap(), None);
        let e = n.take_batch(4).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.message().contains("batch dimension 4 differs from the net's batch size 5"), "{}", e.message());
        assert_eq!(n.batch_shape(Dtype::F32, &[3]).unwrap().dims(), &[5, 3]);
    }

    #[test]
    fn removed_entries_leave_their_list_and_the_report() {
        let mut n: Net<u8> = Net::new(2);
        n.add(Kind::Param, b"W", two(40, Ownership::Owned), 1).unwrap();
        n.add(Kind::Param, b"b", two(8, Ownership::View), 2).unwrap();
        n.add(Kind::Cache, b"c", Bytes::default(), 3).unwrap();
        assert_eq!(n.remove(Kind::Param, b"W", two(40, Ownership::Owned)), Some(1));
        assert_eq!(n.remove(Kind::Param, b"W", two(40, Ownership::Owned)), None);
        assert_eq!(n.remove(Kind::Cache, b"c", Bytes::default()), Some(3));
        let r = n.report([]);
        assert_eq!(r.params, Bytes { entries: 1, tensors: 2, owned: 0, referenced: 16 });
        assert_eq!((n.count(Kind::Param), n.count(Kind::Cache), n.get(Kind::Param, b"b")), (1, 0, Some(2)));
        n.add(Kind::Param, b"W", two(4, Ownership::Owned), 4).unwrap();
        assert_eq!(n.get(Kind::Param, b"W"), Some(4), "a removed name is free again");
    }

    #[test]
    fn max_batch_bounds_batches() {
        let n: Net = Net::new(32);
        assert_eq!(n.max_batch(), 32);
        assert!(n.check_batch(32).is_ok() && n.check_batch(1).is_ok());
        assert!(n.check_batch(33).unwrap_err().message().contains("1..=32"));
        assert!(n.check_batch(0).is_err());
    }

    #[test]
    fn each_list_has_its_own_names() {
        let mut n = Net::new(4);
        assert_eq!(n.add(Kind::Param, b"fc1.W", two(40, Ownership::Owned), 'W').unwrap(), 0);
        assert_eq!(n.add(Kind::Output, b"fc1.W", two(8, Ownership::Owned), 'o').unwrap(), 0);
        assert_eq!(n.add(Kind::Param, b"fc1.b", two(4, Ownership::Owned), 'b').unwrap(), 1);
        assert_eq!(n.check_new(Kind::Param, b"fc1.b").unwrap_err().status(), Status::AlreadyExists);
        assert!(n.check_new(Kind::Cache, b"fc1.b").is_ok());
        assert_eq!(n.get(Kind::Param, b"fc1.b"), Some('b'));
        assert_eq!(n.get(Kind::Output, b"fc1.W"), Some('o'));
        assert_eq!(n.get(Kind::Input, b"fc1.b"), None);
        assert_eq!(n.find(Kind::Param, b"fc1.b").unwrap(), 1);
        assert_eq!(n.find(Kind::Cache, b"x").unwrap_err().message(), "no cache is named \"x\"");
        assert_eq!((n.count(Kind::Param), n.count(Kind::Output), n.count(Kind::Cache)), (2, 1, 0));
    }

    #[test]
    fn report_counts_owned_and_referenced_per_list() {
        let mut n: Net = Net::new(16);
        let out = n.batch_shape(Dtype::F32, &[10]).unwrap();
        assert_eq!(out.dims(), &[16, 10]);
        n.add(Kind::Param, b"W", two(400, Ownership::Owned), ()).unwrap();
        n.add(Kind::Output, b"fc", two(out.bytes(), Ownership::Owned), ()).unwrap();
        n.add(Kind::Input, b"relu", two(out.bytes(), Ownership::View), ()).unwrap();
        n.add(Kind::Input, b"x", two(16 * 4 * 3, Ownership::Borrowed), ()).unwrap();
        n.add(Kind::Cache, b"fc", Bytes::default(), ()).unwrap();
        let cache = Bytes { entries: 0, tensors: 3, owned: 64, referenced: 640 };
        let r = n.report([cache]);
        assert_eq!(r.max_batch, 16);
        assert_eq!(r.params, Bytes { entries: 1, tensors: 2, owned: 800, referenced: 0 });
        assert_eq!(r.outputs, Bytes { entries: 1, tensors: 2, owned: 1280, referenced: 0 });
        assert_eq!(r.inputs, Bytes { entries: 2, tensors: 4, owned: 0, referenced: 1280 + 384 });
        assert_eq!(r.caches, Bytes { entries: 1, tensors: 3, owned: 64, referenced: 640 });
        assert_eq!(r.total_owned(), 800 + 1280 + 64);
        assert_eq!(r.total_referenced(), 1280 + 384 + 640);
    }

    #[test]
    fn failed_additions_change_nothing() {
        let mut n: Net = Net::new(1);
        n.add(Kind::Param, b"W", two(4, Ownership::Owned), ()).unwrap();
        assert!(n.add(Kind::Param, b"W", two(4, Ownership::Owned), ()).is_err());
        assert!(n.add(Kind::Param, &[b'a'; NAME_MAX + 1], two(4, Ownership::Owned), ()).is_err());
        let r = n.report([]);
        assert_eq!(r.params.entries, 1);
        assert_eq!(r.params.owned, 8);
    }
}
