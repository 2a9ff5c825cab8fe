/*
 * nnmem's additions to ggml's graph allocator, for builds that use nnmem's
 * ggml-alloc.c (nnmem_ggml_alloc() in nnmem's CMake package). Include after
 * ggml-alloc.h. Same thread rules as ggml's: an allocator (and the buffers
 * it shares) is used by one thread at a time.
 */
#ifndef NNMEM_COMPAT_GGML_ALLOC_NNMEM_H
#define NNMEM_COMPAT_GGML_ALLOC_NNMEM_H

#include "ggml-alloc.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Reserves one compute buffer for several graphs that never run at once
 * (prompt and generation graphs, a text and a vision graph): each graph is
 * planned, and the buffer is sized for the largest need, chunk by chunk.
 * The allocator keeps the last graph's placement. ggml_gallocr_alloc_graph
 * with another graph plans it again (without growing the buffer) where
 * ggml's check sees that it differs (another node or leaf count, a tensor
 * larger than its place); two graphs with the same counts and sizes but
 * another structure pass that check, so reserve such a graph
 * (ggml_gallocr_reserve) before allocating it.
 * Single buffer type only (allocators from ggml_gallocr_new, or
 * ggml_gallocr_new_n with n_bufs 1). Returns false, with a logged error, for
 * a NULL allocator or graph, n_graphs < 1, several buffer types, or a
 * buffer the backend could not allocate; on false the buffer is as the
 * failing step left it, and reserving again is the way back.
 */
bool nnm_ggml_gallocr_reserve_graphs(ggml_gallocr_t galloc, struct ggml_cgraph * const * graphs, int n_graphs);

/*
 * Lets `galloc` use `with`'s compute buffers: for each buffer type both
 * use, one buffer, which grows to the largest need of either and never
 * shrinks while shared. For contexts whose graphs never run at once (a
 * draft and a main model; text and vision); the buffer is freed with the
 * last allocator that holds it. `galloc`'s own buffer of that type is let
 * go, and its next ggml_gallocr_alloc_graph reserves again. A buffer that
 * grows moves: after either allocator reserves, the other's graphs must be
 * built anew and allocated (ggml_gallocr_alloc_graph, as ggml's scheduler
 * does for every batch) before they are computed. ggml_gallocr_alloc_graph
 * refuses (logs and returns false) a graph whose tensors still point into
 * the buffer as it was before it moved, instead of computing in freed
 * memory. Returns false, with a logged error, when either is NULL or both
 * are the same.
 */
bool nnm_ggml_gallocr_share(ggml_gallocr_t galloc, ggml_gallocr_t with);

#ifdef __cplusplus
}
#endif

#endif
