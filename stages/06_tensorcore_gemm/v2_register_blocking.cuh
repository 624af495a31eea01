// flashstages · stage 06 · v2 — 2D register blocking (SIMT fp32)
//
// What changes from v1: each thread computes an 8×8 block of C instead of one element, in 64
// registers. For every kk it loads 8 values of op(A) and 8 of op(B) from shared memory and does all 64
// products of them: 16 shared loads per 64 FMAs instead of 2 per FMA. The block tile grows to
// 128×128 (256 threads × 64 outputs), which also lifts the global intensity to
// 128·128 / (2·(128 + 128)) = 32 FLOP/B.
// Shared tiles are k-major (sA[k][m], sB[k][n]) for both operands, so a thread's values for one kk
// lie next to each other; a k-contiguous operand is transposed on its way in.
// What it still lacks: every global access is 32 bits wide (v3 moves 128 bits at a time; the
// compiler already fuses the contiguous shared reads below into LDS.128, as the SASS shows), and the
// lanes read sB[kk][tx·8 + j] 32 bytes apart: bank conflicts (v3's header counts them).
//
// Run: build/h100/stages/06_tensorcore_gemm/stage06_gemm --dtype fp32 --version v2
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/gemm_epilogue.cuh"

namespace fs::gemm_v2 {

constexpr int kBM = 128, kBN = 128, kBK = 8;         // block tile
constexpr int kTM = 8, kTN = 8;                      // outputs per thread
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);  // 256
// +4 floats per row: the transposing stores (sA[k][m] with k varying fastest across threads) land 4
// banks apart per k instead of on one bank.
constexpr int kPad = 4;

// grid: one block per 128×128 tile of C (1D, tile_n fastest); block 256: thread (ty, tx) = (tid / 16,
// tid % 16) owns rows m0 + ty·8 .. +7 and columns n0 + tx·8 .. +7. Two blocks per SM (128 registers).
template <bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kThreads, 2)
    gemm_v2_kernel(int64_t M, int64_t N, int64_t K, float alpha, const float* __restrict__ A, int64_t lda,
                   const float* __restrict__ B, int64_t ldb, float beta, float* __restrict__ C, int64_t ldc) {
  __shared__ float sA[kBK][kBM + kPad];  // (BK, BM) tile of op(A), k-major
  __shared__ float sB[kBK][kBN + kPad];  // (BK, BN) tile of op(B)

  const int64_t tiles_n = (N + kBN - 1) / kBN;
  const int64_t m0 = blockIdx.x / tiles_n * kBM, n0 = blockIdx.x % tiles_n * kBN;
  const int tid = threadIdx.x;
  const int tx = tid % (kBN / kTN), ty = tid / (kBN / kTN);

  float rC[kTM][kTN] = {};  // (TM, TN) accumulators
  for (int64_t k0 = 0; k0 < K; k0 += kBK) {
    // Copy: 1024 elements per tile, 4 per thread; consecutive threads read consecutive addresses of
    // the operand as it is stored. Elements outside the matrix load as 0.
#pragma unroll
    for (int i = 0; i < kBM * kBK / kThreads; ++i) {
      const int e = tid + i * kThreads;
      if (!kTransA) {  // A (M, K): k contiguous
        const int m = e / kBK, k = e % kBK;
        sA[k][m] = m0 + m < M && k0 + k < K ? A[(m0 + m) * lda + k0 + k] : 0.0f;
      } else {  // A (K, M): m contiguous
        const int k = e / kBM, m = e % kBM;
        sA[k][m] = k0 + k < K && m0 + m < M ? A[(k0 + k) * lda + m0 + m] : 0.0f;
      }
      if (!kTransB) {  // B (K, N): n contiguous
        const int k = e / kBN, n = e % kBN;
        sB[k][n] = k0 + k < K && n0 + n < N ? B[(k0 + k) * ldb + n0 + n] : 0.0f;
      } else {  // B (N, K): k contiguous
        const int n = e / kBK, k = e % kBK;
        sB[k][n] = n0 + n < N && k0 + k < K ? B[(n0 + n) * ldb + k0 + k] : 0.0f;
      }
    }
    __syncthreads();  // both tiles are complete before any thread reads them

#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      float rA[kTM], rB[kTN];  // one column of the thread's op(A) block, one row of its op(B) block
#pragma unroll
      for (int i = 0; i < kTM; ++i) rA[i] = sA[kk][ty * kTM + i];
#pragma unroll
      for (int j = 0; j < kTN; ++j) rB[j] = sB[kk][tx * kTN + j];
#pragma unroll
      for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) rC[i][j] += rA[i] * rB[j];
    }
    __syncthreads();  // every thread is done with the tiles before the next step overwrites them
  }

#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const int64_t m = m0 + ty * kTM + i, n = n0 + tx * kTN + j;
      if (m < M && n < N) gemm::epilogue(C + m * ldc + n, rC[i][j], alpha, beta);
    }
}

}  // namespace fs::gemm_v2
