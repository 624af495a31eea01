// Stage 07 gemm, the operand tiles every version shares: the shared-memory tile of A or B that one
// TMA load fills and wgmma reads, its layout, its loads and its matrix descriptors (the tensor maps
// those loads read through are encoded on the host: launch.cuh, gemm_tma::encode_operand_maps).
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

#include <cstdint>

#include "common/device/sm90.cuh"

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

}  // namespace fs::gemm_tma
