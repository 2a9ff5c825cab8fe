//! The device side of a pool: its allocator, its hard byte limit, the
//! counters of what it reserved, and the blocks it holds from the device
//! (so that an allocator handing out memory the pool already holds is
//! caught before any strategy hands it out twice). Shared by all of a
//! pool's shards; only the slow path (a device call) takes its lock.

#[cfg(test)]
mod tests;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::pool::device::{
    aligned_or_given_back, aligned_to, handed_out_twice, overlapping, DevicePtr, SharedAllocator, Stream,
};
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

/// The counters, the bytes of device calls under way (the limit counts
/// them too, so that two shards allocating at once cannot both pass it),
/// and the device blocks held now.
#[derive(Default)]
struct State {
    counters: DeviceCounters,
    pending: u64,
    /// Start address -> size of every block held from the device; never
    /// overlapping, so the block starting last before an address is the
    /// only one that can contain it.
    held: BTreeMap<usize, u64>,
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
    ///
    /// A block the allocator returns overlapping one this pool already
    /// holds from it (the same pointer twice, or one inside a block) is
    /// refused with `Status::InvalidArgument` naming the allocator and both
    /// ranges, and kept from every strategy. It is not given back either
    /// (unlike a misaligned block): by the allocator's own books that
    /// memory is the held block's, which a free would pull from under it.
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
        let result = self.allocator.alloc_as_is(size, alignment, stream);
        let mut st = self.state();
        st.pending -= size;
        let ptr = result?;
        // Checked and recorded under one lock: of two concurrent calls
        // handed the same memory, the second sees the first's block. The
        // overlap first: a misaligned address that is also a held block's
        // must not be given back.
        let start = ptr.addr();
        if let Some((base, held)) = overlapping(&st.held, start, size, |&bytes| bytes) {
            drop(st);
            return Err(handed_out_twice(self.allocator.name(), (ptr.addr(), size), (base, held), "this pool"));
        }
        if !aligned_to(start, alignment) {
            drop(st);
            return aligned_or_given_back(self.allocator.as_ref(), ptr, size, alignment, stream);
        }
        st.held.insert(start, size);
        let c = &mut st.counters;
        c.reserved_bytes += size;
        c.reserved_peak = c.reserved_peak.max(c.reserved_bytes);
        c.device_allocs += 1;
        Ok(ptr)
    }

    /// Returns `size` bytes at `ptr` (from [`Device::alloc`]) to the device.
    pub fn free(&self, ptr: DevicePtr, size: u64, stream: Stream) {
        {
            let mut st = self.state();
            let was = st.held.remove(&ptr.addr());
            debug_assert_eq!(was, Some(size), "device free of {ptr:?} ({size} B): not a block held from the device");
        }
        // Out of the held blocks before the device call: the allocator may
        // hand the memory out again as soon as it has it back.
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
