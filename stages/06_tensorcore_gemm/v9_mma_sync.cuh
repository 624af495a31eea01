// flashstages · stage 06 · v9 — raw mma.sync: ldmatrix, a swizzled 4-stage cp.async pipeline (fp16, bf16)
//
// What changes from v7: the same block and warp tiles (128×256, 8 warps of 64×64), but the tensor
// cores are driven by hand instead of through WMMA, which hid the fragment layout:
//  1. mma.sync.m16n8k16 (sm80::mma_m16n8k16) on fragments loaded by ldmatrix (sm80::ldmatrix_x4,
//     _trans; the layouts are common/device/sm80.cuh's table): every transpose is served without a
//     copy, a k-contiguous operand by plain ldmatrix, an x-contiguous one by ldmatrix .trans.
//  2. A swizzled shared layout instead of padded rows (gemm::SwizzledTile): ldmatrix's 8 rows hit 8
//     different bank groups, and no byte is padding.
//  3. Fragments double-buffered in registers: those of step s+1 load while the MMAs of step s run,
//     across k-tiles too, so the LDSM latency (v7's short_scoreboard stall) hides behind 32 MMAs.
//  4. A 4-stage pipeline, 32 deep, one barrier per k-tile (drawn at the kernel).
//  5. The epilogue writes the accumulators straight from registers, a pair of columns per store.
// Inputs fp16 or bf16, C fp32, fp16 or bf16 (alpha·acc + beta·C in fp32, rounded once). The copies are
// as wide as A and B allow (16, 8, 4 or 2 bytes; gemm::copy_bytes). The block tile and the pipeline
// depth are a template parameter (Tiles) so that v11 can time other choices of the same kernel.
//
// Run: build/h100/stages/06_tensorcore_gemm/stage06_gemm --dtype fp16 --version v9
//      build/h100/stages/06_tensorcore_gemm/stage06_bench --benchmark_filter='stage06/v9/|cublas/fp16'
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/lib/flashstages.h"
#include "common/device/gemm_epilogue.cuh"
#include "common/device/sm80.cuh"
#include "stages/06_tensorcore_gemm/fragments.cuh"
#include "stages/06_tensorcore_gemm/scheduler.cuh"
#include "stages/06_tensorcore_gemm/tiles.cuh"

namespace fs::gemm_v9 {

constexpr int kWM = 64, kWN = 64;                         // warp tile
constexpr int kMmaM = 16, kMmaN = 8, kMmaK = 16;          // mma.sync.m16n8k16
constexpr int kFragsM = kWM / kMmaM, kFragsN = kWN / kMmaN;  // 4 × 8 accumulator tiles per warp
constexpr int kGroupM = 8;  // tile rows per group of the tile order

// A block tile and its pipeline: BM × BN of C per block, in warps of 64×64, k-tiles BK deep (in
// elements), Stages of them in shared memory. v9 runs V9Tiles; v11 (v11_autotune.cuh) times others.
template <int BM, int BN, int BK, int Stages>
struct Tiles {
  static constexpr int kBM = BM, kBN = BN, kBK = BK, kStages = Stages;
  static constexpr int kSteps = kBK / kMmaK;                       // 16-deep steps per k-tile
  static constexpr int kThreads = (kBM / kWM) * (kBN / kWN) * 32;  // a warp per 64×64 of C
  static_assert(kBM % kWM == 0 && kBN % kWN == 0, "whole warp tiles");
  // The barrier sits before the last step and the copies go out in the first; the fragment buffers
  // alternate by step, so an even step count brings every k-tile back to buffer 0.
  static_assert(kSteps >= 2 && kSteps % 2 == 0, "an even number of 16-deep steps, at least 2");
  static_assert(kStages >= 2, "the next k-tile lands while this one is read");

