// Stage 06: the raw mma.sync version v10 (int8 -> int32) — its launch, descriptor and C entry.
#include <cstdint>

#include "gemm.h"
#include "common/lib/gemm_launch.h"
#include "v10_mma_int8.cuh"

namespace fs {

namespace {

const GemmSupport kInt8Support{Dtypes<DType::INT8>::kMask, Dtypes<DType::INT32>::kMask};

struct V10 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    using namespace gemm_v10;
    constexpr std::size_t smem = Config<kTA, kTB>::kSmemBytes;
    const bool c_pairs = gemm::pairs_aligned(p.c, p.ldc, 4);
    return gemm::dispatch_copy_bytes<1>(gemm::operand_copy_bytes(p, 1), [&](auto w) {
      const auto kernel = gemm_v10_kernel<kTA, kTB, decltype(w)::value>;
      if (const cudaError_t err = gemm::allow_smem(kernel, smem); err != cudaSuccess) return err;
      kernel<<<gemm::tile_count(p, kBM, kBN), kThreads, smem, stream>>>(
          p.m, p.n, p.k, p.alpha, static_cast<const int8_t*>(p.a), p.lda, static_cast<const int8_t*>(p.b), p.ldb,
          p.beta, static_cast<int32_t*>(p.c), p.ldc, c_pairs);
      return cudaSuccess;
    });
  }
};

}  // namespace

// v10 opts in to more than 48 KB of shared memory: the largest of its transpose instances.
const KernelDesc kGemmV10 = gemm_kernel(
    {"fs_gemm_v10", "stage06", "v10", "mma.sync m16n8k32 int8 -> int32: v9's pipeline, bytes transposed in smem"},
    kInt8Support, kStageArchs, gemm::max_smem_bytes<gemm_v10::Config>(), gemm::launch_transposes<V10>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v10, fs::kGemmV10)
