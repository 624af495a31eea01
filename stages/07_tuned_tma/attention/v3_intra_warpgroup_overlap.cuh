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
//   D = 128: <!-- value: [stage07/attention/v3/fp16/D:128/N:8192/causal:0] | .0f -->510<!-- /value --> TFLOPS, <!-- value: [stage07/attention/v3/fp16/D:128/N:8192/causal:0] / [stage07/attention/v2/fp16/D:128/N:8192/causal:0] | .2f -->1.01<!-- /value -->× v2, <!-- value: [stage07/attention/v3/fp16/D:128/N:8192/causal:0] / [sdpa_cudnn/fp16/D:128/N:8192/causal:0@stage07_attention.json] | .2f -->0.88<!-- /value -->× cuDNN
//   D = 64:  <!-- value: [stage07/attention/v3/fp16/D:64/N:8192/causal:0] | .0f -->340<!-- /value --> TFLOPS, <!-- value: [stage07/attention/v3/fp16/D:64/N:8192/causal:0] / [stage07/attention/v2/fp16/D:64/N:8192/causal:0] | .2f -->0.88<!-- /value -->× v2, <!-- value: [stage07/attention/v3/fp16/D:64/N:8192/causal:0] / [sdpa_cudnn/fp16/D:64/N:8192/causal:0@stage07_attention.json] | .2f -->0.77<!-- /value -->× cuDNN
// Level with v2 at D = 128 and slower at D = 64: the overlap within a warpgroup competes with the one
// two consumers already get between them (the stage README); pingpong (ordering the two) is next.
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
// The producer, the barriers, the skipped blocks and the block layout are v2's.
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
#include "v1_tma_wgmma.cuh"
#include "v2_warp_specialization.cuh"

