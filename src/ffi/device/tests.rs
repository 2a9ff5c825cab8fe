//! The C vtable adaptor and the `nnm_device_allocator_*` exports, driven
//! from Rust through `extern "C"` test functions.

use std::ffi::{c_int, c_void, CStr};
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};

use super::*;
use crate::ffi::error::nnm_last_error;
use crate::pool::device::host;
use crate::pool::Stream;

/// The context of the counting test allocator: host memory, counted, with
/// a size above which it fails (a device that runs out on demand).
#[derive(Default)]
struct Counts {
    allocs: AtomicU64,
    frees: AtomicU64,
    live_bytes: AtomicU64,
    released: AtomicU64,
    fail_above: u64,
    /// Hand out memory one byte past an aligned address (a broken device).
    misalign: bool,
}

unsafe extern "C" fn counting_alloc(ctx: *mut c_void, size: usize, alignment: usize, _: *mut c_void) -> *mut c_void {
    // SAFETY: every vtable in these tests has a live `Counts` as context.
    let c = unsafe { &*ctx.cast::<Counts>() };
    if size as u64 > c.fail_above {
        return ptr::null_mut();
    }
    let extra = usize::from(c.misalign);
    let Ok(p) = host().alloc((size + extra) as u64, alignment as u64, Stream::DEFAULT) else {
        return ptr::null_mut();
    };
    c.allocs.fetch_add(1, Ordering::Relaxed);
    c.live_bytes.fetch_add(size as u64, Ordering::Relaxed);
    p.as_ptr().wrapping_add(extra).cast()
}

unsafe extern "C" fn counting_free(ctx: *mut c_void, p: *mut c_void, size: usize, _: *mut c_void) {
    // SAFETY: as in `counting_alloc`.
    let c = unsafe { &*ctx.cast::<Counts>() };
    c.frees.fetch_add(1, Ordering::Relaxed);
    c.live_bytes.fetch_sub(size as u64, Ordering::Relaxed);
    let p = p.cast::<u8>().wrapping_sub(usize::from(c.misalign));
    host().free(crate::pool::DevicePtr::new(p).unwrap(), (size + usize::from(c.misalign)) as u64, Stream::DEFAULT);
}

unsafe extern "C" fn counting_mem_info(ctx: *mut c_void, free: *mut u64, total: *mut u64) -> c_int {
    // SAFETY: as in `counting_alloc`; nnmem passes writable pointers.
    unsafe {
        let c = &*ctx.cast::<Counts>();
        *total = c.fail_above;
        *free = c.fail_above - c.live_bytes.load(Ordering::Relaxed);
    }
    0
}

unsafe extern "C" fn counting_release(ctx: *mut c_void) {
    // SAFETY: as in `counting_alloc`.
    unsafe { &*ctx.cast::<Counts>() }.released.fetch_add(1, Ordering::Relaxed);
}

fn vtable(counts: &Counts, flags: u32) -> nnm_device_allocator_vtable {
    nnm_device_allocator_vtable {
        name: c"counting".as_ptr(),
        ctx: ptr::from_ref(counts).cast_mut().cast(),
        alloc: Some(counting_alloc),
        free: Some(counting_free),
        mem_info: Some(counting_mem_info),
        release: Some(counting_release),
        flags,
    }
}

fn last_error() -> String {
    // SAFETY: nnm_last_error returns a NUL-terminated thread-local string.
    unsafe { CStr::from_ptr(nnm_last_error()) }.to_str().unwrap().to_owned()
}

fn make(v: &nnm_device_allocator_vtable) -> *mut nnm_device_allocator {
    let mut a = ptr::null_mut();
    // SAFETY: `v` is a valid vtable over a live context; `a` is writable.
    assert_eq!(unsafe { nnm_device_allocator_new(v, &mut a) }, Status::Ok, "{}", last_error());
    a
}

