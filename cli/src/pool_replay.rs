//! `nnmem pool-replay`: a trace's allocations replayed through memory
//! pools, one pool per strategy, over a device that counts its calls.
//!
//! The trace is the planner CSV read as a runtime's allocation sequence:
//! every buffer is allocated at `lower` and freed at `upper`. Lifetimes are
//! half-open, so at one step the frees come first (a buffer whose lifetime
//! ends at step t is not live at t); ties keep the rows' order, so the
//! sequence, and every count printed, is the same on every run.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nnmem::plan::csv::Row;
use nnmem::plan::units::bytes;
use nnmem::plan::Planner;
use nnmem::pool::device::{self, DeviceAllocator, DevicePtr, MemInfo, SharedAllocator, Stream};
use nnmem::pool::{Pool, PoolOptions, StrategyKind};
use nnmem::{Error, Result};

use crate::args::{PoolReplayArgs, ReplayDevice};

/// One step of the allocation sequence: allocate or free the buffer of row
/// `row`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Alloc(usize),
    Free(usize),
}

/// The allocation sequence of a trace: allocations at `lower`, frees at
/// `upper`, frees first at equal steps, then the rows' order. Rows of size 0
/// allocate nothing and are left out.
pub fn events(rows: &[Row]) -> Vec<Event> {
    // (step, 0 for a free and 1 for an allocation, row)
    let mut keyed: Vec<(i64, u8, usize)> = Vec::with_capacity(rows.len() * 2);
    for (i, r) in rows.iter().enumerate().filter(|(_, r)| r.size > 0) {
        keyed.push((r.lower, 1, i));
        keyed.push((r.upper, 0, i));
    }
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, kind, i)| if kind == 0 { Event::Free(i) } else { Event::Alloc(i) }).collect()
}

/// The largest total size of the trace's buffers live at one step: no
/// pool can reserve less and still serve the sequence.
pub fn lower_bound(rows: &[Row]) -> Result<u64> {
    let mut planner = Planner::new();
    for r in rows {
        planner.add_buffer(r.size, nnmem::plan::Lifetime::half_open(r.lower, r.upper)?, None)?;
    }
    Ok(planner.lower_bound())
}

/// What the device saw.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct Counts {
    allocs: u64,
    frees: u64,
    live_bytes: u64,
    /// The most held at once since the last [`Counting::start_period`].
    peak_bytes: u64,
    /// The most held at once since the device was made.
    overall_peak_bytes: u64,
}

/// A device that counts its calls and the bytes it holds, independently of
/// the pool's own statistics: over the host allocator, or over an address
/// range without memory behind it.
struct Counting {
    host: Option<SharedAllocator>,
    state: Mutex<(Counts, usize)>,
}

/// Where the virtual device's addresses start: far from NULL, and aligned
/// for any alignment a trace asks for.
const VIRTUAL_BASE: usize = 1 << 40;

impl Counting {
    fn new(device: ReplayDevice) -> Self {
        let host = match device {
            ReplayDevice::Host => Some(device::host()),
            ReplayDevice::Virtual => None,
        };
        Counting { host, state: Mutex::new((Counts::default(), VIRTUAL_BASE)) }
    }

    fn state(&self) -> MutexGuard<'_, (Counts, usize)> {
        // Plain integers: a panic elsewhere leaves nothing half-updated.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn counts(&self) -> Counts {
        self.state().0
    }

    /// Starts a new period for `peak_bytes` from the bytes held now.
    fn start_period(&self) {
        let mut s = self.state();
        s.0.peak_bytes = s.0.live_bytes;
    }

    /// The next `size` bytes of the virtual range, aligned.
    fn next_address(&self, size: u64, alignment: u64) -> Result<DevicePtr> {
        let oom = || Error::new(nnmem::Status::OutOfMemory, format!("virtual: no address range for {size} B"));
        let mut s = self.state();
        let alignment = usize::try_from(alignment).map_err(|_| oom())?;
        let start = s.1.checked_next_multiple_of(alignment).ok_or_else(oom)?;
        let end = usize::try_from(size).ok().and_then(|size| start.checked_add(size)).ok_or_else(oom)?;
        s.1 = end;
        // An address only: the virtual device's memory is never read or
        // written, by the pools or by this command.
        DevicePtr::new(std::ptr::without_provenance_mut(start)).ok_or_else(oom)
    }
}

