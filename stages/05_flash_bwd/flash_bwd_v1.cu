// Stage 05 v1: the launch of v1_fp32.cuh's kernels after the delta preprocess, with dQ by atomics or,
// when the caller asks for determinism, by a second pass. (Its descriptor and C entry are in
// flash_bwd.cu, beside the other versions'.)
#include <climits>

#include "common/lib/cuda_check.h"
#include "launch.h"
#include "preprocess.cuh"
#include "v1_fp32.cuh"

namespace fs::bwd {

Status run_v1(const AttentionBwdProblem& pr, cudaStream_t stream) {
  const AttentionParams& p = pr.fwd.p;
  return v1::HeadDimList::dispatch(p.head_dim, [&](auto d) {
    constexpr int D = decltype(d)::value;
    using C = v1::Config<D>;
    const int64_t kv_blocks = p.batch * kv_head_count(p) * ((p.seq_k + C::kBc - 1) / C::kBc);
    const int64_t q_blocks = p.batch * p.heads * ((p.seq_q + C::kBr - 1) / C::kBr);
    if (kv_blocks > INT_MAX || q_blocks > INT_MAX) return Status::InvalidSize;  // gridDim.x; before any write
    return with_delta(pr, stream, [&](float* delta) {
      const v1::Args a = make_args<float>(pr, delta);
      FS_RETURN_IF_ERROR(launch_delta<float>(pr, delta, stream));
      if (pr.p.deterministic) {
        FS_RETURN_IF_ERROR(launch_tiled<C>(v1::flash_bwd_v1_dkv_kernel<D, false>, kv_blocks, a, stream));
        return launch_tiled<C>(v1::flash_bwd_v1_dq_kernel<D>, q_blocks, a, stream);
      }
      // The key blocks add their shares of dQ to zeros.
      FS_RETURN_IF_CUDA_ERROR(cudaMemsetAsync(a.dq, 0, std::size_t(q_elems(p)) * sizeof(float), stream));
      return launch_tiled<C>(v1::flash_bwd_v1_dkv_kernel<D, true>, kv_blocks, a, stream);
    });
  });
}

}  // namespace fs::bwd
