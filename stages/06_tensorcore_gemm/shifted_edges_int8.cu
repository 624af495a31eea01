// Stage 06: v15 (int8), v13 with every block's main loop free of bounds at 16- and 8-byte rows, and v16,
// v15 on rows repacked to 16 bytes — their launches, descriptors and C entries. Rows that are not 8-byte
// aligned go to v10 in v15. (A file of their own beside whole_tiles.cu: eight more kernels there would
// make that the longest compile of the stage.)
#include <algorithm>
#include <cstdint>

#include "common/lib/device.h"
#include "common/lib/gemm_launch.h"
#include "common/lib/workspace.h"
#include "gemm.h"
#include "mma_launch.h"
#include "v15_shifted_edges_int8.cuh"
#include "v16_repacked_rows_int8.cuh"

namespace fs {

namespace {

template <int kCopyBytes>
struct V15 {
  // dependent: behind v16's repack, as its programmatic dependent (gemm::launch_int8_kernel).
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream, bool dependent = false) {
    using namespace gemm_v15;
    return gemm::launch_int8_kernel(gemm_v15_kernel<kTA, kTB, kCopyBytes>, Config<kTA, kTB>::kSmemBytes, kBM, kBN,
                                    kThreads, p, stream, dependent);
  }
};

// 16- and 8-byte rows (bases and leading dimensions) take v15 at that width; narrower ones v10.
Status run_v15(const GemmParams& p, cudaStream_t stream) {
  switch (gemm::operand_copy_bytes(p, 1)) {
    case 16: return gemm::launch_transposes<V15<16>>(p, stream);
    case 8: return gemm::launch_transposes<V15<8>>(p, stream);
    default: return kGemmV10.run_gemm(p, stream);
  }
}

// v16 repacks A and B (16-byte rows, K rounded up to whole k-tiles) where both are stored k-contiguous
// and their rows are narrower than 16 bytes; everything else is v15's call.
bool v16_repacks(const GemmParams& p) { return !p.trans_a && p.trans_b && gemm::operand_copy_bytes(p, 1) < 16; }

Status run_v16(const GemmParams& p, cudaStream_t stream) {
  if (!v16_repacks(p)) return run_v15(p, stream);
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
    return gemm::launch_transposes<V15<16>>(q, stream, dependent);
  });
}

std::size_t v16_workspace_bytes(const GemmParams& p) {
  return v16_repacks(p) ? std::size_t(gemm_v16::plan_repack(p).bytes) : 0;
}

}  // namespace

// v15 opts in to more than 48 KB of shared memory: v10's, the largest of the transpose instances.
const KernelDesc kGemmV15 = gemm_kernel(
    {"fs_gemm_v15", "stage06", "v15",
     "v13 with tiles past M or N moved inside, K's tail as a first k-tile and 8-byte rows unchecked too"},
    kInt8Support, kStageArchs, gemm::max_smem_bytes<gemm_v10::Config>(), run_v15);
const KernelDesc kGemmV16 = gemm_kernel(
    {"fs_gemm_v16", "stage06", "v16",
     "v15 on A and B repacked into rows of whole 16-byte k-tiles, where both are k-contiguous and their rows narrower"},
    kInt8Support, kStageArchs, gemm::max_smem_bytes<gemm_v10::Config>(), run_v16, v16_workspace_bytes);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v15, fs::kGemmV15)
FS_EXPORT_GEMM(fs_gemm_v16, fs::kGemmV16)
