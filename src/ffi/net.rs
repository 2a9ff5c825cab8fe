//! C API of net memory tracking (`nnm_net_*`, `nnm_cache_*`): the four
//! kernel-style lists of a legacy C net, which C code walks with
//! `include/nnmem/list.h`.
//!
//! Layout: every entry C sees (`nnm_param`, `nnm_layer_data`, `nnm_cache`)
//! is the first field of a `#[repr(C)]` Rust struct that nnmem allocates
//! (one `Box` each, so its address never changes) and that carries, after
//! the C-visible part, the state C must not touch: a type tag, the name's
//! storage and the buffers nnmem owns. The net itself is `nnm_net` (the
//! four `struct list_head` anchors) followed by the safe core state
//! ([`crate::net::Net`]) and the entry pointers in insertion order.
//!
//! What nnmem frees is decided by the hidden part only (an `Option` of an
//! owned buffer), never by the C-visible `ownership` field, so a C program
//! that rewrites a descriptor cannot make nnmem free a view, a placeholder
//! or borrowed memory. The lists are linked and unlinked only here; C code
//! walks them and must not modify them.

// Not yet converted onto the audited helpers of `args` and `handle`: the
// C layer's lints (src/ffi/mod.rs) are relaxed here until it is.
#![allow(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::{self, addr_of_mut, NonNull};
use std::sync::Mutex;

use super::error::{guard, guard_ptr, guard_void, non_null, write_out};
use super::handle::{check_live, free_handle, into_handle, HandleType};
use crate::net::names::not_found;
use crate::net::tensor::described_bytes;
use crate::net::{
    Bytes, CacheStack, Capacity, Dtype, Kind, MemKind, Net, Ownership, Shape, SpillStack, MAX_DIMS, NAME_MAX,
};
use crate::status::{Error, Result, Status};

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
    /// Dimensions in use, 1 to NNM_MAX_DIMS.
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
/// Made by nnm_net_attach_param*; freed with the net. Read-only for C
/// except the contents of the buffers.
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
}

impl Default for nnm_param {
    fn default() -> Self {
        nnm_param {
            node: list_head::default(),
            name: ptr::null(),
            data: nnm_tensor::default(),
            diff: nnm_tensor::default(),
        }
    }
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
}

impl Default for nnm_layer_data {
    fn default() -> Self {
        nnm_layer_data {
            node: list_head::default(),
            name: ptr::null(),
            data: nnm_tensor::default(),
            diff: nnm_tensor::default(),
        }
    }
}

/// A layer cache: an entry of `nnm_net.caches`, linked by `node`; a stack
/// of tensors (data only) that forward pushes and backward pops.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct nnm_cache {
    /// Its node in `nnm_net.caches` (insertion order).
    pub node: list_head,
    /// Its name, NUL-terminated, unique among caches.
    pub name: *const c_char,
    /// The stack, bottom first, `count` descriptors; read-only, valid until
    /// the next push, pop or clear of this cache.
    pub tensors: *const nnm_tensor,
    /// Tensors on the stack.
    pub count: usize,
}

impl Default for nnm_cache {
    fn default() -> Self {
        nnm_cache { node: list_head::default(), name: ptr::null(), tensors: ptr::null(), count: 0 }
    }
}

/// A net: the anchors of its four lists, walked with nnmem/list.h, e.g.
/// `list_for_each_entry(p, &net->params, node)`. Made only by nnm_net_new
/// (nnmem keeps more state after these fields); never declare one. The
/// lists are read-only for C: walk them, never add, move or delete nodes.
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
    /// The maximum batch size outputs and input placeholders are sized for.
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

// ---- owned host memory ------------------------------------------------------------

/// 64 bytes, 64-aligned: the unit of owned host buffers.
#[repr(C, align(64))]
#[derive(Copy, Clone)]
struct Chunk([u8; 64]);

/// A zeroed, 64-byte-aligned host buffer that nnmem owns. The pools issue
/// replaces this allocator; everything else only sees `data()`.
struct HostBuffer {
    chunks: Vec<Chunk>,
    bytes: u64,
}

impl HostBuffer {
    /// Allocates `bytes` (> 0) zeroed bytes; OUT_OF_MEMORY names `what`.
    fn zeroed(bytes: u64, what: &dyn Fn() -> String) -> Result<HostBuffer> {
        let oom = || Error::new(Status::OutOfMemory, format!("cannot allocate {bytes} B for {}", what()));
        let n = usize::try_from(bytes.div_ceil(64)).map_err(|_| oom())?;
        let mut chunks = Vec::new();
        chunks.try_reserve_exact(n).map_err(|_| oom())?;
        chunks.resize(n, Chunk([0; 64]));
        Ok(HostBuffer { chunks, bytes })
    }

    fn data(&mut self) -> *mut c_void {
        self.chunks.as_mut_ptr().cast()
    }
}

impl Capacity for HostBuffer {
    fn capacity_bytes(&self) -> u64 {
        self.bytes
    }
}

/// The descriptor of `shape` at `data`.
fn descriptor(shape: &Shape, data: *mut c_void, kind: MemKind, ownership: Ownership) -> nnm_tensor {
    nnm_tensor {
        data,
        bytes: shape.bytes(),
        dims: shape.dims_array(),
        ndims: shape.ndims(),
        dtype: shape.dtype() as u32,
        elem_size: shape.dtype().size(),
        mem_kind: kind as u32,
        ownership: ownership as u32,
    }
}

/// The kind of caller memory: host or device (a placeholder has none).
fn memory_kind(mem_kind: u32) -> Result<MemKind> {
    match MemKind::from_value(mem_kind)? {
        MemKind::Placeholder => {
            Err(Error::invalid("mem_kind NNM_MEM_KIND_PLACEHOLDER: caller memory is host or device"))
        }
        k => Ok(k),
    }
}

/// Data and diff descriptors of caller memory of kind `kind`; a NULL diff
/// is a placeholder (no gradient).
fn borrowed_pair(shape: &Shape, kind: MemKind, data: *mut c_void, diff: *mut c_void) -> [nnm_tensor; 2] {
    let diff = if diff.is_null() {
        descriptor(shape, ptr::null_mut(), MemKind::Placeholder, Ownership::Borrowed)
    } else {
        descriptor(shape, diff, kind, Ownership::Borrowed)
    };
    [descriptor(shape, data, kind, Ownership::Borrowed), diff]
}

/// A tensor nnmem allocates: the buffer and its descriptor.
fn owned_tensor(shape: &Shape, what: &dyn Fn() -> String) -> Result<(HostBuffer, nnm_tensor)> {
    let mut buffer = HostBuffer::zeroed(shape.bytes(), what)?;
    let desc = descriptor(shape, buffer.data(), MemKind::Host, Ownership::Owned);
    Ok((buffer, desc))
}

/// The deallocator of an adopted buffer: called once as `free_fn(ctx, ptr)`.
pub type nnm_free_fn = Option<unsafe extern "C" fn(ctx: *mut c_void, ptr: *mut c_void)>;