namespace fs::flash_tma::v3 {

using namespace fs::attn;
using v1::load_tile;
using v1::v_descriptor;

// v2's block: three warpgroups, the register split, the tile shapes and stages, the descriptors.
using v2::Config;
using v2::k_major_descriptor;
using v2::kConsumerRegs;
using v2::kConsumerWarps;
using v2::kProducerRegs;
using v2::kThreads;
using v2::kWarpgroup;

// grid: B·H·ceil(Nq / Br) blocks of three warpgroups (attn::locate, Br = 128). tmQ: Q as [B·H][Nq][D]
// with boxes of 64 columns × 128 rows; tmK, tmV: K and V as [B·KVH][Nk][D], boxes of 64 × Bc (launch.cuh).
template <class T, int D>
__global__ void __launch_bounds__(kThreads, 1)
    flash_tma_v3_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                        const __grid_constant__ CUtensorMap tmV, const Args<T> a) {
  using C = Config<D>;
  constexpr int kBr = C::kBr, kBc = C::kBc, kStages = C::kStages;
  constexpr int kNT = kBc / 8, kDT = D / 8;  // 8-column tiles of S and of O
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem =
      reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  unsigned char* sQ = smem;                // [Br][D], swizzled panels
  unsigned char* sKV = smem + C::kQBytes;  // [kStages] × (K_j [Bc][D], V_j [Bc][D])
  uint64_t* q_full = reinterpret_cast<uint64_t*>(sKV + kStages * C::kStageBytes);
  uint64_t* full_k = q_full + 1;           // [kStages]
  uint64_t* full_v = full_k + kStages;     // [kStages]
  uint64_t* empty = full_v + kStages;      // [kStages]

  const Sequence s = locate(a, kBr, false);
  const int tid = threadIdx.x, wg = tid / kWarpgroup;
  const int64_t n_blocks = key_blocks(s, kBr, kBc, a.causal);  // what the tile's 128 rows need

  // Each barrier counts the uses of its stage, one phase per use u (key block j = kStages·u + st), so
  // phase u has parity u & 1. A parity names its phase only while the barrier cannot run two phases
  // ahead of its waiter, and it cannot: full_*[st] phase u + 1 needs the refill that waits for
  // empty[st] phase u, which needs every consumer warp done with use u, and the other way round.
  if (tid == 0) {
    sm90::mbarrier_init(q_full, 1);  // the producer's expect_tx arrival, then the bytes
    for (int st = 0; st < kStages; ++st) {
      sm90::mbarrier_init(&full_k[st], 1);
      sm90::mbarrier_init(&full_v[st], 1);
      sm90::mbarrier_init(&empty[st], kConsumerWarps);  // one arrival per consumer warp
    }
    sm90::fence_mbarrier_init();  // the inits are seen by the TMA unit that completes them
  }
  // Every thread sees initialized barriers before it waits on one. The only block-wide barrier: from
  // here on the warpgroups meet only through the mbarriers.
  __syncthreads();

  if (wg == 0) {
    // The producer: the whole warpgroup gives its registers back (a warpgroup instruction), then one
    // thread issues the loads and the others are done.
    sm90::setmaxnreg_dec<kProducerRegs>();
    if (tid == 0 && n_blocks > 0) {
      const int64_t q_plane = blockIdx.x / a.q_tiles, kv_plane = q_plane / a.group;
      sm90::mbarrier_arrive_expect_tx(q_full, C::kQBytes);
      load_tile<D>(sQ, &tmQ, kBr, s.q0, q_plane, q_full);
      for (int64_t j = 0; j < n_blocks; ++j) {
        const int st = int(j % kStages);
        const int64_t u = j / kStages;
        // Use u of the stage needs use u − 1 released by all 8 consumer warps. The wait's acquire,
        // after their wgmma_wait_group and arrivals, orders the tensor cores' reads of the stage
        // before the TMA writes issued below.
        if (u > 0) sm90::mbarrier_wait_parity(&empty[st], uint32_t(u - 1) & 1);
        unsigned char* sK = sKV + st * C::kStageBytes;
        sm90::mbarrier_arrive_expect_tx(&full_k[st], C::kKVBytes);
        load_tile<D>(sK, &tmK, kBc, j * kBc, kv_plane, &full_k[st]);
        sm90::mbarrier_arrive_expect_tx(&full_v[st], C::kKVBytes);
        load_tile<D>(sK + C::kKVBytes, &tmV, kBc, j * kBc, kv_plane, &full_v[st]);
      }
    }
    // No producer thread touches shared memory or a barrier again: leaving is safe, the loads in flight
    // complete on their barriers whether or not the issuing thread still runs, and the consumers wait
    // for every one of them before they leave.
    return;
  }

  // A consumer: rows 64c .. 64c + 63 of the tile, warp w of it rows 16w .. 16w + 15 of those.
  sm90::setmaxnreg_inc<kConsumerRegs>();
  const int c = wg - 1, warp = tid / 32 % 4;
  Sequence mine = s;  // this warpgroup's 64 rows as a tile of their own: its key blocks and masks
  mine.q0 = s.q0 + 64 * c;
  const int64_t row0 = mine.q0 + warp * 16;
  const int64_t n_mine = key_blocks(mine, 64, kBc, a.causal);  // <= n_blocks: the first ones
  const int64_t n_unmasked = unmasked_blocks(mine, kBc, a.causal);

  float rO[1][kDT][4] = {};  // O, unnormalized: the m64nD accumulator, as stage 04's [row tile][8 columns][4]
  float m[1][2] = {{-INFINITY, -INFINITY}}, l[1][2] = {};
  auto& acc_o = reinterpret_cast<float(&)[D / 2]>(rO);  // the same registers as wgmma sees them
  float rS[1][kNT][4];  // S′ = Q_c·K_jᵀ, then P_j: 64 × Bc over the warpgroup, 16 × Bc per warp
  auto& acc_s = reinterpret_cast<float(&)[kBc / 2]>(rS);
  uint32_t pa[kBc / 16][4];  // P_{j-1} as the A operand of the product in flight across block j's softmax
  const uint32_t q_addr = sm90::smem_address(sQ), kv_addr = sm90::smem_address(sKV);
  const float c_log2 = fabsf(a.scale_log2);

  auto stage_of = [&](int64_t j) { return int(j % kStages); };
  auto parity_of = [&](int64_t j) { return uint32_t(j / kStages) & 1; };
  auto k_addr = [&](int64_t j) { return kv_addr + stage_of(j) * C::kStageBytes; };
  // S_j = Q_c·K_jᵀ, issued and committed as one group (the first product overwrites rS: scale-d = 0).
  auto issue_s = [&](int64_t j) {
#pragma unroll
    for (int ks = 0; ks < D / 16; ++ks)
      sm90::wgmma_m64nNk16<kBc, T, false, false>(acc_s, k_major_descriptor(q_addr, kBr, 64 * c, ks),
                                                 k_major_descriptor(k_addr(j), kBc, 0, ks), ks > 0);
    sm90::wgmma_commit_group();
  };
  // O += P_j·V_j from pa, issued and committed as one group.
  auto issue_pv = [&](int64_t j) {
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk)
      sm90::wgmma_m64nNk16_rs<D, T, /*kTransB=*/true>(acc_o, pa[kk],
                                                       v_descriptor(k_addr(j) + C::kKVBytes, kBc, kk), true);
    sm90::wgmma_commit_group();
  };
  // Mask S_j (diagonal and tail blocks only) and run the first part of the online softmax on it:
  // P_j in rS, m and l updated, each row's factor in alpha; whether any factor is not 1.
  auto softmax_of = [&](int64_t j, float (&alpha)[1][2]) {
    if (j < n_unmasked)
      mask_scores</*kMasked=*/false>(rS, a.scale_log2 < 0, s, row0, j * kBc, a.causal);
    else
      mask_scores</*kMasked=*/true>(rS, a.scale_log2 < 0, s, row0, j * kBc, a.causal);
    return softmax_scores(rS, m, l, alpha, c_log2);
  };
  // P_j → A fragments (rS is free again afterwards, for S_{j+1}).
  auto p_to_a = [&] {
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk) a_from_c<T>(pa[kk], rS[0][2 * kk], rS[0][2 * kk + 1]);
  };
  // This warp is done with block j's stage: one of the 8 arrivals that let the producer refill it.
  auto release = [&](int64_t j) {
    if (tid % 32 == 0) sm90::mbarrier_arrive(&empty[stage_of(j)]);
  };

  if (n_mine > 0) {
    sm90::mbarrier_wait_parity(q_full, 0);  // sQ has landed (used once: phase 0)
    sm90::mbarrier_wait_parity(&full_k[stage_of(0)], parity_of(0));
    sm90::wgmma_fence();  // first wgmma of the warpgroup
    issue_s(0);
    sm90::wgmma_wait_group<0>();
    sm90::wgmma_fence_operand(acc_s);
    float alpha[1][2];
    softmax_of(0, alpha);  // O is still 0: nothing to rescale
  }
  for (int64_t j = 1; j < n_mine; ++j) {
    p_to_a();  // P_{j-1}
    // Both waits before either product is issued: a wait is a loop each thread leaves on its own, and
    // a wgmma issued after one while another wgmma is in flight makes ptxas serialize them (it
    // inserts a warpgroup arrive on the divergent path: info C7520). V_{j-1} landed long ago anyway.
    sm90::mbarrier_wait_parity(&full_k[stage_of(j)], parity_of(j));          // K_j has landed
    sm90::mbarrier_wait_parity(&full_v[stage_of(j - 1)], parity_of(j - 1));  // V_{j-1} has landed
    // pa, and O's last rescale, were written by ordinary instructions; rS was read by them.
    sm90::wgmma_fence();
    issue_s(j);
    issue_pv(j - 1);
    sm90::wgmma_wait_group<1>();  // S_j is done; P_{j-1}·V_{j-1} may still run
    sm90::wgmma_fence_operand(acc_s);
    float alpha[1][2];
    const bool moved = softmax_of(j, alpha);  // under P_{j-1}·V_{j-1}
    sm90::wgmma_wait_group<0>();  // P_{j-1}·V_{j-1} is done: O may change, pa and stage j − 1 are free
    sm90::wgmma_fence_operand(acc_o);
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk) sm90::wgmma_fence_operand(pa[kk]);  // pa live until here
    if (moved) rescale_o(rO, alpha);
    release(j - 1);
  }
  if (n_mine > 0) {
    p_to_a();  // P_last
    sm90::mbarrier_wait_parity(&full_v[stage_of(n_mine - 1)], parity_of(n_mine - 1));
    sm90::wgmma_fence();
    issue_pv(n_mine - 1);
    sm90::wgmma_wait_group<0>();
    sm90::wgmma_fence_operand(acc_o);
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk) sm90::wgmma_fence_operand(pa[kk]);
    release(n_mine - 1);
  }

  // The blocks the tile loads past this warpgroup's own (a causal first half's last block; all of
  // them for a half with no real row, as when Nq = 17): released without being read, each once it has
  // landed — not sooner: arrivals for use u + 1 of a stage made before its use u completed would count
  // towards use u, and release a stage the other warpgroup still reads.
  for (int64_t j = n_mine; j < n_blocks; ++j) {
    const int st = int(j % kStages);
    sm90::mbarrier_wait_parity(&full_k[st], uint32_t(j / kStages) & 1);
    if (tid % 32 == 0) sm90::mbarrier_arrive(&empty[st]);
  }

  write_o_lse(a, s, row0, rO, m, l);
}

}  // namespace fs::flash_tma::v3
