/*
 * Device allocators from C: a counting vtable allocator (counts calls and
 * bytes, checks every free against what it handed out, fails on demand)
 * used directly, behind an owned arena and behind a net, so that every
 * byte nnmem allocates is seen to come from it and go back to it; bad
 * vtables; an allocator the CPU cannot read refused for arenas and nets;
 * the CUDA allocator (NOT_FOUND with a message where no CUDA runtime or
 * GPU is, a working round trip where one is); names, mem_info, and the
 * handle's NULL free and double free. Behind pools: `release` never runs
 * while a block a freed pool left out is in use, and an allocator that
 * hands out memory a pool already holds (the same pointer twice, or one
 * inside a held block) is refused by every strategy, losing nothing.
 *
 * Valid C11 and C++ (built both ways).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnm_check.h"
#include "nnmem.h"

/* --- the counting allocator ------------------------------------------------ */

#define MAX_LIVE 64

typedef struct live_block {
    void *ptr;   /* as handed out (aligned) */
    void *raw;   /* as malloc returned it */
    size_t size;
    void *stream;
} live_block;

typedef struct counting {
    size_t allocs, frees, releases;
    size_t live_bytes, total_bytes;
    size_t fail_above;   /* requests larger than this fail (NULL) */
    size_t bad_frees;    /* frees of unknown pointers, or with another size or stream */
    live_block live[MAX_LIVE];
    int last;            /* the slot of the last block handed out (-1: none) */
    /* Misbehaving on demand: while set, alloc hands out the last block
     * again, `again_offset` bytes in, allocating nothing. */
    int again;
    size_t again_offset;
    size_t agains;       /* pointers so handed out */
} counting;

static void counting_init(counting *c, size_t fail_above) {
    memset(c, 0, sizeof *c);
    c->fail_above = fail_above;
    c->last = -1;
}

static void *counting_alloc(void *ctx, size_t size, size_t alignment, void *stream) {
    counting *c = (counting *)ctx;
    if (c->again && c->last >= 0 && c->live[c->last].ptr != NULL) {
        c->agains += 1;
        return (unsigned char *)c->live[c->last].ptr + c->again_offset;
    }
    if (size > c->fail_above) {
        return NULL;
    }
    for (int i = 0; i < MAX_LIVE; ++i) {
        if (c->live[i].ptr == NULL) {
            /* Aligned by hand: portable C11 and C++17 alike. */
            unsigned char *raw = (unsigned char *)malloc(size + alignment);
            if (raw == NULL) {
                return NULL;
            }
            uintptr_t at = ((uintptr_t)raw + alignment - 1) & ~(uintptr_t)(alignment - 1);
            void *p = raw + (at - (uintptr_t)raw);
            live_block b = {p, raw, size, stream};
            c->live[i] = b;
            c->last = i;
            c->allocs += 1;
            c->live_bytes += size;
            c->total_bytes += size;
            return p;
        }
    }
    return NULL;
}

static void counting_free(void *ctx, void *ptr, size_t size, void *stream) {
    counting *c = (counting *)ctx;
    for (int i = 0; i < MAX_LIVE; ++i) {
        if (c->live[i].ptr == ptr && ptr != NULL) {
            if (c->live[i].size != size || c->live[i].stream != stream) {
                c->bad_frees += 1;
            }
            free(c->live[i].raw);
            c->live[i].ptr = NULL;
            c->frees += 1;
            c->live_bytes -= c->live[i].size;
            return;
        }
    }
    c->bad_frees += 1;
}

static int counting_mem_info(void *ctx, uint64_t *free_bytes, uint64_t *total_bytes) {
    counting *c = (counting *)ctx;
    *total_bytes = c->fail_above;
    *free_bytes = c->fail_above - c->live_bytes;
    return 0;
}

static void counting_release(void *ctx) {
    ((counting *)ctx)->releases += 1;
}

