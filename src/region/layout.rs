//! Laying out the regions of each memory level in one address space.
//!
//! Levels are listed by rank, then name. Inside a level, regions keep the
//! order given (description order, per-tensor instances in model order). A
//! region with a base address sits there; two fixed regions that overlap
//! are an error. Every other region goes at the lowest address aligned to
//! its alignment, at or above the end of the previous such region of its
//! level, that overlaps no fixed region. O(n log n) for n regions.

use super::table::LevelLayout;
use crate::plan::align_up;
use crate::status::{Error, Result};

/// One region to place.
#[derive(Clone, Debug)]
pub struct Block<'a> {
    /// Its name, for errors.
    pub name: &'a str,
    /// Its level.
    pub level: &'a str,
    /// Its level's rank.
    pub rank: u32,
    /// Its size.
    pub size: u64,
    /// Its alignment (a power of two).
    pub alignment: u64,
    /// Its fixed base address, if any.
    pub base: Option<u64>,
}

/// Where the regions went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Block indices in table order: by level, then as given.
    pub order: Vec<usize>,
    /// Each block's base address, by block index.
    pub addresses: Vec<u64>,
    /// The levels used, by rank, then name.
    pub levels: Vec<LevelLayout>,
}

/// Lays out `blocks`, given in description order.
pub fn lay_out(blocks: &[Block]) -> Result<Layout> {
    let mut order: Vec<usize> = (0..blocks.len()).collect();
    crate::sort::sort_by_key(&mut order, |&i| (blocks[i].rank, blocks[i].level));
    let mut addresses = vec![0u64; blocks.len()];
    let mut levels = Vec::new();
    let mut rest = &order[..];
    while let Some(&first) = rest.first() {
        let level = blocks[first].level;
        let n = rest.iter().position(|&i| blocks[i].level != level).unwrap_or(rest.len());
        let (group, tail) = rest.split_at(n);
        let size = lay_out_level(blocks, group, &mut addresses)?;
        let start = group.iter().map(|&i| addresses[i]).min().unwrap_or(0);
        levels.push(LevelLayout { name: level.to_string(), rank: blocks[first].rank, start, size });
        rest = tail;
    }
    Ok(Layout { order, addresses, levels })
}

/// `[start, end)` of a block at `start`.
fn end_of(b: &Block, start: u64) -> Result<u64> {
    start.checked_add(b.size).ok_or_else(|| {
        Error::overflow(format!("region '{}' of {} B at {start:#x} ends past 64-bit addresses", b.name, b.size))
    })
}

/// Lays out one level's blocks; returns the level's size (highest end of a
/// region that takes bytes).
fn lay_out_level(blocks: &[Block], group: &[usize], addresses: &mut [u64]) -> Result<u64> {
    // Fixed blocks by base; zero-sized ones take no bytes and meet nothing.
    let mut fixed: Vec<(u64, u64, usize)> = Vec::new();
    for &i in group {
        if let Some(base) = blocks[i].base {
            addresses[i] = base;
            if blocks[i].size > 0 {
                fixed.push((base, end_of(&blocks[i], base)?, i));
            }
        }
    }
    fixed.sort_unstable();
    let mut reach: Option<(u64, usize)> = None;
    for &(base, end, i) in &fixed {
        if let Some((far, j)) = reach.filter(|&(far, _)| far > base) {
            let (a, b) = (&blocks[j], &blocks[i]);
            return Err(Error::invalid(format!(
                "regions '{}' [{:#x}, {far:#x}) and '{}' [{base:#x}, {end:#x}) overlap in memory level '{}'",
                a.name, addresses[j], b.name, b.level
            )));
        }
        if reach.is_none_or(|(far, _)| end > far) {
            reach = Some((end, i));
        }
    }
    let mut level_end = fixed.iter().map(|&(_, end, _)| end).max().unwrap_or(0);
    let (mut cursor, mut next_fixed) = (0u64, 0usize);
    for &i in group.iter().filter(|&&i| blocks[i].base.is_none()) {
        let b = &blocks[i];
        let mut at = align_up(cursor, b.alignment)?;
        loop {
            while next_fixed < fixed.len() && fixed[next_fixed].1 <= at {
                next_fixed += 1;
            }
            match fixed.get(next_fixed) {
                Some(&(base, end, _)) if b.size > 0 && base < end_of(b, at)? => at = align_up(end, b.alignment)?,
                _ => break,
            }
        }
        addresses[i] = at;
        cursor = end_of(b, at)?;
        // An empty region (all its tensors moved, or never live) takes no
        // bytes of the level, whatever its alignment padding.
        if b.size > 0 {
            level_end = level_end.max(cursor);
        }
    }
    Ok(level_end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(name: &str, level: &str, rank: u32, size: u64, base: Option<u64>) -> Block<'static> {
        let name: &'static str = Box::leak(name.to_string().into_boxed_str());
        let level: &'static str = Box::leak(level.to_string().into_boxed_str());
        Block { name, level, rank, size, alignment: 64, base }
    }

    #[test]
    fn regions_pack_around_fixed_ones_level_by_level() {
        let blocks = [
            block("a", "ddr", 1, 100, None),
            block("fixed", "sram", 0, 64, Some(128)),
            block("b", "sram", 0, 100, None),
            block("c", "sram", 0, 64, None),
            block("d", "sram", 0, 10, None),
        ];
        let l = lay_out(&blocks).unwrap();
        assert_eq!(l.order, vec![1, 2, 3, 4, 0]);
        // b takes [0, 100); c would take [128, 192), the fixed one's place,
        // so goes after it; d follows c.
        assert_eq!(l.addresses, vec![0, 128, 0, 192, 256]);
        let levels: Vec<(&str, u64)> = l.levels.iter().map(|v| (v.name.as_str(), v.size)).collect();
        assert_eq!(levels, vec![("sram", 266), ("ddr", 100)]);
    }

    #[test]
    fn overlapping_fixed_regions_are_an_error_naming_both_ranges_and_the_level() {
        let blocks = [
            block("x", "sram", 0, 256, Some(0)),
            block("y", "sram", 0, 64, Some(512)),
            block("z", "sram", 0, 64, Some(192)),
        ];
        let e = lay_out(&blocks).unwrap_err();
        assert_eq!(e.message(), "regions 'x' [0x0, 0x100) and 'z' [0xc0, 0x100) overlap in memory level 'sram'");
        // Touching is not overlapping, nor are fixed regions of two levels.
        let blocks = [block("x", "sram", 0, 256, Some(0)), block("z", "dram", 1, 64, Some(0))];
        assert!(lay_out(&blocks).is_ok());
    }
}
