// Stage 07 attention v4: the launch of v4_pingpong.cuh's kernel, in a translation unit of its
// own so that the versions compile in parallel. (Its descriptor and C entry are in versions.cu.)
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v4_pingpong.cuh"

fs::Status fs::flash_tma::run_v4(const AttentionProblem& pr, cudaStream_t stream) {
  return launch_ws_version(pr, stream, [](auto t, auto c) {
    return v4::flash_tma_v4_kernel<typename decltype(t)::type, typename decltype(c)::type>;
  });
}