impl DeviceAllocator for Counting {
    fn name(&self) -> &str {
        if self.host.is_some() {
            "counting host"
        } else {
            "counting virtual"
        }
    }

    fn alloc(&self, size: u64, alignment: u64, stream: Stream) -> Result<DevicePtr> {
        let ptr = match &self.host {
            Some(host) => host.alloc(size, alignment, stream)?,
            None => self.next_address(size, alignment)?,
        };
        let mut s = self.state();
        s.0.allocs += 1;
        s.0.live_bytes += size;
        s.0.peak_bytes = s.0.peak_bytes.max(s.0.live_bytes);
        s.0.overall_peak_bytes = s.0.overall_peak_bytes.max(s.0.live_bytes);
        Ok(ptr)
    }

    fn free(&self, ptr: DevicePtr, size: u64, stream: Stream) {
        if let Some(host) = &self.host {
            host.free(ptr, size, stream);
        }
        let mut s = self.state();
        s.0.frees += 1;
        s.0.live_bytes -= size;
    }

    fn mem_info(&self) -> Option<MemInfo> {
        self.host.as_ref().and_then(|h| h.mem_info())
    }

    fn host_accessible(&self) -> bool {
        self.host.as_ref().is_some_and(|h| h.host_accessible())
    }
}

/// What the reports say about the trace itself.
pub struct Trace<'a> {
    pub name: &'a str,
    pub buffers: usize,
    /// Allocations per iteration (the rows of non-zero size).
    pub requests: usize,
    pub lower_bound: u64,
}

/// One strategy's replay.
#[derive(Clone, Debug)]
pub struct Replayed {
    pub strategy: StrategyKind,
    /// The most bytes held from the device at once, over all iterations.
    pub peak_reserved: u64,
    /// Per iteration: the most held at once during it (memory a pool kept
    /// from earlier iterations counts).
    pub iteration_peaks: Vec<u64>,
    pub device_allocs: Vec<u64>,
    pub device_frees: Vec<u64>,
    /// Requests served from a replay plan, per iteration.
    pub from_plan: Vec<u64>,
    /// Iterations in which the sequence departed from a replay plan.
    pub plan_departures: u64,
    /// The pool's own peak of bytes handed out (after its rounding).
    pub allocated_peak: u64,
    pub iteration_times: Vec<Duration>,
}

impl Replayed {
    /// The peak from the second iteration on (the first when there is only
    /// one): what a pool needs once it has seen the sequence.
    pub fn steady_peak(&self) -> u64 {
        self.iteration_peaks.iter().skip(1).copied().max().unwrap_or(self.iteration_peaks[0])
    }

    pub fn time(&self) -> Duration {
        self.iteration_times.iter().sum()
    }
}

