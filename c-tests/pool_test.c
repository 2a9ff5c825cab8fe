/*
 * Memory pools from C: every promise of the nnm_pool_* and nnm_device_*
 * calls in nnmem.h, against a device allocator written in C that counts
 * its calls and fails on demand.
 *
 *   raf        RAF's own pool test: sizes 11, 19, 2019, 1024124 under
 *              alignments 128, 512, 1024, 4096 (aligned, usable), a
 *              released 4096 B chunk comes back on the next 4096 B
 *              request, used bytes drop to 0; for page-unit, caching and
 *              no-pool (no reuse: a device call per request);
 *   limits     the hard limit refuses with its figures, idle memory is
 *              released and the request retried (counted), a failing
 *              device gives OUT_OF_MEMORY, and the allocator balances;
 *   stress     8 threads on one pool, 10^6 allocations each (far fewer
 *              under valgrind and the sanitizers: NNM_POOL_TEST_LIGHT),
 *              every block filled with a thread-and-block-unique pattern
 *              and checked before it is freed;
 *   registry   RAF's InitPool / GetPool / RemovePool / ResetPool: a pool
 *              switched or removed with allocations outstanding takes them
 *              back later, and the counting allocator balances;
 *   replay     one recorded iteration served from the plan, then a
 *              departing one served by the fallback without overlap;
 *   strategy   a C strategy registered by name, used through the registry,
 *              and a faulty one whose bad blocks are refused;
 *   order      a C strategy's callbacks in order: `destroy` only after
 *              `release_all`, neither when a pool goes with a block out;
 *              a device context kept past its callback is refused;
 *   reports    text, JSON, the callback variant and the snapshot trace;
 *   bad input  NULL, alignment 3, SIZE_MAX, a foreign pointer, double
 *              dealloc, unknown names, bad options: status, message, no
 *              change (a replay pool's statistics included);
 *   pytorch    release_cached returns every wholly idle segment (blocks
 *              used on two streams too), an idle segment never causes an
 *              out-of-memory, end_iteration leaves a caching pool alone;
 *   raf names  page_unit_pool and no_pool wherever a strategy is named;
 *   size 0     a unique smallest block on every strategy, replayed too.
 *
 * Valid C11 and C++17 (built both ways); threads are POSIX threads.
 */
#if !defined(_POSIX_C_SOURCE) && !defined(__cplusplus)
#define _POSIX_C_SOURCE 200809L /* posix_memalign, pthreads under -std=c11 */
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnm_check.h"
#include "nnmem.h"

/* Whether the run is under valgrind or the sanitizers (set by CMake). */
static int light(void) {
    const char *v = getenv("NNM_POOL_TEST_LIGHT");
    return v != NULL && v[0] != '\0' && v[0] != '0';
}

static int contains(const char *text, const char *part) { return text != NULL && strstr(text, part) != NULL; }

/* The pool's strategy name, never NULL (so a failed call fails a CHECK). */
static const char *name_of(const nnm_pool *pool) {
    const char *name = nnm_pool_strategy_name(pool);
    return name != NULL ? name : "(none)";
}

static nnm_pool_stats stats_of(const nnm_pool *pool) {
    nnm_pool_stats s;
    memset(&s, 0, sizeof s);
    CHECK_OK(nnm_pool_get_stats(pool, &s));
    return s;
}

static int same_stats(const nnm_pool_stats *a, const nnm_pool_stats *b) { return memcmp(a, b, sizeof *a) == 0; }

static nnm_pool_options default_options(void) {
    nnm_pool_options o;
    memset(&o, 0xff, sizeof o);
    CHECK_OK(nnm_pool_options_default(&o));
    return o;
}

/* --- a device allocator in C that counts its calls and fails on demand --- */

typedef struct counter {
    pthread_mutex_t lock;
    long allocs, frees;
    size_t bytes_out;
    int fail_next; /* fail this many of the next allocations */
    int fail_all;  /* fail every allocation */
} counter;

