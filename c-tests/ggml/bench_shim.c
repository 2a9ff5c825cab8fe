/*
 * A shared library that benches/ggml.rs (criterion) loads at run time: the
 * real-dimension Llama graphs of llama_graphs.c, reserved and allocated by
 * ggml's own allocator (which 0, its functions renamed ref_*) and by
 * nnmem's (which 1). Built by c-tests/ggml/CMakeLists.txt
 * (libnnmem_ggml_bench.so); scripts/ggml-bench.sh runs the benchmark.
 *
 * Each (graph, allocator) keeps its own graph and allocator, as a runtime
 * keeps its scheduler's: a reserve plans the same graph again; an
 * allocation places a graph whose tensors were taken out of the buffer
 * (nnm_ggml_bench_unplace, outside the timed part).
 */
#define LLAMA_GRAPHS_NO_MAIN
#include "llama_graphs.c"

struct bench_slot {
    struct model model;
    struct graph graph;
    ggml_gallocr_t galloc;
    bool reserved; /* with a buffer, for allocations */
};

static struct bench_slot bench_slots[N_REAL_SHAPES][2];
static ggml_backend_t bench_backend;

int nnm_ggml_bench_graphs(void);
const char * nnm_ggml_bench_name(int graph);
size_t nnm_ggml_bench_reserve(int graph, int which);
void nnm_ggml_bench_unplace(int graph, int which);
size_t nnm_ggml_bench_alloc(int graph, int which);

int nnm_ggml_bench_graphs(void) {
    return (int)N_REAL_SHAPES;
}

const char * nnm_ggml_bench_name(int graph) {
    return graph >= 0 && graph < (int)N_REAL_SHAPES ? real_shapes[graph].name : NULL;
}

static struct bench_slot * bench_slot(int graph, int which) {
    CHECK(graph >= 0 && graph < (int)N_REAL_SHAPES && (which == 0 || which == 1), "graph %d, allocator %d", graph,
          which);
    struct bench_slot * s = &bench_slots[graph][which];
    if (s->galloc == NULL) {
        if (bench_backend == NULL) {
            bench_backend = ggml_backend_cpu_init();
            CHECK(bench_backend != NULL, "cpu backend");
        }
        s->model = model_new(&real_shapes[graph]);
        for (struct ggml_tensor * t = ggml_get_first_tensor(s->model.ctx); t; t = ggml_get_next_tensor(s->model.ctx, t)) {
            t->data = (void *)(uintptr_t)0x1000; /* outside every buffer, as in llama_graphs */
        }
        s->graph = graph_build(&real_shapes[graph], &s->model);
        ggml_backend_buffer_type_t buft = ggml_backend_get_default_buffer_type(bench_backend);
        s->galloc = which ? ggml_gallocr_new(buft) : ref_ggml_gallocr_new(buft);
    }
    return s;
}

size_t nnm_ggml_bench_reserve(int graph, int which) {
    struct bench_slot * s = bench_slot(graph, which);
    size_t size = 0;
    if (which) {
        ggml_gallocr_reserve_n_size(s->galloc, s->graph.gf, NULL, NULL, &size);
    } else {
        ref_ggml_gallocr_reserve_n_size(s->galloc, s->graph.gf, NULL, NULL, &size);
    }
    s->reserved = false; /* reserve_n_size may let the buffer go */
    return size;
}

/* Takes the graph's tensors out of the compute buffer (data and buffer
 * cleared; weights and cache, set outside it, stay), reserving first if
 * needed, so that the next allocation places them all again. */
void nnm_ggml_bench_unplace(int graph, int which) {
    struct bench_slot * s = bench_slot(graph, which);
    if (!s->reserved) {
        /* A reserve with a buffer: ggml's alloc_graph trusts the sizes of
         * a reserve_n_size that left it none. */
        bool ok = which ? ggml_gallocr_reserve(s->galloc, s->graph.gf) && ggml_gallocr_alloc_graph(s->galloc, s->graph.gf)
                        : ref_ggml_gallocr_reserve(s->galloc, s->graph.gf) &&
                              ref_ggml_gallocr_alloc_graph(s->galloc, s->graph.gf);
        CHECK(ok, "%s: reserve and alloc_graph", real_shapes[graph].name);
        s->reserved = true;
    }
    struct ggml_cgraph * gf = s->graph.gf;
    for (int i = 0; i < ggml_graph_n_nodes(gf); i++) {
        struct ggml_tensor * node = ggml_graph_node(gf, i);
        for (int j = -1; j < GGML_MAX_SRC; j++) {
            struct ggml_tensor * t = j < 0 ? node : node->src[j];
            if (t != NULL && t->buffer != NULL) {
                t->buffer = NULL;
                t->data = NULL;
            }
        }
    }
}

size_t nnm_ggml_bench_alloc(int graph, int which) {
    struct bench_slot * s = bench_slot(graph, which);
    bool ok = which ? ggml_gallocr_alloc_graph(s->galloc, s->graph.gf)
                    : ref_ggml_gallocr_alloc_graph(s->galloc, s->graph.gf);
    CHECK(ok, "%s: alloc_graph", real_shapes[graph].name);
    return which ? ggml_gallocr_get_buffer_size(s->galloc, 0) : ref_ggml_gallocr_get_buffer_size(s->galloc, 0);
}
