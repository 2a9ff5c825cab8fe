/*
 * The code a C program pulls in to plan with NNM_ALGORITHM_TFLM: make the
 * planner in a scratch buffer, add the buffers, plan, read the offsets.
 * Linked with --gc-sections for scripts/board-bench.sh, which counts the
 * bytes that come from libnnmem.a (code_size.py); run, it exits with 0
 * when the plan is TFLite Micro's (arena of person_detect: 55,296 B).
 */
#include <nnmem/scratch_planner.h>

#include "plan_lists.h"

static uint32_t scratch[NNM_SCRATCH_PLANNER_BYTES(NNM_BOARD_LIST_PERSON_DETECT_COUNT) / 4 + 1];

int main(void) {
    nnm_scratch_planner *p = NULL;
    uint32_t bytes = 0, offset = 0, sum = 0;
    size_t i;
    if (nnm_scratch_planner_init(scratch, sizeof scratch, NNM_ALGORITHM_TFLM, &p) != NNM_OK) return 1;
    for (i = 0; i < NNM_BOARD_LIST_PERSON_DETECT_COUNT; i++) {
        const nnm_board_buffer *b = &nnm_board_list_person_detect[i];
        if (nnm_scratch_planner_add_buffer(p, (uint32_t)b->size, b->first_use, b->last_use, NULL) != NNM_OK) return 2;
    }
    if (nnm_scratch_planner_plan(p, &bytes) != NNM_OK) return 3;
    for (i = 0; i < NNM_BOARD_LIST_PERSON_DETECT_COUNT; i++) {
        if (nnm_scratch_planner_get_offset(p, i, &offset) != NNM_OK) return 4;
        sum += offset;
    }
    return bytes == 55296u && sum > 0 ? 0 : 5;
}
