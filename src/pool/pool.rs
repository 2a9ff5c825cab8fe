//! The pool object: a strategy (one instance per shard), a device with a
//! hard byte limit, statistics and an optional trace.
//!
//! Every pool is thread-safe: all methods take `&self`. A pool with a
//! shardable strategy has several shards, each with its own lock, strategy
//! instance and counters; a thread allocates from the shard its
//! thread-local index picks, and frees through its own shard first (the
//! common case: the block came from it), then through the others. Only a
//! device call takes the device's lock, shared by the shards.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use super::budget::{take_limit_refusal, Device};
use super::device::{DevicePtr, SharedAllocator, Stream};
use super::lock::{SpinGuard, SpinLock};
use super::stats::{self, Snapshot, Stats};
use super::strategy::caching::Caching;
use super::strategy::no_pool::NoPool;
use super::strategy::page_unit::{PageUnit, DEFAULT_PAGE_SIZE};
use super::strategy::replay::Replay;
use super::strategy::{Request, Strategy, StrategyKind};
use crate::names::CEnum;
use crate::report_format::ReportFormat;
use crate::status::{Error, Result, Status};

// Defined with the strategies (below the pool in the module tree); the
// pool's options hold them.
pub use super::strategy::caching::CachingOptions;
pub use super::strategy::replay::ReplayOptions;

/// Options of a pool.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PoolOptions {
    /// Hard limit on the bytes held from the device (`None`: no limit).
    pub limit: Option<u64>,
    /// The `page-unit` page, a power of two (default 4096).
    pub page_size: u64,
    /// Shards of a shardable strategy (0: automatic, see [`auto_shards`]),
    /// at most 64.
    pub shards: usize,
    /// Options of `caching` (and of `replay`'s fallback).
    pub caching: CachingOptions,
    /// Options of `replay`.
    pub replay: ReplayOptions,
    /// Keep the tagged snapshots of [`Pool::snapshot`].
    pub trace: bool,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            limit: None,
            page_size: DEFAULT_PAGE_SIZE,
            shards: 0,
            caching: CachingOptions::default(),
            replay: ReplayOptions::default(),
            trace: false,
        }
    }
}

/// The most shards a pool has.
pub(crate) const MAX_SHARDS: usize = 64;

/// The automatic shard count: the next power of two at or above twice the
/// CPUs, between 4 and 16. Twice the CPUs, because threads outnumber CPUs
/// in runtimes (a thread pool per device, I/O threads): with round-robin
/// thread indices, 8 threads over 4 shards on 2 CPUs share a shard with a
/// thread running at the same time 1 time in 7. At most 16, because each
/// shard caches its own idle blocks: more shards hold more idle memory.
pub fn auto_shards() -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    cpus.saturating_mul(2).next_power_of_two().clamp(4, 16)
}

impl PoolOptions {
    fn check(&self) -> Result<()> {
        if !self.page_size.is_power_of_two() {
            return Err(Error::invalid(format!("page_size {} B is not a power of two", self.page_size)));
        }
        if self.shards > MAX_SHARDS {
            return Err(Error::invalid(format!("{} shards asked, at most {MAX_SHARDS}", self.shards)));
        }
        if self.limit == Some(0) {
            return Err(Error::invalid("limit 0 B would refuse every allocation (None: no limit)"));
        }
        self.caching.check()
    }
}

/// Makes a fresh strategy instance (one per shard). Built-ins come from
/// [`StrategyKind`]; user strategies (C vtables) are registered by name
/// with [`register_strategy`].
pub type StrategyFactory = Arc<dyn Fn(&PoolOptions) -> Box<dyn Strategy> + Send + Sync>;

fn user_strategies() -> &'static RwLock<BTreeMap<String, StrategyFactory>> {
    static TABLE: OnceLock<RwLock<BTreeMap<String, StrategyFactory>>> = OnceLock::new();
    TABLE.get_or_init(Default::default)
}

