//! Placement algorithms behind one trait. A new algorithm is one file: a
//! type implementing [`PlacementAlgorithm`] plus a line in [`Algorithm`].
//!
//! Most heuristics are an *ordering* of the buffers plus a *placement rule*
//! (first fit or best fit) run by [`place_in_order`] over the shared
//! [`Occupancy`] structure, so they differ only in what makes them
//! different.
//!
//! Two modules are not algorithms but what several share: `portfolio`, the
//! heuristic stage (the best heuristic plan within a share of the work
//! budget) that `auto` and `exact` both start from, and `lift`, lifting a
//! buffer over the fixed buffers in its way. The modules form a tree (no
//! two import each other, directly or around a circle); what two need
//! lives below both:
//!
//! - `auto` uses `portfolio` and `exact`;
//! - `exact` uses `portfolio` and `lift`;
//! - `portfolio` uses `floor_first` and runs the other heuristics through
//!   [`Algorithm::implementation`];
//! - `floor_first` uses `lift`;
//! - every algorithm uses the shared items of this module (the trait,
//!   [`place_in_order`], [`peak_of`], ...), which name the algorithms only
//!   in [`Algorithm::implementation`].

mod auto;
mod conflict;
mod exact;
mod floor_first;
mod lifetime_first_fit;
mod lift;
mod linear;
mod live_step;
mod neighbours;
mod portfolio;
mod sequential;
mod size_best_fit;
mod size_first_fit;
mod tflm;

pub(crate) use tflm::replan as tflm_replan;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use super::algorithm::Algorithm;
use super::interval_set::Offset;
use super::occupancy::{Occupancy, Window};
use super::problem::Problem;

const AUTO_HEURISTICS: [Algorithm; 6] = [
    Algorithm::FloorFirst,
    Algorithm::LiveStep,
    Algorithm::SizeFirstFit,
    Algorithm::Conflict,
    Algorithm::LifetimeFirstFit,
    Algorithm::SizeBestFit,
];

impl Algorithm {
    /// Every algorithm, in numeric order.
    pub const fn all() -> &'static [Algorithm] {
        Algorithm::ALL
    }

    /// The heuristics `auto` tries, in this order: floor-first (capped, see
    /// the `portfolio` module), which often lands at the lower bound on real
    /// traces and leads on MiniMalloc's hard ones; live-step, which wins
    /// most often among the rest (so `auto` often stops after one or two
    /// runs at the lower bound); the slowest (best fit) last.
    pub const fn heuristics() -> [Algorithm; 6] {
        AUTO_HEURISTICS
    }

    /// For the heuristics that place the buffers one at a time, in an order
    /// of their own, by a fit rule: that order and rule.
    pub(super) fn placement_order(self, problem: &Problem) -> Option<(Vec<usize>, Fit)> {
        match self {
            Algorithm::LiveStep => Some((live_step::live_step_order(problem), Fit::First)),
            Algorithm::Conflict => Some((conflict::conflict_order(problem), Fit::First)),
            Algorithm::LifetimeFirstFit => Some((lifetime_first_fit::lifetime_order(problem), Fit::First)),
            Algorithm::SizeFirstFit => Some((size_first_fit::size_descending(problem), Fit::First)),
            Algorithm::SizeBestFit => Some((size_first_fit::size_descending(problem), Fit::Best)),
            _ => None,
        }
    }

    /// The implementation.
    pub fn implementation(self) -> &'static dyn PlacementAlgorithm {
        match self {
            Algorithm::Auto => &auto::Auto,
            Algorithm::Tflm => &tflm::Tflm,
            Algorithm::Linear => &linear::Linear,
            Algorithm::SizeFirstFit => &size_first_fit::SizeFirstFit,
            Algorithm::SizeBestFit => &size_best_fit::SizeBestFit,
            Algorithm::LifetimeFirstFit => &lifetime_first_fit::LifetimeFirstFit,
            Algorithm::LiveStep => &live_step::LiveStep,
            Algorithm::Conflict => &conflict::Conflict,
            Algorithm::Exact => &exact::Exact,
            Algorithm::FloorFirst => &floor_first::FloorFirst,
            Algorithm::Sequential => &sequential::Sequential,
        }
    }
}

