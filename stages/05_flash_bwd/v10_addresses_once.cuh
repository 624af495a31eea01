// flashstages · stage 05 · v10 — v9 with each thread's addresses worked out once per block: the
// streamed tiles' copies and the dQ reductions cost one address add per tile, not a recomputation.
//
// What changes from v9 (tiles, warps, products and shared memory are v9's): a thread's share of a
// [Br][D] copy is fixed, so TileCopy works out its shared and global offsets once and a tile costs one
// multiply-add and kPer cp.async at immediate offsets; a tile whose rows all lie before Nq (every tile
// but an entry's last) copies without the bounds test and the zero-fill. The thread's offset in
// dq_accum is worked out once too, and such a tile reduces without DqPairedRed's test for a missing
// row (DqPairedRedWholeRows). The sequence's last tile keeps v9's forms. And v10 reads Q, K, V, dO and
// writes dK, dV through their strides (fs_attention_params: any layout with D contiguous), as the
// preprocess, the dQ conversion and the deterministic pair do for every version.
// Why it is faster: v9 issues as many mma and ldmatrix as FlashAttention-2's backward but far more
// integer and branch instructions, most of them in the query tile copy and the dQ reduction; with two
// warps per scheduler (one block of 8 warps per SM) they are not hidden: while a warp computes its
// next tile's addresses its tensor-core work waits, and the block meets at a barrier per tile.
// (Numbers: the README's table; the profile: NOTES.md.)
//
// Run: build/h100/stages/05_flash_bwd/stage05_flash_bwd --dtype fp16 --seq 8192 --dim 64 [--causal] --version v10
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

// TileCopy: kStep = 256 threads / (D/8) chunks per row is a multiple of 8, so the swizzle moves each
// of a thread's chunks by a constant too; v9's copy_tile_swizzled tests every chunk in a loop whose
// trip count depends on the thread, in 64-bit row arithmetic. The dQ offset: (row in the tile)·D +
// columns; with it in the sequence's last tile too, ptxas spilled more at D = 128.

namespace fs::bwd::v10 {

using sm80::cp_async_cg_16;
using sm80::cp_async_cg_16_zfill;
using sm80::cp_async_commit_group;
using sm80::cp_async_wait_group;
using sm80::ldmatrix_x4;
using sm80::ldmatrix_x4_trans;
using sm80::smem_address;

// v9's tiles, warps and shared memory.
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

// A thread's share of copying a [kRows][D] tile, swizzled (tiles.cuh: swizzled), from kRows consecutive rows
// of a [n][D] tensor whose rows lie ld elements apart (D, or the tensor's row stride): chunks (16 bytes)
// k = 0 .. kPer − 1 of rows r0 + k·kStep, all at one column. The offsets are fixed per thread and
// worked out here, once; a tile adds its first row. kStep is a multiple of 8, so row r0 + k·kStep is
// swizzled as row r0 is: its shared offset is r0's + k·kStep·D.
template <class T, int D, int kRows, int kThreads>
struct TileCopy {
  static constexpr int kChunks = D / 8, kStep = kThreads / kChunks, kPer = kRows / kStep;
  static_assert(kThreads % kChunks == 0 && kStep % 8 == 0 && kRows % kStep == 0, "whole swizzle atoms per step");
  int r0;   // the thread's first row
  int dst;  // its first chunk's element offset in the tile (swizzled)
  int col;  // and its column in the tensor
  __device__ __forceinline__ TileCopy()
      : r0(threadIdx.x / kChunks),
        dst(swizzled<D>(threadIdx.x / kChunks, threadIdx.x % kChunks * 8)),
        col(threadIdx.x % kChunks * 8) {}

  // Rows first .. first + kRows − 1 (ld elements apart) into tile; rows from `rows` on (rows < kRows:
  // the sequence's last tile) read nothing and are zero-filled.
  __device__ __forceinline__ void operator()(T* tile, const T* first, int64_t ld, int rows) const {
    const T* src = first + r0 * ld + col;
    if (rows >= kRows) {
#pragma unroll
      for (int k = 0; k < kPer; ++k) cp_async_cg_16(tile + dst + k * kStep * D, src + k * kStep * ld);
    } else {
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
        const bool real = r0 + k * kStep < rows;
        cp_async_cg_16_zfill(tile + dst + k * kStep * D, real ? src + k * kStep * ld : first, real ? 16 : 0);
      }
    }
  }
};

// dq_reduce.cuh's DqPairedRed for a row that exists: in a tile whose rows all lie before Nq, the
// reduction without the test for a missing row and the branch around it. (The sequence's last tile
// takes DqPairedRed itself.)
struct DqPairedRedWholeRows {
  template <int kTiles>
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
      float* q = dq_row + 16 * p + 8 * odd + 4 * (t / 2);
      DqWideRed::add4(q, odd ? r0 : lo[0], odd ? r1 : lo[1], odd ? hi[0] : r0, odd ? hi[1] : r1);
    }
  }
};

