// Stage 04 v3: the launch of v3_cp_async.cuh's kernel, its descriptor and its C entry, in a translation
// unit of its own so that the versions compile in parallel.
#include "launch.cuh"
#include "v3_cp_async.cuh"
#include "versions.h"

namespace fs::flash::v3 {
namespace {

Status run(const AttentionProblem& pr, cudaStream_t stream) {
  return launch_version<Config>(pr, stream, [](auto t, auto d) {
    return flash_fwd_v3_kernel<typename decltype(t)::type, decltype(d)::value>;
  });
}

}  // namespace
}  // namespace fs::flash::v3

const fs::KernelDesc fs::kFlashFwdV3 =
    flash::version({"fs_flash_fwd_v3", "stage04", "v3",
                    "v2 + K/V double-buffered with cp.async, one barrier per key block"},
                   flash::max_smem_bytes<flash::v3::Config>(), flash::v3::run);

FS_EXPORT_ATTENTION(fs_flash_fwd_v3, fs::kFlashFwdV3)
