/*
 * The code a C program pulls in to use the tensor arena in its own memory:
 * nnm_arena_init and every call the embedded build holds on an arena
 * (persistent, temp, release and reset, the head, sizes, the guard check,
 * categories, free). With SIZE_ARENA_GUARD_AND_RECORDING the arena is made
 * in guard mode and records, for a library built with the arena-guard and
 * arena-recording features. Linked with --gc-sections for scripts/board-bench.sh,
 * which counts the bytes that come from libnnmem.a (code_size.py); run, it
 * exits with 0 when the calls give what the arena promises.
 */
#include <nnmem/arena.h>

static uint64_t state[NNM_ARENA_STATE_BYTES(4, 16) / 8 + 1];
static uint64_t buffer[4096 / 8];

int main(void) {
    nnm_arena *a = NULL;
    void *p = NULL, *t = NULL, *head = NULL;
    nnm_arena_sizes s;
    nnm_arena_category_stats c;
#ifdef SIZE_ARENA_GUARD_AND_RECORDING
    const uint64_t recorded = 1;
    if (nnm_arena_init(state, sizeof state, 4, buffer, sizeof buffer, 0, NNM_ARENA_GUARD, &a) != NNM_OK) return 1;
    if (nnm_arena_set_recording(a, 1) != NNM_OK) return 2;
#else
    const uint64_t recorded = 0;
    if (nnm_arena_init(state, sizeof state, 4, buffer, sizeof buffer, 0, 0, &a) != NNM_OK) return 1;
#endif
    if (nnm_arena_alloc_persistent(a, 100, 0, NNM_ARENA_CATEGORY_OP_DATA, &p) != NNM_OK) return 3;
    if (nnm_arena_reserve_head(a, 1000, NNM_ARENA_CATEGORY_PLANNED_TENSOR_DATA, &head) != NNM_OK) return 4;
    if (nnm_arena_alloc_temp(a, 200, 0, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &t) != NNM_OK) return 5;
    if (nnm_arena_release_temp(a, t) != NNM_OK || nnm_arena_reset_temp(a) != NNM_OK) return 6;
    if (nnm_arena_check(a) != NNM_OK || nnm_arena_reset_head(a) != NNM_OK) return 7;
    if (nnm_arena_get_sizes(a, &s) != NNM_OK || s.persistent_count != 1 || s.required_bytes == 0) return 8;
    if (nnm_arena_get_category(a, NNM_ARENA_CATEGORY_OP_DATA, &c) != NNM_OK || c.count != recorded) return 9;
    nnm_arena_free(a);
    return 0;
}
