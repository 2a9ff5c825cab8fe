//! User pool strategies written in C (`nnm_strategy_vtable`), registered by
//! name and used like the built-in ones.
//!
//! The adaptor ([`CStrategy`]) implements the core's `Strategy` around the
//! C callbacks and checks what they return, so that a faulty C strategy
//! gets an error, never undefined behaviour in nnmem or memory handed out
//! twice: it records every device block the strategy took (through
//! `nnm_device_ctx_alloc`) and every block it handed out, refuses an
//! allocation that is NULL, misaligned, smaller than asked, outside the
//! strategy's device blocks or overlapping a block still handed out, and
//! refuses to free a device block that still holds handed-out memory. The
//! statistics come from these records, not from figures the C code reports.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

use super::options::nnm_pool_options;
use crate::ffi::args::{device_ptr, stream_of};
use crate::ffi::args::{non_null, out_param, read_str};
use crate::ffi::error::guard;
use crate::pool::budget::Device;
use crate::pool::strategy::{CacheFigures, Freed, NotLive, Request, Served};
use crate::pool::{DevicePtr, PoolOptions, Strategy, StrategyFactory, Stream};
use crate::status::{Error, Result, Status};

/// A pool strategy written in C. nnmem copies the struct (and the name) at
/// registration; `ctx` and the callbacks must stay valid until the name is
/// unregistered and every pool made with it is gone.
///
/// One pool calls its state's callbacks one at a time (under the pool's
/// lock), from any thread; `create` may run concurrently for different
/// pools. A callback must not call back into the same pool, nor into the
/// per-device registry (`nnm_device_*` but `nnm_device_ctx_*`): the
/// registry may run `create`, `release_all` and `destroy` while holding
/// its own lock, so such a call would deadlock. Memory comes
/// only from the `nnm_device_ctx` passed to the callbacks, which is valid
/// only during the call, on its thread: limits and device counts then
/// apply, and nnmem checks every block the strategy hands out (NULL,
/// alignment, size, inside a device block it holds, not overlapping a block
/// still out).
///
/// A pool freed with blocks still out calls no callback again: it returns
/// its idle device blocks (`release_cached`) and keeps the rest, and its
/// state, for the life of the process (neither `release_all` nor `destroy`
/// runs), as those blocks stay valid.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct nnm_strategy_vtable {
    /// The name it is registered and chosen by (UTF-8, not a built-in's).
    pub name: *const c_char,
    /// Passed to `create`.
    pub ctx: *mut c_void,
    /// Optional. Makes the state of one pool (`options` are the pool's,
    /// valid during the call) and returns it; the other callbacks get it.
    /// Without it the state is NULL.
    pub create: Option<unsafe extern "C" fn(ctx: *mut c_void, options: *const nnm_pool_options) -> *mut c_void>,
    /// Optional. Frees a state, after `release_all` (never without it: a
    /// pool freed with blocks still out keeps its state).
    pub destroy: Option<unsafe extern "C" fn(state: *mut c_void)>,
    /// Required. Serves `size` bytes (at least 1: a caller's request of 0 B
    /// comes as 1 B) aligned to `alignment` (a power of two) on `stream`:
    /// writes the address to `out_ptr` and the bytes the block occupies (at
    /// least `size`; preset to `size`) to `out_bytes`. Returns
    /// an `nnm_status`: NNM_OK, or NNM_OUT_OF_MEMORY when the device refused
    /// (the pool then calls `release_cached` and retries once).
    pub alloc: Option<
        unsafe extern "C" fn(
            state: *mut c_void,
            dev: *mut nnm_device_ctx,
            size: usize,
            alignment: usize,
            stream: *mut c_void,
            out_ptr: *mut *mut c_void,
            out_bytes: *mut usize,
        ) -> c_int,
    >,
    /// Required. Takes back a block `alloc` handed out (nnmem calls it only
    /// for blocks handed out and not yet taken back). Returns an
    /// `nnm_status`: NNM_OK, or NNM_NOT_FOUND for a pointer it does not know
    /// (the caller's free then fails, and nothing changes).
    pub dealloc: Option<unsafe extern "C" fn(state: *mut c_void, dev: *mut nnm_device_ctx, ptr: *mut c_void) -> c_int>,
    /// Required. Returns idle device blocks with `nnm_device_ctx_free`
    /// (PyTorch's `empty_cache`); nnmem counts the bytes freed.
    pub release_cached: Option<unsafe extern "C" fn(state: *mut c_void, dev: *mut nnm_device_ctx)>,
    /// Required. Returns every device block it holds; the pool is going.
    /// Blocks it leaves are freed by nnmem.
    pub release_all: Option<unsafe extern "C" fn(state: *mut c_void, dev: *mut nnm_device_ctx)>,
    /// Optional. Every stream is synchronised: idle blocks freed on one
    /// stream may serve any other.
    pub streams_synchronized: Option<unsafe extern "C" fn(state: *mut c_void)>,
    /// Optional. The end of an iteration; returns an `nnm_status`.
    pub end_iteration: Option<unsafe extern "C" fn(state: *mut c_void, dev: *mut nnm_device_ctx) -> c_int>,
}

