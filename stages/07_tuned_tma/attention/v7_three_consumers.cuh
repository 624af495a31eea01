// flashstages · stage 07 attention · v7 — three consumer warpgroups: 192 query rows per block at D = 64 and
// 128, each K/V tile read by three consumers (fp16, bf16; D = 64, 128, 256).
//
// What changes from v3 (a producer and two consumer warpgroups, Br = 128; each consumer keeps
// P_{j-1}·V_{j-1} in flight under block j's softmax; v4 then orders the two consumers' rounds):
//   The block has three consumers (512 threads, Br = 192): every K_j, V_j the producer loads serves
//   192 query rows instead of 128, and each of an SM's four sub-partitions runs three consumer warps,
//   one of each consumer, so that while two of them are in their softmax the third's products can
//   still run. The block's work is v3's (v3::run_tile: its consumers' steps and loop) over this file's
//   Config; no turns: v4's pingpong alternates two consumers, and with three the tensor cores take
//   whichever round is issued.
//   The price is registers: 65536 / 512 = 128 per thread at launch, the producer keeps 24, each
//   consumer gets 160 (ws::consumer_regs) where v2 to v6 have 240. S (Bc/2), P (Bc/4) and O (D/2)
//   must fit beside the addresses: Bc = 128 at D = 64 (S 64, P 32, O 32), Bc = 80 at D = 128
//   (40, 20, 64); at D = 256 O alone is 128 registers, so v7 keeps v3's two consumers there.
//   At D = 128 80 keys is the widest block that fits: with 96 (48, 24, 64) ptxas spills and serializes
//   the wgmma (info C7512), 0.88× the speed of 80; 64 keys, v7's first tile, measured 0.98–0.99× of it
//   (v8, N = 8192, both dtypes and masks, three rounds; the stage README, "v7").
// Measured (H100, N = 8192, fp16, non-causal; stage07_attention.json, one run with every version, stage 04's v5, SDPA):
//   D = 64:  <!-- value: [stage07/attention/v7/fp16/D:64/N:8192/causal:0] | .0f -->494<!-- /value --> TFLOPS, <!-- value: [stage07/attention/v7/fp16/D:64/N:8192/causal:0] / max([stage07/attention/v2/fp16/D:64/N:8192/causal:0], [stage07/attention/v3/fp16/D:64/N:8192/causal:0], [stage07/attention/v4/fp16/D:64/N:8192/causal:0]) | .2f -->1.10<!-- /value -->× the best of v2–v4, <!-- value: [stage07/attention/v7/fp16/D:64/N:8192/causal:0] / [sdpa_cudnn/fp16/D:64/N:8192/causal:0@stage07_attention.json] | .2f -->1.12<!-- /value -->× cuDNN
//   D = 128: <!-- value: [stage07/attention/v7/fp16/D:128/N:8192/causal:0] | .0f -->604<!-- /value --> TFLOPS, <!-- value: [stage07/attention/v7/fp16/D:128/N:8192/causal:0] / max([stage07/attention/v2/fp16/D:128/N:8192/causal:0], [stage07/attention/v3/fp16/D:128/N:8192/causal:0], [stage07/attention/v4/fp16/D:128/N:8192/causal:0]) | .2f -->1.03<!-- /value -->× the best of v2–v4, <!-- value: [stage07/attention/v7/fp16/D:128/N:8192/causal:0] / [sdpa_cudnn/fp16/D:128/N:8192/causal:0@stage07_attention.json] | .2f -->1.05<!-- /value -->× cuDNN
//   ncu at its locked clock: tensor pipe busy 57.9% of the cycles at D = 64 (v4 49.2%, cuDNN 52.2%) and,
//   with 80-key blocks, 80.7% at D = 128 (cuDNN 77.2%; with 64 keys 77.2%); the stage README, "v7".
//
// Run: build/h100/stages/07_tuned_tma/attention/stage07_attention --dtype fp16 --seq 8192 --dim 64 --batch 2 --heads 32 --version v7
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include "common/device/attention.cuh"
#include "tma_attention.cuh"
#include "v3_intra_warpgroup_overlap.cuh"

namespace fs::flash_tma::v7 {

using namespace fs::attn;

// The tile of each head dim (above): three consumers where their 160 registers hold S, P and O.
template <int D>
using Config = ws::Config<D, D == 64 ? 128 : D == 128 ? 80 : ws::default_bc(D), D <= 128 ? 3 : 2>;

// grid: B·H·ceil(Nq / Br) blocks of 1 + C::kConsumers warpgroups (attn::locate, Br = 192 or 128). tmQ: Q
// as [B·H][Nq][D] with boxes of 64 columns × Br rows; tmK, tmV: K and V as [B·KVH][Nk][D], boxes of
// 64 × Bc (launch.cuh). The block's work is v3's (v3::run_tile), for C's consumer count.
template <class T, class C>
__global__ void __launch_bounds__(C::kThreads, 1)
    flash_tma_v7_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                        const __grid_constant__ CUtensorMap tmV, const Args<T> a) {
  v3::run_tile<T, C>(&tmQ, &tmK, &tmV, a);
}

}  // namespace fs::flash_tma::v7
