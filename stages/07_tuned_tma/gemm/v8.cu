// Stage 07 gemm v8: what its launch needs to know of it (gemm_tma::run, launch.cuh), its descriptor
// and its C entry, fs_gemm_tma_v8.
#include "stages/07_tuned_tma/gemm/launch.cuh"
#include "stages/07_tuned_tma/gemm/v8_staging_ring.cuh"

namespace fs {

namespace {

struct V8 {
  static constexpr int kBM = gemm_tma::v8::kBM, kBN = gemm_tma::v8::kBN, kThreads = gemm_tma::v8::kThreads;
  static constexpr bool kPersistent = true;
  static constexpr int kClusterM = gemm_tma::v8::kClusterM;
  static constexpr bool kTmaStore = true;
  static constexpr int kCBoxRows = gemm_tma::v8::kMmaM;  // a consumer warpgroup's rows
  template <bool kTA, bool kTB>
  using Config = gemm_tma::v8::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma::v8::gemm_tma_v8_kernel<T, kTA, kTB>; }
};

}  // namespace

const KernelDesc kGemmTmaV8 = gemm_kernel(
    {"fs_gemm_tma_v8", "stage07/gemm", "v8",
     "v7 with C through a ring of two 64x64 boxes per warpgroup, which frees the room for a fourth stage"},
    gemm_tma::kHalfSupport, kStageArchs, gemm::max_smem_bytes<V8::Config>(), gemm_tma::run<V8>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_tma_v8, fs::kGemmTmaV8)
