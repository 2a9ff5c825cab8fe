//! The caching strategy's state and its operations (see the module above
//! for the rules they follow).

use crate::pool::budget::Device;
use crate::pool::device::{DevicePtr, Stream};
use crate::pool::strategy::{CacheFigures, Freed, NotLive, Request, Served};
use crate::status::{Error, Result, Status};

use super::bins::{bin_of, Bins, BINS};
use super::block::{Block, Slab, State, ANY, NIL};
use super::{CachingOptions, GROWTH_DIVISOR, GROWTH_MULTIPLE, OVERSIZE_SLACK};
use crate::pool::live_table::LiveTable;

/// The sizes in use: the options made consistent (see `Caching::new`).
#[derive(Copy, Clone, Debug)]
pub(super) struct Sizes {
    pub(super) max_split: u64,
    pub(super) small_size: u64,
    pub(super) small_segment: u64,
    pub(super) large_round: u64,
    /// A power of two.
    pub(super) min_block: u64,
    /// `log2(min_block)`.
    pub(super) shift: u32,
}

impl Sizes {
    fn new(options: &CachingOptions) -> Sizes {
        let min_block = options.min_block.max(1).checked_next_power_of_two().unwrap_or(1 << 63);
        let small_size = options.small_size;
        Sizes {
            max_split: options.max_split,
            small_size,
            small_segment: round_up_saturating(options.small_segment.max(small_size).max(1), min_block),
            large_round: round_up_saturating(options.large_round.max(1), min_block),
            min_block,
            shift: min_block.trailing_zeros(),
        }
    }

    /// `size` rounded up to `min_block` (0 B to one `min_block`: a block
    /// of its own); `None` on overflow.
    #[inline]
    fn block_size(&self, size: u64) -> Option<u64> {
        size.max(1).checked_add(self.min_block - 1).map(|s| s & !(self.min_block - 1))
    }

    /// Whether a free block of `block` bytes may serve `size` bytes (both
    /// rounded) under the oversize rules: a request up to `max_split`
    /// never takes a block over it; a larger request takes one less than
    /// [`OVERSIZE_SLACK`] larger.
    #[inline]
    fn oversize_allows(&self, block: u64, size: u64) -> bool {
        if size > self.max_split {
            block - size < OVERSIZE_SLACK
        } else {
            block <= self.max_split
        }
    }

    /// Whether a block of `block` bytes serving `size` bytes is split
    /// (PyTorch's rule, see the module documentation).
    #[inline]
    fn splits(&self, block: u64, size: u64, small: bool) -> bool {
        let rest = block - size;
        if small {
            rest >= self.min_block
        } else {
            rest > self.small_size && block <= self.max_split
        }
    }
}

/// `x` rounded up to a multiple of `unit` (`unit > 0`); `None` on overflow.
#[inline]
pub(super) fn round_up(x: u64, unit: u64) -> Option<u64> {
    x.checked_add(unit - 1).map(|y| y - y % unit)
}

/// `x` rounded up to a multiple of `unit`, or the largest multiple that
/// fits in a `u64`.
fn round_up_saturating(x: u64, unit: u64) -> u64 {
    round_up(x, unit).unwrap_or(u64::MAX - u64::MAX % unit)
}

/// The bytes from `ptr` to the next address aligned to `alignment`.
#[inline]
fn front_gap(ptr: DevicePtr, alignment: u64) -> u64 {
    (ptr.addr().wrapping_neg() as u64) & (alignment - 1)
}

#[cold]
fn rounding_overflows(size: u64, unit: u64) -> Error {
    Error::overflow(format!("caching: {size} B rounded up to a multiple of {unit} B overflows"))
}

#[cold]
fn records_full(size: u64) -> Error {
    Error::new(Status::OutOfMemory, format!("caching: no room for another block record ({size} B requested)"))
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
    /// Coalesced free blocks, `[large, small]`.
    bins: [Bins; 2],
    /// Deferred blocks (freed, not yet coalesced; only on stream tags), by
    /// the bin of their request's rounded size, `[large, small]`: the first
    /// block of a bin, the others chained through `Block::link_next`. Empty
    /// until the first deferred block.
    deferred: [Vec<u32>; 2],
}

