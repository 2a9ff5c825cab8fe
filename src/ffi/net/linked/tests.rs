//! A legacy model's own lists and entry type on nnmem, from Rust, the way
//! awnn's code uses them: four heads in the model, entries that embed their
//! node, inputs that are shallow copies of outputs, a placeholder input with
//! a gradient buffer of its own, and a model that frees outputs, params and
//! caches but never its inputs.

use std::cell::RefCell;
use std::ffi::c_void;
use std::ptr;

use super::super::tests::{c, last_error};
use super::super::*;

/// The legacy entry type: the node is not first (as in awnn's `param_t`).
#[repr(C)]
struct Legacy {
    name: [u8; 32],
    data: *mut c_void,
    diff: *mut c_void,
    list: list_head,
}

/// The legacy model: its four list heads, side by side.
#[repr(C)]
struct Model {
    params: list_head,
    outputs: list_head,
    inputs: list_head,
    caches: list_head,
}

impl Model {
    fn new() -> Box<Model> {
        let empty = list_head { next: ptr::null_mut(), prev: ptr::null_mut() };
        let mut m = Box::new(Model { params: empty, outputs: empty, inputs: empty, caches: empty });
        for h in [&mut m.params, &mut m.outputs, &mut m.inputs, &mut m.caches] {
            let p: *mut list_head = h;
            *h = list_head { next: p, prev: p };
        }
        m
    }
}

/// What the release function saw: (entry name, owned bits), in order.
type Released = RefCell<Vec<(String, u32)>>;

fn name_of(e: &Legacy) -> String {
    String::from_utf8_lossy(&e.name[..e.name.iter().position(|&b| b == 0).unwrap_or(32)]).into_owned()
}

/// # Safety
/// `ctx` a `Released`, `node` the node of a boxed `Legacy` whose owned
/// buffers are libc allocations.
unsafe extern "C" fn release(ctx: *mut c_void, node: *mut list_head, owned: u32) {
    // SAFETY: the caller's promise; the node is `list` inside a `Legacy`.
    unsafe {
        assert!(ptr::eq((*node).next, node) && ptr::eq((*node).prev, node), "unlinked before release");
        let e = Box::from_raw(node.cast::<u8>().sub(std::mem::offset_of!(Legacy, list)).cast::<Legacy>());
        if owned & NNM_OWNS_DATA != 0 {
            libc::free(e.data);
        }
        if owned & NNM_OWNS_DIFF != 0 {
            libc::free(e.diff);
        }
        (*ctx.cast::<Released>()).borrow_mut().push((name_of(&e), owned));
    }
}

fn desc(data: *mut c_void) -> nnm_tensor {
    let mut t = nnm_tensor { data, ndims: 2, ..Default::default() };
    t.dims[..2].copy_from_slice(&[4, 3]);
    if data.is_null() {
        t.mem_kind = MemKind::Placeholder as u32;
    }
    t
}

fn malloc() -> *mut c_void {
    // SAFETY: a plain allocation, freed by `release` or the test.
    unsafe { libc::malloc(48) }
}

/// Links a new `Legacy` named `name` with these buffers (None: no tensors).
///
/// # Safety
/// `list` a list head as `nnm_net_link` takes it; `released` outlives the
/// entry.
unsafe fn link(
    list: *mut list_head,
    name: &str,
    buffers: Option<(*mut c_void, *mut c_void)>,
    released: &Released,
) -> (Status, *mut list_head) {
    let mut e = Box::new(Legacy {
        name: [0; 32],
        data: ptr::null_mut(),
        diff: ptr::null_mut(),
        list: list_head { next: ptr::null_mut(), prev: ptr::null_mut() },
    });
    e.name[..name.len()].copy_from_slice(name.as_bytes());
    let (data, diff) = buffers.map_or((None, None), |(d, g)| (Some(desc(d)), Some(desc(g))));
    if let Some((d, g)) = buffers {
        (e.data, e.diff) = (d, g);
    }
    let e = Box::into_raw(e);
    // SAFETY: the caller's promises; the entry is boxed, so its node stays put.
    unsafe {
        let node = ptr::addr_of_mut!((*e).list);
        let s = nnm_net_link(
            list,
            c(name).as_ptr(),
            node,
            data.as_ref().map_or(ptr::null(), |d| d),
            diff.as_ref().map_or(ptr::null(), |d| d),
            Some(release),
            ptr::from_ref(released).cast_mut().cast(),
        );
        if s != Status::Ok {
            drop(Box::from_raw(e));
        }
        (s, node)
    }
}

