//! Guard mode: canaries around allocations and poison in released temp
//! memory, so that an overrun or a write after release is caught by the
//! next check (and every temp reset) instead of silently corrupting a
//! neighbour.
//!
//! Each guarded allocation is laid out as `[canary][data][canary]`; the
//! head gets one canary after its end. Released temp allocations that
//! still sit below a live one are filled with [`POISON`]; a changed byte
//! there means something wrote through a stale pointer.

use super::arena::{Arena, Side, TailRecord, TempRecord};
use super::memory::Memory;
use crate::message::Text;
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

/// Which allocation a guard belongs to.
#[derive(Copy, Clone, Debug)]
pub(super) enum Owner {
    /// A temp allocation, by its number since the last temp reset.
    Temp(u32),
    /// A released temp allocation whose memory was reclaimed.
    Released(u32),
    /// A persistent allocation, numbered from 1.
    Persistent(usize),
}

/// An allocation as a damage message names it.
#[derive(Copy, Clone, Debug)]
pub(super) struct Named {
    owner: Owner,
    addr: usize,
    size: usize,
    category: u32,
    side: Side,
}

/// One damaged guard, described when a check reports it (the arena's
/// category names at hand), so that finding it needs no heap.
#[derive(Copy, Clone, Debug)]
pub(super) enum Damage {
    /// `bytes` of the canary after (`after`) or before an allocation
    /// changed; `on_release`: found when it was released.
    Canary { named: Named, after: bool, bytes: usize, on_release: bool },
    /// `bytes` of a released temp allocation changed; `on_reclaim`: found
    /// when its memory was reclaimed.
    WrittenAfterRelease { named: Named, bytes: usize, on_reclaim: bool },
    /// `bytes` of reclaimed temp memory `[from, to)` changed, the first at
    /// `first`; `hit` is the released allocation that held it, if still
    /// watched.
    Stale { bytes: usize, from: usize, to: usize, first: usize, hit: Option<Named>, in_data: bool },
    /// `bytes` of the canary after the head (`size` B) changed.
    Head { size: usize, category: u32, bytes: usize },
}

impl Damage {
    /// A temp allocation's record, for messages.
    pub(super) fn temp(t: &TempRecord) -> Named {
        Named {
            owner: Owner::Temp(t.serial),
            addr: t.addr,
            size: t.size,
            category: t.category,
            side: Side::NonPersistent,
        }
    }
}

/// The damage found so far: the first (which the error names) and how many.
#[derive(Copy, Clone, Debug, Default)]
pub(super) struct DamageLog {
    first: Option<Damage>,
    count: usize,
}

impl DamageLog {
    fn add(&mut self, d: Damage) {
        if self.first.is_none() {
            self.first = Some(d);
        }
        self.count += 1;
    }

    /// Appends `other`'s damage after this log's.
    pub(super) fn append(&mut self, other: DamageLog) {
        if self.first.is_none() {
            self.first = other.first;
        }
        self.count += other.count;
    }

    /// The log with its canary damage marked as found on release.
    pub(super) fn found_on_release(mut self) -> DamageLog {
        if let Some(Damage::Canary { on_release, .. }) = &mut self.first {
            *on_release = true;
        }
        self
    }
}

