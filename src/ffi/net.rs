//! C API of net memory tracking (`nnm_net_*`, `nnm_cache_*`): the four
//! kernel-style lists of a legacy C net, which C code walks with
//! `include/nnmem/list.h`.
//!
//! Layout: every entry C sees (`nnm_param`, `nnm_layer_data`, `nnm_cache`)
//! is the first field of a `#[repr(C)]` Rust struct that nnmem allocates
//! (one tagged box each, so its address never changes) and that carries,
//! after the C-visible part, the state C must not touch: the name's storage
//! and the buffers nnmem owns (`entries`). The net itself is `nnm_net`
//! (the four `struct list_head` anchors) followed by the safe core state
//! ([`crate::net::Net`]) and the entries in insertion order.
//!
//! What nnmem frees is decided by the hidden part only (an `Option` of an
//! owned buffer), never by the C-visible `ownership` field, so a C program
//! that rewrites a descriptor cannot make nnmem free a view, a placeholder
//! or borrowed memory. The lists are linked and unlinked only here; C code
//! walks them and must not modify them.
//!
//! Files: this one holds the C types and the exports, each a thin wrapper
//! that turns its pointers into checked references once, at the top;
//! `entries` the net's state and the one path that adds an entry of any
//! kind; `buffers` owned and adopted memory; `stack_cache` caches in
//! caller storage; `args` the argument helpers the exports share.

use std::ffi::{c_char, c_void};
use std::ptr;

use self::args::{dims_arg, name_arg, one, write_after};
use self::buffers::{borrowed_pair, descriptor, memory_kind, placeholder, HostBuffer};
use self::entries::{
    cache_mut, cache_ref, layer_mut, net_mut, net_ref, CacheEntry, CacheStorage, LayerEntry, NetHandle, NetMut,
    NetState,
};
use super::args::{handle_query, non_null, out_param};
use super::device::{allocator_or_host, nnm_device_allocator, require_host_accessible};
use super::error::{guard, guard_ptr, guard_void};
use super::handle::{free_handle, into_handle, tagged_ptr};
use crate::net::names::not_found;
use crate::net::tensor::described_bytes;
use crate::net::{Bytes, Dtype, Kind, MemKind, Net, Ownership, Shape, MAX_DIMS, NAME_MAX};
use crate::status::{Error, Result, Status};

mod args;
mod buffers;
mod entries;

/// Most dimensions of a tensor.
pub const NNM_MAX_DIMS: u32 = 8;

/// Longest entry name in bytes, NUL excluded. Longer names are refused
/// (INVALID_ARGUMENT), never truncated.
pub const NNM_NAME_MAX: u32 = 127;

// The C constants are literals (cbindgen writes them as they are written);
// these keep them equal to the core's, and nnm_cache_push's fast range check
// equal to the enums.
const _: () = assert!(NNM_MAX_DIMS as usize == MAX_DIMS && NNM_NAME_MAX as usize == NAME_MAX);
const _: () = assert!(MemKind::Placeholder as u32 == 2 && Ownership::Borrowed as u32 == 2);
// nnm_cache_push maps OWNED (0) to VIEW (1) as `o | (o == 0)`.
const _: () = assert!(Ownership::Owned as u32 == 0 && Ownership::View as u32 == 1);

/// A node of a kernel-style circular doubly linked list, and the anchor of
/// one. Defined in nnmem.h and nnmem/list.h under the guard
/// `NNM_LIST_HEAD_DEFINED` (see nnmem/list.h for applications with their
/// own list.h).
///
/// cbindgen:ignore
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct list_head {
    /// The next node (the anchor after the last node).
    pub next: *mut list_head,
    /// The previous node (the anchor before the first node).
    pub prev: *mut list_head,
}

impl Default for list_head {
    fn default() -> Self {
        list_head { next: ptr::null_mut(), prev: ptr::null_mut() }
    }
}

/// A tensor descriptor. Its `ownership` says who owns `data`; nnmem frees
/// only what it allocated or adopted, whatever this field says.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct nnm_tensor {
    /// The buffer; NULL for a placeholder.
    pub data: *mut c_void,
    /// `elem_size` times the product of the `ndims` dimensions.
    pub bytes: u64,
    /// The dimensions; slots past `ndims` are 0.
    pub dims: [u32; 8],
    /// Dimensions in use, 0 (a scalar: one element) to NNM_MAX_DIMS.
    pub ndims: u32,
    /// An `nnm_dtype`.
    pub dtype: u32,
    /// Bytes per element.
    pub elem_size: u32,
    /// An `nnm_mem_kind`: host, device, or placeholder (no buffer).
    pub mem_kind: u32,
    /// An `nnm_ownership`: owned by nnmem, a view of another tensor, or
    /// borrowed caller memory.
    pub ownership: u32,
}

impl Default for nnm_tensor {
    fn default() -> Self {
        nnm_tensor {
            data: ptr::null_mut(),
            bytes: 0,
            dims: [0; 8],
            ndims: 0,
            dtype: 0,
            elem_size: 0,
            mem_kind: 0,
            ownership: 0,
        }
    }
}

/// A learnable parameter: an entry of `nnm_net.params`, linked by `node`.
/// Made by nnm_net_attach_param* or nnm_net_attach_tensors; freed with the
/// net or by nnm_net_detach. Read-only for C except the contents of the
/// buffers.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct nnm_param {
    /// Its node in `nnm_net.params` (insertion order).
    pub node: list_head,
    /// Its name, NUL-terminated, unique among params.
    pub name: *const c_char,
    /// The values.
    pub data: nnm_tensor,
    /// The gradient.
    pub diff: nnm_tensor,
    /// The caller's pointer given to nnm_net_attach_tensors (NULL from the
    /// other attach calls); nnmem never reads it.
    pub user: *mut c_void,
}

