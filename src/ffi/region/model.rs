//! C API of region models (`nnm_region_model_*`): a model's tensors as C
//! hands them in, through `nnm_region_tensor_desc`; and the names of
//! `nnm_tensor_kind`.

use std::ffi::c_char;

use crate::ffi::args::{c_name, handle_query, opt_out_param, opt_str, out_param, read_str, slice_in};
use crate::ffi::error::{guard, guard_void};
use crate::ffi::handle::{free_handle, into_handle, value_mut, HandleType};
use crate::names::c_enum;
use crate::plan::Lifetime;
use crate::region::{parse_tags, Model, Tensor, TensorKind, ViewOf, DEFAULT_FUNCTION};
use crate::status::{Error, Result, Status};

/// How `nnm_region_tensor_desc::start` and `end` read (C:
/// `nnm_lifetime_convention`).
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LifetimeConvention {
    /// Live over the whole run: of its function for an activation or a view
    /// (a view: as long as its origin), of every function for a weight.
    /// `start` and `end` are ignored. The only convention weights take.
    WholeRun = 0,
    /// `start` is the first step that uses the tensor and `end` the last,
    /// both included (TensorFlow Lite Micro's convention); -1 and -1: never
    /// used.
    FirstLastUse = 1,
    /// `start` is the position of its allocation and `end` of its free in
    /// the function's instruction sequence: live from `start` up to, not
    /// including, `end` (Glow's alloc and dealloc instructions).
    AllocFree = 2,
}

c_enum! {
    LifetimeConvention, "lifetime convention",
    value_error(value) => format!("unknown lifetime convention {value} (0 to {})", LifetimeConvention::ALL.len() - 1),
    {
        WholeRun = "whole-run",
        FirstLastUse = "first-last-use",
        AllocFree = "alloc-free",
    }
}

/// One tensor for `nnm_region_model_add`, which copies what it needs: the
/// struct and its strings may be reused or freed afterwards. Zero-initialise
/// it (`= {0}`) and fill in what applies.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct nnm_region_tensor_desc {
    /// Its name (required, NUL-terminated, UTF-8): unique in its function;
    /// weights (constants and placeholders) are shared by name across
    /// functions.
    pub name: *const c_char,
    /// What it is: an `nnm_tensor_kind`.
    pub kind: u32,
    /// How `start` and `end` read: an `nnm_lifetime_convention`. Weights
    /// must use NNM_LIFETIME_WHOLE_RUN.
    pub lifetime: u32,
    /// Bytes (not 0).
    pub size: u64,
    /// The alignment the tensor needs: 0 or 1 for only its region's, else a
    /// power of two.
    pub alignment: u64,
    /// First step (per `lifetime`; ignored for NNM_LIFETIME_WHOLE_RUN).
    pub start: i64,
    /// Last step (per `lifetime`; ignored for NNM_LIFETIME_WHOLE_RUN).
    pub end: i64,
    /// Its element type, free-form ("f32", "i8"); NULL or "": unknown.
    pub dtype: *const c_char,
    /// The function it belongs to; NULL: "main".
    pub function: *const c_char,
    /// Free-form tags, "key=value;key=value" (spaces around keys and values
    /// are trimmed); NULL or "": none.
    pub tags: *const c_char,
    /// For NNM_TENSOR_KIND_VIEW only (and required there): the name of its
    /// origin, a tensor of the same function added before, or a weight of
    /// any function. NULL for every other kind.
    pub view_of: *const c_char,
    /// For a view: its byte offset inside the origin (offset + size at most
    /// the origin's size). 0 for every other kind.
    pub view_offset: u64,
}

impl Default for nnm_region_tensor_desc {
    /// Every field NULL or 0 (what a C `= {0}` gives).
    fn default() -> Self {
        nnm_region_tensor_desc {
            name: std::ptr::null(),
            kind: 0,
            lifetime: 0,
            size: 0,
            alignment: 0,
            start: 0,
            end: 0,
            dtype: std::ptr::null(),
            function: std::ptr::null(),
            tags: std::ptr::null(),
            view_of: std::ptr::null(),
            view_offset: 0,
        }
    }
}

