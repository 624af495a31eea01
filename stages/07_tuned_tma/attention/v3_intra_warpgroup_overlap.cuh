// flashstages · stage 07 attention · v3 — intra-warpgroup overlap: the softmax of key block j runs while
// the tensor cores compute P_{j-1}·V_{j-1} (fp16, bf16; D = 64, 128, 256).
//
// What changes from v2 (a producer warpgroup, two consumers of 64 rows; each consumer does, per
// block: S_j = Q·K_jᵀ, wait, softmax, O += P_j·V_j, wait — so its tensor-core work and its softmax
// alternate, and the tensor cores have only the other consumer's products to run during a softmax):
//   Each consumer keeps one product in flight across its softmax. Per block j ≥ 1 it issues
//   S_j = Q·K_jᵀ and then O += P_{j-1}·V_{j-1} (P of the previous block, kept as A fragments) as two
//   wgmma groups, waits only for the first (wgmma.wait_group 1), and runs the mask and the softmax of
//   S_j while P_{j-1}·V_{j-1} runs; then it waits for that group too, and only then rescales O by the
//   new block's factors (O must not change under a product that accumulates into it).
//   The online softmax is split for this into softmax_scores (m, l, P and each row's factor alpha) and
//   rescale_o (O *= alpha), common/device/online_softmax.cuh; online_softmax is the two in one.
// The algebra is FlashAttention-2's, reordered: with O_{j-1} the output after block j − 1 (already
// scaled to the maximum m_{j-1}), O_j = alpha_j·(O_{j-1} + P_{j-1}·V_{j-1} …) — the product of block
// j − 1 is added before block j's factor is applied, exactly as v2 adds it before the next softmax.
// Registers: S_j (Bc/2), P_{j-1}'s fragments (Bc/4) and O (D/2) are live at once, as in v2.
// Measured (H100, N = 8192, fp16, non-causal; stage07_attention.json, one run with v1, v2, stage 04's v5, SDPA):
//   D = 128: <!-- value: [stage07/attention/v3/fp16/D:128/N:8192/causal:0] | .0f -->581<!-- /value --> TFLOPS, <!-- value: [stage07/attention/v3/fp16/D:128/N:8192/causal:0] / [stage07/attention/v2/fp16/D:128/N:8192/causal:0] | .2f -->1.08<!-- /value -->× v2, <!-- value: [stage07/attention/v3/fp16/D:128/N:8192/causal:0] / [sdpa_cudnn/fp16/D:128/N:8192/causal:0@stage07_attention.json] | .2f -->1.02<!-- /value -->× cuDNN
//   D = 64:  <!-- value: [stage07/attention/v3/fp16/D:64/N:8192/causal:0] | .0f -->420<!-- /value --> TFLOPS, <!-- value: [stage07/attention/v3/fp16/D:64/N:8192/causal:0] / [stage07/attention/v2/fp16/D:64/N:8192/causal:0] | .2f -->0.93<!-- /value -->× v2, <!-- value: [stage07/attention/v3/fp16/D:64/N:8192/causal:0] / [sdpa_cudnn/fp16/D:64/N:8192/causal:0@stage07_attention.json] | .2f -->0.96<!-- /value -->× cuDNN
// Faster than v2 at D = 128, not at D = 64, where the block's two products are half as long and the
// softmax is not, so there is less product to hide it under. (Level with v2 at both while every
// consumer still spent a third of its instructions on descriptor and stage arithmetic: the stage
// README, "What the instruction mix showed".)
// A first version waited for V_{j-1} between the two issues; ptxas serialized the wgmma then (info
// C7520, "compiler-inserted WG.AR in divergent path") and it ran at 437 / 321 TFLOPS (D = 128 / 64).
//
// The consumer's loop (st(j) = j % kStages, parity u(j) & 1 as in v2):
//   block 0:  wait full_k[st(0)]; S_0 = Q·K_0ᵀ; wait; mask; softmax_scores (O is still 0)
//   block j:  P_{j-1} → A fragments
//             wait full_k[st(j)]; wgmma_fence; S_j = Q·K_jᵀ; commit          (group 1)
//             wait full_v[st(j-1)]; O += P_{j-1}·V_{j-1}; commit             (group 2)
//             wait_group 1: S_j is done;  mask, softmax_scores (alpha_j)     under group 2
//             wait_group 0: P_{j-1}·V_{j-1} is done; O *= alpha_j; release stage st(j-1)
//   after:    P_last → A fragments; wait full_v; O += P_last·V_last; wait; release; O / l and LSE out
// The producer, the barriers, the skipped blocks and the block layout are v2's (tma_attention.cuh, ws::);
// the consumer's steps are Consumer's methods below, which v4 reuses with its turns between them.
//
// Run: build/h100/stages/07_tuned_tma/attention/stage07_attention --dtype fp16 --seq 8192 --dim 128 --batch 2 --heads 16 --version v3
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/device/attention.cuh"
#include "common/device/online_softmax.cuh"
#include "common/device/sm90.cuh"
#include "tma_attention.cuh"

