/*
 * Memory regions from C (nnm_region_*): a Glow-style backend describes its
 * memories as region descriptions and gets every tensor's region, offset
 * and address. Every figure below is worked out by hand in the comments.
 *
 *   defaults     Glow's five regions on a small model: constants |
 *                placeholders | activations, sizes rounded to 64 B,
 *                activations sharing bytes; the region and tensor queries;
 *                report text and JSON, the SVG picture;
 *   override     a rule prepended for the fully connected weights takes
 *                them from constant-weights; attributes;
 *   rules        every leaf rule and AND / OR / NOT, first match wins,
 *                rules written as text;
 *   per-tensor   one region per input, named <region>/<tensor> (and
 *                <region>/<function>/<tensor> outside the first function);
 *   views        views (and a view of a view) inside their origin, an
 *                origin's lifetime stretched over its views';
 *   functions    two functions sharing a constant by name: one placement;
 *                the same name with another size is refused;
 *   spill        a region over its capacity moves its largest tensor to
 *                its spill region (reserved bytes, two levels, a fixed
 *                base); without a spill region, NNM_DOES_NOT_FIT "missing";
 *   fixed bases  regions at their base addresses, others around them;
 *                overlapping bases refused;
 *   TOML         a configuration from a string and examples/regions.toml;
 *                a syntax error's line; a text without regions gets the
 *                defaults;
 *   picture      3000 tensors: a bounded SVG;
 *   bad input    status and message for each, and nothing changed;
 *   threads      4 threads reading one built table at once;
 *   issue 25     a tensor's own alignment (not its size), one spill record
 *                per tensor down a chain, constants with per-run tensors
 *                refused unless allowed, attributes on the built table,
 *                reserved bytes checked as the region rounds them.
 *
 * Valid C11 and C++17 (built both ways); threads are POSIX threads.
 */
#if !defined(_POSIX_C_SOURCE) && !defined(__cplusplus)
#define _POSIX_C_SOURCE 200809L /* pthreads under -std=c11 */
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnm_check.h"
#include "nnmem.h"

#ifndef NNM_DATA_DIR
#error "build with -DNNM_DATA_DIR=\"<repo>/benches/data\" (examples/ is beside benches/)"
#endif

static int contains(const char *text, const char *part) { return text != NULL && strstr(text, part) != NULL; }

static int name_is(const char *s, const char *want) { return s != NULL && strcmp(s, want) == 0; }

/* --- models ---------------------------------------------------------------- */

/* A tensor description with every optional field at its default. */
static nnm_region_tensor_desc tensor_desc(const char *name, uint32_t kind, uint64_t size) {
    nnm_region_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.kind = kind;
    d.size = size;
    d.lifetime = NNM_LIFETIME_WHOLE_RUN;
    return d;
}

/* Adds `d` and returns its id (SIZE_MAX, and a failed check, if refused). */
static size_t add_desc(nnm_region_model *m, const nnm_region_tensor_desc *d) {
    size_t id = SIZE_MAX;
    CHECK_OK(nnm_region_model_add(m, d, &id));
    return id;
}

/* A weight (constant or placeholder): whole run; function NULL is "main". */
static size_t add_weight(nnm_region_model *m, const char *name, uint32_t kind, uint64_t size, const char *function,
                         const char *tags) {
    nnm_region_tensor_desc d = tensor_desc(name, kind, size);
    d.function = function;
    d.tags = tags;
    return add_desc(m, &d);
}

/* An activation of "main" live over the steps [start, end). */
static size_t add_activation(nnm_region_model *m, const char *name, uint64_t size, int64_t start, int64_t end) {
    nnm_region_tensor_desc d = tensor_desc(name, NNM_TENSOR_KIND_ACTIVATION, size);
    d.lifetime = NNM_LIFETIME_ALLOC_FREE;
    d.start = start;
    d.end = end;
    return add_desc(m, &d);
}

/* A view of `origin` at `offset`, live over [start, end) (start < 0: as long
 * as its origin). */
static size_t add_view(nnm_region_model *m, const char *name, const char *origin, uint64_t offset, uint64_t size,
                       int64_t start, int64_t end) {
    nnm_region_tensor_desc d = tensor_desc(name, NNM_TENSOR_KIND_VIEW, size);
    d.view_of = origin;
    d.view_offset = offset;
    if (start >= 0) {
        d.lifetime = NNM_LIFETIME_ALLOC_FREE;
        d.start = start;
        d.end = end;
    }
    return add_desc(m, &d);
}

static size_t model_count(const nnm_region_model *m) {
    size_t n = SIZE_MAX;
    CHECK_OK(nnm_region_model_tensor_count(m, &n));
    return n;
}

/* --- configurations -------------------------------------------------------- */

/* A region description with every optional field at its default. */
static nnm_region_desc region_desc(uint32_t id, const char *name) {
    nnm_region_desc d;
    memset(&d, 0, sizeof d);
    d.id = id;
    d.name = name;
    return d;
}

static nnm_region_rule *kind_rule(uint32_t kind) {
    nnm_region_rule *r = NULL;
    CHECK_OK(nnm_region_rule_kind(kind, &r));
    return r;
}

/* Appends (prepend: prepends) `d` under `rule`, then frees the rule: the
 * configuration keeps its own copy. */
static void add_region(nnm_region_config *c, const nnm_region_desc *d, nnm_region_rule *rule, int prepend) {
    if (prepend) {
        CHECK_OK(nnm_region_config_prepend(c, d, rule));
    } else {
        CHECK_OK(nnm_region_config_append(c, d, rule));
    }
    nnm_region_rule_free(rule);
}

static size_t description_count(const nnm_region_config *c) {
    size_t n = SIZE_MAX;
    CHECK_OK(nnm_region_config_description_count(c, &n));
    return n;
}

/* --- tables ---------------------------------------------------------------- */

static nnm_tensor_placement placement_of(const nnm_region_table *t, size_t id) {
    nnm_tensor_placement p;
    memset(&p, 0xff, sizeof p);
    CHECK_OK(nnm_region_table_placement(t, id, &p));
    return p;
}

static size_t region_index(const nnm_region_table *t, const char *name) {
    size_t i = SIZE_MAX;
    CHECK_OK(nnm_region_table_find_region(t, name, &i));
    return i;
}

static nnm_region_info region_at(const nnm_region_table *t, size_t index) {
    nnm_region_info info;
    memset(&info, 0, sizeof info);
    CHECK_OK(nnm_region_table_region(t, index, &info));
    return info;
}

/* Whether region `index` holds exactly the tensors `want` (in model order). */
static int region_tensors_are(const nnm_region_table *t, size_t index, const size_t *want, size_t n) {
    size_t ids[16], count = SIZE_MAX, i;
    if (nnm_region_table_region_tensors(t, index, NULL, 0, &count) != NNM_OK || count != n || n > 16) return 0;
    if (nnm_region_table_region_tensors(t, index, ids, 16, &count) != NNM_OK || count != n) return 0;
    for (i = 0; i < n; ++i) {
        if (ids[i] != want[i]) return 0;
    }
    return 1;
}

/* Whether tensor `id` is in region `region` at `offset` and `address`. */
static int placed_at(const nnm_region_table *t, size_t id, const char *region, uint64_t offset, uint64_t address) {
    nnm_tensor_placement p = placement_of(t, id);
    size_t want = region_index(t, region);
    return p.region == want && p.offset == offset && p.address == address && p.spilled == 0;
}

/* Frees what a test made (every free accepts NULL). */
static void free_all(nnm_region_table *t, nnm_region_model *m, nnm_region_config *cfg) {
    nnm_region_table_free(t);
    nnm_region_model_free(m);
    nnm_region_config_free(cfg);
}

/* The table's texts, for nnm_check_text. */
static nnm_status report_call(const void *t, uint32_t format, char *buf, size_t len, size_t *out) {
    return nnm_region_table_report((const nnm_region_table *)t, format, buf, len, out);
}

static nnm_status svg_call(const void *t, uint32_t format, char *buf, size_t len, size_t *out) {
    (void)format;
    return nnm_region_table_svg((const nnm_region_table *)t, buf, len, out);
}

/* The integer after "key": in `from` (JSON, any spacing), or UINT64_MAX. */
static uint64_t json_u64(const char *from, const char *key) {
    char quoted[64];
    const char *p;
    uint64_t v = 0;
    snprintf(quoted, sizeof quoted, "\"%s\"", key);
    p = from != NULL ? strstr(from, quoted) : NULL;
    if (p == NULL) return UINT64_MAX;
    p += strlen(quoted);
    while (*p == ' ' || *p == ':' || *p == '\n') ++p;
    if (*p < '0' || *p > '9') return UINT64_MAX;
    while (*p >= '0' && *p <= '9') v = v * 10 + (uint64_t)(*p++ - '0');
    return v;
}

/* Where `"name"` first appears after the first `"after"` in `json` (NULL if
 * not there). */
static const char *json_find(const char *json, const char *after, const char *name) {
    char quoted[64];
    const char *p = json != NULL ? strstr(json, after) : NULL;
    snprintf(quoted, sizeof quoted, "\"%s\"", name);
    return p != NULL ? strstr(p, quoted) : NULL;
}

/* Where the entry of tensor `name` starts in the report's "tensors": the
 * last "tensors" key (each region's list of names comes before it, the
 * spills after it name single tensors). */
static const char *json_tensor(const char *json, const char *name) {
    const char *p = json != NULL ? strstr(json, "\"tensors\"") : NULL, *last = NULL;
    while (p != NULL) {
        last = p;
        p = strstr(p + 1, "\"tensors\"");
    }
    return last != NULL ? json_find(last, "\"tensors\"", name) : NULL;
}

/* --- the default regions ----------------------------------------------------- */

/* The small model of the defaults test (and of the threads test):
 *   0 w1     constant      100 B -> 128 B at 64 B alignment
 *   1 w2     constant      200 B -> 256 B
 *   2 state  mutable        96 B -> 128 B
 *   3 in     input          64 B
 *   4 out    output         32 B -> 64 B
 *   5 io     input-output   16 B -> 64 B
 *   6 a0     activation    128 B, first/last use 0..1 (= [0, 2))
 *   7 a1     activation    256 B, [1, 3)
 *   8 a2     activation    128 B, [2, 4)
 * Live activation bytes per step: 128, 384, 384, 128: lower bound 384. */