/// The names on a list, walked as C walks it, through the legacy type.
///
/// # Safety
/// `head` an initialised list of `Legacy` entries.
unsafe fn walk(head: *mut list_head) -> Vec<String> {
    let mut names = Vec::new();
    // SAFETY: the caller's promise.
    unsafe {
        let mut n = (*head).next;
        while !ptr::eq(n, head) {
            let e = n.cast::<u8>().sub(std::mem::offset_of!(Legacy, list)).cast::<Legacy>();
            names.push(name_of(&*e));
            n = (*n).next;
        }
    }
    names
}

#[test]
fn a_legacy_model_becomes_nets_that_give_everything_back_though_it_never_frees_its_inputs() {
    let released = Released::default();
    let mut m = Model::new();
    let (params, outputs, inputs, caches) =
        (&raw mut m.params, &raw mut m.outputs, &raw mut m.inputs, &raw mut m.caches);
    // SAFETY: the model's heads are boxed and outlive every net; the
    // entries are boxed; one thread.
    unsafe {
        // awnn's mlp_init: the input placeholder with its own gradient.
        assert_eq!(link(inputs, "fc0.in", Some((ptr::null_mut(), malloc())), &released).0, Status::Ok);
        let mut out_prev = (ptr::null_mut(), ptr::null_mut());
        for i in 0..3 {
            if i > 0 {
                assert_eq!(link(inputs, &format!("fc{i}.in"), Some(out_prev), &released).0, Status::Ok);
            }
            assert_eq!(link(params, &format!("fc{i}.weight"), Some((malloc(), malloc())), &released).0, Status::Ok);
            out_prev = (malloc(), malloc());
            assert_eq!(link(outputs, &format!("fc{i}.out"), Some(out_prev), &released).0, Status::Ok);
            assert_eq!(link(caches, &format!("fc{i}.cache"), None, &released).0, Status::Ok);
        }
        assert_eq!(walk(inputs), ["fc0.in", "fc1.in", "fc2.in"]);
        assert_eq!(walk(params), ["fc0.weight", "fc1.weight", "fc2.weight"]);
        // One lookup by list head and name, whatever the list.
        let node = nnm_net_lookup(outputs, c("fc1.out").as_ptr());
        assert!(!node.is_null());
        let found = &*node.cast::<u8>().sub(std::mem::offset_of!(Legacy, list)).cast::<Legacy>();
        assert_eq!(name_of(found), "fc1.out");
        assert!(nnm_net_lookup(outputs, c("fc1.in").as_ptr()).is_null());
        assert!(last_error().contains("no entry is named \"fc1.in\""), "{}", last_error());
        // The views joined inputs and outputs into one net; params and
        // caches each have their own.
        let net = nnm_net_from_list(outputs);
        assert!(!net.is_null());
        assert_eq!(nnm_net_from_list(inputs), net);
        assert!(![nnm_net_from_list(params), nnm_net_from_list(caches)].contains(&net));

        // awnn's mlp_finalize: caches, outputs, params; never the inputs.
        assert_eq!(nnm_net_free_list(caches), Status::Ok);
        assert!(nnm_net_from_list(caches).is_null(), "a spent implicit net gives itself back");
        assert_eq!(nnm_net_free_list(outputs), Status::Ok);
        assert_eq!(nnm_net_free_list(params), Status::Ok);
        let r = released.borrow();
        assert_eq!(r.len(), 12, "every entry given back once: {r:?}");
        let owned = |name: &str| r.iter().find(|(n, _)| n == name).map(|(_, o)| *o);
        assert_eq!(owned("fc1.in"), Some(0), "a view owns nothing");
        assert_eq!(owned("fc0.in"), Some(NNM_OWNS_DIFF), "the placeholder's own gradient goes with the net");
        assert_eq!(owned("fc0.out"), Some(NNM_OWNS_DATA | NNM_OWNS_DIFF));
        assert_eq!(owned("fc0.cache"), Some(0));
        let views_before_outputs =
            r.iter().position(|(n, _)| n == "fc1.in") < r.iter().position(|(n, _)| n == "fc0.out");
        assert!(views_before_outputs, "a view goes before the entry it views: {r:?}");
        for h in [params, outputs, inputs, caches] {
            assert!(ptr::eq((*h).next, h) && ptr::eq((*h).prev, h), "each head is an empty list again");
            assert!(nnm_net_from_list(h).is_null());
        }
        // The heads may start over.
        drop(r);
        assert_eq!(link(params, "w", Some((malloc(), ptr::null_mut())), &released).0, Status::Ok);
        assert_eq!(nnm_net_free_list(params), Status::Ok);
        assert_eq!(nnm_net_free_list(params), Status::Ok, "an empty head nnmem does not know: nothing to do");
        assert_eq!(released.borrow().last(), Some(&("w".to_string(), NNM_OWNS_DATA)));
    }
}

