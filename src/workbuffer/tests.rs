//! Tests of the compiled model and the request pool together: blobs,
//! initialisers, resolution, and parallel requests over a few blocks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use super::*;
use crate::cancel::CancelToken;
use crate::pool::device::{DeviceAllocator, DevicePtr, MemInfo, SharedAllocator, Stream};
use crate::pool::testing::{fill, holds, zeroed, CountingAllocator};
use crate::status::{Result, Status};

/// An operator reading all of each of `inputs` (sizes looked up in `m`);
/// also the report's tests'.
pub(super) fn op(
    m: &ModelBuilder,
    name: &str,
    inputs: &[u64],
    outputs: Vec<OutputSpec>,
    imm: &[u64],
    mutable: &[u64],
) -> OperatorSpec {
    OperatorSpec {
        name: name.into(),
        inputs: inputs.iter().map(|&id| InputSpec::new(id, m.buffer(id).unwrap().size)).collect(),
        outputs,
        request: WorkbufferRequest { immutable: imm.to_vec(), mutable: mutable.to_vec(), ..Default::default() },
    }
}

/// A small network: a constant with bytes and one without, a reshape
/// alias, a concat parent, immutable and mutable workbuffers, a pinned
/// input and output.
fn network() -> ModelBuilder {
    let mut m = ModelBuilder::new();
    m.add_constant(100, 64, Some((0..64u8).map(|i| 9u8.wrapping_add(i)).collect())).unwrap();
    m.add_constant(101, 32, None).unwrap();
    m.add_operator(op(&m, "input", &[], vec![OutputSpec::new(1, 512)], &[], &[])).unwrap(); // 0
    m.pin(1).unwrap();
    m.add_operator(op(&m, "conv", &[1, 100], vec![OutputSpec::new(2, 1024)], &[128, 64], &[256])).unwrap(); // 1
    m.add_operator(op(&m, "reshape", &[2], vec![OutputSpec::alias(3, 1024, 2)], &[], &[])).unwrap(); // 2
    m.add_operator(op(&m, "left", &[3], vec![OutputSpec::new(4, 256)], &[], &[512])).unwrap(); // 3
    m.add_operator(op(&m, "right", &[3, 101], vec![OutputSpec::new(5, 256)], &[32], &[])).unwrap(); // 4
    m.add_concat_parent(6, 512, &[(4, 0), (5, 256)]).unwrap();
    m.add_operator(op(&m, "head", &[6], vec![OutputSpec::new(7, 128)], &[], &[64, 64])).unwrap(); // 5
    m.pin(7).unwrap();
    m
}

fn no_init() -> impl FnMut(OpIndex, &[DevicePtr]) -> Result<()> {
    |_, _| Ok(())
}

#[test]
fn the_build_fills_the_blobs_and_runs_each_initialiser_once() {
    let device = CountingAllocator::new();
    let m = network();
    let mut calls = Vec::new();
    let mut init = |op: OpIndex, buffers: &[DevicePtr]| {
        let sizes = &m.operators()[op].request.immutable;
        assert_eq!(buffers.len(), sizes.len());
        for (k, (&p, &size)) in buffers.iter().zip(sizes).enumerate() {
            assert!(zeroed(p, size), "the immutable blob is zero-filled before the initialisers");
            fill(p, size, (op * 10 + k) as u8);
        }
        calls.push(op);
        Ok(())
    };
    let c = CompiledModel::build(&m, &LayoutOptions::default(), device.shared(), &mut init).unwrap();
    assert_eq!(calls, vec![1, 4], "once per operator with immutable workbuffers, in order");
    assert_eq!(device.live_blocks(), 2, "the constants and the immutable blob");
    let l = c.layout();
    assert_eq!((l.constants_size, l.immutable_size), (512, 768));
    assert!(holds(c.constant_ptr(100).unwrap(), 64, 9), "constant bytes copied in");
    assert!(zeroed(c.constant_ptr(101).unwrap(), 32), "a constant without bytes is zero-filled");
    assert_eq!(c.constant_ptr(2).unwrap_err().status(), Status::InvalidArgument);
    assert_eq!(c.constant_ptr(999).unwrap_err().status(), Status::NotFound);
    assert!(matches!(c.model().buffer(100).unwrap().origin, Origin::Constant { bytes: None }), "bytes not kept twice");
    assert_eq!(c.op_shape(1), Some(OpShape { inputs: 2, outputs: 1, immutable: 2, mutable: 1 }));
    assert_eq!(c.op_shape(6), None);
    assert!(c.timings().planner <= c.timings().total);
    drop(c);
    assert_eq!((device.live_blocks(), device.frees()), (0, 2));
}

