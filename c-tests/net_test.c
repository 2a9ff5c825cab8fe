/*
 * An awnn-style MLP written against nnmem's net API: the memory of a legacy
 * C net (params, layer outputs, layer inputs, layer caches) lives in the
 * four kernel-style lists of an nnm_net, and this program walks them with
 * the macros of <nnmem/list.h> in its own code.
 *
 *   x -> fc1 -> relu1 -> fc2 -> relu2 -> fc3 -> softmax cross-entropy
 *
 * - init attaches everything: params (W, b), outputs (sized for the maximum
 *   batch), inputs (the net input is a placeholder bound to the caller's
 *   batch; every other input is a view of the output before it), caches;
 * - forward walks the cache list in order and pushes what backward needs
 *   (views of x and W; relu masks in buffers the cache owns);
 * - backward walks the cache list in reverse and pops;
 * - SGD walks the param list;
 * - a numerical gradient check compares backprop with finite differences;
 * - training must bring the loss down and classify the training set;
 * - every error path is checked (status and nnm_last_error() text);
 * - freeing the net frees every owned buffer once (valgrind and ASan
 *   runs of this program check that nothing leaks and nothing is freed
 *   twice, and a borrowed param shows that caller memory is left alone).
 *
 * Built as C11 and C++17, against libnnmem.a and libnnmem.so.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnm_check.h"
#include "nnmem/list.h"

enum { IN_DIM = 4, H1 = 16, H2 = 12, CLASSES = 3, SAMPLES = 96, MAX_BATCH = 32 };

/* ---- deterministic data: a 64-bit LCG ---------------------------------------------- */

static uint64_t lcg_state = 0x2545f4914f6cdd1dULL;

static double lcg_uniform(void) { /* [0, 1) */
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(lcg_state >> 11) * (1.0 / 9007199254740992.0);
}

static double lcg_normal(void) { /* Irwin-Hall: mean 0, variance 1 */
    double s = 0.0;
    int i;
    for (i = 0; i < 12; ++i) s += lcg_uniform();
    return s - 6.0;
}

/* Three clusters in IN_DIM dimensions, SAMPLES points, labels 0..2. */
static double train_x[SAMPLES * IN_DIM];
static int train_y[SAMPLES];

static void make_data(void) {
    static const double centers[CLASSES][IN_DIM] = {
        {2.0, 0.0, -1.0, 0.5}, {-1.5, 2.0, 0.5, -1.0}, {0.0, -2.0, 1.5, 1.0}};
    int i, k;
    for (i = 0; i < SAMPLES; ++i) {
        train_y[i] = i % CLASSES;
        for (k = 0; k < IN_DIM; ++k) train_x[i * IN_DIM + k] = centers[train_y[i]][k] + 0.7 * lcg_normal();
    }
}

/* ---- small helpers --------------------------------------------------------------------- */

static double *values(const nnm_tensor *t) { return (double *)t->data; }

static nnm_param *param(nnm_net *net, const char *layer, const char *suffix) {
    char name[NNM_NAME_MAX + 1];
    nnm_param *p;
    snprintf(name, sizeof name, "%s.%s", layer, suffix);
    p = nnm_net_param_get(net, name);
    CHECK(p != NULL);
    return p;
}

static int is_fc(const nnm_cache *c) { return strncmp(c->name, "fc", 2) == 0; }

/* A param with a gradient (a frozen, borrowed one has a placeholder diff). */
static int trainable(const nnm_param *p) { return p->diff.mem_kind != NNM_MEM_KIND_PLACEHOLDER; }

/* ---- init ------------------------------------------------------------------------------ */

