//! The `nnm_exec_*` exports driven from Rust (so that Miri sees the pointer
//! work): bad input with its status and message and nothing changed, a
//! model with constant bytes, an alias and a concat compiled and resolved,
//! initialiser failures, partial pools, cancellation and stale releases.

use std::ffi::{c_int, c_void, CStr};
use std::ptr::{null, null_mut, NonNull};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::compiled::*;
use super::model::*;
use super::pool::*;
use crate::arena::ReportFormat;
use crate::ffi::cancel::{nnm_cancel_token, nnm_cancel_token_cancel, nnm_cancel_token_free, nnm_cancel_token_new};
use crate::ffi::device::{
    nnm_device_allocator, nnm_device_allocator_free, nnm_device_allocator_new, nnm_device_allocator_vtable,
    NNM_DEVICE_HOST_ACCESSIBLE,
};
use crate::ffi::nnm_last_error;
use crate::pool::device::host;
use crate::pool::{DevicePtr, Stream};
use crate::status::Status;

fn last_error() -> String {
    // SAFETY: nnm_last_error returns a NUL-terminated thread-local string.
    unsafe { CStr::from_ptr(nnm_last_error()) }.to_str().unwrap().to_string()
}

/// Asserts `status` and that the last error contains `text`.
#[track_caller]
fn fails(status: Status, expected: Status, text: &str) {
    assert_eq!(status, expected, "{}", last_error());
    assert!(last_error().contains(text), "expected '{text}' in: {}", last_error());
}

fn new_model() -> *mut nnm_exec_model {
    let mut m = null_mut();
    // SAFETY: `m` is writable.
    assert_eq!(unsafe { nnm_exec_model_new(&mut m) }, Status::Ok);
    m
}

fn operator_count(m: *const nnm_exec_model) -> usize {
    let mut n = usize::MAX;
    // SAFETY: `m` is live; `n` is writable.
    assert_eq!(unsafe { nnm_exec_model_operator_count(m, &mut n) }, Status::Ok);
    n
}

/// An operator's description over borrowed arrays (alive while it is used).
fn desc(
    name: &CStr,
    inputs: &[nnm_exec_tensor],
    outputs: &[nnm_exec_output],
    immutable: &[u64],
    mutable: &[u64],
) -> nnm_exec_operator_desc {
    nnm_exec_operator_desc {
        name: name.as_ptr(),
        inputs: inputs.as_ptr(),
        input_count: inputs.len(),
        outputs: outputs.as_ptr(),
        output_count: outputs.len(),
        immutable_sizes: immutable.as_ptr(),
        immutable_count: immutable.len(),
        mutable_sizes: mutable.as_ptr(),
        mutable_count: mutable.len(),
        ..Default::default()
    }
}

fn t(id: u64, size: u64) -> nnm_exec_tensor {
    nnm_exec_tensor { id, size }
}

fn out(id: u64, size: u64) -> nnm_exec_output {
    nnm_exec_output { id, size, alias_of: NNM_EXEC_NO_ALIAS }
}

fn add(m: *mut nnm_exec_model, d: &nnm_exec_operator_desc) -> Result<usize, Status> {
    let mut index = usize::MAX;
    // SAFETY: `m` is live; `d`'s arrays are alive; `index` is writable.
    match unsafe { nnm_exec_model_add_operator(m, d, &mut index) } {
        Status::Ok => Ok(index),
        s => Err(s),
    }
}

fn constant(m: *mut nnm_exec_model, id: u64, bytes: &[u8]) -> Status {
    // SAFETY: `m` is live; `bytes` is readable for its length.
    unsafe { nnm_exec_model_add_constant(m, id, bytes.len() as u64, bytes.as_ptr().cast()) }
}

