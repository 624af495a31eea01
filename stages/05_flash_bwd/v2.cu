// Stage 05 v2: the launch of v2_mma.cuh's K/V kernel on the atomic path (launch.cuh's run_mma; the
// deterministic path is deterministic.cuh's), its descriptor and C entry.
#include "stages/05_flash_bwd/launch.cuh"
#include "stages/05_flash_bwd/v2_mma.cuh"
#include "stages/05_flash_bwd/versions.h"

namespace fs {
namespace bwd::v2 {
namespace {

Status run(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return run_mma<Config>(pr, stream, [](auto type, auto d, auto varlen) {
    return flash_bwd_v2_dkv_kernel<typename decltype(type)::type, decltype(d)::value, decltype(varlen)::value>;
  });
}

}  // namespace
}  // namespace bwd::v2

const KernelDesc kFlashBwdV2 = attention_bwd_kernel(
    {"fs_flash_bwd_v2", "stage05", "v2",
     "tensor cores (mma.sync, fp16/bf16): v1's schedule, dQ in fp32 by atomics (or a 2nd pass), causal split"},
    bwd::mma::kSupport, kStageArchs, bwd::mma_smem_bytes<bwd::v2::Config>(), bwd::v2::run, bwd::mma_extra_bytes,
    /*traffic_bytes=*/nullptr, delta_extra_bytes);

}  // namespace fs

FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_v2, fs::kFlashBwdV2)
