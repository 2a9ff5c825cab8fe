//! The random alloc/free stream: each thread keeps 64 slots, and each step
//! frees the block of a random slot and allocates a block of a random size
//! (16 B to 16 KiB) into it. Sizes are spread evenly over the octaves
//! (16-32 B, 32-64 B, ..., 8-16 KiB), evenly within an octave, so small and
//! large requests come as often. The first and last 64 B of every block
//! (all of it when smaller) are written when it is handed out and checked
//! when it is freed: an allocator that hands out memory twice fails the
//! run. The generator is xorshift64, seeded by the thread's number, so every
//! allocator sees the same sequence of sizes and slots.

use std::ptr;

/// Live blocks per thread.
pub const SLOTS: usize = 64;
/// The sizes: `MIN_SIZE` to `MAX_SIZE` bytes.
pub const MIN_SIZE: usize = 16;
pub const MAX_SIZE: usize = 16 << 10;
/// The bytes checked at each end of a block.
const CHECKED: usize = 64;

/// What the stream needs of an allocator (the pools through the C ABI,
/// glibc `malloc`, mimalloc, jemalloc).
pub trait Allocator: Sync {
    /// `size` bytes, or NULL.
    fn alloc(&self, size: usize) -> *mut u8;
    /// Gives back a block `alloc` returned.
    fn free(&self, ptr: *mut u8, size: usize);
}

/// One thread's stream.
pub struct Stream {
    x: u64,
    /// (block, its size, the byte written into its ends).
    slots: [(*mut u8, usize, u8); SLOTS],
    steps: u64,
}

impl Stream {
    /// The stream of thread `thread`.
    pub fn new(thread: usize) -> Stream {
        let seed = 0x9e37_79b9_7f4a_7c15u64 ^ (thread as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d);
        Stream { x: seed | 1, slots: [(ptr::null_mut(), 0, 0); SLOTS], steps: 0 }
    }

    #[inline]
    fn next(&mut self) -> u64 {
        self.x ^= self.x << 13;
        self.x ^= self.x >> 7;
        self.x ^= self.x << 17;
        self.x
    }

    /// A size from `r`: an octave, then a size within it.
    #[inline]
    fn size(r: u64) -> usize {
        let octaves = (MAX_SIZE / MIN_SIZE).trailing_zeros() as u64;
        let low = MIN_SIZE << (r % octaves);
        low + ((r >> 8) as usize % (low + 1))
    }

    /// Fills every empty slot (a warm-up before timing).
    pub fn fill<A: Allocator + ?Sized>(&mut self, a: &A) {
        for slot in 0..SLOTS {
            if self.slots[slot].0.is_null() {
                self.put(a, slot);
            }
        }
    }

    /// One step: a free and an alloc.
    #[inline]
    pub fn step<A: Allocator + ?Sized>(&mut self, a: &A) {
        let slot = (self.next() % SLOTS as u64) as usize;
        self.take(a, slot);
        self.put(a, slot);
    }

    /// Frees every block.
    pub fn drain<A: Allocator + ?Sized>(&mut self, a: &A) {
        for slot in 0..SLOTS {
            self.take(a, slot);
        }
    }

    #[inline]
    fn put<A: Allocator + ?Sized>(&mut self, a: &A, slot: usize) {
        let size = Stream::size(self.next());
        let p = a.alloc(size);
        assert!(!p.is_null(), "the allocator refused {size} B");
        self.steps += 1;
        let mark = self.steps as u8;
        let ends = ends(p, size);
        // SAFETY: both ranges lie inside the `size` bytes just handed out.
        unsafe {
            ptr::write_bytes(ends.0, mark, ends.2);
            ptr::write_bytes(ends.1, mark, ends.2);
        }
        self.slots[slot] = (p, size, mark);
    }

    #[inline]
    fn take<A: Allocator + ?Sized>(&mut self, a: &A, slot: usize) {
        let (p, size, mark) = std::mem::replace(&mut self.slots[slot], (ptr::null_mut(), 0, 0));
        if p.is_null() {
            return;
        }
        let (head, tail, n) = ends(p, size);
        // SAFETY: the block is still this slot's: `n` bytes at each end.
        let intact = unsafe {
            std::slice::from_raw_parts(head, n).iter().all(|&b| b == mark)
                && std::slice::from_raw_parts(tail, n).iter().all(|&b| b == mark)
        };
        assert!(intact, "a {size} B block at {p:?} was overwritten while it was live: memory handed out twice");
        a.free(p, size);
    }
}

/// The first and last bytes of a block checked: (head, tail, length).
#[inline]
fn ends(p: *mut u8, size: usize) -> (*mut u8, *mut u8, usize) {
    let n = size.min(CHECKED);
    (p, p.wrapping_add(size - n), n)
}

// SAFETY: a stream's blocks are used only by the thread that runs it; the
// raw pointers are there to be written and checked, never shared.
unsafe impl Send for Stream {}
