/*
 * The tensor arena from C, in a TFLite-Micro-style interpreter flow:
 *
 *   init     persistent node array, eval tensors, quantization data, op data
 *            and a variable (state) buffer, each in its category;
 *   prepare  temp scratch per op, released, then the temp scope reset;
 *   plan     an nnm_planner plans the activations and the plan is committed
 *            to the head, giving each tensor its address;
 *   invoke   a loop that writes and reads the planned buffers, checked
 *            against a reference computed in malloc'd memory;
 *   report   text into a buffer and JSON through a callback.
 *
 * The same flow runs as a dry run (no memory) to learn the exact arena
 * size; an arena of that size runs it, one byte less fails with "missing
 * 1 B"; the split (two-buffer) mode likewise. Then every error path, guard
 * mode catching an overrun and a write after release, and double frees.
 *
 * Valid C11 and C++ (built both ways).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnm_check.h"
#include "nnmem.h"

#ifdef __cplusplus
#define ALIGNOF(type) alignof(type)
#else
#define ALIGNOF(type) _Alignof(type)
#endif

/* --- the model: a chain of element-wise ops with one skip connection ----- */

#define NUM_OPS 6
#define NUM_TENSORS (NUM_OPS + 1)
#define INVOKES 3

/* Elements of tensor t (tensor 0 is the input, tensor NUM_OPS the output). */
static const size_t TENSOR_LEN[NUM_TENSORS] = {64, 128, 96, 128, 64, 32, 16};
/* Op 4 also reads tensor 1, so tensor 1 lives from step 0 to step 4. */
#define SKIP_OP 4
#define SKIP_TENSOR 1

typedef struct eval_tensor { /* TfLiteEvalTensor-like */
    int32_t *data;
    size_t len;
} eval_tensor;

typedef struct quant_params { /* TfLiteAffineQuantization-like */
    int32_t zero_point;
    int32_t multiplier;
} quant_params;

typedef struct op_data { /* an op's OpData */
    int32_t scale;
    int32_t bias;
    int64_t prepared_checksum; /* computed in prepare from temp scratch */
} op_data;

typedef struct node { /* NodeAndRegistration-like */
    int input;
    int output;
    op_data *data;
} node;

typedef struct interpreter {
    nnm_arena *arena;
    int dry; /* a dry run: addresses must not be dereferenced */
    node *nodes;
    eval_tensor *tensors;
    quant_params *quant;
    int64_t *state; /* a variable tensor: accumulates across invokes */
    nnm_planner *planner;
} interpreter;

/* Runs `call`; on failure returns its status from the enclosing function. */
#define TRY(call)                             \
    do {                                      \
        nnm_status try_s_ = (call);           \
        if (try_s_ != NNM_OK) return try_s_;  \
    } while (0)

static int32_t op_scale(int i) { return 2 + i; }
static int32_t op_bias(int i) { return 7 * i - 3; }

static nnm_status init(interpreter *in) {
    void *p = NULL;
    TRY(nnm_arena_alloc_persistent(in->arena, NUM_OPS * sizeof(node), ALIGNOF(node),
                                   NNM_ARENA_CATEGORY_NODE_AND_REGISTRATION, &p));
    in->nodes = (node *)p;
    TRY(nnm_arena_alloc_persistent(in->arena, NUM_TENSORS * sizeof(eval_tensor), ALIGNOF(eval_tensor),
                                   NNM_ARENA_CATEGORY_EVAL_TENSOR_DATA, &p));
    in->tensors = (eval_tensor *)p;
    TRY(nnm_arena_alloc_persistent(in->arena, NUM_TENSORS * sizeof(quant_params), 0,
                                   NNM_ARENA_CATEGORY_PERSISTENT_QUANTIZATION_DATA, &p));
    in->quant = (quant_params *)p;
    TRY(nnm_arena_alloc_persistent(in->arena, sizeof(int64_t) * TENSOR_LEN[NUM_OPS], 8,
                                   NNM_ARENA_CATEGORY_VARIABLE_BUFFER_DATA, &p));
    in->state = (int64_t *)p;
    for (int i = 0; i < NUM_OPS; ++i) {
        TRY(nnm_arena_alloc_persistent(in->arena, sizeof(op_data), 0, NNM_ARENA_CATEGORY_OP_DATA, &p));
        if (!in->dry) {
            op_data *d = (op_data *)p;
            d->scale = op_scale(i);
            d->bias = op_bias(i);
            d->prepared_checksum = 0;
            in->nodes[i].input = i;
            in->nodes[i].output = i + 1;
            in->nodes[i].data = d;
        }
    }
    if (!in->dry) {
        for (int t = 0; t < NUM_TENSORS; ++t) {
            in->tensors[t].data = NULL;
            in->tensors[t].len = TENSOR_LEN[t];
            in->quant[t].zero_point = t;
            in->quant[t].multiplier = 1;
        }
        memset(in->state, 0, sizeof(int64_t) * TENSOR_LEN[NUM_OPS]);
    }
    return NNM_OK;
}

/* Each op takes temp scratch (a table it fills and sums), keeps the sum in
 * its persistent op data, and releases the scratch; the scope ends with a
 * reset, as TFLite Micro does after each op's Prepare. Two scratch buffers
 * per op, released in allocation order (not LIFO). */
static nnm_status prepare(interpreter *in) {
    for (int i = 0; i < NUM_OPS; ++i) {
        size_t n = TENSOR_LEN[i + 1] * (size_t)(i + 1);
        void *a = NULL;
        void *b = NULL;
        TRY(nnm_arena_alloc_temp(in->arena, n * sizeof(int32_t), 0, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &a));
        TRY(nnm_arena_alloc_temp(in->arena, 40 + (size_t)i, 1, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &b));
        if (!in->dry) {
            int32_t *table = (int32_t *)a;
            int64_t sum = 0;
            for (size_t j = 0; j < n; ++j) table[j] = (int32_t)(j * (size_t)op_scale(i));
            memset(b, 0xAB, 40 + (size_t)i);
            for (size_t j = 0; j < n; ++j) sum += table[j];
            in->nodes[i].data->prepared_checksum = sum;
        }
        TRY(nnm_arena_release_temp(in->arena, a));
        TRY(nnm_arena_release_temp(in->arena, b));
        TRY(nnm_arena_reset_temp(in->arena));
    }
    return NNM_OK;
}

/* Plans the activations (tensor t is written at step t - 1 and read at step
 * t; tensor 0 is live from step 0; the skip keeps tensor 1 to SKIP_OP) and
 * commits the plan to the head. */
