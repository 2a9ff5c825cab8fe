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
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::RwLock;

use crate::status::{Error, Result, Status};

/// A type handed to C behind a pointer: `Box<Handle<Self>>`, registered.
/// Declaring one is an `impl` with its C name; the tag comes from the name.
///
/// # Safety
/// No two implementing types may have the same `NAME`: the tag stands for
/// the type, and a pointer carrying it is taken to point to this type.
pub unsafe trait HandleType: Sized {
    /// Its C name, for messages ("nnm_planner").
    const NAME: &'static str;
    /// The value sits right after an 8-byte tag, for any handle type (so the
    /// tag is found at the same place whatever type a pointer really has).
    #[doc(hidden)]
    const TAG_IS_8_BEFORE_THE_VALUE: () =
        assert!(std::mem::offset_of!(Handle<Self>, value) == 8, "handle types must be aligned to at most 8 bytes");
    /// The tag a live value carries: a hash of [`HandleType::NAME`], so that
    /// distinct names get distinct tags without a list to edit.
    const TAG: u64 = tag_of(Self::NAME);
}

/// FNV-1a of `name`, never 0 (0 marks a freed value).
pub const fn tag_of(name: &str) -> u64 {
    let bytes = name.as_bytes();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    if hash == 0 {
        1
    } else {
        hash
    }
}

/// A boxed handle: the type tag, then the value. C gets a pointer to the
/// value (so a C-visible prefix of `T`, such as `nnm_net`'s list heads, is
/// what the pointer points to) and the tag sits just before it: every
/// object made by [`Handle::boxed`] has a readable tag there, so a pointer
/// to another nnmem type fails the tag check without reading past its end.
#[repr(C)]
pub struct Handle<T: HandleType> {
    tag: u64,
    value: T,
}

impl<T: HandleType> Handle<T> {
    /// Boxes `value` with its tag, without registering it (for objects that
    /// an owner frees, such as a net's entries); free with [`free_unregistered`].
    pub fn boxed(value: T) -> *mut T {
        let () = T::TAG_IS_8_BEFORE_THE_VALUE;
        let handle = Box::into_raw(Box::new(Handle { tag: T::TAG, value }));
        // SAFETY: `handle` is a live box; the field pointer keeps its
        // provenance over the whole box, which `handle_of` relies on.
        unsafe { std::ptr::addr_of_mut!((*handle).value) }
    }
}

/// The handle whose value `ptr` points to (pointer arithmetic only).
#[inline(always)]
fn handle_of<T: HandleType>(ptr: *const T) -> *mut Handle<T> {
    ptr.cast::<u8>().wrapping_sub(std::mem::offset_of!(Handle<T>, value)).cast::<Handle<T>>().cast_mut()
}

/// Reads the tag stored before the value at `ptr`, making no reference.
///
/// # Safety
/// `ptr` must be non-NULL and come from [`Handle::boxed`] for some handle
/// type (live; a freed one is undefined, as in C).
#[inline(always)]
unsafe fn tag_at<T: HandleType>(ptr: *const T) -> u64 {
    // SAFETY: every `Handle<_>` starts with its u64 tag and `offset_of!(value)`
    // is 8 for every handle type aligned to at most 8; the caller promises
    // `ptr` is the value of a live handle, so the tag before it is readable.
    unsafe { std::ptr::addr_of!((*handle_of(ptr)).tag).read() }
}

/// Frees a value made by [`Handle::boxed`], clearing its tag first so that a
/// stale pointer used before the memory is reused fails the tag check.
///
/// # Safety
/// `ptr` must come from [`Handle::boxed`] for `T` and not have been freed.
pub unsafe fn free_unregistered<T: HandleType>(ptr: *mut T) {
    let handle = handle_of(ptr);
    // SAFETY: the caller promises `ptr` is the value of a live box made by
    // `boxed`, so `handle` is that box, valid for writes and owned by
    // nobody else now.
    unsafe {
        (*handle).tag = 0;
        drop(Box::from_raw(handle));
    }
}

