// Stage 07 gemm v7: what its launch needs to know of it (gemm_tma::run, launch.cuh), its descriptor
// and its C entry, fs_gemm_tma_v7.
#include "stages/07_tuned_tma/gemm/launch.cuh"
#include "stages/07_tuned_tma/gemm/v7_tma_store.cuh"

namespace fs {

namespace {

struct V7 {
  static constexpr int kBM = gemm_tma::v7::kBM, kBN = gemm_tma::v7::kBN, kThreads = gemm_tma::v7::kThreads;
  static constexpr bool kPersistent = true;
  static constexpr int kClusterM = gemm_tma::v7::kClusterM;
  static constexpr bool kTmaStore = true;
  static constexpr int kCBoxRows = gemm_tma::v7::kMmaM;  // a consumer warpgroup's rows
  template <bool kTA, bool kTB>
  using Config = gemm_tma::v7::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma::v7::gemm_tma_v7_kernel<T, kTA, kTB>; }
};

}  // namespace

const KernelDesc kGemmTmaV7 = gemm_kernel(
    {"fs_gemm_tma_v7", "stage07/gemm", "v7",
     "v5 with 3 stages and C staged in shared memory by stmatrix, written by TMA stores that overlap the next tile"},
    gemm_tma::kHalfSupport, kStageArchs, gemm::max_smem_bytes<V7::Config>(), gemm_tma::run<V7>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_tma_v7, fs::kGemmTmaV7)