#[test]
fn bad_links_are_refused_and_change_nothing() {
    let released = Released::default();
    let mut m = Model::new();
    let (params, outputs) = (&raw mut m.params, &raw mut m.outputs);
    // SAFETY: as above.
    unsafe {
        let (w, dw) = (malloc(), malloc());
        let (s, node) = link(params, "w", Some((w, dw)), &released);
        assert_eq!(s, Status::Ok);
        let (s, _) = link(params, "w", None, &released);
        assert_eq!(s, Status::AlreadyExists);
        let g = malloc();
        let (s, _) = link(outputs, "o", Some((g, dw)), &released);
        assert_eq!(s, Status::InvalidArgument);
        assert!(
            last_error().contains("diff buffer") && last_error().contains("owned by an entry of another net"),
            "{}",
            last_error()
        );
        assert!(nnm_net_from_list(outputs).is_null(), "a head is adopted only by a link that succeeds");
        let (s, _) = link(outputs, "o", Some((g, g)), &released);
        assert_eq!(s, Status::InvalidArgument);
        assert!(last_error().contains("same buffer"), "{}", last_error());
        libc::free(g);
        // Linking a node twice, or to a list that is not an empty head.
        let s =
            nnm_net_link(params, c("again").as_ptr(), node, ptr::null(), ptr::null(), Some(release), ptr::null_mut());
        assert_eq!(s, Status::InvalidArgument);
        assert!(last_error().contains("already linked"), "{}", last_error());
        let s = nnm_net_link(node, c("x").as_ptr(), outputs, ptr::null(), ptr::null(), Some(release), ptr::null_mut());
        assert_eq!(s, Status::InvalidArgument);
        assert!(last_error().contains("not an empty, initialised list head"), "{}", last_error());
        let s = nnm_net_link(outputs, c("x").as_ptr(), outputs, ptr::null(), ptr::null(), None, ptr::null_mut());
        assert_eq!(s, Status::NullArgument);
        let t = desc(malloc());
        let s = nnm_net_link(outputs, c("x").as_ptr(), outputs, ptr::null(), &t, Some(release), ptr::null_mut());
        assert_eq!(s, Status::InvalidArgument);
        libc::free(t.data);
        // A net made by nnm_net_new keeps its own anchors for its own entries.
        let mut net = ptr::null_mut();
        assert_eq!(nnm_net_new(1, &mut net), Status::Ok);
        let s = nnm_net_link(
            &raw mut (*net).params,
            c("x").as_ptr(),
            outputs,
            ptr::null(),
            ptr::null(),
            Some(release),
            ptr::null_mut(),
        );
        assert_eq!(s, Status::InvalidArgument);
        assert!(last_error().contains("param anchor of a net made by nnm_net_new"), "{}", last_error());
        assert_eq!(nnm_net_free_list(&raw mut (*net).params), Status::InvalidArgument);
        nnm_net_free(net);
        assert_eq!(walk(params), ["w"]);
        assert!(released.borrow().is_empty());
        assert_eq!(nnm_net_free_list(params), Status::Ok);
        assert_eq!(released.borrow().as_slice(), [("w".to_string(), NNM_OWNS_DATA | NNM_OWNS_DIFF)]);
    }
}

