// Stage 05: the two products over the head dim that open every query tile — S and dP, or Sᵀ and dPᵀ
// with the keys as rows — for one warp, as the versions feed the tensor cores: by 32-bit gathers from
// padded tiles (v2 to v4, and deterministic.cuh's kernels), by ldmatrix from swizzled ones (v5 to v7),
// and as warp tiles of 16·kMT rows × 32 (v8 to v10).
#pragma once

#include <cstdint>

#include "common/device/attention.cuh"
#include "common/device/sm80.cuh"
#include "stages/05_flash_bwd/fragments.cuh"

namespace fs::bwd {

// The two products that share their k loop over the head dim, for one warp: X = A1 B1ᵀ and
// Y = A2 B2ᵀ, A rows a0 .. a0 + 15 of sA1, sA2 against the kN rows of sB1, sB2 ([rows][D+8] tiles),
// as C fragments [8-column tile][4]. The K/V kernels call it as Sᵀ = K_j Q_iᵀ, dPᵀ = V_j dO_iᵀ (keys
// as rows); the deterministic dQ kernel as S = Q_i K_jᵀ, dP = dO_i V_jᵀ (queries as rows).
template <class T, int D, int kN>
__device__ __forceinline__ void two_products(float (&x)[kN / 8][4], float (&y)[kN / 8][4], const T* sA1, const T* sA2,
                                             int a0, const T* sB1, const T* sB2) {
  constexpr int kS = D + 8;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    uint32_t a1[4], a2[4];  // rows a0.. of sA1, sA2 as A fragments of this 16-wide step over D
    attn::lds_a<kS>(a1, sA1, a0, kk * 16);
    attn::lds_a<kS>(a2, sA2, a0, kk * 16);
#pragma unroll
    for (int nt = 0; nt < kN / 8; ++nt) {
      uint32_t b0, b1;
      attn::lds_b_rows<kS>(b0, b1, sB1, nt * 8, kk * 16);
      sm80::mma_m16n8k16<T>(x[nt], a1, b0, b1);
      attn::lds_b_rows<kS>(b0, b1, sB2, nt * 8, kk * 16);
      sm80::mma_m16n8k16<T>(y[nt], a2, b0, b1);
    }
  }
}

// two_products read by ldmatrix: X = A1 B1ᵀ and Y = A2 B2ᵀ for one warp, 16 A rows of sA1, sA2
// against the kN rows of sB1, sB2 (swizzled [rows][D] tiles; shared addresses, the A ones at the
// warp's first row), as C fragments [8-column tile][4]. Called as Sᵀ = K_j Q_iᵀ, dPᵀ = V_j dO_iᵀ.
template <class T, int D, int kN>
__device__ __forceinline__ void two_products(float (&x)[kN / 8][4], float (&y)[kN / 8][4], uint32_t sA1, uint32_t sA2,
                                             uint32_t sB1, uint32_t sB2, const LaneRow<D>& a_off,
                                             const LaneRow<D>& b_off) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    uint32_t a1[4], a2[4];  // the 16 rows of sA1, sA2 as A fragments of this 16-wide step over D
    sm80::ldmatrix_x4(a1, sA1 + a_off.at(kk));
    sm80::ldmatrix_x4(a2, sA2 + a_off.at(kk));
#pragma unroll
    for (int m = 0; m < kN / 16; ++m) {
      uint32_t b[4];  // B fragments of 8-column tiles 2m, 2m + 1
      sm80::ldmatrix_x4(b, sB1 + m * 16 * D * 2 + b_off.at(kk));
      mma_two_tiles<T>(x[2 * m], x[2 * m + 1], a1, b);
      sm80::ldmatrix_x4(b, sB2 + m * 16 * D * 2 + b_off.at(kk));
      mma_two_tiles<T>(y[2 * m], y[2 * m + 1], a2, b);
    }
  }
}

// X = A Bᵀ for one warp: rows a0 .. a0 + 16·kMT − 1 of sA against rows b0 .. b0 + 31 of sB (swizzled
// [rows][D] tiles, shared addresses at those rows), k over D; x[m-tile][8-column tile][C fragment]. Each
// B fragment serves the kMT m-tiles (v8: kMT = 2, v9 and v10: 4 at D = 64).
template <class T, int D, int kMT>
__device__ __forceinline__ void product(float (&x)[kMT][4][4], uint32_t sA, uint32_t sB, const LaneRow<D>& a_off,
                                        const LaneRow<D>& b_off) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    uint32_t a[kMT][4];  // the kMT 16-row tiles as A fragments of this 16-wide step
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) sm80::ldmatrix_x4(a[mt], sA + mt * 16 * D * 2 + a_off.at(kk));
#pragma unroll
    for (int np = 0; np < 2; ++np) {
      uint32_t b[4];  // B fragments of 8-column tiles 2np, 2np + 1
      sm80::ldmatrix_x4(b, sB + np * 16 * D * 2 + b_off.at(kk));
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) mma_two_tiles<T>(x[mt][2 * np], x[mt][2 * np + 1], a[mt], b);
    }
  }
}

}  // namespace fs::bwd
