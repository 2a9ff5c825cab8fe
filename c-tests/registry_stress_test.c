/*
 * The device registry under concurrency: 4 threads allocate and give back
 * blocks through nnm_device_alloc / nnm_device_dealloc on one CUSTOM device
 * while another thread cycles nnm_device_init_pool, _reset_pool,
 * _remove_pool and _get_pool on it every 64 allocations, against a device
 * allocator written in C that counts its calls and bytes.
 *
 *   - every allocation succeeds: one racing a switch is served by the old
 *     pool or the new one (WRONG_STATE is not among nnm_device_alloc's
 *     statuses; nor can any of its listed failures happen here);
 *   - every block handed out is accepted back, its first bytes intact;
 *   - once every block is back and the last pool removed, the device got
 *     every byte back (as many device frees as allocations, 0 B out).
 *
 * 10^6 operations (an allocation, and the give-back of the block it
 * replaces) per thread natively; 20,000 under valgrind and the sanitizers
 * (NNM_REGISTRY_STRESS_LIGHT). Bounded by operation counts, never by
 * time: the switching thread makes one cycle per 64 allocations of the
 * workers, waiting for them when it is ahead. (One that never waited
 * starved a worker of the registry's lock, and a run took minutes.) A slow
 * machine changes how the threads interleave, never what is asserted.
 *
 * Valid C11 and C++17 (built both ways); threads are POSIX threads.
 */
#if !defined(_POSIX_C_SOURCE) && !defined(__cplusplus)
#define _POSIX_C_SOURCE 200809L /* posix_memalign, pthreads under -std=c11 */
#endif
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnm_check.h"
#include "nnmem.h"

#define THREADS 4
#define WINDOW 8     /* blocks a thread holds at once */
#define PATTERN 64   /* bytes at the start of each block filled and checked */
#define DEVICE_ID 23 /* CUSTOM device 23: no other test uses it */
#define STRIDE 64    /* one switch cycle per this many allocations */

static const char *const STRATEGIES[] = {"page-unit", "caching", "no-pool"};

/* Whether the run is under valgrind or the sanitizers (set by CMake). */
static int light(void) {
    const char *v = getenv("NNM_REGISTRY_STRESS_LIGHT");
    return v != NULL && v[0] != '\0' && v[0] != '0';
}

/* --- a device allocator in C that counts its calls and bytes ----------- */

typedef struct counter {
    pthread_mutex_t lock;
    long allocs, frees;
    size_t bytes_out;
} counter;

/* Static: the registry keeps the allocator (and so this context) until
 * the device's allocator is replaced at the end. */
static counter device;

/* One more call in `calls`, and `in` bytes more out, `back` fewer. */
static void tally(counter *c, long *calls, size_t in, size_t back) {
    pthread_mutex_lock(&c->lock);
    ++*calls;
    c->bytes_out = c->bytes_out + in - back;
    pthread_mutex_unlock(&c->lock);
}

static void *counter_alloc(void *ctx, size_t size, size_t alignment, void *stream) {
    counter *c = (counter *)ctx;
    void *p = NULL;
    (void)stream;
    if (posix_memalign(&p, alignment < sizeof(void *) ? sizeof(void *) : alignment, size) != 0) return NULL;
    tally(c, &c->allocs, size, 0);
    return p;
}

static void counter_free(void *ctx, void *ptr, size_t size, void *stream) {
    counter *c = (counter *)ctx;
    (void)stream;
    tally(c, &c->frees, 0, size);
    free(ptr);
}

/* --- the workers and the switching thread ------------------------------- */

typedef struct worker {
    unsigned id;
    long operations;
    /* Counted here (CHECK is not thread-safe), reported by main. */
    long refused_allocs, unlisted_statuses, refused_deallocs, damaged;
    int first_status; /* the first refused allocation's status */
    char first_error[200];
} worker;

/* The workers' allocations so far, counted STRIDE at a time: the
 * switching thread's pace. */
static pthread_mutex_t progress_lock = PTHREAD_MUTEX_INITIALIZER;
static long progress;

static void add_progress(long n) {
    pthread_mutex_lock(&progress_lock);
    progress += n;
    pthread_mutex_unlock(&progress_lock);
}

