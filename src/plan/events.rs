//! The start and end events of the buffers that occupy memory, in time
//! order: what the sweeps over time (the lower bound, the validator) walk.
//! At one step ends come before starts (lifetimes are half-open), then
//! lower buffer indices first, so every sweep meets the same order.
//!
//! Graphs from runtimes number their steps 0, 1, 2, ...: where the steps
//! span at most a few times as many values as there are events, a
//! counting sort puts the events in order in linear time (a plan's sweeps
//! had cost more than a sequential placement of its buffers). Otherwise,
//! as on traces with timestamps, a comparison sort of packed keys.

use super::problem::Buffer;

/// A buffer's start or end.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The step: the buffer's first live step, or its first step no longer
    /// live.
    pub step: i64,
    /// A start (else an end).
    pub is_start: bool,
    /// The buffer's index.
    pub index: usize,
}

/// Steps spanned per event up to which the counting sort runs: its table
/// holds two counters a step, so it stays within a few times the events.
const SPAN_PER_EVENT: u128 = 4;

/// The start and end of every buffer that occupies memory, ordered by step,
/// ends before starts, then by index.
pub fn time_ordered(buffers: &[Buffer]) -> Vec<Event> {
    let occupying = || buffers.iter().enumerate().filter(|(_, b)| b.occupies());
    let (mut first, mut last, mut count) = (i64::MAX, i64::MIN, 0usize);
    for (_, b) in occupying() {
        first = first.min(b.lifetime.start);
        last = last.max(b.lifetime.end);
        count += 2;
    }
    if count == 0 {
        return Vec::new();
    }
    // The span fits 64 bits (both ends are i64); as u128 it cannot overflow.
    let span = (i128::from(last) - i128::from(first)) as u128;
    if span <= SPAN_PER_EVENT * count as u128 + 64 {
        counting_sort(buffers, first, span as usize + 1, count)
    } else {
        packed_sort(buffers, first, count)
    }
}

/// Slot of an event in the counting sort: two a step, the end first.
fn slot(step: i64, first: i64, is_start: bool) -> usize {
    2 * (step - first) as usize + usize::from(is_start)
}

/// Counting sort over `steps` steps from `first`: buffers visited in index
/// order, so each slot holds its events by index.
fn counting_sort(buffers: &[Buffer], first: i64, steps: usize, count: usize) -> Vec<Event> {
    let mut next = vec![0usize; 2 * steps + 1];
    for b in buffers.iter().filter(|b| b.occupies()) {
        next[slot(b.lifetime.start, first, true) + 1] += 1;
        next[slot(b.lifetime.end, first, false) + 1] += 1;
    }
    for k in 1..next.len() {
        next[k] += next[k - 1];
    }
    let mut events = vec![Event { step: 0, is_start: false, index: 0 }; count];
    for (index, b) in buffers.iter().enumerate().filter(|(_, b)| b.occupies()) {
        for (step, is_start) in [(b.lifetime.start, true), (b.lifetime.end, false)] {
            let at = &mut next[slot(step, first, is_start)];
            events[*at] = Event { step, is_start, index };
            *at += 1;
        }
    }
    events
}

/// Comparison sort of `(step - first, is_start, index)` packed in one key:
/// 64 bits of step, then the start bit above 63 bits of index (a buffer
/// list never reaches 2^63 entries).
fn packed_sort(buffers: &[Buffer], first: i64, count: usize) -> Vec<Event> {
    const START: u128 = 1 << 63;
    let key = |step: i64, is_start: bool, index: usize| {
        (u128::from(step.abs_diff(first)) << 64) | if is_start { START } else { 0 } | index as u128
    };
    let mut keys = Vec::with_capacity(count);
    for (index, b) in buffers.iter().enumerate().filter(|(_, b)| b.occupies()) {
        keys.push(key(b.lifetime.start, true, index));
        keys.push(key(b.lifetime.end, false, index));
    }
    keys.sort_unstable();
    keys.into_iter()
        .map(|k| {
            let index = (k & (START - 1)) as usize;
            let is_start = k & START != 0;
            let step = first.wrapping_add((k >> 64) as u64 as i64);
            Event { step, is_start, index }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::problem::Lifetime;

    fn b(size: u64, s: i64, e: i64) -> Buffer {
        Buffer { size, lifetime: Lifetime::half_open(s, e).unwrap(), fixed_offset: None }
    }

    /// The order by definition: every event, sorted as tuples.
    fn by_definition(buffers: &[Buffer]) -> Vec<Event> {
        let mut events: Vec<(i64, bool, usize)> = Vec::new();
        for (i, b) in buffers.iter().enumerate().filter(|(_, b)| b.occupies()) {
            events.push((b.lifetime.start, true, i));
            events.push((b.lifetime.end, false, i));
        }
        events.sort_unstable();
        events.into_iter().map(|(step, is_start, index)| Event { step, is_start, index }).collect()
    }

    #[test]
    fn both_sorts_give_the_order_by_definition() {
        let mut rng = crate::plan::algo::tests::Rng::new(5);
        for round in 0..300u64 {
            let n = 1 + (round % 50) as usize;
            // Dense steps (the counting sort), then spread-out and negative
            // ones (the packed sort), with zero sizes and empty lifetimes.
            let spread = if round % 2 == 0 { 3 * n as u64 } else { 1 << (20 + round % 40) };
            let buffers: Vec<Buffer> = (0..n)
                .map(|_| {
                    let start = rng.below(spread) as i64 - (round % 3) as i64 * (spread as i64 / 2);
                    let len = rng.below(spread / 3 + 2) as i64;
                    b(rng.below(4), start, start + len)
                })
                .collect();
            assert_eq!(time_ordered(&buffers), by_definition(&buffers), "round {round}");
        }
    }

    #[test]
    fn steps_at_the_ends_of_the_i64_range() {
        let buffers = [b(8, i64::MIN, 0), b(8, -5, i64::MAX), b(8, 3, 4), b(0, 0, 9)];
        assert_eq!(time_ordered(&buffers), by_definition(&buffers));
        assert!(time_ordered(&[b(0, 0, 4), b(4, 2, 2)]).is_empty());
    }

    #[test]
    fn ends_come_before_starts_at_one_step() {
        let events = time_ordered(&[b(4, 2, 5), b(4, 0, 2)]);
        let order: Vec<(i64, bool, usize)> = events.iter().map(|e| (e.step, e.is_start, e.index)).collect();
        assert_eq!(order, [(0, true, 1), (2, false, 1), (2, true, 0), (5, false, 0)]);
    }
}
