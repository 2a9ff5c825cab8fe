/*
 * A stand-in for the CUDA runtime (libcudart) and driver (libcuda), for the
 * tests of c-tests/gpu_check.c where there is no GPU: "device memory" is
 * host memory, but every call is checked as CUDA would check it, so that
 * the CUDA paths of nnmem and of the check run end to end.
 *
 * - cudaMalloc/cuMemAlloc align to 256 B (nnmem counts on it) and refuse
 *   more than the 8 GiB device holds with the out-of-memory error (2);
 * - a copy must stay inside one live allocation (the device side) and name
 *   a known direction, else cudaErrorInvalidValue (1);
 * - streams are handles from cudaStreamCreate: any other value (or a
 *   destroyed one) is cudaErrorInvalidResourceHandle (400); memory from
 *   cudaMallocAsync goes back through cudaFreeAsync or cudaFree only;
 * - the driver wants cuInit first (3) and a current context (201);
 * - the stream-ordered pool reports its bytes in use
 *   (cudaMemPoolAttrUsedMemCurrent), as the real one does.
 *
 * MOCK_CUDA_DEVICES=0 in the environment: a machine whose runtime sees no
 * device (cudaGetDeviceCount fails with cudaErrorNoDevice, 100).
 *
 * Built as a shared library named libcudart.so.12 (and linked under the
 * other names) or libcuda.so.1, in folders the tests put on
 * LD_LIBRARY_PATH. Single-threaded, as the check is. C11.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DEVICE_BYTES (8ULL << 30)
#define ALIGNMENT 256
#define MAX_LIVE 4096
#define MAX_STREAMS 64

enum { OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, NOT_INITIALIZED = 3, NO_DEVICE = 100, INVALID_DEVICE = 101,
       INVALID_CONTEXT = 201, INVALID_HANDLE = 400 };

typedef struct live {
    unsigned char *base; /* as handed out, 256-aligned */
    void *raw;           /* as malloc gave it */
    size_t size;
    int async;
} live;

typedef struct stream {
    int alive;
} stream;

static live allocations[MAX_LIVE];
static size_t live_count;
static uint64_t used_bytes, async_used_bytes;
static stream streams[MAX_STREAMS];
static size_t streams_made;
static int pool_token; /* the one memory pool's handle is its address */

static int devices(void) {
    const char *v = getenv("MOCK_CUDA_DEVICES");
    return v != NULL && strcmp(v, "0") == 0 ? 0 : 1;
}

static int stream_ok(void *s) {
    stream *st = (stream *)s;
    return s == NULL || (st >= streams && st < streams + streams_made && st->alive);
}

static int mock_alloc(void **out, size_t size, int async) {
    void *raw;
    if (out == NULL) return INVALID_VALUE;
    if (size > DEVICE_BYTES - used_bytes || live_count == MAX_LIVE) return OUT_OF_MEMORY;
    if (size == 0) {
        *out = NULL;
        return OK;
    }
    raw = malloc(size + ALIGNMENT);
    if (raw == NULL) return OUT_OF_MEMORY;
    allocations[live_count].raw = raw;
    allocations[live_count].base = (unsigned char *)raw + (ALIGNMENT - (uintptr_t)raw % ALIGNMENT);
    allocations[live_count].size = size;
    allocations[live_count].async = async;
    used_bytes += size;
    if (async) async_used_bytes += size;
    *out = allocations[live_count++].base;
    return OK;
}

static int mock_free(void *p, int async) {
    size_t i;
    if (p == NULL) return OK;
    for (i = 0; i < live_count; ++i) {
        if (allocations[i].base == p) {
            if (async && !allocations[i].async) return INVALID_VALUE; /* cudaFreeAsync of cudaMalloc memory */
            used_bytes -= allocations[i].size;
            if (allocations[i].async) async_used_bytes -= allocations[i].size;
            free(allocations[i].raw);
            allocations[i] = allocations[--live_count];
            return OK;
        }
    }
    return INVALID_VALUE;
}

/* Whether [p, p + n) lies in one live allocation. */
static int on_device(const void *p, size_t n) {
    size_t i;
    const unsigned char *c = (const unsigned char *)p;
    for (i = 0; i < live_count; ++i) {
        const live *a = &allocations[i];
        if (c >= a->base && c < a->base + a->size) return n <= a->size - (size_t)(c - a->base);
    }
    return 0;
}

static int mock_copy(void *dst, const void *src, size_t n, int kind) {
    if (dst == NULL || src == NULL) return INVALID_VALUE;
    if (kind == 1 && !on_device(dst, n)) return INVALID_VALUE;
    if (kind == 2 && !on_device(src, n)) return INVALID_VALUE;
    if (kind != 1 && kind != 2) return 21; /* cudaErrorInvalidMemcpyDirection */
    memcpy(dst, src, n);
    return OK;
}

static int mock_stream_create(void **out) {
    if (out == NULL) return INVALID_VALUE;
    if (streams_made == MAX_STREAMS) return OUT_OF_MEMORY;
    streams[streams_made].alive = 1;
    *out = &streams[streams_made++];
    return OK;
}