/// Runs the sequence `iterations` times through a fresh pool of `strategy`.
/// Errors name the strategy, the iteration and the buffer.
pub fn replay(rows: &[Row], sequence: &[Event], strategy: StrategyKind, a: &PoolReplayArgs) -> Result<Replayed> {
    let fail = |what: String, e: Error| Error::new(e.status(), format!("{}: {what}: {}", strategy.name(), e.message()));
    let counting = Arc::new(Counting::new(a.device));
    let pool = Pool::new(counting.clone(), strategy, &PoolOptions::default())
        .map_err(|e| fail("cannot make the pool".into(), e))?;
    let mut out = Replayed {
        strategy,
        peak_reserved: 0,
        iteration_peaks: Vec::new(),
        device_allocs: Vec::new(),
        device_frees: Vec::new(),
        from_plan: Vec::new(),
        plan_departures: 0,
        allocated_peak: 0,
        iteration_times: Vec::new(),
    };
    let mut live: Vec<Option<DevicePtr>> = vec![None; rows.len()];
    for iteration in 1..=a.iterations {
        let (before, plan_before) = (counting.counts(), pool.stats().served_from_plan);
        counting.start_period();
        let started = Instant::now();
        for &event in sequence {
            match event {
                Event::Alloc(i) => {
                    let ptr = pool.alloc(rows[i].size, a.alignment, Stream::DEFAULT).map_err(|e| {
                        fail(
                            format!("iteration {iteration}: allocating {} ({} B)", rows[i].describe(), rows[i].size),
                            e,
                        )
                    })?;
                    live[i] = Some(ptr);
                }
                Event::Free(i) => {
                    let ptr = live[i].take().expect("the sequence allocates a buffer before it frees it");
                    pool.free(ptr)
                        .map_err(|e| fail(format!("iteration {iteration}: freeing {}", rows[i].describe()), e))?;
                }
            }
        }
        pool.end_iteration().map_err(|e| fail(format!("iteration {iteration}: ending it"), e))?;
        out.iteration_times.push(started.elapsed());
        let after = counting.counts();
        out.iteration_peaks.push(after.peak_bytes);
        out.device_allocs.push(after.allocs - before.allocs);
        out.device_frees.push(after.frees - before.frees);
        out.from_plan.push(pool.stats().served_from_plan - plan_before);
    }
    let stats = pool.stats();
    let counts = counting.counts();
    out.peak_reserved = counts.overall_peak_bytes;
    out.plan_departures = stats.plan_departures;
    out.allocated_peak = stats.allocated_peak;
    // The pool's statistics must agree with what the device saw.
    let pool_view = (stats.device_allocs, stats.device_frees, stats.reserved_bytes, stats.reserved_peak);
    let device_view = (counts.allocs, counts.frees, counts.live_bytes, counts.overall_peak_bytes);
    if pool_view != device_view {
        return Err(Error::new(
            nnmem::Status::WrongState,
            format!(
                "{}: the pool's statistics disagree with the device: (device allocs, frees, reserved bytes, \
                 reserved peak) are {pool_view:?} in the pool, {device_view:?} at the device",
                strategy.name()
            ),
        ));
    }
    drop(pool);
    let left = counting.counts();
    if left.live_bytes != 0 {
        return Err(Error::new(
            nnmem::Status::WrongState,
            format!(
                "{}: the pool left {} B in {} device block(s) when it was dropped",
                strategy.name(),
                left.live_bytes,
                left.allocs - left.frees
            ),
        ));
    }
    Ok(out)
}

/// `value / lower bound` with four decimals ("-" when the bound is zero).
fn ratio(value: u64, lower_bound: u64) -> String {
    crate::report::ratio(value, lower_bound)
}

fn list(values: &[u64]) -> String {
    values.iter().map(u64::to_string).collect::<Vec<_>>().join(" ")
}

/// The text report: one block of lines per strategy.
pub fn text(t: &Trace, a: &PoolReplayArgs, results: &[Replayed]) -> String {
    let lower_bound = t.lower_bound;
    let mut s = String::new();
    let device = match a.device {
        ReplayDevice::Host => "host memory",
        ReplayDevice::Virtual => "a virtual device (addresses only)",
    };
    let _ = writeln!(s, "trace           {} ({} buffers, {} allocations per iteration)", t.name, t.buffers, t.requests);
    let _ = writeln!(s, "lower bound     {}", bytes(lower_bound));
    let _ = writeln!(s, "replay          {} iteration(s) on {device}, alignment {} B", a.iterations, a.alignment);
    for r in results {
        let _ = writeln!(s, "\n{}", r.strategy.name());
        let _ = writeln!(
            s,
            "  peak reserved     {} ({}x the lower bound)",
            bytes(r.peak_reserved),
            ratio(r.peak_reserved, lower_bound)
        );
        if a.iterations > 1 {
            let steady = r.steady_peak();
            let _ = writeln!(s, "  from iteration 2  {} ({}x)", bytes(steady), ratio(steady, lower_bound));
        }
        let _ = writeln!(s, "  device allocs     {} (per iteration)", list(&r.device_allocs));
        let _ = writeln!(s, "  device frees      {} (per iteration)", list(&r.device_frees));
        let _ = writeln!(s, "  served from plan  {} (per iteration)", list(&r.from_plan));
        let times: Vec<String> = r.iteration_times.iter().map(|t| format!("{:.3}", t.as_secs_f64() * 1e3)).collect();
        let _ = writeln!(
            s,
            "  time              {:.3} ms ({} ms per iteration)",
            r.time().as_secs_f64() * 1e3,
            times.join(" ")
        );
    }
    s
}

