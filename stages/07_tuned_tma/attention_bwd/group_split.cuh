// Stage 07 attention backward, role header: a K/V head's query heads split over several blocks (v12 on).
// A block owns one K/V tile of one K/V head and walks the query heads of its group, G of them: with few
// K/V heads the grid is B·KVH·ceil(Nk / Bc) blocks, fewer than the GPU's SMs at MQA (128 at B = 2,
// KVH = 1, N = 8192), and under the causal mask the blocks of early keys walk every query tile while the
// last keys' walk a few: half of the GPU's time idles. Split, s blocks share a key block, block y walking
// query heads y·G/s … (y + 1)·G/s − 1; each sums dK and dV over its own heads, and the s partial sums meet
// in a workspace, where the last of the s blocks to finish adds them — in split order, 0, 1, …, s − 1,
// whichever block is last, so that dK and dV keep the same bits from run to run. dQ is unchanged: each
// query head's tile is still met by one block per key block (deterministic mode: in the same turns).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/sm90.cuh"
#include "common/lib/attention.h"

namespace fs::flash_bwd_tma {

// What the kernel is told: the split, and where the partial sums meet.
struct GroupSplit {
  int splits = 1;              // s, a divisor of G: the blocks of one key block (1: no split, nothing below used)
  float* partials = nullptr;   // [key blocks][s] slabs of dK's then dV's sums, 2·Bc·D floats, in the threads' order
  int32_t* arrivals = nullptr;  // [key blocks], zeroed: the blocks of each key block that have stored their sums
};

// The split of a problem whose unsplit grid is `key_blocks` blocks (B·KVH·ceil(max Nk / Bc)), on a GPU of
// `sms` SMs. Under the causal mask the blocks' walks differ in length, and the dispatch evens them out
// only with many short blocks: s is the smallest divisor of the group G for which key_blocks·s reaches 4
// blocks per SM. Without it the blocks are equal and one wave fills the GPU: a grid of at least 7/8 of
// the SMs stays whole, a smaller one takes the smallest s that reaches one block per SM. Either way no
// more than twice the target (the slabs' workspace grows with the blocks): the largest divisor below
// that where the next would pass it. A model of the dispatch (greedy over 132 SMs, NOTES.md) chose 4:
// causal MQA finishes in about half the unsplit time at N = 8192 and N = 2048. 1 with one query head per
// K/V head, or without an SM count.
inline int group_splits(const AttentionParams& p, int64_t key_blocks, int sms) {
  const int64_t group = p.heads / kv_head_count(p);
  if (group <= 1 || sms <= 0 || key_blocks <= 0) return 1;
  if (!p.causal && 8 * key_blocks >= 7 * int64_t(sms)) return 1;  // equal blocks, a wave all but full
  const int64_t target = int64_t(sms) * (p.causal ? 4 : 1);
  int64_t best = 1;
  for (int64_t s = 2; s <= group; ++s) {
    if (group % s != 0) continue;
    if (key_blocks * s > 2 * target) break;
    best = s;
    if (key_blocks * s >= target) break;
  }
  return int(best);
}

// The float4s of one block's slab: dK's sums then dV's, each D / 8 n-blocks of kThreads float4s, thread
// ctid's float4 of n-block n at n·kThreads + ctid (a warp's store: 512 contiguous bytes).
template <int D, int kThreads>
constexpr int64_t kSlabFloat4s = 2 * (D / 8) * int64_t(kThreads);

// At the end of a split block's walk, in every consumer thread (kThreads of them, ctid its index among
// them; named barrier 1 is theirs): stores this thread's sums of dK (unscaled) and dV into the slab of
// (key block, split), counts the block in, and returns true in the last block of the key block to do so,
// whose threads then hold in rdK and rdV the sums over all s blocks, added in split order. The other
// blocks return false and write nothing more. flag: an int of the block's shared memory.
template <int D, int kThreads>
__device__ __forceinline__ bool sum_group_split(const GroupSplit& g, int64_t key_block, int split, int ctid,
                                                float (&rdK)[D / 8][4], float (&rdV)[D / 8][4], int* flag) {
  constexpr int64_t kSlab = kSlabFloat4s<D, kThreads>;
  float4* first = reinterpret_cast<float4*>(g.partials) + key_block * g.splits * kSlab;
  float4* mine = first + split * kSlab + ctid;
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    __stcg(mine + n * kThreads, make_float4(rdK[n][0], rdK[n][1], rdK[n][2], rdK[n][3]));
    __stcg(mine + (D / 8 + n) * kThreads, make_float4(rdV[n][0], rdV[n][1], rdV[n][2], rdV[n][3]));
  }
  __threadfence();                  // this thread's sums are visible to the whole GPU before the block is counted
  sm90::bar_sync(1, kThreads);      // every consumer thread has stored and fenced before the count below
  if (ctid == 0) *flag = atomicAdd(g.arrivals + key_block, 1) == g.splits - 1;
  sm90::bar_sync(1, kThreads);      // the flag is written before any consumer thread reads it
  if (!*flag) return false;
  __threadfence();  // the other blocks' sums, counted before this block's arrival, are read after it
  const float4* theirs = first + ctid;
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    float4 k = __ldcg(theirs + n * kThreads), v = __ldcg(theirs + (D / 8 + n) * kThreads);
    for (int y = 1; y < g.splits; ++y) {  // split order: the same sum whichever block arrived last
      const float4 k1 = __ldcg(theirs + y * kSlab + n * kThreads), v1 = __ldcg(theirs + y * kSlab + (D / 8 + n) * kThreads);
      k.x += k1.x, k.y += k1.y, k.z += k1.z, k.w += k1.w;
      v.x += v1.x, v.y += v1.y, v.z += v1.z, v.w += v1.w;
    }
    rdK[n][0] = k.x, rdK[n][1] = k.y, rdK[n][2] = k.z, rdK[n][3] = k.w;
    rdV[n][0] = v.x, rdV[n][1] = v.y, rdV[n][2] = v.z, rdV[n][3] = v.w;
  }
  return true;
}

}  // namespace fs::flash_bwd_tma
