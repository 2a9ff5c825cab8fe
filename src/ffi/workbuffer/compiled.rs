//! `nnm_exec_compile` and `nnm_exec_compiled_*`: a model built into its
//! constants and immutable-workbuffer blobs and its planned mutable block,
//! its figures, report and picture, and `nnm_exec_resolve`, which turns an
//! operator and a leased block into pointers.

use std::ffi::{c_char, c_int, c_void};

use super::model::nnm_exec_model;
use super::pool::{lease_of, nnm_exec_block};
use crate::arena::ReportFormat;
use crate::ffi::args::{handle_query, out_param, slice_in, slice_out};
use crate::ffi::device::{allocator_or_host, nnm_device_allocator};
use crate::ffi::error::{guard, guard_void};
use crate::ffi::handle::{free_handle, into_handle, value_ref, HandleType};
use crate::ffi::text::copy_text;
use crate::plan::{Algorithm, DEFAULT_WORK_LIMIT};
use crate::pool::DevicePtr;
use crate::status::{Error, Result, Status};
use crate::workbuffer::layout::{Area, LayoutOptions, Place, DEFAULT_EXEC_ALIGNMENT};
use crate::workbuffer::CompiledModel;

/// An operator's immutable-workbuffer initialiser, called once per
/// operator that has immutable workbuffers, in operator order, during
/// `nnm_exec_compile`: `op` is the operator's index, `buffers` its `count`
/// immutable workbuffers (in request order, as `void *` into the immutable
/// blob, valid only during the call to be read, for the life of the
/// compiled model to be written). Return 0 on success; anything else fails
/// the compile with NNM_CALLBACK_FAILED ("operator 3 'conv': its
/// workbuffer initialiser returned -5"), everything freed. The function
/// must return: a longjmp out of it is undefined behaviour.
pub type nnm_exec_init_fn =
    Option<unsafe extern "C" fn(ctx: *mut c_void, op: usize, buffers: *const *mut c_void, count: usize) -> c_int>;

/// How `nnm_exec_compile` lays a model out. All zeros: the defaults.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct nnm_exec_options {
    /// The planner's algorithm for the mutable block (an `nnm_algorithm`;
    /// 0 = auto).
    pub algorithm: u32,
    /// Alignment of every offset and blob size, a power of two (0: 256).
    pub alignment: u64,
    /// The planner's work budget (0: the planner's default).
    pub work_limit: u64,
}

/// Which memory a buffer lives in (`nnm_exec_place.area`).
// repr(C), not repr(u32): cbindgen gives a sized repr a `typedef uint32_t`
// that clashes with the enum tag in C++ (-Wc++-compat); the struct field
// carrying it is a uint32_t.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum nnm_exec_area {
    /// The constants blob, shared by every request.
    Constants = 0,
    /// The immutable-workbuffer blob, shared by every request.
    Immutable = 1,
    /// A request's mutable block (an `nnm_exec_block`).
    Mutable = 2,
    /// No memory of nnmem's: a dynamic buffer (declared with size 0, or an
    /// alias or concat part of one), which the runtime allocates for each
    /// request once its size is known, as OpenVINO's plugin does for
    /// dynamic shapes. Its place's offset is from the start of the dynamic
    /// buffer holding it (0 for that buffer itself, a part's offset inside
    /// it, through chained concats) and its size the declared one (0 for
    /// that buffer itself); `nnm_exec_resolve` gives NULL for it.
    Dynamic = 3,
}

/// A compiled model's figures (bytes).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct nnm_exec_info {
    /// Bytes of the constants blob.
    pub constants_bytes: u64,
    /// Bytes of the immutable-workbuffer blob.
    pub immutable_bytes: u64,
    /// Bytes of the mutable block's plan (its peak).
    pub mutable_bytes: u64,
    /// The planner's lower bound for the mutable block.
    pub mutable_lower_bound: u64,
    /// Bytes of one pool block: the mutable bytes, at least the alignment.
    pub block_bytes: u64,
    /// The `nnm_algorithm` that planned the mutable block.
    pub algorithm: u32,
    /// 1 when no mutable block can be smaller.
    pub proven_optimal: u8,
    /// Operators of the model.
    pub operator_count: usize,
    /// Buffers of the model (constants, outputs, concat parents).
    pub buffer_count: usize,
}

