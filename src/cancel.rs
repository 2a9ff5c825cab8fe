//! A cancellation token: a flag one thread sets to stop work running or
//! waiting on others. It sits below the planner (whose search polls the
//! flag) and the workbuffer request pool (whose waiters sleep and must be
//! woken), so neither imports the other.
//!
//! A search polls, so the flag alone serves it. A thread asleep on a
//! condition variable cannot poll: while it waits it registers a waker
//! here, and [`CancelToken::cancel`] calls every registered waker after
//! setting the flag. A waiter that checks the flag under its own lock
//! before sleeping cannot miss the wake-up, because the waker takes that
//! same lock before notifying.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// What a waiter registers: called on cancellation, from the cancelling
/// thread.
pub type Waker = Arc<dyn Fn() + Send + Sync>;

/// A cancellation flag with a list of wakers. Thread-safe.
#[derive(Default)]
pub struct CancelToken {
    flag: Arc<AtomicBool>,
    /// Cancellations so far: a waiter compares it with what it saw when it
    /// registered, so a cancel that a quick reset cleared still ends its
    /// wait.
    cancels: AtomicU64,
    wakers: Mutex<Vec<(u64, Waker)>>,
    next_waker: AtomicU64,
}

impl CancelToken {
    /// A token, not cancelled.
    pub fn new() -> Self {
        CancelToken::default()
    }

    /// Sets the flag, then wakes every registered waiter.
    pub fn cancel(&self) {
        self.cancels.fetch_add(1, Ordering::SeqCst);
        self.flag.store(true, Ordering::SeqCst);
        // Wakers are cloned out so that none runs under this token's lock
        // (a waker takes its pool's lock; a waiter registering holds that
        // lock and then takes this one).
        let wakers: Vec<Waker> = self.wakers().iter().map(|(_, w)| w.clone()).collect();
        for wake in wakers {
            wake();
        }
    }

    /// Clears the flag, so the token can serve another plan or wait.
    pub fn reset(&self) {
        self.flag.store(false, Ordering::SeqCst);
    }

    /// Whether the flag is set.
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// How many times the token was cancelled: a waiter that saw `n` when
    /// it started waiting was cancelled once this exceeds `n`, even if the
    /// flag was reset since.
    #[inline]
    pub fn cancel_count(&self) -> u64 {
        self.cancels.load(Ordering::SeqCst)
    }

    /// The flag itself, as the planner holds it.
    pub fn flag(&self) -> &Arc<AtomicBool> {
        &self.flag
    }

    /// Registers `wake` until the returned guard is dropped.
    pub fn on_cancel(&self, wake: Waker) -> WakerRegistration<'_> {
        let id = self.next_waker.fetch_add(1, Ordering::Relaxed);
        self.wakers().push((id, wake));
        WakerRegistration { token: self, id }
    }

    fn wakers(&self) -> MutexGuard<'_, Vec<(u64, Waker)>> {
        // Pushes and removals are single calls, so a poisoned list is whole.
        self.wakers.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken").field("cancelled", &self.is_cancelled()).finish()
    }
}

/// A registered waker; dropping it unregisters the waker.
pub struct WakerRegistration<'a> {
    token: &'a CancelToken,
    id: u64,
}

impl Drop for WakerRegistration<'_> {
    fn drop(&mut self) {
        self.token.wakers().retain(|(id, _)| *id != self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn cancel_wakes_registered_waiters_only_while_registered() {
        let token = CancelToken::new();
        let woken = Arc::new(AtomicUsize::new(0));
        let counter = woken.clone();
        {
            let _registered = token.on_cancel(Arc::new(move || {
                counter.fetch_add(1, Ordering::SeqCst);
            }));
            token.cancel();
            assert!(token.is_cancelled() && token.flag().load(Ordering::SeqCst));
            assert_eq!(token.cancel_count(), 1);
            assert_eq!(woken.load(Ordering::SeqCst), 1);
        }
        token.reset();
        assert!(!token.is_cancelled());
        token.cancel();
        assert_eq!(woken.load(Ordering::SeqCst), 1, "an unregistered waker is not called");
    }
}
