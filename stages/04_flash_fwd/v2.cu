// Stage 04 v2: the launch of v2_causal_split.cuh's kernel, its descriptor and its C entry, in a translation
// unit of its own so that the versions compile in parallel.
#include "launch.cuh"
#include "v2_causal_split.cuh"
#include "versions.h"

namespace fs::flash::v2 {
namespace {

Status run(const AttentionProblem& pr, cudaStream_t stream) {
  return launch_version<Config>(pr, stream, [](auto t, auto d) {
    return flash_fwd_v2_kernel<typename decltype(t)::type, decltype(d)::value>;
  });
}

}  // namespace
}  // namespace fs::flash::v2

const fs::KernelDesc fs::kFlashFwdV2 =
    flash::version({"fs_flash_fwd_v2", "stage04", "v2",
                    "v1 + causal stage splitting (no blocks above the diagonal, masks only on it)"},
                   flash::max_smem_bytes<flash::v2::Config>(), flash::v2::run);

FS_EXPORT_ATTENTION(fs_flash_fwd_v2, fs::kFlashFwdV2)
