//! Optional in-place merges: a buffer (the child) may take the memory of a
//! buffer last used at the step where the child is first written (its
//! parent), as an element-wise operator may write its output over an input
//! it reads for the last time (ggml's `ggml_op_can_inplace`, ONNX Runtime's
//! `MayInplace`, OpenVINO's in-place ports).
//!
//! A merge makes the two one buffer: the group lives from the first
//! member's first step to the last member's last step and takes the
//! largest member's size (members of a chain are planned at one offset).
//! The planner decides which candidates to take, so that the largest total
//! size live at one step (the lower bound every plan is measured against)
//! is as small as it can make it:
//! - a child takes at most one parent and a parent gives its memory to at
//!   most one child (the first candidate, in the order they were added,
//!   that is still free; a chain a -> b -> c is one group);
//! - a merge of equal sizes is always taken: the group uses the bytes the
//!   two used at every step but the shared one, where it uses half, so it
//!   never raises what is live at any step, whichever parent is chosen;
//! - a merge of a smaller child keeps the parent's size until the child's
//!   last step, so it is taken only where that does not raise the largest
//!   total live at one step (a segment tree over the time axis answers in
//!   O(log n)).
//!
//! A buffer with a fixed offset takes no part in in-place merges (its
//! offset is the caller's, not the planner's to share), and a buffer live
//! at one step alone links no chain through itself (a -> b -> c with b
//! live only at the step where a ends and c begins would put a and c at
//! one offset at that step, which no candidate allowed).

use super::max_tree::MaxTree;
use super::problem::{Buffer, Lifetime, Problem};
use crate::status::{Error, Result};

/// One candidate: `child` may be placed at `parent`'s offset.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Inplace {
    /// The buffer whose memory may be reused (index in the problem).
    pub parent: usize,
    /// The buffer that may reuse it.
    pub child: usize,
}

impl Inplace {
    /// Checks the candidate against the problem's buffers: both exist and
    /// differ, neither has a fixed offset, both are live at some step, the
    /// parent's last step is the child's first, and the child is not larger
    /// than the parent.
    pub fn check(&self, buffers: &[Buffer]) -> Result<()> {
        let (p, c) = (self.parent, self.child);
        let count = buffers.len();
        for (what, index) in [("parent", p), ("child", c)] {
            if index >= count {
                return Err(Error::invalid(format!(
                    "in-place {what} {index} is not a buffer index (the planner holds {count} buffer(s))"
                )));
            }
        }
        if p == c {
            return Err(Error::invalid(format!("buffer {p} cannot reuse its own memory in place")));
        }
        let (parent, child) = (&buffers[p], &buffers[c]);
        for (what, index, b) in [("parent", p, parent), ("child", c, child)] {
            if b.lifetime.is_empty() {
                return Err(Error::invalid(format!("in-place {what} {index} is never used")));
            }
            if let Some(offset) = b.fixed_offset {
                return Err(Error::invalid(format!(
                    "in-place {what} {index} has a fixed offset ({offset}): fixed buffers take no part in \
                     in-place merges"
                )));
            }
        }
        let (_, parent_last) = parent.lifetime.to_inclusive();
        let (child_first, _) = child.lifetime.to_inclusive();
        if parent_last != child_first {
            return Err(Error::invalid(format!(
                "buffer {c} can reuse buffer {p} in place only at the step where {p} is last used: \
                 {p} is last used at step {parent_last}, {c} is first used at step {child_first}"
            )));
        }
        if child.size > parent.size {
            return Err(Error::invalid(format!(
                "buffer {c} ({} B) is larger than buffer {p} ({} B), whose memory it would reuse in place",
                child.size, parent.size
            )));
        }
        Ok(())
    }
}

/// The problem with the chosen merges made: one buffer per group.
#[derive(Debug)]
pub(crate) struct Merged {
    /// One buffer per group, in the order of each group's first member.
    pub problem: Problem,
    /// The group of each original buffer.
    group_of: Vec<usize>,
    /// Candidates taken.
    pub taken: usize,
}

