//! The shards' lock: a spin-then-yield lock. A pool's critical sections
//! are a few dozen instructions (a table lookup and a list push or pop),
//! so waiting in the kernel never pays; what counts is the uncontended
//! cost. Taking it is one compare-and-swap and releasing it one store,
//! where `std::sync::Mutex` releases with a second atomic read-modify-write
//! (to learn whether to wake a sleeper) and checks poisoning on both ends.
//!
//! A waiter spins briefly, then yields its CPU: with more threads than
//! CPUs the holder may have been preempted, and only giving the CPU up
//! lets it finish.
//!
//! There is no poisoning: a panic inside a critical section (a bug) leaves
//! the data as the panicking code left it, which for the pools means
//! counters and caches between two complete operations at worst.
//!
//! This module holds the only `UnsafeCell` of the pool core.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

/// Spins before the first yield.
const SPINS: u32 = 64;

/// A value behind a spin-then-yield lock.
pub(crate) struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value moves with the lock; sending it needs `T: Send`.
unsafe impl<T: Send> Send for SpinLock<T> {}
// SAFETY: only one guard exists at a time (the compare-and-swap in `lock`
// admits one holder until its guard's drop stores `false`), so the value is
// accessed by one thread at a time, as with `Mutex<T>`, which is `Sync` for
// `T: Send`.
unsafe impl<T: Send> Sync for SpinLock<T> {}

impl<T> SpinLock<T> {
    /// `value`, unlocked.
    pub(crate) const fn new(value: T) -> Self {
        SpinLock { locked: AtomicBool::new(false), value: UnsafeCell::new(value) }
    }

    /// Waits for the lock and takes it.
    #[inline]
    pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
        if self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            self.lock_contended();
        }
        SpinGuard { lock: self }
    }

    #[cold]
    #[inline(never)]
    fn lock_contended(&self) {
        let mut spins = 0;
        loop {
            // Wait reading, not writing: the holder's cache line stays put.
            while self.locked.load(Ordering::Relaxed) {
                if spins < SPINS {
                    spins += 1;
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            if self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                return;
            }
        }
    }

    /// The value, through exclusive access (no locking needed).
    pub(crate) fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }
}

/// The lock held; released when dropped.
pub(crate) struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this guard is the lock's only holder (see `Sync` above)
        // until it drops, so no `&mut T` exists elsewhere meanwhile.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as for `deref`; `&mut self` makes this borrow the only
        // one through the guard.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // Release: the holder's writes are visible to the next holder,
        // whose Acquire compare-and-swap reads this store.
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn threads_take_turns_and_lose_no_update() {
        const ROUNDS: u64 = if cfg!(miri) { 200 } else { 5_000 };
        let lock = Arc::new(SpinLock::new((0u64, 0u64)));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let lock = lock.clone();
                std::thread::spawn(move || {
                    for _ in 0..ROUNDS {
                        let mut g = lock.lock();
                        // Two fields written apart: a second holder at the
                        // same time would see them differ.
                        g.0 += 1;
                        assert_eq!(g.0, g.1 + 1);
                        g.1 += 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let mut lock = Arc::try_unwrap(lock).ok().unwrap();
        assert_eq!(*lock.get_mut(), (4 * ROUNDS, 4 * ROUNDS));
    }

    #[test]
    fn a_panic_inside_releases_the_lock() {
        let lock = SpinLock::new(1);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut g = lock.lock();
            *g = 2;
            panic!("inside");
        }));
        assert!(r.is_err());
        assert_eq!(*lock.lock(), 2);
    }
}
