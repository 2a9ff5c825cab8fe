/* Forced ahead of ggml's own ggml-alloc.c (-include) so that it builds
 * beside nnmem's, its public functions renamed ref_*: the tests and the
 * benchmark compare the two in one process. */
#define ggml_op_can_inplace ref_ggml_op_can_inplace
#define ggml_tallocr_new ref_ggml_tallocr_new
#define ggml_tallocr_alloc ref_ggml_tallocr_alloc
#define ggml_gallocr_new ref_ggml_gallocr_new
#define ggml_gallocr_new_n ref_ggml_gallocr_new_n
#define ggml_gallocr_free ref_ggml_gallocr_free
#define ggml_gallocr_reserve ref_ggml_gallocr_reserve
#define ggml_gallocr_reserve_n ref_ggml_gallocr_reserve_n
#define ggml_gallocr_reserve_n_size ref_ggml_gallocr_reserve_n_size
#define ggml_gallocr_alloc_graph ref_ggml_gallocr_alloc_graph
#define ggml_gallocr_get_buffer_size ref_ggml_gallocr_get_buffer_size
#define ggml_backend_alloc_ctx_tensors_from_buft_size ref_ggml_backend_alloc_ctx_tensors_from_buft_size
#define ggml_backend_alloc_ctx_tensors_from_buft ref_ggml_backend_alloc_ctx_tensors_from_buft
#define ggml_backend_alloc_ctx_tensors ref_ggml_backend_alloc_ctx_tensors
