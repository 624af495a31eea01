// Stage 05: its versions as the registry lists them — each one's descriptor (what it takes, the GPUs it
// runs on, the shared memory it asks for, the memory it allocates) and C entry. Each version's launch is
// in flash_bwd_vN.cu, a translation unit of its own so that they compile in parallel.
#include <algorithm>
#include <limits>

#include "common/lib/flops.h"
#include "common/lib/sizes.h"
#include "flash_bwd.h"
#include "launch.h"
#include "v1_fp32.cuh"
#include "v2_mma.cuh"
#include "v4_cp_async.cuh"
#include "v5_ldmatrix_swizzle.cuh"
#include "v6_dq_ldmatrix.cuh"
#include "v7_fa2_blocks.cuh"
#include "v8_fa2_warps.cuh"
#include "v9_tiles_per_head_dim.cuh"
#include "v10_addresses_once.cuh"

namespace fs {

std::size_t flash_bwd_v0_extra_bytes(const AttentionParams& p) {
  const int64_t element = int64_t(dtype_size(dtype_of(p)));
  // P and dS past 2^63 bytes: more than any GPU holds, reported as the largest size rather than wrapped.
  if (!fits_product({p.batch, p.heads, p.seq_q, p.seq_k, 2 * element})) return std::numeric_limits<std::size_t>::max();
  return 2 * std::size_t(p.batch * p.heads) * std::size_t(p.seq_q * p.seq_k) * dtype_size(dtype_of(p)) +
         delta_extra_bytes(p);
}

double flash_bwd_v0_traffic_bytes(const AttentionParams& p) {
  const double matrix = double(p.batch * p.heads) * double(p.seq_q) * double(p.seq_k) * double(dtype_size(dtype_of(p)));
  return attention_bwd_min_bytes(p) + 6.0 * matrix;
}

const KernelDesc kFlashBwdV0 = attention_bwd_kernel(
    {"fs_flash_bwd_v0", "stage05", "v0",
     "naive: P and dS materialized in DRAM (two N×N buffers), one thread per element, five kernels"},
    bwd::v0::kSupport, kStageArchs, /*smem_bytes=*/0, bwd::run_v0, flash_bwd_v0_extra_bytes,
    flash_bwd_v0_traffic_bytes);

const KernelDesc kFlashBwdV1 = attention_bwd_kernel(
    {"fs_flash_bwd_v1", "stage05", "v1",
     "fp32: delta once, K/V resident, Q/dO streamed, P recomputed from LSE, dQ by atomics (or a 2nd pass)"},
    bwd::v1::kSupport, kStageArchs,
    bwd::v1::HeadDimList::max_of([](auto d) { return bwd::v1::Config<decltype(d)::value>::kSmemBytes; }),
    bwd::run_v1, delta_extra_bytes);

std::size_t flash_bwd_v2_extra_bytes(const AttentionParams& p) {
  return std::size_t(q_elems(p)) * sizeof(float) + delta_extra_bytes(p);
}

// v2 and v3 (whose kernels have v2's tiles): the larger of the K/V and the dQ kernel's shared memory,
// at the largest head_dim.
constexpr std::size_t kMmaSmemBytes = bwd::v2::HeadDimList::max_of([](auto d) {
  constexpr int D = decltype(d)::value;
  return std::max(bwd::v2::Config<D>::kSmemBytes, bwd::v2::DqConfig<D>::kSmemBytes);
});

const KernelDesc kFlashBwdV2 = attention_bwd_kernel(
    {"fs_flash_bwd_v2", "stage05", "v2",
     "tensor cores (mma.sync, fp16/bf16): v1's schedule, dQ in fp32 by atomics (or a 2nd pass), causal split"},
    bwd::v2::kSupport, kStageArchs, kMmaSmemBytes, bwd::run_v2, flash_bwd_v2_extra_bytes, /*traffic_bytes=*/nullptr,
    delta_extra_bytes);

// v3 takes what v2 takes and allocates what v2 allocates: it changes only how dQ is added.
const KernelDesc kFlashBwdV3 = attention_bwd_kernel(
    {"fs_flash_bwd_v3", "stage05", "v3",
     "v2 with the dQ atomics wide: red.global.add.v4.f32, four neighbouring columns per thread (sm_90)"},
    bwd::v2::kSupport, kStageArchs, kMmaSmemBytes, bwd::run_v3, flash_bwd_v2_extra_bytes, /*traffic_bytes=*/nullptr,
    delta_extra_bytes);

// v4 to v10 take what v3 takes and allocate what v3 allocates; their K/V kernels (tiles KvConfig) ask
// for shared memory of their own (two stages of the query tiles; v5's to v10's unpadded), which v2's dQ kernel
// may still exceed.
template <template <int> class KvConfig>
constexpr std::size_t streamed_smem_bytes() {
  return bwd::v2::HeadDimList::max_of([](auto d) {
    constexpr int D = decltype(d)::value;
    return std::max(KvConfig<D>::kSmemBytes, bwd::v2::DqConfig<D>::kSmemBytes);
  });
}

const KernelDesc kFlashBwdV4 = attention_bwd_kernel(
    {"fs_flash_bwd_v4", "stage05", "v4",
     "v3 with Q_i, dO_i, LSE_i, delta_i double-buffered through cp.async: tile i+1 lands while tile i computes"},
    bwd::v2::kSupport, kStageArchs, streamed_smem_bytes<bwd::v4::Config>(), bwd::run_v4, flash_bwd_v2_extra_bytes,
    /*traffic_bytes=*/nullptr, delta_extra_bytes);

const KernelDesc kFlashBwdV5 = attention_bwd_kernel(
    {"fs_flash_bwd_v5", "stage05", "v5",
     "v4 with fragments by ldmatrix (.trans for the column operands) from XOR-swizzled, unpadded tiles"},
    bwd::v2::kSupport, kStageArchs, streamed_smem_bytes<bwd::v5::Config>(), bwd::run_v5, flash_bwd_v2_extra_bytes,
    /*traffic_bytes=*/nullptr, delta_extra_bytes);

const KernelDesc kFlashBwdV6 = attention_bwd_kernel(
    {"fs_flash_bwd_v6", "stage05", "v6",
     "v5 with dQ's K operand by ldmatrix.trans too, its columns regrouped for the wide red by one lane exchange"},
    bwd::v2::kSupport, kStageArchs, streamed_smem_bytes<bwd::v6::Config>(), bwd::run_v6, flash_bwd_v2_extra_bytes,
    /*traffic_bytes=*/nullptr, delta_extra_bytes);

const KernelDesc kFlashBwdV7 = attention_bwd_kernel(
    {"fs_flash_bwd_v7", "stage05", "v7",
     "v6 on FlashAttention-2's block shape: 128 resident keys and 8 warps per block (half the dQ reductions)"},
    bwd::v2::kSupport, kStageArchs, streamed_smem_bytes<bwd::v7::Config>(), bwd::run_v7, flash_bwd_v2_extra_bytes,
    /*traffic_bytes=*/nullptr, delta_extra_bytes);

const KernelDesc kFlashBwdV8 = attention_bwd_kernel(
    {"fs_flash_bwd_v8", "stage05", "v8",
     "v7 with FlashAttention-2's warp tiles: S, dP as 2 x 4 warps of 32 x 32, dK, dV 32 keys x D/2, P and dS via smem"},
    bwd::v2::kSupport, kStageArchs, streamed_smem_bytes<bwd::v8::Config>(), bwd::run_v8, flash_bwd_v2_extra_bytes,
    /*traffic_bytes=*/nullptr, delta_extra_bytes);

const KernelDesc kFlashBwdV9 = attention_bwd_kernel(
    {"fs_flash_bwd_v9", "stage05", "v9",
     "v8 with the query tile sized per head_dim: Br = 128 at D = 64 (S, dP warp tiles 64 x 32, dQ 32 x 32), 64 at D = 128"},
    bwd::v2::kSupport, kStageArchs, streamed_smem_bytes<bwd::v9::Config>(), bwd::run_v9, flash_bwd_v2_extra_bytes,
    /*traffic_bytes=*/nullptr, delta_extra_bytes);

const KernelDesc kFlashBwdV10 = attention_bwd_kernel(
    {"fs_flash_bwd_v10", "stage05", "v10",
     "v9 with each thread's copy and dQ-reduction addresses worked out once per block, no bounds tests on inner tiles"},
    bwd::v2::kSupport, kStageArchs, streamed_smem_bytes<bwd::v10::Config>(), bwd::run_v10, flash_bwd_v2_extra_bytes,
    /*traffic_bytes=*/nullptr, delta_extra_bytes);

// The delta ablation: v9 recomputing delta_i in every key block. Not in the registry's list and no C
// entry: the benchmark and the tests name it. It allocates the dQ workspace alone on the atomic path
// (a delta the caller asks for is still the preprocess's); the deterministic path is v2's.
std::size_t flash_bwd_v9_delta_in_loop_extra_bytes(const AttentionParams& p) {
  return std::size_t(q_elems(p)) * sizeof(float);
}

const KernelDesc kFlashBwdV9DeltaInLoop = attention_bwd_kernel(
    {"fs_flash_bwd_v9_delta_in_loop", "stage05", "v9_delta_in_loop",
     "ablation: v9 without the preprocess's delta, each key block recomputing rowsum(dO_i * O_i) from O_i it streams"},
    bwd::v2::kSupport, kStageArchs, streamed_smem_bytes<bwd::v9::ConfigDeltaInLoop>(), bwd::run_v9_delta_in_loop,
    flash_bwd_v9_delta_in_loop_extra_bytes, /*traffic_bytes=*/nullptr, delta_extra_bytes);

KernelList stage05_kernels() {
  static const KernelDesc* const versions[] = {&kFlashBwdV0, &kFlashBwdV1, &kFlashBwdV2, &kFlashBwdV3,
                                               &kFlashBwdV4, &kFlashBwdV5, &kFlashBwdV6,
                                               &kFlashBwdV7, &kFlashBwdV8, &kFlashBwdV9, &kFlashBwdV10};
  return kernel_list(versions);
}

}  // namespace fs

FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_v0, fs::kFlashBwdV0)
FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_v1, fs::kFlashBwdV1)
FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_v2, fs::kFlashBwdV2)
FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_v3, fs::kFlashBwdV3)
FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_v4, fs::kFlashBwdV4)
FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_v5, fs::kFlashBwdV5)
FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_v6, fs::kFlashBwdV6)
FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_v7, fs::kFlashBwdV7)
FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_v8, fs::kFlashBwdV8)
FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_v9, fs::kFlashBwdV9)
FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_v10, fs::kFlashBwdV10)
