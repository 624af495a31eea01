// Stage 07 attention v13: the launch of v13_fma_exp2.cuh's kernel (launch.cuh's fp8 launch, as v9's and
// v12's), its descriptor and its C entry.
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v13_fma_exp2.cuh"
#include "stages/07_tuned_tma/attention/versions.h"

namespace fs {

namespace flash_tma {

namespace {

Status run_v13(const AttentionProblem& pr, cudaStream_t stream) {
  return fp8::run(pr, stream, v13::flash_tma_v13_kernel<fp8::Tile>);
}

}  // namespace

}  // namespace flash_tma

const KernelDesc kFlashTmaV13 = flash_tma::fp8::descriptor(
    {"fs_flash_fwd_tma_v13", "stage07/attention", "v13",
     "v12 with one 8-column tile in eight of P's exponentials on the FMA pipe (a cubic), off the SFU"},
    flash_tma::run_v13);

}  // namespace fs

FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v13, fs::kFlashTmaV13)
