// Stage 07 attention, role header: the pingpong turns of two consumer warpgroups (v4's, which v5 and v6
// keep) — each issues its round of products in its turn and runs its softmax under the other's round.
//
// A consumer's round j (1 ≤ j < the tile's key blocks; c = 0, 1 the consumer, barrier 1 + c its turn):
//   bar.sync(1 + c, 256)                                  the other consumer's round j − 1 (c = 0) or j (c = 1) is issued
//   j < own blocks: waits for K_j, V_{j-1}; issue S_j, P_{j-1}·V_{j-1}    (mainloop.cuh, issue)
//   bar.arrive(2 − c, 256)                                the other consumer's turn
//   j < own blocks: wait S_j; softmax; wait P·V; rescale O; release block j − 1     (mainloop.cuh, finish)
//   else:           wait K_j has landed; release block j (skipped)
// Consumer 1 arrives once on barrier 1 before its first round (consumer 0 goes first), and consumer 0
// syncs once more on it after its last, taking the turn consumer 1's last arrival offers.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/sm90.cuh"
#include "stages/07_tuned_tma/attention/block.cuh"

namespace fs::flash_tma::ws {

// Consumer c's rounds over the tile's n_blocks key blocks (its own w.n_mine first, then turns it takes
// empty), in turns with the other consumer, from block 0's products to the last block's. W is a
// consumer with the steps of mainloop.cuh's Consumer (first, prepare, issue, finish, last).
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

}  // namespace fs::flash_tma::ws
