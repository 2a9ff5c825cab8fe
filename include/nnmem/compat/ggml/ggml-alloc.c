/*
 * nnmem's ggml-alloc.c: ggml's graph allocator (`ggml-alloc.h`) with the
 * graph's tensors placed by nnmem's planner.
 *
 * Built in place of ggml's own `ggml/src/ggml-alloc.c` (same include paths:
 * ggml's `include/` and `src/`) and linked with nnmem; `nnmem_ggml_alloc()`
 * in nnmem's CMake package does both for a ggml target (README, "ggml:
 * ggml-alloc.c"). Written against the ggml that llama-cpp-python 0.3.36
 * vendors (ggml 0.25.3, with `ggml_gallocr_reserve_n_size` and the meta backend).
 *
 * What stays ggml's: the walk over the graph that decides when each tensor
 * is created and freed (leafs and inputs first, a tensor freed after its
 * last child and its last view, outputs never), views sharing their
 * source's memory, tensors that already have data left alone, one
 * allocator per distinct buffer type, buffers split into at most 16 chunks
 * of the buffer type's maximum size, re-reserving when the graph changed,
 * `ggml_tallocr` and `ggml_backend_alloc_ctx_tensors*`.
 *
 * What is nnmem's: instead of placing each tensor best-fit as the walk goes,
 * the walk records every tensor's first and last step and the parents it
 * may overwrite in place (ggml's rules: the op can run in place, the parent
 * is this allocator's, not an output, of the same layout and read for the
 * last time), and nnmem's planner places them all at once, deciding which
 * in-place merges to take (`nnm_planner_add_inplace`).
 *
 * Differences a user may see: buffers are at most the lower bound that
 * ggml's best fit leaves holes above (never larger on the graphs tested;
 * see the README); `ggml_tallocr_alloc` past the end of its buffer logs and
 * returns GGML_STATUS_ALLOC_FAILED instead of aborting; a planner failure
 * (out of memory) makes `ggml_gallocr_reserve*` log and return false.
 */
#include "ggml-alloc.h"
#include "ggml-backend-impl.h"
#include "ggml-impl.h"
#include "ggml.h"

#include <nnmem/compat/ggml/ggml-alloc-nnmem.h>
#include <nnmem/planner.h>

#include <assert.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NNM_GGML_MAX_CHUNKS 16

/* The planner's work budget per reserve, in work units: enough for its
 * heuristics on any graph, so that a reserve costs about what ggml's best
 * fit costs; -DNNM_COMPAT_GGML_WORK_LIMIT=<units> buys a longer search
 * (NNM_DEFAULT_WORK_LIMIT: the planner's default, 1 to 2 s). */
#ifndef NNM_COMPAT_GGML_WORK_LIMIT_PER_TENSOR
#define NNM_COMPAT_GGML_WORK_LIMIT_PER_TENSOR 256
#endif
#ifndef NNM_COMPAT_GGML_WORK_LIMIT_MIN
#define NNM_COMPAT_GGML_WORK_LIMIT_MIN 100000
#endif

/* Which ops may write their result over a source (ggml's list: their
 * backends read each element before writing it). */
bool ggml_op_can_inplace(enum ggml_op op) {
    switch (op) {
    case GGML_OP_SCALE:
    case GGML_OP_FILL:
    case GGML_OP_DIAG_MASK_ZERO:
    case GGML_OP_DIAG_MASK_INF:
    case GGML_OP_ADD:
    case GGML_OP_ADD_ID:
    case GGML_OP_ADD1:
    case GGML_OP_SUB:
    case GGML_OP_MUL:
    case GGML_OP_DIV:
    case GGML_OP_SQR:
    case GGML_OP_SQRT:
    case GGML_OP_LOG:
    case GGML_OP_UNARY:
    case GGML_OP_ROPE:
    case GGML_OP_ROPE_BACK:
    case GGML_OP_SILU_BACK:
    case GGML_OP_RMS_NORM:
    case GGML_OP_RMS_NORM_BACK:
    case GGML_OP_CLAMP:
    case GGML_OP_SOFT_MAX:
    case GGML_OP_SOFT_MAX_BACK:
        return true;
    default:
        return false;
    }
}

static size_t nnm_ggml_pad(size_t size, size_t alignment) {
    return (size + alignment - 1) / alignment * alignment;
}

/* ---- ggml_tallocr: a bump allocator over one buffer ---------------------- */

struct ggml_tallocr ggml_tallocr_new(ggml_backend_buffer_t buffer) {
    void * base = ggml_backend_buffer_get_base(buffer);
    size_t alignment = ggml_backend_buffer_get_alignment(buffer);
    assert(alignment && !(alignment & (alignment - 1)));
    size_t misaligned = (uintptr_t)base % alignment;
    struct ggml_tallocr talloc = {
        /*.buffer    = */ buffer,
        /*.base      = */ base,
        /*.alignment = */ alignment,
        /*.offset    = */ misaligned ? alignment - misaligned : 0,
    };
    return talloc;
}

enum ggml_status ggml_tallocr_alloc(struct ggml_tallocr * talloc, struct ggml_tensor * tensor) {
    size_t size = nnm_ggml_pad(ggml_backend_buffer_get_alloc_size(talloc->buffer, tensor), talloc->alignment);
    size_t capacity = ggml_backend_buffer_get_size(talloc->buffer);
    if (talloc->offset > capacity || size > capacity - talloc->offset) {
        GGML_LOG_ERROR("%s: not enough space in the buffer to allocate %s (needed %zu, available %zu)\n", __func__,
                       tensor->name, size, talloc->offset > capacity ? 0 : capacity - talloc->offset);
        return GGML_STATUS_ALLOC_FAILED;
    }
    void * addr = (char *)ggml_backend_buffer_get_base(talloc->buffer) + talloc->offset;
    talloc->offset += size;
    return ggml_backend_tensor_alloc(talloc->buffer, tensor, addr);
}

/* ---- the graph allocator ------------------------------------------------- */

/* Where a tensor lives: a chunk of its buffer and an offset in it. */
struct nnm_ggml_address {
    int chunk;
    size_t offset;
};

/* What the walk knows of one tensor (ggml's hash node). */
struct nnm_ggml_tensor_state {
    int n_children;
    int n_views;
    int buffer_id;
    int block;       /* index in galloc->blocks, or -1 */
    bool allocated;  /* holds a block of this allocator now */
};

/* A block of memory a tensor of the graph needs: its lifetime in steps of
 * the walk (0: before the first node, i + 1: node i) and, once planned,
 * where it lives. */
struct nnm_ggml_block {
    struct ggml_tensor * tensor;
    int buffer_id;
    int allocator;
    size_t size;     /* ggml_backend_buft_get_alloc_size, padded */
    size_t size_max; /* ggml_backend_buft_get_alloc_size, as recorded */
    int64_t first;
    int64_t last;
    size_t index;    /* in its allocator's planner */
    struct nnm_ggml_address addr;
};

/* An optional in-place merge: `child` may take `parent`'s memory. */
struct nnm_ggml_candidate {
    int parent;
    int child;
};

/* The chunks of one allocator's memory; shared by the allocators of
 * several graph allocators (nnm_ggml_gallocr_share), counted. */
struct nnm_ggml_vbuffer {
    ggml_backend_buffer_t chunks[NNM_GGML_MAX_CHUNKS];
    int refs;
    /* Counts the reallocations: tensors placed before the last one point
     * into chunks that are gone. */
    uint64_t generation;
};