/// A caller buffer the net adopted: freed with the caller's deallocator,
/// once, when this record is dropped (with its entry, at `nnm_net_free`).
struct Adopted {
    ptr: *mut c_void,
    free_fn: unsafe extern "C" fn(*mut c_void, *mut c_void),
    ctx: *mut c_void,
}

impl Drop for Adopted {
    fn drop(&mut self) {
        // SAFETY: the caller handed `ptr` over with this deallocator and
        // context (nnm_net_attach_param_adopted); this record is its only
        // owner and is dropped once.
        unsafe { (self.free_fn)(self.ctx, self.ptr) }
    }
}

/// A buffer an entry owns and frees: one nnmem allocated, or one it adopted.
enum Held {
    Host(#[allow(dead_code)] HostBuffer),
    Adopted(#[allow(dead_code)] Adopted),
}

impl Held {
    /// After a failed attach: nnmem's own allocations are freed, adopted
    /// buffers are left to the caller, who still owns them.
    fn give_back(pair: [Option<Held>; 2]) {
        for held in pair.into_iter().flatten() {
            if let Held::Adopted(a) = held {
                std::mem::forget(a);
            }
        }
    }
}

// ---- hidden entry state --------------------------------------------------------------

const NET_TAG: u64 = 0x6e6e_6d5f_6e65_7421; // "nnm_net!"
const PARAM_TAG: u64 = 0x6e6e_6d5f_7061_7261; // "nnm_para"
const LAYER_TAG: u64 = 0x6e6e_6d5f_6c61_7972; // "nnm_layr"
const CACHE_TAG: u64 = 0x6e6e_6d5f_6361_6368; // "nnm_cach"

#[repr(C)]
struct ParamEntry {
    public: nnm_param,
    tag: u64,
    _name: CString,
    _owned: [Option<Held>; 2],
}

#[repr(C)]
struct LayerEntry {
    public: nnm_layer_data,
    tag: u64,
    kind: Kind,
    net: *const NetHandle,
    /// The shape as attached (`[max_batch, ...]`).
    shape: Shape,
    /// For outputs: the data and diff buffers nnmem owns.
    owned: [Option<Held>; 2],
    /// For outputs: `owned`'s data pointers (views copy them).
    buffers: [*mut c_void; 2],
    _name: CString,
}

#[repr(C)]
struct CacheEntry {
    public: nnm_cache,
    tag: u64,
    stack: CacheStack<nnm_tensor, HostBuffer>,
    _name: CString,
}

/// What `nnm_net *` points to: the C-visible anchors, then the rest.
#[repr(C)]
struct NetHandle {
    public: nnm_net,
    tag: u64,
    /// Names, with each entry's address as the value: a lookup is one probe.
    core: Net<NonNull<c_void>>,
    params: Vec<*mut ParamEntry>,
    outputs: Vec<*mut LayerEntry>,
    inputs: Vec<*mut LayerEntry>,
    caches: Vec<*mut CacheEntry>,
    /// Addresses of the adopted buffers: adopting one twice would free it
    /// twice.
    adopted: std::collections::HashSet<usize>,
}

// SAFETY: no other handle type is named "nnm_net".
unsafe impl HandleType for NetHandle {
    const NAME: &'static str = "nnm_net";
}

impl Drop for NetHandle {
    fn drop(&mut self) {
        // Every entry was boxed by this net and is freed here, once; its
        // owned buffers go with it. Tags are cleared first so that a stale
        // pointer used before the memory is reused is caught.
        self.tag = 0;
        for &p in &self.params {
            // SAFETY: made by Box::into_raw in attach, freed only here.
            unsafe {
                (*p).tag = 0;
                drop(Box::from_raw(p));
            }
        }
        for &p in self.outputs.iter().chain(&self.inputs) {
            // SAFETY: as above.
            unsafe {
                (*p).tag = 0;
                drop(Box::from_raw(p));
            }
        }
        for &p in &self.caches {
            // SAFETY: as above.
            unsafe {
                (*p).tag = 0;
                drop(Box::from_raw(p));
            }
        }
    }
}

// ---- pointer checks ---------------------------------------------------------------

/// INVALID_ARGUMENT: `what` is not a valid `type_name` (out of line: the
/// hot paths only pay for the tag compare).
#[cold]
#[inline(never)]
fn not_a(what: &str, type_name: &str) -> Error {
    Error::invalid(format!("{what} is not a valid {type_name}"))
}

/// The handle behind `net` after NULL and tag checks (fast: hot paths).
///
/// # Safety
/// `net` must be NULL or point to readable memory of an `nnm_net`.
#[inline]
unsafe fn net_fast(net: *const nnm_net) -> Result<*mut NetHandle> {
    non_null(net, "net")?;
    let h = net.cast::<NetHandle>().cast_mut();
    if ptr::addr_of!((*h).tag).read() != NET_TAG {
        return Err(not_a("net", "nnm_net"));
    }
    Ok(h)
}

/// The handle behind `net` after NULL, registry (a freed net is caught
/// without being read) and tag checks.
///
/// # Safety
/// `net` must be NULL, a freed handle, or a live handle.
unsafe fn net_live(net: *const nnm_net) -> Result<*mut NetHandle> {
    check_live(net.cast::<NetHandle>(), "net")?;
    net_fast(net)
}

/// The entry behind `cache` after NULL and tag checks.
///
/// # Safety
/// `cache` must be NULL or point to readable memory of an `nnm_cache`.
#[inline]
unsafe fn cache_entry(cache: *const nnm_cache) -> Result<*mut CacheEntry> {
    non_null(cache, "cache")?;
    let c = cache.cast::<CacheEntry>().cast_mut();
    if ptr::addr_of!((*c).tag).read() != CACHE_TAG {
        return Err(not_a("cache", "nnm_cache"));
    }
    Ok(c)
}

/// The entry behind `layer` after NULL and tag checks.
///
/// # Safety
/// `layer` must be NULL or point to readable memory of an `nnm_layer_data`.
unsafe fn layer_entry(layer: *const nnm_layer_data, what: &str) -> Result<*mut LayerEntry> {
    non_null(layer, what)?;
    let l = layer.cast::<LayerEntry>().cast_mut();
    if ptr::addr_of!((*l).tag).read() != LAYER_TAG {
        return Err(Error::invalid(format!("{what} is not a valid nnm_layer_data")));
    }
    Ok(l)
}

/// The bytes of a NUL-terminated name argument.
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string.
#[inline]
unsafe fn name_bytes<'a>(name: *const c_char) -> Result<&'a [u8]> {
    non_null(name, "name")?;
    Ok(CStr::from_ptr(name).to_bytes())
}

/// The dimensions argument: `ndims` values at `dims` (which may be NULL
/// when `ndims` is 0). At most `max` are accepted.
///
/// # Safety
/// `dims` must be NULL or valid for `ndims` reads when `ndims <= max`.
unsafe fn dims_arg<'a>(dims: *const u32, ndims: u32, max: usize) -> Result<&'a [u32]> {
    if ndims as usize > max {
        return Err(Error::invalid(format!("ndims {ndims}: at most {max}")));
    }
    if ndims == 0 {
        return Ok(&[]);
    }
    non_null(dims, "dims")?;
    Ok(std::slice::from_raw_parts(dims, ndims as usize))
}

/// Links `node` at the back of the list anchored at `head`.
///
/// # Safety
/// Both must be valid, `head` an initialised list, `node` in no list.
unsafe fn link_tail(node: *mut list_head, head: *mut list_head) {
    let last = (*head).prev;
    (*node).next = head;
    (*node).prev = last;
    (*last).next = node;
    (*head).prev = node;
}

/// An owned copy of a name read from a C string (so it has no NUL).
fn c_name(name: &[u8]) -> CString {
    CString::new(name).expect("a name read from a C string has no NUL")
}

/// Writes `value` to an optional out-parameter.
///
/// # Safety
/// `out` must be NULL or valid for writes.
unsafe fn write_optional<T>(out: *mut T, value: T) {
    if !out.is_null() {
        write_out(out, value);
    }
}

/// Adds a freshly boxed entry to the net's name index; on failure (out of
/// memory: the name was checked before) the entry is freed again, so
/// nothing changes.
///
/// # Safety
/// `entry` must come from `Box::into_raw` and be in no list yet.
unsafe fn index<E>(h: *mut NetHandle, kind: Kind, name: &[u8], bytes: Bytes, entry: *mut E) -> Result<()> {
    let address = NonNull::new(entry.cast::<c_void>()).expect("a Box is never NULL");
    if let Err(e) = (*h).core.add(kind, name, bytes, address) {
        drop(Box::from_raw(entry));
        return Err(e);
    }
    Ok(())
}

/// Tensors and bytes of a data/diff pair.
fn pair_bytes(data: &nnm_tensor, diff: &nnm_tensor, owned: [bool; 2]) -> Bytes {
    let mut b = Bytes::default();
    for (t, own) in [(data, owned[0]), (diff, owned[1])] {
        b.add_tensor(t.bytes, if own { Ownership::Owned } else { Ownership::View });
    }
    b
}

// ---- net ---------------------------------------------------------------------------------

/// Creates an empty net whose layer outputs and input placeholders have
/// `max_batch` rows. Its four lists (`params`, `outputs`, `inputs`,
/// `caches`) are empty, initialised `struct list_head` anchors. Free it
/// with `nnm_net_free`.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (`max_batch` 0).
#[no_mangle]
pub unsafe extern "C" fn nnm_net_new(max_batch: u32, out_net: *mut *mut nnm_net) -> Status {
    guard(|| {
        non_null(out_net, "out_net")?;
        let core = Net::new(max_batch)?;
        let h = into_handle(NetHandle {
            public: nnm_net { max_batch, ..Default::default() },
            tag: NET_TAG,
            core,
            params: Vec::new(),
            outputs: Vec::new(),
            inputs: Vec::new(),
            caches: Vec::new(),
            adopted: Default::default(),
        });
        for anchor in [
            addr_of_mut!((*h).public.params),
            addr_of_mut!((*h).public.outputs),
            addr_of_mut!((*h).public.inputs),
            addr_of_mut!((*h).public.caches),
        ] {
            (*anchor).next = anchor;
            (*anchor).prev = anchor;
        }
        write_out(out_net, h.cast::<nnm_net>());
        Ok(())
    })
}

/// Frees the net: every buffer nnmem allocated (params, outputs, cache
/// buffers) or adopted (through its `free_fn`), exactly once, and every
/// entry; never a view, a placeholder or borrowed memory. Every entry pointer of the net becomes invalid. NULL is
/// a no-op; freeing twice is detected and reported through
/// `nnm_last_error()`.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_free(net: *mut nnm_net) {
    guard_void(|| free_handle(net.cast::<NetHandle>()))
}

/// Writes the report: per list, entries, tensors, bytes owned and bytes
/// referred to, at the net's maximum batch size; and the totals.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (not a live net).
#[no_mangle]
pub unsafe extern "C" fn nnm_net_get_report(net: *const nnm_net, out_report: *mut nnm_net_report) -> Status {
    guard(|| {
        let h = net_live(net)?;
        non_null(out_report, "out_report")?;
        let caches = (*h).caches.iter().map(|&c| {
            let stack = &(*c).stack;
            let mut b = Bytes { tensors: stack.len() as u64, owned: stack.owned_bytes(), ..Default::default() };
            for (i, t) in stack.items().iter().enumerate() {
                if !stack.is_owned(i) {
                    b.referenced = b.referenced.saturating_add(described_bytes(t.elem_size, &t.dims, t.ndims));
                }
            }
            b
        });
        let r = (*h).core.report(caches);
        let c = |b: Bytes| nnm_net_bytes {
            entries: b.entries,
            tensors: b.tensors,
            owned_bytes: b.owned,
            referenced_bytes: b.referenced,
        };
        write_out(
            out_report,
            nnm_net_report {
                params: c(r.params),
                outputs: c(r.outputs),
                inputs: c(r.inputs),
                caches: c(r.caches),
                total_owned_bytes: r.total_owned(),
                total_referenced_bytes: r.total_referenced(),
                max_batch: r.max_batch,
            },
        );
        Ok(())
    })
}

// ---- params ------------------------------------------------------------------------------

/// Adds a param entry to the net (all-or-nothing) and links it at the back
/// of `params`.
/// On failure, buffers nnmem allocated are freed and adopted ones are left
/// to the caller ([`Held::give_back`]).
unsafe fn add_param(
    h: *mut NetHandle,
    name: &[u8],
    data: (Option<Held>, nnm_tensor),
    diff: (Option<Held>, nnm_tensor),
) -> Result<*mut nnm_param> {
    let bytes = pair_bytes(&data.1, &diff.1, [data.0.is_some(), diff.0.is_some()]);
    let owned = [data.0, diff.0];
    // Field by field: never a reference covering the C-visible anchors.
    let params = &mut (*h).params;
    if params.try_reserve(1).is_err() {
        Held::give_back(owned);
        return Err(Error::new(Status::OutOfMemory, "no memory for a param entry"));
    }
    let cname = c_name(name);
    // The entry gets its buffers only once it is in the net: a failed
    // attach must not free an adopted buffer.
    let entry = Box::into_raw(Box::new(ParamEntry {
        public: nnm_param { node: list_head::default(), name: cname.as_ptr(), data: data.1, diff: diff.1 },
        tag: PARAM_TAG,
        _name: cname,
        _owned: [None, None],
    }));
    if let Err(e) = index(h, Kind::Param, name, bytes, entry) {
        Held::give_back(owned);
        return Err(e);
    }
    (*entry)._owned = owned;
    (*h).params.push(entry);
    link_tail(addr_of_mut!((*entry).public.node), addr_of_mut!((*h).public.params));
    Ok(entry.cast())
}

/// The net, name and shape arguments every param attach starts with,
/// checked in that order.
///
/// # Safety
/// As the attach functions' arguments.
unsafe fn param_args<'a>(
    net: *mut nnm_net,
    name: *const c_char,
    dtype: u32,
    dims: *const u32,
    ndims: u32,
) -> Result<(*mut NetHandle, &'a [u8], Shape)> {
    let h = net_live(net)?;
    let name = name_bytes(name)?;
    let shape = Shape::new(Dtype::from_value(dtype)?, dims_arg(dims, ndims, MAX_DIMS)?)?;
    Ok((h, name, shape))
}

