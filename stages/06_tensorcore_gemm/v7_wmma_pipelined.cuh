// flashstages · stage 06 · v7 — WMMA made fast: cp.async pipeline, 16 fragments per warp (fp16)
//
// What changes from v6, three things that only pay together:
//  1. Several fragments per warp: a 128×256×64 block tile, 8 warps in 2×4, each owning 64×64 as 4×4
//     accumulators (128 registers per lane); per 16-deep step 4 A and 4 B fragment loads feed 16 MMAs,
//     2 MMAs per load instead of v6's 1.
//  2. A 3-stage cp.async pipeline (gemm::AsyncTileStream): copies go global -> shared without passing
//     through registers, 16 bytes each, and the block keeps 2 tiles in flight while it computes on the
//     3rd (the schedule is drawn at the kernel). Operands that are not 16-byte aligned are copied
//     element by element throughout: same kernel, same results, slower.
//  3. Shared rows padded by 8 halves, so the eight 16-byte row segments that one fragment-load phase
//     (LDSM) reads fall on eight different groups of 4 banks: no bank conflicts. Tiles are handed out
//     in groups of 8 tile rows (gemm::grouped_tile) so that the blocks running together share A and B
//     in L2. The epilogue stages each warp's 16×64 strip of accumulators through shared memory.
// What it still lacks: control of its own latency, and Hopper's own paths. WMMA compiles to mma.sync
// (HMMA.16816, fed from registers through LDSM, one warp at a time), and its profile (NOTES.md) shows
// the warps stalled on fixed latencies and on LDSM results. Raw mma.sync with ldmatrix, a swizzled
// layout and a deeper pipeline is the next step (v9).
//
// Run: build/h100/stages/06_tensorcore_gemm/stage06_gemm --dtype fp16 --version v7
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>
#include <type_traits>

#include "common/device/sm80.cuh"
#include "stages/06_tensorcore_gemm/epilogue.cuh"
#include "stages/06_tensorcore_gemm/scheduler.cuh"
#include "stages/06_tensorcore_gemm/tiles.cuh"

namespace fs::gemm_v7 {

namespace wmma = nvcuda::wmma;

constexpr int kBM = 128, kBN = 256, kBK = 64;  // block tile
constexpr int kWM = 64, kWN = 64;              // warp tile: 4×4 fragments
constexpr int kF = 16;                         // fragment edge: WMMA m16n16k16
constexpr int kThreads = (kBM / kWM) * (kBN / kWN) * 32;  // 256
constexpr int kStages = 3;
constexpr int kPad = 8;                        // halves per shared row
constexpr int kLdC = kWN + 4;                  // floats per row of a warp's staging strip
constexpr int kGroupM = 8;                     // tile rows per group of the tile order

template <bool kTransA, bool kTransB>
struct Config {
  using TileA = gemm::PaddedTile<!kTransA, kBM, kBK, kPad>;
  using TileB = gemm::PaddedTile<kTransB, kBN, kBK, kPad>;
  static constexpr int kStageElems = TileA::kElems + TileB::kElems;
  static constexpr std::size_t kPipeBytes = std::size_t(kStages) * kStageElems * sizeof(__half);
  static constexpr std::size_t kStagingBytes = std::size_t(kThreads / 32) * kF * kLdC * sizeof(float);
  static constexpr std::size_t kSmemBytes = kPipeBytes > kStagingBytes ? kPipeBytes : kStagingBytes;
};

// grid: one block per 128×256 tile of C (1D, grouped order); block 256 = 2×4 warps, warp (wy, wx)
// owns rows m0 + wy·64 .. +63 and columns n0 + wx·64 .. +63.
// vec_a, vec_b: the operand allows 16-byte copies (16-byte aligned base, ld a multiple of 8).
// The pipeline, 64-deep k-tiles (4 MMA steps per barrier), 3 stages (docs/06_tensorcore_gemm.md draws
// the timeline, step by step):
//   prologue: issue tiles 0, 1 (one commit group each)
//   step kt:  wait for tile kt (wait_group<1>) | barrier | first 16-deep MMAs | issue tile kt+2
//             into stage (kt+2) % 3, commit | the other MMAs on stage kt % 3
// The padded row strides, 144, 272 and 528 bytes, are odd multiples of 16: the 8 rows of an LDSM phase
// start on 8 different groups of 4 banks.
template <bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_v7_kernel(int64_t M, int64_t N, int64_t K, float alpha, const __half* __restrict__ A, int64_t lda,
                   const __half* __restrict__ B, int64_t ldb, float beta, void* __restrict__ C, int64_t ldc,
                   bool c_fp16, bool vec_a, bool vec_b) {
  using Cfg = Config<kTransA, kTransB>;
  using TileA = typename Cfg::TileA;
  using TileB = typename Cfg::TileB;
  constexpr bool kAk = !kTransA, kBk = kTransB;  // is the operand stored k-contiguous?
  using LayoutA = std::conditional_t<kAk, wmma::row_major, wmma::col_major>;
  using LayoutB = std::conditional_t<kBk, wmma::col_major, wmma::row_major>;
  // (stages, TileA then TileB): each stage holds op(A) and op(B) as stored, rows padded by 8 halves.
  extern __shared__ __align__(128) unsigned char smem[];
  __half* const pipe = reinterpret_cast<__half*>(smem);

  const int64_t tiles_m = (M + kBM - 1) / kBM, tiles_n = (N + kBN - 1) / kBN;
  int64_t tile_m, tile_n;
  gemm::grouped_tile<kGroupM>(blockIdx.x, tiles_m, tiles_n, tile_m, tile_n);
  const int64_t m0 = tile_m * kBM, n0 = tile_n * kBN;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / (kBN / kWN) * kWM, wn = warp % (kBN / kWN) * kWN;  // warp tile origin in the block
  const int64_t k_tiles = (K + kBK - 1) / kBK;

  // This thread's 16-byte copies of each k-tile of A and B, walking K.
  gemm::AsyncTileStream<TileA, kThreads, __half> gA(A, lda, m0, M, K, tid);
  gemm::AsyncTileStream<TileB, kThreads, __half> gB(B, ldb, n0, N, K, tid);
  int64_t next_k0 = 0;  // the k-tile the streams point at
  // Issues the copies of the next k-tile into pipeline stage `stage`.
  auto load_next = [&](int stage) {
    __half* sA = pipe + stage * Cfg::kStageElems;
    __half* sB = sA + TileA::kElems;
    if (vec_a) {
      gA.copy(sA);
    } else {  // stored origin and extents: (m0, k0) of an (M, K) matrix, or (k0, m0) of a (K, M) one
      gemm::copy_tile_elements<TileA, kThreads>(sA, A, lda, kAk ? m0 : next_k0, kAk ? next_k0 : m0, kAk ? M : K,
                                                kAk ? K : M, tid);
    }
    if (vec_b) {
      gB.copy(sB);
    } else {
      gemm::copy_tile_elements<TileB, kThreads>(sB, B, ldb, kBk ? n0 : next_k0, kBk ? next_k0 : n0, kBk ? N : K,
                                                kBk ? K : N, tid);
    }
    gA.advance();
    gB.advance();
    next_k0 += kBK;
  };

  wmma::fragment<wmma::accumulator, kF, kF, kF, float> acc[kWM / kF][kWN / kF];  // (4, 4) of 16×16
#pragma unroll
  for (int i = 0; i < kWM / kF; ++i)
#pragma unroll
    for (int j = 0; j < kWN / kF; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  // Prologue: tiles 0 .. kStages-2 in flight. Every step commits exactly one group (possibly empty)
  // so that "wait until kStages-2 groups remain" always means "this step's tile has landed".
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles) load_next(s);
    sm80::cp_async_commit_group();
  }

