//! Fitting a region into its capacity: tensors move to its spill region,
//! largest lifetime pressure first.
//!
//! Lifetime pressure is a tensor's size times the length of its lifetime on
//! the run's timeline (ties: the larger size, then model order). Only
//! tensors live at a step where the region is over its capacity are
//! candidates, since moving any other frees nothing where it is needed.
//!
//! Order of work, so that a region far over its capacity costs one plan,
//! not one per moved tensor:
//! 1. While the region's lower bound (the most bytes live at one step,
//!    sizes rounded up to the region's alignment) plus its reserved bytes exceeds the capacity, move the
//!    candidate of largest pressure. No plan is needed for this: a segment
//!    tree over the steps keeps the live bytes per step (range add, range
//!    max).
//! 2. Then plan once; while the plan still exceeds the capacity, move the
//!    candidate of largest pressure, where the over-capacity steps are
//!    those at which a tensor ends above the usable bytes (the same tree,
//!    counting such tensors per step) and the candidates are those tensors
//!    (moving one below frees nothing). The rest keep their planned offsets:
//!    a plan less some tensors is still a valid plan, and its peak only
//!    drops, so it fits once no step is over (its peak, lower bound and
//!    size are then those of the tensors kept).
//!
//! In both, moving only ever removes over-capacity steps, so a tensor live
//! at none never becomes a candidate later: one pass over the tensors in
//! pressure order does each stage, O(n log n).
//!
//! A region without a spill region is planned once and, if over its
//! capacity, is an error with the bytes it needs and misses.

use std::cmp::Reverse;

use super::description::RegionProperties;
use super::instance::{front_bytes, region_size, InstancePlan, PlanContext};
use super::model::TensorId;
use crate::plan::aligned::aligned_lower_bound;
use crate::plan::max_tree::MaxTree;
use crate::plan::{align_up, Lifetime};
use crate::status::{Error, Result, Status};

/// A region's tensors after fitting it, its plan, and the tensors moved out.
#[derive(Clone, Debug)]
pub struct Fitted {
    /// The tensors kept, in model order.
    pub tensors: Vec<TensorId>,
    /// Their plan.
    pub plan: InstancePlan,
    /// The tensors moved out, in the order moved, and why.
    pub moved: Vec<(TensorId, String)>,
}

/// Plans `tensors` (in model order) as region `name` with `props`, moving
/// tensors out while it exceeds its capacity if it has a spill region.
pub fn fit(ctx: &mut PlanContext, name: &str, tensors: Vec<TensorId>, props: &RegionProperties) -> Result<Fitted> {
    let mut fitting = Fitting { name, props, tensors, moved: Vec::new() };
    let spill = props.spill_to.is_some();
    // Whether the region fits its capacity at all, empty.
    let can_fit = |capacity| usable_bytes(capacity, props.alignment, props).is_some();
    if let Some(capacity) = props.capacity.filter(|&c| spill && can_fit(c)) {
        fitting.below_lower_bound(ctx, capacity)?;
    }
    let mut plan = ctx.plan(name, &fitting.tensors, props)?;
    if let Some(capacity) = props.capacity.filter(|&c| plan.size > c) {
        if spill && can_fit(capacity) {
            plan = fitting.below_plan(ctx, plan, capacity)?;
        }
        if plan.size > capacity {
            let why = if spill {
                "; moving the tensors live where it is over does not make it fit"
            } else {
                "; it has no spill region"
            };
            let need = need(name, props, "peak", plan.peak, plan.size, capacity);
            return Err(Error::new(Status::DoesNotFit, format!("{need}{why}")));
        }
    }
    Ok(Fitted { tensors: fitting.tensors, plan, moved: fitting.moved })
}

/// `region 'x' needs N B (peak P B + reserved R B), capacity C B: M B
/// missing`, where N is the region's size for P bytes of tensors.
fn need(name: &str, props: &RegionProperties, what: &str, bytes: u64, size: u64, capacity: u64) -> String {
    let reserved = props.reserved_front + props.reserved_back;
    let aligned = if size != bytes.saturating_add(reserved) { ", aligned" } else { "" };
    format!(
        "region '{name}' needs {size} B ({what} {bytes} B + reserved {reserved} B{aligned}), capacity {capacity} B: {} B missing",
        size - capacity
    )
}