// The registry is looked up on every checked call, so a look-up must cost
// a few nanoseconds, not a lock: live handles sit in a fixed table of
// atomic slots (address, tag) that readers scan without locking (one
// 64-byte bucket of 4 slots per address), and only handles whose bucket is
// full go to a map behind a lock. Writers (`new`, `free`) hold the map's
// write lock for every change, so they never race each other; a reader
// racing a writer on the same handle is a call racing that handle's free,
// which the thread-safety rules already forbid. A slot's tag is written
// before its address and cleared after it, so a reader that finds an
// address reads that handle's tag.

const BUCKETS: usize = 1024;
const WAYS: usize = 4;

struct Slot {
    addr: AtomicUsize,
    tag: AtomicU64,
}

#[repr(align(64))]
struct Bucket([Slot; WAYS]);

static SLOTS: [Bucket; BUCKETS] =
    [const { Bucket([const { Slot { addr: AtomicUsize::new(0), tag: AtomicU64::new(0) } }; WAYS]) }; BUCKETS];

/// Live handles that have no slot: address -> tag.
static OVERFLOW: RwLock<Option<HashMap<usize, u64>>> = RwLock::new(None);
/// Entries in `OVERFLOW`, so that readers skip its lock while it is empty.
static OVERFLOW_LEN: AtomicUsize = AtomicUsize::new(0);
/// Tag -> C name of every handle type registered so far (for messages
/// only; filled under the write lock of `OVERFLOW`).
static TYPE_NAMES: RwLock<Vec<(u64, &'static str)>> = RwLock::new(Vec::new());

#[inline]
fn bucket(addr: usize) -> &'static Bucket {
    // Fibonacci hashing: the product's top bits depend on every bit of the
    // address, though heap addresses share their low bits.
    let h = (addr as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - BUCKETS.trailing_zeros());
    &SLOTS[h as usize]
}

/// The tag registered for `addr`, if it is a live handle. Lock-free unless
/// some live handle is in the overflow map.
fn registered(addr: usize) -> Option<u64> {
    if addr == 0 {
        return None;
    }
    for slot in &bucket(addr).0 {
        if slot.addr.load(Ordering::Acquire) == addr {
            return Some(slot.tag.load(Ordering::Acquire));
        }
    }
    if OVERFLOW_LEN.load(Ordering::Acquire) == 0 {
        return None;
    }
    let map = OVERFLOW.read().unwrap_or_else(|p| p.into_inner());
    map.as_ref().and_then(|m| m.get(&addr).copied())
}

/// The C name of the handle type with `tag`.
fn type_name(tag: u64) -> &'static str {
    let names = TYPE_NAMES.read().unwrap_or_else(|p| p.into_inner());
    names.iter().find(|(t, _)| *t == tag).map_or("handle of an unknown type", |(_, n)| n)
}

fn register<T: HandleType>(addr: usize) {
    let mut map = OVERFLOW.write().unwrap_or_else(|p| p.into_inner());
    {
        let mut names = TYPE_NAMES.write().unwrap_or_else(|p| p.into_inner());
        if !names.iter().any(|(t, _)| *t == T::TAG) {
            names.push((T::TAG, T::NAME));
        }
    }
    if let Some(slot) = bucket(addr).0.iter().find(|s| s.addr.load(Ordering::Relaxed) == 0) {
        slot.tag.store(T::TAG, Ordering::Release);
        // Release: a reader that sees the address sees the tag and the boxed
        // value too.
        slot.addr.store(addr, Ordering::Release);
        return;
    }
    map.get_or_insert_with(HashMap::new).insert(addr, T::TAG);
    OVERFLOW_LEN.fetch_add(1, Ordering::Release);
}

