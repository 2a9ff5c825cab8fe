/*
 * nnmem/compat/openvino/memory_solver.hpp: OpenVINO's `ov::MemorySolver`
 * (openvino/runtime/memory_solver.hpp, OpenVINO's developer API, used by
 * its CPU plugin and by plugins built on it) with nnmem's planner
 * underneath. A plugin swaps
 *
 *     #include "openvino/runtime/memory_solver.hpp"
 * for
 *     #include <nnmem/compat/openvino/memory_solver.hpp>
 *
 * links nnmem (CMake `nnmem::nnmem`; `pkg-config --cflags --libs nnmem`)
 * and keeps its code: the class has OpenVINO's name, members, signatures
 * and types, and answers as OpenVINO's does, except that `solve()` is never
 * larger and often smaller. Header-only, C++11 to C++20. The two headers
 * must not both be included in one program (both define ov::MemorySolver).
 *
 * Interface (OpenVINO's, all public members):
 *   struct Box { int start; int finish; int64_t size; int64_t id; };
 *   static int normalize_boxes(std::vector<Box>& boxes);
 *   explicit MemorySolver(const std::vector<Box>& boxes);
 *   bool popup_together_with(Box& box_new, const Box& box_old);
 *   int64_t solve();
 *   int64_t get_offset(int id) const;
 *   int64_t max_depth();
 *   int64_t max_top_depth();
 *
 * Semantics, as OpenVINO's:
 * - A box is live from `start` to `finish`, both inclusive (two boxes that
 *   meet at one step overlap); `finish` -1 means "to the end": the highest
 *   start or finish of any box (at least 0).
 * - The constructor normalises the boxes as OpenVINO does
 *   (`normalize_boxes`): sorted by (start, finish), and the timestamps at
 *   which no box starts removed, so that every step starts a box; the
 *   returned lifespan is the number of steps left.
 * - Sizes are in the caller's unit (bytes, cache lines, ...): nnmem plans
 *   with alignment 1, so no size is rounded.
 * - `solve()` returns the blob size: the highest offset + size over all
 *   boxes. `get_offset(id)` gives a box's offset; for an id no box has (or
 *   before `solve()`) it throws ov::Exception "There are no box for
 *   provided ID". Where several boxes share an id, the one OpenVINO's
 *   greedy places last gives the offset, as in OpenVINO.
 * - `max_depth()`: the largest sum of sizes live at one step;
 *   `max_top_depth()`: the largest number of boxes live at one step; both
 *   -1 without boxes; computed by OpenVINO's sweep, so input with a finish
 *   before its start gives OpenVINO's figures, and OpenVINO's
 *   ov::AssertFailure where its sweep's check fails (a box normalised to
 *   end the step before it starts, with no other box live at that point
 *   of the sweep); after such a failure both throw again on every call
 *   (OpenVINO's answer from the part of the sweep it did before).
 * - A box whose finish is before its start (not -1) is live at no step:
 *   offset 0, and `solve()` is at least its size, as in OpenVINO. (Where
 *   such boxes make OpenVINO's solve() index its time slots past their
 *   end, the other boxes are planned over the steps they state.)
 *
 * What nnmem adds: `solve()` computes OpenVINO's own greedy plan (boxes by
 * size descending, in the order OpenVINO's std::sort gives them with the
 * same standard library, each at the lowest offset where it overlaps no
 * box placed before it) and nnmem's, and keeps nnmem's only where it is
 * strictly smaller. nnmem's plan costs about what the greedy costs: under
 * 500 live boxes NNM_ALGORITHM_AUTO (heuristics, then an exact search from
 * the best of them) under a work limit of 1 M units (a few ms), from 500
 * on NNM_ALGORITHM_LIVE_STEP alone (one first-fit pass). Define
 * NNM_COMPAT_OPENVINO_WORK_LIMIT to a number of work units for the longer
 * search: NNM_ALGORITHM_AUTO under that limit at any box count
 * (NNM_DEFAULT_WORK_LIMIT: the planner's default, 1 to 2 s; 0: no limit),
 * e.g. `-DNNM_COMPAT_OPENVINO_WORK_LIMIT=NNM_DEFAULT_WORK_LIMIT`. Work is
 * counted, never timed, so the same boxes give the same offsets on any
 * machine. So the result is never larger than OpenVINO's by construction,
 * and where nnmem finds nothing smaller the offsets are OpenVINO's own,
 * byte for byte (README.md has the figures of OpenVINO's tests).
 *
 * What differs:
 * - Refused (ov::Exception from the constructor and `normalize_boxes`):
 *   a negative start (OpenVINO writes out of bounds) and a negative size
 *   (OpenVINO plans it, into overlapping offsets; nnmem's sizes are
 *   unsigned). OpenVINO's own header lists both as invalid input.
 * - Where a blob size or a depth passes INT64_MAX, OpenVINO overflows; here
 *   `solve()` (or `max_depth()`) throws ov::Exception. Where nnmem refuses
 *   the boxes (NNM_OVERFLOW: their sizes summed pass 2^64 - 1), `solve()`
 *   keeps OpenVINO's greedy plan.
 * - `solve()` may be called again and returns the same blob size and keeps
 *   the offsets (OpenVINO's second call reads the first call's offsets as
 *   box ids). `get_offset` needs `solve()` first, as in OpenVINO.
 * - Cost: OpenVINO's greedy (O(n^2 log n) here, for n boxes) plus nnmem's
 *   plan (above), which by default takes at most about as long (the
 *   figures: BENCHMARKS.md, "The compat classes beside their originals"). The solver keeps about 100 B
 *   per box (the boxes, their ids and the offset map, as OpenVINO's keeps
 *   its boxes and map) and uses about as much again while solving, besides
 *   nnmem's planner.
 * - Errors from nnmem: NNM_OUT_OF_MEMORY is thrown as std::bad_alloc; any
 *   other failure (none is expected for valid boxes) as ov::Exception
 *   naming nnmem's status and message.
 *
 * Exceptions: where OpenVINO's `openvino/core/except.hpp` is on the include
 * path (any OpenVINO plugin build), this header includes it and throws
 * OpenVINO's own types through OPENVINO_THROW and OPENVINO_ASSERT:
 * ov::Exception (from std::runtime_error) and ov::AssertFailure (from
 * ov::Exception), so a plugin's `catch (const ov::Exception&)` and
 * `catch (const std::runtime_error&)` see them as before. Without OpenVINO,
 * it defines ov::Exception and ov::AssertFailure itself, with the same
 * bases. Define NNM_COMPAT_OPENVINO_EXCEPT to 1 (OpenVINO's) or 0 (this
 * header's) to choose instead of the include-path test (compilers without
 * __has_include take 0).
 */