impl Default for nnm_strategy_vtable {
    fn default() -> Self {
        nnm_strategy_vtable {
            name: std::ptr::null(),
            ctx: std::ptr::null_mut(),
            create: None,
            destroy: None,
            alloc: None,
            dealloc: None,
            release_cached: None,
            release_all: None,
            streams_synchronized: None,
            end_iteration: None,
        }
    }
}

/// The device of a pool, as a C strategy's callbacks reach it: one per
/// pool, at an address fixed for the pool's life, valid only during a
/// callback, on that callback's thread. nnmem compares a `dev` with the
/// contexts of the callbacks running on the calling thread (the callback
/// itself and any it runs inside, such as a pool's callback allocating from
/// another pool) before reading it, so any other pointer (a context kept
/// past its callback, one of a callback not running on this thread, or one
/// used from another thread) is refused with NNM_INVALID_ARGUMENT, unread. Not detectable: a context kept from a pool
/// freed since, whose memory a new pool's context now occupies, used during
/// that new pool's callback: it is the new pool's context.
pub struct nnm_device_ctx {
    device: *const Device,
    held: *mut Held,
    /// The context of the callback this one's runs inside, on the same
    /// thread (a callback allocating from another pool); NULL: none.
    outer: *const nnm_device_ctx,
}

thread_local! {
    // The context of the innermost strategy callback running on this
    // thread (NULL: none); the others are reached through `outer`. A
    // pointer a C function passes in is compared with these before it is
    // read, so a context kept past its callback (perhaps freed with its
    // pool since) is refused without touching that memory.
    static RUNNING: Cell<*const nnm_device_ctx> = const { Cell::new(std::ptr::null()) };
}

/// Restores the running context of the callback outside, when a callback
/// returns.
struct Running(*const nnm_device_ctx);

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.with(|r| r.set(self.0));
    }
}

/// What a C strategy holds and has handed out, as nnmem recorded it.
#[derive(Default)]
struct Held {
    /// Device blocks: address -> (pointer, size).
    blocks: BTreeMap<usize, (DevicePtr, u64)>,
    /// Blocks handed out: address -> (requested, bytes).
    live: BTreeMap<usize, (u64, u64)>,
    /// Bytes freed to the device during the current callback.
    freed_in_call: u64,
    /// The device's error of the last refused `nnm_device_ctx_alloc` in the
    /// current callback (its message is better than the strategy's status).
    device_error: Option<Error>,
}

impl Held {
    /// Whether any block handed out overlaps `[start, end)`.
    fn live_overlaps(&self, start: usize, end: usize) -> bool {
        let before = self.live.range(..start).next_back().is_some_and(|(&a, &(_, bytes))| a + bytes as usize > start);
        before || self.live.range(start..end).next().is_some()
    }

    /// Whether `[start, start + bytes)` lies inside one device block.
    fn inside_a_block(&self, start: usize, bytes: u64) -> bool {
        self.blocks
            .range(..=start)
            .next_back()
            .is_some_and(|(&base, &(_, size))| (start - base) as u64 <= size && bytes <= size - (start - base) as u64)
    }
}

/// The callbacks of a registered strategy, shared by its pools.
struct VTable {
    name: String,
    c: nnm_strategy_vtable,
}

