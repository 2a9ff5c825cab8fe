/*
 * A legacy layer library in awnn's style on nnmem, built through the compat
 * include path alone: its `#include "utils/list.h"` resolves to
 * nnmem/compat/utils/list.h, and its headers' bare `typeof` compiles in
 * strict C11 and C++17.
 *
 * What legacy code does, and nnmem must survive without leaks:
 * - layer caches kept by value on the stack (`lcache_t` is an
 *   nnm_stack_cache), some initialised with NNM_STACK_CACHE_INIT, some with
 *   make_empty_lcache() on uninitialised storage, and never cleared: they
 *   simply go out of scope, after a full forward/backward step and after a
 *   forward-only pass that leaves tensors (a dropout mask among them) on
 *   them;
 * - weights (and one layer output) allocated by the legacy code with malloc
 *   and handed to the net, which frees them with the legacy deallocator at
 *   nnm_net_free, once;
 * - a layer that caches more tensors than a stack cache holds inline, and
 *   must then clear it.
 * The valgrind run of this program (c-tests/CMakeLists.txt) requires 0
 * bytes definitely, indirectly or possibly lost; the sanitizer build runs
 * it under ASan+UBSan (leaks, double frees).
 *
 *   x -> fc1 -> relu1 -> drop1 -> fc2 -> loss = sum(y * g)
 *
 * Built as C11 and C++17, against libnnmem.a and libnnmem.so.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utils/list.h" /* the legacy include, unchanged */
#include "legacy_layers.h"

#ifndef NNM_COMPAT_UTILS_LIST_H
#error "utils/list.h must resolve to nnmem/compat/utils/list.h"
#endif

enum { N = 5, D = 4, H = 6, M = 3, MAX_BATCH = 8, DEEP = 12 };
static const double KEEP = 0.5; /* dropout: probability of keeping a unit */

/* ---- the legacy layer library (fc, relu: legacy_layers.h; dropout here) ---- */

static void make_empty_lcache(lcache_t *cache) { CHECK_OK(nnm_stack_cache_init(cache)); }

/* Inverted dropout; the mask is a net output (nnmem owns it); the cache
 * keeps a view of it for backward. */
static void layer_dropout_forward(tensor_t x, tensor_t mask, lcache_t *cache, tensor_t y, int count) {
    uint8_t *m = (uint8_t *)mask.data;
    int i;
    for (i = 0; i < count; ++i) {
        m[i] = (uint8_t)(lcg_uniform() < KEEP);
        T(&y)[i] = m[i] ? T(&x)[i] / KEEP : 0.0;
    }
    lcache_push(cache, mask);
}

static void layer_dropout_backward(tensor_t dx, lcache_t *cache, tensor_t dy, int count) {
    tensor_t mask = lcache_pop(cache);
    const uint8_t *m = (const uint8_t *)mask.data;
    int i;
    CHECK(mask.dtype == NNM_DTYPE_U8 && mask.ownership == NNM_OWNERSHIP_VIEW);
    for (i = 0; i < count; ++i) T(&dx)[i] = m[i] ? T(&dy)[i] / KEEP : 0.0;
}

/* ---- the net: adopted weights, nnmem-owned outputs ---- */

struct freed_log {
    void *ptrs[16];
    int count;
};

/* The legacy deallocator, with a log so the test sees each call. */
static void legacy_free(void *ctx, void *ptr) {
    struct freed_log *log = (struct freed_log *)ctx;
    if (log->count < 16) log->ptrs[log->count] = ptr;
    log->count++;
    free(ptr);
}

static double x_data[N * D];
static double g_data[N * M]; /* d loss / d y */

typedef struct {
    nnm_net *net;
    nnm_param *w1, *b1, *w2, *b2;
    nnm_layer_data *x, *fc1, *relu1, *drop1, *mask, *fc2;
    void *adopted[12];
    int n_adopted;
} legacy_net_t;

