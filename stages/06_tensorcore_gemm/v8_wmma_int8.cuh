// flashstages · stage 06 · v8 — INT8 tensor cores through WMMA: int8 in, int32 out, exact
//
// What changes from v7: the element types and the shared layout, not the pipeline.
//  * int8 inputs, int32 accumulators: every product of two int8 values and every partial sum is an
//    integer held exactly, so the result is exact while |sum| <= 2^31 - 1, i.e. for K <= 131071 at
//    worst-case inputs (docs/06_tensorcore_gemm.md, "Why INT8 is exact").
//  * v7's 128×256×64 block tile and late-issued copies; at one byte per element a stage is half
//    v7's size, so the pipeline is 4 stages deep in 97–99 KiB.
//  * Panels instead of padded rows (PanelTile, below): an int8 fragment at k = 16 would start 16 bytes
//    into a padded row, and WMMA needs 32-byte aligned fragments; panels 16 elements wide make every
//    fragment 256 contiguous bytes.
//  * The epilogue rounds alpha·acc + beta·C in fp64 to int32, exact for integer alpha and beta.
// The 16-byte copies need the base 16-byte aligned and lda/ldb multiples of 16; otherwise that operand
// is copied element by element, as in v7.
// What it still lacks: WMMA offers int8 only as m16n16k16, which compiles to IMMA.16816 (k16), not the
// k32 IMMA.16832; and it keeps v7's latency problem (NOTES.md: its profile). Raw mma.sync.m16n8k32
// with ldmatrix is the next step (v10).
//
// Run: build/h100/stages/06_tensorcore_gemm/stage06_gemm --dtype int8 --trans-b 1 --version v8
#pragma once

#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>
#include <type_traits>

#include "common/device/sm80.cuh"
#include "stages/06_tensorcore_gemm/epilogue.cuh"
#include "stages/06_tensorcore_gemm/scheduler.cuh"
#include "stages/06_tensorcore_gemm/tiles.cuh"

