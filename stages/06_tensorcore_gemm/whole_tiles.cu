// Stage 06: v12 (fp16, bf16) and v13 (int8), v9 and v10 with whole k-tiles copied without bounds —
// their launches, descriptors and C entries. Rows that are not 16-byte aligned go to v9 and v10.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "common/lib/gemm_launch.h"
#include "gemm.h"
#include "v12_whole_tiles.cuh"
#include "v13_whole_tiles_int8.cuh"

namespace fs {

namespace {

const GemmSupport kHalfSupport{Dtypes<DType::FP16, DType::BF16>::kMask,
                               Dtypes<DType::FP32, DType::FP16, DType::BF16>::kMask};
const GemmSupport kInt8Support{Dtypes<DType::INT8>::kMask, Dtypes<DType::INT32>::kMask};

struct V12 {
  template <bool kTA, bool kTB, class T>
  static cudaError_t launch(const GemmParams& p, cudaStream_t stream) {
    constexpr std::size_t smem = gemm_v12::Config<kTA, kTB>::kSmemBytes;
    const auto kernel = gemm_v12::gemm_v12_kernel<T, kTA, kTB>;
    if (const cudaError_t err = gemm::allow_smem(kernel, smem); err != cudaSuccess) return err;
    const bool c_pairs = gemm::pairs_aligned(p.c, p.ldc, p.c_dtype == FS_FP32 ? 4 : 2);
    kernel<<<gemm::tile_count(p, gemm_v12::Tl::kBM, gemm_v12::Tl::kBN), gemm_v12::Tl::kThreads, smem, stream>>>(
        p.m, p.n, p.k, p.alpha, static_cast<const T*>(p.a), p.lda, static_cast<const T*>(p.b), p.ldb, p.beta, p.c,
        p.ldc, p.c_dtype, c_pairs);
    return cudaSuccess;
  }
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    return p.ab_dtype == FS_FP16 ? launch<kTA, kTB, __half>(p, stream) : launch<kTA, kTB, __nv_bfloat16>(p, stream);
  }
};

struct V13 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    using namespace gemm_v13;
    constexpr std::size_t smem = Config<kTA, kTB>::kSmemBytes;
    const auto kernel = gemm_v13_kernel<kTA, kTB>;
    if (const cudaError_t err = gemm::allow_smem(kernel, smem); err != cudaSuccess) return err;
    const bool c_pairs = gemm::pairs_aligned(p.c, p.ldc, 4);
    kernel<<<gemm::tile_count(p, kBM, kBN), kThreads, smem, stream>>>(
        p.m, p.n, p.k, p.alpha, static_cast<const int8_t*>(p.a), p.lda, static_cast<const int8_t*>(p.b), p.ldb, p.beta,
        static_cast<int32_t*>(p.c), p.ldc, c_pairs);
    return cudaSuccess;
  }
};

// 16-byte rows (bases and leading dimensions) take the new kernels; narrower ones the version before.
Status run_v12(const GemmParams& p, cudaStream_t stream) {
  if (gemm::operand_copy_bytes(p, 2) != 16) return kGemmV9.run_gemm(p, stream);
  return gemm::launch_transposes<V12>(p, stream);
}
Status run_v13(const GemmParams& p, cudaStream_t stream) {
  if (gemm::operand_copy_bytes(p, 1) != 16) return kGemmV10.run_gemm(p, stream);
  return gemm::launch_transposes<V13>(p, stream);
}

}  // namespace

// Both opt in to more than 48 KB of shared memory: v9's and v10's, the largest of the transpose instances.
const KernelDesc kGemmV12 = gemm_kernel(
    {"fs_gemm_v12", "stage06", "v12", "v9 with whole k-tiles copied without bounds checks (16-byte rows; v9 otherwise)"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<gemm_v12::Config>(), run_v12);
const KernelDesc kGemmV13 = gemm_kernel(
    {"fs_gemm_v13", "stage06", "v13", "v10 with whole k-tiles copied without bounds checks (16-byte rows; v10 otherwise)"},
    kInt8Support, kStageArchs, gemm::max_smem_bytes<gemm_v13::Config>(), run_v13);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v12, fs::kGemmV12)
FS_EXPORT_GEMM(fs_gemm_v13, fs::kGemmV13)
