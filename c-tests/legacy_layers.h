/*
 * The layers of an awnn-style legacy library, shared by the C tests of the
 * legacy pattern (legacy_test.c, legacy_glue_test.c): its tensor and cache
 * types on nnmem, its cache calls, fc and relu forward and backward (each
 * forward pushes onto the layer's cache what its backward pops), and
 * deterministic numbers. Legacy code as it is: no nnmem call but the cache
 * ones. Valid C11 and C++.
 */
#ifndef NNM_TEST_LEGACY_LAYERS_H
#define NNM_TEST_LEGACY_LAYERS_H

#include <stdint.h>
#include <string.h>

#include "nnm_check.h"

typedef nnm_tensor tensor_t;
typedef nnm_stack_cache lcache_t;

static inline void lcache_push(lcache_t *cache, tensor_t t) { CHECK_OK(nnm_stack_cache_push(cache, &t)); }

static inline tensor_t lcache_pop(lcache_t *cache) {
    tensor_t t;
    memset(&t, 0, sizeof t);
    CHECK_OK(nnm_stack_cache_pop(cache, &t));
    return t;
}

static inline double *T(const tensor_t *t) { return (double *)t->data; }

/* ---- deterministic numbers ---- */

static uint64_t lcg_state;
static inline double lcg_uniform(void) { /* [0, 1) */
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(lcg_state >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- layers: forward pushes what backward pops ---- */

/* y[n, m] = x[n, :] . w[:, m] + b[m]; caches x and w. */
static inline void layer_fc_forward(tensor_t x, tensor_t w, tensor_t b, lcache_t *cache, tensor_t y, int n) {
    int rows = (int)w.dims[0], cols = (int)w.dims[1], i, k, j;
    for (i = 0; i < n; ++i)
        for (j = 0; j < cols; ++j) {
            double s = T(&b)[j];
            for (k = 0; k < rows; ++k) s += T(&x)[i * rows + k] * T(&w)[k * cols + j];
            T(&y)[i * cols + j] = s;
        }
    lcache_push(cache, x);
    lcache_push(cache, w);
}

/* dx may have no buffer (the net input's gradient is not wanted). */
static inline void layer_fc_backward(tensor_t dx, tensor_t dw, tensor_t db, lcache_t *cache, tensor_t dy, int n) {
    tensor_t w = lcache_pop(cache);
    tensor_t x = lcache_pop(cache);
    int rows = (int)w.dims[0], cols = (int)w.dims[1], i, k, j;
    for (j = 0; j < cols; ++j) {
        T(&db)[j] = 0.0;
        for (i = 0; i < n; ++i) T(&db)[j] += T(&dy)[i * cols + j];
    }
    for (k = 0; k < rows; ++k)
        for (j = 0; j < cols; ++j) {
            double s = 0.0;
            for (i = 0; i < n; ++i) s += T(&x)[i * rows + k] * T(&dy)[i * cols + j];
            T(&dw)[k * cols + j] = s;
        }
    if (dx.data == NULL) return;
    for (i = 0; i < n; ++i)
        for (k = 0; k < rows; ++k) {
            double s = 0.0;
            for (j = 0; j < cols; ++j) s += T(&dy)[i * cols + j] * T(&w)[k * cols + j];
            T(&dx)[i * rows + k] = s;
        }
}

static inline void layer_relu_forward(tensor_t x, lcache_t *cache, tensor_t y, int count) {
    int i;
    for (i = 0; i < count; ++i) T(&y)[i] = T(&x)[i] > 0.0 ? T(&x)[i] : 0.0;
    lcache_push(cache, x);
}

static inline void layer_relu_backward(tensor_t dx, lcache_t *cache, tensor_t dy, int count) {
    tensor_t x = lcache_pop(cache);
    int i;
    for (i = 0; i < count; ++i) T(&dx)[i] = T(&x)[i] > 0.0 ? T(&dy)[i] : 0.0;
}

#endif /* NNM_TEST_LEGACY_LAYERS_H */
