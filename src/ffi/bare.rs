//! The heap-free part of the C boundary, for exports that exist in the
//! embedded build too: their failures (a NULL argument, or what the safe
//! core refused) described without a heap, the guard that records them,
//! and the out-parameter writes. On the host the guard is the usual one
//! (panics caught); in the embedded build a panic cannot unwind (its
//! handler traps, see `panic_handler`), and none is reachable from these
//! exports on any input.

use core::ptr::NonNull;

use crate::message::Text;
use crate::plan::scratch::ScratchError;
use crate::status::Status;

/// Why a heap-free export failed.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Failure {
    /// A required pointer argument was NULL; names it.
    Null(&'static str),
    /// A pointer argument that is not aligned for what it points to.
    Misaligned(&'static str, usize),
    /// A byte count that runs past the end of the address space.
    Wraps(&'static str, usize),
    /// What the scratch planner refused.
    Scratch(ScratchError),
}

impl From<ScratchError> for Failure {
    fn from(e: ScratchError) -> Self {
        Failure::Scratch(e)
    }
}

impl Failure {
    fn status(&self) -> Status {
        match self {
            Failure::Null(_) => Status::NullArgument,
            Failure::Misaligned(..) => Status::InvalidArgument,
            Failure::Wraps(..) => Status::Overflow,
            Failure::Scratch(e) => e.status(),
        }
    }

    #[cfg_attr(all(not(feature = "std"), feature = "strip-messages"), allow(dead_code))]
    fn describe(&self, out: &mut dyn Text) {
        match *self {
            Failure::Null(what) => {
                out.put(what);
                out.put(" is NULL");
            }
            Failure::Misaligned(what, align) => {
                out.put(what);
                out.put(" is not aligned to ");
                out.number(align);
                out.put(" bytes");
            }
            Failure::Wraps(what, bytes) => {
                out.put(what);
                out.put(": ");
                out.number(bytes);
                out.put(" B from its address run past the end of the address space");
            }
            Failure::Scratch(e) => e.describe(&mut Dyn(out)),
        }
    }
}

/// A `dyn Text` as a sized one, for the core's generic describers.
struct Dyn<'a>(&'a mut dyn Text);

impl Text for Dyn<'_> {
    fn put(&mut self, piece: &str) {
        self.0.put(piece);
    }
}

/// Runs `body`; records a failure's message as the last error and returns
/// its status, or `NNM_OK`. On the host a panic is caught too (status
/// `NNM_PANIC`).
#[inline(always)]
pub(crate) fn run(body: impl FnOnce() -> Result<(), Failure>) -> Status {
    #[cfg(feature = "std")]
    {
        super::error::guard(|| {
            body().map_err(|f| {
                let mut message = String::new();
                f.describe(&mut message);
                crate::status::Error::new(f.status(), message)
            })
        })
    }
    #[cfg(not(feature = "std"))]
    match body() {
        Ok(()) => Status::Ok,
        Err(f) => failed(f),
    }
}

#[cfg(not(feature = "std"))]
#[cold]
#[inline(never)]
fn failed(f: Failure) -> Status {
    let status = f.status();
    crate::message::last::record(status, |out| f.describe(out));
    status
}

/// NULL_ARGUMENT naming `what` ("out_ptr is NULL"): the message of every
/// export's NULL check, in both builds.
#[cfg_attr(not(nnmem_stripped), cold, inline(never))]
#[cfg_attr(nnmem_stripped, inline(always))]
pub(crate) fn null_argument(what: &str) -> crate::status::Error {
    crate::status::Error::with(Status::NullArgument, |t| {
        t.put(what);
        t.put(" is NULL");
    })
}

/// INVALID_ARGUMENT for the pointer argument `what` at `addr`, not aligned
/// to `align` bytes.
#[cfg_attr(not(nnmem_stripped), cold, inline(never))]
#[cfg_attr(nnmem_stripped, inline(always))]
pub(crate) fn misaligned(addr: usize, align: usize, what: &str) -> crate::status::Error {
    crate::status::Error::with(Status::InvalidArgument, |t| {
        t.put(what);
        t.put(" (");
        t.hex(addr);
        t.put(") is not aligned to ");
        t.number(align);
        t.put(" bytes");
    })
}

/// `ptr` as non-NULL, or the failure naming `what`.
#[inline]
pub(crate) fn non_null<T>(ptr: *mut T, what: &'static str) -> Result<NonNull<T>, Failure> {
    NonNull::new(ptr).ok_or(Failure::Null(what))
}

/// The C array `(ptr, len)` of `u32`s as a slice: NULL only with `len` 0,
/// aligned, its bytes within the address space.
///
/// # Safety
/// When `ptr` is not NULL it must be valid for reads of `len` `u32`s, not
/// written elsewhere while the slice is used.
pub(crate) unsafe fn words_in<'a>(ptr: *const u32, len: usize, what: &'static str) -> Result<&'a [u32], Failure> {
    let bytes = len.checked_mul(4).filter(|&b| b <= isize::MAX as usize).ok_or(Failure::Wraps(what, usize::MAX))?;
    if ptr.is_null() {
        return if len == 0 { Ok(&[]) } else { Err(Failure::Null(what)) };
    }
    if !ptr.is_aligned() {
        return Err(Failure::Misaligned(what, 4));
    }
    if (ptr as usize).checked_add(bytes).is_none() {
        return Err(Failure::Wraps(what, bytes));
    }
    // SAFETY: non-NULL, aligned, within the address space; the caller
    // promises `len` readable u32s not written meanwhile.
    Ok(unsafe { core::slice::from_raw_parts(ptr, len) })
}

/// Writes `value` through the out-parameter `out` (checked non-NULL).
///
/// # Safety
/// `out` must be valid for one write of `T` and aligned.
#[inline]
pub(crate) unsafe fn write_out<T>(out: NonNull<T>, value: T) {
    // SAFETY: the caller's promise: valid and aligned for one write.
    unsafe { out.as_ptr().write(value) }
}
