//! C API of cancellation tokens (`nnm_cancel_token_*`): a flag one thread
//! sets to stop a search running on another.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::error::{guard, guard_void, non_null, write_out};
use super::handle::{free_handle, into_handle, value_ref, Tagged};
use super::status::nnm_status;

/// A cancellation flag. Thread-safe: `nnm_cancel_token_cancel`,
/// `nnm_cancel_token_reset` and `nnm_cancel_token_is_cancelled` may be
/// called from any thread at any time, also while a planner that holds the
/// token is planning. The token may be freed before the planners it was set
/// on (but not while another thread still calls it): freeing detaches it,
/// and their later plans run as with no token, even if it was cancelled.
/// Every `nnm_cancel_token_*` call and `nnm_planner_set_cancel_token` check
/// that the token is live: on a freed token they return INVALID_ARGUMENT
/// without reading it (unless a new token took over its address: that is
/// the token they act on).
pub struct nnm_cancel_token {
    tag: u64,
    pub(crate) flag: Arc<AtomicBool>,
}

const TOKEN_TAG: u64 = 0x6e6e_6d5f_6361_6e63; // "nnm_canc"

impl Tagged for nnm_cancel_token {
    const NAME: &'static str = "nnm_cancel_token";
    fn tag_is_valid(&self) -> bool {
        self.tag == TOKEN_TAG
    }
}

/// Borrows the token behind a handle (NULL, liveness and type checked).
///
/// # Safety
/// `token` must be NULL, a freed token, or a live token.
#[inline]
pub(crate) unsafe fn token_ref<'a>(token: *const nnm_cancel_token) -> crate::Result<&'a nnm_cancel_token> {
    value_ref(token, "token")
}

/// Creates a token, not cancelled. Free it with `nnm_cancel_token_free`.
///
/// Errors: NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn nnm_cancel_token_new(out_token: *mut *mut nnm_cancel_token) -> nnm_status {
    guard(|| {
        non_null(out_token, "out_token")?;
        let handle = into_handle(nnm_cancel_token { tag: TOKEN_TAG, flag: Arc::new(AtomicBool::new(false)) });
        write_out(out_token, handle);
        Ok(())
    })
}

/// Frees a token and detaches it from every planner it was set on. NULL is
/// a no-op; a double free is detected and reported through
/// `nnm_last_error()`.
#[no_mangle]
pub unsafe extern "C" fn nnm_cancel_token_free(token: *mut nnm_cancel_token) {
    guard_void(|| free_handle(token))
}

/// Sets the flag: a search holding this token stops within about a
/// millisecond and keeps its best plan so far (`nnm_planner_plan` then
/// returns NNM_OK with that plan).
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (not a live token).
#[no_mangle]
pub unsafe extern "C" fn nnm_cancel_token_cancel(token: *const nnm_cancel_token) -> nnm_status {
    guard(|| {
        token_ref(token)?.flag.store(true, Ordering::Relaxed);
        Ok(())
    })
}

/// Clears the flag so the token can be used for another plan.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (not a live token).
#[no_mangle]
pub unsafe extern "C" fn nnm_cancel_token_reset(token: *const nnm_cancel_token) -> nnm_status {
    guard(|| {
        token_ref(token)?.flag.store(false, Ordering::Relaxed);
        Ok(())
    })
}

/// Writes 1 to `out_cancelled` when the flag is set, else 0.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (not a live token).
#[no_mangle]
pub unsafe extern "C" fn nnm_cancel_token_is_cancelled(
    token: *const nnm_cancel_token,
    out_cancelled: *mut u8,
) -> nnm_status {
    guard(|| {
        let t = token_ref(token)?;
        non_null(out_cancelled, "out_cancelled")?;
        write_out(out_cancelled, t.flag.load(Ordering::Relaxed) as u8);
        Ok(())
    })
}
