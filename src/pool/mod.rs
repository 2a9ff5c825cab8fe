//! Memory pools over pluggable device allocators (RAF-style pools, a
//! PyTorch-style caching allocator, and a replay pool planned by the
//! planner core), and the one allocator seam all of nnmem's memory comes
//! from.
//!
//! - [`device`]: the [`DeviceAllocator`](device::DeviceAllocator) trait,
//!   device addresses and streams, the built-in host allocator.
//! - [`strategy`]: the [`Strategy`](strategy::Strategy) trait and the
//!   built-in strategies.
//! - [`budget`]: a pool's device side (limit, reserved bytes, device calls).
//! - [`pool`](mod@pool): the [`Pool`] object (thread-safe, sharded), its
//!   options, and user strategies registered by name.
//! - [`stats`]: statistics, snapshots and their reports.
//! - [`registry`]: the process-wide pool of each device, with RAF's verbs.

pub mod budget;
pub mod device;
pub(crate) mod fast_hash;
pub(crate) mod live_table;
pub(crate) mod lock;
#[allow(clippy::module_inception)] // the brief's path: src/pool/pool.rs
pub mod pool;
pub mod registry;
#[cfg(test)]
mod registry_tests;
pub mod stats;
pub mod strategy;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;

pub use budget::{Device, DeviceCounters};
pub use device::{DeviceAllocator, DevicePtr, MemInfo, SharedAllocator, Stream};
pub use pool::{
    register_strategy, strategy_factory, unregister_strategy, CachingOptions, Pool, PoolOptions, ReplayOptions,
    StrategyFactory,
};
pub use registry::{registry, DeviceKey, DeviceType, Registry};
pub use stats::{Snapshot, Stats};
pub use strategy::{Request, Served, Strategy, StrategyKind};
