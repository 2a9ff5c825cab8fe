/*
 * glow::MemoryAllocator over nnmem: Glow's address allocator
 * (include/glow/CodeGen/MemoryAllocator.h of pytorch/glow) with the same
 * names, signatures and semantics, header-only C++11 over <nnmem.h>.
 *
 * A Glow backend swaps
 *     #include "glow/CodeGen/MemoryAllocator.h"
 * for
 *     #include <nnmem/compat/glow/MemoryAllocator.h>
 * and links nnmem (CMake: nnmem::nnmem; pkg-config: nnmem). Its code stays
 * as it is.
 *
 * What it does as Glow does:
 * - allocate(size, handle): first fit over the live segments in address
 *   order, each size rounded up to the alignment (a size of 0 takes one
 *   alignment unit, so that the handle gets an address of its own); npos
 *   when the segment would end past a non-zero memory size.
 * - allocate(size, handle, mustNotEvict, evicted): Glow's first-fit
 *   eviction, then allocate again.
 * - allocateAll(allocList, reuseMemory): validates the ALLOC/FREE list,
 *   rounds every size up to the alignment (0 stays 0 and sits at address
 *   0), and places every buffer for the whole list at once; segments keep
 *   the requested (unrounded) size. It returns getMaxMemoryUsage(): with
 *   reuseMemory the largest plan so far, without it the sum of the plans,
 *   each later function's segments placed above the earlier ones. npos when
 *   the largest total live at one step, or every plan found, passes the
 *   memory left; the allocator is then unchanged.
 * - getMaxMemoryUsage() is the highest segment end reached (rounded sizes);
 *   getAllocationEfficiency() is the largest total live at once over it.
 *
 * What differs:
 * - allocateAll plans with nnmem's planner (NNM_ALGORITHM_AUTO under a work
 *   limit, never a time limit, so the plan is the same on every machine)
 *   and with Glow's own three orders (largest buffer of the fullest step;
 *   longest-lived buffer of the fullest step; list order), and keeps the
 *   smallest: it is never larger than Glow's own allocateAll. On a tie it
 *   keeps Glow's placement, so where nnmem saves nothing every address is
 *   the one Glow gives. Glow stops with npos when its first order does not
 *   fit a memory size; this one tries the others and nnmem's plan first.
 * - Where Glow asserts (debug) or reads freed memory (release), this class
 *   does something defined and says so: allocateAll with an invalid list
 *   (odd length, a FREE before its ALLOC or without one, a handle
 *   allocated twice) returns npos and changes nothing; deallocate of an
 *   unknown handle does nothing; getSegment of an unknown handle gives the
 *   segment {npos, npos} (so getAddress is npos and getSize 0); getHandle
 *   of an address with no handle gives nullptr. An alignment of 0 (Glow
 *   divides by it) makes allocate and a non-empty allocateAll return npos.
 *   Sizes whose rounding, or whose sum over one allocateAll, passes
 *   2^64 - 1 (Glow's arithmetic wraps) make them return npos too.
 * - After allocateAll, several handles may start at one address; getHandle
 *   of it gives the one whose ALLOC came last in the list (Glow's pick
 *   depends on its hash map's order).
 * - Mixing allocate and allocateAll on one allocator (Glow's header says
 *   not to): segments from allocateAll stay allocated until deallocated,
 *   allocate places around all of them, and the live size never goes below
 *   0 (Glow's wraps around).
 * - Glow's header also brings in glow/Support/Memory.h (TensorAlignment,
 *   alignedSize, ...); this one does not.
 *
 * Costs: allocate and deallocate are O(segments), as Glow's. allocateAll
 * is O(n^2 log n + n * steps) for Glow's orders plus nnmem's planning,
 * bounded by the work limit (setPlannerWorkLimit), which by default grows
 * with the square of the buffer count as Glow's orders' cost does, so
 * allocateAll costs about what Glow's does (BENCHMARKS.md); with heap for
 * O(n) entries besides the segments. Not thread-safe (as Glow's): one thread at
 * a time per allocator.
 *
 * The class lives in the inline namespace glow::nnmem_compat: code names it
 * glow::MemoryAllocator, and a program that links Glow's own
 * MemoryAllocator.cpp into other parts gets a link error where the two
 * would meet instead of two classes under one name.
 */
