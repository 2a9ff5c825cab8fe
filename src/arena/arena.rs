//! The arena itself: where each section starts and ends, and every call
//! that moves a boundary.
//!
//! Addresses are plain integers here; the C layer maps them to pointers.
//! Every call checks before it changes anything, so a failing call leaves
//! the arena exactly as it was.

use core::fmt;

use super::category::{Categories, Category, CategoryStats};
use super::guard::{self, Damage, DamageLog, CANARY_BYTES, POISON};
use super::memory::{Memory, NoMemory};
use super::stack::Stack;
#[cfg(feature = "std")]
use crate::plan::Planner;
use crate::status::{Error, Result, Status};

/// The alignment used when a call passes 0, and the default alignment of
/// the arena's start.
pub const DEFAULT_ALIGNMENT: usize = 16;

/// Whether this build has guard mode: always on the host; in the embedded
/// build with the `arena-guard` feature, so that a firmware that does not
/// use it does not carry its code. Without it, asking for guard mode fails.
pub const GUARD_BUILT: bool = cfg!(any(feature = "std", feature = "arena-guard"));

/// Whether this build has recording: always on the host; in the embedded
/// build with the `arena-recording` feature (as [`GUARD_BUILT`]). Without
/// it, switching recording on fails and every category reads zero.
pub const RECORDING_BUILT: bool = cfg!(any(feature = "std", feature = "arena-recording"));

/// Whether temp allocations are numbered: their numbers name them in
/// messages and guard reports, so an embedded build with neither skips
/// the count.
const NUMBERED: bool = GUARD_BUILT || !crate::status::MESSAGES_STRIPPED;

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
        if start.checked_add(len).is_none() {
            return Err(Error::with(Status::Overflow, |t| {
                t.put("buffer at ");
                t.hex(start);
                t.put(" of ");
                t.number(len);
                t.put(" B wraps around the address space");
            }));
        }
        Ok(Span { start, len })
    }

    /// One past the last address.
    pub fn end(&self) -> usize {
        self.start + self.len
    }

    #[cfg(feature = "std")]
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
    /// SRAM. Host only: the embedded build's arenas are single, so that
    /// their code carries no split case.
    #[cfg(feature = "std")]
    Split {
        /// Holds the tail.
        persistent: Span,
        /// Holds head and temp.
        nonpersistent: Span,
    },
    /// No memory: every call is checked and accounted as if the buffer were
    /// large enough, and [`ArenaSizes::required`] says how large it must be.
    /// Host only, as `Split`.
    #[cfg(feature = "std")]
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

impl ArenaOptions {
    /// Fails unless an arena can be made with these options: the alignment
    /// (see [`check_alignment`]), and guard mode and recording only where
    /// the build has them ([`GUARD_BUILT`], [`RECORDING_BUILT`]).
    pub fn check(&self) -> Result<()> {
        check_alignment(self.alignment)?;
        if self.guard && !GUARD_BUILT {
            return Err(not_built("guard mode", "arena-guard"));
        }
        if self.recording && !RECORDING_BUILT {
            return Err(not_built("recording", "arena-recording"));
        }
        Ok(())
    }
}

