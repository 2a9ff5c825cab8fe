//! Where every buffer of a model goes: constants packed one after another
//! into the constants blob, immutable workbuffers into the immutable blob
//! (both shared by every infer request), and the tensors and mutable
//! workbuffers of one request planned by the planner into one mutable
//! block.
//!
//! Lifetimes, in operator steps: a tensor lives from its producer to its
//! last consumer (inclusive), through every alias of it; a concat parent
//! from the first producer of its parts to the last consumer of it or of a
//! part; a pinned buffer (graph input or output) for the whole run; a
//! mutable workbuffer for its operator's step only. A dynamic buffer
//! (size 0, and its aliases and concat parts) is not planned: it gets the
//! [`Area::Dynamic`] place, offset from the dynamic buffer holding it.

use std::time::{Duration, Instant};

use super::model::{ModelBuilder, OpIndex, Origin};
use crate::plan::{align_up, check_alignment, Algorithm, Lifetime, Planner, DEFAULT_WORK_LIMIT};
use crate::status::{Error, Result};

/// OpenVINO's blob alignment, the default of every offset.
pub const DEFAULT_EXEC_ALIGNMENT: u64 = 256;

/// How a model is laid out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutOptions {
    /// The planner's algorithm for the mutable block (default `auto`).
    pub algorithm: Algorithm,
    /// Alignment of every offset and blob size, a power of two (default
    /// 256).
    pub alignment: u64,
    /// The planner's work budget (default the planner's).
    pub work_limit: u64,
}

impl Default for LayoutOptions {
    fn default() -> Self {
        LayoutOptions { algorithm: Algorithm::Auto, alignment: DEFAULT_EXEC_ALIGNMENT, work_limit: DEFAULT_WORK_LIMIT }
    }
}

/// Which memory a buffer lives in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Area {
    /// The constants blob (shared by every request).
    Constants,
    /// The immutable-workbuffer blob (shared by every request).
    Immutable,
    /// A request's mutable block.
    Mutable,
    /// No memory of nnmem's: a dynamic buffer (size 0, or an alias or
    /// concat part of one), which the runtime allocates per request. Its
    /// offset is from the start of the dynamic buffer holding it.
    Dynamic,
}

/// A buffer's place.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// Its memory.
    pub area: Area,
    /// Its offset in it.
    pub offset: u64,
    /// Its size.
    pub size: u64,
}

/// What a buffer of the mutable block's plan is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PlannedItem {
    /// The model buffer at this index of [`ModelBuilder::buffers`]: a
    /// tensor or a concat parent (aliases and parts sit inside these).
    Buffer(usize),
    /// Operator `.0`'s mutable workbuffer `.1`.
    Workbuffer(OpIndex, usize),
}

/// One buffer of the mutable block as the planner saw and placed it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    /// What it is.
    pub item: PlannedItem,
    /// Its lifetime in operator steps (half-open).
    pub lifetime: Lifetime,
    /// Its offset in the block.
    pub offset: u64,
    /// Its size in bytes.
    pub size: u64,
}

/// The layout of a model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Per buffer, in the model's order: its place.
    pub buffers: Vec<Place>,
    /// Per operator: its immutable workbuffers' places, in request order.
    pub immutable: Vec<Vec<Place>>,
    /// Per operator: its mutable workbuffers' places, in request order.
    pub mutable: Vec<Vec<Place>>,
    /// Bytes of the constants blob.
    pub constants_size: u64,
    /// Bytes of the immutable-workbuffer blob.
    pub immutable_size: u64,
    /// Bytes of one mutable block: the plan's peak.
    pub mutable_size: u64,
    /// The planner's lower bound for the mutable block.
    pub mutable_lower_bound: u64,
    /// The algorithm that produced the mutable plan.
    pub algorithm: Algorithm,
    /// No mutable block can be smaller.
    pub proven_optimal: bool,
    /// The alignment of every offset and blob size.
    pub alignment: u64,
    /// The mutable block's plan, in the order the planner got its buffers:
    /// the roots in model order, then the mutable workbuffers in operator
    /// and request order (what reports and pictures draw).
    pub planned: Vec<Planned>,
}

