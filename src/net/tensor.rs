//! Tensor descriptions: element types, memory kinds, ownership, and shapes
//! whose byte sizes are checked for overflow once, when they are made.

use crate::names::c_enum;
use crate::status::{Error, Result};

/// Most dimensions a tensor has (C: `NNM_MAX_DIMS`).
pub const MAX_DIMS: usize = 8;

/// Element types (C: `nnm_dtype`).
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// 32-bit IEEE float.
    F32 = 0,
    /// 64-bit IEEE float.
    F64 = 1,
    /// 16-bit IEEE float.
    F16 = 2,
    /// bfloat16.
    Bf16 = 3,
    /// Signed 8-bit integer.
    I8 = 4,
    /// Unsigned 8-bit integer.
    U8 = 5,
    /// Signed 16-bit integer.
    I16 = 6,
    /// Signed 32-bit integer.
    I32 = 7,
    /// Signed 64-bit integer.
    I64 = 8,
}

c_enum! {
    Dtype, "dtype",
    value_error(value) => format!("dtype {value} is not an nnm_dtype (0..={})", Dtype::ALL.len() - 1),
    { F32 = "f32", F64 = "f64", F16 = "f16", Bf16 = "bf16", I8 = "i8", U8 = "u8", I16 = "i16", I32 = "i32", I64 = "i64" }
}

impl Dtype {
    /// Every element type, in numeric order.
    pub fn all() -> &'static [Dtype] {
        Dtype::ALL
    }

    /// Bytes per element.
    pub const fn size(self) -> u32 {
        match self {
            Dtype::I8 | Dtype::U8 => 1,
            Dtype::F16 | Dtype::Bf16 | Dtype::I16 => 2,
            Dtype::F32 | Dtype::I32 => 4,
            Dtype::F64 | Dtype::I64 => 8,
        }
    }
}

/// Where a tensor's memory is (C: `nnm_mem_kind`).
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum MemKind {
    /// Host memory.
    Host = 0,
    /// Device memory (an accelerator's address); nnmem never reads it.
    Device = 1,
    /// No buffer yet: a shape only (the data pointer is NULL).
    Placeholder = 2,
}

c_enum! {
    MemKind, "memory kind",
    value_error(value) => format!("memory kind {value} is not an nnm_mem_kind (0..={})", MemKind::ALL.len() - 1),
    { Host = "host", Device = "device", Placeholder = "placeholder" }
}

/// Who owns a tensor's buffer (C: `nnm_ownership`). Only `Owned` buffers
/// are ever freed by nnmem, exactly once, when the net is freed.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ownership {
    /// Allocated (or adopted, with the caller's deallocator) by nnmem,
    /// freed by nnmem.
    Owned = 0,
    /// A shallow copy of another tensor's descriptor: shares its buffer.
    View = 1,
    /// The caller's memory (or, for a placeholder, memory the caller binds
    /// later): never freed by nnmem.
    Borrowed = 2,
}

c_enum! {
    Ownership, "ownership",
    value_error(value) => format!("ownership {value} is not an nnm_ownership (0..={})", Ownership::ALL.len() - 1),
    { Owned = "owned", View = "view", Borrowed = "borrowed" }
}

impl Ownership {
    /// The ownership of a shallow copy of a tensor with this ownership: a
    /// copy of an owned tensor is a view of it; a copy of a view or of
    /// borrowed memory stays what it was. A copy never owns.
    pub fn of_copy(self) -> Ownership {
        match self {
            Ownership::Owned | Ownership::View => Ownership::View,
            Ownership::Borrowed => Ownership::Borrowed,
        }
    }
}

/// An element type and dimensions, with a byte size that fits `isize`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    dtype: Dtype,
    ndims: u32,
    dims: [u32; MAX_DIMS],
    bytes: u64,
}

impl Shape {
    /// A shape of `dims` (0 to 8 dimensions, each at least 1; 0
    /// dimensions make a scalar, one element).
    pub fn new(dtype: Dtype, dims: &[u32]) -> Result<Shape> {
        if dims.len() > MAX_DIMS {
            return Err(Error::invalid(format!("{} dimensions: a tensor has at most {MAX_DIMS}", dims.len())));
        }
        if let Some(i) = dims.iter().position(|&d| d == 0) {
            return Err(Error::invalid(format!("dimension {i} is 0: every dimension must be at least 1")));
        }
        let mut bytes = u64::from(dtype.size());
        for &d in dims {
            bytes = bytes.checked_mul(u64::from(d)).filter(|&b| b <= isize::MAX as u64).ok_or_else(|| {
                Error::overflow(format!(
                    "tensor of {dims:?} x {} B elements is larger than the address space",
                    dtype.size()
                ))
            })?;
        }
        let mut all = [0u32; MAX_DIMS];
        all[..dims.len()].copy_from_slice(dims);
        Ok(Shape { dtype, ndims: dims.len() as u32, dims: all, bytes })
    }

