//! Buffers that each need their own alignment, at least the block's (a
//! tensor aligned to 4096 in a region aligned to 64), planned through
//! [`Planner`] without rounding every size up to the largest alignment.
//!
//! Two buffers aligned to `a` never share an `a`-sized cell of the block:
//! the higher one starts at a multiple of `a` at or above the lower one's
//! end. So among the buffers aligned to `a` or more, sizes rounded up to
//! `a` lose nothing, and the bytes up to the next multiple of `a` after a
//! buffer are left only to buffers of smaller alignment. Planning goes in
//! rounds, the largest alignment first: each round plans the buffers of one
//! alignment at that alignment, with those of the earlier rounds fixed
//! where they went; the last round plans the rest at the block's alignment.
//! Every round is one [`Planner`] run with every algorithm's guarantees, so
//! the plan is valid; sizes count rounded up to the block's alignment only.
//!
//! A later round cannot move what an earlier one fixed, so the rounds'
//! plan is kept only when it is no larger than planning everything at the
//! largest alignment (the plan before rounds existed), and a plan is
//! proven optimal only where its peak meets [`aligned_lower_bound`].
//! Without a buffer aligned above the block there is one round, exactly a
//! plain [`Planner`] run. Costs: one [`Planner`] run per distinct
//! alignment above the block's, plus two; the bound is O(n log n) per such
//! alignment.

use std::collections::BTreeMap;

use super::{align_up, check_alignment, lower_bound, Algorithm, Buffer, Lifetime, Planner};
use crate::status::Result;

/// One buffer to plan, with the alignment its offset needs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AlignedBuffer {
    /// Bytes, not rounded.
    pub size: u64,
    /// When it is live.
    pub lifetime: Lifetime,
    /// The alignment its offset needs: a power of two; at or below the
    /// block's alignment it needs only the block's.
    pub alignment: u64,
}

/// A plan of aligned buffers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlignedPlan {
    /// Each buffer's offset, in the order given, a multiple of the larger of
    /// its alignment and the block's.
    pub offsets: Vec<u64>,
    /// Highest `offset + size` with sizes rounded up to the block's
    /// alignment: the bytes the block needs.
    pub peak: u64,
    /// [`aligned_lower_bound`] of the buffers: no plan can be smaller.
    pub lower_bound: u64,
    /// The algorithm that placed the most buffers (for `auto`, that
    /// round's winner).
    pub algorithm: Algorithm,
    /// No plan can be smaller: the peak meets the lower bound, or, in a
    /// single round, the planner proved it.
    pub proven_optimal: bool,
}

