/* A program built against an *installed* nnmem, through find_package(nnmem)
 * (CMakeLists.txt beside this file) or through pkg-config
 * (`cc main.c $(pkg-config --cflags --libs nnmem)`). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <nnmem.h>
#include <nnmem/list.h>

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
    if (result.peak_bytes != 96) return 1;

    /* The net API and the installed <nnmem/list.h>: attach, walk, free. */
    nnm_net *net = NULL;
    uint32_t dims[2] = {4, 3};
    if (nnm_net_new(8, &net) != NNM_OK ||
        nnm_net_attach_param(net, "fc.W", NNM_DTYPE_F32, dims, 2, NULL) != NNM_OK ||
        nnm_net_attach_param(net, "fc.b", NNM_DTYPE_F32, &dims[1], 1, NULL) != NNM_OK) {
        fprintf(stderr, "net: %s\n", nnm_last_error());
        nnm_net_free(net);
        return 1;
    }
    nnm_param *p;
    uint64_t bytes = 0;
    list_for_each_entry(p, &net->params, node) bytes += p->data.bytes;
    printf("net: %zu params, %llu B of data\n", list_count(&net->params), (unsigned long long)bytes);
    nnm_net_free(net);
    return bytes == 60 ? 0 : 1;
}