impl<M: Memory> Arena<'_, M> {
    /// Guard mode: checks every canary and the poison of released temp
    /// memory; the error names the first damaged allocation and its
    /// category. Always succeeds without guard mode or without memory.
    pub fn check(&self) -> Result<()> {
        if self.canary() == 0 || !self.memory.is_backed() {
            return Ok(());
        }
        let mut damage = self.damage;
        let watched_end = self.poison_high.min(self.nonpersistent_limit());
        if watched_end > self.temp_top {
            if let (n, Some(first)) = unpoisoned(&self.memory, self.temp_top, watched_end - self.temp_top) {
                damage.add(self.stale_write(n, first, watched_end));
            }
        }
        if self.head_size > 0 {
            let n = damaged_canary_bytes(&self.memory, self.head_start + self.head_size);
            if n > 0 {
                damage.add(Damage::Head { size: self.head_size, category: self.head_category, bytes: n });
            }
        }
        for t in self.temps.as_slice() {
            if t.released {
                let n = unpoisoned_bytes(&self.memory, t.addr, t.size);
                if n > 0 {
                    damage.add(Damage::WrittenAfterRelease { named: Damage::temp(t), bytes: n, on_reclaim: false });
                }
            } else {
                self.check_canaries(Damage::temp(t), &mut damage);
            }
        }
        for (i, t) in self.tails.as_slice().iter().enumerate() {
            self.check_canaries(persistent(i, t), &mut damage);
        }
        match damage.first {
            None => Ok(()),
            Some(first) => Err(Error::with(Status::Corrupted, |out| {
                out.put("guard check failed: ");
                self.describe_damage(&first, out);
                if damage.count > 1 {
                    out.put(" (and ");
                    out.number(damage.count - 1);
                    out.put(if damage.count == 2 { " more damaged guard)" } else { " more damaged guards)" });
                }
            })),
        }
    }

    /// Records damage if the released temp allocation `t` was written after
    /// its release (its memory is about to be reclaimed).
    pub(super) fn note_write_after_release(&mut self, t: &TempRecord) {
        let n = unpoisoned_bytes(&self.memory, t.addr, t.size);
        if n > 0 {
            self.damage.add(Damage::WrittenAfterRelease { named: Damage::temp(t), bytes: n, on_reclaim: true });
        }
    }

    /// What a write into reclaimed temp memory `[temp_top, end)` hit: `n`
    /// bytes changed, the first at `first`.
    fn stale_write(&self, n: usize, first: usize, end: usize) -> Damage {
        // Each allocation took `[top_before, addr + size + canary)`: padding,
        // canary, data, canary. The watched ones are kept highest first,
        // and where two hold the byte (a later one was placed in an earlier
        // one's padding) the later is lower: search from the lowest, so
        // that the byte's last owner is named.
        let hit = self
            .reclaimed
            .as_slice()
            .iter()
            .rev()
            .find(|t| t.top_before <= first && first < t.addr + t.size + self.canary());
        Damage::Stale {
            bytes: n,
            from: self.temp_top,
            to: end,
            first,
            hit: hit.map(|t| Named { owner: Owner::Released(t.serial), ..Damage::temp(t) }),
            in_data: hit.is_some_and(|t| (t.addr..t.addr + t.size).contains(&first)),
        }
    }

    /// Adds the damage of the canaries around `named` to `damage`: after
    /// its end first, then before its start.
    pub(super) fn check_canaries(&self, named: Named, damage: &mut DamageLog) {
        let before = damaged_canary_bytes(&self.memory, named.addr - self.canary());
        let after = damaged_canary_bytes(&self.memory, named.addr + named.size);
        if after > 0 {
            damage.add(Damage::Canary { named, after: true, bytes: after, on_release: false });
        }
        if before > 0 {
            damage.add(Damage::Canary { named, after: false, bytes: before, on_release: false });
        }
    }

    fn describe_damage(&self, d: &Damage, out: &mut dyn Text) {
        match *d {
            Damage::Canary { named, after, bytes, on_release } => {
                self.describe(&named, out);
                out.put(if after { " was overrun: " } else { " was underrun: " });
                out.number(bytes);
                out.put(" of the ");
                out.number(CANARY_BYTES);
                out.put(if after {
                    " guard bytes after its end changed"
                } else {
                    " guard bytes before its start changed"
                });
                if on_release {
                    out.put(" (found when it was released)");
                }
            }
            Damage::WrittenAfterRelease { named, bytes, on_reclaim } => {
                self.describe(&named, out);
                out.put(" was written after it was released: ");
                out.number(bytes);
                out.put(" of its bytes changed");
                if on_reclaim {
                    out.put(" (found when its memory was reclaimed)");
                }
            }
            Damage::Stale { bytes, from, to, first, hit, in_data } => {
                match hit {
                    Some(named) => {
                        self.describe(&named, out);
                        out.put(" was written after it was released");
                        if !in_data {
                            out.put(" (its guard bytes or padding)");
                        }
                        out.put(": ");
                    }
                    // Part of its memory was handed out again (the rest is
                    // still watched), so no whole allocation is left to name.
                    None => {
                        out.put("released temp memory of ");
                        out.put(if self.is_split() { "the non-persistent buffer" } else { "the arena" });
                        out.put(" was written after it was released: ");
                    }
                }
                let at = |addr: usize| addr - self.np.start;
                out.number(bytes);
                out.put(" of the bytes of released temp memory at offsets ");
                out.number(at(from));
                out.put(" to ");
                out.number(at(to));
                out.put(" changed, the first at offset ");
                out.number(at(first));
            }
            Damage::Head { size, category, bytes } => {
                out.put("the head (");
                out.number(size);
                out.put(" B, last committed as category '");
                out.put(self.category_name(category));
                out.put("') was overrun: ");
                out.number(bytes);
                out.put(" of the ");
                out.number(CANARY_BYTES);
                out.put(" guard bytes after its end changed");
            }
        }
    }

    fn describe(&self, named: &Named, out: &mut dyn Text) {
        let (buffer, start) = match (self.is_split(), named.side) {
            (false, _) => ("the arena", self.np.start),
            (true, Side::Persistent) => ("the persistent buffer", self.p.start),
            (true, Side::NonPersistent) => ("the non-persistent buffer", self.np.start),
        };
        match named.owner {
            Owner::Temp(serial) => {
                out.put("temp allocation #");
                out.number(serial as usize);
            }
            Owner::Released(serial) => {
                out.put("released temp allocation #");
                out.number(serial as usize);
            }
            Owner::Persistent(n) => {
                out.put("persistent allocation #");
                out.number(n);
            }
        }
        out.put(" (category '");
        out.put(self.category_name(named.category));
        out.put("', ");
        out.number(named.size);
        out.put(" B at offset ");
        out.number(named.addr - start);
        out.put(" of ");
        out.put(buffer);
        out.put(")");
    }

    fn category_name(&self, id: u32) -> &str {
        self.categories.name(id).unwrap_or("?")
    }
}

/// The `i`-th persistent allocation (from 0), for messages.
fn persistent(i: usize, t: &TailRecord) -> Named {
    Named { owner: Owner::Persistent(i + 1), addr: t.addr, size: t.size, category: t.category, side: Side::Persistent }
}
