// flashstages · stage 07 attention · v8 — the last wave split: v7's tiles, and the tiles that would run
// alone at the end of the grid split into slices of their keys, merged by their LSE (fp16, bf16; D = 64,
// 128, 256).
//
// What changes from v7: the end of the grid. A v7 block fills its SM (512 threads, up to 209 KiB of
// shared memory), so a grid of equal tiles runs in waves of 132 blocks, and the last wave holds what
// is left: at D = 128, N = 8192, B = 2, H = 16 the 1376 tiles of 192 rows are 10 whole waves and 56
// tiles, which keep 56 SMs busy for a whole tile while 76 wait. ncu showed it (v7 with 64-key blocks
// then): v7 kept its tensor pipe busy for the same share of its SMs' active cycles as cuDNN's
// persistent kernel (77.2%), but its SMs were active for 94.0% of the kernel's cycles, and it needed
// 2.7% more cycles than cuDNN.
//   v8 runs the whole waves as v7 does (v7's consumer) and gives each of the last tiles `splits` blocks,
// each over one slice of its key blocks (v5's slices, attn::key_slice): the last wave becomes
// ceil(56 · splits / 132) waves of slices 1/splits of a tile long (2 splits: 112 blocks, half a tile).
// A slice block stores its own result, O_s and LSE_s in fp32, to a workspace ([tail tiles][splits][Br]
// rows), and merge_last_wave_kernel combines each row's slices with v5's merge (attn::merge_row). How
// many tiles and splits is host code (last_wave.cuh): last_wave_split (common/lib/split_kv.h) from
// the tiles, their keys (slices of at least 4096, 52 key blocks at D = 128: a slice pays a Q load, a
// pipeline fill and the partials' round trip, about 10 key blocks' time) and one block per SM. Causal tiles differ in length
// (longest first), so whole waves of them do not end together and v8 leaves them to the hardware's
// block scheduler, as v7 does, except in a grid of fewer tiles than SMs, which it splits whole (v5's
// case: short queries against long keys). Extra memory: tail tiles · splits · Br · (D + 1) · 4 bytes
// (11 MiB at that shape).
// Measured (H100, N = 8192, fp16, non-causal; stage07_attention.json, one run with every version, stage 04's v5, SDPA):
//   D = 128: <!-- value: [stage07/attention/v8/fp16/D:128/N:8192/causal:0] | .0f -->610<!-- /value --> TFLOPS, <!-- value: [stage07/attention/v8/fp16/D:128/N:8192/causal:0] / [stage07/attention/v7/fp16/D:128/N:8192/causal:0] | .2f -->1.01<!-- /value -->× v7, <!-- value: [stage07/attention/v8/fp16/D:128/N:8192/causal:0] / [sdpa_cudnn/fp16/D:128/N:8192/causal:0@stage07_attention.json] | .2f -->1.07<!-- /value -->× cuDNN
//   ncu at its locked clock, with 64-key blocks: 2.70 M cycles and 17.7 k for the merge against v7's
//   2.80 M (SMs active 97.6% of the cycles against 94.0%) and cuDNN's 2.73 M; with v7's 80-key blocks
//   2.61 M and 17.5 k. Against cuDNN in one process, seven alternating rounds: 1.025–1.055× (fp16),
//   1.002–1.061× (bf16); the boost clock under the 700 W limit gives back part of what the idle SMs
//   cost, so v8 is 1.01–1.02× v7 there (the stage README, "v8"). Where it splits nothing v8 is v7.
//
// Run: build/h100/stages/07_tuned_tma/attention/stage07_attention --dtype fp16 --seq 8192 --dim 128 --batch 2 --heads 16 --version v8
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/attention.cuh"
#include "common/device/split_kv.cuh"
#include "tma_attention.cuh"
#include "v3_intra_warpgroup_overlap.cuh"
#include "v7_three_consumers.cuh"

