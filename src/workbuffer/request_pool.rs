//! The mutable blocks of parallel infer requests: a pool of N blocks, each
//! large enough for one request's tensors and mutable workbuffers. A
//! request takes a block before its first kernel and gives it back when
//! its last kernel is done (kernels run asynchronously, so the runtime,
//! not an operator's return, says when); a request finding none free
//! waits.
//!
//! The free list sits behind a mutex with a condition variable. Taking a
//! free block or giving one back is a lock, a push or pop and an unlock;
//! the condition variable is only notified when a thread sleeps on it (a
//! notify is a system call, even with nobody to wake, and the block the
//! releasing thread just gave back sits unused meanwhile). A thread
//! finding no block first yields its CPU a few times, re-checking, and
//! only then sleeps. Sleeping threads are woken by a release (one of
//! them), by the cancellation of the token they wait with (all of them:
//! see [`crate::cancel`]), and by a shrink to zero.
//!
//! A lease carries its slot and a generation that changes on every
//! acquire, so a release of a stale or foreign lease is refused instead of
//! freeing a block another request holds.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use super::build::CompiledModel;
use crate::cancel::CancelToken;
use crate::pool::device::{DeviceBlock, DevicePtr, SharedAllocator};
use crate::status::{Error, Result, Status};

/// One acquired block: hand it back unchanged to
/// [`BlockPool::release`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The block's slot in its pool.
    pub slot: u32,
    /// Which acquire of that slot this is.
    pub generation: u32,
    /// The block's address.
    pub base: DevicePtr,
    /// Its size in bytes.
    pub size: u64,
}

/// A pool's state and counters, as of one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolInfo {
    /// The count asked for at creation.
    pub requested: usize,
    /// Blocks allocated now (free or out).
    pub blocks: usize,
    /// The count the pool shrinks towards (blocks above it are freed when
    /// they come back).
    pub target: usize,
    /// Blocks free now.
    pub free: usize,
    /// Blocks held by requests now.
    pub out: usize,
    /// Threads waiting in `acquire` now (yielding or asleep).
    pub waiters: usize,
    /// Those of them asleep (they need a release's wake-up).
    pub sleepers: usize,
    /// Bytes of each block.
    pub block_size: u64,
    /// Why the pool got fewer blocks than requested, if it did.
    pub partial: Option<String>,
    /// Successful acquires so far.
    pub acquires: u64,
    /// Acquires that had to wait.
    pub waits: u64,
    /// Acquires that gave up at their timeout.
    pub timeouts: u64,
    /// Acquires ended by their cancellation token.
    pub cancellations: u64,
}

struct Slot {
    block: Option<DeviceBlock>,
    generation: u32,
    out: bool,
}

struct State {
    slots: Vec<Slot>,
    free: Vec<u32>,
    blocks: usize,
    target: usize,
    out: usize,
    /// Threads in `acquire`'s slow path, yielding or asleep.
    waiters: usize,
    /// Those of them asleep on the condition variable: only these need a
    /// notify (a system call).
    sleepers: usize,
    acquires: u64,
    waits: u64,
    timeouts: u64,
    cancellations: u64,
}

impl State {
    /// What an acquire comes to without waiting, checked in this order:
    /// cancelled, a free block taken, the pool emptied by a shrink to 0;
    /// `None` when it has to wait.
    fn settle(&mut self, is_cancelled: bool, size: u64) -> Option<Result<Lease>> {
        if is_cancelled {
            self.cancellations += 1;
            return Some(Err(cancelled()));
        }
        if let Some(slot) = self.free.pop() {
            return Some(Ok(self.lease(slot, size)));
        }
        if self.target == 0 {
            return Some(Err(emptied()));
        }
        None
    }

    /// Takes free block `slot` for a new lease.
    fn lease(&mut self, slot: u32, size: u64) -> Lease {
        let s = &mut self.slots[slot as usize];
        s.generation = s.generation.wrapping_add(1);
        s.out = true;
        self.out += 1;
        self.acquires += 1;
        let base = s.block.as_ref().expect("a free slot holds a block").ptr();
        Lease { slot, generation: s.generation, base, size }
    }
}

