// Stage 07 gemm v12: what its launch needs to know of it (gemm_tma::run, launch.cuh), its descriptor
// and its C entry, fs_gemm_tma_v12.
#include "stages/07_tuned_tma/gemm/launch.cuh"
#include "stages/07_tuned_tma/gemm/v12_one_box_rounds.cuh"

namespace fs {

namespace {

struct V12 {
  static constexpr int kBM = gemm_tma::v12::kBM, kBN = gemm_tma::v12::kBN, kThreads = gemm_tma::v12::kThreads;
  static constexpr bool kPersistent = true;
  static constexpr int kClusterM = gemm_tma::v12::kClusterM;
  static constexpr bool kTmaStore = true;
  static constexpr int kCBoxRows = gemm_tma::v12::kMmaM;  // a consumer warpgroup's rows
  template <bool kTA, bool kTB>
  using Config = gemm_tma::v12::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma::v12::gemm_tma_v12_kernel<T, kTA, kTB>; }
};

}  // namespace

const KernelDesc kGemmTmaV12 = gemm_kernel(
    {"fs_gemm_tma_v12", "stage07/gemm", "v12",
     "v11 with C stored one box per k-tile, over the next tile's first four"},
    gemm_tma::kHalfSupport, kStageArchs, gemm::max_smem_bytes<V12::Config>(), gemm_tma::run<V12>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_tma_v12, fs::kGemmTmaV12)
