//! C API of region rules (`nnm_region_rule_*`): predicates over a tensor's
//! fields, combined with AND, OR and NOT. A rule is an immutable value:
//! combinators and `nnm_region_config_append` copy their operands.

use std::ffi::c_char;

use crate::ffi::args::{opt_str, out_param, read_str, slice_in};
use crate::ffi::error::{guard, guard_void};
use crate::ffi::handle::{free_handle, into_handle, value_ref, HandleType};
use crate::ffi::text::copy_text;
use crate::region::{Rule, TensorKind};
use crate::status::{Error, Result, Status};

/// A rule: which tensors a region takes. Immutable once made, so any number
/// of threads may read one rule at once (combine it, append it, print it);
/// only `nnm_region_rule_free` must not overlap other calls on it. Every
/// call checks that the rule is live (a freed one gives INVALID_ARGUMENT).
pub struct nnm_region_rule {
    pub(crate) rule: Rule,
}

// SAFETY: no other handle type is named "nnm_region_rule".
unsafe impl HandleType for nnm_region_rule {
    const NAME: &'static str = "nnm_region_rule";
}

/// Borrows the rule behind a handle (NULL, liveness and type checked).
///
/// # Safety
/// `rule` must be NULL, a freed rule, or a live rule.
pub(crate) unsafe fn rule_ref<'a>(rule: *const nnm_region_rule, what: &str) -> Result<&'a Rule> {
    // SAFETY: the caller's promise is `value_ref`'s; rules are never
    // mutated after they are made.
    Ok(&unsafe { value_ref(rule, what) }?.rule)
}

/// The shape of every constructor: checks `out_rule`, makes the rule,
/// validates it, and hands it out only when all of that succeeded.
///
/// # Safety
/// `out_rule` must be NULL or valid for writing one pointer.
unsafe fn make(out_rule: *mut *mut nnm_region_rule, rule: impl FnOnce() -> Result<Rule>) -> Status {
    guard(|| {
        // SAFETY: the caller promises `out_rule` is NULL or writable.
        let out = unsafe { out_param(out_rule, "out_rule") }?;
        let rule = rule()?;
        rule.validate()?;
        out.write(into_handle(nnm_region_rule { rule }));
        Ok(())
    })
}

/// A string argument that must not be empty, as an owned string.
///
/// # Safety
/// `text` must be NULL or a NUL-terminated string.
unsafe fn text_arg(text: *const c_char, what: &str) -> Result<String> {
    // SAFETY: the caller's promise is `read_str`'s.
    let text = unsafe { read_str(text, what) }?;
    if text.is_empty() {
        return Err(Error::invalid(format!("{what} is empty")));
    }
    Ok(text.to_string())
}

/// Makes the rule every tensor matches. Free it with
/// `nnm_region_rule_free`.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `out_rule` must be NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_rule_any(out_rule: *mut *mut nnm_region_rule) -> Status {
    // SAFETY: the caller's promise is `make`'s.
    unsafe { make(out_rule, || Ok(Rule::Any)) }
}

/// Makes the rule "the tensor's kind is `kind`" (an `nnm_tensor_kind`).
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT for an unknown kind ("unknown
/// tensor kind 99 (0 to 6)").
///
/// # Safety
/// `out_rule` must be NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_rule_kind(kind: u32, out_rule: *mut *mut nnm_region_rule) -> Status {
    // SAFETY: the caller's promise is `make`'s.
    unsafe { make(out_rule, || Ok(Rule::Kind(TensorKind::from_value(kind)?))) }
}

/// Makes the rule "the tensor's name is exactly `name`".
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT ("name is empty", not UTF-8).
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string; `out_rule` must be NULL
/// or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_rule_name(name: *const c_char, out_rule: *mut *mut nnm_region_rule) -> Status {
    // SAFETY: the caller promises `name` is NULL or NUL-terminated, and
    // `out_rule` as `make` needs.
    unsafe { make(out_rule, || Ok(Rule::Name(text_arg(name, "name")?))) }
}

/// Makes the rule "the tensor's name starts with `prefix`".
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT ("prefix is empty", not UTF-8).
///
/// # Safety
/// `prefix` must be NULL or a NUL-terminated string; `out_rule` must be
/// NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_rule_name_prefix(
    prefix: *const c_char,
    out_rule: *mut *mut nnm_region_rule,
) -> Status {
    // SAFETY: as in `nnm_region_rule_name`.
    unsafe { make(out_rule, || Ok(Rule::NamePrefix(text_arg(prefix, "prefix")?))) }
}