  template <bool kTransA, bool kTransB>
  struct Smem {
    // Raw 16-bit storage: the copies move bits, only the MMA knows fp16 from bf16.
    using TileA = gemm::SwizzledTile<!kTransA, kBM, kBK, uint16_t>;  // (BM, BK) or (BK, BM) as stored
    using TileB = gemm::SwizzledTile<kTransB, kBN, kBK, uint16_t>;   // (BN, BK) or (BK, BN) as stored
    static constexpr int kStageBytes = TileA::kBytes + TileB::kBytes;
    static constexpr std::size_t kSmemBytes = std::size_t(kStages) * kStageBytes;
  };
};

using V9Tiles = Tiles<128, 256, 32, 4>;  // 8 warps; a stage is 128·32·2 + 256·32·2 = 24576 bytes
template <bool kTransA, bool kTransB>
using Config = V9Tiles::Smem<kTransA, kTransB>;  // 4 stages: 98304 bytes

// grid: one block per BM×BN tile of C (1D, grouped order); block: (BM/64)×(BN/64) warps, warp (wy, wx)
// owns rows m0 + wy·64 .. +63 and columns n0 + wx·64 .. +63 (V9Tiles: 2×4 warps, 256 threads).
// T: __half or __nv_bfloat16. c_dtype: FS_FP32, FS_FP16 or FS_BF16, whatever T is (the accumulators are
// fp32, rounded once at the store). kCopyBytes: 16, 8, 4 or 2: 16 is cp.async.cg, 8 and 4 cp.async.ca
// with 2× and 4× the copy instructions, the same pipeline; 2 (odd leading dimensions) copies element by
// element through registers, which the pipeline cannot hide. Copies outside the matrix zero-fill.
// c_pairs: C's base and ldc keep even columns 2-element aligned (pair stores: 8 bytes of fp32, 4 of
// fp16/bf16, so a quad of lanes fills a 32-byte sector); the epilogue stores only inside C.
// The pipeline: one barrier per k-tile, placed before the last 16-deep step, when the next tile's first
// fragments are needed (V9Tiles: 2 steps, 4 stages):
//   prologue: issue tiles 0..2 (one commit group each) | wait tile 0 | barrier | fragments (0, s0)
//   step kt:  s0: load fragments (kt, s1) | issue tile kt+3 into the stage of kt-1, commit | MMAs s0
//             s1: wait tile kt+1 | barrier | load fragments (kt+1, s0) | MMAs s1
// Registers: 64×64 fp32 accumulators are 128 per lane, the two fragment buffers 2·(16 + 16) = 64;
// __launch_bounds__(256, 1) allows 255: one block of 8 warps per SM (2 per scheduler).
template <class Tl, class T, bool kTransA, bool kTransB, int kCopyBytes>
__global__ void __launch_bounds__(Tl::kThreads, 1)
    gemm_v9_kernel(int64_t M, int64_t N, int64_t K, float alpha, const T* __restrict__ A, int64_t lda,
                   const T* __restrict__ B, int64_t ldb, float beta, void* __restrict__ C, int64_t ldc,
                   int32_t c_dtype, bool c_pairs) {
  constexpr int kBM = Tl::kBM, kBN = Tl::kBN, kBK = Tl::kBK, kStages = Tl::kStages;
  constexpr int kSteps = Tl::kSteps, kThreads = Tl::kThreads;
  using Cfg = typename Tl::template Smem<kTransA, kTransB>;
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

  // This thread's copies of each k-tile of A and B, walking K.
  gemm::SwizzledTileStream<TileA, kThreads, kCopyBytes, uint16_t> gA(reinterpret_cast<const uint16_t*>(A), lda, m0,
                                                                     M, K, tid);
  gemm::SwizzledTileStream<TileB, kThreads, kCopyBytes, uint16_t> gB(reinterpret_cast<const uint16_t*>(B), ldb, n0,
                                                                     N, K, tid);
  // Issues the copies of the next k-tile into pipeline stage `stage`.
  auto load_next = [&](int stage) {
    unsigned char* sA = smem + stage * Cfg::kStageBytes;
    gA.copy(sA, reinterpret_cast<const uint16_t*>(A));
    gB.copy(sA + TileA::kBytes, reinterpret_cast<const uint16_t*>(B));
    gA.advance();
    gB.advance();
  };

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

}  // namespace fs::gemm_v9
