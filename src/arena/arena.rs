//! The arena itself: where each section starts and ends, and every call
//! that moves a boundary.
//!
//! Addresses are plain integers here; the C layer maps them to pointers.
//! Every call checks before it changes anything, so a failing call leaves
//! the arena exactly as it was.

use std::fmt;

use super::category::{Categories, Category, CategoryStats};
use super::guard::{self, CANARY_BYTES, POISON};
use super::memory::{Memory, NoMemory};
use crate::plan::Planner;
use crate::status::{Error, Result, Status};

/// The alignment used when a call passes 0, and the default alignment of
/// the arena's start.
pub const DEFAULT_ALIGNMENT: usize = 16;

/// Where a dry run pretends its buffer starts: aligned to every alignment a
/// call may ask for (up to `DRY_RUN_BASE` itself), so the size it reports
/// holds for any real buffer aligned to the largest alignment used.
pub const DRY_RUN_BASE: usize = 1 << (usize::BITS - 2);

/// A byte range `[start, start + len)` at a numeric address.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Span {
    /// First address.
    pub start: usize,
    /// Bytes.
    pub len: usize,
}

impl Span {
    /// A span; fails when it would wrap around the address space.
    pub fn new(start: usize, len: usize) -> Result<Span> {
        start.checked_add(len).ok_or_else(|| {
            Error::overflow(format!("buffer at {start:#x} of {len} B wraps around the address space"))
        })?;
        Ok(Span { start, len })
    }

    /// One past the last address.
    pub fn end(&self) -> usize {
        self.start + self.len
    }

    fn overlaps(&self, other: &Span) -> bool {
        self.start < other.end() && other.start < self.end()
    }
}

/// Which side of an arena a byte belongs to (for messages).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Side {
    /// The tail.
    Persistent,
    /// Head and temp.
    NonPersistent,
}

/// How an arena is laid over memory.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Buffers {
    /// One buffer: head and temp grow up from its start, the tail grows
    /// down from its end.
    Single(Span),
    /// Two buffers: the tail (persistent) in one, head and temp
    /// (non-persistent) in the other, for example tail in DRAM, head in
    /// SRAM.
    Split {
        /// Holds the tail.
        persistent: Span,
        /// Holds head and temp.
        nonpersistent: Span,
    },
    /// No memory: every call is checked and accounted as if the buffer were
    /// large enough, and [`ArenaSizes::required`] says how large it must be.
    DryRun,
}

/// Options fixed when the arena is made.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ArenaOptions {
    /// Alignment of the head's start and of calls that pass 0; a power of
    /// two. Committed plans may not need more.
    pub alignment: usize,
    /// Canaries around every allocation and poison in released temp memory.
    pub guard: bool,
    /// Per-category statistics (can be switched later).
    pub recording: bool,
}

impl Default for ArenaOptions {
    fn default() -> Self {
        ArenaOptions { alignment: DEFAULT_ALIGNMENT, guard: false, recording: false }
    }
}

/// A persistent allocation, kept for the exact size and the guard check
/// (32 bytes: one push per allocation is most of its cost).
#[derive(Copy, Clone, Debug)]
pub(super) struct TailRecord {
    pub(super) addr: usize,
    pub(super) size: usize,
    /// Single mode: the highest temp top while the allocations before this
    /// one existed (`floor_k` in `required`).
    pub(super) floor: usize,
    pub(super) category: u32,
    pub(super) align_log2: u8,
}

impl TailRecord {
    pub(super) fn align(&self) -> usize {
        1 << self.align_log2
    }
}

/// A temp allocation not yet reclaimed.
#[derive(Copy, Clone, Debug)]
pub(super) struct TempRecord {
    pub(super) addr: usize,
    pub(super) size: usize,
    /// The temp top before it: where the top returns when it is reclaimed.
    pub(super) top_before: usize,
    pub(super) category: u32,
    /// Its number since the last temp reset, for messages.
    pub(super) serial: u32,
    pub(super) released: bool,
}