impl Tag {
    fn new(stream: Option<Stream>, shift: u32) -> Tag {
        Tag { stream, bins: [Bins::new(shift), Bins::new(shift)], deferred: [Vec::new(), Vec::new()] }
    }
}

/// The strategy's state.
pub(super) struct Cache {
    pub(super) sizes: Sizes,
    slab: Slab,
    segments: Vec<Option<Segment>>,
    vacant_segments: Vec<u32>,
    tags: Vec<Tag>,
    /// The last stream looked up and its tag, so that a program on one
    /// stream finds its tag without a search.
    last_tag: (Stream, u32),
    /// The blocks handed out and the deferred ones, by address: a deferred
    /// block taken back needs no insertion, and freeing it again finds it
    /// deferred (a double free).
    pub(super) live: LiveTable,
    /// The blocks deferred since the last coalescing, each once (its
    /// `logged` flag), some since taken back: a block freed, taken back
    /// and freed again in a loop is logged once.
    deferred_log: Vec<u32>,
    /// The last block freed, deferred on no list (`NIL` when none or taken
    /// back): a program freeing and asking again for one size meets it
    /// first, without a list to walk.
    hot: u32,
    /// Coalesced free blocks and their bytes (deferred ones are counted
    /// when they are coalesced: every reader of the figures coalesces
    /// first).
    cached_blocks: u64,
    cached_bytes: u64,
    /// Bytes of the large segments held (the growth padding is a share of
    /// them).
    large_reserved: u64,
}

impl Cache {
    pub(super) fn new(options: &CachingOptions) -> Cache {
        let sizes = Sizes::new(options);
        Cache {
            sizes,
            slab: Slab::new(),
            segments: Vec::new(),
            vacant_segments: Vec::new(),
            tags: vec![Tag::new(None, sizes.shift)],
            last_tag: (Stream::DEFAULT, NIL),
            live: LiveTable::new(),
            deferred_log: Vec::new(),
            hot: NIL,
            cached_blocks: 0,
            cached_bytes: 0,
            large_reserved: 0,
        }
    }

    /// The tag of `stream`, made on first use.
    #[inline]
    fn tag_of(&mut self, stream: Stream) -> u32 {
        if self.last_tag.1 != NIL && self.last_tag.0 == stream {
            return self.last_tag.1;
        }
        self.look_up_tag(stream)
    }

    #[cold]
    fn look_up_tag(&mut self, stream: Stream) -> u32 {
        let tag = match self.tags.iter().position(|t| t.stream == Some(stream)) {
            Some(t) => t as u32,
            None => {
                self.tags.push(Tag::new(Some(stream), self.sizes.shift));
                (self.tags.len() - 1) as u32
            }
        };
        self.last_tag = (stream, tag);
        tag
    }

    // --- coalesced free blocks -------------------------------------------

    /// Puts free block `i` (of a small segment when `small`) into the bins
    /// of its tag.
    #[inline]
    fn index(&mut self, i: u32, small: bool) {
        let b = &mut self.slab.blocks[i as usize];
        b.state = State::Free;
        self.cached_blocks += 1;
        self.cached_bytes += b.size;
        self.tags[b.tag as usize].bins[small as usize].insert(&mut self.slab.blocks, i);
    }

    /// Takes free block `i` out of its bins.
    #[inline]
    fn unindex(&mut self, i: u32, small: bool) {
        let b = &self.slab.blocks[i as usize];
        self.cached_blocks -= 1;
        self.cached_bytes -= b.size;
        self.tags[b.tag as usize].bins[small as usize].remove(&mut self.slab.blocks, i);
    }

