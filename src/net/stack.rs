//! The bookkeeping of a cache that lives in the caller's storage (C:
//! `nnm_stack_cache`): a stack whose first items sit in a fixed array inside
//! the caller's struct and whose further items spill to a growable vector.
//!
//! The spill exists exactly while the stack holds more items than the array
//! does: the pop that brings the count back to the array's capacity releases
//! it. So a stack that holds only borrowed descriptors and no more than the
//! inline capacity owns no memory at all, and the caller's struct can simply
//! go out of scope; only one with spilled items needs [`SpillStack::clear`].

use crate::status::{Error, Result, Status};

/// INVALID_ARGUMENT for parts that break the invariant (out of line: the
/// hot paths only pay for the compare).
#[cold]
#[inline(never)]
fn corrupt(count: usize, inline: usize, spilled: usize) -> Error {
    Error::invalid(format!(
        "stack cache is corrupt: count {count} with {inline} inline slots, but {spilled} tensors on the heap"
    ))
}

#[cold]
#[inline(never)]
fn empty() -> Error {
    Error::wrong_state("stack cache is empty: pop without a matching push")
}

/// A stack over `inline` (the caller's fixed slots), `count` (the caller's
/// item count) and `spill` (items past the inline slots).
///
/// Invariant, kept by every method: `spill.len() == count - inline.len()`
/// when `count > inline.len()`, and `spill` has no capacity otherwise.
pub struct SpillStack<'a, T: Copy> {
    inline: &'a mut [T],
    count: &'a mut usize,
    spill: &'a mut Vec<T>,
}

impl<'a, T: Copy> SpillStack<'a, T> {
    /// The stack over these parts, or INVALID_ARGUMENT when they do not
    /// satisfy the invariant (storage that was never initialised, or was
    /// overwritten).
    #[inline]
    pub fn new(inline: &'a mut [T], count: &'a mut usize, spill: &'a mut Vec<T>) -> Result<Self> {
        let spilled = count.saturating_sub(inline.len());
        let held = if spilled == 0 { spill.capacity() } else { spill.len() };
        if held != spilled {
            return Err(corrupt(*count, inline.len(), spill.len()));
        }
        Ok(SpillStack { inline, count, spill })
    }

    /// Number of items.
    #[inline]
    pub fn len(&self) -> usize {
        *self.count
    }

    /// Whether the stack is empty.
    pub fn is_empty(&self) -> bool {
        *self.count == 0
    }

    /// Pushes `item`: into the next inline slot, else onto the spill, which
    /// grows (OUT_OF_MEMORY when it cannot; nothing changes then).
    #[inline]
    pub fn push(&mut self, item: T) -> Result<()> {
        let n = *self.count;
        if let Some(slot) = self.inline.get_mut(n) {
            *slot = item;
        } else {
            self.spill.try_reserve(1).map_err(|_| {
                Error::new(Status::OutOfMemory, format!("no memory to grow a stack cache past {n} tensors"))
            })?;
            self.spill.push(item);
        }
        *self.count = n + 1;
        Ok(())
    }

    /// Pops the top item; WRONG_STATE when the stack is empty. The pop that
    /// empties the spill frees it.
    #[inline]
    pub fn pop(&mut self) -> Result<T> {
        let n = *self.count;
        if n == 0 {
            return Err(empty());
        }
        let item = match self.spill.pop() {
            Some(item) => {
                if self.spill.is_empty() {
                    *self.spill = Vec::new();
                }
                item
            }
            None => self.inline[n - 1],
        };
        *self.count = n - 1;
        Ok(item)
    }

    /// [`SpillStack::pop`] into `out`: the item is copied once, straight to
    /// where the caller wants it; `out` is untouched on failure.
    #[inline]
    pub fn pop_into(&mut self, out: &mut T) -> Result<()> {
        let n = *self.count;
        if n == 0 || n > self.inline.len() {
            // Empty (pop fails before `out` is assigned) or spilled.
            *out = self.pop()?;
            return Ok(());
        }
        *out = self.inline[n - 1];
        *self.count = n - 1;
        Ok(())
    }

    /// The item at `index` (0 is the bottom), if there is one.
    pub fn get(&self, index: usize) -> Option<T> {
        if index >= *self.count {
            return None;
        }
        match index.checked_sub(self.inline.len()) {
            Some(i) => self.spill.get(i).copied(),
            None => Some(self.inline[index]),
        }
    }

    /// Pushes `items` as a run (an item of the caller's size made of
    /// several `T`): all of them or, when the spill cannot grow
    /// (OUT_OF_MEMORY), none.
    pub fn push_run(&mut self, items: &[T]) -> Result<()> {
        let n = *self.count;
        let past_inline = (n + items.len()).saturating_sub(self.inline.len().max(n));
        self.spill
            .try_reserve(past_inline)
            .map_err(|_| Error::new(Status::OutOfMemory, format!("no memory to grow a stack past {n} items")))?;
        for &item in items {
            self.push(item)?;
        }
        Ok(())
    }

