//! The legacy pattern's calls from Rust, the way a layer library's glue
//! makes them: list heads only, tensors as the legacy code has them.

use std::cell::RefCell;
use std::ffi::c_void;
use std::ptr;

use super::super::stack_cache::{live_spills, INLINE};
use super::super::tests::{c, last_error, TestNet};
use super::super::*;

/// A deallocator that records what it freed (`ctx`: a `RefCell<Vec<usize>>`)
/// and gives it back to libc.
///
/// # Safety
/// `ctx` must be such a `RefCell`, and `p` a libc allocation not freed yet.
unsafe extern "C" fn record_free(ctx: *mut c_void, p: *mut c_void) {
    // SAFETY: the caller's promise.
    unsafe {
        (*ctx.cast::<RefCell<Vec<usize>>>()).borrow_mut().push(p as usize);
        libc::free(p);
    }
}

/// A descriptor of `dims` f32 elements at `data`, owned as `ownership`.
fn desc(data: *mut c_void, dims: &[u32], ownership: Ownership) -> nnm_tensor {
    let mut d = [0u32; 8];
    d[..dims.len()].copy_from_slice(dims);
    nnm_tensor {
        data,
        bytes: 0, // recomputed by nnmem
        dims: d,
        ndims: dims.len() as u32,
        dtype: Dtype::F32 as u32,
        elem_size: 0,
        mem_kind: if data.is_null() { MemKind::Placeholder as u32 } else { MemKind::Host as u32 },
        ownership: ownership as u32,
    }
}

/// `nnm_net_attach_tensors` with a NULL diff unless given.
///
/// # Safety
/// As `nnm_net_attach_tensors`.
unsafe fn attach(
    list: *mut list_head,
    name: &str,
    data: &nnm_tensor,
    diff: Option<&nnm_tensor>,
    ctx: *mut c_void,
    user: usize,
) -> (Status, *mut list_head) {
    let mut node = ptr::null_mut();
    let diff = diff.map_or(ptr::null(), |d| d as *const nnm_tensor);
    let name = c(name);
    // SAFETY: the caller's promises.
    let s = unsafe {
        nnm_net_attach_tensors(
            list,
            name.as_ptr(),
            data,
            diff,
            Some(record_free),
            ctx,
            ptr::without_provenance_mut(user),
            &mut node,
        )
    };
    (s, node)
}

#[test]
fn the_net_comes_back_from_each_of_its_list_heads_and_from_nothing_else() {
    let net = TestNet::new(2);
    let other = TestNet::new(2);
    let p = net.param("W", &[2]);
    // SAFETY: the anchors' addresses are taken, never dereferenced; every
    // pointer handed over is compared, never read.
    unsafe {
        let n = net.0;
        for anchor in [
            ptr::addr_of!((*n).params),
            ptr::addr_of!((*n).outputs),
            ptr::addr_of!((*n).inputs),
            ptr::addr_of!((*n).caches),
        ] {
            assert_eq!(nnm_net_from_list(anchor), n);
        }
        assert_eq!(nnm_net_from_list(ptr::addr_of!((*other.0).caches)), other.0);
        assert!(nnm_net_from_list(ptr::null()).is_null());
        assert_eq!(last_error(), "list is NULL");
        // An entry's node, a list head of the caller's, a misaligned and a
        // wild pointer: refused unread.
        let local = list_head::default();
        for foreign in [
            ptr::addr_of!((*p).node),
            &local as *const list_head,
            ptr::addr_of!((*n).params).cast::<u8>().add(1).cast::<list_head>(),
            ptr::without_provenance::<list_head>(0x10),
        ] {
            assert!(nnm_net_from_list(foreign).is_null());
            assert!(last_error().contains("is not a list head of a live nnm_net"), "{}", last_error());
        }
    }
    // A freed net's heads are refused (nothing else took the address: the
    // other net is still alive, and no net is made meanwhile).
    let freed = TestNet::new(1);
    // SAFETY: a field's address of the live net; nothing is read.
    let heads = unsafe { ptr::addr_of!((*freed.0).inputs) };
    drop(freed);
    // SAFETY: the pointer is compared, never read.
    assert!(unsafe { nnm_net_from_list(heads) }.is_null());
}

