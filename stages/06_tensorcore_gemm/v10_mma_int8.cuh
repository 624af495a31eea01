// flashstages · stage 06 · v10 — INT8 through raw mma.sync.m16n8k32: int8 in, int32 out, exact
//
// What changes from v9: the element type, and with it the instruction and one extra path.
//  * mma.sync.m16n8k32.s8 (sm80::mma_m16n8k32_s8, IMMA.16832): k = 32 per instruction in the same
//    registers as v9's k = 16, at twice its rate, where v8's WMMA could only reach the k16 IMMA.16816.
//    The block tile is v9's in bytes: 128×256×64 int8, 4 stages of 24576 bytes.
//  * The int8 fragments are v9's with k four values wide (sm80.cuh's table): an A fragment 16×32 is
//    what one plain ldmatrix .x4 loads from a k-contiguous tile. That is the fast path, both operands
//    k-contiguous (A untransposed, B transposed: cuBLASLt's int8 layout, the benchmark's); everything
//    v9 does (swizzle, register double-buffering, one barrier per k-tile, pair stores) carries over.
//  * The other transposes: ldmatrix .trans swaps 16-bit values, not bytes. An x-contiguous operand is
//    copied as stored and, once its tile has landed, rewritten by the whole block into one
//    k-contiguous buffer (gemm::transpose_s8), then a second barrier, then the fragment loads.
//  * int32 accumulators, exact while |sum| <= 2^31 - 1 (as v8); the epilogue rounds alpha·acc +
//    beta·C in fp64 to int32, exact for integer alpha and beta.
// The copies are as wide as A and B allow (16, 8, 4 or 1 byte; gemm::copy_bytes), as in v9.
//
// Run: build/h100/stages/06_tensorcore_gemm/stage06_gemm --dtype int8 --trans-b 1 --version v10
//      build/h100/stages/06_tensorcore_gemm/stage06_bench --benchmark_filter='stage06/v10/|cublaslt'
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/gemm_epilogue.cuh"
#include "common/device/sm80.cuh"
#include "stages/06_tensorcore_gemm/fragments.cuh"
#include "stages/06_tensorcore_gemm/scheduler.cuh"
#include "stages/06_tensorcore_gemm/tiles.cuh"

namespace fs::gemm_v10 {

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
// owns rows m0 + wy·64 .. +63 and columns n0 + wx·64 .. +63.
// Per 32-deep step a warp issues 4 + 4 ldmatrix .x4 and 4×8 = 32 MMAs, 64 per k-tile. A staged operand
// adds per k-tile the rewrite (per 4×4 byte block four 32-bit loads, six PRMT, four 32-bit stores; a
// transposed A 2 blocks per thread, an untransposed B 4) and one barrier.
// kCopyBytes: 16, 8, 4 or 1. A row of K = 1000 int8 is 8-byte aligned: such shapes take 8-byte
// cp.async (twice the copy instructions of 16, the same pipeline); leading dimensions that are not a
// multiple of 4 copy byte by byte through registers, which the pipeline cannot hide.
// c_pairs: C's base and ldc allow 8-byte pair stores.
template <bool kTransA, bool kTransB, int kCopyBytes>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_v10_kernel(int64_t M, int64_t N, int64_t K, float alpha, const int8_t* __restrict__ A, int64_t lda,
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

  // This thread's copies of each k-tile of A and B, walking K.
  gemm::SwizzledTileStream<CopyA, kThreads, kCopyBytes, int8_t> gA(A, lda, m0, M, K, tid);
  gemm::SwizzledTileStream<CopyB, kThreads, kCopyBytes, int8_t> gB(B, ldb, n0, N, K, tid);
  // Issues the copies of the next k-tile into pipeline stage `stage`.
  auto load_next = [&](int stage) {
    unsigned char* sA = smem + stage * Cfg::kStageBytes;
    gA.copy(sA, A);
    gB.copy(sA + CopyA::kBytes, B);
    gA.advance();
    gB.advance();
  };
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

  // Epilogue, from registers: lane 4g+t holds rows g and g+8, columns 2t and 2t+1 of each m16n8 tile.
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int i = 0; i < kFragsM; ++i)
#pragma unroll
    for (int j = 0; j < kFragsN; ++j) {
      const int64_t m = m0 + wm + i * kMmaM + g, n = n0 + wn + j * kMmaN + 2 * t;
      gemm::store_pair(C, ldc, M, N, m, n, acc[i][j][0], acc[i][j][1], alpha, beta, c_pairs);
      gemm::store_pair(C, ldc, M, N, m + 8, n, acc[i][j][2], acc[i][j][3], alpha, beta, c_pairs);
    }
}

}  // namespace fs::gemm_v10
