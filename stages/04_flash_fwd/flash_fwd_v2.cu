// Stage 04 v2: the launch of v2_causal_split.cuh's kernel, in a translation unit of its own so that the versions
// compile in parallel. (Its descriptor and C entry are in flash_fwd.cu, beside the other versions'.)
#include "launch.cuh"
#include "v2_causal_split.cuh"

fs::Status fs::flash::run_v2(const AttentionProblem& pr, cudaStream_t stream) {
  return launch_version<v2::Config>(pr, stream, [](auto t, auto d) {
    return v2::flash_fwd_v2_kernel<typename decltype(t)::type, decltype(d)::value>;
  });
}
