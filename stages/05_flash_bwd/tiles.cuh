// Stage 05: tiles in and out of shared memory — the XOR swizzle of unpadded 16-bit tiles (v5 to v10),
// the cp.async copies of a tile's rows (v5 to v10) and of its LSE and delta (v4 to v10),
// and a warp's C fragments stored into a swizzled tile (P and dS, v8 to v10).
#pragma once

#include <cstdint>

#include "common/device/sm80.cuh"
#include "common/device/bwd_args.cuh"

namespace fs::bwd {

// ---- Swizzled [rows][kCols] tiles of 16-bit elements ----------------------------------------------
// The 16-byte chunk c of row r is stored at chunk c ^ (r % 8): the 8 rows that one ldmatrix phase
// reads at one logical chunk land in 8 different 16-byte bank groups, and cp.async's 16-byte writes
// stay aligned.

// Element offset of (r, c): chunk c / 8 of row r is stored at chunk (c / 8) ^ (r % 8).
template <int kCols>
__device__ __forceinline__ int swizzled(int r, int c) {
  return r * kCols + ((c / 8) ^ (r % 8)) * 8 + c % 8;
}

// Rows [first, first + rows) of a sequence's [n, D] matrix, its rows ld elements apart (D: contiguous;
// a strided tensor's row stride), into a swizzled [rows][D] tile by cp.async, 16 bytes per copy; rows
// past n read nothing and are zero-filled. The caller commits the group.
template <class T, int D, int kThreads>
__device__ __forceinline__ void copy_tile_swizzled(T* dst /* [rows][D] */, const T* src /* [n, D] */, int64_t first,
                                                   int rows, int64_t n, int64_t ld = D) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  for (int e = threadIdx.x; e < rows * kChunks; e += kThreads) {
    const int r = e / kChunks, c = e % kChunks * 8;
    const bool in_range = first + r < n;
    sm80::cp_async_cg_16_zfill(dst + swizzled<D>(r, c), in_range ? src + (first + r) * ld + c : src, in_range ? 16 : 0);
  }
}

// LSE_i and delta_i of the query tile at q0 into one stage of sLse and sDelta, by cp.async, 4 bytes per
// copy: thread r < Br copies LSE of row r, thread Br + r delta of row r. Rows past nq (the sequence's
// query rows) read nothing and become zeros, as plain loads would make them. The copies join the
// caller's group.
template <int kBr, class T>
__device__ __forceinline__ void copy_lse_delta(float* sLse /* [Br] */, float* sDelta /* [Br] */, const Args<T>& a,
                                               int64_t q_base, int64_t q0, int64_t nq) {
  if (threadIdx.x < 2 * kBr) {
    const int r = threadIdx.x % kBr;
    const bool lse = threadIdx.x < kBr, real = q0 + r < nq;
    const float* src = (lse ? a.lse : a.delta) + q_base + (real ? q0 + r : 0);
    sm80::cp_async_ca_zfill<4>((lse ? sLse : sDelta) + r, src, real ? 4 : 0);
  }
}

// A warp's 16·kMT × 32 C fragments, rounded to T, into the swizzled [Br][Bc] tile at rows wq.., columns
// wk.. (a row's two neighbours of a fragment as one 32-bit store).
template <class T, int kBc, int kMT>
__device__ __forceinline__ void store_tile(T* tile, const float (&x)[kMT][4][4], int wq, int wk) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
        *reinterpret_cast<uint32_t*>(tile + swizzled<kBc>(wq + 16 * mt + g + 8 * h, wk + 8 * nt + 2 * t)) =
            sm80::pack2<T>(x[mt][nt][2 * h], x[mt][nt][2 * h + 1]);
}

}  // namespace fs::bwd
