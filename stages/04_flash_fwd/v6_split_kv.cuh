// flashstages · stage 04 · v6 — split-KV: v4's kernel over one slice of the keys per block, and a
// second kernel that merges the slices' partial results with their log-sum-exps.
//
// What changes from v4/v5: the grid. v4 launches one block per (batch entry, head, query tile), and a
// block walks every key block of its tile. With few query tiles (a chunk of Nq ≤ 1024 queries against
// Nk ≥ 8192 keys, small B·H) that is fewer blocks than the GPU has SMs: B = 1, H = 16, Nq = 512 at
// Br = 128 is 64 blocks for 132 SMs, each walking 256 key blocks alone while half the GPU idles.
// v6 gives each query tile `splits` blocks (blockIdx.y = split): block (tile, s) runs v4's key loop over
// the s-th slice of the tile's key blocks only and writes its partial result, normalized as a whole
// attention over its slice would be, to a workspace in fp32:
//   O_s   = softmax(S[:, slice s]) V[slice s]      (rows: [splits][rows][D])
//   LSE_s = log Σ_{j in slice s} exp(S_ij)         ([splits][rows]; -inf where no key of the slice is seen)
// flash_fwd_v6_merge_kernel then combines them per row (docs/04_flash_fwd.md derives it):
//   LSE = log Σ_s exp(LSE_s)        O = Σ_s exp(LSE_s - LSE) · O_s
// Normalized partials, not the raw accumulator and its running (m, l): each slice's result is then an
// attention output in its own right, bounded by the largest |V|, and the merge needs one number per
// row and slice (LSE_s) instead of two; it is also the form in which another GPU would hand over its
// share (ring attention). The extra memory is splits · rows · (D + 1) · 4 bytes; one split means no
// workspace and no merge: v6 then launches v4's kernel exactly as v5 does.
// How many splits, and which tile shape, is host code (flash_fwd_v6.cu): where the grid fills the GPU,
// v5's choice with one split; where it underfills, the tuner times a few (tile shape, split count)
// pairs on the call's shape, the split counts from the wave count (flash_fwd_v6_split_heuristic).
// Why it is faster, measured (H100, fp16, D = 128, B = 1, H = 16, Nq = 512, Nk = 16384; stage04.json):
//   non-causal <!-- value: [stage04/v6/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:0] | .1f -->344.9<!-- /value --> TFLOPS, <!-- value: [stage04/v6/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:0] / [stage04/v5/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:0] | .2f -->2.35<!-- /value -->× v5, <!-- value: [stage04/v6/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:0] / [sdpa_flash/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:0] | .2f -->1.21<!-- /value -->× SDPA flash
//   causal     <!-- value: [stage04/v6/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:1] | .1f -->334.9<!-- /value --> TFLOPS, <!-- value: [stage04/v6/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:1] / [stage04/v5/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:1] | .2f -->2.32<!-- /value -->× v5, <!-- value: [stage04/v6/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:1] / [sdpa_flash/fp16/D:128/B:1/H:16/Nq:512/Nk:16384/causal:1] | .2f -->1.24<!-- /value -->× SDPA flash
// At the headline shape (B = 2, H = 16, N = 8192) the grid fills the GPU and v6 is v5.
//
// Run: build/h100/stages/04_flash_fwd/stage04_flash_fwd --dtype fp16 --batch 1 --heads 16 --seq 512 --seq-k 16384 --dim 128 --version v6
//      build/h100/stages/04_flash_fwd/stage04_bench --benchmark_filter='stage04/v[456]/.*/Nq:'
//      FLASHSTAGES_AUTOTUNE=verbose prints every (tile, splits) candidate's time and the pick.
#pragma once

#include <cstdint>
#include <type_traits>

#include "v4_ldmatrix_swizzle.cuh"

namespace fs::flash::v6 {

using v4::LaneOffsets;
using v4::rows_in;
using v4::TileCopy;

// The split kernel's arguments: v4's, and where the partial results go. `rows` is the number of rows
// of O ((B or 1)·H·Nq): partial row r of split s is o_part[(s·rows + r)·D ..], lse_part[s·rows + r].
template <class T>
struct SplitArgs {
  Args<T> a;
  float* __restrict__ o_part;    // [splits][rows][D]
  float* __restrict__ lse_part;  // [splits][rows]
  int64_t rows;
};

// write_o_lse (flash_common.cuh) into the fp32 workspace: O_s = rO / l and LSE_s = ln 2 · (m + log2 l)
// for the rows that O has; a row that saw no key of this slice gets O_s = 0 and LSE_s = -inf, which
// the merge gives zero weight.
template <int kMT, int kDT>
__device__ __forceinline__ void write_partial(float* o_part, float* lse_part, const Sequence& s, int64_t row0,
                                              const float (&rO)[kMT][kDT][4], const float (&m)[kMT][2],
                                              const float (&l)[kMT][2]) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  constexpr int D = kDT * 8;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float row_sum = quad_sum(l[mt][h]);  // all 32 lanes shuffle, before any of them leaves
      const int64_t row = row0 + mt * 16 + g + 8 * h;
      if (row >= s.nq_rows) continue;
      const bool seen = row < s.nq && row_sum > 0.0f;
      const float inv_l = seen ? 1.0f / row_sum : 0.0f;
      float* o_row = o_part + (s.q_row0 + row) * D;
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt)
        *reinterpret_cast<float2*>(o_row + dt * 8 + 2 * t) =
            make_float2(rO[mt][dt][2 * h] * inv_l, rO[mt][dt][2 * h + 1] * inv_l);
      if (t == 0) lse_part[s.q_row0 + row] = seen ? (m[mt][h] + log2f(row_sum)) * kLn2 : -INFINITY;
    }
}

