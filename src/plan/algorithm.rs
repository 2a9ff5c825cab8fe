//! The planning algorithms' names and values: the one enum of them, kept
//! apart from their implementations (`algo`) so the embedded build, which
//! runs only the heap-free ones, names them the same way.

use crate::names::c_enum;

/// The planning algorithms, selectable by value (C: `nnm_algorithm`) or by
/// name (C: `nnm_algorithm_from_name`).
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// Runs the heuristics, keeps the smallest peak, and stops as soon as a
    /// plan reaches the lower bound; otherwise searches (EXACT) from the
    /// best for the rest of the work budget. The default.
    /// At any work limit (1 included) its plan is never larger than
    /// SIZE_FIRST_FIT's, OpenVINO's `MemorySolver`'s or TFLM's: the work
    /// limit skips the other heuristics, never those. SIZE_FIRST_FIT
    /// (O(n log n)) always runs, in its own tie order (TFLM's, later-added
    /// first) and in OpenVINO's (earlier first use first, then earlier
    /// last use); TFLM (O(n^2), seconds at 60,000 buffers) runs only where
    /// its plan can differ from SIZE_FIRST_FIT's, when a zero-size buffer
    /// has a fixed offset. One
    /// tolerance: a plan within 10 parts per billion of the lower bound
    /// ends the heuristics, so above a 100 MB bound the plan may be that
    /// close to the bound yet a few bytes over one that meets it. A time
    /// limit or cancellation that stops AUTO after its first heuristic
    /// returns that plan.
    Auto = 0,
    /// Byte-identical to TensorFlow Lite Micro's `GreedyMemoryPlanner`:
    /// fixed buffers first, then by size descending (later-added first on
    /// ties), each at the lowest gap that fits. O(n^2), like the original.
    /// Fixed buffers may overlap each other: TFLM trusts an offline plan.
    /// Buffers never used (first and last use -1) live at step -1, as
    /// TFLM plans them; the peak counts zero-size buffers, as TFLM's arena
    /// size does.
    Tflm = 1,
    /// No reuse: buffers stacked in order of addition, like TFLite Micro's
    /// `LinearMemoryPlanner`.
    Linear = 2,
    /// Size descending, lowest offset that fits (greedy by size). Where
    /// buffers meet few others (pairs of buffers live together at most 64
    /// times the buffers, as in runtimes' graphs), each looks only at those
    /// it meets: O(P log d) for P such pairs and d a buffer.
    SizeFirstFit = 3,
    /// Size descending, the free gap with the least slack.
    SizeBestFit = 4,
    /// Longest lifetime first, lowest offset that fits.
    LifetimeFirstFit = 5,
    /// Glow's order: repeatedly the largest unplaced buffer live at the step
    /// with the most unplaced bytes live; lowest offset that fits.
    LiveStep = 6,
    /// Most conflicting bytes first (the sum of the sizes of the buffers it
    /// shares a step with), lowest offset that fits.
    Conflict = 7,
    /// Branch and bound from the best heuristic plan: the smallest peak, or
    /// with a capacity the first plan that fits it. Anytime: stops at the
    /// work budget, node limit, time limit or cancellation with the best
    /// plan so far.
    Exact = 8,
    /// The unplaced buffer with the lowest floor (the offset just above
    /// every placed buffer it is live with) goes there, ties to the one
    /// in the fullest section (MiniMalloc's order): the exact search's
    /// first dive, without backtracking. O(n log n) plus re-queueing.
    FloorFirst = 9,
    /// Glow's "preserve allocation order": buffers in order of their first
    /// step (then of addition), each at the lowest offset that fits, as a
    /// first-fit allocator running the program would place them. The
    /// regions' sequential planner. Placed as SIZE_FIRST_FIT places its
    /// order: O(P log d) where buffers meet few others, else
    /// O(n log n · log m).
    Sequential = 10,
}

c_enum! {
    Algorithm, "algorithm",
    value_error(value) => format!("unknown algorithm value {value} (0 to {})", Algorithm::ALL.len() - 1),
    {
        Auto = "auto",
        Tflm = "tflm",
        Linear = "linear",
        SizeFirstFit = "size-first-fit",
        SizeBestFit = "size-best-fit",
        LifetimeFirstFit = "lifetime-first-fit",
        LiveStep = "live-step",
        Conflict = "conflict",
        Exact = "exact",
        FloorFirst = "floor-first",
        Sequential = "sequential",
    }
}
