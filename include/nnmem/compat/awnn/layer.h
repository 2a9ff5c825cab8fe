/*
 * nnmem/compat/awnn/layer.h: awnn's `awnn/layer.h` over nnmem. awnn's
 * sources keep their `#include "awnn/layer.h"` and get this file through
 * the include path (put <prefix>/include/nnmem/compat before awnn's own
 * include directory, as <nnmem/compat/awnn/net.h> says, and link
 * nnmem::static or nnmem::shared). awnn's `awnn/tensor.h` stays the caller's: this header
 * includes it.
 *
 * What it declares, as awnn's does: MAX_CACHE_SIZE, `lcache_t` (count,
 * all_tensors, name, list) and lcache_push, lcache_pop, make_empty_lcache,
 * lcache_free_all and lcache_dump_stat, defined here (header-only: no
 * src/net.c).
 *
 * What differs from awnn:
 * - `lcache_t` has one more member, `nnm_stack` (nnmem's), after awnn's.
 *   The first MAX_CACHE_SIZE tensors are in `all_tensors`, read directly
 *   as before; a push past them goes to the heap instead of writing past
 *   the array (awnn's overflow), and the pop that brings `count` back to
 *   MAX_CACHE_SIZE frees that heap again. A cache holding no more than
 *   MAX_CACHE_SIZE tensors holds no heap: it may go out of scope as before.
 * - lcache_pop on an empty cache prints an error and returns a placeholder
 *   tensor (EMPTY_MEM, NULL data) where awnn read before the array.
 * - A cache must be made empty once before use (make_empty_lcache, as
 *   awnn's layers and tests do, or zero-filled storage); make_empty_lcache
 *   also frees a heap the cache at that address still held.
 * - `count` stays awnn's: code that resets it by hand while the cache is
 *   within its array is followed by the next call.
 *
 * Thread safety: as awnn's: one cache is used by one thread at a time.
 */
#ifndef NNM_COMPAT_AWNN_LAYER_H
#define NNM_COMPAT_AWNN_LAYER_H

#include <string.h>

#include "awnn/logging.h"
#include "awnn/tensor.h"
#include "utils/list.h"

#include <nnmem/net.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MAX_CACHE_SIZE (10)

/*
 * A layer cache: a stack of tensors a layer's forward pushes and its
 * backward pops. awnn's members first; `nnm_stack` is nnmem's (the
 * tensors past all_tensors), never touched by awnn code.
 */
typedef struct {
  uint count;
  tensor_t all_tensors[MAX_CACHE_SIZE];
  char name[MAX_STR_LENGTH];
  struct list_head list;
  nnm_elem_stack nnm_stack;
} lcache_t;

/* The stack's count follows awnn's `count` where code set it by hand. */
static inline void nnm_awnn_sync_count_(lcache_t *cache) {
  if (cache->nnm_stack.spill == NULL && cache->count <= MAX_CACHE_SIZE) {
    cache->nnm_stack.count = cache->count;
  }
}

static inline void lcache_push(lcache_t *cache, tensor_t t) {
  nnm_status status;
  nnm_awnn_sync_count_(cache);
  status = nnm_elem_stack_push(&cache->nnm_stack, cache->all_tensors, MAX_CACHE_SIZE, sizeof(tensor_t), &t);
  if (status != NNM_OK) {
    PERR("lcache_push on cache \"%.*s\": %s", (int)MAX_STR_LENGTH, cache->name, nnm_last_error());
    return;
  }
  cache->count = (uint)cache->nnm_stack.count;
}

static inline tensor_t lcache_pop(lcache_t *cache) {
  tensor_t t;
  nnm_status status;
  memset(&t, 0, sizeof t);
  nnm_awnn_sync_count_(cache);
  status = nnm_elem_stack_pop(&cache->nnm_stack, cache->all_tensors, MAX_CACHE_SIZE, sizeof(tensor_t), &t);
  if (status != NNM_OK) {
    PERR("lcache_pop on cache \"%.*s\": %s", (int)MAX_STR_LENGTH, cache->name, nnm_last_error());
    memset(&t, 0, sizeof t);
    t.mem_type = EMPTY_MEM;
    return t;
  }
  cache->count = (uint)cache->nnm_stack.count;
  return t;
}

static inline void make_empty_lcache(lcache_t *cache) {
  (void)nnm_elem_stack_init(&cache->nnm_stack);
  cache->count = 0;
}

/* Destroys every tensor on the cache (awnn: "merely needed most of the
 * time": layers pop and destroy one by one) and empties it. */
static inline void lcache_free_all(lcache_t *cache) {
  nnm_awnn_sync_count_(cache);
  while (cache->nnm_stack.count > 0) {
    size_t before = cache->nnm_stack.count;
    tensor_t t = lcache_pop(cache);
    if (cache->nnm_stack.count == before) break; /* refused (reported): a copy of a cache holding heap */
    tensor_destroy(&t);
  }
  (void)nnm_elem_stack_clear(&cache->nnm_stack);
  cache->count = 0;
}

static inline void lcache_dump_stat(lcache_t *cache) {
  size_t i;
  nnm_awnn_sync_count_(cache);
  PINF("\n-----Cache Stat ----");
  PINF("--- count= %u -", cache->count);
  for (i = 0; i < cache->nnm_stack.count; ++i) {
    tensor_t t;
    memset(&t, 0, sizeof t);
    if (nnm_elem_stack_get(&cache->nnm_stack, cache->all_tensors, MAX_CACHE_SIZE, sizeof(tensor_t), i, &t) != NNM_OK) {
      break;
    }
    PINF("--- [%u]: dim (%u,%u,%u, %u), addr %p, mem_type %d", (uint)i, t.dim.dims[0], t.dim.dims[1],
         t.dim.dims[2], t.dim.dims[3], (void *)t.data, (int)t.mem_type);
  }
  PINF("------   END     ----");
}

#ifdef __cplusplus
}
#endif

#endif /* NNM_COMPAT_AWNN_LAYER_H */
