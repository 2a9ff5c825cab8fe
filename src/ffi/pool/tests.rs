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

#[test]
fn a_strategy_through_the_c_vtable_serves_and_is_checked() {
    let vtable = nnm_strategy_vtable {
        name: c"rust-one-per-block".as_ptr(),
        create: Some(create),
        destroy: Some(destroy),
        alloc: Some(s_alloc),
        dealloc: Some(s_dealloc),
        release_cached: Some(s_release),
        release_all: Some(s_release),
        ..Default::default()
    };
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