/// A TFLite-Micro-style tensor arena: head (planned, non-persistent) at the
/// start, temp (scoped) above it, tail (persistent) growing down from the
/// end.
///
/// `M` gives guard mode its bytes; see [`Memory`].
pub struct Arena<M: Memory = NoMemory> {
    pub(super) memory: M,
    pub(super) alignment: usize,
    pub(super) canary: usize,
    pub(super) recording: bool,
    pub(super) dry_run: bool,
    pub(super) split: bool,
    /// Non-persistent side `[np.start, np.end)`.
    pub(super) np: Span,
    /// Persistent side `[p.start, p.end)`; equals `np` in single mode.
    pub(super) p: Span,
    pub(super) head_start: usize,
    pub(super) head_size: usize,
    pub(super) head_category: u32,
    /// Head end plus its canary: where temp starts.
    pub(super) temp_base: usize,
    pub(super) temp_top: usize,
    pub(super) temps: Vec<TempRecord>,
    pub(super) temps_held: usize,
    pub(super) temp_serial: u32,
    pub(super) temp_peak: usize,
    pub(super) tail_bottom: usize,
    pub(super) tails: Vec<TailRecord>,
    /// The highest temp top since the last persistent allocation (the
    /// floor of the next one; see `required`).
    pub(super) last_floor: usize,
    /// The highest temp top ever.
    pub(super) np_peak: usize,
    /// The largest alignment any call used (at least the arena's).
    pub(super) max_align: usize,
    /// Guard mode: damage found when a temp allocation was released,
    /// reported by every later check.
    pub(super) damage: Vec<String>,
    /// Guard mode: reclaimed temp memory up to here is poison; check()
    /// verifies `[temp_top, poison_high)` (below the tail).
    pub(super) poison_high: usize,
    /// Guard mode: the released temp allocations whose memory was reclaimed
    /// and is still watched, highest address first, so that a stale write
    /// found there names the allocation it hit.
    pub(super) reclaimed: Vec<TempRecord>,
    pub(super) plans: u64,
    pub(super) categories: Categories,
}

impl<M: Memory> fmt::Debug for Arena<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Arena").field("sizes", &self.sizes()).field("guard", &self.is_guarded()).finish()
    }
}

impl Arena<NoMemory> {
    /// A dry run: no memory; see [`Buffers::DryRun`].
    pub fn dry_run(options: ArenaOptions) -> Result<Self> {
        Arena::new(Buffers::DryRun, options, NoMemory)
    }
}

impl<M: Memory> Arena<M> {
    /// An arena over `buffers`, reading and writing guard bytes through
    /// `memory`. Fails when the alignment is not a power of two, when split
    /// buffers overlap, or when the start cannot be aligned inside the
    /// buffer.
    pub fn new(buffers: Buffers, options: ArenaOptions, memory: M) -> Result<Self> {
        check_alignment(options.alignment)?;
        let (np, p, split, dry_run) = match buffers {
            Buffers::Single(s) => (s, s, false, false),
            Buffers::Split { persistent, nonpersistent } => {
                if persistent.overlaps(&nonpersistent) {
                    return Err(Error::invalid(format!(
                        "the persistent buffer [{:#x}, {:#x}) and the non-persistent buffer [{:#x}, {:#x}) overlap",
                        persistent.start,
                        persistent.end(),
                        nonpersistent.start,
                        nonpersistent.end()
                    )));
                }
                (nonpersistent, persistent, true, false)
            }
            Buffers::DryRun => {
                let s = Span::new(DRY_RUN_BASE, DRY_RUN_BASE)?;
                (s, s, false, true)
            }
        };
        let head_start = np.start.checked_next_multiple_of(options.alignment).filter(|&h| h <= np.end()).ok_or_else(|| {
            // Only an unaligned start can fail, so the loss is positive.
            let loss = options.alignment - np.start % options.alignment;
            Error::new(
                Status::DoesNotFit,
                format!(
                    "buffer of {} B at {:#x} is too small to align its start to {}: requested {loss} B, available {} B, missing {} B",
                    np.len,
                    np.start,
                    options.alignment,
                    np.len,
                    loss.saturating_sub(np.len)
                ),
            )
        })?;
        Ok(Arena {
            memory,
            alignment: options.alignment,
            canary: if options.guard { CANARY_BYTES } else { 0 },
            recording: options.recording,
            dry_run,
            split,
            np,
            p,
            head_start,
            head_size: 0,
            head_category: Category::PlannedTensorData.id(),
            temp_base: head_start,
            temp_top: head_start,
            // Room for a typical kernel's scratch and a small model's
            // persistent data, so the first calls do not reallocate.
            temps: Vec::with_capacity(16),
            temps_held: 0,
            temp_serial: 0,
            temp_peak: 0,
            tail_bottom: p.end(),
            tails: Vec::with_capacity(64),
            last_floor: head_start,
            np_peak: head_start,
            max_align: options.alignment,
            damage: Vec::new(),
            poison_high: head_start,
            reclaimed: Vec::new(),
            plans: 0,
            categories: Categories::new(),
        })
    }

