// Stage 07 gemm v1: what its launch needs to know of it (gemm_tma::run, launch.cuh), its descriptor
// and its C entry, fs_gemm_tma_v1.
#include "stages/07_tuned_tma/gemm/launch.cuh"
#include "stages/07_tuned_tma/gemm/v1_tma_wgmma.cuh"

namespace fs {

namespace {

struct V1 {
  static constexpr int kBM = gemm_tma::v1::kBM, kBN = gemm_tma::v1::kBN, kThreads = gemm_tma::v1::kThreads;
  static constexpr bool kPersistent = false;
  static constexpr int kClusterM = 1;
  static constexpr bool kTmaStore = false;
  template <bool kTA, bool kTB>
  using Config = gemm_tma::v1::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma::v1::gemm_tma_v1_kernel<T, kTA, kTB>; }
};

}  // namespace

const KernelDesc kGemmTmaV1 = gemm_kernel(
    {"fs_gemm_tma_v1", "stage07/gemm", "v1",
     "TMA into 128B-swizzled smem, wgmma m64n128k16 from descriptors, 2 mbarrier stages, one warpgroup, 128x128x64"},
    gemm_tma::kHalfSupport, kStageArchs, gemm::max_smem_bytes<V1::Config>(), gemm_tma::run<V1>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_tma_v1, fs::kGemmTmaV1)
