//! The bookkeeping of a layer cache: a stack of tensor descriptors that
//! grows without a fixed capacity, plus the buffers nnmem allocated for
//! some of them.
//!
//! A tensor pushed with [`CacheStack::push`] is a copy of the caller's
//! descriptor and owns nothing. One pushed with [`CacheStack::push_owned`]
//! comes with a buffer the cache owns. Popping an owned tensor keeps its
//! buffer alive as a *spare* (so the popped descriptor stays usable), and a
//! later owned push reuses the smallest spare that is large enough instead
//! of allocating: a forward/backward loop allocates only in its first
//! iteration. [`CacheStack::clear`] drops everything, spares included.

use crate::status::{Error, Result};

/// A buffer whose size the stack can compare.
pub trait Capacity {
    /// Its size in bytes.
    fn capacity_bytes(&self) -> u64;
}

/// A cache's stack of `T` (descriptors) and the buffers `B` it owns.
#[derive(Debug)]
pub struct CacheStack<T, B> {
    name: Box<str>,
    items: Vec<T>,
    /// (position in `items`, buffer), increasing positions.
    owned: Vec<(usize, B)>,
    spares: Vec<B>,
}

impl<T, B: Capacity> CacheStack<T, B> {
    /// An empty stack for the cache `name` (used in messages).
    pub fn new(name: &str) -> Self {
        CacheStack { name: name.into(), items: Vec::new(), owned: Vec::new(), spares: Vec::new() }
    }

    /// The cache's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Pushes a descriptor that owns nothing.
    #[inline]
    pub fn push(&mut self, item: T) {
        self.items.push(item);
    }

    /// Whether the next [`CacheStack::push`] must grow the storage (and so
    /// moves the descriptors).
    #[inline]
    pub fn is_full(&self) -> bool {
        self.items.len() == self.items.capacity()
    }

    /// Pushes a descriptor of `buffer`, which the stack now owns.
    pub fn push_owned(&mut self, item: T, buffer: B) {
        self.owned.push((self.items.len(), buffer));
        self.items.push(item);
    }

    /// Pops the top descriptor. An owned buffer becomes a spare: it stays
    /// allocated until reused by [`CacheStack::push_owned`] or dropped by
    /// [`CacheStack::clear`]. Popping an empty stack is an error.
    #[inline]
    pub fn pop(&mut self) -> Result<T> {
        let Some(item) = self.items.pop() else {
            return Err(self.empty());
        };
        self.retire_owned();
        Ok(item)
    }

    /// [`CacheStack::pop`] into `out`: the descriptor is copied once,
    /// straight to where the caller wants it.
    #[inline]
    pub fn pop_into(&mut self, out: &mut T) -> Result<()>
    where
        T: Copy,
    {
        self.pop_with(|item| *out = item)
    }

    /// [`CacheStack::pop`] handing the descriptor to `put` (which writes it
    /// to the C layer's out-parameter, possibly uninitialised memory), so
    /// that it is copied once, straight from its slot; `put` is not called
    /// on an empty stack.
    #[inline]
    pub fn pop_with(&mut self, put: impl FnOnce(T)) -> Result<()>
    where
        T: Copy,
    {
        let Some(&item) = self.items.last() else {
            return Err(self.empty());
        };
        put(item);
        self.items.pop();
        self.retire_owned();
        Ok(())
    }

    #[cold]
    fn empty(&self) -> Error {
        Error::wrong_state(format!("cache \"{}\" is empty: pop without a matching push", self.name))
    }

    /// After a pop: the popped descriptor's owned buffer becomes a spare.
    #[inline]
    fn retire_owned(&mut self) {
        if self.owned.last().is_some_and(|(at, _)| *at == self.items.len()) {
            let (_, buffer) = self.owned.pop().expect("checked");
            self.spares.push(buffer);
        }
    }

    /// Takes the smallest spare of at least `bytes`, if any.
    pub fn take_spare(&mut self, bytes: u64) -> Option<B> {
        let best = self
            .spares
            .iter()
            .enumerate()
            .filter(|(_, b)| b.capacity_bytes() >= bytes)
            .min_by_key(|(_, b)| b.capacity_bytes())
            .map(|(i, _)| i)?;
        Some(self.spares.swap_remove(best))
    }

    /// Drops every descriptor and every buffer, spares included.
    pub fn clear(&mut self) {
        self.items.clear();
        self.owned.clear();
        self.spares.clear();
    }

    /// Number of descriptors on the stack.
    #[inline]
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the stack is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The descriptors, bottom first.
    ///
    /// A `&Vec`, not a slice, so that `items().as_ptr()` is `Vec::as_ptr`:
    /// the C layer publishes that pointer, and C reads through it after
    /// later pushes with room. A pointer taken from a slice may only reach
    /// the `len` items the slice had (Miri's Stacked Borrows reports the read
    /// of a later item as undefined behaviour); `Vec::as_ptr` materialises
    /// no slice, so its pointer reaches the whole allocation.
    #[inline]
    pub fn items(&self) -> &Vec<T> {
        &self.items
    }

