//! Layer caches in caller storage (`nnm_stack_cache_*`): a stack of tensor
//! descriptors whose first tensors live inside the caller's struct, in or
//! outside a net; only a stack past them holds heap, which nnmem records by
//! the cache's address.

use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::ptr;
use std::sync::Mutex;

use super::args::{one, one_mut, write_after};
use super::{copy_ownership, nnm_tensor};
use crate::ffi::args::{non_null, out_param};
use crate::ffi::error::guard;
use crate::net::SpillStack;
use crate::status::{Error, Result, Status};

/// Tensors an `nnm_stack_cache` holds in its own storage, without heap:
/// the 10 of awnn's fixed-size layer cache.
pub const NNM_STACK_CACHE_INLINE: u32 = 10;

/// The `tag` of an `nnm_stack_cache` set up by `NNM_STACK_CACHE_INIT` or
/// `nnm_stack_cache_init` ("nnm_stkc"); a zero-filled cache has tag 0, and
/// is as valid.
pub const NNM_STACK_CACHE_TAG: u64 = 0x6e6e_6d5f_7374_6b63;

pub(super) const INLINE: usize = NNM_STACK_CACHE_INLINE as usize;

/// A layer cache that lives in the caller's storage (on the stack, in a
/// struct, by value, in static storage): a stack of tensor descriptors like
/// `nnm_cache`, for legacy layers that keep their caches by value and never
/// clear them on some paths. It may also be a net's cache
/// (`nnm_net_attach_stack_cache`): the same `nnm_stack_cache_*` calls work
/// on it then, and the `nnm_cache_*` calls on its net entry.
///
/// Valid from the start when zero-filled (static storage, `= {0}`,
/// `memset`, `calloc`), as when initialised with `NNM_STACK_CACHE_INIT` or
/// `nnm_stack_cache_init`; storage that is neither (uninitialised stack
/// memory) is undefined, refused where its `tag` or `count` shows it. Use
/// only the `nnm_stack_cache_*` functions on it; read `count` and, for
/// the first NNM_STACK_CACHE_INLINE tensors, `tensors[i]` directly; never
/// write a field.
///
/// Memory: the first NNM_STACK_CACHE_INLINE tensors live in `tensors`; a
/// push beyond them puts the rest on the heap, which is freed again by the
/// pop that brings `count` back to NNM_STACK_CACHE_INLINE, or by
/// `nnm_stack_cache_clear`. So a cache whose `count` is at most
/// NNM_STACK_CACHE_INLINE holds no heap and needs no call before it goes
/// out of scope; only one that holds more must be cleared first. It only
/// ever stores descriptors (shallow copies that never own a buffer), so it
/// frees no tensor buffer either.
///
/// While it holds heap, it must not be copied or moved: push, pop, get,
/// count and clear on a copy fail with WRONG_STATE and change nothing
/// (`nnm_stack_cache_init` makes a copy an empty cache of its own); so do
/// they on an old copy written back over the cache after its heap was
/// freed (nnmem records which cache owns which heap).
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct nnm_stack_cache {
    /// Tensors on the stack.
    pub count: usize,
    /// Private: NNM_STACK_CACHE_TAG once initialised, or 0 (zero-filled).
    pub tag: u64,
    /// Private: the tensors past the inline ones, NULL while there are none.
    pub spill: *mut nnm_tensor,
    /// Private: room at `spill`, in tensors.
    pub spill_capacity: usize,
    /// Private: the cache's own address while `spill` is set (a copy's
    /// differs).
    pub spill_owner: *const nnm_stack_cache,
    /// The bottom NNM_STACK_CACHE_INLINE tensors of the stack; entries at
    /// and past `count` are unspecified.
    pub tensors: [nnm_tensor; 10],
}

// The header's array length is the literal 10 (cbindgen writes it as written).
const _: () = assert!(INLINE == 10);

impl Default for nnm_stack_cache {
    fn default() -> Self {
        nnm_stack_cache {
            count: 0,
            tag: NNM_STACK_CACHE_TAG,
            spill: ptr::null_mut(),
            spill_capacity: 0,
            spill_owner: ptr::null(),
            tensors: [nnm_tensor::default(); INLINE],
        }
    }
}

