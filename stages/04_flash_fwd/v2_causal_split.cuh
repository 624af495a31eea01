// flashstages · stage 04 · v2 — v1 plus causal stage splitting: key blocks above the diagonal are never
// loaded, blocks below it run without a mask, only blocks that cross it apply one
//
// What changes from v1: the key loop is split in two stages (FlashAttention-2, section 3.1.1).
//   stage 1, j < n_full:            every key visible to every row of the tile → no mask at all
//   stage 2, n_full <= j < n_blocks: the blocks that cross the diagonal (and the Nk tail) → masked
//   j >= n_blocks:                  above the diagonal → never loaded, never computed
// The tiles of one head are launched last-first under the causal mask, so the longest start first.
// Why it is faster: a causal tile visits about (q0 + Br + Nk - Nq)/Bc key blocks instead of Nk/Bc,
// about half of them summed over the tiles (docs/04_flash_fwd.md counts it); non-causal problems mask
// only the Nk tail block now. (Numbers: the stage README's generated table; NOTES.md says why
// non-causal D = 128 runs slower than v1.)
// What it still lacks: loads that stall the block until they land (v3) and fragments gathered 32
// bits at a time (v4).
//
// Run: build/release/stages/04_flash_fwd/stage04_flash_fwd --version v2 --dtype fp16 --seq 8192 --dim 128 --causal
#pragma once

#include <type_traits>

#include "fragments.cuh"

namespace fs::flash::v2 {

template <int D>
struct Config {
  static constexpr int kWarps = 4;
  static constexpr int kMT = 1;                   // 16-row tiles per warp
  static constexpr int kBr = kWarps * 16 * kMT;   // 64 query rows per block
  static constexpr int kBc = 64;                  // keys per block
  static constexpr int kThreads = kWarps * 32;
  // Q fragments stay in registers for the whole key loop (D/4 registers per 16 rows). At D = 256 that
  // would be 64 registers beside 128 for O: they are read from shared memory at every key block instead.
  static constexpr bool kQInRegs = D <= 128;
  static constexpr int kStride = D + 8;  // padded rows (common/device/attention.cuh)
  static constexpr std::size_t kSmemBytes = std::size_t(kBr + 2 * kBc) * kStride * 2;
};

// grid: B·H·ceil(Nq/Br) blocks of kThreads. Warp w owns query rows q0 + 16w .. q0 + 16w + 15.
template <class T, int D>
__global__ void __launch_bounds__(Config<D>::kThreads) flash_fwd_v2_kernel(const Args<T> a) {
  using C = Config<D>;
  constexpr int kBr = C::kBr, kBc = C::kBc, kMT = C::kMT, kS = C::kStride;
  constexpr int kNT = kBc / 8, kDT = D / 8, kKT = D / 16;  // 8-key tiles, 8-column tiles, 16-wide k steps
  extern __shared__ __align__(16) unsigned char smem[];
  T* sQ = reinterpret_cast<T*>(smem);  // [Br][D+8]
  T* sK = sQ + kBr * kS;               // [Bc][D+8]
  T* sV = sK + kBc * kS;               // [Bc][D+8]

  const Sequence s = locate(a, kBr, /*reverse_tiles=*/a.causal);
  const int warp = threadIdx.x / 32;
  const int64_t row0 = s.q0 + warp * 16 * kMT;  // this warp's first query row
  const int wr = warp * 16 * kMT;               // ... as a row of sQ

  load_tile<T, D, C::kThreads>(sQ, a.q + s.q_row0 * D, s.q0, kBr, s.nq);
  __syncthreads();  // sQ complete
  uint32_t rQ[kMT][kKT][4];  // Q as A fragments: [row tile][k step]
  if constexpr (C::kQInRegs)
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int kk = 0; kk < kKT; ++kk) lds_a<kS>(rQ[mt][kk], sQ, wr + mt * 16, kk * 16);

  float rO[kMT][kDT][4] = {};
  float m[kMT][2], l[kMT][2];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) m[mt][0] = m[mt][1] = -INFINITY, l[mt][0] = l[mt][1] = 0.0f;

  // One key block; kMasked (a std::bool_constant) says whether any of its scores can be hidden.
  auto step = [&](int64_t j, auto kMasked) {
    const int64_t col0 = j * kBc;
    __syncthreads();  // every warp has finished reading the previous sK and sV
    load_tile<T, D, C::kThreads>(sK, a.k + s.k_row0 * D, col0, kBc, s.nk);
    load_tile<T, D, C::kThreads>(sV, a.v + s.k_row0 * D, col0, kBc, s.nk);
    __syncthreads();  // sK and sV complete

    float rS[kMT][kNT][4] = {};  // S′ = Q K_jᵀ: [row tile][key tile][C fragment]
#pragma unroll
    for (int kk = 0; kk < kKT; ++kk) {
      uint32_t qa[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        if constexpr (C::kQInRegs)
          for (int i = 0; i < 4; ++i) qa[mt][i] = rQ[mt][kk][i];
        else
          lds_a<kS>(qa[mt], sQ, wr + mt * 16, kk * 16);
      }
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
        uint32_t b0, b1;
        lds_b_rows<kS>(b0, b1, sK, nt * 8, kk * 16);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) mma_m16n8k16<T>(rS[mt][nt], qa[mt], b0, b1);
      }
    }

    mask_scores<decltype(kMasked)::value>(rS, a.scale_log2 < 0, s, row0, col0, a.causal);
    online_softmax(rS, m, l, rO, fabsf(a.scale_log2));

#pragma unroll
    for (int kk = 0; kk < kNT / 2; ++kk) {
      uint32_t pa[kMT][4];  // P as A fragments of this 16-key step: [row tile]
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) p_fragment<T>(rS, mt, kk, pa[mt]);
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        uint32_t b0, b1;
        lds_b_cols<kS>(b0, b1, sV, kk * 16, dt * 8);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) mma_m16n8k16<T>(rO[mt][dt], pa[mt], b0, b1);
      }
    }
  };

  // The masked blocks are those that meet the Br - 1 key columns some rows of the tile see and others
  // do not: with Br = Bc = 64, one block when (Nk - Nq) mod Bc is 0 or Bc - 1, two otherwise.
  const int64_t n_blocks = key_blocks(s, kBr, kBc, a.causal);  // blocks above the diagonal: never visited
  const int64_t n_full = unmasked_blocks(s, kBc, a.causal);
  int64_t j = 0;
  for (; j < n_full; ++j) step(j, std::false_type{});
  for (; j < n_blocks; ++j) step(j, std::true_type{});

  write_o_lse(a, s, row0, rO, m, l);
}

}  // namespace fs::flash::v2
