// Stage 07 attention, role header: the shared-memory tile one TMA load fills and wgmma reads — its loads,
// the rows a load brings past a sequence's end (and their zeroing), and its matrix descriptors. Every
// version uses it (v1 in one warpgroup, v2 to v11 in the warp-specialized block of block.cuh).
//
// The tile. A [rows][D] tile in shared memory is D/64 panels side by side, panel p holding columns
// 64p .. 64p+63 of every row: `rows` rows of 128 bytes (64 16-bit elements, one row of the 128-byte
// swizzle), 1024-byte atoms of 8 rows, chunk c of row r stored at chunk c ^ (r % 8) — what a TMA load
// with CU_TENSOR_MAP_SWIZZLE_128B writes and sm90::matrix_descriptor_sw128 describes.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/sm90.cuh"

namespace fs::flash_tma {

// Elements of ElemBytes bytes in one 128-byte panel row: 64 16-bit ones, 128 fp8 ones (v9).
template <int ElemBytes>
constexpr int kPanelCols = 128 / ElemBytes;

// ---- Sequences inside the maps' planes ---------------------------------------------------------
// The tensor maps see Q, K and V as planes of rows (launch.cuh, head_map): one plane per (batch entry,
// head) of Nq or Nk rows for dense and padded batches, one per head of all the entries' rows for packed
// ones, each where the tensor's strides put it. A plane is named by two coordinates, its head and its
// batch entry (TMA's dimensions 2 and 3).
struct Plane {
  int32_t head, batch;
};
// A Sequence's q_row0 / k_row0 count rows as if the tensor were contiguous (rows of [*, D]), so the
// flat plane b·heads + h is their quotient by the plane's rows and the sequence's first row within it
// the remainder; `heads` (H for Q, KVH for K and V) splits the flat plane into its two coordinates.
struct PlaneRow {
  Plane plane;  // the map's third and fourth coordinates
  int64_t row;  // the sequence's first row within the plane
};
__device__ __forceinline__ PlaneRow plane_row(int64_t row0, int64_t plane_rows, int64_t heads) {
  const uint32_t plane = uint32_t(row0 / plane_rows);  // below 2^31: encode_tensor_map checks B and H
  return {{int32_t(plane % uint32_t(heads)), int32_t(plane / uint32_t(heads))}, row0 % plane_rows};
}
// The sequence's planes in Q's map, and in K's and V's (its K/V head's under grouped-query attention).
template <class A, class S>
__device__ __forceinline__ PlaneRow q_plane_row(const A& a, const S& s) {
  return plane_row(s.q_row0, a.seq_q, a.heads);
}
template <class A, class S>
__device__ __forceinline__ PlaneRow kv_plane_row(const A& a, const S& s) {
  return plane_row(s.k_row0, a.seq_k, a.heads / a.group);
}

// Thread 0 fills a [rows][D] tile with one TMA box per panel: rows first .. first + rows - 1 of `plane`
// (rows past the plane's end arrive as zeros), counted on `bar`.
template <int D, int ElemBytes = 2>
__device__ __forceinline__ void load_tile(unsigned char* tile, const CUtensorMap* map, int rows, int64_t first,
                                          Plane plane, uint64_t* bar) {
  constexpr int kCols = kPanelCols<ElemBytes>;
#pragma unroll
  for (int p = 0; p < D / kCols; ++p)
    sm90::tma_load_4d(tile + p * rows * 128, map, kCols * p, int32_t(first), plane.head, plane.batch, bar);
}

// TMA stops a box only at the plane's end, not at a sequence's: a tile that runs past the last row of
// its sequence brings the padding (padded batches) or the next entry's rows (packed ones). The keys
// among them are masked in S (-inf by a select, whatever they hold), but P = 0 times a NaN or an
// infinity in V is NaN, and so is a query row's NaN times the zero it is to be written as; so those
// rows of Q's tile and of the last V tile are zeroed in shared memory before any product reads them,
// as stage 04's loads zero-fill them. For a tile of `rows` rows that starts `first` rows into a
// sequence of n rows (n > first) whose first row is row `begin` of a plane of `plane_rows`: the first
// such row, or `rows` when none lies inside the plane (dense batches: past the sequence's end is past
// the plane's, and TMA writes zeros there itself).
__device__ __forceinline__ int first_foreign_row(int64_t first, int rows, int64_t n, int64_t begin,
                                                 int64_t plane_rows) {
  const int64_t keep = n - first;
  return keep < rows && begin + n < plane_rows ? int(keep) : rows;
}

// Rows `from` .. rows − 1 of a landed [rows][D] tile set to zero, 16 bytes per store, by `count`
// threads of which this is number `index`: in each panel they are one run of bytes (the swizzle moves
// 16-byte chunks only within a row). Each thread then makes its stores visible to the async proxy,
// through which wgmma reads shared memory; a barrier after it publishes them.
template <int D, int ElemBytes = 2>
__device__ __forceinline__ void zero_rows(unsigned char* tile, int rows, int from, int index, int count) {
  const int chunks = (rows - from) * 8;  // per panel
  for (int e = index; e < D / kPanelCols<ElemBytes> * chunks; e += count)
    *reinterpret_cast<uint4*>(tile + e / chunks * rows * 128 + from * 128 + e % chunks * 16) = make_uint4(0, 0, 0, 0);
  sm90::fence_proxy_async();
}

// The descriptor of the 16-column (k) slice ks of rows first .. first + 63 (A) or of all rows (B) of a
// K-major tile whose panels are `rows` rows high (Q as A, K_j as B of S = Q·K_jᵀ, k = the head
// dimension): panel ks / 4, 32 bytes per 16 columns inside its 128-byte rows, 128 bytes per row of
// offset (whole atoms of 8 rows, so the swizzle's phase is kept); SBO = one atom (the next 8 rows); LBO
// unused (16 k stay inside one row).
// The descriptor of row `first` is encoded once and the slice's offset added to it: ks is a
// compile-time constant in every caller's unrolled loop, so each further slice costs one add.
__device__ __forceinline__ uint64_t k_major_descriptor(uint32_t tile, int rows, int first, int ks) {
  return sm90::matrix_descriptor_advance(sm90::matrix_descriptor_sw128(tile + first * 128, 16, 1024),
                                         ks / 4 * rows * 128 + ks % 4 * 32);
}

// The descriptor of rows 16·kk .. 16·kk + 15 of V_j [Bc][D] as the B operand of O += P·V_j (k = keys,
// n = the head dimension, stored n-contiguous: N-major): two atoms of 8 key rows per 16 keys; SBO = one
// atom (the next 8 keys); LBO = one panel (the next 64 columns of D, Bc rows × 128 bytes further).
__device__ __forceinline__ uint64_t v_descriptor(uint32_t tile, int rows, int kk) {
  return sm90::matrix_descriptor_advance(sm90::matrix_descriptor_sw128(tile, rows * 128, 1024), kk * 2048);
}

}  // namespace fs::flash_tma
