//! The heap a planner uses per buffer, as `nnm_planner_add_buffer`'s doc
//! states it: at most 80 B per buffer held while collecting, 16 B more per
//! buffer once planned with `tflm`, and at most 280 B per buffer more while
//! `tflm` plans. Measured with a counting global allocator that counts the
//! test's own thread only: the test harness's threads allocate at times of
//! their own (a "running for over 60 seconds" note on a loaded machine).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use nnmem::plan::{Algorithm, Lifetime, Planner};

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    // Const-initialised, so reading it never allocates (no recursion).
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

fn counted() -> bool {
    COUNTED.try_with(Cell::get).unwrap_or(false)
}

// SAFETY: every call is passed on to the system allocator unchanged; the
// counters only observe the sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's promises are `System.alloc`'s.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() && counted() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
            PEAK.fetch_max(now, Ordering::SeqCst);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's promises are `System.dealloc`'s.
        unsafe { System.dealloc(ptr, layout) };
        if counted() {
            CURRENT.fetch_sub(layout.size(), Ordering::SeqCst);
        }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn held() -> usize {
    CURRENT.load(Ordering::SeqCst)
}

/// Bytes allocated at most while `f` runs, above what was held before.
fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = held();
    PEAK.store(before, Ordering::SeqCst);
    let out = f();
    (out, PEAK.load(Ordering::SeqCst) - before)
}

/// Deterministic buffers of a TFLite-Micro-like model: chains of short
/// lifetimes, some read but never produced (-1, k), some never used, a few
/// fixed.
fn add_model(p: &mut Planner, n: usize) {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let step = (i / 3) as i64;
        let lifetime = match x % 17 {
            0 => Lifetime::inclusive(-1, -1),
            1 => Lifetime::inclusive(-1, step),
            _ => Lifetime::inclusive(step, step + (x % 5) as i64),
        }
        .unwrap();
        let fixed = (x % 29 == 0).then_some((x >> 8) % 4096 * 16);
        p.add_buffer(16 + (x >> 20) % 4096, lifetime, fixed).unwrap();
    }
}

#[test]
fn a_planner_uses_the_heap_its_documentation_states() {
    // The planner (tflm) plans on this thread; nothing it allocates here is
    // freed on another.
    COUNTED.with(|c| c.set(true));
    for n in [1000usize, 5000, 20_000] {
        let base = held();
        let mut p = Planner::new();
        p.set_algorithm(Algorithm::Tflm);
        p.set_trust_fixed(true);
        add_model(&mut p, n);
        let collecting = held() - base;
        let (planned, planning) = peak_during(|| p.plan().map(|o| o.peak));
        planned.unwrap();
        let with_plan = held() - base;
        // Adding after the plan keeps its offsets for the re-plan; planning
        // again holds the new plan only.
        p.add_buffer(1, Lifetime::inclusive(0, 0).unwrap(), None).unwrap();
        let (_, replanning) = peak_during(|| p.plan().map(|o| o.peak).unwrap());
        let after_replan = held() - base;
        assert!(collecting <= 80 * n, "{collecting} B for {n} buffers");
        assert!(with_plan <= collecting + 16 * n, "{with_plan} B for {n} planned buffers");
        assert!(planning <= 280 * n, "{planning} B while planning {n} buffers");
        assert!(replanning <= 280 * (n + 1), "{replanning} B while re-planning {n} buffers");
        assert!(after_replan <= 96 * (n + 1), "{after_replan} B after re-planning");
        drop(p);
        assert_eq!(held(), base, "a dropped planner holds nothing");
        // Printed last: the test harness keeps what is printed.
        eprintln!(
            "{n} buffers: {:.1} B/buffer collecting, {:.1} planned, {:.1} while planning, {:.1} while re-planning, \
             {:.1} after",
            collecting as f64 / n as f64,
            with_plan as f64 / n as f64,
            planning as f64 / n as f64,
            replanning as f64 / n as f64,
            after_replan as f64 / n as f64,
        );
    }
}
