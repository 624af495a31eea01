// flashstages · stage 05 · v8 — v7's block (128 resident keys, 8 warps) with FlashAttention-2's warp
// tiles: squarer tiles per warp, P and dS passed through shared memory.
//
// What changes from v7, which gives every warp 16 keys and every product's whole other side: the
// streamed query tile is Br = 64 rows at both head_dims; S = Q_i K_jᵀ and dP = dO_i V_jᵀ (queries as
// rows, not transposed any more) are 2 × 4 warp tiles of 32 × 32 (products.cuh: product; softmax.cuh:
// p_and_ds); P and dS, rounded to T, go to swizzled shared tiles sP, sdS (tiles.cuh: store_tile),
// because the warps that need a key's column of them are not the warps that computed it; dV_j, dK_j are
// 4 × 2 warp tiles of 32 keys × D/2, their A operands Pᵀ, dSᵀ read back by ldmatrix.trans; dQ_i 2 × 4
// warp tiles of 32 queries × D/4, added by v6's exchange (DqPairedRed).
// Why it is faster: v5 to v7 are bound by the shared-memory pipe, most of it ldmatrix. A warp that owns
// 16 keys × the whole other side reuses each fragment it loads few times — 0.65 ldmatrix per mma in
// v7; these warp tiles take 0.45, plus the 32-bit stores of P and dS: about a third fewer
// shared-memory wavefronts per mma. (Numbers: the README's table; the profile: NOTES.md.)
//
// Run: build/h100/stages/05_flash_bwd/stage05_flash_bwd --dtype fp16 --seq 8192 --dim 128 [--causal] --version v8
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "common/device/attention.cuh"
#include "common/device/sm80.cuh"
#include "common/lib/numeric.h"
#include "common/device/bwd_args.cuh"
#include "stages/05_flash_bwd/dq_reduce.cuh"
#include "stages/05_flash_bwd/epilogue.cuh"
#include "stages/05_flash_bwd/fragments.cuh"
#include "stages/05_flash_bwd/products.cuh"
#include "stages/05_flash_bwd/query_tiles.cuh"
#include "stages/05_flash_bwd/softmax.cuh"
#include "stages/05_flash_bwd/tiles.cuh"

// The ldmatrix count, per mma: v7 loads 3 ldmatrix.x4 per 4 mma for Sᵀ, dPᵀ and dQ and 1 per 2 for dK,
// dV. Here a warp's 32 × 32 tile of S takes 2 A + 2 B fragments per 8 mma (1 per 2), a 32 × 64 tile of
// dV 2 A + 4 B per 16 (3 per 8), dQ's 32 × 32 2 + 2 per 8: 0.45 ldmatrix per mma.
// Registers: dK_j, dV_j keep D/2 + D/2 fp32 per thread (128 at D = 128, as v7), S and dP 32 + 32 (v7:
// 16 + 16 at D = 128). Shared memory: sK, sV [128][D] + sQ, sdO [2][64][D] + sP, sdS [64][128] +
// LSE_i, delta_i: 97 KiB at D = 64, 161 KiB at D = 128; one block of 256 threads per SM, as v7.
// Grouped-query attention: v4's walk over the group's query heads, unchanged.

