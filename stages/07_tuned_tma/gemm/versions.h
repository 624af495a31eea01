// Stage 07, part 1 — GEMM on Hopper: TMA loads, mbarriers and wgmma. Its versions' descriptors, as
// the registry lists them ("stage07/gemm/v1" …; fs_gemm_tma_v1 … in C; each defined in its vN.cu), and
// the host helper the tests look inside. The problem and its validation are common/lib/gemm.h: the
// launcher signature is stage 06's (GemmParams).
#pragma once

#include <cstdint>

#include "common/lib/kernel.h"

namespace fs {

extern const KernelDesc kGemmTmaV1, kGemmTmaV2, kGemmTmaV3, kGemmTmaV4, kGemmTmaV5, kGemmTmaV6, kGemmTmaV7, kGemmTmaV8,
    kGemmTmaV9, kGemmTmaV10, kGemmTmaV11, kGemmTmaV12;

namespace gemm_tma {

// The grid of a clustered persistent version (v5): `cluster_size` blocks per cluster, as many clusters
// as the GPU holds at once (`max_active_clusters`, from cudaOccupancyMaxActiveClusters) and never more
// than there are cluster tiles (≥ 1), so that every cluster has one. UnsupportedDevice, `blocks`
// untouched, when the GPU cannot hold a single cluster (the query answers 0: no GPC has two SMs
// that can each take a 193 KiB block). Not expected on an H100; the CPU test reaches it.
Status cluster_grid(int64_t cluster_tiles, int max_active_clusters, int cluster_size, unsigned* blocks);

}  // namespace gemm_tma

}  // namespace fs
