/*
 * Llama-style decoder graphs built with ggml's C API, allocated by nnmem's
 * ggml-alloc.c and by ggml's own (compiled beside it with its functions
 * renamed ref_*, see ggml_ref_names.h):
 * - small dimensions, computed on the CPU backend with random weights: the
 *   logits are bitwise identical;
 * - real dimensions (Llama-2-7B, TinyLlama-1.1B; no compute, weights and KV
 *   cache outside the compute buffer, as llama.cpp keeps them): nnmem's
 *   buffer is at most ggml's;
 * - every plan: no two tensors live at one step share a byte, except a
 *   tensor written in place over a parent read for the last time.
 * Prints one line per graph; exits non-zero on the first failure.
 */
#define _POSIX_C_SOURCE 199309L
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Declared in ggml's internal ggml-impl.h. */
bool ggml_op_can_inplace(enum ggml_op op);

/* ggml's own allocator, renamed. */
ggml_gallocr_t ref_ggml_gallocr_new(ggml_backend_buffer_type_t buft);
void ref_ggml_gallocr_free(ggml_gallocr_t galloc);
bool ref_ggml_gallocr_alloc_graph(ggml_gallocr_t galloc, struct ggml_cgraph * graph);
void ref_ggml_gallocr_reserve_n_size(ggml_gallocr_t galloc, struct ggml_cgraph * graph, const int * node_buffer_ids,
                                     const int * leaf_buffer_ids, size_t * sizes);
size_t ref_ggml_gallocr_get_buffer_size(ggml_gallocr_t galloc, int buffer_id);
bool ref_ggml_gallocr_reserve(ggml_gallocr_t galloc, struct ggml_cgraph * graph);

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                                       \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fprintf(stderr, "\n");                                                                                     \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

struct model_shape {
    const char * name;
    int n_embd, n_head, n_head_kv, n_layer, n_ff, n_vocab;
    int n_tokens, n_kv;
    bool flash;
};

/* The weights and the KV cache: their own context (and, when computed, their
 * own buffer). */
struct model {
    struct ggml_context * ctx;
    ggml_backend_buffer_t buffer;
    struct ggml_tensor * tok_embd_in; /* stands for the embedded prompt */
    struct ggml_tensor * output_norm, * output;
    struct layer {
        struct ggml_tensor * attn_norm, * wq, * wk, * wv, * wo;
        struct ggml_tensor * ffn_norm, * w1, * w2, * w3;
        struct ggml_tensor * k_cache, * v_cache;
    } * layers;
};

static struct model model_new(const struct model_shape * s) {
    struct model m;
    memset(&m, 0, sizeof m);
    size_t n_tensors = 4 + (size_t)s->n_layer * 11;
    struct ggml_init_params params = {n_tensors * ggml_tensor_overhead(), NULL, true};
    m.ctx = ggml_init(params);
    CHECK(m.ctx != NULL, "ggml_init");
    m.layers = calloc((size_t)s->n_layer, sizeof(struct layer));
    const int head_dim = s->n_embd / s->n_head;
    const int n_embd_kv = head_dim * s->n_head_kv;
    m.output_norm = ggml_new_tensor_1d(m.ctx, GGML_TYPE_F32, s->n_embd);
    m.output = ggml_new_tensor_2d(m.ctx, GGML_TYPE_F16, s->n_embd, s->n_vocab);
    for (int il = 0; il < s->n_layer; il++) {
        struct layer * l = &m.layers[il];
        l->attn_norm = ggml_new_tensor_1d(m.ctx, GGML_TYPE_F32, s->n_embd);
        l->wq = ggml_new_tensor_2d(m.ctx, GGML_TYPE_F16, s->n_embd, s->n_embd);
        l->wk = ggml_new_tensor_2d(m.ctx, GGML_TYPE_F16, s->n_embd, n_embd_kv);
        l->wv = ggml_new_tensor_2d(m.ctx, GGML_TYPE_F16, s->n_embd, n_embd_kv);
        l->wo = ggml_new_tensor_2d(m.ctx, GGML_TYPE_F16, s->n_embd, s->n_embd);
        l->ffn_norm = ggml_new_tensor_1d(m.ctx, GGML_TYPE_F32, s->n_embd);
        l->w1 = ggml_new_tensor_2d(m.ctx, GGML_TYPE_F16, s->n_embd, s->n_ff);
        l->w2 = ggml_new_tensor_2d(m.ctx, GGML_TYPE_F16, s->n_ff, s->n_embd);
        l->w3 = ggml_new_tensor_2d(m.ctx, GGML_TYPE_F16, s->n_embd, s->n_ff);
        l->k_cache = ggml_new_tensor_2d(m.ctx, GGML_TYPE_F16, n_embd_kv, s->n_kv);
        /* Without flash attention V is kept transposed, as llama.cpp does. */
        l->v_cache = s->flash ? ggml_new_tensor_2d(m.ctx, GGML_TYPE_F16, n_embd_kv, s->n_kv)
                              : ggml_new_tensor_2d(m.ctx, GGML_TYPE_F16, s->n_kv, n_embd_kv);
    }
    return m;
}

