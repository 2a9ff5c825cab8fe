//! The audited conversions from C arguments to typed Rust values: slices
//! in and out, strings in, out-parameters, and static names out. Exports
//! convert their raw pointers here, once, at the top, and then work on
//! references; every check an export needs (NULL, alignment, size overflow)
//! lives in one of these functions, with the message naming the argument.

use std::ffi::{c_char, c_void, CStr};
use std::mem::{align_of, size_of, MaybeUninit};

use super::error::guard;
use super::handle::{value_mut, value_ref, HandleType};
use crate::names::CEnum;
use crate::pool::{DevicePtr, Stream};
use crate::status::{Error, Result, Status};

/// Fails with `NullArgument` naming `what` when `ptr` is NULL. The message
/// is built out of line, so the check costs a compare on the happy path.
#[inline]
pub(crate) fn non_null<T>(ptr: *const T, what: &str) -> Result<()> {
    if ptr.is_null() {
        return Err(null_argument(what));
    }
    Ok(())
}

pub(crate) use super::bare::null_argument;

/// INVALID_ARGUMENT: `ptr` (named `what`) is not aligned for a `T`.
fn misaligned<T>(ptr: *const T, what: &str) -> Error {
    super::bare::misaligned(ptr as usize, align_of::<T>(), what)
}

#[cold]
#[inline(never)]
fn too_long<T>(len: usize, what: &str) -> Error {
    Error::overflow(format!("{what}: {len} elements of {} B each exceed the address space", size_of::<T>()))
}

/// Checks `(ptr, len)` as a C array of `len` `T`s: `len * size_of::<T>()`
/// at most `isize::MAX` bytes, then NULL only with `len` 0, then aligned.
/// Returns the pointer to use (dangling but aligned for an empty array).
#[inline]
fn checked_array<T>(ptr: *const T, len: usize, what: &str) -> Result<*const T> {
    match len.checked_mul(size_of::<T>()) {
        Some(bytes) if bytes <= isize::MAX as usize => {}
        _ => return Err(too_long::<T>(len, what)),
    }
    if ptr.is_null() {
        return if len == 0 { Ok(std::ptr::NonNull::dangling().as_ptr()) } else { Err(null_argument(what)) };
    }
    if !ptr.is_aligned() {
        return Err(misaligned(ptr, what));
    }
    Ok(ptr)
}

/// The C array `(ptr, len)` as a slice. NULL is allowed only with `len` 0
/// (an empty slice); `len * size_of::<T>()` must not overflow (`Overflow`,
/// naming `what`); `ptr` must be aligned for `T`.
///
/// # Safety
/// When `ptr` is not NULL it must be valid for reads of `len` initialised
/// `T`s, not written elsewhere while the slice is used.
#[inline]
pub(crate) unsafe fn slice_in<'a, T>(ptr: *const T, len: usize, what: &str) -> Result<&'a [T]> {
    let ptr = checked_array(ptr, len, what)?;
    // SAFETY: `checked_array` made `ptr` non-NULL and aligned with a size
    // within isize::MAX (dangling is fine for len 0); the caller promises it
    // is readable for `len` values and not mutated meanwhile.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// The caller's output array `(ptr, len)` as a mutable slice, checked as
/// [`slice_in`].
///
/// # Safety
/// When `ptr` is not NULL it must be valid for reads and writes of `len`
/// initialised `T`s, used by nothing else while the slice is used.
#[inline]
pub(crate) unsafe fn slice_out<'a, T>(ptr: *mut T, len: usize, what: &str) -> Result<&'a mut [T]> {
    let ptr = checked_array(ptr, len, what)?.cast_mut();
    // SAFETY: as in `slice_in`; the caller promises exclusive access.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, len) })
}

/// Reads a NUL-terminated UTF-8 string argument.
///
/// # Safety
/// `ptr` must be NULL or point to a NUL-terminated string that stays
/// unchanged while the result is used.
pub(crate) unsafe fn read_str<'a>(ptr: *const c_char, what: &str) -> Result<&'a str> {
    non_null(ptr, what)?;
    // SAFETY: non-NULL, and the caller promises a NUL-terminated string.
    let text = unsafe { CStr::from_ptr(ptr) };
    text.to_str().map_err(|_| Error::invalid(format!("{what} is not valid UTF-8")))
}

/// Reads an optional NUL-terminated UTF-8 string argument: `None` for NULL.
///
/// # Safety
/// As [`read_str`].
pub(crate) unsafe fn opt_str<'a>(ptr: *const c_char, what: &str) -> Result<Option<&'a str>> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller's promise is `read_str`'s.
    unsafe { read_str(ptr, what) }.map(Some)
}

