/*
 * nnmem's PyTorch pair called as PyTorch calls it: libnnmem.so opened with
 * dlopen (as ctypes.CDLL does), the two functions found by the names given
 * as strings (CUDAPluggableAllocator's alloc_fn_name and free_fn_name), and
 * called as `void *alloc(ssize_t size, int device, cudaStream_t stream)` and
 * `void free(void *ptr, ssize_t size, int device, cudaStream_t stream)`,
 * from several threads, against a stand-in CUDA (mock_cuda.c).
 *
 *   torch_alloc_test LIBNNMEM ALLOC_NAME FREE_NAME
 *
 * NNM_TORCH_TEST_CUDA says what the loader must find: "runtime" (the
 * stand-in libcudart on LD_LIBRARY_PATH), "driver" (only the stand-in
 * libcuda.so.1) or "none" (neither: the pair refuses and names every
 * library tried); "refused": NNMEM_TORCH_STRATEGY names no strategy, and
 * nnm_torch_init and every allocation say so, except while a pool installed
 * with nnm_device_init_pool serves the device. NNMEM_TORCH_STRATEGY is the pair's own variable: the
 * pool made must have that strategy, and the device calls must be those of
 * that strategy (no-pool: one per block; the others: none once warm).
 * MOCK_CUDA_DEVICES=2: the pair leaves the thread's current device (or
 * context) as it found it when it serves the other device.
 *
 * Every block gets a pattern written and read back through the stand-in's
 * copies (cudaMemcpy / cuMemcpy), which refuse a range outside one live
 * device allocation. Prints "N passed, M failed"; exit status 1 on a
 * failure. C11.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnmem.h"

static int passed, failed;

static void record(int ok, int line, const char *what) {
    if (ok) {
        ++passed;
        return;
    }
    ++failed;
    fprintf(stderr, "torch_alloc_test.c:%d: FAILED: %s\n", line, what);
}
#define CHECK(cond) record((cond) ? 1 : 0, __LINE__, #cond)

/* --- what is called through dlsym ----------------------------------------------- */

typedef void *(*alloc_fn)(ptrdiff_t size, int device, void *stream);
typedef void (*free_fn)(void *ptr, ptrdiff_t size, int device, void *stream);

static alloc_fn torch_alloc;
static free_fn torch_free;
static const char *(*last_error)(void);
static nnm_status (*torch_init)(int device);
static nnm_status (*torch_end_iteration)(int device);
static nnm_status (*device_get_pool)(uint32_t type, uint32_t id, nnm_pool **out);
static const char *(*pool_strategy_name)(const nnm_pool *pool);
static void (*pool_free)(nnm_pool *pool);
static nnm_status (*device_remove_pool)(uint32_t type, uint32_t id);
static nnm_status (*device_init_pool)(uint32_t type, uint32_t id, const char *strategy, const nnm_pool_options *options);

/* The stand-in's, from the library nnmem loaded. */
static long (*mock_count)(const char *name);
static int (*rt_memcpy)(void *dst, const void *src, size_t n, int kind);
static int (*rt_stream_create)(void **s);
static int (*rt_get_device)(int *d);
static int (*rt_set_device)(int d);
static int (*cu_retain)(void **ctx, int device);
static int (*cu_release)(int device);
static int (*cu_push)(void *ctx);
static int (*cu_pop)(void **ctx);
static int (*cu_get_current)(void **ctx);
static int (*cu_htod)(unsigned long long dst, const void *src, size_t n);
static int (*cu_dtoh)(void *dst, unsigned long long src, size_t n);
static int (*cu_stream_create)(void **s, unsigned flags);

/* ISO C has no cast between object and function pointers; POSIX makes
 * them the same size. */
static int symbol(void *lib, const char *name, void *fn, size_t fn_size) {
    void *p = lib ? dlsym(lib, name) : NULL;
    if (p == NULL || fn_size != sizeof p) {
        fprintf(stderr, "torch_alloc_test: no %s: %s\n", name, lib ? dlerror() : "library not loaded");
        return 0;
    }
    memcpy(fn, &p, sizeof p);
    return 1;
}
#define SYMBOL(lib, name, field) symbol((lib), (name), (void *)&(field), sizeof(field))

static int driver; /* the driver, not the runtime */
static void *copy_context; /* driver: device 0's primary context, for the copies */