#ifndef NNM_COMPAT_OPENVINO_MEMORY_SOLVER_HPP
#define NNM_COMPAT_OPENVINO_MEMORY_SOLVER_HPP

#include <stddef.h>
#include <stdint.h>

#include <algorithm>
#include <limits>
#include <map>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nnmem.h>

#ifndef NNM_COMPAT_OPENVINO_EXCEPT
#if defined(__has_include)
#if __has_include("openvino/core/except.hpp")
#define NNM_COMPAT_OPENVINO_EXCEPT 1
#endif
#endif
#endif
#ifndef NNM_COMPAT_OPENVINO_EXCEPT
#define NNM_COMPAT_OPENVINO_EXCEPT 0
#endif

/* NNM_COMPAT_OPENVINO_WORK_LIMIT: left undefined, solve() costs about what
 * OpenVINO's greedy costs (see nnm_compat_openvino::planner_settings);
 * defined to a number of work units, every solve() runs NNM_ALGORITHM_AUTO
 * under that limit, the longer search (NNM_DEFAULT_WORK_LIMIT: the
 * planner's default; 0: no limit). */

#if NNM_COMPAT_OPENVINO_EXCEPT
#include "openvino/core/except.hpp"
#elif !defined(NNM_COMPAT_OPENVINO_EXCEPTION_DEFINED)
#define NNM_COMPAT_OPENVINO_EXCEPTION_DEFINED
namespace ov {
/* OpenVINO's base error, for builds without OpenVINO's headers. */
class Exception : public std::runtime_error {
public:
    explicit Exception(const std::string& what_arg) : std::runtime_error(what_arg) {}
};
/* OpenVINO's failed-check error (OPENVINO_ASSERT). */
class AssertFailure : public Exception {
public:
    explicit AssertFailure(const std::string& what_arg) : Exception(what_arg) {}
};
}  // namespace ov
#endif

