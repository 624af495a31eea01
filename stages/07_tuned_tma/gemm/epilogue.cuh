// Stage 07 gemm, the epilogues the versions share: a warpgroup's accumulators stored from registers
// into C (every version's fallback, and the only way out up to v6), and staged in shared memory,
// rounded to 16 bits and 128-byte swizzled, for a TMA store (v7 on).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/gemm_epilogue.cuh"
#include "common/device/sm90.cuh"
#include "common/lib/flashstages.h"
#include "stages/07_tuned_tma/gemm/tiles.cuh"

namespace fs::gemm_tma {

// The epilogue of one warpgroup's m64nN accumulator `d` (sm90::wgmma_m64nNk16's layout; fp32, or
// int32 from wgmma_m64nNk32_s8 into int32 C), whose row 0 is row m0 of C and column 0 column n0: each
// thread stores its pairs of columns, rows g and g + 8 of its warp's 16, through gemm::store_pair
// (alpha, beta, bounds, pair stores where `pairs`).
template <int N, class TOut, class TAcc>
__device__ __forceinline__ void store_accumulators(TOut* C, int64_t ldc, int64_t M, int64_t Ncols, int64_t m0,
                                                   int64_t n0, const TAcc (&d)[N / 2], float alpha, float beta,
                                                   bool pairs) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32 % 4;
  const int64_t m = m0 + 16 * warp + lane / 4;
#pragma unroll
  for (int j = 0; j < N / 8; ++j) {
    const int64_t n = n0 + 8 * j + 2 * (lane % 4);
    gemm::store_pair(C, ldc, M, Ncols, m, n, d[4 * j], d[4 * j + 1], alpha, beta, pairs);
    gemm::store_pair(C, ldc, M, Ncols, m + 8, n, d[4 * j + 2], d[4 * j + 3], alpha, beta, pairs);
  }
}

// The same into C of the element type the call names at run time, c_dtype: FS_FP16, FS_BF16, or FS_FP32
// (what validation lets through), as every version's epilogue has it.
template <int N>
__device__ __forceinline__ void store_accumulators(void* C, int32_t c_dtype, int64_t ldc, int64_t M, int64_t Ncols,
                                                   int64_t m0, int64_t n0, const float (&d)[N / 2], float alpha,
                                                   float beta, bool pairs) {
  if (c_dtype == FS_FP16) store_accumulators<N>(static_cast<__half*>(C), ldc, M, Ncols, m0, n0, d, alpha, beta, pairs);
  else if (c_dtype == FS_BF16)
    store_accumulators<N>(static_cast<__nv_bfloat16*>(C), ldc, M, Ncols, m0, n0, d, alpha, beta, pairs);
  else store_accumulators<N>(static_cast<float*>(C), ldc, M, Ncols, m0, n0, d, alpha, beta, pairs);
}

// C's staging for a TMA store (v7, v8, v9): a warpgroup's m64nN accumulators, rounded to 16 bits, into
// `slot`, one box of 64 rows × 64 columns at a time: 64 rows of 128 bytes (one row of 16-bit C per
// 128-byte swizzle row), 1024-byte aligned, row r at byte 128·r, 16-byte chunk c (columns 8c .. 8c + 7
// of the box) at chunk c ^ (r % 8) — the layout a TMA store with CU_TENSOR_MAP_SWIZZLE_128B reads.
// Warp w holds rows 16w .. 16w + 15: per pair of 8-column chunks (j, j + 1) of the tile, its
// accumulators d[4j .. 4j + 7], two to a 32-bit register (p[2j .. 2j + 3] below), are four 8 × 8
// matrices, (rows 0–7, chunk j), (rows 8–15, chunk j), (rows 0–7, chunk j + 1), (rows 8–15, chunk
// j + 1): one stmatrix.x4, lane l addressing row l % 8 of matrix l / 8. The 8 rows of a matrix land
// in 8 different chunks of their 128-byte rows: all 32 banks, one pass each.
// This writes chunk pair j (j even; j % 8 is its place in its box) from those four registers.
__device__ __forceinline__ void stmatrix_chunk_pair(unsigned char* slot, int j, uint32_t r0, uint32_t r1, uint32_t r2,
                                                    uint32_t r3) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32 % 4;
  const int row = 16 * warp + 8 * (lane / 8 % 2) + lane % 8;  // the row this lane addresses
  const int chunk = j % 8 + lane / 16;                         // lanes 16–31 address chunk j + 1
  sm90::stmatrix_x4(slot + row * kRowBytes + (chunk ^ (row % 8)) * 16, r0, r1, r2, r3);
}

// Box `box` (columns 64·box .. 64·box + 63) of the accumulators `d`, times alpha, rounded to TOut
// (v7, v8). `box` must be a constant after unrolling, as every caller's is: it picks registers.
template <class TOut, int N>
__device__ __forceinline__ void stage_box(unsigned char* slot, const float (&d)[N / 2], float alpha, int box) {
  static_assert(N % 64 == 0, "whole 64-column boxes");
#pragma unroll
  for (int j = 8 * box; j < 8 * box + 8; j += 2)
    // sm80::pack2: the pair rounded to TOut, the first column in the low half (as stmatrix takes it).
    stmatrix_chunk_pair(slot, j, sm80::pack2<TOut>(alpha * d[4 * j], alpha * d[4 * j + 1]),
                        sm80::pack2<TOut>(alpha * d[4 * j + 2], alpha * d[4 * j + 3]),
                        sm80::pack2<TOut>(alpha * d[4 * j + 4], alpha * d[4 * j + 5]),
                        sm80::pack2<TOut>(alpha * d[4 * j + 6], alpha * d[4 * j + 7]));
}

// v9 rounds the whole tile first, so that the accumulators are free for the next tile's products while
// C waits in half as many registers: p[q] = (alpha·d[2q], alpha·d[2q + 1]) rounded to TOut, the first in
// the low half, then stages box `box` from those (a constant after unrolling, as above).
template <class TOut, int N>
__device__ __forceinline__ void pack_accumulators(uint32_t (&p)[N / 4], const float (&d)[N / 2], float alpha) {
#pragma unroll
  for (int q = 0; q < N / 4; ++q) p[q] = sm80::pack2<TOut>(alpha * d[2 * q], alpha * d[2 * q + 1]);
}

// The same for alpha = 1 (v10): the rounding alone, 64 conversions and no multiply.
template <class TOut, int N>
__device__ __forceinline__ void pack_accumulators(uint32_t (&p)[N / 4], const float (&d)[N / 2]) {
#pragma unroll
  for (int q = 0; q < N / 4; ++q) p[q] = sm80::pack2<TOut>(d[2 * q], d[2 * q + 1]);
}

template <int N>
__device__ __forceinline__ void stage_packed_box(unsigned char* slot, const uint32_t (&p)[N / 4], int box) {
  static_assert(N % 64 == 0, "whole 64-column boxes");
#pragma unroll
  for (int j = 8 * box; j < 8 * box + 8; j += 2)
    stmatrix_chunk_pair(slot, j, p[2 * j], p[2 * j + 1], p[2 * j + 2], p[2 * j + 3]);
}

}  // namespace fs::gemm_tma