#[test]
fn the_first_batched_attachment_decides_the_batch_and_every_entry_carries_its_user_pointer() {
    let net = TestNet::new(0);
    let freed = RefCell::new(Vec::<usize>::new());
    let ctx = ptr::addr_of!(freed).cast_mut().cast::<c_void>();
    // SAFETY: the net is live and used by this thread only; buffers come
    // from libc and are adopted or freed here; descriptors are locals.
    unsafe {
        let n = net.0;
        let (params, outputs, inputs, caches) = (
            ptr::addr_of_mut!((*n).params),
            ptr::addr_of_mut!((*n).outputs),
            ptr::addr_of_mut!((*n).inputs),
            ptr::addr_of_mut!((*n).caches),
        );
        assert_eq!((*n).max_batch, 0);
        // The sample-dims calls need a batch size first.
        let width = 3u32;
        let mut o = ptr::null_mut();
        let s = nnm_net_attach_output(n, c("early").as_ptr(), Dtype::F32 as u32, &width, 1, &mut o);
        assert_eq!(s, Status::WrongState);
        assert!(last_error().contains("batch size is not decided yet"), "{}", last_error());

        // A param adopted from the legacy allocation: no batch dimension.
        let w = libc::malloc(4 * 6);
        let dw = libc::malloc(4 * 6);
        let (s, pw) = attach(
            params,
            "fc.W",
            &desc(w, &[2, 3], Ownership::Owned),
            Some(&desc(dw, &[2, 3], Ownership::Owned)),
            ctx,
            11,
        );
        assert_eq!(s, Status::Ok, "{}", last_error());
        assert_eq!((*n).max_batch, 0, "a param does not decide the batch");
        let pw = pw.cast::<nnm_param>();
        assert_eq!(((*pw).data.data, (*pw).data.bytes, (*pw).user as usize), (w, 24, 11));
        assert_eq!(nnm_net_param_get(n, c("fc.W").as_ptr()), pw);

        // The first output: nnmem allocates it, [5, 3] decides the batch.
        let (s, fc) = attach(outputs, "fc", &desc(ptr::null_mut(), &[5, 3], Ownership::Owned), None, ctx, 12);
        assert_eq!(s, Status::Ok, "{}", last_error());
        let fc = fc.cast::<nnm_layer_data>();
        assert_eq!(((*n).max_batch, net.report().max_batch), (5, 5));
        assert_eq!(((*fc).data.dims[0], (*fc).data.ownership, (*fc).user as usize), (5, 0, 12));
        assert_eq!(nnm_net_output_get(n, c("fc").as_ptr()), fc);
        // Now the sample-dims calls work, and other batch sizes are refused.
        assert_eq!(nnm_net_attach_output(n, c("late").as_ptr(), Dtype::F32 as u32, &width, 1, &mut o), Status::Ok);
        assert!((*o).user.is_null());
        let (s, _) = attach(outputs, "wrong", &desc(ptr::null_mut(), &[4, 3], Ownership::Owned), None, ctx, 0);
        assert_eq!(s, Status::InvalidArgument);
        assert!(last_error().contains("batch dimension 4 differs from the net's batch size 5"), "{}", last_error());

        // The input of the next layer, a legacy shallow copy of fc (still
        // saying OWNED): a view.
        let (s, relu) = attach(inputs, "relu", &desc((*fc).data.data, &[5, 3], Ownership::Owned), None, ctx, 13);
        assert_eq!(s, Status::Ok, "{}", last_error());
        let relu = relu.cast::<nnm_layer_data>();
        assert_eq!(((*relu).data.data, (*relu).diff.data), ((*fc).data.data, (*fc).diff.data));
        assert_eq!(((*relu).data.ownership, (*relu).user as usize), (Ownership::View as u32, 13));
        assert_eq!(nnm_net_input_get(n, c("relu").as_ptr()), relu);
        // The net input: a placeholder, bound per batch.
        let (s, x) = attach(inputs, "x", &desc(ptr::null_mut(), &[5, 2], Ownership::Borrowed), None, ctx, 14);
        assert_eq!(s, Status::Ok, "{}", last_error());
        let x = x.cast::<nnm_layer_data>();
        let mut batch = [0f32; 4];
        assert_eq!(nnm_net_input_bind(x, 0, batch.as_mut_ptr().cast(), ptr::null_mut(), 2), Status::Ok);
        assert_eq!(((*x).data.dims[0], (*x).user as usize), (2, 14));
        // A gradient buffer of its own, on a shallow copy or a placeholder,
        // would be neither used nor freed: refused, nothing attached, the
        // buffer still the caller's (the copy may repeat the output's diff).
        let own_diff = libc::malloc(4 * 15);
        let owned_diff = desc(own_diff, &[5, 3], Ownership::Owned);
        let before = net.report();
        let (s, _) =
            attach(inputs, "relu2", &desc((*fc).data.data, &[5, 3], Ownership::Owned), Some(&owned_diff), ctx, 0);
        assert_eq!(s, Status::InvalidArgument);
        assert!(
            last_error()
                .contains("of an input that views an output, whose gradient buffer it shares: pass the output's diff"),
            "{}",
            last_error()
        );
        let (s, _) =
            attach(inputs, "x2", &desc(ptr::null_mut(), &[5, 3], Ownership::Borrowed), Some(&owned_diff), ctx, 0);
        assert_eq!(s, Status::InvalidArgument);
        assert!(last_error().contains("of an input that is a placeholder, which has no gradient buffer of its own"));
        assert_eq!(net.report(), before, "nothing attached");
        assert!(freed.borrow().is_empty(), "nothing adopted, nothing freed");
        libc::free(own_diff);
        let (s, _) = attach(
            inputs,
            "relu2",
            &desc((*fc).data.data, &[5, 3], Ownership::Owned),
            Some(&desc((*fc).diff.data, &[5, 3], Ownership::Owned)),
            ctx,
            0,
        );
        assert_eq!(s, Status::Ok, "the output's own diff: {}", last_error());
        // Caller memory as an input is borrowed, and is no placeholder.
        let (s, mine) =
            attach(inputs, "mine", &desc(batch.as_mut_ptr().cast(), &[5, 2], Ownership::Borrowed), None, ctx, 0);
        assert_eq!(s, Status::Ok, "{}", last_error());
        assert_eq!(
            nnm_net_input_bind(mine.cast(), 0, batch.as_mut_ptr().cast(), ptr::null_mut(), 1),
            Status::WrongState
        );
        assert!(last_error().contains("is caller memory, not a placeholder"), "{}", last_error());

        // Refusals, each changing nothing.
        let r0 = net.report();
        let cases: [(*mut list_head, nnm_tensor, Status, &str); 6] = [
            (caches, desc(ptr::null_mut(), &[2], Ownership::Owned), Status::InvalidArgument, "list is a net's caches"),
            (
                params,
                desc(batch.as_mut_ptr().cast(), &[2], Ownership::View),
                Status::InvalidArgument,
                "only an input views",
            ),
            (inputs, desc(batch.as_mut_ptr().cast(), &[5, 2], Ownership::View), Status::InvalidArgument, "no output"),
            (
                inputs,
                desc(ptr::null_mut(), &[5, 2], Ownership::Owned),
                Status::InvalidArgument,
                "an input owns nothing",
            ),
            (params, desc(ptr::null_mut(), &[2], Ownership::Borrowed), Status::NullArgument, "placeholders are inputs"),
            (outputs, desc(ptr::null_mut(), &[], Ownership::Owned), Status::InvalidArgument, "its batch"),
        ];
        for (list, d, status, message) in cases {
            let (s, node) = attach(list, "refused", &d, None, ctx, 0);
            assert_eq!((s, node), (status, ptr::null_mut()), "{message}");
            assert!(last_error().contains(message), "{message}: {}", last_error());
        }
        let (s, _) = attach(ptr::null_mut(), "x", &desc(ptr::null_mut(), &[1], Ownership::Owned), None, ctx, 0);
        assert_eq!(s, Status::NullArgument);
        let mut bad = desc(ptr::null_mut(), &[2], Ownership::Owned);
        bad.ownership = 7;
        assert_eq!(attach(params, "bad", &bad, None, ctx, 0).0, Status::InvalidArgument);
        assert_eq!(net.report(), r0);
        assert!(freed.borrow().is_empty());
    }
    drop(net);
    let mut f = freed.into_inner();
    f.sort_unstable();
    assert_eq!(f.len(), 2, "the adopted weight's data and diff, once each, with the net");
}