fn read_user_strategies() -> std::sync::RwLockReadGuard<'static, BTreeMap<String, StrategyFactory>> {
    // The table is only inserted into or removed from whole: a panic
    // cannot leave it half-changed.
    user_strategies().read().unwrap_or_else(|p| p.into_inner())
}

/// Registers a user strategy under `name`. AlreadyExists for a built-in
/// name (RAF's aliases included) or one already registered.
pub fn register_strategy(name: &str, factory: StrategyFactory) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid("a strategy needs a non-empty name"));
    }
    if let Some(built_in) = built_in_named(name) {
        return Err(Error::new(Status::AlreadyExists, built_in));
    }
    let mut table = user_strategies().write().unwrap_or_else(|p| p.into_inner());
    if table.contains_key(name) {
        return Err(Error::new(Status::AlreadyExists, format!("pool strategy '{name}' is already registered")));
    }
    table.insert(name.to_string(), factory);
    Ok(())
}

/// What a built-in strategy's name (or alias) `name` is, for the refusal
/// of a registration or removal; `None` for any other name.
fn built_in_named(name: &str) -> Option<String> {
    let kind = StrategyKind::from_name(name).ok()?;
    let alias = if kind.name() == name { String::new() } else { format!(" (RAF's name of '{}')", kind.name()) };
    Some(format!("'{name}' is a built-in pool strategy{alias}"))
}

/// Removes a user strategy. Pools made with it keep it. InvalidArgument for
/// a built-in's name, NotFound for a name not registered.
pub fn unregister_strategy(name: &str) -> Result<()> {
    if let Some(built_in) = built_in_named(name) {
        return Err(Error::invalid(format!("{built_in}; only user strategies can be unregistered")));
    }
    let mut table = user_strategies().write().unwrap_or_else(|p| p.into_inner());
    if table.remove(name).is_some() {
        return Ok(());
    }
    Err(Error::new(
        Status::NotFound,
        format!("no user pool strategy '{name}' is registered (registered: {})", registered_names(&table)),
    ))
}

