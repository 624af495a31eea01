// flashstages · stage 04 — XOR-swizzled shared tiles, as v4 introduced them and v6 reads them too:
// the swizzle, one thread's share of a tile's cp.async copies (TileCopy), and where each lane's
// ldmatrix rows lie (LaneOffsets; q_lane, k_lane, v_lane), all worked out once before the key loop.
// v4_ldmatrix_swizzle.cuh says why; docs/04_flash_fwd.md draws the swizzle.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/sm80.cuh"

namespace fs::flash {

// Element (r, c) of a [rows][D] tile whose 16-byte chunks are XOR-swizzled: chunk c/8 of row r is
// stored at chunk (c/8) ^ f(r). With D >= 64 a row spans 8 or more chunks and f(r) = r % 8; at D = 32
// two rows share a 128-byte line and f(r) = (r/2) % 4. Either way the 8 rows that one ldmatrix phase
// reads at one logical chunk use 8 different 16-byte bank groups: no conflicts. f repeats every 8 rows.
template <int D>
__device__ __forceinline__ int swizzle_f(int r) {
  return D / 8 >= 8 ? r % 8 : r / 2 % 4;
}
template <int D>
__device__ __forceinline__ int swizzle(int r, int c) {
  return r * D + ((c / 8) ^ swizzle_f<D>(r)) * 8 + c % 8;
}

// One thread's share of copying [kRows][D] tiles with cp.async, worked out once before the key loop:
// the thread moves the 16-byte chunk at column c of rows r0, r0 + kStep, r0 + 2·kStep, ... Its global
// offsets are then fixed steps of kStep rows and its swizzled shared offsets repeat every kPeriod passes,
// so a tile costs one address add and one cp.async per chunk (index arithmetic recomputed in the loop
// used to cost as much as the copies themselves). The global rows lie `ld` elements apart: D in a
// contiguous tensor, the row stride of a strided one (fs_attention_params' strides).
template <class T, int D, int kRows, int kThreads>
struct TileCopy {
  static constexpr int kChunks = D / 8;              // 16-byte chunks per row
  static constexpr int kStep = kThreads / kChunks;   // rows covered by one pass of all threads
  static constexpr int kPasses = kRows / kStep;
  static constexpr int kPeriod = kStep % 8 == 0 ? 1 : 8 / kStep;  // the swizzle repeats every 8 rows
  static_assert(kThreads % kChunks == 0 && kRows % kStep == 0 && (kStep % 8 == 0 || 8 % kStep == 0),
                "every pass must cover whole rows");
  int r0;              // first row
  int c;               // the chunk's first column
  int dst[kPeriod];    // swizzled offset of pass p's chunk, less p·kStep·D

  __device__ __forceinline__ TileCopy() {
    r0 = threadIdx.x / kChunks;
    c = threadIdx.x % kChunks * 8;
#pragma unroll
    for (int p = 0; p < kPeriod; ++p) dst[p] = swizzle<D>(r0 + p * kStep, c) - p * kStep * D;
  }

  // Issues the copies of rows 0 .. kRows-1 of `rows` (a [n, D] matrix from the tile's first row on, its
  // rows ld elements apart) into `tile`; only the first `valid` rows exist, the rest are zero-filled by
  // cp.async itself. The caller commits the group.
  __device__ __forceinline__ void copy(T* tile /* [kRows][D] */, const T* rows, int64_t ld, int valid) const {
    const T* g = rows + r0 * ld + c;
    const int64_t step = kStep * ld;  // elements from one pass's row to the next
    if (valid >= kRows) {  // a whole tile: no bounds to test
#pragma unroll
      for (int i = 0; i < kPasses; ++i)
        sm80::cp_async_cg_16_zfill(tile + dst[i % kPeriod] + i * kStep * D, g + i * step, 16);
    } else {
#pragma unroll
      for (int i = 0; i < kPasses; ++i) {
        const bool in_range = r0 + i * kStep < valid;
        sm80::cp_async_cg_16_zfill(tile + dst[i % kPeriod] + i * kStep * D, in_range ? g + i * step : rows,
                             in_range ? 16 : 0);
      }
    }
  }
};

// Rows of a tile starting at row `first` of a sequence of n rows that exist, at most kRows.
template <int kRows>
__device__ __forceinline__ int rows_in(int64_t first, int64_t n) {
  return int(max(min(n - first, int64_t(kRows)), int64_t(0)));
}

// Where this lane's ldmatrix row lies in a swizzled tile, as byte offsets worked out once before the
// key loop. A lane hands ldmatrix the 16-byte row at chunk 2s + half of tile row `row` for the s-th
// 16-column step; since (2s + half) ^ f(row) = 8·(s/4) + ((2·(s%4)) ^ y) with y = half ^ f(row), four
// offsets serve every step (at(s) adds the 128·(s/4) bytes as a constant). The row is the lane's row
// within a 16-row group: group starts are multiples of 8, which f ignores, and become constant offsets.
template <int D>
struct LaneOffsets {
  uint32_t off[4];
  __device__ __forceinline__ LaneOffsets(int row, int half) {
    const int y = half ^ swizzle_f<D>(row);
#pragma unroll
    for (int m = 0; m < 4; ++m) off[m] = uint32_t(row * D * 2 + 16 * ((2 * m) ^ y));
  }
  __device__ __forceinline__ uint32_t at(int s) const { return off[s % 4] + 128 * (s / 4); }
};

// The three ways a warp reads a tile (mma.cuh gives the fragment layouts):
//   A of Q Kᵀ from sQ (16 rows × 16 columns): lanes 0–15 give rows 0–15 of the left 8 columns, lanes
//     16–31 the right 8: a[0..3] come out in the A order.
//   B of Q Kᵀ from sK (keys n0..n0+15 × 16 head dims): a row of sK is a column of B, no transpose;
//     lanes 0–7 / 8–15 give keys 0–7 at the left / right 8 dims (b[0], b[1] of key tile n0), lanes
//     16–31 keys 8–15 (b[2], b[3] of key tile n0 + 8).
//   B of P V from sV (keys k0..k0+15 × head dims n0..n0+15): sV rows are keys, B wants keys down a
//     column, so .trans; lanes 0–7 / 8–15 give keys 0–7 / 8–15 of the left 8 dims (b[0], b[1] of
//     column tile n0), lanes 16–31 those of the right 8 (b[2], b[3] of column tile n0 + 8).
template <int D>
__device__ __forceinline__ LaneOffsets<D> q_lane() {
  const int lane = threadIdx.x % 32;
  return LaneOffsets<D>(lane % 16, lane / 16);
}
template <int D>
__device__ __forceinline__ LaneOffsets<D> k_lane() {
  const int lane = threadIdx.x % 32;
  return LaneOffsets<D>(lane % 8 + lane / 16 * 8, lane / 8 % 2);
}
template <int D>
__device__ __forceinline__ LaneOffsets<D> v_lane() {
  const int lane = threadIdx.x % 32;
  return LaneOffsets<D>(lane % 8 + lane / 8 % 2 * 8, lane / 16);
}

}  // namespace fs::flash
