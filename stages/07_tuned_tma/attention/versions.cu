// Stage 07 attention: its versions as the registry lists them — each one's descriptor (what it takes,
// the GPUs it runs on, the shared memory its largest instance asks for) and C entry. Each version's
// launch is in flash_tma_vN.cu.
#include "common/lib/device.h"
#include "common/lib/flops.h"
#include "common/lib/split_kv.h"
#include "stages/07_tuned_tma/attention/attention.h"
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v1_tma_wgmma.cuh"
#include "stages/07_tuned_tma/attention/v2_warp_specialization.cuh"
#include "stages/07_tuned_tma/attention/v3_intra_warpgroup_overlap.cuh"
#include "stages/07_tuned_tma/attention/v4_pingpong.cuh"
#include "stages/07_tuned_tma/attention/v5_split_kv.cuh"
#include "stages/07_tuned_tma/attention/v6_packed_gqa.cuh"
#include "stages/07_tuned_tma/attention/v7_three_consumers.cuh"
#include "stages/07_tuned_tma/attention/v8_split_last_wave.cuh"
#include "stages/07_tuned_tma/attention/v9_fp8.cuh"
#include "stages/07_tuned_tma/attention/v10_k_apart.cuh"

namespace fs {

namespace {

constexpr KernelDesc version(const KernelName& name, std::size_t smem_bytes, AttentionRun run) {
  return attention_kernel(name, flash_tma::kSupport, kStageArchs, smem_bytes, run, lse_extra_bytes);  // no workspace: the LSE it writes
}

}  // namespace

const KernelDesc kFlashTmaV1 = version(
    {"fs_flash_fwd_tma_v1", "stage07/attention", "v1",
     "TMA into 128B-swizzled smem, S = QK^T by wgmma from descriptors, O += PV with P from registers, one warpgroup"},
    flash_tma::max_smem_bytes<flash_tma::v1::Config>(), flash_tma::run_v1);

const KernelDesc kFlashTmaV2 = version(
    {"fs_flash_fwd_tma_v2", "stage07/attention", "v2",
     "v1 warp-specialized: a TMA producer warpgroup, two consumer warpgroups (Br = 128), full/empty mbarriers, setmaxnreg"},
    flash_tma::max_smem_bytes<flash_tma::ws::DefaultConfig>(), flash_tma::run_v2);

const KernelDesc kFlashTmaV3 = version(
    {"fs_flash_fwd_tma_v3", "stage07/attention", "v3",
     "v2 with S_j = QK_j^T issued before P_{j-1}V_{j-1}, and block j's softmax run while that product runs"},
    flash_tma::max_smem_bytes<flash_tma::ws::DefaultConfig>(), flash_tma::run_v3);

const KernelDesc kFlashTmaV4 = version(
    {"fs_flash_fwd_tma_v4", "stage07/attention", "v4",
     "v3 with the consumers taking turns at the tensor cores (pingpong): one's softmax under the other's products"},
    flash_tma::max_smem_bytes<flash_tma::ws::DefaultConfig>(), flash_tma::run_v4);

// v5, v6 and v8: the LSE, plus the workspace kWorkspace(params, SMs) the version takes for these params
// on the current GPU (none where it cannot tell: no device, or sizes no launch would take).
template <std::size_t (*kWorkspace)(const AttentionParams&, int)>
std::size_t workspace_extra_bytes(const AttentionParams& p) {
  std::size_t bytes = lse_extra_bytes(p);
  DeviceProps dev;
  if (validate(p, flash_tma::kSupport) == Status::Success && current_device(&dev) == Status::Success)
    bytes += kWorkspace(p, dev.sms);
  return bytes;
}
// v5's and v6's workspace: that of the split count kSplits takes.
template <int (*kSplits)(const AttentionParams&, int)>
std::size_t split_workspace(const AttentionParams& p, int sms) {
  return split_workspace_bytes(p, kSplits(p, sms));
}

const KernelDesc kFlashTmaV5 = attention_kernel(
    {"fs_flash_fwd_tma_v5", "stage07/attention", "v5",
     "v4 with a query tile's keys split over several blocks where the grid underfills the GPU, the slices merged by their LSE"},
    flash_tma::kSupport, kStageArchs, flash_tma::max_smem_bytes<flash_tma::ws::DefaultConfig>(), flash_tma::run_v5,
    workspace_extra_bytes<split_workspace<flash_tma::v5_splits>>);

const KernelDesc kFlashTmaV6 = attention_kernel(
    {"fs_flash_fwd_tma_v6", "stage07/attention", "v6",
     "v5 with the query heads of a K/V group packed into one tile (query-major), so K and V are read once per group"},
    flash_tma::kSupport, kStageArchs, flash_tma::max_smem_bytes<flash_tma::ws::DefaultConfig>(), flash_tma::run_v6,
    workspace_extra_bytes<split_workspace<flash_tma::v6_splits>>);

const KernelDesc kFlashTmaV7 = version(
    {"fs_flash_fwd_tma_v7", "stage07/attention", "v7",
     "v3 with three consumer warpgroups (Br = 192) at D = 64 and 128, 160 registers each: Bc = 128 and 80"},
    flash_tma::max_smem_bytes<flash_tma::v7::Config>(), flash_tma::run_v7);

const KernelDesc kFlashTmaV8 = attention_kernel(
    {"fs_flash_fwd_tma_v8", "stage07/attention", "v8",
     "v7 with the tiles of the grid's last, partial wave split over their keys into several blocks, merged by their LSE"},
    flash_tma::kSupport, kStageArchs, flash_tma::max_smem_bytes<flash_tma::v8::Config>(), flash_tma::run_v8,
    workspace_extra_bytes<flash_tma::v8_workspace_bytes>);

// v9: the LSE and Vᵀ's workspace (none for params it would refuse); O in bf16, not the fp8 it reads.
std::size_t v9_extra_bytes(const AttentionParams& p) {
  return lse_extra_bytes(p) + (validate(p, flash_tma::kFp8Support) == Status::Success ? flash_tma::v9_workspace_bytes(p) : 0);
}
constexpr KernelDesc writes_bf16(KernelDesc k) {
  k.info.out_dtypes = dtype_bit(DType::BF16);
  return k;
}

const KernelDesc kFlashTmaV9 = writes_bf16(attention_kernel(
    {"fs_flash_fwd_tma_v9", "stage07/attention", "v9",
     "v3 on fp8 (e4m3) Q, K, V with per-tensor scales: wgmma k32 at twice the fp16 rate, V transposed by a pre-pass, P in fp8, O in bf16"},
    flash_tma::kFp8Support, kStageArchs, flash_tma::v9::Config<128>::kSmemBytes, flash_tma::run_v9, v9_extra_bytes));

const KernelDesc kFlashTmaV10 = attention_kernel(
    {"fs_flash_fwd_tma_v10", "stage07/attention", "v10",
     "v8 with K_j's half of a stage released as soon as S_j is done, apart from V_j's, so the producer loads ahead at D = 256"},
    flash_tma::kSupport, kStageArchs, flash_tma::max_smem_bytes<flash_tma::v10::Config>(), flash_tma::run_v10,
    workspace_extra_bytes<flash_tma::v10_workspace_bytes>);

namespace {

// A launch of version k with a forced split, validated as its C entry validates: the params, the
// GPU, then the split (`bad_split`), before run(prepared problem).
template <class Run>
Status launch_forced(const KernelDesc& k, const AttentionParams& p, bool bad_split, Run run) {
  FS_RETURN_IF_ERROR(validate(p, k.attention));
  FS_RETURN_IF_ERROR(check_current_device(k.info, largest_tensor_bytes(p)));
  if (bad_split) return Status::InvalidSize;
  return run(prepare(p));
}

}  // namespace

Status launch_flash_tma_v5_splits(const AttentionParams& p, int splits, cudaStream_t stream) {
  return launch_forced(kFlashTmaV5, p, splits < 1,
                       [&](const AttentionProblem& pr) { return flash_tma::run_v5_splits(pr, splits, stream); });
}

Status launch_flash_tma_v6_splits(const AttentionParams& p, int splits, cudaStream_t stream) {
  return launch_forced(kFlashTmaV6, p, splits < 1,
                       [&](const AttentionProblem& pr) { return flash_tma::run_v6_splits(pr, splits, stream); });
}

Status launch_flash_tma_v8_split(const AttentionParams& p, int64_t tail, int splits, cudaStream_t stream) {
  return launch_forced(kFlashTmaV8, p, tail < 0 || splits < 1,
                       [&](const AttentionProblem& pr) { return flash_tma::run_v8_split(pr, tail, splits, stream); });
}

KernelList stage07_attention_kernels() {
  static const KernelDesc* const versions[] = {&kFlashTmaV1, &kFlashTmaV2, &kFlashTmaV3, &kFlashTmaV4,
                                               &kFlashTmaV5, &kFlashTmaV6, &kFlashTmaV7, &kFlashTmaV8,
                                               &kFlashTmaV9, &kFlashTmaV10};
  return kernel_list(versions);
}

}  // namespace fs

FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v1, fs::kFlashTmaV1)
FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v2, fs::kFlashTmaV2)
FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v3, fs::kFlashTmaV3)
FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v4, fs::kFlashTmaV4)
FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v5, fs::kFlashTmaV5)
FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v6, fs::kFlashTmaV6)
FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v7, fs::kFlashTmaV7)
FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v8, fs::kFlashTmaV8)
FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v9, fs::kFlashTmaV9)
FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v10, fs::kFlashTmaV10)