static nnm_status plan(interpreter *in) {
    void *addresses[NUM_TENSORS];
    TRY(nnm_planner_new(&in->planner));
    for (int t = 0; t < NUM_TENSORS; ++t) {
        int64_t first = t == 0 ? 0 : t - 1;
        int64_t last = t == NUM_OPS ? NUM_OPS - 1 : t;
        if (t == SKIP_TENSOR) last = SKIP_OP;
        TRY(nnm_planner_add_buffer(in->planner, TENSOR_LEN[t] * sizeof(int32_t), first, last, NULL));
    }
    TRY(nnm_planner_plan(in->planner));
    TRY(nnm_arena_commit_plan(in->arena, in->planner, NNM_ARENA_CATEGORY_PLANNED_TENSOR_DATA, addresses,
                              NUM_TENSORS));
    if (!in->dry) {
        for (int t = 0; t < NUM_TENSORS; ++t) in->tensors[t].data = (int32_t *)addresses[t];
    }
    return NNM_OK;
}

/* One op: out[j] = in[j % in_len] * scale + bias (+ the skip tensor). */
static void eval_op(int i, const int32_t *input, size_t in_len, const int32_t *skip, size_t skip_len,
                    int32_t *output, size_t out_len) {
    for (size_t j = 0; j < out_len; ++j) {
        int32_t v = input[j % in_len] * op_scale(i) + op_bias(i);
        if (skip != NULL) v += skip[j % skip_len];
        output[j] = v;
    }
}

static void fill_input(int32_t *data, size_t len, int invoke) {
    for (size_t j = 0; j < len; ++j) data[j] = (int32_t)((j * 31 + (size_t)invoke * 7) % 23) - 11;
}

/* The same model in malloc'd memory, every tensor in its own buffer. */
static void reference(int invoke, int32_t *out) {
    int32_t *t[NUM_TENSORS];
    for (int k = 0; k < NUM_TENSORS; ++k) t[k] = (int32_t *)malloc(TENSOR_LEN[k] * sizeof(int32_t));
    fill_input(t[0], TENSOR_LEN[0], invoke);
    for (int i = 0; i < NUM_OPS; ++i) {
        const int32_t *skip = i == SKIP_OP ? t[SKIP_TENSOR] : NULL;
        eval_op(i, t[i], TENSOR_LEN[i], skip, TENSOR_LEN[SKIP_TENSOR], t[i + 1], TENSOR_LEN[i + 1]);
    }
    memcpy(out, t[NUM_OPS], TENSOR_LEN[NUM_OPS] * sizeof(int32_t));
    for (int k = 0; k < NUM_TENSORS; ++k) free(t[k]);
}

static nnm_status invoke(interpreter *in, int n) {
    if (in->dry) return NNM_OK;
    eval_tensor *t = in->tensors;
    fill_input(t[0].data, t[0].len, n);
    for (int i = 0; i < NUM_OPS; ++i) {
        const node *nd = &in->nodes[i];
        const int32_t *skip = i == SKIP_OP ? t[SKIP_TENSOR].data : NULL;
        eval_op(i, t[nd->input].data, t[nd->input].len, skip, t[SKIP_TENSOR].len, t[nd->output].data,
                t[nd->output].len);
    }
    for (size_t j = 0; j < t[NUM_OPS].len; ++j) in->state[j] += t[NUM_OPS].data[j];
    return NNM_OK;
}

/* The whole flow; returns the first failing status. */
static nnm_status run_flow(interpreter *in) {
    TRY(init(in));
    TRY(prepare(in));
    TRY(plan(in));
    for (int n = 0; n < INVOKES; ++n) TRY(invoke(in, n));
    return NNM_OK;
}

static void finish(interpreter *in) {
    nnm_planner_free(in->planner);
    nnm_arena_free(in->arena);
    in->planner = NULL;
    in->arena = NULL;
}

/* Checks the outputs and the state after INVOKES invokes. */
static void check_results(const interpreter *in) {
    int32_t expected[16];
    int64_t state[16] = {0};
    CHECK(TENSOR_LEN[NUM_OPS] == 16);
    for (int n = 0; n < INVOKES; ++n) {
        reference(n, expected);
        for (size_t j = 0; j < 16; ++j) state[j] += expected[j];
    }
    CHECK(memcmp(in->tensors[NUM_OPS].data, expected, sizeof expected) == 0);
    CHECK(memcmp(in->state, state, sizeof state) == 0);
    for (int i = 0; i < NUM_OPS; ++i) CHECK(in->nodes[i].data->prepared_checksum > 0);
}

/* A buffer of `len` bytes at a 64-aligned address inside a malloc'd block. */
typedef struct aligned_block {
    void *raw;
    uint8_t *ptr;
} aligned_block;

static aligned_block aligned_alloc64(size_t len) {
    aligned_block b;
    b.raw = malloc(len + 64);
    b.ptr = (uint8_t *)b.raw + (64 - (uintptr_t)b.raw % 64) % 64;
    return b;
}

static int contains(const char *haystack, const char *needle) { return strstr(haystack, needle) != NULL; }

/* --- the flow: dry run, exact size, one byte less, split mode ------------ */

static nnm_arena_sizes dry_run_sizes(uint32_t flags) {
    interpreter in;
    nnm_arena_sizes s;
    memset(&in, 0, sizeof in);
    memset(&s, 0, sizeof s);
    in.dry = 1;
    CHECK_OK(nnm_arena_new_dry_run(0, flags, &in.arena));
    CHECK_OK(run_flow(&in));
    CHECK_OK(nnm_arena_get_sizes(in.arena, &s));
    /* TFLite Micro's used bytes leave out the temp peak (op 2's 1536 B of
     * scratch in prepare exceed the activations' head): too small. */
    CHECK(s.temp_peak_bytes > 0);
    CHECK(s.required_bytes > s.used_bytes);
    CHECK(s.capacity_bytes == 0);
    finish(&in);
    return s;
}