struct Shared {
    state: Mutex<State>,
    available: Condvar,
    block_size: u64,
    requested: usize,
    partial: Option<String>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Every critical section leaves the state whole between its
        // statements that can panic (none allocate or call out), so a
        // poisoned lock still guards consistent data.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// N mutable blocks for parallel infer requests. Thread-safe: acquire,
/// release, shrink and info may run on any threads at once.
pub struct BlockPool {
    shared: Arc<Shared>,
}

impl BlockPool {
    /// A pool of up to `requested` blocks of `block_size` bytes aligned to
    /// `alignment`, from `allocator`. When the allocator reports its free
    /// memory, the pool takes no more blocks than that holds. An
    /// allocation failing after some blocks keeps those (see
    /// [`PoolInfo::partial`]). Errors: a zero count or size, a bad
    /// alignment, not even one block (`OutOfMemory`, with the bytes one
    /// block needs).
    pub fn new(allocator: SharedAllocator, block_size: u64, alignment: u64, requested: usize) -> Result<BlockPool> {
        if requested == 0 || block_size == 0 {
            return Err(Error::invalid(format!(
                "a pool of {requested} blocks of {block_size} B: both must be at least 1"
            )));
        }
        if !alignment.is_power_of_two() {
            return Err(Error::invalid(format!("block alignment {alignment} is not a power of two")));
        }
        // Slots are numbered in 32 bits (a lease carries its slot).
        if u32::try_from(requested).is_err() {
            return Err(Error::invalid(format!("a pool of {requested} blocks: at most {} blocks", u32::MAX)));
        }
        let none_fit = |detail: String| {
            Error::new(Status::OutOfMemory, format!("one mutable block needs {block_size} B; {detail}"))
        };
        let mut count = requested;
        let mut partial = None;
        if let Some(info) = allocator.mem_info() {
            let room = usize::try_from(info.free / block_size).unwrap_or(usize::MAX);
            if room == 0 {
                return Err(none_fit(format!("device \"{}\" has {} B free", allocator.name(), info.free)));
            }
            if room < requested {
                count = room;
                partial = Some(format!(
                    "device \"{}\" has {} B free: room for {room} of the {requested} blocks of {block_size} B",
                    allocator.name(),
                    info.free
                ));
            }
        }
        // Grown block by block, not reserved: the count may be far more
        // than the device will give.
        let mut slots = Vec::new();
        for k in 0..count {
            match DeviceBlock::new(allocator.clone(), block_size, alignment) {
                Ok(block) => slots.push(Slot { block: Some(block), generation: 0, out: false }),
                Err(e) if k == 0 => return Err(none_fit(e.message().to_string())),
                Err(e) => {
                    let failed =
                        format!("block {} of {count} could not be allocated ({}); kept {k}", k + 1, e.message());
                    partial = Some(match partial {
                        Some(capped) => format!("{capped}; {failed}"),
                        None => failed,
                    });
                    break;
                }
            }
        }
        let blocks = slots.len();
        let state = State {
            free: (0..blocks as u32).rev().collect(),
            slots,
            blocks,
            target: blocks,
            out: 0,
            waiters: 0,
            sleepers: 0,
            acquires: 0,
            waits: 0,
            timeouts: 0,
            cancellations: 0,
        };
        let shared = Shared { state: Mutex::new(state), available: Condvar::new(), block_size, requested, partial };
        Ok(BlockPool { shared: Arc::new(shared) })
    }

