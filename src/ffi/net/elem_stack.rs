//! Stacks of the caller's own element type (`nnm_elem_stack_*`): a legacy
//! layer cache such as awnn's `lcache_t`, whose first elements live in a
//! fixed array of the caller's type inside the caller's struct
//! (`tensor_t all_tensors[10]`, read directly by legacy code), keeps that
//! array as it is; the elements past it spill to the heap instead of
//! overflowing it. Each element is a run of `elem_size` bytes on the same
//! spill stack as `nnm_stack_cache`'s tensors, so the rule is one: the pop
//! that brings the stack back within the array frees the heap, and a stack
//! within its array holds none.

use std::collections::HashMap;
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::ptr;
use std::sync::Mutex;

use crate::ffi::args::{non_null, out_param, slice_in, slice_out};
use crate::ffi::error::guard;
use crate::net::SpillStack;
use crate::status::{Error, Result, Status};

/// The `tag` of an `nnm_elem_stack` set up by `nnm_elem_stack_init`
/// ("nnm_elst"); a zero-filled stack has tag 0, and
/// is as valid.
pub const NNM_ELEM_STACK_TAG: u64 = 0x6e6e_6d5f_656c_7374;

/// The state of a stack whose first elements live in the caller's array
/// (`slots`, passed to every call with the number of slots and the size of
/// an element): how many elements are on it, and the heap that holds those
/// past the array. Valid when zero-filled (`= {0}`, `calloc`, static
/// storage), as when initialised with `nnm_elem_stack_init`. Read `count`; never
/// write a field. Every call on one stack passes the same array, slot
/// count and element size.
///
/// Memory: a push past the array puts the element on the heap, which the
/// pop that brings `count` back to the slot count frees, as does
/// `nnm_elem_stack_clear`; so a stack within its array holds no heap and
/// needs no call before it goes out of scope. While it holds heap it must
/// not be copied or moved: the calls refuse a copy (WRONG_STATE), as they
/// do for `nnm_stack_cache`.
#[repr(C)]
#[derive(Debug)]
pub struct nnm_elem_stack {
    /// Elements on the stack.
    pub count: usize,
    /// Private: NNM_ELEM_STACK_TAG once initialised, or 0 (zero-filled).
    pub tag: u64,
    /// Private: the elements past the array, NULL while there are none.
    pub spill: *mut c_void,
    /// Private: room at `spill`, in bytes.
    pub spill_capacity: usize,
    /// Private: the stack's own address while `spill` is set.
    pub spill_owner: *const nnm_elem_stack,
}

impl Default for nnm_elem_stack {
    fn default() -> Self {
        nnm_elem_stack {
            count: 0,
            tag: NNM_ELEM_STACK_TAG,
            spill: ptr::null_mut(),
            spill_capacity: 0,
            spill_owner: ptr::null(),
        }
    }
}

/// The heap of each stack that holds one: its address -> (heap, capacity
/// in bytes), as nnmem made it (see `stack_cache`'s record, which this
/// mirrors for byte elements).
static LIVE: Mutex<Option<HashMap<usize, Record>>> = Mutex::new(None);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Heap(*mut u8);

/// A stack's heap as nnmem made it: where, its capacity, and the bytes of
/// elements on it (so a call with another element size or slot count,
/// which would read bytes never written, is refused).
type Record = (Heap, usize, usize);

// SAFETY: only compared under the lock; the heap is used by the one thread
// that uses its stack at a time.
unsafe impl Send for Heap {}

fn live<R>(f: impl FnOnce(&mut HashMap<usize, Record>) -> R) -> R {
    let mut guard = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    let result = f(guard.get_or_insert_with(HashMap::new));
    if guard.as_ref().is_some_and(HashMap::is_empty) {
        *guard = None;
    }
    result
}

/// The caller's array and element size, checked.
struct Slots {
    base: *mut u8,
    bytes: usize,
    elem_size: usize,
}

fn slots_arg(slots: *mut c_void, slot_count: usize, elem_size: usize) -> Result<Slots> {
    if elem_size == 0 {
        return Err(Error::invalid("elem_size is 0: an element has at least 1 byte"));
    }
    let bytes = slot_count.checked_mul(elem_size).filter(|&b| b <= isize::MAX as usize).ok_or_else(|| {
        Error::overflow(format!("{slot_count} slots of {elem_size} B are larger than the address space"))
    })?;
    if bytes > 0 {
        non_null(slots, "slots")?;
    }
    Ok(Slots { base: slots.cast(), bytes, elem_size })
}

