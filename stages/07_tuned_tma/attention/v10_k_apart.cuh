// flashstages · stage 07 attention · v10 — K_j released apart from V_j: the producer refills K's half of a
// stage as soon as S_j = Q·K_jᵀ is done (fp16, bf16; D = 64, 128, 256).
//
// What changes from v8 (v7's tiles, the grid's last wave split over the keys): when a stage is free.
// In v3's loop a consumer holds two blocks at once, K_j for S_j and V_{j-1} for the product in flight
// under block j's softmax, and releases a stage only when its P·V is done; K_j's half of it has been
// idle since S_j completed, a softmax and a P·V earlier. With kStages stages the producer can then run
// only kStages − 2 blocks ahead of the products that need them. At D = 256, where a block's tiles take
// 64 KiB and only 2 stages fit beside Q's 64 KiB, that is none: every round waits for its K_j to be
// loaded after the previous P·V retired (why v3, v4, v7 and v8 fell a fifth behind v2 there).
//   Each stage gets a second release barrier, empty_k[st] (tma_attention.cuh, Config's KApart): a
// consumer warp arrives on it once S_j is done (Smem::release_k, in v3's first() and finish()), on
// empty[st] once P_j·V_j is, and the producer waits for each before it refills that half
// (ws::produce). K_{j+2} is then on its way while block j's softmax and P_{j-1}·V_{j-1} run. The
// kernel, the consumers and the last wave's split are v8's; only the configuration differs.
// Measured (H100, N = 8192, D = 256, B = 2, H = 8, fp16, non-causal; stage07_attention.json, every version and
// SDPA at D = 256 in one call):
//   <!-- value: [stage07/attention/v10/fp16/D:256/N:8192/causal:0] | .0f -->614<!-- /value --> TFLOPS, <!-- value: [stage07/attention/v10/fp16/D:256/N:8192/causal:0] / [stage07/attention/v8/fp16/D:256/N:8192/causal:0] | .2f -->1.31<!-- /value -->× v8, <!-- value: [stage07/attention/v10/fp16/D:256/N:8192/causal:0] / [stage07/attention/v2/fp16/D:256/N:8192/causal:0] | .2f -->1.08<!-- /value -->× v2 (the fastest there before it), <!-- value: [stage07/attention/v10/fp16/D:256/N:8192/causal:0] / [sdpa_cudnn/fp16/D:256/N:8192/causal:0@stage07_attention.json] | .2f -->0.99<!-- /value -->× cuDNN
//   ncu at its locked clock: 2.56 M cycles against v8's 4.05 M, the tensor pipe busy 82.6% of them against
//   52.3%. At D = 64 and 128 v10 runs v8's kernels.
//
// Run: build/h100/stages/07_tuned_tma/attention/stage07_attention --dtype fp16 --seq 8192 --dim 256 --batch 2 --heads 8 --version v10
#pragma once

#include <type_traits>

#include "tma_attention.cuh"
#include "v8_split_last_wave.cuh"

namespace fs::flash_tma::v10 {

// v8's tiles (v7's: three consumers at D = 64 and 128, two at 256), K released apart from V where a block
// has 2 stages (D = 256). With 3 or 4 stages (D = 128, 64) the producer already loads ahead, and the
// separate release measured level at D = 128 and 0.95–1.06× v8 at D = 64 (the stage README, "v10"):
// there v10 is v8.
template <int D>
using Config = ws::Config<D, v8::Config<D>::kBc, v8::Config<D>::kConsumers, 2, /*KApart=*/v8::Config<D>::kStages == 2>;
static_assert(std::is_same_v<Config<128>, v8::Config<128>> && Config<256>::kKApart, "v8's kernels but at D = 256");

}  // namespace fs::flash_tma::v10
