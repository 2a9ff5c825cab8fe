/*
 * The scratch planner on the board: every figure of TensorFlow Lite
 * Micro's greedy_memory_planner_test.cc, its GreedyMemoryPlanner's offsets
 * on the two lists of plan_lists.h (measured on this board), the offline
 * cases of its micro_allocator_test.cc, linear and size-first-fit, the
 * lower bound, and every refusal with its message. Uses only what the
 * embedded build holds (<nnmem/scratch_planner.h>); C99, -pedantic.
 * Exits 0 when every check passes (QEMU returns the status).
 */
#include <stdio.h>
#include <string.h>

#include <nnmem/scratch_planner.h>

#include "plan_lists.h"
#include "tflm_offsets.h"

static int failures = 0;

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (!(cond)) {                                                     \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);         \
            failures++;                                                    \
        }                                                                  \
    } while (0)

/* The status of the last call CHECK_STATUS saw fail. */
static nnm_status last_failure = NNM_OK;

#define CHECK_STATUS(call, want)                                                           \
    do {                                                                                   \
        nnm_status got_ = (call);                                                          \
        if (got_ != NNM_OK) last_failure = got_;                                           \
        if (got_ != (want)) {                                                              \
            printf("FAIL %s:%d: %s gave %d (%s)\n", __FILE__, __LINE__, #call, (int)got_,  \
                   nnm_last_error());                                                      \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

/* The message of the last failure; built with strip-messages
 * (NNM_BOARD_STRIPPED), its status's name instead. */
#ifdef NNM_BOARD_STRIPPED
#define MESSAGE_HOLDS(text) ((void)(text), strcmp(nnm_last_error(), nnm_status_str(last_failure)) == 0)
#else
#define MESSAGE_HOLDS(text) (strstr(nnm_last_error(), (text)) != NULL)
#endif

#define CHECK_MESSAGE(text)                                                         \
    do {                                                                            \
        if (!MESSAGE_HOLDS(text)) {                                                 \
            printf("FAIL %s:%d: last error \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, \
                   nnm_last_error(), (text));                                       \
            failures++;                                                             \
        }                                                                           \
    } while (0)

/* Room for the largest list, aligned to 4 (make() passes an odd address:
 * the start is aligned up). */
static uint32_t scratch_words[NNM_SCRATCH_PLANNER_BYTES(128) / 4 + 1];
#define scratch ((unsigned char *)scratch_words)

static nnm_scratch_planner *make(uint32_t algorithm, size_t buffers) {
    nnm_scratch_planner *p = NULL;
    CHECK_STATUS(nnm_scratch_planner_init(scratch + 1, NNM_SCRATCH_PLANNER_BYTES(buffers), algorithm, &p), NNM_OK);
    CHECK(p != NULL);
    return p;
}

static uint32_t plan(nnm_scratch_planner *p) {
    uint32_t bytes = 0;
    CHECK_STATUS(nnm_scratch_planner_plan(p, &bytes), NNM_OK);
    return bytes;
}

static uint32_t offset(nnm_scratch_planner *p, size_t i) {
    uint32_t at = UINT32_MAX;
    CHECK_STATUS(nnm_scratch_planner_get_offset(p, i, &at), NNM_OK);
    return at;
}

/* TFLite Micro's DoAnyBuffersOverlap: no two buffers live together share a
 * byte (inclusive steps). */
static int any_overlap(nnm_scratch_planner *p, size_t n) {
    size_t i, j;
    for (i = 0; i < n; i++) {
        for (j = i + 1; j < n; j++) {
            nnm_scratch_buffer a, b;
            CHECK_STATUS(nnm_scratch_planner_get_buffer(p, i, &a), NNM_OK);
            CHECK_STATUS(nnm_scratch_planner_get_buffer(p, j, &b), NNM_OK);
            if (a.first_use > b.last_use || b.first_use > a.last_use) continue;
            if (a.offset < b.offset + b.size && b.offset < a.offset + a.size) return 1;
        }
    }
    return 0;
}

static void greedy_basics_and_medium(void) {
    nnm_scratch_planner *p = make(NNM_ALGORITHM_TFLM, 8);
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, 10, 0, 1, NULL), NNM_OK);
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, 20, 2, 3, NULL), NNM_OK);
    CHECK(!any_overlap(p, 2));
    CHECK(plan(p) == 20);
    CHECK(offset(p, 0) == 0 && offset(p, 1) == 0);

    p = make(NNM_ALGORITHM_TFLM, 8);
    {
        static const int medium[5][3] = {{10, 0, 1}, {20, 1, 2}, {30, 2, 3}, {40, 3, 4}, {50, 0, 1}};
        static const uint32_t want[5] = {50, 70, 40, 0, 0};
        size_t i;
        for (i = 0; i < 5; i++) {
            CHECK_STATUS(nnm_scratch_planner_add_buffer(p, (uint32_t)medium[i][0], medium[i][1], medium[i][2], NULL),
                         NNM_OK);
        }
        for (i = 0; i < 5; i++) CHECK(offset(p, i) == want[i]);
        CHECK(!any_overlap(p, 5));
        CHECK(plan(p) == 90);
    }
}

static void person_detection_model_and_overlap_case(void) {
    /* TFLite Micro's TestPersonDetectionModel: buffers from the 250 KB
     * MobileNet model; no overlap and less than the 241,027 B they sum to. */
    static const int model[30][3] = {
        {9216, 0, 29},   {3, 28, 29},     {256, 27, 28},   {2304, 26, 27},  {2304, 25, 26},  {2304, 24, 25},
        {1152, 23, 24},  {4608, 22, 23},  {4608, 21, 22},  {4608, 20, 21},  {4608, 19, 20},  {4608, 18, 19},
        {4608, 17, 18},  {4608, 16, 17},  {4608, 15, 16},  {4608, 14, 15},  {4608, 13, 14},  {4608, 12, 13},
        {2304, 11, 12},  {9216, 10, 11},  {9216, 9, 10},   {9216, 8, 9},    {4608, 7, 8},    {18432, 6, 7},
        {18432, 5, 6},   {18432, 4, 5},   {9216, 3, 4},    {36864, 2, 3},   {18432, 1, 2},   {18432, 0, 1}};
    nnm_scratch_planner *p = make(NNM_ALGORITHM_TFLM, 30);
    size_t i;
    for (i = 0; i < 30; i++) {
        CHECK_STATUS(nnm_scratch_planner_add_buffer(p, (uint32_t)model[i][0], model[i][1], model[i][2], NULL), NNM_OK);
    }
    CHECK(!any_overlap(p, 30));
    CHECK(plan(p) < 241027u);

    /* TestOverlapCase: 120 B. */
    p = make(NNM_ALGORITHM_TFLM, 3);
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, 100, 0, 1, NULL), NNM_OK);
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, 50, 2, 3, NULL), NNM_OK);
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, 20, 1, 2, NULL), NNM_OK);
    CHECK(!any_overlap(p, 3));
    CHECK(plan(p) == 120);
}