/// Runs `f` on the byte stack of `stack` over the caller's `slots`.
///
/// # Safety
/// `stack` NULL or valid for reading and writing an `nnm_elem_stack`;
/// `slots.base` valid for reading and writing `slots.bytes` bytes, not
/// overlapping the stack; neither used by anything else meanwhile.
#[inline(never)]
unsafe fn with_elem_stack(
    stack: *mut nnm_elem_stack,
    slots: &Slots,
    f: &mut dyn FnMut(&mut SpillStack<'_, u8>) -> Result<()>,
) -> Result<()> {
    non_null(stack, "stack")?;
    if !stack.is_aligned() {
        return Err(Error::invalid(format!("stack ({stack:p}) is misaligned for an nnm_elem_stack")));
    }
    // SAFETY: the caller's promise.
    let s = unsafe { &mut *stack };
    if s.tag != NNM_ELEM_STACK_TAG && s.tag != 0 {
        return Err(Error::invalid(
            "stack is not a valid nnm_elem_stack (zero-filled or nnm_elem_stack_init): its tag \
             is garbage",
        ));
    }
    let mut bytes = s.count.checked_mul(slots.elem_size).ok_or_else(|| {
        Error::invalid(format!("stack is corrupt: count {} of {} B elements", s.count, slots.elem_size))
    })?;
    let spilled = bytes.saturating_sub(slots.bytes);
    let had_heap = !s.spill.is_null();
    let mut heap = if had_heap {
        if !ptr::eq(s.spill_owner, stack) {
            return Err(Error::wrong_state(format!(
                "stack holds {} elements, some on the heap, and was copied or moved since: use the original",
                s.count
            )));
        }
        let recorded = live(|l| l.get(&(stack as usize)).copied());
        if recorded != Some((Heap(s.spill.cast()), s.spill_capacity, spilled)) || spilled == 0 {
            return Err(Error::wrong_state(format!(
                "stack says it holds {} elements past its slots on the heap, but that heap is not its own (an old \
                 copy written back, or another element size): initialise it again",
                spilled / slots.elem_size
            )));
        }
        // SAFETY: nnmem's record says this is the live allocation of
        // `spill_capacity` bytes a Vec<u8> made for the stack at this
        // address, its first `spilled` bytes written.
        ManuallyDrop::new(unsafe { Vec::from_raw_parts(s.spill.cast::<u8>(), spilled, s.spill_capacity) })
    } else {
        ManuallyDrop::new(Vec::new())
    };
    let inline: &mut [u8] = if slots.bytes == 0 {
        &mut []
    } else {
        // SAFETY: the caller promises the array is readable and writable.
        unsafe { std::slice::from_raw_parts_mut(slots.base, slots.bytes) }
    };
    let result = SpillStack::new(inline, &mut bytes, &mut heap).and_then(|mut st| f(&mut st));
    s.count = bytes / slots.elem_size;
    if heap.capacity() == 0 {
        if had_heap {
            s.spill = ptr::null_mut();
            s.spill_capacity = 0;
            s.spill_owner = ptr::null();
            live(|l| l.remove(&(stack as usize)));
        }
    } else {
        s.spill = heap.as_mut_ptr().cast();
        s.spill_capacity = heap.capacity();
        s.spill_owner = stack;
        let now = (Heap(heap.as_mut_ptr()), heap.capacity(), heap.len());
        live(|l| l.insert(stack as usize, now));
    }
    result
}

/// Makes `*stack` an empty stack; the
/// storage may be uninitialised. A heap the stack at this address still
/// holds is freed first, so nothing leaks.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `stack` must be NULL or valid for writing an `nnm_elem_stack`, and no
/// other call may use it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_elem_stack_init(stack: *mut nnm_elem_stack) -> Status {
    guard(|| {
        // SAFETY: the caller promises `stack` is NULL or writable.
        let out = unsafe { out_param(stack, "stack") }?;
        if let Some((heap, capacity, _)) = live(|l| l.remove(&(stack as usize))) {
            // SAFETY: nnmem's record: the live allocation of `capacity`
            // bytes a Vec<u8> made for the stack at this address.
            drop(unsafe { Vec::from_raw_parts(heap.0, 0, capacity) });
        }
        out.write(nnm_elem_stack::default());
        Ok(())
    })
}

/// Pushes a copy of the `elem_size` bytes at `elem`: into the next of the
/// `slot_count` slots of `slots` (the caller's array of its element type),
/// or past them onto the heap.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a valid stack; `elem_size`
/// 0); OVERFLOW (`slot_count` times `elem_size`); WRONG_STATE (a copy of a
/// stack holding heap); OUT_OF_MEMORY. Nothing changes on failure.
///
/// # Safety
/// `stack` must be NULL or valid for reading and writing an
/// `nnm_elem_stack`; `slots` valid for reading and writing `slot_count`
/// elements of `elem_size` bytes; `elem` NULL or valid for reading one
/// element (it may be one of the slots). No other call may use them
/// meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_elem_stack_push(
    stack: *mut nnm_elem_stack,
    slots: *mut c_void,
    slot_count: usize,
    elem_size: usize,
    elem: *const c_void,
) -> Status {
    guard(|| {
        let slots = slots_arg(slots, slot_count, elem_size)?;
        // Copied first: `elem` may be one of the slots.
        // SAFETY: the caller promises `elem` is NULL or readable.
        let item = unsafe { slice_in(elem.cast::<u8>(), elem_size, "elem") }?.to_vec();
        // SAFETY: the caller's promises.
        unsafe { with_elem_stack(stack, &slots, &mut |st| st.push_run(&item)) }
    })
}

