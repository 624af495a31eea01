// Stage 07 attention v9: the launch of v9_fp8.cuh's kernel (launch.cuh's fp8 launch: Q's and K's maps,
// Vᵀ's workspace and map, the pre-pass, then the kernel), its descriptor and its C entry.
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v9_fp8.cuh"
#include "stages/07_tuned_tma/attention/versions.h"

namespace fs {

namespace flash_tma {

namespace {

Status run_v9(const AttentionProblem& pr, cudaStream_t stream) {
  return fp8::run(pr, stream, v9::flash_tma_v9_kernel<fp8::Tile>);
}

}  // namespace

}  // namespace flash_tma

const KernelDesc kFlashTmaV9 = flash_tma::fp8::descriptor(
    {"fs_flash_fwd_tma_v9", "stage07/attention", "v9",
     "v3 on fp8 (e4m3) Q, K, V with per-tensor scales: wgmma k32 at twice the fp16 rate, V transposed by a pre-pass, P in fp8, O in bf16"},
    flash_tma::run_v9);

}  // namespace fs

FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v9, fs::kFlashTmaV9)
