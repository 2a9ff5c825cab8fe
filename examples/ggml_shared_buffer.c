/*
 * One compute buffer for graphs that never run at once, with nnmem's
 * ggml-alloc.c: a draft model and a main model, each with its own graph
 * allocator, sharing their buffer (nnm_ggml_gallocr_share); and one
 * allocator reserved for a prompt graph and a one-token graph at once
 * (nnm_ggml_gallocr_reserve_graphs).
 *
 * Build: with ggml built through nnmem_ggml_alloc(ggml-base) (see nnmem's
 * README, "ggml: ggml-alloc.c"), link ggml and include
 * <nnmem/compat/ggml/ggml-alloc-nnmem.h>. Prints the buffer sizes and
 * checks that every result equals the one computed with separate buffers.
 */
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#include <nnmem/compat/ggml/ggml-alloc-nnmem.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond);                                         \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

/* A two-layer feed-forward model: its weights in their own buffer. */
struct model {
    int n_embd, n_ff;
    struct ggml_context * ctx;
    ggml_backend_buffer_t buffer;
    struct ggml_tensor * w[2][2]; /* [layer][up, down] */
};

static uint32_t rng = 1;
static float next_random(void) {
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / (float)(1u << 24) - 0.5f;
}

static void fill(struct ggml_tensor * t) {
    size_t n = (size_t)ggml_nelements(t);
    float * v = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        v[i] = next_random();
    }
    ggml_backend_tensor_set(t, v, 0, n * sizeof(float));
    free(v);
}

static struct model model_new(ggml_backend_t backend, int n_embd, int n_ff) {
    struct model m = {n_embd, n_ff, NULL, NULL, {{NULL, NULL}, {NULL, NULL}}};
    struct ggml_init_params params = {8 * ggml_tensor_overhead(), NULL, true};
    m.ctx = ggml_init(params);
    for (int l = 0; l < 2; l++) {
        m.w[l][0] = ggml_new_tensor_2d(m.ctx, GGML_TYPE_F32, n_embd, n_ff);
        m.w[l][1] = ggml_new_tensor_2d(m.ctx, GGML_TYPE_F32, n_ff, n_embd);
    }
    m.buffer = ggml_backend_alloc_ctx_tensors(m.ctx, backend);
    CHECK(m.buffer != NULL);
    for (struct ggml_tensor * t = ggml_get_first_tensor(m.ctx); t; t = ggml_get_next_tensor(m.ctx, t)) {
        fill(t);
    }
    return m;
}

/* The graph of `n_tokens` tokens through the model; its input and output. */
struct graph {
    struct ggml_context * ctx;
    struct ggml_cgraph * gf;
    struct ggml_tensor * in, * out;
};

static struct graph graph_new(const struct model * m, int n_tokens) {
    struct graph g;
    struct ggml_init_params params = {64 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true};
    g.ctx = ggml_init(params);
    g.gf = ggml_new_graph(g.ctx);
    g.in = ggml_new_tensor_2d(g.ctx, GGML_TYPE_F32, m->n_embd, n_tokens);
    ggml_set_input(g.in);
    struct ggml_tensor * x = g.in;
    for (int l = 0; l < 2; l++) {
        struct ggml_tensor * h = ggml_silu(g.ctx, ggml_mul_mat(g.ctx, m->w[l][0], ggml_rms_norm(g.ctx, x, 1e-5f)));
        x = ggml_add(g.ctx, ggml_mul_mat(g.ctx, m->w[l][1], h), x);
    }
    g.out = ggml_soft_max(g.ctx, x);
    ggml_set_output(g.out);
    ggml_build_forward_expand(g.gf, g.out);
    return g;
}

/* Allocates the graph with `galloc`, computes it on a fixed input and
 * returns its output's first value's bits and a checksum of all. */
static uint64_t run(ggml_backend_t backend, ggml_gallocr_t galloc, const struct model * m, int n_tokens) {
    struct graph g = graph_new(m, n_tokens);
    CHECK(ggml_gallocr_alloc_graph(galloc, g.gf));
    rng = 99;
    fill(g.in);
    CHECK(ggml_backend_graph_compute(backend, g.gf) == GGML_STATUS_SUCCESS);
    size_t n = (size_t)ggml_nelements(g.out);
    float * out = malloc(n * sizeof(float));
    ggml_backend_tensor_get(g.out, out, 0, n * sizeof(float));
    uint64_t sum = 1469598103934665603ULL; /* FNV-1a over the bytes */
    for (size_t i = 0; i < n * sizeof(float); i++) {
        sum = (sum ^ ((const unsigned char *)out)[i]) * 1099511628211ULL;
    }
    free(out);
    ggml_free(g.ctx);
    return sum;
}

