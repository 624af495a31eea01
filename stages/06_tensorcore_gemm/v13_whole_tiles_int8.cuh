// flashstages · stage 06 · v13 — v10 with a main loop free of bounds in every block whose k-tiles all
// lie inside the matrix (int8 → int32, exact)
//
// What changes from v10: v12's change to v9 (gemm::WholeTileStream, whose comment says what the checked
// copies cost), and the epilogue of those blocks.
//  1. A block whose 128×256 tile lies inside M and N, when 64 divides K, copies with
//     gemm::WholeTileStream; every other block runs v10's loop with its checked copies (the loop is
//     written once and compiled twice, as in v12).
//  2. Such a block computing C = A·B (alpha 1, beta 0) stores its int32 sums as they are. v10's
//     epilogue rounds alpha·acc + beta·C in fp64 and checks the bounds of every pair, exact for any
//     integer alpha and beta: a large share of the instructions the kernel executes (NOTES.md), which
//     one block per SM runs with no MMAs to hide behind.
//  3. 16-byte copies only: where a base or a leading dimension is not 16-byte aligned (rows of
//     K = 1000 int8 are 8-byte aligned), the call is v10's.
// Everything else is v10's, the byte transpose of x-contiguous operands included; the results are
// bit-identical.
//
// Run: build/h100/stages/06_tensorcore_gemm/stage06_gemm --dtype int8 --trans-b 1 --version v13
//      build/h100/stages/06_tensorcore_gemm/stage06_bench --benchmark_filter='stage06/v1[03]/|cublaslt'
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "common/device/gemm_epilogue.cuh"
#include "common/device/sm80.cuh"
#include "stages/06_tensorcore_gemm/fragments.cuh"
#include "stages/06_tensorcore_gemm/scheduler.cuh"
#include "stages/06_tensorcore_gemm/tiles.cuh"

