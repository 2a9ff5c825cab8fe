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

/// Draws `buffers` at `offsets` (same length), naming each buffer by its
/// index.
pub fn draw(buffers: &[Buffer], offsets: &[u64]) -> String {
    draw_named(buffers, offsets, None)
}

/// Draws `buffers` at `offsets`, naming buffer `i` `names[i]` (the CLI
/// passes its CSV ids) or, without names, by its index.
///
/// Only buffers that occupy memory (non-zero size, non-empty lifetime) are
/// drawn and counted in the scale: a zero-size buffer may sit at any offset,
/// also past the peak, and must not stretch or break the picture.
pub fn draw_named(buffers: &[Buffer], offsets: &[u64], names: Option<&[&str]>) -> String {
    assert_eq!(buffers.len(), offsets.len(), "one offset per buffer");
    if let Some(names) = names {
        assert_eq!(names.len(), buffers.len(), "one name per buffer");
    }
    let name = |i: usize| match names {
        Some(names) => names[i].to_string(),
        None => i.to_string(),
    };
    let mut out = String::new();
    // u128: offsets come from the caller and `offset + size` may pass 2^64.
    let end = |i: usize| offsets[i] as u128 + buffers[i].size as u128;
    let occupying: Vec<usize> = (0..buffers.len()).filter(|&i| buffers[i].occupies()).collect();
    let peak = occupying.iter().map(|&i| end(i)).max().unwrap_or(0);
    let _ = writeln!(out, "{} buffers, peak {} B", buffers.len(), peak);
    for (i, (b, &o)) in buffers.iter().zip(offsets).enumerate() {
        if b.lifetime.is_empty() {
            let _ = writeln!(out, "{} (id={}): size={}, offset={o}, never used", ordinal(i), name(i), b.size);
        } else {
            let _ = writeln!(
                out,
                "{} (id={}): size={}, offset={o}, first_used={} last_used={}",
                ordinal(i),
                name(i),
                b.size,
                b.lifetime.start,
                b.lifetime.end - 1
            );
        }
    }
    let scale = peak.max(LINE_WIDTH);
    // Steps where the picture changes, and the buffers live in each.
    let mut events: Vec<(i64, bool, usize)> = Vec::new();
    for &i in &occupying {
        events.push((buffers[i].lifetime.start, true, i));
        events.push((buffers[i].lifetime.end, false, i));
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
            bytes += buffers[i].size as u128;
            // end(i) <= peak <= scale, so both cells are within the line.
            let (from, to) = (offsets[i] as u128 * LINE_WIDTH / scale, end(i) * LINE_WIDTH / scale);
            for cell in &mut line[from as usize..to as usize] {
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

    #[test]
    fn names_replace_indices() {
        let b = Buffer { size: 8, lifetime: Lifetime::half_open(0, 1).unwrap(), fixed_offset: None };
        let text = draw_named(&[b, b], &[0, 8], Some(&["in", "out"]));
        assert!(text.contains("0 (id=in): size=8") && text.contains("1 (id=out): size=8"), "{text}");
    }

    /// The two plans that made the picture panic: a zero-size buffer past
    /// the peak, with and without a buffer that occupies memory.
    #[test]
    fn zero_size_buffers_past_the_peak_are_not_drawn() {
        let b = |size, s, e| Buffer { size, lifetime: Lifetime::half_open(s, e).unwrap(), fixed_offset: None };
        let text = draw(&[b(16, 0, 2), b(0, 1, 2)], &[0, 4096]);
        assert!(text.starts_with("2 buffers, peak 16 B\n"), "{text}");
        assert!(text.contains(&format!(" 0: {}{} (1k)", "0".repeat(16), ".".repeat(64))), "{text}");
        // linear: an unused 100 B buffer at 0, then a 0 B one at 100.
        let text = draw(&[b(100, 0, 0), b(0, 0, 1)], &[0, 100]);
        assert!(text.contains("0 (id=0): size=100, offset=0, never used"), "{text}");
        assert!(text.contains("1 (id=1): size=0, offset=100, first_used=0 last_used=0"), "{text}");
        assert!(!text.contains(" 0: "), "nothing occupies memory at step 0: {text}");
        // Offsets near 2^64 do not overflow the scale.
        let text = draw(&[b(16, 0, 1)], &[u64::MAX - 8]);
        assert!(text.contains(&format!(" 0: {}0 (1k)", ".".repeat(79))), "{text}");
    }

    /// Every plan the planner accepts draws, whatever the algorithm: random
    /// instances with zero sizes, unused buffers and fixed buffers, some of
    /// them zero-size and past the peak. Each drawn cell belongs to a buffer
    /// that occupies memory.
    #[test]
    fn every_accepted_plan_draws() {
        use crate::plan::algo::tests::{random_problem, Rng};
        use crate::plan::{Algorithm, Planner};
        let mut rng = Rng::new(12);
        for round in 0..1500 {
            let n = 1 + rng.below(12) as usize;
            let alignment = 1 << rng.below(4);
            let problem = random_problem(&mut rng, n, alignment, round % 3 == 0);
            let mut planner = Planner::new();
            let algorithm = Algorithm::all()[round % Algorithm::all().len()];
            planner.set_algorithm(algorithm);
            planner.set_node_limit(Some(200));
            planner.set_alignment(problem.alignment()).unwrap();
            for b in problem.buffers() {
                planner.add_buffer(b.size, b.lifetime, b.fixed_offset).unwrap();
            }
            if round % 5 == 0 {
                // A zero-size fixed buffer far past anything else.
                let far = problem.alignment() * (1 << 20);
                planner.add_buffer(0, Lifetime::half_open(0, 3).unwrap(), Some(far)).unwrap();
            }
            // tflm draws TFLite Micro's never-used buffers at step -1.
            let seen = |b: &Buffer| match algorithm {
                Algorithm::Tflm => Buffer { lifetime: b.lifetime.tflm_never_used(), ..*b },
                _ => *b,
            };
            let mut peak = planner.plan().unwrap().peak;
            if algorithm == Algorithm::Tflm {
                // TFLite Micro's arena size counts zero-size buffers too; the
                // picture's peak counts what occupies memory.
                let o = &planner.outcome().unwrap().offsets;
                let b = planner.problem().buffers();
                peak = (0..b.len()).filter(|&i| seen(&b[i]).occupies()).map(|i| o[i] + b[i].size).max().unwrap_or(0);
            }
            let text = planner.draw().unwrap();
            assert!(
                text.starts_with(&format!("{} buffers, peak {peak} B\n", planner.buffer_count())),
                "{algorithm:?}: {text}"
            );
            // One line per step where an occupying buffer starts or ends,
            // each 80 cells wide.
            let rows: Vec<&str> = text.lines().filter(|l| l.ends_with("k)")).collect();
            let occupying = planner.problem().buffers().iter().filter(|b| seen(b).occupies()).count();
            assert!(rows.len() <= 2 * occupying && (occupying == 0) == rows.is_empty(), "{algorithm:?}: {text}");
            for row in rows {
                let cells = row.split(": ").nth(1).unwrap().split(" (").next().unwrap();
                assert_eq!(cells.chars().count(), 80, "{algorithm:?}: {row}");
            }
        }
    }
}
