/*
 * A stand-in for the CUDA runtime (libcudart) and driver (libcuda), for the
 * tests where there is no GPU (c-tests/gpu_check.c, torch_alloc_test.c):
 * "device memory" is host memory, but every call is checked as CUDA would
 * check it, so that the CUDA paths of nnmem and of the tests run end to end.
 *
 * - cudaMalloc/cuMemAlloc align to 256 B (nnmem counts on it) and refuse
 *   more than the 8 GiB device holds with the out-of-memory error (2);
 * - a copy must stay inside one live allocation (the device side) and name
 *   a known direction, else cudaErrorInvalidValue (1);
 * - streams are handles from cudaStreamCreate: any other value (or a
 *   destroyed one) is cudaErrorInvalidResourceHandle (400); memory from
 *   cudaMallocAsync goes back through cudaFreeAsync or cudaFree only;
 * - the runtime's current device is per thread (cudaGetDevice/SetDevice);
 * - the driver wants cuInit first (3) and a current context (201): each
 *   thread has its own context stack (cuCtxPushCurrent/PopCurrent, and
 *   cuCtxSetCurrent replaces its top), each device one primary context,
 *   counted by cuDevicePrimaryCtxRetain/Release;
 * - the stream-ordered pool reports its bytes in use
 *   (cudaMemPoolAttrUsedMemCurrent), as the real one does.
 *
 * Thread-safe (one lock). mock_cuda_count(name) gives how many times the
 * entry point `name` was called, and mock_cuda_count("live") the blocks
 * out, mock_cuda_count("primary_refs") the primary contexts' retain count:
 * the tests check through them which path nnmem took.
 *
 * MOCK_CUDA_DEVICES=N in the environment (0 to 8, default 1): a machine
 * with N devices (0: cudaGetDeviceCount fails with cudaErrorNoDevice, 100).
 *
 * Built with MOCK_CUDA_RUNTIME as libcudart.so.12 (linked under the other
 * names) and with MOCK_CUDA_DRIVER as libcuda.so.1, each exporting only its
 * own API as the real files do, in folders the tests put on
 * LD_LIBRARY_PATH. C11.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DEVICE_BYTES (8ULL << 30)
#define ALIGNMENT 256
#define MAX_LIVE 4096
#define MAX_STREAMS 64
#define MAX_DEVICES 8
#define MAX_PUSHED 16

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

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static live allocations[MAX_LIVE];
static size_t live_count;
static uint64_t used_bytes, async_used_bytes;
static stream streams[MAX_STREAMS];
static size_t streams_made;
static int pool_token; /* the one memory pool's handle is its address */

/* --- call counts ---------------------------------------------------------------- */

#define MAX_NAMES 64
static struct {
    const char *name;
    long calls;
} counts[MAX_NAMES];

/* Counts a call of `name` (a string literal); the lock is held. */
static void counted(const char *name) {
    int i;
    for (i = 0; i < MAX_NAMES && counts[i].name != NULL; ++i) {
        if (strcmp(counts[i].name, name) == 0) break;
    }
    if (i == MAX_NAMES) return;
    counts[i].name = name;
    counts[i].calls++;
}

static long primary_refs[MAX_DEVICES];

long mock_cuda_count(const char *name);
long mock_cuda_count(const char *name) {
    long n = 0;
    int i;
    pthread_mutex_lock(&lock);
    if (strcmp(name, "live") == 0) {
        n = (long)live_count;
    } else if (strcmp(name, "primary_refs") == 0) {
        for (i = 0; i < MAX_DEVICES; ++i) n += primary_refs[i];
    } else {
        for (i = 0; i < MAX_NAMES && counts[i].name != NULL; ++i) {
            if (strcmp(counts[i].name, name) == 0) n = counts[i].calls;
        }
    }
    pthread_mutex_unlock(&lock);
    return n;
}

/* Entry points count themselves and hold the lock: ENTER("name") ... LEAVE(result). */
#define ENTER(name)               \
    pthread_mutex_lock(&lock);    \
    counted(name)
#define LEAVE(result)                 \
    do {                              \
        int leave_result_ = (result); \
        pthread_mutex_unlock(&lock);  \
        return leave_result_;         \
    } while (0)

/* --- the device (the lock is held) ------------------------------------------------ */

