//! The tensor arena: one caller buffer (or two) split into a head of
//! planned, non-persistent buffers, temp allocations scoped above it, and a
//! persistent tail growing down from the end, TFLite Micro style.
//!
//! ```text
//!  start (aligned up)                                            end
//!  | head: committed plans | temp -> ...  free  ... <- tail (persistent) |
//! ```
//!
//! - The head holds the buffers of plans made by [`crate::plan::Planner`]
//!   at their planned offsets; committing several plans makes the head the
//!   largest of them. Nothing is planned here: the arena only places what
//!   the planner decided.
//! - Temp allocations are released one by one and reset together.
//! - The tail is never freed piece by piece.
//! - [`ArenaSizes::required`] is the exact size the calls so far needed,
//!   temp peak and alignment included; a dry run ([`Arena::dry_run`]) makes
//!   the same calls without memory to learn it.
//! - Recording gives per-category statistics; guard mode puts canaries
//!   around allocations and poisons released temp memory.
//!
//! The core works on numeric addresses and never holds a pointer; the C
//! layer (`nnm_arena_*`) maps them to the caller's memory.

#[allow(clippy::module_inception)]
mod arena;
mod category;
mod guard;
mod memory;
#[cfg(feature = "std")]
mod report;
mod required;
mod sizes;
mod stack;
#[cfg(test)]
mod tests;

pub use arena::{
    check_alignment, Arena, ArenaOptions, Buffers, PlanFigures, Scope, Slots, Span, TailRecord, TempRecord,
    DEFAULT_ALIGNMENT, DRY_RUN_BASE, GUARD_BUILT, RECORDING_BUILT,
};
pub use category::{Categories, Category, CategoryStats, MAX_CATEGORY_NAME};
pub use guard::{CANARY_BYTES, POISON};
#[cfg(feature = "std")]
pub use memory::VecMemory;
pub use memory::{Memory, NoMemory};
#[cfg(feature = "std")]
pub use report::{report, ReportFormat};
pub use sizes::ArenaSizes;
pub use stack::Stack;
