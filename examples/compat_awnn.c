/*
 * awnn's net interface over nnmem, with no glue.
 *
 * In an awnn checkout, delete src/net.c (and its line in awnn's
 * CMakeLists.txt), put nnmem's compat headers before awnn's own on the
 * include path, and link nnmem:
 *
 *     find_package(nnmem REQUIRED)
 *     include_directories(BEFORE ${nnmem_INCLUDE_DIR}/nnmem/compat ${nnmem_INCLUDE_DIR})
 *     target_link_libraries(awnn_core PUBLIC nnmem::static)
 *
 * awnn's "awnn/net.h" and "awnn/layer.h" are then nnmem's
 * (include/nnmem/compat/awnn/); its tensor.h, memory.h and logging.h stay
 * its own. This program is an awnn-style two-layer net of its own: a model
 * struct with awnn's four list heads, layers attached with
 * net_attach_param, a forward pass that looks its tensors up by name and
 * keeps what backward needs in the layer caches, and awnn's finalize, which
 * frees caches, outputs and params but never the inputs. nnmem gives back
 * every buffer once all the same.
 */
#include <stdio.h>

#include "awnn/net.h"

typedef struct model {
    struct list_head list_all_params[1];
    struct list_head list_layer_out[1];
    struct list_head list_layer_in[1];
    struct list_head list_layer_cache[1];
} model_t;

enum { N = 2, D = 3 };

static void attach_layer(model_t *m, unsigned i, tensor_t in, tensor_t din, tensor_t *out) {
    char name[64];
    uint w_shape[2] = {D, D}, out_shape[2] = {N, D};
    tensor_t w = tensor_make(w_shape, 2);
    tensor_t dout;
    uint k;
    for (k = 0; k < D * D; ++k) w.data[k] = (k % (D + 1) == 0) ? (T)(i + 2) : (T)0; /* (i + 2) * identity */
    snprintf(name, sizeof name, "fc%u.in", i);
    net_attach_param(m->list_layer_in, name, in, din);
    snprintf(name, sizeof name, "fc%u.weight", i);
    net_attach_param(m->list_all_params, name, w, tensor_make(w_shape, 2));
    *out = tensor_make(out_shape, 2);
    dout = tensor_make(out_shape, 2);
    snprintf(name, sizeof name, "fc%u.out", i);
    net_attach_param(m->list_layer_out, name, *out, dout);
    snprintf(name, sizeof name, "fc%u.cache", i);
    net_attach_cache(m->list_layer_cache, name);
}

/* y = x W for each layer, the layer's input pushed on its cache. */
static tensor_t forward(model_t const *m, tensor_t x) {
    unsigned i;
    for (i = 0; i < 2; ++i) {
        char name[64];
        tensor_t w, y;
        lcache_t *cache;
        uint r, c, k;
        snprintf(name, sizeof name, "fc%u.weight", i);
        w = net_get_param(m->list_all_params, name)->data;
        snprintf(name, sizeof name, "fc%u.out", i);
        y = net_get_param(m->list_layer_out, name)->data;
        snprintf(name, sizeof name, "fc%u.cache", i);
        cache = net_get_cache(m->list_layer_cache, name);
        for (r = 0; r < N; ++r)
            for (c = 0; c < D; ++c) {
                T s = 0;
                for (k = 0; k < D; ++k) s += x.data[r * D + k] * w.data[k * D + c];
                y.data[r * D + c] = s;
            }
        lcache_push(cache, x);
        x = y;
    }
    return x;
}

int main(void) {
    model_t model;
    uint in_shape[2] = {N, D};
    tensor_t out, x = tensor_make(in_shape, 2), y;
    uint k;
    int ok;

    init_list_head(model.list_all_params);
    init_list_head(model.list_layer_out);
    init_list_head(model.list_layer_in);
    init_list_head(model.list_layer_cache);
    attach_layer(&model, 0, tensor_make_placeholder(in_shape, 2), tensor_make(in_shape, 2), &out);
    attach_layer(&model, 1, out, net_get_param(model.list_layer_out, "fc0.out")->diff, &out);

    for (k = 0; k < N * D; ++k) x.data[k] = (T)k;
    y = forward(&model, x);
    ok = y.data[N * D - 1] == (T)(6 * (N * D - 1)); /* x * 2 * 3 */
    printf("y[%d] = %g (x * 6: %s); fc1.cache holds %u tensor(s)\n", N * D - 1, (double)y.data[N * D - 1],
           ok ? "right" : "WRONG", net_get_cache(model.list_layer_cache, "fc1.cache")->count);

    /* awnn's finalize: the inputs are never freed by awnn, yet nothing
     * leaks: they go with the outputs they view, and the first input's
     * gradient buffer with the last of them. */
    net_free_cache(model.list_layer_cache);
    net_free_params(model.list_layer_out);
    net_free_params(model.list_all_params);
    tensor_destroy(&x);
    printf("lists empty again: %s\n", list_empty(model.list_layer_in) ? "yes" : "no");
    return ok && list_empty(model.list_layer_in) ? 0 : 1;
}