#[test]
fn bad_model_input_is_refused_with_figures_and_changes_nothing() {
    let m = new_model();
    assert_eq!(constant(m, 1, &[7; 16]), Status::Ok);
    // SAFETY: every pointer below is NULL, live, or readable as stated.
    unsafe {
        fails(nnm_exec_model_new(null_mut()), Status::NullArgument, "out is NULL");
        fails(nnm_exec_model_add_constant(null_mut(), 2, 8, null()), Status::NullArgument, "model is NULL");
        fails(nnm_exec_model_add_constant(m, 2, 0, null()), Status::InvalidArgument, "constant 2 has size 0");
        fails(nnm_exec_model_add_constant(m, 1, 8, null()), Status::AlreadyExists, "constant 1: the id is already");
        fails(nnm_exec_model_add_constant(m, u64::MAX, 8, null()), Status::InvalidArgument, "NNM_EXEC_NO_ALIAS");
        fails(nnm_exec_model_add_operator(m, null(), null_mut()), Status::NullArgument, "desc is NULL");
        fails(nnm_exec_model_pin(m, 99), Status::NotFound, "buffer 99 is unknown");
        fails(nnm_exec_model_operator_count(m, null_mut()), Status::NullArgument, "out is NULL");
    }
    let op = |inputs: &[nnm_exec_tensor], outputs: &[nnm_exec_output], imm: &[u64]| {
        add(m, &desc(c"conv", inputs, outputs, imm, &[64]))
    };
    assert_eq!(op(&[t(5, 16)], &[out(2, 8)], &[]), Err(Status::NotFound));
    assert!(last_error().contains("operator 0 'conv': input 5 is not a buffer yet"), "{}", last_error());
    assert_eq!(op(&[t(1, 8)], &[out(2, 8)], &[]), Err(Status::InvalidArgument));
    assert!(last_error().contains("input 1 is read as 8 B, smaller than its buffer of 16 B"), "{}", last_error());
    assert_eq!(op(&[t(1, 16)], &[out(u64::MAX, 8)], &[]), Err(Status::InvalidArgument));
    assert!(last_error().contains("operator 0 'conv': output 0 id 18446744073709551615"), "{}", last_error());
    assert_eq!(op(&[t(1, 16)], &[out(2, 8), out(2, 8)], &[]), Err(Status::AlreadyExists));
    let alias_of_constant = nnm_exec_output { id: 2, size: 8, alias_of: 1 };
    assert_eq!(op(&[t(1, 16)], &[alias_of_constant], &[]), Err(Status::InvalidArgument));
    assert!(last_error().contains("constants can never be outputs"), "{}", last_error());
    assert_eq!(op(&[t(1, 16)], &[out(2, 8)], &[0]), Err(Status::InvalidArgument));
    assert!(last_error().contains("immutable workbuffer 0 has size 0"), "{}", last_error());
    // C arrays: NULL with a count, counts past the address space, names.
    let (reads, writes) = ([t(1, 16)], [out(2, 8)]);
    let mut d = desc(c"conv", &reads, &writes, &[], &[]);
    d.outputs = null();
    assert_eq!(add(m, &d), Err(Status::NullArgument));
    assert!(last_error().contains("desc->outputs is NULL"), "{}", last_error());
    d = desc(c"conv", &reads, &writes, &[], &[]);
    d.input_count = usize::MAX;
    assert_eq!(add(m, &d), Err(Status::Overflow));
    assert!(last_error().contains("desc->inputs: 18446744073709551615 elements"), "{}", last_error());
    let bad_name = [0xffu8, 0];
    d = desc(c"conv", &reads, &writes, &[], &[]);
    d.name = bad_name.as_ptr().cast();
    assert_eq!(add(m, &d), Err(Status::InvalidArgument));
    assert!(last_error().contains("desc->name is not valid UTF-8"), "{}", last_error());
    assert_eq!(operator_count(m), 0, "no failed call added an operator");
    // Concat parents: ids, parts, counts.
    // SAFETY: `m` is live; the arrays are readable for `count` values.
    unsafe {
        fails(nnm_exec_model_add_concat(m, 9, 64, null(), null(), 0), Status::InvalidArgument, "has no parts");
        fails(nnm_exec_model_add_concat(m, 9, 64, [1u64].as_ptr(), null(), 1), Status::NullArgument, "offsets");
        let (parts, offsets) = ([1u64], [0u64]);
        fails(
            nnm_exec_model_add_concat(m, 9, 64, parts.as_ptr(), offsets.as_ptr(), 1),
            Status::InvalidArgument,
            "part 1 is neither a tensor an operator produces nor a concat parent",
        );
        fails(
            nnm_exec_model_add_concat(m, u64::MAX, 64, parts.as_ptr(), offsets.as_ptr(), 1),
            Status::InvalidArgument,
            "concat parent id 18446744073709551615 is NNM_EXEC_NO_ALIAS",
        );
    }
    // A good operator, through a NULL name and NULL empty arrays.
    let mut good = desc(c"", &reads, &writes, &[], &[]);
    good.name = null();
    good.immutable_sizes = null();
    good.mutable_sizes = null();
    assert_eq!(add(m, &good), Ok(0));
    let (reads, writes) = ([t(2, 8)], [out(3, 8)]);
    // SAFETY: `m` is live, the arrays alive; NULL out_index is allowed.
    let status = unsafe { nnm_exec_model_add_operator(m, &desc(c"b", &reads, &writes, &[], &[]), null_mut()) };
    assert_eq!(status, Status::Ok);
    assert_eq!(operator_count(m), 2);
    // SAFETY: `m` is live, then freed once; the second free is detected.
    unsafe {
        nnm_exec_model_free(m);
        nnm_exec_model_free(m);
        fails(nnm_exec_model_operator_count(m, &mut 0), Status::InvalidArgument, "not a live nnm_exec_model");
        nnm_exec_model_free(null_mut());
    }
}

/// What the test initialiser saw and does: (op, count) per call, a value
/// to return from operator `fail_at`.
#[derive(Default)]
struct InitLog {
    calls: Vec<(usize, usize)>,
    fail_at: Option<(usize, c_int)>,
}

/// Records the call, fills each workbuffer with `0xA0 + op`, and returns
/// the configured failure.
unsafe extern "C" fn init_fill(ctx: *mut c_void, op: usize, buffers: *const *mut c_void, count: usize) -> c_int {
    // SAFETY: every test passes a live `InitLog` as the context.
    let log = unsafe { &mut *ctx.cast::<InitLog>() };
    log.calls.push((op, count));
    if let Some((at, value)) = log.fail_at {
        if at == op {
            return value;
        }
    }
    // SAFETY: nnmem passes `count` pointers to immutable workbuffers of at
    // least 32 B each (every test model's smallest) in host memory.
    unsafe {
        for &b in std::slice::from_raw_parts(buffers, count) {
            std::ptr::write_bytes(b.cast::<u8>(), 0xA0 + op as u8, 32);
        }
    }
    0
}