namespace nnm_compat_openvino {

[[noreturn]] inline void throw_exception(const std::string& message) {
#if NNM_COMPAT_OPENVINO_EXCEPT
    OPENVINO_THROW(message);
#else
    throw ov::Exception(message);
#endif
}

/* OpenVINO's sweep asserts its live count stays positive (the parameter's
 * name is in OPENVINO_ASSERT's message, as in OpenVINO's). */
inline void check_live_count(int64_t top_depth) {
#if NNM_COMPAT_OPENVINO_EXCEPT
    OPENVINO_ASSERT(top_depth > 0);
#else
    if (!(top_depth > 0))
        throw ov::AssertFailure("Check 'top_depth > 0' failed");
#endif
}

/* a + b, or false where it passes INT64_MAX (both non-negative). */
inline bool add_fits(int64_t a, int64_t b, int64_t* out) {
    if (a > std::numeric_limits<int64_t>::max() - b)
        return false;
    *out = a + b;
    return true;
}

/* What solve() asks of nnmem's planner, by default (see
 * NNM_COMPAT_OPENVINO_WORK_LIMIT): OpenVINO's greedy compares every pair
 * of boxes, so nnmem may cost about as much. Below kSearchBelow live boxes
 * that buys AUTO (its heuristics and a search) under kSmallWorkLimit work
 * units, a few ms; from there on AUTO's heuristics alone cost more than
 * the greedy on dense boxes, so live-step runs alone: one first-fit pass,
 * the heuristic that after floor-first most often wins AUTO's first stage
 * (and floor-first's re-queueing can cost more than the greedy).
 * BENCHMARKS.md has the figures. */
static const size_t kSearchBelow = 500;
static const uint64_t kSmallWorkLimit = 1000000;

/* The algorithm and work limit solve() gives nnmem's planner for `boxes`
 * live boxes. */
inline void planner_settings(size_t boxes, uint32_t* algorithm, uint64_t* work_limit) {
#ifdef NNM_COMPAT_OPENVINO_WORK_LIMIT
    (void)boxes;
    *algorithm = NNM_ALGORITHM_AUTO;
    *work_limit = static_cast<uint64_t>(NNM_COMPAT_OPENVINO_WORK_LIMIT);
#else
    const bool search = boxes < kSearchBelow;
    *algorithm = search ? static_cast<uint32_t>(NNM_ALGORITHM_AUTO) : static_cast<uint32_t>(NNM_ALGORITHM_LIVE_STEP);
    // Live-step reads no work limit.
    *work_limit = search ? kSmallWorkLimit : NNM_DEFAULT_WORK_LIMIT;
#endif
}

/* Frees the planner on every path out of solve(). */
class Planner {
public:
    Planner() : handle_(nullptr) {}
    ~Planner() { nnm_planner_free(handle_); }
    nnm_planner** out() { return &handle_; }
    nnm_planner* get() const { return handle_; }

private:
    Planner(const Planner&) = delete;
    Planner& operator=(const Planner&) = delete;
    nnm_planner* handle_;
};

/* Throws what OpenVINO would for nnmem's failure `status`. */
[[noreturn]] inline void throw_status(nnm_status status, const char* call) {
    if (status == NNM_OUT_OF_MEMORY)
        throw std::bad_alloc();
    throw_exception(std::string("nnmem: ") + call + " failed: " + nnm_status_str(status) + ": " + nnm_last_error());
}

}  // namespace nnm_compat_openvino

namespace ov {

/**
 * Places boxes (a size live over a range of execution steps) in one blob so
 * that boxes live at a common step never share an offset; OpenVINO's class
 * with nnmem's planner underneath (see the file's comment).
 */
class MemorySolver {
public:
    /** A buffer: its size and the steps it is live (OpenVINO's layout). */
    struct Box {
        /** First step it is live (produced). */
        int start;
        /** Last step it is live, inclusive; -1: to the end. */
        int finish;
        /** Size, in the caller's unit. */
        int64_t size;
        /** Identifier for get_offset. */
        int64_t id;
    };