namespace fs::flash_tma::v8 {

using namespace fs::attn;
using v3::Consumer;
using ws::Smem;
// v7's tiles: three consumers at D = 64 and 128, two at D = 256.
using v7::Config;

// The kernel's arguments: the attention's, the grid's split, and where the slices' partials go. Block
// x < whole_tiles runs tile x of attn::locate's order; the others are `splits` blocks per remaining
// tile: block whole_tiles + i·splits + k runs slice k of tile whole_tiles + i and writes partial rows
// (i·splits + k)·Br .. + Br − 1.
template <class T>
struct LastWaveArgs {
  Args<T> a;
  int64_t whole_tiles;
  int splits;
  float* __restrict__ o_part;    // [tail tiles][splits][Br][D]
  float* __restrict__ lse_part;  // [tail tiles][splits][Br]
};

// grid: whole_tiles + tail tiles · splits blocks of 1 + C::kConsumers warpgroups (Br = 192 or 128).
// Maps as v7's (launch.cuh).
template <class T, class C>
__global__ void __launch_bounds__(C::kThreads, 1)
    flash_tma_v8_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                        const __grid_constant__ CUtensorMap tmV, const LastWaveArgs<T> la) {
  extern __shared__ unsigned char smem_raw[];
  const Args<T>& a = la.a;
  const Smem<C> sm(smem_raw);
  const int64_t x = blockIdx.x, part = x - la.whole_tiles;  // part >= 0: partial block (tile i, slice k)
  const bool whole = part < 0;
  const Sequence s = locate(a, C::kBr, /*reverse_tiles=*/a.causal, whole ? x : la.whole_tiles + part / la.splits);
  const int64_t n_tile = key_blocks(s, C::kBr, C::kBc, a.causal);  // what the tile's Br rows need
  const KeySlice slice = whole ? KeySlice{0, n_tile} : key_slice(n_tile, part % la.splits, la.splits);
  const int64_t n_blocks = slice.end - slice.begin;
  const int wg = ws::warpgroup();

  if (threadIdx.x == 0) sm.init_barriers();
  __syncthreads();  // the barriers are initialized; from here on the warpgroups meet only through them
  if (wg == 0) {
    ws::produce(sm, &tmQ, &tmK, &tmV, a, s, n_blocks, slice.begin);
    return;
  }

  sm90::setmaxnreg_inc<C::kConsumerRegs>();
  if (whole) {  // v7's consumer, as v7 runs it
    Consumer<T, C> w(a, s, sm, wg - 1);
    v3::run_rounds(w, sm, n_blocks);
    w.store();
  } else {
    Consumer<T, C, /*kSlice=*/true> w(a, s, sm, wg - 1, slice.begin, slice.end);
    v3::run_rounds(w, sm, n_blocks);
    // The slice's result, normalized over its keys alone: the tile's row q0 + r at partial row part·Br + r.
    write_partial(la.o_part, la.lse_part, s, part * C::kBr - s.q0, w.row0, w.rO, w.m, w.l);
  }
}

// The merge of the split tiles' rows, kMergeRows<D> rows of one tile per block (Br / kMergeRows<D> blocks
// per tile), each row from its `splits` partial rows, Br apart.
template <class T, class C>
__global__ void __launch_bounds__(kMergeThreads) merge_last_wave_kernel(const LastWaveArgs<T> la) {
  constexpr int D = C::kD, kRows = kMergeRows<D>, kLanes = D / 4;  // kLanes threads per row, 4 columns each
  static_assert(C::kBr % kRows == 0, "whole merge blocks per tile");
  const int64_t i = blockIdx.x / (C::kBr / kRows);  // the split tile, counted from the first
  const Sequence s = locate(la.a, C::kBr, /*reverse_tiles=*/la.a.causal, la.whole_tiles + i);
  const int64_t r = blockIdx.x % (C::kBr / kRows) * kRows + threadIdx.x / kLanes;  // row in the tile
  if (s.q0 + r >= s.nq_rows) return;
  merge_row<T, D>(la.a, s.q_row0 + s.q0 + r, threadIdx.x % kLanes * 4, la.o_part, la.lse_part,
                  i * la.splits * C::kBr + r, C::kBr, la.splits);
}

}  // namespace fs::flash_tma::v8
