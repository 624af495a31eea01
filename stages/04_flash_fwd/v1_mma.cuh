// flashstages · stage 04 · v1 — FlashAttention-2 on tensor cores: mma.sync m16n8k16, warps over query
// rows, P kept in registers
//
// What changes from stage 03: both products run on the tensor cores, fp16 or bf16 in, fp32 out
// (mma.sync.m16n8k16, common/device/sm80.cuh). The work is split as in FlashAttention-2: a block owns
// Br = 64 query rows and each of its 4 warps owns 16, so a warp computes whole rows of S′ = Q Kᵀ for a
// key block, runs the online softmax on them alone, turns its P into the A operand of O += P V in
// registers (fragments.cuh: p_fragment) and accumulates its own rows of O. Only K and V are shared
// between the warps, through shared memory:
//   for each key block j:  sK, sV ← K_j, V_j (load_tile, a barrier);  rS = Q K_jᵀ;  mask, online
//                          softmax, P → A fragments;  rO += P V_j       (per warp, registers only)
// Why it is faster: the tensor cores' ceiling is about ten times the FFMA one (docs/04_flash_fwd.md
// splits the jump). (Numbers: the stage README's generated table.)
// What it still lacks: every key block is visited and masked, even those the causal mask hides (v2);
// every tile load stalls the block (v3: cp.async); fragments are gathered 32 (for V: 16) bits at a
// time (v4: ldmatrix).
//
// Run: build/release/stages/04_flash_fwd/stage04_flash_fwd --version v1 --dtype fp16 --seq 8192 --dim 128
#pragma once

#include "fragments.cuh"

namespace fs::flash::v1 {

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
__global__ void __launch_bounds__(Config<D>::kThreads) flash_fwd_v1_kernel(const Args<T> a) {
  using C = Config<D>;
  constexpr int kBr = C::kBr, kBc = C::kBc, kMT = C::kMT, kS = C::kStride;
  constexpr int kNT = kBc / 8, kDT = D / 8, kKT = D / 16;  // 8-key tiles, 8-column tiles, 16-wide k steps
  extern __shared__ __align__(16) unsigned char smem[];
  T* sQ = reinterpret_cast<T*>(smem);  // [Br][D+8]
  T* sK = sQ + kBr * kS;               // [Bc][D+8]
  T* sV = sK + kBc * kS;               // [Bc][D+8]

  const Sequence s = locate(a, kBr, false);
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

  // v1 visits every key block and masks every element; under the causal mask most of that is wasted.
  const int64_t n_blocks = key_blocks(s, kBr, kBc, /*causal=*/false);
  for (int64_t j = 0; j < n_blocks; ++j) {
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

    mask_scores</*kMasked=*/true>(rS, a.scale_log2 < 0, s, row0, col0, a.causal);
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
  }

  write_o_lse(a, s, row0, rO, m, l);
}

}  // namespace fs::flash::v1