static void small_scratch(void) {
    /* TestSmallScratch: 40 B of scratch holds one buffer, as in TFLite
     * Micro; the second is refused with the bytes missing. */
    nnm_scratch_planner *p = NULL;
    size_t count = 9, capacity = 9;
    CHECK(NNM_SCRATCH_PLANNER_HEADER_BYTES + NNM_SCRATCH_PLANNER_BYTES_PER_BUFFER <= 40);
    CHECK_STATUS(nnm_scratch_planner_init(scratch, 40, NNM_ALGORITHM_TFLM, &p), NNM_OK);
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, 100, 0, 1, NULL), NNM_OK);
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, 50, 2, 3, NULL), NNM_DOES_NOT_FIT);
    CHECK_MESSAGE("scratch of 40 B holds 1 buffers; one more needs 60 B (20 B missing)");
    CHECK_STATUS(nnm_scratch_planner_buffer_count(p, &count, &capacity), NNM_OK);
    CHECK(count == 1 && capacity == 1);
    CHECK(plan(p) == 100);
    /* At any address: 40 B from an odd one still hold one buffer; the bytes
     * missing count the 3 lost to aligning the start. */
    CHECK_STATUS(nnm_scratch_planner_init(scratch + 1, 39, NNM_ALGORITHM_TFLM, &p), NNM_OK);
    CHECK_STATUS(nnm_scratch_planner_buffer_count(p, NULL, &capacity), NNM_OK);
    CHECK(capacity == 1);
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, 100, 0, 1, NULL), NNM_OK);
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, 50, 2, 3, NULL), NNM_DOES_NOT_FIT);
    CHECK_MESSAGE("scratch of 39 B holds 1 buffers; one more needs 63 B (24 B missing)");
    CHECK(NNM_SCRATCH_PLANNER_BYTES(2) == 63);
    CHECK_STATUS(nnm_scratch_planner_init(scratch + 1, 2, NNM_ALGORITHM_TFLM, &p), NNM_DOES_NOT_FIT);
    CHECK_MESSAGE("it needs 15 B (13 B missing)");
}

