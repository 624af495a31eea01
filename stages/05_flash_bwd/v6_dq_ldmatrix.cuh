// flashstages · stage 05 · v6 — v5 with the dQ product's K operand read by ldmatrix.trans too, its
// columns regrouped for the wide reduction by one register exchange between neighbouring lanes.
//
// What changes from v5, all in dQ_i += dS K_j (the fifth product, the only one v5 still fed by 16-bit
// shared-memory loads):
//   - the B operand, K_j's rows kk·16 .. kk·16 + 15 at the warp's dQ columns, comes by
//     ldmatrix.x4.trans (b_cols_lane), as dV's dO_i and dK's Q_i already do: two 8-column tiles per
//     instruction, the natural column order (lane g of an 8×8 tile brings column g);
//   - the natural order leaves thread t with columns 2t, 2t + 1 of each 8-column tile, so a row's four
//     neighbours for red.global.add.v4.f32 are no longer in one thread (v3 dealt the columns of the
//     gather so that they were). Of 16 columns 16p .. 16p + 15 (tiles 2p and 2p + 1), threads t and
//     t ^ 1 hold 4⌊t/2⌋ + (0 1 | 2 3) of tile 2p and of tile 2p + 1; each sends the pair the other one
//     needs (__shfl_xor_sync by 1, two floats) and keeps its own:
//       even t = 2u:  its tile-2p pair + the odd lane's tile-2p pair  → columns 16p + 4u .. 16p + 4u + 3
//       odd  t = 2u+1: the even lane's tile-2p+1 pair + its own pair  → columns 16p + 8 + 4u .. + 3
//     the same reductions as v3 to v5 (one 16-byte red per thread per 16 columns per row), in a
//     different thread-to-column map (DqPairedRed, below).
// Why it should be faster: ncu on v5 (H100, fp16, D = 128, N = 8192, non-causal; --set full): of its
// 4.08·10⁹ instructions 537·10⁶ are LDS.U16 and 323·10⁶ PRMT, nearly all of them the dQ gather
// (4 loads and 2 packs per B fragment, 64 fragments per warp per query tile), against 671·10⁶ HMMA;
// the warps' first stall reason is the short scoreboard (33% of samples: waiting on shared-memory
// loads), with 2 warps per scheduler (255 registers, 2 blocks of 4 warps per SM) to hide it. Per
// thread and query tile the gather is 128 loads + 64 packs + their addresses; ldmatrix.trans brings the
// same fragments in 16 instructions, and the exchange costs 4 shuffles per 16 columns of a row pair.
// Grouped-query attention: v4's walk over the group's query heads (v5 has it too), unchanged.
// One reduction per 16 columns, its four values chosen by the lane's parity: written first as two
// calls, one per branch, it cost v8 7% (262 against 282 TFLOPS at D = 128, in runs whose SDPA flash
// agreed within 0.3%); v6's and v7's rows below were measured with that first form.
// Result (H100, fp16, N = 8192; stage05.json): no faster. <!-- value: [stage05/v6/fp16/D:128/N:8192/causal:0] / [stage05/v5/fp16/D:128/N:8192/causal:0] | .2f -->0.99<!-- /value -->× v5 at D = 128 (<!-- value: [stage05/v6/fp16/D:128/N:8192/causal:1] / [stage05/v5/fp16/D:128/N:8192/causal:1] | .2f -->0.95<!-- /value -->× causal),
//   <!-- value: [stage05/v6/fp16/D:64/N:8192/causal:0] / [stage05/v5/fp16/D:64/N:8192/causal:0] | .2f -->0.92<!-- /value -->× at D = 64 (<!-- value: [stage05/v6/fp16/D:64/N:8192/causal:1] / [stage05/v5/fp16/D:64/N:8192/causal:1] | .2f -->0.93<!-- /value -->× causal). The instructions did fall: in the profile of v7, which has
//   v6's dQ, the LDS.U16 and nearly all the PRMT are gone and the kernel issues 2.83·10⁹ instructions
//   against v5's 4.08·10⁹ (results/nvidia-h100-80gb-hbm3/logs/ncu_stage05_v5_v7_v8_2026-11-23c.txt).
//   Issue slots were not what v5 waited for: its shared memory served 0.72 wavefronts per SM per cycle
//   (of one): 63% of them ldmatrix (4 wavefronts each), 24% the gather (one per 16-bit load). The
//   gather's 16-bit loads became ldmatrix, 2.22·10⁹ wavefronts became 1.95·10⁹ (v7's count), and the
//   short-scoreboard stalls that waited on the gather now wait on ldmatrix (37% of samples, at the
//   HMMAs they feed: 0.65 ldmatrix per HMMA). v6 is kept as the measured lesson — fewer
//   instructions, nearly the same bytes through the same pipe — and because v7 builds on it; what
//   the ratio of ldmatrix to HMMA needs is in the README ("Results").
//
// Run: build/h100/stages/05_flash_bwd/stage05_flash_bwd --dtype fp16 --seq 8192 --dim 128 [--causal] --version v6
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "args.cuh"
#include "common/device/attention.cuh"
#include "common/device/sm80.cuh"
#include "common/lib/numeric.h"
#include "v2_mma.cuh"
#include "v3_wide_red.cuh"
#include "v4_cp_async.cuh"
#include "v5_ldmatrix_swizzle.cuh"

