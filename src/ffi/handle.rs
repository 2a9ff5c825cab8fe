//! Opaque handles: boxed Rust objects handed to C as pointers.
//!
//! Live handles are tracked in a registry, with their type, so that freeing
//! a handle twice, freeing a pointer nnmem never made, or freeing a handle
//! through another type's free function is detected and reported through
//! `nnm_last_error()` instead of corrupting the heap. Other calls check a
//! per-type tag in the handle (cheap, catches a handle of the wrong type);
//! using a handle after freeing it is undefined, as in C.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::status::{Error, Result, Status};

/// Live handle address -> its type's C name.
static LIVE: Mutex<Option<HashMap<usize, &'static str>>> = Mutex::new(None);

/// A type handed to C behind a pointer. It carries a per-type tag so that
/// a pointer of the wrong type is caught.
pub trait Tagged {
    /// Its C name, for messages.
    const NAME: &'static str;
    /// Whether the value's tag is this type's tag.
    fn tag_is_valid(&self) -> bool;
}

fn registry<R>(f: impl FnOnce(&mut HashMap<usize, &'static str>) -> R) -> R {
    let mut guard = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    let result = f(guard.get_or_insert_with(HashMap::new));
    // Give the set's memory back once no handle is live, so a program that
    // freed everything ends with nothing of nnmem's still allocated (valgrind
    // counts a never-dropped static's buffer as "still reachable").
    if guard.as_ref().is_some_and(HashMap::is_empty) {
        *guard = None;
    }
    result
}

/// Boxes `value` and registers the pointer.
pub fn into_handle<T: Tagged>(value: T) -> *mut T {
    let ptr = Box::into_raw(Box::new(value));
    registry(|set| set.insert(ptr as usize, T::NAME));
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
    let found = registry(|set| match set.get(&(ptr as usize)) {
        Some(&name) if name == T::NAME => set.remove(&(ptr as usize)),
        other => other.copied(),
    });
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
pub fn check_live<T: Tagged>(ptr: *const T, what: &str) -> Result<()> {
    if ptr.is_null() {
        return Err(Error::new(Status::NullArgument, format!("{what} is NULL")));
    }
    match registry(|set| set.get(&(ptr as usize)).copied()) {
        Some(name) if name == T::NAME => Ok(()),
        Some(other) => Err(Error::invalid(format!("{what} ({ptr:p}) is a live {other}, not a {}", T::NAME))),
        None => Err(Error::invalid(format!(
            "{what} ({ptr:p}) is not a live {} (already freed, or not made by nnmem)",
            T::NAME
        ))),
    }
}

/// Borrows the value behind a handle after NULL and tag checks.
///
/// # Safety
/// `ptr` must be NULL or point to a live handle.
pub unsafe fn value_ref<'a, T: Tagged>(ptr: *const T, what: &str) -> Result<&'a T> {
    if ptr.is_null() {
        return Err(Error::new(Status::NullArgument, format!("{what} is NULL")));
    }
    let value = &*ptr;
    if !value.tag_is_valid() {
        return Err(Error::invalid(format!("{what} is not a valid {}", T::NAME)));
    }
    Ok(value)
}

/// Mutable variant of [`value_ref`].
///
/// # Safety
/// As [`value_ref`], and no other reference to the handle may be in use.
pub unsafe fn value_mut<'a, T: Tagged>(ptr: *mut T, what: &str) -> Result<&'a mut T> {
    if ptr.is_null() {
        return Err(Error::new(Status::NullArgument, format!("{what} is NULL")));
    }
    let value = &mut *ptr;
    if !value.tag_is_valid() {
        return Err(Error::invalid(format!("{what} is not a valid {}", T::NAME)));
    }
    Ok(value)
}