#[test]
fn single_entries_are_detached_and_freed_and_their_names_are_free_again() {
    let net = TestNet::new(4);
    let freed = RefCell::new(Vec::<usize>::new());
    let ctx = ptr::addr_of!(freed).cast_mut().cast::<c_void>();
    // SAFETY: as in the test above.
    unsafe {
        let n = net.0;
        let (params, outputs, inputs) =
            (ptr::addr_of_mut!((*n).params), ptr::addr_of_mut!((*n).outputs), ptr::addr_of_mut!((*n).inputs));
        let w = libc::malloc(16);
        let (s, pw) = attach(params, "W", &desc(w, &[4], Ownership::Owned), None, ctx, 0);
        assert_eq!(s, Status::Ok);
        let keep = net.param("keep", &[2]);
        let (_, fc) = attach(outputs, "fc", &desc(ptr::null_mut(), &[4, 8], Ownership::Owned), None, ctx, 0);
        let fc_data = (*fc.cast::<nnm_layer_data>()).data.data;
        let (_, view) = attach(inputs, "relu", &desc(fc_data, &[4, 8], Ownership::View), None, ctx, 0);
        let mut cache = ptr::null_mut();
        assert_eq!(nnm_net_attach_cache(n, c("k").as_ptr(), &mut cache), Status::Ok);
        let before = net.report();

        // An output is not detached while an input views it.
        assert_eq!(nnm_net_detach(n, fc), Status::WrongState);
        assert!(last_error().contains("viewed by 1 input(s)"), "{}", last_error());
        assert_eq!(nnm_net_detach(n, view), Status::Ok);
        assert_eq!(nnm_net_detach(n, fc), Status::Ok);
        assert!(nnm_net_output_get(n, c("fc").as_ptr()).is_null());
        let r = net.report();
        assert_eq!((r.outputs.entries, r.inputs.entries), (before.outputs.entries - 1, before.inputs.entries - 1));
        assert_eq!(r.outputs.owned_bytes, before.outputs.owned_bytes - 2 * 4 * 8 * 4);
        assert_eq!((*outputs).next, outputs, "the outputs list is empty again");

        // An adopted buffer is freed at detach, once; the rest stays linked.
        assert_eq!(nnm_net_detach(n, pw), Status::Ok);
        assert_eq!(*freed.borrow(), vec![w as usize]);
        assert_eq!(nnm_net_detach(n, pw), Status::InvalidArgument, "detached already");
        assert_eq!(
            ((*params).next, (*params).prev),
            (ptr::addr_of_mut!((*keep).node), ptr::addr_of_mut!((*keep).node))
        );
        assert_eq!(((*keep).node.next, (*keep).node.prev), (params, params));
        // The address may be adopted again, and the name used again.
        let w2 = libc::malloc(16);
        let (s, _) = attach(params, "W", &desc(w2, &[4], Ownership::Owned), None, ctx, 0);
        assert_eq!(s, Status::Ok, "{}", last_error());

        assert_eq!(nnm_net_detach(n, cache.cast()), Status::Ok);
        assert_eq!(net.report().caches.entries, 0);
        // Anything else is refused unread: a list head, another net's entry,
        // a wild pointer, NULL.
        let other = TestNet::new(1);
        let theirs = other.param("W", &[1]);
        for foreign in [params, theirs.cast::<list_head>(), ptr::without_provenance_mut::<list_head>(0x40)] {
            assert_eq!(nnm_net_detach(n, foreign), Status::InvalidArgument);
            assert!(last_error().contains("is not the node of an entry of this net"), "{}", last_error());
        }
        assert_eq!(nnm_net_detach(n, ptr::null_mut()), Status::NullArgument);
        assert_eq!(nnm_net_detach(ptr::null_mut(), pw), Status::NullArgument);
    }
    drop(net);
    assert_eq!(freed.borrow().len(), 2);
}

