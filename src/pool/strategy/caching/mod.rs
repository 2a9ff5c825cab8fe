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
//! - Alignment: segments are allocated aligned to `max(alignment,
//!   min_block)`, blocks start `min_block`-aligned; a request aligned more
//!   strictly takes the best free block in which an aligned start fits
//!   (the bytes before that start stay free), or a fresh segment.
//!
//! The steady-state path (a cached block of a size seen before) allocates
//! nothing: free blocks sit in size-segregated bins with a bitmap of the
//! non-empty ones ([`bins`]), block records in a slab ([`block`]), and the
//! blocks handed out in an address table ([`table`]).

mod bins;
mod block;
mod table;
#[cfg(test)]
mod tests;

use crate::pool::budget::Device;
use crate::pool::device::{DevicePtr, Stream};
use crate::pool::strategy::{CacheFigures, Freed, NotLive, Request, Served, Strategy};
use crate::status::{Error, Result, Status};

use bins::Bins;
use block::{Block, Slab, State, ANY, NIL};
use table::LiveTable;

/// How much larger than an oversize request (one over `max_split`) an
/// oversize free block may be and still serve it whole: PyTorch's
/// `kLargeBuffer`, 20 MiB.
pub const OVERSIZE_SLACK: u64 = 20 << 20;

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

/// The sizes in use: the options made consistent (see [`Caching::new`]).
#[derive(Copy, Clone, Debug)]
struct Sizes {
    max_split: u64,
    small_size: u64,
    small_segment: u64,
    large_round: u64,
    min_block: u64,
    shift: u32,
}

/// `x` rounded up to a multiple of `unit` (`unit > 0`); `None` on overflow.
#[inline]
fn round_up(x: u64, unit: u64) -> Option<u64> {
    x.checked_add(unit - 1).map(|y| y - y % unit)
}

/// `x` rounded up to a multiple of `unit`, or the largest multiple that
/// fits in a `u64`.
fn round_up_saturating(x: u64, unit: u64) -> u64 {
    round_up(x, unit).unwrap_or(u64::MAX - u64::MAX % unit)
}

/// A device allocation, cut into blocks.
#[derive(Copy, Clone, Debug)]
struct Segment {
    base: DevicePtr,
    size: u64,
    /// The stream it was allocated on (its device free names it too).
    stream: Stream,
    small: bool,
    /// Its first block: merging always keeps the lower block, so the first
    /// one lives as long as the segment.
    first: u32,
}

/// The free blocks usable on one stream tag.
struct Tag {
    /// `None` for [`ANY`].
    stream: Option<Stream>,
    small: Bins,
    large: Bins,
}

/// The caching strategy: best fit with splitting and coalescing over small
/// and large segments, per-stream reuse.
pub struct Caching {
    sizes: Sizes,
    slab: Slab,
    segments: Vec<Option<Segment>>,
    vacant_segments: Vec<u32>,
    tags: Vec<Tag>,
    /// The last stream looked up and its tag, so that a program on one
    /// stream finds its tag without a search.
    last_tag: (Stream, u32),
    live: LiveTable,
    cached_blocks: u64,
    cached_bytes: u64,
}

impl Caching {
    /// A caching strategy with `options`, made consistent: `min_block` is
    /// rounded up to a power of two (at least 1); `small_segment` to a
    /// multiple of it and to at least `small_size`; `large_round` to a
    /// multiple of `min_block`. Nothing is allocated from the device yet.
    pub fn new(options: &CachingOptions) -> Caching {
        let min_block = options.min_block.max(1).checked_next_power_of_two().unwrap_or(1 << 63);
        let small_size = options.small_size;
        let small_segment = round_up_saturating(options.small_segment.max(small_size).max(1), min_block);
        let large_round = round_up_saturating(options.large_round.max(1), min_block);
        let sizes = Sizes {
            max_split: options.max_split,
            small_size,
            small_segment,
            large_round,
            min_block,
            shift: min_block.trailing_zeros(),
        };
        let any = Tag { stream: None, small: Bins::new(sizes.shift), large: Bins::new(sizes.shift) };
        Caching {
            sizes,
            slab: Slab::new(),
            segments: Vec::new(),
            vacant_segments: Vec::new(),
            tags: vec![any],
            last_tag: (Stream::DEFAULT, NIL),
            live: LiveTable::new(),
            cached_blocks: 0,
            cached_bytes: 0,
        }
    }