struct Fitting<'a> {
    name: &'a str,
    props: &'a RegionProperties,
    tensors: Vec<TensorId>,
    moved: Vec<(TensorId, String)>,
}

impl Fitting<'_> {
    /// Records `id` as moved, with the region's `need` as the reason.
    fn record(&mut self, ctx: &PlanContext, id: TensorId, need: &str) {
        let t = &ctx.model.tensors()[id];
        let reason = format!(
            "{need}; '{}' has the largest lifetime pressure live where it is over: {} B x {} steps = {}",
            t.name,
            t.size,
            ctx.lifetimes[id].len(),
            pressure(ctx, id)
        );
        self.moved.push((id, reason));
    }

    /// One pass over the tensors in pressure order: `weights[at]` is added
    /// over each tensor's planned steps; a step is over while its total
    /// exceeds `threshold`; a tensor of positive weight live at an over
    /// step moves (its weight leaves), the reason from `need` (given the
    /// moved flags so far). Returns the moved flags, by index in
    /// `self.tensors`. A tensor of weight 0 never moves: taking it out
    /// lowers no step (in stage 2, the tensors kept keep their offsets, so
    /// only those ending above the usable bytes are worth moving).
    fn sweep(
        &mut self,
        ctx: &PlanContext,
        weights: &[i128],
        threshold: i128,
        mut need: impl FnMut(&MaxTree, &[bool]) -> Result<String>,
    ) -> Result<Vec<bool>> {
        let lifetimes: Vec<Lifetime> = self.tensors.iter().map(|&id| ctx.planned_lifetime(id, self.props)).collect();
        let axis = Axis::new(&lifetimes);
        let mut tree = MaxTree::new(axis.segments());
        for (lt, &w) in lifetimes.iter().zip(weights) {
            let (a, b) = axis.range(lt);
            tree.add(a, b, w);
        }
        let mut moved = vec![false; self.tensors.len()];
        for at in by_pressure(ctx, &self.tensors) {
            if tree.max() <= threshold {
                break;
            }
            let (a, b) = axis.range(&lifetimes[at]);
            if weights[at] > 0 && a < b && tree.query(a, b) > threshold {
                let reason = need(&tree, &moved)?;
                tree.add(a, b, -weights[at]);
                moved[at] = true;
                self.record(ctx, self.tensors[at], &reason);
            }
        }
        Ok(moved)
    }

    /// Stage 1: moves tensors while the lower bound plus the reserved bytes
    /// exceeds the capacity.
    fn below_lower_bound(&mut self, ctx: &PlanContext, capacity: u64) -> Result<()> {
        let alignment = ctx.alignment(&self.tensors, self.props);
        let Some(usable) = usable_bytes(capacity, alignment, self.props) else { return Ok(()) };
        // Sizes at the region's alignment: a tensor's own alignment places
        // its offset but does not round its size, so rounding to it here
        // would overstate the bound and move tensors that fit.
        let sizes = self.aligned_sizes(ctx, self.props.alignment)?;
        let weights: Vec<i128> = sizes.iter().map(|&s| i128::from(s)).collect();
        let (name, props) = (self.name, self.props);
        let moved = self.sweep(ctx, &weights, i128::from(usable), |tree, _| {
            let bound = u64::try_from(tree.max()).unwrap_or(u64::MAX);
            Ok(need(name, props, "lower bound", bound, region_size(name, bound, props, alignment)?, capacity))
        })?;
        self.keep_unmoved(&moved);
        Ok(())
    }

    /// Stage 2: moves tensors while `plan` (less the tensors moved) has a
    /// tensor ending above the usable bytes; returns the plan of the rest.
    fn below_plan(&mut self, ctx: &PlanContext, plan: InstancePlan, capacity: u64) -> Result<InstancePlan> {
        // Not even an empty region fits at the tensors' alignment: every
        // byte is over, and moving tensors may lower the alignment.
        let usable = usable_bytes(capacity, plan.alignment, self.props).unwrap_or(0);
        let sizes = self.aligned_sizes(ctx, self.props.alignment)?;
        let ends: Vec<u64> = plan.offsets.iter().zip(&sizes).map(|(&o, &s)| o + s).collect();
        let weights: Vec<i128> = ends.iter().map(|&e| i128::from(e > usable)).collect();
        // The plan's peak as tensors leave: the highest end not moved.
        let mut by_end: Vec<usize> =
            (0..ends.len()).filter(|&at| !ctx.planned_lifetime(self.tensors[at], self.props).is_empty()).collect();
        crate::sort::sort_unstable_by_key(&mut by_end, |&at| Reverse(ends[at]));
        let mut top = 0;
        let (name, props) = (self.name, self.props);
        let moved = self.sweep(ctx, &weights, 0, |_, moved| {
            while top < by_end.len() && moved[by_end[top]] {
                top += 1;
            }
            let peak = by_end.get(top).map_or(0, |&at| ends[at]);
            Ok(need(name, props, "peak", peak, region_size(name, peak, props, plan.alignment)?, capacity))
        })?;
        if !moved.contains(&true) {
            return Ok(plan);
        }
        let offsets: Vec<u64> = plan.offsets.iter().zip(&moved).filter(|(_, &m)| !m).map(|(&o, _)| o).collect();
        self.keep_unmoved(&moved);
        let buffers = ctx.buffers(&self.tensors, self.props);
        let mut peak = 0;
        for (b, &o) in buffers.iter().zip(&offsets) {
            let size = align_up(b.size, self.props.alignment)?;
            if size > 0 && !b.lifetime.is_empty() {
                peak = peak.max(o + size);
            }
        }
        let bound = aligned_lower_bound(self.props.alignment, &buffers)?;
        let alignment = ctx.alignment(&self.tensors, self.props);
        Ok(InstancePlan {
            size: region_size(self.name, peak, self.props, alignment)?,
            offsets,
            peak,
            lower_bound: bound,
            algorithm: plan.algorithm,
            proven_optimal: peak == bound,
            alignment,
        })
    }

    fn aligned_sizes(&self, ctx: &PlanContext, alignment: u64) -> Result<Vec<u64>> {
        self.tensors.iter().map(|&id| align_up(ctx.model.tensors()[id].size, alignment)).collect()
    }

    fn keep_unmoved(&mut self, moved: &[bool]) {
        let mut keep = moved.iter().map(|m| !m);
        self.tensors.retain(|_| keep.next().expect("one flag per tensor"));
    }
}

