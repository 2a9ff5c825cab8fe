/*
 * Stand-in for awnn's `awnn/common.h`, written from awnn's documented types
 * (no awnn code): what the compat headers and the test use.
 */
#ifndef AWNN_STANDIN_COMMON_H
#define AWNN_STANDIN_COMMON_H

#include <stdio.h>
#include <stdlib.h>

typedef unsigned int uint;
#ifdef AWNN_USE_FLT32
typedef float T;
#else
typedef double T;
#endif
enum { MAX_STR_LENGTH = 255 };
typedef int status_t;
enum { S_OK = 0, S_ERR = -1 };

/* awnn aborts on a failed check. */
#define AWNN_CHECK_EQ(a, b)                                                              \
  do {                                                                                   \
    if (!((a) == (b))) {                                                                 \
      fprintf(stderr, "AWNN_CHECK_EQ(%s, %s) failed at %s:%d\n", #a, #b, __FILE__, __LINE__); \
      abort();                                                                           \
    }                                                                                    \
  } while (0)
#define AWNN_CHECK_NE(a, b)                                                              \
  do {                                                                                   \
    if ((a) == (b)) {                                                                    \
      fprintf(stderr, "AWNN_CHECK_NE(%s, %s) failed at %s:%d\n", #a, #b, __FILE__, __LINE__); \
      abort();                                                                           \
    }                                                                                    \
  } while (0)

#endif