/* One allocator per distinct buffer type: the buffer ids that share a type
 * share its blocks and its buffer, as in ggml. */
struct nnm_ggml_allocator {
    ggml_backend_buffer_type_t buft;
    size_t alignment;
    size_t max_chunk;
    int n_chunks;
    size_t chunk_size[NNM_GGML_MAX_CHUNKS];
    /* nnm_ggml_gallocr_reserve_graphs: the chunk sizes the other graphs need. */
    size_t floor[NNM_GGML_MAX_CHUNKS];
    struct nnm_ggml_vbuffer * buf;
    /* buf's generation when this allocator last placed a graph in it. */
    uint64_t placed_generation;
};

/* Where each tensor of the last reserved graph went, to see whether a
 * later graph still fits (ggml's needs_realloc rules). */
struct nnm_ggml_tensor_alloc {
    int buffer_id;
    int block; /* its block in galloc->blocks while planning, or -1 */
    struct nnm_ggml_address addr;
    size_t size_max; /* 0: preallocated, unused or a view */
};

struct nnm_ggml_node_alloc {
    struct nnm_ggml_tensor_alloc dst;
    struct nnm_ggml_tensor_alloc src[GGML_MAX_SRC];
};

struct ggml_gallocr {
    ggml_backend_buffer_type_t * bufts;    /* [n_buffers] */
    int * allocator_of;                    /* [n_buffers] */
    int n_buffers;
    struct nnm_ggml_allocator * allocators; /* [n_allocators] */
    int n_allocators;

    /* The walk's tensor states: an open-addressing table keyed by the
     * tensor's address, `n_slots` (a power of two) keys and states. Its
     * hash needs no division, where ggml's table's modulo was a quarter
     * of the walk. */
    struct ggml_tensor ** keys;
    struct nnm_ggml_tensor_state * states;
    size_t n_slots, n_used;
    int shift; /* 64 - log2(n_slots) */
    /* Per node of the walked graph, its slot then its sources' (-1: none):
     * looked up once, where the walk and the record read them three
     * times. */
    int * node_slots;
    size_t cap_node_slots;

    struct nnm_ggml_block * blocks;
    size_t n_blocks, cap_blocks;
    struct nnm_ggml_candidate * candidates;
    size_t n_candidates, cap_candidates;

    struct nnm_ggml_node_alloc * node_allocs;
    int n_nodes;
    struct nnm_ggml_tensor_alloc * leaf_allocs;
    int n_leafs;
    /* The last reservation no longer holds: the buffers changed under it
     * (shared since), or a plan failed part way (what it keeps of the
     * tensors half written); the next allocation reserves again. */
    bool stale;
};

ggml_gallocr_t ggml_gallocr_new_n(ggml_backend_buffer_type_t * bufts, int n_bufs) {
    GGML_ASSERT(n_bufs > 0);
    ggml_gallocr_t galloc = (ggml_gallocr_t)calloc(1, sizeof(struct ggml_gallocr));
    GGML_ASSERT(galloc != NULL);
    galloc->bufts = (ggml_backend_buffer_type_t *)calloc((size_t)n_bufs, sizeof(ggml_backend_buffer_type_t));
    galloc->allocator_of = (int *)calloc((size_t)n_bufs, sizeof(int));
    galloc->allocators = (struct nnm_ggml_allocator *)calloc((size_t)n_bufs, sizeof(struct nnm_ggml_allocator));
    GGML_ASSERT(galloc->bufts && galloc->allocator_of && galloc->allocators);
    galloc->n_buffers = n_bufs;
    for (int i = 0; i < n_bufs; i++) {
        galloc->bufts[i] = bufts[i];
        int a = 0;
        while (a < galloc->n_allocators && galloc->allocators[a].buft != bufts[i]) {
            a++;
        }
        if (a == galloc->n_allocators) {
            struct nnm_ggml_allocator * alloc = &galloc->allocators[galloc->n_allocators++];
            alloc->buft = bufts[i];
            alloc->alignment = ggml_backend_buft_get_alignment(bufts[i]);
            size_t max_size = ggml_backend_buft_get_max_size(bufts[i]);
            alloc->max_chunk = max_size < SIZE_MAX / 2 ? max_size : SIZE_MAX / 2;
        }
        galloc->allocator_of[i] = a;
    }
    return galloc;
}

ggml_gallocr_t ggml_gallocr_new(ggml_backend_buffer_type_t buft) {
    return ggml_gallocr_new_n(&buft, 1);
}

static void nnm_ggml_vbuffer_free_chunks(struct nnm_ggml_vbuffer * buf) {
    for (int c = 0; c < NNM_GGML_MAX_CHUNKS; c++) {
        ggml_backend_buffer_free(buf->chunks[c]);
        buf->chunks[c] = NULL;
    }
}

/* Drops one allocator's hold on `buf`; the last frees it. */
static void nnm_ggml_vbuffer_release(struct nnm_ggml_vbuffer * buf) {
    if (buf == NULL || --buf->refs > 0) {
        return;
    }
    nnm_ggml_vbuffer_free_chunks(buf);
    free(buf);
}

static struct nnm_ggml_vbuffer * nnm_ggml_vbuffer_new(void) {
    struct nnm_ggml_vbuffer * buf = (struct nnm_ggml_vbuffer *)calloc(1, sizeof(struct nnm_ggml_vbuffer));
    GGML_ASSERT(buf != NULL);
    buf->refs = 1;
    return buf;
}

static size_t nnm_ggml_vbuffer_size(const struct nnm_ggml_vbuffer * buf) {
    size_t size = 0;
    for (int c = 0; c < NNM_GGML_MAX_CHUNKS && buf->chunks[c]; c++) {
        size += ggml_backend_buffer_get_size(buf->chunks[c]);
    }
    return size;
}

/* The first buffer id of an allocator owns its vbuffer; the others alias it. */
static bool nnm_ggml_owns_buffer(ggml_gallocr_t galloc, int buffer_id) {
    for (int j = 0; j < buffer_id; j++) {
        if (galloc->allocator_of[j] == galloc->allocator_of[buffer_id]) {
            return false;
        }
    }
    return true;
}

void ggml_gallocr_free(ggml_gallocr_t galloc) {
    if (galloc == NULL) {
        return;
    }
    for (int a = 0; a < galloc->n_allocators; a++) {
        nnm_ggml_vbuffer_release(galloc->allocators[a].buf);
    }
    free(galloc->keys);
    free(galloc->states);
    free(galloc->node_slots);
    free(galloc->bufts);
    free(galloc->allocator_of);
    free(galloc->allocators);
    free(galloc->blocks);
    free(galloc->candidates);
    free(galloc->node_allocs);
    free(galloc->leaf_allocs);
    free(galloc);
}

/* What the walk knows of `t` (its `allocated`: ggml's is_own), added to
 * the table if new. */