/// How many pointers `nnm_exec_resolve` gives for an operator, by kind.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct nnm_exec_op_shape {
    /// Inputs (first in the resolved array).
    pub input_count: usize,
    /// Outputs (next).
    pub output_count: usize,
    /// Immutable workbuffers (next).
    pub immutable_count: usize,
    /// Mutable workbuffers (last).
    pub mutable_count: usize,
}

/// Where a buffer or workbuffer lives: its area (an `nnm_exec_area`),
/// offset and size.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct nnm_exec_place {
    /// NNM_EXEC_AREA_CONSTANTS, NNM_EXEC_AREA_IMMUTABLE,
    /// NNM_EXEC_AREA_MUTABLE or NNM_EXEC_AREA_DYNAMIC.
    pub area: u32,
    /// Its offset in that area.
    pub offset: u64,
    /// Its size in bytes.
    pub size: u64,
}

impl From<Place> for nnm_exec_place {
    fn from(p: Place) -> Self {
        let area = match p.area {
            Area::Constants => nnm_exec_area::Constants,
            Area::Immutable => nnm_exec_area::Immutable,
            Area::Mutable => nnm_exec_area::Mutable,
            Area::Dynamic => nnm_exec_area::Dynamic,
        };
        nnm_exec_place { area: area as u32, offset: p.offset, size: p.size }
    }
}

/// A compiled model: its blobs (allocated, constants copied in, immutable
/// workbuffers initialised) and its layout.
///
/// Immutable: any number of threads may call `nnm_exec_compiled_*` and
/// `nnm_exec_resolve` on one at once; only its free must not overlap other
/// calls on it. Pools made from it keep working after it is freed (they
/// own their blocks; the blobs go when the compiled model goes). Every call
/// looks the handle up in the registry first.
pub struct nnm_exec_compiled {
    pub(crate) compiled: CompiledModel,
}

// SAFETY: no other handle type is named "nnm_exec_compiled".
unsafe impl HandleType for nnm_exec_compiled {
    const NAME: &'static str = "nnm_exec_compiled";
}

/// The compiled model behind a handle (NULL, registry, tag checked).
///
/// # Safety
/// `compiled` must be NULL, freed, or a live handle not being freed.
#[inline]
pub(crate) unsafe fn compiled_ref<'a>(compiled: *const nnm_exec_compiled) -> Result<&'a CompiledModel> {
    // SAFETY: the caller's promise is `value_ref`'s; the model is immutable.
    Ok(&unsafe { value_ref(compiled, "compiled") }?.compiled)
}

/// The core's layout options from C options (NULL: defaults).
fn layout_options(o: Option<&nnm_exec_options>) -> Result<LayoutOptions> {
    let o = o.copied().unwrap_or_default();
    Ok(LayoutOptions {
        algorithm: Algorithm::from_value(o.algorithm)?,
        alignment: if o.alignment == 0 { DEFAULT_EXEC_ALIGNMENT } else { o.alignment },
        work_limit: if o.work_limit == 0 { DEFAULT_WORK_LIMIT } else { o.work_limit },
    })
}