// SAFETY: the registration contract makes `ctx` and the callbacks usable
// from any thread (`create` concurrently, the others one at a time per
// state), and nothing else in the copy is dereferenced by nnmem.
unsafe impl Send for VTable {}
// SAFETY: as for Send; the copy is never written after registration.
unsafe impl Sync for VTable {}

/// One pool's instance of a C strategy.
struct CStrategy {
    vtable: Arc<VTable>,
    state: *mut c_void,
    held: Held,
    /// The context its callbacks get: here, so that it keeps one address
    /// for the pool's life (the strategy is boxed), and a pointer kept from
    /// one callback is this pool's context, refused outside its callbacks.
    ctx: nnm_device_ctx,
    /// `release_all` ran: `destroy` may follow.
    released_all: bool,
}

// SAFETY: the state is used only through the callbacks, which the
// registration contract makes callable from any thread, one at a time per
// state (the pool's lock serialises them).
unsafe impl Send for CStrategy {}

fn status_of(code: c_int) -> Status {
    u32::try_from(code).ok().and_then(|v| Status::from_value(v).ok()).unwrap_or(Status::InvalidArgument)
}

fn status_text(code: c_int) -> String {
    match u32::try_from(code).ok().and_then(|v| Status::from_value(v).ok()) {
        Some(s) => format!("{} ({code})", s.description()),
        None => format!("an unknown status ({code})"),
    }
}

impl CStrategy {
    fn new(vtable: Arc<VTable>, options: &PoolOptions) -> Self {
        let c_options = nnm_pool_options::from(options);
        let state = match vtable.c.create {
            // SAFETY: the registration contract: `create` may be called with
            // `ctx` from any thread; the options live during the call.
            Some(create) => unsafe { create(vtable.c.ctx, &c_options) },
            None => std::ptr::null_mut(),
        };
        let ctx = nnm_device_ctx { device: std::ptr::null(), held: std::ptr::null_mut(), outer: std::ptr::null() };
        CStrategy { vtable, state, held: Held::default(), ctx, released_all: false }
    }

    /// Runs one callback with a device context over `device` and this
    /// strategy's records, registered as running on this thread for the
    /// length of the call.
    fn call<R>(&mut self, device: &Device, callback: impl FnOnce(*mut c_void, *mut nnm_device_ctx) -> R) -> R {
        self.held.freed_in_call = 0;
        self.held.device_error = None;
        let outer = RUNNING.with(Cell::get);
        self.ctx = nnm_device_ctx { device, held: &mut self.held, outer };
        let ctx: *mut nnm_device_ctx = &mut self.ctx;
        RUNNING.with(|r| r.set(ctx));
        let _restore = Running(outer);
        callback(self.state, ctx)
    }

    fn failed(&mut self, what: &str, code: c_int) -> Error {
        let status = status_of(code);
        match self.held.device_error.take() {
            Some(e) if e.status() == status => e,
            _ => Error::new(
                if status == Status::Ok { Status::InvalidArgument } else { status },
                format!("user strategy '{}' failed to {what}: {}", self.vtable.name, status_text(code)),
            ),
        }
    }

    /// Checks a block the C strategy handed out.
    fn check_served(&self, request: Request, ptr: *mut c_void, bytes: u64) -> Result<DevicePtr> {
        let name = &self.vtable.name;
        let bad = |why: String| {
            Err(Error::invalid(format!(
                "user strategy '{name}' served {} B (alignment {} B) with {why}; the block is left with the strategy",
                request.size, request.alignment
            )))
        };
        let Some(ptr) = DevicePtr::new(ptr.cast()) else { return bad("NNM_OK and a NULL pointer".into()) };
        if ptr.addr() as u64 % request.alignment != 0 {
            return bad(format!("{ptr:?}, not aligned"));
        }
        if bytes < request.size.max(1) {
            return bad(format!("a block of {bytes} B"));
        }
        if !self.held.inside_a_block(ptr.addr(), bytes) {
            return bad(format!("{ptr:?} ({bytes} B), not inside a device block it holds"));
        }
        let end = usize::try_from(bytes).ok().and_then(|b| ptr.addr().checked_add(b));
        if end.is_none_or(|end| self.held.live_overlaps(ptr.addr(), end)) {
            return bad(format!("{ptr:?} ({bytes} B), overlapping a block still handed out"));
        }
        Ok(ptr)
    }
}