/// Union-find with the group's extent kept at the root.
struct Groups {
    root: Vec<usize>,
    size: Vec<u64>,
    lifetime: Vec<Lifetime>,
}

/// Whether candidate `c` may still be taken: its child occupies memory,
/// its parent has given its memory to no child yet and its child has taken
/// no parent's, and neither end is a buffer live at one step alone that
/// would link a chain through itself.
fn usable(c: &Inplace, buffers: &[Buffer], has_child: &[bool], has_parent: &[bool]) -> bool {
    // A buffer live at one step alone, already linked on the other side.
    let links_through = |i: usize, linked: &[bool]| buffers[i].lifetime.len() == 1 && linked[i];
    buffers[c.child].occupies()
        && !has_child[c.parent]
        && !has_parent[c.child]
        && !links_through(c.parent, has_parent)
        && !links_through(c.child, has_child)
}

impl Groups {
    fn find(&mut self, mut i: usize) -> usize {
        while self.root[i] != i {
            self.root[i] = self.root[self.root[i]];
            i = self.root[i];
        }
        i
    }

    fn join(&mut self, a: usize, b: usize) {
        let lifetime = Lifetime {
            start: self.lifetime[a].start.min(self.lifetime[b].start),
            end: self.lifetime[a].end.max(self.lifetime[b].end),
        };
        self.root[b] = a;
        (self.size[a], self.lifetime[a]) = (self.size[a].max(self.size[b]), lifetime);
    }
}

impl Merged {
    /// Chooses among `candidates` (each already checked against `problem`)
    /// and builds the merged problem.
    pub fn new(problem: &Problem, candidates: &[Inplace]) -> Merged {
        let buffers = problem.buffers();
        let n = buffers.len();
        let mut groups = Groups {
            root: (0..n).collect(),
            size: buffers.iter().map(|b| b.size).collect(),
            lifetime: buffers.iter().map(|b| b.lifetime).collect(),
        };
        let (mut has_child, mut has_parent) = (vec![false; n], vec![false; n]);
        let mut taken = 0;
        // Equal sizes first: each never raises what is live at any step.
        for c in candidates.iter().filter(|c| buffers[c.child].size == buffers[c.parent].size) {
            if !usable(c, buffers, &has_child, &has_parent) {
                continue;
            }
            let (p, q) = (groups.find(c.parent), groups.find(c.child));
            if p != q {
                groups.join(p, q);
                (has_child[c.parent], has_parent[c.child]) = (true, true);
                taken += 1;
            }
        }
        let smaller: Vec<&Inplace> =
            candidates.iter().filter(|c| buffers[c.child].size < buffers[c.parent].size).collect();
        if !smaller.is_empty() {
            taken += Self::take_smaller(&mut groups, &smaller, buffers, &mut has_child, &mut has_parent);
        }
        // One buffer per group, numbered in the order of first members.
        let mut group_of = vec![usize::MAX; n];
        let mut merged = Vec::new();
        for i in 0..n {
            let r = groups.find(i);
            if group_of[r] == usize::MAX {
                group_of[r] = merged.len();
                merged.push(Buffer { size: groups.size[r], lifetime: groups.lifetime[r], fixed_offset: None });
            }
            group_of[i] = group_of[r];
        }
        // A group takes at most the sum of its members' sizes and none is
        // fixed, so the problem's overflow guarantee carries over.
        Merged { problem: problem.rewritten(merged), group_of, taken }
    }

