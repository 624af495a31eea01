// flashstages · stage 05 · v5 — v4 with the fragments read by ldmatrix from XOR-swizzled shared tiles.
//
// What changes from v4, all in how tiles go from shared memory to the tensor cores (stage 04's v4 does
// the same for the forward): the tiles are unpadded, [rows][D] and [Br][Bc], with the 16-byte chunk c
// of row r stored at chunk c ^ (r % 8) (tiles.cuh), and ldmatrix.x4 hands a warp four 8×8 fragments in
// one instruction (fragments.cuh, products.cuh). Every operand read from shared memory comes that way
// but one: dQ's B operand keeps v3's dealt 16-bit gather from sK (lds_b_col_of_lane_swizzled, below),
// whose columns are not the 8 consecutive ones of an ldmatrix tile. Each lane works out its ldmatrix
// offsets once, before the tile loop.
// Why it is faster: v4's column gathers of dO and Q are 16-bit loads, 4 per B fragment, its row gathers
// 32-bit, 2 per B and 4 per A fragment; ldmatrix.x4 brings two B fragments or one A fragment per
// instruction: per 16-wide k step of Sᵀ and dPᵀ, 2 + Br/8 instructions instead of 8 + 4·Br/8, and
// for dV, dK 2 per pair of 8-column tiles instead of 16. (Numbers: the README's table.)
// What it still lacks: dQ's K operand still comes 16 bits at a time (v6).
//
// Run: build/h100/stages/05_flash_bwd/stage05_flash_bwd --dtype fp16 --seq 8192 --dim 128 [--causal] --version v5
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

// Every operand, as it reaches the tensor cores (fragments.cuh names the lane patterns):
//   Sᵀ, dPᵀ      A: K_j, V_j rows (a_lane)   B: Q_i, dO_i rows, two 8-query tiles at once (b_rows_lane)
//   dV_j, dK_j   A: registers                B: dO_i, Q_i columns, .trans, two tiles at once (b_cols_lane)
//   dQ_i         A: sdS rows (a_lane)        B: v3's dealt 16-bit gather from sK, swizzled
// dQ's B operand keeps v3's gather: the columns it deals out (0 1 4 5 8 9 12 13 | 2 3 6 7 10 11 14 15,
// so that a thread holds four neighbours for red.global.add.v4.f32) are not the 8 consecutive columns
// of an 8×8 ldmatrix tile. The swizzle keeps that gather free of bank conflicts (the 8 lanes of a row
// read two chunks of it, the rows 2t of the four lanes t four different XORs). Without the padding the
// shared memory shrinks: 57.0 KiB at D = 64, 68.5 KiB at D = 128 (v4: 64.0 and 73.0), still 2 blocks per
// SM. Grouped-query attention: v4's walk over the group's query heads, its pipeline running across a
// head boundary, unchanged.

namespace fs::bwd::v5 {

using attn::a_from_c;
using sm80::cp_async_commit_group;
using sm80::cp_async_wait_group;
using sm80::ldmatrix_x4;
using sm80::ldmatrix_x4_trans;
using sm80::mma_m16n8k16;
using sm80::pack2_bits;
using sm80::smem_address;

// v2's tiles (Bc = 64 keys resident, Br = 64 or 32 query rows streamed, 4 warps), v4's two stages of
// the streamed ones, no padding.
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

// attn::lds_b_col_of_lane on a swizzled tile: lane 4·g + t brings column n (its own) of rows
// k0 + 2t, 2t + 1, 2t + 8, 2t + 9 (k0 a multiple of 16) as the B fragment of whichever 8-column tile
// DqWideRed deals it to. Rows k0 + 2t and k0 + 2t + 8 have r % 8 = 2t, the other two 2t + 1, so
// the swizzled chunk of n is x = (n / 8) ^ 2t or x ^ 1: two offsets per column whatever k0 is.
template <int kCols, class T>
__device__ __forceinline__ void lds_b_col_of_lane_swizzled(uint32_t& b0, uint32_t& b1, const T* tile, int k0, int n) {
  const int t2 = 2 * (threadIdx.x % 4);
  const uint16_t* p = reinterpret_cast<const uint16_t*>(tile) + (k0 + t2) * kCols + n % 8;
  const int x = (n / 8) ^ t2;
  b0 = pack2_bits(p[x * 8], p[kCols + (x ^ 1) * 8]);
  b1 = pack2_bits(p[8 * kCols + x * 8], p[9 * kCols + (x ^ 1) * 8]);
}

// grid: B·KVH·ceil(Nk/Bc) blocks of Config<D>::kThreads. Block x owns key block x % ceil(Nk/Bc) of K/V
// head x / ceil(Nk/Bc), warp w its keys 16w .. 16w + 15, and streams the query tiles of each query head
// of the K/V head's group past it; writes dK_j and dV_j, summed over the group, and adds its share of
// each query head's dQ (before the scale) to dq_accum four columns wide, as v3 does.
template <class T, int D, bool kVarlen>
__global__ void __launch_bounds__(Config<D>::kThreads) flash_bwd_v5_dkv_kernel(const Args<T> a) {
  using C = Config<D>;
  using DqAdd = DqWideRed;
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
    const int rt = warp % C::kRowTiles, c0 = warp / C::kRowTiles * C::kDqCols;
    float rdQ[C::kDqCols / 8][4] = {};  // [column tile][C fragment]
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk) {
      uint32_t dsa[4];
      ldmatrix_x4(dsa, adS + rt * 16 * kBc * 2 + ds_off.at(kk));
#pragma unroll
      for (int dt = 0; dt < C::kDqCols / 8; ++dt) {
        uint32_t b0, b1;
        lds_b_col_of_lane_swizzled<D>(b0, b1, sK, kk * 16, c0 + DqAdd::column(dt, g));
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

}  // namespace fs::bwd::v5
