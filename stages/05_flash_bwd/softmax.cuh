// Stage 05: the softmax's gradient on C fragments — P recomputed from the forward's LSE, then
// dS = P ∘ (dP - delta) — with the mask as a select, in the two fragment layouts the versions use:
// keys as rows (p_and_ds_t: v2 to v7, and deterministic.cuh's K/V kernel) and queries as rows
// (p_and_ds: v8 to v10's warp tiles). LSE is the forward's, so P needs no maximum: it is at most 1 for
// any scale, negative too.
#pragma once

#include "common/device/sm80.cuh"

namespace fs::bwd {

// Pᵀ and dSᵀ of one warp's 16 keys × Br queries, in place: rS holds Sᵀ on entry and Pᵀ on exit, rdP
// holds dPᵀ on entry and dSᵀ on exit. Entry e of query tile nt is key wk + g + 8·(e/2), query
// 8·nt + 2t + e%2 of the tile (block coordinates). With kMasked, a hidden pair — key past Nk, query
// past Nq, or key right of the query's diagonal — gets P = 0 by a select, so whatever its exponent
// gave (inf at |scale·S| ~ 1e4) never reaches dS.
template <bool kMasked, int kQT>
__device__ __forceinline__ void p_and_ds_t(float (&rS)[kQT][4], float (&rdP)[kQT][4], const float* sLse,
                                           const float* sDelta, float scale_log2, int wk, int keys, int queries,
                                           int diagonal) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
#pragma unroll
  for (int nt = 0; nt < kQT; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int key = wk + g + 8 * (e / 2), query = 8 * nt + 2 * t + e % 2;
      float p = sm80::ex2_approx_ftz(fmaf(scale_log2, rS[nt][e], -sLse[query]));
      if constexpr (kMasked)
        if (key >= keys || query >= queries || key - query > diagonal) p = 0.0f;
      rS[nt][e] = p;
      rdP[nt][e] = p * (rdP[nt][e] - sDelta[query]);
    }
}

// P and dS of one warp's 16·kMT queries × 32 keys, in place: rS holds S on entry and P on exit, rdP holds
// dP on entry and dS on exit. Entry e of tile (mt, nt) is query wq + 16mt + g + 8·(e/2), key
// wk + 8nt + 2t + e%2 (block coordinates). With kMasked, a hidden pair — key past Nk, query past Nq, or
// key right of the query's diagonal — gets P = 0 by a select, so whatever its exponent gave (inf at
// |scale·S| ~ 1e4) never reaches dS. (p_and_ds_t, with queries as rows.)
template <bool kMasked, int kMT>
__device__ __forceinline__ void p_and_ds(float (&rS)[kMT][4][4], float (&rdP)[kMT][4][4], const float* sLse,
                                         const float* sDelta, float scale_log2, int wq, int wk, int keys,
                                         int queries, int diagonal) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int query = wq + 16 * mt + g + 8 * h;
      const float lse = sLse[query], delta = sDelta[query];
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int e = 2 * h + c, key = wk + 8 * nt + 2 * t + c;
          float p = sm80::ex2_approx_ftz(fmaf(scale_log2, rS[mt][nt][e], -lse));
          if constexpr (kMasked)
            if (key >= keys || query >= queries || key - query > diagonal) p = 0.0f;
          rS[mt][nt][e] = p;
          rdP[mt][nt][e] = p * (rdP[mt][nt][e] - delta);
        }
    }
}

}  // namespace fs::bwd
