// Stage 06: the raw mma.sync version v9 (fp16, bf16) — its launch, descriptor and C entry (v10, int8,
// is mma_int8.cu: a translation unit each, so that their many instances compile in parallel).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "gemm.h"
#include "common/lib/gemm_launch.h"
#include "v9_mma_sync.cuh"

namespace fs {

namespace {

const GemmSupport kHalfSupport{Dtypes<DType::FP16, DType::BF16>::kMask,
                               Dtypes<DType::FP32, DType::FP16, DType::BF16>::kMask};

// C (fp32, fp16 or bf16) is written in pairs where ldc and the base allow.
struct V9 {
  template <class T, bool kTA, bool kTB>
  static cudaError_t run_typed(const GemmParams& p, cudaStream_t stream) {
    using namespace gemm_v9;
    constexpr std::size_t smem = Config<kTA, kTB>::kSmemBytes;
    const bool c_pairs = gemm::pairs_aligned(p.c, p.ldc, p.c_dtype == FS_FP32 ? 4 : 2);
    return gemm::dispatch_copy_bytes<2>(gemm::operand_copy_bytes(p, 2), [&](auto w) {
      const auto kernel = gemm_v9_kernel<T, kTA, kTB, decltype(w)::value>;
      if (const cudaError_t err = gemm::allow_smem(kernel, smem); err != cudaSuccess) return err;
      kernel<<<gemm::tile_count(p, kBM, kBN), kThreads, smem, stream>>>(
          p.m, p.n, p.k, p.alpha, static_cast<const T*>(p.a), p.lda, static_cast<const T*>(p.b), p.ldb, p.beta, p.c,
          p.ldc, p.c_dtype, c_pairs);
      return cudaSuccess;
    });
  }
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    return p.ab_dtype == FS_FP16 ? run_typed<__half, kTA, kTB>(p, stream)
                                 : run_typed<__nv_bfloat16, kTA, kTB>(p, stream);
  }
};

}  // namespace

// v9 opts in to more than 48 KB of shared memory: the largest of its transpose instances.
const KernelDesc kGemmV9 = gemm_kernel(
    {"fs_gemm_v9", "stage06", "v9",
     "mma.sync m16n8k16 fp16/bf16: ldmatrix, 128x256x32 tiles, 4-stage swizzled cp.async, no padding"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<gemm_v9::Config>(), gemm::launch_transposes<V9>);
}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v9, fs::kGemmV9)