static long progress_now(void) {
    long n;
    pthread_mutex_lock(&progress_lock);
    n = progress;
    pthread_mutex_unlock(&progress_lock);
    return n;
}

/* The statuses nnmem.h lists for nnm_device_alloc. */
static int listed_for_alloc(nnm_status s) {
    return s == NNM_NULL_ARGUMENT || s == NNM_INVALID_ARGUMENT || s == NNM_OVERFLOW || s == NNM_OUT_OF_MEMORY ||
           s == NNM_NOT_FOUND;
}

static unsigned char pattern(unsigned id, uint64_t serial, size_t i) {
    return (unsigned char)(id * 61u + serial * 7u + i);
}

/* A block a worker holds: its first bytes hold pattern(id, serial, i). */
typedef struct block {
    unsigned char *ptr; /* NULL: none */
    size_t size;
    uint64_t serial;
} block;

static void note_refusal(worker *w, nnm_status s) {
    if (w->refused_allocs++ == 0) {
        const char *e = nnm_last_error();
        w->first_status = (int)s;
        snprintf(w->first_error, sizeof w->first_error, "%s", e != NULL ? e : "(NULL)");
    }
    if (!listed_for_alloc(s)) ++w->unlisted_statuses;
}

static void take(worker *w, block *b, size_t size, uint64_t serial) {
    void *p = NULL;
    size_t i;
    nnm_status s = nnm_device_alloc(NNM_DEVICE_TYPE_CUSTOM, DEVICE_ID, size, 64, NULL, &p);
    if (s != NNM_OK || p == NULL) {
        note_refusal(w, s);
        return;
    }
    b->ptr = (unsigned char *)p;
    b->size = size;
    b->serial = serial;
    for (i = 0; i < size && i < PATTERN; ++i) b->ptr[i] = pattern(w->id, serial, i);
}

static void give_back(worker *w, block *b) {
    size_t i;
    if (b->ptr == NULL) return;
    for (i = 0; i < b->size && i < PATTERN; ++i) {
        if (b->ptr[i] != pattern(w->id, b->serial, i)) {
            ++w->damaged;
            break;
        }
    }
    if (nnm_device_dealloc(NNM_DEVICE_TYPE_CUSTOM, DEVICE_ID, b->ptr) != NNM_OK) ++w->refused_deallocs;
    b->ptr = NULL;
}

