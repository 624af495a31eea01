// Stage 07 gemm v4: what its launch needs to know of it (gemm_tma::run, launch.cuh), its descriptor
// and its C entry, fs_gemm_tma_v4.
#include "stages/07_tuned_tma/gemm/launch.cuh"
#include "stages/07_tuned_tma/gemm/v4_persistent.cuh"

namespace fs {

namespace {

struct V4 {
  static constexpr int kBM = gemm_tma::v4::kBM, kBN = gemm_tma::v4::kBN, kThreads = gemm_tma::v4::kThreads;
  static constexpr bool kPersistent = true;
  static constexpr int kClusterM = 1;
  static constexpr bool kTmaStore = false;
  template <bool kTA, bool kTB>
  using Config = gemm_tma::v4::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma::v4::gemm_tma_v4_kernel<T, kTA, kTB>; }
};

}  // namespace

const KernelDesc kGemmTmaV4 = gemm_kernel(
    {"fs_gemm_tma_v4", "stage07/gemm", "v4",
     "v3 persistent: one block per SM loops over tiles in a grouped order, the next tile's loads overlap the epilogue"},
    gemm_tma::kHalfSupport, kStageArchs, gemm::max_smem_bytes<V4::Config>(), gemm_tma::run<V4>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_tma_v4, fs::kGemmTmaV4)