    /// Pops the run on top of the stack into `out` (as long as `out`),
    /// first item first; WRONG_STATE, with `out` and the stack untouched,
    /// when fewer items are on the stack.
    pub fn pop_run(&mut self, out: &mut [T]) -> Result<()> {
        if *self.count < out.len() {
            return Err(empty());
        }
        for slot in out.iter_mut().rev() {
            *slot = self.pop()?;
        }
        Ok(())
    }

    /// Copies the run that starts at `index` into `out`; false, with
    /// `out` untouched, when the stack ends before the run does.
    pub fn get_run(&self, index: usize, out: &mut [T]) -> bool {
        if index.checked_add(out.len()).is_none_or(|end| end > *self.count) {
            return false;
        }
        for (i, slot) in out.iter_mut().enumerate() {
            *slot = self.get(index + i).expect("within the count");
        }
        true
    }

    /// Empties the stack and frees the spill.
    pub fn clear(&mut self) {
        *self.count = 0;
        *self.spill = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_items_need_no_heap() {
        let (mut inline, mut count, mut spill) = ([0u32; 4], 0usize, Vec::new());
        let mut s = SpillStack::new(&mut inline, &mut count, &mut spill).unwrap();
        for i in 1..=4 {
            s.push(i).unwrap();
        }
        assert_eq!((s.len(), s.get(0), s.get(3), s.get(4)), (4, Some(1), Some(4), None));
        assert_eq!(s.pop().unwrap(), 4);
        let mut out = 0;
        s.pop_into(&mut out).unwrap();
        assert_eq!(out, 3);
        s.push(3).unwrap();
        assert_eq!((count, spill.capacity()), (3, 0), "no heap while the items fit inline");
        assert_eq!(&inline[..3], &[1, 2, 3]);
    }

    #[test]
    fn past_the_inline_slots_items_spill_and_the_spill_goes_with_them() {
        let (mut inline, mut count, mut spill) = ([0u32; 2], 0usize, Vec::new());
        let mut s = SpillStack::new(&mut inline, &mut count, &mut spill).unwrap();
        for i in 0..100 {
            s.push(i).unwrap();
        }
        assert_eq!((s.len(), s.get(1), s.get(2), s.get(99), s.get(100)), (100, Some(1), Some(2), Some(99), None));
        let mut out = 0;
        for i in (2..100).rev() {
            if i % 2 == 0 {
                assert_eq!(s.pop().unwrap(), i);
            } else {
                s.pop_into(&mut out).unwrap();
                assert_eq!(out, i);
            }
        }
        assert_eq!(s.len(), 2);
        assert_eq!(spill.capacity(), 0, "the pop back to the inline capacity frees the spill");
        let mut s = SpillStack::new(&mut inline, &mut count, &mut spill).unwrap();
        assert_eq!((s.pop().unwrap(), s.pop().unwrap()), (1, 0));
        let e = s.pop().unwrap_err();
        assert_eq!(e.status(), Status::WrongState);
        let mut out = 7;
        assert_eq!(s.pop_into(&mut out).unwrap_err().status(), Status::WrongState);
        assert_eq!(out, 7, "a failed pop_into leaves its target alone");
        assert_eq!(e.message(), "stack cache is empty: pop without a matching push");
        assert!(s.is_empty());
        // Clear frees a spill too.
        (0..10).for_each(|i| s.push(i).unwrap());
        s.clear();
        assert_eq!((count, spill.capacity()), (0, 0));
    }

    #[test]
    fn runs_are_pushed_and_popped_whole() {
        let (mut inline, mut count, mut spill) = ([0u8; 6], 0usize, Vec::new());
        let mut s = SpillStack::new(&mut inline, &mut count, &mut spill).unwrap();
        for item in 0..5u8 {
            s.push_run(&[item, item + 10, item + 20]).unwrap();
        }
        assert_eq!(s.len(), 15);
        let mut run = [0u8; 3];
        assert!(s.get_run(3, &mut run) && run == [1, 11, 21]);
        assert!(!s.get_run(13, &mut run) && run == [1, 11, 21], "a run past the end is not read");
        for item in (0..5u8).rev() {
            s.pop_run(&mut run).unwrap();
            assert_eq!(run, [item, item + 10, item + 20]);
        }
        assert_eq!(s.pop_run(&mut run).unwrap_err().status(), Status::WrongState);
        s.push(1).unwrap();
        assert!(s.pop_run(&mut run).is_err() && s.len() == 1, "a short stack is left as it was");
        assert_eq!(spill.capacity(), 0, "the spill went with the items past the inline slots");
    }

    #[test]
    fn inconsistent_parts_are_refused() {
        let (mut inline, mut spill) = ([0u8; 2], Vec::new());
        let mut count = 3; // one item should be on the spill, which is empty
        let e = SpillStack::new(&mut inline, &mut count, &mut spill).err().unwrap();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert_eq!(e.message(), "stack cache is corrupt: count 3 with 2 inline slots, but 0 tensors on the heap");
        let mut count = 1;
        let mut spill = vec![7u8];
        assert!(SpillStack::new(&mut inline, &mut count, &mut spill).is_err(), "a spill while the items fit inline");
    }
}
