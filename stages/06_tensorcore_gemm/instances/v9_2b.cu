// Stage 06 v9's instances with element copies through registers (odd leading dimensions): fp16 and bf16,
// the four transposes, compiled here beside the other widths'.
#include "stages/06_tensorcore_gemm/instances/v9.cuh"

namespace fs::gemm_v9 {

template Status launch<2>(const GemmParams&, cudaStream_t);

}  // namespace fs::gemm_v9