/// Attaches a learnable param named `name` with data and diff of
/// `dims[0..ndims]` (1 to NNM_MAX_DIMS) elements of `dtype` (an
/// `nnm_dtype`). nnmem allocates both, host memory, zeroed, 64-byte aligned,
/// owned: freed with the net. The entry goes to the back of `net->params`
/// and to `*out_param` when that is not NULL.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (unknown dtype, bad dims, empty
/// name, name longer than NNM_NAME_MAX, not a live net); ALREADY_EXISTS (a
/// param of that name); OVERFLOW (size); OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_attach_param(
    net: *mut nnm_net,
    name: *const c_char,
    dtype: u32,
    dims: *const u32,
    ndims: u32,
    out_param: *mut *mut nnm_param,
) -> Status {
    guard(|| {
        let (h, name, shape) = param_args(net, name, dtype, dims, ndims)?;
        (*h).core.check_new(Kind::Param, name)?;
        let what = |part: &str| format!("{part} of param \"{}\"", String::from_utf8_lossy(name));
        let (data_buf, data) = owned_tensor(&shape, &|| what("data"))?;
        let (diff_buf, diff) = owned_tensor(&shape, &|| what("diff"))?;
        let p = add_param(h, name, (Some(Held::Host(data_buf)), data), (Some(Held::Host(diff_buf)), diff))?;
        write_optional(out_param, p);
        Ok(())
    })
}

