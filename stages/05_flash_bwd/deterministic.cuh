// Stage 05: the deterministic path of every tensor-core version (v2 to v10, when the caller sets
// `deterministic`): v2's K/V kernel without its dQ share, then v1's second pass on tensor cores — a
// kernel that gives each query tile to one block, streams the key blocks past it in key order,
// recomputes S and dP (queries as rows there: no transpose needed, dS is the A operand straight from
// registers) and sums dQ_i in registers. No workspace, no atomics, dQ bitwise the same every run, at
// the price of computing S and dP twice. Both read and write every tensor through its strides
// (fs_attention_params), so the pair serves v10's strided problems too. The versions from v3 on change only the atomic path's K/V
// kernel; this pair stays as v2 made it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "common/device/attention.cuh"
#include "common/device/sm80.cuh"
#include "common/lib/numeric.h"
#include "common/device/bwd_args.cuh"
#include "stages/05_flash_bwd/products.cuh"
#include "stages/05_flash_bwd/query_tiles.cuh"
#include "stages/05_flash_bwd/softmax.cuh"

namespace fs::bwd::deterministic {

using attn::a_from_c;
using attn::lds_b_cols;
using attn::load_tile;
using sm80::ex2_approx_ftz;
using sm80::mma_m16n8k16;
using sm80::pack2;

// The K/V kernel's tiles: v2's (v2_mma.cuh, Config), its shared memory laid out as v2's.
template <int D>
struct KvConfig {
  static constexpr int kWarps = 4;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kBc = 16 * kWarps;         // 64 keys per block, resident: warp w owns keys 16w .. 16w + 15
  static constexpr int kBr = D <= 64 ? 64 : 32;   // query rows per streamed tile
  static constexpr int kStride = D + 8;           // padded rows of sK, sV, sQ, sdO (common/device/attention.cuh)
  static constexpr int kStrideS = kBc + 8;        // padded rows of v2's sdS, which this kernel leaves unused
  static constexpr std::size_t kSmemBytes =
      std::size_t(2 * kBc + 2 * kBr) * kStride * 2 + std::size_t(kBr) * kStrideS * 2 + 2 * kBr * sizeof(float);
};

// The dQ kernel: warp w owns query rows 16w .. 16w + 15.
template <int D>
struct DqConfig {
  static constexpr int kWarps = 4;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kBr = 16 * kWarps;  // 64 query rows per block, resident
  static constexpr int kBc = 64;           // keys per streamed block
  static constexpr int kStride = D + 8;
  static constexpr std::size_t kSmemBytes = std::size_t(2 * kBr + 2 * kBc) * kStride * 2;
};

// grid: B·KVH·ceil(max Nk/Bc) blocks of kThreads. Block x owns key block x % ceil(max Nk/Bc) of K/V head
// x / ceil(max Nk/Bc) (attn::key_block_of: max Nk is Nk but for packed batches), warp w its keys
// 16w .. 16w + 15, and streams the query tiles of each query head of the K/V head's group past it, one
// head after the other. Writes dK_j and dV_j, summed over the group; leaves dQ to dq_kernel.
template <class T, int D, bool kVarlen>
__global__ void __launch_bounds__(KvConfig<D>::kThreads) dkv_kernel(const Args<T> a) {
  using C = KvConfig<D>;
  constexpr int kBr = C::kBr, kBc = C::kBc, kS = C::kStride, kSS = C::kStrideS;
  constexpr int kQT = kBr / 8, kDT = D / 8;  // 8-query tiles of Sᵀ, dPᵀ; 8-column tiles of dK_j, dV_j
  extern __shared__ __align__(16) unsigned char smem[];
  T* sK = reinterpret_cast<T*>(smem);                           // [Bc][D+8]  K_j
  T* sV = sK + kBc * kS;                                        // [Bc][D+8]  V_j
  T* sQ = sV + kBc * kS;                                        // [Br][D+8]  Q_i
  T* sdO = sQ + kBr * kS;                                       // [Br][D+8]  dO_i
  float* sLse = reinterpret_cast<float*>(sdO + kBr * kS + kBr * kSS);  // [Br]  LSE_i · log2(e), past v2's sdS
  float* sDelta = sLse + kBr;                                   // [Br]       delta_i

  const attn::KeyBlock kb = attn::key_block_of<kVarlen>(a, kBc);  // the entry, K/V head, keys k0 .., their lengths
  const int64_t k0 = kb.k0;
  const int warp = threadIdx.x / 32, g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  const int wk = 16 * warp;  // the warp's first key, as a row of sK and sV

  // The K/V head's rows of K and V (and of dK, dV) where the strides put them.
  load_tile<T, D, C::kThreads>(sK, a.k + kb.k_at, k0, kBc, kb.nk, a.k_strides.row);
  load_tile<T, D, C::kThreads>(sV, a.v + kb.v_at, k0, kBc, kb.nk, a.v_strides.row);

  // dK_j / scale and dV_j: the warp's 16 keys × D, C fragments, summed over the group's query heads.
  float rdK[kDT][4] = {}, rdV[kDT][4] = {};
  const int64_t offset = kb.offset;
  const int keys = int(min(kb.nk - k0, int64_t(kBc)));

  // Query tile q0 of the query head whose first row of LSE, delta is q_base, of Q at q_at and of dO at
  // o_at (elements, their strides); kMasked (a std::bool_constant) says whether any of its pairs can be
  // hidden.
  auto step = [&](int64_t q_base, int64_t q_at, int64_t o_at, int64_t q0, auto kMasked) {
    __syncthreads();  // every warp is done with the previous tile's sQ, sdO, sLse, sDelta
    load_tile<T, D, C::kThreads>(sQ, a.q + q_at, q0, kBr, kb.nq, a.q_strides.row);
    load_tile<T, D, C::kThreads>(sdO, a.d_o + o_at, q0, kBr, kb.nq, a.o_strides.row);
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
  };

  const QueryTileRuns runs = query_tile_runs<kBr, kBc>(kb, a.causal);
  // Grouped-query attention: the same tiles of each query head of the group, dK_j and dV_j summing on in
  // registers.
  for (int64_t bh = kb.q_head0; bh < kb.q_head0 + a.group; ++bh) {
    const int64_t q_base = kb.q_base(bh, a.seq_q);
    const int64_t q_at = kb.q_at + (bh - kb.q_head0) * a.q_strides.head;
    const int64_t o_at = kb.o_at + (bh - kb.q_head0) * a.o_strides.head;
    int64_t i = runs.first;
    for (; i < runs.full_begin; ++i) step(q_base, q_at, o_at, i * kBr, std::true_type{});
    for (; i < runs.full_end; ++i) step(q_base, q_at, o_at, i * kBr, std::false_type{});
    for (; i < runs.count; ++i) step(q_base, q_at, o_at, i * kBr, std::true_type{});
  }

  // dK_j = scale · dSᵀ Q and dV_j, rounded to T: rows wk + g + 8h, columns 8·dt + 2t, 2t+1 (zeros in a
  // padded entry's rows past its length: no query reached them).
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t key = k0 + wk + g + 8 * h;
    if (key >= kb.nk_rows) continue;
    T* dk_row = a.dk + kb.k_at + key * a.k_strides.row + 2 * t;
    T* dv_row = a.dv + kb.v_at + key * a.v_strides.row + 2 * t;
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt) {
      *reinterpret_cast<uint32_t*>(dk_row + dt * 8) = pack2<T>(a.scale * rdK[dt][2 * h], a.scale * rdK[dt][2 * h + 1]);
      *reinterpret_cast<uint32_t*>(dv_row + dt * 8) = pack2<T>(rdV[dt][2 * h], rdV[dt][2 * h + 1]);
    }
  }
}

