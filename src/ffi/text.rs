//! Text handed to C: into a caller buffer `(buf, len, &written)` with a
//! size query, or line by line through a caller callback.

use std::ffi::{c_char, c_void, CString};

use super::args::{non_null, null_argument, out_param, slice_out};
use crate::status::{Error, Result, Status};

/// A callback receiving text: `text` points to `len` bytes followed by a
/// NUL (so it can go straight to `printf("%s")`), valid only during the
/// call. `user` is the pointer given with the callback.
pub type nnm_write_fn = Option<unsafe extern "C" fn(user: *mut c_void, text: *const c_char, len: usize)>;

/// Copies `text` and a NUL into `buf` (`len` bytes) and writes the bytes
/// written (NUL included) to `out_written`. With `buf` NULL and `len` 0 it
/// only writes the bytes needed. `what` names the text in messages.
///
/// # Safety
/// `buf` must be NULL or valid for `len` bytes of writes; `out_written`
/// must be NULL or valid for a write.
pub(crate) unsafe fn copy_text(
    text: &str,
    buf: *mut c_char,
    len: usize,
    out_written: *mut usize,
    what: &str,
) -> Result<()> {
    // SAFETY: the caller promises `out_written` is NULL or writable.
    let out = unsafe { out_param(out_written, "out_written") }?;
    let needed = text.len() + 1;
    if buf.is_null() && len == 0 {
        out.write(needed);
        return Ok(());
    }
    non_null(buf, "buf")?;
    if len < needed {
        return Err(Error::new(
            Status::BufferTooSmall,
            format!("{what} needs {needed} B (NUL included), buffer has {len} B"),
        ));
    }
    // SAFETY: the caller promises `buf` is writable for `len` >= `needed`
    // bytes; c_char and u8 have the same size and alignment.
    let dst = unsafe { slice_out(buf.cast::<u8>(), needed, "buf") }?;
    dst[..text.len()].copy_from_slice(text.as_bytes());
    dst[text.len()] = 0;
    out.write(needed);
    Ok(())
}

/// Calls `write` once per line of `text` (each with its '\n').
///
/// # Safety
/// `write` must be safe to call with `user` and a NUL-terminated line.
pub(crate) unsafe fn emit_lines(text: &str, write: nnm_write_fn, user: *mut c_void) -> Result<()> {
    let write = write.ok_or_else(|| null_argument("write"))?;
    for line in text.split_inclusive('\n') {
        let c = CString::new(line).map_err(|_| Error::invalid("report text contains a NUL byte"))?;
        // SAFETY: the caller promises `write` may be called with `user`; the
        // line is NUL-terminated and lives until the call returns.
        unsafe { write(user, c.as_ptr(), line.len()) };
    }
    Ok(())
}
