// Stage 07 gemm v9: what its launch needs to know of it (gemm_tma::run, launch.cuh), its descriptor
// and its C entry, fs_gemm_tma_v9.
#include "stages/07_tuned_tma/gemm/launch.cuh"
#include "stages/07_tuned_tma/gemm/v9_epilogue_overlap.cuh"

namespace fs {

namespace {

struct V9 {
  static constexpr int kBM = gemm_tma::v9::kBM, kBN = gemm_tma::v9::kBN, kThreads = gemm_tma::v9::kThreads;
  static constexpr bool kPersistent = true;
  static constexpr int kClusterM = gemm_tma::v9::kClusterM;
  static constexpr bool kTmaStore = true;
  static constexpr int kCBoxRows = gemm_tma::v9::kMmaM;  // a consumer warpgroup's rows
  template <bool kTA, bool kTB>
  using Config = gemm_tma::v9::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma::v9::gemm_tma_v9_kernel<T, kTA, kTB>; }
};

}  // namespace

const KernelDesc kGemmTmaV9 = gemm_kernel(
    {"fs_gemm_tma_v9", "stage07/gemm", "v9",
     "v8 with C rounded into 64 registers at a tile's end and stored during the next tile's first two k-tiles"},
    gemm_tma::kHalfSupport, kStageArchs, gemm::max_smem_bytes<V9::Config>(), gemm_tma::run<V9>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_tma_v9, fs::kGemmTmaV9)