static void test_exact_size(uint32_t flags) {
    nnm_arena_sizes need = dry_run_sizes(flags);
    printf("flags %u: dry run says %llu B (used %llu B, temp peak %llu B; split %llu + %llu B)\n", flags,
           (unsigned long long)need.required_bytes, (unsigned long long)need.used_bytes,
           (unsigned long long)need.temp_peak_bytes, (unsigned long long)need.required_persistent_bytes,
           (unsigned long long)need.required_nonpersistent_bytes);

    /* Exactly that size: everything runs and the results are right. */
    aligned_block block = aligned_alloc64((size_t)need.required_bytes);
    interpreter in;
    memset(&in, 0, sizeof in);
    CHECK_OK(nnm_arena_new(block.ptr, (size_t)need.required_bytes, 0, flags, &in.arena));
    CHECK_OK(run_flow(&in));
    check_results(&in);
    CHECK_OK(nnm_arena_check(in.arena));
    nnm_arena_sizes got;
    CHECK_OK(nnm_arena_get_sizes(in.arena, &got));
    CHECK(got.required_bytes == need.required_bytes);
    finish(&in);

    /* One byte less: some call fails, saying exactly one byte is missing. */
    memset(&in, 0, sizeof in);
    CHECK_OK(nnm_arena_new(block.ptr, (size_t)need.required_bytes - 1, 0, flags, &in.arena));
    CHECK_FAILS(run_flow(&in), NNM_DOES_NOT_FIT);
    CHECK(contains(nnm_last_error(), "missing 1 B"));
    CHECK(contains(nnm_last_error(), "requested "));
    CHECK(contains(nnm_last_error(), "available "));
    finish(&in);
    free(block.raw);

    /* Two buffers (tail in one, head and temp in the other), each exact. */
    size_t p_len = (size_t)need.required_persistent_bytes;
    size_t np_len = (size_t)need.required_nonpersistent_bytes;
    aligned_block pb = aligned_alloc64(p_len);
    aligned_block npb = aligned_alloc64(np_len);
    memset(&in, 0, sizeof in);
    CHECK_OK(nnm_arena_new_split(pb.ptr, p_len, npb.ptr, np_len, 0, flags, &in.arena));
    CHECK_OK(run_flow(&in));
    check_results(&in);
    CHECK((uint8_t *)in.nodes >= pb.ptr && (uint8_t *)in.nodes < pb.ptr + p_len);
    CHECK((uint8_t *)in.tensors[0].data >= npb.ptr && (uint8_t *)in.tensors[0].data < npb.ptr + np_len);
    CHECK_OK(nnm_arena_check(in.arena));
    finish(&in);
    for (int side = 0; side < 2; ++side) {
        memset(&in, 0, sizeof in);
        CHECK_OK(nnm_arena_new_split(pb.ptr, p_len - (side == 0), npb.ptr, np_len - (side == 1), 0, flags,
                                     &in.arena));
        CHECK_FAILS(run_flow(&in), NNM_DOES_NOT_FIT);
        CHECK(contains(nnm_last_error(), "missing 1 B"));
        CHECK(contains(nnm_last_error(), side == 0 ? "persistent buffer too small" : "non-persistent buffer too small"));
        finish(&in);
    }
    free(pb.raw);
    free(npb.raw);
}

/* --- reports ----------------------------------------------------------------- */

typedef struct collected {
    char text[8192];
    size_t len;
    int calls;
} collected;

static void collect(void *user, const char *text, size_t len) {
    collected *c = (collected *)user;
    c->calls++;
    if (c->len + len < sizeof c->text) {
        memcpy(c->text + c->len, text, len);
        c->len += len;
        c->text[c->len] = '\0';
    }
    if (text[len] != '\0') c->calls += 1000; /* each line must be NUL-terminated */
}

static void test_reports(void) {
    interpreter in;
    memset(&in, 0, sizeof in);
    CHECK_OK(nnm_arena_new_owned(64 * 1024, 0, NNM_ARENA_RECORDING, &in.arena));
    uint32_t mine = 0;
    CHECK_OK(nnm_arena_register_category(in.arena, "my \"codec\" tables", &mine));
    CHECK(mine == NNM_ARENA_CATEGORY_TEMP_SCRATCH + 1);
    void *p = NULL;
    CHECK_OK(nnm_arena_alloc_persistent(in.arena, 100, 0, mine, &p));
    CHECK_OK(run_flow(&in));
    check_results(&in);

    nnm_arena_category_stats st;
    CHECK_OK(nnm_arena_get_category(in.arena, NNM_ARENA_CATEGORY_OP_DATA, &st));
    CHECK(st.count == NUM_OPS && st.requested_bytes == NUM_OPS * sizeof(op_data));
    CHECK(st.used_bytes >= st.requested_bytes);
    CHECK_OK(nnm_arena_get_category(in.arena, NNM_ARENA_CATEGORY_PLANNED_TENSOR_DATA, &st));
    CHECK(st.count == NUM_TENSORS);
    CHECK_OK(nnm_arena_get_category(in.arena, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &st));
    CHECK(st.count == 2 * NUM_OPS);
    uint32_t count = 0;
    CHECK_OK(nnm_arena_category_count(in.arena, &count));
    CHECK(count == mine + 1);
    CHECK(strcmp(nnm_arena_category_name(in.arena, NNM_ARENA_CATEGORY_OP_DATA), "Operator runtime data") == 0);
    CHECK(strcmp(nnm_arena_category_name(in.arena, mine), "my \"codec\" tables") == 0);
    CHECK(nnm_arena_category_name(in.arena, count) == NULL);
    CHECK(nnm_arena_category_name(NULL, 0) == NULL);

    /* Text, sized first. */
    size_t needed = 0;
    size_t written = 0;
    CHECK_OK(nnm_arena_report(in.arena, NNM_REPORT_FORMAT_TEXT, NULL, 0, &needed));
    char *text = (char *)malloc(needed);
    CHECK_FAILS(nnm_arena_report(in.arena, NNM_REPORT_FORMAT_TEXT, text, needed - 1, &written), NNM_BUFFER_TOO_SMALL);
    CHECK_OK(nnm_arena_report(in.arena, NNM_REPORT_FORMAT_TEXT, text, needed, &written));
    CHECK(written == needed && strlen(text) + 1 == needed);
    CHECK(contains(text, "[nnmem arena] Arena allocation total "));
    CHECK(contains(text, "[nnmem arena] 'Operator runtime data' used "));
    CHECK(contains(text, "with alignment overhead (requested 96 bytes for 6 allocations)"));
    CHECK(contains(text, "[nnmem arena] 'NodeAndRegistration struct' used "));
    CHECK(contains(text, "'my \"codec\" tables' used 112 bytes with alignment overhead (requested 100 bytes for 1 allocation)"));
    CHECK(contains(text, "Arena size needed "));
    free(text);

    /* JSON, through the callback, one line per call. */
    collected c;
    memset(&c, 0, sizeof c);
    CHECK_OK(nnm_arena_report_write(in.arena, NNM_REPORT_FORMAT_JSON, collect, &c));
    CHECK(c.calls > 10 && c.calls < 1000);
    CHECK(c.text[0] == '{');
    CHECK(contains(c.text, "\"name\": \"my \\\"codec\\\" tables\""));
    nnm_arena_sizes s;
    CHECK_OK(nnm_arena_get_sizes(in.arena, &s));
    char field[64];
    snprintf(field, sizeof field, "\"required_bytes\": %llu,", (unsigned long long)s.required_bytes);
    CHECK(contains(c.text, field));

    CHECK_FAILS(nnm_arena_report(in.arena, 7, NULL, 0, &needed), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_arena_report_write(in.arena, NNM_REPORT_FORMAT_TEXT, NULL, &c), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_arena_report(in.arena, NNM_REPORT_FORMAT_TEXT, NULL, 0, NULL), NNM_NULL_ARGUMENT);

    /* Recording off: allocations are no longer counted. */
    CHECK_OK(nnm_arena_set_recording(in.arena, 0));
    CHECK_OK(nnm_arena_alloc_persistent(in.arena, 8, 0, mine, &p));
    CHECK_OK(nnm_arena_get_category(in.arena, mine, &st));
    CHECK(st.count == 1);
    finish(&in);
}