/* Legacy weight init: malloc'd by the legacy code, adopted by the net. */
static nnm_param *adopt_weight(legacy_net_t *ln, struct freed_log *log, const char *name, uint32_t rows,
                               uint32_t cols) {
    uint32_t dims[2];
    uint32_t ndims = cols ? 2u : 1u;
    size_t count = (size_t)rows * (cols ? cols : 1u), i;
    double *data = (double *)malloc(count * sizeof(double));
    double *diff = (double *)calloc(count, sizeof(double));
    nnm_param *p = NULL;
    dims[0] = rows;
    dims[1] = cols;
    CHECK(data != NULL && diff != NULL);
    for (i = 0; i < count; ++i) data[i] = lcg_uniform() - 0.5;
    CHECK_OK(nnm_net_attach_param_adopted(ln->net, name, NNM_DTYPE_F64, dims, ndims, data, diff, legacy_free, log, &p));
    CHECK(p != NULL && p->data.data == data && p->diff.data == diff);
    CHECK(p->data.ownership == NNM_OWNERSHIP_OWNED && p->diff.ownership == NNM_OWNERSHIP_OWNED);
    ln->adopted[ln->n_adopted++] = data;
    ln->adopted[ln->n_adopted++] = diff;
    return p;
}

/* A layer output the legacy code allocates itself, adopted by the net. */
static nnm_layer_data *adopt_output(legacy_net_t *ln, struct freed_log *log, const char *name, uint32_t width) {
    size_t count = (size_t)MAX_BATCH * width;
    double *data = (double *)calloc(count, sizeof(double));
    double *diff = (double *)calloc(count, sizeof(double));
    nnm_layer_data *o = NULL;
    CHECK(data != NULL && diff != NULL);
    CHECK_OK(nnm_net_attach_output_adopted(ln->net, name, NNM_DTYPE_F64, &width, 1, data, diff, legacy_free, log, &o));
    CHECK(o != NULL && o->data.data == data && o->data.ownership == NNM_OWNERSHIP_OWNED && o->data.dims[0] == MAX_BATCH);
    ln->adopted[ln->n_adopted++] = data;
    ln->adopted[ln->n_adopted++] = diff;
    return o;
}

static nnm_layer_data *output(legacy_net_t *ln, const char *name, nnm_dtype dtype, uint32_t width) {
    nnm_layer_data *o = NULL;
    CHECK_OK(nnm_net_attach_output(ln->net, name, dtype, &width, 1, &o));
    return o;
}

static void legacy_net_init(legacy_net_t *ln, struct freed_log *log) {
    uint32_t d = D;
    memset(ln, 0, sizeof *ln);
    CHECK_OK(nnm_net_new(MAX_BATCH, &ln->net));
    ln->w1 = adopt_weight(ln, log, "fc1.W", D, H);
    ln->b1 = adopt_weight(ln, log, "fc1.b", H, 0);
    ln->w2 = adopt_weight(ln, log, "fc2.W", H, M);
    ln->b2 = adopt_weight(ln, log, "fc2.b", M, 0);
    CHECK_OK(nnm_net_attach_input_placeholder(ln->net, "x", NNM_DTYPE_F64, &d, 1, &ln->x));
    ln->fc1 = output(ln, "fc1", NNM_DTYPE_F64, H);
    ln->relu1 = output(ln, "relu1", NNM_DTYPE_F64, H);
    ln->drop1 = output(ln, "drop1", NNM_DTYPE_F64, H);
    ln->mask = output(ln, "drop1.mask", NNM_DTYPE_U8, H);
    ln->fc2 = adopt_output(ln, log, "fc2", M);
    CHECK_OK(nnm_net_input_bind(ln->x, NNM_MEM_KIND_HOST, x_data, NULL, N));
}

/* Forward through every layer; returns the loss. The caches are the
 * caller's; the dropout mask is drawn from `seed`. */
static double forward(legacy_net_t *ln, lcache_t caches[4], uint64_t seed) {
    double loss = 0.0;
    int i;
    lcg_state = seed;
    layer_fc_forward(ln->x->data, ln->w1->data, ln->b1->data, &caches[0], ln->fc1->data, N);
    layer_relu_forward(ln->fc1->data, &caches[1], ln->relu1->data, N * H);
    layer_dropout_forward(ln->relu1->data, ln->mask->data, &caches[2], ln->drop1->data, N * H);
    layer_fc_forward(ln->drop1->data, ln->w2->data, ln->b2->data, &caches[3], ln->fc2->data, N);
    for (i = 0; i < N * M; ++i) loss += T(&ln->fc2->data)[i] * g_data[i];
    return loss;
}