namespace fs::flash_tma::v3 {

using namespace fs::attn;
// v2's block: three warpgroups, the register split, the tile shapes and stages, the barriers, the producer.
using ws::Config;
using ws::kWarpgroup;
using ws::Smem;

// One consumer warpgroup's state and steps, so that v4 can put its turns between them:
//   first()      block 0: S_0, its softmax (O is still 0)
//   prepare(j)   P_{j-1} → A fragments (rS is free again afterwards, for S_j)
//   issue(j)     S_j and P_{j-1}·V_{j-1}, two wgmma groups
//   finish(j)    wait S_j; mask, softmax_scores under P_{j-1}·V_{j-1}; wait it; O *= alpha_j; release j − 1
//   last()       the last block's P·V; release it
//   store()      O / l and LSE to global memory, from registers
// for j = 1 .. n_mine − 1 between first() and last(). Every member is in registers: the kernel inlines
// every call, and every array is indexed by compile-time constants. With kSlice (v5, split-KV) the
// blocks are the tile's key blocks [first, end), a slice: j counts from the slice's first block for the
// stages, and the mask takes first + j; without it (v3, v4) they are all of the tile's, from 0.
template <class T, class C, bool kSlice = false>
struct Consumer {
  using Mma = Products<T>;
  static constexpr int D = C::kD;
  static constexpr int kBc = C::kBc, kNT = kBc / 8, kDT = D / 8;  // 8-column tiles of S and of O

  const Args<T>& a;
  const Sequence& s;
  const Smem<C>& sm;
  const int c;          // rows 64c .. 64c + 63 of the tile
  int64_t row0;         // this warp's first query row
  int64_t j0;           // kSlice: the slice's first key block, counted in the tile
  int64_t n_mine;       // key blocks (of the slice) this warpgroup's rows need: the first ones
  int64_t n_unmasked;   // of those, the ones no row of it needs masked
  uint32_t q_addr;
  float rO[1][kDT][4] = {};  // O, unnormalized: the m64nD accumulator, as stage 04's [row tile][8 columns][4]
  float m[1][2] = {{-INFINITY, -INFINITY}}, l[1][2] = {};
  float rS[1][kNT][4];       // S′ = Q_c·K_jᵀ, then P_j: 64 × Bc over the warpgroup, 16 × Bc per warp
  uint32_t pa[kBc / Mma::kK][4];  // P_{j-1} as the A operand of the product in flight across block j's softmax
  float alpha[1][2];         // block j's factors exp2(m_old − m_new), applied to O once P_{j-1}·V_{j-1} is done
  bool moved;                // whether any of them is not 1