#[test]
fn a_node_links_once_and_a_head_initialised_again_is_refused() {
    let released = Released::default();
    let mut m = Model::new();
    let (params, outputs, inputs) = (&raw mut m.params, &raw mut m.outputs, &raw mut m.inputs);
    // SAFETY: as above.
    unsafe {
        let (s, node) = link(params, "w", Some((malloc(), malloc())), &released);
        assert_eq!(s, Status::Ok);
        // The same node to another list (another net), or a head as a node.
        let s =
            nnm_net_link(outputs, c("again").as_ptr(), node, ptr::null(), ptr::null(), Some(release), ptr::null_mut());
        assert_eq!(s, Status::InvalidArgument);
        assert!(last_error().contains("already linked"), "{}", last_error());
        assert!(nnm_net_from_list(outputs).is_null());
        let s =
            nnm_net_link(outputs, c("head").as_ptr(), params, ptr::null(), ptr::null(), Some(release), ptr::null_mut());
        assert_eq!(s, Status::InvalidArgument);
        // A buffer one of the net's own attach calls adopted is not linked.
        let net = nnm_net_from_list(params);
        let mine = malloc();
        let mut p = ptr::null_mut();
        let dims = [12u32];
        let s = nnm_net_attach_param_adopted(
            net,
            c("own").as_ptr(),
            0,
            dims.as_ptr(),
            1,
            mine,
            ptr::null_mut(),
            Some(libc_free),
            ptr::null_mut(),
            &mut p,
        );
        assert_eq!(s, Status::Ok);
        let (s, _) = link(params, "twice", Some((mine, ptr::null_mut())), &released);
        assert_eq!(s, Status::InvalidArgument);
        assert!(last_error().contains("already adopted"), "{}", last_error());
        // A view joins the other net into this one, which holds an entry of
        // its own attach call and so is never the one given up.
        let data = (malloc(), malloc());
        assert_eq!(link(outputs, "out", Some(data), &released).0, Status::Ok);
        let (s, _) = link(params, "view", Some(data), &released);
        assert_eq!(s, Status::Ok);
        assert_eq!((nnm_net_from_list(outputs), nnm_net_from_list(params)), (net, net));
        assert_eq!((*p).data.data, mine, "the own entry survived the join");
        // Another net holding an entry of its own cannot be joined at all.
        let mut other = Model::new();
        let data2 = (malloc(), malloc());
        assert_eq!(link(&raw mut other.outputs, "o2", Some(data2), &released).0, Status::Ok);
        let other_net = nnm_net_from_list(&raw mut other.outputs);
        let mut q = ptr::null_mut();
        assert_eq!(nnm_net_attach_param(other_net, c("own2").as_ptr(), 0, dims.as_ptr(), 1, &mut q), Status::Ok);
        let (s, _) = link(outputs, "v2", Some(data2), &released);
        assert_eq!(s, Status::InvalidArgument);
        assert!(last_error().contains("cannot join"), "{}", last_error());
        assert_eq!(nnm_net_detach(other_net, &raw mut (*q).node), Status::Ok);
        assert_eq!(nnm_net_free_list(&raw mut other.outputs), Status::Ok);
        assert_eq!(nnm_net_detach(net, &raw mut (*p).node), Status::Ok);
        // The inputs' head made anew while its net still holds an entry.
        assert_eq!(link(inputs, "x", Some((ptr::null_mut(), malloc())), &released).0, Status::Ok);
        let keep = *inputs;
        *inputs = list_head { next: inputs, prev: inputs };
        let (s, _) = link(inputs, "y", None, &released);
        assert_eq!(s, Status::InvalidArgument);
        assert!(last_error().contains("initialised again"), "{}", last_error());
        assert_eq!(nnm_net_free_list(inputs), Status::InvalidArgument);
        *inputs = keep;
        for h in [inputs, outputs, params] {
            assert_eq!(nnm_net_free_list(h), Status::Ok);
        }
        assert_eq!(released.borrow().len(), 5);
        assert!(nnm_net_from_list(params).is_null() && nnm_net_from_list(inputs).is_null());
    }
}

