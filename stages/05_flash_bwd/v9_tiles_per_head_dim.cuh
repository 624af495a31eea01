// flashstages · stage 05 · v9 — v8 with the query tile sized per head_dim: Br = 128 at D = 64
// (FlashAttention-2's choice there), 64 at D = 128 as before.
//
// What changes from v8 (nothing at D = 128, where Br stays 64 and the kernel is v8's): at D = 64 a
// streamed query tile is 128 rows; each of S's and dP's 2 × 4 warps computes 64 queries × 32 keys
// (kSMT = 4 16-row tiles where v8 has 2), dV and dK run their k loop over 128 queries, and dQ's 8 warps
// are laid out 4 × 2 (32 queries × 32 columns each) instead of 2 × 4 (32 × 16).
// Why it is faster at D = 64: every product has half the depth of D = 128's, so each ldmatrix of K_j,
// V_j and of K_j for dQ feeds half the mma, and a query tile's fixed costs (its barriers, the LSE/delta
// copy, the causal bookkeeping) are spread over half the work. At Br = 128 S and dP load each B
// fragment once for 4 m-tiles (1 ldmatrix per 2.7 mma instead of 2), dQ's 32 × 32 tiles 1 per 2, and a
// tile's fixed costs cover twice the work. (Numbers: the README's table.)
// Also here: the delta ablation (kDeltaInLoop; stage05/v9_delta_in_loop in the benchmark), this kernel
// with delta_i recomputed by every key block from an O_i it streams (NOTES.md).
//
// Run: build/h100/stages/05_flash_bwd/stage05_flash_bwd --dtype fp16 --seq 8192 --dim 64 [--causal] --version v9
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

// Registers at D = 64: S and dP 64 + 64 fp32 per thread (v8: 32 + 32), dK and dV 32 + 32. Shared memory
// at D = 64: sK, sV [128][64] + sQ, sdO [2][128][64] + sP, sdS [128][128] + LSE_i, delta_i: 162 KiB
// (v8: 97); one block per SM, as v8. The dQ reductions per key block are unchanged (each dQ row still
// gets one per key block).

namespace fs::bwd::v9 {

using sm80::cp_async_commit_group;
using sm80::cp_async_wait_group;
using sm80::ldmatrix_x4;
using sm80::ldmatrix_x4_trans;
using sm80::smem_address;

template <int D>
struct Config {
  static constexpr int kWarps = 8;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kBc = 128;               // keys per block, resident
  static constexpr int kBr = D == 64 ? 128 : 64;  // query rows per streamed tile
  static constexpr int kSMT = kBr / 32;         // S, dP: 16-row tiles per warp (2 × 4 warps: kBr/2 × 32 each)
  static constexpr int kDqRowWarps = kBr / 32;  // dQ: warps down the tile's rows, 32 rows each,
  static constexpr int kDqCols = D / (kWarps / kDqRowWarps);  // and across D, kDqCols columns each
  // sK, sV [Bc][D] + sQ, sdO [2][Br][D] + sP, sdS [Br][Bc] (2-byte elements) + sLse, sDelta [2][Br] (fp32).
  static constexpr std::size_t kSmemBytes = std::size_t(2 * kBc + 4 * kBr) * D * 2 +
                                            std::size_t(2 * kBr) * kBc * 2 + 4 * kBr * sizeof(float);
  static_assert(2 * kBr <= kThreads, "one thread per entry of LSE_i and of delta_i");
  static_assert(kBc == 4 * 32, "S, dP: 4 warps of 32 keys; dK, dV: 4 warps of 32 keys");
  static_assert(kDqCols == 32, "dQ: warp tiles of 32 × 32");
};

// The ablation's shared memory: Config's and O_i beside dO_i, [2][Br][D] (193 KiB at D = 128, 194 at 64).
template <int D>
struct ConfigDeltaInLoop : Config<D> {
  static constexpr std::size_t kSmemBytes = Config<D>::kSmemBytes + std::size_t(2 * Config<D>::kBr) * D * 2;
};

// The ablation only: delta_i = rowsum(dO_i ∘ O_i) of the tile's Br rows, from its swizzled tiles in
// shared memory, into sDelta [Br] — the preprocess's sum, done again by every key block that meets
// the tile. kThreads / Br threads per row (4 at Br = 64, 2 at 128), each summing its share of the
// row's 16-byte chunks in fp32, then adding across its neighbours by shuffle. Rows past Nq were
// zero-filled: delta 0.
template <class T, int D, int kBr, int kThreads>
__device__ __forceinline__ void rowsum_do_o(float* sDelta, const T* sdO, const T* sO) {
  constexpr int kPerRow = kThreads / kBr, kChunks = D / 8;
  static_assert(kPerRow * kBr == kThreads && kChunks % kPerRow == 0, "whole rows, whole chunks per thread");
  const int r = threadIdx.x / kPerRow, part = threadIdx.x % kPerRow;
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < kChunks / kPerRow; ++k) {
    const int c = (k * kPerRow + part) * 8;  // the chunk's first column
    const T* x = sdO + swizzled<D>(r, c);
    const T* y = sO + swizzled<D>(r, c);
#pragma unroll
    for (int e = 0; e < 8; ++e) sum += to_float(x[e]) * to_float(y[e]);
  }
#pragma unroll
  for (int lanes = kPerRow / 2; lanes > 0; lanes /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, lanes);
  if (part == 0) sDelta[r] = sum;
}

