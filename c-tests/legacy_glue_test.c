/*
 * An awnn-style legacy layer library on nnmem through a glue layer that
 * keeps no state: no registry keyed by list head, no map from nnmem's
 * entries back to the library's structs, no guessed batch size, no branch
 * between two cache families.
 *
 * The library's own code is what legacy code looks like:
 * - a model struct whose only link to its memory is four list heads
 *   (awnn's `struct list_head list_all_params[1]` & co., which become
 *   pointers to the net's lists: every `model->list_x` expression stays);
 * - layers and model code that get only `struct list_head *` and names, and
 *   attach, look up and walk through them;
 * - tensors the library allocates itself, with their whole shape (the
 *   batch is the first dimension: nothing states it elsewhere), handed to
 *   the net, which frees them with the library's deallocator;
 * - layer inputs that are shallow copies of the outputs before them;
 * - layer caches of at most 10 tensors (awnn's fixed limit): net caches,
 *   one kept by value inside a layer struct, one zero-filled in static
 *   storage, one zero-filled on the stack, none initialised, some never
 *   cleared;
 * - a layer's params replaced (fine-tuning a new head): detached singly.
 * Each glue function below is one nnmem call, or two.
 *
 * The valgrind run (c-tests/CMakeLists.txt) requires 0 bytes lost; the
 * sanitizer build runs it under ASan+UBSan.
 *
 *   x -> fc1 -> relu1 -> fc2 -> loss = sum(y * g)
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

enum { N = 4, D = 3, H = 5, M = 2, LEGACY_CACHE_MAX = 10 };

/* ==== the glue: the legacy library's net API on nnmem, with no state ==== */

typedef nnm_param param_t;
typedef nnm_layer_data layer_data_t;

static int g_freed; /* calls of the library's deallocator */

static void legacy_free(void *ctx, void *ptr) {
    (void)ctx;
    ++g_freed;
    free(ptr);
}

/* awnn's net_attach_param, for any of the three tensor lists: the tensors
 * as the library made them, and the library's owner of the entry. */
static void net_attach_param(struct list_head *l, const char *name, tensor_t data, tensor_t diff, void *owner) {
    CHECK_OK(nnm_net_attach_tensors(l, name, &data, &diff, legacy_free, NULL, owner, NULL));
}

static param_t *net_get_param(const struct list_head *l, const char *name) {
    return nnm_net_param_get(nnm_net_from_list(l), name);
}

static layer_data_t *net_get_output(const struct list_head *l, const char *name) {
    return nnm_net_output_get(nnm_net_from_list(l), name);
}

static void net_detach_param(struct list_head *l, const char *name) {
    nnm_net *net = nnm_net_from_list(l);
    param_t *p = nnm_net_param_get(net, name);
    CHECK(p != NULL);
    if (p != NULL) CHECK_OK(nnm_net_detach(net, &p->node));
}

/* A cache of the net, in nnmem's storage, or in the caller's (`storage`). */
static void net_attach_cache(struct list_head *l, const char *name, lcache_t *storage, void *owner) {
    CHECK_OK(nnm_net_attach_stack_cache(nnm_net_from_list(l), name, storage, owner, NULL));
}

static lcache_t *net_get_cache(const struct list_head *l, const char *name) {
    nnm_cache *c = nnm_net_cache_get(nnm_net_from_list(l), name);
    return c != NULL ? c->stack : NULL;
}

/* One family of cache calls for every cache: lcache_push and lcache_pop
 * (legacy_layers.h) are nnm_stack_cache_push and nnm_stack_cache_pop. */

/* awnn's make_empty_lcache: no nnmem call needed, zeroes are an empty cache. */
static void make_empty_lcache(lcache_t *cache) { memset(cache, 0, sizeof *cache); }

/* ==== the legacy library: unchanged legacy code from here on ==== */

/* A tensor the library allocates, with its whole shape. */
static tensor_t tensor_make(uint32_t d0, uint32_t d1) {
    tensor_t t;
    memset(&t, 0, sizeof t);
    t.ndims = d1 ? 2u : 1u;
    t.dims[0] = d0;
    t.dims[1] = d1;
    t.dtype = NNM_DTYPE_F64;
    t.elem_size = sizeof(double);
    t.mem_kind = NNM_MEM_KIND_HOST;
    t.ownership = NNM_OWNERSHIP_OWNED;
    t.bytes = (uint64_t)d0 * (d1 ? d1 : 1u) * sizeof(double);
    t.data = calloc((size_t)t.bytes / sizeof(double), sizeof(double));
    CHECK(t.data != NULL);
    return t;
}

