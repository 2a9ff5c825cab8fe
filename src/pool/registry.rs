//! The process-wide registry: one pool per device (device type and id),
//! with RAF's verbs (init by name, get, remove, reset), and each device's
//! allocator.
//!
//! Unlike RAF, switching or removing a pool loses nothing: the old pool
//! retires. A retired pool is no longer handed out, serves no new
//! allocation, returns its idle memory to the device at once, still takes
//! back its blocks through [`Registry::free`], and is destroyed (every
//! device block returned) when its last block comes back.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use super::device::cuda::CudaAllocator;
use super::device::{self, DevicePtr, SharedAllocator, Stream};
use super::pool::{Maker, Pool, PoolOptions};
use crate::status::{Error, Result, Status};

/// Kinds of device.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeviceType {
    /// Host memory; its default allocator is the host allocator.
    Host = 0,
    /// A CUDA GPU; its default allocator loads the CUDA runtime (or else
    /// the driver).
    Cuda = 1,
    /// Any other device: register its allocator first.
    Custom = 2,
}

crate::names::c_enum! {
    DeviceType, "device type",
    value_error(value) => format!("unknown device type {value} (0: host, 1: cuda, 2: custom)"),
    { Host = "host", Cuda = "cuda", Custom = "custom" }
}

/// A device: its type and its number among devices of that type.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceKey {
    /// The device type.
    pub kind: DeviceType,
    /// The device number.
    pub id: u32,
}

impl DeviceKey {
    /// `kind` number `id`.
    pub const fn new(kind: DeviceType, id: u32) -> Self {
        DeviceKey { kind, id }
    }
}

impl fmt::Display for DeviceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind.name(), self.id)
    }
}

/// The strategy of a pool `get` makes when a device has none (RAF's CPU
/// default).
pub const DEFAULT_STRATEGY: &str = "page-unit";

struct Installed {
    pool: Arc<Pool>,
    maker: Maker,
}

#[derive(Default)]
struct State {
    allocators: BTreeMap<DeviceKey, SharedAllocator>,
    pools: BTreeMap<DeviceKey, Installed>,
    /// Retired pools with blocks still out, by device.
    retired: Vec<(DeviceKey, Arc<Pool>)>,
}

impl State {
    fn allocator(&self, key: DeviceKey) -> Result<SharedAllocator> {
        if let Some(a) = self.allocators.get(&key) {
            return Ok(a.clone());
        }
        match key.kind {
            DeviceType::Host => Ok(device::host()),
            DeviceType::Cuda => Ok(Arc::new(CudaAllocator::new(key.id)?)),
            DeviceType::Custom => {
                Err(Error::new(Status::NotFound, format!("{key}: register an allocator for it first")))
            }
        }
    }

    fn install(&mut self, key: DeviceKey, maker: Maker, options: &PoolOptions) -> Result<Arc<Pool>> {
        let pool = Arc::new(Pool::with_maker(self.allocator(key)?, &maker, options)?);
        if let Some(old) = self.pools.insert(key, Installed { pool: pool.clone(), maker }) {
            self.retire(key, old.pool);
        }
        Ok(pool)
    }

    fn retire(&mut self, key: DeviceKey, pool: Arc<Pool>) {
        // After `Pool::retire` no allocation from it succeeds, even one
        // that took it from the registry before: a pool counting no block
        // now never will again, so forgetting it loses nothing.
        pool.retire();
        // Pools whose last block came back through their own handle (not
        // through `Registry::free`) hold nothing any more: let them go.
        self.retired.retain(|(_, p)| p.live_blocks() > 0);
        if pool.live_blocks() > 0 {
            self.retired.push((key, pool));
        }
    }
}

/// The process-wide registry of device pools. Thread-safe.
pub struct Registry {
    state: Mutex<State>,
}

/// The registry.
pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| Registry { state: Mutex::new(State::default()) })
}

impl Registry {
    fn state(&self) -> MutexGuard<'_, State> {
        // Every change is one insert or remove: a panic cannot leave the
        // tables half-changed.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sets the allocator of `key`'s device, replacing any earlier one;
    /// pools made from then on use it (existing pools keep theirs).
    pub fn register_allocator(&self, key: DeviceKey, allocator: SharedAllocator) -> Result<()> {
        self.state().allocators.insert(key, allocator);
        Ok(())
    }

    /// Installs a new pool of `strategy` for `key`'s device; the previous
    /// pool, if any, retires.
    pub fn init_pool(&self, key: DeviceKey, strategy: &str, options: &PoolOptions) -> Result<Arc<Pool>> {
        let maker = Maker::by_name(strategy)?;
        self.state().install(key, maker, options)
    }

    /// The pool of `key`'s device; a `page-unit` pool with default options
    /// is made when it has none.
    pub fn get(&self, key: DeviceKey) -> Result<Arc<Pool>> {
        self.get_or_make(key, &|| Ok(DEFAULT_STRATEGY))
    }

