//! A legacy model's own lists as a net's: list heads in the caller's
//! struct (awnn's `model_t` members), entries in the caller's own type
//! (awnn's `param_t`, `lcache_t`) linked through the `struct list_head`
//! they embed, so that the legacy walks (`list_for_each_entry(p, head,
//! list)`) see the legacy type, while nnmem keeps the names, the lookup,
//! who owns what, and gives each entry back exactly once through the
//! caller's release function. The decisions are `crate::net::linked`'s;
//! here are the pointers: linking and unlinking the caller's nodes, the
//! release calls, and the process-wide records that find a net from one
//! of its adopted heads and from a buffer one of its entries owns.
//!
//! A head nnmem does not know yet is adopted by the first link to it, into
//! a net of its own that nobody holds a handle to (an *implicit* net); a
//! view across two such nets joins them into one, so that a legacy model's
//! lists become one net as its layers are linked, without the model ever
//! naming its lists together. An implicit net gives itself back once only
//! placeholders are left after a detach.

use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::ptr;
use std::sync::Mutex;

use super::args::name_arg;
use super::entries::{link_tail, net_mut, unlink, NetHandle, NetMut, NetState};
use super::{list_head, nnm_net, nnm_tensor};
use crate::ffi::error::{guard, guard_ptr};
use crate::ffi::handle::{check_live, free_handle, into_handle, tagged_ptr};
use crate::net::linked::{Buffer, Key, Linked, OWNS_DATA, OWNS_DIFF};
use crate::net::{Dtype, Kind, MemKind, Net, Ownership, MAX_DIMS};
use crate::status::{Error, Result, Status};

/// The entry owns its data buffer: the release function gives it back.
pub const NNM_OWNS_DATA: u32 = 1;
/// The entry owns its gradient buffer: the release function gives it back.
pub const NNM_OWNS_DIFF: u32 = 2;
const _: () = assert!(NNM_OWNS_DATA == OWNS_DATA && NNM_OWNS_DIFF == OWNS_DIFF);

/// Gives back an entry linked with `nnm_net_link`: called once as
/// `release(ctx, node, owned)`, after `node` left its list (its `next` and
/// `prev` then point to `node` itself), with `owned` the NNM_OWNS_DATA and
/// NNM_OWNS_DIFF bits of the buffers the entry owns. It frees those
/// buffers, and the caller's struct around `node` if the caller allocated
/// it; it must not call nnmem on the same net.
pub type nnm_release_fn = Option<unsafe extern "C" fn(ctx: *mut c_void, node: *mut list_head, owned: u32)>;

/// What the C layer keeps per linked entry.
#[derive(Clone, Copy, Debug)]
pub(super) struct LinkedNode {
    node: *mut list_head,
    release: nnm_release_fn,
    ctx: *mut c_void,
}

/// The caller's head of an adopted list.
#[derive(Clone, Copy, Debug)]
pub(super) struct Head(*mut list_head);

/// A net's adopted lists and their entries.
#[derive(Debug, Default)]
pub(super) struct LinkedLists {
    pub(super) core: Linked<LinkedNode, Head>,
    /// Made by a link to an unknown head: nobody holds its handle, so it
    /// gives itself back once it is spent.
    pub(super) implicit: bool,
}

/// A net, as the records keep it (compared and checked live before use).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct NetPtr(*mut NetHandle);

// SAFETY: the records only hold and compare the pointer under their lock;
// a net is used by one thread at a time, as nnm_net's rules require, and is
// checked live in the handle registry before it is used.
unsafe impl Send for NetPtr {}

/// Adopted head -> its net.
static HEADS: Mutex<Option<HashMap<Key, NetPtr>>> = Mutex::new(None);
/// Buffer a linked entry owns -> its net.
static BUFFERS: Mutex<Option<HashMap<Key, NetPtr>>> = Mutex::new(None);
/// Node of a linked entry -> its net: a node is linked to one net at most.
static NODES: Mutex<Option<HashMap<Key, NetPtr>>> = Mutex::new(None);

