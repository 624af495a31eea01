// Stage 05 v10: the launch of v10_addresses_once.cuh's K/V kernel on the atomic path (launch.cuh's run_mma; the
// deterministic path is deterministic.cuh's, as for every tensor-core version), its descriptor and C entry.
#include "stages/05_flash_bwd/launch.cuh"
#include "stages/05_flash_bwd/v10_addresses_once.cuh"
#include "stages/05_flash_bwd/versions.h"

namespace fs {
namespace bwd::v10 {
namespace {

Status run(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return run_mma<Config>(pr, stream, [](auto type, auto d, auto varlen) {
    return flash_bwd_v10_dkv_kernel<typename decltype(type)::type, decltype(d)::value, decltype(varlen)::value>;
  });
}

}  // namespace
}  // namespace bwd::v10

const KernelDesc kFlashBwdV10 = attention_bwd_kernel(
    {"fs_flash_bwd_v10", "stage05", "v10",
     "v9 with each thread's copy and dQ-reduction addresses worked out once per block, no bounds tests on inner tiles"},
    bwd::mma::kStridedSupport, kStageArchs, bwd::mma_smem_bytes<bwd::v10::Config>(), bwd::v10::run, bwd::mma_extra_bytes,
    /*traffic_bytes=*/nullptr, delta_extra_bytes);

}  // namespace fs

FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_v10, fs::kFlashBwdV10)
