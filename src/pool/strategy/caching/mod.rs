//! The caching strategy, after PyTorch's CUDA caching allocator and
//! TensorFlow's BFC allocator: memory comes from the device in segments,
//! which are cut into blocks; a request takes the best-fitting free block
//! (the smallest that fits), split when larger than needed, and a freed
//! block merges with its free neighbours.
//!
//! - Sizes: every block is a multiple of `min_block`. Requests of at most
//!   `small_size` bytes come from small segments (`small_segment` bytes
//!   each), larger ones from large segments (the request rounded up to
//!   `large_round`). Small and large free blocks are kept apart, so that
//!   small requests do not fragment large blocks.
//! - Growth (after TensorFlow's BFC growing regions): a large request no
//!   free block serves gets a fresh segment of its rounded size, padded up
//!   to `1/GROWTH_DIVISOR` of the large segments held but to at most
//!   `GROWTH_MULTIPLE` times the request, so that several large blocks
//!   share a segment and split and merge across it, while the unused
//!   padding stays a small share of what is held. The large segments that
//!   are wholly free and usable on the request's stream are given back to
//!   the device first and their bytes added to the fresh segment (the
//!   bytes held grow by the padded request only; free space scattered over
//!   segments becomes one block). Should the padded segment be refused,
//!   the request alone is tried. With a `max_split` (not the default), a
//!   fresh segment is the request alone (a larger one could not be split).
//! - `end_iteration` is ignored (the pool's contract: only `replay` acts
//!   on it), so a caching pool makes no device call there.
//! - Splitting (PyTorch's rule): a small block is split when at least
//!   `min_block` bytes would remain; a large one when more than
//!   `small_size` bytes would remain (a smaller remainder could only ever
//!   serve a small request, which large blocks never do), and never when
//!   it is larger than `max_split`. Such an oversize block is handed out
//!   whole, but only to a request that is itself larger than `max_split`
//!   and at most [`OVERSIZE_SLACK`] bytes smaller than the block; a smaller
//!   request never takes an oversize block (it would pin all of it).
//! - Streams: a block carries the stream it was allocated on, and so does
//!   a fresh segment's unused rest. A free block serves requests of its
//!   stream only, until `streams_synchronized` makes every block free at
//!   that moment usable on every stream. Neighbours merge when some stream
//!   may use both; the merged block then serves that stream only (a
//!   block usable everywhere merges into its stream-bound neighbour rather
//!   than fragmenting single-stream work after each synchronisation).
//! - `release_cached` (PyTorch's `empty_cache`) gives back every idle
//!   segment, one none of whose blocks is handed out, even when its free
//!   blocks were freed on different streams and so stay unmerged: as
//!   `empty_cache`, which synchronises the device first, it takes the
//!   memory to be unused by any stream's pending work. The device's free
//!   names the stream the segment was allocated on. The pool calls it
//!   before retrying a refused allocation, so idle segments never cause an
//!   out-of-memory.
//! - Alignment: segments are allocated aligned to `max(alignment,
//!   min_block)`, blocks start `min_block`-aligned; a request aligned more
//!   strictly takes the best free block in which an aligned start fits
//!   (the bytes before that start stay free), or a fresh segment.
//!
//! - Deferred coalescing (glibc's fastbins, TCMalloc's per-size lists): a
//!   freed block first waits, unmerged, on a list of its stream and its
//!   request's size class. A request of that size class on that stream
//!   takes the most recently freed such block back when the block would
//!   be handed out whole anyway (exactly its size, or a large block the
//!   split rule keeps whole), a best fit by size; any other request, `release_cached`, `streams_synchronized`
//!   and reading the cache figures first coalesce every waiting block as
//!   above, so best fit, the figures and the memory given back are those
//!   of a fully coalesced cache (so reading the figures can change which
//!   block a later request gets).
//!   A program repeating its requests pays neither a split nor a merge.
//!
//! The steady-state path (a cached block of a size seen before) allocates
//! nothing: free blocks sit in size-segregated bins with a bitmap of the
//! non-empty ones ([`bins`]), block records in a slab ([`block`]), and the
//! blocks handed out (and the deferred ones) in an address table
//! (`crate::pool::live_table`).

mod bins;
mod block;
mod cache;
#[cfg(test)]
mod tests;

use std::cell::RefCell;

use crate::pool::budget::Device;
use crate::pool::device::DevicePtr;
use crate::pool::strategy::{CacheFigures, Freed, NotLive, Request, Served, Strategy};
use crate::status::{Error, Result};

