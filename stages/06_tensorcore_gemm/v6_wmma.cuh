// flashstages · stage 06 · v6 — tensor cores through WMMA (fp16 in, fp32 accumulate, fp32 or fp16 out)
//
// What changes from v5: the inner product moves from FFMA to the tensor cores. A warp holds its part of
// the tile as WMMA fragments, opaque per-lane register sets of a 16×16 matrix, and one
// wmma::mma_sync multiplies a 16×16×16 block (8192 FLOP) that took 4096 FFMAs in v5:
//   load_matrix_sync(a, sA + …, ldm)   stands for: each lane loads its share of a 16×16 op(A) block
//   load_matrix_sync(b, sB + …, ldm)   the same for op(B)
//   mma_sync(acc, a, b, acc)           acc (16×16, fp32) += a (16×16, fp16) · b (16×16, fp16)
//   store_matrix_sync(sC + …, acc, …)  each lane writes its share of acc back to memory
// Tiles: block 64×64×32, 4 warps in 2×2, each a 32×32 warp tile = 2×2 accumulator fragments. Shared
// tiles keep the operands' stored orientation (gemm::PaddedTile), which the fragment layout reads
// either way; the accumulators go out through shared memory (gemm::store_staged).
// What it still lacks: tiles are copied element by element and synchronously, and a warp does 4 MMAs
// per 4 fragment loads; the tensor cores mostly wait, and v6 runs below v5's fp32 (v7 pipelines
// 16-byte async copies and gives each warp 16 accumulators).
//
// Run: build/h100/stages/06_tensorcore_gemm/stage06_gemm --dtype fp16 --version v6
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>
#include <type_traits>

#include "stages/06_tensorcore_gemm/epilogue.cuh"
#include "stages/06_tensorcore_gemm/tiles.cuh"

namespace fs::gemm_v6 {

namespace wmma = nvcuda::wmma;

constexpr int kBM = 64, kBN = 64, kBK = 32;  // block tile
constexpr int kWM = 32, kWN = 32;            // warp tile
constexpr int kF = 16;                       // fragment edge: WMMA m16n16k16
constexpr int kThreads = (kBM / kWM) * (kBN / kWN) * 32;  // 128
constexpr int kPad = 8;                      // halves per shared row
constexpr int kLdC = kBN + 4;                // floats per sC row: ldm a multiple of 4

// Shared tiles keep each operand's stored orientation, and the fragment layout reads them either way:
//
//   A (M, K) -> sA[BM][BK+8], matrix_a row_major      A (K, M) -> sA[BK][BM+8], matrix_a col_major
//   B (K, N) -> sB[BK][BN+8], matrix_b row_major      B (N, K) -> sB[BN][BK+8], matrix_b col_major
//
// The +8 halves keep ldm a multiple of 8 (WMMA's rule) and every fragment 32-byte aligned. The
// accumulators go through shared memory (sC) on the way out, so the epilogue can apply alpha, beta,
// the tails and the output type element by element.
//
// grid: one block per 64×64 tile of C (1D, tile_n fastest); block 128 = 2×2 warps, warp (wy, wx)
// owns rows m0 + wy·32 .. +31 and columns n0 + wx·32 .. +31.
template <bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kThreads)
    gemm_v6_kernel(int64_t M, int64_t N, int64_t K, float alpha, const __half* __restrict__ A, int64_t lda,
                   const __half* __restrict__ B, int64_t ldb, float beta, void* __restrict__ C, int64_t ldc,
                   bool c_fp16) {
  constexpr bool kAk = !kTransA, kBk = kTransB;  // is the operand stored k-contiguous?
  using TileA = gemm::PaddedTile<kAk, kBM, kBK, kPad>;
  using TileB = gemm::PaddedTile<kBk, kBN, kBK, kPad>;
  using LayoutA = std::conditional_t<kAk, wmma::row_major, wmma::col_major>;
  using LayoutB = std::conditional_t<kBk, wmma::col_major, wmma::row_major>;
  __shared__ __align__(32) __half sA[TileA::kElems];  // (BM, BK+8) or (BK, BM+8): op(A) as stored
  __shared__ __align__(32) __half sB[TileB::kElems];  // (BK, BN+8) or (BN, BK+8): op(B) as stored
  __shared__ __align__(32) float sC[kBM * kLdC];      // (BM, BN+4) accumulators on the way out

  const int64_t tiles_n = (N + kBN - 1) / kBN;
  const int64_t m0 = blockIdx.x / tiles_n * kBM, n0 = blockIdx.x % tiles_n * kBN;
  const int tid = threadIdx.x, warp = tid / 32;
  const int wm = warp / (kBN / kWN) * kWM, wn = warp % (kBN / kWN) * kWN;  // warp tile origin in the block

  wmma::fragment<wmma::accumulator, kF, kF, kF, float> acc[kWM / kF][kWN / kF];  // (2, 2) of 16×16
#pragma unroll
  for (int i = 0; i < kWM / kF; ++i)
#pragma unroll
    for (int j = 0; j < kWN / kF; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  for (int64_t k0 = 0; k0 < K; k0 += kBK) {
    // Stored origin and extents: (m0, k0) of an (M, K) matrix, or (k0, m0) of a (K, M) one.
    gemm::copy_tile_elements<TileA, kThreads>(sA, A, lda, kAk ? m0 : k0, kAk ? k0 : m0, kAk ? M : K, kAk ? K : M, tid);
    gemm::copy_tile_elements<TileB, kThreads>(sB, B, ldb, kBk ? n0 : k0, kBk ? k0 : n0, kBk ? N : K, kBk ? K : N, tid);
    __syncthreads();  // both tiles are complete before any warp loads fragments from them

#pragma unroll
    for (int kk = 0; kk < kBK; kk += kF) {
      wmma::fragment<wmma::matrix_a, kF, kF, kF, __half, LayoutA> a[kWM / kF];
      wmma::fragment<wmma::matrix_b, kF, kF, kF, __half, LayoutB> b[kWN / kF];
#pragma unroll
      for (int i = 0; i < kWM / kF; ++i) wmma::load_matrix_sync(a[i], sA + TileA::frag(wm + i * kF, kk), TileA::kLd);
#pragma unroll
      for (int j = 0; j < kWN / kF; ++j) wmma::load_matrix_sync(b[j], sB + TileB::frag(wn + j * kF, kk), TileB::kLd);
#pragma unroll
      for (int i = 0; i < kWM / kF; ++i)
#pragma unroll
        for (int j = 0; j < kWN / kF; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // every warp is done with the tiles before the next step overwrites them
  }

#pragma unroll
  for (int i = 0; i < kWM / kF; ++i)
#pragma unroll
    for (int j = 0; j < kWN / kF; ++j)
      wmma::store_matrix_sync(sC + (wm + i * kF) * kLdC + wn + j * kF, acc[i][j], kLdC, wmma::mem_row_major);
  __syncthreads();  // the whole accumulator tile is in sC before threads read other warps' parts
  if (c_fp16)
    gemm::store_staged(static_cast<__half*>(C), ldc, M, N, m0, n0, sC, kLdC, kBM, kBN, alpha, beta, tid, kThreads);
  else
    gemm::store_staged(static_cast<float*>(C), ldc, M, N, m0, n0, sC, kLdC, kBM, kBN, alpha, beta, tid, kThreads);
}

}  // namespace fs::gemm_v6