/// Makes the rule "the tensor's name matches the glob `glob`": `*` matches
/// any run of characters, `?` one character, anything else itself.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT ("glob is empty", not UTF-8).
///
/// # Safety
/// `glob` must be NULL or a NUL-terminated string; `out_rule` must be NULL
/// or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_rule_name_glob(glob: *const c_char, out_rule: *mut *mut nnm_region_rule) -> Status {
    // SAFETY: as in `nnm_region_rule_name`.
    unsafe { make(out_rule, || Ok(Rule::NameGlob(text_arg(glob, "glob")?))) }
}

/// Makes the rule "the tensor's size is in `min..=max` bytes"; `max`
/// UINT64_MAX: no upper end.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT for `max` < `min` ("rule size in
/// 8..=4 B: size range is reversed (8 B > 4 B)").
///
/// # Safety
/// `out_rule` must be NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_rule_size(min: u64, max: u64, out_rule: *mut *mut nnm_region_rule) -> Status {
    let max = (max != u64::MAX).then_some(max);
    // SAFETY: the caller's promise is `make`'s.
    unsafe { make(out_rule, || Ok(Rule::Size { min, max })) }
}

/// Makes the rule "the tensor's dtype is exactly `dtype`".
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT ("dtype is empty", not UTF-8).
///
/// # Safety
/// `dtype` must be NULL or a NUL-terminated string; `out_rule` must be NULL
/// or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_rule_dtype(dtype: *const c_char, out_rule: *mut *mut nnm_region_rule) -> Status {
    // SAFETY: as in `nnm_region_rule_name`.
    unsafe { make(out_rule, || Ok(Rule::Dtype(text_arg(dtype, "dtype")?))) }
}

/// Makes the rule "the tensor has tag `key`", with the value `value` when
/// `value` is not NULL ("" is a value: the tag is there and empty).
///
/// Errors: NULL_ARGUMENT (`key`, `out_rule`); INVALID_ARGUMENT ("key is
/// empty", not UTF-8).
///
/// # Safety
/// `key` must be NULL or a NUL-terminated string, `value` NULL or a
/// NUL-terminated string; `out_rule` must be NULL or valid for writing one
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_rule_tag(
    key: *const c_char,
    value: *const c_char,
    out_rule: *mut *mut nnm_region_rule,
) -> Status {
    // SAFETY: the caller promises `key` and `value` are NULL or
    // NUL-terminated, and `out_rule` as `make` needs.
    unsafe {
        make(out_rule, || {
            let key = text_arg(key, "key")?;
            Ok(Rule::Tag { key, value: opt_str(value, "value")?.map(str::to_string) })
        })
    }
}

/// Makes the rule "the tensor belongs to function `function`".
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT ("function is empty", not
/// UTF-8).
///
/// # Safety
/// `function` must be NULL or a NUL-terminated string; `out_rule` must be
/// NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_rule_function(
    function: *const c_char,
    out_rule: *mut *mut nnm_region_rule,
) -> Status {
    // SAFETY: as in `nnm_region_rule_name`.
    unsafe { make(out_rule, || Ok(Rule::Function(text_arg(function, "function")?))) }
}

/// Makes the rule "the tensor is a view". Views follow their origin and are
/// never matched against a region's rule; this is for tools that evaluate
/// rules themselves.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `out_rule` must be NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_rule_is_view(out_rule: *mut *mut nnm_region_rule) -> Status {
    // SAFETY: the caller's promise is `make`'s.
    unsafe { make(out_rule, || Ok(Rule::IsView)) }
}

/// Copies the `count` rules of the array `rules` for AND or OR (`op`).
///
/// # Safety
/// `rules` must be NULL or readable for `count` pointers, each NULL or a
/// rule (a freed one is refused unread).
unsafe fn operands(rules: *const *const nnm_region_rule, count: usize, op: &str) -> Result<Vec<Rule>> {
    if count == 0 {
        return Err(Error::invalid(format!("an {op} needs at least one rule (count is 0)")));
    }
    // SAFETY: the caller promises `rules` is NULL (refused) or readable for
    // `count` pointers.
    let handles = unsafe { slice_in(rules, count, "rules") }?;
    let mut copied = Vec::with_capacity(count);
    for (i, &rule) in handles.iter().enumerate() {
        // SAFETY: the caller promises each pointer is NULL, freed (refused
        // unread) or a live rule.
        let rule = unsafe { value_ref(rule, "rule") }
            .map_err(|e| Error::new(e.status(), format!("rules[{i}]: {}", e.message())))?;
        copied.push(rule.rule.clone());
    }
    Ok(copied)
}

