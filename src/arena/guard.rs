//! Guard mode: canaries around allocations and poison in released temp
//! memory, so that an overrun or a write after release is caught by the
//! next check (and every temp reset) instead of silently corrupting a
//! neighbour.
//!
//! Each guarded allocation is laid out as `[canary][data][canary]`; the
//! head gets one canary after its end. Released temp allocations that
//! still sit below a live one are filled with [`POISON`]; a changed byte
//! there means something wrote through a stale pointer.

use super::arena::{Arena, Side, TempRecord};
use super::memory::Memory;
use crate::status::{Error, Result, Status};

/// Bytes of each canary. A multiple of every alignment up to 16, so a
/// canary never costs extra padding at the default alignment.
pub const CANARY_BYTES: usize = 16;

/// The canary pattern: not a small integer, a common float or a pointer in
/// either byte order, and no byte value fills it, so an overwrite with any
/// constant byte changes at least 13 of its 16 bytes.
pub const CANARY: [u8; CANARY_BYTES] =
    [0xCA, 0xFE, 0x5A, 0xFE, 0xD0, 0x0D, 0xF0, 0x0D, 0x6E, 0x6E, 0x6D, 0xA1, 0xB2, 0xC3, 0xE4, 0x97];

/// The byte released temp memory is filled with.
pub const POISON: u8 = 0xDD;

/// Writes a canary at `addr`.
pub fn write_canary<M: Memory>(memory: &mut M, addr: usize) {
    memory.write(addr, &CANARY);
}

/// How many bytes of the canary at `addr` changed (0 when intact).
pub fn damaged_canary_bytes<M: Memory>(memory: &M, addr: usize) -> usize {
    let mut seen = [0u8; CANARY_BYTES];
    memory.read(addr, &mut seen);
    seen.iter().zip(CANARY.iter()).filter(|(a, b)| a != b).count()
}

/// How many of `len` bytes at `addr` are no longer [`POISON`].
pub fn unpoisoned_bytes<M: Memory>(memory: &M, addr: usize, len: usize) -> usize {
    unpoisoned(memory, addr, len).0
}

/// How many of `len` bytes at `addr` are no longer [`POISON`], and the
/// address of the first of them.
fn unpoisoned<M: Memory>(memory: &M, addr: usize, len: usize) -> (usize, Option<usize>) {
    let mut chunk = [0u8; 256];
    let mut changed = 0;
    let mut first = None;
    let mut at = 0;
    while at < len {
        let n = (len - at).min(chunk.len());
        memory.read(addr + at, &mut chunk[..n]);
        if first.is_none() {
            first = chunk[..n].iter().position(|&b| b != POISON).map(|i| addr + at + i);
        }
        changed += chunk[..n].iter().filter(|&&b| b != POISON).count();
        at += n;
    }
    (changed, first)
}

impl<M: Memory> Arena<M> {
    /// Guard mode: checks every canary and the poison of released temp
    /// memory; the error names the first damaged allocation and its
    /// category. Always succeeds without guard mode or without memory.
    pub fn check(&self) -> Result<()> {
        if self.canary == 0 || !self.memory.is_backed() {
            return Ok(());
        }
        let mut damage: Vec<String> = self.damage.clone();
        let watched_end = self.poison_high.min(self.nonpersistent_limit());
        if watched_end > self.temp_top {
            if let (n, Some(first)) = unpoisoned(&self.memory, self.temp_top, watched_end - self.temp_top) {
                damage.push(self.stale_write(n, first, watched_end));
            }
        }
        if self.head_size > 0 {
            let n = damaged_canary_bytes(&self.memory, self.head_start + self.head_size);
            if n > 0 {
                damage.push(format!(
                    "the head ({} B, last committed as category '{}') was overrun: {n} of the {CANARY_BYTES} guard bytes after its end changed",
                    self.head_size,
                    self.category_name(self.head_category)
                ));
            }
        }
        for t in &self.temps {
            let what = format!("temp allocation #{}", t.serial);
            if t.released {
                let n = unpoisoned_bytes(&self.memory, t.addr, t.size);
                if n > 0 {
                    damage.push(format!(
                        "{} was written after it was released: {n} of its bytes changed",
                        self.describe(&what, t.addr, t.size, t.category, Side::NonPersistent)
                    ));
                }
            } else {
                self.check_canaries(&what, t.addr, t.size, t.category, Side::NonPersistent, &mut damage);
            }
        }
        for (i, t) in self.tails.iter().enumerate() {
            self.check_canaries(
                &format!("persistent allocation #{}", i + 1),
                t.addr,
                t.size,
                t.category,
                Side::Persistent,
                &mut damage,
            );
        }
        match damage.len() {
            0 => Ok(()),
            1 => Err(Error::new(Status::Corrupted, format!("guard check failed: {}", damage[0]))),
            n => Err(Error::new(
                Status::Corrupted,
                format!(
                    "guard check failed: {} (and {} more damaged guard{})",
                    damage[0],
                    n - 1,
                    if n == 2 { "" } else { "s" }
                ),
            )),
        }
    }