/// Attaches a param whose buffers are the caller's (borrowed: never freed
/// by nnmem; they must outlive the net's use of them). `mem_kind` is
/// NNM_MEM_KIND_HOST or NNM_MEM_KIND_DEVICE; `data` must not be NULL;
/// `diff` NULL makes the diff a placeholder (a frozen param). Otherwise as
/// `nnm_net_attach_param`.
///
/// Errors: as `nnm_net_attach_param`, and INVALID_ARGUMENT for a
/// `mem_kind` other than host or device.
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
    guard(|| {
        let (h, name, shape) = param_args(net, name, dtype, dims, ndims)?;
        let kind = memory_kind(mem_kind)?;
        non_null(data, "data")?;
        (*h).core.check_new(Kind::Param, name)?;
        let [data, diff] = borrowed_pair(&shape, kind, data, diff);
        let p = add_param(h, name, (None, data), (None, diff))?;
        write_optional(out_param, p);
        Ok(())
    })
}

/// The checked arguments of an adopting attach of `kind` named `name`:
/// descriptors of `shape` at `data` and `diff` (a NULL `diff` is a
/// placeholder, for params only), shown as owned, with the records that
/// will free them. Every check comes first: once this returns, the records
/// exist, and the caller's failure path must hand them back
/// ([`Held::give_back`]).
///
/// # Safety
/// `h` must be a live net.
#[allow(clippy::too_many_arguments)]
unsafe fn adopt_pair(
    h: *mut NetHandle,
    kind: Kind,
    name: &[u8],
    shape: &Shape,
    data: *mut c_void,
    diff: *mut c_void,
    free_fn: nnm_free_fn,
    ctx: *mut c_void,
) -> Result<[(Option<Held>, nnm_tensor); 2]> {
    non_null(data, "data")?;
    if kind != Kind::Param {
        non_null(diff, "diff")?;
    }
    let Some(free_fn) = free_fn else {
        return Err(Error::new(Status::NullArgument, "free_fn is NULL: an adopted buffer needs its deallocator"));
    };
    if ptr::eq(data, diff) {
        return Err(Error::invalid(
            "diff is the same buffer as data: each adopted buffer is freed once, so they must differ",
        ));
    }
    for (what, p) in [("data", data), ("diff", diff)] {
        if (*h).adopted.contains(&(p as usize)) {
            return Err(Error::invalid(format!(
                "{what} {p:p} is already adopted by this net: it would be freed twice"
            )));
        }
    }
    (*h).core.check_new(kind, name)?;
    (*h).adopted.try_reserve(2).map_err(|_| Error::new(Status::OutOfMemory, "no memory to record adopted buffers"))?;
    let adopt = |p: *mut c_void, mut t: nnm_tensor| {
        if p.is_null() {
            return (None, t);
        }
        t.ownership = Ownership::Owned as u32;
        (Some(Held::Adopted(Adopted { ptr: p, free_fn, ctx })), t)
    };
    let [data_t, diff_t] = borrowed_pair(shape, MemKind::Host, data, diff);
    Ok([adopt(data, data_t), adopt(diff, diff_t)])
}

/// Records the buffers an attach adopted (room was reserved by
/// [`adopt_pair`]).
unsafe fn record_adopted(h: *mut NetHandle, buffers: [*mut c_void; 2]) {
    for p in buffers.into_iter().filter(|p| !p.is_null()) {
        (*h).adopted.insert(p as usize);
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
    guard(|| {
        let (h, name, shape) = param_args(net, name, dtype, dims, ndims)?;
        let [data, diff] = adopt_pair(h, Kind::Param, name, &shape, data, diff, free_fn, ctx)?;
        let buffers = [data.1.data, diff.1.data];
        let p = add_param(h, name, data, diff)?;
        record_adopted(h, buffers);
        write_optional(out_param, p);
        Ok(())
    })
}

/// The param named `name`, found in O(1); NULL when there is none (or on
/// bad arguments), with the reason in `nnm_last_error()`. Like awnn's
/// net_get_param, without walking the list.
///
/// Calling it on a freed net is undefined (the net is only type-checked
/// here, to stay fast).
#[no_mangle]
pub unsafe extern "C" fn nnm_net_param_get(net: *const nnm_net, name: *const c_char) -> *mut nnm_param {
    guard_ptr(|| lookup(net, Kind::Param, name))
}

/// The entry of `kind` named `name`: one probe of the name index, whose
/// values are the entries' addresses.
///
/// # Safety
/// `net` must be NULL or readable as an `nnm_net`; `name` NULL or a C
/// string; `T` the entry type of `kind`.
#[inline]
unsafe fn lookup<T>(net: *const nnm_net, kind: Kind, name: *const c_char) -> Result<*mut T> {
    let h = net_fast(net)?;
    let name = name_bytes(name)?;
    match (*h).core.get(kind, name) {
        Some(entry) => Ok(entry.as_ptr().cast()),
        None => Err(not_found(kind.what(), name)),
    }
}

// ---- outputs and inputs -------------------------------------------------------------------

/// Adds an output or input entry (all-or-nothing) and links it.
/// On failure, as [`add_param`].
unsafe fn add_layer(
    h: *mut NetHandle,
    kind: Kind,
    name: &[u8],
    shape: Shape,
    data: (Option<Held>, nnm_tensor),
    diff: (Option<Held>, nnm_tensor),
) -> Result<*mut nnm_layer_data> {
    let bytes = pair_bytes(&data.1, &diff.1, [data.0.is_some(), diff.0.is_some()]);
    let owned = [data.0, diff.0];
    // Field by field: never a reference covering the C-visible anchors.
    let list = if kind == Kind::Output { &mut (*h).outputs } else { &mut (*h).inputs };
    if list.try_reserve(1).is_err() {
        Held::give_back(owned);
        return Err(Error::new(Status::OutOfMemory, format!("no memory for an {} entry", kind.what())));
    }
    let cname = c_name(name);
    let entry = Box::into_raw(Box::new(LayerEntry {
        public: nnm_layer_data { node: list_head::default(), name: cname.as_ptr(), data: data.1, diff: diff.1 },
        tag: LAYER_TAG,
        kind,
        net: h,
        shape,
        buffers: [data.1.data, diff.1.data],
        owned: [None, None],
        _name: cname,
    }));
    if let Err(e) = index(h, kind, name, bytes, entry) {
        Held::give_back(owned);
        return Err(e);
    }
    (*entry).owned = owned;
    if kind == Kind::Output {
        (*h).outputs.push(entry);
        link_tail(addr_of_mut!((*entry).public.node), addr_of_mut!((*h).public.outputs));
    } else {
        (*h).inputs.push(entry);
        link_tail(addr_of_mut!((*entry).public.node), addr_of_mut!((*h).public.inputs));
    }
    Ok(entry.cast())
}

/// The net, name and `[max_batch, sample...]` shape arguments of the
/// batch-sized attaches, checked in that order.
///
/// # Safety
/// As the attach functions' arguments.
unsafe fn output_args<'a>(
    net: *mut nnm_net,
    name: *const c_char,
    dtype: u32,
    sample_dims: *const u32,
    ndims: u32,
) -> Result<(*mut NetHandle, &'a [u8], Shape)> {
    let h = net_live(net)?;
    let name = name_bytes(name)?;
    let dtype = Dtype::from_value(dtype)?;
    let shape = (*h).core.batch_shape(dtype, dims_arg(sample_dims, ndims, MAX_DIMS - 1)?)?;
    Ok((h, name, shape))
}

