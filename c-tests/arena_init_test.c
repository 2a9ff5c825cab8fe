/*
 * The tensor arena in the caller's memory (nnm_arena_init): the calls the
 * embedded build holds, with no heap. Built for the host (ctest: C and
 * C++, static and shared, ASan+UBSan, valgrind) and for the emulated boards
 * (c-tests/board/test.sh), from this one file: C99, -pedantic.
 *
 * Covers the state's size (NNM_ARENA_STATE_BYTES at every start address,
 * one byte short, full records), the three sections, the scratch planner's
 * plan in the head, the exact size needed (to the byte), recording, guard
 * mode, refusals with their messages, and a freed arena.
 */
#include <stdint.h>
#include <string.h>

#include "nnm_check.h"

/* Records for up to 8 temp and 16 persistent allocations, 8-aligned, with
 * room to start it up to 7 bytes in. */
#define MAX_TEMPS 8u
#define MAX_PERSISTENT 16u
static uint64_t state_words[(NNM_ARENA_STATE_BYTES(MAX_TEMPS, MAX_PERSISTENT) + 8u) / 8u + 1u];
static uint64_t arena_words[(4096 + 64) / 8];

static unsigned char *state_bytes(void) { return (unsigned char *)state_words; }
/* 4096 bytes of arena buffer at a 64-aligned address, so that the offsets
 * below hold on every target. */
static unsigned char *arena_bytes(void) {
    unsigned char *raw = (unsigned char *)arena_words;
    return raw + ((64u - ((uintptr_t)raw & 63u)) & 63u);
}

/* Offset of `p` in the arena buffer. */
static size_t at(const void *p) { return (size_t)((const unsigned char *)p - arena_bytes()); }

static nnm_arena_sizes sizes_of(const nnm_arena *a) {
    nnm_arena_sizes s;
    memset(&s, 0, sizeof s);
    CHECK_OK(nnm_arena_get_sizes(a, &s));
    return s;
}

/* The state's size: NNM_ARENA_STATE_BYTES(t, p) holds t temp and p
 * persistent allocations at every start address, guard mode included; one
 * persistent more is
 * refused naming the records, and a state one byte short of the arena and
 * its temp records is refused with the byte missing. */
