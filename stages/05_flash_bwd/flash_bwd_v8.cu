// Stage 05 v8: v2's launch (mma_launch.cuh) with v8_fa2_warps.cuh's K/V kernel and its shared
// memory on the atomic path; the deterministic path is v2's. (Its descriptor and C entry are in
// flash_bwd.cu, beside the other versions'.)
#include "launch.h"
#include "mma_launch.cuh"
#include "v8_fa2_warps.cuh"

namespace fs::bwd {

Status run_v8(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return run_mma<v8::Config>(pr, stream, [](auto type, auto d, auto varlen) {
    return v8::flash_bwd_v8_dkv_kernel<typename decltype(type)::type, decltype(d)::value, decltype(varlen)::value>;
  });
}

}  // namespace fs::bwd
