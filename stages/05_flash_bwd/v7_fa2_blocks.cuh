// flashstages · stage 05 · v7 — v6 on FlashAttention-2's block shape: 128 resident keys and 8 warps per
// block instead of 64 and 4.
//
// What changes from v6: the tile configuration (Config, below) and what follows from it, nothing in
// the loop's steps. Bc = 128: warp w still owns keys 16w .. 16w + 15, and 8 warps cover the block's
// keys; Br is v6's. The dQ share of a warp is 16 query rows × 32 columns (v6: × 64), so its first
// column c0 is a multiple of 32, which the swizzle's XOR does reach: the lane's two ldmatrix.trans
// offsets into K_j are worked out once, with c0 in them (dq_b_off). One block of 256 threads per SM
// where v6 ran two of 128.
// Why it should be faster: every key block adds its share of dQ_i for every query tile it meets, so
// the reductions into the fp32 workspace scale with Nk / Bc; Bc = 128 halves them, halves the fills of
// Q_i, dO_i, LSE_i and delta_i per key, and halves the block barriers per key. The price: the two
// barriers per query tile now hold 8 warps, with no second block to issue while they wait. Measured:
// little or no gain (NOTES.md); shared memory stays the limit, which v8's warp tiles address.
//
// Run: build/h100/stages/05_flash_bwd/stage05_flash_bwd --dtype fp16 --seq 8192 --dim 128 [--causal] --version v7
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

// Shared memory: sK, sV [128][D] + sQ, sdO [2][Br][D] + sdS [Br][128] + LSE_i, delta_i: 80.5 KiB at
// D = 64, 104.5 KiB at D = 128. Grouped-query attention: v4's walk over the group's query heads,
// unchanged.

namespace fs::bwd::v7 {

using attn::a_from_c;
using sm80::cp_async_commit_group;
using sm80::cp_async_wait_group;
using sm80::ldmatrix_x4;
using sm80::ldmatrix_x4_trans;
using sm80::smem_address;

template <int D>
struct Config {
  static constexpr int kWarps = 8;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kBc = 16 * kWarps;             // 128 keys per block, resident: warp w owns keys 16w .. 16w + 15
  static constexpr int kBr = D <= 64 ? 64 : 32;       // query rows per streamed tile, as v2 to v6
  static constexpr int kRowTiles = kBr / 16;          // the dQ share of a warp: row tile warp % kRowTiles,
  static constexpr int kDqCols = D / (kWarps / kRowTiles);  // kDqCols columns from (warp / kRowTiles) · kDqCols
  // sK, sV [Bc][D] + sQ, sdO [2][Br][D] (2-byte elements) + sdS [Br][Bc] + sLse, sDelta [2][Br] (fp32).
  static constexpr std::size_t kSmemBytes =
      std::size_t(2 * kBc + 4 * kBr) * D * 2 + std::size_t(kBr) * kBc * 2 + 4 * kBr * sizeof(float);
  static_assert(2 * kBr <= kThreads, "one thread per entry of LSE_i and of delta_i");
  static_assert(D % 64 == 0 && kBc % 64 == 0, "rows of 8 chunks or more: the swizzle uses all of r % 8");
  static_assert(kWarps % kRowTiles == 0 && kDqCols == 32, "the dQ shares cover [Br][D] in 32-column pieces");
};

// Where a lane's ldmatrix.trans rows of K_j lie for its warp's dQ share (b_cols_lane's rows and halves),
// as byte offsets for the share's two 16-column steps, worked out once: c0 is a multiple of 32, so the
// chunk of step m is c0 / 8 + 2m + half, and its low three bits — (c0 / 8) % 8 + 2m + half, below 8 —
// are what the XOR with row % 8 changes; the 128·(c0 / 64) bytes above them are a constant of the warp.
template <int D>
__device__ __forceinline__ void dq_b_off(uint32_t (&off)[2], int c0) {
  const int lane = threadIdx.x % 32;
  const int row = lane % 8 + lane / 8 % 2 * 8, y = lane / 16 ^ (row % 8);
#pragma unroll
  for (int m = 0; m < 2; ++m) off[m] = uint32_t(row * D * 2 + 128 * (c0 / 64) + 16 * ((c0 / 8 % 8 + 2 * m) ^ y));
}

// grid: B·KVH·ceil(Nk/Bc) blocks (Bc = 128) of Config<D>::kThreads. Block x owns key block x % ceil(Nk/Bc)
// of K/V head x / ceil(Nk/Bc), warp w its keys 16w .. 16w + 15, and streams the query tiles of each
// query head of the K/V head's group past it (v4's walk); writes dK_j and dV_j, summed over the group,
// and adds its share of each query head's dQ (before the scale) to dq_accum four columns wide, as v6 does.
template <class T, int D, bool kVarlen>
__global__ void __launch_bounds__(Config<D>::kThreads) flash_bwd_v7_dkv_kernel(const Args<T> a) {
  using C = Config<D>;
  using DqAdd = DqPairedRed;
  constexpr int kBr = C::kBr, kBc = C::kBc;
  constexpr int kQT = kBr / 8, kDT = D / 8;  // 8-query tiles of Sᵀ, dPᵀ; 8-column tiles of dK_j, dV_j
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
  // The warp's dQ share: row tile rt, columns c0 .. c0 + 31.
  const int rt = warp % C::kRowTiles, c0 = warp / C::kRowTiles * C::kDqCols;
  uint32_t dq_b[2];
  dq_b_off<D>(dq_b, c0);

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
    // dQ_i += dS K_j for row tile rt, columns c0 .. c0 + 31; k runs over the block's keys.
    float rdQ[C::kDqCols / 8][4] = {};  // [column tile][C fragment]
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk) {
      uint32_t dsa[4];
      ldmatrix_x4(dsa, adS + rt * 16 * kBc * 2 + ds_off.at(kk));
#pragma unroll
      for (int m = 0; m < C::kDqCols / 16; ++m) {
        uint32_t b[4];  // B fragments of the share's 8-column tiles 2m, 2m + 1: K_j rows kk·16 .. kk·16 + 15
        ldmatrix_x4_trans(b, aK + kk * 16 * D * 2 + dq_b[m]);
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

}  // namespace fs::bwd::v7
