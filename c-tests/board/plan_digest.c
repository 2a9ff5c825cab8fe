/*
 * The same plans on the host and on the board: 300 deterministic random
 * buffer sets (xorshift32; sizes from 0 to 6,000 B, TFLite Micro's step
 * conventions with never-used and read-before-the-first-step buffers,
 * offline offsets, some sharing memory), each planned by the scratch
 * planner with TFLM, LINEAR and SIZE_FIRST_FIT at alignments 1, 4 and 16.
 * One line per plan: the round, algorithm, arena bytes, lower bound, fixed
 * pairs sharing memory and an FNV-1a hash of the offsets. scripts/board-test.sh
 * builds this file for the host (against the host build) and for each
 * board and requires identical output. Exits non-zero when a call fails.
 */
#include <stdint.h>
#include <stdio.h>

#include <nnmem/scratch_planner.h>

#define MAX_BUFFERS 48

static uint32_t state = 0x2545F491u;

static uint32_t next(void) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return state;
}

static uint32_t scratch[NNM_SCRATCH_PLANNER_BYTES(MAX_BUFFERS) / 4 + 1];

int main(void) {
    static const uint32_t algorithms[3] = {NNM_ALGORITHM_TFLM, NNM_ALGORITHM_LINEAR, NNM_ALGORITHM_SIZE_FIRST_FIT};
    static const uint32_t sizes[8] = {0, 1, 16, 48, 100, 256, 1000, 6000};
    uint32_t total = 2166136261u;
    int round;
    for (round = 0; round < 300; round++) {
        const int n = 1 + (int)(next() % MAX_BUFFERS);
        const uint32_t alignment = round % 3 == 0 ? 1u : round % 3 == 1 ? 4u : 16u;
        uint32_t size[MAX_BUFFERS], offline[MAX_BUFFERS];
        int32_t first[MAX_BUFFERS], last[MAX_BUFFERS];
        int i, a;
        for (i = 0; i < n; i++) {
            const uint32_t kind = next() % 16;
            size[i] = sizes[next() % 8];
            if (kind == 0) {
                first[i] = last[i] = -1;
            } else if (kind == 1) {
                first[i] = -1;
                last[i] = (int32_t)(next() % 12);
            } else {
                first[i] = (int32_t)(next() % 24);
                last[i] = first[i] + (int32_t)(next() % 8);
            }
            offline[i] = next() % 5 == 0 ? (next() % 12) * 16u : UINT32_MAX;
        }
        for (a = 0; a < 3; a++) {
            nnm_scratch_planner *p = NULL;
            uint32_t bytes = 0, bound = 0, hash = 2166136261u;
            uint64_t pairs = 0;
            if (nnm_scratch_planner_init(scratch, sizeof scratch, algorithms[a], &p) != NNM_OK ||
                nnm_scratch_planner_set_alignment(p, alignment) != NNM_OK) {
                printf("round %d: %s\n", round, nnm_last_error());
                return 1;
            }
            for (i = 0; i < n; i++) {
                const nnm_status s =
                    offline[i] == UINT32_MAX
                        ? nnm_scratch_planner_add_buffer(p, size[i], first[i], last[i], NULL)
                        : nnm_scratch_planner_add_fixed_buffer(p, size[i], first[i], last[i], offline[i], NULL);
                if (s != NNM_OK) {
                    printf("round %d buffer %d: %s\n", round, i, nnm_last_error());
                    return 1;
                }
            }
            if (nnm_scratch_planner_plan(p, &bytes) != NNM_OK || nnm_scratch_planner_lower_bound(p, &bound) != NNM_OK ||
                nnm_scratch_planner_fixed_overlap_count(p, &pairs) != NNM_OK) {
                printf("round %d: %s\n", round, nnm_last_error());
                return 1;
            }
            for (i = 0; i < n; i++) {
                uint32_t at = 0;
                int byte;
                if (nnm_scratch_planner_get_offset(p, (size_t)i, &at) != NNM_OK) return 1;
                for (byte = 0; byte < 4; byte++) hash = (hash ^ ((at >> (8 * byte)) & 0xffu)) * 16777619u;
            }
            total = (total ^ hash) * 16777619u;
            printf("%d %u %lu %lu %lu %08lx\n", round, (unsigned)algorithms[a], (unsigned long)bytes,
                   (unsigned long)bound, (unsigned long)pairs, (unsigned long)hash);
        }
    }
    printf("all %08lx\n", (unsigned long)total);
    return 0;
}
