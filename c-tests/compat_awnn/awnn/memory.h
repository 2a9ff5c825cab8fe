/*
 * Stand-in for awnn's `awnn/memory.h`: mem_alloc and mem_free, counted.
 */
#ifndef AWNN_STANDIN_MEMORY_H
#define AWNN_STANDIN_MEMORY_H

#include <stddef.h>

#include "awnn/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Blocks from mem_alloc not given back to mem_free yet. */
extern long awnn_standin_live_blocks;
void *mem_alloc(size_t size);
void *mem_zalloc(size_t size);
void mem_free(void *data);

#ifdef __cplusplus
}
#endif

#endif