/* awnn's mlp_init: attaches everything; returns the net or NULL. */
static nnm_net *mlp_init(void) {
    static const char *const layers[] = {"fc1", "relu1", "fc2", "relu2", "fc3"};
    static const uint32_t widths[] = {H1, H1, H2, H2, CLASSES};
    nnm_net *net = NULL;
    nnm_layer_data *prev = NULL;
    uint32_t fan_in = IN_DIM;
    int l;

    CHECK_OK(nnm_net_new(MAX_BATCH, &net));
    if (net == NULL) return NULL;
    for (l = 0; l < 5; ++l) {
        uint32_t width = widths[l];
        nnm_layer_data *out = NULL;
        if (strncmp(layers[l], "fc", 2) == 0) {
            char w_name[16], b_name[16];
            uint32_t w_dims[2];
            nnm_param *w = NULL;
            uint32_t i;
            w_dims[0] = fan_in;
            w_dims[1] = width;
            snprintf(w_name, sizeof w_name, "%s.W", layers[l]);
            snprintf(b_name, sizeof b_name, "%s.b", layers[l]);
            CHECK_OK(nnm_net_attach_param(net, w_name, NNM_DTYPE_F64, w_dims, 2, &w));
            CHECK_OK(nnm_net_attach_param(net, b_name, NNM_DTYPE_F64, &width, 1, NULL));
            for (i = 0; i < fan_in * width; ++i) values(&w->data)[i] = lcg_normal() * sqrt(2.0 / fan_in);
            fan_in = width;
        }
        CHECK_OK(nnm_net_attach_output(net, layers[l], NNM_DTYPE_F64, &width, 1, &out));
        if (prev == NULL) {
            uint32_t in_dim = IN_DIM;
            CHECK_OK(nnm_net_attach_input_placeholder(net, layers[l], NNM_DTYPE_F64, &in_dim, 1, NULL));
        } else {
            CHECK_OK(nnm_net_attach_input_view(net, layers[l], prev, NULL));
        }
        CHECK_OK(nnm_net_attach_cache(net, layers[l], NULL));
        prev = out;
    }
    return net;
}

/* ---- layers ---------------------------------------------------------------------------- */

static void fc_forward(nnm_net *net, nnm_cache *cache, uint32_t batch) {
    nnm_param *w = param(net, cache->name, "W"), *b = param(net, cache->name, "b");
    nnm_layer_data *in = nnm_net_input_get(net, cache->name);
    nnm_layer_data *out = nnm_net_output_get(net, cache->name);
    uint32_t n_in = w->data.dims[0], n_out = w->data.dims[1], i, j, k;
    const double *x = values(&in->data), *wv = values(&w->data), *bv = values(&b->data);
    double *y = values(&out->data);
    for (i = 0; i < batch; ++i)
        for (j = 0; j < n_out; ++j) {
            double s = bv[j];
            for (k = 0; k < n_in; ++k) s += x[i * n_in + k] * wv[k * n_out + j];
            y[i * n_out + j] = s;
        }
    /* What backward needs: shallow copies, never freed by the cache. */
    CHECK_OK(nnm_cache_push(cache, &in->data));
    CHECK_OK(nnm_cache_push(cache, &w->data));
}

static void fc_backward(nnm_net *net, nnm_cache *cache, uint32_t batch) {
    nnm_tensor x_t, w_t;
    nnm_param *w = param(net, cache->name, "W"), *b = param(net, cache->name, "b");
    nnm_layer_data *in = nnm_net_input_get(net, cache->name);
    nnm_layer_data *out = nnm_net_output_get(net, cache->name);
    uint32_t n_in = w->data.dims[0], n_out = w->data.dims[1], i, j, k;
    const double *dout = values(&out->diff), *x, *wv;
    double *dw = values(&w->diff), *db = values(&b->diff), *dx = values(&in->diff);

    CHECK_OK(nnm_cache_pop(cache, &w_t)); /* last in, first out */
    CHECK_OK(nnm_cache_pop(cache, &x_t));
    CHECK(w_t.data == w->data.data && w_t.ownership == NNM_OWNERSHIP_VIEW);
    x = values(&x_t);
    wv = values(&w_t);
    memset(dw, 0, w->diff.bytes);
    memset(db, 0, b->diff.bytes);
    for (i = 0; i < batch; ++i)
        for (j = 0; j < n_out; ++j) {
            double g = dout[i * n_out + j];
            db[j] += g;
            for (k = 0; k < n_in; ++k) dw[k * n_out + j] += x[i * n_in + k] * g;
        }
    if (dx == NULL) return; /* the net input's diff is a placeholder */
    for (i = 0; i < batch; ++i)
        for (k = 0; k < n_in; ++k) {
            double s = 0.0;
            for (j = 0; j < n_out; ++j) s += dout[i * n_out + j] * wv[k * n_out + j];
            dx[i * n_in + k] = s;
        }
}

