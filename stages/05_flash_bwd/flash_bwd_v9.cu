// Stage 05 v9: v2's launch (mma_launch.cuh) with v9_tiles_per_head_dim.cuh's K/V kernel and its shared
// memory on the atomic path; the deterministic path is v2's. (Its descriptor and C entry are in
// flash_bwd.cu, beside the other versions'.)
#include "launch.h"
#include "mma_launch.cuh"
#include "v9_tiles_per_head_dim.cuh"

namespace fs::bwd {

Status run_v9(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return run_mma<v9::Config>(pr, stream, [](auto type, auto d, auto varlen) {
    return v9::flash_bwd_v9_dkv_kernel<typename decltype(type)::type, decltype(d)::value, decltype(varlen)::value>;
  });
}

Status run_v9_delta_in_loop(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return run_mma<v9::ConfigDeltaInLoop>(
      pr, stream,
      [](auto type, auto d, auto varlen) {
        return v9::flash_bwd_v9_dkv_kernel<typename decltype(type)::type, decltype(d)::value, decltype(varlen)::value, true>;
      },
      /*kernel_delta=*/true);
}

}  // namespace fs::bwd