    /// Whether guard mode is on.
    pub fn is_guarded(&self) -> bool {
        self.canary > 0
    }

    /// Whether this is a dry run (no memory).
    pub fn is_dry_run(&self) -> bool {
        self.dry_run
    }

    /// Whether persistent and non-persistent sides are separate buffers.
    pub fn is_split(&self) -> bool {
        self.split
    }

    /// The arena's default alignment.
    pub fn alignment(&self) -> usize {
        self.alignment
    }

    /// Switches per-category recording on or off.
    pub fn set_recording(&mut self, on: bool) {
        self.recording = on;
    }

    /// Whether recording is on.
    pub fn is_recording(&self) -> bool {
        self.recording
    }

    /// The categories and what was recorded for them.
    pub fn categories(&self) -> &Categories {
        &self.categories
    }

    /// Registers a named category; see [`Categories::register`].
    pub fn register_category(&mut self, name: &str) -> Result<u32> {
        self.categories.register(name)
    }

    /// The memory behind the arena.
    pub fn memory(&self) -> &M {
        &self.memory
    }

    /// The memory behind the arena, for writing (tests damage guards
    /// through it).
    pub fn memory_mut(&mut self) -> &mut M {
        &mut self.memory
    }

    /// Where the head starts (also when it is empty).
    pub fn head_start(&self) -> usize {
        self.head_start
    }

    /// The non-persistent and persistent spans the arena manages.
    pub fn spans(&self) -> (Span, Span) {
        (self.np, self.p)
    }

    // --- allocation --------------------------------------------------------

    /// A persistent allocation from the tail: `size` bytes aligned to
    /// `alignment` (0: the arena's), never freed on its own. Returns its
    /// address.
    #[inline]
    pub fn alloc_persistent(&mut self, size: usize, alignment: usize, category: u32) -> Result<usize> {
        let align = self.call_alignment(alignment)?;
        check_size(size)?;
        self.categories.check(category)?;
        let c = self.canary;
        let bottom = self
            .tail_bottom
            .checked_sub(size + c)
            .map(|x| x & !(align - 1))
            .and_then(|data| data.checked_sub(c).map(|b| (data, b)))
            .filter(|&(_, b)| b >= self.persistent_limit());
        let Some((data, bottom)) = bottom else {
            return Err(self.tail_shortfall(size, align));
        };
        if c > 0 && self.memory.is_backed() {
            guard::write_canary(&mut self.memory, bottom);
            guard::write_canary(&mut self.memory, data + size);
        }
        if self.recording {
            self.categories.record(category, size, self.tail_bottom - bottom);
        }
        self.max_align = self.max_align.max(align);
        self.tails.push(TailRecord {
            addr: data,
            size,
            floor: self.last_floor,
            category,
            align_log2: align.trailing_zeros() as u8,
        });
        self.last_floor = self.temp_top;
        self.tail_bottom = bottom;
        Ok(data)
    }