static void relu_forward(nnm_net *net, nnm_cache *cache, uint32_t batch) {
    nnm_layer_data *in = nnm_net_input_get(net, cache->name);
    nnm_layer_data *out = nnm_net_output_get(net, cache->name);
    uint32_t n = out->data.dims[1], dims[2], i;
    const double *x = values(&in->data);
    double *y = values(&out->data);
    nnm_tensor mask;
    dims[0] = batch;
    dims[1] = n;
    /* A buffer the cache owns: reused from the previous iteration's pop. */
    CHECK_OK(nnm_cache_push_new(cache, NNM_DTYPE_U8, dims, 2, &mask));
    for (i = 0; i < batch * n; ++i) {
        ((uint8_t *)mask.data)[i] = x[i] > 0.0;
        y[i] = x[i] > 0.0 ? x[i] : 0.0;
    }
}

static void relu_backward(nnm_net *net, nnm_cache *cache, uint32_t batch) {
    nnm_layer_data *in = nnm_net_input_get(net, cache->name);
    nnm_layer_data *out = nnm_net_output_get(net, cache->name);
    uint32_t n = out->data.dims[1], i;
    const double *dout = values(&out->diff);
    double *dx = values(&in->diff);
    nnm_tensor mask;
    CHECK_OK(nnm_cache_pop(cache, &mask));
    CHECK(mask.ownership == NNM_OWNERSHIP_OWNED && mask.dims[0] == batch && mask.dims[1] == n);
    for (i = 0; i < batch * n; ++i) dx[i] = ((const uint8_t *)mask.data)[i] ? dout[i] : 0.0;
}

/* ---- forward, loss, backward, SGD ---------------------------------------------------------- */

static void forward(nnm_net *net, double *x, uint32_t batch) {
    nnm_cache *c;
    CHECK_OK(nnm_net_input_bind(nnm_net_input_get(net, "fc1"), NNM_MEM_KIND_HOST, x, NULL, batch));
    list_for_each_entry(c, &net->caches, node) {
        if (is_fc(c))
            fc_forward(net, c, batch);
        else
            relu_forward(net, c, batch);
    }
}

/* Mean softmax cross-entropy of fc3's scores; writes dloss/dscores into fc3's diff. */
static double softmax_loss(nnm_net *net, const int *labels, uint32_t batch) {
    nnm_layer_data *out = list_last_entry(&net->outputs, nnm_layer_data, node);
    const double *s = values(&out->data);
    double *ds = values(&out->diff), loss = 0.0;
    uint32_t i, j;
    CHECK(strcmp(out->name, "fc3") == 0);
    for (i = 0; i < batch; ++i) {
        double top = s[i * CLASSES], sum = 0.0;
        for (j = 1; j < CLASSES; ++j)
            if (s[i * CLASSES + j] > top) top = s[i * CLASSES + j];
        for (j = 0; j < CLASSES; ++j) sum += exp(s[i * CLASSES + j] - top);
        for (j = 0; j < CLASSES; ++j) {
            double p = exp(s[i * CLASSES + j] - top) / sum;
            ds[i * CLASSES + j] = (p - ((int)j == labels[i] ? 1.0 : 0.0)) / batch;
        }
        loss -= s[i * CLASSES + labels[i]] - top - log(sum);
    }
    return loss / batch;
}

static void backward(nnm_net *net, uint32_t batch) {
    nnm_cache *c;
    list_for_each_entry_reverse(c, &net->caches, node) {
        if (is_fc(c))
            fc_backward(net, c, batch);
        else
            relu_backward(net, c, batch);
    }
}