static int devices(void) {
    const char *v = getenv("MOCK_CUDA_DEVICES");
    int n = v != NULL ? atoi(v) : 1;
    return n < 0 ? 0 : n > MAX_DEVICES ? MAX_DEVICES : n;
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
    if (value == NULL || device < 0 || device >= devices()) return INVALID_VALUE;
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

static int mem_info(size_t *free_bytes, size_t *total_bytes) {
    if (free_bytes == NULL || total_bytes == NULL) return INVALID_VALUE;
    *free_bytes = (size_t)(DEVICE_BYTES - used_bytes);
    *total_bytes = (size_t)DEVICE_BYTES;
    return OK;
}

#ifndef MOCK_CUDA_DRIVER
/* --- the runtime ---------------------------------------------------------------- */

static _Thread_local int current_device;

int cudaGetDeviceCount(int *count) {
    ENTER("cudaGetDeviceCount");
    if (count == NULL) LEAVE(INVALID_VALUE);
    *count = devices();
    LEAVE(*count == 0 ? NO_DEVICE : OK);
}
int cudaGetDevice(int *device) {
    ENTER("cudaGetDevice");
    if (device == NULL) LEAVE(INVALID_VALUE);
    *device = current_device;
    LEAVE(OK);
}
int cudaSetDevice(int device) {
    ENTER("cudaSetDevice");
    if (device < 0 || device >= devices()) LEAVE(INVALID_DEVICE);
    current_device = device;
    LEAVE(OK);
}
const char *cudaGetErrorString(int error) { return error_text(error); }
int cudaRuntimeGetVersion(int *v) { return v ? (*v = 12000, OK) : INVALID_VALUE; }
int cudaDriverGetVersion(int *v) { return v ? (*v = 12000, OK) : INVALID_VALUE; }
int cudaDeviceGetAttribute(int *value, int attr, int device) {
    ENTER("cudaDeviceGetAttribute");
    LEAVE(attribute(value, attr, device));
}
int cudaGetDeviceProperties_v2(void *props, int device) {
    if (props == NULL || device != 0) return INVALID_VALUE;
    strcpy((char *)props, "nnmem mock GPU");
    return OK;
}
int cudaMalloc(void **p, size_t n) {
    ENTER("cudaMalloc");
    LEAVE(mock_alloc(p, n, 0));
}
int cudaFree(void *p) {
    ENTER("cudaFree");
    LEAVE(mock_free(p, 0));
}
int cudaMallocAsync(void **p, size_t n, void *s) {
    ENTER("cudaMallocAsync");
    LEAVE(stream_ok(s) ? mock_alloc(p, n, 1) : INVALID_HANDLE);
}
int cudaFreeAsync(void *p, void *s) {
    ENTER("cudaFreeAsync");
    LEAVE(stream_ok(s) ? mock_free(p, 1) : INVALID_HANDLE);
}
int cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
    ENTER("cudaMemGetInfo");
    LEAVE(mem_info(free_bytes, total_bytes));
}
int cudaMemcpy(void *dst, const void *src, size_t n, int kind) {
    ENTER("cudaMemcpy");
    LEAVE(mock_copy(dst, src, n, kind));
}
int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *s) {
    ENTER("cudaMemcpyAsync");
    LEAVE(stream_ok(s) ? mock_copy(dst, src, n, kind) : INVALID_HANDLE);
}
int cudaStreamCreate(void **s) {
    ENTER("cudaStreamCreate");
    LEAVE(mock_stream_create(s));
}
int cudaStreamSynchronize(void *s) {
    ENTER("cudaStreamSynchronize");
    LEAVE(stream_ok(s) ? OK : INVALID_HANDLE);
}
int cudaStreamDestroy(void *s) {
    ENTER("cudaStreamDestroy");
    LEAVE(mock_stream_destroy(s));
}
int cudaDeviceSynchronize(void) { return OK; }
int cudaDeviceGetMemPool(void **pool, int device) {
    if (pool == NULL || device != current_device) return INVALID_VALUE;
    *pool = &pool_token;
    return OK;
}
int cudaDeviceGetDefaultMemPool(void **pool, int device) { return cudaDeviceGetMemPool(pool, device); }
int cudaMemPoolGetAttribute(void *pool, int attr, void *value) {
    ENTER("cudaMemPoolGetAttribute");
    LEAVE(pool_attribute(pool, attr, value));
}
#endif /* !MOCK_CUDA_DRIVER */