static size_t nnm_ggml_slot(ggml_gallocr_t galloc, struct ggml_tensor * t) {
    const size_t mask = galloc->n_slots - 1;
    /* splitmix64's finalizer: tensors of one context lie at a fixed
     * stride, which a single multiply leaves in clusters. */
    uint64_t h = (uint64_t)(uintptr_t)t;
    h = (h ^ (h >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    h = (h ^ (h >> 27)) * UINT64_C(0x94D049BB133111EB);
    size_t i = (size_t)(h >> galloc->shift);
    while (galloc->keys[i] != t) {
        if (galloc->keys[i] == NULL) {
            /* Sized for twice the graph's nodes and leafs, which hold every
             * tensor the walk meets; ggml's own table aborts when full too. */
            if (galloc->n_used + 1 >= galloc->n_slots) {
                GGML_ABORT("%s: table full: %zu tensors met, over twice the graph's nodes and leafs", __func__,
                           galloc->n_used);
            }
            galloc->keys[i] = t;
            galloc->n_used++;
            break;
        }
        i = (i + 1) & mask;
    }
    return i;
}

static struct nnm_ggml_tensor_state * nnm_ggml_state(ggml_gallocr_t galloc, struct ggml_tensor * t) {
    return &galloc->states[nnm_ggml_slot(galloc, t)];
}

#define NNM_GGML_NODE_SLOTS (GGML_MAX_SRC + 1)

/* The state of node `i` of the walked graph (k = 0) or of its source
 * k - 1, or NULL for no source. */
static struct nnm_ggml_tensor_state * nnm_ggml_node_state(ggml_gallocr_t galloc, int i, int k) {
    int slot = galloc->node_slots[(size_t)i * NNM_GGML_NODE_SLOTS + (size_t)k];
    return slot < 0 ? NULL : &galloc->states[slot];
}

/* Empties the table, with room for `n` tensors at a load of at most half. */
static void nnm_ggml_states_reset(ggml_gallocr_t galloc, size_t n) {
    if (galloc->n_slots < 2 * n + 16) {
        size_t slots = 64;
        int bits = 6;
        while (slots < 2 * n + 16) {
            slots *= 2;
            bits++;
        }
        free(galloc->keys);
        free(galloc->states);
        galloc->keys = (struct ggml_tensor **)malloc(slots * sizeof(struct ggml_tensor *));
        galloc->states = (struct nnm_ggml_tensor_state *)malloc(slots * sizeof(struct nnm_ggml_tensor_state));
        GGML_ASSERT(galloc->keys != NULL && galloc->states != NULL);
        galloc->n_slots = slots;
        galloc->shift = 64 - bits;
    }
    memset(galloc->keys, 0, galloc->n_slots * sizeof(struct ggml_tensor *));
    memset(galloc->states, 0, galloc->n_slots * sizeof(struct nnm_ggml_tensor_state));
    galloc->n_used = 0;
}

static int nnm_ggml_buffer_id(const int * ids, int i) {
    return ids ? ids[i] : 0;
}

static void * nnm_ggml_grow(void * array, size_t * cap, size_t need, size_t elem) {
    if (need <= *cap) {
        return array;
    }
    size_t cap_new = *cap ? *cap * 2 : 64;
    while (cap_new < need) {
        cap_new *= 2;
    }
    void * grown = realloc(array, cap_new * elem);
    GGML_ASSERT(grown != NULL);
    *cap = cap_new;
    return grown;
}

/* The blocks `node` may overwrite in place at this step, in the order of
 * its sources: ggml's rules (the op runs in place; the parent's memory is
 * this allocator's, not an output's, of the same layout, and read for the
 * last time; a view's source only where the view starts it). ggml takes the
 * first; nnmem's planner chooses among them. Returns how many. */
static int nnm_ggml_find_inplace(ggml_gallocr_t galloc, struct ggml_tensor * node, int * parents) {
    int n = 0;
    if (!ggml_op_can_inplace(node->op)) {
        return 0;
    }
    for (int i = 0; i < GGML_MAX_SRC; i++) {
        struct ggml_tensor * parent = node->src[i];
        if (parent == NULL) {
            continue;
        }
        struct nnm_ggml_tensor_state * p = nnm_ggml_state(galloc, parent);
        if (!p->allocated) {
            continue;
        }
        if ((parent->flags & GGML_TENSOR_FLAG_OUTPUT) ||
            (parent->view_src != NULL && (parent->view_src->flags & GGML_TENSOR_FLAG_OUTPUT))) {
            continue;
        }
        if (!ggml_are_same_layout(node, parent)) {
            continue;
        }
        if (p->n_children != 1 || p->n_views != 0) {
            continue;
        }
        if (ggml_impl_is_view(parent)) {
            struct ggml_tensor * src = parent->view_src;
            struct nnm_ggml_tensor_state * s = nnm_ggml_state(galloc, src);
            if (s->n_views == 1 && s->n_children == 0 && src->data == parent->data && s->allocated) {
                parents[n++] = s->block;
            }
        } else {
            parents[n++] = p->block;
        }
    }
    return n;
}

/* The walk creates `node` (whose state is `hn`, or NULL to look it up) at
 * `step` unless it has memory or is a view. As in ggml, a node that may
 * overwrite a parent of another buffer type goes to the first such
 * parent's buffer. */
static void nnm_ggml_allocate(ggml_gallocr_t galloc, struct ggml_tensor * node, struct nnm_ggml_tensor_state * hn,
                              int buffer_id, int64_t step, int64_t end) {
    GGML_ASSERT(buffer_id >= 0 && buffer_id < galloc->n_buffers);
    if (node->data != NULL || node->buffer != NULL) {
        return;
    }
    if (hn == NULL) {
        hn = nnm_ggml_state(galloc, node);
    }
    if (hn->allocated || ggml_impl_is_view(node)) {
        return;
    }
    int parents[GGML_MAX_SRC];
    int n_parents = nnm_ggml_find_inplace(galloc, node, parents);
    if (n_parents > 0) {
        buffer_id = galloc->blocks[parents[0]].buffer_id;
    }
    galloc->blocks = (struct nnm_ggml_block *)nnm_ggml_grow(galloc->blocks, &galloc->cap_blocks,
                                                            galloc->n_blocks + 1, sizeof(struct nnm_ggml_block));
    int block = (int)galloc->n_blocks++;
    struct nnm_ggml_block * b = &galloc->blocks[block];
    int a = galloc->allocator_of[buffer_id];
    b->tensor = node;
    b->buffer_id = buffer_id;
    b->allocator = a;
    b->size_max = ggml_backend_buft_get_alloc_size(galloc->bufts[buffer_id], node);
    b->size = nnm_ggml_pad(b->size_max, galloc->allocators[a].alignment);
    b->first = step;
    b->last = end;
    b->index = 0;
    b->addr.chunk = 0;
    b->addr.offset = 0;
    for (int k = 0; k < n_parents; k++) {
        if (galloc->blocks[parents[k]].allocator != a) {
            continue;
        }
        galloc->candidates = (struct nnm_ggml_candidate *)nnm_ggml_grow(
            galloc->candidates, &galloc->cap_candidates, galloc->n_candidates + 1, sizeof(struct nnm_ggml_candidate));
        galloc->candidates[galloc->n_candidates].parent = parents[k];
        galloc->candidates[galloc->n_candidates].child = block;
        galloc->n_candidates++;
    }
    hn->buffer_id = buffer_id;
    hn->block = block;
    hn->allocated = true;
}

/* The walk frees `node` after `step`; outputs are never freed. */
static void nnm_ggml_release(ggml_gallocr_t galloc, struct ggml_tensor * node, int64_t step) {
    if (node->flags & GGML_TENSOR_FLAG_OUTPUT) {
        return;
    }
    struct nnm_ggml_tensor_state * hn = nnm_ggml_state(galloc, node);
    galloc->blocks[hn->block].last = step;
    hn->allocated = false;
}

/* ggml's walk over the graph, recording lifetimes instead of placing. */
static void nnm_ggml_walk(ggml_gallocr_t galloc, struct ggml_cgraph * graph, const int * node_buffer_ids,
                          const int * leaf_buffer_ids) {
    nnm_ggml_states_reset(galloc, (size_t)graph->n_nodes + (size_t)graph->n_leafs);
    galloc->n_blocks = 0;
    galloc->n_candidates = 0;
    const int64_t end = graph->n_nodes;

    galloc->node_slots = (int *)nnm_ggml_grow(galloc->node_slots, &galloc->cap_node_slots,
                                              (size_t)graph->n_nodes * NNM_GGML_NODE_SLOTS, sizeof(int));
    for (int i = 0; i < graph->n_leafs; i++) {
        nnm_ggml_allocate(galloc, graph->leafs[i], NULL, nnm_ggml_buffer_id(leaf_buffer_ids, i), 0, end);
    }
    /* Count children and views; inputs take their memory first so that
     * nothing overwrites them. An op NONE view is a dependency ggml-backend
     * adds, not a use of its source. */
    for (int i = 0; i < graph->n_nodes; i++) {
        struct ggml_tensor * node = graph->nodes[i];
        int buffer_id = nnm_ggml_buffer_id(node_buffer_ids, i);
        int * slots = &galloc->node_slots[(size_t)i * NNM_GGML_NODE_SLOTS];
        slots[0] = (int)nnm_ggml_slot(galloc, node);
        if (ggml_impl_is_view(node) && node->op != GGML_OP_NONE) {
            nnm_ggml_state(galloc, node->view_src)->n_views += 1;
        }
        if (node->flags & GGML_TENSOR_FLAG_INPUT) {
            nnm_ggml_allocate(galloc, node, &galloc->states[slots[0]], buffer_id, 0, end);
        }
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            struct ggml_tensor * src = node->src[j];
            slots[j + 1] = -1;
            if (src == NULL) {
                continue;
            }
            slots[j + 1] = (int)nnm_ggml_slot(galloc, src);
            struct nnm_ggml_tensor_state * hs = &galloc->states[slots[j + 1]];
            hs->n_children += 1;
            if (src->flags & GGML_TENSOR_FLAG_INPUT) {
                nnm_ggml_allocate(galloc, src, hs, buffer_id, 0, end);
            }
        }
    }
    for (int i = 0; i < graph->n_nodes; i++) {
        struct ggml_tensor * node = graph->nodes[i];
        int buffer_id = nnm_ggml_buffer_id(node_buffer_ids, i);
        const int64_t step = (int64_t)i + 1;
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            if (node->src[j] != NULL) {
                nnm_ggml_allocate(galloc, node->src[j], nnm_ggml_node_state(galloc, i, j + 1), buffer_id, step, end);
            }
        }
        nnm_ggml_allocate(galloc, node, nnm_ggml_node_state(galloc, i, 0), buffer_id, step, end);
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            struct ggml_tensor * parent = node->src[j];
            if (parent == NULL) {
                continue;
            }
            struct nnm_ggml_tensor_state * p = nnm_ggml_node_state(galloc, i, j + 1);
            p->n_children -= 1;
            if (p->n_children != 0 || p->n_views != 0) {
                continue;
            }
            if (ggml_impl_is_view(parent)) {
                struct nnm_ggml_tensor_state * s = nnm_ggml_state(galloc, parent->view_src);
                s->n_views -= 1;
                if (s->n_views == 0 && s->n_children == 0 && s->allocated) {
                    nnm_ggml_release(galloc, parent->view_src, step);
                }
            } else if (p->allocated) {
                nnm_ggml_release(galloc, parent, step);
            }
        }
    }
}

