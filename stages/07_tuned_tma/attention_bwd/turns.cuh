// Stage 07 attention backward, role header: the turns that make dQ deterministic. On the atomic path
// every key block adds its share of dQ_i into the fp32 workspace as it finishes, in whatever order the
// blocks run, and fp32 addition is not associative: the sum's last bits change from run to run. With
// the `deterministic` field set, each (batch entry, query head, query tile) has a turn counter in a
// zeroed workspace, and key block n adds into that tile only when the counter says n: key blocks 0, 1,
// 2 … add in that order, every run (FlashAttention-3's semaphore, one int per query tile).
//
// Why it cannot deadlock: the key blocks that meet a query tile are 0 .. n_last (under the causal mask,
// aligned bottom-right, the keys a row sees are a prefix), so block n waits only for blocks n − 1,
// n − 2 … of the same (batch entry, K/V head), which have lower blockIdx.x. Blocks are dispatched in
// increasing blockIdx.x, so every block waited for is resident or finished when its successor spins,
// and block 0 never waits. Each block walks its query tiles in the same order (query head, then tile),
// so no two blocks wait on each other. v11 under the causal mask turns both round: a tile's adds run
// from the last key block that sees it down to block 0, and a head's key blocks are dispatched last key
// first, so the blocks waited for still have the lower blockIdx.x.
#pragma once

#include <cstdint>

namespace fs::flash_bwd_tma {

// Spins until the turn counter holds `n` (acquire: the previous key block's adds, released by its
// pass_turn, are visible to this block's after it). v1 and v2: one thread of the block calls it, then a
// __syncthreads passes the turn on to the others. From v3 on the dQ writer's lane 0 calls it alone,
// before its bulk reduce-add, which a fence.proxy.async.global orders after the acquire (dq_writer.cuh).
__device__ __forceinline__ void wait_turn(const int32_t* turn, int32_t n) {
  int32_t now;
  do {
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(now) : "l"(turn) : "memory");
  } while (now != n);
}

// Hands the tile to the next key block: `*turn += 1`, released at GPU scope. v1 and v2: one thread calls
// it, after every thread of the block has made its adds visible (__threadfence) and met the others at a
// __syncthreads. From v3 on the writer's lane 0 calls it once its bulk add has completed
// (cp.async.bulk.wait_group 0) and a proxy fence has ordered that add before the release.
__device__ __forceinline__ void pass_turn(int32_t* turn) {
  asm volatile("red.release.gpu.global.add.s32 [%0], 1;\n" ::"l"(turn) : "memory");
}

}  // namespace fs::flash_bwd_tma
