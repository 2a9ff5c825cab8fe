//! The net's hidden state and its entries: one generic path that boxes an
//! entry, indexes its name and links it into its list, for params, layer
//! outputs and inputs, and caches alike; one generic owner that frees them.
//!
//! Every entry is a `#[repr(C)]` struct whose first field is the C-visible
//! part (`nnm_param`, `nnm_layer_data`, `nnm_cache`), whose first field in
//! turn is the list node; it is boxed as a tagged, unregistered handle
//! ([`Handle::boxed`]), so `nnm_cache_*` and the lookups check its type tag
//! only, and the net frees it. The nodes and the net's anchors point into
//! each other, so the anchors (`NetHandle::public`) are reached through raw
//! pointers only: Rust references cover the hidden state, never them.

use std::ffi::{c_char, c_void, CString};
use std::mem::offset_of;
use std::ptr::{self, addr_of_mut, NonNull};

use super::buffers::{borrowed_pair, owned_tensor, Adopted, Held, HostBuffer};
use super::stack_cache::with_stack_cache;
use super::{list_head, nnm_cache, nnm_free_fn, nnm_layer_data, nnm_net, nnm_param, nnm_stack_cache, nnm_tensor};
use crate::ffi::handle::{check_live, free_unregistered, tagged_mut, tagged_ptr, tagged_ref, Handle, HandleType};
use crate::net::{Bytes, CacheStack, Kind, MemKind, Net, Ownership, Shape};
use crate::pool::device::SharedAllocator;
use crate::status::{Error, Result, Status};

/// The C struct of a param or a layer entry: the same fields under two C
/// names.
pub(super) trait TensorPublic: Copy {
    fn new(name: *const c_char, data: nnm_tensor, diff: nnm_tensor) -> Self;
    fn set_name(&mut self, name: *const c_char);
    fn set_user(&mut self, user: *mut c_void);
}

// One constructor, and `Default` from it, for both.
macro_rules! tensor_public {
    ($($t:ident),*) => {$(
        impl TensorPublic for $t {
            fn new(name: *const c_char, data: nnm_tensor, diff: nnm_tensor) -> Self {
                $t { node: list_head::default(), name, data, diff, user: std::ptr::null_mut() }
            }

            fn set_name(&mut self, name: *const c_char) {
                self.name = name;
            }

            fn set_user(&mut self, user: *mut c_void) {
                self.user = user;
            }
        }

        impl Default for $t {
            fn default() -> Self {
                <$t as TensorPublic>::new(std::ptr::null(), nnm_tensor::default(), nnm_tensor::default())
            }
        }
    )*};
}

tensor_public!(nnm_param, nnm_layer_data);

/// A param or layer entry: C sees `public`; the rest decides what is freed
/// and what a view shares, whatever C writes into the descriptors.
#[repr(C)]
pub(super) struct TensorEntry<P> {
    pub(super) public: P,
    /// The net it belongs to (compared, never read).
    pub(super) net: *const NetHandle,
    /// The data and diff buffers as attached (views of an output share
    /// these; NULL for placeholders).
    pub(super) buffers: [*mut c_void; 2],
    /// The buffers the entry owns and frees.
    owned: [Option<Held>; 2],
    /// The name `public.name` points to.
    pub(super) name: CString,
    /// The shape as attached (`[max_batch, ...]` for layers).
    pub(super) shape: Shape,
    pub(super) kind: Kind,
    /// The bytes it added to the net's report (taken off at detach).
    pub(super) bytes: Bytes,
    /// An input that is a view: the output it views (NULL otherwise).
    pub(super) view_of: *mut TensorEntry<P>,
    /// An output: the inputs that view it (it cannot be detached before them).
    pub(super) views: usize,
}

pub(super) type ParamEntry = TensorEntry<nnm_param>;
pub(super) type LayerEntry = TensorEntry<nnm_layer_data>;

