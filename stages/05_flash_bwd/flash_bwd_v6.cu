// Stage 05 v6: v2's launch (mma_launch.cuh) with v6_dq_ldmatrix.cuh's K/V kernel and its shared
// memory on the atomic path; the deterministic path is v2's. (Its descriptor and C entry are in
// flash_bwd.cu, beside the other versions'.)
#include "launch.h"
#include "mma_launch.cuh"
#include "v6_dq_ldmatrix.cuh"

namespace fs::bwd {

Status run_v6(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return run_mma<v6::Config>(pr, stream, [](auto type, auto d, auto varlen) {
    return v6::flash_bwd_v6_dkv_kernel<typename decltype(type)::type, decltype(d)::value, decltype(varlen)::value>;
  });
}

}  // namespace fs::bwd