#[test]
fn resolution_joins_the_blobs_and_a_request_block() {
    let m = network();
    let c =
        CompiledModel::build(&m, &LayoutOptions::default(), CountingAllocator::new().shared(), &mut no_init()).unwrap();
    let pool = BlockPool::for_model(&c, CountingAllocator::new().shared(), 2).unwrap();
    let lease = pool.acquire(None, None).unwrap();
    let at = |op: OpIndex| c.resolve(op, &lease).unwrap().map(Option::unwrap).collect::<Vec<_>>();
    let mutable = |id: u64| lease.base.byte_add(c.place(id).unwrap().offset);
    // conv: inputs 1 (mutable) and 100 (constant), output 2, immutable x2, mutable x1.
    let conv = at(1);
    assert_eq!(conv.len(), 6);
    assert_eq!((conv[0], conv[1], conv[2]), (mutable(1), c.constant_ptr(100).unwrap(), mutable(2)));
    let imm = c.immutable_base().unwrap();
    assert_eq!((conv[3], conv[4]), (imm.byte_add(c.layout().immutable[1][0].offset), imm.byte_add(256)));
    assert_eq!(conv[5], lease.base.byte_add(c.layout().mutable[1][0].offset));
    // The reshape's output is its input's buffer; the concat parts sit in the parent.
    assert_eq!(at(2), vec![mutable(2), mutable(2)]);
    assert_eq!(at(3)[1], mutable(6));
    assert_eq!(at(4)[2], mutable(6).byte_add(256));
    // Errors: an operator past the last, a block too small for the model.
    assert_eq!(c.resolve(6, &lease).err().unwrap().status(), Status::InvalidArgument);
    let small = Lease { size: c.layout().mutable_size - 1, ..lease };
    assert!(c.resolve(0, &small).err().unwrap().message().contains("smaller than this model's mutable block"));
    let far = Lease { base: DevicePtr::new((usize::MAX - 16) as *mut u8).unwrap(), ..lease };
    assert!(c.resolve(0, &far).err().unwrap().message().contains("past the end of the address space"));
    pool.release(&lease).unwrap();
}

#[test]
fn a_failing_initialiser_fails_the_build_and_frees_everything() {
    let device = CountingAllocator::new();
    let mut init = |op: OpIndex, _: &[DevicePtr]| {
        if op == 4 {
            return Err(crate::Error::new(Status::CallbackFailed, "operator 4: refused"));
        }
        Ok(())
    };
    let e = CompiledModel::build(&network(), &LayoutOptions::default(), device.shared(), &mut init).unwrap_err();
    assert_eq!((e.status(), e.message()), (Status::CallbackFailed, "operator 4: refused"));
    assert_eq!(device.live_blocks(), 0);
    assert_eq!(device.allocs(), 2);
}

/// Host memory the CPU is told it cannot write (a device-only allocator),
/// or that reports `free` bytes of free memory.
struct Wrapped {
    inner: Arc<CountingAllocator>,
    writable: bool,
    free: Option<u64>,
}

impl DeviceAllocator for Wrapped {
    fn name(&self) -> &str {
        "wrapped"
    }
    fn alloc(&self, size: u64, alignment: u64, stream: Stream) -> Result<DevicePtr> {
        self.inner.alloc(size, alignment, stream)
    }
    fn free(&self, ptr: DevicePtr, size: u64, stream: Stream) {
        self.inner.free(ptr, size, stream)
    }
    fn mem_info(&self) -> Option<MemInfo> {
        self.free.map(|free| MemInfo { free, total: free * 2 })
    }
    fn host_accessible(&self) -> bool {
        self.writable
    }
}

fn wrapped(writable: bool, free: Option<u64>) -> (Arc<CountingAllocator>, SharedAllocator) {
    let inner = CountingAllocator::new();
    (inner.clone(), Arc::new(Wrapped { inner, writable, free }))
}