static nnm_region_model *small_model(void) {
    nnm_region_model *m = NULL;
    nnm_region_tensor_desc d;
    if (nnm_region_model_new(&m) != NNM_OK) return NULL;
    add_weight(m, "w1", NNM_TENSOR_KIND_CONSTANT, 100, NULL, NULL);
    add_weight(m, "w2", NNM_TENSOR_KIND_CONSTANT, 200, NULL, NULL);
    add_weight(m, "state", NNM_TENSOR_KIND_MUTABLE, 96, NULL, NULL);
    add_weight(m, "in", NNM_TENSOR_KIND_INPUT, 64, NULL, NULL);
    add_weight(m, "out", NNM_TENSOR_KIND_OUTPUT, 32, NULL, NULL);
    add_weight(m, "io", NNM_TENSOR_KIND_INPUT_OUTPUT, 16, NULL, NULL);
    d = tensor_desc("a0", NNM_TENSOR_KIND_ACTIVATION, 128);
    d.lifetime = NNM_LIFETIME_FIRST_LAST_USE; /* TFLM's inclusive steps */
    d.start = 0;
    d.end = 1;
    d.dtype = "f32";
    add_desc(m, &d);
    add_activation(m, "a1", 256, 1, 3);
    add_activation(m, "a2", 128, 2, 4);
    return m;
}

typedef struct expected_region {
    const char *name;
    uint32_t description_id;
    uint64_t base, size, peak;
    size_t tensors;
} expected_region;

/* Glow's layout, constants | placeholders | activations, one level:
 *   constant-weights        w1 at 0, w2 at 128: 384 B at 0
 *   mutable-weights         state: 128 B at 384
 *   mutable-input-weights   in: 64 B at 512
 *   mutable-output-weights  out at 0, io at 64: 128 B at 576
 *   activations             384 B (not 512: a0 and a2 share bytes) at 704
 * The level needs 1088 B. */
static const expected_region SMALL_REGIONS[5] = {
    {"constant-weights", 0, 0, 384, 384, 2},     {"mutable-weights", 1, 384, 128, 128, 1},
    {"mutable-input-weights", 2, 512, 64, 64, 1}, {"mutable-output-weights", 3, 576, 128, 128, 2},
    {"activations", 4, 704, 384, 384, 3},
};

static void test_defaults(void) {
    nnm_region_config *cfg = NULL;
    nnm_region_model *m = small_model();
    nnm_region_table *t = NULL;
    size_t n = SIZE_MAX, i;
    uint32_t kind = 99;
    char *text;
    REQUIRE_OK(nnm_region_config_new_default(&cfg));
    CHECK(description_count(cfg) == 5);
    CHECK(m != NULL && model_count(m) == 9);
    REQUIRE_OK(nnm_region_table_build(cfg, m, &t));
    /* The table is independent of what it was built from. */
    nnm_region_config_free(cfg);
    nnm_region_model_free(m);

    CHECK_OK(nnm_region_table_region_count(t, &n));
    CHECK(n == 5);
    CHECK_OK(nnm_region_table_tensor_count(t, &n));
    CHECK(n == 9);
    CHECK_OK(nnm_region_table_spill_count(t, &n));
    CHECK(n == 0);
    for (i = 0; i < 5; ++i) {
        const expected_region *e = &SMALL_REGIONS[i];
        nnm_region_info info = region_at(t, i);
        CHECK(name_is(info.name, e->name) && name_is(info.level, "memory") && info.level_rank == 0);
        CHECK(info.description_id == e->description_id && info.tensor_count == e->tensors);
        CHECK(info.base_address == e->base && info.size_bytes == e->size && info.peak_bytes == e->peak);
        /* Weights live the whole run: no plan is smaller than their sum;
         * the activations' lower bound is 384 (steps 1 and 2). */
        CHECK(info.lower_bound_bytes == e->peak && info.proven_optimal == 1);
        CHECK(region_index(t, e->name) == i);
        if (i < 4) {
            CHECK(info.algorithm == NNM_ALGORITHM_SEQUENTIAL); /* Glow's constants layout */
        } else {
            CHECK(info.algorithm != NNM_ALGORITHM_AUTO && nnm_algorithm_name(info.algorithm) != NULL);
        }
    }
    {
        const size_t constants[2] = {0, 1}, outputs[2] = {4, 5}, activations[3] = {6, 7, 8};
        CHECK(region_tensors_are(t, 0, constants, 2));
        CHECK(region_tensors_are(t, 3, outputs, 2));
        CHECK(region_tensors_are(t, 4, activations, 3));
    }
    /* Weights stacked in model order, each rounded up to 64 B. */
    CHECK(placed_at(t, 0, "constant-weights", 0, 0));
    CHECK(placed_at(t, 1, "constant-weights", 128, 128));
    CHECK(placed_at(t, 2, "mutable-weights", 0, 384));
    CHECK(placed_at(t, 3, "mutable-input-weights", 0, 512));
    CHECK(placed_at(t, 4, "mutable-output-weights", 0, 576));
    CHECK(placed_at(t, 5, "mutable-output-weights", 64, 640));
    {
        /* 384 B hold a1 (256 B) and a0, a2 (128 B each) only with a0 and a2
         * at the same offset: a1 at 0 and a0, a2 at 256, or a1 at 128 and
         * a0, a2 at 0. Reuse. */
        nnm_tensor_placement a0 = placement_of(t, 6), a1 = placement_of(t, 7), a2 = placement_of(t, 8);
        CHECK(a0.region == 4 && a1.region == 4 && a2.region == 4);
        CHECK(a0.offset == a2.offset);
        CHECK((a1.offset == 0 && a0.offset == 256) || (a1.offset == 128 && a0.offset == 0));
        CHECK(a0.address == 704 + a0.offset && a1.address == 704 + a1.offset);
        CHECK(a0.size_bytes == 128 && a1.size_bytes == 256 && a0.spilled == 0);
    }
    CHECK(placement_of(t, 1).size_bytes == 200); /* the tensor's own size */

    /* Kind names, both ways. */
    CHECK(name_is(nnm_tensor_kind_name(NNM_TENSOR_KIND_INPUT_OUTPUT), "input-output"));
    CHECK(nnm_tensor_kind_name(7) == NULL);
    CHECK_OK(nnm_tensor_kind_from_name("activation", &kind));
    CHECK(kind == NNM_TENSOR_KIND_ACTIVATION);

    /* Reports: text, JSON (keys as documented), the picture. */
    text = nnm_check_text(t, report_call, NNM_REPORT_FORMAT_TEXT);
    CHECK(contains(text, "constant-weights") && contains(text, "activations") && contains(text, "w2"));
    free(text);
    text = nnm_check_text(t, report_call, NNM_REPORT_FORMAT_JSON);
    CHECK(text != NULL && text[0] == '{');
    CHECK(json_u64(json_find(text, "\"levels\"", "memory"), "size_bytes") == 1088);
    CHECK(json_u64(json_find(text, "\"regions\"", "activations"), "base_address") == 704);
    CHECK(json_u64(json_find(text, "\"regions\"", "activations"), "size_bytes") == 384);
    CHECK(json_u64(json_find(text, "\"regions\"", "activations"), "lower_bound_bytes") == 384);
    CHECK(json_u64(json_tensor(text, "io"), "address") == 640);
    CHECK(contains(text, "\"spills\""));
    free(text);
    text = nnm_check_text(t, svg_call, 0);
    CHECK(text != NULL && (strncmp(text, "<svg", 4) == 0 || strncmp(text, "<?xml", 5) == 0));
    CHECK(contains(text, "activations"));
    free(text);
    nnm_region_table_free(t);
}

/* --- an override rule -------------------------------------------------------- */

/* The defaults, with "fc-weights" (constants tagged op=fc, stacked, no
 * reuse) prepended:
 *   fc-weights        fc1.weight 256 B at 0, fc2.weight 64 B at 256: 320 B at 0
 *   constant-weights  conv.weight 100 B -> 128 B: at 320
 *   activations       x 512 B: at 448 */
static void test_override(void) {
    nnm_region_config *cfg = NULL;
    nnm_region_model *m = NULL;
    nnm_region_table *t = NULL;
    nnm_region_rule *parts[2] = {NULL, NULL}, *fc = NULL;
    const nnm_region_rule *operands[2];
    nnm_region_desc d = region_desc(10, "fc-weights");
    const char *want = "(kind = constant AND tag op = 'fc')";
    char buf[128];
    size_t needed = 0, written = 0, fc1, conv, fc2, x;
    REQUIRE_OK(nnm_region_config_new_default(&cfg));
    parts[0] = kind_rule(NNM_TENSOR_KIND_CONSTANT);
    CHECK_OK(nnm_region_rule_tag("op", "fc", &parts[1]));
    operands[0] = parts[0];
    operands[1] = parts[1];
    CHECK_OK(nnm_region_rule_and(operands, 2, &fc));
    nnm_region_rule_free(parts[0]); /* the AND holds copies */
    nnm_region_rule_free(parts[1]);
    CHECK_OK(nnm_region_rule_to_string(fc, NULL, 0, &needed));
    CHECK(needed == strlen(want) + 1);
    CHECK_OK(nnm_region_rule_to_string(fc, buf, sizeof buf, &written));
    CHECK(written == needed && name_is(buf, want));
    d.algorithm = NNM_ALGORITHM_SEQUENTIAL;
    d.flags = NNM_REGION_NO_REUSE;
    add_region(cfg, &d, fc, 1);
    CHECK(description_count(cfg) == 6);

    /* Attributes for the backend's own use. */
    CHECK_OK(nnm_region_config_set_attribute(cfg, "fc-weights", "bank", "sram0"));
    CHECK_OK(nnm_region_config_get_attribute(cfg, "fc-weights", "bank", NULL, 0, &needed));
    CHECK(needed == 6);
    CHECK_OK(nnm_region_config_get_attribute(cfg, "fc-weights", "bank", buf, sizeof buf, &written));
    CHECK(name_is(buf, "sram0"));
    CHECK_FAILS(nnm_region_config_set_attribute(cfg, "no-such-region", "bank", "1"), NNM_NOT_FOUND);
    CHECK_ERROR_HAS("no-such-region");
    CHECK_FAILS(nnm_region_config_get_attribute(cfg, "fc-weights", "no-such-key", buf, sizeof buf, &written),
                NNM_NOT_FOUND);
    CHECK_ERROR_HAS("bank"); /* the attributes it has */
    CHECK_FAILS(nnm_region_config_get_attribute(cfg, "fc-weights", "bank", buf, 3, &written), NNM_BUFFER_TOO_SMALL);
    CHECK(name_is(buf, "sram0") && written == 6); /* nothing written */

    REQUIRE_OK(nnm_region_model_new(&m));
    fc1 = add_weight(m, "fc1.weight", NNM_TENSOR_KIND_CONSTANT, 256, NULL, "op=fc");
    conv = add_weight(m, "conv.weight", NNM_TENSOR_KIND_CONSTANT, 100, NULL, "op=conv");
    fc2 = add_weight(m, "fc2.weight", NNM_TENSOR_KIND_CONSTANT, 64, NULL, "op=fc; layer=2");
    x = add_activation(m, "x", 512, 0, 3);
    REQUIRE_OK(nnm_region_table_build(cfg, m, &t));
    {
        nnm_region_info fcr = region_at(t, region_index(t, "fc-weights"));
        nnm_region_info cw = region_at(t, region_index(t, "constant-weights"));
        nnm_region_info act = region_at(t, region_index(t, "activations"));
        CHECK(fcr.description_id == 10 && fcr.base_address == 0 && fcr.size_bytes == 320 && fcr.tensor_count == 2);
        CHECK(cw.base_address == 320 && cw.size_bytes == 128 && cw.tensor_count == 1);
        CHECK(act.base_address == 448 && act.size_bytes == 512);
    }
    CHECK(placed_at(t, fc1, "fc-weights", 0, 0));
    CHECK(placed_at(t, fc2, "fc-weights", 256, 256));
    CHECK(placed_at(t, conv, "constant-weights", 0, 320));
    CHECK(placed_at(t, x, "activations", 0, 448));
    free_all(t, m, cfg);
}