/// The heap of every stack cache that holds one: the cache's address ->
/// (its heap, its capacity). A cache's fields alone cannot prove that its
/// heap is still live (C may write an old copy of the struct back over it),
/// so nnmem keeps its own record; only caches past their inline slots use
/// it.
static LIVE_SPILLS: Mutex<Option<HashMap<usize, (Spill, usize)>>> = Mutex::new(None);

/// A cache's heap, kept as a pointer rather than an address, so that
/// `nnm_stack_cache_init` frees it without making a pointer from an integer
/// (which strict provenance, and Miri's check of it, forbid).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Spill(*mut nnm_tensor);

// SAFETY: the record only compares the pointer while its lock is held; the
// heap itself is used by the one thread that uses the cache at a time, as
// nnm_stack_cache's thread-safety rules require.
unsafe impl Send for Spill {}

pub(super) fn live_spills<R>(f: impl FnOnce(&mut HashMap<usize, (Spill, usize)>) -> R) -> R {
    let mut guard = LIVE_SPILLS.lock().unwrap_or_else(|p| p.into_inner());
    let result = f(guard.get_or_insert_with(HashMap::new));
    // Nothing of nnmem's stays allocated once no cache holds heap.
    if guard.as_ref().is_some_and(HashMap::is_empty) {
        *guard = None;
    }
    result
}

/// The heap part of a stack cache that holds one (`spill` not NULL), as
/// the Vec it came from, after checking that `c` is that Vec's owner (not
/// a copy), that nnmem's record says the heap is still live, and that the
/// fields are consistent. In a `ManuallyDrop`: the struct still points to
/// it, so only the caller may decide to free it.
#[cold]
#[inline(never)]
fn spill_of(c: &nnm_stack_cache) -> Result<ManuallyDrop<Vec<nnm_tensor>>> {
    let cache: *const nnm_stack_cache = c;
    let spilled = c.count.saturating_sub(INLINE);
    if !ptr::eq(c.spill_owner, cache) {
        return Err(Error::wrong_state(format!(
            "stack cache holds {} tensors, {spilled} of them on the heap, and was copied or moved since: use the original",
            c.count
        )));
    }
    if live_spills(|live| live.get(&(cache as usize)).copied()) != Some((Spill(c.spill), c.spill_capacity)) {
        return Err(Error::wrong_state(format!(
            "stack cache says it holds {spilled} tensors on the heap, but that heap is no longer its own (an old copy \
             of the struct was written back over it): initialise it again"
        )));
    }
    if spilled == 0 || spilled > c.spill_capacity {
        return Err(Error::invalid(format!(
            "stack cache is corrupt: count {} with room for {} tensors on the heap",
            c.count, c.spill_capacity
        )));
    }
    // SAFETY: nnmem's own record (LIVE_SPILLS, written only by
    // `with_stack_cache` and emptied when a heap is freed) says that `spill`
    // is the live allocation of `spill_capacity` tensors that a
    // Vec<nnm_tensor> made for the cache at this address; the stack keeps
    // its first `spilled` elements written (checked against the capacity
    // above).
    Ok(ManuallyDrop::new(unsafe { Vec::from_raw_parts(c.spill, spilled, c.spill_capacity) }))
}

#[cold]
#[inline(never)]
fn not_initialised() -> Error {
    Error::invalid(
        "cache is not a valid nnm_stack_cache (zero-filled, NNM_STACK_CACHE_INIT or nnm_stack_cache_init): its tag is \
         garbage",
    )
}

/// Whether `tag` is one of a valid cache: set by an initialiser, or 0.
#[inline(always)]
fn valid_tag(tag: u64) -> bool {
    tag == NNM_STACK_CACHE_TAG || tag == 0
}