    /// The tag of `stream`, made on first use.
    #[inline]
    fn tag_of(&mut self, stream: Stream) -> u32 {
        if self.last_tag.1 != NIL && self.last_tag.0 == stream {
            return self.last_tag.1;
        }
        let tag = match self.tags.iter().position(|t| t.stream == Some(stream)) {
            Some(t) => t as u32,
            None => {
                let shift = self.sizes.shift;
                self.tags.push(Tag { stream: Some(stream), small: Bins::new(shift), large: Bins::new(shift) });
                (self.tags.len() - 1) as u32
            }
        };
        self.last_tag = (stream, tag);
        tag
    }

    /// Puts free block `i` (of a small segment when `small`) into the bins
    /// of its tag.
    #[inline]
    fn index(&mut self, i: u32, small: bool) {
        let b = &mut self.slab.blocks[i as usize];
        b.state = State::Free;
        self.cached_blocks += 1;
        self.cached_bytes += b.size;
        let tag = &mut self.tags[b.tag as usize];
        let bins = if small { &mut tag.small } else { &mut tag.large };
        bins.insert(&mut self.slab.blocks, i);
    }

    /// Takes free block `i` out of its bins.
    #[inline]
    fn unindex(&mut self, i: u32, small: bool) {
        let b = &self.slab.blocks[i as usize];
        self.cached_blocks -= 1;
        self.cached_bytes -= b.size;
        let tag = &mut self.tags[b.tag as usize];
        let bins = if small { &mut tag.small } else { &mut tag.large };
        bins.remove(&mut self.slab.blocks, i);
    }

    /// The smallest free block that can serve `size` bytes aligned to
    /// `alignment` on tag `tag`, under the oversize rules.
    #[inline]
    fn find(&self, tag: u32, small: bool, size: u64, alignment: u64) -> Option<u32> {
        let s = self.sizes;
        let fits_all = alignment <= s.min_block;
        let fits = |b: &Block| {
            let front = front_gap(b.ptr, alignment);
            // An oversize block is never split, at the front either.
            b.size.checked_sub(front).is_some_and(|rest| rest >= size) && (front == 0 || b.size <= s.max_split)
        };
        let pick = |t: u32| {
            let bins = if small { &self.tags[t as usize].small } else { &self.tags[t as usize].large };
            bins.best_fit(&self.slab.blocks, size, fits_all, fits)
        };
        let size_of = |i: u32| self.slab.blocks[i as usize].size;
        let best = match (pick(tag), pick(ANY)) {
            (Some(a), Some(b)) => Some(if size_of(b) < size_of(a) { b } else { a }),
            (a, b) => a.or(b),
        }?;
        // The best fit is the smallest block that fits: when it breaks the
        // oversize rules, every larger one does too.
        let bytes = size_of(best);
        let allowed = if size > s.max_split { bytes - size < OVERSIZE_SLACK } else { bytes <= s.max_split };
        allowed.then_some(best)
    }

    /// Allocates a fresh segment for `size` bytes on `stream`; returns its
    /// one block, free but not in the bins, of tag `tag`.
    fn grow(
        &mut self,
        device: &Device,
        small: bool,
        size: u64,
        alignment: u64,
        stream: Stream,
        tag: u32,
    ) -> Result<u32> {
        let s = self.sizes;
        let bytes = if small {
            s.small_segment.max(size)
        } else {
            round_up(size, s.large_round).ok_or_else(|| {
                Error::overflow(format!(
                    "caching: {size} B rounded up to a multiple of {} B (the large segment unit) overflows",
                    s.large_round
                ))
            })?
        };
        let seg = match self.vacant_segments.last() {
            Some(&k) => k,
            None if self.segments.len() < NIL as usize => self.segments.len() as u32,
            None => return Err(records_full(size)),
        };
        let base = device.alloc(bytes, alignment.max(s.min_block), stream)?;
        let i = self.slab.add(Block {
            ptr: base,
            size: bytes,
            requested: 0,
            seg,
            prev: NIL,
            next: NIL,
            link_prev: NIL,
            link_next: NIL,
            tag,
            state: State::Free,
        });
        let segment = Segment { base, size: bytes, stream, small, first: i };
        if self.vacant_segments.pop().is_some() {
            self.segments[seg as usize] = Some(segment);
        } else {
            self.segments.push(Some(segment));
        }
        Ok(i)
    }