/// A layer output or input: an entry of `nnm_net.outputs` or
/// `nnm_net.inputs`, linked by `node`. Outputs own their buffers, sized for
/// the net's maximum batch; inputs are views of an output or placeholders.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct nnm_layer_data {
    /// Its node in `nnm_net.outputs` or `nnm_net.inputs` (insertion order).
    pub node: list_head,
    /// Its name, NUL-terminated, unique in its list.
    pub name: *const c_char,
    /// The values, `[max_batch, sample dims...]`.
    pub data: nnm_tensor,
    /// The gradient, same shape.
    pub diff: nnm_tensor,
    /// The caller's pointer given to nnm_net_attach_tensors (NULL from the
    /// other attach calls); nnmem never reads it.
    pub user: *mut c_void,
}

/// A layer cache: an entry of `nnm_net.caches`, linked by `node`; a stack
/// of tensors (data only) that forward pushes and backward pops. Either
/// nnmem's own stack (nnm_net_attach_cache: `stack` is NULL) or an
/// `nnm_stack_cache` (nnm_net_attach_stack_cache: `stack` points to it, in
/// nnmem's storage or the caller's); `nnm_cache_push`, `nnm_cache_pop`,
/// `nnm_cache_count` and `nnm_cache_clear` work on both, and the
/// `nnm_stack_cache_*` calls on `stack`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct nnm_cache {
    /// Its node in `nnm_net.caches` (insertion order).
    pub node: list_head,
    /// Its name, NUL-terminated, unique among caches.
    pub name: *const c_char,
    /// The stack, bottom first, `count` descriptors; read-only, valid until
    /// the next push, pop or clear of this cache. NULL when `stack` is set
    /// (read the stack cache then).
    pub tensors: *const nnm_tensor,
    /// Tensors on the stack; 0 when `stack` is set (read `stack->count`).
    pub count: usize,
    /// The stack cache behind this entry, or NULL for nnmem's own stack.
    pub stack: *mut nnm_stack_cache,
    /// The caller's pointer given to nnm_net_attach_stack_cache (NULL from
    /// nnm_net_attach_cache); nnmem never reads it.
    pub user: *mut c_void,
}

impl Default for nnm_cache {
    fn default() -> Self {
        nnm_cache {
            node: list_head::default(),
            name: ptr::null(),
            tensors: ptr::null(),
            count: 0,
            stack: ptr::null_mut(),
            user: ptr::null_mut(),
        }
    }
}

/// A net: the anchors of its four lists, walked with nnmem/list.h, e.g.
/// `list_for_each_entry(p, &net->params, node)`. Made only by nnm_net_new
/// (nnmem keeps more state after these fields); never declare one. The
/// lists are read-only for C: walk them, never add, move or delete nodes.
/// `nnm_net_from_list` finds the net from any of the four anchors.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub struct nnm_net {
    /// `nnm_param` entries, in order of attachment.
    pub params: list_head,
    /// `nnm_layer_data` entries (layer outputs), in order of attachment.
    pub outputs: list_head,
    /// `nnm_layer_data` entries (layer inputs), in order of attachment.
    pub inputs: list_head,
    /// `nnm_cache` entries, in order of attachment.
    pub caches: list_head,
    /// The maximum batch size outputs and input placeholders are sized for;
    /// 0 until the first batched attachment decides it (a net made with
    /// max_batch 0).
    pub max_batch: u32,
}

/// Entries, tensors and bytes of one list.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct nnm_net_bytes {
    /// Entries in the list.
    pub entries: u64,
    /// Tensors (params, outputs and inputs have two each: data and diff;
    /// caches count what is on their stacks).
    pub tensors: u64,
    /// Bytes of buffers nnmem allocated or adopted (and frees); for caches including
    /// popped buffers kept for reuse.
    pub owned_bytes: u64,
    /// Bytes of tensors that only refer to memory: views, borrowed caller
    /// memory, placeholders (at the size the caller binds).
    pub referenced_bytes: u64,
}

/// What a net holds, per list, at its maximum batch size.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct nnm_net_report {
    /// Learnable params.
    pub params: nnm_net_bytes,
    /// Layer outputs.
    pub outputs: nnm_net_bytes,
    /// Layer inputs (views own nothing).
    pub inputs: nnm_net_bytes,
    /// Layer caches, as they are now.
    pub caches: nnm_net_bytes,
    /// Sum of the four `owned_bytes`: what nnmem allocated for the net.
    pub total_owned_bytes: u64,
    /// Sum of the four `referenced_bytes`.
    pub total_referenced_bytes: u64,
    /// The net's maximum batch size.
    pub max_batch: u32,
}

/// The deallocator of an adopted buffer: called once as `free_fn(ctx, ptr)`.
pub type nnm_free_fn = Option<unsafe extern "C" fn(ctx: *mut c_void, ptr: *mut c_void)>;

// ---- arguments ----------------------------------------------------------------------

