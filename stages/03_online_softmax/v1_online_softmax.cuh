// flashstages · stage 03 · v1 — one fused kernel with an online softmax: no N×N buffer.
//
// What changes from stage 02: the three kernels become one. A block owns Br = 64 query rows and
// streams the keys and values past them, Bc rows at a time, through shared memory. For each tile it
// computes the Br×Bc scores in registers, updates a running row maximum m and running sum l, rescales
// the output accumulator it already has, and adds P·V for the tile:
//   m_new = max(m, rowmax(S_tile)),  P = exp(S_tile - m_new)
//   l = exp(m - m_new) · l + rowsum(P),  O = exp(m - m_new) · O + P · V_tile
//   after the last tile: O = O / l, LSE = m + log(l)
// (docs/03_online_softmax.md derives why this gives exactly softmax(S)·V, with a worked example.)
// Exponentials are base 2: log2(e) is folded into the scale once, so each exp is one exp2.
// Why it is faster: S and P never leave the chip. DRAM traffic drops from 4·|S| + inputs to about the
// inputs (K and V are re-read once per query tile, mostly from L2), and extra memory drops from
// O(B·H·N²) to the O(B·H·N) LSE.
// What it still lacks: fp32 FMA on the CUDA cores (stage 04 moves to tensor cores); register tiles so
// small that the products need about one shared-memory wavefront per two FFMAs, a cap near half the FMA
// rate (docs/03_online_softmax.md); and loads that stall the block while each tile arrives (stage 04
// double-buffers).
//
// Run: build/release/stages/03_online_softmax/stage03_online_softmax --seq 4096 --dim 64 [--causal]
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/fp32_tile.cuh"