/* What the library knows of a layer; an entry's `user` leads back here. */
typedef struct {
    const char *name;
    int fan_in, fan_out;
    lcache_t cache; /* a relu keeps its cache by value, in the layer */
} layer_t;

typedef struct {
    layer_t fc1, relu1, fc2;
    struct list_head *list_all_params; /* awnn: struct list_head list_all_params[1]; */
    struct list_head *list_layer_out;
    struct list_head *list_layer_in;
    struct list_head *list_layer_cache;
} model_t;

static void fc_setup(model_t *model, layer_t *layer, const char *w_name, const char *b_name) {
    tensor_t w = tensor_make((uint32_t)layer->fan_in, (uint32_t)layer->fan_out);
    tensor_t b = tensor_make((uint32_t)layer->fan_out, 0);
    int i;
    for (i = 0; i < layer->fan_in * layer->fan_out; ++i) T(&w)[i] = lcg_uniform() - 0.5;
    net_attach_param(model->list_all_params, w_name, w, tensor_make((uint32_t)layer->fan_in, (uint32_t)layer->fan_out),
                     layer);
    net_attach_param(model->list_all_params, b_name, b, tensor_make((uint32_t)layer->fan_out, 0), layer);
}

/* The output of `layer` ([batch, width]), and the next layer's input, a
 * shallow copy of it. */
static void out_setup(model_t *model, layer_t *layer, uint32_t batch, uint32_t width, const char *next_in) {
    tensor_t y = tensor_make(batch, width), dy = tensor_make(batch, width);
    net_attach_param(model->list_layer_out, layer->name, y, dy, layer);
    if (next_in != NULL) net_attach_param(model->list_layer_in, next_in, y, dy, layer);
}

static layer_t layer_make(const char *name, int fan_in, int fan_out) {
    layer_t l;
    memset(&l, 0, sizeof l); /* its cache too: zero-filled, never initialised */
    l.name = name;
    l.fan_in = fan_in;
    l.fan_out = fan_out;
    return l;
}

static void model_init(model_t *model, nnm_net *net, uint32_t batch) {
    model->fc1 = layer_make("fc1", D, H);
    model->relu1 = layer_make("relu1", H, H);
    model->fc2 = layer_make("fc2", H, M);
    model->list_all_params = &net->params;
    model->list_layer_out = &net->outputs;
    model->list_layer_in = &net->inputs;
    model->list_layer_cache = &net->caches;
    fc_setup(model, &model->fc1, "fc1.W", "fc1.b");
    fc_setup(model, &model->fc2, "fc2.W", "fc2.b");
    out_setup(model, &model->fc1, batch, H, "relu1.in");
    out_setup(model, &model->relu1, batch, H, "fc2.in");
    out_setup(model, &model->fc2, batch, M, NULL);
    net_attach_cache(model->list_layer_cache, "fc1", NULL, &model->fc1);
    net_attach_cache(model->list_layer_cache, "relu1", &model->relu1.cache, &model->relu1);
    net_attach_cache(model->list_layer_cache, "fc2", NULL, &model->fc2);
}

/* Forward through the model, everything found by name from the list heads. */
static double model_forward(model_t *model, tensor_t x, const double *g) {
    struct list_head *P = model->list_all_params, *O = model->list_layer_out, *C = model->list_layer_cache;
    tensor_t y;
    double loss = 0.0;
    int i;
    layer_fc_forward(x, net_get_param(P, "fc1.W")->data, net_get_param(P, "fc1.b")->data, net_get_cache(C, "fc1"),
                     net_get_output(O, "fc1")->data, N);
    layer_relu_forward(nnm_net_input_get(nnm_net_from_list(model->list_layer_in), "relu1.in")->data,
                       net_get_cache(C, "relu1"), net_get_output(O, "relu1")->data, N * H);
    layer_fc_forward(nnm_net_input_get(nnm_net_from_list(model->list_layer_in), "fc2.in")->data,
                     net_get_param(P, "fc2.W")->data,
                     net_get_param(P, "fc2.b")->data, net_get_cache(C, "fc2"), net_get_output(O, "fc2")->data, N);
    y = net_get_output(O, "fc2")->data;
    for (i = 0; i < N * M; ++i) loss += T(&y)[i] * g[i];
    return loss;
}