    /// A pool of blocks for `model`'s requests: [`CompiledModel::block_size`]
    /// bytes at the model's alignment. The device's free memory is what is
    /// left after the model's shared blobs (already allocated).
    pub fn for_model(model: &CompiledModel, allocator: SharedAllocator, requested: usize) -> Result<BlockPool> {
        let layout = model.layout();
        let same_device = std::ptr::addr_eq(Arc::as_ptr(&allocator), Arc::as_ptr(model.allocator()));
        BlockPool::new(allocator, model.block_size(), model.options().alignment, requested).map_err(|e| {
            if e.status() != Status::OutOfMemory || !same_device {
                return e;
            }
            let blobs = layout.constants_size + layout.immutable_size;
            Error::new(e.status(), format!("{} (after the model's shared blobs of {blobs} B)", e.message()))
        })
    }

    /// Takes a free block, waiting for one when none is. `timeout`: `None`
    /// waits without limit, `Some(ZERO)` does not wait. Errors: `Cancelled`
    /// when `cancel` is or becomes cancelled (checked first, so a
    /// cancelled request takes no block), `Busy` at the timeout,
    /// `WrongState` once the pool was shrunk to no blocks.
    pub fn acquire(&self, timeout: Option<Duration>, cancel: Option<&CancelToken>) -> Result<Lease> {
        let shared = &*self.shared;
        let mut st = shared.lock();
        if let Some(done) = st.settle(cancel.is_some_and(CancelToken::is_cancelled), shared.block_size) {
            return done;
        }
        if timeout == Some(Duration::ZERO) {
            st.timeouts += 1;
            return Err(busy(&st, Duration::ZERO));
        }
        self.wait_for_block(st, timeout, cancel)
    }

