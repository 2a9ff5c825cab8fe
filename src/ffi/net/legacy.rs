//! What a legacy layer library's glue needs so that it keeps no state of
//! its own: the net back from one of its list heads (the only thing legacy
//! layers pass around), an attach by list head that takes the legacy
//! tensors as they are (whole shape, who owns them) with the caller's
//! pointer, stack caches as net caches, and single entries detached.

use std::ffi::{c_char, c_void};
use std::mem::offset_of;
use std::ptr::{self, addr_of_mut};

use super::args::{name_arg, one, write_after};
use super::buffers::{borrowed_pair, memory_kind, placeholder};
use super::entries::{net_mut, CacheStorage, Entry, LayerEntry, NetHandle, NetMut, TensorEntry, TensorPublic};
use super::stack_cache::with_stack_cache;
use super::{
    attach, list_head, nnm_cache, nnm_free_fn, nnm_layer_data, nnm_net, nnm_param, nnm_stack_cache, nnm_tensor,
};
use crate::ffi::error::{guard, guard_ptr};
use crate::ffi::handle::check_live;
use crate::net::{Dtype, Kind, MemKind, Ownership, Shape, MAX_DIMS};
use crate::status::{Error, Result, Status};

/// The live net whose list anchor `list` is, and which list: `list` minus
/// each anchor's offset is looked up in nnmem's registry of live handles,
/// and never read.
pub(super) fn net_of_anchor(list: *const list_head) -> Result<(*mut NetHandle, Kind)> {
    if list.is_null() {
        return Err(Error::new(Status::NullArgument, "list is NULL"));
    }
    let anchors = [
        (Kind::Param, offset_of!(nnm_net, params)),
        (Kind::Output, offset_of!(nnm_net, outputs)),
        (Kind::Input, offset_of!(nnm_net, inputs)),
        (Kind::Cache, offset_of!(nnm_net, caches)),
    ];
    for (kind, offset) in anchors {
        // Address arithmetic only: `wrapping_sub` reads nothing.
        let candidate = list.cast::<u8>().wrapping_sub(offset).cast::<NetHandle>();
        if check_live(candidate, "net").is_ok() {
            return Ok((candidate.cast_mut(), kind));
        }
    }
    Err(Error::invalid(format!(
        "list ({list:p}) is not a list head of a live nnm_net (&net->params, &net->outputs, &net->inputs or \
         &net->caches)"
    )))
}

/// The net whose list head `list` is: one of `&net->params`,
/// `&net->outputs`, `&net->inputs` and `&net->caches` of a live net, or a
/// caller's head a live net adopted (`nnm_net_adopt_list`, `nnm_net_link`).
/// NULL when it is none of them (a NULL, freed, foreign or misaligned
/// pointer, a copy of a list head, an entry's node), with the reason in
/// `nnm_last_error()`.
///
/// `list` is never read: it is compared, minus each anchor's offset, with
/// nnmem's registry of live nets, and with its record of adopted heads. So
/// any pointer value is safe to pass, and
/// the answer is exact, except that an anchor of a freed net whose address
/// a new net took over is that new net's (as with any handle).
///
/// Thread safety: safe from any thread, at any time (it reads no net).
///
/// # Safety
/// None: `list` may be any pointer value.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_from_list(list: *const list_head) -> *mut nnm_net {
    guard_ptr(|| match net_of_anchor(list) {
        Ok((net, _)) => Ok(net.cast::<nnm_net>()),
        Err(e) => super::linked::net_of_adopted(list).map(|net| net.cast::<nnm_net>()).ok_or(e),
    })
}

