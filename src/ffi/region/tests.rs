//! The region exports driven from Rust (so that Miri sees the pointer
//! work; c-tests/region_test.c pins the C contract): every NULL, every bad
//! value, out-parameters untouched on failure, size queries, and the
//! table's strings outliving the model and configuration.

use std::ffi::{c_char, CStr};
use std::ptr::{null, null_mut};

use super::config::*;
use super::model::*;
use super::rule::*;
use crate::ffi::nnm_last_error;
use crate::plan::Algorithm;
use crate::region::TensorKind;
use crate::status::Status;

fn last_error() -> String {
    // SAFETY: nnm_last_error returns a NUL-terminated thread-local string.
    unsafe { CStr::from_ptr(nnm_last_error()) }.to_str().unwrap().to_string()
}

/// `status` is `want`, and the last error contains `text`.
#[track_caller]
fn fails(status: Status, want: Status, text: &str) {
    assert_eq!(status, want, "{}", last_error());
    assert!(last_error().contains(text), "{:?} does not contain {text:?}", last_error());
}

// --- models -----------------------------------------------------------------------------

fn new_model() -> *mut nnm_region_model {
    let mut m = null_mut();
    // SAFETY: `m` is writable.
    assert_eq!(unsafe { nnm_region_model_new(&mut m) }, Status::Ok);
    m
}

fn tensor(name: &CStr, kind: TensorKind, size: u64) -> nnm_region_tensor_desc {
    nnm_region_tensor_desc { name: name.as_ptr(), kind: kind as u32, size, ..Default::default() }
}

fn activation(name: &CStr, size: u64, first: i64, last: i64) -> nnm_region_tensor_desc {
    nnm_region_tensor_desc {
        lifetime: LifetimeConvention::FirstLastUse as u32,
        start: first,
        end: last,
        ..tensor(name, TensorKind::Activation, size)
    }
}

fn add(model: *mut nnm_region_model, desc: &nnm_region_tensor_desc) -> Result<usize, Status> {
    let mut id = usize::MAX;
    // SAFETY: `model` is NULL or live, `desc` readable with NULL or
    // NUL-terminated strings, `id` writable.
    match unsafe { nnm_region_model_add(model, desc, &mut id) } {
        Status::Ok => Ok(id),
        s => {
            assert_eq!(id, usize::MAX, "out_id written on failure");
            Err(s)
        }
    }
}

fn tensor_count(model: *const nnm_region_model) -> usize {
    let mut n = usize::MAX;
    // SAFETY: `model` is live; `n` is writable.
    assert_eq!(unsafe { nnm_region_model_tensor_count(model, &mut n) }, Status::Ok);
    n
}

fn free_model(model: *mut nnm_region_model) {
    // SAFETY: `model` is live and used by nothing else.
    unsafe { nnm_region_model_free(model) }
}

#[test]
fn tensor_kinds_have_names_both_ways() {
    for &k in TensorKind::ALL {
        // SAFETY: a static NUL-terminated name.
        let name = unsafe { CStr::from_ptr(nnm_tensor_kind_name(k as u32)) };
        assert_eq!(name.to_str().unwrap(), k.name());
        let mut v = u32::MAX;
        // SAFETY: `name` is NUL-terminated; `v` writable.
        assert_eq!(unsafe { nnm_tensor_kind_from_name(name.as_ptr(), &mut v) }, Status::Ok);
        assert_eq!(v, k as u32);
    }
    assert!(nnm_tensor_kind_name(7).is_null());
    assert!(nnm_tensor_kind_name(u32::MAX).is_null());
    let mut v = 42;
    // SAFETY: NUL-terminated literals; `v` writable; NULLs are refused.
    unsafe {
        fails(
            nnm_tensor_kind_from_name(c"weights".as_ptr(), &mut v),
            Status::InvalidArgument,
            "unknown tensor kind 'weights' (known: constant, mutable, input, output, input-output, activation, view)",
        );
        fails(nnm_tensor_kind_from_name(null(), &mut v), Status::NullArgument, "name is NULL");
        fails(nnm_tensor_kind_from_name(c"view".as_ptr(), null_mut()), Status::NullArgument, "out_kind is NULL");
    }
    assert_eq!(v, 42);
}

#[test]
fn a_model_takes_tensors_in_order_with_every_field() {
    let m = new_model();
    assert_eq!(add(m, &tensor(c"w", TensorKind::Constant, 100)), Ok(0));
    let a = nnm_region_tensor_desc {
        alignment: 16,
        dtype: c"i8".as_ptr(),
        function: c"f".as_ptr(),
        tags: c" op = fc ; layer=3".as_ptr(),
        ..activation(c"a", 64, 2, 4)
    };
    assert_eq!(add(m, &a), Ok(1));
    let b = nnm_region_tensor_desc {
        lifetime: LifetimeConvention::AllocFree as u32,
        start: 3,
        end: 7,
        ..tensor(c"b", TensorKind::Activation, 8)
    };
    assert_eq!(add(m, &b), Ok(2));
    let v = nnm_region_tensor_desc {
        function: c"f".as_ptr(),
        view_of: c"a".as_ptr(),
        view_offset: 32,
        ..tensor(c"v", TensorKind::View, 32)
    };
    assert_eq!(add(m, &v), Ok(3));
    // A view of a weight from another function; out_id may be NULL.
    let wv = nnm_region_tensor_desc { view_of: c"w".as_ptr(), ..tensor(c"wv", TensorKind::View, 100) };
    // SAFETY: `m` is live; `wv` readable; NULL out_id is allowed.
    assert_eq!(unsafe { nnm_region_model_add(m, &wv, null_mut()) }, Status::Ok);
    assert_eq!(tensor_count(m), 5);
    // SAFETY: `m` is live and not changed while read.
    let model = unsafe { &(*m).model };
    let t = model.tensor(1).unwrap();
    assert_eq!((t.alignment, t.dtype.as_str(), &*t.function), (16, "i8", "f"));
    assert_eq!(t.tags, vec![("op".to_string(), "fc".to_string()), ("layer".to_string(), "3".to_string())]);
    assert_eq!(t.lifetime, Some(crate::plan::Lifetime { start: 2, end: 5 }));
    let w = model.tensor(0).unwrap();
    assert_eq!((w.alignment, &*w.function, w.lifetime, w.dtype.as_str()), (1, "main", None, ""));
    assert_eq!(model.tensor(2).unwrap().lifetime, Some(crate::plan::Lifetime { start: 3, end: 7 }));
    assert_eq!(model.tensor(3).unwrap().view.as_ref().map(|v| (v.origin.as_str(), v.offset)), Some(("a", 32)));
    free_model(m);
}

