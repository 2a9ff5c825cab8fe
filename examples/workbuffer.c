/*
 * A runtime executing a small network for parallel infer requests with
 * nnmem's execution memory (nnm_exec_*): describe the operators once,
 * compile (the constants and the immutable workbuffers, which an init
 * callback fills, are built once and shared), make a pool of 2 mutable
 * blocks, and let two threads run inferences: each takes a block, asks for
 * every operator's pointers and calls the operator's kernel with them.
 *
 *   x (8 floats) -> matmul (W, 8x8) -> reshape -> relu -> y
 *
 * matmul's immutable workbuffer holds W transposed (prepared once by init,
 * as a GPU plugin prepares its kernels' tables); its mutable one is the
 * accumulator scratch, alive during its step only.
 *
 * Build, with nnmem installed under /opt/nnmem (other prefixes: see
 * examples/pool.c), with pkg-config:
 *   export PKG_CONFIG_PATH=/opt/nnmem/lib/pkgconfig
 *   cc -std=c11 -pthread workbuffer.c $(pkg-config --cflags --libs nnmem) -Wl,-rpath,/opt/nnmem/lib
 * or without it:
 *   cc -std=c11 -pthread workbuffer.c -I/opt/nnmem/include -L/opt/nnmem/lib -lnnmem -Wl,-rpath,/opt/nnmem/lib
 * With CMake, link nnmem::static and Threads::Threads (README, "Linking
 * from CMake").
 */
#if !defined(_POSIX_C_SOURCE) && !defined(__cplusplus)
#define _POSIX_C_SOURCE 200809L /* pthreads under -std=c11 */
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnmem.h"

#define N 8
#define RUNS 3
#define X 1 /* tensor ids; constants from 100 */
#define MATMUL_OUT 2
#define RESHAPED 3
#define Y 4
#define W 100

static float weights[N * N];

/* init: called once per operator with immutable workbuffers, at compile. */
static int prepare(void *ctx, size_t op, void *const *buffers, size_t count) {
    const float *w = (const float *)ctx;
    float *wt = (float *)buffers[0];
    int i, j;
    if (op != 1 || count != 1) return -1; /* only matmul asks for one */
    for (i = 0; i < N; ++i)
        for (j = 0; j < N; ++j) wt[j * N + i] = w[i * N + j];
    return 0;
}

/* The kernels. Pointers come in nnm_exec_resolve's order: inputs, outputs,
 * immutable workbuffers, mutable workbuffers. */
typedef void (*kernel)(void *const *p, const float *x);

static void k_input(void *const *p, const float *x) { memcpy(p[0], x, N * sizeof(float)); }

static void k_matmul(void *const *p, const float *x) { /* x, W | y | W^T | acc */
    const float *in = (const float *)p[0], *wt = (const float *)p[3];
    float *acc = (float *)p[4];
    int i, j;
    (void)x;
    for (j = 0; j < N; ++j) {
        acc[j] = 0.0f;
        for (i = 0; i < N; ++i) acc[j] += in[i] * wt[j * N + i];
    }
    memcpy(p[2], acc, N * sizeof(float));
}

static void k_reshape(void *const *p, const float *x) { (void)p, (void)x; } /* output is the input */

