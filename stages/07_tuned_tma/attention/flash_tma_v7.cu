// Stage 07 attention v7: the launch of v7_three_consumers.cuh's kernel, in a translation unit of its own
// so that the versions compile in parallel. (Its descriptor and C entry are in versions.cu.)
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v7_three_consumers.cuh"

fs::Status fs::flash_tma::run_v7(const AttentionProblem& pr, cudaStream_t stream) {
  return launch_version<v7::Config>(pr, stream, [](auto t, auto d) {
    return v7::flash_tma_v7_kernel<typename decltype(t)::type, v7::Config<decltype(d)::value>>;
  });
}
