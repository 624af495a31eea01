// Stage 05 v3: the launch of v3_wide_red.cuh's K/V kernel on the atomic path (launch.cuh's run_mma; the
// deterministic path is deterministic.cuh's, as for every tensor-core version), its descriptor and C entry.
#include "stages/05_flash_bwd/launch.cuh"
#include "stages/05_flash_bwd/v3_wide_red.cuh"
#include "stages/05_flash_bwd/versions.h"

namespace fs {
namespace bwd::v3 {
namespace {

Status run(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return run_mma<Config>(pr, stream, [](auto type, auto d, auto varlen) {
    return flash_bwd_v3_dkv_kernel<typename decltype(type)::type, decltype(d)::value, decltype(varlen)::value>;
  });
}

}  // namespace
}  // namespace bwd::v3

const KernelDesc kFlashBwdV3 = attention_bwd_kernel(
    {"fs_flash_bwd_v3", "stage05", "v3",
     "v2 with the dQ atomics wide: red.global.add.v4.f32, four neighbouring columns per thread (sm_90)"},
    bwd::mma::kSupport, kStageArchs, bwd::mma_smem_bytes<bwd::v3::Config>(), bwd::v3::run, bwd::mma_extra_bytes,
    /*traffic_bytes=*/nullptr, delta_extra_bytes);

}  // namespace fs

FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_v3, fs::kFlashBwdV3)