    /// Cuts `size` bytes aligned to `alignment` out of free block `i` (out
    /// of the bins); the pieces before and after go back to the bins.
    /// Returns the record of the piece handed out.
    #[inline]
    fn carve(&mut self, mut i: u32, size: u64, alignment: u64, small: bool) -> u32 {
        let s = self.sizes;
        let b = self.slab.blocks[i as usize];
        let front = front_gap(b.ptr, alignment);
        if front > 0 {
            let j = self.split_off(i, front);
            self.index(i, small);
            i = j;
        }
        let b = self.slab.blocks[i as usize];
        let rest = b.size - size;
        let split = if small { rest >= s.min_block } else { rest > s.small_size && b.size <= s.max_split };
        if split {
            let j = self.split_off(i, size);
            self.index(j, small);
        }
        i
    }

    /// Splits block `i` after its first `at` bytes; the new record (the
    /// second piece, same tag) is returned.
    #[inline]
    fn split_off(&mut self, i: u32, at: u64) -> u32 {
        let b = self.slab.blocks[i as usize];
        let j = self.slab.add(Block {
            ptr: b.ptr.byte_add(at),
            size: b.size - at,
            requested: 0,
            seg: b.seg,
            prev: i,
            next: b.next,
            link_prev: NIL,
            link_next: NIL,
            tag: b.tag,
            state: State::Free,
        });
        if b.next != NIL {
            self.slab.blocks[b.next as usize].prev = j;
        }
        let first = &mut self.slab.blocks[i as usize];
        first.next = j;
        first.size = at;
        j
    }

    /// Merges block `j` into its lower neighbour `i` (both out of the
    /// bins); the merged block has tag `tag`.
    #[inline]
    fn absorb(&mut self, i: u32, j: u32, tag: u32) {
        let next = self.slab.blocks[j as usize].next;
        let size = self.slab.blocks[j as usize].size;
        if next != NIL {
            self.slab.blocks[next as usize].prev = i;
        }
        let first = &mut self.slab.blocks[i as usize];
        first.size += size;
        first.next = next;
        first.tag = tag;
        self.slab.remove(j);
    }

    /// Whether free block `j` may merge with a free block of tag `tag`,
    /// and the merged tag.
    #[inline]
    fn merge_tag(&self, j: u32, tag: u32) -> Option<u32> {
        let b = &self.slab.blocks[j as usize];
        if b.state != State::Free {
            return None;
        }
        match (b.tag, tag) {
            (a, t) if a == t => Some(a),
            (ANY, t) => Some(t),
            (a, ANY) => Some(a),
            _ => None,
        }
    }
}

/// The bytes from `ptr` to the next address aligned to `alignment`.
#[inline]
fn front_gap(ptr: DevicePtr, alignment: u64) -> u64 {
    (ptr.addr().wrapping_neg() as u64) & (alignment - 1)
}

fn records_full(size: u64) -> Error {
    Error::new(Status::OutOfMemory, format!("caching: no room for another block record ({size} B requested)"))
}

impl Strategy for Caching {
    fn name(&self) -> &str {
        "caching"
    }