fn record<R>(which: &Mutex<Option<HashMap<Key, NetPtr>>>, f: impl FnOnce(&mut HashMap<Key, NetPtr>) -> R) -> R {
    let mut guard = which.lock().unwrap_or_else(|p| p.into_inner());
    let result = f(guard.get_or_insert_with(HashMap::new));
    // Nothing of nnmem's stays allocated once no list is adopted.
    if guard.as_ref().is_some_and(HashMap::is_empty) {
        *guard = None;
    }
    result
}

/// The live net that adopted the head `list`, if any (`list` is not read).
pub(super) fn net_of_adopted(list: *const list_head) -> Option<*mut NetHandle> {
    let net = record(&HEADS, |heads| heads.get(&(list as Key)).copied())?;
    check_live(net.0, "net").ok().map(|()| net.0)
}

/// The live net whose linked entry owns `buffer`, if any.
fn net_owning(buffer: Key) -> Option<*mut NetHandle> {
    let net = record(&BUFFERS, |buffers| buffers.get(&buffer).copied())?;
    check_live(net.0, "net").ok().map(|()| net.0)
}

impl Drop for LinkedLists {
    fn drop(&mut self) {
        let owned: Vec<Key> = self.core.owned_buffers().collect();
        record(&BUFFERS, |buffers| {
            owned.iter().for_each(|b| {
                buffers.remove(b);
            })
        });
        let nodes: Vec<Key> = self.core.nodes().collect();
        record(&NODES, |n| {
            nodes.iter().for_each(|k| {
                n.remove(k);
            })
        });
        let (entries, heads) = self.core.take_all();
        for (_, entry) in entries {
            // SAFETY: a linked entry of this net: its node is in one of the
            // net's adopted lists, whose nodes the caller keeps writable
            // while they are linked (nnm_net_link's promise).
            unsafe { give_back(entry.value, entry.owned) };
        }
        for (head, Head(ptr)) in heads {
            record(&HEADS, |h| h.remove(&head));
            // SAFETY: an adopted head, writable while adopted (the
            // promise of nnm_net_link and nnm_net_adopt_list); empty now,
            // it is left an empty list, as the caller first gave it.
            unsafe { ptr.write(list_head { next: ptr, prev: ptr }) };
        }
    }
}

/// Unlinks an entry's node and calls its release function.
///
/// # Safety
/// `node.node` must be linked in a list whose nodes are all writable.
unsafe fn give_back(node: LinkedNode, owned: u32) {
    // SAFETY: the caller's promise.
    unsafe {
        unlink(node.node);
        node.node.write(list_head { next: node.node, prev: node.node });
        if let Some(release) = node.release {
            release(node.ctx, node.node, owned);
        }
    }
}

/// The buffer a descriptor hands over: none for a placeholder, the
/// caller's for borrowed memory. The descriptor's fields are checked as
/// the other calls check them; 0 dimensions (a scalar) are allowed.
fn buffer_of(t: &nnm_tensor, what: &str) -> Result<Buffer> {
    Dtype::from_value(t.dtype)?;
    let kind = MemKind::from_value(t.mem_kind)?;
    let ownership = Ownership::from_value(t.ownership)?;
    if t.ndims as usize > MAX_DIMS {
        return Err(Error::invalid(format!("{what}: ndims {}: at most {MAX_DIMS}", t.ndims)));
    }
    if t.data.is_null() || kind == MemKind::Placeholder {
        return Ok(Buffer::default());
    }
    Ok(Buffer { address: t.data as Key, borrowed: ownership == Ownership::Borrowed })
}