/* TFLite Micro's own plans of the two lists, byte for byte. */
static void lists_as_tflite_micro_plans_them(void) {
    nnm_scratch_planner *p = make(NNM_ALGORITHM_TFLM, 100);
    size_t i;
    for (i = 0; i < NNM_BOARD_LIST_100_COUNT; i++) {
        const nnm_board_buffer *b = &nnm_board_list_100[i];
        CHECK_STATUS(nnm_scratch_planner_add_buffer(p, (uint32_t)b->size, b->first_use, b->last_use, NULL), NNM_OK);
    }
    CHECK(plan(p) == TFLM_ARENA_100);
    for (i = 0; i < NNM_BOARD_LIST_100_COUNT; i++) CHECK(offset(p, i) == tflm_offsets_100[i]);

    p = make(NNM_ALGORITHM_TFLM, 30);
    for (i = 0; i < NNM_BOARD_LIST_PERSON_DETECT_COUNT; i++) {
        const nnm_board_buffer *b = &nnm_board_list_person_detect[i];
        CHECK_STATUS(nnm_scratch_planner_add_buffer(p, (uint32_t)b->size, b->first_use, b->last_use, NULL), NNM_OK);
    }
    CHECK(plan(p) == TFLM_ARENA_PERSON_DETECT);
    for (i = 0; i < NNM_BOARD_LIST_PERSON_DETECT_COUNT; i++) CHECK(offset(p, i) == tflm_offsets_person_detect[i]);
    {
        uint32_t bound = 0;
        CHECK_STATUS(nnm_scratch_planner_lower_bound(p, &bound), NNM_OK);
        CHECK(bound == TFLM_ARENA_PERSON_DETECT);
    }
}

static void offline_offsets(void) {
    /* micro_allocator_test.cc, OfflinePlannerOverlappingAllocation: t0 and t1
     * share offset 0 on purpose; TFLite Micro puts t3 at 0. */
    nnm_scratch_planner *p = make(NNM_ALGORITHM_TFLM, 4);
    uint64_t pairs = 0;
    CHECK_STATUS(nnm_scratch_planner_add_fixed_buffer(p, 48, 0, 0, 0, NULL), NNM_OK);
    CHECK_STATUS(nnm_scratch_planner_add_fixed_buffer(p, 48, -1, 0, 0, NULL), NNM_OK);
    CHECK_STATUS(nnm_scratch_planner_add_fixed_buffer(p, 48, 1, 1, 48, NULL), NNM_OK);
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, 48, 1, 1, NULL), NNM_OK);
    CHECK(offset(p, 0) == 0 && offset(p, 1) == 0 && offset(p, 2) == 48 && offset(p, 3) == 0);
    CHECK_STATUS(nnm_scratch_planner_fixed_overlap_count(p, &pairs), NNM_OK);
    CHECK(pairs == 1);

    /* OfflinePlannerOfflineOnline: t2 at 96, t4 at 48. */
    p = make(NNM_ALGORITHM_TFLM, 5);
    CHECK_STATUS(nnm_scratch_planner_add_fixed_buffer(p, 48, 0, 0, 0, NULL), NNM_OK);
    CHECK_STATUS(nnm_scratch_planner_add_fixed_buffer(p, 48, -1, 0, 48, NULL), NNM_OK);
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, 48, 0, 1, NULL), NNM_OK);
    CHECK_STATUS(nnm_scratch_planner_add_fixed_buffer(p, 48, 1, 1, 0, NULL), NNM_OK);
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, 48, 1, 1, NULL), NNM_OK);
    CHECK(offset(p, 2) == 96 && offset(p, 4) == 48);
}

static void linear_and_size_first_fit(void) {
    nnm_scratch_planner *p = make(NNM_ALGORITHM_LINEAR, 3);
    size_t index = 99;
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, 10, 0, 1, &index), NNM_OK);
    CHECK(index == 0);
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, 20, 2, 3, &index), NNM_OK);
    CHECK(index == 1);
    CHECK(plan(p) == 30 && offset(p, 1) == 10);
    /* Never used buffers are stacked too, and the size covers them, as
     * LinearMemoryPlanner's does. */
    p = make(NNM_ALGORITHM_LINEAR, 2);
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, 50, -1, 3, NULL), NNM_OK);
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, 100, -1, -1, NULL), NNM_OK);
    CHECK(plan(p) == 150 && offset(p, 1) == 50);
    /* A plan made elsewhere: checked against the buffers. */
    {
        static const uint32_t two[2] = {0, 64};
        uint32_t bytes = 0;
        CHECK_STATUS(nnm_scratch_planner_set_plan(p, two, 1, &bytes), NNM_INVALID_ARGUMENT);
        CHECK_MESSAGE("a plan of 1 offsets for 2 buffers");
        CHECK_STATUS(nnm_scratch_planner_set_plan(p, NULL, 2, &bytes), NNM_NULL_ARGUMENT);
        CHECK_STATUS(nnm_scratch_planner_set_plan(p, two, 2, &bytes), NNM_OK);
        CHECK(bytes == 164 && offset(p, 1) == 64);
    }

    p = make(NNM_ALGORITHM_SIZE_FIRST_FIT, 3);
    CHECK_STATUS(nnm_scratch_planner_set_alignment(p, 16), NNM_OK);
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, 10, 0, 1, NULL), NNM_OK);
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, 20, 1, 2, NULL), NNM_OK);
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, 5, 2, 3, NULL), NNM_OK);
    CHECK(plan(p) == 48);
    CHECK(offset(p, 1) == 0 && offset(p, 0) == 32 && offset(p, 2) == 32);
}

