// Stage 05 v1: the launch of v1_fp32.cuh's kernels after the delta preprocess, with dQ by atomics or,
// when the caller asks for determinism, by a second pass; its descriptor and C entry.
#include <climits>

#include "common/lib/cuda_check.h"
#include "common/lib/flops.h"
#include "stages/05_flash_bwd/launch.cuh"
#include "stages/05_flash_bwd/v1_fp32.cuh"
#include "stages/05_flash_bwd/versions.h"

namespace fs {
namespace bwd::v1 {

// fp32 only; one instance per head_dim; 16-byte aligned tensors (float4 tile loads: every row, D·4
// bytes, is a multiple of 16). Grouped K/V heads; dense batches only.
using Elements = Dtypes<DType::FP32>;
using HeadDimList = HeadDims<32, 64, 128>;
constexpr AttentionSupport kSupport = attention_support<Elements, HeadDimList>(16, /*varlen=*/false);

namespace {

Status run(const AttentionBwdProblem& pr, cudaStream_t stream) {
  const AttentionParams& p = pr.fwd.p;
  return HeadDimList::dispatch(p.head_dim, [&](auto d) {
    constexpr int D = decltype(d)::value;
    using C = Config<D>;
    const int64_t kv_blocks = p.batch * kv_head_count(p) * ((p.seq_k + C::kBc - 1) / C::kBc);
    const int64_t q_blocks = p.batch * p.heads * ((p.seq_q + C::kBr - 1) / C::kBr);
    if (kv_blocks > INT_MAX || q_blocks > INT_MAX) return Status::InvalidSize;  // gridDim.x; before any write
    return with_delta(pr, stream, [&](float* delta) {
      const Args a = make_args<float>(pr, delta);
      FS_RETURN_IF_ERROR(launch_delta<float>(pr, delta, stream));
      if (pr.p.deterministic) {
        FS_RETURN_IF_ERROR(launch_tiled<C>(flash_bwd_v1_dkv_kernel<D, false>, kv_blocks, a, stream));
        return launch_tiled<C>(flash_bwd_v1_dq_kernel<D>, q_blocks, a, stream);
      }
      // The key blocks add their shares of dQ to zeros.
      FS_RETURN_IF_CUDA_ERROR(cudaMemsetAsync(a.dq, 0, std::size_t(q_elems(p)) * sizeof(float), stream));
      return launch_tiled<C>(flash_bwd_v1_dkv_kernel<D, true>, kv_blocks, a, stream);
    });
  });
}

}  // namespace
}  // namespace bwd::v1

const KernelDesc kFlashBwdV1 = attention_bwd_kernel(
    {"fs_flash_bwd_v1", "stage05", "v1",
     "fp32: delta once, K/V resident, Q/dO streamed, P recomputed from LSE, dQ by atomics (or a 2nd pass)"},
    bwd::v1::kSupport, kStageArchs,
    bwd::v1::HeadDimList::max_of([](auto d) { return bwd::v1::Config<decltype(d)::value>::kSmemBytes; }),
    bwd::v1::run, delta_extra_bytes);

}  // namespace fs

FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_v1, fs::kFlashBwdV1)