/// Makes `head` (an empty, initialised list) one of `net`'s lists.
///
/// # Safety
/// `head` must be valid for reading and writing a `list_head` while it is
/// adopted; `net` a live net that no other call uses.
unsafe fn adopt(net: &mut NetMut<'_>, head: *mut list_head) -> Result<()> {
    if head.is_null() {
        return Err(Error::new(Status::NullArgument, "list is NULL"));
    }
    if !head.is_aligned() {
        return Err(Error::invalid(format!("list ({head:p}) is misaligned for a struct list_head")));
    }
    if super::legacy::net_of_anchor(head).is_ok() || net_of_adopted(head).is_some() {
        return Err(Error::invalid(format!("list ({head:p}) is already a list of a live net")));
    }
    // SAFETY: the caller promises a readable head.
    let (next, prev) = unsafe { ((*head).next, (*head).prev) };
    if next != head || prev != head {
        return Err(Error::invalid(format!(
            "list ({head:p}) is not an empty, initialised list head (its next and prev must point to itself): \
             init_list_head it first; a net adopts only empty lists"
        )));
    }
    net.state.linked.core.adopt(head as Key, Head(head))?;
    let handle = NetPtr(net.handle);
    record(&HEADS, |heads| heads.insert(head as Key, handle));
    Ok(())
}

/// Makes the caller's list head `head` one of `net`'s lists, in the
/// caller's storage (a legacy model's own `struct list_head` member):
/// `nnm_net_from_list(head)` finds the net, `nnm_net_link` links the
/// caller's entries to it, `nnm_net_lookup` finds them by name, and
/// `nnm_net_free_list`, `nnm_net_detach` and `nnm_net_free` give them back
/// through their release functions. After `nnm_net_free` the head is an
/// empty list again, the caller's. The head must be empty and initialised
/// (`init_list_head`: its `next` and `prev` point to itself).
///
/// `nnm_net_link` also adopts an unknown head by itself, into a net of its
/// own; this call is for a model that names its lists to one net it
/// holds.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a live net; `head`
/// misaligned, not empty and initialised, or already a list of a live
/// net).
///
/// # Safety
/// `net` must be NULL or a net from `nnm_net_new` (a freed one is refused
/// without being read), and no other call may use it meanwhile. `head` must
/// be NULL or valid for reading and writing a `struct list_head` until the
/// net is freed.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_adopt_list(net: *mut nnm_net, head: *mut list_head) -> Status {
    guard(|| {
        // SAFETY: the caller's promises, argument by argument.
        unsafe {
            let mut net = net_mut(net)?;
            adopt(&mut net, head)
        }
    })
}

/// An implicit net for `head`, not yet known to any net.
///
/// # Safety
/// As [`adopt`].
unsafe fn implicit_net(head: *mut list_head) -> Result<*mut NetHandle> {
    let mut state = NetState::new(Net::new(0));
    state.linked.implicit = true;
    let h = into_handle(NetHandle { public: nnm_net::default(), state });
    // SAFETY: `h` is the live net just made, known to nobody else.
    unsafe {
        for anchor in [
            ptr::addr_of_mut!((*h).public.params),
            ptr::addr_of_mut!((*h).public.outputs),
            ptr::addr_of_mut!((*h).public.inputs),
            ptr::addr_of_mut!((*h).public.caches),
        ] {
            anchor.write(list_head { next: anchor, prev: anchor });
        }
        let adopted = adopt(&mut net_mut(h.cast())?, head);
        if let Err(e) = adopted {
            free_handle(h)?;
            return Err(e);
        }
    }
    Ok(h)
}

/// Whether a join may free this net: an implicit net with no entries of
/// nnmem's own (an attach call through a handle `nnm_net_from_list` gave
/// makes it the caller's to keep).
fn joinable(state: &NetState) -> bool {
    state.linked.implicit && own_lists_empty(state)
}

fn own_lists_empty(state: &NetState) -> bool {
    [Kind::Param, Kind::Output, Kind::Input, Kind::Cache].into_iter().all(|kind| state.core.count(kind) == 0)
}

/// Moves every adopted list and linked entry of the implicit net `from`
/// into `into`, and frees `from`.
///
/// # Safety
/// Both must be live nets that no other call uses; `from` implicit, with
/// nothing in its own four lists.
unsafe fn join(into: *mut NetHandle, from: *mut NetHandle) -> Result<()> {
    // SAFETY: the caller's promise: two distinct live nets, used by no one
    // else; `state` is not C-visible.
    let (into_state, from_state) = unsafe { (&mut (*into).state, &mut (*from).state) };
    let heads: Vec<Key> = from_state.linked.core.lists().map(|(h, _)| h).collect();
    let owned: Vec<Key> = from_state.linked.core.owned_buffers().collect();
    let nodes: Vec<Key> = from_state.linked.core.nodes().collect();
    into_state.linked.core.absorb(&mut from_state.linked.core);
    let to = NetPtr(into);
    record(&HEADS, |h| h.extend(heads.iter().map(|&k| (k, to))));
    record(&BUFFERS, |b| b.extend(owned.iter().map(|&k| (k, to))));
    record(&NODES, |n| n.extend(nodes.iter().map(|&k| (k, to))));
    // SAFETY: `from` is live and now holds nothing.
    unsafe { free_handle(from) }
}

