/*
 * Execution memory from C (nnm_exec_*): an inference runtime describes its
 * network, gets the shared blobs (constants, immutable workbuffers) built
 * once, and runs parallel infer requests through a pool of mutable blocks,
 * resolving every operator's pointers against the block it holds.
 *
 *   network      14 operators: constants (with bytes, read back through
 *                the resolved input pointer; one without, zero-filled), a
 *                reshape alias (its input's pointer), a concat parent (its
 *                parts at parent + offset), immutable workbuffers filled
 *                by the init callback and read back through resolve,
 *                mutable ones, pinned graph input and output; the info,
 *                places, report (text and JSON) and SVG;
 *   requests     8 threads x 1,000 runs over a pool of 3 blocks: each run
 *                writes a request-unique pattern into every output and
 *                mutable workbuffer, yields, and finds it intact; an
 *                atomic count of blocks out never passes 3 and per-block
 *                owner words show no block held twice;
 *   cancel       waiters on a held block woken by nnm_cancel_token_cancel
 *                (NNM_CANCELLED) while one on another token stays asleep
 *                until the release wakes it; a timeout and a try (timeout
 *                0) give NNM_BUSY;
 *   init fails   NNM_CALLBACK_FAILED naming the operator and the value,
 *                and every byte the build allocated returned;
 *   devices      a C vtable allocator failing after two blocks (a partial
 *                pool of 2 out of 5, with its reason), one reporting
 *                little free memory (fewer blocks), one with no room for a
 *                single block (NNM_OUT_OF_MEMORY with the block size);
 *                one the CPU cannot write (constant bytes refused; a
 *                constant without bytes gets its address in the blob);
 *   shrink       with blocks out: the free block goes at once, a block out
 *                when it comes back; shrinking to 0 fails the waiters;
 *   ids, chains  workbuffer ids in the buffers' id space, their places
 *                and every operator's places without a block; a concat
 *                parent inside another (offsets compose); a dynamic
 *                (size-0) tensor with no memory (NNM_EXEC_AREA_DYNAMIC,
 *                NULL when resolved); the pool's UINT32_MAX blocks;
 *   bad input    each with its status, a message, and nothing changed:
 *                NULLs, unknown / duplicate / reserved ids, zero sizes,
 *                wrong read sizes, bad aliases (an alias cycle included),
 *                bad concat parts, a name not UTF-8, bad options, ranges,
 *                short arrays, small, double, stale and forged blocks.
 *
 * Valid C11 and C++17 (built both ways); threads are POSIX threads, the
 * shared counters GCC/Clang __atomic builtins (C11's <stdatomic.h> is not
 * C++).
 */
#if !defined(_POSIX_C_SOURCE) && !defined(__cplusplus)
#define _POSIX_C_SOURCE 200809L /* pthreads, sched_yield under -std=c11 */
#endif
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnm_check.h"
#include "nnmem.h"

/* --- the network -------------------------------------------------------------
 *
 *   op  name      reads            writes             immutable   mutable
 *    0  input     -                1 (1024, pinned)
 *    1  conv1     1, c100          2 (2048)           128         512
 *    2  relu1     2                3 (2048)
 *    3  reshape1  3                4 = 3 (alias)
 *    4  conv2a    4, c101          5 (1024)           64, 200     256, 128
 *    5  conv2b    4, c101          6 (1024)                       384
 *       concat parent 7 (2048): 5 at 0, 6 at 1024
 *    6  pool      7                8 (512)                        64
 *    7  bias_add  8, c102          9 (512)
 *    8  fc        9, c103          10 (256)           512         1024
 *    9  softmax   10               11 (256)                       32
 *   10  reshape2  11               12 = 11 (128 of its 256)
 *   11  skip_add  12, 1            13 (256)
 *   12  norm      13               14 (256)           48          96
 *   13  output    14               15 (64, pinned)
 *
 * Every size and offset is a multiple of 8, so the requests' 8-byte
 * patterns line up wherever two buffers share bytes. */
#define OPS 14
#define CONSTS 4
#define NA NNM_EXEC_NO_ALIAS
#define PARENT 7
#define PARENT_SIZE 2048
#define CONCAT_AFTER 5 /* the parent is declared once its parts exist */
#define BUFFERS (CONSTS + OPS + 1)
#define MAX_PTRS 8
#define ALIGN 256
#define IS_CONSTANT(id) ((id) >= 100)

typedef struct const_def {
    uint64_t id, size;
    int has_bytes;
} const_def;

static const const_def CONSTANTS[CONSTS] = {{100, 512, 1}, {101, 256, 1}, {102, 64, 0}, {103, 1024, 1}};

typedef struct op_def {
    const char *name;
    uint64_t in[2];
    size_t ins;
    uint64_t out, out_size, alias_of; /* one output each */
    uint64_t imm[2];
    size_t imms;
    uint64_t mut[2];
    size_t muts;
} op_def;

static const op_def NET[OPS] = {
    {"input", {0, 0}, 0, 1, 1024, NA, {0, 0}, 0, {0, 0}, 0},
    {"conv1", {1, 100}, 2, 2, 2048, NA, {128, 0}, 1, {512, 0}, 1},
    {"relu1", {2, 0}, 1, 3, 2048, NA, {0, 0}, 0, {0, 0}, 0},
    {"reshape1", {3, 0}, 1, 4, 2048, 3, {0, 0}, 0, {0, 0}, 0},
    {"conv2a", {4, 101}, 2, 5, 1024, NA, {64, 200}, 2, {256, 128}, 2},
    {"conv2b", {4, 101}, 2, 6, 1024, NA, {0, 0}, 0, {384, 0}, 1},
    {"pool", {PARENT, 0}, 1, 8, 512, NA, {0, 0}, 0, {64, 0}, 1},
    {"bias_add", {8, 102}, 2, 9, 512, NA, {0, 0}, 0, {0, 0}, 0},
    {"fc", {9, 103}, 2, 10, 256, NA, {512, 0}, 1, {1024, 0}, 1},
    {"softmax", {10, 0}, 1, 11, 256, NA, {0, 0}, 0, {32, 0}, 1},
    {"reshape2", {11, 0}, 1, 12, 128, 11, {0, 0}, 0, {0, 0}, 0},
    {"skip_add", {12, 1}, 2, 13, 256, NA, {0, 0}, 0, {0, 0}, 0},
    {"norm", {13, 0}, 1, 14, 256, NA, {48, 0}, 1, {96, 0}, 1},
    {"output", {14, 0}, 1, 15, 64, NA, {0, 0}, 0, {0, 0}, 0},
};

static const uint64_t PARTS[2] = {5, 6};
static const uint64_t PART_OFFSETS[2] = {0, 1024};

/* The size of buffer `id` in the table above (0 for an unknown id). */
static uint64_t size_of(uint64_t id) {
    size_t i;
    if (id == PARENT) return PARENT_SIZE;
    for (i = 0; i < CONSTS; ++i)
        if (CONSTANTS[i].id == id) return CONSTANTS[i].size;
    for (i = 0; i < OPS; ++i)
        if (NET[i].out == id) return NET[i].out_size;
    return 0;
}

/* Byte k of constant `id`, and of immutable workbuffer `wb` of operator `op`. */
static unsigned char constant_byte(uint64_t id, size_t k) { return (unsigned char)(id * 7 + k * 13); }
static unsigned char immutable_byte(size_t op, size_t wb) { return (unsigned char)(0xa0 + op * 5 + wb); }

static int all_bytes(const void *p, uint64_t size, unsigned char value) {
    const unsigned char *b = (const unsigned char *)p;
    uint64_t k;
    for (k = 0; k < size; ++k)
        if (b[k] != value) return 0;
    return 1;
}

/* Operator `op` of NET as a descriptor; `inputs` and `output` are its storage. */
static nnm_exec_operator_desc op_desc(size_t op, nnm_exec_tensor inputs[2], nnm_exec_output *output) {
    nnm_exec_operator_desc d;
    size_t k;
    memset(&d, 0, sizeof d);
    for (k = 0; k < NET[op].ins; ++k) {
        inputs[k].id = NET[op].in[k];
        inputs[k].size = size_of(NET[op].in[k]);
    }
    output->id = NET[op].out;
    output->size = NET[op].out_size;
    output->alias_of = NET[op].alias_of;
    d.name = NET[op].name;
    d.inputs = NET[op].ins > 0 ? inputs : NULL;
    d.input_count = NET[op].ins;
    d.outputs = output;
    d.output_count = 1;
    d.immutable_sizes = NET[op].imms > 0 ? NET[op].imm : NULL;
    d.immutable_count = NET[op].imms;
    d.mutable_sizes = NET[op].muts > 0 ? NET[op].mut : NULL;
    d.mutable_count = NET[op].muts;
    return d;
}

static size_t operator_count(const nnm_exec_model *m) {
    size_t n = SIZE_MAX;
    CHECK_OK(nnm_exec_model_operator_count(m, &n));
    return n;
}

/* The network, every step checked; NULL if a step failed. */
static nnm_exec_model *build_net(void) {
    nnm_exec_model *m = NULL;
    unsigned char bytes[1024];
    size_t i, k, index = SIZE_MAX;
    int ok = 1;
    CHECK_OK(nnm_exec_model_new(&m));
    if (m == NULL) return NULL;
    for (i = 0; i < CONSTS; ++i) {
        for (k = 0; k < CONSTANTS[i].size; ++k) bytes[k] = constant_byte(CONSTANTS[i].id, k);
        ok &= nnm_exec_model_add_constant(m, CONSTANTS[i].id, CONSTANTS[i].size,
                                          CONSTANTS[i].has_bytes ? bytes : NULL) == NNM_OK;
    }
    for (i = 0; i < OPS; ++i) {
        nnm_exec_tensor inputs[2];
        nnm_exec_output output;
        nnm_exec_operator_desc d = op_desc(i, inputs, &output);
        ok &= nnm_exec_model_add_operator(m, &d, &index) == NNM_OK && index == i;
        if (i == CONCAT_AFTER)
            ok &= nnm_exec_model_add_concat(m, PARENT, PARENT_SIZE, PARTS, PART_OFFSETS, 2) == NNM_OK;
    }
    ok &= nnm_exec_model_pin(m, 1) == NNM_OK && nnm_exec_model_pin(m, 15) == NNM_OK;
    CHECK(ok);
    CHECK(operator_count(m) == OPS);
    if (!ok) {
        nnm_exec_model_free(m);
        return NULL;
    }
    return m;
}

