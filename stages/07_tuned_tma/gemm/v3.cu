// Stage 07 gemm v3: what its launch needs to know of it (gemm_tma::run, launch.cuh), its descriptor
// and its C entry, fs_gemm_tma_v3.
#include "stages/07_tuned_tma/gemm/launch.cuh"
#include "stages/07_tuned_tma/gemm/v3_warp_specialization.cuh"

namespace fs {

namespace {

struct V3 {
  static constexpr int kBM = gemm_tma::v3::kBM, kBN = gemm_tma::v3::kBN, kThreads = gemm_tma::v3::kThreads;
  static constexpr bool kPersistent = false;
  static constexpr int kClusterM = 1;
  static constexpr bool kTmaStore = false;
  template <bool kTA, bool kTB>
  using Config = gemm_tma::v3::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma::v3::gemm_tma_v3_kernel<T, kTA, kTB>; }
};

}  // namespace

const KernelDesc kGemmTmaV3 = gemm_kernel(
    {"fs_gemm_tma_v3", "stage07/gemm", "v3",
     "v2 warp-specialized: a TMA producer warpgroup, two wgmma consumer warpgroups, full/empty mbarriers, setmaxnreg"},
    gemm_tma::kHalfSupport, kStageArchs, gemm::max_smem_bytes<V3::Config>(), gemm_tma::run<V3>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_tma_v3, fs::kGemmTmaV3)
