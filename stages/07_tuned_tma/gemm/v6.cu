// Stage 07 gemm v6, the INT8 TMA + wgmma version (int8 → int32, A stored M×K and B stored N×K only):
// its launch, descriptor and C entry.
#include <cuda.h>

#include <cstdint>

#include "common/lib/gemm_launch.h"
#include "stages/07_tuned_tma/gemm/launch.cuh"
#include "stages/07_tuned_tma/gemm/versions.h"
#include "stages/07_tuned_tma/gemm/v6_int8.cuh"

namespace fs {

namespace {

// int8 in, int32 out, in the one layout integer wgmma reads (both operands k-contiguous: A untransposed,
// B transposed; FS_ERR_UNSUPPORTED_LAYOUT for the other three). A's and B's bases and rows 16-byte
// multiples, what TMA reads (FS_ERR_MISALIGNED_POINTER, FS_ERR_INVALID_LEADING_DIM otherwise).
const GemmSupport kInt8Support{Dtypes<DType::INT8>::kMask, Dtypes<DType::INT32>::kMask, /*operand_align=*/16,
                               layout_bit(/*trans_a=*/false, /*trans_b=*/true), /*tma_operands=*/true};

// The tensor maps are encoded on every call (tensor_map.h says why not cached yet), with the boxes of
// v6's 128 × 256 tile: both K-major, 128 int8 wide. One block per SM (gemm_tma::persistent_blocks).
Status run_v6(const GemmParams& p, cudaStream_t stream) {
  using namespace gemm_tma::v6;
  CUtensorMap a, b;
  FS_RETURN_IF_ERROR((gemm_tma::encode_operand_maps<kBM, kBN>(p, &a, &b)));
  unsigned blocks = 0;
  FS_RETURN_IF_ERROR((gemm_tma::persistent_blocks<kBM, kBN>(p, &blocks)));
  const bool c_pairs = gemm::pairs_aligned(p.c, p.ldc, sizeof(int32_t));
  FS_RETURN_IF_CUDA_ERROR(gemm::allow_smem(gemm_tma_v6_kernel, Config::kSmemBytes));
  gemm_tma_v6_kernel<<<blocks, kThreads, Config::kSmemBytes, stream>>>(a, b, p.m, p.n, p.k, p.alpha, p.beta,
                                                                       static_cast<int32_t*>(p.c), p.ldc, c_pairs);
  FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());  // a refused launch shows up here
  return Status::Success;
}

}  // namespace

const KernelDesc kGemmTmaV6 = gemm_kernel(
    {"fs_gemm_tma_v6", "stage07/gemm", "v6",
     "v4 on int8: wgmma m64n256k32 s8.s8 -> s32, 128-deep k-tiles, A MxK and B NxK (TN) only, exact"},
    kInt8Support, kStageArchs, gemm_tma::v6::Config::kSmemBytes, run_v6);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_tma_v6, fs::kGemmTmaV6)
