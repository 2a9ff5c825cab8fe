//! The `nnm_exec_*` exports driven from Rust (so that Miri sees the pointer
//! work): bad input with its status and message and nothing changed, a
//! model with constant bytes, an alias and a concat compiled and resolved,
//! initialiser failures, partial pools, cancellation and stale releases.

use std::ffi::CStr;
use std::ptr::{null, null_mut};

use super::model::*;
use crate::ffi::nnm_last_error;
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
    assert_eq!(op(&[t(1, 16)], &[out(2, 0)], &[]), Err(Status::InvalidArgument));
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
            "part 1 is not a tensor an operator produces",
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
