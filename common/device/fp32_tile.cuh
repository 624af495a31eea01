// flashstages — the fp32 tile loader of the CUDA-core attention kernels (stage 03's online softmax,
// stage 05's fp32 backward): rows of a [n, D] fp32 matrix into a shared tile whose row stride the
// caller picks (D + 1 there, so that the 16 lanes reading down one column hit 16 different banks).
// The tensor-core kernels' loader, into [rows][D+8] 16-bit tiles, is attn::load_tile in attention.cuh.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace fs::fp32 {

// Copies rows [row0, row0 + rows) of a [n, D] matrix into shared memory with row stride `ld`, 16 bytes
// per global load (src and D·4 multiples of 16); rows past n are zero so that tails contribute
// nothing. The kThreads threads of the block stride over the tile's float4s together.
template <int D, int kThreads>
__device__ __forceinline__ void load_tile(float* dst, int ld, const float* __restrict__ src, int64_t row0, int rows,
                                          int64_t n) {
  constexpr int kVecPerRow = D / 4;
  for (int e = threadIdx.x; e < rows * kVecPerRow; e += kThreads) {
    const int r = e / kVecPerRow, c = (e % kVecPerRow) * 4;
    float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
    if (row0 + r < n) x = *reinterpret_cast<const float4*>(src + (row0 + r) * D + c);
    dst[r * ld + c + 0] = x.x;
    dst[r * ld + c + 1] = x.y;
    dst[r * ld + c + 2] = x.z;
    dst[r * ld + c + 3] = x.w;
  }
}

}  // namespace fs::fp32