/// A cache entry: C sees `public`, a mirror of `stack`, or of `backing`
/// when that is set.
#[repr(C)]
pub(super) struct CacheEntry {
    pub(super) public: nnm_cache,
    pub(super) stack: CacheStack<nnm_tensor, HostBuffer>,
    /// The name `public.name` points to.
    pub(super) name: CString,
    /// Where `nnm_cache_push_new` allocates: the net's allocator (kept in
    /// step by `nnm_net_set_allocator`).
    pub(super) allocator: SharedAllocator,
    /// The stack cache behind the entry (nnm_net_attach_stack_cache), NULL
    /// for `stack`. Decided here, whatever C writes into `public.stack`.
    pub(super) backing: *mut nnm_stack_cache,
    /// Whether `backing` is nnmem's (a box this entry frees, heap and all)
    /// rather than the caller's (left as it is).
    pub(super) owns_backing: bool,
}

impl Drop for CacheEntry {
    fn drop(&mut self) {
        if self.owns_backing {
            // SAFETY: nnmem boxed this stack cache for the entry
            // (`nnm_net_attach_stack_cache` with no storage) and only the
            // entry frees it, once, here; C's calls on it have returned
            // (the net is being freed or the entry detached).
            unsafe {
                // A cache of nnmem's cannot be a stale copy, so the clear
                // succeeds; were it refused, only its heap would stay.
                let _ = with_stack_cache(self.backing, |stack| {
                    stack.clear();
                    Ok(())
                });
                drop(Box::from_raw(self.backing));
            }
        }
    }
}

// SAFETY: no other handle type is named "nnm_param".
unsafe impl HandleType for ParamEntry {
    const NAME: &'static str = "nnm_param";
}

// SAFETY: no other handle type is named "nnm_layer_data".
unsafe impl HandleType for LayerEntry {
    const NAME: &'static str = "nnm_layer_data";
}

// SAFETY: no other handle type is named "nnm_cache".
unsafe impl HandleType for CacheEntry {
    const NAME: &'static str = "nnm_cache";
}

// An entry's address is its node's: `NetMut::add` links it by that address.
const _: () = assert!(offset_of!(ParamEntry, public) == 0 && offset_of!(nnm_param, node) == 0);
const _: () = assert!(offset_of!(LayerEntry, public) == 0 && offset_of!(nnm_layer_data, node) == 0);
const _: () = assert!(offset_of!(CacheEntry, public) == 0 && offset_of!(nnm_cache, node) == 0);

/// An entry type of the net's lists.
pub(super) trait Entry: HandleType {
    /// The net's entries of `kind`, all of this type.
    fn list(state: &mut NetState, kind: Kind) -> &mut Entries<Self>;
    /// Points the C-visible `name` at the entry's own name. Called once the
    /// entry is boxed: a pointer taken from the `CString` before it moved
    /// into the entry would not be derived from the entry's field (Stacked
    /// Borrows, which Miri checks, invalidates it at the move).
    fn publish_name(&mut self);
}

impl<P: TensorPublic> TensorEntry<P> {
    fn publish_tensor_name(&mut self) {
        self.public.set_name(self.name.as_ptr());
    }
}

impl Entry for ParamEntry {
    fn list(state: &mut NetState, _: Kind) -> &mut Entries<Self> {
        &mut state.params
    }

    fn publish_name(&mut self) {
        self.publish_tensor_name();
    }
}

impl Entry for CacheEntry {
    fn list(state: &mut NetState, _: Kind) -> &mut Entries<Self> {
        &mut state.caches
    }

    fn publish_name(&mut self) {
        self.public.name = self.name.as_ptr();
    }
}

impl Entry for LayerEntry {
    fn publish_name(&mut self) {
        self.publish_tensor_name();
    }

    fn list(state: &mut NetState, kind: Kind) -> &mut Entries<Self> {
        if kind == Kind::Output {
            &mut state.outputs
        } else {
            &mut state.inputs
        }
    }
}

/// The entries of one list, in insertion order, owned by the net: boxed
/// by [`NetMut::add`], freed here, once, with their buffers.
pub(super) struct Entries<E: HandleType>(Vec<*mut E>);

