/*
 * nnmem/compat/awnn/net.h: awnn's `awnn/net.h` over nnmem's nets. awnn's
 * sources keep their `#include "awnn/net.h"` and, with <prefix>/include/
 * nnmem/compat on the include path before awnn's own include directory
 * (CMake: `include_directories(BEFORE ${nnmem_INCLUDE_DIR}/nnmem/compat
 * ${nnmem_INCLUDE_DIR})`; linking nnmem::compat alone puts it after) and
 * nnmem linked (nnmem::static or nnmem::shared), build unchanged without
 * awnn's src/net.c. awnn's tensor.h, logging.h and
 * memory.h stay the caller's: this header includes them.
 *
 * What it declares, as awnn's does: `param_t` (name, data, diff,
 * velocity, list), net_attach_param, net_free_params, net_print_params,
 * net_get_param, net_attach_cache, net_free_cache, net_get_cache and
 * update_regulizer_gradient; with <nnmem/compat/awnn/layer.h>, lcache_t and
 * its calls. Header-only: each is a static inline function.
 *
 * How: a model's `struct list_head` members are its lists, initialised by
 * the model (init_list_head) as before. The first net_attach_param or
 * net_attach_cache on a head makes that head a list of a net nnmem keeps
 * (nnm_net_link); `param_t` and `lcache_t` are linked through their own
 * `list` member, so awnn's walks (`list_for_each_entry(p, head, list)`)
 * see awnn's types. A layer input that is a shallow copy of the output
 * before it (the same data buffer) is a view of that output: the inputs'
 * list and the outputs' list become one net.
 *
 * What differs from awnn (what nnmem adds):
 * - Every buffer is freed exactly once, and nothing is left behind although
 *   awnn frees outputs and params but never its inputs: net_free_params on
 *   the outputs frees each output with the inputs that view it, and once
 *   only placeholder inputs are left (the model's first input, whose
 *   gradient buffer `din` awnn allocated and never freed), the net frees
 *   them too. net_free_params on the inputs list works as well, in any
 *   order (awnn's "TODO: fix the double free here"). One exception: a model
 *   whose inputs view no output (a single layer) keeps its placeholder
 *   inputs until net_free_params frees the inputs' list; initialising that
 *   head again before is refused (reported), not corrupted.
 * - Lookups (net_get_param, net_get_cache) are O(1), by name in that list.
 * - Names are unique per list and at most NNM_NAME_MAX (127) bytes: an
 *   attach with a name taken or too long, or with a buffer another entry
 *   already owns, prints the reason (PERR) and attaches nothing; the
 *   tensors stay the caller's. Tensors with 0 dimensions (scalars) attach
 *   like any other.
 * - The entries' buffers are freed with awnn's tensor_destroy, velocity
 *   included, as awnn's net_free_params frees them.
 *
 * Thread safety: as awnn's: a model's lists are used by one thread at a
 * time; different models from different threads.
 */
#ifndef NNM_COMPAT_AWNN_NET_H
#define NNM_COMPAT_AWNN_NET_H

#include <string.h>

#include "awnn/layer.h"
#include "awnn/logging.h"
#include "awnn/memory.h"
#include "awnn/tensor.h"
#include "utils/list.h"

#include <nnmem/net.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct param {
  char name[MAX_STR_LENGTH];
  tensor_t data;
  tensor_t diff;
  tensor_t velocity; /* for momentum SGD: the solver allocates it */
  struct list_head list;
} param_t;

/* nnmem's view of an awnn tensor: only its buffer and kind matter. */
static inline nnm_tensor nnm_awnn_descriptor_(tensor_t t) {
  nnm_tensor d;
  uint i;
  memset(&d, 0, sizeof d);
  d.data = (void *)t.data;
  for (i = 0; i < (uint)(sizeof t.dim.dims / sizeof t.dim.dims[0]) && i < NNM_MAX_DIMS && t.dim.dims[i] != 0; ++i) {
    d.dims[i] = t.dim.dims[i];
    d.ndims = i + 1;
  }
  d.dtype = sizeof(T) == 8 ? (uint32_t)NNM_DTYPE_F64 : (uint32_t)NNM_DTYPE_F32;
  if (t.data == NULL || t.mem_type == EMPTY_MEM) {
    d.mem_kind = (uint32_t)NNM_MEM_KIND_PLACEHOLDER;
  } else {
    d.mem_kind = t.mem_type == GPU_MEM ? (uint32_t)NNM_MEM_KIND_DEVICE : (uint32_t)NNM_MEM_KIND_HOST;
  }
  d.ownership = (uint32_t)NNM_OWNERSHIP_OWNED;
  return d;
}

/* awnn's bounded name copy (the name array is MAX_STR_LENGTH bytes). */
static inline void nnm_awnn_copy_name_(char *to, char const *from) {
  size_t i;
  for (i = 0; i + 1 < (size_t)MAX_STR_LENGTH && from[i] != '\0'; ++i) to[i] = from[i];
  to[i] = '\0';
}

