// flashstages · stage 05 · v3 — v2 with the dQ reductions issued wide: each thread adds four
// neighbouring columns of dQ_i with one red.global.add.v4.f32 instead of four red.global.add.f32.
//
// What changes from v2: only how the K/V kernel's share of dQ_i leaves the block. DqAdd is
// dq_reduce.cuh's DqWideRed: the B operand's gather deals the columns of K_j out so that a thread's C
// fragments hold four neighbouring columns of a row, with no shuffle and no trip through shared memory
// (the table there). Everything else is v2's, and with `deterministic` the whole of v2's path.
// Why it is faster: v2 issues one 4-byte reduction per dQ element per key block that meets it,
// (N / Bc) · N · D per head, and they cost more than the deterministic pass's whole recomputation. v3
// issues a quarter of them, each 16 bytes: a warp's instruction covers 16 whole 32-byte sectors where
// v2's covered 8 half-sectors; the bytes that reach L2 are the same. (Numbers: the README's table.)
// On sm_80 to sm_89, which have no .v4 reduction for f32, it issues v2's count.
// What it still lacks: loads that stall the block until they land (v4: cp.async).
//
// Run: build/h100/stages/05_flash_bwd/stage05_flash_bwd --dtype fp16 --seq 8192 --dim 128 [--causal] --version v3
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "common/device/attention.cuh"
#include "common/device/sm80.cuh"
#include "common/lib/numeric.h"
#include "common/device/bwd_args.cuh"
#include "stages/05_flash_bwd/dq_reduce.cuh"
#include "stages/05_flash_bwd/products.cuh"
#include "stages/05_flash_bwd/query_tiles.cuh"
#include "stages/05_flash_bwd/softmax.cuh"

