//! `nnm_exec_model_*`: the network as the runtime describes it, operator by
//! operator, checked as it is built (`crate::workbuffer::ModelBuilder`).

use std::ffi::{c_char, c_void};

use crate::ffi::args::{handle_query, handle_update, opt_out_param, opt_str, out_param, slice_in};
use crate::ffi::error::{guard, guard_void};
use crate::ffi::handle::{free_handle, into_handle, value_mut, HandleType};
use crate::status::{Error, Result, Status};
use crate::workbuffer::{BufferId, InputSpec, ModelBuilder, OperatorSpec, OutputSpec, WorkbufferRequest};

/// `nnm_exec_output.alias_of` of an output that is a new buffer. Ids are
/// any `uint64_t` but this one: declaring it (a constant, an output, a
/// concat parent) fails with NNM_INVALID_ARGUMENT.
pub const NNM_EXEC_NO_ALIAS: u64 = u64::MAX;

/// An operator's input: the buffer's id and the bytes the operator reads
/// (which must be the buffer's size).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct nnm_exec_tensor {
    /// The buffer read: a constant, an earlier output or a concat parent.
    pub id: u64,
    /// The bytes read: the buffer's size.
    pub size: u64,
}

/// An operator's output: a new buffer of `size` bytes, or (reshape-like)
/// the buffer of one of the operator's inputs under a new id.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct nnm_exec_output {
    /// Its id (not NNM_EXEC_NO_ALIAS, not taken).
    pub id: u64,
    /// Its size in bytes; 0: dynamic (OpenVINO's dynamic shapes: no
    /// memory of nnmem's, see NNM_EXEC_AREA_DYNAMIC). An alias is at most
    /// what it aliases (so 0 for an alias of a size-0 buffer), and 0 only
    /// when what it aliases is dynamic.
    pub size: u64,
    /// NNM_EXEC_NO_ALIAS for a new buffer, else the id of the input whose
    /// buffer it is.
    pub alias_of: u64,
}

impl Default for nnm_exec_output {
    fn default() -> Self {
        nnm_exec_output { id: 0, size: 0, alias_of: NNM_EXEC_NO_ALIAS }
    }
}

/// One operator, as `nnm_exec_model_add_operator` takes it. Every array
/// may be NULL when its count is 0.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct nnm_exec_operator_desc {
    /// Its name, for reports and errors (NULL: ""); copied.
    pub name: *const c_char,
    /// What it reads, in order.
    pub inputs: *const nnm_exec_tensor,
    /// Entries of `inputs`.
    pub input_count: usize,
    /// What it writes, in order.
    pub outputs: *const nnm_exec_output,
    /// Entries of `outputs`.
    pub output_count: usize,
    /// Byte sizes of its immutable workbuffers (whole-network life,
    /// initialised once by `nnm_exec_compile`'s callback), in order.
    pub immutable_sizes: *const u64,
    /// Entries of `immutable_sizes`.
    pub immutable_count: usize,
    /// Byte sizes of its mutable workbuffers (alive during its step only).
    pub mutable_sizes: *const u64,
    /// Entries of `mutable_sizes`.
    pub mutable_count: usize,
    /// NULL, or `immutable_count` ids for its immutable workbuffers, in
    /// the id space of buffers (new ids, not NNM_EXEC_NO_ALIAS), so that
    /// `nnm_exec_compiled_place` finds them. Last in the struct: code that
    /// zeroes the struct before filling it gives no ids.
    pub immutable_ids: *const u64,
    /// NULL, or `mutable_count` ids for its mutable workbuffers, as
    /// `immutable_ids`.
    pub mutable_ids: *const u64,
}

impl Default for nnm_exec_operator_desc {
    fn default() -> Self {
        nnm_exec_operator_desc {
            name: std::ptr::null(),
            inputs: std::ptr::null(),
            input_count: 0,
            outputs: std::ptr::null(),
            output_count: 0,
            immutable_sizes: std::ptr::null(),
            immutable_count: 0,
            mutable_sizes: std::ptr::null(),
            mutable_count: 0,
            immutable_ids: std::ptr::null(),
            mutable_ids: std::ptr::null(),
        }
    }
}

/// A network being described: operators in execution order, constants,
/// aliases, concat parents, workbuffer requests and pinned buffers.
///
/// Not thread-safe: one thread at a time (functions taking a const pointer
/// may run concurrently with each other while nothing changes the model).
/// Every call looks the handle up in the registry first (a freed one gives
/// NNM_INVALID_ARGUMENT). A failing call leaves the model as it was.
pub struct nnm_exec_model {
    pub(crate) model: ModelBuilder,
}

// SAFETY: no other handle type is named "nnm_exec_model".
unsafe impl HandleType for nnm_exec_model {
    const NAME: &'static str = "nnm_exec_model";
}

/// Refuses NNM_EXEC_NO_ALIAS as a declared id.
pub(crate) fn declared_id(id: u64, what: &str) -> Result<BufferId> {
    if id == NNM_EXEC_NO_ALIAS {
        return Err(Error::invalid(format!(
            "{what} id {id} is NNM_EXEC_NO_ALIAS (UINT64_MAX), which no buffer can have"
        )));
    }
    Ok(id)
}

