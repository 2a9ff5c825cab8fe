/*
 * The static memory planner, as a C (or C++) user calls it: every nnm_planner
 * entry point, the helpers around it, and every documented error path.
 *
 * Lifetimes are inclusive steps, TFLite-Micro style: a buffer with
 * first_use = 0 and last_use = 2 is live at steps 0, 1 and 2.
 *
 * Valid C11 and C++ (c-tests/CMakeLists.txt builds it both ways): no
 * designated initializers, no compound literals, no implicit void* casts.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nnm_check.h"
#include "nnmem.h"

#ifndef NNM_EXPECTED_VERSION
#error "build with -DNNM_EXPECTED_VERSION=\"x.y.z\" (the version in Cargo.toml)"
#endif

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_BUFFERS 64
/* An out-param value no call should ever produce: checks "written only on success". */
#define SENTINEL UINT64_C(0x5EB7133D5EB7133D)

typedef struct test_buffer {
    uint64_t size;
    int64_t first_use;
    int64_t last_use;
    int fixed; /* nonzero: added with nnm_planner_add_fixed_buffer at `offset` */
    uint64_t offset;
} test_buffer;

/* MiniMalloc's 5-buffer example (README), as inclusive steps.
 *   step   0..2   3..8   9..20
 *   b1       4
 *   b2              4
 *   b3       4      4
 *   b4                     4
 *   b5       4      4      4
 *   sum     12     12      8   -> lower bound 12, reached by an optimal plan. */
static const test_buffer MINIMALLOC[] = {
    {4, 0, 2, 0, 0}, {4, 3, 8, 0, 0}, {4, 0, 8, 0, 0}, {4, 9, 20, 0, 0}, {4, 0, 20, 0, 0},
};

/* The instance of the TFLite Micro exactness test (test_tflm_exact). */
static const test_buffer TFLM_CHAIN[] = {
    {100, 0, 1, 0, 0}, {50, 1, 2, 0, 0}, {70, 2, 3, 0, 0}, {40, 3, 4, 0, 0},
};

static const uint32_t ALL_ALGORITHMS[] = {
    NNM_ALGORITHM_AUTO,          NNM_ALGORITHM_TFLM,
    NNM_ALGORITHM_LINEAR,        NNM_ALGORITHM_SIZE_FIRST_FIT,
    NNM_ALGORITHM_SIZE_BEST_FIT, NNM_ALGORITHM_LIFETIME_FIRST_FIT,
    NNM_ALGORITHM_LIVE_STEP,     NNM_ALGORITHM_CONFLICT,
    NNM_ALGORITHM_EXACT,         NNM_ALGORITHM_FLOOR_FIRST,
    NNM_ALGORITHM_SEQUENTIAL,
};
static const char *const ALL_ALGORITHM_NAMES[] = {
    "auto", "tflm", "linear", "size-first-fit", "size-best-fit", "lifetime-first-fit", "live-step",
    "conflict", "exact", "floor-first", "sequential",
};

/* ---- helpers ------------------------------------------------------------- */

static nnm_planner *new_planner(void) {
    nnm_planner *p = NULL;
    CHECK_OK(nnm_planner_new(&p));
    CHECK(p != NULL);
    return p;
}

/* Adds `n` buffers in order; index i must come back as i. */
static void add_all(nnm_planner *p, const test_buffer *b, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        size_t index = (size_t)-1;
        if (b[i].fixed) {
            CHECK_OK(nnm_planner_add_fixed_buffer(p, b[i].size, b[i].first_use, b[i].last_use,
                                                  b[i].offset, &index));
        } else {
            CHECK_OK(nnm_planner_add_buffer(p, b[i].size, b[i].first_use, b[i].last_use, &index));
        }
        CHECK(index == i);
    }
}

/* Both steps NNM_UNUSED_STEP: never used (a first use of -1 alone is "live
 * before the first step"). */
static int never_used(const test_buffer *b) {
    return b->first_use == NNM_UNUSED_STEP && b->last_use == NNM_UNUSED_STEP;
}

static uint64_t max_end(const test_buffer *b, const uint64_t *offsets, size_t n) {
    uint64_t peak = 0;
    for (size_t i = 0; i < n; ++i) {
        /* Zero-size and never-used buffers occupy no memory. */
        if (b[i].size > 0 && !never_used(&b[i]) && offsets[i] + b[i].size > peak) {
            peak = offsets[i] + b[i].size;
        }
    }
    return peak;
}

/* Reads the plan of `p` (made from the `n` buffers `b`), checks it is
 * internally consistent and valid by nnm_plan_validate, and returns its result. */
static nnm_plan_result check_plan(const nnm_planner *p, const test_buffer *b, size_t n,
                                  uint64_t *offsets) {
    nnm_plan_result r;
    memset(&r, 0, sizeof r);
    CHECK_OK(nnm_planner_get_result(p, &r));
    CHECK(r.buffer_count == n);
    CHECK(r.fits == 1);
    CHECK(r.proven_optimal == 0 || r.proven_optimal == 1);
    CHECK(r.peak_bytes >= r.lower_bound_bytes);
    CHECK(nnm_algorithm_name(r.algorithm) != NULL);

    uint64_t lower = SENTINEL, required = SENTINEL;
    CHECK_OK(nnm_planner_lower_bound(p, &lower));
    CHECK(lower == r.lower_bound_bytes);
    CHECK_OK(nnm_planner_required_bytes(p, &required));
    CHECK(required == r.peak_bytes);
    size_t count = 0;
    CHECK_OK(nnm_planner_buffer_count(p, &count));
    CHECK(count == n);

    CHECK_OK(nnm_planner_get_offsets(p, offsets, n));
    nnm_plan_buffer plan[MAX_BUFFERS];
    for (size_t i = 0; i < n; ++i) {
        uint64_t one = SENTINEL;
        CHECK_OK(nnm_planner_get_offset(p, i, &one));
        CHECK(one == offsets[i]);
        if (b[i].fixed) CHECK(offsets[i] == b[i].offset);
        if (b[i].size > 0 && !never_used(&b[i])) {
            CHECK(offsets[i] + b[i].size <= r.peak_bytes);
        }
        plan[i].size = b[i].size;
        plan[i].first_use = b[i].first_use;
        plan[i].last_use = b[i].last_use;
        plan[i].offset = offsets[i];
    }
    nnm_validation v;
    memset(&v, 0, sizeof v);
    CHECK_OK(nnm_plan_validate(plan, n, &v));
    CHECK(v.valid == 1);
    if (!v.valid) {
        fprintf(stderr, "    %s plan overlaps: buffers %zu and %zu at step %lld\n",
                nnm_algorithm_name(r.algorithm), v.first, v.second, (long long)v.step);
    }
    CHECK(v.peak_bytes == max_end(b, offsets, n));
    return r;
}

static nnm_plan_result plan_with(nnm_planner *p, uint32_t algorithm, const test_buffer *b, size_t n,
                                 uint64_t *offsets) {
    CHECK_OK(nnm_planner_set_algorithm(p, algorithm));
    CHECK_OK(nnm_planner_plan(p));
    nnm_plan_result r = check_plan(p, b, n, offsets);
    if (algorithm != NNM_ALGORITHM_AUTO) CHECK(r.algorithm == algorithm);
    return r;
}

static void draw_ok(nnm_planner *p, const char *expect);

/* Adding after a plan drops the plan (queries say WRONG_STATE) and the next
 * nnm_planner_plan plans everything, as a fresh planner would; a refused add
 * keeps the plan. */
static void test_add_after_plan(void) {
    static const test_buffer first[] = {{100, 0, 1, 0, 0}, {50, 1, 2, 0, 0}, {70, 2, 3, 0, 0}};
    /* 20 B is smaller than every buffer planned before: TFLM walks only it.
     * 200 B is larger: TFLM plans everything again. Same offsets either way. */
    static const test_buffer later[] = {{20, 0, 3, 0, 0}, {200, 4, 4, 0, 0}, {8, 1, 1, 1, 96}};
    for (size_t a = 0; a < COUNT_OF(ALL_ALGORITHMS); ++a) {
        nnm_planner *p = new_planner();
        CHECK_OK(nnm_planner_set_algorithm(p, ALL_ALGORITHMS[a]));
        add_all(p, first, COUNT_OF(first));
        CHECK_OK(nnm_planner_plan(p));
        test_buffer all[6];
        memcpy(all, first, sizeof first);
        for (size_t k = 0; k < COUNT_OF(later); ++k) {
            size_t index = 99;
            /* Refused: the plan stays. */
            CHECK_FAILS(nnm_planner_add_buffer(p, 8, 3, 2, &index), NNM_INVALID_ARGUMENT);
            uint64_t u64 = SENTINEL;
            CHECK_OK(nnm_planner_get_offset(p, 0, &u64));
            if (later[k].fixed) {
                CHECK_OK(nnm_planner_add_fixed_buffer(p, later[k].size, later[k].first_use, later[k].last_use,
                                                      later[k].offset, &index));
            } else {
                CHECK_OK(nnm_planner_add_buffer(p, later[k].size, later[k].first_use, later[k].last_use, &index));
            }
            CHECK(index == COUNT_OF(first) + k);
            all[COUNT_OF(first) + k] = later[k];
            size_t n = COUNT_OF(first) + k + 1;
            u64 = SENTINEL;
            CHECK_FAILS(nnm_planner_get_offset(p, 0, &u64), NNM_WRONG_STATE);
            CHECK_FAILS(nnm_planner_required_bytes(p, &u64), NNM_WRONG_STATE);
            CHECK(u64 == SENTINEL);
            CHECK_OK(nnm_planner_plan(p));
            uint64_t got[6], want[6];
            nnm_plan_result r = check_plan(p, all, n, got);
            nnm_planner *fresh = new_planner();
            CHECK_OK(nnm_planner_set_algorithm(fresh, ALL_ALGORITHMS[a]));
            add_all(fresh, all, n);
            CHECK_OK(nnm_planner_plan(fresh));
            nnm_plan_result rf = check_plan(fresh, all, n, want);
            CHECK(memcmp(got, want, n * sizeof got[0]) == 0);
            CHECK(r.peak_bytes == rf.peak_bytes);
            nnm_planner_free(fresh);
        }
        nnm_planner_free(p);
    }
}

/* TFLite Micro's lifetimes: 100 B and 50 B never used (-1, -1) and 30 B at
 * steps 0 and 1. TFLite Micro's GreedyMemoryPlanner places them at 0, 100 and
 * 0 with an arena of 150 B (never-used tensors live at step -1, together);
 * TFLM must agree, every other algorithm lets them occupy nothing. */
