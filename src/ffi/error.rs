//! Status reporting across the C boundary: the panic-catching wrapper, the
//! thread-local last-error text, and the static status strings.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::status::nnm_status;
use crate::status::{Error, Result, Status};

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `message` as this thread's last error.
pub(crate) fn set_last_error(message: &str) {
    let text = CString::new(message.replace('\0', "\\0")).expect("NULs were replaced");
    LAST_ERROR.with(|e| *e.borrow_mut() = text);
}

/// Runs `body`, catching panics; records the error of a failure and returns
/// its status, or `NNM_OK`.
///
/// Inlined into every export, with the failure paths out of line and cold:
/// the success path of a cheap call (an arena allocation) stays a handful
/// of instructions around the body.
#[inline(always)]
pub(crate) fn guard(body: impl FnOnce() -> Result<()>) -> nnm_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => nnm_status::NNM_OK,
        Ok(Err(e)) => failed(e),
        Err(payload) => panicked(payload),
    }
}

#[cold]
#[inline(never)]
fn failed(e: Error) -> nnm_status {
    set_last_error(e.message());
    e.status().into()
}

#[cold]
#[inline(never)]
fn panicked(payload: Box<dyn std::any::Any + Send>) -> nnm_status {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    set_last_error(&format!("internal panic caught at the C boundary: {what}"));
    nnm_status::NNM_PANIC
}

/// Like [`guard`] for lookups that return a pointer instead of a status:
/// NULL on failure (error or panic), with the last error set.
#[inline]
pub(crate) fn guard_ptr<T>(body: impl FnOnce() -> Result<*mut T>) -> *mut T {
    let mut found = std::ptr::null_mut();
    let status = guard(|| {
        found = body()?;
        Ok(())
    });
    if status == nnm_status::NNM_OK {
        found
    } else {
        std::ptr::null_mut()
    }
}

/// Like [`guard`] for functions that return no status (frees): failures
/// only set the last error.
pub(crate) fn guard_void(body: impl FnOnce() -> Result<()>) {
    let _ = guard(body);
}

/// Fails with `NullArgument` naming `what` when `ptr` is NULL. The message
/// is built out of line, so the check costs a compare on the happy path.
#[inline]
pub(crate) fn non_null<T>(ptr: *const T, what: &str) -> Result<()> {
    if ptr.is_null() {
        return Err(null_argument(what));
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn null_argument(what: &str) -> Error {
    Error::new(Status::NullArgument, format!("{what} is NULL"))
}

/// Writes `value` to the out-parameter `out` (already checked non-NULL).
///
/// # Safety
/// `out` must be valid for writes of `T` (alignment included).
pub(crate) unsafe fn write_out<T>(out: *mut T, value: T) {
    out.write(value);
}

/// Reads a NUL-terminated UTF-8 string argument.
///
/// # Safety
/// `ptr` must be NULL or point to a NUL-terminated string.
pub(crate) unsafe fn read_str<'a>(ptr: *const c_char, what: &str) -> Result<&'a str> {
    non_null(ptr, what)?;
    std::ffi::CStr::from_ptr(ptr).to_str().map_err(|_| Error::invalid(format!("{what} is not valid UTF-8")))
}

/// The text of the last failure on the calling thread: what was wrong,
/// precisely enough to act on. Returns "" when nothing has failed yet on
/// this thread. Never NULL.
///
/// The pointer stays valid until the next failing nnmem call on the same
/// thread; copy the text to keep it. Successful calls do not clear it.
#[no_mangle]
pub extern "C" fn nnm_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

static STATUS_STRINGS: [&str; 14] = [
    "ok\0",
    "null argument\0",
    "invalid argument\0",
    "out of memory\0",
    "does not fit\0",
    "integer overflow\0",
    "not found\0",
    "already exists\0",
    "wrong state\0",
    "busy\0",
    "cancelled\0",
    "buffer too small\0",
    "panic caught at the C boundary\0",
    "memory corruption detected\0",
];

/// A static, human-readable description of a status code; "unknown status"
/// for values outside `nnm_status`. Never NULL; never freed.
#[no_mangle]
pub extern "C" fn nnm_status_str(status: i32) -> *const c_char {
    let text = usize::try_from(status).ok().and_then(|i| STATUS_STRINGS.get(i)).copied().unwrap_or("unknown status\0");
    text.as_ptr().cast()
}

/// The runtime library version, "MAJOR.MINOR.PATCH"; equals
/// `NNM_VERSION_STRING` of the header it was built with. Never NULL.
#[no_mangle]
pub extern "C" fn nnm_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn status_strings_match_the_core_descriptions() {
        for s in Status::ALL {
            let text = unsafe { CStr::from_ptr(nnm_status_str(s as i32)) }.to_str().unwrap();
            assert_eq!(text, s.description());
        }
        let unknown = unsafe { CStr::from_ptr(nnm_status_str(-1)) };
        assert_eq!(unknown.to_str().unwrap(), "unknown status");
    }

    #[test]
    fn guard_catches_panics_and_records_errors() {
        assert_eq!(guard(|| panic!("boom")), nnm_status::NNM_PANIC);
        let text = unsafe { CStr::from_ptr(nnm_last_error()) }.to_str().unwrap().to_string();
        assert!(text.contains("boom"), "{text}");
        assert_eq!(guard(|| Err(Error::invalid("bad thing"))), nnm_status::NNM_INVALID_ARGUMENT);
        assert_eq!(unsafe { CStr::from_ptr(nnm_last_error()) }.to_str().unwrap(), "bad thing");
        assert_eq!(guard(|| Ok(())), nnm_status::NNM_OK);
    }

    #[test]
    fn version_matches_cargo() {
        let v = unsafe { CStr::from_ptr(nnm_version()) }.to_str().unwrap();
        assert_eq!(v, env!("CARGO_PKG_VERSION"));
    }
}
