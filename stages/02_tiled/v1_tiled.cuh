// flashstages · stage 02 · v1 — the two matrix products tiled through shared memory.
//
// What changes from stage 01: S = scale · Q Kᵀ and O = P V are computed by one tiled matrix-product
// kernel. A block owns a 64×64 tile of the output; it walks the reduction dimension 16 at a time,
// staging a 64×16 slice of A and a 16×64 slice of B in shared memory, and each of its 256 threads
// accumulates a 4×4 piece of the tile in registers. The softmax is stage 01's kernel, unchanged
// (common/device/row_softmax.cuh).
// Why it is faster: stage 01 reads 2 operands from global memory per multiply-add. Here every value a
// block loads is used 64 times from shared memory, and every value a thread loads from shared memory
// is used 4 times from registers. The products move the same DRAM bytes as stage 01's:
// what tiling saves is load instructions, not DRAM traffic.
// What it does not fix: S still goes to DRAM and back (4·|S| bytes; at N = 16384 its 64 KiB rows no longer stay
// in L2 and the softmax reads S three times); stage 03 removes S. And the products are bound by shared
// memory: 12 wavefronts per 16 FFMAs cap QKᵀ near a third of the FMA rate (docs/02_tiled.md).
//
// Run: build/release/stages/02_tiled/stage02_tiled --seq 4096 --dim 64 [--causal]
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/lib/attention.h"

namespace fs::tiled::v1 {

constexpr int kBM = 64;       // output tile rows
constexpr int kBN = 64;       // output tile columns
constexpr int kBK = 16;       // reduction slice staged per step
constexpr int kTM = 4;        // rows per thread
constexpr int kTN = 4;        // columns per thread
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);  // 256

// How the causal mask enters a product.
enum class Causal {
  None,
  MaskOutput,      // S = Q Kᵀ: entries with j > i + offset become -inf; tiles wholly above skip the math
  LimitReduction,  // O = P V: P is zero past key i + offset, so the reduction stops there
};

// C[bh] (M×N) = alpha · A[bh] (M×K) · op(B[b_head(bh)]), all row-major per head, bh = blockIdx.z.
// op(B) is K×N: B is stored N×K (kTransB, for Kᵀ) or K×N (for V). B is K or V, whose heads may be
// shared by several query heads (grouped-query attention): b_head maps a query head to its K/V head.
// grid (ceil(N/64), ceil(M/64), B·H), block 256.
template <bool kTransB, Causal kCausal>
__global__ void __launch_bounds__(kThreads)
    matmul_tiled_v1_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int64_t m,
                           int64_t n, int64_t k, float alpha, int64_t causal_offset, KvHeadOf b_head) {
  // A is stored transposed in shared memory so that a thread's 4 rows sit in one row of sA. Loading
  // walks k fastest (coalesced global reads), so 16 threads store down one column of sA: the +1 pad
  // puts those 16 stores in 16 different banks instead of one.
  __shared__ float sA[kBK][kBM + 1];  // (k, m) slice of A
  __shared__ float sB[kBK][kBN + 1];  // (k, n) slice of op(B); padded for the same reason when kTransB

  const int64_t bh = blockIdx.z;
  const int64_t row0 = int64_t(blockIdx.y) * kBM, col0 = int64_t(blockIdx.x) * kBN;
  a += bh * m * k;
  b += b_head(bh) * n * k;
  c += bh * m * n;
  const int tx = threadIdx.x % (kBN / kTN), ty = threadIdx.x / (kBN / kTN);  // 16 × 16 threads

  // Causal: the last key any row of this tile can see is (row0 + 63) + offset.
  const int64_t last_visible = row0 + kBM - 1 + causal_offset;
  if constexpr (kCausal == Causal::MaskOutput) {
    if (col0 > last_visible) {  // the whole tile is above the diagonal: no math, only -inf
      for (int r = 0; r < kTM; ++r)
        for (int s = 0; s < kTN; ++s) {
          const int64_t i = row0 + ty * kTM + r, j = col0 + tx * kTN + s;
          if (i < m && j < n) c[i * n + j] = -INFINITY;
        }
      return;
    }
  }
  int64_t k_end = k;
  if constexpr (kCausal == Causal::LimitReduction) k_end = last_visible + 1 < k ? last_visible + 1 : k;

  float acc[kTM][kTN] = {};  // this thread's 4×4 piece of the 64×64 tile
  for (int64_t k0 = 0; k0 < k_end; k0 += kBK) {
    // Each thread stages 4 elements of each slice; out-of-range elements are zero so tails add nothing.
    for (int e = threadIdx.x; e < kBM * kBK; e += kThreads) {
      const int r = e / kBK, kk = e % kBK;  // consecutive threads read consecutive k of one A row
      const int64_t gi = row0 + r, gk = k0 + kk;
      sA[kk][r] = (gi < m && gk < k_end) ? a[gi * k + gk] : 0.0f;
    }
    for (int e = threadIdx.x; e < kBK * kBN; e += kThreads) {
      int kk, col;
      if constexpr (kTransB) {
        col = e / kBK, kk = e % kBK;  // B is N×K: walk k along a row of B
      } else {
        kk = e / kBN, col = e % kBN;  // B is K×N: walk n along a row of B
      }
      const int64_t gj = col0 + col, gk = k0 + kk;
      sB[kk][col] = (gj < n && gk < k_end) ? (kTransB ? b[gj * k + gk] : b[gk * n + gj]) : 0.0f;
    }
    __syncthreads();  // the slices are complete before anyone multiplies

    for (int kk = 0; kk < kBK; ++kk) {
      float ra[kTM], rb[kTN];  // one column of the thread's A rows, one row of its B columns
      for (int r = 0; r < kTM; ++r) ra[r] = sA[kk][ty * kTM + r];
      for (int s = 0; s < kTN; ++s) rb[s] = sB[kk][tx * kTN + s];
      for (int r = 0; r < kTM; ++r)
        for (int s = 0; s < kTN; ++s) acc[r][s] += ra[r] * rb[s];
    }
    __syncthreads();  // everyone is done with the slices before the next step overwrites them
  }

  for (int r = 0; r < kTM; ++r)
    for (int s = 0; s < kTN; ++s) {
      const int64_t i = row0 + ty * kTM + r, j = col0 + tx * kTN + s;
      if (i >= m || j >= n) continue;
      float out = alpha * acc[r][s];
      if constexpr (kCausal == Causal::MaskOutput)
        if (j > i + causal_offset) out = -INFINITY;
      c[i * n + j] = out;
    }
}

}  // namespace fs::tiled::v1