/// A model: the tensors of one or more functions, in the order added (a
/// tensor's id is its position, from 0). Not thread-safe: one thread at a
/// time, or external locking; `nnm_region_model_tensor_count` may run
/// concurrently with itself and with `nnm_region_table_build` when no
/// thread adds. A table built from the model does not refer to it: the
/// model may be freed (or changed) while the table lives.
pub struct nnm_region_model {
    pub(crate) model: Model,
}

// SAFETY: no other handle type is named "nnm_region_model".
unsafe impl HandleType for nnm_region_model {
    const NAME: &'static str = "nnm_region_model";
}

/// The name of an `nnm_tensor_kind` value ("constant", "mutable", "input",
/// "output", "input-output", "activation", "view"), or NULL for an unknown
/// value. Static; never freed.
#[no_mangle]
pub extern "C" fn nnm_tensor_kind_name(kind: u32) -> *const c_char {
    c_name::<TensorKind>(kind)
}

/// Writes the `nnm_tensor_kind` value named `name` (as
/// `nnm_tensor_kind_name` gives it) to `out_kind`.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT for an unknown name ("unknown
/// tensor kind 'weights' (known: constant, mutable, ...)").
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string; `out_kind` must be NULL
/// or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_tensor_kind_from_name(name: *const c_char, out_kind: *mut u32) -> Status {
    guard(|| {
        // SAFETY: the caller promises `name` is NULL or NUL-terminated and
        // `out_kind` NULL or writable.
        let (name, out) = unsafe { (read_str(name, "name")?, out_param(out_kind, "out_kind")?) };
        out.write(TensorKind::from_name(name)? as u32);
        Ok(())
    })
}

/// Creates an empty model. Free it with `nnm_region_model_free`.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `out_model` must be NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_model_new(out_model: *mut *mut nnm_region_model) -> Status {
    guard(|| {
        // SAFETY: the caller promises `out_model` is NULL or writable.
        let out = unsafe { out_param(out_model, "out_model") }?;
        out.write(into_handle(nnm_region_model { model: Model::new() }));
        Ok(())
    })
}

/// Frees a model. NULL is a no-op; a double free is detected and reported
/// through `nnm_last_error()`. Tables built from it stay valid.
///
/// # Safety
/// `model` may be any pointer value: only a live model is freed, others are
/// reported. No other call may use the model meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_model_free(model: *mut nnm_region_model) {
    // SAFETY: `free_handle` frees only what the registry holds as a live
    // model; the caller promises nobody else is using it.
    guard_void(|| unsafe { free_handle(model) })
}

/// Adds the tensor `desc` describes and writes its id (the number of
/// tensors added before it) to `out_id` when that is not NULL. Every
/// failure leaves the model as it was.
///
/// Errors:
/// - NULL_ARGUMENT: `model`, `desc` or `desc->name` is NULL.
/// - INVALID_ARGUMENT: an unknown `kind` ("unknown tensor kind 99 (0 to
///   6)") or `lifetime` value; an empty name or function; size 0; an
///   alignment that is not a power of two; a reversed lifetime ("last_use 2
///   is before first_use 5") or, with NNM_LIFETIME_FIRST_LAST_USE, a
///   step below -1 (a first use of -1 is live before the first step; -1,
///   -1 is never used); a weight with a convention other
///   than NNM_LIFETIME_WHOLE_RUN; malformed tags ("tag 'op' is not
///   key=value (in 'op')"), a repeated or empty tag key; a view without
///   `view_of`, `view_of` on another kind, `view_offset` without
///   `view_of`; a view reaching past its origin's end ("view 'v' (view,
///   function main) reaches past the end of its origin 'a': offset 60 +
///   size 8 = 68 B, origin is 64 B"); a weight named like a weight of
///   another function but of another kind or size; a string that is not
///   UTF-8.
/// - NOT_FOUND: a view whose origin is not in the model ("view 'v' (view,
///   function main) names origin 'x', which is not in function main (nor a
///   weight); add the origin first").
/// - ALREADY_EXISTS: the name is already used in its function.
/// - OVERFLOW: `view_offset` + `size`, or `end` + 1 with
///   NNM_LIFETIME_FIRST_LAST_USE, overflows.
///
/// # Safety
/// `model` must be NULL or a model from `nnm_region_model_new` (a freed one
/// is refused without being read), used by no other call meanwhile. `desc`
/// must be NULL or point to a readable `nnm_region_tensor_desc` whose
/// strings are NULL or NUL-terminated. `out_id` must be NULL or valid for
/// writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_model_add(
    model: *mut nnm_region_model,
    desc: *const nnm_region_tensor_desc,
    out_id: *mut usize,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises `model` is NULL, freed (refused
        // unread) or a model nobody else uses, `desc` NULL or readable, and
        // `out_id` NULL or writable.
        let (m, desc, out) =
            unsafe { (value_mut(model, "model")?, &slice_in(desc, 1, "desc")?[0], opt_out_param(out_id, "out_id")?) };
        // SAFETY: the caller promises the strings of `desc` are NULL or
        // NUL-terminated.
        let tensor = unsafe { tensor_of(desc) }?;
        let id = m.model.add(tensor)?;
        if let Some(out) = out {
            out.write(id);
        }
        Ok(())
    })
}

