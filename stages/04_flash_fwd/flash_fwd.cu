// Stage 04: its versions as the registry lists them — each one's descriptor (what it takes, the GPUs
// it runs on, the shared memory its largest instance asks for) and C entry. Each version's launch is
// in flash_fwd_vN.cu (v5: v5_autotune.cu), a translation unit of its own so that they compile in
// parallel.
#include "flash_fwd.h"
#include "launch.cuh"
#include "v1_mma.cuh"
#include "v2_causal_split.cuh"
#include "v3_cp_async.cuh"
#include "v4_ldmatrix_swizzle.cuh"

namespace fs {

std::size_t flash_fwd_extra_bytes(const AttentionParams& p) { return std::size_t(lse_elems(p)) * sizeof(float); }

namespace {

constexpr KernelDesc version(const KernelName& name, std::size_t smem_bytes, AttentionRun run,
                             std::size_t (*extra_bytes)(const AttentionParams&) = flash_fwd_extra_bytes) {
  return attention_kernel(name, flash::kSupport, kStageArchs, smem_bytes, run, extra_bytes);
}

}  // namespace

const KernelDesc kFlashFwdV1 =
    version({"fs_flash_fwd_v1", "stage04", "v1", "mma.sync m16n8k16, warps over query rows, P in registers"},
            flash::max_smem_bytes<flash::v1::Config>(), flash::run_v1);
const KernelDesc kFlashFwdV2 =
    version({"fs_flash_fwd_v2", "stage04", "v2",
             "v1 + causal stage splitting (no blocks above the diagonal, masks only on it)"},
            flash::max_smem_bytes<flash::v2::Config>(), flash::run_v2);
const KernelDesc kFlashFwdV3 =
    version({"fs_flash_fwd_v3", "stage04", "v3", "v2 + K/V double-buffered with cp.async, one barrier per key block"},
            flash::max_smem_bytes<flash::v3::Config>(), flash::run_v3);
const KernelDesc kFlashFwdV4 =
    version({"fs_flash_fwd_v4", "stage04", "v4",
             "v3 + ldmatrix(.trans) fragments, XOR-swizzled tiles, addresses worked out once"},
            flash::max_smem_bytes<flash::v4::Config>(), flash::run_v4);
// v5's first candidate is v4's shape, which every GPU this build runs on can take; the tuner skips
// the others where they do not fit.
const KernelDesc kFlashFwdV5 = version(
    {"fs_flash_fwd_v5", "stage04", "v5",
     "v4's kernel with the tile shape per (head_dim, dtype, mask) picked by timing candidates on this GPU"},
    flash::max_smem_bytes<flash::v4::Config>(), flash::run_v5);
// v6 runs v5's shapes too, with a workspace for the splits.
const KernelDesc kFlashFwdV6 =
    version({"fs_flash_fwd_v6", "stage04", "v6",
             "v5 + split-KV: key slices in separate blocks where the grid underfills the GPU, merged by LSE"},
            flash::max_smem_bytes<flash::v4::Config>(), flash::run_v6, flash_fwd_v6_extra_bytes);

KernelList stage04_kernels() {
  static const KernelDesc* const versions[] = {&kFlashFwdV1, &kFlashFwdV2, &kFlashFwdV3, &kFlashFwdV4,
                                               &kFlashFwdV5, &kFlashFwdV6};
  return kernel_list(versions);
}

}  // namespace fs

FS_EXPORT_ATTENTION(fs_flash_fwd_v1, fs::kFlashFwdV1)
FS_EXPORT_ATTENTION(fs_flash_fwd_v2, fs::kFlashFwdV2)
FS_EXPORT_ATTENTION(fs_flash_fwd_v3, fs::kFlashFwdV3)
FS_EXPORT_ATTENTION(fs_flash_fwd_v4, fs::kFlashFwdV4)
FS_EXPORT_ATTENTION(fs_flash_fwd_v5, fs::kFlashFwdV5)
FS_EXPORT_ATTENTION(fs_flash_fwd_v6, fs::kFlashFwdV6)