  for (int64_t kt = 0; kt < k_tiles; ++kt) {
    sm80::cp_async_wait_group<kStages - 2>();  // this thread's copies of tile kt have landed
    // Everyone's copies of tile kt have landed (and element-copied stores are visible); and every
    // warp has finished the MMAs of step kt-1, so its stage, (kt-1) % kStages, may be refilled.
    __syncthreads();

    const __half* sA = pipe + int(kt % kStages) * Cfg::kStageElems;
    const __half* sB = sA + TileA::kElems;
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
      // The copies of tile kt + kStages - 1 go out after the first MMAs of this step, not before
      // them: right after the barrier every warp wants the tensor cores at once (faster: NOTES.md, v7).
      if (kk == 0) {
        if (kt + kStages - 1 < k_tiles) load_next(int((kt + kStages - 1) % kStages));
        sm80::cp_async_commit_group();
      }
    }
  }

  // Epilogue. The staging strips alias the pipeline buffers: no copy may still be landing (only empty
  // groups remain, but wait anyway) and every warp must be done reading them.
  sm80::cp_async_wait_group<0>();
  __syncthreads();
  float* strip = reinterpret_cast<float*>(smem) + warp * kF * kLdC;  // (16, 64+4): one row of fragments
#pragma unroll
  for (int i = 0; i < kWM / kF; ++i) {
#pragma unroll
    for (int j = 0; j < kWN / kF; ++j) wmma::store_matrix_sync(strip + j * kF, acc[i][j], kLdC, wmma::mem_row_major);
    __syncwarp();  // the strip is complete before lanes read each other's values
    const int64_t m = m0 + wm + i * kF, n = n0 + wn;
    if (c_fp16)
      gemm::store_staged(static_cast<__half*>(C), ldc, M, N, m, n, strip, kLdC, kF, kWN, alpha, beta, lane, 32);
    else
      gemm::store_staged(static_cast<float*>(C), ldc, M, N, m, n, strip, kLdC, kF, kWN, alpha, beta, lane, 32);
    __syncwarp();  // every lane has read the strip before the next row of fragments overwrites it
  }
}

}  // namespace fs::gemm_v7
