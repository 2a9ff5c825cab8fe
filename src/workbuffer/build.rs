//! A compiled model: the layout, the two shared blobs allocated from a
//! device (constants with their bytes, immutable workbuffers initialised
//! once by their operators), and each operator's places flattened in the
//! order the runtime resolves them (inputs, outputs, immutable, mutable).
//!
//! The blobs are shared by every infer request; a request's mutable block
//! comes from a [`super::request_pool::BlockPool`], and
//! [`CompiledModel::resolve`] joins the two into an operator's pointers.

use std::time::{Duration, Instant};

use super::layout::{lay_out_timed, Area, Layout, LayoutOptions, Place};
use super::model::{BufferId, ModelBuilder, OpIndex, Origin, WorkbufferKind};
use super::request_pool::Lease;
use crate::pool::device::{DeviceBlock, DevicePtr, SharedAllocator};
use crate::status::{Error, Result, Status};

/// How many pointers of each kind an operator resolves to.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct OpShape {
    /// Its inputs.
    pub inputs: usize,
    /// Its outputs.
    pub outputs: usize,
    /// Its immutable workbuffers.
    pub immutable: usize,
    /// Its mutable workbuffers.
    pub mutable: usize,
}

impl OpShape {
    /// All of them: the length of [`CompiledModel::resolve`]'s sequence.
    pub fn total(&self) -> usize {
        self.inputs + self.outputs + self.immutable + self.mutable
    }
}

/// Where a build's time went (for benchmarks; nothing depends on it).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildTimings {
    /// The whole build, initialisers included.
    pub total: Duration,
    /// The planner's `plan()` call for the mutable block.
    pub planner: Duration,
}

/// What an operator's workbuffer initialiser gets: the operator, then its
/// immutable workbuffers' addresses in request order. Its error fails the
/// build as it is.
pub type InitFn<'a> = dyn FnMut(OpIndex, &[DevicePtr]) -> Result<()> + 'a;

/// A model laid out, with its shared blobs allocated and initialised.
/// Immutable once built, so any number of threads may resolve against it.
pub struct CompiledModel {
    model: ModelBuilder,
    options: LayoutOptions,
    layout: Layout,
    allocator: SharedAllocator,
    constants: Option<DeviceBlock>,
    immutable: Option<DeviceBlock>,
    /// Every operator's places, in resolution order, one run after another.
    places: Vec<Place>,
    /// Per operator: where its run starts in `places`, and its shape.
    ops: Vec<(usize, OpShape)>,
    timings: BuildTimings,
}

impl CompiledModel {
    /// Lays `model` out under `options`, allocates the constants and the
    /// immutable-workbuffer blobs from `allocator` (a blob of no bytes is
    /// not allocated), copies the constants' bytes in, and calls `init`
    /// once per operator that has immutable workbuffers, in operator order.
    ///
    /// Constants given without bytes are zero-filled when the CPU can write
    /// the device's memory, and otherwise left for the runtime to write
    /// (at [`CompiledModel::constant_ptr`]); constants with bytes need such
    /// a device. The immutable blob is zero-filled likewise before the
    /// initialisers run. Any failure, an initialiser's included, frees
    /// everything and returns the error.
    pub fn build(
        model: &ModelBuilder,
        options: &LayoutOptions,
        allocator: SharedAllocator,
        init: &mut InitFn<'_>,
    ) -> Result<CompiledModel> {
        let started = Instant::now();
        let (layout, planner) = lay_out_timed(model, options)?;
        let writable = allocator.host_accessible();
        let blob = |size: u64, what: &str| -> Result<Option<DeviceBlock>> {
            if size == 0 {
                return Ok(None);
            }
            DeviceBlock::new(allocator.clone(), size, options.alignment)
                .map(Some)
                .map_err(|e| Error::new(e.status(), format!("the {what} blob of {size} B: {}", e.message())))
        };

        // Each constant is written once: its bytes, or zeros where the CPU
        // can write (the padding between constants is never read).
        let mut constants = blob(layout.constants_size, "constants")?;
        for (i, b) in model.buffers().iter().enumerate() {
            let Origin::Constant { bytes } = &b.origin else { continue };
            let block = constants.as_mut().expect("a constant makes the constants blob non-empty");
            let place = layout.buffers[i];
            if let Some(bytes) = bytes {
                block.write_from_host(place.offset, bytes).map_err(|e| {
                    Error::new(
                        e.status(),
                        format!(
                            "constant {} has bytes to copy in: {} (add it without bytes and write it at its \
                             address after the build)",
                            b.id,
                            e.message()
                        ),
                    )
                })?;
            } else if writable {
                block.zero(place.offset, place.size)?;
            }
        }

        let mut immutable = blob(layout.immutable_size, "immutable-workbuffer")?;
        if let Some(block) = &mut immutable {
            if writable {
                block.zero(0, layout.immutable_size)?;
            }
            let mut pointers = Vec::new();
            for (op, own) in layout.immutable.iter().enumerate() {
                if own.is_empty() {
                    continue;
                }
                pointers.clear();
                pointers.extend(own.iter().map(|p| block.ptr().byte_add(p.offset)));
                init(op, &pointers)?;
            }
        }

        let mut places = Vec::new();
        let mut ops = Vec::with_capacity(model.operators().len());
        for (k, op) in model.operators().iter().enumerate() {
            let start = places.len();
            let place_of = |id: BufferId| layout.buffers[model.index_of(id).expect("operators name model buffers")];
            places.extend(op.inputs.iter().map(|input| place_of(input.id)));
            places.extend(op.outputs.iter().map(|output| place_of(output.id)));
            places.extend_from_slice(&layout.immutable[k]);
            places.extend_from_slice(&layout.mutable[k]);
            let shape = OpShape {
                inputs: op.inputs.len(),
                outputs: op.outputs.len(),
                immutable: layout.immutable[k].len(),
                mutable: layout.mutable[k].len(),
            };
            ops.push((start, shape));
        }

        let timings = BuildTimings { total: started.elapsed(), planner };
        Ok(CompiledModel {
            model: model.without_constant_bytes(),
            options: options.clone(),
            layout,
            allocator,
            constants,
            immutable,
            places,
            ops,
            timings,
        })
    }