static nnm_device_allocator_vtable counting_vtable(counting *c, uint32_t flags) {
    nnm_device_allocator_vtable v;
    memset(&v, 0, sizeof v);
    v.name = "counting";
    v.ctx = c;
    v.alloc = counting_alloc;
    v.free = counting_free;
    v.mem_info = counting_mem_info;
    v.release = counting_release;
    v.flags = flags;
    return v;
}

static nnm_device_allocator *make(counting *c, uint32_t flags) {
    nnm_device_allocator_vtable v = counting_vtable(c, flags);
    nnm_device_allocator *a = NULL;
    CHECK_OK(nnm_device_allocator_new(&v, &a));
    return a;
}

static int last_error_has(const char *text) {
    return strstr(nnm_last_error(), text) != NULL;
}

/* Frees what nnmem will never give back (blocks a freed pool left out), as
 * a runtime tearing down its own heap would; returns how many. */
static int counting_teardown(counting *c) {
    int n = 0;
    for (int i = 0; i < MAX_LIVE; ++i) {
        if (c->live[i].ptr != NULL) {
            free(c->live[i].raw);
            c->live[i].ptr = NULL;
            c->live_bytes -= c->live[i].size;
            ++n;
        }
    }
    return n;
}

/* --- tests -------------------------------------------------------------------- */

static void test_direct_allocations(void) {
    counting c;
    counting_init(&c, 1 << 20);
    nnm_device_allocator *a = make(&c, NNM_DEVICE_HOST_ACCESSIBLE);
    CHECK(strcmp(nnm_device_allocator_name(a), "counting") == 0);

    void *p = NULL, *q = NULL;
    int stream_token = 0;
    CHECK_OK(nnm_device_allocator_alloc(a, 100, 64, NULL, &p));
    CHECK_OK(nnm_device_allocator_alloc(a, 5000, 4096, &stream_token, &q));
    CHECK(p != NULL && (uintptr_t)p % 64 == 0);
    CHECK(q != NULL && (uintptr_t)q % 4096 == 0);
    memset(p, 0xab, 100);
    CHECK(c.allocs == 2 && c.live_bytes == 5100);

    uint64_t free_bytes = 0, total_bytes = 0;
    CHECK_OK(nnm_device_allocator_mem_info(a, &free_bytes, &total_bytes));
    CHECK(total_bytes == (1u << 20) && free_bytes == (1u << 20) - 5100);

    /* Failure on demand: OUT_OF_MEMORY naming the allocator and the size. */
    void *big = NULL;
    CHECK_FAILS(nnm_device_allocator_alloc(a, (1 << 20) + 1, 16, NULL, &big), NNM_OUT_OF_MEMORY);
    CHECK(last_error_has("counting") && last_error_has("1048577 B"));
    CHECK(big == NULL);
    CHECK_FAILS(nnm_device_allocator_alloc(a, 0, 16, NULL, &big), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_device_allocator_alloc(a, 8, 24, NULL, &big), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_device_allocator_alloc(a, 8, 8, NULL, NULL), NNM_NULL_ARGUMENT);

    CHECK_OK(nnm_device_allocator_dealloc(a, p));
    CHECK_FAILS(nnm_device_allocator_dealloc(a, p), NNM_INVALID_ARGUMENT); /* double free */
    CHECK_OK(nnm_device_allocator_dealloc(a, NULL));
    CHECK(c.frees == 1 && c.live_bytes == 5000);

    /* Freeing the handle gives back what it still holds, then releases. */
    nnm_device_allocator_free(a);
    CHECK(c.allocs == 2 && c.frees == 2 && c.live_bytes == 0);
    CHECK(c.releases == 1 && c.bad_frees == 0);

    /* The handle's NULL free is a no-op; a double free is reported. */
    nnm_device_allocator_free(NULL);
    nnm_device_allocator_free(a);
    CHECK(last_error_has("double free"));
    CHECK(c.releases == 1);
}

