// Stage 07 gemm v10: what its launch needs to know of it (gemm_tma::run, launch.cuh), its descriptor
// and its C entry, fs_gemm_tma_v10.
#include "stages/07_tuned_tma/gemm/launch.cuh"
#include "stages/07_tuned_tma/gemm/v10_lean_tile_end.cuh"

namespace fs {

namespace {

struct V10 {
  static constexpr int kBM = gemm_tma::v10::kBM, kBN = gemm_tma::v10::kBN, kThreads = gemm_tma::v10::kThreads;
  static constexpr bool kPersistent = true;
  static constexpr int kClusterM = gemm_tma::v10::kClusterM;
  static constexpr bool kTmaStore = true;
  static constexpr int kCBoxRows = gemm_tma::v10::kMmaM;  // a consumer warpgroup's rows
  template <bool kTA, bool kTB>
  using Config = gemm_tma::v10::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma::v10::gemm_tma_v10_kernel<T, kTA, kTB>; }
};

}  // namespace

const KernelDesc kGemmTmaV10 = gemm_kernel(
    {"fs_gemm_tma_v10", "stage07/gemm", "v10",
     "v9 with a shorter tile end: at alpha = 1 C is rounded without being multiplied"},
    gemm_tma::kHalfSupport, kStageArchs, gemm::max_smem_bytes<V10::Config>(), gemm_tma::run<V10>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_tma_v10, fs::kGemmTmaV10)