#[test]
fn constant_bytes_need_a_device_the_cpu_can_write() {
    let (inner, device) = wrapped(false, None);
    let e = CompiledModel::build(&network(), &LayoutOptions::default(), device.clone(), &mut no_init()).unwrap_err();
    assert!(e.message().contains("constant 100 has bytes") && e.message().contains("not host-accessible"), "{e}");
    assert_eq!(inner.live_blocks(), 0);
    let mut m = ModelBuilder::new();
    m.add_constant(1, 16, None).unwrap();
    m.add_operator(op(&m, "a", &[1], vec![OutputSpec::new(2, 16)], &[8], &[])).unwrap();
    let c = CompiledModel::build(&m, &LayoutOptions::default(), device, &mut no_init()).unwrap();
    assert!(c.constant_ptr(1).is_ok() && c.immutable_base().is_some());
}

#[test]
fn the_pool_takes_what_the_device_holds_and_keeps_a_partial_allocation() {
    // mem_info caps N: 1000 B free hold 3 blocks of 256 B.
    let (_, device) = wrapped(true, Some(1000));
    let pool = BlockPool::new(device, 256, 256, 5).unwrap();
    let info = pool.info();
    assert_eq!((info.requested, info.blocks, info.free), (5, 3, 3));
    assert!(info.partial.unwrap().contains("room for 3 of the 5 blocks of 256 B"));
    // Not even one.
    let (_, device) = wrapped(true, Some(100));
    let e = BlockPool::new(device, 256, 256, 2).unwrap_err();
    assert_eq!(e.status(), Status::OutOfMemory);
    assert!(e.message().contains("one mutable block needs 256 B; device \"wrapped\" has 100 B free"), "{e}");
    // An allocation failing after two blocks keeps the two.
    let device = CountingAllocator::new();
    device.set_capacity(512);
    let pool = BlockPool::new(device.shared(), 256, 256, 5).unwrap();
    let info = pool.info();
    assert_eq!((info.blocks, device.live_blocks()), (2, 2));
    assert!(info.partial.unwrap().contains("block 3 of 5 could not be allocated"));
    device.fail_next(1);
    assert_eq!(BlockPool::new(device.shared(), 256, 256, 1).unwrap_err().status(), Status::OutOfMemory);
    for (count, size, align) in [(0, 256, 256), (1, 0, 256), (1, 256, 3)] {
        assert_eq!(BlockPool::new(device.shared(), size, align, count).unwrap_err().status(), Status::InvalidArgument);
    }
    drop(pool);
    assert_eq!(device.live_blocks(), 0);
}

#[test]
fn leases_are_checked_and_busy_pools_time_out() {
    let device = CountingAllocator::new();
    let pool = BlockPool::new(device.shared(), 256, 64, 2).unwrap();
    let a = pool.acquire(Some(Duration::ZERO), None).unwrap();
    let b = pool.acquire(None, None).unwrap();
    assert_ne!(a.base, b.base);
    let e = pool.acquire(Some(Duration::ZERO), None).unwrap_err();
    assert_eq!(e.status(), Status::Busy);
    assert_eq!(pool.acquire(Some(Duration::from_millis(5)), None).unwrap_err().status(), Status::Busy);
    pool.release(&a).unwrap();
    let before = pool.info();
    for bad in [a, Lease { generation: b.generation + 1, ..b }, Lease { slot: 9, ..b }, Lease { size: 1, ..b }] {
        let e = pool.release(&bad).unwrap_err();
        assert!(e.message().contains("is not out of this pool"), "{e}");
        assert_eq!(pool.info(), before, "a refused release changes nothing");
    }
    let again = pool.acquire(None, None).unwrap();
    assert_eq!((again.slot, again.generation), (a.slot, a.generation + 1));
    assert_eq!(pool.release(&a).unwrap_err().status(), Status::InvalidArgument, "a stale lease of a reused slot");
    pool.release(&again).unwrap();
    pool.release(&b).unwrap();
    let info = pool.info();
    assert_eq!((info.acquires, info.timeouts, info.waits, info.out, info.free), (3, 2, 1, 0, 2));
}

