// Stage 07 attention v8: the launch of v8_split_last_wave.cuh's kernels over v7's tiles (last_wave.cuh:
// which tiles to split and into how many slices, the workspace, the kernel and the merge). (Its
// descriptor and C entry are in versions.cu.)
#include "stages/07_tuned_tma/attention/last_wave.cuh"
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v8_split_last_wave.cuh"

namespace fs::flash_tma {

std::size_t v8_workspace_bytes(const AttentionParams& p, int sms) {
  return last_wave::split_workspace_bytes<v8::Config>(p, sms);
}

Status run_v8_split(const AttentionProblem& pr, int64_t tail, int splits, cudaStream_t stream) {
  return last_wave::run_split<v8::Config>(pr, tail, splits, stream);
}

Status run_v8(const AttentionProblem& pr, cudaStream_t stream) { return last_wave::run<v8::Config>(pr, stream); }

}  // namespace fs::flash_tma
