// flashstages · stage 05 — what every backward version does before its main kernels: delta, once.
//
//   delta_i = Σ_c dO_ic · O_ic        (= Σ_j P_ij · dP_ij, docs/05_flash_bwd.md derives why)
//
// The gradient of the softmax needs, for every query row i, the dot product of P_i with dP_i. Over
// the whole row that is the dot product of dO_i with O_i: D multiply-adds from two tensors the
// backward reads anyway, instead of Nk. A kernel that walks the keys block by block would otherwise
// need all of row i's P and dP before it could finish any dS_ij; with delta known first, every key
// block's dS is complete on its own. It is computed once per row here, before the main kernels, and
// read by every key block that row meets.
//
// Also here: the host side of it — where delta lives (the caller's buffer, or a workspace when the
// caller did not ask for it) and the launch.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "common/lib/attention.h"
#include "common/lib/cuda_check.h"
#include "common/lib/numeric.h"
#include "common/lib/workspace.h"

namespace fs::bwd {

constexpr int kDeltaThreads = 256;            // 8 warps
constexpr int kDeltaRowsPerBlock = kDeltaThreads / 32;

// delta[r] = Σ_c dO[r][c] · O[r][c] for the rows of [rows, D] tensors, summed in fp32. One warp per row:
// the lanes read 32 neighbouring elements at a time (coalesced), then five shuffles add up their
// partial sums. grid: up to 2^20 blocks of 256 threads, each warp striding over the rows.
template <class T>
__global__ void __launch_bounds__(kDeltaThreads)
    delta_kernel(const T* __restrict__ d_o /* [rows, D] */, const T* __restrict__ o /* [rows, D] */,
                 float* __restrict__ delta /* [rows] */, int64_t rows, int64_t d) {
  const int lane = threadIdx.x % 32;
  const int64_t stride = int64_t(gridDim.x) * kDeltaRowsPerBlock;
  // r is the same for the 32 lanes of a warp, so the whole warp takes part in every shuffle.
  for (int64_t r = int64_t(blockIdx.x) * kDeltaRowsPerBlock + threadIdx.x / 32; r < rows; r += stride) {
    float acc = 0.0f;
    for (int64_t c = lane; c < d; c += 32) acc += to_float(d_o[r * d + c]) * to_float(o[r * d + c]);
    for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
    if (lane == 0) delta[r] = acc;
  }
}

// Launches delta_kernel over every query row of the problem (B·H·Nq rows of D).
template <class T>
Status launch_delta(const AttentionBwdProblem& pr, float* delta, cudaStream_t stream) {
  const AttentionParams& p = pr.fwd.p;
  const int64_t rows = lse_elems(p);
  const int64_t blocks = std::min<int64_t>((rows + kDeltaRowsPerBlock - 1) / kDeltaRowsPerBlock, int64_t(1) << 20);
  delta_kernel<T><<<unsigned(blocks), kDeltaThreads, 0, stream>>>(static_cast<const T*>(pr.p.d_o),
                                                                    static_cast<const T*>(p.o), delta, rows,
                                                                    p.head_dim);
  FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  return Status::Success;
}

// Calls f(delta), delta being where the backward keeps delta: the caller's buffer when it asked for
// one, otherwise a [B, H, Nq] fp32 workspace allocated on the stream for this launch
// (delta_extra_bytes in common/lib/flops.h) and freed after the work f enqueues.
template <class F>
Status with_delta(const AttentionBwdProblem& pr, cudaStream_t stream, F&& f) {
  if (pr.p.delta) return f(pr.p.delta);
  const std::size_t bytes = std::size_t(lse_elems(pr.fwd.p)) * sizeof(float);
  return with_workspace(bytes, stream, [&](void* workspace) { return f(static_cast<float*>(workspace)); });
}

}  // namespace fs::bwd
