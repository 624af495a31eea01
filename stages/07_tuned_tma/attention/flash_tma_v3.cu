// Stage 07 attention v3: the launch of v3_intra_warpgroup_overlap.cuh's kernel, in a translation unit of its
// own so that the versions compile in parallel. (Its descriptor and C entry are in versions.cu.)
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v3_intra_warpgroup_overlap.cuh"

fs::Status fs::flash_tma::run_v3(const AttentionProblem& pr, cudaStream_t stream) {
  return launch_ws_version(pr, stream, [](auto t, auto c) {
    return v3::flash_tma_v3_kernel<typename decltype(t)::type, typename decltype(c)::type>;
  });
}
