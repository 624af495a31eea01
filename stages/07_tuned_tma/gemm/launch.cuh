// Stage 07 gemm: how the fp16/bf16 TMA + wgmma versions (v1 … v5, v7 … v12) are launched, once for all
// of them: the problem they take, the grid (a block per tile, per SM, or per cluster the GPU holds), the
// tensor maps and C's TMA store, and the launch of one instance per transpose pair. Each version's
// vN.cu describes the version (struct VN, below) and registers it (its KernelDesc and C entry); v6
// (int8) has its own launch in v6.cu, from the tensor maps and the persistent grid below.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "common/lib/device.h"
#include "common/lib/gemm.h"
#include "common/lib/gemm_launch.h"
#include "common/lib/tensor_map.h"
#include "stages/07_tuned_tma/gemm/tiles.cuh"
#include "stages/07_tuned_tma/gemm/versions.h"

namespace fs::gemm_tma {

// The tensor map OperandTile<mn_major, box_x>::load reads through: the operand as stored (x_extent =
// M or N), the box one load copies: one 128-byte row wide (64 16-bit elements, or 128 int8), as many
// rows as the tile has x (K-major) or as a row has elements (MN-major: the tile's k). Host code.
inline TensorMap2d operand_map(bool mn_major, int box_x, const void* base, DType t, int64_t x_extent, int64_t k_extent,
                               int64_t ld) {
  const int row_elements = kRowBytes / int(dtype_size(t));
  TensorMap2d m;
  m.base = base;
  m.dtype = t;
  m.ld = ld;
  m.cols = mn_major ? x_extent : k_extent;
  m.rows = mn_major ? k_extent : x_extent;
  m.box_cols = row_elements;  // 128 bytes: the swizzle span
  m.box_rows = mn_major ? row_elements : box_x;
  return m;
}

// The tensor maps of A and B for a block tile kBM × kBN × kBK, as TileA and TileB load them. InvalidSize
// for an extent TMA's signed 32-bit coordinates cannot reach, CudaError if the driver refuses (the
// alignment TMA needs was refused in validation already: GemmSupport::operand_align).
template <int kBM, int kBN>
Status encode_operand_maps(const GemmParams& p, CUtensorMap* a, CUtensorMap* b) {
  const DType t = DType(p.ab_dtype);
  FS_RETURN_IF_ERROR(encode_tensor_map(operand_map(p.trans_a, kBM, p.a, t, p.m, p.k, p.lda), a));
  return encode_tensor_map(operand_map(!p.trans_b, kBN, p.b, t, p.n, p.k, p.ldb), b);
}

// C's tensor map for a version that stores 16-bit C tiles with TMA (v7): boxes of kBoxRows × 64
// columns (128 bytes, the 128-byte swizzle's row), and whether this call may use it. It may when C is
// fp16 or bf16, beta = 0 (a TMA store writes, it cannot read C to add beta·C), C's base and rows are
// 16-byte multiples (check_tensor_map), and so is a row's used part, N · 2 bytes: where N ends inside
// a 16-byte chunk, the H100 wrote the whole chunk: every row's bytes past column N up to the chunk's
// end, zeros, into C's padding (stage 07's tests caught it at every N not a multiple of 8; CUDA 13.0,
// driver 580).
// Otherwise *use = false, nothing is encoded, and the kernel stores from registers. CudaError only if
// the driver refuses a map that passed those checks. Host code.
template <int kBoxRows>
Status c_store_map(const GemmParams& p, CUtensorMap* map, bool* use) {
  *use = false;
  if ((p.c_dtype != FS_FP16 && p.c_dtype != FS_BF16) || p.beta != 0.0f || p.n % 8 != 0) return Status::Success;
  TensorMap2d c;
  c.base = p.c;
  c.dtype = DType(p.c_dtype);
  c.cols = p.n;
  c.rows = p.m;
  c.ld = p.ldc;
  c.box_cols = kRowBytes / 2;
  c.box_rows = kBoxRows;
  if (check_tensor_map(c) != Status::Success) return Status::Success;
  FS_RETURN_IF_ERROR(encode_tensor_map(c, map));
  *use = true;
  return Status::Success;
}

// A persistent kernel's grid (v4, v6): one block per SM (each SM holds one block: 193 KiB of shared
// memory), never more than there are kBM × kBN tiles of C. Host code.
template <int kBM, int kBN>
Status persistent_blocks(const GemmParams& p, unsigned* blocks) {
  DeviceProps dev;
  FS_RETURN_IF_ERROR(current_device(&dev));
  const int64_t tiles = (p.m + kBM - 1) / kBM * ((p.n + kBN - 1) / kBN);
  *blocks = unsigned(std::min(tiles, int64_t(dev.sms)));
  return Status::Success;
}

// fp16 or bf16 in; C in fp32 or either 16-bit type. A's and B's bases and rows must be 16-byte
// multiples: what TMA reads (validation refuses anything else with a named code).
inline const GemmSupport kHalfSupport{Dtypes<DType::FP16, DType::BF16>::kMask,
                                      Dtypes<DType::FP32, DType::FP16, DType::BF16>::kMask, /*operand_align=*/16,
                                      kAllLayouts, /*tma_operands=*/true};

// What the launch needs of a version, named alike for each: its block tile and size, whether it is
// persistent (a block per SM that loops over tiles, else a block per tile), how many blocks stacked
// along M make one cluster (each loading its share of B's tile for all: kBN / kClusterM wide boxes),
// whether it stores C with TMA (its kernel then takes C's tensor map and c_tma), its shared-memory
// Config, its kernel for T and the transposes. For example v9.cu's V9.

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
