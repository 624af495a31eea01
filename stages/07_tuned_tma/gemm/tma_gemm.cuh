// What the stage 07 GEMM versions share, kept once so that each vN_*.cuh shows only its own idea:
// the shared-memory operand tile that one TMA load fills and wgmma reads (its layout, its loads, its
// matrix descriptors), the host side of the same geometry (the operands' tensor maps), the block's
// place in C (one tile per block, or a persistent grid's TileSchedule), and the epilogue of a
// warpgroup's accumulators: stored from registers, or staged in shared memory for a TMA store (v7, v8).
//
// The operand tile. Every tile is kBK = 64 deep in k: 64 16-bit elements are 128 bytes, one row of the
// 128-byte swizzle. An operand is stored either k-contiguous (K-major: A untransposed, B transposed)
// or x-contiguous (x = m for A, n for B; MN-major: A transposed, B untransposed), and the tile keeps
// the stored orientation, as stage 06 v9's did; wgmma's transpose bits say which.
//
//   K-major, kBX × 64:  kBX rows (x), 128 bytes each (k 0..63). One TMA box of 64 (k) × kBX (rows).
//     byte offset of (x, k) before the swizzle: x·128 + 2k
//   MN-major, 64 × kBX: kBX / 64 panels side by side in x, each 64 rows (k) × 128 bytes (x 0..63 of
//     the panel), 8 KiB apart. One TMA box of 64 (x) × 64 (k rows) per panel.
//     byte offset of (x, k): (x / 64)·8192 + k·128 + 2·(x % 64)
// An int8 tile (v6) is the K-major one byte for byte: 128 int8 of k per 128-byte row, one TMA box of
// 128 (k) × kBX, the same swizzle and descriptors; a wgmma's 32 bytes of k are 32 int8 instead of 16
// 16-bit elements. (Integer wgmma reads K-major tiles only, so int8 has no MN-major tile.)
// Both then swizzle every 1024-byte atom of 8 rows: 16-byte chunk c of row r is stored at chunk
// c ^ (r % 8). For one atom, the chunk each logical chunk lands in (rows down, chunks across):
//
//          logical chunk:  0  1  2  3  4  5  6  7
//          row 0           0  1  2  3  4  5  6  7
//          row 1           1  0  3  2  5  4  7  6
//          row 2           2  3  0  1  6  7  4  5
//          row 3           3  2  1  0  7  6  5  4
//          row 4           4  5  6  7  0  1  2  3
//          …
//          row 7           7  6  5  4  3  2  1  0
//
// so the 8 rows of one logical chunk (what a tensor-core read of 8 rows × 16 bytes wants) fall in 8
// different chunks, 4 banks each: all 32 banks, no conflict. TMA writes this layout
// (CU_TENSOR_MAP_SWIZZLE_128B) and the descriptors tell wgmma to read it (sm90::matrix_descriptor_sw128).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "common/device/gemm_epilogue.cuh"
#include "common/device/sm90.cuh"
#include "common/lib/device.h"
#include "common/lib/gemm.h"
#include "common/lib/tensor_map.h"

namespace fs::gemm_tma {

constexpr int kBK = 64;         // k per tile: 128 bytes of 16-bit elements, one swizzle row
constexpr int kRowBytes = 128;  // one row of a tile, either orientation
constexpr int kAtomBytes = 8 * kRowBytes;  // the swizzle's repeat: 8 rows
constexpr int kWgmmaK = 16;     // k of one wgmma.mma_async
constexpr int kWarpgroup = 128;

// One operand's tile in one pipeline stage: kBX (m or n) × kBK, stored K-major or MN-major (above).
template <bool kIsMNMajor, int kBX>
struct OperandTile {
  static_assert(kBX % 64 == 0 && kBX <= 256, "whole 64-wide panels; a TMA box is at most 256 rows");
  static constexpr bool kMNMajor = kIsMNMajor;
  static constexpr int kBytes = kBX * kBK * 2;       // 16-bit elements
  static constexpr int kPanelBytes = kBK * kRowBytes;  // MN-major: one 64-wide panel, 8 KiB

