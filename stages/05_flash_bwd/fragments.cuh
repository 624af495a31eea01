// Stage 05: fragments by ldmatrix from XOR-swizzled shared tiles (tiles.cuh) — where each lane points
// for the three ways a warp reads a tile, worked out once per block (v5 to v10), with a column origin
// for the warp tiles of v8 to v10 — and the pair of mma that one ldmatrix.x4's two B fragments feed.
#pragma once

#include <cstdint>

#include "common/device/sm80.cuh"

namespace fs::bwd {

// Where a lane's ldmatrix row lies in a swizzled [rows][kCols] tile, as byte offsets worked out once,
// before the tile loop. For the s-th 16-column step the lane points at chunk 2s + half of its row;
// since (2s + half) ^ (row % 8) = 8·(s / 4) + ((2·(s % 4)) ^ y) with y = half ^ (row % 8), four offsets
// serve every step, and at(s) adds the 128·(s / 4) bytes as a constant. The fragment's first row, a
// multiple of 8 that the swizzle ignores, is added by the caller as bytes. (The XOR of a chunk index
// with the row is not a constant the compiler can fold into the instruction: recomputed for every
// ldmatrix of the unrolled loops, it cost v5 registers enough to spill.)
template <int kCols>
struct LaneRow {
  uint32_t off[4];
  __device__ __forceinline__ LaneRow(int row, int half) {
    const int y = half ^ (row % 8);
#pragma unroll
    for (int m = 0; m < 4; ++m) off[m] = uint32_t(row * kCols * 2 + 16 * ((2 * m) ^ y));
  }
  __device__ __forceinline__ uint32_t at(int s) const { return off[s % 4] + 128 * (s / 4); }
};

// The three ways a warp reads a tile with ldmatrix.x4 (lanes 8i .. 8i + 7 give the rows of 8×8 tile i,
// which lands in register i; common/device/sm80.cuh):
//   a_lane: the A fragment of 16 rows × 16 columns — lanes 0–15 point at the rows' left 8 columns,
//     lanes 16–31 at their right 8: a[0..3] in the A order.
//   b_rows_lane: B fragments of X Yᵀ from 16 rows of Y ([n][k]) — b[0], b[1] of 8-column tile n0
//     (lanes 0–7 / 8–15: rows n0 .. n0 + 7 at k0 / k0 + 8), b[2], b[3] of tile n0 + 8 (lanes 16–31).
//     A row of Y is a column of B: no transpose.
//   b_cols_lane: B fragments of X Y from 16 rows of Y ([k][n]), with .trans: B wants k down a column —
//     b[0], b[1] of 8-column tile n0 (lanes 0–7 / 8–15: rows k0 .. k0 + 7 / k0 + 8 .. k0 + 15 at n0),
//     b[2], b[3] of tile n0 + 8 (lanes 16–31, at n0 + 8).
template <int kCols>
__device__ __forceinline__ LaneRow<kCols> a_lane() {
  const int lane = threadIdx.x % 32;
  return LaneRow<kCols>(lane % 16, lane / 16);
}
template <int kCols>
__device__ __forceinline__ LaneRow<kCols> b_rows_lane() {
  const int lane = threadIdx.x % 32;
  return LaneRow<kCols>(lane % 8 + lane / 16 * 8, lane / 8 % 2);
}
template <int kCols>
__device__ __forceinline__ LaneRow<kCols> b_cols_lane() {
  const int lane = threadIdx.x % 32;
  return LaneRow<kCols>(lane % 8 + lane / 8 % 2 * 8, lane / 16);
}

// Where a lane's ldmatrix rows lie in a swizzled [rows][kCols] tile for kSteps 16-column steps from
// column c0, a multiple of 16 that need not be one of 64 (so, unlike LaneRow, the XOR with row % 8
// may reach c0's chunks): byte offsets worked out once, the fragment's first row (a multiple of 8)
// added by the caller. (row, half) as the lane patterns above give them.
template <int kCols, int kSteps>
struct LaneCols {
  uint32_t off[kSteps];
  __device__ __forceinline__ LaneCols(int row, int half, int c0) {
#pragma unroll
    for (int s = 0; s < kSteps; ++s) off[s] = uint32_t(row * kCols * 2 + 16 * ((c0 / 8 + 2 * s + half) ^ (row % 8)));
  }
};

// The two lane patterns of .trans reads with a column origin (v8 to v10): Pᵀ, dSᵀ as A fragments
// (keys are sP's columns, queries its rows: b_rows_lane's rows and halves), and B fragments of X·Y with
// k down Y's rows (b_cols_lane's).
template <int kCols, int kSteps>
__device__ __forceinline__ LaneCols<kCols, kSteps> a_trans_lane(int c0) {
  const int lane = threadIdx.x % 32;
  return LaneCols<kCols, kSteps>(lane % 8 + lane / 16 * 8, lane / 8 % 2, c0);
}
template <int kCols, int kSteps>
__device__ __forceinline__ LaneCols<kCols, kSteps> b_cols_lane(int c0) {
  const int lane = threadIdx.x % 32;
  return LaneCols<kCols, kSteps>(lane % 8 + lane / 8 % 2 * 8, lane / 16, c0);
}

// C tiles n and n + 1 of one A fragment times the two B fragments an x4 ldmatrix fetched (b[0], b[1]
// and b[2], b[3]).
template <class T>
__device__ __forceinline__ void mma_two_tiles(float (&c0)[4], float (&c1)[4], const uint32_t (&a)[4],
                                              const uint32_t (&b)[4]) {
  sm80::mma_m16n8k16<T>(c0, a, b[0], b[1]);
  sm80::mma_m16n8k16<T>(c1, a, b[2], b[3]);
}

}  // namespace fs::bwd
