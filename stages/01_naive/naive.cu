// Stage 01 launcher: validates, allocates the N×N score buffer, runs the three kernels of v1_naive.cuh.
#include "naive.h"

#include <algorithm>

#include "cuda_check.h"
#include "flops.h"
#include "v1_naive.cuh"
#include "workspace.h"

namespace fs {

namespace {

const AttentionSupport kSupport{kAllFloatDtypes, 1, 256};

// Grids put B·H in blockIdx.y or .z, whose limit is 65535: larger batches go in slices.
constexpr int64_t kMaxHeadsPerLaunch = 65535;

template <class T>
void launch_typed(const AttentionParams& p, T* s, cudaStream_t stream) {
  const float scale = softmax_scale(p);
  const bool causal = p.causal != 0;
  const int64_t bh_total = p.batch * p.heads;
  for (int64_t bh0 = 0; bh0 < bh_total; bh0 += kMaxHeadsPerLaunch) {
    const unsigned bh = static_cast<unsigned>(std::min(kMaxHeadsPerLaunch, bh_total - bh0));
    const T* q = static_cast<const T*>(p.q) + bh0 * p.seq_q * p.head_dim;
    const T* k = static_cast<const T*>(p.k) + bh0 * p.seq_k * p.head_dim;
    const T* v = static_cast<const T*>(p.v) + bh0 * p.seq_k * p.head_dim;
    T* o = static_cast<T*>(p.o) + bh0 * p.seq_q * p.head_dim;
    float* lse = p.lse ? p.lse + bh0 * p.seq_q : nullptr;

    const dim3 block(32, 8);
    const dim3 grid_s((p.seq_k + 31) / 32, (p.seq_q + 7) / 8, bh);
    naive::scores_kernel<T><<<grid_s, block, 0, stream>>>(q, k, s, p.seq_q, p.seq_k, p.head_dim, scale, causal);
    naive::softmax_kernel<T><<<dim3(p.seq_q, bh), naive::kSoftmaxThreads, 0, stream>>>(s, lse, p.seq_q, p.seq_k);
    const dim3 grid_o((p.head_dim + 31) / 32, (p.seq_q + 7) / 8, bh);
    naive::pv_kernel<T><<<grid_o, block, 0, stream>>>(s, v, o, p.seq_q, p.seq_k, p.head_dim, causal);
  }
}

std::size_t score_bytes(const AttentionParams& p) {
  return std::size_t(p.batch * p.heads) * p.seq_q * p.seq_k * dtype_size(dtype_of(p));
}

}  // namespace

std::size_t naive_extra_bytes(const AttentionParams& p) {
  return score_bytes(p) + std::size_t(lse_elems(p)) * sizeof(float);
}

double naive_traffic_bytes(const AttentionParams& p) {
  return attention_fwd_min_bytes(p) + 4.0 * double(score_bytes(p));
}

Status launch_naive_v1(const AttentionParams& p, cudaStream_t stream) {
  if (const Status st = validate(p, kSupport); st != Status::Success) return st;
  // One S buffer for every slice of heads: slices run one after another on the stream.
  const int64_t slice_heads = std::min(kMaxHeadsPerLaunch, p.batch * p.heads);
  void* s = nullptr;
  const std::size_t bytes = std::size_t(slice_heads) * p.seq_q * p.seq_k * dtype_size(dtype_of(p));
  if (const Status st = workspace_alloc(&s, bytes, stream); st != Status::Success) return st;
  switch (dtype_of(p)) {
    case DType::FP32: launch_typed(p, static_cast<float*>(s), stream); break;
    case DType::FP16: launch_typed(p, static_cast<__half*>(s), stream); break;
    case DType::BF16: launch_typed(p, static_cast<__nv_bfloat16*>(s), stream); break;
  }
  FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  return workspace_free(s, stream);
}

const AttentionKernel kNaiveV1{"stage01", "v1", "naive: S = QK^T in DRAM, row softmax, O = PV (three kernels)",
                               launch_naive_v1, naive_extra_bytes, naive_traffic_bytes, kAllFloatDtypes};

}  // namespace fs

extern "C" int fs_naive_v1(const fs_attention_params* params, void* stream) {
  if (!params) return FS_ERR_NULL_POINTER;
  return static_cast<int>(fs::launch_naive_v1(*params, static_cast<cudaStream_t>(stream)));
}