#[test]
fn a_vtable_allocator_serves_counts_and_releases_its_context_once() {
    let counts = Counts { fail_above: 1 << 20, ..Default::default() };
    let a = make(&vtable(&counts, NNM_DEVICE_HOST_ACCESSIBLE));
    // SAFETY: `a` is live; the name stays valid while it is.
    assert_eq!(unsafe { CStr::from_ptr(nnm_device_allocator_name(a)) }, c"counting");
    let (mut p, mut q) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: live handle, writable out-parameters.
    unsafe {
        assert_eq!(nnm_device_allocator_alloc(a, 100, 64, ptr::null_mut(), &mut p), Status::Ok);
        assert_eq!(nnm_device_allocator_alloc(a, 5000, 4096, ptr::null_mut(), &mut q), Status::Ok);
    }
    assert_eq!((p as usize % 64, q as usize % 4096), (0, 0));
    // SAFETY: `p` is 100 writable bytes of host memory.
    unsafe { ptr::write_bytes(p.cast::<u8>(), 0xab, 100) };
    assert_eq!((counts.allocs.load(Ordering::Relaxed), counts.live_bytes.load(Ordering::Relaxed)), (2, 5100));
    let (mut free, mut total) = (0, 0);
    // SAFETY: live handle, writable out-parameters.
    assert_eq!(unsafe { nnm_device_allocator_mem_info(a, &mut free, &mut total) }, Status::Ok);
    assert_eq!((free, total), ((1 << 20) - 5100, 1 << 20));

    // The adaptor as the core sees it: a block keeps the allocator alive
    // past its handle.
    // SAFETY: `a` is live.
    let shared = unsafe { shared_allocator(a, "allocator") }.unwrap();
    assert!(shared.host_accessible());
    let block = DeviceBlock::new(shared, 10, 16).unwrap();

    // SAFETY: live handle; `p` came from it, once.
    unsafe {
        assert_eq!(nnm_device_allocator_dealloc(a, p), Status::Ok);
        assert_eq!(nnm_device_allocator_dealloc(a, p), Status::InvalidArgument);
        assert_eq!(nnm_device_allocator_dealloc(a, ptr::null_mut()), Status::Ok);
    }
    assert!(last_error().contains("not memory that nnm_device_allocator_alloc handed out"), "{}", last_error());
    assert_eq!(counts.frees.load(Ordering::Relaxed), 1);
    // Freeing the handle gives back `q`; the block still holds the allocator.
    // SAFETY: `a` is live and used by nothing else.
    unsafe { nnm_device_allocator_free(a) };
    assert_eq!((counts.frees.load(Ordering::Relaxed), counts.released.load(Ordering::Relaxed)), (2, 0));
    drop(block);
    assert_eq!((counts.allocs.load(Ordering::Relaxed), counts.frees.load(Ordering::Relaxed)), (3, 3));
    assert_eq!((counts.live_bytes.load(Ordering::Relaxed), counts.released.load(Ordering::Relaxed)), (0, 1));
    // A double free of the handle is reported, and nothing runs twice.
    // SAFETY: `a` is freed; free_handle only looks it up.
    unsafe { nnm_device_allocator_free(a) };
    assert!(last_error().contains("double free"), "{}", last_error());
    assert_eq!(counts.released.load(Ordering::Relaxed), 1);
}

