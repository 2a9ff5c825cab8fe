// ov::MemorySolver over nnmem (<nnmem/compat/openvino/memory_solver.hpp>):
// OpenVINO's own unit tests with their published figures, its semantics
// where its tests are silent, its exceptions, and a randomized comparison
// with OpenVINO's greedy written here from its documented algorithm.
//
// The published figures are transcribed from OpenVINO's
// src/inference/tests/unit/memory_solver_test.cpp (openvinotoolkit/openvino,
// TEST(MemSolverTest, ...)); each test below names its original. Their
// boxes are written out in full ({start, finish, size, id}) where the
// original counts with `n` or leaves the id out (0).
//
// Built with NNM_TEST_OPENVINO_STANDIN, it runs against a stand-in of
// OpenVINO's openvino/core/except.hpp (compat_openvino/): the header then
// throws OpenVINO's own exception types through OpenVINO's macros.
#include <nnmem/compat/openvino/memory_solver.hpp>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "nnm_check.h"

using Box = ov::MemorySolver::Box;

#define CHECK_THROWS(expr, type)                                                              \
    do {                                                                                      \
        bool thrown_ = false;                                                                 \
        try {                                                                                 \
            (void)(expr);                                                                     \
        } catch (const type&) {                                                               \
            thrown_ = true;                                                                   \
        } catch (...) {                                                                       \
        }                                                                                     \
        nnm_check_record(thrown_ ? 1 : 0, __FILE__, __LINE__, #expr " throws " #type);        \
    } while (0)

#define CHECK_NO_THROW(expr)                                                                  \
    do {                                                                                      \
        bool thrown_ = false;                                                                 \
        try {                                                                                 \
            (void)(expr);                                                                     \
        } catch (...) {                                                                       \
            thrown_ = true;                                                                   \
        }                                                                                     \
        nnm_check_record(thrown_ ? 0 : 1, __FILE__, __LINE__, #expr " does not throw");       \
    } while (0)

// ---------------------------------------------------------------------------
// OpenVINO's greedy, written here from its documented algorithm (the
// header's comment and OpenVINO's): `finish` -1 becomes the highest
// timestamp; the boxes are sorted by (start, finish), then each timestamp
// is replaced by its rank among the distinct starts (a finish by the rank
// of the last start at or before it); then, by size descending (the same
// two std::sort calls, so equal boxes come in OpenVINO's order), each box
// starts at offset 0 and is lifted onto every box it intersects in one of
// its time slots, pass after pass, until a pass lifts it no more. Only for
// valid boxes (start >= 0, finish -1 or >= start, size >= 0).
// ---------------------------------------------------------------------------
struct Reference {
    int64_t total;
    std::map<int64_t, int64_t> offsets;
    int64_t depth;
    int64_t top_depth;
};

static Reference reference_solve(std::vector<Box> boxes) {
    Reference ref;
    ref.total = 0;
    ref.depth = -1;
    ref.top_depth = -1;
    int max_ts = 0;
    for (const Box& b : boxes)
        max_ts = std::max(max_ts, std::max(b.start, b.finish));
    for (Box& b : boxes)
        if (b.finish == -1)
            b.finish = max_ts;
    std::sort(boxes.begin(), boxes.end(), [](const Box& l, const Box& r) {
        return l.start < r.start || (l.start == r.start && l.finish < r.finish);
    });
    std::vector<int> starts;
    for (const Box& b : boxes)
        starts.push_back(b.start);
    starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
    for (Box& b : boxes) {
        b.start = static_cast<int>(std::lower_bound(starts.begin(), starts.end(), b.start) - starts.begin());
        b.finish = static_cast<int>(std::upper_bound(starts.begin(), starts.end(), b.finish) - starts.begin()) - 1;
    }
    const size_t steps = starts.size();
    for (size_t s = 0; s < steps; ++s) {
        int64_t depth = 0, top = 0;
        for (const Box& b : boxes)
            if (b.start <= static_cast<int>(s) && static_cast<int>(s) <= b.finish) {
                depth += b.size;
                ++top;
            }
        ref.depth = std::max(ref.depth, depth);
        ref.top_depth = std::max(ref.top_depth, top);
    }

    std::sort(boxes.begin(), boxes.end(), [](const Box& l, const Box& r) { return l.size > r.size; });
    std::vector<std::vector<size_t> > slots(steps);
    std::vector<int64_t> offset(boxes.size(), 0);
    for (size_t k = 0; k < boxes.size(); ++k) {
        const Box& b = boxes[k];
        bool lifted;
        do {
            lifted = false;
            for (int s = b.start; s <= b.finish; ++s)
                for (size_t j : slots[static_cast<size_t>(s)])
                    if (offset[k] + b.size > offset[j] && offset[j] + boxes[j].size > offset[k]) {
                        offset[k] = offset[j] + boxes[j].size;
                        lifted = true;
                    }
        } while (lifted);
        for (int s = b.start; s <= b.finish; ++s)
            slots[static_cast<size_t>(s)].push_back(k);
        ref.total = std::max(ref.total, offset[k] + b.size);
        ref.offsets[b.id] = offset[k];
    }
    return ref;
}

// Every pair of boxes live at a common step (inclusive ends, -1 to the
// end) has disjoint offsets, every offset is >= 0, and `total` is the
// highest offset + size. Boxes need distinct ids.
static bool plan_is_valid(const std::vector<Box>& boxes, const ov::MemorySolver& ms, int64_t total) {
    int max_ts = 0;
    for (const Box& b : boxes)
        max_ts = std::max(max_ts, std::max(b.start, b.finish));
    int64_t top = 0;
    for (size_t i = 0; i < boxes.size(); ++i) {
        const Box& a = boxes[i];
        const int64_t off_a = ms.get_offset(static_cast<int>(a.id));
        if (off_a < 0)
            return false;
        top = std::max(top, off_a + a.size);
        const int fin_a = a.finish == -1 ? max_ts : a.finish;
        for (size_t j = i + 1; j < boxes.size(); ++j) {
            const Box& b = boxes[j];
            const int fin_b = b.finish == -1 ? max_ts : b.finish;
            const int64_t off_b = ms.get_offset(static_cast<int>(b.id));
            const bool same_time = a.start <= fin_b && b.start <= fin_a;
            const bool same_memory = off_a < off_b + b.size && off_b < off_a + a.size;
            if (same_time && same_memory)
                return false;
        }
    }
    return top == total;
}

// One of OpenVINO's cases: its published blob size (-1: none published),
// OpenVINO's greedy as written above, and this header's answer.
static void report_case(const char* name, const std::vector<Box>& boxes, int64_t published, int64_t ours) {
    const Reference ref = reference_solve(boxes);
    printf("  %-28s boxes %2zu  lower bound %6lld  OpenVINO %6lld  nnmem %6lld%s\n", name, boxes.size(),
           static_cast<long long>(ref.depth), static_cast<long long>(published >= 0 ? published : ref.total),
           static_cast<long long>(ours), published >= 0 ? "" : " (OpenVINO: greedy above, none published)");
    CHECK(ours <= ref.total);
    if (published >= 0)
        CHECK(ref.total == published);  // the greedy above is OpenVINO's
}

// TEST(MemSolverTest, CanConstruct)
static void test_can_construct() {
    CHECK_NO_THROW(ov::MemorySolver(std::vector<Box>{}));
    CHECK_NO_THROW(ov::MemorySolver(std::vector<Box>{{}}));
    CHECK_NO_THROW(ov::MemorySolver(std::vector<Box>{{1, 3, 3, 0}}));
    CHECK_NO_THROW(ov::MemorySolver(std::vector<Box>{{0, 0, 0, 0}}));
    CHECK_NO_THROW(ov::MemorySolver(std::vector<Box>{{3, -1, 6, 0}}));

    // Without boxes: blob 0, depths -1, as OpenVINO's.
    ov::MemorySolver empty(std::vector<Box>{});
    CHECK(empty.solve() == 0);
    CHECK(empty.max_depth() == -1);
    CHECK(empty.max_top_depth() == -1);
    CHECK_THROWS(empty.get_offset(0), ov::Exception);
}

// TEST(MemSolverTest, get_offset): "The correct answer is [0, 2, 0, 2] or [2, 0, 2, 0]."
static void test_get_offset() {
    std::vector<Box> boxes{{0, 1, 2, 0}, {1, 2, 2, 1}, {2, 3, 2, 2}, {3, 4, 2, 3}};
    ov::MemorySolver ms(boxes);
    const int64_t total = ms.solve();
    CHECK(ms.get_offset(0) + ms.get_offset(1) == 2);
    CHECK(ms.get_offset(1) + ms.get_offset(2) == 2);
    CHECK(ms.get_offset(2) + ms.get_offset(3) == 2);
    CHECK(plan_is_valid(boxes, ms, total));
    report_case("get_offset", boxes, -1, total);
}

// TEST(MemSolverTest, get_offsetThrowException): EXPECT_THROW(get_offset(100), std::runtime_error).
static void test_get_offset_throws() {
    std::vector<Box> boxes{{0, 1, 2, 0}, {1, 2, 2, 1}, {2, 3, 2, 2}, {3, 4, 2, 3}};
    ov::MemorySolver ms(boxes);
    CHECK_THROWS(ms.get_offset(0), ov::Exception);  // before solve(), as OpenVINO
    ms.solve();
    CHECK_THROWS(ms.get_offset(100), std::runtime_error);
    CHECK_THROWS(ms.get_offset(100), ov::Exception);
    try {
        ms.get_offset(-1);
        CHECK(false);
    } catch (const ov::Exception& e) {
        CHECK(std::string(e.what()).find("There are no box for provided ID") != std::string::npos);
    }
}

// A published case: blob size, max_depth, max_top_depth as OpenVINO's test
// expects them (`published` is OpenVINO's own blob size where it differs
// from the test's expectation, as in DISABLED_Unefficiency).
static void published_case(const char* name, const std::vector<Box>& boxes, int64_t expect_total,
                           int64_t expect_depth, int64_t expect_top, int64_t openvino_total) {
    ov::MemorySolver ms(boxes);
    const int64_t total = ms.solve();
    CHECK(total == expect_total);
    CHECK(ms.max_depth() == expect_depth);
    CHECK(ms.max_top_depth() == expect_top);
    report_case(name, boxes, openvino_total, total);
}

static void test_published_figures() {
    // TEST(MemSolverTest, LinearAndEven): 4, 4, 2.
    published_case("LinearAndEven", {{0, 1, 2, 0}, {1, 2, 2, 0}, {2, 3, 2, 0}}, 4, 4, 2, 4);
    // TEST(MemSolverTest, LinearAndNotEven): 5, 5, 2.
    published_case("LinearAndNotEven", {{0, 1, 2, 0}, {1, 2, 2, 0}, {2, 3, 3, 0}}, 5, 5, 2, 5);
    // TEST(MemSolverTest, LinearWithEmptyExecIndexes): 5, 5, 2.
    published_case("LinearWithEmptyExecIndexes", {{2, 4, 2, 0}, {4, 6, 2, 0}, {6, 8, 3, 0}}, 5, 5, 2, 5);
    // TEST(MemSolverTest, DISABLED_Unefficiency): expects 5, 5, 2;
    // "currently we have answer 6". nnmem: 5.
    published_case("DISABLED_Unefficiency", {{6, 7, 3, 0}, {2, 5, 2, 0}, {5, 8, 2, 0}, {2, 3, 2, 0}}, 5, 5, 2, 6);
    // TEST(MemSolverTest, OverlappingBoxes): 6, 6, 2.
    published_case("OverlappingBoxes", {{6, 7, 4, 0}, {2, 5, 3, 0}, {5, 8, 2, 0}, {2, 3, 2, 0}}, 6, 6, 2, 6);
    // TEST(MemSolverTest, EndOnSeveralBegins): 6, 6, 3.
    published_case("EndOnSeveralBegins", {{0, 1, 2, 0}, {1, 2, 2, 0}, {3, 3, 2, 0}, {3, 5, 2, 0}, {3, 4, 2, 0}}, 6,
                   6, 3, 6);
    // TEST(MemSolverTest, ToEndBoxes): 8, 8, 4.
    published_case("ToEndBoxes", {{0, 1, 2, 0}, {1, -1, 2, 0}, {3, 3, 2, 0}, {3, -1, 2, 0}, {3, 4, 2, 0}}, 8, 8, 4,
                   8);
    // TEST(MemSolverTest, LastAndToEndBox): 6, 6, 3.
    published_case("LastAndToEndBox", {{0, 1, 2, 0}, {6, -1, 2, 0}, {3, 3, 2, 0}, {3, 5, 2, 0}, {3, 4, 2, 0}}, 6, 6,
                   3, 6);
}

// TEST(MemSolverTest, OptimalAlexnet): solve() == max_depth(), max_top_depth() == 2.
static void test_optimal_alexnet() {
    const int shapes[][3] = {{3, 227, 227}, {96, 55, 55},  {96, 55, 55},  {96, 55, 55},  {96, 27, 27},
                             {256, 27, 27}, {256, 27, 27}, {256, 27, 27}, {256, 13, 13}, {384, 13, 13},
                             {384, 13, 13}, {384, 13, 13}, {384, 13, 13}, {256, 13, 13}, {256, 13, 13},
                             {256, 6, 6},   {1, 1, 4069},  {1, 1, 4069},  {1, 1, 4069},  {1, 1, 4069},
                             {1, 1, 1000},  {1, 1, 1000}};
    std::vector<Box> boxes;
    int n = 0;
    for (const auto& sh : shapes) {
        boxes.push_back(Box{n, n + 1, static_cast<int64_t>(sh[0]) * sh[1] * sh[2], 0});
        ++n;
    }
    ov::MemorySolver ms(boxes);
    const int64_t total = ms.solve();
    CHECK(total == ms.max_depth());
    CHECK(ms.max_top_depth() == 2);
    report_case("OptimalAlexnet", boxes, -1, total);
}

// TEST(MemSolverTest, NoOverlapping): no overlap; "Current algorithm
// doesn't solve that case", with EXPECT_EQ(ms.solve(), 5) left commented
// out. nnmem: 5.
static void test_no_overlapping() {
    std::vector<Box> boxes{{4, 8, 1, 0}, {6, 7, 3, 1}, {2, 3, 3, 2}, {2, 4, 2, 3}};
    ov::MemorySolver ms(boxes);
    const int64_t total = ms.solve();
    CHECK(plan_is_valid(boxes, ms, total));
    CHECK(total == 5);
    report_case("NoOverlapping", boxes, -1, total);
}

// TEST(MemSolverTest, BestSolution1): 5, no overlap.
static void test_best_solution1() {
    std::vector<Box> boxes{{2, 3, 1, 0}, {3, 4, 1, 1}, {4, 6, 2, 2}, {6, 7, 3, 3}};
    ov::MemorySolver ms(boxes);
    const int64_t total = ms.solve();
    CHECK(total == 5);
    CHECK(plan_is_valid(boxes, ms, total));
    report_case("BestSolution1", boxes, 5, total);
}

// normalize_boxes as OpenVINO's: -1 to the highest timestamp, sorted by
// (start, finish), timestamps that start no box removed; returns the steps.
static void test_normalize() {
    std::vector<Box> boxes{{6, 8, 3, 30}, {2, 4, 2, 10}, {4, 6, 2, 20}};
    CHECK(ov::MemorySolver::normalize_boxes(boxes) == 3);
    CHECK(boxes[0].id == 10 && boxes[0].start == 0 && boxes[0].finish == 1);
    CHECK(boxes[1].id == 20 && boxes[1].start == 1 && boxes[1].finish == 2);
    CHECK(boxes[2].id == 30 && boxes[2].start == 2 && boxes[2].finish == 2);

    // ToEndBoxes: -1 becomes 4 (the highest timestamp), then every
    // timestamp its rank among the starts 0, 1, 3. Ids 3 and 4 are equal
    // boxes, in either order.
    std::vector<Box> to_end{{0, 1, 2, 0}, {1, -1, 2, 1}, {3, 3, 2, 2}, {3, -1, 2, 3}, {3, 4, 2, 4}};
    CHECK(ov::MemorySolver::normalize_boxes(to_end) == 3);
    const int expect[5][2] = {{0, 1}, {1, 2}, {2, 2}, {2, 2}, {2, 2}};
    for (size_t i = 0; i < 5; ++i)
        CHECK(to_end[i].start == expect[i][0] && to_end[i].finish == expect[i][1]);
    CHECK(to_end[0].id == 0 && to_end[1].id == 1 && to_end[2].id == 2);
    CHECK(to_end[3].id + to_end[4].id == 7 && to_end[3].id != to_end[4].id);

    std::vector<Box> none;
    CHECK(ov::MemorySolver::normalize_boxes(none) == 0);
}

// Inclusive ends: boxes meeting at a step overlap; consecutive ones do not.
static void test_inclusive_ends() {
    ov::MemorySolver meet(std::vector<Box>{{0, 1, 4, 0}, {1, 2, 4, 1}});
    CHECK(meet.solve() == 8);
    CHECK(meet.max_depth() == 8);
    ov::MemorySolver apart(std::vector<Box>{{0, 0, 4, 0}, {1, 1, 4, 1}});
    CHECK(apart.solve() == 4);
    CHECK(apart.get_offset(0) == 0 && apart.get_offset(1) == 0);
    // A box to the end (-1) overlaps every box starting later.
    ov::MemorySolver to_end(std::vector<Box>{{0, -1, 3, 0}, {5, 5, 2, 1}});
    CHECK(to_end.solve() == 5);
}

// A finish before its start (not -1): OpenVINO accepts it; the box is live
// at no step, sits at 0 and counts in the blob. Expected figures worked out
// from OpenVINO's algorithm (its tests do not cover this).
static void test_finish_before_start() {
    // Box 1 (5..2): OpenVINO normalises it to (1, -2); its sweep never
    // releases it, so max_depth is 4 + 7 - 4 = 7 after box 0 leaves, and
    // max_top_depth 1.
    ov::MemorySolver ms(std::vector<Box>{{0, 3, 4, 0}, {5, 2, 7, 1}});
    CHECK(ms.solve() == 7);
    CHECK(ms.get_offset(0) == 0);
    CHECK(ms.get_offset(1) == 0);
    CHECK(ms.max_depth() == 7);
    CHECK(ms.max_top_depth() == 1);

    // A lone box 3..1 ends the step before it starts: OpenVINO's sweep
    // releases it at once and its OPENVINO_ASSERT(top_depth > 0) fails.
    ov::MemorySolver lone(std::vector<Box>{{3, 1, 5, 0}});
    CHECK_THROWS(lone.solve(), ov::AssertFailure);
    ov::MemorySolver lone2(std::vector<Box>{{3, 1, 5, 0}});
    CHECK_THROWS(lone2.max_depth(), ov::AssertFailure);
    ov::MemorySolver lone3(std::vector<Box>{{3, 1, 5, 0}});
    CHECK_THROWS(lone3.max_top_depth(), std::runtime_error);
    // A box that passed the check before the failing one: after the
    // failure both figures throw again, neither answers from the part of
    // the sweep done.
    ov::MemorySolver late(std::vector<Box>{{0, 1, 5, 0}, {3, 2, 5, 1}});
    CHECK_THROWS(late.max_depth(), ov::AssertFailure);
    CHECK_THROWS(late.max_top_depth(), ov::AssertFailure);
    CHECK_THROWS(late.max_depth(), ov::AssertFailure);
    try {
        ov::MemorySolver zero(std::vector<Box>{{3, 2, 5, 0}});
        zero.max_depth();
        CHECK(false);
    } catch (const ov::AssertFailure& e) {
        // OpenVINO's words, under its own macros too.
        CHECK(std::string(e.what()).find("Check 'top_depth > 0' failed") != std::string::npos);
    }
}

// Refused: a negative start (OpenVINO writes out of bounds) or size.
static void test_refused() {
    CHECK_THROWS(ov::MemorySolver(std::vector<Box>{{-1, 2, 4, 0}}), ov::Exception);
    CHECK_THROWS(ov::MemorySolver(std::vector<Box>{{-5, -5, -5, -5}}), std::runtime_error);
    CHECK_THROWS(ov::MemorySolver(std::vector<Box>{{0, 2, -4, 0}}), ov::Exception);
    std::vector<Box> bad{{0, 1, 2, 0}, {-2, 1, 2, 1}};
    CHECK_THROWS(ov::MemorySolver::normalize_boxes(bad), ov::Exception);
    try {
        ov::MemorySolver ms(std::vector<Box>{{0, 2, -4, 0}});
        CHECK(false);
    } catch (const ov::Exception& e) {
        CHECK(std::string(e.what()).find("has size -4") != std::string::npos);
    }
}

// Sizes past nnmem's 64-bit sum: OpenVINO's greedy plan is kept; a blob
// past INT64_MAX throws.
static void test_large_sizes() {
    const int64_t quarter = INT64_C(1) << 62;
    std::vector<Box> apart;
    for (int i = 0; i < 5; ++i)
        apart.push_back(Box{i, i, quarter, i});
    ov::MemorySolver ms(apart);
    CHECK(ms.solve() == quarter);
    for (int i = 0; i < 5; ++i)
        CHECK(ms.get_offset(i) == 0);

    ov::MemorySolver too_big(std::vector<Box>{{0, 1, INT64_MAX, 0}, {1, 2, 1, 1}});
    CHECK_THROWS(too_big.solve(), ov::Exception);
}

// Of boxes sharing an id, the one OpenVINO's greedy places last (the
// smaller) gives the offset.
static void test_shared_id() {
    ov::MemorySolver ms(std::vector<Box>{{0, 0, 4, 7}, {0, 0, 2, 7}});
    CHECK(ms.solve() == 6);
    CHECK(ms.get_offset(7) == 4);
}

// solve() again: the same blob and offsets.
static void test_solve_twice() {
    std::vector<Box> boxes{{6, 7, 3, 0}, {2, 5, 2, 1}, {5, 8, 2, 2}, {2, 3, 2, 3}};
    ov::MemorySolver ms(boxes);
    const int64_t first = ms.solve();
    int64_t offsets[4];
    for (int i = 0; i < 4; ++i)
        offsets[i] = ms.get_offset(i);
    CHECK(ms.solve() == first);
    for (int i = 0; i < 4; ++i)
        CHECK(ms.get_offset(i) == offsets[i]);
    CHECK(plan_is_valid(boxes, ms, first));
}

// popup_together_with, with ids as offsets, as OpenVINO's.
static void test_popup() {
    ov::MemorySolver ms(std::vector<Box>{});
    Box lower{0, 0, 3, 1};  // [1, 4)
    Box moving{0, 0, 2, 0};  // [0, 2)
    CHECK(ms.popup_together_with(moving, lower));
    CHECK(moving.id == 4);
    CHECK(!ms.popup_together_with(moving, lower));
    CHECK(moving.id == 4);
    Box touching{0, 0, 1, 0};  // [0, 1): ends where `lower` begins
    CHECK(!ms.popup_together_with(touching, lower));
}

// The same boxes give the same offsets (no time limit in the planner).
static void test_deterministic() {
    std::vector<Box> boxes;
    for (int i = 0; i < 40; ++i)
        boxes.push_back(Box{i % 13, i % 13 + (i * 7) % 5, 1 + (i * 37) % 23, i});
    ov::MemorySolver a(boxes), b(boxes);
    CHECK(a.solve() == b.solve());
    bool same = true;
    for (int i = 0; i < 40; ++i)
        same = same && a.get_offset(i) == b.get_offset(i);
    CHECK(same);
}

// Fixed seed, fixed number of cases: the header against the greedy above.
static uint64_t rng_state = UINT64_C(0x9e3779b97f4a7c15);
static uint32_t next_below(uint32_t bound) {
    rng_state = rng_state * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return static_cast<uint32_t>((rng_state >> 33) % bound);
}

static void test_randomized() {
    const int cases = 1500;
    int smaller = 0, invalid = 0, larger = 0, not_openvino = 0, depth_wrong = 0;
    int64_t sum_ours = 0, sum_openvino = 0, sum_bound = 0;
    for (int c = 0; c < cases; ++c) {
        const int n = 1 + static_cast<int>(next_below(c % 10 == 0 ? 40 : 14));
        const int steps = 1 + static_cast<int>(next_below(12));
        std::vector<Box> boxes;
        for (int i = 0; i < n; ++i) {
            Box b;
            b.start = static_cast<int>(next_below(static_cast<uint32_t>(steps)));
            b.finish = next_below(12) == 0 ? -1 : b.start + static_cast<int>(next_below(4));
            b.size = next_below(15) == 0 ? 0 : 1 + static_cast<int64_t>(next_below(c % 3 == 0 ? 4 : 16));
            b.id = 1000 + 3 * i;
            boxes.push_back(b);
        }
        const Reference ref = reference_solve(boxes);
        ov::MemorySolver ms(boxes);
        const int64_t ours = ms.solve();
        if (!plan_is_valid(boxes, ms, ours))
            ++invalid;
        if (ours > ref.total)
            ++larger;
        if (ours < ref.total)
            ++smaller;
        if (ours == ref.total)  // nnmem found nothing smaller: OpenVINO's own offsets
            for (const Box& b : boxes)
                if (ms.get_offset(static_cast<int>(b.id)) != ref.offsets.at(b.id)) {
                    ++not_openvino;
                    break;
                }
        if (ms.max_depth() != ref.depth || ms.max_top_depth() != ref.top_depth || ours < ref.depth)
            ++depth_wrong;
        sum_ours += ours;
        sum_openvino += ref.total;
        sum_bound += ref.depth;
    }
    CHECK(invalid == 0);
    CHECK(larger == 0);
    CHECK(not_openvino == 0);
    CHECK(depth_wrong == 0);
    CHECK(smaller > 0);  // the comparison is not vacuous
    printf("  randomized: %d cases, nnmem smaller in %d, larger in %d, invalid plans %d; "
           "sums: lower bound %lld, OpenVINO %lld, nnmem %lld\n",
           cases, smaller, larger, invalid, static_cast<long long>(sum_bound), static_cast<long long>(sum_openvino),
           static_cast<long long>(sum_ours));
}

#ifdef NNM_TEST_OPENVINO_STANDIN
// The stand-in's ov::Exception::create marks what it throws: the header
// used OpenVINO's macros, not its own types.
static void test_openvino_exceptions() {
    CHECK(NNM_COMPAT_OPENVINO_EXCEPT == 1);
    ov::MemorySolver ms(std::vector<Box>{});
    ms.solve();
    try {
        ms.get_offset(1);
        CHECK(false);
    } catch (const ov::Exception& e) {
        CHECK(std::string(e.what()).find("openvino stand-in") != std::string::npos);
    }
    ov::MemorySolver lone(std::vector<Box>{{3, 1, 5, 0}});
    try {
        lone.solve();
        CHECK(false);
    } catch (const ov::AssertFailure& e) {
        CHECK(std::string(e.what()).find("openvino stand-in") != std::string::npos);
        // OPENVINO_ASSERT names the condition as OpenVINO's does.
        CHECK(std::string(e.what()).find("Check 'top_depth > 0' failed") != std::string::npos);
    }
}
#else
static void test_openvino_exceptions() { CHECK(NNM_COMPAT_OPENVINO_EXCEPT == 0); }
#endif

int main() {
    printf("OpenVINO's memory_solver_test cases (blob sizes):\n");
    test_can_construct();
    test_get_offset();
    test_get_offset_throws();
    test_published_figures();
    test_optimal_alexnet();
    test_no_overlapping();
    test_best_solution1();
    test_normalize();
    test_inclusive_ends();
    test_finish_before_start();
    test_refused();
    test_large_sizes();
    test_shared_id();
    test_solve_twice();
    test_popup();
    test_deterministic();
    test_randomized();
    test_openvino_exceptions();
    return nnm_check_report();
}