#[test]
fn bad_tensors_are_refused_naming_the_problem_and_change_nothing() {
    let m = new_model();
    add(m, &activation(c"a", 64, 0, 3)).unwrap();
    add(m, &tensor(c"w", TensorKind::Constant, 16)).unwrap();
    let bad = [0xffu8, 0];
    let cases: Vec<(nnm_region_tensor_desc, Status, &str)> = vec![
        (nnm_region_tensor_desc { kind: 99, ..tensor(c"x", TensorKind::Constant, 4) }, Status::InvalidArgument, "tensor 'x': unknown tensor kind 99 (0 to 6)"),
        (nnm_region_tensor_desc { lifetime: 3, ..tensor(c"x", TensorKind::Activation, 4) }, Status::InvalidArgument, "unknown lifetime convention 3 (0 to 2)"),
        (nnm_region_tensor_desc { lifetime: LifetimeConvention::FirstLastUse as u32, ..tensor(c"x", TensorKind::Input, 4) }, Status::InvalidArgument, "tensor 'x' is a weight (input): its lifetime must be NNM_LIFETIME_WHOLE_RUN"),
        (tensor(c"", TensorKind::Constant, 4), Status::InvalidArgument, "tensor name is empty"),
        (tensor(c"x", TensorKind::Constant, 0), Status::InvalidArgument, "has size 0"),
        (nnm_region_tensor_desc { alignment: 3, ..tensor(c"x", TensorKind::Constant, 4) }, Status::InvalidArgument, "tensor 'x' (constant, function main)"),
        (nnm_region_tensor_desc { function: c"".as_ptr(), ..tensor(c"x", TensorKind::Constant, 4) }, Status::InvalidArgument, "empty function name"),
        (activation(c"x", 4, 5, 2), Status::InvalidArgument, "tensor 'x': last_use 2 is before first_use 5"),
        (activation(c"x", 4, -2, 2), Status::InvalidArgument, "negative step"),
        (activation(c"x", 4, 0, i64::MAX), Status::Overflow, "last_use 9223372036854775807 + 1 overflows"),
        (nnm_region_tensor_desc { lifetime: LifetimeConvention::AllocFree as u32, start: 4, end: 1, ..tensor(c"x", TensorKind::Activation, 4) }, Status::InvalidArgument, "lifetime upper bound 1 is below its lower bound 4"),
        (nnm_region_tensor_desc { tags: c"op".as_ptr(), ..tensor(c"x", TensorKind::Constant, 4) }, Status::InvalidArgument, "tensor 'x': tag 'op' is not key=value (in 'op')"),
        (nnm_region_tensor_desc { tags: c"k=1;k=2".as_ptr(), ..tensor(c"x", TensorKind::Constant, 4) }, Status::InvalidArgument, "tag 'k' is given twice"),
        (tensor(c"x", TensorKind::View, 4), Status::InvalidArgument, "is a view but names no origin"),
        (nnm_region_tensor_desc { view_of: c"a".as_ptr(), ..tensor(c"x", TensorKind::Activation, 4) }, Status::InvalidArgument, "names an origin but is not a view"),
        (nnm_region_tensor_desc { view_offset: 8, ..tensor(c"x", TensorKind::Constant, 4) }, Status::InvalidArgument, "tensor 'x': view_offset is 8 but view_of is NULL"),
        (nnm_region_tensor_desc { view_of: c"missing".as_ptr(), ..tensor(c"v", TensorKind::View, 4) }, Status::NotFound, "view 'v' (view, function main) names origin 'missing', which is not in function main (nor a weight); add the origin first"),
        (nnm_region_tensor_desc { view_of: c"a".as_ptr(), view_offset: 60, ..tensor(c"v", TensorKind::View, 8) }, Status::InvalidArgument, "reaches past the end of its origin 'a': offset 60 + size 8 = 68 B, origin is 64 B"),
        (nnm_region_tensor_desc { view_of: c"a".as_ptr(), view_offset: u64::MAX, ..tensor(c"v", TensorKind::View, 8) }, Status::Overflow, "overflows"),
        (nnm_region_tensor_desc { view_of: c"a".as_ptr(), function: c"g".as_ptr(), ..tensor(c"v", TensorKind::View, 8) }, Status::NotFound, "not in function g"),
        (activation(c"a", 8, 0, 0), Status::AlreadyExists, "function main already has a tensor named 'a'"),
        (nnm_region_tensor_desc { function: c"g".as_ptr(), ..tensor(c"w", TensorKind::Constant, 32) }, Status::InvalidArgument, "must have the same kind and size"),
        (nnm_region_tensor_desc { name: bad.as_ptr().cast(), ..tensor(c"x", TensorKind::Constant, 4) }, Status::InvalidArgument, "desc->name is not valid UTF-8"),
        (nnm_region_tensor_desc { name: null(), ..tensor(c"x", TensorKind::Constant, 4) }, Status::NullArgument, "desc->name is NULL"),
    ];
    for (desc, status, text) in &cases {
        fails(add(m, desc).unwrap_err(), *status, text);
        assert_eq!(tensor_count(m), 2);
    }
    let ok = tensor(c"x", TensorKind::Constant, 4);
    fails(add(null_mut(), &ok).unwrap_err(), Status::NullArgument, "model is NULL");
    // SAFETY: NULL desc is refused before any read.
    fails(unsafe { nnm_region_model_add(m, null(), null_mut()) }, Status::NullArgument, "desc is NULL");
    // SAFETY: NULL out_count is refused; NULL model too.
    unsafe {
        fails(nnm_region_model_tensor_count(m, null_mut()), Status::NullArgument, "out_count is NULL");
        let mut n = 7;
        fails(nnm_region_model_tensor_count(null(), &mut n), Status::NullArgument, "model is NULL");
        assert_eq!(n, 7);
        fails(nnm_region_model_new(null_mut()), Status::NullArgument, "out_model is NULL");
    }
    assert_eq!(tensor_count(m), 2);
    free_model(m);
    // A freed model is refused unread, and a double free reported.
    fails(add(m, &ok).unwrap_err(), Status::InvalidArgument, "is not a live nnm_region_model");
    free_model(m);
    assert!(last_error().contains("nnm_region_model_free"), "{}", last_error());
    free_model(null_mut());
}

// --- rules ------------------------------------------------------------------------------

/// Runs a constructor; the rule on success.
fn made(make: impl FnOnce(*mut *mut nnm_region_rule) -> Status) -> Result<*mut nnm_region_rule, Status> {
    let sentinel = std::ptr::NonNull::<nnm_region_rule>::dangling().as_ptr();
    let mut r = sentinel;
    match make(&mut r) {
        Status::Ok => Ok(r),
        s => {
            assert_eq!(r, sentinel, "out_rule written on failure");
            Err(s)
        }
    }
}

fn any_rule() -> *mut nnm_region_rule {
    // SAFETY: the out pointer is writable.
    made(|o| unsafe { nnm_region_rule_any(o) }).unwrap()
}

fn rule_text(rule: *const nnm_region_rule) -> String {
    let mut n = 0;
    // SAFETY: `rule` is live; a size query writes only `n`.
    assert_eq!(unsafe { nnm_region_rule_to_string(rule, null_mut(), 0, &mut n) }, Status::Ok);
    let mut buf = vec![0 as c_char; n];
    let mut written = 0;
    // SAFETY: `buf` holds `n` writable bytes.
    assert_eq!(unsafe { nnm_region_rule_to_string(rule, buf.as_mut_ptr(), n, &mut written) }, Status::Ok);
    assert_eq!(written, n);
    // SAFETY: the export NUL-terminated the text inside `buf`.
    unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap().to_string()
}

fn free_rule(rule: *mut nnm_region_rule) {
    // SAFETY: `rule` is live (or freed: reported) and used by nothing else.
    unsafe { nnm_region_rule_free(rule) }
}

#[test]
fn rules_are_made_combined_and_printed() {
    // SAFETY: every closure below passes NUL-terminated literals and a
    // writable out pointer.
    let leaves = unsafe {
        [
            (made(|o| nnm_region_rule_any(o)), "any"),
            (made(|o| nnm_region_rule_kind(TensorKind::Constant as u32, o)), "kind = constant"),
            (made(|o| nnm_region_rule_name(c"fc1.weight".as_ptr(), o)), "name = 'fc1.weight'"),
            (made(|o| nnm_region_rule_name_prefix(c"fc".as_ptr(), o)), "name starts with 'fc'"),
            (made(|o| nnm_region_rule_name_glob(c"fc*.weight".as_ptr(), o)), "name like 'fc*.weight'"),
            (made(|o| nnm_region_rule_size(16, 1024, o)), "size in 16..=1024 B"),
            (made(|o| nnm_region_rule_size(16, u64::MAX, o)), "size >= 16 B"),
            (made(|o| nnm_region_rule_dtype(c"i8".as_ptr(), o)), "dtype = 'i8'"),
            (made(|o| nnm_region_rule_tag(c"op".as_ptr(), c"fc".as_ptr(), o)), "tag op = 'fc'"),
            (made(|o| nnm_region_rule_tag(c"op".as_ptr(), null(), o)), "has tag op"),
            (made(|o| nnm_region_rule_function(c"main".as_ptr(), o)), "function = 'main'"),
            (made(|o| nnm_region_rule_is_view(o)), "is view"),
        ]
    };
    let rules: Vec<*mut nnm_region_rule> = leaves.iter().map(|(r, _)| r.unwrap()).collect();
    for ((_, text), &r) in leaves.iter().zip(&rules) {
        assert_eq!(rule_text(r), *text);
    }
    let pair = [rules[1].cast_const(), rules[8].cast_const()];
    // SAFETY: `pair` holds two live rules; out pointers are writable.
    let (and, or) = unsafe {
        (
            made(|o| nnm_region_rule_and(pair.as_ptr(), 2, o)).unwrap(),
            made(|o| nnm_region_rule_or(pair.as_ptr(), 2, o)).unwrap(),
        )
    };
    // SAFETY: `and` is live.
    let not = made(|o| unsafe { nnm_region_rule_not(and, o) }).unwrap();
    // The combinations copied their operands: freeing those changes nothing.
    for r in rules {
        free_rule(r);
    }
    assert_eq!(rule_text(and), "(kind = constant AND tag op = 'fc')");
    assert_eq!(rule_text(or), "(kind = constant OR tag op = 'fc')");
    assert_eq!(rule_text(not), "NOT (kind = constant AND tag op = 'fc')");
    let t = crate::region::Tensor::new("fc1.weight", TensorKind::Constant, 8).with_tag("op", "fc");
    // SAFETY: `and` is live; matching goes through the core rule.
    assert!(unsafe { &(*and).rule }.matches(&t));
    for r in [and, or, not] {
        free_rule(r);
    }
}