/// Workbuffer ids from `ids` (NULL: none) for `count` workbuffers.
///
/// # Safety
/// `ids` must be NULL or readable for `count` values.
unsafe fn workbuffer_ids(ids: *const u64, count: usize, what: &str) -> Result<Vec<BufferId>> {
    if ids.is_null() {
        return Ok(Vec::new());
    }
    // SAFETY: the caller promises `ids` is readable for `count` values.
    let ids = unsafe { slice_in(ids, count, what) }?;
    ids.iter().map(|&id| declared_id(id, what)).collect()
}

/// The core's operator from a C description.
///
/// # Safety
/// Every array of `d` must be NULL with count 0 or readable for its count
/// (the id arrays NULL or readable for their workbuffers' counts); `name`
/// NULL or NUL-terminated.
unsafe fn operator_spec(d: &nnm_exec_operator_desc, index: usize) -> Result<OperatorSpec> {
    // SAFETY: the caller promises the arrays and the name are valid.
    let (name, inputs, outputs, immutable, mutable, immutable_ids, mutable_ids) = unsafe {
        (
            opt_str(d.name, "desc->name")?,
            slice_in(d.inputs, d.input_count, "desc->inputs")?,
            slice_in(d.outputs, d.output_count, "desc->outputs")?,
            slice_in(d.immutable_sizes, d.immutable_count, "desc->immutable_sizes")?,
            slice_in(d.mutable_sizes, d.mutable_count, "desc->mutable_sizes")?,
            workbuffer_ids(d.immutable_ids, d.immutable_count, "desc->immutable_ids")?,
            workbuffer_ids(d.mutable_ids, d.mutable_count, "desc->mutable_ids")?,
        )
    };
    let outputs = outputs
        .iter()
        .enumerate()
        .map(|(k, o)| {
            let id = declared_id(o.id, &format!("operator {index} '{}': output {k}", name.unwrap_or("")))?;
            Ok(match o.alias_of {
                NNM_EXEC_NO_ALIAS => OutputSpec::new(id, o.size),
                of => OutputSpec::alias(id, o.size, of),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(OperatorSpec {
        name: name.unwrap_or("").to_owned(),
        inputs: inputs.iter().map(|t| InputSpec::new(t.id, t.size)).collect(),
        outputs,
        request: WorkbufferRequest {
            immutable: immutable.to_vec(),
            mutable: mutable.to_vec(),
            immutable_ids,
            mutable_ids,
        },
    })
}

/// Creates an empty model. Free it with `nnm_exec_model_free` (a compiled
/// model does not need it any more).
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `out` must be NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_model_new(out: *mut *mut nnm_exec_model) -> Status {
    guard(|| {
        // SAFETY: the caller promises `out` is NULL or writable.
        let out = unsafe { out_param(out, "out") }?;
        out.write(into_handle(nnm_exec_model { model: ModelBuilder::new() }));
        Ok(())
    })
}

/// Frees a model. NULL is a no-op; a double free is detected and reported
/// through `nnm_last_error()`. Models compiled from it are independent of
/// it.
///
/// # Safety
/// `model` may be any pointer value: only a live model is freed. No other
/// call may use it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_model_free(model: *mut nnm_exec_model) {
    // SAFETY: `free_handle` frees only what the registry holds as a live
    // model; the caller promises no other call uses it.
    guard_void(|| unsafe { free_handle(model) })
}

/// Adds a constant of `size` bytes with id `id`. `bytes` NULL: no bytes
/// (zero-filled at compile time on a host-accessible device, left for the
/// runtime to write otherwise, see `nnm_exec_compiled_constant`); else
/// `size` bytes, copied now.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (size 0: a constant cannot be
/// dynamic; id UINT64_MAX), ALREADY_EXISTS (the id is taken by a buffer or
/// a workbuffer), OVERFLOW (size past the address space with bytes).
/// Nothing changes on error.
///
/// # Safety
/// `model` must be NULL, freed, or a live model no other call uses
/// meanwhile; `bytes` NULL or readable for `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_model_add_constant(
    model: *mut nnm_exec_model,
    id: u64,
    size: u64,
    bytes: *const c_void,
) -> Status {
    let add = |m: &mut nnm_exec_model| {
        let id = declared_id(id, "constant")?;
        let bytes = if bytes.is_null() {
            None
        } else {
            let len = usize::try_from(size)
                .map_err(|_| Error::overflow(format!("constant {id}: {size} B of bytes exceed size_t")))?;
            // SAFETY: the caller promises `bytes` is readable for `size` bytes.
            Some(unsafe { slice_in(bytes.cast::<u8>(), len, "bytes") }?.to_vec())
        };
        m.model.add_constant(id, size, bytes)
    };
    // SAFETY: the caller's promise is `value_mut`'s.
    unsafe { handle_update(model, "model", add) }
}

/// Adds the next operator (execution order) and writes its index (from 0)
/// to `out_index` (may be NULL). Its inputs must be existing buffers read
/// at their full size (a dynamic buffer, see `nnm_exec_output.size`, at
/// any size); its outputs are new ids (size 0: dynamic), or aliases of its
/// inputs (`alias_of`); workbuffer sizes are > 0 (a workbuffer cannot be
/// dynamic). Its workbuffers get the ids in `desc->immutable_ids` and
/// `desc->mutable_ids` when given (new ids, distinct from its outputs and
/// one another): `nnm_exec_compiled_place` gives their places.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (a workbuffer of size 0, an
/// input read at another size than its static buffer's, an input that is a
/// workbuffer, an alias of something that is not an input, smaller than
/// the alias, or not dynamic while the alias has size 0, an alias of a
/// constant, an output or workbuffer id UINT64_MAX); NOT_FOUND (an input
/// that is not a buffer yet); ALREADY_EXISTS (an output or workbuffer id
/// taken, or given twice in the operator); OVERFLOW (an array count past
/// the address space). The message names the operator (index and name) and
/// the figures. Nothing changes on error.
///
/// # Safety
/// `model` must be NULL, freed, or a live model no other call uses
/// meanwhile; `desc` NULL or readable, with its arrays NULL (count 0) or
/// readable for their counts (the id arrays NULL or readable for their
/// workbuffers' counts) and `name` NULL or NUL-terminated; `out_index`
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_model_add_operator(
    model: *mut nnm_exec_model,
    desc: *const nnm_exec_operator_desc,
    out_index: *mut usize,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises the pointers are NULL or valid, and
        // the description's arrays too.
        let (m, op, out) = unsafe {
            let m = value_mut(model, "model")?;
            let desc = &slice_in(desc, 1, "desc")?[0];
            let index = m.model.operators().len();
            (m, operator_spec(desc, index)?, opt_out_param(out_index, "out_index")?)
        };
        let index = m.model.add_operator(op)?;
        if let Some(out) = out {
            out.write(index);
        }
        Ok(())
    })
}

