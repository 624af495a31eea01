// Stage 05 v4: the launch of v4_cp_async.cuh's K/V kernel on the atomic path (launch.cuh's run_mma; the
// deterministic path is deterministic.cuh's, as for every tensor-core version), its descriptor and C entry.
#include "stages/05_flash_bwd/launch.cuh"
#include "stages/05_flash_bwd/v4_cp_async.cuh"
#include "stages/05_flash_bwd/versions.h"

namespace fs {
namespace bwd::v4 {
namespace {

Status run(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return run_mma<Config>(pr, stream, [](auto type, auto d, auto varlen) {
    return flash_bwd_v4_dkv_kernel<typename decltype(type)::type, decltype(d)::value, decltype(varlen)::value>;
  });
}

}  // namespace
}  // namespace bwd::v4

const KernelDesc kFlashBwdV4 = attention_bwd_kernel(
    {"fs_flash_bwd_v4", "stage05", "v4",
     "v3 with Q_i, dO_i, LSE_i, delta_i double-buffered through cp.async: tile i+1 lands while tile i computes"},
    bwd::mma::kSupport, kStageArchs, bwd::mma_smem_bytes<bwd::v4::Config>(), bwd::v4::run, bwd::mma_extra_bytes,
    /*traffic_bytes=*/nullptr, delta_extra_bytes);

}  // namespace fs

FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_v4, fs::kFlashBwdV4)
