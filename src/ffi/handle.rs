//! Opaque handles: boxed Rust objects handed to C as pointers.
//!
//! Live handles are tracked in a registry, with their type, so that freeing
//! a handle twice, freeing a pointer nnmem never made, or freeing a handle
//! through another type's free function is detected and reported through
//! `nnm_last_error()` instead of corrupting the heap. Calls that are not
//! nanosecond-hot look their handle up there too ([`value_ref`],
//! [`value_mut`], [`check_live`]) before reading it, so a call on a freed
//! handle fails instead of reading freed memory. The hot calls (arena
//! allocations, the net's lookups and cache pushes) only check a per-type
//! tag in the handle ([`tagged_ref`], [`tagged_mut`]); on a freed handle
//! they are undefined, as in C.
//!
//! What the registry cannot see: once freed, an address may be handed out
//! again by the allocator. A stale pointer to an address that now holds a
//! new handle of the same type *is* that handle, and calls act on it; one
//! that now holds a handle of another type fails as the wrong type.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::RwLock;

use crate::status::{Error, Result, Status};

// The registry is looked up on every checked call, so a look-up must cost
// a few nanoseconds, not a lock: live handles sit in a fixed table of
// atomic slots that readers scan without locking (one 64-byte bucket of 8
// slots per address), and only handles whose bucket is full, or whose type
// cannot be encoded in a slot, go to a map behind a lock. Writers (`new`,
// `free`) hold the map's write lock for every change, so they never race
// each other; a reader racing a writer on the same handle is a call racing
// that handle's free, which the thread-safety rules already forbid.

/// Handle types a slot can name: a slot holds `address | (index + 1)`.
const SLOT_TYPES: [&str; 4] = ["nnm_planner", "nnm_arena", "nnm_cancel_token", "nnm_net"];
const SLOT_TYPE_MASK: usize = 7;
const BUCKETS: usize = 512;
const WAYS: usize = 8;

#[repr(align(64))]
struct Bucket([AtomicUsize; WAYS]);

static SLOTS: [Bucket; BUCKETS] = [const { Bucket([const { AtomicUsize::new(0) }; WAYS]) }; BUCKETS];

/// Live handles that have no slot: address -> type name.
static OVERFLOW: RwLock<Option<HashMap<usize, &'static str>>> = RwLock::new(None);
/// Entries in `OVERFLOW`, so that readers skip its lock while it is empty.
static OVERFLOW_LEN: AtomicUsize = AtomicUsize::new(0);

/// The type bits a slot holds for a live `T` (`address | bits`), or 0 when
/// `T` cannot be encoded (an unknown type name, or an alignment that leaves
/// no low bits free).
const fn slot_type<T: Tagged>() -> usize {
    if std::mem::align_of::<T>() <= SLOT_TYPE_MASK {
        return 0;
    }
    let mut i = 0;
    while i < SLOT_TYPES.len() {
        if const_str_eq(SLOT_TYPES[i], T::NAME) {
            return i + 1;
        }
        i += 1;
    }
    0
}

const fn const_str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

#[inline]
fn bucket(addr: usize) -> &'static Bucket {
    // Fibonacci hashing: the product's top bits depend on every bit of the
    // address, though heap addresses share their low bits.
    let h = (addr as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - BUCKETS.trailing_zeros());
    &SLOTS[h as usize]
}

/// Whether a slot's value `v` is the live handle at `addr` of slot type
/// `kind`. The address must be aligned: `addr | kind` alone would also match
/// a pointer a few bytes into a live handle (today's hash never puts such a
/// pointer in the handle's bucket, but nothing here should rest on that).
#[inline]
fn slot_holds(v: usize, addr: usize, kind: usize) -> bool {
    addr & SLOT_TYPE_MASK == 0 && v == addr | kind
}

