// Stage 02 v1: the launch of the tiled products around the row softmax, with the N×N score buffer they
// need, its descriptor and its C entry.
#include <algorithm>

#include "common/device/row_softmax.cuh"
#include "common/lib/cuda_check.h"
#include "common/lib/flops.h"
#include "common/lib/sizes.h"
#include "common/lib/workspace.h"
#include "stages/02_tiled/v1_tiled.cuh"
#include "stages/02_tiled/versions.h"

namespace fs {

namespace {

namespace v1 = tiled::v1;

using Elements = Dtypes<DType::FP32>;
constexpr AttentionSupport kSupport = attention_support<Elements, AnyHeadDim<256>>(0, /*varlen=*/false);

Status run(const AttentionProblem& pr, cudaStream_t stream) {
  const AttentionParams& p = pr.p;
  const bool causal = p.causal != 0;
  const int64_t offset = p.seq_k - p.seq_q;
  // One S buffer for every slice of heads: slices run one after another on the stream.
  const int64_t slice = std::min(kMaxHeadsPerLaunch, p.batch * p.heads);
  // Refused before anything is written: S's elements per slice, H·Nq·Nk, can pass 2^63 where no input's
  // own count does (grouped K/V), and both products take Nq in gridDim.y, kBM rows a block.
  if (!fits_product({slice, p.seq_q, p.seq_k, int64_t(sizeof(float))})) return Status::InvalidSize;
  if ((p.seq_q + v1::kBM - 1) / v1::kBM > kMaxGridY) return Status::InvalidSize;
  return with_workspace(std::size_t(slice * p.seq_q * p.seq_k) * sizeof(float), stream, [&](void* workspace) {
    float* s = static_cast<float*>(workspace);  // [heads, Nq, Nk]
    return for_each_head_slice<float>(p, [&](const HeadSlice<float>& h) {
      const dim3 grid_s((p.seq_k + v1::kBN - 1) / v1::kBN, (p.seq_q + v1::kBM - 1) / v1::kBM, h.heads);
      const dim3 grid_o((p.head_dim + v1::kBN - 1) / v1::kBN, (p.seq_q + v1::kBM - 1) / v1::kBM, h.heads);
      if (causal)
        v1::matmul_tiled_v1_kernel<true, v1::Causal::MaskOutput>
            <<<grid_s, v1::kThreads, 0, stream>>>(h.q, h.k, s, p.seq_q, p.seq_k, p.head_dim, pr.scale, offset,
                                                  h.kv_head);
      else
        v1::matmul_tiled_v1_kernel<true, v1::Causal::None>
            <<<grid_s, v1::kThreads, 0, stream>>>(h.q, h.k, s, p.seq_q, p.seq_k, p.head_dim, pr.scale, offset,
                                                  h.kv_head);
      rowwise::softmax_kernel<float>
          <<<dim3(p.seq_q, h.heads), rowwise::kSoftmaxThreads, 0, stream>>>(s, h.lse, p.seq_q, p.seq_k);
      if (causal)
        v1::matmul_tiled_v1_kernel<false, v1::Causal::LimitReduction>
            <<<grid_o, v1::kThreads, 0, stream>>>(s, h.v, h.o, p.seq_q, p.head_dim, p.seq_k, 1.0f, offset,
                                                  h.kv_head);
      else
        v1::matmul_tiled_v1_kernel<false, v1::Causal::None>
            <<<grid_o, v1::kThreads, 0, stream>>>(s, h.v, h.o, p.seq_q, p.head_dim, p.seq_k, 1.0f, offset,
                                                  h.kv_head);
      FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
      return Status::Success;
    });
  });
}

}  // namespace

const KernelDesc kTiledV1 = keeps_scores(attention_kernel(
    {"fs_tiled_v1", "stage02", "v1", "shared-memory tiled QK^T and PV (64x64 tiles, 4x4 per thread); S still in DRAM"},
    kSupport, kStageArchs, /*smem_bytes=*/0, run, score_buffer_extra_bytes, score_buffer_traffic_bytes));

}  // namespace fs

FS_EXPORT_ATTENTION(fs_tiled_v1, fs::kTiledV1)
