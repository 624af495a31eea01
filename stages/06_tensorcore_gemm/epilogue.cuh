// Stage 06: the store of C through shared memory, as the WMMA versions (v6–v8) share it: their
// fragments' layout is opaque, so the accumulators are staged in shared memory first. The alpha/beta
// epilogue itself (v1 on) and the pair store from mma.sync registers (v9 on), which stage 07 shares,
// are common/device/gemm_epilogue.cuh.
#pragma once

#include <cstdint>

#include "common/device/gemm_epilogue.cuh"

namespace fs::gemm {

// Writes a rows × cols accumulator tile staged in shared memory (row stride ld) to C at (m0, n0)
// through the epilogue. `count` threads, this one being `index`, stride over the elements so that
// neighbouring threads store neighbouring columns (coalesced).
template <class TOut, class TAcc>
__device__ __forceinline__ void store_staged(TOut* C, int64_t ldc, int64_t M, int64_t N, int64_t m0, int64_t n0,
                                             const TAcc* s, int ld, int rows, int cols, float alpha, float beta,
                                             int index, int count) {
  for (int e = index; e < rows * cols; e += count) {
    const int r = e / cols, c = e % cols;
    if (m0 + r < M && n0 + c < N) epilogue(C + (m0 + r) * ldc + n0 + c, s[r * ld + c], alpha, beta);
  }
}

}  // namespace fs::gemm
