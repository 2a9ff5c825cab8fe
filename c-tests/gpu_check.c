/*
 * gpu_check: nnmem on a real GPU, through the CUDA allocator
 * (scripts/gpu-check.sh builds and runs it; README.md, "GPU check").
 *
 *   pools      every strategy (no-pool, page-unit, caching, replay) over
 *              nnm_device_allocator_cuda(0): three iterations of blocks
 *              from 1 B to 16 MiB under several alignments, a pattern
 *              written to every block with cudaMemcpy and read back once
 *              all of an iteration's blocks are out (overlapping blocks
 *              would show), no device call after the first iteration
 *              (replay: both later ones served from its plan), the idle
 *              memory released; the pool's limit and the device's own
 *              out-of-memory refused with OUT_OF_MEMORY;
 *   streams    the stream-ordered path: the first block on a stream comes
 *              from cudaMallocAsync (seen in the device's memory pool), is
 *              reused on its stream, never on another before
 *              nnm_pool_streams_synchronized, and serves the other stream
 *              after it;
 *   allocator  nnm_device_allocator_alloc/dealloc, on the default stream
 *              and on a stream, and mem_info;
 *   registry   nnm_device_alloc/dealloc on device type CUDA: the default
 *              pool, a switch of strategy with a block still out (the
 *              retired pool takes it back), a block on a stream, every
 *              strategy by name, a device that does not exist;
 *   workbuffers a model compiled with its constants and immutable blob on
 *              the device (the constant written at its address, the
 *              immutable workbuffer by the init callback, both with
 *              cudaMemcpy), a pool of two mutable blocks, and two requests
 *              resolved and run side by side: every operator's outputs and
 *              workbuffers written, its inputs read back, before and after;
 *   torch      PyTorch's pluggable pair (nnm_torch_alloc/nnm_torch_free,
 *              called through pointers of the types PyTorch calls them
 *              with) on device 0: every round size on the default stream
 *              and on a stream with a pattern, the strategy
 *              NNMEM_TORCH_STRATEGY names, NULL with the reason for a
 *              negative size, the device's own out-of-memory and a foreign
 *              pointer's free;
 *   timings    a cached alloc+free pair of each strategy beside
 *              cudaMalloc/cudaFree and cudaMallocAsync/cudaFreeAsync, as a
 *              Markdown table for BENCHMARKS.md (printed, never checked).
 *
 * The CUDA runtime (libcudart.so, .so.12, .so.11.0, the names nnmem tries)
 * is loaded with dlopen, as nnmem loads it, so no CUDA header or toolkit
 * is needed to build this; without the runtime, the driver (libcuda.so.1)
 * runs the same checks, as nnmem falls back to it; --driver takes the
 * driver where the runtime is installed too (for nnmem as well, through
 * NNMEM_CUDA_API=driver). Where neither sees a GPU the program prints
 * "gpu-check: no GPU: <why>" and exits 0.
 *
 * --host runs every check on the host allocator (memcpy, and made-up
 * stream handles, which nnmem never dereferences), so that the checks
 * themselves are tested where there is no GPU (ctest, valgrind, ASan);
 * --quick shortens the timing loops and leaves out the 16 MiB block.
 *
 * Every failure prints what failed (the CUDA error string, nnm_last_error())
 * and the run goes on; at the end "N passed, M failed", exit status 1 when
 * anything failed. Valid C11 and C++17.
 */
#if !defined(_POSIX_C_SOURCE) && !defined(__cplusplus)
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#endif
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nnm_check.h"
#include "nnmem.h"

/* --- reporting ---------------------------------------------------------------- */

