// Stage 07 gemm v5: what its launch needs to know of it (gemm_tma::run, launch.cuh), its descriptor
// and its C entry, fs_gemm_tma_v5.
#include "stages/07_tuned_tma/gemm/launch.cuh"
#include "stages/07_tuned_tma/gemm/v5_clusters_multicast.cuh"

namespace fs {

namespace {

struct V5 {
  static constexpr int kBM = gemm_tma::v5::kBM, kBN = gemm_tma::v5::kBN, kThreads = gemm_tma::v5::kThreads;
  static constexpr bool kPersistent = true;
  static constexpr int kClusterM = gemm_tma::v5::kClusterM;
  static constexpr bool kTmaStore = false;
  template <bool kTA, bool kTB>
  using Config = gemm_tma::v5::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma::v5::gemm_tma_v5_kernel<T, kTA, kTB>; }
};

}  // namespace

const KernelDesc kGemmTmaV5 = gemm_kernel(
    {"fs_gemm_tma_v5", "stage07/gemm", "v5",
     "v4 in clusters of two blocks along M: each loads half of B's tile and TMA-multicasts it to both"},
    gemm_tma::kHalfSupport, kStageArchs, gemm::max_smem_bytes<V5::Config>(), gemm_tma::run<V5>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_tma_v5, fs::kGemmTmaV5)
