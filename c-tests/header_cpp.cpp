// nnmem.h alone, as strict C++ (built as C++11 and C++17, warnings as errors):
// the header is self-contained and guarded. Linking proves the extern "C"
// guards are there: without them these names would be C++-mangled and the link
// would fail.
#include "nnmem.h"
#include "nnmem.h"

int main() {
    nnm_planner *planner = nullptr;
    if (nnm_planner_new(&planner) != NNM_OK) return 1;
    nnm_planner_free(planner);
    return nnm_version() == nullptr;
}