/// The registered names, sorted, joined by ", " ("none" when there are
/// none).
fn registered_names(table: &BTreeMap<String, StrategyFactory>) -> String {
    let names: Vec<&str> = table.keys().map(String::as_str).collect();
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// The factory of a built-in or registered strategy; the error lists the
/// known names.
pub fn strategy_factory(name: &str) -> Result<StrategyFactory> {
    if let Ok(kind) = StrategyKind::from_name(name) {
        return builtin_factory(kind);
    }
    let table = read_user_strategies();
    if let Some(factory) = table.get(name) {
        return Ok(factory.clone());
    }
    let user = if table.is_empty() { String::new() } else { format!("; registered: {}", registered_names(&table)) };
    Err(Error::new(
        Status::NotFound,
        format!("unknown pool strategy '{name}' (built in: {}{user})", StrategyKind::known_names()),
    ))
}

/// What makes a pool's strategies: a built-in kind, or a factory.
#[derive(Clone)]
pub(crate) enum Maker {
    Kind(StrategyKind),
    Factory(StrategyFactory),
}

impl Maker {
    /// The maker of a built-in (by name or RAF's alias) or registered
    /// strategy; the error lists the known names.
    pub(crate) fn by_name(name: &str) -> Result<Maker> {
        match StrategyKind::from_name(name) {
            Ok(kind) => Ok(Maker::Kind(kind)),
            Err(_) => strategy_factory(name).map(Maker::Factory),
        }
    }

    fn make(&self, options: &PoolOptions) -> Held {
        match self {
            // Held by value, so that the pool reaches the plan's fast path
            // without a dynamic call.
            Maker::Kind(StrategyKind::Replay) => {
                Held::Replay(Replay::new(&options.replay, Box::new(Caching::new(&options.caching))))
            }
            Maker::Kind(kind) => Held::Dyn(builtin(*kind, options)),
            Maker::Factory(factory) => Held::Dyn(factory(options)),
        }
    }
}

/// A shard's strategy: `replay` by value, any other behind the trait.
// A replay pool has one shard: its strategy in place saves the hot path a
// pointer chase, and the other strategies' shards waste no more than the
// difference once per shard.
#[allow(clippy::large_enum_variant)]
enum Held {
    Replay(Replay),
    Dyn(Box<dyn Strategy>),
}

impl std::ops::Deref for Held {
    type Target = dyn Strategy;

    #[inline]
    fn deref(&self) -> &(dyn Strategy + 'static) {
        match self {
            Held::Replay(r) => r,
            Held::Dyn(b) => &**b,
        }
    }
}

impl std::ops::DerefMut for Held {
    #[inline]
    fn deref_mut(&mut self) -> &mut (dyn Strategy + 'static) {
        match self {
            Held::Replay(r) => r,
            Held::Dyn(b) => &mut **b,
        }
    }
}

/// A fresh instance of a built-in strategy.
pub(crate) fn builtin(kind: StrategyKind, options: &PoolOptions) -> Box<dyn Strategy> {
    match kind {
        StrategyKind::NoPool => Box::new(NoPool::new()),
        StrategyKind::PageUnit => Box::new(PageUnit::new(options.page_size)),
        StrategyKind::Caching => Box::new(Caching::new(&options.caching)),
        StrategyKind::Replay => Box::new(Replay::new(&options.replay, Box::new(Caching::new(&options.caching)))),
    }
}

fn builtin_factory(kind: StrategyKind) -> Result<StrategyFactory> {
    Ok(Arc::new(move |options: &PoolOptions| builtin(kind, options)))
}

/// A shard's own figures, updated under its lock.
#[derive(Copy, Clone, Default)]
struct Counters {
    requested_bytes: u64,
    requested_peak: u64,
    allocated_bytes: u64,
    allocated_peak: u64,
    active_blocks: u64,
    active_peak: u64,
    allocs: u64,
    frees: u64,
    oom_retries: u64,
    limit_refusals: u64,
    served_from_plan: u64,
}

impl Counters {
    #[inline]
    fn served(&mut self, requested: u64, bytes: u64, from_plan: bool) {
        self.requested_bytes += requested;
        self.requested_peak = self.requested_peak.max(self.requested_bytes);
        self.allocated_bytes += bytes;
        self.allocated_peak = self.allocated_peak.max(self.allocated_bytes);
        self.active_blocks += 1;
        self.active_peak = self.active_peak.max(self.active_blocks);
        self.allocs += 1;
        self.served_from_plan += u64::from(from_plan);
    }

    #[inline]
    fn freed(&mut self, requested: u64, bytes: u64) {
        self.requested_bytes -= requested;
        self.allocated_bytes -= bytes;
        self.active_blocks -= 1;
        self.frees += 1;
    }
}

struct ShardState {
    strategy: Held,
    counters: Counters,
    /// The shard's last block, for an alloc+free pair repeated (see
    /// [`Hot`]); always empty when the strategy says no to
    /// [`Strategy::reuses_identical_requests`].
    hot: Hot,
    reuses: bool,
}

/// The block the shard handed out last, and the request that got it. While
/// it is out (`idle` false) it is one of the strategy's live blocks like
/// any other; once freed (`idle` true) the strategy still counts it as
/// handed out, and the next identical request takes it back without
/// calling the strategy: a runtime's alloc+free pairs of one size (a
/// kernel's scratch, a tensor per step) cost a comparison each. Any other
/// call of the shard gives the idle block to the strategy first. The
/// strategy so sees one alloc and free where the caller made several
/// identical pairs, and every other free in its order: the same state for
/// a strategy that hands an identical request the block just freed (what
/// [`Strategy::reuses_identical_requests`] asks of it).
#[derive(Copy, Clone)]
struct Hot {
    ptr: Option<DevicePtr>,
    idle: bool,
    size: u64,
    alignment: u64,
    stream: Stream,
    bytes: u64,
}

impl Hot {
    const EMPTY: Hot = Hot { ptr: None, idle: false, size: 0, alignment: 0, stream: Stream::DEFAULT, bytes: 0 };
}

impl ShardState {
    /// Gives an idle hot block to the strategy, which has it as live.
    #[inline]
    fn settle_hot(&mut self, device: &Device) {
        if self.hot.idle {
            let ptr = self.hot.ptr.expect("an idle hot block has an address");
            self.hot = Hot::EMPTY;
            let freed = self.strategy.free(ptr, device);
            debug_assert!(freed.is_ok(), "the strategy held the hot block as live");
        }
    }

    /// A free of the hot block: `Some(true)` when it was out and is now
    /// idle (counted as freed), `Some(false)` when it is idle already (a
    /// second free: the strategy must not see it), `None` for any other
    /// pointer.
    #[inline]
    fn free_hot(&mut self, ptr: DevicePtr) -> Option<bool> {
        if self.hot.ptr != Some(ptr) {
            return None;
        }
        if self.hot.idle {
            return Some(false);
        }
        self.hot.idle = true;
        self.counters.freed(self.hot.size, self.hot.bytes);
        Some(true)
    }
}

/// One shard, on cache lines of its own so that shards used by different
/// CPUs do not share one.
#[repr(align(128))]
struct Shard(SpinLock<ShardState>);

impl Shard {
    #[inline]
    fn lock(&self) -> SpinGuard<'_, ShardState> {
        self.0.lock()
    }
}

