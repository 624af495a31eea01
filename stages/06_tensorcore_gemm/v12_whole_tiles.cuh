// flashstages · stage 06 · v12 — v9 with a main loop free of bounds in every block whose k-tiles all
// lie inside the matrix (fp16, bf16)
//
// What changes from v9: only the copies. v9's tile stream (gemm::SwizzledTileStream) checks in every
// k-tile whether its copies lie inside the matrix: 64-bit compares, branches, predicates saved to a
// register and back, address arithmetic, between one k-tile's MMAs and the next (NOTES.md: what its
// profile shows).
//  1. A block whose 128×256 tile lies inside M and N, when 32 divides K, copies with
//     gemm::WholeTileStream: one pointer and one shared offset per operand, a 64-bit add and a
//     cp.async per copy, the copies' shared addresses a compile-time step apart.
//  2. Every other block (a tile on the right or bottom edge, or any block when K has a tail) runs
//     v9's loop with its checked copies. The main loop is written once and compiled twice, one copy
//     per kind of block; the choice is made once, the same for every thread of the block.
//  3. 16-byte copies only: where a base or a leading dimension is not 16-byte aligned, the call is
//     v9's, which copies 8, 4 or 2 bytes at a time.
// Everything else is v9's at its own tiles; the results are bit-identical to v9's.
//
// Run: build/h100/stages/06_tensorcore_gemm/stage06_gemm --dtype fp16 --version v12
//      build/h100/stages/06_tensorcore_gemm/stage06_bench --benchmark_filter='stage06/v(9|12)/|cublas/fp16'
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "common/lib/flashstages.h"
#include "common/device/gemm_epilogue.cuh"
#include "common/device/sm80.cuh"
#include "stages/06_tensorcore_gemm/fragments.cuh"
#include "stages/06_tensorcore_gemm/scheduler.cuh"
#include "stages/06_tensorcore_gemm/tiles.cuh"

