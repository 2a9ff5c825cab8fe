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

pub mod budget;
pub mod device;
pub mod strategy;

pub use budget::{Device, DeviceCounters};
pub use device::{DeviceAllocator, DevicePtr, MemInfo, SharedAllocator, Stream};
pub use strategy::{Request, Served, Strategy, StrategyKind};