    /// Takes the candidates with a smaller child where the largest total
    /// live at one step does not grow; returns how many it took.
    fn take_smaller(
        groups: &mut Groups,
        smaller: &[&Inplace],
        buffers: &[Buffer],
        has_child: &mut [bool],
        has_parent: &mut [bool],
    ) -> usize {
        // The groups so far, over the time axis compressed to the steps
        // where one of them starts or ends.
        let roots: Vec<usize> =
            (0..buffers.len()).filter(|&i| groups.find(i) == i && !groups.lifetime[i].is_empty()).collect();
        let mut points: Vec<i64> =
            roots.iter().flat_map(|&r| [groups.lifetime[r].start, groups.lifetime[r].end]).collect();
        points.sort_unstable();
        points.dedup();
        let leaf = |t: i64| points.partition_point(|&p| p < t);
        let mut live = MaxTree::new(points.len());
        for &r in &roots {
            let l = groups.lifetime[r];
            live.add(leaf(l.start), leaf(l.end), i128::from(groups.size[r]));
        }
        let mut taken = 0;
        for c in smaller {
            if !usable(c, buffers, has_child, has_parent) {
                continue;
            }
            let (p, q) = (groups.find(c.parent), groups.find(c.child));
            if p == q {
                continue;
            }
            // Replace the two groups' bytes by the merged group's.
            let (lp, lq) = (groups.lifetime[p], groups.lifetime[q]);
            let (sp, sq) = (i128::from(groups.size[p]), i128::from(groups.size[q]));
            let union = Lifetime { start: lp.start.min(lq.start), end: lp.end.max(lq.end) };
            let before = live.max();
            let change = |live: &mut MaxTree, sign: i128| {
                live.add(leaf(lp.start), leaf(lp.end), -sign * sp);
                live.add(leaf(lq.start), leaf(lq.end), -sign * sq);
                live.add(leaf(union.start), leaf(union.end), sign * sp.max(sq));
            };
            change(&mut live, 1);
            if live.max() > before {
                change(&mut live, -1);
                continue;
            }
            groups.join(p, q);
            (has_child[c.parent], has_parent[c.child]) = (true, true);
            taken += 1;
        }
        taken
    }