namespace fs::bwd::v6 {

using attn::a_from_c;
using sm80::cp_async_commit_group;
using sm80::cp_async_wait_group;
using sm80::ldmatrix_x4;
using sm80::ldmatrix_x4_trans;
using sm80::smem_address;
using v2::p_and_ds_t;
using v4::copy_lse_delta;
using v4::store_dk_dv;
using v5::a_lane;
using v5::b_cols_lane;
using v5::b_rows_lane;
using v5::copy_tile_swizzled;
using v5::LaneRow;
using v5::mma_two_tiles;
using v5::swizzled;
using v5::two_products;

// v5's tiles and shared memory.
template <int D>
using Config = v5::Config<D>;

// v6's DqAdd: adds row g + 8h of a warp's dQ share (C fragments of its 8-column tiles, natural column
// order) to dq_row four neighbouring columns per reduction, after the exchange the header describes.
// Every lane of the warp must call it (the exchange is a warp shuffle); dq_row is null for a row
// past Nq, whose lanes exchange but add nothing. kRowExists (v10, for tiles whose rows all lie before
// Nq) drops that test. Alignment: as v3's (a row is D floats, the share starts at a multiple of 64
// columns, a thread's four at 16p + 8·(t % 2) + 4⌊t/2⌋).
struct DqPairedRed {
  template <bool kRowExists = false, int kTiles>
  __device__ static void add(float* dq_row, const float (&rdQ)[kTiles][4], int h) {
    static_assert(kTiles % 2 == 0, "the 8-column tiles pair up into 16 columns");
    const int t = threadIdx.x % 4;
    const bool odd = t % 2;
#pragma unroll
    for (int p = 0; p < kTiles / 2; ++p) {
      const float* lo = &rdQ[2 * p][2 * h];      // tile 2p:     columns 16p + 2t, 2t + 1
      const float* hi = &rdQ[2 * p + 1][2 * h];  // tile 2p + 1: columns 16p + 8 + 2t, 8 + 2t + 1
      const float r0 = __shfl_xor_sync(0xffffffffu, odd ? lo[0] : hi[0], 1);
      const float r1 = __shfl_xor_sync(0xffffffffu, odd ? lo[1] : hi[1], 1);
      if (!kRowExists && dq_row == nullptr) continue;
      float* q = dq_row + 16 * p + 8 * odd + 4 * (t / 2);
      v3::DqWideRed::add4(q, odd ? r0 : lo[0], odd ? r1 : lo[1], odd ? hi[0] : r0, odd ? hi[1] : r1);
    }
  }
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
  const v2::QueryTileRuns runs = v2::query_tile_runs<kBr, kBc>(kb, a.causal);  // v2's causal stage splitting
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

  // v4's walk: the runs of query tiles key block j meets (v2::query_tile_runs), head after head of the
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
