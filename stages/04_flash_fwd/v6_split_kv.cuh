// flashstages · stage 04 · v6 — split-KV: v4's kernel over one slice of the keys per block, and a
// second kernel that merges the slices' partial results by their log-sum-exps
//
// What changes from v5: the grid. v4 launches one block per (batch entry, head, query tile), each
// walking every key block of its tile; with few query tiles (Nq ≤ 1024 queries against Nk ≥ 8192
// keys, small B·H) that is fewer blocks than the GPU has SMs. v6 gives each query tile `splits` blocks
// (blockIdx.y = split): block (tile, s) runs v4's key loop over the s-th slice of the tile's key
// blocks and writes its partial O_s, LSE_s (fp32, normalized over its slice) to a workspace; a second
// kernel merges the slices per row. The slice, the partial store and the merge are shared with stage
// 07's split-KV version (common/device/split_kv.cuh derives them). Extra memory: splits · rows ·
// (D + 1) · 4 bytes; one split runs v5's launch, no workspace. How many splits and which tile shape
// is host code (v6.cu): v5's choice where the grid fills the GPU, else the tuner times a few (tile
// shape, split count) plans on the call's shape, the split counts from the wave count.
// Why it is faster: where the grid underfills the GPU, the idle SMs get key slices to work on; where
// it fills the GPU (the headline shape) v6 is v5. (Numbers: the stage README's generated tables.)
//
// Run: build/release/stages/04_flash_fwd/stage04_flash_fwd --version v6 --dtype fp16 --seq 512 --seq-k 16384
//        --dim 128 --batch 1 --heads 16     (FLASHSTAGES_AUTOTUNE=verbose prints every plan's time)
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/device/split_kv.cuh"
#include "fragments.cuh"
#include "tiles.cuh"

namespace fs::flash::v6 {

// grid: (B·H·ceil(Nq/Br), splits) blocks of kThreads. Block (x, s) is v4's block x restricted to the
// s-th slice of the key blocks its tile visits (attn::key_slice).
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
  const T* gK = a.k + s.k_at;                   // [nk, D], rows a.k_strides.row apart
  const T* gV = a.v + s.v_at;                   // [nk, D], rows a.v_strides.row apart
  const int64_t n_full = unmasked_blocks(s, kBc, a.causal);
  // This block's slice [j_begin, j_end) of the tile's key blocks (split_kv.cuh's key_slice).
  const KeySlice slice = key_slice(key_blocks(s, kBr, kBc, a.causal), blockIdx.y, gridDim.y);
  const int64_t j_begin = slice.begin, j_end = slice.end;

  // Key block j → stage j % 2, as one cp.async group.
  const TileCopy<T, D, kBc, C::kThreads> kv_copy;
  auto copy_kv = [&](int64_t j) {
    const int valid = rows_in<kBc>(j * kBc, s.nk);  // >= 1: block j holds at least one key
    kv_copy.copy(sK + j % 2 * kBc * D, gK + j * kBc * a.k_strides.row, a.k_strides.row, valid);
    kv_copy.copy(sV + j % 2 * kBc * D, gV + j * kBc * a.v_strides.row, a.v_strides.row, valid);
    cp_async_commit_group();
  };

  // A tile without real rows (padded batches), or an empty slice, only writes zeros: nothing to load.
  if (const int valid = rows_in<kBr>(s.q0, s.nq); valid > 0 && j_begin < j_end)
    TileCopy<T, D, kBr, C::kThreads>().copy(sQ, a.q + s.q_at + s.q0 * a.q_strides.row, a.q_strides.row, valid);
  cp_async_commit_group();
  if (j_begin < j_end) copy_kv(j_begin);
  cp_async_wait_group<0>();
  __syncthreads();  // sQ (and the slice's first key block) complete

  constexpr uint32_t kRowBytes = D * 2;
  const uint32_t q_base = smem_address(sQ) + wr * kRowBytes;  // this warp's rows of sQ
  const LaneOffsets<D> q_off = q_lane<D>(), k_off = k_lane<D>(), v_off = v_lane<D>();
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

  write_partial(sa.o_part + blockIdx.y * sa.rows * D, sa.lse_part + blockIdx.y * sa.rows, s, s.q_row0, row0, rO, m, l);
}

}  // namespace fs::flash::v6
