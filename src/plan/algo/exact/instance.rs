//! The search's view of a problem: the buffers it must place, split into
//! independent parts, each with compressed time ("sections"), conflict
//! lists and the fixed buffers it must avoid.
//!
//! A *section* is the span between two consecutive lifetime endpoints of a
//! part: within one section the set of live buffers does not change, so the
//! bounds only need one number per section.

use std::cell::OnceCell;

use crate::plan::algo::lift::lift_over;
use crate::plan::problem::Problem;

/// Conflict lists are the search's largest structure (one entry per pair of
/// buffers live at one step, twice). Above this many entries the search is
/// not attempted and the heuristics' plan stands; 32 Mi entries is 128 MiB.
pub const MAX_CONFLICT_ENTRIES: usize = 32 << 20;

/// One independent part: no buffer of another part is live at any of its
/// steps, so its plan does not constrain theirs.
#[derive(Debug)]
pub struct Part {
    /// Problem index of each buffer (local index -> problem index).
    pub members: Vec<usize>,
    /// Bytes of each buffer (already aligned).
    pub size: Vec<u64>,
    /// First section of each buffer.
    pub first: Vec<u32>,
    /// One past the last section of each buffer.
    pub last: Vec<u32>,
    /// Lifetime length of each buffer, in steps.
    pub width: Vec<u64>,
    /// Number of sections.
    pub sections: usize,
    /// Bytes live in each section (the part's own buffers).
    pub live: Vec<u64>,
    /// Conflicts of buffer `i`: `conflicts[conflict_start[i]..conflict_start[i + 1]]`.
    conflict_start: Vec<usize>,
    conflicts: Vec<u32>,
    /// The same lists smallest first, made on first use: the search needs
    /// them for few buffers, and sorting all 24 M entries of the PanGu
    /// trace up front costs 0.4 s.
    by_size: Vec<OnceCell<Box<[u32]>>>,
    /// Buffers live in section `s`: `residents[resident_start[s]..resident_start[s + 1]]`.
    resident_start: Vec<usize>,
    residents: Vec<u32>,
    /// Fixed buffers live with buffer `i`, as `(offset, top)` sorted by
    /// offset: `obstacles[obstacle_start[i]..obstacle_start[i + 1]]`.
    obstacle_start: Vec<usize>,
    obstacles: Vec<(u64, u64)>,
    /// The problem's alignment.
    pub alignment: u64,
}

impl Part {
    /// Number of buffers.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Highest `offset + size` of a plan of this part (local offsets).
    pub fn peak_of(&self, offsets: &[u64]) -> u64 {
        offsets.iter().zip(&self.size).map(|(o, s)| o + s).max().unwrap_or(0)
    }

    /// Buffers live in section `s`.
    pub fn residents(&self, s: usize) -> &[u32] {
        &self.residents[self.resident_start[s]..self.resident_start[s + 1]]
    }

    /// Entries of all conflict lists (each pair live together, twice).
    pub fn conflict_entries(&self) -> usize {
        self.conflicts.len()
    }

    /// Buffers live at a step with buffer `i`.
    pub fn conflicts(&self, i: usize) -> &[u32] {
        &self.conflicts[self.conflict_start[i]..self.conflict_start[i + 1]]
    }

    /// [`Part::conflicts`] ordered by (size, index).
    pub fn conflicts_by_size(&self, i: usize) -> &[u32] {
        self.by_size[i].get_or_init(|| {
            let mut list: Vec<(u64, u32)> = self.conflicts(i).iter().map(|&j| (self.size[j as usize], j)).collect();
            list.sort_unstable();
            list.into_iter().map(|(_, j)| j).collect()
        })
    }

    /// The lowest aligned offset at or above `from` where buffer `i` clears
    /// every fixed buffer live with it.
    pub fn lift(&self, i: usize, from: u64) -> u64 {
        let obstacles = &self.obstacles[self.obstacle_start[i]..self.obstacle_start[i + 1]];
        if obstacles.is_empty() && self.alignment == 1 {
            // The usual case, on the search's hottest path.
            return from;
        }
        lift_over(obstacles, from, self.size[i], self.alignment)
    }
}