/* Plans the blocks `members` (indices into galloc->blocks) of one allocator
 * with nnmem's planner, with the in-place candidates among them; writes
 * each member's offset to `offsets` (parallel to `members`) and the bytes
 * the plan needs to `peak`. */
static bool nnm_ggml_plan_with(ggml_gallocr_t galloc, const struct nnm_ggml_allocator * alloc, uint32_t algorithm,
                               const int * members, size_t n_members, int * index_of, size_t * offsets,
                               size_t * peak, bool * optimal) {
    struct nnm_planner * planner = NULL;
    bool ok = nnm_planner_new(&planner) == NNM_OK && nnm_planner_set_alignment(planner, alloc->alignment) == NNM_OK &&
              nnm_planner_set_algorithm(planner, algorithm) == NNM_OK;
#ifdef NNM_COMPAT_GGML_WORK_LIMIT
    uint64_t work = NNM_COMPAT_GGML_WORK_LIMIT;
#else
    uint64_t work = (uint64_t)n_members * NNM_COMPAT_GGML_WORK_LIMIT_PER_TENSOR;
    if (work < NNM_COMPAT_GGML_WORK_LIMIT_MIN) {
        work = NNM_COMPAT_GGML_WORK_LIMIT_MIN;
    }
#endif
    ok = ok && nnm_planner_set_work_limit(planner, work) == NNM_OK;
    for (size_t m = 0; ok && m < n_members; m++) {
        const struct nnm_ggml_block * b = &galloc->blocks[members[m]];
        size_t index = 0;
        ok = nnm_planner_add_buffer(planner, b->size, b->first, b->last, &index) == NNM_OK;
        index_of[members[m]] = (int)index;
    }
    for (size_t c = 0; ok && c < galloc->n_candidates; c++) {
        int parent = galloc->candidates[c].parent;
        int child = galloc->candidates[c].child;
        /* The walk offers only parents freed where the child is created;
         * one the planner refuses anyway is left out, not fatal. */
        if (index_of[parent] >= 0 && index_of[child] >= 0 &&
            nnm_planner_add_inplace(planner, (size_t)index_of[parent], (size_t)index_of[child]) != NNM_OK) {
            GGML_LOG_DEBUG("%s: in-place candidate left out: %s\n", __func__, nnm_last_error());
        }
    }
    struct nnm_plan_result result;
    ok = ok && nnm_planner_plan(planner) == NNM_OK && nnm_planner_get_result(planner, &result) == NNM_OK;
    /* Buffers were added in the order of `members`: index m is member m. */
    uint64_t * planned = ok ? (uint64_t *)malloc((n_members ? n_members : 1) * sizeof(uint64_t)) : NULL;
    ok = ok && planned != NULL && nnm_planner_get_offsets(planner, planned, n_members) == NNM_OK;
    for (size_t m = 0; ok && m < n_members; m++) {
        offsets[m] = (size_t)planned[m];
    }
    free(planned);
    if (!ok) {
        GGML_LOG_ERROR("%s: nnmem could not plan the %s buffer: %s\n", __func__, ggml_backend_buft_name(alloc->buft),
                       nnm_last_error());
    }
    for (size_t m = 0; m < n_members; m++) {
        index_of[members[m]] = -1;
    }
    nnm_planner_free(planner);
    *peak = ok ? (size_t)result.peak_bytes : 0;
    *optimal = ok && result.proven_optimal;
    return ok;
}

/* Plans the blocks `members` (indices into galloc->blocks) of one allocator
 * with nnmem's planner, with the in-place candidates among them; writes
 * each member's offset to `offsets` (parallel to `members`) and the bytes
 * the plan needs to `peak`. First one greedy pass (size first fit, through
 * each tensor's list of the tensors it is live with), which meets the lower
 * bound on the decoder graphs of c-tests/ggml and of llama.cpp in under
 * twice ggml's time (a pass in the walk's order, SEQUENTIAL, what ggml's
 * own allocator does with first fit, is cheaper but misses the bound
 * inside llama.cpp); where it does not, AUTO within the work budget. */
