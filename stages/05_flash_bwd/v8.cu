// Stage 05 v8: the launch of v8_fa2_warps.cuh's K/V kernel on the atomic path (launch.cuh's run_mma; the
// deterministic path is deterministic.cuh's, as for every tensor-core version), its descriptor and C entry.
#include "stages/05_flash_bwd/launch.cuh"
#include "stages/05_flash_bwd/v8_fa2_warps.cuh"
#include "stages/05_flash_bwd/versions.h"

namespace fs {
namespace bwd::v8 {
namespace {

Status run(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return run_mma<Config>(pr, stream, [](auto type, auto d, auto varlen) {
    return flash_bwd_v8_dkv_kernel<typename decltype(type)::type, decltype(d)::value, decltype(varlen)::value>;
  });
}

}  // namespace
}  // namespace bwd::v8

const KernelDesc kFlashBwdV8 = attention_bwd_kernel(
    {"fs_flash_bwd_v8", "stage05", "v8",
     "v7 with FlashAttention-2's warp tiles: S, dP as 2 x 4 warps of 32 x 32, dK, dV 32 keys x D/2, P and dS via smem"},
    bwd::mma::kSupport, kStageArchs, bwd::mma_smem_bytes<bwd::v8::Config>(), bwd::v8::run, bwd::mma_extra_bytes,
    /*traffic_bytes=*/nullptr, delta_extra_bytes);

}  // namespace fs

FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_v8, fs::kFlashBwdV8)