namespace fs::gemm_v12 {

// v9's tiles (its V9Tiles, written out), pipeline and shared layout, unchanged.
constexpr int kBM = 128, kBN = 256, kBK = 32;             // block tile
constexpr int kWM = 64, kWN = 64;                         // warp tile
constexpr int kMmaM = 16, kMmaN = 8, kMmaK = 16;          // mma.sync.m16n8k16
constexpr int kFragsM = kWM / kMmaM, kFragsN = kWN / kMmaN;  // 4 × 8 accumulator tiles per warp
constexpr int kSteps = kBK / kMmaK;                       // 16-deep steps per k-tile: 2
constexpr int kThreads = (kBM / kWM) * (kBN / kWN) * 32;  // 256
constexpr int kStages = 4;
constexpr int kGroupM = 8;  // tile rows per group of the tile order

template <bool kTransA, bool kTransB>
struct Config {
  // Raw 16-bit storage: the copies move bits, only the MMA knows fp16 from bf16.
  using TileA = gemm::SwizzledTile<!kTransA, kBM, kBK, uint16_t>;  // (128, 32) or (32, 128) as stored
  using TileB = gemm::SwizzledTile<kTransB, kBN, kBK, uint16_t>;   // (256, 32) or (32, 256) as stored
  static constexpr int kStageBytes = TileA::kBytes + TileB::kBytes;               // 24576
  static constexpr std::size_t kSmemBytes = std::size_t(kStages) * kStageBytes;  // 98304
};

// grid: one block per 128×256 tile of C (1D, grouped order); block: 2×4 warps, warp (wy, wx) owns rows
// m0 + wy·64 .. +63 and columns n0 + wx·64 .. +63. T: __half or __nv_bfloat16. c_dtype: FS_FP32, FS_FP16
// or FS_BF16, whatever T is. A, B, lda and ldb keep every row 16-byte aligned (the launcher's check).
// c_pairs: C's base and ldc keep even columns 2-element aligned (pair stores).
template <class T, bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_v12_kernel(int64_t M, int64_t N, int64_t K, float alpha, const T* __restrict__ A, int64_t lda,
                   const T* __restrict__ B, int64_t ldb, float beta, void* __restrict__ C, int64_t ldc,
                   int32_t c_dtype, bool c_pairs) {
  using Cfg = Config<kTransA, kTransB>;
  using TileA = typename Cfg::TileA;
  using TileB = typename Cfg::TileB;
  // (stages, TileA then TileB): each stage holds op(A) and op(B) as stored, swizzled.
  extern __shared__ __align__(1024) unsigned char smem[];

  const int64_t tiles_m = (M + kBM - 1) / kBM, tiles_n = (N + kBN - 1) / kBN;
  int64_t tile_m, tile_n;
  gemm::grouped_tile<kGroupM>(blockIdx.x, tiles_m, tiles_n, tile_m, tile_n);
  const int64_t m0 = tile_m * kBM, n0 = tile_n * kBN;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / (kBN / kWN) * kWM, wn = warp % (kBN / kWN) * kWN;  // warp tile origin in the block
  const int64_t k_tiles = (K + kBK - 1) / kBK;

  // A block whose tile lies inside M and N, when BK divides K, copies only whole k-tiles: its main loop
  // takes WholeTileStream, without bounds. Every other block runs v9's loop, checked (SwizzledTileStream).
  const bool whole = m0 + kBM <= M && n0 + kBN <= N && K % kBK == 0;

  // This lane's ldmatrix row offsets within a stage, for block (0, 0) of its warp tile; every other
  // block is a compile-time XOR and add away (gemm::ldmatrix_block_offset).
  const uint32_t smem0 = sm80::smem_address(smem);
  const uint32_t a_lane = gemm::ldmatrix_lane_offset<TileA, false>(lane, wm);
  const uint32_t b_lane = gemm::ldmatrix_lane_offset<TileB, true>(lane, wn);

  uint32_t rA[2][kFragsM][4];     // (2 buffers, 4 m16 tiles, 4 registers): A fragments of one 16-deep step
  uint32_t rB[2][kFragsN][2];     // (2 buffers, 8 n8 tiles, 2 registers): B fragments
  float acc[kFragsM][kFragsN][4] = {};  // (4, 8) m16n8 accumulator tiles, 64×64 fp32 per warp

  // Loads the fragments of 16-deep step s of the tile in the stage at `stage_addr` into buffer buf.
  auto load_fragments = [&](int buf, uint32_t stage_addr, int s) {
#pragma unroll
    for (int i = 0; i < kFragsM; ++i) {
      const uint32_t addr = stage_addr + gemm::ldmatrix_block_offset<TileA>(a_lane, s, i);
      if constexpr (TileA::kKContig) sm80::ldmatrix_x4(rA[buf][i], addr);
      else sm80::ldmatrix_x4_trans(rA[buf][i], addr);
    }
#pragma unroll
    for (int j = 0; j < kFragsN / 2; ++j) {  // one .x4: n8 tiles 2j and 2j+1
      const uint32_t addr = stage_addr + TileA::kBytes + gemm::ldmatrix_block_offset<TileB>(b_lane, s, j);
      uint32_t r[4];
      if constexpr (TileB::kKContig) sm80::ldmatrix_x4(r, addr);
      else sm80::ldmatrix_x4_trans(r, addr);
      rB[buf][2 * j][0] = r[0];
      rB[buf][2 * j][1] = r[1];
      rB[buf][2 * j + 1][0] = r[2];
      rB[buf][2 * j + 1][1] = r[3];
    }
  };

  // v9's main loop, once per kind of block (both inlined: a whole block's copies carry no bounds).
  auto main_loop = [&](auto whole_tag) {
    constexpr bool kWhole = decltype(whole_tag)::value;
    using StreamA = std::conditional_t<kWhole, gemm::WholeTileStream<TileA, kThreads, uint16_t>,
                                       gemm::SwizzledTileStream<TileA, kThreads, 16, uint16_t>>;
    using StreamB = std::conditional_t<kWhole, gemm::WholeTileStream<TileB, kThreads, uint16_t>,
                                       gemm::SwizzledTileStream<TileB, kThreads, 16, uint16_t>>;
    // This thread's copies of each k-tile of A and B, walking K.
    StreamA gA(reinterpret_cast<const uint16_t*>(A), lda, m0, M, K, tid);
    StreamB gB(reinterpret_cast<const uint16_t*>(B), ldb, n0, N, K, tid);
    // Issues the copies of the next k-tile into pipeline stage `stage`.
    auto load_next = [&](int stage) {
      unsigned char* sA = smem + stage * Cfg::kStageBytes;
      gA.copy(sA, reinterpret_cast<const uint16_t*>(A));
      gB.copy(sA + TileA::kBytes, reinterpret_cast<const uint16_t*>(B));
      gA.advance();
      gB.advance();
    };

    // Prologue: tiles 0 .. kStages-2 in flight. Every step commits exactly one group (possibly empty)
    // so that "wait until kStages-2 groups remain" always means "the next tile has landed".
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < k_tiles) load_next(s);
      sm80::cp_async_commit_group();
    }
    sm80::cp_async_wait_group<kStages - 2>();  // this thread's copies of tile 0 have landed
    __syncthreads();                           // everyone's (and element-copied stores are visible)
    load_fragments(0, smem0, 0);