static bool nnm_ggml_plan(ggml_gallocr_t galloc, const struct nnm_ggml_allocator * alloc, const int * members,
                          size_t n_members, int * index_of, size_t * offsets, size_t * peak) {
    bool optimal = false;
    if (!nnm_ggml_plan_with(galloc, alloc, NNM_ALGORITHM_SIZE_FIRST_FIT, members, n_members, index_of, offsets, peak,
                            &optimal)) {
        return false;
    }
    if (optimal) {
        return true;
    }
    return nnm_ggml_plan_with(galloc, alloc, NNM_ALGORITHM_AUTO, members, n_members, index_of, offsets, peak,
                              &optimal);
}

static size_t nnm_ggml_lowest(const size_t * offsets, size_t n) {
    size_t lowest = SIZE_MAX;
    for (size_t k = 0; k < n; k++) {
        lowest = offsets[k] < lowest ? offsets[k] : lowest;
    }
    return lowest;
}

/* Places one allocator's blocks: one plan; where it passes the buffer
 * type's maximum size, the blocks that fit below it make a chunk and the
 * rest are planned again (or keep their places, moved down, if that is
 * smaller), up to ggml's 16 chunks, the last one unbounded. */
static bool nnm_ggml_place(ggml_gallocr_t galloc, int a) {
    struct nnm_ggml_allocator * alloc = &galloc->allocators[a];
    alloc->n_chunks = 0;
    size_t n = 0;
    for (size_t i = 0; i < galloc->n_blocks; i++) {
        n += galloc->blocks[i].allocator == a;
    }
    if (n == 0) {
        return true;
    }
    int * members = (int *)malloc(n * sizeof(int));
    int * rest = (int *)malloc(n * sizeof(int));
    size_t * offsets = (size_t *)malloc(n * sizeof(size_t));
    size_t * rest_offsets = (size_t *)malloc(n * sizeof(size_t));
    int * index_of = (int *)malloc(galloc->n_blocks * sizeof(int));
    GGML_ASSERT(members && rest && offsets && rest_offsets && index_of);
    for (size_t i = 0; i < galloc->n_blocks; i++) {
        index_of[i] = -1;
    }
    size_t m = 0;
    for (size_t i = 0; i < galloc->n_blocks; i++) {
        if (galloc->blocks[i].allocator == a) {
            members[m++] = (int)i;
        }
    }
    size_t peak = 0;
    bool ok = nnm_ggml_plan(galloc, alloc, members, n, index_of, offsets, &peak);
    while (ok && n > 0) {
        int chunk = alloc->n_chunks;
        const size_t base = nnm_ggml_lowest(offsets, n);
        size_t cap = alloc->max_chunk;
        if (chunk == NNM_GGML_MAX_CHUNKS - 1) {
            cap = SIZE_MAX;
        } else {
            /* A block larger than the maximum gets a chunk of its own size,
             * as in ggml (the backend may still refuse it). */
            size_t smallest_at_base = SIZE_MAX;
            bool fits = false;
            for (size_t k = 0; k < n; k++) {
                size_t size = galloc->blocks[members[k]].size;
                fits = fits || offsets[k] - base + size <= cap;
                if (offsets[k] == base && size < smallest_at_base) {
                    smallest_at_base = size;
                }
            }
            if (!fits) {
                cap = smallest_at_base;
            }
        }
        size_t chunk_size = 0, n_rest = 0;
        for (size_t k = 0; k < n; k++) {
            struct nnm_ggml_block * b = &galloc->blocks[members[k]];
            size_t at = offsets[k] - base;
            if (at + b->size <= cap) {
                b->addr.chunk = chunk;
                b->addr.offset = at;
                chunk_size = at + b->size > chunk_size ? at + b->size : chunk_size;
            } else {
                rest[n_rest] = members[k];
                rest_offsets[n_rest++] = offsets[k];
            }
        }
        alloc->chunk_size[chunk] = chunk_size;
        alloc->n_chunks++;
        if (n_rest == 0) {
            break;
        }
        /* The rest keep their places (moved down) unless a new plan of
         * them alone is smaller. */
        const size_t rest_base = nnm_ggml_lowest(rest_offsets, n_rest);
        size_t kept = 0;
        for (size_t k = 0; k < n_rest; k++) {
            size_t top = rest_offsets[k] - rest_base + galloc->blocks[rest[k]].size;
            kept = top > kept ? top : kept;
        }
        memcpy(members, rest, n_rest * sizeof(int));
        n = n_rest;
        ok = nnm_ggml_plan(galloc, alloc, members, n, index_of, offsets, &peak);
        if (ok && peak >= kept) {
            memcpy(offsets, rest_offsets, n * sizeof(size_t));
        }
    }
    free(members);
    free(rest);
    free(offsets);
    free(rest_offsets);
    free(index_of);
    return ok;
}

/* What the reserve keeps of `t`, read right after the walk while the
 * graph's tensors are still in the cache (read after planning, they were
 * a third of a reserve); its address comes with nnm_ggml_resolve. */
static void nnm_ggml_record(ggml_gallocr_t galloc, struct ggml_tensor * t, struct nnm_ggml_tensor_state * hn,
                            struct nnm_ggml_tensor_alloc * out) {
    out->block = -1;
    out->addr.chunk = -1;
    out->addr.offset = SIZE_MAX;
    if (t == NULL || t->view_src != NULL || t->data != NULL) {
        out->buffer_id = -1;
        out->size_max = 0;
        return;
    }
    if (hn == NULL) {
        hn = nnm_ggml_state(galloc, t);
    }
    out->buffer_id = hn->buffer_id;
    if (hn->block >= 0 && (size_t)hn->block < galloc->n_blocks && galloc->blocks[hn->block].tensor == t) {
        out->block = hn->block;
        out->size_max = galloc->blocks[hn->block].size_max;
    } else {
        /* Memory someone else sets (a tensor on an external buffer). */
        out->size_max = ggml_backend_buft_get_alloc_size(galloc->bufts[hn->buffer_id], t);
    }
}

static void nnm_ggml_record_graph(ggml_gallocr_t galloc, struct ggml_cgraph * graph) {
    if (galloc->n_nodes < graph->n_nodes) {
        free(galloc->node_allocs);
        galloc->node_allocs =
            (struct nnm_ggml_node_alloc *)calloc((size_t)graph->n_nodes, sizeof(struct nnm_ggml_node_alloc));
        GGML_ASSERT(galloc->node_allocs != NULL);
    }
    galloc->n_nodes = graph->n_nodes;
    for (int i = 0; i < graph->n_nodes; i++) {
        struct ggml_tensor * node = graph->nodes[i];
        nnm_ggml_record(galloc, node, nnm_ggml_node_state(galloc, i, 0), &galloc->node_allocs[i].dst);
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            nnm_ggml_record(galloc, node->src[j], nnm_ggml_node_state(galloc, i, j + 1),
                            &galloc->node_allocs[i].src[j]);
        }
    }
    if (galloc->n_leafs < graph->n_leafs) {
        free(galloc->leaf_allocs);
        galloc->leaf_allocs =
            (struct nnm_ggml_tensor_alloc *)calloc((size_t)graph->n_leafs, sizeof(struct nnm_ggml_tensor_alloc));
        GGML_ASSERT(galloc->leaf_allocs != NULL);
    }
    galloc->n_leafs = graph->n_leafs;
    for (int i = 0; i < graph->n_leafs; i++) {
        nnm_ggml_record(galloc, graph->leafs[i], NULL, &galloc->leaf_allocs[i]);
    }
}