#[test]
fn bad_rules_are_refused_and_out_rule_is_untouched() {
    let (any, freed) = (any_rule(), any_rule());
    free_rule(freed);
    let one = [any.cast_const()];
    let with_null = [any.cast_const(), null()];
    let with_freed = [any.cast_const(), freed.cast_const()];
    // SAFETY: every pointer passed is NULL, a live rule, a freed rule
    // (refused unread), or an array readable for the count given; the
    // overflowing count is refused before any read.
    unsafe {
        fails(
            made(|o| nnm_region_rule_kind(99, o)).unwrap_err(),
            Status::InvalidArgument,
            "unknown tensor kind 99 (0 to 6)",
        );
        fails(made(|o| nnm_region_rule_name(c"".as_ptr(), o)).unwrap_err(), Status::InvalidArgument, "name is empty");
        fails(made(|o| nnm_region_rule_name(null(), o)).unwrap_err(), Status::NullArgument, "name is NULL");
        fails(
            made(|o| nnm_region_rule_name_prefix(c"".as_ptr(), o)).unwrap_err(),
            Status::InvalidArgument,
            "prefix is empty",
        );
        fails(made(|o| nnm_region_rule_name_glob(null(), o)).unwrap_err(), Status::NullArgument, "glob is NULL");
        fails(made(|o| nnm_region_rule_dtype(c"".as_ptr(), o)).unwrap_err(), Status::InvalidArgument, "dtype is empty");
        fails(
            made(|o| nnm_region_rule_function(c"".as_ptr(), o)).unwrap_err(),
            Status::InvalidArgument,
            "function is empty",
        );
        fails(
            made(|o| nnm_region_rule_tag(c"".as_ptr(), null(), o)).unwrap_err(),
            Status::InvalidArgument,
            "key is empty",
        );
        fails(
            made(|o| nnm_region_rule_tag(null(), c"x".as_ptr(), o)).unwrap_err(),
            Status::NullArgument,
            "key is NULL",
        );
        fails(
            made(|o| nnm_region_rule_size(8, 4, o)).unwrap_err(),
            Status::InvalidArgument,
            "size range is reversed (8 B > 4 B)",
        );
        fails(
            made(|o| nnm_region_rule_and(null(), 0, o)).unwrap_err(),
            Status::InvalidArgument,
            "an AND needs at least one rule (count is 0)",
        );
        fails(
            made(|o| nnm_region_rule_or(one.as_ptr(), 0, o)).unwrap_err(),
            Status::InvalidArgument,
            "an OR needs at least one rule (count is 0)",
        );
        fails(made(|o| nnm_region_rule_and(null(), 2, o)).unwrap_err(), Status::NullArgument, "rules is NULL");
        fails(
            made(|o| nnm_region_rule_and(with_null.as_ptr(), 2, o)).unwrap_err(),
            Status::NullArgument,
            "rules[1]: rule is NULL",
        );
        fails(
            made(|o| nnm_region_rule_or(with_freed.as_ptr(), 2, o)).unwrap_err(),
            Status::InvalidArgument,
            "rules[1]: rule (",
        );
        fails(
            made(|o| nnm_region_rule_or(one.as_ptr(), usize::MAX, o)).unwrap_err(),
            Status::Overflow,
            "exceed the address space",
        );
        fails(made(|o| nnm_region_rule_not(null(), o)).unwrap_err(), Status::NullArgument, "rule is NULL");
        fails(
            made(|o| nnm_region_rule_not(freed, o)).unwrap_err(),
            Status::InvalidArgument,
            "is not a live nnm_region_rule",
        );
        for status in [
            nnm_region_rule_any(null_mut()),
            nnm_region_rule_is_view(null_mut()),
            nnm_region_rule_and(one.as_ptr(), 1, null_mut()),
            nnm_region_rule_size(0, 1, null_mut()),
        ] {
            fails(status, Status::NullArgument, "out_rule is NULL");
        }
        // to_string: a too small buffer is not written, nor is out_len.
        let mut buf = [7 as c_char; 2];
        let mut n = 99;
        fails(
            nnm_region_rule_to_string(any, buf.as_mut_ptr(), 2, &mut n),
            Status::BufferTooSmall,
            "rule text needs 4 B (NUL included), buffer has 2 B",
        );
        assert_eq!((buf, n), ([7, 7], 99));
        fails(
            nnm_region_rule_to_string(any, buf.as_mut_ptr(), 2, null_mut()),
            Status::NullArgument,
            "out_written is NULL",
        );
        fails(nnm_region_rule_to_string(any, null_mut(), 4, &mut n), Status::NullArgument, "buf is NULL");
        fails(
            nnm_region_rule_to_string(freed, null_mut(), 0, &mut n),
            Status::InvalidArgument,
            "not a live nnm_region_rule",
        );
        assert_eq!(n, 99);
    }
    free_rule(any);
    free_rule(any);
    assert!(last_error().contains("nnm_region_rule_free"), "{}", last_error());
    free_rule(null_mut());
}

// --- configurations ---------------------------------------------------------------------

fn new_config(defaults: bool) -> *mut nnm_region_config {
    let mut c = null_mut();
    // SAFETY: `c` is writable.
    let status = unsafe {
        if defaults {
            nnm_region_config_new_default(&mut c)
        } else {
            nnm_region_config_new(&mut c)
        }
    };
    assert_eq!(status, Status::Ok);
    c
}

fn description_count(config: *const nnm_region_config) -> usize {
    let mut n = usize::MAX;
    // SAFETY: `config` is live; `n` writable.
    assert_eq!(unsafe { nnm_region_config_description_count(config, &mut n) }, Status::Ok);
    n
}

fn region(name: &CStr, id: u32) -> nnm_region_desc {
    nnm_region_desc { id, name: name.as_ptr(), ..Default::default() }
}

fn append(config: *mut nnm_region_config, desc: &nnm_region_desc, rule: *const nnm_region_rule) -> Status {
    // SAFETY: `config` and `rule` are NULL, live or freed; `desc` readable
    // with NULL or NUL-terminated strings.
    unsafe { nnm_region_config_append(config, desc, rule) }
}

fn prepend(config: *mut nnm_region_config, desc: &nnm_region_desc, rule: *const nnm_region_rule) -> Status {
    // SAFETY: as in `append`.
    unsafe { nnm_region_config_prepend(config, desc, rule) }
}

fn free_config(config: *mut nnm_region_config) {
    // SAFETY: `config` is live (or freed: reported) and used by nothing else.
    unsafe { nnm_region_config_free(config) }
}

