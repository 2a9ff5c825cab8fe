/*
 * A Glow-style backend describing its memories to nnmem: a small SRAM next
 * to the compute and DDR behind it. It starts from Glow's five standard
 * regions (constants | placeholders | activations, here all in DDR), puts
 * the fully connected weights and the activations in SRAM with a capacity
 * each (what does not fit spills back to DDR), adds a small int8 MLP, and
 * prints where every tensor went.
 *
 * Build, with nnmem installed under /opt/nnmem (other prefixes: see
 * examples/pool.c), with pkg-config:
 *   export PKG_CONFIG_PATH=/opt/nnmem/lib/pkgconfig
 *   cc -std=c11 region.c $(pkg-config --cflags --libs nnmem) -Wl,-rpath,/opt/nnmem/lib
 * or without it:
 *   cc -std=c11 region.c -I/opt/nnmem/include -L/opt/nnmem/lib -lnnmem -Wl,-rpath,/opt/nnmem/lib
 * With CMake, link nnmem::static (README, "Linking from CMake").
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "nnmem.h"

/* On failure: say what failed and why, and go free everything. */
#define TRY(call)                                                               \
    do {                                                                        \
        if ((call) != NNM_OK) {                                                 \
            fprintf(stderr, "%s failed: %s\n", #call, nnm_last_error());        \
            goto done;                                                          \
        }                                                                       \
    } while (0)

/* The model: x -> fc1 (256 -> 32) -> relu -> fc2 (32 -> 10) -> y, in int8
 * with int32 accumulators. Activations live from `alloc` up to, not
 * including, `free_at` (positions in the instruction sequence); weights and
 * placeholders live for the whole run. Tensor ids are this order. */
typedef struct tensor {
    const char *name;
    uint32_t kind;
    uint64_t size;
    int64_t alloc, free_at;
} tensor;

#define TENSORS 9
static const tensor MODEL[TENSORS] = {
    {"x", NNM_TENSOR_KIND_INPUT, 256, 0, 0},
    {"fc1.weight", NNM_TENSOR_KIND_CONSTANT, 256 * 32, 0, 0},
    {"fc1.bias", NNM_TENSOR_KIND_CONSTANT, 32 * 4, 0, 0},
    {"fc2.weight", NNM_TENSOR_KIND_CONSTANT, 32 * 10, 0, 0},
    {"fc2.bias", NNM_TENSOR_KIND_CONSTANT, 10 * 4, 0, 0},
    {"fc1.acc", NNM_TENSOR_KIND_ACTIVATION, 32 * 4, 0, 2},
    {"relu", NNM_TENSOR_KIND_ACTIVATION, 32, 1, 3},
    {"fc2.acc", NNM_TENSOR_KIND_ACTIVATION, 10 * 4, 2, 4},
    {"y", NNM_TENSOR_KIND_OUTPUT, 10, 0, 0},
};

int main(void) {
    nnm_region_config *config = NULL;
    nnm_region_model *model = NULL;
    nnm_region_table *table = NULL;
    nnm_region_rule *constant = NULL, *fc_name = NULL, *fc_weights = NULL, *activations = NULL;
    const nnm_region_rule *both[2];
    nnm_region_desc sram_fc, sram_act;
    size_t tensors = 0, spills = 0, i;
    int status = 1;
    memset(&sram_fc, 0, sizeof sram_fc); /* zero: the defaults (alignment 64, reuse, ...) */
    memset(&sram_act, 0, sizeof sram_act);

    /* The memories: SRAM (rank 0, closest to the compute) and the default
     * level "memory", here the DDR (rank 1), where Glow's five regions are. */
    TRY(nnm_region_config_new_default(&config));
    TRY(nnm_region_config_add_level(config, "sram", 0));
    TRY(nnm_region_config_add_level(config, "memory", 1));

    /* Fully connected weights (constants named fc*.weight) in 8 KiB of
     * SRAM, stacked, spilling to the DDR constants. Prepended: the first
     * matching rule wins, so this overrides constant-weights for them. */
    TRY(nnm_region_rule_kind(NNM_TENSOR_KIND_CONSTANT, &constant));
    TRY(nnm_region_rule_name_glob("fc*.weight", &fc_name));
    both[0] = constant;
    both[1] = fc_name;
    TRY(nnm_region_rule_and(both, 2, &fc_weights));
    sram_fc.id = 10;
    sram_fc.name = "sram-fc-weights";
    sram_fc.algorithm = NNM_ALGORITHM_SEQUENTIAL;
    sram_fc.flags = NNM_REGION_NO_REUSE;
    sram_fc.level = "sram";
    sram_fc.capacity = 8 * 1024;
    sram_fc.spill_to = "constant-weights";
    TRY(nnm_region_config_prepend(config, &sram_fc, fc_weights));
    /* Activations in 4 KiB of SRAM, sharing bytes, spilling to DDR's. */
    TRY(nnm_region_rule_kind(NNM_TENSOR_KIND_ACTIVATION, &activations));
    sram_act.id = 11;
    sram_act.name = "sram-activations";
    sram_act.level = "sram";
    sram_act.capacity = 4 * 1024;
    sram_act.spill_to = "activations";
    TRY(nnm_region_config_prepend(config, &sram_act, activations));

    TRY(nnm_region_model_new(&model));
    for (i = 0; i < TENSORS; ++i) {
        nnm_region_tensor_desc t;
        memset(&t, 0, sizeof t); /* no tags, function "main", not a view */
        t.name = MODEL[i].name;
        t.kind = MODEL[i].kind;
        t.size = MODEL[i].size;
        t.dtype = "i8";
        if (t.kind == NNM_TENSOR_KIND_ACTIVATION) {
            t.lifetime = NNM_LIFETIME_ALLOC_FREE;
            t.start = MODEL[i].alloc;
            t.end = MODEL[i].free_at;
        }
        TRY(nnm_region_model_add(model, &t, NULL));
    }

    TRY(nnm_region_table_build(config, model, &table));
    TRY(nnm_region_table_tensor_count(table, &tensors));
    for (i = 0; i < tensors && i < TENSORS; ++i) {
        nnm_tensor_placement p;
        nnm_region_info region;
        TRY(nnm_region_table_placement(table, i, &p));
        TRY(nnm_region_table_region(table, p.region, &region));
        printf("%-10s %5" PRIu64 " B  %-22s (%-6s) offset %5" PRIu64 "  address 0x%08" PRIx64 "%s\n", MODEL[i].name,
               p.size_bytes, region.name, region.level, p.offset, p.address, p.spilled ? "  spilled" : "");
    }
    TRY(nnm_region_table_spill_count(table, &spills));
    for (i = 0; i < spills; ++i) {
        nnm_region_spill s;
        TRY(nnm_region_table_spill(table, i, &s));
        printf("%s moved: %s\n", s.tensor < TENSORS ? MODEL[s.tensor].name : "?", s.reason);
    }
    status = 0;

done:
    /* Every free accepts NULL; the configuration copied the rules, and the
     * table needs neither the model nor the configuration. */
    nnm_region_table_free(table);
    nnm_region_model_free(model);
    nnm_region_config_free(config);
    nnm_region_rule_free(constant);
    nnm_region_rule_free(fc_name);
    nnm_region_rule_free(fc_weights);
    nnm_region_rule_free(activations);
    return status;
}
