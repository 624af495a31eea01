// flashstages · stage 07 attention · v13 — part of the exponentials on the FMA pipe: v12 with every eighth
// 8-column tile of P computed by a polynomial instead of the SFU's ex2 (fp8, D = 128).
//
// What changes from v12 (every one of a round's 64 × 128 exponentials on the SFU, 16 per clock on an SM:
// as many cycles as the other consumer's products take at fp8's rate, so a softmax, which is more than
// its exponentials, outlasts them): the scores of 8-column tiles 7 and 15 of each 128-key block, 1 in 8, take
// attn::exp2_fma (online_softmax.cuh): the integer and fraction parts of x by a float addition, 2^f by a
// cubic in three fused multiply-adds, 2^j added into the exponent bits, 0 below -125 (−∞ too) — about
// ten FMA- and ALU-pipe instructions for one SFU one (ws::Consumer's kFmaEvery).
// Why it is faster: per consumer warp and round the SFU works 8 cycles per ex2, 66 of them (528 cycles,
// beside the other consumer's 512 cycles of products), while the warp's other instructions, a few
// hundred, leave its issue slots room; moving 8 of its 64 exponentials takes 64 cycles off the SFU for
// about 72 issue slots. On fp16 the same move cost 1–6% (NOTES.md): there the SFU was not the limit.
// The polynomial's relative error, under 7.5e-5, is far below what rounding P to e4m3 costs.
//
// Run: build/h100/stages/07_tuned_tma/attention/stage07_attention --dtype fp8_e4m3 --seq 8192 --dim 128 --batch 2 --heads 16 --version v13
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

namespace fs::flash_tma::v13 {

using namespace fs::attn;
using ws::Smem;

// One 8-column tile in kFmaEvery of each block's scores takes its exponentials on the FMA pipe: 2 of the
// 16 tiles of a 128-key block, 8 of a thread's 64 scores a round.
constexpr int kFmaEvery = 8;

// grid: B·H·ceil(Nq / 128) blocks of three warpgroups (attn::locate). tmQ, tmK: Q as [B][H][Nq][D] and K as
// [B][KVH][Nk][D] with their strides, fp8, boxes of 128 columns × 128 rows; tmVt: Vᵀ as [B][KVH][D][padded
// Nk], contiguous, boxes of 128 keys × D rows (launch.cuh, fp8).
template <class C>
__global__ void __launch_bounds__(C::kThreads, 1)
    flash_tma_v13_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
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
  ws::Consumer<__nv_fp8_e4m3, C, /*kSlice=*/false, /*kRunOn=*/false, kFmaEvery> w(a.in, s, sm, c);
  ws::take_turns(w, sm, c, n_blocks);  // v12's turns
  write_o_lse(a.o, a.in.o_strides.row, a.in.lse, s, w.row0, w.rO, w.m, w.l, a.v_descale);
}

}  // namespace fs::flash_tma::v13
