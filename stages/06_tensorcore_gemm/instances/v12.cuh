// Stage 06 v12: the launch of its instances for one element type (v12.cu declares it), for the files
// that compile them, instances/v12_fp16.cu and v12_bf16.cu: the four transposes, 16-byte rows.
#pragma once

#include "stages/06_tensorcore_gemm/launch.cuh"
#include "stages/06_tensorcore_gemm/v12_whole_tiles.cuh"

namespace fs::gemm_v12 {

template <class T>
struct Launch {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    return gemm::launch_half_kernel<T>(gemm_v12_kernel<T, kTA, kTB>, Config<kTA, kTB>::kSmemBytes, kBM, kBN, kThreads, p,
                                       stream);
  }
};

template <class T>
Status launch(const GemmParams& p, cudaStream_t stream) {
  return gemm::launch_transposes<Launch<T>>(p, stream);
}

}  // namespace fs::gemm_v12