static void model_backward(model_t *model, const double *g) {
    struct list_head *P = model->list_all_params, *O = model->list_layer_out, *C = model->list_layer_cache;
    tensor_t dy = net_get_output(O, "fc2")->diff, none;
    int i;
    memset(&none, 0, sizeof none);
    for (i = 0; i < N * M; ++i) T(&dy)[i] = g[i];
    layer_fc_backward(net_get_output(O, "relu1")->diff, net_get_param(P, "fc2.W")->diff,
                      net_get_param(P, "fc2.b")->diff, net_get_cache(C, "fc2"), dy, N);
    layer_relu_backward(net_get_output(O, "fc1")->diff, net_get_cache(C, "relu1"), net_get_output(O, "relu1")->diff,
                        N * H);
    layer_fc_backward(none, net_get_param(P, "fc1.W")->diff, net_get_param(P, "fc1.b")->diff,
                      net_get_cache(C, "fc1"), net_get_output(O, "fc1")->diff, N);
}

/* Zero-filled in static storage, never initialised. */
static lcache_t g_eval_cache;

/* A legacy layer that caches the legacy limit of 10 tensors on a cache of
 * its own stack frame, zero-filled, and walks away from it uncleared. */
static void deep_layer(tensor_t t) {
    lcache_t cache;
    size_t count = 0;
    int i;
    make_empty_lcache(&cache);
    for (i = 0; i < LEGACY_CACHE_MAX; ++i) lcache_push(&cache, t);
    CHECK_OK(nnm_stack_cache_count(&cache, &count));
    CHECK(count == LEGACY_CACHE_MAX && cache.spill == NULL); /* all inline: nothing to leak */
}