fn array(values: &[u64]) -> String {
    format!("[{}]", values.iter().map(u64::to_string).collect::<Vec<_>>().join(", "))
}

/// The JSON report: an array, one object per strategy (keys in README.md,
/// "nnmem pool-replay --json").
pub fn json(t: &Trace, a: &PoolReplayArgs, results: &[Replayed]) -> String {
    let device = match a.device {
        ReplayDevice::Host => "host",
        ReplayDevice::Virtual => "virtual",
    };
    let objects: Vec<String> = results
        .iter()
        .map(|r| {
            let ms = |t: Duration| format!("{:.3}", t.as_secs_f64() * 1e3);
            let fields = [
                ("strategy", format!("\"{}\"", r.strategy.name())),
                ("trace", format!("\"{}\"", nnmem::json::escape(t.name))),
                ("buffers", t.buffers.to_string()),
                ("requests_per_iteration", t.requests.to_string()),
                ("device", format!("\"{device}\"")),
                ("alignment", a.alignment.to_string()),
                ("iterations", a.iterations.to_string()),
                ("lower_bound_bytes", t.lower_bound.to_string()),
                ("peak_reserved_bytes", r.peak_reserved.to_string()),
                ("peak_reserved_per_iteration", array(&r.iteration_peaks)),
                ("steady_peak_reserved_bytes", r.steady_peak().to_string()),
                ("allocated_peak_bytes", r.allocated_peak.to_string()),
                ("device_allocs", array(&r.device_allocs)),
                ("device_frees", array(&r.device_frees)),
                ("served_from_plan", r.from_plan.iter().sum::<u64>().to_string()),
                ("served_from_plan_per_iteration", array(&r.from_plan)),
                ("plan_departures", r.plan_departures.to_string()),
                ("time_ms", ms(r.time())),
                (
                    "iteration_ms",
                    format!("[{}]", r.iteration_times.iter().map(|&t| ms(t)).collect::<Vec<_>>().join(", ")),
                ),
            ];
            let body: Vec<String> = fields.iter().map(|(k, v)| format!("    \"{k}\": {v}")).collect();
            format!("  {{\n{}\n  }}", body.join(",\n"))
        })
        .collect();
    format!("[\n{}\n]\n", objects.join(",\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, lower: i64, upper: i64, size: u64) -> Row {
        Row { id: id.into(), lower, upper, size, offset: None, line: 0 }
    }

    #[test]
    fn frees_come_before_allocations_at_the_same_step() {
        let rows = [row("a", 0, 2, 8), row("b", 2, 3, 8), row("c", 0, 3, 8), row("z", 1, 2, 0)];
        let e = events(&rows);
        use Event::*;
        assert_eq!(e, [Alloc(0), Alloc(2), Free(0), Alloc(1), Free(1), Free(2)]);
        assert_eq!(lower_bound(&rows).unwrap(), 16);
    }

    #[test]
    fn the_virtual_device_counts_and_aligns_without_memory() {
        let d = Counting::new(ReplayDevice::Virtual);
        let p = d.alloc(100, 256, Stream::DEFAULT).unwrap();
        let q = d.alloc(10, 4096, Stream::DEFAULT).unwrap();
        assert_eq!((p.addr() % 256, q.addr() % 4096), (0, 0));
        assert!(q.addr() >= p.addr() + 100);
        d.free(p, 100, Stream::DEFAULT);
        let c = d.counts();
        assert_eq!((c.allocs, c.frees, c.live_bytes, c.peak_bytes, c.overall_peak_bytes), (2, 1, 10, 110, 110));
        d.start_period();
        assert_eq!(d.counts().peak_bytes, 10);
        assert!(!d.host_accessible());
        assert!(d.alloc(u64::MAX, 1, Stream::DEFAULT).is_err());
    }
}