/* Random values, the same for the same seed. */
static uint64_t rng_state;
static float rng_uniform(void) {
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((rng_state >> 40) & 0xFFFFFF) / (float)0x1000000 - 0.5f;
}

static void fill_random(struct ggml_tensor * t, float scale) {
    size_t n = (size_t)ggml_nelements(t);
    if (t->type == GGML_TYPE_F32) {
        float * v = malloc(n * sizeof(float));
        for (size_t i = 0; i < n; i++) {
            v[i] = rng_uniform() * scale;
        }
        ggml_backend_tensor_set(t, v, 0, n * sizeof(float));
        free(v);
    } else {
        ggml_fp16_t * v = malloc(n * sizeof(ggml_fp16_t));
        for (size_t i = 0; i < n; i++) {
            v[i] = ggml_fp32_to_fp16(rng_uniform() * scale);
        }
        ggml_backend_tensor_set(t, v, 0, n * sizeof(ggml_fp16_t));
        free(v);
    }
}

struct graph {
    struct ggml_context * ctx;
    struct ggml_cgraph * gf;
    struct ggml_tensor * inp_embd, * inp_pos, * inp_mask, * logits;
};

/* One forward pass over n_tokens new tokens written at the end of an
 * n_kv-cell cache (the tokens before them already cached). */
static struct graph graph_build(const struct model_shape * s, const struct model * m) {
    struct graph g;
    struct ggml_init_params params = {(size_t)(GGML_DEFAULT_GRAPH_SIZE * 8) * ggml_tensor_overhead() +
                                          ggml_graph_overhead_custom(GGML_DEFAULT_GRAPH_SIZE * 8, false),
                                      NULL, true};
    g.ctx = ggml_init(params);
    CHECK(g.ctx != NULL, "ggml_init");
    g.gf = ggml_new_graph_custom(g.ctx, GGML_DEFAULT_GRAPH_SIZE * 8, false);
    const int T = s->n_tokens, head_dim = s->n_embd / s->n_head, n_embd_kv = head_dim * s->n_head_kv;
    const int kv_head = s->n_kv - T;
    const float kq_scale = 1.0f / sqrtf((float)head_dim);

    g.inp_embd = ggml_new_tensor_2d(g.ctx, GGML_TYPE_F32, s->n_embd, T);
    ggml_set_name(g.inp_embd, "inp_embd");
    ggml_set_input(g.inp_embd);
    g.inp_pos = ggml_new_tensor_1d(g.ctx, GGML_TYPE_I32, T);
    ggml_set_name(g.inp_pos, "inp_pos");
    ggml_set_input(g.inp_pos);
    g.inp_mask = ggml_new_tensor_2d(g.ctx, s->flash ? GGML_TYPE_F16 : GGML_TYPE_F32, s->n_kv, T);
    ggml_set_name(g.inp_mask, "inp_mask");
    ggml_set_input(g.inp_mask);