/* --- error paths ----------------------------------------------------------------- */

static void test_bad_arguments(void) {
    aligned_block block = aligned_alloc64(4096);
    uint8_t *memory = block.ptr;
    nnm_arena *a = NULL;
    void *p = NULL;
    CHECK_FAILS(nnm_arena_new(NULL, 100, 0, 0, &a), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_arena_new(memory, 4096, 0, 0, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_arena_new(memory, 4096, 3, 0, &a), NNM_INVALID_ARGUMENT);
    CHECK(contains(nnm_last_error(), "alignment 3 is not a power of two"));
    CHECK_FAILS(nnm_arena_new(memory, 4096, 0, 0x80, &a), NNM_INVALID_ARGUMENT);
    CHECK(contains(nnm_last_error(), "unknown flags 0x80"));
    CHECK_FAILS(nnm_arena_new(memory + 1, 4, 16, 0, &a), NNM_DOES_NOT_FIT);
    CHECK_FAILS(nnm_arena_new((void *)(UINTPTR_MAX - 8), 100, 0, 0, &a), NNM_OVERFLOW);
    CHECK_FAILS(nnm_arena_new_split(memory, 2048, memory + 1024, 2048, 0, 0, &a), NNM_INVALID_ARGUMENT);
    CHECK(contains(nnm_last_error(), "overlap"));
    CHECK_FAILS(nnm_arena_new_owned(0, 0, 0, &a), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_arena_new_owned(SIZE_MAX, 0, 0, &a), NNM_OVERFLOW);
    CHECK_FAILS(nnm_arena_new_dry_run(0, 0, NULL), NNM_NULL_ARGUMENT);
    CHECK(a == NULL); /* never written on failure */

    CHECK_OK(nnm_arena_new(memory, 4096, 0, NNM_ARENA_RECORDING, &a));
    CHECK_FAILS(nnm_arena_alloc_persistent(NULL, 8, 0, 0, &p), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_arena_alloc_persistent(a, 8, 0, 0, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_arena_alloc_persistent(a, 0, 0, 0, &p), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_arena_alloc_temp(a, SIZE_MAX, 0, 0, &p), NNM_OVERFLOW);
    CHECK_FAILS(nnm_arena_alloc_temp(a, 8, 6, 0, &p), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_arena_alloc_temp(a, 8, 0, 999, &p), NNM_INVALID_ARGUMENT);
    CHECK(contains(nnm_last_error(), "unknown category 999"));
    CHECK(p == NULL);

    /* Too large: the message says requested, available and missing, and
     * nothing changes. */
    nnm_arena_sizes before, after;
    CHECK_OK(nnm_arena_get_sizes(a, &before));
    CHECK_FAILS(nnm_arena_alloc_persistent(a, 5000, 0, NNM_ARENA_CATEGORY_OP_DATA, &p), NNM_DOES_NOT_FIT);
    CHECK(contains(nnm_last_error(), "arena too small for a persistent allocation of 5000 B: requested 5000 B"));
    CHECK(contains(nnm_last_error(), "available 4096 B, missing 904 B"));
    CHECK_FAILS(nnm_arena_reserve_head(a, 4097, 0, &p), NNM_DOES_NOT_FIT);
    CHECK_OK(nnm_arena_get_sizes(a, &after));
    CHECK(memcmp(&before, &after, sizeof before) == 0);

    /* Temp scoping. */
    void *t1 = NULL;
    void *t2 = NULL;
    CHECK_OK(nnm_arena_alloc_temp(a, 100, 0, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &t1));
    CHECK_OK(nnm_arena_alloc_temp(a, 100, 0, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &t2));
    CHECK_FAILS(nnm_arena_reset_temp(a), NNM_WRONG_STATE);
    CHECK(contains(nnm_last_error(), "2 temp allocations are still held"));
    CHECK_FAILS(nnm_arena_release_temp(a, memory + 2000), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_arena_release_temp(a, NULL), NNM_NULL_ARGUMENT);
    CHECK_OK(nnm_arena_release_temp(a, t1));
    CHECK_FAILS(nnm_arena_release_temp(a, t1), NNM_INVALID_ARGUMENT);
    CHECK(contains(nnm_last_error(), "already released"));

    /* The head cannot grow while temp is held. */
    nnm_planner *pl = NULL;
    void *addresses[2];
    CHECK_OK(nnm_planner_new(&pl));
    CHECK_OK(nnm_planner_add_buffer(pl, 300, 0, 1, NULL));
    CHECK_OK(nnm_planner_add_buffer(pl, 200, 1, 2, NULL));
    CHECK_FAILS(nnm_arena_commit_plan(a, pl, 0, addresses, 2), NNM_WRONG_STATE); /* not planned */
    CHECK_OK(nnm_planner_plan(pl));
    CHECK_FAILS(nnm_arena_commit_plan(a, pl, 0, addresses, 1), NNM_BUFFER_TOO_SMALL);
    CHECK_FAILS(nnm_arena_commit_plan(a, pl, 0, NULL, 2), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_arena_commit_plan(a, NULL, 0, addresses, 2), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_arena_commit_plan(a, pl, 0, addresses, 2), NNM_WRONG_STATE);
    CHECK(contains(nnm_last_error(), "cannot grow the head from 0 B to 500 B while 1 temp allocation is held"));
    CHECK_FAILS(nnm_arena_reset_head(a), NNM_WRONG_STATE);
    CHECK_OK(nnm_arena_release_temp(a, t2));
    CHECK_OK(nnm_arena_reset_temp(a));
    CHECK_OK(nnm_arena_commit_plan(a, pl, NNM_ARENA_CATEGORY_PLANNED_TENSOR_DATA, addresses, 2));
    CHECK((uint8_t *)addresses[0] >= memory && (uint8_t *)addresses[1] < memory + 500);
    CHECK(addresses[0] != addresses[1]);
    CHECK_OK(nnm_arena_commit_plan(a, pl, NNM_ARENA_CATEGORY_PLANNED_TENSOR_DATA, NULL, 0));
    void *head = NULL;
    CHECK_OK(nnm_arena_reserve_head(a, 10, NNM_ARENA_CATEGORY_OTHER, &head));
    CHECK(head == (void *)memory);
    CHECK_OK(nnm_arena_get_sizes(a, &after));
    CHECK(after.head_bytes == 500 && after.plan_count == 3);
    CHECK_OK(nnm_arena_reset_head(a));
    CHECK_OK(nnm_arena_get_sizes(a, &after));
    CHECK(after.head_bytes == 0 && after.plan_count == 0);

    /* Categories. */
    uint32_t id = 0;
    char long_name[NNM_ARENA_MAX_CATEGORY_NAME + 2];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    CHECK_FAILS(nnm_arena_register_category(a, long_name, &id), NNM_INVALID_ARGUMENT);
    CHECK(contains(nnm_last_error(), "the limit is 64"));
    CHECK_FAILS(nnm_arena_register_category(a, NULL, &id), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_arena_register_category(a, "", &id), NNM_INVALID_ARGUMENT);
    CHECK_OK(nnm_arena_register_category(a, "weights cache", &id));
    CHECK_FAILS(nnm_arena_register_category(a, "weights cache", &id), NNM_ALREADY_EXISTS);
    CHECK_FAILS(nnm_arena_register_category(a, "Operator runtime data", &id), NNM_ALREADY_EXISTS);
    nnm_arena_category_stats st;
    CHECK_FAILS(nnm_arena_get_category(a, 12345, &st), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_arena_get_sizes(a, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_arena_get_sizes(NULL, &after), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_arena_set_recording(NULL, 1), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_arena_check(NULL), NNM_NULL_ARGUMENT);
    CHECK_OK(nnm_arena_check(a)); /* no guard mode: nothing to check */

    /* Freeing: NULL is a no-op, a double free is detected and reported. */
    nnm_planner_free(pl);
    nnm_arena_free(a);
    nnm_arena_free(NULL);
    nnm_arena_free(a);
    CHECK(contains(nnm_last_error(), "is not a live nnm_arena"));
    free(block.raw);
}

/* --- guard mode ------------------------------------------------------------------ */

static void test_guard_mode(void) {
    aligned_block block = aligned_alloc64(4096);
    nnm_arena *a = NULL;
    uint32_t codec = 0;
    void *p1 = NULL;
    void *p2 = NULL;
    CHECK_OK(nnm_arena_new(block.ptr, 4096, 0, NNM_ARENA_GUARD, &a));
    CHECK_OK(nnm_arena_register_category(a, "codec state", &codec));
    CHECK_OK(nnm_arena_alloc_persistent(a, 24, 0, NNM_ARENA_CATEGORY_OP_DATA, &p1));
    CHECK_OK(nnm_arena_alloc_persistent(a, 40, 0, codec, &p2));
    memset(p1, 1, 24);
    memset(p2, 2, 40);
    CHECK_OK(nnm_arena_check(a));

    /* One byte past the end of the codec state. */
    uint8_t *b2 = (uint8_t *)p2;
    uint8_t saved = b2[40];
    b2[40] = 0;
    CHECK_FAILS(nnm_arena_check(a), NNM_CORRUPTED);
    CHECK(contains(nnm_last_error(), "persistent allocation #2 (category 'codec state', 40 B at offset"));
    CHECK(contains(nnm_last_error(), "was overrun"));
    b2[40] = saved;
    CHECK_OK(nnm_arena_check(a));

    /* A write through a stale temp pointer (released below a live one). */
    void *t1 = NULL;
    void *t2 = NULL;
    CHECK_OK(nnm_arena_alloc_temp(a, 64, 0, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &t1));
    CHECK_OK(nnm_arena_alloc_temp(a, 64, 0, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &t2));
    CHECK_OK(nnm_arena_release_temp(a, t1));
    ((uint8_t *)t1)[10] = 42;
    CHECK_FAILS(nnm_arena_check(a), NNM_CORRUPTED);
    CHECK(contains(nnm_last_error(), "temp allocation #1 (category 'Temp scratch data', 64 B"));
    CHECK(contains(nnm_last_error(), "written after it was released"));
    /* A failed reset changes nothing, and keeps failing: corruption is
     * never forgotten. */
    CHECK_OK(nnm_arena_release_temp(a, t2));
    CHECK_FAILS(nnm_arena_reset_temp(a), NNM_CORRUPTED);
    CHECK_FAILS(nnm_arena_reset_head(a), NNM_CORRUPTED);
    nnm_arena_free(a);

    /* An underrun of a temp allocation released right after. */
    CHECK_OK(nnm_arena_new(block.ptr, 4096, 0, NNM_ARENA_GUARD, &a));
    CHECK_OK(nnm_arena_alloc_temp(a, 32, 0, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &t1));
    ((uint8_t *)t1)[-1] = 0;
    CHECK_OK(nnm_arena_release_temp(a, t1));
    CHECK_FAILS(nnm_arena_reset_temp(a), NNM_CORRUPTED);
    CHECK(contains(nnm_last_error(), "temp allocation #1 (category 'Temp scratch data', 32 B at offset 16 of the arena) was underrun"));
    CHECK(contains(nnm_last_error(), "found when it was released"));
    nnm_arena_free(a);

    /* A write after the top temp allocation was released (and reclaimed). */
    CHECK_OK(nnm_arena_new(block.ptr, 4096, 0, NNM_ARENA_GUARD, &a));
    CHECK_OK(nnm_arena_alloc_temp(a, 32, 0, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &t1));
    CHECK_OK(nnm_arena_release_temp(a, t1));
    CHECK_OK(nnm_arena_check(a));
    ((uint8_t *)t1)[0] = 7;
    CHECK_FAILS(nnm_arena_check(a), NNM_CORRUPTED);
    CHECK(contains(nnm_last_error(),
                   "guard check failed: released temp allocation #1 (category 'Temp scratch data', 32 B at offset 16 "
                   "of the arena) was written after it was released: 1 of the bytes of released temp memory at "
                   "offsets 0 to 64 changed, the first at offset 16"));
    /* Every reset says the same. */
    CHECK_FAILS(nnm_arena_reset_temp(a), NNM_CORRUPTED);
    CHECK(contains(nnm_last_error(), "released temp allocation #1 (category 'Temp scratch data', 32 B at offset 16"));
    nnm_arena_free(a);

    /* Two released allocations reclaimed together: the write names the one
     * it hit, with its own category. */
    CHECK_OK(nnm_arena_new(block.ptr, 4096, 0, NNM_ARENA_GUARD, &a));
    CHECK_OK(nnm_arena_alloc_temp(a, 32, 0, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &t1));
    CHECK_OK(nnm_arena_alloc_temp(a, 48, 0, NNM_ARENA_CATEGORY_OP_DATA, &t2));
    CHECK_OK(nnm_arena_release_temp(a, t1));
    CHECK_OK(nnm_arena_release_temp(a, t2));
    CHECK_OK(nnm_arena_check(a));
    ((uint8_t *)t2)[47] = 1;
    CHECK_FAILS(nnm_arena_check(a), NNM_CORRUPTED);
    CHECK(contains(nnm_last_error(),
                   "released temp allocation #2 (category 'Operator runtime data', 48 B at offset 80 of the arena) "
                   "was written after it was released: 1 of the bytes of released temp memory at offsets 0 to 144 "
                   "changed, the first at offset 127"));
    nnm_arena_free(a);

    /* An overrun of a held temp: the reset fails and changes nothing. */
    CHECK_OK(nnm_arena_new(block.ptr, 4096, 0, NNM_ARENA_GUARD, &a));
    CHECK_OK(nnm_arena_alloc_temp(a, 32, 0, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &t1));
    CHECK_OK(nnm_arena_alloc_temp(a, 32, 0, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &t2));
    ((uint8_t *)t2)[32] = 0;
    CHECK_OK(nnm_arena_release_temp(a, t1));
    nnm_arena_sizes before, after;
    CHECK_OK(nnm_arena_get_sizes(a, &before));
    CHECK_FAILS(nnm_arena_reset_temp(a), NNM_CORRUPTED);
    CHECK(contains(nnm_last_error(), "temp allocation #2"));
    CHECK(contains(nnm_last_error(), "was overrun"));
    CHECK_OK(nnm_arena_get_sizes(a, &after));
    CHECK(memcmp(&before, &after, sizeof before) == 0 && after.temp_count == 1);
    nnm_arena_free(a);

    /* An overrun past the head's end (the last planned buffer). */
    void *head = NULL;
    CHECK_OK(nnm_arena_new(block.ptr, 4096, 0, NNM_ARENA_GUARD, &a));
    CHECK_OK(nnm_arena_reserve_head(a, 100, NNM_ARENA_CATEGORY_PLANNED_TENSOR_DATA, &head));
    ((uint8_t *)head)[100] = 0;
    CHECK_FAILS(nnm_arena_reset_head(a), NNM_CORRUPTED);
    CHECK(contains(nnm_last_error(), "the head (100 B, last committed as category 'Planned tensor data') was overrun"));
    nnm_arena_free(a);

    /* A dry run has no bytes to guard: checks pass. */
    CHECK_OK(nnm_arena_new_dry_run(0, NNM_ARENA_GUARD, &a));
    CHECK_OK(nnm_arena_alloc_temp(a, 32, 0, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &t1));
    CHECK_OK(nnm_arena_check(a));
    nnm_arena_free(a);
    free(block.raw);
}

/* The remaining error paths: each fails with its status and a message,
 * writes no out-parameter and changes nothing. */
static void test_more_error_paths(void) {
    aligned_block block = aligned_alloc64(4096);
    uint8_t *memory = block.ptr;
    nnm_arena *a = NULL;
    void *untouched = (void *)&a;
    void *p = untouched;
    uint32_t id = 7;

    /* Creation. */
    CHECK_FAILS(nnm_arena_new_split(NULL, 100, memory, 100, 0, 0, &a), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_arena_new_split(memory, 100, NULL, 100, 0, 0, &a), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_arena_new_split((void *)(UINTPTR_MAX - 8), 100, memory, 100, 0, 0, &a), NNM_OVERFLOW);
    CHECK_FAILS(nnm_arena_new_split(memory, 100, memory + 1001, 4, 0, 0, &a), NNM_DOES_NOT_FIT);
    CHECK_FAILS(nnm_arena_new_owned(100, 96, 0, &a), NNM_INVALID_ARGUMENT);
    CHECK(contains(nnm_last_error(), "alignment 96 is not a power of two"));
    CHECK_FAILS(nnm_arena_new_owned(100, 0, 0, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_arena_new_dry_run(3, 0, &a), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_arena_new_dry_run(0, 0x40, &a), NNM_INVALID_ARGUMENT);
    CHECK(a == NULL);

    CHECK_OK(nnm_arena_new(memory, 1024, 0, NNM_ARENA_RECORDING, &a));
    nnm_arena_sizes before, after;
    CHECK_OK(nnm_arena_get_sizes(a, &before));

    /* Allocations that do not fit leave the out-parameter alone. */
    CHECK_FAILS(nnm_arena_alloc_temp(a, 2000, 0, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &p), NNM_DOES_NOT_FIT);
    CHECK(contains(nnm_last_error(), "arena too small for a temp allocation of 2000 B: requested 2000 B, available 1024 B, missing 976 B"));
    CHECK_FAILS(nnm_arena_alloc_persistent(a, 2000, 0, NNM_ARENA_CATEGORY_OP_DATA, &p), NNM_DOES_NOT_FIT);
    CHECK_FAILS(nnm_arena_alloc_temp(NULL, 8, 0, 0, &p), NNM_NULL_ARGUMENT);
    CHECK(p == untouched);

    /* Head reservations. */
    CHECK_FAILS(nnm_arena_reserve_head(a, 100, 0, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_arena_reserve_head(a, 100, 999, &p), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_arena_reserve_head(a, 0, 999, &p), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_arena_reserve_head(NULL, 100, 0, &p), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_arena_reset_head(NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_arena_reset_temp(NULL), NNM_NULL_ARGUMENT);
    CHECK(p == untouched);

    /* Plans: alignment, category, size; the addresses stay untouched. */
    nnm_planner *aligned64 = NULL;
    nnm_planner *big = NULL;
    void *addresses[2] = {untouched, untouched};
    CHECK_OK(nnm_planner_new(&aligned64));
    CHECK_OK(nnm_planner_set_alignment(aligned64, 64));
    CHECK_OK(nnm_planner_add_buffer(aligned64, 10, 0, 0, NULL));
    CHECK_OK(nnm_planner_plan(aligned64));
    CHECK_FAILS(nnm_arena_commit_plan(a, aligned64, 0, addresses, 2), NNM_INVALID_ARGUMENT);
    CHECK(contains(nnm_last_error(), "the plan is aligned to 64 B but the arena's start only to 16 B"));
    CHECK_OK(nnm_planner_new(&big));
    CHECK_OK(nnm_planner_add_buffer(big, 800, 0, 1, NULL));
    CHECK_OK(nnm_planner_add_buffer(big, 800, 1, 2, NULL));
    CHECK_OK(nnm_planner_plan(big));
    CHECK_FAILS(nnm_arena_commit_plan(a, big, 999, addresses, 2), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_arena_commit_plan(a, big, NNM_ARENA_CATEGORY_PLANNED_TENSOR_DATA, addresses, 2), NNM_DOES_NOT_FIT);
    CHECK(contains(nnm_last_error(), "arena too small for a head of 1600 B (it has 0 B now): requested 1600 B, available 1024 B, missing 576 B"));
    CHECK(addresses[0] == untouched && addresses[1] == untouched);

    /* Queries and categories. */
    CHECK_FAILS(nnm_arena_category_count(a, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_arena_category_count(NULL, &id), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_arena_get_category(a, 0, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_arena_report_write(a, 9, NULL, NULL), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_arena_register_category(a, "bad\xff name", &id), NNM_INVALID_ARGUMENT);
    CHECK(contains(nnm_last_error(), "not valid UTF-8"));
    CHECK_FAILS(nnm_arena_register_category(a, "tab\there", &id), NNM_INVALID_ARGUMENT);
    CHECK(contains(nnm_last_error(), "control character"));
    CHECK_FAILS(nnm_arena_register_category(a, "x", NULL), NNM_NULL_ARGUMENT);
    CHECK(id == 7);

    CHECK_OK(nnm_arena_get_sizes(a, &after));
    CHECK(memcmp(&before, &after, sizeof before) == 0);
    nnm_arena_category_stats st;
    CHECK_OK(nnm_arena_get_category(a, NNM_ARENA_CATEGORY_PLANNED_TENSOR_DATA, &st));
    CHECK(st.count == 0);

    /* A handle of another type given to nnm_arena_free is refused, unharmed. */
    nnm_arena_free((nnm_arena *)(void *)big);
    CHECK(contains(nnm_last_error(), "is a live nnm_planner, not a nnm_arena"));
    size_t planned = 0;
    CHECK_OK(nnm_planner_buffer_count(big, &planned));
    CHECK(planned == 2);
    nnm_planner_free(aligned64);
    nnm_planner_free(big);
    nnm_arena_free(a);
    free(block.raw);
}

/* --- the C surface against its header --------------------------------------- */

/* Every call on a freed arena but the allocation calls is refused with a
 * message (the arena is looked up before it is read: clean under ASan and
 * valgrind), and so is committing a freed planner. */
static void test_calls_on_a_freed_arena(void) {
    nnm_arena *a = NULL;
    CHECK_OK(nnm_arena_new_owned(4096, 0, NNM_ARENA_GUARD | NNM_ARENA_RECORDING, &a));
    nnm_arena_free(a);
    nnm_arena_sizes s;
    memset(&s, 0, sizeof s);
    CHECK_FAILS(nnm_arena_get_sizes(a, &s), NNM_INVALID_ARGUMENT);
    CHECK(contains(nnm_last_error(), "is not a live nnm_arena (already freed, or not made by nnmem)"));
    CHECK(s.capacity_bytes == 0);
    CHECK_FAILS(nnm_arena_check(a), NNM_INVALID_ARGUMENT);
    void *untouched = (void *)&a;
    void *p = untouched;
    CHECK_FAILS(nnm_arena_reserve_head(a, 16, 0, &p), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_arena_reserve_head(a, 0, 0, &p), NNM_INVALID_ARGUMENT);
    CHECK(p == untouched);
    /* (The allocation calls only check a type tag: undefined here.) */
    CHECK_FAILS(nnm_arena_reset_temp(a), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_arena_reset_head(a), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_arena_set_recording(a, 0), NNM_INVALID_ARGUMENT);
    uint32_t id = 99;
    CHECK_FAILS(nnm_arena_register_category(a, "late", &id), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_arena_category_count(a, &id), NNM_INVALID_ARGUMENT);
    CHECK(id == 99);
    CHECK(nnm_arena_category_name(a, 0) == NULL);
    CHECK(contains(nnm_last_error(), "is not a live nnm_arena"));
    nnm_arena_category_stats st;
    CHECK_FAILS(nnm_arena_get_category(a, 0, &st), NNM_INVALID_ARGUMENT);
    size_t needed = 0;
    CHECK_FAILS(nnm_arena_report(a, NNM_REPORT_FORMAT_TEXT, NULL, 0, &needed), NNM_INVALID_ARGUMENT);
    CHECK(needed == 0);

    nnm_planner *planner = NULL;
    CHECK_OK(nnm_planner_new(&planner));
    CHECK_OK(nnm_planner_add_buffer(planner, 64, 0, 1, NULL));
    CHECK_OK(nnm_planner_plan(planner));
    CHECK_FAILS(nnm_arena_commit_plan(a, planner, NNM_ARENA_CATEGORY_PLANNED_TENSOR_DATA, NULL, 0), NNM_INVALID_ARGUMENT);
    nnm_arena *live = NULL;
    CHECK_OK(nnm_arena_new_dry_run(0, 0, &live));
    nnm_planner_free(planner);
    CHECK_FAILS(nnm_arena_commit_plan(live, planner, NNM_ARENA_CATEGORY_PLANNED_TENSOR_DATA, NULL, 0), NNM_INVALID_ARGUMENT);
    CHECK(contains(nnm_last_error(), "is not a live nnm_planner"));
    CHECK_OK(nnm_arena_get_sizes(live, &s));
    CHECK(s.plan_count == 0);
    nnm_arena_free(live);
}

/* Alignments: any power of two up to 2^62 (2^30 on 32-bit targets); above
 * that the documented message. */
static void test_largest_alignment(void) {
    const size_t largest = SIZE_MAX / 4 + 1;
    const size_t too_large = SIZE_MAX / 2 + 1;
    char expected[160];
    snprintf(expected, sizeof expected, "alignment %zu is larger than the largest supported, 2^%d = %zu B", too_large,
             (int)(sizeof(size_t) * 8 - 2), largest);
    nnm_arena *a = NULL;
    CHECK_FAILS(nnm_arena_new_dry_run(too_large, 0, &a), NNM_INVALID_ARGUMENT);
    CHECK(strcmp(nnm_last_error(), expected) == 0);
    CHECK(a == NULL);
    CHECK_FAILS(nnm_arena_new_owned(64, too_large, 0, &a), NNM_INVALID_ARGUMENT);
    CHECK(strcmp(nnm_last_error(), expected) == 0);
    CHECK_OK(nnm_arena_new_dry_run(largest, 0, &a));
    void *p = NULL;
    CHECK_FAILS(nnm_arena_alloc_temp(a, 16, too_large, 0, &p), NNM_INVALID_ARGUMENT);
    CHECK(strcmp(nnm_last_error(), expected) == 0);
    CHECK_FAILS(nnm_arena_alloc_persistent(a, 16, too_large, 0, &p), NNM_INVALID_ARGUMENT);
    CHECK(strcmp(nnm_last_error(), expected) == 0);
    CHECK(p == NULL);
    CHECK_OK(nnm_arena_alloc_temp(a, 16, largest, 0, &p));
    CHECK((uintptr_t)p % largest == 0);
    nnm_arena_sizes s;
    CHECK_OK(nnm_arena_get_sizes(a, &s));
    CHECK(s.largest_alignment_bytes == largest);
    nnm_arena_free(a);
}

/* Recording a committed plan: the README's three buffers at alignment 16
 * (4000 + 1000 + 3000 B asked for, 8016 B after rounding) and a zero-size
 * one: requested is what was asked for, count is every buffer. */
static void test_recording_of_a_committed_plan(void) {
    nnm_planner *planner = NULL;
    CHECK_OK(nnm_planner_new(&planner));
    CHECK_OK(nnm_planner_set_alignment(planner, 16));
    CHECK_OK(nnm_planner_add_buffer(planner, 4000, 0, 1, NULL));
    CHECK_OK(nnm_planner_add_buffer(planner, 1000, 1, 2, NULL));
    CHECK_OK(nnm_planner_add_buffer(planner, 3000, 2, 3, NULL));
    CHECK_OK(nnm_planner_add_buffer(planner, 0, 1, 1, NULL));
    CHECK_OK(nnm_planner_plan(planner));
    nnm_plan_result r;
    CHECK_OK(nnm_planner_get_result(planner, &r));
    nnm_arena *a = NULL;
    CHECK_OK(nnm_arena_new_owned(16 * 1024, 0, NNM_ARENA_RECORDING, &a));
    void *head = NULL;
    CHECK_OK(nnm_arena_reserve_head(a, 0, NNM_ARENA_CATEGORY_OTHER, &head));
    void *addresses[4] = {NULL, NULL, NULL, NULL};
    CHECK_OK(nnm_arena_commit_plan(a, planner, NNM_ARENA_CATEGORY_PLANNED_TENSOR_DATA, addresses, 4));
    uint64_t offset = 0;
    CHECK_OK(nnm_planner_get_offset(planner, 2, &offset));
    CHECK((uint8_t *)addresses[2] == (uint8_t *)head + offset);
    nnm_arena_category_stats st;
    CHECK_OK(nnm_arena_get_category(a, NNM_ARENA_CATEGORY_PLANNED_TENSOR_DATA, &st));
    CHECK(st.requested_bytes == 8000);
    CHECK(st.count == 4);
    CHECK(st.used_bytes == r.peak_bytes);
    /* Reset and planned again: the sum starts over. */
    CHECK_OK(nnm_planner_reset(planner));
    CHECK_OK(nnm_planner_add_buffer(planner, 10, 0, 0, NULL));
    CHECK_OK(nnm_planner_plan(planner));
    CHECK_OK(nnm_arena_commit_plan(a, planner, NNM_ARENA_CATEGORY_OTHER, NULL, 0));
    CHECK_OK(nnm_arena_get_category(a, NNM_ARENA_CATEGORY_OTHER, &st));
    CHECK(st.requested_bytes == 10 && st.count == 1 && st.used_bytes == 16);
    nnm_planner_free(planner);
    nnm_arena_free(a);
}

/* nnm_arena_reserve_head with size 0 tells where the head starts, also
 * while temp allocations are held, and changes and records nothing. */
static void test_reserving_zero_bytes_of_head(void) {
    aligned_block block = aligned_alloc64(4096);
    nnm_arena *a = NULL;
    CHECK_OK(nnm_arena_new(block.ptr + 3, 4000, 0, NNM_ARENA_RECORDING, &a));
    void *head = NULL;
    CHECK_OK(nnm_arena_reserve_head(a, 0, NNM_ARENA_CATEGORY_OTHER, &head));
    CHECK((uint8_t *)head == block.ptr + 16);
    void *t = NULL;
    CHECK_OK(nnm_arena_alloc_temp(a, 64, 0, NNM_ARENA_CATEGORY_TEMP_SCRATCH, &t));
    nnm_arena_sizes before, after;
    CHECK_OK(nnm_arena_get_sizes(a, &before));
    void *again = NULL;
    CHECK_OK(nnm_arena_reserve_head(a, 0, NNM_ARENA_CATEGORY_OTHER, &again));
    CHECK(again == head);
    CHECK_OK(nnm_arena_get_sizes(a, &after));
    CHECK(memcmp(&before, &after, sizeof before) == 0);
    CHECK(after.head_bytes == 0 && after.plan_count == 0);
    nnm_arena_category_stats st;
    CHECK_OK(nnm_arena_get_category(a, NNM_ARENA_CATEGORY_OTHER, &st));
    CHECK(st.count == 0 && st.requested_bytes == 0);
    CHECK_FAILS(nnm_arena_reserve_head(a, 100, 0, &again), NNM_WRONG_STATE);
    CHECK_OK(nnm_arena_release_temp(a, t));
    CHECK_OK(nnm_arena_reserve_head(a, 100, 0, &again));
    CHECK(again == head);
    nnm_arena_free(a);
    free(block.raw);
}

int main(void) {
    test_exact_size(0);
    test_exact_size(NNM_ARENA_RECORDING);
    test_exact_size(NNM_ARENA_GUARD | NNM_ARENA_RECORDING);
    test_reports();
    test_bad_arguments();
    test_guard_mode();
    test_more_error_paths();
    test_calls_on_a_freed_arena();
    test_largest_alignment();
    test_recording_of_a_committed_plan();
    test_reserving_zero_bytes_of_head();
    return nnm_check_report();
}
