// Stage 07 attention, role header: the grid's last wave split over the keys (v8's, which v10 keeps) —
// the kernel's arguments, which block runs which tile or slice, and the merge of the split tiles' rows.
// The host side (which tiles to split, into how many slices, the workspace) is launch.cuh's last_wave::.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/attention.cuh"
#include "common/device/split_kv.cuh"

namespace fs::flash_tma {

// The kernel's arguments: the attention's, the grid's split, and where the slices' partials go. Block
// x < whole_tiles runs tile x of attn::locate's order; the others are `splits` blocks per remaining
// tile: block whole_tiles + i·splits + k runs slice k of tile whole_tiles + i and writes partial rows
// (i·splits + k)·Br .. + Br − 1.
template <class T>
struct LastWaveArgs {
  attn::Args<T> a;
  int64_t whole_tiles;
  int splits;
  float* __restrict__ o_part;    // [tail tiles][splits][Br][D]
  float* __restrict__ lse_part;  // [tail tiles][splits][Br]
};

// The merge of the split tiles' rows, for tiles of Br rows at head dim D: kMergeRows<D> rows of one tile
// per block (Br / kMergeRows<D> blocks per tile), each row from its `splits` partial rows, Br apart.
template <class T, int D, int Br>
__global__ void __launch_bounds__(attn::kMergeThreads) merge_last_wave_kernel(const LastWaveArgs<T> la) {
  constexpr int kRows = attn::kMergeRows<D>, kLanes = D / 4;  // kLanes threads per row, 4 columns each
  static_assert(Br % kRows == 0, "whole merge blocks per tile");
  const int64_t i = blockIdx.x / (Br / kRows);  // the split tile, counted from the first
  const attn::Sequence s = attn::locate(la.a, Br, /*reverse_tiles=*/la.a.causal, la.whole_tiles + i);
  const int64_t r = blockIdx.x % (Br / kRows) * kRows + threadIdx.x / kLanes;  // row in the tile
  if (s.q0 + r >= s.nq_rows) return;
  attn::merge_row<T, D>(la.a, s, s.q0 + r, threadIdx.x % kLanes * 4, la.o_part, la.lse_part,
                        i * la.splits * Br + r, Br, la.splits);
}

}  // namespace fs::flash_tma
