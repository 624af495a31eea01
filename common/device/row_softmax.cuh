// flashstages — the row softmax of a materialized score matrix, in place: stage 01 runs it between
// its two products, and stage 02 keeps it unchanged while it tiles the products around it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/lib/numeric.h"

namespace fs::rowwise {

// Row softmax in place: P[i, :] = exp(S[i, :] - LSE_i), LSE_i = m_i + log Σ_j exp(S_ij - m_i).
// grid (Nq, B·H), block kSoftmaxThreads: three passes over the row (max, sum, normalize). A row
// (Nk elements) stays in L2 between the passes, so S costs one DRAM read and one write here
// (docs/01_naive.md measures it) — traffic the later stages remove.
constexpr int kSoftmaxThreads = 256;

// Reduces one value per thread to one value for the block; every thread gets the result.
template <class Op>
__device__ float block_reduce(float x, Op op, float* scratch /* [kSoftmaxThreads / 32] */) {
  for (int offset = 16; offset > 0; offset /= 2) x = op(x, __shfl_xor_sync(0xffffffffu, x, offset));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = x;
  __syncthreads();  // every warp's partial is in scratch
  x = scratch[0];
  for (int w = 1; w < kSoftmaxThreads / 32; ++w) x = op(x, scratch[w]);
  __syncthreads();  // all threads have read scratch before a later reduction reuses it
  return x;
}

template <class T>
__global__ void __launch_bounds__(kSoftmaxThreads)
    softmax_kernel(T* __restrict__ s, float* __restrict__ lse, int64_t nq, int64_t nk) {
  __shared__ float scratch[kSoftmaxThreads / 32];
  const int64_t row = blockIdx.y * nq + blockIdx.x;
  T* srow = s + row * nk;  // [Nk]

  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < nk; j += blockDim.x) m = fmaxf(m, to_float(srow[j]));
  m = block_reduce(m, [](float a, float b) { return fmaxf(a, b); }, scratch);

  float l = 0.0f;
  for (int64_t j = threadIdx.x; j < nk; j += blockDim.x) l += expf(to_float(srow[j]) - m);
  l = block_reduce(l, [](float a, float b) { return a + b; }, scratch);

  const float row_lse = m + logf(l);
  for (int64_t j = threadIdx.x; j < nk; j += blockDim.x) srow[j] = from_float<T>(expf(to_float(srow[j]) - row_lse));
  if (lse && threadIdx.x == 0) lse[row] = row_lse;
}

}  // namespace fs::rowwise
