//! The buffers behind a net's tensors: memory nnmem allocates (from the
//! net's allocator), caller
//! buffers the net adopts, and the descriptors of both and of borrowed
//! caller memory.

use std::ffi::c_void;
use std::ptr;

use super::nnm_tensor;
use crate::ffi::device::zeroed_host_block;
use crate::net::{Capacity, MemKind, Ownership, Shape};
use crate::pool::device::{DeviceBlock, SharedAllocator};
use crate::status::{Error, Result};

/// The alignment of the buffers nnmem allocates for a net.
const BUFFER_ALIGNMENT: u64 = 64;

/// A zeroed, 64-byte-aligned host buffer that nnmem owns: a block of the
/// net's allocator (host-accessible), returned to that allocator when the
/// buffer is dropped, whatever allocator the net has by then.
pub(super) struct HostBuffer {
    block: DeviceBlock,
}

impl HostBuffer {
    /// Allocates `bytes` (> 0) zeroed bytes from `allocator`; failures name
    /// `what`.
    pub(super) fn zeroed(allocator: &SharedAllocator, bytes: u64, what: &dyn Fn() -> String) -> Result<HostBuffer> {
        Ok(HostBuffer { block: zeroed_host_block(allocator, bytes, BUFFER_ALIGNMENT, what)? })
    }

    pub(super) fn data(&mut self) -> *mut c_void {
        self.block.ptr().as_ptr().cast()
    }
}

impl Capacity for HostBuffer {
    fn capacity_bytes(&self) -> u64 {
        self.block.size()
    }
}

/// The descriptor of `shape` at `data`.
pub(super) fn descriptor(shape: &Shape, data: *mut c_void, kind: MemKind, ownership: Ownership) -> nnm_tensor {
    nnm_tensor {
        data,
        bytes: shape.bytes(),
        dims: shape.dims_array(),
        ndims: shape.ndims(),
        dtype: shape.dtype() as u32,
        elem_size: shape.dtype().size(),
        mem_kind: kind as u32,
        ownership: ownership as u32,
    }
}

/// The descriptor of a tensor of `shape` with no buffer.
pub(super) fn placeholder(shape: &Shape) -> nnm_tensor {
    descriptor(shape, ptr::null_mut(), MemKind::Placeholder, Ownership::Borrowed)
}

/// The kind of caller memory: host or device (a placeholder has none).
pub(super) fn memory_kind(mem_kind: u32) -> Result<MemKind> {
    match MemKind::from_value(mem_kind)? {
        MemKind::Placeholder => {
            Err(Error::invalid("mem_kind NNM_MEM_KIND_PLACEHOLDER: caller memory is host or device"))
        }
        k => Ok(k),
    }
}

/// Data and diff descriptors of caller memory of kind `kind`; a NULL diff
/// is a placeholder (no gradient).
pub(super) fn borrowed_pair(shape: &Shape, kind: MemKind, data: *mut c_void, diff: *mut c_void) -> [nnm_tensor; 2] {
    let diff = if diff.is_null() { placeholder(shape) } else { descriptor(shape, diff, kind, Ownership::Borrowed) };
    [descriptor(shape, data, kind, Ownership::Borrowed), diff]
}

/// A tensor nnmem allocates: the buffer and its descriptor.
pub(super) fn owned_tensor(
    allocator: &SharedAllocator,
    shape: &Shape,
    what: &dyn Fn() -> String,
) -> Result<(Held, nnm_tensor)> {
    let mut buffer = HostBuffer::zeroed(allocator, shape.bytes(), what)?;
    let desc = descriptor(shape, buffer.data(), MemKind::Host, Ownership::Owned);
    Ok((Held::Host(buffer), desc))
}

/// A caller buffer the net adopted: freed with the caller's deallocator,
/// once, when this record is dropped (with its entry, at `nnm_net_free`).
pub(super) struct Adopted {
    pub(super) ptr: *mut c_void,
    pub(super) free_fn: unsafe extern "C" fn(*mut c_void, *mut c_void),
    pub(super) ctx: *mut c_void,
}

impl Drop for Adopted {
    fn drop(&mut self) {
        // SAFETY: the caller handed `ptr` over with this deallocator and
        // context (nnm_net_attach_*_adopted); this record is its only owner
        // and is dropped once.
        unsafe { (self.free_fn)(self.ctx, self.ptr) }
    }
}

/// A buffer an entry owns and frees: one nnmem allocated, or one it adopted.
pub(super) enum Held {
    Host(#[allow(dead_code)] HostBuffer),
    Adopted(#[allow(dead_code)] Adopted),
}

impl Held {
    /// After a failed attach: nnmem's own allocations are freed, adopted
    /// buffers are left to the caller, who still owns them.
    pub(super) fn give_back(pair: [Option<Held>; 2]) {
        for held in pair.into_iter().flatten() {
            if let Held::Adopted(a) = held {
                std::mem::forget(a);
            }
        }
    }
}