    /// The smallest free block that can serve `size` bytes aligned to
    /// `alignment` on tag `tag`, under the oversize rules.
    fn find(&self, tag: u32, small: bool, size: u64, alignment: u64) -> Option<u32> {
        let s = self.sizes;
        let fits_all = alignment <= s.min_block;
        let fits = |b: &Block| {
            let front = front_gap(b.ptr, alignment);
            // An oversize block is never split, at the front either.
            b.size.checked_sub(front).is_some_and(|rest| rest >= size) && (front == 0 || b.size <= s.max_split)
        };
        let pick =
            |t: u32| self.tags[t as usize].bins[small as usize].best_fit(&self.slab.blocks, size, fits_all, fits);
        let size_of = |i: u32| self.slab.blocks[i as usize].size;
        let best = match (pick(tag), pick(ANY)) {
            (Some(a), Some(b)) => Some(if size_of(b) < size_of(a) { b } else { a }),
            (a, b) => a.or(b),
        }?;
        // The best fit is the smallest block that fits: when it breaks the
        // oversize rules, every larger one does too.
        s.oversize_allows(size_of(best), size).then_some(best)
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
        if small {
            return self.new_segment(device, s.small_segment.max(size), alignment, stream, tag, true);
        }
        let rounded = round_up(size, s.large_round).ok_or_else(|| {
            Error::overflow(format!(
                "caching: {size} B rounded up to a multiple of {} B (the large segment unit) overflows",
                s.large_round
            ))
        })?;
        if s.max_split != u64::MAX {
            // A padded or merged segment over max_split could never be
            // split: with a max_split, a segment is the request alone.
            return self.new_segment(device, rounded, alignment, stream, tag, false);
        }
        let padding = (self.large_reserved / GROWTH_DIVISOR).min(rounded.saturating_mul(GROWTH_MULTIPLE));
        let padded = round_up(padding, s.large_round).unwrap_or(rounded).max(rounded);
        let merged = self.release_free_large(device, tag);
        match self.new_segment(device, padded.saturating_add(merged), alignment, stream, tag, false) {
            Ok(i) => Ok(i),
            Err(e) if e.status() == Status::OutOfMemory && padded.saturating_add(merged) > rounded => {
                // The padded segment did not fit (under the limit or on the
                // device): the request alone may. The refusal is not this
                // request's. Any other refusal (a block the device handed
                // out twice, or misaligned) is the request's too.
                crate::pool::budget::take_limit_refusal();
                self.new_segment(device, rounded, alignment, stream, tag, false)
            }
            Err(e) => Err(e),
        }
    }

    /// Allocates a segment of `bytes` on `stream`; returns its one block,
    /// free but not in the bins, of tag `tag`.
    fn new_segment(
        &mut self,
        device: &Device,
        bytes: u64,
        alignment: u64,
        stream: Stream,
        tag: u32,
        small: bool,
    ) -> Result<u32> {
        let s = self.sizes;
        let seg = match self.vacant_segments.last() {
            Some(&k) => k,
            None if self.segments.len() < NIL as usize => self.segments.len() as u32,
            None => return Err(records_full(bytes)),
        };
        let base = device.alloc(bytes, alignment.max(s.min_block), stream)?;
        let i = self.slab.add(Block::piece(base, bytes, seg, small, tag, (NIL, NIL)));
        let segment = Segment { base, size: bytes, stream, small, first: i };
        if !small {
            self.large_reserved += bytes;
        }
        if self.vacant_segments.pop().is_some() {
            self.segments[seg as usize] = Some(segment);
        } else {
            self.segments.push(Some(segment));
        }
        Ok(i)
    }

    /// Whether segment `seg` is large and one free block usable on `tag`.
    fn wholly_free_large(&self, seg: &Segment, tag: u32) -> bool {
        let first = &self.slab.blocks[seg.first as usize];
        !seg.small && first.state == State::Free && first.size == seg.size && (first.tag == tag || first.tag == ANY)
    }

    /// Gives the large segments that are one free block usable on `tag`
    /// back to the device; returns their bytes.
    fn release_free_large(&mut self, device: &Device, tag: u32) -> u64 {
        let mut released = 0;
        for k in 0..self.segments.len() {
            match self.segments[k] {
                Some(seg) if self.wholly_free_large(&seg, tag) => released += self.release_segment(device, k),
                _ => {}
            }
        }
        released
    }

    /// Whether no block of segment `seg` is handed out or deferred (its
    /// free blocks may be tagged with different streams).
    fn idle(&self, seg: &Segment) -> bool {
        let mut i = seg.first;
        while i != NIL {
            let b = &self.slab.blocks[i as usize];
            if b.state != State::Free {
                return false;
            }
            i = b.next;
        }
        true
    }

    /// Gives idle segment `k` (every block free) back to the device;
    /// returns its bytes.
    fn release_segment(&mut self, device: &Device, k: usize) -> u64 {
        let Some(seg) = self.segments[k].take() else { return 0 };
        let mut i = seg.first;
        while i != NIL {
            let next = self.slab.blocks[i as usize].next;
            self.unindex(i, seg.small);
            self.slab.remove(i);
            i = next;
        }
        self.vacant_segments.push(k as u32);
        device.free(seg.base, seg.size, seg.stream);
        if !seg.small {
            self.large_reserved -= seg.size;
        }
        seg.size
    }