/* Records a failure described by a format. */
static void failf(const char *file, int line, const char *format, ...) {
    char text[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    nnm_check_record(0, file, line, text);
}
#define FAILF(...) failf(__FILE__, __LINE__, __VA_ARGS__)
#define PASS() nnm_check_record(1, __FILE__, __LINE__, "")

/* An nnmem call that must succeed; on failure, its status and message. */
static int nnm_ok(nnm_status s, const char *file, int line, const char *call) {
    if (s == NNM_OK) {
        nnm_check_record(1, file, line, call);
        return 1;
    }
    failf(file, line, "%s returned %s: %s", call, nnm_status_str(s), nnm_last_error());
    return 0;
}
#define NNM_OK_(call) nnm_ok((call), __FILE__, __LINE__, #call)

/* --- the device under test -------------------------------------------------- */

/* What the checks run on: the CUDA runtime, the CUDA driver, or the host.
 * Every call returns 0 or the device's error code. */
typedef struct backend {
    const char *name;      /* for the output */
    const char *copy_name; /* the copy that writes and reads patterns */
    const char *raw_name;  /* the synchronous alloc+free pair timed */
    const char *async_name;
    uint32_t device_type; /* for the registry */
    uint32_t missing_type, missing_id; /* a device nnmem must not find */
    int device_memory;    /* not host memory: mem_info and the device's own OOM */
    nnm_device_allocator *allocator;
    int (*copy_in)(void *dst, const void *src, size_t n, void *stream);
    int (*copy_out)(void *dst, const void *src, size_t n, void *stream);
    int (*stream_new)(void **out);
    int (*stream_sync)(void *stream);
    int (*stream_free)(void *stream);
    int (*sync_all)(void);
    int (*raw_alloc)(void **out, size_t n);
    int (*raw_free)(void *p);
    /* NULL: no stream-ordered allocator. */
    int (*async_alloc)(void **out, size_t n, void *stream);
    int (*async_free)(void *p, void *stream);
    /* Bytes in use in the device's stream-ordered memory pool; NULL: the
     * device cannot tell. */
    int (*pool_used)(uint64_t *out);
    const char *(*error_text)(int code);
} backend;

static backend dev;

/* A device call that must succeed; on failure, the device's text. */
static int dev_ok(int code, const char *file, int line, const char *call) {
    if (code == 0) {
        nnm_check_record(1, file, line, call);
        return 1;
    }
    failf(file, line, "%s failed: error %d: %s", call, code, dev.error_text(code));
    return 0;
}
#define DEV_OK(call) dev_ok((call), __FILE__, __LINE__, #call)

/* Copies a symbol's address into a function pointer: ISO C has no cast
 * between object and function pointers; POSIX makes them the same size. */
static int symbol(void *lib, const char *name, void *fn, size_t fn_size) {
    void *p = dlsym(lib, name);
    if (p == NULL || fn_size != sizeof p) return 0;
    memcpy(fn, &p, sizeof p);
    return 1;
}
#define SYMBOL(lib, name, field) symbol((lib), (name), (void *)&(field), sizeof(field))

/* Appends to a fixed buffer, cutting what does not fit. */
static void append(char *buf, size_t len, const char *format, ...) {
    size_t used = strlen(buf);
    va_list args;
    if (used + 1 >= len) return;
    va_start(args, format);
    vsnprintf(buf + used, len - used, format, args);
    va_end(args);
}

/* --- the CUDA runtime ------------------------------------------------------- */

#define CUDA_MEMCPY_HOST_TO_DEVICE 1
#define CUDA_MEMCPY_DEVICE_TO_HOST 2
#define CUDA_ATTR_CC_MAJOR 75           /* cudaDevAttrComputeCapabilityMajor */
#define CUDA_ATTR_CC_MINOR 76           /* cudaDevAttrComputeCapabilityMinor */
#define CUDA_ATTR_MEMORY_POOLS 115      /* cudaDevAttrMemoryPoolsSupported */
#define CUDA_POOL_ATTR_USED_CURRENT 7   /* cudaMemPoolAttrUsedMemCurrent (a uint64_t) */

/* The names nnmem tries, in its order, so that both load the same file. */
static const char *const RUNTIME_NAMES[3] = {"libcudart.so", "libcudart.so.12", "libcudart.so.11.0"};

/* cudaError_t is an int; cudaStream_t and cudaMemPool_t are pointers. */
static struct runtime {
    const char *library;
    int (*get_device_count)(int *count);
    int (*set_device)(int device);
    const char *(*get_error_string)(int error);
    int (*memcpy_sync)(void *dst, const void *src, size_t n, int kind);
    int (*memcpy_async)(void *dst, const void *src, size_t n, int kind, void *stream);
    int (*stream_create)(void **stream);
    int (*stream_synchronize)(void *stream);
    int (*stream_destroy)(void *stream);
    int (*device_synchronize)(void);
    int (*malloc_sync)(void **p, size_t n);
    int (*free_sync)(void *p);
    /* Optional. */
    int (*malloc_async)(void **p, size_t n, void *stream);
    int (*free_async)(void *p, void *stream);
    int (*runtime_get_version)(int *version);
    int (*driver_get_version)(int *version);
    int (*device_get_attribute)(int *value, int attribute, int device);
    int (*get_device_properties)(void *properties, int device);
    int (*device_get_mem_pool)(void **pool, int device);
    int (*mem_pool_get_attribute)(void *pool, int attribute, void *value);
} rt;

/* Loads the runtime; 0 with each name's failure in `errors` when none loads. */
static int runtime_load(char *errors, size_t errors_len) {
    int i;
    for (i = 0; i < 3; ++i) {
        void *lib = dlopen(RUNTIME_NAMES[i], RTLD_NOW | RTLD_LOCAL);
        if (lib == NULL) {
            const char *e = dlerror();
            append(errors, errors_len, "%s%s", errors[0] ? "; " : "", e ? e : RUNTIME_NAMES[i]);
            continue;
        }
        if (!SYMBOL(lib, "cudaGetDeviceCount", rt.get_device_count) || !SYMBOL(lib, "cudaSetDevice", rt.set_device) ||
            !SYMBOL(lib, "cudaGetErrorString", rt.get_error_string) || !SYMBOL(lib, "cudaMemcpy", rt.memcpy_sync) ||
            !SYMBOL(lib, "cudaMemcpyAsync", rt.memcpy_async) || !SYMBOL(lib, "cudaStreamCreate", rt.stream_create) ||
            !SYMBOL(lib, "cudaStreamSynchronize", rt.stream_synchronize) ||
            !SYMBOL(lib, "cudaStreamDestroy", rt.stream_destroy) ||
            !SYMBOL(lib, "cudaDeviceSynchronize", rt.device_synchronize) ||
            !SYMBOL(lib, "cudaMalloc", rt.malloc_sync) || !SYMBOL(lib, "cudaFree", rt.free_sync)) {
            append(errors, errors_len, "%s%s lacks an entry point this check needs", errors[0] ? "; " : "",
                   RUNTIME_NAMES[i]);
            continue; /* never closed: a runtime may not be unloadable */
        }
        if (!SYMBOL(lib, "cudaMallocAsync", rt.malloc_async) || !SYMBOL(lib, "cudaFreeAsync", rt.free_async)) {
            rt.malloc_async = NULL;
            rt.free_async = NULL;
        }
        SYMBOL(lib, "cudaRuntimeGetVersion", rt.runtime_get_version);
        SYMBOL(lib, "cudaDriverGetVersion", rt.driver_get_version);
        SYMBOL(lib, "cudaDeviceGetAttribute", rt.device_get_attribute);
        if (!SYMBOL(lib, "cudaGetDeviceProperties_v2", rt.get_device_properties)) {
            SYMBOL(lib, "cudaGetDeviceProperties", rt.get_device_properties);
        }
        if (!SYMBOL(lib, "cudaDeviceGetMemPool", rt.device_get_mem_pool) ||
            !SYMBOL(lib, "cudaMemPoolGetAttribute", rt.mem_pool_get_attribute)) {
            rt.device_get_mem_pool = NULL;
        }
        rt.library = RUNTIME_NAMES[i];
        return 1;
    }
    return 0;
}

static const char *rt_error_text(int code) {
    const char *s = rt.get_error_string(code);
    return s ? s : "(no text)";
}

/* On a stream: the copy in stream order, then a wait for it (the block may
 * come from cudaMallocAsync on that stream). */
static int rt_copy(void *dst, const void *src, size_t n, int kind, void *stream) {
    int e;
    if (stream == NULL) return rt.memcpy_sync(dst, src, n, kind);
    e = rt.memcpy_async(dst, src, n, kind, stream);
    return e != 0 ? e : rt.stream_synchronize(stream);
}
static int rt_copy_in(void *dst, const void *src, size_t n, void *stream) {
    return rt_copy(dst, src, n, CUDA_MEMCPY_HOST_TO_DEVICE, stream);
}
static int rt_copy_out(void *dst, const void *src, size_t n, void *stream) {
    return rt_copy(dst, src, n, CUDA_MEMCPY_DEVICE_TO_HOST, stream);
}
static int rt_stream_new(void **out) { return rt.stream_create(out); }
static int rt_stream_sync(void *s) { return rt.stream_synchronize(s); }
static int rt_stream_free(void *s) { return rt.stream_destroy(s); }
static int rt_sync_all(void) { return rt.device_synchronize(); }
static int rt_raw_alloc(void **out, size_t n) { return rt.malloc_sync(out, n); }
static int rt_raw_free(void *p) { return rt.free_sync(p); }
static int rt_async_alloc(void **out, size_t n, void *s) { return rt.malloc_async(out, n, s); }
static int rt_async_free(void *p, void *s) { return rt.free_async(p, s); }
static int rt_pool_used(uint64_t *out) {
    void *pool = NULL;
    int e = rt.device_get_mem_pool(&pool, 0);
    return e != 0 ? e : rt.mem_pool_get_attribute(pool, CUDA_POOL_ATTR_USED_CURRENT, out);
}

/* Device 0's name, compute capability and versions, as far as the runtime
 * tells them. */
static void runtime_describe(int count) {
    int runtime = 0, driver = 0, major = -1, minor = -1, pools = -1;
    char name[256] = "?";
    if (rt.runtime_get_version) rt.runtime_get_version(&runtime);
    if (rt.driver_get_version) rt.driver_get_version(&driver);
    if (rt.device_get_attribute) {
        rt.device_get_attribute(&major, CUDA_ATTR_CC_MAJOR, 0);
        rt.device_get_attribute(&minor, CUDA_ATTR_CC_MINOR, 0);
        rt.device_get_attribute(&pools, CUDA_ATTR_MEMORY_POOLS, 0);
    }
    if (rt.get_device_properties) {
        /* cudaDeviceProp begins with char name[256]; the struct is about
         * 1 KiB in CUDA 12: 16 KiB leaves room for later versions. */
        char *props = (char *)calloc(16384, 1);
        if (props != NULL && rt.get_device_properties(props, 0) == 0) {
            memcpy(name, props, sizeof name - 1);
            name[sizeof name - 1] = '\0';
        }
        free(props);
    }
    printf("gpu-check: CUDA runtime %s (runtime version %d, driver version %d), %d device(s)\n", rt.library, runtime,
           driver, count);
    printf("gpu-check: device 0: %s, compute capability %d.%d, stream-ordered memory pools supported: %d, "
           "cudaMallocAsync %s\n",
           name, major, minor, pools, rt.malloc_async ? "present (nnmem uses it on streams)"
                                                      : "absent (nnmem uses cudaMalloc on every stream)");
}

/* --- the CUDA driver (no runtime) ----------------------------------------- */

typedef unsigned long long cu_deviceptr; /* CUdeviceptr on 64-bit */

static struct driver {
    int device;
    int (*init)(unsigned flags);
    int (*device_get_count)(int *count);
    int (*device_get)(int *device, int ordinal);
    int (*primary_ctx_retain)(void **ctx, int device);
    int (*ctx_set_current)(void *ctx);
    int (*get_error_string)(int error, const char **text);
    int (*memcpy_htod)(cu_deviceptr dst, const void *src, size_t n);
    int (*memcpy_dtoh)(void *dst, cu_deviceptr src, size_t n);
    int (*memcpy_htod_async)(cu_deviceptr dst, const void *src, size_t n, void *stream);
    int (*memcpy_dtoh_async)(void *dst, cu_deviceptr src, size_t n, void *stream);
    int (*stream_create)(void **stream, unsigned flags);
    int (*stream_synchronize)(void *stream);
    int (*stream_destroy)(void *stream);
    int (*ctx_synchronize)(void);
    int (*mem_alloc)(cu_deviceptr *p, size_t n);
    int (*mem_free)(cu_deviceptr p);
    /* Optional. */
    int (*mem_alloc_async)(cu_deviceptr *p, size_t n, void *stream);
    int (*mem_free_async)(cu_deviceptr p, void *stream);
    int (*driver_get_version)(int *version);
    int (*device_get_name)(char *name, int len, int device);
    int (*device_get_attribute)(int *value, int attribute, int device);
    int (*device_get_mem_pool)(void **pool, int device);
    int (*mem_pool_get_attribute)(void *pool, int attribute, void *value);
} drv;

/* Loads libcuda.so.1, initialises it and makes device 0's primary context
 * current; writes the device count. 0 with the reason in `why`. */
static int driver_load(int *count, char *why, size_t why_len) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), *ctx = NULL;
    int e;
    *count = 0;
    if (lib == NULL) {
        const char *d = dlerror();
        append(why, why_len, "no CUDA driver either (%s)", d ? d : "libcuda.so.1");
        return 0;
    }
    if (!SYMBOL(lib, "cuInit", drv.init) || !SYMBOL(lib, "cuDeviceGetCount", drv.device_get_count) ||
        !SYMBOL(lib, "cuDeviceGet", drv.device_get) ||
        !SYMBOL(lib, "cuDevicePrimaryCtxRetain", drv.primary_ctx_retain) ||
        !SYMBOL(lib, "cuCtxSetCurrent", drv.ctx_set_current) ||
        !SYMBOL(lib, "cuGetErrorString", drv.get_error_string) ||
        !SYMBOL(lib, "cuMemcpyHtoD_v2", drv.memcpy_htod) || !SYMBOL(lib, "cuMemcpyDtoH_v2", drv.memcpy_dtoh) ||
        !SYMBOL(lib, "cuMemcpyHtoDAsync_v2", drv.memcpy_htod_async) ||
        !SYMBOL(lib, "cuMemcpyDtoHAsync_v2", drv.memcpy_dtoh_async) ||
        !SYMBOL(lib, "cuStreamCreate", drv.stream_create) ||
        !SYMBOL(lib, "cuStreamSynchronize", drv.stream_synchronize) ||
        !SYMBOL(lib, "cuStreamDestroy_v2", drv.stream_destroy) ||
        !SYMBOL(lib, "cuCtxSynchronize", drv.ctx_synchronize) || !SYMBOL(lib, "cuMemAlloc_v2", drv.mem_alloc) ||
        !SYMBOL(lib, "cuMemFree_v2", drv.mem_free)) {
        append(why, why_len, "libcuda.so.1 lacks an entry point this check needs");
        return 0;
    }
    if (!SYMBOL(lib, "cuMemAllocAsync", drv.mem_alloc_async) || !SYMBOL(lib, "cuMemFreeAsync", drv.mem_free_async)) {
        drv.mem_alloc_async = NULL;
        drv.mem_free_async = NULL;
    }
    SYMBOL(lib, "cuDriverGetVersion", drv.driver_get_version);
    SYMBOL(lib, "cuDeviceGetName", drv.device_get_name);
    SYMBOL(lib, "cuDeviceGetAttribute", drv.device_get_attribute);
    if (!SYMBOL(lib, "cuDeviceGetMemPool", drv.device_get_mem_pool) ||
        !SYMBOL(lib, "cuMemPoolGetAttribute", drv.mem_pool_get_attribute)) {
        drv.device_get_mem_pool = NULL;
    }
    if ((e = drv.init(0)) != 0 || (e = drv.device_get_count(count)) != 0) {
        append(why, why_len, "libcuda.so.1: cuInit or cuDeviceGetCount failed with CUDA error %d", e);
        *count = 0;
        return 0;
    }
    if (*count == 0) {
        append(why, why_len, "libcuda.so.1 sees no device");
        return 0;
    }
    if ((e = drv.device_get(&drv.device, 0)) != 0 || (e = drv.primary_ctx_retain(&ctx, drv.device)) != 0 ||
        (e = drv.ctx_set_current(ctx)) != 0) {
        append(why, why_len, "libcuda.so.1: device 0's primary context failed with CUDA error %d", e);
        return 0;
    }
    return 1;
}

