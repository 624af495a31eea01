// Stage 06 v16 (int8 -> int32): its launch (the repack, then v15's 16-byte kernel), descriptor and C
// entry, fs_gemm_v16. Every other layout, and rows already 16-byte aligned, are v15's call.
#include <algorithm>
#include <cstdint>

#include "common/lib/device.h"
#include "common/lib/workspace.h"
#include "stages/06_tensorcore_gemm/launch.cuh"
#include "stages/06_tensorcore_gemm/versions.h"
#include "stages/06_tensorcore_gemm/v16_repacked_rows_int8.cuh"

namespace fs {

namespace {

// v16 repacks A and B (16-byte rows, K rounded up to whole k-tiles) where both are stored k-contiguous
// and their rows are narrower than 16 bytes; everything else is v15's call.
bool v16_repacks(const GemmParams& p) { return !p.trans_a && p.trans_b && gemm::operand_copy_bytes(p, 1) < 16; }

// The workspace is stream-ordered, from the device's memory pool: after the first call of a size,
// nothing new is allocated.
Status run_v16(const GemmParams& p, cudaStream_t stream) {
  if (!v16_repacks(p)) return kGemmV15.run_gemm(p, stream);
  const int width = gemm::operand_copy_bytes(p, 1);  // 8, 4 or 1 (element copies)
  const gemm_v16::RepackPlan plan = gemm_v16::plan_repack(p);
  if (plan.bytes == 0) return Status::InvalidSize;
  DeviceProps dev;
  FS_RETURN_IF_ERROR(current_device(&dev));
  const bool dependent = dev.cc >= 90;  // programmatic dependent launch: Hopper on
  return with_workspace(std::size_t(plan.bytes), stream, [&](void* ws) -> Status {
    gemm_v16::Repack a = plan.a, b = plan.b;
    a.dst = static_cast<int8_t*>(ws);
    b.dst = static_cast<int8_t*>(ws) + plan.b_offset;
    // 256 threads a block, a 16-byte chunk each per step; at most 1024 blocks, which stride over the rest.
    constexpr int kThreads = 256, kMaxBlocks = 1024;
    const int64_t blocks = std::min<int64_t>((a.chunks() + b.chunks() + kThreads - 1) / kThreads, kMaxBlocks);
    const dim3 grid{unsigned(blocks)}, block{unsigned(kThreads)};
    if (width == 8) gemm_v16::repack_rows_kernel<8><<<grid, block, 0, stream>>>(a, b);
    else if (width == 4) gemm_v16::repack_rows_kernel<4><<<grid, block, 0, stream>>>(a, b);
    else gemm_v16::repack_rows_kernel<1><<<grid, block, 0, stream>>>(a, b);
    FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
    GemmParams q = p;
    q.a = a.dst;
    q.lda = a.ld_out;
    q.b = b.dst;
    q.ldb = b.ld_out;
    q.k = plan.k_padded;
    // The product is launched while the repack runs and waits for its writes in griddepcontrol.wait:
    // the launch and the blocks' start overlap the repack's last blocks.
    return gemm_v15_run_16b(q, stream, dependent);
  });
}

std::size_t v16_workspace_bytes(const GemmParams& p) {
  return v16_repacks(p) ? std::size_t(gemm_v16::plan_repack(p).bytes) : 0;
}

}  // namespace

// The product is v15's kernel: v16 asks for v15's shared memory.
const KernelDesc kGemmV16 = gemm_kernel(
    {"fs_gemm_v16", "stage06", "v16",
     "v15 on A and B repacked into rows of whole 16-byte k-tiles, where both are k-contiguous and their rows narrower"},
    kInt8Support, kStageArchs, kGemmV15SmemBytes, run_v16, v16_workspace_bytes);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v16, fs::kGemmV16)