  __device__ __forceinline__ Consumer(const Args<T>& args, const Sequence& seq, const Smem<C>& smem, int consumer,
                                      int64_t first = 0, int64_t end = INT64_MAX)
      : a(args), s(seq), sm(smem), c(consumer), j0(first) {
    Sequence mine = s;  // this warpgroup's 64 rows as a tile of their own: its key blocks and masks
    mine.q0 = s.q0 + 64 * c;
    row0 = mine.q0 + threadIdx.x / 32 % 4 * 16;
    n_mine = key_blocks(mine, 64, kBc, a.causal);
    if constexpr (kSlice) n_mine = max(int64_t(0), min(n_mine, end) - first);
    n_unmasked = unmasked_blocks(mine, kBc, a.causal);
    q_addr = sm90::smem_address(sm.sQ);
  }

  __device__ __forceinline__ float (&acc_s())[kBc / 2] { return reinterpret_cast<float(&)[kBc / 2]>(rS); }
  __device__ __forceinline__ float (&acc_o())[D / 2] { return reinterpret_cast<float(&)[D / 2]>(rO); }
  __device__ __forceinline__ uint32_t k_addr(int64_t j) const { return sm90::smem_address(sm.k_tile(j)); }

  // S_j = Q_c·K_jᵀ, issued and committed as one group (the first product overwrites rS: scale-d = 0).
  __device__ __forceinline__ void issue_s(int64_t j) {
    Mma::template s<kBc, D>(acc_s(), q_addr, C::kBr, 64 * c, k_addr(j));
    sm90::wgmma_commit_group();
  }
  // O += P_j·V_j from pa, issued and committed as one group.
  __device__ __forceinline__ void issue_pv(int64_t j) {
    Mma::template pv<kBc, D>(acc_o(), pa, k_addr(j) + C::kKVBytes);
    sm90::wgmma_commit_group();
  }
  // Mask S_j (diagonal and tail blocks only) and run the first part of the online softmax on it: P_j in
  // rS, m and l updated, each row's factor in alpha, `moved` set.
  __device__ __forceinline__ void softmax(int64_t j) {
    const int64_t jt = kSlice ? j0 + j : j;  // the block in the tile
    if (jt < n_unmasked)
      mask_scores</*kMasked=*/false>(rS, a.scale_log2 < 0, s, row0, jt * kBc, a.causal);
    else
      mask_scores</*kMasked=*/true>(rS, a.scale_log2 < 0, s, row0, jt * kBc, a.causal);
    moved = softmax_scores(rS, m, l, alpha, fabsf(a.scale_log2));
  }
  // pa and O hold still until the wgmma that read and wrote them has completed (the caller's wait).
  __device__ __forceinline__ void fence_pv_operands() {
    sm90::wgmma_fence_operand(acc_o());
#pragma unroll
    for (int kk = 0; kk < kBc / Mma::kK; ++kk) sm90::wgmma_fence_operand(pa[kk]);
  }