#[test]
fn a_stack_cache_is_a_net_cache_and_the_same_calls_work_on_both() {
    let net = TestNet::new(1);
    // SAFETY: a live param of the live net.
    let w = unsafe { (*net.param("W", &[2, 3])).data };
    let mut out = nnm_tensor::default();
    let mut count = 0usize;
    // SAFETY: the net and the caller's cache are live and used by this
    // thread only; the caller's cache stays put while attached.
    unsafe {
        let n = net.0;
        // The caller's storage, zero-filled as static storage is.
        let mut mine: nnm_stack_cache = std::mem::zeroed();
        let mine_p: *mut nnm_stack_cache = &mut mine;
        let mut entry = ptr::null_mut();
        let s = nnm_net_attach_stack_cache(
            n,
            c("fc1").as_ptr(),
            mine_p,
            ptr::without_provenance_mut::<c_void>(0x51),
            &mut entry,
        );
        assert_eq!(s, Status::Ok, "{}", last_error());
        assert_eq!(((*entry).stack, (*entry).user as usize), (mine_p, 0x51));
        assert_eq!(nnm_net_cache_get(n, c("fc1").as_ptr()), entry);
        // nnmem's storage.
        let mut own = ptr::null_mut();
        assert_eq!(
            nnm_net_attach_stack_cache(n, c("fc2").as_ptr(), ptr::null_mut(), ptr::null_mut(), &mut own),
            Status::Ok
        );
        let own_stack = (*own).stack;
        assert!(!own_stack.is_null());

        // Both ways in, both ways out, past the inline slots.
        for i in 0..INLINE + 5 {
            let s = if i % 2 == 0 { nnm_stack_cache_push(mine_p, &w) } else { nnm_cache_push(entry, &w) };
            assert_eq!(s, Status::Ok, "{}", last_error());
            assert_eq!(nnm_cache_push(own, &w), Status::Ok);
        }
        assert_eq!(nnm_cache_count(entry, &mut count), Status::Ok);
        assert_eq!(
            (count, (*mine_p).count, (*entry).count, (*entry).tensors),
            (INLINE + 5, INLINE + 5, 0, ptr::null())
        );
        assert_eq!(net.report().caches.tensors, 2 * (INLINE as u64 + 5));
        assert_eq!(net.report().caches.referenced_bytes, 2 * (INLINE as u64 + 5) * 24);
        assert_eq!(nnm_cache_pop(entry, &mut out), Status::Ok);
        assert_eq!((out.data, out.ownership), (w.data, Ownership::View as u32));
        assert_eq!(nnm_stack_cache_pop(mine_p, &mut out), Status::Ok);
        assert_eq!(nnm_stack_cache_count(own_stack, &mut count), Status::Ok);
        assert_eq!(count, INLINE + 5);
        assert_eq!(nnm_cache_push_new(entry, Dtype::F32 as u32, [2u32].as_ptr(), 1, &mut out), Status::InvalidArgument);
        assert!(last_error().contains("holds descriptors only"), "{}", last_error());

        // Attached once per net; not a garbage cache.
        let mut again = ptr::null_mut();
        assert_eq!(
            nnm_net_attach_stack_cache(n, c("dup").as_ptr(), mine_p, ptr::null_mut(), &mut again),
            Status::InvalidArgument
        );
        assert!(last_error().contains("already a cache of this net"), "{}", last_error());
        let mut garbage: nnm_stack_cache = std::mem::zeroed();
        garbage.tag = 3;
        assert_eq!(
            nnm_net_attach_stack_cache(n, c("g").as_ptr(), &mut garbage, ptr::null_mut(), &mut again),
            Status::InvalidArgument
        );
        assert!(again.is_null());

        // Detached, the caller's cache is the caller's again, with what it holds.
        assert_eq!(nnm_net_detach(n, entry.cast()), Status::Ok);
        assert_eq!(nnm_stack_cache_count(mine_p, &mut count), Status::Ok);
        assert_eq!(count, INLINE + 3);
        assert_eq!(nnm_stack_cache_clear(mine_p), Status::Ok);
        assert!(live_spills(|l| !l.contains_key(&(mine_p as usize))));
    }
    // nnmem's own stack cache goes with the net, heap and all.
    let own_addr = {
        let mut own = ptr::null_mut();
        // SAFETY: a live net.
        unsafe { nnm_net_attach_stack_cache(net.0, c("fc3").as_ptr(), ptr::null_mut(), ptr::null_mut(), &mut own) };
        for _ in 0..INLINE + 1 {
            // SAFETY: a live cache of the net.
            assert_eq!(unsafe { nnm_cache_push(own, &w) }, Status::Ok);
        }
        // SAFETY: as above.
        unsafe { (*own).stack as usize }
    };
    assert!(live_spills(|l| l.contains_key(&own_addr)));
    drop(net);
    assert!(live_spills(|l| !l.contains_key(&own_addr)), "freed with the net");
}