/// Compiles `model` (which stays the caller's and may be freed after):
/// lays it out under `options` (NULL: defaults), allocates the constants
/// and immutable-workbuffer blobs from `allocator` (NULL: host; a blob of
/// 0 bytes is not allocated), copies the constants' bytes in (zero-fills
/// constants without bytes on a host-accessible device), calls `init` once
/// per operator with immutable workbuffers, and writes the handle.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (unknown algorithm, alignment
/// not a power of two, `init` NULL while an operator has immutable
/// workbuffers, naming the first one, checked before anything is
/// allocated; constant bytes for an allocator that is not host-accessible);
/// OUT_OF_MEMORY (a blob); CALLBACK_FAILED (`init` returned nonzero: the
/// message names the operator and the value); OVERFLOW. On error nothing
/// stays allocated and `init`'s writes are lost with the blob.
///
/// # Safety
/// `model` must be NULL, freed, or a live model no call changes meanwhile;
/// `options` NULL or readable; `allocator` NULL or an allocator handle;
/// `init` NULL or a function that may be called with `ctx` as described
/// at `nnm_exec_init_fn`; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_compile(
    model: *const nnm_exec_model,
    options: *const nnm_exec_options,
    allocator: *const nnm_device_allocator,
    init: nnm_exec_init_fn,
    ctx: *mut c_void,
    out: *mut *mut nnm_exec_compiled,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises every pointer is NULL or valid.
        let (m, options, allocator, out) = unsafe {
            let options = if options.is_null() { None } else { Some(&slice_in(options, 1, "options")?[0]) };
            (
                &value_ref(model, "model")?.model,
                layout_options(options)?,
                allocator_or_host(allocator, "allocator")?,
                out_param(out, "out")?,
            )
        };
        let needs_init = m.operators().iter().enumerate().find(|(_, op)| !op.request.immutable.is_empty());
        if let (None, Some((i, op))) = (init, needs_init) {
            return Err(Error::invalid(format!(
                "init is NULL, but operator {i} '{}' has {} immutable workbuffer(s) to initialise",
                op.name,
                op.request.immutable.len()
            )));
        }
        let mut pointers: Vec<*mut c_void> = Vec::new();
        let mut call = |op: usize, buffers: &[DevicePtr]| -> Result<()> {
            let Some(f) = init else { return Ok(()) };
            pointers.clear();
            pointers.extend(buffers.iter().map(|p| p.as_ptr().cast::<c_void>()));
            // SAFETY: the caller promises `init` may be called with `ctx`;
            // the array holds `count` pointers and lives across the call.
            let value = unsafe { f(ctx, op, pointers.as_ptr(), pointers.len()) };
            if value != 0 {
                let name = &m.operators()[op].name;
                return Err(Error::new(
                    Status::CallbackFailed,
                    format!("operator {op} '{name}': its workbuffer initialiser returned {value}"),
                ));
            }
            Ok(())
        };
        let compiled = CompiledModel::build(m, &options, allocator, &mut call)?;
        out.write(into_handle(nnm_exec_compiled { compiled }));
        Ok(())
    })
}

/// Frees a compiled model and its blobs. Pools made from it keep their
/// blocks and keep working. NULL is a no-op; a double free is detected and
/// reported through `nnm_last_error()`.
///
/// # Safety
/// `compiled` may be any pointer value: only a live handle is freed. No
/// other call may use it meanwhile; no kernel may still use its blobs.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_compiled_free(compiled: *mut nnm_exec_compiled) {
    // SAFETY: `free_handle` frees only what the registry holds as a live
    // compiled model; the caller promises no other call uses it.
    guard_void(|| unsafe { free_handle(compiled) })
}

/// Writes the compiled model's figures.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (not a live handle).
///
/// # Safety
/// `compiled` must be NULL, freed, or a live handle not being freed; `out`
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_compiled_info(compiled: *const nnm_exec_compiled, out: *mut nnm_exec_info) -> Status {
    let info = |h: &nnm_exec_compiled| {
        let c = &h.compiled;
        let l = c.layout();
        Ok(nnm_exec_info {
            constants_bytes: l.constants_size,
            immutable_bytes: l.immutable_size,
            mutable_bytes: l.mutable_size,
            mutable_lower_bound: l.mutable_lower_bound,
            block_bytes: c.block_size(),
            algorithm: l.algorithm as u32,
            proven_optimal: u8::from(l.proven_optimal),
            operator_count: c.operator_count(),
            buffer_count: c.model().buffers().len(),
        })
    };
    // SAFETY: the caller's promises are `handle_query`'s.
    unsafe { handle_query(compiled, "compiled", out, "out", info) }
}

fn op_out_of_range(c: &CompiledModel, op: usize) -> Error {
    Error::invalid(format!("operator {op} does not exist: the model has {} operators", c.operator_count()))
}

/// Writes how many inputs, outputs, immutable and mutable workbuffers
/// operator `op` has (what `nnm_exec_resolve` returns, in that order).
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (not a live handle, `op` past
/// the last operator).
///
/// # Safety
/// As `nnm_exec_compiled_info`.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_compiled_op_shape(
    compiled: *const nnm_exec_compiled,
    op: usize,
    out: *mut nnm_exec_op_shape,
) -> Status {
    let shape = |h: &nnm_exec_compiled| {
        let s = h.compiled.op_shape(op).ok_or_else(|| op_out_of_range(&h.compiled, op))?;
        Ok(nnm_exec_op_shape {
            input_count: s.inputs,
            output_count: s.outputs,
            immutable_count: s.immutable,
            mutable_count: s.mutable,
        })
    };
    // SAFETY: the caller's promises are `handle_query`'s.
    unsafe { handle_query(compiled, "compiled", out, "out", shape) }
}