static void test_bad_vtables(void) {
    counting c;
    counting_init(&c, 1 << 20);
    nnm_device_allocator *a = NULL;
    nnm_device_allocator_vtable v = counting_vtable(&c, 0);
    v.alloc = NULL;
    CHECK_FAILS(nnm_device_allocator_new(&v, &a), NNM_INVALID_ARGUMENT);
    CHECK(last_error_has("alloc is NULL"));
    v = counting_vtable(&c, 0);
    v.free = NULL;
    CHECK_FAILS(nnm_device_allocator_new(&v, &a), NNM_INVALID_ARGUMENT);
    v = counting_vtable(&c, 0);
    v.name = NULL;
    CHECK_FAILS(nnm_device_allocator_new(&v, &a), NNM_NULL_ARGUMENT);
    v = counting_vtable(&c, 0x80);
    CHECK_FAILS(nnm_device_allocator_new(&v, &a), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_device_allocator_new(NULL, &a), NNM_NULL_ARGUMENT);
    v = counting_vtable(&c, 0);
    CHECK_FAILS(nnm_device_allocator_new(&v, NULL), NNM_NULL_ARGUMENT);
    CHECK(a == NULL);
    CHECK(c.releases == 0); /* a refused context stays the caller's */

    /* Without mem_info the device cannot tell: NOT_FOUND, nothing written. */
    v = counting_vtable(&c, 0);
    v.mem_info = NULL;
    v.release = NULL;
    CHECK_OK(nnm_device_allocator_new(&v, &a));
    uint64_t free_bytes = 7, total_bytes = 7;
    CHECK_FAILS(nnm_device_allocator_mem_info(a, &free_bytes, &total_bytes), NNM_NOT_FOUND);
    CHECK(free_bytes == 7 && total_bytes == 7);
    nnm_device_allocator_free(a);
    CHECK(nnm_device_allocator_name(a) == NULL);
}

static void test_owned_arena(void) {
    counting c;
    counting_init(&c, 1 << 20);
    nnm_device_allocator *a = make(&c, NNM_DEVICE_HOST_ACCESSIBLE);
    nnm_arena *arena = NULL;
    CHECK_OK(nnm_arena_new_owned_on(a, 16 * 1024, 0, NNM_ARENA_GUARD, &arena));
    nnm_device_allocator_free(a); /* the arena keeps the allocator */
    CHECK(c.allocs == 1 && c.live_bytes == 16 * 1024 && c.releases == 0);

    void *p = NULL, *t = NULL;
    CHECK_OK(nnm_arena_alloc_persistent(arena, 256, 0, NNM_ARENA_CATEGORY_OTHER, &p));
    CHECK_OK(nnm_arena_alloc_temp(arena, 1024, 0, NNM_ARENA_CATEGORY_OTHER, &t));
    memset(p, 1, 256);
    memset(t, 2, 1024);
    CHECK_OK(nnm_arena_check(arena));
    CHECK(c.allocs == 1); /* the arena allocates nothing more */
    nnm_arena_free(arena);
    CHECK(c.frees == 1 && c.live_bytes == 0 && c.releases == 1 && c.bad_frees == 0);

    /* Device-only memory cannot back an arena; a failing device reports. */
    counting d;
    counting_init(&d, 1 << 20);
    nnm_device_allocator *device_only = make(&d, 0);
    arena = NULL;
    CHECK_FAILS(nnm_arena_new_owned_on(device_only, 4096, 0, 0, &arena), NNM_INVALID_ARGUMENT);
    CHECK(last_error_has("not host-accessible"));
    nnm_device_allocator_free(device_only);
    counting small;
    counting_init(&small, 100);
    nnm_device_allocator *tiny = make(&small, NNM_DEVICE_HOST_ACCESSIBLE);
    CHECK_FAILS(nnm_arena_new_owned_on(tiny, 4096, 0, 0, &arena), NNM_OUT_OF_MEMORY);
    CHECK(last_error_has("counting") && last_error_has("4096 B"));
    CHECK(arena == NULL && d.allocs == 0 && small.allocs == 0);
    nnm_device_allocator_free(tiny);
    /* NULL: the host allocator. */
    CHECK_OK(nnm_arena_new_owned_on(NULL, 4096, 0, 0, &arena));
    nnm_arena_free(arena);
}