#ifndef NNMEM_COMPAT_GLOW_MEMORYALLOCATOR_H
#define NNMEM_COMPAT_GLOW_MEMORYALLOCATOR_H

#ifdef GLOW_CODEGEN_MEMORYALLOCATOR_H
#error "Glow's own glow/CodeGen/MemoryAllocator.h is already included; include one of the two"
#endif
/* Glow's include guard: Glow headers included after this one (BackendUtils.h,
 * AllocationsInfo.h) use this class instead of declaring Glow's again. */
#define GLOW_CODEGEN_MEMORYALLOCATOR_H 1

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <list>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nnmem.h>

namespace glow {
inline namespace nnmem_compat {

/// Whether the half-open intervals [begin1, end1) and [begin2, end2) share a
/// point.
template <class T> inline bool intervalsOverlap(T begin1, T end1, T begin2, T end2) {
    return std::max(begin1, begin2) < std::min(end1, end2);
}

/// One request of allocateAll: ALLOC (`alloc` true, `size` bytes) or FREE
/// (`alloc` false, `size` ignored) of the buffer `handle`.
struct Allocation {
    using Handle = const void *;

    Handle handle;
    uint64_t size;
    bool alloc;

    Allocation(Handle handle, bool alloc, uint64_t size) : handle(handle), size(size), alloc(alloc) {}

    Allocation(size_t id, bool alloc, uint64_t size)
        : handle(reinterpret_cast<Handle>(id)), size(size), alloc(alloc) {}
};

/// The half-open address range [begin, end).
struct Segment {
    uint64_t begin;
    uint64_t end;

    Segment(uint64_t begin, uint64_t end) : begin(begin), end(end) {}

    uint64_t size() const { return end - begin; }

    bool contains(uint64_t idx) const { return idx >= begin && idx < end; }
};

namespace detail {
/// Holds npos: a static member of a template may be defined in a header,
/// which C++11 and C++14 need for a member that code binds to a reference
/// (EXPECT_EQ(p, MemoryAllocator::npos)).
template <class Unused> struct MemoryAllocatorConstants {
    /// The address of a failed allocation (and of an unknown handle's
    /// segment).
    static const uint64_t npos = ~static_cast<uint64_t>(0);
    /// setPlannerWorkLimit's default: each allocateAll scales nnmem's work
    /// limit to its list, so that it costs about what Glow's own orders
    /// cost (each scans the placed buffers for every buffer):
    /// scaledWorkUnitsPerPair units per pair of buffers, at least
    /// scaledWorkUnitsMin (every Glow model shipped reaches its lower bound
    /// within it, in a few ms), at most NNM_DEFAULT_WORK_LIMIT.
    static const uint64_t scaledWorkLimit = ~static_cast<uint64_t>(0);
    static const uint64_t scaledWorkUnitsPerPair = 4;
    static const uint64_t scaledWorkUnitsMin = 8000000;
};
template <class Unused> const uint64_t MemoryAllocatorConstants<Unused>::npos;
template <class Unused> const uint64_t MemoryAllocatorConstants<Unused>::scaledWorkLimit;
template <class Unused> const uint64_t MemoryAllocatorConstants<Unused>::scaledWorkUnitsPerPair;
template <class Unused> const uint64_t MemoryAllocatorConstants<Unused>::scaledWorkUnitsMin;
}  // namespace detail

/// Assigns addresses (no memory) to handles in a region of `memorySize`
/// bytes (0: unlimited). See the top of this file.
class MemoryAllocator : public detail::MemoryAllocatorConstants<void> {
public:
    using Handle = const void *;

    /// `alignment`: Glow's TensorAlignment, 64, by default.
    explicit MemoryAllocator(const std::string &name, uint64_t memorySize, size_t alignment = 64)
        : name_(name), memorySize_(memorySize), alignment_(alignment) {}

    /// Forgets every segment, the usage figures and getLastPlanner(); keeps
    /// name, memory size, alignment and the planner's work limit.
    void reset() {
        lastPlanner_.clear();
        liveSize_ = 0;
        maxUsedSize_ = 0;
        maxLiveSize_ = 0;
        blocks_.clear();
        handleToSegmentMap_.clear();
        addrToHandleMap_.clear();
    }

    /// Whether `idx` lies inside an allocated segment.
    bool contains(uint64_t idx) const {
        for (const Block &b : blocks_) {
            if (idx >= b.begin && idx < b.end) {
                return true;
            }
        }
        return false;
    }

    /// First fit of `size` bytes (rounded up to the alignment, at least one
    /// unit) for `handle`. \returns its address, or npos when it does not
    /// fit. A handle that already has a segment keeps it (getSegment) while
    /// this one takes memory too, as in Glow.
    uint64_t allocate(uint64_t size, Handle handle) {
        uint64_t segmentSize = 0;
        if (!effectiveSize(std::max<uint64_t>(1, size), segmentSize)) {
            return npos;
        }
        uint64_t prev = 0;
        std::list<Block>::iterator it = blocks_.begin();
        for (; it != blocks_.end(); ++it) {
            if (it->begin >= prev && it->begin - prev >= segmentSize) {
                break;
            }
            prev = std::max(prev, it->limit);
        }
        if (it == blocks_.end()) {
            // Past every segment: the one place the memory size can be hit.
            if (segmentSize > std::numeric_limits<uint64_t>::max() - prev ||
                (memorySize_ != 0 && prev + segmentSize > memorySize_)) {
                return npos;
            }
        }
        blocks_.insert(it, Block(prev, prev + segmentSize, prev + segmentSize, handle));
        maxUsedSize_ = std::max(maxUsedSize_, prev + segmentSize);
        liveSize_ += segmentSize;
        maxLiveSize_ = std::max(maxLiveSize_, liveSize_);
        addrToHandleMap_[prev] = handle;
        handleToSegmentMap_.insert(std::make_pair(handle, Segment(prev, prev + size)));
        return prev;
    }

    /// allocate(size, handle); when that fails, evicts segments by Glow's
    /// first fit (never those of `mustNotEvict`), appends their handles to
    /// `evicted`, and tries once more. \returns the address or npos.
    uint64_t allocate(uint64_t size, Handle handle, const std::set<Handle> &mustNotEvict,
                      std::vector<Handle> &evicted) {
        uint64_t ptr = allocate(size, handle);
        if (ptr != npos || alignment_ == 0) {
            return ptr;
        }
        evictFirstFit(size, mustNotEvict, evicted);
        return allocate(size, handle);
    }

    /// Places every buffer of `allocList` (each ALLOC followed later by its
    /// FREE, handles unique) at once. `reuseMemory` false places them above
    /// everything placed so far. \returns getMaxMemoryUsage(), 0 for an
    /// empty list, or npos (nothing changed) for an invalid list or a plan
    /// that does not fit. See the top of this file.
    uint64_t allocateAll(const std::list<Allocation> &allocList, bool reuseMemory = true);

    /// The handle at address `ptr`, or nullptr when none is (see hasHandle).
    Handle getHandle(uint64_t ptr) const {
        std::unordered_map<uint64_t, Handle>::const_iterator it = addrToHandleMap_.find(ptr);
        return it == addrToHandleMap_.end() ? nullptr : it->second;
    }

    bool hasHandle(uint64_t ptr) const { return addrToHandleMap_.count(ptr) != 0; }

    /// The segment of `handle` (its requested size), or {npos, npos} for a
    /// handle with none (see hasAddress).
    const Segment &getSegment(Handle handle) const {
        static const Segment none(npos, npos);
        std::unordered_map<Handle, Segment>::const_iterator it = handleToSegmentMap_.find(handle);
        return it == handleToSegmentMap_.end() ? none : it->second;
    }

    uint64_t getAddress(Handle handle) const { return getSegment(handle).begin; }

    uint64_t getSize(Handle handle) const { return getSegment(handle).size(); }

    bool hasAddress(Handle handle) const { return handleToSegmentMap_.count(handle) != 0; }

    /// Frees the segment of `handle`; does nothing for a handle with none.
    void deallocate(Handle handle) {
        std::unordered_map<Handle, Segment>::iterator seg = handleToSegmentMap_.find(handle);
        if (seg == handleToSegmentMap_.end()) {
            return;
        }
        const uint64_t ptr = seg->second.begin;
        for (std::list<Block>::iterator it = blocks_.begin(); it != blocks_.end(); ++it) {
            if (it->begin == ptr && it->handle == handle) {
                liveSize_ -= std::min(liveSize_, it->end - it->begin);
                blocks_.erase(it);
                break;
            }
        }
        addrToHandleMap_.erase(ptr);
        handleToSegmentMap_.erase(seg);
    }

    uint64_t getMemorySize() const { return memorySize_; }

    uint64_t getMaxMemoryUsage() const { return maxUsedSize_; }

    size_t getAlignment() const { return alignment_; }

    /// The largest total live at once over the maximum usage (0 before any
    /// allocation): 1.0 is the best any placement can do.
    float getAllocationEfficiency() const {
        return maxUsedSize_ == 0 ? 0.0f : static_cast<float>(maxLiveSize_) / static_cast<float>(maxUsedSize_);
    }

    const std::string &getName() const { return name_; }

    // nnmem's additions (not in Glow's interface).

    /// The work limit of nnmem's planner in allocateAll (nnm_planner_set_work_limit;
    /// 0: none; NNM_DEFAULT_WORK_LIMIT: the planner's own default, the
    /// longer search). Default scaledWorkLimit.
    void setPlannerWorkLimit(uint64_t units) { workLimit_ = units; }

    uint64_t getPlannerWorkLimit() const { return workLimit_; }

    /// Which plan the last successful non-empty allocateAll kept: "nnmem:"
    /// and nnm_algorithm_name() of the winner, or "glow:" and the name of
    /// Glow's order ("max-live-size-max-buff-size",
    /// "max-live-size-max-buff-time", "same-order"). Empty before (and
    /// after reset).
    const std::string &getLastPlanner() const { return lastPlanner_; }

private:
    /// A segment in address order. `end` is what contains() and deallocate
    /// see (Glow's segment: rounded for allocate, requested for
    /// allocateAll); `limit`, the rounded end, is what allocate keeps clear.
    struct Block {
        uint64_t begin;
        uint64_t end;
        uint64_t limit;
        Handle handle;
        Block(uint64_t begin, uint64_t end, uint64_t limit, Handle handle)
            : begin(begin), end(end), limit(limit), handle(handle) {}
    };

    /// One buffer of allocateAll: rounded size, first and last step
    /// ([start, stop) in list positions), address.
    struct Buffer {
        Handle handle;
        uint64_t requested;
        uint64_t size;
        uint64_t start;
        uint64_t stop;
    };

    std::string name_;
    std::list<Block> blocks_;
    uint64_t memorySize_;
    uint64_t maxUsedSize_ = 0;
    uint64_t maxLiveSize_ = 0;
    uint64_t liveSize_ = 0;
    size_t alignment_;
    std::unordered_map<uint64_t, Handle> addrToHandleMap_;
    std::unordered_map<Handle, Segment> handleToSegmentMap_;
    uint64_t workLimit_ = scaledWorkLimit;
    std::string lastPlanner_;

    /// `size` rounded up to the alignment into `out`; false for alignment 0
    /// or a rounding past 2^64 - 1.
    bool effectiveSize(uint64_t size, uint64_t &out) const {
        if (alignment_ == 0) {
            return false;
        }
        const uint64_t mod = size % alignment_;
        if (mod == 0) {
            out = size;
            return true;
        }
        if (size > std::numeric_limits<uint64_t>::max() - (alignment_ - mod)) {
            return false;
        }
        out = size + (alignment_ - mod);
        return true;
    }

    /// Glow's first-fit eviction: the first run of evictable segments
    /// (between segments that must stay) long enough for `size`, or, with
    /// none that must stay and a memory size of at least `size`, every
    /// segment scanned.
    void evictFirstFit(uint64_t size, const std::set<Handle> &mustNotEvict, std::vector<Handle> &evicted) {
        uint64_t need = 0;
        if (!effectiveSize(size, need)) {
            return;
        }
        bool keptOne = false;
        uint64_t begin = 0;
        std::vector<std::pair<uint64_t, Handle> > candidates;  // end, handle
        for (const Block &b : blocks_) {
            const Handle h = hasHandle(b.begin) ? getHandle(b.begin) : b.handle;
            if (mustNotEvict.count(h) != 0) {
                begin = b.end;
                candidates.clear();
                keptOne = true;
                continue;
            }
            candidates.push_back(std::make_pair(b.end, h));
            if (b.end >= begin && b.end - begin >= need) {
                break;
            }
        }
        const bool enough =
            !candidates.empty() && candidates.back().first >= begin && candidates.back().first - begin >= need;
        if (enough || (!keptOne && memorySize_ >= need)) {
            for (const std::pair<uint64_t, Handle> &c : candidates) {
                deallocate(c.second);
                evicted.push_back(c.second);
            }
        }
    }

    bool checkAllocations(const std::list<Allocation> &allocList, std::vector<Buffer> &buffers) const;
    static uint64_t glowPlan(const std::vector<Buffer> &buffers, size_t steps, int order, uint64_t capacity,
                             std::vector<uint64_t> &addresses);
    static bool nnmemPlan(const std::vector<Buffer> &buffers, uint64_t unit, uint64_t workLimit,
                          std::vector<uint64_t> &addresses, uint64_t &used, std::string &algorithm);
};

/// Fills `buffers` (in ALLOC order) from a valid list; false when the list
/// is one Glow's verifyAllocations refuses, or a size overflows.
inline bool MemoryAllocator::checkAllocations(const std::list<Allocation> &allocList,
                                              std::vector<Buffer> &buffers) const {
    if (allocList.size() % 2 != 0) {
        return false;
    }
    std::unordered_map<Handle, size_t> index;  // handle -> buffer, until its FREE
    uint64_t step = 0;
    uint64_t total = 0;
    for (const Allocation &a : allocList) {
        if (a.alloc) {
            Buffer b;
            b.handle = a.handle;
            b.requested = a.size;
            b.start = step;
            b.stop = step;
            if (!index.insert(std::make_pair(a.handle, buffers.size())).second ||
                !effectiveSize(a.size, b.size) || b.size > std::numeric_limits<uint64_t>::max() - total) {
                return false;
            }
            total += b.size;
            buffers.push_back(b);
        } else {
            std::unordered_map<Handle, size_t>::iterator it = index.find(a.handle);
            if (it == index.end() || buffers[it->second].stop != buffers[it->second].start) {
                return false;  // FREE without an ALLOC before it, or twice
            }
            buffers[it->second].stop = step;
        }
        ++step;
    }
    for (const Buffer &b : buffers) {
        if (b.stop == b.start) {
            return false;  // never freed
        }
    }
    return buffers.size() * 2 == allocList.size();
}

/// Glow's allocateAll with one of its orders (0: largest buffer live at
/// the step with the most unplaced bytes, ties to the longest-lived, then
/// the first; 1: longest-lived there, ties to the largest, then the first;
/// 2: list order), each buffer at the lowest address free over its life.
/// \returns the highest end, or npos when it passes `capacity`.
inline uint64_t MemoryAllocator::glowPlan(const std::vector<Buffer> &buffers, size_t steps, int order,
                                          uint64_t capacity, std::vector<uint64_t> &addresses) {
    const size_t n = buffers.size();
    std::vector<uint64_t> liveBytes(steps, 0);  // unplaced bytes live at each step
    std::vector<size_t> liveCount(steps, 0);    // unplaced buffers live at each step
    for (const Buffer &b : buffers) {
        for (uint64_t t = b.start; t < b.stop; ++t) {
            liveBytes[t] += b.size;
            ++liveCount[t];
        }
    }
    std::vector<bool> placed(n, false);
    addresses.assign(n, 0);
    std::vector<size_t> placedIds;
    std::vector<std::pair<uint64_t, uint64_t> > busy;
    uint64_t used = 0;
    for (size_t k = 0; k < n; ++k) {
        size_t pick = k;
        if (order != 2) {
            // The fullest step; while the best seen holds 0 bytes, any later
            // step with unplaced buffers replaces it (Glow's zero-size rule).
            size_t fullest = 0;
            uint64_t most = 0;
            for (size_t t = 0; t < steps; ++t) {
                if (liveCount[t] != 0 && (liveBytes[t] > most || most == 0)) {
                    most = liveBytes[t];
                    fullest = t;
                }
            }
            bool found = false;
            for (size_t i = 0; i < n; ++i) {
                const Buffer &b = buffers[i];
                if (placed[i] || b.start > fullest || b.stop <= fullest) {
                    continue;
                }
                const uint64_t life = b.stop - b.start;
                const uint64_t bestLife = buffers[pick].stop - buffers[pick].start;
                const bool better =
                    order == 0 ? (b.size > buffers[pick].size || (b.size == buffers[pick].size && life > bestLife))
                               : (life > bestLife || (life == bestLife && b.size > buffers[pick].size));
                if (!found || better) {
                    pick = i;
                    found = true;
                }
            }
        }
        const Buffer &cur = buffers[pick];
        busy.clear();
        for (size_t j : placedIds) {
            const Buffer &o = buffers[j];
            if (o.size != 0 && intervalsOverlap(cur.start, cur.stop, o.start, o.stop)) {
                busy.push_back(std::make_pair(addresses[j], addresses[j] + o.size));
            }
        }
        std::sort(busy.begin(), busy.end());
        uint64_t at = 0;
        if (cur.size != 0) {
            for (const std::pair<uint64_t, uint64_t> &s : busy) {
                if (s.first >= at && s.first - at >= cur.size) {
                    break;
                }
                at = std::max(at, s.second);
            }
        }
        used = std::max(used, at + cur.size);
        if (used > capacity) {
            return npos;
        }
        addresses[pick] = at;
        placed[pick] = true;
        placedIds.push_back(pick);
        for (uint64_t t = cur.start; t < cur.stop; ++t) {
            liveBytes[t] -= cur.size;
            --liveCount[t];
        }
    }
    return used;
}

/// nnmem's plan of the buffers of non-zero size, in units of `unit` bytes
/// (every size is a multiple of it, so every address is too); zero sizes
/// at 0. false when nnmem cannot plan (out of memory, overflow).
inline bool MemoryAllocator::nnmemPlan(const std::vector<Buffer> &buffers, uint64_t unit, uint64_t workLimit,
                                       std::vector<uint64_t> &addresses, uint64_t &used, std::string &algorithm) {
    nnm_planner *planner = nullptr;
    if (nnm_planner_new(&planner) != NNM_OK) {
        return false;
    }
    bool ok = nnm_planner_set_algorithm(planner, NNM_ALGORITHM_AUTO) == NNM_OK &&
              nnm_planner_set_work_limit(planner, workLimit) == NNM_OK;
    std::vector<size_t> planned;
    for (size_t i = 0; ok && i < buffers.size(); ++i) {
        const Buffer &b = buffers[i];
        if (b.size != 0) {
            ok = nnm_planner_add_buffer(planner, b.size / unit, static_cast<int64_t>(b.start),
                                        static_cast<int64_t>(b.stop - 1), nullptr) == NNM_OK;
            planned.push_back(i);
        }
    }
    nnm_plan_result result;
    std::vector<uint64_t> offsets(planned.size());
    ok = ok && nnm_planner_plan(planner) == NNM_OK && nnm_planner_get_result(planner, &result) == NNM_OK &&
         (planned.empty() || nnm_planner_get_offsets(planner, offsets.data(), offsets.size()) == NNM_OK);
    nnm_planner_free(planner);
    if (!ok) {
        return false;
    }
    addresses.assign(buffers.size(), 0);
    for (size_t k = 0; k < planned.size(); ++k) {
        addresses[planned[k]] = offsets[k] * unit;
    }
    used = result.peak_bytes * unit;
    const char *name = nnm_algorithm_name(result.algorithm);
    algorithm = std::string("nnmem:") + (name != nullptr ? name : "?");
    return true;
}

inline uint64_t MemoryAllocator::allocateAll(const std::list<Allocation> &allocList, bool reuseMemory) {
    std::vector<Buffer> buffers;
    if (!checkAllocations(allocList, buffers)) {
        return npos;
    }
    if (allocList.empty()) {
        return 0;
    }
    if (alignment_ == 0) {
        return npos;
    }
    uint64_t capacity = memorySize_ != 0 ? memorySize_ : std::numeric_limits<uint64_t>::max();
    if (!reuseMemory) {
        if (capacity < maxUsedSize_) {
            return npos;
        }
        capacity -= maxUsedSize_;
    }
    // The largest total live at one step: what no plan can go below.
    uint64_t live = 0;
    uint64_t liveMax = 0;
    {
        std::vector<uint64_t> sizeAt(allocList.size(), 0);
        for (const Buffer &b : buffers) {
            sizeAt[b.start] = b.size;
            sizeAt[b.stop] = b.size;
        }
        size_t step = 0;
        for (const Allocation &a : allocList) {
            live = a.alloc ? live + sizeAt[step] : live - sizeAt[step];
            liveMax = std::max(liveMax, live);
            ++step;
        }
    }
    if (liveMax > capacity) {
        return npos;
    }

    // Glow's own orders, in Glow's sequence: the first to meet the bound,
    // else the first smallest.
    static const char *const orders[] = {"glow:max-live-size-max-buff-size", "glow:max-live-size-max-buff-time",
                                         "glow:same-order"};
    std::vector<uint64_t> best;
    uint64_t bestUsed = npos;
    std::string bestName;
    for (int order = 0; order < 3 && bestUsed != liveMax; ++order) {
        std::vector<uint64_t> addresses;
        const uint64_t used = glowPlan(buffers, allocList.size(), order, capacity, addresses);
        if (used != npos && (bestUsed == npos || used < bestUsed)) {
            bestUsed = used;
            best.swap(addresses);
            bestName = orders[order];
        }
    }
    // nnmem's plan replaces it only when smaller: a tie keeps Glow's
    // addresses.
    std::vector<uint64_t> addresses;
    uint64_t used = 0;
    std::string algorithm;
    uint64_t workLimit = workLimit_;
    if (workLimit == scaledWorkLimit) {
        const uint64_t n = buffers.size();
        const uint64_t pairs = n > (uint64_t(1) << 31) ? npos : n * n;
        const uint64_t scaled = pairs > npos / scaledWorkUnitsPerPair ? npos : pairs * scaledWorkUnitsPerPair;
        workLimit = std::min<uint64_t>(NNM_DEFAULT_WORK_LIMIT, std::max(scaledWorkUnitsMin, scaled));
    }
    if (nnmemPlan(buffers, alignment_, workLimit, addresses, used, algorithm) && used <= capacity &&
        (bestUsed == npos || used < bestUsed)) {
        bestUsed = used;
        best.swap(addresses);
        bestName = algorithm;
    }
    if (bestUsed == npos) {
        return npos;
    }

    const uint64_t base = reuseMemory ? 0 : maxUsedSize_;
    for (size_t i = 0; i < buffers.size(); ++i) {
        const uint64_t begin = base + best[i];
        const Block block(begin, begin + buffers[i].requested, begin + buffers[i].size, buffers[i].handle);
        std::list<Block>::iterator at = blocks_.begin();
        while (at != blocks_.end() && at->begin <= begin) {
            ++at;
        }
        blocks_.insert(at, block);
        handleToSegmentMap_.insert(std::make_pair(buffers[i].handle, Segment(block.begin, block.end)));
        addrToHandleMap_[begin] = buffers[i].handle;
    }
    if (reuseMemory) {
        maxUsedSize_ = std::max(maxUsedSize_, bestUsed);
        maxLiveSize_ = std::max(maxLiveSize_, liveMax);
    } else {
        maxUsedSize_ += bestUsed;
        maxLiveSize_ += liveMax;
    }
    liveSize_ = 0;
    lastPlanner_ = bestName;
    return maxUsedSize_;
}

}  // namespace nnmem_compat
}  // namespace glow

#endif /* NNMEM_COMPAT_GLOW_MEMORYALLOCATOR_H */