    /// Records damage if the released temp allocation `t` was written after
    /// its release (its memory is about to be reclaimed).
    pub(super) fn note_write_after_release(&mut self, t: &TempRecord) {
        let n = unpoisoned_bytes(&self.memory, t.addr, t.size);
        if n > 0 {
            let what = format!("temp allocation #{}", t.serial);
            let d = format!(
                "{} was written after it was released: {n} of its bytes changed (found when its memory was reclaimed)",
                self.describe(&what, t.addr, t.size, t.category, Side::NonPersistent)
            );
            self.damage.push(d);
        }
    }

    /// Names what a write into reclaimed temp memory `[temp_top, end)` hit:
    /// `n` bytes changed, the first at `first`.
    fn stale_write(&self, n: usize, first: usize, end: usize) -> String {
        let at = |addr: usize| addr - self.np.start;
        let changed = format!(
            "{n} of the bytes of released temp memory at offsets {} to {} changed, the first at offset {}",
            at(self.temp_top),
            at(end),
            at(first)
        );
        // Each allocation took `[top_before, addr + size + canary)`: padding,
        // canary, data, canary.
        let hit = self.reclaimed.iter().find(|t| t.top_before <= first && first < t.addr + t.size + self.canary);
        match hit {
            Some(t) => {
                let what = format!("released temp allocation #{}", t.serial);
                let part =
                    if (t.addr..t.addr + t.size).contains(&first) { "" } else { " (its guard bytes or padding)" };
                format!(
                    "{} was written after it was released{part}: {changed}",
                    self.describe(&what, t.addr, t.size, t.category, Side::NonPersistent)
                )
            }
            // Part of its memory was handed out again (the rest is still
            // watched), so no whole allocation is left to name.
            None => format!(
                "released temp memory of {} was written after it was released: {changed}",
                if self.split { "the non-persistent buffer" } else { "the arena" }
            ),
        }
    }

    pub(super) fn check_canaries(
        &self,
        what: &str,
        addr: usize,
        size: usize,
        category: u32,
        side: Side,
        damage: &mut Vec<String>,
    ) {
        let before = damaged_canary_bytes(&self.memory, addr - self.canary);
        let after = damaged_canary_bytes(&self.memory, addr + size);
        if after > 0 {
            damage.push(format!(
                "{} was overrun: {after} of the {CANARY_BYTES} guard bytes after its end changed",
                self.describe(what, addr, size, category, side)
            ));
        }
        if before > 0 {
            damage.push(format!(
                "{} was underrun: {before} of the {CANARY_BYTES} guard bytes before its start changed",
                self.describe(what, addr, size, category, side)
            ));
        }
    }

    fn describe(&self, what: &str, addr: usize, size: usize, category: u32, side: Side) -> String {
        let (buffer, start) = match (self.split, side) {
            (false, _) => ("the arena", self.np.start),
            (true, Side::Persistent) => ("the persistent buffer", self.p.start),
            (true, Side::NonPersistent) => ("the non-persistent buffer", self.np.start),
        };
        format!("{what} (category '{}', {size} B at offset {} of {buffer})", self.category_name(category), addr - start)
    }

    fn category_name(&self, id: u32) -> &str {
        self.categories.name(id).unwrap_or("?")
    }
}
