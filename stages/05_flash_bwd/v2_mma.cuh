// flashstages · stage 05 · v2 — v1's schedule on tensor cores: fp16/bf16 in, fp32 accumulation, all
// five products of the backward as mma.sync m16n8k16, dQ added in fp32 and rounded once, and the causal
// stage splitting of stage 04's v2.
//
// What changes from v1: the same K/V-outer loop (a block owns key block j, the query tiles stream past
// it), each product now one warp-wide mma per 16×8×16 piece (common/device/sm80.cuh) fed from padded
// fp16/bf16 tiles by the fragment gathers of common/device/attention.cuh:
//   Sᵀ  = K_j Q_iᵀ                 [Bc][Br]  A: K rows (lds_a)       B: Q rows (lds_b_rows)
//   dPᵀ = V_j dO_iᵀ                [Bc][Br]  A: V rows (lds_a)       B: dO rows (lds_b_rows)
//   Pᵀ  = exp2(scale·log2e · Sᵀ - LSE_i · log2e),  dSᵀ = Pᵀ ∘ (dPᵀ - delta_i)     registers, fp32
//   dV_j += Pᵀ dO_i                [Bc][D]   A: Pᵀ from registers    B: dO columns (lds_b_cols)
//   dK_j += dSᵀ Q_i                [Bc][D]   A: dSᵀ from registers   B: Q columns (lds_b_cols)
//   dQ_i += dS K_j                 [Br][D]   A: dS from shared       B: K columns (lds_b_cols)
// The transposes cost nothing: the kernel computes Sᵀ and dPᵀ — keys as the rows of the mma, queries
// as its columns — so their C fragments are already laid out as the A fragments of Pᵀ dO and dSᵀ Q
// (attn::a_from_c: C tiles 2kk, 2kk+1 are the A fragment of k step kk; docs/05_flash_bwd.md, section 8).
// LSE and delta, per query, become per column. Only dQ needs dS with queries as rows, and it needs
// every warp's keys: each warp writes its dSᵀ into shared memory transposed (sdS [Br][Bc], 16-bit
// stores) and after a barrier every warp reads its share of dS as plain A fragments.
// Where the scale multiplies: dK = scale · dSᵀ Q, once, when dK_j is written; dQ = scale · dS K, once,
// when the fp32 dQ workspace is rounded to the dtype (dq_convert_kernel); dS itself stays unscaled.
// dQ: every key block adds its share of every dQ_i with red.global.add.f32 (sm80::red_global_add_f32)
// into an fp32 workspace [B, H, Nq, D], zeroed first, rounded to fp16/bf16 once at the end: summing in
// the dtype would round after every key block. With `deterministic` set the K/V kernel leaves dQ alone
// and flash_bwd_v2_dq_kernel — v1's second pass on tensor cores — gives each query tile to one block,
// which streams the key blocks past it in key order, recomputes S and dP (queries as rows there: no
// transpose needed, dS is the A operand straight from registers) and sums dQ_i in registers: no
// workspace, no atomics, bitwise the same every run, at the price of computing S and dP twice.
// Grouped-query attention: a block owns key block j of one K/V head and streams the query tiles of each
// of the group's G query heads past it in turn, dK_j and dV_j summing on in the same C fragments (no
// atomics on dK, dV, no per-head copies of them); the deterministic dQ kernel reads K/V head bh / G.
// Causal stage splitting (stage 04 v2, from the key block's side): key block j meets query tile i
//   i < first:                       every query left of the diagonal → never loaded
//   first <= i < full_begin:         the diagonal crosses the tile → masked (Bc - 1 rows wide: 1 to 3 tiles)
//   full_begin <= i < full_end:      every key visible to every query → no mask at all
//   full_end <= i:                   the Nq tail tile, or every tile when block j holds the Nk tail → masked
// Register budget (per thread, fp32 accumulators; the rest is fragments in flight and addresses):
//   D = 64,  Br = 64: dK_j, dV_j 2 × 32 (16 keys × 64 per warp), Sᵀ, dPᵀ 2 × 32 → 128 live in the
//                     loop; the dQ share 32 (after Sᵀ, dPᵀ die)
//   D = 128, Br = 32: dK_j, dV_j 2 × 64, Sᵀ, dPᵀ 2 × 16 → 160; the dQ share 32
//   dq kernel (Br = Bc = 64): dQ_i 16 rows × D per warp (32 or 64), S, dP 2 × 32
// ptxas -v (CUDA 13.0, sm_90), dense build, since the variable-length layouts: K/V kernel with the atomic
// dQ 237 registers at D = 64, 254 at D = 128; without it 168 (8 bytes spilled) and 254; dq kernel 165 and
// 238 (before them: 235, 254; 168 and 254 with no spill; 165 and 236; before the loop over a group's
// heads: 252 and 255 either way, 164 and 236). 2 blocks of 4 warps per SM, 3 for the K/V kernel without
// dQ at D = 64 (earlier, capping it at 168 spilled 124 bytes; ptxas now gets there unasked).
// Why it should be faster than v1: the tensor cores (an H100 runs fp16 mma at many times the fp32 FMA
// rate), half the bytes per element loaded, 16 multiply-adds per 32-bit fragment register loaded. What
// it still lacks: loads that stall the block until they land (cp.async next), 32-bit fragment gathers
// with bank conflicts on the column gathers (ldmatrix and swizzling), one dQ atomic per key block and
// element, K_j and V_j fragments gathered again for every query tile.
// Result (H100, fp16, D = 128, N = 8192, non-causal; stage05.json beside SDPA's backward in sdpa_bwd.json):
//   <!-- value: [stage05/v2/fp16/D:128/N:8192/causal:0] | .0f -->111<!-- /value --> TFLOPS with the atomic dQ,
//   <!-- value: [stage05/v2_deterministic/fp16/D:128/N:8192/causal:0] | .0f -->138<!-- /value --> with the deterministic dQ pass,
//   <!-- value: [stage05/v2_deterministic/fp16/D:128/N:8192/causal:0] / [sdpa_flash_bwd/fp16/D:128/N:8192/causal:0] | .2f -->0.47<!-- /value -->× SDPA flash (FA2);
//   the atomics cost more than the second pass's recomputation (README, "Results").
//
// Run: build/release/stages/05_flash_bwd/stage05_flash_bwd --dtype fp16 --seq 4096 --dim 128 [--causal] [--deterministic] --version v2
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "args.cuh"
#include "common/device/attention.cuh"
#include "common/device/sm80.cuh"
#include "common/lib/numeric.h"
#include "preprocess.cuh"

