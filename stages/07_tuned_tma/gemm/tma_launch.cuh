// Stage 07 gemm: how the fp16/bf16 TMA + wgmma versions (v1 … v5, v7 … v9) are launched, once for all
// of them: the problem they take, the grid (a block per tile, per SM, or per cluster the GPU holds), the
// tensor maps and C's TMA store, and the launch of one instance per transpose pair. Each version's
// tma_wgmma_vN.cu describes the version (struct VN, below) and registers it (its KernelDesc and C
// entry); v6 (int8) has its own launch, tma_wgmma_v6.cu.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "common/lib/device.h"
#include "common/lib/gemm_launch.h"
#include "stages/07_tuned_tma/gemm/gemm.h"
#include "stages/07_tuned_tma/gemm/tma_gemm.cuh"

namespace fs::gemm_tma {

// fp16 or bf16 in; C in fp32 or either 16-bit type. A's and B's bases and rows must be 16-byte
// multiples: what TMA reads (validation refuses anything else with a named code).
inline const GemmSupport kHalfSupport{Dtypes<DType::FP16, DType::BF16>::kMask,
                                      Dtypes<DType::FP32, DType::FP16, DType::BF16>::kMask, /*operand_align=*/16};

// What the launch needs of a version, named alike for each: its block tile and size, whether it is
// persistent (a block per SM that loops over tiles, else a block per tile), how many blocks stacked
// along M make one cluster (each loading its share of B's tile for all: kBN / kClusterM wide boxes),
// whether it stores C with TMA (its kernel then takes C's tensor map and c_tma), its shared-memory
// Config, its kernel for T and the transposes. For example tma_wgmma_v9.cu's V9.

// C's TMA store, for a version that has one: its tensor map, and whether this call uses it
// (gemm_tma::c_store_map).
struct CStore {
  CUtensorMap map{};
  bool use = false;
};

// One instance of version V (gemm::launch_transposes picks kTA, kTB): opt in to its shared memory,
// launch `blocks` blocks (grid_blocks). A clustered version's kernel names its cluster shape itself
// (__cluster_dims__), so the plain launch starts its blocks in clusters; `blocks` is a multiple of it.
template <class V>
struct Launch {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream, const CUtensorMap& a, const CUtensorMap& b,
                         const CStore& c, unsigned blocks) {
    const bool c_pairs = gemm::pairs_aligned(p.c, p.ldc, p.c_dtype == FS_FP32 ? 4 : 2);
    auto go = [&](auto kernel) {
      constexpr std::size_t smem = V::template Config<kTA, kTB>::kSmemBytes;
      if (const cudaError_t err = gemm::allow_smem(kernel, smem); err != cudaSuccess) return err;
      if constexpr (V::kTmaStore)
        kernel<<<blocks, V::kThreads, smem, stream>>>(a, b, c.map, p.m, p.n, p.k, p.alpha, p.beta, p.c, p.ldc,
                                                     p.c_dtype, c_pairs, c.use);
      else
        kernel<<<blocks, V::kThreads, smem, stream>>>(a, b, p.m, p.n, p.k, p.alpha, p.beta, p.c, p.ldc, p.c_dtype,
                                                     c_pairs);
      return cudaSuccess;
    };
    return p.ab_dtype == FS_FP16 ? go(V::template kernel<__half, kTA, kTB>())
                                 : go(V::template kernel<__nv_bfloat16, kTA, kTB>());
  }
};

// How many clusters of V the current GPU holds at once (cudaOccupancyMaxActiveClusters: kClusterM
// blocks of kThreads threads and V's shared memory each, on SMs of one GPC). Every instance of V has
// the same block, shared memory and registers (168 per thread, fixed by its launch bounds), so one
// instance answers for all; and the answer depends on nothing else, so it is read once per device
// and thread, as current_device reads the device's properties.
template <class V>
Status max_active_clusters(int* clusters) {
  DeviceProps dev;
  FS_RETURN_IF_ERROR(current_device(&dev));
  thread_local int known[16];
  thread_local bool read[16] = {};
  if (dev.device >= 0 && dev.device < 16 && read[dev.device]) {
    *clusters = known[dev.device];
    return Status::Success;
  }
  constexpr std::size_t smem = V::template Config<false, false>::kSmemBytes;
  static_assert(smem == gemm::max_smem_bytes<V::template Config>(), "every instance asks for the same shared memory");
  const auto kernel = V::template kernel<__half, false, false>();
  FS_RETURN_IF_CUDA_ERROR(gemm::allow_smem(kernel, smem));  // the query counts the opted-in size
  cudaLaunchAttribute cluster_shape{};
  cluster_shape.id = cudaLaunchAttributeClusterDimension;
  cluster_shape.val.clusterDim.x = V::kClusterM;  // as the kernel's __cluster_dims__ (the runtime checks they match)
  cluster_shape.val.clusterDim.y = 1;
  cluster_shape.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(V::kClusterM);  // one cluster: the query asks how many such fit at once
  config.blockDim = dim3(V::kThreads);
  config.dynamicSmemBytes = smem;
  config.attrs = &cluster_shape;
  config.numAttrs = 1;
  FS_RETURN_IF_CUDA_ERROR(cudaOccupancyMaxActiveClusters(clusters, kernel, &config));
  if (dev.device >= 0 && dev.device < 16) known[dev.device] = *clusters, read[dev.device] = true;
  return Status::Success;
}

// The grid: one block per kBM × kBN tile of C; for a persistent version one per SM
// (gemm_tma::persistent_blocks); for a clustered one kClusterM blocks per cluster, as many clusters as
// the GPU holds at once and never more than there are cluster tiles (kClusterM·kBM × kBN), through
// gemm_tma::cluster_grid.
template <class V>
Status grid_blocks(const GemmParams& p, unsigned* blocks) {
  if constexpr (V::kClusterM > 1) {
    static_assert(V::kPersistent, "a clustered version loops over cluster tiles");
    constexpr int64_t kClusterBM = int64_t(V::kClusterM) * V::kBM;
    const int64_t cluster_tiles = (p.m + kClusterBM - 1) / kClusterBM * ((p.n + V::kBN - 1) / V::kBN);
    int clusters = 0;
    FS_RETURN_IF_ERROR(max_active_clusters<V>(&clusters));
    return gemm_tma::cluster_grid(cluster_tiles, clusters, V::kClusterM, blocks);
  } else if constexpr (V::kPersistent) {
    return gemm_tma::persistent_blocks<V::kBM, V::kBN>(p, blocks);
  } else {
    *blocks = gemm::tile_count(p, V::kBM, V::kBN);
    return Status::Success;
  }
}

// The tensor maps are encoded on every call (tensor_map.h says why not cached yet), with the boxes of
// V's tile: A's whole, B's share of one block of a cluster (all of it without clusters), and for a
// version that stores C with TMA, C's (where the call allows it).
template <class V>
Status run(const GemmParams& p, cudaStream_t stream) {
  CUtensorMap a, b;
  FS_RETURN_IF_ERROR((gemm_tma::encode_operand_maps<V::kBM, V::kBN / V::kClusterM>(p, &a, &b)));
  CStore c;
  if constexpr (V::kTmaStore) FS_RETURN_IF_ERROR(gemm_tma::c_store_map<V::kCBoxRows>(p, &c.map, &c.use));
  unsigned blocks = 0;
  FS_RETURN_IF_ERROR(grid_blocks<V>(p, &blocks));
  return gemm::launch_transposes<Launch<V>>(p, stream, a, b, c, blocks);
}

}  // namespace fs::gemm_tma