#[test]
fn device_failures_and_bad_requests_are_reported_with_figures() {
    let counts = Counts { fail_above: 1000, ..Default::default() };
    let a = make(&vtable(&counts, 0));
    let mut p = ptr::null_mut();
    // SAFETY: live handle, writable out-parameter.
    unsafe {
        assert_eq!(nnm_device_allocator_alloc(a, 1001, 16, ptr::null_mut(), &mut p), Status::OutOfMemory);
        assert_eq!(last_error(), "counting: cannot allocate 1001 B (alignment 16 B)");
        assert_eq!(nnm_device_allocator_alloc(a, 0, 16, ptr::null_mut(), &mut p), Status::InvalidArgument);
        assert_eq!(nnm_device_allocator_alloc(a, 8, 12, ptr::null_mut(), &mut p), Status::InvalidArgument);
        assert_eq!(nnm_device_allocator_alloc(a, 8, 16, ptr::null_mut(), ptr::null_mut()), Status::NullArgument);
    }
    assert!(p.is_null(), "out-parameters are written only on success");
    assert_eq!(counts.allocs.load(Ordering::Relaxed), 0);
    // SAFETY: `a` is live, then freed once.
    unsafe {
        assert!(!shared_allocator(a, "allocator").unwrap().host_accessible());
        nnm_device_allocator_free(a);
    }
    assert_eq!(counts.released.load(Ordering::Relaxed), 1);

    // An allocator that ignores the alignment is caught and given back.
    let broken = Counts { fail_above: 1000, misalign: true, ..Default::default() };
    let a = make(&vtable(&broken, 0));
    // SAFETY: live handle, writable out-parameter; then freed once.
    unsafe {
        assert_eq!(nnm_device_allocator_alloc(a, 64, 64, ptr::null_mut(), &mut p), Status::InvalidArgument);
        assert!(last_error().contains("not aligned to the 64 B asked for"), "{}", last_error());
        nnm_device_allocator_free(a);
    }
    assert_eq!((broken.allocs.load(Ordering::Relaxed), broken.frees.load(Ordering::Relaxed)), (1, 1));
}

/// Memory the handle has out, returned again: the same address, one
/// inside the block, or the same address misaligned for the new request;
/// refused naming both blocks, and never given back (the counting
/// allocator under it panics on a free of memory in use).
#[test]
fn an_address_the_handle_has_out_already_is_refused_and_not_freed() {
    for (offset, misaligned) in [(0, false), (8, false), (0, true)] {
        let dev = crate::pool::testing::Misbehaving::new();
        let a = into_handle(nnm_device_allocator::new(dev.clone()));
        let (mut p, mut q) = (ptr::null_mut(), ptr::null_mut());
        // SAFETY: live handle, writable out-parameter.
        unsafe { assert_eq!(nnm_device_allocator_alloc(a, 100, 64, ptr::null_mut(), &mut p), Status::Ok) };
        // Twice the largest power of two dividing `p`: `p` is not aligned
        // to it.
        let alignment = if misaligned { (p as usize & (p as usize).wrapping_neg()) * 2 } else { 8 };
        dev.arm(Some(offset));
        // SAFETY: live handle, writable out-parameter.
        let status = unsafe { nnm_device_allocator_alloc(a, 200, alignment, ptr::null_mut(), &mut q) };
        let what = format!("offset {offset}, alignment {alignment}: {}", last_error());
        assert_eq!(status, Status::InvalidArgument, "{what}");
        let expected = format!(
            "device allocator \"misbehaving\" returned [{:#x}, {:#x}) (200 B), overlapping [{p:p}, {:#x}) (100 B) \
             that this handle already holds from it: not handed out and not given back",
            p as usize + offset as usize,
            p as usize + offset as usize + 200,
            p as usize + 100
        );
        assert!(last_error().starts_with(&expected), "{what}");
        assert!(q.is_null());
        // `p` is still out (once): given back once, with its own size.
        dev.arm(None);
        // SAFETY: live handle; `p` came from it; then freed once.
        unsafe {
            assert_eq!(nnm_device_allocator_dealloc(a, p), Status::Ok);
            assert_eq!(nnm_device_allocator_dealloc(a, p), Status::InvalidArgument);
            nnm_device_allocator_free(a);
        }
        assert_eq!((dev.inner.allocs(), dev.inner.frees(), dev.inner.live_blocks()), (1, 1, 0), "{what}");
    }
}