static const char *drv_error_text(int code) {
    const char *s = NULL;
    return drv.get_error_string(code, &s) == 0 && s != NULL ? s : "(no text)";
}

static cu_deviceptr dptr(const void *p) { return (cu_deviceptr)(uintptr_t)p; }

static int drv_copy_in(void *dst, const void *src, size_t n, void *stream) {
    int e;
    if (stream == NULL) return drv.memcpy_htod(dptr(dst), src, n);
    e = drv.memcpy_htod_async(dptr(dst), src, n, stream);
    return e != 0 ? e : drv.stream_synchronize(stream);
}
static int drv_copy_out(void *dst, const void *src, size_t n, void *stream) {
    int e;
    if (stream == NULL) return drv.memcpy_dtoh(dst, dptr(src), n);
    e = drv.memcpy_dtoh_async(dst, dptr(src), n, stream);
    return e != 0 ? e : drv.stream_synchronize(stream);
}
static int drv_stream_new(void **out) { return drv.stream_create(out, 0); }
static int drv_stream_sync(void *s) { return drv.stream_synchronize(s); }
static int drv_stream_free(void *s) { return drv.stream_destroy(s); }
static int drv_sync_all(void) { return drv.ctx_synchronize(); }
static int drv_raw_alloc(void **out, size_t n) {
    cu_deviceptr p = 0;
    int e = drv.mem_alloc(&p, n);
    *out = (void *)(uintptr_t)p;
    return e;
}
static int drv_raw_free(void *p) { return drv.mem_free(dptr(p)); }
static int drv_async_alloc(void **out, size_t n, void *s) {
    cu_deviceptr p = 0;
    int e = drv.mem_alloc_async(&p, n, s);
    *out = (void *)(uintptr_t)p;
    return e;
}
static int drv_async_free(void *p, void *s) { return drv.mem_free_async(dptr(p), s); }
static int drv_pool_used(uint64_t *out) {
    void *pool = NULL;
    int e = drv.device_get_mem_pool(&pool, drv.device);
    return e != 0 ? e : drv.mem_pool_get_attribute(pool, CUDA_POOL_ATTR_USED_CURRENT, out);
}

static void driver_describe(int count) {
    int version = 0, major = -1, minor = -1, pools = -1;
    char name[256] = "?";
    if (drv.driver_get_version) drv.driver_get_version(&version);
    if (drv.device_get_name) drv.device_get_name(name, (int)sizeof name, drv.device);
    if (drv.device_get_attribute) { /* CU_DEVICE_ATTRIBUTE_*: the runtime's numbers */
        drv.device_get_attribute(&major, CUDA_ATTR_CC_MAJOR, drv.device);
        drv.device_get_attribute(&minor, CUDA_ATTR_CC_MINOR, drv.device);
        drv.device_get_attribute(&pools, CUDA_ATTR_MEMORY_POOLS, drv.device);
    }
    printf("gpu-check: CUDA driver libcuda.so.1 without a runtime (driver version %d), %d device(s)\n", version,
           count);
    printf("gpu-check: device 0: %s, compute capability %d.%d, stream-ordered memory pools supported: %d\n", name,
           major, minor, pools);
}

/* --- the host --------------------------------------------------------------- */

/* Made-up stream handles: distinct addresses nnmem only compares. */
static char host_streams[16];
static size_t host_streams_used;

static int host_copy(void *dst, const void *src, size_t n, void *stream) {
    (void)stream;
    memcpy(dst, src, n);
    return 0;
}
static int host_stream_new(void **out) {
    if (host_streams_used == sizeof host_streams) return 1;
    *out = &host_streams[host_streams_used++];
    return 0;
}
static int host_stream_nop(void *s) {
    (void)s;
    return 0;
}
static int host_sync_all(void) { return 0; }
static int host_raw_alloc(void **out, size_t n) {
    *out = malloc(n);
    return *out == NULL;
}
static int host_raw_free(void *p) {
    free(p);
    return 0;
}
static const char *host_error_text(int code) { return code == 1 ? "out of host resources" : "host error"; }

/* --- patterns ------------------------------------------------------------------ */

/* splitmix64's finaliser: neighbouring seeds and offsets give unrelated words. */
static uint64_t mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static void fill(unsigned char *buf, size_t n, uint64_t seed) {
    size_t i;
    for (i = 0; i < n; i += 8) {
        uint64_t w = mix(seed * 0x9e3779b97f4a7c15ULL + i + 1);
        memcpy(buf + i, &w, n - i < 8 ? n - i : 8);
    }
}

/* Writes `seed`'s pattern to `n` device bytes at `p` (in `stream`'s order). */
static int put(void *p, size_t n, uint64_t seed, void *stream, const char *what) {
    unsigned char *h = (unsigned char *)malloc(n);
    int e;
    if (h == NULL) {
        FAILF("%s: no host memory for a %zu B pattern", what, n);
        return 0;
    }
    fill(h, n, seed);
    e = dev.copy_in(p, h, n, stream);
    free(h);
    if (e != 0) {
        FAILF("%s: %s of %zu B to %p failed: error %d: %s", what, dev.copy_name, n, p, e, dev.error_text(e));
        return 0;
    }
    PASS();
    return 1;
}

/* Reads `n` device bytes at `p` back and compares them with `seed`'s pattern. */
static int check(void *p, size_t n, uint64_t seed, void *stream, const char *what) {
    unsigned char *got = (unsigned char *)malloc(n), *want = (unsigned char *)malloc(n);
    size_t i, first = n, wrong = 0;
    int e, ok = 0;
    if (got == NULL || want == NULL) {
        FAILF("%s: no host memory to read %zu B back", what, n);
    } else if ((e = dev.copy_out(got, p, n, stream)) != 0) {
        FAILF("%s: %s of %zu B from %p failed: error %d: %s", what, dev.copy_name, n, p, e, dev.error_text(e));
    } else {
        fill(want, n, seed);
        for (i = 0; i < n; ++i) {
            if (got[i] != want[i]) {
                if (wrong++ == 0) first = i;
            }
        }
        if (wrong == 0) {
            PASS();
            ok = 1;
        } else {
            FAILF("%s: %zu of %zu B at %p are not the pattern written (first at byte %zu: 0x%02x, expected 0x%02x)",
                  what, wrong, n, p, first, got[first], want[first]);
        }
    }
    free(got);
    free(want);
    return ok;
}

static int overlaps(const void *a, size_t a_len, const void *b, size_t b_len) {
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y + b_len && y < x + a_len;
}

/* --- pools: every strategy ---------------------------------------------------- */

static int quick; /* --quick */
static int force_driver; /* --driver */

static const uint32_t STRATEGIES[4] = {NNM_STRATEGY_NO_POOL, NNM_STRATEGY_PAGE_UNIT, NNM_STRATEGY_CACHING,
                                       NNM_STRATEGY_REPLAY};

#define ROUND_BLOCKS 7
static const size_t ROUND_SIZES[ROUND_BLOCKS] = {1, 100, 256, 4096, 65537, (1u << 20) + 3, 16u << 20};
static const size_t ROUND_ALIGNMENTS[ROUND_BLOCKS] = {0, 0, 512, 4096, 0, 65536, 0};

static nnm_pool_stats stats_of(const nnm_pool *pool) {
    nnm_pool_stats s;
    memset(&s, 0, sizeof s);
    NNM_OK_(nnm_pool_get_stats(pool, &s));
    return s;
}

/* A block from the pool, aligned as asked, with `seed`'s pattern written
 * to it; NULL (a failure recorded) when the pool refused. A block whose
 * copy failed is still returned, to be given back. */
static void *pool_block(nnm_pool *pool, size_t size, size_t alignment, void *stream, uint64_t seed,
                        const char *what) {
    void *p = NULL;
    size_t align = alignment ? alignment : 256;
    nnm_status s = nnm_pool_alloc(pool, size, alignment, stream, &p);
    if (s != NNM_OK) {
        FAILF("%s: nnm_pool_alloc(%zu B, alignment %zu, stream %p) returned %s: %s", what, size, alignment, stream,
              nnm_status_str(s), nnm_last_error());
        return NULL;
    }
    if (p == NULL || (uintptr_t)p % align != 0) {
        FAILF("%s: nnm_pool_alloc(%zu B, alignment %zu) gave %p, not aligned to %zu", what, size, alignment, p, align);
    }
    if (p != NULL) put(p, size, seed, stream, what);
    return p;
}

static void give_back(nnm_pool *pool, void *p, const char *what) {
    nnm_status s;
    if (p == NULL) return;
    s = nnm_pool_dealloc(pool, p);
    if (s == NNM_OK) {
        PASS();
    } else {
        FAILF("%s: nnm_pool_dealloc(%p) returned %s: %s", what, p, nnm_status_str(s), nnm_last_error());
    }
}

static uint64_t round_seed(uint32_t strategy, int iteration, size_t block, int again) {
    return ((uint64_t)strategy << 32) | ((uint64_t)iteration << 16) | ((uint64_t)block << 4) | (uint64_t)again;
}

/* Three iterations of the same sequence: all blocks out, checked together,
 * every other one freed and taken again, checked again, all freed. */