    /// The model it was built from, without its constants' bytes (they
    /// are in the constants blob).
    pub fn model(&self) -> &ModelBuilder {
        &self.model
    }

    /// The options it was built with.
    pub fn options(&self) -> &LayoutOptions {
        &self.options
    }

    /// Where every buffer went.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The allocator its blobs came from.
    pub fn allocator(&self) -> &SharedAllocator {
        &self.allocator
    }

    /// How long the build took, and how much of it was the planner.
    pub fn timings(&self) -> BuildTimings {
        self.timings
    }

    /// The number of operators.
    pub fn operator_count(&self) -> usize {
        self.ops.len()
    }

    /// Operator `op`'s pointer counts (`None` past the last operator).
    pub fn op_shape(&self, op: OpIndex) -> Option<OpShape> {
        self.ops.get(op).map(|&(_, shape)| shape)
    }

    /// Operator `op`'s places in resolution order: inputs, outputs,
    /// immutable workbuffers, mutable workbuffers.
    pub fn op_places(&self, op: OpIndex) -> Option<&[Place]> {
        self.ops.get(op).map(|&(start, shape)| &self.places[start..start + shape.total()])
    }

    /// The place of buffer or workbuffer `id`.
    pub fn place(&self, id: BufferId) -> Option<Place> {
        if let Some(i) = self.model.index_of(id) {
            return Some(self.layout.buffers[i]);
        }
        let w = self.model.workbuffer(id)?;
        let list = match w.kind {
            WorkbufferKind::Immutable => &self.layout.immutable,
            WorkbufferKind::Mutable => &self.layout.mutable,
        };
        Some(list[w.op][w.index])
    }

    /// The constants blob's address (`None` without constants).
    pub fn constants_base(&self) -> Option<DevicePtr> {
        self.constants.as_ref().map(DeviceBlock::ptr)
    }

    /// The immutable-workbuffer blob's address (`None` without any).
    pub fn immutable_base(&self) -> Option<DevicePtr> {
        self.immutable.as_ref().map(DeviceBlock::ptr)
    }

    /// Constant `id`'s address in the constants blob. Errors: an unknown
    /// id (`NotFound`), a buffer that is not a constant.
    pub fn constant_ptr(&self, id: BufferId) -> Result<DevicePtr> {
        let place = self.place(id).ok_or_else(|| Error::new(Status::NotFound, format!("buffer {id} is unknown")))?;
        match (place.area, self.constants_base()) {
            (Area::Constants, Some(base)) => Ok(base.byte_add(place.offset)),
            _ => Err(Error::invalid(format!("buffer {id} is not a constant"))),
        }
    }

    /// Bytes a request's mutable block needs: the plan's peak, at least one
    /// alignment unit (so that a model without mutable buffers still gets
    /// real blocks to hand out).
    pub fn block_size(&self) -> u64 {
        self.layout.mutable_size.max(self.options.alignment)
    }

    /// Operator `op`'s pointers against the mutable block of `lease`, in
    /// the order inputs, outputs, immutable workbuffers, mutable
    /// workbuffers (each in declared order); `None` for a dynamic buffer,
    /// whose memory the runtime provides. Errors: an operator index past
    /// the last, a block smaller than this model's mutable block (a lease
    /// from a pool made for another model), a block reaching past the end
    /// of the address space. The lease is not checked against any pool: a
    /// lease already released resolves to memory another request may hold.
    pub fn resolve(&self, op: OpIndex, lease: &Lease) -> Result<impl Iterator<Item = Option<DevicePtr>> + '_> {
        let places = self.op_places(op).ok_or_else(|| {
            Error::invalid(format!("operator {op} is out of range: the model has {} operators", self.ops.len()))
        })?;
        if lease.base.addr().checked_add(lease.size as usize).is_none() {
            return Err(Error::invalid(format!(
                "a block of {} B at {:?} would reach past the end of the address space",
                lease.size, lease.base
            )));
        }
        if lease.size < self.layout.mutable_size {
            return Err(Error::invalid(format!(
                "the block of {} B is smaller than this model's mutable block of {} B (a block of another model's \
                 pool?)",
                lease.size, self.layout.mutable_size
            )));
        }
        let constants = self.constants_base();
        let immutable = self.immutable_base();
        let base = lease.base;
        Ok(places.iter().map(move |p| {
            let area_base = match p.area {
                Area::Constants => constants.expect("a constant's place means a constants blob"),
                Area::Immutable => immutable.expect("an immutable place means an immutable blob"),
                Area::Mutable => base,
                Area::Dynamic => return None,
            };
            Some(area_base.byte_add(p.offset))
        }))
    }
}

impl std::fmt::Debug for CompiledModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledModel")
            .field("operators", &self.ops.len())
            .field("constants_size", &self.layout.constants_size)
            .field("immutable_size", &self.layout.immutable_size)
            .field("mutable_size", &self.layout.mutable_size)
            .field("allocator", &self.allocator.name())
            .finish()
    }
}