int main(void) {
    nnm_net *net = NULL;
    model_t model;
    tensor_t x = tensor_make(N, D);
    double g[N * M], analytic, numeric, saved;
    const double h = 1e-6;
    nnm_net_report report;
    param_t *p;
    layer_data_t *o;
    int i, seen, freed_at_init;

    lcg_state = 11;
    for (i = 0; i < N * D; ++i) T(&x)[i] = 2.0 * lcg_uniform() - 1.0;
    for (i = 0; i < N * M; ++i) g[i] = lcg_uniform() - 0.5;

    /* No batch size up front: the first output the library attaches, a
     * [N, H] tensor, decides it. */
    CHECK_OK(nnm_net_new(0, &net));
    CHECK(net->max_batch == 0);
    model_init(&model, net, N);
    CHECK(net->max_batch == N);
    freed_at_init = g_freed;
    CHECK(freed_at_init == 0);
    CHECK(NNM_STACK_CACHE_INLINE >= LEGACY_CACHE_MAX);

    /* The net from each of the four list heads; nothing from anything else. */
    CHECK(nnm_net_from_list(model.list_all_params) == net && nnm_net_from_list(model.list_layer_out) == net);
    CHECK(nnm_net_from_list(model.list_layer_in) == net && nnm_net_from_list(model.list_layer_cache) == net);
    CHECK(nnm_net_from_list(&net_get_param(model.list_all_params, "fc1.W")->node) == NULL);
    CHECK_ERROR_HAS("is not a list head of a live nnm_net");
    CHECK(nnm_net_from_list(NULL) == NULL);

    /* Each entry leads back to the library's layer through `user`: no map. */
    seen = 0;
    list_for_each_entry(p, model.list_all_params, node) {
        layer_t *owner = (layer_t *)p->user;
        CHECK(owner == &model.fc1 || owner == &model.fc2);
        CHECK((int)p->data.dims[0] == (p->data.ndims == 2 ? owner->fan_in : owner->fan_out));
        CHECK(p->data.ownership == NNM_OWNERSHIP_OWNED);
        ++seen;
    }
    CHECK(seen == 4);
    list_for_each_entry(o, model.list_layer_in, node) {
        layer_data_t *out = net_get_output(model.list_layer_out, ((layer_t *)o->user)->name);
        CHECK(o->data.ownership == NNM_OWNERSHIP_VIEW && o->data.data == out->data.data && o->diff.data == out->diff.data);
    }
    CHECK(((layer_t *)nnm_net_cache_get(net, "relu1")->user) == &model.relu1);
    CHECK(net_get_cache(model.list_layer_cache, "relu1") == &model.relu1.cache);

    /* Backprop against finite differences: the caches hand back what the
     * layers pushed. */
    for (i = 0; i < 3; ++i) {
        param_t *q = net_get_param(model.list_all_params, i == 0 ? "fc1.W" : i == 1 ? "fc1.b" : "fc2.W");
        int k = i == 0 ? 4 : i == 1 ? 2 : 7;
        double up, down;
        model_forward(&model, x, g);
        CHECK(model.relu1.cache.count == 1 && net_get_cache(model.list_layer_cache, "fc1")->count == 2);
        model_backward(&model, g);
        CHECK(model.relu1.cache.count == 0 && net_get_cache(model.list_layer_cache, "fc1")->count == 0);
        analytic = T(&q->diff)[k];
        saved = T(&q->data)[k];
        T(&q->data)[k] = saved + h;
        up = model_forward(&model, x, g);
        model_backward(&model, g); /* empties the caches again */
        T(&q->data)[k] = saved - h;
        down = model_forward(&model, x, g);
        model_backward(&model, g);
        T(&q->data)[k] = saved;
        numeric = (up - down) / (2 * h);
        CHECK(fabs(numeric - analytic) <= 1e-6 * (1.0 + fabs(numeric)));
        CHECK(fabs(analytic) > 1e-9); /* a gradient that can be wrong */
    }

    /* The same calls on every cache: the net entry and its stack cache agree. */
    {
        nnm_cache *entry = nnm_net_cache_get(net, "fc1");
        lcache_t *c = net_get_cache(model.list_layer_cache, "fc1");
        size_t count = 0;
        tensor_t t;
        lcache_push(c, x);
        CHECK_OK(nnm_cache_push(entry, &x));
        CHECK_OK(nnm_cache_count(entry, &count));
        CHECK(count == 2 && c->count == 2);
        CHECK_OK(nnm_cache_pop(entry, &t));
        CHECK(t.data == x.data && t.ownership == NNM_OWNERSHIP_VIEW);
        t = lcache_pop(c);
        CHECK(t.data == x.data);
        CHECK_FAILS(nnm_cache_pop(entry, &t), NNM_WRONG_STATE);
    }

    /* An evaluation pass on zero-filled static caches: never initialised,
     * never cleared. */
    {
        tensor_t y = net_get_output(model.list_layer_out, "fc1")->data;
        layer_fc_forward(x, net_get_param(model.list_all_params, "fc1.W")->data,
                         net_get_param(model.list_all_params, "fc1.b")->data, &g_eval_cache, y, N);
        CHECK(g_eval_cache.count == 2 && g_eval_cache.tensors[0].data == x.data);
        deep_layer(y);
    }

    /* Fine-tuning a new head: fc2's params are detached (their adopted
     * buffers freed, once each) and fresh ones attached under the same names. */
    CHECK_OK(nnm_net_get_report(net, &report));
    CHECK(report.params.entries == 4);
    net_detach_param(model.list_all_params, "fc2.W");
    net_detach_param(model.list_all_params, "fc2.b");
    CHECK(g_freed == freed_at_init + 4);
    CHECK(net_get_param(model.list_all_params, "fc2.W") == NULL);
    fc_setup(&model, &model.fc2, "fc2.W", "fc2.b");
    CHECK(nnm_net_detach(net, model.list_all_params) == NNM_INVALID_ARGUMENT);
    /* An output is not detached before the inputs that view it. */
    CHECK_FAILS(nnm_net_detach(net, &net_get_output(model.list_layer_out, "fc1")->node), NNM_WRONG_STATE);
    CHECK_OK(nnm_net_get_report(net, &report));
    CHECK(report.params.entries == 4 && report.max_batch == N);
    /* A forward-only pass with the new head leaves tensors on every cache:
     * nnmem's go with the net, the layer's by-value one holds no heap. */
    model_forward(&model, x, g);
    CHECK(model.relu1.cache.count == 1 && model.relu1.cache.spill == NULL);

    nnm_net_free(net);
    /* Each adopted buffer once: 4 params and 3 outputs, data and diff, at
     * init (fc2's first pair at its detach), and the new head's 2 params;
     * the inputs were views and freed nothing. */
    CHECK(g_freed == 14 + 4);
    free(x.data);
    return nnm_check_report();
}
