//! C API of memory pools (`nnm_pool_*`): pool objects over a device
//! allocator, the per-device registry with RAF's verbs (`nnm_device_*`,
//! in [`registry`]), and user strategies through a C vtable
//! ([`strategy_vtable`]). The safe core in `crate::pool` does the work; this
//! layer checks C arguments and turns addresses into pointers.

pub mod options;
pub mod registry;
pub mod strategy_vtable;
#[cfg(test)]
mod tests;
pub mod torch;

use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;

use self::options::{core_options, nnm_pool_options, nnm_pool_stats};
use super::args::{c_name, device_ptr, opt_out_param, out_param, read_str, stream_of};
use super::device::{allocator_or_host, nnm_device_allocator};
use super::error::{guard, guard_void};
use super::handle::{free_handle, into_handle, tagged_ref, value_ref, HandleType};
use super::text::{copy_text, emit_lines, nnm_write_fn};
use crate::arena::ReportFormat;
use crate::pool::{Pool, StrategyKind};
use crate::status::{Result, Status};

/// The alignment a pool allocation gets when 0 is passed (CUDA's
/// `cudaMalloc` guarantee, so code written for it keeps its assumption).
pub const NNM_POOL_DEFAULT_ALIGNMENT: usize = 256;

/// A memory pool: serves allocations from memory it holds from its device
/// allocator, by one strategy (`nnm_strategy`, or a user strategy's name).
///
/// Thread-safe: every `nnm_pool_*` call on one pool may come from any
/// thread, concurrently with any other call on it (each pool locks inside),
/// except `nnm_pool_free`, which no other call on the same handle may
/// overlap. A handle shares the pool: `nnm_device_get_pool` hands out
/// another handle to a registry pool; the pool lives until its last handle
/// is freed and the registry lets go of it.
///
/// Calls check that the handle is live before reading it (a freed handle
/// gives INVALID_ARGUMENT), except the hot `nnm_pool_alloc` and
/// `nnm_pool_dealloc`, which only check a type tag: on a freed handle they
/// are undefined.
pub struct nnm_pool {
    pub(crate) pool: Arc<Pool>,
    /// The strategy's name, NUL-terminated, for `nnm_pool_strategy_name`.
    strategy: CString,
}

// SAFETY: no other handle type is named "nnm_pool".
unsafe impl HandleType for nnm_pool {
    const NAME: &'static str = "nnm_pool";
}

impl nnm_pool {
    /// A handle sharing `pool`.
    pub(crate) fn new_handle(pool: Arc<Pool>) -> *mut nnm_pool {
        let strategy = CString::new(pool.strategy_name()).expect("strategy names have no NUL (checked when named)");
        into_handle(nnm_pool { pool, strategy })
    }
}

/// The pool behind a handle after NULL, registry and tag checks.
///
/// # Safety
/// `pool` must be NULL, a freed pool handle (refused unread), or a live one
/// not being freed meanwhile.
#[inline]
unsafe fn pool_ref<'a>(pool: *const nnm_pool) -> Result<&'a Pool> {
    // SAFETY: the caller's promise is `value_ref`'s; a pool is only read
    // through shared references (it locks inside).
    Ok(&unsafe { value_ref(pool, "pool") }?.pool)
}

/// As [`pool_ref`] with only the tag checked, for the allocation calls.
///
/// # Safety
/// `pool` must be NULL or a live pool handle not being freed meanwhile (a
/// freed one is undefined).
#[inline(always)]
unsafe fn pool_hot<'a>(pool: *const nnm_pool) -> Result<&'a Pool> {
    // SAFETY: the caller's promise is `tagged_ref`'s.
    Ok(&unsafe { tagged_ref(pool, "pool") }?.pool)
}

/// The size and alignment of a C request as the core takes them (0: the
/// default alignment).
#[inline(always)]
pub(crate) fn request(size: usize, alignment: usize) -> (u64, u64) {
    let alignment = if alignment == 0 { NNM_POOL_DEFAULT_ALIGNMENT } else { alignment };
    (size as u64, alignment as u64)
}

/// Makes a pool and writes a new handle to it.
///
/// # Safety
/// `allocator` must be NULL or an allocator handle (live or freed: checked);
/// `options` NULL or readable; `out_pool` NULL or writable.
unsafe fn create(
    allocator: *const nnm_device_allocator,
    options: *const nnm_pool_options,
    out_pool: *mut *mut nnm_pool,
    make: impl FnOnce(crate::pool::SharedAllocator, &crate::pool::PoolOptions) -> Result<Pool>,
) -> Status {
    guard(|| {
        // SAFETY: the caller's promises are those of the helpers.
        let (out, allocator, options) = unsafe {
            (out_param(out_pool, "out_pool")?, allocator_or_host(allocator, "allocator")?, core_options(options)?)
        };
        let pool = make(allocator, &options)?;
        out.write(nnm_pool::new_handle(Arc::new(pool)));
        Ok(())
    })
}