/* Gives a param_t back: the buffers it owns, its velocity, the struct. */
static inline void nnm_awnn_release_param_(void *ctx, struct list_head *node, uint32_t owned) {
  param_t *p = list_entry(node, param_t, list);
  (void)ctx;
  if (owned & NNM_OWNS_DATA) tensor_destroy(&p->data);
  if (owned & NNM_OWNS_DIFF) tensor_destroy(&p->diff);
  tensor_destroy(&p->velocity);
  mem_free(p);
}

/* Gives an lcache_t back: its heap, the struct (the tensors on it are the
 * layers', as in awnn). */
static inline void nnm_awnn_release_cache_(void *ctx, struct list_head *node, uint32_t owned) {
  lcache_t *c = list_entry(node, lcache_t, list);
  (void)ctx;
  (void)owned;
  (void)nnm_elem_stack_clear(&c->nnm_stack);
  mem_free(c);
}

/* nnm_net_lookup on `l`, or, where `l` is a by-value copy of a list head
 * (awnn copies its model_t, list heads and all: `model_t copy = model;`),
 * on the head it was copied from: the copy's `next` itself when the list
 * was empty then, else the head its first node points back to. The copy
 * finds the entries the original has now. */
static inline struct list_head *nnm_awnn_lookup_(struct list_head const *l, char const *name) {
  struct list_head *node = nnm_net_lookup(l, name);
  if (node == NULL && l != NULL && l->next != NULL && l->next != l && l->next->prev != l) {
    node = nnm_net_from_list(l->next) != NULL ? nnm_net_lookup(l->next, name) : nnm_net_lookup(l->next->prev, name);
  }
  return node;
}

/* Attaches the preallocated tensors `data` and `diff` to the list
 * `l_params` (params, layer outputs or layer inputs) under `name`. */
static inline void net_attach_param(struct list_head *l_params, char const *name, tensor_t data, tensor_t diff) {
  nnm_tensor d = nnm_awnn_descriptor_(data);
  nnm_tensor g = nnm_awnn_descriptor_(diff);
  nnm_status status;
  param_t *p = (param_t *)mem_alloc(sizeof(param_t));
  memset(p, 0, sizeof *p);
  nnm_awnn_copy_name_(p->name, name);
  p->data = data;
  p->diff = diff;
  p->velocity = tensor_make_placeholder(data.dim.dims, tensor_get_ndims(data));
  status = nnm_net_link(l_params, p->name, &p->list, &d, &g, nnm_awnn_release_param_, NULL);
  if (status != NNM_OK) {
    PERR("net_attach_param \"%s\": %s", p->name, nnm_last_error());
    tensor_destroy(&p->velocity);
    mem_free(p);
  }
}

/* Frees every entry of the list, with the buffers it owns. */
static inline void net_free_params(struct list_head *l_params) {
  if (nnm_net_free_list(l_params) != NNM_OK) PERR("net_free_params: %s", nnm_last_error());
}

/* Prints the names on the list. */
static inline void net_print_params(struct list_head const *l_params) {
  param_t *p;
  PINF("Dumping all net params: \n{");
  list_for_each_entry(p, l_params, list) { PSTR("%s,", p->name); }
  PINF("}/");
}

/* The entry named `name` on the list, or NULL. */
static inline param_t *net_get_param(struct list_head const *l_params, char const *name) {
  struct list_head *node = nnm_awnn_lookup_(l_params, name);
  return node == NULL ? NULL : list_entry(node, param_t, list);
}

/* Attaches an empty layer cache named `name` to the list `l_cache`. */
static inline void net_attach_cache(struct list_head *l_cache, char const *name) {
  nnm_status status;
  lcache_t *c = (lcache_t *)mem_alloc(sizeof(lcache_t));
  memset(c, 0, sizeof *c); /* zero-filled: an empty cache */
  nnm_awnn_copy_name_(c->name, name);
  status = nnm_net_link(l_cache, c->name, &c->list, NULL, NULL, nnm_awnn_release_cache_, NULL);
  if (status != NNM_OK) {
    PERR("net_attach_cache \"%s\": %s", c->name, nnm_last_error());
    mem_free(c);
  }
}

/* Frees every cache of the list (not the tensors on them: the layers'). */
static inline void net_free_cache(struct list_head *l_cache) {
  if (nnm_net_free_list(l_cache) != NNM_OK) PERR("net_free_cache: %s", nnm_last_error());
}

/* The cache named `name` on the list, or NULL. */
static inline lcache_t *net_get_cache(struct list_head const *l_cache, char const *name) {
  struct list_head *node = nnm_awnn_lookup_(l_cache, name);
  return node == NULL ? NULL : list_entry(node, lcache_t, list);
}

/* dx += reg * x, element by element (the regulariser's gradient). */
static inline void update_regulizer_gradient(tensor_t x, tensor_t dx, T reg) {
  size_t n = tensor_get_capacity(x);
  size_t i;
  AWNN_CHECK_EQ(n, tensor_get_capacity(dx));
  for (i = 0; i < n; ++i) dx.data[i] += reg * x.data[i];
}

#ifdef __cplusplus
}
#endif

#endif /* NNM_COMPAT_AWNN_NET_H */