/// Attaches a param, output or input to the list `list` (`&net->params`,
/// `&net->outputs` or `&net->inputs` of a live net; see
/// `nnm_net_from_list`), from tensor descriptors as a legacy layer
/// library hands them over, with the caller's pointer `user` (stored in the
/// entry's `user`, never read). The shape is `data`'s `dtype`, `ndims` and
/// `dims` (its `bytes` and `elem_size` are recomputed, not read); for an
/// output or input, `dims[0]` is the batch: on a net made with max_batch 0
/// the first such attach decides the net's batch size (`net->max_batch`),
/// and every later one must have the same. `data->ownership` says where
/// the buffers come from:
///
/// - NNM_OWNERSHIP_OWNED with `data->data` NULL: nnmem allocates data and
///   diff, as `nnm_net_attach_param` (params and outputs);
/// - NNM_OWNERSHIP_OWNED with `data->data` set: the net adopts `data->data`
///   and `diff->data` with `free_fn(ctx, ptr)`, as
///   `nnm_net_attach_param_adopted` (`mem_kind` host; params and outputs;
///   a param's `diff` may be NULL or have NULL `data`: a placeholder); on
///   the inputs list, as NNM_OWNERSHIP_VIEW (a legacy shallow copy of an
///   output keeps the output's OWNED, and an input owns nothing): its
///   `diff` is NULL, has NULL `data`, or is the output's;
/// - NNM_OWNERSHIP_BORROWED with `data->data` set: the caller's memory of
///   `data->mem_kind` (host or device), never freed, as
///   `nnm_net_attach_param_borrowed` (any of the three lists; `diff` NULL
///   or with NULL `data`: a placeholder diff);
/// - NNM_OWNERSHIP_BORROWED with `data->data` NULL: an input placeholder,
///   as `nnm_net_attach_input_placeholder` (inputs only; `diff` NULL or
///   with NULL `data`: a placeholder has no gradient buffer of its own);
/// - NNM_OWNERSHIP_VIEW: an input that views the output of this net whose
///   data buffer is `data->data` (a legacy shallow copy of that output),
///   as `nnm_net_attach_input_view`; the rest of `data` and `diff` are not
///   read (inputs only; O(outputs)).
///
/// `free_fn` and `ctx` are used for adoption only. The entry's node goes
/// to the back of the list and to `*out_node` when that is not NULL
/// (`list_entry(node, nnm_param, node)` is the entry). Like the calls it
/// stands for, it changes nothing when it fails (an adopting call adopts
/// nothing then).
///
/// Errors: NULL_ARGUMENT (`list`, `name`, `data`; `free_fn` or an output's
/// `diff` when adopting); INVALID_ARGUMENT (`list` not a tensor list head
/// of a live net, the caches list included; an out-of-range dtype,
/// ownership or mem_kind; bad dims; a batch dimension that differs from the
/// net's; an ownership the list does not take; adopting device memory, the
/// same buffer twice, or a buffer the net already adopted; a view of no
/// output of this net; an input's `diff` buffer that is not its output's
/// or is given to a placeholder, which the net would neither use nor free;
/// a bad name); ALREADY_EXISTS; OVERFLOW;
/// OUT_OF_MEMORY.
///
/// # Safety
/// `list` may be any pointer value (see `nnm_net_from_list`); the net it
/// belongs to must not be used by another call meanwhile. `name` must be
/// NULL or a NUL-terminated string; `data` and `diff` NULL or valid for
/// reading one descriptor; `out_node` NULL or valid for writing one
/// pointer. When adopting, `free_fn` must be safe to call once on each
/// buffer with `ctx`, from `nnm_net_free` or `nnm_net_detach`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn nnm_net_attach_tensors(
    list: *mut list_head,
    name: *const c_char,
    data: *const nnm_tensor,
    diff: *const nnm_tensor,
    free_fn: nnm_free_fn,
    ctx: *mut c_void,
    user: *mut c_void,
    out_node: *mut *mut list_head,
) -> Status {
    guard(|| {
        // SAFETY: the caller's promises, argument by argument: `list` is
        // resolved through the registry before the net is used, and the
        // descriptors are copied out before anything changes.
        unsafe {
            write_after(out_node, "out_node", || {
                let (handle, kind) = net_of_anchor(list)?;
                let mut net = net_mut(handle.cast::<nnm_net>())?;
                let name = name_arg(name)?;
                let data = *one(data, "data")?;
                let diff = if diff.is_null() { None } else { Some(*one(diff, "diff")?) };
                let tensors = Described { data, diff, free_fn, ctx, user };
                match kind {
                    Kind::Param => Ok(tensors.attach::<nnm_param>(&mut net, kind, name)?.cast()),
                    Kind::Output | Kind::Input => Ok(tensors.attach::<nnm_layer_data>(&mut net, kind, name)?.cast()),
                    Kind::Cache => Err(Error::invalid(
                        "list is a net's caches: attach caches with nnm_net_attach_cache or \
                         nnm_net_attach_stack_cache",
                    )),
                }
            })
        }
    })
}

