// flashstages · stage 04 · v3 — v2 with K and V double-buffered through cp.async: key block j + 1 is
// in flight into shared memory while block j is computed
//
// What changes from v2: how tiles reach shared memory. cp.async (common/device/sm80.cuh) copies 16
// bytes global → shared without a register round trip and without stalling the thread
// (load_tile_async); sK and sV have two stages, the copies of key block j + 1 issued into one right
// after the barrier that starts block j; that one barrier per block does the work of v2's two (block
// j has landed for every thread, and every warp is done with block j - 1, whose stage is refilled
// next). The padded layout and the 32-bit fragment gathers are v2's. At D = 256 a key block is
// Bc = 32 rows, so that Q and the two stages of K and V (99 KiB) fit an A100's 163 KiB.
// Why it is faster: the copies of the next block overlap this block's arithmetic, and one barrier per
// block is gone. (Numbers: the stage README's generated table.)
// What it still lacks: fragments gathered 32 bits at a time (v4: ldmatrix, swizzled tiles).
//
// Run: build/release/stages/04_flash_fwd/stage04_flash_fwd --version v3 --dtype fp16 --seq 8192 --dim 128
#pragma once

#include <type_traits>

#include "fragments.cuh"

namespace fs::flash::v3 {

template <int D>
struct Config {
  static constexpr int kWarps = 4;
  static constexpr int kMT = 1;                   // 16-row tiles per warp
  static constexpr int kBr = kWarps * 16 * kMT;   // 64 query rows per block
  static constexpr int kBc = D == 256 ? 32 : 64;  // keys per block
  static constexpr int kThreads = kWarps * 32;
  // Q fragments stay in registers for the whole key loop (D/4 registers per 16 rows). At D = 256 that
  // would be 64 registers beside 128 for O: they are read from shared memory at every key block instead.
  static constexpr bool kQInRegs = D <= 128;
  static constexpr int kStride = D + 8;  // padded rows (common/device/attention.cuh)
  // sQ [Br][D+8] + sK, sV [2][Bc][D+8], 2-byte elements.
  static constexpr std::size_t kSmemBytes = std::size_t(kBr + 4 * kBc) * kStride * 2;
};

// grid: B·H·ceil(Nq/Br) blocks of kThreads. Warp w owns query rows q0 + 16w .. q0 + 16w + 15.
template <class T, int D>
__global__ void __launch_bounds__(Config<D>::kThreads) flash_fwd_v3_kernel(const Args<T> a) {
  using C = Config<D>;
  constexpr int kBr = C::kBr, kBc = C::kBc, kMT = C::kMT, kS = C::kStride;
  constexpr int kNT = kBc / 8, kDT = D / 8, kKT = D / 16;  // 8-key tiles, 8-column tiles, 16-wide k steps
  extern __shared__ __align__(16) unsigned char smem[];
  T* sQ = reinterpret_cast<T*>(smem);  // [Br][D+8]
  T* sK = sQ + kBr * kS;               // [2][Bc][D+8]: stage j % 2 holds key block j
  T* sV = sK + 2 * kBc * kS;           // [2][Bc][D+8]

  const Sequence s = locate(a, kBr, /*reverse_tiles=*/a.causal);
  const int warp = threadIdx.x / 32;
  const int64_t row0 = s.q0 + warp * 16 * kMT;  // this warp's first query row
  const int wr = warp * 16 * kMT;               // ... as a row of sQ

  const T* gK = a.k + s.k_row0 * D;             // [nk, D]
  const T* gV = a.v + s.k_row0 * D;             // [nk, D]
  const int64_t n_blocks = key_blocks(s, kBr, kBc, a.causal);  // blocks above the diagonal: never visited
  const int64_t n_full = unmasked_blocks(s, kBc, a.causal);

  // Key block j → stage j % 2, as one cp.async group.
  auto copy_kv = [&](int64_t j) {
    load_tile_async<T, D, C::kThreads>(sK + j % 2 * kBc * kS, gK, j * kBc, kBc, s.nk);
    load_tile_async<T, D, C::kThreads>(sV + j % 2 * kBc * kS, gV, j * kBc, kBc, s.nk);
    cp_async_commit_group();
  };

  load_tile_async<T, D, C::kThreads>(sQ, a.q + s.q_row0 * D, s.q0, kBr, s.nq);
  cp_async_commit_group();
  if (n_blocks > 0) copy_kv(0);
  cp_async_wait_group<0>();
  __syncthreads();  // sQ (and key block 0) complete
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
    cp_async_wait_group<0>();  // this thread's copies of block j have landed
    __syncthreads();  // everyone's have, and every warp is done with block j - 1, whose stage is refilled next
    if (j + 1 < n_blocks) copy_kv(j + 1);  // in flight while block j is computed
    const T* sKj = sK + j % 2 * kBc * kS;  // [Bc][D+8]
    const T* sVj = sV + j % 2 * kBc * kS;  // [Bc][D+8]

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
        lds_b_rows<kS>(b0, b1, sKj, nt * 8, kk * 16);
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
        lds_b_cols<kS>(b0, b1, sVj, kk * 16, dt * 8);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) mma_m16n8k16<T>(rO[mt][dt], pa[mt], b0, b1);
      }
    }
  };

  int64_t j = 0;
  for (; j < n_full; ++j) step(j, std::false_type{});
  for (; j < n_blocks; ++j) step(j, std::true_type{});

  write_o_lse(a, s, row0, rO, m, l);
}

}  // namespace fs::flash::v3