/// Attaches a layer output named `name`: data and diff of
/// `[max_batch, sample_dims[0..ndims]]` (`ndims` 0 to NNM_MAX_DIMS - 1)
/// elements of `dtype`, allocated by nnmem (host, zeroed, owned: freed with
/// the net). The entry goes to the back of `net->outputs` and to
/// `*out_output` when that is not NULL.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (dtype, dims, name, not a live
/// net); ALREADY_EXISTS; OVERFLOW; OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_attach_output(
    net: *mut nnm_net,
    name: *const c_char,
    dtype: u32,
    sample_dims: *const u32,
    ndims: u32,
    out_output: *mut *mut nnm_layer_data,
) -> Status {
    guard(|| {
        let (h, name, shape) = output_args(net, name, dtype, sample_dims, ndims)?;
        (*h).core.check_new(Kind::Output, name)?;
        let what = |part: &str| format!("{part} of output \"{}\"", String::from_utf8_lossy(name));
        let (data_buf, data) = owned_tensor(&shape, &|| what("data"))?;
        let (diff_buf, diff) = owned_tensor(&shape, &|| what("diff"))?;
        let o = add_layer(
            h,
            Kind::Output,
            name,
            shape,
            (Some(Held::Host(data_buf)), data),
            (Some(Held::Host(diff_buf)), diff),
        )?;
        write_optional(out_output, o);
        Ok(())
    })
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
    guard(|| {
        let (h, name, shape) = output_args(net, name, dtype, sample_dims, ndims)?;
        let [data, diff] = adopt_pair(h, Kind::Output, name, &shape, data, diff, free_fn, ctx)?;
        let buffers = [data.1.data, diff.1.data];
        let o = add_layer(h, Kind::Output, name, shape, data, diff)?;
        record_adopted(h, buffers);
        write_optional(out_output, o);
        Ok(())
    })
}

/// Attaches a layer input named `name` that is a view of `output` (an
/// output of this net): its data and diff share the output's buffers and
/// own nothing (ownership NNM_OWNERSHIP_VIEW), so freeing the net frees
/// those buffers once, through the output. The entry goes to the back of
/// `net->inputs` and to `*out_input` when that is not NULL.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (`output` is not an output of
/// this net, name, not a live net); ALREADY_EXISTS.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_attach_input_view(
    net: *mut nnm_net,
    name: *const c_char,
    output: *const nnm_layer_data,
    out_input: *mut *mut nnm_layer_data,
) -> Status {
    guard(|| {
        let h = net_live(net)?;
        let name = name_bytes(name)?;
        let o = layer_entry(output, "output")?;
        if (*o).kind != Kind::Output || !ptr::eq((*o).net, h) {
            return Err(Error::invalid(format!(
                "output \"{}\" is not an output of this net",
                CStr::from_ptr((*o).public.name).to_string_lossy()
            )));
        }
        (*h).core.check_new(Kind::Input, name)?;
        let shape = (*o).shape;
        let [data_ptr, diff_ptr] = (*o).buffers;
        let data = descriptor(&shape, data_ptr, MemKind::Host, Ownership::View);
        let diff = descriptor(&shape, diff_ptr, MemKind::Host, Ownership::View);
        let i = add_layer(h, Kind::Input, name, shape, (None, data), (None, diff))?;
        write_optional(out_input, i);
        Ok(())
    })
}

/// Attaches a layer input named `name` that is a placeholder for the net's
/// input: data and diff of `[max_batch, sample_dims[0..ndims]]` elements of
/// `dtype` with no buffer (NULL data, NNM_MEM_KIND_PLACEHOLDER,
/// NNM_OWNERSHIP_BORROWED). Give it the caller's memory per batch with
/// `nnm_net_input_bind`; nnmem never frees it.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (dtype, dims, name, not a live
/// net); ALREADY_EXISTS; OVERFLOW.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_attach_input_placeholder(
    net: *mut nnm_net,
    name: *const c_char,
    dtype: u32,
    sample_dims: *const u32,
    ndims: u32,
    out_input: *mut *mut nnm_layer_data,
) -> Status {
    guard(|| {
        let (h, name, shape) = output_args(net, name, dtype, sample_dims, ndims)?;
        (*h).core.check_new(Kind::Input, name)?;
        let empty = descriptor(&shape, ptr::null_mut(), MemKind::Placeholder, Ownership::Borrowed);
        let i = add_layer(h, Kind::Input, name, shape, (None, empty), (None, empty))?;
        write_optional(out_input, i);
        Ok(())
    })
}

