// Stage 07 gemm: the TMA + wgmma versions v1 … v4 (fp16, bf16) — their launch, descriptors and C entries.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/lib/gemm_launch.h"
#include "stages/07_tuned_tma/gemm/gemm.h"
#include "stages/07_tuned_tma/gemm/v1_tma_wgmma.cuh"
#include "stages/07_tuned_tma/gemm/v2_pipeline.cuh"
#include "stages/07_tuned_tma/gemm/v3_warp_specialization.cuh"
#include "stages/07_tuned_tma/gemm/v4_persistent.cuh"

namespace fs {

namespace {

// fp16 or bf16 in; C in fp32 or either 16-bit type. A's and B's bases and rows must be 16-byte
// multiples: what TMA reads (validation refuses anything else with a named code).
const GemmSupport kHalfSupport{Dtypes<DType::FP16, DType::BF16>::kMask,
                               Dtypes<DType::FP32, DType::FP16, DType::BF16>::kMask, /*operand_align=*/16};

// What the launch needs of a version, named alike for each: its block tile and size, whether it is
// persistent (a block per SM that loops over tiles, else a block per tile), its shared-memory Config,
// its kernel for T and the transposes.
struct V1 {
  static constexpr int kBM = gemm_tma_v1::kBM, kBN = gemm_tma_v1::kBN, kThreads = gemm_tma_v1::kThreads;
  static constexpr bool kPersistent = false;
  template <bool kTA, bool kTB>
  using Config = gemm_tma_v1::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma_v1::gemm_tma_v1_kernel<T, kTA, kTB>; }
};

struct V2 {
  static constexpr int kBM = gemm_tma_v2::kBM, kBN = gemm_tma_v2::kBN, kThreads = gemm_tma_v2::kThreads;
  static constexpr bool kPersistent = false;
  template <bool kTA, bool kTB>
  using Config = gemm_tma_v2::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma_v2::gemm_tma_v2_kernel<T, kTA, kTB>; }
};

struct V3 {
  static constexpr int kBM = gemm_tma_v3::kBM, kBN = gemm_tma_v3::kBN, kThreads = gemm_tma_v3::kThreads;
  static constexpr bool kPersistent = false;
  template <bool kTA, bool kTB>
  using Config = gemm_tma_v3::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma_v3::gemm_tma_v3_kernel<T, kTA, kTB>; }
};

struct V4 {
  static constexpr int kBM = gemm_tma_v4::kBM, kBN = gemm_tma_v4::kBN, kThreads = gemm_tma_v4::kThreads;
  static constexpr bool kPersistent = true;
  template <bool kTA, bool kTB>
  using Config = gemm_tma_v4::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma_v4::gemm_tma_v4_kernel<T, kTA, kTB>; }
};

// One instance of version V (gemm::launch_transposes picks kTA, kTB): opt in to its shared memory,
// launch `blocks` blocks (grid_blocks).
template <class V>
struct Launch {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream, const CUtensorMap& a, const CUtensorMap& b,
                         unsigned blocks) {
    const bool c_pairs = gemm::pairs_aligned(p.c, p.ldc, p.c_dtype == FS_FP32 ? 4 : 2);
    auto go = [&](auto kernel) {
      constexpr std::size_t smem = V::template Config<kTA, kTB>::kSmemBytes;
      if (const cudaError_t err = gemm::allow_smem(kernel, smem); err != cudaSuccess) return err;
      kernel<<<blocks, V::kThreads, smem, stream>>>(a, b, p.m, p.n, p.k, p.alpha, p.beta, p.c, p.ldc, p.c_dtype,
                                                   c_pairs);
      return cudaSuccess;
    };
    return p.ab_dtype == FS_FP16 ? go(V::template kernel<__half, kTA, kTB>())
                                 : go(V::template kernel<__nv_bfloat16, kTA, kTB>());
  }
};

// The grid: one block per kBM × kBN tile of C, or for a persistent version one per SM
// (gemm_tma::persistent_blocks).
template <class V>
Status grid_blocks(const GemmParams& p, unsigned* blocks) {
  if constexpr (V::kPersistent) {
    return gemm_tma::persistent_blocks<V::kBM, V::kBN>(p, blocks);
  } else {
    *blocks = gemm::tile_count(p, V::kBM, V::kBN);
    return Status::Success;
  }
}

// The tensor maps are encoded on every call (tensor_map.h says why not cached yet), with the boxes of
// V's tile.
template <class V>
Status run(const GemmParams& p, cudaStream_t stream) {
  CUtensorMap a, b;
  FS_RETURN_IF_ERROR((gemm_tma::encode_operand_maps<V::kBM, V::kBN>(p, &a, &b)));
  unsigned blocks = 0;
  FS_RETURN_IF_ERROR(grid_blocks<V>(p, &blocks));
  return gemm::launch_transposes<Launch<V>>(p, stream, a, b, blocks);
}

}  // namespace

const KernelDesc kGemmTmaV1 = gemm_kernel(
    {"fs_gemm_tma_v1", "stage07/gemm", "v1",
     "TMA into 128B-swizzled smem, wgmma m64n128k16 from descriptors, 2 mbarrier stages, one warpgroup, 128x128x64"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<V1::Config>(), run<V1>);

const KernelDesc kGemmTmaV2 = gemm_kernel(
    {"fs_gemm_tma_v2", "stage07/gemm", "v2",
     "v1 with 4 TMA stages refilled behind one wgmma group in flight, two warpgroups of m64n256k16, 128x256x64"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<V2::Config>(), run<V2>);

const KernelDesc kGemmTmaV3 = gemm_kernel(
    {"fs_gemm_tma_v3", "stage07/gemm", "v3",
     "v2 warp-specialized: a TMA producer warpgroup, two wgmma consumer warpgroups, full/empty mbarriers, setmaxnreg"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<V3::Config>(), run<V3>);

const KernelDesc kGemmTmaV4 = gemm_kernel(
    {"fs_gemm_tma_v4", "stage07/gemm", "v4",
     "v3 persistent: one block per SM loops over tiles in a grouped order, the next tile's loads overlap the epilogue"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<V4::Config>(), run<V4>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_tma_v1, fs::kGemmTmaV1)
FS_EXPORT_GEMM(fs_gemm_tma_v2, fs::kGemmTmaV2)
FS_EXPORT_GEMM(fs_gemm_tma_v3, fs::kGemmTmaV3)
FS_EXPORT_GEMM(fs_gemm_tma_v4, fs::kGemmTmaV4)