/// Limits and signals a search honours. Heuristics finish in one pass and
/// only read `lower_bound`; `auto` and `exact` spend at most `work_limit`
/// work units and `node_limit` search nodes (both counted, so the plan
/// depends only on the input and the limits), and also stop at the
/// deadline or when `cancel` is set, returning their best plan so far.
///
/// A *work unit* is one step of real work, counted where it happens: in
/// the search, a node, each conflict-list entry its move visits, each
/// section its buffer spans, each frontier tree node an update or query
/// visits, each buffer ranked or listed as a child, each section resident
/// scanned for the section bound and each fresh undo-log entry, plus a
/// fixed charge per node and per floor raised; a heuristic in `auto`'s
/// first stage is charged an estimate from its buffer count, or what its
/// first fit counted where that is more (see `portfolio` and
/// [`place_in_order_counted`]). One unit costs about the same time on
/// small instances, large traces and dense random instances
/// (`BENCHMARKS.md`), so [`crate::plan::DEFAULT_WORK_LIMIT`] buys about as
/// long a plan on any of them.
#[derive(Clone, Debug)]
pub struct SearchLimits {
    /// The lower bound of the problem, so `auto` can stop early.
    pub lower_bound: u64,
    /// With a capacity, searching stops at the first plan that fits it.
    pub capacity: Option<u64>,
    /// An explicit wall-clock cap: when to give up and return the best
    /// plan so far (the one thing that makes the plan machine-dependent).
    pub deadline: Option<Instant>,
    /// At most this many search nodes.
    pub node_limit: Option<u64>,
    /// At most this many work units, heuristic stage and search together.
    pub work_limit: Option<u64>,
    /// Set from another thread to stop a search early.
    pub cancel: Option<Arc<AtomicBool>>,
    /// For tests: sleep this long at every stop check (about every 1024
    /// search nodes and between heuristics), to show that a slow machine
    /// gets the same plan.
    #[cfg(test)]
    pub drag: Option<Duration>,
    /// For tests: called at every clock check (where `drag` sleeps), so a
    /// test can act at a chosen check, such as cancelling from another
    /// thread while the search waits, with no clock involved.
    #[cfg(test)]
    pub on_check: Option<CheckHook>,
}

/// A test's action at every stop check of a search (see
/// [`SearchLimits::on_check`]).
#[cfg(test)]
#[derive(Clone)]
pub struct CheckHook(pub Arc<dyn Fn() + Send + Sync>);

#[cfg(test)]
impl std::fmt::Debug for CheckHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CheckHook")
    }
}

impl SearchLimits {
    /// Limits with no capacity, deadline, node or work limit or
    /// cancellation.
    pub fn unlimited(lower_bound: u64) -> Self {
        SearchLimits {
            lower_bound,
            capacity: None,
            deadline: None,
            node_limit: None,
            work_limit: None,
            cancel: None,
            #[cfg(test)]
            drag: None,
            #[cfg(test)]
            on_check: None,
        }
    }

    /// Limits with a time budget from now.
    pub fn with_budget(lower_bound: u64, budget: Duration) -> Self {
        SearchLimits { deadline: Some(Instant::now() + budget), ..SearchLimits::unlimited(lower_bound) }
    }

    /// Whether the search should stop now: cancelled, or past the deadline.
    pub fn should_stop(&self) -> bool {
        self.cancelled() || self.time_up()
    }

