// flashstages · stage 05 · v4 — v3 with the streamed query tiles double-buffered through cp.async:
// Q_i+1, dO_i+1, LSE_i+1 and delta_i+1 are in flight into shared memory while tile i is computed.
//
// What changes from v3: how the streamed tiles reach shared memory (stage 04's v3 does the same for
// the forward's K and V). cp.async copies Q_i, dO_i (16 bytes at a time, rows past Nq zero-filled by
// the copy) and LSE_i, delta_i (tiles.cuh: copy_lse_delta) global → shared without a register round
// trip; sQ, sdO, sLse and sDelta have two stages, the copies of tile i + 1 issued into one right after
// the barrier that starts tile i. That one barrier does the work of v3's two at the top of a tile.
// Why it is faster: v3 loads each query tile between two barriers, every thread waiting for its loads
// before it can store them, no warp computing while a tile is on its way — one such stall per query
// tile. (Numbers: the README's table; the loads were not the main wait.)
// What it still lacks: fragment reads with bank conflicts, 32 or 16 bits at a time (v5: ldmatrix).
//
// Run: build/h100/stages/05_flash_bwd/stage05_flash_bwd --dtype fp16 --seq 8192 --dim 128 [--causal] --version v4
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
#include "stages/05_flash_bwd/products.cuh"
#include "stages/05_flash_bwd/query_tiles.cuh"
#include "stages/05_flash_bwd/softmax.cuh"
#include "stages/05_flash_bwd/tiles.cuh"

// The pipeline, tile by tile:
//   - K_j and V_j travel by cp.async too, in the first tile's group;
//   - once the barrier that starts tile i is passed, tile i has landed for every thread and every warp
//     is done with tile i - 1 — with its stage, which is refilled next, and with sdS, which tile i
//     writes again;
//   - LSE comes in as the forward wrote it (natural log) and p_and_ds_t wants LSE · log2(e): the thread
//     that copied an entry scales it in place between its cp.async wait (which makes its own copies
//     visible to it) and the barrier (which makes them visible to the block).
// Grouped-query attention as in v2 and v3: a block owns key block j of one K/V head and walks the query
// tiles of each of the group's G query heads in turn, dK_j and dV_j summing on in registers. The
// pipeline runs straight across a head boundary (K_j, V_j stay: the group shares them): the next head's
// first tile is in flight while this head's last is computed. So the stages alternate over the block's
// whole walk of tiles, not by i % 2, which would give both sides of a boundary the same stage when a
// head has an odd number of tiles.
// Shared memory: sK, sV [64][D+8], sQ, sdO [2][Br][D+8], sdS [Br][72], sLse, sDelta [2][Br]: 64.0 KiB at
// D = 64 (Br = 64), 73.0 KiB at D = 128 (Br = 32) — v3's plus one stage of Q, dO, LSE and delta; 2
// blocks per SM (the registers allow no more) take 128 or 146 KiB of the H100's 227.

namespace fs::bwd::v4 {

using attn::a_from_c;
using attn::lds_a;
using attn::lds_b_col_of_lane;
using attn::lds_b_cols;
using attn::load_tile_async;
using sm80::cp_async_commit_group;
using sm80::cp_async_wait_group;
using sm80::mma_m16n8k16;

// v2's tiles (Bc = 64 keys resident, Br = 64 or 32 query rows streamed, 4 warps), with two stages of
// the streamed ones.
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
  // sK, sV [Bc][D+8] + sQ, sdO [2][Br][D+8] (2-byte elements) + sdS [Br][Bc+8] + sLse, sDelta [2][Br] (fp32).
  static constexpr std::size_t kSmemBytes =
      std::size_t(2 * kBc + 4 * kBr) * kStride * 2 + std::size_t(kBr) * kStrideS * 2 + 4 * kBr * sizeof(float);
  static_assert(kWarps % kRowTiles == 0 && kDqCols % 8 == 0, "the dQ shares cover [Br][D] exactly");
  static_assert(2 * kBr <= kThreads, "one thread per entry of LSE_i and of delta_i");
};