// --- strategies ------------------------------------------------------------------

/// Looks a built-in strategy up by name ("no-pool", "page-unit", "caching",
/// "replay"; RAF's "no_pool" and "page_unit_pool" are taken too) and
/// writes its `nnm_strategy` value. User strategies have no
/// value: use them by name (`nnm_pool_new_by_name`, `nnm_device_init_pool`).
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT for an unknown name (the message
/// lists the built-in ones).
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string. `out_strategy` must be
/// NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_strategy_from_name(name: *const c_char, out_strategy: *mut u32) -> Status {
    guard(|| {
        // SAFETY: the caller promises `out_strategy` is NULL or writable and
        // `name` NULL or NUL-terminated.
        let (out, name) = unsafe { (out_param(out_strategy, "out_strategy")?, read_str(name, "name")?) };
        out.write(StrategyKind::from_name(name)? as u32);
        Ok(())
    })
}

/// The name of an `nnm_strategy` value, or NULL for an unknown value.
/// Static; never freed. Safe from any thread.
#[no_mangle]
pub extern "C" fn nnm_strategy_name(strategy: u32) -> *const c_char {
    c_name::<StrategyKind>(strategy)
}

// --- pools -----------------------------------------------------------------------

/// Creates a pool over `allocator` (NULL: the host allocator) with the
/// built-in `strategy` (an `nnm_strategy`) and `options` (NULL: the
/// defaults of `nnm_pool_options_default`), and writes its handle. The pool
/// keeps the allocator alive; the allocator handle may be freed first.
/// Replaces RAF's `Memory::InitPool(device, name)` for a pool of one's own,
/// or a `c10::cuda::CUDACachingAllocator` instance.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (unknown strategy value, bad
/// options: the message names the field).
///
/// # Safety
/// `allocator` must be NULL or an allocator handle; `options` NULL or valid
/// for reading one `nnm_pool_options`; `out_pool` NULL or valid for writing
/// one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_pool_new(
    allocator: *const nnm_device_allocator,
    strategy: u32,
    options: *const nnm_pool_options,
    out_pool: *mut *mut nnm_pool,
) -> Status {
    // SAFETY: the caller's promises are `create`'s.
    unsafe { create(allocator, options, out_pool, |a, o| Pool::new(a, StrategyKind::from_value(strategy)?, o)) }
}

/// As `nnm_pool_new`, with the strategy by name: a built-in one (RAF's
/// `page_unit_pool` and `no_pool` are taken too; the pool reports nnmem's
/// name) or one registered with `nnm_pool_register_strategy`.
///
/// Errors: as `nnm_pool_new`; NOT_FOUND for an unknown name (the message
/// lists the known ones).
///
/// # Safety
/// As `nnm_pool_new`; `strategy` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn nnm_pool_new_by_name(
    allocator: *const nnm_device_allocator,
    strategy: *const c_char,
    options: *const nnm_pool_options,
    out_pool: *mut *mut nnm_pool,
) -> Status {
    let make = |allocator, options: &_| {
        // SAFETY: the caller promises `strategy` is NULL or NUL-terminated.
        Pool::by_name(allocator, unsafe { read_str(strategy, "strategy") }?, options)
    };
    // SAFETY: the caller's promises are `create`'s.
    unsafe { create(allocator, options, out_pool, make) }
}

/// Frees a pool handle. The pool itself goes when its last handle is freed
/// and no registry holds it: then all its memory goes back to the device
/// when nothing is handed out; otherwise only its idle memory does, and the
/// blocks still out stay valid but are never returned (give every block
/// back first): the device allocator (and a C strategy's state) is then
/// kept for the life of the process, so a C allocator's `release` and a C
/// strategy's `release_all` and `destroy` never run. NULL is a no-op; a double
/// free is detected and reported through `nnm_last_error()`.
///
/// # Safety
/// `pool` may be any pointer value: only a live pool handle is freed. No
/// other call may use this handle meanwhile (other handles to the same pool
/// may).
#[no_mangle]
pub unsafe extern "C" fn nnm_pool_free(pool: *mut nnm_pool) {
    // SAFETY: `free_handle` frees only what the registry holds as a live
    // pool handle; the caller promises no other call uses it.
    guard_void(|| unsafe { free_handle(pool) })
}

