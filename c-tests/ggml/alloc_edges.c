/*
 * Edges of nnmem's ggml-alloc.c that ggml's own tests do not reach, with
 * two graph allocators sharing one buffer (nnm_ggml_gallocr_share):
 * - a size-only reserve (ggml_gallocr_reserve_n_size) that needs a larger
 *   shared buffer than there is: the next alloc_graph reserves again and
 *   places every tensor inside its buffer;
 * - a graph still pointing into a shared buffer that another allocator has
 *   since reallocated: alloc_graph refuses it; the graph built anew is
 *   placed and computes.
 * Run by scripts/ggml-check.sh (also under valgrind).
 */
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#include <nnmem/compat/ggml/ggml-alloc-nnmem.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int failures;
#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond);                                         \
            failures++;                                                                                                \
        }                                                                                                              \
    } while (0)

struct graph {
    struct ggml_context * ctx;
    struct ggml_cgraph * gf;
    struct ggml_tensor * in, * out;
};

/* n x n input, a few element-wise and matrix steps; all in the compute
 * buffer. */
static struct graph graph_new(int n) {
    struct graph g;
    struct ggml_init_params params = {32 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true};
    g.ctx = ggml_init(params);
    g.gf = ggml_new_graph(g.ctx);
    g.in = ggml_new_tensor_2d(g.ctx, GGML_TYPE_F32, n, n);
    ggml_set_input(g.in);
    struct ggml_tensor * a = ggml_scale(g.ctx, g.in, 0.5f);
    struct ggml_tensor * b = ggml_mul_mat(g.ctx, a, g.in);
    struct ggml_tensor * c = ggml_add(g.ctx, ggml_silu(g.ctx, b), a);
    g.out = ggml_soft_max(g.ctx, c);
    ggml_set_output(g.out);
    ggml_build_forward_expand(g.gf, g.out);
    return g;
}

/* Every tensor the allocator placed lies inside its buffer. */
static void check_inside(struct ggml_cgraph * gf) {
    for (int i = 0; i < ggml_graph_n_nodes(gf); i++) {
        struct ggml_tensor * t = ggml_graph_node(gf, i);
        if (t->buffer == NULL) {
            continue;
        }
        const char * base = (const char *)ggml_backend_buffer_get_base(t->buffer);
        const char * data = (const char *)t->data;
        CHECK(data >= base && data + ggml_nbytes(t) <= base + ggml_backend_buffer_get_size(t->buffer));
    }
}

static float compute(ggml_backend_t backend, struct graph * g) {
    float * v = malloc(sizeof(float) * (size_t)ggml_nelements(g->in));
    for (int64_t i = 0; i < ggml_nelements(g->in); i++) {
        v[i] = (float)(i % 7) * 0.25f;
    }
    ggml_backend_tensor_set(g->in, v, 0, ggml_nbytes(g->in));
    free(v);
    CHECK(ggml_backend_graph_compute(backend, g->gf) == GGML_STATUS_SUCCESS);
    float first = 0.0f;
    ggml_backend_tensor_get(g->out, &first, 0, sizeof first);
    return first;
}

int main(void) {
    ggml_backend_t backend = ggml_backend_cpu_init();
    ggml_backend_buffer_type_t buft = ggml_backend_get_default_buffer_type(backend);

    /* A size-only reserve that needs more than the shared buffer holds. */
    {
        ggml_gallocr_t a = ggml_gallocr_new(buft), b = ggml_gallocr_new(buft);
        CHECK(nnm_ggml_gallocr_share(a, b));
        struct graph small = graph_new(8), large = graph_new(64);
        CHECK(ggml_gallocr_alloc_graph(b, small.gf));
        size_t sizes[1] = {0};
        ggml_gallocr_reserve_n_size(a, large.gf, NULL, NULL, sizes);
        CHECK(sizes[0] > ggml_gallocr_get_buffer_size(b, 0));
        CHECK(ggml_gallocr_alloc_graph(a, large.gf));
        check_inside(large.gf);
        CHECK(ggml_gallocr_get_buffer_size(a, 0) >= sizes[0]);
        ggml_free(small.ctx);
        ggml_free(large.ctx);
        ggml_gallocr_free(a);
        ggml_gallocr_free(b);
    }

    /* A graph still pointing into a shared buffer that has moved. */
    {
        ggml_gallocr_t a = ggml_gallocr_new(buft), b = ggml_gallocr_new(buft);
        CHECK(nnm_ggml_gallocr_share(a, b));
        struct graph gb = graph_new(8), ga = graph_new(64);
        CHECK(ggml_gallocr_alloc_graph(b, gb.gf));
        float want = compute(backend, &gb);
        CHECK(ggml_gallocr_alloc_graph(a, ga.gf)); /* grows the shared buffer: it moves */
        CHECK(!ggml_gallocr_alloc_graph(b, gb.gf)); /* gb's tensors point into the old one */
        ggml_free(gb.ctx);
        gb = graph_new(8);
        CHECK(ggml_gallocr_alloc_graph(b, gb.gf));
        check_inside(gb.gf);
        CHECK(compute(backend, &gb) == want);
        /* Without a move, the same graph object is placed again as ggml does. */
        CHECK(ggml_gallocr_alloc_graph(b, gb.gf));
        CHECK(compute(backend, &gb) == want);
        ggml_free(ga.ctx);
        ggml_free(gb.ctx);
        ggml_gallocr_free(b);
        ggml_gallocr_free(a);
    }

    ggml_backend_free(backend);
    if (failures) {
        fprintf(stderr, "alloc_edges: %d failed\n", failures);
        return 1;
    }
    printf("alloc_edges: all passed\n");
    return 0;
}