#[test]
fn cancellation_and_shrinking_to_zero_wake_the_waiters() {
    let pool = Arc::new(BlockPool::new(CountingAllocator::new().shared(), 256, 64, 1).unwrap());
    let held = pool.acquire(None, None).unwrap();
    let token = Arc::new(CancelToken::new());
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let (pool, token) = (pool.clone(), token.clone());
            std::thread::spawn(move || pool.acquire(None, Some(&token)).unwrap_err().status())
        })
        .collect();
    while pool.info().waiters < 3 {
        std::thread::yield_now();
    }
    token.cancel();
    for w in waiters {
        assert_eq!(w.join().unwrap(), Status::Cancelled);
    }
    assert_eq!(pool.acquire(None, Some(&token)).unwrap_err().status(), Status::Cancelled, "checked first");
    assert_eq!(pool.info().cancellations, 4);
    token.reset();
    let waiter = {
        let pool = pool.clone();
        std::thread::spawn(move || pool.acquire(None, None).unwrap_err())
    };
    while pool.info().waiters < 1 {
        std::thread::yield_now();
    }
    pool.shrink(0).unwrap();
    let e = waiter.join().unwrap();
    assert_eq!(e.status(), Status::WrongState);
    assert!(e.message().contains("shrunk to 0"));
    assert_eq!(pool.info().blocks, 1, "the block out is freed when it comes back");
    pool.release(&held).unwrap();
    assert_eq!((pool.info().blocks, pool.info().free), (0, 0));
    assert_eq!(pool.shrink(1).unwrap_err().status(), Status::InvalidArgument, "a pool only shrinks");
}

#[test]
fn a_waiter_woken_by_a_release_but_cancelled_passes_the_block_on() {
    // The flag is set without waking anyone, so the release's single
    // wake-up is the only one: when it picks the cancelled waiter, only the
    // pass-on wakes the patient one. Repeated, so both picks happen. The
    // patient waiter has no timeout: one would fail the test on a machine
    // slow enough to outlast it, and a lost wake-up shows as a hang.
    for _ in 0..100 {
        let pool = Arc::new(BlockPool::new(CountingAllocator::new().shared(), 256, 64, 1).unwrap());
        let held = pool.acquire(None, None).unwrap();
        let token = Arc::new(CancelToken::new());
        let patient = {
            let pool = pool.clone();
            std::thread::spawn(move || pool.acquire(None, None).map(|l| pool.release(&l)))
        };
        let cancelled = {
            let (pool, token) = (pool.clone(), token.clone());
            std::thread::spawn(move || pool.acquire(None, Some(&token)).unwrap_err().status())
        };
        while pool.info().sleepers < 2 {
            std::thread::yield_now();
        }
        token.flag().store(true, Ordering::SeqCst);
        pool.release(&held).unwrap();
        assert_eq!(cancelled.join().unwrap(), Status::Cancelled);
        patient.join().unwrap().expect("the patient waiter got the block").unwrap();
    }
}

#[test]
fn a_cancel_reset_at_once_still_ends_the_wait() {
    let pool = Arc::new(BlockPool::new(CountingAllocator::new().shared(), 256, 64, 1).unwrap());
    let held = pool.acquire(None, None).unwrap();
    let token = Arc::new(CancelToken::new());
    let waiter = {
        let (pool, token) = (pool.clone(), token.clone());
        std::thread::spawn(move || pool.acquire(None, Some(&token)).unwrap_err().status())
    };
    while pool.info().waiters < 1 {
        std::thread::yield_now();
    }
    token.cancel();
    token.reset();
    assert_eq!(waiter.join().unwrap(), Status::Cancelled);
    pool.release(&held).unwrap();
}

#[test]
fn a_pool_refuses_counts_its_leases_cannot_number_and_names_both_reasons_for_a_short_pool() {
    let device = CountingAllocator::new();
    let e = BlockPool::new(device.shared(), 256, 64, u32::MAX as usize + 1).unwrap_err();
    assert!(e.message().contains("at most 4294967295 blocks"), "{e}");
    assert_eq!(device.allocs(), 0);
    // Capped by free memory to 3, then the device fails after 2.
    let inner = CountingAllocator::new();
    inner.set_capacity(512);
    let capped: SharedAllocator = Arc::new(Wrapped { inner: inner.clone(), writable: true, free: Some(1000) });
    let info = BlockPool::new(capped, 256, 256, 5).unwrap().info();
    let reason = info.partial.unwrap();
    assert!(
        reason.contains("room for 3 of the 5") && reason.contains("block 3 of 3 could not be allocated"),
        "{reason}"
    );
    assert_eq!(info.blocks, 2);
}

