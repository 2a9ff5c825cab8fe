//! The net's C API called from Rust the way C calls it, lists walked
//! through their `list_head` nodes.

use super::stack_cache::{live_spills, INLINE};
use super::*;
use crate::ffi::nnm_last_error;
use std::ffi::{CStr, CString};
use std::mem::offset_of;

pub(super) fn last_error() -> String {
    // SAFETY: nnm_last_error returns a NUL-terminated thread-local string, valid until the next failing call.
    unsafe { CStr::from_ptr(nnm_last_error()) }.to_string_lossy().into_owned()
}

pub(super) fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

/// A net freed on drop.
pub(super) struct TestNet(pub(super) *mut nnm_net);

impl TestNet {
    pub(super) fn new(max_batch: u32) -> Self {
        let mut n = ptr::null_mut();
        // SAFETY: `n` is writable.
        assert_eq!(unsafe { nnm_net_new(max_batch, &mut n) }, Status::Ok);
        TestNet(n)
    }

    pub(super) fn param(&self, name: &str, dims: &[u32]) -> *mut nnm_param {
        let mut p = ptr::null_mut();
        // SAFETY: the net is live, the name a C string, `dims` has `dims.len()` values, `p` is writable.
        let s = unsafe {
            nnm_net_attach_param(self.0, c(name).as_ptr(), Dtype::F32 as u32, dims.as_ptr(), dims.len() as u32, &mut p)
        };
        assert_eq!(s, Status::Ok, "{}", last_error());
        p
    }

    fn output(&self, name: &str, sample: &[u32]) -> *mut nnm_layer_data {
        let mut o = ptr::null_mut();
        // SAFETY: as in `param`.
        let s = unsafe {
            nnm_net_attach_output(
                self.0,
                c(name).as_ptr(),
                Dtype::F64 as u32,
                sample.as_ptr(),
                sample.len() as u32,
                &mut o,
            )
        };
        assert_eq!(s, Status::Ok, "{}", last_error());
        o
    }

    fn cache(&self, name: &str) -> *mut nnm_cache {
        let mut k = ptr::null_mut();
        // SAFETY: the net is live, the name a C string, `k` is writable.
        assert_eq!(unsafe { nnm_net_attach_cache(self.0, c(name).as_ptr(), &mut k) }, Status::Ok);
        k
    }

    pub(super) fn report(&self) -> nnm_net_report {
        let mut r = nnm_net_report::default();
        // SAFETY: the net is live and `r` writable.
        assert_eq!(unsafe { nnm_net_get_report(self.0, &mut r) }, Status::Ok);
        r
    }
}

impl Drop for TestNet {
    fn drop(&mut self) {
        // SAFETY: made by nnm_net_new, freed only here.
        unsafe { nnm_net_free(self.0) }
    }
}

/// The names along a list, walking `node` pointers as list_for_each_entry
/// does, forwards; and checks the backward links agree.
///
/// # Safety
/// `head` must be the anchor of a live net's list whose entries have their
/// node at `node_offset`.
unsafe fn walk(head: *const list_head, node_offset: usize) -> Vec<String> {
    let mut names = Vec::new();
    // SAFETY: the caller promises a live list: every node is an entry's,
    // and `name` follows `node` in every entry type.
    unsafe {
        let mut pos = (*head).next;
        while !ptr::eq(pos, head) {
            let entry = pos.cast::<u8>().sub(node_offset);
            let name = *entry.add(offset_of!(nnm_param, name)).cast::<*const c_char>();
            names.push(CStr::from_ptr(name).to_string_lossy().into_owned());
            assert!(ptr::eq((*(*pos).next).prev, pos), "broken back link");
            pos = (*pos).next;
        }
    }
    names
}

#[test]
fn new_net_has_four_empty_lists() {
    let net = TestNet::new(8);
    // SAFETY: the net is live; its anchors are read as C reads them.
    unsafe {
        let n = &*net.0;
        assert_eq!(n.max_batch, 8);
        for anchor in [&n.params, &n.outputs, &n.inputs, &n.caches] {
            assert!(ptr::eq(anchor.next, anchor) && ptr::eq(anchor.prev, anchor));
        }
        assert_eq!(nnm_net_new(1, ptr::null_mut()), Status::NullArgument);
    }
}

#[test]
fn params_keep_insertion_order_and_are_found_by_name() {
    let net = TestNet::new(4);
    let names: Vec<String> = (0..50).map(|i| format!("layer{i}.W")).collect();
    let entries: Vec<*mut nnm_param> = names.iter().map(|n| net.param(n, &[3, 5])).collect();
    // SAFETY: the entries are live params of the live net, each of 15 f32 values.
    unsafe {
        assert_eq!(walk(&(*net.0).params, offset_of!(nnm_param, node)), names);
        for (n, &e) in names.iter().zip(&entries) {
            assert_eq!(nnm_net_param_get(net.0, c(n).as_ptr()), e);
        }
        let p = &*entries[7];
        assert_eq!(CStr::from_ptr(p.name).to_str().unwrap(), "layer7.W");
        for t in [&p.data, &p.diff] {
            assert_eq!((t.bytes, t.ndims, &t.dims[..2], t.elem_size), (60, 2, &[3u32, 5][..], 4));
            assert_eq!((t.mem_kind, t.ownership), (MemKind::Host as u32, Ownership::Owned as u32));
            assert_eq!(t.data as usize % 64, 0, "64-byte aligned");
            let values = std::slice::from_raw_parts_mut(t.data.cast::<f32>(), 15);
            assert!(values.iter().all(|&v| v == 0.0), "zeroed");
            values.fill(1.5); // writable
        }
        assert_ne!(p.data.data, p.diff.data);
    }
}

