// Stage 07 attention v12: the launch of v12_fp8_pingpong.cuh's kernel (launch.cuh's fp8 launch, as v9's),
// its descriptor and its C entry.
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v12_fp8_pingpong.cuh"
#include "stages/07_tuned_tma/attention/versions.h"

namespace fs {

namespace flash_tma {

namespace {

Status run_v12(const AttentionProblem& pr, cudaStream_t stream) {
  return fp8::run(pr, stream, v12::flash_tma_v12_kernel<fp8::Tile>);
}

}  // namespace

}  // namespace flash_tma

const KernelDesc kFlashTmaV12 = flash_tma::fp8::descriptor(
    {"fs_flash_fwd_tma_v12", "stage07/attention", "v12",
     "v9 with the consumers taking turns at the tensor cores (v4's pingpong): one's exponentials under the other's products"},
    flash_tma::run_v12);

}  // namespace fs

FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v12, fs::kFlashTmaV12)