#[test]
fn incomplete_vtables_are_refused_and_keep_their_context() {
    let counts = Counts::default();
    let mut a = ptr::null_mut();
    type Spoil = fn(&mut nnm_device_allocator_vtable);
    let cases: [(Spoil, Status, &str); 5] = [
        (|v| v.alloc = None, Status::InvalidArgument, "device allocator \"counting\": vtable->alloc is NULL"),
        (|v| v.free = None, Status::InvalidArgument, "device allocator \"counting\": vtable->free is NULL"),
        (|v| v.name = ptr::null(), Status::NullArgument, "vtable->name is NULL"),
        (|v| v.flags = 6, Status::InvalidArgument, "device allocator \"counting\": unknown flags 0x6"),
        (|v| v.name = c"\xff".as_ptr(), Status::InvalidArgument, "vtable->name is not valid UTF-8"),
    ];
    for (spoil, status, message) in cases {
        let mut v = vtable(&counts, 0);
        spoil(&mut v);
        // SAFETY: a readable vtable and a writable out-parameter.
        assert_eq!(unsafe { nnm_device_allocator_new(&v, &mut a) }, status);
        assert!(last_error().starts_with(message), "{}", last_error());
        assert!(a.is_null());
    }
    // SAFETY: NULL is refused.
    assert_eq!(unsafe { nnm_device_allocator_new(ptr::null(), &mut a) }, Status::NullArgument);
    assert_eq!(counts.released.load(Ordering::Relaxed), 0, "a refused vtable's context stays the caller's");

    // Without mem_info the device cannot tell: NOT_FOUND, nothing written.
    let v = nnm_device_allocator_vtable { mem_info: None, release: None, ..vtable(&counts, 0) };
    let a = make(&v);
    let (mut free, mut total) = (7, 7);
    // SAFETY: live handle, writable out-parameters; then freed once.
    unsafe {
        assert_eq!(nnm_device_allocator_mem_info(a, &mut free, &mut total), Status::NotFound);
        assert_eq!(last_error(), "device allocator \"counting\" cannot tell its free and total memory");
        nnm_device_allocator_free(a);
    }
    assert_eq!((free, total), (7, 7));
}

#[test]
fn the_host_handle_has_a_name_and_no_mem_info() {
    let mut a = ptr::null_mut();
    let (mut free, mut p) = (0, ptr::null_mut());
    // SAFETY: writable out-parameters; the handle is live until freed.
    unsafe {
        assert_eq!(nnm_device_allocator_host(&mut a), Status::Ok);
        assert_eq!(CStr::from_ptr(nnm_device_allocator_name(a)), c"host");
        assert_eq!(nnm_device_allocator_mem_info(a, &mut free, &mut free.clone()), Status::NotFound);
        assert_eq!(nnm_device_allocator_alloc(a, 24, 8, ptr::null_mut(), &mut p), Status::Ok);
        nnm_device_allocator_free(a);
        assert!(nnm_device_allocator_name(a).is_null());
    }
    assert!(last_error().contains("not a live nnm_device_allocator"), "{}", last_error());
}

#[test]
fn cuda_is_a_handle_or_not_found() {
    let mut a = ptr::null_mut();
    // SAFETY: a writable out-parameter; a handle made is freed once.
    let status = unsafe { nnm_device_allocator_cuda(0, &mut a) };
    match crate::pool::device::cuda::load_cuda() {
        Err(_) => {
            assert_eq!(status, Status::NotFound);
            assert!(
                last_error().starts_with("no CUDA: the runtime (libcudart) not found (tried libcudart.so, "),
                "{}",
                last_error()
            );
            assert!(
                last_error().contains("the driver (libcuda) not found (tried libcuda.so.1, libcuda.so: "),
                "{}",
                last_error()
            );
            assert!(a.is_null());
        }
        Ok(_) if status == Status::Ok => {
            // SAFETY: a live handle, freed once.
            unsafe {
                assert_eq!(CStr::from_ptr(nnm_device_allocator_name(a)), c"cuda:0");
                nnm_device_allocator_free(a);
            }
        }
        Ok(_) => assert_eq!(status, Status::NotFound, "{}", last_error()),
    }
    // SAFETY: NULL is refused.
    assert_eq!(unsafe { nnm_device_allocator_cuda(0, ptr::null_mut()) }, Status::NullArgument);
}

