//! Block records: one per piece of a segment, free or handed out, kept in a
//! slab (a vector with a free list of indices) so that splitting and
//! coalescing never allocate once the slab has grown.

use crate::pool::device::DevicePtr;

/// No block (the end of a list, a segment's edge).
pub(super) const NIL: u32 = u32::MAX;

/// The stream tag of a free block reusable on every stream (after
/// `streams_synchronized`); other tags are per-stream.
pub(super) const ANY: u32 = 0;

/// Where a record is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum State {
    /// In the slab's free list: no block.
    Vacant,
    /// A free block, in the bins of its tag.
    Free,
    /// A free block waiting to be coalesced, in a deferred list (and still
    /// in the address table).
    Deferred,
    /// Handed out (in the address table).
    Live,
}

/// A piece of a segment.
#[derive(Copy, Clone, Debug)]
pub(super) struct Block {
    /// Its start.
    pub(super) ptr: DevicePtr,
    /// Its bytes (a multiple of `min_block`).
    pub(super) size: u64,
    /// While handed out: the bytes asked for.
    pub(super) requested: u64,
    /// Its segment.
    pub(super) seg: u32,
    /// The neighbours in its segment, by address (`NIL` at the edges).
    pub(super) prev: u32,
    pub(super) next: u32,
    /// The neighbours in its bin's list while free; `link_next` chains its
    /// deferred list while deferred, and the slab's free list while vacant.
    pub(super) link_prev: u32,
    pub(super) link_next: u32,
    /// Its stream tag: while free, the streams it may serve (`ANY`, or the
    /// tag of the one stream); while handed out, the tag of the stream it
    /// was allocated on.
    pub(super) tag: u32,
    /// While handed out or deferred: the bin of its request's rounded
    /// size, where its deferred list is.
    pub(super) request_bin: u16,
    pub(super) state: State,
    /// Whether its segment is a small one.
    pub(super) small: bool,
    /// Whether it is in the log of deferred blocks.
    pub(super) logged: bool,
}

/// The block records.
pub(super) struct Slab {
    pub(super) blocks: Vec<Block>,
    vacant: u32,
}

impl Slab {
    pub(super) fn new() -> Slab {
        Slab { blocks: Vec::new(), vacant: NIL }
    }

    /// Whether `n` more records fit (indices stay below `NIL`).
    #[inline]
    pub(super) fn has_room(&self, n: usize) -> bool {
        self.blocks.len() + n < NIL as usize
    }

    /// Stores `block` and returns its index. The caller checked
    /// [`Slab::has_room`].
    #[inline]
    pub(super) fn add(&mut self, block: Block) -> u32 {
        if self.vacant != NIL {
            let i = self.vacant;
            self.vacant = self.blocks[i as usize].link_next;
            self.blocks[i as usize] = block;
            return i;
        }
        self.blocks.push(block);
        (self.blocks.len() - 1) as u32
    }

    /// Drops record `i`.
    #[inline]
    pub(super) fn remove(&mut self, i: u32) {
        let b = &mut self.blocks[i as usize];
        b.state = State::Vacant;
        b.link_next = self.vacant;
        self.vacant = i;
    }

    /// Drops every record.
    pub(super) fn clear(&mut self) {
        self.blocks.clear();
        self.vacant = NIL;
    }
}
