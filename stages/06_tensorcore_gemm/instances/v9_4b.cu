// Stage 06 v9's instances with 4-byte copies (cp.async.ca, four times the copy instructions): fp16 and
// bf16, the four transposes, compiled here beside the other widths'.
#include "stages/06_tensorcore_gemm/instances/v9.cuh"

namespace fs::gemm_v9 {

template Status launch<4>(const GemmParams&, cudaStream_t);

}  // namespace fs::gemm_v9