/* Writes (put) or checks (!put) `seed`'s pattern in `n` device bytes at `p`. */
static int pattern(void *p, size_t n, uint64_t seed, int put) {
    unsigned char *h = (unsigned char *)malloc(n), *want = (unsigned char *)malloc(n);
    size_t i;
    int e, ok = 0;
    if (h == NULL || want == NULL) goto out;
    for (i = 0; i < n; ++i) want[i] = (unsigned char)((seed * 0x9e3779b97f4a7c15ULL + i * 131) >> 13);
    if (driver) {
        cu_push(copy_context);
        e = put ? cu_htod((unsigned long long)(uintptr_t)p, want, n) : cu_dtoh(h, (unsigned long long)(uintptr_t)p, n);
        cu_pop(NULL);
    } else {
        e = put ? rt_memcpy(p, want, n, 1) : rt_memcpy(h, p, n, 2);
    }
    ok = e == 0 && (put || memcmp(h, want, n) == 0);
    if (!ok) fprintf(stderr, "torch_alloc_test: %zu B at %p: copy error %d or wrong bytes\n", n, p, e);
out:
    free(h);
    free(want);
    return ok;
}

/* --- threads ------------------------------------------------------------------ */

#define THREADS 4
#define BLOCKS 24
#define ROUNDS 8
static const size_t SIZES[6] = {1, 100, 256, 4096, 65537, (256u << 10) + 3};

typedef struct worker {
    int id;
    void *stream; /* NULL or a stream of its own */
    int ok;
    void *kept; /* a block left for the main thread to free */
} worker;

static void *work(void *arg) {
    worker *w = (worker *)arg;
    void *blocks[BLOCKS];
    int round, b, ok = 1;
    for (round = 0; round < ROUNDS; ++round) {
        for (b = 0; b < BLOCKS; ++b) {
            size_t n = SIZES[(b + w->id + round) % 6];
            blocks[b] = torch_alloc((ptrdiff_t)n, 0, w->stream);
            if (blocks[b] == NULL || (uintptr_t)blocks[b] % 256 != 0) {
                fprintf(stderr, "torch_alloc_test: thread %d: alloc of %zu B: %p: %s\n", w->id, n, blocks[b],
                        last_error());
                ok = 0;
                continue;
            }
            ok &= pattern(blocks[b], n, (uint64_t)(w->id * 1000003 + round * 1009 + b), 1);
        }
        for (b = 0; b < BLOCKS; ++b) {
            size_t n = SIZES[(b + w->id + round) % 6];
            if (blocks[b] == NULL) continue;
            ok &= pattern(blocks[b], n, (uint64_t)(w->id * 1000003 + round * 1009 + b), 0);
            if (round == ROUNDS - 1 && b == 0) {
                w->kept = blocks[b];
            } else {
                torch_free(blocks[b], (ptrdiff_t)n, 0, w->stream);
            }
        }
    }
    w->ok = ok;
    return NULL;
}

static void threads(int on_streams) {
    pthread_t t[THREADS];
    worker w[THREADS];
    int i;
    for (i = 0; i < THREADS; ++i) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].id = i;
        if (on_streams) {
            if (driver) {
                cu_push(copy_context);
                CHECK(cu_stream_create(&w[i].stream, 0) == 0);
                cu_pop(NULL);
            } else {
                CHECK(rt_stream_create(&w[i].stream) == 0);
            }
        }
        CHECK(pthread_create(&t[i], NULL, work, &w[i]) == 0);
    }
    for (i = 0; i < THREADS; ++i) {
        pthread_join(t[i], NULL);
        CHECK(w[i].ok);
        CHECK(w[i].kept != NULL);
        /* Freed on another thread than the one that allocated it. */
        torch_free(w[i].kept, (ptrdiff_t)SIZES[(i + ROUNDS - 1) % 6], 0, w[i].stream);
    }
}

/* --- checks ------------------------------------------------------------------------ */

static long device_allocs(void) {
    return driver ? mock_count("cuMemAlloc_v2") + mock_count("cuMemAllocAsync")
                  : mock_count("cudaMalloc") + mock_count("cudaMallocAsync");
}

/* The same 8 blocks three times, an iteration each: replay plans the first
 * and serves the others from its plan; every pool strategy is warm by the
 * third; no-pool goes to the device for each block. */
static void iterations(const char *strategy) {
    void *p[8];
    long before = 0;
    int it, i;
    for (it = 0; it < 3; ++it) {
        if (it == 2) before = device_allocs();
        for (i = 0; i < 8; ++i) {
            p[i] = torch_alloc((ptrdiff_t)(1000 * (i + 1)), 0, NULL);
            CHECK(p[i] != NULL && pattern(p[i], (size_t)(1000 * (i + 1)), (uint64_t)i, 1));
        }
        for (i = 0; i < 8; ++i) {
            CHECK(pattern(p[i], (size_t)(1000 * (i + 1)), (uint64_t)i, 0));
            torch_free(p[i], (ptrdiff_t)(1000 * (i + 1)), 0, NULL);
        }
        CHECK(torch_end_iteration(0) == NNM_OK);
    }
    if (strcmp(strategy, "no-pool") == 0) {
        CHECK(device_allocs() - before == 8);
    } else {
        CHECK(device_allocs() == before);
    }
}