/// A checked out-parameter: written at most once, by [`Out::write`], after
/// the export's work succeeded (so failures leave it untouched).
pub(crate) struct Out<'a, T>(&'a mut MaybeUninit<T>);

impl<T> Out<'_, T> {
    /// Writes the result (without dropping what the C memory held).
    #[inline]
    pub(crate) fn write(self, value: T) {
        self.0.write(value);
    }
}

/// A required out-parameter: NULL fails with `NullArgument` naming `what`;
/// a misaligned one with `InvalidArgument`.
///
/// # Safety
/// When `ptr` is not NULL it must be valid for a write of `T` and not used
/// elsewhere until the `Out` is dropped.
#[inline]
pub(crate) unsafe fn out_param<'a, T>(ptr: *mut T, what: &str) -> Result<Out<'a, T>> {
    non_null(ptr, what)?;
    // SAFETY: as `opt_out_param`'s, for a non-NULL pointer.
    Ok(unsafe { opt_out_param(ptr, what) }?.expect("checked non-NULL"))
}

/// An optional out-parameter: `None` for NULL (the caller does not want
/// that result); a misaligned one fails with `InvalidArgument`.
///
/// # Safety
/// As [`out_param`].
#[inline]
pub(crate) unsafe fn opt_out_param<'a, T>(ptr: *mut T, what: &str) -> Result<Option<Out<'a, T>>> {
    if ptr.is_null() {
        return Ok(None);
    }
    if !ptr.is_aligned() {
        return Err(misaligned(ptr, what));
    }
    // SAFETY: non-NULL and aligned; the caller promises it is writable and
    // exclusively ours. MaybeUninit asks nothing of the current contents.
    Ok(Some(Out(unsafe { &mut *ptr.cast::<MaybeUninit<T>>() })))
}

/// The static NUL-terminated name of the C value `value` of `E` (for the
/// `nnm_*_name` exports), or NULL for a value `E` does not have.
#[inline]
pub(crate) fn c_name<E: CEnum>(value: u32) -> *const c_char {
    usize::try_from(value).ok().and_then(|i| E::ALL.get(i)).map_or(std::ptr::null(), |e| e.c_name_ptr())
}

/// The shape of a getter export: checks the handle (NULL, registry, tag)
/// and the out-parameter, runs `query`, and writes its value only when it
/// succeeded. Returns the status, errors recorded.
///
/// # Safety
/// `handle` must be NULL, freed, or a live handle no call changes
/// meanwhile; `out` must be NULL or valid for a write of `T`.
#[inline(always)]
pub(crate) unsafe fn handle_query<H: HandleType, T>(
    handle: *const H,
    what: &str,
    out: *mut T,
    out_what: &str,
    query: impl FnOnce(&H) -> Result<T>,
) -> Status {
    guard(|| {
        // SAFETY: the caller's promises are `value_ref`'s and `out_param`'s.
        let (h, out) = unsafe { (value_ref(handle, what)?, out_param(out, out_what)?) };
        out.write(query(h)?);
        Ok(())
    })
}

/// The shape of a setter export: checks the handle (NULL, registry, tag)
/// and runs `update` on it.
///
/// # Safety
/// `handle` must be NULL, freed, or a live handle no other call uses
/// meanwhile.
#[inline(always)]
pub(crate) unsafe fn handle_update<H: HandleType>(
    handle: *mut H,
    what: &str,
    update: impl FnOnce(&mut H) -> Result<()>,
) -> Status {
    guard(|| {
        // SAFETY: the caller's promise is `value_mut`'s.
        update(unsafe { value_mut(handle, what) }?)
    })
}

/// A C stream handle (`cudaStream_t`, or any queue handle; NULL is the
/// default stream) as the core's opaque stream value: never dereferenced.
#[inline(always)]
pub(crate) fn stream_of(stream: *mut c_void) -> Stream {
    Stream(stream as usize)
}