/// Runs `f` on the stack of the caller's cache at `cache` after checking
/// it, then stores the spill back into the struct.
///
/// # Safety
/// `cache` must be NULL or valid for reading and writing an
/// `nnm_stack_cache` that nothing else uses meanwhile.
#[inline]
pub(super) unsafe fn with_stack_cache<R>(
    cache: *mut nnm_stack_cache,
    f: impl FnOnce(&mut SpillStack<'_, nnm_tensor>) -> Result<R>,
) -> Result<R> {
    // SAFETY: the caller's promise is `one_mut`'s.
    let c = unsafe { one_mut(cache, "cache") }?;
    if !valid_tag(c.tag) {
        return Err(not_initialised());
    }
    // Within the inline slots (the common case) there is no heap to rebuild.
    // ManuallyDrop: a panic inside `f` must not free a heap the struct still
    // points to.
    let had_heap = !c.spill.is_null();
    let mut spill = if had_heap { spill_of(c)? } else { ManuallyDrop::new(Vec::new()) };
    let result = SpillStack::new(&mut c.tensors, &mut c.count, &mut spill).and_then(|mut stack| f(&mut stack));
    let now = (Spill(spill.as_mut_ptr()), spill.capacity());
    if spill.capacity() == 0 {
        // Stored only when they change: the inline-only calls leave the
        // private fields alone.
        if had_heap {
            c.spill = ptr::null_mut();
            c.spill_capacity = 0;
            c.spill_owner = ptr::null();
            live_spills(|live| live.remove(&(cache as usize)));
        }
    } else if !had_heap || now != (Spill(c.spill), c.spill_capacity) {
        c.spill = spill.as_mut_ptr();
        c.spill_capacity = spill.capacity();
        c.spill_owner = cache;
        live_spills(|live| live.insert(cache as usize, now));
    }
    result
}

/// The tensors on the stack cache `c`, in order, without changing it
/// (`nnm_net_get_report`); none when it is not valid (its calls say why).
pub(super) fn stack_cache_items(c: &nnm_stack_cache) -> Vec<nnm_tensor> {
    if !valid_tag(c.tag) {
        return Vec::new();
    }
    let inline = &c.tensors[..c.count.min(INLINE)];
    if c.spill.is_null() {
        return if c.count <= INLINE { inline.to_vec() } else { Vec::new() };
    }
    match spill_of(c) {
        Ok(spill) => inline.iter().chain(spill.iter()).copied().collect(),
        Err(_) => Vec::new(),
    }
}

/// Makes `*cache` an empty stack cache: what `NNM_STACK_CACHE_INIT` gives.
/// The storage may be uninitialised: it is not read. If the cache at this
/// address still holds heap (more than NNM_STACK_CACHE_INLINE tensors),
/// that heap is freed first, as by `nnm_stack_cache_clear`, so nothing
/// leaks; a copy of the old struct kept elsewhere is refused from then on.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `cache` must be NULL or valid for writing an `nnm_stack_cache`, and no
/// other call may use it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_stack_cache_init(cache: *mut nnm_stack_cache) -> Status {
    guard(|| {
        // SAFETY: the caller promises `cache` is NULL or writable.
        let out = unsafe { out_param(cache, "cache") }?;
        if let Some((spill, capacity)) = live_spills(|live| live.remove(&(cache as usize))) {
            // SAFETY: nnmem's record says this is the live allocation of
            // `capacity` tensors that a Vec<nnm_tensor> made for the cache
            // at this address; with length 0 only the allocation is freed.
            drop(unsafe { Vec::from_raw_parts(spill.0, 0, capacity) });
        }
        out.write(nnm_stack_cache::default());
        Ok(())
    })
}

/// Pushes a copy of `*tensor` (a shallow copy that never owns: a copy of an
/// owned tensor is stored as NNM_OWNERSHIP_VIEW; nnmem never frees its
/// buffer). The first NNM_STACK_CACHE_INLINE tensors need no heap; past
/// them the stack grows on the heap (see `nnm_stack_cache`).
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a valid cache: a garbage
/// tag or count; `ndims` above NNM_MAX_DIMS; `dtype`, `mem_kind` or
/// `ownership` out of range); WRONG_STATE (a copy of a cache holding heap);
/// OUT_OF_MEMORY.
///
/// # Safety
/// `cache` must be NULL or valid for reading and writing an
/// `nnm_stack_cache`, and no other call may use it meanwhile. `tensor`
/// must be NULL or valid for reading one descriptor (it may be one of the
/// cache's own).
#[no_mangle]
pub unsafe extern "C" fn nnm_stack_cache_push(cache: *mut nnm_stack_cache, tensor: *const nnm_tensor) -> Status {
    // SAFETY: the caller's promises are `push`'s.
    guard(|| unsafe { push(cache, tensor) })
}

/// `nnm_stack_cache_push`, also for `nnm_cache_push` on a net cache backed
/// by a stack cache.
///
/// # Safety
/// As `nnm_stack_cache_push`.
#[inline]
pub(super) unsafe fn push(cache: *mut nnm_stack_cache, tensor: *const nnm_tensor) -> Result<()> {
    // Copied before the cache is borrowed: `tensor` may point into it.
    // SAFETY: the caller promises `tensor` is NULL or readable.
    let t = *unsafe { one(tensor, "tensor") }?;
    let ownership = copy_ownership(&t)?;
    // SAFETY: the caller promises `cache` is NULL or a cache no other
    // call uses; `tensor` is not used from here on.
    unsafe { with_stack_cache(cache, |stack| stack.push(nnm_tensor { ownership, ..t })) }
}

