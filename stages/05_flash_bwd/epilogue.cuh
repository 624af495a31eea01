// Stage 05: the K/V kernels' epilogue — dK_j = scale · dSᵀ Q and dV_j, summed in a warp's C fragments
// over every query tile the block met, rounded to T and written once: for warps that own 16 keys × D
// (v4 to v7) and for the warp tiles of 32 keys × D/2 (v8 to v10). A key row past the sequence's rows
// (attn::KeyBlock::nk_rows) is not written; a padded entry's rows past its length get the zeros no
// query added to.
#pragma once

#include <cstdint>

#include "common/device/sm80.cuh"
#include "common/device/bwd_args.cuh"

namespace fs::bwd {

// From the warp's C fragments [8-column tile][4]: keys key0 + g + 8h (those below key_rows; key0 the
// warp's first, as a row of the head), columns 8·dt + 2t, 2t+1.
template <class T, int D>
__device__ __forceinline__ void store_dk_dv(const Args<T>& a, const float (&rdK)[D / 8][4], const float (&rdV)[D / 8][4],
                                            int64_t k_base, int64_t key0, int64_t key_rows) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t key = key0 + g + 8 * h;
    if (key >= key_rows) continue;
    T* dk_row = a.dk + (k_base + key) * D + 2 * t;
    T* dv_row = a.dv + (k_base + key) * D + 2 * t;
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      *reinterpret_cast<uint32_t*>(dk_row + dt * 8) =
          sm80::pack2<T>(a.scale * rdK[dt][2 * h], a.scale * rdK[dt][2 * h + 1]);
      *reinterpret_cast<uint32_t*>(dv_row + dt * 8) = sm80::pack2<T>(rdV[dt][2 * h], rdV[dt][2 * h + 1]);
    }
  }
}

// From a warp tile's C fragments [m-tile][8-column tile][4]: keys key0 + 16mt + g + 8h (those below
// key_rows), columns c0 + 8·dt + 2t, 2t+1, key row `key` of dK at dk + key·ldk and of dV at dv + key·ldv
// (the K/V head's first rows; ldk, ldv: D, or the strides of K and V).
template <class T, int D>
__device__ __forceinline__ void store_dk_dv(const Args<T>& a, const float (&rdK)[2][D / 16][4],
                                            const float (&rdV)[2][D / 16][4], T* dk, int64_t ldk, T* dv, int64_t ldv,
                                            int64_t key0, int64_t key_rows, int c0) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t key = key0 + 16 * mt + g + 8 * h;
      if (key >= key_rows) continue;
      T* dk_row = dk + key * ldk + c0 + 2 * t;
      T* dv_row = dv + key * ldv + c0 + 2 * t;
#pragma unroll
      for (int dt = 0; dt < D / 16; ++dt) {
        *reinterpret_cast<uint32_t*>(dk_row + dt * 8) =
            sm80::pack2<T>(a.scale * rdK[mt][dt][2 * h], a.scale * rdK[mt][dt][2 * h + 1]);
        *reinterpret_cast<uint32_t*>(dv_row + dt * 8) = sm80::pack2<T>(rdV[mt][dt][2 * h], rdV[mt][dt][2 * h + 1]);
      }
    }
}
// The same for contiguous dK, dV, whose K/V head starts at row k_base (v8, v9).
template <class T, int D>
__device__ __forceinline__ void store_dk_dv(const Args<T>& a, const float (&rdK)[2][D / 16][4],
                                            const float (&rdV)[2][D / 16][4], int64_t k_base, int64_t key0,
                                            int64_t key_rows, int c0) {
  store_dk_dv<T, D>(a, rdK, rdV, a.dk + k_base * D, D, a.dv + k_base * D, D, key0, key_rows, c0);
}

}  // namespace fs::bwd
