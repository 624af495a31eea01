// flashstages · stage 07 attention · v5 — split-KV: v4's block over one slice of the keys of its query
// tile, and a second kernel that merges the slices by their log-sum-exps (fp16, bf16; D = 64, 128, 256).
//
// What changes from v4: the grid, where it would leave SMs idle. v4 launches one block per (batch entry,
// head, 128 query rows), each walking every key block of its tile; with few query rows and heads that is
// fewer blocks than the GPU has SMs (B = 2, H = 8, Nq = 256: 32 blocks for 132 SMs). v5 gives such a tile
// `splits` blocks (blockIdx.y = split): block (tile, s) runs v4's producer and pingpong consumers over the
// s-th slice of the tile's key blocks (attn::key_slice), and stores the slice's own result, O_s and LSE_s
// in fp32, to a workspace (attn::write_partial) instead of O; attn::merge_splits_kernel then combines
// the slices of each row (common/device/split_kv.cuh, stage 04's v6's). How many splits is host code
// (v5.cu: split_kv_heuristic); one split is v4's launch. Extra memory: splits · rows · (D + 1) · 4 bytes.
// The slice's blocks are counted from its first: only the loads (ws::produce's `first`) and the mask
// (ws::Consumer<T, C, /*kSlice=*/true>'s j0) add the slice's first block.
// Why it is faster: short queries against long keys fill the GPU (the stage README, v5; the
// measurements: NOTES.md).
// What it still lacks: grouped K/V heads each load their group's K and V (v6 packs them).
//
// Run: build/h100/stages/07_tuned_tma/attention/stage07_attention --dtype fp16 --batch 2 --heads 8 --seq 256 --seq-k 32768 --dim 128 --version v5
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/device/attention.cuh"
#include "common/device/sm90.cuh"
#include "common/device/split_kv.cuh"
#include "stages/07_tuned_tma/attention/block.cuh"
#include "stages/07_tuned_tma/attention/mainloop.cuh"
#include "stages/07_tuned_tma/attention/pingpong.cuh"
#include "stages/07_tuned_tma/attention/producer.cuh"

namespace fs::flash_tma::v5 {

using namespace fs::attn;
// v2's block, v3's consumer steps, v4's turns; v5 adds the slice and the partial store.
using ws::Config;
using ws::Consumer;
using ws::Smem;

// grid: (B·H·ceil(Nq / Br), splits) blocks of three warpgroups (attn::locate on blockIdx.x, Br = 128;
// the slice from blockIdx.y). Maps as v4's (launch.cuh).
template <class T, class C>
__global__ void __launch_bounds__(C::kThreads, 1)
    flash_tma_v5_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                        const __grid_constant__ CUtensorMap tmV, const SplitArgs<T> sa) {
  extern __shared__ unsigned char smem_raw[];
  const Args<T>& a = sa.a;
  const Smem<C> sm(smem_raw);
  const Sequence s = locate(a, C::kBr, /*reverse_tiles=*/a.causal);
  const int wg = ws::warpgroup();
  const KeySlice slice = key_slice(key_blocks(s, C::kBr, C::kBc, a.causal), blockIdx.y, gridDim.y);
  const int64_t n_blocks = slice.end - slice.begin;  // what the tile's 128 rows need of this slice

  if (threadIdx.x == 0) sm.init_barriers();
  __syncthreads();  // the barriers are initialized; from here on the warpgroups meet only through them
  if (wg == 0) {
    ws::produce(sm, &tmQ, &tmK, &tmV, a, s, n_blocks, slice.begin);
    return;
  }

  sm90::setmaxnreg_inc<C::kConsumerRegs>();
  const int c = wg - 1;
  Consumer<T, C, /*kSlice=*/true> w(a, s, sm, c, slice.begin, slice.end);
  ws::take_turns(w, sm, c, n_blocks);  // v4's rounds and turns over the slice's blocks
  // The slice's result, normalized over its keys alone: O_s and LSE_s of split blockIdx.y.
  write_partial(sa.o_part + blockIdx.y * sa.rows * C::kD, sa.lse_part + blockIdx.y * sa.rows, s, s.q_row0, w.row0,
                w.rO, w.m, w.l);
}

}  // namespace fs::flash_tma::v5
