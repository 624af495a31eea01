// flashstages · stage 06 · v14 — v12 with no block left on the checked loop: a tile that reaches past M
// or N moves back inside, and K's tail becomes a first, partial k-tile (fp16, bf16)
//
// What changes from v12: which blocks copy without bounds. v12's unchecked loop runs only in blocks
// whose 128×256 tile lies inside M and N when 32 divides K; at sizes like 1000³ the other blocks, on
// v9's checked loop, set the time of the one wave (NOTES.md).
//  1. A tile that reaches past M moves up to end at row M (one past N moves left to end at column N):
//     its copies are whole again. It computes rows (columns) that the tile before it also computes, and
//     stores only its own, so C, beta·C included, is written once. Where m (n) runs along the stored
//     rows (A transposed, B not), the moved origin must keep 16-byte copies: M (N) a multiple of 8 (and
//     N even to move left at all: the epilogue stores column pairs).
//  2. K's tail r = K % 32 becomes k-tile 0: its copies are v9's checked ones (zeros past r), issued once
//     in the prologue; the whole k-tiles after it start at k = r, so the main loop has no bounds. Where k
//     runs along the stored rows (A not transposed, B transposed), r must be a multiple of 8.
//  3. Matrices smaller than a tile (M < 128 or N < 256), or sizes that break the alignments above, keep
//     v12's rule for the blocks concerned.
// C is bit-identical to v12's whenever 32 divides K (with a tail, the k-tiles are cut at other places).
//
// Run: build/h100/stages/06_tensorcore_gemm/stage06_gemm --dtype fp16 --version v14 --m 1000 --n 1000 --k 1000
//      build/h100/stages/06_tensorcore_gemm/stage06_bench --benchmark_filter='stage06/v1[24]/|cublas/fp16'
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

namespace fs::gemm_v14 {

// v12's (v9's) tiles, pipeline and shared layout, unchanged.
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
    gemm_v14_kernel(int64_t M, int64_t N, int64_t K, float alpha, const T* __restrict__ A, int64_t lda,
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
  const int64_t m_own = tile_m * kBM, n_own = tile_n * kBN;  // the block's first row and column of C
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / (kBN / kWN) * kWM, wn = warp % (kBN / kWN) * kWN;  // warp tile origin in the block
  const int64_t k_tiles = (K + kBK - 1) / kBK;

  // Which blocks copy without bounds (the header's 1-3). kChunk: the elements of one 16-byte copy.
  constexpr int64_t kChunk = 16 / int64_t(sizeof(T));
  const bool fits_m = m_own + kBM <= M, fits_n = n_own + kBN <= N;
  const bool moves_m = !fits_m && M >= kBM && (TileA::kKContig || M % kChunk == 0);
  // A tile moved back to end at N starts at column N − kBN: N even keeps it, and every pair of columns
  // the epilogue stores, on an even column (an odd N would split the pair at n_own and misalign it).
  const bool moves_n = !fits_n && N >= kBN && N % 2 == 0 && (TileB::kKContig || N % kChunk == 0);
  const int64_t tail = K % kBK;  // K's tail: k-tile 0 when not zero
  const bool k_whole = tail % kChunk == 0 || (!TileA::kKContig && !TileB::kKContig);
  const bool whole = (fits_m || moves_m) && (fits_n || moves_n) && k_whole;
  // The tile the block computes: its own, or moved back to end at M, N.
  const int64_t m0 = whole && !fits_m ? M - kBM : m_own, n0 = whole && !fits_n ? N - kBN : n_own;

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

  // v9's main loop, once per kind of block (both inlined: a whole block's main loop carries no bounds).
  auto main_loop = [&](auto whole_tag) {
    constexpr bool kWhole = decltype(whole_tag)::value;
    using StreamA = std::conditional_t<kWhole, gemm::WholeTileStream<TileA, kThreads, uint16_t>,
                                       gemm::SwizzledTileStream<TileA, kThreads, 16, uint16_t>>;
    using StreamB = std::conditional_t<kWhole, gemm::WholeTileStream<TileB, kThreads, uint16_t>,
                                       gemm::SwizzledTileStream<TileB, kThreads, 16, uint16_t>>;
    // This thread's copies of each k-tile of A and B, walking K; in a whole block from K's tail on
    // (k-tile 0 is the tail, copied below).
    auto stream = [&](auto* type, const T* x, int64_t ld, int64_t x0, int64_t X) {
      using Stream = std::remove_pointer_t<decltype(type)>;
      if constexpr (kWhole) return Stream(reinterpret_cast<const uint16_t*>(x), ld, x0, X, K, tid, tail);
      else return Stream(reinterpret_cast<const uint16_t*>(x), ld, x0, X, K, tid);
    };
    StreamA gA = stream(static_cast<StreamA*>(nullptr), A, lda, m0, M);
    StreamB gB = stream(static_cast<StreamB*>(nullptr), B, ldb, n0, N);
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
      if (kWhole && s == 0 && tail > 0) {
        // K's tail as k-tile 0, v9's checked copies (zeros from k = tail on), once per block.
        using CheckedA = gemm::SwizzledTileStream<TileA, kThreads, 16, uint16_t>;
        using CheckedB = gemm::SwizzledTileStream<TileB, kThreads, 16, uint16_t>;
        CheckedA(reinterpret_cast<const uint16_t*>(A), lda, m0, M, tail, tid)
            .copy(smem, reinterpret_cast<const uint16_t*>(A));
        CheckedB(reinterpret_cast<const uint16_t*>(B), ldb, n0, N, tail, tid)
            .copy(smem + TileA::kBytes, reinterpret_cast<const uint16_t*>(B));
      } else if (s < k_tiles) {
        load_next(s);
      }
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
  // A moved tile stores its own rows and columns alone (m ≥ m_own, n ≥ n_own; n_own and n are even, so
  // a pair is wholly in or out): the others are the tile before it's.
  const int g = lane / 4, t = lane % 4;
  auto store = [&](auto* c_out) {
#pragma unroll
    for (int i = 0; i < kFragsM; ++i)
#pragma unroll
      for (int j = 0; j < kFragsN; ++j) {
        const int64_t m = m0 + wm + i * kMmaM + g, n = n0 + wn + j * kMmaN + 2 * t;
        if (n < n_own) continue;
        const float* c = acc[i][j];
        if (m >= m_own) gemm::store_pair(c_out, ldc, M, N, m, n, c[0], c[1], alpha, beta, c_pairs);
        if (m + 8 >= m_own) gemm::store_pair(c_out, ldc, M, N, m + 8, n, c[2], c[3], alpha, beta, c_pairs);
      }
  };
  if (c_dtype == FS_FP16) store(static_cast<__half*>(C));
  else if (c_dtype == FS_BF16) store(static_cast<__nv_bfloat16*>(C));
  else store(static_cast<float*>(C));
}

}  // namespace fs::gemm_v14
