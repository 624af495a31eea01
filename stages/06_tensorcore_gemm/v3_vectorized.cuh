// flashstages · stage 06 · v3 — 128-bit loads (SIMT fp32)
//
// What changes from v2: the same tiling, but memory moves 16 bytes per instruction. Each thread copies
// one float4 of each tile (LDG.128, gemm::TileStream; element loads only where a vector would cross the
// matrix edge or the leading dimension breaks 16-byte alignment), and reads its 8 values of op(A) and
// of op(B) for one kk as two float4 each (LDS.128): 4 shared-memory instructions per 64 FMAs instead
// of 16. The gain is small: the compiler had already fused v2's contiguous shared reads into LDS.128.
// What it still lacks: in a 128-bit shared load, the 8 threads served together read sB[kk][tx·8 .. +3]
// 32 bytes apart, a 2-way bank conflict, and a warp's 32 threads cover a 2×16 strip of thread blocks,
// so it reads 16 different B vectors per kk (v4 shapes each warp's outputs into a compact tile).
//
// Run: build/h100/stages/06_tensorcore_gemm/stage06_gemm --dtype fp32 --version v3
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/gemm_epilogue.cuh"
#include "stages/06_tensorcore_gemm/fragments.cuh"
#include "stages/06_tensorcore_gemm/tiles.cuh"

namespace fs::gemm_v3 {

constexpr int kBM = 128, kBN = 128, kBK = 8;         // block tile
constexpr int kTM = 8, kTN = 8;                      // outputs per thread
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);  // 256
// +4 floats per row: keeps the transposing stores on distinct banks and every row 16-byte aligned.
constexpr int kPad = 4;

// grid: one block per 128×128 tile of C (1D, tile_n fastest); block 256: thread (ty, tx) = (tid / 16,
// tid % 16) owns rows m0 + ty·8 .. +7 and columns n0 + tx·8 .. +7.
// vec_a, vec_b: A (B) is 16-byte aligned and lda (ldb) a multiple of 4, so float4 loads are allowed.
// Two blocks per SM (128 registers), as in v2.
template <bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kThreads, 2)
    gemm_v3_kernel(int64_t M, int64_t N, int64_t K, float alpha, const float* __restrict__ A, int64_t lda,
                   const float* __restrict__ B, int64_t ldb, float beta, float* __restrict__ C, int64_t ldc,
                   bool vec_a, bool vec_b) {
  __shared__ __align__(16) float sA[kBK][kBM + kPad];  // (BK, BM) tile of op(A), k-major
  __shared__ __align__(16) float sB[kBK][kBN + kPad];  // (BK, BN) tile of op(B)

  const int64_t tiles_n = (N + kBN - 1) / kBN;
  const int64_t m0 = blockIdx.x / tiles_n * kBM, n0 = blockIdx.x % tiles_n * kBN;
  const int tid = threadIdx.x;
  const int tx = tid % (kBN / kTN), ty = tid / (kBN / kTN);

  float rC[kTM][kTN] = {};  // (TM, TN) accumulators
  // This thread's float4 of each tile, walking K. A untransposed and B transposed are k-contiguous.
  using StreamA = gemm::TileStream<!kTransA, kBM, kBK, kThreads>;
  using StreamB = gemm::TileStream<kTransB, kBN, kBK, kThreads>;
  StreamA gA(A, lda, m0, M, K, tid);
  StreamB gB(B, ldb, n0, N, K, tid);
  for (int64_t k0 = 0; k0 < K; k0 += kBK, gA.advance(), gB.advance()) {
    float4 a[StreamA::kVecs], b[StreamB::kVecs];  // one each here
    gA.load(a, vec_a);
    gB.load(b, vec_b);
    StreamA::store(sA, a, tid);
    StreamB::store(sB, b, tid);
    __syncthreads();  // both tiles are complete before any thread reads them

#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      float rA[kTM], rB[kTN];  // one column of the thread's op(A) block, one row of its op(B) block
#pragma unroll
      for (int i = 0; i < kTM; i += 4) gemm::lds128(&rA[i], &sA[kk][ty * kTM + i]);
#pragma unroll
      for (int j = 0; j < kTN; j += 4) gemm::lds128(&rB[j], &sB[kk][tx * kTN + j]);
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

}  // namespace fs::gemm_v3
