// Stage 06 v9's instances with 16-byte copies (cp.async.cg): fp16 and bf16, the four transposes, compiled
// here beside the other widths'.
#include "stages/06_tensorcore_gemm/instances/v9.cuh"

namespace fs::gemm_v9 {

template Status launch<16>(const GemmParams&, cudaStream_t);

}  // namespace fs::gemm_v9