impl Strategy for CStrategy {
    fn name(&self) -> &str {
        &self.vtable.name
    }

    fn shardable(&self) -> bool {
        false
    }

    fn alloc(&mut self, request: Request, device: &Device) -> Result<Served> {
        let alloc = self.vtable.c.alloc.expect("checked at registration");
        let too_large = || Error::overflow(format!("{} B exceed the address space", request.size));
        // A request of 0 B asks the strategy for 1 B: its block then has an
        // address of its own (nnmem's records key blocks by address).
        let size = usize::try_from(request.size.max(1)).map_err(|_| too_large())?;
        let alignment = usize::try_from(request.alignment).map_err(|_| too_large())?;
        let (mut ptr, mut bytes) = (std::ptr::null_mut(), size);
        let stream = request.stream.as_handle();
        let code = self.call(device, |state, ctx| {
            // SAFETY: the registration contract; `ctx`, `ptr` and `bytes`
            // live during the call.
            unsafe { alloc(state, ctx, size, alignment, stream, &mut ptr, &mut bytes) }
        });
        if code != Status::Ok as c_int {
            return Err(self.failed(&format!("allocate {} B", request.size), code));
        }
        let bytes = bytes as u64;
        let ptr = self.check_served(request, ptr, bytes)?;
        self.held.live.insert(ptr.addr(), (request.size, bytes));
        Ok(Served { ptr, bytes, from_plan: false })
    }

    fn free(&mut self, ptr: DevicePtr, device: &Device) -> std::result::Result<Freed, NotLive> {
        let dealloc = self.vtable.c.dealloc.expect("checked at registration");
        // Out of the records during the call, so the strategy may free the
        // device block that held it.
        let (requested, bytes) = self.held.live.remove(&ptr.addr()).ok_or(NotLive)?;
        // SAFETY: the registration contract; `ctx` lives during the call.
        let code = self.call(device, |state, ctx| unsafe { dealloc(state, ctx, ptr.as_ptr().cast()) });
        if code != Status::Ok as c_int {
            self.held.live.insert(ptr.addr(), (requested, bytes));
            return Err(NotLive);
        }
        Ok(Freed { requested, bytes })
    }

    fn release_cached(&mut self, device: &Device) -> u64 {
        let release = self.vtable.c.release_cached.expect("checked at registration");
        // SAFETY: the registration contract; `ctx` lives during the call.
        self.call(device, |state, ctx| unsafe { release(state, ctx) });
        self.held.freed_in_call
    }

    fn streams_synchronized(&mut self) {
        if let Some(synchronized) = self.vtable.c.streams_synchronized {
            // SAFETY: the registration contract.
            unsafe { synchronized(self.state) }
        }
    }

    fn end_iteration(&mut self, device: &Device) -> Result<()> {
        let Some(end) = self.vtable.c.end_iteration else { return Ok(()) };
        // SAFETY: the registration contract; `ctx` lives during the call.
        let code = self.call(device, |state, ctx| unsafe { end(state, ctx) });
        if code != Status::Ok as c_int {
            return Err(self.failed("end the iteration", code));
        }
        Ok(())
    }

    /// The device blocks holding no handed-out memory.
    fn cache_figures(&self) -> CacheFigures {
        let mut figures = CacheFigures::default();
        for (&base, &(_, size)) in &self.held.blocks {
            if !self.held.live_overlaps(base, base + size as usize) {
                figures.cached_blocks += 1;
                figures.cached_bytes += size;
                figures.largest_free_block = figures.largest_free_block.max(size);
            }
        }
        figures
    }

    fn release_all(&mut self, device: &Device) {
        // The pool is going: nothing handed out is in use any more.
        self.held.live.clear();
        let release = self.vtable.c.release_all.expect("checked at registration");
        // SAFETY: the registration contract; `ctx` lives during the call.
        self.call(device, |state, ctx| unsafe { release(state, ctx) });
        for (_, (ptr, size)) in std::mem::take(&mut self.held.blocks) {
            device.free(ptr, size, Stream::DEFAULT);
        }
        self.released_all = true;
    }
}

