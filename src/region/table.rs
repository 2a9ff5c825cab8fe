//! The region table: every tensor of a model in exactly one region, with
//! its offset and address; every region planned once through the planner.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::assign::{assign, Roots};
use super::build::Work;
use super::config::RegionConfig;
use super::instance::PlanContext;
use super::model::{Model, TensorId};
use super::tensor::TensorKind;
use super::timeline::lifetimes;
use crate::plan::{Algorithm, Lifetime};
use crate::status::Result;

/// One region instance: a description's shared region, or one of its
/// per-tensor regions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionInstance {
    /// The description's name; for a per-tensor region
    /// `<description>/<tensor>`.
    pub name: String,
    /// Index of its description in the configuration's match order.
    pub description: usize,
    /// Its description's id.
    pub description_id: u32,
    /// Its memory level.
    pub level: String,
    /// Its level's rank.
    pub level_rank: u32,
    /// Where it starts in its level.
    pub base_address: u64,
    /// Its description fixes its base address (it was not laid out after
    /// the level's other regions).
    pub fixed_base: bool,
    /// Bytes it takes: reserved front, the plan's peak, reserved back,
    /// rounded up to its description's alignment (a tensor's own alignment
    /// places the tensor and the region's base, not the size).
    pub size: u64,
    /// The plan's peak: its tensors only, each size rounded up to the
    /// region's alignment.
    pub peak: u64,
    /// A lower bound on any plan of its tensors, their own alignments
    /// counted.
    pub lower_bound: u64,
    /// The algorithm that produced its plan (for `auto`, the winner).
    pub algorithm: Algorithm,
    /// No plan of its tensors can be smaller.
    pub proven_optimal: bool,
    /// Its description's attributes (`key`, `value`), in the order given:
    /// the table keeps them, so they outlive the configuration.
    pub attributes: Vec<(String, String)>,
    /// Its tensors (views included), in the order added to the model.
    pub tensors: Vec<TensorId>,
}

/// Where one tensor went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorPlacement {
    /// The tensor's name (shared with the model's tensor, not copied).
    pub name: Arc<str>,
    /// Its function (shared, like the name).
    pub function: Arc<str>,
    /// Its kind.
    pub kind: TensorKind,
    /// Its size.
    pub size: u64,
    /// Index of its region in [`RegionTable::regions`].
    pub region: usize,
    /// Its offset inside the region (reserved front bytes included).
    pub offset: u64,
    /// Its address in its level: the region's base address plus the offset.
    pub address: u64,
    /// It was moved out of the region its rule chose, which exceeded its
    /// capacity.
    pub spilled: bool,
    /// The steps it is live, on the run's timeline (functions one after
    /// another, weights the whole run; a view its own, an origin covering
    /// its views'): what the picture draws it over.
    pub lifetime: Lifetime,
}

/// One tensor moved out of the region its rule chose, and why: one record
/// per tensor, however many spill regions it passed through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpillRecord {
    /// The tensor moved.
    pub tensor: TensorId,
    /// The region (instance index) its rule chose.
    pub from: usize,
    /// The region (instance index) it ended in.
    pub to: usize,
    /// The spill regions it passed through between `from` and `to`, in
    /// order (each over its capacity in turn); empty when it moved once.
    pub via: Vec<usize>,
    /// Why, with figures: the region's need and capacity, and the tensor's
    /// lifetime pressure; one such reason per move, joined by "; then ".
    pub reason: String,
}

/// One memory level as laid out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelLayout {
    /// Its name.
    pub name: String,
    /// Its rank.
    pub rank: u32,
    /// The lowest base address of its regions (0 when laid out from 0; an
    /// SRAM bank at 0x20000000 starts there).
    pub start: u64,
    /// The highest end address of its regions: the bytes the level needs
    /// from address 0 (not its size: see [`LevelLayout::span`]).
    pub size: u64,
}

impl LevelLayout {
    /// The bytes from `start` to the highest end address: the level's size
    /// in the text and JSON reports ("2368 B from 0x20000000").
    pub fn span(&self) -> u64 {
        self.size.saturating_sub(self.start)
    }
}

/// What building a table cost, for benchmarks (never part of the table,
/// whose contents depend only on the input).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildTimings {
    /// The whole build.
    pub total: Duration,
    /// Inside the planner (`Planner::plan`), over every region.
    pub planning: Duration,
}

/// Every tensor's region, offset and address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionTable {
    /// The memory levels used, by rank, then name.
    pub levels: Vec<LevelLayout>,
    /// The region instances, by level rank, then by layout order.
    pub regions: Vec<RegionInstance>,
    /// One per model tensor, in model order.
    pub placements: Vec<TensorPlacement>,
    /// The tensors moved by spilling, one record each, in the order they
    /// first moved.
    pub spills: Vec<SpillRecord>,
}

impl RegionTable {
    /// Builds the table of `model` under `config`. Errors, building
    /// nothing, on: a tensor no rule matches (naming it and the rules
    /// tried); an invalid configuration ([`RegionConfig::validate`]); a
    /// region over its capacity without a spill region, or whose spill
    /// chain runs out (requested, available and missing bytes); fixed
    /// bases that overlap in one level.
    ///
    /// Semantics (the modules named hold the details): each tensor that is
    /// neither a view nor a weight seen again by name goes to the first
    /// description whose rule matches (`assign`); functions run one after
    /// another (`timeline`); each region instance is planned once through
    /// [`crate::plan::Planner`] (`instance`), tensors moving to the spill
    /// region while it exceeds its capacity (`spill`); levels are laid out
    /// (`layout`). The per-tensor instances of a description with a base
    /// address are stacked from that address, in model order, each at its
    /// alignment.
    pub fn build(model: &Model, config: &RegionConfig) -> Result<RegionTable> {
        Self::build_timed(model, config).map(|(table, _)| table)
    }

    /// [`RegionTable::build`], also saying how long it took and how much of
    /// that was planning.
    pub fn build_timed(model: &Model, config: &RegionConfig) -> Result<(RegionTable, BuildTimings)> {
        let started = Instant::now();
        config.validate()?;
        let roots = Roots::resolve(model);
        let chosen = assign(model, config, &roots)?;
        let lifetimes = lifetimes(model, &roots)?;
        let mut work = Work::new(model, config);
        for (id, d) in chosen.iter().enumerate() {
            if let Some(d) = *d {
                work.take(d, id);
            }
        }
        let mut ctx = PlanContext { model, lifetimes: &lifetimes, planning: Duration::ZERO };
        let fitted = work.fit_all(&mut ctx)?;
        let table = work.finish(&roots, &lifetimes, fitted)?;
        Ok((table, BuildTimings { total: started.elapsed(), planning: ctx.planning }))
    }

    /// The index of the region instance named `name`.
    pub fn find_region(&self, name: &str) -> Option<usize> {
        self.regions.iter().position(|r| r.name == name)
    }
}

#[cfg(test)]
mod tests;