    /// A temp allocation above the head: `size` bytes aligned to `alignment`
    /// (0: the arena's), released with [`Arena::release_temp`]. Returns its
    /// address.
    #[inline]
    pub fn alloc_temp(&mut self, size: usize, alignment: usize, category: u32) -> Result<usize> {
        let align = self.call_alignment(alignment)?;
        check_size(size)?;
        self.categories.check(category)?;
        let c = self.canary;
        let placed = self
            .temp_top
            .checked_add(c)
            .and_then(|x| align_up(x, align))
            .and_then(|data| data.checked_add(size + c).map(|top| (data, top)))
            .filter(|&(_, top)| top <= self.nonpersistent_limit());
        let Some((data, top)) = placed else {
            return Err(self.temp_shortfall(size, align));
        };
        if c > 0 && self.memory.is_backed() {
            guard::write_canary(&mut self.memory, data - c);
            guard::write_canary(&mut self.memory, data + size);
            self.forget_reclaimed_below(top);
        }
        if self.recording {
            self.categories.record(category, size, top - self.temp_top);
        }
        self.max_align = self.max_align.max(align);
        self.temp_serial = self.temp_serial.wrapping_add(1);
        self.temps.push(TempRecord {
            addr: data,
            size,
            top_before: self.temp_top,
            category,
            serial: self.temp_serial,
            released: false,
        });
        self.temps_held += 1;
        self.temp_top = top;
        self.temp_peak = self.temp_peak.max(top - self.temp_base);
        self.raise_floor(top);
        Ok(data)
    }

    /// Releases the temp allocation at `addr`. Its bytes are reclaimed once
    /// every temp allocation above it is released too (at the latest, at
    /// [`Arena::reset_temp`]). In guard mode its canaries are checked now
    /// (damage is reported by every later check) and its bytes poisoned, so
    /// that a write through a stale pointer is caught too.
    ///
    /// A stale address whose bytes were reclaimed and handed out again
    /// releases the new allocation there: the arena cannot tell them apart.
    #[inline]
    pub fn release_temp(&mut self, addr: usize) -> Result<()> {
        let Some(i) = self.temps.iter().rposition(|t| t.addr == addr) else {
            return Err(not_a_temp(addr));
        };
        let t = self.temps[i];
        if t.released {
            return Err(Error::invalid(format!(
                "temp allocation #{} at {addr:#x} ({} B) was already released",
                t.serial, t.size
            )));
        }
        self.temps[i].released = true;
        self.temps_held -= 1;
        let guarded = self.canary > 0 && self.memory.is_backed();
        if guarded {
            let what = format!("temp allocation #{}", t.serial);
            let mut found = Vec::new();
            self.check_canaries(&what, t.addr, t.size, t.category, Side::NonPersistent, &mut found);
            self.damage.extend(found.into_iter().map(|d| format!("{d} (found when it was released)")));
            self.memory.fill(t.addr, t.size, POISON);
        }
        let old_top = self.temp_top;
        while self.temps.last().is_some_and(|t| t.released) {
            let top = self.temps.pop().expect("checked just above");
            self.temp_top = top.top_before;
            if guarded {
                if top.serial != t.serial {
                    // Released earlier and poisoned then: check before the
                    // poison below is renewed and would hide a stale write.
                    self.note_write_after_release(&top);
                }
                self.reclaimed.push(top);
            }
        }
        if guarded && self.temp_top < old_top {
            // Reclaimed: poison all of it, canaries and padding included,
            // and let check() watch it until it is handed out again.
            self.memory.fill(self.temp_top, old_top - self.temp_top, POISON);
            self.poison_high = self.poison_high.max(old_top);
        }
        Ok(())
    }