    /// Whether the cancel flag is set.
    pub fn cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// Whether the deadline (if any) has passed.
    pub fn time_up(&self) -> bool {
        #[cfg(test)]
        if let Some(drag) = self.drag {
            std::thread::sleep(drag);
        }
        #[cfg(test)]
        if let Some(hook) = &self.on_check {
            (hook.0)();
        }
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

/// What an algorithm returns: an offset per buffer (in the problem's order),
/// which algorithm produced it (`auto` reports the one that won) and what a
/// search proved on the way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Offset of each buffer.
    pub offsets: Vec<u64>,
    /// The algorithm that produced these offsets.
    pub algorithm: Algorithm,
    /// A search proved that no plan has a smaller peak.
    pub proven_optimal: bool,
    /// The best lower bound on the peak the algorithm proved (0: nothing
    /// beyond the problem's own bound).
    pub lower_bound: u64,
    /// Search nodes explored (0 for heuristics).
    pub nodes: u64,
    /// Work units spent (see [`SearchLimits`]; for a heuristic, those
    /// its placement counted, 0 where it counts none).
    pub work: u64,
    /// The deadline stopped `auto` or `exact` before they were done.
    pub time_limit_cut: bool,
}

impl Placement {
    /// A heuristic's plan: nothing proven, no search.
    pub fn heuristic(offsets: Vec<u64>, algorithm: Algorithm) -> Self {
        Placement {
            offsets,
            algorithm,
            proven_optimal: false,
            lower_bound: 0,
            nodes: 0,
            work: 0,
            time_limit_cut: false,
        }
    }

    /// A heuristic's plan from [`place_in_order_counted`]: the offsets and
    /// the work units they took.
    pub fn counted((offsets, work): (Vec<u64>, u64), algorithm: Algorithm) -> Self {
        Placement { work, ..Placement::heuristic(offsets, algorithm) }
    }
}

/// A planning algorithm. Implementations must return a valid plan (no two
/// buffers live at one step overlap, fixed buffers keep their offsets, every
/// offset aligned) for any [`Problem`] whose fixed buffers do not overlap
/// each other (the planner hands them such a problem; see `plan::fixed`).
pub trait PlacementAlgorithm: Sync {
    /// Which algorithm this is.
    fn algorithm(&self) -> Algorithm;
    /// Places every buffer of `problem`.
    fn place(&self, problem: &Problem, limits: &SearchLimits) -> Placement;
    /// [`PlacementAlgorithm::place`] as the algorithm a planner was asked
    /// for, where no budget counts its work: the same plan, by the fastest
    /// way there is (inside `auto`, a heuristic's work is counted in first
    /// fit's visits to the occupancy, and its plans depend on that count).
    fn place_alone(&self, problem: &Problem, limits: &SearchLimits) -> Placement {
        self.place(problem, limits)
    }
}

/// How a buffer's offset is chosen among the free gaps.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Fit {
    /// The lowest offset that fits.
    First,
    /// The gap with the least slack.
    Best,
}

/// Places fixed buffers at their offsets, then the others in `order` (which
/// must list every non-fixed buffer exactly once) by the `fit` rule.
/// Buffers that occupy nothing (size zero or never live) get offset 0.
pub fn place_in_order(problem: &Problem, order: &[usize], fit: Fit) -> Vec<u64> {
    place_in_order_counted(problem, order, fit).0
}

/// Work units per interval set [`place_in_order`] reads or writes (see
/// [`Occupancy::visits`]): a lookup or insert in an ordered map, in the
/// search's units.
const VISIT_WORK: u64 = 10;

/// [`place_in_order`], and the work units it spent (the interval sets it
/// visited): what `auto`'s heuristic stage is charged for the run.
pub fn place_in_order_counted(problem: &Problem, order: &[usize], fit: Fit) -> (Vec<u64>, u64) {
    match place_in_order_paced(problem, order, fit, u64::MAX) {
        Ok(placed) => placed,
        Err(_) => unreachable!("no pace is exceeded at u64::MAX units a buffer"),
    }
}

/// A run [`place_in_order_paced`] gave up: the work units it had counted.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Abandoned {
    /// Work units counted.
    pub work: u64,
    /// Buffers placed.
    pub placed: u64,
}

/// Buffers placed before [`place_in_order_paced`] first compares its count
/// with the pace: the first placements, in an empty occupancy, say little
/// about what the rest will cost.
const PACE_GRACE: u64 = 16;