/* The planned addresses of the recorded tensors. */
static void nnm_ggml_resolve(ggml_gallocr_t galloc) {
    for (int i = 0; i < galloc->n_nodes; i++) {
        struct nnm_ggml_node_alloc * na = &galloc->node_allocs[i];
        if (na->dst.block >= 0) {
            na->dst.addr = galloc->blocks[na->dst.block].addr;
        }
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            if (na->src[j].block >= 0) {
                na->src[j].addr = galloc->blocks[na->src[j].block].addr;
            }
        }
    }
    for (int i = 0; i < galloc->n_leafs; i++) {
        struct nnm_ggml_tensor_alloc * la = &galloc->leaf_allocs[i];
        if (la->block >= 0) {
            la->addr = galloc->blocks[la->block].addr;
        }
    }
}

/* Walks the graph and places its blocks: each allocator's chunk sizes and
 * each block's address; with `record`, also what the reserve keeps of
 * each tensor and its address. A failure leaves the allocator to be
 * reserved again. */
static bool nnm_ggml_plan_graph(ggml_gallocr_t galloc, struct ggml_cgraph * graph, const int * node_buffer_ids,
                                const int * leaf_buffer_ids, bool record) {
    nnm_ggml_walk(galloc, graph, node_buffer_ids, leaf_buffer_ids);
    if (record) {
        nnm_ggml_record_graph(galloc, graph);
    }
    for (int a = 0; a < galloc->n_allocators; a++) {
        if (!nnm_ggml_place(galloc, a)) {
            galloc->stale = true;
            return false;
        }
    }
    if (record) {
        nnm_ggml_resolve(galloc);
    }
    return true;
}

static bool nnm_ggml_reserve(ggml_gallocr_t galloc, struct ggml_cgraph * graph, const int * node_buffer_ids,
                             const int * leaf_buffer_ids, bool no_alloc) {
    if (!nnm_ggml_plan_graph(galloc, graph, node_buffer_ids, leaf_buffer_ids, /*record =*/true)) {
        return false;
    }

    /* (Re)allocate each allocator's chunks where one grew (buffer ids of one
     * buffer type share them). A buffer shared with other graph
     * allocators, or reserved for several graphs, only grows: each chunk
     * keeps the largest size any of them needs. */
    for (int a = 0; a < galloc->n_allocators; a++) {
        struct nnm_ggml_allocator * alloc = &galloc->allocators[a];
        struct nnm_ggml_vbuffer * buf = alloc->buf;
        const bool shared = buf != NULL && buf->refs > 1;
        bool realloc = buf == NULL;
        size_t sizes[NNM_GGML_MAX_CHUNKS];
        int n_chunks = 0;
        size_t new_size = 0;
        for (int c = 0; c < NNM_GGML_MAX_CHUNKS; c++) {
            size_t have = buf && buf->chunks[c] ? ggml_backend_buffer_get_size(buf->chunks[c]) : 0;
            size_t need = c < alloc->n_chunks ? alloc->chunk_size[c] : 0;
            need = alloc->floor[c] > need ? alloc->floor[c] : need;
            bool used = c < alloc->n_chunks || alloc->floor[c] > 0;
            realloc = realloc || need > have || (used && (buf == NULL || buf->chunks[c] == NULL));
            sizes[c] = shared && have > need ? have : need;
            if (used || (shared && buf->chunks[c] != NULL)) {
                n_chunks = c + 1;
            }
            new_size += sizes[c];
        }
        if (!realloc) {
            continue;
        }
#ifndef NDEBUG
        if (buf != NULL && nnm_ggml_vbuffer_size(buf) > 0) {
            GGML_LOG_DEBUG("%s: reallocating %s buffer from size %.02f MiB to %.02f MiB\n", __func__,
                           ggml_backend_buft_name(alloc->buft), nnm_ggml_vbuffer_size(buf) / 1024.0 / 1024.0,
                           new_size / 1024.0 / 1024.0);
        }
#endif
        if (no_alloc) {
            /* As ggml: a buffer that no longer fits is let go (a shared one
             * stays for the others). */
            if (!shared) {
                nnm_ggml_vbuffer_release(buf);
                alloc->buf = NULL;
            }
            continue;
        }
        if (buf == NULL) {
            buf = alloc->buf = nnm_ggml_vbuffer_new();
        }
        nnm_ggml_vbuffer_free_chunks(buf);
        buf->generation++;
        for (int c = 0; c < n_chunks; c++) {
            buf->chunks[c] = ggml_backend_buft_alloc_buffer(alloc->buft, sizes[c]);
            if (buf->chunks[c] == NULL) {
                GGML_LOG_ERROR("%s: failed to allocate %s buffer of size %zu\n", __func__,
                               ggml_backend_buft_name(alloc->buft), new_size);
                nnm_ggml_vbuffer_free_chunks(buf);
                return false;
            }
            ggml_backend_buffer_set_usage(buf->chunks[c], GGML_BACKEND_BUFFER_USAGE_COMPUTE);
        }
    }
    galloc->stale = false;
    return true;
}

void ggml_gallocr_reserve_n_size(ggml_gallocr_t galloc, struct ggml_cgraph * graph, const int * node_buffer_ids,
                                 const int * leaf_buffer_ids, size_t * sizes) {
    GGML_ASSERT(nnm_ggml_reserve(galloc, graph, node_buffer_ids, leaf_buffer_ids, /*no_alloc =*/true));
    for (int i = 0; i < galloc->n_buffers; i++) {
        const struct nnm_ggml_allocator * alloc = &galloc->allocators[galloc->allocator_of[i]];
        sizes[i] = 0;
        for (int c = 0; c < alloc->n_chunks; c++) {
            sizes[i] += alloc->chunk_size[c];
        }
    }
}

bool ggml_gallocr_reserve_n(ggml_gallocr_t galloc, struct ggml_cgraph * graph, const int * node_buffer_ids,
                            const int * leaf_buffer_ids) {
    return nnm_ggml_reserve(galloc, graph, node_buffer_ids, leaf_buffer_ids, /*no_alloc =*/false);
}

bool ggml_gallocr_reserve(ggml_gallocr_t galloc, struct ggml_cgraph * graph) {
    return ggml_gallocr_reserve_n(galloc, graph, NULL, NULL);
}

static void nnm_ggml_init_tensor(ggml_gallocr_t galloc, struct ggml_tensor * tensor,
                                 const struct nnm_ggml_tensor_alloc * talloc) {
    if (tensor->view_src != NULL) {
        if (tensor->buffer == NULL && tensor->view_src->buffer != NULL) {
            ggml_backend_view_init(tensor);
        }
        return;
    }
    if (tensor->data != NULL || talloc->addr.chunk < 0) {
        return;
    }
    struct nnm_ggml_vbuffer * buf = galloc->allocators[galloc->allocator_of[talloc->buffer_id]].buf;
    ggml_backend_buffer_t chunk = buf ? buf->chunks[talloc->addr.chunk] : NULL;
    GGML_ASSERT(chunk != NULL);
    void * addr = (char *)ggml_backend_buffer_get_base(chunk) + talloc->addr.offset;
    ggml_backend_tensor_alloc(chunk, tensor, addr);
}