#[test]
fn the_shared_blobs_are_named_only_when_the_pool_shares_their_device() {
    let (_, small) = wrapped(true, Some(100));
    let c = CompiledModel::build(&network(), &LayoutOptions::default(), small.clone(), &mut no_init()).unwrap();
    let same = BlockPool::for_model(&c, small, 1).unwrap_err();
    assert!(same.message().contains("after the model's shared blobs of 1280 B"), "{same}");
    let (_, other) = wrapped(true, Some(100));
    let apart = BlockPool::for_model(&c, other, 1).unwrap_err();
    assert!(!apart.message().contains("shared blobs"), "{apart}");
}

#[test]
fn dropping_a_pool_frees_its_blocks_on_the_dropping_thread_even_with_blocks_out() {
    let device = CountingAllocator::new();
    let pool = BlockPool::new(device.shared(), 256, 64, 3).unwrap();
    let _out = pool.acquire(None, None).unwrap();
    drop(pool);
    assert_eq!((device.live_blocks(), device.frees()), (0, 3));
}

#[test]
fn shrinking_frees_free_blocks_now_and_held_ones_on_return() {
    let device = CountingAllocator::new();
    let pool = BlockPool::new(device.shared(), 256, 64, 4).unwrap();
    let a = pool.acquire(None, None).unwrap();
    let b = pool.acquire(None, None).unwrap();
    pool.shrink(1).unwrap();
    assert_eq!((device.live_blocks(), pool.info().free), (2, 0), "the two free blocks went back at once");
    pool.release(&a).unwrap();
    assert_eq!(device.live_blocks(), 1);
    pool.release(&b).unwrap();
    assert_eq!((device.live_blocks(), pool.info().free), (1, 1));
}