/// Live blocks and bytes of a `Counts`, for the balance checks.
fn balance(c: &Counts) -> (u64, u64) {
    (c.allocs.load(Ordering::Relaxed) - c.frees.load(Ordering::Relaxed), c.live_bytes.load(Ordering::Relaxed))
}

#[test]
fn owned_arenas_take_their_memory_from_the_allocator_given() {
    use crate::ffi::arena::{nnm_arena_alloc_persistent, nnm_arena_free, nnm_arena_new_owned_on};
    let counts = Counts { fail_above: 1 << 20, ..Default::default() };
    let a = make(&vtable(&counts, NNM_DEVICE_HOST_ACCESSIBLE));
    let (mut arena, mut p) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: live handles, writable out-parameters, each freed once.
    unsafe {
        assert_eq!(nnm_arena_new_owned_on(a, 10_000, 0, 0, &mut arena), Status::Ok, "{}", last_error());
        nnm_device_allocator_free(a);
        assert_eq!(balance(&counts), (1, 10_000));
        assert_eq!(nnm_arena_alloc_persistent(arena, 64, 0, 0, &mut p), Status::Ok);
        // Zeroed by nnmem, and writable.
        assert_eq!(std::slice::from_raw_parts(p.cast::<u8>(), 64), &[0u8; 64]);
        ptr::write_bytes(p.cast::<u8>(), 0x5a, 64);
        assert_eq!(nnm_arena_new_owned_on(a, 10, 0, 0, &mut arena.clone()), Status::InvalidArgument);
        nnm_arena_free(arena);
    }
    assert_eq!(balance(&counts), (0, 0));
    assert_eq!(counts.released.load(Ordering::Relaxed), 1);

    // Device-only memory cannot back an arena; a failing device reports.
    let device = Counts { fail_above: 1 << 20, ..Default::default() };
    let a = make(&vtable(&device, 0));
    let small = Counts { fail_above: 100, ..Default::default() };
    let b = make(&vtable(&small, NNM_DEVICE_HOST_ACCESSIBLE));
    let mut arena = ptr::null_mut();
    // SAFETY: live handles, writable out-parameters; freed once.
    unsafe {
        assert_eq!(nnm_arena_new_owned_on(a, 4096, 0, 0, &mut arena), Status::InvalidArgument);
        assert!(last_error().starts_with("device allocator \"counting\" is not host-accessible: the arena"));
        assert_eq!(nnm_arena_new_owned_on(b, 4096, 0, 0, &mut arena), Status::OutOfMemory);
        assert_eq!(last_error(), "counting: cannot allocate 4096 B (alignment 4096 B) (for the arena)");
        assert!(arena.is_null());
        // NULL: the host allocator.
        assert_eq!(nnm_arena_new_owned_on(ptr::null(), 4096, 0, 0, &mut arena), Status::Ok);
        nnm_arena_free(arena);
        nnm_device_allocator_free(a);
        nnm_device_allocator_free(b);
    }
    assert_eq!((device.allocs.load(Ordering::Relaxed), small.allocs.load(Ordering::Relaxed)), (0, 0));
}

