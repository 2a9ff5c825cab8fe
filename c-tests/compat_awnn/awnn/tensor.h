/*
 * Stand-in for awnn's `awnn/tensor.h`, from awnn's documented types: dim_t
 * (MAX_DIM dimensions, 0 past the last), tensor_t (dim, mem_type, data),
 * and the calls the compat headers and the test use. Tensors' buffers come
 * from mem_alloc, so the block count covers them.
 */
#ifndef AWNN_STANDIN_TENSOR_H
#define AWNN_STANDIN_TENSOR_H

#include "awnn/common.h"
#include "awnn/logging.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MAX_DIM (4)

typedef struct {
  uint dims[MAX_DIM];
} dim_t;

typedef enum {
  CPU_MEM = 0,
  GPU_MEM = 1,
  BAD_MEM = 2,
  EMPTY_MEM = 3
} memory_type_t;

typedef struct tensor {
  dim_t dim;
  memory_type_t mem_type;
  T *data;
} tensor_t;

uint dim_get_capacity(dim_t dim);
uint dim_get_ndims(dim_t dim);
tensor_t tensor_make(uint const shape[], uint const ndims);
tensor_t tensor_make_placeholder(uint const shape[], uint const ndims);
tensor_t tensor_make_alike(tensor_t t);
void tensor_destroy(tensor_t *t);

#define tensor_get_capacity(x) (dim_get_capacity((x).dim))
#define tensor_get_ndims(x) (dim_get_ndims((x).dim))

#ifdef __cplusplus
}
#endif

#endif
