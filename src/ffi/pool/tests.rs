//! The pool exports and the C-strategy adaptor driven from Rust (so that
//! Miri sees the pointer work; c-tests/pool_test.c pins the C contract).

use std::ffi::{c_int, c_void, CStr};
use std::ptr::{null, null_mut};

use super::strategy_vtable::{
    nnm_device_ctx, nnm_device_ctx_alloc, nnm_device_ctx_free, nnm_pool_register_strategy,
    nnm_pool_unregister_strategy, nnm_strategy_vtable,
};
use super::*;
use crate::ffi::nnm_last_error;

fn last_error() -> String {
    // SAFETY: nnm_last_error returns a NUL-terminated thread-local string.
    unsafe { CStr::from_ptr(nnm_last_error()) }.to_str().unwrap().to_string()
}

fn stats(pool: *const nnm_pool) -> nnm_pool_stats {
    let mut s = nnm_pool_stats::default();
    // SAFETY: `pool` is live; `s` is writable.
    assert_eq!(unsafe { nnm_pool_get_stats(pool, &mut s) }, Status::Ok);
    s
}

fn alloc(pool: *mut nnm_pool, size: usize, alignment: usize) -> std::result::Result<*mut c_void, Status> {
    let mut p = null_mut();
    // SAFETY: `pool` is live; `p` is writable.
    match unsafe { nnm_pool_alloc(pool, size, alignment, null_mut(), &mut p) } {
        Status::Ok => Ok(p),
        s => Err(s),
    }
}

fn dealloc(pool: *mut nnm_pool, ptr: *mut c_void) -> Status {
    // SAFETY: `pool` is live; `ptr` is only compared.
    unsafe { nnm_pool_dealloc(pool, ptr) }
}

#[test]
fn a_page_unit_pool_reuses_a_released_block_and_checks_its_input() {
    let mut pool = null_mut();
    // SAFETY: NULL allocator and options mean host and defaults; `pool` is writable.
    assert_eq!(unsafe { nnm_pool_new(null(), StrategyKind::PageUnit as u32, null(), &mut pool) }, Status::Ok);
    let p = alloc(pool, 100, 0).unwrap();
    assert_eq!(p as usize % NNM_POOL_DEFAULT_ALIGNMENT, 0);
    // SAFETY: the pool handed out 100 writable bytes at `p`.
    unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0xab, 100) };
    assert_eq!((stats(pool).requested_bytes, stats(pool).allocated_bytes), (100, 4096));
    assert_eq!(dealloc(pool, p), Status::Ok);
    assert_eq!(dealloc(pool, p), Status::InvalidArgument);
    assert_eq!(alloc(pool, 4096, 0), Ok(p));
    // Size 0: a page of its own, while `p` is out.
    let zero = alloc(pool, 0, 0).unwrap();
    assert_ne!(zero, p);
    assert_eq!((stats(pool).requested_bytes, stats(pool).allocated_bytes), (4096, 2 * 4096));
    assert_eq!(dealloc(pool, zero), Status::Ok);
    assert_eq!(alloc(pool, 8, 3), Err(Status::InvalidArgument));
    assert_eq!(alloc(pool, usize::MAX, 16), Err(Status::Overflow));
    assert_eq!(dealloc(pool, null_mut()), Status::NullArgument);
    assert_eq!(dealloc(pool, p), Status::Ok);
    // SAFETY: the name is static; a freed handle is refused unread.
    unsafe {
        assert_eq!(CStr::from_ptr(nnm_pool_strategy_name(pool)).to_str().unwrap(), "page-unit");
        nnm_pool_free(pool);
        assert!(nnm_pool_strategy_name(pool).is_null());
    }
    assert!(last_error().contains("not a live nnm_pool"), "{}", last_error());
}

/// A one-block-per-request strategy over `nnm_device_ctx`: its state is a
/// list of (block, bytes, in use).
type Blocks = Vec<(*mut c_void, usize, bool)>;

unsafe extern "C" fn create(_ctx: *mut c_void, _options: *const nnm_pool_options) -> *mut c_void {
    Box::into_raw(Box::new(Blocks::new())).cast()
}

unsafe extern "C" fn destroy(state: *mut c_void) {
    // SAFETY: `state` came from `create`, and is destroyed once.
    drop(unsafe { Box::from_raw(state.cast::<Blocks>()) });
}

/// # Safety
/// `state` is from `create`; no other reference to it is in use.
unsafe fn blocks<'a>(state: *mut c_void) -> &'a mut Blocks {
    // SAFETY: as the caller promises.
    unsafe { &mut *state.cast::<Blocks>() }
}

unsafe extern "C" fn s_alloc(
    state: *mut c_void,
    dev: *mut nnm_device_ctx,
    size: usize,
    alignment: usize,
    stream: *mut c_void,
    out_ptr: *mut *mut c_void,
    _out_bytes: *mut usize,
) -> c_int {
    let mut p = null_mut();
    // SAFETY: `dev` is the running callback's context; `p` is writable.
    let status = unsafe { nnm_device_ctx_alloc(dev, size, alignment, stream, &mut p) };
    if status != Status::Ok {
        return status as c_int;
    }
    // SAFETY: the adaptor passes the state and a writable `out_ptr`.
    unsafe {
        blocks(state).push((p, size, true));
        *out_ptr = p;
    }
    Status::Ok as c_int
}