    /// Cuts `size` bytes aligned to `alignment` out of free block `i` (out
    /// of the bins); the pieces before and after go back to the bins.
    /// Returns the record of the piece handed out.
    fn carve(&mut self, mut i: u32, size: u64, alignment: u64, small: bool) -> u32 {
        let front = front_gap(self.slab.blocks[i as usize].ptr, alignment);
        if front > 0 {
            let j = self.split_off(i, front);
            self.index(i, small);
            i = j;
        }
        if self.sizes.splits(self.slab.blocks[i as usize].size, size, small) {
            let j = self.split_off(i, size);
            self.index(j, small);
        }
        i
    }

    /// Splits block `i` after its first `at` bytes; the new record (the
    /// second piece, same tag) is returned.
    fn split_off(&mut self, i: u32, at: u64) -> u32 {
        let b = self.slab.blocks[i as usize];
        let j = self.slab.add(Block::piece(b.ptr.byte_add(at), b.size - at, b.seg, b.small, b.tag, (i, b.next)));
        if b.next != NIL {
            self.slab.blocks[b.next as usize].prev = j;
        }
        let first = &mut self.slab.blocks[i as usize];
        first.next = j;
        first.size = at;
        j
    }

    /// Merges block `j` into its lower neighbour `i` (both out of the bins
    /// and deferred lists); the merged block has tag `tag`.
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

    /// Whether block `j` is free (coalesced or deferred) and may merge
    /// with a free block of tag `tag`; the merged tag.
    fn merge_tag(&self, j: u32, tag: u32) -> Option<u32> {
        let b = &self.slab.blocks[j as usize];
        if b.state != State::Free && b.state != State::Deferred {
            return None;
        }
        match (b.tag, tag) {
            (a, t) if a == t => Some(a),
            (ANY, t) => Some(t),
            (a, ANY) => Some(a),
            _ => None,
        }
    }

    /// Takes free neighbour `j` out of its bin or the deferred chain.
    fn take_neighbour(&mut self, j: u32, small: bool) {
        if self.slab.blocks[j as usize].state == State::Deferred {
            self.live.remove(self.slab.blocks[j as usize].ptr.addr());
        } else {
            self.unindex(j, small);
        }
    }

    /// Merges block `i` (out of every list) with the free neighbours that
    /// may merge with it (several on a side when deferred blocks lie next
    /// to each other) and puts the result in the bins.
    fn coalesce(&mut self, mut i: u32, small: bool) {
        let mut tag = self.slab.blocks[i as usize].tag;
        loop {
            let prev = self.slab.blocks[i as usize].prev;
            let Some(t) = (prev != NIL).then(|| self.merge_tag(prev, tag)).flatten() else { break };
            self.take_neighbour(prev, small);
            self.absorb(prev, i, t);
            i = prev;
            tag = t;
        }
        loop {
            let next = self.slab.blocks[i as usize].next;
            let Some(t) = (next != NIL).then(|| self.merge_tag(next, tag)).flatten() else { break };
            self.take_neighbour(next, small);
            self.absorb(i, next, t);
            tag = t;
        }
        self.index(i, small);
    }

    // --- deferred blocks --------------------------------------------------

    /// Whether deferred block `b` serves a request of `size` bytes
    /// (rounded) aligned to `alignment` whole: exactly its size, or a large
    /// block that the split rule would hand out whole anyway.
    #[inline]
    fn serves_whole(&self, b: &Block, size: u64, small: bool, alignment: u64) -> bool {
        let s = &self.sizes;
        let whole =
            b.size == size || (b.size > size && !s.splits(b.size, size, small) && s.oversize_allows(b.size, size));
        whole && (alignment <= s.min_block || front_gap(b.ptr, alignment) == 0)
    }