fn attribute(config: *const nnm_region_config, region: &CStr, key: &CStr) -> Result<String, Status> {
    let mut n = 0;
    // SAFETY: a size query; literals are NUL-terminated.
    let status =
        unsafe { nnm_region_config_get_attribute(config, region.as_ptr(), key.as_ptr(), null_mut(), 0, &mut n) };
    if status != Status::Ok {
        return Err(status);
    }
    let mut buf = vec![0 as c_char; n];
    // SAFETY: `buf` holds `n` writable bytes.
    let status =
        unsafe { nnm_region_config_get_attribute(config, region.as_ptr(), key.as_ptr(), buf.as_mut_ptr(), n, &mut n) };
    assert_eq!(status, Status::Ok);
    // SAFETY: NUL-terminated inside `buf`.
    Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap().to_string())
}

#[test]
fn descriptions_carry_every_property_in_match_order() {
    let c = new_config(true);
    assert_eq!(description_count(c), 5);
    // SAFETY: a NUL-terminated literal.
    assert_eq!(unsafe { nnm_region_config_add_level(c, c"sram".as_ptr(), 0) }, Status::Ok);
    // SAFETY: as above; redefining "memory" gives it another rank.
    assert_eq!(unsafe { nnm_region_config_add_level(c, c"memory".as_ptr(), 1) }, Status::Ok);
    // SAFETY: NUL-terminated literals; the out pointer is writable.
    let fc = made(|o| unsafe { nnm_region_rule_tag(c"op".as_ptr(), c"fc".as_ptr(), o) }).unwrap();
    let sram = nnm_region_desc {
        algorithm: Algorithm::Sequential as u32,
        flags: NNM_REGION_NO_REUSE | NNM_REGION_FIXED_BASE,
        alignment: 128,
        base_address: 0x2000_0000,
        capacity: 4096,
        level: c"sram".as_ptr(),
        reserved_front: 16,
        reserved_back: 32,
        spill_to: c"constant-weights".as_ptr(),
        ..region(c"fc-weights", 10)
    };
    assert_eq!(prepend(c, &sram, fc), Status::Ok);
    let inputs = nnm_region_desc { flags: NNM_REGION_PER_TENSOR, ..region(c"inputs", 11) };
    assert_eq!(append(c, &inputs, fc), Status::Ok);
    free_rule(fc);
    assert_eq!(description_count(c), 7);
    // SAFETY: `c` is live and not changed while read.
    let config = unsafe { &(*c).config };
    let names: Vec<&str> = config.descriptions().iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names[0], "fc-weights");
    assert_eq!(names[6], "inputs");
    let d = &config.descriptions()[0];
    let p = &d.properties;
    assert_eq!(d.id, 10);
    assert_eq!(d.rule.to_string(), "tag op = 'fc'");
    assert_eq!((p.algorithm, p.reuse, p.per_tensor, p.alignment), (Algorithm::Sequential, false, false, 128));
    assert_eq!((p.base_address, p.capacity, p.level.as_str()), (Some(0x2000_0000), Some(4096), "sram"));
    assert_eq!((p.reserved_front, p.reserved_back, p.spill_to.as_deref()), (16, 32, Some("constant-weights")));
    let p = &config.descriptions()[6].properties;
    assert_eq!((p.algorithm, p.reuse, p.per_tensor, p.alignment), (Algorithm::Auto, true, true, 64));
    assert_eq!((p.base_address, p.capacity, p.level.as_str(), p.spill_to.as_deref()), (None, None, "memory", None));
    assert_eq!(config.level("memory").unwrap().rank, 1);
    free_config(c);
}

#[test]
fn bad_descriptions_are_refused_and_change_nothing() {
    let c = new_config(true);
    let (any, freed) = (any_rule(), any_rule());
    free_rule(freed);
    let ok = region(c"fast", 9);
    let cases: Vec<(nnm_region_desc, Status, &str)> = vec![
        (
            region(c"x", 0),
            Status::AlreadyExists,
            "region 'x' (id 0): id 0 is already used by region 'constant-weights'",
        ),
        (
            region(c"activations", 9),
            Status::AlreadyExists,
            "region 'activations' (id 9): a region of that name already exists",
        ),
        (
            nnm_region_desc { level: c"sram".as_ptr(), ..ok },
            Status::NotFound,
            "region 'fast' (id 9): unknown memory level 'sram' (known: memory)",
        ),
        (nnm_region_desc { flags: 16, ..ok }, Status::InvalidArgument, "region 'fast' (id 9): unknown flags 0x10"),
        (nnm_region_desc { flags: 0x8000_0001, ..ok }, Status::InvalidArgument, "unknown flags 0x80000000"),
        (
            nnm_region_desc { base_address: 0x1000, ..ok },
            Status::InvalidArgument,
            "base_address 0x1000 without NNM_REGION_FIXED_BASE",
        ),
        (
            nnm_region_desc { base_address: 0x1010, flags: NNM_REGION_FIXED_BASE, ..ok },
            Status::InvalidArgument,
            "base address 0x1010 is not a multiple of its alignment 64",
        ),
        (nnm_region_desc { alignment: 3, ..ok }, Status::InvalidArgument, "region 'fast' (id 9)"),
        (
            nnm_region_desc { algorithm: 99, ..ok },
            Status::InvalidArgument,
            "region 'fast' (id 9): unknown algorithm value 99",
        ),
        (
            nnm_region_desc { reserved_front: u64::MAX, reserved_back: 1, ..ok },
            Status::Overflow,
            "reserved bytes 18446744073709551615 + 1 overflow",
        ),
        (
            nnm_region_desc { reserved_front: 64, capacity: 32, ..ok },
            Status::InvalidArgument,
            "reserved bytes (64 B front, 0 B back; 64 B rounded to its alignment 64, the front up to a multiple of \
             it, then the whole) exceed its capacity 32 B",
        ),
        // 1 B front and 1 B back fit 256 B together, but the front rounds
        // up to 256 before the back is added: the empty region takes 512.
        (
            nnm_region_desc { reserved_front: 1, reserved_back: 1, alignment: 256, capacity: 256, ..ok },
            Status::InvalidArgument,
            "reserved bytes (1 B front, 1 B back; 512 B rounded to its alignment 256, the front up to a multiple \
             of it, then the whole) exceed its capacity 256 B",
        ),
        (nnm_region_desc { spill_to: c"fast".as_ptr(), ..ok }, Status::InvalidArgument, "spills to itself"),
        (nnm_region_desc { spill_to: c"".as_ptr(), ..ok }, Status::InvalidArgument, "spill_to is empty"),
        (region(c"", 9), Status::InvalidArgument, "has an empty name"),
        (nnm_region_desc { name: null(), ..ok }, Status::NullArgument, "desc->name is NULL"),
    ];
    for (desc, status, text) in &cases {
        fails(append(c, desc, any), *status, text);
        fails(prepend(c, desc, any), *status, text);
        assert_eq!(description_count(c), 5);
    }
    fails(append(c, &ok, null()), Status::NullArgument, "rule is NULL");
    fails(append(c, &ok, freed), Status::InvalidArgument, "not a live nnm_region_rule");
    fails(append(null_mut(), &ok, any), Status::NullArgument, "config is NULL");
    // SAFETY: NULL desc is refused before any read.
    fails(unsafe { nnm_region_config_prepend(c, null(), any) }, Status::NullArgument, "desc is NULL");
    assert_eq!(description_count(c), 5);
    // SAFETY: NUL-terminated literals; NULLs are refused.
    unsafe {
        fails(nnm_region_config_add_level(c, c"memory".as_ptr(), 0), Status::Ok, "");
        fails(
            nnm_region_config_add_level(c, c"memory".as_ptr(), 2),
            Status::AlreadyExists,
            "memory level 'memory' is defined twice",
        );
        fails(nnm_region_config_add_level(c, c"".as_ptr(), 2), Status::InvalidArgument, "memory level name is empty");
        fails(nnm_region_config_add_level(c, null(), 2), Status::NullArgument, "name is NULL");
        fails(nnm_region_config_add_level(null_mut(), c"x".as_ptr(), 2), Status::NullArgument, "config is NULL");
        fails(nnm_region_config_new(null_mut()), Status::NullArgument, "out_config is NULL");
        fails(nnm_region_config_new_default(null_mut()), Status::NullArgument, "out_config is NULL");
        fails(nnm_region_config_description_count(c, null_mut()), Status::NullArgument, "out_count is NULL");
    }
    assert_eq!(append(c, &ok, any), Status::Ok);
    assert_eq!(description_count(c), 6);
    free_rule(any);
    free_config(c);
    fails(append(c, &ok, any), Status::InvalidArgument, "not a live nnm_region_config");
    free_config(c);
    assert!(last_error().contains("nnm_region_config_free"), "{}", last_error());
    free_config(null_mut());
}