/// The arguments of `nnm_net_attach_tensors` past the list and the name.
struct Described {
    data: nnm_tensor,
    diff: Option<nnm_tensor>,
    free_fn: nnm_free_fn,
    ctx: *mut c_void,
    user: *mut c_void,
}

impl Described {
    fn attach<P: TensorPublic>(self, net: &mut NetMut<'_>, kind: Kind, name: &[u8]) -> Result<*mut P>
    where
        TensorEntry<P>: Entry,
    {
        let data = self.data;
        let ownership = Ownership::from_value(data.ownership)?;
        if ownership == Ownership::View && kind != Kind::Input {
            return Err(Error::invalid(format!(
                "data has ownership NNM_OWNERSHIP_VIEW: only an input views an output, not a {}",
                kind.what()
            )));
        }
        // An input never owns: a legacy shallow copy of an output still says
        // OWNED, and is a view of it.
        let entry: *mut P = if kind == Kind::Input && ownership != Ownership::Borrowed {
            let output = viewed_output(net, data.data, ownership)?;
            if ownership == Ownership::Owned {
                // A shallow copy's diff is the output's: any other buffer
                // would be neither used nor freed.
                // SAFETY: a live entry of this net, which no other call
                // uses; read in place.
                let output_diff = unsafe { (*output).buffers[1] };
                self.refuse_own_diff(
                    output_diff,
                    "views an output, whose gradient buffer it shares",
                    "the output's diff",
                )?;
            }
            net.attach_view(name, output)?.cast::<P>()
        } else {
            if kind == Kind::Input && data.data.is_null() {
                self.refuse_own_diff(
                    ptr::null_mut(),
                    "is a placeholder, which has no gradient buffer of its own",
                    "NULL",
                )?;
            }
            let ndims = data.ndims as usize;
            if ndims > MAX_DIMS {
                return Err(Error::invalid(format!(
                    "data has ndims {ndims}: a tensor has at most {MAX_DIMS} dimensions"
                )));
            }
            if ndims == 0 && kind != Kind::Param {
                return Err(Error::invalid(format!(
                    "data has ndims 0: an {}'s first dimension is its batch, so it has at least 1 (a scalar is a param)",
                    kind.what()
                )));
            }
            let shape = Shape::new(Dtype::from_value(data.dtype)?, &data.dims[..ndims])?;
            let batch = if kind == Kind::Param { None } else { net.state.core.take_batch(shape.dims()[0])? };
            let diff = self.diff.map_or(ptr::null_mut(), |d| d.data);
            let entry = self.buffers::<P>(net, kind, name, ownership, shape, diff)?;
            if let Some(batch) = batch {
                net.state.core.set_batch(batch);
                // SAFETY: a live net that no other call uses; a field's
                // address, through the handle, as the anchors are reached.
                unsafe { addr_of_mut!((*net.handle).public.max_batch).write(batch) };
            }
            entry
        };
        // SAFETY: just attached: a live entry of this net, which no other
        // call uses; `P` is the entry's C type (the list's).
        unsafe { (*entry).set_user(self.user) };
        Ok(entry)
    }

    /// Refuses a `diff` buffer an input cannot take (one other than
    /// `allowed`, which it would neither use nor free): the input `why`.
    fn refuse_own_diff(&self, allowed: *mut c_void, why: &str, remedy: &str) -> Result<()> {
        match self.diff {
            Some(d) if !d.data.is_null() && d.data != allowed => Err(Error::invalid(format!(
                "diff->data ({:p}) of an input that {why}: pass {remedy}, or a diff with NULL data (nothing was \
                 attached; the buffer is still the caller's)",
                d.data
            ))),
            _ => Ok(()),
        }
    }

    /// The entry of data and diff buffers as `ownership` and `data->data`
    /// say (a view excepted).
    fn buffers<P: TensorPublic>(
        &self,
        net: &mut NetMut<'_>,
        kind: Kind,
        name: &[u8],
        ownership: Ownership,
        shape: Shape,
        diff: *mut c_void,
    ) -> Result<*mut P>
    where
        TensorEntry<P>: Entry,
    {
        let data = self.data.data;
        match (ownership, data.is_null()) {
            (Ownership::Owned, true) => net.attach_owned(kind, name, shape),
            (Ownership::Owned, false) => {
                if memory_kind(self.data.mem_kind)? != MemKind::Host {
                    return Err(Error::invalid(
                        "data is device memory with ownership NNM_OWNERSHIP_OWNED: a net adopts host buffers only",
                    ));
                }
                net.attach_adopted(kind, name, shape, [data, diff], self.free_fn, self.ctx)
            }
            (Ownership::Borrowed, false) => {
                let mem = memory_kind(self.data.mem_kind)?;
                net.state.core.check_new(kind, name)?;
                let [data, diff] = borrowed_pair(&shape, mem, data, diff);
                net.add_tensors(kind, name, shape, [(None, data), (None, diff)])
            }
            (Ownership::Borrowed, true) if kind == Kind::Input => {
                net.state.core.check_new(kind, name)?;
                let empty = placeholder(&shape);
                net.add_tensors(kind, name, shape, [(None, empty), (None, empty)])
            }
            (Ownership::Borrowed, true) => Err(Error::new(
                Status::NullArgument,
                format!(
                    "data->data is NULL with ownership NNM_OWNERSHIP_BORROWED: a {} of caller memory needs it \
                     (placeholders are inputs)",
                    kind.what()
                ),
            )),
            (Ownership::View, _) => unreachable!("views are attached by `attach`"),
        }
    }
}

/// The output of `net` whose data buffer is `data`, for an input described
/// with `ownership` (VIEW or OWNED).
fn viewed_output(net: &NetMut<'_>, data: *mut c_void, ownership: Ownership) -> Result<*mut LayerEntry> {
    // SAFETY: the net's entries are live, and no other call uses the net;
    // each is read in place, and the pointer kept is the net's own.
    let found =
        net.state.outputs.ptrs().iter().copied().find(|&o| !data.is_null() && unsafe { (*o).buffers[0] } == data);
    found.ok_or_else(|| {
        Error::invalid(format!(
            "data ({data:p}) of an input with ownership NNM_OWNERSHIP_{} is the data buffer of no output of this \
             net: an input owns nothing (it views an output, or is a placeholder or caller memory)",
            ownership.name().to_ascii_uppercase()
        ))
    })
}

/// Attaches a cache named `name` that is an `nnm_stack_cache`: `cache`, in
/// the caller's storage, or, when `cache` is NULL, one nnmem makes (empty,
/// freed with its heap by `nnm_net_free` or `nnm_net_detach`). The entry
/// (at the back of `net->caches`, and to `*out_cache` when that is not
/// NULL) has `stack` pointing to it and `user` set to `user` (never read).
/// The same calls then work through both: `nnm_stack_cache_*` on
/// `entry->stack`, and `nnm_cache_push`, `nnm_cache_pop`,
/// `nnm_cache_count` and `nnm_cache_clear` on the entry
/// (`nnm_cache_push_new` is refused: a stack cache holds descriptors
/// only). `nnm_net_get_report` counts its tensors as referenced.
///
/// A caller's `cache` must be a valid stack cache (zero-filled or
/// initialised; it keeps what it holds) that stays valid, at the same
/// address, while it is attached; nnmem never frees it nor its heap:
/// after `nnm_net_free` or `nnm_net_detach` it is the caller's standalone
/// cache again.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (name; not a live net; `cache`
/// not a valid stack cache, or already a cache of this net);
/// ALREADY_EXISTS; WRONG_STATE (`cache` is a copy of a cache holding
/// heap); OUT_OF_MEMORY.
///
/// # Safety
/// `net` must be NULL or a net from `nnm_net_new` (a freed one is refused
/// without being read), and no other call may use it meanwhile. `name`
/// must be NULL or a NUL-terminated string; `cache` NULL or valid for
/// reading and writing an `nnm_stack_cache` while it is attached;
/// `out_cache` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_attach_stack_cache(
    net: *mut nnm_net,
    name: *const c_char,
    cache: *mut nnm_stack_cache,
    user: *mut c_void,
    out_cache: *mut *mut nnm_cache,
) -> Status {
    // SAFETY: the caller's promises, argument by argument.
    unsafe {
        attach(net, name, (out_cache, "out_cache"), |net, name| {
            if !cache.is_null() {
                with_stack_cache(cache, |stack| Ok(stack.len()))?;
                if net.state.caches.iter().any(|c| ptr::eq(c.backing, cache)) {
                    return Err(Error::invalid(format!("stack cache {cache:p} is already a cache of this net")));
                }
            }
            let storage = if cache.is_null() { CacheStorage::NewStackCache } else { CacheStorage::StackCache(cache) };
            net.add_cache(name, storage, user)
        })
    }
}