namespace fs::online::v1 {

constexpr int kThreads = 256;
constexpr int kBr = 64;                // query rows per block
constexpr int kTM = 4;                 // query rows per thread
constexpr int kTeam = 16;              // threads sharing a group of kTM rows: one half-warp
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// Key/value tile height: 64 keeps four tiles within ~66 KB at D <= 64; at D = 128 it drops to 32 so
// that a block needs ~74 KB and three would fit by shared memory (its registers allow two).
template <int D>
struct TileConfig {
  static constexpr int kBc = D > 64 ? 32 : 64;
  static constexpr int kTN = kBc / kTeam;  // score columns per thread
  static constexpr int kTD = D / kTeam;    // output columns per thread
  // sQ [Br][D+1], sK [Bc][D+1], sV [Bc][D], sP [Br][Bc+1] floats; the +1 pads keep the half-warp
  // that reads down a column (sK[tx + 16n][c]) on 16 different banks.
  static constexpr int kSmemFloats = kBr * (D + 1) + kBc * (D + 1) + kBc * D + kBr * (kBc + 1);
  static constexpr std::size_t kSmemBytes = kSmemFloats * sizeof(float);
};

// Reduces across the 16 threads of a row team (lanes differing in their low 4 bits).
template <class Op>
__device__ __forceinline__ float team_reduce(float x, Op op) {
  for (int offset = kTeam / 2; offset > 0; offset /= 2) x = op(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

// grid (ceil(Nq/Br) · B·H), block 256 = 16 row teams × 16 threads. Thread (ty, tx) owns query rows
// ty·4 .. ty·4+3 of the tile, score columns tx + 16·n and output columns tx + 16·t. K and V have one
// head per `group` query heads (1: multi-head; grouped-query attention, common/lib/attention.h): query
// head bh reads K/V head bh / group.
template <int D>
__global__ void __launch_bounds__(kThreads)
    online_softmax_v1_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                             float* __restrict__ o, float* __restrict__ lse, int64_t nq, int64_t nk,
                             float scale_log2, bool causal, int64_t group) {
  using Cfg = TileConfig<D>;
  constexpr int kBc = Cfg::kBc, kTN = Cfg::kTN, kTD = Cfg::kTD;
  extern __shared__ float smem[];
  float* sQ = smem;                      // [Br][D+1]
  float* sK = sQ + kBr * (D + 1);        // [Bc][D+1]
  float* sV = sK + kBc * (D + 1);        // [Bc][D]
  float* sP = sV + kBc * D;              // [Br][Bc+1]

  const int64_t q_tiles = (nq + kBr - 1) / kBr;
  const int64_t bh = blockIdx.x / q_tiles;
  const int64_t q0 = (blockIdx.x % q_tiles) * kBr;
  q += bh * nq * D;
  k += bh / group * nk * D;
  v += bh / group * nk * D;
  const int tx = threadIdx.x % kTeam, ty = threadIdx.x / kTeam;
  const int64_t offset = nk - nq;  // bottom-right causal alignment

  fp32::load_tile<D, kThreads>(sQ, D + 1, q, q0, kBr, nq);

  float rO[kTM][kTD] = {};  // O accumulator, unnormalized: rows ty·4 + r, columns tx + 16·t
  float m[kTM], l[kTM];     // running max (log2 domain) and running sum per row
  for (int r = 0; r < kTM; ++r) m[r] = -INFINITY, l[r] = 0.0f;

  // Causal: the tile's last row sees keys up to (q0 + Br - 1) + offset; later tiles are all masked.
  const int64_t kv_end = causal ? min(nk, q0 + kBr + offset) : nk;
  for (int64_t j0 = 0; j0 < kv_end; j0 += kBc) {
    fp32::load_tile<D, kThreads>(sK, D + 1, k, j0, kBc, nk);
    fp32::load_tile<D, kThreads>(sV, D, v, j0, kBc, nk);
    __syncthreads();  // sK, sV (and, the first time, sQ) are complete before anyone reads them

    float rS[kTM][kTN] = {};  // S = Q Kᵀ for this thread's rows and columns
    for (int c = 0; c < D; ++c) {
      float a[kTM], b[kTN];
      for (int r = 0; r < kTM; ++r) a[r] = sQ[(ty * kTM + r) * (D + 1) + c];
      for (int n = 0; n < kTN; ++n) b[n] = sK[(tx + kTeam * n) * (D + 1) + c];
      for (int r = 0; r < kTM; ++r)
        for (int n = 0; n < kTN; ++n) rS[r][n] += a[r] * b[n];
    }

    for (int r = 0; r < kTM; ++r) {
      const int64_t row = q0 + ty * kTM + r;
      float tile_max = -INFINITY;
      for (int n = 0; n < kTN; ++n) {
        const int64_t col = j0 + tx + kTeam * n;
        const bool masked = col >= nk || (causal && col > row + offset);
        rS[r][n] = masked ? -INFINITY : rS[r][n] * scale_log2;
        tile_max = fmaxf(tile_max, rS[r][n]);
      }
      // Key 0 is visible to every row (offset >= 0), so after the first tile m_new is finite.
      const float m_new = fmaxf(m[r], team_reduce(tile_max, [](float x, float y) { return fmaxf(x, y); }));
      const float alpha = exp2f(m[r] - m_new);  // rescales what was accumulated under the old max
      float tile_sum = 0.0f;
      for (int n = 0; n < kTN; ++n) {
        const float p = exp2f(rS[r][n] - m_new);
        tile_sum += p;
        sP[(ty * kTM + r) * (kBc + 1) + tx + kTeam * n] = p;
      }
      l[r] = alpha * l[r] + team_reduce(tile_sum, [](float x, float y) { return x + y; });
      m[r] = m_new;
      for (int t = 0; t < kTD; ++t) rO[r][t] *= alpha;
    }
    __syncthreads();  // the whole P tile is written before any thread reads other threads' columns

    for (int j = 0; j < kBc; ++j) {
      float p[kTM], vv[kTD];
      for (int r = 0; r < kTM; ++r) p[r] = sP[(ty * kTM + r) * (kBc + 1) + j];
      for (int t = 0; t < kTD; ++t) vv[t] = sV[j * D + tx + kTeam * t];
      for (int r = 0; r < kTM; ++r)
        for (int t = 0; t < kTD; ++t) rO[r][t] += p[r] * vv[t];
    }
    __syncthreads();  // sK, sV and sP are no longer read before the next tile overwrites them
  }

  for (int r = 0; r < kTM; ++r) {
    const int64_t row = q0 + ty * kTM + r;
    if (row >= nq) continue;
    const float inv_l = 1.0f / l[r];
    for (int t = 0; t < kTD; ++t) o[(bh * nq + row) * D + tx + kTeam * t] = rO[r][t] * inv_l;
    if (lse && tx == 0) lse[bh * nq + row] = (m[r] + log2f(l[r])) * kLn2;
  }
}

}  // namespace fs::online::v1
