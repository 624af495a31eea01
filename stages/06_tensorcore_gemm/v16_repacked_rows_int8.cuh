// flashstages · stage 06 · v16 — v15 for rows that are not 16-byte aligned: repack them first, into
// 16-byte rows with K padded to whole k-tiles, then run v15's 16-byte kernel (int8 → int32, exact)
//
// What changes from v15: where a base or a leading dimension of A or B is not 16-byte aligned (int8 rows
// of K = 1000 are only 8-byte aligned), v15 copies 8 bytes at a time, which in one wave of blocks costs
// about what checked copies do (NOTES.md). v16 instead spends one pass over A and B before the product:
//  1. One kernel (repack_rows_kernel, below) copies both operands into a workspace, 16 bytes per
//     thread-step, reading the rows as wide as their alignment allows (8, 4 or 1 byte), and writes every
//     row K' bytes long, K' = K rounded up to a multiple of the k-tile (64), the bytes past K zeros. A
//     zero adds nothing to a sum of products: the results are bit-identical.
//  2. v15's kernel runs on the copies with K': 16-byte copies, no K tail, every block unchecked.
//  3. On Hopper the product is launched as the repack's programmatic dependent (PDL): its launch and
//     its blocks' start-up overlap the repack; its blocks wait in griddepcontrol.wait (v15's kernel)
//     until the repack's writes are visible.
// The cost: (M + N)·K' bytes of workspace (stream-ordered) and one memory-bound pass. Only where both
// operands are stored k-contiguous (A untransposed, B transposed: cuBLASLt's int8 layout); every other
// layout, and rows already 16-byte aligned, are v15's call.
//
// Run: build/h100/stages/06_tensorcore_gemm/stage06_gemm --dtype int8 --trans-b 1 --version v16 --m 1000 --n 1000 --k 1000
//      build/h100/stages/06_tensorcore_gemm/stage06_bench --benchmark_filter='stage06/v1[56]/int8|cublaslt'
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/lib/gemm.h"

namespace fs::gemm_v16 {

constexpr int64_t kBK = 64;  // the k-tile of v15's kernel, in int8: K' is a multiple of it

// One operand stored k-contiguous: rows of cols = K bytes, ld apart, in; the same rows, ld_out = K'
// apart, out.
struct Repack {
  const int8_t* src;
  int64_t rows, cols, ld;
  int8_t* dst;
  int64_t ld_out;
  __host__ __device__ int64_t chunks() const { return rows * (ld_out / 16); }  // 16-byte chunks written
};

// Where A and B go, and the workspace they take (A's copy first, B's at the next 256-byte boundary).
struct RepackPlan {
  Repack a, b;
  int64_t b_offset, bytes;  // bytes: 0 when a size would overflow (refused as InvalidSize)
  int64_t k_padded;         // K' = K rounded up to whole k-tiles
};

// The plan for p, A untransposed and B transposed; dst pointers are set once the workspace exists.
inline RepackPlan plan_repack(const GemmParams& p) {
  RepackPlan plan{};
  const int64_t kt = kBK;
  plan.k_padded = (p.k + kt - 1) / kt * kt;
  plan.a = Repack{static_cast<const int8_t*>(p.a), p.m, p.k, p.lda, nullptr, plan.k_padded};
  plan.b = Repack{static_cast<const int8_t*>(p.b), p.n, p.k, p.ldb, nullptr, plan.k_padded};
  int64_t a_bytes = 0, b_bytes = 0;
  if (__builtin_mul_overflow(p.m, plan.k_padded, &a_bytes) || __builtin_mul_overflow(p.n, plan.k_padded, &b_bytes) ||
      a_bytes > INT64_MAX - 255 - b_bytes)
    return plan;
  plan.b_offset = (a_bytes + 255) / 256 * 256;
  plan.bytes = plan.b_offset + b_bytes;
  return plan;
}

// grid-stride over the 16-byte chunks of both copies, A's first; consecutive threads write consecutive
// chunks of a row (whole 512-byte runs per warp) and read the same bytes of the source row, kLoadBytes
// at a time (the alignment of both sources: 8, 4 or 1).
template <int kLoadBytes>
__global__ void repack_rows_kernel(Repack a, Repack b) {
  static_assert(kLoadBytes == 8 || kLoadBytes == 4 || kLoadBytes == 1, "a load width below 16 bytes");
#if __CUDA_ARCH__ >= 900
  // griddepcontrol.launch_dependents: once every block has been here, the product (launched as this
  // kernel's programmatic dependent) may be scheduled. Its blocks wait for this grid's writes before
  // reading (griddepcontrol.wait in v15's kernel); what starts early is only their launch.
  cudaTriggerProgrammaticLaunchCompletion();
#endif
  const int64_t chunks_a = a.chunks(), total = chunks_a + b.chunks();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const Repack r = i < chunks_a ? a : b;
    const int64_t j = i < chunks_a ? i : i - chunks_a, per_row = r.ld_out / 16;
    const int64_t row = j / per_row, col = j % per_row * 16;
    uint4 out = make_uint4(0, 0, 0, 0);  // the chunk, 16 bytes in four words
    if (col < r.cols) {
      const int8_t* s = r.src + row * r.ld + col;
      if (col + 16 <= r.cols && kLoadBytes > 1) {  // a whole chunk: 16 / kLoadBytes aligned loads
        if constexpr (kLoadBytes == 8) {
          const uint2 lo = reinterpret_cast<const uint2*>(s)[0], hi = reinterpret_cast<const uint2*>(s)[1];
          out = make_uint4(lo.x, lo.y, hi.x, hi.y);
        } else {
          const uint32_t* w = reinterpret_cast<const uint32_t*>(s);
          out = make_uint4(w[0], w[1], w[2], w[3]);
        }
      } else {  // the row's last, partial chunk, or rows aligned to one byte: byte by byte
        uint32_t w[4] = {0, 0, 0, 0};
#pragma unroll
        for (int e = 0; e < 16; ++e)
          if (col + e < r.cols) w[e / 4] |= uint32_t(uint8_t(s[e])) << (8 * (e % 4));
        out = make_uint4(w[0], w[1], w[2], w[3]);
      }
    }
    *reinterpret_cast<uint4*>(r.dst + row * r.ld_out + col) = out;
  }
}

}  // namespace fs::gemm_v16