unsafe extern "C" fn s_dealloc(state: *mut c_void, dev: *mut nnm_device_ctx, ptr: *mut c_void) -> c_int {
    // SAFETY: the adaptor passes the state.
    let list = unsafe { blocks(state) };
    let Some(i) = list.iter().position(|b| b.0 == ptr && b.2) else { return Status::NotFound as c_int };
    // A block still out elsewhere cannot go back: refused, nothing changes.
    if let Some(other) = list.iter().find(|b| b.2 && b.0 != ptr) {
        // SAFETY: `dev` is the running callback's context.
        assert_eq!(unsafe { nnm_device_ctx_free(dev, other.0, other.1, null_mut()) }, Status::WrongState);
    }
    let (p, size, _) = list.remove(i);
    // SAFETY: as above; `p` is this strategy's idle device block now.
    unsafe { nnm_device_ctx_free(dev, p, size, null_mut()) as c_int }
}

unsafe extern "C" fn s_release(_state: *mut c_void, _dev: *mut nnm_device_ctx) {}

/// The vtable of the one-block-per-request strategy, named `name`.
fn one_per_block(name: &'static CStr) -> nnm_strategy_vtable {
    nnm_strategy_vtable {
        name: name.as_ptr(),
        create: Some(create),
        destroy: Some(destroy),
        alloc: Some(s_alloc),
        dealloc: Some(s_dealloc),
        release_cached: Some(s_release),
        release_all: Some(s_release),
        ..Default::default()
    }
}

#[test]
fn a_strategy_through_the_c_vtable_serves_and_is_checked() {
    let vtable = one_per_block(c"rust-one-per-block");
    // SAFETY: the vtable's callbacks meet the contract for the test's length.
    assert_eq!(unsafe { nnm_pool_register_strategy(&vtable) }, Status::Ok);
    // SAFETY: as above.
    assert_eq!(unsafe { nnm_pool_register_strategy(&vtable) }, Status::AlreadyExists);
    let mut pool = null_mut();
    // SAFETY: the name is NUL-terminated; `pool` is writable.
    let made = unsafe { nnm_pool_new_by_name(null(), c"rust-one-per-block".as_ptr(), null(), &mut pool) };
    assert_eq!(made, Status::Ok);
    let a = alloc(pool, 100, 64).unwrap();
    let b = alloc(pool, 200, 64).unwrap();
    let s = stats(pool);
    assert_eq!((s.active_blocks, s.device_allocs, s.reserved_bytes, s.allocated_bytes), (2, 2, 300, 300));
    assert_eq!(dealloc(pool, a), Status::Ok);
    assert_eq!(dealloc(pool, a), Status::InvalidArgument);
    assert_eq!(dealloc(pool, b), Status::Ok);
    let s = stats(pool);
    assert_eq!((s.active_blocks, s.device_frees, s.reserved_bytes), (0, 2, 0));
    // SAFETY: the handle is live and not used again.
    unsafe { nnm_pool_free(pool) };
    // SAFETY: NUL-terminated names.
    unsafe {
        assert_eq!(nnm_pool_unregister_strategy(c"rust-one-per-block".as_ptr()), Status::Ok);
        assert_eq!(nnm_pool_unregister_strategy(c"rust-one-per-block".as_ptr()), Status::NotFound);
    }
}