static NEXT_THREAD_INDEX: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static THREAD_INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// This thread's index, assigned round-robin on first use: threads started
/// one after the other land on different shards.
#[inline]
fn thread_index() -> usize {
    THREAD_INDEX.with(|i| {
        let v = i.get();
        if v != usize::MAX {
            return v;
        }
        // Masked: the sentinel `usize::MAX` is never an index.
        let v = NEXT_THREAD_INDEX.fetch_add(1, Ordering::Relaxed) & (usize::MAX >> 1);
        i.set(v);
        v
    })
}

/// A memory pool over a device allocator. Thread-safe: every method takes
/// `&self` and may be called from any thread.
pub struct Pool {
    shards: Box<[Shard]>,
    /// `shards.len() - 1` when that is a power of two, else 0 (use `%`).
    shard_mask: usize,
    device: Device,
    strategy_name: String,
    options: PoolOptions,
    retired: AtomicBool,
    trace: Mutex<Vec<Snapshot>>,
}

impl Pool {
    /// A pool of a built-in strategy.
    pub fn new(allocator: SharedAllocator, kind: StrategyKind, options: &PoolOptions) -> Result<Pool> {
        Pool::with_maker(allocator, &Maker::Kind(kind), options)
    }

    /// A pool of a built-in or registered strategy, by name.
    pub fn by_name(allocator: SharedAllocator, strategy: &str, options: &PoolOptions) -> Result<Pool> {
        Pool::with_maker(allocator, &Maker::by_name(strategy)?, options)
    }

    /// A pool whose shards' strategies `factory` makes.
    pub fn with_factory(allocator: SharedAllocator, factory: StrategyFactory, options: &PoolOptions) -> Result<Pool> {
        Pool::with_maker(allocator, &Maker::Factory(factory), options)
    }

    pub(crate) fn with_maker(allocator: SharedAllocator, maker: &Maker, options: &PoolOptions) -> Result<Pool> {
        options.check()?;
        let first = maker.make(options);
        let count = if !first.shardable() {
            1
        } else if options.shards == 0 {
            auto_shards()
        } else {
            options.shards
        };
        let strategy_name = first.name().to_string();
        let mut strategies = vec![first];
        strategies.extend((1..count).map(|_| maker.make(options)));
        let shards: Box<[Shard]> = strategies
            .into_iter()
            .map(|strategy| {
                let reuses = strategy.reuses_identical_requests();
                Shard(SpinLock::new(ShardState { strategy, counters: Counters::default(), hot: Hot::EMPTY, reuses }))
            })
            .collect();
        let shard_mask = if count.is_power_of_two() { count - 1 } else { 0 };
        Ok(Pool {
            shards,
            shard_mask,
            device: Device::new(allocator, options.limit),
            strategy_name,
            options: *options,
            retired: AtomicBool::new(false),
            trace: Mutex::new(Vec::new()),
        })
    }

