// Stage 07 gemm: the TMA + wgmma version v1 (fp16, bf16) — its launch, descriptor and C entry.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/lib/gemm_launch.h"
#include "stages/07_tuned_tma/gemm/gemm.h"
#include "stages/07_tuned_tma/gemm/v1_tma_wgmma.cuh"

namespace fs {

namespace {

// fp16 or bf16 in; C in fp32 or either 16-bit type. A's and B's bases and rows must be 16-byte
// multiples: what TMA reads (validation refuses anything else with a named code).
const GemmSupport kHalfSupport{Dtypes<DType::FP16, DType::BF16>::kMask,
                               Dtypes<DType::FP32, DType::FP16, DType::BF16>::kMask, /*operand_align=*/16};

struct V1 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream, const CUtensorMap& a, const CUtensorMap& b) {
    using namespace gemm_tma_v1;
    const bool c_pairs = gemm::pairs_aligned(p.c, p.ldc, p.c_dtype == FS_FP32 ? 4 : 2);
    auto go = [&](auto kernel) {
      constexpr std::size_t smem = Config<kTA, kTB>::kSmemBytes;
      if (const cudaError_t err = gemm::allow_smem(kernel, smem); err != cudaSuccess) return err;
      kernel<<<gemm::tile_count(p, kBM, kBN), kThreads, smem, stream>>>(a, b, p.m, p.n, p.k, p.alpha, p.beta, p.c,
                                                                        p.ldc, p.c_dtype, c_pairs);
      return cudaSuccess;
    };
    return p.ab_dtype == FS_FP16 ? go(gemm_tma_v1_kernel<__half, kTA, kTB>)
                                 : go(gemm_tma_v1_kernel<__nv_bfloat16, kTA, kTB>);
  }
};

// The tensor maps are encoded on every call (tensor_map.h says why not cached yet).
Status run_v1(const GemmParams& p, cudaStream_t stream) {
  CUtensorMap a, b;
  FS_RETURN_IF_ERROR((gemm_tma::encode_operand_maps<gemm_tma_v1::kBM, gemm_tma_v1::kBN>(p, &a, &b)));
  return gemm::launch_transposes<V1>(p, stream, a, b);
}

}  // namespace

const KernelDesc kGemmTmaV1 = gemm_kernel(
    {"fs_gemm_tma_v1", "stage07/gemm", "v1",
     "TMA into 128B-swizzled smem, wgmma m64n128k16 from descriptors, 2 mbarrier stages, one warpgroup, 128x128x64"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<gemm_tma_v1::Config>(), run_v1);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_tma_v1, fs::kGemmTmaV1)
