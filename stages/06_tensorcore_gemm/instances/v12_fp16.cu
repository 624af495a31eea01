// Stage 06 v12's fp16 instances: the four transposes, compiled here beside the other element type's.
#include <cuda_fp16.h>

#include "stages/06_tensorcore_gemm/instances/v12.cuh"

namespace fs::gemm_v12 {

template Status launch<__half>(const GemmParams&, cudaStream_t);

}  // namespace fs::gemm_v12