static void k_relu(void *const *p, const float *x) {
    const float *in = (const float *)p[0];
    float *out = (float *)p[1];
    int i;
    (void)x;
    for (i = 0; i < N; ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}

static const kernel KERNELS[4] = {k_input, k_matmul, k_reshape, k_relu};

typedef struct request {
    const nnm_exec_compiled *compiled;
    nnm_exec_pool *pool;
    int id;
    float y[RUNS][N];
    nnm_status status;
    char error[256]; /* nnm_last_error() is per thread: copied for main */
} request;

static void *run_requests(void *arg) {
    request *r = (request *)arg;
    int run, op;
    for (run = 0; run < RUNS && r->status == NNM_OK; ++run) {
        nnm_exec_block block;
        void *p[5];
        size_t count;
        float x[N];
        int i;
        for (i = 0; i < N; ++i) x[i] = (float)(r->id * 10 + run) - (float)i;
        /* Waits for a free block (no timeout, no cancel token). */
        if ((r->status = nnm_exec_pool_acquire(r->pool, -1, NULL, &block)) != NNM_OK) break;
        for (op = 0; op < 4 && r->status == NNM_OK; ++op) {
            r->status = nnm_exec_resolve(r->compiled, (size_t)op, &block, p, 5, &count);
            if (r->status == NNM_OK) KERNELS[op](p, x);
        }
        /* The pinned output lives for the whole run: read it before release. */
        if (r->status == NNM_OK) r->status = nnm_exec_resolve(r->compiled, 3, &block, p, 5, &count);
        if (r->status == NNM_OK) memcpy(r->y[run], p[1], sizeof r->y[run]);
        nnm_exec_pool_release(r->pool, &block); /* after the kernels are done */
    }
    if (r->status != NNM_OK) snprintf(r->error, sizeof r->error, "%s", nnm_last_error());
    return NULL;
}

int main(void) {
    const nnm_exec_tensor x = {X, N * 4}, w = {W, N * N * 4}, mm = {MATMUL_OUT, N * 4}, rs = {RESHAPED, N * 4};
    const nnm_exec_output x_out = {X, N * 4, NNM_EXEC_NO_ALIAS}, mm_out = {MATMUL_OUT, N * 4, NNM_EXEC_NO_ALIAS},
                          rs_out = {RESHAPED, N * 4, MATMUL_OUT}, y_out = {Y, N * 4, NNM_EXEC_NO_ALIAS};
    const nnm_exec_tensor mm_in[2] = {x, w};
    const uint64_t wt_size = N * N * 4, acc_size = N * 4;
    nnm_exec_operator_desc ops[4];
    nnm_exec_model *model = NULL;
    nnm_exec_compiled *compiled = NULL;
    nnm_exec_pool *pool = NULL;
    request requests[2];
    pthread_t threads[2];
    char *report = NULL;
    size_t len = 0;
    int i, j, t, run, status = 1;
    for (i = 0; i < N * N; ++i) weights[i] = (float)((i * 7) % 5) - 2.0f;
    memset(ops, 0, sizeof ops);
    ops[0].name = "input";
    ops[0].outputs = &x_out;
    ops[0].output_count = 1;
    ops[1].name = "matmul";
    ops[1].inputs = mm_in;
    ops[1].input_count = 2;
    ops[1].outputs = &mm_out;
    ops[1].output_count = 1;
    ops[1].immutable_sizes = &wt_size;
    ops[1].immutable_count = 1;
    ops[1].mutable_sizes = &acc_size;
    ops[1].mutable_count = 1;
    ops[2].name = "reshape";
    ops[2].inputs = &mm;
    ops[2].input_count = 1;
    ops[2].outputs = &rs_out;
    ops[2].output_count = 1;
    ops[3].name = "relu";
    ops[3].inputs = &rs;
    ops[3].input_count = 1;
    ops[3].outputs = &y_out;
    ops[3].output_count = 1;

    if (nnm_exec_model_new(&model) != NNM_OK ||
        nnm_exec_model_add_constant(model, W, sizeof weights, weights) != NNM_OK)
        goto done;
    for (i = 0; i < 4; ++i)
        if (nnm_exec_model_add_operator(model, &ops[i], NULL) != NNM_OK) goto done;
    if (nnm_exec_model_pin(model, X) != NNM_OK || nnm_exec_model_pin(model, Y) != NNM_OK) goto done;
    /* NULL options: planner auto, 256 B alignment; NULL allocator: host. */
    if (nnm_exec_compile(model, NULL, NULL, prepare, weights, &compiled) != NNM_OK) goto done;
    if (nnm_exec_pool_new(compiled, NULL, 2, &pool) != NNM_OK) goto done;

    for (t = 0; t < 2; ++t) {
        memset(&requests[t], 0, sizeof requests[t]);
        requests[t].compiled = compiled;
        requests[t].pool = pool;
        requests[t].id = t + 1;
        requests[t].status = NNM_OK;
        if (pthread_create(&threads[t], NULL, run_requests, &requests[t]) != 0) requests[t].status = NNM_PANIC;
    }
    status = 0;
    for (t = 0; t < 2; ++t) {
        if (requests[t].status != NNM_PANIC) pthread_join(threads[t], NULL);
        if (requests[t].status != NNM_OK) {
            fprintf(stderr, "request %d: %s: %s\n", t + 1, nnm_status_str(requests[t].status), requests[t].error);
            status = 1;
            continue;
        }
        for (run = 0; run < RUNS; ++run) {
            int wrong = 0;
            printf("request %d run %d: y =", t + 1, run);
            for (j = 0; j < N; ++j) {
                float want = 0.0f; /* relu(x W), computed here directly */
                for (i = 0; i < N; ++i) want += ((float)(requests[t].id * 10 + run) - (float)i) * weights[i * N + j];
                want = want > 0.0f ? want : 0.0f;
                printf(" %g", (double)requests[t].y[run][j]);
                wrong |= requests[t].y[run][j] != want;
            }
            printf("%s\n", wrong ? "  (wrong)" : "");
            status |= wrong;
        }
    }
    /* The size query (NULL, 0), then the text. */
    if (nnm_exec_compiled_report(compiled, NNM_REPORT_FORMAT_TEXT, NULL, 0, &len) != NNM_OK ||
        (report = (char *)malloc(len)) == NULL ||
        nnm_exec_compiled_report(compiled, NNM_REPORT_FORMAT_TEXT, report, len, &len) != NNM_OK) {
        status = 1;
        goto done;
    }
    printf("%s", report);

done:
    if (status != 0) fprintf(stderr, "failed: %s\n", nnm_last_error());
    free(report);
    nnm_exec_pool_free(pool); /* every free accepts NULL */
    nnm_exec_compiled_free(compiled);
    nnm_exec_model_free(model);
    return status;
}