static void test_state_size(void) {
    size_t skew;
    for (skew = 0; skew < 8; skew++) {
        nnm_arena *a = NULL;
        void *p = NULL, *t[2] = {NULL, NULL};
        unsigned i;
        /* Guard mode uses every byte the macro counts (without it the
         * watched records' bytes hold persistent ones). */
        REQUIRE_OK(nnm_arena_init(state_bytes() + skew, NNM_ARENA_STATE_BYTES(2, 3), 2, arena_bytes(), 4096, 0,
                                  NNM_ARENA_GUARD, &a));
        for (i = 0; i < 3; i++) CHECK_OK(nnm_arena_alloc_persistent(a, 16, 0, NNM_ARENA_CATEGORY_OP_DATA, &p));
        CHECK_REFUSES(nnm_arena_alloc_persistent(a, 16, 0, NNM_ARENA_CATEGORY_OP_DATA, &p), NNM_DOES_NOT_FIT,
                      "room for 3 persistent records");
        CHECK_OK(nnm_arena_alloc_temp(a, 16, 0, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &t[0]));
        CHECK_OK(nnm_arena_alloc_temp(a, 16, 0, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &t[1]));
        CHECK_REFUSES(nnm_arena_alloc_temp(a, 16, 0, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &p), NNM_DOES_NOT_FIT,
                      "room for 2 temp records");
        CHECK(sizes_of(a).persistent_count == 3 && sizes_of(a).temp_count == 2);
        nnm_arena_free(a);
    }
    {
        /* 8-aligned: no byte lost to alignment, so one byte less than the
         * arena and its records is one byte missing. */
        nnm_arena *a = NULL;
        size_t exact = NNM_ARENA_STATE_HEADER_BYTES + 2u * 4u * NNM_ARENA_TEMP_RECORD_BYTES;
        CHECK_REFUSES(nnm_arena_init(state_bytes(), exact - 1, 4, arena_bytes(), 4096, 0, NNM_ARENA_GUARD, &a),
                      NNM_DOES_NOT_FIT, "1 B missing");
        CHECK(a == NULL);
        /* Temp records past the address space (on a 32-bit target) are
         * refused, not wrapped. */
        CHECK_REFUSES(nnm_arena_init(state_bytes(), sizeof state_words, 0x80000001u, arena_bytes(), 4096, 0,
                                     NNM_ARENA_GUARD, &a), NNM_DOES_NOT_FIT, "B missing");
        CHECK_REFUSES(nnm_arena_init(state_bytes(), sizeof state_words, UINT32_MAX, arena_bytes(), 4096, 0,
                                     NNM_ARENA_GUARD, &a), NNM_DOES_NOT_FIT, "B missing");
        /* The state may not share bytes with the buffer. */
        CHECK_REFUSES(nnm_arena_init(arena_bytes() + 1024, 2048, 1, arena_bytes(), 4096, 0, 0, &a),
                      NNM_INVALID_ARGUMENT, "overlap");
        CHECK(a == NULL);
        /* Without guard mode the watched records are not needed. */
        CHECK_OK(nnm_arena_init(state_bytes(), exact / 2 + NNM_ARENA_STATE_HEADER_BYTES / 2, 4, arena_bytes(), 4096, 0,
                                0, &a));
        nnm_arena_free(a);
        /* Exactly enough, with guard mode: no persistent record left. */
        a = NULL;
        REQUIRE_OK(nnm_arena_init(state_bytes(), exact, 4, arena_bytes(), 4096, 0, NNM_ARENA_GUARD, &a));
        {
            void *p = NULL;
            CHECK_REFUSES(nnm_arena_alloc_persistent(a, 8, 0, 0, &p), NNM_DOES_NOT_FIT,
                          "room for 0 persistent records");
            CHECK(p == NULL);
        }
        nnm_arena_free(a);
    }
}

/* Head and temp grow up from the aligned start, the tail down from the
 * end; a plan made in the scratch planner's scratch goes in the head. */