/// The core tensor `desc` describes (the model checks the rest).
///
/// # Safety
/// The strings of `desc` must be NULL or NUL-terminated.
unsafe fn tensor_of(desc: &nnm_region_tensor_desc) -> Result<Tensor> {
    // SAFETY: the caller promises each string is NULL or NUL-terminated.
    let (name, dtype, function, tags, view_of) = unsafe {
        (
            read_str(desc.name, "desc->name")?,
            opt_str(desc.dtype, "desc->dtype")?,
            opt_str(desc.function, "desc->function")?,
            opt_str(desc.tags, "desc->tags")?,
            opt_str(desc.view_of, "desc->view_of")?,
        )
    };
    let kind = TensorKind::from_value(desc.kind).map_err(|e| in_tensor(name, e))?;
    let convention = LifetimeConvention::from_value(desc.lifetime).map_err(|e| in_tensor(name, e))?;
    if kind.is_weight() && convention != LifetimeConvention::WholeRun {
        return Err(Error::invalid(format!(
            "tensor '{name}' is a weight ({}): its lifetime must be NNM_LIFETIME_WHOLE_RUN (weights live for the \
             whole run), not {}",
            kind.name(),
            convention.name()
        )));
    }
    let lifetime = match convention {
        LifetimeConvention::WholeRun => None,
        LifetimeConvention::FirstLastUse => Some(Lifetime::inclusive(desc.start, desc.end)),
        LifetimeConvention::AllocFree => Some(Lifetime::half_open(desc.start, desc.end)),
    }
    .transpose()
    .map_err(|e| in_tensor(name, e))?;
    let view = match view_of {
        Some(origin) => Some(ViewOf { origin: origin.to_string(), offset: desc.view_offset }),
        None if desc.view_offset != 0 => {
            return Err(Error::invalid(format!(
                "tensor '{name}': view_offset is {} but view_of is NULL (only a view has an offset in an origin)",
                desc.view_offset
            )))
        }
        None => None,
    };
    Ok(Tensor {
        name: name.into(),
        kind,
        size: desc.size,
        alignment: desc.alignment.max(1),
        lifetime,
        dtype: dtype.unwrap_or("").to_string(),
        function: function.unwrap_or(DEFAULT_FUNCTION).into(),
        tags: parse_tags(tags.unwrap_or("")).map_err(|e| in_tensor(name, e))?,
        view,
    })
}

/// `e` with the tensor's name in front.
fn in_tensor(name: &str, e: Error) -> Error {
    Error::new(e.status(), format!("tensor '{name}': {}", e.message()))
}

/// Writes the number of tensors added.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `model` must be NULL or a model from `nnm_region_model_new` (a freed one
/// is refused without being read), changed by no call meanwhile. `out_count`
/// must be NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_model_tensor_count(
    model: *const nnm_region_model,
    out_count: *mut usize,
) -> Status {
    // SAFETY: the caller's promises are `handle_query`'s.
    unsafe { handle_query(model, "model", out_count, "out_count", |m| Ok(m.model.len())) }
}