#[test]
fn attributes_are_set_replaced_and_read_with_a_size_query() {
    let c = new_config(true);
    // SAFETY: NUL-terminated literals; `c` is live.
    unsafe {
        assert_eq!(
            nnm_region_config_set_attribute(c, c"activations".as_ptr(), c"bank".as_ptr(), c"0".as_ptr()),
            Status::Ok
        );
        assert_eq!(
            nnm_region_config_set_attribute(c, c"activations".as_ptr(), c"bank".as_ptr(), c"12".as_ptr()),
            Status::Ok
        );
        assert_eq!(
            nnm_region_config_set_attribute(c, c"activations".as_ptr(), c"empty".as_ptr(), c"".as_ptr()),
            Status::Ok
        );
    }
    assert_eq!(attribute(c, c"activations", c"bank").as_deref(), Ok("12"));
    assert_eq!(attribute(c, c"activations", c"empty").as_deref(), Ok(""));
    fails(
        attribute(c, c"activations", c"speed").unwrap_err(),
        Status::NotFound,
        "region 'activations' has no attribute 'speed' (attributes: bank, empty)",
    );
    fails(attribute(c, c"sram", c"bank").unwrap_err(), Status::NotFound, "no region description named 'sram' (known: constant-weights, mutable-weights, mutable-input-weights, mutable-output-weights, activations)");
    let mut buf = [7 as c_char; 2];
    let mut n = 99;
    // SAFETY: as above; the buffers are writable for the lengths given,
    // and NULLs are refused before any read.
    unsafe {
        let (region, key) = (c"activations".as_ptr(), c"bank".as_ptr());
        fails(
            nnm_region_config_get_attribute(c, region, key, buf.as_mut_ptr(), 2, &mut n),
            Status::BufferTooSmall,
            "attribute 'bank' needs 3 B (NUL included), buffer has 2 B",
        );
        assert_eq!((buf, n), ([7, 7], 99));
        fails(
            nnm_region_config_get_attribute(c, region, null(), null_mut(), 0, &mut n),
            Status::NullArgument,
            "key is NULL",
        );
        fails(
            nnm_region_config_get_attribute(c, null(), key, null_mut(), 0, &mut n),
            Status::NullArgument,
            "region is NULL",
        );
        fails(
            nnm_region_config_get_attribute(null(), region, key, null_mut(), 0, &mut n),
            Status::NullArgument,
            "config is NULL",
        );
        fails(
            nnm_region_config_get_attribute(c, region, key, null_mut(), 0, null_mut()),
            Status::NullArgument,
            "out_written is NULL",
        );
        assert_eq!(n, 99);
        fails(
            nnm_region_config_set_attribute(c, region, c"".as_ptr(), c"x".as_ptr()),
            Status::InvalidArgument,
            "region 'activations': attribute key is empty",
        );
        fails(
            nnm_region_config_set_attribute(c, c"sram".as_ptr(), key, c"x".as_ptr()),
            Status::NotFound,
            "no region description named 'sram'",
        );
        fails(nnm_region_config_set_attribute(c, region, key, null()), Status::NullArgument, "value is NULL");
        fails(
            nnm_region_config_set_attribute(null_mut(), region, key, c"x".as_ptr()),
            Status::NullArgument,
            "config is NULL",
        );
    }
    assert_eq!(attribute(c, c"activations", c"bank").as_deref(), Ok("12"));
    free_config(c);
}

// --- tables -----------------------------------------------------------------------------

use super::table::*;
use crate::region::RegionTable;

fn build(config: *const nnm_region_config, model: *const nnm_region_model) -> Result<*mut nnm_region_table, Status> {
    let sentinel = std::ptr::NonNull::<nnm_region_table>::dangling().as_ptr();
    let mut t = sentinel;
    // SAFETY: both handles are NULL, live or freed; `t` is writable.
    match unsafe { nnm_region_table_build(config, model, &mut t) } {
        Status::Ok => Ok(t),
        s => {
            assert_eq!(t, sentinel, "out_table written on failure");
            Err(s)
        }
    }
}

fn free_table(table: *mut nnm_region_table) {
    // SAFETY: `table` is live (or freed: reported) and used by nothing else.
    unsafe { nnm_region_table_free(table) }
}

fn text_of(ptr: *const c_char) -> String {
    assert!(!ptr.is_null());
    // SAFETY: every caller passes a string owned by a live table.
    unsafe { CStr::from_ptr(ptr) }.to_str().unwrap().to_string()
}

fn region_info(table: *const nnm_region_table, index: usize) -> nnm_region_info {
    let mut info = nnm_region_info::default();
    // SAFETY: `table` is live; `info` is writable.
    assert_eq!(unsafe { nnm_region_table_region(table, index, &mut info) }, Status::Ok, "{}", last_error());
    info
}

fn region_tensors(table: *const nnm_region_table, index: usize) -> Vec<usize> {
    let mut n = usize::MAX;
    // SAFETY: a size query: NULL ids and capacity 0.
    assert_eq!(unsafe { nnm_region_table_region_tensors(table, index, null_mut(), 0, &mut n) }, Status::Ok);
    let mut ids = vec![usize::MAX; n];
    let mut written = 0;
    // SAFETY: `ids` holds `n` writable values.
    let status = unsafe { nnm_region_table_region_tensors(table, index, ids.as_mut_ptr(), n, &mut written) };
    assert_eq!((status, written), (Status::Ok, n));
    ids
}

fn placement(table: *const nnm_region_table, id: usize) -> nnm_tensor_placement {
    let mut p = nnm_tensor_placement::default();
    // SAFETY: `table` is live; `p` is writable.
    assert_eq!(unsafe { nnm_region_table_placement(table, id, &mut p) }, Status::Ok, "{}", last_error());
    p
}

fn count_of(
    table: *const nnm_region_table,
    count: unsafe extern "C" fn(*const nnm_region_table, *mut usize) -> Status,
) -> usize {
    let mut n = usize::MAX;
    // SAFETY: `table` is live; `n` is writable.
    assert_eq!(unsafe { count(table, &mut n) }, Status::Ok);
    n
}

fn find_region(table: *const nnm_region_table, name: &CStr) -> Result<usize, Status> {
    let mut i = usize::MAX;
    // SAFETY: `table` is live; the name NUL-terminated; `i` writable.
    match unsafe { nnm_region_table_find_region(table, name.as_ptr(), &mut i) } {
        Status::Ok => Ok(i),
        s => {
            assert_eq!(i, usize::MAX, "out_index written on failure");
            Err(s)
        }
    }
}