/// Pops the tensor on top of the stack into `out_tensor`; the pop that
/// brings `count` back to NNM_STACK_CACHE_INLINE frees the cache's heap.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a valid cache: a garbage
/// tag or count); WRONG_STATE (empty: a pop without a matching push; a copy
/// of a cache holding heap).
///
/// # Safety
/// `cache` must be NULL or valid for reading and writing an
/// `nnm_stack_cache`, and no other call may use it meanwhile. `out_tensor`
/// must be NULL or valid for writing one descriptor (it may be one of the
/// cache's own).
#[no_mangle]
pub unsafe extern "C" fn nnm_stack_cache_pop(cache: *mut nnm_stack_cache, out_tensor: *mut nnm_tensor) -> Status {
    // SAFETY: the caller's promises are `pop`'s.
    guard(|| unsafe { pop(cache, out_tensor) })
}

/// `nnm_stack_cache_pop`, also for `nnm_cache_pop` on a net cache backed by
/// a stack cache.
///
/// # Safety
/// As `nnm_stack_cache_pop`.
#[inline]
pub(super) unsafe fn pop(cache: *mut nnm_stack_cache, out_tensor: *mut nnm_tensor) -> Result<()> {
    non_null(out_tensor, "out_tensor")?;
    // SAFETY: the caller promises `out_tensor` is writable, and `cache`
    // NULL or a cache no other call uses (the pop borrows it first).
    unsafe {
        write_after(out_tensor, "out_tensor", || {
            let mut t = nnm_tensor::default();
            with_stack_cache(cache, |stack| stack.pop_into(&mut t))?;
            Ok(t)
        })
    }
}

/// Writes the tensor at `index` (0 is the bottom of the stack).
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a valid cache: a garbage
/// tag or count; `index` not below `count`); WRONG_STATE (a copy of a cache
/// holding heap).
///
/// # Safety
/// As `nnm_stack_cache_pop`.
#[no_mangle]
pub unsafe extern "C" fn nnm_stack_cache_get(
    cache: *mut nnm_stack_cache,
    index: usize,
    out_tensor: *mut nnm_tensor,
) -> Status {
    guard(|| {
        non_null(out_tensor, "out_tensor")?;
        let at = |stack: &mut SpillStack<'_, nnm_tensor>| {
            stack
                .get(index)
                .ok_or_else(|| Error::invalid(format!("index {index}: the stack cache holds {} tensors", stack.len())))
        };
        // SAFETY: as in `nnm_stack_cache_pop`.
        unsafe { write_after(out_tensor, "out_tensor", || with_stack_cache(cache, at)) }
    })
}

/// Writes the number of tensors on the stack (also `cache->count`).
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a valid cache: a garbage
/// tag or count); WRONG_STATE (a copy of a cache holding heap).
///
/// # Safety
/// `cache` must be NULL or valid for reading and writing an
/// `nnm_stack_cache`, and no other call may use it meanwhile. `out_count`
/// must be NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_stack_cache_count(cache: *mut nnm_stack_cache, out_count: *mut usize) -> Status {
    guard(|| {
        non_null(out_count, "out_count")?;
        // SAFETY: as in `nnm_stack_cache_pop`.
        unsafe { write_after(out_count, "out_count", || with_stack_cache(cache, |stack| Ok(stack.len()))) }
    })
}

/// Empties the stack and frees its heap, if any. Needed only for a cache
/// that holds more than NNM_STACK_CACHE_INLINE tensors; harmless on any
/// valid one.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a valid cache: a garbage
/// tag or count); WRONG_STATE (a copy of a cache holding heap).
///
/// # Safety
/// `cache` must be NULL or valid for reading and writing an
/// `nnm_stack_cache`, and no other call may use it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_stack_cache_clear(cache: *mut nnm_stack_cache) -> Status {
    guard(|| {
        // SAFETY: the caller promises `cache` is NULL or a cache no other
        // call uses.
        unsafe {
            with_stack_cache(cache, |stack| {
                stack.clear();
                Ok(())
            })
        }
    })
}
