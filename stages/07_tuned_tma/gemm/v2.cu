// Stage 07 gemm v2: what its launch needs to know of it (gemm_tma::run, launch.cuh), its descriptor
// and its C entry, fs_gemm_tma_v2.
#include "stages/07_tuned_tma/gemm/launch.cuh"
#include "stages/07_tuned_tma/gemm/v2_pipeline.cuh"

namespace fs {

namespace {

struct V2 {
  static constexpr int kBM = gemm_tma::v2::kBM, kBN = gemm_tma::v2::kBN, kThreads = gemm_tma::v2::kThreads;
  static constexpr bool kPersistent = false;
  static constexpr int kClusterM = 1;
  static constexpr bool kTmaStore = false;
  template <bool kTA, bool kTB>
  using Config = gemm_tma::v2::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma::v2::gemm_tma_v2_kernel<T, kTA, kTB>; }
};

}  // namespace

const KernelDesc kGemmTmaV2 = gemm_kernel(
    {"fs_gemm_tma_v2", "stage07/gemm", "v2",
     "v1 with 4 TMA stages refilled behind one wgmma group in flight, two warpgroups of m64n256k16, 128x256x64"},
    gemm_tma::kHalfSupport, kStageArchs, gemm::max_smem_bytes<V2::Config>(), gemm_tma::run<V2>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_tma_v2, fs::kGemmTmaV2)