  __device__ __forceinline__ void first() {
    sm90::mbarrier_wait_parity(sm.q_full, 0);  // sQ has landed (used once: phase 0)
    sm90::mbarrier_wait_parity(&sm.full_k[Smem<C>::stage_of(0)], Smem<C>::parity_of(0));
    sm90::wgmma_fence();  // first wgmma of the warpgroup
    issue_s(0);
    sm90::wgmma_wait_group<0>();
    sm90::wgmma_fence_operand(acc_s());
    sm.release_k(0);  // KApart (v10): K_0 is read
    softmax(0);  // O is still 0: nothing to rescale
  }
  __device__ __forceinline__ void prepare() { Mma::to_a(pa, rS[0]); }
  __device__ __forceinline__ void issue(int64_t j) {
    // Both waits before either product is issued: a wait is a loop each thread leaves on its own, and
    // a wgmma issued after one while another wgmma is in flight makes ptxas serialize them (it
    // inserts a warpgroup arrive on the divergent path: info C7520). V_{j-1} landed long ago anyway.
    sm90::mbarrier_wait_parity(&sm.full_k[Smem<C>::stage_of(j)], Smem<C>::parity_of(j));          // K_j
    sm90::mbarrier_wait_parity(&sm.full_v[Smem<C>::stage_of(j - 1)], Smem<C>::parity_of(j - 1));  // V_{j-1}
    // pa, and O's last rescale, were written by ordinary instructions; rS was read by them.
    sm90::wgmma_fence();
    issue_s(j);
    issue_pv(j - 1);
  }
  __device__ __forceinline__ void finish(int64_t j) {
    sm90::wgmma_wait_group<1>();  // S_j is done; P_{j-1}·V_{j-1} may still run
    sm90::wgmma_fence_operand(acc_s());
    sm.release_k(j);              // KApart (v10): K_j is read
    softmax(j);                   // under P_{j-1}·V_{j-1}
    sm90::wgmma_wait_group<0>();  // P_{j-1}·V_{j-1} is done: O may change, pa and stage j − 1 are free
    fence_pv_operands();
    if (moved) rescale_o(rO, alpha);
    sm.release(j - 1);
  }
  __device__ __forceinline__ void last() {
    prepare();  // P_last
    sm90::mbarrier_wait_parity(&sm.full_v[Smem<C>::stage_of(n_mine - 1)], Smem<C>::parity_of(n_mine - 1));
    sm90::wgmma_fence();
    issue_pv(n_mine - 1);
    sm90::wgmma_wait_group<0>();
    fence_pv_operands();
    sm.release(n_mine - 1);
  }
  __device__ __forceinline__ void store() const { write_o_lse(a, s, row0, rO, m, l); }
};

// A consumer's rounds over the n_blocks key blocks its tile loads (a slice's, for v8): its own with one
// product in flight across each softmax, then the ones past its own, released without being read.
template <class T, class C, bool kSlice>
__device__ __forceinline__ void run_rounds(Consumer<T, C, kSlice>& w, const Smem<C>& sm, int64_t n_blocks) {
  if (w.n_mine > 0) w.first();
  for (int64_t j = 1; j < w.n_mine; ++j) {
    w.prepare();  // P_{j-1}
    w.issue(j);
    w.finish(j);
  }
  if (w.n_mine > 0) w.last();
  for (int64_t j = w.n_mine; j < n_blocks; ++j) sm.release_skipped(j);
}

// One block's work: its tile of C::kBr query rows, a producer and C::kConsumers consumers (two here;
// v7 runs the same tile with three).
template <class T, class C>
__device__ __forceinline__ void run_tile(const CUtensorMap* tmQ, const CUtensorMap* tmK, const CUtensorMap* tmV,
                                         const Args<T>& a) {
  extern __shared__ unsigned char smem_raw[];
  const Smem<C> sm(smem_raw);
  const Sequence s = locate(a, C::kBr, /*reverse_tiles=*/a.causal);
  const int wg = ws::warpgroup();
  const int64_t n_blocks = key_blocks(s, C::kBr, C::kBc, a.causal);  // what the tile's Br rows need

  if (threadIdx.x == 0) sm.init_barriers();
  __syncthreads();  // the barriers are initialized; from here on the warpgroups meet only through them
  if (wg == 0) {
    ws::produce(sm, tmQ, tmK, tmV, a, s, n_blocks);
    return;
  }

  sm90::setmaxnreg_inc<C::kConsumerRegs>();
  Consumer<T, C> w(a, s, sm, wg - 1);
  run_rounds(w, sm, n_blocks);
  w.store();
}

// grid: B·H·ceil(Nq / Br) blocks of three warpgroups (attn::locate, Br = 128). tmQ: Q as [B·H][Nq][D]
// with boxes of 64 columns × 128 rows; tmK, tmV: K and V as [B·KVH][Nk][D], boxes of 64 × Bc (launch.cuh).
template <class T, class C>
__global__ void __launch_bounds__(C::kThreads, 1)
    flash_tma_v3_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                        const __grid_constant__ CUtensorMap tmV, const Args<T> a) {
  run_tile<T, C>(&tmQ, &tmK, &tmV, a);
}

}  // namespace fs::flash_tma::v3
