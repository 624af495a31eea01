// Stage 04 v3: the launch of v3_cp_async.cuh's kernel, in a translation unit of its own so that the versions
// compile in parallel. (Its descriptor and C entry are in flash_fwd.cu, beside the other versions'.)
#include "launch.cuh"
#include "v3_cp_async.cuh"

fs::Status fs::flash::run_v3(const AttentionProblem& pr, cudaStream_t stream) {
  return launch_version<v3::Config>(pr, stream, [](auto t, auto d) {
    return v3::flash_fwd_v3_kernel<typename decltype(t)::type, decltype(d)::value>;
  });
}