/* --- every kind of rule -------------------------------------------------------- */

static void test_rules(void) {
    static const char *const regions[9] = {"by-name", "by-prefix", "by-glob",     "by-size", "by-dtype",
                                           "by-tag",  "by-function", "by-or-not", "rest"};
    /* Tensor i goes to regions[i]: each matches its rule and, except the
     * last, also "rest" (any), which comes last. */
    static const char *const names[9] = {"exact", "pre.x", "glob", "sized", "q", "pinned", "s", "c", "other"};
    const char *want = "(NOT kind = activation AND (kind = constant OR kind = input))";
    nnm_region_config *cfg = NULL;
    nnm_region_model *m = NULL;
    nnm_region_table *t = NULL;
    nnm_region_rule *r[9], *kinds[2], *either = NULL, *not_act = NULL;
    const nnm_region_rule *ops[2];
    nnm_region_desc d;
    char buf[128];
    size_t written = 0, i;
    memset(r, 0, sizeof r);
    CHECK_OK(nnm_region_rule_name("exact", &r[0]));
    CHECK_OK(nnm_region_rule_name_prefix("pre.", &r[1]));
    CHECK_OK(nnm_region_rule_name_glob("g?o*b", &r[2]));
    CHECK_OK(nnm_region_rule_size(1000, 2000, &r[3]));
    CHECK_OK(nnm_region_rule_dtype("i8", &r[4]));
    CHECK_OK(nnm_region_rule_tag("pin", NULL, &r[5]));
    CHECK_OK(nnm_region_rule_function("side", &r[6]));
    kinds[0] = kind_rule(NNM_TENSOR_KIND_CONSTANT);
    kinds[1] = kind_rule(NNM_TENSOR_KIND_INPUT);
    ops[0] = kinds[0];
    ops[1] = kinds[1];
    CHECK_OK(nnm_region_rule_or(ops, 2, &either));
    {
        nnm_region_rule *act = kind_rule(NNM_TENSOR_KIND_ACTIVATION);
        CHECK_OK(nnm_region_rule_not(act, &not_act));
        nnm_region_rule_free(act);
    }
    ops[0] = not_act;
    ops[1] = either;
    CHECK_OK(nnm_region_rule_and(ops, 2, &r[7]));
    nnm_region_rule_free(kinds[0]);
    nnm_region_rule_free(kinds[1]);
    nnm_region_rule_free(either);
    nnm_region_rule_free(not_act);
    CHECK_OK(nnm_region_rule_any(&r[8]));
    CHECK_OK(nnm_region_rule_to_string(r[7], buf, sizeof buf, &written));
    CHECK(name_is(buf, want));
    CHECK_OK(nnm_region_rule_to_string(r[3], buf, sizeof buf, &written));
    CHECK(name_is(buf, "size in 1000..=2000 B"));
    {
        /* A glob's `?` is one character, however many UTF-8 bytes it takes:
         * "?2" takes "\xc3\xa9" "2" (e-acute, 2 bytes, then "2"). */
        nnm_region_config *g = NULL;
        nnm_region_model *gm = NULL;
        nnm_region_table *gt = NULL;
        nnm_region_rule *glob = NULL, *any = NULL;
        nnm_region_desc gd = region_desc(1, "one-char");
        nnm_region_desc rest = region_desc(2, "rest");
        CHECK_OK(nnm_region_rule_name_glob("?2", &glob));
        CHECK_OK(nnm_region_rule_any(&any));
        REQUIRE_OK(nnm_region_config_new(&g));
        add_region(g, &gd, glob, 0);
        add_region(g, &rest, any, 0);
        REQUIRE_OK(nnm_region_model_new(&gm));
        add_weight(gm, "\xc3\xa9" "2", NNM_TENSOR_KIND_CONSTANT, 8, NULL, NULL);
        add_weight(gm, "\xc3\xa9" "\xc3\xa9" "2", NNM_TENSOR_KIND_CONSTANT, 8, NULL, NULL);
        REQUIRE_OK(nnm_region_table_build(g, gm, &gt));
        CHECK(placement_of(gt, 0).region == region_index(gt, "one-char"));
        CHECK(placement_of(gt, 1).region == region_index(gt, "rest"));
        free_all(gt, gm, g);
    }
    {
        nnm_region_rule *open = NULL, *view = NULL;
        CHECK_OK(nnm_region_rule_size(1000, UINT64_MAX, &open)); /* no upper end */
        CHECK_OK(nnm_region_rule_to_string(open, buf, sizeof buf, &written));
        CHECK(name_is(buf, "size >= 1000 B"));
        CHECK_OK(nnm_region_rule_is_view(&view));
        CHECK_OK(nnm_region_rule_to_string(view, buf, sizeof buf, &written));
        CHECK(name_is(buf, "is view"));
        nnm_region_rule_free(open);
        nnm_region_rule_free(view);
    }

    REQUIRE_OK(nnm_region_config_new(&cfg));
    CHECK(description_count(cfg) == 0);
    for (i = 0; i < 9; ++i) {
        d = region_desc((uint32_t)i + 1, regions[i]);
        add_region(cfg, &d, r[i], 0);
    }
    CHECK(description_count(cfg) == 9);

    REQUIRE_OK(nnm_region_model_new(&m));
    for (i = 0; i < 9; ++i) {
        nnm_region_tensor_desc td = tensor_desc(names[i], NNM_TENSOR_KIND_ACTIVATION, i == 3 ? 1500 : 64);
        if (i == 4) td.dtype = "i8";
        if (i == 5) td.tags = "pin=1";
        if (i == 6) td.function = "side";
        if (i == 7) td.kind = NNM_TENSOR_KIND_CONSTANT;
        add_desc(m, &td);
    }
    REQUIRE_OK(nnm_region_table_build(cfg, m, &t));
    for (i = 0; i < 9; ++i) {
        nnm_tensor_placement p = placement_of(t, i);
        nnm_region_info info = region_at(t, p.region);
        if (!name_is(info.name, regions[i])) {
            fprintf(stderr, "tensor %s went to %s\n", names[i], info.name != NULL ? info.name : "(none)");
        }
        CHECK(name_is(info.name, regions[i]) && info.tensor_count == 1 && p.offset == 0);
    }
    free_all(t, m, cfg);
}

/* --- per-tensor regions for inputs ---------------------------------------------- */

/* The defaults, with "inputs" (inputs, one region each, no reuse) prepended:
 *   inputs/in0         100 B -> 128 B at 0
 *   inputs/in1          64 B at 128
 *   inputs/second/in2   64 B at 192 (in2 is of function "second")
 *   constant-weights    w 64 B at 256
 *   activations         act 64 B at 320 */
static void test_per_tensor(void) {
    nnm_region_config *cfg = NULL;
    nnm_region_model *m = NULL;
    nnm_region_table *t = NULL;
    nnm_region_desc d = region_desc(20, "inputs");
    size_t in0, in1, in2, w, act;
    REQUIRE_OK(nnm_region_config_new_default(&cfg));
    d.flags = NNM_REGION_PER_TENSOR | NNM_REGION_NO_REUSE;
    add_region(cfg, &d, kind_rule(NNM_TENSOR_KIND_INPUT), 1);
    REQUIRE_OK(nnm_region_model_new(&m));
    in0 = add_weight(m, "in0", NNM_TENSOR_KIND_INPUT, 100, NULL, NULL);
    in1 = add_weight(m, "in1", NNM_TENSOR_KIND_INPUT, 64, NULL, NULL);
    w = add_weight(m, "w", NNM_TENSOR_KIND_CONSTANT, 64, NULL, NULL);
    act = add_activation(m, "act", 64, 0, 1);
    in2 = add_weight(m, "in2", NNM_TENSOR_KIND_INPUT, 64, "second", NULL);
    REQUIRE_OK(nnm_region_table_build(cfg, m, &t));
    {
        nnm_region_info r0 = region_at(t, region_index(t, "inputs/in0"));
        nnm_region_info r1 = region_at(t, region_index(t, "inputs/in1"));
        nnm_region_info r2 = region_at(t, region_index(t, "inputs/second/in2"));
        const size_t only_in1[1] = {1};
        CHECK(r0.description_id == 20 && r0.tensor_count == 1 && r0.base_address == 0 && r0.size_bytes == 128);
        CHECK(r1.description_id == 20 && r1.tensor_count == 1 && r1.base_address == 128 && r1.size_bytes == 64);
        CHECK(r2.description_id == 20 && r2.tensor_count == 1 && r2.base_address == 192 && r2.size_bytes == 64);
        CHECK(region_tensors_are(t, region_index(t, "inputs/in1"), only_in1, 1));
    }
    CHECK(placed_at(t, in0, "inputs/in0", 0, 0));
    CHECK(placed_at(t, in1, "inputs/in1", 0, 128));
    CHECK(placed_at(t, in2, "inputs/second/in2", 0, 192));
    CHECK(placed_at(t, w, "constant-weights", 0, 256));
    CHECK(placed_at(t, act, "activations", 0, 320));
    {
        size_t i = 77;
        CHECK_FAILS(nnm_region_table_find_region(t, "inputs", &i), NNM_NOT_FOUND); /* no shared one */
        CHECK(i == 77);
    }
    free_all(t, m, cfg);
}

/* --- views ------------------------------------------------------------------------- */

/* Defaults:
 *   0 w      constant 128 B                  constant-weights at 0
 *   1 wv     view of w at 64, 64 B            -> offset 64, address 64
 *   2 big    activation 256 B, [0, 4)
 *   3 v1     view of big at 64, 128 B, [1, 3) -> big + 64
 *   4 v2     view of v1 at 32, 32 B           -> big + 96 (a view of a view)
 *   5 v3     view of big at 0, 64 B, [3, 5)   stretches big to [0, 5)
 *   6 other  activation 128 B, [4, 6)
 * big and other are both live at step 4 only because of v3: activations
 * need 256 + 128 = 384 B (not 256), at 128 (after the 128 B of constants). */