/// What every attach does around its own part, `part`: checks the net
/// (live) and the name, in that order, runs `part` on them, and writes
/// the entry it adds to the optional out-parameter `out` (`out_name` in
/// messages).
///
/// # Safety
/// `net` as [`net_mut`]'s; `name` NULL or a NUL-terminated string; `out`
/// NULL or valid for writing one pointer.
#[inline]
unsafe fn attach<T>(
    net: *mut nnm_net,
    name: *const c_char,
    (out, out_name): (*mut *mut T, &str),
    part: impl FnOnce(&mut NetMut<'_>, &[u8]) -> Result<*mut T>,
) -> Status {
    guard(|| {
        // SAFETY: the caller's promises, argument by argument.
        unsafe {
            write_after(out, out_name, || {
                let (mut net, name) = (net_mut(net)?, name_arg(name)?);
                part(&mut net, name)
            })
        }
    })
}

/// The shape argument of a tensor attach, `dims[0..ndims]` elements of
/// `dtype`: the whole shape, or with `batched` a sample's, behind the
/// net's `max_batch`.
///
/// # Safety
/// `dims` must be NULL or valid for reading `ndims` values.
unsafe fn shape_arg(net: &NetMut<'_>, dtype: u32, dims: *const u32, ndims: u32, batched: bool) -> Result<Shape> {
    let dtype = Dtype::from_value(dtype)?;
    // SAFETY: the caller's promise.
    let dims = unsafe { dims_arg(dims, ndims, if batched { MAX_DIMS - 1 } else { MAX_DIMS }) }?;
    if batched {
        net.state.core.batch_shape(dtype, dims)
    } else {
        Shape::new(dtype, dims)
    }
}

/// The entry of `kind` named `name`: one probe of the name index, whose
/// values are the entries' addresses.
///
/// # Safety
/// `net` must be NULL or a live net that no call changes meanwhile;
/// `name` NULL or a NUL-terminated string; `T` the C type of `kind`'s
/// entries.
#[inline(always)]
unsafe fn lookup<T>(net: *const nnm_net, kind: Kind, name: *const c_char) -> Result<*mut T> {
    // SAFETY: the caller's promises, argument by argument.
    let (state, name) = unsafe { (net_ref(net)?, name_arg(name)?) };
    match state.core.get(kind, name) {
        Some(entry) => Ok(entry.as_ptr().cast()),
        None => Err(not_found(kind.what(), name)),
    }
}

// ---- net ---------------------------------------------------------------------------------

/// Creates an empty net whose layer outputs and input placeholders have
/// `max_batch` rows. With `max_batch` 0 the batch size is left to the
/// first output or input attached with its whole shape
/// (`nnm_net_attach_tensors`: its first dimension); until then the attach
/// calls that take sample dimensions only fail with WRONG_STATE. Its four
/// lists (`params`, `outputs`, `inputs`, `caches`) are empty, initialised
/// `struct list_head` anchors. Free it with `nnm_net_free`.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `out_net` must be NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_new(max_batch: u32, out_net: *mut *mut nnm_net) -> Status {
    guard(|| {
        // SAFETY: the caller promises `out_net` is NULL or valid for one write.
        let out_net = unsafe { out_param(out_net, "out_net") }?;
        let core = Net::new(max_batch);
        let h =
            into_handle(NetHandle { public: nnm_net { max_batch, ..Default::default() }, state: NetState::new(core) });
        for kind in [Kind::Param, Kind::Output, Kind::Input, Kind::Cache] {
            // SAFETY: `h` is the live net just made, known to nobody else:
            // each anchor becomes an empty list, pointing to itself.
            unsafe {
                let anchor = entries::anchor(h, kind);
                anchor.write(list_head { next: anchor, prev: anchor });
            }
        }
        out_net.write(h.cast::<nnm_net>());
        Ok(())
    })
}

/// Makes `allocator` (NULL: the host allocator) the net's: the buffers
/// nnmem allocates for it from now on (params, outputs, and cache tensors of
/// `nnm_cache_push_new`) come from it; those allocated before stay where
/// they are, and every buffer goes back to the allocator it came from. A
/// cache may still reuse a buffer it popped, from whichever allocator. The
/// allocator must be host-accessible (NNM_DEVICE_HOST_ACCESSIBLE): nnmem
/// zeroes the buffers and C reads them. The net keeps the allocator alive:
/// its handle may be freed first.
///
/// Errors: NULL_ARGUMENT (`net`); INVALID_ARGUMENT (not a live net, not a
/// live allocator handle, an allocator that is not host-accessible, naming
/// it): the net keeps its allocator then.
///
/// # Safety
/// `net` must be NULL or a net from `nnm_net_new` (a freed one is refused
/// without being read), and no other call may use it meanwhile.
/// `allocator` must be NULL, a freed handle, or a live one.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_set_allocator(net: *mut nnm_net, allocator: *const nnm_device_allocator) -> Status {
    guard(|| {
        // SAFETY: the caller's promises, argument by argument.
        let (mut net, allocator) = unsafe { (net_mut(net)?, allocator_or_host(allocator, "allocator")?) };
        require_host_accessible(&allocator, "a net")?;
        net.set_allocator(allocator);
        Ok(())
    })
}

/// Frees the net: every buffer nnmem allocated (params, outputs, cache
/// buffers) or adopted (through its `free_fn`), exactly once, and every
/// entry; never a view, a placeholder or borrowed memory. The caller's
/// entries linked with `nnm_net_link` are given back once each through
/// their release functions (views first), and the caller's adopted heads
/// are left empty lists. Every entry pointer of the net becomes invalid. NULL is
/// a no-op; freeing twice is detected and reported through
/// `nnm_last_error()`.
///
/// # Safety
/// `net` must be NULL or a pointer from `nnm_net_new`; a freed or foreign
/// pointer is reported, not freed. No other call may use the net or its
/// entries meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_free(net: *mut nnm_net) {
    // SAFETY: `free_handle` frees only what the registry holds as a live
    // net; the caller promises no other call is using it.
    guard_void(|| unsafe { free_handle(net.cast::<NetHandle>()) })
}