/* --- the init callback ---------------------------------------------------- */

typedef struct init_log {
    size_t calls;
    size_t ops[OPS];
    size_t fail_op; /* returns -3 for this operator (SIZE_MAX: never) */
    int bad;        /* a call with the wrong count, an unaligned or NULL pointer */
} init_log;

static int init_fill(void *ctx, size_t op, void *const *buffers, size_t count) {
    init_log *log = (init_log *)ctx;
    size_t k;
    if (log->calls < OPS) log->ops[log->calls] = op;
    ++log->calls;
    if (op >= OPS || count != NET[op].imms || buffers == NULL) {
        log->bad = 1;
        return 0;
    }
    if (op == log->fail_op) return -3;
    for (k = 0; k < count; ++k) {
        if (buffers[k] == NULL || (uintptr_t)buffers[k] % ALIGN != 0) {
            log->bad = 1;
            continue;
        }
        memset(buffers[k], immutable_byte(op, k), NET[op].imm[k]);
    }
    return 0;
}

static init_log new_log(size_t fail_op) {
    init_log log;
    memset(&log, 0, sizeof log);
    log.fail_op = fail_op;
    return log;
}

/* The operators with immutable workbuffers, in order: where init is called. */
static size_t init_ops(size_t *ops) {
    size_t i, n = 0;
    for (i = 0; i < OPS; ++i)
        if (NET[i].imms > 0) ops[n++] = i;
    return n;
}

/* The network compiled on the host (init checked), or NULL. */
static nnm_exec_compiled *compile_net(const nnm_exec_model *m) {
    nnm_exec_compiled *c = NULL;
    init_log log = new_log(SIZE_MAX);
    size_t want[OPS], n = init_ops(want);
    CHECK_OK(nnm_exec_compile(m, NULL, NULL, init_fill, &log, &c));
    CHECK(log.calls == n && !log.bad && memcmp(log.ops, want, n * sizeof want[0]) == 0);
    return c;
}

/* --- resolution ------------------------------------------------------------- */

static nnm_exec_op_shape shape_of(const nnm_exec_compiled *c, size_t op) {
    nnm_exec_op_shape s;
    memset(&s, 0, sizeof s);
    CHECK_OK(nnm_exec_compiled_op_shape(c, op, &s));
    return s;
}

static size_t total(const nnm_exec_op_shape *s) {
    return s->input_count + s->output_count + s->immutable_count + s->mutable_count;
}

/* Operator `op`'s pointers against `b`; returns how many (0 on failure). */
static size_t resolve(const nnm_exec_compiled *c, size_t op, const nnm_exec_block *b, void **ptrs) {
    size_t n = 0;
    if (nnm_exec_resolve(c, op, b, ptrs, MAX_PTRS, &n) != NNM_OK) return 0;
    return n;
}

static int in_block(const void *p, uint64_t size, const nnm_exec_block *b) {
    uintptr_t at = (uintptr_t)p, base = (uintptr_t)b->base;
    return at >= base && at - base <= b->size && size <= b->size - (at - base);
}

/* Whether what operator `op` uses in the block at its step (tensor inputs,
 * output, mutable workbuffers) is pairwise disjoint, but for a reshape's
 * output, which is its input. */
static int disjoint_at_step(size_t op, void *const *p) {
    uintptr_t at[MAX_PTRS];
    uint64_t size[MAX_PTRS];
    size_t n = 0, i, j, k, mut = NET[op].ins + 1 + NET[op].imms;
    for (k = 0; k < NET[op].ins; ++k) {
        if (IS_CONSTANT(NET[op].in[k])) continue;
        at[n] = (uintptr_t)p[k];
        size[n++] = size_of(NET[op].in[k]);
    }
    if (NET[op].alias_of == NA) {
        at[n] = (uintptr_t)p[NET[op].ins];
        size[n++] = NET[op].out_size;
    }
    for (k = 0; k < NET[op].muts; ++k) {
        at[n] = (uintptr_t)p[mut + k];
        size[n++] = NET[op].mut[k];
    }
    for (i = 0; i < n; ++i)
        for (j = i + 1; j < n; ++j)
            if (at[i] < at[j] + size[j] && at[j] < at[i] + size[i]) return 0;
    return 1;
}

static nnm_exec_info info_of(const nnm_exec_compiled *c) {
    nnm_exec_info i;
    memset(&i, 0, sizeof i);
    CHECK_OK(nnm_exec_compiled_info(c, &i));
    return i;
}

static nnm_exec_pool_info pool_info(const nnm_exec_pool *p) {
    nnm_exec_pool_info i;
    memset(&i, 0, sizeof i);
    CHECK_OK(nnm_exec_pool_get_info(p, &i));
    return i;
}

/* Field by field: a struct written by value may carry any padding. */
static int same_pool_info(const nnm_exec_pool_info *a, const nnm_exec_pool_info *b) {
    return a->requested == b->requested && a->blocks == b->blocks && a->target == b->target &&
           a->free_blocks == b->free_blocks && a->out_blocks == b->out_blocks && a->waiters == b->waiters &&
           a->block_bytes == b->block_bytes && a->acquires == b->acquires && a->waits == b->waits &&
           a->timeouts == b->timeouts && a->cancellations == b->cancellations && a->partial == b->partial;
}

static nnm_exec_place place_of(const nnm_exec_compiled *c, uint64_t id) {
    nnm_exec_place p;
    memset(&p, 0xff, sizeof p);
    CHECK_OK(nnm_exec_compiled_place(c, id, &p));
    return p;
}

/* Whether buffers `a` and `b` of the mutable block share no byte. */
static int apart(const nnm_exec_compiled *c, uint64_t a, uint64_t b) {
    nnm_exec_place pa = place_of(c, a), pb = place_of(c, b);
    return pa.offset + pa.size <= pb.offset || pb.offset + pb.size <= pa.offset;
}

/* The compiled model's texts, for nnm_check_text. */
static nnm_status report_call(const void *c, uint32_t format, char *buf, size_t len, size_t *out) {
    return nnm_exec_compiled_report((const nnm_exec_compiled *)c, format, buf, len, out);
}

static nnm_status svg_call(const void *c, uint32_t format, char *buf, size_t len, size_t *out) {
    (void)format;
    return nnm_exec_compiled_svg((const nnm_exec_compiled *)c, buf, len, out);
}

/* Whether JSON `text` has `"key":value` (spaces allowed around the colon). */
static int json_has(const char *text, const char *key, uint64_t value) {
    char quoted[64], number[32];
    const char *p = text;
    if (text == NULL) return 0;
    snprintf(quoted, sizeof quoted, "\"%s\"", key);
    snprintf(number, sizeof number, "%llu", (unsigned long long)value);
    while (p != NULL && (p = strstr(p, quoted)) != NULL) {
        p += strlen(quoted);
        while (*p == ' ' || *p == ':') ++p;
        if (strncmp(p, number, strlen(number)) == 0 && (p[strlen(number)] < '0' || p[strlen(number)] > '9')) return 1;
    }
    return 0;
}