/// An operator's name, inputs, outputs, immutable and mutable sizes.
type OpArrays = (&'static CStr, Vec<nnm_exec_tensor>, Vec<nnm_exec_output>, Vec<u64>, Vec<u64>);

/// The network of the resolution test: a constant with bytes, a reshape
/// alias, a concat parent of two branches, workbuffers of both kinds.
///
/// ```text
/// op0 conv    (1: const 16 B) -> 2 (64 B)   immutable [32]  mutable [128]
/// op1 reshape 2 -> 3 = alias of 2
/// op2 left    3 -> 4 (32 B)                 immutable [48]
/// op3 right   3 -> 5 (32 B)                 mutable [16]
/// concat parent 6 (64 B) = 4 at 0, 5 at 32
/// op4 head    6 -> 7 (8 B, pinned)
/// ```
fn network() -> *mut nnm_exec_model {
    let m = new_model();
    let bytes: Vec<u8> = (0..16).collect();
    assert_eq!(constant(m, 1, &bytes), Status::Ok, "{}", last_error());
    let alias = nnm_exec_output { id: 3, size: 64, alias_of: 2 };
    let ops: [OpArrays; 5] = [
        (c"conv", vec![t(1, 16)], vec![out(2, 64)], vec![32], vec![128]),
        (c"reshape", vec![t(2, 64)], vec![alias], vec![], vec![]),
        (c"left", vec![t(3, 64)], vec![out(4, 32)], vec![48], vec![]),
        (c"right", vec![t(3, 64)], vec![out(5, 32)], vec![], vec![16]),
        (c"head", vec![t(6, 64)], vec![out(7, 8)], vec![], vec![]),
    ];
    for (k, (name, inputs, outputs, imm, mutable)) in ops.iter().enumerate() {
        if k == 4 {
            let (parts, offsets) = ([4u64, 5], [0u64, 32]);
            // SAFETY: `m` is live; both arrays hold 2 values.
            let s = unsafe { nnm_exec_model_add_concat(m, 6, 64, parts.as_ptr(), offsets.as_ptr(), 2) };
            assert_eq!(s, Status::Ok, "{}", last_error());
        }
        assert_eq!(add(m, &desc(name, inputs, outputs, imm, mutable)), Ok(k), "{}", last_error());
    }
    // SAFETY: `m` is live.
    assert_eq!(unsafe { nnm_exec_model_pin(m, 7) }, Status::Ok);
    m
}

fn compile(
    m: *const nnm_exec_model,
    allocator: *const nnm_device_allocator,
    log: &mut InitLog,
) -> Result<*mut nnm_exec_compiled, Status> {
    let mut c = null_mut();
    let ctx = std::ptr::from_mut(log).cast();
    // SAFETY: `m` is live, NULL options mean defaults, `log` outlives the call.
    match unsafe { nnm_exec_compile(m, null(), allocator, Some(init_fill), ctx, &mut c) } {
        Status::Ok => Ok(c),
        s => Err(s),
    }
}

fn resolve(c: *const nnm_exec_compiled, op: usize, block: &nnm_exec_block) -> Vec<*mut c_void> {
    let mut n = 0;
    // SAFETY: `c` is live; the size query writes only `n`.
    assert_eq!(unsafe { nnm_exec_resolve(c, op, block, null_mut(), 0, &mut n) }, Status::Ok, "{}", last_error());
    let mut pointers = vec![null_mut(); n];
    let mut written = 0;
    // SAFETY: `pointers` holds `n` writable pointers.
    let s = unsafe { nnm_exec_resolve(c, op, block, pointers.as_mut_ptr(), n, &mut written) };
    assert_eq!((s, written), (Status::Ok, n), "{}", last_error());
    pointers
}

fn acquire(pool: *mut nnm_exec_pool, timeout_ns: i64) -> Result<nnm_exec_block, Status> {
    let mut b = nnm_exec_block::default();
    // SAFETY: `pool` is live; `b` is writable.
    match unsafe { nnm_exec_pool_acquire(pool, timeout_ns, null(), &mut b) } {
        Status::Ok => Ok(b),
        s => Err(s),
    }
}

fn pool_info(pool: *const nnm_exec_pool) -> nnm_exec_pool_info {
    let mut i = nnm_exec_pool_info::default();
    // SAFETY: `pool` is live; `i` is writable.
    assert_eq!(unsafe { nnm_exec_pool_get_info(pool, &mut i) }, Status::Ok, "{}", last_error());
    i
}

fn new_pool(c: *const nnm_exec_compiled, allocator: *const nnm_device_allocator, n: usize) -> *mut nnm_exec_pool {
    let mut p = null_mut();
    // SAFETY: `c` is live; `p` is writable.
    assert_eq!(unsafe { nnm_exec_pool_new(c, allocator, n, &mut p) }, Status::Ok, "{}", last_error());
    p
}

#[test]
fn a_network_with_constants_an_alias_and_a_concat_resolves_to_its_places() {
    let m = network();
    let mut log = InitLog::default();
    let c = compile(m, null(), &mut log).unwrap();
    // SAFETY: the compiled model does not need the model.
    unsafe { nnm_exec_model_free(m) };
    assert_eq!(log.calls, [(0, 1), (2, 1)], "one call per operator with immutable workbuffers, in order");
    let mut info = nnm_exec_info::default();
    // SAFETY: `c` is live; `info` is writable.
    assert_eq!(unsafe { nnm_exec_compiled_info(c, &mut info) }, Status::Ok);
    assert_eq!((info.constants_bytes, info.immutable_bytes), (256, 512));
    assert_eq!((info.operator_count, info.buffer_count), (5, 7));
    assert!(info.mutable_lower_bound <= info.mutable_bytes && info.mutable_bytes <= info.block_bytes, "{info:?}");
    let mut shape = nnm_exec_op_shape::default();
    // SAFETY: as above.
    assert_eq!(unsafe { nnm_exec_compiled_op_shape(c, 0, &mut shape) }, Status::Ok);
    assert_eq!((shape.input_count, shape.output_count, shape.immutable_count, shape.mutable_count), (1, 1, 1, 1));

    let place = |id| {
        let mut p = nnm_exec_place::default();
        // SAFETY: `c` is live; `p` is writable.
        assert_eq!(unsafe { nnm_exec_compiled_place(c, id, &mut p) }, Status::Ok, "{}", last_error());
        p
    };
    assert_eq!(place(1), nnm_exec_place { area: nnm_exec_area::Constants as u32, offset: 0, size: 16 });
    assert_eq!((place(3).offset, place(3).area), (place(2).offset, nnm_exec_area::Mutable as u32));
    assert_eq!(place(5).offset, place(6).offset + 32);

    let pool = new_pool(c, null(), 1);
    let b = acquire(pool, 0).unwrap();
    let base = b.base as usize;
    // Addresses are compared as integers; memory is read through the
    // pointers nnmem handed out (so Miri's strict provenance holds).
    let at = |p: *mut c_void| p as usize;
    let in_block = |p: *mut c_void| (base..base + b.size as usize).contains(&at(p));
    let mut constant_ptr = null_mut();
    // SAFETY: `c` is live; the out-parameter is writable.
    assert_eq!(unsafe { nnm_exec_compiled_constant(c, 1, &mut constant_ptr) }, Status::Ok);
    let [conv, reshape, left, right, head] = [0, 1, 2, 3, 4].map(|op| resolve(c, op, &b));
    assert_eq!(conv[0], constant_ptr);
    // SAFETY: the constant's 16 bytes were copied into host memory.
    assert_eq!(unsafe { std::slice::from_raw_parts(conv[0].cast::<u8>(), 16) }, (0..16).collect::<Vec<u8>>());
    // SAFETY: the initialiser filled the immutable workbuffer's 32 bytes.
    assert_eq!(unsafe { std::slice::from_raw_parts(conv[2].cast::<u8>(), 32) }, [0xA0; 32]);
    assert!(!in_block(conv[2]) && in_block(conv[1]) && in_block(conv[3]));
    assert_eq!(at(conv[1]), base + place(2).offset as usize);
    assert_eq!(reshape, [conv[1], conv[1]], "the alias is its input's buffer");
    assert_eq!((left[0], right[0]), (conv[1], conv[1]));
    assert_eq!(
        (at(left[1]), at(right[1])),
        (at(head[0]), at(head[0]) + 32),
        "the parts sit in the parent at their offsets"
    );
    // SAFETY: the initialiser filled op 2's immutable workbuffer.
    assert_eq!(unsafe { *left[2].cast::<u8>() }, 0xA2);
    assert!(in_block(right[2]) && in_block(head[1]));
    // SAFETY: as in `pool_info`; releasing the lease acquired above.
    assert_eq!(unsafe { nnm_exec_pool_release(pool, &b) }, Status::Ok);
    // SAFETY: both live, freed once each.
    unsafe {
        nnm_exec_pool_free(pool);
        nnm_exec_compiled_free(c);
    }
}

/// A host-memory device that fails every allocation after `room` of them
/// (a device that runs out after two blocks), counting what it holds.
struct Room {
    room: usize,
    allocs: AtomicUsize,
    live: AtomicUsize,
}

unsafe extern "C" fn room_alloc(ctx: *mut c_void, size: usize, alignment: usize, _: *mut c_void) -> *mut c_void {
    // SAFETY: every vtable here has a live `Room` as context.
    let r = unsafe { &*ctx.cast::<Room>() };
    if r.allocs.fetch_add(1, Ordering::SeqCst) >= r.room {
        return null_mut();
    }
    r.live.fetch_add(1, Ordering::SeqCst);
    host().alloc(size as u64, alignment as u64, Stream::DEFAULT).map_or(null_mut(), |p| p.as_ptr().cast())
}

unsafe extern "C" fn room_free(ctx: *mut c_void, p: *mut c_void, size: usize, _: *mut c_void) {
    // SAFETY: as in `room_alloc`.
    unsafe { &*ctx.cast::<Room>() }.live.fetch_sub(1, Ordering::SeqCst);
    host().free(DevicePtr::new(p.cast()).unwrap(), size as u64, Stream::DEFAULT);
}

fn room_allocator(r: &Room, flags: u32) -> *mut nnm_device_allocator {
    let v = nnm_device_allocator_vtable {
        name: c"two-blocks".as_ptr(),
        ctx: std::ptr::from_ref(r).cast_mut().cast(),
        alloc: Some(room_alloc),
        free: Some(room_free),
        mem_info: None,
        release: None,
        flags,
    };
    let mut a = null_mut();
    // SAFETY: `v` is a valid vtable over `r`, which outlives the allocator.
    assert_eq!(unsafe { nnm_device_allocator_new(&v, &mut a) }, Status::Ok);
    a
}

#[test]
fn a_failing_or_missing_initialiser_fails_the_compile_and_frees_everything() {
    let m = network();
    let r = Room { room: usize::MAX, allocs: AtomicUsize::new(0), live: AtomicUsize::new(0) };
    let a = room_allocator(&r, NNM_DEVICE_HOST_ACCESSIBLE);
    let mut c = null_mut();
    // SAFETY: `m` and `a` are live; `c` is writable; NULL init is refused.
    let s = unsafe { nnm_exec_compile(m, null(), a, None, null_mut(), &mut c) };
    fails(s, Status::InvalidArgument, "init is NULL, but operator 0 'conv' has 1 immutable workbuffer(s)");
    assert_eq!((r.allocs.load(Ordering::SeqCst), c), (0, null_mut()), "checked before anything is allocated");

    let mut log = InitLog { fail_at: Some((2, -5)), ..Default::default() };
    assert_eq!(compile(m, a, &mut log), Err(Status::CallbackFailed));
    assert!(last_error().contains("operator 2 'left': its workbuffer initialiser returned -5"), "{}", last_error());
    assert_eq!(log.calls, [(0, 1), (2, 1)]);
    assert_eq!((r.allocs.load(Ordering::SeqCst), r.live.load(Ordering::SeqCst)), (2, 0), "both blobs freed");

    // Bad options and arguments, each before any allocation.
    let ctx = std::ptr::from_mut(&mut log).cast();
    let bad_alignment = nnm_exec_options { alignment: 3, ..Default::default() };
    let bad_algorithm = nnm_exec_options { algorithm: 999, ..Default::default() };
    // SAFETY: every pointer is NULL, live or readable; nothing is written on failure.
    unsafe {
        fails(nnm_exec_compile(m, &bad_alignment, a, Some(init_fill), ctx, &mut c), Status::InvalidArgument, "3");
        fails(nnm_exec_compile(m, &bad_algorithm, a, Some(init_fill), ctx, &mut c), Status::InvalidArgument, "999");
        fails(nnm_exec_compile(null(), null(), a, Some(init_fill), ctx, &mut c), Status::NullArgument, "model");
        fails(nnm_exec_compile(m, null(), a, Some(init_fill), ctx, null_mut()), Status::NullArgument, "out is NULL");
    }
    assert_eq!((r.allocs.load(Ordering::SeqCst), c), (2, null_mut()));

    // Constant bytes need a device the CPU can write.
    let device = Room { room: usize::MAX, allocs: AtomicUsize::new(0), live: AtomicUsize::new(0) };
    let d = room_allocator(&device, 0);
    assert_eq!(compile(m, d, &mut InitLog::default()), Err(Status::InvalidArgument));
    assert!(last_error().contains("constant 1 has bytes to copy in"), "{}", last_error());
    assert_eq!((device.allocs.load(Ordering::SeqCst), device.live.load(Ordering::SeqCst)), (1, 0));
    // SAFETY: all live, freed once.
    unsafe {
        nnm_exec_model_free(m);
        nnm_device_allocator_free(a);
        nnm_device_allocator_free(d);
    }
}

#[test]
fn a_device_failing_after_two_blocks_gives_a_partial_pool_that_outlives_its_model() {
    let m = network();
    let mut log = InitLog::default();
    let c = compile(m, null(), &mut log).unwrap();
    let r = Room { room: 2, allocs: AtomicUsize::new(0), live: AtomicUsize::new(0) };
    let a = room_allocator(&r, NNM_DEVICE_HOST_ACCESSIBLE);
    let pool = new_pool(c, a, 4);
    // SAFETY: all three are freed once; the pool keeps what it needs.
    unsafe {
        nnm_exec_compiled_free(c);
        nnm_exec_model_free(m);
        nnm_device_allocator_free(a);
    }
    let i = pool_info(pool);
    assert_eq!((i.requested, i.blocks, i.target, i.free_blocks, i.partial), (4, 2, 2, 2, 1), "{i:?}");
    let mut reason = vec![0 as std::ffi::c_char; 256];
    let mut n = 0;
    // SAFETY: `pool` is live; `reason` holds 256 writable bytes.
    let s = unsafe { nnm_exec_pool_partial_reason(pool, reason.as_mut_ptr(), reason.len(), &mut n) };
    assert_eq!(s, Status::Ok);
    // SAFETY: copy_text wrote a NUL-terminated string.
    let text = unsafe { CStr::from_ptr(reason.as_ptr()) }.to_str().unwrap();
    assert!(text.starts_with("block 3 of 4 could not be allocated") && text.ends_with("kept 2"), "{text}");
    assert_eq!(n, text.len() + 1);
    let (x, y) = (acquire(pool, 0).unwrap(), acquire(pool, 0).unwrap());
    assert_ne!(x.base, y.base);
    assert_eq!(acquire(pool, 0), Err(Status::Busy));
    assert_eq!(acquire(pool, 1_000), Err(Status::Busy), "a short timeout passes");
    // SAFETY: `pool` is live; `x` and `y` are its leases.
    unsafe {
        assert_eq!(nnm_exec_pool_release(pool, &x), Status::Ok);
        fails(nnm_exec_pool_shrink(pool, 3), Status::InvalidArgument, "asked for 3 blocks, it has 2");
        assert_eq!(nnm_exec_pool_shrink(pool, 1), Status::Ok);
        assert_eq!(r.live.load(Ordering::SeqCst), 1, "the free block went back at once");
        assert_eq!(nnm_exec_pool_release(pool, &y), Status::Ok);
    }
    let i = pool_info(pool);
    assert_eq!((i.blocks, i.target, i.free_blocks, i.out_blocks, i.acquires, i.timeouts), (1, 1, 1, 0, 2, 2));
    // SAFETY: the pool is live and used by nothing else; freeing it frees its block.
    unsafe { nnm_exec_pool_free(pool) };
    assert_eq!(r.live.load(Ordering::SeqCst), 0);
}

#[test]
fn stale_double_and_foreign_releases_are_refused_and_change_nothing() {
    let m = network();
    let c = compile(m, null(), &mut InitLog::default()).unwrap();
    let (pool, other) = (new_pool(c, null(), 2), new_pool(c, null(), 1));
    let b = acquire(pool, -1).unwrap();
    let before = pool_info(pool);
    // SAFETY: both pools are live; the blocks are only compared.
    unsafe {
        fails(nnm_exec_pool_release(other, &b), Status::InvalidArgument, "is not out of this pool");
        let moved = nnm_exec_block { generation: b.generation + 1, ..b };
        fails(nnm_exec_pool_release(pool, &moved), Status::InvalidArgument, "is not out of this pool");
        let null_base = nnm_exec_block { base: null_mut(), ..b };
        fails(nnm_exec_pool_release(pool, &null_base), Status::NullArgument, "block->base is NULL");
        fails(nnm_exec_pool_release(pool, null()), Status::NullArgument, "block is NULL");
        assert_eq!(pool_info(pool), before, "nothing changed");
        assert_eq!(nnm_exec_pool_release(pool, &b), Status::Ok);
        fails(nnm_exec_pool_release(pool, &b), Status::InvalidArgument, "released twice, stale");
        // The slot's next lease has a new generation: the old one stays stale.
        let again = acquire(pool, 0).unwrap();
        let stale = if again.slot == b.slot { b } else { nnm_exec_block { slot: again.slot, ..b } };
        fails(nnm_exec_pool_release(pool, &stale), Status::InvalidArgument, "is not out of this pool");
        assert_eq!(nnm_exec_pool_release(pool, &again), Status::Ok);
    }
    // Resolution and pool arguments.
    let b = acquire(pool, 0).unwrap();
    let mut pointers = [null_mut(); 2];
    let mut n = 99;
    // SAFETY: `c` is live; arrays and out-parameters as sized.
    unsafe {
        fails(nnm_exec_resolve(c, 5, &b, null_mut(), 0, &mut n), Status::InvalidArgument, "has 5 operators");
        let small = nnm_exec_block { size: 1, ..b };
        fails(nnm_exec_resolve(c, 0, &small, null_mut(), 0, &mut n), Status::InvalidArgument, "smaller than");
        let s = nnm_exec_resolve(c, 0, &b, pointers.as_mut_ptr(), 2, &mut n);
        fails(s, Status::BufferTooSmall, "operator 0 has 4 pointers; pointers has room for 2");
        fails(nnm_exec_resolve(c, 0, &b, null_mut(), 4, &mut n), Status::NullArgument, "pointers is NULL");
        assert_eq!((n, pointers), (99, [null_mut(); 2]), "nothing written");
        let mut p = null_mut();
        fails(nnm_exec_pool_new(c, null(), 0, &mut p), Status::InvalidArgument, "requested is 0");
        fails(nnm_exec_compiled_place(c, 42, &mut nnm_exec_place::default()), Status::NotFound, "buffer 42");
        fails(nnm_exec_compiled_constant(c, 2, &mut null_mut()), Status::InvalidArgument, "not a constant");
        fails(nnm_exec_compiled_op_shape(c, 5, &mut nnm_exec_op_shape::default()), Status::InvalidArgument, "5");
        let mut w = nnm_exec_block::default();
        fails(nnm_exec_pool_acquire(null_mut(), 0, null(), &mut w), Status::NullArgument, "pool is NULL");
        fails(nnm_exec_pool_acquire(pool, 0, null(), null_mut()), Status::NullArgument, "out is NULL");
        assert_eq!(nnm_exec_pool_release(pool, &b), Status::Ok);
        nnm_exec_pool_free(pool);
        nnm_exec_pool_free(other);
        nnm_exec_pool_free(other);
        assert!(last_error().contains("double free"), "{}", last_error());
        nnm_exec_compiled_free(c);
        fails(nnm_exec_compiled_info(c, &mut nnm_exec_info::default()), Status::InvalidArgument, "not a live");
        nnm_exec_model_free(m);
    }
}

#[test]
fn cancelling_a_token_wakes_a_waiter_on_another_thread() {
    let m = network();
    let c = compile(m, null(), &mut InitLog::default()).unwrap();
    let pool = new_pool(c, null(), 1);
    let held = acquire(pool, 0).unwrap();
    let mut token: *mut nnm_cancel_token = null_mut();
    // SAFETY: `token` is writable.
    assert_eq!(unsafe { nnm_cancel_token_new(&mut token) }, Status::Ok);
    /// The handles the waiter uses: both thread-safe objects.
    struct Handles(*mut nnm_exec_pool, *mut nnm_cancel_token);
    // SAFETY: a pool and a token may be used from any thread.
    unsafe impl Send for Handles {}
    let handles = Handles(pool, token);
    let waiter = std::thread::spawn(move || {
        let handles = handles;
        let mut b = nnm_exec_block::default();
        // SAFETY: the pool and token live until this thread is joined.
        let s = unsafe { nnm_exec_pool_acquire(handles.0, -1, handles.1, &mut b) };
        (s, last_error(), b.base.is_null(), b.size)
    });
    // Waits for the state "one waiter", not for a time.
    while pool_info(pool).waiters == 0 {
        std::thread::yield_now();
    }
    // SAFETY: the token is live.
    assert_eq!(unsafe { nnm_cancel_token_cancel(token) }, Status::Ok);
    let (status, message, base_null, size) = waiter.join().unwrap();
    assert_eq!(status, Status::Cancelled, "{message}");
    assert_eq!((base_null, size), (true, 0), "nothing written on failure");
    // A cancelled token fails at once, even with a block free.
    // SAFETY: all live; `held` is the pool's lease.
    unsafe {
        assert_eq!(nnm_exec_pool_release(pool, &held), Status::Ok);
        let mut b = nnm_exec_block::default();
        assert_eq!(nnm_exec_pool_acquire(pool, 0, token, &mut b), Status::Cancelled);
    }
    let i = pool_info(pool);
    assert_eq!((i.cancellations, i.waits, i.waiters, i.free_blocks), (2, 1, 0, 1));
    // SAFETY: all live, freed once, no thread inside them.
    unsafe {
        nnm_cancel_token_free(token);
        nnm_exec_pool_free(pool);
        nnm_exec_compiled_free(c);
        nnm_exec_model_free(m);
    }
}

/// The text an export copies out, through its size query.
fn text_of(copy: impl Fn(*mut std::ffi::c_char, usize, *mut usize) -> Status) -> String {
    let mut n = 0;
    assert_eq!(copy(null_mut(), 0, &mut n), Status::Ok, "{}", last_error());
    let mut buf = vec![0 as std::ffi::c_char; n];
    let mut written = 0;
    assert_eq!(copy(buf.as_mut_ptr(), n, &mut written), Status::Ok, "{}", last_error());
    assert_eq!(written, n);
    // SAFETY: copy_text wrote a NUL-terminated string into `buf`.
    unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap().to_owned()
}

#[test]
fn reports_and_the_picture_are_the_cores_through_the_text_conventions() {
    let m = network();
    let c = compile(m, null(), &mut InitLog::default()).unwrap();
    // SAFETY: `c` is live until freed below; the buffers are sized by the query.
    let (json, text, svg) = unsafe {
        (
            text_of(|b, l, n| nnm_exec_compiled_report(c, ReportFormat::Json as u32, b, l, n)),
            text_of(|b, l, n| nnm_exec_compiled_report(c, ReportFormat::Text as u32, b, l, n)),
            text_of(|b, l, n| nnm_exec_compiled_svg(c, b, l, n)),
        )
    };
    // SAFETY: `c` is live.
    let core = unsafe { &(*c).compiled };
    assert_eq!((&json, &text, &svg), (&core.report(ReportFormat::Json), &core.report(ReportFormat::Text), &core.svg()));
    assert!(json.contains("\"constants_bytes\": 256,\n  \"immutable_bytes\": 512,"), "{json}");
    assert!(svg.contains("<svg") && svg.contains("t2"), "{svg}");
    let mut small = [0 as std::ffi::c_char; 8];
    let mut n = 0;
    // SAFETY: `small` holds 8 writable bytes; failures write nothing.
    unsafe {
        let s = nnm_exec_compiled_svg(c, small.as_mut_ptr(), 8, &mut n);
        fails(s, Status::BufferTooSmall, &format!("the SVG needs {} B (NUL included), buffer has 8 B", svg.len() + 1));
        fails(nnm_exec_compiled_report(c, 7, null_mut(), 0, &mut n), Status::InvalidArgument, "7");
        fails(nnm_exec_compiled_report(null(), 0, null_mut(), 0, &mut n), Status::NullArgument, "compiled is NULL");
        assert_eq!((n, small), (0, [0; 8]));
        nnm_exec_compiled_free(c);
        nnm_exec_model_free(m);
    }
}

/// The workbuffer header's documentation of export `name` (the comment above it).
fn header_doc(name: &str) -> String {
    let header = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/include/nnmem/workbuffer.h"));
    let at = header.find(&format!(" {name}(")).unwrap_or_else(|| panic!("{name} is not in the header"));
    let start = header[..at].rfind("/**").unwrap();
    header[start..at].to_string()
}

#[test]
#[cfg(target_pointer_width = "64")]
fn count_limits_of_the_exports_are_in_the_header() {
    let m = network();
    let c = compile(m, null(), &mut InitLog::default()).unwrap();
    // A pool numbers its blocks in 32 bits: the header says so, and the
    // call refuses one more with the same figure.
    let doc = header_doc("nnm_exec_pool_new");
    assert!(doc.contains("1 to UINT32_MAX") && doc.matches("UINT32_MAX").count() == 2, "{doc}");
    let mut pool = null_mut();
    // SAFETY: `c` is live; `pool` is writable.
    let status = unsafe { nnm_exec_pool_new(c, null(), u32::MAX as usize + 1, &mut pool) };
    fails(status, Status::InvalidArgument, "at most 4294967295 blocks");
    assert!(pool.is_null());
    // Arrays of counts past the address space are OVERFLOW, and say so.
    let p = new_pool(c, null(), 1);
    let block = acquire(p, 0).unwrap();
    let mut n = 0;
    // SAFETY: the counts are checked before the arrays are touched.
    unsafe {
        let status = nnm_exec_resolve(c, 0, &block, NonNull::dangling().as_ptr(), usize::MAX, &mut n);
        fails(status, Status::Overflow, "pointers");
        let status = nnm_exec_compiled_op_places(c, 0, NonNull::dangling().as_ptr(), usize::MAX, &mut n);
        fails(status, Status::Overflow, "places");
    }
    for export in ["nnm_exec_resolve", "nnm_exec_compiled_op_places", "nnm_exec_model_add_concat"] {
        assert!(header_doc(export).contains("OVERFLOW"), "{export}: {}", header_doc(export));
    }
    // SAFETY: the block is this pool's; every handle is live, then freed once.
    unsafe {
        assert_eq!(nnm_exec_pool_release(p, &block), Status::Ok);
        nnm_exec_pool_free(p);
        nnm_exec_compiled_free(c);
        nnm_exec_model_free(m);
    }
}

#[test]
fn workbuffer_ids_chained_concats_and_dynamic_buffers_through_the_c_calls() {
    let m = new_model();
    let (imm_ids, mut_ids) = ([20u64], [21u64, 22]);
    // op0: dynamic tensor 1 and tensor 2; op1 reads 1 at any size, writes 3.
    assert_eq!(add(m, &desc(c"src", &[], &[out(1, 0), out(2, 64)], &[], &[])), Ok(0), "{}", last_error());
    let reads = [t(1, 999)];
    let writes = [out(3, 64)];
    let mut d1 = desc(c"conv", &reads, &writes, &[32], &[128, 16]);
    d1.immutable_ids = imm_ids.as_ptr();
    d1.mutable_ids = mut_ids.as_ptr();
    assert_eq!(add(m, &d1), Ok(1), "{}", last_error());
    // A repeated id fails and adds nothing.
    let again = [out(4, 8)];
    let mut d2 = desc(c"again", &[], &again, &[8], &[]);
    d2.immutable_ids = mut_ids.as_ptr();
    assert_eq!(add(m, &d2), Err(Status::AlreadyExists));
    assert!(last_error().contains("the id is already operator 1's mutable workbuffer 0"), "{}", last_error());
    let no_alias = [NNM_EXEC_NO_ALIAS];
    d2.immutable_ids = no_alias.as_ptr();
    assert_eq!(add(m, &d2), Err(Status::InvalidArgument));
    assert!(last_error().contains("desc->immutable_ids id 18446744073709551615"), "{}", last_error());
    // Chained concats: 10 = [2, 3], 11 = [10 at 64].
    // SAFETY: `m` is live; the arrays hold `count` values.
    unsafe {
        let s = nnm_exec_model_add_concat(m, 10, 128, [2u64, 3].as_ptr(), [0u64, 64].as_ptr(), 2);
        assert_eq!(s, Status::Ok, "{}", last_error());
        let s = nnm_exec_model_add_concat(m, 11, 192, [10u64].as_ptr(), [64u64].as_ptr(), 1);
        assert_eq!(s, Status::Ok, "{}", last_error());
    }
    let (reads, writes) = ([t(11, 192), t(1, 5)], [out(5, 8)]);
    assert_eq!(add(m, &desc(c"head", &reads, &writes, &[], &[])), Ok(2), "{}", last_error());
    let c = compile(m, null(), &mut InitLog::default()).unwrap();
    let place = |id: u64| {
        let mut p = nnm_exec_place::default();
        // SAFETY: `c` is live; `p` is writable.
        let s = unsafe { nnm_exec_compiled_place(c, id, &mut p) };
        assert_eq!(s, Status::Ok, "{id}: {}", last_error());
        (p.area, p.offset, p.size)
    };
    let (imm, mutable, dynamic) =
        (nnm_exec_area::Immutable as u32, nnm_exec_area::Mutable as u32, nnm_exec_area::Dynamic as u32);
    assert_eq!(place(20), (imm, 0, 32));
    assert_eq!((place(21).0, place(21).2, place(22).2), (mutable, 128, 16));
    assert_eq!(place(1), (dynamic, 0, 0));
    let outer = place(11).1;
    assert_eq!([place(10).1, place(2).1, place(3).1], [outer + 64, outer + 64, outer + 128]);
    // The operator's places without a block, in resolve order.
    let mut n = 0;
    // SAFETY: `c` is live; the size query writes only `n`.
    assert_eq!(unsafe { nnm_exec_compiled_op_places(c, 1, null_mut(), 0, &mut n) }, Status::Ok);
    assert_eq!(n, 5);
    let mut places = vec![nnm_exec_place::default(); n];
    // SAFETY: `places` holds `n` writable places.
    unsafe {
        fails(
            nnm_exec_compiled_op_places(c, 1, places.as_mut_ptr(), n - 1, &mut n),
            Status::BufferTooSmall,
            "room for 4",
        );
        assert_eq!(nnm_exec_compiled_op_places(c, 1, places.as_mut_ptr(), 5, &mut n), Status::Ok);
        fails(nnm_exec_compiled_op_places(c, 3, places.as_mut_ptr(), 5, &mut n), Status::InvalidArgument, "operator 3");
    }
    let got: Vec<_> = places.iter().map(|p| (p.area, p.offset, p.size)).collect();
    assert_eq!(got, vec![place(1), place(3), place(20), place(21), place(22)]);
    // Resolved: dynamic is NULL, the rest the areas' bases plus the offsets.
    let p = new_pool(c, null(), 1);
    let block = acquire(p, 0).unwrap();
    let pointers = resolve(c, 1, &block);
    assert!(pointers[0].is_null());
    assert_eq!(pointers[1], block.base.wrapping_byte_add(place(3).1 as usize));
    assert_eq!(pointers[4], block.base.wrapping_byte_add(place(22).1 as usize));
    // SAFETY: the block is this pool's; every handle is live, then freed once.
    unsafe {
        assert_eq!(nnm_exec_pool_release(p, &block), Status::Ok);
        nnm_exec_pool_free(p);
        nnm_exec_compiled_free(c);
        nnm_exec_model_free(m);
    }
}
