// Glow's MemoryAllocator, planned by nnmem: a Glow backend's code, with only
// the include line changed.
//
// Build, with nnmem installed under /opt/nnmem (for another prefix, replace
// /opt/nnmem; lib64 for lib where CMake installs there, as on Fedora):
//   c++ -std=c++11 compat_glow.cpp -I/opt/nnmem/include -L/opt/nnmem/lib -lnnmem -Wl,-rpath,/opt/nnmem/lib
// or with pkg-config as for examples/pool.c; with CMake, link nnmem::nnmem.
#include <nnmem/compat/glow/MemoryAllocator.h>

#include <cstdio>
#include <list>

int main() {
    // Activations of a small net, in program order: each ALLOC, later its
    // FREE (the handles would be Glow's Value pointers).
    int input = 0, conv = 0, relu = 0, pool = 0, fc = 0;
    std::list<glow::Allocation> allocs;
    allocs.emplace_back(&input, true, 150528);
    allocs.emplace_back(&conv, true, 802816);
    allocs.emplace_back(&input, false, 0);
    allocs.emplace_back(&relu, true, 802816);
    allocs.emplace_back(&conv, false, 0);
    allocs.emplace_back(&pool, true, 200704);
    allocs.emplace_back(&relu, false, 0);
    allocs.emplace_back(&fc, true, 4000);
    allocs.emplace_back(&pool, false, 0);
    allocs.emplace_back(&fc, false, 0);

    glow::MemoryAllocator activations("activations", 0);  // unlimited, 64-byte alignment
    const uint64_t used = activations.allocateAll(allocs);
    if (used == glow::MemoryAllocator::npos) {
        std::fprintf(stderr, "allocateAll failed\n");
        return 1;
    }
    std::printf("activations: %llu bytes (efficiency %.2f, plan: %s)\n", static_cast<unsigned long long>(used),
                static_cast<double>(activations.getAllocationEfficiency()), activations.getLastPlanner().c_str());
    const int *const values[] = {&input, &conv, &relu, &pool, &fc};
    const char *const names[] = {"input", "conv", "relu", "pool", "fc"};
    for (int i = 0; i < 5; ++i) {
        std::printf("  %-5s at %8llu, %6llu bytes\n", names[i],
                    static_cast<unsigned long long>(activations.getAddress(values[i])),
                    static_cast<unsigned long long>(activations.getSize(values[i])));
    }

    // The incremental form: first fit, npos when the memory is full.
    glow::MemoryAllocator weights("weights", 1024);
    const uint64_t a = weights.allocate(500, &conv);
    const uint64_t b = weights.allocate(500, &fc);
    const uint64_t c = weights.allocate(100, &pool);
    std::printf("weights: %llu, %llu, %s\n", static_cast<unsigned long long>(a), static_cast<unsigned long long>(b),
                c == glow::MemoryAllocator::npos ? "full" : "placed");
    weights.deallocate(&conv);
    std::printf("after freeing conv: %llu\n", static_cast<unsigned long long>(weights.allocate(100, &pool)));
    return used == activations.getMaxMemoryUsage() && c == glow::MemoryAllocator::npos ? 0 : 1;
}