impl Drop for CStrategy {
    /// `destroy` only after `release_all`, as the header promises. A pool
    /// dropped with blocks still out calls `release_cached` only: those
    /// blocks stay valid, so the state that knows them is kept, never
    /// destroyed (in a static, so that leak checkers see it reachable).
    fn drop(&mut self) {
        if !self.released_all {
            static KEPT: std::sync::Mutex<Vec<KeptState>> = std::sync::Mutex::new(Vec::new());
            KEPT.lock().unwrap_or_else(|p| p.into_inner()).push(KeptState { _state: self.state });
        } else if let Some(destroy) = self.vtable.c.destroy {
            // SAFETY: the registration contract; the state is not used again.
            unsafe { destroy(self.state) }
        }
    }
}

/// The state of a C strategy whose pool went with blocks still out.
struct KeptState {
    _state: *mut c_void,
}

// SAFETY: never used again, only kept.
unsafe impl Send for KeptState {}

/// The context behind a C pointer: the context of a callback running on
/// this thread, found by address before `dev` is read.
///
/// # Safety
/// Any `dev` may be passed: it is only read once found among the running
/// contexts. The references live no longer than the calling export, beside
/// no other pair from this function.
unsafe fn ctx_parts<'a>(dev: *mut nnm_device_ctx) -> Result<(&'a Device, &'a mut Held)> {
    non_null(dev, "dev")?;
    let mut running = RUNNING.with(Cell::get);
    while !running.is_null() && !std::ptr::eq(running, dev) {
        // SAFETY: every context in the chain from RUNNING belongs to a
        // callback still running on this thread (`call` unlinks it when
        // the callback returns), so its strategy, and the context in it, is
        // live.
        running = unsafe { (*running).outer };
    }
    if running.is_null() {
        return Err(Error::invalid(
            "dev is not the nnm_device_ctx of a strategy callback running on this thread \
             (kept past its callback, or passed to another thread)",
        ));
    }
    // SAFETY: `dev` is a running callback's context (found above): it
    // points to its pool's device and its strategy's records, which that
    // callback's pool lock, held by this thread, keeps from every other
    // user until the callback returns.
    let ctx = unsafe { &*dev };
    // SAFETY: as above.
    Ok(unsafe { (&*ctx.device, &mut *ctx.held) })
}

/// Allocates `size` bytes aligned to `alignment` (a power of two) on
/// `stream` from the pool's device, for a C strategy's callback: the pool's
/// limit applies and the device call is counted. Writes the address.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (size 0, alignment, `dev` not
/// the context of a callback running on this thread, or a device allocator
/// that returned memory this pool already holds from it: see
/// `nnm_pool_alloc`; the strategy should return that status);
/// OUT_OF_MEMORY (the limit or the device; the strategy should return
/// NNM_OUT_OF_MEMORY, and the pool's message will be the device's).
///
/// # Safety
/// `dev` may be any pointer value: it is compared with the contexts of the
/// callbacks running on this thread before it is read (a context kept past
/// its callback is refused, even once its pool is freed). `out_ptr` must be
/// NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_device_ctx_alloc(
    dev: *mut nnm_device_ctx,
    size: usize,
    alignment: usize,
    stream: *mut c_void,
    out_ptr: *mut *mut c_void,
) -> Status {
    guard(|| {
        // SAFETY: the caller's promises are those of the helpers.
        let ((device, held), out) = unsafe { (ctx_parts(dev)?, out_param(out_ptr, "out_ptr")?) };
        if size == 0 || !alignment.is_power_of_two() {
            return Err(Error::invalid(format!(
                "device block of {size} B with alignment {alignment} B (size > 0 and a power-of-two alignment needed)"
            )));
        }
        let ptr = device
            .alloc(size as u64, alignment as u64, stream_of(stream))
            .inspect_err(|e| held.device_error = Some(e.clone()))?;
        held.blocks.insert(ptr.addr(), (ptr, size as u64));
        out.write(ptr.as_ptr().cast());
        Ok(())
    })
}