/// # Safety
/// `p` a libc allocation.
unsafe extern "C" fn libc_free(_: *mut c_void, p: *mut c_void) {
    // SAFETY: the caller's promise.
    unsafe { libc::free(p) }
}

#[test]
fn a_net_of_the_callers_adopts_its_heads_and_gives_everything_back_when_freed() {
    let released = Released::default();
    let mut m = Model::new();
    let (params, outputs, inputs) = (&raw mut m.params, &raw mut m.outputs, &raw mut m.inputs);
    // SAFETY: as above.
    unsafe {
        let mut net = ptr::null_mut();
        assert_eq!(nnm_net_new(0, &mut net), Status::Ok);
        for h in [params, outputs, inputs] {
            assert_eq!(nnm_net_adopt_list(net, h), Status::Ok);
            assert_eq!(nnm_net_from_list(h), net);
        }
        assert_eq!(nnm_net_adopt_list(net, params), Status::InvalidArgument);
        let data = (malloc(), malloc());
        assert_eq!(link(outputs, "out", Some(data), &released).0, Status::Ok);
        let (s, view) = link(inputs, "in", Some(data), &released);
        assert_eq!(s, Status::Ok);
        assert_eq!(link(params, "w", Some((malloc(), malloc())), &released).0, Status::Ok);
        // An own nnm_param beside them, found by the same lookup.
        let mut p = ptr::null_mut();
        assert_eq!(nnm_net_attach_param(net, c("own").as_ptr(), 0, [2u32].as_ptr(), 1, &mut p), Status::Ok);
        assert_eq!(nnm_net_lookup(&raw const (*net).params, c("own").as_ptr()), &raw mut (*p).node);
        // A single entry detached; an explicit net never frees itself.
        assert_eq!(nnm_net_detach(net, view), Status::Ok);
        assert_eq!(walk(inputs), Vec::<String>::new());
        assert_eq!(nnm_net_free_list(outputs), Status::Ok);
        assert_eq!(nnm_net_from_list(outputs), net, "the list stays adopted");
        nnm_net_free(net);
        let r = released.borrow();
        assert_eq!(r.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["in", "out", "w"]);
        assert!(ptr::eq((*params).next, params) && nnm_net_from_list(params).is_null());
    }
}

#[test]
fn a_view_across_a_callers_net_and_another_is_refused() {
    let released = Released::default();
    let (mut a, mut b) = (Model::new(), Model::new());
    // SAFETY: as above.
    unsafe {
        let mut net = ptr::null_mut();
        assert_eq!(nnm_net_new(0, &mut net), Status::Ok);
        assert_eq!(nnm_net_adopt_list(net, &raw mut a.outputs), Status::Ok);
        let mut other = ptr::null_mut();
        assert_eq!(nnm_net_new(0, &mut other), Status::Ok);
        assert_eq!(nnm_net_adopt_list(other, &raw mut b.inputs), Status::Ok);
        let data = (malloc(), malloc());
        assert_eq!(link(&raw mut a.outputs, "out", Some(data), &released).0, Status::Ok);
        let (s, _) = link(&raw mut b.inputs, "in", Some(data), &released);
        assert_eq!(s, Status::InvalidArgument);
        assert!(last_error().contains("another net"), "{}", last_error());
        // An implicit net joins a caller's net instead.
        let (s, _) = link(&raw mut b.outputs, "in", Some(data), &released);
        assert_eq!(s, Status::Ok);
        assert_eq!(nnm_net_from_list(&raw mut b.outputs), net);
        nnm_net_free(other);
        nnm_net_free(net);
        assert_eq!(released.borrow().len(), 2);
    }
}