/// Links the caller's entry into `list`: `node` (a `struct list_head`
/// inside the caller's own struct, in no list) goes to the back of the
/// list, named `name` (unique in that list; copied), with the buffers of
/// `data` and `diff` as legacy code hands them over (NULL `data`: an entry
/// with no tensors, such as a layer cache; then `diff` must be NULL too).
/// C code walks the list as its own type (`list_entry(node, my_t, list)`);
/// nnmem gives the entry back exactly once, through `release(ctx, node,
/// owned)`, when it is detached (`nnm_net_detach`, `nnm_net_free_list`)
/// or its net is freed.
///
/// `list` is a list of a live net (adopted with `nnm_net_adopt_list`, or
/// earlier by this call), or an empty, initialised list head nnmem does not
/// know: that head is then adopted into a net of its own that nobody holds
/// a handle to (`nnm_net_from_list(list)` finds it), which gives itself
/// back once only placeholders are left after a detach.
///
/// Ownership is decided from the buffers (the descriptors' `ownership`
/// only says NNM_OWNERSHIP_BORROWED: the caller keeps that buffer):
/// - a data buffer an entry of the net already owns makes this entry a
///   view of that entry (a legacy shallow copy): it owns none of it, shares
///   its gradient buffer or owns one of its own, and is detached with that
///   entry; a buffer owned by an entry of another implicit net joins the
///   two nets into one;
/// - any other data or gradient buffer is adopted: the entry owns it, and
///   `owned` says so to `release`;
/// - a NULL data buffer (or NNM_MEM_KIND_PLACEHOLDER) makes a placeholder,
///   which may own a gradient buffer of its own.
///
/// Descriptors may have 0 dimensions (a scalar); only the buffers are
/// used, and the fields are range-checked.
///
/// Errors: NULL_ARGUMENT (`list`, `name`, `node`, `release`);
/// INVALID_ARGUMENT (a `list` that is neither a list of a live net nor an
/// empty initialised head, a caches or tensors anchor of `nnm_net_new`'s
/// own (use the attach calls there); `list` initialised again while its
/// net still holds entries on it; `node` already linked (to any net) or a
/// list head; a gradient buffer without data descriptor; the same buffer as
/// data and diff; a data buffer that is another entry's gradient; a buffer
/// owned by an entry other than the one viewed, adopted by the net's own
/// attach calls, or owned by a net a view cannot join (two nets join only
/// when one of them is a net nnmem made for a head on its own and holds no
/// entries of the attach calls); out-of-range descriptor fields; a bad
/// name); ALREADY_EXISTS; OUT_OF_MEMORY. Nothing changes on failure
/// (an unknown head is adopted only when the link succeeds), except that
/// two implicit nets a view joined before the failure stay one net.
///
/// # Safety
/// `list` must be NULL, a list of a live net, or valid for reading and
/// writing a `struct list_head` for as long as it is adopted; `node` NULL
/// or valid for reading and writing a `struct list_head` while linked, and
/// the nodes of the list writable. `name` NULL or a NUL-terminated string;
/// `data` and `diff` NULL or valid for reading one descriptor. The net
/// (and a net a view joins it to) must not be used by another call
/// meanwhile. `release` must be safe to call once with `ctx` and `node`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn nnm_net_link(
    list: *mut list_head,
    name: *const c_char,
    node: *mut list_head,
    data: *const nnm_tensor,
    diff: *const nnm_tensor,
    release: nnm_release_fn,
    ctx: *mut c_void,
) -> Status {
    guard(|| {
        // SAFETY: the caller's promises, argument by argument; the
        // descriptors are copied out before anything changes.
        unsafe {
            let name = name_arg(name)?;
            if list.is_null() {
                return Err(Error::new(Status::NullArgument, "list is NULL"));
            }
            if node.is_null() {
                return Err(Error::new(Status::NullArgument, "node is NULL"));
            }
            if !node.is_aligned() {
                return Err(Error::invalid(format!("node ({node:p}) is misaligned for a struct list_head")));
            }
            if release.is_none() {
                return Err(Error::new(Status::NullArgument, "release is NULL"));
            }
            let tensors = match (data.is_null(), diff.is_null()) {
                (true, true) => None,
                (true, false) => {
                    return Err(Error::invalid(
                        "diff without data: an entry with a gradient buffer has a data descriptor",
                    ))
                }
                (false, _) => {
                    let d = buffer_of(&*data, "data")?;
                    let g = if diff.is_null() { Buffer::default() } else { buffer_of(&*diff, "diff")? };
                    Some([d, g])
                }
            };
            if let Ok((_, kind)) = super::legacy::net_of_anchor(list) {
                return Err(Error::invalid(format!(
                    "list is the {} anchor of a net made by nnm_net_new: its entries are nnmem's (the attach \
                     calls); nnm_net_link links to lists the caller adopted",
                    kind.what()
                )));
            }
            let linked_elsewhere =
                record(&NODES, |n| n.get(&(node as Key)).copied()).is_some_and(|h| check_live(h.0, "net").is_ok());
            if linked_elsewhere || net_of_adopted(node).is_some() || super::legacy::net_of_anchor(node).is_ok() {
                return Err(Error::invalid(format!(
                    "node ({node:p}) is already linked: the node of an entry or a list head of a live net"
                )));
            }
            let (mut net, made) = match net_of_adopted(list) {
                Some(h) => {
                    refuse_reinitialised(&net_mut(h.cast())?, list)?;
                    (h, false)
                }
                None => (implicit_net(list)?, true),
            };
            let original = net;
            let linked = link_into(&mut net, list, name, node, tensors, LinkedNode { node, release, ctx });
            // A net made for this link, and not joined to another, goes again.
            if linked.is_err() && made && net == original && check_live(net, "net").is_ok() {
                free_handle(net)?;
            }
            linked
        }
    })
}

