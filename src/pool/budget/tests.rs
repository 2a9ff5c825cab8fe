//! The device side's record of the blocks it holds: an allocator that
//! hands out memory the pool already holds is refused, whatever the
//! strategy, and nothing is lost or returned twice.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use super::*;
use crate::pool::device::DeviceAllocator;
use crate::pool::testing::{fill, holds, Misbehaving};
use crate::pool::{Pool, PoolOptions, StrategyKind};

/// Hands out the addresses it is given, in order, without memory behind
/// them (the device side never dereferences), and records the frees.
struct Scripted {
    next: Mutex<Vec<usize>>,
    freed: Mutex<Vec<(usize, u64)>>,
}

impl Scripted {
    fn new(addresses: &[usize]) -> Arc<Scripted> {
        let next = addresses.iter().rev().copied().collect();
        Arc::new(Scripted { next: Mutex::new(next), freed: Mutex::default() })
    }
}

impl DeviceAllocator for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }
    fn alloc(&self, _size: u64, _alignment: u64, _stream: Stream) -> Result<DevicePtr> {
        let addr = self.next.lock().unwrap().pop().expect("an address is scripted");
        Ok(DevicePtr::new(std::ptr::without_provenance_mut(addr)).unwrap())
    }
    fn free(&self, ptr: DevicePtr, size: u64, _stream: Stream) {
        self.freed.lock().unwrap().push((ptr.addr(), size));
    }
    fn host_accessible(&self) -> bool {
        false
    }
}

#[test]
fn memory_the_pool_holds_is_refused_until_it_goes_back() {
    const K: u64 = 0x1000;
    let script = Scripted::new(&[0x10000, 0x10000, 0x10800, 0xf800, 0x11000, 0xf000, 0x10000]);
    let device = Device::new(script.clone(), None);
    let a = |size| device.alloc(size, 1, Stream::DEFAULT).map(DevicePtr::addr);
    assert_eq!(a(K).unwrap(), 0x10000);
    let refusals = [
        (K, "returned [0x10000, 0x11000) (4096 B), overlapping [0x10000, 0x11000) (4096 B)"),
        (16, "returned [0x10800, 0x10810) (16 B), overlapping [0x10000, 0x11000) (4096 B)"),
        (K, "returned [0xf800, 0x10800) (4096 B), overlapping [0x10000, 0x11000) (4096 B)"),
    ];
    for (size, ranges) in refusals {
        let e = a(size).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.message().starts_with("device allocator \"scripted\" "), "{}", e.message());
        assert!(e.message().contains(ranges), "{}", e.message());
        assert!(e.message().contains("not handed out and not given back"), "{}", e.message());
    }
    // Touching ranges do not overlap.
    assert_eq!((a(K).unwrap(), a(K).unwrap()), (0x11000, 0xf000));
    let c = device.counters();
    assert_eq!((c.device_allocs, c.reserved_bytes), (3, 3 * K));
    assert!(script.freed.lock().unwrap().is_empty(), "refused memory is never given back");
    // Given back, the memory may come again.
    device.free(DevicePtr::new(std::ptr::without_provenance_mut(0x10000)).unwrap(), K, Stream::DEFAULT);
    assert_eq!(a(K).unwrap(), 0x10000);
    assert_eq!(*script.freed.lock().unwrap(), [(0x10000, K)]);
    assert_eq!(device.counters().reserved_bytes, 3 * K);
}

#[test]
fn every_strategy_refuses_memory_the_allocator_handed_out_twice() {
    const BIG: u64 = 3 << 20;
    for &kind in StrategyKind::ALL {
        // 0: the same pointer again; 512: a pointer inside the held block
        // (aligned as every strategy asks); 0 for a request aligned more
        // than that pointer is: misaligned too, and still never given back
        // (the counting allocator panics on a free of memory in use).
        for (offset, misaligned) in [(0, false), (512, false), (0, true)] {
            let dev = Misbehaving::new();
            let pool = Pool::new(dev.clone(), kind, &PoolOptions { shards: 1, ..Default::default() }).unwrap();
            let first = pool.alloc(1000, 256, Stream::DEFAULT).unwrap();
            fill(first, 1000, 7);
            let (base, held) = dev.last();
            // Twice the largest power of two dividing the address.
            let alignment = if misaligned { (base.addr() & base.addr().wrapping_neg()) as u64 * 2 } else { 256 };
            let before = pool.stats();
            dev.arm(Some(offset));
            let e = pool.alloc(BIG, alignment, Stream::DEFAULT).unwrap_err();
            let what = format!("{kind:?} offset {offset}, alignment {alignment}: {}", e.message());
            assert_eq!(e.status(), Status::InvalidArgument, "{what}");
            let returned = format!("device allocator \"misbehaving\" returned [{:#x}, ", base.addr() + offset as usize);
            let overlapping = format!(
                "overlapping [{:#x}, {:#x}) ({held} B) that this pool",
                base.addr(),
                base.addr() + held as usize
            );
            assert!(e.message().contains(&returned) && e.message().contains(&overlapping), "{what}");
            // Refused at the first answer: the device is not asked again.
            assert_eq!(dev.bogus.load(Ordering::SeqCst), 1, "{what}");
            // Nothing was handed out or counted.
            let after = pool.stats();
            assert_eq!((after.allocs, after.active_blocks, after.allocated_bytes), (1, 1, before.allocated_bytes));
            assert_eq!((after.device_allocs, after.reserved_bytes), (before.device_allocs, before.reserved_bytes));
            assert!(holds(first, 1000, 7), "{what}");
            // Behaving again, the request is served, apart from the first.
            dev.arm(None);
            let big = pool.alloc(BIG, 256, Stream::DEFAULT).unwrap();
            assert!(big.addr() >= first.addr() + 1000 || big.addr() + BIG as usize <= first.addr(), "{what}");
            fill(big, BIG, 9);
            assert!(holds(first, 1000, 7) && holds(big, BIG, 9), "{what}");
            pool.free(first).unwrap();
            pool.free(big).unwrap();
            drop(pool);
            // Every block the allocator really handed out came back once
            // (the counting allocator panics on any other free).
            assert_eq!((dev.inner.live_blocks(), dev.inner.allocs()), (0, dev.inner.frees()), "{what}");
        }
    }
}

/// `caching` asks for a padded segment first and, refused, for the request
/// alone: only when the device had no room. Memory handed out twice
/// refuses the request at the first answer.
#[test]
fn caching_retries_the_request_alone_only_after_running_out_of_room() {
    let dev = Misbehaving::new();
    let pool = Pool::new(dev.clone(), StrategyKind::Caching, &PoolOptions { shards: 1, ..Default::default() }).unwrap();
    // 128 MB of large segments held: the next segment is padded to a
    // sixteenth of that, more than the request rounded.
    let large = pool.alloc(128 << 20, 256, Stream::DEFAULT).unwrap();
    dev.arm(Some(0));
    let e = pool.alloc(3 << 20, 256, Stream::DEFAULT).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{}", e.message());
    assert_eq!(dev.bogus.load(Ordering::SeqCst), 1, "asked once: {}", e.message());
    dev.arm(None);
    let served = pool.alloc(3 << 20, 256, Stream::DEFAULT).unwrap();
    pool.free(served).unwrap();
    pool.free(large).unwrap();
    drop(pool);
    assert_eq!((dev.inner.live_blocks(), dev.inner.allocs()), (0, dev.inner.frees()));
}
