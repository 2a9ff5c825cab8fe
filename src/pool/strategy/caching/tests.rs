use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use super::*;
use crate::pool::device::{DeviceAllocator, SharedAllocator, Stream};
use crate::status::{Error, Status};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// A device of address space only: it hands out addresses from a counter
/// (nothing behind them; the strategy never dereferences), checks every
/// free against what it handed out, counts calls, and fails on demand.
/// Bases are aligned as asked but never to twice that, so that a strategy
/// relying on more alignment than it asked for shows.
#[derive(Default)]
struct FakeDevice {
    state: Mutex<FakeState>,
}

#[derive(Default)]
struct FakeState {
    next: usize,
    /// Address -> (size, alignment, stream) of what is handed out.
    live: BTreeMap<usize, (u64, u64, Stream)>,
    allocs: u64,
    frees: u64,
    fail: bool,
}

impl FakeDevice {
    fn new() -> Arc<FakeDevice> {
        Arc::new(FakeDevice { state: Mutex::new(FakeState { next: 1 << 40, ..FakeState::default() }) })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, FakeState> {
        self.state.lock().unwrap()
    }

    /// The device allocation holding `[addr, addr + size)`, if any.
    fn holding(&self, addr: usize, size: u64) -> Option<(usize, u64)> {
        let st = self.state();
        let (&base, &(bytes, _, _)) = st.live.range(..=addr).next_back()?;
        (addr + size as usize <= base + bytes as usize).then_some((base, bytes))
    }
}

impl DeviceAllocator for FakeDevice {
    fn name(&self) -> &str {
        "fake"
    }

    fn alloc(&self, size: u64, alignment: u64, stream: Stream) -> Result<DevicePtr> {
        let mut st = self.state();
        assert!(size > 0 && alignment.is_power_of_two(), "{size} B at alignment {alignment}");
        if st.fail {
            return Err(Error::new(Status::OutOfMemory, format!("fake: refused {size} B")));
        }
        let a = alignment as usize;
        let mut base = st.next.div_ceil(a) * a;
        if base % (2 * a) == 0 {
            base += a;
        }
        st.next = base + size as usize;
        st.live.insert(base, (size, alignment, stream));
        st.allocs += 1;
        Ok(DevicePtr::new(std::ptr::null_mut::<u8>().wrapping_add(base)).unwrap())
    }

    fn free(&self, ptr: DevicePtr, size: u64, stream: Stream) {
        let mut st = self.state();
        let (bytes, _, s) = st.live.remove(&ptr.addr()).expect("freeing what the device handed out");
        assert_eq!((bytes, s), (size, stream), "a device free names the size and stream of its allocation");
        st.frees += 1;
    }

    fn host_accessible(&self) -> bool {
        false
    }
}

/// A strategy with `options` over a fresh fake device.
struct Fixture {
    fake: Arc<FakeDevice>,
    device: Device,
    caching: Caching,
}

impl Fixture {
    fn new(options: CachingOptions) -> Fixture {
        let fake = FakeDevice::new();
        let shared: SharedAllocator = fake.clone();
        Fixture { fake, device: Device::new(shared, None), caching: Caching::new(&options) }
    }

    fn default() -> Fixture {
        Fixture::new(CachingOptions::default())
    }

    fn alloc_on(&mut self, size: u64, alignment: u64, stream: usize) -> Served {
        let request = Request { size, alignment, stream: Stream(stream) };
        let served = self.caching.alloc(request, &self.device).unwrap();
        assert_eq!(served.ptr.addr() % alignment as usize, 0, "{size} B at alignment {alignment}");
        assert!(served.bytes >= size);
        assert!(self.fake.holding(served.ptr.addr(), served.bytes).is_some(), "served inside a device block");
        served
    }

    fn alloc(&mut self, size: u64) -> Served {
        self.alloc_on(size, 1, 0)
    }

    fn free(&mut self, served: Served) -> Freed {
        let freed = self.caching.free(served.ptr, &self.device).unwrap();
        assert_eq!(freed.bytes, served.bytes);
        self.caching.cache.borrow().check();
        freed
    }

    fn device_calls(&self) -> (u64, u64) {
        let st = self.fake.state();
        (st.allocs, st.frees)
    }