    /// A deferred block of tag `tag` that a request of `size` bytes
    /// (rounded) aligned to `alignment` takes back whole, off its list:
    /// the last block freed, or the first of the request size's list.
    #[inline]
    fn take_deferred(&mut self, tag: u32, small: bool, size: u64, alignment: u64) -> Option<u32> {
        let hot = self.hot;
        if hot != NIL {
            let b = &self.slab.blocks[hot as usize];
            if b.tag == tag && b.small == small && self.serves_whole(b, size, small, alignment) {
                self.hot = NIL;
                return Some(hot);
            }
        }
        let bin = bin_of(size >> self.sizes.shift);
        let i = *self.tags[tag as usize].deferred[small as usize].get(bin)?;
        if i == NIL || !self.serves_whole(&self.slab.blocks[i as usize], size, small, alignment) {
            return None;
        }
        self.tags[tag as usize].deferred[small as usize][bin] = self.slab.blocks[i as usize].link_next;
        Some(i)
    }

    /// Coalesces every deferred block.
    pub(super) fn coalesce_deferred(&mut self) {
        if self.deferred_log.is_empty() {
            return;
        }
        let log = std::mem::take(&mut self.deferred_log);
        self.hot = NIL;
        // The deferred lists go first (they are only ever entered at their
        // first block, so emptying the heads empties them). Entries of
        // blocks taken back since, or of the hot block, clear heads that
        // are emptied anyway.
        for &i in &log {
            let b = &mut self.slab.blocks[i as usize];
            b.logged = false;
            // (The hot block's list may not exist yet.)
            if let Some(head) = self.tags[b.tag as usize].deferred[b.small as usize].get_mut(usize::from(b.request_bin))
            {
                *head = NIL;
            }
        }
        for &i in &log {
            // A block may have been taken back (live), or merged into a
            // neighbour logged before it (vacant).
            let b = self.slab.blocks[i as usize];
            if b.state == State::Deferred {
                self.live.remove(b.ptr.addr());
                self.coalesce(i, b.small);
            }
        }
        // The log's memory is kept for the next round.
        self.deferred_log = log;
        self.deferred_log.clear();
    }

    // --- the strategy -----------------------------------------------------

    #[inline]
    pub(super) fn alloc(&mut self, request: Request, device: &Device) -> Result<Served> {
        let Some(size) = self.sizes.block_size(request.size) else {
            return Err(rounding_overflows(request.size, self.sizes.min_block));
        };
        let small = size <= self.sizes.small_size;
        let tag = self.tag_of(request.stream);
        if let Some(i) = self.take_deferred(tag, small, size, request.alignment) {
            // Still in the address table.
            let b = &mut self.slab.blocks[i as usize];
            b.state = State::Live;
            b.requested = request.size;
            return Ok(Served { ptr: b.ptr, bytes: b.size, from_plan: false });
        }
        let i = self.alloc_coalesced(tag, small, size, request, device)?;
        let b = &mut self.slab.blocks[i as usize];
        b.state = State::Live;
        b.tag = tag;
        b.requested = request.size;
        let served = Served { ptr: b.ptr, bytes: b.size, from_plan: false };
        self.live.insert(served.ptr.addr(), i);
        Ok(served)
    }

    /// Serves a request from the coalesced blocks or a fresh segment.
    #[inline(never)]
    fn alloc_coalesced(&mut self, tag: u32, small: bool, size: u64, request: Request, device: &Device) -> Result<u32> {
        // A request takes at most two more records (the pieces before and
        // after it): checked first, so that carving cannot run out.
        if !self.slab.has_room(2) {
            return Err(records_full(request.size));
        }
        self.coalesce_deferred();
        let i = match self.find(tag, small, size, request.alignment) {
            Some(i) => {
                self.unindex(i, small);
                i
            }
            None => self.grow(device, small, size, request.alignment, request.stream, tag)?,
        };
        Ok(self.carve(i, size, request.alignment, small))
    }

    #[inline]
    pub(super) fn free(&mut self, ptr: DevicePtr) -> std::result::Result<Freed, NotLive> {
        let i = self.live.get(ptr.addr()).ok_or(NotLive)?;
        let b = &mut self.slab.blocks[i as usize];
        if b.state != State::Live {
            return Err(NotLive);
        }
        b.state = State::Deferred;
        let freed = Freed { requested: b.requested, bytes: b.size };
        if !b.logged {
            b.logged = true;
            self.deferred_log.push(i);
        }
        // The previous hot block (if any) goes to its list: most recently
        // freed first, as with the lists.
        let previous = std::mem::replace(&mut self.hot, i);
        if previous != NIL {
            self.push_deferred(previous);
        }
        Ok(freed)
    }