impl<E: HandleType> Entries<E> {
    /// The entries, in order.
    ///
    /// # Safety
    /// No call may change an entry while the references are used.
    pub(super) unsafe fn iter(&self) -> impl Iterator<Item = &E> {
        // SAFETY: every pointer is a live entry of the net (boxed by
        // `NetMut::add`, freed only when the net is), unchanged while the
        // references are used by the caller's promise.
        self.0.iter().map(|&e| unsafe { &*e })
    }
}

impl<E: HandleType> Entries<E> {
    /// The entries' pointers, in order (for reading or changing entries in
    /// place, without a reference that would outlive the change).
    pub(super) fn ptrs(&self) -> &[*mut E] {
        &self.0
    }
}

impl<E: HandleType> Drop for Entries<E> {
    fn drop(&mut self) {
        for &entry in &self.0 {
            // SAFETY: made by `Handle::boxed` in `NetMut::add`, and freed
            // only here, once, with the net.
            unsafe { free_unregistered(entry) }
        }
    }
}

/// The net's Rust state, after the C-visible anchors.
pub(super) struct NetState {
    // Dropped in this order, which is the order adopted buffers are given
    // back to their deallocators: the caller's linked entries first.
    pub(super) linked: super::linked::LinkedLists,
    pub(super) params: Entries<ParamEntry>,
    pub(super) outputs: Entries<LayerEntry>,
    pub(super) inputs: Entries<LayerEntry>,
    pub(super) caches: Entries<CacheEntry>,
    /// Names, with each entry's address as the value: a lookup is one probe.
    pub(super) core: Net<NonNull<c_void>>,
    /// Addresses of the adopted buffers: adopting one twice would free it
    /// twice.
    pub(super) adopted: std::collections::HashSet<usize>,
    /// Where the buffers nnmem allocates for the net come from (host unless
    /// `nnm_net_set_allocator` says otherwise); each buffer holds its own.
    pub(super) allocator: SharedAllocator,
}

impl NetState {
    pub(super) fn new(core: Net<NonNull<c_void>>) -> NetState {
        NetState {
            linked: Default::default(),
            params: Entries(Vec::new()),
            outputs: Entries(Vec::new()),
            inputs: Entries(Vec::new()),
            caches: Entries(Vec::new()),
            core,
            adopted: Default::default(),
            allocator: crate::pool::device::host(),
        }
    }
}

/// What `nnm_net *` points to: the C-visible anchors, then the rest.
#[repr(C)]
pub(super) struct NetHandle {
    pub(super) public: nnm_net,
    pub(super) state: NetState,
}

// SAFETY: no other handle type is named "nnm_net".
unsafe impl HandleType for NetHandle {
    const NAME: &'static str = "nnm_net";
}

/// The anchor of the net's list of `kind`.
///
/// # Safety
/// `h` must point to a live net.
pub(super) unsafe fn anchor(h: *mut NetHandle, kind: Kind) -> *mut list_head {
    // SAFETY: the caller promises a live net; taking a field's address
    // reads nothing and makes no reference.
    unsafe {
        match kind {
            Kind::Param => addr_of_mut!((*h).public.params),
            Kind::Output => addr_of_mut!((*h).public.outputs),
            Kind::Input => addr_of_mut!((*h).public.inputs),
            Kind::Cache => addr_of_mut!((*h).public.caches),
        }
    }
}

/// Links `node` at the back of the list anchored at `head`.
///
/// # Safety
/// `head` must be an initialised list whose nodes are all valid for
/// writes, and `node` valid for writes and in no list.
pub(super) unsafe fn link_tail(node: *mut list_head, head: *mut list_head) {
    // SAFETY: the caller promises every pointer here is writable: `head`,
    // its last node (`head` itself when empty) and `node`.
    unsafe {
        let last = (*head).prev;
        (*node).next = head;
        (*node).prev = last;
        (*last).next = node;
        (*head).prev = node;
    }
}

/// A live net, for the calls that change it: its handle, through which the
/// C-visible anchors are reached, and its Rust state.
pub(super) struct NetMut<'a> {
    pub(super) handle: *mut NetHandle,
    pub(super) state: &'a mut NetState,
}