static void *counter_alloc(void *ctx, size_t size, size_t alignment, void *stream) {
    counter *c = (counter *)ctx;
    void *p = NULL;
    (void)stream;
    pthread_mutex_lock(&c->lock);
    if (c->fail_all || c->fail_next > 0) {
        if (c->fail_next > 0) --c->fail_next;
        pthread_mutex_unlock(&c->lock);
        return NULL;
    }
    if (posix_memalign(&p, alignment < sizeof(void *) ? sizeof(void *) : alignment, size) == 0) {
        ++c->allocs;
        c->bytes_out += size;
    } else {
        p = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    return p;
}

static void counter_free(void *ctx, void *ptr, size_t size, void *stream) {
    counter *c = (counter *)ctx;
    (void)stream;
    pthread_mutex_lock(&c->lock);
    ++c->frees;
    c->bytes_out -= size;
    pthread_mutex_unlock(&c->lock);
    free(ptr);
}

static nnm_device_allocator *counter_allocator(counter *c, const char *name) {
    nnm_device_allocator_vtable vt;
    nnm_device_allocator *a = NULL;
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
    memset(&vt, 0, sizeof vt);
    vt.name = name;
    vt.ctx = c;
    vt.alloc = counter_alloc;
    vt.free = counter_free;
    vt.flags = NNM_DEVICE_HOST_ACCESSIBLE;
    CHECK_OK(nnm_device_allocator_new(&vt, &a));
    return a;
}

static int balanced(counter *c) {
    int ok;
    pthread_mutex_lock(&c->lock);
    ok = c->allocs == c->frees && c->bytes_out == 0;
    pthread_mutex_unlock(&c->lock);
    return ok;
}

static long device_allocs(counter *c) {
    long n;
    pthread_mutex_lock(&c->lock);
    n = c->allocs;
    pthread_mutex_unlock(&c->lock);
    return n;
}

/* --- RAF's pool test ---------------------------------------------------- */

#define RAF_SIZES 4
#define RAF_ALIGNS 4
static const size_t SIZES[RAF_SIZES] = {11, 19, 2019, 1024124};
static const size_t ALIGNS[RAF_ALIGNS] = {128, 512, 1024, 4096};

static void test_raf_semantics(uint32_t strategy) {
    counter c;
    nnm_device_allocator *dev = counter_allocator(&c, "counter");
    nnm_pool *pool = NULL;
    void *ptrs[RAF_SIZES * RAF_ALIGNS];
    size_t requested = 0, pages = 0;
    int i, j, n = 0;
    const char *name = nnm_strategy_name(strategy);
    REQUIRE_OK(nnm_pool_new(dev, strategy, NULL, &pool));
    nnm_device_allocator_free(dev); /* the pool keeps the allocator */
    CHECK(name != NULL && strcmp(name_of(pool), name) == 0);

    for (i = 0; i < RAF_SIZES; ++i) {
        for (j = 0; j < RAF_ALIGNS; ++j, ++n) {
            ptrs[n] = NULL;
            CHECK_OK(nnm_pool_alloc(pool, SIZES[i], ALIGNS[j], NULL, &ptrs[n]));
            CHECK(ptrs[n] != NULL && (uintptr_t)ptrs[n] % ALIGNS[j] == 0);
            if (ptrs[n] != NULL) memset(ptrs[n], n, SIZES[i]); /* usable, all of it */
            requested += SIZES[i];
            pages += (SIZES[i] + 4095) / 4096 * 4096;
        }
    }
    for (n = 0; n < RAF_SIZES * RAF_ALIGNS; ++n) { /* nothing overwrote another block */
        const unsigned char *p = (const unsigned char *)ptrs[n];
        CHECK(p != NULL && p[0] == (unsigned char)n && p[SIZES[n / RAF_ALIGNS] - 1] == (unsigned char)n);
    }
    nnm_pool_stats s = stats_of(pool);
    CHECK(s.active_blocks == RAF_SIZES * RAF_ALIGNS && s.requested_bytes == requested);
    CHECK(s.allocated_bytes >= requested && s.reserved_bytes >= s.allocated_bytes);
    if (strategy == NNM_STRATEGY_PAGE_UNIT) CHECK(s.allocated_bytes == pages); /* rounded to 4 KiB pages */
    if (strategy == NNM_STRATEGY_NO_POOL) CHECK(s.device_allocs == RAF_SIZES * RAF_ALIGNS);
    for (n = 0; n < RAF_SIZES * RAF_ALIGNS; ++n) CHECK_OK(nnm_pool_dealloc(pool, ptrs[n]));

    /* RAF: used bytes drop to 0 when all is released. */
    s = stats_of(pool);
    CHECK(s.allocated_bytes == 0 && s.requested_bytes == 0 && s.active_blocks == 0);
    CHECK(s.allocs == RAF_SIZES * RAF_ALIGNS && s.frees == RAF_SIZES * RAF_ALIGNS);
    CHECK(s.allocated_peak >= requested && s.requested_peak == requested);
    if (strategy == NNM_STRATEGY_NO_POOL) {
        CHECK(s.reserved_bytes == 0 && s.cached_bytes == 0 && s.device_frees == s.device_allocs);
    } else {
        CHECK(s.reserved_bytes > 0 && s.cached_bytes > 0 && s.cached_blocks > 0);
    }

    /* RAF: a released 4096 B chunk comes back on the next 4096 B request. */
    void *a = NULL, *b = NULL;
    CHECK_OK(nnm_pool_alloc(pool, 4096, 4096, NULL, &a));
    long before = device_allocs(&c);
    CHECK_OK(nnm_pool_dealloc(pool, a));
    CHECK_OK(nnm_pool_alloc(pool, 4096, 4096, NULL, &b));
    if (strategy == NNM_STRATEGY_NO_POOL) {
        CHECK(device_allocs(&c) == before + 1); /* every request goes to the device */
    } else {
        CHECK(b == a && device_allocs(&c) == before);
    }
    CHECK_OK(nnm_pool_dealloc(pool, b));

    /* empty_cache gives everything back; the allocator balances. */
    uint64_t released = 0;
    s = stats_of(pool);
    CHECK_OK(nnm_pool_release_cached(pool, &released));
    CHECK(released == s.cached_bytes);
    s = stats_of(pool);
    CHECK(s.reserved_bytes == 0 && s.cached_bytes == 0 && s.cached_blocks == 0);
    CHECK(balanced(&c));
    CHECK_OK(nnm_pool_release_cached(pool, NULL)); /* out_bytes may be NULL */
    nnm_pool_free(pool);
    CHECK(balanced(&c));
    pthread_mutex_destroy(&c.lock);
}

/* --- limits and device failure ------------------------------------------ */

static void test_limits_and_failures(void) {
    counter c;
    nnm_device_allocator *dev = counter_allocator(&c, "counter");
    nnm_pool_options o = default_options();
    nnm_pool *pool = NULL;
    void *a = NULL, *b = NULL, *x = NULL;
    o.limit_bytes = 64 * 1024;
    REQUIRE_OK(nnm_pool_new(dev, NNM_STRATEGY_PAGE_UNIT, &o, &pool));

    CHECK_OK(nnm_pool_alloc(pool, 40 * 1024, 0, NULL, &a));
    nnm_pool_stats before = stats_of(pool);
    CHECK(before.limit == 64 * 1024 && before.reserved_bytes == 40 * 1024);
    /* Over the limit with nothing idle: refused, with the figures. */
    CHECK_FAILS(nnm_pool_alloc(pool, 40 * 1024, 0, NULL, &x), NNM_OUT_OF_MEMORY);
    CHECK_ERROR_HAS("requested 40960 B");
    CHECK_ERROR_HAS("in use 40960 B");
    CHECK_ERROR_HAS("cached 0 B");
    CHECK_ERROR_HAS("limit 65536 B");
    CHECK(x == NULL);
    nnm_pool_stats after = stats_of(pool);
    CHECK(after.limit_refusals == before.limit_refusals + 1);
    CHECK(after.reserved_bytes == before.reserved_bytes && after.active_blocks == 1);
    CHECK(after.device_allocs == before.device_allocs && after.allocs == before.allocs);

    /* Idle memory in the way of the limit: released, retried, counted. */
    CHECK_OK(nnm_pool_dealloc(pool, a)); /* 40 KiB cached */
    before = stats_of(pool);
    CHECK_OK(nnm_pool_alloc(pool, 48 * 1024, 0, NULL, &b)); /* 12 pages */
    after = stats_of(pool);
    CHECK(after.oom_retries == before.oom_retries + 1);
    CHECK(after.device_frees == before.device_frees + 1 && after.reserved_bytes == 48 * 1024);

    /* The device fails once with idle memory held: released, retried. */
    CHECK_OK(nnm_pool_dealloc(pool, b)); /* 48 KiB cached */
    c.fail_next = 1;
    before = stats_of(pool);
    CHECK_OK(nnm_pool_alloc(pool, 8 * 1024, 0, NULL, &a));
    after = stats_of(pool);
    CHECK(after.oom_retries == before.oom_retries + 1 && after.device_frees == before.device_frees + 1);
    CHECK(c.fail_next == 0);

    /* The device fails for good: OUT_OF_MEMORY, nothing changes. */
    c.fail_all = 1;
    before = stats_of(pool);
    x = NULL;
    CHECK_FAILS(nnm_pool_alloc(pool, 16 * 1024, 0, NULL, &x), NNM_OUT_OF_MEMORY);
    CHECK(x == NULL);
    after = stats_of(pool);
    CHECK(after.active_blocks == before.active_blocks && after.reserved_bytes == before.reserved_bytes);
    CHECK(after.allocs == before.allocs && after.device_allocs == before.device_allocs);
    c.fail_all = 0;

    CHECK_OK(nnm_pool_dealloc(pool, a));
    nnm_pool_free(pool);
    nnm_device_allocator_free(dev);
    CHECK(balanced(&c));
    pthread_mutex_destroy(&c.lock);
}

/* --- 8 threads on one pool ----------------------------------------------- */

#define THREADS 8
#define WINDOW 16

typedef struct worker {
    nnm_pool *pool;
    unsigned id;
    long allocations;
    long failures; /* counted here: CHECK is not thread-safe */
} worker;

/* The pattern of block `serial` of thread `id`: every 8-byte word holds
 * both, and the word's index, so a block overwritten by another block (of
 * any thread) or shifted is caught. */
static uint64_t word(unsigned id, uint64_t serial, size_t i) {
    return ((uint64_t)id << 56) ^ (serial << 16) ^ (uint64_t)i ^ 0x5a5a000000000000u;
}

static void fill(void *p, size_t size, unsigned id, uint64_t serial) {
    size_t i;
    for (i = 0; i < size / 8; ++i) {
        uint64_t w = word(id, serial, i);
        memcpy((char *)p + i * 8, &w, 8);
    }
}

static int intact(const void *p, size_t size, unsigned id, uint64_t serial) {
    size_t i;
    for (i = 0; i < size / 8; ++i) {
        uint64_t w;
        memcpy(&w, (const char *)p + i * 8, 8);
        if (w != word(id, serial, i)) return 0;
    }
    return 1;
}

static void *stress_body(void *arg) {
    worker *w = (worker *)arg;
    void *ptr[WINDOW];
    size_t size[WINDOW];
    uint64_t serial[WINDOW];
    uint64_t rng = 0x9e3779b97f4a7c15u * (w->id + 1), next = 0;
    long n;
    int k;
    memset(ptr, 0, sizeof ptr);
    memset(size, 0, sizeof size);
    memset(serial, 0, sizeof serial);
    for (n = 0; n < w->allocations; ++n) {
        k = (int)(n % WINDOW);
        if (ptr[k] != NULL) {
            if (!intact(ptr[k], size[k], w->id, serial[k])) ++w->failures;
            if (nnm_pool_dealloc(w->pool, ptr[k]) != NNM_OK) ++w->failures;
            ptr[k] = NULL;
        }
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        size[k] = 8 + (size_t)(rng % 17) * 8; /* 8 .. 136 B */
        serial[k] = next++;
        if (nnm_pool_alloc(w->pool, size[k], 8, NULL, &ptr[k]) != NNM_OK || ptr[k] == NULL) {
            ++w->failures;
            ptr[k] = NULL;
            continue;
        }
        fill(ptr[k], size[k], w->id, serial[k]);
    }
    for (k = 0; k < WINDOW; ++k) {
        if (ptr[k] == NULL) continue;
        if (!intact(ptr[k], size[k], w->id, serial[k])) ++w->failures;
        if (nnm_pool_dealloc(w->pool, ptr[k]) != NNM_OK) ++w->failures;
    }
    return NULL;
}

static void test_threads(uint32_t strategy) {
    const long per_thread = light() ? 2000 : 1000000;
    counter c;
    nnm_device_allocator *dev = counter_allocator(&c, "counter");
    nnm_pool *pool = NULL;
    pthread_t threads[THREADS];
    worker workers[THREADS];
    unsigned t;
    long failures = 0;
    REQUIRE_OK(nnm_pool_new(dev, strategy, NULL, &pool));
    for (t = 0; t < THREADS; ++t) {
        workers[t].pool = pool;
        workers[t].id = t;
        workers[t].allocations = per_thread;
        workers[t].failures = 0;
        CHECK(pthread_create(&threads[t], NULL, stress_body, &workers[t]) == 0);
    }
    for (t = 0; t < THREADS; ++t) {
        CHECK(pthread_join(threads[t], NULL) == 0);
        failures += workers[t].failures;
    }
    CHECK(failures == 0);
    nnm_pool_stats s = stats_of(pool);
    CHECK(s.allocs == (uint64_t)(THREADS * per_thread) && s.frees == s.allocs);
    CHECK(s.active_blocks == 0 && s.allocated_bytes == 0 && s.requested_bytes == 0);
    CHECK(s.active_peak >= WINDOW && s.active_peak <= THREADS * WINDOW);
    /* The cache served almost everything: at most a window per thread of
     * device blocks. */
    CHECK(s.device_allocs < s.allocs / 100 + THREADS * WINDOW * 17);
    nnm_pool_free(pool);
    nnm_device_allocator_free(dev);
    CHECK(balanced(&c));
    pthread_mutex_destroy(&c.lock);
}

/* --- the registry: RAF's verbs, switches with allocations outstanding ---- */

/* Hands the device back to the host allocator, so that the registry lets
 * go of the counting one (whose counter lives on a test's stack). */
static void unregister_counter(uint32_t type, uint32_t id) {
    nnm_device_allocator *host = NULL;
    CHECK_OK(nnm_device_allocator_host(&host));
    CHECK_OK(nnm_device_register_allocator(type, id, host));
    nnm_device_allocator_free(host);
}

static void test_registry(void) {
    const uint32_t custom = NNM_DEVICE_TYPE_CUSTOM, id = 7;
    counter c;
    nnm_device_allocator *dev = counter_allocator(&c, "npu");
    nnm_pool *held = NULL, *current = NULL;
    void *old_blocks[3], *new_blocks[2], *p = NULL;
    int i;

    /* A CUSTOM device has no allocator until one is registered. */
    CHECK_FAILS(nnm_device_init_pool(custom, 99, "caching", NULL), NNM_NOT_FOUND);
    CHECK_OK(nnm_device_register_allocator(custom, id, dev));
    nnm_device_allocator_free(dev); /* the registry keeps it */

    CHECK_OK(nnm_device_init_pool(custom, id, "page-unit", NULL));
    REQUIRE_OK(nnm_device_get_pool(custom, id, &held));
    CHECK(strcmp(name_of(held), "page-unit") == 0);
    for (i = 0; i < 3; ++i) {
        old_blocks[i] = NULL;
        CHECK_OK(nnm_device_alloc(custom, id, 1000 + (size_t)i, 0, NULL, &old_blocks[i]));
        CHECK(old_blocks[i] != NULL && (uintptr_t)old_blocks[i] % 256 == 0); /* alignment 0: 256 */
    }
    CHECK_OK(nnm_device_dealloc(custom, id, old_blocks[2])); /* one idle page in the old pool */

    /* Switch (RAF's InitPool on a device that has one): the old pool retires
     * with two blocks out; its idle memory goes back to the device now. */
    CHECK_OK(nnm_device_init_pool(custom, id, "caching", NULL));
    REQUIRE_OK(nnm_device_get_pool(custom, id, &current));
    CHECK(strcmp(name_of(current), "caching") == 0);
    nnm_pool_stats old = stats_of(held); /* the handle keeps the retired pool readable */
    CHECK(old.active_blocks == 2 && old.cached_bytes == 0);
    /* ... but allocates no more through it (the header lists WRONG_STATE). */
    p = NULL;
    CHECK_REFUSES(nnm_pool_alloc(held, 64, 0, NULL, &p), NNM_WRONG_STATE, "retired");
    CHECK(p == NULL && stats_of(held).allocs == 3);
    for (i = 0; i < 2; ++i) {
        new_blocks[i] = NULL;
        CHECK_OK(nnm_device_alloc(custom, id, 5000, 0, NULL, &new_blocks[i]));
    }
    CHECK(stats_of(held).allocs == 3); /* new allocations go to the new pool */
    CHECK(stats_of(current).active_blocks == 2);

    /* The old pool's blocks are found and taken back, after the switch:
     * through the registry, or through a handle to the retired pool; each
     * goes straight back to the device (a retired pool caches nothing). */
    CHECK_OK(nnm_device_dealloc(custom, id, old_blocks[0]));
    {
        const long frees_before = c.frees;
        CHECK_OK(nnm_pool_dealloc(held, old_blocks[1]));
        CHECK(c.frees == frees_before + 1);
    }
    CHECK(stats_of(held).active_blocks == 0);
    CHECK(stats_of(held).cached_bytes == 0 && stats_of(held).reserved_bytes == 0);
    CHECK_FAILS(nnm_device_dealloc(custom, id, old_blocks[0]), NNM_INVALID_ARGUMENT); /* double */
    CHECK_FAILS(nnm_device_dealloc(custom, id, &p), NNM_INVALID_ARGUMENT);          /* foreign */
    nnm_pool_free(held);

    /* ResetPool: a fresh pool with the same strategy; the old one retires. */
    CHECK_OK(nnm_device_reset_pool(custom, id));
    REQUIRE_OK(nnm_device_get_pool(custom, id, &held));
    CHECK(held != current && strcmp(name_of(held), "caching") == 0);
    CHECK(stats_of(held).allocs == 0);
    for (i = 0; i < 2; ++i) CHECK_OK(nnm_device_dealloc(custom, id, new_blocks[i]));
    CHECK(stats_of(current).active_blocks == 0);
    nnm_pool_free(current);
    nnm_pool_free(held);

    /* Bad input; a failed InitPool keeps the current pool. */
    CHECK_FAILS(nnm_device_init_pool(42, 0, "caching", NULL), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_device_init_pool(custom, id, "no-such-pool", NULL), NNM_NOT_FOUND);
    CHECK_FAILS(nnm_device_init_pool(custom, id, NULL, NULL), NNM_NULL_ARGUMENT);
    REQUIRE_OK(nnm_device_get_pool(custom, id, &held));
    CHECK(strcmp(name_of(held), "caching") == 0);
    nnm_pool_free(held);
    CHECK_FAILS(nnm_device_get_pool(custom, id, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_device_alloc(custom, id, 8, 3, NULL, &p), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_device_alloc(custom, id, 8, 0, NULL, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_device_dealloc(custom, id, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_device_register_allocator(custom, id, NULL), NNM_NULL_ARGUMENT);

    /* RemovePool, with a block out: freed correctly afterwards. */
    CHECK_OK(nnm_device_alloc(custom, id, 300, 64, NULL, &p));
    CHECK_OK(nnm_device_remove_pool(custom, id));
    CHECK_FAILS(nnm_device_remove_pool(custom, id), NNM_NOT_FOUND);
    CHECK_FAILS(nnm_device_reset_pool(custom, id), NNM_NOT_FOUND);
    CHECK_OK(nnm_device_dealloc(custom, id, p));
    CHECK(balanced(&c)); /* every pool of the device is gone: nothing leaked */

    /* GetPool on a device with no pool makes the default (page-unit). */
    REQUIRE_OK(nnm_device_get_pool(NNM_DEVICE_TYPE_HOST, 3, &held));
    CHECK(strcmp(name_of(held), "page-unit") == 0);
    CHECK_OK(nnm_device_alloc(NNM_DEVICE_TYPE_HOST, 3, 64, 0, NULL, &p));
    CHECK(stats_of(held).active_blocks == 1);
    CHECK_OK(nnm_device_dealloc(NNM_DEVICE_TYPE_HOST, 3, p));
    nnm_pool_free(held);
    CHECK_OK(nnm_device_remove_pool(NNM_DEVICE_TYPE_HOST, 3));

    /* A registered allocator replaces the previous one for new pools. */
    unregister_counter(custom, id);
    long calls = device_allocs(&c);
    CHECK_OK(nnm_device_alloc(custom, id, 64, 0, NULL, &p));
    CHECK(device_allocs(&c) == calls);
    CHECK_OK(nnm_device_dealloc(custom, id, p));
    CHECK_OK(nnm_device_remove_pool(custom, id));

    pthread_mutex_destroy(&c.lock);
}

/* --- replay: a recorded iteration, then one that departs ---------------- */

/* One iteration: a (1000 B) and b (2000 B) live together, then b and c
 * (3000 B, or 5000 B when departing). Every block is filled and checked
 * before it goes, so a fallback block overlapping a planned one shows. */
static void replay_iteration(nnm_pool *pool, size_t c_size, int *damaged) {
    void *a = NULL, *b = NULL, *c = NULL;
    CHECK_OK(nnm_pool_alloc(pool, 1000, 64, NULL, &a));
    CHECK_OK(nnm_pool_alloc(pool, 2000, 64, NULL, &b));
    if (a == NULL || b == NULL) return;
    memset(a, 0xa1, 1000);
    memset(b, 0xb2, 2000);
    CHECK_OK(nnm_pool_dealloc(pool, a));
    CHECK_OK(nnm_pool_alloc(pool, c_size, 64, NULL, &c));
    if (c == NULL) return;
    memset(c, 0xc3, c_size);
    const unsigned char *pb = (const unsigned char *)b;
    size_t i;
    for (i = 0; i < 2000; ++i) *damaged |= pb[i] != 0xb2;
    CHECK_OK(nnm_pool_dealloc(pool, b));
    CHECK_OK(nnm_pool_dealloc(pool, c));
}

static void test_replay(void) {
    counter c;
    nnm_device_allocator *dev = counter_allocator(&c, "counter");
    nnm_pool *pool = NULL;
    int damaged = 0;
    REQUIRE_OK(nnm_pool_new(dev, NNM_STRATEGY_REPLAY, NULL, &pool));
    nnm_device_allocator_free(dev);

    replay_iteration(pool, 3000, &damaged); /* recorded */
    CHECK_OK(nnm_pool_end_iteration(pool));
    nnm_pool_stats s = stats_of(pool);
    CHECK(s.served_from_plan == 0 && s.plan_departures == 0);
    CHECK(s.plan_lower_bound >= 5000 && s.plan_bytes >= s.plan_lower_bound);

    long device_calls = device_allocs(&c);
    replay_iteration(pool, 3000, &damaged); /* served from the plan */
    CHECK_OK(nnm_pool_end_iteration(pool));
    s = stats_of(pool);
    CHECK(s.served_from_plan == 3 && s.plan_departures == 0);
    CHECK(device_allocs(&c) == device_calls); /* a table lookup, no device call */

    replay_iteration(pool, 5000, &damaged); /* departs at c: the fallback serves it */
    CHECK_OK(nnm_pool_end_iteration(pool));
    s = stats_of(pool);
    CHECK(s.served_from_plan == 5 && s.plan_departures == 1);
    CHECK(s.active_blocks == 0 && s.allocated_bytes == 0);
    CHECK(damaged == 0);

    nnm_pool_free(pool);
    CHECK(balanced(&c));
    pthread_mutex_destroy(&c.lock);
}

/* --- a strategy written in C --------------------------------------------- */

/* "c-exact": RAF's page-unit in a few lines. Every block is its own device
 * block, sizes rounded up to 64 B; an idle block of exactly the size asked
 * (and aligned enough) is handed back. */
#define C_SLOTS 64

typedef struct c_slot {
    void *ptr;
    size_t bytes;
    int in_use;
} c_slot;

typedef struct c_registry { /* the strategy's ctx: counts states */
    int created, destroyed;
    int mode;    /* for "c-bad": what to return wrongly */
    void *block; /* for "c-bad" mode 5: a device block handed out whole */
    size_t block_bytes;
    void *out; /* and the block out (mode 6 refuses to take it back) */
} c_registry;

typedef struct c_state {
    c_registry *reg;
    c_slot slots[C_SLOTS];
} c_state;

static void *c_create(void *ctx, const nnm_pool_options *options) {
    c_registry *r = (c_registry *)ctx;
    c_state *s = (c_state *)calloc(1, sizeof(c_state));
    (void)options;
    if (s != NULL) s->reg = r;
    ++r->created;
    return s;
}

static void c_destroy(void *state) {
    c_state *s = (c_state *)state;
    ++s->reg->destroyed;
    free(s);
}

static int c_alloc(void *state, nnm_device_ctx *dev, size_t size, size_t alignment, void *stream, void **out_ptr,
                   size_t *out_bytes) {
    c_state *s = (c_state *)state;
    size_t bytes = (size + 63) / 64 * 64;
    int i, free_slot = -1;
    for (i = 0; i < C_SLOTS; ++i) {
        c_slot *slot = &s->slots[i];
        if (slot->ptr != NULL && !slot->in_use && slot->bytes == bytes && (uintptr_t)slot->ptr % alignment == 0) {
            slot->in_use = 1;
            *out_ptr = slot->ptr;
            *out_bytes = bytes;
            return NNM_OK;
        }
        if (slot->ptr == NULL && free_slot < 0) free_slot = i;
    }
    if (free_slot < 0) return NNM_OUT_OF_MEMORY;
    int status = nnm_device_ctx_alloc(dev, bytes, alignment, stream, &s->slots[free_slot].ptr);
    if (status != NNM_OK) return status;
    s->slots[free_slot].bytes = bytes;
    s->slots[free_slot].in_use = 1;
    *out_ptr = s->slots[free_slot].ptr;
    *out_bytes = bytes;
    return NNM_OK;
}

static int c_dealloc(void *state, nnm_device_ctx *dev, void *ptr) {
    c_state *s = (c_state *)state;
    int i;
    (void)dev;
    for (i = 0; i < C_SLOTS; ++i) {
        if (s->slots[i].ptr == ptr && s->slots[i].in_use) {
            s->slots[i].in_use = 0;
            return NNM_OK;
        }
    }
    return NNM_NOT_FOUND;
}

static void c_release(void *state, nnm_device_ctx *dev, int all) {
    c_state *s = (c_state *)state;
    int i;
    for (i = 0; i < C_SLOTS; ++i) {
        if (s->slots[i].ptr != NULL && (all || !s->slots[i].in_use)) {
            CHECK_OK(nnm_device_ctx_free(dev, s->slots[i].ptr, s->slots[i].bytes, NULL));
            s->slots[i].ptr = NULL;
        }
    }
}

static void c_release_cached(void *state, nnm_device_ctx *dev) { c_release(state, dev, 0); }
static void c_release_all(void *state, nnm_device_ctx *dev) { c_release(state, dev, 1); }

/* "c-bad": a strategy that breaks the contract in the way `mode` says. */
static int bad_alloc(void *state, nnm_device_ctx *dev, size_t size, size_t alignment, void *stream, void **out_ptr,
                     size_t *out_bytes) {
    static char not_device_memory[4096];
    c_registry *r = (c_registry *)state; /* its state is the registry itself */
    void *block = NULL;
    int status;
    switch (r->mode) {
    case 0: /* NNM_OK and NULL */
        return NNM_OK;
    case 1: /* misaligned, inside a device block */
        status = nnm_device_ctx_alloc(dev, size + alignment, alignment, stream, &block);
        if (status != NNM_OK) return status;
        *out_ptr = (char *)block + 1;
        return NNM_OK;
    case 2: /* memory that is not the device's */
        *out_ptr = not_device_memory;
        return NNM_OK;
    case 3: /* smaller than asked */
        status = nnm_device_ctx_alloc(dev, size, alignment, stream, &block);
        if (status != NNM_OK) return status;
        *out_ptr = block;
        *out_bytes = size / 2;
        return NNM_OK;
    case 5: /* a proper block: its device block, whole */
        status = nnm_device_ctx_alloc(dev, size, alignment, stream, &block);
        if (status != NNM_OK) return status;
        r->block = r->out = block;
        r->block_bytes = size;
        *out_ptr = block;
        return NNM_OK;
    default: /* an unknown status */
        return 1234;
    }
}

/* release_cached of "c-bad": tries to free what it must not. Each attempt
 * is refused and changes nothing. */
static void bad_release_cached(void *state, nnm_device_ctx *dev) {
    c_registry *r = (c_registry *)state;
    void *p = NULL;
    int local = 0;
    if (r->block == NULL) return;
    CHECK_FAILS(nnm_device_ctx_free(dev, r->block, r->block_bytes, NULL), NNM_WRONG_STATE); /* handed out */
    CHECK_ERROR_HAS("still holds memory handed out");
    CHECK_FAILS(nnm_device_ctx_free(dev, r->block, r->block_bytes + 1, NULL), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_device_ctx_free(dev, &local, sizeof local, NULL), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_device_ctx_free(dev, NULL, 8, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_device_ctx_free(NULL, r->block, r->block_bytes, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_device_ctx_alloc(dev, 0, 8, NULL, &p), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_device_ctx_alloc(dev, 8, 3, NULL, &p), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_device_ctx_alloc(dev, 8, 8, NULL, NULL), NNM_NULL_ARGUMENT);
    CHECK(p == NULL);
    r->block = NULL; /* checked once */
}

static void *bad_create(void *ctx, const nnm_pool_options *options) {
    (void)options;
    return ctx;
}

static int bad_dealloc(void *state, nnm_device_ctx *dev, void *ptr) {
    c_registry *r = (c_registry *)state;
    (void)dev;
    if (r->mode == 5 && ptr == r->out) {
        r->out = NULL;
        return NNM_OK;
    }
    return NNM_NOT_FOUND;
}

/* Keeps its device blocks: nnmem frees them when the pool goes. */
static void bad_release(void *state, nnm_device_ctx *dev) { (void)state, (void)dev; }

/* A strategy vtable with the callbacks every test strategy has. */
static nnm_strategy_vtable strategy_vtable(const char *name, c_registry *reg,
                                           void *(*create)(void *, const nnm_pool_options *),
                                           int (*alloc)(void *, nnm_device_ctx *, size_t, size_t, void *, void **,
                                                        size_t *),
                                           int (*dealloc)(void *, nnm_device_ctx *, void *),
                                           void (*release_cached)(void *, nnm_device_ctx *),
                                           void (*release_all)(void *, nnm_device_ctx *)) {
    nnm_strategy_vtable vt;
    memset(&vt, 0, sizeof vt);
    vt.name = name;
    vt.ctx = reg;
    vt.create = create;
    vt.alloc = alloc;
    vt.dealloc = dealloc;
    vt.release_cached = release_cached;
    vt.release_all = release_all;
    return vt;
}

static void test_c_strategy(void) {
    const uint32_t custom = NNM_DEVICE_TYPE_CUSTOM, id = 9;
    c_registry reg;
    nnm_strategy_vtable vt;
    counter c;
    nnm_device_allocator *dev = counter_allocator(&c, "c-strategy-device");
    nnm_pool *pool = NULL;
    void *p = NULL, *q = NULL, *r = NULL;
    memset(&reg, 0, sizeof reg);
    vt = strategy_vtable("c-exact", &reg, c_create, c_alloc, c_dealloc, c_release_cached, NULL);
    vt.destroy = c_destroy;
    CHECK_FAILS(nnm_pool_register_strategy(&vt), NNM_NULL_ARGUMENT); /* release_all is required */
    CHECK_ERROR_HAS("release_all");
    vt.release_all = c_release_all;
    CHECK_OK(nnm_pool_register_strategy(&vt));
    CHECK_FAILS(nnm_pool_register_strategy(&vt), NNM_ALREADY_EXISTS);
    vt.name = "caching";
    CHECK_FAILS(nnm_pool_register_strategy(&vt), NNM_ALREADY_EXISTS); /* a built-in's name */
    vt.name = "";
    CHECK_FAILS(nnm_pool_register_strategy(&vt), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_pool_register_strategy(NULL), NNM_NULL_ARGUMENT);

    /* Used through the registry, as RAF's registered pool strategies. */
    CHECK_OK(nnm_device_register_allocator(custom, id, dev));
    CHECK_OK(nnm_device_init_pool(custom, id, "c-exact", NULL));
    CHECK(reg.created == 1);
    CHECK_OK(nnm_device_alloc(custom, id, 100, 0, NULL, &p));
    CHECK_OK(nnm_device_alloc(custom, id, 100, 0, NULL, &q));
    CHECK(p != NULL && q != NULL && p != q && (uintptr_t)p % 256 == 0);
    CHECK_OK(nnm_device_dealloc(custom, id, p));
    CHECK_OK(nnm_device_alloc(custom, id, 128, 0, NULL, &r)); /* same 128 B class: reused */
    CHECK(r == p);
    CHECK_FAILS(nnm_device_dealloc(custom, id, &reg), NNM_INVALID_ARGUMENT); /* foreign */
    REQUIRE_OK(nnm_device_get_pool(custom, id, &pool));
    CHECK(strcmp(name_of(pool), "c-exact") == 0);
    nnm_pool_stats s = stats_of(pool);
    CHECK(s.active_blocks == 2 && s.allocated_bytes == 256 && s.requested_bytes == 228);
    CHECK(s.device_allocs == 2 && s.reserved_bytes == 256);
    CHECK_OK(nnm_device_dealloc(custom, id, q));
    s = stats_of(pool);
    CHECK(s.cached_blocks == 1 && s.cached_bytes == 128); /* from nnmem's records */
    uint64_t released = 0;
    CHECK_OK(nnm_pool_release_cached(pool, &released));
    CHECK(released == 128 && stats_of(pool).device_frees == 1);
    nnm_pool_free(pool);

    /* The pool's limit applies to what a C strategy takes from the device. */
    nnm_pool_options limited = default_options();
    nnm_pool *small = NULL;
    limited.limit_bytes = 1024;
    REQUIRE_OK(nnm_pool_new_by_name(dev, "c-exact", &limited, &small));
    p = NULL;
    CHECK_FAILS(nnm_pool_alloc(small, 2000, 0, NULL, &p), NNM_OUT_OF_MEMORY);
    CHECK_ERROR_HAS("limit 1024 B");
    CHECK(p == NULL && stats_of(small).device_allocs == 0);
    nnm_pool_free(small);
    CHECK(reg.created == 2 && reg.destroyed == 1);

    /* Unregistered: no new pool; the existing one keeps it. */
    CHECK_OK(nnm_pool_unregister_strategy("c-exact"));
    CHECK_FAILS(nnm_pool_unregister_strategy("c-exact"), NNM_NOT_FOUND);
    CHECK_FAILS(nnm_pool_new_by_name(NULL, "c-exact", NULL, &pool), NNM_NOT_FOUND);
    CHECK_OK(nnm_device_alloc(custom, id, 64, 0, NULL, &q));
    CHECK_OK(nnm_device_dealloc(custom, id, q));
    CHECK_OK(nnm_device_dealloc(custom, id, r));
    CHECK_OK(nnm_device_remove_pool(custom, id));
    CHECK(reg.created == 2 && reg.destroyed == 2); /* the removed pool had nothing out: gone */
    CHECK(balanced(&c));

    /* A faulty strategy: each bad block is refused with a message. */
    vt = strategy_vtable("c-bad", &reg, bad_create, bad_alloc, bad_dealloc, bad_release_cached, bad_release);
    CHECK_OK(nnm_pool_register_strategy(&vt));
    nnm_pool_options o = default_options();
    REQUIRE_OK(nnm_pool_new_by_name(dev, "c-bad", &o, &pool));
    int mode;
    for (mode = 0; mode < 4; ++mode) {
        reg.mode = mode;
        p = NULL;
        CHECK_FAILS(nnm_pool_alloc(pool, 256, 64, NULL, &p), NNM_INVALID_ARGUMENT);
        CHECK_ERROR_HAS("user strategy 'c-bad'");
        CHECK(p == NULL);
    }
    reg.mode = 4;
    CHECK_FAILS(nnm_pool_alloc(pool, 256, 64, NULL, &p), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("unknown status (1234)");
    s = stats_of(pool);
    CHECK(s.allocs == 0 && s.active_blocks == 0);
    reg.mode = 5; /* a good block, then bad frees and allocations in release_cached */
    p = NULL;
    CHECK_OK(nnm_pool_alloc(pool, 256, 64, NULL, &p));
    CHECK(p != NULL && p == reg.block);
    CHECK_OK(nnm_pool_release_cached(pool, &released));
    CHECK(released == 0 && reg.block == NULL);
    reg.mode = 6;
    CHECK_FAILS(nnm_pool_dealloc(pool, p), NNM_INVALID_ARGUMENT); /* the strategy says NOT_FOUND */
    s = stats_of(pool);
    CHECK(s.active_blocks == 1 && s.device_frees == 0);
    reg.mode = 5;
    CHECK_OK(nnm_pool_dealloc(pool, p));
    CHECK(reg.out == NULL && stats_of(pool).active_blocks == 0);
    nnm_pool_free(pool); /* the device blocks the strategy kept go back with the pool */
    CHECK_OK(nnm_pool_unregister_strategy("c-bad"));
    unregister_counter(custom, id);
    nnm_device_allocator_free(dev);
    CHECK(balanced(&c));
    pthread_mutex_destroy(&c.lock);
}

/* --- callback order, and a context kept past its callback --------------- */

/* "c-order": c-exact whose callbacks log their order, one letter each (c
 * create, a alloc, d dealloc, r release_cached, R release_all, D destroy),
 * and whose alloc keeps its device context, as a faulty strategy might. */
static struct {
    char text[32];
    size_t len;
    nnm_device_ctx *saved;
} order_log;

static void log_callback(char letter) {
    if (order_log.len + 1 < sizeof order_log.text) {
        order_log.text[order_log.len++] = letter;
        order_log.text[order_log.len] = '\0';
    }
}

static void *o_create(void *ctx, const nnm_pool_options *options) {
    log_callback('c');
    return c_create(ctx, options);
}

static void o_destroy(void *state) {
    log_callback('D');
    c_destroy(state);
}

static int o_alloc(void *state, nnm_device_ctx *dev, size_t size, size_t alignment, void *stream, void **out_ptr,
                   size_t *out_bytes) {
    log_callback('a');
    order_log.saved = dev;
    return c_alloc(state, dev, size, alignment, stream, out_ptr, out_bytes);
}

static int o_dealloc(void *state, nnm_device_ctx *dev, void *ptr) {
    log_callback('d');
    return c_dealloc(state, dev, ptr);
}

static void o_release_cached(void *state, nnm_device_ctx *dev) {
    log_callback('r');
    c_release_cached(state, dev);
}

static void o_release_all(void *state, nnm_device_ctx *dev) {
    log_callback('R');
    c_release_all(state, dev);
}

static void test_callback_order_and_stale_contexts(void) {
    c_registry reg;
    counter c;
    nnm_device_allocator *dev = counter_allocator(&c, "order-device");
    nnm_pool *pool = NULL;
    void *p = NULL, *q = NULL;
    memset(&reg, 0, sizeof reg);
    nnm_strategy_vtable vt =
        strategy_vtable("c-order", &reg, o_create, o_alloc, o_dealloc, o_release_cached, o_release_all);
    vt.destroy = o_destroy;
    CHECK_OK(nnm_pool_register_strategy(&vt));

    /* Emptied, then freed: release_all, then destroy. */
    memset(&order_log, 0, sizeof order_log);
    REQUIRE_OK(nnm_pool_new_by_name(dev, "c-order", NULL, &pool));
    CHECK_OK(nnm_pool_alloc(pool, 100, 0, NULL, &p));
    CHECK(order_log.saved != NULL);

    /* The context of a callback that returned: refused, nothing allocated
     * or freed (nnmem compares the pointer with the running callbacks'
     * contexts before it reads it). */
    void *stray = NULL;
    CHECK_FAILS(nnm_device_ctx_alloc(order_log.saved, 64, 64, NULL, &stray), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("not the nnm_device_ctx of a strategy callback running on this thread");
    CHECK_FAILS(nnm_device_ctx_free(order_log.saved, p, 128, NULL), NNM_INVALID_ARGUMENT);
    CHECK(stray == NULL);
    nnm_pool_stats s = stats_of(pool);
    CHECK(s.device_allocs == 1 && s.device_frees == 0 && s.reserved_bytes == 128 && device_allocs(&c) == 1);

    CHECK_OK(nnm_pool_dealloc(pool, p));
    nnm_pool_free(pool);
    CHECK(strcmp(order_log.text, "cadRD") == 0);
    CHECK(balanced(&c));
    /* Its pool gone, the context is still refused. */
    CHECK_FAILS(nnm_device_ctx_alloc(order_log.saved, 64, 64, NULL, &stray), NNM_INVALID_ARGUMENT);

    /* Freed with a block still out: its idle block goes back
     * (release_cached); the block out stays valid, so neither release_all
     * nor destroy runs (nnmem keeps the state). */
    memset(&order_log, 0, sizeof order_log);
    REQUIRE_OK(nnm_pool_new_by_name(dev, "c-order", NULL, &pool));
    CHECK_OK(nnm_pool_alloc(pool, 100, 0, NULL, &p));
    CHECK_OK(nnm_pool_alloc(pool, 1000, 0, NULL, &q));
    CHECK_OK(nnm_pool_dealloc(pool, q));
    nnm_pool_free(pool);
    CHECK(strcmp(order_log.text, "caadr") == 0);
    CHECK(reg.created == 2 && reg.destroyed == 1);
    CHECK_OK(nnm_pool_unregister_strategy("c-order"));
    nnm_device_allocator_free(dev);
    pthread_mutex_lock(&c.lock);
    CHECK(c.allocs == 3 && c.frees == 2 && c.bytes_out == 128);
    pthread_mutex_unlock(&c.lock);
    if (p != NULL) {
        memset(p, 0x7e, 100);
        CHECK(((unsigned char *)p)[99] == 0x7e);
        /* nnmem never returns it: the runtime frees its own heap. */
        free(p);
    }
    pthread_mutex_destroy(&c.lock);
}

/* --- reports and the trace ------------------------------------------------- */

typedef struct lines {
    int count;
    int has_allocs;
} lines;

static void collect(void *user, const char *text, size_t len) {
    lines *l = (lines *)user;
    ++l->count;
    l->has_allocs |= contains(text, "allocs") && strlen(text) == len;
}

static void test_reports(void) {
    nnm_pool_options o = default_options();
    nnm_pool *pool = NULL;
    void *p = NULL;
    char buf[8192];
    size_t needed = 0, written = 0;
    lines l = {0, 0};
    o.trace = 1;
    REQUIRE_OK(nnm_pool_new(NULL, NNM_STRATEGY_CACHING, &o, &pool));
    CHECK_OK(nnm_pool_snapshot(pool, "start"));
    CHECK_OK(nnm_pool_alloc(pool, 3000, 0, NULL, &p));
    CHECK_OK(nnm_pool_snapshot(pool, "after alloc"));

    CHECK_OK(nnm_pool_report(pool, NNM_REPORT_FORMAT_TEXT, NULL, 0, &needed));
    CHECK(needed > 1 && needed <= sizeof buf);
    CHECK_FAILS(nnm_pool_report(pool, NNM_REPORT_FORMAT_TEXT, buf, needed - 1, &written), NNM_BUFFER_TOO_SMALL);
    CHECK_OK(nnm_pool_report(pool, NNM_REPORT_FORMAT_TEXT, buf, sizeof buf, &written));
    CHECK(written == needed && strlen(buf) + 1 == written && contains(buf, "3000"));
    CHECK_OK(nnm_pool_report(pool, NNM_REPORT_FORMAT_JSON, buf, sizeof buf, &written));
    CHECK(buf[0] == '{' && contains(buf, "\"allocated_bytes\"") && contains(buf, "\"reserved_peak\""));
    CHECK_OK(nnm_pool_report_write(pool, NNM_REPORT_FORMAT_TEXT, collect, &l));
    CHECK(l.count > 1 && l.has_allocs);

    CHECK_OK(nnm_pool_trace_report(pool, NNM_REPORT_FORMAT_JSON, buf, sizeof buf, &written));
    CHECK(contains(buf, "\"start\"") && contains(buf, "\"after alloc\""));
    CHECK(strstr(buf, "\"start\"") < strstr(buf, "\"after alloc\"")); /* in order */
    l.count = 0;
    CHECK_OK(nnm_pool_trace_report_write(pool, NNM_REPORT_FORMAT_TEXT, collect, &l));
    CHECK(l.count >= 2);

    /* PyTorch's reset_peak_memory_stats. */
    CHECK_OK(nnm_pool_dealloc(pool, p));
    CHECK(stats_of(pool).allocated_peak >= 3000);
    CHECK_OK(nnm_pool_reset_peak(pool));
    nnm_pool_stats s = stats_of(pool);
    CHECK(s.allocated_peak == 0 && s.requested_peak == 0 && s.reserved_peak == s.reserved_bytes);
    CHECK_OK(nnm_pool_streams_synchronized(pool));
    CHECK_OK(nnm_pool_end_iteration(pool)); /* a no-op for caching */

    CHECK_FAILS(nnm_pool_report(pool, 7, buf, sizeof buf, &written), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_pool_report_write(pool, NNM_REPORT_FORMAT_TEXT, NULL, &l), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_pool_snapshot(pool, NULL), NNM_NULL_ARGUMENT);
    nnm_pool_free(pool);

    /* Without `trace`, a snapshot is a no-op: the trace stays empty. */
    o.trace = 0;
    REQUIRE_OK(nnm_pool_new(NULL, NNM_STRATEGY_PAGE_UNIT, &o, &pool));
    CHECK_OK(nnm_pool_snapshot(pool, "untraced"));
    CHECK_OK(nnm_pool_trace_report(pool, NNM_REPORT_FORMAT_JSON, buf, sizeof buf, &written));
    CHECK(!contains(buf, "untraced"));
    nnm_pool_free(pool);
}

/* --- strategies by name, and every bad input --------------------------------- */

static void test_names(void) {
    uint32_t v = 99;
    const uint32_t all[4] = {NNM_STRATEGY_NO_POOL, NNM_STRATEGY_PAGE_UNIT, NNM_STRATEGY_CACHING, NNM_STRATEGY_REPLAY};
    int i;
    for (i = 0; i < 4; ++i) {
        CHECK_OK(nnm_strategy_from_name(nnm_strategy_name(all[i]), &v));
        CHECK(v == all[i]);
    }
    CHECK(strcmp(nnm_strategy_name(NNM_STRATEGY_PAGE_UNIT), "page-unit") == 0);
    CHECK(nnm_strategy_name(4) == NULL);
    v = 99;
    CHECK_FAILS(nnm_strategy_from_name("best-fit", &v), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("page-unit"); /* the message lists the known names */
    CHECK(v == 99);
    CHECK_FAILS(nnm_strategy_from_name(NULL, &v), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_strategy_from_name("caching", NULL), NNM_NULL_ARGUMENT);
}

static void test_bad_input(uint32_t strategy) {
    nnm_pool *pool = NULL, *stale = NULL;
    void *p = NULL, *out = NULL;
    int local = 0;
    nnm_pool_options o = default_options();
    REQUIRE_OK(nnm_pool_new(NULL, strategy, NULL, &pool));
    CHECK_OK(nnm_pool_alloc(pool, 100, 16, NULL, &p));
    nnm_pool_stats before = stats_of(pool);

    CHECK_FAILS(nnm_pool_alloc(NULL, 100, 16, NULL, &out), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_pool_alloc(pool, 100, 16, NULL, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_pool_alloc(pool, 100, 3, NULL, &out), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("3");
    CHECK_FAILS(nnm_pool_alloc(pool, SIZE_MAX, 16, NULL, &out), NNM_OVERFLOW);
    CHECK(out == NULL);
    CHECK_FAILS(nnm_pool_dealloc(pool, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_pool_dealloc(pool, &local), NNM_INVALID_ARGUMENT); /* foreign */
    CHECK_FAILS(nnm_pool_dealloc(pool, (char *)p + 8), NNM_INVALID_ARGUMENT); /* inside a block */
    CHECK_FAILS(nnm_pool_dealloc(NULL, p), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_pool_get_stats(pool, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_pool_get_stats(NULL, &before), NNM_NULL_ARGUMENT);
    nnm_pool_stats after = stats_of(pool);
    CHECK(same_stats(&before, &after)); /* bad input changed nothing */

    CHECK_OK(nnm_pool_dealloc(pool, p));
    CHECK_FAILS(nnm_pool_dealloc(pool, p), NNM_INVALID_ARGUMENT); /* double */
    before = stats_of(pool);
    CHECK_FAILS(nnm_pool_dealloc(pool, p), NNM_INVALID_ARGUMENT);
    after = stats_of(pool);
    CHECK(same_stats(&before, &after) && after.frees == 1);

    /* Creation. */
    CHECK_FAILS(nnm_pool_new(NULL, 99, NULL, &stale), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_pool_new(NULL, strategy, NULL, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_pool_new_by_name(NULL, "no-such-pool", NULL, &stale), NNM_NOT_FOUND);
    CHECK_ERROR_HAS("page-unit"); /* the known names */
    CHECK_FAILS(nnm_pool_new_by_name(NULL, NULL, NULL, &stale), NNM_NULL_ARGUMENT);
    o.reserved = 1;
    CHECK_FAILS(nnm_pool_new(NULL, strategy, &o, &stale), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("reserved");
    o.reserved = 0;
    o.replay_algorithm = 1000;
    CHECK_FAILS(nnm_pool_new(NULL, strategy, &o, &stale), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("replay_algorithm");
    CHECK(stale == NULL);
    CHECK_FAILS(nnm_pool_options_default(NULL), NNM_NULL_ARGUMENT);

    /* A freed handle is refused by the checked calls; a double free is reported. */
    nnm_pool_free(pool);
    CHECK_FAILS(nnm_pool_get_stats(pool, &after), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_pool_release_cached(pool, NULL), NNM_INVALID_ARGUMENT);
    CHECK(nnm_pool_strategy_name(pool) == NULL);
    nnm_pool_free(pool);
    CHECK_ERROR_HAS("not a live nnm_pool");
    nnm_pool_free(NULL); /* a no-op */
}

/* --- PyTorch's semantics: release_cached, out-of-memory, end_iteration --- */

#define MIB ((size_t)1 << 20)

/* A caching pool whose one small segment (2 MiB) is wholly idle, its
 * blocks last used on two streams: 1000 B on the default stream, freed,
 * the streams synchronised, then 1000 B on stream S and 1000 B on the
 * default stream, both freed. */
static nnm_pool *two_stream_idle_segment(nnm_device_allocator *dev, uint64_t limit) {
    void *const S = (void *)(uintptr_t)0x51;
    nnm_pool_options o = default_options();
    nnm_pool *pool = NULL;
    void *a = NULL, *b = NULL;
    o.limit_bytes = limit;
    o.shards = 1;
    CHECK_OK(nnm_pool_new(dev, NNM_STRATEGY_CACHING, &o, &pool));
    if (pool == NULL) abort();
    CHECK_OK(nnm_pool_alloc(pool, 1000, 0, NULL, &a));
    CHECK_OK(nnm_pool_dealloc(pool, a));
    CHECK_OK(nnm_pool_streams_synchronized(pool));
    CHECK_OK(nnm_pool_alloc(pool, 1000, 0, S, &a));
    CHECK_OK(nnm_pool_alloc(pool, 1000, 0, NULL, &b));
    CHECK_OK(nnm_pool_dealloc(pool, a));
    CHECK_OK(nnm_pool_dealloc(pool, b));
    nnm_pool_stats s = stats_of(pool);
    CHECK(s.active_blocks == 0 && s.reserved_bytes == 2 * MIB && s.cached_bytes == 2 * MIB);
    return pool;
}

static void test_pytorch_semantics(void) {
    counter c;
    nnm_device_allocator *dev = counter_allocator(&c, "counter");
    nnm_pool *pool;
    uint64_t released = 0;
    void *p = NULL, *q = NULL;

    /* empty_cache: every wholly idle segment goes back, whatever streams
     * its blocks were used on. */
    pool = two_stream_idle_segment(dev, 0);
    CHECK_OK(nnm_pool_release_cached(pool, &released));
    CHECK(released == 2 * MIB);
    nnm_pool_stats s = stats_of(pool);
    CHECK(s.reserved_bytes == 0 && s.cached_bytes == 0 && s.cached_blocks == 0 && s.device_frees == 1);
    CHECK(balanced(&c));
    nnm_pool_free(pool);

    /* No false out-of-memory: 2 MiB idle under a 4 MiB limit, a 3 MiB
     * request (a 4 MiB segment) frees the idle segment and is served. */
    pool = two_stream_idle_segment(dev, 4 * MIB);
    CHECK_OK(nnm_pool_alloc(pool, 3 * MIB, 0, NULL, &p));
    s = stats_of(pool);
    CHECK(p != NULL && s.oom_retries == 1 && s.limit_refusals == 0);
    CHECK(s.reserved_bytes == 4 * MIB && s.device_frees == 1);
    CHECK_OK(nnm_pool_dealloc(pool, p));
    nnm_pool_free(pool);
    CHECK(balanced(&c));

    /* end_iteration is not replay's: a caching pool ignores it (its two
     * wholly idle large segments stay as they are, no device call). */
    REQUIRE_OK(nnm_pool_new(dev, NNM_STRATEGY_CACHING, NULL, &pool));
    CHECK_OK(nnm_pool_alloc(pool, 4 * MIB, 0, NULL, &p));
    CHECK_OK(nnm_pool_alloc(pool, 6 * MIB, 0, NULL, &q));
    CHECK_OK(nnm_pool_dealloc(pool, p));
    CHECK_OK(nnm_pool_dealloc(pool, q));
    nnm_pool_stats before = stats_of(pool);
    long calls = device_allocs(&c);
    CHECK(before.cached_blocks == 2 && before.device_allocs == 2);
    CHECK_OK(nnm_pool_end_iteration(pool));
    nnm_pool_stats after = stats_of(pool);
    CHECK(same_stats(&before, &after) && device_allocs(&c) == calls);
    nnm_pool_free(pool);
    CHECK(balanced(&c));

    nnm_device_allocator_free(dev);
    pthread_mutex_destroy(&c.lock);
}

/* Bad caching options are refused, naming the field and the rule. */
static void test_bad_options(void) {
    static const struct {
        int field; /* 0 min_block, 1 small_segment, 2 large_round, 3 shards */
        uint64_t value;
        const char *says;
    } bad[] = {
        {0, 1000, "min_block 1000 B is not a power of two"},
        {0, 0, "min_block 0 B is not a power of two"},
        {0, 3, "min_block 3 B is not a power of two"},
        {1, 0, "small_segment 0 B"},
        {1, 1000, "small_segment 1000 B is not a multiple of min_block (512 B)"},
        {1, 512 * 1024, "small_segment 524288 B is smaller than small_size (1048576 B)"},
        {2, 0, "large_round 0 B"},
        {2, 1000, "large_round 1000 B is not a multiple of min_block (512 B)"},
        {3, 65, "65 shards asked, at most 64"},
    };
    const uint32_t strategies[3] = {NNM_STRATEGY_CACHING, NNM_STRATEGY_REPLAY, NNM_STRATEGY_PAGE_UNIT};
    size_t i;
    int k;
    for (k = 0; k < 3; ++k) {
        for (i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
            nnm_pool_options o = default_options();
            nnm_pool *pool = NULL;
            switch (bad[i].field) {
            case 0: o.min_block = bad[i].value; break;
            case 1: o.small_segment = bad[i].value; break;
            case 2: o.large_round = bad[i].value; break;
            default: o.shards = (uint32_t)bad[i].value; break;
            }
            CHECK_REFUSES(nnm_pool_new(NULL, strategies[k], &o, &pool), NNM_INVALID_ARGUMENT, bad[i].says);
            CHECK(pool == NULL);
            nnm_pool_free(pool);
        }
    }
    /* The rules' edges are accepted: 1 B blocks, 64 shards, segments of
     * exactly small_size. */
    {
        nnm_pool_options o = default_options();
        nnm_pool *pool = NULL;
        void *p = NULL;
        o.min_block = 1;
        o.small_segment = o.small_size;
        o.large_round = 3;
        o.shards = 64;
        REQUIRE_OK(nnm_pool_new(NULL, NNM_STRATEGY_CACHING, &o, &pool));
        CHECK_OK(nnm_pool_alloc(pool, 1, 1, NULL, &p));
        CHECK(stats_of(pool).allocated_bytes == 1); /* not rounded to 512 B */
        CHECK_OK(nnm_pool_dealloc(pool, p));
        nnm_pool_free(pool);
    }
}

/* After a replay pool planned its iteration, a refused request changes no
 * statistic (no departure counted). */
static void test_replay_refusal_changes_nothing(void) {
    nnm_pool *pool = NULL;
    void *a = NULL, *out = NULL;
    REQUIRE_OK(nnm_pool_new(NULL, NNM_STRATEGY_REPLAY, NULL, &pool));
    CHECK_OK(nnm_pool_alloc(pool, 1000, 64, NULL, &a));
    CHECK_OK(nnm_pool_dealloc(pool, a));
    CHECK_OK(nnm_pool_end_iteration(pool));
    nnm_pool_stats before = stats_of(pool);
    CHECK(before.plan_bytes > 0 && before.plan_departures == 0);
    CHECK_FAILS(nnm_pool_alloc(pool, SIZE_MAX - 148, 64, NULL, &out), NNM_OVERFLOW);
    CHECK(out == NULL);
    nnm_pool_stats after = stats_of(pool);
    CHECK(same_stats(&before, &after));
    /* The plan still serves the recorded iteration. */
    CHECK_OK(nnm_pool_alloc(pool, 1000, 64, NULL, &a));
    CHECK_OK(nnm_pool_dealloc(pool, a));
    after = stats_of(pool);
    CHECK(after.served_from_plan == 1 && after.plan_departures == 0);
    nnm_pool_free(pool);
}

/* RAF's strategy names (page_unit_pool, no_pool) are accepted wherever a
 * name is; reports keep nnmem's. */
static void test_raf_names(void) {
    const uint32_t host = NNM_DEVICE_TYPE_HOST, id = 11;
    uint32_t v = 99;
    nnm_pool *pool = NULL;
    c_registry reg;
    nnm_strategy_vtable vt;
    /* Built-ins cannot be unregistered, by either name. */
    CHECK_REFUSES(nnm_pool_unregister_strategy("page-unit"), NNM_INVALID_ARGUMENT, "'page-unit' is a built-in");
    CHECK_REFUSES(nnm_pool_unregister_strategy("page_unit_pool"), NNM_INVALID_ARGUMENT, "RAF's name of 'page-unit'");
    CHECK_REFUSES(nnm_pool_unregister_strategy("never-registered"), NNM_NOT_FOUND, "registered: ");
    CHECK_OK(nnm_strategy_from_name("page_unit_pool", &v));
    CHECK(v == NNM_STRATEGY_PAGE_UNIT);
    CHECK_OK(nnm_strategy_from_name("no_pool", &v));
    CHECK(v == NNM_STRATEGY_NO_POOL);
    REQUIRE_OK(nnm_pool_new_by_name(NULL, "page_unit_pool", NULL, &pool));
    CHECK(strcmp(name_of(pool), "page-unit") == 0);
    nnm_pool_free(pool);
    CHECK_OK(nnm_device_init_pool(host, id, "no_pool", NULL));
    REQUIRE_OK(nnm_device_get_pool(host, id, &pool));
    CHECK(strcmp(name_of(pool), "no-pool") == 0);
    nnm_pool_free(pool);
    CHECK_OK(nnm_device_init_pool(host, id, "page_unit_pool", NULL));
    REQUIRE_OK(nnm_device_get_pool(host, id, &pool));
    CHECK(strcmp(name_of(pool), "page-unit") == 0);
    nnm_pool_free(pool);
    CHECK_OK(nnm_device_remove_pool(host, id));
    /* An alias is a built-in's name: no user strategy takes it. */
    memset(&reg, 0, sizeof reg);
    vt = strategy_vtable("no_pool", &reg, c_create, c_alloc, c_dealloc, c_release_cached, c_release_all);
    CHECK_REFUSES(nnm_pool_register_strategy(&vt), NNM_ALREADY_EXISTS, "built-in");
}

/* Size 0: a unique block of the strategy's smallest size, given back like
 * any other (RAF's Alloc(0); glibc's malloc(0)). */
static void test_size_zero(uint32_t strategy) {
    counter c;
    nnm_device_allocator *dev = counter_allocator(&c, "counter");
    nnm_pool *pool = NULL;
    void *a = NULL, *b = NULL, *p = NULL;
    REQUIRE_OK(nnm_pool_new(dev, strategy, NULL, &pool));
    CHECK_OK(nnm_pool_alloc(pool, 0, 0, NULL, &a));
    CHECK_OK(nnm_pool_alloc(pool, 0, 16, NULL, &b));
    CHECK(a != NULL && b != NULL && a != b && (uintptr_t)a % 256 == 0 && (uintptr_t)b % 16 == 0);
    CHECK_OK(nnm_pool_alloc(pool, 1, 1, NULL, &p));
    CHECK(p != NULL && p != a && p != b);
    nnm_pool_stats s = stats_of(pool);
    CHECK(s.active_blocks == 3 && s.requested_bytes == 1 && s.allocs == 3);
    CHECK(s.allocated_bytes >= 3);
    CHECK_OK(nnm_pool_dealloc(pool, a));
    CHECK_OK(nnm_pool_dealloc(pool, b));
    CHECK_FAILS(nnm_pool_dealloc(pool, b), NNM_INVALID_ARGUMENT); /* double */
    s = stats_of(pool);
    CHECK(s.active_blocks == 1 && s.requested_bytes == 1 && s.frees == 2);
    CHECK_OK(nnm_pool_dealloc(pool, p));
    s = stats_of(pool);
    CHECK(s.active_blocks == 0 && s.requested_bytes == 0 && s.allocated_bytes == 0);
    nnm_pool_free(pool);
    nnm_device_allocator_free(dev);
    CHECK(balanced(&c));
    pthread_mutex_destroy(&c.lock);
}

/* A replay pool records a size-0 request and serves it from its plan, at
 * an address of its own. */
static void test_size_zero_replay(void) {
    nnm_pool *pool = NULL;
    void *z = NULL, *y = NULL, *x = NULL;
    int it;
    REQUIRE_OK(nnm_pool_new(NULL, NNM_STRATEGY_REPLAY, NULL, &pool));
    for (it = 0; it < 3; ++it) {
        CHECK_OK(nnm_pool_alloc(pool, 0, 0, NULL, &z));
        CHECK_OK(nnm_pool_alloc(pool, 0, 0, NULL, &y));
        CHECK_OK(nnm_pool_alloc(pool, 100, 0, NULL, &x));
        CHECK(z != NULL && y != NULL && x != NULL && z != y && z != x && y != x);
        CHECK(stats_of(pool).requested_bytes == 100);
        CHECK_OK(nnm_pool_dealloc(pool, z));
        CHECK_OK(nnm_pool_dealloc(pool, y));
        CHECK_OK(nnm_pool_dealloc(pool, x));
        CHECK_OK(nnm_pool_end_iteration(pool));
    }
    nnm_pool_stats s = stats_of(pool);
    CHECK(s.served_from_plan == 6 && s.plan_departures == 0 && s.requested_bytes == 0 && s.active_blocks == 0);
    nnm_pool_free(pool);
}

/* Through the registry and a C strategy too. */
static void test_size_zero_registry(void) {
    const uint32_t host = NNM_DEVICE_TYPE_HOST, id = 12;
    c_registry reg;
    nnm_strategy_vtable vt;
    nnm_pool *pool = NULL;
    void *a = NULL, *b = NULL;
    CHECK_OK(nnm_device_alloc(host, id, 0, 0, NULL, &a)); /* the host allocator's page-unit pool */
    CHECK_OK(nnm_device_alloc(host, id, 0, 0, NULL, &b));
    CHECK(a != NULL && b != NULL && a != b);
    CHECK_OK(nnm_device_dealloc(host, id, a));
    CHECK_OK(nnm_device_dealloc(host, id, b));
    CHECK_OK(nnm_device_remove_pool(host, id));

    memset(&reg, 0, sizeof reg);
    vt = strategy_vtable("c-exact-zero", &reg, c_create, c_alloc, c_dealloc, c_release_cached, c_release_all);
    vt.destroy = c_destroy;
    CHECK_OK(nnm_pool_register_strategy(&vt));
    REQUIRE_OK(nnm_pool_new_by_name(NULL, "c-exact-zero", NULL, &pool));
    CHECK_OK(nnm_pool_alloc(pool, 0, 0, NULL, &a));
    CHECK_OK(nnm_pool_alloc(pool, 0, 0, NULL, &b));
    CHECK(a != NULL && b != NULL && a != b);
    nnm_pool_stats s = stats_of(pool);
    CHECK(s.active_blocks == 2 && s.requested_bytes == 0 && s.allocated_bytes == 128); /* 1 B asked of it: 64 B */
    CHECK_OK(nnm_pool_dealloc(pool, a));
    CHECK_OK(nnm_pool_dealloc(pool, b));
    nnm_pool_free(pool);
    CHECK_OK(nnm_pool_unregister_strategy("c-exact-zero"));
    CHECK(reg.created == 1 && reg.destroyed == 1);
}

int main(void) {
    test_names();
    test_raf_semantics(NNM_STRATEGY_PAGE_UNIT);
    test_raf_semantics(NNM_STRATEGY_CACHING);
    test_raf_semantics(NNM_STRATEGY_NO_POOL);
    test_limits_and_failures();
    test_threads(NNM_STRATEGY_CACHING);
    test_threads(NNM_STRATEGY_PAGE_UNIT);
    test_registry();
    test_replay();
    test_c_strategy();
    test_callback_order_and_stale_contexts();
    test_reports();
    test_bad_input(NNM_STRATEGY_PAGE_UNIT);
    test_bad_input(NNM_STRATEGY_CACHING);
    test_bad_input(NNM_STRATEGY_NO_POOL);
    test_pytorch_semantics();
    test_bad_options();
    test_replay_refusal_changes_nothing();
    test_raf_names();
    test_size_zero(NNM_STRATEGY_NO_POOL);
    test_size_zero(NNM_STRATEGY_PAGE_UNIT);
    test_size_zero(NNM_STRATEGY_CACHING);
    test_size_zero(NNM_STRATEGY_REPLAY);
    test_size_zero_replay();
    test_size_zero_registry();
    return nnm_check_report();
}
