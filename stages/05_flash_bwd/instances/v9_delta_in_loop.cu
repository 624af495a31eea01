// Stage 05 v9's delta ablation (v9.cu, kFlashBwdV9DeltaInLoop): the launch of v9's K/V kernel recomputing
// delta_i in every key block, on the atomic path, compiled here beside v9's own instances. The
// preprocess runs only to fill a delta the caller asks for (kernel_delta).
#include "stages/05_flash_bwd/launch.cuh"
#include "stages/05_flash_bwd/v9_tiles_per_head_dim.cuh"

namespace fs::bwd::v9 {

Status run_delta_in_loop(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return run_mma<ConfigDeltaInLoop>(
      pr, stream,
      [](auto type, auto d, auto varlen) {
        return flash_bwd_v9_dkv_kernel<typename decltype(type)::type, decltype(d)::value, decltype(varlen)::value, true>;
      },
      /*kernel_delta=*/true);
}

}  // namespace fs::bwd::v9