/// Allocates `size` bytes aligned to `alignment` (0: 256; a power of two)
/// for use on `stream` (NULL: the default stream; any value the device
/// knows, such as a `cudaStream_t`) and writes the address. Replaces RAF's
/// `Memory::Alloc` / PyTorch's `raw_alloc_with_stream`. A block freed on
/// another stream is reused only after `nnm_pool_streams_synchronized`.
///
/// Size 0 succeeds, as RAF's `Alloc(0)` and C's `malloc(0)`: a block of the
/// strategy's smallest size (`page-unit`: a page; `caching`: `min_block`;
/// `no-pool`: 1 B; `replay`'s plan: 1 B padded to its alignment; a C
/// strategy is asked for 1 B) at an address no other live block has,
/// counted as a live block with 0 requested bytes; give it back with
/// `nnm_pool_dealloc` like any other. (PyTorch's `raw_alloc(0)` returns
/// NULL: a shim maps it itself.)
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (alignment not a power of two;
/// or a device allocator that returned memory overlapping a block the pool
/// holds from it, such as the same pointer twice: the message names the
/// allocator and both ranges, and that memory is neither handed out nor
/// given back, as the allocator's free would pull it from under the block
/// in use), OVERFLOW (size, rounded up to the alignment or the strategy's
/// unit), OUT_OF_MEMORY (the pool's limit: "requested X B, in use Y B,
/// cached Z B, limit L B"; or the device; either after the pool released
/// its idle memory, every idle segment included, and retried once),
/// WRONG_STATE (a handle to a registry pool that has retired, switched by
/// `nnm_device_init_pool` or `_reset_pool` or removed by `_remove_pool`: it
/// only takes back its blocks; allocate from the device's current pool
/// instead).
/// Nothing changes on error, except where the device was asked: an
/// OUT_OF_MEMORY refusal counts in `oom_retries` and `limit_refusals` and
/// has returned idle memory to the device, and a refusal of the device
/// allocator's return (INVALID_ARGUMENT above) may have returned idle
/// `caching` segments first (as to make room); it is final, with the
/// device asked once (only running out of room makes a strategy ask
/// again, for less). A registered C strategy's own refusal status is
/// passed on.
///
/// # Safety
/// `pool` must be NULL or a live pool handle (only its type tag is checked:
/// a freed one is undefined). `out_ptr` must be NULL or valid for writing
/// one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_pool_alloc(
    pool: *mut nnm_pool,
    size: usize,
    alignment: usize,
    stream: *mut c_void,
    out_ptr: *mut *mut c_void,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises `pool` is NULL or live and `out_ptr`
        // NULL or writable.
        let (p, out) = unsafe { (pool_hot(pool)?, out_param(out_ptr, "out_ptr")?) };
        let (size, alignment) = request(size, alignment);
        out.write(p.alloc(size, alignment, stream_of(stream))?.as_ptr().cast());
        Ok(())
    })
}

/// Gives back a block `nnm_pool_alloc` handed out; the pool keeps it for
/// reuse (or returns it to the device, by its strategy). Replaces RAF's
/// `Memory` destructor / PyTorch's `raw_delete`.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (a pointer this pool did not
/// hand out, or one already given back; nothing changes).
///
/// # Safety
/// `pool` as for `nnm_pool_alloc`. `ptr` is only compared, never read.
#[no_mangle]
pub unsafe extern "C" fn nnm_pool_dealloc(pool: *mut nnm_pool, ptr: *mut c_void) -> Status {
    guard(|| {
        // SAFETY: the caller promises `pool` is NULL or live.
        let p = unsafe { pool_hot(pool) }?;
        p.free(device_ptr(ptr, "ptr")?)
    })
}

/// Returns the pool's idle memory to the device (whole device blocks, never
/// memory handed out) and writes the bytes returned to `out_bytes` (may be
/// NULL). PyTorch's `empty_cache`. Every idle device block goes: for
/// `caching`, each segment none of whose blocks is handed out, even when
/// its blocks were freed on different streams and no
/// `nnm_pool_streams_synchronized` came since; for `page-unit`, each idle
/// page chunk; for `replay`, its fallback's idle segments and the planned
/// block while no planned buffer is out. As `empty_cache` synchronises the
/// device first, the caller makes sure no stream's pending work still uses
/// memory it gave back (the device's free is called with the stream the
/// block was allocated on; `cudaFree` waits for the device by itself,
/// `cudaFreeAsync` does not).
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (a freed handle).
///
/// # Safety
/// `pool` must be NULL or a pool handle not being freed meanwhile;
/// `out_bytes` NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_pool_release_cached(pool: *mut nnm_pool, out_bytes: *mut u64) -> Status {
    guard(|| {
        // SAFETY: the caller's promises are those of the helpers.
        let (p, out) = unsafe { (pool_ref(pool)?, opt_out_param(out_bytes, "out_bytes")?) };
        let bytes = p.release_cached();
        if let Some(out) = out {
            out.write(bytes);
        }
        Ok(())
    })
}

