// Stage 06 v11's candidate of 128×128 tiles, 64 deep, 3 stages: its eight instances (fp16 and bf16, four
// transposes), compiled here beside the other candidates'.
#include "stages/06_tensorcore_gemm/instances/v11.cuh"

namespace fs::gemm_v11 {

template Status launch_candidate<Tiles<128, 128, 64, 3>>(const GemmParams&, cudaStream_t);

}  // namespace fs::gemm_v11