    struct ggml_tensor * inpL = g.inp_embd;
    for (int il = 0; il < s->n_layer; il++) {
        const struct layer * l = &m->layers[il];
        struct ggml_tensor * cur = ggml_mul(g.ctx, ggml_rms_norm(g.ctx, inpL, 1e-5f), l->attn_norm);
        struct ggml_tensor * q = ggml_reshape_3d(g.ctx, ggml_mul_mat(g.ctx, l->wq, cur), head_dim, s->n_head, T);
        struct ggml_tensor * k = ggml_reshape_3d(g.ctx, ggml_mul_mat(g.ctx, l->wk, cur), head_dim, s->n_head_kv, T);
        struct ggml_tensor * v = ggml_mul_mat(g.ctx, l->wv, cur);
        q = ggml_rope_ext(g.ctx, q, g.inp_pos, NULL, head_dim, 0, 4096, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
        k = ggml_rope_ext(g.ctx, k, g.inp_pos, NULL, head_dim, 0, 4096, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);

        /* Store the new K and V in the cache. */
        const size_t esz = ggml_element_size(l->k_cache);
        struct ggml_tensor * k_dst =
            ggml_view_2d(g.ctx, l->k_cache, n_embd_kv, T, l->k_cache->nb[1], (size_t)kv_head * l->k_cache->nb[1]);
        ggml_build_forward_expand(g.gf, ggml_cpy(g.ctx, ggml_reshape_2d(g.ctx, k, n_embd_kv, T), k_dst));
        struct ggml_tensor * v_dst;
        struct ggml_tensor * v_src = v;
        if (s->flash) {
            v_dst = ggml_view_2d(g.ctx, l->v_cache, n_embd_kv, T, l->v_cache->nb[1], (size_t)kv_head * l->v_cache->nb[1]);
        } else {
            v_dst = ggml_view_2d(g.ctx, l->v_cache, T, n_embd_kv, l->v_cache->nb[1], (size_t)kv_head * esz);
            v_src = ggml_transpose(g.ctx, v);
        }
        ggml_build_forward_expand(g.gf, ggml_cpy(g.ctx, v_src, v_dst));

        /* Attention over the whole cache. */
        struct ggml_tensor * qp = ggml_permute(g.ctx, q, 0, 2, 1, 3);
        struct ggml_tensor * kv_k = ggml_view_3d(g.ctx, l->k_cache, head_dim, s->n_kv, s->n_head_kv,
                                                 l->k_cache->nb[1], esz * head_dim, 0);
        struct ggml_tensor * attn;
        if (s->flash) {
            struct ggml_tensor * kv_v = ggml_view_3d(g.ctx, l->v_cache, head_dim, s->n_kv, s->n_head_kv,
                                                     l->v_cache->nb[1], esz * head_dim, 0);
            attn = ggml_flash_attn_ext(g.ctx, qp, kv_k, kv_v, g.inp_mask, kq_scale, 0.0f, 0.0f);
            attn = ggml_reshape_2d(g.ctx, attn, s->n_embd, T);
        } else {
            struct ggml_tensor * kq = ggml_mul_mat(g.ctx, kv_k, qp);
            kq = ggml_soft_max_ext(g.ctx, kq, g.inp_mask, kq_scale, 0.0f);
            struct ggml_tensor * kv_v = ggml_view_3d(g.ctx, l->v_cache, s->n_kv, head_dim, s->n_head_kv,
                                                     l->v_cache->nb[1], l->v_cache->nb[1] * head_dim, 0);
            struct ggml_tensor * kqv = ggml_mul_mat(g.ctx, kv_v, kq);
            attn = ggml_cont_2d(g.ctx, ggml_permute(g.ctx, kqv, 0, 2, 1, 3), s->n_embd, T);
        }
        cur = ggml_add(g.ctx, ggml_mul_mat(g.ctx, l->wo, attn), inpL);

        /* Feed-forward (SwiGLU). */
        struct ggml_tensor * ffn_inp = cur;
        cur = ggml_mul(g.ctx, ggml_rms_norm(g.ctx, cur, 1e-5f), l->ffn_norm);
        struct ggml_tensor * gate = ggml_silu(g.ctx, ggml_mul_mat(g.ctx, l->w1, cur));
        struct ggml_tensor * up = ggml_mul_mat(g.ctx, l->w3, cur);
        cur = ggml_mul_mat(g.ctx, l->w2, ggml_mul(g.ctx, gate, up));
        inpL = ggml_add(g.ctx, cur, ffn_inp);
    }
    struct ggml_tensor * cur = ggml_mul(g.ctx, ggml_rms_norm(g.ctx, inpL, 1e-5f), m->output_norm);
    g.logits = ggml_mul_mat(g.ctx, m->output, cur);
    ggml_set_name(g.logits, "logits");
    ggml_set_output(g.logits);
    ggml_build_forward_expand(g.gf, g.logits);
    return g;
}

/* The tensor whose memory `t` uses. */
static const struct ggml_tensor * root_of(const struct ggml_tensor * t) {
    while (t->view_src != NULL) {
        t = t->view_src;
    }
    return t;
}

struct use {
    const struct ggml_tensor * t;
    int first, last;
};

static int find_or_add(struct use * uses, int * n_uses, int cap, const struct ggml_tensor * t, int first) {
    for (int k = 0; k < *n_uses; k++) {
        if (uses[k].t == t) {
            return k;
        }
    }
    CHECK(*n_uses < cap, "more tensors than expected");
    uses[*n_uses].t = t;
    uses[*n_uses].first = first;
    uses[*n_uses].last = first;
    return (*n_uses)++;
}

/* No two tensors of the compute buffer live at one step share a byte,
 * except a node written in place over a parent it reads for the last time.
 * Lifetimes from the graph: from the step that writes a tensor (inputs and
 * leafs: before the first) to the last step that reads it or a view of it
 * (outputs: the end). */
static void check_no_overlap(struct ggml_cgraph * gf, ggml_backend_buffer_type_t buft) {
    const int n = ggml_graph_n_nodes(gf);
    const int cap = 2 * n + 1024;
    struct use * uses = calloc((size_t)cap, sizeof(struct use));
    int n_uses = 0;
    for (int i = 0; i < n; i++) {
        struct ggml_tensor * node = ggml_graph_node(gf, i);
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            if (node->src[j] == NULL) {
                continue;
            }
            const struct ggml_tensor * r = root_of(node->src[j]);
            if (r->buffer == NULL || ggml_backend_buffer_get_type(r->buffer) != buft) {
                continue;
            }
            int k = find_or_add(uses, &n_uses, cap, r, -1);
            if (uses[k].last < i) {
                uses[k].last = i;
            }
        }
        const struct ggml_tensor * r = root_of(node);
        if (r->buffer == NULL || ggml_backend_buffer_get_type(r->buffer) != buft) {
            continue;
        }
        int k = find_or_add(uses, &n_uses, cap, r, r == node ? i : -1);
        if (uses[k].last < i) {
            uses[k].last = i;
        }
        if (node->flags & GGML_TENSOR_FLAG_OUTPUT) {
            uses[k].last = n;
        }
    }
    for (int a = 0; a < n_uses; a++) {
        for (int b = 0; b < n_uses; b++) {
            const struct use * x = &uses[a], * y = &uses[b];
            if (a == b || x->t->buffer != y->t->buffer || x->first > y->first) {
                continue;
            }
            const char * x0 = x->t->data, * y0 = y->t->data;
            bool bytes = x0 < y0 + ggml_nbytes(y->t) && y0 < x0 + ggml_nbytes(x->t);
            bool steps = x->first <= y->last && y->first <= x->last && !(a > b && x->first == y->first);
            if (!bytes || !steps) {
                continue;
            }
            /* y written in place over x, read for the last time by y's op. */
            bool inplace = false;
            if (y->first >= 0 && x->last == y->first && x0 == y0) {
                struct ggml_tensor * node = ggml_graph_node(gf, y->first);
                for (int j = 0; j < GGML_MAX_SRC; j++) {
                    inplace = inplace || (node->src[j] && root_of(node->src[j]) == x->t);
                }
                inplace = inplace && ggml_op_can_inplace(node->op);
            }
            CHECK(inplace, "%s [steps %d..%d] and %s [steps %d..%d] share bytes", x->t->name, x->first, x->last,
                  y->t->name, y->first, y->last);
        }
    }
    free(uses);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Computes the graph with one allocator; returns the logits (malloc'd). */
static float * compute(const struct model_shape * s, const struct model * m, ggml_backend_t backend, bool ref,
                       size_t * buffer_size) {
    struct graph g = graph_build(s, m);
    ggml_backend_buffer_type_t buft = ggml_backend_get_default_buffer_type(backend);
    ggml_gallocr_t galloc = ref ? ref_ggml_gallocr_new(buft) : ggml_gallocr_new(buft);
    CHECK(ref ? ref_ggml_gallocr_alloc_graph(galloc, g.gf) : ggml_gallocr_alloc_graph(galloc, g.gf), "alloc_graph");
    *buffer_size = ref ? ref_ggml_gallocr_get_buffer_size(galloc, 0) : ggml_gallocr_get_buffer_size(galloc, 0);
    if (!ref) {
        check_no_overlap(g.gf, buft);
    }
    rng_state = 7;
    fill_random(g.inp_embd, 2.0f);
    int32_t * pos = malloc(sizeof(int32_t) * (size_t)s->n_tokens);
    for (int i = 0; i < s->n_tokens; i++) {
        pos[i] = s->n_kv - s->n_tokens + i;
    }
    ggml_backend_tensor_set(g.inp_pos, pos, 0, sizeof(int32_t) * (size_t)s->n_tokens);
    free(pos);
    size_t n_mask = (size_t)ggml_nelements(g.inp_mask);
    float * mask = malloc(sizeof(float) * n_mask);
    for (int t = 0; t < s->n_tokens; t++) {
        for (int c = 0; c < s->n_kv; c++) {
            mask[(size_t)t * s->n_kv + c] = c <= s->n_kv - s->n_tokens + t ? 0.0f : -INFINITY;
        }
    }
    if (g.inp_mask->type == GGML_TYPE_F16) {
        ggml_fp16_t * h = malloc(sizeof(ggml_fp16_t) * n_mask);
        ggml_fp32_to_fp16_row(mask, h, (int64_t)n_mask);
        ggml_backend_tensor_set(g.inp_mask, h, 0, sizeof(ggml_fp16_t) * n_mask);
        free(h);
    } else {
        ggml_backend_tensor_set(g.inp_mask, mask, 0, sizeof(float) * n_mask);
    }
    free(mask);
    CHECK(ggml_backend_graph_compute(backend, g.gf) == GGML_STATUS_SUCCESS, "compute");
    size_t n_logits = (size_t)ggml_nelements(g.logits);
    float * logits = malloc(sizeof(float) * n_logits);
    ggml_backend_tensor_get(g.logits, logits, 0, sizeof(float) * n_logits);
    ref ? ref_ggml_gallocr_free(galloc) : ggml_gallocr_free(galloc);
    ggml_free(g.ctx);
    return logits;
}

static void small_graph(const struct model_shape * s, ggml_backend_t backend) {
    struct model m = model_new(s);
    m.buffer = ggml_backend_alloc_ctx_tensors(m.ctx, backend);
    CHECK(m.buffer != NULL, "weights buffer");
    size_t sizes[2];
    float * logits[2];
    for (int r = 0; r < 2; r++) {
        /* Same weights and cache contents for both. */
        rng_state = 12345;
        for (struct ggml_tensor * t = ggml_get_first_tensor(m.ctx); t; t = ggml_get_next_tensor(m.ctx, t)) {
            fill_random(t, 0.5f);
        }
        logits[r] = compute(s, &m, backend, r == 1, &sizes[r]);
    }
    size_t n = (size_t)s->n_vocab * (size_t)s->n_tokens;
    CHECK(memcmp(logits[0], logits[1], n * sizeof(float)) == 0, "%s: logits differ", s->name);
    CHECK(sizes[0] <= sizes[1], "%s: nnmem %zu B > ggml %zu B", s->name, sizes[0], sizes[1]);
    printf("computed %-38s logits identical (%zu values), buffer nnmem %zu B, ggml %zu B\n", s->name, n, sizes[0],
           sizes[1]);
    free(logits[0]);
    free(logits[1]);
    ggml_backend_buffer_free(m.buffer);
    ggml_free(m.ctx);
    free(m.layers);
}

/* Real dimensions: weights and cache get an address outside every buffer,
 * as tensors set externally; nothing is computed. */
static void real_graph(const struct model_shape * s, ggml_backend_buffer_type_t buft, int repeats) {
    struct model m = model_new(s);
    for (struct ggml_tensor * t = ggml_get_first_tensor(m.ctx); t; t = ggml_get_next_tensor(m.ctx, t)) {
        t->data = (void *)(uintptr_t)0x1000;
    }
    struct graph g = graph_build(s, &m);
    size_t size_nnm = 0, size_ref = 0;
    double best_nnm = 1e9, best_ref = 1e9;
    for (int r = 0; r < repeats; r++) {
        ggml_gallocr_t a = ggml_gallocr_new(buft);
        double t0 = now_s();
        ggml_gallocr_reserve_n_size(a, g.gf, NULL, NULL, &size_nnm);
        double t1 = now_s();
        ggml_gallocr_free(a);
        ggml_gallocr_t b = ref_ggml_gallocr_new(buft);
        double t2 = now_s();
        ref_ggml_gallocr_reserve_n_size(b, g.gf, NULL, NULL, &size_ref);
        double t3 = now_s();
        ref_ggml_gallocr_free(b);
        best_nnm = t1 - t0 < best_nnm ? t1 - t0 : best_nnm;
        best_ref = t3 - t2 < best_ref ? t3 - t2 : best_ref;
    }
    CHECK(size_nnm <= size_ref, "%s: nnmem %zu B > ggml %zu B", s->name, size_nnm, size_ref);
    /* Place it for real (the buffer is allocated, never touched) and check it. */
    ggml_gallocr_t a = ggml_gallocr_new(buft);
    CHECK(ggml_gallocr_alloc_graph(a, g.gf), "%s: alloc_graph", s->name);
    CHECK(ggml_gallocr_get_buffer_size(a, 0) == size_nnm, "%s: reserved size differs", s->name);
    check_no_overlap(g.gf, buft);
    ggml_gallocr_free(a);
    printf("real     %-38s %5d nodes  ggml %11zu B  nnmem %11zu B  ggml/nnmem %.3f  reserve ms ggml %.3f nnmem %.3f\n",
           s->name, ggml_graph_n_nodes(g.gf), size_ref, size_nnm, (double)size_ref / (double)size_nnm,
           best_ref * 1e3, best_nnm * 1e3);
    ggml_free(g.ctx);
    ggml_free(m.ctx);
    free(m.layers);
}

/* Real dimensions: Llama-2-7B and TinyLlama-1.1B (also what
 * c-tests/ggml/bench_shim.c times). */
static const struct model_shape real_shapes[] = {
    {"Llama-2-7B, prompt 512, KV 512", 4096, 32, 32, 32, 11008, 32000, 512, 512, false},
    {"Llama-2-7B, prompt 512, KV 4096", 4096, 32, 32, 32, 11008, 32000, 512, 4096, false},
    {"Llama-2-7B, prompt 512, KV 4096, flash", 4096, 32, 32, 32, 11008, 32000, 512, 4096, true},
    {"Llama-2-7B, 1 token, KV 4096, flash", 4096, 32, 32, 32, 11008, 32000, 1, 4096, true},
    {"Llama-2-7B, 1 token, KV 4096", 4096, 32, 32, 32, 11008, 32000, 1, 4096, false},
    {"TinyLlama-1.1B, prompt 512, KV 2048", 2048, 32, 4, 22, 5632, 32000, 512, 2048, false},
    {"TinyLlama-1.1B, prompt 512, KV 2048, flash", 2048, 32, 4, 22, 5632, 32000, 512, 2048, true},
    {"TinyLlama-1.1B, 1 token, KV 2048", 2048, 32, 4, 22, 5632, 32000, 1, 2048, false},
};
#define N_REAL_SHAPES (sizeof real_shapes / sizeof real_shapes[0])

#ifndef LLAMA_GRAPHS_NO_MAIN
int main(int argc, char ** argv) {
    int repeats = argc > 1 ? atoi(argv[1]) : 3;
    ggml_backend_t backend = ggml_backend_cpu_init();
    CHECK(backend != NULL, "cpu backend");
    ggml_backend_cpu_set_n_threads(backend, 1);
    const struct model_shape small[] = {
        {"small, prompt 8, KV 16", 64, 4, 2, 2, 160, 96, 8, 16, false},
        {"small, prompt 8, KV 16, flash attention", 64, 4, 2, 2, 160, 96, 8, 16, true},
        {"small, 1 token, KV 16", 64, 4, 2, 2, 160, 96, 1, 16, false},
        {"small, 1 token, KV 16, flash attention", 64, 4, 2, 2, 160, 96, 1, 16, true},
        {"wider, prompt 12, KV 32", 128, 8, 8, 3, 352, 200, 12, 32, false},
        {"wider, 1 token, KV 32, flash attention", 128, 8, 8, 3, 352, 200, 1, 32, true},
    };
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) {
        small_graph(&small[i], backend);
    }
    for (size_t i = 0; i < N_REAL_SHAPES; i++) {
        real_graph(&real_shapes[i], ggml_backend_get_default_buffer_type(backend), repeats);
    }
    ggml_backend_free(backend);
    printf("llama_graphs: all passed\n");
    return 0;
}
#endif