// grid: B·KVH·ceil(Nk/Bc) blocks (Bc = 128) of Config<D>::kThreads. Block x owns key block
// x % ceil(Nk/Bc) of K/V head x / ceil(Nk/Bc) and streams the query tiles of each query head of the
// K/V head's group past it (v4's walk); writes dK_j and dV_j, summed over the group, and adds its share
// of each query head's dQ (before the scale) to dq_accum four columns wide, as v6 does. (v9's kernel,
// its copies and reductions addressed from offsets each thread works out once.)
template <class T, int D, bool kVarlen>
__global__ void __launch_bounds__(Config<D>::kThreads) flash_bwd_v10_dkv_kernel(const Args<T> a) {
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
  const int64_t k0 = kb.k0;
  const int64_t bh_end = kb.q_head0 + a.group;             // past the group's last query head
  const int warp = threadIdx.x / 32;
  constexpr int kSMT = C::kSMT;
  const int wq = kBr / 2 * (warp / 4), wk = 32 * (warp % 4);  // S, dP: the warp's queries and keys
  const int kw = wk, cw = warp / 4 * (D / 2);                 // dK, dV: the warp's keys and columns
  const int dq_q = 32 * (warp % C::kDqRowWarps);              // dQ: the warp's queries
  const int cq = warp / C::kDqRowWarps * C::kDqCols;          // and columns

  // The thread's shares of the streamed copies, and its first element of dQ's warp tile (row
  // dq_q + g, columns cq ..) as an offset from the tile's first row of dq_accum.
  const TileCopy<T, D, kBr, C::kThreads> copy_q_do;
  const int dq_off = (dq_q + threadIdx.x % 32 / 4) * D + cq;

  // Query tile i of query head bh → `stage`, as one cp.async group: Q_i, dO_i (16-byte copies through
  // their strides; rows past Nq zero-filled), LSE_i and delta_i.
  auto copy_tile = [&](int64_t bh, int64_t i, int stage) {
    const int64_t q_base = kb.q_base(bh, a.seq_q), q0 = i * kBr;  // q_base: the head's first row of LSE, delta
    const int rows = int(min(kb.nq - q0, int64_t(kBr)));
    const int64_t q_at = kb.q_at + (bh - kb.q_head0) * a.q_strides.head + q0 * a.q_strides.row;  // Q_i's first
    const int64_t o_at = kb.o_at + (bh - kb.q_head0) * a.o_strides.head + q0 * a.o_strides.row;  // dO_i's first
    copy_q_do(sQ + stage * kBr * D, a.q + q_at, a.q_strides.row, rows);
    copy_q_do(sdO + stage * kBr * D, a.d_o + o_at, a.o_strides.row, rows);
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
  const LaneCols<D, 2> dq_b_off = b_cols_lane<D, 2>(cq);                  // K_j for dQ

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
    // This key block's share, added in fp32, four columns per reduction. In a tile whose rows all exist
    // the thread's rows lie 16·mt + 8·h below its first (dq_off); the sequence's last tile is v9's.
    float* dq = a.dq_accum + (q_base + q0) * D + dq_off;
    if (q0 + kBr <= kb.nq) {
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) DqPairedRedWholeRows::add(dq + (16 * mt + 8 * h) * D, rdQ[mt], h);
    } else {
      const int g = threadIdx.x % 32 / 4;
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int64_t row = q0 + dq_q + 16 * mt + g + 8 * h;
          DqPairedRed::add(row < kb.nq ? a.dq_accum + (q_base + row) * D + cq : nullptr, rdQ[mt], h);
        }
    }
  };

  // v4's walk: the runs of query tiles key block j meets (query_tile_runs), head after head of the
  // group, the stages alternating over the whole walk; the first tile and K_j, V_j in the prologue. A
  // block that meets no tile (v4's walk says when) writes its rows' zeros and is done.
  // K_j, V_j, dK_j and dV_j: the K/V head's rows where K's and V's strides put them.
  T* const dk = a.dk + kb.k_at;
  T* const dv = a.dv + kb.v_at;
  if (kVarlen && runs.count == 0) {
    store_dk_dv<T, D>(a, rdK, rdV, dk, a.k_strides.row, dv, a.v_strides.row, k0 + kw, kb.nk_rows, cw);
    return;
  }
  copy_tile_swizzled<T, D, C::kThreads>(sK, a.k + kb.k_at, k0, kBc, kb.nk, a.k_strides.row);
  copy_tile_swizzled<T, D, C::kThreads>(sV, a.v + kb.v_at, k0, kBc, kb.nk, a.v_strides.row);
  copy_tile(kb.q_head0, runs.first, 0);  // commits K_j and V_j with it
  int stage = 0;  // the stage of the tile computed next
  for (int64_t bh = kb.q_head0; bh < bh_end; ++bh) {
    int64_t i = runs.first;
    for (; i < runs.full_begin; ++i, stage ^= 1) step(bh, i, stage, std::true_type{});
    for (; i < runs.full_end; ++i, stage ^= 1) step(bh, i, stage, std::false_type{});
    for (; i < runs.count; ++i, stage ^= 1) step(bh, i, stage, std::true_type{});
  }

  store_dk_dv<T, D>(a, rdK, rdV, dk, a.k_strides.row, dv, a.v_strides.row, k0 + kw, kb.nk_rows, cw);
}

}  // namespace fs::bwd::v10