namespace fs::bwd::v3 {

using attn::a_from_c;
using attn::lds_a;
using attn::lds_b_col_of_lane;
using attn::lds_b_cols;
using attn::load_tile;
using sm80::mma_m16n8k16;
using sm80::pack2;

// v2's tiles.
template <int D>
struct Config {
  static constexpr int kWarps = 4;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kBc = 16 * kWarps;         // 64 keys per block, resident: warp w owns keys 16w .. 16w + 15
  static constexpr int kBr = D <= 64 ? 64 : 32;   // query rows per streamed tile: at D = 128, 64 would put
                                                  // Sᵀ, dPᵀ at 64 registers beside dK_j, dV_j's 128
  static constexpr int kStride = D + 8;           // padded rows of sK, sV, sQ, sdO (common/device/attention.cuh)
  static constexpr int kStrideS = kBc + 8;        // padded rows of sdS
  // The dQ share of a warp: row tile warp % kRowTiles, kDqCols columns from (warp / kRowTiles) · kDqCols.
  static constexpr int kRowTiles = kBr / 16;
  static constexpr int kDqCols = D / (kWarps / kRowTiles);  // 64 at both head_dims
  static constexpr std::size_t kSmemBytes =
      std::size_t(2 * kBc + 2 * kBr) * kStride * 2 + std::size_t(kBr) * kStrideS * 2 + 2 * kBr * sizeof(float);
  static_assert(kWarps % kRowTiles == 0 && kDqCols % 8 == 0, "the dQ shares cover [Br][D] exactly");
};

// grid: B·KVH·ceil(max Nk/Bc) blocks of kThreads. Block x owns key block x % ceil(max Nk/Bc) of K/V
// head x / ceil(max Nk/Bc) (attn::key_block_of: max Nk is Nk but for packed batches), warp w its keys
// 16w .. 16w + 15, and streams the query tiles of each query head of the K/V head's group past it, one
// head after the other. Writes dK_j and dV_j, summed over the group, and adds its share of each query
// head's dQ (before the scale) to dq_accum four columns wide (DqWideRed).
template <class T, int D, bool kVarlen>
__global__ void __launch_bounds__(Config<D>::kThreads) flash_bwd_v3_dkv_kernel(const Args<T> a) {
  using C = Config<D>;
  using DqAdd = DqWideRed;
  constexpr int kBr = C::kBr, kBc = C::kBc, kS = C::kStride, kSS = C::kStrideS;
  constexpr int kQT = kBr / 8, kDT = D / 8;  // 8-query tiles of Sᵀ, dPᵀ; 8-column tiles of dK_j, dV_j
  extern __shared__ __align__(16) unsigned char smem[];
  T* sK = reinterpret_cast<T*>(smem);                       // [Bc][D+8]  K_j
  T* sV = sK + kBc * kS;                                    // [Bc][D+8]  V_j
  T* sQ = sV + kBc * kS;                                    // [Br][D+8]  Q_i
  T* sdO = sQ + kBr * kS;                                   // [Br][D+8]  dO_i
  T* sdS = sdO + kBr * kS;                                  // [Br][Bc+8] dS_ij, queries as rows
  float* sLse = reinterpret_cast<float*>(sdS + kBr * kSS);  // [Br]       LSE_i · log2(e)
  float* sDelta = sLse + kBr;                               // [Br]       delta_i

  const attn::KeyBlock kb = attn::key_block_of<kVarlen>(a, kBc);  // the entry, K/V head, keys k0 .., their lengths
  const int64_t k0 = kb.k0, k_base = kb.k_row0;            // k_base: the K/V head's first row of K, V
  const int warp = threadIdx.x / 32, g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  const int wk = 16 * warp;  // the warp's first key, as a row of sK and sV

  load_tile<T, D, C::kThreads>(sK, a.k + k_base * D, k0, kBc, kb.nk);
  load_tile<T, D, C::kThreads>(sV, a.v + k_base * D, k0, kBc, kb.nk);

  // dK_j / scale and dV_j: the warp's 16 keys × D, C fragments, summed over the group's query heads.
  float rdK[kDT][4] = {}, rdV[kDT][4] = {};
  const int64_t offset = kb.offset;
  const int keys = int(min(kb.nk - k0, int64_t(kBc)));

  // Query tile q0 of the query head whose first row of Q, dO is q_base; kMasked (a std::bool_constant)
  // says whether any of its pairs can be hidden.
  auto step = [&](int64_t q_base, int64_t q0, auto kMasked) {
    __syncthreads();  // every warp is done with the previous tile's sQ, sdO, sLse, sDelta and sdS
    load_tile<T, D, C::kThreads>(sQ, a.q + q_base * D, q0, kBr, kb.nq);
    load_tile<T, D, C::kThreads>(sdO, a.d_o + q_base * D, q0, kBr, kb.nq);
    for (int r = threadIdx.x; r < kBr; r += C::kThreads) {
      const bool real = q0 + r < kb.nq;
      sLse[r] = real ? a.lse[q_base + q0 + r] * attn::kLog2e : 0.0f;
      sDelta[r] = real ? a.delta[q_base + q0 + r] : 0.0f;
    }
    __syncthreads();  // sQ, sdO, sLse, sDelta complete (and, the first time, sK and sV)

    float rS[kQT][4] = {}, rdP[kQT][4] = {};  // Sᵀ, dPᵀ: [query tile][C fragment], the warp's 16 keys as rows
    two_products<T, D, kBr>(rS, rdP, sK, sV, wk, sQ, sdO);
    // Block coordinates of the mask: keys < `keys`, queries < `queries`, key - query <= diagonal. Any
    // key - query lies in (-Br, Bc), so clamping the diagonal to ±256 changes no test.
    const int queries = int(min(kb.nq - q0, int64_t(kBr)));
    const int diagonal = a.causal ? int(max(min(q0 + offset - k0, int64_t(256)), int64_t(-256))) : 256;
    p_and_ds_t<decltype(kMasked)::value>(rS, rdP, sLse, sDelta, a.scale_log2, wk, keys, queries, diagonal);

    // dSᵀ → sdS transposed, rounded to T as the dK product rounds it: entry (key, query) of the C
    // fragments to row query, column key.
#pragma unroll
    for (int nt = 0; nt < kQT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        sdS[(8 * nt + 2 * t + e % 2) * kSS + wk + g + 8 * (e / 2)] = from_float<T>(rdP[nt][e]);

    // dV_j += Pᵀ dO_i and dK_j += dSᵀ Q_i: k runs over the tile's queries, 16 at a time.
#pragma unroll
    for (int kk = 0; kk < kQT / 2; ++kk) {
      uint32_t pa[4], dsa[4];  // Pᵀ, dSᵀ as A fragments: query tiles 2kk, 2kk+1 of the C fragments
      a_from_c<T>(pa, rS[2 * kk], rS[2 * kk + 1]);
      a_from_c<T>(dsa, rdP[2 * kk], rdP[2 * kk + 1]);
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        uint32_t b0, b1;
        lds_b_cols<kS>(b0, b1, sdO, kk * 16, dt * 8);
        mma_m16n8k16<T>(rdV[dt], pa, b0, b1);
        lds_b_cols<kS>(b0, b1, sQ, kk * 16, dt * 8);
        mma_m16n8k16<T>(rdK[dt], dsa, b0, b1);
      }
    }

    __syncthreads();  // sdS complete: each warp's dQ share below reads the keys of every warp
    // dQ_i += dS K_j for row tile rt, columns c0 .. c0 + kDqCols - 1; k runs over the block's keys.
    const int rt = warp % C::kRowTiles, c0 = warp / C::kRowTiles * C::kDqCols;
    float rdQ[C::kDqCols / 8][4] = {};  // [column tile][C fragment]
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk) {
      uint32_t dsa[4];
      lds_a<kSS>(dsa, sdS, rt * 16, kk * 16);
#pragma unroll
      for (int dt = 0; dt < C::kDqCols / 8; ++dt) {
        uint32_t b0, b1;
        lds_b_col_of_lane<kS>(b0, b1, sK, kk * 16, c0 + DqAdd::column(dt, g));
        mma_m16n8k16<T>(rdQ[dt], dsa, b0, b1);
      }
    }
    // This key block's share, added in fp32, four columns per reduction.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t row = q0 + rt * 16 + g + 8 * h;
      if (row < kb.nq) DqAdd::add(a.dq_accum + (q_base + row) * D + c0, rdQ, h);
    }
  };

  const QueryTileRuns runs = query_tile_runs<kBr, kBc>(kb, a.causal);
  // Grouped-query attention: the same tiles of each query head of the group, dK_j and dV_j summing on in
  // registers. No atomics on dK, dV and no per-query-head buffers of them to reduce afterwards (what a
  // grid over query heads would need, FlashAttention-2's way): G times fewer blocks, G times longer.
  for (int64_t bh = kb.q_head0; bh < kb.q_head0 + a.group; ++bh) {
    const int64_t q_base = kb.q_base(bh, a.seq_q);
    int64_t i = runs.first;
    for (; i < runs.full_begin; ++i) step(q_base, i * kBr, std::true_type{});
    for (; i < runs.full_end; ++i) step(q_base, i * kBr, std::false_type{});
    for (; i < runs.count; ++i) step(q_base, i * kBr, std::true_type{});
  }

  // dK_j = scale · dSᵀ Q and dV_j, rounded to T: rows wk + g + 8h, columns 8·dt + 2t, 2t+1 (zeros in a
  // padded entry's rows past its length: no query reached them).
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t key = k0 + wk + g + 8 * h;
    if (key >= kb.nk_rows) continue;
    T* dk_row = a.dk + (k_base + key) * D + 2 * t;
    T* dv_row = a.dv + (k_base + key) * D + 2 * t;
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt) {
      *reinterpret_cast<uint32_t*>(dk_row + dt * 8) = pack2<T>(a.scale * rdK[dt][2 * h], a.scale * rdK[dt][2 * h + 1]);
      *reinterpret_cast<uint32_t*>(dv_row + dt * 8) = pack2<T>(rdV[dt][2 * h], rdV[dt][2 * h + 1]);
    }
  }
}

}  // namespace fs::bwd::v3