    /// `[batch, sample...]`: a per-sample shape with the batch dimension
    /// in front (at most 7 sample dimensions).
    pub fn batched(dtype: Dtype, batch: u32, sample: &[u32]) -> Result<Shape> {
        if sample.len() >= MAX_DIMS {
            return Err(Error::invalid(format!(
                "{} sample dimensions: at most {} (the batch dimension makes {MAX_DIMS})",
                sample.len(),
                MAX_DIMS - 1
            )));
        }
        let mut dims = Vec::with_capacity(sample.len() + 1);
        dims.push(batch);
        dims.extend_from_slice(sample);
        Shape::new(dtype, &dims)
    }

    /// The same shape with a different first (batch) dimension.
    pub fn with_batch(&self, batch: u32) -> Result<Shape> {
        let mut dims = self.dims;
        dims[0] = batch;
        Shape::new(self.dtype, &dims[..self.ndims as usize])
    }

    /// The element type.
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// The dimensions in use.
    pub fn dims(&self) -> &[u32] {
        &self.dims[..self.ndims as usize]
    }

    /// All `MAX_DIMS` dimension slots (unused ones are 0).
    pub fn dims_array(&self) -> [u32; MAX_DIMS] {
        self.dims
    }

    /// Number of dimensions.
    pub fn ndims(&self) -> u32 {
        self.ndims
    }

    /// Bytes of the whole tensor.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// Bytes of a tensor described by untrusted fields (a descriptor C code
/// handed over): `elem_size` times the first `ndims` dimensions,
/// saturating, 0 when `ndims` is out of range.
pub fn described_bytes(elem_size: u32, dims: &[u32; MAX_DIMS], ndims: u32) -> u64 {
    if ndims as usize > MAX_DIMS {
        return 0;
    }
    dims[..ndims as usize].iter().fold(u64::from(elem_size), |acc, &d| acc.saturating_mul(u64::from(d)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::Status;

    #[test]
    fn dtype_values_and_sizes() {
        for (i, d) in Dtype::all().iter().enumerate() {
            assert_eq!(*d as usize, i);
            assert_eq!(Dtype::from_value(i as u32).unwrap(), *d);
        }
        assert_eq!(Dtype::F32.size(), 4);
        assert_eq!(Dtype::Bf16.size(), 2);
        assert_eq!(Dtype::I64.size(), 8);
        let e = Dtype::from_value(9).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.message().contains("dtype 9"), "{}", e.message());
    }

    #[test]
    fn kinds_and_ownership_round_trip() {
        for k in [MemKind::Host, MemKind::Device, MemKind::Placeholder] {
            assert_eq!(MemKind::from_value(k as u32).unwrap(), k);
        }
        for o in [Ownership::Owned, Ownership::View, Ownership::Borrowed] {
            assert_eq!(Ownership::from_value(o as u32).unwrap(), o);
        }
        assert!(MemKind::from_value(3).is_err());
        assert!(Ownership::from_value(7).unwrap_err().message().contains("ownership 7"));
    }

    #[test]
    fn a_copy_never_owns() {
        assert_eq!(Ownership::Owned.of_copy(), Ownership::View);
        assert_eq!(Ownership::View.of_copy(), Ownership::View);
        assert_eq!(Ownership::Borrowed.of_copy(), Ownership::Borrowed);
    }

    #[test]
    fn shapes_check_dims_and_overflow() {
        let s = Shape::new(Dtype::F32, &[3, 4]).unwrap();
        assert_eq!((s.bytes(), s.ndims(), s.dims()), (48, 2, &[3u32, 4][..]));
        assert_eq!(s.dims_array(), [3, 4, 0, 0, 0, 0, 0, 0]);
        let scalar = Shape::new(Dtype::F64, &[]).unwrap();
        assert_eq!((scalar.bytes(), scalar.ndims(), scalar.dims()), (8, 0, &[][..]), "0 dimensions: a scalar");
        assert!(Shape::new(Dtype::F32, &[1; 9]).unwrap_err().message().contains("9 dimensions"));
        assert!(Shape::new(Dtype::F32, &[2, 0]).unwrap_err().message().contains("dimension 1 is 0"));
        let big = Shape::new(Dtype::F64, &[u32::MAX, u32::MAX, 4]).unwrap_err();
        assert_eq!(big.status(), Status::Overflow);
        let b = Shape::batched(Dtype::F64, 16, &[10]).unwrap();
        assert_eq!((b.dims(), b.bytes()), (&[16u32, 10][..], 1280));
        assert_eq!(b.with_batch(2).unwrap().bytes(), 160);
        assert!(Shape::batched(Dtype::F32, 1, &[1; 8]).unwrap_err().message().contains("8 sample dimensions"));
    }

    #[test]
    fn described_bytes_saturates_and_ignores_bad_ndims() {
        let mut dims = [0u32; MAX_DIMS];
        dims[0] = 5;
        dims[1] = 3;
        assert_eq!(described_bytes(4, &dims, 2), 60);
        assert_eq!(described_bytes(4, &dims, 9), 0);
        assert_eq!(described_bytes(8, &[u32::MAX; MAX_DIMS], 8), u64::MAX);
    }
}
