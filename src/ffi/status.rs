//! `nnm_status`: the C face of [`crate::Status`], one value per core status
//! with the `NNM_` names C code expects.

use crate::status::Status;

/// Result of every fallible nnmem call. NNM_OK is zero; every other value
/// names a kind of failure, and nnm_last_error() gives the detail.
///
/// cbindgen:rename-all=None
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum nnm_status {
    /// Success.
    NNM_OK = 0,
    /// A required pointer argument was NULL.
    NNM_NULL_ARGUMENT = 1,
    /// An argument is out of its documented range (reversed lifetime,
    /// alignment that is not a power of two, unknown name, ...).
    NNM_INVALID_ARGUMENT = 2,
    /// Memory could not be obtained from the system or the device.
    NNM_OUT_OF_MEMORY = 3,
    /// The request does not fit its capacity; the message says how many
    /// bytes were requested, available and missing.
    NNM_DOES_NOT_FIT = 4,
    /// A size, offset or count computation would overflow.
    NNM_OVERFLOW = 5,
    /// A looked-up item does not exist.
    NNM_NOT_FOUND = 6,
    /// An item with that name or key already exists.
    NNM_ALREADY_EXISTS = 7,
    /// The call is not allowed in the object's current state (adding after
    /// planning without a reset, querying before planning, ...).
    NNM_WRONG_STATE = 8,
    /// The object is in use by another operation.
    NNM_BUSY = 9,
    /// The operation was cancelled on request.
    NNM_CANCELLED = 10,
    /// A caller-provided output buffer is too small; the size-query form of
    /// the call (NULL buffer, zero length) says how large it must be.
    NNM_BUFFER_TOO_SMALL = 11,
    /// A Rust panic was caught at the C boundary; the object involved may be
    /// in an unspecified (but memory-safe) state.
    NNM_PANIC = 12,
    /// A guard check found a damaged canary or a write to released memory;
    /// the message names the allocation and its category.
    NNM_CORRUPTED = 13,
}

impl From<Status> for nnm_status {
    fn from(s: Status) -> Self {
        match s {
            Status::Ok => nnm_status::NNM_OK,
            Status::NullArgument => nnm_status::NNM_NULL_ARGUMENT,
            Status::InvalidArgument => nnm_status::NNM_INVALID_ARGUMENT,
            Status::OutOfMemory => nnm_status::NNM_OUT_OF_MEMORY,
            Status::DoesNotFit => nnm_status::NNM_DOES_NOT_FIT,
            Status::Overflow => nnm_status::NNM_OVERFLOW,
            Status::NotFound => nnm_status::NNM_NOT_FOUND,
            Status::AlreadyExists => nnm_status::NNM_ALREADY_EXISTS,
            Status::WrongState => nnm_status::NNM_WRONG_STATE,
            Status::Busy => nnm_status::NNM_BUSY,
            Status::Cancelled => nnm_status::NNM_CANCELLED,
            Status::BufferTooSmall => nnm_status::NNM_BUFFER_TOO_SMALL,
            Status::Panic => nnm_status::NNM_PANIC,
            Status::Corrupted => nnm_status::NNM_CORRUPTED,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_values_equal_core_values() {
        for s in Status::ALL {
            assert_eq!(nnm_status::from(s) as i32, s as i32);
        }
    }
}