/// Binds the caller's memory to a placeholder input for a batch of `batch`
/// rows (1 to max_batch): `data` (and `diff` unless NULL) become borrowed
/// tensors of kind `mem_kind` (host or device) with `dims[0] = batch`.
/// `data` NULL unbinds both (placeholders again, at max_batch). nnmem never
/// frees bound memory.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not an input, batch out of
/// range, mem_kind); WRONG_STATE (the input is a view, not a placeholder).
#[no_mangle]
pub unsafe extern "C" fn nnm_net_input_bind(
    input: *mut nnm_layer_data,
    mem_kind: u32,
    data: *mut c_void,
    diff: *mut c_void,
    batch: u32,
) -> Status {
    guard(|| {
        let l = layer_entry(input, "input")?;
        let name = || CStr::from_ptr((*l).public.name).to_string_lossy().into_owned();
        if (*l).kind != Kind::Input {
            return Err(Error::invalid(format!("\"{}\" is an output, not an input", name())));
        }
        if !(*l).buffers[0].is_null() {
            return Err(Error::wrong_state(format!("input \"{}\" is a view of an output, not a placeholder", name())));
        }
        let full = (*l).shape;
        if data.is_null() {
            let empty = descriptor(&full, ptr::null_mut(), MemKind::Placeholder, Ownership::Borrowed);
            (*l).public.data = empty;
            (*l).public.diff = empty;
            return Ok(());
        }
        let kind = memory_kind(mem_kind)?;
        if batch == 0 || batch > full.dims()[0] {
            return Err(Error::invalid(format!(
                "batch {batch} is outside 1..={}, the net's maximum batch",
                full.dims()[0]
            )));
        }
        let [data, diff] = borrowed_pair(&full.with_batch(batch)?, kind, data, diff);
        (*l).public.data = data;
        (*l).public.diff = diff;
        Ok(())
    })
}

/// The output named `name` (O(1)); NULL with `nnm_last_error()` when there
/// is none. Undefined on a freed net.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_output_get(net: *const nnm_net, name: *const c_char) -> *mut nnm_layer_data {
    guard_ptr(|| lookup(net, Kind::Output, name))
}

/// The input named `name` (O(1)); NULL with `nnm_last_error()` when there
/// is none. Undefined on a freed net.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_input_get(net: *const nnm_net, name: *const c_char) -> *mut nnm_layer_data {
    guard_ptr(|| lookup(net, Kind::Input, name))
}

// ---- caches ------------------------------------------------------------------------------

/// Attaches an empty cache named `name` (a stack of tensors with no fixed
/// capacity) at the back of `net->caches`; the entry goes to `*out_cache`
/// when that is not NULL.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (name, not a live net);
/// ALREADY_EXISTS.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_attach_cache(
    net: *mut nnm_net,
    name: *const c_char,
    out_cache: *mut *mut nnm_cache,
) -> Status {
    guard(|| {
        let h = net_live(net)?;
        let name = name_bytes(name)?;
        (*h).core.check_new(Kind::Cache, name)?;
        (*h).caches.try_reserve(1).map_err(|_| Error::new(Status::OutOfMemory, "no memory for a cache entry"))?;
        let cname = c_name(name);
        let entry = Box::into_raw(Box::new(CacheEntry {
            public: nnm_cache { name: cname.as_ptr(), ..Default::default() },
            tag: CACHE_TAG,
            stack: CacheStack::new(&String::from_utf8_lossy(name)),
            _name: cname,
        }));
        index(h, Kind::Cache, name, Bytes::default(), entry)?;
        (*h).caches.push(entry);
        link_tail(addr_of_mut!((*entry).public.node), addr_of_mut!((*h).public.caches));
        write_optional(out_cache, entry.cast::<nnm_cache>());
        Ok(())
    })
}

/// The cache named `name` (O(1)); NULL with `nnm_last_error()` when there
/// is none. Undefined on a freed net.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_cache_get(net: *const nnm_net, name: *const c_char) -> *mut nnm_cache {
    guard_ptr(|| lookup(net, Kind::Cache, name))
}

/// Mirrors the stack into the C-visible `tensors` and `count`.
#[inline]
unsafe fn publish(c: *mut CacheEntry) {
    let items = (*c).stack.items();
    (*c).public.tensors = items.as_ptr();
    (*c).public.count = items.len();
}

/// What is wrong with a descriptor handed to `nnm_cache_push`.
#[cold]
fn bad_descriptor(t: &nnm_tensor) -> Error {
    if t.ndims == 0 || t.ndims as usize > MAX_DIMS {
        return Error::invalid(format!("tensor has ndims {}: a tensor has 1 to {MAX_DIMS} dimensions", t.ndims));
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
    // `ndims - 1` wraps 0 to u32::MAX, so one compare refuses 0 and > 8.
    if t.ndims.wrapping_sub(1) as usize >= MAX_DIMS
        || t.dtype as usize >= Dtype::all().len()
        || t.mem_kind > 2
        || t.ownership > 2
    {
        return Err(bad_descriptor(t));
    }
    // Ownership::of_copy computed in a register: patching the field in
    // memory would make the copy into the stack reload it across a partial
    // store (a store-forwarding stall).
    Ok(t.ownership | u32::from(t.ownership == Ownership::Owned as u32))
}

/// Pushes a copy of `*tensor` (a shallow copy: the cache never frees its
/// buffer; a copy of an owned tensor is stored as NNM_OWNERSHIP_VIEW).
/// Amortised O(1); the stack grows as needed.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a cache; `ndims` outside
/// 1 to NNM_MAX_DIMS; `dtype`, `mem_kind` or `ownership` out of range);
/// OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn nnm_cache_push(cache: *mut nnm_cache, tensor: *const nnm_tensor) -> Status {
    guard(|| {
        let c = cache_entry(cache)?;
        non_null(tensor, "tensor")?;
        let t = &*tensor;
        let ownership = copy_ownership(t)?;
        let stack = &mut (*c).stack;
        if stack.is_full() {
            // `tensor` may point into this very stack (`cache->tensors`), so
            // it is copied out before growing moves the storage.
            let copy = nnm_tensor { ownership, ..*t };
            stack.push(copy);
            publish(c);
        } else {
            // With room, the descriptor goes straight from the caller's
            // memory into its slot, and the storage does not move.
            stack.push(nnm_tensor { ownership, ..*t });
            (*c).public.count = (*c).stack.len();
        }
        Ok(())
    })
}

/// Pushes a tensor of `dims[0..ndims]` elements of `dtype` whose host
/// buffer the cache owns, and writes its descriptor to `out_tensor` (when
/// not NULL). The buffer is reused from one popped earlier when one is
/// large enough (contents then unspecified), else newly allocated (zeroed).
/// It stays valid after it is popped, until the next `nnm_cache_push_new`
/// or `nnm_cache_clear` on this cache, and is freed by `nnm_cache_clear` or
/// with the net.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (dtype, dims); OVERFLOW;
/// OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn nnm_cache_push_new(
    cache: *mut nnm_cache,
    dtype: u32,
    dims: *const u32,
    ndims: u32,
    out_tensor: *mut nnm_tensor,
) -> Status {
    guard(|| {
        let c = cache_entry(cache)?;
        let shape = Shape::new(Dtype::from_value(dtype)?, dims_arg(dims, ndims, MAX_DIMS)?)?;
        let stack = &mut (*c).stack;
        let mut buffer = match stack.take_spare(shape.bytes()) {
            Some(b) => b,
            None => HostBuffer::zeroed(shape.bytes(), &|| format!("a tensor of cache \"{}\"", stack.name()))?,
        };
        let t = descriptor(&shape, buffer.data(), MemKind::Host, Ownership::Owned);
        stack.push_owned(t, buffer);
        publish(c);
        write_optional(out_tensor, t);
        Ok(())
    })
}