static void test_strategy(uint32_t strategy) {
    const char *name = nnm_strategy_name(strategy);
    const size_t blocks = quick ? ROUND_BLOCKS - 1 : ROUND_BLOCKS;
    nnm_pool *pool = NULL;
    nnm_pool_stats s;
    uint64_t first_device_allocs = 0, per_iteration = 0, released = 0;
    int it;
    size_t i;
    char what[160];

    printf("== pools: %s\n", name);
    if (!NNM_OK_(nnm_pool_new(dev.allocator, strategy, NULL, &pool))) return;
    CHECK(strcmp(nnm_pool_strategy_name(pool), name) == 0);
    for (it = 0; it < 3; ++it) {
        void *p[ROUND_BLOCKS];
        memset(p, 0, sizeof p);
        for (i = 0; i < blocks; ++i) {
            snprintf(what, sizeof what, "%s, iteration %d, block %zu (%zu B)", name, it + 1, i, ROUND_SIZES[i]);
            p[i] = pool_block(pool, ROUND_SIZES[i], ROUND_ALIGNMENTS[i], NULL, round_seed(strategy, it, i, 0), what);
        }
        for (i = 0; i < blocks; ++i) {
            snprintf(what, sizeof what, "%s, iteration %d, block %zu (%zu B), read back with all out", name, it + 1, i,
                     ROUND_SIZES[i]);
            if (p[i] != NULL) check(p[i], ROUND_SIZES[i], round_seed(strategy, it, i, 0), NULL, what);
        }
        /* Every other block freed and taken again, while the rest stay out. */
        for (i = 1; i < blocks; i += 2) {
            snprintf(what, sizeof what, "%s, iteration %d, block %zu (%zu B), retaken", name, it + 1, i,
                     ROUND_SIZES[i]);
            give_back(pool, p[i], what);
            p[i] = pool_block(pool, ROUND_SIZES[i], ROUND_ALIGNMENTS[i], NULL, round_seed(strategy, it, i, 1), what);
        }
        for (i = 0; i < blocks; ++i) {
            snprintf(what, sizeof what, "%s, iteration %d, block %zu (%zu B), read back after the retakes", name,
                     it + 1, i, ROUND_SIZES[i]);
            if (p[i] != NULL) check(p[i], ROUND_SIZES[i], round_seed(strategy, it, i, i % 2 == 1), NULL, what);
        }
        for (i = blocks; i-- > 0;) give_back(pool, p[i], name);
        NNM_OK_(nnm_pool_end_iteration(pool));
        s = stats_of(pool);
        if (s.active_blocks != 0 || s.allocated_bytes != 0) {
            FAILF("%s, iteration %d: %llu blocks (%llu B) still out after every block was given back", name, it + 1,
                  (unsigned long long)s.active_blocks, (unsigned long long)s.allocated_bytes);
        }
        if (it == 0) {
            first_device_allocs = s.device_allocs;
            per_iteration = s.allocs;
        } else if (strategy == NNM_STRATEGY_NO_POOL) {
            CHECK(s.device_allocs == s.allocs && s.device_frees == s.device_allocs);
        } else if (s.device_allocs != first_device_allocs) {
            FAILF("%s, iteration %d went to the device: %llu device allocations after the first iteration, %llu now",
                  name, it + 1, (unsigned long long)first_device_allocs, (unsigned long long)s.device_allocs);
        } else {
            PASS();
        }
    }
    s = stats_of(pool);
    printf("   %llu allocations, %llu device allocations, reserved peak %llu B\n", (unsigned long long)s.allocs,
           (unsigned long long)s.device_allocs, (unsigned long long)s.reserved_peak);
    if (strategy == NNM_STRATEGY_REPLAY) {
        /* Iterations 2 and 3 repeat the recorded one exactly. */
        if (s.served_from_plan != 2 * per_iteration || s.plan_departures != 0 || s.plan_bytes == 0) {
            FAILF("replay: %llu allocations served from the plan (expected %llu), %llu departures, plan %llu B",
                  (unsigned long long)s.served_from_plan, (unsigned long long)(2 * per_iteration),
                  (unsigned long long)s.plan_departures, (unsigned long long)s.plan_bytes);
        } else {
            PASS();
        }
    }
    NNM_OK_(nnm_pool_release_cached(pool, &released));
    s = stats_of(pool);
    if (s.reserved_bytes != 0 || s.device_frees != s.device_allocs) {
        FAILF("%s: after nnm_pool_release_cached (%llu B released), %llu B reserved, %llu device allocations, %llu "
              "device frees",
              name, (unsigned long long)released, (unsigned long long)s.reserved_bytes,
              (unsigned long long)s.device_allocs, (unsigned long long)s.device_frees);
    } else {
        PASS();
    }
    nnm_pool_free(pool);
}

/* The pool's limit, and (on a device) the device's own out-of-memory: both
 * OUT_OF_MEMORY with a message, and the pool serves on afterwards. */
static void test_out_of_memory(uint32_t strategy, uint64_t device_total) {
    const char *name = nnm_strategy_name(strategy);
    nnm_pool_options options;
    nnm_pool *pool = NULL;
    void *p = NULL;
    char what[160];
    NNM_OK_(nnm_pool_options_default(&options));
    /* Room for one 2 MiB small segment of the caching strategy. */
    options.limit_bytes = 4u << 20;
    if (!NNM_OK_(nnm_pool_new(dev.allocator, strategy, &options, &pool))) return;
    CHECK_REFUSES(nnm_pool_alloc(pool, 8u << 20, 0, NULL, &p), NNM_OUT_OF_MEMORY, "limit");
    CHECK(p == NULL);
    if (device_total > 0 && device_total * 2 > device_total) {
        nnm_pool *big = NULL;
        if (NNM_OK_(nnm_pool_new(dev.allocator, strategy, NULL, &big))) {
            /* More than the device has: the device refuses, not the pool. */
            CHECK_FAILS(nnm_pool_alloc(big, (size_t)(device_total * 2), 0, NULL, &p), NNM_OUT_OF_MEMORY);
            printf("   %s: %llu B on a device of %llu B: %s\n", name, (unsigned long long)(device_total * 2),
                   (unsigned long long)device_total, nnm_last_error());
            CHECK(p == NULL);
            snprintf(what, sizeof what, "%s: a block after the device's out-of-memory", name);
            p = pool_block(big, 4096, 0, NULL, 77, what);
            if (p != NULL) check(p, 4096, 77, NULL, what);
            give_back(big, p, what);
            nnm_pool_free(big);
        }
    }
    snprintf(what, sizeof what, "%s: a block under the limit after a refusal", name);
    p = pool_block(pool, 4096, 0, NULL, 78, what);
    if (p != NULL) check(p, 4096, 78, NULL, what);
    give_back(pool, p, what);
    nnm_pool_free(pool);
}

/* --- the stream-ordered path ------------------------------------------------- */

/* Bytes in use in the device's stream-ordered pool, once every stream is
 * done; 0 and `*known` 0 when the device cannot tell. */
static uint64_t async_pool_used(int *known) {
    uint64_t used = 0;
    *known = 0;
    if (dev.pool_used == NULL || !DEV_OK(dev.sync_all())) return 0;
    if (DEV_OK(dev.pool_used(&used))) *known = 1;
    return used;
}

static void test_streams(uint32_t strategy) {
    /* A large size: every strategy gives it its own device block (the
     * caching strategy rounds large blocks to 2 MiB and does not pack them),
     * so that "the idle memory of stream A" is exactly one block. */
    const size_t X = 4u << 20;
    const char *name = nnm_strategy_name(strategy);
    const int pooled = strategy != NNM_STRATEGY_NO_POOL;
    void *a = NULL, *b = NULL, *p, *q, *r, *r1, *r2;
    nnm_pool *pool = NULL;
    nnm_pool_stats s1, s2, s3, s4;
    uint64_t used0, used1 = 0;
    int known;
    char what[200];

    printf("== streams: %s\n", name);
    if (!DEV_OK(dev.stream_new(&a))) return;
    if (!DEV_OK(dev.stream_new(&b))) {
        DEV_OK(dev.stream_free(a));
        return;
    }
    if (!NNM_OK_(nnm_pool_new(dev.allocator, strategy, NULL, &pool))) {
        DEV_OK(dev.stream_free(a));
        DEV_OK(dev.stream_free(b));
        return;
    }
    used0 = async_pool_used(&known);
    snprintf(what, sizeof what, "%s: a first block on stream A", name);
    p = pool_block(pool, X, 0, a, 1, what);
    s1 = stats_of(pool);
    if (p != NULL && known && DEV_OK(dev.stream_sync(a)) && DEV_OK(dev.pool_used(&used1))) {
        if (used1 < used0 + X) {
            FAILF("%s: %zu B on stream A did not come from the stream-ordered allocator: the device's memory pool "
                  "had %llu B in use before, %llu B after (%s expected)",
                  what, X, (unsigned long long)used0, (unsigned long long)used1, dev.async_name);
        } else {
            PASS();
        }
    }
    if (p != NULL) check(p, X, 1, a, what);
    give_back(pool, p, what);

    snprintf(what, sizeof what, "%s: a block on stream A after one was freed on A", name);
    q = pool_block(pool, X, 0, a, 2, what);
    s2 = stats_of(pool);
    if (s2.device_allocs != s1.device_allocs + (pooled ? 0 : 1)) {
        FAILF("%s: %llu device allocations before, %llu after (%s)", what, (unsigned long long)s1.device_allocs,
              (unsigned long long)s2.device_allocs, pooled ? "the idle block of stream A expected" : "no-pool: one");
    } else {
        PASS();
    }
    if (q != NULL) check(q, X, 2, a, what);
    give_back(pool, q, what);

    snprintf(what, sizeof what, "%s: a block on stream B before nnm_pool_streams_synchronized", name);
    r = pool_block(pool, X, 0, b, 3, what);
    s3 = stats_of(pool);
    if (s3.device_allocs != s2.device_allocs + 1) {
        FAILF("%s: %llu device allocations before, %llu after (stream A's idle block is not B's: one expected)", what,
              (unsigned long long)s2.device_allocs, (unsigned long long)s3.device_allocs);
    } else {
        PASS();
    }
    /* No-pool gives A's block back to CUDA, whose own allocator may reuse
     * it safely; a pool must not. */
    if (pooled && r != NULL && q != NULL && overlaps(r, X, q, X)) {
        FAILF("%s: got %p, inside the block freed on stream A (%p) before the streams were synchronised", what, r, q);
    }
    if (r != NULL) check(r, X, 3, b, what);
    give_back(pool, r, what);

    DEV_OK(dev.stream_sync(a));
    DEV_OK(dev.stream_sync(b));
    NNM_OK_(nnm_pool_streams_synchronized(pool));
    snprintf(what, sizeof what, "%s: two blocks on stream B after nnm_pool_streams_synchronized", name);
    r1 = pool_block(pool, X, 0, b, 4, what);
    r2 = pool_block(pool, X, 0, b, 5, what);
    s4 = stats_of(pool);
    if (s4.device_allocs != s3.device_allocs + (pooled ? 0 : 2)) {
        FAILF("%s: %llu device allocations before, %llu after (%s)", what, (unsigned long long)s3.device_allocs,
              (unsigned long long)s4.device_allocs,
              pooled ? "the idle blocks of A and B expected" : "no-pool: two");
    } else {
        PASS();
    }
    if (r1 != NULL && r2 != NULL && overlaps(r1, X, r2, X)) FAILF("%s: %p and %p overlap", what, r1, r2);
    if (r1 != NULL) check(r1, X, 4, b, what);
    if (r2 != NULL) check(r2, X, 5, b, what);
    give_back(pool, r1, what);
    give_back(pool, r2, what);
    DEV_OK(dev.stream_sync(b));
    printf("   %llu device allocations for 5 blocks on 2 streams\n", (unsigned long long)stats_of(pool).device_allocs);
    /* The pool frees its device blocks on the streams they came from:
     * before those streams go. */
    nnm_pool_free(pool);
    DEV_OK(dev.sync_all());
    DEV_OK(dev.stream_free(a));
    DEV_OK(dev.stream_free(b));
}