static void test_network(void) {
    nnm_exec_model *m = build_net();
    nnm_exec_compiled *c = NULL;
    nnm_exec_pool *pool = NULL;
    nnm_exec_block b;
    void *ptrs[OPS][MAX_PTRS];
    void *constant = NULL;
    char *text = NULL, *json = NULL, *svg = NULL;
    size_t i, k, n;
    nnm_exec_info info;
    memset(ptrs, 0, sizeof ptrs);
    memset(&b, 0, sizeof b);
    if (m == NULL) return;
    c = compile_net(m);
    nnm_exec_model_free(m); /* the compiled model needs it no more */
    if (c == NULL) return;

    info = info_of(c);
    CHECK(info.operator_count == OPS && info.buffer_count == BUFFERS);
    /* Constants: 512 + 256 + 64 (256) + 1024; immutable: 128 (256), 64
     * (256), 200 (256), 512, 48 (256), each at a multiple of 256. */
    CHECK(info.constants_bytes == 512 + 256 + 256 + 1024 && info.immutable_bytes == 5 * 256 + 256);
    CHECK(info.constants_bytes % ALIGN == 0 && info.immutable_bytes % ALIGN == 0);
    CHECK(info.mutable_bytes >= info.mutable_lower_bound && info.mutable_lower_bound > 0);
    CHECK(info.block_bytes >= info.mutable_bytes && info.block_bytes >= ALIGN);
    CHECK(info.algorithm != NNM_ALGORITHM_AUTO); /* the algorithm auto chose */
    CHECK(info.mutable_bytes != info.mutable_lower_bound || info.proven_optimal == 1);

    /* Places: an alias shares its input's, a part sits inside its parent. */
    CHECK(place_of(c, 100).area == NNM_EXEC_AREA_CONSTANTS && place_of(c, 100).size == 512);
    CHECK(place_of(c, 2).area == NNM_EXEC_AREA_MUTABLE);
    CHECK(place_of(c, 4).offset == place_of(c, 3).offset && place_of(c, 4).area == NNM_EXEC_AREA_MUTABLE);
    CHECK(place_of(c, 12).offset == place_of(c, 11).offset && place_of(c, 12).size == 128);
    CHECK(place_of(c, 5).offset == place_of(c, PARENT).offset);
    CHECK(place_of(c, 6).offset == place_of(c, PARENT).offset + 1024);
    CHECK(place_of(c, 1).offset + 1024 <= info.mutable_bytes && place_of(c, 15).offset + 64 <= info.mutable_bytes);
    for (i = 0; i < OPS; ++i) /* the pinned graph input and output share bytes with no other tensor */
        if (NET[i].out != 1 && NET[i].out != 15) CHECK(apart(c, NET[i].out, 1) && apart(c, NET[i].out, 15));

    REQUIRE_OK(nnm_exec_pool_new(c, NULL, 1, &pool));
    REQUIRE_OK(nnm_exec_pool_acquire(pool, -1, NULL, &b));
    CHECK(b.base != NULL && b.size >= info.mutable_bytes && (uintptr_t)b.base % ALIGN == 0);

    for (i = 0; i < OPS; ++i) {
        nnm_exec_op_shape s = shape_of(c, i);
        size_t outs = NET[i].ins, imm = outs + 1, mut = imm + NET[i].imms;
        CHECK(s.input_count == NET[i].ins && s.output_count == 1 && s.immutable_count == NET[i].imms &&
              s.mutable_count == NET[i].muts);
        n = SIZE_MAX;
        CHECK_OK(nnm_exec_resolve(c, i, &b, NULL, 0, &n)); /* the size query */
        CHECK(n == total(&s));
        CHECK(resolve(c, i, &b, ptrs[i]) == n && n <= MAX_PTRS);
        CHECK(disjoint_at_step(i, ptrs[i]));
        for (k = 0; k < NET[i].ins; ++k) { /* constants in the blob, with their bytes */
            uint64_t id = NET[i].in[k];
            size_t j;
            if (!IS_CONSTANT(id)) {
                CHECK(in_block(ptrs[i][k], size_of(id), &b));
                continue;
            }
            CHECK_OK(nnm_exec_compiled_constant(c, id, &constant));
            CHECK(constant == ptrs[i][k] && !in_block(constant, 1, &b));
            for (j = 0; j < CONSTS; ++j) {
                const unsigned char *got = (const unsigned char *)ptrs[i][k];
                size_t at, bad = 0;
                if (CONSTANTS[j].id != id) continue;
                for (at = 0; at < CONSTANTS[j].size; ++at)
                    bad += got[at] != (CONSTANTS[j].has_bytes ? constant_byte(id, at) : 0);
                CHECK(bad == 0);
            }
        }
        CHECK(in_block(ptrs[i][outs], NET[i].out_size, &b));
        for (k = 0; k < NET[i].imms; ++k) /* filled by init_fill at compile time */
            CHECK(!in_block(ptrs[i][imm + k], 1, &b) &&
                  all_bytes(ptrs[i][imm + k], NET[i].imm[k], immutable_byte(i, k)));
        for (k = 0; k < NET[i].muts; ++k) CHECK(in_block(ptrs[i][mut + k], NET[i].mut[k], &b));
    }
    /* The reshapes write where they read; the concat's parts are inside
     * the parent the pool operator reads. */
    CHECK(ptrs[3][1] == ptrs[3][0] && ptrs[10][1] == ptrs[10][0]);
    CHECK(ptrs[4][2] == ptrs[6][0] && (char *)ptrs[5][2] == (char *)ptrs[6][0] + 1024);
    CHECK(ptrs[4][0] == ptrs[3][1] && ptrs[11][1] == ptrs[0][0]); /* consumers see their producer's pointer */
    CHECK_OK(nnm_exec_pool_release(pool, &b));

    text = nnm_check_text(c, report_call, NNM_REPORT_FORMAT_TEXT);
    json = nnm_check_text(c, report_call, NNM_REPORT_FORMAT_JSON);
    svg = nnm_check_text(c, svg_call, 0);
    CHECK(nnm_check_contains(text, "conv2a") && nnm_check_contains(text, "reshape2"));
    CHECK(nnm_check_contains(text, "alias of 11") && nnm_check_contains(text, "in parent 7") &&
          nnm_check_contains(text, "pinned"));
    CHECK(json != NULL && json[0] == '{' && json_has(json, "id", 100) && json_has(json, "id", PARENT) &&
          json_has(json, "id", 15) && nnm_check_contains(json, "concat-parent") &&
          nnm_check_contains(json, "\"conv2a\""));
    CHECK(json_has(json, "mutable_bytes", info.mutable_bytes) && json_has(json, "alignment", ALIGN));
    CHECK(svg != NULL && strncmp(svg, "<svg", 4) == 0);
    free(text);
    free(json);
    free(svg);
    nnm_exec_pool_free(pool);
    nnm_exec_compiled_free(c);
}

/* --- 8 threads x 1,000 runs over 3 blocks ------------------------------------ */

#define THREADS 8
#define RUNS 1000
#define BLOCKS 3

static long blocks_out;          /* __atomic: blocks between acquire and release */
static long most_out;            /* __atomic: the largest blocks_out seen */
static unsigned owner[BLOCKS];   /* __atomic: the runner holding each slot (0: none) */

typedef struct runner {
    const nnm_exec_compiled *compiled;
    nnm_exec_pool *pool;
    unsigned id; /* from 1 */
    long failures; /* counted here: CHECK is not thread-safe */
    char first[160];
} runner;

static void fail(runner *r, const char *what, long run) {
    if (r->failures++ == 0) snprintf(r->first, sizeof r->first, "runner %u, run %ld: %s", r->id, run, what);
}

static void fill(void *p, uint64_t size, uint64_t word) {
    uint64_t k;
    for (k = 0; k + 8 <= size; k += 8) memcpy((char *)p + k, &word, 8);
}

static int intact(const void *p, uint64_t size, uint64_t word) {
    uint64_t k, w;
    for (k = 0; k + 8 <= size; k += 8) {
        memcpy(&w, (const char *)p + k, 8);
        if (w != word) return 0;
    }
    return 1;
}

/* Calls `each(p, size, word)` on every output and mutable workbuffer; false
 * when one call returned false. */
static int each_written(void *ptrs[OPS][MAX_PTRS], uint64_t word, int (*each)(void *, uint64_t, uint64_t)) {
    size_t i, k;
    int ok = 1;
    for (i = 0; i < OPS; ++i) {
        size_t out = NET[i].ins, mut = out + 1 + NET[i].imms;
        ok &= each(ptrs[i][out], NET[i].out_size, word);
        for (k = 0; k < NET[i].muts; ++k) ok &= each(ptrs[i][mut + k], NET[i].mut[k], word);
    }
    return ok;
}

static int fill_one(void *p, uint64_t size, uint64_t word) {
    fill(p, size, word);
    return 1;
}

static int check_one(void *p, uint64_t size, uint64_t word) { return intact(p, size, word); }