    /// The slow path of `acquire`: registers with the token, then sleeps
    /// until a block is free, the token is cancelled, the pool is emptied
    /// or the deadline passes.
    fn wait_for_block<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        timeout: Option<Duration>,
        cancel: Option<&CancelToken>,
    ) -> Result<Lease> {
        let shared = &*self.shared;
        // A deadline too far to represent waits without limit.
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let weak: Weak<Shared> = Arc::downgrade(&self.shared);
        // Registered under the pool's lock, before the flag is read under
        // it: a cancel either set the flag before that read, or its waker
        // (which takes this lock) runs after this thread sleeps.
        let cancels_seen = cancel.map_or(0, CancelToken::cancel_count);
        let _registration = cancel.map(|token| {
            token.on_cancel(Arc::new(move || {
                if let Some(shared) = weak.upgrade() {
                    drop(shared.lock());
                    shared.available.notify_all();
                }
            }))
        });
        st.waiters += 1;
        st.waits += 1;
        let mut yields_left = YIELDS_BEFORE_SLEEP;
        let outcome = loop {
            let cancelled = cancel.is_some_and(|t| t.is_cancelled() || t.cancel_count() != cancels_seen);
            if let Some(done) = st.settle(cancelled, shared.block_size) {
                break done;
            }
            if let Some(deadline) = deadline {
                if Instant::now() >= deadline {
                    st.timeouts += 1;
                    break Err(busy(&st, timeout.unwrap_or_default()));
                }
            }
            // A block held for a short kernel often comes back within a few
            // scheduler turns: yielding first spares the releasing thread
            // the system call that waking a sleeper costs, during which the
            // block it gave back would sit unused.
            if yields_left > 0 {
                yields_left -= 1;
                drop(st);
                std::thread::yield_now();
                st = shared.lock();
                continue;
            }
            st.sleepers += 1;
            st = match deadline {
                None => shared.available.wait(st).unwrap_or_else(|p| p.into_inner()),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    shared.available.wait_timeout(st, left).unwrap_or_else(|p| p.into_inner()).0
                }
            };
            st.sleepers -= 1;
        };
        st.waiters -= 1;
        // A waiter leaving without a block may have been the one a release
        // woke: pass the wake-up on, or a free block would wait unseen.
        if outcome.is_err() && !st.free.is_empty() && st.sleepers > 0 {
            shared.available.notify_one();
        }
        outcome
    }

    /// Gives a block back and wakes one waiter; a block above the shrink
    /// target is freed instead. Errors, changing nothing: a lease that is
    /// not out of this pool (released twice, stale, or another pool's).
    pub fn release(&self, lease: &Lease) -> Result<()> {
        let shared = &*self.shared;
        let mut st = shared.lock();
        let held = st.slots.get(lease.slot as usize).is_some_and(|s| {
            s.out && s.generation == lease.generation && s.block.as_ref().is_some_and(|b| b.ptr() == lease.base)
        });
        if !held || lease.size != shared.block_size {
            return Err(Error::invalid(format!(
                "block {:?} (slot {}, generation {}) is not out of this pool: released twice, stale, or from \
                 another pool",
                lease.base, lease.slot, lease.generation
            )));
        }
        st.out -= 1;
        let slot = &mut st.slots[lease.slot as usize];
        slot.out = false;
        if st.blocks > st.target {
            let block = st.slots[lease.slot as usize].block.take();
            st.blocks -= 1;
            drop(st);
            // Freed outside the lock: the allocator may be slow or call back.
            drop(block);
            return Ok(());
        }
        st.free.push(lease.slot);
        let wake = st.sleepers > 0;
        drop(st);
        if wake {
            shared.available.notify_one();
        }
        Ok(())
    }

    /// Shrinks the pool to `blocks`: free blocks above that go back to the
    /// device now, blocks out when they come back. Shrinking to 0 fails
    /// every waiter with `WrongState`. Errors: growing (the pool only
    /// shrinks; make another pool to grow).
    pub fn shrink(&self, blocks: usize) -> Result<()> {
        let shared = &*self.shared;
        let mut st = shared.lock();
        if blocks > st.target {
            return Err(Error::invalid(format!(
                "a pool only shrinks: asked for {blocks} blocks, it has {} (make another pool to grow)",
                st.target
            )));
        }
        st.target = blocks;
        let mut freed = Vec::new();
        while st.blocks > st.target {
            let Some(slot) = st.free.pop() else { break };
            freed.push(st.slots[slot as usize].block.take());
            st.blocks -= 1;
        }
        if blocks == 0 && st.sleepers > 0 {
            shared.available.notify_all();
        }
        drop(st);
        drop(freed);
        Ok(())
    }

    /// The pool's state and counters now.
    pub fn info(&self) -> PoolInfo {
        let shared = &*self.shared;
        let st = shared.lock();
        PoolInfo {
            requested: shared.requested,
            blocks: st.blocks,
            target: st.target,
            free: st.free.len(),
            out: st.out,
            waiters: st.waiters,
            sleepers: st.sleepers,
            block_size: shared.block_size,
            partial: shared.partial.clone(),
            acquires: st.acquires,
            waits: st.waits,
            timeouts: st.timeouts,
            cancellations: st.cancellations,
        }
    }

    /// Bytes of each block.
    pub fn block_size(&self) -> u64 {
        self.shared.block_size
    }
}

impl Drop for BlockPool {
    /// Frees the blocks here, on the thread dropping the pool: a waker a
    /// cancelling thread still holds keeps the shared state alive a moment
    /// longer, and must not be the one returning blocks to the device after
    /// the pool's owner thinks it is gone.
    fn drop(&mut self) {
        let slots = std::mem::take(&mut self.shared.lock().slots);
        drop(slots);
    }
}

impl std::fmt::Debug for BlockPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockPool").field("info", &self.info()).finish()
    }
}

/// Scheduler turns a waiter yields before it sleeps.
const YIELDS_BEFORE_SLEEP: u32 = 8;

fn cancelled() -> Error {
    Error::new(Status::Cancelled, "acquire cancelled through its cancellation token")
}

fn emptied() -> Error {
    Error::wrong_state("the pool has no blocks: it was shrunk to 0")
}

fn busy(st: &State, waited: Duration) -> Error {
    Error::new(
        Status::Busy,
        format!("no block free after waiting {} ns: all {} blocks are out", waited.as_nanos(), st.out),
    )
}