fn unknown_id(id: u64) -> Error {
    Error::new(Status::NotFound, format!("buffer {id} is not in the model"))
}

/// Writes where `id` lives, without a block: a constant (constants blob),
/// an output or concat parent (the mutable block), an alias or a concat
/// part at its place inside what holds it, an immutable workbuffer
/// (immutable blob) or a mutable one (the mutable block) given an id at
/// `nnm_exec_model_add_operator`, and a dynamic buffer as
/// NNM_EXEC_AREA_DYNAMIC (see there). A pointer is the area's base (the
/// blob's, or the request's block's) plus the offset.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (not a live handle), NOT_FOUND
/// (an unknown id).
///
/// # Safety
/// As `nnm_exec_compiled_info`.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_compiled_place(
    compiled: *const nnm_exec_compiled,
    id: u64,
    out: *mut nnm_exec_place,
) -> Status {
    let place = |h: &nnm_exec_compiled| Ok(h.compiled.place(id).ok_or_else(|| unknown_id(id))?.into());
    // SAFETY: the caller's promises are `handle_query`'s.
    unsafe { handle_query(compiled, "compiled", out, "out", place) }
}

/// Writes operator `op`'s places, without a block, into `places`: its
/// inputs, outputs, immutable and mutable workbuffers, each list in
/// declared order (the order and count of `nnm_exec_resolve`, whose
/// pointers are the areas' bases plus these offsets, NULL for
/// NNM_EXEC_AREA_DYNAMIC), and their number to `out_count`. Workbuffers are found here by position, with or without
/// ids. `places` NULL with `capacity` 0 is a size query (NNM_OK, only
/// `out_count` written).
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a live handle, `op` past
/// the last operator); BUFFER_TOO_SMALL (`capacity` below the count,
/// naming both); OVERFLOW (`capacity` places past the address space);
/// nothing is written then.
///
/// # Safety
/// `compiled` as for `nnm_exec_compiled_info`; `places` NULL or writable
/// for `capacity` places; `out_count` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_compiled_op_places(
    compiled: *const nnm_exec_compiled,
    op: usize,
    places: *mut nnm_exec_place,
    capacity: usize,
    out_count: *mut usize,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises `compiled` and `out_count` are NULL or
        // valid.
        let (c, out) = unsafe { (compiled_ref(compiled)?, out_param(out_count, "out_count")?) };
        let own = c.op_places(op).ok_or_else(|| op_out_of_range(c, op))?;
        if places.is_null() && capacity == 0 {
            out.write(own.len());
            return Ok(());
        }
        // SAFETY: the caller promises `places` is writable for `capacity`.
        let dst = unsafe { slice_out(places, capacity, "places") }?;
        if capacity < own.len() {
            return Err(Error::new(
                Status::BufferTooSmall,
                format!("operator {op} has {} places; places has room for {capacity}", own.len()),
            ));
        }
        for (d, &p) in dst.iter_mut().zip(own) {
            *d = p.into();
        }
        out.write(own.len());
        Ok(())
    })
}

/// Writes the address of constant `id` in the constants blob (to write its
/// bytes on a device that is not host-accessible, before the first run).
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (not a live handle, `id` not a
/// constant), NOT_FOUND (an unknown id).
///
/// # Safety
/// As `nnm_exec_compiled_info`; `out_ptr` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_compiled_constant(
    compiled: *const nnm_exec_compiled,
    id: u64,
    out_ptr: *mut *mut c_void,
) -> Status {
    let address = |h: &nnm_exec_compiled| Ok(h.compiled.constant_ptr(id)?.as_ptr().cast::<c_void>());
    // SAFETY: the caller's promises are `handle_query`'s.
    unsafe { handle_query(compiled, "compiled", out_ptr, "out_ptr", address) }
}