/// Writes the report: per list, entries, tensors, bytes owned and bytes
/// referred to, at the net's maximum batch size; and the totals.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (not a live net).
///
/// # Safety
/// `net` must be NULL or a net from `nnm_net_new` (a freed one is refused
/// without being read) that no call changes meanwhile. `out_report` must be
/// NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_get_report(net: *const nnm_net, out_report: *mut nnm_net_report) -> Status {
    // SAFETY: the caller's promises are `handle_query`'s, and cover the
    // net's entries: no call changes them meanwhile either.
    unsafe { handle_query(net.cast::<NetHandle>(), "net", out_report, "out_report", |h| Ok(report(&h.state))) }
}

/// What the net holds, as `nnm_net_get_report` writes it.
///
/// # Safety
/// No call may change the net's caches meanwhile.
unsafe fn report(state: &NetState) -> nnm_net_report {
    // SAFETY: the caller's promise.
    let caches = unsafe { state.caches.iter() }.map(|c| {
        if !c.backing.is_null() {
            // SAFETY: the entry's stack cache is valid while it is attached
            // (nnm_net_attach_stack_cache), and no call changes it meanwhile.
            let items = stack_cache::stack_cache_items(unsafe { &*c.backing });
            let mut b = Bytes { tensors: items.len() as u64, ..Default::default() };
            for t in &items {
                b.referenced = b.referenced.saturating_add(described_bytes(t.elem_size, &t.dims, t.ndims));
            }
            return b;
        }
        let stack = &c.stack;
        let mut b = Bytes { tensors: stack.len() as u64, owned: stack.owned_bytes(), ..Default::default() };
        for (i, t) in stack.items().iter().enumerate() {
            if !stack.is_owned(i) {
                b.referenced = b.referenced.saturating_add(described_bytes(t.elem_size, &t.dims, t.ndims));
            }
        }
        b
    });
    let r = state.core.report(caches);
    let c = |b: Bytes| nnm_net_bytes {
        entries: b.entries,
        tensors: b.tensors,
        owned_bytes: b.owned,
        referenced_bytes: b.referenced,
    };
    nnm_net_report {
        params: c(r.params),
        outputs: c(r.outputs),
        inputs: c(r.inputs),
        caches: c(r.caches),
        total_owned_bytes: r.total_owned(),
        total_referenced_bytes: r.total_referenced(),
        max_batch: r.max_batch,
    }
}

// ---- params ------------------------------------------------------------------------------

/// Attaches a learnable param named `name` with data and diff of
/// `dims[0..ndims]` (0, a scalar, to NNM_MAX_DIMS) elements of `dtype` (an
/// `nnm_dtype`). nnmem allocates both from the net's allocator (host
/// memory unless `nnm_net_set_allocator` chose another), zeroed, 64-byte
/// aligned, owned: freed with the net. The entry goes to the back of `net->params`
/// and to `*out_param` when that is not NULL.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (unknown dtype, bad dims, empty
/// name, name longer than NNM_NAME_MAX, not a live net); ALREADY_EXISTS (a
/// param of that name); OVERFLOW (size); OUT_OF_MEMORY.
///
/// # Safety
/// `net` must be NULL or a net from `nnm_net_new` (a freed one is refused
/// without being read), and no other call may use it meanwhile. `name`
/// must be NULL or a NUL-terminated string; `dims` NULL or valid for
/// reading `ndims` values; `out_param` NULL or valid for writing one
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_attach_param(
    net: *mut nnm_net,
    name: *const c_char,
    dtype: u32,
    dims: *const u32,
    ndims: u32,
    out_param: *mut *mut nnm_param,
) -> Status {
    // SAFETY: the caller's promises, argument by argument.
    unsafe {
        attach(net, name, (out_param, "out_param"), |net, name| {
            let shape = shape_arg(net, dtype, dims, ndims, false)?;
            net.attach_owned(Kind::Param, name, shape)
        })
    }
}

/// Attaches a param whose buffers are the caller's (borrowed: never freed
/// by nnmem; they must outlive the net's use of them). `mem_kind` is
/// NNM_MEM_KIND_HOST or NNM_MEM_KIND_DEVICE; `data` must not be NULL;
/// `diff` NULL makes the diff a placeholder (a frozen param). Otherwise as
/// `nnm_net_attach_param`.
///
/// Errors: as `nnm_net_attach_param`, and INVALID_ARGUMENT for a
/// `mem_kind` other than host or device.
///
/// # Safety
/// As `nnm_net_attach_param`. `data` and `diff` are stored, never read.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_attach_param_borrowed(
    net: *mut nnm_net,
    name: *const c_char,
    dtype: u32,
    dims: *const u32,
    ndims: u32,
    mem_kind: u32,
    data: *mut c_void,
    diff: *mut c_void,
    out_param: *mut *mut nnm_param,
) -> Status {
    // SAFETY: the caller's promises, argument by argument.
    unsafe {
        attach(net, name, (out_param, "out_param"), |net, name| {
            let shape = shape_arg(net, dtype, dims, ndims, false)?;
            let kind = memory_kind(mem_kind)?;
            non_null(data, "data")?;
            net.state.core.check_new(Kind::Param, name)?;
            let [data, diff] = borrowed_pair(&shape, kind, data, diff);
            net.add_tensors(Kind::Param, name, shape, [(None, data), (None, diff)])
        })
    }
}