#[test]
fn a_nets_buffers_and_cache_tensors_come_from_its_allocator_and_go_back() {
    use crate::ffi::net::*;
    let counts = Counts { fail_above: 1 << 20, ..Default::default() };
    let a = make(&vtable(&counts, NNM_DEVICE_HOST_ACCESSIBLE));
    let (mut net, mut cache) = (ptr::null_mut(), ptr::null_mut());
    let mut t = nnm_tensor::default();
    let dims = [3u32, 5];
    let f32 = crate::net::Dtype::F32 as u32;
    // SAFETY: live handles, valid arguments, each freed once.
    unsafe {
        assert_eq!(nnm_net_new(2, &mut net), Status::Ok);
        // Before: host memory.
        assert_eq!(nnm_net_attach_param(net, c"w0".as_ptr(), f32, dims.as_ptr(), 2, ptr::null_mut()), Status::Ok);
        assert_eq!(nnm_net_attach_cache(net, c"c".as_ptr(), &mut cache), Status::Ok);
        assert_eq!(nnm_net_set_allocator(net, a), Status::Ok);
        nnm_device_allocator_free(a);
        assert_eq!(nnm_net_attach_param(net, c"w".as_ptr(), f32, dims.as_ptr(), 2, ptr::null_mut()), Status::Ok);
        assert_eq!(nnm_net_attach_output(net, c"y".as_ptr(), f32, dims.as_ptr(), 1, ptr::null_mut()), Status::Ok);
        assert_eq!(nnm_cache_push_new(cache, f32, dims.as_ptr(), 2, &mut t), Status::Ok);
        assert_eq!(std::slice::from_raw_parts(t.data.cast::<u8>(), 60), &[0u8; 60]);
        // data + diff of w (60 B each), of y (2 x 3 x 4 B each), the cache tensor.
        assert_eq!(balance(&counts), (5, 60 + 60 + 24 + 24 + 60));
        assert_eq!(nnm_cache_clear(cache), Status::Ok);
        assert_eq!(balance(&counts), (4, 168));
        // Back to host: what came from the counting allocator goes back there.
        assert_eq!(nnm_net_set_allocator(net, ptr::null()), Status::Ok);
        assert_eq!(nnm_cache_push_new(cache, f32, dims.as_ptr(), 2, &mut t), Status::Ok);
        assert_eq!(balance(&counts), (4, 168));
        nnm_net_free(net);
    }
    assert_eq!(balance(&counts), (0, 0));
    assert_eq!((counts.allocs.load(Ordering::Relaxed), counts.released.load(Ordering::Relaxed)), (5, 1));

    let device = Counts::default();
    let d = make(&vtable(&device, 0));
    // SAFETY: as above.
    unsafe {
        assert_eq!(nnm_net_new(2, &mut net), Status::Ok);
        assert_eq!(nnm_net_set_allocator(net, d), Status::InvalidArgument);
        assert!(last_error().starts_with("device allocator \"counting\" is not host-accessible: a net"));
        nnm_device_allocator_free(d);
        assert_eq!(nnm_net_set_allocator(net, d), Status::InvalidArgument, "a freed handle is refused");
        assert_eq!(nnm_net_set_allocator(ptr::null_mut(), ptr::null()), Status::NullArgument);
        nnm_net_free(net);
    }
}

#[test]
fn one_handle_serves_several_threads_at_once() {
    let counts = Counts { fail_above: 1 << 20, ..Default::default() };
    let a = make(&vtable(&counts, NNM_DEVICE_HOST_ACCESSIBLE));
    /// The handle, shared: every call on it is thread-safe.
    struct Shared(*mut nnm_device_allocator);
    // SAFETY: the handle's calls may come from any thread (its contract).
    unsafe impl Sync for Shared {}
    let shared = Shared(a);
    std::thread::scope(|s| {
        for t in 0..4u8 {
            let shared = &shared;
            s.spawn(move || {
                for i in 0..50usize {
                    let (size, mut p) = (16 + i * 8, ptr::null_mut());
                    // SAFETY: a live handle, freed only after the scope; `p`
                    // is `size` writable bytes until given back.
                    unsafe {
                        assert_eq!(nnm_device_allocator_alloc(shared.0, size, 16, ptr::null_mut(), &mut p), Status::Ok);
                        ptr::write_bytes(p.cast::<u8>(), t, size);
                        assert!(std::slice::from_raw_parts(p.cast::<u8>(), size).iter().all(|&b| b == t));
                        assert_eq!(nnm_device_allocator_dealloc(shared.0, p), Status::Ok);
                    }
                }
            });
        }
    });
    assert_eq!((counts.allocs.load(Ordering::Relaxed), balance(&counts)), (200, (0, 0)));
    // SAFETY: live, and no thread uses it any more.
    unsafe { nnm_device_allocator_free(a) };
    assert_eq!(counts.released.load(Ordering::Relaxed), 1);
}