static int mock_stream_destroy(void *s) {
    if (s == NULL || !stream_ok(s)) return INVALID_HANDLE;
    ((stream *)s)->alive = 0;
    return OK;
}

static const char *error_text(int e) {
    switch (e) {
        case OK: return "no error";
        case INVALID_VALUE: return "invalid argument";
        case OUT_OF_MEMORY: return "out of memory";
        case NOT_INITIALIZED: return "initialization error";
        case NO_DEVICE: return "no CUDA-capable device is detected";
        case INVALID_DEVICE: return "invalid device ordinal";
        case INVALID_CONTEXT: return "invalid device context";
        case INVALID_HANDLE: return "invalid resource handle";
        default: return "unknown error";
    }
}

static int attribute(int *value, int attr, int device) {
    if (value == NULL || device != 0) return INVALID_VALUE;
    *value = attr == 75 ? 9 : attr == 76 ? 0 : attr == 115 ? 1 : 0;
    return OK;
}

static int pool_attribute(void *pool, int attr, void *value) {
    if (pool != &pool_token || value == NULL) return INVALID_VALUE;
    if (attr == 7) { /* cudaMemPoolAttrUsedMemCurrent */
        memcpy(value, &async_used_bytes, sizeof async_used_bytes);
        return OK;
    }
    return INVALID_VALUE;
}

/* --- the runtime ---------------------------------------------------------------- */

static int current_device;

int cudaGetDeviceCount(int *count) {
    if (count == NULL) return INVALID_VALUE;
    *count = devices();
    return *count == 0 ? NO_DEVICE : OK;
}
int cudaSetDevice(int device) {
    if (device < 0 || device >= devices()) return INVALID_DEVICE;
    current_device = device;
    return OK;
}
const char *cudaGetErrorString(int error) { return error_text(error); }
int cudaRuntimeGetVersion(int *v) { return v ? (*v = 12000, OK) : INVALID_VALUE; }
int cudaDriverGetVersion(int *v) { return v ? (*v = 12000, OK) : INVALID_VALUE; }
int cudaDeviceGetAttribute(int *value, int attr, int device) { return attribute(value, attr, device); }
int cudaGetDeviceProperties_v2(void *props, int device) {
    if (props == NULL || device != 0) return INVALID_VALUE;
    strcpy((char *)props, "nnmem mock GPU");
    return OK;
}
int cudaMalloc(void **p, size_t n) { return mock_alloc(p, n, 0); }
int cudaFree(void *p) { return mock_free(p, 0); }
int cudaMallocAsync(void **p, size_t n, void *s) { return stream_ok(s) ? mock_alloc(p, n, 1) : INVALID_HANDLE; }
int cudaFreeAsync(void *p, void *s) { return stream_ok(s) ? mock_free(p, 1) : INVALID_HANDLE; }
int cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
    if (free_bytes == NULL || total_bytes == NULL) return INVALID_VALUE;
    *free_bytes = (size_t)(DEVICE_BYTES - used_bytes);
    *total_bytes = (size_t)DEVICE_BYTES;
    return OK;
}
int cudaMemcpy(void *dst, const void *src, size_t n, int kind) { return mock_copy(dst, src, n, kind); }
int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *s) {
    return stream_ok(s) ? mock_copy(dst, src, n, kind) : INVALID_HANDLE;
}
int cudaStreamCreate(void **s) { return mock_stream_create(s); }
int cudaStreamSynchronize(void *s) { return stream_ok(s) ? OK : INVALID_HANDLE; }
int cudaStreamDestroy(void *s) { return mock_stream_destroy(s); }
int cudaDeviceSynchronize(void) { return OK; }
int cudaDeviceGetMemPool(void **pool, int device) {
    if (pool == NULL || device != current_device) return INVALID_VALUE;
    *pool = &pool_token;
    return OK;
}
int cudaDeviceGetDefaultMemPool(void **pool, int device) { return cudaDeviceGetMemPool(pool, device); }
int cudaMemPoolGetAttribute(void *pool, int attr, void *value) { return pool_attribute(pool, attr, value); }

/* --- the driver ------------------------------------------------------------------- */

typedef unsigned long long deviceptr;

static int initialised;
static int context_token;
static _Thread_local void *current_context;

static int ready(void) {
    return !initialised ? NOT_INITIALIZED : current_context != &context_token ? INVALID_CONTEXT : OK;
}
static void *ptr(deviceptr d) { return (void *)(uintptr_t)d; }