/// Checks that everything the C API says of `table` is what the core's
/// `expected` table holds.
fn assert_mirrors(table: *const nnm_region_table, expected: &RegionTable) {
    assert_eq!(count_of(table, nnm_region_table_region_count), expected.regions.len());
    for (i, r) in expected.regions.iter().enumerate() {
        let info = region_info(table, i);
        assert_eq!((text_of(info.name), text_of(info.level)), (r.name.clone(), r.level.clone()));
        assert_eq!((info.description_id, info.level_rank), (r.description_id, r.level_rank));
        assert_eq!(
            (info.base_address, info.size_bytes, info.peak_bytes, info.lower_bound_bytes),
            (r.base_address, r.size, r.peak, r.lower_bound)
        );
        assert_eq!((info.algorithm, info.proven_optimal), (r.algorithm as u32, u8::from(r.proven_optimal)));
        assert_eq!(info.tensor_count, r.tensors.len());
        assert_eq!(region_tensors(table, i), r.tensors);
        let name = std::ffi::CString::new(r.name.clone()).unwrap();
        assert_eq!(find_region(table, &name), Ok(i));
        assert_eq!(info.attribute_count, r.attributes.len());
        for (at, (k, v)) in r.attributes.iter().enumerate() {
            let (mut key, mut value) = (null(), null());
            // SAFETY: `table` is live; both out-pointers are writable.
            assert_eq!(unsafe { nnm_region_table_region_attribute(table, i, at, &mut key, &mut value) }, Status::Ok);
            assert_eq!((text_of(key), text_of(value)), (k.clone(), v.clone()));
            let (key, mut found) = (std::ffi::CString::new(k.clone()).unwrap(), null());
            // SAFETY: as above; `key` is NUL-terminated.
            assert_eq!(unsafe { nnm_region_table_find_attribute(table, i, key.as_ptr(), &mut found) }, Status::Ok);
            assert_eq!(text_of(found), *v);
        }
    }
    assert_eq!(count_of(table, nnm_region_table_tensor_count), expected.placements.len());
    for (id, p) in expected.placements.iter().enumerate() {
        let c = placement(table, id);
        assert_eq!(
            (c.region, c.offset, c.address, c.size_bytes, c.spilled),
            (p.region, p.offset, p.address, p.size, u8::from(p.spilled))
        );
    }
    assert_eq!(count_of(table, nnm_region_table_spill_count), expected.spills.len());
    for (i, s) in expected.spills.iter().enumerate() {
        let mut c = nnm_region_spill::default();
        // SAFETY: `table` is live; `c` is writable.
        assert_eq!(unsafe { nnm_region_table_spill(table, i, &mut c) }, Status::Ok);
        assert_eq!((c.tensor, c.from, c.to, text_of(c.reason)), (s.tensor, s.from, s.to, s.reason.clone()));
        let mut via = vec![usize::MAX; c.via_count];
        let mut n = 0;
        // SAFETY: `table` is live; `via` has room for `via_count` values.
        assert_eq!(unsafe { nnm_region_table_spill_via(table, i, via.as_mut_ptr(), via.len(), &mut n) }, Status::Ok);
        assert_eq!((n, via), (s.via.len(), s.via.clone()));
    }
}

/// A small model: two constants, an input, an output, three activations in
/// a chain and a view inside the first.
fn small_model() -> *mut nnm_region_model {
    let m = new_model();
    let fc =
        |name, size| nnm_region_tensor_desc { tags: c"op=fc".as_ptr(), ..tensor(name, TensorKind::Constant, size) };
    for desc in [
        fc(c"fc1.weight", 100),
        fc(c"fc2.weight", 50),
        tensor(c"x", TensorKind::Input, 32),
        tensor(c"y", TensorKind::Output, 16),
        activation(c"a", 256, 0, 1),
        activation(c"b", 128, 1, 2),
        activation(c"c", 256, 2, 3),
        nnm_region_tensor_desc { view_of: c"a".as_ptr(), view_offset: 64, ..tensor(c"a.tail", TensorKind::View, 64) },
    ] {
        add(m, &desc).unwrap();
    }
    m
}

#[test]
fn a_table_says_what_the_core_built_and_outlives_its_model_and_config() {
    let (m, c) = (small_model(), new_config(true));
    // SAFETY: both handles are live and not changed while read.
    let expected = RegionTable::build(unsafe { &(*m).model }, unsafe { &(*c).config }).unwrap();
    let t = build(c, m).unwrap();
    free_model(m);
    free_config(c);
    assert_mirrors(t, &expected);
    // Glow's layout by hand: constants stacked in order at 64-byte
    // alignment (fc1 at 0, fc2 at 128), then the placeholders, then the
    // activations; the view sits 64 B into `a`.
    let constants = find_region(t, c"constant-weights").unwrap();
    assert_eq!(region_tensors(t, constants), [0, 1]);
    let (fc1, fc2) = (placement(t, 0), placement(t, 1));
    assert_eq!((fc1.region, fc1.offset, fc2.offset), (constants, 0, 128));
    assert_eq!(region_info(t, constants).size_bytes, 192);
    let (a, view) = (placement(t, 4), placement(t, 7));
    assert_eq!((view.region, view.offset, view.address), (a.region, a.offset + 64, a.address + 64));
    assert_eq!(text_of(region_info(t, a.region).name), "activations");
    assert_eq!(count_of(t, nnm_region_table_spill_count), 0);
    free_table(t);
}

#[test]
fn a_spill_chain_and_attributes_read_back_from_c_after_the_config_is_gone() {
    // sram (1 KiB, constants) spills to l2 (4 KiB, nothing of its own),
    // which spills to ddr: w1 (8192 B) and w3 (3000 B) end in ddr through
    // l2, one record each; w4 (2000 B) ends in l2.
    let c = new_config(false);
    for (level, rank) in [(c"sram", 0), (c"l2", 1), (c"ddr", 2)] {
        // SAFETY: `c` is live; the name is NUL-terminated.
        assert_eq!(unsafe { nnm_region_config_add_level(c, level.as_ptr(), rank) }, Status::Ok);
    }
    let any = any_rule();
    // SAFETY: `any` is live; `o` is writable.
    let none = made(|o| unsafe { nnm_region_rule_not(any, o) }).unwrap();
    // SAFETY: `o` is writable.
    let constants = made(|o| unsafe { nnm_region_rule_kind(TensorKind::Constant as u32, o) }).unwrap();
    let tier = |name: &'static CStr, id, capacity, spill: Option<&'static CStr>| nnm_region_desc {
        level: name.as_ptr(),
        capacity,
        spill_to: spill.map_or(null(), CStr::as_ptr),
        ..region(name, id)
    };
    assert_eq!(append(c, &tier(c"sram", 1, 1024, Some(c"l2")), constants), Status::Ok);
    assert_eq!(append(c, &tier(c"l2", 2, 4096, Some(c"ddr")), none), Status::Ok);
    assert_eq!(append(c, &tier(c"ddr", 3, 0, None), any), Status::Ok);
    // SAFETY: `c` is live; the strings are NUL-terminated.
    let set = unsafe { nnm_region_config_set_attribute(c, c"l2".as_ptr(), c"bank".as_ptr(), c"2".as_ptr()) };
    assert_eq!(set, Status::Ok);
    let m = new_model();
    for (name, size) in [(c"w0", 512), (c"w1", 8192), (c"w2", 256), (c"w3", 3000), (c"w4", 2000)] {
        add(m, &tensor(name, TensorKind::Constant, size)).unwrap();
    }
    // SAFETY: both handles are live and not changed while read.
    let expected = RegionTable::build(unsafe { &(*m).model }, unsafe { &(*c).config }).unwrap();
    let t = build(c, m).unwrap();
    free_config(c);
    free_model(m);
    assert_mirrors(t, &expected);
    assert_eq!(count_of(t, nnm_region_table_spill_count), 3);
    let l2 = find_region(t, c"l2").unwrap();
    let mut value = null();
    // SAFETY: `t` is live; the key is NUL-terminated; `value` is writable.
    assert_eq!(unsafe { nnm_region_table_find_attribute(t, l2, c"bank".as_ptr(), &mut value) }, Status::Ok);
    assert_eq!(text_of(value), "2");
    // SAFETY: as above.
    let missing = unsafe { nnm_region_table_find_attribute(t, l2, c"dma".as_ptr(), &mut value) };
    fails(missing, Status::NotFound, "region 'l2' has no attribute 'dma' (attributes: bank)");
    let mut small = [0usize; 0];
    let mut n = 7;
    // SAFETY: `t` is live; `small` has room for 0 values.
    let status = unsafe { nnm_region_table_spill_via(t, 0, small.as_mut_ptr(), 0, &mut n) };
    fails(status, Status::BufferTooSmall, "spill 0 passed through 1 regions, regions has room for 0");
    assert_eq!(n, 7, "nothing written");
    for r in [any, none, constants] {
        free_rule(r);
    }
    free_table(t);
}

