//! Test doubles for pool tests: a device allocator over host memory that
//! counts its calls and bytes and fails on demand.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::device::{self, DeviceAllocator, DevicePtr, SharedAllocator, Stream};
use crate::status::{Error, Result, Status};

/// Host memory behind a counter. `fail_next(n)` makes the next `n` device
/// allocations fail; `set_capacity` makes it refuse past a byte total, as a
/// full device would. Every block it hands out is remembered (size and
/// stream), so a free of an unknown pointer, or with the wrong size or
/// stream, panics the test.
#[derive(Default)]
pub(crate) struct CountingAllocator {
    allocs: AtomicU64,
    frees: AtomicU64,
    failures: AtomicU64,
    fail_next: AtomicU64,
    capacity: AtomicU64,
    live: Mutex<HashMap<usize, (u64, Stream)>>,
}

impl CountingAllocator {
    /// A fresh one, shared.
    pub(crate) fn new() -> Arc<CountingAllocator> {
        Arc::new(CountingAllocator { capacity: AtomicU64::new(u64::MAX), ..Default::default() })
    }

    /// It as a pool's allocator.
    pub(crate) fn shared(self: &Arc<Self>) -> SharedAllocator {
        self.clone()
    }

    /// Successful allocations so far.
    pub(crate) fn allocs(&self) -> u64 {
        self.allocs.load(Ordering::SeqCst)
    }

    /// Frees so far.
    pub(crate) fn frees(&self) -> u64 {
        self.frees.load(Ordering::SeqCst)
    }

    /// Refused allocations so far.
    pub(crate) fn failures(&self) -> u64 {
        self.failures.load(Ordering::SeqCst)
    }

    /// Bytes handed out and not yet freed.
    pub(crate) fn live_bytes(&self) -> u64 {
        self.live.lock().unwrap().values().map(|&(size, _)| size).sum()
    }

    /// Blocks handed out and not yet freed.
    pub(crate) fn live_blocks(&self) -> usize {
        self.live.lock().unwrap().len()
    }

    /// The next `n` allocations fail.
    pub(crate) fn fail_next(&self, n: u64) {
        self.fail_next.store(n, Ordering::SeqCst);
    }

    /// Allocations that would hold more than `bytes` in all fail.
    pub(crate) fn set_capacity(&self, bytes: u64) {
        self.capacity.store(bytes, Ordering::SeqCst);
    }
}

impl DeviceAllocator for CountingAllocator {
    fn name(&self) -> &str {
        "counting"
    }

    fn alloc(&self, size: u64, alignment: u64, stream: Stream) -> Result<DevicePtr> {
        let refuse = || {
            self.failures.fetch_add(1, Ordering::SeqCst);
            Err(Error::new(Status::OutOfMemory, format!("counting: refused {size} B")))
        };
        let take_failure =
            self.fail_next.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok();
        let mut live = self.live.lock().unwrap();
        let held: u64 = live.values().map(|&(s, _)| s).sum();
        if take_failure || held.saturating_add(size) > self.capacity.load(Ordering::SeqCst) {
            return refuse();
        }
        let ptr = device::host().alloc(size, alignment, stream)?;
        live.insert(ptr.addr(), (size, stream));
        self.allocs.fetch_add(1, Ordering::SeqCst);
        Ok(ptr)
    }

    fn free(&self, ptr: DevicePtr, size: u64, stream: Stream) {
        let known = self.live.lock().unwrap().remove(&ptr.addr());
        assert_eq!(known, Some((size, stream)), "device free of {ptr:?} with {size} B on {stream:?}");
        device::host().free(ptr, size, stream);
        self.frees.fetch_add(1, Ordering::SeqCst);
    }

    fn host_accessible(&self) -> bool {
        true
    }
}

/// Fills `size` bytes at `ptr` with a pattern derived from `seed`.
pub(crate) fn fill(ptr: DevicePtr, size: u64, seed: u8) {
    // SAFETY: tests call this only on host memory a pool handed out (the
    // host or counting allocator), at least `size` bytes, not yet freed,
    // and used by this thread alone.
    let bytes = unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), size as usize) };
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = seed.wrapping_add(i as u8);
    }
}

/// Whether `size` bytes at `ptr` still hold [`fill`]'s pattern for `seed`.
pub(crate) fn holds(ptr: DevicePtr, size: u64, seed: u8) -> bool {
    // SAFETY: as for `fill`: live host memory of at least `size` bytes
    // that no other thread writes.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.as_ptr(), size as usize) };
    bytes.iter().enumerate().all(|(i, &b)| b == seed.wrapping_add(i as u8))
}

/// Whether `size` bytes at `ptr` are all zero.
pub(crate) fn zeroed(ptr: DevicePtr, size: u64) -> bool {
    // SAFETY: as for `fill`: live host memory of at least `size` bytes
    // that no other thread writes.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.as_ptr(), size as usize) };
    bytes.iter().all(|&b| b == 0)
}

/// A device allocator that misbehaves on demand: while armed with an
/// offset, it hands out the last block it really allocated, that many bytes
/// in, without allocating (0: the same pointer twice). Everything else goes
/// to a [`CountingAllocator`], which panics on a free it did not hand out,
/// so a pool that gave such a pointer back would fail the test.
pub(crate) struct Misbehaving {
    pub(crate) inner: Arc<CountingAllocator>,
    armed: Mutex<Option<u64>>,
    last: Mutex<Option<(DevicePtr, u64)>>,
    /// Pointers handed out while armed.
    pub(crate) bogus: AtomicU64,
}

impl Misbehaving {
    pub(crate) fn new() -> Arc<Misbehaving> {
        Arc::new(Misbehaving {
            inner: CountingAllocator::new(),
            armed: Mutex::default(),
            last: Mutex::default(),
            bogus: AtomicU64::new(0),
        })
    }

    /// From now on, hand out the last real block `offset` bytes in (`None`:
    /// behave again).
    pub(crate) fn arm(&self, offset: Option<u64>) {
        *self.armed.lock().unwrap() = offset;
    }

    /// The last block really allocated (address, size).
    pub(crate) fn last(&self) -> (DevicePtr, u64) {
        self.last.lock().unwrap().expect("a block was allocated")
    }
}

impl DeviceAllocator for Misbehaving {
    fn name(&self) -> &str {
        "misbehaving"
    }

    /// Checks the alignment of what it hands out as a C vtable's allocator
    /// is checked (a bogus block may be misaligned too).
    fn alloc(&self, size: u64, alignment: u64, stream: Stream) -> Result<DevicePtr> {
        let ptr = self.alloc_as_is(size, alignment, stream)?;
        device::aligned_or_given_back(self, ptr, size, alignment, stream)
    }

    fn alloc_as_is(&self, size: u64, alignment: u64, stream: Stream) -> Result<DevicePtr> {
        if let Some(offset) = *self.armed.lock().unwrap() {
            self.bogus.fetch_add(1, Ordering::SeqCst);
            return Ok(self.last().0.byte_add(offset));
        }
        let ptr = self.inner.alloc(size, alignment, stream)?;
        *self.last.lock().unwrap() = Some((ptr, size));
        Ok(ptr)
    }

    fn free(&self, ptr: DevicePtr, size: u64, stream: Stream) {
        self.inner.free(ptr, size, stream);
    }

    fn host_accessible(&self) -> bool {
        true
    }
}
