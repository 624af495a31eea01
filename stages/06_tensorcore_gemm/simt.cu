// Stage 06: the SIMT fp32 versions v1–v5 — their launches, descriptors and C entries.
#include "gemm.h"
#include "common/lib/gemm_launch.h"
#include "v1_smem_tiling.cuh"
#include "v2_register_blocking.cuh"
#include "v3_vectorized.cuh"
#include "v4_warp_tiling.cuh"
#include "v5_double_buffering.cuh"

namespace fs {

namespace {

const GemmSupport kSimtSupport{Dtypes<DType::FP32>::kMask, Dtypes<DType::FP32>::kMask};

// The kernels' argument lists: v1 and v2 load element by element; v3–v5 also take whether A and B
// allow float4 loads (16-byte aligned base, leading dimension a multiple of 4).
using ScalarKernel = void (*)(int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                              float, float*, int64_t);
using VectorKernel = void (*)(int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                              float, float*, int64_t, bool, bool);

cudaError_t launch(ScalarKernel kernel, int bm, int bn, dim3 block, const GemmParams& p, cudaStream_t stream) {
  kernel<<<gemm::tile_count(p, bm, bn), block, 0, stream>>>(
      p.m, p.n, p.k, p.alpha, static_cast<const float*>(p.a), p.lda, static_cast<const float*>(p.b), p.ldb,
      p.beta, static_cast<float*>(p.c), p.ldc);
  return cudaSuccess;
}

cudaError_t launch(VectorKernel kernel, int bm, int bn, dim3 block, const GemmParams& p, cudaStream_t stream) {
  kernel<<<gemm::tile_count(p, bm, bn), block, 0, stream>>>(
      p.m, p.n, p.k, p.alpha, static_cast<const float*>(p.a), p.lda, static_cast<const float*>(p.b), p.ldb,
      p.beta, static_cast<float*>(p.c), p.ldc, gemm::rows_16b_aligned(p.a, p.lda, 4),
      gemm::rows_16b_aligned(p.b, p.ldb, 4));
  return cudaSuccess;
}

struct V1 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t s) {
    using namespace gemm_v1;
    return launch(gemm_v1_kernel<kTA, kTB>, kTile, kTile, dim3(kTile, kTile), p, s);
  }
};
struct V2 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t s) {
    using namespace gemm_v2;
    return launch(gemm_v2_kernel<kTA, kTB>, kBM, kBN, kThreads, p, s);
  }
};
struct V3 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t s) {
    using namespace gemm_v3;
    return launch(gemm_v3_kernel<kTA, kTB>, kBM, kBN, kThreads, p, s);
  }
};
struct V4 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t s) {
    using namespace gemm_v4;
    return launch(gemm_v4_kernel<kTA, kTB>, kBM, kBN, kThreads, p, s);
  }
};
struct V5 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t s) {
    using namespace gemm_v5;
    return launch(gemm_v5_kernel<kTA, kTB>, kBM, kBN, kThreads, p, s);
  }
};

}  // namespace

// Shared memory is static in every SIMT version (at most 16 KB): nothing dynamic to check.
const KernelDesc kGemmV1 = gemm_kernel(
    {"fs_gemm_v1", "stage06", "v1", "SIMT fp32: 32x32 shared-memory tiles, one output per thread"}, kSimtSupport,
    kStageArchs, 0, gemm::launch_transposes<V1>);
const KernelDesc kGemmV2 = gemm_kernel(
    {"fs_gemm_v2", "stage06", "v2", "SIMT fp32: 128x128 tiles, 8x8 outputs per thread in registers"}, kSimtSupport,
    kStageArchs, 0, gemm::launch_transposes<V2>);
const KernelDesc kGemmV3 = gemm_kernel({"fs_gemm_v3", "stage06", "v3", "SIMT fp32: 128-bit global and shared loads"},
                                       kSimtSupport, kStageArchs, 0, gemm::launch_transposes<V3>);
const KernelDesc kGemmV4 = gemm_kernel(
    {"fs_gemm_v4", "stage06", "v4", "SIMT fp32: 4 warps of 64x64, 8x16 outputs per thread, conflict-free LDS.128"},
    kSimtSupport, kStageArchs, 0, gemm::launch_transposes<V4>);
const KernelDesc kGemmV5 = gemm_kernel(
    {"fs_gemm_v5", "stage06", "v5", "SIMT fp32: double-buffered shared memory, next tile in flight"}, kSimtSupport,
    kStageArchs, 0, gemm::launch_transposes<V5>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v1, fs::kGemmV1)
FS_EXPORT_GEMM(fs_gemm_v2, fs::kGemmV2)
FS_EXPORT_GEMM(fs_gemm_v3, fs::kGemmV3)
FS_EXPORT_GEMM(fs_gemm_v4, fs::kGemmV4)
FS_EXPORT_GEMM(fs_gemm_v5, fs::kGemmV5)