int cuInit(unsigned flags) { return flags == 0 ? (initialised = 1, OK) : INVALID_VALUE; }
int cuDriverGetVersion(int *v) { return v ? (*v = 12000, OK) : INVALID_VALUE; }
int cuDeviceGetCount(int *count) {
    if (!initialised) return NOT_INITIALIZED;
    if (count == NULL) return INVALID_VALUE;
    *count = devices();
    return OK;
}
int cuDeviceGet(int *device, int ordinal) {
    if (!initialised) return NOT_INITIALIZED;
    if (device == NULL) return INVALID_VALUE;
    if (ordinal < 0 || ordinal >= devices()) return INVALID_DEVICE;
    *device = ordinal;
    return OK;
}
int cuDeviceGetName(char *name, int len, int device) {
    if (!initialised) return NOT_INITIALIZED;
    if (name == NULL || len < 16 || device != 0) return INVALID_VALUE;
    strcpy(name, "nnmem mock GPU");
    return OK;
}
int cuDeviceGetAttribute(int *value, int attr, int device) {
    return initialised ? attribute(value, attr, device) : NOT_INITIALIZED;
}
int cuDeviceTotalMem_v2(size_t *bytes, int device) {
    if (!initialised) return NOT_INITIALIZED;
    if (bytes == NULL || device != 0) return INVALID_VALUE;
    *bytes = (size_t)DEVICE_BYTES;
    return OK;
}
int cuDevicePrimaryCtxRetain(void **ctx, int device) {
    if (!initialised) return NOT_INITIALIZED;
    if (ctx == NULL || device != 0) return INVALID_VALUE;
    *ctx = &context_token;
    return OK;
}
int cuDevicePrimaryCtxRelease_v2(int device) { return device == 0 ? OK : INVALID_DEVICE; }
int cuCtxSetCurrent(void *ctx) {
    if (ctx != NULL && ctx != &context_token) return INVALID_CONTEXT;
    current_context = ctx;
    return OK;
}
int cuCtxGetCurrent(void **ctx) { return ctx ? (*ctx = current_context, OK) : INVALID_VALUE; }
int cuCtxPushCurrent_v2(void *ctx) { return cuCtxSetCurrent(ctx); }
int cuCtxPopCurrent_v2(void **ctx) {
    if (ctx != NULL) *ctx = current_context;
    current_context = NULL;
    return OK;
}
int cuCtxSynchronize(void) { return ready(); }
int cuGetErrorString(int error, const char **text) { return text ? (*text = error_text(error), OK) : INVALID_VALUE; }
int cuGetErrorName(int error, const char **text) { return cuGetErrorString(error, text); }
int cuMemAlloc_v2(deviceptr *d, size_t n) {
    void *p = NULL;
    int e = ready();
    if (e == OK && d == NULL) e = INVALID_VALUE;
    if (e == OK && (e = mock_alloc(&p, n, 0)) == OK) *d = (deviceptr)(uintptr_t)p;
    return e;
}
int cuMemFree_v2(deviceptr d) { return ready() != OK ? ready() : mock_free(ptr(d), 0); }
int cuMemAllocAsync(deviceptr *d, size_t n, void *s) {
    void *p = NULL;
    int e = ready();
    if (e == OK && (d == NULL || !stream_ok(s))) e = d == NULL ? INVALID_VALUE : INVALID_HANDLE;
    if (e == OK && (e = mock_alloc(&p, n, 1)) == OK) *d = (deviceptr)(uintptr_t)p;
    return e;
}
int cuMemFreeAsync(deviceptr d, void *s) {
    int e = ready();
    return e != OK ? e : !stream_ok(s) ? INVALID_HANDLE : mock_free(ptr(d), 1);
}
int cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes) {
    return ready() != OK ? ready() : cudaMemGetInfo(free_bytes, total_bytes);
}
int cuMemcpyHtoD_v2(deviceptr dst, const void *src, size_t n) {
    return ready() != OK ? ready() : mock_copy(ptr(dst), src, n, 1);
}
int cuMemcpyDtoH_v2(void *dst, deviceptr src, size_t n) {
    return ready() != OK ? ready() : mock_copy(dst, ptr(src), n, 2);
}
int cuMemcpyHtoDAsync_v2(deviceptr dst, const void *src, size_t n, void *s) {
    return ready() != OK ? ready() : !stream_ok(s) ? INVALID_HANDLE : mock_copy(ptr(dst), src, n, 1);
}
int cuMemcpyDtoHAsync_v2(void *dst, deviceptr src, size_t n, void *s) {
    return ready() != OK ? ready() : !stream_ok(s) ? INVALID_HANDLE : mock_copy(dst, ptr(src), n, 2);
}
int cuStreamCreate(void **s, unsigned flags) {
    return ready() != OK ? ready() : flags > 1 ? INVALID_VALUE : mock_stream_create(s);
}
int cuStreamSynchronize(void *s) { return ready() != OK ? ready() : stream_ok(s) ? OK : INVALID_HANDLE; }
int cuStreamDestroy_v2(void *s) { return ready() != OK ? ready() : mock_stream_destroy(s); }
int cuDeviceGetMemPool(void **pool, int device) {
    if (!initialised) return NOT_INITIALIZED;
    if (pool == NULL || device != 0) return INVALID_VALUE;
    *pool = &pool_token;
    return OK;
}
int cuDeviceGetDefaultMemPool(void **pool, int device) { return cuDeviceGetMemPool(pool, device); }
int cuMemPoolGetAttribute(void *pool, int attr, void *value) {
    return initialised ? pool_attribute(pool, attr, value) : NOT_INITIALIZED;
}