static void *runner_body(void *arg) {
    runner *r = (runner *)arg;
    void *ptrs[OPS][MAX_PTRS];
    long run;
    for (run = 0; run < RUNS; ++run) {
        nnm_exec_block b;
        unsigned none = 0, mine;
        int owned = 0; /* this runner set owner[b.slot] and must clear it */
        long now, seen;
        size_t i, k;
        uint64_t word = ((uint64_t)r->id << 32) | (uint64_t)run;
        if (nnm_exec_pool_acquire(r->pool, -1, NULL, &b) != NNM_OK) {
            fail(r, "acquire", run);
            continue;
        }
        now = __atomic_add_fetch(&blocks_out, 1, __ATOMIC_SEQ_CST);
        seen = __atomic_load_n(&most_out, __ATOMIC_SEQ_CST);
        while (now > seen &&
               !__atomic_compare_exchange_n(&most_out, &seen, now, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
        }
        if (now > BLOCKS) fail(r, "more blocks out than the pool has", run);
        /* A block held twice is reported, and still released as it came
         * (an altered block would be refused and never come back, and the
         * other runners would wait for it forever). */
        owned = b.slot < BLOCKS &&
                __atomic_compare_exchange_n(&owner[b.slot], &none, r->id, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        if (!owned) fail(r, "a block another request holds", run);
        for (i = 0; i < OPS; ++i)
            if (resolve(r->compiled, i, &b, ptrs[i]) != NET[i].ins + 1 + NET[i].imms + NET[i].muts) {
                fail(r, "resolve", run);
                memset(ptrs, 0, sizeof ptrs);
                break;
            }
        if (i == OPS) {
            each_written(ptrs, word, fill_one);
            sched_yield(); /* let the other requests run while this one holds its block */
            if (!each_written(ptrs, word, check_one)) fail(r, "a pattern was overwritten", run);
            for (i = 0; i < OPS; ++i)
                for (k = 0; k < NET[i].imms; ++k)
                    if (!all_bytes(ptrs[i][NET[i].ins + 1 + k], NET[i].imm[k], immutable_byte(i, k)))
                        fail(r, "an immutable workbuffer changed", run);
        }
        mine = r->id;
        if (owned && !__atomic_compare_exchange_n(&owner[b.slot], &mine, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            fail(r, "the owner word changed while held", run);
        __atomic_sub_fetch(&blocks_out, 1, __ATOMIC_SEQ_CST);
        if (nnm_exec_pool_release(r->pool, &b) != NNM_OK) fail(r, "release", run);
    }
    return NULL;
}

static void test_parallel_requests(void) {
    nnm_exec_model *m = build_net();
    nnm_exec_compiled *c = m != NULL ? compile_net(m) : NULL;
    nnm_exec_pool *pool = NULL;
    pthread_t threads[THREADS];
    runner runners[THREADS];
    unsigned t;
    long failures = 0;
    nnm_exec_model_free(m);
    if (c == NULL) return;
    REQUIRE_OK(nnm_exec_pool_new(c, NULL, BLOCKS, &pool));
    nnm_exec_pool_info pi = pool_info(pool);
    CHECK(pi.requested == BLOCKS && pi.blocks == BLOCKS && pi.target == BLOCKS && pi.free_blocks == BLOCKS &&
          pi.partial == 0);
    for (t = 0; t < THREADS; ++t) {
        memset(&runners[t], 0, sizeof runners[t]);
        runners[t].compiled = c;
        runners[t].pool = pool;
        runners[t].id = t + 1;
        CHECK(pthread_create(&threads[t], NULL, runner_body, &runners[t]) == 0);
    }
    for (t = 0; t < THREADS; ++t) {
        CHECK(pthread_join(threads[t], NULL) == 0);
        if (runners[t].failures > 0) fprintf(stderr, "%s (%ld failures)\n", runners[t].first, runners[t].failures);
        failures += runners[t].failures;
    }
    CHECK(failures == 0);
    CHECK(most_out >= 1 && most_out <= BLOCKS && blocks_out == 0);
    pi = pool_info(pool);
    CHECK(pi.acquires == (uint64_t)THREADS * RUNS && pi.out_blocks == 0 && pi.free_blocks == BLOCKS);
    CHECK(pi.waiters == 0 && pi.timeouts == 0 && pi.cancellations == 0 && pi.waits <= pi.acquires);
    nnm_exec_pool_free(pool);
    nnm_exec_compiled_free(c);
}

/* --- cancellation, timeouts, tries ------------------------------------------- */

typedef struct waiter {
    nnm_exec_pool *pool;
    const nnm_cancel_token *token;
    nnm_status status;
    nnm_exec_block block;
} waiter;

static void *wait_body(void *arg) {
    waiter *w = (waiter *)arg;
    w->status = nnm_exec_pool_acquire(w->pool, -1, w->token, &w->block);
    /* A block taken here goes back at once: the test only needs the status. */
    if (w->status == NNM_OK) nnm_exec_pool_release(w->pool, &w->block);
    return NULL;
}

/* Yields until `want` threads wait in the pool (no clock: the pool says). */
static int wait_for_waiters(const nnm_exec_pool *pool, size_t want) {
    long spins;
    for (spins = 0; spins < 100000000L; ++spins) {
        nnm_exec_pool_info i;
        if (nnm_exec_pool_get_info(pool, &i) != NNM_OK) return 0;
        if (i.waiters == want) return 1;
        sched_yield();
    }
    return 0;
}

#define CANCELLED_WAITERS 4

static void test_cancellation(void) {
    nnm_exec_model *m = build_net();
    nnm_exec_compiled *c = m != NULL ? compile_net(m) : NULL;
    nnm_exec_pool *pool = NULL;
    nnm_cancel_token *token = NULL, *other = NULL;
    nnm_exec_block held, b;
    pthread_t threads[CANCELLED_WAITERS + 1];
    waiter waiters[CANCELLED_WAITERS + 1];
    int t;
    nnm_exec_model_free(m);
    if (c == NULL) return;
    memset(&b, 0, sizeof b);
    REQUIRE_OK(nnm_exec_pool_new(c, NULL, 1, &pool));
    REQUIRE_OK(nnm_cancel_token_new(&token));
    REQUIRE_OK(nnm_cancel_token_new(&other));
    REQUIRE_OK(nnm_exec_pool_acquire(pool, -1, NULL, &held));

    /* A try and a timeout on the held block: NNM_BUSY, nothing written. */
    CHECK_REFUSES(nnm_exec_pool_acquire(pool, 0, NULL, &b), NNM_BUSY, "no block free");
    CHECK_REFUSES(nnm_exec_pool_acquire(pool, 1000000 /* 1 ms */, token, &b), NNM_BUSY, "no block free");
    CHECK(b.base == NULL);
    nnm_exec_pool_info pi = pool_info(pool);
    /* One acquire so far (the held block, found free); the try and the
     * 1 ms wait are one timeout each, and only the latter waited. */
    CHECK(pi.acquires == 1 && pi.timeouts == 2 && pi.waits == 1);
    CHECK(pi.out_blocks == 1 && pi.free_blocks == 0 && pi.waiters == 0);

    /* Four waiters on `token`, one on `other`. */
    for (t = 0; t <= CANCELLED_WAITERS; ++t) {
        waiters[t].pool = pool;
        waiters[t].token = t < CANCELLED_WAITERS ? token : other;
        waiters[t].status = NNM_PANIC;
        CHECK(pthread_create(&threads[t], NULL, wait_body, &waiters[t]) == 0);
    }
    CHECK(wait_for_waiters(pool, CANCELLED_WAITERS + 1));
    CHECK_OK(nnm_cancel_token_cancel(token)); /* wakes the four, not the fifth */
    for (t = 0; t < CANCELLED_WAITERS; ++t) {
        CHECK(pthread_join(threads[t], NULL) == 0);
        CHECK(waiters[t].status == NNM_CANCELLED);
    }
    CHECK(wait_for_waiters(pool, 1));
    pi = pool_info(pool);
    CHECK(pi.cancellations == CANCELLED_WAITERS && pi.out_blocks == 1);
    CHECK_OK(nnm_exec_pool_release(pool, &held)); /* wakes the fifth, who takes it and gives it back */
    CHECK(pthread_join(threads[CANCELLED_WAITERS], NULL) == 0);
    CHECK(waiters[CANCELLED_WAITERS].status == NNM_OK);

    /* A cancelled token fails at once, even with a block free. */
    pi = pool_info(pool);
    CHECK(pi.free_blocks == 1 && pi.waiters == 0);
    CHECK_REFUSES(nnm_exec_pool_acquire(pool, -1, token, &b), NNM_CANCELLED, "cancelled");
    CHECK_OK(nnm_cancel_token_reset(token));
    CHECK_OK(nnm_exec_pool_acquire(pool, 0, token, &b)); /* a try that finds the block free */
    CHECK_OK(nnm_exec_pool_release(pool, &b));
    pi = pool_info(pool);
    CHECK(pi.cancellations == CANCELLED_WAITERS + 1 && pi.free_blocks == 1 && pi.out_blocks == 0);

    nnm_cancel_token_free(token);
    nnm_cancel_token_free(other);
    nnm_exec_pool_free(pool);
    nnm_exec_compiled_free(c);
}

/* --- a device allocator in C ------------------------------------------------- */

typedef struct device {
    pthread_mutex_t lock;
    long allocs, frees;
    long allow;          /* allocations that succeed before every one fails (-1: all) */
    uint64_t free_bytes; /* what mem_info reports */
} device;

static void *device_alloc(void *ctx, size_t size, size_t alignment, void *stream) {
    device *d = (device *)ctx;
    void *p = NULL;
    (void)stream;
    pthread_mutex_lock(&d->lock);
    if (d->allow != 0 && posix_memalign(&p, alignment < sizeof(void *) ? sizeof(void *) : alignment, size) == 0) {
        ++d->allocs;
        if (d->allow > 0) --d->allow;
    }
    pthread_mutex_unlock(&d->lock);
    return p;
}

static void device_free(void *ctx, void *ptr, size_t size, void *stream) {
    device *d = (device *)ctx;
    (void)size;
    (void)stream;
    pthread_mutex_lock(&d->lock);
    ++d->frees;
    pthread_mutex_unlock(&d->lock);
    free(ptr);
}

static int device_mem_info(void *ctx, uint64_t *free_bytes, uint64_t *total_bytes) {
    device *d = (device *)ctx;
    *free_bytes = d->free_bytes;
    *total_bytes = d->free_bytes;
    return 0;
}

/* A handle on `d` allowing `allow` allocations, with `flags`; with
 * mem_info reporting `free_bytes` when `with_mem_info`. */
static nnm_device_allocator *device_new_flags(device *d, const char *name, long allow, int with_mem_info,
                                              uint64_t free_bytes, uint32_t flags) {
    nnm_device_allocator_vtable vt;
    nnm_device_allocator *a = NULL;
    memset(d, 0, sizeof *d);
    pthread_mutex_init(&d->lock, NULL);
    d->allow = allow;
    d->free_bytes = free_bytes;
    memset(&vt, 0, sizeof vt);
    vt.name = name;
    vt.ctx = d;
    vt.alloc = device_alloc;
    vt.free = device_free;
    vt.mem_info = with_mem_info ? device_mem_info : NULL;
    vt.flags = flags;
    CHECK_OK(nnm_device_allocator_new(&vt, &a));
    return a;
}

/* As device_new_flags, host-accessible (the CPU can write its memory). */
static nnm_device_allocator *device_new(device *d, const char *name, long allow, int with_mem_info,
                                        uint64_t free_bytes) {
    return device_new_flags(d, name, allow, with_mem_info, free_bytes, NNM_DEVICE_HOST_ACCESSIBLE);
}

static long count_of(device *d, const long *field) {
    long n;
    pthread_mutex_lock(&d->lock);
    n = *field;
    pthread_mutex_unlock(&d->lock);
    return n;
}

static void device_done(device *d) {
    CHECK(count_of(d, &d->allocs) == count_of(d, &d->frees)); /* every byte returned */
    pthread_mutex_destroy(&d->lock);
}

/* --- a failing initialiser ----------------------------------------------------- */

static void test_failing_init(void) {
    nnm_exec_model *m = build_net();
    nnm_exec_compiled *c = NULL;
    device d;
    nnm_device_allocator *dev = device_new(&d, "blobs", -1, 0, 0);
    init_log log = new_log(4); /* conv2a, the second operator with immutable workbuffers */
    char value[16];
    if (m == NULL || dev == NULL) {
        nnm_exec_model_free(m);
        nnm_device_allocator_free(dev);
        return;
    }
    CHECK_FAILS(nnm_exec_compile(m, NULL, dev, init_fill, &log, &c), NNM_CALLBACK_FAILED);
    snprintf(value, sizeof value, "%d", -3);
    CHECK(nnm_check_contains(nnm_last_error(), "conv2a") && nnm_check_contains(nnm_last_error(), value));
    CHECK(c == NULL);
    CHECK(log.calls == 2 && log.ops[0] == 1 && log.ops[1] == 4 && !log.bad); /* stopped at the failure */
    CHECK(count_of(&d, &d.allocs) == 2);                                     /* both blobs were made... */
    CHECK(count_of(&d, &d.frees) == count_of(&d, &d.allocs));                 /* ...and freed */
    CHECK(operator_count(m) == OPS);                                         /* the model is untouched */

    /* The same model builds once init succeeds. */
    log = new_log(SIZE_MAX);
    CHECK_OK(nnm_exec_compile(m, NULL, dev, init_fill, &log, &c));
    CHECK(c != NULL && log.calls == 4 && !log.bad);
    nnm_exec_compiled_free(c);
    nnm_exec_model_free(m);
    nnm_device_allocator_free(dev);
    device_done(&d);
}

/* --- devices: partial pools, little free memory, none --------------------------- */

static void test_devices(void) {
    nnm_exec_model *m = build_net();
    nnm_exec_compiled *c = m != NULL ? compile_net(m) : NULL;
    nnm_exec_pool *pool = NULL;
    nnm_device_allocator *dev;
    nnm_exec_block b[2];
    device d;
    char reason[256], block_size[32];
    size_t len = 0;
    nnm_exec_info info;
    nnm_exec_pool_info pi;
    nnm_exec_model_free(m);
    if (c == NULL) return;
    info = info_of(c);
    snprintf(block_size, sizeof block_size, "%llu", (unsigned long long)info.block_bytes);

    /* Fails after two blocks: 5 requested, 2 kept, with the reason. */
    dev = device_new(&d, "two-blocks", 2, 0, 0);
    CHECK_OK(nnm_exec_pool_new(c, dev, 5, &pool));
    pi = pool_info(pool);
    CHECK(pi.requested == 5 && pi.blocks == 2 && pi.free_blocks == 2 && pi.partial == 1);
    CHECK(pi.block_bytes == info.block_bytes);
    CHECK_OK(nnm_exec_pool_partial_reason(pool, reason, sizeof reason, &len));
    CHECK(len > 1 && strlen(reason) + 1 == len && nnm_check_contains(reason, "kept 2"));
    CHECK_OK(nnm_exec_pool_acquire(pool, 0, NULL, &b[0]));
    CHECK_OK(nnm_exec_pool_acquire(pool, 0, NULL, &b[1]));
    CHECK(b[0].base != b[1].base && b[0].slot != b[1].slot);
    CHECK_REFUSES(nnm_exec_pool_acquire(pool, 0, NULL, &b[1]), NNM_BUSY, "no block free");
    CHECK_OK(nnm_exec_pool_release(pool, &b[0]));
    CHECK_OK(nnm_exec_pool_release(pool, &b[1]));
    nnm_exec_pool_free(pool);
    nnm_device_allocator_free(dev);
    CHECK(count_of(&d, &d.allocs) == 2);
    device_done(&d);

    /* A device with room for two and a half blocks caps 4 at 2. */
    dev = device_new(&d, "small", -1, 1, info.block_bytes * 2 + info.block_bytes / 2);
    CHECK_OK(nnm_exec_pool_new(c, dev, 4, &pool));
    pi = pool_info(pool);
    CHECK(pi.requested == 4 && pi.blocks == 2 && pi.target == 2 && pi.partial == 1);
    CHECK_OK(nnm_exec_pool_partial_reason(pool, reason, sizeof reason, &len));
    CHECK(nnm_check_contains(reason, "device \"small\"") && nnm_check_contains(reason, "room for 2 of the 4") &&
          nnm_check_contains(reason, block_size));
    CHECK(count_of(&d, &d.allocs) == 2);
    nnm_exec_pool_free(pool);
    nnm_device_allocator_free(dev);
    device_done(&d);

    /* Room for less than one block: NNM_OUT_OF_MEMORY naming the size. */
    pool = NULL;
    dev = device_new(&d, "tiny", -1, 1, info.block_bytes - 1);
    CHECK_FAILS(nnm_exec_pool_new(c, dev, 2, &pool), NNM_OUT_OF_MEMORY);
    CHECK_ERROR_HAS(block_size);
    CHECK_ERROR_HAS("tiny");
    CHECK(pool == NULL && count_of(&d, &d.allocs) == 0);
    nnm_device_allocator_free(dev);
    device_done(&d);

    /* A device whose first allocation fails: no pool either. */
    dev = device_new(&d, "full", 0, 0, 0);
    CHECK_REFUSES(nnm_exec_pool_new(c, dev, 3, &pool), NNM_OUT_OF_MEMORY, block_size);
    CHECK(pool == NULL);
    nnm_device_allocator_free(dev);
    device_done(&d);

    /* Not partial: the reason is "". */
    CHECK_OK(nnm_exec_pool_new(c, NULL, 1, &pool));
    len = 0;
    CHECK_OK(nnm_exec_pool_partial_reason(pool, NULL, 0, &len));
    CHECK(len == 1 && pool_info(pool).partial == 0);
    nnm_exec_pool_free(pool);
    nnm_exec_compiled_free(c);
}

/* --- shrink ----------------------------------------------------------------- */

static void test_shrink(void) {
    nnm_exec_model *m = build_net();
    nnm_exec_compiled *c = m != NULL ? compile_net(m) : NULL;
    nnm_exec_pool *pool = NULL;
    nnm_exec_block a, b;
    device d;
    nnm_device_allocator *dev;
    pthread_t thread;
    waiter w;
    nnm_exec_pool_info pi;
    nnm_exec_model_free(m);
    if (c == NULL) return;
    dev = device_new(&d, "counted", -1, 0, 0);
    REQUIRE_OK(nnm_exec_pool_new(c, dev, 3, &pool));
    nnm_device_allocator_free(dev); /* the pool keeps it */
    nnm_exec_compiled_free(c);      /* the pool owns its blocks */
    CHECK(count_of(&d, &d.allocs) == 3);
    CHECK_OK(nnm_exec_pool_acquire(pool, 0, NULL, &a));
    CHECK_OK(nnm_exec_pool_acquire(pool, 0, NULL, &b));

    /* To 1 with two out: the free block goes now, one more when it comes back. */
    CHECK_OK(nnm_exec_pool_shrink(pool, 1));
    CHECK(count_of(&d, &d.frees) == 1);
    pi = pool_info(pool);
    CHECK(pi.target == 1 && pi.blocks == 2 && pi.out_blocks == 2 && pi.free_blocks == 0);
    CHECK_OK(nnm_exec_pool_release(pool, &a));
    CHECK(count_of(&d, &d.frees) == 2);
    CHECK_OK(nnm_exec_pool_release(pool, &b)); /* the one kept */
    CHECK(count_of(&d, &d.frees) == 2);
    pi = pool_info(pool);
    CHECK(pi.blocks == 1 && pi.free_blocks == 1 && pi.out_blocks == 0);
    CHECK_REFUSES(nnm_exec_pool_shrink(pool, 2), NNM_INVALID_ARGUMENT, "only shrinks"); /* only down */
    CHECK(pool_info(pool).target == 1);

    /* To 0 with the block out and a waiter: the waiter fails, the block
     * goes when it comes back, and the pool refuses from then on. */
    CHECK_OK(nnm_exec_pool_acquire(pool, 0, NULL, &a));
    w.pool = pool;
    w.token = NULL;
    w.status = NNM_PANIC;
    CHECK(pthread_create(&thread, NULL, wait_body, &w) == 0);
    CHECK(wait_for_waiters(pool, 1));
    CHECK_OK(nnm_exec_pool_shrink(pool, 0));
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK(w.status == NNM_WRONG_STATE);
    CHECK(count_of(&d, &d.frees) == 2);
    CHECK_OK(nnm_exec_pool_release(pool, &a));
    CHECK(count_of(&d, &d.frees) == 3);
    CHECK_REFUSES(nnm_exec_pool_acquire(pool, -1, NULL, &b), NNM_WRONG_STATE, "no blocks");
    pi = pool_info(pool);
    CHECK(pi.blocks == 0 && pi.target == 0 && pi.waiters == 0);
    nnm_exec_pool_free(pool);
    device_done(&d);
}

/* --- bad input ------------------------------------------------------------------ */

/* A model call that must fail with `status` and a message holding `part`,
 * leaving the model's operator count at `ops`. */
#define CHECK_MODEL_REFUSES(call, status, part, m, ops) \
    do {                                                \
        CHECK_REFUSES(call, status, part);              \
        CHECK(operator_count(m) == (ops));              \
    } while (0)

static nnm_exec_operator_desc one_op(const char *name, const nnm_exec_tensor *in, size_t ins,
                                     const nnm_exec_output *out, size_t outs) {
    nnm_exec_operator_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.inputs = in;
    d.input_count = ins;
    d.outputs = out;
    d.output_count = outs;
    return d;
}

static void test_bad_model_input(void) {
    nnm_exec_model *m = NULL;
    nnm_exec_tensor in[2];
    nnm_exec_output out[2];
    nnm_exec_operator_desc d;
    uint64_t sizes[2] = {64, 0}, parts[2] = {1, 2}, offsets[2] = {0, 32};
    unsigned char bytes[16];
    size_t index = 77, n = 0;
    memset(bytes, 1, sizeof bytes);
    CHECK_REFUSES(nnm_exec_model_new(NULL), NNM_NULL_ARGUMENT, "out is NULL");
    REQUIRE_OK(nnm_exec_model_new(&m));
    /* Constant 10 (16 B), tensors 1 and 2 (64 B each) from two operators. */
    CHECK_OK(nnm_exec_model_add_constant(m, 10, 16, bytes));
    out[0].id = 1;
    out[0].size = 64;
    out[0].alias_of = NA;
    d = one_op("a", NULL, 0, out, 1);
    CHECK_OK(nnm_exec_model_add_operator(m, &d, NULL));
    out[0].id = 2;
    d = one_op("b", NULL, 0, out, 1);
    CHECK_OK(nnm_exec_model_add_operator(m, &d, NULL));
    CHECK(operator_count(m) == 2);

    /* NULLs. */
    CHECK_REFUSES(nnm_exec_model_add_constant(NULL, 11, 16, bytes), NNM_NULL_ARGUMENT, "model is NULL");
    CHECK_REFUSES(nnm_exec_model_add_operator(NULL, &d, &index), NNM_NULL_ARGUMENT, "model is NULL");
    CHECK_MODEL_REFUSES(nnm_exec_model_add_operator(m, NULL, &index), NNM_NULL_ARGUMENT, "desc", m, 2);
    d = one_op("x", NULL, 1, out, 1);
    CHECK_MODEL_REFUSES(nnm_exec_model_add_operator(m, &d, &index), NNM_NULL_ARGUMENT, "inputs", m, 2);
    d = one_op("x", NULL, 0, NULL, 1);
    CHECK_MODEL_REFUSES(nnm_exec_model_add_operator(m, &d, &index), NNM_NULL_ARGUMENT, "outputs", m, 2);
    d = one_op("x", NULL, 0, out, 0);
    d.mutable_count = 1;
    CHECK_MODEL_REFUSES(nnm_exec_model_add_operator(m, &d, &index), NNM_NULL_ARGUMENT, "mutable", m, 2);
    CHECK_REFUSES(nnm_exec_model_add_concat(NULL, 20, 128, parts, offsets, 2), NNM_NULL_ARGUMENT, "model is NULL");
    CHECK_MODEL_REFUSES(nnm_exec_model_add_concat(m, 20, 128, NULL, offsets, 2), NNM_NULL_ARGUMENT, "part", m, 2);
    CHECK_MODEL_REFUSES(nnm_exec_model_add_concat(m, 20, 128, parts, NULL, 2), NNM_NULL_ARGUMENT, "offsets", m, 2);
    CHECK_REFUSES(nnm_exec_model_pin(NULL, 1), NNM_NULL_ARGUMENT, "model is NULL");
    CHECK_REFUSES(nnm_exec_model_operator_count(m, NULL), NNM_NULL_ARGUMENT, "out is NULL");
    CHECK_REFUSES(nnm_exec_model_operator_count(NULL, &n), NNM_NULL_ARGUMENT, "model is NULL");
    CHECK(index == 77); /* no out-parameter written on failure */

    /* Ids: unknown, duplicate, UINT64_MAX (NNM_EXEC_NO_ALIAS). */
    in[0].id = 99;
    in[0].size = 64;
    out[0].id = 3;
    d = one_op("x", in, 1, out, 1);
    CHECK_MODEL_REFUSES(nnm_exec_model_add_operator(m, &d, &index), NNM_NOT_FOUND, "99", m, 2);
    CHECK_MODEL_REFUSES(nnm_exec_model_pin(m, 99), NNM_NOT_FOUND, "99", m, 2);
    CHECK_MODEL_REFUSES(nnm_exec_model_add_constant(m, 1, 16, NULL), NNM_ALREADY_EXISTS, "already", m, 2);
    CHECK_MODEL_REFUSES(nnm_exec_model_add_constant(m, UINT64_MAX, 16, NULL), NNM_INVALID_ARGUMENT,
                        "NNM_EXEC_NO_ALIAS", m, 2);
    out[0].id = 10; /* the constant's id: a constant can never be an output */
    d = one_op("x", NULL, 0, out, 1);
    CHECK_MODEL_REFUSES(nnm_exec_model_add_operator(m, &d, &index), NNM_ALREADY_EXISTS, "10", m, 2);
    out[0].id = UINT64_MAX;
    CHECK_MODEL_REFUSES(nnm_exec_model_add_operator(m, &d, &index), NNM_INVALID_ARGUMENT, "NNM_EXEC_NO_ALIAS",
                        m, 2);
    out[0].id = 3;
    out[1] = out[0];
    d = one_op("x", NULL, 0, out, 2);
    CHECK_MODEL_REFUSES(nnm_exec_model_add_operator(m, &d, &index), NNM_ALREADY_EXISTS, "twice", m, 2);
    CHECK_MODEL_REFUSES(nnm_exec_model_add_concat(m, 2, 128, parts, offsets, 2), NNM_ALREADY_EXISTS, "already", m,
                        2);
    CHECK_MODEL_REFUSES(nnm_exec_model_add_concat(m, UINT64_MAX, 128, parts, offsets, 2), NNM_INVALID_ARGUMENT,
                        "NNM_EXEC_NO_ALIAS", m, 2);

    /* Zero sizes: a constant, a workbuffer, an alias of a buffer that is not
     * dynamic (size 0 makes an output or a concat parent dynamic, see
     * test_ids_chains_and_dynamic_buffers). */
    CHECK_MODEL_REFUSES(nnm_exec_model_add_constant(m, 11, 0, NULL), NNM_INVALID_ARGUMENT, "size 0", m, 2);
    in[0].id = 1;
    in[0].size = 64;
    out[0].size = 0;
    out[0].alias_of = 1;
    d = one_op("x", in, 1, out, 1);
    CHECK_MODEL_REFUSES(nnm_exec_model_add_operator(m, &d, &index), NNM_INVALID_ARGUMENT,
                        "dynamic only when what it aliases is", m, 2);
    out[0].size = 64;
    out[0].alias_of = NA;
    d = one_op("x", NULL, 0, out, 1);
    d.mutable_sizes = sizes;
    d.mutable_count = 2;
    CHECK_MODEL_REFUSES(nnm_exec_model_add_operator(m, &d, &index), NNM_INVALID_ARGUMENT, "mutable workbuffer 1", m,
                        2);
    /* A dynamic parent (size 0) has no end to check, but its parts still may
     * not overlap. */
    CHECK_MODEL_REFUSES(nnm_exec_model_add_concat(m, 20, 0, parts, offsets, 2), NNM_INVALID_ARGUMENT, "overlap", m, 2);

    /* An input read with the wrong size, either way. */
    in[0].id = 1;
    in[0].size = 32;
    d = one_op("x", in, 1, out, 1);
    CHECK_MODEL_REFUSES(nnm_exec_model_add_operator(m, &d, &index), NNM_INVALID_ARGUMENT, "smaller than", m, 2);
    in[0].size = 65;
    CHECK_MODEL_REFUSES(nnm_exec_model_add_operator(m, &d, &index), NNM_INVALID_ARGUMENT, "larger than", m, 2);

    /* Aliases: larger than the input, of a constant, of a non-input. */
    in[0].size = 64;
    out[0].size = 128;
    out[0].alias_of = 1;
    CHECK_MODEL_REFUSES(nnm_exec_model_add_operator(m, &d, &index), NNM_INVALID_ARGUMENT, "cannot be larger", m, 2);
    in[0].id = 10;
    in[0].size = 16;
    out[0].size = 16;
    out[0].alias_of = 10;
    CHECK_MODEL_REFUSES(nnm_exec_model_add_operator(m, &d, &index), NNM_INVALID_ARGUMENT, "constant", m, 2);
    out[0].alias_of = 2;
    CHECK_MODEL_REFUSES(nnm_exec_model_add_operator(m, &d, &index), NNM_INVALID_ARGUMENT, "not one of its inputs", m,
                        2);
    /* An alias cycle: two outputs of one operator aliasing each other. */
    in[0].id = 1;
    in[0].size = 64;
    out[0].id = 3;
    out[0].size = 64;
    out[0].alias_of = 4;
    out[1].id = 4;
    out[1].size = 64;
    out[1].alias_of = 3;
    d = one_op("x", in, 1, out, 2);
    CHECK_MODEL_REFUSES(nnm_exec_model_add_operator(m, &d, &index), NNM_INVALID_ARGUMENT,
                        "aliases 4, an output of the same operator: an alias cycle", m, 2);

    /* A name that is not UTF-8 (0xff never occurs in UTF-8). */
    out[0].alias_of = NA;
    d = one_op("op\xff", NULL, 0, out, 1);
    CHECK_MODEL_REFUSES(nnm_exec_model_add_operator(m, &d, &index), NNM_INVALID_ARGUMENT,
                        "desc->name is not valid UTF-8", m, 2);

    /* Concat parents: parts overlapping, past the end, unknown, none. */
    CHECK_MODEL_REFUSES(nnm_exec_model_add_concat(m, 20, 128, parts, offsets, 2), NNM_INVALID_ARGUMENT, "overlap", m,
                        2);
    offsets[1] = 96;
    CHECK_MODEL_REFUSES(nnm_exec_model_add_concat(m, 20, 128, parts, offsets, 2), NNM_INVALID_ARGUMENT, "past", m, 2);
    offsets[1] = UINT64_MAX - 8; /* offset + size overflows */
    CHECK_MODEL_REFUSES(nnm_exec_model_add_concat(m, 20, 128, parts, offsets, 2), NNM_INVALID_ARGUMENT, "past", m, 2);
    offsets[1] = 64;
    parts[1] = 98;
    CHECK_MODEL_REFUSES(nnm_exec_model_add_concat(m, 20, 128, parts, offsets, 2), NNM_NOT_FOUND, "98", m, 2);
    parts[1] = 10;
    CHECK_MODEL_REFUSES(nnm_exec_model_add_concat(m, 20, 128, parts, offsets, 2), NNM_INVALID_ARGUMENT,
                        "neither a tensor", m, 2);
    CHECK_MODEL_REFUSES(nnm_exec_model_add_concat(m, 20, 128, parts, offsets, 0), NNM_INVALID_ARGUMENT, "no parts", m,
                        2);

    /* After all that, the model is the one built above: its good calls
     * still work, with the ids the failed calls did not take. */
    parts[1] = 2;
    CHECK_OK(nnm_exec_model_add_concat(m, 20, 128, parts, offsets, 2));
    in[0].id = 20;
    in[0].size = 128;
    out[0].id = 3;
    out[0].size = 64;
    out[0].alias_of = NA;
    d = one_op("c", in, 1, out, 1);
    CHECK_OK(nnm_exec_model_add_operator(m, &d, &index));
    CHECK(index == 2 && operator_count(m) == 3);
    CHECK_OK(nnm_exec_model_add_constant(m, 11, 16, NULL));
    CHECK_OK(nnm_exec_model_pin(m, 3));
    nnm_exec_model_free(m);
    nnm_exec_model_free(NULL);
}

/* --- constants on a device the CPU cannot write -------------------------------- */

/* Constant 1 (64 B, with `bytes` or none) read by one operator. */
static nnm_exec_model *constant_model(const unsigned char *bytes) {
    nnm_exec_model *m = NULL;
    nnm_exec_tensor in;
    nnm_exec_output out;
    nnm_exec_operator_desc d;
    in.id = 1;
    in.size = 64;
    out.id = 2;
    out.size = 64;
    out.alias_of = NA;
    d = one_op("scale", &in, 1, &out, 1);
    CHECK_OK(nnm_exec_model_new(&m));
    if (m == NULL) return NULL;
    CHECK_OK(nnm_exec_model_add_constant(m, 1, 64, bytes));
    CHECK_OK(nnm_exec_model_add_operator(m, &d, NULL));
    return m;
}

static void test_device_constants(void) {
    unsigned char bytes[64];
    nnm_exec_model *with = NULL, *without = NULL;
    nnm_exec_compiled *c = NULL;
    nnm_device_allocator *dev;
    device d;
    void *constant = NULL;
    long allocs;
    memset(bytes, 7, sizeof bytes);
    with = constant_model(bytes);
    without = constant_model(NULL);
    dev = device_new_flags(&d, "opaque", -1, 0, 0, 0); /* not NNM_DEVICE_HOST_ACCESSIBLE */
    if (with != NULL && without != NULL && dev != NULL) {
        /* Bytes to copy in: refused, naming the device, nothing kept. */
        CHECK_REFUSES(nnm_exec_compile(with, NULL, dev, NULL, NULL, &c), NNM_INVALID_ARGUMENT, "not host-accessible");
        CHECK_ERROR_HAS("constant 1 has bytes");
        CHECK_ERROR_HAS("opaque");
        CHECK(c == NULL && count_of(&d, &d.frees) == count_of(&d, &d.allocs));
        allocs = count_of(&d, &d.allocs);
        /* Without bytes the constant is left for the runtime to write at its
         * address in the blob (on the device: never dereferenced here). */
        CHECK_OK(nnm_exec_compile(without, NULL, dev, NULL, NULL, &c));
        CHECK_OK(nnm_exec_compiled_constant(c, 1, &constant));
        CHECK(constant != NULL && count_of(&d, &d.allocs) == allocs + 1); /* the constants blob alone */
        CHECK(place_of(c, 1).area == NNM_EXEC_AREA_CONSTANTS && place_of(c, 1).size == 64);
        nnm_exec_compiled_free(c);
    }
    nnm_exec_model_free(with);
    nnm_exec_model_free(without);
    nnm_device_allocator_free(dev);
    device_done(&d);
}

static void test_bad_compiled_input(void) {
    nnm_exec_model *m = build_net();
    nnm_exec_compiled *c = NULL, *stale = NULL;
    nnm_exec_pool *pool = NULL;
    nnm_exec_options o;
    nnm_exec_block b, other, copy, small;
    nnm_exec_info info, after;
    nnm_exec_op_shape shape;
    nnm_exec_place place;
    nnm_exec_pool_info pi, after_pool;
    void *ptrs[MAX_PTRS], *constant = NULL;
    size_t n = 0, k;
    char buf[8];
    init_log log = new_log(SIZE_MAX);
    if (m == NULL) return;
    memset(&o, 0, sizeof o);

    /* Compile: NULLs, a bad alignment, an unknown algorithm, no init for
     * a model with immutable workbuffers. */
    CHECK_REFUSES(nnm_exec_compile(NULL, NULL, NULL, init_fill, &log, &c), NNM_NULL_ARGUMENT, "model is NULL");
    CHECK_REFUSES(nnm_exec_compile(m, NULL, NULL, init_fill, &log, NULL), NNM_NULL_ARGUMENT, "out is NULL");
    o.alignment = 48;
    CHECK_REFUSES(nnm_exec_compile(m, &o, NULL, init_fill, &log, &c), NNM_INVALID_ARGUMENT, "48");
    o.alignment = 0;
    o.algorithm = 1000;
    CHECK_REFUSES(nnm_exec_compile(m, &o, NULL, init_fill, &log, &c), NNM_INVALID_ARGUMENT, "1000");
    CHECK_REFUSES(nnm_exec_compile(m, NULL, NULL, NULL, NULL, &c), NNM_INVALID_ARGUMENT, "init");
    CHECK(c == NULL && log.calls == 0 && operator_count(m) == OPS);
    o.algorithm = NNM_ALGORITHM_AUTO;
    o.alignment = 512; /* a larger alignment is fine: blobs are multiples of it */
    CHECK_OK(nnm_exec_compile(m, &o, NULL, init_fill, &log, &stale));
    info = info_of(stale);
    CHECK(info.constants_bytes % 512 == 0 && info.immutable_bytes % 512 == 0 && info.block_bytes >= 512);
    nnm_exec_compiled_free(stale);
    c = compile_net(m);
    nnm_exec_model_free(m);
    if (c == NULL) return;
    info = info_of(c);

    /* Queries: NULLs, an operator out of range, unknown ids, a non-constant. */
    CHECK_REFUSES(nnm_exec_compiled_info(NULL, &info), NNM_NULL_ARGUMENT, "compiled is NULL");
    CHECK_REFUSES(nnm_exec_compiled_info(c, NULL), NNM_NULL_ARGUMENT, "out is NULL");
    CHECK_REFUSES(nnm_exec_compiled_op_shape(c, OPS, &shape), NNM_INVALID_ARGUMENT, "14");
    CHECK_REFUSES(nnm_exec_compiled_op_shape(c, 0, NULL), NNM_NULL_ARGUMENT, "out is NULL");
    CHECK_REFUSES(nnm_exec_compiled_place(c, 99, &place), NNM_NOT_FOUND, "99");
    CHECK_REFUSES(nnm_exec_compiled_place(c, UINT64_MAX, &place), NNM_NOT_FOUND, "is not in the model");
    CHECK_REFUSES(nnm_exec_compiled_constant(c, 2, &constant), NNM_INVALID_ARGUMENT, "not a constant");
    CHECK_REFUSES(nnm_exec_compiled_constant(c, 99, &constant), NNM_NOT_FOUND, "99");
    CHECK(constant == NULL);
    CHECK_REFUSES(nnm_exec_compiled_report(c, 7, NULL, 0, &n), NNM_INVALID_ARGUMENT, "unknown report format 7");
    CHECK_REFUSES(nnm_exec_compiled_report(c, NNM_REPORT_FORMAT_TEXT, buf, sizeof buf, &n), NNM_BUFFER_TOO_SMALL,
                  "buffer has 8 B");
    CHECK_REFUSES(nnm_exec_compiled_svg(c, NULL, 0, NULL), NNM_NULL_ARGUMENT, "out_written is NULL");

    /* Pools: NULLs, zero blocks. */
    CHECK_REFUSES(nnm_exec_pool_new(NULL, NULL, 1, &pool), NNM_NULL_ARGUMENT, "compiled is NULL");
    CHECK_REFUSES(nnm_exec_pool_new(c, NULL, 1, NULL), NNM_NULL_ARGUMENT, "out is NULL");
    CHECK_REFUSES(nnm_exec_pool_new(c, NULL, 0, &pool), NNM_INVALID_ARGUMENT, "requested is 0");
    CHECK(pool == NULL);
    REQUIRE_OK(nnm_exec_pool_new(c, NULL, 2, &pool));
    CHECK_REFUSES(nnm_exec_pool_acquire(NULL, 0, NULL, &b), NNM_NULL_ARGUMENT, "pool is NULL");
    CHECK_REFUSES(nnm_exec_pool_acquire(pool, 0, NULL, NULL), NNM_NULL_ARGUMENT, "out is NULL");
    CHECK_REFUSES(nnm_exec_pool_get_info(pool, NULL), NNM_NULL_ARGUMENT, "out is NULL");
    CHECK_REFUSES(nnm_exec_pool_get_info(NULL, &pi), NNM_NULL_ARGUMENT, "pool is NULL");
    CHECK_REFUSES(nnm_exec_pool_partial_reason(pool, NULL, 0, NULL), NNM_NULL_ARGUMENT, "out_written is NULL");
    CHECK_REFUSES(nnm_exec_pool_shrink(NULL, 0), NNM_NULL_ARGUMENT, "pool is NULL");
    CHECK_REFUSES(nnm_exec_pool_shrink(pool, 3), NNM_INVALID_ARGUMENT, "3");
    CHECK(pool_info(pool).target == 2);
    nnm_exec_pool_free(NULL); /* nothing */

    /* Resolve: an operator out of range, a short pointer array, a block
     * smaller than the model's, NULLs. */
    REQUIRE_OK(nnm_exec_pool_acquire(pool, 0, NULL, &b));
    for (k = 0; k < MAX_PTRS; ++k) ptrs[k] = &n;
    n = 99;
    CHECK_REFUSES(nnm_exec_resolve(c, OPS, &b, ptrs, MAX_PTRS, &n), NNM_INVALID_ARGUMENT, "14");
    CHECK_REFUSES(nnm_exec_resolve(c, SIZE_MAX, &b, ptrs, MAX_PTRS, &n), NNM_INVALID_ARGUMENT, "does not exist");
    CHECK_REFUSES(nnm_exec_resolve(c, 4, &b, ptrs, 6, &n), NNM_BUFFER_TOO_SMALL, "7"); /* conv2a has 7 */
    small = b;
    small.size = info.mutable_bytes - 8;
    CHECK_REFUSES(nnm_exec_resolve(c, 4, &small, ptrs, MAX_PTRS, &n), NNM_INVALID_ARGUMENT,
                  "smaller than this model's mutable block");
    CHECK_REFUSES(nnm_exec_resolve(NULL, 4, &b, ptrs, MAX_PTRS, &n), NNM_NULL_ARGUMENT, "compiled is NULL");
    CHECK_REFUSES(nnm_exec_resolve(c, 4, NULL, ptrs, MAX_PTRS, &n), NNM_NULL_ARGUMENT, "block is NULL");
    CHECK_REFUSES(nnm_exec_resolve(c, 4, &b, NULL, MAX_PTRS, &n), NNM_NULL_ARGUMENT, "pointers is NULL");
    CHECK_REFUSES(nnm_exec_resolve(c, 4, &b, ptrs, MAX_PTRS, NULL), NNM_NULL_ARGUMENT, "out_count is NULL");
    for (k = 0; k < MAX_PTRS; ++k) CHECK(ptrs[k] == &n); /* nothing written */
    CHECK(n == 99);

    /* Release: NULLs, a double release, a stale block (its slot taken
     * again since), a forged generation: refused, the pool unchanged. */
    copy = b;
    CHECK_REFUSES(nnm_exec_pool_release(NULL, &b), NNM_NULL_ARGUMENT, "pool is NULL");
    CHECK_REFUSES(nnm_exec_pool_release(pool, NULL), NNM_NULL_ARGUMENT, "block is NULL");
    CHECK_OK(nnm_exec_pool_release(pool, &b));
    CHECK_REFUSES(nnm_exec_pool_release(pool, &copy), NNM_INVALID_ARGUMENT, "released twice"); /* double */
    REQUIRE_OK(nnm_exec_pool_acquire(pool, 0, NULL, &b));
    REQUIRE_OK(nnm_exec_pool_acquire(pool, 0, NULL, &other)); /* one of the two has copy's slot again */
    CHECK((b.slot == copy.slot && b.generation != copy.generation) ||
          (other.slot == copy.slot && other.generation != copy.generation));
    pi = pool_info(pool);
    CHECK_REFUSES(nnm_exec_pool_release(pool, &copy), NNM_INVALID_ARGUMENT, "not out of this pool"); /* stale */
    small = b;
    small.generation += 1;
    CHECK_REFUSES(nnm_exec_pool_release(pool, &small), NNM_INVALID_ARGUMENT, "not out of this pool");
    small = b;
    small.slot = 1000;
    CHECK_REFUSES(nnm_exec_pool_release(pool, &small), NNM_INVALID_ARGUMENT, "1000");
    after_pool = pool_info(pool);
    CHECK(same_pool_info(&after_pool, &pi) && pi.out_blocks == 2);
    CHECK_OK(nnm_exec_pool_release(pool, &b));
    CHECK_OK(nnm_exec_pool_release(pool, &other));
    after = info_of(c);
    CHECK(after.mutable_bytes == info.mutable_bytes && after.block_bytes == info.block_bytes &&
          after.operator_count == info.operator_count && after.buffer_count == info.buffer_count);
    CHECK(pool_info(pool).free_blocks == 2);

    /* Freed handles are refused by the checked calls. */
    nnm_exec_pool_free(pool);
    nnm_exec_compiled_free(c);
    CHECK_REFUSES(nnm_exec_compiled_info(c, &info), NNM_INVALID_ARGUMENT, "not a live");
    CHECK_REFUSES(nnm_exec_pool_get_info(pool, &pi), NNM_INVALID_ARGUMENT, "not a live");
}

/* --- workbuffer ids, chained concats, dynamic buffers, count limits --------
 *
 *   op  name   reads           writes               immutable    mutable
 *    0  src    -               1 (dynamic), 2 (64)
 *    1  conv   1 (999 B read)  3 (64)               id 20: 32    ids 21: 128, 22: 16
 *    2  head   11, 1           5 (8)
 *   concat 10 = [2 at 0, 3 at 64] (128 B); concat 11 = [10 at 64] (192 B):
 *   a concat parent inside another, as OpenVINO chains optimised concats.
 */

static int init_ones(void *ctx, size_t op, void *const *buffers, size_t count) {
    (void)ctx;
    if (op != 1 || count != 1 || buffers == NULL || buffers[0] == NULL) return -1;
    memset(buffers[0], 1, 32);
    return 0;
}

static int place_is(nnm_exec_place p, uint32_t area, uint64_t offset, uint64_t size) {
    return p.area == area && p.offset == offset && p.size == size;
}

static void test_ids_chains_and_dynamic_buffers(void) {
    nnm_exec_model *m = NULL;
    nnm_exec_compiled *c = NULL;
    nnm_exec_pool *pool = NULL;
    nnm_exec_block b;
    nnm_exec_output src_out[2], conv_out, head_out, again_out;
    nnm_exec_tensor conv_in, head_in[2];
    nnm_exec_operator_desc d;
    nnm_exec_place places[5], p;
    nnm_exec_info info;
    const uint64_t imm = 32, muts[2] = {128, 16}, imm_ids[1] = {20}, mut_ids[2] = {21, 22}, reserved[1] = {NA};
    const uint64_t inner[2] = {2, 3}, inner_at[2] = {0, 64}, outer[1] = {10}, outer_at[1] = {64};
    const uint64_t dyn_parts[2] = {1, 3}, dyn_at[2] = {0, 4096};
    void *ptrs[5];
    size_t n = 0, index = 77;
    uint64_t base;
    REQUIRE_OK(nnm_exec_model_new(&m));
    src_out[0].id = 1;
    src_out[0].size = 0; /* dynamic: its size is known only at run time */
    src_out[0].alias_of = NA;
    src_out[1].id = 2;
    src_out[1].size = 64;
    src_out[1].alias_of = NA;
    d = one_op("src", NULL, 0, src_out, 2);
    CHECK_OK(nnm_exec_model_add_operator(m, &d, &index));
    conv_in.id = 1;
    conv_in.size = 999; /* any size reads a dynamic buffer */
    conv_out.id = 3;
    conv_out.size = 64;
    conv_out.alias_of = NA;
    d = one_op("conv", &conv_in, 1, &conv_out, 1);
    d.immutable_sizes = &imm;
    d.immutable_count = 1;
    d.mutable_sizes = muts;
    d.mutable_count = 2;
    d.immutable_ids = imm_ids;
    d.mutable_ids = mut_ids;
    CHECK_OK(nnm_exec_model_add_operator(m, &d, &index));
    CHECK(index == 1);

    /* Workbuffer ids share the buffers' id space: taken, reserved or used
     * as a tensor, they are refused and nothing changes. */
    again_out.id = 30;
    again_out.size = 8;
    again_out.alias_of = NA;
    d = one_op("again", NULL, 0, &again_out, 1);
    d.immutable_sizes = &imm;
    d.immutable_count = 1;
    d.immutable_ids = &mut_ids[1];
    CHECK_MODEL_REFUSES(nnm_exec_model_add_operator(m, &d, NULL), NNM_ALREADY_EXISTS,
                        "already operator 1's mutable workbuffer 1", m, 2);
    d.immutable_ids = reserved;
    CHECK_MODEL_REFUSES(nnm_exec_model_add_operator(m, &d, NULL), NNM_INVALID_ARGUMENT, "NNM_EXEC_NO_ALIAS", m, 2);
    CHECK_REFUSES(nnm_exec_model_add_constant(m, 20, 8, NULL), NNM_ALREADY_EXISTS, "immutable workbuffer 0");
    CHECK_REFUSES(nnm_exec_model_pin(m, 21), NNM_INVALID_ARGUMENT, "mutable workbuffer 0, not a buffer");
    CHECK_REFUSES(nnm_exec_model_add_concat(m, 40, 128, &mut_ids[0], &inner_at[0], 1), NNM_INVALID_ARGUMENT,
                  "workbuffer");
    /* A dynamic part cannot sit at a fixed offset of a parent of fixed size,
     * nor can a constant or a workbuffer be dynamic. */
    CHECK_REFUSES(nnm_exec_model_add_concat(m, 40, 4160, dyn_parts, dyn_at, 2), NNM_INVALID_ARGUMENT,
                  "part 1 is dynamic");
    CHECK_REFUSES(nnm_exec_model_add_constant(m, 40, 0, NULL), NNM_INVALID_ARGUMENT, "cannot be dynamic");

    /* Chained concats: 10 holds 2 and 3, 11 holds 10. */
    CHECK_OK(nnm_exec_model_add_concat(m, 10, 128, inner, inner_at, 2));
    CHECK_OK(nnm_exec_model_add_concat(m, 11, 192, outer, outer_at, 1));
    CHECK_REFUSES(nnm_exec_model_add_concat(m, 12, 128, outer, outer_at, 1), NNM_INVALID_ARGUMENT,
                  "already inside");
    head_in[0].id = 11;
    head_in[0].size = 192;
    head_in[1].id = 1;
    head_in[1].size = 5;
    head_out.id = 5;
    head_out.size = 8;
    head_out.alias_of = NA;
    d = one_op("head", head_in, 2, &head_out, 1);
    CHECK_OK(nnm_exec_model_add_operator(m, &d, NULL));
    CHECK_OK(nnm_exec_model_pin(m, 1)); /* a dynamic buffer: nothing to keep */
    CHECK_OK(nnm_exec_compile(m, NULL, NULL, init_ones, NULL, &c));
    nnm_exec_model_free(m);
    if (c == NULL) return;

    /* Places without a block: the workbuffers by id, the parts at their
     * composed offsets, the dynamic buffer in no memory. */
    CHECK(place_is(place_of(c, 20), NNM_EXEC_AREA_IMMUTABLE, 0, 32));
    p = place_of(c, 21);
    CHECK(p.area == NNM_EXEC_AREA_MUTABLE && p.size == 128);
    CHECK(place_of(c, 22).area == NNM_EXEC_AREA_MUTABLE && place_of(c, 22).size == 16);
    CHECK(place_is(place_of(c, 1), NNM_EXEC_AREA_DYNAMIC, 0, 0));
    base = place_of(c, 11).offset;
    CHECK(place_is(place_of(c, 10), NNM_EXEC_AREA_MUTABLE, base + 64, 128));
    CHECK(place_is(place_of(c, 2), NNM_EXEC_AREA_MUTABLE, base + 64, 64));
    CHECK(place_is(place_of(c, 3), NNM_EXEC_AREA_MUTABLE, base + 128, 64));
    CHECK_REFUSES(nnm_exec_compiled_place(c, 23, &p), NNM_NOT_FOUND, "23");
    CHECK_OK(nnm_exec_compiled_info(c, &info));
    CHECK(info.buffer_count == 6 && info.mutable_bytes % 256 == 0);

    /* Operator 1's places, in resolve order: 1, 3, 20, 21, 22. */
    CHECK_OK(nnm_exec_compiled_op_places(c, 1, NULL, 0, &n));
    CHECK(n == 5);
    CHECK_REFUSES(nnm_exec_compiled_op_places(c, 1, places, 4, &n), NNM_BUFFER_TOO_SMALL, "room for 4");
    CHECK_REFUSES(nnm_exec_compiled_op_places(c, 3, places, 5, &n), NNM_INVALID_ARGUMENT, "operator 3");
    CHECK_REFUSES(nnm_exec_compiled_op_places(c, 1, places, SIZE_MAX, &n), NNM_OVERFLOW, "places");
    CHECK_REFUSES(nnm_exec_compiled_op_places(c, 1, places, 5, NULL), NNM_NULL_ARGUMENT, "out_count");
    CHECK_OK(nnm_exec_compiled_op_places(c, 1, places, 5, &n));
    CHECK(n == 5 && place_is(places[0], NNM_EXEC_AREA_DYNAMIC, 0, 0));
    CHECK(places[1].offset == place_of(c, 3).offset && places[2].offset == place_of(c, 20).offset);
    CHECK(places[3].offset == place_of(c, 21).offset && places[4].offset == place_of(c, 22).offset);

    /* Resolved: NULL for the dynamic buffer, the block's base plus the
     * offsets for the rest of the mutable places. */
#if SIZE_MAX > UINT32_MAX
    CHECK_REFUSES(nnm_exec_pool_new(c, NULL, (size_t)UINT32_MAX + 1, &pool), NNM_INVALID_ARGUMENT,
                  "at most 4294967295 blocks");
    CHECK(pool == NULL);
#endif
    REQUIRE_OK(nnm_exec_pool_new(c, NULL, 1, &pool));
    CHECK_OK(nnm_exec_pool_acquire(pool, 0, NULL, &b));
    CHECK_REFUSES(nnm_exec_resolve(c, 1, &b, ptrs, SIZE_MAX, &n), NNM_OVERFLOW, "pointers");
    CHECK_OK(nnm_exec_resolve(c, 1, &b, ptrs, 5, &n));
    CHECK(n == 5 && ptrs[0] == NULL);
    CHECK(ptrs[1] == (void *)((char *)b.base + places[1].offset));
    CHECK(ptrs[3] == (void *)((char *)b.base + places[3].offset));
    CHECK(((const unsigned char *)ptrs[2])[31] == 1);
    CHECK_OK(nnm_exec_resolve(c, 2, &b, ptrs, 5, &n));
    CHECK(n == 3 && ptrs[0] == (void *)((char *)b.base + base) && ptrs[1] == NULL);
    CHECK_OK(nnm_exec_pool_release(pool, &b));
    nnm_exec_pool_free(pool);
    nnm_exec_compiled_free(c);
}

int main(void) {
    test_network();
    test_parallel_requests();
    test_cancellation();
    test_failing_init();
    test_devices();
    test_device_constants();
    test_shrink();
    test_bad_model_input();
    test_bad_compiled_input();
    test_ids_chains_and_dynamic_buffers();
    return nnm_check_report();
}