/// Copies the text `make` writes about the compiled model into `buf`, by
/// the text conventions (`what` names it in messages).
///
/// # Safety
/// `compiled` must be NULL, freed, or a live handle not being freed; `buf`
/// NULL or writable for `len` bytes; `out_len` NULL or writable.
unsafe fn copy_out(
    compiled: *const nnm_exec_compiled,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
    what: &str,
    make: impl FnOnce(&CompiledModel) -> Result<String>,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises `compiled` is NULL or a live handle.
        let text = make(unsafe { compiled_ref(compiled) }?)?;
        // SAFETY: the caller promises `buf` and `out_len` are valid.
        unsafe { copy_text(&text, buf, len, out_len, what) }
    })
}

/// Copies the compiled model's report (`format`: an `nnm_report_format`,
/// text or JSON; every buffer's area, offset, size and life, every
/// operator's workbuffers with their offsets, sizes and ids where given)
/// into `buf`, by the text conventions (NULL `buf`
/// and `len` 0: size query).
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (not a live handle, unknown
/// format), BUFFER_TOO_SMALL (naming both sizes).
///
/// # Safety
/// `compiled` as for `nnm_exec_compiled_info`; `buf` NULL or writable for
/// `len` bytes; `out_len` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_compiled_report(
    compiled: *const nnm_exec_compiled,
    format: u32,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> Status {
    // SAFETY: the caller's promises are `copy_out`'s.
    unsafe { copy_out(compiled, buf, len, out_len, "the report", |c| Ok(c.report(ReportFormat::from_value(format)?))) }
}

/// Copies the mutable block's plan as an SVG picture into `buf`, by the
/// text conventions (NULL `buf` and `len` 0: size query).
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (not a live handle),
/// BUFFER_TOO_SMALL.
///
/// # Safety
/// As `nnm_exec_compiled_report`.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_compiled_svg(
    compiled: *const nnm_exec_compiled,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> Status {
    // SAFETY: the caller's promises are `copy_out`'s.
    unsafe { copy_out(compiled, buf, len, out_len, "the SVG", |c| Ok(c.svg())) }
}

/// Writes operator `op`'s pointers for the request holding `block` into
/// `pointers`: its inputs, outputs, immutable and mutable workbuffers,
/// each list in declared order (constants point into the constants blob,
/// immutable workbuffers into the immutable blob, dynamic buffers are NULL
/// (the runtime's own memory, see NNM_EXEC_AREA_DYNAMIC), everything else
/// points into the block), and their number to `out_count`. `pointers`
/// NULL with `capacity` 0 is a size query (NNM_OK, only `out_count`
/// written; the block is still required and checked). The block is checked for its
/// size only, not against a pool: a block already released resolves to
/// memory another request may hold. Thread-safe.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a live handle, `op` past
/// the last operator, a block smaller than the model's mutable bytes or
/// reaching past the end of the address space);
/// BUFFER_TOO_SMALL (`capacity` below the count, naming both); OVERFLOW
/// (`capacity` pointers past the address space); nothing is written then.
///
/// # Safety
/// `compiled` as for `nnm_exec_compiled_info`; `block` NULL or readable;
/// `pointers` NULL or writable for `capacity` pointers; `out_count` NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_resolve(
    compiled: *const nnm_exec_compiled,
    op: usize,
    block: *const nnm_exec_block,
    pointers: *mut *mut c_void,
    capacity: usize,
    out_count: *mut usize,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises every pointer is NULL or valid.
        let (c, block, out) =
            unsafe { (compiled_ref(compiled)?, &slice_in(block, 1, "block")?[0], out_param(out_count, "out_count")?) };
        let total = c.op_shape(op).ok_or_else(|| op_out_of_range(c, op))?.total();
        let lease = lease_of(block)?;
        let resolved = c.resolve(op, &lease)?;
        if pointers.is_null() && capacity == 0 {
            out.write(total);
            return Ok(());
        }
        // SAFETY: the caller promises `pointers` is writable for `capacity`.
        let dst = unsafe { slice_out(pointers, capacity, "pointers") }?;
        if capacity < total {
            return Err(Error::new(
                Status::BufferTooSmall,
                format!("operator {op} has {total} pointers; pointers has room for {capacity}"),
            ));
        }
        for (d, p) in dst.iter_mut().zip(resolved) {
            *d = p.map_or(std::ptr::null_mut(), |p| p.as_ptr().cast());
        }
        out.write(total);
        Ok(())
    })
}