static void test_sections_and_a_scratch_plan(void) {
    nnm_arena *a = NULL;
    void *p1 = NULL, *p2 = NULL, *t1 = NULL, *t2 = NULL, *head = NULL;
    static uint32_t scratch[NNM_SCRATCH_PLANNER_BYTES(3) / 4 + 1];
    nnm_scratch_planner *planner = NULL;
    uint32_t bytes = 0, offset = 0;
    nnm_arena_sizes s;
    REQUIRE_OK(nnm_arena_init(state_bytes(), sizeof state_words, MAX_TEMPS, arena_bytes() + 8, 1000, 16, 0, &a));
    CHECK_OK(nnm_arena_alloc_persistent(a, 10, 0, NNM_ARENA_CATEGORY_OP_DATA, &p1));
    CHECK(at(p1) == 992 && ((uintptr_t)p1 & 15u) == 0);
    CHECK_OK(nnm_arena_alloc_persistent(a, 3, 4, NNM_ARENA_CATEGORY_OP_DATA, &p2));
    CHECK(at(p2) == 988);

    /* A TFLite-Micro-style plan in the scratch, then a head of its size. */
    REQUIRE_OK(nnm_scratch_planner_init(scratch, sizeof scratch, NNM_ALGORITHM_TFLM, &planner));
    CHECK_OK(nnm_scratch_planner_add_buffer(planner, 100, 0, 1, NULL));
    CHECK_OK(nnm_scratch_planner_add_buffer(planner, 60, 1, 2, NULL));
    CHECK_OK(nnm_scratch_planner_add_buffer(planner, 100, 2, 3, NULL));
    CHECK_OK(nnm_scratch_planner_plan(planner, &bytes));
    CHECK(bytes == 160);
    CHECK_OK(nnm_arena_reserve_head(a, bytes, NNM_ARENA_CATEGORY_PLANNED_TENSOR_DATA, &head));
    CHECK(at(head) == 16);
    CHECK_OK(nnm_scratch_planner_get_offset(planner, 1, &offset));
    CHECK(offset == 100);

    CHECK_OK(nnm_arena_alloc_temp(a, 5, 0, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &t1));
    CHECK(at(t1) == 16 + 160);
    CHECK_OK(nnm_arena_alloc_temp(a, 8, 64, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &t2));
    CHECK(at(t2) == 192);
    s = sizes_of(a);
    CHECK(s.head_bytes == 160 && s.tail_bytes == 20 && s.temp_bytes == 24 && s.plan_count == 1);
    CHECK(s.capacity_bytes == 1000 && s.alignment_lost_bytes == 8);
    /* Growing the head while temp allocations are held is refused. */
    CHECK_REFUSES(nnm_arena_reserve_head(a, 400, 0, &head), NNM_WRONG_STATE, "while 2 temp allocations are held");
    CHECK_REFUSES(nnm_arena_reset_temp(a), NNM_WRONG_STATE, "2 temp allocations are still held");
    CHECK_OK(nnm_arena_release_temp(a, t1));
    CHECK_REFUSES(nnm_arena_release_temp(a, t1), NNM_INVALID_ARGUMENT, "was already released");
    CHECK_OK(nnm_arena_release_temp(a, t2));
    CHECK_OK(nnm_arena_reset_temp(a));
    CHECK_OK(nnm_arena_reset_head(a));
    CHECK(sizes_of(a).head_bytes == 0);
    nnm_arena_free(a);
}

/* The calls of one model's initialisation, as TFLite Micro makes them. */
static nnm_status model_init(nnm_arena *a) {
    void *p = NULL, *t[3] = {NULL, NULL, NULL};
    nnm_status s;
    int i;
    for (i = 0; i < 5; i++) {
        s = nnm_arena_alloc_persistent(a, (size_t)(24 + 8 * i), i % 2 ? 8 : 0, NNM_ARENA_CATEGORY_EVAL_TENSOR_DATA, &p);
        if (s != NNM_OK) return s;
    }
    for (i = 0; i < 3; i++) {
        s = nnm_arena_alloc_temp(a, (size_t)(40 * (i + 1)), 0, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &t[i]);
        if (s != NNM_OK) return s;
    }
    for (i = 2; i >= 0; i--) {
        s = nnm_arena_release_temp(a, t[i]);
        if (s != NNM_OK) return s;
    }
    s = nnm_arena_reset_temp(a);
    if (s != NNM_OK) return s;
    s = nnm_arena_reserve_head(a, 300, NNM_ARENA_CATEGORY_PLANNED_TENSOR_DATA, &p);
    if (s != NNM_OK) return s;
    return nnm_arena_alloc_persistent(a, 100, 0, NNM_ARENA_CATEGORY_OP_DATA, &p);
}

/* required_bytes is exact: an arena of that size at the same start runs
 * every call, one byte less fails on some call with "missing 1 B"; with
 * recording, every category counts what was asked and taken. */