namespace fs::bwd::v2 {

using attn::a_from_c;
using attn::lds_a;
using attn::lds_b_col_of_lane;
using attn::lds_b_cols;
using attn::lds_b_rows;
using attn::load_tile;
using sm80::ex2_approx_ftz;
using sm80::mma_m16n8k16;
using sm80::pack2;
using sm80::red_global_add_f32;

// The K/V-outer kernel (flash_bwd_v2_dkv_kernel).
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

// The deterministic dQ kernel (flash_bwd_v2_dq_kernel): warp w owns query rows 16w .. 16w + 15.
template <int D>
struct DqConfig {
  static constexpr int kWarps = 4;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kBr = 16 * kWarps;  // 64 query rows per block, resident
  static constexpr int kBc = 64;           // keys per streamed block
  static constexpr int kStride = D + 8;
  static constexpr std::size_t kSmemBytes = std::size_t(2 * kBr + 2 * kBc) * kStride * 2;
};

// The two products that share their k loop over the head dim, for one warp: X = A1 B1ᵀ and
// Y = A2 B2ᵀ, A rows a0 .. a0 + 15 of sA1, sA2 against the kN rows of sB1, sB2 ([rows][D+8] tiles),
// as C fragments [8-column tile][4]. The K/V kernel calls it as Sᵀ = K_j Q_iᵀ, dPᵀ = V_j dO_iᵀ (keys
// as rows); the dQ kernel as S = Q_i K_jᵀ, dP = dO_i V_jᵀ (queries as rows).
template <class T, int D, int kN>
__device__ __forceinline__ void two_products(float (&x)[kN / 8][4], float (&y)[kN / 8][4], const T* sA1, const T* sA2,
                                             int a0, const T* sB1, const T* sB2) {
  constexpr int kS = D + 8;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    uint32_t a1[4], a2[4];  // rows a0.. of sA1, sA2 as A fragments of this 16-wide step over D
    lds_a<kS>(a1, sA1, a0, kk * 16);
    lds_a<kS>(a2, sA2, a0, kk * 16);
#pragma unroll
    for (int nt = 0; nt < kN / 8; ++nt) {
      uint32_t b0, b1;
      lds_b_rows<kS>(b0, b1, sB1, nt * 8, kk * 16);
      mma_m16n8k16<T>(x[nt], a1, b0, b1);
      lds_b_rows<kS>(b0, b1, sB2, nt * 8, kk * 16);
      mma_m16n8k16<T>(y[nt], a2, b0, b1);
    }
  }
}