#[test]
fn parallel_requests_never_share_a_block_they_hold() {
    const THREADS: usize = 8;
    const RUNS: usize = 200;
    let m = network();
    let c = Arc::new(
        CompiledModel::build(&m, &LayoutOptions::default(), CountingAllocator::new().shared(), &mut no_init()).unwrap(),
    );
    let pool = Arc::new(BlockPool::for_model(&c, CountingAllocator::new().shared(), 3).unwrap());
    let out = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (c, pool, out, most, start) = (c.clone(), pool.clone(), out.clone(), most.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                for run in 0..RUNS {
                    let lease = pool.acquire(None, None).unwrap();
                    let now = out.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    let seed = (t * RUNS + run) as u8;
                    // Every output and mutable workbuffer of every operator.
                    let mut written = Vec::new();
                    for k in 0..c.operator_count() {
                        let shape = c.op_shape(k).unwrap();
                        let places = c.op_places(k).unwrap();
                        let pointers: Vec<_> = c.resolve(k, &lease).unwrap().map(Option::unwrap).collect();
                        let outputs = shape.inputs..shape.inputs + shape.outputs;
                        let mutable = shape.total() - shape.mutable..shape.total();
                        for i in outputs.chain(mutable) {
                            written.push((pointers[i], places[i].size));
                        }
                    }
                    // Buffers sharing bytes in the plan overwrite each other;
                    // only the last writer of each byte is checked, so write
                    // then check the last-written buffers, one at a time.
                    for &(p, size) in &written {
                        fill(p, size, seed);
                        std::thread::yield_now();
                        assert!(holds(p, size, seed), "thread {t} run {run}: another request wrote its block");
                    }
                    out.fetch_sub(1, Ordering::SeqCst);
                    pool.release(&lease).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(most.load(Ordering::SeqCst) <= 3);
    let info = pool.info();
    assert_eq!((info.acquires, info.out, info.free), ((THREADS * RUNS) as u64, 0, 3));
}

#[test]
fn workbuffers_with_ids_have_places_without_a_block_and_dynamic_buffers_resolve_to_none() {
    let mut m = ModelBuilder::new();
    m.add_operator(op(&m, "dyn", &[], vec![OutputSpec::new(1, 0)], &[], &[])).unwrap();
    let mut conv = op(&m, "conv", &[1], vec![OutputSpec::new(2, 64)], &[32, 48], &[128]);
    conv.request.immutable_ids = vec![20, 21];
    conv.request.mutable_ids = vec![22];
    m.add_operator(conv).unwrap();
    let c =
        CompiledModel::build(&m, &LayoutOptions::default(), CountingAllocator::new().shared(), &mut no_init()).unwrap();
    let l = c.layout();
    assert_eq!(c.place(20), Some(l.immutable[1][0]));
    assert_eq!(c.place(21), Some(Place { area: Area::Immutable, offset: 256, size: 48 }));
    assert_eq!(c.place(22), Some(l.mutable[1][0]));
    assert_eq!(c.place(22).unwrap().area, Area::Mutable);
    assert_eq!(c.place(1), Some(Place { area: Area::Dynamic, offset: 0, size: 0 }));
    assert_eq!(c.place(23), None);
    // Resolved, the places are the same offsets from the areas' bases.
    let pool = BlockPool::for_model(&c, CountingAllocator::new().shared(), 1).unwrap();
    let lease = pool.acquire(None, None).unwrap();
    let got: Vec<_> = c.resolve(1, &lease).unwrap().collect();
    let imm = c.immutable_base().unwrap();
    assert_eq!(
        got,
        vec![
            None,
            Some(lease.base.byte_add(c.place(2).unwrap().offset)),
            Some(imm.byte_add(c.place(20).unwrap().offset)),
            Some(imm.byte_add(256)),
            Some(lease.base.byte_add(c.place(22).unwrap().offset)),
        ]
    );
    pool.release(&lease).unwrap();
}

/// An operator's ids checked against each other: an output listed twice, a
/// workbuffer id that is also an output or given twice, aliases of the
/// operator's own outputs or of what it does not read; and the same checks
/// at 100,000 outputs or workbuffer ids (one lookup each, so this is
/// quick), refusing a repeat at the end with the same message.
#[test]
fn an_operators_ids_are_checked_against_each_other_at_any_count() {
    let op = |outputs: Vec<OutputSpec>, request: WorkbufferRequest| OperatorSpec {
        name: "op".into(),
        inputs: vec![InputSpec::new(1, 64)],
        outputs,
        request,
    };
    let refused = |spec: OperatorSpec, status: Status, text: &str| {
        let mut m = ModelBuilder::new();
        m.add_constant(1, 64, None).unwrap();
        let e = m.add_operator(spec).unwrap_err();
        assert_eq!(e.status(), status, "{}", e.message());
        assert!(e.message().contains(text), "{text:?} in {}", e.message());
    };
    let ids = |mutable_ids: Vec<u64>| WorkbufferRequest {
        mutable: vec![8; mutable_ids.len()],
        mutable_ids,
        ..WorkbufferRequest::default()
    };
    let out = |id| OutputSpec::new(id, 64);
    refused(op(vec![out(2), out(3), out(2)], ids(vec![])), Status::AlreadyExists, "output 2 is listed twice");
    refused(op(vec![out(2)], ids(vec![5, 2])), Status::AlreadyExists, "mutable workbuffer 1: id 2 is given twice");
    refused(op(vec![], ids(vec![5, 6, 5])), Status::AlreadyExists, "mutable workbuffer 0: id 5 is given twice");
    let alias = |id, of| OutputSpec { alias_of: Some(of), ..OutputSpec::new(id, 64) };
    refused(op(vec![alias(2, 3), out(3)], ids(vec![])), Status::InvalidArgument, "an alias cycle");
    refused(op(vec![alias(2, 9)], ids(vec![])), Status::InvalidArgument, "which is not one of its inputs");

    const COUNT: u64 = 100_000;
    let mut m = ModelBuilder::new();
    m.add_constant(1, 64, None).unwrap();
    m.add_operator(op((2..2 + COUNT).map(out).collect(), ids(vec![]))).unwrap();
    m.add_operator(op(vec![], ids((COUNT + 2..2 * COUNT + 2).collect()))).unwrap();
    let mut repeated: Vec<u64> = (3 * COUNT..4 * COUNT).collect();
    repeated.push(3 * COUNT + 17);
    refused(
        op((3 * COUNT..4 * COUNT).map(out).chain([out(3 * COUNT + 17)]).collect(), ids(vec![])),
        Status::AlreadyExists,
        &format!("output {} is listed twice", 3 * COUNT + 17),
    );
    refused(
        op(vec![], ids(repeated)),
        Status::AlreadyExists,
        &format!("mutable workbuffer 17: id {} is given twice", 3 * COUNT + 17),
    );
}