    /**
     * OpenVINO's normalisation, in place: finish -1 becomes the highest
     * timestamp, the boxes are sorted by (start, finish), and timestamps at
     * which no box starts are removed. Returns the number of steps left.
     * Throws ov::Exception for a negative start or size.
     */
    static int normalize_boxes(std::vector<Box>& boxes) {
        check_boxes(boxes);
        int64_t max_ts = 0;
        for (size_t i = 0; i < boxes.size(); ++i)
            max_ts = std::max(max_ts, static_cast<int64_t>(std::max(boxes[i].start, boxes[i].finish)));
        for (size_t i = 0; i < boxes.size(); ++i)
            if (boxes[i].finish == -1)
                boxes[i].finish = static_cast<int>(max_ts);
        // The same comparisons as OpenVINO's std::sort call, so equal boxes
        // end in the same order with the same standard library.
        std::sort(boxes.begin(), boxes.end(), start_then_finish);

        std::vector<int> starts;
        for (size_t i = 0; i < boxes.size(); ++i)
            if (starts.empty() || starts.back() != boxes[i].start)
                starts.push_back(boxes[i].start);
        // OpenVINO removes a finish's timestamps with a cursor that only
        // moves forward unless it is past the finish; a finish before its
        // start (a box live at no step) depends on it, so it is kept.
        int64_t cursor = 0;
        for (size_t i = 0; i < boxes.size(); ++i) {
            Box& b = boxes[i];
            const int64_t finish = b.finish;
            if (cursor > finish + 1)
                cursor = b.start;
            cursor = std::max(cursor, finish + 1);
            b.start = static_cast<int>(b.start - absent_before(starts, b.start));
            const int64_t new_finish = finish - absent_before(starts, cursor);
            if (new_finish < std::numeric_limits<int>::min())
                nnm_compat_openvino::throw_exception("MemorySolver: box finish " + std::to_string(finish) +
                                                     " is too far before its start");
            b.finish = static_cast<int>(new_finish);
        }
        return static_cast<int>(cursor - absent_before(starts, cursor));
    }

    /** Takes the boxes and normalises them. Throws ov::Exception for a negative start or size. */
    explicit MemorySolver(const std::vector<Box>& boxes)
        : _boxes(boxes),
          _ids(boxes.size()),
          _total(-1),
          _top_depth(-1),
          _depth(-1) {
        // The boxes keep their index in `boxes` as id (no comparison reads
        // it); the ids themselves wait in _ids.
        for (size_t i = 0; i < _boxes.size(); ++i) {
            _ids[i] = _boxes[i].id;
            _boxes[i].id = static_cast<int64_t>(i);
        }
        normalize_boxes(_boxes);
    }

    /**
     * OpenVINO's step of its greedy, with `id` holding offsets: where the
     * two boxes' ranges [id, id + size) intersect, moves box_new to the top
     * of box_old and returns true.
     */
    inline bool popup_together_with(MemorySolver::Box& box_new, const MemorySolver::Box& box_old) {
        if (box_new.id + box_new.size > box_old.id && box_old.id + box_old.size > box_new.id) {
            box_new.id = box_old.id + box_old.size;
            return true;
        }
        return false;
    }

    /**
     * Plans the boxes: the blob size needed, never more than OpenVINO's
     * greedy gives. Computed once; later calls return the same. Throws as
     * max_top_depth() does, ov::Exception where the blob size passes
     * INT64_MAX, std::bad_alloc when memory runs out.
     */
    int64_t solve() {
        max_top_depth();
        if (_total >= 0)
            return _total;
        std::vector<size_t> order;
        std::vector<int64_t> greedy;
        int64_t greedy_total = -1;
        openvino_greedy(order, greedy, greedy_total);
        std::vector<int64_t> planned;
        int64_t planned_total = -1;
        nnmem_plan(planned, planned_total);

        const bool take_nnmem = planned_total >= 0 && (greedy_total < 0 || planned_total < greedy_total);
        if (!take_nnmem && greedy_total < 0)
            nnm_compat_openvino::throw_exception("MemorySolver: the blob size passes INT64_MAX");
        const std::vector<int64_t>& offsets = take_nnmem ? planned : greedy;
        // Written in OpenVINO's placement order: of boxes sharing an id, the
        // last placed gives its offset.
        for (size_t k = 0; k < order.size(); ++k) {
            const size_t input = static_cast<size_t>(_boxes[order[k]].id);
            _offsets[_ids[input]] = offsets[order[k]];
        }
        _total = take_nnmem ? planned_total : greedy_total;
        return _total;
    }

    /** The offset of the box with this id; ov::Exception for an unknown id or before solve(). */
    int64_t get_offset(int id) const {
        std::map<int64_t, int64_t>::const_iterator found = _offsets.find(id);
        if (found == _offsets.end())
            nnm_compat_openvino::throw_exception("There are no box for provided ID");
        return found->second;
    }

    /** The largest sum of sizes live at one step (-1 without boxes). */
    int64_t max_depth() {
        if (_depth == -1)
            calc_depth();
        return _depth;
    }

