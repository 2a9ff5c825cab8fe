//! Planning one region instance through [`crate::plan::Planner`].
//!
//! The planner gets the instance's root tensors in model order, each live
//! over its lifetime on the run's timeline, or, with reuse off, all live
//! over one common step (so none share bytes; `sequential` then stacks them
//! in model order, Glow's constants layout). Alignment is the larger of
//! the region's and its tensors' largest.

use std::time::{Duration, Instant};

use super::description::RegionProperties;
use super::model::{Model, TensorId};
use crate::plan::{align_up, Algorithm, Lifetime, Planner};
use crate::status::{Error, Result};

/// The lifetime every tensor of a region without reuse is planned over.
const COMMON_STEP: Lifetime = Lifetime { start: 0, end: 1 };

/// An instance's plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstancePlan {
    /// Planned offset of each tensor, in the order given, without the
    /// reserved front bytes.
    pub offsets: Vec<u64>,
    /// The plan's peak.
    pub peak: u64,
    /// The planner's lower bound.
    pub lower_bound: u64,
    /// The algorithm that produced it.
    pub algorithm: Algorithm,
    /// No plan can be smaller.
    pub proven_optimal: bool,
    /// Alignment of the region: its own or its largest tensor's.
    pub alignment: u64,
    /// Reserved front, peak, reserved back, aligned.
    pub size: u64,
}

/// What an instance's tensors are planned with: the model, each tensor's
/// lifetime on the run's timeline, and where the time inside the planner is
/// counted.
pub struct PlanContext<'a> {
    /// The model.
    pub model: &'a Model,
    /// Each tensor's lifetime on the run's timeline.
    pub lifetimes: &'a [Lifetime],
    /// Time spent inside `Planner::plan`, over every call.
    pub planning: Duration,
}

impl PlanContext<'_> {
    /// The lifetime `id` is planned over in a region with `props`.
    pub fn planned_lifetime(&self, id: TensorId, props: &RegionProperties) -> Lifetime {
        if props.reuse {
            self.lifetimes[id]
        } else {
            COMMON_STEP
        }
    }

    /// The alignment of a region with `props` holding `tensors`.
    pub fn alignment(&self, tensors: &[TensorId], props: &RegionProperties) -> u64 {
        tensors.iter().map(|&id| self.model.tensors()[id].alignment).fold(props.alignment, u64::max)
    }

    /// Plans `tensors` (roots, in model order) as a region with `props`.
    pub fn plan(&mut self, name: &str, tensors: &[TensorId], props: &RegionProperties) -> Result<InstancePlan> {
        let alignment = self.alignment(tensors, props);
        let in_region = |e: Error| Error::new(e.status(), format!("region '{name}': {}", e.message()));
        let (offsets, peak, lower_bound, algorithm, proven_optimal) = if tensors.is_empty() {
            (Vec::new(), 0, 0, props.algorithm, true)
        } else {
            let mut planner = Planner::new();
            planner.set_algorithm(props.algorithm);
            planner.set_alignment(alignment)?;
            for &id in tensors {
                let size = self.model.tensors()[id].size;
                planner.add_buffer(size, self.planned_lifetime(id, props), None).map_err(in_region)?;
            }
            let started = Instant::now();
            let planned = planner.plan();
            self.planning += started.elapsed();
            let o = planned.map_err(in_region)?;
            (o.offsets.clone(), o.peak, o.lower_bound, o.algorithm, o.proven_optimal)
        };
        let size = region_size(name, peak, props, alignment)?;
        Ok(InstancePlan { offsets, peak, lower_bound, algorithm, proven_optimal, alignment, size })
    }
}

/// `align_up(front + bytes + reserved_back, alignment)`, where `front` is
/// [`front_bytes`].
pub fn region_size(name: &str, bytes: u64, props: &RegionProperties, alignment: u64) -> Result<u64> {
    front_bytes(props, alignment)?
        .checked_add(bytes)
        .and_then(|s| s.checked_add(props.reserved_back))
        .ok_or_else(|| {
            Error::overflow(format!(
                "region '{name}': reserved {} B + {bytes} B + reserved {} B overflow",
                props.reserved_front, props.reserved_back
            ))
        })
        .and_then(|s| align_up(s, alignment))
}

/// Where a region's tensors start: its reserved front bytes rounded up to
/// the plan's alignment, so that offsets planned at that alignment stay
/// aligned.
pub fn front_bytes(props: &RegionProperties, alignment: u64) -> Result<u64> {
    align_up(props.reserved_front, alignment)
}