/// The rest of `nnm_net_link`, once the net of `list` is known: joins the
/// net of a viewed buffer first, then links.
///
/// # Safety
/// As `nnm_net_link`; `*net` a live net that adopted `list`.
unsafe fn link_into(
    net: &mut *mut NetHandle,
    list: *mut list_head,
    name: &[u8],
    node: *mut list_head,
    tensors: Option<[Buffer; 2]>,
    value: LinkedNode,
) -> Result<()> {
    let buffers = tensors.unwrap_or_default();
    for (i, b) in buffers.iter().enumerate() {
        if b.address == 0 {
            continue;
        }
        let Some(other) = net_owning(b.address) else { continue };
        if other == *net {
            continue;
        }
        // SAFETY: both live (checked by `net_owning` and the caller);
        // `state` is not C-visible.
        let (mine, theirs) = unsafe { (joinable(&(*(*net)).state), joinable(&(*other).state)) };
        let shares_data = i == 0 && !b.borrowed;
        match (shares_data, mine, theirs) {
            // SAFETY: two distinct live nets that this call alone uses (the
            // caller's promise covers a net a view joins); the implicit one
            // holds no entries of nnmem's own.
            (true, true, _) => unsafe {
                join(other, *net)?;
                *net = other;
            },
            // SAFETY: as above, the other way round.
            (true, false, true) => unsafe { join(*net, other)? },
            (true, false, false) => {
                return Err(Error::invalid(format!(
                    "data buffer ({:#x}) is owned by an entry of another net that a view cannot join (one made by \
                     nnm_net_new, or holding entries of its own attach calls): a view joins two nets only when one \
                     of them is a net nnmem made for a head on its own",
                    b.address
                )))
            }
            _ => {
                return Err(Error::invalid(format!(
                    "{} buffer ({:#x}) is owned by an entry of another net: only a view, which shares a data \
                     buffer, joins two nets",
                    if i == 0 { "data" } else { "diff" },
                    b.address
                )))
            }
        }
    }
    // SAFETY: a live net that this call alone uses.
    let net_mut = unsafe { net_mut((*net).cast()) }?;
    for b in buffers.iter().filter(|b| b.address != 0 && !b.borrowed) {
        if net_mut.state.adopted.contains(&b.address) {
            return Err(Error::invalid(format!(
                "buffer ({:#x}) is already adopted by one of the net's own entries (an attach call): it would be \
                 freed twice",
                b.address
            )));
        }
    }
    net_mut.state.linked.core.link(list as Key, name, node as Key, tensors, value)?;
    let entry = net_mut.state.linked.core.entry(node as Key).expect("just linked");
    let owned: Vec<Key> = [OWNS_DATA, OWNS_DIFF]
        .iter()
        .zip(entry.buffers)
        .filter(|(bit, _)| entry.owned & **bit != 0)
        .map(|(_, b)| b)
        .collect();
    let handle = NetPtr(*net);
    record(&BUFFERS, |b| b.extend(owned.iter().map(|&k| (k, handle))));
    record(&NODES, |n| n.insert(node as Key, handle));
    // SAFETY: an adopted head and a node, writable (the caller's promise).
    unsafe { link_tail(node, list) };
    Ok(())
}

