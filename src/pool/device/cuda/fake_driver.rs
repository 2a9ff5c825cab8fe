//! The driver path driven by a driver written here (host memory, a
//! per-thread context stack as CUDA keeps one, counted calls), so that its
//! semantics are tested on any machine; c-tests run it against a C stand-in
//! loaded as libcuda.so.1.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;

use super::driver::{Driver, DriverDevice};
use super::{open_driver, CudaAllocator, SUCCESS};
use crate::pool::device::{DeviceAllocator, Stream};
use crate::status::Status;

const OUT_OF_MEMORY: c_int = 2;
const INVALID_DEVICE: c_int = 101;
const INVALID_CONTEXT: c_int = 201;
const DEVICE_BYTES: usize = 1 << 30;

static PRIMARY: u8 = 0;
static FOREIGN: u8 = 0;
static RETAINS: AtomicUsize = AtomicUsize::new(0);
static RELEASES: AtomicUsize = AtomicUsize::new(0);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);
static ASYNC_ALLOCS: AtomicUsize = AtomicUsize::new(0);
static ASYNC_FREES: AtomicUsize = AtomicUsize::new(0);
/// Live blocks: the address handed out -> the buffer it lies in.
static MEMORY: Mutex<Option<HashMap<u64, Vec<u8>>>> = Mutex::new(None);

thread_local! {
    static CONTEXTS: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

fn addr(p: &u8) -> usize {
    p as *const u8 as usize
}

fn current() -> Option<usize> {
    CONTEXTS.with(|c| c.borrow().last().copied())
}

unsafe extern "C" fn device_get_count(count: *mut c_int) -> c_int {
    // SAFETY: nnmem passes a valid place.
    unsafe { *count = 1 };
    SUCCESS
}
unsafe extern "C" fn device_get(device: *mut c_int, ordinal: c_int) -> c_int {
    if ordinal != 0 {
        return INVALID_DEVICE;
    }
    // SAFETY: nnmem passes a valid place.
    unsafe { *device = 0 };
    SUCCESS
}
unsafe extern "C" fn retain(ctx: *mut *mut c_void, _device: c_int) -> c_int {
    RETAINS.fetch_add(1, SeqCst);
    // SAFETY: nnmem passes a valid place.
    unsafe { *ctx = addr(&PRIMARY) as *mut c_void };
    SUCCESS
}
unsafe extern "C" fn release(_device: c_int) -> c_int {
    RELEASES.fetch_add(1, SeqCst);
    SUCCESS
}
unsafe extern "C" fn push(ctx: *mut c_void) -> c_int {
    CONTEXTS.with(|c| c.borrow_mut().push(ctx as usize));
    SUCCESS
}
unsafe extern "C" fn pop(out: *mut *mut c_void) -> c_int {
    let top = CONTEXTS.with(|c| c.borrow_mut().pop()).unwrap_or(0);
    // SAFETY: nnmem passes a valid place.
    unsafe { *out = top as *mut c_void };
    SUCCESS
}
fn alloc(out: *mut u64, bytes: usize) -> c_int {
    if current() != Some(addr(&PRIMARY)) {
        return INVALID_CONTEXT;
    }
    let mut memory = MEMORY.lock().unwrap();
    let memory = memory.get_or_insert_with(HashMap::new);
    let used: usize = memory.values().map(Vec::len).sum();
    if bytes > DEVICE_BYTES - used {
        return OUT_OF_MEMORY;
    }
    let block = vec![0u8; bytes + 256];
    let at = block.as_ptr() as u64;
    let p = at + (256 - at % 256);
    memory.insert(p, block);
    // SAFETY: nnmem passes a valid place.
    unsafe { *out = p };
    SUCCESS
}
fn free(p: u64) -> c_int {
    if current() != Some(addr(&PRIMARY)) {
        return INVALID_CONTEXT;
    }
    match MEMORY.lock().unwrap().get_or_insert_with(HashMap::new).remove(&p) {
        Some(_) => SUCCESS,
        None => 1,
    }
}
unsafe extern "C" fn mem_alloc(out: *mut u64, bytes: usize) -> c_int {
    ALLOCS.fetch_add(1, SeqCst);
    alloc(out, bytes)
}
unsafe extern "C" fn mem_free(p: u64) -> c_int {
    free(p)
}
unsafe extern "C" fn mem_alloc_async(out: *mut u64, bytes: usize, _stream: *mut c_void) -> c_int {
    ASYNC_ALLOCS.fetch_add(1, SeqCst);
    alloc(out, bytes)
}
unsafe extern "C" fn mem_free_async(p: u64, _stream: *mut c_void) -> c_int {
    ASYNC_FREES.fetch_add(1, SeqCst);
    free(p)
}
unsafe extern "C" fn mem_get_info(free: *mut usize, total: *mut usize) -> c_int {
    if current() != Some(addr(&PRIMARY)) {
        return INVALID_CONTEXT;
    }
    let used: usize = MEMORY.lock().unwrap().get_or_insert_with(HashMap::new).values().map(Vec::len).sum();
    // SAFETY: nnmem passes valid places.
    unsafe { (*free, *total) = (DEVICE_BYTES - used, DEVICE_BYTES) };
    SUCCESS
}
unsafe extern "C" fn get_error_string(code: c_int, text: *mut *const c_char) -> c_int {
    let s: &'static std::ffi::CStr = if code == OUT_OF_MEMORY { c"out of memory" } else { c"some error" };
    // SAFETY: nnmem passes a valid place.
    unsafe { *text = s.as_ptr() };
    SUCCESS
}

fn driver(init: c_int, stream_ordered: bool) -> &'static Driver {
    Box::leak(Box::new(Driver {
        library: "libfake.so.1",
        init,
        device_get_count,
        device_get,
        primary_ctx_retain: retain,
        primary_ctx_release: release,
        ctx_push: push,
        ctx_pop: pop,
        mem_alloc,
        mem_free,
        mem_alloc_async: stream_ordered.then_some((mem_alloc_async as _, mem_free_async as _)),
        mem_get_info,
        get_error_string,
    }))
}