thread_local! {
    /// The context `saving_alloc` kept (past its callback).
    static SAVED: std::cell::Cell<*mut nnm_device_ctx> = const { std::cell::Cell::new(null_mut()) };
    /// Whether `saving_alloc` draws from the kept context instead of its own.
    static USE_SAVED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `s_alloc` that keeps its context, as a faulty strategy would, or (with
/// USE_SAVED) draws from the one it kept, perhaps another pool's.
unsafe extern "C" fn saving_alloc(
    state: *mut c_void,
    dev: *mut nnm_device_ctx,
    size: usize,
    alignment: usize,
    stream: *mut c_void,
    out_ptr: *mut *mut c_void,
    out_bytes: *mut usize,
) -> c_int {
    let dev = if USE_SAVED.with(|u| u.get()) {
        SAVED.with(|s| s.get())
    } else {
        SAVED.with(|s| s.set(dev));
        dev
    };
    // SAFETY: the adaptor's arguments, passed on (the context perhaps not).
    unsafe { s_alloc(state, dev, size, alignment, stream, out_ptr, out_bytes) }
}

/// Registers `vtable`.
fn register(vtable: nnm_strategy_vtable) {
    // SAFETY: the vtable's callbacks meet the contract for the test's length.
    assert_eq!(unsafe { nnm_pool_register_strategy(&vtable) }, Status::Ok);
}

#[test]
fn a_device_context_kept_past_its_callback_is_refused_unread() {
    register(nnm_strategy_vtable { alloc: Some(saving_alloc), ..one_per_block(c"rust-saving") });
    let mut pool = null_mut();
    // SAFETY: the name is NUL-terminated; `pool` is writable.
    assert_eq!(unsafe { nnm_pool_new_by_name(null(), c"rust-saving".as_ptr(), null(), &mut pool) }, Status::Ok);
    let a = alloc(pool, 100, 64).unwrap();
    let saved = SAVED.with(|s| s.get());
    assert!(!saved.is_null());
    let mut p = null_mut();
    // SAFETY: `saved` is the context of a callback that returned: the call
    // compares it with the running ones and refuses it unread.
    let status = unsafe { nnm_device_ctx_alloc(saved, 64, 64, null_mut(), &mut p) };
    assert_eq!(status, Status::InvalidArgument);
    assert!(last_error().contains("not the nnm_device_ctx of a strategy callback running on this thread"));
    // SAFETY: as above.
    assert_eq!(unsafe { nnm_device_ctx_free(saved, a, 100, null_mut()) }, Status::InvalidArgument);
    assert!(p.is_null());
    let s = stats(pool);
    assert_eq!((s.device_allocs, s.device_frees, s.active_blocks), (1, 0, 1));
    // A context is refused on another thread too.
    struct Saved(*mut nnm_device_ctx);
    // SAFETY: the pointer is only passed to nnmem, which compares it.
    unsafe impl Send for Saved {}
    let on_thread = Saved(saved);
    std::thread::spawn(move || {
        let on_thread = on_thread;
        let mut p = null_mut();
        // SAFETY: as above: only compared.
        let status = unsafe { nnm_device_ctx_alloc(on_thread.0, 64, 64, null_mut(), &mut p) };
        assert_eq!(status, Status::InvalidArgument);
    })
    .join()
    .unwrap();
    // Nor may another pool's callback use it.
    let mut other = null_mut();
    // SAFETY: the name is NUL-terminated; `other` is writable.
    assert_eq!(unsafe { nnm_pool_new_by_name(null(), c"rust-saving".as_ptr(), null(), &mut other) }, Status::Ok);
    USE_SAVED.with(|u| u.set(true));
    assert_eq!(alloc(other, 64, 64), Err(Status::InvalidArgument));
    USE_SAVED.with(|u| u.set(false));
    assert_eq!((stats(pool).device_allocs, stats(other).device_allocs), (1, 0));
    // SAFETY: the handle is live and not used again.
    unsafe { nnm_pool_free(other) };
    assert_eq!(dealloc(pool, a), Status::Ok);
    // SAFETY: the handle is live and not used again; the name is NUL-terminated.
    unsafe {
        nnm_pool_free(pool);
        assert_eq!(nnm_device_ctx_alloc(saved, 64, 64, null_mut(), &mut p), Status::InvalidArgument);
        assert_eq!(nnm_pool_unregister_strategy(c"rust-saving".as_ptr()), Status::Ok);
    }
}

#[test]
fn a_c_strategy_never_gets_memory_the_allocator_handed_out_twice() {
    register(one_per_block(c"rust-one-per-block-2"));
    for offset in [0, 512] {
        let dev = crate::pool::testing::Misbehaving::new();
        let handle = crate::ffi::handle::into_handle(super::super::device::nnm_device_allocator::new(dev.clone()));
        let mut pool = null_mut();
        // SAFETY: a live allocator handle; the name is NUL-terminated; `pool` is writable.
        let made = unsafe { nnm_pool_new_by_name(handle, c"rust-one-per-block-2".as_ptr(), null(), &mut pool) };
        assert_eq!(made, Status::Ok);
        let first = alloc(pool, 1000, 256).unwrap();
        dev.arm(Some(offset));
        assert_eq!(alloc(pool, 3 << 20, 256), Err(Status::InvalidArgument));
        let e = last_error();
        let overlapping = format!("overlapping [{first:p}, {:#x}) (1000 B) that this pool", first as usize + 1000);
        assert!(e.starts_with("device allocator \"misbehaving\" returned [") && e.contains(&overlapping), "{e}");
        let s = stats(pool);
        assert_eq!((s.allocs, s.active_blocks, s.device_allocs, s.reserved_bytes), (1, 1, 1, 1000));
        dev.arm(None);
        let big = alloc(pool, 3 << 20, 256).unwrap();
        assert_eq!((dealloc(pool, first), dealloc(pool, big)), (Status::Ok, Status::Ok));
        // SAFETY: both handles are live and not used again.
        unsafe {
            nnm_pool_free(pool);
            super::super::device::nnm_device_allocator_free(handle);
        }
        assert_eq!((dev.inner.allocs(), dev.inner.frees(), dev.inner.live_blocks()), (2, 2, 0));
    }
    // SAFETY: NUL-terminated name.
    assert_eq!(unsafe { nnm_pool_unregister_strategy(c"rust-one-per-block-2".as_ptr()) }, Status::Ok);
}