/// Says that every stream the pool's blocks were used on is synchronised:
/// idle blocks freed on one stream may now serve requests on any other.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (a freed handle).
///
/// # Safety
/// `pool` must be NULL or a pool handle not being freed meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_pool_streams_synchronized(pool: *mut nnm_pool) -> Status {
    // SAFETY: the caller promises `pool` is NULL or a handle not being freed.
    guard(|| unsafe { pool_ref(pool) }.map(|p| p.streams_synchronized()))
}

/// Marks the end of an iteration. The `replay` strategy records the first
/// iteration's sequence and plans it here; from the next iteration on it
/// serves the same sequence from the plan. An iteration of more than 2^20
/// requests is not recorded past that many (the recording is dropped, so
/// that a pool never told of an iteration's end does not grow): it is not
/// planned, and the next one is recorded. Other strategies ignore it
/// (built-ins make no device call and change no statistic; a C strategy's
/// `end_iteration` callback runs).
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (a freed handle; or the device
/// allocator returned the plan's block overlapping memory the pool holds,
/// refused as in `nnm_pool_alloc`), OUT_OF_MEMORY (the plan's block does
/// not fit the limit or the device); in both device cases the pool goes on
/// serving without a plan. A C strategy's `end_iteration` status is passed
/// on.
///
/// # Safety
/// `pool` must be NULL or a pool handle not being freed meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_pool_end_iteration(pool: *mut nnm_pool) -> Status {
    // SAFETY: the caller promises `pool` is NULL or a handle not being freed.
    guard(|| unsafe { pool_ref(pool) }?.end_iteration())
}

/// Writes the pool's statistics (integers, in bytes; PyTorch's
/// `memory_stats`, RAF's used and pool sizes).
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (a freed handle).
///
/// # Safety
/// `pool` must be NULL or a pool handle not being freed meanwhile;
/// `out_stats` NULL or valid for writing one `nnm_pool_stats`.
#[no_mangle]
pub unsafe extern "C" fn nnm_pool_get_stats(pool: *const nnm_pool, out_stats: *mut nnm_pool_stats) -> Status {
    guard(|| {
        // SAFETY: the caller's promises are those of the helpers.
        let (p, out) = unsafe { (pool_ref(pool)?, out_param(out_stats, "out_stats")?) };
        out.write(p.stats().into());
        Ok(())
    })
}

/// Starts every peak of the statistics again from the current figures
/// (PyTorch's `reset_peak_memory_stats`).
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (a freed handle).
///
/// # Safety
/// `pool` must be NULL or a pool handle not being freed meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_pool_reset_peak(pool: *mut nnm_pool) -> Status {
    // SAFETY: the caller promises `pool` is NULL or a handle not being freed.
    guard(|| unsafe { pool_ref(pool) }.map(|p| p.reset_peak()))
}

/// Appends a snapshot of the statistics tagged `tag` to the pool's trace
/// (RAF's memory profiler), when the pool was made with `trace` set; a
/// no-op otherwise.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (a freed handle, a tag that is
/// not UTF-8).
///
/// # Safety
/// `pool` must be NULL or a pool handle not being freed meanwhile; `tag`
/// NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn nnm_pool_snapshot(pool: *mut nnm_pool, tag: *const c_char) -> Status {
    guard(|| {
        // SAFETY: the caller's promises are those of the helpers.
        let (p, tag) = unsafe { (pool_ref(pool)?, read_str(tag, "tag")?) };
        p.snapshot(tag);
        Ok(())
    })
}

/// The name of the pool's strategy ("page-unit", a user strategy's name).
/// Valid while the handle lives; NULL (with the last error set) for a NULL
/// or freed handle.
///
/// # Safety
/// `pool` must be NULL or a pool handle not being freed meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_pool_strategy_name(pool: *const nnm_pool) -> *const c_char {
    super::error::guard_ptr(|| {
        // SAFETY: the caller promises `pool` is NULL or a handle not being freed.
        Ok(unsafe { value_ref(pool, "pool") }?.strategy.as_ptr().cast_mut())
    })
}

