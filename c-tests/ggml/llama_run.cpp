// Runs a llama.cpp model on fixed token ids: one prompt batch, then greedy
// generation of one token at a time. Prints the tokens generated and an
// FNV-1a digest of each step's logits (bitwise), for comparing two builds
// of llama.cpp (ggml's allocator and nnmem's; scripts/llama-cpp-check.sh).
//
//   llama_run MODEL.gguf N_PROMPT N_GEN FLASH(0|1) [N_CTX]
#include "llama.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static uint64_t digest(const float * v, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    const unsigned char * b = reinterpret_cast<const unsigned char *>(v);
    for (size_t i = 0; i < n * sizeof(float); i++) {
        h = (h ^ b[i]) * 1099511628211ULL;
    }
    return h;
}

int main(int argc, char ** argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s MODEL.gguf N_PROMPT N_GEN FLASH(0|1) [N_CTX]\n", argv[0]);
        return 2;
    }
    const int n_prompt = atoi(argv[2]), n_gen = atoi(argv[3]), flash = atoi(argv[4]);
    const int n_ctx = argc > 5 ? atoi(argv[5]) : 2048;
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (model == nullptr) {
        fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n_ctx;
    cp.n_batch = (uint32_t)n_prompt;
    cp.n_ubatch = (uint32_t)n_prompt;
    cp.n_threads = 2;
    cp.n_threads_batch = 2;
    cp.flash_attn_type = flash ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (ctx == nullptr) {
        fprintf(stderr, "cannot create a context\n");
        return 1;
    }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    std::vector<llama_token> tokens((size_t)n_prompt);
    for (int i = 0; i < n_prompt; i++) {
        tokens[(size_t)i] = (llama_token)((i * 7919 + 13) % n_vocab);
    }
    llama_batch batch = llama_batch_get_one(tokens.data(), n_prompt);
    for (int step = 0; step <= n_gen; step++) {
        if (llama_decode(ctx, batch) != 0) {
            fprintf(stderr, "llama_decode failed at step %d\n", step);
            return 1;
        }
        const float * logits = llama_get_logits_ith(ctx, -1);
        llama_token best = 0;
        for (int t = 1; t < n_vocab; t++) {
            if (logits[t] > logits[best]) {
                best = t;
            }
        }
        printf("step %2d: token %5d  logits %016llx\n", step, best,
               (unsigned long long)digest(logits, (size_t)n_vocab));
        tokens[0] = best;
        batch = llama_batch_get_one(tokens.data(), 1);
    }
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
