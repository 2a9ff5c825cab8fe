//! The layout of an `nnm_arena_init` state: the caller's bytes that hold an
//! arena made without a heap.
//!
//! ```text
//!  state (aligned up to 8)
//!  | header: the arena | temp records | watched (guard) | persistent records ... |
//! ```
//!
//! - The header holds the arena itself in the embedded build
//!   ([`super::placed`]); the host keeps its handle on the heap and leaves
//!   these bytes unused, so that one size means the same on both.
//! - `max_temps` temp records, then as many for the released temp
//!   allocations guard mode watches (none without guard mode), then one
//!   record per persistent allocation in all the bytes that remain.
//!
//! The C header states the sizes as macros over `sizeof(size_t)`
//! (`NNM_ARENA_STATE_BYTES`); the constants here are the same formulas, and
//! compile-time checks hold the records and the arena to them on every
//! target the crate is built for.

use core::ffi::c_void;
use core::mem::size_of;

use super::null_argument;
use crate::arena::{Slots, TailRecord, TempRecord};
use crate::status::{Error, Result, Status};

/// Bytes of one temp record (`NNM_ARENA_TEMP_RECORD_BYTES`).
pub const TEMP_RECORD_BYTES: usize = 4 * size_of::<usize>() + 8;
/// Bytes of one persistent record (`NNM_ARENA_PERSISTENT_RECORD_BYTES`).
pub const PERSISTENT_RECORD_BYTES: usize = 3 * size_of::<usize>() + 8;
/// Bytes of the state's header (`NNM_ARENA_STATE_HEADER_BYTES`).
pub const STATE_HEADER_BYTES: usize = 50 * size_of::<usize>() + 256;
/// The alignment the state's start is rounded up to.
pub const STATE_ALIGNMENT: usize = 8;

const _: () = assert!(size_of::<TempRecord>() == TEMP_RECORD_BYTES, "NNM_ARENA_TEMP_RECORD_BYTES is exact");
const _: () = assert!(size_of::<TailRecord>() == PERSISTENT_RECORD_BYTES, "NNM_ARENA_PERSISTENT_RECORD_BYTES is exact");
const _: () = assert!(core::mem::align_of::<TempRecord>() <= STATE_ALIGNMENT);
const _: () = assert!(core::mem::align_of::<TailRecord>() <= STATE_ALIGNMENT);
const _: () = assert!(STATE_HEADER_BYTES % STATE_ALIGNMENT == 0 && TEMP_RECORD_BYTES % size_of::<usize>() == 0);

/// A state cut into the arena's header and its record slots.
pub(super) struct Layout {
    /// The header's first byte, aligned to [`STATE_ALIGNMENT`].
    pub(super) head: *mut u8,
    slots: Slots<'static>,
}

impl Layout {
    /// Cuts `len` bytes at `state` for an arena with room for `max_temps`
    /// temp records (and as many watched ones with `guard`), the rest for
    /// persistent records, and zeroes the slots, which makes them empty
    /// records (a later failure of `nnm_arena_init` therefore leaves the
    /// state's bytes changed: the header says they are unspecified then).
    ///
    /// # Safety
    /// `state` must be NULL or valid for reads and writes of `len` bytes
    /// for as long as the arena made with the slots lives, and not be used
    /// meanwhile except through that arena.
    pub(super) unsafe fn carve(state: *mut c_void, len: usize, max_temps: u32, guard: bool) -> Result<Layout> {
        if state.is_null() {
            return Err(null_argument("state"));
        }
        let start = state as usize;
        let Some(end) = start.checked_add(len) else {
            return Err(Error::with(Status::Overflow, |t| {
                t.put("state: ");
                t.number(len);
                t.put(" B from its address run past the end of the address space");
            }));
        };
        let temps = max_temps as usize;
        let watched = if guard { temps } else { 0 };
        // Checked throughout: on a 32-bit target `max_temps` records alone
        // can pass the address space, and a start near its top cannot be
        // aligned up.
        let base = start.checked_add(start.wrapping_neg() & (STATE_ALIGNMENT - 1));
        let tails_at = temps
            .checked_add(watched)
            .and_then(|records| records.checked_mul(TEMP_RECORD_BYTES))
            .and_then(|bytes| base?.checked_add(STATE_HEADER_BYTES)?.checked_add(bytes))
            .filter(|&at| at <= end);
        let (Some(base), Some(tails_at)) = (base, tails_at) else {
            return Err(too_small(len, start, temps, watched));
        };
        let tail_count = (end - tails_at) / PERSISTENT_RECORD_BYTES;
        let offset = |at: usize| at - start;
        let bytes = state.cast::<u8>();
        let temps_ptr = bytes.wrapping_add(offset(base + STATE_HEADER_BYTES)).cast::<TempRecord>();
        let watched_ptr = temps_ptr.wrapping_add(temps);
        let tails_ptr = bytes.wrapping_add(offset(tails_at)).cast::<TailRecord>();
        // SAFETY: the three arrays lie one after the other between the
        // header's end and `end`, inside the caller's `len` bytes (checked
        // above), each aligned (the header and records keep the alignment
        // of `base`); the caller promises the bytes are valid and ours for
        // the arena's life, which the 'static slices stand for. They are
        // zeroed first, in one go, and all-zero bytes are a valid record
        // (the records hold only integers and a bool, which a check beside
        // `TempRecord` in src/arena/arena.rs holds them to).
        let slots = unsafe {
            let records_end = tails_ptr.wrapping_add(tail_count).cast::<u8>();
            let first = temps_ptr.cast::<u8>();
            core::ptr::write_bytes(first, 0, records_end as usize - first as usize);
            Slots {
                temps: core::slice::from_raw_parts_mut(temps_ptr, temps),
                reclaimed: core::slice::from_raw_parts_mut(watched_ptr, watched),
                tails: core::slice::from_raw_parts_mut(tails_ptr, tail_count),
            }
        };
        Ok(Layout { head: bytes.wrapping_add(offset(base)), slots })
    }

    /// The header and the slots.
    pub(super) fn into_parts(self) -> (*mut u8, Slots<'static>) {
        (self.head, self.slots)
    }
}

#[cfg_attr(not(nnmem_stripped), cold, inline(never))]
#[cfg_attr(nnmem_stripped, inline(always))]
fn too_small(len: usize, start: usize, temps: usize, watched: usize) -> Error {
    let lost = start.wrapping_neg() & (STATE_ALIGNMENT - 1);
    let needed = lost
        .saturating_add(STATE_HEADER_BYTES)
        .saturating_add(temps.saturating_add(watched).saturating_mul(TEMP_RECORD_BYTES));
    Error::with(Status::DoesNotFit, |t| {
        t.put("state of ");
        t.number(len);
        t.put(" B is too small for the arena and ");
        t.number(temps);
        t.put(if watched > 0 { " temp records (twice that in guard mode): " } else { " temp records: " });
        t.number(needed);
        t.put(" B needed at its address, ");
        t.number(needed.saturating_sub(len));
        t.put(" B missing");
    })
}
