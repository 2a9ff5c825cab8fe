//! The one status enum shared by every capability, and the error type of the
//! safe core.
//!
//! The safe core returns [`Error`]: a [`Status`] naming the kind of failure
//! plus a message precise enough to act on. The C layer turns it into the
//! returned `nnm_status` and the thread-local `nnm_last_error()` text.

use std::fmt;

/// Result of every fallible nnmem call. `NNM_OK` is zero; every other value
/// names a kind of failure, and `nnm_last_error()` gives the detail.
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
    /// adding buffers after planning without a reset, or querying before
    /// planning).
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
}

impl Status {
    /// A short, static description of the status.
    pub const fn description(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::NullArgument => "null argument",
            Status::InvalidArgument => "invalid argument",
            Status::OutOfMemory => "out of memory",
            Status::DoesNotFit => "does not fit",
            Status::Overflow => "integer overflow",
            Status::NotFound => "not found",
            Status::AlreadyExists => "already exists",
            Status::WrongState => "wrong state",
            Status::Busy => "busy",
            Status::Cancelled => "cancelled",
            Status::BufferTooSmall => "buffer too small",
            Status::Panic => "panic caught at the C boundary",
            Status::Corrupted => "memory corruption detected",
        }
    }

    /// All statuses, in numeric order (used by tests and the C status table).
    pub const ALL: [Status; 14] = [
        Status::Ok,
        Status::NullArgument,
        Status::InvalidArgument,
        Status::OutOfMemory,
        Status::DoesNotFit,
        Status::Overflow,
        Status::NotFound,
        Status::AlreadyExists,
        Status::WrongState,
        Status::Busy,
        Status::Cancelled,
        Status::BufferTooSmall,
        Status::Panic,
        Status::Corrupted,
    ];
}

/// An error of the safe core: what kind of failure, and a message that says
/// exactly what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    status: Status,
    message: String,
}

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

    /// The kind of failure.
    pub fn status(&self) -> Status {
        self.status
    }

    /// The detailed message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status.description(), self.message)
    }
}

impl std::error::Error for Error {}

/// Result type of the safe core.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_numbered_in_order() {
        for (i, s) in Status::ALL.iter().enumerate() {
            assert_eq!(*s as usize, i);
            assert!(!s.description().is_empty());
        }
    }

    #[test]
    fn error_display_names_kind_and_detail() {
        let e = Error::invalid("alignment 3 is not a power of two");
        assert_eq!(e.status(), Status::InvalidArgument);
        assert_eq!(e.to_string(), "invalid argument: alignment 3 is not a power of two");
    }
}
