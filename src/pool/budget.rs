//! The device side of a pool: its allocator, its hard byte limit, and the
//! counters of what it reserved. Shared by all of a pool's shards; only
//! the slow path (a device call) takes its lock.

use std::cell::Cell;
use std::sync::Mutex;

use crate::pool::device::{DevicePtr, SharedAllocator, Stream};
use crate::status::{Error, Result, Status};

/// Reserved bytes and device calls of one pool.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceCounters {
    /// Bytes held from the device now.
    pub reserved_bytes: u64,
    /// The most held at once since creation or the last peak reset.
    pub reserved_peak: u64,
    /// Successful device allocations.
    pub device_allocs: u64,
    /// Device frees.
    pub device_frees: u64,
}

/// The counters, and the bytes of device calls under way: the limit counts
/// them too, so that two shards allocating at once cannot both pass it.
#[derive(Default)]
struct State {
    counters: DeviceCounters,
    pending: u64,
}

thread_local! {
    // Set when this thread's last refusal came from the limit, not from the
    // device: the pool words its final message (and counts a limit refusal)
    // from it. A thread-local, because the refusal travels back through the
    // strategy as a plain error, on this same thread.
    static LIMIT_REFUSED: Cell<bool> = const { Cell::new(false) };
}

/// Whether a [`Device::alloc`] on this thread was refused by the limit
/// since the last call; clears the mark.
pub fn take_limit_refusal() -> bool {
    LIMIT_REFUSED.with(|r| r.replace(false))
}

/// A pool's view of its device.
pub struct Device {
    allocator: SharedAllocator,
    limit: Option<u64>,
    state: Mutex<State>,
}

impl Device {
    /// `allocator`, with a hard limit on the bytes held from it (`None`: no
    /// limit).
    pub fn new(allocator: SharedAllocator, limit: Option<u64>) -> Self {
        Device { allocator, limit, state: Mutex::new(State::default()) }
    }

    /// The allocator behind it.
    pub fn allocator(&self) -> &SharedAllocator {
        &self.allocator
    }

    /// The hard limit, if any.
    pub fn limit(&self) -> Option<u64> {
        self.limit
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // The counters are plain integers: a panic elsewhere cannot leave
        // them half-updated, so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Allocates `size` bytes from the device. Past the limit it refuses
    /// with `Status::OutOfMemory` (the pool words the final message, see
    /// [`take_limit_refusal`]). The bytes count against the limit from
    /// before the device call, so concurrent callers cannot overshoot it.
    pub fn alloc(&self, size: u64, alignment: u64, stream: Stream) -> Result<DevicePtr> {
        {
            let mut st = self.state();
            if let Some(limit) = self.limit {
                let held = st.counters.reserved_bytes.saturating_add(st.pending);
                if held.checked_add(size).is_none_or(|total| total > limit) {
                    drop(st);
                    LIMIT_REFUSED.with(|r| r.set(true));
                    return Err(Error::new(
                        Status::OutOfMemory,
                        format!(
                            "limit: {size} B more would hold {} B of the device, limit {limit} B",
                            held.saturating_add(size)
                        ),
                    ));
                }
            }
            st.pending += size;
        }
        let result = self.allocator.alloc(size, alignment, stream);
        let mut st = self.state();
        st.pending -= size;
        if result.is_ok() {
            let c = &mut st.counters;
            c.reserved_bytes += size;
            c.reserved_peak = c.reserved_peak.max(c.reserved_bytes);
            c.device_allocs += 1;
        }
        result
    }

    /// Returns `size` bytes at `ptr` (from [`Device::alloc`]) to the device.
    pub fn free(&self, ptr: DevicePtr, size: u64, stream: Stream) {
        self.allocator.free(ptr, size, stream);
        let mut st = self.state();
        let c = &mut st.counters;
        c.reserved_bytes -= size;
        c.device_frees += 1;
    }

    /// The counters now.
    pub fn counters(&self) -> DeviceCounters {
        self.state().counters
    }

    /// Starts the reserved peak again from the bytes held now.
    pub fn reset_peak(&self) {
        let mut st = self.state();
        st.counters.reserved_peak = st.counters.reserved_bytes;
    }
}