static void test_net(void) {
    counting c;
    counting_init(&c, 1 << 20);
    nnm_device_allocator *a = make(&c, NNM_DEVICE_HOST_ACCESSIBLE);
    nnm_net *net = NULL;
    CHECK_OK(nnm_net_new(4, &net));
    CHECK_OK(nnm_net_set_allocator(net, a));
    nnm_device_allocator_free(a); /* the net keeps the allocator */

    const uint32_t w_dims[2] = {8, 16}, y_dims[1] = {10}, c_dims[2] = {4, 10};
    nnm_param *w = NULL;
    nnm_layer_data *y = NULL;
    nnm_cache *cache = NULL;
    CHECK_OK(nnm_net_attach_param(net, "fc1.w", NNM_DTYPE_F32, w_dims, 2, &w));
    CHECK_OK(nnm_net_attach_output(net, "fc1", NNM_DTYPE_F32, y_dims, 1, &y));
    CHECK_OK(nnm_net_attach_cache(net, "fc1.cache", &cache));
    nnm_tensor t1, t2;
    CHECK_OK(nnm_cache_push_new(cache, NNM_DTYPE_F32, c_dims, 2, &t1));
    CHECK_OK(nnm_cache_push_new(cache, NNM_DTYPE_F64, c_dims, 2, &t2));
    ((float *)w->data.data)[0] = 1.0f;
    ((float *)y->diff.data)[39] = 2.0f;
    CHECK(((double *)t2.data)[0] == 0.0); /* zeroed by nnmem */

    /* Every byte nnmem allocated for the net came from the allocator. */
    nnm_net_report r;
    CHECK_OK(nnm_net_get_report(net, &r));
    const size_t expected = 2 * 8 * 16 * 4 + 2 * 4 * 10 * 4 + 4 * 10 * 4 + 4 * 10 * 8;
    CHECK(c.allocs == 6 && c.live_bytes == expected);
    CHECK(r.total_owned_bytes == expected);

    nnm_tensor popped;
    CHECK_OK(nnm_cache_pop(cache, &popped));
    CHECK_OK(nnm_cache_clear(cache));
    CHECK(c.frees == 2 && c.live_bytes == expected - 160 - 320);
    nnm_net_free(net);
    CHECK(c.frees == c.allocs && c.live_bytes == 0 && c.bad_frees == 0 && c.releases == 1);

    /* An allocator the CPU cannot read is refused; the net keeps its own. */
    counting d;
    counting_init(&d, 1 << 20);
    nnm_device_allocator *device_only = make(&d, 0);
    CHECK_OK(nnm_net_new(1, &net));
    CHECK_FAILS(nnm_net_set_allocator(net, device_only), NNM_INVALID_ARGUMENT);
    CHECK(last_error_has("not host-accessible"));
    CHECK_OK(nnm_net_attach_param(net, "b", NNM_DTYPE_F32, w_dims, 1, NULL));
    CHECK(d.allocs == 0);
    CHECK_OK(nnm_net_set_allocator(net, NULL)); /* the host allocator */
    CHECK_FAILS(nnm_net_set_allocator(NULL, NULL), NNM_NULL_ARGUMENT);
    nnm_net_free(net);
    nnm_device_allocator_free(device_only);
    CHECK(d.releases == 1);
}