/// Attaches a param whose host buffers the net adopts: the caller
/// allocated `data` (and `diff`, unless NULL: then the diff is a
/// placeholder, a frozen param) and hands them over with its deallocator.
/// Each is shown as NNM_OWNERSHIP_OWNED and freed exactly once, as
/// `free_fn(ctx, buffer)`, by `nnm_net_free`; never earlier, never twice.
/// When this call fails, nothing is adopted: the caller still owns both
/// buffers and frees them itself. `data` and `diff` must be the caller's
/// own allocations of at least the tensor's size, distinct, and not
/// adopted before by this net (both are checked). Otherwise as
/// `nnm_net_attach_param`.
///
/// Errors: as `nnm_net_attach_param`, and NULL_ARGUMENT for a NULL `data`
/// or `free_fn`, INVALID_ARGUMENT when `diff` is `data` or either is
/// already adopted by this net.
///
/// # Safety
/// As `nnm_net_attach_param`. `free_fn` must be safe to call once on each
/// buffer with `ctx`, from `nnm_net_free`.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_attach_param_adopted(
    net: *mut nnm_net,
    name: *const c_char,
    dtype: u32,
    dims: *const u32,
    ndims: u32,
    data: *mut c_void,
    diff: *mut c_void,
    free_fn: nnm_free_fn,
    ctx: *mut c_void,
    out_param: *mut *mut nnm_param,
) -> Status {
    // SAFETY: the caller's promises, argument by argument.
    unsafe {
        attach(net, name, (out_param, "out_param"), |net, name| {
            let shape = shape_arg(net, dtype, dims, ndims, false)?;
            net.attach_adopted(Kind::Param, name, shape, [data, diff], free_fn, ctx)
        })
    }
}

/// The param named `name`, found in O(1); NULL when there is none (or on
/// bad arguments), with the reason in `nnm_last_error()`. Like awnn's
/// net_get_param, without walking the list.
///
/// Calling it on a freed net is undefined (the net is only type-checked
/// here, to stay fast).
///
/// # Safety
/// `net` must be NULL or a live net from `nnm_net_new` that no call changes
/// meanwhile; `name` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_param_get(net: *const nnm_net, name: *const c_char) -> *mut nnm_param {
    // SAFETY: the caller's promises are `lookup`'s.
    guard_ptr(|| unsafe { lookup(net, Kind::Param, name) })
}

// ---- outputs and inputs -------------------------------------------------------------------

/// Attaches a layer output named `name`: data and diff of
/// `[max_batch, sample_dims[0..ndims]]` (`ndims` 0 to NNM_MAX_DIMS - 1)
/// elements of `dtype`, allocated by nnmem from the net's allocator (host
/// unless `nnm_net_set_allocator` chose another; zeroed, owned: freed with
/// the net). The entry goes to the back of `net->outputs` and to
/// `*out_output` when that is not NULL.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (dtype, dims, name, not a live
/// net); ALREADY_EXISTS; OVERFLOW; OUT_OF_MEMORY.
///
/// # Safety
/// `net` must be NULL or a net from `nnm_net_new` (a freed one is refused
/// without being read), and no other call may use it meanwhile. `name`
/// must be NULL or a NUL-terminated string; `sample_dims` NULL or valid for
/// reading `ndims` values; `out_output` NULL or valid for writing one
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_attach_output(
    net: *mut nnm_net,
    name: *const c_char,
    dtype: u32,
    sample_dims: *const u32,
    ndims: u32,
    out_output: *mut *mut nnm_layer_data,
) -> Status {
    // SAFETY: the caller's promises, argument by argument.
    unsafe {
        attach(net, name, (out_output, "out_output"), |net, name| {
            let shape = shape_arg(net, dtype, sample_dims, ndims, true)?;
            net.attach_owned(Kind::Output, name, shape)
        })
    }
}

/// Attaches a layer output whose host buffers the net adopts, as
/// `nnm_net_attach_param_adopted` does for params: `data` and `diff`
/// (both required, distinct, each of at least the `[max_batch,
/// sample_dims...]` tensor's size) were allocated by the caller, are shown
/// as NNM_OWNERSHIP_OWNED, and are freed exactly once, as
/// `free_fn(ctx, buffer)`, by `nnm_net_free`. When this call fails, nothing
/// is adopted. Inputs attached as views of it share the buffers and free
/// nothing. Otherwise as `nnm_net_attach_output`.
///
/// Errors: as `nnm_net_attach_output`, and NULL_ARGUMENT for a NULL
/// `data`, `diff` or `free_fn`, INVALID_ARGUMENT when `diff` is `data` or
/// either is already adopted by this net.
///
/// # Safety
/// As `nnm_net_attach_output`. `free_fn` must be safe to call once on each
/// buffer with `ctx`, from `nnm_net_free`.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_attach_output_adopted(
    net: *mut nnm_net,
    name: *const c_char,
    dtype: u32,
    sample_dims: *const u32,
    ndims: u32,
    data: *mut c_void,
    diff: *mut c_void,
    free_fn: nnm_free_fn,
    ctx: *mut c_void,
    out_output: *mut *mut nnm_layer_data,
) -> Status {
    // SAFETY: the caller's promises, argument by argument.
    unsafe {
        attach(net, name, (out_output, "out_output"), |net, name| {
            let shape = shape_arg(net, dtype, sample_dims, ndims, true)?;
            net.attach_adopted(Kind::Output, name, shape, [data, diff], free_fn, ctx)
        })
    }
}

