// Stage 04 v1: the launch of v1_mma.cuh's kernel, in a translation unit of its own so that the versions
// compile in parallel. (Its descriptor and C entry are in flash_fwd.cu, beside the other versions'.)
#include "launch.cuh"
#include "v1_mma.cuh"

fs::Status fs::flash::run_v1(const AttentionProblem& pr, cudaStream_t stream) {
  return launch_version<v1::Config>(pr, stream, [](auto t, auto d) {
    return v1::flash_fwd_v1_kernel<typename decltype(t)::type, decltype(d)::value>;
  });
}
