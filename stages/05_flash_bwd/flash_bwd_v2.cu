// Stage 05 v2: the launch of v2_mma.cuh's kernels after the delta preprocess (mma_launch.cuh): dQ by
// atomics into an fp32 workspace, rounded once, or, when the caller asks for determinism, by a second
// pass. (Its descriptor and C entry are in flash_bwd.cu, beside the other versions'.)
#include "launch.h"
#include "mma_launch.cuh"
#include "v2_mma.cuh"

namespace fs::bwd {

Status run_v2(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return run_mma(pr, stream, [](auto type, auto d, auto varlen) {
    return v2::flash_bwd_v2_dkv_kernel<typename decltype(type)::type, decltype(d)::value, decltype(varlen)::value, true>;
  });
}

}  // namespace fs::bwd