/// The pool's report or its trace's, as text for C.
#[derive(Copy, Clone)]
enum Text {
    Report,
    Trace,
}

impl Text {
    fn of(self, pool: &Pool, format: u32) -> Result<String> {
        let format = ReportFormat::from_value(format)?;
        Ok(match self {
            Text::Report => pool.report(format),
            Text::Trace => pool.trace_report(format),
        })
    }
}

/// # Safety
/// As `nnm_pool_report`.
unsafe fn text_into(
    what: Text,
    pool: *const nnm_pool,
    format: u32,
    buf: *mut c_char,
    len: usize,
    out_written: *mut usize,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises `pool` is NULL or a handle not being freed.
        let text = what.of(unsafe { pool_ref(pool) }?, format)?;
        // SAFETY: the caller promises `buf` is NULL or writable for `len`
        // bytes and `out_written` NULL or writable.
        unsafe { copy_text(&text, buf, len, out_written, "report") }
    })
}

/// # Safety
/// As `nnm_pool_report_write`.
unsafe fn text_to(what: Text, pool: *const nnm_pool, format: u32, write: nnm_write_fn, user: *mut c_void) -> Status {
    guard(|| {
        // SAFETY: the caller promises `pool` is NULL or a handle not being freed.
        let text = what.of(unsafe { pool_ref(pool) }?, format)?;
        // SAFETY: the caller promises `write` is NULL (refused) or may be
        // called with `user`.
        unsafe { emit_lines(&text, write, user) }
    })
}

/// Writes the pool's report (`format`: an `nnm_report_format`; the text
/// and JSON hold every figure of `nnm_pool_stats`), NUL-terminated, into
/// `buf` (`len` bytes) and the bytes written (NUL included) to
/// `out_written`. With `buf` NULL and `len` 0 it writes only the size
/// needed (PyTorch's `memory_summary`).
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (format, a freed handle),
/// BUFFER_TOO_SMALL (nothing is written; the message gives the size).
///
/// # Safety
/// `pool` must be NULL or a pool handle not being freed meanwhile. `buf`
/// must be NULL or valid for writing `len` bytes; `out_written` NULL or
/// valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_pool_report(
    pool: *const nnm_pool,
    format: u32,
    buf: *mut c_char,
    len: usize,
    out_written: *mut usize,
) -> Status {
    // SAFETY: the caller's promises are `text_into`'s.
    unsafe { text_into(Text::Report, pool, format, buf, len, out_written) }
}

/// Sends the pool's report to `write`, one line per call (see
/// `nnm_write_fn`), with `user` passed through.
///
/// Errors: NULL_ARGUMENT (pool or write), INVALID_ARGUMENT (format).
///
/// # Safety
/// `pool` must be NULL or a pool handle not being freed meanwhile; `write`
/// NULL or a function that may be called with `user`.
#[no_mangle]
pub unsafe extern "C" fn nnm_pool_report_write(
    pool: *const nnm_pool,
    format: u32,
    write: nnm_write_fn,
    user: *mut c_void,
) -> Status {
    // SAFETY: the caller's promises are `text_to`'s.
    unsafe { text_to(Text::Report, pool, format, write, user) }
}

/// Writes the trace (every snapshot of `nnm_pool_snapshot`, in order, with
/// its tag and figures) as `nnm_pool_report` writes the report.
///
/// Errors: as `nnm_pool_report`.
///
/// # Safety
/// As `nnm_pool_report`.
#[no_mangle]
pub unsafe extern "C" fn nnm_pool_trace_report(
    pool: *const nnm_pool,
    format: u32,
    buf: *mut c_char,
    len: usize,
    out_written: *mut usize,
) -> Status {
    // SAFETY: the caller's promises are `text_into`'s.
    unsafe { text_into(Text::Trace, pool, format, buf, len, out_written) }
}

/// Sends the trace to `write`, as `nnm_pool_report_write` sends the report.
///
/// Errors: as `nnm_pool_report_write`.
///
/// # Safety
/// As `nnm_pool_report_write`.
#[no_mangle]
pub unsafe extern "C" fn nnm_pool_trace_report_write(
    pool: *const nnm_pool,
    format: u32,
    write: nnm_write_fn,
    user: *mut c_void,
) -> Status {
    // SAFETY: the caller's promises are `text_to`'s.
    unsafe { text_to(Text::Trace, pool, format, write, user) }
}
