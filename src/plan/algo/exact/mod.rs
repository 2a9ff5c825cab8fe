//! `exact`: a complete search for the smallest peak (or, with a capacity,
//! for any plan that fits it), anytime and deterministic.
//!
//! How it runs:
//! 1. The heuristics give a first plan (the incumbent). If it reaches the
//!    lower bound (or fits the capacity) the search is not needed.
//! 2. The problem is split into parts no lifetime crosses; each is searched
//!    on its own (see [`search`]) and keeps its best plan, so a part that
//!    already meets a target is not searched again.
//! 3. Rounds of decision searches, each with a node budget that doubles per
//!    round: "is there a plan with peak ≤ T?" for T in turn at the proven
//!    lower bound, halfway to the incumbent, and just below the incumbent. A found plan becomes the
//!    incumbent; a search that completes without one raises the proven
//!    lower bound to T + 1. Each round tries every buffer preorder, since
//!    an order that stalls on one instance often flies on another.
//! 4. It stops when the incumbent meets the proven bound (optimal), fits the
//!    capacity, or on the node limit, the work limit, the deadline or
//!    cancellation; the incumbent is returned in every case, so the plan is
//!    always valid.
//!
//! Everything is counted in nodes and work units, never in time, so the
//! same input and limits give the same plan (an explicit deadline and
//! cancellation only cut a run short, and the result says so).

mod frontier;
mod instance;
mod order;
mod pending;
mod search;

use super::portfolio::best_heuristic;
use super::{peak_of, Algorithm, Placement, PlacementAlgorithm, SearchLimits};
use crate::plan::problem::Problem;
use instance::{split, Part};
use order::PREORDERS;
use search::{Search, Verdict};

/// The exact search.
pub struct Exact;

impl PlacementAlgorithm for Exact {
    fn algorithm(&self) -> Algorithm {
        Algorithm::Exact
    }

    fn place(&self, problem: &Problem, limits: &SearchLimits) -> Placement {
        let incumbent = best_heuristic(problem, limits);
        // The plan is exact's answer even when its first step (the
        // heuristics) already settled it.
        Placement { algorithm: Algorithm::Exact, ..improve(problem, incumbent, limits) }
    }
}

/// Node budget of the first round, per buffer of the largest part.
const FIRST_BUDGET_PER_BUFFER: u64 = 2;