    /// Ends the temp scope: fails (changing nothing) while temp allocations
    /// are held, or in guard mode when a guard was damaged.
    pub fn reset_temp(&mut self) -> Result<()> {
        self.check()?;
        if self.temps_held > 0 {
            return Err(Error::wrong_state(format!(
                "cannot reset temp: {} temp allocation{} still held (release {} first)",
                self.temps_held,
                if self.temps_held == 1 { " is" } else { "s are" },
                if self.temps_held == 1 { "it" } else { "them" }
            )));
        }
        self.temps.clear();
        self.temp_top = self.temp_base;
        Ok(())
    }

    /// Temp allocations held now.
    pub fn temps_held(&self) -> usize {
        self.temps_held
    }

    // --- head --------------------------------------------------------------

    /// Makes the head at least `size` bytes (it never shrinks here) and
    /// returns its start. Growing it while temp allocations are held is an
    /// error. Size 0 only asks where the head starts: nothing changes and
    /// nothing is recorded (`category` is still checked).
    pub fn reserve_head(&mut self, size: usize, category: u32) -> Result<usize> {
        self.categories.check(category)?;
        if size == 0 {
            return Ok(self.head_start);
        }
        check_size(size)?;
        self.grow_head(size)?;
        if self.recording {
            self.categories.record_many(category, 1, size as u64, size as u64);
        }
        self.plans += 1;
        self.head_category = category;
        Ok(self.head_start)
    }

    /// Commits the plan of `planner` to the head (the head becomes the
    /// largest committed plan) and returns the head's start: buffer `i`
    /// lives at `head_start + planner.offset(i)`. Recording counts every
    /// buffer of the plan (zero sizes and unused ones included) with
    /// `requested_bytes` as the bytes asked for: the planner keeps only
    /// sizes rounded up to its alignment, so the caller, who saw the sizes
    /// before rounding, passes their sum.
    pub fn commit(&mut self, planner: &Planner, requested_bytes: u64, category: u32) -> Result<usize> {
        self.categories.check(category)?;
        let outcome = planner.planned()?;
        let plan_alignment = planner.alignment();
        if plan_alignment > self.alignment as u64 {
            return Err(Error::invalid(format!(
                "the plan is aligned to {plan_alignment} B but the arena's start only to {} B; make the arena with alignment {plan_alignment} or more",
                self.alignment
            )));
        }
        let peak = usize::try_from(outcome.peak)
            .map_err(|_| Error::overflow(format!("plan peak {} B exceeds the address space", outcome.peak)))?;
        self.grow_head(peak)?;
        if self.recording {
            // Used is the plan's span, requested the sum of its buffers: the
            // difference is what reuse (minus alignment) saved.
            self.categories.record_many(category, planner.buffer_count() as u64, requested_bytes, peak as u64);
        }
        self.plans += 1;
        self.head_category = category;
        Ok(self.head_start)
    }

    /// Empties the head (every committed plan is dropped). An error while
    /// temp allocations are held.
    pub fn reset_head(&mut self) -> Result<()> {
        self.check()?;
        if self.temps_held > 0 {
            return Err(self.head_busy(0));
        }
        self.head_size = 0;
        self.temp_base = self.head_start;
        self.temp_top = self.head_start;
        // The head's bytes were never poison: stop watching them.
        self.poison_high = self.head_start;
        self.reclaimed.clear();
        self.temps.clear();
        self.plans = 0;
        Ok(())
    }

