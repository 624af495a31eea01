// Stage 04 v1: the launch of v1_mma.cuh's kernel, its descriptor and its C entry, in a translation
// unit of its own so that the versions compile in parallel.
#include "launch.cuh"
#include "v1_mma.cuh"
#include "versions.h"

namespace fs::flash::v1 {
namespace {

Status run(const AttentionProblem& pr, cudaStream_t stream) {
  return launch_version<Config>(pr, stream, [](auto t, auto d) {
    return flash_fwd_v1_kernel<typename decltype(t)::type, decltype(d)::value>;
  });
}

}  // namespace
}  // namespace fs::flash::v1

const fs::KernelDesc fs::kFlashFwdV1 =
    flash::version({"fs_flash_fwd_v1", "stage04", "v1", "mma.sync m16n8k16, warps over query rows, P in registers"},
                   flash::max_smem_bytes<flash::v1::Config>(), flash::v1::run);

FS_EXPORT_ATTENTION(fs_flash_fwd_v1, fs::kFlashFwdV1)
