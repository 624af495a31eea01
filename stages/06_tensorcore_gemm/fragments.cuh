// Stage 06: from shared memory into registers, as several versions share it unchanged; each piece is
// introduced by the version named in its section.
//   v3–v5    lds128: four floats with one LDS.128
//   v9–v16   the ldmatrix addressing of a SwizzledTile (tiles.cuh): each lane's row, and every other
//            fragment block as a compile-time XOR and add from it
//   v10–v15  transpose_s8: an x-contiguous int8 tile rewritten k-contiguous, which ldmatrix can read
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace fs::gemm {

// ---- v3: 128-bit shared loads ------------------------------------------------------------------
// Four floats of shared memory into four registers with one LDS.128 (s 16-byte aligned).
__device__ __forceinline__ void lds128(float* r, const float* s) {
  const float4 v = *reinterpret_cast<const float4*>(s);
  r[0] = v.x;
  r[1] = v.y;
  r[2] = v.z;
  r[3] = v.w;
}

// ---- v9: ldmatrix addressing --------------------------------------------------------------------
// This lane's row address for an ldmatrix .x4 that loads a 16(x) × 16(k) block of 16-bit values (or
// 16 × 32 int8, the same 512 bytes) at (x0, k = 0) of a SwizzledTile. Lanes 8i .. 8i+7 address the
// rows of 8×8 tile i; the tiles come in the order the mma fragment registers want them:
//   A (x = m): tile 0 (m 0-7, k 0-7), 1 (m 8-15, k 0-7), 2 (m 0-7, k 8-15), 3 (m 8-15, k 8-15)
//   B (x = n): tile 0 (n 0-7, k 0-7), 1 (n 0-7, k 8-15), 2 (n 8-15, k 0-7), 3 (n 8-15, k 8-15)
// so that A's .x4 is a[0..3] of one m16n8k16 fragment, B's is b[0..1] of two n8 tiles (k in 16-bit
// units; for int8 read "k 0-15, k 16-31"). A k-contiguous tile has x rows: each lane points at row x,
// chunk k/8, and plain ldmatrix hands lane 4g+t row g. An x-contiguous tile (16-bit only) has k rows:
// each lane points at row k, chunk x/8, and ldmatrix .trans hands lane 4g+t column g.
template <class Tile, bool kOperandB>
__device__ __forceinline__ uint32_t ldmatrix_lane_offset(int lane, int x0) {
  const int i = lane / 8, r = lane % 8;
  const int dx = kOperandB ? (i >> 1) * 8 : (i & 1) * 8;  // x of the tile's first row or column
  const int dk = kOperandB ? (i & 1) : (i >> 1);          // 16-byte chunk of k (8 halves, 16 int8)
  if constexpr (Tile::kKContig) return Tile::offset(x0 + dx + r, dk * 16);
  else return Tile::offset(dk * 8 + r, (x0 + dx) * 2);
}

// The offset of block (x0 + 16·i, 32 bytes of k times s) from the lane's offset of block (x0, 0), by a
// compile-time XOR and add (no swizzle worked out in the loop). K-contiguous rows: 32·s bytes along the
// row flips bit 5 only (the key is unchanged), 16·i rows keep the key (it repeats every 8 rows, or 16
// for 64-byte rows): XOR 32·s, add 16·i rows. X-contiguous rows (x0 a multiple of 64 halves, one
// 128-byte line): 32·i bytes along the row flips bits 5..6, 16·s rows keep the key: XOR 32·i, add 16·s rows.
template <class Tile>
__device__ __forceinline__ uint32_t ldmatrix_block_offset(uint32_t lane_offset, int s, int i) {
  if constexpr (Tile::kKContig) return (lane_offset ^ uint32_t(32 * s)) + uint32_t(16 * i * Tile::kRowBytes);
  else return (lane_offset ^ uint32_t(32 * i)) + uint32_t(16 * s * Tile::kRowBytes);
}

// ---- v10: the int8 byte transpose ----------------------------------------------------------------
// ldmatrix moves 16-bit values: .trans cannot turn an x-contiguous int8 tile into k-contiguous
// fragments. v10 copies such an operand in its stored orientation (Src, k rows) and rewrites it into a
// k-contiguous SwizzledTile (Dst, x rows) before the fragment loads. Each thread step takes a 4 k × 4 x
// block: four 32-bit loads (one per k row), a 4×4 byte transpose in registers (__byte_perm, PRMT),
// four 32-bit stores (one per x row). Consecutive threads walk k first, so a warp's stores cover
// whole 64-byte rows of Dst.
template <class Src, class Dst, int kThreads>
__device__ __forceinline__ void transpose_s8(unsigned char* dst, const unsigned char* src, int tid) {
  static_assert(!Src::kKContig && Dst::kKContig && Src::kBK == Dst::kBK && Src::kCols == Dst::kRows, "one tile");
  constexpr int kKBlocks = Src::kBK / 4, kBlocks = kKBlocks * (Src::kCols / 4);
  static_assert(kBlocks % kThreads == 0, "whole blocks per thread");
#pragma unroll
  for (int b = tid; b < kBlocks; b += kThreads) {
    const int k = b % kKBlocks * 4, x = b / kKBlocks * 4;
    uint32_t w[4];  // w[i]: bytes x..x+3 of k row k+i
#pragma unroll
    for (int i = 0; i < 4; ++i) w[i] = *reinterpret_cast<const uint32_t*>(src + Src::offset(k + i, x));
    // Byte j of w[i] is (k+i, x+j); out[j] gathers byte j of w[0..3]: (x+j, k..k+3).
    const uint32_t lo01 = __byte_perm(w[0], w[1], 0x5140), hi01 = __byte_perm(w[0], w[1], 0x7362);
    const uint32_t lo23 = __byte_perm(w[2], w[3], 0x5140), hi23 = __byte_perm(w[2], w[3], 0x7362);
    const uint32_t out[4] = {__byte_perm(lo01, lo23, 0x5410), __byte_perm(lo01, lo23, 0x7632),
                             __byte_perm(hi01, hi23, 0x5410), __byte_perm(hi01, hi23, 0x7632)};
#pragma unroll
    for (int j = 0; j < 4; ++j) *reinterpret_cast<uint32_t*>(dst + Dst::offset(x + j, k)) = out[j];
  }
}

}  // namespace fs::gemm