/// A persistent allocation, kept for the exact size and the guard check
/// (32 bytes on 64-bit targets: one push per allocation is most of its
/// cost). `nnm_arena_init` keeps them in the caller's state.
#[derive(Copy, Clone, Debug, Default)]
pub struct TailRecord {
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

/// A temp allocation not yet reclaimed. `nnm_arena_init` keeps them in the
/// caller's state.
#[derive(Copy, Clone, Debug, Default)]
pub struct TempRecord {
    pub(super) addr: usize,
    pub(super) size: usize,
    /// The temp top before it: where the top returns when it is reclaimed.
    pub(super) top_before: usize,
    pub(super) category: u32,
    /// Its number since the last temp reset, for messages.
    pub(super) serial: u32,
    pub(super) released: bool,
}

// Both records hold only integers and a bool, so all-zero bytes are a
// valid record: `nnm_arena_init` zeroes its slots in one go and relies on
// it. The destructuring below stops the build when a field is added or
// changes type, so that the promise is looked at again.
const _: () = {
    let _ = |t: TempRecord, p: TailRecord| {
        let TempRecord { addr, size, top_before, category, serial, released } = t;
        let TailRecord { addr: a, size: s, floor, category: c, align_log2 } = p;
        let _: (usize, usize, usize, u32, u32, bool) = (addr, size, top_before, category, serial, released);
        let _: (usize, usize, usize, u32, u8) = (a, s, floor, c, align_log2);
    };
};

/// A TFLite-Micro-style tensor arena: head (planned, non-persistent) at the
/// start, temp (scoped) above it, tail (persistent) growing down from the
/// end.
///
/// `M` gives guard mode its bytes; see [`Memory`]. The records live on
/// the heap ([`Arena::new`]) or in slots the caller gives
/// ([`Arena::in_slots`]); see [`Stack`].
pub struct Arena<'a, M: Memory = NoMemory> {
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
    pub(super) temps: Stack<'a, TempRecord>,
    pub(super) temps_held: usize,
    pub(super) temp_serial: u32,
    pub(super) temp_peak: usize,
    pub(super) tail_bottom: usize,
    pub(super) tails: Stack<'a, TailRecord>,
    /// The highest temp top since the last persistent allocation (the
    /// floor of the next one; see `required`).
    pub(super) last_floor: usize,
    /// The highest temp top ever.
    pub(super) np_peak: usize,
    /// The largest alignment any call used (at least the arena's).
    pub(super) max_align: usize,
    /// Guard mode: damage found when a temp allocation was released,
    /// reported by every later check.
    pub(super) damage: DamageLog,
    /// Guard mode: reclaimed temp memory up to here is poison; check()
    /// verifies `[temp_top, poison_high)` (below the tail).
    pub(super) poison_high: usize,
    /// Guard mode: the released temp allocations whose memory was reclaimed
    /// and is still watched, highest address first, so that a stale write
    /// found there names the allocation it hit. When its slots are full
    /// the lowest are not kept: a stale write there is still found, only
    /// not named.
    pub(super) reclaimed: Stack<'a, TempRecord>,
    pub(super) plans: u64,
    pub(super) categories: Categories,
}

impl<M: Memory> fmt::Debug for Arena<'_, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Arena").field("sizes", &self.sizes()).field("guard", &self.is_guarded()).finish()
    }
}

#[cfg(feature = "std")]
impl Arena<'static, NoMemory> {
    /// A dry run: no memory; see [`Buffers::DryRun`].
    pub fn dry_run(options: ArenaOptions) -> Result<Self> {
        Arena::new(Buffers::DryRun, options, NoMemory)
    }
}

#[cfg(feature = "std")]
impl<M: Memory> Arena<'static, M> {
    /// An arena over `buffers`, reading and writing guard bytes through
    /// `memory`, with its records on the heap. Fails when the alignment is
    /// not a power of two, when split buffers overlap, or when the start
    /// cannot be aligned inside the buffer.
    pub fn new(buffers: Buffers, options: ArenaOptions, memory: M) -> Result<Self> {
        // Room for a typical kernel's scratch and a small model's
        // persistent data, so the first calls do not reallocate.
        Arena::with_records(buffers, options, memory, Stack::on_heap(16), Stack::on_heap(0), Stack::on_heap(64))
    }
}

/// The slots of an arena kept in memory the caller gives
/// ([`Arena::in_slots`]).
pub struct Slots<'a> {
    /// One per temp allocation held at once (released ones not yet
    /// reclaimed included).
    pub temps: &'a mut [TempRecord],
    /// Guard mode: released temp allocations watched for stale writes
    /// (only to name them; as many as `temps` is plenty).
    pub reclaimed: &'a mut [TempRecord],
    /// One per persistent allocation.
    pub tails: &'a mut [TailRecord],
}

impl<'a, M: Memory> Arena<'a, M> {
    /// As [`Arena::new`], with the records in `slots`: a temp or persistent
    /// allocation that finds its slots full fails (DOES_NOT_FIT, naming
    /// the slots) and changes nothing.
    #[inline]
    pub fn in_slots(buffers: Buffers, options: ArenaOptions, memory: M, slots: Slots<'a>) -> Result<Self> {
        let Slots { temps, reclaimed, tails } = slots;
        Arena::with_records(
            buffers,
            options,
            memory,
            Stack::in_slots(temps),
            Stack::in_slots(reclaimed),
            Stack::in_slots(tails),
        )
    }