static void test_tflite_micro_lifetimes(void) {
    static const test_buffer b[] = {
        {100, NNM_UNUSED_STEP, NNM_UNUSED_STEP, 0, 0},
        {50, NNM_UNUSED_STEP, NNM_UNUSED_STEP, 0, 0},
        {30, 0, 1, 0, 0},
    };
    for (size_t a = 0; a < COUNT_OF(ALL_ALGORITHMS); ++a) {
        nnm_planner *p = new_planner();
        CHECK_OK(nnm_planner_set_algorithm(p, ALL_ALGORITHMS[a]));
        add_all(p, b, COUNT_OF(b));
        uint64_t bound = SENTINEL, required = SENTINEL, offsets[3];
        CHECK_OK(nnm_planner_lower_bound(p, &bound));
        CHECK_OK(nnm_planner_plan(p));
        CHECK_OK(nnm_planner_required_bytes(p, &required));
        CHECK_OK(nnm_planner_get_offsets(p, offsets, 3));
        if (ALL_ALGORITHMS[a] == NNM_ALGORITHM_TFLM) {
            CHECK(offsets[0] == 0 && offsets[1] == 100 && offsets[2] == 0);
            CHECK(required == 150 && bound == 150);
            draw_ok(p, "1 (id=1): size=50, offset=100, first_used=-1 last_used=-1\n");
        } else {
            CHECK(bound == 30);
            if (ALL_ALGORITHMS[a] != NNM_ALGORITHM_LINEAR) CHECK(required == 30);
        }
        /* The buffers read back as added. */
        nnm_plan_buffer got;
        CHECK_OK(nnm_planner_get_buffer(p, 1, &got));
        CHECK(got.size == 50 && got.first_use == -1 && got.last_use == -1 && got.offset == offsets[1]);
        nnm_planner_free(p);
    }

    /* A first use of -1 with a last use of 0 or more: live before the first
     * step, under every algorithm (here it meets (-1, 0) and (0, 2)). */
    static const test_buffer read_only[] = {
        {16, NNM_UNUSED_STEP, 1, 0, 0}, {8, NNM_UNUSED_STEP, 0, 0, 0}, {8, 0, 2, 0, 0}};
    for (size_t a = 0; a < COUNT_OF(ALL_ALGORITHMS); ++a) {
        nnm_planner *p = new_planner();
        uint64_t offsets[3];
        add_all(p, read_only, COUNT_OF(read_only));
        nnm_plan_result r = plan_with(p, ALL_ALGORITHMS[a], read_only, COUNT_OF(read_only), offsets);
        CHECK(r.lower_bound_bytes == 32);
        nnm_plan_buffer got;
        CHECK_OK(nnm_planner_get_buffer(p, 0, &got));
        CHECK(got.size == 16 && got.first_use == -1 && got.last_use == 1 && got.offset == offsets[0]);
        nnm_planner_free(p);
    }
}

/* nnm_planner_get_buffer: sizes rounded to the alignment, lifetimes as added,
 * every documented error. */