/* Failures: NULL with the reason, a free of foreign memory changes nothing. */
static void failures(void) {
    int local = 0;
    long live;
    /* The device's own refusal (a pool gives its idle memory back first). */
    CHECK(torch_alloc((ptrdiff_t)(16ULL << 30), 0, NULL) == NULL);
    CHECK(strstr(last_error(), "out of memory") != NULL);
    live = mock_count("live");
    CHECK(torch_alloc(0, 0, NULL) == NULL);
    CHECK(torch_alloc(-8, 0, NULL) == NULL);
    CHECK(strstr(last_error(), "a size is 0 or more") != NULL);
    CHECK(torch_alloc(64, 7, NULL) == NULL);
    CHECK(strstr(last_error(), "cuda:7: no such device") != NULL);
    CHECK(torch_alloc(64, -1, NULL) == NULL);
    CHECK(strstr(last_error(), "CUDA device -1") != NULL);
    torch_free(&local, 4, 0, NULL);
    CHECK(strstr(last_error(), "handed it out") != NULL);
    torch_free(NULL, 0, 0, NULL);
    CHECK(mock_count("live") == live);
}

/* Serving device 1 leaves the thread's device 0 (runtime) or its own
 * context (driver) current. */
static void other_device(void) {
    void *p;
    if (driver) {
        void *mine = NULL, *now = NULL;
        CHECK(cu_retain(&mine, 0) == 0 && cu_push(mine) == 0);
        p = torch_alloc(4096, 1, NULL);
        CHECK(p != NULL);
        torch_free(p, 4096, 1, NULL);
        CHECK(cu_get_current(&now) == 0 && now == mine);
        cu_pop(NULL);
        cu_release(0);
    } else {
        int d = -1;
        CHECK(rt_set_device(0) == 0);
        p = torch_alloc(4096, 1, NULL);
        CHECK(p != NULL);
        torch_free(p, 4096, 1, NULL);
        CHECK(rt_get_device(&d) == 0 && d == 0);
    }
    CHECK(device_remove_pool(NNM_DEVICE_TYPE_CUDA, 1) == NNM_OK);
}

static void no_cuda(void) {
    const char *names[5] = {"libcudart.so", "libcudart.so.12", "libcudart.so.11.0", "libcuda.so.1", "libcuda.so"};
    const char *e;
    int i;
    for (i = 0; i < 5; ++i) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h != NULL) {
            printf("torch_alloc_test: %s loads here: this check needs a machine without CUDA\n", names[i]);
            dlclose(h);
            return;
        }
    }
    CHECK(torch_alloc(64, 0, NULL) == NULL);
    e = last_error();
    printf("torch_alloc_test: without CUDA: %s\n", e);
    for (i = 0; i < 5; ++i) {
        char tried[64];
        snprintf(tried, sizeof tried, "%s: cannot open shared object file", names[i]);
        CHECK(strstr(e, tried) != NULL);
    }
    CHECK(torch_init(0) == NNM_NOT_FOUND);
    CHECK(strstr(last_error(), "no CUDA: the runtime (libcudart) not found") != NULL);
}

