// flashstages · stage 07 attention · v7 — three consumer warpgroups: 192 query rows per block at D = 64 and
// 128, each K/V tile read by three consumers (fp16, bf16; D = 64, 128, 256).
//
// What changes from v3 (a producer and two consumer warpgroups, Br = 128; each consumer keeps
// P_{j-1}·V_{j-1} in flight under block j's softmax): the block has three consumers (512 threads,
// Br = 192), with v3's kernel and consumer loop over this file's Config; no turns (v4's pingpong
// alternates two consumers; with three the tensor cores take whichever round is issued).
// The price is registers: 65536 / 512 = 128 per thread at launch, the producer keeps 24, each consumer
// gets 160 (ws::consumer_regs) where v2 to v6 have 240. S (Bc/2), P (Bc/4) and O (D/2) must fit beside
// the addresses: Bc = 128 at D = 64 (S 64, P 32, O 32), Bc = 80 at D = 128 (40, 20, 64), the widest
// block that fits there (with 96 keys ptxas spills and serializes the wgmma, info C7512); at D = 256 O
// alone is 128 registers, so v7 keeps v3's two consumers there.
// Why it is faster: every K_j, V_j the producer loads serves 192 query rows instead of 128, and each
// of an SM's four sub-partitions runs three consumer warps, so that while two of them are in their
// softmax the third's products can still run.
// What it still lacks: a grid of equal tiles ends in a partial wave that leaves SMs idle (v8 splits it).
//
// Run: build/h100/stages/07_tuned_tma/attention/stage07_attention --dtype fp16 --seq 8192 --dim 64 --batch 2 --heads 32 --version v7
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/attention.cuh"
#include "common/device/sm90.cuh"
#include "stages/07_tuned_tma/attention/block.cuh"
#include "stages/07_tuned_tma/attention/mainloop.cuh"
#include "stages/07_tuned_tma/attention/producer.cuh"

namespace fs::flash_tma::v7 {

using namespace fs::attn;
using ws::Consumer;
using ws::Smem;

// The tile of each head dim (above): three consumers where their 160 registers hold S, P and O.
template <int D>
using Config = ws::Config<D, D == 64 ? 128 : D == 128 ? 80 : ws::default_bc(D), D <= 128 ? 3 : 2>;

// grid: B·H·ceil(Nq / Br) blocks of 1 + C::kConsumers warpgroups (attn::locate, Br = 192 or 128). tmQ: Q
// as [B][H][Nq][D] with boxes of 64 columns × Br rows; tmK, tmV: K and V as [B][KVH][Nk][D], boxes of
// 64 × Bc (launch.cuh). The block's work is v3's, for C's consumer count.
template <class T, class C>
__global__ void __launch_bounds__(C::kThreads, 1)
    flash_tma_v7_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
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

}  // namespace fs::flash_tma::v7