static void test_required_bytes_and_recording(uint32_t flags) {
    nnm_arena *a = NULL;
    nnm_arena_sizes s;
    nnm_arena_category_stats eval, planned;
    size_t need;
    REQUIRE_OK(nnm_arena_init(state_bytes(), sizeof state_words, MAX_TEMPS, arena_bytes(), 4096, 0,
                              flags | NNM_ARENA_RECORDING, &a));
    CHECK_OK(model_init(a));
    s = sizes_of(a);
    need = (size_t)s.required_bytes;
    CHECK(need > 0 && need < 4096 && s.temp_peak_bytes >= 240);
    CHECK_OK(nnm_arena_get_category(a, NNM_ARENA_CATEGORY_EVAL_TENSOR_DATA, &eval));
    CHECK(eval.count == 5 && eval.requested_bytes == 24 + 32 + 40 + 48 + 56 && eval.used_bytes >= eval.requested_bytes);
    CHECK_OK(nnm_arena_get_category(a, NNM_ARENA_CATEGORY_PLANNED_TENSOR_DATA, &planned));
    CHECK(planned.count == 1 && planned.requested_bytes == 300);
    CHECK_FAILS(nnm_arena_get_category(a, 99, &eval), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("unknown category 99");
    nnm_arena_free(a);

    a = NULL;
    REQUIRE_OK(nnm_arena_init(state_bytes(), sizeof state_words, MAX_TEMPS, arena_bytes(), need, 0, flags, &a));
    CHECK_OK(model_init(a));
    CHECK_OK(nnm_arena_check(a));
    CHECK(sizes_of(a).required_bytes == need);
    nnm_arena_free(a);

    a = NULL;
    REQUIRE_OK(nnm_arena_init(state_bytes(), sizeof state_words, MAX_TEMPS, arena_bytes(), need - 1, 0, flags, &a));
    CHECK_FAILS(model_init(a), NNM_DOES_NOT_FIT);
    CHECK_ERROR_HAS("missing 1 B");
    nnm_arena_free(a);
}

/* Guard mode finds an overrun and names the allocation; the reset refuses
 * to go on; a write after release is found too. */
static void test_guard_mode(void) {
    nnm_arena *a = NULL;
    void *t = NULL, *p = NULL;
    REQUIRE_OK(nnm_arena_init(state_bytes(), sizeof state_words, MAX_TEMPS, arena_bytes(), 4096, 0,
                              NNM_ARENA_GUARD, &a));
    CHECK_OK(nnm_arena_alloc_persistent(a, 32, 0, NNM_ARENA_CATEGORY_OP_DATA, &p));
    CHECK_OK(nnm_arena_alloc_temp(a, 24, 0, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &t));
    memset(t, 0xab, 24);
    CHECK_OK(nnm_arena_check(a));
    ((unsigned char *)p)[32] = 0; /* one byte past the persistent allocation */
    CHECK_REFUSES(nnm_arena_check(a), NNM_CORRUPTED,
                  "persistent allocation #1 (category 'Operator runtime data', 32 B at offset");
    /* (The embedded build's last error holds 159 characters.) */
    CHECK_ERROR_HAS("was overrun: 1 of the 16 guard bytes");
    CHECK_OK(nnm_arena_release_temp(a, t));
    CHECK_FAILS(nnm_arena_reset_temp(a), NNM_CORRUPTED);
    nnm_arena_free(a);

    a = NULL;
    REQUIRE_OK(nnm_arena_init(state_bytes(), sizeof state_words, MAX_TEMPS, arena_bytes(), 4096, 0,
                              NNM_ARENA_GUARD, &a));
    CHECK_OK(nnm_arena_alloc_temp(a, 64, 0, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &t));
    CHECK_OK(nnm_arena_release_temp(a, t));
    ((unsigned char *)t)[5] = 1; /* through a stale pointer */
    CHECK_REFUSES(nnm_arena_check(a), NNM_CORRUPTED, "released temp allocation #1");
    nnm_arena_free(a);
}

/* Bad arguments are refused with a message and leave the out-parameter
 * alone; a freed arena is refused; its state can be used again. */
static void test_refusals_and_free(void) {
    nnm_arena *a = NULL, *untouched = (nnm_arena *)state_bytes();
    void *p = arena_bytes();
    nnm_arena_sizes s;
    CHECK_REFUSES(nnm_arena_init(NULL, 4096, 1, arena_bytes(), 4096, 0, 0, &a), NNM_NULL_ARGUMENT, "state is NULL");
    CHECK_REFUSES(nnm_arena_init(state_bytes(), sizeof state_words, 1, NULL, 4096, 0, 0, &a), NNM_NULL_ARGUMENT,
                  "buffer is NULL");
    CHECK_REFUSES(nnm_arena_init(state_bytes(), sizeof state_words, 1, arena_bytes(), 4096, 0, 0, NULL),
                  NNM_NULL_ARGUMENT, "out_arena is NULL");
    CHECK_REFUSES(nnm_arena_init(state_bytes(), sizeof state_words, 1, arena_bytes(), 4096, 3, 0, &untouched),
                  NNM_INVALID_ARGUMENT, "alignment 3 is not a power of two");
    CHECK_REFUSES(nnm_arena_init(state_bytes(), sizeof state_words, 1, arena_bytes(), 4096, 0, 0x80, &untouched),
                  NNM_INVALID_ARGUMENT, "unknown flags 0x80");
    CHECK_REFUSES(nnm_arena_init(state_bytes(), sizeof state_words, 1, arena_bytes() + 1, 4, 16, 0, &untouched),
                  NNM_DOES_NOT_FIT, "too small to align its start to 16");
    CHECK_REFUSES(nnm_arena_init(state_bytes(), SIZE_MAX, 1, arena_bytes(), 4096, 0, 0, &untouched), NNM_OVERFLOW,
                  "run past the end of the address space");
    CHECK(untouched == (nnm_arena *)state_bytes());

    REQUIRE_OK(nnm_arena_init(state_bytes(), sizeof state_words, 1, arena_bytes(), 256, 0, 0, &a));
    CHECK_REFUSES(nnm_arena_alloc_persistent(a, 0, 0, 0, &p), NNM_INVALID_ARGUMENT, "size is 0");
    CHECK_REFUSES(nnm_arena_alloc_persistent(a, 300, 0, 0, &p), NNM_DOES_NOT_FIT,
                  "requested 300 B (304 B with alignment 16 padding), available 256 B, missing 44 B");
    CHECK_REFUSES(nnm_arena_alloc_temp(a, 16, 3, 0, &p), NNM_INVALID_ARGUMENT, "alignment 3 is not a power of two");
    CHECK_REFUSES(nnm_arena_alloc_temp(a, 16, 0, 0, NULL), NNM_NULL_ARGUMENT, "out_ptr is NULL");
    CHECK_REFUSES(nnm_arena_release_temp(a, NULL), NNM_NULL_ARGUMENT, "ptr is NULL");
    CHECK_REFUSES(nnm_arena_release_temp(a, arena_bytes() + 64), NNM_INVALID_ARGUMENT,
                  "is not a temp allocation of this arena");
    CHECK_REFUSES(nnm_arena_get_sizes(a, NULL), NNM_NULL_ARGUMENT, "out_sizes is NULL");
    CHECK_REFUSES(nnm_arena_get_sizes(NULL, &s), NNM_NULL_ARGUMENT, "arena is NULL");
    CHECK(p == arena_bytes());
    CHECK_OK(nnm_arena_set_recording(a, 1));
    nnm_arena_free(a);
    CHECK_FAILS(nnm_arena_get_sizes(a, &s), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_arena_reset_temp(a), NNM_INVALID_ARGUMENT);
    nnm_arena_free(a); /* a double free: refused, reported */
    CHECK_ERROR_HAS("not a live nnm_arena");
    nnm_arena_free(NULL);

    /* The same state and buffer make a new arena. */
    a = NULL;
    REQUIRE_OK(nnm_arena_init(state_bytes(), sizeof state_words, 1, arena_bytes(), 256, 0, 0, &a));
    CHECK_OK(nnm_arena_alloc_temp(a, 16, 0, 0, &p));
    CHECK(at(p) == 0);
    nnm_arena_free(a);
}

int main(void) {
    test_state_size();
    test_sections_and_a_scratch_plan();
    test_required_bytes_and_recording(0);
    test_required_bytes_and_recording(NNM_ARENA_GUARD);
    test_guard_mode();
    test_refusals_and_free();
    return nnm_check_report();
}
