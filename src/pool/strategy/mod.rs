//! Pool strategies: how a pool serves requests from the memory it got from
//! its device. Each strategy is one module behind [`Strategy`]; a pool
//! holds one instance per shard and calls it under that shard's lock, so a
//! strategy is plain single-threaded code.

pub mod caching;
pub mod no_pool;
pub mod page_unit;
pub mod replay;

use crate::pool::budget::Device;
use crate::pool::device::{DevicePtr, Stream};
use crate::status::Result;

/// The built-in strategies, chosen by enum (C: `nnm_strategy`) or by name
/// (RAF's `no_pool` and `page_unit_pool` too; reports use nnmem's names).
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum StrategyKind {
    /// Every request goes to the device; nothing is cached.
    NoPool = 0,
    /// RAF's page-unit pool: sizes rounded up to the page, idle blocks of
    /// exactly that size reused, nothing split or merged.
    PageUnit = 1,
    /// Best fit over size-segregated free blocks, with splitting and
    /// coalescing, small and large segments (PyTorch / BFC style).
    Caching = 2,
    /// Records one iteration, plans it with the planner, and serves the
    /// next iterations from one planned block; falls back to `caching`. An
    /// iteration of more than 2^20 requests is not planned.
    Replay = 3,
}

crate::names::c_enum! {
    StrategyKind, "pool strategy",
    value_error(value) => format!("unknown pool strategy {value} (0: no-pool, 1: page-unit, 2: caching, 3: replay)"),
    { NoPool = "no-pool", PageUnit = "page-unit", Caching = "caching", Replay = "replay" }
    // RAF's names of its strategies.
    aliases { "no_pool" => NoPool, "page_unit_pool" => PageUnit }
}

/// A request as the pool checked it: `alignment` a power of two (at least
/// 1), `size` rounded up to `alignment` without overflow.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Bytes asked for. May be 0: the strategy then hands out a block of
    /// its smallest size (at least 1 B), so that its address is unique
    /// among the live blocks, and reports 0 requested bytes when it is
    /// freed.
    pub size: u64,
    /// Alignment of the returned address, a power of two.
    pub alignment: u64,
    /// The stream the memory will be used on.
    pub stream: Stream,
}

/// What a strategy handed out.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Served {
    /// The address, aligned as requested.
    pub ptr: DevicePtr,
    /// The bytes the block occupies (`>= size`: after the strategy's
    /// rounding), counted as allocated while it is out.
    pub bytes: u64,
    /// Whether a replay plan served it.
    pub from_plan: bool,
}

/// What a strategy took back.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Freed {
    /// The size the caller had asked for.
    pub requested: u64,
    /// The bytes the block occupied (as in [`Served::bytes`]).
    pub bytes: u64,
}

/// A free of a pointer this strategy has not handed out, or has already
/// taken back: the strategy changed nothing.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NotLive;

/// The idle memory a strategy holds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CacheFigures {
    /// Idle blocks held for reuse.
    pub cached_blocks: u64,
    /// Their bytes.
    pub cached_bytes: u64,
    /// The largest idle block, in bytes (0 when none).
    pub largest_free_block: u64,
}

/// The figures of a replay plan.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PlanFigures {
    /// Whether an iteration was recorded and planned.
    pub planned: bool,
    /// The planned block's bytes (the plan's peak).
    pub plan_bytes: u64,
    /// The lower bound of the recorded iteration.
    pub lower_bound_bytes: u64,
    /// Requests in the recorded iteration.
    pub recorded_requests: u64,
    /// Iterations that departed from the recorded sequence.
    pub departures: u64,
}

/// One way of serving requests. Called under the lock of the shard that
/// holds it; device calls go through `device`, which counts them and
/// applies the pool's byte limit.
pub trait Strategy: Send {
    /// Its name ("page-unit", or a user strategy's registered name).
    fn name(&self) -> &str;

    /// Whether the pool may run one instance per shard (independent
    /// caches). A strategy whose state is one sequence (replay, a C
    /// strategy) says no, and its pool has one shard.
    fn shardable(&self) -> bool {
        true
    }

    /// Whether the pool may keep the block of an alloc+free pair for the
    /// next request identical to the one that got it (same size, alignment
    /// and stream) without calling the strategy. The strategy then sees
    /// that block's free later: before the shard's next other call, and
    /// before the pool releases memory, reads statistics or ends an
    /// iteration. Only a strategy for which serving that request with that
    /// block changes nothing it holds or counts may say yes: `caching`
    /// (which hands the last freed block back first anyway) and
    /// `page-unit` (whose idle chunks of one size are alike). No-pool
    /// (nothing is kept), replay (which must see every request in order)
    /// and C strategies say no.
    fn reuses_identical_requests(&self) -> bool {
        false
    }

    /// Serves `request`, from the cache or from the device. A device
    /// failure or the limit comes back as `Status::OutOfMemory`; the pool
    /// then releases idle memory of every shard and retries once.
    fn alloc(&mut self, request: Request, device: &Device) -> Result<Served>;

    /// Takes back `ptr`, which this strategy handed out; [`NotLive`] (and
    /// no change) for any other pointer, or one already taken back.
    fn free(&mut self, ptr: DevicePtr, device: &Device) -> std::result::Result<Freed, NotLive>;

    /// Returns idle memory to the device (whole device blocks only, never
    /// memory still handed out); the bytes returned.
    fn release_cached(&mut self, device: &Device) -> u64;

    /// The caller says every stream is synchronised: idle blocks freed on
    /// one stream may now be reused on any other.
    fn streams_synchronized(&mut self) {}

    /// The caller marks the end of an iteration (replay records and plans
    /// the first one; other strategies ignore it).
    fn end_iteration(&mut self, _device: &Device) -> Result<()> {
        Ok(())
    }

    /// The idle memory it holds.
    fn cache_figures(&self) -> CacheFigures;

    /// The replay plan's figures; `None` for strategies without one.
    fn plan_figures(&self) -> Option<PlanFigures> {
        None
    }

    /// Returns every device block it holds to the device. Called when the
    /// pool is destroyed, which happens only when nothing is handed out.
    fn release_all(&mut self, device: &Device);
}
