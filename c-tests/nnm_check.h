/*
 * Tiny check harness shared by the C tests. Header-only, valid C11 and C++.
 *
 * Each CHECK counts a pass or prints file:line and the failed expression,
 * then carries on, so one run lists every failure. nnm_last_error() is
 * printed only where it belongs to the check: a call that failed (CHECK_OK,
 * CHECK_FAILS) or a message checked (CHECK_ERROR_HAS). A plain CHECK or a
 * call that succeeded would print whatever failed last on the thread, maybe
 * long before, as if it explained this failure.
 * nnm_check_report() prints "N passed, M failed" and gives main's exit code.
 */
#ifndef NNM_CHECK_H
#define NNM_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnmem.h"

static int nnm_check_passed;
static int nnm_check_failed;

/* Records a condition; `show_error`: the condition is about nnm_last_error(). */
static inline void nnm_check_record_ex(int ok, int show_error, const char *file, int line, const char *what) {
    if (ok) {
        ++nnm_check_passed;
        return;
    }
    ++nnm_check_failed;
    if (show_error) {
        const char *err = nnm_last_error();
        fprintf(stderr, "%s:%d: FAILED: %s\n    nnm_last_error(): \"%s\"\n", file, line, what,
                err ? err : "(NULL)");
    } else {
        fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, what);
    }
}

static inline void nnm_check_record(int ok, const char *file, int line, const char *what) {
    nnm_check_record_ex(ok, 0, file, line, what);
}

static inline int nnm_check_has_message(void) {
    const char *err = nnm_last_error();
    return err != NULL && err[0] != '\0';
}

/* Records the outcome of a call that returned `got` where `want` was expected. */
static inline void nnm_check_status(int got, int want, int need_message, const char *file, int line,
                                    const char *call) {
    if (got == want && (!need_message || nnm_check_has_message())) {
        ++nnm_check_passed;
        return;
    }
    ++nnm_check_failed;
    fprintf(stderr, "%s:%d: FAILED: %s\n    returned %d (%s), expected %d (%s)%s\n", file, line, call, got,
            nnm_status_str(got), want, nnm_status_str(want), got == want ? ", but nnm_last_error() is empty" : "");
    if (got != 0) {
        /* The call failed: the message is its own. (After a success it
         * would be an earlier failure's.) */
        const char *err = nnm_last_error();
        fprintf(stderr, "    nnm_last_error(): \"%s\"\n", err ? err : "(NULL)");
    }
}

#define CHECK(cond) nnm_check_record((cond) ? 1 : 0, __FILE__, __LINE__, #cond)
/* The call succeeds. */
#define CHECK_OK(call) nnm_check_status((int)(call), (int)NNM_OK, 0, __FILE__, __LINE__, #call)
/* The call fails with exactly `status` and leaves a non-empty nnm_last_error(). */
#define CHECK_FAILS(call, status) \
    nnm_check_status((int)(call), (int)(status), 1, __FILE__, __LINE__, #call)
/* The call fails with some status (the exact code is not part of the contract)
 * and leaves a non-empty nnm_last_error(). */
#define CHECK_NOT_OK(call)                                                                    \
    do {                                                                                      \
        int nnm_s_ = (int)(call);                                                             \
        nnm_check_record_ex(nnm_s_ != (int)NNM_OK && nnm_check_has_message(), nnm_s_ != (int)NNM_OK, \
                            __FILE__, __LINE__, #call " fails with a message");               \
    } while (0)

/* Whether `text` (NULL: no text) contains `part`. */
static inline int nnm_check_contains(const char *text, const char *part) {
    return text != NULL && strstr(text, part) != NULL;
}

/* The last failure on this thread left a message containing `part`. */
#define CHECK_ERROR_HAS(part) \
    nnm_check_record_ex(nnm_check_contains(nnm_last_error(), (part)), 1, __FILE__, __LINE__, \
                        "nnm_last_error() contains " #part)

/* The call fails with exactly `status` and a message containing `part`. */
#define CHECK_REFUSES(call, status, part) \
    do {                                  \
        CHECK_FAILS(call, status);        \
        CHECK_ERROR_HAS(part);            \
    } while (0)

/* A step the rest of a test needs: checked, and the test (a function
 * returning void) stops if it fails. */
#define REQUIRE_OK(call)                                                         \
    do {                                                                         \
        int require_s_ = (int)(call);                                            \
        nnm_check_status(require_s_, (int)NNM_OK, 0, __FILE__, __LINE__, #call); \
        if (require_s_ != (int)NNM_OK) return;                                   \
    } while (0)

/* A call writing text the copy_text way (buf, len, out_len) about `handle`. */
typedef nnm_status (*nnm_check_text_fn)(const void *handle, uint32_t format, char *buf, size_t len, size_t *out_len);

/* The text through `call`, checked three ways: the size query, one byte
 * short (NNM_BUFFER_TOO_SMALL, out_len untouched), then the copy. Returns
 * it malloc'd (free it), or NULL when a step failed. */
static inline char *nnm_check_text(const void *handle, nnm_check_text_fn call, uint32_t format) {
    size_t needed = 0, written = 7;
    char *buf;
    CHECK_OK(call(handle, format, NULL, 0, &needed));
    if (needed < 2) return NULL;
    buf = (char *)malloc(needed);
    if (buf == NULL) return NULL;
    CHECK_FAILS(call(handle, format, buf, needed - 1, &written), NNM_BUFFER_TOO_SMALL);
    CHECK(written == 7);
    CHECK_OK(call(handle, format, buf, needed, &written));
    CHECK(written == needed && strlen(buf) + 1 == needed);
    return buf;
}

static inline int nnm_check_report(void) {
    printf("%d passed, %d failed\n", nnm_check_passed, nnm_check_failed);
    return nnm_check_failed == 0 ? 0 : 1;
}

#endif /* NNM_CHECK_H */