/* Whether `t` still fits where the reserved graph put its counterpart. */
static bool nnm_ggml_still_fits(ggml_gallocr_t galloc, struct ggml_tensor * t,
                                const struct nnm_ggml_tensor_alloc * talloc) {
    size_t size = 0;
    if (t->data == NULL && t->view_src == NULL) {
        if (talloc->buffer_id < 0) {
            /* Had data when reserved and has none now. */
            return false;
        }
        size = ggml_backend_buft_get_alloc_size(galloc->bufts[talloc->buffer_id], t);
    }
    return talloc->size_max >= size;
}

static bool nnm_ggml_needs_reserve(ggml_gallocr_t galloc, struct ggml_cgraph * graph) {
    if (galloc->stale || galloc->n_nodes != graph->n_nodes || galloc->n_leafs != graph->n_leafs ||
        galloc->node_allocs == NULL) {
        return true;
    }
    /* A ggml_gallocr_reserve_n_size that let a buffer go, or left a
     * shared one smaller than its plan, left places without memory (ggml
     * would write tensors past a chunk's end). */
    for (int a = 0; a < galloc->n_allocators; a++) {
        const struct nnm_ggml_allocator * alloc = &galloc->allocators[a];
        for (int c = 0; c < alloc->n_chunks; c++) {
            if (alloc->buf == NULL || alloc->buf->chunks[c] == NULL ||
                ggml_backend_buffer_get_size(alloc->buf->chunks[c]) < alloc->chunk_size[c]) {
                return true;
            }
        }
    }
    for (int i = 0; i < graph->n_nodes; i++) {
        struct ggml_tensor * node = graph->nodes[i];
        const struct nnm_ggml_node_alloc * na = &galloc->node_allocs[i];
        if (!nnm_ggml_still_fits(galloc, node, &na->dst)) {
            return true;
        }
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            if (node->src[j] != NULL && !nnm_ggml_still_fits(galloc, node->src[j], &na->src[j])) {
                return true;
            }
        }
    }
    return false;
}

/* Whether `t` holds an address this allocator placed and has data. */
static bool nnm_ggml_holds_place(const struct ggml_tensor * t, const struct nnm_ggml_tensor_alloc * talloc) {
    return t != NULL && t->view_src == NULL && t->data != NULL && talloc->addr.chunk >= 0;
}

/* After a buffer was reallocated (by this allocator's reserve or by one
 * sharing it), a graph whose own tensors still have their old addresses
 * would be skipped by the placement below (ggml places only tensors
 * without data) and computed in freed memory: refuse it, as nothing the
 * caller can compute is lost. A graph built anew has no data and passes. */
static bool nnm_ggml_places_are_current(ggml_gallocr_t galloc, struct ggml_cgraph * graph) {
    bool moved = false;
    for (int a = 0; a < galloc->n_allocators; a++) {
        const struct nnm_ggml_allocator * alloc = &galloc->allocators[a];
        moved = moved || (alloc->buf != NULL && alloc->buf->generation != alloc->placed_generation);
    }
    if (!moved) {
        return true;
    }
    for (int i = 0; i < graph->n_leafs; i++) {
        if (nnm_ggml_holds_place(graph->leafs[i], &galloc->leaf_allocs[i])) {
            GGML_LOG_ERROR("%s: tensor %s still points into a compute buffer that was reallocated since it was "
                           "placed; build the graph anew before allocating it\n", __func__, graph->leafs[i]->name);
            return false;
        }
    }
    for (int i = 0; i < graph->n_nodes; i++) {
        struct ggml_tensor * node = graph->nodes[i];
        const struct nnm_ggml_node_alloc * na = &galloc->node_allocs[i];
        bool stale = nnm_ggml_holds_place(node, &na->dst);
        for (int j = 0; j < GGML_MAX_SRC && !stale; j++) {
            stale = nnm_ggml_holds_place(node->src[j], &na->src[j]);
        }
        if (stale) {
            GGML_LOG_ERROR("%s: node %s or one of its sources still points into a compute buffer that was "
                           "reallocated since it was placed; build the graph anew before allocating it\n", __func__,
                           node->name);
            return false;
        }
    }
    return true;
}

bool ggml_gallocr_alloc_graph(ggml_gallocr_t galloc, struct ggml_cgraph * graph) {
    if (nnm_ggml_needs_reserve(galloc, graph)) {
        if (galloc->n_buffers != 1) {
#ifndef NDEBUG
            GGML_LOG_DEBUG("%s: cannot reallocate multi buffer graph automatically, call reserve\n", __func__);
#endif
            return false;
        }
#ifndef NDEBUG
        GGML_LOG_DEBUG("%s: reallocating buffers automatically\n", __func__);
#endif
        if (!ggml_gallocr_reserve(galloc, graph)) {
            return false;
        }
    }
    if (!nnm_ggml_places_are_current(galloc, graph)) {
        return false;
    }
    for (int a = 0; a < galloc->n_allocators; a++) {
        struct nnm_ggml_vbuffer * buf = galloc->allocators[a].buf;
        for (int c = 0; buf != NULL && c < NNM_GGML_MAX_CHUNKS && buf->chunks[c]; c++) {
            ggml_backend_buffer_reset(buf->chunks[c]);
        }
        galloc->allocators[a].placed_generation = buf != NULL ? buf->generation : 0;
    }
    for (int i = 0; i < graph->n_leafs; i++) {
        nnm_ggml_init_tensor(galloc, graph->leafs[i], &galloc->leaf_allocs[i]);
    }
    for (int i = 0; i < graph->n_nodes; i++) {
        struct ggml_tensor * node = graph->nodes[i];
        const struct nnm_ggml_node_alloc * na = &galloc->node_allocs[i];
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            if (node->src[j] != NULL) {
                nnm_ggml_init_tensor(galloc, node->src[j], &na->src[j]);
            }
        }
        nnm_ggml_init_tensor(galloc, node, &na->dst);
    }
    return true;
}

size_t ggml_gallocr_get_buffer_size(ggml_gallocr_t galloc, int buffer_id) {
    GGML_ASSERT(buffer_id >= 0 && buffer_id < galloc->n_buffers);
    const struct nnm_ggml_vbuffer * buf = galloc->allocators[galloc->allocator_of[buffer_id]].buf;
    if (buf == NULL || !nnm_ggml_owns_buffer(galloc, buffer_id)) {
        /* Counted once, under the first buffer id of its type. */
        return 0;
    }
    return nnm_ggml_vbuffer_size(buf);
}

/* ---- several graphs, one buffer (nnmem's additions) ---------------------- */

