// Stage 07 attention v1: the launch of v1_tma_wgmma.cuh's kernel, in a translation unit of its own so
// that the versions compile in parallel. (Its descriptor and C entry are in versions.cu.)
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v1_tma_wgmma.cuh"

fs::Status fs::flash_tma::run_v1(const AttentionProblem& pr, cudaStream_t stream) {
  return launch_version<v1::Config>(pr, stream, [](auto t, auto d) {
    return v1::flash_tma_v1_kernel<typename decltype(t)::type, decltype(d)::value>;
  });
}