// Pᵀ and dSᵀ of one warp's 16 keys × Br queries, in place: rS holds Sᵀ on entry and Pᵀ on exit, rdP
// holds dPᵀ on entry and dSᵀ on exit. Entry e of query tile nt is key wk + g + 8·(e/2), query
// 8·nt + 2t + e%2 of the tile (block coordinates). With kMasked, a hidden pair — key past Nk, query
// past Nq, or key right of the query's diagonal — gets P = 0 by a select, so whatever its exponent
// gave (inf at |scale·S| ~ 1e4) never reaches dS.
template <bool kMasked, int kQT>
__device__ __forceinline__ void p_and_ds_t(float (&rS)[kQT][4], float (&rdP)[kQT][4], const float* sLse,
                                           const float* sDelta, float scale_log2, int wk, int keys, int queries,
                                           int diagonal) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
#pragma unroll
  for (int nt = 0; nt < kQT; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int key = wk + g + 8 * (e / 2), query = 8 * nt + 2 * t + e % 2;
      float p = ex2_approx_ftz(fmaf(scale_log2, rS[nt][e], -sLse[query]));
      if constexpr (kMasked)
        if (key >= keys || query >= queries || key - query > diagonal) p = 0.0f;
      rS[nt][e] = p;
      rdP[nt][e] = p * (rdP[nt][e] - sDelta[query]);
    }
}

// How the K/V kernel's share of dQ_i leaves the block (the one thing v3 changes): which column of K_j
// lane g gathers for 8-column tile dt of the dQ product — and so which columns of dQ_i the C fragments
// hold — and how a thread adds its fragments of one row to dq_accum. v2: the columns in order (C
// columns 2t, 2t+1 of tile dt are columns 8dt + 2t, 8dt + 2t + 1 of the warp's share) and one
// red.global.add.f32 per element.
struct DqScalarRed {
  __device__ static int column(int dt, int g) { return 8 * dt + g; }
  // Row g + 8h of the thread's fragments; dq_row is that row of dq_accum at the share's first column.
  template <int kTiles>
  __device__ static void add(float* dq_row, const float (&rdQ)[kTiles][4], int h) {
    const int t = threadIdx.x % 4;
#pragma unroll
    for (int dt = 0; dt < kTiles; ++dt) {
      red_global_add_f32(dq_row + dt * 8 + 2 * t, rdQ[dt][2 * h]);
      red_global_add_f32(dq_row + dt * 8 + 2 * t + 1, rdQ[dt][2 * h + 1]);
    }
  }
};

// The query tiles key block j (keys k0 .. k0 + Bc - 1) meets, in the header's runs: [first, full_begin)
// the diagonal crosses (masked), [full_begin, full_end) every key visible (no mask), [full_end, count)
// the Nq tail tile, or every tile when the block holds the Nk tail (masked). Under the causal mask query
// row i sees key k0 from i = k0 - offset on, and every key of the block from i = k0 + Bc - 1 - offset
// on. A block with no key (past a padded entry's length, or in an entry that breaks the rules) meets
// none: nq and so count are 0 (first may lie past it; no loop from first to count runs). v4 to v9 walk
// the same runs.
struct QueryTileRuns {
  int64_t first, full_begin, full_end, count;
};
template <int kBr, int kBc>
__device__ __forceinline__ QueryTileRuns query_tile_runs(const attn::KeyBlock& kb, bool causal) {
  const int64_t k0 = kb.k0, offset = kb.offset;
  const int64_t count = (kb.nq + kBr - 1) / kBr;
  const int64_t first = causal ? max(k0 - offset, int64_t(0)) / kBr : 0;
  const int64_t full_begin = causal ? min((max(k0 + kBc - 1 - offset, int64_t(0)) + kBr - 1) / kBr, count) : 0;
  const int64_t full_end = k0 + kBc > kb.nk ? full_begin : max(kb.nq / kBr, full_begin);
  return {first, full_begin, full_end, count};
}