// grid: (B·H·ceil(Nq/Br), splits) blocks of kThreads. Block (x, s) is v4's block x restricted to the
// s-th of `splits` equal slices of the key blocks its tile visits (under the causal mask a tile visits
// fewer, so its slices are shorter: every tile's work is spread evenly over its splits).
template <class T, int D, class C>
__global__ void __launch_bounds__(C::kThreads, C::kMinBlocks) flash_fwd_v6_kernel(const SplitArgs<T> sa) {
  constexpr int kBr = C::kBr, kBc = C::kBc, kMT = C::kMT;
  constexpr int kNT = kBc / 8, kDT = D / 8, kKT = D / 16;  // 8-key tiles, 8-column tiles, 16-wide k steps
  extern __shared__ __align__(128) unsigned char smem[];
  T* sQ = reinterpret_cast<T*>(smem);  // [Br][D]
  T* sK = sQ + kBr * D;                // [2][Bc][D]: stage j % 2 holds key block j
  T* sV = sK + 2 * kBc * D;            // [2][Bc][D]

  const Args<T>& a = sa.a;
  const Sequence s = locate(a, kBr, /*reverse_tiles=*/a.causal);
  const int warp = threadIdx.x / 32;
  const int64_t row0 = s.q0 + warp * 16 * kMT;  // this warp's first query row
  const int wr = warp * 16 * kMT;               // ... as a row of sQ
  const T* gK = a.k + s.k_row0 * D;             // [nk, D]
  const T* gV = a.v + s.k_row0 * D;             // [nk, D]
  const int64_t n_full = unmasked_blocks(s, kBc, a.causal);
  // This block's slice [j_begin, j_end) of the tile's key blocks; empty when the tile has fewer
  // blocks than splits (or no real row): then it only writes O_s = 0, LSE_s = -inf.
  const int64_t n_tile = key_blocks(s, kBr, kBc, a.causal), splits = gridDim.y;
  const int64_t per_split = (n_tile + splits - 1) / splits;
  const int64_t j_begin = min(n_tile, int64_t(blockIdx.y) * per_split), j_end = min(n_tile, j_begin + per_split);

  // Key block j → stage j % 2, as one cp.async group.
  const TileCopy<T, D, kBc, C::kThreads> kv_copy;
  auto copy_kv = [&](int64_t j) {
    const int valid = rows_in<kBc>(j * kBc, s.nk);  // >= 1: block j holds at least one key
    kv_copy.copy(sK + j % 2 * kBc * D, gK + j * kBc * D, valid);
    kv_copy.copy(sV + j % 2 * kBc * D, gV + j * kBc * D, valid);
    cp_async_commit_group();
  };

  // A tile without real rows (padded batches), or an empty slice, only writes zeros: nothing to load.
  if (const int valid = rows_in<kBr>(s.q0, s.nq); valid > 0 && j_begin < j_end)
    TileCopy<T, D, kBr, C::kThreads>().copy(sQ, a.q + (s.q_row0 + s.q0) * D, valid);
  cp_async_commit_group();
  if (j_begin < j_end) copy_kv(j_begin);
  cp_async_wait_group<0>();
  __syncthreads();  // sQ (and the slice's first key block) complete

  constexpr uint32_t kRowBytes = D * 2;
  const uint32_t q_base = smem_address(sQ) + wr * kRowBytes;  // this warp's rows of sQ
  const LaneOffsets<D> q_off = v4::q_lane<D>(), k_off = v4::k_lane<D>(), v_off = v4::v_lane<D>();
  uint32_t rQ[kMT][kKT][4];  // Q as A fragments: [row tile][k step]
  if constexpr (C::kQInRegs)
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int kk = 0; kk < kKT; ++kk) ldmatrix_x4(rQ[mt][kk], q_base + mt * 16 * kRowBytes + q_off.at(kk));

  float rO[kMT][kDT][4] = {};
  float m[kMT][2], l[kMT][2];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) m[mt][0] = m[mt][1] = -INFINITY, l[mt][0] = l[mt][1] = 0.0f;

  // One key block; kMasked (a std::bool_constant) says whether any of its scores can be hidden.
  auto step = [&](int64_t j, auto kMasked) {
    const int64_t col0 = j * kBc;
    cp_async_wait_group<0>();  // this thread's copies of block j have landed
    __syncthreads();     // everyone's have, and every warp is done with block j - 1, whose stage is refilled next
    if (j + 1 < j_end) copy_kv(j + 1);  // in flight while block j is computed
    const uint32_t k_base = smem_address(sK + j % 2 * kBc * D), v_base = smem_address(sV + j % 2 * kBc * D);

    float rS[kMT][kNT][4] = {};  // S′ = Q K_jᵀ: [row tile][key tile][C fragment]
#pragma unroll
    for (int kk = 0; kk < kKT; ++kk) {
      uint32_t qa[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        if constexpr (C::kQInRegs)
          for (int i = 0; i < 4; ++i) qa[mt][i] = rQ[mt][kk][i];
        else
          ldmatrix_x4(qa[mt], q_base + mt * 16 * kRowBytes + q_off.at(kk));
      }
#pragma unroll
      for (int nt = 0; nt < kNT; nt += 2) {
        uint32_t b[4];
        ldmatrix_x4(b, k_base + nt * 8 * kRowBytes + k_off.at(kk));  // keys 8·nt .. 8·nt + 15
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          mma_m16n8k16<T>(rS[mt][nt], qa[mt], b[0], b[1]);
          mma_m16n8k16<T>(rS[mt][nt + 1], qa[mt], b[2], b[3]);
        }
      }
    }

    mask_scores<decltype(kMasked)::value>(rS, a.scale_log2 < 0, s, row0, col0, a.causal);
    online_softmax(rS, m, l, rO, fabsf(a.scale_log2));