/// Detaches the entry whose node is `node` (`&entry->node` of a param,
/// output, input or cache of `net`) and frees it, with every buffer it
/// owns: those nnmem allocated, and those it adopted (through their
/// `free_fn`, once). Views, borrowed memory and placeholders are never
/// freed, and a cache backed by the caller's stack cache leaves that cache
/// (and its heap) to the caller; one nnmem made is freed with its heap.
/// The name is free again in its list; the entry pointer is invalid from
/// then on (using it, or a getter's copy of it, is undefined).
///
/// A caller's entry linked with `nnm_net_link` goes with the entries that
/// view it (views first), each given back once through its release
/// function; a net nobody holds (see `nnm_net_link`) may give itself back
/// then, once only placeholders are left.
///
/// `node` is compared with the net's entries before it is read: a pointer
/// that is none of them is refused. O(entries).
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a live net; `node` is not
/// the node of one of its entries: already detached, another net's, or not
/// an entry); WRONG_STATE (an output of the attach calls that inputs still
/// view: detach them first).
///
/// # Safety
/// `net` must be NULL or a live net (from `nnm_net_new` or
/// `nnm_net_from_list`; a freed one is refused without being read), and no
/// other call may use it or its entries meanwhile. `node` may be any
/// pointer value.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_detach(net: *mut nnm_net, node: *mut list_head) -> Status {
    guard(|| {
        // SAFETY: the caller promises `net` is NULL, freed or foreign (the
        // registry refuses those) or a live net no other call uses.
        let mut net = unsafe { net_mut(net) }?;
        crate::ffi::args::non_null(node, "node")?;
        if net.state.linked.core.entry(node as usize).is_some() {
            // SAFETY: a node linked to one of this net's adopted lists,
            // which the caller keeps writable while linked.
            return unsafe { super::linked::detach_linked(&mut net, node as usize) }.map(|_| ());
        }
        net.detach(node)
    })
}

#[cfg(test)]
mod tests;