/// Lays out `model` under `options`. Errors on an alignment that is not a
/// power of two and on sizes that overflow 64 bits.
pub fn lay_out(model: &ModelBuilder, options: &LayoutOptions) -> Result<Layout> {
    lay_out_timed(model, options).map(|(layout, _)| layout)
}

/// As [`lay_out`], with the time the planner's `plan()` took.
pub(crate) fn lay_out_timed(model: &ModelBuilder, options: &LayoutOptions) -> Result<(Layout, Duration)> {
    check_alignment(options.alignment)?;
    let a = options.alignment;
    let buffers = model.buffers();
    let steps = model.operators().len().max(1) as i64;
    let index_of = |id| model.index_of(id).expect("ids a model refers to are its buffers");

    // Roots: an alias resolves to what it aliases (always an earlier
    // buffer); a concat part to its parent, at its offset.
    let mut root: Vec<(usize, u64)> = (0..buffers.len()).map(|i| (i, 0)).collect();
    for (i, b) in buffers.iter().enumerate() {
        if let Origin::ConcatParent { parts } = &b.origin {
            for &(part, offset) in parts {
                root[index_of(part)] = (i, offset);
            }
        }
    }
    for (i, b) in buffers.iter().enumerate() {
        if let Origin::Alias { of } = b.origin {
            let (r, inside) = root[index_of(of)];
            root[i] = (r, inside);
        }
    }
    // A concat part may be declared as a part after an alias of it was
    // resolved above: resolve chains until nothing changes (each step
    // moves to a later-declared parent or an earlier alias target, so it
    // ends).
    loop {
        let mut changed = false;
        for i in 0..buffers.len() {
            let (r, inside) = root[i];
            let (rr, rinside) = root[r];
            if rr != r {
                root[i] = (rr, rinside + inside);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }

    // Lifetimes of the mutable roots, inclusive steps.
    let mut span: Vec<Option<(OpIndex, OpIndex)>> = vec![None; buffers.len()];
    let widen = |span: &mut Vec<Option<(OpIndex, OpIndex)>>, r: usize, from: OpIndex, to: OpIndex| {
        span[r] = Some(match span[r] {
            Some((s, e)) => (s.min(from), e.max(to)),
            None => (from, to),
        });
    };
    let mut pinned = vec![false; buffers.len()];
    for (i, b) in buffers.iter().enumerate() {
        let r = root[i].0;
        pinned[r] |= b.pinned;
        if let Origin::Produced { producer } = b.origin {
            widen(&mut span, r, producer, b.last_consumer.unwrap_or(producer).max(producer));
        } else if let Some(last) = b.last_consumer {
            if let Some((start, _)) = span[r] {
                widen(&mut span, r, start, last);
            }
        }
    }

    // Constants are never size 0, so a root of size 0 is a dynamic tensor
    // or concat parent.
    let dynamic = |i: usize| buffers[i].size == 0;
    let mut places = vec![Place { area: Area::Dynamic, offset: 0, size: 0 }; buffers.len()];
    let mut constants_size = 0u64;
    let pack = |size: u64, end: &mut u64| -> Result<u64> {
        let offset = *end;
        *end = offset
            .checked_add(align_up(size, a)?)
            .ok_or_else(|| Error::overflow("the blob's size overflows 64 bits"))?;
        Ok(offset)
    };
    for (i, b) in buffers.iter().enumerate() {
        if matches!(b.origin, Origin::Constant { .. }) {
            places[i] = Place { area: Area::Constants, offset: pack(b.size, &mut constants_size)?, size: b.size };
        }
    }
    let mut immutable_size = 0u64;
    let mut immutable = Vec::with_capacity(model.operators().len());
    for op in model.operators() {
        let mut own = Vec::with_capacity(op.request.immutable.len());
        for &size in &op.request.immutable {
            own.push(Place { area: Area::Immutable, offset: pack(size, &mut immutable_size)?, size });
        }
        immutable.push(own);
    }

    let mut planner = Planner::new();
    planner.set_algorithm(options.algorithm);
    planner.set_alignment(a)?;
    planner.set_work_limit(Some(options.work_limit));
    let mut planned: Vec<Planned> = Vec::new();
    for (i, b) in buffers.iter().enumerate() {
        if root[i].0 != i || dynamic(i) || matches!(b.origin, Origin::Constant { .. } | Origin::Alias { .. }) {
            continue;
        }
        let lifetime = match (pinned[i], span[i]) {
            (true, _) => Lifetime::half_open(0, steps)?,
            (false, Some((s, e))) => Lifetime::half_open(s as i64, e as i64 + 1)?,
            (false, None) => Lifetime::half_open(0, 0)?,
        };
        planner.add_buffer(b.size, lifetime, None)?;
        planned.push(Planned { item: PlannedItem::Buffer(i), lifetime, offset: 0, size: b.size });
    }
    for (k, op) in model.operators().iter().enumerate() {
        for (w, &size) in op.request.mutable.iter().enumerate() {
            let lifetime = Lifetime::half_open(k as i64, k as i64 + 1)?;
            planner.add_buffer(size, lifetime, None)?;
            planned.push(Planned { item: PlannedItem::Workbuffer(k, w), lifetime, offset: 0, size });
        }
    }
    let planning = Instant::now();
    let outcome = planner.plan()?.clone();
    let planner_time = planning.elapsed();
    let mut mutable: Vec<Vec<Place>> =
        model.operators().iter().map(|op| Vec::with_capacity(op.request.mutable.len())).collect();
    for (p, &offset) in planned.iter_mut().zip(&outcome.offsets) {
        p.offset = offset;
        let place = Place { area: Area::Mutable, offset, size: p.size };
        match p.item {
            PlannedItem::Buffer(i) => places[i] = place,
            // Workbuffers come in request order, so pushing keeps it.
            PlannedItem::Workbuffer(k, _) => mutable[k].push(place),
        }
    }
    for (i, b) in buffers.iter().enumerate() {
        let (r, inside) = root[i];
        if r != i {
            let rp = places[r];
            places[i] = Place { area: rp.area, offset: rp.offset + inside, size: b.size };
        }
    }
    let layout = Layout {
        buffers: places,
        immutable,
        mutable,
        constants_size,
        immutable_size,
        mutable_size: outcome.peak,
        mutable_lower_bound: outcome.lower_bound,
        algorithm: outcome.algorithm,
        proven_optimal: outcome.proven_optimal,
        alignment: a,
        planned,
    };
    Ok((layout, planner_time))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workbuffer::model::{InputSpec, OperatorSpec, OutputSpec, WorkbufferRequest};

    fn op(
        m: &ModelBuilder,
        inputs: &[u64],
        outputs: Vec<OutputSpec>,
        mutable: &[u64],
        immutable: &[u64],
    ) -> OperatorSpec {
        OperatorSpec {
            name: String::new(),
            inputs: inputs.iter().map(|&id| InputSpec::new(id, m.buffer(id).unwrap().size)).collect(),
            outputs,
            request: WorkbufferRequest {
                immutable: immutable.to_vec(),
                mutable: mutable.to_vec(),
                ..Default::default()
            },
        }
    }

    #[test]
    fn blobs_pack_and_the_mutable_block_reuses_bytes() {
        let mut m = ModelBuilder::new();
        m.add_constant(1, 100, None).unwrap();
        m.add_constant(2, 300, None).unwrap();
        m.add_operator(op(&m, &[1], vec![OutputSpec::new(3, 256)], &[256], &[10])).unwrap(); // 0
        m.add_operator(op(&m, &[3, 2], vec![OutputSpec::new(4, 256)], &[], &[])).unwrap(); // 1
        m.add_operator(op(&m, &[4], vec![OutputSpec::alias(5, 256, 4)], &[], &[20])).unwrap(); // 2: reshape
        m.add_operator(op(&m, &[5], vec![OutputSpec::new(6, 256)], &[512], &[])).unwrap(); // 3
        let l = lay_out(&m, &LayoutOptions::default()).unwrap();
        // Constants at 0 and 256 (100 B rounded up); immutable 0 and 256.
        assert_eq!((l.buffers[0].offset, l.buffers[1].offset, l.constants_size), (0, 256, 768));
        assert_eq!((l.immutable[0][0].offset, l.immutable[2][0].offset, l.immutable_size), (0, 256, 512));
        // The alias shares its source's place.
        assert_eq!(l.buffers[4], Place { area: Area::Mutable, offset: l.buffers[3].offset, size: 256 });
        // Step 0: t3 + wb0 = 512; step 1: t3 + t4; step 3: t4/t5 + t6 + wb 512 = 1024.
        assert_eq!((l.mutable_size, l.mutable_lower_bound, l.proven_optimal), (1024, 1024, true));
        assert_eq!(l.mutable[3][0].size, 512);
        // The plan as the planner saw it: tensors 3, 4, 6 (5 is an alias), then the two workbuffers.
        let items: Vec<_> = l.planned.iter().map(|p| (p.item, p.lifetime, p.offset)).collect();
        let life = |s, e| Lifetime::half_open(s, e).unwrap();
        assert_eq!(
            items,
            vec![
                (PlannedItem::Buffer(2), life(0, 2), l.buffers[2].offset),
                (PlannedItem::Buffer(3), life(1, 4), l.buffers[3].offset),
                (PlannedItem::Buffer(5), life(3, 4), l.buffers[5].offset),
                (PlannedItem::Workbuffer(0, 0), life(0, 1), l.mutable[0][0].offset),
                (PlannedItem::Workbuffer(3, 0), life(3, 4), l.mutable[3][0].offset),
            ]
        );
        assert_eq!(l.alignment, 256);
    }

    #[test]
    fn concat_parts_sit_inside_their_parent_and_pinned_buffers_live_throughout() {
        let mut m = ModelBuilder::new();
        m.add_operator(op(&m, &[], vec![OutputSpec::new(1, 256)], &[], &[])).unwrap(); // 0: input
        m.pin(1).unwrap();
        m.add_operator(op(&m, &[1], vec![OutputSpec::new(2, 256)], &[], &[])).unwrap(); // 1
        m.add_operator(op(&m, &[1], vec![OutputSpec::new(3, 256)], &[], &[])).unwrap(); // 2
        m.add_concat_parent(4, 512, &[(2, 0), (3, 256)]).unwrap();
        m.add_operator(op(&m, &[4], vec![OutputSpec::new(5, 256)], &[], &[])).unwrap(); // 3
        let l = lay_out(&m, &LayoutOptions::default()).unwrap();
        let parent = l.buffers[3].offset;
        assert_eq!((l.buffers[1].offset, l.buffers[2].offset), (parent, parent + 256));
        // The pinned input (256) lives with the parent (512) and the output.
        assert_eq!(l.mutable_size, 1024);
        let input = l.buffers[0].offset;
        assert!(input + 256 <= parent || parent + 512 <= input);
    }

    #[test]
    fn an_alias_of_a_concat_part_read_late_keeps_the_parent_alive() {
        let mut m = ModelBuilder::new();
        m.add_operator(op(&m, &[], vec![OutputSpec::new(1, 256)], &[], &[])).unwrap(); // 0
        m.add_operator(op(&m, &[], vec![OutputSpec::new(2, 256)], &[], &[])).unwrap(); // 1
        m.add_concat_parent(10, 512, &[(1, 0), (2, 256)]).unwrap();
        m.add_operator(op(&m, &[10], vec![OutputSpec::new(3, 256)], &[], &[])).unwrap(); // 2: the parent's last reader
        m.add_operator(op(&m, &[1], vec![OutputSpec::alias(4, 256, 1)], &[], &[])).unwrap(); // 3: reshape of a part
        m.add_operator(op(&m, &[4], vec![OutputSpec::new(5, 256)], &[], &[])).unwrap(); // 4: reads it late
        let l = lay_out(&m, &LayoutOptions::default()).unwrap();
        let parent = l.planned.iter().find(|p| p.item == PlannedItem::Buffer(2)).unwrap();
        assert_eq!(parent.lifetime, Lifetime::half_open(0, 5).unwrap());
        assert_eq!(l.buffers[4].offset, l.buffers[0].offset, "the alias is its part, inside the parent");
        let (late, p) = (l.buffers[5], l.buffers[2]);
        assert!(late.offset + 256 <= p.offset || p.offset + 512 <= late.offset, "{late:?} overlaps the parent {p:?}");
    }

    fn exact() -> LayoutOptions {
        LayoutOptions { alignment: 1, ..LayoutOptions::default() }
    }

    #[test]
    fn a_concat_parent_inside_another_sits_at_the_composed_offsets() {
        let mut m = ModelBuilder::new();
        // Operators 0 to 2 write tensors 1 to 3.
        for id in 1..=3 {
            m.add_operator(op(&m, &[], vec![OutputSpec::new(id, 32)], &[], &[])).unwrap();
        }
        m.add_concat_parent(10, 64, &[(1, 0), (2, 32)]).unwrap();
        m.add_concat_parent(11, 128, &[(3, 0), (10, 64)]).unwrap();
        m.add_operator(op(&m, &[10], vec![OutputSpec::alias(4, 64, 10)], &[], &[])).unwrap(); // 3: reshape
        m.add_operator(op(&m, &[11, 4], vec![OutputSpec::new(5, 16)], &[], &[])).unwrap(); // 4
        let l = lay_out(&m, &exact()).unwrap();
        let at = |id| l.buffers[m.index_of(id).unwrap()];
        let outer = at(11).offset;
        assert_eq!([at(3).offset, at(10).offset, at(1).offset, at(2).offset], [0, 64, 64, 96].map(|o| outer + o));
        assert_eq!((at(4).offset, at(4).size), (outer + 64, 64), "the alias of the inner parent is inside it");
        // Only the outer parent is planned, alive from its first part to its last reader.
        let roots: Vec<_> = l.planned.iter().filter(|p| matches!(p.item, PlannedItem::Buffer(_))).collect();
        assert_eq!(roots.len(), 2, "{:?}", l.planned);
        assert_eq!((roots[0].item, roots[0].lifetime), (PlannedItem::Buffer(4), Lifetime::half_open(0, 5).unwrap()));
        assert_eq!(l.mutable_size, 128 + 16);
    }

    #[test]
    fn dynamic_buffers_get_no_memory_and_offsets_inside_their_dynamic_root() {
        let mut m = ModelBuilder::new();
        m.add_operator(op(&m, &[], vec![OutputSpec::new(1, 0)], &[], &[])).unwrap(); // 0: dynamic
        m.add_operator(op(&m, &[], vec![OutputSpec::new(2, 64)], &[], &[])).unwrap(); // 1
        m.add_operator(op(&m, &[2], vec![OutputSpec::new(3, 64)], &[], &[])).unwrap(); // 2
        m.add_concat_parent(10, 0, &[(1, 0), (3, 4096)]).unwrap();
        let read_any = |m: &ModelBuilder| OperatorSpec {
            inputs: vec![InputSpec::new(10, 5000)],
            ..op(m, &[], vec![OutputSpec::new(4, 32)], &[16], &[8])
        };
        m.add_operator(read_any(&m)).unwrap(); // 3
        m.add_operator(op(&m, &[1], vec![OutputSpec::alias(5, 0, 1)], &[], &[])).unwrap(); // 4
        m.pin(1).unwrap();
        let l = lay_out(&m, &exact()).unwrap();
        let at = |id| l.buffers[m.index_of(id).unwrap()];
        let none = |offset, size| Place { area: Area::Dynamic, offset, size };
        assert_eq!([at(1), at(3), at(10), at(5)], [none(0, 0), none(4096, 64), none(0, 0), none(0, 0)]);
        assert_eq!((at(2).area, at(4).area), (Area::Mutable, Area::Mutable));
        // Planned: tensors 2 and 4 and the workbuffer; nothing dynamic.
        let items: Vec<_> = l.planned.iter().map(|p| p.item).collect();
        let index = |id| m.index_of(id).unwrap();
        assert_eq!(
            items,
            vec![PlannedItem::Buffer(index(2)), PlannedItem::Buffer(index(4)), PlannedItem::Workbuffer(3, 0)]
        );
        assert_eq!((l.mutable_size, l.mutable_lower_bound), (64, 64));
    }
}