/// Plans `buffers` with `algorithm` in a block aligned to `alignment`, each
/// offset also a multiple of its buffer's alignment. Errors: an alignment
/// that is not a power of two (`InvalidArgument`); sizes whose sum could
/// overflow 64 bits (`Overflow`, as [`Planner::add_buffer`]).
pub fn plan_aligned(algorithm: Algorithm, alignment: u64, buffers: &[AlignedBuffer]) -> Result<AlignedPlan> {
    check_alignment(alignment)?;
    for b in buffers {
        check_alignment(b.alignment)?;
    }
    let need = |b: &AlignedBuffer| b.alignment.max(alignment);
    let mut rounds: Vec<u64> = buffers.iter().map(need).filter(|&a| a > alignment).collect();
    rounds.sort_unstable_by(|a, b| b.cmp(a));
    rounds.dedup();
    let lower_bound = aligned_lower_bound(alignment, buffers)?;
    let Some(&largest) = rounds.first() else {
        let (offsets, round) = run(algorithm, alignment, buffers, &vec![None; buffers.len()], |_| true)?;
        return Ok(AlignedPlan {
            offsets: offsets.into_iter().map(|o| o.expect("planned")).collect(),
            peak: round.peak,
            lower_bound,
            algorithm: round.algorithm,
            proven_optimal: round.proven_optimal || round.peak == lower_bound,
        });
    };
    rounds.push(alignment);
    let mut fixed: Vec<Option<u64>> = vec![None; buffers.len()];
    let mut winner = (0usize, algorithm);
    for &a in &rounds {
        // The last round (`a` the block's alignment) takes every buffer
        // needing no more than the block's.
        let this_round = |b: &AlignedBuffer| need(b) == a;
        let (offsets, round) = run(algorithm, a, buffers, &fixed, this_round)?;
        let placed = buffers.iter().filter(|b| this_round(b)).count();
        if placed > winner.0 {
            winner = (placed, round.algorithm);
        }
        for (slot, (b, offset)) in fixed.iter_mut().zip(buffers.iter().zip(offsets)) {
            if this_round(b) {
                *slot = offset;
            }
        }
    }
    let offsets: Vec<u64> = fixed.into_iter().map(|o| o.expect("every buffer is placed in some round")).collect();
    let peak = peak_of(alignment, buffers, &offsets)?;
    // The plan before rounds: every size rounded up to the largest
    // alignment, so every offset is aligned for every buffer. Sizes so
    // rounded may pass 64 bits where the rounds' do not: then the rounds'
    // plan stands alone.
    let (mut offsets, mut peak, mut algorithm) = (offsets, peak, winner.1);
    if let Ok((whole, round)) = run(algorithm, largest, buffers, &vec![None; buffers.len()], |_| true) {
        let whole: Vec<u64> = whole.into_iter().map(|o| o.expect("planned")).collect();
        let whole_peak = peak_of(alignment, buffers, &whole)?;
        if whole_peak < peak {
            (offsets, peak, algorithm) = (whole, whole_peak, round.algorithm);
        }
    }
    Ok(AlignedPlan { offsets, peak, lower_bound, algorithm, proven_optimal: peak == lower_bound })
}

/// What one round's planner said.
struct Round {
    peak: u64,
    algorithm: Algorithm,
    proven_optimal: bool,
}

/// One planner run at `alignment`: the buffers with a `fixed` offset stay
/// there, those for which `plan` holds are placed, the others are left out.
/// Returns each buffer's offset (`None` for those left out).
fn run(
    algorithm: Algorithm,
    alignment: u64,
    buffers: &[AlignedBuffer],
    fixed: &[Option<u64>],
    plan: impl Fn(&AlignedBuffer) -> bool,
) -> Result<(Vec<Option<u64>>, Round)> {
    let mut planner = Planner::new();
    planner.set_algorithm(algorithm);
    planner.set_alignment(alignment)?;
    let mut index = vec![None; buffers.len()];
    for (i, (b, &at)) in buffers.iter().zip(fixed).enumerate() {
        if at.is_some() || plan(b) {
            index[i] = Some(planner.add_buffer(b.size, b.lifetime, at)?);
        }
    }
    let o = planner.plan()?;
    let offsets = index.iter().map(|i| i.map(|i| o.offsets[i])).collect();
    Ok((offsets, Round { peak: o.peak, algorithm: o.algorithm, proven_optimal: o.proven_optimal }))
}

/// Highest `offset + size` of the buffers that occupy memory, sizes rounded
/// up to `alignment`.
fn peak_of(alignment: u64, buffers: &[AlignedBuffer], offsets: &[u64]) -> Result<u64> {
    let mut peak = 0;
    for (b, &o) in buffers.iter().zip(offsets) {
        let size = align_up(b.size, alignment)?;
        if size > 0 && !b.lifetime.is_empty() {
            peak = peak.max(o + size);
        }
    }
    Ok(peak)
}

