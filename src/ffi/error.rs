//! Status reporting across the C boundary: the panic-catching wrapper, the
//! last-error text, and the static status strings.
//!
//! The last error is thread-local on the host. The embedded build has no
//! threads to tell apart and no thread-local storage: there the text lives
//! in one static buffer of [`NNM_BARE_ERROR_BYTES`] bytes (longer messages are
//! cut), shared by every caller, so a failing call from an interrupt
//! handler replaces the text of the main loop's last failure. With the
//! `strip-messages` feature (the embedded build only, like TFLite Micro's
//! `TF_LITE_STRIP_ERROR_STRINGS`) no message is kept: the last error is the
//! failing status's name, and the messages' code and text leave the
//! library.

use core::ffi::c_char;
#[cfg(feature = "std")]
use std::cell::RefCell;
#[cfg(feature = "std")]
use std::ffi::CString;
#[cfg(feature = "std")]
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::status::Status;
#[cfg(feature = "std")]
use crate::status::{Error, Result};

#[cfg(feature = "std")]
thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `message` as this thread's last error.
#[cfg(feature = "std")]
pub(crate) fn set_last_error(message: &str) {
    let text = CString::new(message.replace('\0', "\\0")).expect("NULs were replaced");
    LAST_ERROR.with(|e| *e.borrow_mut() = text);
}

/// Bytes of the embedded build's last-error buffer, its NUL included
/// (messages are cut to fit).
pub const NNM_BARE_ERROR_BYTES: usize = 160;
#[cfg(not(feature = "std"))]
const _: () = assert!(NNM_BARE_ERROR_BYTES == crate::message::last::BYTES);

/// Runs `body`, catching panics; records the error of a failure and returns
/// its status, or `NNM_OK`.
///
/// Inlined into every export, with the failure paths out of line and cold:
/// the success path of a cheap call (an arena allocation) stays a handful
/// of instructions around the body.
#[cfg(feature = "std")]
#[inline(always)]
pub(crate) fn guard(body: impl FnOnce() -> Result<()>) -> Status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => Status::Ok,
        Ok(Err(e)) => failed(e),
        Err(payload) => panicked(payload),
    }
}

#[cfg(feature = "std")]
#[cold]
#[inline(never)]
fn failed(e: Error) -> Status {
    set_last_error(e.message());
    e.status()
}

#[cfg(feature = "std")]
#[cold]
#[inline(never)]
fn panicked(payload: Box<dyn std::any::Any + Send>) -> Status {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    set_last_error(&format!("internal panic caught at the C boundary: {what}"));
    Status::Panic
}

/// Like [`guard`] for lookups that return a pointer instead of a status:
/// NULL on failure (error or panic), with the last error set.
#[cfg(feature = "std")]
#[inline]
pub(crate) fn guard_ptr<T>(body: impl FnOnce() -> Result<*mut T>) -> *mut T {
    let mut found = std::ptr::null_mut();
    let status = guard(|| {
        found = body()?;
        Ok(())
    });
    if status == Status::Ok {
        found
    } else {
        std::ptr::null_mut()
    }
}

/// Like [`guard`] for functions that return no status (frees): failures
/// only set the last error.
#[cfg(feature = "std")]
pub(crate) fn guard_void(body: impl FnOnce() -> Result<()>) {
    let _ = guard(body);
}

/// The text of the last failure on the calling thread: what was wrong,
/// precisely enough to act on. Returns "" when nothing has failed yet on
/// this thread. Never NULL.
///
/// The pointer stays valid until the next failing nnmem call on the same
/// thread; copy the text to keep it. Successful calls do not clear it.
///
/// Embedded build: one static buffer of NNM_BARE_ERROR_BYTES bytes (the
/// text cut to fit) shared by every caller, since a bare-metal target has
/// no thread-local storage; the last failure anywhere (an interrupt
/// handler's included) is the one it holds. Built with strip-messages:
/// the failing status's name (nnm_status_str's text).
#[no_mangle]
pub extern "C" fn nnm_last_error() -> *const c_char {
    #[cfg(feature = "std")]
    return LAST_ERROR.with(|e| e.borrow().as_ptr());
    // An AtomicU8 has the size and alignment of a u8: the buffer is a C
    // string, NUL-terminated by its last byte, which is never written.
    #[cfg(not(feature = "std"))]
    return crate::message::last::text();
}

/// A static, human-readable description of a status code; "unknown status"
/// for values outside `nnm_status`. Never NULL; never freed.
#[no_mangle]
pub extern "C" fn nnm_status_str(status: i32) -> *const c_char {
    match usize::try_from(status).ok().and_then(|i| Status::ALL.get(i)) {
        Some(s) => s.name_nul().as_ptr().cast(),
        None => c"unknown status".as_ptr(),
    }
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

    /// The text of a static or thread-local C string nnmem returned.
    fn text(ptr: *const c_char) -> String {
        assert!(!ptr.is_null());
        // SAFETY: every caller passes a string from nnm_status_str,
        // nnm_last_error or nnm_version: NUL-terminated, valid until the
        // next failing call on this thread.
        unsafe { CStr::from_ptr(ptr) }.to_str().unwrap().to_string()
    }

    #[test]
    fn status_strings_match_the_core_descriptions() {
        for &s in Status::ALL {
            assert_eq!(text(nnm_status_str(s as i32)), s.description());
        }
        for unknown in [-1, Status::ALL.len() as i32, i32::MAX, i32::MIN] {
            assert_eq!(text(nnm_status_str(unknown)), "unknown status");
        }
    }

    #[test]
    fn guard_catches_panics_and_records_errors() {
        assert_eq!(guard(|| panic!("boom")), Status::Panic);
        let last = text(nnm_last_error());
        assert!(last.contains("boom"), "{last}");
        assert_eq!(guard(|| Err(Error::invalid("bad thing"))), Status::InvalidArgument);
        assert_eq!(text(nnm_last_error()), "bad thing");
        assert_eq!(guard(|| Ok(())), Status::Ok);
    }

    #[test]
    fn version_matches_cargo() {
        assert_eq!(text(nnm_version()), env!("CARGO_PKG_VERSION"));
    }
}