/// [`place_in_order_counted`] that gives up as soon as the work it has
/// counted passes `pace` units for each buffer placed so far (after
/// [`PACE_GRACE`] buffers): a heuristic charged `pace` a buffer in advance
/// never costs much more than that. Where the free space breaks into many
/// pieces (random sizes, a thousand buffers live at a step) first fit
/// costs several times what it costs on traces, and the average shows it
/// after a fifth of the buffers or so.
pub fn place_in_order_paced(
    problem: &Problem,
    order: &[usize],
    fit: Fit,
    pace: u64,
) -> Result<(Vec<u64>, u64), Abandoned> {
    // No end first fit or best fit reaches passes the highest fixed end
    // plus the sizes of every buffer placed (each lands at most on top of
    // what is there): where that fits a `u32`, so do all the sets hold.
    let (mut fixed_top, mut sizes) = (0u128, 0u128);
    for b in problem.buffers().iter().filter(|b| b.occupies()) {
        sizes += u128::from(b.size);
        if let Some(offset) = b.fixed_offset {
            fixed_top = fixed_top.max(u128::from(offset) + u128::from(b.size));
        }
    }
    if fixed_top + sizes <= u128::from(u32::MAX) {
        place_with::<u32>(problem, order, fit, pace)
    } else {
        place_with::<u64>(problem, order, fit, pace)
    }
}

/// [`place_in_order_paced`] with the sets storing offsets as `T`.
fn place_with<T: Offset>(
    problem: &Problem,
    order: &[usize],
    fit: Fit,
    pace: u64,
) -> Result<(Vec<u64>, u64), Abandoned> {
    let buffers = problem.buffers();
    let mut occupancy =
        Occupancy::<T>::new(buffers.iter().filter(|b| b.occupies()).map(|b| (b.lifetime.start, b.lifetime.end)));
    let mut offsets = vec![0u64; buffers.len()];
    let mut w = Window::default();
    for (i, b) in buffers.iter().enumerate() {
        if let Some(offset) = b.fixed_offset {
            offsets[i] = offset;
            if b.occupies() {
                assert!(occupancy.set_window(b.lifetime.start, b.lifetime.end, &mut w), "occupying buffer");
                occupancy.insert(&w, offset, b.size);
            }
        }
    }
    let mut placed = 0u64;
    for &i in order {
        let b = &buffers[i];
        debug_assert!(b.fixed_offset.is_none());
        if !b.occupies() {
            continue;
        }
        assert!(occupancy.set_window(b.lifetime.start, b.lifetime.end, &mut w), "occupying buffer");
        let offset = match fit {
            Fit::First => occupancy.first_fit(&mut w, b.size, 0),
            Fit::Best => occupancy.best_fit(&mut w, b.size),
        };
        occupancy.insert(&w, offset, b.size);
        offsets[i] = offset;
        placed += 1;
        let work = occupancy.visits().saturating_mul(VISIT_WORK);
        if placed > PACE_GRACE && work > pace.saturating_mul(placed) {
            return Err(Abandoned { work, placed });
        }
    }
    let work = occupancy.visits().saturating_mul(VISIT_WORK);
    Ok((offsets, work))
}

/// First fit in `order` as a chosen algorithm runs it, where no budget
/// counts its work (see [`PlacementAlgorithm::place_alone`]): through each
/// buffer's neighbours where those lists are short, else over the
/// occupancy. The same offsets as [`place_in_order`] either way.
pub(super) fn first_fit_alone(problem: &Problem, order: &[usize]) -> Vec<u64> {
    neighbours::first_fit(problem, order).unwrap_or_else(|| place_in_order(problem, order, Fit::First))
}

/// Indices of the buffers the planner must place (not fixed).
pub fn unfixed(problem: &Problem) -> Vec<usize> {
    problem.buffers().iter().enumerate().filter(|(_, b)| b.fixed_offset.is_none()).map(|(i, _)| i).collect()
}

/// The peak of a placement: highest `offset + size` over occupying buffers.
pub fn peak_of(problem: &Problem, offsets: &[u64]) -> u64 {
    problem.buffers().iter().zip(offsets).filter(|(b, _)| b.occupies()).map(|(b, &o)| o + b.size).max().unwrap_or(0)
}

#[cfg(test)]
pub(crate) mod tests;