    /// Puts deferred block `i` on the list of its request's size.
    #[inline]
    fn push_deferred(&mut self, i: u32) {
        let b = &mut self.slab.blocks[i as usize];
        // A block handed out was rounded without overflow, so its request
        // rounds up again without one.
        let rounded = self.sizes.block_size(b.requested).unwrap_or(u64::MAX);
        let bin = bin_of(rounded >> self.sizes.shift);
        b.request_bin = bin as u16;
        let list = &mut self.tags[b.tag as usize].deferred[b.small as usize];
        if list.is_empty() {
            *list = vec![NIL; BINS];
        }
        b.link_next = list[bin];
        list[bin] = i;
    }

    /// Gives back every idle segment: every segment none of whose blocks
    /// is handed out, whatever streams its free blocks were freed on (as
    /// PyTorch's `empty_cache`, which synchronises first; see the module
    /// documentation).
    pub(super) fn release_cached(&mut self, device: &Device) -> u64 {
        self.coalesce_deferred();
        let mut released = 0;
        for k in 0..self.segments.len() {
            match self.segments[k] {
                Some(seg) if self.idle(&seg) => released += self.release_segment(device, k),
                _ => {}
            }
        }
        released
    }

    pub(super) fn streams_synchronized(&mut self) {
        self.coalesce_deferred();
        if self.tags[1..].iter().all(|t| t.bins.iter().all(Bins::is_empty)) {
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

    /// The figures of the blocks in the bins (call
    /// [`Cache::coalesce_deferred`] first for those of a coalesced cache).
    pub(super) fn figures(&self) -> CacheFigures {
        let largest =
            self.tags.iter().flat_map(|t| t.bins.iter()).map(|bins| bins.largest(&self.slab.blocks)).max().unwrap_or(0);
        CacheFigures { cached_blocks: self.cached_blocks, cached_bytes: self.cached_bytes, largest_free_block: largest }
    }

    pub(super) fn release_all(&mut self, device: &Device) {
        for seg in self.segments.drain(..).flatten() {
            device.free(seg.base, seg.size, seg.stream);
        }
        self.vacant_segments.clear();
        self.slab.clear();
        for t in &mut self.tags {
            t.bins.iter_mut().for_each(Bins::clear);
            t.deferred.iter_mut().for_each(Vec::clear);
        }
        self.live.clear();
        self.deferred_log.clear();
        self.hot = NIL;
        self.cached_blocks = 0;
        self.cached_bytes = 0;
        self.large_reserved = 0;
    }

    /// Checks the structure: segments tile into blocks with consistent
    /// links, the counters match the free blocks, every block handed out
    /// or deferred is in the address table, and, when nothing is deferred,
    /// no two neighbours that may merge are left apart.
    #[cfg(test)]
    pub(super) fn check(&self) {
        let (mut free_blocks, mut free_bytes, mut addressed) = (0, 0, 0);
        for seg in self.segments.iter().flatten() {
            let mut i = seg.first;
            let mut prev = NIL;
            let mut offset = 0;
            while i != NIL {
                let b = self.slab.blocks[i as usize];
                assert_eq!(b.prev, prev);
                assert_eq!(b.ptr.offset_from(seg.base), Some(offset));
                assert_eq!(b.small, seg.small);
                assert!(b.size > 0 && b.size % self.sizes.min_block == 0);
                match b.state {
                    State::Vacant => panic!("a vacant record in a segment"),
                    State::Deferred => {}
                    State::Free => {
                        free_blocks += 1;
                        free_bytes += b.size;
                        if prev != NIL && self.deferred_log.is_empty() {
                            let p = self.slab.blocks[prev as usize];
                            assert!(p.state != State::Free || self.merge_tag(prev, b.tag).is_none(), "unmerged");
                        }
                    }
                    State::Live => {}
                }
                if matches!(b.state, State::Live | State::Deferred) {
                    addressed += 1;
                    assert_eq!(self.live.get(b.ptr.addr()), Some(i));
                }
                offset += b.size;
                prev = i;
                i = b.next;
            }
            assert_eq!(offset, seg.size);
        }
        assert_eq!((free_blocks, free_bytes), (self.cached_blocks, self.cached_bytes));
        assert_eq!(addressed, self.live.len());
    }
}