/// Attaches a layer input named `name` that is a view of `output` (an
/// output of this net): its data and diff share the output's buffers and
/// own nothing (ownership NNM_OWNERSHIP_VIEW), so freeing the net frees
/// those buffers once, through the output. The entry goes to the back of
/// `net->inputs` and to `*out_input` when that is not NULL.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (`output` is not an output of
/// this net, name, not a live net); ALREADY_EXISTS.
///
/// # Safety
/// `net` must be NULL or a net from `nnm_net_new` (a freed one is refused
/// without being read), and no other call may use it meanwhile. `name`
/// must be NULL or a NUL-terminated string; `output` NULL or an entry of a
/// live net; `out_input` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_attach_input_view(
    net: *mut nnm_net,
    name: *const c_char,
    output: *const nnm_layer_data,
    out_input: *mut *mut nnm_layer_data,
) -> Status {
    // SAFETY: the caller's promises, argument by argument; `output`, once
    // its tag is checked, is a live entry of some net, and if of this one
    // no other call uses it.
    unsafe {
        attach(net, name, (out_input, "out_input"), |net, name| {
            let o = tagged_ptr(output.cast::<LayerEntry>(), "output")?;
            net.attach_view(name, o)
        })
    }
}

/// Attaches a layer input named `name` that is a placeholder for the net's
/// input: data and diff of `[max_batch, sample_dims[0..ndims]]` elements of
/// `dtype` with no buffer (NULL data, NNM_MEM_KIND_PLACEHOLDER,
/// NNM_OWNERSHIP_BORROWED). Give it the caller's memory per batch with
/// `nnm_net_input_bind`; nnmem never frees it.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (dtype, dims, name, not a live
/// net); ALREADY_EXISTS; OVERFLOW.
///
/// # Safety
/// As `nnm_net_attach_output`, with `out_input` for `out_output`.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_attach_input_placeholder(
    net: *mut nnm_net,
    name: *const c_char,
    dtype: u32,
    sample_dims: *const u32,
    ndims: u32,
    out_input: *mut *mut nnm_layer_data,
) -> Status {
    // SAFETY: the caller's promises, argument by argument.
    unsafe {
        attach(net, name, (out_input, "out_input"), |net, name| {
            let shape = shape_arg(net, dtype, sample_dims, ndims, true)?;
            net.state.core.check_new(Kind::Input, name)?;
            let empty = placeholder(&shape);
            net.add_tensors(Kind::Input, name, shape, [(None, empty), (None, empty)])
        })
    }
}

/// Binds the caller's memory to a placeholder input for a batch of `batch`
/// rows (1 to max_batch): `data` (and `diff` unless NULL) become borrowed
/// tensors of kind `mem_kind` (host or device) with `dims[0] = batch`.
/// `data` NULL unbinds both (placeholders again, at max_batch). nnmem never
/// frees bound memory.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not an input, batch out of
/// range, mem_kind); WRONG_STATE (the input is not a placeholder: a view,
/// or caller memory attached with `nnm_net_attach_tensors`).
///
/// # Safety
/// `input` must be NULL or an entry of a live net (a freed one is
/// undefined), and no other call may use that net meanwhile. `data` and
/// `diff` are stored, never read.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_input_bind(
    input: *mut nnm_layer_data,
    mem_kind: u32,
    data: *mut c_void,
    diff: *mut c_void,
    batch: u32,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises `input` is NULL or an entry of a live
        // net that no other call uses.
        let l = unsafe { layer_mut(input, "input") }?;
        let name = || l.name.to_string_lossy().into_owned();
        if l.kind != Kind::Input {
            return Err(Error::invalid(format!("\"{}\" is an output, not an input", name())));
        }
        if !l.buffers[0].is_null() {
            let what = if l.view_of.is_null() { "caller memory" } else { "a view of an output" };
            return Err(Error::wrong_state(format!("input \"{}\" is {what}, not a placeholder", name())));
        }
        let full = l.shape;
        let [data, diff] = if data.is_null() {
            [placeholder(&full); 2]
        } else {
            let kind = memory_kind(mem_kind)?;
            if batch == 0 || batch > full.dims()[0] {
                return Err(Error::invalid(format!(
                    "batch {batch} is outside 1..={}, the net's maximum batch",
                    full.dims()[0]
                )));
            }
            borrowed_pair(&full.with_batch(batch)?, kind, data, diff)
        };
        l.public.data = data;
        l.public.diff = diff;
        Ok(())
    })
}

/// The output named `name` (O(1)); NULL with `nnm_last_error()` when there
/// is none. Undefined on a freed net.
///
/// # Safety
/// As `nnm_net_param_get`.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_output_get(net: *const nnm_net, name: *const c_char) -> *mut nnm_layer_data {
    // SAFETY: the caller's promises are `lookup`'s.
    guard_ptr(|| unsafe { lookup(net, Kind::Output, name) })
}

/// The input named `name` (O(1)); NULL with `nnm_last_error()` when there
/// is none. Undefined on a freed net.
///
/// # Safety
/// As `nnm_net_param_get`.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_input_get(net: *const nnm_net, name: *const c_char) -> *mut nnm_layer_data {
    // SAFETY: the caller's promises are `lookup`'s.
    guard_ptr(|| unsafe { lookup(net, Kind::Input, name) })
}

// ---- caches ------------------------------------------------------------------------------

/// Attaches an empty cache named `name` (a stack of tensors with no fixed
/// capacity, nnmem's own: `stack` and `user` are NULL; for a cache that is
/// an `nnm_stack_cache`, see `nnm_net_attach_stack_cache`) at the back of
/// `net->caches`; the entry goes to `*out_cache` when that is not NULL.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (name, not a live net);
/// ALREADY_EXISTS; OUT_OF_MEMORY.
///
/// # Safety
/// `net` must be NULL or a net from `nnm_net_new` (a freed one is refused
/// without being read), and no other call may use it meanwhile. `name`
/// must be NULL or a NUL-terminated string; `out_cache` NULL or valid for
/// writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_attach_cache(
    net: *mut nnm_net,
    name: *const c_char,
    out_cache: *mut *mut nnm_cache,
) -> Status {
    // SAFETY: the caller's promises, argument by argument.
    unsafe {
        attach(net, name, (out_cache, "out_cache"), |net, name| net.add_cache(name, CacheStorage::Net, ptr::null_mut()))
    }
}