/* --- the allocator alone ----------------------------------------------------- */

static uint64_t test_allocator(void) {
    uint64_t free_bytes = 0, total_bytes = 0;
    void *p = NULL, *q = NULL, *s = NULL;
    printf("== allocator: %s\n", nnm_device_allocator_name(dev.allocator));
    if (dev.device_memory) {
        if (NNM_OK_(nnm_device_allocator_mem_info(dev.allocator, &free_bytes, &total_bytes))) {
            CHECK(total_bytes > 0 && free_bytes <= total_bytes);
            printf("   mem_info: %llu MiB free of %llu MiB\n", (unsigned long long)(free_bytes >> 20),
                   (unsigned long long)(total_bytes >> 20));
        }
    } else {
        CHECK_FAILS(nnm_device_allocator_mem_info(dev.allocator, &free_bytes, &total_bytes), NNM_NOT_FOUND);
    }
    if (NNM_OK_(nnm_device_allocator_alloc(dev.allocator, 1u << 20, 4096, NULL, &p))) {
        CHECK((uintptr_t)p % 4096 == 0);
        if (put(p, 1u << 20, 11, NULL, "allocator: 1 MiB")) check(p, 1u << 20, 11, NULL, "allocator: 1 MiB");
        NNM_OK_(nnm_device_allocator_dealloc(dev.allocator, p));
    }
    /* Above cudaMalloc's 256 B: over-allocated and shifted by nnmem. */
    if (NNM_OK_(nnm_device_allocator_alloc(dev.allocator, 5000, 1u << 16, NULL, &q))) {
        CHECK((uintptr_t)q % (1u << 16) == 0);
        if (put(q, 5000, 12, NULL, "allocator: 5000 B at 64 KiB")) check(q, 5000, 12, NULL, "allocator: 5000 B");
        NNM_OK_(nnm_device_allocator_dealloc(dev.allocator, q));
    }
    if (DEV_OK(dev.stream_new(&s))) {
        if (NNM_OK_(nnm_device_allocator_alloc(dev.allocator, 3u << 20, 256, s, &p))) {
            if (put(p, 3u << 20, 13, s, "allocator: 3 MiB on a stream")) {
                check(p, 3u << 20, 13, s, "allocator: 3 MiB on a stream");
            }
            NNM_OK_(nnm_device_allocator_dealloc(dev.allocator, p));
        }
        DEV_OK(dev.stream_sync(s));
        DEV_OK(dev.stream_free(s));
    }
    return total_bytes;
}

/* --- the registry -------------------------------------------------------------- */

static void *registry_block(size_t size, void *stream, uint64_t seed, const char *what) {
    void *p = NULL;
    nnm_status s = nnm_device_alloc(dev.device_type, 0, size, 0, stream, &p);
    if (s != NNM_OK) {
        FAILF("%s: nnm_device_alloc(%zu B) returned %s: %s", what, size, nnm_status_str(s), nnm_last_error());
        return NULL;
    }
    put(p, size, seed, stream, what);
    return p;
}

static void registry_give_back(void *p, const char *what) {
    nnm_status s;
    if (p == NULL) return;
    s = nnm_device_dealloc(dev.device_type, 0, p);
    if (s == NNM_OK) {
        PASS();
    } else {
        FAILF("%s: nnm_device_dealloc(%p) returned %s: %s", what, p, nnm_status_str(s), nnm_last_error());
    }
}

static void test_registry(void) {
    const uint32_t type = dev.device_type;
    nnm_pool *handle = NULL, *current = NULL;
    void *p, *q, *r = NULL, *stream = NULL;
    int i;
    char what[160];

    printf("== registry: device type %u, id 0\n", type);
    /* The default pool (page-unit), made on first use. */
    p = registry_block(1u << 20, NULL, 21, "registry: 1 MiB from the default pool");
    if (NNM_OK_(nnm_device_get_pool(type, 0, &handle))) {
        CHECK(strcmp(nnm_pool_strategy_name(handle), "page-unit") == 0);
    }
    /* Switch with p out: the old pool retires and still takes p back. */
    NNM_OK_(nnm_device_init_pool(type, 0, "caching", NULL));
    q = registry_block(3000, NULL, 22, "registry: 3000 B from the caching pool");
    if (p != NULL) check(p, 1u << 20, 21, NULL, "registry: the retired pool's block, after the switch");
    if (q != NULL) check(q, 3000, 22, NULL, "registry: the caching pool's block");
    registry_give_back(p, "registry: the retired pool's block");
    if (p != NULL) CHECK_FAILS(nnm_device_dealloc(type, 0, p), NNM_INVALID_ARGUMENT);
    if (handle != NULL) CHECK(strcmp(nnm_pool_strategy_name(handle), "page-unit") == 0);
    nnm_pool_free(handle);
    if (NNM_OK_(nnm_device_get_pool(type, 0, &current))) {
        CHECK(strcmp(nnm_pool_strategy_name(current), "caching") == 0);
        nnm_pool_free(current);
    }
    /* A block on a stream through the registry. */
    if (DEV_OK(dev.stream_new(&stream))) {
        r = registry_block(64u << 10, stream, 23, "registry: 64 KiB on a stream");
        if (r != NULL) check(r, 64u << 10, 23, stream, "registry: 64 KiB on a stream");
        registry_give_back(r, "registry: 64 KiB on a stream");
        DEV_OK(dev.stream_sync(stream));
    }
    registry_give_back(q, "registry: the caching pool's block");
    /* Every strategy by name. */
    for (i = 0; i < 4; ++i) {
        const char *name = nnm_strategy_name(STRATEGIES[i]);
        snprintf(what, sizeof what, "registry: 100 KiB from a %s pool", name);
        NNM_OK_(nnm_device_init_pool(type, 0, name, NULL));
        p = registry_block(100u << 10, NULL, 30 + (uint64_t)i, what);
        if (p != NULL) check(p, 100u << 10, 30 + (uint64_t)i, NULL, what);
        registry_give_back(p, what);
    }
    /* Removed: every device block back (on the stream it came from, which
     * must still exist). */
    NNM_OK_(nnm_device_remove_pool(type, 0));
    CHECK_FAILS(nnm_device_remove_pool(type, 0), NNM_NOT_FOUND);
    if (stream != NULL) {
        DEV_OK(dev.sync_all());
        DEV_OK(dev.stream_free(stream));
    }
    /* A device that does not exist: NOT_FOUND, saying why. */
    p = NULL;
    CHECK_FAILS(nnm_device_alloc(dev.missing_type, dev.missing_id, 64, 0, NULL, &p), NNM_NOT_FOUND);
    printf("   device type %u, id %u: %s\n", dev.missing_type, dev.missing_id, nnm_last_error());
    CHECK(p == NULL);
}

/* --- workbuffers ------------------------------------------------------------------ */

#define W_ID 100
#define OPS 5
#define NO_ALIAS NNM_EXEC_NO_ALIAS

/* input -> matmul(X, W; immutable 512 B; mutable 3000 B and 64 B) -> reshape
 * (an alias) -> act (mutable 700 B) -> head(Z, X); X and OUT pinned. */
typedef struct op_spec {
    const char *name;
    nnm_exec_tensor inputs[2];
    size_t input_count;
    nnm_exec_output output;
    uint64_t immutable[1];
    size_t immutable_count;
    uint64_t mutable_sizes[2];
    size_t mutable_count;
} op_spec;