/// The type name registered for `addr`, if it is a live handle. Lock-free
/// unless some live handle is in the overflow map.
fn registered(addr: usize) -> Option<&'static str> {
    for slot in &bucket(addr).0 {
        let v = slot.load(Ordering::Acquire);
        if v & !SLOT_TYPE_MASK == addr && v != 0 {
            return Some(SLOT_TYPES[(v & SLOT_TYPE_MASK) - 1]);
        }
    }
    if OVERFLOW_LEN.load(Ordering::Acquire) == 0 {
        return None;
    }
    let map = OVERFLOW.read().unwrap_or_else(|p| p.into_inner());
    map.as_ref().and_then(|m| m.get(&addr).copied())
}

fn register<T: Tagged>(addr: usize) {
    let mut map = OVERFLOW.write().unwrap_or_else(|p| p.into_inner());
    let kind = const { slot_type::<T>() };
    if kind != 0 {
        debug_assert_eq!(addr & SLOT_TYPE_MASK, 0, "aligned to more than the type bits");
        // Release: a reader that sees the slot sees the boxed value too.
        if let Some(slot) = bucket(addr).0.iter().find(|s| s.load(Ordering::Relaxed) == 0) {
            slot.store(addr | kind, Ordering::Release);
            return;
        }
    }
    map.get_or_insert_with(HashMap::new).insert(addr, T::NAME);
    OVERFLOW_LEN.fetch_add(1, Ordering::Release);
}

/// Removes `addr` when it is a live `T`; returns the type registered for
/// it (`T`'s when removed), or `None` when it is not live.
fn unregister<T: Tagged>(addr: usize) -> Option<&'static str> {
    let mut map = OVERFLOW.write().unwrap_or_else(|p| p.into_inner());
    if let Some(slot) = bucket(addr).0.iter().find(|s| {
        let v = s.load(Ordering::Relaxed);
        v != 0 && v & !SLOT_TYPE_MASK == addr
    }) {
        let name = SLOT_TYPES[(slot.load(Ordering::Relaxed) & SLOT_TYPE_MASK) - 1];
        if name == T::NAME {
            slot.store(0, Ordering::Release);
        }
        return Some(name);
    }
    let name = map.as_ref().and_then(|m| m.get(&addr).copied())?;
    if name == T::NAME {
        let m = map.as_mut().expect("it holds the name just read");
        m.remove(&addr);
        OVERFLOW_LEN.fetch_sub(1, Ordering::Release);
        // Give the map's memory back once it is empty, so a program that
        // freed everything ends with nothing of nnmem's still allocated
        // (valgrind counts a never-dropped static's buffer as "still
        // reachable").
        if m.is_empty() {
            *map = None;
        }
    }
    Some(name)
}

/// A type handed to C behind a pointer. It carries a per-type tag so that
/// a pointer of the wrong type is caught.
pub trait Tagged {
    /// Its C name, for messages.
    const NAME: &'static str;
    /// Whether the value's tag is this type's tag.
    fn tag_is_valid(&self) -> bool;
}

/// Boxes `value` and registers the pointer.
pub fn into_handle<T: Tagged>(value: T) -> *mut T {
    let ptr = Box::into_raw(Box::new(value));
    register::<T>(ptr as usize);
    ptr
}

/// Frees a handle made by [`into_handle`]. NULL is a no-op; an unknown or
/// already freed pointer is reported and left alone.
///
/// # Safety
/// `ptr` must be NULL or a pointer obtained from [`into_handle`] for `T`.
pub unsafe fn free_handle<T: Tagged>(ptr: *mut T) -> Result<()> {
    if ptr.is_null() {
        return Ok(());
    }
    let found = unregister::<T>(ptr as usize);
    match found {
        Some(name) if name == T::NAME => {}
        Some(other) => {
            return Err(Error::invalid(format!(
                "{}_free: {ptr:p} is a live {other}, not a {}; free it with {other}_free",
                T::NAME,
                T::NAME
            )))
        }
        None => {
            return Err(Error::invalid(format!(
                "{}_free: {ptr:p} is not a live {} (double free, or not made by nnmem)",
                T::NAME,
                T::NAME
            )))
        }
    }
    drop(Box::from_raw(ptr));
    Ok(())
}