/* A training step's forward and backward with caches on this function's
 * stack; they are empty again at the end and are never cleared. */
static double train_step(legacy_net_t *ln, uint64_t seed) {
    lcache_t caches[4] = {NNM_STACK_CACHE_INIT, NNM_STACK_CACHE_INIT, NNM_STACK_CACHE_INIT,
                          NNM_STACK_CACHE_INIT};
    tensor_t dy = ln->fc2->diff;
    tensor_t dx = ln->x->data; /* the net input has no gradient buffer: a scratch one */
    double dx_buf[N * D];
    double loss = forward(ln, caches, seed);
    int i;
    CHECK(caches[0].count == 2 && caches[1].count == 1 && caches[2].count == 1 && caches[3].count == 2);
    for (i = 0; i < N * M; ++i) T(&dy)[i] = g_data[i];
    layer_fc_backward(ln->drop1->diff, ln->w2->diff, ln->b2->diff, &caches[3], dy, N);
    layer_dropout_backward(ln->relu1->diff, &caches[2], ln->drop1->diff, N * H);
    layer_relu_backward(ln->fc1->diff, &caches[1], ln->relu1->diff, N * H);
    dx.data = dx_buf;
    layer_fc_backward(dx, ln->w1->diff, ln->b1->diff, &caches[0], ln->fc1->diff, N);
    for (i = 0; i < 4; ++i) CHECK(caches[i].count == 0);
    return loss;
}

/* A forward-only pass (evaluation): the caches keep what forward pushed,
 * the dropout mask's view among them, and go out of scope uncleared. Two
 * are set up the way legacy code does it, make_empty_lcache on
 * uninitialised storage. */
static double forward_only(legacy_net_t *ln, uint64_t seed) {
    lcache_t caches[4];
    double loss;
    lcache_t fresh = NNM_STACK_CACHE_INIT;
    make_empty_lcache(&caches[0]);
    make_empty_lcache(&caches[1]);
    caches[2] = fresh; /* copying a cache that holds no heap is fine */
    caches[3] = fresh;
    loss = forward(ln, caches, seed);
    CHECK(caches[2].count == 1 && caches[2].tensors[0].data == ln->mask->data.data);
    CHECK(caches[2].tensors[0].ownership == NNM_OWNERSHIP_VIEW);
    CHECK(caches[0].count == 2 && caches[0].tensors[1].data == ln->w1->data.data);
    return loss;
}

/* A layer that caches more than NNM_STACK_CACHE_INLINE tensors: the cache
 * spills to the heap, the pops bring it back, and a forward-only use must
 * clear it. */
static void deep_layer(legacy_net_t *ln) {
    lcache_t cache = NNM_STACK_CACHE_INIT;
    tensor_t t;
    size_t count = 0;
    int i;
    CHECK(NNM_STACK_CACHE_INLINE == 10 && DEEP > NNM_STACK_CACHE_INLINE);
    for (i = 0; i < DEEP; ++i) lcache_push(&cache, i % 2 ? ln->w1->data : ln->fc1->data);
    CHECK_OK(nnm_stack_cache_count(&cache, &count));
    CHECK(count == DEEP && cache.count == DEEP);
    CHECK_OK(nnm_stack_cache_get(&cache, DEEP - 1, &t));
    CHECK(t.data == ln->w1->data.data);
    CHECK_FAILS(nnm_stack_cache_get(&cache, DEEP, &t), NNM_INVALID_ARGUMENT);
    for (i = DEEP - 1; i >= 0; --i) {
        t = lcache_pop(&cache);
        CHECK(t.data == (i % 2 ? ln->w1->data.data : ln->fc1->data.data));
    }
    CHECK_FAILS(nnm_stack_cache_pop(&cache, &t), NNM_WRONG_STATE);
    CHECK(strcmp(nnm_last_error(), "stack cache is empty: pop without a matching push") == 0);
    /* Forward-only: left holding DEEP tensors, so it is cleared. */
    for (i = 0; i < DEEP; ++i) lcache_push(&cache, ln->fc1->data);
    CHECK_OK(nnm_stack_cache_clear(&cache));
    CHECK(cache.count == 0);
}