#[test]
fn table_queries_check_their_arguments_and_leave_out_params_untouched() {
    let (m, c) = (small_model(), new_config(true));
    let t = build(c, m).unwrap();
    let regions = count_of(t, nnm_region_table_region_count);
    let constants = find_region(t, c"constant-weights").unwrap();
    // SAFETY: every pointer is NULL, live, freed (refused unread) or
    // writable for the count given.
    unsafe {
        fails(build(null(), m).unwrap_err(), Status::NullArgument, "config is NULL");
        fails(build(c, null()).unwrap_err(), Status::NullArgument, "model is NULL");
        fails(nnm_region_table_build(c, m, null_mut()), Status::NullArgument, "out_table is NULL");
        let mut info = nnm_region_info { description_id: 77, ..Default::default() };
        fails(
            nnm_region_table_region(t, regions, &mut info),
            Status::InvalidArgument,
            &format!("region index {regions} is out of range (the table has {regions} regions)"),
        );
        fails(nnm_region_table_region(null(), 0, &mut info), Status::NullArgument, "table is NULL");
        fails(nnm_region_table_region(t, 0, null_mut()), Status::NullArgument, "out_info is NULL");
        assert_eq!(info.description_id, 77);
        let mut ids = [usize::MAX; 1];
        let mut n = 99;
        fails(
            nnm_region_table_region_tensors(t, constants, ids.as_mut_ptr(), 1, &mut n),
            Status::BufferTooSmall,
            "region 'constant-weights' has 2 tensors, ids has room for 1",
        );
        fails(
            nnm_region_table_region_tensors(t, constants, null_mut(), 2, &mut n),
            Status::NullArgument,
            "ids is NULL",
        );
        fails(
            nnm_region_table_region_tensors(t, constants, ids.as_mut_ptr(), usize::MAX, &mut n),
            Status::Overflow,
            "ids: ",
        );
        fails(
            nnm_region_table_region_tensors(t, regions, null_mut(), 0, &mut n),
            Status::InvalidArgument,
            "out of range",
        );
        fails(
            nnm_region_table_region_tensors(t, constants, null_mut(), 0, null_mut()),
            Status::NullArgument,
            "out_count is NULL",
        );
        assert_eq!((ids, n), ([usize::MAX], 99));
        fails(
            find_region(t, c"sram").unwrap_err(),
            Status::NotFound,
            "no region named 'sram' in the table (regions: constant-weights",
        );
        let mut i = 5;
        fails(nnm_region_table_find_region(t, null(), &mut i), Status::NullArgument, "name is NULL");
        assert_eq!(i, 5);
        let mut p = nnm_tensor_placement { offset: 55, ..Default::default() };
        fails(
            nnm_region_table_placement(t, 8, &mut p),
            Status::InvalidArgument,
            "tensor id 8 is out of range (the table has 8 tensors)",
        );
        assert_eq!(p.offset, 55);
        let mut s = nnm_region_spill { tensor: 66, ..Default::default() };
        fails(
            nnm_region_table_spill(t, 0, &mut s),
            Status::InvalidArgument,
            "spill index 0 is out of range (the table has 0 spills)",
        );
        assert_eq!(s.tensor, 66);
        for count in [nnm_region_table_region_count, nnm_region_table_tensor_count, nnm_region_table_spill_count] {
            fails(count(t, null_mut()), Status::NullArgument, "out_count is NULL");
            fails(count(null(), &mut n), Status::NullArgument, "table is NULL");
        }
    }
    free_table(t);
    // SAFETY: a freed table is refused unread.
    fails(
        unsafe { nnm_region_table_region(t, 0, &mut nnm_region_info::default()) },
        Status::InvalidArgument,
        "is not a live nnm_region_table",
    );
    free_table(t);
    assert!(last_error().contains("nnm_region_table_free"), "{}", last_error());
    free_table(null_mut());
    free_model(m);
    free_config(c);
}

/// A configuration with SRAM (rank 0) and DDR (rank 1) levels: FC weights
/// in "sram-weights" (capacity `capacity`, spilling to "ddr-weights" when
/// `spill`), Glow's defaults for the rest.
fn sram_config(capacity: u64, spill: bool) -> *mut nnm_region_config {
    let c = new_config(true);
    // SAFETY: NUL-terminated literals; `c` is live.
    unsafe {
        assert_eq!(nnm_region_config_add_level(c, c"sram".as_ptr(), 0), Status::Ok);
        assert_eq!(nnm_region_config_add_level(c, c"ddr".as_ptr(), 1), Status::Ok);
    }
    // SAFETY: NUL-terminated literals; the out pointer is writable.
    let fc = made(|o| unsafe { nnm_region_rule_tag(c"op".as_ptr(), c"fc".as_ptr(), o) }).unwrap();
    let weights = |name: &'static CStr, id, level: &'static CStr| nnm_region_desc {
        algorithm: Algorithm::Sequential as u32,
        flags: NNM_REGION_NO_REUSE,
        level: level.as_ptr(),
        ..region(name, id)
    };
    let ddr = weights(c"ddr-weights", 11, c"ddr");
    let sram = nnm_region_desc {
        capacity,
        spill_to: if spill { ddr.name } else { null() },
        ..weights(c"sram-weights", 10, c"sram")
    };
    assert_eq!(prepend(c, &ddr, fc), Status::Ok);
    assert_eq!(prepend(c, &sram, fc), Status::Ok);
    free_rule(fc);
    c
}

#[test]
fn a_capacity_overflow_spills_or_fails_with_the_missing_bytes() {
    let m = small_model();
    // fc1 (128 B aligned) and fc2 (64 B) need 192 B; 128 B holds one.
    let c = sram_config(128, true);
    // SAFETY: both handles are live and not changed while read.
    let expected = RegionTable::build(unsafe { &(*m).model }, unsafe { &(*c).config }).unwrap();
    let t = build(c, m).unwrap();
    free_config(c);
    assert_mirrors(t, &expected);
    assert!(count_of(t, nnm_region_table_spill_count) >= 1);
    let mut s = nnm_region_spill::default();
    // SAFETY: `t` is live; `s` is writable.
    assert_eq!(unsafe { nnm_region_table_spill(t, 0, &mut s) }, Status::Ok);
    assert_eq!(text_of(region_info(t, s.from).name), "sram-weights");
    assert_eq!(text_of(region_info(t, s.to).name), "ddr-weights");
    assert_eq!(text_of(region_info(t, s.to).level), "ddr");
    assert!(!text_of(s.reason).is_empty());
    assert_eq!(placement(t, s.tensor).spilled, 1);
    assert_eq!(placement(t, s.tensor).region, s.to);
    free_table(t);

    let c = sram_config(128, false);
    fails(build(c, m).unwrap_err(), Status::DoesNotFit, "missing");
    assert!(last_error().contains("capacity 128 B"), "{}", last_error());
    free_config(c);
    free_model(m);
}

