//! The one status enum shared by every capability, and the error type of the
//! safe core.
//!
//! The safe core returns [`Error`]: a [`Status`] naming the kind of failure
//! plus a message precise enough to act on. The C layer turns it into the
//! returned `nnm_status` and the thread-local `nnm_last_error()` text.

#[cfg(feature = "std")]
use std::fmt;

use crate::names::c_enum;

/// Result of every fallible nnmem call. NNM_OK is zero; every other value
/// names a kind of failure, and nnm_last_error() gives the detail.
// The C names are `NNM_` and the variant (NNM_NULL_ARGUMENT): build.rs
// drops the `STATUS_` that cbindgen's qualified renaming puts in between.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Success.
    Ok = 0,
    /// A required pointer argument was NULL.
    NullArgument = 1,
    /// An argument is out of its documented range (zero size, reversed
    /// lifetime, alignment that is not a power of two, unknown name, ...).
    InvalidArgument = 2,
    /// Memory could not be obtained from the system or the device.
    OutOfMemory = 3,
    /// The request does not fit the capacity it was given; the message says
    /// how many bytes were requested, available and missing.
    DoesNotFit = 4,
    /// An integer computation (a size, an offset, a count) would overflow.
    Overflow = 5,
    /// A looked-up item does not exist.
    NotFound = 6,
    /// An item with that name or key already exists.
    AlreadyExists = 7,
    /// The call is not allowed in the object's current state (for example
    /// changing the alignment after buffers were added, planning twice, or
    /// querying before planning).
    WrongState = 8,
    /// The object is in use by another operation.
    Busy = 9,
    /// The operation was cancelled on request.
    Cancelled = 10,
    /// A caller-provided output buffer is too small; the size-query form of
    /// the call (NULL buffer, zero length) says how large it must be.
    BufferTooSmall = 11,
    /// A Rust panic was caught at the C boundary. The library is still usable
    /// but the object involved may be in an unspecified (memory-safe) state.
    Panic = 12,
    /// A guard check found memory written where it must not be: a canary
    /// around an allocation, or released memory written after release. The
    /// message names the allocation and its category.
    Corrupted = 13,
    /// A callback the caller supplied (an operator's workbuffer
    /// initialiser) reported failure; the message names it and the value
    /// it returned.
    CallbackFailed = 14,
}

c_enum! {
    Status, "status",
    value_error(value) => format!("unknown status {value} (0 to {})", Status::ALL.len() - 1),
    {
        Ok = "ok",
        NullArgument = "null argument",
        InvalidArgument = "invalid argument",
        OutOfMemory = "out of memory",
        DoesNotFit = "does not fit",
        Overflow = "integer overflow",
        NotFound = "not found",
        AlreadyExists = "already exists",
        WrongState = "wrong state",
        Busy = "busy",
        Cancelled = "cancelled",
        BufferTooSmall = "buffer too small",
        Panic = "panic caught at the C boundary",
        Corrupted = "memory corruption detected",
        CallbackFailed = "a callback failed",
    }
}

impl Status {
    /// A short, static description of the status (what `nnm_status_str`
    /// returns): its [`c_enum!`] name.
    pub const fn description(self) -> &'static str {
        self.name()
    }

    /// Its C identifier, `NNM_` and the variant in SCREAMING_SNAKE_CASE
    /// (`NNM_NULL_ARGUMENT`), as the header names it.
    #[cfg(feature = "std")]
    pub fn c_identifier(self) -> String {
        let mut id = String::from("NNM_");
        for (i, c) in format!("{self:?}").chars().enumerate() {
            if c.is_ascii_uppercase() && i > 0 {
                id.push('_');
            }
            id.push(c.to_ascii_uppercase());
        }
        id
    }
}

/// An error of the safe core: what kind of failure, and a message that says
/// exactly what was wrong.
#[cfg(feature = "std")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    status: Status,
    message: String,
}

#[cfg(feature = "std")]
impl Error {
    /// Builds an error. `status` must not be [`Status::Ok`].
    pub fn new(status: Status, message: impl Into<String>) -> Self {
        debug_assert!(status != Status::Ok, "an error cannot carry NNM_OK");
        Error { status, message: message.into() }
    }

