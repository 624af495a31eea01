// Stage 06: the order in which blocks take their tiles of C, as v7–v16 share it.
#pragma once

#include <cstdint>

namespace fs::gemm {

// ---- v7: grouped tile order -----------------------------------------------------------------------
// Block b of a 1D grid takes tile (tile_m, tile_n). Consecutive blocks walk down kGroup tile rows
// before moving right, so the blocks resident at one time share kGroup rows of A and a narrow band of
// columns of B, and re-read them from L2 instead of DRAM.
template <int kGroup>
__device__ __forceinline__ void grouped_tile(int64_t b, int64_t tiles_m, int64_t tiles_n, int64_t& tile_m,
                                             int64_t& tile_n) {
  const int64_t per_group = int64_t(kGroup) * tiles_n;
  const int64_t first_m = b / per_group * kGroup;
  const int64_t rows = tiles_m - first_m < kGroup ? tiles_m - first_m : kGroup;
  tile_m = first_m + (b % per_group) % rows;
  tile_n = (b % per_group) / rows;
}

}  // namespace fs::gemm