/// The cache named `name` (O(1)); NULL with `nnm_last_error()` when there
/// is none. Undefined on a freed net.
///
/// # Safety
/// As `nnm_net_param_get`.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_cache_get(net: *const nnm_net, name: *const c_char) -> *mut nnm_cache {
    // SAFETY: the caller's promises are `lookup`'s.
    guard_ptr(|| unsafe { lookup(net, Kind::Cache, name) })
}

/// Mirrors the stack into the C-visible `tensors` and `count`.
#[inline]
fn publish(c: &mut CacheEntry) {
    let items = c.stack.items();
    c.public.tensors = items.as_ptr();
    c.public.count = items.len();
}

/// What is wrong with a descriptor handed to `nnm_cache_push`.
#[cold]
fn bad_descriptor(t: &nnm_tensor) -> Error {
    if t.ndims as usize > MAX_DIMS {
        return Error::invalid(format!(
            "tensor has ndims {}: a tensor has 0 (a scalar) to {MAX_DIMS} dimensions",
            t.ndims
        ));
    }
    let checks = [
        Dtype::from_value(t.dtype).err(),
        MemKind::from_value(t.mem_kind).err(),
        Ownership::from_value(t.ownership).err(),
    ];
    checks.into_iter().flatten().next().unwrap_or_else(|| Error::invalid("tensor descriptor is malformed"))
}

/// The ownership a cache's copy of `t` gets (it never owns: an owned
/// tensor's copy is a view), after checking `t`'s fields.
#[inline(always)]
fn copy_ownership(t: &nnm_tensor) -> Result<u32> {
    // One branch on the hot path; the precise message only on failure.
    if t.ndims as usize > MAX_DIMS || t.dtype as usize >= Dtype::all().len() || t.mem_kind > 2 || t.ownership > 2 {
        return Err(bad_descriptor(t));
    }
    // Ownership::of_copy computed in a register: patching the field in
    // memory would make the copy into the stack reload it across a partial
    // store (a store-forwarding stall).
    Ok(t.ownership | u32::from(t.ownership == Ownership::Owned as u32))
}

/// Pushes a copy of `*tensor` (a shallow copy: the cache never frees its
/// buffer; a copy of an owned tensor is stored as NNM_OWNERSHIP_VIEW).
/// Amortised O(1); the stack grows as needed. On a cache backed by a stack
/// cache (`cache->stack` set) this is `nnm_stack_cache_push` on it.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a cache; `ndims` above
/// NNM_MAX_DIMS; `dtype`, `mem_kind` or `ownership` out of range);
/// OUT_OF_MEMORY; and those of `nnm_stack_cache_push` on a backed cache.
///
/// # Safety
/// `cache` must be NULL or a cache of a live net (a freed one is
/// undefined), and no other call may use that net meanwhile. `tensor` must
/// be NULL or valid for reading one descriptor (it may be one of
/// `cache->tensors`).
#[no_mangle]
pub unsafe extern "C" fn nnm_cache_push(cache: *mut nnm_cache, tensor: *const nnm_tensor) -> Status {
    guard(|| {
        // SAFETY: the caller's promises, argument by argument; `tensor` may
        // point into the stack's storage, which the borrow of the entry
        // does not cover, and is read before the push writes it.
        let c = unsafe { cache_mut(cache) }?;
        if !c.backing.is_null() {
            // SAFETY: the caller's promises; the entry's stack cache is
            // valid while it is attached (nnm_net_attach_stack_cache).
            return unsafe { stack_cache::push(c.backing, tensor) };
        }
        // SAFETY: the caller promises `tensor` is NULL or readable.
        let t = unsafe { one(tensor, "tensor") }?;
        let ownership = copy_ownership(t)?;
        if c.stack.is_full() {
            // `tensor` may point into this very stack (`cache->tensors`), so
            // it is copied out before growing moves the storage.
            let copy = nnm_tensor { ownership, ..*t };
            c.stack.push(copy);
            publish(c);
        } else {
            // With room, the descriptor goes straight from the caller's
            // memory into its slot, and the storage does not move.
            c.stack.push(nnm_tensor { ownership, ..*t });
            c.public.count = c.stack.len();
        }
        Ok(())
    })
}