#[test]
fn bad_names_and_arguments_fail_with_messages() {
    let net = TestNet::new(2);
    net.param("w", &[2]);
    let dims = [2u32];
    // SAFETY: every pointer passed is NULL, a C string, `dims`, or a live net or entry.
    unsafe {
        let attach = |name: *const c_char, dtype: u32, dims: *const u32, ndims: u32| {
            let mut out = ptr::NonNull::<nnm_param>::dangling().as_ptr();
            let s = nnm_net_attach_param(net.0, name, dtype, dims, ndims, &mut out);
            if s != Status::Ok {
                assert_eq!(out, ptr::NonNull::<nnm_param>::dangling().as_ptr(), "out written on failure");
            }
            (s, last_error())
        };
        let (s, e) = attach(c("w").as_ptr(), 0, dims.as_ptr(), 1);
        assert_eq!((s, e.as_str()), (Status::AlreadyExists, "param \"w\" already exists"));
        let long = "x".repeat(NAME_MAX + 1);
        let (s, e) = attach(c(&long).as_ptr(), 0, dims.as_ptr(), 1);
        assert_eq!(s, Status::InvalidArgument);
        assert!(e.contains("128 bytes long") && e.contains("never truncated"), "{e}");
        let exact = "y".repeat(NAME_MAX);
        assert_eq!(attach(c(&exact).as_ptr(), 0, dims.as_ptr(), 1).0, Status::Ok);
        assert_eq!(attach(c("").as_ptr(), 0, dims.as_ptr(), 1).0, Status::InvalidArgument);
        assert_eq!(attach(ptr::null(), 0, dims.as_ptr(), 1), (Status::NullArgument, "name is NULL".into()));
        assert_eq!(attach(c("v").as_ptr(), 0, ptr::null(), 1).0, Status::NullArgument);
        assert!(attach(c("v").as_ptr(), 42, dims.as_ptr(), 1).1.contains("dtype 42"));
        assert!(attach(c("v").as_ptr(), 0, dims.as_ptr(), 9).1.contains("ndims 9"));
        let (s, _) = attach(c("scalar").as_ptr(), 0, ptr::null(), 0);
        assert_eq!(s, Status::Ok, "0 dimensions: a scalar param");
        let huge = [u32::MAX, u32::MAX, u32::MAX];
        assert_eq!(attach(c("v").as_ptr(), Dtype::F64 as u32, huge.as_ptr(), 3).0, Status::Overflow);
        assert_eq!(net.report().params.entries, 3, "failures changed nothing");
        let scalar = nnm_net_param_get(net.0, c("scalar").as_ptr());
        assert_eq!(((*scalar).data.ndims, (*scalar).data.bytes), (0, 4), "a scalar is one element");

        assert!(nnm_net_param_get(net.0, c("nope").as_ptr()).is_null());
        assert_eq!(last_error(), "no param is named \"nope\"");
        assert!(nnm_net_param_get(net.0, ptr::null()).is_null());
        assert_eq!(last_error(), "name is NULL");
        assert!(nnm_net_param_get(ptr::null(), c("w").as_ptr()).is_null());
        assert_eq!(last_error(), "net is NULL");
        assert!(nnm_net_output_get(net.0, c("w").as_ptr()).is_null(), "each list has its own names");
        assert_eq!(last_error(), "no output is named \"w\"");
    }
}

#[test]
fn out_of_memory_is_reported() {
    let net = TestNet::new(1);
    // 2^44 B: fits the address space, not the machine.
    let dims = [1u32 << 20, 1 << 21];
    // SAFETY: as above.
    unsafe {
        let s = nnm_net_attach_param(net.0, c("big").as_ptr(), Dtype::F64 as u32, dims.as_ptr(), 2, ptr::null_mut());
        assert_eq!(s, Status::OutOfMemory);
        assert!(last_error().contains("data of param \"big\""), "{}", last_error());
        assert!(nnm_net_param_get(net.0, c("big").as_ptr()).is_null(), "nothing attached");
    }
}