// The K/V kernel's body (flash_bwd_v2_dkv_kernel; v3's kernel runs it too). Block x owns key block
// x % ceil(max Nk/Bc) of K/V head x / ceil(max Nk/Bc) (attn::key_block_of: max Nk is Nk but for packed
// batches), warp w its keys 16w .. 16w + 15, and streams the query tiles of each query head of the K/V
// head's group past it, one head after the other. Writes dK_j and
// dV_j, summed over the group; unless DqAdd is void (the deterministic path), also adds its share of
// each query head's dQ (before the scale) to dq_accum through DqAdd (DqScalarRed above).
template <class T, int D, bool kVarlen, class DqAdd>
__device__ __forceinline__ void dkv_block(const Args<T>& a) {
  constexpr bool kAtomicDQ = !std::is_void_v<DqAdd>;
  using C = Config<D>;
  constexpr int kBr = C::kBr, kBc = C::kBc, kS = C::kStride, kSS = C::kStrideS;
  constexpr int kQT = kBr / 8, kDT = D / 8;  // 8-query tiles of Sᵀ, dPᵀ; 8-column tiles of dK_j, dV_j
  extern __shared__ __align__(16) unsigned char smem[];
  T* sK = reinterpret_cast<T*>(smem);                       // [Bc][D+8]  K_j
  T* sV = sK + kBc * kS;                                    // [Bc][D+8]  V_j
  T* sQ = sV + kBc * kS;                                    // [Br][D+8]  Q_i
  T* sdO = sQ + kBr * kS;                                   // [Br][D+8]  dO_i
  T* sdS = sdO + kBr * kS;                                  // [Br][Bc+8] dS_ij, queries as rows (atomic path)
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

    if constexpr (kAtomicDQ) {
      // dSᵀ → sdS transposed, rounded to T as the dK product rounds it: entry (key, query) of the C
      // fragments to row query, column key.
#pragma unroll
      for (int nt = 0; nt < kQT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          sdS[(8 * nt + 2 * t + e % 2) * kSS + wk + g + 8 * (e / 2)] = from_float<T>(rdP[nt][e]);
    }

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

    if constexpr (kAtomicDQ) {
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
      // This key block's share, added in fp32; the other key blocks add theirs in whatever order they
      // get there.
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t row = q0 + rt * 16 + g + 8 * h;
        if (row < kb.nq) DqAdd::add(a.dq_accum + (q_base + row) * D + c0, rdQ, h);
      }
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

// grid: B·KVH·ceil(max Nk/Bc) blocks of kThreads (dkv_block above). With kAtomicDQ, dQ's share leaves by
// red.global.add.f32, element by element.
template <class T, int D, bool kVarlen, bool kAtomicDQ>
__global__ void __launch_bounds__(Config<D>::kThreads) flash_bwd_v2_dkv_kernel(const Args<T> a) {
  dkv_block<T, D, kVarlen, std::conditional_t<kAtomicDQ, DqScalarRed, void>>(a);
}

// Deterministic dQ. grid: B·H·ceil(max Nq/Br) blocks of kThreads; block x owns query tile
// x % ceil(max Nq/Br) of query head x / ceil(max Nq/Br) (attn::locate, as the forward's grid), under the
// causal mask the last tile first (it sees the most keys, and the longest blocks should not be the
// last to start). Streams the key blocks the tile sees past it, in
// key order, and sums dQ_i = scale · Σ_j dS_ij K_j in registers. Here the queries are the rows of every
// product, as in the forward: S = Q_i K_jᵀ, dP = dO_i V_jᵀ, then dS is the A operand of dS K_j as it is.
template <class T, int D>
__global__ void __launch_bounds__(DqConfig<D>::kThreads) flash_bwd_v2_dq_kernel(const Args<T> a) {
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

  load_tile<T, D, C::kThreads>(sQ, a.q + s.q_row0 * D, s.q0, kBr, s.nq);
  load_tile<T, D, C::kThreads>(sdO, a.d_o + s.q_row0 * D, s.q0, kBr, s.nq);
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
    load_tile<T, D, C::kThreads>(sK, a.k + s.k_row0 * D, col0, kBc, s.nk);
    load_tile<T, D, C::kThreads>(sV, a.v + s.k_row0 * D, col0, kBc, s.nk);
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
    T* dq_row = a.dq + (s.q_row0 + row) * D + 2 * t;
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt)
      *reinterpret_cast<uint32_t*>(dq_row + dt * 8) = pack2<T>(a.scale * rdQ[dt][2 * h], a.scale * rdQ[dt][2 * h + 1]);
  }
}

// dQ = scale · dq_accum, rounded to T once, in the row of every query slot (query_row: nothing in an
// entry that breaks the rules; a padded entry's rows past its length hold zeros, which no key block
// added to). One warp per row, each lane two neighbouring columns at a time (8-byte loads, 4-byte
// stores). grid: row_blocks(slots) blocks of kRowThreads, each warp striding over the slots.
template <class T, int D>
__global__ void __launch_bounds__(kRowThreads) dq_convert_kernel(const Args<T> a, int64_t slots) {
  const int lane = threadIdx.x % 32;
  const int64_t stride = int64_t(gridDim.x) * kRowsPerBlock;
  for (int64_t r = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32; r < slots; r += stride) {
    bool real;
    const int64_t row = query_row(a, r, &real);
    if (row < 0) continue;
#pragma unroll
    for (int c = 2 * lane; c < D; c += 64) {
      const float2 x = *reinterpret_cast<const float2*>(a.dq_accum + row * D + c);
      *reinterpret_cast<uint32_t*>(a.dq + row * D + c) = pack2<T>(a.scale * x.x, a.scale * x.y);
    }
  }
}

}  // namespace fs::bwd::v2