    /** The largest number of boxes live at one step (-1 without boxes). */
    int64_t max_top_depth() {
        if (_top_depth == -1)
            calc_depth();
        return _top_depth;
    }

private:
    /* Normalised boxes; `id` is the box's index in the constructor's vector. */
    std::vector<Box> _boxes;
    /* The caller's ids, by that index. */
    std::vector<int64_t> _ids;
    std::map<int64_t, int64_t> _offsets;
    int64_t _total;
    int64_t _top_depth;
    int64_t _depth;

    static bool start_then_finish(const Box& l, const Box& r) {
        return l.start < r.start || (l.start == r.start && l.finish < r.finish);
    }

    static bool larger_first(const Box& l, const Box& r) { return l.size > r.size; }

    static void check_boxes(const std::vector<Box>& boxes) {
        for (size_t i = 0; i < boxes.size(); ++i) {
            if (boxes[i].start < 0)
                nnm_compat_openvino::throw_exception("MemorySolver: box " + std::to_string(i) + " starts at " +
                                                     std::to_string(boxes[i].start) + ": steps start at 0");
            if (boxes[i].size < 0)
                nnm_compat_openvino::throw_exception("MemorySolver: box " + std::to_string(i) + " has size " +
                                                     std::to_string(boxes[i].size) + ": sizes are not negative");
        }
    }

    /* Timestamps in [0, t) at which no box starts (`starts`: distinct, ascending). */
    static int64_t absent_before(const std::vector<int>& starts, int64_t t) {
        const int64_t present = std::lower_bound(starts.begin(), starts.end(), t,
                                                 [](int s, int64_t v) { return static_cast<int64_t>(s) < v; }) -
                                starts.begin();
        return t - present;
    }

    static bool live(const Box& b) { return b.start <= b.finish; }

    static bool share_a_step(const Box& a, const Box& b) { return a.start <= b.finish && b.start <= a.finish; }

    /*
     * OpenVINO's sweep over the boxes in start order: a box adds its size
     * when it starts; the boxes that ended before a step leave at the first
     * box starting at that step. The maxima are kept only once the sweep
     * is through: after a failed check both stay unknown, so every later
     * max_depth() or max_top_depth() throws the same (OpenVINO's keeps the
     * part of the sweep done before the check, and answers from it).
     */
    void calc_depth() {
        int64_t top_depth = 0;
        int64_t depth = 0;
        int64_t top_max = -1;
        int64_t depth_max = -1;
        std::map<int64_t, std::vector<size_t> > release_at;
        for (size_t i = 0; i < _boxes.size(); ++i) {
            const Box& box = _boxes[i];
            ++top_depth;
            release_at[static_cast<int64_t>(box.finish) + 1].push_back(i);
            // OpenVINO adds the box before it releases the others; summed in
            // the other order, a depth that fits never overflows on the way.
            bool released_itself = false;
            std::map<int64_t, std::vector<size_t> >::iterator now = release_at.find(box.start);
            if (now != release_at.end()) {
                for (size_t k = 0; k < now->second.size(); ++k) {
                    if (now->second[k] == i)
                        released_itself = true;
                    else
                        depth -= _boxes[now->second[k]].size;
                    --top_depth;
                }
                release_at.erase(now);
            }
            if (!released_itself && !nnm_compat_openvino::add_fits(depth, box.size, &depth))
                nnm_compat_openvino::throw_exception("MemorySolver: the depth passes INT64_MAX");
            nnm_compat_openvino::check_live_count(top_depth);
            top_max = std::max(top_max, top_depth);
            depth_max = std::max(depth_max, depth);
        }
        _top_depth = top_max;
        _depth = depth_max;
    }

