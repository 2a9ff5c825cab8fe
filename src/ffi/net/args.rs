//! Argument helpers the net's exports need beyond `ffi::args`: byte-string
//! names, bounded dimension arrays, single in/in-out values, and
//! out-parameters that may point into what the call changes. Generic:
//! candidates for `ffi::args`.

use std::ffi::{c_char, CStr};

use crate::ffi::args::{non_null, opt_out_param, slice_in, slice_out};
use crate::status::{Error, Result};

/// A name argument: its bytes up to the NUL, unchecked (the net's name
/// index says what is wrong with a name, with the name in the message).
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string, unchanged while the
/// result is used.
#[inline]
pub(super) unsafe fn name_arg<'a>(name: *const c_char) -> Result<&'a [u8]> {
    non_null(name, "name")?;
    // SAFETY: non-NULL, and the caller promises a NUL-terminated string.
    Ok(unsafe { CStr::from_ptr(name) }.to_bytes())
}

/// The dimensions argument: `ndims` (at most `max`) values at `dims`,
/// which may be NULL when `ndims` is 0.
///
/// # Safety
/// `dims` must be NULL or, when `ndims <= max`, valid for reading `ndims`
/// values, unchanged while the result is used.
#[inline]
pub(super) unsafe fn dims_arg<'a>(dims: *const u32, ndims: u32, max: usize) -> Result<&'a [u32]> {
    if ndims as usize > max {
        return Err(Error::invalid(format!("ndims {ndims}: at most {max}")));
    }
    if ndims == 0 {
        return Ok(&[]);
    }
    // SAFETY: the caller promises `ndims` readable values at `dims`.
    unsafe { slice_in(dims, ndims as usize, "dims") }
}

/// The value an in-argument points to: NULL fails with NULL_ARGUMENT
/// naming `what`, a misaligned pointer with INVALID_ARGUMENT.
///
/// # Safety
/// `ptr` must be NULL or valid for reading a `T`, not written while the
/// result is used.
#[inline(always)]
pub(super) unsafe fn one<'a, T>(ptr: *const T, what: &str) -> Result<&'a T> {
    // SAFETY: the caller's promise is `slice_in`'s for one value.
    Ok(&unsafe { slice_in(ptr, 1, what) }?[0])
}

/// The value an in-out argument points to, checked as [`one`].
///
/// # Safety
/// `ptr` must be NULL or valid for reading and writing a `T` that nothing
/// else uses while the result is used.
#[inline(always)]
pub(super) unsafe fn one_mut<'a, T>(ptr: *mut T, what: &str) -> Result<&'a mut T> {
    // SAFETY: the caller's promise is `slice_out`'s for one value.
    Ok(&mut unsafe { slice_out(ptr, 1, what) }?[0])
}

/// Runs `change`, then writes its result to the out-parameter `out` (none
/// when `out` is NULL; a call that requires it checks that first). `out`
/// is checked before `change` runs, so that a failed call changes
/// nothing, but borrowed only after it: it may point into what `change`
/// changes (C may pop a cache's tensor into one of its own slots).
///
/// # Safety
/// `out` must be NULL or valid for writing a `T`, used by nothing else
/// once `change` has returned.
#[inline(always)]
pub(super) unsafe fn write_after<T>(out: *mut T, what: &str, change: impl FnOnce() -> Result<T>) -> Result<()> {
    // SAFETY: the caller promises `out` is NULL or writable; this borrow
    // (for the checks) ends before `change` runs.
    unsafe { opt_out_param(out, what) }?;
    let value = change()?;
    // SAFETY: as above; `change` has returned, so nothing else uses `out`.
    if let Some(out) = unsafe { opt_out_param(out, what) }? {
        out.write(value);
    }
    Ok(())
}