    int read = 0, write = kStages - 1;  // the stage the fragments come from, the stage the copies go to
    for (int64_t kt = 0; kt < k_tiles; ++kt) {
#pragma unroll
      for (int s = 0; s < kSteps; ++s) {
        if (s == kSteps - 1) {
          sm80::cp_async_wait_group<kStages - 2>();  // this thread's copies of tile kt+1 have landed
          // Everyone's copies of tile kt+1 have landed. And every warp has loaded its last fragments of
          // tile kt (they were loaded in step kSteps-2): after this barrier the copies issued in step 0
          // of tile kt+1 may overwrite tile kt's stage.
          __syncthreads();
          read = read + 1 == kStages ? 0 : read + 1;
        }
        // The next step's fragments (from tile kt+1 after the last step; past the last tile they are
        // loaded from a stage of zeros or stale data and never used).
        load_fragments((s + 1) % 2, smem0 + read * Cfg::kStageBytes, (s + 1) % kSteps);
        if (s == 0) {
          // Stage `write` held tile kt-1, whose fragments every warp finished loading before the
          // barrier of step kSteps-1 of tile kt-1.
          if (kt + kStages - 1 < k_tiles) load_next(write);
          sm80::cp_async_commit_group();
          write = write + 1 == kStages ? 0 : write + 1;
        }
#pragma unroll
        for (int i = 0; i < kFragsM; ++i)
#pragma unroll
          for (int j = 0; j < kFragsN; ++j) sm80::mma_m16n8k16<T>(acc[i][j], rA[s % 2][i], rB[s % 2][j][0], rB[s % 2][j][1]);
      }
    }
    sm80::cp_async_wait_group<0>();  // only empty groups remain; none may outlive the block
  };
  if (whole) main_loop(std::true_type{});
  else main_loop(std::false_type{});

  // Epilogue, from registers: lane 4g+t holds rows g and g+8, columns 2t and 2t+1 of each m16n8 tile.
  const int g = lane / 4, t = lane % 4;
  auto store = [&](auto* c_out) {
#pragma unroll
    for (int i = 0; i < kFragsM; ++i)
#pragma unroll
      for (int j = 0; j < kFragsN; ++j) {
        const int64_t m = m0 + wm + i * kMmaM + g, n = n0 + wn + j * kMmaN + 2 * t;
        const float* c = acc[i][j];
        gemm::store_pair(c_out, ldc, M, N, m, n, c[0], c[1], alpha, beta, c_pairs);
        gemm::store_pair(c_out, ldc, M, N, m + 8, n, c[2], c[3], alpha, beta, c_pairs);
      }
  };
  if (c_dtype == FS_FP16) store(static_cast<__half*>(C));
  else if (c_dtype == FS_BF16) store(static_cast<__nv_bfloat16*>(C));
  else store(static_cast<float*>(C));
}

}  // namespace fs::gemm_v12
