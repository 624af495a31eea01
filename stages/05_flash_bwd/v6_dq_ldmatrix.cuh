// flashstages · stage 05 · v6 — v5 with the dQ product's K operand read by ldmatrix.trans too, its
// columns regrouped for the wide reduction by one register exchange between neighbouring lanes.
//
// What changes from v5, all in dQ_i += dS K_j, the only product v5 still fed by 16-bit shared-memory
// loads: its B operand, K_j's rows kk·16 .. kk·16 + 15 at the warp's dQ columns, comes by
// ldmatrix.x4.trans (b_cols_lane), as dV's dO_i and dK's Q_i already do — two 8-column tiles per
// instruction, in the natural column order. That order leaves a row's four neighbours in two threads,
// so DqAdd is dq_reduce.cuh's DqPairedRed: neighbouring lanes swap a pair of floats by __shfl_xor_sync,
// then issue the same 16-byte reductions as v3 to v5, in a different thread-to-column map.
// Why it should be faster: v5's dQ gather is 4 16-bit loads and 2 packs per B fragment, 64 fragments
// per warp per query tile — most of its LDS.U16 and PRMT instructions; ldmatrix.trans brings the same
// fragments in 16 instructions, and the exchange costs 4 shuffles per 16 columns of a row pair.
// Measured no faster (NOTES.md): the instructions fell, the bytes through the shared-memory pipe,
// which v5 waits on, barely did. Kept as that lesson, and because v7 builds on it.
//
// Run: build/h100/stages/05_flash_bwd/stage05_flash_bwd --dtype fp16 --seq 8192 --dim 128 [--causal] --version v6
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

