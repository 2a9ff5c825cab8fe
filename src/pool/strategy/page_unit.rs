//! `page-unit`: RAF's `page_unit_pool`. Every request is rounded up to a
//! whole number of pages (4 KiB by default); an idle chunk of exactly that
//! rounded size is handed back when its address satisfies the request's
//! alignment (RAF checks `address % alignment == 0` over the chunks of one
//! size); nothing is split or merged. Idle chunks go back to the device on
//! `release_cached`, which the pool also calls before its one retry when
//! an allocation fails (the device's refusal, or the pool's hard limit,
//! which replaces RAF's soft `RAF_MEMORY_POOL_SIZE_LIMIT`).
//!
//! Unlike RAF, chunks carry their stream: a chunk freed by a block of
//! stream S is reused only for requests on S until the caller says the
//! streams are synchronised.
//!
//! Chunk records sit in a slab; the chunks handed out are found by address
//! in an open-addressing table. Idle chunks are kept per rounded size (a
//! class), per stream inside it (plus an "any stream" list, after a
//! synchronisation), and per address alignment class (the number of
//! trailing zero bits of the address) with a bit mask of the non-empty
//! ones: a request of alignment 2^a takes the least-aligned chunk of a
//! class >= a in O(1), which keeps better-aligned chunks for the requests
//! that need them. A steady state (sizes seen before) allocates nothing.

use super::{CacheFigures, Freed, NotLive, Request, Served, Strategy};
use crate::pool::budget::Device;
use crate::pool::device::{DevicePtr, Stream};
use crate::pool::fast_hash::FastMap;
use crate::pool::live_table::LiveTable;
use crate::status::{Error, Result};

/// The default page: 4 KiB, as RAF's `page_size_exp = 12`.
pub(crate) const DEFAULT_PAGE_SIZE: u64 = 4096;

/// A device chunk: where it is, what its device allocation was made on
/// (for the device free), its size class, and its current use.
#[derive(Copy, Clone)]
struct Chunk {
    ptr: DevicePtr,
    device_stream: Stream,
    class: u32,
    /// Bytes asked for while handed out.
    requested: u64,
    /// The stream it is used on (or was, while idle).
    stream: Stream,
}

/// Idle chunks (slab indices) by address alignment class.
#[derive(Default)]
struct FreeList {
    /// Bit c set: `by_align[c]` is not empty.
    mask: u64,
    /// `by_align[c]`: chunks whose address has exactly c trailing zero bits
    /// (63 for anything aligned further).
    by_align: Vec<Vec<u32>>,
}

impl FreeList {
    #[inline]
    fn pop(&mut self, align_log2: u32) -> Option<u32> {
        let bits = self.mask & (u64::MAX << align_log2);
        if bits == 0 {
            return None;
        }
        let class = bits.trailing_zeros() as usize;
        let stack = &mut self.by_align[class];
        let chunk = stack.pop();
        if stack.is_empty() {
            self.mask &= !(1u64 << class);
        }
        chunk
    }

    #[inline]
    fn push(&mut self, index: u32, addr: usize) {
        let class = addr.trailing_zeros().min(63) as usize;
        if self.by_align.len() <= class {
            self.by_align.resize_with(class + 1, Vec::new);
        }
        self.by_align[class].push(index);
        self.mask |= 1u64 << class;
    }

    fn drain(&mut self) -> impl Iterator<Item = u32> + '_ {
        self.mask = 0;
        self.by_align.iter_mut().flat_map(|stack| stack.drain(..))
    }
}

/// The idle chunks of one rounded size.
struct Class {
    bytes: u64,
    /// Freed on a stream, reusable on that stream only.
    by_stream: Vec<(Stream, FreeList)>,
    /// Reusable on any stream (after a synchronisation).
    any: FreeList,
}