#pragma unroll
    for (int kk = 0; kk < kNT / 2; ++kk) {
      uint32_t pa[kMT][4];  // P as A fragments of this 16-key step: [row tile]
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) p_fragment<T>(rS, mt, kk, pa[mt]);
#pragma unroll
      for (int dt = 0; dt < kDT; dt += 2) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, v_base + kk * 16 * kRowBytes + v_off.at(dt / 2));  // dims 8·dt .. 8·dt + 15
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          mma_m16n8k16<T>(rO[mt][dt], pa[mt], b[0], b[1]);
          mma_m16n8k16<T>(rO[mt][dt + 1], pa[mt], b[2], b[3]);
        }
      }
    }
  };

  int64_t j = j_begin;
  for (; j < min(n_full, j_end); ++j) step(j, std::false_type{});
  for (; j < j_end; ++j) step(j, std::true_type{});

  write_partial(sa.o_part + blockIdx.y * sa.rows * D, sa.lse_part + blockIdx.y * sa.rows, s, row0, rO, m, l);
}

// The merge: kMergeThreads threads per block, D/4 of them per row (four columns each), so a block
// holds kMergeThreads·4/D rows of one (batch entry, head). `a` is built with that row count as its
// tile (make_args), so that locate() finds the same sequences, and skips the same invalid entries, as
// the split kernel did: the merge writes exactly the rows v4 would write.
constexpr int kMergeThreads = 256;
template <int D>
constexpr int kMergeRows = kMergeThreads * 4 / D;

// Per row: M = max_s LSE_s; w_s = exp(LSE_s - M) (0 for a slice that saw nothing); LSE = M + log Σ w_s
// and O = Σ w_s O_s / Σ w_s, the same as Σ exp(LSE_s - LSE) O_s. Subtracting M keeps every exponent
// at or below 0; a row that saw no key in any slice (M = -inf) gets O = 0 and LSE = -inf, as in v4,
// without computing -inf - -inf.
template <class T, int D>
__global__ void __launch_bounds__(kMergeThreads) flash_fwd_v6_merge_kernel(const Args<T> a, const float* o_part,
                                                                           const float* lse_part, int64_t rows,
                                                                           int splits) {
  constexpr int kLanes = D / 4;  // threads per row
  const Sequence s = locate(a, kMergeRows<D>, /*reverse_tiles=*/false);
  const int64_t row = s.q0 + threadIdx.x / kLanes;
  if (row >= s.nq_rows) return;
  const int64_t r = s.q_row0 + row;  // row of O, LSE and of each split's partials
  const int c = threadIdx.x % kLanes * 4;

  float lse_max = -INFINITY;
  for (int i = 0; i < splits; ++i) lse_max = fmaxf(lse_max, lse_part[i * rows + r]);
  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  float sum = 0.0f;
  if (lse_max != -INFINITY)
    for (int i = 0; i < splits; ++i) {
      const float lse_i = lse_part[i * rows + r];
      if (lse_i == -INFINITY) continue;  // this slice saw no key of the row: weight 0, O_s unread
      const float w = expf(lse_i - lse_max);
      const float4 o = *reinterpret_cast<const float4*>(o_part + (i * rows + r) * D + c);
      sum += w;
      acc.x += w * o.x, acc.y += w * o.y, acc.z += w * o.z, acc.w += w * o.w;
    }
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;  // sum >= 1 when any slice saw a key (the max's w is 1)
  *reinterpret_cast<uint2*>(a.o + r * D + c) = make_uint2(pack2<T>(acc.x * inv, acc.y * inv), pack2<T>(acc.z * inv, acc.w * inv));
  if (a.lse && c == 0) a.lse[r] = sum > 0.0f ? lse_max + logf(sum) : -INFINITY;
}

}  // namespace fs::flash::v6