/// The bytes tensors may take so the region fits `capacity`: the capacity
/// rounded down to the region's alignment (its size is rounded up to it),
/// less the reserved bytes (the front ones rounded up to `alignment`, the
/// base address's); `None` when not even an empty region fits.
fn usable_bytes(capacity: u64, alignment: u64, props: &RegionProperties) -> Option<u64> {
    let reserved = front_bytes(props, alignment).ok()?.checked_add(props.reserved_back)?;
    (capacity & !(props.alignment - 1)).checked_sub(reserved)
}

/// Size times lifetime length on the run's timeline.
fn pressure(ctx: &PlanContext, id: TensorId) -> u128 {
    u128::from(ctx.model.tensors()[id].size) * u128::from(ctx.lifetimes[id].len())
}

/// Sorts first for the tensor to move first.
fn pressure_key(ctx: &PlanContext, id: TensorId) -> (Reverse<u128>, Reverse<u64>, TensorId) {
    (Reverse(pressure(ctx, id)), Reverse(ctx.model.tensors()[id].size), id)
}

/// Indices into `tensors`, the one to move first first.
fn by_pressure(ctx: &PlanContext, tensors: &[TensorId]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..tensors.len()).collect();
    order.sort_by_cached_key(|&at| pressure_key(ctx, tensors[at]));
    order
}

/// The distinct start and end steps of some lifetimes: segment `i` is
/// `[points[i], points[i + 1])`.
struct Axis {
    points: Vec<i64>,
}

impl Axis {
    fn new(lifetimes: &[Lifetime]) -> Axis {
        let mut points: Vec<i64> = lifetimes.iter().filter(|l| !l.is_empty()).flat_map(|l| [l.start, l.end]).collect();
        points.sort_unstable();
        points.dedup();
        Axis { points }
    }

    fn segments(&self) -> usize {
        self.points.len().saturating_sub(1)
    }

    /// The segments `lifetime` covers, `a..b` (empty for an empty lifetime).
    fn range(&self, lifetime: &Lifetime) -> (usize, usize) {
        if lifetime.is_empty() {
            return (0, 0);
        }
        let at = |step| self.points.binary_search(&step).expect("every lifetime's ends are points");
        (at(lifetime.start), at(lifetime.end))
    }
}
