//! Fitting a region into its capacity: tensors move to its spill region,
//! largest lifetime pressure first.
//!
//! Lifetime pressure is a tensor's size times the length of its lifetime on
//! the run's timeline (ties: the larger size, then model order). Only
//! tensors live at a step where the region is over its capacity are
//! candidates, since moving any other frees nothing where it is needed.
//!
//! Order of work, so that a region far over its capacity does not cost one
//! replan per moved tensor:
//! 1. While the region's lower bound (the most bytes live at one step,
//!    sizes aligned) plus its reserved bytes exceeds the capacity, move the
//!    candidate of largest pressure. No plan is needed for this: a segment
//!    tree over the steps keeps the live bytes per step (range add, range
//!    max), and as moving only lowers them, a tensor found live at no
//!    over-capacity step never becomes a candidate again, so one pass over
//!    the tensors in pressure order does it, O(n log n).
//! 2. Then plan; while the plan's size still exceeds the capacity, move the
//!    candidate of largest pressure (live at a step where some tensor ends
//!    above the usable bytes) and plan again.
//!
//! A region without a spill region is planned once and, if over its
//! capacity, is an error with the bytes it needs and misses.

use std::cmp::Reverse;

use super::description::RegionProperties;
use super::instance::{region_size, InstancePlan, PlanContext};
use super::model::TensorId;
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
    let Some(capacity) = props.capacity else {
        let plan = ctx.plan(name, &fitting.tensors, props)?;
        return Ok(Fitted { tensors: fitting.tensors, plan, moved: fitting.moved });
    };
    if props.spill_to.is_some() {
        fitting.below_lower_bound(ctx, capacity)?;
    }
    loop {
        let plan = ctx.plan(name, &fitting.tensors, props)?;
        if plan.size <= capacity {
            return Ok(Fitted { tensors: fitting.tensors, plan, moved: fitting.moved });
        }
        let need = fitting.need("peak", plan.peak, plan.size, capacity);
        // With the alignment its tensors ask for, not even an empty region
        // may fit: then every byte is over, and moving them may lower it.
        let usable = usable_bytes(capacity, plan.alignment, props).unwrap_or(0);
        let empty_fits = usable_bytes(capacity, props.alignment, props).is_some();
        let candidate = match props.spill_to {
            Some(_) if empty_fits => fitting.over_plan_candidate(ctx, &plan, usable),
            _ => None,
        };
        let Some(at) = candidate else {
            let why = match props.spill_to {
                None => "; it has no spill region".to_string(),
                Some(_) if fitting.tensors.is_empty() => "; no tensors are left to move".to_string(),
                Some(_) => "; moving its tensors cannot make it fit".to_string(),
            };
            return Err(Error::new(Status::DoesNotFit, format!("{need}{why}")));
        };
        fitting.move_out(ctx, at, &need);
    }
}

struct Fitting<'a> {
    name: &'a str,
    props: &'a RegionProperties,
    tensors: Vec<TensorId>,
    moved: Vec<(TensorId, String)>,
}

