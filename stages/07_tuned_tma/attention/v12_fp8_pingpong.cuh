// flashstages · stage 07 attention · v12 — fp8 in turns: v9's two consumers take turns at the tensor cores
// (v4's pingpong), so that one's exponentials run under the other's products (D = 128).
//
// What changes from v9 (two consumers issue whenever they are ready, so both can reach their softmax at
// once, queue on the special-function unit for their exponentials and leave the tensor cores idle): the
// consumers take turns (ws::take_turns, pingpong.cuh). Before its round j a consumer waits for its turn,
// issues S_j and P_{j-1}·V_{j-1}, waves the other on and runs its softmax while the other's round is on
// the tensor cores. On fp16 the turns measured level with v3 (v4): there the tensor cores, not the
// softmax, were the longer part of a round.
// Why it is faster: at D = 128 on fp8 a round's exponentials (64 × 128 per consumer, 16 per clock on
// an SM) take as many cycles as its two products (2 · 64 · 128 · 128 multiply-adds, 4096 per clock at
// fp8's rate): the two overlap only when one consumer's exponentials meet the other's products, which
// is what the turns arrange.
// What it still lacks: the pre-pass that writes Vᵀ runs before the kernel, not under it.
//
// Run: build/h100/stages/07_tuned_tma/attention/stage07_attention --dtype fp8_e4m3 --seq 8192 --dim 128 --batch 2 --heads 16 --version v12
#pragma once

#include <cuda.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/attention.cuh"
#include "common/device/online_softmax.cuh"
#include "common/device/sm90.cuh"
#include "stages/07_tuned_tma/attention/block.cuh"
#include "stages/07_tuned_tma/attention/fp8.cuh"
#include "stages/07_tuned_tma/attention/mainloop.cuh"
#include "stages/07_tuned_tma/attention/pingpong.cuh"
#include "stages/07_tuned_tma/attention/producer.cuh"

namespace fs::flash_tma::v12 {

using namespace fs::attn;
using ws::Smem;

// grid: B·H·ceil(Nq / 128) blocks of three warpgroups (attn::locate). tmQ, tmK: Q as [B][H][Nq][D] and K as
// [B][KVH][Nk][D] with their strides, fp8, boxes of 128 columns × 128 rows; tmVt: Vᵀ as [B][KVH][D][padded
// Nk], contiguous, boxes of 128 keys × D rows (launch.cuh, fp8).
template <class C>
__global__ void __launch_bounds__(C::kThreads, 1)
    flash_tma_v12_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                         const __grid_constant__ CUtensorMap tmVt, const fp8::Args a) {
  extern __shared__ unsigned char smem_raw[];
  const Smem<C> sm(smem_raw);
  const Sequence s = locate(a.in, C::kBr, /*reverse_tiles=*/a.in.causal);
  const int wg = ws::warpgroup();
  const int64_t n_blocks = key_blocks(s, C::kBr, C::kBc, a.in.causal);  // what the tile's 128 rows need

  if (threadIdx.x == 0) sm.init_barriers();
  __syncthreads();  // the barriers are initialized; from here on the warpgroups meet only through them
  if (wg == 0) {
    ws::produce<C, __nv_fp8_e4m3, fp8::VtColumns>(sm, &tmQ, &tmK, &tmVt, a.in, s, n_blocks);
    return;
  }

  sm90::setmaxnreg_inc<C::kConsumerRegs>();
  const int c = wg - 1;
  ws::Consumer<__nv_fp8_e4m3, C> w(a.in, s, sm, c);
  ws::take_turns(w, sm, c, n_blocks);  // v9's rounds, in turns with the other consumer
  write_o_lse(a.o, a.in.o_strides.row, a.in.lse, s, w.row0, w.rO, w.m, w.l, a.v_descale);
}

}  // namespace fs::flash_tma::v12