static void test_cuda_and_host(void) {
    nnm_device_allocator *cuda = NULL;
    nnm_status s = nnm_device_allocator_cuda(0, &cuda);
    if (s == NNM_OK) {
        /* A CUDA runtime and a GPU: a round trip, device-only memory. */
        CHECK(strcmp(nnm_device_allocator_name(cuda), "cuda:0") == 0);
        uint64_t free_bytes = 0, total_bytes = 0;
        CHECK_OK(nnm_device_allocator_mem_info(cuda, &free_bytes, &total_bytes));
        CHECK(total_bytes > 0 && free_bytes <= total_bytes);
        void *p = NULL;
        CHECK_OK(nnm_device_allocator_alloc(cuda, 1 << 20, 4096, NULL, &p));
        CHECK(p != NULL && (uintptr_t)p % 4096 == 0);
        CHECK_OK(nnm_device_allocator_dealloc(cuda, p));
        nnm_arena *arena = NULL;
        CHECK_FAILS(nnm_arena_new_owned_on(cuda, 4096, 0, 0, &arena), NNM_INVALID_ARGUMENT);
        nnm_device_allocator_free(cuda);
    } else {
        /* No runtime (or no GPU): NOT_FOUND saying what was tried. */
        CHECK(s == NNM_NOT_FOUND);
        CHECK(last_error_has("libcudart.so") || last_error_has("cuda:0: "));
        CHECK(cuda == NULL);
    }
    CHECK_FAILS(nnm_device_allocator_cuda(0, NULL), NNM_NULL_ARGUMENT);

    nnm_device_allocator *host = NULL;
    CHECK_OK(nnm_device_allocator_host(&host));
    CHECK(strcmp(nnm_device_allocator_name(host), "host") == 0);
    uint64_t free_bytes = 0, total_bytes = 0;
    CHECK_FAILS(nnm_device_allocator_mem_info(host, &free_bytes, &total_bytes), NNM_NOT_FOUND);
    void *p = NULL;
    CHECK_OK(nnm_device_allocator_alloc(host, 24, 8, NULL, &p));
    CHECK_OK(nnm_device_allocator_dealloc(host, p));
    CHECK(nnm_device_allocator_name(NULL) == NULL);
    nnm_device_allocator_free(host);
}

/* A pool freed with a block still out never returns it (the block stays
 * valid), so the allocator's `release` never runs: a runtime freeing its
 * heap there would pull that block's memory away. A pool freed empty lets
 * `release` run once, after the last byte is back. */
static void test_pool_keeps_its_allocator(void) {
    counting c;
    counting_init(&c, 1 << 20);
    nnm_device_allocator *a = make(&c, NNM_DEVICE_HOST_ACCESSIBLE);
    nnm_pool *pool = NULL;
    void *kept = NULL, *idle = NULL;
    CHECK_OK(nnm_pool_new(a, NNM_STRATEGY_PAGE_UNIT, NULL, &pool));
    CHECK_OK(nnm_pool_alloc(pool, 1000, 0, NULL, &kept));
    CHECK_OK(nnm_pool_alloc(pool, 9000, 0, NULL, &idle));
    CHECK_OK(nnm_pool_dealloc(pool, idle));
    nnm_pool_free(pool);
    CHECK(c.frees == 1 && c.live_bytes == 4096); /* only the idle block went back */
    nnm_device_allocator_free(a);
    CHECK(c.releases == 0); /* the kept block is still in use */
    if (kept != NULL) {
        memset(kept, 0x5a, 1000); /* valid, as nnm_pool_free promises */
        CHECK(((unsigned char *)kept)[999] == 0x5a);
    }
    CHECK(c.frees == 1 && c.releases == 0 && c.bad_frees == 0);
    CHECK(counting_teardown(&c) == 1);

    /* Freed empty, after its allocator's handle: `release` runs then, once. */
    counting d;
    counting_init(&d, 1 << 20);
    a = make(&d, NNM_DEVICE_HOST_ACCESSIBLE);
    CHECK_OK(nnm_pool_new(a, NNM_STRATEGY_PAGE_UNIT, NULL, &pool));
    nnm_device_allocator_free(a);
    CHECK_OK(nnm_pool_alloc(pool, 1000, 0, NULL, &kept));
    CHECK_OK(nnm_pool_dealloc(pool, kept));
    CHECK(d.releases == 0);
    nnm_pool_free(pool);
    CHECK(d.allocs == 1 && d.frees == 1 && d.live_bytes == 0 && d.releases == 1 && d.bad_frees == 0);
}

