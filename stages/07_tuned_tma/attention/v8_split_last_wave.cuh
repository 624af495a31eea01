// flashstages · stage 07 attention · v8 — the last wave split: v7's tiles, and the tiles that would run
// alone at the end of the grid split into slices of their keys, merged by their LSE (fp16, bf16; D = 64,
// 128, 256).
//
// What changes from v7: the end of the grid. A v7 block fills its SM, so a grid of equal tiles runs in
// waves of one block per SM, and the last wave holds what is left (at D = 128, N = 8192, B = 2, H = 16
// on 132 SMs: 10 whole waves and 56 tiles, which keep 56 SMs busy for a whole tile while 76 wait). v8
// runs the whole waves as v7 does and gives each of the last tiles `splits` blocks, each over one slice
// of its key blocks (v5's slices, attn::key_slice); a slice block stores O_s and LSE_s in fp32 to a
// workspace, and merge_last_wave_kernel combines each row's slices (last_wave.cuh). How many tiles and
// splits is host code (launch.cuh, last_wave::; last_wave_split, common/lib/split_kv.h): slices of at
// least 4096 keys, as a slice pays a Q load, a pipeline fill and the partials' round trip. Causal tiles
// differ in length, so v8 leaves them to the block scheduler, except in a grid of fewer tiles than SMs,
// which it splits whole. Extra memory: tail tiles · splits · Br · (D + 1) · 4 bytes.
// Why it is faster: the last wave becomes ceil(56 · splits / 132) waves of slices 1/splits of a tile
// long, so the SMs stay busy to the end. Where it splits nothing v8 is v7.
// What it still lacks: at D = 256 (2 stages) the producer cannot load ahead of v3's loop (v10).
//
// Run: build/h100/stages/07_tuned_tma/attention/stage07_attention --dtype fp16 --seq 8192 --dim 128 --batch 2 --heads 16 --version v8
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/attention.cuh"
#include "common/device/sm90.cuh"
#include "common/device/split_kv.cuh"
#include "stages/07_tuned_tma/attention/block.cuh"
#include "stages/07_tuned_tma/attention/last_wave.cuh"
#include "stages/07_tuned_tma/attention/mainloop.cuh"
#include "stages/07_tuned_tma/attention/producer.cuh"

namespace fs::flash_tma::v8 {

using namespace fs::attn;
using ws::Consumer;
using ws::Smem;

// v7's tiles: three consumers at D = 64 and 128, two at D = 256.
template <int D>
using Config = ws::Config<D, D == 64 ? 128 : D == 128 ? 80 : ws::default_bc(D), D <= 128 ? 3 : 2>;

// grid: whole_tiles + tail tiles · splits blocks of 1 + C::kConsumers warpgroups (Br = 192 or 128;
// LastWaveArgs, last_wave.cuh). Maps as v7's (launch.cuh).
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
    ws::run_rounds(w, sm, n_blocks);
    w.store();
  } else {
    Consumer<T, C, /*kSlice=*/true> w(a, s, sm, wg - 1, slice.begin, slice.end);
    ws::run_rounds(w, sm, n_blocks);
    // The slice's result, normalized over its keys alone: the tile's row q0 + r at partial row part·Br + r.
    write_partial(la.o_part, la.lse_part, s, part * C::kBr - s.q0, w.row0, w.rO, w.m, w.l);
  }
}

}  // namespace fs::flash_tma::v8
