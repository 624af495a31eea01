// Stage 01 v1: the launch of v1_naive.cuh's three kernels, with the N×N score buffer they need, its
// descriptor and its C entry.
#include <algorithm>

#include "common/lib/cuda_check.h"
#include "common/lib/flops.h"
#include "common/lib/sizes.h"
#include "common/lib/workspace.h"
#include "stages/01_naive/v1_naive.cuh"
#include "stages/01_naive/versions.h"

namespace fs {

namespace {

using Elements = Dtypes<DType::FP32, DType::FP16, DType::BF16>;
// The head_dim is a loop bound in every kernel: any value up to 256.
constexpr AttentionSupport kSupport = attention_support<Elements, AnyHeadDim<256>>(0, /*varlen=*/false);

Status run(const AttentionProblem& pr, cudaStream_t stream) {
  const AttentionParams& p = pr.p;
  const bool causal = p.causal != 0;
  // One S buffer for every slice of heads: slices run one after another on the stream.
  const int64_t slice = std::min(kMaxHeadsPerLaunch, p.batch * p.heads);
  // Refused before anything is written: S's elements per slice, H·Nq·Nk, can pass 2^63 where no input's
  // own count does (grouped K/V), and the scores and PV grids take Nq in gridDim.y, 8 rows a block.
  if (!fits_product({slice, p.seq_q, p.seq_k, int64_t(dtype_size(dtype_of(p)))})) return Status::InvalidSize;
  if ((p.seq_q + 7) / 8 > kMaxGridY) return Status::InvalidSize;
  const std::size_t bytes = std::size_t(slice * p.seq_q * p.seq_k) * dtype_size(dtype_of(p));
  return with_workspace(bytes, stream, [&](void* workspace) {
    return Elements::dispatch(p.dtype, [&](auto t) {
      using T = typename decltype(t)::type;
      T* s = static_cast<T*>(workspace);  // [heads, Nq, Nk]
      return for_each_head_slice<T>(p, [&](const HeadSlice<T>& h) {
        const dim3 block(32, 8);
        const dim3 grid_s((p.seq_k + 31) / 32, (p.seq_q + 7) / 8, h.heads);
        naive::v1::scores_v1_kernel<T>
            <<<grid_s, block, 0, stream>>>(h.q, h.k, s, p.seq_q, p.seq_k, p.head_dim, pr.scale, causal, h.kv_head);
        rowwise::softmax_kernel<T>
            <<<dim3(p.seq_q, h.heads), rowwise::kSoftmaxThreads, 0, stream>>>(s, h.lse, p.seq_q, p.seq_k);
        const dim3 grid_o((p.head_dim + 31) / 32, (p.seq_q + 7) / 8, h.heads);
        naive::v1::pv_v1_kernel<T>
            <<<grid_o, block, 0, stream>>>(s, h.v, h.o, p.seq_q, p.seq_k, p.head_dim, causal, h.kv_head);
        FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
        return Status::Success;
      });
    });
  });
}

}  // namespace

const KernelDesc kNaiveV1 = keeps_scores(attention_kernel(
    {"fs_naive_v1", "stage01", "v1", "naive: S = QK^T in DRAM, row softmax, O = PV (three kernels)"}, kSupport,
    kStageArchs, /*smem_bytes=*/0, run, score_buffer_extra_bytes, score_buffer_traffic_bytes));

}  // namespace fs

FS_EXPORT_ATTENTION(fs_naive_v1, fs::kNaiveV1)