// grid: B·KVH·ceil(Nk/Bc) blocks (Bc = 128) of Config<D>::kThreads. Block x owns key block
// x % ceil(Nk/Bc) of K/V head x / ceil(Nk/Bc) and streams the query tiles of each query head of the
// K/V head's group past it (v4's walk); writes dK_j and dV_j, summed over the group, and adds its share
// of each query head's dQ (before the scale) to dq_accum four columns wide, as v6 does. (v8's kernel,
// its S and dP warp tiles kSMT 16-row tiles tall and its dQ warps 32 × 32.)
// kDeltaInLoop (the ablation, run_v9_delta_in_loop): no delta from the preprocess (a.delta null);
// each query tile brings O_i too, and after its first barrier every block recomputes delta_i from
// dO_i and O_i (rowsum_do_o) and meets once more before P and dS read it.
template <class T, int D, bool kVarlen, bool kDeltaInLoop = false>
__global__ void __launch_bounds__(Config<D>::kThreads) flash_bwd_v9_dkv_kernel(const Args<T> a) {
  using C = std::conditional_t<kDeltaInLoop, ConfigDeltaInLoop<D>, Config<D>>;
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
  T* sO = reinterpret_cast<T*>(sDelta + 2 * kBr);           // [2][Br][D]  O_i (the ablation only)

  const attn::KeyBlock kb = attn::key_block_of<kVarlen>(a, kBc);  // the entry, K/V head, keys k0 .., their lengths
  const int64_t k0 = kb.k0, k_base = kb.k_row0;            // k_base: the K/V head's first row of K, V
  const int64_t bh_end = kb.q_head0 + a.group;             // past the group's last query head
  const int warp = threadIdx.x / 32;
  constexpr int kSMT = C::kSMT;
  const int wq = kBr / 2 * (warp / 4), wk = 32 * (warp % 4);  // S, dP: the warp's queries and keys
  const int kw = wk, cw = warp / 4 * (D / 2);                 // dK, dV: the warp's keys and columns
  const int dq_q = 32 * (warp % C::kDqRowWarps);              // dQ: the warp's queries
  const int cq = warp / C::kDqRowWarps * C::kDqCols;          // and columns

  // Query tile i of query head bh → `stage`, as one cp.async group: Q_i, dO_i (16-byte copies; rows
  // past Nq zero-filled), LSE_i and delta_i (the ablation: O_i instead of delta_i).
  auto copy_tile = [&](int64_t bh, int64_t i, int stage) {
    const int64_t q_base = kb.q_base(bh, a.seq_q), q0 = i * kBr;  // q_base: the head's first row of Q, dO
    copy_tile_swizzled<T, D, C::kThreads>(sQ + stage * kBr * D, a.q + q_base * D, q0, kBr, kb.nq);
    copy_tile_swizzled<T, D, C::kThreads>(sdO + stage * kBr * D, a.d_o + q_base * D, q0, kBr, kb.nq);
    if constexpr (kDeltaInLoop) {
      copy_tile_swizzled<T, D, C::kThreads>(sO + stage * kBr * D, a.o + q_base * D, q0, kBr, kb.nq);
      if (threadIdx.x < kBr) copy_lse_delta<kBr>(sLse + stage * kBr, sDelta + stage * kBr, a, q_base, q0, kb.nq);  // LSE_i alone
    } else {
      copy_lse_delta<kBr>(sLse + stage * kBr, sDelta + stage * kBr, a, q_base, q0, kb.nq);
    }
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
  const LaneCols<D, 2> dq_b_off = b_cols_lane<D, 2>(cq);                  // K_j for dQ

  // Query tile i of query head bh, in `stage`; kMasked (a std::bool_constant) says whether any of its
  // pairs can be hidden.
  auto step = [&](int64_t bh, int64_t i, int stage, auto kMasked) {
    const int64_t q_base = kb.q_base(bh, a.seq_q), q0 = i * kBr;
    const uint32_t aQi = smem_address(sQ + stage * kBr * D);    // [Br][D]  Q_i
    const uint32_t adOi = smem_address(sdO + stage * kBr * D);  // [Br][D]  dO_i
    float* sLsei = sLse + stage * kBr;            // [Br]  LSE_i (· log2(e) after the barrier)
    float* sDeltai = sDelta + stage * kBr;        // [Br]  delta_i
    cp_async_wait_group<0>();  // this thread's copies of tile i (and, the first time, of K_j, V_j) have landed
    if (threadIdx.x < kBr) sLsei[threadIdx.x] *= attn::kLog2e;  // the entry this thread copied
    // Every thread's copies have landed, LSE_i is scaled, and every warp is done with tile i - 1: with
    // its stage, refilled next, and with its reads of sP and sdS, which tile i writes again.
    __syncthreads();
    // In flight while tile i is computed: the head's next tile, or after its last the next head's first.
    const bool same_head = i + 1 < runs.count;
    if (same_head || bh + 1 < bh_end) copy_tile(same_head ? bh : bh + 1, same_head ? i + 1 : runs.first, stage ^ 1);
    if constexpr (kDeltaInLoop) {
      // sDelta[stage] was last read by tile i - 2's P and dS, before tile i - 1's first barrier.
      rowsum_do_o<T, D, kBr, C::kThreads>(sDeltai, sdO + stage * kBr * D, sO + stage * kBr * D);
      __syncthreads();  // every row's delta_i is in sDeltai before any warp's P and dS read it
    }

    // S = Q_i K_jᵀ, then dP = dO_i V_jᵀ: the warp's Br/2 queries × 32 keys.
    float rS[kSMT][4][4] = {}, rdP[kSMT][4][4] = {};
    product<T, D, kSMT>(rS, aQi + wq * D * 2, aK + wk * D * 2, a_off, b_rows_off);
    product<T, D, kSMT>(rdP, adOi + wq * D * 2, aV + wk * D * 2, a_off, b_rows_off);
    // Block coordinates of the mask: keys < `keys`, queries < `queries`, key - query <= diagonal. Any
    // key - query lies in (-Br, Bc), so clamping the diagonal to ±256 changes no test.
    const int queries = int(min(kb.nq - q0, int64_t(kBr)));
    const int diagonal = a.causal ? int(max(min(q0 + offset - k0, int64_t(256)), int64_t(-256))) : 256;
    p_and_ds<decltype(kMasked)::value, kSMT>(rS, rdP, sLsei, sDeltai, a.scale_log2, wq, wk, keys, queries, diagonal);
    store_tile<T, kBc, kSMT>(sP, rS, wq, wk);
    store_tile<T, kBc, kSMT>(sdS, rdP, wq, wk);
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

    // dQ_i += dS K_j: the warp's 32 queries × 32 columns; k runs over the block's keys.
    float rdQ[2][4][4] = {};  // [m-tile][8-column tile][C fragment]
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk) {
      uint32_t dsa[2][4];
      ldmatrix_x4(dsa[0], adS + dq_q * kBc * 2 + ds_off.at(kk));
      ldmatrix_x4(dsa[1], adS + (dq_q + 16) * kBc * 2 + ds_off.at(kk));
#pragma unroll
      for (int m = 0; m < 2; ++m) {
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
        const int64_t row = q0 + dq_q + 16 * mt + g + 8 * h;
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

}  // namespace fs::bwd::v9
