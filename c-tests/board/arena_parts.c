/*
 * The tensor arena in an embedded build made without the arena-guard and
 * arena-recording features (c-tests/board/test.sh links it with the
 * stripped M4F library and with the M0+ library with messages, neither of
 * which has them): asking for guard mode or recording is INVALID_ARGUMENT
 * and changes nothing, every category reads zero, and everything else
 * works as with them (c-tests/arena_init_test.c covers that in the builds
 * with both). With ARENA_PARTS_MESSAGES the refusals' messages must name
 * the feature; otherwise (strip-messages) the last error is the status's
 * name. Exits with the number of failed checks.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <nnmem.h>

static int failed;
static int passed;

static void check(int ok, int line, const char *what) {
    if (ok) {
        passed++;
    } else {
        failed++;
        printf("arena_parts.c:%d: FAILED: %s (last error: %s)\n", line, what, nnm_last_error());
    }
}
#define CHECK(cond) check((cond) ? 1 : 0, __LINE__, #cond)
/* The call fails with `status` and the last error holds `text` (the
 * stripped library's message is the status's name instead). */
#ifdef ARENA_PARTS_MESSAGES
#define CHECK_REFUSED(call, status, text) CHECK((call) == (status) && strstr(nnm_last_error(), (text)) != NULL)
#else
#define CHECK_REFUSED(call, status, text) \
    CHECK((call) == (status) && strcmp(nnm_last_error(), nnm_status_str(status)) == 0 && (text) != NULL)
#endif

static uint64_t state[NNM_ARENA_STATE_BYTES(4, 8) / 8 + 1];
static uint64_t buffer[1024 / 8];

int main(void) {
    nnm_arena *a = (nnm_arena *)state; /* a value the refused calls must leave alone */
    nnm_arena *const untouched = a;
    void *p = NULL, *t = NULL, *head = NULL;
    nnm_arena_sizes s;
    nnm_arena_category_stats c;

    /* Guard mode and recording are not in this build: that is the answer,
     * also where the state would be too small for guard mode's records. */
    CHECK_REFUSED(nnm_arena_init(state, sizeof state, 4, buffer, sizeof buffer, 0, NNM_ARENA_GUARD, &a),
                  NNM_INVALID_ARGUMENT, "guard mode is not in this build of nnmem: build it with the cargo feature arena-guard");
    CHECK_REFUSED(nnm_arena_init(state, NNM_ARENA_STATE_BYTES(4, 0), 4, buffer, sizeof buffer, 0, NNM_ARENA_GUARD, &a),
                  NNM_INVALID_ARGUMENT, "arena-guard");
    CHECK_REFUSED(nnm_arena_init(state, sizeof state, 4, buffer, sizeof buffer, 0, NNM_ARENA_RECORDING, &a),
                  NNM_INVALID_ARGUMENT, "recording is not in this build of nnmem: build it with the cargo feature arena-recording");
    CHECK(a == untouched);

    /* Without them, the arena works. */
    if (nnm_arena_init(state, sizeof state, 4, buffer, sizeof buffer, 0, 0, &a) != NNM_OK) {
        printf("arena_parts.c: nnm_arena_init failed: %s\n", nnm_last_error());
        return 1;
    }
    CHECK_REFUSED(nnm_arena_set_recording(a, 1), NNM_INVALID_ARGUMENT, "the cargo feature arena-recording");
    CHECK(nnm_arena_set_recording(a, 0) == NNM_OK);
    CHECK(nnm_arena_alloc_persistent(a, 100, 0, NNM_ARENA_CATEGORY_OP_DATA, &p) == NNM_OK);
    CHECK(nnm_arena_reserve_head(a, 208, NNM_ARENA_CATEGORY_PLANNED_TENSOR_DATA, &head) == NNM_OK);
    CHECK(nnm_arena_alloc_temp(a, 64, 0, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &t) == NNM_OK);
    CHECK(nnm_arena_release_temp(a, t) == NNM_OK && nnm_arena_reset_temp(a) == NNM_OK);
    /* check is OK without guard mode. */
    CHECK(nnm_arena_check(a) == NNM_OK);

    /* Every category reads zero; an unknown one is still refused. */
    memset(&c, 0xff, sizeof c);
    CHECK(nnm_arena_get_category(a, NNM_ARENA_CATEGORY_OP_DATA, &c) == NNM_OK);
    CHECK(c.count == 0 && c.requested_bytes == 0 && c.used_bytes == 0);
    CHECK_REFUSED(nnm_arena_get_category(a, 99, &c), NNM_INVALID_ARGUMENT, "unknown category 99");

    /* The sizes, exact: the head 208 B from the 16-aligned start, a temp
     * peak of 64 B right above it, and the tail's 100 B aligned down to 16
     * from the buffer's end. The smallest arena puts the tail right on the
     * temp peak (which is 16-aligned): 372 B after the start. */
    CHECK(nnm_arena_get_sizes(a, &s) == NNM_OK);
    CHECK(s.head_bytes == 208 && s.temp_peak_bytes == 64 && s.temp_bytes == 0);
    CHECK(s.persistent_count == 1 && s.temp_count == 0 && s.plan_count == 1);
    CHECK((unsigned char *)head == (unsigned char *)buffer + s.alignment_lost_bytes);
    CHECK((uintptr_t)p % 16 == 0 && s.tail_bytes == (uint64_t)((unsigned char *)buffer + sizeof buffer - (unsigned char *)p));
    CHECK(s.tail_bytes >= 100 && s.tail_bytes < 116);
    CHECK(s.required_bytes == s.alignment_lost_bytes + 372);
    CHECK(s.capacity_bytes == sizeof buffer && s.largest_alignment_bytes == 16);

    nnm_arena_free(a);
    CHECK_REFUSED(nnm_arena_check(a), NNM_INVALID_ARGUMENT, "is not a live nnm_arena");
    printf("arena_parts: %d passed, %d failed\n", passed, failed);
    return failed;
}