    fn figures(&self) -> CacheFigures {
        let figures = self.caching.cache_figures();
        self.caching.cache.borrow().check();
        figures
    }

    /// Everything back to the device, nothing left outstanding.
    fn finish(mut self) {
        self.caching.release_all(&self.device);
        assert!(self.fake.state().live.is_empty(), "every device block returned");
        assert_eq!(self.device.counters().reserved_bytes, 0);
        assert_eq!(self.figures(), CacheFigures::default());
    }
}

#[test]
fn splits_a_segment_and_coalesces_it_whole_again() {
    let mut f = Fixture::default();
    let a = f.alloc(1000);
    let b = f.alloc(3000);
    let c = f.alloc(512);
    assert_eq!(f.device_calls(), (1, 0), "one small segment serves all three");
    assert_eq!((a.bytes, b.bytes, c.bytes), (1024, 3072, 512));
    assert_eq!(b.ptr.addr(), a.ptr.addr() + 1024);
    assert_eq!(c.ptr.addr(), b.ptr.addr() + 3072);
    let rest = 2 * MIB - 1024 - 3072 - 512;
    assert_eq!(f.figures(), CacheFigures { cached_blocks: 1, cached_bytes: rest, largest_free_block: rest });

    assert_eq!(f.free(b), Freed { requested: 3000, bytes: 3072 });
    assert_eq!(f.figures().cached_blocks, 2, "the middle block has no free neighbour");
    assert_eq!(f.caching.release_cached(&f.device), 0, "the segment still has blocks out");
    f.free(a);
    assert_eq!(f.figures().cached_blocks, 2, "the first block merged with the middle one");
    assert_eq!(f.figures().largest_free_block, rest);
    f.free(c);
    assert_eq!(f.figures(), CacheFigures { cached_blocks: 1, cached_bytes: 2 * MIB, largest_free_block: 2 * MIB });
    assert_eq!(f.caching.release_cached(&f.device), 2 * MIB);
    assert_eq!(f.device_calls(), (1, 1));
    assert_eq!(f.figures(), CacheFigures::default());
    f.finish();
}

#[test]
fn best_fit_takes_the_smallest_free_block_that_fits() {
    for large in [false, true] {
        let mut f = Fixture::default();
        // Free blocks of 4, 16 and 8 units, kept apart by live ones.
        let unit = if large { 4 * MIB } else { 4 * KIB };
        let mut keep = Vec::new();
        let mut holes = Vec::new();
        for n in [4, 16, 8] {
            holes.push(f.alloc(n * unit / 4));
            keep.push(f.alloc(unit / 4));
        }
        if large {
            assert!(holes.iter().all(|h| f.fake.holding(h.ptr.addr(), h.bytes).unwrap().1 == h.bytes));
        }
        let addrs: Vec<usize> = holes.iter().map(|h| h.ptr.addr()).collect();
        for h in holes {
            f.free(h);
        }
        let calls = f.device_calls();
        let six = f.alloc(6 * unit / 4);
        assert_eq!(six.ptr.addr(), addrs[2], "6 units go to the 8-unit block, not the 16-unit one");
        let three = f.alloc(3 * unit / 4);
        assert_eq!(three.ptr.addr(), addrs[0], "3 units go to the 4-unit block");
        let twelve = f.alloc(12 * unit / 4);
        assert_eq!(twelve.ptr.addr(), addrs[1]);
        assert_eq!(f.device_calls(), calls, "all served from the cache");
        for s in keep.into_iter().chain([six, three, twelve]) {
            f.free(s);
        }
        f.finish();
    }
}

#[test]
fn small_and_large_requests_never_share_blocks() {
    let mut f = Fixture::default();
    let large = f.alloc(2 * MIB);
    assert_eq!(large.bytes, 2 * MIB);
    f.free(large);
    let small = f.alloc(MIB);
    assert_ne!(small.ptr, large.ptr, "a small request does not take the free large segment");
    assert_eq!(f.device_calls(), (2, 0));
    f.free(small);
    // A free small segment (2 MiB) does not serve a large request of 1.5 MiB.
    let large2 = f.alloc(MIB + MIB / 2);
    assert_eq!(large2.ptr, large.ptr, "the large request takes the large segment");
    assert_eq!(large2.bytes, 2 * MIB, "a 0.5 MiB rest is not split off a large block");
    assert_eq!(f.device_calls(), (2, 0));
    let large3 = f.alloc(MIB + MIB / 2);
    assert_eq!(f.device_calls(), (3, 0), "not from the free small segment");
    assert!(f.fake.holding(large3.ptr.addr(), 1).unwrap().1 == 2 * MIB);
    f.free(large2);
    f.free(large3);
    assert_eq!(f.caching.release_cached(&f.device), 6 * MIB);
    f.finish();
}

#[test]
fn large_blocks_split_only_when_more_than_a_small_request_remains() {
    let mut f = Fixture::default();
    let big = f.alloc(10 * MIB);
    f.free(big);
    let a = f.alloc(3 * MIB);
    assert_eq!((a.ptr, a.bytes), (big.ptr, 3 * MIB), "7 MiB remain: split");
    let b = f.alloc(6 * MIB + 512 * KIB);
    assert_eq!(b.ptr.addr(), a.ptr.addr() + 3 * MIB as usize);
    assert_eq!(b.bytes, 7 * MIB, "0.5 MiB would remain: handed out whole");
    assert_eq!(f.device_calls(), (1, 0));
    f.free(a);
    f.free(b);
    assert_eq!(f.figures().cached_blocks, 1);
    f.finish();
}

#[test]
fn blocks_over_max_split_are_whole_and_only_for_large_enough_requests() {
    let mut f = Fixture::new(CachingOptions { max_split: 4 * MIB, ..CachingOptions::default() });
    let big = f.alloc(8 * MIB);
    f.free(big);
    // A request under max_split never takes the oversize block.
    let mid = f.alloc(3 * MIB);
    assert_ne!(mid.ptr, big.ptr);
    assert_eq!(f.device_calls(), (2, 0));
    // An oversize request takes it whole, unsplit.
    let over = f.alloc(5 * MIB);
    assert_eq!((over.ptr, over.bytes), (big.ptr, 8 * MIB));
    f.free(over);
    // ... but not when the block is OVERSIZE_SLACK or more larger.
    let huge = f.alloc(40 * MIB);
    f.free(huge);
    let calls = f.device_calls();
    let over2 = f.alloc(8 * MIB);
    assert_eq!(over2.ptr, big.ptr);
    let over3 = f.alloc(5 * MIB);
    assert_eq!(f.device_calls().0, calls.0 + 1, "40 MiB is too much for 5 MiB");
    assert_ne!(over3.ptr, huge.ptr);
    let over4 = f.alloc(21 * MIB);
    assert_eq!((over4.ptr, over4.bytes), (huge.ptr, 40 * MIB), "40 MiB < 21 MiB + 20 MiB");
    for s in [mid, over2, over3, over4] {
        f.free(s);
    }
    f.finish();
}

#[test]
fn honours_alignments_up_to_and_past_min_block() {
    let mut f = Fixture::default();
    let mut out = Vec::new();
    for alignment in [1u64, 8, 128, 512, 1024, 4096, 64 * KIB, 4 * MIB] {
        for size in [11u64, 19, 2019, 1_024_124] {
            // The pool rounds the size up to the alignment before asking.
            let size = cache::round_up(size, alignment).unwrap();
            out.push(f.alloc_on(size, alignment, 0));
        }
    }
    check_disjoint(&out);
    for s in out {
        f.free(s);
    }
    assert_eq!(f.figures().cached_bytes, f.device.counters().reserved_bytes);
    f.finish();
}

#[test]
fn an_aligned_request_takes_an_aligned_start_inside_a_free_block() {
    let mut f = Fixture::default();
    let first = f.alloc(512);
    let base = first.ptr.addr();
    // The fake device aligns segments to min_block, never to 1024: the next
    // 4 KiB-aligned address lies 512 to 3584 bytes into the free rest.
    let aligned = f.alloc_on(4096, 4096, 0);
    assert_eq!(f.device_calls(), (1, 0));
    assert!(aligned.ptr.addr() > base && aligned.ptr.addr() < base + 4096 + 512);
    assert_eq!(aligned.bytes, 4096);
    let gap = (aligned.ptr.addr() - base - 512) as u64;
    if gap > 0 {
        // The bytes before the aligned start stayed free and serve others.
        let filler = f.alloc(gap);
        assert_eq!(filler.ptr.addr(), base + 512);
        f.free(filler);
    }
    f.free(first);
    f.free(aligned);
    assert_eq!(f.figures().cached_blocks, 1, "the pieces merged again");
    f.finish();
}

#[test]
fn release_cached_returns_only_segments_that_are_wholly_free() {
    let mut f = Fixture::default();
    let a = f.alloc(MIB);
    let b = f.alloc(MIB);
    let c = f.alloc(MIB);
    let big = f.alloc(6 * MIB);
    assert_eq!(f.device_calls(), (3, 0), "a and b share a small segment");
    f.free(a);
    f.free(c);
    f.free(big);
    assert_eq!(f.caching.release_cached(&f.device), 2 * MIB + 6 * MIB);
    assert_eq!(f.device_calls(), (3, 2));
    assert_eq!(f.figures(), CacheFigures { cached_blocks: 1, cached_bytes: MIB, largest_free_block: MIB });
    assert_eq!(f.caching.release_cached(&f.device), 0);
    f.free(b);
    assert_eq!(f.caching.release_cached(&f.device), 2 * MIB);
    f.finish();
}

#[test]
fn streams_reuse_their_own_blocks_until_synchronised() {
    let mut f = Fixture::default();
    let a = f.alloc_on(4096, 1, 1);
    f.free(a);
    let b = f.alloc_on(4096, 1, 2);
    assert_ne!(b.ptr, a.ptr);
    assert_eq!(f.device_calls(), (2, 0), "stream 2 gets a segment of its own");
    let a2 = f.alloc_on(4096, 1, 1);
    assert_eq!(a2.ptr, a.ptr, "stream 1 reuses its block");
    f.free(a2);
    f.free(b);
    let st = f.fake.state().live.values().map(|v| v.2).collect::<Vec<_>>();
    assert_eq!(st, vec![Stream(1), Stream(2)], "segments allocated on their streams");

    f.caching.streams_synchronized();
    let figures = f.figures();
    assert_eq!(figures.cached_blocks, 2);
    // Now both segments serve every stream; a third stream takes the lower
    // address among equal sizes (LIFO here: the last freed, stream 2's).
    let c = f.alloc_on(4096, 1, 3);
    assert!(c.ptr == a.ptr || c.ptr == b.ptr);
    assert_eq!(f.device_calls(), (2, 0));
    f.free(c);
    // Freed on stream 3, c merged with its free neighbour: that segment
    // serves stream 3 only until the next synchronisation, the other one
    // any stream.
    let on4: Vec<Served> = (0..3).map(|_| f.alloc_on(MIB, 1, 4)).collect();
    assert_eq!(f.device_calls(), (3, 0), "two 1 MiB blocks from the any-stream segment, then a new one");
    let on3 = f.alloc_on(MIB, 1, 3);
    assert_eq!(f.device_calls(), (3, 0), "stream 3 uses its segment");
    assert_eq!(on3.ptr, c.ptr);
    for s in on4.into_iter().chain([on3]) {
        f.free(s);
    }
    f.finish();
}

#[test]
fn blocks_of_different_streams_merge_after_synchronisation() {
    let mut f = Fixture::default();
    let x = f.alloc_on(1024, 1, 1);
    f.caching.streams_synchronized(); // the segment's rest: any stream
    let y = f.alloc_on(1024, 1, 2);
    assert_eq!(y.ptr.addr(), x.ptr.addr() + 1024, "stream 2 takes part of the any-stream rest");
    f.free(x);
    f.free(y);
    // x is stream 1's, y merged with the rest as stream 2's: two blocks.
    assert_eq!(f.figures().cached_blocks, 2);
    f.caching.streams_synchronized();
    assert_eq!(f.figures().cached_blocks, 1);
    assert_eq!(f.caching.release_cached(&f.device), 2 * MIB);
    f.finish();
}

#[test]
fn release_cached_returns_an_idle_segment_whose_blocks_were_freed_on_two_streams() {
    let mut f = Fixture::default();
    let x = f.alloc_on(1024, 1, 1);
    f.caching.streams_synchronized();
    let y = f.alloc_on(1024, 1, 2);
    let z = f.alloc_on(1024, 1, 1);
    f.free(x);
    f.free(y);
    // Three free blocks of streams 1, 2 and 1 (with the rest): unmerged,
    // and still the segment is idle. z out keeps it.
    assert_eq!(f.caching.release_cached(&f.device), 0, "z is out");
    f.free(z);
    assert!(f.figures().cached_blocks >= 2);
    assert_eq!(f.caching.release_cached(&f.device), 2 * MIB, "PyTorch's empty_cache: every idle segment");
    assert_eq!(f.figures(), CacheFigures::default());
    assert_eq!(f.device.counters().reserved_bytes, 0);
    f.finish();
}

#[test]
fn a_request_of_0_bytes_takes_one_min_block_of_its_own() {
    let mut f = Fixture::default();
    let a = f.alloc(0);
    let b = f.alloc(0);
    assert_ne!(a.ptr, b.ptr);
    assert_eq!((a.bytes, b.bytes), (512, 512));
    f.free(a);
    let c = f.alloc(0);
    assert_eq!(c.ptr, a.ptr, "a freed 0 B block comes back to the next 0 B request, as any size");
    f.free(b);
    f.free(c);
    f.finish();
}

#[test]
fn repeated_requests_make_no_device_calls_after_the_first() {
    let mut f = Fixture::default();
    for round in 0..100 {
        let held: Vec<Served> = [64, 4 * KIB, MIB, 16 * MIB, 100 * MIB].iter().map(|&s| f.alloc(s)).collect();
        for s in held {
            f.free(s);
        }
        assert_eq!(f.device_calls(), (3, 0), "round {round}: 64 B, 4 KiB and 1 MiB share a small segment");
    }
    f.finish();
    let mut g = Fixture::default();
    let a = g.alloc(16 * MIB);
    g.caching.release_all(&g.device);
    assert_eq!(g.device_calls(), (1, 1), "release_all returns even blocks still out");
    assert!(g.caching.free(a.ptr, &g.device).is_err());
}

#[test]
fn freeing_what_is_not_live_changes_nothing() {
    let mut f = Fixture::default();
    let a = f.alloc(1000);
    let b = f.alloc(1000);
    f.free(a);
    let before = (f.figures(), f.device_calls(), f.caching.cache.borrow().live.len());
    assert_eq!(f.caching.free(a.ptr, &f.device), Err(NotLive), "double free");
    assert_eq!(f.caching.free(b.ptr.byte_add(512), &f.device), Err(NotLive), "inside a block");
    let elsewhere = DevicePtr::new(std::ptr::null_mut::<u8>().wrapping_add(4096)).unwrap();
    assert_eq!(f.caching.free(elsewhere, &f.device), Err(NotLive));
    assert_eq!((f.figures(), f.device_calls(), f.caching.cache.borrow().live.len()), before);
    f.free(b);
    f.finish();
}

#[test]
fn a_device_failure_changes_nothing() {
    let mut f = Fixture::default();
    let a = f.alloc(1000);
    f.fake.state().fail = true;
    let before = f.figures();
    let e = f.caching.alloc(Request { size: 4 * MIB, alignment: 1, stream: Stream(0) }, &f.device).unwrap_err();
    assert_eq!(e.status(), Status::OutOfMemory);
    let e = f.caching.alloc(Request { size: 1000, alignment: 1, stream: Stream(7) }, &f.device).unwrap_err();
    assert_eq!(e.status(), Status::OutOfMemory);
    assert_eq!(f.figures(), before);
    // Cached memory still serves its stream while the device refuses.
    let b = f.alloc(1000);
    f.fake.state().fail = false;
    let e = f.caching.alloc(Request { size: u64::MAX - 10, alignment: 1, stream: Stream(0) }, &f.device).unwrap_err();
    assert_eq!(e.status(), Status::Overflow);
    let e = f.caching.alloc(Request { size: u64::MAX - MIB, alignment: 1, stream: Stream(0) }, &f.device);
    assert_eq!(e.unwrap_err().status(), Status::Overflow);
    f.free(a);
    f.free(b);
    f.finish();
}

fn check_disjoint(served: &[Served]) {
    let mut spans: Vec<(usize, usize)> =
        served.iter().map(|s| (s.ptr.addr(), s.ptr.addr() + s.bytes as usize)).collect();
    spans.sort();
    for w in spans.windows(2) {
        assert!(w[0].1 <= w[1].0, "blocks {:#x?} and {:#x?} overlap", w[0], w[1]);
    }
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn random_requests_never_overlap_and_all_memory_returns() {
    for (seed, options) in [
        (1u64, CachingOptions::default()),
        (2, CachingOptions { max_split: 6 * MIB, ..CachingOptions::default() }),
        (
            3,
            CachingOptions {
                min_block: 256,
                small_size: 64 * KIB,
                small_segment: 256 * KIB,
                large_round: 256 * KIB,
                max_split: MIB,
            },
        ),
    ] {
        let mut f = Fixture::new(options);
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        // Address -> (served, requested size, stream).
        let mut live: BTreeMap<usize, (Served, u64, usize)> = BTreeMap::new();
        let mut by_stream: HashMap<usize, u64> = HashMap::new();
        for step in 0..20_000 {
            let roll = rng.below(100);
            if roll < 55 || live.is_empty() {
                let size = match rng.below(10) {
                    0..=5 => 1 + rng.below(8 * KIB),
                    6..=7 => 1 + rng.below(2 * MIB),
                    _ => 1 + rng.below(24 * MIB),
                };
                let alignment = [1u64, 16, 256, 512, 2048, 8192][rng.below(6) as usize];
                let size = cache::round_up(size, alignment).unwrap();
                let stream = rng.below(3) as usize;
                let s = f.alloc_on(size, alignment, stream);
                assert!(s.bytes >= cache::round_up(size, f.caching.cache.borrow().sizes.min_block).unwrap());
                let (lo, hi) = (s.ptr.addr(), s.ptr.addr() + s.bytes as usize);
                if let Some((&a, &(o, _, _))) = live.range(..hi).next_back() {
                    assert!(a + o.bytes as usize <= lo, "step {step}: {:#x}+{} overlaps {lo:#x}", a, o.bytes);
                }
                live.insert(lo, (s, size, stream));
                *by_stream.entry(stream).or_default() += 1;
            } else if roll < 97 {
                let k = rng.below(live.len() as u64) as usize;
                let addr = *live.keys().nth(k).unwrap();
                let (s, size, _) = live.remove(&addr).unwrap();
                assert_eq!(f.caching.free(s.ptr, &f.device), Ok(Freed { requested: size, bytes: s.bytes }));
                assert_eq!(f.caching.free(s.ptr, &f.device), Err(NotLive));
            } else if roll < 99 {
                f.caching.streams_synchronized();
            } else {
                f.caching.release_cached(&f.device);
            }
            // Reserved memory is exactly what is out plus what is cached.
            let out: u64 = live.values().map(|v| v.0.bytes).sum();
            assert_eq!(f.device.counters().reserved_bytes, out + f.figures().cached_bytes, "step {step}");
            if step % 64 == 0 {
                f.caching.cache.borrow().check();
            }
            if step % 1000 == 0 {
                f.caching.cache_figures();
                f.caching.cache.borrow().check();
            }
        }
        assert!(by_stream.len() == 3);
        for (_, (s, _, _)) in std::mem::take(&mut live) {
            f.free(s);
        }
        f.caching.streams_synchronized();
        let reserved = f.device.counters().reserved_bytes;
        assert_eq!(f.caching.release_cached(&f.device), reserved, "after synchronising, every segment is whole");
        assert_eq!(f.figures(), CacheFigures::default());
        f.finish();
    }
}

#[test]
fn a_freed_block_comes_back_to_its_size_without_a_merge() {
    let mut f = Fixture::default();
    let a = f.alloc(1000);
    let b = f.alloc(1000);
    let c = f.alloc(1000);
    f.free(a);
    f.free(b);
    // The last freed first, then the one before: same addresses, no
    // device call, no split.
    let b2 = f.alloc(1000);
    let a2 = f.alloc(600);
    assert_eq!((b2.ptr, a2.ptr), (b.ptr, a.ptr));
    assert_eq!(a2.bytes, 1024, "the 1024 B block serves a request rounded to 1024 B");
    f.free(a2);
    f.free(b2);
    // Another size coalesces first: a and b merged, best fit at a.
    let d = f.alloc(2048);
    assert_eq!((d.ptr, d.bytes), (a.ptr, 2048));
    // A large block kept whole by the split rule comes back whole too.
    let big = f.alloc(MIB + MIB / 2);
    f.free(big);
    let big2 = f.alloc(MIB + MIB / 4);
    assert_eq!((big2.ptr, big2.bytes), (big.ptr, 2 * MIB));
    // ... but not to a request that would split it.
    f.free(big2);
    f.free(c);
    assert_eq!(f.device_calls(), (2, 0));
    let e = f.alloc(4 * MIB);
    assert_eq!(f.device_calls(), (3, 1), "the wholly free 2 MiB segment merged into e's");
    assert_eq!(f.figures().cached_blocks, 2, "the small segment's rest after d, and the 2 MiB after e");
    f.free(d);
    f.free(e);
    assert_eq!(f.figures().cached_blocks, 2);
    assert_eq!(f.caching.release_cached(&f.device), 8 * MIB);
    f.finish();
}

#[test]
fn a_fresh_large_segment_is_padded_for_later_requests_to_share() {
    let mut f = Fixture::default();
    let a = f.alloc(128 * MIB);
    // 1/16 of 128 MiB held is 8 MiB, at most twice the 4 MiB request.
    let b = f.alloc(3 * MIB);
    assert_eq!(f.device.counters().reserved_bytes, 136 * MIB);
    let c = f.alloc(3 * MIB);
    assert_eq!(c.ptr.addr(), b.ptr.addr() + 3 * MIB as usize, "shares b's padded segment");
    assert_eq!(f.device_calls(), (2, 0));
    let big = f.alloc(GIB);
    // 1/16 of what is held now exceeds twice the request: the cap.
    let d = f.alloc(3 * MIB);
    assert_eq!(f.device_calls(), (4, 0));
    assert_eq!(f.device.counters().reserved_bytes, 136 * MIB + GIB + 8 * MIB);
    for s in [a, b, c, big, d] {
        f.free(s);
    }
    f.finish();
}

#[test]
fn wholly_free_large_segments_merge_on_growth_but_not_at_the_end_of_an_iteration() {
    let mut f = Fixture::default();
    let a = f.alloc(4 * MIB);
    let b = f.alloc(6 * MIB);
    f.free(a);
    f.free(b);
    let before = f.figures();
    f.caching.end_iteration(&f.device).unwrap();
    assert_eq!(f.device_calls(), (2, 0), "end_iteration is replay's: caching ignores it");
    assert_eq!(f.figures(), before);
    assert_eq!(before.cached_blocks, 2);
    // Growth: the wholly free 10 MiB join the fresh segment.
    let c = f.alloc(12 * MIB);
    assert_eq!(f.device_calls(), (3, 2));
    assert_eq!(f.device.counters().reserved_bytes, 22 * MIB);
    let d = f.alloc(9 * MIB);
    assert_eq!(d.ptr.addr(), c.ptr.addr() + 12 * MIB as usize);
    assert_eq!(f.device_calls(), (3, 2));
    f.free(c);
    f.free(d);
    assert_eq!(f.caching.release_cached(&f.device), 22 * MIB, "whole segments only, and this one is");
    f.finish();
}

#[test]
fn a_refused_padded_segment_falls_back_to_the_request_alone() {
    let fake = FakeDevice::new();
    let shared: SharedAllocator = fake.clone();
    let caching = Caching::new(&CachingOptions::default());
    let mut f = Fixture { fake, device: Device::new(shared, Some(132 * MIB)), caching };
    let a = f.alloc(128 * MIB);
    let b = f.alloc(3 * MIB);
    assert_eq!(b.bytes, 4 * MIB, "the 8 MiB padded segment is over the limit; 4 MiB fits");
    assert_eq!(f.device.counters().reserved_bytes, 132 * MIB);
    assert!(!crate::pool::budget::take_limit_refusal(), "the request was served: no refusal left behind");
    f.free(a);
    f.free(b);
    f.finish();
}
