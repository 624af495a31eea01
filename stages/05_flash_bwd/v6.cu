// Stage 05 v6: the launch of v6_dq_ldmatrix.cuh's K/V kernel on the atomic path (launch.cuh's run_mma; the
// deterministic path is deterministic.cuh's, as for every tensor-core version), its descriptor and C entry.
#include "stages/05_flash_bwd/launch.cuh"
#include "stages/05_flash_bwd/v6_dq_ldmatrix.cuh"
#include "stages/05_flash_bwd/versions.h"

namespace fs {
namespace bwd::v6 {
namespace {

Status run(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return run_mma<Config>(pr, stream, [](auto type, auto d, auto varlen) {
    return flash_bwd_v6_dkv_kernel<typename decltype(type)::type, decltype(d)::value, decltype(varlen)::value>;
  });
}

}  // namespace
}  // namespace bwd::v6

const KernelDesc kFlashBwdV6 = attention_bwd_kernel(
    {"fs_flash_bwd_v6", "stage05", "v6",
     "v5 with dQ's K operand by ldmatrix.trans too, its columns regrouped for the wide red by one lane exchange"},
    bwd::mma::kSupport, kStageArchs, bwd::mma_smem_bytes<bwd::v6::Config>(), bwd::v6::run, bwd::mma_extra_bytes,
    /*traffic_bytes=*/nullptr, delta_extra_bytes);

}  // namespace fs

FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_v6, fs::kFlashBwdV6)