    /// Shorthand for [`Status::InvalidArgument`].
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::new(Status::InvalidArgument, message)
    }

    /// Shorthand for [`Status::Overflow`].
    pub fn overflow(message: impl Into<String>) -> Self {
        Error::new(Status::Overflow, message)
    }

    /// Shorthand for [`Status::WrongState`].
    pub fn wrong_state(message: impl Into<String>) -> Self {
        Error::new(Status::WrongState, message)
    }

    /// The detailed message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Whether errors carry no message (the embedded build with
/// `strip-messages`): code that only works out a message's figures can
/// skip that work.
pub const MESSAGES_STRIPPED: bool = cfg!(nnmem_stripped);

/// An error of the safe core in the embedded build: the kind of failure.
/// Its message was recorded as the last error when it was made
/// ([`Error::with`]), as the embedded build has no heap to carry it.
#[cfg(not(feature = "std"))]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Error {
    status: Status,
}

impl Error {
    /// Builds an error whose message `describe` writes (figures without a
    /// heap or `core::fmt`): the host keeps the message in the error; the
    /// embedded build records it as the last error at once (with
    /// `strip-messages`, only the status). `status` must not be
    /// [`Status::Ok`].
    ///
    /// Stripped of messages, `describe` is dropped unread and every call
    /// shares one out-of-line [`Error::stripped`], instead of one copy of
    /// the same few instructions per message.
    #[cfg_attr(not(nnmem_stripped), cold, inline(never))]
    #[cfg_attr(nnmem_stripped, inline(always))]
    pub fn with(status: Status, describe: impl FnOnce(&mut dyn crate::message::Text)) -> Self {
        debug_assert!(status != Status::Ok, "an error cannot carry NNM_OK");
        #[cfg(feature = "std")]
        {
            let mut message = String::new();
            describe(&mut message);
            Error { status, message }
        }
        #[cfg(all(not(feature = "std"), not(nnmem_stripped)))]
        {
            crate::message::last::record(status, describe);
            Error { status }
        }
        #[cfg(nnmem_stripped)]
        {
            let _ = describe;
            Error::stripped(status)
        }
    }

    /// The embedded build's error without a message: its status recorded
    /// as the last error.
    #[cfg(nnmem_stripped)]
    #[cold]
    #[inline(never)]
    fn stripped(status: Status) -> Self {
        crate::message::last::record(status, |_| {});
        Error { status }
    }

    /// The kind of failure.
    pub fn status(&self) -> Status {
        self.status
    }
}

#[cfg(feature = "std")]
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status.description(), self.message)
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Error {}

/// Result type of the safe core.
pub type Result<T> = core::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_numbered_in_order() {
        for (i, s) in Status::ALL.iter().enumerate() {
            assert_eq!(Status::from_value(i as u32).unwrap(), *s);
            assert_eq!(*s as usize, i);
            assert!(!s.description().is_empty());
        }
    }

    #[test]
    fn the_header_lists_exactly_these_statuses() {
        // One list: the enum and its c_enum! names (an exhaustive match);
        // the header is generated from the enum. A status missing from
        // either side, renumbered or renamed fails here or does not build.
        let header = include_str!("../include/nnmem/common.h");
        let start = header.find("typedef enum nnm_status {").expect("enum nnm_status in the header");
        let body = &header[start..start + header[start..].find("} nnm_status;").expect("its end")];
        let values: Vec<&str> = body.lines().map(str::trim).filter(|l| l.starts_with("NNM_")).collect();
        let expected: Vec<String> =
            Status::ALL.iter().map(|&s| format!("{} = {},", s.c_identifier(), s as u32)).collect();
        assert_eq!(values, expected);
        assert_eq!(Status::NullArgument.c_identifier(), "NNM_NULL_ARGUMENT");
    }

    #[test]
    fn error_display_names_kind_and_detail() {
        let e = Error::invalid("alignment 3 is not a power of two");
        assert_eq!(e.status(), Status::InvalidArgument);
        assert_eq!(e.to_string(), "invalid argument: alignment 3 is not a power of two");
    }
}
