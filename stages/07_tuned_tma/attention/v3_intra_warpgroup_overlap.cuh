// flashstages · stage 07 attention · v3 — intra-warpgroup overlap: the softmax of key block j runs while
// the tensor cores compute P_{j-1}·V_{j-1} (fp16, bf16; D = 64, 128, 256).
//
// What changes from v2 (each consumer does, per block: S_j, wait, softmax, O += P_j·V_j, wait — its
// tensor-core work and its softmax alternate): each consumer keeps one product in flight across its
// softmax. Per block j ≥ 1 it issues S_j and then O += P_{j-1}·V_{j-1} (P of the previous block, kept as
// A fragments) as two wgmma groups, waits only for the first, runs the mask and the softmax of S_j
// while P_{j-1}·V_{j-1} runs, then waits for that too and only then rescales O by block j's factors
// (the online softmax split into softmax_scores and rescale_o, common/device/online_softmax.cuh). The
// consumer's steps and rounds are mainloop.cuh's (ws::Consumer, ws::run_rounds), which later versions
// keep; the producer and the block are v2's.
// Why it is faster: the tensor cores have the consumer's own product to run under its softmax, not only
// the other consumer's. At D = 64 the block's two products are half as long and the softmax is not, so
// there is less product to hide it under.
// What it still lacks: the two consumers' rounds interleave in whatever order they arrive (v4 orders
// them); each K/V tile serves 128 rows (v7: 192).
//
// Run: build/h100/stages/07_tuned_tma/attention/stage07_attention --dtype fp16 --seq 8192 --dim 128 --batch 2 --heads 16 --version v3
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
#include "stages/07_tuned_tma/attention/producer.cuh"

namespace fs::flash_tma::v3 {

using namespace fs::attn;
// v2's block: three warpgroups, the register split, the tile shapes and stages, the barriers, the producer.
using ws::Config;
using ws::Consumer;
using ws::kWarpgroup;
using ws::Smem;

// grid: B·H·ceil(Nq / Br) blocks of three warpgroups (attn::locate, Br = 128). tmQ: Q as [B][H][Nq][D]
// with boxes of 64 columns × 128 rows; tmK, tmV: K and V as [B][KVH][Nk][D], boxes of 64 × Bc (launch.cuh).
// One block's work: its tile of C::kBr query rows, a producer and C::kConsumers consumers.
template <class T, class C>
__global__ void __launch_bounds__(C::kThreads, 1)
    flash_tma_v3_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                        const __grid_constant__ CUtensorMap tmV, const Args<T> a) {
  extern __shared__ unsigned char smem_raw[];
  const Smem<C> sm(smem_raw);
  const Sequence s = locate(a, C::kBr, /*reverse_tiles=*/a.causal);
  const int wg = ws::warpgroup();
  const int64_t n_blocks = key_blocks(s, C::kBr, C::kBc, a.causal);  // what the tile's Br rows need

  if (threadIdx.x == 0) sm.init_barriers();
  __syncthreads();  // the barriers are initialized; from here on the warpgroups meet only through them
  if (wg == 0) {
    ws::produce(sm, &tmQ, &tmK, &tmV, a, s, n_blocks);
    return;
  }

  sm90::setmaxnreg_inc<C::kConsumerRegs>();
  Consumer<T, C> w(a, s, sm, wg - 1);
  ws::run_rounds(w, sm, n_blocks);  // its own blocks with one product in flight, then the skipped ones
  w.store();
}

}  // namespace fs::flash_tma::v3
