// Stage 07 gemm: the TMA + wgmma versions v1 … v5, v7, v8 and v9 (fp16, bf16) — their launch, descriptors and C entries.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "common/lib/device.h"
#include "common/lib/gemm_launch.h"
#include "stages/07_tuned_tma/gemm/gemm.h"
#include "stages/07_tuned_tma/gemm/v1_tma_wgmma.cuh"
#include "stages/07_tuned_tma/gemm/v2_pipeline.cuh"
#include "stages/07_tuned_tma/gemm/v3_warp_specialization.cuh"
#include "stages/07_tuned_tma/gemm/v4_persistent.cuh"
#include "stages/07_tuned_tma/gemm/v5_clusters_multicast.cuh"
#include "stages/07_tuned_tma/gemm/v7_tma_store.cuh"
#include "stages/07_tuned_tma/gemm/v8_staging_ring.cuh"
#include "stages/07_tuned_tma/gemm/v9_epilogue_overlap.cuh"

namespace fs {

namespace {

// fp16 or bf16 in; C in fp32 or either 16-bit type. A's and B's bases and rows must be 16-byte
// multiples: what TMA reads (validation refuses anything else with a named code).
const GemmSupport kHalfSupport{Dtypes<DType::FP16, DType::BF16>::kMask,
                               Dtypes<DType::FP32, DType::FP16, DType::BF16>::kMask, /*operand_align=*/16};

// What the launch needs of a version, named alike for each: its block tile and size, whether it is
// persistent (a block per SM that loops over tiles, else a block per tile), how many blocks stacked
// along M make one cluster (each loading its share of B's tile for all: kBN / kClusterM wide boxes),
// whether it stores C with TMA (its kernel then takes C's tensor map and c_tma), its shared-memory
// Config, its kernel for T and the transposes.
struct V1 {
  static constexpr int kBM = gemm_tma_v1::kBM, kBN = gemm_tma_v1::kBN, kThreads = gemm_tma_v1::kThreads;
  static constexpr bool kPersistent = false;
  static constexpr int kClusterM = 1;
  static constexpr bool kTmaStore = false;
  template <bool kTA, bool kTB>
  using Config = gemm_tma_v1::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma_v1::gemm_tma_v1_kernel<T, kTA, kTB>; }
};

struct V2 {
  static constexpr int kBM = gemm_tma_v2::kBM, kBN = gemm_tma_v2::kBN, kThreads = gemm_tma_v2::kThreads;
  static constexpr bool kPersistent = false;
  static constexpr int kClusterM = 1;
  static constexpr bool kTmaStore = false;
  template <bool kTA, bool kTB>
  using Config = gemm_tma_v2::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma_v2::gemm_tma_v2_kernel<T, kTA, kTB>; }
};

struct V3 {
  static constexpr int kBM = gemm_tma_v3::kBM, kBN = gemm_tma_v3::kBN, kThreads = gemm_tma_v3::kThreads;
  static constexpr bool kPersistent = false;
  static constexpr int kClusterM = 1;
  static constexpr bool kTmaStore = false;
  template <bool kTA, bool kTB>
  using Config = gemm_tma_v3::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma_v3::gemm_tma_v3_kernel<T, kTA, kTB>; }
};

struct V4 {
  static constexpr int kBM = gemm_tma_v4::kBM, kBN = gemm_tma_v4::kBN, kThreads = gemm_tma_v4::kThreads;
  static constexpr bool kPersistent = true;
  static constexpr int kClusterM = 1;
  static constexpr bool kTmaStore = false;
  template <bool kTA, bool kTB>
  using Config = gemm_tma_v4::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma_v4::gemm_tma_v4_kernel<T, kTA, kTB>; }
};

struct V5 {
  static constexpr int kBM = gemm_tma_v5::kBM, kBN = gemm_tma_v5::kBN, kThreads = gemm_tma_v5::kThreads;
  static constexpr bool kPersistent = true;
  static constexpr int kClusterM = gemm_tma_v5::kClusterM;
  static constexpr bool kTmaStore = false;
  template <bool kTA, bool kTB>
  using Config = gemm_tma_v5::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma_v5::gemm_tma_v5_kernel<T, kTA, kTB>; }
};

struct V7 {
  static constexpr int kBM = gemm_tma_v7::kBM, kBN = gemm_tma_v7::kBN, kThreads = gemm_tma_v7::kThreads;
  static constexpr bool kPersistent = true;
  static constexpr int kClusterM = gemm_tma_v7::kClusterM;
  static constexpr bool kTmaStore = true;
  static constexpr int kCBoxRows = gemm_tma_v7::kMmaM;  // a consumer warpgroup's rows
  template <bool kTA, bool kTB>
  using Config = gemm_tma_v7::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma_v7::gemm_tma_v7_kernel<T, kTA, kTB>; }
};

