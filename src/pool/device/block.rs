//! One block of device memory owned by Rust: allocated from an allocator,
//! returned to the same allocator (with its size and stream) when dropped.
//! Owned arenas, net buffers and cache tensors hold their memory this way,
//! so that all of it comes from the allocator a runtime plugged in.

use std::fmt;

use super::{DevicePtr, SharedAllocator, Stream};
use crate::status::{Error, Result};

/// A block of device memory that goes back to its allocator when dropped.
/// Holding the allocator keeps it alive as long as the block.
pub struct DeviceBlock {
    allocator: SharedAllocator,
    ptr: DevicePtr,
    size: u64,
    stream: Stream,
    /// False once [`DeviceBlock::abandon`]ed: the drop gives nothing back.
    owns_memory: bool,
}

impl DeviceBlock {
    /// `size` bytes (> 0) aligned to `alignment` (a power of two) from
    /// `allocator`, on the default stream.
    pub fn new(allocator: SharedAllocator, size: u64, alignment: u64) -> Result<DeviceBlock> {
        Self::on_stream(allocator, size, alignment, Stream::DEFAULT)
    }

    /// As [`DeviceBlock::new`], for use on `stream` (and freed on it).
    pub fn on_stream(allocator: SharedAllocator, size: u64, alignment: u64, stream: Stream) -> Result<DeviceBlock> {
        Self::checked(allocator, size, alignment, stream, |a| a.alloc(size, alignment, stream))
    }

    /// As [`DeviceBlock::on_stream`], with the address as the allocator
    /// returned it ([`super::DeviceAllocator::alloc_as_is`]): for a caller
    /// that checks it against the blocks it holds before
    /// [`DeviceBlock::aligned`] may give it back.
    pub(crate) fn on_stream_as_is(
        allocator: SharedAllocator,
        size: u64,
        alignment: u64,
        stream: Stream,
    ) -> Result<DeviceBlock> {
        Self::checked(allocator, size, alignment, stream, |a| a.alloc_as_is(size, alignment, stream))
    }

    fn checked(
        allocator: SharedAllocator,
        size: u64,
        alignment: u64,
        stream: Stream,
        alloc: impl FnOnce(&SharedAllocator) -> Result<DevicePtr>,
    ) -> Result<DeviceBlock> {
        if size == 0 || !alignment.is_power_of_two() {
            return Err(Error::invalid(format!(
                "{}: size {size} B with alignment {alignment} B (size > 0 and a power-of-two alignment needed)",
                allocator.name()
            )));
        }
        let ptr = alloc(&allocator)?;
        Ok(DeviceBlock { allocator, ptr, size, stream, owns_memory: true })
    }

    /// The block, when its address is aligned to `alignment`; otherwise it
    /// goes back to its allocator and is refused (INVALID_ARGUMENT).
    pub(crate) fn aligned(self, alignment: u64) -> Result<DeviceBlock> {
        if super::aligned_to(self.ptr.addr(), alignment) {
            return Ok(self);
        }
        let e = super::given_back_misaligned(self.allocator.name(), self.ptr, self.size, alignment);
        drop(self);
        Err(e)
    }

    /// The block's address (with the allocator's provenance).
    #[inline]
    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }

    /// Its size in bytes, as requested.
    #[inline]
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The stream it was allocated for.
    #[inline]
    pub fn stream(&self) -> Stream {
        self.stream
    }

    /// The allocator it returns to.
    #[inline]
    pub fn allocator(&self) -> &SharedAllocator {
        &self.allocator
    }

    /// Lets go of the block without giving its memory back: for memory
    /// the allocator had already handed out to another block (see
    /// [`super::handed_out_twice`]), which a free would pull from under it.
    pub(crate) fn abandon(mut self) {
        self.owns_memory = false;
    }

    /// Copies `bytes` into the block at `offset`: how a blob of constants
    /// gets its contents. Errors, writing nothing: an allocator whose memory
    /// the CPU cannot write, or a range past the block's end.
    pub fn write_from_host(&mut self, offset: u64, bytes: &[u8]) -> Result<()> {
        let start = self.host_range(offset, bytes.len() as u64)?;
        // SAFETY: the allocator is host-accessible and handed out `size`
        // bytes at `ptr`, owned by this block (borrowed mutably, so nothing
        // else writes through it now); `host_range` checked that the range
        // lies inside them, and `bytes` cannot overlap memory we own.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), start, bytes.len()) };
        Ok(())
    }

    /// Sets `len` bytes at `offset` to zero, under the conditions of
    /// [`DeviceBlock::write_from_host`].
    pub fn zero(&mut self, offset: u64, len: u64) -> Result<()> {
        let start = self.host_range(offset, len)?;
        // SAFETY: as in `write_from_host`; `len` fits in usize because the
        // range lies inside a block the allocator handed out.
        unsafe { std::ptr::write_bytes(start, 0, len as usize) };
        Ok(())
    }

    /// The host pointer to `offset`, once the allocator is host-accessible
    /// and `[offset, offset + len)` lies inside the block.
    fn host_range(&self, offset: u64, len: u64) -> Result<*mut u8> {
        if !self.allocator.host_accessible() {
            return Err(Error::invalid(format!(
                "device allocator \"{}\" is not host-accessible: nnmem cannot write its memory from the CPU",
                self.allocator.name()
            )));
        }
        match offset.checked_add(len) {
            Some(end) if end <= self.size => Ok(self.ptr.byte_add(offset).as_ptr()),
            _ => {
                Err(Error::invalid(format!("{len} B at offset {offset} reach past the end of a {} B block", self.size)))
            }
        }
    }
}

