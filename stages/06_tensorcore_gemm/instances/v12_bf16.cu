// Stage 06 v12's bf16 instances: the four transposes, compiled here beside the other element type's.
#include <cuda_bf16.h>

#include "stages/06_tensorcore_gemm/instances/v12.cuh"

namespace fs::gemm_v12 {

template Status launch<__nv_bfloat16>(const GemmParams&, cudaStream_t);

}  // namespace fs::gemm_v12
