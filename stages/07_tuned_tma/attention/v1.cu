// Stage 07 attention v1: the launch of v1_tma_wgmma.cuh's kernel, its descriptor and its C entry, in a
// translation unit of its own so that the versions compile in parallel.
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v1_tma_wgmma.cuh"
#include "stages/07_tuned_tma/attention/versions.h"

namespace fs {

namespace {

Status run_v1(const AttentionProblem& pr, cudaStream_t stream) {
  return flash_tma::launch_version<flash_tma::v1::Config>(pr, stream, [](auto t, auto d) {
    return flash_tma::v1::flash_tma_v1_kernel<typename decltype(t)::type, decltype(d)::value>;
  });
}

}  // namespace

const KernelDesc kFlashTmaV1 = flash_tma::descriptor(
    {"fs_flash_fwd_tma_v1", "stage07/attention", "v1",
     "TMA into 128B-swizzled smem, S = QK^T by wgmma from descriptors, O += PV with P from registers, one warpgroup"},
    flash_tma::max_smem_bytes<flash_tma::v1::Config>(), run_v1);

}  // namespace fs

FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v1, fs::kFlashTmaV1)
