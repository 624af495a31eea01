// Stage 06: v12 (fp16, bf16) and v13 (int8), v9 and v10 with whole k-tiles copied without bounds, and
// v14 (fp16, bf16), v12 with every block's main loop so — their launches, descriptors and C entries.
// Rows that are not 16-byte aligned go to v9 and v10.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "common/lib/gemm_launch.h"
#include "gemm.h"
#include "mma_launch.h"
#include "v12_whole_tiles.cuh"
#include "v13_whole_tiles_int8.cuh"
#include "v14_shifted_edges.cuh"

namespace fs {

namespace {

struct V12 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    using gemm_v12::Tl;
    constexpr std::size_t smem = gemm_v12::Config<kTA, kTB>::kSmemBytes;
    return p.ab_dtype == FS_FP16
               ? gemm::launch_half_kernel<__half>(gemm_v12::gemm_v12_kernel<__half, kTA, kTB>, smem, Tl::kBM, Tl::kBN,
                                                  Tl::kThreads, p, stream)
               : gemm::launch_half_kernel<__nv_bfloat16>(gemm_v12::gemm_v12_kernel<__nv_bfloat16, kTA, kTB>, smem,
                                                         Tl::kBM, Tl::kBN, Tl::kThreads, p, stream);
  }
};

struct V14 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    using gemm_v14::Tl;
    constexpr std::size_t smem = gemm_v14::Config<kTA, kTB>::kSmemBytes;
    return p.ab_dtype == FS_FP16
               ? gemm::launch_half_kernel<__half>(gemm_v14::gemm_v14_kernel<__half, kTA, kTB>, smem, Tl::kBM, Tl::kBN,
                                                  Tl::kThreads, p, stream)
               : gemm::launch_half_kernel<__nv_bfloat16>(gemm_v14::gemm_v14_kernel<__nv_bfloat16, kTA, kTB>, smem,
                                                         Tl::kBM, Tl::kBN, Tl::kThreads, p, stream);
  }
};

struct V13 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    using namespace gemm_v13;
    return gemm::launch_int8_kernel(gemm_v13_kernel<kTA, kTB>, Config<kTA, kTB>::kSmemBytes, kBM, kBN, kThreads, p,
                                    stream);
  }
};

// 16-byte rows (bases and leading dimensions) take the new kernels; narrower ones the version before.
Status run_v12(const GemmParams& p, cudaStream_t stream) {
  if (gemm::operand_copy_bytes(p, 2) != 16) return kGemmV9.run_gemm(p, stream);
  return gemm::launch_transposes<V12>(p, stream);
}
Status run_v14(const GemmParams& p, cudaStream_t stream) {
  if (gemm::operand_copy_bytes(p, 2) != 16) return kGemmV9.run_gemm(p, stream);
  return gemm::launch_transposes<V14>(p, stream);
}
Status run_v13(const GemmParams& p, cudaStream_t stream) {
  if (gemm::operand_copy_bytes(p, 1) != 16) return kGemmV10.run_gemm(p, stream);
  return gemm::launch_transposes<V13>(p, stream);
}

}  // namespace

// Both opt in to more than 48 KB of shared memory: v9's and v10's, the largest of the transpose instances.
const KernelDesc kGemmV12 = gemm_kernel(
    {"fs_gemm_v12", "stage06", "v12",
     "v9 with whole k-tiles copied without bounds checks (16-byte rows; v9 otherwise)"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<gemm_v12::Config>(), run_v12);
const KernelDesc kGemmV13 = gemm_kernel(
    {"fs_gemm_v13", "stage06", "v13",
     "v10 with whole k-tiles copied without bounds checks (16-byte rows; v10 otherwise)"},
    kInt8Support, kStageArchs, gemm::max_smem_bytes<gemm_v13::Config>(), run_v13);
const KernelDesc kGemmV14 = gemm_kernel(
    {"fs_gemm_v14", "stage06", "v14",
     "v12 with tiles past M or N moved inside and K's tail as a first k-tile: no block on the checked loop"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<gemm_v14::Config>(), run_v14);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v12, fs::kGemmV12)
FS_EXPORT_GEMM(fs_gemm_v13, fs::kGemmV13)
FS_EXPORT_GEMM(fs_gemm_v14, fs::kGemmV14)
