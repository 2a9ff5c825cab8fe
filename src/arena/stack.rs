//! Where an arena keeps its records: a stack that grows on the heap (the
//! host's arenas), or a fixed number of slots in memory the caller gives
//! (`nnm_arena_init`, the only kind the embedded build has). The arena's
//! code is the same over both; only a full stack of slots can refuse a
//! push, and the arena asks [`Stack::is_full`] before it changes anything.

/// A stack of `Copy` records.
#[derive(Debug)]
pub struct Stack<'a, T> {
    store: Store<'a, T>,
}

#[derive(Debug)]
enum Store<'a, T> {
    #[cfg(feature = "std")]
    Heap(Vec<T>),
    Slots {
        slots: &'a mut [T],
        len: usize,
    },
}

impl<'a, T: Copy> Stack<'a, T> {
    /// An empty stack on the heap with room for `capacity` records before
    /// it first grows.
    #[cfg(feature = "std")]
    pub fn on_heap(capacity: usize) -> Self {
        Stack { store: Store::Heap(Vec::with_capacity(capacity)) }
    }

    /// An empty stack in `slots` (their contents are overwritten as records
    /// are pushed): it holds `slots.len()` records.
    pub fn in_slots(slots: &'a mut [T]) -> Self {
        Stack { store: Store::Slots { slots, len: 0 } }
    }

    /// The records, oldest first.
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        match &self.store {
            #[cfg(feature = "std")]
            Store::Heap(v) => v,
            Store::Slots { slots, len } => slots.get(..*len).unwrap_or_default(),
        }
    }

    /// The records, oldest first, for changing them.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        match &mut self.store {
            #[cfg(feature = "std")]
            Store::Heap(v) => v,
            Store::Slots { slots, len } => slots.get_mut(..*len).unwrap_or_default(),
        }
    }

    /// Records held.
    #[inline]
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    /// Whether it holds no record.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most records it can hold; `None` on the heap (no limit).
    pub fn capacity(&self) -> Option<usize> {
        match &self.store {
            #[cfg(feature = "std")]
            Store::Heap(_) => None,
            Store::Slots { slots, .. } => Some(slots.len()),
        }
    }

    /// Whether a push would be refused.
    #[inline]
    pub fn is_full(&self) -> bool {
        match &self.store {
            #[cfg(feature = "std")]
            Store::Heap(_) => false,
            Store::Slots { slots, len } => *len >= slots.len(),
        }
    }

    /// The newest record.
    #[inline]
    pub fn last(&self) -> Option<&T> {
        self.as_slice().last()
    }

    /// Adds `record` on top; returns false (changing nothing) when full.
    #[inline]
    pub fn push(&mut self, record: T) -> bool {
        match &mut self.store {
            #[cfg(feature = "std")]
            Store::Heap(v) => {
                v.push(record);
                true
            }
            Store::Slots { slots, len } => match slots.get_mut(*len) {
                Some(slot) => {
                    *slot = record;
                    *len += 1;
                    true
                }
                None => false,
            },
        }
    }

    /// Removes and returns the newest record.
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        match &mut self.store {
            #[cfg(feature = "std")]
            Store::Heap(v) => v.pop(),
            Store::Slots { slots, len } => {
                let top = *slots.get(len.checked_sub(1)?)?;
                *len -= 1;
                Some(top)
            }
        }
    }

    /// Removes and returns the newest record if `pred` holds for it.
    #[inline]
    pub fn pop_if(&mut self, pred: impl FnOnce(&T) -> bool) -> Option<T> {
        match &mut self.store {
            #[cfg(feature = "std")]
            Store::Heap(v) => {
                if pred(v.last()?) {
                    v.pop()
                } else {
                    None
                }
            }
            Store::Slots { slots, len } => {
                let below = len.checked_sub(1)?;
                let top = *slots.get(below)?;
                if !pred(&top) {
                    return None;
                }
                *len = below;
                Some(top)
            }
        }
    }

    /// Removes every record.
    pub fn clear(&mut self) {
        match &mut self.store {
            #[cfg(feature = "std")]
            Store::Heap(v) => v.clear(),
            Store::Slots { len, .. } => *len = 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Stack;

    #[test]
    fn slots_refuse_a_push_when_full_and_keep_their_records() {
        let mut slots = [0u32; 2];
        let mut s = Stack::in_slots(&mut slots);
        assert_eq!((s.capacity(), s.is_empty()), (Some(2), true));
        assert!(s.push(7) && s.push(8));
        assert!(s.is_full());
        assert!(!s.push(9), "a full stack refuses");
        assert_eq!(s.as_slice(), &[7, 8]);
        s.as_mut_slice()[0] = 5;
        assert_eq!(s.pop_if(|&t| t == 7), None, "the top is 8");
        assert_eq!(s.pop_if(|&t| t == 8), Some(8));
        assert_eq!((s.pop(), s.pop(), s.pop_if(|_| true)), (Some(5), None, None));
        assert!(s.push(1));
        s.clear();
        assert_eq!((s.len(), s.last()), (0, None));
    }

    #[test]
    fn the_heap_grows_without_limit() {
        let mut s = Stack::on_heap(1);
        for i in 0..100u32 {
            assert!(s.push(i));
        }
        assert_eq!((s.capacity(), s.is_full(), s.len(), s.last()), (None, false, 100, Some(&99)));
        assert_eq!((s.pop_if(|&t| t == 98), s.pop_if(|&t| t == 99), s.len()), (None, Some(99), 99));
        s.clear();
        assert_eq!(s.pop_if(|_| true), None);
    }
}