fn allocator(device: DriverDevice) -> CudaAllocator {
    CudaAllocator { backend: Box::new(device), name: "cuda:0".to_owned(), shifted: Mutex::default() }
}

/// One test: the counters are process-wide.
#[test]
fn the_driver_path_allocates_in_the_primary_context_and_restores_the_thread() {
    let drv = driver(SUCCESS, true);
    let cuda = allocator(open_driver(drv, "cuda:0", 0).unwrap());
    assert_eq!((RETAINS.load(SeqCst), RELEASES.load(SeqCst)), (1, 0), "retained once, not released");
    assert!(cuda.stream_ordered());
    assert_eq!(cuda.library(), "libfake.so.1");

    // A thread with a context of its own finds it current after every call.
    CONTEXTS.with(|c| c.borrow_mut().push(addr(&FOREIGN)));
    super::tests::round_trip(&cuda, "cuda:0");
    assert_eq!(CONTEXTS.with(|c| c.borrow().clone()), vec![addr(&FOREIGN)]);
    let e = cuda.alloc(DEVICE_BYTES as u64 + 1, 256, Stream::DEFAULT).unwrap_err();
    assert_eq!(e.status(), Status::OutOfMemory);
    assert_eq!(
        e.message(),
        format!("cuda:0: cuMemAlloc of {} B failed: out of memory (CUDA driver error 2)", DEVICE_BYTES + 1)
    );
    CONTEXTS.with(|c| c.borrow_mut().clear());

    // On a stream: cuMemAllocAsync / cuMemFreeAsync; on the default one, not.
    let before = (ALLOCS.load(SeqCst), ASYNC_ALLOCS.load(SeqCst), ASYNC_FREES.load(SeqCst));
    let p = cuda.alloc(1000, 512, Stream(0x40)).unwrap();
    assert_eq!(p.addr() % 512, 0);
    cuda.free(p, 1000, Stream(0x40));
    let q = cuda.alloc(1000, 256, Stream::DEFAULT).unwrap();
    cuda.free(q, 1000, Stream::DEFAULT);
    let after = (ALLOCS.load(SeqCst), ASYNC_ALLOCS.load(SeqCst), ASYNC_FREES.load(SeqCst));
    assert_eq!((after.0 - before.0, after.1 - before.1, after.2 - before.2), (1, 1, 1));
    let e = cuda.alloc(DEVICE_BYTES as u64 + 1, 256, Stream(0x40)).unwrap_err();
    assert!(e.message().starts_with("cuda:0: cuMemAllocAsync of "), "{}", e.message());

    // A thread that never had a context.
    std::thread::scope(|s| {
        s.spawn(|| {
            let p = cuda.alloc(64, 256, Stream::DEFAULT).unwrap();
            cuda.free(p, 64, Stream::DEFAULT);
            assert!(cuda.mem_info().is_some());
            assert_eq!(current(), None, "the pushed context was popped");
        });
    });
    assert!(MEMORY.lock().unwrap().as_ref().unwrap().is_empty(), "every block went back");
    drop(cuda);
    assert_eq!((RETAINS.load(SeqCst), RELEASES.load(SeqCst)), (1, 1), "released when dropped");

    // A driver without cuMemAllocAsync: cuMemAlloc on every stream.
    let cuda = allocator(open_driver(driver(SUCCESS, false), "cuda:0", 0).unwrap());
    assert!(!cuda.stream_ordered());
    let before = (ALLOCS.load(SeqCst), ASYNC_ALLOCS.load(SeqCst));
    let p = cuda.alloc(100, 256, Stream(0x40)).unwrap();
    cuda.free(p, 100, Stream(0x40));
    assert_eq!((ALLOCS.load(SeqCst) - before.0, ASYNC_ALLOCS.load(SeqCst) - before.1), (1, 0));
    drop(cuda);

    // A device that is not there, and a driver whose cuInit failed.
    let e = open_driver(drv, "cuda:1", 1).err().unwrap();
    assert_eq!((e.status(), e.message()), (Status::NotFound, "cuda:1: no such device (libfake.so.1 has 1)"));
    let e = open_driver(driver(100, true), "cuda:0", 0).err().unwrap();
    assert_eq!(e.status(), Status::NotFound);
    assert_eq!(e.message(), "cuda:0: cuInit failed (libfake.so.1): some error (CUDA driver error 100)");
    assert_eq!(RETAINS.load(SeqCst), RELEASES.load(SeqCst), "every retain released");
}