// grid: B·H·ceil(max Nq/Br) blocks of kThreads; block x owns query tile x % ceil(max Nq/Br) of query
// head x / ceil(max Nq/Br) (attn::locate, as the forward's grid), under the causal mask the last tile
// first (it sees the most keys, and the longest blocks should not be the last to start). Streams the
// key blocks the tile sees past it, in key order, and sums dQ_i = scale · Σ_j dS_ij K_j in registers.
// Here the queries are the rows of every product, as in the forward: S = Q_i K_jᵀ, dP = dO_i V_jᵀ,
// then dS is the A operand of dS K_j as it is. Registers (per thread, fp32 accumulators): dQ_i 16 rows
// × D per warp (32 or 64), S, dP 2 × 32.
template <class T, int D>
__global__ void __launch_bounds__(DqConfig<D>::kThreads) dq_kernel(const Args<T> a) {
  using C = DqConfig<D>;
  constexpr int kBr = C::kBr, kBc = C::kBc, kS = C::kStride;
  constexpr int kNT = kBc / 8, kDT = D / 8;  // 8-key tiles of S, dP; 8-column tiles of dQ_i
  extern __shared__ __align__(16) unsigned char smem[];
  T* sQ = reinterpret_cast<T*>(smem);  // [Br][D+8]  Q_i
  T* sdO = sQ + kBr * kS;              // [Br][D+8]  dO_i
  T* sK = sdO + kBr * kS;              // [Bc][D+8]  K_j
  T* sV = sK + kBc * kS;               // [Bc][D+8]  V_j

  // The tile as the common helpers (key_blocks, unmasked_blocks, mask_scores) take it. Query head bh
  // reads K/V head bh / G.
  const int64_t q_tiles = (a.max_seq_q + kBr - 1) / kBr, x = blockIdx.x % q_tiles, bh = blockIdx.x / q_tiles;
  const attn::Sequence s =
      attn::sequence_of(a, bh, bh / a.heads, bh % a.heads, (a.causal ? q_tiles - 1 - x : x) * kBr, a.max_seq_k);
  const int warp = threadIdx.x / 32, g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  const int wr = 16 * warp;           // the warp's first row of sQ, sdO
  const int64_t row0 = s.q0 + wr;     // ... as a query row

  load_tile<T, D, C::kThreads>(sQ, a.q + s.q_at, s.q0, kBr, s.nq, a.q_strides.row);
  load_tile<T, D, C::kThreads>(sdO, a.d_o + s.o_at, s.q0, kBr, s.nq, a.o_strides.row);
  // LSE · log2(e) and delta of the thread's two rows, g and g + 8: only this thread uses them. Rows past
  // Nq take 0 (their Q and dO rows are zeros: dS = 1 · (0 - 0) = 0, and they are not written).
  float lse2[2], delta[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t row = row0 + g + 8 * h;
    lse2[h] = row < s.nq ? a.lse[s.q_row0 + row] * attn::kLog2e : 0.0f;
    delta[h] = row < s.nq ? a.delta[s.q_row0 + row] : 0.0f;
  }
  const float c = fabsf(a.scale_log2);  // mask_scores negates S for a negative scale

  float rdQ[kDT][4] = {};  // dQ_i / scale: the warp's 16 rows × D, C fragments

  // One key block; kMasked (a std::bool_constant) says whether any of its scores can be hidden.
  auto step = [&](int64_t j, auto kMasked) {
    const int64_t col0 = j * kBc;
    __syncthreads();  // every warp is done with the previous block's sK and sV
    load_tile<T, D, C::kThreads>(sK, a.k + s.k_at, col0, kBc, s.nk, a.k_strides.row);
    load_tile<T, D, C::kThreads>(sV, a.v + s.v_at, col0, kBc, s.nk, a.v_strides.row);
    __syncthreads();  // sK and sV complete (and, the first time, sQ and sdO)

    float rS[1][kNT][4] = {}, rdP[1][kNT][4] = {};  // S, dP: [row tile][key tile][C fragment]
    two_products<T, D, kBc>(rS[0], rdP[0], sQ, sdO, wr, sK, sV);
    attn::mask_scores<decltype(kMasked)::value>(rS, a.scale_log2 < 0, s, row0, col0, a.causal);
    // P = exp2(|scale_log2| · ±S - LSE · log2 e) (exp2(-inf) = 0 where masked), dS = P ∘ (dP - delta).
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float p = ex2_approx_ftz(fmaf(c, rS[0][nt][e], -lse2[e / 2]));
        rdP[0][nt][e] = p * (rdP[0][nt][e] - delta[e / 2]);
      }
    // dQ_i += dS K_j: k runs over the block's keys, 16 at a time.
#pragma unroll
    for (int kk = 0; kk < kNT / 2; ++kk) {
      uint32_t dsa[4];  // dS as the A fragment of key tiles 2kk, 2kk+1
      a_from_c<T>(dsa, rdP[0][2 * kk], rdP[0][2 * kk + 1]);
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        uint32_t b0, b1;
        lds_b_cols<kS>(b0, b1, sK, kk * 16, dt * 8);
        mma_m16n8k16<T>(rdQ[dt], dsa, b0, b1);
      }
    }
  };

  const int64_t n_blocks = attn::key_blocks(s, kBr, kBc, a.causal);  // blocks above the diagonal: never visited
  const int64_t n_full = attn::unmasked_blocks(s, kBc, a.causal);
  int64_t j = 0;
  for (; j < n_full; ++j) step(j, std::false_type{});
  for (; j < n_blocks; ++j) step(j, std::true_type{});

  // dQ_i = scale · Σ_j dS_ij K_j, rounded to T: rows row0 + g + 8h, columns 8·dt + 2t, 2t+1 (zeros in a
  // padded entry's rows past its length, whose Q and dO rows were loaded as zeros: dS = 0 there).
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t row = row0 + g + 8 * h;
    if (row >= s.nq_rows) continue;
    T* dq_row = a.dq + s.q_at + row * a.q_strides.row + 2 * t;
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt)
      *reinterpret_cast<uint32_t*>(dq_row + dt * 8) = pack2<T>(a.scale * rdQ[dt][2 * h], a.scale * rdQ[dt][2 * h + 1]);
  }
}

}  // namespace fs::bwd::deterministic