static void sgd(nnm_net *net, double lr) {
    nnm_param *p;
    list_for_each_entry(p, &net->params, node) {
        uint64_t i, n = p->data.bytes / p->data.elem_size;
        if (!trainable(p)) continue; /* frozen */
        for (i = 0; i < n; ++i) values(&p->data)[i] -= lr * values(&p->diff)[i];
    }
}

/* Loss only: forward, then drop what forward cached (no backward follows). */
static double loss_only(nnm_net *net, double *x, const int *labels, uint32_t batch) {
    nnm_cache *c;
    double loss;
    forward(net, x, batch);
    loss = softmax_loss(net, labels, batch);
    list_for_each_entry(c, &net->caches, node) CHECK_OK(nnm_cache_clear(c));
    return loss;
}

/* ---- the checks -------------------------------------------------------------------------- */

static void check_gradients(nnm_net *net) {
    enum { BATCH = 8 };
    const double h = 1e-5;
    double *analytic, worst = 0.0;
    size_t total = 0, at = 0;
    int checked = 0;
    nnm_param *p;
    nnm_cache *c;

    list_for_each_entry(p, &net->params, node) if (trainable(p)) total += p->diff.bytes / sizeof(double);
    analytic = (double *)malloc(total * sizeof(double));
    CHECK(analytic != NULL);
    if (analytic == NULL) return;
    forward(net, train_x, BATCH);
    softmax_loss(net, train_y, BATCH);
    backward(net, BATCH);
    list_for_each_entry(c, &net->caches, node) CHECK(c->count == 0); /* every push popped */
    list_for_each_entry(p, &net->params, node) {
        if (!trainable(p)) continue;
        memcpy(analytic + at, p->diff.data, p->diff.bytes);
        at += p->diff.bytes / sizeof(double);
    }
    at = 0;
    list_for_each_entry(p, &net->params, node) {
        size_t n = p->data.bytes / sizeof(double), i, step = n > 24 ? n / 24 : 1;
        if (!trainable(p)) continue;
        for (i = 0; i < n; i += step) {
            double *v = values(&p->data) + i, keep = *v, up, down, numeric, err;
            *v = keep + h;
            up = loss_only(net, train_x, train_y, BATCH);
            *v = keep - h;
            down = loss_only(net, train_x, train_y, BATCH);
            *v = keep;
            numeric = (up - down) / (2.0 * h);
            err = fabs(numeric - analytic[at + i]) / fmax(fabs(numeric) + fabs(analytic[at + i]), 1e-7);
            if (err > worst) worst = err;
            ++checked;
        }
        at += n;
    }
    free(analytic);
    printf("gradient check: %d entries, worst relative error %.2e\n", checked, worst);
    CHECK(checked > 100);
    CHECK(worst < 1e-6);
}

static double accuracy(nnm_net *net) {
    int right = 0, i, j;
    uint32_t b;
    for (b = 0; b < SAMPLES; b += MAX_BATCH) {
        const double *s;
        loss_only(net, train_x + b * IN_DIM, train_y + b, MAX_BATCH);
        s = values(&list_last_entry(&net->outputs, nnm_layer_data, node)->data);
        for (i = 0; i < MAX_BATCH; ++i) {
            int best = 0;
            for (j = 1; j < CLASSES; ++j)
                if (s[i * CLASSES + j] > s[i * CLASSES + best]) best = j;
            right += best == train_y[b + i];
        }
    }
    return (double)right / SAMPLES;
}

static void train(nnm_net *net) {
    double first = 0.0, last = 0.0;
    int epoch;
    uint32_t b;
    for (epoch = 0; epoch < 150; ++epoch) {
        double sum = 0.0;
        for (b = 0; b < SAMPLES; b += MAX_BATCH) {
            forward(net, train_x + b * IN_DIM, MAX_BATCH);
            sum += softmax_loss(net, train_y + b, MAX_BATCH);
            backward(net, MAX_BATCH);
            sgd(net, 0.1);
        }
        if (epoch == 0) first = sum / (SAMPLES / MAX_BATCH);
        last = sum / (SAMPLES / MAX_BATCH);
    }
    printf("training: loss %.4f -> %.4f, accuracy %.3f\n", first, last, accuracy(net));
    CHECK(last < 0.25 * first);
    CHECK(accuracy(net) >= 0.95);
}

