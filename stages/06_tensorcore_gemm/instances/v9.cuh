// Stage 06 v9: the launch of its instances of one copy width (v9.cu declares it and picks the width),
// for the files that compile them, instances/v9_<W>b.cu: v9's tiles, fp16 or bf16, the four transposes.
#pragma once

#include "stages/06_tensorcore_gemm/launch.cuh"
#include "stages/06_tensorcore_gemm/v9_mma_sync.cuh"

namespace fs::gemm_v9 {

template <int kCopyBytes>
struct Launch {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    return gemm::launch_any_half(
        [](auto e) { return gemm_v9_kernel<V9Tiles, typename decltype(e)::type, kTA, kTB, kCopyBytes>; },
        Config<kTA, kTB>::kSmemBytes, V9Tiles::kBM, V9Tiles::kBN, V9Tiles::kThreads, p, stream);
  }
};

template <int kCopyBytes>
Status launch(const GemmParams& p, cudaStream_t stream) {
  return gemm::launch_transposes<Launch<kCopyBytes>>(p, stream);
}

}  // namespace fs::gemm_v9
