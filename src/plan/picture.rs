//! A text picture of a plan in the style of TFLite Micro's
//! `GreedyMemoryPlanner::PrintMemoryPlan`: one line per buffer, then one
//! 80-column line per step with each live buffer drawn at its offset
//! (`0-9a-zA-Z` by index, `*` beyond, `!` where two collide) and the bytes
//! live at that step in KiB.
//!
//! Unlike TFLM, steps at which the set of live buffers does not change are
//! not repeated: a line is drawn at every step where some buffer starts or
//! ends, so sparse time axes (millions of steps) stay readable. Cost is the
//! sum over those steps of the buffers live there.

use std::fmt::Write;

use super::problem::Buffer;

const LINE_WIDTH: u128 = 80;

fn ordinal(i: usize) -> char {
    match i {
        0..=9 => (b'0' + i as u8) as char,
        10..=35 => (b'a' + (i - 10) as u8) as char,
        36..=61 => (b'A' + (i - 36) as u8) as char,
        _ => '*',
    }
}

/// Draws `buffers` at `offsets` (same length).
pub fn draw(buffers: &[Buffer], offsets: &[u64]) -> String {
    assert_eq!(buffers.len(), offsets.len(), "one offset per buffer");
    let mut out = String::new();
    let peak = buffers.iter().zip(offsets).filter(|(b, _)| b.occupies()).map(|(b, &o)| o + b.size).max().unwrap_or(0);
    let _ = writeln!(out, "{} buffers, peak {} B", buffers.len(), peak);
    for (i, (b, &o)) in buffers.iter().zip(offsets).enumerate() {
        if b.lifetime.is_empty() {
            let _ = writeln!(out, "{} (id={i}): size={}, offset={o}, never used", ordinal(i), b.size);
        } else {
            let _ = writeln!(
                out,
                "{} (id={i}): size={}, offset={o}, first_used={} last_used={}",
                ordinal(i),
                b.size,
                b.lifetime.start,
                b.lifetime.end - 1
            );
        }
    }
    let scale = (peak as u128).max(LINE_WIDTH);
    // Steps where the picture changes, and the buffers live in each.
    let mut events: Vec<(i64, bool, usize)> = Vec::new();
    for (i, b) in buffers.iter().enumerate().filter(|(_, b)| !b.lifetime.is_empty()) {
        events.push((b.lifetime.start, true, i));
        events.push((b.lifetime.end, false, i));
    }
    events.sort_unstable();
    let mut live: Vec<usize> = Vec::new();
    let mut position: Vec<usize> = vec![usize::MAX; buffers.len()];
    let mut k = 0;
    while k < events.len() {
        let step = events[k].0;
        while k < events.len() && events[k].0 == step {
            let (_, starts, i) = events[k];
            if starts {
                position[i] = live.len();
                live.push(i);
            } else {
                let at = position[i];
                live.swap_remove(at);
                if let Some(&moved) = live.get(at) {
                    position[moved] = at;
                }
            }
            k += 1;
        }
        if live.is_empty() {
            continue;
        }
        let mut line = ['.'; LINE_WIDTH as usize];
        let mut bytes: u128 = 0;
        for &i in &live {
            let (o, s) = (offsets[i] as u128, buffers[i].size as u128);
            bytes += s;
            let (from, to) = (o * LINE_WIDTH / scale, (o + s) * LINE_WIDTH / scale);
            for cell in &mut line[from as usize..(to as usize).min(LINE_WIDTH as usize)] {
                *cell = if *cell == '.' { ordinal(i) } else { '!' };
            }
        }
        let text: String = line.iter().collect();
        let _ = writeln!(out, "{step:>2}: {text} ({}k)", bytes.div_ceil(1024));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::problem::Lifetime;

    #[test]
    fn draws_buffers_and_steps() {
        let b = |size, s, e| Buffer { size, lifetime: Lifetime::half_open(s, e).unwrap(), fixed_offset: None };
        let buffers = [b(40, 0, 2), b(40, 1, 3), b(8, 5, 5)];
        let text = draw(&buffers, &[0, 40, 0]);
        assert!(text.starts_with("3 buffers, peak 80 B\n"));
        assert!(text.contains("0 (id=0): size=40, offset=0, first_used=0 last_used=1"));
        assert!(text.contains("2 (id=2): size=8, offset=0, never used"));
        let row1 = format!(" 1: {}{} (1k)", "0".repeat(40), "1".repeat(40));
        assert!(text.contains(&row1), "{text}");
        let row0 = format!(" 0: {}{} (1k)", "0".repeat(40), ".".repeat(40));
        assert!(text.contains(&row0), "{text}");
        // Overlaps show as '!'.
        assert!(draw(&buffers[..2], &[0, 20]).contains('!'));
    }
}
