// flashstages · stage 06 · v1 — shared-memory tiling (SIMT fp32)
//
// The first rung of the GEMM ladder. A block of 32×32 threads owns a 32×32 tile of C; it walks K in
// steps of 32, each step copying a 32×32 tile of op(A) and of op(B) into shared memory, after which
// every thread forms its one output from shared memory. Each element loaded from DRAM is used 32
// times instead of once: global traffic falls from 8 bytes per FMA (0.25 FLOP/B) to
// 2·BM·BN·BK FLOP per 4·BK·(BM + BN) bytes = 8 FLOP/B (docs/06_tensorcore_gemm.md, for every version).
// Transposes: loads are always coalesced. threadIdx.x walks the dimension that is contiguous in
// memory, and a transposed operand is transposed on its way into shared memory.
// What it still lacks: each FMA needs two shared-memory loads, so the LSU, not the FMA pipe, sets the
// pace (v2 keeps a block of outputs in registers and reuses each loaded value many times).
//
// Run: build/h100/stages/06_tensorcore_gemm/stage06_gemm --dtype fp32 --version v1
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/gemm_epilogue.cuh"

namespace fs::gemm_v1 {

constexpr int kTile = 32;  // BM = BN = BK

// grid: one block per 32×32 tile of C (1D: tile_n fastest); block (32, 32): thread (ty, tx) owns
// C[m0 + ty][n0 + tx].
template <bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kTile * kTile)
    gemm_v1_kernel(int64_t M, int64_t N, int64_t K, float alpha, const float* __restrict__ A, int64_t lda,
                   const float* __restrict__ B, int64_t ldb, float beta, float* __restrict__ C, int64_t ldc) {
  // +1 column: the transposed stores (sA[tx][ty]) walk a column, and a 33-float row stride puts the 32
  // threads of a warp on 32 different banks.
  __shared__ float sA[kTile][kTile + 1];  // (BM, BK) tile of op(A)
  __shared__ float sB[kTile][kTile + 1];  // (BK, BN) tile of op(B)

  const int64_t tiles_n = (N + kTile - 1) / kTile;
  const int64_t m0 = blockIdx.x / tiles_n * kTile, n0 = blockIdx.x % tiles_n * kTile;
  const int tx = threadIdx.x, ty = threadIdx.y;

  float acc = 0.0f;
  for (int64_t k0 = 0; k0 < K; k0 += kTile) {
    // Elements outside the matrix load as 0 so that tails add nothing.
    if (!kTransA) sA[ty][tx] = m0 + ty < M && k0 + tx < K ? A[(m0 + ty) * lda + k0 + tx] : 0.0f;  // A (M, K)
    else          sA[tx][ty] = k0 + ty < K && m0 + tx < M ? A[(k0 + ty) * lda + m0 + tx] : 0.0f;  // A (K, M)
    if (!kTransB) sB[ty][tx] = k0 + ty < K && n0 + tx < N ? B[(k0 + ty) * ldb + n0 + tx] : 0.0f;  // B (K, N)
    else          sB[tx][ty] = n0 + ty < N && k0 + tx < K ? B[(n0 + ty) * ldb + k0 + tx] : 0.0f;  // B (N, K)
    __syncthreads();  // both tiles are complete before any thread reads another thread's element

    // sA[ty][kk] is one address for the whole warp (a broadcast); sB[kk][tx] is 32 consecutive words.
    for (int kk = 0; kk < kTile; ++kk) acc += sA[ty][kk] * sB[kk][tx];
    __syncthreads();  // every thread is done with the tiles before the next step overwrites them
  }
  if (m0 + ty < M && n0 + tx < N) gemm::epilogue(C + (m0 + ty) * ldc + n0 + tx, acc, alpha, beta);
}

}  // namespace fs::gemm_v1