/// Pops the tensor on top of the stack into `out_tensor`. A tensor pushed
/// with `nnm_cache_push_new` keeps its buffer until the next
/// `nnm_cache_push_new` or `nnm_cache_clear` on this cache.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a cache); WRONG_STATE (the
/// cache is empty: a pop without a matching push).
#[no_mangle]
pub unsafe extern "C" fn nnm_cache_pop(cache: *mut nnm_cache, out_tensor: *mut nnm_tensor) -> Status {
    guard(|| {
        let c = cache_entry(cache)?;
        non_null(out_tensor, "out_tensor")?;
        // Written only on success: pop_into fails before touching it.
        (*c).stack.pop_into(&mut *out_tensor)?;
        // A pop never moves the stack's storage, so only the count changes.
        // Republishing the pointer too would read it back with the length
        // the pop just stored, in one 16-byte load that the store cannot
        // forward to: a stall that cost a quarter of the call.
        (*c).public.count = (*c).stack.len();
        Ok(())
    })
}

/// Writes the number of tensors on the stack (also `cache->count`).
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a cache).
#[no_mangle]
pub unsafe extern "C" fn nnm_cache_count(cache: *const nnm_cache, out_count: *mut usize) -> Status {
    guard(|| {
        let c = cache_entry(cache)?;
        non_null(out_count, "out_count")?;
        write_out(out_count, (*c).stack.len());
        Ok(())
    })
}

/// Empties the stack and frees every buffer the cache owns (pushed with
/// `nnm_cache_push_new`, on the stack or popped); never the buffers of
/// tensors pushed with `nnm_cache_push`.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a cache).
#[no_mangle]
pub unsafe extern "C" fn nnm_cache_clear(cache: *mut nnm_cache) -> Status {
    guard(|| {
        let c = cache_entry(cache)?;
        (*c).stack.clear();
        publish(c);
        Ok(())
    })
}

// ---- caches in caller storage ----------------------------------------------------------

/// Tensors an `nnm_stack_cache` holds in its own storage, without heap.
pub const NNM_STACK_CACHE_INLINE: u32 = 8;

/// The `tag` of an initialised `nnm_stack_cache` ("nnm_stkc").
pub const NNM_STACK_CACHE_TAG: u64 = 0x6e6e_6d5f_7374_6b63;

const INLINE: usize = NNM_STACK_CACHE_INLINE as usize;

/// A layer cache that lives in the caller's storage (on the stack, in a
/// struct, by value), outside any net: a stack of tensor descriptors like
/// `nnm_cache`, for legacy layers that keep their caches by value and never
/// clear them on some paths.
///
/// Initialise it with `NNM_STACK_CACHE_INIT` or `nnm_stack_cache_init`,
/// then use only the `nnm_stack_cache_*` functions; read `count` and, for
/// the first NNM_STACK_CACHE_INLINE tensors, `tensors[i]` directly; never
/// write a field.
///
/// Memory: the first NNM_STACK_CACHE_INLINE tensors live in `tensors`; a
/// push beyond them puts the rest on the heap, which is freed again by the
/// pop that brings `count` back to NNM_STACK_CACHE_INLINE, or by
/// `nnm_stack_cache_clear`. So a cache whose `count` is at most
/// NNM_STACK_CACHE_INLINE holds no heap and needs no call before it goes
/// out of scope; only one that holds more must be cleared first. It only
/// ever stores descriptors (shallow copies that never own a buffer), so it
/// frees no tensor buffer either.
///
/// While it holds heap, it must not be copied or moved: push, pop, get,
/// count and clear on a copy fail with WRONG_STATE and change nothing
/// (`nnm_stack_cache_init` makes a copy an empty cache of its own); so do
/// they on an old copy written back over the cache after its heap was
/// freed (nnmem records which cache owns which heap).
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct nnm_stack_cache {
    /// Tensors on the stack.
    pub count: usize,
    /// Private: NNM_STACK_CACHE_TAG once initialised.
    pub tag: u64,
    /// Private: the tensors past the inline ones, NULL while there are none.
    pub spill: *mut nnm_tensor,
    /// Private: room at `spill`, in tensors.
    pub spill_capacity: usize,
    /// Private: the cache's own address while `spill` is set (a copy's
    /// differs).
    pub spill_owner: *const nnm_stack_cache,
    /// The bottom NNM_STACK_CACHE_INLINE tensors of the stack; entries at
    /// and past `count` are unspecified.
    pub tensors: [nnm_tensor; 8],
}

// The header's array length is the literal 8 (cbindgen writes it as written).
const _: () = assert!(INLINE == 8);

impl Default for nnm_stack_cache {
    fn default() -> Self {
        nnm_stack_cache {
            count: 0,
            tag: NNM_STACK_CACHE_TAG,
            spill: ptr::null_mut(),
            spill_capacity: 0,
            spill_owner: ptr::null(),
            tensors: [nnm_tensor::default(); INLINE],
        }
    }
}

/// The heap of every stack cache that holds one: the cache's address ->
/// (its heap, its capacity). A cache's fields alone cannot prove that its
/// heap is still live (C may write an old copy of the struct back over it),
/// so nnmem keeps its own record; only caches past their inline slots use
/// it.
static LIVE_SPILLS: Mutex<Option<HashMap<usize, (usize, usize)>>> = Mutex::new(None);

fn live_spills<R>(f: impl FnOnce(&mut HashMap<usize, (usize, usize)>) -> R) -> R {
    let mut guard = LIVE_SPILLS.lock().unwrap_or_else(|p| p.into_inner());
    let result = f(guard.get_or_insert_with(HashMap::new));
    // Nothing of nnmem's stays allocated once no cache holds heap.
    if guard.as_ref().is_some_and(HashMap::is_empty) {
        *guard = None;
    }
    result
}

/// The heap part of a stack cache that holds one, as the Vec it came from,
/// after checking that `c` is that Vec's owner (not a copy), that nnmem's
/// record says the heap is still live, and that the fields are consistent.
///
/// # Safety
/// `c` is the cache at `cache`, with a valid tag and a non-NULL `spill`.
#[cold]
#[inline(never)]
unsafe fn spill_of(c: &nnm_stack_cache, cache: *const nnm_stack_cache) -> Result<Vec<nnm_tensor>> {
    let spilled = c.count.saturating_sub(INLINE);
    if !ptr::eq(c.spill_owner, cache) {
        return Err(Error::wrong_state(format!(
            "stack cache holds {} tensors, {spilled} of them on the heap, and was copied or moved since: use the original",
            c.count
        )));
    }
    if live_spills(|live| live.get(&(cache as usize)).copied()) != Some((c.spill as usize, c.spill_capacity)) {
        return Err(Error::wrong_state(format!(
            "stack cache says it holds {spilled} tensors on the heap, but that heap is no longer its own (an old copy \
             of the struct was written back over it): initialise it again"
        )));
    }
    if spilled == 0 || spilled > c.spill_capacity {
        return Err(Error::invalid(format!(
            "stack cache is corrupt: count {} with room for {} tensors on the heap",
            c.count, c.spill_capacity
        )));
    }
    // SAFETY: nnmem's own record (LIVE_SPILLS) says that `spill` is the live
    // allocation of `spill_capacity` tensors that with_stack_cache stored for
    // the cache at this address, from a Vec<nnm_tensor>; the stack keeps its
    // first `spilled` elements written (checked against the capacity above).
    Ok(Vec::from_raw_parts(c.spill, spilled, c.spill_capacity))
}