    /// Whether the descriptor at `position` has a buffer the stack owns.
    pub fn is_owned(&self, position: usize) -> bool {
        self.owned.binary_search_by_key(&position, |(at, _)| *at).is_ok()
    }

    /// Bytes of every buffer the stack owns: on the stack and spare.
    pub fn owned_bytes(&self) -> u64 {
        self.owned.iter().map(|(_, b)| b).chain(&self.spares).map(Capacity::capacity_bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::Status;

    #[derive(Debug, PartialEq)]
    struct Buf(u64);
    impl Capacity for Buf {
        fn capacity_bytes(&self) -> u64 {
            self.0
        }
    }

    #[test]
    fn push_pop_is_last_in_first_out_and_grows() {
        let mut s: CacheStack<u32, Buf> = CacheStack::new("fc1");
        for i in 0..1000 {
            s.push(i);
        }
        assert_eq!(s.len(), 1000);
        for i in (0..1000).rev() {
            assert_eq!(s.pop().unwrap(), i);
        }
        assert!(s.is_empty());
    }

    #[test]
    fn a_push_with_room_never_moves_the_storage() {
        let mut s: CacheStack<u32, Buf> = CacheStack::new("fc1");
        assert!(s.is_full(), "an empty stack has no storage yet");
        s.push(1);
        let mut full_pushes = 0;
        for i in 0..100 {
            let (full, before) = (s.is_full(), s.items().as_ptr());
            s.push(i);
            // A full push grows (realloc may or may not move the storage),
            // so only the pushes with room are checked.
            full_pushes += usize::from(full);
            assert!(full || s.items().as_ptr() == before, "a push with room never moves the storage");
        }
        assert!(full_pushes >= 1, "100 pushes fill the storage at least once");
        s.pop().unwrap();
        assert!(!s.is_full(), "a pop leaves room");
    }

    #[test]
    fn popping_an_empty_cache_is_an_error() {
        let mut s: CacheStack<u32, Buf> = CacheStack::new("relu2");
        let e = s.pop().unwrap_err();
        assert_eq!(e.status(), Status::WrongState);
        assert_eq!(e.message(), "cache \"relu2\" is empty: pop without a matching push");
        s.push(1);
        assert_eq!(s.pop().unwrap(), 1);
        assert!(s.pop().is_err());
        let mut out = 0;
        assert_eq!(s.pop_into(&mut out).unwrap_err().status(), Status::WrongState);
        s.push(7);
        s.pop_into(&mut out).unwrap();
        assert_eq!((out, s.len()), (7, 0));
        assert_eq!(s.name(), "relu2");
    }

    #[test]
    fn owned_buffers_become_spares_and_are_reused_best_fit() {
        let mut s: CacheStack<&str, Buf> = CacheStack::new("c");
        s.push("view");
        s.push_owned("mask", Buf(100));
        s.push_owned("big", Buf(400));
        assert!(!s.is_owned(0) && s.is_owned(1) && s.is_owned(2));
        assert_eq!(s.owned_bytes(), 500);
        assert_eq!(s.pop().unwrap(), "big");
        assert_eq!(s.pop().unwrap(), "mask");
        assert_eq!(s.pop().unwrap(), "view");
        // Still allocated: the popped descriptors stay usable.
        assert_eq!(s.owned_bytes(), 500);
        assert_eq!(s.take_spare(90), Some(Buf(100)));
        assert_eq!(s.take_spare(500), None);
        assert_eq!(s.take_spare(101), Some(Buf(400)));
        assert_eq!(s.owned_bytes(), 0);
    }

    #[test]
    fn a_view_above_an_owned_tensor_does_not_release_it() {
        let mut s: CacheStack<u8, Buf> = CacheStack::new("c");
        s.push_owned(1, Buf(8));
        s.push(2);
        assert_eq!(s.pop().unwrap(), 2);
        assert!(s.take_spare(1).is_none(), "the owned tensor is still on the stack");
        assert_eq!(s.pop().unwrap(), 1);
        assert!(s.take_spare(1).is_some());
    }

    #[test]
    fn clear_drops_everything() {
        let mut s: CacheStack<u8, Buf> = CacheStack::new("c");
        s.push_owned(1, Buf(8));
        s.push_owned(2, Buf(8));
        s.pop().unwrap();
        s.clear();
        assert_eq!((s.len(), s.owned_bytes()), (0, 0));
        assert!(s.take_spare(1).is_none());
    }
}