/// Returns a device block `nnm_device_ctx_alloc` gave this strategy, with
/// its size, to the device.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (`dev` not the context of a
/// callback running on this thread, not a device block of this strategy, a
/// different size), WRONG_STATE (memory handed out inside it is still out).
/// Nothing changes on error.
///
/// # Safety
/// `dev` may be any pointer value, as for `nnm_device_ctx_alloc`. `ptr` is
/// only compared.
#[no_mangle]
pub unsafe extern "C" fn nnm_device_ctx_free(
    dev: *mut nnm_device_ctx,
    ptr: *mut c_void,
    size: usize,
    stream: *mut c_void,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises `dev` is NULL or the live context.
        let (device, held) = unsafe { ctx_parts(dev) }?;
        let ptr = device_ptr(ptr, "ptr")?;
        let size = size as u64;
        match held.blocks.get(&ptr.addr()) {
            None => return Err(Error::invalid(format!("{ptr:?} is not a device block this strategy holds"))),
            Some(&(_, held_size)) if held_size != size => {
                return Err(Error::invalid(format!("device block {ptr:?} has {held_size} B, not {size} B")))
            }
            Some(_) => {}
        }
        if held.live_overlaps(ptr.addr(), ptr.addr() + size as usize) {
            return Err(Error::wrong_state(format!(
                "device block {ptr:?} ({size} B) still holds memory handed out to the caller"
            )));
        }
        held.blocks.remove(&ptr.addr());
        device.free(ptr, size, stream_of(stream));
        held.freed_in_call += size;
        Ok(())
    })
}

/// Registers a C strategy under `vtable->name` (copied, with the struct):
/// pools are then made with it by name (`nnm_pool_new_by_name`,
/// `nnm_device_init_pool`), as RAF's registered pool strategies. A user
/// strategy has one shard (its callbacks run under one lock per pool).
///
/// Errors: NULL_ARGUMENT (vtable, name, a required callback: the message
/// names it), INVALID_ARGUMENT (empty or not UTF-8 name), ALREADY_EXISTS (a
/// built-in's name, RAF's `no_pool` and `page_unit_pool` included, or a
/// registered name).
///
/// # Safety
/// `vtable` must be NULL or valid for reading one `nnm_strategy_vtable`
/// whose `name` is NULL or NUL-terminated; its `ctx` and callbacks must meet
/// `nnm_strategy_vtable`'s contract until the name is unregistered and every
/// pool made with it is gone.
#[no_mangle]
pub unsafe extern "C" fn nnm_pool_register_strategy(vtable: *const nnm_strategy_vtable) -> Status {
    guard(|| {
        non_null(vtable, "vtable")?;
        if !vtable.is_aligned() {
            return Err(Error::invalid(format!("vtable ({vtable:p}) is not aligned")));
        }
        // SAFETY: non-NULL and aligned; the caller promises it is readable.
        // Fields are pointers and nullable function pointers: any value the
        // C struct holds is one of theirs.
        let c = unsafe { vtable.read() };
        // SAFETY: the caller promises `name` is NULL or NUL-terminated.
        let name = unsafe { read_str(c.name, "vtable->name") }?;
        if name.is_empty() {
            return Err(Error::invalid("vtable->name is empty"));
        }
        let required = [
            ("alloc", c.alloc.is_some()),
            ("dealloc", c.dealloc.is_some()),
            ("release_cached", c.release_cached.is_some()),
            ("release_all", c.release_all.is_some()),
        ];
        if let Some((missing, _)) = required.iter().find(|(_, present)| !present) {
            return Err(Error::new(Status::NullArgument, format!("vtable->{missing} of strategy '{name}' is NULL")));
        }
        let shared = Arc::new(VTable { name: name.to_string(), c });
        let factory: StrategyFactory = Arc::new(move |options: &PoolOptions| {
            Box::new(CStrategy::new(shared.clone(), options)) as Box<dyn Strategy>
        });
        crate::pool::register_strategy(name, factory)
    })
}

/// Unregisters a user strategy: no new pool can be made with it; pools made
/// with it keep it.
///
/// Errors: NULL_ARGUMENT, NOT_FOUND (the message lists the registered
/// names), INVALID_ARGUMENT (a built-in's name, RAF's `no_pool` and
/// `page_unit_pool` included; not UTF-8).
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn nnm_pool_unregister_strategy(name: *const c_char) -> Status {
    // SAFETY: the caller promises `name` is NULL or NUL-terminated.
    guard(|| crate::pool::unregister_strategy(unsafe { read_str(name, "name") }?))
}
