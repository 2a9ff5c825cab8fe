/*
 * The stand-in awnn's tensor, memory and logging functions (see the awnn headers
 * here): what awnn's src/tensor.c and friends provide, written from their
 * documented behaviour.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awnn/logging.h"
#include "awnn/memory.h"
#include "awnn/tensor.h"

long awnn_standin_live_blocks;
int awnn_standin_errors;
char awnn_standin_last_error[512];

void awnn_standin_log(int is_error, const char *format, ...) {
    char line[512];
    va_list args;
    va_start(args, format);
    vsnprintf(line, sizeof line, format, args);
    va_end(args);
    if (is_error) {
        ++awnn_standin_errors;
        memcpy(awnn_standin_last_error, line, sizeof line);
        fprintf(stderr, "[ERR] %s\n", line);
    } else if (getenv("AWNN_STANDIN_VERBOSE") != NULL) {
        fprintf(stderr, "[INF] %s\n", line);
    }
}

void *mem_alloc(size_t size) {
    void *p = malloc(size);
    if (p != NULL) ++awnn_standin_live_blocks;
    return p;
}

void *mem_zalloc(size_t size) {
    void *p = mem_alloc(size);
    if (p != NULL) memset(p, 0, size);
    return p;
}

void mem_free(void *data) {
    if (data != NULL) --awnn_standin_live_blocks;
    free(data);
}

uint dim_get_capacity(dim_t dim) {
    uint i, n = 1;
    for (i = 0; i < MAX_DIM && dim.dims[i] != 0; ++i) n *= dim.dims[i];
    return n;
}

uint dim_get_ndims(dim_t dim) {
    uint i;
    for (i = 0; i < MAX_DIM && dim.dims[i] != 0; ++i) {
    }
    return i;
}

static dim_t dim_of(uint const shape[], uint ndims) {
    dim_t d;
    uint i;
    memset(&d, 0, sizeof d);
    for (i = 0; i < ndims && i < MAX_DIM; ++i) d.dims[i] = shape[i];
    return d;
}

tensor_t tensor_make(uint const shape[], uint const ndims) {
    tensor_t t;
    t.dim = dim_of(shape, ndims);
    t.mem_type = CPU_MEM;
    t.data = (T *)mem_zalloc(sizeof(T) * dim_get_capacity(t.dim));
    return t;
}

tensor_t tensor_make_placeholder(uint const shape[], uint const ndims) {
    tensor_t t;
    t.dim = dim_of(shape, ndims);
    t.mem_type = EMPTY_MEM;
    t.data = NULL;
    return t;
}

tensor_t tensor_make_alike(tensor_t t) {
    return tensor_make(t.dim.dims, dim_get_ndims(t.dim));
}

void tensor_destroy(tensor_t *t) {
    AWNN_CHECK_NE(t->mem_type, GPU_MEM);
    if (t->mem_type == CPU_MEM) {
        mem_free(t->data);
        t->data = NULL;
    }
}