/// The net behind `net` after NULL, registry (a freed net is refused
/// without being read) and tag checks, for changing it.
///
/// # Safety
/// `net` must be NULL, a freed or foreign pointer, or a live net that no
/// other call uses while the result is used.
pub(super) unsafe fn net_mut<'a>(net: *mut nnm_net) -> Result<NetMut<'a>> {
    let handle = net.cast::<NetHandle>();
    check_live(handle, "net")?;
    // SAFETY: the registry holds `handle` as a live net, so it is readable.
    let handle = unsafe { tagged_ptr(handle, "net") }?;
    // SAFETY: a live net; no other call uses it (the caller's promise), and
    // `state` is not C-visible, so nothing else refers to it.
    let state = unsafe { &mut (*handle).state };
    Ok(NetMut { handle, state })
}

/// The state of the net behind `net` after NULL and tag checks only (for
/// the hot lookups: a freed net is undefined).
///
/// # Safety
/// `net` must be NULL or a live net that no call changes while the result
/// is used.
#[inline(always)]
pub(super) unsafe fn net_ref<'a>(net: *const nnm_net) -> Result<&'a NetState> {
    // SAFETY: the caller promises NULL or a live net, unchanged meanwhile.
    let handle = unsafe { tagged_ptr(net.cast::<NetHandle>(), "net") }?;
    // SAFETY: as above; `state` is not C-visible.
    Ok(unsafe { &(*handle).state })
}

/// The layer entry behind `layer` after NULL and tag checks, for changing
/// it.
///
/// # Safety
/// `layer` must be NULL or an entry of a live net (a freed one is
/// undefined) that no other call uses while the result is used.
pub(super) unsafe fn layer_mut<'a>(layer: *mut nnm_layer_data, what: &str) -> Result<&'a mut LayerEntry> {
    // SAFETY: the caller's promise is `tagged_mut`'s.
    unsafe { tagged_mut(layer.cast::<LayerEntry>(), what) }
}

/// The cache entry behind `cache` after NULL and tag checks only (the hot
/// path).
///
/// # Safety
/// `cache` must be NULL or a cache of a live net (a freed one is undefined)
/// that no other call uses while the result is used.
#[inline(always)]
pub(super) unsafe fn cache_mut<'a>(cache: *mut nnm_cache) -> Result<&'a mut CacheEntry> {
    // SAFETY: the caller's promise is `tagged_mut`'s.
    unsafe { tagged_mut(cache.cast::<CacheEntry>(), "cache") }
}

/// [`cache_mut`] for reading.
///
/// # Safety
/// `cache` must be NULL or a cache of a live net that no call changes
/// while the result is used.
#[inline(always)]
pub(super) unsafe fn cache_ref<'a>(cache: *const nnm_cache) -> Result<&'a CacheEntry> {
    // SAFETY: the caller's promise is `tagged_ref`'s.
    unsafe { tagged_ref(cache.cast::<CacheEntry>(), "cache") }
}

#[cold]
#[inline(never)]
fn no_memory_for(kind: Kind) -> Error {
    let article = if matches!(kind, Kind::Output | Kind::Input) { "an" } else { "a" };
    Error::new(Status::OutOfMemory, format!("no memory for {article} {} entry", kind.what()))
}