/// Fails unless `ptr` is a live handle made by [`into_handle`] (looked up in
/// the registry; `ptr` is never dereferenced). Catches calls on a freed
/// handle as long as its address has not been reused by a new handle.
#[inline]
pub fn check_live<T: Tagged>(ptr: *const T, what: &str) -> Result<()> {
    if ptr.is_null() {
        return Err(null_handle(what));
    }
    let addr = ptr as usize;
    let kind = const { slot_type::<T>() };
    // The common case, a live handle in its slot: one bucket scanned.
    if kind != 0 && bucket(addr).0.iter().any(|s| slot_holds(s.load(Ordering::Acquire), addr, kind)) {
        return Ok(());
    }
    check_live_slow(ptr, what)
}

#[cold]
#[inline(never)]
fn null_handle(what: &str) -> Error {
    Error::new(Status::NullArgument, format!("{what} is NULL"))
}

#[cold]
#[inline(never)]
fn wrong_tag<T: Tagged>(what: &str) -> Error {
    Error::invalid(format!("{what} is not a valid {}", T::NAME))
}

#[cold]
#[inline(never)]
fn check_live_slow<T: Tagged>(ptr: *const T, what: &str) -> Result<()> {
    match registered(ptr as usize) {
        Some(name) if name == T::NAME => Ok(()),
        Some(other) => Err(Error::invalid(format!("{what} ({ptr:p}) is a live {other}, not a {}", T::NAME))),
        None => Err(Error::invalid(format!(
            "{what} ({ptr:p}) is not a live {} (already freed, or not made by nnmem)",
            T::NAME
        ))),
    }
}

/// Borrows the value behind a handle after NULL, registry and tag checks:
/// a freed handle (whose address no live handle took over) fails with
/// `InvalidArgument` and is not read.
///
/// # Safety
/// `ptr` must be NULL, a handle freed by [`free_handle`] (or any pointer
/// nnmem did not make), or a live handle not being mutated elsewhere.
#[inline]
pub unsafe fn value_ref<'a, T: Tagged>(ptr: *const T, what: &str) -> Result<&'a T> {
    check_live(ptr, what)?;
    tagged_ref(ptr, what)
}

/// Mutable variant of [`value_ref`].
///
/// # Safety
/// As [`value_ref`], and no other reference to the handle may be in use.
#[inline]
pub unsafe fn value_mut<'a, T: Tagged>(ptr: *mut T, what: &str) -> Result<&'a mut T> {
    check_live(ptr, what)?;
    tagged_mut(ptr, what)
}

/// Borrows the value behind a handle after NULL and tag checks only (for
/// hot calls: no registry look-up).
///
/// # Safety
/// `ptr` must be NULL or point to a live handle.
#[inline]
pub unsafe fn tagged_ref<'a, T: Tagged>(ptr: *const T, what: &str) -> Result<&'a T> {
    if ptr.is_null() {
        return Err(null_handle(what));
    }
    let value = &*ptr;
    if !value.tag_is_valid() {
        return Err(wrong_tag::<T>(what));
    }
    Ok(value)
}