impl Fitting<'_> {
    /// `region 'x' needs N B (peak P B + reserved R B), capacity C B: M B
    /// missing`.
    fn need(&self, what: &str, bytes: u64, size: u64, capacity: u64) -> String {
        let reserved = self.props.reserved_front + self.props.reserved_back;
        let aligned = if size != bytes.saturating_add(reserved) { ", aligned" } else { "" };
        format!(
            "region '{}' needs {size} B ({what} {bytes} B + reserved {reserved} B{aligned}), capacity {capacity} B: {} B missing",
            self.name,
            size - capacity
        )
    }

    /// Moves `self.tensors[at]` out, saying why.
    fn move_out(&mut self, ctx: &PlanContext, at: usize, need: &str) {
        let id = self.tensors.remove(at);
        self.record(ctx, id, need);
    }

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

    /// Stage 1: moves tensors while the lower bound plus the reserved bytes
    /// exceeds the capacity.
    fn below_lower_bound(&mut self, ctx: &PlanContext, capacity: u64) -> Result<()> {
        let alignment = ctx.alignment(&self.tensors, self.props);
        let Some(usable) = usable_bytes(capacity, alignment, self.props) else { return Ok(()) };
        let lifetimes: Vec<Lifetime> = self.tensors.iter().map(|&id| ctx.planned_lifetime(id, self.props)).collect();
        let axis = Axis::new(&lifetimes);
        let mut live = MaxTree::new(axis.segments());
        let mut sizes = Vec::with_capacity(self.tensors.len());
        for (&id, lt) in self.tensors.iter().zip(&lifetimes) {
            let size = align_up(ctx.model.tensors()[id].size, alignment)?;
            sizes.push(size);
            let (a, b) = axis.range(lt);
            live.add(a, b, size as i128);
        }
        let usable = usable as i128;
        let mut moved = vec![false; self.tensors.len()];
        for at in by_pressure(ctx, &self.tensors) {
            let peak = live.max();
            if peak <= usable {
                break;
            }
            let (a, b) = axis.range(&lifetimes[at]);
            if a < b && live.query(a, b) > usable {
                let peak = u64::try_from(peak).unwrap_or(u64::MAX);
                let need =
                    self.need("lower bound", peak, region_size(self.name, peak, self.props, alignment)?, capacity);
                live.add(a, b, -(sizes[at] as i128));
                moved[at] = true;
                self.record(ctx, self.tensors[at], &need);
            }
        }
        let mut keep = moved.iter().map(|m| !m);
        self.tensors.retain(|_| keep.next().expect("one flag per tensor"));
        Ok(())
    }

    /// Stage 2: the index (in `self.tensors`) of the tensor of largest
    /// pressure live at a step where some tensor of `plan` ends above
    /// `usable`.
    fn over_plan_candidate(&self, ctx: &PlanContext, plan: &InstancePlan, usable: u64) -> Option<usize> {
        let lifetimes: Vec<Lifetime> = self.tensors.iter().map(|&id| ctx.planned_lifetime(id, self.props)).collect();
        let axis = Axis::new(&lifetimes);
        let mut cover = vec![0i64; axis.segments() + 1];
        for (at, &id) in self.tensors.iter().enumerate() {
            let size = align_up(ctx.model.tensors()[id].size, plan.alignment).unwrap_or(u64::MAX);
            if plan.offsets[at].saturating_add(size) > usable {
                let (a, b) = axis.range(&lifetimes[at]);
                cover[a] += 1;
                cover[b] -= 1;
            }
        }
        // over_before[i]: over-capacity segments before segment i.
        let mut over_before = Vec::with_capacity(cover.len());
        let (mut depth, mut count) = (0i64, 0usize);
        for c in &cover {
            over_before.push(count);
            depth += c;
            count += usize::from(depth > 0);
        }
        (0..self.tensors.len())
            .filter(|&at| {
                let (a, b) = axis.range(&lifetimes[at]);
                over_before[b] > over_before[a]
            })
            .min_by_key(|&at| pressure_key(ctx, self.tensors[at]))
    }
}

/// The bytes tensors may take so the region fits `capacity`: the capacity
/// rounded down to the alignment, less the reserved bytes; `None` when not
/// even an empty region fits.
fn usable_bytes(capacity: u64, alignment: u64, props: &RegionProperties) -> Option<u64> {
    (capacity & !(alignment - 1)).checked_sub(props.reserved_front + props.reserved_back)
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

/// Range add, range max over segments (a lazy segment tree without
/// push-down: a node's max includes its own pending add).
struct MaxTree {
    n: usize,
    max: Vec<i128>,
    add: Vec<i128>,
}

impl MaxTree {
    fn new(n: usize) -> MaxTree {
        let nodes = 4 * n.max(1);
        MaxTree { n, max: vec![0; nodes], add: vec![0; nodes] }
    }

    fn max(&self) -> i128 {
        if self.n == 0 {
            0
        } else {
            self.max[1]
        }
    }

    fn add(&mut self, a: usize, b: usize, value: i128) {
        if a < b {
            self.update(1, 0, self.n, a, b, value);
        }
    }

    fn update(&mut self, node: usize, lo: usize, hi: usize, a: usize, b: usize, value: i128) {
        if b <= lo || hi <= a {
            return;
        }
        if a <= lo && hi <= b {
            self.max[node] += value;
            self.add[node] += value;
            return;
        }
        let mid = (lo + hi) / 2;
        self.update(2 * node, lo, mid, a, b, value);
        self.update(2 * node + 1, mid, hi, a, b, value);
        self.max[node] = self.max[2 * node].max(self.max[2 * node + 1]) + self.add[node];
    }

    fn query(&self, a: usize, b: usize) -> i128 {
        self.ask(1, 0, self.n, a, b)
    }

    fn ask(&self, node: usize, lo: usize, hi: usize, a: usize, b: usize) -> i128 {
        if b <= lo || hi <= a {
            return i128::MIN;
        }
        if a <= lo && hi <= b {
            return self.max[node];
        }
        let mid = (lo + hi) / 2;
        let below = self.ask(2 * node, lo, mid, a, b).max(self.ask(2 * node + 1, mid, hi, a, b));
        below.saturating_add(self.add[node])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_max_tree_adds_and_asks_over_ranges() {
        let mut t = MaxTree::new(5);
        t.add(0, 3, 4);
        t.add(2, 5, 3);
        assert_eq!((t.max(), t.query(0, 2), t.query(2, 3), t.query(3, 5)), (7, 4, 7, 3));
        t.add(1, 3, -5);
        assert_eq!((t.max(), t.query(0, 1), t.query(1, 3), t.query(1, 2)), (4, 4, 2, -1));
        assert_eq!(MaxTree::new(0).max(), 0);
    }
}