/* An allocator handing out memory a pool already holds from it, through
 * every strategy: the same pointer again (offset 0) or one inside the held
 * block, for a 3 MiB request. The pool refuses it with INVALID_ARGUMENT
 * naming the allocator and both ranges, hands nothing out, never gives that
 * pointer back, and returns every real block once. */
static void test_memory_handed_out_twice(void) {
    static const uint32_t strategies[4] = {NNM_STRATEGY_NO_POOL, NNM_STRATEGY_PAGE_UNIT, NNM_STRATEGY_CACHING,
                                           NNM_STRATEGY_REPLAY};
    static const size_t offsets[2] = {0, 512};
    const size_t big = (size_t)3 << 20;
    for (int k = 0; k < 4; ++k) {
        for (int o = 0; o < 2; ++o) {
            counting c;
            counting_init(&c, (size_t)64 << 20);
            nnm_device_allocator *a = make(&c, NNM_DEVICE_HOST_ACCESSIBLE);
            nnm_pool *pool = NULL;
            nnm_pool_options options;
            CHECK_OK(nnm_pool_options_default(&options));
            options.shards = 1;
            if (nnm_pool_new(a, strategies[k], &options, &pool) != NNM_OK) {
                CHECK(0);
                continue;
            }
            void *first = NULL, *p = NULL;
            CHECK_OK(nnm_pool_alloc(pool, 1000, 256, NULL, &first));
            CHECK(first != NULL && c.last >= 0);
            if (first == NULL || c.last < 0) {
                nnm_pool_free(pool);
                nnm_device_allocator_free(a);
                continue;
            }
            memset(first, 0x11, 1000);
            nnm_pool_stats before, after;
            CHECK_OK(nnm_pool_get_stats(pool, &before));
            uintptr_t base = (uintptr_t)c.live[c.last].ptr;
            size_t held = c.live[c.last].size;
            char returned[96], overlapping[160];
            snprintf(returned, sizeof returned, "device allocator \"counting\" returned [0x%" PRIxPTR ", ",
                     base + offsets[o]);
            snprintf(overlapping, sizeof overlapping, "overlapping [0x%" PRIxPTR ", 0x%" PRIxPTR ") (%zu B) that this pool",
                     base, base + held, held);

            c.again = 1;
            c.again_offset = offsets[o];
            CHECK_FAILS(nnm_pool_alloc(pool, big, 256, NULL, &p), NNM_INVALID_ARGUMENT);
            CHECK(last_error_has(returned) && last_error_has(overlapping));
            CHECK(last_error_has("not handed out and not given back"));
            CHECK(p == NULL && c.agains >= 1);
            CHECK_OK(nnm_pool_get_stats(pool, &after));
            CHECK(after.allocs == 1 && after.active_blocks == 1 && after.allocated_bytes == before.allocated_bytes);
            CHECK(after.device_allocs == before.device_allocs && after.reserved_bytes == before.reserved_bytes);

            /* Behaving again: served apart from the first block. */
            c.again = 0;
            CHECK_OK(nnm_pool_alloc(pool, big, 256, NULL, &p));
            if (p != NULL) {
                memset(p, 0x22, big);
                CHECK((uintptr_t)p >= (uintptr_t)first + 1000 || (uintptr_t)p + big <= (uintptr_t)first);
            }
            CHECK(((unsigned char *)first)[0] == 0x11 && ((unsigned char *)first)[999] == 0x11);
            CHECK_OK(nnm_pool_dealloc(pool, first));
            CHECK_OK(nnm_pool_dealloc(pool, p));
            nnm_pool_free(pool);
            nnm_device_allocator_free(a);
            /* Every real block back once; the repeated pointer never freed. */
            CHECK(c.allocs == c.frees && c.live_bytes == 0 && c.bad_frees == 0 && c.releases == 1);
        }
    }
}

int main(void) {
    test_direct_allocations();
    test_bad_vtables();
    test_owned_arena();
    test_net();
    test_cuda_and_host();
    test_pool_keeps_its_allocator();
    test_memory_handed_out_twice();
    return nnm_check_report();
}
