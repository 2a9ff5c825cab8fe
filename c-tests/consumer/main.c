/* A program built against an *installed* nnmem, through find_package(nnmem)
 * (CMakeLists.txt beside this file) or through pkg-config
 * (`cc main.c $(pkg-config --cflags --libs nnmem)`). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <nnmem.h>

#define TRY(call)                                                                      \
    do {                                                                               \
        nnm_status s_ = (call);                                                        \
        if (s_ != NNM_OK) {                                                            \
            fprintf(stderr, "%s: %s (%s)\n", #call, nnm_status_str(s_), nnm_last_error()); \
            nnm_planner_free(planner);                                                 \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

int main(void) {
    if (strcmp(nnm_version(), NNM_VERSION_STRING) != 0) {
        fprintf(stderr, "header %s, library %s\n", NNM_VERSION_STRING, nnm_version());
        return 1;
    }

    /* Three buffers: the first and last are never live together. */
    nnm_planner *planner = NULL;
    TRY(nnm_planner_new(&planner));
    TRY(nnm_planner_set_alignment(planner, 1));
    TRY(nnm_planner_add_buffer(planner, 64, 0, 1, NULL));
    TRY(nnm_planner_add_buffer(planner, 32, 1, 2, NULL));
    TRY(nnm_planner_add_buffer(planner, 64, 2, 3, NULL));
    TRY(nnm_planner_plan(planner));

    uint64_t offsets[3];
    nnm_plan_result result;
    TRY(nnm_planner_get_offsets(planner, offsets, 3));
    TRY(nnm_planner_get_result(planner, &result));
    printf("nnmem %s: peak %llu B (lower bound %llu B), offsets %llu %llu %llu\n", nnm_version(),
           (unsigned long long)result.peak_bytes, (unsigned long long)result.lower_bound_bytes,
           (unsigned long long)offsets[0], (unsigned long long)offsets[1],
           (unsigned long long)offsets[2]);
    nnm_planner_free(planner);
    return result.peak_bytes == 96 ? 0 : 1;
}
