// flashstages · stage 06 · v16 — v15 on rows repacked to 16 bytes: one pass copies A and B into 16-byte
// rows with K padded to whole k-tiles, then v15's 16-byte kernel runs on the copies (int8 → int32, exact)
//
// What changes from v15: where A and B are both stored k-contiguous (A untransposed, B transposed:
// cuBLASLt's int8 layout) and their rows are not 16-byte aligned (int8 rows of K = 1000), v15 copies 8
// bytes at a time, which in one wave of blocks costs about what checked copies do (NOTES.md). v16 first
// runs repack_rows_kernel (below): both operands into a workspace, rows K' bytes apart, K' = K rounded
// up to the k-tile (64), zeros past K (they add nothing: C is bit-identical). Its product kernel is
// v15's for that one layout at 16 bytes, plus griddepcontrol.wait: on Hopper v16.cu launches it as the
// repack's programmatic dependent, its blocks waiting there until the repack's writes are visible.
// Why it is faster: on the copies every block runs v15's unchecked loop with 16-byte copies and no K
// tail, and the product's launch and its blocks' start-up overlap the repack. The cost: (M + N)·K'
// bytes of workspace (stream-ordered) and one memory-bound pass. Every other layout, and rows already
// 16-byte aligned, are v15's call.
//
// Run: build/h100/stages/06_tensorcore_gemm/stage06_gemm --dtype int8 --trans-b 1 --version v16 --m 1000 --n 1000 --k 1000
//      build/h100/stages/06_tensorcore_gemm/stage06_bench --benchmark_filter='stage06/v1[56]/int8|cublaslt'
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "common/device/gemm_epilogue.cuh"
#include "common/lib/gemm.h"
#include "common/device/sm80.cuh"
#include "stages/06_tensorcore_gemm/fragments.cuh"
#include "stages/06_tensorcore_gemm/scheduler.cuh"
#include "stages/06_tensorcore_gemm/tiles.cuh"

namespace fs::gemm_v16 {

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
// The one case v16 runs its product on: A untransposed and B transposed (both k-contiguous), rows
// repacked to 16 bytes, K a multiple of kBK. v15's code below keeps its branches on the layout and the
// copy width; these constants fold them as in v15's instance for this case.
constexpr bool kTransA = false, kTransB = true;
constexpr int kCopyBytes = 16;

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
// 16-byte aligned (the repack's copies). c_pairs: C's base and ldc allow 8-byte pair stores.
__global__ void __launch_bounds__(kThreads, 1)
    gemm_v16_kernel(int64_t M, int64_t N, int64_t K, float alpha, const int8_t* __restrict__ A, int64_t lda,
                    const int8_t* __restrict__ B, int64_t ldb, float beta, int32_t* __restrict__ C, int64_t ldc,
                    bool c_pairs) {
  using Cfg = Config;
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

  // Which blocks copy without bounds (v15's header, 1-3: on the copies, every block once M ≥ kBM and
  // N ≥ kBN); the others run v10's loop, checked (SwizzledTileStream). One copy is kCopyBytes int8.
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
#if __CUDA_ARCH__ >= 900
  // griddepcontrol.wait: launched as the repack's programmatic dependent (v16.cu, on Hopper), the block
  // may start before the repack has finished; A and B are its output, so nothing is read before the
  // repack's grid is done and its writes are visible. Launched plainly, this returns at once.
  cudaGridDependencySynchronize();
#endif
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

// One operand stored k-contiguous: rows of cols = K bytes, ld apart, in; the same rows, ld_out = K'
// apart, out.
struct Repack {
  const int8_t* src;
  int64_t rows, cols, ld;
  int8_t* dst;
  int64_t ld_out;
  __host__ __device__ int64_t chunks() const { return rows * (ld_out / 16); }  // 16-byte chunks written
};

// Where A and B go, and the workspace they take (A's copy first, B's at the next 256-byte boundary).
struct RepackPlan {
  Repack a, b;
  int64_t b_offset, bytes;  // bytes: 0 when a size would overflow (refused as InvalidSize)
  int64_t k_padded;         // K' = K rounded up to whole k-tiles
};

// The plan for p, A untransposed and B transposed; dst pointers are set once the workspace exists.
inline RepackPlan plan_repack(const GemmParams& p) {
  RepackPlan plan{};
  const int64_t kt = kBK;
  plan.k_padded = (p.k + kt - 1) / kt * kt;
  plan.a = Repack{static_cast<const int8_t*>(p.a), p.m, p.k, p.lda, nullptr, plan.k_padded};
  plan.b = Repack{static_cast<const int8_t*>(p.b), p.n, p.k, p.ldb, nullptr, plan.k_padded};
  int64_t a_bytes = 0, b_bytes = 0;
  if (__builtin_mul_overflow(p.m, plan.k_padded, &a_bytes) || __builtin_mul_overflow(p.n, plan.k_padded, &b_bytes) ||
      a_bytes > INT64_MAX - 255 - b_bytes)
    return plan;
  plan.b_offset = (a_bytes + 255) / 256 * 256;
  plan.bytes = plan.b_offset + b_bytes;
  return plan;
}

// grid-stride over the 16-byte chunks of both copies, A's first; consecutive threads write consecutive
// chunks of a row (whole 512-byte runs per warp) and read the same bytes of the source row, kLoadBytes
// at a time (the alignment of both sources: 8, 4 or 1).
template <int kLoadBytes>
__global__ void repack_rows_kernel(Repack a, Repack b) {
  static_assert(kLoadBytes == 8 || kLoadBytes == 4 || kLoadBytes == 1, "a load width below 16 bytes");
#if __CUDA_ARCH__ >= 900
  // griddepcontrol.launch_dependents: once every block has been here, the product (launched as this
  // kernel's programmatic dependent) may be scheduled. Its blocks wait for this grid's writes before
  // reading (griddepcontrol.wait in gemm_v16_kernel, above); what starts early is only their launch.
  cudaTriggerProgrammaticLaunchCompletion();
#endif
  const int64_t chunks_a = a.chunks(), total = chunks_a + b.chunks();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const Repack r = i < chunks_a ? a : b;
    const int64_t j = i < chunks_a ? i : i - chunks_a, per_row = r.ld_out / 16;
    const int64_t row = j / per_row, col = j % per_row * 16;
    uint4 out = make_uint4(0, 0, 0, 0);  // the chunk, 16 bytes in four words
    if (col < r.cols) {
      const int8_t* s = r.src + row * r.ld + col;
      if (col + 16 <= r.cols && kLoadBytes > 1) {  // a whole chunk: 16 / kLoadBytes aligned loads
        if constexpr (kLoadBytes == 8) {
          const uint2 lo = reinterpret_cast<const uint2*>(s)[0], hi = reinterpret_cast<const uint2*>(s)[1];
          out = make_uint4(lo.x, lo.y, hi.x, hi.y);
        } else {
          const uint32_t* w = reinterpret_cast<const uint32_t*>(s);
          out = make_uint4(w[0], w[1], w[2], w[3]);
        }
      } else {  // the row's last, partial chunk, or rows aligned to one byte: byte by byte
        uint32_t w[4] = {0, 0, 0, 0};
#pragma unroll
        for (int e = 0; e < 16; ++e)
          if (col + e < r.cols) w[e / 4] |= uint32_t(uint8_t(s[e])) << (8 * (e % 4));
        out = make_uint4(w[0], w[1], w[2], w[3]);
      }
    }
    *reinterpret_cast<uint4*>(r.dst + row * r.ld_out + col) = out;
  }
}

}  // namespace fs::gemm_v16
