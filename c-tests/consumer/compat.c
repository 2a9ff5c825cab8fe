/* Legacy (awnn-style) code built against an *installed* nnmem: its unchanged
 * `#include "utils/list.h"` resolves to nnmem/compat/utils/list.h through
 * the nnmem::compat target (find_package) or
 * `-I$(pkg-config --variable=compatincludedir nnmem)`; its bare `typeof`
 * compiles in strict C11. */
#include <stdio.h>

#include "utils/list.h"
#include <nnmem.h>

int main(void) {
    nnm_net *net = NULL;
    uint32_t dims[2] = {4, 3};
    struct list_head *node;
    uint64_t bytes = 0;
    if (nnm_net_new(8, &net) != NNM_OK || nnm_net_attach_param(net, "fc.W", NNM_DTYPE_F32, dims, 2, NULL) != NNM_OK) {
        fprintf(stderr, "net: %s\n", nnm_last_error());
        nnm_net_free(net);
        return 1;
    }
    list_for_each(node, &net->params) {
        nnm_param *p = list_entry(node, typeof(*p), node);
        bytes += p->data.bytes;
    }
    printf("compat: utils/list.h from nnmem, %llu B of params\n", (unsigned long long)bytes);
    nnm_net_free(net);
    return bytes == 48 ? 0 : 1;
}