impl NetMut<'_> {
    /// Boxes the entry `make` builds around its name (as a C string), adds
    /// it to the name index as a `kind` with `bytes`, and links it at the
    /// back of its list: all or nothing (on failure the entry is freed and
    /// the net is as it was).
    pub(super) fn add<E: Entry>(
        &mut self,
        kind: Kind,
        name: &[u8],
        bytes: Bytes,
        make: impl FnOnce(CString) -> E,
    ) -> Result<*mut E> {
        E::list(self.state, kind).0.try_reserve(1).map_err(|_| no_memory_for(kind))?;
        let entry = Handle::boxed(make(CString::new(name).expect("a name read from a C string has no NUL")));
        // SAFETY: boxed just above, known to nothing else yet.
        unsafe { (*entry).publish_name() };
        let address = NonNull::new(entry.cast::<c_void>()).expect("a Box is never NULL");
        if let Err(e) = self.state.core.add(kind, name, bytes, address) {
            // SAFETY: boxed just above and known to nothing else.
            unsafe { free_unregistered(entry) };
            return Err(e);
        }
        E::list(self.state, kind).0.push(entry);
        // SAFETY: the anchor of `kind` is an initialised list (nnm_net_new)
        // of this live net, whose nodes are its live entries; the new
        // entry's node is at its address (asserted above), in no list yet.
        unsafe { link_tail(entry.cast::<list_head>(), anchor(self.handle, kind)) };
        Ok(entry)
    }

    /// Adds a param or layer entry of `kind` whose data and diff are
    /// `pair`, with the buffers in `pair` that it will own: all or nothing.
    /// On failure, buffers nnmem allocated are freed and adopted ones are
    /// left to the caller ([`Held::give_back`]).
    pub(super) fn add_tensors<P: TensorPublic>(
        &mut self,
        kind: Kind,
        name: &[u8],
        shape: Shape,
        pair: [(Option<Held>, nnm_tensor); 2],
    ) -> Result<*mut P>
    where
        TensorEntry<P>: Entry,
    {
        let [(data_held, data), (diff_held, diff)] = pair;
        let mut bytes = Bytes::default();
        for (t, held) in [(&data, &data_held), (&diff, &diff_held)] {
            bytes.add_tensor(t.bytes, if held.is_some() { Ownership::Owned } else { Ownership::View });
        }
        let owned = [data_held, diff_held];
        let net = self.handle.cast_const();
        // The entry gets its buffers only once it is in the net: a failed
        // attach must not free an adopted buffer.
        let added = self.add(kind, name, bytes, |name| TensorEntry {
            public: P::new(ptr::null(), data, diff),
            net,
            buffers: [data.data, diff.data],
            owned: [None, None],
            name,
            shape,
            kind,
            bytes,
            view_of: ptr::null_mut(),
            views: 0,
        });
        match added {
            Ok(entry) => {
                // SAFETY: just added: a live entry of this net, which no
                // other call uses.
                unsafe { (*entry).owned = owned };
                Ok(entry.cast())
            }
            Err(e) => {
                Held::give_back(owned);
                Err(e)
            }
        }
    }

    /// Makes `allocator` the net's, for its caches too.
    pub(super) fn set_allocator(&mut self, allocator: SharedAllocator) {
        for &cache in &self.state.caches.0 {
            // SAFETY: a live entry of this net, which no other call uses.
            unsafe { (*cache).allocator = allocator.clone() };
        }
        self.state.allocator = allocator;
    }

    /// Adds a param or layer entry whose data and diff nnmem allocates
    /// (from the net's allocator, zeroed, owned).
    pub(super) fn attach_owned<P: TensorPublic>(&mut self, kind: Kind, name: &[u8], shape: Shape) -> Result<*mut P>
    where
        TensorEntry<P>: Entry,
    {
        self.state.core.check_new(kind, name)?;
        let what = |part: &str| format!("{part} of {} \"{}\"", kind.what(), String::from_utf8_lossy(name));
        let allocator = &self.state.allocator;
        let (data_held, data) = owned_tensor(allocator, &shape, &|| what("data"))?;
        let (diff_held, diff) = owned_tensor(allocator, &shape, &|| what("diff"))?;
        self.add_tensors(kind, name, shape, [(Some(data_held), data), (Some(diff_held), diff)])
    }

    /// Adds a param or layer entry whose host buffers `[data, diff]` the net
    /// adopts, to free them as `free_fn(ctx, buffer)`; a NULL `diff` (params
    /// only) is a placeholder. Every check comes before anything is adopted:
    /// on failure the caller still owns both.
    pub(super) fn attach_adopted<P: TensorPublic>(
        &mut self,
        kind: Kind,
        name: &[u8],
        shape: Shape,
        [data, diff]: [*mut c_void; 2],
        free_fn: nnm_free_fn,
        ctx: *mut c_void,
    ) -> Result<*mut P>
    where
        TensorEntry<P>: Entry,
    {
        crate::ffi::args::non_null(data, "data")?;
        if kind != Kind::Param {
            crate::ffi::args::non_null(diff, "diff")?;
        }
        let Some(free_fn) = free_fn else {
            return Err(Error::new(Status::NullArgument, "free_fn is NULL: an adopted buffer needs its deallocator"));
        };
        if std::ptr::eq(data, diff) {
            return Err(Error::invalid(
                "diff is the same buffer as data: each adopted buffer is freed once, so they must differ",
            ));
        }
        for (what, p) in [("data", data), ("diff", diff)] {
            if self.state.adopted.contains(&(p as usize)) || self.state.linked.core.owns(p as usize) {
                return Err(Error::invalid(format!(
                    "{what} {p:p} is already adopted by this net: it would be freed twice"
                )));
            }
        }
        self.state.core.check_new(kind, name)?;
        self.state
            .adopted
            .try_reserve(2)
            .map_err(|_| Error::new(Status::OutOfMemory, "no memory to record adopted buffers"))?;
        let adopt = |p: *mut c_void, mut t: nnm_tensor| {
            if p.is_null() {
                return (None, t);
            }
            t.ownership = Ownership::Owned as u32;
            (Some(Held::Adopted(Adopted { ptr: p, free_fn, ctx })), t)
        };
        let [data_t, diff_t] = borrowed_pair(&shape, MemKind::Host, data, diff);
        let entry = self.add_tensors(kind, name, shape, [adopt(data, data_t), adopt(diff, diff_t)])?;
        // Room was reserved above.
        for p in [data, diff].into_iter().filter(|p| !p.is_null()) {
            self.state.adopted.insert(p as usize);
        }
        Ok(entry)
    }
}