static void test_views(void) {
    nnm_region_config *cfg = NULL;
    nnm_region_model *m = NULL;
    nnm_region_table *t = NULL;
    const size_t constants[2] = {0, 1}, activations[5] = {2, 3, 4, 5, 6};
    REQUIRE_OK(nnm_region_config_new_default(&cfg));
    REQUIRE_OK(nnm_region_model_new(&m));
    add_weight(m, "w", NNM_TENSOR_KIND_CONSTANT, 128, NULL, NULL);
    add_view(m, "wv", "w", 64, 64, -1, -1);
    add_activation(m, "big", 256, 0, 4);
    add_view(m, "v1", "big", 64, 128, 1, 3);
    add_view(m, "v2", "v1", 32, 32, -1, -1);
    add_view(m, "v3", "big", 0, 64, 3, 5);
    add_activation(m, "other", 128, 4, 6);
    CHECK(model_count(m) == 7);
    REQUIRE_OK(nnm_region_table_build(cfg, m, &t));
    {
        size_t cw = region_index(t, "constant-weights"), ai = region_index(t, "activations");
        nnm_region_info act = region_at(t, ai);
        nnm_tensor_placement big = placement_of(t, 2), v1 = placement_of(t, 3), v2 = placement_of(t, 4);
        nnm_tensor_placement v3 = placement_of(t, 5), other = placement_of(t, 6);
        CHECK(region_tensors_are(t, cw, constants, 2) && region_tensors_are(t, ai, activations, 5));
        CHECK(act.base_address == 128 && act.size_bytes == 384 && act.peak_bytes == 384);
        CHECK(act.lower_bound_bytes == 384 && act.tensor_count == 5);
        CHECK(placed_at(t, 0, "constant-weights", 0, 0));
        CHECK(placed_at(t, 1, "constant-weights", 64, 64));
        CHECK(big.region == ai && v1.region == ai && v2.region == ai && v3.region == ai && other.region == ai);
        CHECK(big.address == 128 + big.offset);
        CHECK(v1.offset == big.offset + 64 && v1.address == big.address + 64 && v1.size_bytes == 128);
        CHECK(v2.offset == big.offset + 96 && v2.address == big.address + 96 && v2.size_bytes == 32);
        CHECK(v3.offset == big.offset && v3.address == big.address);
        /* big and other share step 4: apart. */
        CHECK(big.offset + 256 <= other.offset || other.offset + 128 <= big.offset);
        CHECK(big.offset + 256 <= 384 && other.offset + 128 <= 384);
        CHECK(v1.spilled == 0 && v2.spilled == 0);
    }
    free_all(t, m, cfg);
}

/* --- two functions sharing constants ------------------------------------------------- */

/* Defaults:
 *   0 conv1.w  constant 128 B, function f   constant-weights at 0
 *   1 x        activation 256 B, all of f
 *   2 conv1.w  constant 128 B, function g   the same place as 0
 *   3 g.w      constant 64 B, function g    constant-weights at 128
 *   4 y        activation 512 B, all of g
 * g runs after f: x and y never live together and share bytes, so the
 * activations need 512 B, at 192. */