    #[inline]
    fn home_shard(&self) -> usize {
        let n = self.shards.len();
        if n == 1 {
            0
        } else if self.shard_mask != 0 {
            thread_index() & self.shard_mask
        } else {
            thread_index() % n
        }
    }

    /// Allocates `size` bytes aligned to `alignment` for use on `stream`.
    /// Size 0 is a request like any other (RAF's `Alloc(0)`, C's
    /// `malloc(0)`): a block of the strategy's smallest size, at an address
    /// no other live block has, counted with 0 requested bytes and given
    /// back with [`Pool::free`].
    ///
    /// Errors: InvalidArgument for an alignment that is not a power of
    /// two; Overflow when the size rounded up to the alignment (or to the
    /// strategy's unit) overflows; OutOfMemory when the device or the limit
    /// refuses even after the pool released its idle memory and retried
    /// once (the message says "requested X B, in use Y B, cached Z B, limit
    /// L B"); WrongState once the pool is retired. A refused request
    /// changes nothing, except that an out-of-memory one counts in
    /// `oom_retries` and `limit_refusals` and has released idle memory.
    #[inline]
    pub fn alloc(&self, size: u64, alignment: u64, stream: Stream) -> Result<DevicePtr> {
        let home = self.home_shard();
        let mut s = self.shards[home].lock();
        let hot = s.hot;
        // A request identical to the one that got the idle hot block passed
        // the checks then. The retired flag is read under the lock, as in
        // `serve`.
        let same = hot.idle && hot.size == size && hot.alignment == alignment && hot.stream == stream;
        if let Some(ptr) = hot.ptr.filter(|_| same && !self.retired.load(Ordering::Relaxed)) {
            s.hot.idle = false;
            s.counters.served(size, hot.bytes, false);
            return Ok(ptr);
        }
        // A request the plan serves is checked against its recorded twin.
        if let Held::Replay(r) = &mut s.strategy {
            if !self.retired.load(Ordering::Relaxed) && alignment.is_power_of_two() {
                if let Some(served) = r.planned_alloc(&Request { size, alignment, stream }) {
                    s.counters.served(size, served.bytes, true);
                    return Ok(served.ptr);
                }
            }
        }
        self.alloc_locked(s, home, size, alignment, stream)
    }

    /// The rest of an allocation, with the home shard's lock held (taken
    /// once for both paths). The request's fields come apart and the
    /// `Request` is built in the strategy's call: a `Request` built earlier
    /// and copied into the call stalls the copy's wide load on the narrow
    /// stores that built it (store forwarding fails).
    #[inline(never)]
    fn alloc_locked(
        &self,
        mut s: SpinGuard<'_, ShardState>,
        home: usize,
        size: u64,
        alignment: u64,
        stream: Stream,
    ) -> Result<DevicePtr> {
        // `alignment` is a power of two once that test passed: rounding up
        // overflows exactly when adding `alignment - 1` does (no division).
        if !alignment.is_power_of_two() || size.checked_add(alignment - 1).is_none() {
            return Err(bad_request(size, alignment));
        }
        match self.serve(&mut s, size, alignment, stream) {
            Ok(ptr) => Ok(ptr),
            Err(e) if e.status() == Status::OutOfMemory => {
                drop(s);
                self.alloc_after_oom(home, Request { size, alignment, stream })
            }
            Err(e) => Err(e),
        }
    }

    #[cold]
    fn retired_error(&self) -> Error {
        Error::wrong_state(format!(
            "this {} pool was retired (switched or removed): it only takes back its blocks",
            self.strategy_name
        ))
    }