/// Unlinks `node` from its list.
///
/// # Safety
/// `node` must be in an initialised list whose nodes are all valid for
/// writes.
pub(super) unsafe fn unlink(node: *mut list_head) {
    // SAFETY: the caller promises `node` and its neighbours are writable
    // nodes of one list.
    unsafe {
        let (prev, next) = ((*node).prev, (*node).next);
        (*prev).next = next;
        (*next).prev = prev;
        (*node).next = ptr::null_mut();
        (*node).prev = ptr::null_mut();
    }
}

/// Where `node` is among `list`'s entries (compared by address only).
fn index_of<E: HandleType>(list: &Entries<E>, node: *const list_head) -> Option<usize> {
    list.0.iter().position(|&e| ptr::eq(e.cast::<list_head>(), node))
}

impl NetMut<'_> {
    /// Adds an input named `name` that views `output` (tag-checked by the
    /// caller): it shares the output's buffers, and the output counts it,
    /// so that it is not detached before its views.
    pub(super) fn attach_view(&mut self, name: &[u8], output: *mut LayerEntry) -> Result<*mut nnm_layer_data> {
        // SAFETY: the caller checked `output`'s tag: a live layer entry of
        // some net, which this call only reads here.
        let (kind, net, shape, buffers, output_name) =
            unsafe { ((*output).kind, (*output).net, (*output).shape, (*output).buffers, &(*output).name) };
        if kind != Kind::Output || !ptr::eq(net, self.handle) {
            return Err(Error::invalid(format!(
                "output \"{}\" is not an output of this net",
                output_name.to_string_lossy()
            )));
        }
        self.state.core.check_new(Kind::Input, name)?;
        let [data, diff] = buffers.map(|b| super::buffers::descriptor(&shape, b, MemKind::Host, Ownership::View));
        let entry = self.add_tensors::<nnm_layer_data>(Kind::Input, name, shape, [(None, data), (None, diff)])?;
        // SAFETY: `entry` was just added (a live input of this net) and
        // `output` is a live output of it (checked above), a different
        // entry; no other call uses the net.
        unsafe {
            (*entry.cast::<LayerEntry>()).view_of = output;
            (*output).views += 1;
        }
        Ok(entry)
    }

    /// Detaches the entry whose node is `node`, of any list, and frees it
    /// with the buffers it owns (adopted ones through their deallocator);
    /// its name is free again. `node` is compared with the net's entries
    /// before it is read: any other pointer is refused.
    pub(super) fn detach(&mut self, node: *mut list_head) -> Result<()> {
        if let Some(i) = index_of(&self.state.params, node) {
            return self.detach_tensor::<nnm_param>(Kind::Param, i);
        }
        if let Some(i) = index_of(&self.state.outputs, node) {
            return self.detach_tensor::<nnm_layer_data>(Kind::Output, i);
        }
        if let Some(i) = index_of(&self.state.inputs, node) {
            return self.detach_tensor::<nnm_layer_data>(Kind::Input, i);
        }
        if let Some(i) = index_of(&self.state.caches, node) {
            let entry = self.state.caches.0[i];
            // SAFETY: a live cache of this net (found among its entries),
            // which no other call uses.
            let name = unsafe { (*entry).name.as_bytes().to_vec() };
            self.state.core.remove(Kind::Cache, &name, Bytes::default()).expect("every entry's name is indexed");
            self.state.caches.0.remove(i);
            // SAFETY: its node is in the net's cache list, whose nodes are
            // the net's live entries and its anchor; the entry, out of the
            // net's lists now, was made by `Handle::boxed` and is freed once.
            unsafe {
                unlink(entry.cast::<list_head>());
                free_unregistered(entry);
            }
            return Ok(());
        }
        Err(Error::invalid(format!(
            "node ({node:p}) is not the node of an entry of this net (already detached, another net's, or not an \
             entry)"
        )))
    }

    fn detach_tensor<P: TensorPublic>(&mut self, kind: Kind, index: usize) -> Result<()>
    where
        TensorEntry<P>: Entry,
    {
        let entry: *mut TensorEntry<P> = TensorEntry::<P>::list(self.state, kind).0[index];
        // SAFETY: a live entry of this net (found among its entries), which
        // no other call uses; the reference ends before it is freed.
        let e = unsafe { &mut *entry };
        if e.views > 0 {
            return Err(Error::wrong_state(format!(
                "output \"{}\" is viewed by {} input(s): detach them first",
                e.name.to_string_lossy(),
                e.views
            )));
        }
        if !e.view_of.is_null() {
            // SAFETY: the output this input views is live (an output is
            // not detached while it has views) and is another entry.
            unsafe { (*e.view_of).views -= 1 };
        }
        self.state.core.remove(kind, e.name.as_bytes(), e.bytes).expect("every entry's name is indexed");
        for held in e.owned.iter().flatten() {
            if let Held::Adopted(a) = held {
                self.state.adopted.remove(&(a.ptr as usize));
            }
        }
        TensorEntry::<P>::list(self.state, kind).0.remove(index);
        // SAFETY: as in `detach` for caches.
        unsafe {
            unlink(entry.cast::<list_head>());
            free_unregistered(entry);
        }
        Ok(())
    }
}