/// Why the search cannot run on a problem.
#[derive(Debug, PartialEq, Eq)]
pub enum TooLarge {
    /// More conflict entries than [`MAX_CONFLICT_ENTRIES`].
    Conflicts(usize),
}

/// Splits the non-fixed, memory-occupying buffers of `problem` into
/// independent parts. Buffers that occupy nothing are in no part.
pub fn split(problem: &Problem) -> Result<Vec<Part>, TooLarge> {
    let buffers = problem.buffers();
    let mut order: Vec<usize> =
        (0..buffers.len()).filter(|&i| buffers[i].occupies() && buffers[i].fixed_offset.is_none()).collect();
    crate::sort::sort_by_key(&mut order, |&i| (buffers[i].lifetime.start, buffers[i].lifetime.end, i));
    let fixed: Vec<usize> =
        (0..buffers.len()).filter(|&i| buffers[i].occupies() && buffers[i].fixed_offset.is_some()).collect();

    // Parts are maximal runs (by start time) whose lifetimes chain together.
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut reach = i64::MIN;
    for &i in &order {
        let lt = buffers[i].lifetime;
        if groups.is_empty() || lt.start >= reach {
            groups.push(Vec::new());
        }
        groups.last_mut().expect("pushed").push(i);
        reach = reach.max(lt.end);
    }

    // Count conflicts before allocating them (a sweep per part).
    let total: usize = groups.iter().map(|g| count_conflicts(problem, g)).sum::<usize>() * 2;
    if total > MAX_CONFLICT_ENTRIES {
        return Err(TooLarge::Conflicts(total));
    }
    Ok(groups.into_iter().map(|g| build_part(problem, g, &fixed)).collect())
}

/// Number of unordered pairs live at one step among `members`.
fn count_conflicts(problem: &Problem, members: &[usize]) -> usize {
    let buffers = problem.buffers();
    let mut events: Vec<(i64, bool)> = Vec::with_capacity(members.len() * 2);
    for &i in members {
        events.push((buffers[i].lifetime.start, true));
        events.push((buffers[i].lifetime.end, false));
    }
    // Half-open lifetimes: at equal times ends come first.
    events.sort_unstable();
    let (mut live, mut pairs) = (0usize, 0usize);
    for (_, is_start) in events {
        if is_start {
            pairs += live;
            live += 1;
        } else {
            live -= 1;
        }
    }
    pairs
}