namespace fs::gemm_v13 {

// v10's tiles, pipeline and shared layout, unchanged.
constexpr int kBM = 128, kBN = 256, kBK = 64;             // block tile (k in int8: 64 bytes, as v9)
constexpr int kWM = 64, kWN = 64;                         // warp tile
constexpr int kMmaM = 16, kMmaN = 8, kMmaK = 32;          // mma.sync.m16n8k32.s8
constexpr int kFragsM = kWM / kMmaM, kFragsN = kWN / kMmaN;  // 4 × 8 accumulator tiles per warp
constexpr int kSteps = kBK / kMmaK;                       // 32-deep steps per k-tile: 2
constexpr int kThreads = (kBM / kWM) * (kBN / kWN) * 32;  // 256
constexpr int kStages = 4;
constexpr int kGroupM = 8;  // tile rows per group of the tile order
static_assert(kSteps >= 2, "the barrier sits before the last step, the copies go out in the first");

template <bool kTransA, bool kTransB>
struct Config {
  static constexpr bool kStageA = kTransA, kStageB = !kTransB;  // copied x-contiguous, transposed in smem
  using TileA = gemm::SwizzledTile<true, kBM, kBK, int8_t>;     // (128, 64): what the fragments read
  using TileB = gemm::SwizzledTile<true, kBN, kBK, int8_t>;     // (256, 64)
  using CopyA = gemm::SwizzledTile<!kTransA, kBM, kBK, int8_t>;  // as stored: TileA, or (64, 128)
  using CopyB = gemm::SwizzledTile<kTransB, kBN, kBK, int8_t>;   // as stored: TileB, or (64, 256)
  static constexpr int kStageBytes = CopyA::kBytes + CopyB::kBytes;  // 24576
  static constexpr int kPipeBytes = kStages * kStageBytes;          // 98304
  // After the pipeline: the k-contiguous rewrite of each staged operand, one buffer each.
  static constexpr int kStagedABytes = kStageA ? TileA::kBytes : 0, kStagedBBytes = kStageB ? TileB::kBytes : 0;
  static constexpr std::size_t kSmemBytes = std::size_t(kPipeBytes) + kStagedABytes + kStagedBBytes;
};

// grid: one block per 128×256 tile of C (1D, grouped order); block 256 = 2×4 warps, warp (wy, wx)
// owns rows m0 + wy·64 .. +63 and columns n0 + wx·64 .. +63. A, B, lda and ldb keep every row
// 16-byte aligned (the launcher's check). c_pairs: C's base and ldc allow 8-byte pair stores.
template <bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_v13_kernel(int64_t M, int64_t N, int64_t K, float alpha, const int8_t* __restrict__ A, int64_t lda,
                    const int8_t* __restrict__ B, int64_t ldb, float beta, int32_t* __restrict__ C, int64_t ldc,
                    bool c_pairs) {
  using Cfg = Config<kTransA, kTransB>;
  using TileA = typename Cfg::TileA;
  using TileB = typename Cfg::TileB;
  using CopyA = typename Cfg::CopyA;
  using CopyB = typename Cfg::CopyB;
  // (stages, CopyA then CopyB), then the staged rewrites of A and B (those that need one).
  extern __shared__ __align__(1024) unsigned char smem[];
  unsigned char* const stagedA = smem + Cfg::kPipeBytes;            // TileA, when kStageA
  unsigned char* const stagedB = stagedA + Cfg::kStagedABytes;      // TileB, when kStageB

  const int64_t tiles_m = (M + kBM - 1) / kBM, tiles_n = (N + kBN - 1) / kBN;
  int64_t tile_m, tile_n;
  gemm::grouped_tile<kGroupM>(blockIdx.x, tiles_m, tiles_n, tile_m, tile_n);
  const int64_t m0 = tile_m * kBM, n0 = tile_n * kBN;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / (kBN / kWN) * kWM, wn = warp % (kBN / kWN) * kWN;  // warp tile origin in the block
  const int64_t k_tiles = (K + kBK - 1) / kBK;

  // A block whose tile lies inside M and N, when BK divides K, copies only whole k-tiles: its main loop
  // takes WholeTileStream, without bounds. Every other block runs v10's loop, checked (SwizzledTileStream).
  const bool whole = m0 + kBM <= M && n0 + kBN <= N && K % kBK == 0;
  // Rewrites the x-contiguous operands of the tile in `stage` k-contiguous (no-op on the fast path).
  auto stage_operands = [&](int stage) {
    const unsigned char* sA = smem + stage * Cfg::kStageBytes;
    if constexpr (Cfg::kStageA) gemm::transpose_s8<CopyA, TileA, kThreads>(stagedA, sA, tid);
    if constexpr (Cfg::kStageB) gemm::transpose_s8<CopyB, TileB, kThreads>(stagedB, sA + CopyA::kBytes, tid);
    // The rewrites are complete before any warp loads fragments from them.
    if constexpr (Cfg::kStageA || Cfg::kStageB) __syncthreads();
  };

  // This lane's ldmatrix row offsets within a tile, for block (0, 0) of its warp tile; every other
  // block is a compile-time XOR and add away (gemm::ldmatrix_block_offset).
  const uint32_t smem0 = sm80::smem_address(smem);
  const uint32_t a_lane = gemm::ldmatrix_lane_offset<TileA, false>(lane, wm);
  const uint32_t b_lane = gemm::ldmatrix_lane_offset<TileB, true>(lane, wn);

  uint32_t rA[2][kFragsM][4];       // (2 buffers, 4 m16 tiles, 4 registers): A fragments of one 32-deep step
  uint32_t rB[2][kFragsN][2];       // (2 buffers, 8 n8 tiles, 2 registers): B fragments
  int32_t acc[kFragsM][kFragsN][4] = {};  // (4, 8) m16n8 accumulator tiles, 64×64 int32 per warp

  // Loads the fragments of 32-deep step s of tile in `stage` into buffer buf (staged operands from
  // their rewrite).
  auto load_fragments = [&](int buf, int stage, int s) {
    const uint32_t tA = Cfg::kStageA ? sm80::smem_address(stagedA) : smem0 + stage * Cfg::kStageBytes;
    const uint32_t tB = Cfg::kStageB ? sm80::smem_address(stagedB) : smem0 + stage * Cfg::kStageBytes + CopyA::kBytes;
#pragma unroll
    for (int i = 0; i < kFragsM; ++i) sm80::ldmatrix_x4(rA[buf][i], tA + gemm::ldmatrix_block_offset<TileA>(a_lane, s, i));
#pragma unroll
    for (int j = 0; j < kFragsN / 2; ++j) {  // one .x4: n8 tiles 2j and 2j+1
      uint32_t r[4];
      sm80::ldmatrix_x4(r, tB + gemm::ldmatrix_block_offset<TileB>(b_lane, s, j));
      rB[buf][2 * j][0] = r[0];
      rB[buf][2 * j][1] = r[1];
      rB[buf][2 * j + 1][0] = r[2];
      rB[buf][2 * j + 1][1] = r[3];
    }
  };

  // v10's main loop, once per kind of block (both inlined: a whole block's copies carry no bounds).
  auto main_loop = [&](auto whole_tag) {
    constexpr bool kWhole = decltype(whole_tag)::value;
    using StreamA = std::conditional_t<kWhole, gemm::WholeTileStream<CopyA, kThreads, int8_t>,
                                       gemm::SwizzledTileStream<CopyA, kThreads, 16, int8_t>>;
    using StreamB = std::conditional_t<kWhole, gemm::WholeTileStream<CopyB, kThreads, int8_t>,
                                       gemm::SwizzledTileStream<CopyB, kThreads, 16, int8_t>>;
    // This thread's copies of each k-tile of A and B, walking K.
    StreamA gA(A, lda, m0, M, K, tid);
    StreamB gB(B, ldb, n0, N, K, tid);
    // Issues the copies of the next k-tile into pipeline stage `stage`.
    auto load_next = [&](int stage) {
      unsigned char* sA = smem + stage * Cfg::kStageBytes;
      gA.copy(sA, A);
      gB.copy(sA + CopyA::kBytes, B);
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
    stage_operands(0);
    load_fragments(0, 0, 0);

    int read = 0, write = kStages - 1;  // the stage the fragments come from, the stage the copies go to
    for (int64_t kt = 0; kt < k_tiles; ++kt) {
#pragma unroll
      for (int s = 0; s < kSteps; ++s) {
        if (s == kSteps - 1) {
          sm80::cp_async_wait_group<kStages - 2>();  // this thread's copies of tile kt+1 have landed
          // Everyone's copies of tile kt+1 have landed. And every warp has loaded its last fragments of
          // tile kt (in step kSteps-2), from the pipeline and from the staged rewrites: after this
          // barrier the rewrites may be overwritten, and the copies issued in step 0 of tile kt+1 may
          // overwrite tile kt's stage.
          __syncthreads();
          read = read + 1 == kStages ? 0 : read + 1;
          stage_operands(read);
        }
        // The next step's fragments (from tile kt+1 after the last step; past the last tile they are
        // loaded from a stage of zeros or stale data and never used).
        load_fragments((s + 1) % 2, read, (s + 1) % kSteps);
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
          for (int j = 0; j < kFragsN; ++j) sm80::mma_m16n8k32_s8(acc[i][j], rA[s % 2][i], rB[s % 2][j][0], rB[s % 2][j][1]);
      }
    }
    sm80::cp_async_wait_group<0>();  // only empty groups remain; none may outlive the block
  };
  if (whole) main_loop(std::true_type{});
  else main_loop(std::false_type{});

  // Epilogue, from registers: lane 4g+t holds rows g and g+8, columns 2t and 2t+1 of each m16n8 tile.
  // A whole block computing C = A·B (alpha 1, beta 0, C pair-aligned) stores its sums as they are:
  // no bounds and no fp64 rounding, which would return them unchanged (round(1·x + 0) = x).
  const int g = lane / 4, t = lane % 4;
  const bool plain = whole && c_pairs && alpha == 1.0f && beta == 0.0f;
#pragma unroll
  for (int i = 0; i < kFragsM; ++i)
#pragma unroll
    for (int j = 0; j < kFragsN; ++j) {
      const int64_t m = m0 + wm + i * kMmaM + g, n = n0 + wn + j * kMmaN + 2 * t;
      if (plain) {
        *reinterpret_cast<int2*>(C + m * ldc + n) = make_int2(acc[i][j][0], acc[i][j][1]);
        *reinterpret_cast<int2*>(C + (m + 8) * ldc + n) = make_int2(acc[i][j][2], acc[i][j][3]);
      } else {
        gemm::store_pair(C, ldc, M, N, m, n, acc[i][j][0], acc[i][j][1], alpha, beta, c_pairs);
        gemm::store_pair(C, ldc, M, N, m + 8, n, acc[i][j][2], acc[i][j][3], alpha, beta, c_pairs);
      }
    }
}

}  // namespace fs::gemm_v13
