/* nnmem.h alone, as strict C11 with warnings as errors (flags in
 * CMakeLists.txt): the header is self-contained, warning-free and guarded
 * against double inclusion. Linking proves the declarations match the library. */
#include "nnmem.h"
#include "nnmem.h"

int main(void) {
    return nnm_version() == NULL;
}
