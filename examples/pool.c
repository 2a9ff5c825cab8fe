/*
 * A memory pool over host memory, as a runtime would use one instead of
 * malloc/free for its tensors: make the pool, allocate and free blocks,
 * read the statistics, print the report.
 *
 * Build, with nnmem installed under /opt/nnmem (`cmake --install build --prefix
 * /opt/nnmem`; for another prefix, replace /opt/nnmem; lib64 for lib where
 * CMake installs there, as on Fedora and openSUSE), with pkg-config:
 *   export PKG_CONFIG_PATH=/opt/nnmem/lib/pkgconfig
 *   cc -std=c11 pool.c $(pkg-config --cflags --libs nnmem) -Wl,-rpath,/opt/nnmem/lib
 * or without it:
 *   cc -std=c11 pool.c -I/opt/nnmem/include -L/opt/nnmem/lib -lnnmem -Wl,-rpath,/opt/nnmem/lib
 * With CMake, link nnmem::static (README, "Linking from CMake").
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "nnmem.h"

static void print_line(void *user, const char *text, size_t len) {
    (void)user;
    fwrite(text, 1, len, stdout);
}

static int fail(const char *what) {
    fprintf(stderr, "%s failed: %s\n", what, nnm_last_error());
    return 1;
}

int main(void) {
    nnm_pool_options options;
    nnm_pool *pool = NULL;
    nnm_pool_stats stats;
    void *blocks[4];
    const size_t sizes[4] = {1000, 64 * 1024, 1000, 3 << 20};
    int i, step;

    /* RAF's page-unit strategy (sizes rounded up to 4 KiB pages, idle blocks
     * of the same size reused) over the host allocator (NULL), with a 64 MiB
     * hard limit. NNM_STRATEGY_CACHING splits and merges blocks instead. */
    if (nnm_pool_options_default(&options) != NNM_OK) return fail("nnm_pool_options_default");
    options.limit_bytes = 64u << 20;
    if (nnm_pool_new(NULL, NNM_STRATEGY_PAGE_UNIT, &options, &pool) != NNM_OK) return fail("nnm_pool_new");

    /* Three "iterations" of the same allocations: after the first, the pool
     * serves them from its cache without calling the device. */
    for (step = 0; step < 3; ++step) {
        for (i = 0; i < 4; ++i) {
            /* Alignment 0: 256 B; stream NULL: the default stream. */
            if (nnm_pool_alloc(pool, sizes[i], 0, NULL, &blocks[i]) != NNM_OK) return fail("nnm_pool_alloc");
            memset(blocks[i], i, sizes[i]);
        }
        for (i = 0; i < 4; ++i) {
            if (nnm_pool_dealloc(pool, blocks[i]) != NNM_OK) return fail("nnm_pool_dealloc");
        }
    }

    if (nnm_pool_get_stats(pool, &stats) != NNM_OK) return fail("nnm_pool_get_stats");
    printf("allocations %" PRIu64 ", device allocations %" PRIu64 ", reserved %" PRIu64 " B (peak %" PRIu64
           " B), in use %" PRIu64 " B\n",
           stats.allocs, stats.device_allocs, stats.reserved_bytes, stats.reserved_peak, stats.allocated_bytes);
    if (nnm_pool_report_write(pool, NNM_REPORT_FORMAT_TEXT, print_line, NULL) != NNM_OK) {
        return fail("nnm_pool_report_write");
    }
    nnm_pool_free(pool); /* gives the cached memory back */
    /* Nothing is left out, and the cache served the second and third
     * rounds: fewer device calls than allocations. */
    return stats.allocated_bytes == 0 && stats.device_allocs < stats.allocs ? 0 : 1;
}
