// flashstages · stage 04 — what every FlashAttention-2 version of this stage shares: the problem as
// the kernels see it (dense, padded or packed batches), where a block's rows live, which key blocks it
// visits, and the register-level steps that do not change from v1 to v4 — masking, the online
// softmax, P as the A operand of the second product, and the epilogue that writes O and LSE. The
// versions differ in how tiles reach shared memory and fragments (v1 → v3), which key blocks are
// visited and masked (v2) and the tile shape (v4); the arithmetic below is the same in all of them.
//
// Register layout (one warp, m16n8k16 C fragments, see mma.cuh): a warp owns kMT row tiles of 16 query
// rows; lane 4·g + t holds rows g and g + 8 of each, and columns 2t, 2t + 1 of every 8-column tile:
//   rS [kMT][Bc/8][4]   raw scores, then probabilities, of the current key block
//   rO [kMT][D/8][4]    the unnormalized output accumulator
//   m, l [kMT][2]       running max (log2 domain) and this thread's part of the running sum, per row
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "mma.cuh"

namespace fs::flash {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// The launch arguments every version takes. Tensors are [B, H, N, D] (dense and padded batches) or
// [H, total, D] (packed batches, seq_q / seq_k = the totals); see fs_attention_params.
template <class T>
struct Args {
  const T* __restrict__ q;
  const T* __restrict__ k;
  const T* __restrict__ v;
  T* __restrict__ o;
  float* __restrict__ lse;  // may be null
  int64_t seq_q, seq_k;
  int64_t heads;
  int64_t q_tiles;          // query tiles per (batch entry, head): the grid is B·H·q_tiles blocks
  float scale_log2;         // softmax scale · log2(e): exp(scale·s) = exp2(scale_log2·s); may be negative
  bool causal;
  const int32_t* __restrict__ seq_lens;      // [B] or null
  const int32_t* __restrict__ cu_seqlens_q;  // [B+1] or null (then cu_seqlens_k is null too)
  const int32_t* __restrict__ cu_seqlens_k;
};

// One block's share of the problem: query rows [q0, q0 + Br) of one (batch entry, head).
struct Sequence {
  int64_t q_row0;   // row of Q, O (and entry of LSE) where this (b, h) starts ([*, D] row index)
  int64_t k_row0;   // the same for K, V
  int64_t nq, nk;   // query and key rows that take part
  int64_t nq_rows;  // query rows to write: nq, or seq_q for padded batches (rows past nq get zeros)
  int64_t q0;       // this block's first query row, within the sequence
  int64_t offset;   // nk - nq: query i sees keys j <= i + offset under the causal mask
};

// Block x of the grid → its sequence and query tile. Blocks of one (b, h) are consecutive so that they
// run together and share that head's K and V in L2. With reverse_tiles the last query tile comes
// first: under a causal mask it has the most keys, and starting the longest blocks first keeps the end
// of the grid from waiting on one of them.
template <class T>
__device__ __forceinline__ Sequence locate(const Args<T>& a, int Br, bool reverse_tiles) {
  const int64_t x = blockIdx.x;
  const int64_t bh = x / a.q_tiles, b = bh / a.heads, h = bh % a.heads;
  const int64_t tile = reverse_tiles ? a.q_tiles - 1 - x % a.q_tiles : x % a.q_tiles;
  Sequence s;
  s.q0 = tile * Br;
  if (a.cu_seqlens_q) {
    const int64_t q_begin = a.cu_seqlens_q[b], k_begin = a.cu_seqlens_k[b];
    s.nq = a.cu_seqlens_q[b + 1] - q_begin;
    s.nk = a.cu_seqlens_k[b + 1] - k_begin;
    s.nq_rows = s.nq;
    s.q_row0 = h * a.seq_q + q_begin;
    s.k_row0 = h * a.seq_k + k_begin;
  } else {
    s.nq = a.seq_lens ? a.seq_lens[b] : a.seq_q;
    s.nk = a.seq_lens ? a.seq_lens[b] : a.seq_k;
    s.nq_rows = a.seq_q;
    s.q_row0 = bh * a.seq_q;
    s.k_row0 = bh * a.seq_k;
  }
  s.offset = s.nk - s.nq;
  return s;
}

// How many key blocks of Bc the tile's rows see: all of them, or under the causal mask up to the
// diagonal of its last real row. Zero when the tile holds no real row (then it only writes zeros).
__device__ __forceinline__ int64_t key_blocks(const Sequence& s, int Br, int Bc, bool causal) {
  if (s.q0 >= s.nq) return 0;
  const int64_t last_row = min(s.q0 + Br, s.nq) - 1;
  const int64_t kv_end = causal ? min(s.nk, last_row + s.offset + 1) : s.nk;
  return (kv_end + Bc - 1) / Bc;
}

// How many of those blocks need no mask for any real row of the tile (v2 on): every key in range and,
// under the causal mask, at or left of the tile's first row's diagonal (row q0 sees keys <= q0 + offset).
__device__ __forceinline__ int64_t unmasked_blocks(const Sequence& s, int Bc, bool causal) {
  if (s.q0 >= s.nq) return 0;
  const int64_t in_range = s.nk / Bc;
  return causal ? min(in_range, (s.q0 + s.offset + 1) / Bc) : in_range;
}

// Readies the raw scores S of one key block for online_softmax: -inf where the mask hides a key, and
// all of them negated first when the scale is negative (a negative scale reverses the order of the
// scores; flipped, the row maximum is still a plain max and the exponent uses |scale|).
// Key col is hidden from query row when col >= nk (past the end) or, under the causal mask, when
// col > row + offset. Entry e of tile nt is row row0 + r, column col0 + c with r = 16·mt + g + 8·(e/2)
// and c = 8·nt + 2t + e%2 (row0: the warp's first row, col0: the block's first key); in those 32-bit
// block coordinates the tests are c >= nk - col0 and c - r > row0 + offset - col0, where c - r is a
// constant plus 2t - g.
template <bool kMasked, int kMT, int kNT>
__device__ __forceinline__ void mask_scores(float (&rS)[kMT][kNT][4], bool negate, const Sequence& s, int64_t row0,
                                            int64_t col0, bool causal) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  if (negate)  // the same for the whole grid: no divergence, and usually not taken
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) rS[mt][nt][e] = -rS[mt][nt][e];
  if constexpr (kMasked) {
    constexpr int64_t kFar = 1 << 20;  // further than any key of the block is from any row of the warp
    const int keys = int(min(s.nk - col0, kFar));
    const int diagonal = causal ? int(max(min(row0 + s.offset - col0, kFar), -kFar)) : int(kFar);
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = 16 * mt + g + 8 * (e / 2), c = 8 * nt + 2 * t + e % 2;
          if (c >= keys || c - r > diagonal) rS[mt][nt][e] = -INFINITY;
        }
  }
}

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
// c = |scale|·log2(e) so that every exponential is one exp2 (ex2_approx) of one fused multiply-add:
//   m_new = max(m, c · rowmax(S))      m is kept in the scaled log2 domain
//   P     = exp2(c · S - m_new)        in place of S
//   l     = exp2(m - m_new) · l + rowsum(P)
//   O     = exp2(m - m_new) · O        (P·V is added by the caller)
// The max is taken on the raw scores, one comparison per score (c > 0 keeps the order; mask_scores
// flipped them for a negative scale). l stays a per-thread partial sum (the quad adds it up once, in
// the epilogue). A row that has seen only masked keys has m_new = -inf; subtracting 0 instead keeps
// exp2 from computing -inf - -inf.
template <int kMT, int kNT, int kDT>
__device__ __forceinline__ void online_softmax(float (&rS)[kMT][kNT][4], float (&m)[kMT][2], float (&l)[kMT][2],
                                               float (&rO)[kMT][kDT][4], float c) {
  float alpha[kMT][2];
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
      alpha[mt][h] = ex2_approx(m[mt][h] - base);
      m[mt][h] = m_new;
      float row_sum = 0.0f;
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 2 * h; e < 2 * h + 2; ++e) {
          rS[mt][nt][e] = ex2_approx(fmaf(rS[mt][nt][e], c, -base));
          row_sum += rS[mt][nt][e];
        }
      l[mt][h] = alpha[mt][h] * l[mt][h] + row_sum;
    }
  // Rescaling O costs D/2 multiplies per row and block — at D = 128 more than the softmax itself. When
  // no row of the warp has a new maximum every alpha is exactly 1 and the rescale can be skipped; after
  // the first few key blocks that is the common case. The vote keeps the branch uniform in the warp.
  if (__any_sync(0xffffffffu, moved))
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
        for (int e = 0; e < 4; ++e) rO[mt][dt][e] *= alpha[mt][e / 2];
}