bool nnm_ggml_gallocr_reserve_graphs(ggml_gallocr_t galloc, struct ggml_cgraph * const * graphs, int n_graphs) {
    if (galloc == NULL || graphs == NULL || n_graphs <= 0) {
        GGML_LOG_ERROR("%s: needs an allocator and at least one graph (got %d)\n", __func__, n_graphs);
        return false;
    }
    if (galloc->n_buffers != 1) {
        GGML_LOG_ERROR("%s: %d buffer types: graphs of several buffers are reserved one by one with "
                       "ggml_gallocr_reserve_n\n", __func__, galloc->n_buffers);
        return false;
    }
    /* Each graph's chunk sizes, the largest kept as a floor; the last graph
     * is reserved with that floor, so the buffer fits every one of them. */
    for (int g = 0; g < n_graphs; g++) {
        if (graphs[g] == NULL) {
            GGML_LOG_ERROR("%s: graph %d is NULL\n", __func__, g);
            for (int a = 0; a < galloc->n_allocators; a++) {
                memset(galloc->allocators[a].floor, 0, sizeof galloc->allocators[a].floor);
            }
            return false;
        }
    }
    bool ok = true;
    for (int g = 0; ok && g + 1 < n_graphs; g++) {
        ok = nnm_ggml_plan_graph(galloc, graphs[g], NULL, NULL, /*record =*/false);
        for (int a = 0; ok && a < galloc->n_allocators; a++) {
            struct nnm_ggml_allocator * alloc = &galloc->allocators[a];
            for (int c = 0; c < alloc->n_chunks; c++) {
                alloc->floor[c] = alloc->chunk_size[c] > alloc->floor[c] ? alloc->chunk_size[c] : alloc->floor[c];
            }
        }
    }
    ok = ok && nnm_ggml_reserve(galloc, graphs[n_graphs - 1], NULL, NULL, /*no_alloc =*/false);
    for (int a = 0; a < galloc->n_allocators; a++) {
        memset(galloc->allocators[a].floor, 0, sizeof galloc->allocators[a].floor);
    }
    return ok;
}

bool nnm_ggml_gallocr_share(ggml_gallocr_t galloc, ggml_gallocr_t with) {
    if (galloc == NULL || with == NULL || galloc == with) {
        GGML_LOG_ERROR("%s: needs two different allocators\n", __func__);
        return false;
    }
    for (int a = 0; a < galloc->n_allocators; a++) {
        struct nnm_ggml_allocator * mine = &galloc->allocators[a];
        for (int b = 0; b < with->n_allocators; b++) {
            struct nnm_ggml_allocator * theirs = &with->allocators[b];
            if (theirs->buft != mine->buft || (mine->buf != NULL && mine->buf == theirs->buf)) {
                continue;
            }
            if (theirs->buf == NULL) {
                theirs->buf = nnm_ggml_vbuffer_new();
            }
            nnm_ggml_vbuffer_release(mine->buf);
            mine->buf = theirs->buf;
            mine->buf->refs++;
            /* Its tensors' places were in the buffer it let go. */
            galloc->stale = true;
        }
    }
    return true;
}

/* ---- every tensor of a context in buffers of one type -------------------- */

static void nnm_ggml_free_buffers(ggml_backend_buffer_t * buffers, size_t n) {
    for (size_t i = 0; i < n; i++) {
        ggml_backend_buffer_free(buffers[i]);
    }
    free(buffers);
}

/* Allocates one buffer of `size` for the tensors [first, last) of `ctx`. */
static bool nnm_ggml_alloc_range(struct ggml_context * ctx, struct ggml_tensor * first, struct ggml_tensor * last,
                                 ggml_backend_buffer_type_t buft, size_t size, ggml_backend_buffer_t ** buffers,
                                 size_t * n_buffers) {
    ggml_backend_buffer_t buffer = ggml_backend_buft_alloc_buffer(buft, size);
    if (buffer == NULL) {
        GGML_LOG_ERROR("%s: failed to allocate %s buffer of size %zu\n", __func__, ggml_backend_buft_name(buft), size);
        return false;
    }
    ggml_backend_buffer_t * grown =
        (ggml_backend_buffer_t *)realloc(*buffers, sizeof(ggml_backend_buffer_t) * (*n_buffers + 1));
    if (grown == NULL) {
        ggml_backend_buffer_free(buffer);
        return false;
    }
    *buffers = grown;
    (*buffers)[(*n_buffers)++] = buffer;
    struct ggml_tallocr talloc = ggml_tallocr_new(buffer);
    for (struct ggml_tensor * t = first; t != last; t = ggml_get_next_tensor(ctx, t)) {
        enum ggml_status status = GGML_STATUS_SUCCESS;
        if (t->data == NULL && t->view_src == NULL) {
            status = ggml_tallocr_alloc(&talloc, t);
        } else if (t->view_src != NULL && t->buffer == NULL) {
            status = ggml_backend_view_init(t);
        }
        if (status != GGML_STATUS_SUCCESS) {
            GGML_LOG_ERROR("%s: failed to initialize tensor %s\n", __func__, t->name);
            return false;
        }
    }
    return true;
}

/* Tensors in order, a new buffer where the next would pass the maximum
 * size: ggml's layout (weights and caches live as long as the buffer, so
 * there is nothing to plan). */
static ggml_backend_buffer_t nnm_ggml_alloc_ctx_tensors(struct ggml_context * ctx, ggml_backend_buffer_type_t buft,
                                                        size_t * total, bool no_alloc) {
    GGML_ASSERT(ggml_get_no_alloc(ctx) == true);
    size_t alignment = ggml_backend_buft_get_alignment(buft);
    size_t max_size = ggml_backend_buft_get_max_size(buft);
    ggml_backend_buffer_t * buffers = NULL;
    size_t n_buffers = 0;
    *total = 0;
    size_t current = 0;
    struct ggml_tensor * first = ggml_get_first_tensor(ctx);
    for (struct ggml_tensor * t = first; t != NULL; t = ggml_get_next_tensor(ctx, t)) {
        size_t size = 0;
        if (t->data == NULL && t->view_src == NULL) {
            size = nnm_ggml_pad(ggml_backend_buft_get_alloc_size(buft, t), alignment);
        }
        if (current > 0 && current + size > max_size) {
            if (!no_alloc && !nnm_ggml_alloc_range(ctx, first, t, buft, current, &buffers, &n_buffers)) {
                nnm_ggml_free_buffers(buffers, n_buffers);
                return NULL;
            }
            first = t;
            *total += current;
            current = size;
        } else {
            current += size;
        }
    }
    if (current > 0) {
        *total += current;
        if (!no_alloc && !nnm_ggml_alloc_range(ctx, first, NULL, buft, current, &buffers, &n_buffers)) {
            nnm_ggml_free_buffers(buffers, n_buffers);
            return NULL;
        }
    }
    if (no_alloc || n_buffers == 0) {
#ifndef NDEBUG
        if (!no_alloc) {
            GGML_LOG_DEBUG("%s: all tensors in the context are already allocated\n", __func__);
        }
#endif
        free(buffers);
        return NULL;
    }
    ggml_backend_buffer_t buffer =
        n_buffers == 1 ? buffers[0] : ggml_backend_multi_buffer_alloc_buffer(buffers, n_buffers);
    free(buffers);
    return buffer;
}

size_t ggml_backend_alloc_ctx_tensors_from_buft_size(struct ggml_context * ctx, ggml_backend_buffer_type_t buft) {
    size_t total = 0;
    ggml_backend_buffer_t buffer = nnm_ggml_alloc_ctx_tensors(ctx, buft, &total, /*no_alloc =*/true);
    GGML_ASSERT(buffer == NULL);
    return total;
}

ggml_backend_buffer_t ggml_backend_alloc_ctx_tensors_from_buft(struct ggml_context * ctx,
                                                               ggml_backend_buffer_type_t buft) {
    if (ggml_backend_buft_is_meta(buft)) {
        return ggml_backend_meta_alloc_ctx_tensors_from_buft(ctx, buft);
    }
    size_t total = 0;
    return nnm_ggml_alloc_ctx_tensors(ctx, buft, &total, /*no_alloc =*/false);
}

ggml_backend_buffer_t ggml_backend_alloc_ctx_tensors(struct ggml_context * ctx, ggml_backend_t backend) {
    return ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_get_default_buffer_type(backend));
}
