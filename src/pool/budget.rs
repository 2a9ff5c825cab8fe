//! The device side of a pool: its allocator, its hard byte limit, and the
//! counters of what it reserved. Shared by all of a pool's shards; only
//! the slow path (a device call) takes its lock.

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

/// A pool's view of its device.
pub struct Device {
    allocator: SharedAllocator,
    limit: Option<u64>,
    counters: Mutex<DeviceCounters>,
}

impl Device {
    /// `allocator`, with a hard limit on the bytes held from it (`None`: no
    /// limit).
    pub fn new(allocator: SharedAllocator, limit: Option<u64>) -> Self {
        Device { allocator, limit, counters: Mutex::new(DeviceCounters::default()) }
    }

    /// The allocator behind it.
    pub fn allocator(&self) -> &SharedAllocator {
        &self.allocator
    }

    /// The hard limit, if any.
    pub fn limit(&self) -> Option<u64> {
        self.limit
    }

    fn counters_mut(&self) -> std::sync::MutexGuard<'_, DeviceCounters> {
        // The counters are plain integers: a panic elsewhere cannot leave
        // them half-updated, so a poisoned lock is still usable.
        self.counters.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Allocates `size` bytes from the device. Past the limit it refuses
    /// with `Status::OutOfMemory` (the pool words the final message).
    pub fn alloc(&self, size: u64, alignment: u64, stream: Stream) -> Result<DevicePtr> {
        if let Some(limit) = self.limit {
            let reserved = self.counters_mut().reserved_bytes;
            if reserved.checked_add(size).is_none_or(|total| total > limit) {
                return Err(Error::new(
                    Status::OutOfMemory,
                    format!(
                        "limit: {size} B more would hold {} B of the device, limit {limit} B",
                        reserved.saturating_add(size)
                    ),
                ));
            }
        }
        let ptr = self.allocator.alloc(size, alignment, stream)?;
        let mut c = self.counters_mut();
        c.reserved_bytes += size;
        c.reserved_peak = c.reserved_peak.max(c.reserved_bytes);
        c.device_allocs += 1;
        Ok(ptr)
    }

    /// Returns `size` bytes at `ptr` (from [`Device::alloc`]) to the device.
    pub fn free(&self, ptr: DevicePtr, size: u64, stream: Stream) {
        self.allocator.free(ptr, size, stream);
        let mut c = self.counters_mut();
        c.reserved_bytes -= size;
        c.device_frees += 1;
    }

    /// The counters now.
    pub fn counters(&self) -> DeviceCounters {
        *self.counters_mut()
    }

    /// Starts the reserved peak again from the bytes held now.
    pub fn reset_peak(&self) {
        let mut c = self.counters_mut();
        c.reserved_peak = c.reserved_bytes;
    }
}
