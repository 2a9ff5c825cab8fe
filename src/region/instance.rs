//! Planning one region instance through [`crate::plan::aligned`].
//!
//! The planner gets the instance's root tensors in model order, each live
//! over its lifetime on the run's timeline, or, with reuse off, all live
//! over one common step (so none share bytes; `sequential` then stacks them
//! in model order, Glow's constants layout). Sizes are rounded up to the
//! region's alignment; a tensor aligned above it gets an offset that is a
//! multiple of its own alignment without its size being rounded up to it
//! (see `plan::aligned`). The region's base address is aligned to the
//! largest alignment of the region and its tensors, so that every address
//! is aligned as its offset is.

use std::time::{Duration, Instant};

use super::description::RegionProperties;
use super::model::{Model, TensorId};
use crate::plan::aligned::{plan_aligned, AlignedBuffer};
use crate::plan::{align_up, Algorithm, Lifetime};
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
    /// A lower bound on any plan's peak, alignments counted.
    pub lower_bound: u64,
    /// The algorithm that produced it.
    pub algorithm: Algorithm,
    /// No plan can be smaller.
    pub proven_optimal: bool,
    /// Alignment of the region's base address: the region's own or its
    /// largest tensor's.
    pub alignment: u64,
    /// Reserved front, peak, reserved back, rounded up to the region's own
    /// alignment ([`region_size`]).
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

    /// The alignment of the base address of a region with `props` holding
    /// `tensors`: the largest of the region's and theirs.
    pub fn alignment(&self, tensors: &[TensorId], props: &RegionProperties) -> u64 {
        tensors.iter().map(|&id| self.model.tensors()[id].alignment).fold(props.alignment, u64::max)
    }

    /// `tensors` as the planner sees them in a region with `props`.
    pub fn buffers(&self, tensors: &[TensorId], props: &RegionProperties) -> Vec<AlignedBuffer> {
        tensors
            .iter()
            .map(|&id| {
                let t = &self.model.tensors()[id];
                AlignedBuffer { size: t.size, lifetime: self.planned_lifetime(id, props), alignment: t.alignment }
            })
            .collect()
    }

    /// Plans `tensors` (roots, in model order) as a region with `props`.
    pub fn plan(&mut self, name: &str, tensors: &[TensorId], props: &RegionProperties) -> Result<InstancePlan> {
        let alignment = self.alignment(tensors, props);
        let in_region = |e: Error| Error::new(e.status(), format!("region '{name}': {}", e.message()));
        if tensors.is_empty() {
            let size = region_size(name, 0, props, alignment)?;
            let (peak, lower_bound, algorithm) = (0, 0, props.algorithm);
            return Ok(InstancePlan {
                offsets: Vec::new(),
                peak,
                lower_bound,
                algorithm,
                proven_optimal: true,
                alignment,
                size,
            });
        }
        // The planner's own overflow error cannot say which tensor it was.
        for &id in tensors {
            let t = &self.model.tensors()[id];
            align_up(t.size, props.alignment).map_err(|e| {
                Error::new(e.status(), format!("region '{name}': tensor {}: {}", t.describe(), e.message()))
            })?;
        }
        let started = Instant::now();
        let planned = plan_aligned(props.algorithm, props.alignment, &self.buffers(tensors, props));
        self.planning += started.elapsed();
        let p = planned.map_err(in_region)?;
        let size = region_size(name, p.peak, props, alignment)?;
        Ok(InstancePlan {
            offsets: p.offsets,
            peak: p.peak,
            lower_bound: p.lower_bound,
            algorithm: p.algorithm,
            proven_optimal: p.proven_optimal,
            alignment,
            size,
        })
    }
}

/// `align_up(front + bytes + reserved_back, props.alignment)`, where
/// `front` is [`front_bytes`] at `alignment` (the base address's): a
/// tensor's own alignment places its offset, it does not round the
/// region's size.
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
        .and_then(|s| align_up(s, props.alignment))
}

/// Where a region's tensors start: its reserved front bytes rounded up to
/// the plan's alignment, so that offsets planned at that alignment stay
/// aligned.
pub fn front_bytes(props: &RegionProperties, alignment: u64) -> Result<u64> {
    align_up(props.reserved_front, alignment)
}