/// The stack behind a new cache entry.
pub(super) enum CacheStorage {
    /// nnmem's own growable stack (`nnm_net_attach_cache`).
    Net,
    /// A stack cache nnmem makes, and frees with the entry.
    NewStackCache,
    /// The caller's stack cache, left to the caller.
    StackCache(*mut nnm_stack_cache),
}

impl NetMut<'_> {
    /// Adds a cache named `name` over `storage`, with the caller's `user`.
    pub(super) fn add_cache(
        &mut self,
        name: &[u8],
        storage: CacheStorage,
        user: *mut c_void,
    ) -> Result<*mut nnm_cache> {
        self.state.core.check_new(Kind::Cache, name)?;
        let stack = CacheStack::new(&String::from_utf8_lossy(name));
        let allocator = self.state.allocator.clone();
        // A stack cache of nnmem's is made inside the entry's constructor,
        // so that every failure frees it with the entry.
        let entry = self.add(Kind::Cache, name, Bytes::default(), |name| {
            let (backing, owns_backing) = match storage {
                CacheStorage::Net => (ptr::null_mut(), false),
                CacheStorage::NewStackCache => (Box::into_raw(Box::new(nnm_stack_cache::default())), true),
                CacheStorage::StackCache(cache) => (cache, false),
            };
            CacheEntry {
                public: nnm_cache { stack: backing, user, ..nnm_cache::default() },
                stack,
                name,
                allocator,
                backing,
                owns_backing,
            }
        })?;
        Ok(entry.cast::<nnm_cache>())
    }
}