static const op_spec MODEL[OPS] = {
    {"input", {{0, 0}, {0, 0}}, 0, {1, 1000, NO_ALIAS}, {0}, 0, {0, 0}, 0},
    {"matmul", {{1, 1000}, {W_ID, 4096}}, 2, {2, 2048, NO_ALIAS}, {512}, 1, {3000, 64}, 2},
    {"reshape", {{2, 2048}, {0, 0}}, 1, {3, 2048, 2}, {0}, 0, {0, 0}, 0},
    {"act", {{3, 2048}, {0, 0}}, 1, {4, 1500, NO_ALIAS}, {0}, 0, {700, 0}, 1},
    {"head", {{4, 1500}, {1, 1000}}, 2, {5, 256, NO_ALIAS}, {0}, 0, {0, 0}, 0},
};

/* What a buffer holds: an alias holds what it aliases. */
static uint64_t content_of(uint64_t id) {
    int k;
    for (k = 0; k < OPS; ++k) {
        if (MODEL[k].output.id == id && MODEL[k].output.alias_of != NO_ALIAS) {
            return content_of(MODEL[k].output.alias_of);
        }
    }
    return id;
}

static uint64_t request_seed(int request, uint64_t id) { return 1000003ULL * (uint64_t)(request + 1) + id; }
#define W_SEED 555
#define IMMUTABLE_SEED 777

static int init_calls;

/* The immutable workbuffers get their bytes on the device, as a GPU
 * plugin's init copies its kernels' tables. */
static int init_immutable(void *ctx, size_t op, void *const *buffers, size_t count) {
    size_t j;
    (void)ctx;
    ++init_calls;
    if (op >= OPS || count != MODEL[op].immutable_count) return -2;
    for (j = 0; j < count; ++j) {
        if (!put(buffers[j], (size_t)MODEL[op].immutable[j], IMMUTABLE_SEED + j, NULL, "init: immutable workbuffer"))
            return -1;
    }
    return 0;
}

static int inside(const void *p, uint64_t size, const nnm_exec_block *b) {
    uintptr_t x = (uintptr_t)p, base = (uintptr_t)b->base;
    return x >= base && x - base <= b->size && size <= b->size - (x - base);
}

/* One operator of one request, as its kernel would see it: the inputs hold
 * what their producers wrote; its outputs and workbuffers are written; the
 * inputs and outputs still hold theirs after the workbuffers were written. */
static void run_op(const nnm_exec_compiled *compiled, int op, int request, const nnm_exec_block *block,
                   void *weights, void **immutable, void **pinned) {
    const op_spec *m = &MODEL[op];
    void *ptr[8];
    size_t count = 0, expected = m->input_count + 1 + m->immutable_count + m->mutable_count, j;
    int pass;
    char what[200];
    nnm_status s = nnm_exec_resolve(compiled, (size_t)op, block, ptr, 8, &count);
    if (s != NNM_OK) {
        FAILF("request %d, operator %d '%s': nnm_exec_resolve returned %s: %s", request, op, m->name,
              nnm_status_str(s), nnm_last_error());
        return;
    }
    if (count != expected) {
        FAILF("request %d, operator %d '%s': %zu pointers, expected %zu", request, op, m->name, count, expected);
        return;
    }
    for (pass = 0; pass < 2; ++pass) {
        for (j = 0; j < m->input_count; ++j) {
            const nnm_exec_tensor *in = &m->inputs[j];
            snprintf(what, sizeof what, "request %d, operator %d '%s', input %llu%s", request, op, m->name,
                     (unsigned long long)in->id, pass ? ", after the workbuffers" : "");
            if (in->id == W_ID) {
                if (ptr[j] != weights) FAILF("%s: %p, not the constant's address %p", what, ptr[j], weights);
                check(ptr[j], (size_t)in->size, W_SEED, NULL, what);
            } else if (!inside(ptr[j], in->size, block)) {
                FAILF("%s: %p (%llu B) is outside the request's block", what, ptr[j], (unsigned long long)in->size);
            } else {
                check(ptr[j], (size_t)in->size, request_seed(request, content_of(in->id)), NULL, what);
            }
        }
        j = m->input_count;
        snprintf(what, sizeof what, "request %d, operator %d '%s', output %llu", request, op, m->name,
                 (unsigned long long)m->output.id);
        if (m->output.alias_of != NO_ALIAS) {
            if (pass == 0 && ptr[j] != ptr[0]) FAILF("%s: %p, not its input's address %p", what, ptr[j], ptr[0]);
        } else if (!inside(ptr[j], m->output.size, block)) {
            FAILF("%s: %p (%llu B) is outside the request's block", what, ptr[j],
                  (unsigned long long)m->output.size);
        } else if (pass == 0) {
            put(ptr[j], (size_t)m->output.size, request_seed(request, m->output.id), NULL, what);
            if (m->output.id == 1 || m->output.id == 5) pinned[m->output.id == 5] = ptr[j];
        } else {
            check(ptr[j], (size_t)m->output.size, request_seed(request, m->output.id), NULL, what);
        }
        for (j = 0; j < m->immutable_count && pass == 0; ++j) {
            void *p = ptr[m->input_count + 1 + j];
            snprintf(what, sizeof what, "request %d, operator %d '%s', immutable workbuffer %zu", request, op,
                     m->name, j);
            if (immutable[op] == NULL) immutable[op] = p;
            if (p != immutable[op]) FAILF("%s: %p, another request had it at %p", what, p, immutable[op]);
            if (inside(p, m->immutable[j], block)) FAILF("%s: %p is inside the request's own block", what, p);
            check(p, (size_t)m->immutable[j], IMMUTABLE_SEED + j, NULL, what);
        }
        for (j = 0; j < m->mutable_count; ++j) {
            void *p = ptr[m->input_count + 1 + m->immutable_count + j];
            uint64_t seed = request_seed(request, 1000000 + (uint64_t)op * 10 + j);
            snprintf(what, sizeof what, "request %d, operator %d '%s', mutable workbuffer %zu", request, op, m->name,
                     j);
            if (!inside(p, m->mutable_sizes[j], block)) {
                FAILF("%s: %p (%llu B) is outside the request's block", what, p,
                      (unsigned long long)m->mutable_sizes[j]);
            } else if (pass == 0) {
                put(p, (size_t)m->mutable_sizes[j], seed, NULL, what);
            } else {
                check(p, (size_t)m->mutable_sizes[j], seed, NULL, what);
            }
        }
    }
}

static void test_workbuffers(void) {
    nnm_exec_model *model = NULL;
    nnm_exec_compiled *compiled = NULL;
    nnm_exec_pool *pool = NULL;
    nnm_exec_info info;
    nnm_exec_pool_info pool_info;
    nnm_exec_block blocks[2], third;
    void *weights = NULL, *immutable[OPS], *pinned[2][2];
    int k, r, leased = 0;
    char what[120];

    printf("== workbuffers\n");
    memset(immutable, 0, sizeof immutable);
    memset(pinned, 0, sizeof pinned);
    if (!NNM_OK_(nnm_exec_model_new(&model))) return;
    /* Without bytes: a device the CPU cannot write gets them at its address. */
    NNM_OK_(nnm_exec_model_add_constant(model, W_ID, 4096, NULL));
    for (k = 0; k < OPS; ++k) {
        nnm_exec_operator_desc d;
        memset(&d, 0, sizeof d);
        d.name = MODEL[k].name;
        d.inputs = MODEL[k].input_count ? MODEL[k].inputs : NULL;
        d.input_count = MODEL[k].input_count;
        d.outputs = &MODEL[k].output;
        d.output_count = 1;
        d.immutable_sizes = MODEL[k].immutable_count ? MODEL[k].immutable : NULL;
        d.immutable_count = MODEL[k].immutable_count;
        d.mutable_sizes = MODEL[k].mutable_count ? MODEL[k].mutable_sizes : NULL;
        d.mutable_count = MODEL[k].mutable_count;
        NNM_OK_(nnm_exec_model_add_operator(model, &d, NULL));
    }
    NNM_OK_(nnm_exec_model_pin(model, 1));
    NNM_OK_(nnm_exec_model_pin(model, 5));
    if (!NNM_OK_(nnm_exec_compile(model, NULL, dev.allocator, init_immutable, NULL, &compiled))) goto done;
    CHECK(init_calls == 1);
    if (NNM_OK_(nnm_exec_compiled_info(compiled, &info))) {
        printf("   constants %llu B, immutable %llu B, mutable block %llu B (lower bound %llu B)\n",
               (unsigned long long)info.constants_bytes, (unsigned long long)info.immutable_bytes,
               (unsigned long long)info.block_bytes, (unsigned long long)info.mutable_lower_bound);
    }
    if (NNM_OK_(nnm_exec_compiled_constant(compiled, W_ID, &weights))) {
        put(weights, 4096, W_SEED, NULL, "the constant W, written at its address");
    }
    if (!NNM_OK_(nnm_exec_pool_new(compiled, dev.allocator, 2, &pool))) goto done;
    if (NNM_OK_(nnm_exec_pool_get_info(pool, &pool_info))) CHECK(pool_info.blocks == 2 && pool_info.partial == 0);
    for (r = 0; r < 2; ++r) {
        if (!NNM_OK_(nnm_exec_pool_acquire(pool, 0, NULL, &blocks[r]))) goto done;
        ++leased;
    }
    CHECK_FAILS(nnm_exec_pool_acquire(pool, 0, NULL, &third), NNM_BUSY);
    if (overlaps(blocks[0].base, (size_t)blocks[0].size, blocks[1].base, (size_t)blocks[1].size)) {
        FAILF("the two requests' blocks overlap: %p and %p, %llu B each", blocks[0].base, blocks[1].base,
              (unsigned long long)blocks[0].size);
    }
    /* Side by side: each operator of request 0, then of request 1. */
    for (k = 0; k < OPS; ++k) {
        for (r = 0; r < 2; ++r) run_op(compiled, k, r, &blocks[r], weights, immutable, pinned[r]);
    }
    for (r = 0; r < 2; ++r) {
        snprintf(what, sizeof what, "request %d: the pinned input X at the end", r);
        if (pinned[r][0] != NULL) check(pinned[r][0], 1000, request_seed(r, 1), NULL, what);
        snprintf(what, sizeof what, "request %d: the pinned output at the end", r);
        if (pinned[r][1] != NULL) check(pinned[r][1], 256, request_seed(r, 5), NULL, what);
    }
done:
    for (r = 0; r < leased; ++r) NNM_OK_(nnm_exec_pool_release(pool, &blocks[r]));
    if (leased == 2 && NNM_OK_(nnm_exec_pool_acquire(pool, 0, NULL, &third))) {
        NNM_OK_(nnm_exec_pool_release(pool, &third));
    }
    nnm_exec_pool_free(pool);
    nnm_exec_compiled_free(compiled);
    nnm_exec_model_free(model);
}