    /// Serves a checked request from the strategy of the shard `s`, whose
    /// lock the caller holds, and counts it.
    ///
    /// The retired flag is read under the shard's lock, in the section
    /// that counts the block: see [`Pool::retire`] for why that is what
    /// lets the registry forget a retired pool once it counts no block.
    #[inline]
    fn serve(&self, s: &mut ShardState, size: u64, alignment: u64, stream: Stream) -> Result<DevicePtr> {
        if self.retired.load(Ordering::Relaxed) {
            return Err(self.retired_error());
        }
        s.settle_hot(&self.device);
        let served = s.strategy.alloc(Request { size, alignment, stream }, &self.device)?;
        s.counters.served(size, served.bytes, served.from_plan);
        if s.reuses {
            s.hot = Hot { ptr: Some(served.ptr), idle: false, size, alignment, stream, bytes: served.bytes };
        }
        Ok(served.ptr)
    }

    fn alloc_on(&self, shard: usize, size: u64, alignment: u64, stream: Stream) -> Result<DevicePtr> {
        self.serve(&mut self.shards[shard].lock(), size, alignment, stream)
    }

    #[cold]
    #[inline(never)]
    fn alloc_after_oom(&self, home: usize, request: Request) -> Result<DevicePtr> {
        self.release_cached();
        take_limit_refusal();
        let result = self.alloc_on(home, request.size, request.alignment, request.stream);
        let limited = result.is_err() && take_limit_refusal();
        {
            let mut s = self.shards[home].lock();
            s.counters.oom_retries += 1;
            s.counters.limit_refusals += u64::from(limited);
        }
        let err = match result {
            Ok(ptr) => return Ok(ptr),
            Err(e) if e.status() != Status::OutOfMemory => return Err(e),
            Err(e) => e,
        };
        let stats = self.stats();
        let figures = format!(
            "requested {} B, in use {} B, cached {} B",
            request.size, stats.allocated_bytes, stats.cached_bytes
        );
        Err(Error::new(
            Status::OutOfMemory,
            match self.device.limit() {
                Some(limit) if limited => format!("{figures}, limit {limit} B"),
                _ => format!("{figures}; {}", err.message()),
            },
        ))
    }

    /// Takes back a block this pool handed out. A retired pool returns its
    /// idle memory to the device at once, so it holds none while it waits
    /// for its other blocks.
    ///
    /// Errors: InvalidArgument for a pointer it did not hand out or one
    /// already freed (nothing changes).
    #[inline]
    pub fn free(&self, ptr: DevicePtr) -> Result<()> {
        let home = self.home_shard();
        let mut s = self.shards[home].lock();
        if s.free_hot(ptr) == Some(true) {
            drop(s);
            self.after_free();
            return Ok(());
        }
        if let Held::Replay(r) = &mut s.strategy {
            if let Some(freed) = r.planned_free(ptr) {
                s.counters.freed(freed.requested, freed.bytes);
                drop(s);
                self.after_free();
                return Ok(());
            }
        }
        self.free_locked(s, home, ptr)
    }

    /// A retired pool returns its idle memory at once.
    #[inline]
    fn after_free(&self) {
        if self.retired.load(Ordering::Relaxed) {
            self.release_cached();
        }
    }

    /// The rest of a free, with the home shard's lock held: the home shard
    /// first (the common case: the block came from it), then the others.
    #[inline(never)]
    fn free_locked(&self, mut s: SpinGuard<'_, ShardState>, home: usize, ptr: DevicePtr) -> Result<()> {
        let taken = self.take_back(&mut s, ptr);
        drop(s);
        if taken
            || (0..self.shards.len()).filter(|&i| i != home).any(|i| self.take_back(&mut self.shards[i].lock(), ptr))
        {
            self.after_free();
            return Ok(());
        }
        Err(Error::invalid(format!(
            "free of {ptr:?}: not a block this {} pool handed out, or freed already (nothing changed)",
            self.strategy_name
        )))
    }