/// Pops the element on top of the stack into `out_elem` (`elem_size`
/// bytes); the pop that brings `count` back to `slot_count` frees the heap.
///
/// Errors: as `nnm_elem_stack_push`, and WRONG_STATE when the stack is
/// empty (a pop without a matching push). `out_elem` is written only on
/// success.
///
/// # Safety
/// As `nnm_elem_stack_push`, with `out_elem` NULL or valid for writing one
/// element.
#[no_mangle]
pub unsafe extern "C" fn nnm_elem_stack_pop(
    stack: *mut nnm_elem_stack,
    slots: *mut c_void,
    slot_count: usize,
    elem_size: usize,
    out_elem: *mut c_void,
) -> Status {
    // SAFETY: the caller's promises are `read_one`'s.
    guard(|| unsafe { read_one(stack, slots, slot_count, elem_size, out_elem, &mut |st, item| st.pop_run(item)) })
}

/// Reads one element off a stack into the buffer it is given.
type Reader<'a> = dyn FnMut(&mut SpillStack<'_, u8>, &mut [u8]) -> Result<()> + 'a;

/// One element read off the stack by `f` into a buffer of `elem_size`
/// bytes, then copied to `out_elem`, which is written only on success.
///
/// # Safety
/// As `nnm_elem_stack_pop`.
unsafe fn read_one(
    stack: *mut nnm_elem_stack,
    slots: *mut c_void,
    slot_count: usize,
    elem_size: usize,
    out_elem: *mut c_void,
    f: &mut Reader<'_>,
) -> Result<()> {
    let slots = slots_arg(slots, slot_count, elem_size)?;
    non_null(out_elem, "out_elem")?;
    let mut item = vec![0u8; elem_size];
    // SAFETY: the caller's promises.
    unsafe { with_elem_stack(stack, &slots, &mut |st| f(st, &mut item)) }?;
    // SAFETY: the caller promises `out_elem` writable for one element.
    unsafe { slice_out(out_elem.cast::<u8>(), elem_size, "out_elem") }?.copy_from_slice(&item);
    Ok(())
}

/// Copies the element at `index` (0 is the bottom) to `out_elem`.
///
/// Errors: as `nnm_elem_stack_push`, and INVALID_ARGUMENT for an `index`
/// not below `count`.
///
/// # Safety
/// As `nnm_elem_stack_pop`.
#[no_mangle]
pub unsafe extern "C" fn nnm_elem_stack_get(
    stack: *mut nnm_elem_stack,
    slots: *mut c_void,
    slot_count: usize,
    elem_size: usize,
    index: usize,
    out_elem: *mut c_void,
) -> Status {
    let mut at = |st: &mut SpillStack<'_, u8>, item: &mut [u8]| match index.checked_mul(elem_size) {
        Some(start) if st.get_run(start, item) => Ok(()),
        _ => Err(Error::invalid(format!("index {index}: the stack holds {} elements", st.len() / elem_size))),
    };
    // SAFETY: the caller's promises are `read_one`'s.
    guard(|| unsafe { read_one(stack, slots, slot_count, elem_size, out_elem, &mut at) })
}