/* Walks the lists with the macros and checks them against the report. */
static void check_lists(nnm_net *net) {
    static const char *const order[] = {"fc1", "relu1", "fc2", "relu2", "fc3"};
    nnm_param *p;
    nnm_layer_data *d, *prev = NULL;
    nnm_cache *c, *c_next;
    nnm_net_report r;
    uint64_t param_owned = 0, param_ref = 0, out_owned = 0, in_ref = 0;
    int i = 0;

    list_for_each_entry(p, &net->params, node) {
        if (p->data.ownership == NNM_OWNERSHIP_OWNED) param_owned += p->data.bytes + p->diff.bytes;
        else param_ref += p->data.bytes + p->diff.bytes;
        CHECK(nnm_net_param_get(net, p->name) == p);
    }
    CHECK(list_count(&net->params) == 7); /* 3 x (W, b) and the frozen embedding */
    CHECK(strcmp(list_first_entry(&net->params, nnm_param, node)->name, "fc1.W") == 0);
    list_for_each_entry(d, &net->outputs, node) {
        CHECK(strcmp(d->name, order[i++]) == 0);
        CHECK(d->data.ownership == NNM_OWNERSHIP_OWNED && d->data.dims[0] == MAX_BATCH);
        out_owned += d->data.bytes + d->diff.bytes;
    }
    i = 0;
    list_for_each_entry(d, &net->inputs, node) {
        CHECK(strcmp(d->name, order[i++]) == 0);
        if (prev == NULL) {
            CHECK(d->data.mem_kind == NNM_MEM_KIND_PLACEHOLDER || d->data.ownership == NNM_OWNERSHIP_BORROWED);
            CHECK(d->diff.mem_kind == NNM_MEM_KIND_PLACEHOLDER && d->diff.data == NULL);
        } else {
            /* A view of the output before it: same buffers, owns nothing. */
            CHECK(d->data.ownership == NNM_OWNERSHIP_VIEW && d->data.data == prev->data.data);
            CHECK(d->diff.data == prev->diff.data);
        }
        in_ref += (uint64_t)MAX_BATCH * d->data.bytes / d->data.dims[0] * 2;
        prev = nnm_net_output_get(net, d->name); /* the next input views this output */
    }
    i = 0;
    list_for_each_entry_safe(c, c_next, &net->caches, node) {
        CHECK(strcmp(c->name, order[i++]) == 0 && c->count == 0);
        CHECK(nnm_net_cache_get(net, c->name) == c);
    }
    CHECK(list_is_singular(&net->caches) == 0 && !list_empty(&net->caches));

    CHECK_OK(nnm_net_get_report(net, &r));
    printf("report at max batch %u: params %llu B, outputs %llu B, inputs %llu B (views, owned %llu), "
           "caches %llu B; total owned %llu B\n",
           r.max_batch, (unsigned long long)r.params.owned_bytes, (unsigned long long)r.outputs.owned_bytes,
           (unsigned long long)r.inputs.referenced_bytes, (unsigned long long)r.inputs.owned_bytes,
           (unsigned long long)r.caches.owned_bytes, (unsigned long long)r.total_owned_bytes);
    CHECK(r.max_batch == MAX_BATCH);
    CHECK(r.params.entries == 7 && r.params.tensors == 14);
    CHECK(r.params.owned_bytes == param_owned && r.params.referenced_bytes == param_ref);
    CHECK(r.outputs.entries == 5 && r.outputs.owned_bytes == out_owned);
    CHECK(r.inputs.entries == 5 && r.inputs.owned_bytes == 0 && r.inputs.referenced_bytes == in_ref);
    /* Relu masks kept for reuse: u8, [MAX_BATCH, width] each. */
    CHECK(r.caches.entries == 5 && r.caches.tensors == 0);
    CHECK(r.caches.owned_bytes == (uint64_t)MAX_BATCH * (H1 + H2));
    CHECK(r.total_owned_bytes == r.params.owned_bytes + r.outputs.owned_bytes + r.caches.owned_bytes);
}

