/*
 * Stand-in for awnn's `awnn/logging.h`: awnn's log macros (PINF, PSTR,
 * PDBG, PMAJOR, PERR), all formatting through one function that counts the
 * error lines and keeps the last, so that the test can check what was
 * reported.
 */
#ifndef AWNN_STANDIN_LOGGING_H
#define AWNN_STANDIN_LOGGING_H

#include "awnn/common.h"

#ifdef __cplusplus
extern "C" {
#endif

void awnn_standin_log(int is_error, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Error lines printed so far, and the last one. */
extern int awnn_standin_errors;
extern char awnn_standin_last_error[512];

#ifdef __cplusplus
}
#endif

#define PINF(...) awnn_standin_log(0, __VA_ARGS__)
#define PSTR(...) awnn_standin_log(0, __VA_ARGS__)
#define PDBG(...) awnn_standin_log(0, __VA_ARGS__)
#define PMAJOR(...) awnn_standin_log(0, __VA_ARGS__)
#define PERR(...) awnn_standin_log(1, __VA_ARGS__)

#endif
