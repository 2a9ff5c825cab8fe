// OpenVINO's ov::MemorySolver with nnmem underneath, as a plugin calls it:
// one box per buffer (the steps it is live, inclusive; -1: to the end),
// solve() for the blob size, get_offset(id) for each buffer's place in it.
// The plugin's code is OpenVINO's; only the include differs.
//
// Build, with nnmem installed under /opt/nnmem (for another prefix, replace
// /opt/nnmem; lib64 for lib where CMake installs there, as on Fedora):
//   c++ -std=c++11 compat_openvino.cpp -I/opt/nnmem/include -L/opt/nnmem/lib -lnnmem -Wl,-rpath,/opt/nnmem/lib
// or with pkg-config as for examples/pool.c; with CMake, link nnmem::nnmem.
#include <nnmem/compat/openvino/memory_solver.hpp>  // was "openvino/runtime/memory_solver.hpp"

#include <stdint.h>
#include <stdio.h>

#include <vector>

int main() {
    // Four buffers of a small graph (OpenVINO's own test case
    // DISABLED_Unefficiency: OpenVINO's greedy needs 6 units, 5 suffice).
    const std::vector<ov::MemorySolver::Box> boxes = {
        {6, 7, 3, 100},  // start, finish, size, id
        {2, 5, 2, 101},
        {5, 8, 2, 102},
        {2, 3, 2, 103},
    };
    try {
        ov::MemorySolver solver(boxes);
        const int64_t blob = solver.solve();
        printf("blob: %lld units (largest live at one step: %lld, boxes live at once: %lld)\n",
               static_cast<long long>(blob), static_cast<long long>(solver.max_depth()),
               static_cast<long long>(solver.max_top_depth()));
        for (const ov::MemorySolver::Box& box : boxes)
            printf("  box %lld (steps %d..%d, %lld units) at offset %lld\n", static_cast<long long>(box.id),
                   box.start, box.finish, static_cast<long long>(box.size),
                   static_cast<long long>(solver.get_offset(static_cast<int>(box.id))));
        solver.get_offset(7);  // no box has id 7: OpenVINO throws, and so does this
    } catch (const ov::Exception& e) {
        printf("ov::Exception: %s\n", e.what());
    }
    return 0;
}