    /// Takes `ptr` back into shard `s` (its lock held), if the shard
    /// handed it out and it is live.
    #[inline]
    fn take_back(&self, s: &mut ShardState, ptr: DevicePtr) -> bool {
        if let Some(taken) = s.free_hot(ptr) {
            return taken;
        }
        s.settle_hot(&self.device);
        match s.strategy.free(ptr, &self.device) {
            Ok(freed) => {
                s.counters.freed(freed.requested, freed.bytes);
                true
            }
            Err(_) => false,
        }
    }

    /// Returns the idle memory of every shard to the device (every idle
    /// device block, whatever streams its pieces were freed on: PyTorch's
    /// `empty_cache`); the bytes returned.
    pub fn release_cached(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| {
                let mut s = s.lock();
                s.settle_hot(&self.device);
                s.strategy.release_cached(&self.device)
            })
            .sum()
    }

    /// The caller says every stream is synchronised: idle blocks freed on
    /// one stream may now serve requests on any other.
    pub fn streams_synchronized(&self) {
        for s in self.shards.iter() {
            let mut s = s.lock();
            s.settle_hot(&self.device);
            s.strategy.streams_synchronized();
        }
    }

    /// Marks the end of an iteration (the `replay` strategy records and
    /// plans the first one; the other built-ins ignore it).
    pub fn end_iteration(&self) -> Result<()> {
        for s in self.shards.iter() {
            let mut s = s.lock();
            s.settle_hot(&self.device);
            s.strategy.end_iteration(&self.device)?;
        }
        Ok(())
    }

    /// The pool's statistics now (see [`Stats`] for what sharding does to
    /// the peaks).
    pub fn stats(&self) -> Stats {
        let mut st = Stats::default();
        // Every shard held at once, and the device read before any is let
        // go: every device call happens under a shard's lock, so the
        // figures are one moment's and agree with each other (reserved =
        // allocated + cached where the strategy keeps no plan). No other
        // path holds two shards, so taking them in order cannot deadlock.
        let mut shards: Vec<_> = self.shards.iter().map(|s| s.lock()).collect();
        for s in shards.iter_mut() {
            // The strategy's figures count the idle hot block as cached.
            s.settle_hot(&self.device);
            let c = s.counters;
            st.requested_bytes += c.requested_bytes;
            st.requested_peak += c.requested_peak;
            st.allocated_bytes += c.allocated_bytes;
            st.allocated_peak += c.allocated_peak;
            st.active_blocks += c.active_blocks;
            st.active_peak += c.active_peak;
            st.allocs += c.allocs;
            st.frees += c.frees;
            st.oom_retries += c.oom_retries;
            st.limit_refusals += c.limit_refusals;
            st.served_from_plan += c.served_from_plan;
            let cache = s.strategy.cache_figures();
            st.cached_blocks += cache.cached_blocks;
            st.cached_bytes += cache.cached_bytes;
            st.largest_free_block = st.largest_free_block.max(cache.largest_free_block);
            if let Some(plan) = s.strategy.plan_figures() {
                st.plan_departures += plan.departures;
                st.plan_bytes += plan.plan_bytes;
                st.plan_lower_bound += plan.lower_bound_bytes;
            }
        }
        let d = self.device.counters();
        drop(shards);
        st.reserved_bytes = d.reserved_bytes;
        st.reserved_peak = d.reserved_peak;
        st.device_allocs = d.device_allocs;
        st.device_frees = d.device_frees;
        st.limit = self.device.limit().unwrap_or(0);
        st
    }

    /// Starts every peak again from the current values.
    pub fn reset_peak(&self) {
        for s in self.shards.iter() {
            let c = &mut s.lock().counters;
            c.requested_peak = c.requested_bytes;
            c.allocated_peak = c.allocated_bytes;
            c.active_peak = c.active_blocks;
        }
        self.device.reset_peak();
    }

    /// The statistics as text or JSON.
    pub fn report(&self, format: ReportFormat) -> String {
        stats::report(&self.strategy_name, self.device.allocator().name(), &self.stats(), format)
    }

    /// Appends the statistics now, tagged, to the trace (when the pool was
    /// made with `trace` on; otherwise nothing happens).
    pub fn snapshot(&self, tag: &str) {
        if self.options.trace {
            let snap = Snapshot { tag: tag.to_string(), stats: self.stats() };
            self.trace.lock().unwrap_or_else(|p| p.into_inner()).push(snap);
        }
    }

    /// The tagged snapshots so far, oldest first.
    pub fn trace(&self) -> Vec<Snapshot> {
        self.trace.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The trace as text or JSON.
    pub fn trace_report(&self, format: ReportFormat) -> String {
        stats::trace_report(&self.strategy_name, self.device.allocator().name(), &self.trace(), format)
    }

    /// Blocks handed out and not yet freed.
    pub fn live_blocks(&self) -> u64 {
        self.shards.iter().map(|s| s.lock().counters.active_blocks).sum()
    }

    /// The strategy's name.
    pub fn strategy_name(&self) -> &str {
        &self.strategy_name
    }

    /// The device allocator.
    pub fn allocator(&self) -> &SharedAllocator {
        self.device.allocator()
    }

    /// The options the pool was made with.
    pub fn options(&self) -> &PoolOptions {
        &self.options
    }

    /// How many shards it has (1 for a strategy that cannot be sharded).
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Retires the pool: it serves no new allocation, still takes back its
    /// blocks, and returns its idle memory to the device now.
    ///
    /// Once this returns, no allocation succeeds any more, so a
    /// [`Pool::live_blocks`] read after it that finds 0 stays 0 for good:
    /// the registry relies on that to forget a retired pool. Why it holds,
    /// with the flag `Relaxed`: an allocation reads the flag and counts
    /// its block in one section under its shard's lock (`serve`, and the
    /// hot block's and the plan's paths in `alloc`); this stores the flag
    /// before it takes each
    /// shard's lock (in `release_cached`, and again in `live_blocks`).
    /// For each shard, either the allocation's section comes first, and
    /// the count read here (or later) includes the block, or this
    /// thread's section comes first, and its unlock (Release) before the
    /// allocation's lock (Acquire) makes the flag store visible to the
    /// allocation, which is refused. Reading the flag before taking the
    /// lock would leave a window: an allocation that read `false` could
    /// count its block after every count here read 0.
    pub fn retire(&self) {
        self.retired.store(true, Ordering::Relaxed);
        self.release_cached();
    }

    /// Whether [`Pool::retire`] was called.
    pub fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Relaxed)
    }
}