    fn alloc(&mut self, request: Request, device: &Device) -> Result<Served> {
        let s = self.sizes;
        let size = round_up(request.size, s.min_block).ok_or_else(|| {
            Error::overflow(format!(
                "caching: {} B rounded up to a multiple of {} B overflows",
                request.size, s.min_block
            ))
        })?;
        // A request takes at most three records (the pieces before, at and
        // after it): checked first, so that carving cannot run out.
        if !self.slab.has_room(3) {
            return Err(records_full(request.size));
        }
        let small = size <= s.small_size;
        let tag = self.tag_of(request.stream);
        let i = match self.find(tag, small, size, request.alignment) {
            Some(i) => {
                self.unindex(i, small);
                i
            }
            None => self.grow(device, small, size, request.alignment, request.stream, tag)?,
        };
        let i = self.carve(i, size, request.alignment, small);
        let b = &mut self.slab.blocks[i as usize];
        b.state = State::Live;
        b.tag = tag;
        b.requested = request.size;
        let served = Served { ptr: b.ptr, bytes: b.size, from_plan: false };
        self.live.insert(served.ptr.addr(), i);
        Ok(served)
    }

    fn free(&mut self, ptr: DevicePtr, _device: &Device) -> std::result::Result<Freed, NotLive> {
        let mut i = self.live.remove(ptr.addr()).ok_or(NotLive)?;
        let b = self.slab.blocks[i as usize];
        let small = self.segments[b.seg as usize].as_ref().expect("a live block's segment exists").small;
        let mut tag = b.tag;
        if b.prev != NIL {
            if let Some(t) = self.merge_tag(b.prev, tag) {
                self.unindex(b.prev, small);
                self.absorb(b.prev, i, t);
                i = b.prev;
                tag = t;
            }
        }
        let next = self.slab.blocks[i as usize].next;
        if next != NIL {
            if let Some(t) = self.merge_tag(next, tag) {
                self.unindex(next, small);
                self.absorb(i, next, t);
            }
        }
        self.index(i, small);
        Ok(Freed { requested: b.requested, bytes: b.size })
    }

    fn release_cached(&mut self, device: &Device) -> u64 {
        let mut released = 0;
        for k in 0..self.segments.len() {
            let Some(seg) = self.segments[k] else { continue };
            let first = self.slab.blocks[seg.first as usize];
            if first.state != State::Free || first.size != seg.size {
                continue;
            }
            self.unindex(seg.first, seg.small);
            self.slab.remove(seg.first);
            self.segments[k] = None;
            self.vacant_segments.push(k as u32);
            device.free(seg.base, seg.size, seg.stream);
            released += seg.size;
        }
        released
    }

    fn streams_synchronized(&mut self) {
        if self.tags[1..].iter().all(|t| t.small.is_empty() && t.large.is_empty()) {
            return;
        }
        for k in 0..self.segments.len() {
            let Some(seg) = self.segments[k] else { continue };
            let mut i = seg.first;
            while i != NIL {
                if self.slab.blocks[i as usize].state == State::Free {
                    self.unindex(i, seg.small);
                    loop {
                        let next = self.slab.blocks[i as usize].next;
                        if next == NIL || self.slab.blocks[next as usize].state != State::Free {
                            break;
                        }
                        self.unindex(next, seg.small);
                        self.absorb(i, next, ANY);
                    }
                    self.slab.blocks[i as usize].tag = ANY;
                    self.index(i, seg.small);
                }
                i = self.slab.blocks[i as usize].next;
            }
        }
    }

    fn cache_figures(&self) -> CacheFigures {
        let largest = self
            .tags
            .iter()
            .map(|t| t.small.largest(&self.slab.blocks).max(t.large.largest(&self.slab.blocks)))
            .max()
            .unwrap_or(0);
        CacheFigures { cached_blocks: self.cached_blocks, cached_bytes: self.cached_bytes, largest_free_block: largest }
    }

    fn release_all(&mut self, device: &Device) {
        for seg in self.segments.drain(..).flatten() {
            device.free(seg.base, seg.size, seg.stream);
        }
        self.vacant_segments.clear();
        self.slab.clear();
        for t in &mut self.tags {
            t.small.clear();
            t.large.clear();
        }
        self.live.clear();
        self.cached_blocks = 0;
        self.cached_bytes = 0;
    }
}