    /*
     * OpenVINO's plan: boxes by size descending (the same std::sort call on
     * the same sequence), each at the lowest offset where it overlaps no
     * box placed before it that shares a step; a box live at no step at 0.
     * `order`: positions in _boxes in placement order; `offsets` by
     * position; `total` -1 where it passes INT64_MAX.
     */
    void openvino_greedy(std::vector<size_t>& order, std::vector<int64_t>& offsets, int64_t& total) const {
        std::vector<Box> by_size(_boxes);
        for (size_t i = 0; i < by_size.size(); ++i)
            by_size[i].id = static_cast<int64_t>(i);
        std::sort(by_size.begin(), by_size.end(), larger_first);

        order.resize(by_size.size());
        offsets.assign(_boxes.size(), 0);
        total = 0;
        // The boxes placed so far, copied in placement order with `id`
        // holding the offset: the scan over them is the greedy's whole
        // cost, and reading them in order is several times faster than
        // reaching into _boxes.
        std::vector<Box> placed;
        placed.reserve(_boxes.size());
        std::vector<std::pair<int64_t, int64_t> > taken;
        for (size_t k = 0; k < by_size.size(); ++k) {
            const size_t pos = static_cast<size_t>(by_size[k].id);
            const Box& box = _boxes[pos];
            order[k] = pos;
            int64_t offset = 0;
            if (live(box)) {
                taken.clear();
                for (size_t p = 0; p < placed.size(); ++p) {
                    const Box& other = placed[p];
                    if (share_a_step(box, other))
                        taken.push_back(std::make_pair(other.id, other.id + other.size));
                }
                std::sort(taken.begin(), taken.end());
                // Moving above every range that intersects [offset, offset
                // + size) skips only offsets that intersect it too: the
                // lowest fit, where OpenVINO's repeated lifting stops.
                for (size_t t = 0; t < taken.size(); ++t) {
                    int64_t end = 0;
                    if (!nnm_compat_openvino::add_fits(offset, box.size, &end)) {
                        total = -1;
                        return;
                    }
                    if (taken[t].first >= end)
                        break;
                    if (taken[t].second > offset)
                        offset = taken[t].second;
                }
                placed.push_back(box);
                placed.back().id = offset;
            }
            int64_t top = 0;
            if (!nnm_compat_openvino::add_fits(offset, box.size, &top)) {
                total = -1;
                return;
            }
            offsets[pos] = offset;
            total = std::max(total, top);
        }
    }

    /*
     * nnmem's plan of the live boxes (AUTO, alignment 1, the default work
     * limit); boxes live at no step at 0. `total` -1 where nnmem refuses
     * the sizes (NNM_OVERFLOW) or the blob passes INT64_MAX.
     */
    void nnmem_plan(std::vector<int64_t>& offsets, int64_t& total) const {
        offsets.assign(_boxes.size(), 0);
        total = -1;
        nnm_compat_openvino::Planner planner;
        nnm_status status = nnm_planner_new(planner.out());
        if (status != NNM_OK)
            nnm_compat_openvino::throw_status(status, "nnm_planner_new");
        size_t live_boxes = 0;
        for (size_t i = 0; i < _boxes.size(); ++i)
            live_boxes += live(_boxes[i]) ? 1 : 0;
        uint32_t algorithm = NNM_ALGORITHM_AUTO;
        uint64_t work_limit = NNM_DEFAULT_WORK_LIMIT;
        nnm_compat_openvino::planner_settings(live_boxes, &algorithm, &work_limit);
        status = nnm_planner_set_algorithm(planner.get(), algorithm);
        if (status != NNM_OK)
            nnm_compat_openvino::throw_status(status, "nnm_planner_set_algorithm");
        status = nnm_planner_set_work_limit(planner.get(), work_limit);
        if (status != NNM_OK)
            nnm_compat_openvino::throw_status(status, "nnm_planner_set_work_limit");
        std::vector<size_t> added;
        for (size_t i = 0; i < _boxes.size(); ++i) {
            const Box& box = _boxes[i];
            if (!live(box))
                continue;
            status = nnm_planner_add_buffer(planner.get(), static_cast<uint64_t>(box.size), box.start, box.finish,
                                            nullptr);
            if (status == NNM_OVERFLOW)
                return;
            if (status != NNM_OK)
                nnm_compat_openvino::throw_status(status, "nnm_planner_add_buffer");
            added.push_back(i);
        }
        status = nnm_planner_plan(planner.get());
        if (status != NNM_OK)
            nnm_compat_openvino::throw_status(status, "nnm_planner_plan");
        std::vector<uint64_t> placed(added.size());
        status = nnm_planner_get_offsets(planner.get(), placed.empty() ? nullptr : &placed[0], placed.size());
        if (status != NNM_OK)
            nnm_compat_openvino::throw_status(status, "nnm_planner_get_offsets");

        int64_t top_all = 0;
        for (size_t k = 0; k < added.size(); ++k) {
            if (placed[k] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                return;
            offsets[added[k]] = static_cast<int64_t>(placed[k]);
        }
        // The blob as OpenVINO measures it: the highest offset + size of
        // any box, those live at no step included.
        for (size_t i = 0; i < _boxes.size(); ++i) {
            int64_t top = 0;
            if (!nnm_compat_openvino::add_fits(offsets[i], _boxes[i].size, &top))
                return;
            top_all = std::max(top_all, top);
        }
        total = top_all;
    }
};

}  // namespace ov

#endif /* NNM_COMPAT_OPENVINO_MEMORY_SOLVER_HPP */