/// Declares `parent_id` (`size` bytes; 0: dynamic) as one buffer holding
/// `count` earlier buffers, `part_ids[k]` at byte `offsets[k]` (an
/// optimised concat: their producers write straight into the parent).
/// Parts are operator outputs (not aliases, not constants) or other concat
/// parents (OpenVINO's chained concats: a part's place is its parent's
/// plus its offset, through every level), each in at most one parent, not
/// overlapping one another. In a parent of fixed size, parts have fixed
/// sizes and end inside it; a dynamic parent takes any parts at any
/// offsets, and they are dynamic with it.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (no parts, a part that is not
/// an output or concat parent (a workbuffer included), already in a
/// parent, overlapping another, ending past 2^64, or, in a parent of fixed
/// size, dynamic or past its end; parent id UINT64_MAX); NOT_FOUND (an
/// unknown part); ALREADY_EXISTS (the parent id is taken); OVERFLOW (an
/// array count past the address space). Nothing changes on error.
///
/// # Safety
/// `model` must be NULL, freed, or a live model no other call uses
/// meanwhile; `part_ids` and `offsets` NULL (count 0) or readable for
/// `count` values each.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_model_add_concat(
    model: *mut nnm_exec_model,
    parent_id: u64,
    size: u64,
    part_ids: *const u64,
    offsets: *const u64,
    count: usize,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises the pointers are NULL or valid.
        let (m, ids, offsets) = unsafe {
            (value_mut(model, "model")?, slice_in(part_ids, count, "part_ids")?, slice_in(offsets, count, "offsets")?)
        };
        let parent = declared_id(parent_id, "concat parent")?;
        let parts: Vec<(BufferId, u64)> = ids.iter().copied().zip(offsets.iter().copied()).collect();
        m.model.add_concat_parent(parent, size, &parts)
    })
}

/// Pins a buffer (a graph input or output) for the whole run: it keeps
/// its place in the mutable block from the first step to the last. A
/// dynamic buffer has no place to keep: pinning it succeeds and changes
/// nothing.
///
/// Errors: NULL_ARGUMENT, NOT_FOUND (an unknown id), INVALID_ARGUMENT (a
/// constant, which lives for the whole run in its blob already; a
/// workbuffer; a model that is not live).
///
/// # Safety
/// `model` must be NULL, freed, or a live model no other call uses
/// meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_model_pin(model: *mut nnm_exec_model, id: u64) -> Status {
    // SAFETY: the caller's promise is `value_mut`'s.
    unsafe { handle_update(model, "model", |m| m.model.pin(id)) }
}

/// Writes the number of operators added so far.
///
/// Errors: NULL_ARGUMENT, INVALID_ARGUMENT (not a live model).
///
/// # Safety
/// `model` must be NULL, freed, or a live model no call changes
/// meanwhile; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nnm_exec_model_operator_count(model: *const nnm_exec_model, out: *mut usize) -> Status {
    // SAFETY: the caller's promises are `handle_query`'s.
    unsafe { handle_query(model, "model", out, "out", |m| Ok(m.model.operators().len())) }
}