    /// The pool of `key`'s device; a pool of the strategy `strategy` names
    /// with default options is made when it has none (`strategy` is asked,
    /// and the name looked up, only then: an installed pool is used
    /// whatever it would answer).
    pub fn get_or_make(&self, key: DeviceKey, strategy: &dyn Fn() -> Result<&'static str>) -> Result<Arc<Pool>> {
        let mut state = self.state();
        if let Some(installed) = state.pools.get(&key) {
            return Ok(installed.pool.clone());
        }
        let maker = Maker::by_name(strategy()?)?;
        state.install(key, maker, &PoolOptions::default())
    }

    /// Removes `key`'s pool; it retires. NotFound when it has none.
    pub fn remove(&self, key: DeviceKey) -> Result<()> {
        let mut state = self.state();
        let old = state.pools.remove(&key).ok_or_else(|| no_pool(key))?;
        state.retire(key, old.pool);
        Ok(())
    }

    /// RAF's ResetPool: `key`'s pool retires and a fresh one of the same
    /// strategy and options replaces it. NotFound when it has none.
    pub fn reset(&self, key: DeviceKey) -> Result<()> {
        let mut state = self.state();
        let (maker, options) = match state.pools.get(&key) {
            Some(installed) => (installed.maker.clone(), *installed.pool.options()),
            None => return Err(no_pool(key)),
        };
        state.install(key, maker, &options).map(|_| ())
    }

    /// Allocates from `key`'s pool (made as [`Registry::get`] does when
    /// none). An allocation racing a switch is served by the old pool or
    /// the new one, never refused for it.
    pub fn alloc(&self, key: DeviceKey, size: u64, alignment: u64, stream: Stream) -> Result<DevicePtr> {
        self.alloc_or_make(key, &|| Ok(DEFAULT_STRATEGY), size, alignment, stream)
    }

    /// As [`Registry::alloc`], a pool of `strategy` being made (as by
    /// [`Registry::get_or_make`]) when the device has none.
    pub fn alloc_or_make(
        &self,
        key: DeviceKey,
        strategy: &dyn Fn() -> Result<&'static str>,
        size: u64,
        alignment: u64,
        stream: Stream,
    ) -> Result<DevicePtr> {
        // The pool is allocated from after the registry's lock is released
        // (holding it would serialise every allocation of every device,
        // and a C device allocator calling back into the registry would
        // deadlock). A switch in between retires the pool taken: it
        // refuses with WrongState, and the allocation is tried again on
        // the pool current now. Each retry follows a switch, so this ends
        // as soon as the switches pause; a pool still current when it
        // refused (a strategy's own WrongState) answers as it is.
        let mut pool = self.get_or_make(key, strategy)?;
        loop {
            match pool.alloc(size, alignment, stream) {
                Err(e) if e.status() == Status::WrongState => {
                    let now = self.get_or_make(key, strategy)?;
                    if Arc::ptr_eq(&now, &pool) {
                        return Err(e);
                    }
                    pool = now;
                }
                served => return served,
            }
        }
    }

    /// Frees a block of `key`'s current pool or of one of the retired
    /// pools; a retired pool is destroyed when its last block comes back.
    /// InvalidArgument when no pool handed it out (nothing changes).
    pub fn free(&self, key: DeviceKey, ptr: DevicePtr) -> Result<()> {
        // Why a block is always found: the pool that handed it out is the
        // current one or a retired one with a block out (this one), and a
        // retired pool with a block out is always in `retired` (it was
        // kept by `retire`, which counted every block it could ever hand
        // out, see `Pool::retire`, and is dropped only at 0 blocks, which
        // is final). So if the pool read as current here is not the one,
        // that one had retired by then and is found below, under the lock.
        let current = self.state().pools.get(&key).map(|installed| installed.pool.clone());
        if let Some(pool) = &current {
            if pool.free(ptr).is_ok() {
                if pool.is_retired() {
                    // Switched while this free ran: drop it if it is done.
                    self.drop_finished();
                }
                return Ok(());
            }
        }
        let mut state = self.state();
        let pos = state.retired.iter().position(|(k, pool)| *k == key && pool.free(ptr).is_ok());
        match pos {
            Some(i) => {
                if state.retired[i].1.live_blocks() == 0 {
                    state.retired.swap_remove(i);
                }
                Ok(())
            }
            None => Err(Error::invalid(format!(
                "free of {ptr:?} on {key}: no pool of this device, current or retired, handed it out \
                 (or it was freed already; nothing changed)"
            ))),
        }
    }

    fn drop_finished(&self) {
        self.state().retired.retain(|(_, pool)| pool.live_blocks() > 0);
    }

    /// Retired pools of `key`'s device still waiting for blocks.
    pub fn retired_pools(&self, key: DeviceKey) -> usize {
        self.state().retired.iter().filter(|(k, _)| *k == key).count()
    }
}

fn no_pool(key: DeviceKey) -> Error {
    Error::new(Status::NotFound, format!("{key} has no pool"))
}
