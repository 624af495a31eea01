// Stage 04 v4: the launch of v4_ldmatrix_swizzle.cuh's kernel, its descriptor and its C entry, in a translation
// unit of its own so that the versions compile in parallel.
#include "launch.cuh"
#include "v4_ldmatrix_swizzle.cuh"
#include "versions.h"

namespace fs::flash::v4 {
namespace {

Status run(const AttentionProblem& pr, cudaStream_t stream) {
  return launch_version<Config>(pr, stream, [](auto t, auto d) {
    return flash_fwd_v4_kernel<typename decltype(t)::type, decltype(d)::value>;
  });
}

}  // namespace
}  // namespace fs::flash::v4

const fs::KernelDesc fs::kFlashFwdV4 =
    flash::version({"fs_flash_fwd_v4", "stage04", "v4",
                    "v3 + ldmatrix(.trans) fragments, XOR-swizzled tiles, addresses worked out once"},
                   flash::max_smem_bytes<flash::v4::Config>(), flash::v4::run, lse_extra_bytes,
                   flash::kStridedSupport);

FS_EXPORT_ATTENTION(fs_flash_fwd_v4, fs::kFlashFwdV4)