impl Class {
    #[inline]
    fn stream_list(&mut self, stream: Stream) -> &mut FreeList {
        // Programs use few streams: a short scan beats a hash.
        match self.by_stream.iter().position(|(s, _)| *s == stream) {
            Some(i) => &mut self.by_stream[i].1,
            None => {
                self.by_stream.push((stream, FreeList::default()));
                &mut self.by_stream.last_mut().expect("just pushed").1
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.any.mask == 0 && self.by_stream.iter().all(|(_, l)| l.mask == 0)
    }
}

/// The `page-unit` strategy. Aligned to two cache lines: the shards'
/// instances are allocated one after the other, and each is written on
/// every call, by a different thread (no false sharing between shards).
#[repr(align(128))]
pub struct PageUnit {
    page: u64,
    slab: Vec<Chunk>,
    /// Slab entries whose chunk went back to the device.
    vacant: Vec<u32>,
    classes: Vec<Class>,
    class_of: FastMap<u64, u32>,
    /// The last (rounded size, class) looked up: runs of one size skip the
    /// hash.
    last_class: (u64, u32),
    live: LiveTable,
    cached_blocks: u64,
    cached_bytes: u64,
}

impl PageUnit {
    /// A pool of `page_size` pages (a power of two; the pool checks its
    /// options).
    pub fn new(page_size: u64) -> Self {
        debug_assert!(page_size.is_power_of_two(), "page size {page_size}");
        PageUnit {
            page: page_size,
            slab: Vec::new(),
            vacant: Vec::new(),
            classes: Vec::new(),
            class_of: FastMap::default(),
            last_class: (0, 0),
            live: LiveTable::new(),
            cached_blocks: 0,
            cached_bytes: 0,
        }
    }

    #[inline]
    fn class(&mut self, bytes: u64) -> u32 {
        if self.last_class.0 == bytes {
            return self.last_class.1;
        }
        let next = self.classes.len() as u32;
        let class = *self.class_of.entry(bytes).or_insert(next);
        if class == next {
            self.classes.push(Class { bytes, by_stream: Vec::new(), any: FreeList::default() });
        }
        self.last_class = (bytes, class);
        class
    }

    #[inline]
    fn take_cached(&mut self, class: u32, align_log2: u32, stream: Stream) -> Option<u32> {
        let c = &mut self.classes[class as usize];
        let mine = c.by_stream.iter_mut().find(|(s, _)| *s == stream).and_then(|(_, l)| l.pop(align_log2));
        let index = mine.or_else(|| c.any.pop(align_log2))?;
        self.cached_blocks -= 1;
        self.cached_bytes -= c.bytes;
        Some(index)
    }

    #[cold]
    fn take_from_device(&mut self, class: u32, bytes: u64, request: Request, device: &Device) -> Result<u32> {
        let ptr = device.alloc(bytes, request.alignment, request.stream)?;
        let chunk = Chunk { ptr, device_stream: request.stream, class, requested: 0, stream: request.stream };
        Ok(match self.vacant.pop() {
            Some(i) => {
                self.slab[i as usize] = chunk;
                i
            }
            None => {
                self.slab.push(chunk);
                (self.slab.len() - 1) as u32
            }
        })
    }
}

#[cold]
fn page_overflow(size: u64, page: u64) -> Error {
    Error::overflow(format!("{size} B rounded up to {page} B pages overflows"))
}

impl Strategy for PageUnit {
    fn name(&self) -> &str {
        "page-unit"
    }

    fn reuses_identical_requests(&self) -> bool {
        true
    }

    #[inline]
    fn alloc(&mut self, request: Request, device: &Device) -> Result<Served> {
        // The page is a power of two: a mask, not a division. A request of
        // 0 B takes one page, as one of 1 B.
        let bytes = match request.size.max(1).checked_add(self.page - 1) {
            Some(end) => end & !(self.page - 1),
            None => return Err(page_overflow(request.size, self.page)),
        };
        let class = self.class(bytes);
        let index = match self.take_cached(class, request.alignment.trailing_zeros(), request.stream) {
            Some(i) => i,
            None => self.take_from_device(class, bytes, request, device)?,
        };
        let chunk = &mut self.slab[index as usize];
        chunk.requested = request.size;
        chunk.stream = request.stream;
        let ptr = chunk.ptr;
        self.live.insert(ptr.addr(), index);
        Ok(Served { ptr, bytes, from_plan: false })
    }

    #[inline]
    fn free(&mut self, ptr: DevicePtr, _device: &Device) -> std::result::Result<Freed, NotLive> {
        let index = self.live.remove(ptr.addr()).ok_or(NotLive)?;
        let chunk = self.slab[index as usize];
        let class = &mut self.classes[chunk.class as usize];
        class.stream_list(chunk.stream).push(index, ptr.addr());
        self.cached_blocks += 1;
        self.cached_bytes += class.bytes;
        Ok(Freed { requested: chunk.requested, bytes: class.bytes })
    }

    fn release_cached(&mut self, device: &Device) -> u64 {
        let mut returned = 0;
        for class in self.classes.iter_mut() {
            let lists = class.by_stream.iter_mut().map(|(_, l)| l).chain(std::iter::once(&mut class.any));
            for list in lists {
                for index in list.drain() {
                    let chunk = &self.slab[index as usize];
                    device.free(chunk.ptr, class.bytes, chunk.device_stream);
                    returned += class.bytes;
                    self.vacant.push(index);
                }
            }
            // A program that cycles through many streams must not grow the
            // lists for ever.
            class.by_stream.clear();
        }
        self.cached_blocks = 0;
        self.cached_bytes = 0;
        returned
    }

    fn streams_synchronized(&mut self) {
        for class in self.classes.iter_mut() {
            for (_, mut list) in class.by_stream.drain(..) {
                for index in list.drain() {
                    class.any.push(index, self.slab[index as usize].ptr.addr());
                }
            }
        }
    }

    fn cache_figures(&self) -> CacheFigures {
        let largest = self.classes.iter().filter(|c| !c.is_empty()).map(|c| c.bytes).max();
        CacheFigures {
            cached_blocks: self.cached_blocks,
            cached_bytes: self.cached_bytes,
            largest_free_block: largest.unwrap_or(0),
        }
    }

    fn release_all(&mut self, device: &Device) {
        self.release_cached(device);
        // The pool destroys a strategy only when nothing is handed out.
        debug_assert_eq!(self.live.len(), 0, "page-unit destroyed with blocks out");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_serves_only_requests_its_address_is_aligned_for() {
        let mut list = FreeList::default();
        // Chunks 0..3 at addresses aligned to 2^7, 2^12, 2^16 exactly.
        list.push(0, 0x7f00_0000_0080);
        list.push(1, 0x7f00_0000_1000);
        list.push(2, 0x7f00_0001_0000);
        assert_eq!(list.mask, (1 << 7) | (1 << 12) | (1 << 16));
        // A 2^13 request takes the least-aligned chunk that fits it.
        assert_eq!(list.pop(13), Some(2));
        assert_eq!(list.pop(13), None, "the 2^7 and 2^12 chunks are not aligned enough");
        assert_eq!(list.pop(8), Some(1));
        assert_eq!(list.pop(0), Some(0));
        assert_eq!((list.pop(0), list.mask), (None, 0));
    }

    #[test]
    fn requests_are_rounded_to_whole_pages() {
        let dev = Device::new(crate::pool::device::host(), None);
        let mut pages = PageUnit::new(1024);
        for (size, bytes) in [(1u64, 1024u64), (1024, 1024), (1025, 2048), (5000, 5120)] {
            let served = pages.alloc(Request { size, alignment: 8, stream: Stream::DEFAULT }, &dev).unwrap();
            assert_eq!(served.bytes, bytes, "{size} B");
            assert_eq!(pages.free(served.ptr, &dev), Ok(Freed { requested: size, bytes }));
        }
        let e = pages.alloc(Request { size: u64::MAX - 5, alignment: 1, stream: Stream::DEFAULT }, &dev).unwrap_err();
        assert_eq!(e.status(), crate::status::Status::Overflow);
        assert_eq!(pages.cache_figures().cached_blocks, 3, "1 B and 1024 B share one page class");
        assert_eq!(pages.release_cached(&dev), 1024 + 2048 + 5120);
        assert_eq!(dev.counters().reserved_bytes, 0);
    }
}