static void test_get_buffer(void) {
    nnm_planner *p = new_planner();
    nnm_plan_buffer b;
    memset(&b, 0x5e, sizeof b);
    nnm_plan_buffer untouched = b;
    CHECK_OK(nnm_planner_set_alignment(p, 16));
    CHECK_OK(nnm_planner_add_buffer(p, 10, 2, 4, NULL));
    CHECK_OK(nnm_planner_add_fixed_buffer(p, 1, 0, 0, 64, NULL));
    CHECK_FAILS(nnm_planner_get_buffer(p, 0, &b), NNM_WRONG_STATE);
    CHECK_OK(nnm_planner_plan(p));
    CHECK_FAILS(nnm_planner_get_buffer(NULL, 0, &b), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_get_buffer(p, 0, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_get_buffer(p, 2, &b), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_get_buffer(p, (size_t)-1, &b), NNM_INVALID_ARGUMENT);
    CHECK(memcmp(&b, &untouched, sizeof b) == 0);
    CHECK_OK(nnm_planner_get_buffer(p, 0, &b));
    CHECK(b.size == 16 && b.first_use == 2 && b.last_use == 4 && b.offset == 0);
    CHECK_OK(nnm_planner_get_buffer(p, 1, &b));
    CHECK(b.size == 16 && b.first_use == 0 && b.last_use == 0 && b.offset == 64);
    nnm_planner_free(p);
}

/* ---- the library as a whole ------------------------------------------------ */

static void test_last_error_starts_empty(void) {
    const char *err = nnm_last_error();
    CHECK(err != NULL);
    CHECK(err != NULL && strcmp(err, "") == 0);
}

static void test_version(void) {
    char macros[32];
    snprintf(macros, sizeof macros, "%d.%d.%d", NNM_VERSION_MAJOR, NNM_VERSION_MINOR,
             NNM_VERSION_PATCH);
    CHECK(strcmp(macros, NNM_VERSION_STRING) == 0);
    CHECK(nnm_version() != NULL);
    CHECK(strcmp(nnm_version(), NNM_VERSION_STRING) == 0);
    /* ...and all of them agree with Cargo.toml, which CMake read. */
    CHECK(strcmp(nnm_version(), NNM_EXPECTED_VERSION) == 0);
}

static void test_status_str(void) {
    static const int codes[] = {
        NNM_OK,          NNM_NULL_ARGUMENT, NNM_INVALID_ARGUMENT, NNM_OUT_OF_MEMORY,
        NNM_DOES_NOT_FIT, NNM_OVERFLOW,     NNM_NOT_FOUND,        NNM_ALREADY_EXISTS,
        NNM_WRONG_STATE, NNM_BUSY,          NNM_CANCELLED,        NNM_BUFFER_TOO_SMALL,
        NNM_PANIC,       NNM_CORRUPTED,     NNM_CALLBACK_FAILED,
    };
    for (size_t i = 0; i < COUNT_OF(codes); ++i) {
        CHECK(codes[i] == (int)i); /* dense, in documented order */
        const char *s = nnm_status_str(codes[i]);
        CHECK(s != NULL && s[0] != '\0');
        CHECK(s != NULL && strcmp(s, "unknown status") != 0);
        CHECK(s == nnm_status_str(codes[i])); /* static, not rebuilt per call */
        for (size_t j = 0; j < i; ++j) {
            CHECK(s != NULL && strcmp(s, nnm_status_str(codes[j])) != 0);
        }
    }
    static const int unknown[] = {-1, 15, 1000, INT32_MIN};
    for (size_t i = 0; i < COUNT_OF(unknown); ++i) {
        const char *s = nnm_status_str(unknown[i]);
        CHECK(s != NULL && strcmp(s, "unknown status") == 0);
    }
}

static void test_algorithm_names(void) {
    for (size_t i = 0; i < COUNT_OF(ALL_ALGORITHMS); ++i) {
        uint32_t a = UINT32_MAX;
        CHECK_OK(nnm_algorithm_from_name(ALL_ALGORITHM_NAMES[i], &a));
        CHECK(a == ALL_ALGORITHMS[i]);
        const char *name = nnm_algorithm_name(ALL_ALGORITHMS[i]);
        CHECK(name != NULL && strcmp(name, ALL_ALGORITHM_NAMES[i]) == 0);
    }
    CHECK(nnm_algorithm_name((uint32_t)COUNT_OF(ALL_ALGORITHMS)) == NULL);
    CHECK(nnm_algorithm_name(UINT32_MAX) == NULL);

    uint32_t a = 12345;
    CHECK_FAILS(nnm_algorithm_from_name("no-such-algorithm", &a), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_algorithm_from_name("", &a), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_algorithm_from_name(NULL, &a), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_algorithm_from_name("tflm", NULL), NNM_NULL_ARGUMENT);
    CHECK(a == 12345);
}

/* ---- planner: argument checking ------------------------------------------- */

static void test_null_arguments(void) {
    CHECK_FAILS(nnm_planner_new(NULL), NNM_NULL_ARGUMENT);
    nnm_planner_free(NULL); /* accepted, does nothing */

    uint64_t u64 = SENTINEL;
    size_t sz = 77;
    nnm_plan_result r;
    memset(&r, 0xAB, sizeof r);
    char text[16] = "untouched";

    CHECK_FAILS(nnm_planner_set_algorithm(NULL, NNM_ALGORITHM_TFLM), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_set_algorithm_name(NULL, "tflm"), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_set_alignment(NULL, 16), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_set_capacity(NULL, 1024), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_set_time_limit(NULL, 1.0), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_add_buffer(NULL, 16, 0, 1, &sz), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_add_fixed_buffer(NULL, 16, 0, 1, 0, &sz), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_plan(NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_get_offset(NULL, 0, &u64), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_get_offsets(NULL, &u64, 1), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_get_result(NULL, &r), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_lower_bound(NULL, &u64), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_required_bytes(NULL, &u64), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_buffer_count(NULL, &sz), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_reset(NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_draw(NULL, text, sizeof text, &sz), NNM_NULL_ARGUMENT);
    CHECK(u64 == SENTINEL);
    CHECK(sz == 77);
    CHECK(strcmp(text, "untouched") == 0);

    /* A real planner, NULL out-params and names. */
    nnm_planner *p = new_planner();
    CHECK_FAILS(nnm_planner_set_algorithm_name(p, NULL), NNM_NULL_ARGUMENT);
    CHECK_OK(nnm_planner_add_buffer(p, 16, 0, 1, NULL)); /* out_index may be NULL */
    CHECK_OK(nnm_planner_add_fixed_buffer(p, 16, 2, 3, 64, NULL));
    CHECK_FAILS(nnm_planner_lower_bound(p, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_buffer_count(p, NULL), NNM_NULL_ARGUMENT);
    CHECK_OK(nnm_planner_plan(p));
    CHECK_FAILS(nnm_planner_get_offset(p, 0, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_get_offsets(p, NULL, 2), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_get_result(p, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_required_bytes(p, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_draw(p, text, sizeof text, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_planner_draw(p, NULL, 16, &sz), NNM_NULL_ARGUMENT); /* NULL buf, len != 0 */
    CHECK(sz == 77);
    nnm_planner_free(p);
}

static void test_buffer_arguments(void) {
    nnm_planner *p = new_planner();
    size_t index = 99;

    /* Zero size is legal, and so is a buffer that is never used (-1, -1). */
    CHECK_OK(nnm_planner_add_buffer(p, 0, 0, 3, &index));
    CHECK(index == 0);
    CHECK_OK(nnm_planner_add_buffer(p, 32, NNM_UNUSED_STEP, NNM_UNUSED_STEP, &index));
    CHECK(index == 1);
    CHECK_OK(nnm_planner_add_buffer(p, 8, 5, 5, &index)); /* one step: first == last */
    CHECK(index == 2);
    /* Live from before the first step: TFLite Micro's tensors read but never
     * produced. */
    CHECK_OK(nnm_planner_add_buffer(p, 8, NNM_UNUSED_STEP, 2, &index));
    CHECK(index == 3);

    index = 99;
    CHECK_FAILS(nnm_planner_add_buffer(p, 8, 3, 2, &index), NNM_INVALID_ARGUMENT); /* reversed */
    CHECK_FAILS(nnm_planner_add_buffer(p, 8, -2, 2, &index), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_add_buffer(p, 8, 0, -1, &index), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_add_buffer(p, 8, 5, -1, &index), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_add_buffer(p, 8, -2, -2, &index), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_add_buffer(p, 8, INT64_MIN, 4, &index), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_add_fixed_buffer(p, 8, 3, 2, 0, &index), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_add_fixed_buffer(p, 8, -3, -3, 0, &index), NNM_INVALID_ARGUMENT);
    CHECK(index == 99);

    size_t count = 0;
    CHECK_OK(nnm_planner_buffer_count(p, &count));
    CHECK(count == 4); /* nothing half-added by the failures */

    /* Alignment may change only while the planner holds no buffer. */
    CHECK_FAILS(nnm_planner_set_alignment(p, 16), NNM_WRONG_STATE);
    CHECK_OK(nnm_planner_reset(p));
    CHECK_OK(nnm_planner_buffer_count(p, &count));
    CHECK(count == 0);
    CHECK_FAILS(nnm_planner_set_alignment(p, 0), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_set_alignment(p, 24), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_set_alignment(p, UINT64_MAX), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_set_alignment(p, (UINT64_C(1) << 63) + 1), NNM_INVALID_ARGUMENT);
    CHECK_OK(nnm_planner_set_alignment(p, 1));
    CHECK_OK(nnm_planner_set_alignment(p, UINT64_C(1) << 63));
    CHECK_OK(nnm_planner_set_alignment(p, 16));

    /* Fixed offsets must respect the alignment. */
    CHECK_FAILS(nnm_planner_add_fixed_buffer(p, 16, 0, 1, 8, &index), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_add_fixed_buffer(p, 16, 0, 1, 1, &index), NNM_INVALID_ARGUMENT);
    CHECK_OK(nnm_planner_add_fixed_buffer(p, 16, 0, 1, 32, &index));
    CHECK(index == 0);

    /* Algorithms: unknown values and names are refused, the setting is kept. */
    CHECK_FAILS(nnm_planner_set_algorithm(p, (uint32_t)COUNT_OF(ALL_ALGORITHMS)),
                NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_set_algorithm(p, UINT32_MAX), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_set_algorithm_name(p, "best"), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_set_algorithm_name(p, ""), NNM_INVALID_ARGUMENT);
    for (size_t i = 0; i < COUNT_OF(ALL_ALGORITHMS); ++i) {
        CHECK_OK(nnm_planner_set_algorithm(p, ALL_ALGORITHMS[i]));
        CHECK_OK(nnm_planner_set_algorithm_name(p, ALL_ALGORITHM_NAMES[i]));
    }

    /* Time limit: positive and finite. */
    CHECK_OK(nnm_planner_set_time_limit(p, 0.25));
    CHECK_OK(nnm_planner_set_time_limit(p, 1e-9));
    CHECK_FAILS(nnm_planner_set_time_limit(p, 0.0), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_set_time_limit(p, -1.0), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_set_time_limit(p, (double)NAN), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_set_time_limit(p, (double)INFINITY), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_set_time_limit(p, -(double)INFINITY), NNM_INVALID_ARGUMENT);

    /* Capacity: any value, 0 meaning none. */
    CHECK_OK(nnm_planner_set_capacity(p, 0));
    CHECK_OK(nnm_planner_set_capacity(p, UINT64_MAX));
    nnm_planner_free(p);
}

/* ---- planner: order of calls ---------------------------------------------- */

static void test_wrong_state(void) {
    nnm_planner *p = new_planner();
    uint64_t u64 = SENTINEL;
    uint64_t offsets[2] = {SENTINEL, SENTINEL};
    nnm_plan_result r;
    memset(&r, 0, sizeof r);
    size_t written = 77;
    char text[64];

    CHECK_OK(nnm_planner_set_alignment(p, 1));
    CHECK_OK(nnm_planner_add_buffer(p, 8, 0, 1, NULL));
    CHECK_OK(nnm_planner_add_buffer(p, 8, 1, 2, NULL));

    /* Queries before plan. */
    CHECK_FAILS(nnm_planner_get_offset(p, 0, &u64), NNM_WRONG_STATE);
    CHECK_FAILS(nnm_planner_get_offsets(p, offsets, 2), NNM_WRONG_STATE);
    CHECK_FAILS(nnm_planner_get_result(p, &r), NNM_WRONG_STATE);
    CHECK_FAILS(nnm_planner_required_bytes(p, &u64), NNM_WRONG_STATE);
    CHECK_FAILS(nnm_planner_draw(p, NULL, 0, &written), NNM_WRONG_STATE);
    CHECK_FAILS(nnm_planner_draw(p, text, sizeof text, &written), NNM_WRONG_STATE);
    CHECK(u64 == SENTINEL && offsets[0] == SENTINEL && offsets[1] == SENTINEL && written == 77);
    /* ...but the lower bound and the count are there at any time. */
    CHECK_OK(nnm_planner_lower_bound(p, &u64));
    CHECK(u64 == 16); /* both live at step 1 */

    CHECK_OK(nnm_planner_plan(p));

    /* Planning twice without adding is refused. */
    CHECK_FAILS(nnm_planner_plan(p), NNM_WRONG_STATE);
    size_t count = 0;
    CHECK_OK(nnm_planner_buffer_count(p, &count));
    CHECK(count == 2);

    /* Out-of-range indices and a wrong count. */
    u64 = SENTINEL;
    CHECK_NOT_OK(nnm_planner_get_offset(p, 2, &u64));
    CHECK_NOT_OK(nnm_planner_get_offset(p, (size_t)-1, &u64));
    CHECK(u64 == SENTINEL);
    uint64_t three[3] = {SENTINEL, SENTINEL, SENTINEL};
    CHECK_FAILS(nnm_planner_get_offsets(p, three, 3), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_get_offsets(p, three, 1), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_get_offsets(p, three, 0), NNM_INVALID_ARGUMENT);
    CHECK(three[0] == SENTINEL && three[1] == SENTINEL && three[2] == SENTINEL);
    CHECK_OK(nnm_planner_get_offsets(p, three, 2));

    /* Reset drops buffers and plan. */
    CHECK_OK(nnm_planner_reset(p));
    CHECK_OK(nnm_planner_buffer_count(p, &count));
    CHECK(count == 0);
    CHECK_FAILS(nnm_planner_get_result(p, &r), NNM_WRONG_STATE);
    size_t index = 99;
    CHECK_OK(nnm_planner_add_buffer(p, 8, 0, 1, &index));
    CHECK(index == 0);
    nnm_planner_free(p);

    /* A fresh planner: nothing planned yet. */
    p = new_planner();
    CHECK_FAILS(nnm_planner_required_bytes(p, &u64), NNM_WRONG_STATE);
    CHECK_OK(nnm_planner_lower_bound(p, &u64));
    CHECK(u64 == 0);
    nnm_planner_free(p);
}

static void test_empty_plan(void) {
    nnm_planner *p = new_planner();
    CHECK_OK(nnm_planner_plan(p));
    nnm_plan_result r;
    memset(&r, 0xAB, sizeof r);
    CHECK_OK(nnm_planner_get_result(p, &r));
    CHECK(r.peak_bytes == 0 && r.lower_bound_bytes == 0 && r.buffer_count == 0 && r.fits == 1);
    nnm_planner_free(p);
}

/* ---- planner: plans and their values -------------------------------------- */

static void test_minimalloc_example(void) {
    const size_t n = COUNT_OF(MINIMALLOC);
    uint64_t offsets[MAX_BUFFERS];
    nnm_planner *p = new_planner();
    CHECK_OK(nnm_planner_set_alignment(p, 1));
    add_all(p, MINIMALLOC, n);

    uint64_t lower = SENTINEL;
    CHECK_OK(nnm_planner_lower_bound(p, &lower)); /* before plan */
    CHECK(lower == 12);

    CHECK_OK(nnm_planner_set_time_limit(p, 5.0));
    nnm_plan_result r = plan_with(p, NNM_ALGORITHM_AUTO, MINIMALLOC, n, offsets);
    CHECK(r.lower_bound_bytes == 12);
    CHECK(r.peak_bytes == 12);
    CHECK(r.proven_optimal == 1);
    CHECK(r.buffer_count == 5);
    CHECK(r.algorithm != NNM_ALGORITHM_AUTO); /* reports the algorithm that ran */
    CHECK(r.plan_time_ns < UINT64_C(60000000000));

    /* Zero-size and never-used buffers change nothing. */
    test_buffer extended[MAX_BUFFERS];
    memcpy(extended, MINIMALLOC, sizeof MINIMALLOC);
    const test_buffer zero = {0, 0, 20, 0, 0};
    const test_buffer unused = {1000, NNM_UNUSED_STEP, NNM_UNUSED_STEP, 0, 0};
    extended[n] = zero;
    extended[n + 1] = unused;
    CHECK_OK(nnm_planner_reset(p));
    add_all(p, extended, n + 2);
    CHECK_OK(nnm_planner_lower_bound(p, &lower));
    CHECK(lower == 12);
    r = plan_with(p, NNM_ALGORITHM_AUTO, extended, n + 2, offsets);
    CHECK(r.peak_bytes == 12);
    CHECK(r.proven_optimal == 1);
    nnm_planner_free(p);
}

/*
 * TFLite Micro's GreedyMemoryPlanner, reproduced exactly by "tflm".
 * Its rule: order buffers by size, largest first; ties go to the buffer added
 * LATER (online buffers are copied into the sort array from the tail, then
 * bubble-sorted descending, which is stable). Each buffer goes at the lowest
 * offset where it overlaps no already-placed buffer that is live at one of its
 * steps (steps inclusive).
 */
static void test_tflm_exact(void) {
    uint64_t offsets[MAX_BUFFERS];
    nnm_planner *p = new_planner();
    CHECK_OK(nnm_planner_set_alignment(p, 1));
    CHECK_OK(nnm_planner_set_algorithm_name(p, "tflm"));

    /*
     * b0 (100, steps 0..1), b1 (50, 1..2), b2 (70, 2..3), b3 (40, 3..4).
     * Order by size: b0 100, b2 70, b1 50, b3 40.
     *   b0 -> 0                 nothing placed            [0,100)
     *   b2 -> 0                 b0 ends at step 1 < 2     [0,70)
     *   b1 -> 100               shares step 1 with b0 [0,100) and step 2
     *                           with b2 [0,70): first gap is after 100
     *   b3 -> 70                shares step 3 with b2 [0,70) only
     * Offsets b0..b3 = 0, 100, 0, 70; peak 150 (step 1: b0 + b1),
     * lower bound 150 (step 1: 100 + 50).
     */
    add_all(p, TFLM_CHAIN, COUNT_OF(TFLM_CHAIN));
    nnm_plan_result r = plan_with(p, NNM_ALGORITHM_TFLM, TFLM_CHAIN, COUNT_OF(TFLM_CHAIN), offsets);
    CHECK(offsets[0] == 0);
    CHECK(offsets[1] == 100);
    CHECK(offsets[2] == 0);
    CHECK(offsets[3] == 70);
    CHECK(r.peak_bytes == 150);
    CHECK(r.lower_bound_bytes == 150);

    /*
     * Tie-break: a0 (10, 0..1), a1 (10, 0..1), a2 (20, 1..2).
     * Order: a2 20, then the tie a1 before a0 (added later).
     *   a2 -> 0                 [0,20)
     *   a1 -> 20                shares step 1 with a2 [0,20)
     *   a0 -> 30                shares steps with a2 [0,20) and a1 [20,30)
     * Offsets a0..a2 = 30, 20, 0; peak 40.
     */
    static const test_buffer ties[] = {{10, 0, 1, 0, 0}, {10, 0, 1, 0, 0}, {20, 1, 2, 0, 0}};
    CHECK_OK(nnm_planner_reset(p));
    add_all(p, ties, COUNT_OF(ties));
    r = plan_with(p, NNM_ALGORITHM_TFLM, ties, COUNT_OF(ties), offsets);
    CHECK(offsets[0] == 30);
    CHECK(offsets[1] == 20);
    CHECK(offsets[2] == 0);
    CHECK(r.peak_bytes == 40);

    /* "linear" is TFLM's LinearMemoryPlanner: back to back, in order added. */
    CHECK_OK(nnm_planner_reset(p));
    add_all(p, TFLM_CHAIN, COUNT_OF(TFLM_CHAIN));
    r = plan_with(p, NNM_ALGORITHM_LINEAR, TFLM_CHAIN, COUNT_OF(TFLM_CHAIN), offsets);
    CHECK(offsets[0] == 0 && offsets[1] == 100 && offsets[2] == 150 && offsets[3] == 220);
    CHECK(r.peak_bytes == 260);
    nnm_planner_free(p);
}

/* A deterministic pseudo-random instance (LCG), with some zero-size and unused buffers. */
static size_t make_random_instance(test_buffer *b, size_t n, uint32_t seed) {
    uint32_t x = seed;
    for (size_t i = 0; i < n; ++i) {
        x = x * 1664525u + 1013904223u;
        b[i].size = (i % 11 == 3) ? 0 : 1 + (x >> 8) % 4096;
        x = x * 1664525u + 1013904223u;
        b[i].first_use = (int64_t)((x >> 8) % 40);
        x = x * 1664525u + 1013904223u;
        b[i].last_use = b[i].first_use + (int64_t)((x >> 8) % 12);
        b[i].fixed = 0;
        b[i].offset = 0;
        if (i % 13 == 7) b[i].first_use = b[i].last_use = NNM_UNUSED_STEP;
    }
    return n;
}

static void test_every_algorithm(void) {
    uint64_t offsets[MAX_BUFFERS];
    test_buffer random_a[MAX_BUFFERS], random_b[MAX_BUFFERS];
    const size_t na = make_random_instance(random_a, 24, 1u);
    const size_t nb = make_random_instance(random_b, 40, 20240601u);

    /* MiniMalloc example plus a fixed buffer placed far above it. */
    test_buffer with_fixed[MAX_BUFFERS];
    memcpy(with_fixed, MINIMALLOC, sizeof MINIMALLOC);
    const test_buffer fixed = {4, 0, 20, 1, 100};
    with_fixed[COUNT_OF(MINIMALLOC)] = fixed;
    const size_t nf = COUNT_OF(MINIMALLOC) + 1;

    /* Everything live at step 0: with alignment 16 each takes a 16-byte slot,
     * the 17-byte one two. Lower bound 16*4 + 32 = 96. */
    static const test_buffer odd_sizes[] = {
        {3, 0, 1, 0, 0}, {5, 0, 2, 0, 0}, {7, 0, 0, 0, 0}, {16, 0, 3, 0, 0}, {17, 0, 1, 0, 0},
    };

    for (size_t a = 0; a < COUNT_OF(ALL_ALGORITHMS); ++a) {
        const uint32_t algo = ALL_ALGORITHMS[a];
        nnm_planner *p = new_planner();
        CHECK_OK(nnm_planner_set_alignment(p, 1));
        CHECK_OK(nnm_planner_set_time_limit(p, 0.5));

        add_all(p, MINIMALLOC, COUNT_OF(MINIMALLOC));
        nnm_plan_result r = plan_with(p, algo, MINIMALLOC, COUNT_OF(MINIMALLOC), offsets);
        CHECK(r.lower_bound_bytes == 12);

        CHECK_OK(nnm_planner_reset(p));
        add_all(p, TFLM_CHAIN, COUNT_OF(TFLM_CHAIN));
        r = plan_with(p, algo, TFLM_CHAIN, COUNT_OF(TFLM_CHAIN), offsets);
        CHECK(r.lower_bound_bytes == 150);

        CHECK_OK(nnm_planner_reset(p));
        add_all(p, with_fixed, nf);
        r = plan_with(p, algo, with_fixed, nf, offsets); /* checks offsets[5] == 100 */
        CHECK(r.peak_bytes >= 104);

        CHECK_OK(nnm_planner_reset(p));
        add_all(p, random_a, na);
        plan_with(p, algo, random_a, na, offsets);

        CHECK_OK(nnm_planner_reset(p));
        add_all(p, random_b, nb);
        plan_with(p, algo, random_b, nb, offsets);

        /* Alignment 16: every offset a multiple of 16. */
        CHECK_OK(nnm_planner_reset(p));
        CHECK_OK(nnm_planner_set_alignment(p, 16));
        add_all(p, odd_sizes, COUNT_OF(odd_sizes));
        r = plan_with(p, algo, odd_sizes, COUNT_OF(odd_sizes), offsets);
        CHECK(r.lower_bound_bytes == 96);
        CHECK(r.peak_bytes >= 96);
        for (size_t i = 0; i < COUNT_OF(odd_sizes); ++i) CHECK(offsets[i] % 16 == 0);

        CHECK_OK(nnm_planner_reset(p));
        add_all(p, random_b, nb);
        plan_with(p, algo, random_b, nb, offsets);
        for (size_t i = 0; i < nb; ++i) CHECK(offsets[i] % 16 == 0);
        nnm_planner_free(p);
    }
}

static void test_fixed_buffers(void) {
    uint64_t offsets[MAX_BUFFERS];
    nnm_planner *p = new_planner();
    CHECK_OK(nnm_planner_set_alignment(p, 8));
    /* Two fixed buffers sharing bytes but not steps are fine... */
    static const test_buffer ok[] = {
        {16, 0, 1, 1, 0}, {16, 2, 3, 1, 8}, {8, 0, 3, 0, 0}, {0, 1, 1, 1, 1024},
    };
    add_all(p, ok, COUNT_OF(ok));
    CHECK_OK(nnm_planner_plan(p));
    check_plan(p, ok, COUNT_OF(ok), offsets);
    CHECK(offsets[0] == 0 && offsets[1] == 8 && offsets[3] == 1024);
    CHECK(offsets[2] >= 24);

    /* ...sharing both is an impossible offline plan. */
    static const test_buffer clash[] = {{16, 0, 1, 1, 0}, {16, 1, 3, 1, 8}};
    CHECK_OK(nnm_planner_reset(p));
    add_all(p, clash, COUNT_OF(clash));
    CHECK_FAILS(nnm_planner_plan(p), NNM_INVALID_ARGUMENT);
    nnm_planner_free(p);
}

/* Handles: a double free and a pointer nnmem never made are detected and
 * reported through nnm_last_error(); a non-planner pointer is refused by the
 * type tag. (Both are defined behaviour of this API, not of C in general.) */
static void test_bad_handles(void) {
    nnm_planner *p = new_planner();
    nnm_planner_free(p);
    CHECK_FAILS(nnm_planner_new(NULL), NNM_NULL_ARGUMENT); /* a known, different message */
    char before[256];
    snprintf(before, sizeof before, "%s", nnm_last_error());
    nnm_planner_free(p); /* double free: reported, otherwise ignored */
    CHECK(nnm_check_has_message() && strcmp(nnm_last_error(), before) != 0);

    static uint64_t not_a_planner[512]; /* zeroed, larger than any planner */
    nnm_planner *fake = (nnm_planner *)(void *)not_a_planner;
    CHECK_FAILS(nnm_planner_new(NULL), NNM_NULL_ARGUMENT);
    nnm_planner_free(fake); /* never made by nnmem: reported, left alone */
    CHECK(nnm_check_has_message() && strcmp(nnm_last_error(), before) != 0);
    CHECK_FAILS(nnm_planner_plan(fake), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_add_buffer(fake, 8, 0, 1, NULL), NNM_INVALID_ARGUMENT);
    size_t count = 77;
    CHECK_FAILS(nnm_planner_buffer_count(fake, &count), NNM_INVALID_ARGUMENT);
    CHECK(count == 77);
    int untouched = 1;
    for (size_t i = 0; i < COUNT_OF(not_a_planner); ++i) untouched &= not_a_planner[i] == 0;
    CHECK(untouched);
}

static void test_settings_survive_reset(void) {
    uint64_t offsets[MAX_BUFFERS];
    nnm_planner *p = new_planner();
    CHECK_OK(nnm_planner_set_alignment(p, 64));
    CHECK_OK(nnm_planner_set_algorithm_name(p, "size-best-fit"));
    CHECK_OK(nnm_planner_add_buffer(p, 1, 0, 0, NULL));
    CHECK_OK(nnm_planner_plan(p));
    CHECK_OK(nnm_planner_reset(p));

    static const test_buffer two[] = {{1, 0, 1, 0, 0}, {1, 1, 2, 0, 0}};
    add_all(p, two, COUNT_OF(two));
    CHECK_OK(nnm_planner_plan(p));
    nnm_plan_result r = check_plan(p, two, COUNT_OF(two), offsets);
    CHECK(r.algorithm == NNM_ALGORITHM_SIZE_BEST_FIT);
    CHECK(offsets[0] % 64 == 0 && offsets[1] % 64 == 0);
    CHECK(r.lower_bound_bytes == 128);
    nnm_planner_free(p);
}

static void test_capacity(void) {
    uint64_t offsets[MAX_BUFFERS];
    nnm_planner *p = new_planner();
    CHECK_OK(nnm_planner_set_alignment(p, 1));
    /* Below the lower bound (12) no plan can fit: refused at once, with both
     * figures, no search and no plan; the planner is still collecting. */
    CHECK_OK(nnm_planner_set_capacity(p, 11));
    add_all(p, MINIMALLOC, COUNT_OF(MINIMALLOC));
    CHECK_FAILS(nnm_planner_plan(p), NNM_DOES_NOT_FIT);
    CHECK(strstr(nnm_last_error(), "capacity 11 B is below the lower bound 12 B") != NULL);
    uint64_t required = SENTINEL;
    CHECK_FAILS(nnm_planner_required_bytes(p, &required), NNM_WRONG_STATE);
    CHECK(required == SENTINEL);
    CHECK_OK(nnm_planner_set_capacity(p, 12)); /* exactly enough fits */
    CHECK_OK(nnm_planner_plan(p));
    nnm_plan_result r = check_plan(p, MINIMALLOC, COUNT_OF(MINIMALLOC), offsets);
    CHECK(r.peak_bytes == 12 && r.fits == 1);

    /* Above the bound but below what the algorithm reaches: linear stacks all
     * five buffers (20 B). The plan is kept, marked as not fitting. */
    CHECK_OK(nnm_planner_reset(p));
    CHECK_OK(nnm_planner_set_algorithm(p, NNM_ALGORITHM_LINEAR));
    CHECK_OK(nnm_planner_set_capacity(p, 19));
    add_all(p, MINIMALLOC, COUNT_OF(MINIMALLOC));
    CHECK_FAILS(nnm_planner_plan(p), NNM_DOES_NOT_FIT);
    CHECK(strstr(nnm_last_error(), "requested 20 B, available 19 B, missing 1 B") != NULL);
    CHECK_OK(nnm_planner_required_bytes(p, &required));
    CHECK(required == 20);
    memset(&r, 0, sizeof r);
    CHECK_OK(nnm_planner_get_result(p, &r));
    CHECK(r.fits == 0);
    CHECK(r.peak_bytes == 20);
    CHECK_OK(nnm_planner_get_offsets(p, offsets, COUNT_OF(MINIMALLOC)));
    CHECK(max_end(MINIMALLOC, offsets, COUNT_OF(MINIMALLOC)) == 20);

    /* Capacity is a setting: it survives reset. */
    CHECK_OK(nnm_planner_reset(p));
    add_all(p, MINIMALLOC, COUNT_OF(MINIMALLOC));
    CHECK_FAILS(nnm_planner_plan(p), NNM_DOES_NOT_FIT);
    CHECK_OK(nnm_planner_reset(p));
    CHECK_OK(nnm_planner_set_capacity(p, 20));
    add_all(p, MINIMALLOC, COUNT_OF(MINIMALLOC));
    CHECK_OK(nnm_planner_plan(p));
    r = check_plan(p, MINIMALLOC, COUNT_OF(MINIMALLOC), offsets);
    CHECK(r.peak_bytes == 20 && r.fits == 1);

    /* 0 removes the capacity. */
    CHECK_OK(nnm_planner_reset(p));
    CHECK_OK(nnm_planner_set_capacity(p, 0));
    add_all(p, MINIMALLOC, COUNT_OF(MINIMALLOC));
    CHECK_OK(nnm_planner_plan(p));
    nnm_planner_free(p);
}

/* An overflowing instance must be refused with NNM_OVERFLOW, either when the
 * offending buffer is added or at the latest when planning (and, when the
 * overflow is in the sum of live sizes, when asked for the lower bound). */
static void expect_overflow(nnm_planner *p, int add_status, int in_lower_bound) {
    if (add_status == NNM_OK) {
        if (in_lower_bound) {
            uint64_t lower = SENTINEL;
            CHECK_FAILS(nnm_planner_lower_bound(p, &lower), NNM_OVERFLOW);
            CHECK(lower == SENTINEL);
        }
        CHECK_FAILS(nnm_planner_plan(p), NNM_OVERFLOW);
    } else {
        CHECK(add_status == NNM_OVERFLOW);
        CHECK(nnm_check_has_message());
    }
}

static void test_overflow(void) {
    nnm_planner *p = new_planner();
    size_t index = 99;

    /* Rounding up to the alignment overflows. */
    CHECK_OK(nnm_planner_set_alignment(p, 16));
    CHECK_FAILS(nnm_planner_add_buffer(p, UINT64_MAX, 0, 1, &index), NNM_OVERFLOW);
    CHECK_FAILS(nnm_planner_add_buffer(p, UINT64_MAX - 14, 0, 1, &index), NNM_OVERFLOW);
    CHECK_FAILS(nnm_planner_add_fixed_buffer(p, UINT64_MAX, 0, 1, 0, &index), NNM_OVERFLOW);
    CHECK(index == 99);
    /* The largest size that rounds up without overflow is accepted. */
    CHECK_OK(nnm_planner_add_buffer(p, UINT64_MAX - 15, 0, 1, &index));
    CHECK(index == 0);
    nnm_planner_free(p);

    /* Sizes live at the same step sum past 2^64. */
    p = new_planner();
    CHECK_OK(nnm_planner_set_alignment(p, 1));
    CHECK_OK(nnm_planner_add_buffer(p, UINT64_C(1) << 63, 0, 1, NULL));
    expect_overflow(p, nnm_planner_add_buffer(p, (UINT64_C(1) << 63) + 1, 1, 2, NULL), 1);
    nnm_planner_free(p);

    /* A fixed buffer whose end is past 2^64. */
    p = new_planner();
    CHECK_OK(nnm_planner_set_alignment(p, 1));
    expect_overflow(p, nnm_planner_add_fixed_buffer(p, 2, 0, 1, UINT64_MAX, NULL), 0);
    nnm_planner_free(p);

    /* Huge but representable: fine, lower bound exact. */
    p = new_planner();
    CHECK_OK(nnm_planner_set_alignment(p, 1));
    CHECK_OK(nnm_planner_add_buffer(p, UINT64_C(1) << 62, 0, 1, NULL));
    CHECK_OK(nnm_planner_add_buffer(p, UINT64_C(1) << 62, 1, 2, NULL));
    uint64_t lower = 0;
    CHECK_OK(nnm_planner_lower_bound(p, &lower));
    CHECK(lower == UINT64_C(1) << 63);
    nnm_planner_free(p);
}

static void test_draw(void) {
    nnm_planner *p = new_planner();
    CHECK_OK(nnm_planner_set_alignment(p, 1));
    add_all(p, MINIMALLOC, COUNT_OF(MINIMALLOC));
    CHECK_OK(nnm_planner_plan(p));

    size_t needed = 0;
    CHECK_OK(nnm_planner_draw(p, NULL, 0, &needed)); /* size query */
    CHECK(needed > 1);

    char small[8];
    char big[16384];
    CHECK(needed <= sizeof big); /* 5 buffers, a small picture */
    if (needed > sizeof big) {
        nnm_planner_free(p);
        return;
    }
    size_t written = 77;
    CHECK_FAILS(nnm_planner_draw(p, big, needed - 1, &written), NNM_BUFFER_TOO_SMALL);
    CHECK(written == 77);
    if (needed > sizeof small) {
        CHECK_FAILS(nnm_planner_draw(p, small, sizeof small, &written), NNM_BUFFER_TOO_SMALL);
        CHECK(written == 77);
    }

    memset(big, 'x', sizeof big);
    CHECK_OK(nnm_planner_draw(p, big, needed, &written));
    CHECK(written == needed);
    CHECK(big[needed - 1] == '\0');
    CHECK(strlen(big) == needed - 1);
    CHECK(strchr(big, '\n') != NULL); /* a picture, more than one line */

    /* A larger buffer than needed gets the same text. */
    written = 0;
    CHECK_OK(nnm_planner_draw(p, big, sizeof big, &written));
    CHECK(written == needed);
    CHECK(strlen(big) == needed - 1);
    nnm_planner_free(p);
}

static void test_validate(void) {
    nnm_validation v;

    /* A good plan: the optimal MiniMalloc packing (b1/b2/b4 share offset 0,
     * b3 at 4, b5 at 8). */
    nnm_plan_buffer good[5];
    static const uint64_t good_offsets[5] = {0, 0, 4, 0, 8};
    for (size_t i = 0; i < 5; ++i) {
        good[i].size = MINIMALLOC[i].size;
        good[i].first_use = MINIMALLOC[i].first_use;
        good[i].last_use = MINIMALLOC[i].last_use;
        good[i].offset = good_offsets[i];
    }
    memset(&v, 0xAB, sizeof v);
    CHECK_OK(nnm_plan_validate(good, 5, &v));
    CHECK(v.valid == 1);
    CHECK(v.peak_bytes == 12);

    /* A bad plan: c2 [4,12) overlaps c0 [0,8) at steps 2..3; c1 shares c0's
     * bytes but not its steps, c3 shares c2's bytes but is never used. */
    nnm_plan_buffer bad[4];
    const int64_t steps[4][2] = {{0, 3}, {5, 6}, {2, 4}, {NNM_UNUSED_STEP, NNM_UNUSED_STEP}};
    static const uint64_t bad_offsets[4] = {0, 0, 4, 4};
    for (size_t i = 0; i < 4; ++i) {
        bad[i].size = 8;
        bad[i].first_use = steps[i][0];
        bad[i].last_use = steps[i][1];
        bad[i].offset = bad_offsets[i];
    }
    memset(&v, 0xAB, sizeof v);
    CHECK_OK(nnm_plan_validate(bad, 4, &v));
    CHECK(v.valid == 0);
    CHECK(v.first == 0 && v.second == 2 && v.step == 2); /* first shared step */
    CHECK(nnm_check_has_message()); /* names the pair */

    /* Zero-size buffers overlap nothing. */
    nnm_plan_buffer zero[2];
    for (size_t i = 0; i < 2; ++i) {
        zero[i].size = i == 0 ? 0 : 8;
        zero[i].first_use = 0;
        zero[i].last_use = 1;
        zero[i].offset = 4;
    }
    CHECK_OK(nnm_plan_validate(zero, 2, &v));
    CHECK(v.valid == 1);

    /* No buffers at all is a valid (empty) plan. */
    CHECK_OK(nnm_plan_validate(good, 0, &v));
    CHECK(v.valid == 1 && v.peak_bytes == 0);

    memset(&v, 0xAB, sizeof v);
    CHECK_FAILS(nnm_plan_validate(NULL, 3, &v), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_plan_validate(good, 5, NULL), NNM_NULL_ARGUMENT);

    /* Malformed lifetimes, and an end past 2^64. */
    nnm_plan_buffer broken = good[0];
    broken.first_use = 3;
    broken.last_use = 2;
    CHECK_FAILS(nnm_plan_validate(&broken, 1, &v), NNM_INVALID_ARGUMENT);
    broken.first_use = -2;
    broken.last_use = 2;
    CHECK_FAILS(nnm_plan_validate(&broken, 1, &v), NNM_INVALID_ARGUMENT);
    broken.first_use = 2;
    broken.last_use = -1;
    CHECK_FAILS(nnm_plan_validate(&broken, 1, &v), NNM_INVALID_ARGUMENT);
    broken = good[0];
    broken.offset = UINT64_MAX - 1;
    broken.size = 2;
    CHECK_FAILS(nnm_plan_validate(&broken, 1, &v), NNM_OVERFLOW);
    CHECK(v.valid == 0xAB);
}

/* nnm_last_error() is per thread: another thread neither sees this thread's
 * message nor overwrites it. */
static char g_thread_message[256];
static int g_thread_started_empty;

static void *thread_body(void *arg) {
    (void)arg;
    g_thread_started_empty = strcmp(nnm_last_error(), "") == 0;
    if (nnm_planner_new(NULL) == NNM_NULL_ARGUMENT) {
        snprintf(g_thread_message, sizeof g_thread_message, "%s", nnm_last_error());
    }
    return NULL;
}

static void test_last_error_is_thread_local(void) {
    nnm_planner *p = new_planner();
    CHECK_FAILS(nnm_planner_set_alignment(p, 3), NNM_INVALID_ARGUMENT);
    char mine[256];
    snprintf(mine, sizeof mine, "%s", nnm_last_error());

    pthread_t t;
    CHECK(pthread_create(&t, NULL, thread_body, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(g_thread_started_empty);
    CHECK(g_thread_message[0] != '\0');
    CHECK(strcmp(nnm_last_error(), mine) == 0);
    CHECK(strcmp(g_thread_message, mine) != 0);
    nnm_planner_free(p);
}

/* ---- offline plans whose fixed buffers overlap (TFLite Micro trusts them) -- */

/* TFLite Micro's micro_allocator_test.cc, OfflinePlannerOverlappingAllocation:
 * four 48 B tensors, offline offsets t0 = 0 and t1 = 0 (both live at the first
 * operator), t2 = 48, t3 online; TFLM places t3 at 0. */
static const test_buffer TFLM_OVERLAPPING_OFFLINE[] = {
    {48, 0, 1, 1, 0}, {48, 0, 1, 1, 0}, {48, 1, 2, 1, 48}, {48, 2, 2, 0, 0},
};

/* Two fixed buffers sharing bytes 64..128 at steps 2..3, and planned ones
 * live with them. Shared bytes counted once, the most live is 240 B at step
 * 3 (192 fixed + 32 + 16), which a plan reaches; counted twice it would be
 * 304. */
static const test_buffer SHARED_OFFLINE[] = {
    {128, 0, 3, 1, 0}, {128, 2, 5, 1, 64}, {64, 0, 1, 0, 0},
    {32, 3, 3, 0, 0},  {64, 4, 6, 0, 0},   {16, 0, 6, 0, 0},
};

/* Validates the plan of `p` with nnm_plan_validate_ex, fixed buffers marked,
 * with and without NNM_VALIDATE_TRUST_FIXED; returns the trusted verdict. */
static nnm_validation validate_trusting(const nnm_planner *p, const test_buffer *b, size_t n) {
    uint64_t offsets[MAX_BUFFERS];
    nnm_plan_buffer plan[MAX_BUFFERS];
    uint8_t fixed[MAX_BUFFERS];
    CHECK_OK(nnm_planner_get_offsets(p, offsets, n));
    for (size_t i = 0; i < n; ++i) {
        plan[i].size = b[i].size;
        plan[i].first_use = b[i].first_use;
        plan[i].last_use = b[i].last_use;
        plan[i].offset = offsets[i];
        fixed[i] = (uint8_t)(b[i].fixed != 0);
        if (b[i].fixed) CHECK(offsets[i] == b[i].offset);
    }
    nnm_validation strict, trusted;
    memset(&strict, 0xAB, sizeof strict);
    CHECK_OK(nnm_plan_validate_ex(plan, n, fixed, 0, &strict));
    CHECK(strict.valid == 0); /* the fixed buffers themselves overlap */
    memset(&trusted, 0xAB, sizeof trusted);
    CHECK_OK(nnm_plan_validate_ex(plan, n, fixed, NNM_VALIDATE_TRUST_FIXED, &trusted));
    CHECK(trusted.valid == 1);
    CHECK(trusted.fixed_overlap_count == strict.fixed_overlap_count);
    CHECK(trusted.fixed_overlap_first == strict.fixed_overlap_first);
    CHECK(trusted.fixed_overlap_second == strict.fixed_overlap_second);
    CHECK(trusted.peak_bytes == max_end(b, offsets, n));
    return trusted;
}

static void test_overlapping_offline_plans(void) {
    const size_t n_tflm = COUNT_OF(TFLM_OVERLAPPING_OFFLINE);
    const size_t n = COUNT_OF(SHARED_OFFLINE);
    uint64_t offsets[MAX_BUFFERS];
    nnm_plan_result r;

    /* tflm trusts the offline plan as TFLM does, trust-fixed or not. */
    nnm_planner *p = new_planner();
    CHECK_OK(nnm_planner_set_algorithm(p, NNM_ALGORITHM_TFLM));
    add_all(p, TFLM_OVERLAPPING_OFFLINE, n_tflm);
    CHECK_OK(nnm_planner_plan(p));
    CHECK_OK(nnm_planner_get_offsets(p, offsets, n_tflm));
    CHECK(offsets[0] == 0 && offsets[1] == 0 && offsets[2] == 48 && offsets[3] == 0);
    memset(&r, 0xAB, sizeof r);
    CHECK_OK(nnm_planner_get_result(p, &r));
    CHECK(r.fixed_overlap_count == 1);
    CHECK(r.fixed_overlap_first == 0 && r.fixed_overlap_second == 1 && r.fixed_overlap_step == 0);
    CHECK(r.peak_bytes == 96 && r.lower_bound_bytes == 96);
    nnm_validation v = validate_trusting(p, TFLM_OVERLAPPING_OFFLINE, n_tflm);
    CHECK(v.fixed_overlap_count == 1 && v.fixed_overlap_first == 0 && v.fixed_overlap_second == 1);
    CHECK(v.fixed_overlap_step == 0);
    nnm_planner_free(p);

    /* Any other algorithm refuses it unless told to trust it. */
    for (size_t a = 0; a < COUNT_OF(ALL_ALGORITHMS); ++a) {
        p = new_planner();
        CHECK_OK(nnm_planner_set_algorithm(p, ALL_ALGORITHMS[a]));
        add_all(p, SHARED_OFFLINE, n);
        uint64_t lower = 0;
        CHECK_OK(nnm_planner_lower_bound(p, &lower));
        CHECK(lower == 240);
        if (ALL_ALGORITHMS[a] != NNM_ALGORITHM_TFLM) {
            CHECK_FAILS(nnm_planner_plan(p), NNM_INVALID_ARGUMENT);
            CHECK(strstr(nnm_last_error(), "fixed buffers 0 and 1 overlap in memory at step 2") != NULL);
        }
        CHECK_FAILS(nnm_planner_set_trust_fixed(p, 2), NNM_INVALID_ARGUMENT);
        CHECK_OK(nnm_planner_set_trust_fixed(p, 1));
        CHECK_OK(nnm_planner_plan(p));
        memset(&r, 0xAB, sizeof r);
        CHECK_OK(nnm_planner_get_result(p, &r));
        CHECK(r.fixed_overlap_count == 1 && r.fixed_overlap_first == 0);
        CHECK(r.fixed_overlap_second == 1 && r.fixed_overlap_step == 2);
        CHECK(r.lower_bound_bytes == 240 && r.peak_bytes >= 240);
        v = validate_trusting(p, SHARED_OFFLINE, n);
        CHECK(v.fixed_overlap_count == 1 && v.fixed_overlap_step == 2);
        CHECK(v.peak_bytes == r.peak_bytes);
        if (ALL_ALGORITHMS[a] == NNM_ALGORITHM_EXACT) {
            CHECK(r.peak_bytes == 240 && r.proven_optimal == 1);
        }
        /* The setting survives a reset, and can be turned off again. */
        CHECK_OK(nnm_planner_reset(p));
        add_all(p, SHARED_OFFLINE, n);
        CHECK_OK(nnm_planner_plan(p));
        CHECK_OK(nnm_planner_reset(p));
        CHECK_OK(nnm_planner_set_trust_fixed(p, 0));
        add_all(p, SHARED_OFFLINE, n);
        if (ALL_ALGORITHMS[a] != NNM_ALGORITHM_TFLM) {
            CHECK_FAILS(nnm_planner_plan(p), NNM_INVALID_ARGUMENT);
        }
        nnm_planner_free(p);
    }
    CHECK_FAILS(nnm_planner_set_trust_fixed(NULL, 1), NNM_NULL_ARGUMENT);
}

static void test_validate_ex(void) {
    /* 0 and 1 fixed, sharing bytes 8..16 at steps 1..2; 2 planned above
     * them; 3 planned, clashing with fixed 1 at step 3 only. */
    nnm_plan_buffer plan[4];
    static const int64_t steps[4][2] = {{0, 2}, {1, 3}, {0, 3}, {3, 4}};
    static const uint64_t sizes[4] = {16, 16, 8, 8};
    static const uint64_t offsets[4] = {0, 8, 24, 16};
    for (size_t i = 0; i < 4; ++i) {
        plan[i].size = sizes[i];
        plan[i].first_use = steps[i][0];
        plan[i].last_use = steps[i][1];
        plan[i].offset = offsets[i];
    }
    const uint8_t fixed[4] = {1, 1, 0, 0};
    nnm_validation v;
    memset(&v, 0xAB, sizeof v);
    CHECK_OK(nnm_plan_validate_ex(plan, 4, fixed, NNM_VALIDATE_TRUST_FIXED, &v));
    CHECK(v.valid == 0); /* planned 3 meets fixed 1 */
    CHECK(v.first == 1 && v.second == 3 && v.step == 3);
    CHECK(strstr(nnm_last_error(), "buffers 1 and 3") != NULL);
    CHECK(v.fixed_overlap_count == 1 && v.fixed_overlap_first == 0);
    CHECK(v.fixed_overlap_second == 1 && v.fixed_overlap_step == 1);
    CHECK(v.peak_bytes == 32);

    plan[3].offset = 32; /* out of the way: only the trusted overlap is left */
    CHECK_OK(nnm_plan_validate_ex(plan, 4, fixed, NNM_VALIDATE_TRUST_FIXED, &v));
    CHECK(v.valid == 1 && v.peak_bytes == 40 && v.fixed_overlap_count == 1);
    CHECK_OK(nnm_plan_validate_ex(plan, 4, fixed, 0, &v));
    CHECK(v.valid == 0 && v.first == 0 && v.second == 1 && v.step == 1);
    /* No buffer marked fixed: nnm_plan_validate's verdict, no fixed pairs. */
    nnm_validation plain;
    CHECK_OK(nnm_plan_validate(plan, 4, &plain));
    memset(&v, 0xAB, sizeof v);
    CHECK_OK(nnm_plan_validate_ex(plan, 4, NULL, NNM_VALIDATE_TRUST_FIXED, &v));
    CHECK(v.valid == plain.valid && v.first == plain.first && v.second == plain.second);
    CHECK(v.step == plain.step && v.peak_bytes == plain.peak_bytes);
    CHECK(v.fixed_overlap_count == 0 && plain.fixed_overlap_count == 0);

    /* Argument errors leave `out` alone. */
    const uint8_t not_a_flag[4] = {1, 2, 0, 0};
    memset(&v, 0xAB, sizeof v);
    CHECK_FAILS(nnm_plan_validate_ex(plan, 4, not_a_flag, 0, &v), NNM_INVALID_ARGUMENT);
    CHECK(strstr(nnm_last_error(), "is_fixed[1]") != NULL);
    CHECK_FAILS(nnm_plan_validate_ex(plan, 4, fixed, 2, &v), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_plan_validate_ex(NULL, 4, fixed, 0, &v), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_plan_validate_ex(plan, 4, fixed, 0, NULL), NNM_NULL_ARGUMENT);
    CHECK(v.valid == 0xAB);
    CHECK_OK(nnm_plan_validate_ex(NULL, 0, NULL, 0, &v));
    CHECK(v.valid == 1 && v.peak_bytes == 0);
}

/* The OVERFLOW rules as the header states them. */
static void test_overflow_rules_as_documented(void) {
    size_t index = 99;
    nnm_planner *p = new_planner();
    /* last_use + 1 must fit: steps are kept half-open. */
    CHECK_FAILS(nnm_planner_add_buffer(p, 8, 0, INT64_MAX, &index), NNM_OVERFLOW);
    CHECK_FAILS(nnm_planner_add_fixed_buffer(p, 8, 0, INT64_MAX, 0, &index), NNM_OVERFLOW);
    CHECK_OK(nnm_planner_add_buffer(p, 8, 0, INT64_MAX - 1, &index));
    CHECK(index == 0);
    nnm_plan_buffer one;
    one.size = 8;
    one.first_use = 0;
    one.last_use = INT64_MAX;
    one.offset = 0;
    nnm_validation v;
    memset(&v, 0xAB, sizeof v);
    CHECK_FAILS(nnm_plan_validate(&one, 1, &v), NNM_OVERFLOW);
    nnm_planner_free(p);

    /* The bound is on the sum of all sizes, live together or not: after a
     * buffer of 2^64 - 1 B, a 1 B buffer never live with it is refused. */
    p = new_planner();
    CHECK_OK(nnm_planner_add_buffer(p, UINT64_MAX, 0, 1, NULL));
    CHECK_FAILS(nnm_planner_add_buffer(p, 1, 5, 6, NULL), NNM_OVERFLOW);
    nnm_planner_free(p);

    /* A fixed end plus the total of all sizes: offset + size fits here, the
     * sum with the 2^63 B buffer does not. */
    p = new_planner();
    CHECK_OK(nnm_planner_add_buffer(p, UINT64_C(1) << 63, 0, 1, NULL));
    CHECK_FAILS(nnm_planner_add_fixed_buffer(p, 8, 5, 6, UINT64_C(1) << 63, NULL), NNM_OVERFLOW);
    CHECK_OK(nnm_planner_add_fixed_buffer(p, 8, 5, 6, (UINT64_C(1) << 63) - 32, NULL));
    nnm_planner_free(p);

    /* nnm_plan_validate checks offset + size of never-used buffers too. */
    one.first_use = NNM_UNUSED_STEP;
    one.last_use = NNM_UNUSED_STEP;
    one.offset = UINT64_MAX - 3;
    CHECK_FAILS(nnm_plan_validate(&one, 1, &v), NNM_OVERFLOW);
    CHECK(strstr(nnm_last_error(), "buffer 0") != NULL);
    CHECK(v.valid == 0xAB);
    one.offset = UINT64_MAX - 8;
    CHECK_OK(nnm_plan_validate(&one, 1, &v));
    CHECK(v.valid == 1 && v.peak_bytes == 0);
}

/* Pictures of plans the library accepts never fail: zero-size buffers take no
 * space, so they neither stretch the picture's scale nor get drawn, even
 * where their offset lies past the peak (these two used to return NNM_PANIC). */
static void draw_ok(nnm_planner *p, const char *expect) {
    size_t needed = 0;
    CHECK_OK(nnm_planner_draw(p, NULL, 0, &needed));
    char text[4096];
    CHECK(needed > 1 && needed <= sizeof text);
    if (needed > sizeof text) {
        return;
    }
    CHECK_OK(nnm_planner_draw(p, text, sizeof text, &needed));
    CHECK(strstr(text, expect) != NULL);
}

static void test_draw_zero_size_past_peak(void) {
    /* A zero-size fixed buffer at an offset past the peak. */
    nnm_planner *p = new_planner();
    CHECK_OK(nnm_planner_set_alignment(p, 1));
    CHECK_OK(nnm_planner_add_buffer(p, 16, 0, 1, NULL));
    CHECK_OK(nnm_planner_add_fixed_buffer(p, 0, 0, 1, 4096, NULL));
    CHECK_OK(nnm_planner_plan(p));
    draw_ok(p, "2 buffers, peak 16 B\n");
    nnm_planner_free(p);

    /* linear: an unused 100 B buffer, then a 0 B buffer live at step 0 that
     * linear places at offset 100; nothing occupies memory. */
    p = new_planner();
    CHECK_OK(nnm_planner_set_alignment(p, 1));
    CHECK_OK(nnm_planner_set_algorithm(p, NNM_ALGORITHM_LINEAR));
    CHECK_OK(nnm_planner_add_buffer(p, 100, -1, -1, NULL));
    CHECK_OK(nnm_planner_add_buffer(p, 0, 0, 0, NULL));
    CHECK_OK(nnm_planner_plan(p));
    uint64_t offsets[2] = {SENTINEL, SENTINEL};
    CHECK_OK(nnm_planner_get_offsets(p, offsets, 2));
    CHECK(offsets[1] == 100);
    draw_ok(p, "1 (id=1): size=0, offset=100, first_used=0 last_used=0\n");
    nnm_planner_free(p);
}

/* ---- stale handles and cancel tokens ---------------------------------------- */

/* Every call on a freed planner or token is refused with a message: nnmem
 * looks the handle up in its registry before reading it, so this is clean
 * under ASan and valgrind (the freed memory is never read). */
static void test_calls_on_freed_handles(void) {
    nnm_planner *p = new_planner();
    add_all(p, MINIMALLOC, COUNT_OF(MINIMALLOC));
    CHECK_OK(nnm_planner_plan(p));
    nnm_planner_free(p);
    uint64_t u64 = SENTINEL;
    uint64_t offsets[COUNT_OF(MINIMALLOC)];
    size_t count = 77;
    nnm_plan_result r;
    memset(&r, 0xAB, sizeof r);
    CHECK_FAILS(nnm_planner_get_offset(p, 0, &u64), NNM_INVALID_ARGUMENT);
    CHECK(strstr(nnm_last_error(), "is not a live nnm_planner (already freed, or not made by nnmem)") != NULL);
    CHECK_FAILS(nnm_planner_get_offsets(p, offsets, COUNT_OF(offsets)), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_get_result(p, &r), NNM_INVALID_ARGUMENT);
    CHECK(r.peak_bytes == UINT64_C(0xABABABABABABABAB));
    CHECK_FAILS(nnm_planner_required_bytes(p, &u64), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_lower_bound(p, &u64), NNM_INVALID_ARGUMENT);
    CHECK(u64 == SENTINEL);
    CHECK_FAILS(nnm_planner_buffer_count(p, &count), NNM_INVALID_ARGUMENT);
    CHECK(count == 77);
    CHECK_FAILS(nnm_planner_set_algorithm(p, NNM_ALGORITHM_TFLM), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_set_alignment(p, 16), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_set_capacity(p, 100), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_add_buffer(p, 8, 0, 1, NULL), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_reset(p), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_plan(p), NNM_INVALID_ARGUMENT);
    char text[64];
    size_t written = 5;
    CHECK_FAILS(nnm_planner_draw(p, text, sizeof text, &written), NNM_INVALID_ARGUMENT);
    CHECK(written == 5);

    nnm_cancel_token *t = NULL;
    CHECK_OK(nnm_cancel_token_new(&t));
    nnm_cancel_token_free(t);
    uint8_t flag = 7;
    CHECK_FAILS(nnm_cancel_token_cancel(t), NNM_INVALID_ARGUMENT);
    CHECK(strstr(nnm_last_error(), "is not a live nnm_cancel_token") != NULL);
    CHECK_FAILS(nnm_cancel_token_reset(t), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_cancel_token_is_cancelled(t, &flag), NNM_INVALID_ARGUMENT);
    CHECK(flag == 7);
    nnm_planner *q = new_planner();
    CHECK_FAILS(nnm_planner_set_cancel_token(q, t), NNM_INVALID_ARGUMENT);
    nnm_planner_free(q);
}

static uint64_t xorshift(uint64_t *state) {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

/* A token that was cancelled and then freed no longer cancels: freeing it
 * detaches it from the planner, whose later plans search as with no token. */
static void test_a_freed_token_is_detached(void) {
    /* A small random instance (exact_test.c's generator) on which no
     * heuristic reaches the lower bound, so the exact search searches. */
    static const uint64_t sizes[] = {3, 4, 5, 6, 7, 9, 10, 12};
    test_buffer b[10];
    uint64_t state = UINT64_C(0xD67CBAE12FE0C545);
    for (size_t i = 0; i < COUNT_OF(b); ++i) {
        b[i].first_use = (int64_t)(xorshift(&state) % 8);
        b[i].last_use = b[i].first_use + (int64_t)(xorshift(&state) % 5);
        b[i].size = sizes[xorshift(&state) % 8];
        b[i].fixed = 0;
        b[i].offset = 0;
    }
    nnm_planner *p = new_planner();
    CHECK_OK(nnm_planner_set_algorithm(p, NNM_ALGORITHM_EXACT));
    add_all(p, b, COUNT_OF(b));
    CHECK_OK(nnm_planner_plan(p));
    nnm_plan_result alone, cancelled, detached;
    CHECK_OK(nnm_planner_get_result(p, &alone));
    CHECK(alone.search_nodes > 0);

    nnm_cancel_token *t = NULL;
    CHECK_OK(nnm_cancel_token_new(&t));
    CHECK_OK(nnm_planner_set_cancel_token(p, t));
    CHECK_OK(nnm_cancel_token_cancel(t));
    CHECK_OK(nnm_planner_reset(p));
    add_all(p, b, COUNT_OF(b));
    CHECK_OK(nnm_planner_plan(p));
    CHECK_OK(nnm_planner_get_result(p, &cancelled));
    CHECK(cancelled.search_nodes == 0); /* the live, cancelled token stops it */

    nnm_cancel_token_free(t);
    CHECK_OK(nnm_planner_reset(p));
    add_all(p, b, COUNT_OF(b));
    CHECK_OK(nnm_planner_plan(p));
    CHECK_OK(nnm_planner_get_result(p, &detached));
    CHECK(detached.search_nodes == alone.search_nodes);
    CHECK(detached.peak_bytes == alone.peak_bytes);
    CHECK(detached.proven_optimal == alone.proven_optimal);
    nnm_planner_free(p);
}

/* ---- limits: time (an explicit cap only) and work -------------------------- */

/* Floor-first, AUTO's first heuristic, misses the bound here (16 against 15);
 * lifetime-first-fit reaches it. */
static const test_buffer FLOOR_FIRST_MISSES[] = {
    {5, 2, 4, 0, 0}, {2, 5, 6, 0, 0}, {4, 3, 6, 0, 0}, {6, 1, 3, 0, 0}, {5, 5, 8, 0, 0}, {2, 4, 7, 0, 0},
};

static nnm_plan_result plan_limited(double seconds, uint64_t work_units, uint64_t *offsets) {
    const size_t n = COUNT_OF(FLOOR_FIRST_MISSES);
    nnm_planner *p = new_planner();
    if (seconds > 0) CHECK_OK(nnm_planner_set_time_limit(p, seconds));
    CHECK_OK(nnm_planner_set_work_limit(p, work_units));
    add_all(p, FLOOR_FIRST_MISSES, n);
    nnm_plan_result r = plan_with(p, NNM_ALGORITHM_AUTO, FLOOR_FIRST_MISSES, n, offsets);
    nnm_planner_free(p);
    return r;
}

static void test_time_and_work_limits(void) {
    uint64_t offsets[MAX_BUFFERS];
    nnm_planner *p = new_planner();
    /* Any positive finite number of seconds: a tiny one is a valid (instant)
     * cap, a huge one no cap at all. */
    CHECK_OK(nnm_planner_set_time_limit(p, 1e-12));
    CHECK_OK(nnm_planner_set_time_limit(p, 4.9406564584124654e-324)); /* smallest subnormal */
    CHECK_OK(nnm_planner_set_time_limit(p, 1e300));
    CHECK_OK(nnm_planner_set_time_limit(p, 1.7976931348623157e308)); /* DBL_MAX */
    CHECK_FAILS(nnm_planner_set_time_limit(p, -0.0), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_planner_set_time_limit(p, -1e-12), NNM_INVALID_ARGUMENT);
    CHECK(strstr(nnm_last_error(), "positive finite") != NULL);
    CHECK_OK(nnm_planner_set_work_limit(p, 0));
    CHECK_OK(nnm_planner_set_work_limit(p, UINT64_MAX));
    CHECK_OK(nnm_planner_set_work_limit(p, NNM_DEFAULT_WORK_LIMIT));
    CHECK_FAILS(nnm_planner_set_work_limit(NULL, 1), NNM_NULL_ARGUMENT);
    nnm_planner_free(p);

    /* No time limit by default: AUTO goes on past floor-first to the bound. */
    nnm_plan_result r = plan_limited(0, NNM_DEFAULT_WORK_LIMIT, offsets);
    CHECK(r.peak_bytes == 15 && r.proven_optimal == 1);
    CHECK(r.time_limit_cut == 0);
    /* A limit already past when floor-first ends keeps its plan, and says so. */
    r = plan_limited(1e-12, NNM_DEFAULT_WORK_LIMIT, offsets);
    CHECK(r.peak_bytes == 16 && r.algorithm == NNM_ALGORITHM_FLOOR_FIRST);
    CHECK(r.time_limit_cut == 1);
    r = plan_limited(1e300, NNM_DEFAULT_WORK_LIMIT, offsets);
    CHECK(r.peak_bytes == 15 && r.time_limit_cut == 0);
    /* A work limit of one unit leaves only the heuristics AUTO always runs
     * (floor-first first, then size-first-fit, which does not beat it
     * here), the same on any machine; not a time cut. */
    r = plan_limited(0, 1, offsets);
    CHECK(r.peak_bytes == 16 && r.algorithm == NNM_ALGORITHM_FLOOR_FIRST);
    CHECK(r.time_limit_cut == 0);
}

/* Issue 25: floor-first stacks these to 18 B; size descending, lowest
 * offset that fits (OpenVINO's solver, size-first-fit) reaches the 14 B
 * bound. AUTO runs size-first-fit whatever its work limit. */
static const test_buffer SIZE_FIRST_FIT_WINS[] = {
    {9, 2, 3, 0, 0}, {5, 3, 4, 0, 0}, {8, 4, 7, 0, 0}, {5, 5, 9, 0, 0},
};

static nnm_plan_result plan_four(uint32_t algorithm, uint64_t work_units) {
    const size_t n = COUNT_OF(SIZE_FIRST_FIT_WINS);
    uint64_t offsets[MAX_BUFFERS];
    nnm_planner *p = new_planner();
    CHECK_OK(nnm_planner_set_work_limit(p, work_units));
    add_all(p, SIZE_FIRST_FIT_WINS, n);
    nnm_plan_result r = plan_with(p, algorithm, SIZE_FIRST_FIT_WINS, n, offsets);
    nnm_planner_free(p);
    return r;
}

static void test_auto_never_worse_than_size_first_fit(void) {
    nnm_plan_result r = plan_four(NNM_ALGORITHM_FLOOR_FIRST, 1);
    CHECK(r.peak_bytes == 18 && r.lower_bound_bytes == 14);
    CHECK(plan_four(NNM_ALGORITHM_SIZE_FIRST_FIT, 1).peak_bytes == 14);
    const uint64_t limits[] = {1, 2, 1000, NNM_DEFAULT_WORK_LIMIT};
    for (size_t k = 0; k < COUNT_OF(limits); ++k) {
        r = plan_four(NNM_ALGORITHM_AUTO, limits[k]);
        CHECK(r.peak_bytes == 14 && r.proven_optimal == 1);
    }
}

/* nnm_planner_add_inplace and nnm_planner_inplace_taken: what the header
 * promises. */
static void test_inplace_candidates(void) {
    struct nnm_planner *p = NULL;
    size_t i0 = 0, i1 = 0, i2 = 0, taken = 99;
    uint64_t bytes = 0, o0 = 1, o1 = 2, o2 = 3;
    CHECK_OK(nnm_planner_new(&p));
    /* Scores (steps 0..1), their softmax written over them (1..2), a mask
     * live throughout. */
    CHECK_OK(nnm_planner_add_buffer(p, 64, 0, 1, &i0));
    CHECK_OK(nnm_planner_add_buffer(p, 64, 1, 2, &i1));
    CHECK_OK(nnm_planner_add_buffer(p, 16, 0, 2, &i2));
    CHECK_OK(nnm_planner_lower_bound(p, &bytes));
    CHECK(bytes == 144);
    CHECK_FAILS(nnm_planner_add_inplace(NULL, i0, i1), NNM_NULL_ARGUMENT);
    CHECK_REFUSES(nnm_planner_add_inplace(p, i0, 7), NNM_INVALID_ARGUMENT,
                  "child 7 is not a buffer index (the planner holds 3 buffer(s))");
    CHECK_REFUSES(nnm_planner_add_inplace(p, i1, i1), NNM_INVALID_ARGUMENT, "own memory");
    CHECK_REFUSES(nnm_planner_add_inplace(p, i1, i2), NNM_INVALID_ARGUMENT,
                  "1 is last used at step 2, 2 is first used at step 0");
    /* Refused candidates record nothing. */
    CHECK_OK(nnm_planner_lower_bound(p, &bytes));
    CHECK(bytes == 144);
    CHECK_OK(nnm_planner_add_inplace(p, i0, i1));
    CHECK_OK(nnm_planner_lower_bound(p, &bytes));
    CHECK(bytes == 80);
    CHECK_FAILS(nnm_planner_inplace_taken(p, &taken), NNM_WRONG_STATE);
    CHECK(taken == 99);
    CHECK_OK(nnm_planner_plan(p));
    CHECK_OK(nnm_planner_inplace_taken(p, &taken));
    CHECK(taken == 1);
    CHECK_OK(nnm_planner_get_offset(p, i0, &o0));
    CHECK_OK(nnm_planner_get_offset(p, i1, &o1));
    CHECK_OK(nnm_planner_get_offset(p, i2, &o2));
    CHECK(o0 == o1 && o2 != o0);
    CHECK_OK(nnm_planner_required_bytes(p, &bytes));
    CHECK(bytes == 80);
    CHECK_FAILS(nnm_planner_inplace_taken(p, NULL), NNM_NULL_ARGUMENT);
    /* A larger child is refused; candidates go with reset. */
    CHECK_OK(nnm_planner_reset(p));
    CHECK_OK(nnm_planner_add_buffer(p, 8, 0, 1, &i0));
    CHECK_OK(nnm_planner_add_buffer(p, 16, 1, 2, &i1));
    CHECK_OK(nnm_planner_add_buffer(p, 8, 1, 3, &i2));
    CHECK_REFUSES(nnm_planner_add_inplace(p, i0, i1), NNM_INVALID_ARGUMENT,
                  "buffer 1 (16 B) is larger than buffer 0 (8 B)");
    CHECK_OK(nnm_planner_add_inplace(p, i0, i2));
    {
        /* A fixed buffer's offset is the caller's: no candidate. */
        size_t fixed = 0;
        CHECK_OK(nnm_planner_add_fixed_buffer(p, 8, 2, 3, 64, &fixed));
        CHECK_REFUSES(nnm_planner_add_inplace(p, i1, fixed), NNM_INVALID_ARGUMENT,
                      "in-place child 3 has a fixed offset (64)");
    }
    /* TFLite Micro has no in-place reuse: tflm refuses candidates. */
    CHECK_OK(nnm_planner_set_algorithm(p, NNM_ALGORITHM_TFLM));
    CHECK_REFUSES(nnm_planner_plan(p), NNM_INVALID_ARGUMENT, "no in-place reuse");
    CHECK_OK(nnm_planner_set_algorithm(p, NNM_ALGORITHM_SIZE_FIRST_FIT));
    CHECK_OK(nnm_planner_plan(p));
    CHECK_OK(nnm_planner_get_offset(p, i0, &o0));
    CHECK_OK(nnm_planner_get_offset(p, i2, &o2));
    CHECK(o0 == o2);
    nnm_planner_free(p);
}

int main(void) {
    test_last_error_starts_empty(); /* must run first */
    test_version();
    test_status_str();
    test_algorithm_names();
    test_null_arguments();
    test_buffer_arguments();
    test_wrong_state();
    test_empty_plan();
    test_minimalloc_example();
    test_tflm_exact();
    test_every_algorithm();
    test_fixed_buffers();
    test_bad_handles();
    test_settings_survive_reset();
    test_capacity();
    test_overflow();
    test_draw();
    test_validate();
    test_last_error_is_thread_local();
    test_overlapping_offline_plans();
    test_validate_ex();
    test_overflow_rules_as_documented();
    test_draw_zero_size_past_peak();
    test_add_after_plan();
    test_tflite_micro_lifetimes();
    test_get_buffer();
    test_calls_on_freed_handles();
    test_a_freed_token_is_detached();
    test_time_and_work_limits();
    test_auto_never_worse_than_size_first_fit();
    test_inplace_candidates();
    return nnm_check_report();
}