#[test]
fn borrowed_params_are_never_freed() {
    let mut data = vec![1.0f32; 6];
    let mut diff = vec![0.0f32; 6];
    let dims = [2u32, 3];
    {
        let net = TestNet::new(1);
        let attach = |name: &str, mem_kind: u32, data: *mut c_void, diff: *mut c_void, out: *mut *mut nnm_param| {
            // SAFETY: the net is live, `dims` has 2 values, `out` is NULL or
            // writable; `data` and `diff` are stored, never read.
            unsafe {
                nnm_net_attach_param_borrowed(net.0, c(name).as_ptr(), 0, dims.as_ptr(), 2, mem_kind, data, diff, out)
            }
        };
        // SAFETY: the entries are live; `data` and `diff` outlive the net.
        unsafe {
            let mut p = ptr::null_mut();
            let s = attach("emb", MemKind::Host as u32, data.as_mut_ptr().cast(), diff.as_mut_ptr().cast(), &mut p);
            assert_eq!(s, Status::Ok, "{}", last_error());
            assert_eq!((*p).data.ownership, Ownership::Borrowed as u32);
            assert_eq!((*p).data.data, data.as_mut_ptr().cast());
            let mut frozen = ptr::null_mut();
            // A device address: never read, never freed.
            let s = attach(
                "frozen",
                MemKind::Device as u32,
                ptr::null_mut::<u8>().wrapping_add(0x1000).cast::<c_void>(),
                ptr::null_mut(),
                &mut frozen,
            );
            assert_eq!(s, Status::Ok);
            assert_eq!(((*frozen).data.mem_kind, (*frozen).diff.mem_kind), (1, 2));
            assert!((*frozen).diff.data.is_null());
            let s = attach("x", 2, data.as_mut_ptr().cast(), ptr::null_mut(), ptr::null_mut());
            assert_eq!(s, Status::InvalidArgument);
            let s = attach("x", 0, ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
            assert_eq!((s, last_error().as_str()), (Status::NullArgument, "data is NULL"));
            let r = net.report();
            assert_eq!((r.params.owned_bytes, r.params.referenced_bytes, r.params.tensors), (0, 4 * 24, 4));
        }
    }
    // The net is gone; the caller's vectors are intact (a free would have
    // been a double free at the end of this test).
    data[5] = 2.0;
    diff[5] = 3.0;
    assert_eq!(data[5] + diff[5], 5.0);
}

#[test]
fn inputs_view_outputs_or_are_placeholders() {
    let net = TestNet::new(16);
    let fc1 = net.output("fc1", &[10]);
    let other = TestNet::new(16);
    let foreign = other.output("fc1", &[10]);
    // SAFETY: the nets and entries are live; `batch` outlives its binding.
    unsafe {
        assert_eq!([(*fc1).data.dims[0], (*fc1).data.dims[1]], [16, 10]);
        assert_eq!((*fc1).data.bytes, 16 * 10 * 8);
        let mut relu_in = ptr::null_mut();
        assert_eq!(nnm_net_attach_input_view(net.0, c("relu1").as_ptr(), fc1, &mut relu_in), Status::Ok);
        let v = &*relu_in;
        assert_eq!((v.data.data, v.diff.data), ((*fc1).data.data, (*fc1).diff.data));
        assert_eq!((v.data.ownership, v.data.bytes), (Ownership::View as u32, (*fc1).data.bytes));
        assert_eq!(nnm_net_input_get(net.0, c("relu1").as_ptr()), relu_in);
        assert_eq!(nnm_net_output_get(net.0, c("fc1").as_ptr()), fc1);

        // Not an output of this net; not an output at all.
        assert_eq!(
            nnm_net_attach_input_view(net.0, c("x").as_ptr(), foreign, ptr::null_mut()),
            Status::InvalidArgument
        );
        assert_eq!(last_error(), "output \"fc1\" is not an output of this net");
        assert_eq!(
            nnm_net_attach_input_view(net.0, c("x").as_ptr(), relu_in, ptr::null_mut()),
            Status::InvalidArgument
        );
        let p = net.param("w", &[1]);
        let s = nnm_net_attach_input_view(net.0, c("x").as_ptr(), p.cast(), ptr::null_mut());
        assert_eq!((s, last_error().as_str()), (Status::InvalidArgument, "output is not a valid nnm_layer_data"));

        let mut x = ptr::null_mut();
        let sample = [3u32, 4];
        let s = nnm_net_attach_input_placeholder(net.0, c("x").as_ptr(), 0, sample.as_ptr(), 2, &mut x);
        assert_eq!(s, Status::Ok);
        assert_eq!(walk(&(*net.0).inputs, offset_of!(nnm_layer_data, node)), ["relu1", "x"]);
        let t = (*x).data;
        assert!(t.data.is_null());
        assert_eq!((t.mem_kind, t.ownership, t.dims[..3].to_vec(), t.bytes), (2, 2, vec![16, 3, 4], 16 * 12 * 4));

        let mut batch = vec![0f32; 5 * 12];
        assert_eq!(nnm_net_input_bind(x, 0, batch.as_mut_ptr().cast(), ptr::null_mut(), 5), Status::Ok);
        let t = (*x).data;
        assert_eq!((t.data, t.mem_kind, t.ownership, t.dims[0], t.bytes), (batch.as_mut_ptr().cast(), 0, 2, 5, 5 * 48));
        assert_eq!((*x).diff.mem_kind, MemKind::Placeholder as u32);
        assert_eq!(nnm_net_input_bind(x, 0, batch.as_mut_ptr().cast(), ptr::null_mut(), 17), Status::InvalidArgument);
        assert!(last_error().contains("batch 17 is outside 1..=16"));
        assert_eq!(nnm_net_input_bind(relu_in, 0, batch.as_mut_ptr().cast(), ptr::null_mut(), 1), Status::WrongState);
        assert_eq!(nnm_net_input_bind(fc1, 0, batch.as_mut_ptr().cast(), ptr::null_mut(), 1), Status::InvalidArgument);
        assert_eq!(nnm_net_input_bind(x, 0, ptr::null_mut(), ptr::null_mut(), 0), Status::Ok, "unbind");
        assert!((*x).data.data.is_null() && (*x).data.dims[0] == 16);

        let r = net.report();
        assert_eq!((r.outputs.entries, r.outputs.owned_bytes), (1, 2 * 1280));
        assert_eq!((r.inputs.entries, r.inputs.owned_bytes), (2, 0));
        assert_eq!(r.inputs.referenced_bytes, 2 * 1280 + 2 * 768);
        assert_eq!(r.max_batch, 16);
        drop(batch);
    }
}

#[test]
fn caches_push_pop_count_clear() {
    let net = TestNet::new(2);
    let k = net.cache("fc1");
    let p = net.param("W", &[4, 4]);
    // SAFETY: the net, cache and param are live; `out`, `n`, `a` and `b` are writable.
    unsafe {
        assert_eq!(nnm_net_cache_get(net.0, c("fc1").as_ptr()), k);
        let mut out = nnm_tensor::default();
        assert_eq!(nnm_cache_pop(k, &mut out), Status::WrongState);
        assert_eq!(last_error(), "cache \"fc1\" is empty: pop without a matching push");
        for _ in 0..1000 {
            assert_eq!(nnm_cache_push(k, &(*p).data), Status::Ok);
        }
        assert_eq!(((*k).count, *(*k).tensors.add(999)).1.data, (*p).data.data);
        assert_eq!((*(*k).tensors).ownership, Ownership::View as u32, "a copy of an owned tensor is a view");
        let mut n = 0usize;
        assert_eq!(nnm_cache_count(k, &mut n), Status::Ok);
        assert_eq!(n, 1000);
        for _ in 0..1000 {
            assert_eq!(nnm_cache_pop(k, &mut out), Status::Ok);
        }
        assert_eq!((out.data, out.ownership), ((*p).data.data, Ownership::View as u32));
        assert_eq!((*k).count, 0);

        // Owned buffers: reused after a pop, freed by clear.
        let dims = [2u32, 8];
        let mut a = nnm_tensor::default();
        assert_eq!(nnm_cache_push_new(k, Dtype::U8 as u32, dims.as_ptr(), 2, &mut a), Status::Ok);
        assert_eq!((a.ownership, a.bytes), (Ownership::Owned as u32, 16));
        assert_eq!(nnm_cache_push(k, &(*p).diff), Status::Ok);
        let r = net.report();
        assert_eq!(
            (r.caches.entries, r.caches.tensors, r.caches.owned_bytes, r.caches.referenced_bytes),
            (1, 2, 16, 64)
        );
        assert_eq!(nnm_cache_pop(k, &mut out), Status::Ok);
        assert_eq!(nnm_cache_pop(k, &mut out), Status::Ok);
        assert_eq!(out.data, a.data);
        *out.data.cast::<u8>() = 7; // still valid after the pop
        let mut b = nnm_tensor::default();
        let smaller = [4u32];
        assert_eq!(nnm_cache_push_new(k, Dtype::U8 as u32, smaller.as_ptr(), 1, &mut b), Status::Ok);
        assert_eq!(b.data, a.data, "the spare buffer is reused");
        assert_eq!(net.report().caches.owned_bytes, 16);
        assert_eq!(nnm_cache_clear(k), Status::Ok);
        assert_eq!(((*k).count, net.report().caches.owned_bytes), (0, 0));

        // Bad descriptors and handles.
        let mut bad = (*p).data;
        bad.ndims = 9;
        assert_eq!(nnm_cache_push(k, &bad), Status::InvalidArgument);
        assert_eq!(last_error(), "tensor has ndims 9: a tensor has 0 (a scalar) to 8 dimensions");
        assert_eq!((*k).count, 0, "a refused push leaves the stack as it was");
        bad.ndims = 0;
        assert_eq!(nnm_cache_push(k, &bad), Status::Ok, "a scalar is a tensor");
        let mut scalar = nnm_tensor::default();
        assert_eq!(nnm_cache_pop(k, &mut scalar), Status::Ok);
        assert_eq!(scalar.ndims, 0);
        bad.ndims = 1;
        bad.ownership = 5;
        assert_eq!(nnm_cache_push(k, &bad), Status::InvalidArgument);
        assert!(last_error().contains("ownership 5"));
        assert_eq!(nnm_cache_push(k, ptr::null()), Status::NullArgument);
        assert_eq!(nnm_cache_push(ptr::null_mut(), &(*p).data), Status::NullArgument);
        assert_eq!(nnm_cache_push(p.cast(), &(*p).data), Status::InvalidArgument);
        assert_eq!(last_error(), "cache is not a valid nnm_cache");
        assert_eq!(nnm_cache_pop(k, ptr::null_mut()), Status::NullArgument);
        assert_eq!(nnm_net_attach_cache(net.0, c("fc1").as_ptr(), ptr::null_mut()), Status::AlreadyExists);
        // Left on the stack at the end: freed with the net.
        assert_eq!(nnm_cache_push_new(k, Dtype::F32 as u32, dims.as_ptr(), 2, ptr::null_mut()), Status::Ok);
    }
}

#[test]
fn freed_nets_are_detected_where_possible() {
    // SAFETY: every pointer is NULL, a live or freed net (refused unread), or writable.
    unsafe {
        let mut n = ptr::null_mut();
        assert_eq!(nnm_net_new(1, &mut n), Status::Ok);
        nnm_net_free(n);
        // Attach, report and free look the handle up without reading it.
        let dims = [1u32];
        let s = nnm_net_attach_param(n, c("w").as_ptr(), 0, dims.as_ptr(), 1, ptr::null_mut());
        assert_eq!(s, Status::InvalidArgument);
        assert!(last_error().contains("is not a live nnm_net (already freed"), "{}", last_error());
        let mut r = nnm_net_report::default();
        assert_eq!(nnm_net_get_report(n, &mut r), Status::InvalidArgument);
        nnm_net_free(n);
        assert!(last_error().contains("double free"), "{}", last_error());
        nnm_net_free(ptr::null_mut()); // no-op
                                       // A pointer nnmem never made.
        let mut fake = nnm_net::default();
        assert_eq!(nnm_net_attach_cache(&mut fake, c("c").as_ptr(), ptr::null_mut()), Status::InvalidArgument);
    }
}

#[test]
fn every_list_walks_in_order_and_report_totals_add_up() {
    let net = TestNet::new(4);
    net.param("a", &[2]);
    net.param("b", &[3]);
    let o = net.output("o1", &[]);
    net.output("o2", &[5]);
    // SAFETY: `o` is a live output of the net.
    unsafe {
        assert_eq!((*o).data.ndims, 1, "a scalar per sample: [max_batch]");
        nnm_net_attach_input_view(net.0, c("i1").as_ptr(), o, ptr::null_mut());
    }
    net.cache("k1");
    net.cache("k2");
    // SAFETY: the net is live; its lists are walked as C walks them.
    unsafe {
        let n = &*net.0;
        assert_eq!(walk(&n.params, offset_of!(nnm_param, node)), ["a", "b"]);
        assert_eq!(walk(&n.outputs, offset_of!(nnm_layer_data, node)), ["o1", "o2"]);
        assert_eq!(walk(&n.inputs, offset_of!(nnm_layer_data, node)), ["i1"]);
        assert_eq!(walk(&n.caches, offset_of!(nnm_cache, node)), ["k1", "k2"]);
    }
    let r = net.report();
    assert_eq!(r.params.owned_bytes, 2 * (8 + 12));
    assert_eq!(r.outputs.owned_bytes, 2 * (4 * 8 + 4 * 5 * 8));
    assert_eq!(r.total_owned_bytes, r.params.owned_bytes + r.outputs.owned_bytes);
    assert_eq!(r.total_referenced_bytes, 2 * 4 * 8);
    assert_eq!(r.caches.entries, 2);
}

/// A deallocator that records what it freed: `ctx` is a `RefCell<Vec<usize>>`
/// of addresses; the buffers are boxed `[f32; 6]`.
///
/// # Safety
/// `ctx` must be such a `RefCell`, and `p` such a box, not freed yet.
unsafe extern "C" fn record_free(ctx: *mut c_void, p: *mut c_void) {
    // SAFETY: the caller's promise.
    unsafe {
        (*ctx.cast::<std::cell::RefCell<Vec<usize>>>()).borrow_mut().push(p as usize);
        drop(Box::from_raw(p.cast::<[f32; 6]>()));
    }
}

#[test]
fn adopted_params_are_freed_once_with_the_net_and_never_after_a_failed_attach() {
    let freed = std::cell::RefCell::new(Vec::<usize>::new());
    let ctx = ptr::addr_of!(freed).cast_mut().cast::<c_void>();
    let dims = [2u32, 3];
    let data = Box::into_raw(Box::new([1.0f32; 6])).cast::<c_void>();
    let diff = Box::into_raw(Box::new([0.0f32; 6])).cast::<c_void>();
    let frozen = Box::into_raw(Box::new([2.0f32; 6])).cast::<c_void>();
    // SAFETY: the net, the buffers (until adopted and freed by the net) and `freed` are live.
    unsafe {
        let net = TestNet::new(1);
        let attach = |name: &str,
                      data: *mut c_void,
                      diff: *mut c_void,
                      free_fn: nnm_free_fn,
                      out: *mut *mut nnm_param| {
            nnm_net_attach_param_adopted(net.0, c(name).as_ptr(), 0, dims.as_ptr(), 2, data, diff, free_fn, ctx, out)
        };
        let mut p = ptr::null_mut();
        assert_eq!(attach("fc.W", data, diff, Some(record_free), &mut p), Status::Ok, "{}", last_error());
        assert_eq!(((*p).data.data, (*p).diff.data), (data, diff));
        assert_eq!(((*p).data.ownership, (*p).diff.ownership), (Ownership::Owned as u32, Ownership::Owned as u32));
        assert_eq!((*p).data.bytes, 24);
        let mut q = ptr::null_mut();
        assert_eq!(attach("emb", frozen, ptr::null_mut(), Some(record_free), &mut q), Status::Ok);
        assert_eq!(
            ((*q).diff.mem_kind, (*q).diff.ownership),
            (MemKind::Placeholder as u32, Ownership::Borrowed as u32)
        );

        // Failed attaches adopt nothing: the caller's buffer stays its own.
        let mine = Box::into_raw(Box::new([3.0f32; 6])).cast::<c_void>();
        assert_eq!(attach("fc.W", mine, ptr::null_mut(), Some(record_free), ptr::null_mut()), Status::AlreadyExists);
        assert_eq!(attach("x", mine, ptr::null_mut(), None, ptr::null_mut()), Status::NullArgument);
        assert_eq!(last_error(), "free_fn is NULL: an adopted buffer needs its deallocator");
        assert_eq!(attach("x", mine, mine, Some(record_free), ptr::null_mut()), Status::InvalidArgument);
        assert!(last_error().contains("same buffer"), "{}", last_error());
        assert_eq!(attach("x", ptr::null_mut(), mine, Some(record_free), ptr::null_mut()), Status::NullArgument);
        assert_eq!(attach("x", mine, diff, Some(record_free), ptr::null_mut()), Status::InvalidArgument);
        assert!(
            last_error().starts_with("diff 0x")
                && last_error().ends_with("is already adopted by this net: it would be freed twice"),
            "{}",
            last_error()
        );
        assert_eq!(attach("x", frozen, ptr::null_mut(), Some(record_free), ptr::null_mut()), Status::InvalidArgument);
        assert!(freed.borrow().is_empty(), "nothing is freed before nnm_net_free");
        drop(Box::from_raw(mine.cast::<[f32; 6]>()));

        let r = net.report();
        assert_eq!((r.params.owned_bytes, r.params.referenced_bytes), (3 * 24, 24), "adopted bytes are the net's");
        drop(net);
    }
    let mut got = freed.into_inner();
    got.sort_unstable();
    let mut want = vec![data as usize, diff as usize, frozen as usize];
    want.sort_unstable();
    assert_eq!(got, want, "each adopted buffer freed exactly once, by nnm_net_free");
}

fn tensor_of(p: *mut nnm_param) -> nnm_tensor {
    // SAFETY: `p` is a live param of a live net.
    unsafe { (*p).data }
}

#[test]
fn stack_caches_hold_their_first_tensors_inline_and_spill_past_them() {
    let net = TestNet::new(1);
    let p = net.param("W", &[2, 3]);
    let w = tensor_of(p);
    let mut k = nnm_stack_cache::default();
    let mut out = nnm_tensor::default();
    let mut n = 0usize;
    // SAFETY: `k` is a stack cache on this stack frame; `w` and `out` are plain values.
    unsafe {
        for i in 0..INLINE {
            assert_eq!(nnm_stack_cache_push(&mut k, &w), Status::Ok);
            assert_eq!(k.tensors[i].ownership, Ownership::View as u32, "a copy of an owned tensor is a view");
        }
        assert!(k.spill.is_null(), "no heap for the inline tensors");
        // Pushing a descriptor that lives in the cache itself, past the inline slots.
        // Both pointers come from one raw pointer to `k`, as a C caller's
        // would: a `&mut k` taken after `&k.tensors[0]` would invalidate the
        // latter under Rust's aliasing rules (Miri checks them).
        let kp: *mut nnm_stack_cache = &mut k;
        let inline0: *const nnm_tensor = ptr::addr_of!((*kp).tensors[0]);
        for _ in 0..20 {
            assert_eq!(nnm_stack_cache_push(kp, inline0), Status::Ok);
        }
        assert_eq!(nnm_stack_cache_count(&mut k, &mut n), Status::Ok);
        assert_eq!((n, k.count), (INLINE + 20, INLINE + 20));
        assert!(!k.spill.is_null() && ptr::eq(k.spill_owner, &k));
        assert_eq!(nnm_stack_cache_get(&mut k, INLINE + 19, &mut out), Status::Ok);
        assert_eq!((out.data, out.ownership), (w.data, Ownership::View as u32));
        assert_eq!(nnm_stack_cache_get(&mut k, INLINE + 20, &mut out), Status::InvalidArgument);
        assert_eq!(last_error(), "index 30: the stack cache holds 30 tensors");

        // A copy of a cache that holds heap is refused, and left alone.
        let mut copy = k;
        assert_eq!(nnm_stack_cache_pop(&mut copy, &mut out), Status::WrongState);
        assert!(last_error().contains("copied or moved"), "{}", last_error());

        for _ in 0..20 {
            assert_eq!(nnm_stack_cache_pop(&mut k, &mut out), Status::Ok);
        }
        assert_eq!(
            (k.count, k.spill.is_null(), k.spill_capacity),
            (INLINE, true, 0),
            "the pop back to the inline slots frees the heap"
        );
        for _ in 0..INLINE {
            assert_eq!(nnm_stack_cache_pop(&mut k, &mut out), Status::Ok);
        }
        assert_eq!(nnm_stack_cache_pop(&mut k, &mut out), Status::WrongState);
        assert_eq!(last_error(), "stack cache is empty: pop without a matching push");

        // Clear frees a spill.
        for _ in 0..INLINE + 2 {
            assert_eq!(nnm_stack_cache_push(&mut k, &w), Status::Ok);
        }
        let stale = k;
        assert_eq!(nnm_stack_cache_clear(&mut k), Status::Ok);
        assert_eq!((k.count, k.spill.is_null()), (0, true));
        // The old struct written back: its heap is gone, so it is refused.
        k = stale;
        assert_eq!(nnm_stack_cache_clear(&mut k), Status::WrongState);
        assert!(last_error().contains("no longer its own"), "{}", last_error());
        assert_eq!(nnm_stack_cache_init(&mut k), Status::Ok);
        // Init on a cache holding heap frees the heap.
        for _ in 0..INLINE + 2 {
            assert_eq!(nnm_stack_cache_push(&mut k, &w), Status::Ok);
        }
        assert_eq!(nnm_stack_cache_init(&mut k), Status::Ok);
        assert_eq!((k.count, k.spill.is_null()), (0, true));
        assert!(live_spills(|live| !live.contains_key(&(ptr::addr_of!(k) as usize))));
    }
}

#[test]
fn stack_caches_refuse_bad_arguments_and_garbage_storage() {
    let net = TestNet::new(1);
    let w = tensor_of(net.param("W", &[4]));
    let mut out = nnm_tensor::default();
    // SAFETY: every pointer is NULL or a local value; `zeroed` is all zeroes, as static C storage is.
    unsafe {
        // Zero-filled storage is a valid empty cache, as NNM_STACK_CACHE_INIT's.
        let mut zeroed: nnm_stack_cache = std::mem::zeroed();
        for _ in 0..INLINE + 3 {
            assert_eq!(nnm_stack_cache_push(&mut zeroed, &w), Status::Ok, "{}", last_error());
        }
        assert_eq!((zeroed.count, zeroed.spill.is_null(), zeroed.tag), (INLINE + 3, false, 0));
        for _ in 0..INLINE + 3 {
            assert_eq!(nnm_stack_cache_pop(&mut zeroed, &mut out), Status::Ok);
        }
        assert_eq!((zeroed.count, zeroed.spill.is_null()), (0, true));
        // A garbage tag is refused.
        let mut garbage: nnm_stack_cache = std::mem::zeroed();
        garbage.tag = 0x5555_5555;
        assert_eq!(nnm_stack_cache_push(&mut garbage, &w), Status::InvalidArgument);
        assert!(last_error().contains("is not a valid nnm_stack_cache"), "{}", last_error());
        // A zero tag with a count past the inline slots and no heap is refused too.
        let mut garbage: nnm_stack_cache = std::mem::zeroed();
        garbage.count = INLINE + 1;
        assert_eq!(nnm_stack_cache_push(&mut garbage, &w), Status::InvalidArgument);
        assert_eq!(nnm_stack_cache_init(&mut garbage), Status::Ok);
        let mut k = garbage;
        let mut bad = w;
        bad.ndims = 9;
        assert_eq!(nnm_stack_cache_push(&mut k, &bad), Status::InvalidArgument);
        assert_eq!(last_error(), "tensor has ndims 9: a tensor has 0 (a scalar) to 8 dimensions");
        bad.ndims = 1;
        bad.dtype = 99;
        assert_eq!(nnm_stack_cache_push(&mut k, &bad), Status::InvalidArgument);
        assert_eq!(k.count, 0);
        assert_eq!(nnm_stack_cache_push(&mut k, ptr::null()), Status::NullArgument);
        assert_eq!(nnm_stack_cache_push(ptr::null_mut(), &w), Status::NullArgument);
        assert_eq!(nnm_stack_cache_pop(&mut k, ptr::null_mut()), Status::NullArgument);
        assert_eq!(nnm_stack_cache_pop(ptr::null_mut(), &mut out), Status::NullArgument);
        assert_eq!(nnm_stack_cache_count(&mut k, ptr::null_mut()), Status::NullArgument);
        assert_eq!(nnm_stack_cache_init(ptr::null_mut()), Status::NullArgument);
        assert_eq!(nnm_stack_cache_clear(ptr::null_mut()), Status::NullArgument);
        // A corrupted count is caught before any heap is touched.
        k.count = INLINE + 1;
        assert_eq!(nnm_stack_cache_pop(&mut k, &mut out), Status::InvalidArgument);
        assert!(last_error().contains("corrupt"), "{}", last_error());
    }
}

#[test]
fn adopted_outputs_are_freed_once_and_their_views_free_nothing() {
    let freed = std::cell::RefCell::new(Vec::<usize>::new());
    let ctx = ptr::addr_of!(freed).cast_mut().cast::<c_void>();
    // [max_batch 2, 3] f32: 24 B, the size of the boxed [f32; 6] buffers.
    let sample = [3u32];
    let data = Box::into_raw(Box::new([1.0f32; 6])).cast::<c_void>();
    let diff = Box::into_raw(Box::new([0.0f32; 6])).cast::<c_void>();
    // SAFETY: the net and the buffers (until adopted) are live; `freed` outlives the net.
    unsafe {
        let net = TestNet::new(2);
        let attach = |name: &str, data: *mut c_void, diff: *mut c_void, out: *mut *mut nnm_layer_data| {
            nnm_net_attach_output_adopted(
                net.0,
                c(name).as_ptr(),
                0,
                sample.as_ptr(),
                1,
                data,
                diff,
                Some(record_free),
                ctx,
                out,
            )
        };
        let mut o = ptr::null_mut();
        assert_eq!(attach("fc1", data, diff, &mut o), Status::Ok, "{}", last_error());
        assert_eq!(((*o).data.data, (*o).diff.data, (*o).data.dims), (data, diff, [2, 3, 0, 0, 0, 0, 0, 0]));
        assert_eq!(((*o).data.ownership, (*o).diff.ownership), (Ownership::Owned as u32, Ownership::Owned as u32));
        let mut v = ptr::null_mut();
        assert_eq!(nnm_net_attach_input_view(net.0, c("relu1").as_ptr(), o, &mut v), Status::Ok);
        assert_eq!(((*v).data.data, (*v).data.ownership), (data, Ownership::View as u32));

        // An output needs its diff; failures adopt nothing.
        let mine = Box::into_raw(Box::new([3.0f32; 6])).cast::<c_void>();
        assert_eq!(attach("fc2", mine, ptr::null_mut(), ptr::null_mut()), Status::NullArgument);
        assert_eq!(last_error(), "diff is NULL");
        assert_eq!(attach("fc1", mine, diff.cast::<u8>().add(1).cast(), ptr::null_mut()), Status::AlreadyExists);
        assert_eq!(attach("fc2", mine, data, ptr::null_mut()), Status::InvalidArgument);
        assert!(freed.borrow().is_empty());
        drop(Box::from_raw(mine.cast::<[f32; 6]>()));
        let r = net.report();
        assert_eq!((r.outputs.owned_bytes, r.inputs.referenced_bytes), (48, 48));
    }
    let mut got = freed.into_inner();
    got.sort_unstable();
    let mut want = vec![data as usize, diff as usize];
    want.sort_unstable();
    assert_eq!(got, want, "each adopted output buffer freed exactly once, by nnm_net_free");
}

#[test]
fn out_parameters_are_checked_before_anything_changes_and_may_point_into_a_stack_cache() {
    let net = TestNet::new(1);
    let w = tensor_of(net.param("W", &[4]));
    let dims = [4u32];
    let mut slots = [ptr::null_mut::<nnm_param>(); 2];
    let misaligned = slots.as_mut_ptr().cast::<u8>().wrapping_add(1).cast::<*mut nnm_param>();
    // SAFETY: the net is live; the misaligned out-parameter is refused
    // before it is written; the stack cache's out-parameters point into it,
    // which its owner (this frame) may do.
    unsafe {
        let s = nnm_net_attach_param(net.0, c("b").as_ptr(), 0, dims.as_ptr(), 1, misaligned);
        assert_eq!(s, Status::InvalidArgument);
        assert!(last_error().starts_with("out_param (0x") && last_error().ends_with("is not aligned to 8 bytes"));
        assert!(nnm_net_param_get(net.0, c("b").as_ptr()).is_null(), "nothing attached");

        let k = net.cache("k");
        assert_eq!(nnm_cache_push(k, &w), Status::Ok);

        let mut s = nnm_stack_cache::default();
        let sp = ptr::addr_of_mut!(s);
        assert_eq!(nnm_stack_cache_push(sp, &w), Status::Ok);
        assert_eq!(nnm_stack_cache_push(sp, ptr::addr_of!((*sp).tensors[0])), Status::Ok);
        assert_eq!(nnm_stack_cache_pop(sp, ptr::addr_of_mut!((*sp).tensors[1])), Status::Ok);
        assert_eq!(nnm_stack_cache_count(sp, ptr::addr_of_mut!((*sp).count)), Status::Ok);
        assert_eq!(((*sp).count, (*sp).tensors[1].data), (1, w.data));
        assert_eq!(nnm_stack_cache_get(sp, 0, ptr::addr_of_mut!((*sp).tensors[3])), Status::Ok);
        assert_eq!((*sp).tensors[3].data, w.data);
        // A NULL required out-parameter fails before the pop.
        assert_eq!(nnm_stack_cache_pop(sp, ptr::null_mut()), Status::NullArgument);
        assert_eq!(nnm_cache_pop(k, ptr::null_mut()), Status::NullArgument);
        assert_eq!(((*sp).count, (*k).count), (1, 1), "a failed pop pops nothing");
    }
}
