//! `no-pool`: every request goes to the device and every free straight
//! back to it (RAF's `no_pool`, the right choice over an allocator that
//! pools by itself, such as `cudaMallocAsync`).

use super::{CacheFigures, Freed, NotLive, Request, Served, Strategy};
use crate::pool::budget::Device;
use crate::pool::device::{DevicePtr, Stream};
use crate::pool::fast_hash::FastMap;
use crate::status::Result;

#[derive(Copy, Clone)]
struct Live {
    requested: u64,
    /// The device block's bytes: `requested`, or 1 for a request of 0 B
    /// (a device block has at least one byte).
    bytes: u64,
    stream: Stream,
}

/// The `no-pool` strategy: it only remembers what it handed out. Aligned
/// to two cache lines, as `PageUnit` (no false sharing between shards).
#[derive(Default)]
#[repr(align(128))]
pub struct NoPool {
    live: FastMap<usize, Live>,
}

impl NoPool {
    /// An empty one.
    pub fn new() -> Self {
        NoPool::default()
    }
}

impl Strategy for NoPool {
    fn name(&self) -> &str {
        "no-pool"
    }

    fn alloc(&mut self, request: Request, device: &Device) -> Result<Served> {
        let bytes = request.size.max(1);
        let ptr = device.alloc(bytes, request.alignment, request.stream)?;
        self.live.insert(ptr.addr(), Live { requested: request.size, bytes, stream: request.stream });
        Ok(Served { ptr, bytes, from_plan: false })
    }

    fn free(&mut self, ptr: DevicePtr, device: &Device) -> std::result::Result<Freed, NotLive> {
        let live = self.live.remove(&ptr.addr()).ok_or(NotLive)?;
        device.free(ptr, live.bytes, live.stream);
        Ok(Freed { requested: live.requested, bytes: live.bytes })
    }

    fn release_cached(&mut self, _device: &Device) -> u64 {
        0
    }

    fn cache_figures(&self) -> CacheFigures {
        CacheFigures::default()
    }

    fn release_all(&mut self, _device: &Device) {
        // Nothing is cached, and the pool destroys a strategy only when
        // nothing is handed out: there is nothing to return.
        debug_assert!(self.live.is_empty(), "no-pool destroyed with {} blocks out", self.live.len());
    }
}