namespace fs::bwd::v6 {

using attn::a_from_c;
using sm80::cp_async_commit_group;
using sm80::cp_async_wait_group;
using sm80::ldmatrix_x4;
using sm80::ldmatrix_x4_trans;
using sm80::smem_address;

// v5's tiles and shared memory.
template <int D>
struct Config {
  static constexpr int kWarps = 4;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kBc = 16 * kWarps;         // 64 keys per block, resident: warp w owns keys 16w .. 16w + 15
  static constexpr int kBr = D <= 64 ? 64 : 32;   // query rows per streamed tile: at D = 128, 64 would put
                                                  // Sᵀ, dPᵀ at 64 registers beside dK_j, dV_j's 128
  // The dQ share of a warp: row tile warp % kRowTiles, kDqCols columns from (warp / kRowTiles) · kDqCols.
  static constexpr int kRowTiles = kBr / 16;
  static constexpr int kDqCols = D / (kWarps / kRowTiles);  // 64 at both head_dims
  // sK, sV [Bc][D] + sQ, sdO [2][Br][D] (2-byte elements) + sdS [Br][Bc] + sLse, sDelta [2][Br] (fp32).
  static constexpr std::size_t kSmemBytes =
      std::size_t(2 * kBc + 4 * kBr) * D * 2 + std::size_t(kBr) * kBc * 2 + 4 * kBr * sizeof(float);
  static_assert(kWarps % kRowTiles == 0 && kDqCols % 8 == 0, "the dQ shares cover [Br][D] exactly");
  static_assert(2 * kBr <= kThreads, "one thread per entry of LSE_i and of delta_i");
  static_assert(D % 64 == 0 && kBc % 64 == 0, "rows of 8 chunks or more: the swizzle uses all of r % 8");
};

// grid: B·KVH·ceil(Nk/Bc) blocks of Config<D>::kThreads. Block x owns key block x % ceil(Nk/Bc)
// of K/V head x / ceil(Nk/Bc), warp w its keys 16w .. 16w + 15, and streams the query tiles of each
// query head of the K/V head's group past it (v4's walk); writes dK_j and dV_j, summed over the group,
// and adds its share of each query head's dQ (before the scale) to dq_accum four columns wide.
template <class T, int D, bool kVarlen>
__global__ void __launch_bounds__(Config<D>::kThreads) flash_bwd_v6_dkv_kernel(const Args<T> a) {
  using C = Config<D>;
  using DqAdd = DqPairedRed;
  constexpr int kBr = C::kBr, kBc = C::kBc;
  constexpr int kQT = kBr / 8, kDT = D / 8;  // 8-query tiles of Sᵀ, dPᵀ; 8-column tiles of dK_j, dV_j
  static_assert(C::kDqCols % 64 == 0, "a warp's dQ columns start on a whole swizzle row of 8 chunks");
  extern __shared__ __align__(128) unsigned char smem[];
  T* sK = reinterpret_cast<T*>(smem);                       // [Bc][D]     K_j, swizzled
  T* sV = sK + kBc * D;                                     // [Bc][D]     V_j
  T* sQ = sV + kBc * D;                                     // [2][Br][D]  Q_i, stages alternating
  T* sdO = sQ + 2 * kBr * D;                                // [2][Br][D]  dO_i
  T* sdS = sdO + 2 * kBr * D;                               // [Br][Bc]    dS_ij, queries as rows
  float* sLse = reinterpret_cast<float*>(sdS + kBr * kBc);  // [2][Br]     LSE_i, then LSE_i · log2(e)
  float* sDelta = sLse + 2 * kBr;                           // [2][Br]     delta_i

  const attn::KeyBlock kb = attn::key_block_of<kVarlen>(a, kBc);  // the entry, K/V head, keys k0 .., their lengths
  const int64_t k0 = kb.k0, k_base = kb.k_row0;            // k_base: the K/V head's first row of K, V
  const int64_t bh_end = kb.q_head0 + a.group;             // past the group's last query head
  const int warp = threadIdx.x / 32, g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  const int wk = 16 * warp;  // the warp's first key, as a row of sK and sV

  // Query tile i of query head bh → `stage`, as one cp.async group: Q_i, dO_i (16-byte copies; rows
  // past Nq zero-filled), LSE_i and delta_i.
  auto copy_tile = [&](int64_t bh, int64_t i, int stage) {
    const int64_t q_base = kb.q_base(bh, a.seq_q), q0 = i * kBr;  // q_base: the head's first row of Q, dO
    copy_tile_swizzled<T, D, C::kThreads>(sQ + stage * kBr * D, a.q + q_base * D, q0, kBr, kb.nq);
    copy_tile_swizzled<T, D, C::kThreads>(sdO + stage * kBr * D, a.d_o + q_base * D, q0, kBr, kb.nq);
    copy_lse_delta<kBr>(sLse + stage * kBr, sDelta + stage * kBr, a, q_base, q0, kb.nq);
    cp_async_commit_group();
  };

  // dK_j / scale and dV_j: the warp's 16 keys × D, C fragments, summed over the group's query heads.
  float rdK[kDT][4] = {}, rdV[kDT][4] = {};
  const int64_t offset = kb.offset;
  const int keys = int(min(kb.nk - k0, int64_t(kBc)));
  const QueryTileRuns runs = query_tile_runs<kBr, kBc>(kb, a.causal);
  const uint32_t aK = smem_address(sK), aV = smem_address(sV), adS = smem_address(sdS);  // for ldmatrix
  const LaneRow<D> a_off = a_lane<D>(), b_rows_off = b_rows_lane<D>(), b_cols_off = b_cols_lane<D>();
  const LaneRow<kBc> ds_off = a_lane<kBc>();

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
    // its stage, refilled next, and with its sdS reads (the dQ share), since tile i writes sdS again.
    __syncthreads();
    // In flight while tile i is computed: the head's next tile, or after its last the next head's first.
    const bool same_head = i + 1 < runs.count;
    if (same_head || bh + 1 < bh_end) copy_tile(same_head ? bh : bh + 1, same_head ? i + 1 : runs.first, stage ^ 1);

    float rS[kQT][4] = {}, rdP[kQT][4] = {};  // Sᵀ, dPᵀ: [query tile][C fragment], the warp's 16 keys as rows
    two_products<T, D, kBr>(rS, rdP, aK + wk * D * 2, aV + wk * D * 2, aQi, adOi, a_off, b_rows_off);
    // Block coordinates of the mask: keys < `keys`, queries < `queries`, key - query <= diagonal. Any
    // key - query lies in (-Br, Bc), so clamping the diagonal to ±256 changes no test.
    const int queries = int(min(kb.nq - q0, int64_t(kBr)));
    const int diagonal = a.causal ? int(max(min(q0 + offset - k0, int64_t(256)), int64_t(-256))) : 256;
    p_and_ds_t<decltype(kMasked)::value>(rS, rdP, sLsei, sDeltai, a.scale_log2, wk, keys, queries, diagonal);

    // dSᵀ → sdS transposed, rounded to T as the dK product rounds it: entry (key, query) of the C
    // fragments to row query, column key.
#pragma unroll
    for (int nt = 0; nt < kQT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        sdS[swizzled<kBc>(8 * nt + 2 * t + e % 2, wk + g + 8 * (e / 2))] = from_float<T>(rdP[nt][e]);

    // dV_j += Pᵀ dO_i and dK_j += dSᵀ Q_i: k runs over the tile's queries, 16 at a time.
#pragma unroll
    for (int kk = 0; kk < kQT / 2; ++kk) {
      uint32_t pa[4], dsa[4];  // Pᵀ, dSᵀ as A fragments: query tiles 2kk, 2kk+1 of the C fragments
      a_from_c<T>(pa, rS[2 * kk], rS[2 * kk + 1]);
      a_from_c<T>(dsa, rdP[2 * kk], rdP[2 * kk + 1]);
#pragma unroll
      for (int m = 0; m < kDT / 2; ++m) {
        uint32_t b[4];  // B fragments of 8-column tiles 2m, 2m + 1
        ldmatrix_x4_trans(b, adOi + kk * 16 * D * 2 + b_cols_off.at(m));
        mma_two_tiles<T>(rdV[2 * m], rdV[2 * m + 1], pa, b);
        ldmatrix_x4_trans(b, aQi + kk * 16 * D * 2 + b_cols_off.at(m));
        mma_two_tiles<T>(rdK[2 * m], rdK[2 * m + 1], dsa, b);
      }
    }

    __syncthreads();  // sdS complete: each warp's dQ share below reads the keys of every warp
    // dQ_i += dS K_j for row tile rt, columns c0 .. c0 + kDqCols - 1; k runs over the block's keys.
    // K_j's 16-column step m of the share is the swizzled row's step c0 / 16 + m: c0 is a multiple of 64
    // (a whole row of 8 chunks, which the XOR with row % 8 leaves alone), so its bytes, 2·c0, add to
    // b_cols_off.at(m) as a constant.
    const int rt = warp % C::kRowTiles, c0 = warp / C::kRowTiles * C::kDqCols;
    float rdQ[C::kDqCols / 8][4] = {};  // [column tile][C fragment]
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk) {
      uint32_t dsa[4];
      ldmatrix_x4(dsa, adS + rt * 16 * kBc * 2 + ds_off.at(kk));
#pragma unroll
      for (int m = 0; m < C::kDqCols / 16; ++m) {
        uint32_t b[4];  // B fragments of the share's 8-column tiles 2m, 2m + 1: K_j rows kk·16 .. kk·16 + 15
        ldmatrix_x4_trans(b, aK + kk * 16 * D * 2 + 2 * c0 + b_cols_off.at(m));
        mma_two_tiles<T>(rdQ[2 * m], rdQ[2 * m + 1], dsa, b);
      }
    }
    // This key block's share, added in fp32, four columns per reduction.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t row = q0 + rt * 16 + g + 8 * h;
      DqAdd::add(row < kb.nq ? a.dq_accum + (q_base + row) * D + c0 : nullptr, rdQ, h);
    }
  };

  // v4's walk: the runs of query tiles key block j meets (query_tile_runs), head after head of the
  // group, the stages alternating over the whole walk; the first tile and K_j, V_j in the prologue. A
  // block that meets no tile (v4's walk says when) writes its rows' zeros and is done.
  if (kVarlen && runs.count == 0) {
    store_dk_dv<T, D>(a, rdK, rdV, k_base, k0 + wk, kb.nk_rows);
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

  store_dk_dv<T, D>(a, rdK, rdV, k_base, k0 + wk, kb.nk_rows);
}

}  // namespace fs::bwd::v6
