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
//! Idle chunks are kept per (rounded size, stream) and, inside that, per
//! address alignment class (the number of trailing zero bits of the
//! address), with a bit mask of the non-empty classes: a request of
//! alignment 2^a takes the least-aligned chunk of a class >= a in O(1),
//! which keeps better-aligned chunks for the requests that need them.

use std::hash::{Hash, Hasher};

use super::{CacheFigures, Freed, NotLive, Request, Served, Strategy};
use crate::pool::budget::Device;
use crate::pool::device::{DevicePtr, Stream};
use crate::pool::fast_hash::FastMap;
use crate::status::{Error, Result};

/// The default page: 4 KiB, as RAF's `page_size_exp = 12`.
pub(crate) const DEFAULT_PAGE_SIZE: u64 = 4096;

/// Which idle chunks a free list holds: one rounded size, and the stream
/// they were last used on (`None`: any stream, after a synchronisation).
#[derive(Copy, Clone, PartialEq, Eq)]
struct ClassKey {
    bytes: u64,
    stream: Option<Stream>,
}

impl Hash for ClassKey {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Two words instead of the derive's three (the Option's tag).
        state.write_u64(self.bytes);
        state.write_u64(self.stream.map_or(0, |s| (s.0 as u64).wrapping_add(1)));
    }
}

/// An idle chunk; the stream its device allocation was made on, for the
/// device free.
#[derive(Copy, Clone)]
struct Chunk {
    ptr: DevicePtr,
    device_stream: Stream,
}

/// The idle chunks of one class key, by address alignment class.
#[derive(Default)]
struct FreeList {
    /// Bit c set: `by_align[c]` is not empty.
    mask: u64,
    /// `by_align[c]`: chunks whose address has exactly c trailing zero bits
    /// (63 for anything aligned further).
    by_align: Vec<Vec<Chunk>>,
}

impl FreeList {
    #[inline]
    fn pop(&mut self, align_log2: u32) -> Option<Chunk> {
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
    fn push(&mut self, chunk: Chunk) {
        let class = chunk.ptr.addr().trailing_zeros().min(63) as usize;
        if self.by_align.len() <= class {
            self.by_align.resize_with(class + 1, Vec::new);
        }
        self.by_align[class].push(chunk);
        self.mask |= 1u64 << class;
    }

    fn drain(&mut self) -> impl Iterator<Item = Chunk> + '_ {
        self.mask = 0;
        self.by_align.iter_mut().flat_map(|stack| stack.drain(..))
    }
}

#[derive(Copy, Clone)]
struct Live {
    requested: u64,
    bytes: u64,
    stream: Stream,
    device_stream: Stream,
}

/// The `page-unit` strategy.
pub struct PageUnit {
    page: u64,
    free: FastMap<ClassKey, FreeList>,
    live: FastMap<usize, Live>,
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
            free: FastMap::default(),
            live: FastMap::default(),
            cached_blocks: 0,
            cached_bytes: 0,
        }
    }

    #[inline]
    fn take_cached(&mut self, bytes: u64, align_log2: u32, stream: Stream) -> Option<Chunk> {
        for key in [ClassKey { bytes, stream: Some(stream) }, ClassKey { bytes, stream: None }] {
            if let Some(chunk) = self.free.get_mut(&key).and_then(|list| list.pop(align_log2)) {
                self.cached_blocks -= 1;
                self.cached_bytes -= bytes;
                return Some(chunk);
            }
        }
        None
    }
}

impl Strategy for PageUnit {
    fn name(&self) -> &str {
        "page-unit"
    }

    #[inline]
    fn alloc(&mut self, request: Request, device: &Device) -> Result<Served> {
        let bytes = request.size.checked_next_multiple_of(self.page).ok_or_else(|| {
            Error::overflow(format!("{} B rounded up to {} B pages overflows", request.size, self.page))
        })?;
        let chunk = match self.take_cached(bytes, request.alignment.trailing_zeros(), request.stream) {
            Some(chunk) => chunk,
            None => {
                Chunk { ptr: device.alloc(bytes, request.alignment, request.stream)?, device_stream: request.stream }
            }
        };
        let live = Live { requested: request.size, bytes, stream: request.stream, device_stream: chunk.device_stream };
        self.live.insert(chunk.ptr.addr(), live);
        Ok(Served { ptr: chunk.ptr, bytes, from_plan: false })
    }

    #[inline]
    fn free(&mut self, ptr: DevicePtr, _device: &Device) -> std::result::Result<Freed, NotLive> {
        let live = self.live.remove(&ptr.addr()).ok_or(NotLive)?;
        let key = ClassKey { bytes: live.bytes, stream: Some(live.stream) };
        self.free.entry(key).or_default().push(Chunk { ptr, device_stream: live.device_stream });
        self.cached_blocks += 1;
        self.cached_bytes += live.bytes;
        Ok(Freed { requested: live.requested, bytes: live.bytes })
    }

    fn release_cached(&mut self, device: &Device) -> u64 {
        let mut returned = 0;
        for (key, list) in self.free.iter_mut() {
            for chunk in list.drain() {
                device.free(chunk.ptr, key.bytes, chunk.device_stream);
                returned += key.bytes;
            }
        }
        // Lists of streams other than "any" are dropped: a program that
        // cycles through many streams must not grow the table for ever.
        self.free.retain(|key, _| key.stream.is_none());
        self.cached_blocks = 0;
        self.cached_bytes = 0;
        returned
    }

    fn streams_synchronized(&mut self) {
        let pending: Vec<ClassKey> = self.free.keys().filter(|k| k.stream.is_some()).copied().collect();
        for key in pending {
            if let Some(mut list) = self.free.remove(&key) {
                let any = self.free.entry(ClassKey { bytes: key.bytes, stream: None }).or_default();
                for chunk in list.drain() {
                    any.push(chunk);
                }
            }
        }
    }

    fn cache_figures(&self) -> CacheFigures {
        let largest = self.free.iter().filter(|(_, list)| list.mask != 0).map(|(key, _)| key.bytes).max();
        CacheFigures {
            cached_blocks: self.cached_blocks,
            cached_bytes: self.cached_bytes,
            largest_free_block: largest.unwrap_or(0),
        }
    }

    fn release_all(&mut self, device: &Device) {
        self.release_cached(device);
        // The pool destroys a strategy only when nothing is handed out.
        debug_assert!(self.live.is_empty(), "page-unit destroyed with {} blocks out", self.live.len());
    }
}