// P (fp32 C fragments) → the A fragment of the kk-th 16-key step of O += P·V for row tile mt, rounded
// to T, without leaving registers: the C layout of key tiles 2kk and 2kk+1 is exactly that A layout.
// Converting one step at a time, just before its mma, lets each fp32 score die as soon as it is packed.
template <class T, int kMT, int kNT>
__device__ __forceinline__ void p_fragment(const float (&rS)[kMT][kNT][4], int mt, int kk, uint32_t (&a)[4]) {
  a[0] = pack2<T>(rS[mt][2 * kk][0], rS[mt][2 * kk][1]);          // row g,     keys 2t, 2t+1
  a[1] = pack2<T>(rS[mt][2 * kk][2], rS[mt][2 * kk][3]);          // row g + 8, keys 2t, 2t+1
  a[2] = pack2<T>(rS[mt][2 * kk + 1][0], rS[mt][2 * kk + 1][1]);  // row g,     keys 8 + 2t, 8 + 2t+1
  a[3] = pack2<T>(rS[mt][2 * kk + 1][2], rS[mt][2 * kk + 1][3]);  // row g + 8, keys 8 + 2t, 8 + 2t+1
}

// O = rO / l and LSE = ln 2 · (m + log2 l) for this warp's rows that exist. Rows past nq (padded
// batches) get O = 0 and LSE = -inf, as does a row that saw no key at all (l = 0).
template <class T, int kMT, int kDT>
__device__ __forceinline__ void write_o_lse(const Args<T>& a, const Sequence& s, int64_t row0, const float (&rO)[kMT][kDT][4],
                                            const float (&m)[kMT][2], const float (&l)[kMT][2]) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  constexpr int D = kDT * 8;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float row_sum = quad_sum(l[mt][h]);  // all 32 lanes shuffle, before any of them leaves
      const int64_t row = row0 + mt * 16 + g + 8 * h;
      if (row >= s.nq_rows) continue;
      const bool seen = row < s.nq && row_sum > 0.0f;
      const float inv_l = seen ? 1.0f / row_sum : 0.0f;
      T* o_row = a.o + (s.q_row0 + row) * D;
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt)
        *reinterpret_cast<uint32_t*>(o_row + dt * 8 + 2 * t) =
            pack2<T>(rO[mt][dt][2 * h] * inv_l, rO[mt][dt][2 * h + 1] * inv_l);
      if (a.lse && t == 0) a.lse[s.q_row0 + row] = seen ? (m[mt][h] + log2f(row_sum)) * kLn2 : -INFINITY;
    }
}

}  // namespace fs::flash
