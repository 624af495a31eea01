// Stage 07 attention v10: the launch of v8_split_last_wave.cuh's kernels over v10's tiles (last_wave.cuh:
// which tiles to split and into how many slices, the workspace, the kernel and the merge). (Its
// descriptor and C entry are in versions.cu.)
#include "stages/07_tuned_tma/attention/last_wave.cuh"
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v10_k_apart.cuh"

namespace fs::flash_tma {

std::size_t v10_workspace_bytes(const AttentionParams& p, int sms) {
  return last_wave::split_workspace_bytes<v10::Config>(p, sms);
}

Status run_v10(const AttentionProblem& pr, cudaStream_t stream) { return last_wave::run<v10::Config>(pr, stream); }

}  // namespace fs::flash_tma