namespace fs::bwd::v8 {

using sm80::cp_async_commit_group;
using sm80::cp_async_wait_group;
using sm80::ldmatrix_x4;
using sm80::ldmatrix_x4_trans;
using sm80::smem_address;

template <int D>
struct Config {
  static constexpr int kWarps = 8;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kBc = 128;  // keys per block, resident
  static constexpr int kBr = 64;   // query rows per streamed tile
  // sK, sV [Bc][D] + sQ, sdO [2][Br][D] + sP, sdS [Br][Bc] (2-byte elements) + sLse, sDelta [2][Br] (fp32).
  static constexpr std::size_t kSmemBytes = std::size_t(2 * kBc + 4 * kBr) * D * 2 +
                                            std::size_t(2 * kBr) * kBc * 2 + 4 * kBr * sizeof(float);
  static_assert(2 * kBr <= kThreads, "one thread per entry of LSE_i and of delta_i");
  static_assert(kBr == 2 * 32 && kBc == 4 * 32, "S, dP: 2 × 4 warps of 32 × 32; dK, dV: 4 warps of 32 keys");
  static_assert(D % 64 == 0, "dQ: 4 warps of D/4 columns, whole pairs of 8-column tiles");
};

// grid: B·KVH·ceil(Nk/Bc) blocks (Bc = 128) of Config<D>::kThreads. Block x owns key block
// x % ceil(Nk/Bc) of K/V head x / ceil(Nk/Bc) and streams the query tiles of each query head of the
// K/V head's group past it (v4's walk); writes dK_j and dV_j, summed over the group, and adds its share
// of each query head's dQ (before the scale) to dq_accum four columns wide, as v6 does.
template <class T, int D, bool kVarlen>
__global__ void __launch_bounds__(Config<D>::kThreads) flash_bwd_v8_dkv_kernel(const Args<T> a) {
  using C = Config<D>;
  constexpr int kBr = C::kBr, kBc = C::kBc;
  extern __shared__ __align__(128) unsigned char smem[];
  T* sK = reinterpret_cast<T*>(smem);                       // [Bc][D]     K_j, swizzled
  T* sV = sK + kBc * D;                                     // [Bc][D]     V_j
  T* sQ = sV + kBc * D;                                     // [2][Br][D]  Q_i, stages alternating
  T* sdO = sQ + 2 * kBr * D;                                // [2][Br][D]  dO_i
  T* sP = sdO + 2 * kBr * D;                                // [Br][Bc]    P_ij, queries as rows
  T* sdS = sP + kBr * kBc;                                  // [Br][Bc]    dS_ij
  float* sLse = reinterpret_cast<float*>(sdS + kBr * kBc);  // [2][Br]     LSE_i, then LSE_i · log2(e)
  float* sDelta = sLse + 2 * kBr;                           // [2][Br]     delta_i

  const attn::KeyBlock kb = attn::key_block_of<kVarlen>(a, kBc);  // the entry, K/V head, keys k0 .., their lengths
  const int64_t k0 = kb.k0, k_base = kb.k_row0;            // k_base: the K/V head's first row of K, V
  const int64_t bh_end = kb.q_head0 + a.group;             // past the group's last query head
  const int warp = threadIdx.x / 32;
  const int wq = 32 * (warp / 4), wk = 32 * (warp % 4);  // S, dP: the warp's queries and keys
  const int kw = wk, cw = warp / 4 * (D / 2);            // dK, dV: the warp's keys and columns
  const int cq = warp % 4 * (D / 4);                     // dQ: the warp's columns (queries wq ..)

  // Query tile i of query head bh → `stage`, as one cp.async group: Q_i, dO_i (16-byte copies; rows
  // past Nq zero-filled), LSE_i and delta_i.
  auto copy_tile = [&](int64_t bh, int64_t i, int stage) {
    const int64_t q_base = kb.q_base(bh, a.seq_q), q0 = i * kBr;  // q_base: the head's first row of Q, dO
    copy_tile_swizzled<T, D, C::kThreads>(sQ + stage * kBr * D, a.q + q_base * D, q0, kBr, kb.nq);
    copy_tile_swizzled<T, D, C::kThreads>(sdO + stage * kBr * D, a.d_o + q_base * D, q0, kBr, kb.nq);
    copy_lse_delta<kBr>(sLse + stage * kBr, sDelta + stage * kBr, a, q_base, q0, kb.nq);
    cp_async_commit_group();
  };

  // dK_j / scale and dV_j: the warp's 32 keys × D/2 columns, [m-tile][8-column tile][C fragment], summed
  // over the group's query heads.
  float rdK[2][D / 16][4] = {}, rdV[2][D / 16][4] = {};
  const int64_t offset = kb.offset;
  const int keys = int(min(kb.nk - k0, int64_t(kBc)));
  const QueryTileRuns runs = query_tile_runs<kBr, kBc>(kb, a.causal);
  const uint32_t aK = smem_address(sK), aV = smem_address(sV), aP = smem_address(sP), adS = smem_address(sdS);
  const LaneRow<D> a_off = a_lane<D>(), b_rows_off = b_rows_lane<D>();  // S, dP
  const LaneCols<kBc, 2> pt_off = a_trans_lane<kBc, 2>(kw);               // Pᵀ, dSᵀ: the warp's keys
  const LaneCols<D, D / 32> kv_b_off = b_cols_lane<D, D / 32>(cw);        // dO_i, Q_i: the warp's columns
  const LaneRow<kBc> ds_off = a_lane<kBc>();                              // dS for dQ
  const LaneCols<D, D / 64> dq_b_off = b_cols_lane<D, D / 64>(cq);        // K_j for dQ

  // Query tile i of query head bh, in `stage`; kMasked (a std::bool_constant) says whether any of its
  // pairs can be hidden.
  auto step = [&](int64_t bh, int64_t i, int stage, auto kMasked) {
    const int64_t q_base = kb.q_base(bh, a.seq_q), q0 = i * kBr;
    const uint32_t aQi = smem_address(sQ + stage * kBr * D);    // [Br][D]  Q_i
    const uint32_t adOi = smem_address(sdO + stage * kBr * D);  // [Br][D]  dO_i
    float* sLsei = sLse + stage * kBr;            // [Br]  LSE_i (· log2(e) after the barrier)
    const float* sDeltai = sDelta + stage * kBr;  // [Br]  delta_i
    cp_async_wait_group<0>();  // this thread's copies of tile i (and, the first time, of K_j, V_j) have landed
    if (threadIdx.x < kBr) sLsei[threadIdx.x] *= attn::kLog2e;  // the entry this thread copied
    // Every thread's copies have landed, LSE_i is scaled, and every warp is done with tile i - 1: with
    // its stage, refilled next, and with its reads of sP and sdS, which tile i writes again.
    __syncthreads();
    // In flight while tile i is computed: the head's next tile, or after its last the next head's first.
    const bool same_head = i + 1 < runs.count;
    if (same_head || bh + 1 < bh_end) copy_tile(same_head ? bh : bh + 1, same_head ? i + 1 : runs.first, stage ^ 1);

    // S = Q_i K_jᵀ, then dP = dO_i V_jᵀ: the warp's 32 queries × 32 keys.
    float rS[2][4][4] = {}, rdP[2][4][4] = {};
    product<T, D, 2>(rS, aQi + wq * D * 2, aK + wk * D * 2, a_off, b_rows_off);
    product<T, D, 2>(rdP, adOi + wq * D * 2, aV + wk * D * 2, a_off, b_rows_off);
    // Block coordinates of the mask: keys < `keys`, queries < `queries`, key - query <= diagonal. Any
    // key - query lies in (-Br, Bc), so clamping the diagonal to ±256 changes no test.
    const int queries = int(min(kb.nq - q0, int64_t(kBr)));
    const int diagonal = a.causal ? int(max(min(q0 + offset - k0, int64_t(256)), int64_t(-256))) : 256;
    p_and_ds<decltype(kMasked)::value, 2>(rS, rdP, sLsei, sDeltai, a.scale_log2, wq, wk, keys, queries, diagonal);
    store_tile<T, kBc, 2>(sP, rS, wq, wk);
    store_tile<T, kBc, 2>(sdS, rdP, wq, wk);
    __syncthreads();  // sP, sdS complete: the products below read the keys and queries of every warp

    // dV_j += Pᵀ dO_i and dK_j += dSᵀ Q_i: the warp's 32 keys × D/2 columns; k runs over the tile's
    // queries, 16 at a time.
#pragma unroll
    for (int kk = 0; kk < kBr / 16; ++kk) {
      uint32_t pa[2][4], dsa[2][4];  // Pᵀ, dSᵀ as A fragments: keys kw + 16mt .., queries kk·16 ..
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        ldmatrix_x4_trans(pa[mt], aP + kk * 16 * kBc * 2 + pt_off.off[mt]);
        ldmatrix_x4_trans(dsa[mt], adS + kk * 16 * kBc * 2 + pt_off.off[mt]);
      }
#pragma unroll
      for (int m = 0; m < D / 32; ++m) {
        uint32_t b[4];  // B fragments of the warp's 8-column tiles 2m, 2m + 1
        ldmatrix_x4_trans(b, adOi + kk * 16 * D * 2 + kv_b_off.off[m]);
        mma_two_tiles<T>(rdV[0][2 * m], rdV[0][2 * m + 1], pa[0], b);
        mma_two_tiles<T>(rdV[1][2 * m], rdV[1][2 * m + 1], pa[1], b);
        ldmatrix_x4_trans(b, aQi + kk * 16 * D * 2 + kv_b_off.off[m]);
        mma_two_tiles<T>(rdK[0][2 * m], rdK[0][2 * m + 1], dsa[0], b);
        mma_two_tiles<T>(rdK[1][2 * m], rdK[1][2 * m + 1], dsa[1], b);
      }
    }

    // dQ_i += dS K_j: the warp's 32 queries × D/4 columns; k runs over the block's keys.
    float rdQ[2][D / 32][4] = {};  // [m-tile][8-column tile][C fragment]
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk) {
      uint32_t dsa[2][4];
      ldmatrix_x4(dsa[0], adS + wq * kBc * 2 + ds_off.at(kk));
      ldmatrix_x4(dsa[1], adS + (wq + 16) * kBc * 2 + ds_off.at(kk));
#pragma unroll
      for (int m = 0; m < D / 64; ++m) {
        uint32_t b[4];  // B fragments of the warp's 8-column tiles 2m, 2m + 1: K_j rows kk·16 ..
        ldmatrix_x4_trans(b, aK + kk * 16 * D * 2 + dq_b_off.off[m]);
        mma_two_tiles<T>(rdQ[0][2 * m], rdQ[0][2 * m + 1], dsa[0], b);
        mma_two_tiles<T>(rdQ[1][2 * m], rdQ[1][2 * m + 1], dsa[1], b);
      }
    }
    // This key block's share, added in fp32, four columns per reduction.
    const int g = threadIdx.x % 32 / 4;
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t row = q0 + wq + 16 * mt + g + 8 * h;
        DqPairedRed::add(row < kb.nq ? a.dq_accum + (q_base + row) * D + cq : nullptr, rdQ[mt], h);
      }
  };

  // v4's walk: the runs of query tiles key block j meets (query_tile_runs), head after head of the
  // group, the stages alternating over the whole walk; the first tile and K_j, V_j in the prologue. A
  // block that meets no tile (v4's walk says when) writes its rows' zeros and is done.
  if (kVarlen && runs.count == 0) {
    store_dk_dv<T, D>(a, rdK, rdV, k_base, k0 + kw, kb.nk_rows, cw);
    return;
  }
  copy_tile_swizzled<T, D, C::kThreads>(sK, a.k + k_base * D, k0, kBc, kb.nk);
  copy_tile_swizzled<T, D, C::kThreads>(sV, a.v + k_base * D, k0, kBc, kb.nk);
  copy_tile(kb.q_head0, runs.first, 0);  // commits K_j and V_j with it
  int stage = 0;  // the stage of the tile computed next
  for (int64_t bh = kb.q_head0; bh < bh_end; ++bh) {
    int64_t i = runs.first;
    for (; i < runs.full_begin; ++i, stage ^= 1) step(bh, i, stage, std::true_type{});
    for (; i < runs.full_end; ++i, stage ^= 1) step(bh, i, stage, std::false_type{});
    for (; i < runs.count; ++i, stage ^= 1) step(bh, i, stage, std::true_type{});
  }

  store_dk_dv<T, D>(a, rdK, rdV, k_base, k0 + kw, kb.nk_rows, cw);
}

}  // namespace fs::bwd::v8
