/* A program that includes one topic header and nothing else of nnmem:
 * <nnmem/pool.h> brings what it needs (nnm_status, nnm_last_error from
 * <nnmem/common.h>), installed under the same include directory as nnmem.h. */
#include <stdio.h>

#include <nnmem/pool.h>

int main(void) {
    nnm_device_allocator *host = NULL;
    nnm_pool_options options;
    nnm_pool *pool = NULL;
    void *ptr = NULL;
    nnm_status s = nnm_device_allocator_host(&host);
    if (s == NNM_OK) {
        s = nnm_pool_options_default(&options);
    }
    if (s == NNM_OK) {
        s = nnm_pool_new(host, NNM_STRATEGY_CACHING, &options, &pool);
    }
    if (s == NNM_OK) {
        s = nnm_pool_alloc(pool, 1000, 0, NULL, &ptr);
    }
    if (s == NNM_OK) {
        s = nnm_pool_dealloc(pool, ptr);
    }
    nnm_pool_free(pool);
    nnm_device_allocator_free(host);
    if (s != NNM_OK) {
        fprintf(stderr, "pool through <nnmem/pool.h> alone: %s (%s)\n", nnm_status_str(s), nnm_last_error());
        return 1;
    }
    printf("nnmem %s: a pool through <nnmem/pool.h> alone\n", nnm_version());
    return 0;
}