/// A lower bound on the peak of any plan of `buffers` in a block aligned to
/// `alignment` (sizes rounded up to it): the larger of the bytes live at one
/// step, and, for each alignment `a` above the block's, at each step, what
/// the buffers aligned to `a` or more need there. Those `k` buffers take
/// `C` distinct `a`-sized cells in all (buffer `i` takes `ceil(s_i / a)`,
/// never shared), so the highest of them, `j`, ends at or above
/// `a * (C - ceil(s_j / a)) + s_j`, which is at least `a * C` less the
/// largest padding `a * ceil(s_i / a) - s_i` among them. O(n log n) per
/// alignment above the block's. Errors (`Overflow`) on a size that cannot
/// be rounded up within 64 bits.
pub fn aligned_lower_bound(alignment: u64, buffers: &[AlignedBuffer]) -> Result<u64> {
    let rounded = buffers
        .iter()
        .map(|b| Ok(Buffer { size: align_up(b.size, alignment)?, lifetime: b.lifetime, fixed_offset: None }))
        .collect::<Result<Vec<Buffer>>>()?;
    let mut bound = u128::from(lower_bound(&rounded).bytes);
    let mut classes: Vec<u64> = buffers.iter().map(|b| b.alignment).filter(|&a| a > alignment).collect();
    classes.sort_unstable();
    classes.dedup();
    for a in classes {
        let a128 = u128::from(a);
        // (time, is_start, cells, padding): ends before starts at one time,
        // as lifetimes are half-open.
        let mut events: Vec<(i64, bool, u128, u128)> = Vec::new();
        for (b, r) in buffers.iter().zip(&rounded) {
            if b.alignment >= a && r.occupies() {
                let cells = u128::from(r.size).div_ceil(a128);
                let padding = cells * a128 - u128::from(r.size);
                events.push((r.lifetime.start, true, cells, padding));
                events.push((r.lifetime.end, false, cells, padding));
            }
        }
        events.sort_unstable_by_key(|&(t, is_start, _, _)| (t, is_start));
        let (mut cells, mut paddings) = (0u128, BTreeMap::<u128, usize>::new());
        for (_, is_start, c, padding) in events {
            if is_start {
                cells += c;
                *paddings.entry(padding).or_default() += 1;
                let largest = paddings.keys().next_back().copied().unwrap_or(0);
                bound = bound.max(cells * a128 - largest);
            } else {
                cells -= c;
                let n = paddings.get_mut(&padding).expect("a live buffer's padding");
                *n -= 1;
                if *n == 0 {
                    paddings.remove(&padding);
                }
            }
        }
    }
    Ok(u64::try_from(bound).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::validate;

    fn b(size: u64, start: i64, end: i64, alignment: u64) -> AlignedBuffer {
        AlignedBuffer { size, lifetime: Lifetime::half_open(start, end).unwrap(), alignment }
    }

    #[test]
    fn two_buffers_aligned_far_above_the_block_take_one_cell_each_not_their_alignment() {
        // Two 100 B buffers live together, each aligned to 4096, in a block
        // aligned to 64: 0 and 4096, ending at 4096 + 128.
        let p = plan_aligned(Algorithm::Sequential, 64, &[b(100, 0, 1, 4096), b(100, 0, 1, 4096)]).unwrap();
        assert_eq!(p.offsets, vec![0, 4096]);
        assert_eq!((p.peak, p.lower_bound, p.proven_optimal), (4224, 4224, true));
        // Alone, a buffer takes its size, whatever its alignment.
        let p = plan_aligned(Algorithm::Auto, 64, &[b(10, 0, 1, 1024)]).unwrap();
        assert_eq!((p.offsets[0], p.peak, p.lower_bound, p.proven_optimal), (0, 64, 64, true));
    }

    #[test]
    fn smaller_buffers_fill_the_padding_after_an_aligned_one() {
        // 100 B at 4096 and two 64 B at 64, all live together: the small
        // ones go after the aligned one's 128 B, not after 4096.
        let bs = [b(64, 0, 2, 1), b(100, 0, 2, 4096), b(64, 1, 2, 64)];
        let p = plan_aligned(Algorithm::Auto, 64, &bs).unwrap();
        assert_eq!(p.offsets[1] % 4096, 0);
        assert_eq!((p.peak, p.lower_bound, p.proven_optimal), (256, 256, true), "{:?}", p.offsets);
    }

    #[test]
    fn the_bound_counts_cells_and_leaves_out_the_top_padding() {
        // Three buffers aligned to 1024 live together (100, 1000 and 2000 B
        // at a block alignment of 8): 1 + 1 + 2 cells; the highest leaves
        // at most 1024 - 104 B of its last cell unused: 4096 - 920 = 3176.
        let bs = [b(100, 0, 3, 1024), b(1000, 1, 3, 1024), b(2000, 2, 3, 2048)];
        assert_eq!(aligned_lower_bound(8, &bs).unwrap(), 3176);
        // Buffers aligned to 2048 or more alone: the one of 2000 B.
        assert_eq!(aligned_lower_bound(8, &bs[2..]).unwrap(), 2000);
        // Not live together: each alone.
        let apart = [b(100, 0, 1, 1024), b(100, 1, 2, 1024)];
        assert_eq!(aligned_lower_bound(8, &apart).unwrap(), 104);
        // Without alignment above the block's: the bytes live at one step.
        assert_eq!(aligned_lower_bound(64, &[b(100, 0, 1, 1), b(1, 0, 1, 64)]).unwrap(), 192);
    }

    /// `bs` as plain buffers, sizes rounded up to the block's `alignment`:
    /// what `validate` checks a plan of them against.
    fn rounded(alignment: u64, bs: &[AlignedBuffer]) -> Vec<Buffer> {
        bs.iter()
            .map(|b| Buffer { size: align_up(b.size, alignment).unwrap(), lifetime: b.lifetime, fixed_offset: None })
            .collect()
    }

    /// The smallest peak of `bs` by brute force over every offset up to
    /// `top` that is a multiple of its buffer's alignment.
    fn brute_force(alignment: u64, bs: &[AlignedBuffer], top: u64) -> u64 {
        fn go(alignment: u64, bs: &[AlignedBuffer], at: usize, offsets: &mut Vec<u64>, top: u64, best: &mut u64) {
            if at == bs.len() {
                if let Ok(peak) = validate(&rounded(alignment, bs), offsets) {
                    *best = (*best).min(peak);
                }
                return;
            }
            let step = bs[at].alignment.max(alignment);
            let mut o = 0;
            while o <= top {
                offsets.push(o);
                go(alignment, bs, at + 1, offsets, top, best);
                offsets.pop();
                o += step;
            }
        }
        let mut best = u64::MAX;
        go(alignment, bs, 0, &mut Vec::new(), top, &mut best);
        best
    }

    #[test]
    fn plans_are_valid_aligned_and_never_below_the_bound_which_never_passes_the_optimum() {
        let mut state = 7u64;
        let mut below = |n: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        for round in 0..300 {
            let n = 1 + below(4) as usize;
            let alignment = [1, 8, 64][round % 3];
            let bs: Vec<AlignedBuffer> = (0..n)
                .map(|_| {
                    let start = below(4) as i64;
                    b(1 + below(300), start, start + 1 + below(3) as i64, 1 << below(10))
                })
                .collect();
            for algorithm in [Algorithm::Auto, Algorithm::Sequential, Algorithm::Linear, Algorithm::Tflm] {
                let p = plan_aligned(algorithm, alignment, &bs).unwrap();
                assert_eq!(validate(&rounded(alignment, &bs), &p.offsets).unwrap(), p.peak, "{bs:?}");
                for (b, &o) in bs.iter().zip(&p.offsets) {
                    assert_eq!(o % b.alignment.max(alignment), 0, "{bs:?}");
                }
                assert!(p.peak >= p.lower_bound);
            }
            // Offsets past 2560 are never needed: stacking three buffers of
            // at most 320 B, each at the next multiple of at most 512, ends
            // below it.
            if n <= 3 && alignment == 64 {
                let optimum = brute_force(alignment, &bs, 2560);
                let bound = aligned_lower_bound(alignment, &bs).unwrap();
                assert!(bound <= optimum, "bound {bound} above the optimum {optimum}: {bs:?}");
            }
        }
    }
}