static void refusals(void) {
    nnm_scratch_planner *p = NULL;
    uint32_t out = 7;
    static unsigned char zeros[64];
    CHECK_STATUS(nnm_scratch_planner_init(NULL, 100, NNM_ALGORITHM_TFLM, &p), NNM_NULL_ARGUMENT);
    CHECK_MESSAGE("scratch is NULL");
    CHECK_STATUS(nnm_scratch_planner_init(scratch, 100, NNM_ALGORITHM_TFLM, NULL), NNM_NULL_ARGUMENT);
    CHECK_STATUS(nnm_scratch_planner_init(scratch, 100, NNM_ALGORITHM_AUTO, &p), NNM_INVALID_ARGUMENT);
    CHECK_MESSAGE("algorithm auto needs the heap planner");
    CHECK_STATUS(nnm_scratch_planner_init(scratch, 100, 99, &p), NNM_INVALID_ARGUMENT);
    CHECK_MESSAGE("unknown algorithm value 99");
    CHECK_STATUS(nnm_scratch_planner_init(scratch, 8, NNM_ALGORITHM_TFLM, &p), NNM_DOES_NOT_FIT);
    CHECK_MESSAGE("it needs 12 B (4 B missing)");
    CHECK(p == NULL);
    CHECK_STATUS(nnm_scratch_planner_plan((nnm_scratch_planner *)(void *)zeros, &out), NNM_INVALID_ARGUMENT);
    CHECK_MESSAGE("not a scratch planner");
    CHECK_STATUS(nnm_scratch_planner_plan(NULL, &out), NNM_NULL_ARGUMENT);
    CHECK_STATUS(nnm_scratch_planner_plan((nnm_scratch_planner *)(void *)(scratch + 1), &out), NNM_INVALID_ARGUMENT);
    CHECK_MESSAGE("planner is not aligned to 4 bytes");
    CHECK(out == 7);

    p = make(NNM_ALGORITHM_TFLM, 4);
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, 8, 2, 1, NULL), NNM_INVALID_ARGUMENT);
    CHECK_MESSAGE("first_use 2, last_use 1");
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, 8, -2, 1, NULL), NNM_INVALID_ARGUMENT);
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, UINT32_MAX, 0, 1, NULL), NNM_OK);
    CHECK_STATUS(nnm_scratch_planner_add_buffer(p, 1, 0, 1, NULL), NNM_OK);
    CHECK_STATUS(nnm_scratch_planner_plan(p, &out), NNM_OVERFLOW);
    CHECK_MESSAGE("buffer 1 of 1 B: the sizes of the buffers up to it plus the highest fixed end pass 2^32 - 1 B");
    CHECK_STATUS(nnm_scratch_planner_get_offset(p, 0, &out), NNM_OVERFLOW);
    CHECK_STATUS(nnm_scratch_planner_get_offset(p, 2, &out), NNM_INVALID_ARGUMENT);
    CHECK_MESSAGE("buffer index 2 is out of range (2 buffers added)");
    CHECK(out == 7);
    CHECK_STATUS(nnm_scratch_planner_get_offset(p, 0, NULL), NNM_NULL_ARGUMENT);
    CHECK_STATUS(nnm_scratch_planner_set_alignment(p, 4), NNM_WRONG_STATE);
    CHECK_STATUS(nnm_scratch_planner_reset(p), NNM_OK);
    CHECK_STATUS(nnm_scratch_planner_set_alignment(p, 3), NNM_INVALID_ARGUMENT);
    CHECK(strcmp(nnm_status_str(NNM_DOES_NOT_FIT), "does not fit") == 0);
}

int main(void) {
    greedy_basics_and_medium();
    person_detection_model_and_overlap_case();
    small_scratch();
    lists_as_tflite_micro_plans_them();
    offline_offsets();
    linear_and_size_first_fit();
    refusals();
    printf("planner_board (nnmem %s): %s\n", nnm_version(), failures ? "FAILED" : "passed");
    return failures ? 1 : 0;
}
