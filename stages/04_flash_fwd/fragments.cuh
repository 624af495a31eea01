// flashstages · stage 04 — the register-level step every version shares unchanged: P (the fp32 C
// fragments of S) as the A operand of O += P·V, without leaving registers. The online softmax and the
// epilogue (online_softmax, write_o_lse) are shared with stage 07's wgmma forward, whose accumulators
// have the same layout: common/device/online_softmax.cuh, which also gives the register layout (rS,
// rO, m, l). What a tiled attention kernel needs beyond these (the launch arguments, where a block's
// rows live, the key-block ranges, the mask, the padded loaders) is shared with the other attention
// stages: common/device/attention.cuh. Every version's kernel file includes this one.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/attention.cuh"
#include "common/device/online_softmax.cuh"
#include "common/device/sm80.cuh"

namespace fs::flash {

using namespace fs::attn;
using namespace fs::sm80;

// P (fp32 C fragments) → the A fragment of the kk-th 16-key step of O += P·V for row tile mt, rounded
// to T, without leaving registers: the C layout of key tiles 2kk and 2kk+1 is exactly that A layout.
// Converting one step at a time, just before its mma, lets each fp32 score die as soon as it is packed.
template <class T, int kMT, int kNT>
__device__ __forceinline__ void p_fragment(const float (&rS)[kMT][kNT][4], int mt, int kk, uint32_t (&a)[4]) {
  a[0] = pack2<T>(rS[mt][2 * kk][0], rS[mt][2 * kk][1]);          // row g,     keys 2t, 2t+1
  a[1] = pack2<T>(rS[mt][2 * kk][2], rS[mt][2 * kk][3]);          // row g + 8, keys 2t, 2t+1
  a[2] = pack2<T>(rS[mt][2 * kk + 1][0], rS[mt][2 * kk + 1][1]);  // row g,     keys 8 + 2t, 8 + 2t+1
  a[3] = pack2<T>(rS[mt][2 * kk + 1][2], rS[mt][2 * kk + 1][3]);  // row g + 8, keys 8 + 2t, 8 + 2t+1
}

}  // namespace fs::flash
