// Stage 05 v10: v2's launch (mma_launch.cuh) with v10_addresses_once.cuh's K/V kernel and v9's shared
// memory on the atomic path; the deterministic path is v2's. (Its descriptor and C entry are in
// flash_bwd.cu, beside the other versions'.)
#include "launch.h"
#include "mma_launch.cuh"
#include "v10_addresses_once.cuh"

namespace fs::bwd {

Status run_v10(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return run_mma<v10::Config>(pr, stream, [](auto type, auto d, auto varlen) {
    return v10::flash_bwd_v10_dkv_kernel<typename decltype(type)::type, decltype(d)::value, decltype(varlen)::value>;
  });
}

}  // namespace fs::bwd