/* --- PyTorch's pluggable pair ------------------------------------------------ */

/* The types torch.cuda.memory.CUDAPluggableAllocator calls them with
 * (ssize_t is ptrdiff_t on Linux; cudaStream_t a pointer). */
typedef void *(*torch_alloc_fn)(ptrdiff_t size, int device, void *stream);
typedef void (*torch_free_fn)(void *ptr, ptrdiff_t size, int device, void *stream);

/* nnm_torch_alloc/nnm_torch_free on device 0 (with --host, the host
 * allocator registered as CUDA device 0): every round size, on the default
 * stream and on a stream, a pattern in each block, the strategy
 * NNMEM_TORCH_STRATEGY names, and the failures (NULL with the reason). */
static void test_torch(uint64_t device_total) {
    torch_alloc_fn alloc = nnm_torch_alloc;
    torch_free_fn release = nnm_torch_free;
    const char *want = getenv("NNMEM_TORCH_STRATEGY");
    void *stream = NULL, *blocks[ROUND_BLOCKS], *p;
    nnm_pool *pool = NULL;
    int s, i;
    printf("== PyTorch pair: nnm_torch_alloc, nnm_torch_free\n");
    if (want == NULL || want[0] == '\0') want = "caching";
    if (dev.device_type != NNM_DEVICE_TYPE_CUDA) {
        NNM_OK_(nnm_device_register_allocator(NNM_DEVICE_TYPE_CUDA, 0, dev.allocator));
    }
    /* The registry's pool of the device is then the one the pair makes. */
    (void)nnm_device_remove_pool(NNM_DEVICE_TYPE_CUDA, 0);
    if (!NNM_OK_(nnm_torch_init(0))) return;
    if (NNM_OK_(nnm_device_get_pool(NNM_DEVICE_TYPE_CUDA, 0, &pool))) {
        printf("   strategy %s (NNMEM_TORCH_STRATEGY)\n", nnm_pool_strategy_name(pool));
        CHECK(strcmp(nnm_pool_strategy_name(pool), want) == 0);
        nnm_pool_free(pool);
    }
    if (!DEV_OK(dev.stream_new(&stream))) return;
    for (s = 0; s < 2; ++s) {
        void *on = s ? stream : NULL;
        for (i = 0; i < ROUND_BLOCKS; ++i) {
            size_t n = ROUND_SIZES[i];
            blocks[i] = NULL;
            if (quick && n > (2u << 20)) continue;
            blocks[i] = alloc((ptrdiff_t)n, 0, on);
            if (blocks[i] == NULL) {
                FAILF("nnm_torch_alloc(%zu, 0, %p) returned NULL: %s", n, on, nnm_last_error());
                continue;
            }
            CHECK((uintptr_t)blocks[i] % 256 == 0);
            put(blocks[i], n, 7000 + (uint64_t)(s * 100 + i), on, "torch block");
        }
        for (i = 0; i < ROUND_BLOCKS; ++i) {
            if (blocks[i] == NULL) continue;
            check(blocks[i], ROUND_SIZES[i], 7000 + (uint64_t)(s * 100 + i), on, "torch block");
            release(blocks[i], (ptrdiff_t)ROUND_SIZES[i], 0, on);
        }
    }
    CHECK(alloc(0, 0, NULL) == NULL);
    p = alloc(-1, 0, NULL);
    CHECK(p == NULL && strstr(nnm_last_error(), "a size is 0 or more") != NULL);
    if (dev.device_memory && device_total > 0) {
        p = alloc((ptrdiff_t)(device_total * 2), 0, NULL);
        CHECK(p == NULL && strstr(nnm_last_error(), "out of memory") != NULL);
        printf("   %llu B refused: %s\n", (unsigned long long)(device_total * 2), nnm_last_error());
    }
    release(&stream, 8, 0, NULL);
    CHECK(strstr(nnm_last_error(), "handed it out") != NULL);
    NNM_OK_(nnm_torch_end_iteration(0));
    DEV_OK(dev.sync_all());
    NNM_OK_(nnm_device_remove_pool(NNM_DEVICE_TYPE_CUDA, 0));
    DEV_OK(dev.stream_free(stream));
}

/* --- timings ------------------------------------------------------------------------ */

#define TIMED_SIZES 4
static const size_t TIMED[TIMED_SIZES] = {64, 4096, 1u << 20, 16u << 20};
#define REPLAY_ITERATION 64 /* pairs per replay iteration, as benches/pool.rs */

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* `count` alloc+free pairs of `size` through the pool; replay: iterations of
 * REPLAY_ITERATION pairs, each ended. Returns the failed calls. */
static size_t pool_pairs(nnm_pool *pool, int replay, size_t size, size_t count) {
    size_t i, failed = 0;
    void *p = NULL;
    for (i = 0; i < count; ++i) {
        p = NULL;
        failed += nnm_pool_alloc(pool, size, 0, NULL, &p) != NNM_OK;
        failed += nnm_pool_dealloc(pool, p) != NNM_OK;
        if (replay && i % REPLAY_ITERATION == REPLAY_ITERATION - 1) failed += nnm_pool_end_iteration(pool) != NNM_OK;
    }
    return failed;
}

static size_t raw_pairs(size_t size, size_t count) {
    size_t i, failed = 0;
    void *p = NULL;
    for (i = 0; i < count; ++i) {
        p = NULL;
        failed += dev.raw_alloc(&p, size) != 0;
        failed += dev.raw_free(p) != 0;
    }
    return failed;
}