/// A pointer handed back by C, as a device address (NULL refused, naming
/// `what`); only compared and looked up, never dereferenced.
#[inline(always)]
pub(crate) fn device_ptr(ptr: *mut c_void, what: &str) -> Result<DevicePtr> {
    non_null(ptr, what)?;
    Ok(DevicePtr::new(ptr.cast()).expect("checked non-NULL"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Algorithm;

    #[test]
    fn slices_take_null_only_when_empty() {
        // SAFETY: NULL with length 0 is allowed and never read.
        assert!(unsafe { slice_in::<u64>(std::ptr::null(), 0, "sizes") }.unwrap().is_empty());
        // SAFETY: as above.
        assert!(unsafe { slice_out::<u32>(std::ptr::null_mut(), 0, "out") }.unwrap().is_empty());
        // SAFETY: NULL is refused before any read.
        let e = unsafe { slice_in::<u64>(std::ptr::null(), 3, "sizes") }.unwrap_err();
        assert_eq!((e.status(), e.message()), (Status::NullArgument, "sizes is NULL"));
        let values = [1u64, 2, 3];
        // SAFETY: `values` is readable for 3 values.
        assert_eq!(unsafe { slice_in(values.as_ptr(), 3, "sizes") }.unwrap(), &values);
        let mut out = [0u32; 2];
        // SAFETY: `out` is writable for 2 values.
        unsafe { slice_out(out.as_mut_ptr(), 2, "out") }.unwrap()[1] = 7;
        assert_eq!(out, [0, 7]);
    }

    #[test]
    fn slice_sizes_that_overflow_are_refused_naming_the_argument() {
        let x = 0u64;
        for len in [usize::MAX, usize::MAX / 8 + 1, isize::MAX as usize / 8 + 1] {
            // SAFETY: refused before any read.
            let e = unsafe { slice_in(&x as *const u64, len, "dims") }.unwrap_err();
            assert_eq!(e.status(), Status::Overflow, "{len}");
            assert_eq!(e.message(), format!("dims: {len} elements of 8 B each exceed the address space"));
        }
        let bytes = [0u8; 16];
        let odd = bytes.as_ptr().wrapping_add(1).cast::<u64>();
        // SAFETY: refused before any read.
        let e = unsafe { slice_in(odd, 1, "dims") }.unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.message().starts_with("dims (") && e.message().ends_with(") is not aligned to 8 bytes"), "{e}");
    }

    #[test]
    fn out_params_are_written_only_through_write() {
        let mut v = 5u64;
        // SAFETY: `v` is writable.
        let out = unsafe { out_param(&mut v as *mut u64, "out_value") }.unwrap();
        out.write(9);
        assert_eq!(v, 9);
        // SAFETY: NULL is refused.
        let e = unsafe { out_param::<u64>(std::ptr::null_mut(), "out_value") }.err().unwrap();
        assert_eq!((e.status(), e.message()), (Status::NullArgument, "out_value is NULL"));
        // SAFETY: NULL means "not wanted".
        assert!(unsafe { opt_out_param::<u64>(std::ptr::null_mut(), "out_value") }.unwrap().is_none());
    }

    #[test]
    fn strings_are_checked() {
        // SAFETY: a NUL-terminated literal.
        assert_eq!(unsafe { read_str(c"exact".as_ptr(), "name") }.unwrap(), "exact");
        // SAFETY: NULL is refused.
        assert_eq!(unsafe { read_str(std::ptr::null(), "name") }.unwrap_err().message(), "name is NULL");
        let bad = [0xffu8, 0];
        // SAFETY: NUL-terminated.
        let e = unsafe { read_str(bad.as_ptr().cast(), "name") }.unwrap_err();
        assert_eq!(e.message(), "name is not valid UTF-8");
    }

    #[test]
    fn c_names_are_static_and_null_past_the_end() {
        for &a in Algorithm::ALL {
            // SAFETY: c_name gives a static NUL-terminated string.
            assert_eq!(unsafe { CStr::from_ptr(c_name::<Algorithm>(a as u32)) }.to_str().unwrap(), a.name());
        }
        assert!(c_name::<Algorithm>(Algorithm::ALL.len() as u32).is_null());
        assert!(c_name::<Algorithm>(u32::MAX).is_null());
    }
}