static void test_two_functions(void) {
    nnm_region_config *cfg = NULL;
    nnm_region_model *m = NULL;
    nnm_region_table *t = NULL;
    nnm_region_tensor_desc d;
    size_t id = 99;
    const size_t constants[3] = {0, 2, 3};
    REQUIRE_OK(nnm_region_config_new_default(&cfg));
    REQUIRE_OK(nnm_region_model_new(&m));
    add_weight(m, "conv1.w", NNM_TENSOR_KIND_CONSTANT, 128, "f", NULL);
    d = tensor_desc("x", NNM_TENSOR_KIND_ACTIVATION, 256); /* whole run of f */
    d.function = "f";
    add_desc(m, &d);
    add_weight(m, "conv1.w", NNM_TENSOR_KIND_CONSTANT, 128, "g", NULL);
    add_weight(m, "g.w", NNM_TENSOR_KIND_CONSTANT, 64, "g", NULL);
    d = tensor_desc("y", NNM_TENSOR_KIND_ACTIVATION, 512);
    d.function = "g";
    add_desc(m, &d);

    /* The same name with another size: refused, nothing added. */
    d = tensor_desc("conv1.w", NNM_TENSOR_KIND_CONSTANT, 256);
    d.function = "h";
    CHECK_FAILS(nnm_region_model_add(m, &d, &id), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("conv1.w");
    CHECK(id == 99 && model_count(m) == 5);

    REQUIRE_OK(nnm_region_table_build(cfg, m, &t));
    {
        size_t cw = region_index(t, "constant-weights");
        nnm_region_info c = region_at(t, cw), a = region_at(t, region_index(t, "activations"));
        nnm_tensor_placement first = placement_of(t, 0), again = placement_of(t, 2);
        nnm_tensor_placement x = placement_of(t, 1), y = placement_of(t, 4);
        CHECK(c.size_bytes == 192 && c.tensor_count == 3 && region_tensors_are(t, cw, constants, 3));
        CHECK(first.region == cw && first.offset == 0 && first.address == 0);
        CHECK(again.region == first.region && again.offset == first.offset && again.address == first.address);
        CHECK(placed_at(t, 3, "constant-weights", 128, 128));
        CHECK(a.base_address == 192 && a.size_bytes == 512 && a.peak_bytes == 512);
        CHECK(y.offset == 0 && y.address == 192 && x.offset + 256 <= 512 && x.address == 192 + x.offset);
    }
    free_all(t, m, cfg);
}

/* --- capacity and spill ---------------------------------------------------------------- */

/* Levels sram (rank 0) and ddr (rank 1):
 *   sram-weights   constants, no reuse, stacked, capacity 512 B, spill to
 *                  ddr-weights (when `spill`)
 *   activations    activations, sram, 64 B reserved in front, 32 B at the back
 *   ddr-weights    constants (never first), ddr, fixed at 0x80000000
 * with constants c0 256 B, c1 128 B, c2 192 B (576 B > 512 B) and an
 * activation a of 64 B. */
static nnm_region_config *spill_config(int spill, uint64_t ddr_capacity) {
    nnm_region_config *cfg = NULL;
    nnm_region_desc d;
    if (nnm_region_config_new(&cfg) != NNM_OK) return NULL;
    CHECK_OK(nnm_region_config_add_level(cfg, "sram", 0));
    CHECK_OK(nnm_region_config_add_level(cfg, "ddr", 1));
    d = region_desc(1, "sram-weights");
    d.flags = NNM_REGION_NO_REUSE;
    d.algorithm = NNM_ALGORITHM_SEQUENTIAL;
    d.level = "sram";
    d.capacity = 512;
    d.spill_to = spill ? "ddr-weights" : NULL;
    add_region(cfg, &d, kind_rule(NNM_TENSOR_KIND_CONSTANT), 0);
    d = region_desc(2, "activations");
    d.level = "sram";
    d.reserved_front = 64;
    d.reserved_back = 32;
    add_region(cfg, &d, kind_rule(NNM_TENSOR_KIND_ACTIVATION), 0);
    d = region_desc(3, "ddr-weights");
    d.flags = NNM_REGION_NO_REUSE | NNM_REGION_FIXED_BASE;
    d.algorithm = NNM_ALGORITHM_SEQUENTIAL;
    d.level = "ddr";
    d.base_address = 0x80000000u;
    d.capacity = ddr_capacity;
    add_region(cfg, &d, kind_rule(NNM_TENSOR_KIND_CONSTANT), 0);
    return cfg;
}

static nnm_region_model *spill_model(void) {
    nnm_region_model *m = NULL;
    if (nnm_region_model_new(&m) != NNM_OK) return NULL;
    add_weight(m, "c0", NNM_TENSOR_KIND_CONSTANT, 256, NULL, NULL);
    add_weight(m, "c1", NNM_TENSOR_KIND_CONSTANT, 128, NULL, NULL);
    add_weight(m, "c2", NNM_TENSOR_KIND_CONSTANT, 192, NULL, NULL);
    add_activation(m, "a", 64, 0, 2);
    return m;
}

/* The three constants live equally long (the whole run), so c0, the
 * largest, has the largest pressure (size x steps) and moves to
 * ddr-weights; c1 and c2 then take 320 B:
 *   sram: sram-weights c1 at 0, c2 at 128 (320 B at 0); activations a at
 *         64 (after the reserved front), 64 + 64 + 32 = 160 -> 192 B at 320
 *   ddr:  ddr-weights c0 at 0, 256 B at 0x80000000 */
static void test_spill(void) {
    nnm_region_config *cfg = spill_config(1, 0);
    nnm_region_model *m = spill_model();
    nnm_region_table *t = NULL, *none = NULL;
    nnm_region_spill s;
    size_t n = 0, sram, ddr, act;
    char *json;
    CHECK(cfg != NULL && m != NULL);
    REQUIRE_OK(nnm_region_table_build(cfg, m, &t));
    CHECK_OK(nnm_region_table_region_count(t, &n));
    CHECK(n == 3);
    sram = region_index(t, "sram-weights");
    act = region_index(t, "activations");
    ddr = region_index(t, "ddr-weights");
    CHECK(sram == 0 && act == 1 && ddr == 2); /* by level rank, then description order */
    {
        nnm_region_info si = region_at(t, sram), ai = region_at(t, act), di = region_at(t, ddr);
        CHECK(name_is(si.level, "sram") && si.level_rank == 0 && si.base_address == 0 && si.size_bytes == 320);
        CHECK(si.tensor_count == 2);
        CHECK(ai.base_address == 320 && ai.size_bytes == 192 && ai.peak_bytes == 64);
        CHECK(name_is(di.level, "ddr") && di.level_rank == 1 && di.base_address == 0x80000000u);
        CHECK(di.size_bytes == 256 && di.tensor_count == 1);
    }
    CHECK_OK(nnm_region_table_spill_count(t, &n));
    CHECK(n == 1);
    memset(&s, 0, sizeof s);
    CHECK_OK(nnm_region_table_spill(t, 0, &s));
    CHECK(s.tensor == 0 && s.from == sram && s.to == ddr);
    CHECK(s.reason != NULL && s.reason[0] != '\0' && contains(s.reason, "512") && contains(s.reason, "c0"));
    {
        nnm_tensor_placement c0 = placement_of(t, 0);
        CHECK(c0.region == ddr && c0.offset == 0 && c0.address == 0x80000000u && c0.spilled == 1);
    }
    CHECK(placed_at(t, 1, "sram-weights", 0, 0));
    CHECK(placed_at(t, 2, "sram-weights", 128, 128));
    CHECK(placed_at(t, 3, "activations", 64, 384));
    CHECK_FAILS(nnm_region_table_spill(t, 1, &s), NNM_INVALID_ARGUMENT); /* only one */
    json = nnm_check_text(t, report_call, NNM_REPORT_FORMAT_JSON);
    CHECK(contains(json, "\"spills\"") && contains(json, "\"ddr-weights\""));
    /* ddr: "256 B from 0x80000000" in the text; the same start and size in
     * the JSON, and where it ends. */
    CHECK(json_u64(json_find(json, "\"levels\"", "ddr"), "start_address") == 0x80000000u);
    CHECK(json_u64(json_find(json, "\"levels\"", "ddr"), "size_bytes") == 256);
    CHECK(json_u64(json_find(json, "\"levels\"", "ddr"), "end_address") == 0x80000100u);
    free(json);
    nnm_region_table_free(t);
    nnm_region_config_free(cfg);

    /* Without a spill region: 576 B against 512 B, 64 B missing. */
    cfg = spill_config(0, 0);
    CHECK_FAILS(nnm_region_table_build(cfg, m, &none), NNM_DOES_NOT_FIT);
    CHECK_ERROR_HAS("missing");
    CHECK_ERROR_HAS("sram-weights");
    CHECK_ERROR_HAS("576");
    CHECK_ERROR_HAS("512");
    CHECK(none == NULL);
    nnm_region_config_free(cfg);

    /* The spill region runs out too (c0's 256 B against 128 B). */
    cfg = spill_config(1, 128);
    CHECK_FAILS(nnm_region_table_build(cfg, m, &none), NNM_DOES_NOT_FIT);
    CHECK_ERROR_HAS("missing");
    CHECK(none == NULL);
    nnm_region_config_free(cfg);
    nnm_region_model_free(m);
}

/* --- fixed bases -------------------------------------------------------------------------- */

/* One level, description order bank0 | rest | bank1:
 *   bank0  constants, fixed at 64:       c 128 B -> [64, 192)
 *   rest   activations, not fixed:       x 128 B; [0, 128) would overlap
 *          bank0, so it goes to 192
 *   bank1  inputs, fixed at `bank1_base`: i 64 B
 * At 4096 the level needs 4160 B; at 128 bank1 overlaps bank0. */
static nnm_region_config *bank_config(uint64_t bank1_base) {
    nnm_region_config *cfg = NULL;
    nnm_region_desc d;
    if (nnm_region_config_new(&cfg) != NNM_OK) return NULL;
    d = region_desc(1, "bank0");
    d.flags = NNM_REGION_FIXED_BASE;
    d.base_address = 64;
    add_region(cfg, &d, kind_rule(NNM_TENSOR_KIND_CONSTANT), 0);
    d = region_desc(2, "rest");
    add_region(cfg, &d, kind_rule(NNM_TENSOR_KIND_ACTIVATION), 0);
    d = region_desc(3, "bank1");
    d.flags = NNM_REGION_FIXED_BASE;
    d.base_address = bank1_base;
    add_region(cfg, &d, kind_rule(NNM_TENSOR_KIND_INPUT), 0);
    return cfg;
}

static void test_fixed_bases(void) {
    nnm_region_config *cfg = bank_config(4096);
    nnm_region_model *m = NULL;
    nnm_region_table *t = NULL;
    char *json;
    REQUIRE_OK(nnm_region_model_new(&m));
    add_weight(m, "c", NNM_TENSOR_KIND_CONSTANT, 128, NULL, NULL);
    add_activation(m, "x", 128, 0, 1);
    add_weight(m, "i", NNM_TENSOR_KIND_INPUT, 64, NULL, NULL);
    REQUIRE_OK(nnm_region_table_build(cfg, m, &t));
    CHECK(region_at(t, region_index(t, "bank0")).base_address == 64);
    CHECK(region_at(t, region_index(t, "rest")).base_address == 192);
    CHECK(region_at(t, region_index(t, "bank1")).base_address == 4096);
    CHECK(placed_at(t, 0, "bank0", 0, 64));
    CHECK(placed_at(t, 1, "rest", 0, 192));
    CHECK(placed_at(t, 2, "bank1", 0, 4096));
    json = nnm_check_text(t, report_call, NNM_REPORT_FORMAT_JSON);
    /* The level starts at its lowest region, bank0 at 64, and ends with
     * bank1 at 4160: 4096 B from 0x40. */
    CHECK(json_u64(json_find(json, "\"levels\"", "memory"), "start_address") == 64);
    CHECK(json_u64(json_find(json, "\"levels\"", "memory"), "size_bytes") == 4096);
    CHECK(json_u64(json_find(json, "\"levels\"", "memory"), "end_address") == 4160);
    free(json);
    nnm_region_table_free(t);
    nnm_region_config_free(cfg);

    /* bank1 at 128 ([0x80, 0xc0)) overlaps bank0's [0x40, 0xc0): refused,
     * naming both ranges and the level. */
    t = NULL;
    cfg = bank_config(128);
    CHECK_FAILS(nnm_region_table_build(cfg, m, &t), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("'bank0' [0x40, 0xc0)");
    CHECK_ERROR_HAS("'bank1' [0x80, 0xc0)");
    CHECK_ERROR_HAS("level 'memory'");
    CHECK(t == NULL);
    nnm_region_config_free(cfg);
    nnm_region_model_free(m);
}

/* --- TOML ----------------------------------------------------------------------------------- */

static void test_toml(void) {
    /* A configuration file's text, loaded without a rebuild: constants in
     * SRAM, then Glow's five defaults (activations in "memory"). */
    static const char *const text = "defaults = true\n"
                                    "[[level]]\nname = \"sram\"\nrank = 0\n"
                                    "[[region]]\nid = 10\nname = \"weights\"\nlevel = \"sram\"\n"
                                    "reuse = false\nplanner = \"sequential\"\ncapacity = \"1 KiB\"\n"
                                    "rule = { kind = \"constant\" }\n"
                                    "[region.attributes]\nbank = \"0\"\n";
    nnm_region_config *cfg = NULL, *bad = NULL;
    nnm_region_model *m = NULL;
    nnm_region_table *t = NULL;
    char buf[8];
    size_t written = 0;
    REQUIRE_OK(nnm_region_config_from_toml(text, &cfg));
    CHECK(description_count(cfg) == 6);
    CHECK_OK(nnm_region_config_get_attribute(cfg, "weights", "bank", buf, sizeof buf, &written));
    CHECK(name_is(buf, "0") && written == 2);
    REQUIRE_OK(nnm_region_model_new(&m));
    add_weight(m, "w", NNM_TENSOR_KIND_CONSTANT, 100, NULL, NULL);
    add_activation(m, "x", 64, 0, 1);
    REQUIRE_OK(nnm_region_table_build(cfg, m, &t));
    {
        nnm_region_info w = region_at(t, region_index(t, "weights"));
        nnm_region_info a = region_at(t, region_index(t, "activations"));
        CHECK(name_is(w.level, "sram") && w.description_id == 10 && w.algorithm == NNM_ALGORITHM_SEQUENTIAL);
        CHECK(w.size_bytes == 128 && w.tensor_count == 1);
        CHECK(name_is(a.level, "memory") && a.description_id == 4 && a.size_bytes == 64);
    }
    nnm_region_table_free(t);

    /* A syntax error: status, and the line in the message. */
    CHECK_FAILS(nnm_region_config_from_toml("[[region]]\nid = 1\nname = \n", &bad), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("line 3");
    /* A well-formed file with a bad value: its line too. */
    CHECK_FAILS(nnm_region_config_from_toml("[[region]]\nname = \"w\"\nrule = { kind = \"weights\" }\n", &bad),
                NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("line 3");
    CHECK_ERROR_HAS("weights");
    CHECK(bad == NULL);
    CHECK_NOT_OK(nnm_region_config_from_toml_file("/nonexistent/regions.toml", &bad));
    CHECK_ERROR_HAS("/nonexistent/regions.toml");
    CHECK(bad == NULL);
    CHECK_FAILS(nnm_region_config_from_toml(NULL, &bad), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_config_from_toml(text, NULL), NNM_NULL_ARGUMENT);
    /* A spill to itself: at the `spill` key (line 3), not at the region. */
    CHECK_FAILS(nnm_region_config_from_toml("[[region]]\nname = \"w\"\nspill = \"w\"\nrule = { all_tensors = true }\n",
                                            &bad),
                NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("line 3, column 9: region 'w' (id 0) spills to itself");
    CHECK(bad == NULL);
    nnm_region_config_free(cfg);

    /* No region described: Glow's five defaults, with or without levels;
     * `defaults = false` keeps the configuration empty, and a build then
     * says no region takes the tensors. */
    {
        static const char *const no_regions[3] = {"", "# levels only\n[[level]]\nname = \"sram\"\nrank = 0\n",
                                                  "defaults = false\n"};
        size_t k;
        for (k = 0; k < 3; ++k) {
            cfg = NULL;
            t = NULL;
            REQUIRE_OK(nnm_region_config_from_toml(no_regions[k], &cfg));
            if (k < 2) {
                CHECK(description_count(cfg) == 5);
                REQUIRE_OK(nnm_region_table_build(cfg, m, &t));
                CHECK(placement_of(t, 0).region == region_index(t, "constant-weights"));
                CHECK(placement_of(t, 1).region == region_index(t, "activations"));
            } else {
                CHECK(description_count(cfg) == 0);
                CHECK_FAILS(nnm_region_table_build(cfg, m, &t), NNM_INVALID_ARGUMENT);
                CHECK_ERROR_HAS("'w' (constant, function main) matches no region; tried: no regions");
                CHECK(t == NULL);
            }
            nnm_region_table_free(t);
            nnm_region_config_free(cfg);
        }
    }
    nnm_region_model_free(m);

    /* The shipped example file: fc weights (tagged op=fc) in an 8 KiB SRAM
     * bank at 0x2000_0000 with 256 B reserved at its back, spilling to
     * ddr-weights, then the five defaults. fc1.w (8000 B) and fc2.w (1000 B
     * -> 1024 B) need 9280 B: fc1.w, the larger, moves; fc2.w stays. */
    cfg = NULL;
    REQUIRE_OK(nnm_region_config_from_toml_file(NNM_DATA_DIR "/../../examples/regions.toml", &cfg));
    CHECK(description_count(cfg) == 7);
    REQUIRE_OK(nnm_region_model_new(&m));
    add_weight(m, "fc1.w", NNM_TENSOR_KIND_CONSTANT, 8000, NULL, "op=fc");
    add_weight(m, "fc2.w", NNM_TENSOR_KIND_CONSTANT, 1000, NULL, "op=fc");
    add_weight(m, "conv.w", NNM_TENSOR_KIND_CONSTANT, 512, NULL, "op=conv");
    t = NULL;
    REQUIRE_OK(nnm_region_table_build(cfg, m, &t));
    {
        nnm_tensor_placement fc1 = placement_of(t, 0);
        nnm_region_info fc = region_at(t, region_index(t, "fc-weights"));
        CHECK(fc.base_address == 0x20000000u && fc.size_bytes == 1280 && name_is(fc.level, "sram"));
        CHECK(placed_at(t, 1, "fc-weights", 0, 0x20000000u));
        CHECK(fc1.region == region_index(t, "ddr-weights") && fc1.spilled == 1);
        CHECK(placement_of(t, 2).region == region_index(t, "constant-weights"));
    }
    free_all(t, m, cfg);
}

/* --- a large model's picture --------------------------------------------------------------- */

/* Counts `part` in `text`. */
static size_t count_of(const char *text, const char *part) {
    size_t n = 0;
    const char *p = text;
    while (p != NULL && (p = strstr(p, part)) != NULL) {
        ++n;
        p += strlen(part);
    }
    return n;
}

/* 3000 activations, live over steps spread across [0, 3500), in one
 * region: the picture stays 1600 px wide and under 600 px high (one level),
 * with 2000 tensors drawn one by one and the others merged into cells. */
static void test_big_picture(void) {
    nnm_region_config *cfg = NULL;
    nnm_region_model *m = NULL;
    nnm_region_table *t = NULL;
    char name[32], *svg;
    size_t i;
    const char *head;
    REQUIRE_OK(nnm_region_config_from_toml(
        "[[region]]\nname = \"all\"\nplanner = \"sequential\"\nrule = { all_tensors = true }\n", &cfg));
    REQUIRE_OK(nnm_region_model_new(&m));
    for (i = 0; i < 3000; ++i) {
        snprintf(name, sizeof name, "t%u", (unsigned)i);
        add_activation(m, name, 64 + (i % 13) * 512, (int64_t)(i % 3000), (int64_t)(i % 3000) + 1 + (int64_t)(i % 500));
    }
    REQUIRE_OK(nnm_region_table_build(cfg, m, &t));
    svg = nnm_check_text(t, svg_call, 0);
    CHECK(svg != NULL);
    if (svg == NULL) {
        free_all(t, m, cfg);
        return;
    }
    head = strstr(svg, "height=\"");
    {
        static const char *const open = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1600\" ";
        CHECK(strncmp(svg, open, strlen(open)) == 0);
    }
    CHECK(head != NULL && atof(head + 8) > 100.0 && atof(head + 8) < 600.0);
    CHECK(count_of(svg, "<rect class=\"tensor\"") == 2000);
    CHECK(count_of(svg, "tensors too small to draw one by one") > 0);
    CHECK(strlen(svg) < (size_t)4 << 20);
    free(svg);
    free_all(t, m, cfg);
}

/* --- bad input ------------------------------------------------------------------------------- */

/* Model inputs: each refused with its status and message; the model keeps
 * its two tensors and the out id is not written. */
static void test_bad_model_input(void) {
    nnm_region_model *m = NULL;
    nnm_region_tensor_desc d;
    size_t id = 99;
    uint32_t kind = 99;
    REQUIRE_OK(nnm_region_model_new(&m));
    add_activation(m, "a", 64, 0, 2);
    add_view(m, "av", "a", 0, 32, -1, -1);

    d = tensor_desc("z", 7, 16); /* unknown kind */
    CHECK_FAILS(nnm_region_model_add(m, &d, &id), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("tensor kind");
    d = tensor_desc("v", NNM_TENSOR_KIND_VIEW, 16); /* a view of a missing origin */
    d.view_of = "missing";
    CHECK_FAILS(nnm_region_model_add(m, &d, &id), NNM_NOT_FOUND);
    CHECK_ERROR_HAS("missing");
    d.view_of = "a"; /* past its origin's end: 60 + 16 > 64 */
    d.view_offset = 60;
    CHECK_FAILS(nnm_region_model_add(m, &d, &id), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("past the end");
    d.view_of = "av"; /* a view of a view, past the 32 B of av */
    d.view_offset = 24;
    CHECK_FAILS(nnm_region_model_add(m, &d, &id), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("past the end");
    d.view_offset = UINT64_MAX; /* offset + size overflows */
    CHECK_FAILS(nnm_region_model_add(m, &d, &id), NNM_OVERFLOW);
    d = tensor_desc("v", NNM_TENSOR_KIND_VIEW, 16); /* a view without an origin */
    CHECK_FAILS(nnm_region_model_add(m, &d, &id), NNM_INVALID_ARGUMENT);
    d = tensor_desc("z", NNM_TENSOR_KIND_CONSTANT, 16); /* an origin on a non-view */
    d.view_of = "a";
    CHECK_FAILS(nnm_region_model_add(m, &d, &id), NNM_INVALID_ARGUMENT);
    d = tensor_desc("z", NNM_TENSOR_KIND_CONSTANT, 0); /* size 0 */
    CHECK_FAILS(nnm_region_model_add(m, &d, &id), NNM_INVALID_ARGUMENT);
    d = tensor_desc("z", NNM_TENSOR_KIND_CONSTANT, 16); /* alignment 3 */
    d.alignment = 3;
    CHECK_FAILS(nnm_region_model_add(m, &d, &id), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("3");
    d.alignment = 0; /* a weight with a lifetime */
    d.lifetime = NNM_LIFETIME_ALLOC_FREE;
    d.start = 0;
    d.end = 1;
    CHECK_FAILS(nnm_region_model_add(m, &d, &id), NNM_INVALID_ARGUMENT);
    d = tensor_desc("z", NNM_TENSOR_KIND_ACTIVATION, 16); /* unknown lifetime convention */
    d.lifetime = 3;
    CHECK_FAILS(nnm_region_model_add(m, &d, &id), NNM_INVALID_ARGUMENT);
    d.lifetime = NNM_LIFETIME_ALLOC_FREE; /* freed before allocated */
    d.start = 5;
    d.end = 2;
    CHECK_FAILS(nnm_region_model_add(m, &d, &id), NNM_INVALID_ARGUMENT);
    d = tensor_desc("z", NNM_TENSOR_KIND_ACTIVATION, 16); /* a malformed tag */
    d.tags = "op";
    CHECK_FAILS(nnm_region_model_add(m, &d, &id), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("op");
    d.tags = "k=1;k=2";
    CHECK_FAILS(nnm_region_model_add(m, &d, &id), NNM_INVALID_ARGUMENT);
    d = tensor_desc("a", NNM_TENSOR_KIND_ACTIVATION, 16); /* a name already used */
    CHECK_FAILS(nnm_region_model_add(m, &d, &id), NNM_ALREADY_EXISTS);
    d = tensor_desc("", NNM_TENSOR_KIND_ACTIVATION, 16);
    CHECK_FAILS(nnm_region_model_add(m, &d, &id), NNM_INVALID_ARGUMENT);
    d = tensor_desc(NULL, NNM_TENSOR_KIND_ACTIVATION, 16);
    CHECK_FAILS(nnm_region_model_add(m, &d, &id), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_model_add(m, NULL, &id), NNM_NULL_ARGUMENT);
    d = tensor_desc("z", NNM_TENSOR_KIND_ACTIVATION, 16);
    CHECK_FAILS(nnm_region_model_add(NULL, &d, &id), NNM_NULL_ARGUMENT);
    CHECK(id == 99 && model_count(m) == 2);
    CHECK_OK(nnm_region_model_add(m, &d, NULL)); /* out_id is optional */
    CHECK(model_count(m) == 3);

    CHECK_FAILS(nnm_region_model_new(NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_model_tensor_count(NULL, &id), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_model_tensor_count(m, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_tensor_kind_from_name("weight", &kind), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_tensor_kind_from_name(NULL, &kind), NNM_NULL_ARGUMENT);
    CHECK(kind == 99 && id == 99);
    nnm_region_model_free(m);
    nnm_region_model_free(NULL);
}

/* Rules and configurations: empty rules, duplicates, unknown levels and
 * algorithms, NULLs; the configuration keeps its five descriptions. */
static void test_bad_config_input(void) {
    nnm_region_config *cfg = NULL;
    nnm_region_rule *r = NULL, *any = NULL;
    const nnm_region_rule *ops[1];
    nnm_region_desc d;
    size_t n = 99;
    char buf[8];
    REQUIRE_OK(nnm_region_config_new_default(&cfg));
    REQUIRE_OK(nnm_region_rule_any(&any));
    ops[0] = any;

    /* Empty rules: AND / OR of nothing; a reversed size range. */
    CHECK_FAILS(nnm_region_rule_and(ops, 0, &r), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("an AND needs at least one rule");
    CHECK_FAILS(nnm_region_rule_or(ops, 0, &r), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("an OR needs at least one rule");
    {
        /* NOT of NOT of ... any: 100 levels are taken, the 101st refused
         * (matching recurses, and a stack overflow could not be caught). */
        nnm_region_rule *chain = NULL, *next = NULL;
        REQUIRE_OK(nnm_region_rule_any(&chain));
        for (int level = 2; level <= 100; ++level) {
            REQUIRE_OK(nnm_region_rule_not(chain, &next));
            nnm_region_rule_free(chain);
            chain = next;
        }
        next = NULL;
        CHECK_FAILS(nnm_region_rule_not(chain, &next), NNM_INVALID_ARGUMENT);
        CHECK_ERROR_HAS("rule nests deeper than 100 levels");
        CHECK(next == NULL);
        nnm_region_rule_free(chain);
    }
    CHECK_FAILS(nnm_region_rule_size(8, 4, &r), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_region_rule_kind(7, &r), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_region_rule_and(NULL, 1, &r), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_rule_not(NULL, &r), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_rule_name(NULL, &r), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_rule_any(NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_rule_name("", &r), NNM_INVALID_ARGUMENT); /* empty leaves */
    CHECK_FAILS(nnm_region_rule_name_glob("", &r), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_region_rule_tag("", "x", &r), NNM_INVALID_ARGUMENT);
    {
        const nnm_region_rule *with_null[2];
        with_null[0] = any;
        with_null[1] = NULL;
        CHECK_FAILS(nnm_region_rule_or(with_null, 2, &r), NNM_NULL_ARGUMENT);
        CHECK_ERROR_HAS("rules[1]");
    }
    CHECK(r == NULL);
    CHECK_FAILS(nnm_region_rule_to_string(any, buf, 2, &n), NNM_BUFFER_TOO_SMALL); /* "any" needs 4 */
    CHECK(n == 99);

    /* Descriptions: each refused, the list unchanged. */
    d = region_desc(0, "again"); /* id 0 is constant-weights' */
    CHECK_FAILS(nnm_region_config_append(cfg, &d, any), NNM_ALREADY_EXISTS);
    CHECK_ERROR_HAS("constant-weights");
    d = region_desc(9, "activations"); /* a name already used */
    CHECK_FAILS(nnm_region_config_prepend(cfg, &d, any), NNM_ALREADY_EXISTS);
    d = region_desc(9, "fast");
    d.level = "sram"; /* not defined */
    CHECK_FAILS(nnm_region_config_prepend(cfg, &d, any), NNM_NOT_FOUND);
    CHECK_ERROR_HAS("sram");
    d = region_desc(9, "fast");
    d.alignment = 48;
    CHECK_FAILS(nnm_region_config_append(cfg, &d, any), NNM_INVALID_ARGUMENT);
    d = region_desc(9, "fast");
    d.algorithm = 99;
    CHECK_FAILS(nnm_region_config_append(cfg, &d, any), NNM_INVALID_ARGUMENT);
    d = region_desc(9, "fast");
    d.capacity = 64;
    d.reserved_front = 128; /* more than its capacity */
    CHECK_FAILS(nnm_region_config_append(cfg, &d, any), NNM_INVALID_ARGUMENT);
    d = region_desc(9, "fast");
    d.spill_to = "fast";
    CHECK_FAILS(nnm_region_config_append(cfg, &d, any), NNM_INVALID_ARGUMENT);
    d = region_desc(9, "fast");
    d.flags = 16; /* no such flag */
    CHECK_FAILS(nnm_region_config_append(cfg, &d, any), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("flags");
    d = region_desc(9, "fast");
    d.base_address = 4096; /* without NNM_REGION_FIXED_BASE */
    CHECK_FAILS(nnm_region_config_append(cfg, &d, any), NNM_INVALID_ARGUMENT);
    d.flags = NNM_REGION_FIXED_BASE;
    d.base_address = 4097; /* not a multiple of 64 */
    CHECK_FAILS(nnm_region_config_append(cfg, &d, any), NNM_INVALID_ARGUMENT);
    d = region_desc(9, "fast");
    d.reserved_front = UINT64_MAX;
    d.reserved_back = 1;
    CHECK_FAILS(nnm_region_config_append(cfg, &d, any), NNM_OVERFLOW);
    d = region_desc(9, "");
    CHECK_FAILS(nnm_region_config_append(cfg, &d, any), NNM_INVALID_ARGUMENT);
    d = region_desc(9, NULL);
    CHECK_FAILS(nnm_region_config_append(cfg, &d, any), NNM_NULL_ARGUMENT);
    d = region_desc(9, "fast");
    CHECK_FAILS(nnm_region_config_append(cfg, &d, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_config_append(cfg, NULL, any), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_config_append(NULL, &d, any), NNM_NULL_ARGUMENT);
    CHECK(description_count(cfg) == 5);

    CHECK_OK(nnm_region_config_add_level(cfg, "sram", 0));
    CHECK_FAILS(nnm_region_config_add_level(cfg, "sram", 1), NNM_ALREADY_EXISTS);
    CHECK_FAILS(nnm_region_config_add_level(cfg, NULL, 1), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_config_get_attribute(cfg, "nope", "k", buf, sizeof buf, &n), NNM_NOT_FOUND);
    CHECK_FAILS(nnm_region_config_set_attribute(cfg, "activations", NULL, "v"), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_config_description_count(cfg, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_config_new(NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_config_new_default(NULL), NNM_NULL_ARGUMENT);
    CHECK(n == 99 && description_count(cfg) == 5);

    nnm_region_rule_free(any);
    nnm_region_rule_free(NULL);
    CHECK_FAILS(nnm_region_rule_to_string(any, buf, sizeof buf, &n), NNM_INVALID_ARGUMENT); /* freed */
    CHECK(n == 99);
    nnm_region_rule_free(any); /* a double free, reported */
    CHECK_ERROR_HAS("nnm_region_rule");
    nnm_region_config_free(cfg);
    nnm_region_config_free(NULL);
}

/* Building and reading tables: a tensor no rule matches, a spill region
 * that is not one, NULLs and indices out of range. */
static void test_bad_table_input(void) {
    nnm_region_config *cfg = NULL;
    nnm_region_model *m = small_model(), *huge = NULL;
    nnm_region_table *t = NULL, *none = NULL;
    nnm_region_desc d;
    nnm_region_info info;
    nnm_tensor_placement p;
    nnm_region_spill s;
    size_t n = 99, ids[2] = {99, 99};
    REQUIRE_OK(nnm_region_config_new(&cfg));
    d = region_desc(1, "weights");
    add_region(cfg, &d, kind_rule(NNM_TENSOR_KIND_CONSTANT), 0);

    /* Only constants have a region: state (the first other tensor) has none. */
    CHECK_FAILS(nnm_region_table_build(cfg, m, &none), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("state");
    CHECK_ERROR_HAS("matches no region");
    CHECK_ERROR_HAS("kind = constant"); /* the rules tried */
    d = region_desc(2, "rest");
    d.spill_to = "nowhere";
    {
        nnm_region_rule *any = NULL;
        CHECK_OK(nnm_region_rule_any(&any));
        add_region(cfg, &d, any, 0); /* accepted: spill targets may come later */
    }
    CHECK_FAILS(nnm_region_table_build(cfg, m, &none), NNM_NOT_FOUND);
    CHECK_ERROR_HAS("nowhere");
    CHECK_FAILS(nnm_region_table_build(NULL, m, &none), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_table_build(cfg, NULL, &none), NNM_NULL_ARGUMENT);
    CHECK(none == NULL);
    nnm_region_config_free(cfg);

    REQUIRE_OK(nnm_region_config_new_default(&cfg));
    CHECK_FAILS(nnm_region_table_build(cfg, m, NULL), NNM_NULL_ARGUMENT);
    REQUIRE_OK(nnm_region_table_build(cfg, m, &t));
    memset(&info, 0x5a, sizeof info);
    memset(&p, 0x5a, sizeof p);
    memset(&s, 0x5a, sizeof s);
    CHECK_FAILS(nnm_region_table_region(t, 5, &info), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("5 regions");
    CHECK_FAILS(nnm_region_table_placement(t, 9, &p), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("9");
    CHECK_FAILS(nnm_region_table_spill(t, 0, &s), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_region_table_region_tensors(t, 5, ids, 2, &n), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_region_table_region_tensors(t, 4, NULL, 2, &n), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_table_region_tensors(t, 4, ids, 2, &n), NNM_BUFFER_TOO_SMALL); /* 3 ids */
    CHECK_ERROR_HAS("3");
    CHECK_FAILS(nnm_region_table_find_region(t, "nope", &n), NNM_NOT_FOUND);
    CHECK_FAILS(nnm_region_table_find_region(t, NULL, &n), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_table_region(t, 0, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_table_region(NULL, 0, &info), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_table_placement(NULL, 0, &p), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_table_region_count(t, NULL), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_table_tensor_count(NULL, &n), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_table_report(t, 7, NULL, 0, &n), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_region_table_svg(t, NULL, 0, NULL), NNM_NULL_ARGUMENT);
    {
        /* Nothing was written. */
        nnm_region_info info0;
        nnm_tensor_placement p0;
        memset(&info0, 0x5a, sizeof info0);
        memset(&p0, 0x5a, sizeof p0);
        CHECK(memcmp(&info, &info0, sizeof info) == 0 && memcmp(&p, &p0, sizeof p) == 0);
        CHECK(n == 99 && ids[0] == 99 && ids[1] == 99);
    }
    nnm_region_table_free(NULL);

    /* A size that overflows when rounded up to the default activations'
       64 B: the error names the tensor, not only its size. */
    REQUIRE_OK(nnm_region_model_new(&huge));
    add_activation(huge, "small", 8, 0, 1);
    add_activation(huge, "huge", UINT64_MAX, 0, 2);
    CHECK_FAILS(nnm_region_table_build(cfg, huge, &none), NNM_OVERFLOW);
    CHECK_ERROR_HAS("tensor 'huge' (activation, function main)");
    CHECK_ERROR_HAS("rounded up to alignment 64");
    CHECK(none == NULL);
    nnm_region_model_free(huge);

    /* Freed handles are refused unread; double frees are reported. */
    free_all(t, m, cfg);
    n = 99;
    CHECK_FAILS(nnm_region_table_region_count(t, &n), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_region_model_tensor_count(m, &n), NNM_INVALID_ARGUMENT);
    CHECK_FAILS(nnm_region_config_description_count(cfg, &n), NNM_INVALID_ARGUMENT);
    CHECK(n == 99);
    nnm_region_table_free(t);
    CHECK_ERROR_HAS("nnm_region_table");
    nnm_region_model_free(m);
    CHECK_ERROR_HAS("nnm_region_model");
    nnm_region_config_free(cfg);
    CHECK_ERROR_HAS("nnm_region_config");
}

/* --- threads ---------------------------------------------------------------------------------- */

#define THREADS 4
#define ROUNDS 200

typedef struct reader {
    const nnm_region_table *table;
    const nnm_tensor_placement *placements; /* what the main thread read */
    const char *json;                       /* the report the main thread got */
    long failures;
} reader;

static void *read_table(void *arg) {
    reader *r = (reader *)arg;
    char *json = (char *)malloc(strlen(r->json) + 1);
    int round;
    size_t i, n, written;
    if (json == NULL) {
        r->failures = 1;
        return NULL;
    }
    for (round = 0; round < ROUNDS; ++round) {
        n = 0;
        if (nnm_region_table_tensor_count(r->table, &n) != NNM_OK || n != 9) ++r->failures;
        for (i = 0; i < 9; ++i) {
            nnm_tensor_placement p;
            memset(&p, 0, sizeof p);
            if (nnm_region_table_placement(r->table, i, &p) != NNM_OK) ++r->failures;
            if (p.region != r->placements[i].region || p.offset != r->placements[i].offset ||
                p.address != r->placements[i].address || p.size_bytes != r->placements[i].size_bytes) {
                ++r->failures;
            }
        }
        for (i = 0; i < 5; ++i) {
            nnm_region_info info;
            size_t at = SIZE_MAX;
            memset(&info, 0, sizeof info);
            if (nnm_region_table_region(r->table, i, &info) != NNM_OK) ++r->failures;
            if (!name_is(info.name, SMALL_REGIONS[i].name) || info.base_address != SMALL_REGIONS[i].base) ++r->failures;
            if (nnm_region_table_find_region(r->table, SMALL_REGIONS[i].name, &at) != NNM_OK || at != i) ++r->failures;
        }
        if (round % 20 == 0) {
            if (nnm_region_table_report(r->table, NNM_REPORT_FORMAT_JSON, json, strlen(r->json) + 1, &written) !=
                    NNM_OK ||
                strcmp(json, r->json) != 0) {
                ++r->failures;
            }
        }
        /* A failure on this thread leaves its own message, not another's. */
        if (nnm_region_table_find_region(r->table, "nope", &n) != NNM_NOT_FOUND ||
            !contains(nnm_last_error(), "nope")) {
            ++r->failures;
        }
    }
    free(json);
    return NULL;
}

static void test_threads(void) {
    nnm_region_config *cfg = NULL;
    nnm_region_model *m = small_model();
    nnm_region_table *t = NULL;
    nnm_tensor_placement placements[9];
    pthread_t threads[THREADS];
    reader readers[THREADS];
    char *json;
    size_t i;
    long failures = 0;
    REQUIRE_OK(nnm_region_config_new_default(&cfg));
    REQUIRE_OK(nnm_region_table_build(cfg, m, &t));
    nnm_region_config_free(cfg);
    nnm_region_model_free(m);
    for (i = 0; i < 9; ++i) placements[i] = placement_of(t, i);
    json = nnm_check_text(t, report_call, NNM_REPORT_FORMAT_JSON);
    if (json == NULL) {
        CHECK(json != NULL);
        nnm_region_table_free(t);
        return;
    }
    for (i = 0; i < THREADS; ++i) {
        readers[i].table = t;
        readers[i].placements = placements;
        readers[i].json = json;
        readers[i].failures = 0;
        CHECK(pthread_create(&threads[i], NULL, read_table, &readers[i]) == 0);
    }
    for (i = 0; i < THREADS; ++i) {
        CHECK(pthread_join(threads[i], NULL) == 0);
        failures += readers[i].failures;
    }
    CHECK(failures == 0);
    free(json);
    nnm_region_table_free(t);
}

/* --- what a built table says about alignment, spills, semantics, attributes -------------- */

static nnm_region_rule *any_rule(void) {
    nnm_region_rule *r = NULL;
    CHECK_OK(nnm_region_rule_any(&r));
    return r;
}

/* Two 100 B constants aligned to 4096 in one 64 B region: at 0 and 4096,
 * sizes at 64 B: 4096 + 128 = 4224 B, which is also the bound (two 4096 B
 * cells less the top one's 3968 B of padding), so optimal. */
static void test_tensor_alignment(void) {
    nnm_region_config *cfg = NULL;
    nnm_region_model *m = NULL;
    nnm_region_table *t = NULL;
    nnm_region_tensor_desc k = tensor_desc("k0", NNM_TENSOR_KIND_CONSTANT, 100);
    nnm_region_desc d = region_desc(1, "all");
    nnm_region_info r;
    REQUIRE_OK(nnm_region_config_new(&cfg));
    add_region(cfg, &d, any_rule(), 0);
    REQUIRE_OK(nnm_region_model_new(&m));
    k.alignment = 4096;
    add_desc(m, &k);
    k.name = "k1";
    add_desc(m, &k);
    REQUIRE_OK(nnm_region_table_build(cfg, m, &t));
    r = region_at(t, 0);
    CHECK(r.size_bytes == 4224 && r.peak_bytes == 4224 && r.lower_bound_bytes == 4224 && r.proven_optimal == 1);
    CHECK(placed_at(t, 0, "all", 0, 0));
    CHECK(placed_at(t, 1, "all", 4096, 4096));
    free_all(t, m, cfg);
}

/* sram (1 KiB, constants, spills to l2), l2 (4 KiB, no tensor of its own,
 * spills to ddr), ddr; constants of 512, 8192, 256, 3000 and 2000 B: sram
 * keeps 512 + 256, l2 takes 2000, ddr 8192 + 3000. Three tensors moved:
 * three records, each to the region it ended in. */
static void test_spill_chain(void) {
    static const uint64_t sizes[5] = {512, 8192, 256, 3000, 2000};
    static const char *names[5] = {"w0", "w1", "w2", "w3", "w4"};
    nnm_region_config *cfg = NULL;
    nnm_region_model *m = NULL;
    nnm_region_table *t = NULL;
    nnm_region_rule *any = any_rule(), *none = NULL;
    nnm_region_desc d;
    nnm_region_spill s;
    size_t n = 0, i, sram, l2, ddr, to_ddr = 0, to_l2 = 0;
    REQUIRE_OK(nnm_region_config_new(&cfg));
    CHECK_OK(nnm_region_config_add_level(cfg, "sram", 0));
    CHECK_OK(nnm_region_config_add_level(cfg, "l2", 1));
    CHECK_OK(nnm_region_config_add_level(cfg, "ddr", 2));
    d = region_desc(1, "sram");
    d.level = "sram";
    d.capacity = 1024;
    d.spill_to = "l2";
    add_region(cfg, &d, kind_rule(NNM_TENSOR_KIND_CONSTANT), 0);
    CHECK_OK(nnm_region_rule_not(any, &none));
    d = region_desc(2, "l2");
    d.level = "l2";
    d.capacity = 4096;
    d.spill_to = "ddr";
    add_region(cfg, &d, none, 0);
    d = region_desc(3, "ddr");
    d.level = "ddr";
    add_region(cfg, &d, any, 0);
    REQUIRE_OK(nnm_region_model_new(&m));
    for (i = 0; i < 5; i++) add_weight(m, names[i], NNM_TENSOR_KIND_CONSTANT, sizes[i], NULL, NULL);
    REQUIRE_OK(nnm_region_table_build(cfg, m, &t));
    sram = region_index(t, "sram");
    l2 = region_index(t, "l2");
    ddr = region_index(t, "ddr");
    CHECK(placement_of(t, 0).region == sram && placement_of(t, 2).region == sram);
    CHECK(placement_of(t, 4).region == l2);
    CHECK(placement_of(t, 1).region == ddr && placement_of(t, 3).region == ddr);
    CHECK_OK(nnm_region_table_spill_count(t, &n));
    CHECK(n == 3);
    for (i = 0; i < n; i++) {
        memset(&s, 0, sizeof s);
        CHECK_OK(nnm_region_table_spill(t, i, &s));
        CHECK(s.from == sram && s.to == placement_of(t, s.tensor).region);
        if (s.to == ddr) {
            size_t via[2] = {99, 99}, k = 0;
            to_ddr++;
            CHECK(contains(s.reason, "; then region 'l2' needs"));
            CHECK(s.via_count == 1);
            CHECK_OK(nnm_region_table_spill_via(t, i, NULL, 0, &k));
            CHECK(k == 1);
            CHECK_FAILS(nnm_region_table_spill_via(t, i, NULL, 1, &k), NNM_NULL_ARGUMENT);
            CHECK_FAILS(nnm_region_table_spill_via(t, i, via, 0, &k), NNM_BUFFER_TOO_SMALL);
            CHECK_ERROR_HAS("passed through 1 regions, regions has room for 0");
            CHECK_OK(nnm_region_table_spill_via(t, i, via, 2, &k));
            CHECK(k == 1 && via[0] == l2 && via[1] == 99);
        }
        if (s.to == l2) {
            size_t k = 9;
            to_l2++;
            CHECK(s.via_count == 0);
            CHECK_OK(nnm_region_table_spill_via(t, i, NULL, 0, &k));
            CHECK(k == 0);
        }
    }
    CHECK(to_ddr == 2 && to_l2 == 1);
    free_all(t, m, cfg);
}

/* One region taking a constant and an activation: refused, naming both,
 * unless NNM_REGION_MIX_CONSTANTS. */
static void test_mixed_semantics(void) {
    nnm_region_config *cfg = NULL;
    nnm_region_model *m = NULL;
    nnm_region_table *t = NULL;
    nnm_region_desc d = region_desc(1, "all");
    REQUIRE_OK(nnm_region_model_new(&m));
    add_weight(m, "w", NNM_TENSOR_KIND_CONSTANT, 64, NULL, NULL);
    add_activation(m, "x", 64, 0, 1);
    REQUIRE_OK(nnm_region_config_new(&cfg));
    add_region(cfg, &d, any_rule(), 0);
    CHECK_FAILS(nnm_region_table_build(cfg, m, &t), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("region 'all' would hold both constant 'w' (constant) and per-run 'x' (activation)");
    CHECK_ERROR_HAS("NNM_REGION_MIX_CONSTANTS");
    CHECK(t == NULL);
    nnm_region_config_free(cfg);
    REQUIRE_OK(nnm_region_config_new(&cfg));
    d.flags = NNM_REGION_MIX_CONSTANTS;
    add_region(cfg, &d, any_rule(), 0);
    REQUIRE_OK(nnm_region_table_build(cfg, m, &t));
    CHECK(region_at(t, 0).tensor_count == 2);
    free_all(t, m, cfg);
}

/* Attributes stay with the built table after the configuration is freed. */
static void test_table_attributes(void) {
    nnm_region_config *cfg = NULL;
    nnm_region_model *m = NULL;
    nnm_region_table *t = NULL;
    nnm_region_desc d = region_desc(1, "w");
    const char *key = NULL, *value = NULL;
    char *text;
    size_t w;
    REQUIRE_OK(nnm_region_config_new(&cfg));
    add_region(cfg, &d, kind_rule(NNM_TENSOR_KIND_CONSTANT), 0);
    CHECK_OK(nnm_region_config_set_attribute(cfg, "w", "dma", "burst-64"));
    CHECK_OK(nnm_region_config_set_attribute(cfg, "w", "bank", "1"));
    REQUIRE_OK(nnm_region_model_new(&m));
    add_weight(m, "k", NNM_TENSOR_KIND_CONSTANT, 8, NULL, NULL);
    REQUIRE_OK(nnm_region_table_build(cfg, m, &t));
    nnm_region_config_free(cfg);
    w = region_index(t, "w");
    CHECK(region_at(t, w).attribute_count == 2);
    CHECK_OK(nnm_region_table_region_attribute(t, w, 1, &key, &value));
    CHECK(name_is(key, "bank") && name_is(value, "1"));
    CHECK_OK(nnm_region_table_find_attribute(t, w, "dma", &value));
    CHECK(name_is(value, "burst-64"));
    CHECK_FAILS(nnm_region_table_find_attribute(t, w, "nope", &value), NNM_NOT_FOUND);
    CHECK_ERROR_HAS("region 'w' has no attribute 'nope' (attributes: dma, bank)");
    CHECK_FAILS(nnm_region_table_region_attribute(t, w, 2, &key, &value), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("attribute index 2 is out of range (region 'w' has 2 attributes)");
    CHECK_FAILS(nnm_region_table_region_attribute(t, w, 0, NULL, &value), NNM_NULL_ARGUMENT);
    CHECK_FAILS(nnm_region_table_find_attribute(t, 9, "dma", &value), NNM_INVALID_ARGUMENT);
    text = nnm_check_text(t, report_call, NNM_REPORT_FORMAT_TEXT);
    CHECK(contains(text, "\nattributes:\nw: dma = burst-64, bank = 1\n"));
    free(text);
    text = nnm_check_text(t, report_call, NNM_REPORT_FORMAT_JSON);
    CHECK(contains(text, "\"attributes\": {\"dma\": \"burst-64\", \"bank\": \"1\"}"));
    free(text);
    free_all(t, m, NULL);
}

/* 59 B reserved in 64 B at alignment 256: the region would take 256 B even
 * empty, refused as the header says. */
static void test_reserved_rounding(void) {
    nnm_region_config *cfg = NULL;
    nnm_region_rule *any = any_rule();
    nnm_region_desc d = region_desc(1, "a");
    REQUIRE_OK(nnm_region_config_new(&cfg));
    d.alignment = 256;
    d.capacity = 64;
    d.reserved_front = 59;
    CHECK_FAILS(nnm_region_config_append(cfg, &d, any), NNM_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("reserved bytes (59 B front, 0 B back; 256 B rounded to its alignment 256");
    d.capacity = 256;
    CHECK_OK(nnm_region_config_append(cfg, &d, any));
    nnm_region_rule_free(any);
    nnm_region_config_free(cfg);
}

int main(void) {
    test_defaults();
    test_override();
    test_rules();
    test_per_tensor();
    test_views();
    test_two_functions();
    test_spill();
    test_fixed_bases();
    test_toml();
    test_big_picture();
    test_bad_model_input();
    test_bad_config_input();
    test_bad_table_input();
    test_threads();
    test_tensor_alignment();
    test_spill_chain();
    test_mixed_semantics();
    test_table_attributes();
    test_reserved_rounding();
    return nnm_check_report();
}