/* On one stream, waited for once at the end (inside the time). */
static size_t async_pairs(void *stream, size_t size, size_t count) {
    size_t i, failed = 0;
    void *p = NULL;
    for (i = 0; i < count; ++i) {
        p = NULL;
        failed += dev.async_alloc(&p, size, stream) != 0;
        failed += dev.async_free(p, stream) != 0;
    }
    return failed + (dev.stream_sync(stream) != 0);
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define COLUMNS 6
#define MAX_REPEATS 5

/* Median ns per pair over `repeats` loops of `count` pairs of column
 * `column` (0-3: the strategies; 4: raw; 5: async); a negative value when a
 * call failed (recorded as a failure). */
static double time_pairs(int column, nnm_pool *pool, void *stream, size_t size, size_t count, int repeats) {
    double t[MAX_REPEATS];
    size_t failed = 0;
    int k;
    for (k = 0; k < repeats; ++k) {
        double start = now_ns();
        if (column < 4) {
            failed += pool_pairs(pool, STRATEGIES[column] == NNM_STRATEGY_REPLAY, size, count);
        } else if (column == 4) {
            failed += raw_pairs(size, count);
        } else {
            failed += async_pairs(stream, size, count);
        }
        t[k] = (now_ns() - start) / (double)count;
    }
    if (failed != 0) {
        if (column < 4) {
            FAILF("timing %s at %zu B: %zu calls failed (the last nnmem error: %s)",
                  nnm_strategy_name(STRATEGIES[column]), size, failed, nnm_last_error());
        } else {
            FAILF("timing %s at %zu B: %zu calls failed", column == 4 ? dev.raw_name : dev.async_name, size, failed);
        }
        return -1.0;
    }
    PASS();
    qsort(t, (size_t)repeats, sizeof t[0], compare_doubles);
    return t[repeats / 2];
}

static void print_size(size_t size) {
    if (size >= (1u << 20)) {
        printf("| %zu MiB ", size >> 20);
    } else if (size >= 1024) {
        printf("| %zu KiB ", size >> 10);
    } else {
        printf("| %zu B ", size);
    }
}

static void timings(void) {
    /* Counts, not time, bound the loops; device calls are 100 to 10,000
     * times a cached pair, so they get fewer. Multiples of REPLAY_ITERATION. */
    const size_t pool_count = quick ? 128 : 131072, device_count = quick ? 64 : 512, async_count = quick ? 64 : 4096;
    const int pool_repeats = quick ? 1 : 5, device_repeats = quick ? 1 : 3;
    void *stream = NULL;
    double ns[TIMED_SIZES][COLUMNS];
    int c, z, have_async = dev.async_alloc != NULL && dev.stream_new(&stream) == 0;

    printf("== timings\n");
    for (z = 0; z < TIMED_SIZES; ++z) {
        for (c = 0; c < COLUMNS; ++c) {
            int pooled = c < 4 && STRATEGIES[c] != NNM_STRATEGY_NO_POOL;
            size_t count = pooled ? pool_count : c == 5 ? async_count : device_count;
            nnm_pool *pool = NULL;
            ns[z][c] = -2.0; /* not measured */
            if (c == 5 && !have_async) continue;
            /* Warm: the pool holds the block (replay has planned its
             * iteration: a pool of its own per size), CUDA has its context
             * and its stream-ordered pool. */
            if (c < 4) {
                if (!NNM_OK_(nnm_pool_new(dev.allocator, STRATEGIES[c], NULL, &pool))) continue;
                pool_pairs(pool, STRATEGIES[c] == NNM_STRATEGY_REPLAY, TIMED[z], 2 * REPLAY_ITERATION);
            } else if (c == 4) {
                raw_pairs(TIMED[z], 4);
            } else {
                async_pairs(stream, TIMED[z], 4);
            }
            ns[z][c] = time_pairs(c, pool, stream, TIMED[z], count, pooled ? pool_repeats : device_repeats);
            nnm_pool_free(pool);
        }
    }
    if (stream != NULL) {
        DEV_OK(dev.sync_all());
        DEV_OK(dev.stream_free(stream));
    }

    printf("\nMedian ns per alloc+free pair on %s (%s), one thread; the pools on the default stream (alignment "
           "256 B), warmed, so that only no-pool reaches the device; a replay iteration is %d pairs and "
           "nnm_pool_end_iteration. Loops of %zu pairs (pools, median of %d) and %zu (no-pool, %s; median of %d)",
           nnm_device_allocator_name(dev.allocator), dev.name, REPLAY_ITERATION, pool_count, pool_repeats,
           device_count, dev.raw_name, device_repeats);
    if (have_async) {
        printf("; %s: loops of %zu pairs on one stream, waited for once per loop (median of %d)", dev.async_name,
               async_count, device_repeats);
    }
    printf(".\n\n");
    printf("| size | page-unit | caching | replay | no-pool | %s | %s |\n|---|---|---|---|---|---|---|\n", dev.raw_name,
           dev.async_name ? dev.async_name : "stream-ordered");
    for (z = 0; z < TIMED_SIZES; ++z) {
        static const int order[COLUMNS] = {1, 2, 3, 0, 4, 5};
        print_size(TIMED[z]);
        for (c = 0; c < COLUMNS; ++c) {
            double v = ns[z][order[c]];
            if (v == -2.0) {
                printf("| - ");
            } else if (v < 0) {
                printf("| failed ");
            } else {
                printf("| %.1f ", v);
            }
        }
        printf("|\n");
    }
    printf("\n");
}

/* --- main ---------------------------------------------------------------------------- */

/* No GPU here: nnmem must agree (NOT_FOUND), and there is nothing else to
 * check. */
static int no_gpu(const char *why) {
    nnm_device_allocator *a = NULL;
    nnm_status s;
    printf("gpu-check: no GPU: %s\n", why);
    s = nnm_device_allocator_cuda(0, &a);
    if (s == NNM_OK) {
        FAILF("nnm_device_allocator_cuda(0) succeeded (%s) where this check found no GPU",
              nnm_device_allocator_name(a));
        nnm_device_allocator_free(a);
    } else {
        CHECK(s == NNM_NOT_FOUND && a == NULL);
        printf("gpu-check: nnmem agrees: nnm_device_allocator_cuda(0) returned %s: %s\n", nnm_status_str(s),
               nnm_last_error());
    }
    printf("gpu-check: nothing to check without a GPU\n");
    return nnm_check_report();
}

static void use_host(void) {
    dev.name = "host memory, --host";
    dev.copy_name = "memcpy";
    dev.raw_name = "malloc+free";
    dev.async_name = NULL;
    dev.device_type = NNM_DEVICE_TYPE_HOST;
    dev.missing_type = NNM_DEVICE_TYPE_CUSTOM;
    dev.missing_id = 7;
    dev.device_memory = 0;
    dev.copy_in = host_copy;
    dev.copy_out = host_copy;
    dev.stream_new = host_stream_new;
    dev.stream_sync = host_stream_nop;
    dev.stream_free = host_stream_nop;
    dev.sync_all = host_sync_all;
    dev.raw_alloc = host_raw_alloc;
    dev.raw_free = host_raw_free;
    dev.error_text = host_error_text;
}

static void use_cuda_common(void) {
    dev.device_type = NNM_DEVICE_TYPE_CUDA;
    dev.missing_type = NNM_DEVICE_TYPE_CUDA;
    dev.missing_id = 4096;
    dev.device_memory = 1;
}

static void use_runtime(void) {
    use_cuda_common();
    dev.name = rt.library;
    dev.copy_name = "cudaMemcpy";
    dev.raw_name = "cudaMalloc+cudaFree";
    dev.async_name = rt.malloc_async ? "cudaMallocAsync+cudaFreeAsync" : NULL;
    dev.copy_in = rt_copy_in;
    dev.copy_out = rt_copy_out;
    dev.stream_new = rt_stream_new;
    dev.stream_sync = rt_stream_sync;
    dev.stream_free = rt_stream_free;
    dev.sync_all = rt_sync_all;
    dev.raw_alloc = rt_raw_alloc;
    dev.raw_free = rt_raw_free;
    dev.async_alloc = rt.malloc_async ? rt_async_alloc : NULL;
    dev.async_free = rt.malloc_async ? rt_async_free : NULL;
    dev.pool_used = rt.malloc_async && rt.device_get_mem_pool ? rt_pool_used : NULL;
    dev.error_text = rt_error_text;
}

static void use_driver(void) {
    use_cuda_common();
    dev.name = "libcuda.so.1";
    dev.copy_name = "cuMemcpy";
    dev.raw_name = "cuMemAlloc+cuMemFree";
    dev.async_name = drv.mem_alloc_async ? "cuMemAllocAsync+cuMemFreeAsync" : NULL;
    dev.copy_in = drv_copy_in;
    dev.copy_out = drv_copy_out;
    dev.stream_new = drv_stream_new;
    dev.stream_sync = drv_stream_sync;
    dev.stream_free = drv_stream_free;
    dev.sync_all = drv_sync_all;
    dev.raw_alloc = drv_raw_alloc;
    dev.raw_free = drv_raw_free;
    dev.async_alloc = drv.mem_alloc_async ? drv_async_alloc : NULL;
    dev.async_free = drv.mem_alloc_async ? drv_async_free : NULL;
    dev.pool_used = drv.mem_alloc_async && drv.device_get_mem_pool ? drv_pool_used : NULL;
    dev.error_text = drv_error_text;
}

/* Finds a GPU and nnmem's allocator for it. Returns 1 to run the checks,
 * 0 when there is no GPU (`why` says so), -1 when there is one and nnmem
 * cannot use it (a failure, recorded). */
static int find_gpu(char *why, size_t why_len) {
    int count = 0, e;
    nnm_status s;
    char errors[1024] = "";
    if (!force_driver && runtime_load(errors, sizeof errors)) {
        if ((e = rt.get_device_count(&count)) != 0) {
            append(why, why_len, "%s: cudaGetDeviceCount failed: error %d: %s", rt.library, e, rt_error_text(e));
            return 0;
        }
        if (count <= 0) {
            append(why, why_len, "%s: cudaGetDeviceCount found no device", rt.library);
            return 0;
        }
        if ((e = rt.set_device(0)) != 0) {
            append(why, why_len, "%s: cudaSetDevice(0) failed: error %d: %s", rt.library, e, rt_error_text(e));
            return 0;
        }
        use_runtime();
        runtime_describe(count);
    } else {
        if (force_driver) {
            append(why, why_len, "--driver: ");
        } else {
            append(why, why_len, "no CUDA runtime (tried %s, %s, %s: %s), and ", RUNTIME_NAMES[0], RUNTIME_NAMES[1],
                   RUNTIME_NAMES[2], errors);
        }
        if (!driver_load(&count, why, why_len)) return 0;
        use_driver();
        driver_describe(count);
    }
    s = nnm_device_allocator_cuda(0, &dev.allocator);
    if (s != NNM_OK) {
        FAILF("nnm_device_allocator_cuda(0) returned %s where %s sees %d device(s): %s", nnm_status_str(s), dev.name,
              count, nnm_last_error());
        return -1;
    }
    return 1;
}

int main(int argc, char **argv) {
    int host = 0, i, found;
    uint64_t device_total;
    char why[2048] = "";

    setvbuf(stdout, NULL, _IOLBF, 0); /* in order with the failures on stderr */
    for (i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--host") == 0) {
            host = 1;
        } else if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--driver") == 0) {
            force_driver = 1;
        } else {
            fprintf(stderr, "usage: %s [--host] [--quick] [--driver]\n  --host   run the checks on host memory (no GPU needed)\n"
                            "  --quick  short timing loops, no 16 MiB block\n"
                            "  --driver the CUDA driver API (libcuda.so.1) even where the runtime is installed, for\n"
                            "           nnmem too (NNMEM_CUDA_API=driver)\n", argv[0]);
            return 2;
        }
    }
    /* Before nnmem's first CUDA call: it reads the variable once. */
    if (force_driver && setenv("NNMEM_CUDA_API", "driver", 1) != 0) {
        fprintf(stderr, "gpu-check: setenv failed\n");
        return 2;
    }
    printf("gpu-check: nnmem %s\n", nnm_version());
    if (host) {
        use_host();
        NNM_OK_(nnm_device_allocator_host(&dev.allocator));
    } else {
        found = find_gpu(why, sizeof why);
        if (found == 0) return no_gpu(why);
        if (found < 0) return nnm_check_report();
    }
    if (dev.allocator == NULL) return nnm_check_report();
    printf("gpu-check: checks on %s through nnmem's allocator '%s'\n", dev.name,
           nnm_device_allocator_name(dev.allocator));

    device_total = test_allocator();
    for (i = 0; i < 4; ++i) test_strategy(STRATEGIES[i]);
    printf("== out of memory\n");
    for (i = 0; i < 4; ++i) test_out_of_memory(STRATEGIES[i], dev.device_memory ? device_total : 0);
    for (i = 0; i < 4; ++i) test_streams(STRATEGIES[i]);
    test_registry();
    test_workbuffers();
    test_torch(device_total);
    timings();

    nnm_device_allocator_free(dev.allocator);
    return nnm_check_report();
}