impl Drop for DeviceBlock {
    fn drop(&mut self) {
        if self.owns_memory {
            self.allocator.free(self.ptr, self.size, self.stream);
        }
    }
}

impl fmt::Debug for DeviceBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceBlock({} B at {:?} from {})", self.size, self.ptr, self.allocator.name())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::pool::device::{host, DeviceAllocator};
    use crate::status::Status;

    /// A host-backed allocator that counts calls and bytes, checks every
    /// free against what it handed out, and refuses sizes above `max`.
    pub(crate) struct Counting {
        pub(crate) allocs: AtomicU64,
        pub(crate) frees: AtomicU64,
        pub(crate) max: u64,
        live: Mutex<HashMap<usize, (u64, Stream)>>,
    }

    impl Counting {
        pub(crate) fn new(max: u64) -> Arc<Counting> {
            Arc::new(Counting { allocs: AtomicU64::new(0), frees: AtomicU64::new(0), max, live: Mutex::default() })
        }

        pub(crate) fn live_bytes(&self) -> u64 {
            self.live.lock().unwrap().values().map(|&(size, _)| size).sum()
        }
    }

    impl DeviceAllocator for Counting {
        fn name(&self) -> &str {
            "counting"
        }
        fn alloc(&self, size: u64, alignment: u64, stream: Stream) -> Result<DevicePtr> {
            if size > self.max {
                return Err(Error::new(Status::OutOfMemory, format!("counting: {size} B refused")));
            }
            let p = host().alloc(size, alignment, stream)?;
            self.allocs.fetch_add(1, Ordering::Relaxed);
            self.live.lock().unwrap().insert(p.addr(), (size, stream));
            Ok(p)
        }
        fn free(&self, ptr: DevicePtr, size: u64, stream: Stream) {
            let was = self.live.lock().unwrap().remove(&ptr.addr());
            assert_eq!(was, Some((size, stream)), "freed {ptr:?} with the size and stream it was allocated with");
            self.frees.fetch_add(1, Ordering::Relaxed);
            host().free(ptr, size, stream);
        }
        fn host_accessible(&self) -> bool {
            true
        }
    }

    #[test]
    fn a_block_goes_back_to_its_allocator_when_dropped() {
        let counting = Counting::new(1 << 20);
        let shared: SharedAllocator = counting.clone();
        let a = DeviceBlock::new(shared.clone(), 100, 64).unwrap();
        let b = DeviceBlock::on_stream(shared.clone(), 4096, 4096, Stream(7)).unwrap();
        assert_eq!((a.size(), a.stream(), b.size(), b.stream()), (100, Stream::DEFAULT, 4096, Stream(7)));
        assert_eq!((a.ptr().addr() % 64, b.ptr().addr() % 4096), (0, 0));
        assert_eq!(a.allocator().name(), "counting");
        assert_eq!((counting.allocs.load(Ordering::Relaxed), counting.live_bytes()), (2, 4196));
        drop(a);
        assert_eq!((counting.frees.load(Ordering::Relaxed), counting.live_bytes()), (1, 4096));
        drop(shared);
        // The block keeps the allocator alive: it is still usable here.
        drop(b);
        assert_eq!((counting.allocs.load(Ordering::Relaxed), counting.frees.load(Ordering::Relaxed)), (2, 2));
        assert_eq!(counting.live_bytes(), 0);
    }

    #[test]
    fn bad_requests_never_reach_the_allocator() {
        let counting = Counting::new(1000);
        for (size, alignment) in [(0u64, 8u64), (8, 0), (8, 24)] {
            let e = DeviceBlock::new(counting.clone(), size, alignment).unwrap_err();
            assert_eq!(e.status(), Status::InvalidArgument);
            assert!(e.message().starts_with("counting: size"), "{}", e.message());
        }
        let e = DeviceBlock::new(counting.clone(), 1001, 8).unwrap_err();
        assert_eq!((e.status(), e.message()), (Status::OutOfMemory, "counting: 1001 B refused"));
        assert_eq!(counting.allocs.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn host_writes_stay_inside_the_block_and_need_host_memory() {
        let mut block = DeviceBlock::new(Counting::new(1000), 64, 8).unwrap();
        block.write_from_host(60, &[9, 10, 11, 12]).unwrap();
        block.zero(0, 60).unwrap();
        assert!(crate::pool::testing::zeroed(block.ptr(), 60));
        assert!(crate::pool::testing::holds(block.ptr().byte_add(60), 4, 9));
        assert!(crate::pool::testing::zeroed(block.ptr().byte_add(64), 0));
        for (offset, len) in [(61u64, 4usize), (u64::MAX, 1)] {
            let e = block.write_from_host(offset, &vec![1; len]).unwrap_err();
            assert!(e.message().contains("reach past the end of a 64 B block"), "{}", e.message());
        }
        assert!(block.zero(0, 65).is_err());
    }
}