/// Detaches the linked entry at `node` of `net` and the entries that view
/// it, giving each back; an implicit net left spent gives itself back
/// (true: `net` is gone, and must not be used again).
///
/// # Safety
/// `net` a live net that no other call uses; its linked nodes writable.
pub(super) unsafe fn detach_linked(net: &mut NetMut<'_>, node: Key) -> Result<bool> {
    let gone = net.state.linked.core.unlink(node)?;
    let freed: Vec<Key> = gone
        .iter()
        .flat_map(|(_, e)| [OWNS_DATA, OWNS_DIFF].into_iter().zip(e.buffers).filter(|(bit, _)| e.owned & bit != 0))
        .map(|(_, b)| b)
        .collect();
    record(&BUFFERS, |b| {
        freed.iter().for_each(|k| {
            b.remove(k);
        })
    });
    record(&NODES, |n| {
        for (k, _) in &gone {
            n.remove(k);
        }
    });
    for (_, entry) in gone {
        // SAFETY: linked until now, in a list of this net (the caller's
        // promise); `unlink` above only changed nnmem's records.
        unsafe { give_back(entry.value, entry.owned) };
    }
    free_if_spent(net)
}

/// Gives an implicit net back once it is spent (true: it is gone).
fn free_if_spent(net: &mut NetMut<'_>) -> Result<bool> {
    if net.state.linked.implicit && net.state.linked.core.spent() && own_lists_empty(net.state) {
        // SAFETY: a live net; nothing refers to it once this call returns
        // (an implicit net's handle is nobody's), and the caller uses
        // `net` no more (it is told so).
        unsafe { free_handle(net.handle) }?;
        return Ok(true);
    }
    Ok(false)
}

/// INVALID_ARGUMENT when the caller's head `list` reads as an empty list
/// although the net holds entries on it: the caller initialised it again
/// (a model made anew at the same address without freeing the old one);
/// linking to it, or unlinking its old nodes, would corrupt both.
fn refuse_reinitialised(net: &NetMut<'_>, list: *mut list_head) -> Result<()> {
    let held = net.state.linked.core.list_len(list as Key);
    // SAFETY: an adopted head, readable while adopted (the caller's
    // promise).
    let (next, prev) = unsafe { ((*list).next, (*list).prev) };
    if held > 0 && next == list && prev == list {
        return Err(Error::invalid(format!(
            "list ({list:p}) was initialised again while its net still holds {held} entries on it (a model made \
             anew at the same address without freeing its lists first): free the list before initialising its head"
        )));
    }
    Ok(())
}