/// Mutable variant of [`tagged_ref`].
///
/// # Safety
/// As [`tagged_ref`], and no other reference to the handle may be in use.
#[inline]
pub unsafe fn tagged_mut<'a, T: Tagged>(ptr: *mut T, what: &str) -> Result<&'a mut T> {
    if ptr.is_null() {
        return Err(null_handle(what));
    }
    let value = &mut *ptr;
    if !value.tag_is_valid() {
        return Err(wrong_tag::<T>(what));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A handle type no slot can name: it always lives in the overflow map.
    struct Unslotted(u64);
    impl Tagged for Unslotted {
        const NAME: &'static str = "test_unslotted";
        fn tag_is_valid(&self) -> bool {
            self.0 == 7
        }
    }

    /// One slotted type, aligned to 8 like every real handle.
    struct Slotted(u64);
    impl Tagged for Slotted {
        const NAME: &'static str = "nnm_cancel_token";
        fn tag_is_valid(&self) -> bool {
            self.0 == 9
        }
    }

    // On 32-bit targets a u64 may be 4-aligned: every handle then lives in
    // the overflow map, which the other tests cover.
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn slot_types_are_known_names_with_room_for_the_type_bits() {
        assert_eq!(const { slot_type::<Slotted>() }, 3);
        assert_eq!(const { slot_type::<Unslotted>() }, 0);
        assert_eq!(const { slot_type::<crate::ffi::plan::nnm_planner>() }, 1);
        assert_eq!(const { slot_type::<crate::ffi::arena::nnm_arena>() }, 2);
    }

    #[test]
    fn a_pointer_into_a_live_handle_is_not_that_handle() {
        let p = into_handle(Slotted(9));
        let (addr, kind) = (p as usize, const { slot_type::<Slotted>() });
        let slot = addr | kind;
        assert!(slot_holds(slot, addr, kind));
        for d in 1..8 {
            assert!(!slot_holds(slot, addr + d, kind), "{d} bytes in");
            let inside = p.cast::<u8>().wrapping_add(d).cast::<Slotted>();
            assert_eq!(check_live(inside, "token").unwrap_err().status(), Status::InvalidArgument, "{d} bytes in");
        }
        unsafe { free_handle(p) }.unwrap();
    }

    #[test]
    fn freed_handles_are_refused_without_being_read_in_slots_and_in_the_map() {
        // More handles than slots, so some of the slotted ones overflow too.
        let slotted: Vec<*mut Slotted> = (0..BUCKETS * WAYS + 500).map(|_| into_handle(Slotted(9))).collect();
        let unslotted: Vec<*mut Unslotted> = (0..100).map(|_| into_handle(Unslotted(7))).collect();
        for &p in &slotted {
            unsafe { value_ref(p, "h") }.unwrap();
        }
        for &p in &unslotted {
            unsafe { value_mut(p, "h") }.unwrap();
        }
        let e = check_live(unslotted[0].cast::<Slotted>(), "token").unwrap_err();
        assert_eq!(e.message(), format!("token ({:p}) is a live test_unslotted, not a nnm_cancel_token", unslotted[0]));
        let e = unsafe { free_handle(slotted[0].cast::<Unslotted>()) }.unwrap_err();
        assert!(e.message().contains("is a live nnm_cancel_token, not a test_unslotted"), "{}", e.message());
        for &p in slotted.iter().step_by(2) {
            unsafe { free_handle(p) }.unwrap();
        }
        for &p in unslotted.iter().step_by(2) {
            unsafe { free_handle(p) }.unwrap();
        }
        for (i, &p) in slotted.iter().enumerate() {
            assert_eq!(check_live(p, "h").is_ok(), i % 2 == 1, "slotted handle {i}");
        }
        for (i, &p) in unslotted.iter().enumerate() {
            let live = unsafe { value_ref(p, "h") };
            assert_eq!(live.is_ok(), i % 2 == 1, "unslotted handle {i}");
            if i % 2 == 0 {
                let e = live.err().unwrap();
                assert_eq!(e.status(), Status::InvalidArgument);
                assert!(
                    e.message().ends_with("is not a live test_unslotted (already freed, or not made by nnmem)"),
                    "{}",
                    e.message()
                );
                assert!(unsafe { free_handle(p) }.is_err(), "double free of {i}");
            }
        }
        for &p in slotted.iter().skip(1).step_by(2) {
            unsafe { free_handle(p) }.unwrap();
        }
        for &p in unslotted.iter().skip(1).step_by(2) {
            unsafe { free_handle(p) }.unwrap();
        }
        assert!(slotted.iter().all(|&p| check_live(p, "h").is_err()));
        assert!(unslotted.iter().all(|&p| check_live(p, "h").is_err()));
    }
}