/// Runs `f` on the stack of the caller's cache at `cache` after checking
/// it, then stores the spill back into the struct.
///
/// # Safety
/// `cache` must be NULL or valid for reads and writes of an
/// `nnm_stack_cache`.
#[inline]
unsafe fn with_stack_cache<R>(
    cache: *mut nnm_stack_cache,
    f: impl FnOnce(&mut SpillStack<'_, nnm_tensor>) -> Result<R>,
) -> Result<R> {
    non_null(cache, "cache")?;
    let c = &mut *cache;
    if c.tag != NNM_STACK_CACHE_TAG {
        return Err(not_a("cache", "initialised nnm_stack_cache (NNM_STACK_CACHE_INIT or nnm_stack_cache_init)"));
    }
    // Within the inline slots (the common case) there is no heap to rebuild.
    // ManuallyDrop: a panic inside `f` must not free a heap the struct still
    // points to.
    let had_heap = !c.spill.is_null();
    let mut spill = std::mem::ManuallyDrop::new(if had_heap { spill_of(c, cache)? } else { Vec::new() });
    let result = SpillStack::new(&mut c.tensors, &mut c.count, &mut spill).and_then(|mut stack| f(&mut stack));
    let now = (spill.as_mut_ptr() as usize, spill.capacity());
    if spill.capacity() == 0 {
        // Stored only when they change: the inline-only calls leave the
        // private fields alone.
        if had_heap {
            c.spill = ptr::null_mut();
            c.spill_capacity = 0;
            c.spill_owner = ptr::null();
            live_spills(|live| live.remove(&(cache as usize)));
        }
    } else if !had_heap || now != (c.spill as usize, c.spill_capacity) {
        c.spill = spill.as_mut_ptr();
        c.spill_capacity = spill.capacity();
        c.spill_owner = cache;
        live_spills(|live| live.insert(cache as usize, now));
    }
    result
}

/// Makes `*cache` an empty stack cache: what `NNM_STACK_CACHE_INIT` gives.
/// The storage may be uninitialised: it is not read. If the cache at this
/// address still holds heap (more than NNM_STACK_CACHE_INLINE tensors),
/// that heap is freed first, as by `nnm_stack_cache_clear`, so nothing
/// leaks; a copy of the old struct kept elsewhere is refused from then on.
///
/// Errors: NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn nnm_stack_cache_init(cache: *mut nnm_stack_cache) -> Status {
    guard(|| {
        non_null(cache, "cache")?;
        if let Some((spill, capacity)) = live_spills(|live| live.remove(&(cache as usize))) {
            // SAFETY: nnmem's record says this is the live allocation of
            // `capacity` tensors that a Vec<nnm_tensor> made for the cache
            // at this address; with length 0 only the allocation is freed.
            drop(Vec::from_raw_parts(spill as *mut nnm_tensor, 0, capacity));
        }
        write_out(cache, nnm_stack_cache::default());
        Ok(())
    })
}

/// Pushes a copy of `*tensor` (a shallow copy that never owns: a copy of an
/// owned tensor is stored as NNM_OWNERSHIP_VIEW; nnmem never frees its
/// buffer). The first NNM_STACK_CACHE_INLINE tensors need no heap; past
/// them the stack grows on the heap (see `nnm_stack_cache`).
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not initialised; `ndims`
/// outside 1 to NNM_MAX_DIMS; `dtype`, `mem_kind` or `ownership` out of
/// range); WRONG_STATE (a copy of a cache holding heap); OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn nnm_stack_cache_push(cache: *mut nnm_stack_cache, tensor: *const nnm_tensor) -> Status {
    guard(|| {
        non_null(tensor, "tensor")?;
        // Copied before the push: `tensor` may point into this cache.
        let t = *tensor;
        let ownership = copy_ownership(&t)?;
        with_stack_cache(cache, |stack| stack.push(nnm_tensor { ownership, ..t }))
    })
}

/// Pops the tensor on top of the stack into `out_tensor`; the pop that
/// brings `count` back to NNM_STACK_CACHE_INLINE frees the cache's heap.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not initialised); WRONG_STATE
/// (empty: a pop without a matching push; a copy of a cache holding heap).
#[no_mangle]
pub unsafe extern "C" fn nnm_stack_cache_pop(cache: *mut nnm_stack_cache, out_tensor: *mut nnm_tensor) -> Status {
    guard(|| {
        non_null(out_tensor, "out_tensor")?;
        // Popped into a local, then written: `out_tensor` may point into the
        // cache, which with_stack_cache borrows while the pop runs.
        let mut t = nnm_tensor::default();
        with_stack_cache(cache, |stack| stack.pop_into(&mut t))?;
        write_out(out_tensor, t);
        Ok(())
    })
}

/// Writes the tensor at `index` (0 is the bottom of the stack).
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not initialised, `index` not
/// below `count`); WRONG_STATE (a copy of a cache holding heap).
#[no_mangle]
pub unsafe extern "C" fn nnm_stack_cache_get(
    cache: *mut nnm_stack_cache,
    index: usize,
    out_tensor: *mut nnm_tensor,
) -> Status {
    guard(|| {
        non_null(out_tensor, "out_tensor")?;
        let t = with_stack_cache(cache, |stack| {
            stack
                .get(index)
                .ok_or_else(|| Error::invalid(format!("index {index}: the stack cache holds {} tensors", stack.len())))
        })?;
        write_out(out_tensor, t);
        Ok(())
    })
}

/// Writes the number of tensors on the stack (also `cache->count`).
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not initialised); WRONG_STATE
/// (a copy of a cache holding heap).
#[no_mangle]
pub unsafe extern "C" fn nnm_stack_cache_count(cache: *mut nnm_stack_cache, out_count: *mut usize) -> Status {
    guard(|| {
        non_null(out_count, "out_count")?;
        let n = with_stack_cache(cache, |stack| Ok(stack.len()))?;
        write_out(out_count, n);
        Ok(())
    })
}

/// Empties the stack and frees its heap, if any. Needed only for a cache
/// that holds more than NNM_STACK_CACHE_INLINE tensors; harmless on any
/// initialised one.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not initialised); WRONG_STATE
/// (a copy of a cache holding heap).
#[no_mangle]
pub unsafe extern "C" fn nnm_stack_cache_clear(cache: *mut nnm_stack_cache) -> Status {
    guard(|| {
        with_stack_cache(cache, |stack| {
            stack.clear();
            Ok(())
        })
    })
}

#[cfg(test)]
mod tests;