/// Makes the rule "every one of the `count` rules of `rules` matches"
/// (copies them: the caller still frees each).
///
/// Errors: NULL_ARGUMENT (`rules` with `count` > 0, an element, or
/// `out_rule`: "rules[1]: rule is NULL"); INVALID_ARGUMENT for `count` 0,
/// whatever `rules` is ("an AND needs at least one rule (count is 0)"), an
/// element that is not a live rule, or a result nesting deeper than 100
/// levels ("rule nests deeper than 100 levels"); OVERFLOW for a `count` whose array
/// exceeds the address space.
///
/// # Safety
/// `rules` must be NULL or readable for `count` pointers, each NULL or a
/// rule from `nnm_region_rule_*` (a freed one is refused unread);
/// `out_rule` must be NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_rule_and(
    rules: *const *const nnm_region_rule,
    count: usize,
    out_rule: *mut *mut nnm_region_rule,
) -> Status {
    // SAFETY: the caller's promises are `operands`' and `make`'s.
    unsafe { make(out_rule, || Ok(Rule::And(operands(rules, count, "AND")?))) }
}

/// Makes the rule "at least one of the `count` rules of `rules` matches"
/// (copies them: the caller still frees each).
///
/// Errors: as `nnm_region_rule_and` ("an OR needs at least one rule (count
/// is 0)").
///
/// # Safety
/// As `nnm_region_rule_and`.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_rule_or(
    rules: *const *const nnm_region_rule,
    count: usize,
    out_rule: *mut *mut nnm_region_rule,
) -> Status {
    // SAFETY: the caller's promises are `operands`' and `make`'s.
    unsafe { make(out_rule, || Ok(Rule::Or(operands(rules, count, "OR")?))) }
}

/// Makes the rule "`rule` does not match" (copies it: the caller still
/// frees it).
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (`rule` is not a live rule, or
/// the result would nest deeper than 100 levels: "rule nests deeper than
/// 100 levels").
///
/// # Safety
/// `rule` must be NULL or a rule from `nnm_region_rule_*` (a freed one is
/// refused unread); `out_rule` must be NULL or valid for writing one
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_rule_not(
    rule: *const nnm_region_rule,
    out_rule: *mut *mut nnm_region_rule,
) -> Status {
    // SAFETY: the caller's promises are `rule_ref`'s and `make`'s.
    unsafe { make(out_rule, || Ok(rule_ref(rule, "rule")?.clone().negate())) }
}

/// Writes the rule as messages and reports show it ("(kind = constant AND
/// tag op = 'fc')"), NUL-terminated, into `buf` (`len` bytes) and the bytes
/// written (NUL included) to `out_len`. With `buf` NULL and `len` 0 it
/// writes only the size needed.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a live rule);
/// BUFFER_TOO_SMALL (nothing is written; "rule text needs 24 B (NUL
/// included), buffer has 8 B").
///
/// # Safety
/// `rule` must be NULL or a rule from `nnm_region_rule_*` (a freed one is
/// refused unread). `buf` must be NULL or valid for writing `len` bytes;
/// `out_len` must be NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_rule_to_string(
    rule: *const nnm_region_rule,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises `rule` is NULL, freed (refused
        // unread) or a live rule, and `buf`/`out_len` as `copy_text` needs.
        unsafe { copy_text(&rule_ref(rule, "rule")?.to_string(), buf, len, out_len, "rule text") }
    })
}

/// Frees a rule. NULL is a no-op; a double free is detected and reported
/// through `nnm_last_error()`. Rules made from it, and configurations it
/// was appended to, keep their own copies.
///
/// # Safety
/// `rule` may be any pointer value: only a live rule is freed, others are
/// reported. No other call may use the rule meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_rule_free(rule: *mut nnm_region_rule) {
    // SAFETY: `free_handle` frees only what the registry holds as a live
    // rule; the caller promises nobody else is using it.
    guard_void(|| unsafe { free_handle(rule) })
}
