//! The C structs of pools: `nnm_pool_options` (in) and `nnm_pool_stats`
//! (out), and their conversions to and from the core's types.

use super::super::args::out_param;
use super::super::error::guard;
use crate::plan::Algorithm;
use crate::pool::{CachingOptions, PoolOptions, ReplayOptions, Stats};
use crate::status::{Error, Result, Status};

/// How a pool is made (`nnm_pool_new`, `nnm_device_init_pool`). Start from
/// `nnm_pool_options_default` and change the fields wanted: a field left at
/// 0 is not a default (only `limit_bytes` and `shards` give 0 a meaning).
/// Every field is checked, whatever the strategy: a value its rule refuses
/// fails the call with INVALID_ARGUMENT naming the field, the value and
/// the rule (nothing is silently changed).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct nnm_pool_options {
    /// Hard limit on the bytes the pool holds from its device; past it an
    /// allocation fails with OUT_OF_MEMORY. 0: no limit (default).
    pub limit_bytes: u64,
    /// `page-unit`: every request is rounded up to a multiple of this (a
    /// power of two; default 4096).
    pub page_size: u64,
    /// `caching`: free blocks larger than this are never split (default
    /// UINT64_MAX: any block may be split). Any value.
    pub max_split: u64,
    /// `caching`: requests of at most this many bytes are served from small
    /// segments (default 1 MiB). Any value (0: none).
    pub small_size: u64,
    /// `caching`: the device block size of small segments (default 2 MiB):
    /// a non-zero multiple of `min_block`, at least `small_size`.
    pub small_segment: u64,
    /// `caching`: large requests' device blocks are rounded up to a
    /// multiple of this (default 2 MiB): a non-zero multiple of
    /// `min_block`.
    pub large_round: u64,
    /// `caching`: every block is rounded up to a multiple of this (a power
    /// of two, 1 included; default 512).
    pub min_block: u64,
    /// `replay`: the planner's work limit (default the planner's,
    /// 300000000); the plan is the best found within it.
    pub replay_work_limit: u64,
    /// `replay`: the planner's algorithm, an `nnm_algorithm` (default AUTO).
    pub replay_algorithm: u32,
    /// Shards (independent caches, each with its own lock) of a shardable
    /// strategy (`page-unit`, `caching`); 0: automatic (default); at most
    /// 64.
    pub shards: u32,
    /// Non-zero: keep the snapshots of `nnm_pool_snapshot` (default 0).
    pub trace: u32,
    /// Must be 0 (room for flags).
    pub reserved: u32,
}

impl From<&PoolOptions> for nnm_pool_options {
    fn from(o: &PoolOptions) -> Self {
        nnm_pool_options {
            limit_bytes: o.limit.unwrap_or(0),
            page_size: o.page_size,
            max_split: o.caching.max_split,
            small_size: o.caching.small_size,
            small_segment: o.caching.small_segment,
            large_round: o.caching.large_round,
            min_block: o.caching.min_block,
            replay_work_limit: o.replay.work_limit,
            replay_algorithm: o.replay.algorithm as u32,
            shards: u32::try_from(o.shards).unwrap_or(u32::MAX),
            trace: u32::from(o.trace),
            reserved: 0,
        }
    }
}

impl nnm_pool_options {
    /// The core's options; the pool checks the values themselves.
    pub(crate) fn to_core(self) -> Result<PoolOptions> {
        if self.reserved != 0 {
            return Err(Error::invalid(format!("options.reserved is {} (must be 0)", self.reserved)));
        }
        let algorithm = Algorithm::from_value(self.replay_algorithm)
            .map_err(|e| Error::invalid(format!("options.replay_algorithm: {}", e.message())))?;
        let shards = usize::try_from(self.shards)
            .map_err(|_| Error::invalid(format!("options.shards: {} exceeds the address space", self.shards)))?;
        Ok(PoolOptions {
            limit: (self.limit_bytes != 0).then_some(self.limit_bytes),
            page_size: self.page_size,
            shards,
            caching: CachingOptions {
                max_split: self.max_split,
                small_size: self.small_size,
                small_segment: self.small_segment,
                large_round: self.large_round,
                min_block: self.min_block,
            },
            replay: ReplayOptions { algorithm, work_limit: self.replay_work_limit },
            trace: self.trace != 0,
        })
    }
}

/// The options behind a C pointer: NULL gives the defaults.
///
/// # Safety
/// `options` must be NULL or valid for reading one `nnm_pool_options`.
pub(crate) unsafe fn core_options(options: *const nnm_pool_options) -> Result<PoolOptions> {
    if options.is_null() {
        return Ok(PoolOptions::default());
    }
    if !options.is_aligned() {
        return Err(Error::invalid(format!("options ({options:p}) is not aligned to 8 bytes")));
    }
    // SAFETY: non-NULL and aligned; the caller promises it is readable. The
    // struct is plain integers: any bit pattern is a value.
    unsafe { options.read() }.to_core()
}