    /// The original buffers' offsets from the groups' offsets.
    pub fn to_original(&self, offsets: &[u64]) -> Vec<u64> {
        self.group_of.iter().map(|&g| offsets[g]).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::bound::lower_bound;
    use crate::plan::validate::validate;

    fn problem(buffers: &[(u64, i64, i64)]) -> Problem {
        let mut p = Problem::new(1).unwrap();
        for &(size, first, last) in buffers {
            p.push(size, Lifetime::inclusive(first, last).unwrap(), None).unwrap();
        }
        p
    }

    fn merge(parent: usize, child: usize) -> Inplace {
        Inplace { parent, child }
    }

    #[test]
    fn an_equal_merge_joins_a_chain_into_one_buffer() {
        // a -> b -> c, each written over the last; d lives beside them.
        let p = problem(&[(64, 0, 1), (64, 1, 2), (64, 2, 4), (32, 0, 4)]);
        let m = Merged::new(&p, &[merge(0, 1), merge(1, 2)]);
        assert_eq!(m.taken, 2);
        assert_eq!(m.problem.len(), 2);
        assert_eq!(m.problem.buffers()[0].lifetime, Lifetime::inclusive(0, 4).unwrap());
        assert_eq!(lower_bound(m.problem.buffers()).bytes, 96);
        assert_eq!(lower_bound(p.buffers()).bytes, 160);
        assert_eq!(m.to_original(&[32, 0]), vec![32, 32, 32, 0]);
    }

    #[test]
    fn a_parent_gives_its_memory_once_and_a_child_takes_one_parent() {
        // 0 and 1 both end where 2 and 3 start.
        let p = problem(&[(16, 0, 2), (16, 0, 2), (16, 2, 3), (16, 2, 3)]);
        let m = Merged::new(&p, &[merge(0, 2), merge(1, 2), merge(0, 3), merge(1, 3)]);
        assert_eq!(m.taken, 2);
        let offsets = m.to_original(&[0, 16]);
        assert_eq!(offsets, vec![0, 16, 0, 16]);
        assert_eq!(lower_bound(m.problem.buffers()).bytes, 32);
    }

    #[test]
    fn a_smaller_child_is_merged_only_where_the_peak_does_not_grow() {
        // The child outlives the parent by far, beside a long buffer: keeping
        // the parent's 100 B for the child's life would raise the peak.
        let p = problem(&[(100, 0, 1), (10, 1, 9), (95, 2, 9)]);
        let m = Merged::new(&p, &[merge(0, 1)]);
        assert_eq!((m.taken, m.problem.len()), (0, 3));
        // Where the peak is the shared step, the merge lowers it.
        let p = problem(&[(100, 0, 1), (90, 1, 2), (5, 2, 2)]);
        let m = Merged::new(&p, &[merge(0, 1)]);
        assert_eq!(m.taken, 1);
        assert_eq!(lower_bound(m.problem.buffers()).bytes, 105);
        assert_eq!(lower_bound(p.buffers()).bytes, 190);
    }

    #[test]
    fn fixed_buffers_take_no_part() {
        let mut p = Problem::new(1).unwrap();
        p.push(8, Lifetime::inclusive(0, 1).unwrap(), Some(0)).unwrap();
        p.push(8, Lifetime::inclusive(1, 2).unwrap(), None).unwrap();
        p.push(8, Lifetime::inclusive(2, 3).unwrap(), Some(8)).unwrap();
        let err = merge(0, 1).check(p.buffers()).unwrap_err().to_string();
        assert!(err.contains("in-place parent 0 has a fixed offset (0)"), "{err}");
        let err = merge(1, 2).check(p.buffers()).unwrap_err().to_string();
        assert!(err.contains("in-place child 2 has a fixed offset (8)"), "{err}");
    }

    #[test]
    fn no_chain_runs_through_a_buffer_live_at_one_step() {
        // a (steps 0-2), b (step 2 alone), c (steps 2-4): a -> b and b -> c
        // would put a and c at one offset at step 2.
        let p = problem(&[(16, 0, 2), (16, 2, 2), (16, 2, 4)]);
        for candidates in [[merge(0, 1), merge(1, 2)], [merge(1, 2), merge(0, 1)]] {
            let m = Merged::new(&p, &candidates);
            assert_eq!(m.taken, 1);
            assert_eq!(m.problem.len(), 2);
        }
        // Through a buffer live for two steps, the chain is fine.
        let p = problem(&[(16, 0, 2), (16, 2, 3), (16, 3, 4)]);
        assert_eq!(Merged::new(&p, &[merge(0, 1), merge(1, 2)]).taken, 2);
    }

    #[test]
    fn a_merged_plan_is_valid_for_the_merged_problem() {
        let p = problem(&[(48, 0, 3), (48, 3, 5), (16, 1, 4), (48, 5, 6)]);
        let m = Merged::new(&p, &[merge(0, 1), merge(1, 3)]);
        assert_eq!(m.problem.len(), 2);
        let offsets = [0, 48];
        assert_eq!(validate(m.problem.buffers(), &offsets).unwrap(), 64);
        assert_eq!(m.to_original(&offsets), vec![0, 0, 48, 0]);
    }

    #[test]
    fn bad_candidates_are_refused_with_the_figures() {
        let p = problem(&[(8, 0, 1), (8, 2, 3), (16, 1, 2), (8, -1, -1)]);
        let err = |c: Inplace| c.check(p.buffers()).unwrap_err().to_string();
        assert!(err(merge(0, 1)).contains("0 is last used at step 1, 1 is first used at step 2"));
        assert!(err(merge(0, 2)).contains("buffer 2 (16 B) is larger than buffer 0 (8 B)"));
        assert!(err(merge(0, 7)).contains("child 7 is not a buffer index (the planner holds 4 buffer(s))"));
        assert!(err(merge(1, 1)).contains("own memory"));
        assert!(err(merge(3, 0)).contains("parent 3 is never used"));
        assert!(merge(2, 1).check(p.buffers()).is_ok());
    }
}
