//! C API of cancellation tokens (`nnm_cancel_token_*`): a flag one thread
//! sets to stop a search running on another.

use super::args::out_param;
use super::error::{guard, guard_void};
use super::handle::{free_handle, into_handle, value_ref, HandleType};
use crate::cancel::CancelToken;
use crate::status::Status;

/// A cancellation flag. Thread-safe: `nnm_cancel_token_cancel`,
/// `nnm_cancel_token_reset` and `nnm_cancel_token_is_cancelled` may be
/// called from any thread at any time, also while a planner that holds the
/// token is planning. The token may be freed before the planners it was set
/// on (but not while another thread still calls it): freeing detaches it,
/// and their later plans run as with no token, even if it was cancelled.
/// A token must not be freed while an `nnm_exec_pool_acquire` waits with
/// it.
/// Every `nnm_cancel_token_*` call and `nnm_planner_set_cancel_token` check
/// that the token is live: on a freed token they return INVALID_ARGUMENT
/// without reading it (unless a new token took over its address: that is
/// the token they act on).
pub struct nnm_cancel_token {
    pub(crate) token: CancelToken,
}

// SAFETY: no other handle type is named "nnm_cancel_token".
unsafe impl HandleType for nnm_cancel_token {
    const NAME: &'static str = "nnm_cancel_token";
}

/// Borrows the token behind a handle (NULL, liveness and type checked).
///
/// # Safety
/// `token` must be NULL, a freed token, or a live token.
#[inline]
pub(crate) unsafe fn token_ref<'a>(token: *const nnm_cancel_token) -> crate::Result<&'a nnm_cancel_token> {
    // SAFETY: the caller's promise is `value_ref`'s; a token is only read
    // through shared references (its flag is atomic).
    unsafe { value_ref(token, "token") }
}

/// Creates a token, not cancelled. Free it with `nnm_cancel_token_free`.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `out_token` must be NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_cancel_token_new(out_token: *mut *mut nnm_cancel_token) -> Status {
    guard(|| {
        // SAFETY: the caller promises `out_token` is NULL or writable.
        let out = unsafe { out_param(out_token, "out_token") }?;
        out.write(into_handle(nnm_cancel_token { token: CancelToken::new() }));
        Ok(())
    })
}

/// Frees a token and detaches it from every planner it was set on. NULL is
/// a no-op; a double free is detected and reported through
/// `nnm_last_error()`.
///
/// # Safety
/// `token` may be any pointer value: only a live token is freed, others
/// are reported. No other thread may be using the token.
#[no_mangle]
pub unsafe extern "C" fn nnm_cancel_token_free(token: *mut nnm_cancel_token) {
    // SAFETY: `free_handle` frees only what the registry holds as a live
    // token; the caller promises nobody else is using it.
    guard_void(|| unsafe { free_handle(token) })
}

/// Sets the flag: a search holding this token stops within about a
/// millisecond and keeps its best plan so far (`nnm_planner_plan` then
/// returns NNM_OK with that plan), and every `nnm_exec_pool_acquire`
/// waiting with this token wakes and returns NNM_CANCELLED.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (not a live token).
///
/// # Safety
/// `token` must be NULL or a pointer from `nnm_cancel_token_new` (a freed
/// one is reported, not read).
#[no_mangle]
pub unsafe extern "C" fn nnm_cancel_token_cancel(token: *const nnm_cancel_token) -> Status {
    guard(|| {
        // SAFETY: the caller promises `token` is NULL or one of ours.
        unsafe { token_ref(token) }?.token.cancel();
        Ok(())
    })
}

/// Clears the flag so the token can be used for another plan.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (not a live token).
///
/// # Safety
/// `token` must be NULL or a pointer from `nnm_cancel_token_new` (a freed
/// one is reported, not read).
#[no_mangle]
pub unsafe extern "C" fn nnm_cancel_token_reset(token: *const nnm_cancel_token) -> Status {
    guard(|| {
        // SAFETY: the caller promises `token` is NULL or one of ours.
        unsafe { token_ref(token) }?.token.reset();
        Ok(())
    })
}

/// Writes 1 to `out_cancelled` when the flag is set, else 0.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (not a live token).
///
/// # Safety
/// `token` must be NULL or a pointer from `nnm_cancel_token_new` (a freed
/// one is reported, not read); `out_cancelled` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nnm_cancel_token_is_cancelled(
    token: *const nnm_cancel_token,
    out_cancelled: *mut u8,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises both pointers are NULL or valid.
        let (t, out) = unsafe { (token_ref(token)?, out_param(out_cancelled, "out_cancelled")?) };
        out.write(t.token.is_cancelled() as u8);
        Ok(())
    })
}
