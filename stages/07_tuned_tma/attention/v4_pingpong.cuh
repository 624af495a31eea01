// flashstages · stage 07 attention · v4 — pingpong: the two consumer warpgroups take turns at the tensor
// cores, so that one's softmax runs under the other's products by arrangement (fp16, bf16; D = 64, 128, 256).
//
// What changes from v3 (each consumer issues S_j and P_{j-1}·V_{j-1} as two wgmma groups and runs
// block j's softmax under the second; the two consumers issue whenever they are ready, so their
// groups interleave in whatever order they arrive, and one's S_j can queue behind the other's P·V):
//   The consumers issue in turns. Before its round j of products a consumer waits at its turn's named
//   barrier (bar.sync, 256 threads: itself and the other consumer's arrival), issues S_j and
//   P_{j-1}·V_{j-1}, and waves the other on (bar.arrive on the other's barrier) before its own
//   softmax. So the tensor cores take warpgroup 1's round, then warpgroup 2's, then 1's …, and each
//   softmax runs while the other warpgroup's round is on the tensor cores (FlashAttention-3's pingpong;
//   sm90::bar_sync / sm90::bar_arrive).
//   The turns are counted over the tile's key blocks, the same for both: a consumer with fewer blocks
//   of its own (a causal tile's first half, a half with no real row) takes its remaining turns empty,
//   releasing in each the block it skips once that block has landed — the other consumer needs those
//   stages refilled, so they cannot wait until after the loop as in v2 and v3.
// Measured (H100, N = 8192, fp16, non-causal; stage07_attention.json, one run with v1–v3, stage 04's v5, SDPA):
//   D = 128: <!-- value: [stage07/attention/v4/fp16/D:128/N:8192/causal:0] | .0f -->515<!-- /value --> TFLOPS, <!-- value: [stage07/attention/v4/fp16/D:128/N:8192/causal:0] / [stage07/attention/v3/fp16/D:128/N:8192/causal:0] | .2f -->1.01<!-- /value -->× v3, <!-- value: [stage07/attention/v4/fp16/D:128/N:8192/causal:0] / [stage07/attention/v2/fp16/D:128/N:8192/causal:0] | .2f -->1.02<!-- /value -->× v2, <!-- value: [stage07/attention/v4/fp16/D:128/N:8192/causal:0] / [sdpa_cudnn/fp16/D:128/N:8192/causal:0@stage07_attention.json] | .2f -->0.89<!-- /value -->× cuDNN
//   D = 64:  <!-- value: [stage07/attention/v4/fp16/D:64/N:8192/causal:0] | .0f -->389<!-- /value --> TFLOPS, <!-- value: [stage07/attention/v4/fp16/D:64/N:8192/causal:0] / [stage07/attention/v3/fp16/D:64/N:8192/causal:0] | .2f -->1.14<!-- /value -->× v3, <!-- value: [stage07/attention/v4/fp16/D:64/N:8192/causal:0] / [stage07/attention/v2/fp16/D:64/N:8192/causal:0] | .2f -->1.00<!-- /value -->× v2, <!-- value: [stage07/attention/v4/fp16/D:64/N:8192/causal:0] / [sdpa_cudnn/fp16/D:64/N:8192/causal:0@stage07_attention.json] | .2f -->0.88<!-- /value -->× cuDNN
//
// A consumer's round j (1 ≤ j < the tile's key blocks; c = 0, 1 the consumer, barrier 1 + c its turn):
//   bar.sync(1 + c, 256)                                  the other consumer's round j − 1 (c = 0) or j (c = 1) is issued
//   j < own blocks: waits for K_j, V_{j-1}; issue S_j, P_{j-1}·V_{j-1}    (v3)
//   bar.arrive(2 − c, 256)                                the other consumer's turn
//   j < own blocks: wait S_j; softmax; wait P·V; rescale O; release block j − 1     (v3)
//   else:           wait K_j has landed; release block j (skipped)
// Consumer 1 arrives once on barrier 1 before its first round (consumer 0 goes first), and consumer 0
// syncs once more on it after its last, taking the turn consumer 1's last arrival offers.
// The producer, the barriers, the prologue (S_0) and the epilogue (the last P·V) are v3's.
//
// Run: build/h100/stages/07_tuned_tma/attention/stage07_attention --dtype fp16 --seq 8192 --dim 128 --batch 2 --heads 16 --version v4
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

namespace fs::flash_tma::v4 {

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
    flash_tma_v4_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
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
  // Block j skipped by this consumer: released once it has landed (an earlier arrival would count
  // towards the stage's current use, and free it under the other consumer).
  auto release_skipped = [&](int64_t j) {
    sm90::mbarrier_wait_parity(&full_k[stage_of(j)], parity_of(j));
    release(j);
  };
  constexpr uint32_t kPair = 2 * kWarpgroup;  // the named barriers' count: both consumers
  const uint32_t my_turn = 1 + c, other_turn = 2 - c;  // named barriers 1 and 2 (0 is __syncthreads')
  if (n_mine == 0 && n_blocks > 0) release_skipped(0);
  if (c == 1 && n_blocks > 1) sm90::bar_arrive(1, kPair);  // consumer 0 takes the first turn
  // Two loops, not one with a branch on "own" inside: a wgmma issued on one side of a branch and
  // waited for on another makes ptxas serialize them (info C7518).
  for (int64_t j = 1; j < n_mine; ++j) {  // this consumer's own rounds
    p_to_a();  // P_{j-1}
    sm90::bar_sync(my_turn, kPair);  // the other consumer's round before this one is on the tensor cores
    // Both waits before either product is issued (v3: otherwise ptxas serializes the wgmma, C7520).
    sm90::mbarrier_wait_parity(&full_k[stage_of(j)], parity_of(j));          // K_j has landed
    sm90::mbarrier_wait_parity(&full_v[stage_of(j - 1)], parity_of(j - 1));  // V_{j-1} has landed
    sm90::wgmma_fence();  // pa, and O's last rescale, were written by ordinary instructions
    issue_s(j);
    issue_pv(j - 1);
    sm90::bar_arrive(other_turn, kPair);  // the other consumer's turn
    sm90::wgmma_wait_group<1>();  // S_j is done; P_{j-1}·V_{j-1} may still run
    sm90::wgmma_fence_operand(acc_s);
    float alpha[1][2];
    const bool moved = softmax_of(j, alpha);  // under this round's P·V and the other consumer's round
    sm90::wgmma_wait_group<0>();  // P_{j-1}·V_{j-1} is done: O may change, pa and stage j − 1 are free
    sm90::wgmma_fence_operand(acc_o);
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk) sm90::wgmma_fence_operand(pa[kk]);  // pa live until here
    if (moved) rescale_o(rO, alpha);
    release(j - 1);
  }
  for (int64_t j = n_mine > 1 ? n_mine : 1; j < n_blocks; ++j) {  // the turns of blocks it skips
    sm90::bar_sync(my_turn, kPair);
    sm90::bar_arrive(other_turn, kPair);
    release_skipped(j);
  }
  // Consumer 1's arrival after the last round waves on a turn that never comes: consumer 0 takes it
  // here, so that both named barriers end their last phase complete.
  if (c == 0 && n_blocks > 1) sm90::bar_sync(my_turn, kPair);
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

  write_o_lse(a, s, row0, rO, m, l);
}

}  // namespace fs::flash_tma::v4
