// Stage 07 attention v2: the launch of v2_warp_specialization.cuh's kernel, in a translation unit of its
// own so that the versions compile in parallel. (Its descriptor and C entry are in versions.cu.)
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v2_warp_specialization.cuh"

fs::Status fs::flash_tma::run_v2(const AttentionProblem& pr, cudaStream_t stream) {
  return launch_ws_version(pr, stream, [](auto t, auto c) {
    return v2::flash_tma_v2_kernel<typename decltype(t)::type, typename decltype(c)::type>;
  });
}
