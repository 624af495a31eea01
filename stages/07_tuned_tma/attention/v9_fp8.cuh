// flashstages · stage 07 attention · v9 — fp8: Q, K, V in e4m3 with per-tensor scales, both products at
// the tensor cores' fp8 rate, O in bf16 (D = 128).
//
// What changes from v3 (its block and consumer loop, over fp8 tiles): both products are wgmma m64n128k32
// on e4m3 — 32 k per instruction from the same 32 bytes of shared memory that hold 16 fp16 k. Q, K, V
// stand for q_descale · Q, k_descale · K, v_descale · V: S carries q_descale · k_descale, folded into the
// softmax's scale on the host; P in [0, 1] is rounded to e4m3 for P·V_j while l sums the fp32 P; O picks
// up v_descale with 1 / l when it is written, in bf16. fp8 wgmma takes no transposed operand, so a
// pre-pass writes Vᵀ for the producer to load, its keys in the order P's registers already hold them
// (fp8.cuh: the products, the pre-pass, the Vᵀ tiles).
// Why it is faster: twice the multiply-adds per byte loaded and per instruction issued, at twice the fp16
// rate; the softmax between the products, which fp8 does not shorten, is now most of a round.
//
// Run: build/h100/stages/07_tuned_tma/attention/stage07_attention --dtype fp8_e4m3 --seq 8192 --dim 128 --batch 2 --heads 16 --version v9
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
#include "stages/07_tuned_tma/attention/producer.cuh"

namespace fs::flash_tma::v9 {

using namespace fs::attn;
using ws::Smem;

// grid: B·H·ceil(Nq / 128) blocks of three warpgroups (attn::locate). tmQ, tmK: Q as [B][H][Nq][D] and K as
// [B][KVH][Nk][D] with their strides, fp8, boxes of 128 columns × 128 rows; tmVt: Vᵀ as [B][KVH][D][padded
// Nk], contiguous, boxes of 128 keys × D rows (launch.cuh, fp8).
template <class C>
__global__ void __launch_bounds__(C::kThreads, 1)
    flash_tma_v9_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                        const __grid_constant__ CUtensorMap tmVt, const fp8::Args a) {
  extern __shared__ unsigned char smem_raw[];
  const Smem<C> sm(smem_raw);
  const Sequence s = locate(a.in, C::kBr, /*reverse_tiles=*/a.in.causal);
  const int wg = ws::warpgroup();
  const int64_t n_blocks = key_blocks(s, C::kBr, C::kBc, a.in.causal);

  if (threadIdx.x == 0) sm.init_barriers();
  __syncthreads();  // the barriers are initialized; from here on the warpgroups meet only through them
  if (wg == 0) {
    ws::produce<C, __nv_fp8_e4m3, fp8::VtColumns>(sm, &tmQ, &tmK, &tmVt, a.in, s, n_blocks);
    return;
  }

  sm90::setmaxnreg_inc<C::kConsumerRegs>();
  ws::Consumer<__nv_fp8_e4m3, C> w(a.in, s, sm, wg - 1);
  ws::run_rounds(w, sm, n_blocks);
  write_o_lse(a.o, a.in.o_strides.row, a.in.lse, s, w.row0, w.rO, w.m, w.l, a.v_descale);
}

}  // namespace fs::flash_tma::v9