fn build_part(problem: &Problem, members: Vec<usize>, fixed: &[usize]) -> Part {
    let buffers = problem.buffers();
    let mut points: Vec<i64> =
        members.iter().flat_map(|&i| [buffers[i].lifetime.start, buffers[i].lifetime.end]).collect();
    points.sort_unstable();
    points.dedup();
    let section_of = |t: i64| points.binary_search(&t).expect("endpoint") as u32;
    let n = members.len();
    let size: Vec<u64> = members.iter().map(|&i| buffers[i].size).collect();
    let first: Vec<u32> = members.iter().map(|&i| section_of(buffers[i].lifetime.start)).collect();
    let last: Vec<u32> = members.iter().map(|&i| section_of(buffers[i].lifetime.end)).collect();
    let sections = points.len().saturating_sub(1);
    let width: Vec<u64> = members.iter().map(|&i| buffers[i].lifetime.len()).collect();

    let mut delta = vec![0i128; sections + 1];
    for i in 0..n {
        delta[first[i] as usize] += size[i] as i128;
        delta[last[i] as usize] -= size[i] as i128;
    }
    let mut live = Vec::with_capacity(sections);
    let mut running = 0i128;
    for d in &delta[..sections] {
        running += d;
        live.push(running as u64);
    }

    // Conflict lists by a sweep over sections: a buffer starting in a
    // section conflicts with everything live there. Two passes (count,
    // then fill) so the lists go straight into one flat array.
    let mut starting: Vec<Vec<u32>> = vec![Vec::new(); sections];
    for i in 0..n {
        starting[first[i] as usize].push(i as u32);
    }
    let sweep = |visit: &mut dyn FnMut(u32, u32)| {
        let mut active: Vec<u32> = Vec::new();
        for (s, starts) in starting.iter().enumerate() {
            active.retain(|&j| last[j as usize] as usize > s);
            for &i in starts {
                for &j in &active {
                    visit(i, j);
                }
                active.push(i);
            }
        }
    };
    let mut degree = vec![0usize; n];
    sweep(&mut |i, j| {
        degree[i as usize] += 1;
        degree[j as usize] += 1;
    });
    let mut conflict_start = Vec::with_capacity(n + 1);
    conflict_start.push(0);
    for d in &degree {
        conflict_start.push(conflict_start.last().expect("pushed") + d);
    }
    let mut conflicts = vec![0u32; *conflict_start.last().expect("pushed")];
    let mut cursor: Vec<usize> = conflict_start[..n].to_vec();
    sweep(&mut |i, j| {
        conflicts[cursor[i as usize]] = j;
        cursor[i as usize] += 1;
        conflicts[cursor[j as usize]] = i;
        cursor[j as usize] += 1;
    });

    let mut resident_start = Vec::with_capacity(sections + 1);
    let mut residents = Vec::new();
    {
        let mut active: Vec<u32> = Vec::new();
        resident_start.push(0);
        for (s, starts) in starting.iter().enumerate() {
            active.retain(|&j| last[j as usize] as usize > s);
            active.extend_from_slice(starts);
            residents.extend_from_slice(&active);
            resident_start.push(residents.len());
        }
    }

    let mut obstacle_start = Vec::with_capacity(n + 1);
    let mut obstacles = Vec::new();
    obstacle_start.push(0);
    for &i in &members {
        let mut mine: Vec<(u64, u64)> = fixed
            .iter()
            .filter(|&&f| buffers[f].lifetime.overlaps(&buffers[i].lifetime))
            .map(|&f| {
                let offset = buffers[f].fixed_offset.expect("fixed");
                (offset, offset.saturating_add(buffers[f].size))
            })
            .collect();
        mine.sort_unstable();
        obstacles.extend(mine);
        obstacle_start.push(obstacles.len());
    }

    Part {
        members,
        size,
        first,
        last,
        width,
        sections,
        live,
        conflict_start,
        conflicts,
        by_size: (0..n).map(|_| OnceCell::new()).collect(),
        resident_start,
        residents,
        obstacle_start,
        obstacles,
        alignment: problem.alignment(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::problem::{Buffer, Lifetime};

    fn problem(spec: &[(u64, i64, i64, Option<u64>)]) -> Problem {
        Problem::from_buffers(
            1,
            spec.iter().map(|&(size, a, b, fixed)| Buffer {
                size,
                lifetime: Lifetime::half_open(a, b).unwrap(),
                fixed_offset: fixed,
            }),
        )
        .unwrap()
    }

    #[test]
    fn splits_where_no_lifetime_crosses() {
        let p = problem(&[(4, 0, 2, None), (4, 1, 3, None), (4, 3, 5, None), (0, 0, 9, None), (4, 6, 6, None)]);
        let parts = split(&p).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].members, vec![0, 1]);
        assert_eq!(parts[1].members, vec![2]);
        assert_eq!(parts[0].conflicts(0), &[1]);
        assert_eq!(parts[0].sections, 3);
        assert_eq!(parts[0].live, vec![4, 8, 4]);
    }

    #[test]
    fn lift_clears_fixed_buffers_live_at_the_same_time() {
        let p = problem(&[(4, 0, 4, None), (3, 0, 2, Some(2)), (2, 1, 3, Some(8)), (9, 5, 6, Some(0))]);
        let parts = split(&p).unwrap();
        assert_eq!(parts.len(), 1);
        let part = &parts[0];
        assert_eq!(part.lift(0, 0), 10, "[0,4) hits [2,5); [5,9) hits [8,10)");
        assert_eq!(part.lift(0, 11), 11);
    }
}
