// flashstages · stage 06 · v5 — double buffering (SIMT fp32)
//
// What changes from v4: the loads of the next tile overlap the FMAs of this one. Shared memory holds
// two copies of each tile; while the block computes on buffer `cur`, each thread's global loads of
// tile k+1 are already in flight into registers, and it stores them into buffer cur ^ 1 once its
// FMAs are done. One __syncthreads per tile instead of two, and a warp waits for DRAM only when a
// load takes longer than the 8 × 128 FMAs of a tile.
//
//   prologue: load tile 0 → regs → buffer 0; sync
//   step k:   issue loads of tile k+1 → regs  |  compute on buffer k%2  |  regs → buffer (k+1)%2; sync
//
// What it still lacks: part of the gap to cuBLAS SGEMM is the price of taking any shape, transpose
// and alignment, the rest cuBLAS's SASS-level scheduling (NOTES.md). The next rung (v6) leaves the FMA
// pipe for the tensor cores.
//
// Run: build/h100/stages/06_tensorcore_gemm/stage06_gemm --dtype fp32 --version v5
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/gemm_epilogue.cuh"
#include "stages/06_tensorcore_gemm/fragments.cuh"
#include "stages/06_tensorcore_gemm/tiles.cuh"

namespace fs::gemm_v5 {

constexpr int kBM = 128, kBN = 128, kBK = 8;  // block tile
constexpr int kWM = 64, kWN = 64;             // warp tile
constexpr int kLanesM = 8, kLanesN = 4;       // lane grid inside a warp tile
constexpr int kRepM = kWM / (kLanesM * 4), kRepN = kWN / (kLanesN * 4);  // 2×4 blocks of 4×4 per lane
constexpr int kThreads = (kBM / kWM) * (kBN / kWN) * 32;                 // 128
constexpr int kPad = 4;

// grid: one block per 128×128 tile of C (1D, tile_n fastest); block 128 = 2×2 warps.
// Lane (ly, lx) of warp (wy, wx) owns rows m0 + wy·64 + s·32 + ly·4 + i and columns
// n0 + wx·64 + t·16 + lx·4 + j, for s in {0, 1}, t in 0..3, i, j in 0..3 (see v4's sketch).
template <bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kThreads, 2)
    gemm_v5_kernel(int64_t M, int64_t N, int64_t K, float alpha, const float* __restrict__ A, int64_t lda,
                   const float* __restrict__ B, int64_t ldb, float beta, float* __restrict__ C, int64_t ldc,
                   bool vec_a, bool vec_b) {
  __shared__ __align__(16) float sA[2][kBK][kBM + kPad];  // (2, BK, BM) two tiles of op(A), k-major
  __shared__ __align__(16) float sB[2][kBK][kBN + kPad];  // (2, BK, BN) two tiles of op(B)

  const int64_t tiles_n = (N + kBN - 1) / kBN;
  const int64_t m0 = blockIdx.x / tiles_n * kBM, n0 = blockIdx.x % tiles_n * kBN;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / (kBN / kWN) * kWM, wn = warp % (kBN / kWN) * kWN;  // warp tile origin in the block
  const int ly = lane / kLanesN, lx = lane % kLanesN;

  float rC[kRepM * 4][kRepN * 4] = {};  // (2·4, 4·4) accumulators: row s·4 + i, column t·4 + j
  // This thread's float4s of each tile, walking K. A untransposed and B transposed are k-contiguous.
  using StreamA = gemm::TileStream<!kTransA, kBM, kBK, kThreads>;
  using StreamB = gemm::TileStream<kTransB, kBN, kBK, kThreads>;
  StreamA gA(A, lda, m0, M, K, tid);
  StreamB gB(B, ldb, n0, N, K, tid);
  float4 a[StreamA::kVecs], b[StreamB::kVecs];  // two each: the next tile, in flight

  // Prologue: tile 0 into buffer 0.
  gA.load(a, vec_a);
  gB.load(b, vec_b);
  StreamA::store(sA[0], a, tid);
  StreamB::store(sB[0], b, tid);
  __syncthreads();  // buffer 0 is complete before any thread reads it

  int cur = 0;
  for (int64_t k0 = 0; k0 < K; k0 += kBK) {
    const bool more = k0 + kBK < K;
    // Tile k+1 into registers: these loads are in flight during the FMAs below.
    if (more) {
      gA.advance();
      gB.advance();
      gA.load(a, vec_a);
      gB.load(b, vec_b);
    }

#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      float rA[kRepM * 4], rB[kRepN * 4];
#pragma unroll
      for (int s = 0; s < kRepM; ++s) gemm::lds128(&rA[s * 4], &sA[cur][kk][wm + s * (kWM / kRepM) + ly * 4]);
#pragma unroll
      for (int t = 0; t < kRepN; ++t) gemm::lds128(&rB[t * 4], &sB[cur][kk][wn + t * (kWN / kRepN) + lx * 4]);
#pragma unroll
      for (int i = 0; i < kRepM * 4; ++i)
#pragma unroll
        for (int j = 0; j < kRepN * 4; ++j) rC[i][j] += rA[i] * rB[j];
    }

    // Buffer cur ^ 1 was last read in the previous step, and every thread passed the __syncthreads
    // that ended it, so it is free to overwrite.
    if (more) {
      StreamA::store(sA[cur ^ 1], a, tid);
      StreamB::store(sB[cur ^ 1], b, tid);
    }
    __syncthreads();  // buffer cur ^ 1 is complete before the next step reads it
    cur ^= 1;
  }

#pragma unroll
  for (int i = 0; i < kRepM * 4; ++i)
#pragma unroll
    for (int j = 0; j < kRepN * 4; ++j) {
      const int64_t m = m0 + wm + i / 4 * (kWM / kRepM) + ly * 4 + i % 4;
      const int64_t n = n0 + wn + j / 4 * (kWN / kRepN) + lx * 4 + j % 4;
      if (m < M && n < N) gemm::epilogue(C + m * ldc + n, rC[i][j], alpha, beta);
    }
}

}  // namespace fs::gemm_v5