/// Removes `addr` when it is a live `T`; returns the tag registered for it
/// (`T`'s when removed), or `None` when it is not live.
fn unregister<T: HandleType>(addr: usize) -> Option<u64> {
    let mut map = OVERFLOW.write().unwrap_or_else(|p| p.into_inner());
    if let Some(slot) = bucket(addr).0.iter().find(|s| s.addr.load(Ordering::Relaxed) == addr) {
        let tag = slot.tag.load(Ordering::Relaxed);
        if tag == T::TAG {
            slot.addr.store(0, Ordering::Release);
            slot.tag.store(0, Ordering::Release);
        }
        return Some(tag);
    }
    let tag = map.as_ref().and_then(|m| m.get(&addr).copied())?;
    if tag == T::TAG {
        let m = map.as_mut().expect("it holds the tag just read");
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
    Some(tag)
}

/// Boxes `value` and registers the pointer.
pub fn into_handle<T: HandleType>(value: T) -> *mut T {
    let ptr = Handle::boxed(value);
    register::<T>(ptr as usize);
    ptr
}

/// Frees a handle made by [`into_handle`]. NULL is a no-op; an unknown or
/// already freed pointer is reported and left alone (never read).
///
/// # Safety
/// `ptr` must be NULL or any pointer value: only a pointer that the
/// registry holds as a live `T` (one from [`into_handle`]) is freed.
pub unsafe fn free_handle<T: HandleType>(ptr: *mut T) -> Result<()> {
    if ptr.is_null() {
        return Ok(());
    }
    match unregister::<T>(ptr as usize) {
        Some(tag) if tag == T::TAG => {}
        Some(other) => {
            let other = type_name(other);
            return Err(Error::invalid(format!(
                "{}_free: {ptr:p} is a live {other}, not a {}; free it with {other}_free",
                T::NAME,
                T::NAME
            )));
        }
        None => {
            return Err(Error::invalid(format!(
                "{}_free: {ptr:p} is not a live {} (double free, or not made by nnmem)",
                T::NAME,
                T::NAME
            )))
        }
    }
    // SAFETY: the registry held `ptr` as a live `T` until just now, so it
    // came from `into_handle` (`Handle::boxed`) and was not freed.
    unsafe { free_unregistered(ptr) };
    Ok(())
}

/// Fails unless `ptr` is a live handle made by [`into_handle`] (looked up in
/// the registry; `ptr` is never dereferenced). Catches calls on a freed
/// handle as long as its address has not been reused by a new handle.
#[inline(always)]
pub fn check_live<T: HandleType>(ptr: *const T, what: &str) -> Result<()> {
    if ptr.is_null() {
        return Err(null_handle(what));
    }
    let addr = ptr as usize;
    // The common case, a live handle in its slot: one bucket scanned.
    for slot in &bucket(addr).0 {
        if slot.addr.load(Ordering::Acquire) == addr && slot.tag.load(Ordering::Acquire) == T::TAG {
            return Ok(());
        }
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
fn wrong_tag<T: HandleType>(what: &str) -> Error {
    Error::invalid(format!("{what} is not a valid {}", T::NAME))
}

#[cold]
#[inline(never)]
fn check_live_slow<T: HandleType>(ptr: *const T, what: &str) -> Result<()> {
    match registered(ptr as usize) {
        Some(tag) if tag == T::TAG => Ok(()),
        Some(other) => {
            Err(Error::invalid(format!("{what} ({ptr:p}) is a live {}, not a {}", type_name(other), T::NAME)))
        }
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
/// nnmem did not make), or a live handle not being mutated elsewhere, for
/// as long as the returned reference is used.
#[inline(always)]
pub unsafe fn value_ref<'a, T: HandleType>(ptr: *const T, what: &str) -> Result<&'a T> {
    check_live(ptr, what)?;
    // SAFETY: the registry holds `ptr` as a live `T`, so it points to a
    // `Handle<T>`; the caller promises no concurrent mutation.
    unsafe { tagged_ref(ptr, what) }
}

/// Mutable variant of [`value_ref`].
///
/// # Safety
/// As [`value_ref`], and no other reference to the handle may be in use.
#[inline(always)]
pub unsafe fn value_mut<'a, T: HandleType>(ptr: *mut T, what: &str) -> Result<&'a mut T> {
    check_live(ptr, what)?;
    // SAFETY: as in `value_ref`; the caller promises exclusive access.
    unsafe { tagged_mut(ptr, what) }
}

/// Checks `ptr` for NULL and `T`'s tag only (for hot calls: no registry
/// look-up) and returns it.
///
/// # Safety
/// `ptr` must be NULL or point to readable memory the size of a
/// `Handle<T>`: a live handle (a freed one is undefined, as in C).
#[inline(always)]
pub unsafe fn tagged_ptr<T: HandleType>(ptr: *const T, what: &str) -> Result<*mut T> {
    if ptr.is_null() {
        return Err(null_handle(what));
    }
    // SAFETY: non-NULL, and the caller promises it is readable.
    if unsafe { tag_at(ptr) } != T::TAG {
        return Err(wrong_tag::<T>(what));
    }
    Ok(ptr.cast_mut())
}

/// Borrows the value behind a handle after NULL and tag checks only (for
/// hot calls: no registry look-up).
///
/// # Safety
/// `ptr` must be NULL or point to a live handle not being mutated elsewhere
/// while the reference is used.
#[inline(always)]
pub unsafe fn tagged_ref<'a, T: HandleType>(ptr: *const T, what: &str) -> Result<&'a T> {
    // SAFETY: the caller's promise is `tagged_ptr`'s; a pointer with `T`'s
    // tag is a live `Handle<T>`, whose value sits at the pointer.
    unsafe { Ok(&*tagged_ptr(ptr, what)?) }
}

/// Mutable variant of [`tagged_ref`].
///
/// # Safety
/// As [`tagged_ref`], and no other reference to the handle may be in use.
#[inline(always)]
pub unsafe fn tagged_mut<'a, T: HandleType>(ptr: *mut T, what: &str) -> Result<&'a mut T> {
    // SAFETY: as in `tagged_ref`; the caller promises exclusive access.
    unsafe { Ok(&mut *tagged_ptr(ptr, what)?) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test handle type; `u64` keeps it 8-aligned like the real ones.
    #[derive(Debug)]
    struct TestA(u64);
    // SAFETY: no other type is named "test_a".
    unsafe impl HandleType for TestA {
        const NAME: &'static str = "test_a";
    }

    #[derive(Debug)]
    struct TestB(u64);
    // SAFETY: no other type is named "test_b".
    unsafe impl HandleType for TestB {
        const NAME: &'static str = "test_b";
    }

    #[test]
    fn tags_come_from_names_and_differ() {
        assert_eq!(TestA::TAG, tag_of("test_a"));
        assert_ne!(TestA::TAG, TestB::TAG);
        assert_ne!(tag_of(""), 0);
        let p = into_handle(TestA(5));
        // SAFETY: `p` is live.
        assert_eq!(unsafe { tagged_ref(p, "a") }.unwrap().0, 5);
        // SAFETY: `p` is live and 16 bytes long, as a `Handle<TestB>` is.
        let e = unsafe { tagged_ref(p.cast::<TestB>(), "b") }.unwrap_err();
        assert_eq!((e.status(), e.message()), (Status::InvalidArgument, "b is not a valid test_b"));
        // SAFETY: NULL is allowed.
        let e = unsafe { tagged_mut(std::ptr::null_mut::<TestA>(), "a") }.unwrap_err();
        assert_eq!((e.status(), e.message()), (Status::NullArgument, "a is NULL"));
        // SAFETY: `p` came from into_handle.
        unsafe { free_handle(p) }.unwrap();
    }

    /// Larger than `TestA`: its tag check must not read past a `TestA`.
    #[derive(Debug)]
    struct TestBig([u64; 16]);
    // SAFETY: no other type is named "test_big".
    unsafe impl HandleType for TestBig {
        const NAME: &'static str = "test_big";
    }

    #[test]
    fn a_handle_of_a_smaller_type_fails_the_tag_check_within_its_own_box() {
        let p = into_handle(TestA(1));
        // SAFETY: the tag sits before the value in every handle, so checking
        // a `TestA` as a `TestBig` reads only the `TestA` box (Miri checks).
        let e = unsafe { tagged_ref(p.cast::<TestBig>(), "big") }.unwrap_err();
        assert_eq!(e.message(), "big is not a valid test_big");
        // SAFETY: `p` came from into_handle.
        unsafe { free_handle(p) }.unwrap();
        let b = into_handle(TestBig([3; 16]));
        // SAFETY: `b` is live.
        assert_eq!(unsafe { tagged_ref(b, "big") }.unwrap().0[15], 3);
        // SAFETY: `b` came from into_handle.
        unsafe { free_handle(b) }.unwrap();
    }

    #[test]
    fn unregistered_boxes_pass_the_tag_check_until_freed() {
        let p = Handle::boxed(TestB(3));
        // SAFETY: `p` is live.
        assert_eq!(unsafe { tagged_mut(p, "b") }.unwrap().0, 3);
        assert!(check_live(p, "b").is_err(), "not registered");
        // SAFETY: `p` came from Handle::boxed and is freed once.
        unsafe { free_unregistered(p) };
    }

    #[test]
    fn a_pointer_into_a_live_handle_is_not_that_handle() {
        let p = into_handle(TestA(9));
        for d in 1..8 {
            let inside = p.cast::<u8>().wrapping_add(d).cast::<TestA>();
            assert_eq!(check_live(inside, "token").unwrap_err().status(), Status::InvalidArgument, "{d} bytes in");
        }
        // SAFETY: `p` came from into_handle.
        unsafe { free_handle(p) }.unwrap();
    }

    #[test]
    fn freed_handles_are_refused_without_being_read_in_slots_and_in_the_map() {
        // More handles than slots, so some overflow to the map.
        let a: Vec<*mut TestA> = (0..BUCKETS * WAYS + 500).map(|_| into_handle(TestA(9))).collect();
        let b: Vec<*mut TestB> = (0..100).map(|_| into_handle(TestB(7))).collect();
        for &p in &a {
            // SAFETY: live.
            unsafe { value_ref(p, "h") }.unwrap();
        }
        for &p in &b {
            // SAFETY: live, and no other reference exists.
            unsafe { value_mut(p, "h") }.unwrap();
        }
        let e = check_live(b[0].cast::<TestA>(), "token").unwrap_err();
        assert_eq!(e.message(), format!("token ({:p}) is a live test_b, not a test_a", b[0]));
        // SAFETY: a live handle of another type is refused, not freed.
        let e = unsafe { free_handle(a[0].cast::<TestB>()) }.unwrap_err();
        assert!(e.message().contains("is a live test_a, not a test_b; free it with test_a_free"), "{}", e.message());
        for &p in a.iter().step_by(2) {
            // SAFETY: from into_handle, freed once.
            unsafe { free_handle(p) }.unwrap();
        }
        for &p in b.iter().step_by(2) {
            // SAFETY: from into_handle, freed once.
            unsafe { free_handle(p) }.unwrap();
        }
        for (i, &p) in a.iter().enumerate() {
            assert_eq!(check_live(p, "h").is_ok(), i % 2 == 1, "handle {i}");
        }
        for (i, &p) in b.iter().enumerate() {
            // SAFETY: live or freed (then refused unread).
            let live = unsafe { value_ref(p, "h") };
            assert_eq!(live.is_ok(), i % 2 == 1, "handle {i}");
            if i % 2 == 0 {
                let e = live.err().unwrap();
                assert_eq!(e.status(), Status::InvalidArgument);
                assert!(
                    e.message().ends_with("is not a live test_b (already freed, or not made by nnmem)"),
                    "{}",
                    e.message()
                );
                // SAFETY: a freed handle is refused, not freed again.
                assert!(unsafe { free_handle(p) }.is_err(), "double free of {i}");
            }
        }
        for &p in a.iter().skip(1).step_by(2) {
            // SAFETY: from into_handle, freed once.
            unsafe { free_handle(p) }.unwrap();
        }
        for &p in b.iter().skip(1).step_by(2) {
            // SAFETY: from into_handle, freed once.
            unsafe { free_handle(p) }.unwrap();
        }
        assert!(a.iter().all(|&p| check_live(p, "h").is_err()));
        assert!(b.iter().all(|&p| check_live(p, "h").is_err()));
    }
}