int main(void) {
    ggml_backend_t backend = ggml_backend_cpu_init();
    CHECK(backend != NULL);
    ggml_backend_buffer_type_t buft = ggml_backend_get_default_buffer_type(backend);
    struct model draft = model_new(backend, 64, 256);
    struct model main_model = model_new(backend, 128, 512);

    /* Separate buffers, as two contexts have today. */
    ggml_gallocr_t alone_draft = ggml_gallocr_new(buft), alone_main = ggml_gallocr_new(buft);
    uint64_t want_draft = run(backend, alone_draft, &draft, 16);
    uint64_t want_main = run(backend, alone_main, &main_model, 16);
    size_t separate = ggml_gallocr_get_buffer_size(alone_draft, 0) + ggml_gallocr_get_buffer_size(alone_main, 0);

    /* One buffer for both: the draft allocator shares the main one's. */
    ggml_gallocr_t shared_draft = ggml_gallocr_new(buft), shared_main = ggml_gallocr_new(buft);
    CHECK(nnm_ggml_gallocr_share(shared_draft, shared_main));
    for (int round = 0; round < 3; round++) {
        CHECK(run(backend, shared_main, &main_model, 16) == want_main);
        CHECK(run(backend, shared_draft, &draft, 16) == want_draft);
    }
    size_t shared = ggml_gallocr_get_buffer_size(shared_main, 0);
    CHECK(ggml_gallocr_get_buffer_size(shared_draft, 0) == shared);
    CHECK(shared == ggml_gallocr_get_buffer_size(alone_main, 0));
    printf("draft + main model: separate buffers %zu B, one shared buffer %zu B\n", separate, shared);
    /* Freed in either order: the buffer goes with the last. */
    ggml_gallocr_free(shared_main);
    CHECK(run(backend, shared_draft, &draft, 16) == want_draft);
    ggml_gallocr_free(shared_draft);

    /* One allocator, reserved for a prompt graph and a one-token graph. */
    struct graph prompt = graph_new(&main_model, 64), token = graph_new(&main_model, 1);
    struct ggml_cgraph * both[2] = {token.gf, prompt.gf};
    ggml_gallocr_t galloc = ggml_gallocr_new(buft);
    CHECK(nnm_ggml_gallocr_reserve_graphs(galloc, both, 2));
    size_t reserved = ggml_gallocr_get_buffer_size(galloc, 0);
    ggml_gallocr_t prompt_alone = ggml_gallocr_new(buft);
    CHECK(ggml_gallocr_reserve(prompt_alone, prompt.gf));
    CHECK(reserved == ggml_gallocr_get_buffer_size(prompt_alone, 0));
    uint64_t want_token = run(backend, alone_main, &main_model, 1);
    for (int round = 0; round < 3; round++) {
        CHECK(run(backend, galloc, &main_model, 1) == want_token);
        CHECK(run(backend, galloc, &main_model, 16) == want_main);
        CHECK(ggml_gallocr_get_buffer_size(galloc, 0) == reserved);
    }
    printf("prompt and one-token graphs: one buffer of %zu B, never reallocated\n", reserved);
    CHECK(!nnm_ggml_gallocr_share(galloc, galloc));
    CHECK(!nnm_ggml_gallocr_reserve_graphs(galloc, both, 0));

    ggml_gallocr_free(prompt_alone);
    ggml_gallocr_free(galloc);
    ggml_gallocr_free(alone_draft);
    ggml_gallocr_free(alone_main);
    ggml_free(prompt.ctx);
    ggml_free(token.ctx);
    ggml_backend_buffer_free(draft.buffer);
    ggml_backend_buffer_free(main_model.buffer);
    ggml_free(draft.ctx);
    ggml_free(main_model.ctx);
    ggml_backend_free(backend);
    printf("ggml_shared_buffer: all passed\n");
    return 0;
}
