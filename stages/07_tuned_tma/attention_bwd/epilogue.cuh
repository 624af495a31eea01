// Stage 07 attention backward, role header: what every version's consumers do with their registers
// outside the products — P read back from its 16-bit A fragments, and the end of the walk, where dK and
// dV leave the registers they were summed in.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "common/device/attention.cuh"
#include "common/device/bwd_args.cuh"
#include "common/device/sm80.cuh"

namespace fs::flash_bwd_tma {

// One 16-bit element of a packed pair (an A fragment's register), as fp32.
template <class T>
__device__ __forceinline__ float half_to_float(uint16_t bits) {
  if constexpr (std::is_same_v<T, __half>)
    return __half2float(__ushort_as_half(bits));
  else
    return __bfloat162float(__ushort_as_bfloat16(bits));
}

// dK = scale · Σ dSᵀ Q and dV = Σ Pᵀ dO of this thread's two key rows, key_l and key_l + 8 of the block
// (the m64nD accumulator layout: rdK[n][2·e2 + {0, 1}] are columns 8n + 2·t4 + {0, 1} of row key_l + 8·e2),
// rounded to T, two columns per store; the key rows the block owns up to nk_rows (a padded entry's rows
// past nk get zeros). The block's rows are worked out again rather than kept in registers through the
// walk (for a packed batch, two loads of cu_seqlens). block: the block's place in the key blocks' order
// (attn::key_block_of), blockIdx.x unless the kernel dispatches them in another order (v11).
template <class T, int D>
__device__ __forceinline__ void write_dk_dv(const bwd::Args<T>& a, int Bc, int key_l, int t4, const float (&rdK)[D / 8][4],
                                            const float (&rdV)[D / 8][4], int64_t block = -1) {
  const attn::KeyBlock kbe = attn::key_block_of</*kVarlen=*/true>(a, Bc, block < 0 ? int64_t(blockIdx.x) : block);
#pragma unroll
  for (int e2 = 0; e2 < 2; ++e2) {
    const int64_t j = kbe.k0 + key_l + 8 * e2;
    if (j >= kbe.nk_rows) continue;
    const bool real = j < kbe.nk;
    T* dk_row = a.dk + kbe.k_at + j * a.k_strides.row + 2 * t4;
    T* dv_row = a.dv + kbe.v_at + j * a.v_strides.row + 2 * t4;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      const float k0v = real ? a.scale * rdK[n][2 * e2] : 0.0f, k1v = real ? a.scale * rdK[n][2 * e2 + 1] : 0.0f;
      const float v0v = real ? rdV[n][2 * e2] : 0.0f, v1v = real ? rdV[n][2 * e2 + 1] : 0.0f;
      *reinterpret_cast<uint32_t*>(dk_row + 8 * n) = sm80::pack2<T>(k0v, k1v);
      *reinterpret_cast<uint32_t*>(dv_row + 8 * n) = sm80::pack2<T>(v0v, v1v);
    }
  }
}

}  // namespace fs::flash_bwd_tma
