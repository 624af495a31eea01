// flashstages · stage 06 · v4 — warp tiling (SIMT fp32)
//
// What changes from v3: which outputs a thread owns. The 128×128 block tile is split into 4 warp
// tiles of WM×WN = 64×64 (128 threads); inside one, the 32 lanes form an 8×4 grid and each lane owns
// a 2×4 set of 4×4 blocks spaced 32 rows and 16 columns apart (the sketch at the kernel): 8×16 = 128
// accumulators. For one kk a warp reads 8 consecutive A vectors (128 contiguous bytes) and 4 distinct
// B vectors (broadcast): 6 conflict-free LDS.128 feed 128 FFMAs, where v3 spent 4 LDS.128, two of them
// 2-way conflicted, on 64 FFMAs. Two blocks of 128 threads share an SM, up to 255 registers each.
// What it still lacks: the block waits at __syncthreads for each tile to arrive from DRAM, with
// nothing to compute meanwhile (v5 loads the next tile while computing this one).
//
// Run: build/h100/stages/06_tensorcore_gemm/stage06_gemm --dtype fp32 --version v4
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/gemm_epilogue.cuh"
#include "stages/06_tensorcore_gemm/fragments.cuh"
#include "stages/06_tensorcore_gemm/tiles.cuh"

namespace fs::gemm_v4 {

constexpr int kBM = 128, kBN = 128, kBK = 8;  // block tile
constexpr int kWM = 64, kWN = 64;             // warp tile
constexpr int kLanesM = 8, kLanesN = 4;       // lane grid inside a warp tile
constexpr int kRepM = kWM / (kLanesM * 4), kRepN = kWN / (kLanesN * 4);  // 2×4 blocks of 4×4 per lane
constexpr int kThreads = (kBM / kWM) * (kBN / kWN) * 32;                 // 128
constexpr int kPad = 4;

// grid: one block per 128×128 tile of C (1D, tile_n fastest); block 128 = 2×2 warps.
// Lane (ly, lx) of warp (wy, wx) owns rows m0 + wy·64 + s·32 + ly·4 + i and columns
// n0 + wx·64 + t·16 + lx·4 + j, for s in {0, 1}, t in 0..3, i, j in 0..3:
//
//   warp tile 64×64 = 2×4 quadrants of 32×16; in every quadrant lane L = ly·4 + lx owns the 4×4
//   block at rows ly·4, columns lx·4:
//
//          n:  0    4    8    12  | 16   20   24   28  | 32 ... | 48 ... 60
//   m   0     L0   L1   L2   L3   | L0   L1   L2   L3  | L0 ... | L0 ... L3
//       4     L4   L5   L6   L7   | L4   ...            |
//      ...                        |
//      28     L28  L29  L30  L31  | L28  ...            |
//      --------------------------------------------------------------------
//      32     L0   L1   ...       (rows 32..63 repeat rows 0..31)
template <bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kThreads, 2)
    gemm_v4_kernel(int64_t M, int64_t N, int64_t K, float alpha, const float* __restrict__ A, int64_t lda,
                   const float* __restrict__ B, int64_t ldb, float beta, float* __restrict__ C, int64_t ldc,
                   bool vec_a, bool vec_b) {
  __shared__ __align__(16) float sA[kBK][kBM + kPad];  // (BK, BM) tile of op(A), k-major
  __shared__ __align__(16) float sB[kBK][kBN + kPad];  // (BK, BN) tile of op(B)

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
  for (int64_t k0 = 0; k0 < K; k0 += kBK, gA.advance(), gB.advance()) {
    float4 a[StreamA::kVecs], b[StreamB::kVecs];  // two each
    gA.load(a, vec_a);
    gB.load(b, vec_b);
    StreamA::store(sA, a, tid);
    StreamB::store(sB, b, tid);
    __syncthreads();  // both tiles are complete before any thread reads them

#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      float rA[kRepM * 4], rB[kRepN * 4];
#pragma unroll
      for (int s = 0; s < kRepM; ++s) gemm::lds128(&rA[s * 4], &sA[kk][wm + s * (kWM / kRepM) + ly * 4]);
#pragma unroll
      for (int t = 0; t < kRepN; ++t) gemm::lds128(&rB[t * 4], &sB[kk][wn + t * (kWN / kRepN) + lx * 4]);
#pragma unroll
      for (int i = 0; i < kRepM * 4; ++i)
#pragma unroll
        for (int j = 0; j < kRepN * 4; ++j) rC[i][j] += rA[i] * rB[j];
    }
    __syncthreads();  // every thread is done with the tiles before the next step overwrites them
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

}  // namespace fs::gemm_v4