/// Runs the search from `incumbent` (a valid plan of `problem`) and returns
/// the best plan found, never a worse one. The work limit covers the
/// incumbent's `work` too (the heuristic stage's charge).
pub fn improve(problem: &Problem, incumbent: Placement, limits: &SearchLimits) -> Placement {
    let fixed_top = problem
        .buffers()
        .iter()
        .filter(|b| b.occupies() && b.fixed_offset.is_some())
        .map(|b| b.fixed_offset.expect("fixed") + b.size)
        .max()
        .unwrap_or(0);
    let mut proven = limits.lower_bound.max(fixed_top).max(incumbent.lower_bound);
    let mut best = incumbent.offsets;
    let mut best_peak = peak_of(problem, &best);
    let mut nodes = incumbent.nodes;
    let mut work = incumbent.work;
    let mut algorithm = incumbent.algorithm;
    let finished = |peak: u64, proven: u64| peak <= proven || limits.capacity.is_some_and(|c| peak <= c);
    let work_limit = limits.work_limit.unwrap_or(u64::MAX);
    if finished(best_peak, proven) || work >= work_limit {
        return Placement { offsets: best, proven_optimal: best_peak <= proven, lower_bound: proven, ..incumbent };
    }
    let parts = split(problem);
    // Building the conflict lists is a search cost like any other (a
    // fifth of the search's time on PanGu's 24 M entries).
    let built = match &parts {
        Ok(parts) => parts.iter().map(|p| p.conflict_entries() + p.len()).sum::<usize>(),
        Err(_) => problem.len(),
    };
    work = work.saturating_add(built as u64);
    let Ok(parts) = parts else {
        return Placement {
            offsets: best,
            proven_optimal: best_peak <= proven,
            lower_bound: proven,
            work,
            ..incumbent
        };
    };
    // Each part's best plan so far, as (peak, local offsets).
    let mut part_best: Vec<(u64, Vec<u64>)> = parts
        .iter()
        .map(|part| {
            let offsets: Vec<u64> = part.members.iter().map(|&i| best[i]).collect();
            let peak = part.peak_of(&offsets);
            (peak, offsets)
        })
        .collect();
    let largest = parts.iter().map(Part::len).max().unwrap_or(0) as u64;
    let unit = (largest * FIRST_BUDGET_PER_BUFFER).max(1000);
    // Which stop it was: only the deadline makes the plan machine-dependent.
    let cut = std::cell::Cell::new(incumbent.time_limit_cut);
    let mut stop = || {
        let up = limits.time_up();
        cut.set(cut.get() || up);
        up || limits.cancelled()
    };
    let node_limit = limits.node_limit.unwrap_or(u64::MAX);
    let mut spent = 0u64;
    let bases = PREORDERS.len() as u64;

    // One search per (target kind, part, preorder): the memo of failures
    // only carries over to targets no higher, so the searches at the proven
    // bound and those halfway up keep separate ones.
    let new_searches = || -> Vec<Vec<Search>> {
        parts.iter().map(|part| PREORDERS.iter().map(|&order| Search::new(part, order)).collect()).collect()
    };
    let mut searches = [new_searches(), new_searches(), new_searches()];
    let mut run = 0u64;
    while !finished(best_peak, proven) {
        let mut targets = match limits.capacity {
            Some(c) => vec![c],
            None => vec![proven, proven + (best_peak - 1 - proven) / 2, best_peak - 1],
        };
        targets.retain(|&t| t >= proven && t < best_peak);
        let left = node_limit.saturating_sub(spent);
        let work_left = work_limit.saturating_sub(work);
        if targets.is_empty() || left == 0 || work_left == 0 || stop() {
            break;
        }
        // Kinds: reach the proven bound (optimality), halve the gap, or just
        // improve on the incumbent (which keeps large instances moving).
        let kind = if limits.capacity.is_some() { 0 } else { (run / bases) as usize % 3 };
        let target = targets[kind];
        // Each round gives every preorder twice the budget of the last; the
        // memo of each (part, preorder) search keeps what earlier rounds
        // proved, so a round re-walks only the undecided part of its tree.
        let budget = unit << (run / bases).min(40);
        let mut verdict = Verdict::Found(Vec::new());
        for (p, part) in parts.iter().enumerate() {
            if part_best[p].0 <= target {
                continue;
            }
            let search = &mut searches[kind][p][(run % bases) as usize];
            let (before, work_before) = (search.nodes, search.work);
            let outcome = search.run(
                target,
                budget.min(node_limit.saturating_sub(spent)),
                work_limit.saturating_sub(work),
                &mut stop,
            );
            spent += search.nodes - before;
            work += search.work - work_before;
            match outcome {
                Verdict::Found(offsets) => {
                    let peak = part.peak_of(&offsets);
                    part_best[p] = (peak, offsets);
                }
                other => {
                    verdict = other;
                    break;
                }
            }
        }
        run += 1;
        match verdict {
            Verdict::Found(_) => {
                for (part, (_, offsets)) in parts.iter().zip(&part_best) {
                    for (&i, &o) in part.members.iter().zip(offsets) {
                        best[i] = o;
                    }
                }
                best_peak = peak_of(problem, &best).max(fixed_top);
                algorithm = Algorithm::Exact;
            }
            Verdict::Infeasible => {
                proven = proven.max(target + 1);
            }
            Verdict::Stopped => {}
        }
    }
    nodes += spent;
    Placement {
        offsets: best,
        algorithm,
        proven_optimal: best_peak <= proven,
        lower_bound: proven,
        nodes,
        work,
        time_limit_cut: cut.get(),
    }
}

#[cfg(test)]
mod tests;
