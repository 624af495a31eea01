// Stage 06 v11's candidate of 128×128 tiles, 32 deep, 4 stages: its eight instances (fp16 and bf16, four
// transposes), compiled here beside the other candidates'.
#include "stages/06_tensorcore_gemm/instances/v11.cuh"

namespace fs::gemm_v11 {

template Status launch_candidate<Tiles<128, 128, 32, 4>>(const GemmParams&, cudaStream_t);

}  // namespace fs::gemm_v11