/// Pushes a tensor of `dims[0..ndims]` elements of `dtype` whose host
/// buffer the cache owns, and writes its descriptor to `out_tensor` (when
/// not NULL). The buffer is reused from one popped earlier when one is
/// large enough (contents then unspecified), else newly allocated (zeroed)
/// from the net's allocator (see `nnm_net_set_allocator`).
/// It stays valid after it is popped, until the next `nnm_cache_push_new`
/// or `nnm_cache_clear` on this cache, and is freed by `nnm_cache_clear` or
/// with the net.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (dtype, dims; a cache backed by
/// a stack cache, which holds descriptors only); OVERFLOW; OUT_OF_MEMORY.
///
/// # Safety
/// `cache` must be NULL or a cache of a live net (a freed one is
/// undefined), and no other call may use that net meanwhile. `dims` must be
/// NULL or valid for reading `ndims` values; `out_tensor` NULL or valid for
/// writing one descriptor.
#[no_mangle]
pub unsafe extern "C" fn nnm_cache_push_new(
    cache: *mut nnm_cache,
    dtype: u32,
    dims: *const u32,
    ndims: u32,
    out_tensor: *mut nnm_tensor,
) -> Status {
    guard(|| {
        // SAFETY: the caller's promises, argument by argument; the borrow of
        // the entry ends before `out_tensor` is written.
        unsafe {
            write_after(out_tensor, "out_tensor", || {
                let c = cache_mut(cache)?;
                if !c.backing.is_null() {
                    return Err(Error::invalid(format!(
                        "cache \"{}\" is backed by an nnm_stack_cache, which holds descriptors only: \
                         nnm_cache_push_new needs a cache of nnm_net_attach_cache",
                        c.name.to_string_lossy()
                    )));
                }
                let shape = Shape::new(Dtype::from_value(dtype)?, dims_arg(dims, ndims, MAX_DIMS)?)?;
                let stack = &mut c.stack;
                let mut buffer = match stack.take_spare(shape.bytes()) {
                    Some(b) => b,
                    None => HostBuffer::zeroed(&c.allocator, shape.bytes(), &|| {
                        format!("a tensor of cache \"{}\"", stack.name())
                    })?,
                };
                let t = descriptor(&shape, buffer.data(), MemKind::Host, Ownership::Owned);
                stack.push_owned(t, buffer);
                publish(c);
                Ok(t)
            })
        }
    })
}

/// Pops the tensor on top of the stack into `out_tensor`. A tensor pushed
/// with `nnm_cache_push_new` keeps its buffer until the next
/// `nnm_cache_push_new` or `nnm_cache_clear` on this cache. On a cache
/// backed by a stack cache this is `nnm_stack_cache_pop` on it.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a cache); WRONG_STATE (the
/// cache is empty: a pop without a matching push); and those of
/// `nnm_stack_cache_pop` on a backed cache.
///
/// # Safety
/// `cache` must be NULL or a cache of a live net (a freed one is
/// undefined), and no other call may use that net meanwhile. `out_tensor`
/// must be NULL or valid for writing one descriptor.
#[no_mangle]
pub unsafe extern "C" fn nnm_cache_pop(cache: *mut nnm_cache, out_tensor: *mut nnm_tensor) -> Status {
    guard(|| {
        // SAFETY: the caller's promises, argument by argument.
        let c = unsafe { cache_mut(cache) }?;
        if !c.backing.is_null() {
            // SAFETY: as in `nnm_cache_push`.
            return unsafe { stack_cache::pop(c.backing, out_tensor) };
        }
        // SAFETY: the caller promises `out_tensor` is NULL or writable.
        let out_tensor = unsafe { out_param(out_tensor, "out_tensor") }?;
        // Straight from the slot to `out_tensor`, written only on success.
        c.stack.pop_with(|t| out_tensor.write(t))?;
        // A pop never moves the stack's storage, so only the count changes.
        // Republishing the pointer too would read it back with the length
        // the pop just stored, in one 16-byte load that the store cannot
        // forward to: a stall that cost a quarter of the call.
        c.public.count = c.stack.len();
        Ok(())
    })
}

/// Writes the number of tensors on the stack (also `cache->count`, or
/// `cache->stack->count` for a cache backed by a stack cache).
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a cache); and those of
/// `nnm_stack_cache_count` on a backed cache.
///
/// # Safety
/// `cache` must be NULL or a cache of a live net (a freed one is
/// undefined) that no call changes meanwhile. `out_count` must be NULL or
/// valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_cache_count(cache: *const nnm_cache, out_count: *mut usize) -> Status {
    guard(|| {
        // SAFETY: the caller's promises, argument by argument.
        let (c, out_count) = unsafe { (cache_ref(cache)?, out_param(out_count, "out_count")?) };
        if c.backing.is_null() {
            out_count.write(c.stack.len());
        } else {
            // SAFETY: as in `nnm_cache_push`; counting changes nothing.
            out_count.write(unsafe { stack_cache::with_stack_cache(c.backing, |stack| Ok(stack.len())) }?);
        }
        Ok(())
    })
}

/// Empties the stack and frees every buffer the cache owns (pushed with
/// `nnm_cache_push_new`, on the stack or popped); never the buffers of
/// tensors pushed with `nnm_cache_push`. On a cache backed by a stack cache
/// this is `nnm_stack_cache_clear` on it.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a cache); and those of
/// `nnm_stack_cache_clear` on a backed cache.
///
/// # Safety
/// `cache` must be NULL or a cache of a live net (a freed one is
/// undefined), and no other call may use that net meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_cache_clear(cache: *mut nnm_cache) -> Status {
    guard(|| {
        // SAFETY: the caller promises `cache` is NULL or a cache no other
        // call uses.
        let c = unsafe { cache_mut(cache) }?;
        if !c.backing.is_null() {
            // SAFETY: as in `nnm_cache_push`.
            return unsafe {
                stack_cache::with_stack_cache(c.backing, |stack| {
                    stack.clear();
                    Ok(())
                })
            };
        }
        c.stack.clear();
        publish(c);
        Ok(())
    })
}

// ---- caches in caller storage ----------------------------------------------------------

mod stack_cache;
pub use self::stack_cache::*;

mod elem_stack;
pub use self::elem_stack::*;

// ---- the legacy pattern with no glue state ---------------------------------------------

mod legacy;
pub use self::legacy::*;

// ---- a legacy model's own lists and entry types ----------------------------------------

mod linked;
pub use self::linked::*;

#[cfg(test)]
mod tests;