    #[inline]
    fn with_records(
        buffers: Buffers,
        options: ArenaOptions,
        memory: M,
        temps: Stack<'a, TempRecord>,
        reclaimed: Stack<'a, TempRecord>,
        tails: Stack<'a, TailRecord>,
    ) -> Result<Self> {
        options.check()?;
        let (np, p, split, dry_run) = match buffers {
            Buffers::Single(s) => (s, s, false, false),
            #[cfg(feature = "std")]
            Buffers::Split { persistent, nonpersistent } => {
                if persistent.overlaps(&nonpersistent) {
                    return Err(Error::with(Status::InvalidArgument, |t| {
                        t.put("the persistent buffer [");
                        t.hex(persistent.start);
                        t.put(", ");
                        t.hex(persistent.end());
                        t.put(") and the non-persistent buffer [");
                        t.hex(nonpersistent.start);
                        t.put(", ");
                        t.hex(nonpersistent.end());
                        t.put(") overlap");
                    }));
                }
                (nonpersistent, persistent, true, false)
            }
            #[cfg(feature = "std")]
            Buffers::DryRun => {
                let s = Span::new(DRY_RUN_BASE, DRY_RUN_BASE)?;
                (s, s, false, true)
            }
        };
        let Some(head_start) = align_up(np.start, options.alignment).filter(|&h| h <= np.end()) else {
            // Only an unaligned start can fail, so the loss is positive.
            let loss = options.alignment - (np.start & (options.alignment - 1));
            return Err(Error::with(Status::DoesNotFit, |t| {
                t.put("buffer of ");
                t.number(np.len);
                t.put(" B at ");
                t.hex(np.start);
                t.put(" is too small to align its start to ");
                t.number(options.alignment);
                t.put(": requested ");
                t.number(loss);
                t.put(" B, available ");
                t.number(np.len);
                t.put(" B, missing ");
                t.number(loss.saturating_sub(np.len));
                t.put(" B");
            }));
        };
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
            temps,
            temps_held: 0,
            temp_serial: 0,
            temp_peak: 0,
            tail_bottom: p.end(),
            tails,
            last_floor: head_start,
            np_peak: head_start,
            max_align: options.alignment,
            damage: DamageLog::default(),
            poison_high: head_start,
            reclaimed,
            plans: 0,
            categories: Categories::new(),
        })
    }

    /// Whether guard mode is on.
    pub fn is_guarded(&self) -> bool {
        self.canary() > 0
    }

    /// The bytes of each guard canary: 0 without guard mode, and always 0
    /// in a build without it (so its code folds away).
    #[inline(always)]
    pub(super) fn canary(&self) -> usize {
        if GUARD_BUILT {
            self.canary
        } else {
            0
        }
    }

    /// Whether this is a dry run (no memory).
    #[inline(always)]
    pub fn is_dry_run(&self) -> bool {
        cfg!(feature = "std") && self.dry_run
    }

    /// Whether persistent and non-persistent sides are separate buffers.
    #[inline(always)]
    pub fn is_split(&self) -> bool {
        cfg!(feature = "std") && self.split
    }

    /// The arena's default alignment.
    pub fn alignment(&self) -> usize {
        self.alignment
    }

    /// Switches per-category recording on or off. Switching it on fails
    /// (changing nothing) in a build without recording.
    pub fn set_recording(&mut self, on: bool) -> Result<()> {
        if on && !RECORDING_BUILT {
            return Err(not_built("recording", "arena-recording"));
        }
        self.recording = on;
        Ok(())
    }

    /// Whether recording is on (never in a build without it).
    #[inline(always)]
    pub fn is_recording(&self) -> bool {
        RECORDING_BUILT && self.recording
    }

    /// The categories and what was recorded for them.
    pub fn categories(&self) -> &Categories {
        &self.categories
    }

    /// Registers a named category; see [`Categories::register`].
    #[cfg(feature = "std")]
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
        self.allocate(Scope::Persistent, size, alignment, category)
    }

    /// A temp allocation above the head: `size` bytes aligned to `alignment`
    /// (0: the arena's), released with [`Arena::release_temp`]. Returns its
    /// address.
    #[inline]
    pub fn alloc_temp(&mut self, size: usize, alignment: usize, category: u32) -> Result<usize> {
        self.allocate(Scope::Temp, size, alignment, category)
    }

    /// [`Arena::alloc_persistent`] or [`Arena::alloc_temp`]: the arguments
    /// are checked the same way for both, so a caller that keeps one copy
    /// of this (the embedded build's C layer) keeps one copy of the checks.
    /// Always inlined: with a constant `scope` (the host's exports) only
    /// one side's code remains, as hot as a call of its own.
    #[inline(always)]
    pub fn allocate(&mut self, scope: Scope, size: usize, alignment: usize, category: u32) -> Result<usize> {
        let align = self.call_alignment(alignment)?;
        check_size(size)?;
        self.categories.check(category)?;
        match scope {
            Scope::Persistent => self.place_persistent(size, align, category),
            Scope::Temp => self.place_temp(size, align, category),
        }
    }

    #[inline(always)]
    fn place_persistent(&mut self, size: usize, align: usize, category: u32) -> Result<usize> {
        let c = self.canary();
        let bottom = self
            .tail_bottom
            .checked_sub(size + c)
            .map(|x| x & !(align - 1))
            .and_then(|data| data.checked_sub(c).map(|b| (data, b)))
            .filter(|&(_, b)| b >= self.persistent_limit());
        let Some((data, bottom)) = bottom else {
            return Err(self.tail_shortfall(size, align));
        };
        if self.tails.is_full() {
            return Err(self.slots_full(SlotKind::Persistent));
        }
        if c > 0 && self.memory.is_backed() {
            self.guard_around(data, size);
        }
        if self.is_recording() {
            self.categories.record(category, size, self.tail_bottom - bottom);
        }
        self.max_align = self.max_align.max(align);
        // Cannot fail: checked above.
        let _ = self.tails.push(TailRecord {
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

    #[inline(always)]
    fn place_temp(&mut self, size: usize, align: usize, category: u32) -> Result<usize> {
        let c = self.canary();
        let placed = self
            .temp_top
            .checked_add(c)
            .and_then(|x| align_up(x, align))
            .and_then(|data| data.checked_add(size + c).map(|top| (data, top)))
            .filter(|&(_, top)| top <= self.nonpersistent_limit());
        let Some((data, top)) = placed else {
            return Err(self.temp_shortfall(size, align));
        };
        if self.temps.is_full() {
            return Err(self.slots_full(SlotKind::Temp));
        }
        if c > 0 && self.memory.is_backed() {
            self.guard_around(data, size);
            self.forget_reclaimed_below(top);
        }
        if self.is_recording() {
            self.categories.record(category, size, top - self.temp_top);
        }
        self.max_align = self.max_align.max(align);
        if NUMBERED {
            self.temp_serial = self.temp_serial.wrapping_add(1);
        }
        // Cannot fail: checked above.
        let _ = self.temps.push(TempRecord {
            addr: data,
            size,
            top_before: self.temp_top,
            category,
            serial: if NUMBERED { self.temp_serial } else { 0 },
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
        let Some(record) = self.temps.as_mut_slice().iter_mut().rev().find(|t| t.addr == addr) else {
            return Err(not_a_temp(addr));
        };
        let t = *record;
        if t.released {
            return Err(Error::with(Status::InvalidArgument, |out| {
                out.put("temp allocation #");
                out.number(t.serial as usize);
                out.put(" at ");
                out.hex(addr);
                out.put(" (");
                out.number(t.size);
                out.put(" B) was already released");
            }));
        }
        record.released = true;
        self.temps_held -= 1;
        let guarded = self.canary() > 0 && self.memory.is_backed();
        if guarded {
            let mut found = DamageLog::default();
            self.check_canaries(Damage::temp(&t), &mut found);
            self.damage.append(found.found_on_release());
            self.memory.fill(t.addr, t.size, POISON);
        }
        let old_top = self.temp_top;
        while let Some(top) = self.temps.pop_if(|t| t.released) {
            self.temp_top = top.top_before;
            if guarded {
                if top.serial != t.serial {
                    // Released earlier and poisoned then: check before the
                    // poison below is renewed and would hide a stale write.
                    self.note_write_after_release(&top);
                }
                // Full slots keep the higher ones: a stale write below
                // them is still found, only not named.
                let _ = self.reclaimed.push(top);
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
    #[inline]
    pub fn reset_temp(&mut self) -> Result<()> {
        self.check()?;
        if self.temps_held > 0 {
            let held = self.temps_held;
            return Err(Error::with(Status::WrongState, |t| {
                t.put("cannot reset temp: ");
                t.number(held);
                t.put(if held == 1 { " temp allocation is" } else { " temp allocations are" });
                t.put(if held == 1 { " still held (release it first)" } else { " still held (release them first)" });
            }));
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
    #[inline]
    pub fn reserve_head(&mut self, size: usize, category: u32) -> Result<usize> {
        self.categories.check(category)?;
        if size == 0 {
            return Ok(self.head_start);
        }
        check_size(size)?;
        self.grow_head(size)?;
        if self.is_recording() {
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
    #[cfg(feature = "std")]
    pub fn commit(&mut self, planner: &Planner, requested_bytes: u64, category: u32) -> Result<usize> {
        self.categories.check(category)?;
        let outcome = planner.planned()?;
        let plan = PlanFigures {
            peak: outcome.peak,
            alignment: planner.alignment(),
            buffers: planner.buffer_count() as u64,
            requested_bytes,
        };
        self.commit_figures(plan, category)
    }

    /// Commits a plan made elsewhere (the scratch planner's, for one) by
    /// its figures; see [`Arena::commit`].
    pub fn commit_figures(&mut self, plan: PlanFigures, category: u32) -> Result<usize> {
        self.categories.check(category)?;
        if plan.alignment > self.alignment as u64 {
            let arena = self.alignment;
            return Err(Error::with(Status::InvalidArgument, |t| {
                t.put("the plan is aligned to ");
                t.wide(plan.alignment.into());
                t.put(" B but the arena's start only to ");
                t.number(arena);
                t.put(" B; make the arena with alignment ");
                t.wide(plan.alignment.into());
                t.put(" or more");
            }));
        }
        let Ok(peak) = usize::try_from(plan.peak) else {
            return Err(Error::with(Status::Overflow, |t| {
                t.put("plan peak ");
                t.wide(plan.peak.into());
                t.put(" B exceeds the address space");
            }));
        };
        self.grow_head(peak)?;
        if self.is_recording() {
            // Used is the plan's span, requested the sum of its buffers: the
            // difference is what reuse (minus alignment) saved.
            self.categories.record_many(category, plan.buffers, plan.requested_bytes, peak as u64);
        }
        self.plans += 1;
        self.head_category = category;
        Ok(self.head_start)
    }

    /// Empties the head (every committed plan is dropped). An error while
    /// temp allocations are held.
    #[inline]
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

    #[inline]
    fn grow_head(&mut self, size: usize) -> Result<()> {
        if size <= self.head_size {
            return Ok(());
        }
        if self.temps_held > 0 {
            return Err(self.head_busy(size));
        }
        let c = self.canary();
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

    #[cfg_attr(not(nnmem_stripped), cold, inline(never))]
    #[cfg_attr(nnmem_stripped, inline(always))]
    fn head_busy(&self, size: usize) -> Error {
        let (held, head) = (self.temps_held, self.head_size);
        Error::with(Status::WrongState, |t| {
            if size > 0 {
                t.put("cannot grow the head from ");
                t.number(head);
                t.put(" B to ");
                t.number(size);
                t.put(" B while ");
            } else {
                t.put("cannot reset the head while ");
            }
            t.number(held);
            t.put(if held == 1 {
                " temp allocation is held; release it first"
            } else {
                " temp allocations are held; release them first"
            });
        })
    }

    /// The error of an allocation whose record finds the caller's slots
    /// full (`nnm_arena_init`'s state).
    #[cfg_attr(not(nnmem_stripped), cold, inline(never))]
    #[cfg_attr(nnmem_stripped, inline(always))]
    fn slots_full(&self, kind: SlotKind) -> Error {
        let (what, capacity, remedy) = match kind {
            SlotKind::Temp => ("temp", self.temps.capacity(), "a larger max_temps"),
            SlotKind::Persistent => ("persistent", self.tails.capacity(), "a larger state"),
        };
        let capacity = capacity.unwrap_or(0);
        Error::with(Status::DoesNotFit, |t| {
            t.put("the arena's state has room for ");
            t.number(capacity);
            t.put(" ");
            t.put(what);
            t.put(if capacity == 1 { " record" } else { " records" });
            t.put(" and every one is in use: give nnm_arena_init ");
            t.put(remedy);
            t.put(" for one more ");
            t.put(what);
            t.put(" allocation");
        })
    }

    // --- limits and sizes ----------------------------------------------------

    pub(super) fn nonpersistent_limit(&self) -> usize {
        if self.is_split() {
            self.np.end()
        } else {
            self.tail_bottom
        }
    }

    pub(super) fn persistent_limit(&self) -> usize {
        if self.is_split() {
            self.p.start
        } else {
            self.temp_top
        }
    }

    /// Guard mode: the canaries before and after the allocation of `size`
    /// bytes at `data`. Out of line: both allocation calls share it, and it
    /// stays off their path without guard mode.
    #[inline(never)]
    fn guard_around(&mut self, data: usize, size: usize) {
        let before = data - self.canary();
        guard::write_canary(&mut self.memory, before);
        guard::write_canary(&mut self.memory, data + size);
    }

    /// Guard mode: memory below `top` is in use again, so the reclaimed
    /// allocations there are no longer watched.
    #[inline]
    fn forget_reclaimed_below(&mut self, top: usize) {
        while self.reclaimed.pop_if(|t| t.addr < top).is_some() {}
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

/// The figures of a plan that [`Arena::commit_figures`] needs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PlanFigures {
    /// The plan's span: the head it needs.
    pub peak: u64,
    /// The alignment its offsets hold.
    pub alignment: u64,
    /// Its buffers (recorded as allocations).
    pub buffers: u64,
    /// The bytes its buffers asked for, before the planner's rounding.
    pub requested_bytes: u64,
}

/// Which end of the arena an allocation comes from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The tail: kept until the arena ends.
    Persistent,
    /// Above the head: released, or ended by a temp reset.
    Temp,
}

/// Which records a full slot array holds.
#[derive(Copy, Clone)]
enum SlotKind {
    Temp,
    Persistent,
}

/// The error of asking for a part the embedded build was made without.
#[cfg_attr(not(nnmem_stripped), cold, inline(never))]
#[cfg_attr(nnmem_stripped, inline(always))]
fn not_built(what: &'static str, feature: &'static str) -> Error {
    Error::with(Status::InvalidArgument, |t| {
        t.put(what);
        t.put(" is not in this build of nnmem: build it with the cargo feature ");
        t.put(feature);
    })
}

#[cfg_attr(not(nnmem_stripped), cold, inline(never))]
#[cfg_attr(nnmem_stripped, inline(always))]
fn not_a_temp(addr: usize) -> Error {
    Error::with(Status::InvalidArgument, |t| {
        t.hex(addr);
        t.put(" is not a temp allocation of this arena (or it was released and reclaimed)");
    })
}

/// Fails unless `alignment` is a power of two the arena supports: up to
/// [`DRY_RUN_BASE`] (2^62 on 64-bit targets), where a dry run pretends its
/// buffer starts, so that a dry run's sizes hold for every alignment.
pub fn check_alignment(alignment: usize) -> Result<()> {
    if alignment == 0 || !alignment.is_power_of_two() {
        return Err(Error::with(Status::InvalidArgument, |t| {
            t.put("alignment ");
            t.number(alignment);
            t.put(" is not a power of two");
        }));
    }
    if alignment > DRY_RUN_BASE {
        return Err(Error::with(Status::InvalidArgument, |t| {
            t.put("alignment ");
            t.number(alignment);
            t.put(" is larger than the largest supported, 2^");
            t.number(DRY_RUN_BASE.trailing_zeros() as usize);
            t.put(" = ");
            t.number(DRY_RUN_BASE);
            t.put(" B");
        }));
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

#[cfg_attr(not(nnmem_stripped), cold, inline(never))]
#[cfg_attr(nnmem_stripped, inline(always))]
fn bad_size(size: usize) -> Error {
    if size == 0 {
        Error::with(Status::InvalidArgument, |t| t.put("size is 0"))
    } else {
        Error::with(Status::Overflow, |t| {
            t.put("size ");
            t.number(size);
            t.put(" B is larger than any arena can be");
        })
    }
}