/// Detaches and gives back every entry linked to the adopted list `list`,
/// in the order they were linked (with each, the entries elsewhere that
/// view it): what legacy code's "free all params of this list" does. The
/// list is empty afterwards, still adopted by its net; a net nnmem made
/// for a head on its own (see `nnm_net_link`) gives itself back once only
/// placeholders are left, leaving its heads empty lists. An empty
/// initialised head nnmem does not know is a list with no entries: nothing
/// to do.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (`list` is an anchor of a net
/// made by nnm_net_new, whose entries go with `nnm_net_detach` or
/// `nnm_net_free`; or neither a list of a live net nor an empty
/// initialised head).
///
/// # Safety
/// `list` must be NULL, a list of a live net, or valid for reading a
/// `struct list_head`; the net (and the nodes of its lists) used by no
/// other call meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_free_list(list: *mut list_head) -> Status {
    guard(|| {
        if list.is_null() {
            return Err(Error::new(Status::NullArgument, "list is NULL"));
        }
        if let Ok((_, kind)) = super::legacy::net_of_anchor(list) {
            return Err(Error::invalid(format!(
                "list is the {} anchor of a net made by nnm_net_new: detach its entries with nnm_net_detach, or \
                 free the net",
                kind.what()
            )));
        }
        let Some(handle) = net_of_adopted(list) else {
            // SAFETY: the caller promises a readable head.
            let (next, prev) = unsafe { ((*list).next, (*list).prev) };
            if next == list && prev == list {
                return Ok(());
            }
            return Err(Error::invalid(format!(
                "list ({list:p}) is neither a list of a live net nor an empty list head: nnmem frees only entries \
                 it linked"
            )));
        };
        // SAFETY: a live net (found in the records), which this call alone
        // uses (the caller's promise).
        let mut net = unsafe { net_mut(handle.cast()) }?;
        refuse_reinitialised(&net, list)?;
        for node in net.state.linked.core.entries_of(list as Key)? {
            // A viewer detached with its entry earlier in this loop is gone.
            if net.state.linked.core.entry(node).is_none() {
                continue;
            }
            // SAFETY: linked nodes of this net; the net may give itself back
            // in this call, and is used no more once it did.
            if unsafe { detach_linked(&mut net, node)? } {
                break;
            }
        }
        Ok(())
    })
}

/// The entry named `name` on the list `list`, as its node: a list of a
/// live net, its own anchors (`&net->params`: `&param->node`, and so on)
/// or an adopted list (the node linked with `nnm_net_link`). C code gets
/// its entry back with `list_entry(node, type, member)`. O(1). NULL when
/// there is none or on bad arguments, with the reason in
/// `nnm_last_error()`.
///
/// # Safety
/// `list` may be any pointer value (it is compared with nnmem's records,
/// not read); `name` NULL or a NUL-terminated string. The net must not be
/// changed by another call meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_net_lookup(list: *const list_head, name: *const c_char) -> *mut list_head {
    guard_ptr(|| {
        // SAFETY: the caller's promises.
        let name = unsafe { name_arg(name) }?;
        if list.is_null() {
            return Err(Error::new(Status::NullArgument, "list is NULL"));
        }
        if let Ok((handle, kind)) = super::legacy::net_of_anchor(list) {
            // SAFETY: a live net (the registry says so), unchanged meanwhile.
            let net = unsafe { tagged_ptr(handle, "net")? };
            // SAFETY: as above; `state` is not C-visible.
            let state = unsafe { &(*net).state };
            return match state.core.get(kind, name) {
                Some(entry) => Ok(entry.as_ptr().cast::<list_head>()),
                None => Err(crate::net::names::not_found(kind.what(), name)),
            };
        }
        let Some(handle) = net_of_adopted(list) else {
            return Err(Error::invalid(format!("list ({list:p}) is not a list of a live net")));
        };
        // SAFETY: a live net, unchanged meanwhile; `state` is not C-visible.
        let state = unsafe { &(*handle).state };
        let key = state.linked.core.lookup(list as Key, name)?;
        Ok(state.linked.core.entry(key).expect("a looked-up entry exists").value.node)
    })
}

#[cfg(test)]
#[path = "linked/tests.rs"]
mod tests;
