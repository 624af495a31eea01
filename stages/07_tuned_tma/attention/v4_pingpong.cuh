// flashstages · stage 07 attention · v4 — pingpong: the two consumer warpgroups take turns at the tensor
// cores, so that one's softmax runs under the other's products by arrangement (fp16, bf16; D = 64, 128, 256).
//
// What changes from v3 (the two consumers issue whenever they are ready, so their wgmma groups
// interleave in whatever order they arrive, and one's S_j can queue behind the other's P·V): the
// consumers issue in turns. Before its round j of products a consumer waits at its turn's named barrier
// (bar.sync, 256 threads), issues S_j and P_{j-1}·V_{j-1}, and waves the other on (bar.arrive on the
// other's barrier) before its own softmax (FlashAttention-3's pingpong; ws::take_turns, pingpong.cuh,
// which v5 and v6 keep). The turns are counted over the tile's key blocks, the same for both: a
// consumer with fewer blocks of its own takes its remaining turns empty, releasing in each the block it
// skips once it has landed.
// Why it is faster: the tensor cores take warpgroup 1's round, then warpgroup 2's, then 1's …, and each
// softmax runs while the other warpgroup's round is on the tensor cores.
// What it still lacks: a grid with fewer tiles than SMs leaves SMs idle (v5 splits the keys).
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
#include "stages/07_tuned_tma/attention/block.cuh"
#include "stages/07_tuned_tma/attention/mainloop.cuh"
#include "stages/07_tuned_tma/attention/pingpong.cuh"
#include "stages/07_tuned_tma/attention/producer.cuh"

namespace fs::flash_tma::v4 {

using namespace fs::attn;
// v2's block and v3's consumer steps; v4 adds the turns between them.
using ws::Config;
using ws::Consumer;
using ws::kWarpgroup;
using ws::Smem;

// grid: B·H·ceil(Nq / Br) blocks of three warpgroups (attn::locate, Br = 128). tmQ: Q as [B][H][Nq][D]
// with boxes of 64 columns × 128 rows; tmK, tmV: K and V as [B][KVH][Nk][D], boxes of 64 × Bc (launch.cuh).
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
  ws::take_turns(w, sm, c, n_blocks);  // v3's rounds, in turns with the other consumer
  w.store();
}

}  // namespace fs::flash_tma::v4