impl Drop for Pool {
    /// Returns every device block when nothing is handed out. Blocks still
    /// out stay with whoever holds them (their memory stays valid; the
    /// device never sees them again): only idle memory is returned then,
    /// and the allocator is kept for the life of the process (see
    /// [`keep_allocator`]).
    fn drop(&mut self) {
        let live = self.live_blocks();
        for shard in self.shards.iter_mut() {
            let s = shard.0.get_mut();
            s.settle_hot(&self.device);
            if live == 0 {
                s.strategy.release_all(&self.device);
            } else {
                s.strategy.release_cached(&self.device);
            }
        }
        if live != 0 {
            keep_allocator(self.allocator().clone());
        }
    }
}

/// Keeps `allocator` until the process ends: a pool dropped with blocks
/// still out never returns them, and they stay valid for whoever holds
/// them, so the allocator must never learn it is unused (a C vtable's
/// `release` could tear down the heap under them). Kept in a static, not
/// forgotten, so that leak checkers see it reachable.
fn keep_allocator(allocator: SharedAllocator) {
    static KEPT: Mutex<Vec<SharedAllocator>> = Mutex::new(Vec::new());
    KEPT.lock().unwrap_or_else(|p| p.into_inner()).push(allocator);
}

#[cold]
fn bad_request(size: u64, alignment: u64) -> Error {
    if !alignment.is_power_of_two() {
        Error::invalid(format!("alignment {alignment} B of a {size} B request is not a power of two"))
    } else {
        Error::overflow(format!("{size} B rounded up to alignment {alignment} B overflows 64 bits"))
    }
}