    fn grow_head(&mut self, size: usize) -> Result<()> {
        if size <= self.head_size {
            return Ok(());
        }
        if self.temps_held > 0 {
            return Err(self.head_busy(size));
        }
        let c = self.canary;
        let base = self
            .head_start
            .checked_add(size)
            .and_then(|e| e.checked_add(c))
            .filter(|&b| b <= self.nonpersistent_limit())
            .ok_or_else(|| self.head_shortfall(size))?;
        if c > 0 && self.memory.is_backed() {
            guard::write_canary(&mut self.memory, self.head_start + size);
            self.forget_reclaimed_below(base);
        }
        debug_assert!(self.temps.is_empty(), "no temp held means every temp record was reclaimed");
        self.head_size = size;
        self.temp_base = base;
        self.temp_top = base;
        self.raise_floor(base);
        Ok(())
    }

    #[cold]
    fn head_busy(&self, size: usize) -> Error {
        let what = if size > 0 {
            format!("grow the head from {} B to {size} B", self.head_size)
        } else {
            "reset the head".to_string()
        };
        Error::wrong_state(format!(
            "cannot {what} while {} temp allocation{} held; release {} first",
            self.temps_held,
            if self.temps_held == 1 { " is" } else { "s are" },
            if self.temps_held == 1 { "it" } else { "them" }
        ))
    }

    // --- limits and sizes ----------------------------------------------------

    pub(super) fn nonpersistent_limit(&self) -> usize {
        if self.split {
            self.np.end()
        } else {
            self.tail_bottom
        }
    }

    pub(super) fn persistent_limit(&self) -> usize {
        if self.split {
            self.p.start
        } else {
            self.temp_top
        }
    }

    /// Guard mode: memory below `top` is in use again, so the reclaimed
    /// allocations there are no longer watched.
    #[inline]
    fn forget_reclaimed_below(&mut self, top: usize) {
        while self.reclaimed.last().is_some_and(|t| t.addr < top) {
            self.reclaimed.pop();
        }
    }

    fn raise_floor(&mut self, top: usize) {
        self.np_peak = self.np_peak.max(top);
        self.last_floor = self.last_floor.max(top);
    }

    fn call_alignment(&self, alignment: usize) -> Result<usize> {
        if alignment == 0 {
            Ok(self.alignment)
        } else {
            check_alignment(alignment)?;
            Ok(alignment)
        }
    }

    /// The statistics of one category.
    pub fn category_stats(&self, id: u32) -> Result<CategoryStats> {
        self.categories.stats(id)
    }
}

#[cold]
fn not_a_temp(addr: usize) -> Error {
    Error::invalid(format!("{addr:#x} is not a temp allocation of this arena (or it was released and reclaimed)"))
}

/// Fails unless `alignment` is a power of two the arena supports: up to
/// [`DRY_RUN_BASE`] (2^62 on 64-bit targets), where a dry run pretends its
/// buffer starts, so that a dry run's sizes hold for every alignment.
pub fn check_alignment(alignment: usize) -> Result<()> {
    if alignment == 0 || !alignment.is_power_of_two() {
        return Err(Error::invalid(format!("alignment {alignment} is not a power of two")));
    }
    if alignment > DRY_RUN_BASE {
        return Err(Error::invalid(format!(
            "alignment {alignment} is larger than the largest supported, 2^{} = {DRY_RUN_BASE} B",
            DRY_RUN_BASE.trailing_zeros()
        )));
    }
    Ok(())
}

/// `x` rounded up to `align` (a power of two), or `None` on overflow. Bit
/// arithmetic: `checked_next_multiple_of` divides, which costs more than the
/// rest of an allocation.
#[inline]
pub(super) fn align_up(x: usize, align: usize) -> Option<usize> {
    debug_assert!(align.is_power_of_two());
    x.checked_add(align - 1).map(|y| y & !(align - 1))
}

#[inline]
fn check_size(size: usize) -> Result<()> {
    if size == 0 || size > isize::MAX as usize / 2 {
        return Err(bad_size(size));
    }
    Ok(())
}

#[cold]
fn bad_size(size: usize) -> Error {
    if size == 0 {
        Error::invalid("size is 0")
    } else {
        Error::overflow(format!("size {size} B is larger than any arena can be"))
    }
}