/* xorshift64: the next request size, reproducible per thread. */
static uint64_t next_random(uint64_t *state) {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

static void *worker_body(void *arg) {
    worker *w = (worker *)arg;
    block held[WINDOW];
    uint64_t rng = 0x9e3779b97f4a7c15u * (w->id + 1);
    long n;
    memset(held, 0, sizeof held);
    for (n = 0; n < w->operations; ++n) {
        block *b = &held[n % WINDOW];
        give_back(w, b);
        /* 1 B to 9000 B: page-unit blocks of 1 to 3 pages. */
        take(w, b, 1 + (size_t)(next_random(&rng) % 9000), (uint64_t)n);
        if ((n + 1) % STRIDE == 0) add_progress(STRIDE);
    }
    add_progress(w->operations % STRIDE);
    for (n = 0; n < WINDOW; ++n) give_back(w, &held[n]);
    return NULL;
}

typedef struct switcher {
    long cycles;
    long failed_verbs; /* every verb succeeds in this order (see below) */
} switcher;

/* Makes `cycles` cycles of init (each strategy in turn, one shard: the
 * threads contend for its lock, which widens the windows a switch can
 * fall into), reset, remove, get, each once the workers made STRIDE more
 * allocations. Only this thread removes, so reset and remove always find
 * a pool: every verb must succeed. */
static void *switcher_body(void *arg) {
    switcher *s = (switcher *)arg;
    nnm_pool_options o;
    nnm_pool *pool = NULL;
    long cycle;
    if (nnm_pool_options_default(&o) != NNM_OK) ++s->failed_verbs;
    o.shards = 1;
    for (cycle = 0; cycle < s->cycles; ++cycle) {
        const char *strategy = STRATEGIES[cycle % 3];
        while (progress_now() < cycle * STRIDE) sched_yield();
        s->failed_verbs += nnm_device_init_pool(NNM_DEVICE_TYPE_CUSTOM, DEVICE_ID, strategy, &o) != NNM_OK;
        s->failed_verbs += nnm_device_reset_pool(NNM_DEVICE_TYPE_CUSTOM, DEVICE_ID) != NNM_OK;
        s->failed_verbs += nnm_device_remove_pool(NNM_DEVICE_TYPE_CUSTOM, DEVICE_ID) != NNM_OK;
        s->failed_verbs += nnm_device_get_pool(NNM_DEVICE_TYPE_CUSTOM, DEVICE_ID, &pool) != NNM_OK;
        nnm_pool_free(pool);
        pool = NULL;
    }
    return NULL;
}

static void test_switches_lose_nothing(void) {
    const long operations = light() ? 20000 : 1000000;
    nnm_device_allocator_vtable vt;
    nnm_device_allocator *dev = NULL, *host = NULL;
    pthread_t threads[THREADS], switching;
    worker workers[THREADS];
    switcher sw;
    long refused = 0, unlisted = 0, refused_deallocs = 0, damaged = 0;
    unsigned t;

    memset(&device, 0, sizeof device);
    pthread_mutex_init(&device.lock, NULL);
    memset(&vt, 0, sizeof vt);
    vt.name = "counting";
    vt.ctx = &device;
    vt.alloc = counter_alloc;
    vt.free = counter_free;
    vt.flags = NNM_DEVICE_HOST_ACCESSIBLE;
    REQUIRE_OK(nnm_device_allocator_new(&vt, &dev));
    REQUIRE_OK(nnm_device_register_allocator(NNM_DEVICE_TYPE_CUSTOM, DEVICE_ID, dev));
    nnm_device_allocator_free(dev); /* the registry keeps it */

    memset(&sw, 0, sizeof sw);
    sw.cycles = THREADS * operations / STRIDE;
    progress = 0;
    for (t = 0; t < THREADS; ++t) {
        memset(&workers[t], 0, sizeof workers[t]);
        workers[t].id = t;
        workers[t].operations = operations;
        CHECK(pthread_create(&threads[t], NULL, worker_body, &workers[t]) == 0);
    }
    CHECK(pthread_create(&switching, NULL, switcher_body, &sw) == 0);
    for (t = 0; t < THREADS; ++t) {
        CHECK(pthread_join(threads[t], NULL) == 0);
        refused += workers[t].refused_allocs;
        unlisted += workers[t].unlisted_statuses;
        refused_deallocs += workers[t].refused_deallocs;
        damaged += workers[t].damaged;
        if (workers[t].refused_allocs > 0) {
            fprintf(stderr, "thread %u: %ld of %ld allocations refused, the first with %s: \"%s\"\n", t,
                    workers[t].refused_allocs, operations, nnm_status_str(workers[t].first_status),
                    workers[t].first_error);
        }
    }
    CHECK(pthread_join(switching, NULL) == 0);
    printf("%d threads x %ld operations against %ld switch cycles: %ld allocations refused (%ld with a status "
           "not listed for nnm_device_alloc), %ld blocks refused back, %ld damaged\n",
           THREADS, operations, sw.cycles, refused, unlisted, refused_deallocs, damaged);
    CHECK(sw.failed_verbs == 0);
    CHECK(unlisted == 0);
    CHECK(refused == 0);
    CHECK(refused_deallocs == 0);
    CHECK(damaged == 0);

    /* Every block is back: removing the last pool leaves nothing out. */
    CHECK_OK(nnm_device_remove_pool(NNM_DEVICE_TYPE_CUSTOM, DEVICE_ID));
    pthread_mutex_lock(&device.lock);
    printf("device: %ld allocations, %ld frees, %zu B out\n", device.allocs, device.frees, device.bytes_out);
    CHECK(device.allocs > 0 && device.allocs == device.frees);
    CHECK(device.bytes_out == 0);
    pthread_mutex_unlock(&device.lock);

    /* The registry lets go of the counting allocator. */
    CHECK_OK(nnm_device_allocator_host(&host));
    CHECK_OK(nnm_device_register_allocator(NNM_DEVICE_TYPE_CUSTOM, DEVICE_ID, host));
    nnm_device_allocator_free(host);
    pthread_mutex_destroy(&device.lock);
}

int main(void) {
    test_switches_lose_nothing();
    return nnm_check_report();
}
