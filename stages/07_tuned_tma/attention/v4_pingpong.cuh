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
//   D = 128: <!-- value: [stage07/attention/v4/fp16/D:128/N:8192/causal:0] | .0f -->586<!-- /value --> TFLOPS, <!-- value: [stage07/attention/v4/fp16/D:128/N:8192/causal:0] / [stage07/attention/v3/fp16/D:128/N:8192/causal:0] | .2f -->1.01<!-- /value -->× v3, <!-- value: [stage07/attention/v4/fp16/D:128/N:8192/causal:0] / [stage07/attention/v2/fp16/D:128/N:8192/causal:0] | .2f -->1.09<!-- /value -->× v2, <!-- value: [stage07/attention/v4/fp16/D:128/N:8192/causal:0] / [sdpa_cudnn/fp16/D:128/N:8192/causal:0@stage07_attention.json] | .2f -->1.02<!-- /value -->× cuDNN
//   D = 64:  <!-- value: [stage07/attention/v4/fp16/D:64/N:8192/causal:0] | .0f -->427<!-- /value --> TFLOPS, <!-- value: [stage07/attention/v4/fp16/D:64/N:8192/causal:0] / [stage07/attention/v3/fp16/D:64/N:8192/causal:0] | .2f -->1.02<!-- /value -->× v3, <!-- value: [stage07/attention/v4/fp16/D:64/N:8192/causal:0] / [stage07/attention/v2/fp16/D:64/N:8192/causal:0] | .2f -->0.95<!-- /value -->× v2, <!-- value: [stage07/attention/v4/fp16/D:64/N:8192/causal:0] / [sdpa_cudnn/fp16/D:64/N:8192/causal:0@stage07_attention.json] | .2f -->0.97<!-- /value -->× cuDNN
//
// A consumer's round j (1 ≤ j < the tile's key blocks; c = 0, 1 the consumer, barrier 1 + c its turn):
//   bar.sync(1 + c, 256)                                  the other consumer's round j − 1 (c = 0) or j (c = 1) is issued
//   j < own blocks: waits for K_j, V_{j-1}; issue S_j, P_{j-1}·V_{j-1}    (v3)
//   bar.arrive(2 − c, 256)                                the other consumer's turn
//   j < own blocks: wait S_j; softmax; wait P·V; rescale O; release block j − 1     (v3)
//   else:           wait K_j has landed; release block j (skipped)
// Consumer 1 arrives once on barrier 1 before its first round (consumer 0 goes first), and consumer 0
// syncs once more on it after its last, taking the turn consumer 1's last arrival offers.
// The producer and the barriers are v2's (tma_attention.cuh, ws::), the consumer's steps v3's
// (v3::Consumer: first, prepare, issue, finish, last); this file adds the turns between them.
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
#include "tma_attention.cuh"
#include "v3_intra_warpgroup_overlap.cuh"

namespace fs::flash_tma::v4 {

using namespace fs::attn;
// v2's block and v3's consumer steps; v4 adds the turns between them.
using v3::Consumer;
using ws::Config;
using ws::kWarpgroup;
using ws::Smem;

// Consumer c's rounds over the tile's n_blocks key blocks (its own w.n_mine first, then turns it takes
// empty), in turns with the other consumer, from block 0's products to the last block's. W is a
// consumer with v3's steps (first, prepare, issue, finish, last): v3::Consumer here; v5 and v6 run
// these same turns with their consumers.
template <class W, class S>
__device__ __forceinline__ void take_turns(W& w, const S& sm, int c, int64_t n_blocks) {
  static_assert(S::C::kConsumers == 2, "turns between two consumers: barriers 1 and 2, 256 threads each");
  constexpr uint32_t kPair = 2 * kWarpgroup;           // the named barriers' count: both consumers
  const uint32_t my_turn = 1 + c, other_turn = 2 - c;  // named barriers 1 and 2 (0 is __syncthreads')
  if (w.n_mine > 0) w.first();
  // The skipped blocks are released within their turns (the other consumer needs their stages refilled
  // to go on); block 0 has no turn.
  if (w.n_mine == 0 && n_blocks > 0) sm.release_skipped(0);
  if (c == 1 && n_blocks > 1) sm90::bar_arrive(1, kPair);  // consumer 0 takes the first turn
  // Two loops, not one with a branch on "own" inside: a wgmma issued on one side of a branch and
  // waited for on another makes ptxas serialize them (info C7518).
  for (int64_t j = 1; j < w.n_mine; ++j) {  // this consumer's own rounds
    w.prepare();                     // P_{j-1}
    sm90::bar_sync(my_turn, kPair);  // the other consumer's round before this one is on the tensor cores
    w.issue(j);
    sm90::bar_arrive(other_turn, kPair);  // the other consumer's turn
    w.finish(j);                          // the softmax under this round's P·V and the other consumer's round
  }
  for (int64_t j = w.n_mine > 1 ? w.n_mine : 1; j < n_blocks; ++j) {  // the turns of blocks it skips
    sm90::bar_sync(my_turn, kPair);
    sm90::bar_arrive(other_turn, kPair);
    sm.release_skipped(j);
  }
  // Consumer 1's arrival after the last round waves on a turn that never comes: consumer 0 takes it
  // here, so that both named barriers end their last phase complete.
  if (c == 0 && n_blocks > 1) sm90::bar_sync(my_turn, kPair);
  if (w.n_mine > 0) w.last();
}

// grid: B·H·ceil(Nq / Br) blocks of three warpgroups (attn::locate, Br = 128). tmQ: Q as [B·H][Nq][D]
// with boxes of 64 columns × 128 rows; tmK, tmV: K and V as [B·KVH][Nk][D], boxes of 64 × Bc (launch.cuh).
template <class T, class C>
__global__ void __launch_bounds__(C::kThreads, 1)
    flash_tma_v4_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                        const __grid_constant__ CUtensorMap tmV, const Args<T> a) {
  extern __shared__ unsigned char smem_raw[];
  const Smem<C> sm(smem_raw);
  const Sequence s = locate(a, C::kBr, /*reverse_tiles=*/a.causal);
  const int wg = ws::warpgroup();
  const int64_t n_blocks = key_blocks(s, C::kBr, C::kBc, a.causal);  // what the tile's 128 rows need

  if (threadIdx.x == 0) sm.init_barriers();
  __syncthreads();  // the barriers are initialized; from here on the warpgroups meet only through them
  if (wg == 0) {
    ws::produce(sm, &tmQ, &tmK, &tmV, a, s, n_blocks);
    return;
  }

  sm90::setmaxnreg_inc<C::kConsumerRegs>();
  const int c = wg - 1;
  Consumer<T, C> w(a, s, sm, c);
  take_turns(w, sm, c, n_blocks);
  w.store();
}

}  // namespace fs::flash_tma::v4