#ifndef MOCK_CUDA_RUNTIME
/* --- the driver ------------------------------------------------------------------- */

typedef unsigned long long deviceptr;

static int initialised;
static int contexts[MAX_DEVICES]; /* device d's primary context is &contexts[d] */
static _Thread_local void *pushed[MAX_PUSHED];
static _Thread_local int depth;

static void *current_context(void) { return depth > 0 ? pushed[depth - 1] : NULL; }
static int is_context(void *ctx) {
    int *c = (int *)ctx;
    return c >= contexts && c < contexts + MAX_DEVICES && primary_refs[c - contexts] > 0;
}
static int ready(void) {
    return !initialised ? NOT_INITIALIZED : !is_context(current_context()) ? INVALID_CONTEXT : OK;
}
static void *ptr(deviceptr d) { return (void *)(uintptr_t)d; }

int cuInit(unsigned flags) {
    ENTER("cuInit");
    if (flags != 0) LEAVE(INVALID_VALUE);
    initialised = 1;
    LEAVE(devices() == 0 ? NO_DEVICE : OK);
}
int cuDriverGetVersion(int *v) { return v ? (*v = 12000, OK) : INVALID_VALUE; }
int cuDeviceGetCount(int *count) {
    ENTER("cuDeviceGetCount");
    if (!initialised) LEAVE(NOT_INITIALIZED);
    if (count == NULL) LEAVE(INVALID_VALUE);
    *count = devices();
    LEAVE(OK);
}
int cuDeviceGet(int *device, int ordinal) {
    ENTER("cuDeviceGet");
    if (!initialised) LEAVE(NOT_INITIALIZED);
    if (device == NULL) LEAVE(INVALID_VALUE);
    if (ordinal < 0 || ordinal >= devices()) LEAVE(INVALID_DEVICE);
    *device = ordinal;
    LEAVE(OK);
}
int cuDeviceGetName(char *name, int len, int device) {
    if (!initialised) return NOT_INITIALIZED;
    if (name == NULL || len < 16 || device < 0 || device >= devices()) return INVALID_VALUE;
    strcpy(name, "nnmem mock GPU");
    return OK;
}
int cuDeviceGetAttribute(int *value, int attr, int device) {
    ENTER("cuDeviceGetAttribute");
    LEAVE(initialised ? attribute(value, attr, device) : NOT_INITIALIZED);
}
int cuDeviceTotalMem_v2(size_t *bytes, int device) {
    if (!initialised) return NOT_INITIALIZED;
    if (bytes == NULL || device < 0 || device >= devices()) return INVALID_VALUE;
    *bytes = (size_t)DEVICE_BYTES;
    return OK;
}
int cuDevicePrimaryCtxRetain(void **ctx, int device) {
    ENTER("cuDevicePrimaryCtxRetain");
    if (!initialised) LEAVE(NOT_INITIALIZED);
    if (ctx == NULL || device < 0 || device >= devices()) LEAVE(INVALID_VALUE);
    primary_refs[device]++;
    *ctx = &contexts[device];
    LEAVE(OK);
}
int cuDevicePrimaryCtxRelease_v2(int device) {
    ENTER("cuDevicePrimaryCtxRelease_v2");
    if (device < 0 || device >= devices() || primary_refs[device] == 0) LEAVE(INVALID_DEVICE);
    primary_refs[device]--;
    LEAVE(OK);
}
int cuCtxSetCurrent(void *ctx) {
    ENTER("cuCtxSetCurrent");
    if (ctx != NULL && !is_context(ctx)) LEAVE(INVALID_CONTEXT);
    if (depth == 0) depth = 1;
    pushed[depth - 1] = ctx;
    LEAVE(OK);
}
int cuCtxGetCurrent(void **ctx) { return ctx ? (*ctx = current_context(), OK) : INVALID_VALUE; }
int cuCtxPushCurrent_v2(void *ctx) {
    ENTER("cuCtxPushCurrent_v2");
    if (!is_context(ctx)) LEAVE(INVALID_CONTEXT);
    if (depth == MAX_PUSHED) LEAVE(OUT_OF_MEMORY);
    pushed[depth++] = ctx;
    LEAVE(OK);
}
int cuCtxPopCurrent_v2(void **ctx) {
    ENTER("cuCtxPopCurrent_v2");
    if (depth == 0) LEAVE(INVALID_CONTEXT);
    if (ctx != NULL) *ctx = pushed[depth - 1];
    depth--;
    LEAVE(OK);
}
int cuCtxSynchronize(void) {
    ENTER("cuCtxSynchronize");
    LEAVE(ready());
}
int cuGetErrorString(int error, const char **text) { return text ? (*text = error_text(error), OK) : INVALID_VALUE; }
int cuGetErrorName(int error, const char **text) { return cuGetErrorString(error, text); }
int cuMemAlloc_v2(deviceptr *d, size_t n) {
    void *p = NULL;
    int e;
    ENTER("cuMemAlloc_v2");
    e = ready();
    if (e == OK && d == NULL) e = INVALID_VALUE;
    if (e == OK && (e = mock_alloc(&p, n, 0)) == OK) *d = (deviceptr)(uintptr_t)p;
    LEAVE(e);
}
int cuMemFree_v2(deviceptr d) {
    ENTER("cuMemFree_v2");
    LEAVE(ready() != OK ? ready() : mock_free(ptr(d), 0));
}
int cuMemAllocAsync(deviceptr *d, size_t n, void *s) {
    void *p = NULL;
    int e;
    ENTER("cuMemAllocAsync");
    e = ready();
    if (e == OK && (d == NULL || !stream_ok(s))) e = d == NULL ? INVALID_VALUE : INVALID_HANDLE;
    if (e == OK && (e = mock_alloc(&p, n, 1)) == OK) *d = (deviceptr)(uintptr_t)p;
    LEAVE(e);
}
int cuMemFreeAsync(deviceptr d, void *s) {
    int e;
    ENTER("cuMemFreeAsync");
    e = ready();
    LEAVE(e != OK ? e : !stream_ok(s) ? INVALID_HANDLE : mock_free(ptr(d), 1));
}
int cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes) {
    ENTER("cuMemGetInfo_v2");
    LEAVE(ready() != OK ? ready() : mem_info(free_bytes, total_bytes));
}
int cuMemcpyHtoD_v2(deviceptr dst, const void *src, size_t n) {
    ENTER("cuMemcpyHtoD_v2");
    LEAVE(ready() != OK ? ready() : mock_copy(ptr(dst), src, n, 1));
}
int cuMemcpyDtoH_v2(void *dst, deviceptr src, size_t n) {
    ENTER("cuMemcpyDtoH_v2");
    LEAVE(ready() != OK ? ready() : mock_copy(dst, ptr(src), n, 2));
}
int cuMemcpyHtoDAsync_v2(deviceptr dst, const void *src, size_t n, void *s) {
    ENTER("cuMemcpyHtoDAsync_v2");
    LEAVE(ready() != OK ? ready() : !stream_ok(s) ? INVALID_HANDLE : mock_copy(ptr(dst), src, n, 1));
}
int cuMemcpyDtoHAsync_v2(void *dst, deviceptr src, size_t n, void *s) {
    ENTER("cuMemcpyDtoHAsync_v2");
    LEAVE(ready() != OK ? ready() : !stream_ok(s) ? INVALID_HANDLE : mock_copy(dst, ptr(src), n, 2));
}
int cuStreamCreate(void **s, unsigned flags) {
    ENTER("cuStreamCreate");
    LEAVE(ready() != OK ? ready() : flags > 1 ? INVALID_VALUE : mock_stream_create(s));
}
int cuStreamSynchronize(void *s) {
    ENTER("cuStreamSynchronize");
    LEAVE(ready() != OK ? ready() : stream_ok(s) ? OK : INVALID_HANDLE);
}
int cuStreamDestroy_v2(void *s) {
    ENTER("cuStreamDestroy_v2");
    LEAVE(ready() != OK ? ready() : mock_stream_destroy(s));
}
int cuDeviceGetMemPool(void **pool, int device) {
    if (!initialised) return NOT_INITIALIZED;
    if (pool == NULL || device < 0 || device >= devices()) return INVALID_VALUE;
    *pool = &pool_token;
    return OK;
}
int cuDeviceGetDefaultMemPool(void **pool, int device) { return cuDeviceGetMemPool(pool, device); }
int cuMemPoolGetAttribute(void *pool, int attr, void *value) {
    ENTER("cuMemPoolGetAttribute");
    LEAVE(initialised ? pool_attribute(pool, attr, value) : NOT_INITIALIZED);
}
#endif /* !MOCK_CUDA_RUNTIME */