/* Every error path: the status, a message, and nothing changed. */
static void check_errors(void) {
    nnm_net *net = NULL, *never = NULL;
    nnm_param *p = NULL, *out_p = (nnm_param *)NULL;
    nnm_cache *cache = NULL;
    nnm_layer_data *out = NULL, *x = NULL, *view = NULL;
    nnm_tensor t;
    nnm_net_report r;
    size_t count = 0, i;
    uint32_t dims[2] = {2, 3}, bad_dims[1] = {0};
    char long_name[NNM_NAME_MAX + 2];
    static double caller_data[6], caller_diff[6];

    /* A net of batch size 0 waits for its first batched attachment: the
     * calls that take sample dimensions are refused until then. */
    CHECK_OK(nnm_net_new(0, &never));
    CHECK(never != NULL && never->max_batch == 0);
    CHECK_FAILS(nnm_net_attach_output(never, "o", NNM_DTYPE_F32, dims, 1, NULL), NNM_WRONG_STATE);
    CHECK_ERROR_HAS("batch size is not decided yet");
    nnm_net_free(never);
    CHECK_FAILS(nnm_net_new(4, NULL), NNM_NULL_ARGUMENT);
    CHECK_OK(nnm_net_new(4, &net));

    CHECK_OK(nnm_net_attach_param(net, "w", NNM_DTYPE_F32, dims, 2, &p));
    CHECK_FAILS(nnm_net_attach_param(net, "w", NNM_DTYPE_F32, dims, 2, &out_p), NNM_ALREADY_EXISTS);
    CHECK(strstr(nnm_last_error(), "param \"w\" already exists") != NULL);
    CHECK(out_p == NULL);
    CHECK_FAILS(nnm_net_attach_param(NULL, "v", NNM_DTYPE_F32, dims, 2, NULL), NNM_NULL_ARGUMENT);
    CHECK(strcmp(nnm_last_error(), "net is NULL") == 0);
    CHECK_FAILS(nnm_net_attach_param(net, NULL, NNM_DTYPE_F32, dims, 2, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_net_attach_param(net, "v", NNM_DTYPE_F32, NULL, 2, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_net_attach_param(net, "v", 99, dims, 2, NULL), NNM_INVALID_ARGUMENT);
    CHECK(strstr(nnm_last_error(), "dtype 99") != NULL);
    CHECK_FAILS(nnm_net_attach_param(net, "v", NNM_DTYPE_F32, dims, 9, NULL), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_net_attach_param(net, "v", NNM_DTYPE_F32, bad_dims, 1, NULL), NNM_INVALID_ARGUMENT);
    CHECK(strstr(nnm_last_error(), "dimension 0 is 0") != NULL);
    CHECK_FAILS(nnm_net_attach_param(net, "", NNM_DTYPE_F32, dims, 2, NULL), NNM_INVALID_ARGUMENT);

    /* A name one byte too long is refused, never truncated; the longest fits. */
    memset(long_name, 'n', NNM_NAME_MAX + 1);
    long_name[NNM_NAME_MAX + 1] = '\0';
    CHECK_FAILS(nnm_net_attach_param(net, long_name, NNM_DTYPE_F32, dims, 2, NULL), NNM_INVALID_ARGUMENT);
    CHECK(strstr(nnm_last_error(), "never truncated") != NULL);
    long_name[NNM_NAME_MAX] = '\0';
    CHECK_OK(nnm_net_attach_param(net, long_name, NNM_DTYPE_F32, dims, 2, &out_p));
    CHECK(out_p != NULL && strcmp(out_p->name, long_name) == 0 && nnm_net_param_get(net, long_name) == out_p);

    /* Missing names: NULL and a message. */
    CHECK(nnm_net_param_get(net, "missing") == NULL);
    CHECK(strcmp(nnm_last_error(), "no param is named \"missing\"") == 0);
    CHECK(nnm_net_param_get(net, NULL) == NULL && strcmp(nnm_last_error(), "name is NULL") == 0);
    CHECK(nnm_net_param_get(NULL, "w") == NULL && strcmp(nnm_last_error(), "net is NULL") == 0);
    CHECK(nnm_net_output_get(net, "w") == NULL && strstr(nnm_last_error(), "no output") != NULL);
    CHECK(nnm_net_input_get(net, "w") == NULL && strstr(nnm_last_error(), "no input") != NULL);
    CHECK(nnm_net_cache_get(net, "w") == NULL && strstr(nnm_last_error(), "no cache") != NULL);

    /* Borrowed memory: never freed (caller_* are static: freeing them would crash). */
    CHECK_OK(nnm_net_attach_param_borrowed(net, "frozen", NNM_DTYPE_F64, dims, 2, NNM_MEM_KIND_HOST,
                                           caller_data, caller_diff, NULL));
    CHECK_FAILS(nnm_net_attach_param_borrowed(net, "b2", NNM_DTYPE_F64, dims, 2, NNM_MEM_KIND_HOST, NULL, NULL,
                                              NULL),
                NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_net_attach_param_borrowed(net, "b2", NNM_DTYPE_F64, dims, 2, NNM_MEM_KIND_PLACEHOLDER,
                                              caller_data, NULL, NULL),
                NNM_INVALID_ARGUMENT);

    /* Outputs and inputs. */
    CHECK_OK(nnm_net_attach_output(net, "fc", NNM_DTYPE_F32, dims, 1, &out));
    CHECK_FAILS(nnm_net_attach_output(net, "fc", NNM_DTYPE_F32, dims, 1, NULL), NNM_ALREADY_EXISTS);
    CHECK_FAILS(nnm_net_attach_output(net, "o8", NNM_DTYPE_F32, dims, 8, NULL), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_net_attach_input_view(net, "in", NULL, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_net_attach_input_view(net, "in", (const nnm_layer_data *)(void *)p, NULL),
                NNM_INVALID_ARGUMENT);
    CHECK_OK(nnm_net_attach_input_view(net, "in", out, &view));
    CHECK_FAILS(nnm_net_attach_input_view(net, "in2", view, NULL), NNM_INVALID_ARGUMENT);
    CHECK(strstr(nnm_last_error(), "not an output of this net") != NULL);
    CHECK_OK(nnm_net_attach_input_placeholder(net, "x", NNM_DTYPE_F32, dims, 2, &x));
    CHECK_FAILS(nnm_net_input_bind(x, NNM_MEM_KIND_HOST, caller_data, NULL, 0), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_net_input_bind(x, NNM_MEM_KIND_HOST, caller_data, NULL, 5), NNM_INVALID_ARGUMENT);
    CHECK(strstr(nnm_last_error(), "batch 5 is outside 1..=4") != NULL);
    CHECK_FAILS(nnm_net_input_bind(view, NNM_MEM_KIND_HOST, caller_data, NULL, 1), NNM_WRONG_STATE);
    CHECK_FAILS(nnm_net_input_bind(out, NNM_MEM_KIND_HOST, caller_data, NULL, 1), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_net_input_bind(NULL, NNM_MEM_KIND_HOST, caller_data, NULL, 1), NNM_NULL_ARGUMENT);

    /* Caches. */
    CHECK_OK(nnm_net_attach_cache(net, "c", &cache));
    CHECK_FAILS(nnm_net_attach_cache(net, "c", NULL), NNM_ALREADY_EXISTS);
    CHECK_FAILS(nnm_cache_pop(cache, &t), NNM_WRONG_STATE);
    CHECK(strcmp(nnm_last_error(), "cache \"c\" is empty: pop without a matching push") == 0);
    CHECK_FAILS(nnm_cache_push(cache, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_cache_push(NULL, &p->data), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_cache_push((nnm_cache *)(void *)p, &p->data), NNM_INVALID_ARGUMENT);
    CHECK(strcmp(nnm_last_error(), "cache is not a valid nnm_cache") == 0);
    t = p->data;
    t.ndims = 9;
    CHECK_FAILS(nnm_cache_push(cache, &t), NNM_INVALID_ARGUMENT);
    CHECK(strcmp(nnm_last_error(), "tensor has ndims 9: a tensor has 0 (a scalar) to 8 dimensions") == 0);
    CHECK(cache->count == 0);
    t.ndims = 0; /* a scalar: nnm_tensor.ndims is 0 to NNM_MAX_DIMS */
    CHECK_OK(nnm_cache_push(cache, &t));
    CHECK_OK(nnm_cache_pop(cache, &t));
    CHECK(t.ndims == 0 && cache->count == 0);
    CHECK_FAILS(nnm_cache_pop(cache, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_cache_count(cache, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_cache_push_new(cache, NNM_DTYPE_F32, bad_dims, 1, NULL), NNM_INVALID_ARGUMENT);
    CHECK_OK(nnm_cache_push(cache, &p->data));
    CHECK_OK(nnm_cache_push_new(cache, NNM_DTYPE_F32, dims, 2, NULL)); /* left on the stack: freed with the net */
    CHECK_OK(nnm_cache_count(cache, &count));
    CHECK(count == 2 && cache->count == 2 && cache->tensors[0].data == p->data.data);
    CHECK(cache->tensors[1].ownership == NNM_OWNERSHIP_OWNED);
    /* Pushing a descriptor from the cache's own storage: each growth moves
     * the storage, so the copy must be taken first (ASan and valgrind see a
     * read of the old storage). */
    for (i = 0; i < 200; i++) {
        CHECK_OK(nnm_cache_push(cache, &cache->tensors[cache->count - 1 - i % 2]));
    }
    CHECK(cache->count == 202);
    for (i = 2; i < 202; i++) {
        /* Pushes alternate between copying the top (owned, stored as a view)
         * and the one below it. */
        CHECK(cache->tensors[i].data == cache->tensors[1].data && cache->tensors[i].ownership == NNM_OWNERSHIP_VIEW);
    }
    CHECK_OK(nnm_cache_clear(cache));
    CHECK(cache->count == 0);
    CHECK_OK(nnm_cache_push_new(cache, NNM_DTYPE_F32, dims, 2, NULL)); /* left on the stack: freed with the net */

    CHECK_FAILS(nnm_net_get_report(net, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_net_get_report(NULL, &r), NNM_NULL_ARGUMENT);

    /* A freed net is caught by the calls that look it up (attach, report, free). */
    nnm_net_free(net);
    CHECK_FAILS(nnm_net_attach_param(net, "late", NNM_DTYPE_F32, dims, 2, NULL), NNM_INVALID_ARGUMENT);
    CHECK(strstr(nnm_last_error(), "not a live nnm_net") != NULL);
    CHECK_FAILS(nnm_net_attach_cache(net, "late", NULL), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_net_get_report(net, &r), NNM_INVALID_ARGUMENT);
    nnm_net_free(net);
    CHECK(strstr(nnm_last_error(), "double free") != NULL);
    nnm_net_free(NULL);

    /* The borrowed buffers are still the caller's. */
    caller_data[5] = 1.0;
    caller_diff[5] = 2.0;
    CHECK(caller_data[5] + caller_diff[5] == 3.0);
}

int main(void) {
    nnm_net *net;
    make_data();
    net = mlp_init();
    CHECK(net != NULL);
    if (net != NULL) {
        /* A frozen, borrowed param rides along in the list; SGD skips it. */
        static double frozen[IN_DIM];
        uint32_t dim = IN_DIM;
        CHECK_OK(nnm_net_attach_param_borrowed(net, "embedding", NNM_DTYPE_F64, &dim, 1, NNM_MEM_KIND_HOST,
                                               frozen, NULL, NULL));
        check_gradients(net);
        train(net);
        /* One more step: backward leaves the relu masks as spares for reuse. */
        forward(net, train_x, MAX_BATCH);
        softmax_loss(net, train_y, MAX_BATCH);
        backward(net, MAX_BATCH);
        check_lists(net);
        nnm_net_free(net); /* every owned buffer, once; never frozen[] */
    }
    check_errors();
    return nnm_check_report();
}
