// Stage 07 attention backward, role header: the dQ writer of v3 on. One thread of the producer
// warpgroup takes each step's dQ tile, which the consumers stored in shared memory (fp32, in the
// workspace's layout), and adds it into dq_accum with TMA's reduce-add, one instruction per tile (two
// where the consumers hold partial sums over their own keys: D = 64 up to v7); then frees the tile once
// the copy has read it. Up to v5 the layout is row-major and only the tile's real rows are added; from
// v6 on dq_accum is a stack of whole tiles in the accumulator's order (kWholeTiles), added whole. In
// deterministic mode it also keeps the order: it waits for the tile's turn, adds, waits until the adds
// have completed, and passes the turn on (turns.cuh), with proxy fences ordering its bulk adds (the
// async proxy) against the turn's acquire and release (generic loads and stores).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "common/device/bwd_args.cuh"
#include "common/device/sm90.cuh"
#include "stages/07_tuned_tma/attention_bwd/turns.cuh"

namespace fs::flash_bwd_tma {

// The writer's walk: steps 0 .. steps − 1 of its block, step t's tile in sdQ + (t % kTiles)·tile_bytes,
// announced on dq_full[t % kTiles] (one phase per use: parity (t / kTiles) & 1) and freed on
// dq_empty[t % kTiles] (kTiles: 2 up to v7, 1 at D = 64 from v8 on). step_of(t)
// gives the step's query head (bh), tile (m) and first row (q_base) as the kernel's walk numbers them;
// nq: the rows of the sequence (rows past it are not added: another entry's or head's, or past the
// allocation). kSplitsKeys (D = 64): the tile holds two [Br][64] partial sums, consumer 0's first.
// turns, kv_tiles, n_block: the deterministic mode's counters, the key blocks per head and this block's
// place among them (null turns: the atomic mode). kWholeTiles: the tile goes whole to dq_accum's tile
// (b·H + h)·ceil(max Nq / Br) + m, b the block's batch entry, h the step's head (nq unused).
// turn_of(step): the turn at which this block adds step's tile, where the order is not the key blocks'
// own (v11 under the causal mask: last key first); by default n_block. block: the block's place in the
// key blocks' order, which names its batch entry (blockIdx.x unless the kernel numbers its blocks
// otherwise: v12).
template <int D, int kBr, bool kSplitsKeys, bool kWholeTiles = false, int kTiles = 2, class T, class StepOf,
          class TurnOf = std::nullptr_t>
__device__ __forceinline__ void write_dq(const bwd::Args<T>& a, int64_t steps, StepOf step_of, int64_t nq,
                                         const unsigned char* sdQ, int tile_bytes, uint64_t* dq_full,
                                         uint64_t* dq_empty, int32_t* turns, int64_t kv_tiles, int64_t n_block,
                                         TurnOf turn_of = nullptr, int64_t block = -1) {
  for (int64_t t = 0; t < steps; ++t) {
    const int b = int(t % kTiles);
    const auto s = step_of(t);
    const int64_t i0 = s.m * kBr;
    // The step's (b·H + h, m) among B·H·ceil(max Nq / Br) tiles: its turn, and from v6 on its dQ tile.
    const int64_t bb = (block < 0 ? int64_t(blockIdx.x) : block) / kv_tiles / (a.heads / a.group);
    const int64_t slot_tile = (bb * a.heads + s.bh % a.heads) * ((a.max_seq_q + kBr - 1) / kBr) + s.m;
    const int row_lim = kWholeTiles ? kBr : int(min(nq - i0, int64_t(kBr)));
    const uint32_t bytes = uint32_t(row_lim) * D * 4;  // the real rows (or all): a multiple of 16 bytes
    float* dst = kWholeTiles ? a.dq_accum + slot_tile * kBr * D  // 16-byte aligned: D · 4 bytes per row
                             : a.dq_accum + (s.q_base + i0) * D;
    const unsigned char* tile = sdQ + b * tile_bytes;
    int32_t* turn = turns ? turns + slot_tile : nullptr;
    sm90::mbarrier_wait_parity(&dq_full[b], uint32_t(t / kTiles) & 1);  // every consumer warp's share is in
    if (turn) {
      if constexpr (std::is_same_v<TurnOf, std::nullptr_t>)
        wait_turn(turn, int32_t(n_block));
      else
        wait_turn(turn, int32_t(turn_of(s)));
      sm90::fence_proxy_async_global();  // the bulk adds below come after the previous block's
    }
    if constexpr (kSplitsKeys) {
      // Two partial sums over the two consumers' keys, consumer 0's first; in deterministic mode it has
      // completed before consumer 1's starts, so that the sums run in one order.
      sm90::bulk_reduce_add_f32(dst, tile, bytes);
      sm90::cp_async_bulk_commit_group();
      if (turn) sm90::cp_async_bulk_wait_group<0>();
      sm90::bulk_reduce_add_f32(dst, tile + kBr * 64 * 4, bytes);
    } else {
      sm90::bulk_reduce_add_f32(dst, tile, bytes);
    }
    sm90::cp_async_bulk_commit_group();
    if (turn) {
      sm90::cp_async_bulk_wait_group<0>();  // the adds have completed, visible to this thread
      sm90::fence_proxy_async_global();      // and ordered before the release that passes the turn
      pass_turn(turn);
    } else {
      sm90::cp_async_bulk_wait_group_read<0>();  // the copy has read the tile (its adds may be under way)
    }
    sm90::mbarrier_arrive(&dq_empty[b]);
  }
}

}  // namespace fs::flash_bwd_tma
