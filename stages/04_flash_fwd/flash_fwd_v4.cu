// Stage 04 v4: the launch of v4_ldmatrix_swizzle.cuh's kernel, in a translation unit of its own so that the versions
// compile in parallel. (Its descriptor and C entry are in flash_fwd.cu, beside the other versions'.)
#include "launch.cuh"
#include "v4_ldmatrix_swizzle.cuh"

fs::Status fs::flash::run_v4(const AttentionProblem& pr, cudaStream_t stream) {
  return launch_version<v4::Config>(pr, stream, [](auto t, auto d) {
    return v4::flash_fwd_v4_kernel<typename decltype(t)::type, decltype(d)::value>;
  });
}
