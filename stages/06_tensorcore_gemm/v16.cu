// Stage 06 v16 (int8 -> int32): its launch (the repack, then its product kernel), descriptor and C
// entry, fs_gemm_v16. Every other layout, and rows already 16-byte aligned, are v15's call.
#include <algorithm>
#include <cstdint>

#include "common/lib/workspace.h"
#include "stages/06_tensorcore_gemm/launch.cuh"
#include "stages/06_tensorcore_gemm/versions.h"
#include "stages/06_tensorcore_gemm/v16_repacked_rows_int8.cuh"

namespace fs {

namespace {

// v16 repacks A and B (16-byte rows, K rounded up to whole k-tiles) where both are stored k-contiguous
// and their rows are narrower than 16 bytes; everything else is v15's call.
bool v16_repacks(const GemmParams& p) { return !p.trans_a && p.trans_b && gemm::operand_copy_bytes(p, 1) < 16; }

// The product on the repacked rows q, one block per 128×256 tile of C. dependent: launched as the
// programmatic dependent of the repack before it on the stream (code compiled for sm_90 and later): its
// blocks may be scheduled before the repack has finished, and wait in griddepcontrol.wait (the
// kernel's) before they read A and B.
cudaError_t launch_product(const GemmParams& q, cudaStream_t stream, bool dependent) {
  using namespace gemm_v16;
  if (const cudaError_t err = gemm::allow_smem(gemm_v16_kernel, Config::kSmemBytes); err != cudaSuccess) return err;
  const bool c_pairs = gemm::pairs_aligned(q.c, q.ldc, 4);
  cudaLaunchAttribute after_previous{};
  after_previous.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  after_previous.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(gemm::tile_count(q, kBM, kBN));
  config.blockDim = dim3(unsigned(kThreads));
  config.dynamicSmemBytes = Config::kSmemBytes;
  config.stream = stream;
  config.attrs = dependent ? &after_previous : nullptr;
  config.numAttrs = dependent ? 1 : 0;
  return cudaLaunchKernelEx(&config, gemm_v16_kernel, q.m, q.n, q.k, q.alpha, static_cast<const int8_t*>(q.a), q.lda,
                            static_cast<const int8_t*>(q.b), q.ldb, q.beta, static_cast<int32_t*>(q.c), q.ldc, c_pairs);
}

// The workspace is stream-ordered, from the device's memory pool: after the first call of a size,
// nothing new is allocated.
Status run_v16(const GemmParams& p, cudaStream_t stream) {
  if (!v16_repacks(p)) return kGemmV15.run_gemm(p, stream);
  const int width = gemm::operand_copy_bytes(p, 1);  // 8, 4 or 1 (element copies)
  const gemm_v16::RepackPlan plan = gemm_v16::plan_repack(p);
  if (plan.bytes == 0) return Status::InvalidSize;
  // Programmatic dependent launch where the product's code holds the wait: code compiled for sm_90 or
  // later (ptxVersion: the architecture it was compiled for, 80 where a newer GPU runs sm_80's PTX).
  cudaFuncAttributes product{};
  FS_RETURN_IF_CUDA_ERROR(cudaFuncGetAttributes(&product, gemm_v16::gemm_v16_kernel));
  const bool dependent = product.ptxVersion >= 90;
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
    FS_RETURN_IF_CUDA_ERROR(launch_product(q, stream, dependent));
    FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());  // a refused launch shows up here
    return Status::Success;
  });
}

std::size_t v16_workspace_bytes(const GemmParams& p) {
  return v16_repacks(p) ? std::size_t(gemm_v16::plan_repack(p).bytes) : 0;
}

}  // namespace

// A block asks for its product kernel's shared memory, or v15's where v16 hands the call on: the
// descriptor states the larger, so that the device check holds for both.
const KernelDesc kGemmV16 = gemm_kernel(
    {"fs_gemm_v16", "stage06", "v16",
     "v15 on A and B repacked into rows of whole 16-byte k-tiles, where both are k-contiguous and their rows narrower"},
    kInt8Support, kStageArchs, std::max(gemm_v16::Config::kSmemBytes, kGemmV15SmemBytes), run_v16,
    v16_workspace_bytes);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v16, fs::kGemmV16)