/* Argument checks of the stack cache and of adoption. */
static void errors(legacy_net_t *ln, struct freed_log *log) {
    lcache_t cache = NNM_STACK_CACHE_INIT, copy;
    lcache_t zeroed;
    tensor_t t = ln->w1->data;
    uint32_t dims[1] = {4};
    double *mine = (double *)malloc(4 * sizeof(double));
    int i, freed_before = log->count;

    /* Zero-filled storage is an empty cache, as a zero-filled legacy one is;
     * a garbage tag is refused. */
    memset(&zeroed, 0, sizeof zeroed);
    CHECK_OK(nnm_stack_cache_push(&zeroed, &t));
    CHECK(zeroed.count == 1 && zeroed.tensors[0].data == t.data);
    zeroed.tag = 0x1234;
    CHECK_FAILS(nnm_stack_cache_push(&zeroed, &t), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_stack_cache_push(NULL, &t), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_stack_cache_push(&cache, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_stack_cache_pop(&cache, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_stack_cache_init(NULL), NNM_NULL_ARGUMENT);
    t.ndims = 9;
    CHECK_FAILS(nnm_stack_cache_push(&cache, &t), NNM_INVALID_ARGUMENT);
    CHECK(strcmp(nnm_last_error(), "tensor has ndims 9: a tensor has 0 (a scalar) to 8 dimensions") == 0);
    CHECK(cache.count == 0);

    /* A copy of a cache that holds heap is refused; the original clears. */
    for (i = 0; i < DEEP; ++i) lcache_push(&cache, ln->w2->data);
    memcpy(&copy, &cache, sizeof copy);
    CHECK_FAILS(nnm_stack_cache_pop(&copy, &t), NNM_WRONG_STATE);
    CHECK_FAILS(nnm_stack_cache_clear(&copy), NNM_WRONG_STATE);
    CHECK_OK(nnm_stack_cache_clear(&cache));
    /* An old copy written back over the cleared cache is refused (its heap is
     * gone), and initialising again frees nothing twice. */
    memcpy(&cache, &copy, sizeof cache);
    CHECK_FAILS(nnm_stack_cache_pop(&cache, &t), NNM_WRONG_STATE);
    CHECK(strstr(nnm_last_error(), "no longer its own") != NULL);
    CHECK_FAILS(nnm_stack_cache_clear(&cache), NNM_WRONG_STATE);
    CHECK_OK(nnm_stack_cache_init(&cache));
    CHECK(cache.count == 0);
    /* Initialising a cache that holds heap frees that heap (no leak). */
    for (i = 0; i < DEEP; ++i) lcache_push(&cache, ln->w2->data);
    CHECK_OK(nnm_stack_cache_init(&cache));
    CHECK(cache.count == 0 && cache.spill == NULL);

    /* Failed adoptions leave the buffer with the caller. */
    CHECK(mine != NULL);
    CHECK_FAILS(nnm_net_attach_param_adopted(ln->net, "fc1.W", NNM_DTYPE_F64, dims, 1, mine, NULL, legacy_free, log,
                                             NULL),
                NNM_ALREADY_EXISTS);
    CHECK_FAILS(nnm_net_attach_param_adopted(ln->net, "emb", NNM_DTYPE_F64, dims, 1, mine, NULL, NULL, log, NULL),
                NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_net_attach_param_adopted(ln->net, "emb", NNM_DTYPE_F64, dims, 1, mine, mine, legacy_free, log,
                                             NULL),
                NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_net_attach_param_adopted(ln->net, "emb", NNM_DTYPE_F64, dims, 9, mine, NULL, legacy_free, log,
                                             NULL),
                NNM_INVALID_ARGUMENT);
    /* A buffer the net already adopted would be freed twice. */
    CHECK_FAILS(nnm_net_attach_param_adopted(ln->net, "emb", NNM_DTYPE_F64, dims, 1, ln->adopted[0], NULL,
                                             legacy_free, log, NULL),
                NNM_INVALID_ARGUMENT);
    CHECK(strstr(nnm_last_error(), "already adopted by this net") != NULL);
    CHECK(log->count == freed_before);
    free(mine);
}

int main(void) {
    legacy_net_t ln;
    struct freed_log log;
    nnm_net_report report;
    double base, numeric, analytic;
    const double h = 1e-6;
    struct list_head *node;
    int i, j, step;

    memset(&log, 0, sizeof log);
    lcg_state = 7;
    for (i = 0; i < N * D; ++i) x_data[i] = 2.0 * lcg_uniform() - 1.0;
    for (i = 0; i < N * M; ++i) g_data[i] = lcg_uniform() - 0.5;
    legacy_net_init(&ln, &log);
    /* The inline slots are the struct's tail: a published, fixed size. */
    CHECK(sizeof(nnm_stack_cache) == offsetof(nnm_stack_cache, tensors) + NNM_STACK_CACHE_INLINE * sizeof(nnm_tensor));

    /* The legacy way of walking the params: list_for_each + bare typeof. */
    i = 0;
    list_for_each(node, &ln.net->params) {
        nnm_param *p = list_entry(node, typeof(*p), node);
        CHECK(p->data.ownership == NNM_OWNERSHIP_OWNED && p->data.data == ln.adopted[2 * i]);
        ++i;
    }
    CHECK(i == 4);
    CHECK_OK(nnm_net_get_report(ln.net, &report));
    CHECK(report.params.owned_bytes == 2 * 8 * (D * H + H + H * M + M));

    /* Backprop against finite differences (same dropout mask each time). */
    base = train_step(&ln, 42);
    for (j = 0; j < 3; ++j) {
        nnm_param *p = j == 0 ? ln.w1 : j == 1 ? ln.b1 : ln.w2;
        int k = j == 0 ? 5 : j == 1 ? 2 : 7;
        lcache_t scratch[4] = {NNM_STACK_CACHE_INIT, NNM_STACK_CACHE_INIT, NNM_STACK_CACHE_INIT,
                               NNM_STACK_CACHE_INIT};
        double saved = T(&p->data)[k], up, down;
        analytic = T(&p->diff)[k];
        T(&p->data)[k] = saved + h;
        up = forward(&ln, scratch, 42);
        make_empty_lcache(&scratch[0]); /* legacy re-inits without clearing: fine inline */
        make_empty_lcache(&scratch[1]);
        make_empty_lcache(&scratch[2]);
        make_empty_lcache(&scratch[3]);
        T(&p->data)[k] = saved - h;
        down = forward(&ln, scratch, 42);
        T(&p->data)[k] = saved;
        numeric = (up - down) / (2 * h);
        CHECK(fabs(numeric - analytic) <= 1e-6 * (1.0 + fabs(numeric)));
    }

    /* Plain SGD over the params list: the loss goes down. */
    for (step = 0; step < 50; ++step) {
        nnm_param *p;
        train_step(&ln, 1000 + (uint64_t)step);
        list_for_each_entry(p, &ln.net->params, node) {
            size_t n = (size_t)(p->data.bytes / sizeof(double)), e;
            for (e = 0; e < n; ++e) T(&p->data)[e] -= 0.05 * T(&p->diff)[e];
        }
    }
    CHECK(forward_only(&ln, 42) < base);

    deep_layer(&ln);
    errors(&ln, &log);

    CHECK(log.count == 0); /* nothing adopted is freed before the net */
    nnm_net_free(ln.net);
    CHECK(log.count == ln.n_adopted);
    for (i = 0; i < ln.n_adopted; ++i) {
        int seen = 0;
        for (j = 0; j < log.count && j < 16; ++j) seen += log.ptrs[j] == ln.adopted[i];
        CHECK(seen == 1);
    }
    return nnm_check_report();
}