#[test]
fn bad_tables_are_refused_naming_the_problem() {
    let m = small_model();
    // Two fixed bases overlapping in one level.
    let c = new_config(true);
    let any = any_rule();
    let fixed =
        |name, id, base| nnm_region_desc { flags: NNM_REGION_FIXED_BASE, base_address: base, ..region(name, id) };
    // SAFETY: NUL-terminated literals; `c` is live.
    let x = made(|o| unsafe { nnm_region_rule_kind(TensorKind::Input as u32, o) }).unwrap();
    assert_eq!(prepend(c, &fixed(c"in-a", 20, 0x1000), x), Status::Ok);
    // SAFETY: as above.
    let y = made(|o| unsafe { nnm_region_rule_kind(TensorKind::Output as u32, o) }).unwrap();
    assert_eq!(prepend(c, &fixed(c"out-b", 21, 0x1000), y), Status::Ok);
    fails(build(c, m).unwrap_err(), Status::InvalidArgument, "overlap");
    assert!(last_error().contains("in-a") && last_error().contains("out-b"), "{}", last_error());
    free_config(c);
    // No rule takes the activations.
    let c = new_config(false);
    // SAFETY: as above.
    let weights = made(|o| unsafe { nnm_region_rule_not(x, o) }).unwrap();
    // It takes constants and activations alike, which it must allow.
    let mixed = nnm_region_desc { flags: NNM_REGION_MIX_CONSTANTS, ..region(c"all-but-inputs", 1) };
    assert_eq!(append(c, &mixed, weights), Status::Ok);
    assert_eq!(append(c, &region(c"inputs", 2), x), Status::Ok);
    let v = nnm_region_tensor_desc { view_of: c"x".as_ptr(), ..tensor(c"x.view", TensorKind::View, 8) };
    add(m, &v).unwrap();
    free_table(build(c, m).unwrap());
    free_config(c);
    let c = new_config(false);
    assert_eq!(append(c, &region(c"inputs", 2), x), Status::Ok);
    fails(
        build(c, m).unwrap_err(),
        Status::InvalidArgument,
        "'fc1.weight' (constant, function main) matches no region; tried: inputs: kind = input",
    );
    // A spill target that is not there.
    let bad = nnm_region_desc { capacity: 64, spill_to: c"nowhere".as_ptr(), ..region(c"all", 3) };
    assert_eq!(append(c, &bad, any), Status::Ok);
    fails(build(c, m).unwrap_err(), Status::NotFound, "nowhere");
    free_config(c);
    for r in [any, x, y, weights] {
        free_rule(r);
    }
    free_model(m);
}

/// The text a `(buf, len, out_len)` export gives, through a size query.
fn copied(write: impl Fn(*mut c_char, usize, *mut usize) -> Status) -> Result<String, Status> {
    let mut n = 0;
    let status = write(null_mut(), 0, &mut n);
    if status != Status::Ok {
        return Err(status);
    }
    let mut buf = vec![0 as c_char; n];
    let mut written = 0;
    assert_eq!(write(buf.as_mut_ptr(), n, &mut written), Status::Ok);
    assert_eq!(written, n);
    // SAFETY: the export NUL-terminated the text inside `buf`.
    Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap().to_string())
}

#[test]
fn the_report_and_the_picture_are_the_cores() {
    let m = small_model();
    let c = sram_config(128, true);
    // SAFETY: both handles are live and not changed while read.
    let (model, config) = unsafe { (&(*m).model, &(*c).config) };
    let expected = RegionTable::build(model, config).unwrap();
    let t = build(c, m).unwrap();
    let (text, json, svg) = (
        expected.report(crate::arena::ReportFormat::Text),
        expected.report(crate::arena::ReportFormat::Json),
        expected.svg(),
    );
    free_model(m);
    free_config(c);
    // SAFETY: `t` is live; the buffers are the helper's.
    let report = |format: u32| copied(|buf, len, out| unsafe { nnm_region_table_report(t, format, buf, len, out) });
    assert_eq!(report(crate::arena::ReportFormat::Text as u32).unwrap(), text);
    assert_eq!(report(crate::arena::ReportFormat::Json as u32).unwrap(), json);
    assert!(json.contains("\"levels\"") && json.contains("\"spills\""), "{json}");
    fails(report(2).unwrap_err(), Status::InvalidArgument, "unknown report format 2");
    // SAFETY: as above.
    let picture = copied(|buf, len, out| unsafe { nnm_region_table_svg(t, buf, len, out) }).unwrap();
    assert_eq!(picture, svg);
    let mut small = [7 as c_char; 4];
    let mut n = 99;
    // SAFETY: `small` holds 4 writable bytes; NULLs are refused unread.
    unsafe {
        fails(
            nnm_region_table_svg(t, small.as_mut_ptr(), 4, &mut n),
            Status::BufferTooSmall,
            &format!("picture needs {} B (NUL included), buffer has 4 B", svg.len() + 1),
        );
        fails(nnm_region_table_report(t, 0, small.as_mut_ptr(), 4, &mut n), Status::BufferTooSmall, "report needs");
        fails(nnm_region_table_report(null(), 0, null_mut(), 0, &mut n), Status::NullArgument, "table is NULL");
        fails(nnm_region_table_svg(t, null_mut(), 0, null_mut()), Status::NullArgument, "out_written is NULL");
    }
    assert_eq!((small, n), ([7; 4], 99));
    free_table(t);
}

#[test]
fn a_table_is_read_by_many_threads_at_once() {
    let (m, c) = (small_model(), new_config(true));
    let t = build(c, m).unwrap();
    free_model(m);
    free_config(c);
    // SAFETY: `t` is live for the whole test.
    let expected = &unsafe { (*t).table.clone() };
    /// The table pointer, handed to other threads.
    struct Shared(*const nnm_region_table);
    // SAFETY: a table is immutable; the header promises concurrent reads.
    unsafe impl Sync for Shared {}
    let shared = &Shared(t);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(move || {
                for _ in 0..3 {
                    let Shared(table) = shared;
                    assert_mirrors(*table, expected);
                }
            });
        }
    });
    free_table(t);
}

// --- TOML -------------------------------------------------------------------------------

const EXAMPLE: &str = include_str!("../../../examples/regions.toml");

fn from_toml(text: &CStr) -> Result<*mut nnm_region_config, Status> {
    let sentinel = std::ptr::NonNull::<nnm_region_config>::dangling().as_ptr();
    let mut c = sentinel;
    // SAFETY: `text` is NUL-terminated; `c` is writable.
    match unsafe { nnm_region_config_from_toml(text.as_ptr(), &mut c) } {
        Status::Ok => Ok(c),
        s => {
            assert_eq!(c, sentinel, "out_config written on failure");
            Err(s)
        }
    }
}

#[test]
fn configurations_are_read_from_toml_text_with_errors_at_their_line() {
    let text = std::ffi::CString::new(EXAMPLE).unwrap();
    let c = from_toml(&text).unwrap();
    // SAFETY: `c` is live and not changed while read.
    assert_eq!(unsafe { &(*c).config }, &crate::region::RegionConfig::from_toml_str(EXAMPLE).unwrap());
    assert!(description_count(c) > 5);
    free_config(c);
    fails(from_toml(c"[[region]\n").unwrap_err(), Status::InvalidArgument, "line 1, column");
    let twice = c"[[region]]\nname = \"a\"\nrule = { all_tensors = true }\n[[region]]\nname = \"a\"\nrule = { all_tensors = true }\n";
    fails(
        from_toml(twice).unwrap_err(),
        Status::AlreadyExists,
        "line 4, column 1: region 'a' (id 1): a region of that name already exists",
    );
    fails(
        from_toml(c"[[region]]\nname = \"a\"\nlevel = \"hbm\"\nrule = { all_tensors = true }\n").unwrap_err(),
        Status::NotFound,
        "unknown memory level 'hbm'",
    );
    // SAFETY: NULLs are refused before any read.
    unsafe {
        fails(nnm_region_config_from_toml(null(), &mut null_mut()), Status::NullArgument, "text is NULL");
        fails(nnm_region_config_from_toml(text.as_ptr(), null_mut()), Status::NullArgument, "out_config is NULL");
        fails(nnm_region_config_from_toml_file(null(), &mut null_mut()), Status::NullArgument, "path is NULL");
    }
}

#[test]
fn configurations_are_read_from_toml_files() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/regions.toml\0");
    let path = CStr::from_bytes_with_nul(path.as_bytes()).unwrap();
    let mut c = null_mut();
    // SAFETY: `path` is NUL-terminated; `c` writable.
    assert_eq!(unsafe { nnm_region_config_from_toml_file(path.as_ptr(), &mut c) }, Status::Ok, "{}", last_error());
    // SAFETY: `c` is live and not changed while read.
    assert_eq!(unsafe { &(*c).config }, &crate::region::RegionConfig::from_toml_str(EXAMPLE).unwrap());
    free_config(c);
    let mut c = null_mut();
    // SAFETY: a NUL-terminated literal; `c` writable.
    let status = unsafe { nnm_region_config_from_toml_file(c"/no/such/regions.toml".as_ptr(), &mut c) };
    fails(status, Status::NotFound, "/no/such/regions.toml: cannot read the region configuration");
    assert!(c.is_null());
}