struct V8 {
  static constexpr int kBM = gemm_tma_v8::kBM, kBN = gemm_tma_v8::kBN, kThreads = gemm_tma_v8::kThreads;
  static constexpr bool kPersistent = true;
  static constexpr int kClusterM = gemm_tma_v8::kClusterM;
  static constexpr bool kTmaStore = true;
  static constexpr int kCBoxRows = gemm_tma_v8::kMmaM;  // a consumer warpgroup's rows
  template <bool kTA, bool kTB>
  using Config = gemm_tma_v8::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma_v8::gemm_tma_v8_kernel<T, kTA, kTB>; }
};

struct V9 {
  static constexpr int kBM = gemm_tma_v9::kBM, kBN = gemm_tma_v9::kBN, kThreads = gemm_tma_v9::kThreads;
  static constexpr bool kPersistent = true;
  static constexpr int kClusterM = gemm_tma_v9::kClusterM;
  static constexpr bool kTmaStore = true;
  static constexpr int kCBoxRows = gemm_tma_v9::kMmaM;  // a consumer warpgroup's rows
  template <bool kTA, bool kTB>
  using Config = gemm_tma_v9::Config<kTA, kTB>;
  template <class T, bool kTA, bool kTB>
  static constexpr auto kernel() { return gemm_tma_v9::gemm_tma_v9_kernel<T, kTA, kTB>; }
};

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

}  // namespace

Status gemm_tma::cluster_grid(int64_t cluster_tiles, int max_active_clusters, int cluster_size, unsigned* blocks) {
  if (max_active_clusters < 1) return Status::UnsupportedDevice;
  *blocks = unsigned(cluster_size * std::min(cluster_tiles, int64_t(max_active_clusters)));
  return Status::Success;
}

const KernelDesc kGemmTmaV1 = gemm_kernel(
    {"fs_gemm_tma_v1", "stage07/gemm", "v1",
     "TMA into 128B-swizzled smem, wgmma m64n128k16 from descriptors, 2 mbarrier stages, one warpgroup, 128x128x64"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<V1::Config>(), run<V1>);

const KernelDesc kGemmTmaV2 = gemm_kernel(
    {"fs_gemm_tma_v2", "stage07/gemm", "v2",
     "v1 with 4 TMA stages refilled behind one wgmma group in flight, two warpgroups of m64n256k16, 128x256x64"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<V2::Config>(), run<V2>);

const KernelDesc kGemmTmaV3 = gemm_kernel(
    {"fs_gemm_tma_v3", "stage07/gemm", "v3",
     "v2 warp-specialized: a TMA producer warpgroup, two wgmma consumer warpgroups, full/empty mbarriers, setmaxnreg"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<V3::Config>(), run<V3>);

const KernelDesc kGemmTmaV4 = gemm_kernel(
    {"fs_gemm_tma_v4", "stage07/gemm", "v4",
     "v3 persistent: one block per SM loops over tiles in a grouped order, the next tile's loads overlap the epilogue"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<V4::Config>(), run<V4>);

const KernelDesc kGemmTmaV5 = gemm_kernel(
    {"fs_gemm_tma_v5", "stage07/gemm", "v5",
     "v4 in clusters of two blocks along M: each loads half of B's tile and TMA-multicasts it to both"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<V5::Config>(), run<V5>);

const KernelDesc kGemmTmaV7 = gemm_kernel(
    {"fs_gemm_tma_v7", "stage07/gemm", "v7",
     "v5 with 3 stages and C staged in shared memory by stmatrix, written by TMA stores that overlap the next tile"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<V7::Config>(), run<V7>);

const KernelDesc kGemmTmaV8 = gemm_kernel(
    {"fs_gemm_tma_v8", "stage07/gemm", "v8",
     "v7 with C through a ring of two 64x64 boxes per warpgroup, which frees the room for a fourth stage"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<V8::Config>(), run<V8>);

const KernelDesc kGemmTmaV9 = gemm_kernel(
    {"fs_gemm_tma_v9", "stage07/gemm", "v9",
     "v8 with C rounded into 64 registers at a tile's end and stored during the next tile's first two k-tiles"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<V9::Config>(), run<V9>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_tma_v1, fs::kGemmTmaV1)
FS_EXPORT_GEMM(fs_gemm_tma_v2, fs::kGemmTmaV2)
FS_EXPORT_GEMM(fs_gemm_tma_v3, fs::kGemmTmaV3)
FS_EXPORT_GEMM(fs_gemm_tma_v4, fs::kGemmTmaV4)
FS_EXPORT_GEMM(fs_gemm_tma_v5, fs::kGemmTmaV5)
FS_EXPORT_GEMM(fs_gemm_tma_v7, fs::kGemmTmaV7)
FS_EXPORT_GEMM(fs_gemm_tma_v8, fs::kGemmTmaV8)
FS_EXPORT_GEMM(fs_gemm_tma_v9, fs::kGemmTmaV9)
