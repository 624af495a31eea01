// flashstages — the online softmax of FlashAttention-2 on register tiles laid out as m16n8k16 C
// fragments, and the epilogue that turns its running state into O and LSE. Shared by the attention
// forward kernels whose scores land in that layout: stage 04's mma.sync versions (each warp's 16-row
// tiles) and stage 07's wgmma versions (a warpgroup's m64nN accumulator is the same layout, warp w
// holding rows 16w .. 16w+15: sm90.cuh, wgmma_m64nNk16).
//
// Register layout (one warp): a warp owns kMT row tiles of 16 query rows; lane 4·g + t holds rows g
// and g + 8 of each, and columns 2t, 2t + 1 of every 8-column tile:
//   rS [kMT][Bc/8][4]   raw scores S′ = Q K_jᵀ (unscaled), then probabilities, of the current key block
//   rO [kMT][D/8][4]    the unnormalized output accumulator
//   m, l [kMT][2]       running max (log2 domain) and this thread's part of the running sum, per row
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/attention.cuh"
#include "common/device/sm80.cuh"

namespace fs::attn {

// Max and sum over the four lanes (t = 0..3) that hold one row between them.
__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// The online softmax for one key block (FlashAttention-2, Algorithm 1, lines 8–10), per row, with
// c = |scale|·log2(e) so that every exponential is one exp2 (ex2_approx_ftz) of one fused multiply-add:
//   m_new = max(m, c · rowmax(S′))     S′ = the raw scores in rS; m is kept in the scaled log2 domain
//   P     = exp2(c · S′ - m_new)       in place of S′
//   l     = exp2(m - m_new) · l + rowsum(P)
//   O     = exp2(m - m_new) · O        (P·V is added by the caller)
// in two parts: softmax_scores does the first three and leaves each row's factor exp2(m - m_new) in
// alpha, rescale_o the last. online_softmax runs both at once; a kernel whose O is still being
// accumulated by an asynchronous product when the scores are ready (stage 07 attention v3) runs the
// second after that product has completed.
// The max is taken on the raw scores, one comparison per score (c > 0 keeps the order; mask_scores
// flipped them for a negative scale). l stays a per-thread partial sum (the quad adds it up once, in
// the epilogue). A row that has seen only masked keys has m_new = -inf; subtracting 0 instead keeps
// exp2 from computing -inf - -inf.
// Returns whether any row of the warp has a new maximum (a warp vote, so the same in every lane):
// otherwise every alpha is exactly 1 and O needs no rescaling.
template <int kMT, int kNT>
__device__ __forceinline__ bool softmax_scores(float (&rS)[kMT][kNT][4], float (&m)[kMT][2], float (&l)[kMT][2],
                                               float (&alpha)[kMT][2], float c) {
  bool moved = false;  // has any of this thread's rows a new maximum?
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // h = 0: row g, h = 1: row g + 8
      float row_max = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) row_max = fmaxf(row_max, fmaxf(rS[mt][nt][2 * h], rS[mt][nt][2 * h + 1]));
      const float m_new = fmaxf(m[mt][h], quad_max(row_max) * c);
      const float base = m_new == -INFINITY ? 0.0f : m_new;
      moved |= m_new != m[mt][h];
      alpha[mt][h] = sm80::ex2_approx_ftz(m[mt][h] - base);
      m[mt][h] = m_new;
      float row_sum = 0.0f;
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 2 * h; e < 2 * h + 2; ++e) {
          rS[mt][nt][e] = sm80::ex2_approx_ftz(fmaf(rS[mt][nt][e], c, -base));
          row_sum += rS[mt][nt][e];
        }
      l[mt][h] = alpha[mt][h] * l[mt][h] + row_sum;
    }
  return __any_sync(0xffffffffu, moved);
}

// O *= alpha, row by row. It costs D/2 multiplies per thread per row tile and block (D per row, over
// its quad): at D = 128, Bc = 64 twice the thread's exponentials, which is why softmax_scores' vote
// lets the caller skip it when no maximum moved (usual after a few blocks).
template <int kMT, int kDT>
__device__ __forceinline__ void rescale_o(float (&rO)[kMT][kDT][4], const float (&alpha)[kMT][2]) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) rO[mt][dt][e] *= alpha[mt][e / 2];
}

template <int kMT, int kNT, int kDT>
__device__ __forceinline__ void online_softmax(float (&rS)[kMT][kNT][4], float (&m)[kMT][2], float (&l)[kMT][2],
                                               float (&rO)[kMT][kDT][4], float c) {
  float alpha[kMT][2];
  if (softmax_scores(rS, m, l, alpha, c)) rescale_o(rO, alpha);
}

// O = o_scale · rO / l and LSE = ln 2 · (m + log2 l) for this warp's rows that exist, O in Out (o: the
// tensor, the sequence's row r at o + s.o_at + r·ld; lse: null or [*], contiguous). Rows past nq (padded
// batches) get O = 0 and LSE = -inf, as does a row that saw no key at all (l = 0). o_scale is 1 but for
// fp8 inputs (stage 07 v9), whose V stands for v_descale · V.
template <class Out, int kMT, int kDT>
__device__ __forceinline__ void write_o_lse(Out* o, int64_t ld, float* lse, const Sequence& s, int64_t row0,
                                            const float (&rO)[kMT][kDT][4], const float (&m)[kMT][2],
                                            const float (&l)[kMT][2], float o_scale) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float row_sum = quad_sum(l[mt][h]);  // all 32 lanes shuffle, before any of them leaves
      const int64_t row = row0 + mt * 16 + g + 8 * h;
      if (row >= s.nq_rows) continue;
      const bool seen = row < s.nq && row_sum > 0.0f;
      const float inv_l = seen ? o_scale / row_sum : 0.0f;
      Out* o_row = o + s.o_at + row * ld;
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt)
        *reinterpret_cast<uint32_t*>(o_row + dt * 8 + 2 * t) =
            sm80::pack2<Out>(rO[mt][dt][2 * h] * inv_l, rO[mt][dt][2 * h + 1] * inv_l);
      if (lse && t == 0) lse[s.q_row0 + row] = seen ? (m[mt][h] + log2f(row_sum)) * kLn2 : -INFINITY;
    }
}
// The same into the launch's own O and LSE.
template <class T, int kMT, int kDT>
__device__ __forceinline__ void write_o_lse(const Args<T>& a, const Sequence& s, int64_t row0, const float (&rO)[kMT][kDT][4],
                                            const float (&m)[kMT][2], const float (&l)[kMT][2]) {
  write_o_lse(a.o, a.o_strides.row, a.lse, s, row0, rO, m, l, 1.0f);
}

}  // namespace fs::attn