  // Thread 0 issues the TMA loads of the tile whose first element is (x0, k0) into `dst` (1024-byte
  // aligned), each counted on `full`. Parts outside the matrix arrive as zeros. With a `multicast`
  // mask (v5) each box is multicast instead (sm90::tma_load_2d_multicast): written to `dst` and
  // counted on `full` at the same offsets in every block of the cluster the mask names. The mask is a
  // constant at every call, so the choice costs nothing.
  __device__ static void load(const CUtensorMap* map, unsigned char* dst, uint64_t* full, int32_t x0, int32_t k0,
                              uint16_t multicast = 0) {
    auto box = [&](unsigned char* d, int32_t c0, int32_t c1) {
      if (multicast) sm90::tma_load_2d_multicast(d, map, c0, c1, full, multicast);
      else sm90::tma_load_2d(d, map, c0, c1, full);
    };
    if constexpr (kMNMajor) {
#pragma unroll
      for (int p = 0; p < kBX / 64; ++p) box(dst + p * kPanelBytes, x0 + 64 * p, k0);
    } else {
      box(dst, k0, x0);
    }
  }

  // The descriptor of the wgmma operand that starts at row x (a multiple of 64) and k = 16·ks of the
  // tile at shared address `tile` (int8: k = 32·ks): extent 64 (A) or the whole kBX (B) in x, 16 in k.
  //   K-major:  start at row x, 32 bytes per 16 k along the row; SBO = one atom (8 rows of x);
  //             LBO unused (16 k = 32 bytes stay inside one row).
  //   MN-major: start at panel x / 64, two atoms (16 k rows) per ks; SBO = one atom (8 rows of k);
  //             LBO = one panel (the next 64 of x).
  __device__ static uint64_t descriptor(uint32_t tile, int x, int ks) {
    if constexpr (kMNMajor)
      return sm90::matrix_descriptor_sw128(tile + x / 64 * kPanelBytes + ks * kSliceBytes, kPanelBytes, kAtomBytes);
    else
      return sm90::matrix_descriptor_sw128(tile + x * kRowBytes + ks * kSliceBytes, 16, kAtomBytes);
  }
  // The bytes from slice ks to ks + 1 above: descriptor(tile, x, ks) is descriptor(tile, x, 0) moved on
  // by ks·kSliceBytes (sm90::matrix_descriptor_advance), how v11 walks a tile's slices.
  static constexpr uint32_t kSliceBytes = kMNMajor ? 2 * kAtomBytes : kWgmmaK * 2;
};

// A's tile is MN-major when A is stored K×M (trans_a); B's when B is stored K×N (not trans_b).
template <bool kTransA, int kBM>
using TileA = OperandTile<kTransA, kBM>;
template <bool kTransB, int kBN>
using TileB = OperandTile<!kTransB, kBN>;

// The tensor map OperandTile<mn_major, box_x>::load reads through: the operand as stored (x_extent =
// M or N), the box one load copies: one 128-byte row wide (64 16-bit elements, or 128 int8), as many
// rows as the tile has x (K-major) or as a row has elements (MN-major: the tile's k). Host code.
inline TensorMap2d operand_map(bool mn_major, int box_x, const void* base, DType t, int64_t x_extent, int64_t k_extent,
                               int64_t ld) {
  const int row_elements = kRowBytes / int(dtype_size(t));
  TensorMap2d m;
  m.base = base;
  m.dtype = t;
  m.ld = ld;
  m.cols = mn_major ? x_extent : k_extent;
  m.rows = mn_major ? k_extent : x_extent;
  m.box_cols = row_elements;  // 128 bytes: the swizzle span
  m.box_rows = mn_major ? row_elements : box_x;
  return m;
}

// The tensor maps of A and B for a block tile kBM × kBN × kBK, as TileA and TileB load them. InvalidSize
// for an extent TMA's signed 32-bit coordinates cannot reach, CudaError if the driver refuses (the
// alignment TMA needs was refused in validation already: GemmSupport::operand_align).
template <int kBM, int kBN>
Status encode_operand_maps(const GemmParams& p, CUtensorMap* a, CUtensorMap* b) {
  const DType t = DType(p.ab_dtype);
  FS_RETURN_IF_ERROR(encode_tensor_map(operand_map(p.trans_a, kBM, p.a, t, p.m, p.k, p.lda), a));
  return encode_tensor_map(operand_map(!p.trans_b, kBN, p.b, t, p.n, p.k, p.ldb), b);
}

// C's tensor map for a version that stores 16-bit C tiles with TMA (v7): boxes of kBoxRows × 64
// columns (128 bytes, the 128-byte swizzle's row), and whether this call may use it. It may when C is
// fp16 or bf16, beta = 0 (a TMA store writes, it cannot read C to add beta·C), C's base and rows are
// 16-byte multiples (check_tensor_map), and so is a row's used part, N · 2 bytes: where N ends inside
// a 16-byte chunk, the H100 wrote the whole chunk: every row's bytes past column N up to the chunk's
// end, zeros, into C's padding (stage 07's tests caught it at every N not a multiple of 8; CUDA 13.0,
// driver 580).
// Otherwise *use = false, nothing is encoded, and the kernel stores from registers. CudaError only if
// the driver refuses a map that passed those checks. Host code.
template <int kBoxRows>
Status c_store_map(const GemmParams& p, CUtensorMap* map, bool* use) {
  *use = false;
  if ((p.c_dtype != FS_FP16 && p.c_dtype != FS_BF16) || p.beta != 0.0f || p.n % 8 != 0) return Status::Success;
  TensorMap2d c;
  c.base = p.c;
  c.dtype = DType(p.c_dtype);
  c.cols = p.n;
  c.rows = p.m;
  c.ld = p.ldc;
  c.box_cols = kRowBytes / 2;
  c.box_rows = kBoxRows;
  if (check_tensor_map(c) != Status::Success) return Status::Success;
  FS_RETURN_IF_ERROR(encode_tensor_map(c, map));
  *use = true;
  return Status::Success;
}

// A persistent kernel's grid (v4, v6): one block per SM (each SM holds one block: 193 KiB of shared
// memory), never more than there are kBM × kBN tiles of C. Host code.
template <int kBM, int kBN>
Status persistent_blocks(const GemmParams& p, unsigned* blocks) {
  DeviceProps dev;
  FS_RETURN_IF_ERROR(current_device(&dev));
  const int64_t tiles = (p.m + kBM - 1) / kBM * ((p.n + kBN - 1) / kBN);
  *blocks = unsigned(std::min(tiles, int64_t(dev.sms)));
  return Status::Success;
}

// This block's tile of C, row-major over the grid of kBM × kBN tiles (1D grid). m0, n0 < 2^31: the
// tensor maps refuse larger extents.
template <int kBM, int kBN>
__device__ __forceinline__ void block_tile(int64_t N, int32_t& m0, int32_t& n0) {
  const int64_t tiles_n = (N + kBN - 1) / kBN;
  m0 = int32_t(blockIdx.x / tiles_n * kBM);
  n0 = int32_t(blockIdx.x % tiles_n * kBN);
}

// The order in which a persistent grid takes C's tiles (v4 and v6; v5 over its clusters' tiles). Tiles of
// kTileM × kTileN are numbered t = 0 .. tiles − 1, and worker w of W (a block, or a cluster) takes
// t = w, w + W, …, so at any moment the grid works on about W consecutive t. The numbering walks C in
// groups of kGroupM tile-rows, column by column inside a group (here kGroupM = 4, tiles_m = 6,
// tiles_n = 3; the last group is shorter):
//
//             n-tile 0  1  2
//   m-tile 0       0  4  8      group 0: t = 0 .. 11
//          1       1  5  9
//          2       2  6 10
//          3       3  7 11
//          4      12 14 16      group 1: 2 tile-rows, t = 12 .. 17
//          5      13 15 17
//
// so W consecutive tiles cover about kGroupM tile-rows × W / kGroupM tile-columns of C instead of
// W / tiles_n whole tile-rows: fewer rows of A and columns of B in flight at once (each version says
// why its kGroupM). Fewer than kGroupM tile-rows in C: one group, the order is column-major.
template <int kTileM, int kTileN, int kGroupM>
struct TileSchedule {
  int64_t tiles_m, tiles_n;  // C in kTileM × kTileN tiles

  __device__ TileSchedule(int64_t M, int64_t N)
      : tiles_m((M + kTileM - 1) / kTileM), tiles_n((N + kTileN - 1) / kTileN) {}

  __device__ int64_t tiles() const { return tiles_m * tiles_n; }

  // The first row m0 and column n0 of tile t: multiples of the tile below M and N, so m0 ≤ M − 1 and
  // n0 ≤ N − 1, below 2^31 (the tensor maps refuse larger extents).
  __device__ void tile(int64_t t, int32_t& m0, int32_t& n0) const {
    const int64_t group_tiles = kGroupM * tiles_n;  // tiles in one full group
    const int64_t first_m = t / group_tiles * kGroupM;
    const int64_t rows = min(int64_t(kGroupM), tiles_m - first_m);  // tile-rows in t's group
    const int64_t in_group = t % group_tiles;
    m0 = int32_t((first_m + in_group % rows) * kTileM);
    n0 = int32_t(in_group / rows * kTileN);
  }
};

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