// grid: B·KVH·ceil(Nk/Bc) blocks of Config<D>::kThreads. Block x owns key block x % ceil(Nk/Bc) of K/V
// head x / ceil(Nk/Bc), warp w its keys 16w .. 16w + 15, and streams the query tiles of each query head
// of the K/V head's group past it; writes dK_j and dV_j, summed over the group, and adds its share of
// each query head's dQ (before the scale) to dq_accum four columns wide, as v3 does.
template <class T, int D, bool kVarlen>
__global__ void __launch_bounds__(Config<D>::kThreads) flash_bwd_v4_dkv_kernel(const Args<T> a) {
  using C = Config<D>;
  using DqAdd = DqWideRed;
  constexpr int kBr = C::kBr, kBc = C::kBc, kS = C::kStride, kSS = C::kStrideS;
  constexpr int kQT = kBr / 8, kDT = D / 8;  // 8-query tiles of Sᵀ, dPᵀ; 8-column tiles of dK_j, dV_j
  extern __shared__ __align__(16) unsigned char smem[];
  T* sK = reinterpret_cast<T*>(smem);                       // [Bc][D+8]     K_j
  T* sV = sK + kBc * kS;                                    // [Bc][D+8]     V_j
  T* sQ = sV + kBc * kS;                                    // [2][Br][D+8]  Q_i, stages alternating
  T* sdO = sQ + 2 * kBr * kS;                               // [2][Br][D+8]  dO_i
  T* sdS = sdO + 2 * kBr * kS;                              // [Br][Bc+8]    dS_ij, queries as rows
  float* sLse = reinterpret_cast<float*>(sdS + kBr * kSS);  // [2][Br]       LSE_i, then LSE_i · log2(e)
  float* sDelta = sLse + 2 * kBr;                           // [2][Br]       delta_i

  const attn::KeyBlock kb = attn::key_block_of<kVarlen>(a, kBc);  // the entry, K/V head, keys k0 .., their lengths
  const int64_t k0 = kb.k0, k_base = kb.k_row0;            // k_base: the K/V head's first row of K, V
  const int64_t bh_end = kb.q_head0 + a.group;             // past the group's last query head
  const int warp = threadIdx.x / 32, g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  const int wk = 16 * warp;  // the warp's first key, as a row of sK and sV

  // Query tile i of query head bh → `stage`, as one cp.async group: Q_i, dO_i (16-byte copies; rows
  // past Nq zero-filled), LSE_i and delta_i.
  auto copy_tile = [&](int64_t bh, int64_t i, int stage) {
    const int64_t q_base = kb.q_base(bh, a.seq_q), q0 = i * kBr;  // q_base: the head's first row of Q, dO
    load_tile_async<T, D, C::kThreads>(sQ + stage * kBr * kS, a.q + q_base * D, q0, kBr, kb.nq);
    load_tile_async<T, D, C::kThreads>(sdO + stage * kBr * kS, a.d_o + q_base * D, q0, kBr, kb.nq);
    copy_lse_delta<kBr>(sLse + stage * kBr, sDelta + stage * kBr, a, q_base, q0, kb.nq);
    cp_async_commit_group();
  };

  // dK_j / scale and dV_j: the warp's 16 keys × D, C fragments, summed over the group's query heads.
  float rdK[kDT][4] = {}, rdV[kDT][4] = {};
  const int64_t offset = kb.offset;
  const int keys = int(min(kb.nk - k0, int64_t(kBc)));
  const QueryTileRuns runs = query_tile_runs<kBr, kBc>(kb, a.causal);

  // Query tile i of query head bh, in `stage`; kMasked (a std::bool_constant) says whether any of its
  // pairs can be hidden.
  auto step = [&](int64_t bh, int64_t i, int stage, auto kMasked) {
    const int64_t q_base = kb.q_base(bh, a.seq_q), q0 = i * kBr;
    const T* sQi = sQ + stage * kBr * kS;         // [Br][D+8]  Q_i
    const T* sdOi = sdO + stage * kBr * kS;       // [Br][D+8]  dO_i
    float* sLsei = sLse + stage * kBr;            // [Br]       LSE_i (· log2(e) after the barrier)
    const float* sDeltai = sDelta + stage * kBr;  // [Br]       delta_i
    cp_async_wait_group<0>();  // this thread's copies of tile i (and, the first time, of K_j, V_j) have landed
    if (threadIdx.x < kBr) sLsei[threadIdx.x] *= attn::kLog2e;  // the entry this thread copied
    // Every thread's copies have landed, LSE_i is scaled, and every warp is done with tile i - 1: with
    // its stage, refilled next, and with its sdS reads (the dQ share), since tile i writes sdS again.
    __syncthreads();
    // In flight while tile i is computed: the head's next tile, or after its last the next head's first
    // (one call site: two cost v5 registers enough to spill at D = 128).
    const bool same_head = i + 1 < runs.count;
    if (same_head || bh + 1 < bh_end) copy_tile(same_head ? bh : bh + 1, same_head ? i + 1 : runs.first, stage ^ 1);

    float rS[kQT][4] = {}, rdP[kQT][4] = {};  // Sᵀ, dPᵀ: [query tile][C fragment], the warp's 16 keys as rows
    two_products<T, D, kBr>(rS, rdP, sK, sV, wk, sQi, sdOi);
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
        lds_b_cols<kS>(b0, b1, sdOi, kk * 16, dt * 8);
        mma_m16n8k16<T>(rdV[dt], pa, b0, b1);
        lds_b_cols<kS>(b0, b1, sQi, kk * 16, dt * 8);
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

  // The query tiles key block j meets (query_tile_runs), the same for each query head of the
  // group (they depend on k0, nq and nk only). A block that meets none — past a padded entry's keys,
  // in an entry with no query or one that breaks the rules — loads nothing and writes its rows' zeros.
  // Any other meets a first one — tile 0 without the mask; with it, nq <= nk (refused otherwise) puts
  // row k0 - offset below nq — so the prologue's group is always waited for, and every head has a first
  // tile to prefetch.
  if (kVarlen && runs.count == 0) {
    store_dk_dv<T, D>(a, rdK, rdV, k_base, k0 + wk, kb.nk_rows);
    return;
  }
  load_tile_async<T, D, C::kThreads>(sK, a.k + k_base * D, k0, kBc, kb.nk);
  load_tile_async<T, D, C::kThreads>(sV, a.v + k_base * D, k0, kBc, kb.nk);
  copy_tile(kb.q_head0, runs.first, 0);  // commits K_j and V_j with it
  int stage = 0;  // the stage of the tile computed next: alternates over the walk of every head's tiles
  for (int64_t bh = kb.q_head0; bh < bh_end; ++bh) {
    int64_t i = runs.first;
    for (; i < runs.full_begin; ++i, stage ^= 1) step(bh, i, stage, std::true_type{});
    for (; i < runs.full_end; ++i, stage ^= 1) step(bh, i, stage, std::false_type{});
    for (; i < runs.count; ++i, stage ^= 1) step(bh, i, stage, std::true_type{});
  }

  store_dk_dv<T, D>(a, rdK, rdV, k_base, k0 + wk, kb.nk_rows);
}

}  // namespace fs::bwd::v4
