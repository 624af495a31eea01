// Stage 02 launcher: validates, allocates the N×N score buffer, runs tiled QKᵀ, stage 01's softmax,
// tiled PV.
#include "tiled.h"

#include <algorithm>

#include "cuda_check.h"
#include "naive.h"
#include "v1_naive.cuh"
#include "v1_tiled.cuh"
#include "workspace.h"

namespace fs {

namespace {

const AttentionSupport kSupport{dtype_bit(DType::FP32), 1, 256};
constexpr int64_t kMaxHeadsPerLaunch = 65535;  // blockIdx.y/z limit

}  // namespace

Status launch_tiled_v1(const AttentionParams& p, cudaStream_t stream) {
  if (const Status st = validate(p, kSupport); st != Status::Success) return st;
  const int64_t bh_total = p.batch * p.heads;
  const int64_t slice_heads = std::min(kMaxHeadsPerLaunch, bh_total);
  void* workspace = nullptr;
  if (const Status st = workspace_alloc(&workspace, std::size_t(slice_heads) * p.seq_q * p.seq_k * sizeof(float), stream);
      st != Status::Success)
    return st;
  float* s = static_cast<float*>(workspace);  // [slice_heads, Nq, Nk]
  const float scale = softmax_scale(p);
  const int64_t offset = p.seq_k - p.seq_q;
  for (int64_t bh0 = 0; bh0 < bh_total; bh0 += kMaxHeadsPerLaunch) {
    const unsigned bh = static_cast<unsigned>(std::min(kMaxHeadsPerLaunch, bh_total - bh0));
    const float* q = static_cast<const float*>(p.q) + bh0 * p.seq_q * p.head_dim;
    const float* k = static_cast<const float*>(p.k) + bh0 * p.seq_k * p.head_dim;
    const float* v = static_cast<const float*>(p.v) + bh0 * p.seq_k * p.head_dim;
    float* o = static_cast<float*>(p.o) + bh0 * p.seq_q * p.head_dim;
    float* lse = p.lse ? p.lse + bh0 * p.seq_q : nullptr;

    const dim3 grid_s((p.seq_k + tiled::kBN - 1) / tiled::kBN, (p.seq_q + tiled::kBM - 1) / tiled::kBM, bh);
    const dim3 grid_o((p.head_dim + tiled::kBN - 1) / tiled::kBN, (p.seq_q + tiled::kBM - 1) / tiled::kBM, bh);
    if (p.causal) {
      tiled::matmul_tiled_kernel<true, tiled::Causal::MaskOutput>
          <<<grid_s, tiled::kThreads, 0, stream>>>(q, k, s, p.seq_q, p.seq_k, p.head_dim, scale, offset);
    } else {
      tiled::matmul_tiled_kernel<true, tiled::Causal::None>
          <<<grid_s, tiled::kThreads, 0, stream>>>(q, k, s, p.seq_q, p.seq_k, p.head_dim, scale, offset);
    }
    naive::softmax_kernel<float><<<dim3(p.seq_q, bh), naive::kSoftmaxThreads, 0, stream>>>(s, lse, p.seq_q, p.seq_k);
    if (p.causal) {
      tiled::matmul_tiled_kernel<false, tiled::Causal::LimitReduction>
          <<<grid_o, tiled::kThreads, 0, stream>>>(s, v, o, p.seq_q, p.head_dim, p.seq_k, 1.0f, offset);
    } else {
      tiled::matmul_tiled_kernel<false, tiled::Causal::None>
          <<<grid_o, tiled::kThreads, 0, stream>>>(s, v, o, p.seq_q, p.head_dim, p.seq_k, 1.0f, offset);
    }
  }
  FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  return workspace_free(workspace, stream);
}

const AttentionKernel kTiledV1{"stage02", "v1", "shared-memory tiled QK^T and PV (64x64 tiles, 4x4 per thread); S still in DRAM",
                               launch_tiled_v1, naive_extra_bytes, naive_traffic_bytes, dtype_bit(DType::FP32)};

}  // namespace fs

extern "C" int fs_tiled_v1(const fs_attention_params* params, void* stream) {
  if (!params) return FS_ERR_NULL_POINTER;
  return static_cast<int>(fs::launch_tiled_v1(*params, static_cast<cudaStream_t>(stream)));
}
