// Stage 07 gemm v11: what its launch needs to know of it (gemm_tma::run, launch.cuh), its descriptor
// and its C entry, fs_gemm_tma_v11.
#include "stages/07_tuned_tma/gemm/launch.cuh"
#include "stages/07_tuned_tma/gemm/v11_lean_k_loop.cuh"

namespace fs {

namespace {

struct V11 {
  static constexpr int kBM = gemm_tma::v11::kBM, kBN = gemm_tma::v11::kBN, kThreads = gemm_tma::v11::kThreads;
  static constexpr bool kPersistent = true;
  static constexpr int kClusterM = gemm_tma::v11::kClusterM;
  static constexpr bool kTmaStore = true;
  static constexpr int kCBoxRows = gemm_tma::v11::kMmaM;  // a consumer warpgroup's rows
  template <bool kTA, bool kTB>
  using Config = gemm_tma::v11::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma::v11::gemm_tma_v11_kernel<T, kTA, kTB>; }
};

}  // namespace

const KernelDesc kGemmTmaV11 = gemm_kernel(
    {"fs_gemm_tma_v11", "stage07/gemm", "v11",
     "v10 with a lean k-loop: each k-tile's descriptors and barriers one add from the last"},
    gemm_tma::kHalfSupport, kStageArchs, gemm::max_smem_bytes<V11::Config>(), gemm_tma::run<V11>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_tma_v11, fs::kGemmTmaV11)