namespace fs::gemm_v8 {

namespace wmma = nvcuda::wmma;

constexpr int kBM = 128, kBN = 256, kBK = 64;  // block tile
constexpr int kWM = 64, kWN = 64;              // warp tile: 4×4 fragments
constexpr int kF = 16;                         // fragment edge: WMMA m16n16k16
constexpr int kThreads = (kBM / kWM) * (kBN / kWN) * 32;  // 256
constexpr int kStages = 4;
constexpr int kLdC = kWN + 4;                  // int32 per row of a warp's staging strip
constexpr int kGroupM = 8;                     // tile rows per group of the tile order

// WMMA wants every fragment's first element 32-byte aligned. A padded int8 tile cannot give that: a
// fragment at k = 16 starts 16 bytes into a row. So the tile is cut along its contiguous dimension
// into panels 16 elements wide, each a dense [rows][16] block: a 16×16 fragment is then 256 contiguous
// bytes (ldm 16) and 8 of its rows are 128 contiguous bytes, conflict-free. Panels sit 32 bytes
// further apart than their size, so the threads that write one row's chunks (one per panel) start on
// different banks.
//
//   stored (rows, cols), cols = 16·P:   panel 0          panel 1               panel P-1
//                                       [rows][16]  +32  [rows][16]  +32  ...  [rows][16]
template <bool kIsKContig, int kBX, int kDepth>
struct PanelTile {
  static constexpr bool kKContig = kIsKContig;
  static constexpr int kBK = kDepth;
  static constexpr int kRows = kKContig ? kBX : kBK;
  static constexpr int kCols = kKContig ? kBK : kBX;
  static constexpr int kPanelStride = kRows * 16 + 32;
  static constexpr int kElems = kCols / 16 * kPanelStride;
  static constexpr int kLd = 16;  // WMMA's ldm inside a panel
  __device__ static int at(int r, int c) { return c / 16 * kPanelStride + r * 16 + c % 16; }
  __device__ static int frag(int x, int k) { return kKContig ? at(x, k) : at(k, x); }
};

template <bool kTransA, bool kTransB>
struct Config {
  using TileA = PanelTile<!kTransA, kBM, kBK>;
  using TileB = PanelTile<kTransB, kBN, kBK>;
  static constexpr int kStageElems = TileA::kElems + TileB::kElems;
  static constexpr std::size_t kPipeBytes = std::size_t(kStages) * kStageElems * sizeof(int8_t);
  static constexpr std::size_t kStagingBytes = std::size_t(kThreads / 32) * kF * kLdC * sizeof(int32_t);
  static constexpr std::size_t kSmemBytes = kPipeBytes > kStagingBytes ? kPipeBytes : kStagingBytes;
};

// grid: one block per 128×256 tile of C (1D, grouped order); block 256 = 2×4 warps, warp (wy, wx)
// owns rows m0 + wy·64 .. +63 and columns n0 + wx·64 .. +63.
// vec_a, vec_b: the operand allows 16-byte copies (16-byte aligned base, ld a multiple of 16).
template <bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_v8_kernel(int64_t M, int64_t N, int64_t K, float alpha, const int8_t* __restrict__ A, int64_t lda,
                   const int8_t* __restrict__ B, int64_t ldb, float beta, int32_t* __restrict__ C, int64_t ldc,
                   bool vec_a, bool vec_b) {
  using Cfg = Config<kTransA, kTransB>;
  using TileA = typename Cfg::TileA;
  using TileB = typename Cfg::TileB;
  constexpr bool kAk = !kTransA, kBk = kTransB;  // is the operand stored k-contiguous?
  using LayoutA = std::conditional_t<kAk, wmma::row_major, wmma::col_major>;
  using LayoutB = std::conditional_t<kBk, wmma::col_major, wmma::row_major>;
  // (stages, TileA then TileB): each stage holds op(A) and op(B) as stored, in 16-wide panels.
  extern __shared__ __align__(128) unsigned char smem[];
  int8_t* const pipe = reinterpret_cast<int8_t*>(smem);

  const int64_t tiles_m = (M + kBM - 1) / kBM, tiles_n = (N + kBN - 1) / kBN;
  int64_t tile_m, tile_n;
  gemm::grouped_tile<kGroupM>(blockIdx.x, tiles_m, tiles_n, tile_m, tile_n);
  const int64_t m0 = tile_m * kBM, n0 = tile_n * kBN;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / (kBN / kWN) * kWM, wn = warp % (kBN / kWN) * kWN;  // warp tile origin in the block
  const int64_t k_tiles = (K + kBK - 1) / kBK;

  // This thread's 16-byte copies of each k-tile of A and B, walking K.
  gemm::AsyncTileStream<TileA, kThreads, int8_t> gA(A, lda, m0, M, K, tid);
  gemm::AsyncTileStream<TileB, kThreads, int8_t> gB(B, ldb, n0, N, K, tid);
  int64_t next_k0 = 0;  // the k-tile the streams point at
  // Issues the copies of the next k-tile into pipeline stage `stage`.
  auto load_next = [&](int stage) {
    int8_t* sA = pipe + stage * Cfg::kStageElems;
    int8_t* sB = sA + TileA::kElems;
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

  wmma::fragment<wmma::accumulator, kF, kF, kF, int32_t> acc[kWM / kF][kWN / kF];  // (4, 4) of 16×16
#pragma unroll
  for (int i = 0; i < kWM / kF; ++i)
#pragma unroll
    for (int j = 0; j < kWN / kF; ++j) wmma::fill_fragment(acc[i][j], 0);

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

    const int8_t* sA = pipe + int(kt % kStages) * Cfg::kStageElems;
    const int8_t* sB = sA + TileA::kElems;
#pragma unroll
    for (int kk = 0; kk < kBK; kk += kF) {
      wmma::fragment<wmma::matrix_a, kF, kF, kF, signed char, LayoutA> a[kWM / kF];
      wmma::fragment<wmma::matrix_b, kF, kF, kF, signed char, LayoutB> b[kWN / kF];
#pragma unroll
      for (int i = 0; i < kWM / kF; ++i)
        wmma::load_matrix_sync(a[i], reinterpret_cast<const signed char*>(sA + TileA::frag(wm + i * kF, kk)),
                               TileA::kLd);
#pragma unroll
      for (int j = 0; j < kWN / kF; ++j)
        wmma::load_matrix_sync(b[j], reinterpret_cast<const signed char*>(sB + TileB::frag(wn + j * kF, kk)),
                               TileB::kLd);
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
  int32_t* strip = reinterpret_cast<int32_t*>(smem) + warp * kF * kLdC;  // (16, 64+4): one row of fragments
#pragma unroll
  for (int i = 0; i < kWM / kF; ++i) {
#pragma unroll
    for (int j = 0; j < kWN / kF; ++j) wmma::store_matrix_sync(strip + j * kF, acc[i][j], kLdC, wmma::mem_row_major);
    __syncwarp();  // the strip is complete before lanes read each other's values
    gemm::store_staged(C, ldc, M, N, m0 + wm + i * kF, n0 + wn, strip, kLdC, kF, kWN, alpha, beta, lane, 32);
    __syncwarp();  // every lane has read the strip before the next row of fragments overwrites it
  }
}

}  // namespace fs::gemm_v8
