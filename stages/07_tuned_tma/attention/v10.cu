// Stage 07 attention v10: the launch of v10_k_apart.cuh's kernel over its tiles (launch.cuh's last_wave,
// as v8's: which tiles to split and into how many slices, the workspace, the kernel and the merge), its
// descriptor and its C entry.
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v10_k_apart.cuh"
#include "stages/07_tuned_tma/attention/versions.h"

namespace fs {

namespace flash_tma {

namespace {

// v10's kernel for element type t and tile configuration c.
constexpr auto kernel_of = [](auto t, auto c) {
  return v10::flash_tma_v10_kernel<typename decltype(t)::type, typename decltype(c)::type>;
};

std::size_t v10_workspace_bytes(const AttentionParams& p, int sms) {
  return last_wave::split_workspace_bytes<v10::Config>(p, sms);
}

Status run_v10(const AttentionProblem& pr, cudaStream_t stream) {
  return last_wave::run<v10::Config>(pr, stream, kernel_of);
}

}  // namespace

}  // namespace flash_tma

const KernelDesc kFlashTmaV10 = flash_tma::descriptor(
    {"fs_flash_fwd_tma_v10", "stage07/attention", "v10",
     "v8 with K_j's half of a stage released as soon as S_j is done, apart from V_j's, so the producer loads ahead at D = 256"},
    flash_tma::max_smem_bytes<flash_tma::v10::Config>(), flash_tma::run_v10,
    flash_tma::workspace_extra_bytes<flash_tma::v10_workspace_bytes>);

}  // namespace fs

FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v10, fs::kFlashTmaV10)