use cache::Cache;

/// How much larger than an oversize request (one over `max_split`) an
/// oversize free block may be and still serve it whole: PyTorch's
/// `kLargeBuffer`, 20 MiB.
pub const OVERSIZE_SLACK: u64 = 20 << 20;

/// A fresh large segment is padded to at least this share (1/n) of the
/// large segments held, so that later large requests share it...
pub const GROWTH_DIVISOR: u64 = 16;

/// ...but to at most this many times the request, so that a small request
/// never pins a segment many times its size.
pub const GROWTH_MULTIPLE: u64 = 2;

/// The caching strategy's sizes (a pool's `PoolOptions::caching`); a pool
/// refuses those [`CachingOptions::check`] refuses.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CachingOptions {
    /// Blocks larger than this are never split (default: no limit). Any
    /// value.
    pub max_split: u64,
    /// Requests of at most this many bytes are served from small segments.
    /// Any value (0: none is small).
    pub small_size: u64,
    /// The device block size of small segments: a non-zero multiple of
    /// `min_block`, at least `small_size`.
    pub small_segment: u64,
    /// Large requests' device blocks are rounded up to a multiple of this
    /// (and padded by the growth rule of the module documentation): a
    /// non-zero multiple of `min_block`.
    pub large_round: u64,
    /// The rounding unit of every block: a power of two (1 included).
    pub min_block: u64,
}

impl CachingOptions {
    /// Checks the rules of the fields' documentation; the error names the
    /// field, its value and the rule.
    pub fn check(&self) -> Result<()> {
        let min_block = self.min_block;
        if !min_block.is_power_of_two() {
            return Err(Error::invalid(format!(
                "min_block {min_block} B is not a power of two (every block is a multiple of it)"
            )));
        }
        for (field, value) in [("small_segment", self.small_segment), ("large_round", self.large_round)] {
            if value == 0 {
                return Err(Error::invalid(format!(
                    "{field} 0 B: must be a non-zero multiple of min_block ({min_block} B)"
                )));
            }
            if value % min_block != 0 {
                return Err(Error::invalid(format!(
                    "{field} {value} B is not a multiple of min_block ({min_block} B)"
                )));
            }
        }
        if self.small_segment < self.small_size {
            return Err(Error::invalid(format!(
                "small_segment {} B is smaller than small_size ({} B): a small segment must hold the largest small \
                 request",
                self.small_segment, self.small_size
            )));
        }
        Ok(())
    }
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

/// The caching strategy: best fit with splitting and coalescing over small
/// and large segments, per-stream reuse.
pub struct Caching {
    /// In a cell only so that reading the figures (`&self`) can coalesce
    /// the deferred blocks first; every other call has `&mut self` and
    /// reaches it without a run-time borrow check.
    cache: RefCell<Cache>,
}

impl Caching {
    /// A caching strategy with `options`; nothing is allocated from the
    /// device yet. A pool refuses options that [`CachingOptions::check`]
    /// refuses; given here directly, they are made consistent
    /// (`min_block` rounded up to a power of two, `small_segment` and
    /// `large_round` to non-zero multiples of it, `small_segment` raised to
    /// `small_size`).
    pub fn new(options: &CachingOptions) -> Caching {
        Caching { cache: RefCell::new(Cache::new(options)) }
    }
}

impl Strategy for Caching {
    fn name(&self) -> &str {
        "caching"
    }

    fn reuses_identical_requests(&self) -> bool {
        true
    }

    #[inline]
    fn alloc(&mut self, request: Request, device: &Device) -> Result<Served> {
        self.cache.get_mut().alloc(request, device)
    }

    #[inline]
    fn free(&mut self, ptr: DevicePtr, _device: &Device) -> std::result::Result<Freed, NotLive> {
        self.cache.get_mut().free(ptr)
    }

    fn release_cached(&mut self, device: &Device) -> u64 {
        self.cache.get_mut().release_cached(device)
    }

    fn streams_synchronized(&mut self) {
        self.cache.get_mut().streams_synchronized()
    }

    fn cache_figures(&self) -> CacheFigures {
        // The only shared borrow of the cell: every other access goes
        // through `&mut self`, so this one cannot meet another.
        let mut cache = self.cache.borrow_mut();
        cache.coalesce_deferred();
        cache.figures()
    }

    fn release_all(&mut self, device: &Device) {
        self.cache.get_mut().release_all(device)
    }
}