/// Empties the stack and frees its heap, if any: needed only for a stack
/// that holds more elements than its slots; harmless on any valid one.
/// What the elements refer to is the caller's to free first.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a valid stack);
/// WRONG_STATE (a copy of a stack holding heap).
///
/// # Safety
/// `stack` must be NULL or valid for reading and writing an
/// `nnm_elem_stack`, and no other call may use it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_elem_stack_clear(stack: *mut nnm_elem_stack) -> Status {
    guard(|| {
        non_null(stack, "stack")?;
        // SAFETY: the caller's promise.
        let s = unsafe { &mut *stack };
        if s.tag != NNM_ELEM_STACK_TAG && s.tag != 0 {
            return Err(Error::invalid("stack is not a valid nnm_elem_stack: its tag is garbage"));
        }
        if !s.spill.is_null() {
            let not_its_own = || {
                Error::wrong_state(
                    "stack holds heap that is not its own (a copy, a moved stack, or an old copy written back): use \
                     the original, or initialise it again",
                )
            };
            if !ptr::eq(s.spill_owner, stack) {
                return Err(not_its_own());
            }
            let mine = (Heap(s.spill.cast()), s.spill_capacity);
            let recorded = live(|l| {
                let found = l.get(&(stack as usize)).is_some_and(|r| (r.0, r.1) == mine);
                if found {
                    l.remove(&(stack as usize));
                }
                found
            });
            if !recorded {
                return Err(not_its_own());
            }
            // SAFETY: nnmem's record, removed just now: the live allocation
            // of `spill_capacity` bytes a Vec<u8> made for this stack.
            drop(unsafe { Vec::from_raw_parts(mine.0 .0, 0, mine.1) });
        }
        *s = nnm_elem_stack::default();
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    struct Legacy {
        data: u64,
        dims: [u32; 4],
        kind: u8,
    }

    fn t(i: u64) -> Legacy {
        Legacy { data: i, dims: [i as u32; 4], kind: (i % 3) as u8 }
    }

    const SIZE: usize = std::mem::size_of::<Legacy>();

    #[test]
    fn the_callers_array_holds_the_bottom_elements_and_the_heap_the_rest() {
        let mut slots = [Legacy::default(); 10];
        // SAFETY: all-zero is a valid (empty) stack.
        let mut s: nnm_elem_stack = unsafe { std::mem::zeroed() };
        let base = slots.as_mut_ptr().cast::<c_void>();
        // SAFETY: `s` and `slots` are live locals of the right sizes.
        unsafe {
            for i in 0..25 {
                assert_eq!(nnm_elem_stack_push(&mut s, base, 10, SIZE, ptr::from_ref(&t(i)).cast()), Status::Ok);
            }
            assert_eq!(s.count, 25);
            assert_eq!(slots[9], t(9), "the legacy array is the bottom of the stack, read directly");
            assert!(!s.spill.is_null());
            let mut out = Legacy::default();
            assert_eq!(nnm_elem_stack_get(&mut s, base, 10, SIZE, 17, ptr::from_mut(&mut out).cast()), Status::Ok);
            assert_eq!(out, t(17));
            assert_eq!(
                nnm_elem_stack_get(&mut s, base, 10, SIZE, 25, ptr::from_mut(&mut out).cast()),
                Status::InvalidArgument
            );
            // A copy holding heap is refused.
            let mut copy = nnm_elem_stack { ..std::ptr::read(&s) };
            assert_eq!(
                nnm_elem_stack_pop(&mut copy, base, 10, SIZE, ptr::from_mut(&mut out).cast()),
                Status::WrongState
            );
            for i in (0..25).rev() {
                assert_eq!(nnm_elem_stack_pop(&mut s, base, 10, SIZE, ptr::from_mut(&mut out).cast()), Status::Ok);
                assert_eq!(out, t(i));
                if i == 10 {
                    assert!(s.spill.is_null(), "back within the array: no heap");
                }
            }
            out = t(99);
            assert_eq!(nnm_elem_stack_pop(&mut s, base, 10, SIZE, ptr::from_mut(&mut out).cast()), Status::WrongState);
            assert_eq!(out, t(99), "a failed pop leaves its target alone");
            for i in 0..12 {
                assert_eq!(nnm_elem_stack_push(&mut s, base, 10, SIZE, ptr::from_ref(&t(i)).cast()), Status::Ok);
            }
            // Another element size sees a heap it did not write: refused.
            assert_eq!(
                nnm_elem_stack_get(&mut s, base, 10, SIZE / 2, 19, ptr::from_mut(&mut out).cast()),
                Status::WrongState
            );
            assert_eq!(nnm_elem_stack_clear(&mut s), Status::Ok);
            assert_eq!((s.count, s.spill.is_null()), (0, true));
            assert_eq!(nnm_elem_stack_push(&mut s, base, 10, 0, ptr::from_ref(&t(1)).cast()), Status::InvalidArgument);
            assert_eq!(
                nnm_elem_stack_push(&mut s, base, usize::MAX, SIZE, ptr::from_ref(&t(1)).cast()),
                Status::Overflow
            );
            assert_eq!(nnm_elem_stack_push(&mut s, base, 10, SIZE, ptr::null()), Status::NullArgument);
            s.tag = 7;
            assert_eq!(
                nnm_elem_stack_push(&mut s, base, 10, SIZE, ptr::from_ref(&t(1)).cast()),
                Status::InvalidArgument
            );
            assert_eq!(nnm_elem_stack_init(&mut s), Status::Ok);
            assert_eq!(s.tag, NNM_ELEM_STACK_TAG);
            // init frees a heap left at this address.
            for i in 0..11 {
                assert_eq!(nnm_elem_stack_push(&mut s, base, 10, SIZE, ptr::from_ref(&t(i)).cast()), Status::Ok);
            }
            assert_eq!(nnm_elem_stack_init(&mut s), Status::Ok);
            assert!(live(|l| l.get(&(ptr::from_ref(&s) as usize)).is_none()));
        }
    }
}