/// Writes the default options: no limit, 4096 B pages, automatic shards,
/// the caching and replay defaults, no trace.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `out_options` must be NULL or valid for writing one `nnm_pool_options`.
#[no_mangle]
pub unsafe extern "C" fn nnm_pool_options_default(out_options: *mut nnm_pool_options) -> Status {
    guard(|| {
        // SAFETY: the caller promises `out_options` is NULL or writable.
        let out = unsafe { out_param(out_options, "out_options") }?;
        out.write((&PoolOptions::default()).into());
        Ok(())
    })
}

/// A pool's statistics (`nnm_pool_stats`), integers in bytes (not float MB
/// as RAF's). "Allocated" counts the blocks handed out as the strategy
/// rounded them; "requested", the sizes asked for; "reserved", the bytes
/// held from the device (handed out, cached, and a replay plan's block).
/// Peaks are since creation or the last `nnm_pool_reset_peak`. With several
/// shards, the requested, allocated and active peaks are the sum of the
/// shards' peaks (an upper bound); reserved figures are always exact.
/// One read is one moment's, also while other threads allocate (every
/// shard is held at once): with `no-pool`, `page-unit` and `caching`,
/// `reserved_bytes == allocated_bytes + cached_bytes` in every read.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct nnm_pool_stats {
    /// Bytes asked for by the blocks handed out now.
    pub requested_bytes: u64,
    /// The most `requested_bytes` reached.
    pub requested_peak: u64,
    /// Bytes of the blocks handed out now (after rounding): RAF's "used".
    pub allocated_bytes: u64,
    /// The most `allocated_bytes` reached.
    pub allocated_peak: u64,
    /// Bytes held from the device now: RAF's "pool size", PyTorch's
    /// "reserved".
    pub reserved_bytes: u64,
    /// The most `reserved_bytes` reached.
    pub reserved_peak: u64,
    /// Blocks handed out now.
    pub active_blocks: u64,
    /// The most `active_blocks` reached.
    pub active_peak: u64,
    /// Idle blocks held for reuse.
    pub cached_blocks: u64,
    /// Their bytes.
    pub cached_bytes: u64,
    /// The largest idle block (0 when none).
    pub largest_free_block: u64,
    /// Successful allocations since creation.
    pub allocs: u64,
    /// Successful deallocations since creation.
    pub frees: u64,
    /// Device allocations since creation.
    pub device_allocs: u64,
    /// Device frees since creation.
    pub device_frees: u64,
    /// Times the pool released its idle memory and retried after the
    /// device or the limit refused.
    pub oom_retries: u64,
    /// Allocations refused with OUT_OF_MEMORY.
    pub limit_refusals: u64,
    /// Allocations a replay plan served.
    pub served_from_plan: u64,
    /// Iterations that departed from the recorded sequence (the rest of
    /// each was served by the caching fallback).
    pub plan_departures: u64,
    /// Bytes of the replay plan's block (its peak); 0 without a plan.
    pub plan_bytes: u64,
    /// The lower bound of the recorded iteration (no plan can be smaller).
    pub plan_lower_bound: u64,
    /// The pool's limit (0: none).
    pub limit: u64,
}

impl From<Stats> for nnm_pool_stats {
    fn from(s: Stats) -> Self {
        nnm_pool_stats {
            requested_bytes: s.requested_bytes,
            requested_peak: s.requested_peak,
            allocated_bytes: s.allocated_bytes,
            allocated_peak: s.allocated_peak,
            reserved_bytes: s.reserved_bytes,
            reserved_peak: s.reserved_peak,
            active_blocks: s.active_blocks,
            active_peak: s.active_peak,
            cached_blocks: s.cached_blocks,
            cached_bytes: s.cached_bytes,
            largest_free_block: s.largest_free_block,
            allocs: s.allocs,
            frees: s.frees,
            device_allocs: s.device_allocs,
            device_frees: s.device_frees,
            oom_retries: s.oom_retries,
            limit_refusals: s.limit_refusals,
            served_from_plan: s.served_from_plan,
            plan_departures: s.plan_departures,
            plan_bytes: s.plan_bytes,
            plan_lower_bound: s.plan_lower_bound,
            limit: s.limit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_options_round_trip_through_c() {
        let mut c = nnm_pool_options { reserved: 7, ..Default::default() };
        // SAFETY: `c` is writable.
        assert_eq!(unsafe { nnm_pool_options_default(&mut c) }, Status::Ok);
        let core = c.to_core().unwrap();
        let d = PoolOptions::default();
        assert_eq!(nnm_pool_options::from(&core), nnm_pool_options::from(&d));
        assert_eq!((c.limit_bytes, c.reserved, core.limit), (0, 0, None));
    }

    #[test]
    fn bad_fields_are_named() {
        let mut c = nnm_pool_options::from(&PoolOptions::default());
        c.replay_algorithm = 999;
        let e = c.to_core().unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.message().starts_with("options.replay_algorithm: "), "{e}");
        c.replay_algorithm = 0;
        c.reserved = 1;
        assert_eq!(c.to_core().unwrap_err().message(), "options.reserved is 1 (must be 0)");
        c.reserved = 0;
        c.limit_bytes = 1 << 20;
        assert_eq!(c.to_core().unwrap().limit, Some(1 << 20));
    }
}
