// flashstages · stage 06 · v15 — v13 with no block left on the checked loop (v14's two moves, for int8)
// and with rows that are only 8-byte aligned copied without bounds too (int8 → int32, exact)
//
// What changes from v13: which blocks copy without bounds, and at which widths. v13's unchecked loop
// runs only in blocks whose 128×256 tile lies inside M and N, when 64 divides K and every row is
// 16-byte aligned; at 1000³ no block qualifies (1000-byte rows; NOTES.md).
//  1. v14's moves: a tile that reaches past M (N) moves back to end at row M (column N), computes a few
//     rows (columns) of the tile before it again and stores only its own; K's tail r = K % 64 becomes
//     k-tile 0, copied with v10's checks once in the prologue, and the whole k-tiles start at k = r.
//  2. The copy width is a template argument: 16 bytes, or 8 where a base or a leading dimension is only
//     8-byte aligned (rows of K = 1000 int8). gemm::WholeTileStream takes both: an 8-byte k-tile is
//     twice the cp.async of a 16-byte one, one 64-bit add each, no bounds. Narrower rows are v10's call.
//  3. A moved origin and the tail keep the copies aligned: where m (n) runs along the stored rows
//     (A transposed, B not), M (N) a multiple of the copy width; where k does (A not transposed, B
//     transposed), r a multiple of it; a tile moved left, N even (column pairs). Smaller matrices, or
//     sizes that break this, keep v13's rule for the blocks concerned (v10's checked loop, same width).
// Everything else is v13's; C is bit-identical to v10's and v13's (the sums are integers).
//
// Run: build/h100/stages/06_tensorcore_gemm/stage06_gemm --dtype int8 --trans-b 1 --version v15 --m 1000 --n 1000 --k 1000
//      build/h100/stages/06_tensorcore_gemm/stage06_bench --benchmark_filter='stage06/v1[035]/int8|cublaslt'
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "common/device/gemm_epilogue.cuh"
#include "common/device/sm80.cuh"
#include "stages/06_tensorcore_gemm/fragments.cuh"
#include "stages/06_tensorcore_gemm/scheduler.cuh"
#include "stages/06_tensorcore_gemm/tiles.cuh"

namespace fs::gemm_v15 {

// v10's (v13's) tiles, pipeline and shared layout, unchanged.
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
// kCopyBytes-aligned (16 or 8; the launcher's check). c_pairs: C's base and ldc allow 8-byte pair stores.
template <bool kTransA, bool kTransB, int kCopyBytes>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_v15_kernel(int64_t M, int64_t N, int64_t K, float alpha, const int8_t* __restrict__ A, int64_t lda,
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
  const int64_t m_own = tile_m * kBM, n_own = tile_n * kBN;  // the block's first row and column of C
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / (kBN / kWN) * kWM, wn = warp % (kBN / kWN) * kWN;  // warp tile origin in the block
  const int64_t k_tiles = (K + kBK - 1) / kBK;

  // Which blocks copy without bounds (the header's 1-3); the others run v10's loop, checked
  // (SwizzledTileStream). One copy is kCopyBytes int8.
  const bool fits_m = m_own + kBM <= M, fits_n = n_own + kBN <= N;
  const bool moves_m = !fits_m && M >= kBM && (CopyA::kKContig || M % kCopyBytes == 0);
  // A tile moved back to end at N starts at column N − kBN: N even keeps it, and every pair of columns
  // the epilogue stores, on an even column (an odd N would split the pair at n_own and misalign it).
  const bool moves_n = !fits_n && N >= kBN && N % 2 == 0 && (CopyB::kKContig || N % kCopyBytes == 0);
  const int64_t tail = K % kBK;  // K's tail: k-tile 0 when not zero
  const bool k_whole = tail % kCopyBytes == 0 || (!CopyA::kKContig && !CopyB::kKContig);
  const bool whole = (fits_m || moves_m) && (fits_n || moves_n) && k_whole;
  // The tile the block computes: its own, or moved back to end at M, N; its first skip_m rows and skip_n
  // columns (0 unless moved) are the tile before it's.
  const int64_t m0 = whole && !fits_m ? M - kBM : m_own, n0 = whole && !fits_n ? N - kBN : n_own;
  const int skip_m = int(m_own - m0), skip_n = int(n_own - n0);
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

  // v10's main loop, once per kind of block (both inlined: a whole block's main loop carries no bounds).
  auto main_loop = [&](auto whole_tag) {
    constexpr bool kWhole = decltype(whole_tag)::value;
    using CheckedA = gemm::SwizzledTileStream<CopyA, kThreads, kCopyBytes, int8_t>;
    using CheckedB = gemm::SwizzledTileStream<CopyB, kThreads, kCopyBytes, int8_t>;
    using StreamA = std::conditional_t<kWhole, gemm::WholeTileStream<CopyA, kThreads, int8_t, kCopyBytes>, CheckedA>;
    using StreamB = std::conditional_t<kWhole, gemm::WholeTileStream<CopyB, kThreads, int8_t, kCopyBytes>, CheckedB>;
    // This thread's copies of each k-tile of A and B, walking K; in a whole block from K's tail on
    // (k-tile 0 is the tail, copied below).
    auto stream = [&](auto* type, const int8_t* x, int64_t ld, int64_t x0, int64_t X) {
      using Stream = std::remove_pointer_t<decltype(type)>;
      if constexpr (kWhole) return Stream(x, ld, x0, X, K, tid, tail);
      else return Stream(x, ld, x0, X, K, tid);
    };
    StreamA gA = stream(static_cast<StreamA*>(nullptr), A, lda, m0, M);
    StreamB gB = stream(static_cast<StreamB*>(nullptr), B, ldb, n0, N);
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
      if (kWhole && s == 0 && tail > 0) {
        // K's tail as k-tile 0, v10's checked copies (zeros from k = tail on), once per block.
        CheckedA(A, lda, m0, M, tail, tid).copy(smem, A);
        CheckedB(B, ldb, n0, N, tail, tid).copy(smem + CopyA::kBytes, B);
      } else if (s < k_tiles) {
        load_next(s);
      }
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
  // no bounds and no fp64 rounding, which would return them unchanged (round(1·x + 0) = x). A moved tile
  // stores its own rows and columns alone (skip_n and the pair's first column are even, so a pair is
  // wholly in or out).
  const int g = lane / 4, t = lane % 4;
  const bool plain = whole && c_pairs && alpha == 1.0f && beta == 0.0f;
#pragma unroll
  for (int i = 0; i < kFragsM; ++i)
#pragma unroll
    for (int j = 0; j < kFragsN; ++j) {
      const int r = wm + i * kMmaM + g, c = wn + j * kMmaN + 2 * t;  // in the tile
      if (c < skip_n) continue;
      const int64_t m = m0 + r, n = n0 + c;
      if (plain) {
        if (r >= skip_m) *reinterpret_cast<int2*>(C + m * ldc + n) = make_int2(acc[i][j][0], acc[i][j][1]);
        if (r + 8 >= skip_m) *reinterpret_cast<int2*>(C + (m + 8) * ldc + n) = make_int2(acc[i][j][2], acc[i][j][3]);
      } else {
        if (r >= skip_m) gemm::store_pair(C, ldc, M, N, m, n, acc[i][j][0], acc[i][j][1], alpha, beta, c_pairs);
        if (r + 8 >= skip_m) gemm::store_pair(C, ldc, M, N, m + 8, n, acc[i][j][2], acc[i][j][3], alpha, beta, c_pairs);
      }
    }
}

}  // namespace fs::gemm_v15
