// Stage 06 v11: the launch of one candidate's instances (v11.cu declares it), for the files that compile
// them, instances/v11_<tiles>.cu: v9's kernel at the candidate's tiles with 16-byte copies, fp16 or bf16,
// the four transposes.
#pragma once

#include "stages/06_tensorcore_gemm/launch.cuh"
#include "stages/06_tensorcore_gemm/v11_autotune.cuh"

namespace fs::gemm_v11 {

template <class Tl>
struct Run16 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    return gemm::launch_any_half(
        [](auto e) { return gemm_v9::gemm_v9_kernel<Tl, typename decltype(e)::type, kTA, kTB, 16>; },
        Tl::template Smem<kTA, kTB>::kSmemBytes, Tl::kBM, Tl::kBN, Tl::kThreads, p, stream);
  }
};

template <class Tl>
Status launch_candidate(const GemmParams& p, cudaStream_t stream) {
  return gemm::launch_transposes<Run16<Tl>>(p, stream);
}

}  // namespace fs::gemm_v11