int main(int argc, char **argv) {
    const char *mode = getenv("NNM_TORCH_TEST_CUDA"), *strategy = getenv("NNMEM_TORCH_STRATEGY");
    void *lib, *cuda;
    nnm_pool *pool = NULL;
    if (argc != 4 || mode == NULL) {
        fprintf(stderr, "usage: NNM_TORCH_TEST_CUDA=runtime|driver|none|refused %s LIBNNMEM ALLOC_NAME FREE_NAME\n", argv[0]);
        return 2;
    }
    if (strategy == NULL || strategy[0] == '\0') strategy = "caching";
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "torch_alloc_test: %s\n", dlerror());
        return 1;
    }
    if (!SYMBOL(lib, argv[2], torch_alloc) || !SYMBOL(lib, argv[3], torch_free) ||
        !SYMBOL(lib, "nnm_last_error", last_error) || !SYMBOL(lib, "nnm_torch_init", torch_init) ||
        !SYMBOL(lib, "nnm_torch_end_iteration", torch_end_iteration) ||
        !SYMBOL(lib, "nnm_device_get_pool", device_get_pool) ||
        !SYMBOL(lib, "nnm_pool_strategy_name", pool_strategy_name) || !SYMBOL(lib, "nnm_pool_free", pool_free) ||
        !SYMBOL(lib, "nnm_device_remove_pool", device_remove_pool) ||
        !SYMBOL(lib, "nnm_device_init_pool", device_init_pool)) {
        return 1;
    }
    if (strcmp(mode, "none") == 0) {
        no_cuda();
    } else if (strcmp(mode, "refused") == 0) {
        CHECK(torch_init(0) == NNM_NOT_FOUND);
        CHECK(strstr(last_error(), "NNMEM_TORCH_STRATEGY=") != NULL);
        CHECK(strstr(last_error(), "unknown pool strategy") != NULL);
        CHECK(torch_alloc(64, 0, NULL) == NULL);
        CHECK(strstr(last_error(), "refuses every allocation") != NULL);
        printf("torch_alloc_test: refused: %s\n", last_error());
        /* A pool installed for the device is used as it is: the variable
         * only names the strategy of a pool the pair would make. */
        CHECK(device_init_pool(NNM_DEVICE_TYPE_CUDA, 0, "page-unit", NULL) == NNM_OK);
        {
            void *p = torch_alloc(64, 0, NULL);
            CHECK(p != NULL);
            if (p == NULL) fprintf(stderr, "torch_alloc_test: installed pool: %s\n", last_error());
            torch_free(p, 64, 0, NULL);
        }
        CHECK(torch_init(0) == NNM_OK);
        CHECK(torch_end_iteration(0) == NNM_OK);
        /* Without it, refused again. */
        CHECK(device_remove_pool(NNM_DEVICE_TYPE_CUDA, 0) == NNM_OK);
        CHECK(torch_alloc(64, 0, NULL) == NULL);
        CHECK(strstr(last_error(), "refuses every allocation") != NULL);
    } else {
        driver = strcmp(mode, "driver") == 0;
        CHECK(torch_init(0) == NNM_OK);
        if (failed) fprintf(stderr, "torch_alloc_test: nnm_torch_init(0): %s\n", last_error());
        /* The library nnmem loaded, and only that one. */
        cuda = dlopen(driver ? "libcuda.so.1" : "libcudart.so", RTLD_NOW | RTLD_NOLOAD);
        CHECK(cuda != NULL);
        CHECK(dlopen(driver ? "libcudart.so" : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) == NULL);
        if (cuda == NULL || !SYMBOL(cuda, "mock_cuda_count", mock_count)) return 1;
        if (driver ? !SYMBOL(cuda, "cuDevicePrimaryCtxRetain", cu_retain) ||
                         !SYMBOL(cuda, "cuDevicePrimaryCtxRelease_v2", cu_release) ||
                         !SYMBOL(cuda, "cuCtxPushCurrent_v2", cu_push) ||
                         !SYMBOL(cuda, "cuCtxPopCurrent_v2", cu_pop) ||
                         !SYMBOL(cuda, "cuCtxGetCurrent", cu_get_current) ||
                         !SYMBOL(cuda, "cuMemcpyHtoD_v2", cu_htod) || !SYMBOL(cuda, "cuMemcpyDtoH_v2", cu_dtoh) ||
                         !SYMBOL(cuda, "cuStreamCreate", cu_stream_create)
                   : !SYMBOL(cuda, "cudaMemcpy", rt_memcpy) || !SYMBOL(cuda, "cudaStreamCreate", rt_stream_create) ||
                         !SYMBOL(cuda, "cudaGetDevice", rt_get_device) ||
                         !SYMBOL(cuda, "cudaSetDevice", rt_set_device)) {
            return 1;
        }
        if (driver) CHECK(cu_retain(&copy_context, 0) == 0);
        CHECK(device_get_pool(NNM_DEVICE_TYPE_CUDA, 0, &pool) == NNM_OK);
        CHECK(pool != NULL && strcmp(pool_strategy_name(pool), strategy) == 0);
        pool_free(pool);

        iterations(strategy);
        threads(0);
        threads(1);
        CHECK(mock_count(driver ? "cuMemAllocAsync" : "cudaMallocAsync") > 0);
        CHECK(mock_count(driver ? "cuMemAlloc_v2" : "cudaMalloc") > 0);
        failures();
        other_device();
        /* Every block back; the pool gone with its memory (and, on the
         * driver, its hold on the primary context). */
        CHECK(device_remove_pool(NNM_DEVICE_TYPE_CUDA, 0) == NNM_OK);
        CHECK(mock_count("live") == 0);
        if (driver) {
            CHECK(mock_count("primary_refs") == 1); /* this test's own */
            cu_release(0);
            CHECK(mock_count("primary_refs") == 0);
        }
        printf("torch_alloc_test: %s through %s, strategy %s: %ld device allocations\n", argv[2],
               driver ? "libcuda.so.1" : "libcudart.so", strategy, device_allocs());
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
