// Stage 05 v3: v2's launch (mma_launch.cuh) with v3_wide_red.cuh's K/V kernel on the atomic path; the
// deterministic path is v2's. (Its descriptor and C entry are in flash_bwd.cu, beside the other
// versions'.)
#include "launch.h"
#include "mma_launch.cuh"
#include "v3_wide_red.cuh"

namespace fs::bwd {

Status run_v3(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return run_mma(pr, stream, [](auto type, auto d, auto varlen) {
    return v3::flash_bwd_v3_dkv_kernel<typename decltype(type)::type, decltype(d)::value, decltype(varlen)::value>;
  });
}

}  // namespace fs::bwd
